"""The kernel layer: optional compiled extensions, their ABI check, and the one dispatch to them.

Each compiled module of deteval is an optional speed-up with a pure-numpy twin that gives the
same results bit for bit. Three pieces:

- :func:`load` imports a compiled module if it was built, is not disabled and reports the ABI
  number this version expects (:data:`ABI`); else ``None``. Setting ``DETEVAL_NO_EXTENSION=1``
  (read once, when this module is first imported) disables every extension, e.g. to time the
  twins or to rule the compiled code out. A module built from older sources (a stale in-place
  ``.so`` after a signature change) reports another number: it is not used, and the twins run;
  under ``DETEVAL_REQUIRE_EXTENSION=1`` (CI after a build) that, and a module that was not
  built, is an :class:`~deteval.errors.ExtensionError` naming the module and how to rebuild.
- :func:`register` records a kernel: its name, its compiled module, the function that runs it
  (an adapter with the twin's arguments and result, which returns a :class:`Decline` for inputs
  the kernel does not take), its twin, and what it declines, in words.
- :func:`dispatch` is the one way a caller runs a kernel: the compiled function when its module
  is loaded, the twin when it is not or when the kernel declines; each decline is counted
  (:func:`declines`), so a path that runs only in numpy is visible, not silent.

>>> load("deteval._no_such_extension") is None
True
>>> sorted(ABI)[:2]
['deteval._cacc', 'deteval._canalyze']
"""

from __future__ import annotations

import functools
import importlib
import os
from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import Any

from deteval._values import frozen
from deteval.errors import ExtensionError

__all__ = [
    "ABI",
    "DISABLED",
    "ENV_DISABLE",
    "ENV_REQUIRE",
    "REBUILD",
    "SKIPPED",
    "Decline",
    "Kernel",
    "declines",
    "dispatch",
    "is_disabled",
    "kernels",
    "load",
    "module_of",
    "numpy_only",
    "register",
    "reset_declines",
    "state",
]

#: The environment variable that disables every compiled extension ("1"; "" or "0" keep them).
ENV_DISABLE = "DETEVAL_NO_EXTENSION"
#: The environment variable that makes a missing or stale extension an error ("1"), for CI.
ENV_REQUIRE = "DETEVAL_REQUIRE_EXTENSION"

DISABLED = os.environ.get(ENV_DISABLE, "").strip() not in ("", "0")

#: The ABI number each compiled module must report (its ``ABI`` attribute, set by the init macro
#: of ``deteval/_buffer_checks.h``). Bump a module's number here and in its C source together,
#: whenever one of its functions changes its arguments or meaning.
ABI: dict[str, int] = {
    "deteval._cacc": 3,
    "deteval._canalyze": 2,
    "deteval._cboot": 1,
    "deteval._cmatch": 5,
    "deteval._csort": 3,
    "deteval.geometry._ckeypoint": 3,
    "deteval.geometry._cmask": 7,
    "deteval.io._colparse": 10,
}

#: How to rebuild the extensions, for the messages.
REBUILD = (
    "rebuild the extensions: `python setup.py build_ext --inplace` in a source checkout, "
    "or reinstall deteval (`pip install --force-reinstall --no-deps deteval`)"
)

#: Modules :func:`load` treats as not built (for timing one kernel's twin: scripts/profile_stages.py
#: ``--without``); empty in normal use.
SKIPPED: set[str] = set()


def is_disabled() -> bool:
    """Whether ``DETEVAL_NO_EXTENSION`` disabled the compiled extensions (at import time)."""
    return DISABLED


def _required() -> bool:
    return not DISABLED and os.environ.get(ENV_REQUIRE, "").strip() not in ("", "0")


def load(name: str) -> ModuleType | None:
    """The compiled module ``name`` (e.g. ``"deteval._cmatch"``), or ``None``.

    Parameters
    ----------
    name : str
        Full module name of the extension.

    Returns
    -------
    module or None
        ``None`` when ``DETEVAL_NO_EXTENSION`` is set, the module was not built (a source
        checkout, or an install where no C compiler was available), or it reports another ABI
        number than :data:`ABI` expects (built from older sources).

    Raises
    ------
    ExtensionError
        Under ``DETEVAL_REQUIRE_EXTENSION=1``, for a module of :data:`ABI` that is missing or stale.
    """
    if DISABLED or name in SKIPPED:
        return None
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        if _required() and name in ABI:
            raise ExtensionError(
                f"{name}: not built ({error}), and {ENV_REQUIRE}=1 requires it; {REBUILD}"
            ) from error
        return None
    expected = ABI.get(name)
    found = getattr(module, "ABI", None)
    if expected is not None and found != expected:
        if _required():
            raise ExtensionError(
                f"{name}: stale build (ABI {found}, this version of deteval expects {expected}): "
                f"{module.__file__} was built from older sources; {REBUILD}"
            )
        return None
    return module


def state(name: str) -> str:
    """What ``deteval --version`` says of compiled module ``name``.

    ``"active"``, ``"disabled"`` (``DETEVAL_NO_EXTENSION=1``), ``"not built"``, or ``"stale build
    (ABI 1, expected 2): rebuild"`` (the numpy twins run in its place). Never raises.
    """
    if DISABLED:
        return "disabled"
    try:
        module = importlib.import_module(name)
    except ImportError:
        return "not built"
    found, expected = getattr(module, "ABI", None), ABI.get(name)
    if expected is not None and found != expected:
        return f"stale build (ABI {found}, expected {expected}): rebuild"
    return "active"


@frozen
class Decline:
    """A kernel's answer for inputs it does not take: the twin runs, and ``reason`` is counted."""

    reason: str


@frozen
class Kernel:
    """A compiled kernel and its numpy twin.

    Attributes
    ----------
    name : str
        ``module.function`` without the package, e.g. ``"_cmatch.match_coco"``.
    module : str
        The compiled module's full name (a key of :data:`ABI`).
    run : callable
        Runs the kernel: the twin's arguments and result, or a :class:`Decline`.
    twin : callable
        The numpy implementation, the reference.
    declines : tuple of str
        What the kernel does not take (the reasons its :class:`Decline` values give).
    """

    name: str
    module: str
    run: Callable[..., Any]
    twin: Callable[..., Any]
    declines: tuple[str, ...] = ()


_KERNELS: dict[str, Kernel] = {}
_LOADED: dict[str, ModuleType | None] = {}
_DECLINES: Counter[tuple[str, str]] = Counter()


def register(
    name: str,
    module: str,
    run: Callable[..., Any],
    twin: Callable[..., Any],
    declines: tuple[str, ...] = (),
) -> Kernel:
    """Record a kernel (see :class:`Kernel`); registering a name again replaces it."""
    if module not in ABI:
        raise ValueError(f"{name}: {module} has no ABI number in deteval._speedups.ABI")
    kernel = Kernel(name=name, module=module, run=run, twin=twin, declines=tuple(declines))
    _KERNELS[name] = kernel
    return kernel


def numpy_only(name: str, module: str, reason: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: a function with no compiled kernel, run through :func:`dispatch` as a decline.

    Registers kernel ``name`` (of ``module``) that always declines with ``reason`` and has the
    decorated function as its twin, so that the path is counted (:func:`declines`), not silent.
    """

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        register(name, module, lambda *args, **kwargs: Decline(reason), function, declines=(reason,))

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            return dispatch(name, *args, **kwargs)

        return run

    return wrap


def kernels() -> dict[str, Kernel]:
    """Every registered kernel by name (those of the modules imported so far)."""
    return dict(_KERNELS)


def module_of(name: str) -> ModuleType | None:
    """The loaded compiled module of kernel ``name`` (cached :func:`load`), or None."""
    module = _KERNELS[name].module
    if module not in _LOADED:
        _LOADED[module] = load(module)
    return _LOADED[module]


def dispatch(name: str, *args: Any, **kwargs: Any) -> Any:
    """Run kernel ``name`` on the arguments: compiled when loaded and not declined, else its twin.

    A :class:`Decline` from the kernel is counted under its reason (:func:`declines`) and the twin
    runs on the same arguments; either way the result is the same, bit for bit.
    """
    kernel = _KERNELS[name]
    if module_of(name) is not None:
        out = kernel.run(*args, **kwargs)
        if not isinstance(out, Decline):
            return out
        _DECLINES[name, out.reason] += 1
    return kernel.twin(*args, **kwargs)


def declines() -> dict[str, dict[str, int]]:
    """How many calls each kernel declined since the start (or :func:`reset_declines`), by reason.

    Only kernels whose module is loaded decline; with the extensions disabled the twins run and
    nothing is counted.
    """
    out: dict[str, dict[str, int]] = {}
    for (name, reason), count in sorted(_DECLINES.items()):
        out.setdefault(name, {})[reason] = count
    return out


def reset_declines() -> None:
    """Set every decline count to zero."""
    _DECLINES.clear()
