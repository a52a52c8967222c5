"""YAML safety shared by protocol files and YOLO ``data.yaml``: no anchors, no aliases.

An alias makes several places share one node, which is how "billion laughs" documents reach
10**9 items from a few lines; protocol files and dataset descriptions never need them (protocols
inherit with ``extends:``), so they are refused before anything is constructed.
"""

from __future__ import annotations

import yaml

__all__ = ["find_alias"]


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
