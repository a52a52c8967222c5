"""deteval.ranking against scikit-learn and against slow twins, on random inputs with many ties.

Scores are rounded to one decimal so that most thresholds hold tied items. Hypothesis runs
derandomized with bounded example counts (the file runs in a few seconds).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval import ranking
from deteval.errors import UndefinedMetricWarning
from deteval.ranking._common import _recall_grid


@pytest.fixture(scope="module")
def skm():
    """scikit-learn's metrics, the oracle here: imported by the tests, not at collection (~3 s CPU)."""
    return pytest.importorskip("sklearn.metrics")


SETTINGS = settings(max_examples=60, derandomize=True, deadline=None)


@st.composite
def problems(draw, multilabel: bool):
    """(labels, scores, weights) from a drawn seed and shape; weights None or positive (some 0)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 40))
    shape = (n, draw(st.integers(2, 6))) if multilabel else (n,)
    labels = (rng.random(shape) < draw(st.sampled_from([0.1, 0.3, 0.5, 0.9]))).astype(int)
    scores = np.round(rng.random(shape), 1)
    weights = None
    if draw(st.booleans()):
        weights = np.round(rng.random(n) * 3, 1)
        weights[0] = 1.0  # at least one positive weight
    return labels, scores, weights


def _quiet(function, *args, **kwargs):
    """Call with scikit-learn's and deteval's undefined-metric warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)  # np.average of NaN in scikit-learn
        return function(*args, **kwargs)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=0, atol=1e-12)


@SETTINGS
@given(problems(multilabel=False))
def test_binary_ap_and_auc_equal_scikit_learn(skm, problem):
    labels, scores, weights = problem
    _close(
        _quiet(ranking.average_precision, labels, scores, sample_weight=weights),
        _quiet(skm.average_precision_score, labels, scores, sample_weight=weights),
    )
    if 0 < labels.sum() < labels.size:
        _close(
            ranking.roc_auc(labels, scores, sample_weight=weights),
            skm.roc_auc_score(labels, scores, sample_weight=weights),
        )


@SETTINGS
@given(problems(multilabel=True), st.sampled_from([None, "micro", "macro", "weighted", "samples"]))
def test_multilabel_ap_and_auc_equal_scikit_learn(skm, problem, average):
    labels, scores, weights = problem
    _close(
        _quiet(ranking.average_precision, labels, scores, average=average, sample_weight=weights),
        _quiet(skm.average_precision_score, labels, scores, average=average, sample_weight=weights),
    )
    _close(
        _quiet(ranking.roc_auc, labels, scores, average=average, sample_weight=weights),
        _quiet(skm.roc_auc_score, labels, scores, average=average, sample_weight=weights),
    )


@SETTINGS
@given(problems(multilabel=False), st.booleans())
def test_curves_equal_scikit_learn(skm, problem, drop_intermediate):
    labels, scores, weights = problem
    if weights is not None and not (weights * labels).sum() > 0:
        return  # no positive weight: both warn, arrays compared in the unit tests
    ours = _quiet(
        ranking.precision_recall_curve,
        labels,
        scores,
        sample_weight=weights,
        drop_intermediate=drop_intermediate,
    )
    theirs = _quiet(
        skm.precision_recall_curve, labels, scores, sample_weight=weights, drop_intermediate=drop_intermediate
    )
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        _close(a, b)
    ours = _quiet(
        ranking.roc_curve, labels, scores, sample_weight=weights, drop_intermediate=drop_intermediate
    )
    theirs = _quiet(skm.roc_curve, labels, scores, sample_weight=weights, drop_intermediate=drop_intermediate)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)  # NaN == NaN, inf == inf


@SETTINGS
@given(problems(multilabel=True), st.sampled_from([None, 1, 2, 5]), st.booleans())
def test_ndcg_equals_scikit_learn(skm, problem, k, graded):
    labels, scores, weights = problem
    relevance = labels * np.round(scores * 7 + 1) if graded else labels
    query_weights = None if weights is None else weights
    _close(
        ranking.ndcg_at_k(relevance, scores, k, sample_weight=query_weights),
        skm.ndcg_score(relevance, scores, k=k, sample_weight=query_weights),
    )


# ---------------------------------------------------------------------------------------------
# Interpolated methods against a slow twin: one loop over thresholds, one over recall points


def _grid(method, grid):
    if method == "101_point":
        return np.linspace(0.0, 1.0, 101)
    return _recall_grid("11_point", grid)


def _twin_interpolated(labels, scores, method, grid="matlab_colon"):
    """Plainly written: each distinct score (high to low) is a threshold with its P and R."""
    n_pos = sum(labels)
    if n_pos == 0:
        return 0.0
    points = []  # (recall, precision) at each threshold
    for t in sorted(set(scores), reverse=True):
        selected = [y for y, s in zip(labels, scores) if s >= t]
        points.append((sum(selected) / n_pos, sum(selected) / len(selected)))
    if method == "all_point":
        total, previous = 0.0, 0.0
        for i, (r, _) in enumerate(points):
            best = max(p for _, p in points[i:])
            total += (r - previous) * best
            previous = r
        return total
    values = []
    for r in _grid(method, grid):
        reaching = [p for rr, p in points if rr >= r]
        values.append(max(reaching) if reaching else 0.0)
    return sum(values) / len(values)


@settings(max_examples=80, derandomize=True, deadline=None)
@given(
    problems(multilabel=False),
    st.sampled_from(["all_point", "11_point", "101_point"]),
    st.sampled_from(["matlab_colon", "numpy_arange", "decimal"]),
)
def test_interpolated_methods_equal_the_slow_twin(problem, method, grid):
    labels, scores, _ = problem
    expected = _twin_interpolated(labels.tolist(), scores.tolist(), method, grid)
    _close(_quiet(ranking.average_precision, labels, scores, method=method, grid=grid), expected)


@settings(max_examples=30, derandomize=True, deadline=None)
@given(problems(multilabel=True), st.sampled_from(["all_point", "11_point", "101_point"]))
def test_interpolated_methods_per_label(problem, method):
    labels, scores, _ = problem
    per_label = _quiet(ranking.average_precision, labels, scores, average=None, method=method)
    expected = [
        _twin_interpolated(labels[:, j].tolist(), scores[:, j].tolist(), method)
        for j in range(labels.shape[1])
    ]
    _close(per_label, expected)


@SETTINGS
@given(problems(multilabel=False))
def test_all_point_is_at_least_step(problem):
    labels, scores, _ = problem
    step = _quiet(ranking.average_precision, labels, scores)
    envelope = _quiet(ranking.average_precision, labels, scores, method="all_point")
    assert envelope >= step - 1e-12


def test_warning_is_ours_and_a_user_warning():
    with pytest.warns(UndefinedMetricWarning):
        ranking.average_precision([[0, 1], [0, 1]], [[0.2, 0.3], [0.1, 0.9]])
    assert issubclass(UndefinedMetricWarning, UserWarning)
