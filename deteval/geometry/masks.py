"""Mask IoU for ``iou_type="segm"``: checked masks prepared once, then exact or raster per pair.

Two ways of measuring overlap, chosen by ``Protocol.mask_iou``:

``"exact"`` (preset ``coco-exact-masks``)
    Polygons are polygons: intersection and union areas come from shapely 2
    (:mod:`deteval.geometry.polygons`), computed for all pairs at once. Only pairs whose mask
    bounds overlap are computed, and pairs that cannot reach the lowest IoU threshold are
    pruned with a cheap bound. A pair in which either mask is an RLE is computed on the
    raster, as in ``"raster"`` mode.
``"raster"`` (preset ``coco``: COCO's official mask IoU)
    pycocotools' own ``mask.frPyObjects`` / ``merge`` / ``iou`` at the image size
    (:mod:`deteval.geometry.raster`): the numbers of pycocotools'
    ``COCOeval(iouType="segm")``, bit for bit. Needs each image's width and height.

The masks of a (ground truth, detections) pair are parsed and validated once, by
:func:`prepare_masks`, into a :class:`PreparedMasks` value that the caller passes on
(:func:`deteval.evaluate.match` builds one when not given it; sharded matching builds one in
the parent, so forked workers inherit it and invalid input is reported once). The exact and
raster forms are built inside that value on first use; there is no module-level cache.

Notes
-----
Exact versus raster. pycocotools keeps a pixel when the polygon covers its centre (on a
5x upsampled boundary), so each mask's raster differs from the polygon by at most a band of
about one pixel along its boundary. With perimeters ``P_d``, ``P_g`` (pixels) and exact areas
``A_d``, ``A_g``, the tests check

    |IoU_exact - IoU_raster| <= 2 (P_d + P_g) / max(A_d, A_g)

which shrinks like 1 / size: a few percent for objects of 100 x 100 px, but easily 0.1 or
more for COCO's "small" objects (< 32 x 32 px). :func:`deteval.mask_modes.compare_mask_modes`
reports what the difference does to the metrics on real data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

import numpy as np

from deteval._parallel import kernel_threads
from deteval._values import frozen
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.geometry.raster import RasterMasks, check_rasterisable, mask_pixel_area, raster_pair_iou

if TYPE_CHECKING:  # the exact geometry (shapely) loads on first use: box runs never need it
    from deteval.geometry.polygons import ExactMasks
from deteval.masks import (
    POLYGON,
    RLE,
    CheckedMasks,
    SegmentationSource,
    check_group_sizes,
    detection_source,
    ground_truth_source,
    parse_masks,
    rle_sizes_are_image_sizes,
    values_source,
)

__all__ = [
    "CollectionMasks",
    "PreparedMasks",
    "prepare_masks",
    "mask_threads",
    "MASK_WORK_PER_THREAD",
    "check_masks",
    "pair_mask_iou",
    "detection_areas",
    "segm_iou",
]


@frozen(eq=False)
class CollectionMasks:
    """The checked masks of one collection (ground truth or detections) and their geometry.

    Attributes
    ----------
    source : SegmentationSource
        The raw values and how to name each record in messages.
    masks : CheckedMasks
        Parsed, validated columns (one row per record).
    raster : RasterMasks
        pycocotools RLEs, filled on demand for the rows a computation needs.
    rle_sizes_are_image_sizes : bool
        Whether every RLE record's ``size`` is its image's (:func:`deteval.masks.rle_sizes_are_image_sizes`),
        read once here: every match chunk's size check (:func:`deteval.masks.check_pair_sizes`'
        ``sizes_agree``) takes it from this value.
    """

    source: SegmentationSource
    masks: CheckedMasks
    raster: RasterMasks
    rle_sizes_are_image_sizes: bool
    _exact: dict = field(default_factory=dict, repr=False)  # invalid_polygons -> ExactMasks

    @classmethod
    def parse(cls, source: SegmentationSource, threads: int = 1) -> CollectionMasks:
        """Validate every record of ``source`` (raises InputError naming the first bad ones).

        ``threads``: how many threads the compiled RLE summary may use (same values for any).
        """
        masks = parse_masks(source, threads)
        return cls(
            source=source,
            masks=masks,
            raster=RasterMasks.for_masks(masks),
            rle_sizes_are_image_sizes=rle_sizes_are_image_sizes(source, masks),
        )

    def exact(self, invalid_polygons: str) -> ExactMasks:
        """The shapely geometry of every polygon record, built on first use.

        Parameters
        ----------
        invalid_polygons : {"even_odd", "error", "make_valid"}
            What to do with self-intersecting polygons (see ``Protocol.invalid_polygons``).
        """
        if invalid_polygons not in self._exact:
            from deteval.geometry.polygons import build_exact_masks

            self._exact[invalid_polygons] = build_exact_masks(self.source, self.masks, invalid_polygons)
        return self._exact[invalid_polygons]

    def has_exact(self, invalid_polygons: str) -> bool:
        """Whether :meth:`exact` has already been built for ``invalid_polygons``."""
        return invalid_polygons in self._exact


@frozen(eq=False)
class PreparedMasks:
    """The checked masks of one (ground truth, detections) pair, for any mask protocol.

    Built by :func:`prepare_masks`; pass it to :func:`pair_mask_iou`,
    :func:`detection_areas` and ``deteval.evaluate.match(..., masks=...)``. The parsed
    columns are fixed; the exact (per ``invalid_polygons``) and raster forms are built
    inside the value on first use, so one value serves ``mask_iou`` "exact" and "raster".

    Attributes
    ----------
    gt, dt : GroundTruth, Detections
        The collections the masks were read from (rows refer to them).
    gt_masks, det_masks : CollectionMasks
    threads : int
        How many threads the compiled mask kernels (RLE summary, rasteriser, pair IoU) split their
        work into, for this value's whole life (:func:`prepare_masks`' ``threads``). The numbers
        never depend on it.
    """

    gt: GroundTruth
    dt: Detections
    gt_masks: CollectionMasks
    det_masks: CollectionMasks
    threads: int = 1

    def is_for(self, gt: GroundTruth, dt: Detections) -> bool:
        """Whether this value was prepared from exactly these objects."""
        return self.gt is gt and self.dt is dt


#: The mask records (ground truth plus detections) one more kernel thread must have to pay for
#: itself under ``workers="auto"`` (measured: see :func:`mask_threads`).
MASK_WORK_PER_THREAD = 2000


def mask_threads(workers: int | str | None, n_records: int) -> int:
    """Threads for the mask kernels of a run over ``n_records`` masks, given ``workers``.

    :func:`deteval._parallel.kernel_threads` with :data:`MASK_WORK_PER_THREAD`: an integer
    ``workers`` gives that many (at most the usable CPUs), ``"auto"`` one thread per
    :data:`MASK_WORK_PER_THREAD` records, so that small inputs stay on one thread.

    >>> mask_threads("auto", 10), mask_threads(1, 10**6)
    (1, 1)
    """
    return kernel_threads(workers, n_records, MASK_WORK_PER_THREAD)


def prepare_masks(gt: GroundTruth, dt: Detections, protocol: Any, *, threads: int = 1) -> PreparedMasks:
    """Parse and validate every mask of ``gt`` and ``dt`` (and, in exact mode, build polygons).

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol
        Reads ``mask_iou`` and ``invalid_polygons``: in exact mode the polygons are built now,
        so that polygons ``invalid_polygons: error`` refuses are reported here; in raster mode
        every polygon is checked to be rasterisable (its image's size, its extent). Rasters
        are made on demand.
    threads : int, default 1
        How many threads the compiled mask kernels split their work into, now (the RLE strings'
        summary) and later (rasterising polygons, pair IoUs: the count is kept in the value).
        Callers derive it from their ``workers`` with
        :func:`mask_threads` (``workers``, records of ``gt`` and ``dt``); the numbers are the same
        for every count.

    Returns
    -------
    PreparedMasks

    Raises
    ------
    InputError
        The first invalid segmentation found (see :func:`pair_mask_iou`).
    """
    prepared = PreparedMasks(
        gt=gt,
        dt=dt,
        gt_masks=CollectionMasks.parse(ground_truth_source(gt), threads),
        det_masks=CollectionMasks.parse(detection_source(dt, gt), threads),
        threads=max(1, int(threads)),
    )
    _check_collection(prepared.gt_masks, protocol, prepared.det_masks)
    _check_collection(prepared.det_masks, protocol, prepared.gt_masks)
    gm, dm = prepared.gt_masks, prepared.det_masks
    check_group_sizes(
        dm.source,
        dm.masks,
        gm.source,
        gm.masks,
        _compared_group(gt, dt, protocol),
        _group(gt, gt.image, gt.category),
        sizes_agree=dm.rle_sizes_are_image_sizes and gm.rle_sizes_are_image_sizes,
    )
    return prepared


def _group(gt: GroundTruth, image: np.ndarray, category: np.ndarray) -> np.ndarray:
    """int64 (n,): the (image, class) group of each row, the unit of pycocotools' IoUs."""
    return image.astype(np.int64) * gt.n_classes + category.astype(np.int64)


def _compared_group(gt: GroundTruth, dt: Detections, protocol: Any) -> np.ndarray:
    """Each detection's group, or -1 beyond ``max(max_dets)`` (never compared).

    pycocotools' ``computeIoU`` keeps a group's first ``maxDets[-1]`` by score, stable in file
    order, before any IoU; per image under ``max_dets_scope: image``.
    """
    group = _group(gt, dt.image, dt.category)
    max_dets = getattr(protocol, "max_dets", None)
    if not max_dets or not len(group):
        return group
    capped = np.asarray(dt.image, dtype=np.int64) if protocol.max_dets_scope == "image" else group
    cap = max(max_dets)
    # only the rows of groups holding more than ``cap`` detections are ranked (sorted)
    if capped.min() >= 0 and capped.max() < 4 * len(capped) + (1 << 20):
        over = np.bincount(capped)[capped] > cap
    else:
        _, inverse, counts = np.unique(capped, return_inverse=True, return_counts=True)
        over = counts[inverse] > cap
    rows = np.flatnonzero(over)
    if not len(rows):
        return group
    order = rows[np.lexsort((np.asarray(dt.order)[rows], -np.asarray(dt.score)[rows], capped[rows]))]
    sorted_group = capped[order]
    starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    out = group.copy()
    out[order[rank >= cap]] = -1
    return out


def _mask_mode(protocol: Any) -> str:
    """``mask_iou``, or ``raster`` for ``iou_type: boundary`` (Boundary AP is on raster masks)."""
    return "raster" if getattr(protocol, "iou_type", None) == "boundary" else protocol.mask_iou


def _check_collection(masks: CollectionMasks, protocol: Any, other: CollectionMasks | None) -> None:
    """The per-protocol checks of one collection (see :func:`prepare_masks`).

    Raster mode: every polygon must be rasterisable. Exact mode: the polygons are built, and
    those in an image where ``other`` has an RLE mask (such pairs use the raster) must be
    rasterisable.
    """
    if _mask_mode(protocol) == "exact":
        masks.exact(protocol.invalid_polygons)
        if other is not None and (other.masks.kind == RLE).any():
            rle_images = np.unique(other.source.image[other.masks.kind == RLE])
            rows = np.flatnonzero(np.isin(masks.source.image, rle_images))
            check_rasterisable(masks.source, masks.masks, rows, masks.raster)
    else:
        check_rasterisable(masks.source, masks.masks, raster=masks.raster)


def check_masks(gt: GroundTruth, dt: Detections | None, protocol: Any) -> None:
    """Run the mask checks of :func:`prepare_masks` (``deteval validate``); ``dt`` may be None.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections or None
        None: check the ground truth's masks only.
    protocol : Protocol
        A ``segm`` protocol (``mask_iou``, ``invalid_polygons`` decide the checks).

    Raises
    ------
    InputError
        What :func:`prepare_masks`, and so evaluation, would raise.
    """
    if dt is not None:
        prepare_masks(gt, dt, protocol)
        return
    _check_collection(CollectionMasks.parse(ground_truth_source(gt)), protocol, None)


def _lowest_threshold(protocol: Any) -> float:
    """The smallest IoU that can match under ``protocol`` (pycocotools caps t at 1 - 1e-10)."""
    lowest = float(min(protocol.iou_thresholds))
    return min(lowest, 1 - 1e-10)


def _pair_iou(
    det: CollectionMasks,
    gt: CollectionMasks,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    is_crowd: np.ndarray,
    *,
    mask_iou: str,
    invalid_polygons: str,
    lowest: float,
    describe: Callable[[int, int], str],
    threads: int = 1,
) -> np.ndarray:
    """IoU of aligned pairs: exact for polygon pairs in exact mode, raster otherwise."""
    if mask_iou == "raster":
        return raster_pair_iou(
            det.source,
            det.masks,
            det.raster,
            gt.source,
            gt.masks,
            gt.raster,
            det_rows,
            gt_rows,
            is_crowd,
            threads,
            sizes_agree=det.rle_sizes_are_image_sizes and gt.rle_sizes_are_image_sizes,
        )
    from deteval.geometry.polygons import exact_pair_iou

    dx, gx = det.exact(invalid_polygons), gt.exact(invalid_polygons)
    iou = np.zeros(len(gt_rows))
    both_polygons = (gt.masks.kind[gt_rows] == POLYGON) & (det.masks.kind[det_rows] == POLYGON)
    exact = np.flatnonzero(both_polygons)
    iou[exact] = exact_pair_iou(
        dx,
        gx,
        det_rows[exact],
        gt_rows[exact],
        is_crowd[exact],
        lowest,
        lambda i: describe(int(det_rows[exact[i]]), int(gt_rows[exact[i]])),
    )
    raster = np.flatnonzero(~both_polygons)
    if len(raster):
        iou[raster] = raster_pair_iou(
            det.source,
            det.masks,
            det.raster,
            gt.source,
            gt.masks,
            gt.raster,
            det_rows[raster],
            gt_rows[raster],
            is_crowd[raster],
            threads,
            sizes_agree=det.rle_sizes_are_image_sizes and gt.rle_sizes_are_image_sizes,
        )
    return iou


def pair_mask_iou(
    prepared: PreparedMasks, gt_rows: np.ndarray, det_rows: np.ndarray, gt_is_crowd: np.ndarray, protocol: Any
) -> np.ndarray:
    """Mask IoU of aligned (ground truth, detection) pairs under ``protocol``.

    Parameters
    ----------
    prepared : PreparedMasks
        From :func:`prepare_masks` of the ground truth and detections the rows refer to.
    gt_rows, det_rows : int64 (n_pair,)
        Rows of the pairs (same image and class).
    gt_is_crowd : bool (n_pair,)
        Crowd pairs use intersection over the detection's area.
    protocol : Protocol
        Reads ``mask_iou``, ``invalid_polygons`` and ``iou_thresholds``.

    Returns
    -------
    float64 (n_pair,)
        ``mask_iou="raster"``: pycocotools' values exactly. ``"exact"``: shapely areas for
        polygon pairs (0 for pairs that cannot reach the lowest threshold, see
        :mod:`deteval.geometry.polygons`), raster values for pairs with an RLE mask.

    Raises
    ------
    InputError
        (raster) An image without a usable size; (exact) a polygon GEOS cannot overlay.

    Examples
    --------
    >>> from deteval import get_protocol, load_detections, load_ground_truth
    >>> gt = load_ground_truth({"images": [{"id": 1, "width": 100, "height": 100}],
    ...     "categories": [{"id": 1, "name": "a"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 1250,
    ...                      "bbox": [10, 10, 50, 50], "segmentation": [[10, 10, 60, 10, 10, 60]]}]})
    >>> dt = load_detections([{"image_id": 1, "category_id": 1, "score": 0.9,
    ...                        "segmentation": [[10, 10, 60, 10, 60, 60, 10, 60]]}], gt)
    >>> p = get_protocol("coco-exact-masks").replace(iou_type="segm")
    >>> prepared = prepare_masks(gt, dt, p)
    >>> rows = np.array([0])
    >>> pair_mask_iou(prepared, rows, rows, np.array([False]), p).tolist()
    [0.5]
    >>> pair_mask_iou(prepared, rows, rows, np.array([False]), p.replace(mask_iou="raster")).round(4).tolist()
    [0.49]
    >>> detection_areas(prepared, rows, p).tolist()  # no bbox: the polygon's area
    [2500.0]
    """
    gt_rows = np.asarray(gt_rows, dtype=np.int64)
    det_rows = np.asarray(det_rows, dtype=np.int64)
    is_crowd = np.asarray(gt_is_crowd, dtype=bool)
    gm, dm = prepared.gt_masks, prepared.det_masks

    def describe(d: int, g: int) -> str:
        return (
            f"{gm.source.where}: annotation #{int(gm.source.number[g])} ({gm.source.label(g)}) "
            f"and {dm.source.where}: detection #{int(dm.source.number[d])} ({dm.source.label(d)})"
        )

    if protocol.iou_type == "boundary":
        from deteval.geometry.boundary import boundary_pair_iou

        return boundary_pair_iou(
            dm.source,
            dm.masks,
            dm.raster,
            gm.source,
            gm.masks,
            gm.raster,
            det_rows,
            gt_rows,
            is_crowd,
            ratio=protocol.boundary_dilation_ratio,
        )
    if protocol.mask_iou == "exact":  # ground truth first: its invalid polygons are reported first
        gm.exact(protocol.invalid_polygons)
        dm.exact(protocol.invalid_polygons)
    return _pair_iou(
        dm,
        gm,
        det_rows,
        gt_rows,
        is_crowd,
        mask_iou=protocol.mask_iou,
        invalid_polygons=protocol.invalid_polygons,
        lowest=_lowest_threshold(protocol),
        describe=describe,
        threads=prepared.threads,
    )


def detection_areas(prepared: PreparedMasks, rows: np.ndarray, protocol: Any) -> np.ndarray:
    """Area of each detection for the size ranges, decided record by record.

    A record with a bbox: its ``w * h`` (pycocotools' ``loadRes``). Without: its mask's area,
    exact polygon area in ``exact`` mode, pixel count in ``raster`` mode (and for RLE masks).

    Parameters
    ----------
    prepared : PreparedMasks
    rows : int64 (n,)
        Detection rows.
    protocol : Protocol

    Returns
    -------
    float64 (n,)

    Notes
    -----
    pycocotools decides once, from the *first* result record: if it has a non-empty bbox,
    every area is ``w * h`` (records without a bbox crash it); otherwise every area is
    ``maskUtils.area`` of a compressed RLE (polygons crash it). deteval decides per record,
    which gives the same numbers on every file pycocotools accepts.
    """
    dt = prepared.dt
    rows = np.asarray(rows, dtype=np.int64)
    box = boxes_as(dt.box[rows], dt.box_format, "xywh")
    area = box[:, 2] * box[:, 3]
    dm = prepared.det_masks
    mode = _mask_mode(protocol)
    if mode == "exact":
        dm.exact(protocol.invalid_polygons)  # validates every polygon, with or without a bbox
    no_box = np.flatnonzero(~np.asarray(dt.has_box)[rows])
    if not len(no_box):
        return area
    need = rows[no_box]
    is_poly = dm.masks.kind[need] == POLYGON
    if mode == "exact" and is_poly.any():
        area[no_box[is_poly]] = dm.exact(protocol.invalid_polygons).area[need[is_poly]]
        no_box, need = no_box[~is_poly], need[~is_poly]
    if len(need):
        area[no_box] = mask_pixel_area(dm.source, dm.masks, dm.raster, need, prepared.threads)
    return area


def segm_iou(
    det: list,
    gt: list,
    gt_is_crowd: Any = None,
    *,
    mask_iou: str = "exact",
    image_size: tuple | None = None,
    invalid_polygons: str = "even_odd",
) -> np.ndarray:
    """IoU matrix between COCO segmentations (polygon lists or RLE dicts).

    Parameters
    ----------
    det : list (n_det,)
        Detection segmentations, e.g. ``[[[0, 0, 10, 0, 10, 10, 0, 10]], ...]``.
    gt : list (n_gt,)
        Ground-truth segmentations.
    gt_is_crowd : bool (n_gt,), optional
        Crowd columns use intersection over the detection's area.
    mask_iou : {"exact", "raster"}
    image_size : (height, width), optional
        Needed to rasterise (``raster`` mode, or RLE masks).
    invalid_polygons : {"even_odd", "error", "make_valid"}

    Returns
    -------
    float64 (n_det, n_gt)

    Raises
    ------
    InputError
        Invalid segmentations (the message names the record).

    Examples
    --------
    >>> square = [[0, 0, 10, 0, 10, 10, 0, 10]]
    >>> half = [[5, 0, 15, 0, 15, 10, 5, 10]]
    >>> segm_iou([half], [square]).round(6).tolist()
    [[0.333333]]
    >>> triangle = [[10, 10, 60, 10, 10, 60]]
    >>> float(segm_iou([triangle], [square], mask_iou="raster", image_size=(100, 100))[0, 0])
    0.0
    """
    n_det, n_gt = len(det), len(gt)
    crowd = np.zeros(n_gt, bool) if gt_is_crowd is None else np.asarray(gt_is_crowd, bool)
    size = np.full((1, 2), np.nan) if image_size is None else np.array([image_size], np.float64)
    d_masks = CollectionMasks.parse(values_source(det, "detection", size))
    g_masks = CollectionMasks.parse(values_source(gt, "annotation", size))
    det_rows = np.repeat(np.arange(n_det), n_gt)
    gt_rows = np.tile(np.arange(n_gt), n_det)
    iou = _pair_iou(
        d_masks,
        g_masks,
        det_rows,
        gt_rows,
        crowd[gt_rows],
        mask_iou=mask_iou,
        invalid_polygons=invalid_polygons,
        lowest=0.0,
        describe=lambda d, g: f"detection {d} and annotation {g}",
    )
    return iou.reshape(n_det, n_gt)
