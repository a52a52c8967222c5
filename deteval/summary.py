"""Headline metrics from accumulated curves: pycocotools' 12 stats, configured summaries, mAP.

Every function here is pure: arrays and a :class:`~deteval.protocol.Protocol` in, numbers out.
Undefined values are NaN (pycocotools prints -1); :func:`none_if_nan` turns them into JSON nulls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.accumulate import Accumulated
from deteval.protocol import Protocol

__all__ = [
    "mean_defined",
    "class_ap",
    "class_ap_all",
    "class_metrics_all",
    "threshold_label",
    "none_if_nan",
    "headline_metrics",
    "pycocotools_summary",
    "pycocotools_keypoint_summary",
    "lvis_summary",
    "configured_summary",
    "summary_ap",
    "summary_ar",
    "AREA_ABBREVIATIONS",
    "summary_indices",
    "SummaryTerm",
    "pycocotools_terms",
    "configured_terms",
    "SUMMARY_TERMS",
    "per_class_terms",
    "class_metrics",
]

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


def class_ap(
    precision: np.ndarray, ap: np.ndarray, protocol: Protocol, k: int, thresholds: Any = slice(None)
) -> float:
    """Class ``k``'s AP at area "all" (the first range) and the largest ``max_dets``.

    Averaged over ``thresholds`` (all by default, or e.g. ``[t]``): for 101-point, over the
    precision at every threshold and recall point, as detectron2 reports per-class COCO AP;
    otherwise over the per-threshold AP.
    """
    if precision.shape[1] > 0 and protocol.ap_method == "101_point":
        return mean_defined(precision[thresholds, :, k, 0, -1])
    return mean_defined(ap[thresholds, k, 0, -1])


def class_ap_all(precision: np.ndarray, ap: np.ndarray, protocol: Protocol) -> np.ndarray:
    """float64 (n_class,): :func:`class_ap` of every class, the same numbers bit for bit.

    One pass over the array instead of one call per class (LVIS: 1,203 of them); the rows are
    averaged as :func:`class_metrics_all` averages its terms.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> precision = np.random.default_rng(0).random((10, 101, 3, 4, 3))
    >>> precision[:, :, 1] = np.nan
    >>> precision[0, 5, 2, 0, -1] = np.nan
    >>> ap, coco = np.zeros((10, 3, 4, 3)), get_protocol("coco")
    >>> got = class_ap_all(precision, ap, coco)
    >>> want = [class_ap(precision, ap, coco, k) for k in range(3)]
    >>> np.array_equal(got, want, equal_nan=True), bool(np.isnan(got[1]))
    (True, True)
    """
    n_class = ap.shape[1]
    if precision.shape[1] > 0 and protocol.ap_method == "101_point":
        return _row_means(np.moveaxis(precision[:, :, :, 0, -1], 2, 0), n_class)  # (n_class, T, R)
    return _row_means(ap[:, :, 0, -1].T, n_class)  # (n_class, T)


def threshold_label(t: float) -> str:
    """50 for 0.5, 75 for 0.75, 82.5 for 0.825 (percent, without a trailing zero).

    >>> threshold_label(0.5), threshold_label(0.3), threshold_label(0.825)
    ('50', '30', '82.5')
    """
    return f"{t * 100:.6f}".rstrip("0").rstrip(".")


def summary_indices(
    protocol: Protocol, *, iou_threshold: float | None = None, area: str = "all", max_det: int | None = None
) -> tuple | None:
    """Where a summary value reads: ``(thresholds, area index, max_dets index)`` or None if absent.

    ``thresholds`` is ``slice(None)`` (all) or ``[t]`` (the index of ``iou_threshold``); None when
    the protocol has no such area, max_dets or threshold (the value is then undefined).

    >>> from deteval.protocol import get_protocol
    >>> summary_indices(get_protocol("coco"), iou_threshold=0.75, area="small", max_det=100)
    ([5], 1, 2)
    """
    thresholds = list(protocol.iou_thresholds)
    areas = list(protocol.area_names)
    max_dets: list[Any] = list(protocol.max_dets) if protocol.max_dets is not None else [None]
    if (
        area not in areas
        or max_det not in max_dets
        or (iou_threshold is not None and iou_threshold not in thresholds)
    ):
        return None
    t: Any = slice(None) if iou_threshold is None else [thresholds.index(iou_threshold)]
    return t, areas.index(area), max_dets.index(max_det)


def summary_ap(
    acc: Accumulated,
    protocol: Protocol,
    *,
    iou_threshold: float | None = None,
    area: str = "all",
    max_det: int | None = None,
) -> float:
    """Mean AP over the classes (and thresholds, unless ``iou_threshold``) at one area and max_dets.

    NaN when the protocol has no such area, max_dets or threshold (pycocotools prints -1).
    Point-sampled methods average the precision array (pycocotools' ``np.mean(s[s > -1])``);
    ``all_point`` averages the per-class AP.
    """
    where = summary_indices(protocol, iou_threshold=iou_threshold, area=area, max_det=max_det)
    if where is None:
        return float("nan")
    t, a, m = where
    if acc.precision.shape[1] > 0:
        return mean_defined(acc.precision[t][:, :, :, a, m])
    return mean_defined(acc.ap[t][:, :, a, m])


def summary_ar(
    acc: Accumulated,
    protocol: Protocol,
    *,
    area: str = "all",
    max_det: int | None = None,
    iou_threshold: float | None = None,
) -> float:
    """Mean final recall over the classes and thresholds (or at ``iou_threshold``) at one area and max_dets.

    NaN when the protocol has no such area, max_dets or threshold.
    """
    where = summary_indices(protocol, iou_threshold=iou_threshold, area=area, max_det=max_det)
    if where is None:
        return float("nan")
    t, a, m = where
    return mean_defined(acc.recall[t][:, :, a, m])


@frozen
class SummaryTerm:
    """One headline metric of a summary: which mean it is.

    Attributes
    ----------
    name : str
        The metric's name (``AP``, ``AP50``, ``ARs`` ...).
    kind : {"AP", "AR"}
        :func:`summary_ap` or :func:`summary_ar`.
    area : str
    max_det : int or None
    iou_threshold : float or None
        ``AP`` at one threshold; None averages over all of them.
    """

    name: str
    kind: str
    area: str
    max_det: int | None
    iou_threshold: float | None = None

    def value(self, acc: Accumulated, protocol: Protocol) -> float:
        """The metric computed from ``acc``."""
        if self.kind == "AP":
            return summary_ap(
                acc, protocol, iou_threshold=self.iou_threshold, area=self.area, max_det=self.max_det
            )
        return summary_ar(acc, protocol, area=self.area, max_det=self.max_det)


def pycocotools_terms(protocol: Protocol) -> tuple:
    """The terms of :func:`pycocotools_summary`, in its order.

    Notes
    -----
    pycocotools reports AP at maxDets=100 whatever ``max_dets`` says (undefined if 100 is
    absent), the other AP at ``max_dets[2]``, AR at ``max_dets[0..2]``, and area rows by the
    names small/medium/large; all reproduced on purpose.

    >>> from deteval.protocol import get_protocol
    >>> [t.name for t in pycocotools_terms(get_protocol("coco"))][:4]
    ['AP', 'AP50', 'AP75', 'APs']
    """
    max_dets = list(protocol.max_dets) if protocol.max_dets is not None else [None]
    m2 = max_dets[2]
    terms = [
        SummaryTerm("AP", "AP", "all", 100),
        SummaryTerm("AP50", "AP", "all", m2, 0.5),
        SummaryTerm("AP75", "AP", "all", m2, 0.75),
        SummaryTerm("APs", "AP", "small", m2),
        SummaryTerm("APm", "AP", "medium", m2),
        SummaryTerm("APl", "AP", "large", m2),
    ]
    terms += [SummaryTerm(f"AR{m}", "AR", "all", m) for m in max_dets[:3]]
    terms += [
        SummaryTerm("ARs", "AR", "small", m2),
        SummaryTerm("ARm", "AR", "medium", m2),
        SummaryTerm("ARl", "AR", "large", m2),
    ]
    return tuple(terms)


def pycocotools_keypoint_summary(acc: Accumulated, protocol: Protocol) -> dict:
    """``COCOeval.summarize`` for ``iouType="keypoints"`` (its ``_summarizeKps``): ten stats.

    Notes
    -----
    pycocotools reads maxDets=20 and the area rows "medium" and "large" by name whatever the
    parameters say (undefined where absent); reproduced on purpose.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> acc = Accumulated(precision=np.ones((10, 101, 1, 3, 1)), recall=np.ones((10, 1, 3, 1)),
    ...                   scores=np.ones((10, 101, 1, 3, 1)), ap=np.ones((10, 1, 3, 1)))
    >>> list(pycocotools_keypoint_summary(acc, get_protocol("coco-keypoints")))
    ['AP', 'AP50', 'AP75', 'APm', 'APl', 'AR', 'AR50', 'AR75', 'ARm', 'ARl']
    """
    out = {}
    for kind, summarize in (("AP", summary_ap), ("AR", summary_ar)):
        out[kind] = summarize(acc, protocol, max_det=20)
        out[f"{kind}50"] = summarize(acc, protocol, max_det=20, iou_threshold=0.5)
        out[f"{kind}75"] = summarize(acc, protocol, max_det=20, iou_threshold=0.75)
        out[f"{kind}m"] = summarize(acc, protocol, max_det=20, area="medium")
        out[f"{kind}l"] = summarize(acc, protocol, max_det=20, area="large")
    return out


def lvis_summary(acc: Accumulated, protocol: Protocol, *, category_frequency: tuple | None = None) -> dict:
    """lvis-api's ``LVISEval.summarize`` / ``get_results``: thirteen numbers by its names.

    Parameters
    ----------
    acc : Accumulated
    protocol : Protocol
    category_frequency : tuple of str, optional
        Each class's LVIS ``frequency`` ("r", "c", "f"); APr/APc/APf are NaN without it.

    Notes
    -----
    Every number is at the largest ``max_dets`` (lvis-api has one, 300), named ``AR@300``,
    ``ARs@300``, ... (``AR@all`` etc. without a cap); APr/APc/APf average the precision array
    over the classes of one frequency group, classes without ground truth left out
    (``np.mean(s[s > -1])``); the area rows are read by the names all/small/medium/large.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> acc = Accumulated(precision=np.ones((10, 101, 2, 4, 1)), recall=np.ones((10, 2, 4, 1)),
    ...                   scores=np.ones((10, 101, 2, 4, 1)), ap=np.ones((10, 2, 4, 1)))
    >>> out = lvis_summary(acc, get_protocol("lvis"), category_frequency=("r", "f"))
    >>> list(out)[6:], out["APc"]
    (['APr', 'APc', 'APf', 'AR@300', 'ARs@300', 'ARm@300', 'ARl@300'], nan)
    """
    top = protocol.max_dets[-1] if protocol.max_dets is not None else None
    out = {
        "AP": summary_ap(acc, protocol, max_det=top),
        "AP50": summary_ap(acc, protocol, iou_threshold=0.5, max_det=top),
        "AP75": summary_ap(acc, protocol, iou_threshold=0.75, max_det=top),
    }
    for name in ("small", "medium", "large"):
        out[f"AP{name[0]}"] = summary_ap(acc, protocol, area=name, max_det=top)
    areas = list(protocol.area_names)
    max_dets: list[Any] = list(protocol.max_dets) if protocol.max_dets is not None else [None]
    for group in ("r", "c", "f"):
        value = float("nan")
        if category_frequency is not None and "all" in areas and acc.precision.shape[1] > 0:
            classes = [k for k, f in enumerate(category_frequency) if f == group]
            value = mean_defined(acc.precision[:, :, classes, areas.index("all"), max_dets.index(top)])
        out[f"AP{group}"] = value
    label = "all" if top is None else top
    out[f"AR@{label}"] = summary_ar(acc, protocol, max_det=top)
    for name in ("small", "medium", "large"):
        out[f"AR{name[0]}@{label}"] = summary_ar(acc, protocol, area=name, max_det=top)
    return out


def configured_terms(protocol: Protocol) -> tuple:
    """The terms of :func:`configured_summary`, in its order.

    ``AP`` at the first area range and the largest ``max_dets``; one ``AP<t>`` per threshold
    when there are at most five (else ``AP50``/``AP75`` when present); ``AP<area>`` per further
    range; ``AR<m>`` per ``max_dets``; ``AR<area>`` per further range at the largest ``max_dets``.
    """
    thresholds = list(protocol.iou_thresholds)
    areas = list(protocol.area_names)
    max_dets = list(protocol.max_dets) if protocol.max_dets is not None else [None]
    top, first = max_dets[-1], areas[0]
    terms = [SummaryTerm("AP", "AP", first, top)]
    if len(thresholds) > 1:
        # A few thresholds: one AP each; a COCO-like sweep: the customary AP50 and AP75.
        named = thresholds if len(thresholds) <= 5 else [t for t in thresholds if t in (0.5, 0.75)]
        terms += [SummaryTerm(f"AP{threshold_label(t)}", "AP", first, top, t) for t in named]
    terms += [
        SummaryTerm("AP" + AREA_ABBREVIATIONS.get(name, "_" + name), "AP", name, top) for name in areas[1:]
    ]
    terms += [SummaryTerm("AR" if m is None else f"AR{m}", "AR", first, m) for m in max_dets]
    terms += [
        SummaryTerm("AR" + AREA_ABBREVIATIONS.get(name, "_" + name), "AR", name, top) for name in areas[1:]
    ]
    return tuple(terms)


def pycocotools_summary(acc: Accumulated, protocol: Protocol) -> dict:
    """``COCOeval.summarize`` literally.

    Its 12 stats by name (see :func:`pycocotools_terms`), or its ten keypoint stats for
    ``iou_type: keypoints``.
    """
    if protocol.iou_type == "keypoints":
        return pycocotools_keypoint_summary(acc, protocol)
    return {t.name: t.value(acc, protocol) for t in pycocotools_terms(protocol)}


def configured_summary(acc: Accumulated, protocol: Protocol) -> dict:
    """Headline metrics named after the configured values (``summary: configured``).

    See :func:`configured_terms` for the metrics.
    """
    return {t.name: t.value(acc, protocol) for t in configured_terms(protocol)}


#: ``summary`` field value -> the terms of its headline metrics (what each one averages).
SUMMARY_TERMS = {"pycocotools": pycocotools_terms, "configured": configured_terms}


def ultralytics_summary(acc: Accumulated, protocol: Protocol) -> dict:
    """Ultralytics' ``mAP50`` and ``mAP50-95`` (``Metric.map50`` / ``Metric.map``).

    ``mAP50`` is the mean class AP at the *first* threshold (``all_ap[:, 0].mean()``) and
    ``mAP50-95`` the mean over classes and thresholds (``all_ap.mean()``), both at the first
    area range and the largest ``max_dets``, over the classes with ground truth (Ultralytics'
    ``unique_classes`` are the classes of the labels).
    """
    first = acc.ap[:1, :, 0, -1]
    return {"mAP50": mean_defined(first), "mAP50-95": mean_defined(acc.ap[:, :, 0, -1].T)}


#: CrowdPose's crowd-index bands (xtcocotools ``_summarizeKps_crowd``: ``get_type_result(first=0.2,
#: second=0.8)``): easy below 0.2, medium below 0.8, hard from 0.8.
CROWD_INDEX_BANDS = (("AP(E)", -np.inf, 0.2), ("AP(M)", 0.2, 0.8), ("AP(H)", 0.8, np.inf))


def crowd_band_ap(precision: np.ndarray) -> float:
    """One of xtcocotools' AP(E) / AP(M) / AP(H) from the precision of the band's images.

    Notes
    -----
    xtcocotools' ``get_type_result``: ``round(np.mean(precision[:, :, :, 0, :]), 4)`` over the
    *whole* array, the -1 of classes without ground truth included (not left out as
    ``summarize`` does); reproduced on purpose. NaN (deteval's -1) when no value is defined.

    >>> crowd_band_ap(np.array([0.5, 0.25, np.nan]).reshape(1, 1, 3, 1, 1))
    -0.0833
    """
    values = precision[:, :, :, 0, :]
    if np.isnan(values).all():
        return float("nan")
    return round(float(np.mean(np.where(np.isnan(values), -1.0, values))), 4)


def crowdpose_summary(acc: Accumulated, protocol: Protocol, *, band_precision: tuple | None = None) -> dict:
    """Xtcocotools' ``COCOeval(..., "keypoints_crowd").summarize``: nine stats.

    AP, AP50, AP75, AR, AR50, AR75 at maxDets=20 (by value, as ``_summarizeKps_crowd``),
    then AP(E), AP(M), AP(H) from ``band_precision``: the precision arrays of the images in
    each :data:`CROWD_INDEX_BANDS` (NaN when not given).
    """
    out = {}
    for kind, summarize in (("AP", summary_ap), ("AR", summary_ar)):
        out[kind] = summarize(acc, protocol, max_det=20)
        out[f"{kind}50"] = summarize(acc, protocol, max_det=20, iou_threshold=0.5)
        out[f"{kind}75"] = summarize(acc, protocol, max_det=20, iou_threshold=0.75)
    out = {k: out[k] for k in ("AP", "AP50", "AP75", "AR", "AR50", "AR75")}
    for (name, _, _), precision in zip(CROWD_INDEX_BANDS, band_precision or (None,) * 3, strict=True):
        out[name] = float("nan") if precision is None else crowd_band_ap(precision)
    return out


#: ``summary`` field value -> the function computing a COCO-style protocol's headline metrics.
SUMMARIES = {
    "pycocotools": pycocotools_summary,
    "configured": configured_summary,
    "ultralytics": ultralytics_summary,
    "lvis": lvis_summary,
    "crowdpose": crowdpose_summary,
}


def headline_metrics(
    acc: Accumulated,
    per_class_ap: np.ndarray,
    protocol: Protocol,
    *,
    category_frequency: tuple | None = None,
    band_precision: tuple | None = None,
) -> dict:
    """The result's ``metrics``: ``mAP`` for a single-threshold protocol, else its summary.

    Parameters
    ----------
    acc : Accumulated
    per_class_ap : float64 (n_class,)
        From :func:`class_ap`; NaN for classes without ground truth.
    protocol : Protocol
    category_frequency : tuple of str, optional
        LVIS category frequencies (``summary: lvis`` reads them).
    band_precision : tuple of 3 arrays, optional
        Precision over the images of each crowd-index band (``summary: crowdpose`` reads it).
    """
    if protocol.is_single_threshold:
        return {"mAP": mean_defined(per_class_ap)}
    if protocol.summary == "lvis":
        return lvis_summary(acc, protocol, category_frequency=category_frequency)
    if protocol.summary == "crowdpose":
        return crowdpose_summary(acc, protocol, band_precision=band_precision)
    return SUMMARIES[protocol.summary](acc, protocol)


def per_class_terms(protocol: Protocol) -> tuple:
    """The headline terms computed for each class too (the ``per_class`` rows' extra keys).

    pycocotools' terms under ``summary: pycocotools`` (box and mask scoring), else
    :func:`configured_terms`; without the overall ``AP`` term (a class's ``AP`` is
    :func:`class_ap`, at the largest ``max_dets``).

    >>> from deteval.protocol import get_protocol
    >>> [t.name for t in per_class_terms(get_protocol("coco"))]
    ['AP50', 'AP75', 'APs', 'APm', 'APl', 'AR1', 'AR10', 'AR100', 'ARs', 'ARm', 'ARl']
    """
    if protocol.summary == "pycocotools" and protocol.iou_type != "keypoints":
        terms = pycocotools_terms(protocol)
    else:
        terms = configured_terms(protocol)
    return tuple(t for t in terms if t.name != "AP")


def class_metrics_all(acc: Accumulated, protocol: Protocol) -> list:
    """:func:`class_metrics` of every class, the same numbers bit for bit, each term in one pass.

    A term's values of all classes are read as one (n_class, n) array whose row ``k`` is class
    ``k``'s entries in the C order :func:`class_metrics` reads them; a row with every entry
    defined (or none) is averaged with the others in one ``np.mean(axis=1)`` (the same pairwise
    sum over a contiguous row as ``np.mean`` of that row alone); a row with some entries undefined
    goes through :func:`mean_defined`. At LVIS' 1,203 classes this is one call per term instead
    of one per class and term.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> acc = Accumulated(precision=np.ones((10, 101, 2, 4, 3)), recall=np.full((10, 2, 4, 3), 0.5),
    ...                   scores=np.ones((10, 101, 2, 4, 3)), ap=np.ones((10, 2, 4, 3)))
    >>> class_metrics_all(acc, get_protocol("coco")) == [class_metrics(acc, get_protocol("coco"), k) for k in (0, 1)]
    True
    """
    n_class = acc.recall.shape[1]
    columns = {t.name: _class_values(t, acc, protocol, n_class) for t in per_class_terms(protocol)}
    return [{name: float(values[k]) for name, values in columns.items()} for k in range(n_class)]


def _class_values(term: SummaryTerm, acc: Accumulated, protocol: Protocol, n_class: int) -> np.ndarray:
    """float64 (n_class,): ``term``'s value restricted to each class (:func:`class_metrics_all`)."""
    where = summary_indices(protocol, iou_threshold=term.iou_threshold, area=term.area, max_det=term.max_det)
    if where is None:
        return np.full(n_class, np.nan)
    t, a, m = where
    if term.kind == "AP" and acc.precision.shape[1] > 0:
        rows = np.moveaxis(acc.precision[t][:, :, :, a, m], 2, 0)  # (n_class, T', R)
    elif term.kind == "AP":
        rows = acc.ap[t][:, :, a, m].T  # (n_class, T')
    else:
        rows = acc.recall[t][:, :, a, m].T
    return _row_means(rows, n_class)


def _row_means(rows: np.ndarray, n_class: int) -> np.ndarray:
    """float64 (n_class,): :func:`mean_defined` of each class's entries, bit for bit.

    ``rows`` has the classes on its first axis; row ``k`` flattened in C order is class ``k``'s
    entries in the order :func:`mean_defined` of that class's slice reads them. A row with every
    entry defined is averaged with the others in one ``np.mean(axis=1)`` (the same pairwise sum
    over a contiguous row as ``np.mean`` of the row alone); a row with some entries undefined goes
    through :func:`mean_defined`'s arithmetic, rows with equally many defined entries together; a row
    with none defined is NaN.
    """
    width = int(np.prod(rows.shape[1:], dtype=np.int64))
    rows = np.ascontiguousarray(rows, dtype=np.float64).reshape(n_class, width)
    is_nan = np.isnan(rows)
    has_nan, all_nan = is_nan.any(axis=1), is_nan.all(axis=1)
    out = np.full(n_class, np.nan)
    full = ~has_nan
    if full.any() and width > 0:
        out[full] = np.mean(rows[full], axis=1)
    partial = np.flatnonzero(has_nan & ~all_nan)
    if partial.size:
        # Rows with as many defined entries are compressed to a (rows, count) array (C order kept)
        # and averaged in one call: each row's mean is mean_defined's of it, bit for bit.
        counts = width - is_nan[partial].sum(axis=1)
        for count in np.unique(counts):
            these = partial[counts == count]
            block = rows[these]
            out[these] = np.mean(block[~np.isnan(block)].reshape(these.size, int(count)), axis=1)
    return out


def class_metrics(acc: Accumulated, protocol: Protocol, k: int) -> dict:
    """Class ``k``'s value of each of :func:`per_class_terms` (NaN where undefined).

    Each is the term's mean restricted to class ``k``: pycocotools' ``summarize`` on
    ``precision[t, :, k, a, m]`` (or ``recall[t, k, a, m]``), the -1 entries left out.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> acc = Accumulated(precision=np.ones((10, 101, 2, 4, 3)), recall=np.full((10, 2, 4, 3), 0.5),
    ...                   scores=np.ones((10, 101, 2, 4, 3)), ap=np.ones((10, 2, 4, 3)))
    >>> class_metrics(acc, get_protocol("coco"), 1)["AR100"]
    0.5
    """
    one = Accumulated(
        precision=acc.precision[:, :, k : k + 1],
        recall=acc.recall[:, k : k + 1],
        scores=acc.scores[:, :, k : k + 1],
        ap=acc.ap[:, k : k + 1],
    )
    return {t.name: t.value(one, protocol) for t in per_class_terms(protocol)}
