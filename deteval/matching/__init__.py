"""Greedy matching of detections to ground truth, for every (image, class) group at once.

The greedy rule is sequential *within* a group (a ground truth taken by a higher-scored
detection is no longer available), but groups are independent. So the fast matcher walks the
detection *ranks* (round r handles the r-th detection of every group that has one) and each
round is one vectorized step over all groups, all IoU thresholds and all area ranges ("lanes").
Only detections with at least one candidate ground truth take part in rounds, so the number of
rounds is the largest number of overlapping detections in one group.

A slow, plainly written twin lives in ``tests/reference`` and the tests compare the two.

``match_coco`` and ``match_voc`` run a compiled kernel (``deteval/_cmatch.c``, built by
``pip install .`` where a C compiler is available) when it is importable and not disabled by
``DETEVAL_NO_EXTENSION=1``; the numpy code here is its twin, used otherwise, and the tests check
that the two agree bit for bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deteval import _speedups
from deteval._dtypes import lane_dtype, narrow_rows, row_dtype
from deteval._lazy import lazy_names
from deteval._values import frozen
from deteval.errors import ConfigError
from deteval.grouping import lexsort, rank_in_group
from deteval.matching.values import COCO_MAX_THRESHOLD, LaneFlags, MatchResult, _all_unmatched, lane_bytes

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from deteval.matching.others import match_group_of, match_ultralytics

__all__ = [
    "LaneFlags",
    "MatchResult",
    "lane_dtype",
    "row_dtype",
    "narrow_rows",
    "match_coco",
    "match_voc",
    "match_ultralytics",
    "match_group_of",
    "CocoMatchInput",
    "VocMatchInput",
    "COCO_MAX_THRESHOLD",
    "lane_bytes",
]

#: Names loaded from their module on first access (PEP 562): COCO and VOC matching (every preset
#: but Ultralytics' and Open Images') import no code of the other rules.
_LAZY = {"match_group_of": "deteval.matching.others", "match_ultralytics": "deteval.matching.others"}

__getattr__, __dir__ = lazy_names(globals(), _LAZY)


@frozen(eq=False)
class CocoMatchInput:
    """The inputs of :func:`match_coco` as one value: what its kernel and its numpy twin take.

    The fields are :func:`match_coco`'s parameters, with the same meaning.
    """

    pair_det: np.ndarray
    pair_gt: np.ndarray
    pair_iou: np.ndarray
    det_key: np.ndarray
    n_gt: int
    iou_thresholds: np.ndarray
    gt_is_ignored: np.ndarray
    gt_is_reusable: np.ndarray
    gt_is_unmatchable: np.ndarray
    det_is_out_of_range: np.ndarray
    strict: bool = False
    narrow: bool = False
    gt_ties: str = "last"
    threads: int = 1


@frozen(eq=False)
class VocMatchInput:
    """The inputs of :func:`match_voc` as one value: what its kernel and its numpy twin take.

    The fields are :func:`match_voc`'s parameters, with the same meaning.
    """

    pair_det: np.ndarray
    pair_gt: np.ndarray
    pair_iou: np.ndarray
    n_det: int
    n_gt: int
    iou_thresholds: np.ndarray
    gt_is_ignored: np.ndarray
    det_is_out_of_range: np.ndarray
    strict: bool = False
    narrow: bool = False


def match_coco(
    pair_det: np.ndarray,
    pair_gt: np.ndarray,
    pair_iou: np.ndarray,
    *,
    det_key: np.ndarray,
    n_gt: int,
    iou_thresholds: np.ndarray,
    gt_is_ignored: np.ndarray,
    gt_is_reusable: np.ndarray,
    gt_is_unmatchable: np.ndarray,
    det_is_out_of_range: np.ndarray,
    strict: bool = False,
    narrow: bool = False,
    gt_ties: str = "last",
    threads: int = 1,
) -> MatchResult:
    """Pycocotools' greedy matching (``COCOeval.evaluateImg``) for all groups and lanes.

    Parameters
    ----------
    pair_det, pair_gt : int64 (n_pair,)
        Candidate pairs; detections are rows sorted by (group, score rank), ground truths rows
        sorted by (group, file order). Expected in :func:`~deteval.grouping.candidate_pairs`'
        order (by detection, then ground truth); other orders are sorted into it first.
    pair_iou : float64 (n_pair,)
    det_key : int64 (n_det,)
        Group of each detection row (non-decreasing).
    n_gt : int
    iou_thresholds : float64 (n_iou_thr,)
    gt_is_ignored : bool (n_area, n_gt)
        Ignored ground truth per area range (crowd, ignore flag, difficult, outside the range).
    gt_is_reusable : bool (n_gt,)
        Crowd regions that can absorb any number of detections.
    gt_is_unmatchable : bool (n_gt,)
        pycocotools' id-0 bug: a detection matched to such a GT counts as unmatched.
    det_is_out_of_range : bool (n_area, n_det)
        Unmatched detections outside the area range are ignored.
    strict : bool
        Compare ``iou > t`` instead of ``iou >= min(t, 1 - 1e-10)``.
    narrow : bool
        The compiled kernel may return the matches narrow: ``match_det`` / ``match_gt`` int32,
        ``match_lane`` int8 (int16 beyond 128 lanes) -- for callers whose rows fit, to save the
        int64 copies (:func:`deteval.evaluate.match`); the numpy code returns int64 regardless.
    gt_ties : {"last", "first"}
        Of the available ground truths with the highest IoU, take the last in file order
        (pycocotools) or the first (``np.argmax``: Ultralytics 8.4 and later; the protocol field
        ``gt_ties``).
    threads : int
        The compiled kernel matches the groups in this many parts on their own threads
        (:func:`deteval._parallel.kernel_threads`); the result does not depend on it.

    Returns
    -------
    MatchResult

    Notes
    -----
    For each detection in score order, pycocotools scans the group's ground truths sorted
    non-ignored first (stable), skips taken non-crowd ones, and keeps the last one whose IoU is
    >= the best so far (starting at the threshold), stopping at the first ignored GT once a
    non-ignored one matched. That is the lexicographic maximum of (is non-ignored, IoU, file
    position) over available GTs at or above the threshold, which is what a round computes.

    Under ``gt_ties="first"`` the last element of that maximum is the *negated* file position:
    Ultralytics 8.4's ``BaseValidator.match_predictions`` walks the detections of an image in
    its NMS order and gives each ``k = available.argmax(0)``, the unclaimed label of highest IoU
    (the first on ties), a true positive where that IoU is ``>=`` the threshold; per class (it
    zeroes the IoU across classes) that is this matching with no ignored GT.

    The compiled kernel, when present, walks each group's detections in rank order instead of
    rounds, with the same comparisons; it declines (and the numpy code runs) on inputs outside
    its assumptions (other dtypes or shapes, detection keys not sorted, a ground truth paired
    with detections of two groups). Both ``gt_ties`` rules: the comparison of equal IoUs keeps the
    later or the earlier ground-truth row.
    """
    if gt_ties not in ("last", "first"):
        raise ConfigError(f"gt_ties: expected one of 'last', 'first', found {gt_ties!r}")
    inputs = CocoMatchInput(
        pair_det,
        pair_gt,
        pair_iou,
        det_key,
        n_gt,
        iou_thresholds,
        gt_is_ignored,
        gt_is_reusable,
        gt_is_unmatchable,
        det_is_out_of_range,
        strict,
        narrow,
        gt_ties,
        threads,
    )
    return _speedups.dispatch("_cmatch.match_coco", inputs)


#: The declines of the matching kernels: nothing to match (no pairs, ground truths or thresholds:
#: the twin's early return), and inputs outside the kernel's dtypes, shapes or assumptions
#: (detection keys not sorted, a ground truth paired with detections of two groups).
_NOTHING = "nothing to match"
_OUTSIDE = "inputs outside the kernel's assumptions"


def _kernel_outputs(det_is_out_of_range: np.ndarray, n_thr: int) -> tuple[LaneFlags, LaneFlags]:
    """The packed (lanes x detections) flags a matching kernel fills, all clear.

    The kernel sets each lane's out-of-range flags in the ignored ones itself (unmatched
    detections keep them).
    """
    n_area, n_det = det_is_out_of_range.shape
    return LaneFlags.zeros(n_area * n_thr, n_det), LaneFlags.zeros(n_area * n_thr, n_det)


def _kernel_result(
    found: bytearray | None, tp: LaneFlags, ignored: LaneFlags, *, narrow: bool
) -> MatchResult | _speedups.Decline:
    """The kernel's matches as a result (views of its one buffer).

    Lane-major int64 rows (lanes, detections, ground truths), or ``narrow``: int32 rows of
    detections and ground truths, then the lanes as :func:`lane_dtype` (int8 or int16).
    """
    if found is None:
        return _speedups.Decline(_OUTSIDE)
    if narrow:
        n = len(found) // (8 + lane_dtype(tp.n_lane).itemsize)
        rows: np.ndarray = np.frombuffer(found, dtype=np.int32, count=2 * n).reshape(2, n)
        lanes: np.ndarray = np.frombuffer(found, dtype=lane_dtype(tp.n_lane), offset=8 * n)
        return MatchResult(tp=tp, ignored=ignored, match_lane=lanes, match_det=rows[0], match_gt=rows[1])
    match_lane, match_det, match_gt = np.frombuffer(found, dtype=np.int64).reshape(3, -1)
    return MatchResult(
        tp=tp,
        ignored=ignored,
        match_lane=match_lane,
        match_det=match_det,
        match_gt=match_gt,
    )


def _match_coco_compiled(m: CocoMatchInput) -> MatchResult | _speedups.Decline:
    """:func:`match_coco` by the compiled kernel, or a decline where the kernel does not apply."""
    pair_det, pair_gt, pair_iou, det_key, n_gt = m.pair_det, m.pair_gt, m.pair_iou, m.det_key, m.n_gt
    gt_is_ignored, gt_is_reusable, gt_is_unmatchable = m.gt_is_ignored, m.gt_is_reusable, m.gt_is_unmatchable
    det_is_out_of_range, strict, narrow = m.det_is_out_of_range, m.strict, m.narrow
    if n_gt == 0 or len(pair_det) == 0 or len(m.iou_thresholds) == 0:
        return _speedups.Decline(_NOTHING)
    n_pair, n_det = len(pair_det), len(det_key)
    n_area = gt_is_ignored.shape[0] if gt_is_ignored.ndim == 2 else 0
    masks = (gt_is_ignored, gt_is_reusable, gt_is_unmatchable, det_is_out_of_range)
    if not (
        pair_det.dtype == np.int64
        and pair_gt.dtype.kind in "iu"
        and det_key.dtype.kind in "iu"
        and pair_iou.dtype.kind == "f"
        and pair_iou.dtype.itemsize <= 8
        and all(mask.dtype == np.bool_ for mask in masks)
        and pair_det.shape == pair_gt.shape == pair_iou.shape == (n_pair,)
        and det_key.shape == (n_det,)
        and gt_is_ignored.shape == (n_area, n_gt)
        and gt_is_reusable.shape == gt_is_unmatchable.shape == (n_gt,)
        and det_is_out_of_range.shape == (n_area, n_det)
    ):
        return _speedups.Decline(_OUTSIDE)
    thresholds = np.asarray(m.iou_thresholds, dtype=np.float64)
    if not strict:
        thresholds = np.minimum(thresholds, COCO_MAX_THRESHOLD)
    tp, ignored = _kernel_outputs(det_is_out_of_range, len(thresholds))
    contiguous = np.ascontiguousarray
    found = _speedups.module_of("_cmatch.match_coco").match_coco(  # type: ignore[union-attr]
        contiguous(pair_det),
        contiguous(pair_gt, dtype=np.int64),
        contiguous(pair_iou, dtype=np.float64),
        contiguous(det_key, dtype=np.int64),
        contiguous(thresholds),
        contiguous(gt_is_ignored),
        contiguous(gt_is_reusable),
        contiguous(gt_is_unmatchable),
        contiguous(det_is_out_of_range),
        n_area,
        n_gt,
        bool(strict),
        tp.bits,
        ignored.bits,
        bool(narrow),
        m.gt_ties == "first",
        max(1, int(m.threads)),
    )
    return _kernel_result(found, tp, ignored, narrow=narrow)


def _match_coco_numpy(m: CocoMatchInput) -> MatchResult:
    """:func:`match_coco` in numpy (a vectorized round per detection rank): the kernel's twin."""
    pair_det, pair_gt, pair_iou, det_key, n_gt = m.pair_det, m.pair_gt, m.pair_iou, m.det_key, m.n_gt
    iou_thresholds, gt_is_ignored, det_is_out_of_range = (
        m.iou_thresholds,
        m.gt_is_ignored,
        m.det_is_out_of_range,
    )
    gt_is_reusable, gt_is_unmatchable, strict, gt_ties = (
        m.gt_is_reusable,
        m.gt_is_unmatchable,
        m.strict,
        m.gt_ties,
    )
    n_area = gt_is_ignored.shape[0]
    n_thr = len(iou_thresholds)
    n_det = len(det_key)
    if n_gt == 0 or len(pair_det) == 0:
        return _all_unmatched(n_area, n_thr, n_det, det_is_out_of_range)
    thresholds = np.asarray(iou_thresholds, dtype=np.float64)
    if not strict:
        thresholds = np.minimum(thresholds, COCO_MAX_THRESHOLD)
    # Keep pairs that can pass the lowest threshold; order them for the rounds.
    lowest = thresholds.min()
    keep = pair_iou > lowest if strict else pair_iou >= lowest
    pair_det, pair_gt, pair_iou = pair_det[keep], pair_gt[keep], pair_iou[keep]
    pair_key = pair_det * max(n_gt, 1) + pair_gt
    if len(pair_key) > 1 and not (pair_key[1:] > pair_key[:-1]).all():  # not candidate_pairs' order
        by_det = np.argsort(pair_key, kind="stable")
        pair_det, pair_gt, pair_iou = pair_det[by_det], pair_gt[by_det], pair_iou[by_det]
    # Pairs are detection-major (pair_det non-decreasing), so runs of equal pair_det give the
    # candidates (the only detections that can match; the rest are FP or out of range) and
    # each pair's candidate index without a sort.
    is_new_det = np.empty(len(pair_det), dtype=bool)
    is_new_det[:1] = True
    np.not_equal(pair_det[1:], pair_det[:-1], out=is_new_det[1:])
    candidates = pair_det[is_new_det]
    pair_cand = np.cumsum(is_new_det) - 1
    cand_round = np.zeros(len(det_key), dtype=np.int64)
    cand_round[candidates] = rank_in_group(det_key[candidates])  # rank among the group's candidates
    pair_round = cand_round[pair_det]
    # Within one detection the pairs are in ground-truth row order, so a stable sort by
    # (round, detection, IoU) leaves equal-IoU pairs in ground-truth order; gt_ties="first"
    # sorts them in reverse ground-truth order, so that the last of them is the first GT.
    if gt_ties == "first":
        order = lexsort((-pair_gt, pair_iou, pair_cand, pair_round))
    else:
        order = lexsort((pair_iou, pair_cand, pair_round))
    pair_cand, pair_gt, pair_iou, pair_round = (
        pair_cand[order],
        pair_gt[order],
        pair_iou[order],
        pair_round[order],
    )
    n_round = int(pair_round[-1]) + 1 if len(pair_round) else 0
    round_bounds = np.searchsorted(pair_round, np.arange(n_round + 1))
    # Ground-truth rows fit int32 in practice: half the memory of this (lanes x candidates) array.
    gt_dtype = np.int32 if n_gt <= np.iinfo(np.int32).max else np.int64
    cand_gt = np.full((n_area, n_thr, len(candidates)), -1, dtype=gt_dtype)
    is_taken = np.zeros((n_area, n_thr, n_gt), dtype=bool)
    priority_of_gt = 1 + (~gt_is_ignored).astype(np.int64)  # (n_area, n_gt): 2 non-ignored, 1 ignored

    for lo, hi in zip(round_bounds[:-1], round_bounds[1:]):
        cands, gts, ious = pair_cand[lo:hi], pair_gt[lo:hi], pair_iou[lo:hi]
        n_pair = hi - lo
        passes = ious[None, :] > thresholds[:, None] if strict else ious[None, :] >= thresholds[:, None]
        available = ~is_taken[:, :, gts] | gt_is_reusable[gts]
        priority = (passes[None, :, :] & available) * priority_of_gt[:, None, gts]
        # Highest priority wins; among equals the later pair (higher IoU, later GT) wins.
        composite = priority * n_pair + np.arange(n_pair)
        seg_start = np.flatnonzero(np.r_[True, cands[1:] != cands[:-1]])
        best = np.maximum.reduceat(composite, seg_start, axis=2)
        is_matched = best >= n_pair
        chosen_gt = gts[best % n_pair]
        cand_gt[:, :, cands[seg_start]] = np.where(is_matched, chosen_gt, -1)
        a_idx, t_idx, s_idx = np.nonzero(is_matched & ~gt_is_reusable[chosen_gt])
        is_taken[a_idx, t_idx, chosen_gt[a_idx, t_idx, s_idx]] = True

    # Outcomes: only candidate detections can differ from "FP, or ignored if out of range".
    # One lane at a time, so that no (lanes x candidates) temporary exists besides cand_gt.
    n_lane = n_area * n_thr
    n_cand = len(candidates)
    lane_gt = cand_gt.reshape(n_lane, n_cand)
    det_is_ignored = np.repeat(det_is_out_of_range, n_thr, axis=0)
    det_is_tp = np.zeros((n_lane, n_det), dtype=bool)
    n_match_of_lane = np.count_nonzero(lane_gt >= 0, axis=1)
    lane_end = np.cumsum(n_match_of_lane)
    match_lane = np.repeat(np.arange(n_lane, dtype=np.int64), n_match_of_lane)
    match_det = np.empty(len(match_lane), dtype=np.int64)
    match_gt = np.empty(len(match_lane), dtype=np.int64)
    for lane in range(n_lane):
        a = lane // n_thr
        row = lane_gt[lane]
        is_matched = row >= 0
        safe_gt = np.maximum(row, 0)
        hit_ignored = is_matched & gt_is_ignored[a, safe_gt]
        counts_as_match = is_matched & ~gt_is_unmatchable[safe_gt]
        cand_ignored = hit_ignored | (~counts_as_match & det_is_out_of_range[a, candidates])
        det_is_ignored[lane, candidates] = cand_ignored
        det_is_tp[lane, candidates] = counts_as_match & ~cand_ignored
        matched = np.flatnonzero(is_matched)  # candidates ascending: detections ascending
        lo = lane_end[lane] - len(matched)
        match_det[lo : lane_end[lane]] = candidates[matched]
        match_gt[lo : lane_end[lane]] = row[matched]
    return MatchResult(
        tp=LaneFlags.pack(det_is_tp),
        ignored=LaneFlags.pack(det_is_ignored),
        match_lane=match_lane,
        match_det=match_det,
        match_gt=match_gt,
    )


def match_voc(
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
    narrow: bool = False,
) -> MatchResult:
    """The PASCAL VOC devkit's matching (``VOCevalDet.m``) for all groups and lanes.

    Each detection looks only at the ground truth it overlaps most (over *all* GTs of its image
    and class, the first one on ties). Above the threshold: an ignored (difficult) GT makes the
    detection ignored; an untaken GT makes it a TP (and takes the GT); a taken GT makes it a
    FP, even when another GT would have matched. Below: a FP (ignored if outside the area range).

    Parameters
    ----------
    pair_det, pair_gt, pair_iou : (n_pair,)
        Candidate pairs; detection rows sorted by (group, score rank).
    n_det, n_gt : int
    iou_thresholds : float64 (n_iou_thr,)
    gt_is_ignored : bool (n_area, n_gt)
    det_is_out_of_range : bool (n_area, n_det)
    strict : bool
        ``iou > t`` (py-faster-rcnn) instead of ``iou >= t`` (devkit).
    narrow : bool
        As in :func:`match_coco`.

    Returns
    -------
    MatchResult

    Notes
    -----
    The compiled kernel, when present, computes the same with the same comparisons; it declines
    (and the numpy code runs) on other dtypes or shapes and on thresholds that are not > -inf.
    """
    inputs = VocMatchInput(
        pair_det,
        pair_gt,
        pair_iou,
        n_det,
        n_gt,
        iou_thresholds,
        gt_is_ignored,
        det_is_out_of_range,
        strict,
        narrow,
    )
    return _speedups.dispatch("_cmatch.match_voc", inputs)


def _match_voc_compiled(m: VocMatchInput) -> MatchResult | _speedups.Decline:
    """:func:`match_voc` by the compiled kernel, or a decline where the kernel does not apply."""
    pair_det, pair_gt, pair_iou, n_det, n_gt = m.pair_det, m.pair_gt, m.pair_iou, m.n_det, m.n_gt
    iou_thresholds, gt_is_ignored, det_is_out_of_range = (
        m.iou_thresholds,
        m.gt_is_ignored,
        m.det_is_out_of_range,
    )
    if n_gt == 0 or n_det == 0 or len(pair_det) == 0:
        return _speedups.Decline(_NOTHING)
    thresholds = np.asarray(iou_thresholds, dtype=np.float64)
    n_pair = len(pair_det)
    n_area = gt_is_ignored.shape[0] if gt_is_ignored.ndim == 2 else 0
    if not (
        pair_det.dtype.kind in "iu"
        and pair_gt.dtype.kind in "iu"
        and pair_iou.dtype.kind == "f"
        and pair_iou.dtype.itemsize <= 8
        and gt_is_ignored.dtype == det_is_out_of_range.dtype == np.bool_
        and pair_det.shape == pair_gt.shape == pair_iou.shape == (n_pair,)
        and gt_is_ignored.shape == (n_area, n_gt)
        and det_is_out_of_range.shape == (n_area, n_det)
        and thresholds.ndim == 1
        and len(thresholds) > 0
        and bool(np.all(thresholds > -np.inf))  # -inf (and NaN) would pass detections without a GT
    ):
        return _speedups.Decline(_OUTSIDE)
    tp, ignored = _kernel_outputs(det_is_out_of_range, len(thresholds))
    contiguous = np.ascontiguousarray
    found = _speedups.module_of("_cmatch.match_voc").match_voc(  # type: ignore[union-attr]
        contiguous(pair_det, dtype=np.int64),
        contiguous(pair_gt, dtype=np.int64),
        contiguous(pair_iou, dtype=np.float64),
        contiguous(thresholds),
        contiguous(gt_is_ignored),
        contiguous(det_is_out_of_range),
        n_area,
        n_det,
        n_gt,
        bool(m.strict),
        tp.bits,
        ignored.bits,
        bool(m.narrow),
    )
    return _kernel_result(found, tp, ignored, narrow=m.narrow)


def _match_voc_numpy(m: VocMatchInput) -> MatchResult:
    """:func:`match_voc` in numpy: the compiled kernel's twin."""
    pair_det, pair_gt, pair_iou, n_det, n_gt = m.pair_det, m.pair_gt, m.pair_iou, m.n_det, m.n_gt
    iou_thresholds, gt_is_ignored, det_is_out_of_range, strict = (
        m.iou_thresholds,
        m.gt_is_ignored,
        m.det_is_out_of_range,
        m.strict,
    )
    n_area = gt_is_ignored.shape[0]
    thresholds = np.asarray(iou_thresholds, dtype=np.float64)
    n_thr = len(thresholds)
    if n_gt == 0 or len(pair_det) == 0:
        return _all_unmatched(n_area, n_thr, n_det, det_is_out_of_range)
    n_lane = n_area * n_thr
    lane_area = np.repeat(np.arange(n_area), n_thr)
    lane_thr = np.tile(thresholds, n_area)

    # argmax over the detection's overlapping GTs, first GT on ties (devkit: `if ov > ovmax`).
    overlap = pair_iou > 0
    pd, pg, pi = pair_det[overlap], pair_gt[overlap], pair_iou[overlap]
    order = np.lexsort((pg, -pi, pd))
    pd, pg, pi = pd[order], pg[order], pi[order]
    first = np.r_[True, pd[1:] != pd[:-1]] if len(pd) else np.zeros(0, dtype=bool)
    best_gt = np.full(n_det, -1, dtype=np.int64)
    best_iou = np.full(n_det, -np.inf)
    best_gt[pd[first]] = pg[first]
    best_iou[pd[first]] = pi[first]

    passes = (best_iou[None, :] > lane_thr[:, None]) if strict else (best_iou[None, :] >= lane_thr[:, None])
    safe_gt = np.where(best_gt >= 0, best_gt, 0)
    hit_ignored = passes & gt_is_ignored[lane_area[:, None], safe_gt[None, :]]
    claims = passes & ~hit_ignored
    # The first claiming detection (in rank order) of each (lane, GT) is the TP.
    lane_idx, det_idx = np.nonzero(claims)  # row-major: lanes, then detections in rank order
    claim_key = lane_idx * max(n_gt, 1) + best_gt[det_idx]
    _, first_claim = np.unique(claim_key, return_index=True)
    det_is_tp = np.zeros((n_lane, n_det), dtype=bool)
    det_is_tp[lane_idx[first_claim], det_idx[first_claim]] = True
    det_is_ignored = hit_ignored | (~passes & det_is_out_of_range[lane_area])
    match_lane, match_det = np.nonzero(passes)
    return MatchResult(
        tp=LaneFlags.pack(det_is_tp),
        ignored=LaneFlags.pack(det_is_ignored),
        match_lane=match_lane,
        match_det=match_det,
        match_gt=best_gt[match_det],
    )


_speedups.register(
    "_cmatch.match_coco",
    "deteval._cmatch",
    _match_coco_compiled,
    _match_coco_numpy,
    declines=(_NOTHING, _OUTSIDE),
)
_speedups.register(
    "_cmatch.match_voc",
    "deteval._cmatch",
    _match_voc_compiled,
    _match_voc_numpy,
    declines=(_NOTHING, _OUTSIDE),
)
