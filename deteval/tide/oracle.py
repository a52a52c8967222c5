"""TIDE's error types and its oracle: classify each detection, then fix the errors of one type.

:func:`_classify` gives each kept detection its error code (``_CODE``) and, for ``loc`` /
``cls``, the ground truth it points at; :func:`_best_fixable` and :func:`_fixed_scenario` apply
TIDE's oracle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval import _speedups
from deteval.data import Detections, GroundTruth
from deteval.decomposition import run_index, segment_first_max
from deteval.grouping import candidate_pairs, group_rows
from deteval.tide.outcome import _Outcome
from deteval.tide.result import _CODE


def _pair_maxima(*args: np.ndarray) -> tuple[np.ndarray, tuple, tuple]:
    """Per detection: whether it has pairs, and the IoU maxima TIDE's error tests read.

    Detection ``j`` has the pairs ``run_start[rows[j]]`` to ``run_start[rows[j] + 1] - 1`` whose
    ground truth counts (``pair_gt`` indexes ``gt_class``, ``gt_is_counted``, ``gt_is_used``) and
    the class ``det_class[j]``. Returns ``has`` (bool), the maxima over the ground truths of the
    same class, of the other classes, of the used ones of the same class and of all (``(same,
    other, used, any)``; a pair outside the set counts as 0) and the ground truth of the first
    pair reaching the first two (``np.argmax`` semantics: a detection whose max is 0 points at
    its first pair); 0 and -1 without pairs. The compiled kernel ``deteval._canalyze`` runs it
    when built (``_pair_maxima_numpy`` is its bit-for-bit twin; NaN IoUs go to the twin).
    The arguments are :func:`_pair_maxima_numpy`'s: ``run_start, pair_gt, iou, rows, det_class,
    gt_class, gt_is_counted, gt_is_used``.
    """
    return _speedups.dispatch("_canalyze.pair_maxima", *args)


def _pair_maxima_kernel(*args: np.ndarray) -> tuple[np.ndarray, tuple, tuple] | _speedups.Decline:
    """:func:`_pair_maxima` by the compiled kernel; NaN IoUs are declined (the twin orders them).

    The arguments are :func:`_pair_maxima_numpy`'s.
    """
    run_start, pair_gt, iou, rows, det_class, gt_class, gt_is_counted, gt_is_used = args
    if np.isnan(iou).any():
        return _speedups.Decline("NaN IoU")
    n = len(rows)
    out_max = np.empty((n, 4))
    out_first = np.empty((n, 2), dtype=np.int64)
    has = np.empty(n, dtype=bool)
    _speedups.module_of("_canalyze.pair_maxima").pair_maxima(  # type: ignore[union-attr]
        *(np.ascontiguousarray(a, dtype=np.int64) for a in (run_start, pair_gt)),
        np.ascontiguousarray(iou, dtype=np.float64),
        *(np.ascontiguousarray(a, dtype=np.int64) for a in (rows, det_class, gt_class)),
        *(np.ascontiguousarray(a, dtype=bool) for a in (gt_is_counted, gt_is_used)),
        out_max,
        out_first,
        has,
    )
    return has, tuple(out_max.T), tuple(out_first.T)


def _pair_maxima_numpy(
    run_start: np.ndarray,
    pair_gt: np.ndarray,
    iou: np.ndarray,
    rows: np.ndarray,
    det_class: np.ndarray,
    gt_class: np.ndarray,
    gt_is_counted: np.ndarray,
    gt_is_used: np.ndarray,
) -> tuple[np.ndarray, tuple, tuple]:
    """The numpy twin of :func:`_pair_maxima` (``maximum.reduceat`` per detection's pairs)."""
    n = len(rows)
    index, at = run_index(run_start, rows, pair_gt, gt_is_counted)
    has = np.bincount(at, minlength=n) > 0
    maxima = tuple(np.zeros(n) for _ in range(4))
    firsts = tuple(np.full(n, -1, dtype=np.int64) for _ in range(2))
    if len(index) == 0:
        return has, maxima, firsts
    # + 0.0: a -0.0 IoU counts as +0.0 (as in the kernel); numpy's maximum would keep one zero
    # or the other depending on their order
    p_gt, values = pair_gt[index], iou[index] + 0.0
    is_same = gt_class[p_gt] == det_class[at]
    seg_start = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
    dets = at[seg_start]
    # np.argmax semantics: a detection whose max is 0 points at its first ground truth
    same_max, same_first = segment_first_max(np.where(is_same, values, 0.0), seg_start)
    other_max, other_first = segment_first_max(np.where(is_same, 0.0, values), seg_start)
    same_gt, other_gt = p_gt[same_first], p_gt[other_first]
    used_max = np.maximum.reduceat(np.where(is_same & gt_is_used[p_gt], values, 0.0), seg_start)
    any_max = np.maximum.reduceat(values, seg_start)
    for out, value in zip(
        maxima + firsts, (same_max, other_max, used_max, any_max, same_gt, other_gt), strict=True
    ):
        out[dets] = value
    return has, maxima, firsts


_speedups.register(
    "_canalyze.pair_maxima",
    "deteval._canalyze",
    _pair_maxima_kernel,
    _pair_maxima_numpy,
    declines=("NaN IoU",),
)


def _classify(
    gt: GroundTruth,
    dt: Detections,
    out: _Outcome,
    pair_iou_fn,
    *,
    foreground: float,
    background: float,
    pairs: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Error code of each kept detection (``_CODE``) and its target GT row (loc / cls), else -1.

    ``pairs``: :class:`deteval.decomposition.ImagePairs` whose IoUs are ``pair_iou_fn``'s, to
    select the pairs from instead of computing them (the same pairs, order and values).
    """
    n_kept = len(out.det_rows)
    code = np.full(n_kept, _CODE["tp"], dtype=np.int64)
    target = np.full(n_kept, -1, dtype=np.int64)
    wrong = np.flatnonzero(~out.is_tp)
    if len(wrong) == 0:
        return code, target
    det_rows = out.det_rows[wrong]
    is_used = np.zeros(len(gt), dtype=bool)
    is_used[out.det_gt[out.is_tp]] = True
    if pairs is not None:
        run_start, pair_gt, iou, rows = pairs.run_start, pairs.pair_gt, pairs.iou, det_rows
    else:
        counted = np.flatnonzero(out.gt_is_counted)
        gt_groups = group_rows(gt.image[counted].astype(np.int64))  # stable: file order in an image
        pair_det, sorted_gt = candidate_pairs(dt.image[det_rows].astype(np.int64), gt_groups)
        pair_gt = counted[gt_groups.order][sorted_gt]
        iou = pair_iou_fn(pair_gt, det_rows[pair_det]) if len(pair_det) else np.zeros(0)
        run_start = np.searchsorted(pair_det, np.arange(len(wrong) + 1))
        rows = np.arange(len(wrong))
    has, maxima, firsts = _pair_maxima(
        run_start, pair_gt, iou, rows, dt.category[det_rows], gt.category, out.gt_is_counted, is_used
    )
    code[wrong[~has]] = _CODE["bkg"]
    dets = np.flatnonzero(has)
    same_max, other_max, used_max, any_max = (m[dets] for m in maxima)
    same_gt, other_gt = (f[dets] for f in firsts)
    is_loc = (background <= same_max) & (same_max <= foreground)
    is_cls = ~is_loc & (other_max >= foreground)
    is_dupe = ~is_loc & ~is_cls & (used_max >= foreground)
    is_bkg = ~is_loc & ~is_cls & ~is_dupe & (any_max <= background)
    c = np.select(
        [is_loc, is_cls, is_dupe, is_bkg],
        [_CODE["loc"], _CODE["cls"], _CODE["dupe"], _CODE["bkg"]],
        _CODE["both"],
    )
    code[wrong[dets]] = c
    target[wrong[dets]] = np.select([is_loc, is_cls], [same_gt, other_gt], -1)
    return code, target


def _best_fixable(
    code: np.ndarray,
    target: np.ndarray,
    score: np.ndarray,
    is_used: np.ndarray,
    tie_keys: tuple,
    *,
    n_gt: int,
) -> tuple[np.ndarray, np.ndarray]:
    """TIDE's BestGTMatch: (is_best per kept detection, is_usable per GT row).

    Among loc / cls errors on an untaken GT, the highest score (first on ties) is the one a fix
    turns into a true positive; the GT is then "usable" (not missed).
    """
    is_fixable = ((code == _CODE["loc"]) | (code == _CODE["cls"])) & (target >= 0)
    is_fixable[is_fixable] = ~is_used[target[is_fixable]]
    cand = np.flatnonzero(is_fixable)
    cand = cand[np.lexsort(tuple(k[cand] for k in reversed(tie_keys)) + (-score[cand], target[cand]))]
    first = np.r_[True, target[cand][1:] != target[cand][:-1]] if len(cand) else np.zeros(0, bool)
    is_best = np.zeros(len(code), dtype=bool)
    is_best[cand[first]] = True
    is_usable = np.zeros(n_gt, dtype=bool)
    is_usable[target[cand]] = True
    return is_best, is_usable


def _fixed_scenario(
    kind: str,
    *,
    det_class: np.ndarray,
    was_tp: np.ndarray,
    present: np.ndarray,
    n_positive: np.ndarray,
    missed_per_class: np.ndarray,
    code: np.ndarray,
    target: np.ndarray,
    is_best: np.ndarray,
    gt_category: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(class, is_tp, keep, n_positive) of the data with the errors of ``kind`` fixed.

    ``miss``: the missed ground truth no longer counts; otherwise the errors of ``kind`` are
    dropped, except (``cls`` / ``loc``) the best one per GT, which becomes a true positive (of
    the GT's class for ``cls``).
    """
    cls, keep, is_tp, npos = det_class, present, was_tp, n_positive
    if kind == "miss":
        npos = n_positive - missed_per_class
    else:
        is_kind = code == _CODE[kind]
        keep = present & ~is_kind
        if kind in ("cls", "loc"):
            is_fixed = is_kind & is_best
            keep = keep | is_fixed
            is_tp = was_tp | is_fixed
            if kind == "cls":
                # only the fixed ones index the ground truth (there may be none: no annotations)
                cls = det_class.copy()
                cls[is_fixed] = gt_category[target[is_fixed]]
    return cls, is_tp, keep, npos
