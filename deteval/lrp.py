"""Localisation Recall Precision (LRP) and optimal LRP; the mean IoU of true positives.

LRP (Oksuz et al., ECCV 2018; "One Metric to Measure them All", TPAMI 2021) scores one class
at one confidence cut ``s`` by its true positives (TP), false positives (FP) and false
negatives (FN) at the IoU threshold ``tau``::

    LRP(s) = (sum over TP of (1 - IoU) / (1 - tau) + n_FP + n_FN) / (n_TP + n_FP + n_FN)

0 is perfect, 1 the worst. *Optimal LRP* (oLRP) is the smallest LRP over the cuts at each ranked
detection; the detection's score there is the class's *LRP-optimal threshold*, and its
components are reported there: localisation ``sum(1 - IoU) / n_TP`` (mean 1 - IoU of the true
positives), FP ``n_FP / (n_TP + n_FP)`` (1 - precision) and FN ``n_FN / n_positive``
(1 - recall). moLRP is the mean oLRP over the classes with ground truth.

Notes
-----
The authors' implementation (``kemaloksuz/LRP-Error``, ``pycocotools/pycocotools/cocoeval.py``,
``COCOeval.accumulate``, commit ec408f3c8a3bc3408e0fdc84469e0101245f3bfb) is reproduced:

* the ranking is the protocol's (pycocotools: descending score, stable), within ``max_dets``;
  ignored detections (on crowd regions, out of the area range) are neither TP nor FP, but are
  positions of the ranking at which the minimum may be taken;
* the minimum is the first one in ranking order (``np.argmin``), ties of scores not merged;
* a class without ground truth has no value (the reference's -1: None here, left out of the
  means); a class with ground truth but no true positive at any cut has oLRP 1, FN component 1,
  and no localisation or FP component or threshold (NaN);
* the means of the components leave NaN out.
"""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.analysis import _lane, _ranked_rows, _ranking_of
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult, ground_truth_flags, pair_iou
from deteval.pooling import pooled_for
from deteval.summary import none_if_nan

__all__ = ["OptimalLRP", "optimal_lrp", "tp_ious", "mean_tp_iou", "lrp_curve"]


def _table_dt_rows(result: EvalResult, dt: Detections) -> np.ndarray:
    """Rows of ``dt`` of the result table's detections (by their input order)."""
    order = np.asarray(dt.order, dtype=np.int64)
    wanted = result.table.det_order.astype(np.int64, copy=False)
    sorter = np.argsort(order, kind="stable")
    pos = np.searchsorted(order, wanted, sorter=sorter)
    rows = sorter[np.minimum(pos, max(len(order) - 1, 0))] if len(order) else pos
    if len(wanted) and (not len(order) or not np.array_equal(order[rows], wanted)):
        raise ConfigError(
            f"tp_ious: dt ({dt.source}): expected the detections the result was scored from, "
            f"found detections without some of the result's records; pass the same values"
        )
    return rows


def tp_ious(
    result: EvalResult,
    gt: GroundTruth,
    dt: Detections,
    *,
    iou_threshold: float | None = None,
    area: str | None = None,
) -> np.ndarray:
    """The IoU of every true positive with the ground truth it matched, per table row.

    Parameters
    ----------
    result : EvalResult
        Scored from ``gt`` and ``dt``.
    gt : GroundTruth
    dt : Detections
    iou_threshold, area
        The lane, as in :func:`deteval.analysis.pr_curve`.

    Returns
    -------
    float64 (n_det,)
        Aligned with ``result.table``'s rows: the IoU (the protocol's overlap: box IoU, mask IoU
        or OKS) of each true positive of the lane, NaN for every other detection.

    Raises
    ------
    ConfigError
        ``dt`` lacks records the result was scored from.
    """
    protocol = result.protocol
    lane, _ = _lane(result, iou_threshold, area)
    table = result.table
    gt, dt = pooled_for(gt, dt, protocol)
    out = np.full(len(table.det_score), np.nan)
    in_lane = table.match_lane == lane
    det = table.match_det[in_lane].astype(np.int64)
    gt_rows = table.match_gt[in_lane].astype(np.int64)
    is_tp = table.lane_is_tp(lane)[det]
    det, gt_rows = det[is_tp], gt_rows[is_tp]
    if not len(det):
        return out
    masks = None
    if protocol.iou_type == "segm":
        from deteval.geometry import prepare_masks

        masks = prepare_masks(gt, dt, protocol)
    _, is_reusable, _ = ground_truth_flags(gt, protocol)
    crowd_like = is_reusable[gt_rows]
    if protocol.group_of == "openimages" and gt.is_group_of is not None:
        crowd_like = crowd_like | gt.is_group_of[gt_rows]
    dt_rows = _table_dt_rows(result, dt)[det]
    out[det] = pair_iou(gt, dt, gt_rows, dt_rows, crowd_like, protocol, masks)
    return out


def mean_tp_iou(result: EvalResult, ious: np.ndarray, *, max_dets: int | None = None) -> list[dict]:
    """Per class: the number of true positives and their mean IoU (NaN without one).

    ``ious`` is :func:`tp_ious` of ``result`` (its lane); ``max_dets`` (default the largest)
    keeps each image's top-ranked detections as the result's table ranks them.

    Examples
    --------
    >>> import deteval
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 8], "score": 0.9}]
    >>> g = deteval.load_ground_truth(gt); d = deteval.load_detections(dt, g)
    >>> r = deteval.evaluate(g, d, "coco")
    >>> mean_tp_iou(r, tp_ious(r, g, d))[0]["mean_tp_iou"]
    0.8
    """
    ranking = _ranking_of(result)
    out = []
    for k, category_id in enumerate(result.category_ids):
        rows = _ranked_rows(result, k, max_dets, ranking)
        values = ious[rows]
        values = values[~np.isnan(values)]
        out.append(
            {
                "category_id": category_id,
                "name": result.category_names[k],
                "n_tp": len(values),
                "mean_tp_iou": float(values.mean()) if len(values) else float("nan"),
            }
        )
    return out


@frozen
class OptimalLRP:
    """Optimal LRP of every class (see the module's documentation).

    Attributes
    ----------
    per_class : list of dict
        ``{category_id, name, oLRP, oLRP_loc, oLRP_FP, oLRP_FN, threshold, n_tp, n_fp, n_fn}``
        at each class's optimum; every value NaN (counts -1) for a class without ground truth.
    moLRP, moLRP_loc, moLRP_FP, moLRP_FN : float
        Means over the classes with ground truth (NaN components left out); NaN when none.
    tau : float
    area : str
    max_dets : int or None
    """

    per_class: list
    moLRP: float
    moLRP_loc: float
    moLRP_FP: float
    moLRP_FN: float
    tau: float
    area: str
    max_dets: int | None

    def to_dict(self) -> dict:
        """The JSON form (NaN -> None)."""
        return {
            "tau": self.tau,
            "area": self.area,
            "max_dets": self.max_dets,
            "moLRP": none_if_nan(self.moLRP),
            "moLRP_loc": none_if_nan(self.moLRP_loc),
            "moLRP_FP": none_if_nan(self.moLRP_FP),
            "moLRP_FN": none_if_nan(self.moLRP_FN),
            "per_class": [
                {k: (none_if_nan(v) if isinstance(v, float) else v) for k, v in c.items()}
                for c in self.per_class
            ],
        }


def check_tau(tau: float) -> None:
    """Refuse an LRP ``tau`` outside [0, 1) (its ``1 - tau`` divides)."""
    if not 0 <= tau < 1:
        raise ConfigError(f"LRP tau: expected an IoU threshold in [0, 1), found {tau!r}")


def lrp_curve(is_tp: np.ndarray, is_fp: np.ndarray, iou: np.ndarray, n_positive: int, tau: float) -> dict:
    """LRP and its counts after each ranked detection of one class.

    Parameters
    ----------
    is_tp, is_fp : bool (n_det,)
        In ranking order; a detection neither is ignored.
    iou : float64 (n_det,)
        IoU of the true positives (any value elsewhere).
    n_positive : int
        Non-ignored ground truths, > 0.
    tau : float
        The IoU threshold the detections were matched at, < 1.

    Returns
    -------
    dict
        ``lrp``, ``loc`` (sum of 1 - IoU), ``tp``, ``fp``, ``fn``: float64 (n_det,) arrays.

    Examples
    --------
    >>> c = lrp_curve(np.array([True, False]), np.array([False, True]), np.array([0.75, 0.0]), 2, 0.5)
    >>> c["lrp"].tolist()  # (0.25 / 0.5 + 0 + 1) / 2, then (0.5 + 1 + 1) / 3
    [0.75, 0.8333333333333334]
    """
    tp = np.cumsum(is_tp).astype(np.float64)
    fp = np.cumsum(is_fp).astype(np.float64)
    fn = n_positive - tp
    # The reference's arithmetic: cumulative TP count minus cumulative IoU of the TPs.
    loc = tp - np.cumsum(np.where(is_tp, iou, 0.0))
    lrp = (loc / (1 - tau) + fp + fn) / (tp + fp + fn)
    return {"lrp": lrp, "loc": loc, "tp": tp, "fp": fp, "fn": fn}


def optimal_lrp(
    result: EvalResult,
    ious: np.ndarray,
    *,
    tau: float = 0.5,
    area: str | None = None,
    max_dets: int | None = None,
) -> OptimalLRP:
    """Optimal LRP, its components and the LRP-optimal confidence threshold of every class.

    Parameters
    ----------
    result : EvalResult
        Its protocol must have ``tau`` among its IoU thresholds (the lane matched at ``tau``).
    ious : float64 (n_det,)
        :func:`tp_ious` of ``result`` at ``tau`` (the same ``area``).
    tau : float
        LRP's IoU threshold (the paper's default 0.5).
    area : str, optional
        Area range (default the protocol's first, ``all`` for COCO).
    max_dets : int, optional
        Default: the protocol's largest.

    Returns
    -------
    OptimalLRP

    Raises
    ------
    ConfigError
        ``tau`` not one of the protocol's IoU thresholds, or not below 1.

    Examples
    --------
    >>> import deteval
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 8], "score": 0.9},
    ...       {"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.4}]
    >>> g = deteval.load_ground_truth(gt); d = deteval.load_detections(dt, g)
    >>> r = deteval.evaluate(g, d, "coco")
    >>> row = optimal_lrp(r, tp_ious(r, g, d)).per_class[0]
    >>> round(row["oLRP"], 6), round(row["oLRP_loc"], 6), row["threshold"]  # (0.2 / 0.5) / 1
    (0.4, 0.2, 0.9)
    """
    check_tau(tau)
    lane, a = _lane(result, tau, area)
    table = result.table
    area_name = result.protocol.area_names[a]
    if max_dets is None and result.protocol.max_dets is not None:
        max_dets = max(result.protocol.max_dets)
    ranking = _ranking_of(result)
    lane_tp, lane_ignored = table.lane_is_tp(lane), table.lane_is_ignored(lane)
    nan = float("nan")
    per_class = []
    for k, category_id in enumerate(result.category_ids):
        n_positive = int(table.n_positive[k, a])
        row: dict = {
            "category_id": category_id,
            "name": result.category_names[k],
            "oLRP": nan,
            "oLRP_loc": nan,
            "oLRP_FP": nan,
            "oLRP_FN": nan,
            "threshold": nan,
            "n_tp": -1,
            "n_fp": -1,
            "n_fn": -1,
        }
        per_class.append(row)
        if n_positive == 0:
            continue
        rows = _ranked_rows(result, k, max_dets, ranking)
        is_tp = lane_tp[rows]
        if not is_tp.any():
            row.update(oLRP=1.0, oLRP_FN=1.0, n_tp=0, n_fp=int((~lane_ignored[rows]).sum()), n_fn=n_positive)
            continue
        c = lrp_curve(is_tp, ~is_tp & ~lane_ignored[rows], ious[rows], n_positive, tau)
        i = int(np.argmin(c["lrp"]))
        tp, fp, fn = c["tp"][i], c["fp"][i], c["fn"][i]
        with np.errstate(invalid="ignore", divide="ignore"):
            row.update(
                oLRP=float(c["lrp"][i]),
                oLRP_loc=float(np.float64(c["loc"][i]) / tp),
                oLRP_FP=float(np.float64(fp) / (tp + fp)),
                oLRP_FN=float(fn / n_positive),
                threshold=float(table.det_score[rows[i]]),
                n_tp=int(tp),
                n_fp=int(fp),
                n_fn=int(fn),
            )

    def mean(key: str) -> float:
        values = [r[key] for r in per_class if r["n_tp"] >= 0 and r[key] == r[key]]
        return float(np.mean(values)) if values else nan

    return OptimalLRP(
        per_class=per_class,
        moLRP=mean("oLRP"),
        moLRP_loc=mean("oLRP_loc"),
        moLRP_FP=mean("oLRP_FP"),
        moLRP_FN=mean("oLRP_FN"),
        tau=float(tau),
        area=area_name,
        max_dets=max_dets,
    )
