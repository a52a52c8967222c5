"""The bootstrap of detectors: intervals of every headline metric and per-class AP.

:func:`bootstrap` resamples every given result with the same image multisets (paired) and
places percentile intervals; the JSON pieces of its document are here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.data import GroundTruth
from deteval.errors import ConfigError, InputError
from deteval.evaluate import EvalResult
from deteval.stats.intervals import percentile_interval
from deteval.stats.plan import positives_per_class
from deteval.stats.resample import ResampledMetrics, resample_metrics
from deteval.stats.settings import BootstrapSettings, _check_settings, bootstrap_weights


@dataclass(frozen=True, eq=False)
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
    """

    name: str
    result: EvalResult
    samples: ResampledMetrics
    metrics_ci: dict
    per_class_ci: tuple

    @property
    def protocol(self) -> str:
        """Name of the protocol the result was scored under."""
        return self.result.protocol.name

    def to_dict(self) -> dict:
        """``result.to_dict()`` plus ``metrics_ci`` and each class's ``AP_ci`` (the JSON contract)."""
        return {"detector": self.name, **result_ci_dict(self.result.to_dict(), self)}


@dataclass(frozen=True, eq=False)
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
    method: str = "percentile",
    workers: int = 1,
    chunk_size: int | None = None,
) -> BootstrapResult:
    """Percentile intervals of every headline metric and per-class AP, resampling images.

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
    method : {"percentile"}
    workers : int
        Processes over which resamples are split (identical numbers for any value).
    chunk_size : int, optional
        Resamples accumulated at once (identical numbers for any value).

    Returns
    -------
    BootstrapResult

    Raises
    ------
    ConfigError
        Invalid ``n``, ``seed``, ``ci`` or ``method``.
    InputError
        A result not scored on ``gt``.

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
    >>> boot.results[0].metrics_ci["mAP"].as_list()
    [0.0, 1.0]
    """
    _check_settings(n, seed, ci, method)
    settings = BootstrapSettings(n=int(n), seed=int(seed), ci=float(ci), method=method)
    items = _named_results(results)
    for name, r in items:
        _check_same_gt(r, gt, name)
    weights = bootstrap_weights(gt.n_images, n=settings.n, seed=settings.seed)
    max_weight = weights.max(axis=0) if weights.size else np.zeros(gt.n_images, np.int64)
    out = []
    for name, r in items:
        samples = resample_metrics(
            r.table, gt, r.protocol, weights, workers=workers, chunk_size=chunk_size, max_weight=max_weight
        )
        if settings.n:
            metrics_ci = {
                k: percentile_interval(samples.metrics[:, j], ci=settings.ci)
                for j, k in enumerate(samples.metric_names)
            }
            per_class_ci = tuple(
                percentile_interval(samples.per_class_ap[:, k], ci=settings.ci) for k in range(gt.n_classes)
            )
        else:
            metrics_ci, per_class_ci = {}, ()
        out.append(
            DetectorBootstrap(
                name=name, result=r, samples=samples, metrics_ci=metrics_ci, per_class_ci=per_class_ci
            )
        )
    return BootstrapResult(settings=settings, results=tuple(out), weights=weights)


# --------------------------------------------------------------------------------------------
# JSON pieces (the CLI's renderer places them)
# --------------------------------------------------------------------------------------------


def metrics_ci_dict(detector: DetectorBootstrap) -> dict:
    """``{"AP": [lo, hi], ...}`` (None where no resample defines the metric); {} when n == 0."""
    return {k: v.as_list() for k, v in detector.metrics_ci.items()}


def per_class_ci_list(detector: DetectorBootstrap) -> list:
    """``[lo, hi]`` or None per class, in ``per_class`` order; [] when n == 0."""
    return [v.as_list() for v in detector.per_class_ci]


def result_ci_dict(result_dict: dict, detector: DetectorBootstrap) -> dict:
    """A copy of one ``results`` entry with ``metrics_ci`` and each class's ``AP_ci`` placed.

    With ``n == 0`` the entry is returned unchanged (no intervals).
    """
    out = dict(result_dict)
    if not detector.metrics_ci:
        return out
    out["metrics_ci"] = metrics_ci_dict(detector)
    cis = per_class_ci_list(detector)
    out["per_class"] = [{**c, "AP_ci": ci} for c, ci in zip(result_dict.get("per_class", []), cis)]
    return out


def bootstrap_settings_dict(settings: BootstrapSettings) -> dict:
    """The document's ``bootstrap`` object: ``{"n", "seed", "ci", "method"}``."""
    return settings.to_dict()
