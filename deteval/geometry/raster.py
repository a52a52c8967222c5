"""Raster masks with pycocotools: ``mask_iou: raster``, and every pair with an RLE mask.

pycocotools' own ``mask.frPyObjects`` / ``merge`` / ``iou`` at the image size: the numbers of
pycocotools' ``COCOeval(iouType="segm")``, bit for bit. Rasters are made on demand, only for
the records a pair needs, and kept in a :class:`RasterMasks` of their collection.
"""

from __future__ import annotations

import numpy as np
from pycocotools import mask as mask_utils

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
        key = size[:, 0] * (MAX_PIXELS + 1) + size[:, 1]
        for k in np.unique(key):
            group = poly_rows[key == k]
            h, w = (int(v) for v in size[key == k][0])
            first = masks.part_start[group]
            count = masks.part_start[group + 1] - first
            part_ids = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
            ps = masks.point_start
            arrays = [masks.points[ps[p] : ps[p + 1]].ravel() for p in part_ids.tolist()]
            rles = mask_utils.frPyObjects(arrays, h, w)
            offsets = np.r_[0, np.cumsum(count)].tolist()
            for j, r in enumerate(group.tolist()):
                a, b = offsets[j], offsets[j + 1]
                raster.rle[r] = rles[a] if b - a == 1 else mask_utils.merge(rles[a:b])
    for r in rows[masks.kind[rows] == RLE].tolist():
        rle = masks.rle[r]
        if isinstance(rle["counts"], list):
            rle = mask_utils.frPyObjects([rle], *rle["size"])[0]
        raster.rle[r] = rle
    raster.area[rows] = rle_areas([raster.rle[r] for r in rows.tolist()])
    raster.done[rows] = True


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
    without changing the mask (everything outside the image is clipped).
    """
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
    """Pycocotools' ``maskUtils.iou(dt, gt, iscrowd)`` for aligned pairs, one call per image.

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
    image = gt_src.image[gt_rows]
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
        iou[todo[sel]] = np.asarray(matrix, dtype=np.float64).reshape(len(d_unique), len(g_unique))[
            d_index, g_index
        ]
    return iou


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
