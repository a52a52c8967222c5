"""Optional compiled extensions: load one if it was built and is not disabled, else ``None``.

Each compiled module of deteval is an optional speed-up with a pure-numpy twin that gives the
same results bit for bit; the caller runs the twin when :func:`load` returns ``None``. Setting the
environment variable ``DETEVAL_NO_EXTENSION=1`` (read once, when this module is first imported)
disables every extension, e.g. to time the twin or to rule the compiled code out.

>>> load("deteval._no_such_extension") is None
True
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["ENV_DISABLE", "DISABLED", "is_disabled", "load"]

#: The environment variable that disables every compiled extension ("1"; "" or "0" keep them).
ENV_DISABLE = "DETEVAL_NO_EXTENSION"

DISABLED = os.environ.get(ENV_DISABLE, "").strip() not in ("", "0")


def is_disabled() -> bool:
    """Whether ``DETEVAL_NO_EXTENSION`` disabled the compiled extensions (at import time)."""
    return DISABLED


def load(name: str) -> ModuleType | None:
    """The compiled module ``name`` (e.g. ``"deteval._cmatch"``), or ``None``.

    Parameters
    ----------
    name : str
        Full module name of the extension.

    Returns
    -------
    module or None
        ``None`` when ``DETEVAL_NO_EXTENSION`` is set or the module was not built (a source
        checkout, or an install where no C compiler was available).
    """
    if DISABLED:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
