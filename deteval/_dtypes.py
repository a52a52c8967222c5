"""The integer dtypes of index columns: int32 while the values fit, int64 beyond (one module).

Index columns (detections' ``image`` / ``category`` / ``order``, match-table rows and lanes) are
held in the narrowest dtype that holds them; arithmetic that can leave that range (keys such as
``image * n_class + category``, row offsets) widens first with ``astype(np.int64)``.
:mod:`deteval.data` and :mod:`deteval.matching` re-export these names.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "index_column_of",
    "index_dtype",
    "lane_dtype",
    "narrow_rows",
    "order_column",
    "row_dtype",
    "shifted_index",
]


_INT32 = np.iinfo(np.int32)
_INT32_DTYPE, _INT64_DTYPE = np.dtype(np.int32), np.dtype(np.int64)
#: (dtype, how many lanes 0 .. n - 1 it holds) for :func:`lane_dtype`, narrowest first.
_LANE_DTYPES = tuple((np.dtype(t), int(np.iinfo(t).max) + 1) for t in (np.int8, np.int16, np.int32))


def index_dtype(values: np.ndarray) -> np.dtype:
    """Int32 when every value of the integer array ``values`` fits it, else int64.

    The detections' index columns are int32 (4 bytes a row where int64 took 8); arithmetic on
    them that can leave that range (``image * n_class + category``, row offsets) widens first
    with ``astype(np.int64)``.

    Examples
    --------
    >>> index_dtype(np.array([0, 5])), index_dtype(np.array([2**31]))
    (dtype('int32'), dtype('int64'))
    """
    if np.can_cast(values.dtype, np.int32) or values.size == 0:
        return np.dtype(np.int32)
    low, high = int(values.min()), int(values.max())
    return np.dtype(np.int32 if _INT32.min <= low and high <= _INT32.max else np.int64)


def index_column_of(values: np.ndarray) -> np.ndarray:
    """Integer ``values`` in :func:`index_dtype` (a copy only when the dtype changes)."""
    return values.astype(index_dtype(values), copy=False)


def order_column(n: int) -> np.ndarray:
    """``0 .. n - 1`` as a ``Detections.order`` column: int32 (int64 beyond 2**31 rows).

    Examples
    --------
    >>> order_column(3)
    array([0, 1, 2], dtype=int32)
    """
    return np.arange(n, dtype=np.int32 if n <= _INT32.max + 1 else np.int64)


def shifted_index(values: np.ndarray, offset: int) -> np.ndarray:
    """``values + offset`` (values >= 0), int32 when the sums fit, else int64 (never wrapped).

    Examples
    --------
    >>> small = np.array([0, 1], np.int32)
    >>> shifted_index(small, 2**31 - 2).dtype, shifted_index(small, 2**31 - 1).dtype
    (dtype('int32'), dtype('int64'))
    """
    offset = int(offset)
    high = int(values.max()) + offset if values.size else offset
    if values.dtype == np.int32 and _INT32.min <= offset and high <= _INT32.max:
        return values + np.int32(offset)
    return index_column_of(values.astype(np.int64) + offset)


def row_dtype(n_row: int) -> np.dtype:
    """Int32 for rows ``0 .. n_row - 1`` when they fit, else int64."""
    return _INT32_DTYPE if n_row <= _INT32.max + 1 else _INT64_DTYPE


def narrow_rows(values: np.ndarray) -> np.ndarray:
    """Non-negative row indices as int32 when their largest fits (``values`` itself when already)."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu" or values.dtype.itemsize <= 4:
        return values
    return values.astype(row_dtype(int(values.max()) + 1 if len(values) else 0), copy=False)


def lane_dtype(n_lane: int) -> np.dtype:
    """The narrowest signed integer holding lanes ``0 .. n_lane - 1`` (int8 for COCO's 40)."""
    for dtype, n_values in _LANE_DTYPES:
        if n_lane <= n_values:
            return dtype
    return _INT64_DTYPE
