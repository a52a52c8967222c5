"""Operating points: the confidence that maximises F1, per class and overall.

A ranked AP summarises every confidence at once; a deployment keeps the detections scoring at
least one confidence. :func:`best_f1_points` finds, in the protocol's default lane (IoU 0.5 when
the protocol has it, else its first threshold; the first area range; every scored detection,
i.e. the largest ``max_dets``), the confidence with the best F1:

* per class: over the class's reachable confidences (the scores of its detections: keeping
  every detection scoring >= one of them), the one maximising
  ``F1 = 2 tp / (2 tp + fp + fn)``, ties to the highest confidence;
* ``overall``: *micro* F1 at one confidence shared by every class: ``tp``, ``fp`` and ``fn``
  summed over the classes with ground truth (the classes mAP averages; detections of other
  classes left out), maximised over the scores of those detections, ties to the highest;
* ``ultralytics`` (protocols with ``summary: ultralytics``): Ultralytics' own rule
  (``ap_per_class``): per-class precision and recall curves sampled on a 1000-point
  confidence grid, the grid point maximising the box-smoothed mean F1 over the classes with
  labels, and the mean precision and recall there (the ``P`` and ``R`` of ``yolo val``).

Ignored detections (crowd, difficult, out of range) count as neither true nor false positives.
Undefined values are NaN.
"""

from __future__ import annotations

import numpy as np

from deteval.protocol import Protocol

__all__ = ["best_f1_points", "default_iou_index", "ultralytics_smooth"]


def default_iou_index(protocol: Protocol) -> int:
    """The threshold index of the default lane: IoU 0.5 when the protocol has it, else 0.

    >>> from deteval.protocol import get_protocol
    >>> default_iou_index(get_protocol("coco")), default_iou_index(get_protocol("voc2010"))
    (0, 0)
    """
    thresholds = list(protocol.iou_thresholds)
    return thresholds.index(0.5) if 0.5 in thresholds else 0


def _point(confidence: float, tp: float, fp: float, n_positive: float) -> dict:
    fn = n_positive - tp
    return {
        "confidence": float(confidence),
        "precision": tp / (tp + fp) if tp + fp else float("nan"),
        "recall": tp / n_positive if n_positive else float("nan"),
        "f1": 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else float("nan"),
    }


def _best(score: np.ndarray, is_tp: np.ndarray, is_fp: np.ndarray, n_positive: int) -> dict:
    """The best-F1 point of detections ranked by descending ``score`` (ties in any order)."""
    if n_positive == 0:
        return _point(float("nan"), 0, 0, 0)
    if len(score) == 0:
        return _point(float("nan"), 0, 0, n_positive)
    tp = np.cumsum(is_tp, dtype=np.int64)
    fp = np.cumsum(is_fp, dtype=np.int64)
    # Only the last detection of a run of equal scores is a reachable threshold (the counts
    # there do not depend on the order within the run).
    last = np.flatnonzero(np.r_[score[1:] != score[:-1], True])
    tp, fp = tp[last], fp[last]
    f1 = 2 * tp / (2 * tp + fp + (n_positive - tp))
    i = int(np.argmax(f1))  # the first maximum: the highest confidence
    return _point(score[last[i]], int(tp[i]), int(fp[i]), n_positive)


def _best_per_class(
    score: np.ndarray, is_tp: np.ndarray, is_fp: np.ndarray, bounds: np.ndarray, n_positive: np.ndarray
) -> list:
    """:func:`_best` of each class's rows ``bounds[k]:bounds[k + 1]``, in one pass over all rows."""
    n_class = len(n_positive)
    tp = np.cumsum(is_tp, dtype=np.int64)
    fp = np.cumsum(is_fp, dtype=np.int64)
    n = len(score)
    is_end = np.zeros(n, dtype=bool)
    if n:
        is_end[:-1] = score[1:] != score[:-1]
        is_end[bounds[1:] - 1] = True  # each class's last row (classes without rows: overwritten below)
        is_end[n - 1] = True
    last = np.flatnonzero(is_end)
    cls_of = np.searchsorted(bounds, last, side="right") - 1
    before = np.r_[0, tp][bounds[:-1]], np.r_[0, fp][bounds[:-1]]  # counts before each class
    tp_at = tp[last] - before[0][cls_of]
    fp_at = fp[last] - before[1][cls_of]
    npos = n_positive[cls_of]
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = 2 * tp_at / (2 * tp_at + fp_at + (npos - tp_at))
    first = np.searchsorted(cls_of, np.arange(n_class))
    stop = np.searchsorted(cls_of, np.arange(n_class), side="right")
    out = []
    for k in range(n_class):
        if n_positive[k] == 0 or first[k] == stop[k]:
            out.append(_point(float("nan"), 0, 0, int(n_positive[k])))
            continue
        i = first[k] + int(np.argmax(f1[first[k] : stop[k]]))  # the first maximum: the highest confidence
        out.append(_point(score[last[i]], int(tp_at[i]), int(fp_at[i]), int(n_positive[k])))
    return out


def ultralytics_smooth(values: np.ndarray, fraction: float = 0.05) -> np.ndarray:
    """The moving average Ultralytics applies to the mean F1 curve (``utils/metrics.py``, ``smooth``).

    The window is the odd number of points nearest ``2 * fraction`` of the curve's length, the
    curve extended at each end by its end value, so the result has the curve's length.

    >>> ultralytics_smooth(np.array([0.0, 0.0, 3.0, 0.0, 0.0]), 0.4).tolist()
    [0.0, 1.0, 1.0, 1.0, 0.0]
    """
    width = round(len(values) * fraction * 2) // 2 + 1
    padded = np.pad(values, width // 2, mode="edge")
    return np.convolve(padded, np.full(width, 1.0 / width), mode="valid")


def _ultralytics(score: np.ndarray, is_tp: np.ndarray, det_class: np.ndarray, n_positive: np.ndarray) -> dict:
    """Ultralytics' ``ap_per_class`` max-mean-F1 point on ranked rows (see the module notes).

    Notes
    -----
    The rule of ``ap_per_class`` (8.4.190): ``recall = tpc / (n_l + eps)``,
    ``precision = tpc / (tpc + fpc)``, each sampled with ``np.interp(-x, -conf, ., left=0 / 1)``
    on ``x = np.linspace(0, 1, 1000)``; classes with labels but no prediction keep rows of
    zeros; ``i = smooth(f1_curve.mean(0), 0.1).argmax()``. Ultralytics sorts with
    ``np.argsort(-conf)`` (not stable): on tied scores its curves may differ from these, which
    follow the protocol's ranking.
    """
    eps = 1e-16
    x = np.linspace(0, 1, 1000)
    classes = np.flatnonzero(n_positive > 0)
    if len(classes) == 0:
        return {
            "confidence": float("nan"),
            "precision": float("nan"),
            "recall": float("nan"),
            "f1": float("nan"),
        }
    p_curve = np.zeros((len(classes), 1000))
    r_curve = np.zeros((len(classes), 1000))
    bounds = np.searchsorted(det_class, np.arange(len(n_positive) + 1))  # rows grouped by class
    for ci, k in enumerate(classes):
        mine = slice(bounds[k], bounds[k + 1])
        if bounds[k] == bounds[k + 1]:
            continue
        tp = is_tp[mine].astype(np.int64)
        tpc = tp.cumsum(0)
        fpc = (1 - tp).cumsum(0)
        conf = score[mine]
        r_curve[ci] = np.interp(-x, -conf, tpc / (n_positive[k] + eps), left=0)
        p_curve[ci] = np.interp(-x, -conf, tpc / (tpc + fpc), left=1)
    f1_curve = 2 * p_curve * r_curve / (p_curve + r_curve + eps)
    i = int(ultralytics_smooth(f1_curve.mean(0), 0.1).argmax())
    return {
        "confidence": float(x[i]),
        "precision": float(p_curve[:, i].mean()),
        "recall": float(r_curve[:, i].mean()),
        "f1": float(f1_curve[:, i].mean()),
    }


def best_f1_points(
    lane_tp: np.ndarray,
    lane_ignored: np.ndarray,
    det_score: np.ndarray,
    det_class: np.ndarray,
    ranking: np.ndarray,
    n_positive: np.ndarray,
    category_ids: tuple,
    category_names: tuple,
    protocol: Protocol,
) -> dict:
    """Best-F1 operating points per class and overall (the result's ``best_f1``).

    Parameters
    ----------
    lane_tp, lane_ignored : bool (n_det,)
        Outcomes of each scored detection in the default lane (:func:`default_iou_index`, the
        first area range).
    det_score : float64 (n_det,)
    det_class : int (n_det,)
    ranking : int (n_det,)
        The protocol's ranking: grouped by class, descending score (ties as the protocol says).
    n_positive : int64 (n_class,)
        Counted ground truth of each class in the first area range.
    category_ids, category_names : tuple (n_class,)
    protocol : Protocol

    Returns
    -------
    dict
        ``{"iou_threshold", "per_class": [{category_id, name, confidence, precision, recall,
        f1}, ...], "overall": {confidence, precision, recall, f1}}``, plus ``"ultralytics"``
        (same keys) under ``summary: ultralytics``; NaN where undefined.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> out = best_f1_points(np.array([True, False, True]), np.zeros(3, bool), np.array([0.9, 0.8, 0.7]),
    ...                      np.zeros(3, int), np.arange(3), np.array([2]), (1,), ("cat",),
    ...                      get_protocol("voc2010"))
    >>> out["per_class"][0]["confidence"], out["per_class"][0]["f1"]
    (0.7, 0.8)
    """
    score = det_score[ranking]
    cls = np.asarray(det_class[ranking], dtype=np.int64)
    is_tp = lane_tp[ranking]
    is_fp = ~is_tp & ~lane_ignored[ranking]
    n_positive = np.asarray(n_positive, dtype=np.int64)
    n_class = len(category_ids)
    bounds = np.searchsorted(cls, np.arange(n_class + 1))  # the ranking is grouped by class
    points = _best_per_class(score, is_tp, is_fp, bounds, n_positive)
    per_class = [
        {"category_id": int(category_ids[k]), "name": category_names[k], **points[k]} for k in range(n_class)
    ]
    counted = n_positive[cls] > 0
    counted_score = score[counted]
    order = np.argsort(counted_score)[::-1]  # descending; the order of ties does not matter here
    overall = _best(counted_score[order], is_tp[counted][order], is_fp[counted][order], int(n_positive.sum()))
    out = {
        "iou_threshold": float(protocol.iou_thresholds[default_iou_index(protocol)]),
        "per_class": per_class,
        "overall": overall,
    }
    if protocol.summary == "ultralytics":
        kept = ~lane_ignored[ranking]
        out["ultralytics"] = _ultralytics(score[kept], is_tp[kept], cls[kept], n_positive)
    return out
