"""The bootstrap of detectors: intervals of every headline metric and per-class AP.

:func:`bootstrap` resamples every given result with the same image multisets (paired) and
places intervals (basic by default, BCa or percentile) and the bootstrap bias beside each
estimate; the JSON pieces of its document are here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.data import GroundTruth
from deteval.errors import ConfigError, InputError
from deteval.evaluate import EvalResult
from deteval.stats.intervals import bias_note, bootstrap_bias, interval, warn_biased
from deteval.stats.plan import positives_per_class
from deteval.stats.resample import ResampledMetrics, resample_metrics
from deteval.stats.settings import (
    JACKKNIFE_GROUPS,
    BootstrapSettings,
    _check_settings,
    bootstrap_weights,
    jackknife_weights,
)


@frozen(eq=False)
class DetectorBootstrap:
    """Point estimates and intervals of one detector under one protocol.

    Attributes
    ----------
    name : str
    result : EvalResult
        The point estimate (all images once).
    samples : ResampledMetrics
    metrics_ci : dict
        Metric name -> :class:`Interval` (empty when ``n == 0``).
    per_class_ci : tuple of Interval
        In the order of ``result.per_class`` (empty when ``n == 0``).
    metrics_bias : dict
        Metric name -> bootstrap bias (mean of the defined resampled values minus the
        estimate; None where undefined); empty when ``n == 0``.
    per_class_bias : tuple of float or None
        Per class, as ``per_class_ci``.
    jackknife : ResampledMetrics or None
        The grouped jackknife (:func:`~deteval.stats.settings.jackknife_weights`) that gives BCa
        its acceleration; None for the other methods and when ``n == 0``.
    """

    name: str
    result: EvalResult
    samples: ResampledMetrics
    metrics_ci: dict
    per_class_ci: tuple
    metrics_bias: dict = field(default_factory=dict)
    per_class_bias: tuple = ()
    jackknife: ResampledMetrics | None = None

    @property
    def protocol(self) -> str:
        """Name of the protocol the result was scored under."""
        return self.result.protocol.name

    def to_dict(self) -> dict:
        """``result.to_dict()`` plus ``metrics_ci`` and each class's ``AP_ci`` (the JSON contract)."""
        return {"detector": self.name, **result_ci_dict(self.result.to_dict(), self)}


@frozen(eq=False)
class BootstrapResult:
    """Intervals of every resampled detector and the weights of the resamples (n, n_images)."""

    settings: BootstrapSettings
    results: tuple
    weights: np.ndarray = field(repr=False)

    def get(self, name: str, protocol: str | None = None) -> DetectorBootstrap:
        """The bootstrap of detector ``name`` (under ``protocol`` when several were resampled)."""
        for r in self.results:
            if r.name == name and (protocol is None or r.protocol == protocol):
                return r
        raise ConfigError(
            f"bootstrap: no detector {name!r}"
            + (f" under protocol {protocol!r}" if protocol else "")
            + f"; found {[(r.name, r.protocol) for r in self.results]}"
        )

    def to_dict(self) -> dict:
        """``{"bootstrap": settings, "results": [...]}`` (the JSON document's pieces)."""
        return {
            "bootstrap": bootstrap_settings_dict(self.settings),
            "results": [r.to_dict() for r in self.results],
        }


def _named_results(results: Any) -> list:
    if isinstance(results, EvalResult):
        return [("detector", results)]
    if isinstance(results, Mapping):
        items = list(results.items())
    elif isinstance(results, Sequence) and not isinstance(results, (str, bytes)):
        items = [(f"detector{i + 1}", r) for i, r in enumerate(results)]
    else:
        raise ConfigError(
            f"bootstrap: expected an EvalResult, a mapping name -> EvalResult or a list "
            f"of them, found {type(results).__name__}"
        )
    for name, r in items:
        if not isinstance(r, EvalResult):
            raise ConfigError(f"bootstrap: result {name!r} must be an EvalResult, found {type(r).__name__}")
    if not items:
        raise ConfigError("bootstrap: no results given")
    return items


def _check_same_gt(result: EvalResult, gt: GroundTruth, name: str) -> None:
    same = (
        result.image_ids is not None
        and np.array_equal(result.image_ids, gt.image_id)
        and tuple(result.category_ids) == tuple(int(c) for c in gt.category_id)
    )
    if same:
        expected = positives_per_class(gt, result.protocol)
        same = np.array_equal(expected, result.table.n_positive)
    if not same:
        raise InputError(
            f"bootstrap: result {name!r} ({result.protocol.name}) was not scored on this "
            f"ground truth (expected {gt.n_images} images, {gt.n_classes} categories "
            f"and the same counted objects; found "
            f"{0 if result.image_ids is None else len(result.image_ids)} images, "
            f"{len(result.category_ids)} categories)"
        )


def bootstrap(
    gt: GroundTruth,
    results: Any,
    *,
    n: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    method: str = "basic",
    workers: int = 1,
    chunk_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> BootstrapResult:
    """Intervals and bias of every headline metric and per-class AP, resampling images.

    Parameters
    ----------
    gt : GroundTruth
        The ground truth every result was scored on.
    results : EvalResult, mapping name -> EvalResult, or list of EvalResult
        Point results (any protocols). All are resampled with the same image multisets
        (paired), so their intervals and differences are comparable.
    n : int
        Number of resamples; 0 gives the point estimates without intervals.
    seed : int
    ci : float
        Confidence level in (0, 1).
    method : {"basic", "bca", "percentile"}
        ``basic`` (default): the percentile interval reflected about the estimate (centred on
        the bias-corrected estimate), extended to the estimate when it stops short of it;
        ``bca``: bias-corrected and accelerated, the acceleration from a jackknife over groups
        of images (:func:`~deteval.stats.settings.jackknife_weights`: at most 100 more
        re-accumulations per detector); ``percentile``: the resampled values' quantiles (right
        for an unbiased statistic, which AP is not). docs/statistics.md measures the three.
    workers : int
        Processes over which resamples are split (identical numbers for any value).
    chunk_size : int, optional
        Resamples accumulated at once (identical numbers for any value).
    progress : callable, optional
        Called with the number of re-accumulations just done (resamples and jackknife rows),
        as they finish (the CLI's progress bar); they total ``len(results) * (n + the
        jackknife's rows)``, :func:`bootstrap_rows` per detector.

    Returns
    -------
    BootstrapResult

    Raises
    ------
    ConfigError
        Invalid ``n``, ``seed``, ``ci`` or ``method``.
    InputError
        A result not scored on ``gt``.

    Warns
    -----
    BootstrapBiasWarning
        A headline metric (or, in one warning, some classes' AP) whose resampled values lie
        (almost) all on one side of it: its bias exceeds its interval's half-width.

    Examples
    --------
    >>> import deteval
    >>> gt = deteval.load_ground_truth({"images": [{"id": i} for i in (1, 2, 3)],
    ...     "categories": [{"id": 1, "name": "cat"}],
    ...     "annotations": [{"id": i, "image_id": i, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                      "area": 81, "iscrowd": 0} for i in (1, 2, 3)]})
    >>> dt = deteval.load_detections([{"image_id": i, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                                "score": 0.5} for i in (1, 2)], gt)
    >>> boot = bootstrap(gt, {"A": deteval.evaluate(gt, dt, "voc2010")}, n=200, seed=0)
    >>> [round(x, 3) for x in boot.results[0].metrics_ci["mAP"].as_list()]  # the estimate: 2/3
    [0.333, 1.0]
    """
    _check_settings(n, seed, ci, method)
    settings = BootstrapSettings(n=int(n), seed=int(seed), ci=float(ci), method=method)
    items = _named_results(results)
    for name, r in items:
        _check_same_gt(r, gt, name)
    weights = bootstrap_weights(gt.n_images, n=settings.n, seed=settings.seed)
    n_boot = weights.shape[0]
    if settings.method == "bca" and settings.n:
        # The jackknife rows ride along with the resamples: one plan, one pass.
        weights_all = np.vstack([weights, jackknife_weights(gt.n_images, seed=settings.seed)])
    else:
        weights_all = weights
    max_weight = weights_all.max(axis=0) if weights_all.size else np.zeros(gt.n_images, np.int64)
    out = []
    for name, r in items:
        both = resample_metrics(
            r.table,
            gt,
            r.protocol,
            weights_all,
            workers=workers,
            chunk_size=chunk_size,
            max_weight=max_weight,
            progress=progress,
        )
        samples = _rows(both, 0, n_boot)
        jackknife = _rows(both, n_boot, weights_all.shape[0]) if weights_all is not weights else None
        out.append(_detector_bootstrap(name, r, samples, jackknife, settings))
    return BootstrapResult(settings=settings, results=tuple(out), weights=weights)


def bootstrap_rows(n_images: int, *, n: int, method: str) -> int:
    """Re-accumulations per detector of :func:`bootstrap`: ``n`` resamples (+ BCa's jackknife rows).

    Examples
    --------
    >>> bootstrap_rows(5000, n=1000, method="bca"), bootstrap_rows(5000, n=1000, method="percentile")
    (1100, 1000)
    """
    extra = min(JACKKNIFE_GROUPS, n_images) if method == "bca" and n else 0
    return int(n) + extra


def _rows(samples: ResampledMetrics, lo: int, hi: int) -> ResampledMetrics:
    return ResampledMetrics(samples.metric_names, samples.metrics[lo:hi], samples.per_class_ap[lo:hi])


def _detector_bootstrap(
    name: str,
    result: EvalResult,
    samples: ResampledMetrics,
    jackknife: ResampledMetrics | None,
    settings: BootstrapSettings,
) -> DetectorBootstrap:
    """Intervals and biases of one detector from its resampled (and jackknifed) values."""
    if not settings.n:
        return DetectorBootstrap(name=name, result=result, samples=samples, metrics_ci={}, per_class_ci=())
    points = [float(result.metrics[k]) for k in samples.metric_names]
    per_class_points = [float("nan") if c["AP"] is None else float(c["AP"]) for c in result.per_class]

    def one(values: np.ndarray, point: float, jack: np.ndarray | None) -> tuple:
        found = interval(values, point, ci=settings.ci, method=settings.method, jackknife=jack)
        return found, bootstrap_bias(values, point)

    metrics = [
        one(samples.metrics[:, j], points[j], None if jackknife is None else jackknife.metrics[:, j])
        for j in range(len(points))
    ]
    notes = [
        bias_note(samples.metrics[:, j], points[j], ci=settings.ci, what=samples.metric_names[j])
        for j in range(len(points))
    ]
    n_classes = sum(
        bias_note(samples.per_class_ap[:, k], per_class_points[k], ci=settings.ci, what="") is not None
        for k in range(samples.per_class_ap.shape[1])
    )
    where = f"detector {name!r} ({result.protocol.name})"
    warn_biased([n for n in notes if n], where=where, ci=settings.ci, n_classes=n_classes)
    per_class = [
        one(
            samples.per_class_ap[:, k],
            per_class_points[k],
            None if jackknife is None else jackknife.per_class_ap[:, k],
        )
        for k in range(samples.per_class_ap.shape[1])
    ]
    return DetectorBootstrap(
        name=name,
        result=result,
        samples=samples,
        metrics_ci={k: iv for k, (iv, _) in zip(samples.metric_names, metrics)},
        per_class_ci=tuple(iv for iv, _ in per_class),
        metrics_bias={k: b for k, (_, b) in zip(samples.metric_names, metrics)},
        per_class_bias=tuple(b for _, b in per_class),
        jackknife=jackknife,
    )


# --------------------------------------------------------------------------------------------
# JSON pieces (the CLI's renderer places them)
# --------------------------------------------------------------------------------------------


def metrics_ci_dict(detector: DetectorBootstrap) -> dict:
    """``{"AP": [lo, hi], ...}`` (None where no resample defines the metric); {} when n == 0."""
    return {k: v.as_list() for k, v in detector.metrics_ci.items()}


def per_class_ci_list(detector: DetectorBootstrap) -> list:
    """``[lo, hi]`` or None per class, in ``per_class`` order; [] when n == 0."""
    return [v.as_list() for v in detector.per_class_ci]


def metrics_bias_dict(detector: DetectorBootstrap) -> dict:
    """``{"AP": bias, ...}``: the bootstrap bias beside each estimate (None where undefined)."""
    return dict(detector.metrics_bias)


def per_class_bias_list(detector: DetectorBootstrap) -> list:
    """The bootstrap bias of each class's AP, in ``per_class`` order; [] when n == 0."""
    return list(detector.per_class_bias)


def result_ci_dict(result_dict: dict, detector: DetectorBootstrap) -> dict:
    """A copy of one ``results`` entry with the intervals and biases placed.

    ``metrics_ci`` and ``metrics_bias`` beside ``metrics``; each class's ``AP_ci`` and
    ``AP_bias`` beside its ``AP``. With ``n == 0`` the entry is returned unchanged (no intervals).
    """
    out = dict(result_dict)
    if not detector.metrics_ci:
        return out
    out["metrics_ci"] = metrics_ci_dict(detector)
    out["metrics_bias"] = metrics_bias_dict(detector)
    cis, biases = per_class_ci_list(detector), per_class_bias_list(detector)
    out["per_class"] = [
        {**c, "AP_ci": ci, "AP_bias": b} for c, ci, b in zip(result_dict.get("per_class", []), cis, biases)
    ]
    return out


def bootstrap_settings_dict(settings: BootstrapSettings) -> dict:
    """The document's ``bootstrap`` object: ``{"n", "seed", "ci", "method"}``."""
    return settings.to_dict()
