"""Beyond AP, on values: calibration (D-ECE), optimal LRP, mean IoU of true positives, mAUC.

:func:`beyond_ap` scores the detections once under the protocol (and once more at an IoU
threshold the protocol lacks, when a part asks for one) and runs the parts asked for; the
parts themselves are :func:`deteval.calibration.calibration`, :func:`deteval.lrp.optimal_lrp`,
:func:`deteval.lrp.mean_tp_iou` and :func:`deteval.analysis.pr_auc`.
"""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.analysis import pr_auc
from deteval.calibration import Calibration
from deteval.calibration import calibration as calibrate
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult, match, score
from deteval.lrp import OptimalLRP, check_tau, mean_tp_iou, optimal_lrp, tp_ious
from deteval.protocol import Protocol, resolve_protocol
from deteval.summary import none_if_nan

__all__ = ["BeyondAP", "beyond_ap"]


@frozen(eq=False)
class BeyondAP:
    """The parts :func:`beyond_ap` computed; None where not asked for.

    Attributes
    ----------
    calibration : Calibration or None
    lrp : OptimalLRP or None
    mean_tp_iou : dict or None
        ``{iou_threshold, area, max_dets, mean, per_class: [{category_id, name, n_tp,
        mean_tp_iou}]}``; ``mean`` over the classes with a true positive.
    auc : dict or None
        :func:`deteval.analysis.pr_auc` with the class and area names.
    """

    calibration: Calibration | None = None
    lrp: OptimalLRP | None = None
    mean_tp_iou: dict | None = None
    auc: dict | None = None

    def to_dict(self) -> dict:
        """``{"calibration": ..., "lrp": ..., "mean_tp_iou": ..., "mAUC": ...}`` (the parts asked for)."""
        out: dict = {}
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_dict()
        if self.lrp is not None:
            out["lrp"] = self.lrp.to_dict()
        if self.mean_tp_iou is not None:
            m = self.mean_tp_iou
            out["mean_tp_iou"] = {
                **{k: m[k] for k in ("iou_threshold", "area", "max_dets")},
                "mean": none_if_nan(m["mean"]),
                "per_class": [{**c, "mean_tp_iou": none_if_nan(c["mean_tp_iou"])} for c in m["per_class"]],
            }
        if self.auc is not None:
            a = self.auc
            out["mAUC"] = {
                "iou_threshold": a["iou_threshold"],
                "value": none_if_nan(a["mAUC"]),
                "per_class": [
                    {
                        "category_id": category_id,
                        "name": name,
                        "AUC": {area: none_if_nan(v) for area, v in zip(a["areas"], row, strict=True)},
                    }
                    for category_id, name, row in zip(
                        a["category_ids"], a["names"], a["auc"].tolist(), strict=True
                    )
                ],
            }
        return out


def beyond_ap(
    gt: GroundTruth,
    dt: Detections,
    protocol: str | Protocol = "coco",
    *,
    iou: float = 0.5,
    calibration: bool = False,
    lrp: bool = False,
    tp_iou: bool = False,
    mauc: bool = False,
    calibration_features: tuple | list = ("confidence",),
    calibration_bins: int | tuple | list = 10,
    lrp_tau: float = 0.5,
    result: EvalResult | None = None,
) -> BeyondAP:
    """Calibration, optimal LRP, mean true-positive IoU and mAUC of one detector.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : str or Protocol
        Its matching decides the true positives (area: its first range; the largest
        ``max_dets``).
    iou : float
        The IoU threshold of the calibration and of the true positives' IoU.
    calibration, lrp, tp_iou, mauc : bool
        Which parts to compute.
    calibration_features, calibration_bins
        See :func:`deteval.calibration.calibration`.
    lrp_tau : float
        LRP's IoU threshold.
    result : EvalResult, optional
        ``dt`` already scored under ``protocol`` (not scored again; a part at an IoU threshold
        the protocol lacks still scores once more).

    Returns
    -------
    BeyondAP

    Examples
    --------
    >>> from deteval.io import load_detections, load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> d = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 8], "score": .9}], g)
    >>> sorted(beyond_ap(g, d, lrp=True, tp_iou=True).to_dict())
    ['lrp', 'mean_tp_iou']
    """
    protocol = resolve_protocol(protocol)
    if lrp:
        check_tau(lrp_tau)  # before scoring at it
    results: dict = {}
    if result is not None:
        if result.protocol != protocol:
            raise ConfigError(
                f"beyond_ap: result: expected a result scored under protocol {protocol.name!r}, "
                f"found one of {result.protocol.name!r}"
            )
        results[None] = result

    def at(threshold: float | None) -> EvalResult:
        """A result whose protocol has ``threshold`` (None: the protocol as given)."""
        key = None if threshold is None or threshold in protocol.iou_thresholds else threshold
        if key not in results:
            p = protocol if key is None else protocol.replace(iou_thresholds=[key])
            results[key] = score(match(gt, dt, p), gt, p)
        return results[key]

    found_calibration = None
    if calibration:
        found_calibration = calibrate(
            at(iou), gt, dt, features=calibration_features, bins=calibration_bins, iou_threshold=iou
        )
    found_lrp = None
    if lrp:
        r = at(lrp_tau)
        found_lrp = optimal_lrp(r, tp_ious(r, gt, dt, iou_threshold=lrp_tau), tau=lrp_tau)
    found_iou = None
    if tp_iou:
        r = at(iou)
        rows = mean_tp_iou(r, tp_ious(r, gt, dt, iou_threshold=iou))
        means = [c["mean_tp_iou"] for c in rows if c["n_tp"]]
        max_dets = None if r.protocol.max_dets is None else max(r.protocol.max_dets)
        found_iou = {
            "iou_threshold": float(iou),
            "area": r.protocol.area_names[0],
            "max_dets": max_dets,
            "mean": float(np.mean(means)) if means else float("nan"),
            "per_class": rows,
        }
    found_auc = None
    if mauc:
        r = at(None)
        found_auc = {
            **pr_auc(r),
            "areas": list(r.protocol.area_names),
            "category_ids": list(r.category_ids),
            "names": list(r.category_names),
        }
    return BeyondAP(calibration=found_calibration, lrp=found_lrp, mean_tp_iou=found_iou, auc=found_auc)
