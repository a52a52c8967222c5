"""Names of a module loaded from their own modules on first access (PEP 562): :func:`lazy_names`.

A package that re-exports names whose modules most callers never need (the YAML layer when a
preset is scored, Ultralytics' matching under COCO's rules) binds them lazily: the first access
imports the module and caches the value in the package's namespace, so later accesses are plain
lookups.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(
    namespace: dict[str, Any], names: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` for ``names`` (name -> the module defining it).

    Examples
    --------
    >>> namespace = {"__name__": "pkg"}
    >>> getattr_, dir_ = lazy_names(namespace, {"dedent": "textwrap"})
    >>> getattr_("dedent")("  a")
    'a'
    >>> "dedent" in namespace, dir_()
    (True, ['__name__', 'dedent'])
    >>> getattr_("nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'pkg' has no attribute 'nothing'
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
