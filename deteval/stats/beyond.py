"""Bootstrap intervals of calibration (D-ECE) and optimal LRP, and their paired differences.

The images are resampled with replacement (:func:`deteval.stats.settings.bootstrap_weights`, the
draws of every other deteval bootstrap for the same seed): a resample repeats each image's
detections and ground truth as many times as the image was drawn, then D-ECE and oLRP are
computed by the same functions as the point values (:func:`deteval.calibration.binned_calibration_error`,
:func:`deteval.lrp.lrp_curve`). With every weight 1 the resample *is* the data: the tests check
that this gives the point values exactly. Two detectors scored on the same ground truth share the
draws, so their differences are paired.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.analysis import _lane, _ranked_rows, _ranking_of
from deteval.calibration import (
    _bin_keys,
    _box_features,
    _checked_bins,
    _class_d_ece,
    binned_calibration_error,
)
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult
from deteval.lrp import check_tau, lrp_curve, tp_ious
from deteval.stats.intervals import Interval, interval
from deteval.stats.plan import _positives_per_image
from deteval.stats.settings import bootstrap_weights

__all__ = ["BeyondSamples", "BeyondIntervals", "beyond_samples", "beyond_intervals", "beyond_differences"]

LRP_KEYS = ("oLRP", "oLRP_loc", "oLRP_FP", "oLRP_FN")


@frozen(eq=False)
class BeyondSamples:
    """The point values and every resample's values of one detector.

    Attributes
    ----------
    point : dict
        ``{"D-ECE": float, "D-ECE_per_class": (n_class,), "moLRP"...: float,
        "oLRP"... : (n_class,)}``: the keys of the parts computed.
    samples : dict
        The same keys, each with a leading resample axis (n, ...). NaN where undefined.
    category_ids : tuple of int
    """

    point: dict
    samples: dict
    category_ids: tuple
    names: tuple


@frozen(eq=False)
class BeyondIntervals:
    """Intervals of D-ECE and oLRP (overall and per class) over image resamples.

    Attributes
    ----------
    calibration : dict or None
        ``{"D-ECE": {"value", "ci", "n_undefined"}, "per_class": [...]}``.
    lrp : dict or None
        ``{"moLRP": ..., "moLRP_loc": ..., "moLRP_FP": ..., "moLRP_FN": ..., "per_class": [...]}``.
    settings : dict
        ``n``, ``seed``, ``ci``, ``method``.
    """

    calibration: dict | None
    lrp: dict | None
    settings: dict

    def to_dict(self) -> dict:
        """The JSON form (``calibration_ci``, ``lrp_ci``, ``bootstrap``)."""
        out: dict = {"bootstrap": dict(self.settings)}
        if self.calibration is not None:
            out["calibration_ci"] = self.calibration
        if self.lrp is not None:
            out["lrp_ci"] = self.lrp
        return out


def _none(value: float) -> float | None:
    return None if value != value else float(value)


def _calibration_parts(
    result: EvalResult, gt: GroundTruth | None, dt: Detections | None, features, bins, iou
):
    """(x, is_correct, class, image) of the detections :func:`deteval.calibration.calibration` bins."""
    features = tuple(features)
    counts = _checked_bins(bins, len(features))
    lane, _ = _lane(result, iou, None)
    table = result.table
    max_dets = None if result.protocol.max_dets is None else max(result.protocol.max_dets)
    ranking = _ranking_of(result)
    kept = ranking[table.det_rank[ranking] < max_dets] if max_dets is not None else ranking
    kept = kept[~table.lane_is_ignored(lane)[kept]]
    columns = [table.det_score[kept]]
    if len(features) > 1:
        if gt is None or dt is None:
            raise ConfigError("calibration intervals with box features need gt= and dt=")
        from deteval.lrp import _table_dt_rows

        columns += _box_features(features, gt, dt, _table_dt_rows(result, dt)[kept])
    x = np.column_stack(columns) if len(kept) else np.zeros((0, len(features)))
    return (
        x,
        table.lane_is_tp(lane)[kept],
        table.det_class[kept].astype(np.int64),
        table.det_image[kept],
        counts,
    )


def _d_ece(x, is_correct, classes, counts, n_class) -> tuple[float, np.ndarray]:
    overall = binned_calibration_error(x, is_correct, bins=counts)["d_ece"]
    if not len(x):
        return overall, np.full(n_class, np.nan)
    clipped, key, _ = _bin_keys(x, counts)
    return overall, _class_d_ece(key, classes, is_correct, clipped[:, 0], n_class)


def _olrp(is_tp, is_fp, iou, n_positive: float, tau: float) -> tuple[float, float, float, float]:
    """(oLRP, loc, FP, FN) as :func:`deteval.lrp.optimal_lrp` computes them; NaN when undefined."""
    nan = float("nan")
    if n_positive <= 0:
        return nan, nan, nan, nan
    if not is_tp.any():
        return 1.0, nan, nan, 1.0
    c = lrp_curve(is_tp, is_fp, iou, n_positive, tau)  # type: ignore[arg-type]
    i = int(np.argmin(c["lrp"]))
    tp, fp, fn = c["tp"][i], c["fp"][i], c["fn"][i]
    return float(c["lrp"][i]), float(c["loc"][i] / tp), float(fp / (tp + fp)), float(fn / n_positive)


def beyond_samples(
    result: EvalResult,
    gt: GroundTruth,
    dt: Detections | None = None,
    *,
    weights: np.ndarray,
    calibration: bool = True,
    lrp: bool = True,
    iou: float = 0.5,
    lrp_tau: float = 0.5,
    calibration_features: tuple | list = ("confidence",),
    calibration_bins: int | tuple | list = 10,
) -> BeyondSamples:
    """D-ECE and oLRP of ``result`` under each row of image ``weights``.

    Parameters
    ----------
    result : EvalResult
        Its protocol must have ``iou`` (calibration) and ``lrp_tau`` (LRP) among its thresholds.
    gt, dt : GroundTruth, Detections
        What ``result`` was scored from (``dt`` for box features and the true positives' IoU).
    weights : int64 (n, n_img)
        How many times each image is drawn in each resample.

    Returns
    -------
    BeyondSamples
    """
    weights = np.asarray(weights, dtype=np.int64)
    n_class = len(result.category_ids)
    point: dict = {}
    samples: dict = {}
    if calibration:
        x, ok, cls, img, counts = _calibration_parts(
            result, gt, dt, calibration_features, calibration_bins, iou
        )
        point["D-ECE"], point["D-ECE_per_class"] = _d_ece(x, ok, cls, counts, n_class)
        overall = np.full(len(weights), np.nan)
        per = np.full((len(weights), n_class), np.nan)
        for b, w in enumerate(weights):
            rows = np.repeat(np.arange(len(x)), w[img])
            overall[b], per[b] = _d_ece(x[rows], ok[rows], cls[rows], counts, n_class)
        samples["D-ECE"], samples["D-ECE_per_class"] = overall, per
    if lrp:
        if dt is None:
            raise ConfigError("LRP intervals need the detections (dt=) for the true positives' IoU")
        check_tau(lrp_tau)
        lane, a = _lane(result, lrp_tau, None)
        table = result.table
        ious = tp_ious(result, gt, dt, iou_threshold=lrp_tau)
        lane_tp, lane_ignored = table.lane_is_tp(lane), table.lane_is_ignored(lane)
        positives = _positives_per_image(gt, result.protocol)
        n_area = len(result.protocol.area_ranges)
        ranking = _ranking_of(result)
        per_point = np.full((4, n_class), np.nan)
        per_samples = np.full((len(weights), 4, n_class), np.nan)
        for k in range(n_class):
            column = k * n_area + a
            lo, hi = positives.bounds[column], positives.bounds[column + 1]
            pos_img, pos_count = positives.img[lo:hi], positives.count[lo:hi]
            rows = _ranked_rows(result, k, None, ranking)
            is_tp = lane_tp[rows]
            is_fp = ~is_tp & ~lane_ignored[rows]
            keep = is_tp | is_fp
            rows, is_tp, is_fp = rows[keep], is_tp[keep], is_fp[keep]
            iou_k, img_k = ious[rows], table.det_image[rows]
            per_point[:, k] = _olrp(is_tp, is_fp, iou_k, float(pos_count.sum()), lrp_tau)
            for b, w in enumerate(weights):
                rep = np.repeat(np.arange(len(rows)), w[img_k])
                n_pos = float(np.dot(w[pos_img], pos_count))
                per_samples[b, :, k] = _olrp(is_tp[rep], is_fp[rep], iou_k[rep], n_pos, lrp_tau)
        with np.errstate(invalid="ignore"):
            for j, key in enumerate(LRP_KEYS):
                point[key] = per_point[j]
                samples[key] = per_samples[:, j, :]
                point["m" + key] = _nanmean(per_point[j])
                samples["m" + key] = np.array([_nanmean(row) for row in per_samples[:, j, :]])
    return BeyondSamples(point, samples, tuple(result.category_ids), tuple(result.category_names))


def _nanmean(values: np.ndarray) -> float:
    defined = values[~np.isnan(values)]
    return float(np.mean(defined)) if defined.size else float("nan")


def _interval_dict(samples: np.ndarray, point: float, ci: float, method: str, bounds=(0.0, 1.0)) -> dict:
    found: Interval = interval(samples, point, ci=ci, method=method, bounds=bounds)
    return {"value": _none(point), **found.to_dict()}


def _parts(
    found: BeyondSamples, ci: float, method: str, bounds=(0.0, 1.0)
) -> tuple[dict | None, dict | None]:
    cal: dict[str, Any] | None = None
    lrp: dict[str, Any] | None = None
    if "D-ECE" in found.point:
        cal = {
            "D-ECE": _interval_dict(found.samples["D-ECE"], found.point["D-ECE"], ci, method, bounds),
            "per_class": [
                {
                    "category_id": cid,
                    "name": name,
                    "D-ECE": _interval_dict(
                        found.samples["D-ECE_per_class"][:, k],
                        found.point["D-ECE_per_class"][k],
                        ci,
                        method,
                        bounds,
                    ),
                }
                for k, (cid, name) in enumerate(zip(found.category_ids, found.names))
            ],
        }
    if "oLRP" in found.point:
        lrp = {
            "m" + key: _interval_dict(found.samples["m" + key], found.point["m" + key], ci, method, bounds)
            for key in LRP_KEYS
        }
        lrp["per_class"] = [
            {
                "category_id": cid,
                "name": name,
                **{
                    key: _interval_dict(found.samples[key][:, k], found.point[key][k], ci, method, bounds)
                    for key in LRP_KEYS
                },
            }
            for k, (cid, name) in enumerate(zip(found.category_ids, found.names))
        ]
    return cal, lrp


def beyond_intervals(
    result: EvalResult,
    gt: GroundTruth,
    dt: Detections | None = None,
    *,
    n: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    method: str = "basic",
    **options: Any,
) -> BeyondIntervals:
    """Bootstrap intervals of D-ECE and optimal LRP (overall, components, per class).

    Parameters
    ----------
    result : EvalResult
    gt, dt : GroundTruth, Detections
        What ``result`` was scored from.
    n, seed, ci : int, int, float
        Resamples, the seed of their draws, the confidence level.
    method : {"basic", "percentile"}
        ``basic`` (the default of every deteval bootstrap, docs/statistics.md: reflected about
        the value, clipped to the measure's range; D-ECE is biased upwards on few detections),
        or ``percentile``. BCa is not offered here (its jackknife would re-run every class).
    **options
        ``calibration``, ``lrp``, ``iou``, ``lrp_tau``, ``calibration_features``,
        ``calibration_bins`` of :func:`beyond_samples`.

    Returns
    -------
    BeyondIntervals

    Examples
    --------
    >>> import deteval
    >>> gt = {"images": [{"id": i} for i in (1, 2)], "categories": [{"id": 1, "name": "a"}],
    ...       "annotations": [{"id": i, "image_id": i, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0} for i in (1, 2)]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 9], "score": 0.8},
    ...       {"image_id": 2, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.6}]
    >>> g = deteval.load_ground_truth(gt); d = deteval.load_detections(dt, g)
    >>> found = beyond_intervals(deteval.evaluate(g, d, "coco"), g, d, n=200, seed=1)
    >>> round(found.calibration["D-ECE"]["value"], 6), found.lrp["moLRP"]["value"]  # (0.2 + 0 + 1) / 2
    (0.4, 0.6)
    """
    if method not in ("percentile", "basic"):
        raise ConfigError(f"beyond intervals: method must be 'percentile' or 'basic', found {method!r}")
    weights = bootstrap_weights(gt.n_images, n=n, seed=seed)
    found = beyond_samples(result, gt, dt, weights=weights, **options)
    cal, lrp = _parts(found, ci, method)
    return BeyondIntervals(cal, lrp, {"n": n, "seed": seed, "ci": ci, "method": method})


def beyond_differences(
    result_a: EvalResult,
    result_b: EvalResult,
    gt: GroundTruth,
    dt_a: Detections | None = None,
    dt_b: Detections | None = None,
    *,
    n: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    method: str = "basic",
    **options: Any,
) -> BeyondIntervals:
    """Paired intervals of ``b - a`` for D-ECE and optimal LRP: both detectors on the same draws.

    A difference's interval that excludes 0 says the two detectors differ on this measure at
    level ``ci`` (lower is better for both D-ECE and oLRP).

    Returns
    -------
    BeyondIntervals
        Values and intervals of the differences ``b - a`` (bounded to [-1, 1]).
    """
    if method not in ("percentile", "basic"):
        raise ConfigError(f"beyond intervals: method must be 'percentile' or 'basic', found {method!r}")
    weights = bootstrap_weights(gt.n_images, n=n, seed=seed)
    a = beyond_samples(result_a, gt, dt_a, weights=weights, **options)
    b = beyond_samples(result_b, gt, dt_b, weights=weights, **options)
    if a.category_ids != b.category_ids:
        raise ConfigError(
            "beyond differences: the two results have different categories; expected the same ground truth"
        )
    diff = BeyondSamples(
        point={k: np.asarray(b.point[k]) - np.asarray(a.point[k]) for k in a.point},
        samples={k: b.samples[k] - a.samples[k] for k in a.samples},
        category_ids=a.category_ids,
        names=a.names,
    )
    point = {k: (float(v) if np.ndim(v) == 0 else v) for k, v in diff.point.items()}
    cal, lrp = _parts(
        BeyondSamples(point, diff.samples, diff.category_ids, diff.names), ci, method, (-1.0, 1.0)
    )
    return BeyondIntervals(
        cal, lrp, {"n": n, "seed": seed, "ci": ci, "method": method, "difference": "b - a"}
    )
