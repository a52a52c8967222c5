"""Explaining a number: raw PR curves, precision/recall/F1 at a confidence, who matched whom.

Pure functions over an :class:`~deteval.evaluate.EvalResult`. A *lane* is one (area range, IoU
threshold) pair of the protocol; every function takes the IoU threshold and area by value
(the defaults: the threshold 0.5 if the protocol has it, else its first; the first area; the
largest ``max_dets``).
"""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult

__all__ = [
    "PRCurve",
    "pr_curve",
    "at_confidence",
    "matches",
    "MatchColumns",
    "match_columns",
    "OUTCOME_WORDS",
    "best_f1",
    "pr_auc",
]


def _lane(result: EvalResult, iou_threshold: float | None, area: str | None) -> tuple[int, int]:
    p = result.protocol
    thresholds = list(p.iou_thresholds)
    if iou_threshold is None:
        iou_threshold = 0.5 if 0.5 in thresholds else thresholds[0]
    if iou_threshold not in thresholds:
        raise ConfigError(
            f"iou_threshold {iou_threshold!r} is not one of the protocol's thresholds {thresholds}"
        )
    names = list(p.area_names)
    area = names[0] if area is None else area
    if area not in names:
        raise ConfigError(f"area {area!r} is not one of the protocol's area ranges {names}")
    a, t = names.index(area), thresholds.index(iou_threshold)
    return a * len(thresholds) + t, a


def _ranking_of(result: EvalResult) -> np.ndarray:
    from deteval.evaluate import ranking_order

    return ranking_order(result.table, result.protocol)


def _ranked_rows(
    result: EvalResult, class_index: int, max_dets: int | None, ranking: np.ndarray | None = None
) -> np.ndarray:
    """Detections of one class in the protocol's global ranking, within ``max_dets``."""
    table = result.table
    if ranking is None:
        ranking = _ranking_of(result)
    rows = ranking[table.det_class[ranking] == class_index]
    if max_dets is None and result.protocol.max_dets is not None:
        max_dets = max(result.protocol.max_dets)
    if max_dets is not None:
        rows = rows[table.det_rank[rows] < max_dets]
    return rows


def _class_index(result: EvalResult, category_id: int) -> int:
    if category_id not in result.category_ids:
        raise ConfigError(
            f"category_id {category_id!r} is not a category of the ground truth "
            f"{list(result.category_ids)[:20]}"
        )
    return result.category_ids.index(category_id)


@frozen
class PRCurve:
    """The raw (not interpolated) precision/recall curve of one class in one lane.

    Attributes
    ----------
    score, precision, recall : float64 (n_det,)
        After each ranked detection; ignored detections repeat the previous point. Precision
        is NaN until something is retrieved (chainercv's rule), recall NaN without ground truth.
    is_tp, is_ignored : bool (n_det,)
    n_positive : int
    """

    score: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    is_tp: np.ndarray
    is_ignored: np.ndarray
    n_positive: int


def pr_curve(
    result: EvalResult,
    category_id: int,
    *,
    iou_threshold: float | None = None,
    area: str | None = None,
    max_dets: int | None = None,
) -> PRCurve:
    """Precision and recall after each ranked detection of a class.

    Returns
    -------
    PRCurve
        ``precision = tp / (tp + fp)`` and ``recall = tp / n_positive`` after each detection
        (ignored detections count as neither); precision is NaN where nothing is retrieved
        yet (``tp + fp == 0``: only ignored detections so far), recall is NaN for a class
        without ground truth.

    Notes
    -----
    The undefined precision follows chainercv's ``calc_detection_voc_prec_rec``, whose
    documented rule is that an element of ``prec[l]`` is NaN where ``fp + tp`` is 0 (and
    :func:`at_confidence`: precision NaN when no detection is kept). It was 0 before.

    Examples
    --------
    >>> import deteval, warnings
    >>> with warnings.catch_warnings():  # the fixture's class 'bird' has no ground truth (a note)
    ...     warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
    ...     r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "voc2010")
    >>> curve = pr_curve(r, 1)
    >>> [round(float(p), 3) for p in curve.precision]
    [1.0, 1.0, 0.667, 0.5, 0.4, 0.5, 0.571, 0.5, 0.444, 0.5]
    """
    lane, a = _lane(result, iou_threshold, area)
    k = _class_index(result, category_id)
    rows = _ranked_rows(result, k, max_dets)
    table = result.table
    is_tp = table.lane_is_tp(lane)[rows]
    is_ignored = table.lane_is_ignored(lane)[rows]
    tp = np.cumsum(is_tp).astype(float)
    fp = np.cumsum(~is_tp & ~is_ignored).astype(float)
    n_positive = int(table.n_positive[k, a])
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), np.nan)
        recall = tp / n_positive if n_positive else np.full(len(tp), np.nan)
    return PRCurve(
        score=table.det_score[rows],
        precision=precision,
        recall=recall,
        is_tp=is_tp,
        is_ignored=is_ignored,
        n_positive=n_positive,
    )


def _prf(tp: int, fp: int, n_positive: int) -> tuple[float, float, float]:
    """Precision, recall and F1 = 2 tp / (2 tp + fp + fn); NaN only where nothing is counted."""
    fn = n_positive - tp
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / n_positive if n_positive else float("nan")
    f1 = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else float("nan")
    return precision, recall, f1


def at_confidence(
    result: EvalResult,
    threshold: float,
    *,
    iou_threshold: float | None = None,
    area: str | None = None,
    max_dets: int | None = None,
) -> list[dict]:
    """Per-class counts and precision/recall/F1 of the detections scoring >= ``threshold``.

    A ranked AP can look good while the detections a deployment keeps (those above a
    confidence) are poor; this shows the latter. Undefined values are NaN (no detection kept:
    precision; no ground truth: recall).

    Examples
    --------
    >>> import deteval, warnings
    >>> with warnings.catch_warnings():  # the fixture's class 'bird' has no ground truth (a note)
    ...     warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
    ...     r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "voc2010")
    >>> row = at_confidence(r, 0.7)[0]
    >>> row["name"], row["tp"], row["fp"], row["fn"], round(row["f1"], 4)
    ('person', 3, 3, 2, 0.5455)
    """
    lane, a = _lane(result, iou_threshold, area)
    table = result.table
    ranking = _ranking_of(result)  # once, not per class
    lane_tp, lane_ignored = table.lane_is_tp(lane), table.lane_is_ignored(lane)
    out = []
    for k, category_id in enumerate(result.category_ids):
        rows = _ranked_rows(result, k, max_dets, ranking)
        kept = rows[table.det_score[rows] >= threshold]
        tp = int(lane_tp[kept].sum())
        fp = int((~lane_tp[kept] & ~lane_ignored[kept]).sum())
        n_positive = int(table.n_positive[k, a])
        precision, recall, f1 = _prf(tp, fp, n_positive)
        out.append(
            {
                "category_id": category_id,
                "name": result.category_names[k],
                "tp": tp,
                "fp": fp,
                "fn": n_positive - tp,
                "precision": precision,
                "recall": recall,
                "f1": f1,
            }
        )
    return out


def best_f1(
    result: EvalResult,
    category_id: int,
    *,
    iou_threshold: float | None = None,
    area: str | None = None,
    max_dets: int | None = None,
) -> dict:
    """The confidence threshold that maximises F1 for a class (ties: the highest threshold).

    ``iou_threshold``, ``area`` and ``max_dets`` choose the lane as in :func:`pr_curve`.
    """
    curve = pr_curve(result, category_id, iou_threshold=iou_threshold, area=area, max_dets=max_dets)
    if not curve.n_positive or not len(curve.score):
        return {
            "threshold": float("nan"),
            "precision": float("nan"),
            "recall": float("nan"),
            "f1": float("nan"),
        }
    # Only the last detection of a run of equal scores is a reachable threshold.
    last_of_score = np.r_[curve.score[1:] != curve.score[:-1], True]
    p, r = curve.precision[last_of_score], curve.recall[last_of_score]
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    i = int(np.argmax(f1))
    return {
        "threshold": float(curve.score[last_of_score][i]),
        "precision": float(p[i]),
        "recall": float(r[i]),
        "f1": float(f1[i]),
    }


#: The words of :attr:`MatchColumns.outcome`'s codes.
OUTCOME_WORDS = ("tp", "ignored", "fp")


@frozen(eq=False)
class MatchColumns:
    """Every scored detection with its outcome, as columns (what :func:`matches` lists as rows).

    Attributes
    ----------
    detection : int64 (n_det,)
        The record's index in the detections input, increasing (input order).
    image_row, class_index : int64 (n_det,)
        Rows of the result's ``image_ids`` and ``category_ids`` / ``category_names``.
    score : float64 (n_det,)
    outcome : int8 (n_det,)
        Index into :data:`OUTCOME_WORDS`: 0 tp, 1 ignored, 2 fp.
    gt_row : int64 (n_det,)
        Row of the result's ``annotation_ids`` the detection matched; meaningful where
        ``has_gt`` (a match to an ignored GT -- crowd, difficult, out of the area range -- counts).
    has_gt : bool (n_det,)
    """

    detection: np.ndarray
    image_row: np.ndarray
    class_index: np.ndarray
    score: np.ndarray
    outcome: np.ndarray
    gt_row: np.ndarray
    has_gt: np.ndarray


def match_columns(
    result: EvalResult, *, iou_threshold: float | None = None, area: str | None = None
) -> MatchColumns:
    """:func:`matches` as columns, with no Python object per detection.

    ``iou_threshold`` and ``area`` choose the lane as in :func:`pr_curve` (default: IoU 0.5 when
    the protocol has it, else its first threshold; the first area range).

    Examples
    --------
    >>> import deteval
    >>> gt = {"images": [{"id": 7}], "categories": [{"id": 3, "name": "cat"}],
    ...       "annotations": [{"id": 9, "image_id": 7, "category_id": 3, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 7, "category_id": 3, "bbox": [0, 0, 10, 10], "score": 0.5},
    ...       {"image_id": 7, "category_id": 3, "bbox": [50, 50, 10, 10], "score": 0.9}]
    >>> c = match_columns(deteval.evaluate(gt, dt, "voc2010"))
    >>> c.detection.tolist(), [OUTCOME_WORDS[o] for o in c.outcome], c.has_gt.tolist()
    ([0, 1], ['tp', 'fp'], [True, False])
    """
    lane, _ = _lane(result, iou_threshold, area)
    if result.image_ids is None or result.annotation_ids is None:
        raise ConfigError(
            "matches: result: expected the image and annotation ids of its ground truth (as "
            "deteval.evaluate sets them), found a result without them"
        )
    table = result.table
    gt_of = np.full(len(table.det_score), -1, dtype=np.int64)
    in_lane = table.match_lane == lane
    gt_of[table.match_det[in_lane]] = table.match_gt[in_lane]
    order = np.argsort(table.det_order, kind="stable")
    outcome = np.where(table.lane_is_tp(lane)[order], 0, np.where(table.lane_is_ignored(lane)[order], 1, 2))
    gt_row = gt_of[order]
    return MatchColumns(
        detection=table.det_order[order].astype(np.int64, copy=False),
        image_row=table.det_image[order].astype(np.int64, copy=False),
        class_index=table.det_class[order].astype(np.int64, copy=False),
        score=table.det_score[order].astype(np.float64, copy=False),
        outcome=outcome.astype(np.int8),
        gt_row=gt_row,
        has_gt=gt_row >= 0,
    )


def matches(result: EvalResult, *, iou_threshold: float | None = None, area: str | None = None) -> list[dict]:
    """Every scored detection with its outcome and the ground truth it matched.

    Returns
    -------
    list of dict
        ``{detection, image_id, category_id, score, outcome, gt_annotation_id}`` in input order;
        ``detection`` is the record's index in the detections input, ``outcome`` one of
        ``tp``, ``fp``, ``ignored``; ``gt_annotation_id`` is None when nothing matched (a match to
        an ignored GT -- crowd, difficult, out of the area range -- is named too).
        :func:`match_columns` gives the same as columns.
    """
    return match_rows(result, match_columns(result, iou_threshold=iou_threshold, area=area))


def match_rows(result: EvalResult, c: MatchColumns) -> list[dict]:
    """The rows of :func:`matches` from its columns (``c``, of ``result``)."""
    annotation = np.full(len(c.gt_row), -1, dtype=np.int64)
    annotation[c.has_gt] = np.asarray(result.annotation_ids)[c.gt_row[c.has_gt]]
    columns = zip(
        c.detection.tolist(),
        np.asarray(result.image_ids)[c.image_row].tolist(),
        np.asarray(result.category_ids)[c.class_index].tolist(),
        c.score.tolist(),
        c.outcome.tolist(),
        c.has_gt.tolist(),
        annotation.tolist(),
        strict=True,
    )
    return [
        {
            "detection": d,
            "image_id": i,
            "category_id": k,
            "score": s,
            "outcome": OUTCOME_WORDS[o],
            "gt_annotation_id": a if has_gt else None,
        }
        for d, i, k, s, o, has_gt, a in columns
    ]


def _flattened_auc(recall_thr: np.ndarray, step: np.ndarray, precision: np.ndarray) -> float:
    """faster-coco-eval's ``calc_auc`` of one flattened precision list (see :func:`pr_auc`)."""
    flat = np.asarray(precision, dtype=np.longdouble)
    envelope = np.maximum.accumulate(flat[::-1])[::-1]
    terms = np.where(step != 0, step * envelope[1 : len(recall_thr)], 0)
    return round(float(np.cumsum(terms)[-1]) if len(terms) else 0.0, 15)


def pr_auc(result: EvalResult) -> dict:
    """Area under the interpolated precision/recall curve per class and area range; their mean.

    faster-coco-eval's ``mAUC`` (``COCOeval_faster.compute_mAUC`` and its C++ ``calc_auc``,
    ``MiXaiLL76/faster_coco_eval``, ``faster_coco_eval/core/faster_eval_api.py`` and
    ``csrc/faster_eval_api/coco_eval/cocoeval.cpp``, commit 33ab609), reproduced with its quirks:

    * the curve is the first IoU threshold's, of each class and area range, and its precision
      list is that (recall, max_dets) block flattened (``precision[0, :, k, a, :].ravel()``,
      ``n_recall_thr * n_max_dets`` values, recall major), made non-increasing from the right;
    * the area is ``sum_i (r_i - r_{i-1}) * p_i`` over ``i = 1 .. n_recall_thr - 1`` with ``r``
      the recall thresholds and ``p_i`` the ``i``-th value of that flattened list (so with
      several ``max_dets`` the list's ``i``-th value is not recall ``r_i``'s), in long double,
      rounded to 15 decimals;
    * a (class, area) without ground truth (pycocotools' precision -1) has area -1 and is left
      out of ``mAUC``, the plain mean of the others (0 when there is none).

    A protocol whose AP is not read off a grid of recall thresholds (``ap_method`` ``all_point``,
    ``trapezoid_101``: no such precision array) has no mAUC: every value NaN.

    Returns
    -------
    dict
        ``iou_threshold``; ``auc``: float64 (n_class, n_area), NaN without ground truth;
        ``mAUC``: float.

    Examples
    --------
    >>> import deteval
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> r = deteval.evaluate(gt, [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 1}], "coco")
    >>> pr_auc(r)["mAUC"]  # all four COCO area ranges: 'all' and 'small' 1.0, the others absent
    1.0
    """
    from deteval.accumulate import recall_thresholds

    recall_thr = np.asarray(recall_thresholds(result.protocol), dtype=np.longdouble)
    step = recall_thr[1:] - recall_thr[:-1]  # long double, as the C++ reference
    precision = np.nan_to_num(result.precision[0], nan=-1.0)  # (R, K, A, M), pycocotools' -1
    n_class, n_area = precision.shape[1], precision.shape[2]
    auc = np.full((n_class, n_area), np.nan)
    if precision.shape[0] < 2:  # no recall grid to integrate over
        return {"iou_threshold": float(result.protocol.iou_thresholds[0]), "auc": auc, "mAUC": float("nan")}
    kept = []
    for k in range(n_class):
        for a in range(n_area):
            value = _flattened_auc(recall_thr, step, precision[:, k, a, :].ravel())
            if value != -1:
                auc[k, a] = value
                kept.append(value)
    return {
        "iou_threshold": float(result.protocol.iou_thresholds[0]),
        "auc": auc,
        "mAUC": sum(kept) / len(kept) if kept else 0.0,
    }
