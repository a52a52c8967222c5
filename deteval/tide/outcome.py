"""Matching outcomes for TIDE: which detections are kept and what matching made of them.

:class:`_Outcome` is computed at the foreground IoU, either with tidecv's own greedy matching
(:func:`_outcome_tidecv`, :func:`_tidecv_match`) or with a deteval protocol's matching
(:func:`_outcome_protocol`).
"""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.evaluate import ground_truth_flags, match
from deteval.geometry import pair_box_iou
from deteval.grouping import candidate_pairs, group_rows, rank_in_group
from deteval.matching import match_coco
from deteval.protocol import Protocol


@frozen
class _Outcome:
    """Kept detections (rows of ``dt``) and what matching made of them, at the foreground IoU."""

    det_rows: np.ndarray
    is_tp: np.ndarray
    is_ignored: np.ndarray
    det_gt: np.ndarray  # matched GT row (TP only), -1 otherwise
    gt_is_counted: np.ndarray  # (n_gt,) non-ignored ground truth
    tie_keys: tuple  # per kept detection: the ranking's tie keys
    det_class: np.ndarray | None = None
    det_score: np.ndarray | None = None
    order_first: np.ndarray | None = None  # (class, -score, ties): tidecv's first run
    order_fixed: np.ndarray | None = None  # (class, -score, errors first, ties): its fixes


def _kept_tidecv(dt: Detections, max_dets: int | None) -> np.ndarray:
    """Rows of the detections tidecv keeps: per image, stable score sort, the first ``max_dets``."""
    groups = group_rows(dt.image.astype(np.int64), -dt.score, dt.order)
    if max_dets is None:
        return groups.order
    return groups.order[rank_in_group(groups.key) < max_dets]


def _tidecv_match(
    gt: GroundTruth, dt: Detections, det_rows: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tidecv's greedy matching at each threshold: (is_tp, is_ignored, det_gt), each (n_thr, n_kept).

    Notes
    -----
    tidecv (``TIDEExample._run``): per image, detections in score order take the untaken
    same-class ground truth of highest IoU if it is ``>= t`` (``np.argmax``: the first GT on
    ties; crowd regions are not candidates). An unmatched detection whose crowd IoU
    (intersection over its own area) with a same-class crowd region is ``> t`` (strict) is
    ignored. This is ``match_coco`` with the ground truths of a group in reverse file order
    (its ties go to the later GT) and nothing ignored.
    """
    n_class = gt.n_classes
    n_kept = len(det_rows)
    n_thr = len(thresholds)
    counted = np.flatnonzero(~gt.is_crowd)
    crowd = np.flatnonzero(gt.is_crowd)
    det_key = dt.image[det_rows].astype(np.int64) * n_class + dt.category[det_rows]
    # match_coco wants detections sorted by (group, rank): kept rows are (image, rank).
    by_group = np.argsort(det_key, kind="stable")
    key_sorted = det_key[by_group]
    gt_key = gt.image[counted].astype(np.int64) * n_class + gt.category[counted]
    gt_groups = group_rows(gt_key, -counted)
    gt_rows = counted[gt_groups.order]
    pair_det, pair_gt = candidate_pairs(key_sorted, gt_groups)
    det_box = boxes_as(dt.box, dt.box_format, "xywh")
    gt_box = boxes_as(gt.box, gt.box_format, "xywh")
    pair_iou = pair_box_iou(
        det_box,
        gt_box,
        np.zeros(len(pair_det), bool),
        det_rows=det_rows[by_group[pair_det]],
        gt_rows=gt_rows[pair_gt],
    )
    result = match_coco(
        pair_det,
        pair_gt,
        pair_iou,
        det_key=key_sorted,
        n_gt=len(gt_rows),
        iou_thresholds=thresholds,
        gt_is_ignored=np.zeros((1, len(gt_rows)), bool),
        gt_is_reusable=np.zeros(len(gt_rows), bool),
        gt_is_unmatchable=np.zeros(len(gt_rows), bool),
        det_is_out_of_range=np.zeros((1, n_kept), bool),
    )
    is_tp = np.zeros((n_thr, n_kept), dtype=bool)
    is_tp[:, by_group] = result.det_is_tp
    det_gt = np.full((n_thr, n_kept), -1, dtype=np.int64)
    det_gt[result.match_lane, by_group[result.match_det]] = gt_rows[result.match_gt]
    # Crowd regions: ignore unmatched detections inside a same-class region (crowd IoU > t).
    is_ignored = np.zeros((n_thr, n_kept), dtype=bool)
    if len(crowd):
        crowd_key = gt.image[crowd].astype(np.int64) * n_class + gt.category[crowd]
        crowd_groups = group_rows(crowd_key)
        c_det, c_gt = candidate_pairs(det_key, crowd_groups)
        crowd_rows = crowd[crowd_groups.order]
        c_iou = pair_box_iou(
            det_box, gt_box, np.ones(len(c_det), bool), det_rows=det_rows[c_det], gt_rows=crowd_rows[c_gt]
        )
        best = np.zeros(n_kept)
        np.maximum.at(best, c_det, c_iou)
        is_ignored = (best[None, :] > thresholds[:, None]) & ~is_tp
    return is_tp, is_ignored, det_gt


def _outcome_tidecv(
    gt: GroundTruth, dt: Detections, foreground: float, max_dets: int | None, more: tuple = ()
) -> tuple[_Outcome, tuple]:
    """Tidecv's outcome at ``foreground``, and ``(is_tp, is_ignored)`` at each of ``more``.

    One matching for all thresholds (its lanes are independent: the same numbers as one
    matching per threshold).
    """
    det_rows = _kept_tidecv(dt, max_dets)
    is_tp, is_ignored, det_gt = _tidecv_match(gt, dt, det_rows, np.array([foreground, *more]))
    lanes = (is_tp[1:], is_ignored[1:])
    outcome = _Outcome(
        det_rows=det_rows,
        is_tp=is_tp[0],
        is_ignored=is_ignored[0],
        det_gt=det_gt[0],
        gt_is_counted=~gt.is_crowd,
        # tidecv orders equal (class, score) by image, then file order; the kept rows are sorted
        # by (image, -score, file order), so among equal scores their positions are in that order
        # already, and every ranking here is a stable sort of positions: no tie key is needed.
        tie_keys=(),
    )
    return outcome, lanes


def _single_lane(protocol: Protocol, foreground: float) -> Protocol:
    return protocol.replace(
        iou_thresholds=(float(foreground),),
        area_ranges=(protocol.area_ranges[0],),
        max_dets=None if protocol.max_dets is None else (max(protocol.max_dets),),
    )


def _outcome_protocol(gt: GroundTruth, dt: Detections, protocol: Protocol) -> _Outcome:
    """The protocol's own matching (first area range, largest max_dets, one threshold)."""
    table = match(gt, dt, protocol)
    # The kept rows in the table's order (as deteval.evaluate.match selects them).
    det_key = dt.image.astype(np.int64) * gt.n_classes + dt.category
    groups = group_rows(det_key, -dt.score, dt.order)
    rank = rank_in_group(groups.key)
    cap = None if protocol.max_dets is None else max(protocol.max_dets)
    det_rows = groups.order if cap is None else groups.order[rank < cap]
    is_tp = table.lane_is_tp(0)
    det_gt = np.full(len(det_rows), -1, dtype=np.int64)
    lane0 = table.match_lane == 0
    det_gt[table.match_det[lane0]] = table.match_gt[lane0]
    det_gt = np.where(is_tp, det_gt, -1)
    is_ignored_gt = ground_truth_flags(gt, protocol)[0][0]
    tie_keys: tuple[np.ndarray, ...]
    if protocol.score_order == "image_major":
        tie_keys = (table.det_image, table.det_rank)
    else:
        tie_keys = (table.det_order,)
    return _Outcome(
        det_rows=det_rows,
        is_tp=is_tp,
        is_ignored=table.lane_is_ignored(0),
        det_gt=det_gt,
        gt_is_counted=~is_ignored_gt,
        tie_keys=tie_keys,
    )
