"""Calibration and optimal LRP of a scored result, with bootstrap intervals and paired differences.

The front door of ``--calibration`` / ``--lrp`` in ``deteval evaluate``, ``compare``, ``plot`` and
``report`` (``deteval analyze`` has its own, through :func:`deteval.diagnose.analyze`): the point
values are :func:`deteval.beyond.beyond_ap` 's, the intervals :mod:`deteval.stats.beyond` 's,
drawn on the images as every deteval bootstrap of the same seed draws them.
"""

from __future__ import annotations

from typing import Any

from deteval._values import frozen
from deteval.beyond import beyond_ap
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult, match, score
from deteval.lrp import check_tau
from deteval.protocol import Protocol
from deteval.stats.beyond import beyond_differences, beyond_intervals

__all__ = ["BeyondOptions", "beyond_document", "with_thresholds", "protocol_with_thresholds"]


@frozen
class BeyondOptions:
    """Which of calibration and optimal LRP, and how.

    Attributes
    ----------
    calibration, lrp : bool
    iou : float
        The IoU threshold at which a detection is correct for calibration.
    lrp_tau : float
        LRP's IoU threshold.
    calibration_features : tuple of str
        ``confidence``, then any of ``cx``, ``cy``, ``w``, ``h``.
    calibration_bins : int or tuple of int
    """

    calibration: bool = False
    lrp: bool = False
    iou: float = 0.5
    lrp_tau: float = 0.5
    calibration_features: tuple = ("confidence",)
    calibration_bins: int | tuple = 10

    @property
    def wanted(self) -> bool:
        """Whether any part is asked for."""
        return self.calibration or self.lrp

    def keywords(self) -> dict:
        """The keyword arguments of :func:`deteval.beyond.beyond_ap` and the intervals."""
        return {
            "calibration": self.calibration,
            "lrp": self.lrp,
            "iou": self.iou,
            "lrp_tau": self.lrp_tau,
            "calibration_features": tuple(self.calibration_features),
            "calibration_bins": self.calibration_bins,
        }


def with_thresholds(
    result: EvalResult, gt: GroundTruth, dt: Detections, options: BeyondOptions
) -> EvalResult:
    """``result``, or ``dt`` scored again with the IoU thresholds the parts need added.

    Calibration is measured at ``options.iou`` and LRP at ``options.lrp_tau``: a protocol
    without them (``voc2007`` has only 0.5; ``--lrp-tau 0.6`` under ``coco``) is scored once more
    with them added (each threshold's matching is its own lane: the others are unchanged).
    """
    scored = protocol_with_thresholds(result.protocol, options)
    return result if scored is result.protocol else score(match(gt, dt, scored), gt, scored)


def protocol_with_thresholds(protocol: Protocol, options: BeyondOptions) -> Protocol:
    """``protocol`` itself, or with the IoU thresholds of calibration / LRP it lacks added."""
    wanted = {options.iou} if options.calibration else set()
    wanted |= {options.lrp_tau} if options.lrp else set()
    missing = sorted(wanted - set(protocol.iou_thresholds))
    if not missing:
        return protocol
    return protocol.replace(iou_thresholds=sorted({*protocol.iou_thresholds, *missing}))


def beyond_document(
    result: EvalResult,
    gt: GroundTruth,
    dt: Detections,
    options: BeyondOptions,
    *,
    bootstrap: int = 0,
    seed: int = 0,
    ci: float = 0.95,
    method: str = "basic",
    against: tuple[EvalResult, Detections] | None = None,
    labels: tuple[str, str] = ("b", "a"),
) -> dict:
    """The JSON parts of calibration and optimal LRP of one scored detector.

    Parameters
    ----------
    result : EvalResult
        ``dt`` scored against ``gt`` (its protocol decides the matching).
    gt, dt : GroundTruth, Detections
    options : BeyondOptions
    bootstrap, seed, ci, method
        With ``bootstrap`` > 0: intervals over that many image resamples (``method`` basic or
        percentile), the draws of :func:`deteval.stats.settings.bootstrap_weights` for ``seed``
        (the draws of ``deteval evaluate --bootstrap`` of the same seed).
    against : (EvalResult, Detections), optional
        A reference detector on the same ground truth and protocol: with ``bootstrap``, the
        paired differences ``result - against`` (``paired``).
    labels : (str, str)
        The names of ``result`` and ``against`` in ``paired``.

    Returns
    -------
    dict
        ``calibration`` and / or ``lrp`` (the documents of ``deteval analyze --calibration
        --lrp``); with ``bootstrap``, ``calibration_ci`` / ``lrp_ci`` and ``bootstrap`` (the
        settings); with ``against`` also ``paired`` = ``{dt, against, bootstrap, calibration_ci,
        lrp_ci}`` of the differences.

    Raises
    ------
    ConfigError
        No part asked for, a bootstrap method other than basic or percentile, or ``against``
        without ``bootstrap``.

    Examples
    --------
    >>> import deteval
    >>> g = deteval.load_ground_truth("fixtures/coco/gt.json")
    >>> d = deteval.load_detections("fixtures/coco/dt.json", g)
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     r = deteval.evaluate(g, d, "coco")
    >>> doc = beyond_document(r, g, d, BeyondOptions(lrp=True), bootstrap=50, seed=1)
    >>> sorted(doc), doc["lrp"]["moLRP"] == doc["lrp_ci"]["moLRP"]["value"]
    (['bootstrap', 'lrp', 'lrp_ci'], True)
    """
    if not options.wanted:
        raise ConfigError("beyond_document: expected calibration=True and / or lrp=True, found neither")
    if method not in ("basic", "percentile"):
        raise ConfigError(
            f"--bootstrap-method {method}: the intervals of D-ECE and oLRP are basic or percentile "
            "(BCa's jackknife would re-run every class); use --bootstrap-method basic or percentile"
        )
    if against is not None and not bootstrap:
        raise ConfigError(
            "beyond_document: the paired differences are bootstrap intervals; expected bootstrap > 0"
        )
    if options.lrp:
        check_tau(options.lrp_tau)
    keywords = options.keywords()
    found = beyond_ap(gt, dt, result.protocol, result=result, **keywords)
    out: dict[str, Any] = found.to_dict()
    if not bootstrap:
        return out
    scored = with_thresholds(result, gt, dt, options)
    out.update(
        beyond_intervals(scored, gt, dt, n=bootstrap, seed=seed, ci=ci, method=method, **keywords).to_dict()
    )
    if against is not None:
        other = with_thresholds(against[0], gt, against[1], options)
        paired = beyond_differences(
            other, scored, gt, against[1], dt, n=bootstrap, seed=seed, ci=ci, method=method, **keywords
        )
        out["paired"] = {"dt": labels[0], "against": labels[1], **paired.to_dict()}
    return out
