"""Frozen value classes made without generating code: :func:`frozen`.

``@frozen`` makes what ``@dataclasses.dataclass(frozen=True)`` makes -- a dataclass
(:func:`dataclasses.fields`, :func:`dataclasses.replace`, :func:`dataclasses.asdict` read it),
with the same ``__init__`` (positional and keyword fields, defaults, ``default_factory``,
``kw_only``, ``__post_init__``), ``__repr__``, ``__eq__``, ``__hash__``, ``__match_args__``, and
assignment refused with :class:`dataclasses.FrozenInstanceError` -- but builds those methods as
closures over the fields instead of writing and compiling their source. On Python 3.11 the
standard decorator compiles five or six small functions per class, about 1-4 ms a class; with the
25 value classes a keypoint evaluation imports that was 38 ms of a 0.3 s run. These take about
0.2 ms. Instances are made a few times per evaluation, so the call-time cost of a closure is nothing.

``tests/unit/test_values.py`` checks every value class of the package against the standard
decorator's behaviour. Not offered: ``order``, ``slots``; refused when the class is made: ``InitVar``
fields, a class that defines ``__setattr__`` or ``__delattr__`` (as the standard frozen ones refuse).
"""

from __future__ import annotations

import dataclasses
import inspect
import reprlib
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T", bound=type)


class _Factory:
    """The default shown in a signature for a field with a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


@overload
def frozen(cls: _T, /) -> _T: ...
@overload
def frozen(*, eq: bool = True, kw_only: bool = False) -> Callable[[_T], _T]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: Any = None, /, *, eq: bool = True, kw_only: bool = False) -> Any:
    """``@dataclasses.dataclass(frozen=True, eq=eq, kw_only=kw_only)``, without compiled methods.

    Examples
    --------
    >>> import dataclasses
    >>> @frozen
    ... class Pair:
    ...     '''Two numbers.'''
    ...     a: int
    ...     b: int = 2
    >>> Pair(1)
    Pair(a=1, b=2)
    >>> dataclasses.replace(Pair(1), b=3) == Pair(1, 3), hash(Pair(1)) == hash(Pair(1, 2))
    (True, True)
    >>> Pair(1).a = 5
    Traceback (most recent call last):
    ...
    dataclasses.FrozenInstanceError: cannot assign to field 'a'
    """

    def wrap(cls: Any) -> Any:
        return _make(cls, eq=eq, kw_only=kw_only)

    return wrap if cls is None else wrap(cls)


def _make(cls: Any, *, eq: bool, kw_only: bool) -> Any:
    for name in ("__setattr__", "__delattr__"):
        if name in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    # As dataclasses decides it: a __hash__ written in the class body is kept.
    class_hash = cls.__dict__.get("__hash__", dataclasses.MISSING)
    explicit_hash = not (
        class_hash is dataclasses.MISSING or (class_hash is None and "__eq__" in cls.__dict__)
    )
    # A base made by the standard frozen decorator makes the standard one insist on frozen=True here.
    frozen_base = any(
        getattr(getattr(b, "__dataclass_params__", None), "frozen", False) for b in cls.__mro__[1:]
    )
    if frozen_base:
        return dataclasses.dataclass(frozen=True, eq=eq, kw_only=kw_only)(cls)
    # Fields, defaults, __match_args__ and the dataclass markers, with no method generated.
    cls = dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=kw_only)(cls)
    params = cls.__dataclass_params__
    params.init, params.repr, params.eq, params.frozen = True, True, eq, True
    fields = dataclasses.fields(cls)
    pseudo = [f for name, f in cls.__dataclass_fields__.items() if name not in {g.name for g in fields}]
    if any(isinstance(f.type, dataclasses.InitVar) or "InitVar" in str(f.type) for f in pseudo):
        raise TypeError(f"{cls.__qualname__}: value classes take no InitVar field")
    names = frozenset(f.name for f in fields)
    _set(cls, "__init__", _init(cls, fields))
    _set(cls, "__repr__", _repr(cls, tuple(f.name for f in fields if f.repr)))
    if eq:
        compared = tuple(f.name for f in fields if f.compare)
        _set(cls, "__eq__", _eq(cls, compared))
        if not explicit_hash:
            hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
            cls.__hash__ = _hash(cls, hashed)
    cls.__setattr__ = _frozen_setattr(cls, names)
    cls.__delattr__ = _frozen_delattr(cls, names)
    return cls


def _set(cls: Any, name: str, method: Callable) -> None:
    """Set ``method`` unless the class body defines ``name`` (as dataclasses does)."""
    if name in cls.__dict__:
        return
    method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
    setattr(cls, name, method)


def _init(cls: Any, fields: tuple[dataclasses.Field, ...]) -> Callable:
    """``__init__``: the fields bound as a call binds them, defaults and factories, ``__post_init__``.

    Fields are set in their order in the class, as the standard ``__init__`` sets them. A call
    with positional arguments only or keyword arguments only (``dataclasses.replace``) that
    gives every field without a default skips the signature's binding (~1-3 us a call instead of
    ~30: the Evaluator makes a few values per batch).
    """
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    factories: dict[str, Callable[[], Any]] = {}
    order: list[tuple[str, bool]] = []  # (field, set by its factory alone: init=False)
    for f in fields:
        factory = f.default_factory
        has_factory = factory is not dataclasses.MISSING
        if has_factory:
            factories[f.name] = factory  # type: ignore[assignment]
        if not f.init:
            # As dataclasses does: a plain default stays the class attribute, a factory is called.
            if has_factory:
                order.append((f.name, True))
            continue
        order.append((f.name, False))
        kind = inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = _FACTORY if has_factory else f.default
        parameters.append(
            inspect.Parameter(
                f.name, kind, default=inspect.Parameter.empty if default is dataclasses.MISSING else default
            )
        )
    # Keyword-only fields go last, as dataclasses orders them.
    parameters[1:] = sorted(parameters[1:], key=lambda p: p.kind == inspect.Parameter.KEYWORD_ONLY)
    try:
        signature = inspect.Signature(parameters, return_annotation=None)
    except ValueError as error:  # a field without a default after one with a default
        raise TypeError(f"{cls.__qualname__}: {error}") from None
    params = parameters[1:]
    keywords = frozenset(p.name for p in params)
    # The calls bound here without the signature: positional arguments only, covering every
    # field without a default (which come first), or keyword arguments only, naming known fields
    # and every one without a default. Anything else (and every wrong call) goes to
    # Signature.bind, which raises what a call of the function would.
    positional = tuple(p.name for p in params if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD)
    empty = inspect.Parameter.empty
    required = frozenset(p.name for p in params if p.default is empty)
    least = max(
        (k + 1 for k, p in enumerate(params) if p.default is empty and p.name in positional), default=0
    )
    by_position = not (required - set(positional))  # no keyword-only field without a default
    defaults = {p.name: p.default for p in params if p.default is not empty}
    post_init = getattr(cls, "__post_init__", None) is not None
    setter = object.__setattr__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if not kwargs and by_position and least <= len(args) <= len(positional):
            arguments = dict(zip(positional, args))
        elif not args and kwargs.keys() <= keywords and required <= kwargs.keys():
            arguments = kwargs
        else:
            arguments = signature.bind(self, *args, **kwargs).arguments
        for name, factory_only in order:
            given = _FACTORY if factory_only else arguments[name] if name in arguments else defaults[name]
            setter(self, name, factories[name]() if given is _FACTORY else given)
        if post_init:
            self.__post_init__()

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    return __init__


def _repr(cls: Any, names: tuple[str, ...]) -> Callable:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _eq(cls: Any, names: tuple[str, ...]) -> Callable:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
        return NotImplemented

    return __eq__


def _hash(cls: Any, names: tuple[str, ...]) -> Callable:
    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in names))

    __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
    return __hash__


def _frozen_setattr(cls: Any, names: frozenset[str]) -> Callable:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    return __setattr__


def _frozen_delattr(cls: Any, names: frozenset[str]) -> Callable:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    return __delattr__
