"""Percentile intervals over the resamples where a value is defined."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.stats.settings import _check_settings


@dataclass(frozen=True)
class Interval:
    """A percentile interval over the resamples where the value is defined.

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


def percentile_interval(samples: np.ndarray, *, ci: float = 0.95) -> Interval:
    """Percentile interval ``[q(a/2), q(1 - a/2)]`` of the defined samples (``a = 1 - ci``).

    Examples
    --------
    >>> percentile_interval(np.array([1.0, 2.0, np.nan, 3.0]), ci=0.5)
    Interval(lo=1.5, hi=2.5, n_undefined=1)
    """
    _check_settings(0, 0, ci, "percentile")
    samples = np.asarray(samples, dtype=np.float64)
    defined = samples[~np.isnan(samples)]
    n_undefined = int(samples.size - defined.size)
    if defined.size == 0:
        return Interval(None, None, n_undefined)
    alpha = 1.0 - ci
    lo, hi = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return Interval(float(lo), float(hi), n_undefined)
