"""Raster masks with pycocotools: ``mask_iou: raster``, and every pair with an RLE mask.

pycocotools' own ``mask.frPyObjects`` / ``merge`` / ``iou`` at the image size: the numbers of
pycocotools' ``COCOeval(iouType="segm")``, bit for bit. Rasters are made on demand, only for
the records a pair needs, and kept in a :class:`RasterMasks` of their collection.
"""

from __future__ import annotations

import numpy as np
from pycocotools import mask as mask_utils

from deteval import _speedups
from deteval.masks import (
    MAX_PIXELS,
    N_SHOWN,
    POLYGON,
    RLE,
    CheckedMasks,
    SegmentationSource,
    check_pair_sizes,
    fail_records,
    raster_image_size,
)

__all__ = [
    "RasterMasks",
    "ensure_raster",
    "check_rasterisable",
    "rle_areas",
    "raster_pair_iou",
    "mask_pixel_area",
]


class RasterMasks:
    """pycocotools RLEs per record, computed on demand (``rle[r]`` None until then).

    Deliberately mutable: it is the lazily-filled raster form of one collection's masks, owned
    by that collection's :class:`~deteval.geometry.masks.CollectionMasks` (never a global).
    A worker process forked from the owner fills its own copy.
    """

    def __init__(self, n: int):
        self.rle: list = [None] * n
        self.area = np.full(n, np.nan)
        self.done = np.zeros(n, dtype=bool)
        self.extent_checked = np.zeros(n, dtype=bool)  # rows that passed _check_raster_extent
        self.boundary: dict = {}  # dilation ratio -> {row: boundary RLE} (iou_type "boundary")


def ensure_raster(
    src: SegmentationSource, masks: CheckedMasks, raster: RasterMasks, rows: np.ndarray
) -> None:
    """Compute pycocotools' RLE (``COCO.annToRLE``) of the ``rows`` not done yet.

    Polygons: ``frPyObjects(parts, h, w)`` at the image size, parts merged; uncompressed RLE:
    ``frPyObjects`` (at its own size); compressed RLE: as it is.
    """
    rows = np.unique(rows)
    rows = rows[~raster.done[rows]]
    if not len(rows):
        return
    poly_rows = rows[masks.kind[rows] == POLYGON]
    if len(poly_rows):
        size = raster_image_size(src, poly_rows)
        unchecked = ~raster.extent_checked[poly_rows]
        if unchecked.any():  # prepare_masks checks every record up front in raster mode
            _check_raster_extent(src, masks, poly_rows[unchecked], size[unchecked])
            raster.extent_checked[poly_rows] = True
        rles, areas = _speedups.dispatch("_cmask.rasterise", *_polygon_parts(masks, poly_rows), size)
        for r, rle in zip(poly_rows.tolist(), rles, strict=True):
            raster.rle[r] = rle
        raster.area[poly_rows] = areas
    for r in rows[masks.kind[rows] == RLE].tolist():
        rle = masks.rle[r]
        if isinstance(rle["counts"], list):
            rle = mask_utils.frPyObjects([rle], *rle["size"])[0]
        raster.rle[r] = rle
    todo = rows[np.isnan(raster.area[rows])]  # the polygon rows have theirs
    raster.area[todo] = rle_areas([raster.rle[r] for r in todo.tolist()])
    raster.done[rows] = True


def _polygon_parts(masks: CheckedMasks, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The polygons of ``rows`` as flat columns: ``points`` (n_point, 2), ``point_start``, ``part_start``.

    Part p has the points ``point_start[p]`` to ``point_start[p + 1] - 1``; row k the parts
    ``part_start[k]`` to ``part_start[k + 1] - 1``.
    """
    first = masks.part_start[rows]
    count = masks.part_start[rows + 1] - first
    part_ids = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
    ps = masks.point_start
    lengths = ps[part_ids + 1] - ps[part_ids]
    point_ids = np.repeat(ps[part_ids] - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    point_start = np.zeros(len(part_ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=point_start[1:])
    part_start = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(count, out=part_start[1:])
    return np.ascontiguousarray(masks.points[point_ids], dtype=np.float64), point_start, part_start


#: The rasteriser's decline: coordinates beyond its range (pycocotools rasterises them).
_FAR = "coordinates beyond +-2**26"


def _rasterise_compiled(
    points: np.ndarray, point_start: np.ndarray, part_start: np.ndarray, size: np.ndarray
) -> tuple[list, np.ndarray] | _speedups.Decline:
    """Pycocotools' ``merge(frPyObjects(parts, h, w))`` of each record's polygons and their areas, in C.

    The arguments and result are :func:`_rasterise_pycocotools`'. Declines coordinates beyond the
    kernel's range (+-2**26, images wider or taller than ten million pixels).

    ``deteval.geometry._cmask.rasterise`` follows pycocotools' rasterisation rule (``frPoly``),
    its merge and its string encoding, so the strings are pycocotools' byte for byte
    (tests/unit/test_kernels.py compares them on many generated polygons).
    """
    if not (np.abs(points) < 2**26).all():
        return _speedups.Decline(_FAR)
    sizes = np.ascontiguousarray(size, dtype=np.int64).reshape(len(part_start) - 1, 2)
    areas = np.zeros(len(sizes))
    strings = _speedups.module_of("_cmask.rasterise").rasterise(  # type: ignore[union-attr]
        points, point_start, part_start, sizes, areas
    )
    rles = [{"size": [h, w], "counts": c} for (h, w), c in zip(sizes.tolist(), strings, strict=True)]
    return rles, areas


def _rasterise_pycocotools(
    points: np.ndarray, point_start: np.ndarray, part_start: np.ndarray, size: np.ndarray
) -> tuple[list, np.ndarray]:
    """Pycocotools' RLE (``COCO.annToRLE``) of polygon records, and their areas.

    Record k has the parts ``part_start[k]`` to ``part_start[k + 1] - 1`` (see
    :func:`_polygon_parts`) and the image size ``size[k]`` ``[height, width]``: ``frPyObjects(parts,
    h, w)`` once per image size, the parts of a record merged.
    """
    n = len(part_start) - 1
    rles: list = [None] * n
    size = np.asarray(size, dtype=np.int64).reshape(n, 2)
    key = size[:, 0] * (MAX_PIXELS + 1) + size[:, 1]
    flat = points.reshape(-1)
    for k in np.unique(key):
        group = np.flatnonzero(key == k)
        h, w = (int(v) for v in size[group[0]])
        count = part_start[group + 1] - part_start[group]
        part_ids = np.repeat(part_start[group] - np.cumsum(count) + count, count) + np.arange(count.sum())
        arrays = [flat[2 * point_start[p] : 2 * point_start[p + 1]] for p in part_ids.tolist()]
        made = mask_utils.frPyObjects(arrays, h, w)
        offsets = np.r_[0, np.cumsum(count)].tolist()
        for j, r in enumerate(group.tolist()):
            lo, hi = offsets[j], offsets[j + 1]
            rles[r] = made[lo] if hi - lo == 1 else mask_utils.merge(made[lo:hi])
    return rles, rle_areas(rles)


_speedups.register(
    "_cmask.rasterise",
    "deteval.geometry._cmask",
    _rasterise_compiled,
    _rasterise_pycocotools,
    declines=(_FAR,),
)


def check_rasterisable(
    src: SegmentationSource,
    masks: CheckedMasks,
    rows: np.ndarray | None = None,
    raster: RasterMasks | None = None,
) -> None:
    """Check now what rasterising the polygon records of ``masks`` would check on demand.

    Each polygon's image needs a usable width and height, and its vertices must lie within one
    image size of the image (see :func:`ensure_raster`). Run by
    :func:`deteval.geometry.masks.prepare_masks` in raster mode, so that ``validate`` and
    ``evaluate`` refuse the same inputs, whichever pairs the matching later needs.

    Parameters
    ----------
    src : SegmentationSource
    masks : CheckedMasks
    rows : int64 (n,), optional
        The records to check (default: every record); RLE records are skipped.
    raster : RasterMasks, optional
        The collection's rasters: the checked rows are marked there, so that
        :func:`ensure_raster` does not check them again.

    Raises
    ------
    InputError
        Naming the images without a size, or the records reaching far outside their image.
    """
    poly_rows = np.flatnonzero(masks.kind == POLYGON)
    if rows is not None:
        poly_rows = np.intersect1d(poly_rows, rows)
    if len(poly_rows):
        _check_raster_extent(src, masks, poly_rows, raster_image_size(src, poly_rows))
        if raster is not None:  # ensure_raster need not check these rows again
            raster.extent_checked[poly_rows] = True


def rle_areas(rles: list) -> np.ndarray:
    """``maskUtils.area`` of many RLEs.

    Notes
    -----
    Called in chunks of 255: pycocotools 2.0.x builds its output with
    ``np.array((n,), dtype=np.uint8)``, which numpy 2 refuses for n > 255 (pycocotools itself
    only ever asks for one area at a time).
    """
    out = np.zeros(len(rles))
    for start in range(0, len(rles), 255):
        out[start : start + 255] = mask_utils.area(rles[start : start + 255])
    return out


def _check_raster_extent(
    src: SegmentationSource, masks: CheckedMasks, rows: np.ndarray, size: np.ndarray
) -> None:
    """Polygons to rasterise must lie within one image size of the image.

    pycocotools walks every polygon edge at 5x resolution, so far-away vertices cost memory
    without changing the mask (everything outside the image is clipped). Each record's vertex
    extent (``masks.bounds``) decides; the vertices are read only to name the first bad one.
    """
    bounds = masks.bounds[rows]
    height, width = size[:, 0].astype(np.float64), size[:, 1].astype(np.float64)
    suspect = (
        (bounds[:, 0] < -width)
        | (bounds[:, 2] > 2 * width)
        | (bounds[:, 1] < -height)
        | (bounds[:, 3] > 2 * height)
    )
    if not suspect.any():
        return
    rows, size = rows[suspect], size[suspect]
    first = masks.point_start[masks.part_start[rows]]
    last = masks.point_start[masks.part_start[rows + 1]]
    counts = last - first
    idx = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    pts = masks.points[idx]
    owner = np.repeat(np.arange(len(rows)), counts)
    h = size[owner, 0].astype(np.float64)
    w = size[owner, 1].astype(np.float64)
    outside = (pts[:, 0] < -w) | (pts[:, 0] > 2 * w) | (pts[:, 1] < -h) | (pts[:, 1] > 2 * h)
    if outside.any():
        bad = np.unique(owner[outside])
        first_bad = {int(o): pts[np.flatnonzero(outside & (owner == o))[0]] for o in bad[:N_SHOWN]}
        size_of = {int(rows[o]): size[o] for o in bad[:N_SHOWN]}
        point_of = {int(rows[o]): first_bad[int(o)] for o in bad[:N_SHOWN]}
        fail_records(
            src,
            rows[bad],
            "a polygon reaches far outside its image (pycocotools would rasterise all of it)",
            "vertices within one image size of the image: -width <= x <= 2 width, -height <= y <= 2 height",
            lambda r: (
                f"vertex ({point_of[r][0]:g}, {point_of[r][1]:g}) for an image of "
                f"{int(size_of[r][1])} x {int(size_of[r][0])}"
                if r in point_of
                else ""
            ),
        )


def raster_pair_iou(
    det_src: SegmentationSource,
    det: CheckedMasks,
    det_raster: RasterMasks,
    gt_src: SegmentationSource,
    gt: CheckedMasks,
    gt_raster: RasterMasks,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    is_crowd: np.ndarray,
) -> np.ndarray:
    """Pycocotools' ``maskUtils.iou(dt, gt, iscrowd)`` for aligned pairs.

    By the compiled kernel (:func:`_compiled_pair_iou`) when it is loaded, else by one
    pycocotools call per image; the two give the same values bit for bit.

    A pair of masks of different sizes (pycocotools: IoU -1) is refused first
    (:func:`~deteval.masks.check_pair_sizes`).
    """
    check_pair_sizes(det_src, det, gt_src, gt, det_rows, gt_rows)
    n = len(det_rows)
    iou = np.zeros(n)
    # Masks whose extents (polygon vertices, RLE pixels), widened by 2 px, do not overlap share
    # no pixel: pycocotools' rasteriser keeps pixels within 1 px of the vertices' extent, and
    # gives such pairs IoU 0.
    db, gb = det.bounds[det_rows], gt.bounds[gt_rows]
    with np.errstate(invalid="ignore"):
        apart = (np.minimum(db[:, 2], gb[:, 2]) - np.maximum(db[:, 0], gb[:, 0]) < -4) | (
            np.minimum(db[:, 3], gb[:, 3]) - np.maximum(db[:, 1], gb[:, 1]) < -4
        )
    todo = np.flatnonzero(~apart)
    if not len(todo):
        return iou
    det_rows, gt_rows, is_crowd = det_rows[todo], gt_rows[todo], is_crowd[todo]
    ensure_raster(gt_src, gt, gt_raster, gt_rows)
    ensure_raster(det_src, det, det_raster, det_rows)
    iou[todo] = _speedups.dispatch(
        "_cmask.pair_iou", det_raster, gt_raster, det_rows, gt_rows, is_crowd, gt_src.image[gt_rows]
    )
    return iou


def _pair_iou_pycocotools(
    det_raster: RasterMasks,
    gt_raster: RasterMasks,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    is_crowd: np.ndarray,
    image: np.ndarray,
) -> np.ndarray:
    """``maskUtils.iou`` of aligned pairs of rasterised masks: one pycocotools call per ``image``.

    ``image`` (n_pair,) only batches the calls (pairs of one image share the call); the values do
    not depend on it.
    """
    iou = np.zeros(len(det_rows))
    order = np.lexsort((gt_rows, det_rows, image))
    sorted_image = image[order]
    bounds = np.flatnonzero(np.r_[True, sorted_image[1:] != sorted_image[:-1], True])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        sel = order[lo:hi]
        d_unique, d_index = np.unique(det_rows[sel], return_inverse=True)
        g_unique, g_first, g_index = np.unique(gt_rows[sel], return_index=True, return_inverse=True)
        crowd = is_crowd[sel][g_first].astype(np.uint8)
        matrix = mask_utils.iou(
            [det_raster.rle[r] for r in d_unique.tolist()],
            [gt_raster.rle[r] for r in g_unique.tolist()],
            crowd,
        )
        iou[sel] = np.asarray(matrix, dtype=np.float64).reshape(len(d_unique), len(g_unique))[
            d_index, g_index
        ]
    return iou


def _compiled_pair_iou(
    det_raster: RasterMasks,
    gt_raster: RasterMasks,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    is_crowd: np.ndarray,
    image: np.ndarray | None = None,
) -> np.ndarray:
    """``maskUtils.iou`` of aligned pairs of rasterised masks, by ``deteval.geometry._cmask.pair_iou``.

    The arguments and result are :func:`_pair_iou_pycocotools`' (``image`` is not read).

    Each mask's compressed string is decoded once; a pair sharing no pixel gets 0, any other
    ``intersection / union`` (crowd: over the detection's area) as doubles, which is what
    pycocotools computes (its box pre-check only ever skips pairs sharing no pixel). The masks
    of every pair have one size (checked by the caller), as pycocotools needs for a value.
    """
    d_unique, d_index = np.unique(det_rows, return_inverse=True)
    g_unique, g_index = np.unique(gt_rows, return_inverse=True)

    def blob(raster: RasterMasks, rows: np.ndarray) -> tuple[bytes, np.ndarray]:
        strings = [raster.rle[r]["counts"] for r in rows.tolist()]
        offsets = np.zeros(len(strings) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, strings), np.int64, len(strings)), out=offsets[1:])
        return b"".join(strings), offsets

    out = np.zeros(len(det_rows))
    _speedups.module_of("_cmask.pair_iou").pair_iou(  # type: ignore[union-attr]
        *blob(det_raster, d_unique),
        *blob(gt_raster, g_unique),
        d_index.astype(np.int64),
        g_index.astype(np.int64),
        np.asarray(is_crowd, dtype=np.uint8),
        out,
    )
    return out


_speedups.register("_cmask.pair_iou", "deteval.geometry._cmask", _compiled_pair_iou, _pair_iou_pycocotools)


def mask_pixel_area(
    src: SegmentationSource, masks: CheckedMasks, raster: RasterMasks, rows: np.ndarray
) -> np.ndarray:
    """Pixel count of the masks of ``rows`` (RLE directly; polygons rasterised into ``raster``)."""
    out = np.zeros(len(rows))
    is_rle = masks.kind[rows] == RLE
    for i in np.flatnonzero(is_rle).tolist():
        rle = masks.rle[int(rows[i])]
        counts = rle["counts"]
        out[i] = float(sum(counts[1::2])) if isinstance(counts, list) else float(mask_utils.area(rle))
    poly = np.flatnonzero(~is_rle)
    if len(poly):
        ensure_raster(src, masks, raster, rows[poly])
        out[poly] = raster.area[rows[poly]]
    return out
