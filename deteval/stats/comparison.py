"""Paired comparison of detectors: is B better than A on this ground truth.

The differences ``B - A`` are taken over the same resamples (paired bootstrap over images), with
an interval (the bootstrap's method: basic by default), a two-sided p-value and a plain-language
verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, InputError
from deteval.evaluate import MatchTable, match, score
from deteval.protocol import Protocol, resolve_protocol
from deteval.stats.detector_bootstrap import (
    BootstrapResult,
    DetectorBootstrap,
    bootstrap,
    bootstrap_settings_dict,
)
from deteval.stats.intervals import Interval, interval
from deteval.stats.resample import _check_table
from deteval.stats.settings import BootstrapSettings, _check_settings

_TESTS = ("bootstrap",)


@frozen
class Comparison:
    """B - A on one metric under one protocol, paired over the same resamples.

    Attributes
    ----------
    a, b : str
        Detector names.
    protocol : str
    metric : str
    difference : float or None
        Point difference ``metric(B) - metric(A)`` (None if undefined).
    ci : Interval
        Interval of the difference from the bootstrap differences (the bootstrap's method).
    p_value : float or None
        Two-sided paired-bootstrap p-value (see :func:`paired_difference`); None when
        ``n == 0`` or undefined.
    level : float
        The confidence level; the verdict tests at ``1 - level``.
    n : int
        Resamples where the difference is defined.
    category : str or None
        The class whose AP is compared (:func:`per_class_differences`); None for a headline
        metric (the mean over classes).
    """

    a: str
    b: str
    protocol: str
    metric: str
    difference: float | None
    ci: Interval
    p_value: float | None
    level: float = 0.95
    n: int = 0
    category: str | None = None

    @property
    def excludes_zero(self) -> bool:
        """The interval lies wholly on one side of 0 (both ends nonzero, of one sign)."""
        lo, hi = self.ci.lo, self.ci.hi
        return lo is not None and hi is not None and (lo > 0 or hi < 0)

    @property
    def verdict(self) -> str:
        """The plain-language line of :func:`verdict`."""
        return verdict(self)

    def to_dict(self) -> dict:
        """One entry of the JSON ``comparisons`` list (with ``class`` when of one class)."""
        out = {
            "a": self.a,
            "b": self.b,
            "protocol": self.protocol,
            "metric": self.metric,
            "difference": self.difference,
            "ci": self.ci.as_list(),
            "p_value": self.p_value,
        }
        if self.category is not None:
            out["class"] = self.category
        return out


def paired_difference(
    samples_a: np.ndarray,
    samples_b: np.ndarray,
    point_a: float,
    point_b: float,
    *,
    ci: float = 0.95,
    method: str = "basic",
    jackknife_a: np.ndarray | None = None,
    jackknife_b: np.ndarray | None = None,
) -> tuple:
    """Interval and two-sided p-value of ``B - A`` from paired bootstrap samples.

    The interval is ``method``'s (:func:`~deteval.stats.intervals.interval`) on the differences,
    around the observed difference; BCa's acceleration comes from the paired jackknife
    differences ``jackknife_b - jackknife_a`` when given.

    Returns
    -------
    (difference, Interval, p_value, n_defined)
        ``p = (1 + #{|d_b - d| >= |d|}) / (1 + n)``: the bootstrap differences re-centred on 0
        (the null hypothesis) and compared with the observed difference ``d``. Identical
        detectors give ``d = 0`` and ``p = 1`` exactly.

    Examples
    --------
    >>> d, iv, p, n = paired_difference(np.array([.5, .6, .7]), np.array([.5, .6, .7]), .6, .6)
    >>> d, iv.as_list(), p
    (0.0, [0.0, 0.0], 1.0)
    """
    diff = np.asarray(samples_b, dtype=np.float64) - np.asarray(samples_a, dtype=np.float64)
    d = float(point_b) - float(point_a)
    jackknife = None
    if jackknife_a is not None and jackknife_b is not None:
        jackknife = np.asarray(jackknife_b, dtype=np.float64) - np.asarray(jackknife_a, dtype=np.float64)
    found = interval(diff, d, ci=ci, method=method, jackknife=jackknife, bounds=(-1.0, 1.0))
    if found.lo is None and d != d:  # an undefined difference: the resampled values' own interval
        found = interval(diff, d, ci=ci, method="percentile")
    defined = diff[~np.isnan(diff)]
    if d != d:
        return None, found, None, int(defined.size)
    if defined.size == 0:
        return d, found, None, 0
    extreme = int(np.count_nonzero(np.abs(defined - d) >= abs(d)))
    return d, found, (1.0 + extreme) / (1.0 + defined.size), int(defined.size)


def verdict(comparison: Comparison) -> str:
    """One plain line, e.g. ``B - A = +0.012 AP [+0.004, +0.020], p = 0.003: B is better at the 5% level``.

    Examples
    --------
    >>> verdict(Comparison("A", "B", "coco", "AP", 0.012, Interval(0.004, 0.02), 0.003))
    'B - A = +0.012 AP [+0.004, +0.020] (coco), p = 0.003: B is better at the 5% level'
    >>> verdict(Comparison("A", "B", "coco", "AP", 0.0, Interval(-0.01, 0.01), 1.0))
    'B - A = +0.000 AP [-0.010, +0.010] (coco), p = 1: no significant difference at the 5% level'
    """
    c = comparison
    level = f"{(1 - c.level) * 100:g}%"
    if c.difference is None:
        return f"{c.b} - {c.a}: {c.metric} undefined ({c.protocol})"
    head = f"{c.b} - {c.a} = {c.difference:+.3f} {c.metric}" + (
        "" if c.category is None else f" of {c.category}"
    )
    if c.ci.lo is not None:
        head += f" [{c.ci.lo:+.3f}, {c.ci.hi:+.3f}]"
    head += f" ({c.protocol})"
    if c.p_value is None:
        return head + ": no resamples, no test"
    p = f"{c.p_value:.3g}"
    if c.p_value < 1 - c.level:
        better = c.b if c.difference > 0 else c.a
        return f"{head}, p = {p}: {better} is better at the {level} level"
    return f"{head}, p = {p}: no significant difference at the {level} level"


@frozen(eq=False)
class ComparisonResult:
    """The outcome of :func:`compare_detectors`: per-detector intervals and the comparisons.

    Attributes
    ----------
    bootstrap : BootstrapResult
    comparisons : tuple of Comparison
        Each later detector against the first, on the compared metric.
    class_comparisons : tuple of Comparison
        Each later detector against the first, on each class's AP
        (:func:`per_class_differences`): detector by detector, classes in ``per_class`` order.
    """

    bootstrap: BootstrapResult
    comparisons: tuple
    class_comparisons: tuple = ()

    def verdicts(self) -> list:
        """One :func:`verdict` line per comparison."""
        return [c.verdict for c in self.comparisons]

    def to_dict(self) -> dict:
        """``{"bootstrap", "results", "comparisons"}`` (the JSON document)."""
        return {
            "bootstrap": bootstrap_settings_dict(self.bootstrap.settings),
            "results": [r.to_dict() for r in self.bootstrap.results],
            "comparisons": comparison_dicts(self.comparisons),
            "class_comparisons": comparison_dicts(self.class_comparisons),
        }


def compare_detectors(
    gt: GroundTruth,
    detections: Mapping,
    protocol: Protocol | str = "coco",
    *,
    n: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    method: str = "basic",
    test: str = "bootstrap",
    metric: str | None = None,
    workers: int = 1,
    chunk_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> ComparisonResult:
    """Is detector B better than A on this ground truth? Paired bootstrap over images.

    Parameters
    ----------
    gt : GroundTruth
    detections : mapping name -> Detections or MatchTable
        Two or more detectors (insertion order: the first is A; each later one is compared with
        it as B).
    protocol : Protocol or str
    n, seed, ci, method, workers, chunk_size, progress
        As in :func:`bootstrap` (basic by default: the difference's interval too).
    test : {"bootstrap"}
        The paired bootstrap (see docs/statistics.md for why not a permutation test).
    metric : str, optional
        Metric compared; default ``"AP"`` for COCO-style protocols, ``"mAP"`` otherwise.

    Returns
    -------
    ComparisonResult

    Raises
    ------
    ConfigError
        Fewer than two detectors, an unknown test or metric, invalid settings.
    InputError
        A MatchTable matched against a different ground truth.
    """
    _check_settings(n, seed, ci, method)
    if test not in _TESTS:
        raise ConfigError(f"compare_detectors: test must be one of {list(_TESTS)}, found {test!r}")
    if not isinstance(detections, Mapping) or len(detections) < 2:
        raise ConfigError(
            f"compare_detectors: expected a mapping of at least two named detectors, "
            f"found {type(detections).__name__} of "
            f"{len(detections) if hasattr(detections, '__len__') else '?'} entries"
        )
    protocol = resolve_protocol(protocol)
    results = {}
    for name, dt in detections.items():
        if isinstance(dt, Detections):
            if len(dt) and (int(dt.image.max()) >= gt.n_images or int(dt.category.max()) >= gt.n_classes):
                raise InputError(
                    f"compare_detectors: detections {name!r} refer to images or categories "
                    f"outside this ground truth ({gt.n_images} images, {gt.n_classes} "
                    f"categories)"
                )
            table = match(gt, dt, protocol)
        elif isinstance(dt, MatchTable):
            _check_table(dt, gt, f"compare_detectors: match table {name!r}")
            table = dt
        else:
            raise ConfigError(
                f"compare_detectors: detector {name!r} must be Detections or a MatchTable, "
                f"found {type(dt).__name__}"
            )
        results[str(name)] = score(table, gt, protocol)
    metric = metric or ("mAP" if protocol.is_single_threshold else "AP")
    first_result = next(iter(results.values()))
    if metric not in first_result.metrics:  # before resampling: a typo costs nothing
        raise ConfigError(
            f"compare_detectors: metric {metric!r} is not reported by protocol "
            f"{protocol.name!r}; expected one of {list(first_result.metrics)}"
        )
    boot = bootstrap(
        gt,
        results,
        n=n,
        seed=seed,
        ci=ci,
        method=method,
        workers=workers,
        chunk_size=chunk_size,
        progress=progress,
    )
    first = boot.results[0]
    comparisons = []
    class_comparisons: list = []
    for other in boot.results[1:]:
        comparisons.append(_compare(first, other, metric, boot.settings))
        class_comparisons += per_class_differences(first, other, boot.settings)
    return ComparisonResult(
        bootstrap=boot, comparisons=tuple(comparisons), class_comparisons=tuple(class_comparisons)
    )


def per_class_differences(a: DetectorBootstrap, b: DetectorBootstrap, settings: BootstrapSettings) -> tuple:
    """B - A on each class's AP, over the same resamples: one :class:`Comparison` per class.

    The per-class AP columns of both detectors' resamples (``samples.per_class_ap``, drawn with
    the same image multisets by :func:`~deteval.stats.bootstrap`) go through
    :func:`paired_difference`, as the headline metric does in :func:`compare_detectors`: the
    interval is the bootstrap's method, BCa's acceleration from the paired jackknife columns.

    Parameters
    ----------
    a, b : DetectorBootstrap
        Two detectors of one :class:`~deteval.stats.BootstrapResult` (the same protocol and
        resamples).
    settings : BootstrapSettings
        That result's settings.

    Returns
    -------
    tuple of Comparison
        In ``per_class`` order; ``metric`` is ``"AP"`` and ``category`` the class name. A class
        whose AP is undefined for a detector (no ground truth) has ``difference`` None.

    Raises
    ------
    ConfigError
        ``a`` and ``b`` not of the same protocol and classes.

    Examples
    --------
    >>> import deteval
    >>> gt = deteval.load_ground_truth("fixtures/coco/gt.json")
    >>> a = deteval.load_detections("fixtures/coco/dt.json", gt)
    >>> b = deteval.load_detections("fixtures/coco/dt_b.json", gt)
    >>> found = compare_detectors(gt, {"A": a, "B": b}, "coco", n=200)
    >>> person = found.class_comparisons[0]
    >>> person.category, round(person.difference, 3), [round(x, 3) for x in person.ci.as_list()]
    ('person', -0.094, [-0.195, -0.022])
    >>> person.excludes_zero
    True
    """
    names_a = [c["name"] for c in a.result.per_class]
    names_b = [c["name"] for c in b.result.per_class]
    if a.protocol != b.protocol or names_a != names_b:
        raise ConfigError(
            f"per_class_differences: detectors {a.name!r} ({a.protocol}) and {b.name!r} "
            f"({b.protocol}) must be of the same protocol and classes"
        )
    out = []
    for k, name in enumerate(names_a):
        point_a, point_b = a.result.per_class[k]["AP"], b.result.per_class[k]["AP"]
        jack_a = None if a.jackknife is None else a.jackknife.per_class_ap[:, k]
        jack_b = None if b.jackknife is None else b.jackknife.per_class_ap[:, k]
        d, found, p, n_def = paired_difference(
            a.samples.per_class_ap[:, k],
            b.samples.per_class_ap[:, k],
            float("nan") if point_a is None else point_a,
            float("nan") if point_b is None else point_b,
            ci=settings.ci,
            method=settings.method,
            jackknife_a=jack_a,
            jackknife_b=jack_b,
        )
        if settings.n == 0:
            found, p = Interval(None, None, 0), None
        out.append(
            Comparison(
                a=a.name,
                b=b.name,
                protocol=a.protocol,
                metric="AP",
                difference=d,
                ci=found,
                p_value=p,
                level=settings.ci,
                n=n_def,
                category=str(name),
            )
        )
    return tuple(out)


def _compare(
    a: DetectorBootstrap, b: DetectorBootstrap, metric: str, settings: BootstrapSettings
) -> Comparison:
    j = a.samples.metric_names.index(metric)
    point_a, point_b = a.result.metrics[metric], b.result.metrics[metric]
    jack_a = None if a.jackknife is None else a.jackknife.metrics[:, j]
    jack_b = None if b.jackknife is None else b.jackknife.metrics[:, j]
    d, found, p, n_def = paired_difference(
        a.samples.metrics[:, j],
        b.samples.metrics[:, j],
        point_a,
        point_b,
        ci=settings.ci,
        method=settings.method,
        jackknife_a=jack_a,
        jackknife_b=jack_b,
    )
    if settings.n == 0:
        found, p = Interval(None, None, 0), None
    return Comparison(
        a=a.name,
        b=b.name,
        protocol=a.protocol,
        metric=metric,
        difference=d,
        ci=found,
        p_value=p,
        level=settings.ci,
        n=n_def,
    )


# --------------------------------------------------------------------------------------------
# JSON pieces (the CLI's renderer places them)
# --------------------------------------------------------------------------------------------


def comparison_dicts(comparisons: Sequence) -> list:
    """The document's ``comparisons`` list."""
    return [c.to_dict() for c in comparisons]
