"""Bootstrap intervals over the resamples where a value is defined: BCa, basic, percentile.

The statistic (an AP, a mean of per-class APs) is biased: the precision envelope takes maxima,
and a small class's AP is a ratio of small counts, so a test set's AP overstates the AP of the
images' population, and the resampled values sit above the estimate more often than below (87%
of them on a 5,000-image set). The percentile interval is right for an unbiased statistic, not
for this one. The default is the basic interval (the percentile interval reflected about the
estimate, so centred on the bias-corrected estimate), which covered the population AP best in
the simulation of docs/statistics.md; BCa and percentile are kept by name. The bootstrap bias
is reported beside each estimate.
"""

from __future__ import annotations

import warnings
from statistics import NormalDist

import numpy as np

from deteval._values import frozen
from deteval.errors import DetevalWarning
from deteval.stats.settings import _check_settings

_NORMAL = NormalDist()


class BootstrapBiasWarning(DetevalWarning):
    """A value's resamples lie (almost) all on one side of it: its bias exceeds its interval's reach.

    Fewer than ``(1 - ci) / 2`` of the resampled values on one side of the estimate: the
    percentile and BCa intervals then exclude the estimate, and the estimate itself is off the
    population value by more than the interval's half-width (docs/statistics.md).
    """


@frozen
class Interval:
    """An interval over the resamples where the value is defined.

    Attributes
    ----------
    lo, hi : float or None
        None when no resample defines the value.
    n_undefined : int
        Resamples where the value was undefined (e.g. a class without ground truth drawn).
    """

    lo: float | None
    hi: float | None
    n_undefined: int = 0

    def as_list(self) -> list | None:
        """``[lo, hi]`` or None (the JSON form)."""
        return None if self.lo is None else [self.lo, self.hi]

    def to_dict(self) -> dict:
        """``{"ci": [lo, hi] or None, "n_undefined": int}``."""
        return {"ci": self.as_list(), "n_undefined": self.n_undefined}


def _defined(samples: np.ndarray) -> tuple[np.ndarray, int]:
    samples = np.asarray(samples, dtype=np.float64)
    defined = samples[~np.isnan(samples)]
    return defined, int(samples.size - defined.size)


def percentile_interval(samples: np.ndarray, *, ci: float = 0.95) -> Interval:
    """Percentile interval ``[q(a/2), q(1 - a/2)]`` of the defined samples (``a = 1 - ci``).

    Examples
    --------
    >>> percentile_interval(np.array([1.0, 2.0, np.nan, 3.0]), ci=0.5)
    Interval(lo=1.5, hi=2.5, n_undefined=1)
    """
    _check_settings(0, 0, ci, "percentile")
    defined, n_undefined = _defined(samples)
    if defined.size == 0:
        return Interval(None, None, n_undefined)
    alpha = 1.0 - ci
    lo, hi = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return Interval(float(lo), float(hi), n_undefined)


def basic_interval(
    samples: np.ndarray, point: float, *, ci: float = 0.95, bounds: tuple[float, float] = (0.0, 1.0)
) -> Interval:
    """Basic (reverse percentile) interval ``[2 x - q(1 - a/2), 2 x - q(a/2)]``, reaching ``x = point``.

    The percentile interval reflected about the estimate: the resampled values' distance above
    the estimate is taken as the estimate's distance above the true value, so the interval is
    centred on the bias-corrected estimate ``x - bias`` (Davison & Hinkley 1997, eq. 5.6). When
    fewer than ``(1 - ci) / 2`` of the resampled values lie on one side of ``x`` (a bias beyond
    the interval's half-width), the reflected interval stops short of ``x``; it is then
    extended to ``x``, so that it always contains the estimate (it only widens: coverage is not
    lost), and :func:`outside_share` tells the caller to warn. A reflection can leave the
    statistic's range: the interval is clipped to ``bounds`` ([0, 1] for an AP or a recall,
    [-1, 1] for a difference of two).

    Examples
    --------
    >>> iv = basic_interval(np.array([0.1, 0.2, np.nan, 0.3]), 0.15, ci=0.5)  # percentile: [.15, .25]
    >>> [round(iv.lo, 6), round(iv.hi, 6)], iv.n_undefined
    ([0.05, 0.15], 1)
    >>> basic_interval(np.array([.2, .3, .4]), .1, ci=0.5)  # every value above .1: reaches .1
    Interval(lo=0.0, hi=0.1, n_undefined=0)
    """
    _check_settings(0, 0, ci, "basic")
    found = percentile_interval(samples, ci=ci)
    if found.lo is None or found.hi is None or point != point:
        return Interval(None, None, found.n_undefined)
    lo = min(2 * point - found.hi, point)
    hi = max(2 * point - found.lo, point)
    return Interval(float(max(lo, bounds[0])), float(min(hi, bounds[1])), found.n_undefined)


def outside_share(samples: np.ndarray, point: float, *, ci: float = 0.95) -> float | None:
    """The share of the defined resampled values beyond ``point`` on its far side, if too large.

    The larger of the shares above and below ``point`` when the smaller is under ``(1 - ci) / 2``
    (the percentile interval then excludes the estimate, BCa's collapses, the basic one is
    extended): the case of :class:`BootstrapBiasWarning`. None otherwise.

    Examples
    --------
    >>> outside_share(np.array([2.0, 3.0, 4.0]), 1.0)
    1.0
    >>> outside_share(np.array([0.0, 2.0, 3.0, 4.0]), 1.0) is None
    True
    """
    defined, _ = _defined(samples)
    if defined.size == 0 or point != point:
        return None
    below = np.count_nonzero(defined < point) / defined.size
    above = np.count_nonzero(defined > point) / defined.size
    tail = (1.0 - ci) / 2
    if 1.0 - above < tail or 1.0 - below < tail:  # at most a tail's share at or beyond the point
        return float(max(below, above))
    return None


def bias_note(samples: np.ndarray, point: float, *, ci: float, what: str) -> str | None:
    """A note for :func:`warn_biased` when ``point`` sits outside the central ``ci`` of ``samples``.

    E.g. ``"AP 0.0153 (99.5% of the resamples above it, bias +0.0049)"``; None when the point
    is inside (:func:`outside_share`).
    """
    share = outside_share(samples, point, ci=ci)
    if share is None:
        return None
    bias = bootstrap_bias(samples, point) or 0.0
    side = "above" if bias > 0 else "below"
    return f"{what} {point:.4f} ({share:.1%} of the resamples {side} it, bias {bias:+.4f})"


def warn_biased(notes: list, *, where: str, ci: float, n_classes: int = 0) -> None:
    """One :class:`BootstrapBiasWarning` naming every value of ``notes`` (:func:`bias_note`)."""
    if not notes and not n_classes:
        return
    parts = list(notes) + (
        [f"the AP of {n_classes} class{'es' if n_classes > 1 else ''}"] if n_classes else []
    )
    warnings.warn(
        f"bootstrap: {where}: {'; '.join(parts)}: each is off its population's value by more "
        f"than its {ci:g} interval's half-width (the interval reaches the estimate only because "
        f"it is extended to it; docs/statistics.md, 'When the estimate is outside the interval')",
        BootstrapBiasWarning,
        stacklevel=4,
    )


def acceleration(jackknife: np.ndarray) -> float:
    """BCa's acceleration ``a = sum(u^3) / (6 sum(u^2)^1.5)``, ``u = mean - jackknife value``.

    ``jackknife``: the statistic with each image (or group of images) left out; undefined (NaN)
    values are left out. 0 with fewer than two defined values or no spread.

    Examples
    --------
    >>> acceleration(np.array([1.0, 1.0, 1.0]))
    0.0
    >>> round(acceleration(np.array([0.0, 0.0, 3.0])), 4)
    -0.068
    """
    values, _ = _defined(jackknife)
    if values.size < 2:
        return 0.0
    u = values.mean() - values
    s2 = float(np.sum(u * u))
    if s2 == 0.0:
        return 0.0
    return float(np.sum(u**3) / (6.0 * s2**1.5))


def bca_interval(
    samples: np.ndarray, point: float, *, ci: float = 0.95, jackknife: np.ndarray | None = None
) -> Interval:
    """Bias-corrected and accelerated (BCa) interval (Efron 1987; Efron & Tibshirani 1993, ch. 14).

    ``z0 = Phi^-1(#{x_b < x} + #{x_b == x} / 2) / B)`` measures how far the resampled values
    sit from the estimate ``x = point`` (0: half below, half above); ``a`` is
    :func:`acceleration` of the ``jackknife`` values (0 when not given). The interval is the
    quantiles ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` of the defined samples at ``z =
    Phi^-1(a/2)`` and ``Phi^-1(1 - a/2)``. The share below is clipped to ``[1 / 2B, 1 - 1 / 2B]``.
    It contains ``x`` whenever ``|z0| <= Phi^-1(1 - a/2)`` (with ``a`` small), i.e. exactly when
    the percentile interval does; beyond, both endpoints fall among the extreme resampled values
    and the interval collapses to a sliver beside ``x``. Being made of resampled values, it
    cannot reach a population value below all of them, which a biased AP's often is: it is not
    the default (docs/statistics.md).

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    >>> bca_interval(x, 4.5, ci=0.5).as_list() == percentile_interval(x, ci=0.5).as_list()
    True
    >>> [round(v, 3) for v in bca_interval(x, 3.2, ci=0.5).as_list()]  # most values above 3.2: shifted down
    [1.664, 4.604]
    """
    _check_settings(0, 0, ci, "bca")
    defined, n_undefined = _defined(samples)
    if defined.size == 0 or point != point:
        return Interval(None, None, n_undefined)
    b = defined.size
    share = float(np.count_nonzero(defined < point) + 0.5 * np.count_nonzero(defined == point)) / b
    share = min(max(share, 0.5 / b), 1.0 - 0.5 / b)
    z0 = _NORMAL.inv_cdf(share)
    acc = 0.0 if jackknife is None else acceleration(jackknife)
    levels = []
    for z in (_NORMAL.inv_cdf((1.0 - ci) / 2), _NORMAL.inv_cdf((1.0 + ci) / 2)):
        denominator = 1.0 - acc * (z0 + z)
        # A denominator <= 0 (|a| beyond any AP's, ~ 1/3) takes the extreme quantile.
        level = _NORMAL.cdf(z0 + (z0 + z) / denominator) if denominator > 0 else float(z > 0)
        levels.append(level)
    lo, hi = np.quantile(defined, levels)
    return Interval(float(lo), float(hi), n_undefined)


def bootstrap_bias(samples: np.ndarray, point: float) -> float | None:
    """Bootstrap estimate of the bias: mean of the defined resampled values minus ``point``.

    None when no resample defines the value or the point is undefined.

    Examples
    --------
    >>> bootstrap_bias(np.array([0.5, 0.7, np.nan]), 0.5)
    0.09999999999999998
    """
    defined, _ = _defined(samples)
    if defined.size == 0 or point != point:
        return None
    return float(defined.mean() - point)


def interval(
    samples: np.ndarray,
    point: float,
    *,
    ci: float = 0.95,
    method: str = "basic",
    jackknife: np.ndarray | None = None,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> Interval:
    """The interval of ``method`` (``"basic"``, ``"bca"`` or ``"percentile"``).

    ``jackknife``: BCa's jackknife values; ``bounds``: the statistic's range, which the basic
    interval is clipped to.

    Examples
    --------
    >>> interval(np.array([1.0, 2.0, 3.0]), 2.0, ci=0.5, method="percentile")
    Interval(lo=1.5, hi=2.5, n_undefined=0)
    """
    _check_settings(0, 0, ci, method)
    if method == "percentile":
        return percentile_interval(samples, ci=ci)
    if method == "bca":
        return bca_interval(samples, point, ci=ci, jackknife=jackknife)
    return basic_interval(samples, point, ci=ci, bounds=bounds)
