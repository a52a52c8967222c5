"""Calibration of detection confidences: the detection expected calibration error (D-ECE).

A detector is *calibrated* when, among its detections of confidence ``c``, a fraction ``c`` is
correct. A detection is correct when the protocol's matching at an IoU threshold (default 0.5;
area ``all`` and the largest ``max_dets`` under ``coco``) makes it a true positive; ignored
detections (on crowd regions, out of the area range) are left out. The detections are binned
into equal-width bins of their confidence, optionally also of their box position relative to
the image (``cx``, ``cy``, ``w``, ``h``: the multi-dimensional D-ECE of Kuppers et al., CVPR-W
2020), and::

    D-ECE = sum over bins b of (n_b / n) * |precision_b - mean confidence_b|

where ``precision_b`` is the fraction of correct detections in bin ``b``; empty bins count
nothing. 0 is calibrated.

Notes
-----
The binning and weighting rules are those of ``netcal`` (``netcal.metrics.ECE(bins,
detection=True)``, ``netcal/metrics/Miscalibration.py``, version 1.4.0): every feature is first
clipped to ``[eps, 1 - eps]`` (float64's machine epsilon; the mean confidence of a bin is taken
over the clipped values), the edges of a feature with ``b`` bins are ``numpy.linspace(0, 1, b +
1)``, a value on an inner edge belongs to the upper bin (``numpy.histogramdd``), and the error
sums over all bins of the joint (d-dimensional) binning. Box features outside the image (a box
past its border) are clipped the same way.
"""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.analysis import _lane, _ranking_of
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import ConfigError, InputError
from deteval.evaluate import EvalResult
from deteval.summary import none_if_nan

__all__ = ["FEATURES", "Calibration", "binned_calibration_error", "calibration"]

#: The features D-ECE can bin on; ``confidence`` always comes first.
FEATURES = ("confidence", "cx", "cy", "w", "h")

_EPS = float(np.finfo(np.float64).eps)


def _checked_bins(bins: int | tuple | list, n_features: int) -> tuple[int, ...]:
    counts = (bins,) * n_features if isinstance(bins, (int, np.integer)) else tuple(bins)
    if len(counts) != n_features or not all(
        isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b >= 1 for b in counts
    ):
        raise ConfigError(
            f"calibration bins: expected a positive integer or one per feature ({n_features}), found {bins!r}"
        )
    if max(counts) > 10**6 or int(np.prod([float(b) for b in counts])) >= 2**62:
        raise ConfigError(
            f"calibration bins: expected at most 1,000,000 bins per feature and fewer than 2**62 "
            f"bins in all, found {list(counts)}"
        )
    return tuple(int(b) for b in counts)


def _bin_keys(x: np.ndarray, counts: tuple) -> tuple[np.ndarray, np.ndarray, list]:
    """(clipped x, flat bin key int64 (n,), edges) of samples under netcal's binning."""
    x = np.clip(x, _EPS, 1.0 - _EPS)  # netcal: every sample inside the binning scheme
    edges = [np.linspace(0.0, 1.0, b + 1) for b in counts]
    key = np.zeros(len(x), dtype=np.int64)
    for j, e in enumerate(edges):
        i = np.clip(np.searchsorted(e, x[:, j], side="right") - 1, 0, len(e) - 2)
        key = key * counts[j] + i  # C order (the last feature fastest), as numpy.ravel_multi_index
    return x, key, edges


def _runs(keys: tuple, is_correct: np.ndarray, confidence: np.ndarray) -> tuple:
    """Occupied bins: (first row of each run in sorted order, count, correct, confidence sums)."""
    order = np.lexsort(keys[::-1])  # the first key is the primary one
    change = np.zeros(len(order), dtype=bool)
    if len(order):
        change[0] = True
        for key in keys:
            k = key[order]
            change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    count = np.diff(np.append(starts, len(order))).astype(np.float64)
    correct = np.add.reduceat(is_correct[order].astype(np.float64), starts) if len(order) else count
    conf = np.add.reduceat(confidence[order], starts) if len(order) else count
    return order[starts], count, correct, conf


def binned_calibration_error(x: np.ndarray, is_correct: np.ndarray, *, bins: int | tuple = 10) -> dict:
    """D-ECE of samples with their features, and the occupied bins behind it.

    Parameters
    ----------
    x : float64 (n, d)
        The confidence in column 0, further features (in [0, 1]) after it.
    is_correct : bool (n,)
    bins : int or tuple of int
        Equal-width bins per feature (one count for all, or one per column).

    Returns
    -------
    dict
        ``d_ece`` (NaN without samples), ``edges`` (one float64 array per feature), and per
        occupied bin of the joint binning (ascending flat index, C order of the shape ``bins``):
        ``bin`` int64 flat index, ``count``, ``precision`` and ``confidence`` (float64).
        Only occupied bins are listed: a 5-feature binning of 20 bins each has 3.2 million.

    Examples
    --------
    >>> out = binned_calibration_error(np.array([[0.9], [0.9], [0.2]]), np.array([True, False, False]), bins=2)
    >>> round(out["d_ece"], 6)  # (2/3) |0.5 - 0.9| + (1/3) |0 - 0.2|
    0.333333
    >>> out["bin"].tolist(), out["count"].tolist()
    ([0, 1], [1.0, 2.0])
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    counts = _checked_bins(bins, x.shape[1])
    x, key, edges = _bin_keys(x, counts)
    first, count, correct, conf = _runs((key,), np.asarray(is_correct, dtype=bool), x[:, 0])
    precision, confidence = correct / np.maximum(count, 1), conf / np.maximum(count, 1)
    d_ece = float(np.sum(np.abs(precision - confidence) * (count / len(x)))) if len(x) else float("nan")
    return {
        "d_ece": d_ece,
        "edges": edges,
        "bin": key[first],
        "count": count,
        "precision": precision,
        "confidence": confidence,
    }


def _class_d_ece(
    key: np.ndarray, classes: np.ndarray, is_correct: np.ndarray, conf: np.ndarray, n_class: int
) -> np.ndarray:
    """D-ECE of each class's samples (NaN for a class without one), one sort for all classes."""
    first, count, correct, conf_sum = _runs((classes, key), is_correct, conf)
    term = np.abs(correct / np.maximum(count, 1) - conf_sum / np.maximum(count, 1)) * count
    run_class = classes[first]
    n = np.bincount(classes, minlength=n_class).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.bincount(run_class, weights=term, minlength=n_class) / n, np.nan)


@frozen(eq=False)
class Calibration:
    """What :func:`calibration` found.

    Attributes
    ----------
    d_ece : float
        Over every scored detection (NaN without one).
    per_class : list of dict
        ``{category_id, name, n_det, D-ECE}`` (D-ECE NaN for a class without detections).
    features : tuple of str
    bins : tuple of int
    edges : tuple of float64 arrays
        One per feature.
    reliability : dict
        The reliability curve, per confidence bin (over all other features): ``lo``, ``hi``,
        ``count``, ``confidence`` (mean), ``precision`` (fraction correct); float64 arrays, NaN
        where the bin is empty.
    iou_threshold : float
    area : str
    max_dets : int or None
    """

    d_ece: float
    per_class: list
    features: tuple
    bins: tuple
    edges: tuple
    reliability: dict
    iou_threshold: float
    area: str
    max_dets: int | None

    def to_dict(self) -> dict:
        """The JSON form (NaN -> None)."""
        rel = self.reliability
        return {
            "D-ECE": none_if_nan(self.d_ece),
            "iou_threshold": self.iou_threshold,
            "area": self.area,
            "max_dets": self.max_dets,
            "features": list(self.features),
            "bins": list(self.bins),
            "edges": {f: e.tolist() for f, e in zip(self.features, self.edges)},
            "reliability": [
                {
                    "lo": float(lo),
                    "hi": float(hi),
                    "count": int(n),
                    "confidence": none_if_nan(c),
                    "precision": none_if_nan(p),
                }
                for lo, hi, n, c, p in zip(
                    rel["lo"], rel["hi"], rel["count"], rel["confidence"], rel["precision"], strict=True
                )
            ],
            "per_class": [
                {
                    "category_id": c["category_id"],
                    "name": c["name"],
                    "n_det": c["n_det"],
                    "D-ECE": none_if_nan(c["D-ECE"]),
                }
                for c in self.per_class
            ],
        }


def _box_features(features: tuple, gt: GroundTruth, dt: Detections, dt_rows: np.ndarray) -> list:
    """Columns of the box features (relative to the image size), in ``features`` order."""
    image = dt.image[dt_rows]
    width, height = gt.image_width[image], gt.image_height[image]
    unknown = ~(np.isfinite(width) & np.isfinite(height) & (width > 0) & (height > 0))
    if unknown.any():
        i = int(image[np.argmax(unknown)])
        raise InputError(
            f"{gt.source}: image {gt.image_name[i]!r} (id {int(gt.image_id[i])}): calibration by box "
            f"position expected the image's width and height, found none; add `width` and `height` "
            f"to the image records, or bin on confidence alone"
        )
    box = boxes_as(dt.box[dt_rows], dt.box_format, "xywh")
    columns = {
        "cx": (box[:, 0] + box[:, 2] / 2) / width,
        "cy": (box[:, 1] + box[:, 3] / 2) / height,
        "w": box[:, 2] / width,
        "h": box[:, 3] / height,
    }
    return [columns[f] for f in features[1:]]


def calibration(
    result: EvalResult,
    gt: GroundTruth | None = None,
    dt: Detections | None = None,
    *,
    features: tuple | list = ("confidence",),
    bins: int | tuple | list = 10,
    iou_threshold: float | None = None,
    area: str | None = None,
    max_dets: int | None = None,
) -> Calibration:
    """D-ECE of a detector's confidences, overall and per class, with its reliability curve.

    Parameters
    ----------
    result : EvalResult
        Who matched whom (its protocol's matching decides which detection is correct).
    gt, dt : GroundTruth, Detections, optional
        What ``result`` was scored from; needed only for box features.
    features : sequence of str
        ``("confidence",)`` or confidence followed by any of ``cx``, ``cy``, ``w``, ``h``.
    bins : int or sequence of int
        Equal-width bins per feature (one count for all, or one per feature).
    iou_threshold, area, max_dets
        The lane, as in :func:`deteval.analysis.pr_curve` (default IoU 0.5, the first area, the
        largest ``max_dets``).

    Returns
    -------
    Calibration

    Raises
    ------
    ConfigError
        Unknown features, bad bins, box features without ``gt`` / ``dt``.
    InputError
        A score outside [0, 1] (D-ECE compares scores with frequencies), or box features of an
        image without width and height.

    Examples
    --------
    >>> import deteval
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.8},
    ...       {"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.6}]
    >>> c = calibration(deteval.evaluate(gt, dt, "coco"))
    >>> round(c.d_ece, 6)  # (1/2) |1 - 0.8| + (1/2) |0 - 0.6|
    0.4
    """
    features = tuple(features)
    if (
        not features
        or features[0] != "confidence"
        or len(set(features)) != len(features)
        or not set(features) <= set(FEATURES)
    ):
        raise ConfigError(
            f"calibration features: expected 'confidence' followed by any of cx, cy, w, h (each "
            f"once), found {list(features)}"
        )
    counts = _checked_bins(bins, len(features))
    lane, a = _lane(result, iou_threshold, area)
    thresholds = list(result.protocol.iou_thresholds)
    iou_used = thresholds[lane % len(thresholds)]
    if max_dets is None and result.protocol.max_dets is not None:
        max_dets = max(result.protocol.max_dets)
    table = result.table
    ranking = _ranking_of(result)
    kept = ranking[table.det_rank[ranking] < max_dets] if max_dets is not None else ranking
    kept = kept[~table.lane_is_ignored(lane)[kept]]
    score = table.det_score[kept]
    outside = (score < 0) | (score > 1) | np.isnan(score)
    if outside.any():
        raise InputError(
            f"calibration: detection scores: expected confidences in [0, 1], found "
            f"{float(score[np.argmax(outside)])!r}; D-ECE compares a score with a frequency "
            f"(calibrate or rescale the scores first, or leave --calibration out)"
        )
    columns = [score]
    if len(features) > 1:
        if gt is None or dt is None:
            raise ConfigError(
                f"calibration features {list(features)}: box position needs the ground truth and "
                f"the detections the result was scored from (gt=, dt=); found none"
            )
        from deteval.lrp import _table_dt_rows

        columns += _box_features(features, gt, dt, _table_dt_rows(result, dt)[kept])
    x = np.column_stack(columns) if len(kept) else np.zeros((0, len(features)))
    is_correct = table.lane_is_tp(lane)[kept]
    overall = binned_calibration_error(x, is_correct, bins=counts)
    # The reliability curve: the confidence axis, every other feature summed over.
    n_conf = counts[0]
    conf_bin = overall["bin"] // (int(np.prod(counts[1:])) if len(counts) > 1 else 1)
    n = np.bincount(conf_bin, weights=overall["count"], minlength=n_conf)
    correct = np.bincount(conf_bin, weights=overall["precision"] * overall["count"], minlength=n_conf)
    conf_sum = np.bincount(conf_bin, weights=overall["confidence"] * overall["count"], minlength=n_conf)
    with np.errstate(invalid="ignore", divide="ignore"):
        reliability = {
            "lo": overall["edges"][0][:-1],
            "hi": overall["edges"][0][1:],
            "count": n,
            "confidence": conf_sum / n,
            "precision": correct / n,
        }
    classes = table.det_class[kept].astype(np.int64)
    clipped, key, _ = _bin_keys(x, counts)
    by_class = _class_d_ece(key, classes, is_correct, clipped[:, 0], len(result.category_ids))
    n_det = np.bincount(classes, minlength=len(result.category_ids))
    per_class = [
        {
            "category_id": category_id,
            "name": result.category_names[k],
            "n_det": int(n_det[k]),
            "D-ECE": float(by_class[k]),
        }
        for k, category_id in enumerate(result.category_ids)
    ]
    return Calibration(
        d_ece=overall["d_ece"],
        per_class=per_class,
        features=features,
        bins=counts,
        edges=tuple(overall["edges"]),
        reliability=reliability,
        iou_threshold=float(iou_used),
        area=result.protocol.area_names[a],
        max_dets=max_dets,
    )
