"""Confusion matrix of a detector at one IoU threshold and one confidence.

Rows are the true classes then ``background`` (detections that found no object); columns are
the predicted classes then ``background`` (objects that no detection found).

The rule, in full:

1. Detections with ``score >= confidence`` take part (no ``max_dets`` cap).
2. Eligible pairs: a detection and a counted ground truth (not ignored by the protocol) of the
   same image, *any* class, with IoU ``>= t`` (``> t`` under a protocol with
   ``iou_comparison: ">"``), in the protocol's box convention.
3. Pairs are taken greedily, best first: IoU descending, then score descending, then
   detection file order, then ground-truth file order; a pair is taken when neither its
   detection nor its ground truth is taken yet. Each taken pair adds 1 at (true class,
   predicted class). IoU first (not "same class first") so that the matrix shows what each
   detection actually covers: a box sitting on a dog counts as a dog, whatever it was called.
4. A counted ground truth left over adds 1 at (its class, background).
5. A detection left over is dropped if it overlaps an *ignored* ground truth of its own class
   at the threshold (a crowd region, by intersection over the detection's area; a difficult
   object under VOC presets): the protocol neither rewards nor punishes it. Otherwise it adds 1
   at (background, its class).

Invariants: a class row sums to the class's counted ground truths; a class column sums to the
class's detections at or above the confidence that were not dropped; (background, background)
is 0.
"""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.decomposition import ImagePairs
from deteval.errors import ConfigError
from deteval.evaluate import ground_truth_flags
from deteval.geometry import pair_box_iou
from deteval.grouping import candidate_pairs, group_rows, lexsort
from deteval.pooling import pooled_for
from deteval.protocol import Protocol, resolve_protocol

__all__ = ["ConfusionMatrix", "confusion_matrix", "greedy_pairs"]


@frozen(eq=False)
class ConfusionMatrix:
    """Counts (n_class + 1, n_class + 1): row = true class, column = predicted class.

    Attributes
    ----------
    matrix : int64 (n_class + 1, n_class + 1)
        The last row and column are ``background``.
    labels : tuple of str
        Class names in category-id order, then ``"background"``.
    category_ids : tuple of int
    iou_threshold, confidence : float
    n_dropped : int
        Detections dropped on ignored ground truth (rule 5).
    """

    matrix: np.ndarray
    labels: tuple
    category_ids: tuple
    iou_threshold: float
    confidence: float
    n_dropped: int

    def to_dict(self) -> dict:
        """The ``"confusion"`` piece of ``deteval analyze --output``."""
        return {
            "iou_threshold": self.iou_threshold,
            "confidence": self.confidence,
            "labels": list(self.labels),
            "matrix": self.matrix.tolist(),
        }


def greedy_pairs(pair_det: np.ndarray, pair_gt: np.ndarray, n_det: int, n_gt: int) -> np.ndarray:
    """Indices of the pairs a greedy one-to-one assignment takes, pairs given best first.

    Sequential rule: walk the pairs in order, take one when neither end is taken. Computed in
    rounds: a pair that is the best remaining one of both its detection and its ground truth is
    taken by the sequential rule too, and the best remaining pair overall always qualifies.

    Examples
    --------
    >>> greedy_pairs(np.array([0, 1, 1]), np.array([0, 0, 1]), 2, 2).tolist()
    [0, 2]
    """
    n = len(pair_det)
    position = np.arange(n)
    alive = np.ones(n, dtype=bool)
    is_det_taken = np.zeros(n_det, dtype=bool)
    is_gt_taken = np.zeros(n_gt, dtype=bool)
    taken = []
    while alive.any():
        idx = np.flatnonzero(alive)
        det_best = np.full(n_det, n)
        gt_best = np.full(n_gt, n)
        np.minimum.at(det_best, pair_det[idx], position[idx])
        np.minimum.at(gt_best, pair_gt[idx], position[idx])
        chosen = idx[(det_best[pair_det[idx]] == idx) & (gt_best[pair_gt[idx]] == idx)]
        taken.append(chosen)
        is_det_taken[pair_det[chosen]] = True
        is_gt_taken[pair_gt[chosen]] = True
        alive[idx] = ~is_det_taken[pair_det[idx]] & ~is_gt_taken[pair_gt[idx]]
    return np.sort(np.concatenate(taken)) if taken else np.zeros(0, dtype=np.int64)


def confusion_matrix(
    gt: GroundTruth,
    dt: Detections,
    protocol: str | Protocol = "coco",
    *,
    iou_threshold: float = 0.5,
    confidence: float = 0.0,
    pairs: ImagePairs | None = None,
) -> ConfusionMatrix:
    """The confusion matrix (module docstring: the rule) at ``iou_threshold`` and ``confidence``.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : str or Protocol
        Its ignored ground truth (first area range), crowd rule, box convention and IoU
        comparison apply; its matching does not.
    iou_threshold : float
    confidence : float
    pairs : ImagePairs, optional
        :func:`deteval.decomposition.image_pairs` of ``gt`` and ``dt`` in the protocol's box
        convention, to reuse their IoUs (the same numbers); computed here when not given.

    Returns
    -------
    ConfusionMatrix

    Raises
    ------
    ConfigError
        ``iou_type="segm"`` (boxes only for now) or a threshold outside [0, 1].

    Examples
    --------
    >>> from deteval.io import load_detections, load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> d = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": .9}], g)
    >>> confusion_matrix(g, d).matrix.tolist()
    [[0, 0, 0], [1, 0, 0], [0, 0, 0]]
    """
    protocol = resolve_protocol(protocol)
    if protocol.iou_type != "bbox":
        raise ConfigError(
            f"confusion_matrix: iou_type {protocol.iou_type!r} is not available; use iou_type 'bbox'"
        )
    if not (0.0 <= iou_threshold <= 1.0):
        raise ConfigError(f"confusion_matrix: iou_threshold must be in [0, 1], found {iou_threshold!r}")
    pooled_gt, dt = pooled_for(gt, dt, protocol)  # class_agnostic: one class
    if pooled_gt is not gt:
        gt, pairs = pooled_gt, None  # pairs of the unpooled values: ground-truth rows moved
    n_class = gt.n_classes
    is_ignored_all, is_reusable, _ = ground_truth_flags(gt, protocol)
    is_ignored = is_ignored_all[0]
    strict = protocol.iou_comparison == ">"
    native = "xywh" if protocol.box_convention == "continuous" else "xyxy"
    det_box = boxes_as(dt.box, dt.box_format, native)
    gt_box = boxes_as(gt.box, gt.box_format, native)
    kept = np.flatnonzero(dt.score >= confidence)

    def passes(iou: np.ndarray) -> np.ndarray:
        return iou > iou_threshold if strict else iou >= iou_threshold

    def pairs_with(gt_subset: np.ndarray, key_gt: np.ndarray, key_det: np.ndarray, crowd: bool):
        groups = group_rows(key_gt)
        rows = gt_subset[groups.order]
        p_det, p_gt = candidate_pairs(key_det, groups)
        iou = pair_box_iou(
            det_box[kept[p_det]],
            gt_box[rows[p_gt]],
            is_reusable[rows[p_gt]] if crowd else np.zeros(len(p_det), bool),
            box_format=native,
            convention=protocol.box_convention,
        )
        ok = passes(iou)
        return p_det[ok], rows[p_gt[ok]], iou[ok]

    counted = np.flatnonzero(~is_ignored)
    if pairs is not None and pairs.convention == protocol.box_convention:
        p_det, p_gt, p_iou = pairs.select(kept, ~is_ignored)
        ok = passes(p_iou)
        p_det, p_gt, p_iou = p_det[ok], p_gt[ok], p_iou[ok]
    else:
        p_det, p_gt, p_iou = pairs_with(
            counted, gt.image[counted].astype(np.int64), dt.image[kept].astype(np.int64), crowd=False
        )
    order = lexsort((p_gt, dt.order[kept[p_det]], -dt.score[kept[p_det]], -p_iou))
    p_det, p_gt = p_det[order], p_gt[order]
    chosen = greedy_pairs(p_det, p_gt, len(kept), len(gt))
    matrix = np.zeros((n_class + 1, n_class + 1), dtype=np.int64)
    np.add.at(matrix, (gt.category[p_gt[chosen]], dt.category[kept[p_det[chosen]]]), 1)
    is_gt_found = np.zeros(len(gt), dtype=bool)
    is_gt_found[p_gt[chosen]] = True
    missed = counted[~is_gt_found[counted]]
    matrix[:n_class, n_class] = np.bincount(gt.category[missed], minlength=n_class)
    is_det_matched = np.zeros(len(kept), dtype=bool)
    is_det_matched[p_det[chosen]] = True
    # Rule 5: leftovers on an ignored GT of their own class are dropped.
    ignored = np.flatnonzero(is_ignored)
    is_dropped = np.zeros(len(kept), dtype=bool)
    if len(ignored):

        def key(image: np.ndarray, category: np.ndarray) -> np.ndarray:
            return image.astype(np.int64) * n_class + category

        i_det, _, _ = pairs_with(
            ignored,
            key(gt.image[ignored], gt.category[ignored]),
            key(dt.image[kept], dt.category[kept]),
            crowd=True,
        )
        is_dropped[i_det] = True
    is_dropped &= ~is_det_matched
    false_alarm = kept[~is_det_matched & ~is_dropped]
    matrix[n_class, :n_class] = np.bincount(dt.category[false_alarm], minlength=n_class)
    return ConfusionMatrix(
        matrix=matrix,
        labels=tuple(gt.category_name) + ("background",),
        category_ids=tuple(int(c) for c in gt.category_id),
        iou_threshold=float(iou_threshold),
        confidence=float(confidence),
        n_dropped=int(is_dropped.sum()),
    )
