"""One function per ``ap_method`` (:data:`AP_METHODS`), each filling one ``max_dets`` slice."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from deteval.accumulate.point_sampled import (
    _area_under_envelope,
    _fp_before_each_tp,
    _point_sampled,
    devkit_precision,
)
from deteval.accumulate.ties import _at_kept_group_ends, _counts_at_tie_end, _is_tie_end, step_ap_sum
from deteval.accumulate.values import _Output, _Ranked
from deteval.grouping import rank_in_group


def ap_101_point(
    ranked: _Ranked, n_positive: np.ndarray, rec_thr: np.ndarray, n_iou_thr: int, out: _Output
) -> None:
    """COCO: mean interpolated precision at 101 recall points (pycocotools' ``accumulate``).

    Notes
    -----
    Operation by operation as ``COCOeval.accumulate``: ``pr = tp / (fp + tp + np.spacing(1))``,
    the backwards envelope, ``np.searchsorted(rc, recThrs, 'left')``, 0 beyond the last reached
    recall, AP = ``np.mean`` over the recall points. Ignored detections stay in the ranked list
    (they repeat the previous point), as in pycocotools; this matters for ``scores``.
    """

    def coco_precision(n_tp: np.ndarray, n_fp: np.ndarray) -> np.ndarray:
        return n_tp / (n_fp + n_tp + np.spacing(1))

    precision_at_recall = _point_sampled(ranked, n_positive, rec_thr, n_iou_thr, out, coco_precision)
    out.ap[...] = _mean_ap(precision_at_recall)


def _mean_ap(precision_at_recall: np.ndarray) -> np.ndarray:
    """COCO's AP, ``np.mean`` over the recall points: (thr, area, class, R) -> (thr, class, area)."""
    return np.mean(precision_at_recall, axis=-1).transpose(0, 2, 1)


def ap_11_point(
    ranked: _Ranked, n_positive: np.ndarray, rec_thr: np.ndarray, n_iou_thr: int, out: _Output
) -> None:
    """VOC2007: the mean of the interpolated precision at 11 recall points (``VOCevalDet.m``).

    Notes
    -----
    The devkit's ``ap = ap + p / 11`` in order, reproduced as a cumulative sum of ``p / 11``
    (the same additions, so the same rounding). Precision is ``tp / (tp + fp)``, 0 where nothing
    was counted yet (the Python port's ``np.maximum(tp + fp, eps)``).
    """
    precision_at_recall = _point_sampled(ranked, n_positive, rec_thr, n_iou_thr, out, devkit_precision)
    out.ap[...] = _eleven_point_ap(precision_at_recall)


def _eleven_point_ap(precision_at_recall: np.ndarray) -> np.ndarray:
    """The devkit's ``ap = ap + p / 11``: (thr, area, class, R) -> (thr, class, area)."""
    return np.cumsum(precision_at_recall / 11.0, axis=-1)[..., -1].transpose(0, 2, 1)


#: The point-sampled methods the compiled kernel runs, and whether the AP it computes itself is
#: :func:`_eleven_point_ap`'s cumulative sum (True) or :func:`_mean_ap`'s mean over the recall
#: points (False): the kernel makes that expression's additions, in its order.
_COMPILED_AP: Mapping[str, bool] = {"101_point": False, "11_point": True}


def ap_all_point(
    ranked: _Ranked, n_positive: np.ndarray, rec_thr: np.ndarray, n_iou_thr: int, out: _Output
) -> None:
    """VOC2010+: area under the precision envelope at every recall change (``VOCap.m``).

    Fills ``recall`` and ``ap``; there are no recall points, so ``precision`` and ``scores``
    have an empty R axis. Under ``score_ties: threshold`` the curve has one point per tied
    group (its end) instead of one per detection.
    """
    n_class, n_area = n_positive.shape
    is_fp = ~ranked.is_tp & ~ranked.is_ignored
    is_end = _is_tie_end(ranked)
    for k in range(n_class):
        segment = slice(ranked.class_start[k], ranked.class_end[k])
        n_tp = np.cumsum(ranked.is_tp[:, segment], axis=1).astype(float)
        n_fp = np.cumsum(is_fp[:, segment], axis=1).astype(float)
        if is_end is not None:  # score_ties: threshold: the curve's points are the tied groups' ends
            n_tp, n_fp = n_tp[:, is_end[segment]], n_fp[:, is_end[segment]]
        for a in range(n_area):
            n_pos = n_positive[k, a]
            if n_pos == 0:
                continue
            for t in range(n_iou_thr):
                lane = a * n_iou_thr + t
                rec = n_tp[lane] / n_pos
                out.recall[t, k, a] = rec[-1] if len(rec) else 0.0
                out.ap[t, k, a] = _area_under_envelope(rec, devkit_precision(n_tp[lane], n_fp[lane]))


def ap_trapezoid_101(
    ranked: _Ranked,
    n_positive: np.ndarray,
    rec_thr: np.ndarray,
    n_iou_thr: int,
    out: _Output,
    *,
    curve_end: str = "slope",
) -> None:
    """Ultralytics: trapezoid of the precision envelope at 101 recall points (``compute_ap``).

    Fills ``recall`` and ``ap``; the R axis is empty (the AP is not a mean of sampled points).
    ``curve_end`` is the protocol field: how the envelope ends after the last recall point.

    Notes
    -----
    ``ultralytics/utils/metrics.py``, ``ap_per_class`` and ``compute_ap``, operation by
    operation: ``recall = tpc / (n_l + 1e-16)``, ``precision = tpc / (tpc + fpc)``; under
    ``curve_end: slope`` (before 8.4, method "interp") ``mrec = [0, recall, 1]``, ``mpre = [1,
    precision, 0]``, so the envelope falls linearly to 0 at recall 1; under ``drop`` (8.4 and
    later) ``mrec = [0, recall, recall[-1], 1]``, ``mpre = [1, precision, 0, 0]``, so it is 0
    past the last recall point (``np.interp`` reads the later of the two equal ``mrec`` values,
    so precision at exactly ``recall[-1]`` is 0 too). The envelope starts at precision 1, unlike
    VOC's 0: ``mpre = flip(maximum.accumulate(flip(mpre)))``, then
    ``trapezoid(interp(linspace(0, 1, 101), mrec, mpre), x)``. A class with ground truth and no
    detection has AP 0 (Ultralytics skips it and leaves its zero). Ultralytics has no ignored
    detections; ignored ones (crowd, difficult under other settings) are left out of the curve.
    Under ``score_ties: threshold`` the curve has one point per tied group that keeps a
    detection (its last kept one).
    """
    n_class, n_area = n_positive.shape
    x = np.linspace(0, 1, 101)
    is_kept = ~ranked.is_ignored
    is_end = _is_tie_end(ranked)
    for k in range(n_class):
        segment = slice(ranked.class_start[k], ranked.class_end[k])
        for a in range(n_area):
            n_pos = n_positive[k, a]
            if n_pos == 0:
                continue
            for t in range(n_iou_thr):
                lane = a * n_iou_thr + t
                tp = ranked.is_tp[lane, segment][is_kept[lane, segment]].astype(float)
                if len(tp) == 0:
                    out.recall[t, k, a], out.ap[t, k, a] = 0.0, 0.0
                    continue
                tpc = np.cumsum(tp)
                fpc = np.cumsum(1 - tp)
                if is_end is not None:  # score_ties: threshold: one point per tied group (kept rows)
                    tpc, fpc = _at_kept_group_ends(is_end[segment], is_kept[lane, segment], tpc, fpc)
                recall = tpc / (n_pos + 1e-16)
                precision = tpc / (tpc + fpc)
                if curve_end == "drop":
                    mrec = np.concatenate(([0.0], recall, [recall[-1]], [1.0]))
                    mpre = np.concatenate(([1.0], precision, [0.0], [0.0]))
                else:
                    mrec = np.concatenate(([0.0], recall, [1.0]))
                    mpre = np.concatenate(([1.0], precision, [0.0]))
                mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
                out.recall[t, k, a] = recall[-1]
                out.ap[t, k, a] = float(_trapezoid(np.interp(x, mrec, mpre), x))


def ap_step(
    ranked: _Ranked, n_positive: np.ndarray, rec_thr: np.ndarray, n_iou_thr: int, out: _Output
) -> None:
    """No interpolation: AP = sum over thresholds of ``(R_n - R_{n-1}) * P_n`` (scikit-learn).

    Fills ``recall`` and ``ap``; the R axis is empty, as for ``all_point``: the AP is the exact
    area under the step curve, not a mean of sampled points (the curve itself:
    :func:`deteval.analysis.pr_curve`).

    Notes
    -----
    scikit-learn's ``average_precision_score`` with one threshold per distinct score; with
    ``score_ties: ranked`` (the default) every detection is its own threshold instead (ties in
    ``score_order``). Precision is ``tp / (tp + fp)``; recall is ``tp / n_positive``, so ground
    truths that no detection found count (scikit-learn's recall denominator is the positives
    in ``y_true``). Only thresholds that add a true positive move recall; their precision is
    read after every detection of the threshold, as :func:`step_ap_sum` sums them. Ignored
    detections are neither true nor false positives. A class with ground truth and no true
    positive has AP 0; without ground truth, NaN.
    """
    n_class, n_area = n_positive.shape
    n_lane, n = ranked.n_lane, ranked.n
    tp_lane, tp_pos = ranked.tp_events()
    tp_class = ranked.det_class[tp_pos]
    segment_key = tp_lane * n_class + tp_class
    n_tp_so_far = rank_in_group(segment_key) + 1
    count_pos = tp_pos
    if ranked.tie_end is not None:
        n_tp_so_far, count_pos = _counts_at_tie_end(ranked.tie_end, tp_lane, tp_pos, n_tp_so_far)
    # One threshold per distinct (lane, position where the counts are read): every TP under
    # `ranked`, the last TP of each tied group under `threshold`.
    point_key = tp_lane * max(n, 1) + count_pos
    is_point = np.ones(len(point_key), dtype=bool)
    is_point[:-1] = point_key[1:] != point_key[:-1]
    n_fp_so_far = _fp_before_each_tp(
        ranked,
        tp_lane[is_point],
        count_pos[is_point],
        ranked.class_start[tp_class[is_point]],
        n_tp_so_far[is_point],
        n_iou_thr,
    )
    n_tp_at = n_tp_so_far[is_point].astype(float)
    key_at = segment_key[is_point]
    lane_at = tp_lane[is_point]
    n_pos_at = n_positive[tp_class[is_point], lane_at // max(n_iou_thr, 1)]
    with np.errstate(divide="ignore", invalid="ignore"):  # a TP always has a counted GT
        recall_at = n_tp_at / n_pos_at
    precision_at = n_tp_at / (n_tp_at + n_fp_so_far)
    is_start = np.ones(len(key_at), dtype=bool)
    is_start[1:] = key_at[1:] != key_at[:-1]
    starts = np.flatnonzero(is_start)
    ap = np.zeros(n_lane * n_class)
    if len(starts):
        ap[key_at[starts]] = step_ap_sum(recall_at, precision_at, starts)
    n_tp = np.bincount(segment_key, minlength=n_lane * n_class)
    ap, n_tp = ap.reshape(n_lane, n_class), n_tp.reshape(n_lane, n_class)
    for a in range(n_area):
        n_pos = n_positive[:, a]
        is_defined = n_pos > 0
        for t in range(n_iou_thr):
            lane = a * n_iou_thr + t
            with np.errstate(divide="ignore", invalid="ignore"):
                out.recall[t, :, a] = np.where(is_defined, n_tp[lane] / n_pos, np.nan)
            out.ap[t, :, a] = np.where(is_defined, ap[lane], np.nan)


#: Ultralytics calls ``np.trapz``, renamed ``np.trapezoid`` in numpy 2 (the same sum).
_trapezoid = np.trapezoid  # np.trapz before numpy 2: the same sum


#: ``ap_method`` field value -> the function that fills one ``max_dets`` slice.
AP_METHODS: Mapping[str, Callable[..., None]] = {
    "101_point": ap_101_point,
    "11_point": ap_11_point,
    "all_point": ap_all_point,
    "trapezoid_101": ap_trapezoid_101,
    "step": ap_step,
}
