"""Headline metrics from accumulated curves: pycocotools' 12 stats, configured summaries, mAP.

Every function here is pure: arrays and a :class:`~deteval.protocol.Protocol` in, numbers out.
Undefined values are NaN (pycocotools prints -1); :func:`none_if_nan` turns them into JSON nulls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.accumulate import Accumulated
from deteval.protocol import Protocol

__all__ = ["mean_defined", "class_ap", "threshold_label", "none_if_nan", "headline_metrics",
           "pycocotools_summary", "configured_summary", "summary_ap", "summary_ar", "AREA_ABBREVIATIONS"]

#: Short names of the area ranges in metric names (``APs``, ``ARl``); other names give ``AP_<name>``.
AREA_ABBREVIATIONS = {"small": "s", "medium": "m", "large": "l"}


def none_if_nan(value: float | None) -> float | None:
    """``None`` for an undefined value (NaN or None), else the value as a float (JSON ``null``).

    >>> none_if_nan(float("nan")), none_if_nan(np.float64(0.5))
    (None, 0.5)
    """
    return None if value is None or value != value else float(value)


def mean_defined(values: np.ndarray) -> float:
    """np.mean over the defined entries in C order (pycocotools' ``np.mean(s[s > -1])``).

    >>> mean_defined(np.array([1.0, np.nan, 0.5])), mean_defined(np.array([np.nan]))
    (0.75, nan)
    """
    values = np.asarray(values, dtype=np.float64)
    defined = values[~np.isnan(values)]
    return float(np.mean(defined)) if defined.size else float("nan")


def class_ap(precision: np.ndarray, ap: np.ndarray, protocol: Protocol, k: int,
             thresholds: Any = slice(None)) -> float:
    """Class ``k``'s AP at area "all" (the first range) and the largest ``max_dets``.

    Averaged over ``thresholds`` (all by default, or e.g. ``[t]``): for 101-point, over the
    precision at every threshold and recall point, as detectron2 reports per-class COCO AP;
    otherwise over the per-threshold AP.
    """
    if precision.shape[1] > 0 and protocol.ap_method == "101_point":
        return mean_defined(precision[thresholds, :, k, 0, -1])
    return mean_defined(ap[thresholds, k, 0, -1])


def threshold_label(t: float) -> str:
    """50 for 0.5, 75 for 0.75, 82.5 for 0.825 (percent, without a trailing zero).

    >>> threshold_label(0.5), threshold_label(0.3), threshold_label(0.825)
    ('50', '30', '82.5')
    """
    return f"{t * 100:.6f}".rstrip("0").rstrip(".")


def summary_ap(acc: Accumulated, protocol: Protocol, *, iou_threshold: float | None = None,
               area: str = "all", max_det: int | None = None) -> float:
    """Mean AP over the classes (and thresholds, unless ``iou_threshold``) at one area and max_dets.

    NaN when the protocol has no such area, max_dets or threshold (pycocotools prints -1).
    Point-sampled methods average the precision array (pycocotools' ``np.mean(s[s > -1])``);
    ``all_point`` averages the per-class AP.
    """
    thresholds = list(protocol.iou_thresholds)
    areas = list(protocol.area_names)
    max_dets: list[Any] = list(protocol.max_dets) if protocol.max_dets is not None else [None]
    if area not in areas or max_det not in max_dets or (iou_threshold is not None
                                                         and iou_threshold not in thresholds):
        return float("nan")
    a, m = areas.index(area), max_dets.index(max_det)
    if acc.precision.shape[1] > 0:
        s = acc.precision if iou_threshold is None else acc.precision[[thresholds.index(iou_threshold)]]
        return mean_defined(s[:, :, :, a, m])
    s = acc.ap if iou_threshold is None else acc.ap[[thresholds.index(iou_threshold)]]
    return mean_defined(s[:, :, a, m])


def summary_ar(acc: Accumulated, protocol: Protocol, *, area: str = "all", max_det: int | None = None) -> float:
    """Mean final recall over the classes and thresholds at one area and max_dets (NaN if absent)."""
    areas = list(protocol.area_names)
    max_dets: list[Any] = list(protocol.max_dets) if protocol.max_dets is not None else [None]
    if area not in areas or max_det not in max_dets:
        return float("nan")
    return mean_defined(acc.recall[:, :, areas.index(area), max_dets.index(max_det)])


def pycocotools_summary(acc: Accumulated, protocol: Protocol) -> dict:
    """``COCOeval.summarize`` literally: its 12 stats by name.

    Notes
    -----
    pycocotools reports AP at maxDets=100 whatever ``max_dets`` says (undefined if 100 is
    absent), the other AP at ``max_dets[2]``, AR at ``max_dets[0..2]``, and area rows by the
    names small/medium/large; all reproduced on purpose.
    """
    max_dets = list(protocol.max_dets) if protocol.max_dets is not None else [None]
    m2 = max_dets[2]
    out = {"AP": summary_ap(acc, protocol, max_det=100),
           "AP50": summary_ap(acc, protocol, iou_threshold=0.5, max_det=m2),
           "AP75": summary_ap(acc, protocol, iou_threshold=0.75, max_det=m2),
           "APs": summary_ap(acc, protocol, area="small", max_det=m2),
           "APm": summary_ap(acc, protocol, area="medium", max_det=m2),
           "APl": summary_ap(acc, protocol, area="large", max_det=m2)}
    for m in max_dets[:3]:
        out[f"AR{m}"] = summary_ar(acc, protocol, max_det=m)
    out["ARs"] = summary_ar(acc, protocol, area="small", max_det=m2)
    out["ARm"] = summary_ar(acc, protocol, area="medium", max_det=m2)
    out["ARl"] = summary_ar(acc, protocol, area="large", max_det=m2)
    return out


def configured_summary(acc: Accumulated, protocol: Protocol) -> dict:
    """Headline metrics named after the configured values (``summary: configured``).

    ``AP`` at the first area range and the largest ``max_dets``; one ``AP<t>`` per threshold
    when there are at most five (else ``AP50``/``AP75`` when present); ``AP<area>`` per further
    range; ``AR<m>`` per ``max_dets``; ``AR<area>`` per further range at the largest ``max_dets``.
    """
    thresholds = list(protocol.iou_thresholds)
    areas = list(protocol.area_names)
    max_dets = list(protocol.max_dets) if protocol.max_dets is not None else [None]
    top, first = max_dets[-1], areas[0]
    out = {"AP": summary_ap(acc, protocol, area=first, max_det=top)}
    if len(thresholds) > 1:
        # A few thresholds: one AP each; a COCO-like sweep: the customary AP50 and AP75.
        named = thresholds if len(thresholds) <= 5 else [t for t in thresholds if t in (0.5, 0.75)]
        for t in named:
            out[f"AP{threshold_label(t)}"] = summary_ap(acc, protocol, iou_threshold=t, area=first, max_det=top)
    for name in areas[1:]:
        out["AP" + AREA_ABBREVIATIONS.get(name, "_" + name)] = summary_ap(acc, protocol, area=name, max_det=top)
    for m in max_dets:
        out["AR" if m is None else f"AR{m}"] = summary_ar(acc, protocol, area=first, max_det=m)
    for name in areas[1:]:
        out["AR" + AREA_ABBREVIATIONS.get(name, "_" + name)] = summary_ar(acc, protocol, area=name, max_det=top)
    return out


def ultralytics_summary(acc: Accumulated, protocol: Protocol) -> dict:
    """Ultralytics' ``mAP50`` and ``mAP50-95`` (``Metric.map50`` / ``Metric.map``).

    ``mAP50`` is the mean class AP at the *first* threshold (``all_ap[:, 0].mean()``) and
    ``mAP50-95`` the mean over classes and thresholds (``all_ap.mean()``), both at the first
    area range and the largest ``max_dets``, over the classes with ground truth (Ultralytics'
    ``unique_classes`` are the classes of the labels).
    """
    first = acc.ap[:1, :, 0, -1]
    return {"mAP50": mean_defined(first), "mAP50-95": mean_defined(acc.ap[:, :, 0, -1].T)}


#: ``summary`` field value -> the function computing a COCO-style protocol's headline metrics.
SUMMARIES = {"pycocotools": pycocotools_summary, "configured": configured_summary,
             "ultralytics": ultralytics_summary}


def headline_metrics(acc: Accumulated, per_class_ap: np.ndarray, protocol: Protocol) -> dict:
    """The result's ``metrics``: ``mAP`` for a single-threshold protocol, else its summary.

    Parameters
    ----------
    acc : Accumulated
    per_class_ap : float64 (n_class,)
        From :func:`class_ap`; NaN for classes without ground truth.
    protocol : Protocol
    """
    if protocol.is_single_threshold:
        return {"mAP": mean_defined(per_class_ap)}
    return SUMMARIES[protocol.summary](acc, protocol)
