"""The one YAML safety policy, below everything: no aliases, no duplicate keys.

Every YAML file deteval reads (protocol files, ``--set`` values, YOLO ``data.yaml``, category
maps) is composed first and checked here before anything is constructed: an alias (``*name``)
makes several places share one node, which is how "billion laughs" documents reach 10**9 items
from a few lines; a key given twice would silently keep the last value. Each reader raises the
error of its kind (:class:`~deteval.errors.ConfigError` for configuration,
:class:`~deteval.errors.InputError` for dataset files) with :func:`duplicate_key_message`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the checks import yaml when they run: a box evaluation never loads it
    import yaml

__all__ = ["duplicate_key", "duplicate_key_message", "find_alias"]


def find_alias(node: yaml.Node | None) -> yaml.Node | None:
    r"""The first node reached twice in a composed YAML document (an alias), or None.

    Examples
    --------
    >>> import yaml
    >>> find_alias(yaml.compose("a: &x [1]\nb: *x", Loader=yaml.SafeLoader)).start_mark.line
    0
    >>> find_alias(yaml.compose("a: [1]\nb: [1]", Loader=yaml.SafeLoader)) is None
    True
    """
    import yaml

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
    >>> import yaml
    >>> duplicate_key(yaml.compose("a: 1\nb: {c: 1, c: 2}", Loader=yaml.SafeLoader))
    ('b.c', (2, 5), (2, 11))
    """
    import yaml

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
