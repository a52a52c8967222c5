"""Ultralytics' matching and Open Images' group-of stage (numpy only)."""

from __future__ import annotations

import numpy as np

from deteval import _speedups
from deteval.matching.values import LaneFlags, MatchResult, _all_unmatched


@_speedups.numpy_only("_cmatch.match_ultralytics", "deteval._cmatch", "Ultralytics matching (numpy only)")
def match_ultralytics(
    pair_det: np.ndarray,
    pair_gt: np.ndarray,
    pair_iou: np.ndarray,
    *,
    n_det: int,
    n_gt: int,
    iou_thresholds: np.ndarray,
    gt_is_ignored: np.ndarray,
    det_is_out_of_range: np.ndarray,
    strict: bool = False,
) -> MatchResult:
    """Ultralytics' validation matching (``BaseValidator.match_predictions``) for all groups and lanes.

    At each threshold, every detection picks the ground truth it overlaps most among those at
    or above the threshold (the later GT on equal IoU); then every ground truth keeps the
    highest-ranked detection among those that picked it (a TP), and the others are false
    positives: a detection whose best GT went to another is *not* offered its second best.

    Parameters
    ----------
    pair_det, pair_gt, pair_iou : (n_pair,)
        Candidate pairs; detection rows sorted by (group, score rank), GT rows by (group, file
        order).
    n_det, n_gt : int
    iou_thresholds : float64 (n_iou_thr,)
    gt_is_ignored : bool (n_area, n_gt)
        Ultralytics has no ignored GT; a kept pick of an ignored GT makes the detection ignored.
    det_is_out_of_range : bool (n_area, n_det)
    strict : bool
        ``iou > t`` instead of Ultralytics' ``iou >= t``.

    Returns
    -------
    MatchResult

    Notes
    -----
    The reference, per image with IoU zeroed across classes (so per image and class, as here)::

        matches = np.nonzero(iou >= threshold)                      # (gt, pred) pairs
        matches = matches[iou[matches].argsort()[::-1]]             # by IoU, descending
        matches = matches[np.unique(matches[:, 1], return_index=True)[1]]  # best GT per pred
        matches = matches[np.unique(matches[:, 0], return_index=True)[1]]  # first pred per GT

    The second ``np.unique`` runs on a list ordered by prediction index (the first one's
    output), so each GT keeps its *first* prediction, i.e. the highest-scored (the per-image
    NMS output is sorted by score), not the one with the highest IoU. Equal IoUs: the reversed
    ``argsort`` puts the later pair first (exact for up to 16 pairs per image, where numpy's
    quicksort is an insertion sort; beyond that numpy leaves the order of ties unspecified).
    """
    n_area = gt_is_ignored.shape[0]
    thresholds = np.asarray(iou_thresholds, dtype=np.float64)
    n_thr = len(thresholds)
    if n_gt == 0 or len(pair_det) == 0:
        return _all_unmatched(n_area, n_thr, n_det, det_is_out_of_range)
    # Each detection's pairs by (IoU, GT) ascending: its last passing pair is its pick.
    order = np.lexsort((pair_gt, pair_iou, pair_det))
    pd, pg, pi = pair_det[order], pair_gt[order], pair_iou[order]
    n_lane = n_area * n_thr
    lane_area = np.repeat(np.arange(n_area), n_thr)
    det_is_tp = np.zeros((n_lane, n_det), dtype=bool)
    det_is_ignored = det_is_out_of_range[lane_area].copy()
    lanes, dets, gts = [], [], []
    for t, thr in enumerate(thresholds):
        passes = pi > thr if strict else pi >= thr
        d, g = pd[passes], pg[passes]
        is_last = np.r_[d[1:] != d[:-1], True] if len(d) else np.zeros(0, dtype=bool)
        pick_det, pick_gt = d[is_last], g[is_last]  # ascending detection rows
        # First (= best-ranked) picking detection of each GT wins.
        _, first = np.unique(pick_gt, return_index=True)
        is_winner = np.zeros(len(pick_det), dtype=bool)
        is_winner[first] = True
        for a in range(n_area):
            lane = a * n_thr + t
            hit_ignored = is_winner & gt_is_ignored[a, pick_gt]
            det_is_tp[lane, pick_det[is_winner & ~hit_ignored]] = True
            det_is_ignored[lane, pick_det] = hit_ignored
            lanes.append(np.full(len(pick_det), lane, dtype=np.int64))
            dets.append(pick_det)
            gts.append(pick_gt)
    match_lane, match_det, match_gt = np.concatenate(lanes), np.concatenate(dets), np.concatenate(gts)
    order = np.lexsort((match_det, match_lane))
    return MatchResult(
        tp=LaneFlags.pack(det_is_tp),
        ignored=LaneFlags.pack(det_is_ignored),
        match_lane=match_lane[order],
        match_det=match_det[order],
        match_gt=match_gt[order],
    )


@_speedups.numpy_only("_cmatch.match_group_of", "deteval._cmatch", "group-of matching (numpy only)")
def match_group_of(
    stage_one: MatchResult,
    pair_det: np.ndarray,
    pair_gt: np.ndarray,
    pair_ioa: np.ndarray,
    *,
    iou_thresholds: np.ndarray,
    gt_is_ignored: np.ndarray,
    strict: bool = False,
) -> MatchResult:
    """Open Images' second stage: leftover detections against group-of boxes, by IoA.

    Parameters
    ----------
    stage_one : MatchResult
        The matching of every detection against the *non*-group-of ground truth.
    pair_det, pair_gt : int64 (n_pair,)
        Candidate pairs of detections with group-of ground truths only; detection rows sorted by
        (group, score rank), GT rows by (group, file order).
    pair_ioa : float64 (n_pair,)
        Intersection over the *detection's* area.
    iou_thresholds : float64 (n_iou_thr,)
        Also the IoA thresholds (the TF API uses ``matching_iou_threshold`` for both).
    gt_is_ignored : bool (n_area, n_gt)
    strict : bool
        ``ioa > t`` instead of ``ioa >= t``.

    Returns
    -------
    MatchResult
        ``stage_one`` with group-of outcomes: in every lane, the detections that are neither TP
        nor ignored after stage one and whose best group-of box (highest IoA, the first on
        ties) reaches the threshold are ignored, except the best-ranked one of each box, which
        becomes a true positive (ignored too when the box is ignored in that lane).

    Notes
    -----
    TF object detection API ``utils/per_image_evaluation.py``
    (``_compute_tp_fp_for_single_class``, ``compute_match_ioa``): each group-of box adds one
    true positive scored with the highest score of the detections it absorbed; here that is the
    best-ranked of them, so the score is the same. An unmatched group-of box is a missed
    positive (``group_of_weight`` 1 of the challenge metric). Not reproduced: TF drops a group-of
    box whose absorbed detections all score exactly 0; mmdetection's ``tpfp_openimages`` adds a
    false positive of score 0 per unmatched group-of box (last in the ranking, it moves AP only
    when real detections score 0).
    """
    n_lane = stage_one.tp.n_lane
    thresholds = np.asarray(iou_thresholds, dtype=np.float64)
    n_thr = len(thresholds)
    if len(pair_det) == 0:
        return stage_one
    # Best group-of box of each detection: highest IoA, the first box on ties (np.argmax).
    order = np.lexsort((pair_gt, -pair_ioa, pair_det))
    pd, pg, pa = pair_det[order], pair_gt[order], pair_ioa[order]
    first = np.r_[True, pd[1:] != pd[:-1]]
    best_det, best_gt, best_ioa = pd[first], pg[first], pa[first]  # ascending detection rows
    lane_thr = np.tile(thresholds, n_lane // n_thr)
    lane_area = np.repeat(np.arange(n_lane // n_thr), n_thr)
    passes = best_ioa[None, :] > lane_thr[:, None] if strict else best_ioa[None, :] >= lane_thr[:, None]
    det_is_tp, det_is_ignored = stage_one.det_is_tp, stage_one.det_is_ignored  # new arrays
    is_left = ~det_is_tp[:, best_det] & ~det_is_ignored[:, best_det]
    absorbed = passes & is_left  # (n_lane, n_best)
    lane_idx, k = np.nonzero(absorbed)  # lanes, then detections in rank order
    key = lane_idx * (int(best_gt.max()) + 1) + best_gt[k]
    _, first_claim = np.unique(key, return_index=True)
    det_is_ignored[lane_idx, best_det[k]] = True
    rep_lane, rep_det, rep_gt = lane_idx[first_claim], best_det[k[first_claim]], best_gt[k[first_claim]]
    is_counted = ~gt_is_ignored[lane_area[rep_lane], rep_gt]
    det_is_tp[rep_lane[is_counted], rep_det[is_counted]] = True
    det_is_ignored[rep_lane[is_counted], rep_det[is_counted]] = False
    match_lane = np.concatenate([stage_one.match_lane, lane_idx])
    match_det = np.concatenate([stage_one.match_det, best_det[k]])
    match_gt = np.concatenate([stage_one.match_gt, best_gt[k]])
    resort = np.lexsort((match_det, match_lane))
    return MatchResult(
        tp=LaneFlags.pack(det_is_tp),
        ignored=LaneFlags.pack(det_is_ignored),
        match_lane=match_lane[resort],
        match_det=match_det[resort],
        match_gt=match_gt[resort],
    )
