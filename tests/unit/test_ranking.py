"""deteval.ranking: the worked numbers, the tie rules, the errors, and the examples of docs/ranking.md."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
import warnings

import numpy as np
import pytest

from deteval.errors import ConfigError, InputError, UndefinedMetricWarning
from deteval.ranking import (
    average_precision,
    average_precision_at_k,
    compare_raw_binarized,
    ndcg_at_k,
    precision_at_k,
    precision_recall_curve,
    rank_report,
    recall_at_k,
    roc_auc,
    roc_curve,
)
from deteval.ranking._common import _recall_grid
from deteval.report import format_rank_csv, format_rank_table
from tests import ROOT


@pytest.fixture
def skm():
    """scikit-learn's metrics, the oracle of several tests here (the test extra installs it).

    Imported by the tests that use it, not at collection (about 3 s of CPU in every process).
    """
    return pytest.importorskip("sklearn.metrics")


# ---------------------------------------------------------------------------------------------
# Worked numbers


def test_eight_items(skm):
    scores = [0.8, 0.6, 0.3, 0.2, 0.9, 0.75, 0.81, 0.92]
    relevant = [1, 0, 0, 1, 0, 0, 1, 1]
    expected = (1 / 1 + 2 / 3 + 3 / 4 + 4 / 8) / 4
    assert expected == 0.7291666666666666
    assert average_precision(relevant, scores) == pytest.approx(expected, abs=1e-15)
    assert skm.average_precision_score(relevant, scores) == pytest.approx(expected, abs=1e-15)


RANKED_LISTS = {
    "100000000": 1.0,
    "111100000": 1.0,
    "100000001": 0.6111111111111112,
    "010000000": 0.5,
    "010100000": 0.5,
    "010101010": 0.5,
    "001000000": 0.3333333333333333,
    "001001000": 0.3333333333333333,
    "001001001": 0.3333333333333333,
    "000100010": 0.25,
    "000000001": 0.1111111111111111,
    "000000011": 0.1736111111111111,
    "100000011": 0.5277777777777778,
    "110001011": 0.711111111111111,
    "110000111": 0.6968253968253968,
    "111111110": 1.0,
    "111111101": 0.9861111111111112,
    "111111011": 0.9704861111111112,
    "111110111": 0.9526289682539683,
    "111101111": 0.9317956349206349,
    "111011111": 0.9067956349206349,
    "110111111": 0.8755456349206349,
    "101111111": 0.8338789682539682,
    "011111111": 0.7713789682539682,
}


@pytest.mark.parametrize(("relevance", "expected"), RANKED_LISTS.items())
def test_twenty_four_ranked_lists(relevance, expected, skm):
    labels = [int(c) for c in relevance]
    scores = [0.99, 0.98, 0.97, 0.96, 0.95, 0.94, 0.93, 0.92, 0.91]
    assert average_precision(labels, scores) == pytest.approx(expected, abs=1e-15)
    assert skm.average_precision_score(labels, scores) == pytest.approx(expected, abs=1e-15)
    # With distinct scores and k = n_items, AP@K normalized by all positives is the same number.
    assert average_precision_at_k(labels, scores, 9, normalize="positives") == pytest.approx(
        expected, abs=1e-15
    )


def test_raw_vs_binarized(skm):
    labels = [[0, 0, 1, 1], [0, 0, 0, 1]]
    scores = [[0.1, 0.7, 0.75, 0.8], [0.3, 0.6, 0.2, 0.8]]
    micro = compare_raw_binarized(labels, scores, threshold=0.5)
    assert (micro.ap_raw, micro.ap_binarized) == (1.0, 0.6)
    assert (micro.precision, micro.recall, micro.n_predicted_positive) == (0.6, 1.0, 5)
    assert micro.to_dict() == {
        "ap_raw": 1.0,
        "ap_binarized": 0.6,
        "precision": 0.6,
        "recall": 1.0,
        "n_predicted_positive": 5,
        "threshold": 0.5,
        "average": "micro",
    }
    # macro: labels 0 and 1 have no positive; scikit-learn 1.9 gives them AP 0 (and warns), so
    # the mean over the four labels is (0 + 0 + 1 + 1) / 4 for raw and binarized scores alike.
    with pytest.warns(UndefinedMetricWarning, match="2 labels without positive"):
        macro = compare_raw_binarized(labels, scores, threshold=0.5, average="macro")
    assert (macro.ap_raw, macro.ap_binarized) == (0.5, 0.5)
    with pytest.warns(UserWarning, match="No positive class found"):
        assert skm.average_precision_score(labels, scores, average="macro") == 0.5
    with pytest.warns(UndefinedMetricWarning):
        per_label = average_precision(labels, scores, average=None)
    np.testing.assert_array_equal(per_label, [0.0, 0.0, 1.0, 1.0])


TEN = [1, 1, 0, 0, 0, 1, 1, 0, 0, 1]  # TP TP FP FP FP TP TP FP FP TP, all 5 positives retrieved
TEN_SCORES = np.linspace(1.0, 0.1, 10)


@pytest.mark.parametrize("grid", ["matlab_colon", "numpy_arange", "decimal"])
def test_eleven_point_example(grid):
    expected = (5 * 1 + 4 * (4 / 7) + 2 * 0.5) / 11
    assert expected == 0.7532467532467532
    # Same on every grid here: the recalls are 0.2, 0.4, 0.6, 0.8, 1.0, and the grid points
    # that differ between grids (0.3, 0.6, 0.7) fall where the envelope does not change.
    assert average_precision(TEN, TEN_SCORES, method="11_point", grid=grid) == pytest.approx(
        expected, abs=1e-15
    )


def test_all_point_and_101_point_example():
    all_point = average_precision(TEN, TEN_SCORES, method="all_point")
    assert all_point == pytest.approx(0.7285714285714286, abs=1e-15)  # 0.2 * (1 + 1 + 4/7 + 4/7 + 0.5)
    coco = average_precision(TEN, TEN_SCORES, method="101_point")
    assert coco == pytest.approx((41 + 40 * 4 / 7 + 20 * 0.5) / 101, abs=1e-15)
    assert coco == pytest.approx(0.7312588401697313, abs=1e-15)
    step = average_precision(TEN, TEN_SCORES)
    assert step == pytest.approx((1 + 1 + 3 / 6 + 4 / 7 + 5 / 10) / 5, abs=1e-15)


def test_source_document_arithmetic_is_not_an_ap():
    # The source's "N = 9": ten interpolated precisions summed (6.85), divided by 9.
    assert round(6.85 / 9, 4) == 0.7611
    # A 9-point grid 0.2, 0.3, ..., 1.0 on the 10-item list gives 0.6984, not 0.7611 either.
    recall = np.cumsum(TEN) / 5
    precision = np.cumsum(TEN) / np.arange(1, 11)
    grid = np.arange(2, 11) / 10
    nine = np.mean([precision[recall >= r].max() for r in grid])
    assert round(nine, 4) == 0.6984


def test_matlab_grid_misses_exact_three_tenths():
    # 10 positives; the first three retrieved first, then a false positive: recall exactly 3/10.
    labels = [1, 1, 1, 0] + [0] * 6 + [1] * 7
    scores = np.linspace(1.0, 0.0, len(labels))
    values = {
        g: average_precision(labels, scores, method="11_point", grid=g)
        for g in ("matlab_colon", "numpy_arange", "decimal")
    }
    assert values["matlab_colon"] == values["numpy_arange"] < values["decimal"]


def test_grids_equal_the_detection_protocols():
    from deteval.accumulate import recall_thresholds
    from deteval.protocol import get_protocol

    voc = get_protocol("voc2007")
    for grid in ("matlab_colon", "numpy_arange", "decimal"):
        expected = recall_thresholds(voc.replace(eleven_point_grid=grid))
        np.testing.assert_array_equal(_recall_grid("11_point", grid), expected)
        assert _recall_grid("11_point", grid).tobytes() == np.asarray(expected).tobytes()
    np.testing.assert_array_equal(
        _recall_grid("101_point", "matlab_colon"), recall_thresholds(get_protocol("coco"))
    )


def test_tied_scores_are_one_threshold():
    # Two equal scores at the top, one relevant: one threshold with precision 1/2 there.
    assert average_precision([1, 0], [0.9, 0.9]) == 0.5
    assert average_precision([0, 1], [0.9, 0.9]) == 0.5
    assert average_precision([1, 0, 1], [0.9, 0.9, 0.1]) == pytest.approx(0.5 * 0.5 + 0.5 * 2 / 3)
    for method in ("all_point", "11_point", "101_point"):
        assert average_precision([1, 0], [0.9, 0.9], method=method) == 0.5
    # One by one (a detection protocol's stable rule) would give 1.0 or 0.5 by file order.
    assert average_precision([1, 0], [0.9, 0.8]) == 1.0


def test_blog_example_precision_and_recall_at_k():
    # 10 items, 5 relevant; the system returns 6 of them, 3 relevant.
    labels = [1, 0, 1, 0, 1, 0, 1, 1, 0, 0]
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.1, 0.1, 0.1, 0.1]
    assert precision_at_k(labels, scores, 6) == 0.5
    assert recall_at_k(labels, scores, 6) == 0.6


# ---------------------------------------------------------------------------------------------
# @K: tie rules, normalizations, twins


def _twin_at_k(labels, scores, k, normalize):
    """Loops: stable order by score then index."""
    p_all, r_all, ap_all = [], [], []
    for y, s in zip(np.atleast_2d(labels), np.atleast_2d(scores)):
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))
        hits, total = 0, 0.0
        for rank, i in enumerate(order[:k], start=1):
            if y[i]:
                hits += 1
                total += hits / rank
        n_pos = int(sum(y))
        p_all.append(hits / k)
        if n_pos:
            r_all.append(hits / n_pos)
            ap_all.append(total / (min(k, n_pos) if normalize == "min" else n_pos))
    return np.mean(p_all), np.mean(r_all), np.mean(ap_all)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("normalize", ["min", "positives"])
def test_at_k_against_loops(seed, normalize):
    rng = np.random.default_rng(seed)
    n_queries, n_items = rng.integers(1, 6), rng.integers(1, 15)
    labels = (rng.random((n_queries, n_items)) < 0.4).astype(int)
    labels[:, 0] = 1  # every query has a positive
    scores = np.round(rng.random((n_queries, n_items)), 1)
    for k in (1, 3, n_items, n_items + 2):
        p, r, ap = _twin_at_k(labels, scores, k, normalize)
        assert precision_at_k(labels, scores, k) == pytest.approx(p, abs=1e-12)
        assert recall_at_k(labels, scores, k) == pytest.approx(r, abs=1e-12)
        assert average_precision_at_k(labels, scores, k, normalize=normalize) == pytest.approx(ap, abs=1e-12)


def test_precision_at_k_average_ties_is_the_expectation_over_orders():
    labels = np.array([1, 0, 1, 0, 1])
    scores = np.array([0.9, 0.5, 0.5, 0.5, 0.1])
    # Place 2 of k=2 falls in the tied block {1, 2, 3} (mean relevance 1/3).
    assert precision_at_k(labels, scores, 2, ties="average") == pytest.approx((1 + 1 / 3) / 2)
    orders = [p for p in itertools.permutations([1, 2, 3])]
    expected = np.mean([(labels[0] + labels[p[0]]) / 2 for p in orders])
    assert precision_at_k(labels, scores, 2, ties="average") == pytest.approx(expected)
    assert precision_at_k(labels, scores, 2) == 0.5  # stable: item 1 (not relevant) first
    assert recall_at_k(labels, scores, 2, ties="average") == pytest.approx((1 + 1 / 3) / 3)


def test_ndcg_equals_scikit_learn_with_ties(skm):
    relevance = np.array([[10, 0, 0, 1, 5]])
    scores = np.array([[1, 0, 0, 0, 1]])
    for k in (None, 1, 2, 4):
        assert ndcg_at_k(relevance, scores, k) == pytest.approx(
            skm.ndcg_score(relevance, scores, k=k), abs=1e-15
        )
    assert ndcg_at_k(relevance[0], scores[0], 1) == 0.75


def test_queries_without_positives_are_left_out_with_a_warning():
    labels = [[1, 0, 0], [0, 0, 0]]
    scores = [[0.3, 0.2, 0.1], [0.3, 0.2, 0.1]]
    with pytest.warns(UndefinedMetricWarning, match="1 of 2 queries without positives"):
        assert recall_at_k(labels, scores, 1) == 1.0
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(average_precision_at_k([0, 0], [0.1, 0.2], 1))
    assert precision_at_k(labels, scores, 1) == 0.5  # defined for every query


# ---------------------------------------------------------------------------------------------
# Undefined values follow scikit-learn


def test_binary_without_positives():
    with pytest.warns(UndefinedMetricWarning, match="without positive samples"):
        assert average_precision([0, 0, 0], [0.1, 0.2, 0.3]) == 0.0
    with pytest.warns(UndefinedMetricWarning, match="only one class"):
        assert np.isnan(roc_auc([0, 0, 0], [0.1, 0.2, 0.3]))
    with pytest.warns(UndefinedMetricWarning, match="recall is set to 1"):
        precision, recall, _ = precision_recall_curve([0, 0], [0.1, 0.2])
    np.testing.assert_array_equal(recall, [1.0, 1.0, 0.0])
    with pytest.warns(UndefinedMetricWarning, match="no negative sample"):
        fpr, tpr, _ = roc_curve([1, 1], [0.1, 0.2])
    assert np.isnan(fpr).all()


def test_weighted_average_without_any_positive_is_zero(skm):
    # scikit-learn returns 0 before computing anything (and so without a warning); so do we.
    assert skm.average_precision_score([[0, 0], [0, 0]], [[0.1, 0.2], [0.3, 0.4]], average="weighted") == 0
    assert average_precision([[0, 0], [0, 0]], [[0.1, 0.2], [0.3, 0.4]], average="weighted") == 0.0


def test_pos_label_and_single_column(skm):
    assert average_precision(["b", "a", "b"], [0.9, 0.8, 0.1], pos_label="b") == pytest.approx(
        skm.average_precision_score(["b", "a", "b"], [0.9, 0.8, 0.1], pos_label="b")
    )
    assert average_precision([[1], [0]], [[0.9], [0.1]], average="samples") == 1.0


def test_inputs_are_not_modified():
    labels = np.array([[1, 0], [0, 1], [1, 1]])
    scores = np.array([[0.5, 0.5], [0.2, 0.9], [0.1, 0.3]])
    before = labels.copy(), scores.copy()
    average_precision(labels, scores, average="micro", method="all_point")
    roc_auc(labels, scores)
    ndcg_at_k(labels, scores, 1)
    np.testing.assert_array_equal(labels, before[0])
    np.testing.assert_array_equal(scores, before[1])


# ---------------------------------------------------------------------------------------------
# Errors: each message says where, what was expected and what was found


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: average_precision([0, 1], [0.1, np.nan]),
            InputError,
            r"y_score: element \[1\] is nan; expected finite",
        ),
        (
            lambda: average_precision([0, 1, 1], [0.1, 0.2]),
            InputError,
            r"y_true: shape \(3,\) differs from y_score's \(2,\)",
        ),
        (
            lambda: average_precision([[0, 2]], [[0.1, 0.2]]),
            InputError,
            r"y_true: element \[0, 1\] is 2; expected 0 or 1",
        ),
        (
            lambda: average_precision([0, 1, 2], [0.1, 0.2, 0.3]),
            InputError,
            "binary labels expected, found 3 distinct",
        ),
        (
            lambda: average_precision([0, 2], [0.1, 0.2]),
            ConfigError,
            r"pos_label: 1 is not one of the labels \[0, 2\]",
        ),
        (
            lambda: average_precision([[0, 1]], [[0.1, 0.2]], pos_label=2),
            ConfigError,
            "fixed to 1 for multilabel",
        ),
        (
            lambda: average_precision([0, 1], [0.1, 0.2], average="mean"),
            ConfigError,
            "average: expected one of",
        ),
        (lambda: average_precision([0, 1], [0.1, 0.2], method="voc"), ConfigError, "method: expected one of"),
        (lambda: average_precision([0, 1], [0.1, 0.2], grid="octave"), ConfigError, "grid: expected one of"),
        (
            lambda: average_precision([0, 1], ["a", "b"]),
            InputError,
            "y_score: expected real numbers, found dtype <U1",
        ),
        (
            lambda: average_precision([], []),
            InputError,
            r"y_score: expected at least one sample, found shape \(0,\)",
        ),
        (
            lambda: average_precision([0, 1], [0.1, 0.2], sample_weight=[1, -1]),
            InputError,
            r"sample_weight: element \[1\] is -1.0; expected a finite number >= 0",
        ),
        (
            lambda: average_precision([0, 1], [0.1, 0.2], sample_weight=[0, 0]),
            InputError,
            "all weights are 0",
        ),
        (
            lambda: average_precision([0, 1], [0.1, 0.2], sample_weight=[1]),
            InputError,
            r"shape \(1,\); expected \(2,\)",
        ),
        (
            lambda: average_precision(np.zeros((2, 2, 2)), np.zeros((2, 2, 2))),
            InputError,
            "found 3 dimensions",
        ),
        (
            lambda: precision_at_k([0, 1], [0.1, 0.2], 0),
            ConfigError,
            "k: expected a positive integer, found 0",
        ),
        (lambda: precision_at_k([0, 1], [0.1, 0.2], 1, ties="random"), ConfigError, "ties: expected one of"),
        (
            lambda: average_precision_at_k([0, 1], [0.1, 0.2], 1, normalize="k"),
            ConfigError,
            "normalize: expected",
        ),
        (
            lambda: ndcg_at_k([[-1, 1]], [[0.1, 0.2]]),
            InputError,
            r"y_true: element \[0, 0\] is -1.0; expected a relevance >= 0",
        ),
        (lambda: ndcg_at_k([[1]], [[0.1]]), InputError, "more than one item per query, found 1"),
        (lambda: roc_curve([[0, 1]], [[0.1, 0.2]]), InputError, r"expected shape \(n_samples,\) for a curve"),
        (lambda: roc_curve([0, 3], [0.1, 0.2]), InputError, r"labels \[0, 3\] are not \{0, 1\} or \{-1, 1\}"),
        (
            lambda: compare_raw_binarized([0, 1], [0.1, 0.2], threshold=float("nan")),
            ConfigError,
            "threshold: expected a finite",
        ),
    ],
)
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------------------------------------
# The report and its renderings


def test_rank_report_multilabel():
    labels = [[0, 0, 1, 1], [0, 0, 0, 1], [1, 0, 1, 0]]
    scores = [[0.1, 0.7, 0.75, 0.8], [0.3, 0.6, 0.2, 0.8], [0.9, 0.1, 0.4, 0.5]]
    doc = rank_report(
        labels, scores, average="macro", k=2, binarize=0.5, labels_name="y.csv", scores_name="s.csv"
    )
    assert set(doc) == {"inputs", "options", "metrics", "per_label", "at_k", "binarized", "warnings"}
    assert doc["inputs"] == {
        "labels": "y.csv",
        "scores": "s.csv",
        "n_samples": 3,
        "n_labels": 4,
        "n_positives": 5,
    }
    assert doc["per_label"][1] == {"label": 1, "name": None, "AP": 0.0, "ROC_AUC": None, "n_positives": 0}
    assert doc["metrics"]["ROC_AUC"] is None  # one label has a single class: macro AUC undefined
    assert any("without positive" in w for w in doc["warnings"])
    json.dumps(doc, allow_nan=False)
    table = format_rank_table(doc)
    assert "P@2" in table
    assert "AP binarized (>= 0.5)" in table
    assert "warning:" in table
    csv = format_rank_csv(doc).splitlines()
    assert csv[0] == "scope,metric,value"
    assert "all,ROC_AUC," in csv
    assert "label=1,AP,0.0" in csv


def test_rank_report_does_not_leak_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = rank_report([0, 0], [0.1, 0.2])
    assert doc["metrics"] == {"AP": 0.0, "ROC_AUC": None}
    assert len(doc["warnings"]) == 2


# ---------------------------------------------------------------------------------------------
# Every example of docs/ranking.md runs and prints what the page says


def _doc_examples() -> list:
    text = (ROOT / "docs" / "ranking.md").read_text()
    pairs = re.findall(r"```python\n(.*?)```\n(?:\s*Output:\s*\n)?```text\n(.*?)```", text, flags=re.S)
    return [pytest.param(code, out, id=f"ranking.md#{i}") for i, (code, out) in enumerate(pairs)]


def test_every_doc_python_block_has_its_output():
    text = (ROOT / "docs" / "ranking.md").read_text()
    assert len(_doc_examples()) == text.count("```python") > 0


@pytest.mark.parametrize(("code", "expected"), _doc_examples())
def test_doc_example(code, expected, monkeypatch):
    monkeypatch.chdir(ROOT)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, "<docs/ranking.md>", "exec"), {"__name__": "__doc__"})
    assert buffer.getvalue().rstrip("\n") == expected.rstrip("\n")
