"""The compiled TIDE AP kernel (``deteval/_canalyze.c``) against its numpy twin, bit for bit.

``deteval.tide.ap._tide_points`` runs the kernel when it was built and ``DETEVAL_NO_EXTENSION`` is
not set; ``_tide_points_numpy`` is the reference. The 101 recall-point values of every class must
be identical float64 bits on generated rankings (ties, classes without points, without positives
or not included, more TPs than positives, a single point) and under a hypothesis property; the
kernel refuses inconsistent inputs instead of reading out of bounds. Without the extension the
comparisons are skipped (the loading rules and the shared special-value cases:
tests/unit/test_kernels.py).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval import _speedups
from deteval.decomposition import pairs as decomposition  # the largest-IoU kernel and its twin
from deteval.tide import ap as ap_module
from deteval.tide import oracle
from tests.support.kernels import needs_kernel as kernel_built

needs_kernel = kernel_built("deteval._canalyze")
CANALYZE = _speedups.load("deteval._canalyze")


def ranking(seed: int):
    rng = np.random.default_rng(seed)
    n_class = int(rng.integers(1, 9))
    n = int(rng.integers(0, 400))
    cls = np.sort(rng.integers(0, n_class, n)).astype(np.int64)
    is_tp = rng.random(n) < rng.random()
    n_positive = rng.integers(0, 60, n_class).astype(np.int64)
    n_positive[rng.random(n_class) < 0.2] = 0
    is_included = rng.random(n_class) < 0.85
    return cls, is_tp, n_positive, is_included


def assert_same(cls, is_tp, n_positive, is_included):
    want = ap_module._tide_points_numpy(cls, is_tp, n_positive, is_included)
    got = ap_module._tide_points(cls, is_tp, n_positive, is_included)
    assert got.shape == want.shape == (len(n_positive), 101)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


@needs_kernel
@pytest.mark.parametrize("seed", range(150))
def test_kernel_equals_numpy_on_random_rankings(seed):
    assert_same(*ranking(seed))


@needs_kernel
@pytest.mark.parametrize(
    ("cls", "is_tp", "n_positive"),
    [
        ([], [], [3, 0]),  # no points at all
        ([0], [True], [1]),  # one TP, one positive: every recall point reached
        ([0, 0, 0], [True, True, True], [2]),  # more TPs than positives (tidecv allows it)
        ([1, 1], [False, False], [0, 4]),  # only FPs
        ([0, 0, 2], [False, True, True], [7, 5, 3]),  # a class with positives and no point
    ],
)
def test_kernel_equals_numpy_on_edge_cases(cls, is_tp, n_positive):
    n_positive = np.array(n_positive, dtype=np.int64)
    assert_same(
        np.array(cls, dtype=np.int64), np.array(is_tp, dtype=bool), n_positive, np.ones(len(n_positive), bool)
    )


@needs_kernel
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.booleans()), max_size=80),
    st.lists(st.integers(0, 40), min_size=5, max_size=5),
    st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_kernel_equals_numpy_property(points, n_positive, is_included):
    points = sorted(points, key=lambda p: p[0])
    cls = np.array([p[0] for p in points], dtype=np.int64)
    is_tp = np.array([p[1] for p in points], dtype=bool)
    assert_same(cls, is_tp, np.array(n_positive, dtype=np.int64), np.array(is_included, dtype=bool))


@needs_kernel
@pytest.mark.parametrize(
    ("cls", "npos", "message"),
    [
        ([1, 0], [1, 1], "increasing order"),
        ([0, 2], [1, 1], "out of range"),
        ([0], [-1], "npos out of range"),
    ],
)
def test_kernel_refuses_inconsistent_inputs(cls, npos, message):
    with pytest.raises(ValueError, match=message):
        CANALYZE.tide_points(
            np.array(cls, dtype=np.int64),
            np.ones(len(cls), bool),
            np.array(npos, dtype=np.int64),
            np.ones(len(npos), bool),
            np.zeros(len(npos) * 101),
        )


@needs_kernel
def test_kernel_refuses_wrong_dtypes_and_lengths():
    with pytest.raises(TypeError, match="int64"):
        CANALYZE.tide_points(
            np.zeros(2, np.int32), np.ones(2, bool), np.ones(1, np.int64), np.ones(1, bool), np.zeros(101)
        )
    with pytest.raises(ValueError, match="lengths"):
        CANALYZE.tide_points(
            np.zeros(2, np.int64), np.ones(2, bool), np.ones(1, np.int64), np.ones(1, bool), np.zeros(100)
        )


# --------------------------------------------------------------------------------------
# pair_maxima (TIDE's error tests) and run_first_max (the decomposition's largest IoU)
# --------------------------------------------------------------------------------------


def random_pairs(seed: int):
    """Detection-major image pairs with repeated IoU values, zeros, classes, uncounted and used GTs."""
    rng = np.random.default_rng(seed)
    n_det = int(rng.integers(1, 60))
    n_gt = int(rng.integers(1, 30))
    n_class = int(rng.integers(1, 5))
    per_det = rng.integers(0, 6, n_det)
    pair_det = np.repeat(np.arange(n_det), per_det).astype(np.int64)
    pair_gt = rng.integers(0, n_gt, len(pair_det)).astype(np.int64)
    if seed % 2:
        iou = rng.choice(np.array([0.0, 0.1, 0.5, 0.5, 0.7, 1.0]), len(pair_det))
    else:
        iou = rng.random(len(pair_det))
    iou[rng.random(len(iou)) < 0.2] = 0.0
    pairs = decomposition.ImagePairs(pair_det, pair_gt, iou, "continuous", n_det, n_gt)
    rows = rng.permutation(n_det)[: int(rng.integers(0, n_det + 1))].astype(np.int64)
    det_class = rng.integers(0, n_class, len(rows)).astype(np.int64)
    gt_class = rng.integers(0, n_class, n_gt).astype(np.int64)
    gt_is_counted = rng.random(n_gt) < 0.8
    gt_is_used = rng.random(n_gt) < 0.4
    return pairs, rows, det_class, gt_class, gt_is_counted, gt_is_used


def assert_same_maxima(pairs, rows, det_class, gt_class, gt_is_counted, gt_is_used):
    args = (pairs.run_start, pairs.pair_gt, pairs.iou, rows, det_class, gt_class, gt_is_counted, gt_is_used)
    want = oracle._pair_maxima_numpy(*args)
    got = oracle._pair_maxima(*args)
    assert np.array_equal(got[0], want[0])
    for g, w in zip(got[1] + got[2], want[1] + want[2], strict=True):
        assert g.dtype == w.dtype
        assert np.array_equal(np.ascontiguousarray(g).view(np.int64), np.ascontiguousarray(w).view(np.int64))


def assert_same_first_max(pairs, rows, gt_mask):
    want = decomposition._first_max_numpy(pairs, rows, gt_mask)
    got = decomposition._first_max(pairs, rows, gt_mask)
    assert np.array_equal(got, want)


@needs_kernel
@pytest.mark.parametrize("seed", range(150))
def test_pair_kernels_equal_numpy_on_random_pairs(seed):
    pairs, rows, det_class, gt_class, gt_is_counted, gt_is_used = random_pairs(seed)
    assert_same_maxima(pairs, rows, det_class, gt_class, gt_is_counted, gt_is_used)
    assert_same_first_max(pairs, rows, gt_is_counted)
    assert_same_first_max(pairs, np.arange(pairs.n_det), np.ones(pairs.n_gt, bool))


@needs_kernel
@pytest.mark.parametrize(
    ("iou", "gt_class"),
    [
        ([0.0, 0.0, 0.0], [0, 1, 0]),  # max 0: the first pair, whatever its class
        ([0.3, 0.3, 0.3], [1, 1, 0]),  # ties: the first
        ([0.9], [1]),  # one pair of another class
    ],
)
def test_pair_kernels_on_ties_and_zeros(iou, gt_class):
    n = len(iou)
    pairs = decomposition.ImagePairs(np.zeros(n, np.int64), np.arange(n), np.array(iou), "continuous", 1, n)
    rows = np.zeros(1, np.int64)
    assert_same_maxima(
        pairs, rows, np.zeros(1, np.int64), np.array(gt_class), np.ones(n, bool), np.ones(n, bool)
    )
    assert_same_first_max(pairs, rows, np.ones(n, bool))


@needs_kernel
def test_pair_kernels_refuse_inconsistent_inputs():
    run_start = np.array([0, 2], np.int64)
    with pytest.raises(ValueError, match="row is out of range"):
        CANALYZE.run_first_max(
            run_start,
            np.zeros(2, np.int64),
            np.zeros(2),
            np.array([1], np.int64),
            np.ones(1, bool),
            np.zeros(1, np.int64),
        )
    with pytest.raises(ValueError, match="decreasing"):
        CANALYZE.run_first_max(
            np.array([0, 3], np.int64),
            np.zeros(2, np.int64),
            np.zeros(2),
            np.zeros(1, np.int64),
            np.ones(1, bool),
            np.zeros(1, np.int64),
        )
    with pytest.raises(ValueError, match="ground truth is out of range"):
        CANALYZE.pair_maxima(
            run_start,
            np.array([0, 5], np.int64),
            np.zeros(2),
            np.zeros(1, np.int64),
            np.zeros(1, np.int64),
            np.zeros(2, np.int64),
            np.ones(2, bool),
            np.zeros(2, bool),
            np.zeros((1, 4)),
            np.zeros((1, 2), np.int64),
            np.zeros(1, bool),
        )


@needs_kernel
def test_analyze_is_the_same_with_and_without_the_kernels(tmp_path):
    """The whole ``analyze`` JSON on a generated dataset with crowds and confusions, both ways."""
    import json
    import subprocess
    import sys

    from tests import ROOT

    gt, dt = ROOT / "fixtures" / "coco" / "gt.json", ROOT / "fixtures" / "coco" / "dt.json"
    outputs = []
    for flag in ("0", "1"):
        out = tmp_path / f"analyze-{flag}.json"
        env = {**os.environ, "DETEVAL_NO_EXTENSION": flag, "PYTHONPATH": str(ROOT)}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "deteval",
                "analyze",
                "--gt",
                str(gt),
                "--dt",
                str(dt),
                "--output",
                str(out),
            ],
            check=True,
            env=env,
            capture_output=True,
        )
        outputs.append(json.loads(out.read_text()))
    assert outputs[0] == outputs[1]
