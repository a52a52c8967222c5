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
    names = frozenset(f.name for f in fields)
    # The other entries of __dataclass_fields__ are ClassVar and InitVar pseudo-fields.
    if any(
        isinstance(f.type, dataclasses.InitVar) or "InitVar" in str(f.type)
        for name, f in cls.__dataclass_fields__.items()
        if name not in names
    ):
        raise TypeError(f"{cls.__qualname__}: value classes take no InitVar field")
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
    that binds plainly (no more positional arguments than positional fields, keywords naming
    other known fields, every field without a default given) skips the signature's binding
    (~1-3 us a call instead of ~30: the Evaluator makes a few values per batch, the protocol's
    field table 35 at import).
    """
    positional_or_keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    keyword_only = inspect.Parameter.KEYWORD_ONLY
    factories = {f.name: f.default_factory for f in fields if f.default_factory is not dataclasses.MISSING}
    # (field, set by its factory alone): as dataclasses does, a field with init=False keeps a plain
    # default as the class attribute, and its factory is called.
    order = [(f.name, not f.init) for f in fields if f.init or f.name in factories]
    init_fields = [f for f in fields if f.init]
    defaults = {
        f.name: _FACTORY if f.name in factories else f.default
        for f in init_fields
        if f.name in factories or f.default is not dataclasses.MISSING
    }
    # The signature: keyword-only fields go last, as dataclasses orders them.
    parameters = [
        inspect.Parameter(f.name, kind, default=defaults.get(f.name, inspect.Parameter.empty))
        for kind, group in ((positional_or_keyword, False), (keyword_only, True))
        for f in init_fields
        if f.kw_only == group
    ]
    try:
        signature = inspect.Signature(
            [inspect.Parameter("self", positional_or_keyword), *parameters], return_annotation=None
        )
    except ValueError as error:  # a field without a default after one with a default
        raise TypeError(f"{cls.__qualname__}: {error}") from None
    positional = [p.name for p in parameters if p.kind == positional_or_keyword]
    n_positional = len(positional)
    keywords = frozenset(f.name for f in init_fields)
    required = keywords - defaults.keys()  # the fields without a default
    setter = object.__setattr__
    post_init = getattr(cls, "__post_init__", None) is not None

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        arguments = dict(zip(positional, args))
        arguments.update(kwargs)
        # Bound here when the call binds plainly: at most one argument per positional field,
        # keywords naming known fields that no positional argument gave, every field without a
        # default given. Anything else (and every wrong call) goes to Signature.bind, which
        # raises what a call of the function would.
        if not (
            len(args) <= n_positional
            and len(arguments) == len(args) + len(kwargs)
            and arguments.keys() <= keywords
            and required <= arguments.keys()
        ):
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
