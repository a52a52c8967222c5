"""TIDE's error breakdown: :func:`tide_errors`, the dAP of each error type.

Checks the options, sets up the mode (tidecv's outcome, IoU and AP, or a protocol's), classifies
the errors, scores each fixed scenario and assembles :class:`~deteval.tide.result.TideErrors`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, cast

import numpy as np

from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import ConfigError
from deteval.evaluate import pair_iou as protocol_pair_iou
from deteval.geometry import pair_box_iou, prepare_masks
from deteval.pooling import pooled_for
from deteval.protocol import Protocol, resolve_protocol
from deteval.tide.ap import _protocol_ap_fn, _tidecv_ap_fn, ranking
from deteval.tide.oracle import _best_fixable, _classify, _fixed_scenario
from deteval.tide.outcome import _Outcome, _outcome_protocol, _outcome_tidecv, _single_lane
from deteval.tide.result import _CODE, MAIN_ERRORS, MODES, SPECIAL_ERRORS, TIDE_COCO_THRESHOLDS, TideErrors

if TYPE_CHECKING:
    from deteval.decomposition import ImagePairs

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
    ap_thresholds: tuple = (),
) -> tuple[_Outcome, PairIou, ApFn, tuple]:
    """``mode="tidecv"``: tidecv's outcome, its box IoU, its AP, and the matching at ``ap_thresholds``.

    The outcome and the lanes of ``ap_thresholds`` (``(is_tp, is_ignored)``, one row per
    threshold) come from one matching: its lanes are independent.

    Raises
    ------
    ConfigError
        ``protocol`` given with ``iou_type="segm"`` (tidecv scores boxes only).
    """
    if protocol is not None and resolve_protocol(protocol).iou_type == "segm":
        raise ConfigError(
            "tide_errors: mode='tidecv' scores boxes only; use mode='protocol' for iou_type='segm'"
        )
    out, lanes = _outcome_tidecv(gt, dt, foreground, max_dets, ap_thresholds)
    det_box = boxes_as(dt.box, dt.box_format, "xywh")
    gt_box = boxes_as(gt.box, gt.box_format, "xywh")

    def pair_iou_fn(g: np.ndarray, d: np.ndarray) -> np.ndarray:
        return pair_box_iou(det_box[d], gt_box[g], np.zeros(len(g), bool))

    return out, pair_iou_fn, _tidecv_ap_fn, lanes


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


def _tidecv_ap_by_threshold(
    lanes: tuple,
    out: _Outcome,
    det_class: np.ndarray,
    score: np.ndarray,
    n_positive: np.ndarray,
) -> dict:
    """TIDE's AP (mean over classes) at each of ``TIDE_COCO_THRESHOLDS`` (``lanes``: their matching)."""
    by_threshold = {}
    is_tp_t, is_ignored_t = lanes
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
    pairs: ImagePairs | None = None,
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
    pairs : ImagePairs, optional
        :func:`deteval.decomposition.image_pairs` of ``gt`` and ``dt``: their box IoUs are
        reused where they are the ones TIDE measures (tidecv: continuous boxes; a ``bbox``
        protocol: its box convention), for the same numbers.

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
    lanes: tuple = ()
    if mode == "tidecv":
        ap_thresholds = TIDE_COCO_THRESHOLDS if ap_range else ()
        out, pair_iou_fn, ap_fn, lanes = _setup_tidecv(gt, dt, protocol, foreground, max_dets, ap_thresholds)
        convention = "continuous"
    else:
        if protocol is not None:  # class_agnostic: one class
            pooled_gt, dt = pooled_for(gt, dt, resolve_protocol(protocol))
            if pooled_gt is not gt:
                gt, pairs, n_class = pooled_gt, None, 1  # pairs of the unpooled values: rows moved
        out, pair_iou_fn, ap_fn = _setup_protocol(gt, dt, protocol, foreground)
        eff = resolve_protocol(cast(Protocol, protocol))
        convention = eff.box_convention if eff.iou_type == "bbox" else ""
    shared = pairs if pairs is not None and pairs.convention == convention else None
    code, target = _classify(
        gt, dt, out, pair_iou_fn, foreground=foreground, background=background, pairs=shared
    )
    rows = out.det_rows
    det_class = dt.category[rows]
    score = dt.score[rows]
    if mode == "tidecv":
        by_score = ranking(det_class, score)
        out = replace(
            out,
            det_class=det_class,
            det_score=score,
            order_first=ranking(det_class, score, out.tie_keys, base=by_score),
            order_fixed=ranking(det_class, score, (out.is_tp, *out.tie_keys), base=by_score),
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
        by_threshold = _tidecv_ap_by_threshold(lanes, out, det_class, score, n_positive)
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
