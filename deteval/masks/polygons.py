"""Polygon segmentations: every part checked, vertices gathered into one array.

A polygon record is a list of parts ``[x1, y1, x2, y2, ...]``; each part must be a list of
numbers, of even length, with at least 3 distinct, finite points within
:data:`~deteval.masks.sources.MAX_COORDINATE`. Used by
:func:`~deteval.masks.parsing.parse_masks`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from deteval.masks.sources import MAX_COORDINATE, SegmentationSource, _as_float, _show, fail_records


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _parse_polygons(
    src: SegmentationSource, poly_rows: np.ndarray, n_parts: np.ndarray, part_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    values = src.values
    parts = list(itertools.chain.from_iterable(values[r] for r in poly_rows))
    part_row = np.repeat(np.arange(len(n_parts)), n_parts)
    part_index = np.arange(len(parts)) - part_start[part_row]

    def part_of(r: int, problem_parts: np.ndarray) -> str:
        p = int(problem_parts[part_row[problem_parts] == r][0])
        return f"part {int(part_index[p])}: {_show(parts[p])}"

    not_list = np.fromiter((type(p) not in (list, tuple) for p in parts), bool, len(parts))
    if not_list.any():
        bad = np.flatnonzero(not_list)
        fail_records(
            src,
            np.unique(part_row[bad]),
            "a polygon is not a list of numbers",
            "polygons [[x1, y1, x2, y2, ...], ...]",
            lambda r: part_of(r, bad),
        )
    part_len = np.fromiter(map(len, parts), np.int64, len(parts))
    flat = list(itertools.chain.from_iterable(parts))
    coords = None
    if set(map(type, flat)) <= {int, float}:
        try:
            coords = np.array(flat, dtype=np.float64)
        except OverflowError:
            coords = None
    if coords is None:
        is_bad = np.fromiter((not all(_is_number(v) for v in p) for p in parts), bool, len(parts))
        if is_bad.any():
            bad = np.flatnonzero(is_bad)
            fail_records(
                src,
                np.unique(part_row[bad]),
                "a polygon coordinate is not a number",
                "JSON numbers [x1, y1, x2, y2, ...]",
                lambda r: part_of(r, bad),
            )
        coords = np.array([_as_float(v) for v in flat], dtype=np.float64)
    odd = np.flatnonzero(part_len % 2 == 1)
    if len(odd):
        fail_records(
            src,
            np.unique(part_row[odd]),
            "a polygon has an odd number of coordinates",
            "x, y pairs [x1, y1, x2, y2, ...]",
            lambda r: part_of(r, odd),
        )
    short = np.flatnonzero(part_len < 6)
    if len(short):
        fail_records(
            src,
            np.unique(part_row[short]),
            "a polygon has fewer than 3 points",
            "at least 3 points (6 numbers; pycocotools reads a first polygon of 4 numbers as a box)",
            lambda r: part_of(r, short),
        )
    coord_start = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(part_len, out=coord_start[1:])
    coord_part = np.repeat(np.arange(len(parts)), part_len)
    with np.errstate(invalid="ignore"):
        is_nonfinite = ~np.isfinite(coords)
        is_huge = ~is_nonfinite & (np.abs(coords) > MAX_COORDINATE)
    if is_nonfinite.any():
        bad = np.unique(coord_part[is_nonfinite])
        fail_records(
            src,
            np.unique(part_row[bad]),
            "a polygon has a NaN or infinite coordinate",
            "finite numbers",
            lambda r: part_of(r, bad),
        )
    if is_huge.any():
        bad = np.unique(coord_part[is_huge])
        fail_records(
            src,
            np.unique(part_row[bad]),
            f"a polygon coordinate is beyond +-{MAX_COORDINATE:g}",
            f"pixel coordinates within +-{MAX_COORDINATE:g}",
            lambda r: part_of(r, bad),
        )
    points = coords.reshape(-1, 2)
    point_start = coord_start // 2
    few = np.flatnonzero(~_has_three_distinct(points, point_start))
    if len(few):
        fail_records(
            src,
            np.unique(part_row[few]),
            "a polygon has fewer than 3 distinct points",
            "at least 3 distinct points",
            lambda r: part_of(r, few),
        )
    return point_start, points


def _flat_polygons(part_len: np.ndarray, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(point_start, points) of polygons given as flat columns, or None when any needs a message.

    The checks of :func:`_parse_polygons` on numbers already parsed (``part_len``: numbers per
    part; ``coords``: every number in order): an even count of at least 6 numbers per part, finite
    coordinates within :data:`MAX_COORDINATE`, 3 distinct points. On any failure the caller
    decodes the records and :func:`_parse_polygons` names the problem, so every message is the one
    the decoded records give.

    Examples
    --------
    >>> point_start, points = _flat_polygons(np.array([6]), np.array([0.0, 0, 1, 0, 0, 1]))
    >>> point_start.tolist(), points.shape
    ([0, 3], (3, 2))
    >>> _flat_polygons(np.array([4]), np.array([0.0, 0, 1, 1])) is None
    True
    """
    if ((part_len % 2 == 1) | (part_len < 6)).any():
        return None
    # two reductions, no temporary the size of the coordinates; NaN makes both comparisons false
    if len(coords) and not (coords.min() >= -MAX_COORDINATE and coords.max() <= MAX_COORDINATE):
        return None
    coord_start = np.zeros(len(part_len) + 1, dtype=np.int64)
    np.cumsum(part_len, out=coord_start[1:])
    points = coords.reshape(-1, 2)
    point_start = coord_start // 2
    if not _has_three_distinct(points, point_start).all():
        return None
    return point_start, points


def _has_three_distinct(points: np.ndarray, point_start: np.ndarray) -> np.ndarray:
    """Per part (each with >= 3 points): whether it has at least 3 distinct points.

    Examples
    --------
    >>> pts = np.array([[0, 0], [1, 0], [0, 1], [0, 0], [1, 1], [0, 0], [1, 1]], dtype=float)
    >>> _has_three_distinct(pts, np.array([0, 3, 7])).tolist()
    [True, False]
    """
    n_part = len(point_start) - 1
    out = np.ones(n_part, dtype=bool)
    if n_part == 0:
        return out
    z = np.ascontiguousarray(points).view(np.complex128).ravel()
    s = point_start[:-1]
    # Fast path: the first three points already differ (almost every real polygon).
    slow = np.flatnonzero((z[s] == z[s + 1]) | (z[s + 1] == z[s + 2]) | (z[s] == z[s + 2]))
    if not len(slow):
        return out
    counts = point_start[slow + 1] - point_start[slow]
    idx = np.repeat(point_start[slow] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    zz = z[idx]
    local_start = np.cumsum(counts) - counts
    first = np.repeat(zz[local_start], counts)
    differs = zz != first
    position = np.where(differs, np.arange(len(zz)), len(zz))
    second_at = np.minimum.reduceat(position, local_start)
    has_second = second_at < len(zz)
    second = np.repeat(zz[np.minimum(second_at, len(zz) - 1)], counts)
    third = differs & (zz != second)
    out[slow] = np.logical_or.reduceat(third, local_start) & has_second
    return out
