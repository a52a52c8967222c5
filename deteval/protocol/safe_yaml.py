"""YAML text -> plain Python values, loaded safely (the syntax layer of protocol files).

:func:`parse_yaml` reads a protocol file's text and :func:`parse_yaml_value` one ``--set``
value; both refuse, before anything is constructed, any tag outside plain YAML (so nothing a
file says is ever run), duplicate keys, and anchors/aliases. ``1e10`` reads as a float (YAML 1.2
style). Errors are :class:`~deteval.errors.ConfigError` naming the file and the key path.
:mod:`deteval.protocol.yaml` turns the values into a :class:`~deteval.protocol.spec.Protocol`.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from deteval._safe_yaml import duplicate_key_message
from deteval.errors import ConfigError

if TYPE_CHECKING:  # imported when a YAML text is parsed: scoring under a shipped preset never is
    import yaml

__all__ = ["parse_yaml", "parse_yaml_value"]

#: Tags the safe loader may build. Anything else (``!!python/...``, ``!custom``) is refused.
_ALLOWED_TAGS = frozenset(
    "tag:yaml.org,2002:" + t
    for t in (
        "null",
        "bool",
        "int",
        "float",
        "str",
        "seq",
        "map",
        "merge",
        "timestamp",
        "binary",
        "omap",
        "pairs",
        "set",
    )
)


@functools.cache
def _safe_loader() -> type[yaml.SafeLoader]:
    """``yaml.SafeLoader`` that also reads ``1e10`` as a float (YAML 1.2 style), built on first use.

    Note
    ----
    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent: ``1e10`` is the
    *string* "1e10". Size ranges are naturally written ``[9216, 1e10]``, so the YAML 1.2 form is
    added; quoted values (``"0.5"``) stay strings and are refused where a number is expected.
    """
    import yaml

    class SafeLoader(yaml.SafeLoader):
        """The safe loader with the YAML 1.2 float resolver (:func:`_safe_loader`)."""

    SafeLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )
    return SafeLoader


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
    return _parse(text, filename, "", "one YAML mapping of protocol fields")


def _parse(text: str, filename: str, root: str, expected: str) -> Any:
    import yaml

    loader = _safe_loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node, root, filename, set())
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_error_message(exc, filename, expected)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{filename}: invalid YAML ({exc}); expected {expected}") from None
    except RecursionError:
        raise ConfigError(f"{filename}: YAML nested too deeply; expected {expected}") from None
    finally:
        loader.dispose()


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
    return _parse(text, where, key, f"a value in YAML syntax{' for ' + key if key else ''}")


def _yaml_error_message(exc: yaml.MarkedYAMLError, filename: str, expected: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"{filename}: line {mark.line + 1}, column {mark.column + 1}" if mark else filename
    problem = " ".join(str(exc.problem or exc.context or exc).split())
    context = " ".join(str(exc.context or "").split())
    hint = ""
    if "block scalar" in problem or "block scalar" in context:
        hint = ' (quote values that start with ">" or "|", e.g. iou_comparison: ">=")'
    elif "found character" in problem and "\\t" in problem:
        hint = " (YAML indentation uses spaces, not tabs)"
    return f"{where}: invalid YAML: {problem}{hint}; expected {expected}"


def _check_nodes(node: yaml.Node, path: str, filename: str, seen: set) -> None:
    """Refuse duplicate keys and any tag outside plain YAML, before anything is constructed.

    A node reached twice is an alias (``*name``): refused, which also stops alias bombs.
    """
    import yaml

    if id(node) in seen:
        line = node.start_mark.line + 1
        raise ConfigError(
            f"{filename}: {path or '(document)'}: anchors and aliases (&name / *name, "
            f"line {line}) are not allowed; expected plain values (a protocol "
            f"inherits with `extends:`)"
        )
    seen.add(id(node))
    if node.tag not in _ALLOWED_TAGS:
        line = node.start_mark.line + 1
        tag = node.tag.replace("tag:yaml.org,2002:", "!!", 1)
        raise ConfigError(
            f"{filename}: {path or '(document)'}: tag {tag!r} (line {line}) is not "
            f"allowed; expected plain YAML values (deteval loads YAML safely: "
            f"nothing was constructed or run)"
        )
    if isinstance(node, yaml.MappingNode):
        first_line: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                _check_nodes(value_node, path, filename, seen)
                continue
            _check_nodes(key_node, path, filename, seen)
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node.value)
            child = f"{path}.{key}" if path else str(key)
            line, column = key_node.start_mark.line + 1, key_node.start_mark.column + 1
            if key in first_line:
                raise ConfigError(duplicate_key_message(filename, child, first_line[key], (line, column)))
            first_line[key] = (line, column)
            _check_nodes(value_node, child, filename, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_nodes(item, f"{path}[{i}]", filename, seen)
