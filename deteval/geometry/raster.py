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
    """pycocotools' compressed RLE string of each record, made on demand, in one blob.

    Record r's string is ``blob[start[r]:stop[r]]``, its size ``size[r]``, its pixel count
    ``area[r]`` and pycocotools' ``toBbox`` ``box[r]`` (as xyxy: x, y, x + w, y + h) once ``done[r]`` (NaN before). No Python object is kept per mask: the strings
    of an all-RLE collection are its checked masks' blob itself (nothing copied); polygons are
    rasterised into the blob as pairs need them. Deliberately mutable: it is the lazily-filled
    raster form of one collection's masks, owned by that collection's
    :class:`~deteval.geometry.masks.CollectionMasks` (never a global). A worker process forked
    from the owner fills its own copy.
    """

    def __init__(self, n: int, *, empty: bool = True):
        self.blob: bytes | bytearray = b""
        if empty:  # else the caller sets every column (for_masks)
            self.start = np.zeros(n, dtype=np.int64)
            self.stop = np.zeros(n, dtype=np.int64)
            self.size = np.zeros((n, 2), dtype=np.int64)
            self.area = np.full(n, np.nan)
            self.box = np.full((n, 4), np.nan)
        self.done = np.zeros(n, dtype=bool)
        self.extent_checked = np.zeros(n, dtype=bool)  # rows that passed _check_raster_extent
        self.boundary: dict = {}  # dilation ratio -> {row: boundary RLE} (iou_type "boundary")

    @classmethod
    def for_masks(cls, masks: CheckedMasks) -> RasterMasks:
        """The rasters of ``masks``: done already when every record is an RLE (the blob shared)."""
        all_rle = bool(len(masks.kind)) and bool((masks.kind == RLE).all())
        raster = cls(len(masks.kind), empty=not all_rle)
        if all_rle:
            raster.blob = masks.rle_blob
            # views of the offsets (no copy: 16 MiB at a million masks), read-only: every row is
            # done, so nothing is ever put (a write would be a bug, not a silent change)
            raster.start, raster.stop = masks.rle_offsets[:-1], masks.rle_offsets[1:]
            raster.start.flags.writeable = raster.stop.flags.writeable = False
            raster.size, raster.area = masks.rle_size, masks.rle_area
            raster.box = masks.bounds.view()  # the masks' own xyxy boxes (no copy: 32 MiB at a
            raster.box.flags.writeable = False  # million masks), read-only as the offsets
            raster.done[:] = True
        return raster

    @classmethod
    def from_rles(cls, rles: list) -> RasterMasks:
        """Rasters holding pycocotools RLE dicts with compressed counts (tests, twins)."""
        raster = cls(len(rles))
        for r, rle in enumerate(rles):
            raster.put(np.array([r]), rle["counts"], np.array([0, len(rle["counts"])]))
            raster.size[r] = rle["size"]
        raster.area[:] = rle_areas(rles)
        if rles:
            raster.box[:] = _xyxy(np.asarray(mask_utils.toBbox(rles), dtype=np.float64).reshape(-1, 4))
        raster.done[:] = True
        return raster

    def put(self, rows: np.ndarray, blob: bytes, offsets: np.ndarray) -> None:
        """Append the strings of ``rows`` (string k at ``blob[offsets[k]:offsets[k + 1]]``)."""
        base = len(self.blob)
        if not base:
            self.blob = blob  # the first strings: kept as given, no copy
        else:
            if not isinstance(self.blob, bytearray):
                self.blob = bytearray(self.blob)
            self.blob += blob
        self.start[rows] = base + offsets[:-1]
        self.stop[rows] = base + offsets[1:]

    def rle_of(self, r: int) -> dict:
        """Pycocotools' RLE dict of record ``r`` (made: see :func:`ensure_raster`)."""
        h, w = (int(v) for v in self.size[r])
        return {"size": [h, w], "counts": bytes(self.blob[int(self.start[r]) : int(self.stop[r])])}


def _xyxy(xywh: np.ndarray) -> np.ndarray:
    """``[x, y, x + w, y + h]`` of (n, 4) xywh boxes: the ends pycocotools' ``bbIou`` adds up."""
    xywh = np.asarray(xywh, dtype=np.float64).reshape(-1, 4)
    return np.c_[xywh[:, :2], xywh[:, :2] + xywh[:, 2:]]


def ensure_raster(
    src: SegmentationSource, masks: CheckedMasks, raster: RasterMasks, rows: np.ndarray, threads: int = 1
) -> None:
    """Compute pycocotools' RLE (``COCO.annToRLE``) of the ``rows`` not done yet.

    Polygons: ``frPyObjects(parts, h, w)`` at the image size, parts merged (by the compiled
    rasteriser on ``threads`` threads: the strings do not depend on the count); RLE: its
    compressed string (``masks.rle_blob``: uncompressed counts were compressed when parsed).
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
        blob, offsets, areas, boxes = _speedups.dispatch(
            "_cmask.rasterise", *_polygon_parts(masks, poly_rows), size, threads=threads
        )
        raster.put(poly_rows, blob, offsets)
        raster.size[poly_rows] = size
        raster.area[poly_rows] = areas
        raster.box[poly_rows] = _xyxy(boxes)
    rle_rows = rows[masks.kind[rows] == RLE]
    if len(rle_rows):
        lo, hi = masks.rle_offsets[rle_rows], masks.rle_offsets[rle_rows + 1]
        view = memoryview(masks.rle_blob)
        raster.put(
            rle_rows,
            b"".join(view[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)),
            np.r_[0, np.cumsum(hi - lo)],
        )
        raster.size[rle_rows] = masks.rle_size[rle_rows]
        raster.area[rle_rows] = masks.rle_area[rle_rows]
        raster.box[rle_rows] = masks.bounds[rle_rows]  # xyxy already: x + w, y + h of toBbox
    raster.done[rows] = True


def _polygon_parts(
    masks: CheckedMasks, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The polygons of ``rows``: ``points`` (n_point, 2), ``point_start``, ``part_first``, ``part_stop``.

    The collection's own columns (nothing copied): part p has the points ``point_start[p]`` to
    ``point_start[p + 1] - 1``; row k the parts ``part_first[k]`` to ``part_stop[k] - 1``.
    """
    rows = np.asarray(rows, dtype=np.int64)
    return (
        np.ascontiguousarray(masks.points, dtype=np.float64),
        np.ascontiguousarray(masks.point_start, dtype=np.int64),
        np.ascontiguousarray(masks.part_start[rows], dtype=np.int64),
        np.ascontiguousarray(masks.part_start[rows + 1], dtype=np.int64),
    )


#: The rasteriser's decline: coordinates beyond its range (pycocotools rasterises them).
_FAR = "coordinates beyond +-2**26"


def _rasterise_compiled(
    points: np.ndarray,
    point_start: np.ndarray,
    part_first: np.ndarray,
    part_stop: np.ndarray,
    size: np.ndarray,
    threads: int = 1,
) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray] | _speedups.Decline:
    """Pycocotools' ``merge(frPyObjects(parts, h, w))`` of each record's polygons and their areas, in C.

    The arguments and result are :func:`_rasterise_pycocotools`'. Declines coordinates beyond the
    kernel's range (+-2**26, images wider or taller than ten million pixels): the kernel checks
    the points of the records asked for only, and returns None for such a point.

    ``deteval.geometry._cmask.rasterise`` follows pycocotools' rasterisation rule (``frPoly``),
    its merge and its string encoding, so the strings are pycocotools' byte for byte
    (tests/unit/test_kernels.py compares them on many generated polygons). ``threads``: the
    records are split into that many parts of about equal work, each rasterised on its own
    thread into its own strings, joined in record order (the same bytes for every count).
    """
    n = len(part_first)
    sizes = np.ascontiguousarray(size, dtype=np.int64).reshape(n, 2)
    areas = np.zeros(n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    boxes = np.zeros((n, 4))
    blob = _speedups.module_of("_cmask.rasterise").rasterise(  # type: ignore[union-attr]
        points, point_start, part_first, part_stop, sizes, areas, offsets, boxes, int(threads)
    )
    if blob is None:
        return _speedups.Decline(_FAR)
    return blob, offsets, areas, boxes


def _rasterise_pycocotools(
    points: np.ndarray,
    point_start: np.ndarray,
    part_first: np.ndarray,
    part_stop: np.ndarray,
    size: np.ndarray,
    threads: int = 1,
) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """Pycocotools' RLE (``COCO.annToRLE``) of polygon records: strings, offsets, areas and boxes.

    Record k has the parts ``part_first[k]`` to ``part_stop[k] - 1`` (see
    :func:`_polygon_parts`) and the image size ``size[k]`` ``[height, width]``: ``frPyObjects(parts,
    h, w)`` once per image size, the parts of a record merged. Returns the compressed counts
    strings joined (record k at ``blob[offsets[k]:offsets[k + 1]]``, int64 offsets (n + 1,)), the
    pixel counts (float64 (n,)) and ``toBbox`` (float64 (n, 4), xywh). ``threads`` is not read.
    """
    n = len(part_first)
    rles: list = [None] * n
    size = np.asarray(size, dtype=np.int64).reshape(n, 2)
    key = size[:, 0] * (MAX_PIXELS + 1) + size[:, 1]
    flat = points.reshape(-1)
    for k in np.unique(key):
        group = np.flatnonzero(key == k)
        h, w = (int(v) for v in size[group[0]])
        count = part_stop[group] - part_first[group]
        part_ids = np.repeat(part_first[group] - np.cumsum(count) + count, count) + np.arange(count.sum())
        arrays = [flat[2 * point_start[p] : 2 * point_start[p + 1]] for p in part_ids.tolist()]
        made = mask_utils.frPyObjects(arrays, h, w)
        offsets = np.r_[0, np.cumsum(count)].tolist()
        for j, r in enumerate(group.tolist()):
            lo, hi = offsets[j], offsets[j + 1]
            rles[r] = made[lo] if hi - lo == 1 else mask_utils.merge(made[lo:hi])
    strings = [rle["counts"] for rle in rles]
    out = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, strings), np.int64, n), out=out[1:])
    boxes = np.asarray(mask_utils.toBbox(rles), dtype=np.float64).reshape(n, 4) if n else np.zeros((0, 4))
    return b"".join(strings), out, rle_areas(rles), boxes


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
    threads: int = 1,
    *,
    sizes_agree: bool | None = None,
) -> np.ndarray:
    """Pycocotools' ``maskUtils.iou(dt, gt, iscrowd)`` for aligned pairs.

    ``threads``: how many threads the compiled rasteriser and pair kernel may use (see
    :func:`deteval._parallel.kernel_threads`); the values do not depend on it.
    ``sizes_agree``: passed to :func:`~deteval.masks.check_pair_sizes` (the prepared value's
    answer; computed there when not given).

    By the compiled kernel (:func:`_compiled_pair_iou`) when it is loaded, else by one
    pycocotools call per image; the two give the same values bit for bit.

    A pair of masks of different sizes (pycocotools: IoU -1) is refused first
    (:func:`~deteval.masks.check_pair_sizes`).
    """
    check_pair_sizes(det_src, det, gt_src, gt, det_rows, gt_rows, sizes_agree=sizes_agree)
    n = len(det_rows)
    if det_raster.done.all() and gt_raster.done.all():
        # every string and toBbox box is known (all-RLE collections, or rasterised before): the
        # kernel's own box test, pycocotools' bbIou > 0, skips the pairs that share no pixel
        return _speedups.dispatch(
            "_cmask.pair_iou",
            det_raster,
            gt_raster,
            det_rows,
            gt_rows,
            is_crowd,
            gt_src.image[gt_rows],
            threads=threads,
        )
    iou = np.zeros(n)

    # Pairs that share no pixel have IoU 0, as in pycocotools. Two RLEs: their boxes (``bounds``:
    # pycocotools' toBbox) do not overlap, pycocotools' own test (bbIou 0: it never walks the
    # runs). A polygon: its vertices' extent, widened by 2 px (pycocotools' rasteriser keeps
    # pixels within 1 px of it), does not overlap the other mask's.
    # (one column of the bounds gathered at a time: a few pair-sized temporaries, not (n, 4) ones)
    def side(lo: int, hi: int) -> np.ndarray:
        extent = np.minimum(det.bounds[det_rows, hi], gt.bounds[gt_rows, hi])
        extent -= np.maximum(det.bounds[det_rows, lo], gt.bounds[gt_rows, lo])
        return extent

    both_rle = det.kind[det_rows] == RLE
    both_rle &= gt.kind[gt_rows] == RLE
    with np.errstate(invalid="ignore"):
        overlap = np.minimum(side(0, 2), side(1, 3))
        apart = np.where(both_rle, overlap <= 0, overlap < -4)
    del overlap, both_rle
    todo = np.flatnonzero(~apart)
    if not len(todo):
        return iou
    det_rows, gt_rows, is_crowd = det_rows[todo], gt_rows[todo], is_crowd[todo]
    ensure_raster(gt_src, gt, gt_raster, gt_rows, threads)
    ensure_raster(det_src, det, det_raster, det_rows, threads)
    iou[todo] = _speedups.dispatch(
        "_cmask.pair_iou",
        det_raster,
        gt_raster,
        det_rows,
        gt_rows,
        is_crowd,
        gt_src.image[gt_rows],
        threads=threads,
    )
    return iou


def _pair_iou_pycocotools(
    det_raster: RasterMasks,
    gt_raster: RasterMasks,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    is_crowd: np.ndarray,
    image: np.ndarray,
    threads: int = 1,
) -> np.ndarray:
    """``maskUtils.iou`` of aligned pairs of rasterised masks: one pycocotools call per ``image``.

    ``image`` (n_pair,) only batches the calls (pairs of one image share the call); the values do
    not depend on it. ``threads`` is not read.
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
            [det_raster.rle_of(r) for r in d_unique.tolist()],
            [gt_raster.rle_of(r) for r in g_unique.tolist()],
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
    threads: int = 1,
) -> np.ndarray:
    """``maskUtils.iou`` of aligned pairs of rasterised masks, by ``deteval.geometry._cmask.pair_iou``.

    The arguments and result are :func:`_pair_iou_pycocotools`' (``image`` is not read).

    The kernel reads each pair's two strings where they lie in the blobs (nothing copied) and
    decodes a mask's runs when its first pair comes, keeping them while the next pairs meet the
    mask again (about one image and class group's masks per side and thread: a ground truth is
    decoded once for all the detections of its group, whatever their order); a pair whose boxes do not
    overlap (pycocotools' ``bbIou`` test, on the same ``toBbox`` boxes) or sharing no pixel gets
    0, any other ``intersection / union`` (crowd: over the detection's area) as doubles, which is
    what pycocotools computes (its box pre-check only ever skips pairs sharing no pixel). The
    masks of every pair have one size (checked by the caller), as pycocotools needs for a value.
    ``threads``: the sorted pairs are split into that many parts of about equal work (characters
    to decode), each on its own thread writing its own pairs (the same values for every count).
    """
    det_rows = np.ascontiguousarray(det_rows, dtype=np.int64)
    gt_rows = np.ascontiguousarray(gt_rows, dtype=np.int64)
    crowd = np.ascontiguousarray(is_crowd, dtype=np.uint8)
    n = len(det_rows)
    # The kernel keeps about one group's masks per side: pairs already grouped by one side (as
    # matching makes them, a group's pairs together) are kept as given; else they are sorted so
    # that the pairs of one ground truth come together.
    changes = min(
        np.count_nonzero(det_rows[1:] != det_rows[:-1]), np.count_nonzero(gt_rows[1:] != gt_rows[:-1])
    )
    order = None if 2 * changes < n else np.lexsort((det_rows, gt_rows))
    if order is not None:
        det_rows, gt_rows, crowd = det_rows[order], gt_rows[order], crowd[order]
    sorted_iou = np.zeros(n)
    _speedups.module_of("_cmask.pair_iou").pair_iou(  # type: ignore[union-attr]
        det_raster.blob,
        det_raster.start,
        det_raster.stop,
        det_raster.area,
        det_raster.box,
        gt_raster.blob,
        gt_raster.start,
        gt_raster.stop,
        gt_raster.area,
        gt_raster.box,
        det_rows,
        gt_rows,
        crowd,
        sorted_iou,
        int(threads),
    )
    if order is None:
        return sorted_iou
    out = np.empty(n)
    out[order] = sorted_iou
    return out


_speedups.register("_cmask.pair_iou", "deteval.geometry._cmask", _compiled_pair_iou, _pair_iou_pycocotools)


def mask_pixel_area(
    src: SegmentationSource, masks: CheckedMasks, raster: RasterMasks, rows: np.ndarray, threads: int = 1
) -> np.ndarray:
    """Pixel count of the masks of ``rows`` (RLE directly; polygons rasterised into ``raster``)."""
    out = np.zeros(len(rows))
    is_rle = masks.kind[rows] == RLE
    out[is_rle] = masks.rle_area[rows[is_rle]]
    poly = np.flatnonzero(~is_rle)
    if len(poly):
        ensure_raster(src, masks, raster, rows[poly], threads)
        out[poly] = raster.area[rows[poly]]
    return out
