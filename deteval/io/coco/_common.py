"""Record helpers shared by the COCO readers.

Where a source comes from (a path read once, or parsed objects), lists of JSON objects,
duplicate ids, the position of ids in a sorted table, and the parsers' thread count and capacity columns.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from deteval._parallel import kernel_threads
from deteval._safe_read import MAX_BYTES, loads_strict, read_bytes
from deteval.errors import InputError
from deteval.io._records import Problems, json_type

#: Whether msgspec (the compiled readers' twin, :mod:`deteval.io.coco.fast_msgspec`) can be
#: imported. Looked up, not imported: with the compiled readers built, nothing imports msgspec.
_HAS_MSGSPEC = importlib.util.find_spec("msgspec") is not None

#: The columns of a box-results file: image_id, category_id (int64), bbox (n, 4), score (float64).
BoxColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: Bytes of JSON one more parsing thread must have to pay for itself under ``workers="auto"``
#: (:func:`parse_threads`): the compiled parsers read about 300-400 MB/s per thread and a thread
#: starts in tens of microseconds, so a file under 1 MiB is read on one.
PARSE_BYTES_PER_THREAD = 1 << 20


def parse_threads(workers: int | str | None, size: int) -> int:
    """Threads the compiled parsers split a results file of ``size`` bytes into.

    ``workers`` as the loaders take it (:func:`deteval._parallel.kernel_threads`): ``1`` (the
    library's default) one thread, an integer that many (at most the usable CPUs), ``"auto"`` one
    per :data:`PARSE_BYTES_PER_THREAD` bytes. The columns are the same for every count.
    """
    return kernel_threads(workers, size, PARSE_BYTES_PER_THREAD)


def capacity_buffer(n: int, dtype: Any) -> np.ndarray:
    """``np.empty(n, dtype)`` for a column sized by the most records a file's size allows.

    Such a buffer is written only in part (and by parts at a time, at offsets apart when parsed on
    threads) and then shrunk in place. numpy asks the kernel for 2 MiB pages for arrays of 4 MiB
    or more (``madvise(MADV_HUGEPAGE)``), and each page written is then resident whole: here it is
    not asked, so only the 4 KiB pages written become resident (keypoints at 5,000 images: peak
    74 -> 69 MiB). The values are those of ``np.empty``; numpy's setting is restored at once.
    """
    setting = getattr(getattr(np, "_core", None), "multiarray", None)
    toggle = getattr(setting, "_set_madvise_hugepage", None)
    if toggle is None:  # pragma: no cover - a numpy without the switch
        return np.empty(n, dtype=dtype)
    with _HUGEPAGE_SWITCH:  # loaders on two threads: the second must not find the first's False
        before = toggle(False)
        try:
            return np.empty(n, dtype=dtype)
        finally:
            toggle(before)


#: Held while numpy's process-wide huge-page setting is switched off (:func:`capacity_buffer`).
_HUGEPAGE_SWITCH = threading.Lock()


def _source(source: Any, default_name: str, fast_path: Any) -> tuple[Any, str]:
    """(parsed data, name for messages); a file is read once and offered to ``fast_path`` first.

    ``fast_path(held, path)`` gets the file's bytes as the one item of the list ``held`` and
    returns the finished value, or None to parse and check in full. It may empty ``held`` once it
    holds what it needs (the columns of a results file), so that the bytes are freed before the
    columns are checked: if it then returns None (something needs a message), the file is read
    again for the full path.
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        held = [read_bytes(path, what="a JSON file", limit=MAX_BYTES["json"])]
        fast = fast_path(held, path)
        if fast is not None:
            return fast, path
        raw = held[0] if held else read_bytes(path, what="a JSON file", limit=MAX_BYTES["json"])
        del held
        return loads_strict(raw, path), path
    return source, default_name


def _check_list_of_objects(value: Any, where: str, what: str, field: str) -> list:
    """``value`` must be a list of JSON objects; ``field`` names it in messages."""
    if not isinstance(value, list):
        raise InputError(
            f"{where}: {field} is not an array; expected a JSON array of {what} "
            f"objects, found {json_type(value)}"
        )
    bad = [i for i, r in enumerate(value) if not isinstance(r, dict)]
    if bad:
        Problems(where, what, lambda i: f"in {field}").fail(
            bad, "is not a JSON object", f"an object with the {what}'s fields", lambda i: value[i]
        )
    return value


def _value_at(records: list, key: str) -> Callable[[int], Any]:
    """``i -> records[i][key]``: the value a message shows for record ``i``."""
    return lambda i: records[i][key]


def _duplicates(ids: np.ndarray) -> list[tuple[int, int, int]]:
    """(id, first position, second position) of repeated ids."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
    return [(int(sorted_ids[d]), int(order[d]), int(order[d + 1])) for d in dup]


def _refuse_duplicates(ids: np.ndarray, where: str, what: str) -> None:
    dups = _duplicates(ids)
    if dups:
        shown = "; ".join(f"id {i} at {what} #{a} and #{b}" for i, a, b in dups[:5])
        more = f"; and {len(dups) - 5} more" if len(dups) > 5 else ""
        raise InputError(f"{where}: duplicate {what} ids: {shown}{more}; expected each id once")
