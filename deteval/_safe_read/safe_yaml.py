"""The one YAML safety policy: plain tags only, no aliases, no duplicate keys, a size cap.

Every YAML file deteval reads (protocol files and ``--set`` values, YOLO ``data.yaml``,
category maps) is composed first and checked here before anything is constructed:

* a tag outside plain YAML (``!!python/object/apply:os.system``, ``!custom``) is refused, so
  nothing a file says is ever constructed or run;
* an alias (``*name``) makes several places share one node, which is how "billion laughs"
  documents reach 10**9 items from a few lines: refused;
* a key given twice would silently keep the last value: refused (:func:`duplicate_key_message`);
* the file is read by :func:`deteval._safe_read.files.read_text` (a regular file, UTF-8, a BOM
  skipped, at most ``MAX_BYTES["yaml"]`` for a protocol, ``MAX_BYTES["data_yaml"]`` for a
  data.yaml or category map).

Errors are of the reader's kind (:class:`~deteval.errors.ConfigError` for configuration,
:class:`~deteval.errors.InputError` for dataset files) and name the file, the line and the key
path. ``yaml12_floats=True`` (protocol files) also reads ``1e10`` as a float (YAML 1.2 style);
a dataset's ``data.yaml`` is read as Ultralytics reads it (YAML 1.1: ``1e10`` is a string).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from deteval._safe_read.files import MAX_BYTES, read_text
from deteval.errors import ConfigError

__all__ = [
    "parse_yaml",
    "read_yaml",
    "duplicate_key",
    "duplicate_key_message",
    "find_alias",
]


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


class _SafeLoader12(yaml.SafeLoader):
    """``yaml.SafeLoader`` that also reads ``1e10`` as a float (YAML 1.2 style).

    Note
    ----
    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent: ``1e10`` is the
    *string* "1e10". Size ranges are naturally written ``[9216, 1e10]``, so the YAML 1.2 form is
    added; quoted values (``"0.5"``) stay strings and are refused where a number is expected.
    """


_SafeLoader12.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _load(
    text: str, filename: str, expected: str, error: type, root: str, yaml12_floats: bool, construct: bool
) -> Any:
    """The checked node of one YAML document, or its plain values (``construct``); None when empty."""
    loader = (_SafeLoader12 if yaml12_floats else yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node, root, filename, set(), error)
        return loader.construct_document(node) if construct else node
    except yaml.MarkedYAMLError as exc:
        raise error(_yaml_error_message(exc, filename, expected)) from None
    except yaml.YAMLError as exc:
        raise error(f"{filename}: invalid YAML ({exc}); expected {expected}") from None
    except RecursionError:
        raise error(f"{filename}: YAML nested too deeply; expected {expected}") from None
    finally:
        loader.dispose()


def parse_yaml(
    text: str,
    *,
    filename: str,
    expected: str,
    error: type = ConfigError,
    root: str = "",
    yaml12_floats: bool = False,
    construct: bool = True,
) -> Any:
    r"""Plain values (dict, list, str, int, float, bool, None) of one checked YAML document.

    ``construct=False``: its checked node instead (a :class:`yaml.Node`; nothing is constructed),
    for readers that walk the nodes (category maps name each entry's line). None when empty.

    Raises
    ------
    ConfigError (or ``error``)
        Invalid YAML, several documents, a tag outside plain YAML, an alias or a duplicate key,
        naming ``filename``, the line and the key path (``root`` starts it).

    Examples
    --------
    >>> parse_yaml("a: [0, 1e10]", filename="x.yaml", expected="a mapping", yaml12_floats=True)
    {'a': [0, 10000000000.0]}
    >>> parse_yaml("a: 1\na: 2", filename="x.yaml", expected="a mapping")
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: x.yaml: a: duplicate key (lines 1 and 2); expected each key once
    """
    return _load(text, filename, expected, error, root, yaml12_floats, construct=construct)


def read_yaml(
    path: str,
    *,
    what: str,
    error: type = ConfigError,
    limit: int = MAX_BYTES["data_yaml"],
    yaml12_floats: bool = False,
) -> Any:
    """:func:`parse_yaml` of the regular file ``path`` (:func:`~deteval._safe_read.files.read_text`)."""
    text = read_text(path, what=what, limit=limit, error=error)
    return parse_yaml(text, filename=path, expected=what, error=error, yaml12_floats=yaml12_floats)


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


def _check_nodes(node: yaml.Node, path: str, filename: str, seen: set, error: type) -> None:
    """Refuse duplicate keys and any tag outside plain YAML, before anything is constructed.

    A node reached twice is an alias (``*name``): refused, which also stops alias bombs.
    """
    if id(node) in seen:
        line = node.start_mark.line + 1
        raise error(
            f"{filename}: {path or '(document)'}: anchors and aliases (&name / *name, "
            f"line {line}) are not allowed; expected plain values (write each value out)"
        )
    seen.add(id(node))
    if node.tag not in _ALLOWED_TAGS:
        line = node.start_mark.line + 1
        tag = node.tag.replace("tag:yaml.org,2002:", "!!", 1)
        raise error(
            f"{filename}: {path or '(document)'}: tag {tag!r} (line {line}) is not "
            f"allowed; expected plain YAML values (deteval loads YAML safely: "
            f"nothing was constructed or run)"
        )
    if isinstance(node, yaml.MappingNode):
        first_line: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                _check_nodes(value_node, path, filename, seen, error)
                continue
            _check_nodes(key_node, path, filename, seen, error)
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node.value)
            child = f"{path}.{key}" if path else str(key)
            line, column = key_node.start_mark.line + 1, key_node.start_mark.column + 1
            if key in first_line:
                raise error(duplicate_key_message(filename, child, first_line[key], (line, column)))
            first_line[key] = (line, column)
            _check_nodes(value_node, child, filename, seen, error)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_nodes(item, f"{path}[{i}]", filename, seen, error)


def find_alias(node: yaml.Node | None) -> yaml.Node | None:
    r"""The first node reached twice in a composed YAML document (an alias), or None.

    Examples
    --------
    >>> find_alias(yaml.compose("a: &x [1]\nb: *x", Loader=yaml.SafeLoader)).start_mark.line
    0
    >>> find_alias(yaml.compose("a: [1]\nb: [1]", Loader=yaml.SafeLoader)) is None
    True
    """
    seen: set = set()
    stack = [node] if node is not None else []
    while stack:
        item = stack.pop()
        if id(item) in seen:
            return item
        seen.add(id(item))
        if isinstance(item, yaml.MappingNode):
            for key, value in item.value:
                stack.extend((key, value))
        elif isinstance(item, yaml.SequenceNode):
            stack.extend(item.value)
    return None


def duplicate_key_message(filename: str, key: str, first: tuple[int, int], second: tuple[int, int]) -> str:
    """``file: key: duplicate key (lines a and b); expected each key once`` (1-based (line, column))."""
    (line0, column0), (line, column) = first, second
    at = f"lines {line0} and {line}" if line0 != line else f"columns {column0} and {column} of line {line}"
    return f"{filename}: {key}: duplicate key ({at}); expected each key once"


def duplicate_key(
    node: yaml.Node | None, path: str = ""
) -> tuple[str, tuple[int, int], tuple[int, int]] | None:
    r"""The first key given twice in one mapping (its dotted path and both places), or None.

    Examples
    --------
    >>> duplicate_key(yaml.compose("a: 1\nb: {c: 1, c: 2}", Loader=yaml.SafeLoader))
    ('b.c', (2, 5), (2, 11))
    """
    if isinstance(node, yaml.MappingNode):
        first: dict = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node.value)
            child = f"{path}.{key}" if path else str(key)
            if key_node.tag != "tag:yaml.org,2002:merge":
                place = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                if key in first:
                    return child, first[key], place
                first[key] = place
            found = duplicate_key(value_node, child)
            if found is not None:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found = duplicate_key(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None
