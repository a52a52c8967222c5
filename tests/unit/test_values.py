"""``deteval._values.frozen`` against ``dataclasses.dataclass(frozen=True)``, class by class.

Every value class of the package, and classes generated from field specifications (defaults,
factories, keyword-only, ``init=False``, ``repr``/``compare``/``hash`` flags, ``__post_init__``,
explicit ``__eq__``/``__hash__``, subclasses), are made twice from the same source -- by
:func:`~deteval._values.frozen` and by the standard decorator -- and must agree on fields,
signature, repr, equality, hash, ``replace``, pickling, matching and every refusal.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import inspect
import pickle
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deteval
from deteval._values import frozen

PACKAGE = Path(deteval.__file__).parent


def _value_class_names() -> list[tuple[str, str]]:
    """(module, class) of every top-level class of the package decorated with ``@frozen``."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(d).split("(")[0] == "frozen" for d in node.decorator_list
            ):
                names.append((module, node.name))
    return names


def _made_by_frozen(cls: type) -> bool:
    """A frozen dataclass (a subclass of a value class is made by the standard decorator)."""
    return dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def _field_facts(f: dataclasses.Field) -> tuple:
    return (f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare, f.hash, f.kw_only)


def _parameters(cls: type) -> list[tuple]:
    """(name, kind, default as text) of the class's signature (annotations aside)."""
    return [(p.name, p.kind, repr(p.default)) for p in inspect.signature(cls).parameters.values()]


def _generated(attribute: Any) -> bool:
    """A method the decorators made (ours: closures of deteval._values; the standard one: exec'd)."""
    function = inspect.unwrap(attribute) if callable(attribute) else None
    code = getattr(function, "__code__", None)
    return code is not None and (code.co_filename == "<string>" or function.__module__ == "deteval._values")


def _stdlib_twin(cls: type) -> type:
    """The same class body made by ``dataclasses.dataclass(frozen=True, eq=...)``."""
    body = {
        k: v
        for k, v in vars(cls).items()
        if k
        not in ("__dict__", "__weakref__", "__dataclass_fields__", "__dataclass_params__", "__match_args__")
        and not _generated(v)
        and not (k == "__hash__" and cls.__dataclass_params__.eq)  # type: ignore[attr-defined]
    }
    own = {f.name: f for f in dataclasses.fields(cls) if f.name in cls.__dict__.get("__annotations__", {})}
    for name, f in own.items():
        body[name] = dataclasses.field(
            default=f.default,
            default_factory=f.default_factory,
            init=f.init,
            repr=f.repr,
            compare=f.compare,
            hash=f.hash,
            kw_only=f.kw_only,
            metadata=f.metadata,
        )
    body["__annotations__"] = dict(cls.__dict__.get("__annotations__", {}))
    twin = type(cls.__name__, cls.__bases__, body)
    twin.__qualname__, twin.__module__ = cls.__qualname__, cls.__module__
    return dataclasses.dataclass(frozen=True, eq=cls.__dataclass_params__.eq)(twin)  # type: ignore[attr-defined]


def _compare_with_the_standard_decorator(cls: type) -> None:
    twin = _stdlib_twin(cls)
    assert [_field_facts(f) for f in dataclasses.fields(cls)] == [
        _field_facts(f) for f in dataclasses.fields(twin)
    ]
    assert _parameters(cls) == _parameters(twin)
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    params, twin_params = cls.__dataclass_params__, twin.__dataclass_params__  # type: ignore[attr-defined]
    for flag in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
        assert getattr(params, flag) == getattr(twin_params, flag), flag
    assert (cls.__hash__ is None) == (twin.__hash__ is None)
    assert ("__eq__" in vars(cls)) == ("__eq__" in vars(twin))


def test_every_value_class_is_the_dataclass_the_standard_decorator_makes() -> None:
    """Each ``@frozen`` class of the package (the optional extras' too, where installed)."""
    names = _value_class_names()
    assert {"Protocol", "GroundTruth", "Detections", "EvalResult", "MatchTable"} <= {c for _, c in names}
    compared, failed = 0, []
    for module_name, class_name in names:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional extra not installed here
            continue
        cls = getattr(module, class_name)
        assert _made_by_frozen(cls), f"{module_name}.{class_name}"
        try:
            _compare_with_the_standard_decorator(cls)
        except AssertionError as error:
            failed.append(f"{module_name}.{class_name}: {error}")
        compared += 1
    assert failed == []
    assert compared >= len(names) - 10  # at most the plot / torch extras' classes left out


# ------------------------------------------------------------------------------------------------
# Generated classes: the same source under both decorators
# ------------------------------------------------------------------------------------------------

_FIELD = st.fixed_dictionaries(
    {
        "default": st.sampled_from(["none", "value", "factory"]),
        "init": st.booleans(),
        "repr": st.booleans(),
        "compare": st.booleans(),
        "hash": st.sampled_from([None, True, False]),
        "kw_only": st.booleans(),
    }
)


def _source(fields: list[dict], *, eq: bool, kw_only: bool, post_init: bool, decorator: str) -> str:
    lines = ["import dataclasses", "from dataclasses import field", "from deteval._values import frozen", ""]
    deco = decorator.format(eq=eq, kw_only=kw_only)
    lines += [deco, "class V:", "    '''A value.'''"]
    for i, spec in enumerate(fields):
        args = [
            f"init={spec['init']}",
            f"repr={spec['repr']}",
            f"compare={spec['compare']}",
            f"hash={spec['hash']}",
        ]
        args.append(f"kw_only={spec['kw_only'] or kw_only}")
        if spec["default"] == "value":
            args.append(f"default={i * 10}")
        elif spec["default"] == "factory":
            args.append("default_factory=list")
        lines.append(f"    f{i}: object = field({', '.join(args)})")
    if post_init:
        lines += ["    def __post_init__(self):", "        object.__setattr__(self, 'seen', True)"]
    return "\n".join(lines) + "\n"


OURS = "@frozen(eq={eq}, kw_only={kw_only})"
STDLIB = "@dataclasses.dataclass(frozen=True, eq={eq}, kw_only={kw_only})"


def _make(source: str) -> tuple[type | None, str | None]:
    """The class ``V`` of ``source``, or the type and message of what making it raised."""
    name = f"_values_probe_{abs(hash(source))}"
    module = types.ModuleType(name)
    # Registered: dataclasses reads the module of string annotations, pickle finds classes there.
    sys.modules[name] = module
    try:
        exec(source, module.__dict__)  # noqa: S102  (generated test classes)
    except (TypeError, ValueError) as error:
        del sys.modules[name]
        return None, type(error).__name__
    return module.__dict__["V"], None


def _outcome(call: Any) -> tuple:
    try:
        return ("ok", call())
    except (TypeError, dataclasses.FrozenInstanceError, AttributeError) as error:
        return (type(error).__name__,)


def _behaviour(cls: type, fields: list[dict]) -> list:
    """What a user sees of ``cls``: calls, repr, eq, hash, replace, pickle, assignment."""
    init_names = [f"f{i}" for i, s in enumerate(fields) if s["init"]]
    required = [f"f{i}" for i, s in enumerate(fields) if s["init"] and s["default"] == "none"]
    seen: list = [_parameters(cls), cls.__match_args__]  # type: ignore[attr-defined]
    kwargs = {n: (n, 1) for n in required}
    made = _outcome(lambda: cls(**kwargs))
    seen.append(made[0])
    seen.append(_outcome(lambda: cls())[0] if required else "no required")
    seen.append(_outcome(lambda: cls(**kwargs, nope=1))[0])
    seen.append(_outcome(lambda: cls(*range(len(init_names) + 1)))[0])
    seen.append(_outcome(lambda: repr(cls(*range(len(init_names))))))  # every argument by position
    seen.append(_outcome(lambda: repr(cls(**{n: n for n in init_names}))))  # every one by keyword
    for k in range(len(init_names) + 1):  # the first k by position, or by keyword
        seen.append(_outcome(lambda k=k: repr(cls(*init_names[:k]))))
        seen.append(_outcome(lambda k=k: repr(cls(**{n: n for n in init_names[len(init_names) - k :]}))))
        # the first k by position and the others by keyword, then also one of the first k again
        seen.append(_outcome(lambda k=k: repr(cls(*init_names[:k], **{n: n for n in init_names[k:]}))))
        seen.append(_outcome(lambda k=k: repr(cls(*init_names[:k], **{n: n for n in init_names[k - 1 :]}))))
    if made[0] != "ok":
        return seen
    a = made[1]
    b = cls(**kwargs)
    seen.append(_outcome(lambda: repr(a)))
    seen.append(_outcome(lambda: a == b))
    seen.append(_outcome(lambda: a != b))
    seen.append(_outcome(lambda: hash(a) == hash(b)))
    seen.append(_outcome(lambda: a == 3))
    seen.append(repr(list(vars(a).items())))  # the fields set, in the order they were set
    seen.append(_outcome(lambda: repr(dataclasses.replace(a, **{n: "r" for n in init_names[:1]}))))
    seen.append(_outcome(lambda: dataclasses.asdict(a)))
    seen.append(_outcome(lambda: repr(pickle.loads(pickle.dumps(a)))))
    seen.append(_outcome(lambda: repr(copy.deepcopy(a))))
    for i in range(len(fields)):
        seen.append(_outcome(lambda i=i: setattr(a, f"f{i}", 5)))
        seen.append(_outcome(lambda i=i: delattr(a, f"f{i}")))
    seen.append(_outcome(lambda: setattr(a, "other", 1)))
    return seen


@settings(max_examples=150, deadline=None)
@given(
    fields=st.lists(_FIELD, min_size=0, max_size=6),
    eq=st.booleans(),
    kw_only=st.booleans(),
    post_init=st.booleans(),
)
def test_generated_classes_behave_as_the_standard_frozen_dataclass(
    fields: list[dict], eq: bool, kw_only: bool, post_init: bool
) -> None:
    ours, our_error = _make(_source(fields, eq=eq, kw_only=kw_only, post_init=post_init, decorator=OURS))
    std, std_error = _make(_source(fields, eq=eq, kw_only=kw_only, post_init=post_init, decorator=STDLIB))
    assert our_error == std_error  # the same classes refused (a field without a default after one with)
    if ours is None or std is None:
        return
    assert _behaviour(ours, fields) == _behaviour(std, fields)


def _pair(body: str) -> tuple[type, type]:
    classes = []
    for deco in ("@frozen", "@dataclasses.dataclass(frozen=True)"):
        source = f"import dataclasses\nfrom typing import ClassVar\nfrom deteval._values import frozen\n{deco}\n{body}"
        made, error = _make(source)
        assert error is None
        classes.append(made)
    return classes[0], classes[1]


def test_an_explicit_eq_or_hash_in_the_body_is_kept_as_dataclasses_keeps_it() -> None:
    body = "class V:\n    a: int\n    def __eq__(self, other):\n        return True\n    def __hash__(self):\n        return 7\n"
    ours, std = _pair(body)
    assert ours(1) == ours(2)
    assert hash(ours(1)) == hash(std(1)) == 7
    body = "class V:\n    a: int\n    def __eq__(self, other):\n        return True\n"
    ours, std = _pair(body)
    assert hash(ours(1)) == hash(std(1)) == hash((1,))


def test_class_variables_are_not_fields_and_subclasses_add_their_fields() -> None:
    ours, std = _pair("class V:\n    a: int\n    K: ClassVar[int] = 3\n")
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(std)] == ["a"]
    assert ours.K == 3

    @frozen
    class Base:
        a: int

    @frozen
    class Child(Base):
        b: int = 2

    assert (
        repr(Child(1))
        == "test_class_variables_are_not_fields_and_subclasses_add_their_fields.<locals>.Child(a=1, b=2)"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        Child(1).b = 3  # type: ignore[misc]


def test_recursive_repr_and_match_statements() -> None:
    ours, std = _pair("class V:\n    a: object\n")
    box: list = []
    ours_value, std_value = ours(box), std([])
    box.append(ours_value)
    assert repr(ours_value) == "V(a=[...])"
    match std_value:
        case std(a=[]):
            pass
        case _:
            pytest.fail("no match")
    match ours(3):
        case ours(3):
            pass
        case _:
            pytest.fail("no positional match")


@pytest.mark.parametrize(
    "body",
    [
        "class V:\n    a: dataclasses.InitVar[int]\n",
        "class V:\n    a: int\n    def __setattr__(self, name, value):\n        pass\n",
        "class V:\n    a: int\n    def __delattr__(self, name):\n        pass\n",
    ],
)
def test_what_frozen_refuses(body: str) -> None:
    _, error = _make(f"import dataclasses\nfrom deteval._values import frozen\n@frozen\n{body}")
    assert error == "TypeError"
