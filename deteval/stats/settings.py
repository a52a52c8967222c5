"""Settings of a bootstrap, their validation, and the image weights of the resamples.

See :mod:`deteval.stats` for the semantics of a resample. ``bootstrap_weights`` draws every
resample's weights up front from ``np.random.default_rng(seed)``, so results depend on the seed
only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.errors import ConfigError

#: Interval methods (docs/statistics.md): basic (the default), BCa, percentile.
_METHODS = ("basic", "bca", "percentile")
#: Groups of images of the jackknife that gives BCa its acceleration (each image alone below this).
JACKKNIFE_GROUPS = 100


@frozen
class BootstrapSettings:
    """How a bootstrap was run (the JSON ``"bootstrap"`` object).

    Attributes
    ----------
    n : int
        Number of resamples (0: point estimates only, no intervals).
    seed : int
    ci : float
        Confidence level of the intervals, in (0, 1).
    method : {"basic", "bca", "percentile"}
        How intervals are placed (docs/statistics.md); basic by default.
    """

    n: int = 1000
    seed: int = 0
    ci: float = 0.95
    method: str = "basic"

    def __post_init__(self) -> None:
        _check_settings(self.n, self.seed, self.ci, self.method)

    def to_dict(self) -> dict:
        """The JSON ``"bootstrap"`` object: ``{"n", "seed", "ci", "method"}``."""
        return {"n": self.n, "seed": self.seed, "ci": self.ci, "method": self.method}


def _check_settings(n: Any, seed: Any, ci: Any, method: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ConfigError(f"bootstrap: n (number of resamples) must be an integer >= 0, found {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"bootstrap: seed must be an integer >= 0, found {seed!r}")
    if isinstance(ci, bool) or not isinstance(ci, (int, float, np.floating)) or not (0.0 < ci < 1.0):
        raise ConfigError(
            f"bootstrap: ci (confidence level) must be a number in (0, 1), e.g. 0.95; found {ci!r}"
        )
    if method not in _METHODS:
        raise ConfigError(
            f"bootstrap: method must be one of {list(_METHODS)}, found {method!r} (docs/statistics.md)"
        )


def bootstrap_weights(n_images: int, *, n: int, seed: int) -> np.ndarray:
    """Image multiplicities of ``n`` bootstrap resamples.

    Parameters
    ----------
    n_images : int
    n : int
        Number of resamples.
    seed : int

    Returns
    -------
    int64 (n, n_images)
        Row ``b``: how many times each image is drawn in resample ``b`` (each row sums to
        ``n_images``). All rows come from one ``np.random.default_rng(seed)``, in order.

    Examples
    --------
    >>> w = bootstrap_weights(4, n=3, seed=0)
    >>> w.shape, w.sum(axis=1).tolist()
    ((3, 4), [4, 4, 4])
    """
    _check_settings(n, seed, 0.5, "percentile")
    if n_images == 0:
        return np.zeros((n, 0), dtype=np.int64)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_images, np.full(n_images, 1.0 / n_images), size=n).astype(np.int64)


def jackknife_weights(n_images: int, *, seed: int, groups: int = JACKKNIFE_GROUPS) -> np.ndarray:
    """Image weights of the grouped jackknife that gives BCa its acceleration.

    The images are split into ``min(groups, n_images)`` groups of near-equal size (a random
    partition from ``np.random.default_rng([seed, 1])``, independent of the resamples' draws);
    row ``g`` weighs every image 1 except those of group ``g`` (0). With ``n_images <= groups``
    each group is one image: the ordinary jackknife.

    Returns
    -------
    int64 (n_groups, n_images)

    Examples
    --------
    >>> jackknife_weights(3, seed=0).sum(axis=1).tolist()
    [2, 2, 2]
    >>> jackknife_weights(1000, seed=0).shape
    (100, 1000)
    """
    n_groups = min(int(groups), int(n_images))
    if n_groups == 0:
        return np.zeros((0, n_images), dtype=np.int64)
    group = np.empty(n_images, dtype=np.int64)
    group[np.random.default_rng([seed, 1]).permutation(n_images)] = np.arange(n_images) % n_groups
    return (group[None, :] != np.arange(n_groups)[:, None]).astype(np.int64)
