"""The shared machinery of the point-sampled AP methods (``101_point``, ``11_point``, ``all_point``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from deteval.accumulate.ties import _counts_at_tie_end
from deteval.accumulate.values import _Output, _Ranked
from deteval.grouping import rank_in_group


def _point_sampled(
    ranked: _Ranked,
    n_positive: np.ndarray,
    rec_thr: np.ndarray,
    n_iou_thr: int,
    out: _Output,
    precision_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Interpolated precision and scores at each recall threshold; fills ``out`` but ``ap``.

    Returns
    -------
    float64 (n_iou_thr, n_area, n_class, n_recall_thr)
        The interpolated precision (0 where a threshold is never reached; NaN for classes
        without positives), for the method's AP.
    """
    n_class, n_area = n_positive.shape
    n_lane, n = ranked.n_lane, ranked.n
    n_recall_thr = len(rec_thr)
    ranked_scores = np.append(ranked.scores, 0.0)
    # Precision peaks at true positives, so only TP positions are needed: for the j-th TP of
    # its (lane, class) at rank `tp_pos`, tp = j and fp = the FPs counted since the class began.
    tp_lane, tp_pos = ranked.tp_events()
    tp_class = ranked.det_class[tp_pos]
    segment_key = tp_lane * n_class + tp_class
    n_tp_so_far = rank_in_group(segment_key) + 1
    count_pos = tp_pos
    if ranked.tie_end is not None:  # score_ties: threshold: counts at the end of the TP's tied group
        n_tp_so_far, count_pos = _counts_at_tie_end(ranked.tie_end, tp_lane, tp_pos, n_tp_so_far)
    n_fp_so_far = _fp_before_each_tp(
        ranked, tp_lane, count_pos, ranked.class_start[tp_class], n_tp_so_far, n_iou_thr
    )
    # One trailing 0 so that an empty piece of suffix_max_at reads a valid element (padded once,
    # not once per lane: the array has one value per true positive of every lane).
    precision_at_tp = np.append(precision_of(n_tp_so_far.astype(float), n_fp_so_far.astype(float)), 0.0)
    n_tp = np.bincount(segment_key, minlength=n_lane * n_class).reshape(n_lane, n_class)
    tp_first = (np.cumsum(n_tp.ravel()) - n_tp.ravel()).reshape(n_lane, n_class)
    has_dets = ranked.class_end > ranked.class_start
    precision_at_recall = np.full((n_iou_thr, n_area, n_class, n_recall_thr), np.nan)
    for a in range(n_area):
        n_pos = n_positive[:, a]
        is_defined = n_pos > 0
        tp_needed = _min_tp_for_recall(n_pos, rec_thr)  # (n_class, n_recall_thr)
        target = np.maximum(tp_needed, 1)
        for t in range(n_iou_thr):
            lane = a * n_iou_thr + t
            with np.errstate(divide="ignore", invalid="ignore"):
                final_recall = n_tp[lane] / n_pos
            out.recall[t, :, a] = np.where(is_defined, np.where(has_dets, final_recall, 0.0), np.nan)
            # pycocotools: idx = searchsorted(rc, thr, "left"); recall >= thr <=> tp >= tp_needed.
            has_target = target <= n_tp[lane][:, None]
            first = tp_first[lane][:, None] + target - 1
            end = tp_first[lane] + n_tp[lane]
            interpolated = suffix_max_at(
                precision_at_tp, np.where(has_target, first, end[:, None]), end, has_target
            )
            is_reached = has_target | ((tp_needed == 0) & has_dets[:, None])
            # The rank where recall first reaches the threshold: the target TP, or the first
            # ranked detection when the threshold is 0 (searchsorted(rc, 0) == 0).
            from_tp = has_target & (tp_needed > 0)
            if len(tp_pos):
                pos = np.where(
                    from_tp, tp_pos[np.minimum(first, len(tp_pos) - 1)], ranked.class_start[:, None]
                )
            else:
                pos = np.broadcast_to(ranked.class_start[:, None], first.shape)
            score_at_recall = np.where(is_reached, ranked_scores[np.minimum(pos, n)], 0.0)
            interpolated = np.where(is_defined[:, None], interpolated, np.nan)
            out.precision[t, :, :, a] = interpolated.T
            out.scores[t, :, :, a] = np.where(is_defined[:, None], score_at_recall, np.nan).T
            precision_at_recall[t, a] = interpolated
    return precision_at_recall


def _fp_before_each_tp(
    ranked: _Ranked,
    tp_lane: np.ndarray,
    tp_pos: np.ndarray,
    tp_seg_start: np.ndarray,
    n_tp_so_far: np.ndarray,
    n_iou_thr: int,
) -> np.ndarray:
    """False positives from the start of each TP's class segment up to the TP, lane by lane.

    A detection is a TP, an FP or ignored (never two), so the FPs in [start, pos] are the
    detections there minus the TPs (``n_tp_so_far``) minus the ignored ones. The ignored counts
    come from one prefix sum per area range (its first lane) plus, for the area's other lanes,
    the few positions where their ignored flags differ (matches to ignored ground truth at some
    thresholds only), found once for every ``max_dets`` value: a prefix sum per lane would cost
    40 full passes for COCO.
    """
    lanes = ranked.lanes
    n_lane, n = ranked.n_lane, ranked.n
    out = np.empty(len(tp_pos), dtype=np.int64)
    base_before = np.zeros(n + 1, dtype=np.int64)
    lane_bounds = np.searchsorted(tp_lane, np.arange(n_lane + 1))
    for lane in range(n_lane):
        base_lane = lane - lane % n_iou_thr
        if lane == base_lane:  # the area's first lane: its own prefix sum, the others' base
            np.cumsum(ranked.kept(lanes.base_row(base_lane)), out=base_before[1:])
        lo, hi = lane_bounds[lane], lane_bounds[lane + 1]
        if lo == hi:
            continue
        pos, start = tp_pos[lo:hi], tp_seg_start[lo:hi]
        ignored = base_before[pos + 1] - base_before[start]
        if lane != base_lane:
            differs_full = lanes.differs(lane)
            is_kept, differs = ranked.kept_events(differs_full)
            if len(differs):
                sign = np.where(lanes.ignored_at(lane, differs_full[is_kept]), 1, -1)
                before = np.concatenate(([0], np.cumsum(sign)))
                ignored += before[np.searchsorted(differs, pos + 1)] - before[np.searchsorted(differs, start)]
        out[lo:hi] = (pos - start + 1) - n_tp_so_far[lo:hi] - ignored
    return out


def suffix_max_at(padded: np.ndarray, start: np.ndarray, end: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """max(padded[start[k, r] : end[k]]) for each k and r (0 where not ``valid``).

    ``padded`` is the values followed by one extra element (any value: it is only read for
    empty pieces, which ``valid`` masks). ``start`` is non-decreasing along r. One
    ``maximum.reduceat`` over the pieces [start[k, r], start[k, r + 1]) and a suffix maximum
    over r: a max is exact, so these are the values of pycocotools' backwards envelope.
    """
    n_class, n_r = start.shape
    if len(padded) <= 1:
        return np.zeros((n_class, n_r))
    bounds = np.concatenate([start, end[:, None]], axis=1)
    pieces = np.maximum.reduceat(padded, bounds.ravel()).reshape(n_class, n_r + 1)[:, :n_r]
    pieces = np.where(valid, pieces, 0.0)
    return np.maximum.accumulate(pieces[:, ::-1], axis=1)[:, ::-1]


def devkit_precision(n_tp: np.ndarray, n_fp: np.ndarray) -> np.ndarray:
    """``tp / max(tp + fp, eps)``: the Python VOC port (0 where nothing was counted yet)."""
    return n_tp / np.maximum(n_tp + n_fp, np.finfo(np.float64).eps)


def _min_tp_for_recall(n_pos: np.ndarray, rec_thr: np.ndarray) -> np.ndarray:
    """Smallest tp count j with ``j / n_pos >= thr`` for each class and threshold.

    Computed with the same float division as the recall values, so it is exact: the answer is
    within two of ``ceil(thr * n_pos)`` (both roundings are within one unit in the last place), so
    those four candidates are tried, smallest last. ``n_pos + 1`` where no count reaches the
    threshold; classes without positives get an unreachable count.

    Examples
    --------
    >>> _min_tp_for_recall(np.array([3, 0]), np.array([0.0, 0.34, 1.0])).tolist()[0]
    [0, 2, 3]
    """
    out = np.full((len(n_pos), len(rec_thr)), np.iinfo(np.int64).max // 4, dtype=np.int64)
    has = n_pos > 0
    n = n_pos[has].astype(np.float64)[:, None]
    thr = np.asarray(rec_thr, dtype=np.float64)[None, :]
    base = np.ceil(thr * n)
    best = np.broadcast_to(n + 1, base.shape).copy()
    for step in (1.0, 0.0, -1.0, -2.0):
        count = base + step
        with np.errstate(invalid="ignore"):
            reaches = (count >= 0) & (count <= n) & (count / n >= thr)
        best = np.where(reaches, count, best)
    out[has] = best.astype(np.int64)
    return out


def _area_under_envelope(rec: np.ndarray, prec: np.ndarray) -> float:
    """Area under the precision envelope at every recall change (VOC2010+ ``VOCap.m``).

    >>> round(_area_under_envelope(np.array([.5, .5, 1.]), np.array([1., .5, 2 / 3])), 10)
    0.8333333333
    """
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))
