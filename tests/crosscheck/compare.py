"""Comparison helpers: deteval results (NaN for undefined) against pycocotools layouts (-1)."""

from __future__ import annotations

import math

import numpy as np

from tests.reference.slow_coco import STAT_NAMES


def assert_array_within_one_step(actual, expected, what):
    """``actual`` (NaN = undefined) equals ``expected`` (-1 = undefined) within one float step.

    A value passes when it lies in ``[nextafter(e, -inf), nextafter(e, +inf)]``.
    """
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    is_undefined = expected == -1
    lo = np.nextafter(expected, -np.inf)
    hi = np.nextafter(expected, np.inf)
    with np.errstate(invalid="ignore"):
        is_close = (actual >= lo) & (actual <= hi)
    ok = np.where(is_undefined, np.isnan(actual), is_close)
    if not ok.all():
        bad = np.argwhere(~ok)
        lines = [f"{what}: {len(bad)} of {ok.size} values differ by more than one float step"]
        for index in bad[:8]:
            index = tuple(int(i) for i in index)
            lines.append(f"  at {index}: deteval {actual[index]!r}, expected {expected[index]!r}")
        raise AssertionError("\n".join(lines))


def stat_names(max_dets=(1, 10, 100)):
    """Deteval's metric names for pycocotools' 12 stats.

    stats[6..8] are AR at max_dets[0], [1], [2]: deteval names them after the configured
    values (``AR1``, ``AR10``, ``AR300`` for max_dets (1, 10, 300)).
    """
    names = list(STAT_NAMES)
    names[6:9] = [f"AR{m}" for m in max_dets[:3]]
    return tuple(names)


def assert_stats_exact(metrics, stats, what, *, max_dets=(1, 10, 100)):
    """Deteval ``metrics`` dict == the 12 pycocotools ``stats`` exactly (NaN <-> -1)."""
    assert stats is not None
    assert len(stats) == 12
    lines = []
    missing = sorted(set(stat_names(max_dets)) - set(metrics))
    assert not missing, f"{what}: metrics lack {missing}; found {sorted(metrics)}"
    for name, expected in zip(stat_names(max_dets), stats, strict=True):
        value = metrics[name]
        if expected == -1:
            if not (
                value is None
                or (isinstance(value, float) and math.isnan(value))
                or (isinstance(value, np.floating) and np.isnan(value))
            ):
                lines.append(f"  {name}: deteval {value!r}, expected NaN (pycocotools -1)")
        elif value != expected:
            lines.append(
                f"  {name}: deteval {value!r}, expected {float(expected)!r}"
                f" (diff {float(value) - float(expected):.3g})"
            )
    if lines:
        raise AssertionError(f"{what}: stats differ\n" + "\n".join(lines))


def assert_matches(result, expected, what, *, max_dets=(1, 10, 100)):
    """A deteval ``EvalResult`` against a PycocoResult / SlowResult."""
    assert_array_within_one_step(result.precision, expected.precision, f"{what}: precision")
    assert_array_within_one_step(result.recall, expected.recall, f"{what}: recall")
    assert_array_within_one_step(result.scores, expected.scores, f"{what}: scores")
    if expected.stats is not None:
        assert_stats_exact(result.metrics, expected.stats, what, max_dets=max_dets)


def assert_same_reference(a, b, what):
    """Two pycocotools-layout results (slow reference vs pycocotools): bit-identical."""
    for field in ("precision", "recall", "scores"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.shape == y.shape, f"{what}: {field} shape {x.shape} != {y.shape}"
        if not np.array_equal(x, y):
            bad = np.argwhere(x != y)
            index = tuple(int(i) for i in bad[0])
            raise AssertionError(
                f"{what}: {field} differs at {len(bad)} places, first {index}: {x[index]!r} vs {y[index]!r}"
            )
    if a.stats is None or b.stats is None:
        assert a.stats is None, what
        assert b.stats is None, what
    else:
        assert np.array_equal(a.stats, b.stats), f"{what}: stats {a.stats} != {b.stats}"
