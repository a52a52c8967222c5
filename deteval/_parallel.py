"""How many threads a compiled kernel splits its work into: one rule for every kernel.

The kernels that split their work (``deteval/_parallel.h``) write each item's result into its own
row, so the numbers never depend on the count chosen here, only the time does. The count comes
from the caller's ``workers`` (the CLI's ``--workers``; the library's ``workers=`` keyword):

- an integer: that many, at most :func:`usable_cpus` (``1`` forces one thread);
- ``"auto"``: one thread per ``per_thread`` units of work (at least one), at most
  :func:`usable_cpus`, so that small inputs, where starting a thread costs more than the half of
  the work it saves, run on one.

No state: the count is a value passed to each kernel call.

>>> kernel_threads(1, 10**9, 1000), kernel_threads("auto", 10, 1000)
(1, 1)
>>> kernel_threads("auto", 10**9, 1000) == usable_cpus()
True
"""

from __future__ import annotations

import os

__all__ = ["kernel_threads", "usable_cpus"]


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; ``os.cpu_count()`` where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def kernel_threads(workers: int | str | None, work: int, per_thread: int) -> int:
    """Threads for one kernel call over ``work`` units, given the caller's ``workers``.

    Parameters
    ----------
    workers : int, "auto" or None
        ``None`` or an integer below 2: one thread. ``"auto"``: by ``work``.
    work : int
        The call's units of work (pairs, rows, bytes: whatever ``per_thread`` counts).
    per_thread : int
        ``"auto"``: the work one more thread must have to pay for itself (measured per kernel).
    """
    if workers == "auto":
        return max(1, min(usable_cpus(), int(work) // max(1, int(per_thread))))
    if workers is None:
        return 1
    return max(1, min(int(workers), usable_cpus()))
