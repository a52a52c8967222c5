"""YAML text -> plain Python values of protocol files, under the one YAML policy.

:func:`parse_yaml` reads a protocol file's text and :func:`parse_yaml_value` one ``--set``
value with :func:`deteval._safe_read.parse_yaml` (the policy every YAML reader applies: no tag
outside plain YAML, no duplicate keys, no anchors/aliases), saying what a protocol expects.
``1e10`` reads as a float (YAML 1.2 style). Errors are :class:`~deteval.errors.ConfigError`
naming the file and the key path. :mod:`deteval.protocol.yaml` turns the values into a
:class:`~deteval.protocol.spec.Protocol`.
"""

from __future__ import annotations

from typing import Any

from deteval._safe_read import parse_yaml as _parse

__all__ = ["parse_yaml", "parse_yaml_value"]


def parse_yaml(text: str, *, filename: str = "<string>") -> Any:
    r"""Parse one YAML document with safe loading, refusing duplicate keys and non-plain tags.

    Parameters
    ----------
    text : str
    filename : str
        Used in error messages only.

    Returns
    -------
    Any
        Plain values: dict, list, str, int, float, bool, None.

    Raises
    ------
    ConfigError
        Invalid YAML, several documents, a duplicate key, or a tag outside plain YAML.

    Examples
    --------
    >>> parse_yaml("area_ranges: {all: [0, 1e10]}")
    {'area_ranges': {'all': [0, 10000000000.0]}}
    >>> parse_yaml("a: 1\na: 2", filename="x.yaml")
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: x.yaml: a: duplicate key (lines 1 and 2); expected each key once
    """
    return _parse(text, filename=filename, expected="one YAML mapping of protocol fields", yaml12_floats=True)


def parse_yaml_value(text: str, *, where: str = "<value>", key: str = "") -> Any:
    """Parse a single value in YAML syntax (``--set FIELD=VALUE``), as :func:`parse_yaml` does.

    ``key`` starts the key path of error messages.

    >>> parse_yaml_value("[0.3, 0.5]")
    [0.3, 0.5]
    >>> parse_yaml_value("")
    >>> parse_yaml_value("{all: [0, 1], all: [0, 2]}", where="--set", key="area_ranges")
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: --set: area_ranges.all: duplicate key (columns 2 and 15 of line 1); expected each key once
    """
    if not text.strip():
        return None
    expected = f"a value in YAML syntax{' for ' + key if key else ''}"
    return _parse(text, filename=where, expected=expected, root=key, yaml12_floats=True)
