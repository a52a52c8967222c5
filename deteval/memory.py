"""Will it fit? Memory estimates checked before the big allocations, with a clear refusal.

A run whose arrays do not fit ends in a ``MemoryError`` traceback at best and in the kernel's
out-of-memory killer at worst. The largest allocations of an evaluation are known from the
input sizes before they are made:

* candidate pairs: one per (detection, ground truth) of the same image and class (a crowded
  image with 100,000 ground truths under ``voc2007`` makes 10**8 pairs), about
  :data:`BYTES_PER_PAIR` bytes each while matched;
* lanes x detections: outcome flags per (area range x IoU threshold) per detection;
* the precision and score arrays, ``T x R x K x A x M`` float64 each (10,000 IoU thresholds, or
  100,000 classes under ``coco``, make two arrays of several GiB).

:func:`require` compares an estimate with the memory available -- ``MemAvailable`` of
``/proc/meminfo``, or a limit set with :func:`memory_limit` (``--memory-limit``), and in either
case no more than the address space the process has left under its ``RLIMIT_AS`` (``ulimit -v``,
a container's or a batch system's limit: past it every allocation fails, whatever the machine
has free) -- and raises :class:`~deteval.errors.ConfigError` saying what is too big, how much it
needs and what to do. The CLI turns a ``MemoryError`` that still happens (an allocation no
estimate covers) into the same kind of one-line refusal.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator
from typing import Any

from deteval.errors import ConfigError

__all__ = [
    "available_bytes",
    "require",
    "require_match",
    "match_bytes",
    "precision_bytes",
    "memory_limit",
    "format_bytes",
    "address_space_left",
    "out_of_memory_message",
    "BYTES_PER_PAIR",
    "BYTES_PER_DETECTION",
    "BYTES_PER_LANE_DETECTION",
    "map_large_allocations",
    "release_free_memory",
    "LARGE_INPUT_BYTES",
    "CLI_MMAP_THRESHOLD",
]

#: Bytes per candidate (detection, ground truth) pair while matching: indices (2 x int64),
#: IoU (float64), sort keys and per-threshold flags.
BYTES_PER_PAIR = 64

#: Bytes per kept detection while matching, whatever the number of lanes: the columns of the
#: match table (score, class, image, rank, order), the grouping's sort keys and permutations,
#: box copies and areas. Measured: matching 101,503 detections under ``voc2007`` (one lane)
#: peaks at 327 bytes per detection with its candidate pairs, which :data:`BYTES_PER_PAIR` counts.
BYTES_PER_DETECTION = 200

#: Bytes per (lane, detection) -- lane = (area range, IoU threshold) -- while matching: the
#: match table's two bool flags ``det_is_tp`` / ``det_is_ignored`` (2 bytes, kept) and the
#: matching's working set (per-lane chosen ground truth as int64 for the candidate detections,
#: bool temporaries, the flags the accumulation copies per ``max_dets``). Measured: matching
#: 101,503 detections under ``coco`` (4 areas x 10 thresholds = 40 lanes) peaks at 10.1 bytes
#: per (lane, detection) (tracemalloc), of which 5 stay in the table.
BYTES_PER_LANE_DETECTION = 12

#: Address space kept free under RLIMIT_AS at the least (see :func:`available_bytes`).
ADDRESS_SPACE_RESERVE = 64 << 20

_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("deteval_memory_limit", default=None)


def format_bytes(n: float) -> str:
    """``1.5 GiB`` style.

    Examples
    --------
    >>> format_bytes(3 * 2**30 // 2), format_bytes(512)
    ('1.5 GiB', '512 B')
    """
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _proc_kib(path: str, key: bytes) -> int | None:
    """The ``key:  N kB`` value of a /proc file in bytes, None where it cannot be read."""
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def address_space_left() -> tuple[int, int] | None:
    """(bytes of address space left, the limit) under ``RLIMIT_AS``; None without such a limit.

    The soft limit less what the process maps already (``VmSize`` of ``/proc/self/status``):
    numpy's arrays are mappings, so an estimate above this fails whatever memory is free.
    """
    try:
        import resource  # POSIX only
    except ImportError:  # pragma: no cover - not on Linux
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = _proc_kib("/proc/self/status", b"VmSize:") or 0
    return max(soft - used, 0), soft


def _available() -> tuple[int | None, str]:
    """(bytes this run may still allocate, where that number comes from)."""
    limit = _LIMIT.get()
    available: int | None
    if limit is not None:
        available, source = limit, "--memory-limit"
    else:
        available, source = _proc_kib("/proc/meminfo", b"MemAvailable:"), "MemAvailable in /proc/meminfo"
    left = address_space_left()
    if left is not None:
        # A tenth (at least 64 MiB) of what is left is kept for what no estimate counts: the
        # temporaries beside the big arrays, mapping granularity, the allocator's own pages.
        usable = max(left[0] - max(left[0] // 10, ADDRESS_SPACE_RESERVE), 0)
        if available is None or usable < available:
            available = usable
            source = (
                f"address space left under RLIMIT_AS (ulimit -v {format_bytes(left[1])}), less a tenth kept"
            )
    return available, source


def available_bytes(needed: float | None = None) -> int | None:
    """Bytes this run may still allocate.

    The :func:`memory_limit` in force, else the kernel's ``MemAvailable`` estimate (None where
    there is no ``/proc/meminfo``); in both cases at most the address space left under the
    process's ``RLIMIT_AS`` (:func:`address_space_left`) less a tenth of it (at least
    :data:`ADDRESS_SPACE_RESERVE`) for the temporaries no estimate counts. None also when the
    caller will need at most ``needed`` bytes and those are not weighed (:data:`UNWEIGHED_BYTES`).
    """
    if needed is not None and not _weighed(needed):
        return None
    return _available()[0]


#: Requests of at most this many bytes are not weighed against ``MemAvailable``: reading
#: /proc/meminfo costs more than allocating them (the Evaluator matches hundreds of small
#: batches, two checks each). A :func:`memory_limit` or an ``RLIMIT_AS`` still weighs them.
UNWEIGHED_BYTES = 16 * 2**20


def _weighed(n_bytes: float) -> bool:
    """Whether :func:`require` compares ``n_bytes`` with what is available."""
    return n_bytes > UNWEIGHED_BYTES or _LIMIT.get() is not None or address_space_left() is not None


@contextlib.contextmanager
def memory_limit(n_bytes: int | None) -> Iterator[None]:
    """Within the block, :func:`require` compares with ``n_bytes`` instead of ``MemAvailable``."""
    token = _LIMIT.set(None if n_bytes is None else int(n_bytes))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def require(n_bytes: float, *, what: str, hint: str) -> None:
    """Refuse before allocating ``n_bytes`` for ``what`` when they will not fit.

    Raises
    ------
    ConfigError
        ``what`` needs ``n_bytes``, more than available; ``hint`` says what to do.

    Examples
    --------
    >>> with memory_limit(2**30):
    ...     require(2**31, what="precision arrays (10000 x 101 x 80 x 4 x 3)", hint="use fewer thresholds")
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: precision arrays (10000 x 101 x 80 x 4 x 3) need 2.0 GiB, more than the 1.0 GiB available (--memory-limit); use fewer thresholds
    """
    if not _weighed(n_bytes):
        return
    available, source = _available()
    if available is None or n_bytes <= available:
        return
    raise ConfigError(
        f"{what} need {format_bytes(n_bytes)}, more than the {format_bytes(available)} "
        f"available ({source}); {hint}"
    )


def out_of_memory_message(exc: MemoryError) -> str:
    """The one-line refusal of a run that ran out of memory where no estimate was checked.

    Examples
    --------
    >>> out_of_memory_message(MemoryError())[:58]
    'out of memory: an allocation failed (no detail) while this'
    """
    detail = str(exc).strip() or "no detail"
    left = address_space_left()
    if left is not None:
        room = f"{format_bytes(left[0])} of address space left under RLIMIT_AS (ulimit -v {format_bytes(left[1])})"
    else:
        free = _proc_kib("/proc/meminfo", b"MemAvailable:")
        room = (
            f"{format_bytes(free)} available (MemAvailable)" if free is not None else "the memory available"
        )
    return (
        f"out of memory: an allocation failed ({detail}) while this run needed more than {room}; "
        f"use fewer IoU thresholds, classes, area ranges or max_dets, cap the detections per image, "
        f"or run where more memory (or a larger ulimit -v) is available"
    )


def precision_bytes(shape: tuple[int, ...]) -> int:
    """Bytes the accumulation of a ``T x R x K x A x M`` result allocates at its peak (estimate).

    The precision and score arrays (``T x R x K x A x M`` float64 each, kept) and, while one
    ``max_dets`` value is accumulated, its ``T x A x K x R`` float64 precision at the recall
    points: ``8 x T x R x K x A x (2 M + 1)``. Measured: 10,000 IoU thresholds x 101 recall
    points x 80 classes (one area range, one ``max_dets``) peaks 1.75 GiB above the process's
    start, for an estimate of 1.81 GiB (both the compiled and the numpy accumulation).

    Examples
    --------
    >>> format_bytes(precision_bytes((10_000, 101, 80, 1, 1)))
    '1.8 GiB'
    """
    n_iou_thr, n_recall_thr, n_class, n_area, n_max_dets = (int(n) for n in shape)
    return 8 * n_iou_thr * n_recall_thr * n_class * n_area * (2 * n_max_dets + 1)


def match_bytes(n_area: int, n_iou_thr: int, n_det: int) -> int:
    """Bytes matching ``n_det`` kept detections over ``n_area x n_iou_thr`` lanes needs (estimate).

    The candidate pairs are estimated apart (:data:`BYTES_PER_PAIR`, checked when they are built).

    Examples
    --------
    >>> format_bytes(match_bytes(4, 10, 6_000_000))  # LVIS-scale boxes under ``coco``
    '3.8 GiB'
    """
    n_lane = int(n_area) * int(n_iou_thr)
    return int(n_det) * (BYTES_PER_DETECTION + n_lane * BYTES_PER_LANE_DETECTION)


def require_match(n_area: int, n_iou_thr: int, n_det: int) -> None:
    """Refuse before matching when the lanes x detections arrays will not fit.

    The match table keeps two bool flags per (area range x IoU threshold, detection)
    (``det_is_tp``, ``det_is_ignored``); matching needs several times that while it works
    (:func:`match_bytes`).

    Raises
    ------
    ConfigError
        Saying the shape, the bytes needed, the bytes available and what to do.

    Examples
    --------
    >>> with memory_limit(2**28):
    ...     require_match(4, 10_000, 1_000)
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: the lanes x detections outcome arrays of matching (4 area ranges x 10000 IoU thresholds x 1000 detections: two bool flags per lane and detection, and the matching's working set) need 458.0 MiB, more than the 256.0 MiB available (--memory-limit); use fewer IoU thresholds or area ranges (or a smaller max_dets), or give a larger --memory-limit on a machine that has it
    """
    shape = f"{n_area} area ranges x {n_iou_thr} IoU thresholds x {n_det} detections"
    require(
        match_bytes(n_area, n_iou_thr, n_det),
        what=f"the lanes x detections outcome arrays of matching ({shape}: two bool flags per "
        "lane and detection, and the matching's working set)",
        hint="use fewer IoU thresholds or area ranges (or a smaller max_dets), or give a larger "
        "--memory-limit on a machine that has it",
    )


def env_limit() -> int | None:  # pragma: no cover - trivial
    """``DETEVAL_MEMORY_LIMIT`` (bytes), when set."""
    value = os.environ.get("DETEVAL_MEMORY_LIMIT")
    return int(value) if value and value.isdigit() else None


#: Inputs above this size on disk (sum of the files) make the CLI call :func:`map_large_allocations`.
LARGE_INPUT_BYTES = 64 << 20

#: The threshold the CLI gives :func:`map_large_allocations`: blocks of 8 MiB or more get their own
#: mapping. Each mapped block is page-faulted afresh when written (about 3 us a page here), so the
#: default 128 KiB cost ``deteval evaluate`` at 20,000 images (992k detections) 210k page faults and
#: 0.5-0.8 s of system time for a peak 6 MiB lower than glibc's own sliding threshold; at 8 MiB:
#: 98k faults and the same peak as 128 KiB within 5 MiB (segm at 5,000 images: 155k -> 103k faults,
#: peak 265 -> 275 MiB; without any fixed threshold 296 MiB).
CLI_MMAP_THRESHOLD = 8 << 20


def map_large_allocations(threshold: int = 128 << 10, keep_free: int | None = None) -> bool:
    """Give each allocation of ``threshold`` bytes or more its own mapping (glibc only).

    glibc serves large blocks from their own memory mappings, returned to the system when freed,
    but raises that threshold (up to 32 MiB) each time such a block is freed, so later arrays of a
    few MiB land in the heap, where freed space is kept: at a million detections that heap held
    ~50 MiB of freed temporaries at the peak. Fixing the threshold (``mallopt(M_MMAP_THRESHOLD)``)
    keeps it low; measured on ``deteval evaluate`` at 20,000 images: peak 467 -> 417 MiB, the same
    CPU time. The process-wide setting stays for the rest of the process.

    Fixing it also fixes glibc's trim threshold (``M_TRIM_THRESHOLD``: free space at the top of the
    heap beyond it is given back to the system at once), which glibc would otherwise slide to twice
    the mmap threshold; left at its 128 KiB default, every heap array of a match chunk freed at the
    top of the heap is given back and page-faulted afresh by the next chunk. ``keep_free`` sets it.

    Parameters
    ----------
    threshold : int, default 128 KiB
        Blocks of this many bytes or more get their own mapping.
    keep_free : int, optional
        Free bytes kept at the top of the heap for the next allocations (``M_TRIM_THRESHOLD``);
        default ``4 * threshold`` (32 MiB for the CLI's 8 MiB). :func:`release_free_memory` gives
        them back where a phase ends (matching does, after its chunks).

    Returns
    -------
    bool
        Whether the setting was made (False on other platforms or C libraries, e.g. musl, macOS).

    Examples
    --------
    >>> isinstance(map_large_allocations(), bool)
    True
    """
    mallopt = _glibc("mallopt")
    if mallopt is None:
        return False
    import ctypes

    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    keep = 4 * int(threshold) if keep_free is None else int(keep_free)
    made = bool(mallopt(ctypes.c_int(m_mmap_threshold), ctypes.c_int(int(threshold))))
    return made and bool(mallopt(ctypes.c_int(m_trim_threshold), ctypes.c_int(min(keep, (1 << 31) - 1))))


def release_free_memory() -> bool:
    """Give the allocator's free memory back to the system now (glibc's ``malloc_trim(0)``).

    Called by :func:`deteval.evaluate.match` when its chunks are done, before the match table is
    built, and again once their matches are in the table's columns: the heap space the chunks
    reused (kept by :func:`map_large_allocations`' ``keep_free``) is then not counted in the
    process's later peak.

    Returns
    -------
    bool
        Whether memory was given back (False on other platforms or C libraries, or nothing to give).

    Examples
    --------
    >>> isinstance(release_free_memory(), bool)
    True
    """
    malloc_trim = _glibc("malloc_trim")
    if malloc_trim is None:
        return False
    import ctypes

    return bool(malloc_trim(ctypes.c_size_t(0)))


def _glibc(name: str) -> Any:
    """The C library's function ``name`` through ctypes, or None off Linux or where it has none.

    ctypes is imported only here (a C library call is not needed to import deteval).
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):  # no such function: not glibc (musl, ...)
        return None
