"""TIDE error types (Bolya et al., ECCV 2020): how much AP each kind of mistake costs.

Every detection that is not a true positive gets one error type, tested in this order (IoU with
the non-ignored ground truths of its image; ``fg`` the foreground threshold, 0.5, ``bg`` the
background threshold, 0.1):

* ``loc``  (localization): its best same-class IoU is in ``[bg, fg]``;
* ``cls``  (classification): some other-class ground truth has IoU ``>= fg``;
* ``dupe`` (duplicate): a same-class ground truth already taken by a higher-scored detection
  has IoU ``>= fg``;
* ``bkg``  (background): every IoU is ``<= bg`` (also: the image has no ground truth);
* ``both`` (classification and localization): anything else.

A ground truth that no detection found and that no ``loc`` / ``cls`` error points at is
``miss``. Each type's dAP is the AP gained by fixing all errors of that type with TIDE's oracle,
the others left alone: the best-scored ``loc`` / ``cls`` error on an untaken ground truth becomes
a true positive (relabelled to the ground truth's class for ``cls``), the other errors of the
type are removed, and a fixed ``miss`` leaves the ground-truth count. The special errors:
``false_pos`` (every false positive scored below every true positive) and ``false_neg`` (every
missed object removed from the ground truth).

``mode="tidecv"`` reproduces the ``tidecv`` package exactly (its matching and its own AP);
``mode="protocol"`` reports the same error types under a deteval protocol (see
:func:`tide_errors`). Values are fractions, like AP (tidecv prints percent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from deteval.accumulate import accumulate
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import ConfigError
from deteval.evaluate import ground_truth_flags, match
from deteval.evaluate import pair_iou as protocol_pair_iou
from deteval.geometry import pair_box_iou, prepare_masks
from deteval.grouping import candidate_pairs, group_rows, rank_in_group
from deteval.matching import match_coco
from deteval.protocol import Protocol, resolve_protocol
from deteval.summary import mean_defined

__all__ = ["TideErrors", "tide_errors", "tide_ap", "MAIN_ERRORS", "SPECIAL_ERRORS", "TIDE_COCO_THRESHOLDS"]

#: Main error types in tidecv's order (ClassError, BoxError, OtherError, DuplicateError,
#: BackgroundError, MissedError).
MAIN_ERRORS = ("cls", "loc", "both", "dupe", "bkg", "miss")
SPECIAL_ERRORS = ("false_pos", "false_neg")
#: ``TIDE.COCO_THRESHOLDS``: typed decimals, not ``np.linspace`` (0.9, not 0.8999999999999999).
TIDE_COCO_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
MODES = ("tidecv", "protocol")

_CODE = {"tp": 0, "cls": 1, "loc": 2, "both": 3, "dupe": 4, "bkg": 5}


@dataclass(frozen=True)
class TideErrors:
    """dAP of each TIDE error type, overall and per class.

    Attributes
    ----------
    main : dict
        ``{"cls", "loc", "both", "dupe", "bkg", "miss"} -> dAP`` (>= 0, as tidecv clips).
    special : dict
        ``{"false_pos", "false_neg"} -> dAP`` (not clipped).
    ap : float
        The AP the errors are measured against (at the foreground threshold).
    ap_by_threshold : dict
        ``mode="tidecv"``: TIDE's AP at each of ``TIDE_COCO_THRESHOLDS`` (tidecv's
        ``evaluate_range``); its mean is what tidecv's summary prints as ``AP @ [50-95]``.
    counts : dict
        Number of errors of each main type.
    per_class : tuple of dict
        ``{category_id, name, ap, main, special}``; None where the class does not enter the mean.
    """

    main: dict
    special: dict
    ap: float
    mode: str
    foreground: float
    background: float
    counts: dict
    per_class: tuple
    ap_by_threshold: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The ``"errors"`` piece of ``deteval analyze --output`` (NaN -> null)."""
        out = {
            "main": {k: _json(v) for k, v in self.main.items()},
            "special": {k: _json(v) for k, v in self.special.items()},
            "per_class": [
                {
                    "category_id": c["category_id"],
                    "name": c["name"],
                    "ap": _json(c["ap"]),
                    "main": {k: _json(v) for k, v in c["main"].items()},
                    "special": {k: _json(v) for k, v in c["special"].items()},
                }
                for c in self.per_class
            ],
            "ap": _json(self.ap),
            "mode": self.mode,
            "thresholds": {"foreground": self.foreground, "background": self.background},
            "counts": dict(self.counts),
        }
        if self.ap_by_threshold:
            out["ap_by_threshold"] = {f"{t:g}": _json(v) for t, v in self.ap_by_threshold.items()}
            out["ap_50_95"] = _json(float(np.mean(list(self.ap_by_threshold.values()))))
        return out


def _json(value: float | None) -> float | None:
    return None if value is None or value != value else float(value)


# ----------------------------------------------------------------------------------------------
# TIDE's AP
# ----------------------------------------------------------------------------------------------


def tide_ap(
    point_class: np.ndarray,
    point_score: np.ndarray,
    point_is_tp: np.ndarray,
    n_positive: np.ndarray,
    *,
    tie_keys: tuple = (),
    is_included: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Per-class AP exactly as tidecv's ``APDataObject.get_ap`` computes it (as a fraction).

    Parameters
    ----------
    point_class : int64 (n_point,)
    point_score : float64 (n_point,)
    point_is_tp : bool (n_point,)
    n_positive : int64 (n_class,)
    tie_keys : tuple of (n_point,) arrays
        Order of equal scores, most significant first (tidecv: the order points were pushed,
        its sort is stable).
    is_included : bool (n_class,), optional
        Classes that enter the mean; the others are NaN. Default: classes with points or
        positives (tidecv's ``not is_empty()``).
    order : int64 (n_point,), optional
        The ranking (class, then descending score, then ``tie_keys``), when already known.

    Returns
    -------
    float64 (n_class,)
        0 for an included class without positives (tidecv: ``if num_gt_positives == 0: return
        0``), NaN for an excluded class.

    Notes
    -----
    tidecv: ``precision = tp / (tp + fp)`` (no epsilon), the envelope, recall points
    ``x / 100`` for x in 0..100 (typed fractions, not ``np.linspace``), ``searchsorted(recalls,
    x, "left")``, 0 beyond the last recall; the mean of the 101 values. pycocotools differs in
    the epsilon and in ten recall points one float step above x / 100.

    Examples
    --------
    >>> tide_ap(np.array([0, 0]), np.array([.9, .8]), np.array([True, False]), np.array([2])).round(6).tolist()
    [0.50495]
    """
    n_class = len(n_positive)
    n_positive = np.asarray(n_positive, dtype=np.int64)
    if is_included is None:
        is_included = (n_positive > 0) | (np.bincount(point_class, minlength=n_class) > 0)
    if order is None:
        order = np.lexsort(tuple(reversed(tie_keys)) + (-point_score, point_class))
    cls = point_class[order]
    is_tp = point_is_tp[order]
    bounds = np.searchsorted(cls, np.arange(n_class + 1))
    tp_cum = np.cumsum(is_tp)
    fp_cum = np.cumsum(~is_tp)
    recall_points = np.arange(101) / 100
    out = np.full(n_class, np.nan)
    for k in np.flatnonzero(is_included):
        npos = int(n_positive[k])
        if npos == 0:
            out[k] = 0.0
            continue
        lo, hi = bounds[k], bounds[k + 1]
        tp_pos = lo + np.flatnonzero(is_tp[lo:hi])
        base_tp = tp_cum[lo - 1] if lo > 0 else 0
        base_fp = fp_cum[lo - 1] if lo > 0 else 0
        t = (tp_cum[tp_pos] - base_tp).astype(np.float64)
        f = (fp_cum[tp_pos] - base_fp).astype(np.float64)
        precision = t / (t + f)
        envelope = np.maximum.accumulate(precision[::-1])[::-1]
        j_min = np.searchsorted(np.arange(npos + 1) / npos, recall_points, side="left")
        target = np.maximum(j_min, 1)
        reached = target <= len(tp_pos)
        y = np.where(
            reached, envelope[np.minimum(target, max(len(tp_pos), 1)) - 1] if len(tp_pos) else 0.0, 0.0
        )
        out[k] = sum(y.tolist()) / 101  # tidecv: sum(y_range) / len(y_range)
    return out


def _mean_included(ap: np.ndarray) -> float:
    """Tidecv's ``get_mAP``: the plain mean over the included classes (NaN if none)."""
    values = ap[~np.isnan(ap)]
    return float(sum(values.tolist()) / len(values)) if len(values) else float("nan")


# ----------------------------------------------------------------------------------------------
# Matching outcomes
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
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
        det_box[det_rows[by_group[pair_det]]], gt_box[gt_rows[pair_gt]], np.zeros(len(pair_det), bool)
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
        c_iou = pair_box_iou(det_box[det_rows[c_det]], gt_box[crowd_rows[c_gt]], np.ones(len(c_det), bool))
        best = np.zeros(n_kept)
        np.maximum.at(best, c_det, c_iou)
        is_ignored = (best[None, :] > thresholds[:, None]) & ~is_tp
    return is_tp, is_ignored, det_gt


def _outcome_tidecv(gt: GroundTruth, dt: Detections, foreground: float, max_dets: int | None) -> _Outcome:
    det_rows = _kept_tidecv(dt, max_dets)
    is_tp, is_ignored, det_gt = _tidecv_match(gt, dt, det_rows, np.array([foreground]))
    return _Outcome(
        det_rows=det_rows,
        is_tp=is_tp[0],
        is_ignored=is_ignored[0],
        det_gt=det_gt[0],
        gt_is_counted=~gt.is_crowd,
        tie_keys=(dt.image[det_rows], dt.order[det_rows]),
    )


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
    is_tp = table.det_is_tp[0]
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
        is_ignored=table.det_is_ignored[0],
        det_gt=det_gt,
        gt_is_counted=~is_ignored_gt,
        tie_keys=tie_keys,
    )


# ----------------------------------------------------------------------------------------------
# Error types and the oracle
# ----------------------------------------------------------------------------------------------


def _segment_max_and_first(
    values: np.ndarray, seg_start: np.ndarray, n_pair: int, pair_gt: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per detection (segment of pairs): max of ``values`` and the GT of its first occurrence.

    ``np.argmax`` semantics over the image's ground-truth row: entries that do not qualify are
    0, so a row whose max is 0 points at its first ground truth.
    """
    best = np.maximum.reduceat(values, seg_start)
    seg_of_pair = np.repeat(np.arange(len(seg_start)), np.diff(np.append(seg_start, n_pair)))
    position = np.where(values == best[seg_of_pair], np.arange(n_pair), n_pair)
    first = np.minimum.reduceat(position, seg_start)
    return best, pair_gt[first]


def _classify(
    gt: GroundTruth, dt: Detections, out: _Outcome, pair_iou_fn, *, foreground: float, background: float
) -> tuple[np.ndarray, np.ndarray]:
    """Error code of each kept detection (``_CODE``) and its target GT row (loc / cls), else -1."""
    n_kept = len(out.det_rows)
    code = np.full(n_kept, _CODE["tp"], dtype=np.int64)
    target = np.full(n_kept, -1, dtype=np.int64)
    wrong = np.flatnonzero(~out.is_tp)
    if len(wrong) == 0:
        return code, target
    counted = np.flatnonzero(out.gt_is_counted)
    gt_groups = group_rows(gt.image[counted].astype(np.int64))  # stable: file order in an image
    gt_rows = counted[gt_groups.order]
    det_rows = out.det_rows[wrong]
    pair_det, pair_gt = candidate_pairs(dt.image[det_rows].astype(np.int64), gt_groups)
    has_gt = np.bincount(pair_det, minlength=len(wrong)) > 0
    code[wrong[~has_gt]] = _CODE["bkg"]
    if len(pair_det) == 0:
        return code, target
    p_gt = gt_rows[pair_gt]
    iou = pair_iou_fn(p_gt, det_rows[pair_det])
    is_same = gt.category[p_gt] == dt.category[det_rows[pair_det]]
    is_used = np.zeros(len(gt), dtype=bool)
    is_used[out.det_gt[out.is_tp]] = True
    seg_start = np.flatnonzero(np.r_[True, pair_det[1:] != pair_det[:-1]])
    dets = pair_det[seg_start]
    n_pair = len(pair_det)
    same_max, same_gt = _segment_max_and_first(np.where(is_same, iou, 0.0), seg_start, n_pair, p_gt)
    other_max, other_gt = _segment_max_and_first(np.where(is_same, 0.0, iou), seg_start, n_pair, p_gt)
    used_max = np.maximum.reduceat(np.where(is_same & is_used[p_gt], iou, 0.0), seg_start)
    any_max = np.maximum.reduceat(iou, seg_start)
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


#: A pair IoU function: (GT rows, detection rows) -> IoU of each pair.
PairIou = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: AP of one scenario: (class, score, is_tp, keep, n_positive, outcome, *, fixed_order) -> (per class, mean).
ApFn = Callable[..., tuple[np.ndarray, float]]


def _check_tide_options(mode: str, foreground: float, background: float) -> None:
    """Refuse an unknown mode or a threshold outside [0, 1].

    Raises
    ------
    ConfigError
        Unknown ``mode``, or ``foreground`` / ``background`` outside [0, 1].
    """
    if mode not in MODES:
        raise ConfigError(f"tide_errors: mode must be one of {list(MODES)}, found {mode!r}")
    for name, value in (("foreground", foreground), ("background", background)):
        if not (0.0 <= value <= 1.0):
            raise ConfigError(f"tide_errors: {name} threshold must be in [0, 1], found {value!r}")


def _setup_tidecv(
    gt: GroundTruth,
    dt: Detections,
    protocol: str | Protocol | None,
    foreground: float,
    max_dets: int | None,
) -> tuple[_Outcome, PairIou, ApFn]:
    """``mode="tidecv"``: tidecv's outcome, its box IoU and its AP.

    Raises
    ------
    ConfigError
        ``protocol`` given with ``iou_type="segm"`` (tidecv scores boxes only).
    """
    if protocol is not None and resolve_protocol(protocol).iou_type == "segm":
        raise ConfigError(
            "tide_errors: mode='tidecv' scores boxes only; use mode='protocol' for iou_type='segm'"
        )
    out = _outcome_tidecv(gt, dt, foreground, max_dets)
    det_box = boxes_as(dt.box, dt.box_format, "xywh")
    gt_box = boxes_as(gt.box, gt.box_format, "xywh")

    def pair_iou_fn(g: np.ndarray, d: np.ndarray) -> np.ndarray:
        return pair_box_iou(det_box[d], gt_box[g], np.zeros(len(g), bool))

    return out, pair_iou_fn, _tidecv_ap_fn


def _setup_protocol(
    gt: GroundTruth, dt: Detections, protocol: str | Protocol | None, foreground: float
) -> tuple[_Outcome, PairIou, ApFn]:
    """``mode="protocol"``: the protocol's outcome at the single IoU ``foreground``, its IoU and AP.

    Raises
    ------
    ConfigError
        No protocol given.
    """
    if protocol is None:
        raise ConfigError(
            "tide_errors: mode='protocol' needs a protocol (a preset name, a "
            "YAML file or a Protocol), found None"
        )
    eff = _single_lane(resolve_protocol(protocol), foreground)
    out = _outcome_protocol(gt, dt, eff)
    masks = prepare_masks(gt, dt, eff) if eff.iou_type == "segm" else None

    def pair_iou_fn(g: np.ndarray, d: np.ndarray) -> np.ndarray:
        return protocol_pair_iou(gt, dt, g, d, np.zeros(len(g), bool), eff, masks)

    return out, pair_iou_fn, _protocol_ap_fn(eff)


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
                cls = np.where(is_fixed, gt_category[np.maximum(target, 0)], det_class)
    return cls, is_tp, keep, npos


def _tidecv_ap_by_threshold(
    gt: GroundTruth,
    dt: Detections,
    out: _Outcome,
    det_class: np.ndarray,
    score: np.ndarray,
    n_positive: np.ndarray,
) -> dict:
    """TIDE's AP (mean over classes) at each of ``TIDE_COCO_THRESHOLDS``."""
    by_threshold = {}
    thresholds = np.array(TIDE_COCO_THRESHOLDS)
    is_tp_t, is_ignored_t, _ = _tidecv_match(gt, dt, out.det_rows, thresholds)
    for i, t in enumerate(TIDE_COCO_THRESHOLDS):
        keep = ~is_ignored_t[i]
        by_threshold[t] = _tidecv_ap_fn(
            det_class, score, is_tp_t[i], keep, n_positive, out, fixed_order=False
        )[1]
    return by_threshold


def tide_errors(
    gt: GroundTruth,
    dt: Detections,
    protocol: str | Protocol | None = None,
    *,
    mode: str = "tidecv",
    foreground: float = 0.5,
    background: float = 0.1,
    max_dets: int | None = 100,
    ap_range: bool = True,
) -> TideErrors:
    """TIDE's error breakdown: the dAP of each error type, overall and per class.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : str or Protocol, optional
        Required for ``mode="protocol"``; ignored by ``mode="tidecv"``.
    mode : {"tidecv", "protocol"}
        ``"tidecv"`` reproduces the ``tidecv`` package (``TIDE.evaluate`` on boxes): at most
        ``max_dets`` detections per image across classes; greedy matching per class, ties to
        the first ground truth; crowd regions are not matched but swallow unmatched detections
        whose crowd IoU is > ``foreground``; no ``ignore`` / ``difficult`` flags, no area
        ranges; TIDE's 101-point AP (:func:`tide_ap`), where a class with detections but no
        ground truth scores 0 and counts in the mean. ``"protocol"`` changes exactly these: the
        protocol's matching (rule, ties, crowd, difficult, ignore flags, box convention, IoU
        comparison) at the single IoU ``foreground``, its first area range and largest
        ``max_dets`` (per image and class), its interpolation and tie order, and its mean
        (classes with ground truth). The error types, their tests and the oracle are the same.
    foreground, background : float
        TIDE's ``pos_threshold`` and ``background_threshold``.
    max_dets : int or None
        ``mode="tidecv"``: detections kept per image (tidecv: 100).
    ap_range : bool
        ``mode="tidecv"``: also TIDE's AP at each of ``TIDE_COCO_THRESHOLDS``.

    Returns
    -------
    TideErrors

    Raises
    ------
    ConfigError
        Unknown mode, thresholds outside [0, 1], or ``mode="tidecv"`` with ``iou_type="segm"``.

    Notes
    -----
    The dAP of a main error type is ``max(AP_fixed - AP, 0)`` as tidecv reports it; tidecv
    rebuilds the fixed data with the error detections first and the true positives after, so
    its ties in score are ordered that way (reproduced in ``"tidecv"`` mode, where even fixing
    nothing can move AP by a tie; the clip hides it). Per class, the same formula on the class's
    AP.

    Examples
    --------
    >>> from deteval.io import load_detections, load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> d = load_detections([{"image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "score": .9}], g)
    >>> e = tide_errors(g, d)
    >>> e.counts["cls"], e.ap, e.main["cls"]
    (1, 0.0, 1.0)
    """
    _check_tide_options(mode, foreground, background)
    n_class = gt.n_classes
    by_threshold: dict = {}
    if mode == "tidecv":
        out, pair_iou_fn, ap_fn = _setup_tidecv(gt, dt, protocol, foreground, max_dets)
    else:
        out, pair_iou_fn, ap_fn = _setup_protocol(gt, dt, protocol, foreground)

    code, target = _classify(gt, dt, out, pair_iou_fn, foreground=foreground, background=background)
    rows = out.det_rows
    det_class = dt.category[rows]
    score = dt.score[rows]
    if mode == "tidecv":
        ties = tuple(reversed(out.tie_keys))
        out = replace(
            out,
            det_class=det_class,
            det_score=score,
            order_first=np.lexsort(ties + (-score, det_class)),
            order_fixed=np.lexsort(ties + (out.is_tp, -score, det_class)),
        )
    n_positive = np.bincount(gt.category[out.gt_is_counted], minlength=n_class)
    is_used = np.zeros(len(gt), dtype=bool)
    is_used[out.det_gt[out.is_tp]] = True

    is_best, is_usable = _best_fixable(code, target, score, is_used, out.tie_keys, n_gt=len(gt))
    is_missed = out.gt_is_counted & ~is_used & ~is_usable
    missed_per_class = np.bincount(gt.category[is_missed], minlength=n_class)
    unused_per_class = np.bincount(gt.category[out.gt_is_counted & ~is_used], minlength=n_class)

    present = ~out.is_ignored
    was_tp = out.is_tp
    base = ap_fn(det_class, score, was_tp, present, n_positive, out, fixed_order=False)
    ap = base[1]

    main, class_main = {}, {}
    for kind in MAIN_ERRORS:
        cls, is_tp, keep, npos = _fixed_scenario(
            kind,
            det_class=det_class,
            was_tp=was_tp,
            present=present,
            n_positive=n_positive,
            missed_per_class=missed_per_class,
            code=code,
            target=target,
            is_best=is_best,
            gt_category=gt.category,
        )
        fixed_class_ap, fixed_ap = ap_fn(cls, score, is_tp, keep, npos, out, fixed_order=True)
        main[kind] = max(fixed_ap - ap, 0.0)
        class_main[kind] = np.maximum(fixed_class_ap - base[0], 0.0)
    fp_scores = np.where(was_tp, 1.0, 0.0)
    fp_class, fp_value = ap_fn(det_class, fp_scores, was_tp, present, n_positive, out, fixed_order=True)
    fn_class, fn_value = ap_fn(
        det_class, score, was_tp, present, n_positive - unused_per_class, out, fixed_order=True
    )
    special = {"false_pos": fp_value - ap, "false_neg": fn_value - ap}
    class_special = {"false_pos": fp_class - base[0], "false_neg": fn_class - base[0]}
    counts = {kind: int(np.sum(code == _CODE[kind])) for kind in MAIN_ERRORS if kind != "miss"}
    counts["miss"] = int(is_missed.sum())
    counts = {kind: counts[kind] for kind in MAIN_ERRORS}
    per_class = tuple(
        {
            "category_id": int(gt.category_id[k]),
            "name": gt.category_name[k],
            "ap": float(base[0][k]),
            "main": {kind: float(class_main[kind][k]) for kind in MAIN_ERRORS},
            "special": {kind: float(class_special[kind][k]) for kind in SPECIAL_ERRORS},
        }
        for k in range(n_class)
    )
    if mode == "tidecv" and ap_range:
        by_threshold = _tidecv_ap_by_threshold(gt, dt, out, det_class, score, n_positive)
    return TideErrors(
        main=main,
        special=special,
        ap=ap,
        mode=mode,
        foreground=float(foreground),
        background=float(background),
        counts=counts,
        per_class=per_class,
        ap_by_threshold=by_threshold,
    )


def _tidecv_ap_fn(
    cls: np.ndarray,
    score: np.ndarray,
    is_tp: np.ndarray,
    keep: np.ndarray,
    npos: np.ndarray,
    out: _Outcome,
    *,
    fixed_order: bool,
) -> tuple[np.ndarray, float]:
    """Tidecv's AP of one scenario: (per class, mean). ``fixed_order``: errors before TPs on ties.

    tidecv pushes data points image by image in score order (the first run), but
    ``TIDERun.fix_errors`` pushes every error first and the true positives after.
    """
    included = (npos > 0) | (np.bincount(cls[keep], minlength=len(npos)) > 0)
    base = out.order_fixed if fixed_order else out.order_first
    if base is not None and cls is out.det_class and score is out.det_score:
        # Same classes and scores: the precomputed ranking restricted to the kept points.
        ranked = base[keep[base]]
        per = tide_ap(cls, score, is_tp, npos, is_included=included, order=ranked)
        return per, _mean_included(per)
    tie = tuple(k[keep] for k in out.tie_keys)
    if fixed_order:
        tie = (out.is_tp[keep],) + tie
    per = tide_ap(cls[keep], score[keep], is_tp[keep], npos, tie_keys=tie, is_included=included)
    return per, _mean_included(per)


def _protocol_ap_fn(protocol: Protocol):
    """AP of one scenario under the protocol's interpolation, ties and mean."""

    def ap_fn(
        cls: np.ndarray,
        score: np.ndarray,
        is_tp: np.ndarray,
        keep: np.ndarray,
        npos: np.ndarray,
        out: _Outcome,
        *,
        fixed_order: bool,
    ) -> tuple[np.ndarray, float]:
        rows = np.flatnonzero(keep)
        tie = tuple(k[rows] for k in out.tie_keys)
        ranking = np.lexsort(tuple(reversed(tie)) + (-score[rows], cls[rows]))
        n = len(rows)
        acc = accumulate(
            is_tp[rows][None, :],
            np.zeros((1, n), bool),
            score[rows],
            cls[rows],
            np.zeros(n, np.int64),
            ranking,
            np.asarray(npos, np.int64)[:, None],
            protocol.replace(max_dets=None),
        )
        if acc.precision.shape[1] > 0 and protocol.ap_method == "101_point":
            per = np.array([mean_defined(acc.precision[0, :, k, 0, 0]) for k in range(len(npos))])
        else:
            per = acc.ap[0, :, 0, 0]
        return per, mean_defined(per)

    return ap_fn
