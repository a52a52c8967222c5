"""Raw segmentation values -> :class:`CheckedMasks`, the canonical columns of a collection.

:func:`parse_masks` sorts each record into polygon, RLE or error, has the polygons
(:mod:`~deteval.masks.polygons`) and RLEs (:mod:`~deteval.masks.rle`)
checked, and gathers vertices, part offsets, canonical RLE dicts and extents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from deteval._values import frozen
from deteval.masks.polygons import _flat_polygons, _parse_polygons
from deteval.masks.rle import _cmask, _parse_rles, summarise_spans
from deteval.masks.sources import (
    MAX_PIXELS,
    POLYGON,
    RLE,
    PolygonSegmentations,
    RleSegmentations,
    SegmentationSource,
    _show,
    fail_records,
)

__all__ = ["CheckedMasks", "RleRows", "parse_masks"]


class RleRows(Sequence):
    """The canonical RLE dict of each record, made on access from the flat columns.

    Item r is None for a polygon record, else ``{"size": [h, w], "counts": bytes}`` (the
    compressed string). No Python object is kept per mask: the strings stay in one blob.
    Equal to any sequence with the same items (a tuple of the dicts included).
    """

    def __init__(self, kind: np.ndarray, size: np.ndarray, blob: bytes, offsets: np.ndarray):
        self._kind, self._size, self._blob, self._offsets = kind, size, blob, offsets

    def __len__(self) -> int:
        return len(self._kind)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        r = int(index)
        if self._kind[r] != RLE:
            return None
        lo, hi = int(self._offsets[r]), int(self._offsets[r + 1])
        return {"size": [int(v) for v in self._size[r]], "counts": bytes(self._blob[lo:hi])}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]


@frozen(eq=False)
class CheckedMasks:
    """Canonical masks of every record of a collection.

    kind : int8 (n,)
        ``POLYGON`` or ``RLE``.
    part_start : int64 (n + 1,)
        Polygon parts of record r are ``part_start[r]:part_start[r + 1]`` (none for RLE rows).
    point_start : int64 (n_part + 1,)
        Vertices of part p are ``points[point_start[p]:point_start[p + 1]]``.
    points : float64 (n_point, 2)
    rle : sequence
        Per record: None for polygons, else ``{"size": [h, w], "counts": bytes | list}``
        (validated; compressed counts as bytes). For messages and pycocotools; the
        computations read the columns below.
    bounds : float64 (n, 4)
        xyxy extent of each record's polygon vertices, or of its RLE's pixels.
    rle_size : int64 (n, 2)
        ``[height, width]`` of each RLE record (0 for polygons).
    rle_blob : bytes
        pycocotools' compressed counts string of every RLE record (uncompressed counts
        compressed), record r at ``rle_blob[rle_offsets[r]:rle_offsets[r + 1]]`` (empty for
        polygons).
    rle_offsets : int64 (n + 1,)
    rle_area : float64 (n,)
        Pixels of each RLE record (``pycocotools.mask.area``); NaN for polygons.
    """

    kind: np.ndarray
    part_start: np.ndarray
    point_start: np.ndarray
    points: np.ndarray
    rle: Sequence
    bounds: np.ndarray
    rle_size: np.ndarray
    rle_blob: bytes
    rle_offsets: np.ndarray
    rle_area: np.ndarray

    @property
    def n_parts(self) -> np.ndarray:
        """The number of parts of each record (int)."""
        return np.diff(self.part_start)


def parse_masks(src: SegmentationSource, threads: int = 1) -> CheckedMasks:
    """Validate every record's segmentation and build the canonical columns.

    ``threads``: how many threads the compiled RLE summary may use (the values do not depend on
    it; see :func:`deteval._parallel.kernel_threads`).

    Polygons already parsed into flat columns (:class:`PolygonSegmentations`) are checked as
    arrays; when any needs a message, the records are decoded and checked as any others are, so
    the values and messages are the same either way.
    """
    if isinstance(src.values, PolygonSegmentations):
        masks = _flat_polygon_masks(src.values)
        if masks is not None:
            return masks
        src = replace(src, values=tuple(src.values))
    if isinstance(src.values, RleSegmentations):
        masks = _flat_rle_masks(src.values, threads)
        if masks is not None:
            return masks
        src = replace(src, values=tuple(src.values))
    values = src.values if isinstance(src.values, tuple) else tuple(src.values)
    n = len(values)
    codes = {list: 0, tuple: 0, dict: 1, type(None): 2}
    code = np.fromiter((codes.get(type(v), 3) for v in values), dtype=np.int8, count=n)
    if (code == 2).any():
        fail_records(
            src,
            np.flatnonzero(code == 2),
            "no `segmentation` (iou_type 'segm' needs a mask for every record)",
            "polygons [[x1, y1, x2, y2, ...], ...] or an RLE {size, counts}",
            lambda r: "nothing",
        )
    if (code == 3).any():
        fail_records(
            src,
            np.flatnonzero(code == 3),
            "`segmentation` is neither a polygon list nor an RLE object",
            "polygons [[x1, y1, x2, y2, ...], ...] or an RLE {size, counts}",
            lambda r: _show(values[r]),
        )
    poly_rows = np.flatnonzero(code == 0)
    n_parts = np.zeros(n, dtype=np.int64)
    n_parts[poly_rows] = np.fromiter((len(values[r]) for r in poly_rows), np.int64, len(poly_rows))
    empty = poly_rows[n_parts[poly_rows] == 0]
    if len(empty):
        fail_records(
            src,
            empty,
            "`segmentation` is an empty polygon list",
            "at least one polygon [x1, y1, x2, y2, x3, y3, ...]",
            lambda r: "[]",
        )
    part_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_parts, out=part_start[1:])
    point_start, points = _parse_polygons(src, poly_rows, n_parts, part_start)
    rle, rle_boxes = _parse_rles(src, np.flatnonzero(code == 1))
    kind = np.where(code == 1, RLE, POLYGON).astype(np.int8)
    bounds = _polygon_bounds(n_parts, part_start, point_start, points)
    rle_rows = np.flatnonzero(code == 1)
    if len(rle_rows):
        box = rle_boxes[rle_rows]
        todo = np.flatnonzero(np.isnan(box[:, 0]))  # not given by the compiled kernel
        if len(todo):
            compressed = [
                rle[r]
                if not isinstance(rle[r]["counts"], list)
                else mask_utils.frPyObjects([rle[r]], *rle[r]["size"])[0]
                for r in rle_rows[todo].tolist()
            ]
            box[todo] = np.asarray(mask_utils.toBbox(compressed), dtype=np.float64).reshape(-1, 4)
        bounds[rle_rows] = np.c_[box[:, :2], box[:, :2] + box[:, 2:]]
    rle_size, rle_blob, rle_offsets, rle_area = _rle_columns(rle, rle_rows, threads)
    return CheckedMasks(
        kind=kind,
        part_start=part_start,
        point_start=point_start,
        points=points,
        rle=rle,
        bounds=bounds,
        rle_size=rle_size,
        rle_blob=rle_blob,
        rle_offsets=rle_offsets,
        rle_area=rle_area,
    )


def _rle_columns(
    rle: tuple, rle_rows: np.ndarray, threads: int = 1
) -> tuple[np.ndarray, bytes, np.ndarray, np.ndarray]:
    """``rle_size``, ``rle_blob``, ``rle_offsets``, ``rle_area`` of checked RLE dicts (see :class:`CheckedMasks`).

    Uncompressed counts are compressed by pycocotools (``frPyObjects``, as ``COCO.annToRLE``).
    """
    n = len(rle)
    size = np.zeros((n, 2), dtype=np.int64)
    strings = [b""] * n
    for r in rle_rows.tolist():
        h, w = rle[r]["size"]
        size[r] = h, w
        counts = rle[r]["counts"]
        strings[r] = (
            mask_utils.frPyObjects([rle[r]], h, w)[0]["counts"] if isinstance(counts, list) else counts
        )
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, strings), np.int64, n), out=offsets[1:])
    blob = b"".join(strings)
    area = np.full(n, np.nan)
    if len(rle_rows):
        area[rle_rows] = summarise_spans(blob, offsets, size, threads)[2][rle_rows]
    return size, blob, offsets, area


def _polygon_bounds(
    n_parts: np.ndarray, part_start: np.ndarray, point_start: np.ndarray, points: np.ndarray
) -> np.ndarray:
    """(n, 4) xyxy extent of each record's polygon vertices (NaN for records without parts)."""
    bounds = np.full((len(n_parts), 4), np.nan)
    if len(points):
        lo = np.minimum.reduceat(points, point_start[:-1], axis=0)
        hi = np.maximum.reduceat(points, point_start[:-1], axis=0)
        has_parts = np.flatnonzero(n_parts > 0)
        first_part = part_start[has_parts]
        bounds[has_parts, :2] = np.minimum.reduceat(lo, first_part, axis=0)
        bounds[has_parts, 2:] = np.maximum.reduceat(hi, first_part, axis=0)
    return bounds


def _flat_polygon_masks(values: PolygonSegmentations) -> CheckedMasks | None:
    """The masks of records that are all polygons given as flat columns, or None for a message."""
    checked = _flat_polygons(values.part_len, values.coords)
    if checked is None:
        return None
    point_start, points = checked
    n = len(values)
    n_parts = values.n_parts
    part_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_parts, out=part_start[1:])
    return CheckedMasks(
        kind=np.full(n, POLYGON, dtype=np.int8),
        part_start=part_start,
        point_start=point_start,
        points=points,
        rle=(None,) * n,
        bounds=_polygon_bounds(n_parts, part_start, point_start, points),
        rle_size=np.zeros((n, 2), dtype=np.int64),
        rle_blob=b"",
        rle_offsets=np.zeros(n + 1, dtype=np.int64),
        rle_area=np.full(n, np.nan),
    )


def _flat_rle_masks(values: RleSegmentations, threads: int = 1) -> CheckedMasks | None:
    """The masks of records that are all compressed RLEs given as flat columns, or None.

    The checks of :func:`~deteval.masks.rle._parse_rles` on the columns: sizes of
    two integers >= 0 with ``h * w <= MAX_PIXELS``, counts strings that are pycocotools'
    encoding and add up to ``h * w`` (compiled kernel). None on any failure (the caller decodes
    the records and the usual checks name the problem) or without the kernel.
    """
    if _cmask() is None:
        return None
    sizes = values.sizes
    n = len(values)
    if (sizes < 0).any() or (sizes > MAX_PIXELS).any() or (sizes[:, 0] * sizes[:, 1] > MAX_PIXELS).any():
        return None
    problem, sums, areas, box = summarise_spans(values.blob, values.offsets, sizes, threads)
    if (problem != 0).any() or (sums != sizes[:, 0] * sizes[:, 1]).any():
        return None  # "" (a 0 x 0 mask) included: the decoded path accepts it
    kind = np.full(n, RLE, dtype=np.int8)
    offsets = np.ascontiguousarray(values.offsets, dtype=np.int64)
    rle = RleRows(kind, sizes, values.blob, offsets)
    todo = np.flatnonzero(np.isnan(box[:, 0]))  # height 0, a run of 0: pycocotools' own toBbox
    if len(todo):
        box[todo] = np.asarray(mask_utils.toBbox([rle[r] for r in todo.tolist()]), np.float64).reshape(-1, 4)
    box[:, 2:] += box[:, :2]  # xywh -> xyxy, in place
    return CheckedMasks(
        kind=kind,
        part_start=np.zeros(n + 1, dtype=np.int64),
        point_start=np.zeros(1, dtype=np.int64),
        points=np.zeros((0, 2)),
        rle=rle,
        bounds=box,
        rle_size=np.ascontiguousarray(sizes, dtype=np.int64),
        rle_blob=values.blob,
        rle_offsets=offsets,
        rle_area=areas,
    )
