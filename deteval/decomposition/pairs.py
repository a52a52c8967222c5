"""The same-image box IoUs analyze shares between its parts (:func:`image_pairs`), and each detection's largest IoU."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from deteval import _speedups
from deteval._values import frozen
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.geometry import PreparedMasks, pair_box_iou
from deteval.grouping import candidate_pairs, group_rows


@frozen(eq=False)
class ImagePairs:
    """Every (detection, ground truth) pair of one image, any class, with its box IoU.

    Computed once by :func:`image_pairs` and shared by the parts of
    :func:`deteval.diagnose.analyze` (TIDE's error classes, the decomposition's largest IoU, the
    confusion matrix), which each select the pairs they need: the IoU of a pair does not depend
    on which other pairs are computed, so the numbers are those of computing them separately.

    Attributes
    ----------
    pair_det, pair_gt : int64 (n_pair,)
        Detection and ground-truth rows; detection-major in row order, then ground truths in
        file order.
    iou : float64 (n_pair,)
        Plain box IoU (no crowd rule) in ``convention``.
    convention : {"continuous", "pixel_inclusive"}
    n_det, n_gt : int
    run_start : int64 (n_det + 1,)
        Where each detection's pairs start (computed on first use); the last entry is ``n_pair``.
    """

    pair_det: np.ndarray
    pair_gt: np.ndarray
    iou: np.ndarray
    convention: str
    n_det: int
    n_gt: int

    def select(self, det_rows: np.ndarray, is_gt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pairs of the detections ``det_rows`` (distinct rows) with the ground truths where ``is_gt``.

        Returns
        -------
        pair_det : int64
            Position in ``det_rows``, in that order (detection-major).
        pair_gt : int64
            Ground-truth row, in file order within a detection.
        iou : float64
        """
        index, at = run_index(self.run_start, det_rows, self.pair_gt, is_gt)
        return at, self.pair_gt[index], self.iou[index]

    @cached_property
    def run_start(self) -> np.ndarray:
        """Where each detection's run of pairs starts (``n_det + 1`` entries, the last the end)."""
        return np.searchsorted(self.pair_det, np.arange(self.n_det + 1))


def run_index(
    run_start: np.ndarray, rows: np.ndarray, pair_gt: np.ndarray, gt_mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of the runs ``rows`` in turn whose ground truth is in ``gt_mask``, without a sort.

    ``run_start``: where each run starts (one more entry than runs, the last the end);
    ``pair_gt``: each pair's ground-truth row. Returns (pair index, position in ``rows``).

    Examples
    --------
    >>> gt = np.array([0, 1, 0, 1, 1])
    >>> [a.tolist() for a in run_index(np.array([0, 2, 2, 5]), np.array([2, 0]), gt, np.array([True, True]))]
    [[2, 3, 4, 0, 1], [0, 0, 0, 1, 1]]
    >>> [a.tolist() for a in run_index(np.array([0, 2, 2, 5]), np.array([2, 0]), gt, np.array([True, False]))]
    [[2, 0], [0, 1]]
    """
    rows = np.asarray(rows, dtype=np.int64)
    start = run_start[rows]
    length = run_start[rows + 1] - start
    offset = np.cumsum(length) - length
    index = np.arange(int(length.sum()), dtype=np.int64) + np.repeat(start - offset, length)
    at = np.repeat(np.arange(len(rows), dtype=np.int64), length)
    is_kept = gt_mask[pair_gt[index]]
    if not is_kept.all():
        index, at = index[is_kept], at[is_kept]
    return index, at


def segment_first_max(values: np.ndarray, seg_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per segment (starting at ``seg_start``): the max of ``values`` and the index of its first occurrence.

    ``np.argmax`` semantics within each segment, by ``maximum.reduceat`` and the first position
    equal to it (a segment with a NaN: NaN and its first NaN, as ``np.argmax``).

    Examples
    --------
    >>> [a.tolist() for a in segment_first_max(np.array([0.2, 0.5, 0.5, 0.0, 0.0]), np.array([0, 3]))]
    [[0.5, 0.0], [1, 3]]
    """
    n = len(values)
    best = np.maximum.reduceat(values, seg_start)
    seg_of = np.repeat(np.arange(len(seg_start)), np.diff(np.append(seg_start, n)))
    at_best = (values == best[seg_of]) | (np.isnan(values) & np.isnan(best[seg_of]))  # NaN: the first NaN
    first = np.minimum.reduceat(np.where(at_best, np.arange(n), n), seg_start)
    return best, first


def image_pairs(
    gt: GroundTruth, dt: Detections, *, convention: str = "continuous", boxes: tuple | None = None
) -> ImagePairs:
    """Every same-image (detection, ground truth) pair and its box IoU (see :class:`ImagePairs`).

    ``boxes``: ``(gt_box, det_box, box_format)`` to measure instead of ``gt.box`` / ``dt.box``
    (the masks' tight boxes, :func:`mask_boxes`).

    Examples
    --------
    >>> from deteval.io import load_detections, load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> d = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 5], "score": .9}], g)
    >>> image_pairs(g, d).iou.tolist()
    [0.5]
    """
    gt_groups = group_rows(gt.image.astype(np.int64))  # stable: file order in an image
    pair_det, sorted_gt = candidate_pairs(dt.image.astype(np.int64), gt_groups)
    pair_gt = gt_groups.order[sorted_gt]
    native = "xywh" if convention == "continuous" else "xyxy"
    gt_box, det_box, box_format = boxes or (gt.box, dt.box, None)
    iou = pair_box_iou(
        boxes_as(det_box, box_format or dt.box_format, native),
        boxes_as(gt_box, box_format or gt.box_format, native),
        np.zeros(len(pair_det), bool),
        box_format=native,
        convention=convention,
        det_rows=pair_det,
        gt_rows=pair_gt,
    )
    return ImagePairs(pair_det, pair_gt, iou, convention, len(dt), len(gt))


def mask_boxes(masks: PreparedMasks) -> tuple[np.ndarray, np.ndarray]:
    """The tight boxes (xyxy) of the ground-truth and detection masks; empty masks: a zero box.

    The extent of each mask as parsed: a polygon's vertices' bounds, an RLE's
    ``pycocotools.mask.toBbox``.
    """
    return (
        np.nan_to_num(masks.gt_masks.masks.bounds, nan=0.0),
        np.nan_to_num(masks.det_masks.masks.bounds, nan=0.0),
    )


def _first_max(pairs: ImagePairs, rows: np.ndarray, gt_mask: np.ndarray) -> np.ndarray:
    """Per detection of ``rows``: the index (into ``pairs``) of its first largest IoU, -1 if none.

    Among the detection's pairs with a ground truth in ``gt_mask``, in pair order (file order of
    the ground truths). The compiled kernel ``deteval._canalyze`` runs it when built;
    :func:`_first_max_numpy` is its bit-for-bit twin (and takes NaN IoUs, which the kernel does
    not order as numpy does).
    """
    return _speedups.dispatch("_canalyze.run_first_max", pairs, rows, gt_mask)


def _first_max_kernel(
    pairs: ImagePairs, rows: np.ndarray, gt_mask: np.ndarray
) -> np.ndarray | _speedups.Decline:
    """:func:`_first_max` by the compiled kernel; NaN IoUs are declined (the twin orders them)."""
    if np.isnan(pairs.iou).any():
        return _speedups.Decline("NaN IoU")
    out = np.empty(len(rows), dtype=np.int64)
    _speedups.module_of("_canalyze.run_first_max").run_first_max(  # type: ignore[union-attr]
        pairs.run_start,
        pairs.pair_gt,
        pairs.iou,
        np.ascontiguousarray(rows, dtype=np.int64),
        np.ascontiguousarray(gt_mask, dtype=bool),
        out,
    )
    return out


def _first_max_numpy(pairs: ImagePairs, rows: np.ndarray, gt_mask: np.ndarray) -> np.ndarray:
    """The numpy twin of :func:`_first_max` (``maximum.reduceat``, then the first position equal)."""
    index, at = run_index(pairs.run_start, rows, pairs.pair_gt, gt_mask)
    out = np.full(len(rows), -1, dtype=np.int64)
    if len(index) == 0:
        return out
    start = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
    out[at[start]] = index[segment_first_max(pairs.iou[index], start)[1]]
    return out


_speedups.register(
    "_canalyze.run_first_max", "deteval._canalyze", _first_max_kernel, _first_max_numpy, declines=("NaN IoU",)
)
