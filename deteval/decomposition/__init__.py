"""The AP decomposition: whether a class's precision is lost to localization or to classification.

Definitions (for one class ``c``, an IoU threshold ``t`` and a confidence cut ``delta``: only
detections with ``score >= delta`` count). Every detection ``d`` is assigned, independently of
the others, to the ground truth it overlaps most in its image, whatever its class: ``IoU_d`` is
that largest IoU and ``c*_d`` that ground truth's class. This is *not* a one-to-one matching: two
detections on one object both count. Ties in the largest IoU go to the first ground truth in file
order (the lowest row); a detection in an image without ground truth has ``IoU_d = 0`` and no
``c*_d``. Ground truths the protocol ignores (crowd regions, difficult objects, ``ignore``
flags) are not candidates and do not count as positives. ``d`` is *localized* if ``IoU_d >= t``.

* precision: ``P_D = #{c_d = c, localized, c*_d = c} / #{c_d = c}``, factorised as
  ``P_L = #{c_d = c, localized} / #{c_d = c}`` (localization) times
  ``P_C|L = #{c_d = c, localized, c*_d = c} / #{c_d = c, localized}`` (classification, given
  localization);
* recall: ``R_D = #{c*_d = c, localized, c_d = c} / #{ground truth of class c}`` as
  ``R_L = #{c*_d = c, localized} / #{ground truth of class c}`` times
  ``R_C|L = #{c*_d = c, localized, c_d = c} / #{c*_d = c, localized}``.

The recall counts detections, not objects, so several detections on one object push it above 1:
the curves are not clipped (the factorisation holds at every point), and an AP integrates the
curve over recall in [0, 1] (recall above 1 counts as 1). A ratio with a zero denominator is
undefined: NaN in arrays, ``null`` in JSON, and the point is left out of the AP.

Confidences: every distinct score of a detection that can move one of the class's counts (its
predicted class is ``c``, or it is localized on a ground truth of class ``c``), descending.

Masks (``iou_type="segm"``): a third factor, segmentation given class and localization. The
assignment and localization use the *box* IoU of the masks' tight boxes (each mask's extent as
written: a polygon's vertex bounds, an RLE's ``toBbox``), so ``L`` and ``C|L`` are the box
factors of the masks. A detection localized on a ground truth of its own class is then
*segmented* if the mask IoU (the protocol's ``mask_iou``, raster or exact) with *that* ground
truth is ``>= t``, and

* ``P_S|C,L = R_S|C,L = #{c_d = c, localized, c*_d = c, segmented} / #{c_d = c, localized,
  c*_d = c}``;
* ``D`` counts the segmented detections: ``P_D = #{c_d = c, localized, c*_d = c, segmented} /
  #{c_d = c}``, so ``P_D = P_L * P_C|L * P_S|C,L`` and ``R_D = R_L * R_C|L * R_S|C,L`` at every
  point. This ``D`` nests the mask test inside the box assignment (a decision: the factorisation
  holds exactly); it is not "largest mask IoU over all ground truths", which a detection can pass
  on another object than the one its box found.

Scalar summaries. ``AP_D`` and ``AP_L`` are the APs of the D and L curves (the protocol's
interpolation). The conditional factors are ratios of APs, ``AP_CgL = AP_D / AP_L`` (masks:
``AP_CgL = AP_LC / AP_L`` and ``AP_SgCL = AP_D / AP_LC``, ``AP_LC`` the AP of the box curve
"localized and rightly classified", ``P_L * P_C|L`` against ``R_L * R_C|L``), so that ``AP_D =
AP_L * AP_CgL (* AP_SgCL)``: the share of the localization AP that classification keeps. They
are not the APs of the ``C|L`` / ``S|C,L`` curves: those curves start at 1 with precision 1
whenever the class's most confident localized detection is rightly classified, and an
interpolated envelope is then 1 whatever follows (1.0 for every class of a detector with 7%
class confusion). Since ``P_D <= P_L`` and ``R_D <= R_L`` at every point, ``AP_D <= AP_L``
(likewise ``AP_D <= AP_LC <= AP_L``) and the factors lie in [0, 1]; where the denominator is 0
(nothing of the class localized) the factor is undefined: NaN, ``null`` in JSON. The curves
themselves are unchanged.
"""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.accumulate import recall_thresholds
from deteval.data import Detections, GroundTruth
from deteval.decomposition.pairs import (
    ImagePairs,
    _first_max,
    image_pairs,
    mask_boxes,
    run_index,
    segment_first_max,
)
from deteval.errors import ConfigError
from deteval.evaluate import ground_truth_flags, match
from deteval.geometry import pair_mask_iou, prepare_masks
from deteval.grouping import lexsort
from deteval.pooling import pool_categories, pooled_for, pooled_rows
from deteval.protocol import Protocol, resolve_protocol

__all__ = [
    "ImagePairs",
    "run_index",
    "segment_first_max",
    "image_pairs",
    "Decomposition",
    "ClassDecomposition",
    "decompose",
    "max_iou_assignment",
    "interpolated_ap",
    "mask_boxes",
    "matched_assignment",
    "CURVE_NAMES",
    "SEGM_CURVE_NAMES",
    "VARIANTS",
]


#: The decomposition's variants: the documented one (largest IoU) and the protocol's matching.
VARIANTS = ("max_iou", "matched")


CURVE_NAMES = ("precision_D", "recall_D", "precision_L", "recall_L", "precision_CgL", "recall_CgL")


#: The third factor's curves, present for ``iou_type="segm"`` only.
SEGM_CURVE_NAMES = ("precision_SgCL", "recall_SgCL")


@frozen(eq=False)
class ClassDecomposition:
    """One class: the curves at each confidence and their APs.

    Attributes
    ----------
    category_id : int
    name : str
    n_gt : int
    confidence : float64 (n_conf,)
        Descending.
    curves : dict
        ``CURVE_NAMES`` (and ``SEGM_CURVE_NAMES`` for masks) -> float64 (n_conf,), NaN where
        undefined.
    ap : dict
        ``{"AP_D", "AP_L", "AP_CgL"}`` (and ``"AP_SgCL"`` for masks) -> float (NaN for a class
        without ground truth). ``AP_D`` and ``AP_L`` are the APs of the D and L curves;
        ``AP_CgL = AP_D / AP_L`` (masks: ``AP_LC / AP_L`` and ``AP_SgCL = AP_D / AP_LC``, with
        ``AP_LC`` the AP of the box curve "localized and rightly classified"), NaN where the
        denominator is 0; so ``AP_D = AP_L * AP_CgL (* AP_SgCL)``. See the module docstring.
    """

    category_id: int
    name: str
    n_gt: int
    confidence: np.ndarray
    curves: dict
    ap: dict

    def to_dict(self, *, arrays: bool = False) -> dict:
        """One entry of the decomposition's ``"per_class"`` list (NaN -> null).

        ``arrays``: the curves as float64 arrays (NaN kept), not lists (see
        :meth:`Decomposition.to_dict`).
        """
        names = [k for k in CURVE_NAMES + SEGM_CURVE_NAMES if k in self.curves]
        return {
            "category_id": self.category_id,
            "name": self.name,
            **{k: _json(v) for k, v in self.ap.items()},
            "curve": {
                "confidence": self.confidence if arrays else self.confidence.tolist(),
                **{k: self.curves[k] if arrays else _json_list(self.curves[k]) for k in names},
            },
        }


@frozen(eq=False)
class Decomposition:
    """The decomposition of every class at one IoU threshold.

    Attributes
    ----------
    iou_threshold : float
    per_class : tuple of ClassDecomposition
    mean : dict
        ``{"AP_D", "AP_L", "AP_CgL"}`` (and ``"AP_SgCL"`` for masks): ``AP_D`` and ``AP_L`` are
        means of the per-class APs over classes with ground truth; the conditional factors are
        ratios of those means (``mean AP_CgL = mean AP_D / mean AP_L``), not means of ratios,
        so the mean factors as each class does.
    """

    iou_threshold: float
    per_class: tuple
    mean: dict

    def to_dict(self, *, arrays: bool = False) -> dict:
        """The ``"decomposition"`` piece of ``deteval analyze --output`` (NaN -> null).

        ``arrays``: the curves as float64 arrays (NaN kept) instead of lists, for
        :func:`deteval.report.dumps_analysis`, which writes them as it writes the lists.
        """
        return {
            "iou_threshold": self.iou_threshold,
            "per_class": [c.to_dict(arrays=arrays) for c in self.per_class],
            "mean": {k: _json(v) for k, v in self.mean.items()},
        }


def _json(value: float) -> float | None:
    return None if value != value else float(value)


def _json_list(values: np.ndarray) -> list:
    """``[_json(x) for x in values]``, a loop over the NaN entries only."""
    out = values.tolist()
    for i in np.flatnonzero(np.isnan(values)).tolist():
        out[i] = None
    return out


def max_iou_assignment(
    gt: GroundTruth, dt: Detections, protocol: Protocol, *, pairs: ImagePairs | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each detection's largest IoU with a counted ground truth of its image, and that GT's class.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol
        Its box convention and its ignored ground truths (first area range) apply.
    pairs : ImagePairs, optional
        The image pairs of ``gt`` and ``dt`` (:func:`image_pairs`), to reuse their IoUs; computed
        here when not given or in another box convention.

    Returns
    -------
    iou : float64 (n_det,)
        0 where the image has no counted ground truth.
    gt_class : int64 (n_det,)
        Class index of the argmax ground truth (the first in file order on ties); -1 where the
        image has none or every IoU is 0.
    """
    if protocol.iou_type != "bbox":
        raise ConfigError(
            f"max_iou_assignment: iou_type {protocol.iou_type!r}: box IoU only; "
            f"decompose() handles 'segm' (with the masks' tight boxes)"
        )
    return _max_assignment(gt, dt, protocol, pairs)[:2]


def _max_assignment(
    gt: GroundTruth, dt: Detections, protocol: Protocol, pairs: ImagePairs | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(largest IoU, its GT's class, its GT row) per detection; -1 class and row where none."""
    if pairs is None or pairs.convention != protocol.box_convention:
        pairs = image_pairs(gt, dt, convention=protocol.box_convention)
    is_counted = ~ground_truth_flags(gt, protocol)[0][0]
    if len(pairs.iou) == 0:
        return np.zeros(len(dt)), np.full(len(dt), -1, dtype=np.int64), np.full(len(dt), -1, dtype=np.int64)
    first = _first_max(pairs, np.arange(len(dt)), is_counted)
    has_pair = first >= 0
    iou = np.where(has_pair, pairs.iou[first], 0.0)
    gt_row = np.where(has_pair & (iou > 0), pairs.pair_gt[first], -1)
    gt_class = np.where(gt_row >= 0, gt.category[gt_row], -1).astype(np.int64)
    return iou, gt_class, gt_row


def matched_assignment(
    gt: GroundTruth, dt: Detections, protocol: Protocol, *, iou_threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``matched`` variant: localization by the protocol's own one-to-one matching.

    The protocol's matching rule, crowd and ignore rules, box convention and IoU comparison, at
    the single threshold ``t``, on its first area range, without ``max_dets``, run with every
    class pooled (``class_agnostic``), so that a detection can be matched to an object of
    another class: it is *localized* if matched, and ``c*_d`` is its object's class. Unlike the
    largest IoU, one object localizes one detection at most (duplicates are not localized).
    Detections the matching ignores (on a crowd region, outside the area range) take no part.

    Returns
    -------
    is_loc : bool (n_det,)
    gt_class : int64 (n_det,)
        Class index of the matched object; -1 where unmatched.
    is_kept : bool (n_det,)
        False for the detections the matching ignores.
    """
    if protocol.federated_labels == "lvis":
        raise ConfigError(
            f"decompose: variant 'matched' pools the classes, which LVIS' federated labels of "
            f"protocol {protocol.name!r} cannot; use variant 'max_iou'"
        )
    lane = protocol.replace(
        class_agnostic=True,
        iou_thresholds=(float(iou_threshold),),
        area_ranges=(protocol.area_ranges[0],),
        max_dets=None,
        max_dets_per_class=None,
    )
    pooled_gt, pooled_dt = pool_categories(gt, dt)
    table = match(pooled_gt, pooled_dt, lane)
    # Table rows -> detection rows: the pooled detections' tie rank is a permutation.
    det_row = np.argsort(pooled_dt.order)[table.det_order]
    gt_row = pooled_rows(gt)
    is_loc = np.zeros(len(dt), dtype=bool)
    is_loc[det_row] = table.det_is_tp[0]
    is_kept = np.ones(len(dt), dtype=bool)
    is_kept[det_row] = ~table.det_is_ignored[0]
    gt_class = np.full(len(dt), -1, dtype=np.int64)
    lane0 = table.match_lane == 0
    matched_det = det_row[table.match_det[lane0]]
    matched_class = gt.category[gt_row[table.match_gt[lane0]]]
    tp = is_loc[matched_det]
    gt_class[matched_det[tp]] = matched_class[tp]
    return is_loc, gt_class, is_kept


def interpolated_ap(recall: np.ndarray, precision: np.ndarray, protocol: Protocol) -> float:
    """AP of a sequence of (recall, precision) points under the protocol's ``ap_method``.

    The interpolated precision at recall ``r`` is the largest precision of a point with recall
    ``>= r`` (0 if none); undefined (NaN) points are left out and recall is clipped to 1.

    * ``101_point`` / ``11_point``: the mean of the interpolated precision at the protocol's
      recall points; on an ordinary ranked list this equals
      :func:`deteval.accumulate.accumulate` (pycocotools' ``accumulate`` / the devkit's 11-point
      loop), up to pycocotools' ``np.spacing(1)`` in the precision;
    * ``all_point``: the area under the interpolated precision (the devkit's ``VOCap.m``), on
      the points sorted by recall.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> interpolated_ap(np.array([.5, .5, 1.]), np.array([1., .5, 2 / 3]), get_protocol("voc2010"))
    0.8333333333333333
    """
    recall = np.asarray(recall, dtype=np.float64)
    precision = np.asarray(precision, dtype=np.float64)
    ok = ~(np.isnan(recall) | np.isnan(precision))
    rec = np.minimum(recall[ok], 1.0)
    prec = precision[ok]
    order = np.argsort(rec, kind="stable")
    rec, prec = rec[order], prec[order]
    if protocol.ap_method == "all_point":
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.concatenate(([0.0], prec, [0.0]))
        mpre = np.maximum.accumulate(mpre[::-1])[::-1]
        i = np.flatnonzero(mrec[1:] != mrec[:-1])
        return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))
    thresholds = recall_thresholds(protocol)
    envelope = np.append(np.maximum.accumulate(prec[::-1])[::-1], 0.0)
    q = envelope[np.searchsorted(rec, thresholds, side="left")]
    if protocol.ap_method == "101_point":
        return float(np.mean(q))
    return float(np.cumsum(q / 11.0)[-1])


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.full(len(a), np.nan)
    np.divide(a, b, out=out, where=b > 0)
    return out


def unsupported_reason(protocol: Protocol) -> str | None:
    """Why :func:`decompose` refuses ``protocol`` (its error message), or None when it accepts it.

    Examples
    --------
    >>> from deteval.protocol import resolve_protocol
    >>> unsupported_reason(resolve_protocol("coco")) is None
    True
    """
    if protocol.ap_method not in ("101_point", "11_point", "all_point"):
        return (
            f"decompose: protocol {protocol.name!r} uses ap_method {protocol.ap_method}; the "
            f"decomposition's APs support 101_point, 11_point and all_point"
        )
    if protocol.score_ties != "ranked":  # the decomposition's curves rank detections one by one
        return f"decompose: protocol {protocol.name!r}: score_ties: expected 'ranked', found {protocol.score_ties!r}"
    if protocol.iou_type not in ("bbox", "segm"):
        return (
            f"decomposition: iou_type {protocol.iou_type!r} is not available; use iou_type 'bbox' or 'segm'"
        )
    return None


def decompose(
    gt: GroundTruth,
    dt: Detections,
    protocol: str | Protocol = "coco",
    *,
    iou_threshold: float = 0.5,
    variant: str = "max_iou",
    pairs: ImagePairs | None = None,
) -> Decomposition:
    """Decompose each class's precision and recall into localization and classification (and segmentation).

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : str or Protocol
        Its box convention, ignored ground truths and AP interpolation (``ap_method``) apply;
        its matching does not (the assignment is by largest IoU, see the module docstring).
    iou_threshold : float
        ``t``.
    variant : {"max_iou", "matched"}
        ``max_iou``: the definition above. ``matched``: the protocol's own one-to-one matching
        instead of the largest IoU (see :func:`matched_assignment`); boxes only.
    pairs : ImagePairs, optional
        :func:`image_pairs` of ``gt`` and ``dt``, shared with other analyses (same numbers).

    Returns
    -------
    Decomposition

    Raises
    ------
    ConfigError
        ``iou_type="keypoints"``, an unknown variant, or ``t`` outside [0, 1].

    Notes
    -----
    ``iou_type="segm"`` adds the factor ``S|C,L`` (module docstring): curves
    ``precision_SgCL`` / ``recall_SgCL`` and ``AP_SgCL``, and ``D`` is then the masks'.
    ``pairs`` is not used there (the boxes are the masks').

    Examples
    --------
    >>> from deteval.io import load_detections, load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> d = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": .9},
    ...                      {"image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "score": .8}], g)
    >>> a = decompose(g, d).per_class[0]
    >>> a.curves["recall_L"].tolist(), a.curves["recall_CgL"].tolist(), a.curves["recall_D"].tolist()
    ([1.0, 2.0], [1.0, 0.5], [1.0, 1.0])
    >>> m = decompose(g, d, variant="matched").per_class[0]  # one-to-one: the b box is not localized
    >>> m.confidence.tolist(), m.curves["recall_L"].tolist(), m.curves["recall_D"].tolist()
    ([0.9], [1.0], [1.0])
    """
    if variant not in VARIANTS:
        raise ConfigError(f"decompose: variant must be one of {list(VARIANTS)}, found {variant!r}")
    if not (0.0 <= iou_threshold <= 1.0):
        raise ConfigError(f"decompose: iou_threshold must be in [0, 1], found {iou_threshold!r}")
    protocol = resolve_protocol(protocol)
    reason = unsupported_reason(protocol)
    if reason is not None:
        raise ConfigError(reason)
    pooled_gt, dt = pooled_for(gt, dt, protocol)  # class_agnostic: one class
    if pooled_gt is not gt:
        gt, pairs = pooled_gt, None  # pairs of the unpooled values: ground-truth rows moved
    is_segm = protocol.iou_type == "segm"
    if variant == "matched":
        if is_segm:
            raise ConfigError(
                "decompose: variant 'matched' decomposes boxes only (the protocol's matching of "
                "masks already localizes by mask IoU); use variant 'max_iou' for iou_type 'segm'"
            )
        is_loc, gt_class, is_kept = matched_assignment(gt, dt, protocol, iou_threshold=iou_threshold)
        return _decomposition(gt, dt, protocol, iou_threshold, is_loc, gt_class, None, is_kept)
    if is_segm:  # localization by the masks' tight boxes (module docstring)
        masks = prepare_masks(gt, dt, protocol)
        pairs = image_pairs(gt, dt, convention=protocol.box_convention, boxes=(*mask_boxes(masks), "xyxy"))
    iou, gt_class, gt_row = _max_assignment(gt, dt, protocol, pairs)
    is_loc = (iou >= iou_threshold) & (gt_class >= 0)
    is_seg = np.zeros(len(dt), dtype=bool)
    if is_segm:
        # The third factor: the mask IoU with the ground truth the box found, for the detections
        # localized on an object of their own class (pruned relative to t in exact mode).
        rows = np.flatnonzero(is_loc & (gt_class == dt.category))
        seg_iou = pair_mask_iou(
            masks,
            gt_row[rows],
            rows,
            np.zeros(len(rows), bool),
            protocol.replace(iou_thresholds=(iou_threshold,)),
        )
        is_seg[rows] = seg_iou >= iou_threshold
    return _decomposition(
        gt, dt, protocol, iou_threshold, is_loc, gt_class, is_seg if is_segm else None, np.ones(len(dt), bool)
    )


def _decomposition(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    iou_threshold: float,
    is_loc: np.ndarray,
    gt_class: np.ndarray,
    is_seg: np.ndarray | None,
    is_kept: np.ndarray,
) -> Decomposition:
    """The curves and APs from each detection's localization, true class (and mask test).

    ``is_seg`` None: boxes (no third factor); ``is_kept``: the detections that count at all.
    """
    is_segm = is_seg is not None
    if is_seg is None:
        is_seg = np.zeros(len(dt), dtype=bool)
    n_class = gt.n_classes
    n_gt = np.bincount(gt.category[~ground_truth_flags(gt, protocol)[0][0]], minlength=n_class)
    # Each detection enters its predicted class, and (if localized elsewhere) its GT's class.
    det_rows = np.flatnonzero(is_kept)
    extra = np.flatnonzero(is_kept & is_loc & (gt_class != dt.category))
    entry_det = np.concatenate([det_rows, extra])
    entry_class = np.concatenate([dt.category[det_rows], gt_class[extra]])
    order = lexsort((-dt.score[entry_det], entry_class))
    entry_det, entry_class = entry_det[order], entry_class[order]
    score = dt.score[entry_det]
    is_pred = dt.category[entry_det] == entry_class
    is_pred_loc = is_pred & is_loc[entry_det]
    is_true_loc = is_loc[entry_det] & (gt_class[entry_det] == entry_class)
    is_ok = is_pred_loc & is_true_loc
    is_ok_seg = is_ok & is_seg[entry_det]
    ap_names = ("AP_D", "AP_L", "AP_CgL", "AP_SgCL") if is_segm else ("AP_D", "AP_L", "AP_CgL")
    bounds = np.searchsorted(entry_class, np.arange(n_class + 1))
    per_class = []
    for k in range(n_class):
        lo, hi = bounds[k], bounds[k + 1]
        s = score[lo:hi]
        last = np.flatnonzero(np.r_[s[1:] != s[:-1], True]) if hi > lo else np.zeros(0, np.int64)
        n_pred, n_pred_loc, n_ok, n_true_loc, n_ok_seg = (
            np.cumsum(x[lo:hi])[last].astype(np.float64)
            for x in (is_pred, is_pred_loc, is_ok, is_true_loc, is_ok_seg)
        )
        n_pos = np.full(len(last), float(n_gt[k]))
        n_found = n_ok_seg if is_segm else n_ok  # the numerator of D
        curves = {
            "precision_D": _ratio(n_found, n_pred),
            "recall_D": _ratio(n_found, n_pos),
            "precision_L": _ratio(n_pred_loc, n_pred),
            "recall_L": _ratio(n_true_loc, n_pos),
            "precision_CgL": _ratio(n_ok, n_pred_loc),
            "recall_CgL": _ratio(n_ok, n_true_loc),
        }
        if is_segm:
            # The precision and the recall side share this factor's counts: both are the
            # fraction of the localized, rightly classified detections whose mask matches.
            curves["precision_SgCL"] = _ratio(n_ok_seg, n_ok)
            curves["recall_SgCL"] = _ratio(n_ok_seg, n_ok)
        if n_gt[k] > 0:
            ap_d = interpolated_ap(curves["recall_D"], curves["precision_D"], protocol)
            ap_l = interpolated_ap(curves["recall_L"], curves["precision_L"], protocol)
            # AP of the box curve "localized and rightly classified" (D's own for boxes).
            ap_lc = interpolated_ap(_ratio(n_ok, n_pos), _ratio(n_ok, n_pred), protocol) if is_segm else ap_d
            ap = _factored(ap_d, ap_l, ap_lc, is_segm)
        else:
            ap = dict.fromkeys(ap_names, float("nan"))
        per_class.append(
            ClassDecomposition(
                category_id=int(gt.category_id[k]),
                name=gt.category_name[k],
                n_gt=int(n_gt[k]),
                confidence=s[last],
                curves=curves,
                ap=ap,
            )
        )
    counted = [c for c in per_class if c.n_gt > 0]
    if counted:
        mean_d, mean_l = (float(np.mean([c.ap[name] for c in counted])) for name in ("AP_D", "AP_L"))
        mean_lc = float(np.mean([c.ap["AP_L"] * c.ap["AP_CgL"] if c.ap["AP_L"] else 0.0 for c in counted]))
        mean = _factored(mean_d, mean_l, mean_lc if is_segm else mean_d, is_segm)
    else:
        mean = dict.fromkeys(ap_names, float("nan"))
    return Decomposition(iou_threshold=float(iou_threshold), per_class=tuple(per_class), mean=mean)


def _quotient(a: float, b: float) -> float:
    """``a / b``, NaN when ``b`` is 0 (nothing to condition on) or either is NaN."""
    return a / b if b > 0 else float("nan")


def _factored(ap_d: float, ap_l: float, ap_lc: float, is_segm: bool) -> dict:
    """The scalar summaries: ``AP_D``, ``AP_L`` and the conditional factors as ratios of APs.

    ``AP_CgL = AP_LC / AP_L`` and (masks) ``AP_SgCL = AP_D / AP_LC``, where ``AP_LC`` is the AP
    of the box curve "localized and rightly classified" (``AP_D`` itself for boxes), so
    ``AP_D = AP_L * AP_CgL (* AP_SgCL)`` up to rounding (1e-15). A factor whose denominator is 0
    (nothing localized, or nothing localized on its class) is undefined: NaN. The AP of a
    conditional curve is not used: it starts at 1 with precision 1 whenever the most confident
    localized detection is rightly classified, and its envelope then stays at 1.
    """
    out = {"AP_D": ap_d, "AP_L": ap_l, "AP_CgL": _quotient(ap_lc, ap_l)}
    if is_segm:
        out["AP_SgCL"] = _quotient(ap_d, ap_lc)
    return out
