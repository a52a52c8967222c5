"""Rows sorted into groups once, ranks within groups, and the pairs that share a group.

Detections and ground truth are grouped by (image, class) with one stable sort each; everything
downstream (candidate pairs, per-group ranks, matching rounds) works on these sorted rows and
their offsets, never with a Python loop per group.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from deteval import _speedups
from deteval._values import frozen
from deteval.memory import BYTES_PER_PAIR, require

__all__ = [
    "Groups",
    "group_rows",
    "rank_in_group",
    "candidate_pairs",
    "lexsort",
    "by_group_then_descending",
    "rank_by_group_then_descending",
]


@frozen
class Groups:
    """Rows sorted by group, with the group of each row and each group's first row.

    Attributes
    ----------
    order : int64 (n,)
        Permutation that sorts the original rows by group (stably).
    key : int64 (n,)
        Group key of each *sorted* row.
    """

    order: np.ndarray
    key: np.ndarray

    def start_and_count(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First sorted row and number of rows of each group in ``keys``."""
        start = np.searchsorted(self.key, keys, side="left")
        stop = np.searchsorted(self.key, keys, side="right")
        return start, stop - start


def group_rows(key: np.ndarray, *sort_keys: np.ndarray) -> Groups:
    """Sort rows by ``key`` then by ``sort_keys`` (most significant first), stably.

    Examples
    --------
    >>> g = group_rows(np.array([2, 1, 2, 1]))
    >>> g.order.tolist(), g.key.tolist()
    ([1, 3, 0, 2], [1, 1, 2, 2])
    """
    keys = tuple(reversed(sort_keys)) + (key,)
    order = lexsort(keys)
    return Groups(order=order, key=key[order])


def lexsort(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """``np.lexsort(keys)`` (the last key sorts first; stable), computed by radix passes.

    Each key becomes a dense non-negative integer code (an integer key minus its minimum; a
    float key its rank among the distinct values, so -0.0 and 0.0 tie as they do in
    ``np.lexsort``, and NaN sorts last); the codes combine into one integer of at most 63 bits,
    sorted by stable 16-bit passes (numpy sorts 16-bit integers by radix). A least significant
    key already in order is dropped: the stable passes keep the input order among ties. Keys
    whose codes do not fit 63 bits go to ``np.lexsort``. The result is the same permutation.

    When the optional compiled module ``deteval._csort`` is built, a least significant float key
    under integer keys (a score inside groups) is not ranked: the rows are sorted by the integer
    keys, then each run of equal integer keys by the float, stably, in C. The numpy passes are its
    twin (same permutation; tests/property/test_grouping_sorts.py).

    Examples
    --------
    >>> keys = (np.array([0.5, -0.0, 0.0, 0.5]), np.array([1, 0, 0, 1]))
    >>> lexsort(keys).tolist() == np.lexsort(keys).tolist()
    True
    """
    return _lexsort(keys, compiled=True)


def _lexsort(keys: tuple[np.ndarray, ...], *, compiled: bool) -> np.ndarray:
    """:func:`lexsort`; with ``compiled`` false, in numpy only (what the twins call)."""
    n = len(keys[-1])
    keys = tuple(np.asarray(k) for k in keys)
    while len(keys) > 1 and _is_non_decreasing(keys[0]):
        keys = keys[1:]
    if n <= 1 or (len(keys) == 1 and _is_non_decreasing(keys[0])):
        return np.arange(n, dtype=np.intp)
    if compiled and len(keys) > 1 and keys[0].dtype.kind == "f":
        return _speedups.dispatch("_csort.sort_runs_by_score", keys)
    return _lexsort_numpy(keys)


def _lexsort_numpy(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """:func:`lexsort` of at least two rows in numpy (the twin of the compiled run sort)."""
    if len(keys) > 1:
        order = _few_long_groups(keys[-1], keys[:-1])
        if order is not None:
            return order
    packed = _packed_code(keys)
    if packed is None:
        return np.lexsort(keys)
    return _radix_order(packed[0], packed[1])


def by_group_then_descending(
    group: np.ndarray, score: np.ndarray, ties: tuple[np.ndarray, ...] = (), *, threads: int = 1
) -> np.ndarray:
    """``lexsort(ties + (-score, group))``: rows by group, then by descending score, then by ``ties``.

    The ranking of detections (class, then score; ``ties`` as :func:`lexsort` takes keys, least
    significant first). The same permutation as :func:`lexsort` (int32 from the compiled kernel
    below 2**31 rows, else intp), made without a negated copy of
    ``score`` or a code per row where it can be: the compiled kernel (``deteval._csort``, a
    counting sort by group, or radix passes when the group values spread far beyond the rows
    such as (image, class) keys, then a stable merge sort of each group by score) when there are no
    ``ties``; else, for a few long groups, each group's rows sorted alone
    (:func:`_few_long_groups`). ``threads``: the compiled kernel sorts the groups on that many
    threads (:func:`deteval._parallel.kernel_threads`); the permutation does not depend on it.

    Examples
    --------
    >>> group, score = np.array([1, 0, 1, 0]), np.array([0.2, 0.5, 0.9, 0.5])
    >>> by_group_then_descending(group, score).tolist()
    [1, 3, 2, 0]
    """
    n = len(group)
    if n == 0:
        return np.arange(0, dtype=np.intp)
    ties = _ordering_ties(ties)
    if not ties:
        return _speedups.dispatch("_csort.order_by_group_then_score", group, score, threads=threads)
    return _by_group_then_descending_numpy(group, score, ties)


def rank_by_group_then_descending(
    group: np.ndarray, score: np.ndarray, ties: tuple[np.ndarray, ...] = (), *, threads: int = 1
) -> np.ndarray:
    """Each row's place in its group in the order of :func:`by_group_then_descending`.

    ``rank[order] = rank_in_group(group[order])`` for that order (int32 below 2**31 rows, else
    int64), written by the compiled sort as it sorts each group (on ``threads`` threads) when
    there are no ``ties``: no gather of the keys, no rank array of every row in int64, no scatter.

    Examples
    --------
    >>> group, score = np.array([1, 0, 1, 0]), np.array([0.2, 0.5, 0.9, 0.5])
    >>> rank_by_group_then_descending(group, score).tolist()
    [1, 0, 0, 1]
    """
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    ties = _ordering_ties(ties)
    if not ties:
        return _speedups.dispatch("_csort.rank_by_group_then_score", group, score, threads=threads)
    return _rank_by_group_then_descending_numpy(group, score, ties)


def _ordering_ties(ties: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """``ties`` without its leading non-decreasing keys: as in lexsort, a sorted least key orders nothing."""
    ties = tuple(ties)
    while ties and _is_non_decreasing(ties[0]):
        ties = ties[1:]
    return ties


def _rank_by_group_then_descending_numpy(
    group: np.ndarray, score: np.ndarray, ties: tuple[np.ndarray, ...] = (), threads: int = 1
) -> np.ndarray:
    """The numpy twin of :func:`rank_by_group_then_descending` (at least one row; one thread)."""
    order = _by_group_then_descending_numpy(group, score, ties)
    rank = np.empty(len(group), dtype=np.int32 if len(group) < 2**31 else np.int64)
    rank[order] = rank_in_group(group[order])
    return rank


def _group_then_score_kernel(
    group: np.ndarray, score: np.ndarray, threads: int = 1, *, ranked: bool = False
) -> np.ndarray | _speedups.Decline:
    """:func:`by_group_then_descending` without ties by the compiled sort (counting or radix, then merge).

    ``ranked``: :func:`rank_by_group_then_descending` instead (the rank the kernel writes).
    """
    if group.dtype not in (np.int32, np.int64) or score.dtype != np.float64:
        return _speedups.Decline("not int32/int64 groups and float64 scores")
    low, high = int(group.min()), int(group.max())
    if high - low >= 2**63 - 1:  # the codes' count is a Py_ssize_t (wider ranges: radix passes in C)
        return _speedups.Decline("group values too spread")
    index = np.int32 if len(group) < 2**31 else np.int64
    # The rank (the result) first: the order, freed on return, is then above it on the heap.
    rank: tuple[np.ndarray, ...] = (np.empty(len(group), dtype=index),) if ranked else ()
    filled = np.empty(len(group), dtype=index)
    group_c, score_c = np.ascontiguousarray(group), np.ascontiguousarray(score)
    kernel = _speedups.module_of("_csort.order_by_group_then_score")
    done = kernel.order_by_group_then_score(  # type: ignore[union-attr]
        filled, group_c, group_c.dtype.itemsize, low, high - low + 1, score_c, max(1, int(threads)), *rank
    )
    if done is None:
        return _speedups.Decline("buffers do not fit")
    return rank[0] if ranked else filled


def _by_group_then_descending_numpy(
    group: np.ndarray, score: np.ndarray, ties: tuple[np.ndarray, ...] = (), threads: int = 1
) -> np.ndarray:
    """The numpy twin of :func:`by_group_then_descending` (at least one row; one thread)."""
    by_runs = _few_long_groups(group, tuple(ties) + (score,), negate_last=True)
    if by_runs is not None:
        return by_runs
    return _lexsort(tuple(ties) + (-score, group), compiled=False)


def _packed_code(keys: tuple[np.ndarray, ...]) -> tuple[np.ndarray, int, int] | None:
    """The keys' dense codes combined into one uint64 per row, the bits used, the codes possible.

    The most significant key takes the highest digits; None when they need more than 63 bits.
    """
    code = np.zeros(len(keys[-1]), dtype=np.uint64)
    bits = 0
    n_codes = 1
    for k in reversed(keys):  # most significant first
        digits, size = _dense_code(k)
        bits += max(int(size - 1).bit_length(), 0)
        if bits > 63:
            return None
        code = code * np.uint64(size) + digits
        n_codes *= size
    return code, bits, n_codes


def _radix_order(code: np.ndarray, bits: int) -> np.ndarray:
    """Stable sort of ``code`` by 16-bit passes (least significant first)."""
    order = np.arange(len(code), dtype=np.intp)
    for shift in range(0, max(bits, 1), 16):
        digit = ((code[order] >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
    return order


#: Mean run length above which the compiled run sort is not used (see _by_groups_then_float).
_LONG_RUN = 256


def _by_groups_then_float(keys: tuple[np.ndarray, ...]) -> np.ndarray | _speedups.Decline:
    """:func:`lexsort` of ``keys`` (a float first, least significant) by the compiled run sort.

    Rows by the integer ``keys[1:]``, then by ascending ``keys[0]`` within each group, stably.
    The compiled run sort wins on many short runs (detections of one image and class); for few
    long runs (a class of the whole dataset) the numpy passes are faster, so it declines then, as
    when the keys do not suit it.
    """
    value, group_keys = keys[0], keys[1:]
    if not all(k.dtype.kind in "iub" for k in group_keys):
        return _speedups.Decline("group keys not integers")
    packed = _packed_code(group_keys)
    if packed is None:
        return _speedups.Decline("group keys too wide to pack")
    code, bits, n_codes = packed
    if n_codes * _LONG_RUN < len(code):  # runs are long on average: the numpy passes are faster
        return _speedups.Decline("long runs (numpy is faster)")
    order = _radix_order(code, bits).astype(np.int64)
    run_key = code[order].view(np.int64)
    # Ascending value = descending -value; the kernel keeps equal values (and NaNs, last) in order.
    descending = np.ascontiguousarray(-value.astype(np.float64, copy=False))
    kernel = _speedups.module_of("_csort.sort_runs_by_score")
    if kernel.sort_runs_by_score(order, run_key, descending) is None:  # type: ignore[union-attr]
        return _speedups.Decline("buffers do not fit")
    return order.astype(np.intp, copy=False)


_speedups.register(
    "_csort.sort_runs_by_score",
    "deteval._csort",
    _by_groups_then_float,
    _lexsort_numpy,
    declines=(
        "group keys not integers",
        "group keys too wide to pack",
        "long runs (numpy is faster)",
        "buffers do not fit",
    ),
)
_speedups.register(
    "_csort.order_by_group_then_score",
    "deteval._csort",
    _group_then_score_kernel,
    _by_group_then_descending_numpy,
    declines=("not int32/int64 groups and float64 scores", "group values too spread", "buffers do not fit"),
)
_speedups.register(
    "_csort.rank_by_group_then_score",
    "deteval._csort",
    partial(_group_then_score_kernel, ranked=True),
    _rank_by_group_then_descending_numpy,
    declines=("not int32/int64 groups and float64 scores", "group values too spread", "buffers do not fit"),
)


#: Most distinct values of a leading integer key that :func:`_few_long_groups` sorts run by run.
_FEW_GROUPS = 1 << 16


def _few_long_groups(
    group: np.ndarray, inner: tuple[np.ndarray, ...], *, min_run: int = _LONG_RUN, negate_last: bool = False
) -> np.ndarray | None:
    """``np.lexsort(inner + (group,))`` for a leading integer key of few values with long runs.

    The rows are sorted by ``group`` (a stable 16-bit radix pass), then each group's rows by the
    other keys with ``np.lexsort`` of that group alone: the same permutation, since a stable
    lexicographic sort is the groups in order, each sorted by the rest. The working set is one
    permutation and a 16-bit code per row plus one group's keys, where packing every key into
    one code (ranking the float keys) takes several arrays of the whole length -- the ranking of
    all detections by (class, score) is this case. None when ``group`` is not such a key (an
    integer key of at most ``_FEW_GROUPS`` values and ``min_run`` rows a value on average).
    ``negate_last``: the most significant inner key sorts descending (negated one group at a time).
    """
    n = len(group)
    if group.dtype.kind not in "iub" or n == 0:
        return None
    low, high = int(group.min()), int(group.max())
    n_codes = high - low + 1
    if n_codes > _FEW_GROUPS or n_codes * min_run > n:
        return None
    if group.dtype.kind == "b":
        group = group.view(np.uint8)
    work = np.uint64 if group.dtype.kind == "u" else np.int64  # group - low exactly, no wrap
    code = np.empty(n, dtype=np.uint16)
    np.subtract(group, work(low), out=code, dtype=work, casting="unsafe")  # in [0, n_codes)
    order = np.argsort(code, kind="stable")
    ends = np.cumsum(np.bincount(code, minlength=n_codes))
    del code
    start = 0
    for end in ends.tolist():
        if end - start > 1:
            rows = order[start:end]
            keys = [k[rows] for k in inner]
            if negate_last:
                keys[-1] = -keys[-1]
            order[start:end] = rows[np.lexsort(tuple(keys))]
        start = end
    return order


def _is_non_decreasing(key: np.ndarray) -> bool:
    """Whether ``key`` is sorted (NaN anywhere: not known to be)."""
    if len(key) < 2:
        return True
    with np.errstate(invalid="ignore"):
        return bool((key[1:] >= key[:-1]).all())


def _dense_code(key: np.ndarray) -> tuple[np.ndarray, int]:
    """(uint64 codes in key order, number of codes) of one sort key."""
    if key.dtype.kind in "iub" and len(key):
        low, high = int(key.min()), int(key.max())
        if high - low < 2**62:
            return (key.astype(np.int64) - low).astype(np.uint64), high - low + 1
    values, inverse = np.unique(key, return_inverse=True)
    return inverse.astype(np.uint64), max(len(values), 1)


def rank_in_group(sorted_key: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... within each run of equal keys of an already sorted array.

    >>> rank_in_group(np.array([3, 3, 5, 7, 7, 7])).tolist()
    [0, 1, 0, 0, 1, 2]
    """
    n = len(sorted_key)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    is_first = np.empty(n, dtype=bool)
    is_first[0] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=is_first[1:])
    starts = np.flatnonzero(is_first)
    return np.arange(n) - np.repeat(starts, np.diff(starts, append=n))


def require_pairs(total: int) -> None:
    """Refuse before allocating ``total`` candidate pairs when they will not fit (ConfigError).

    The one check of :func:`candidate_pairs` and of the compiled pairs of boxes
    (:func:`deteval.evaluate.run.box_pairs`, which counts them before allocating).
    """
    require(
        total * BYTES_PER_PAIR,
        what=f"{total} candidate (detection, ground truth) pairs of the same image and class",
        hint="an image with very many ground truths "
        "and detections of one class: cap the detections per image (max_dets), split the image, "
        "or run on a machine with more memory",
    )


def candidate_pairs(det_key: np.ndarray, gt_groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """Every (detection, ground truth) pair that shares a group.

    Parameters
    ----------
    det_key : int64 (n_det,)
        Group key of each detection.
    gt_groups : Groups
        Ground truth sorted by group.

    Returns
    -------
    pair_det, pair_gt : int64 (n_pair,)
        Detection row and *sorted* ground-truth row of each pair, detection-major.
    """
    start, count = gt_groups.start_and_count(det_key)
    total = int(count.sum())
    require_pairs(total)
    pair_det = np.repeat(np.arange(len(det_key)), count)
    first_pair = np.cumsum(count) - count
    pair_gt = np.repeat(start - first_pair, count) + np.arange(total)
    return pair_det, pair_gt
