"""The optional compiled parts of deteval: each has a numpy/Python twin giving the same numbers.

A compiled module is built from the project's own C files when a C compiler is available
(``setup.py``); without one, or with ``DETEVAL_NO_EXTENSION`` set (to anything but empty or
``0``) when deteval is imported, :func:`load` returns None and the caller uses its twin.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

#: Read once, at import: ``DETEVAL_NO_EXTENSION=1`` makes deteval ignore every compiled module.
DISABLED = os.environ.get("DETEVAL_NO_EXTENSION", "") not in ("", "0")


def load(name: str) -> ModuleType | None:
    """The compiled module ``deteval.<name>``, or None when it is not built or is disabled.

    Parameters
    ----------
    name : str
        Module name inside the package, e.g. ``"_cboot"``.

    Returns
    -------
    module or None

    Examples
    --------
    >>> load("_no_such_module") is None
    True
    """
    if DISABLED:
        return None
    try:
        return importlib.import_module(f"deteval.{name}")
    except ImportError:
        return None
