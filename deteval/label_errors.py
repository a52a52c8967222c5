"""Label-error candidates: where the ground truth, rather than the detector, may be wrong.

:func:`label_errors` lists four kinds of candidates, each with its evidence (image, ids, boxes,
scores, IoU), for a person to look at; nothing here changes a score (the result and the values
are only read).

``wrong_class``
    A confident detection (score >= ``confidence``) that is a false positive at the chosen IoU
    threshold and whose best overlap is a ground truth of *another* class with IoU >=
    ``wrong_class_iou``: the object may carry the wrong label.
``missing_annotation``
    A confident false positive whose best overlap with any ground truth of its image (any class)
    is below ``background_iou`` (or whose image has none): an object nobody annotated?
``unfound``
    A counted ground truth that no detection matched at the chosen threshold, with the largest
    box IoU any detection of its image reaches (any class, any score) and which detection (none
    named when it is 0; ``best_iou`` is null when the image has no detection): a
    ground truth no detection comes near may be a box around nothing.
``duplicate``
    Two ground truths of the same image and class whose boxes overlap with IoU >=
    ``duplicate_iou``: one object annotated twice?

The detections' overlaps are :func:`deteval.per_image.explained_matches`' (the protocol's IoU:
boxes, masks or keypoints); the ``unfound`` and ``duplicate`` overlaps are box IoUs (continuous,
pycocotools' ``bbIou``), whatever the protocol.
"""

from __future__ import annotations

import math

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult
from deteval.geometry.boxes import pair_box_iou
from deteval.grouping import candidate_pairs, group_rows
from deteval.per_image import explained_matches

__all__ = ["LabelErrors", "label_errors", "LABEL_ERROR_KINDS", "DEFAULT_THRESHOLDS"]

#: The kinds of candidates, in the order they are listed.
LABEL_ERROR_KINDS = ("wrong_class", "missing_annotation", "unfound", "duplicate")
#: The default thresholds (documented in docs/label-errors.md).
DEFAULT_THRESHOLDS = {
    "confidence": 0.5,
    "wrong_class_iou": 0.7,
    "background_iou": 0.1,
    "duplicate_iou": 0.9,
}


@frozen
class LabelErrors:
    """The candidates :func:`label_errors` found.

    Attributes
    ----------
    iou_threshold : float
        The threshold a detection is a false positive and a ground truth missed at.
    thresholds : dict
        ``confidence``, ``wrong_class_iou``, ``background_iou``, ``duplicate_iou``.
    candidates : tuple of dict
        One dict per candidate (keys: ``kind``, ``image_id``, ``file_name`` and the evidence
        of its kind), :data:`LABEL_ERROR_KINDS` order, then by score (descending), IoU or file
        order.
    """

    iou_threshold: float
    thresholds: dict
    candidates: tuple

    def counts(self) -> dict:
        """Kind -> number of candidates (every kind, 0 included)."""
        out = dict.fromkeys(LABEL_ERROR_KINDS, 0)
        for c in self.candidates:
            out[c["kind"]] += 1
        return out

    def to_dict(self) -> dict:
        """The ``label_errors`` entry of the JSON document."""
        return {
            "iou_threshold": self.iou_threshold,
            "thresholds": dict(self.thresholds),
            "counts": self.counts(),
            "candidates": [dict(c) for c in self.candidates],
        }


def _num(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def _box(row: np.ndarray) -> list:
    return [float(v) for v in row]


def label_errors(
    result: EvalResult,
    gt: GroundTruth,
    dt: Detections,
    *,
    iou_threshold: float | None = None,
    confidence: float = DEFAULT_THRESHOLDS["confidence"],
    wrong_class_iou: float = DEFAULT_THRESHOLDS["wrong_class_iou"],
    background_iou: float = DEFAULT_THRESHOLDS["background_iou"],
    duplicate_iou: float = DEFAULT_THRESHOLDS["duplicate_iou"],
) -> LabelErrors:
    """Ground truth that may be wrong, with the evidence (module docstring for the kinds).

    Parameters
    ----------
    result : EvalResult
    gt, dt : GroundTruth, Detections
        The values ``result`` was scored from (refused otherwise). Only read: the score is
        the same before and after.
    iou_threshold : float, optional
        One of the protocol's thresholds (default 0.5 if it has it, else its first).
    confidence : float
        Detections scoring >= it are *confident* (``wrong_class``, ``missing_annotation``).
    wrong_class_iou : float
        Overlap with a ground truth of another class from which a confident false positive is a
        ``wrong_class`` candidate.
    background_iou : float
        A confident false positive overlapping every ground truth of its image less than this is
        a ``missing_annotation`` candidate.
    duplicate_iou : float
        Two ground truths of the same image and class at least this IoU apart are a ``duplicate``.

    Returns
    -------
    LabelErrors

    Raises
    ------
    ConfigError
        An IoU threshold outside [0, 1], or values the result was not scored from.

    Examples
    --------
    >>> import deteval
    >>> from deteval.io import load_detections, load_ground_truth
    >>> gt = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"},
    ...     {"id": 2, "name": "dog"}], "annotations": [
    ...     {"id": 7, "image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
    ...     {"id": 8, "image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> dt = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": .9}], gt)
    >>> found = label_errors(deteval.evaluate(gt, dt, "coco"), gt, dt)
    >>> [(c["kind"], c.get("gt_annotation_id"), c.get("iou"), c.get("best_iou")) for c in found.candidates]
    [('wrong_class', 7, 1.0, None), ('unfound', 7, None, 1.0), ('unfound', 8, None, 0.0)]
    """
    for name, value in (
        ("wrong_class_iou", wrong_class_iou),
        ("background_iou", background_iou),
        ("duplicate_iou", duplicate_iou),
    ):
        if not (isinstance(value, (int, float)) and 0 <= value <= 1):
            raise ConfigError(f"label_errors: {name}: expected a number in [0, 1], found {value!r}")
    if not (isinstance(confidence, (int, float)) and math.isfinite(confidence)):
        raise ConfigError(f"label_errors: confidence: expected a finite number, found {confidence!r}")
    m = explained_matches(result, gt, dt, iou_threshold=iou_threshold)
    c = m.columns
    image_ids = np.asarray(gt.image_id).tolist()
    names = result.category_names
    gt_names = gt.category_name
    annotation_ids = np.asarray(gt.annotation_id).tolist()
    gt_xywh = boxes_as(gt.box, gt.box_format, "xywh").astype(np.float64)

    def where(image_row: int) -> dict:
        name = gt.image_name[image_row] if image_row < len(gt.image_name) else ""
        return {"image_id": image_ids[image_row], "file_name": name}

    is_confident_fp = (c.outcome == 2) & (c.score >= confidence)
    wrong, background = [], []
    for j in np.flatnonzero(is_confident_fp).tolist():
        best_row = int(m.best_gt_row[j])
        best = m.best_iou[j]
        det = {
            "detection": int(c.detection[j]),
            "category": names[int(c.class_index[j])],
            "score": float(c.score[j]),
            "box": _box(m.box[j]),
        }
        if best_row >= 0 and best >= wrong_class_iou and int(gt.category[best_row]) != int(c.class_index[j]):
            wrong.append(
                {
                    "kind": "wrong_class",
                    **where(int(c.image_row[j])),
                    **det,
                    "gt_annotation_id": annotation_ids[best_row],
                    "gt_category": gt_names[int(gt.category[best_row])],
                    "gt_box": _box(gt_xywh[best_row]),
                    "iou": float(best),
                }
            )
        elif math.isnan(best) or best < background_iou:
            background.append(
                {
                    "kind": "missing_annotation",
                    **where(int(c.image_row[j])),
                    **det,
                    "best_iou": _num(best),
                    "best_gt": annotation_ids[best_row] if best_row >= 0 else None,
                }
            )
    wrong.sort(key=lambda d: -d["score"])
    background.sort(key=lambda d: -d["score"])
    unfound = _unfound(gt, dt, m.missed_gt_row, gt_xywh, annotation_ids, names, where)
    duplicates = _duplicates(gt, gt_xywh, duplicate_iou, annotation_ids, gt_names, where)
    return LabelErrors(
        iou_threshold=m.iou_threshold,
        thresholds={
            "confidence": float(confidence),
            "wrong_class_iou": float(wrong_class_iou),
            "background_iou": float(background_iou),
            "duplicate_iou": float(duplicate_iou),
        },
        candidates=tuple(wrong + background + unfound + duplicates),
    )


def _unfound(gt, dt, missed, gt_xywh, annotation_ids, names, where) -> list:
    """Missed ground truth with the best box IoU of any detection of its image."""
    best = np.full(len(missed), np.nan)
    best_det = np.full(len(missed), -1, dtype=np.int64)
    if len(missed) and len(dt.score):
        det_groups = group_rows(dt.image.astype(np.int64))  # stable: input order within an image
        pair_gt, sorted_det = candidate_pairs(gt.image[missed].astype(np.int64), det_groups)
        if len(pair_gt):
            pair_det = det_groups.order[sorted_det]
            dt_xywh = boxes_as(dt.box, dt.box_format, "xywh").astype(np.float64)
            values = pair_box_iou(
                dt_xywh,
                gt_xywh,
                np.zeros(len(pair_gt), dtype=bool),
                det_rows=pair_det,
                gt_rows=missed[pair_gt],
            )
            by = np.lexsort((pair_det, -values, pair_gt))  # largest IoU first, then input order
            first = by[np.r_[True, pair_gt[by][1:] != pair_gt[by][:-1]]]
            best[pair_gt[first]] = values[first]
            overlaps = first[values[first] > 0]  # no overlap names no detection
            best_det[pair_gt[overlaps]] = pair_det[overlaps]
    out = []
    for j, g in enumerate(missed.tolist()):
        d = int(best_det[j])
        out.append(
            {
                "kind": "unfound",
                **where(int(gt.image[g])),
                "gt_annotation_id": annotation_ids[g],
                "category": gt.category_name[int(gt.category[g])],
                "box": _box(gt_xywh[g]),
                "best_iou": _num(best[j]),
                "best_detection": int(dt.order[d]) if d >= 0 else None,
                "best_detection_category": names[int(dt.category[d])] if d >= 0 else None,
                "best_detection_score": float(dt.score[d]) if d >= 0 else None,
            }
        )
    return out


def _duplicates(gt, gt_xywh, threshold, annotation_ids, gt_names, where) -> list:
    """Pairs of ground truth of one image and class whose boxes overlap >= ``threshold``."""
    n_class = max(1, len(gt.category_name))
    key = gt.image.astype(np.int64) * n_class + gt.category.astype(np.int64)
    groups = group_rows(key)
    first, sorted_other = candidate_pairs(key, groups)
    other = groups.order[sorted_other]
    keep = first < other  # each unordered pair once
    first, other = first[keep], other[keep]
    if len(first) == 0:
        return []
    values = pair_box_iou(gt_xywh, gt_xywh, np.zeros(len(first), dtype=bool), det_rows=first, gt_rows=other)
    hit = np.flatnonzero(values >= threshold)
    hit = hit[np.lexsort((other[hit], first[hit], -values[hit]))]
    return [
        {
            "kind": "duplicate",
            **where(int(gt.image[first[k]])),
            "gt_annotation_id": annotation_ids[first[k]],
            "other_annotation_id": annotation_ids[other[k]],
            "category": gt_names[int(gt.category[first[k]])],
            "box": _box(gt_xywh[first[k]]),
            "other_box": _box(gt_xywh[other[k]]),
            "iou": float(values[k]),
        }
        for k in hit.tolist()
    ]
