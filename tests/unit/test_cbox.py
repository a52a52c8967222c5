"""The compiled box-pair IoU (``deteval/geometry/_cbox.c``) against its numpy twin, bit for bit.

``pair_box_iou`` runs the kernel when it was built and ``DETEVAL_NO_EXTENSION`` is not set;
``_pair_box_iou_numpy`` is the reference. Both conventions, both box formats, with and without
row indices, crowd pairs, degenerate and touching boxes, integer-valued boxes whose IoU ties, and
boxes large enough to overflow (the kernel declines; the numpy path rescales) must give identical
float64 bits, also under a hypothesis property. Without the extension the comparisons are skipped
(the loading rules and the shared special-value cases: tests/unit/test_kernels.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval import _speedups
from deteval.geometry import boxes as boxes_module
from tests.support.kernels import needs_kernel as kernel_built

needs_kernel = kernel_built("deteval.geometry._cbox")
CBOX = _speedups.load("deteval.geometry._cbox")


def assert_same(det, gt, crowd, box_format, convention, det_rows=None, gt_rows=None):
    want = boxes_module._pair_box_iou_numpy(det, gt, crowd, box_format, convention, det_rows, gt_rows)
    got = boxes_module.pair_box_iou(
        det, gt, crowd, box_format=box_format, convention=convention, det_rows=det_rows, gt_rows=gt_rows
    )
    assert got.dtype == want.dtype == np.float64
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def random_boxes(rng, n, integer):
    xy = rng.integers(-5, 40, (n, 2)) if integer else rng.random((n, 2)) * 40 - 5
    wh = rng.integers(-2, 25, (n, 2)) if integer else rng.random((n, 2)) * 25
    return np.concatenate([xy, wh], axis=1).astype(np.float64)


@needs_kernel
@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("convention", ["continuous", "pixel_inclusive"])
@pytest.mark.parametrize("box_format", ["xywh", "xyxy"])
def test_kernel_equals_numpy_on_random_pairs(seed, convention, box_format):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    det, gt = random_boxes(rng, n, seed % 2 == 0), random_boxes(rng, n, seed % 2 == 0)
    gt[rng.random(n) < 0.2] = det[rng.random(n) < 0.2][:1] if (rng.random(n) < 0.2).any() else gt[0]
    crowd = rng.random(n) < 0.2
    assert_same(det, gt, crowd, box_format, convention)
    det_rows = rng.integers(0, n, 2 * n)
    gt_rows = rng.integers(0, n, 2 * n)
    assert_same(det, gt, rng.random(2 * n) < 0.2, box_format, convention, det_rows, gt_rows)


@needs_kernel
@pytest.mark.parametrize("convention", ["continuous", "pixel_inclusive"])
def test_kernel_declines_overflow_and_numpy_rescales(convention):
    det = np.array([[0.0, 0.0, 1e200, 1e200], [0.0, 0.0, 10.0, 10.0], [1e200, 1e200, 1e200, 1e200]])
    gt = np.array([[0.0, 0.0, 1e200, 1e200], [0.0, 0.0, 10.0, 5.0], [1e200, 1e200, 1e200, 1e200]])
    declined = boxes_module._pair_box_iou_compiled(det, gt, np.zeros(3, bool), "xywh", convention, None, None)
    assert declined == _speedups.Decline("a term not finite")
    assert_same(det, gt, np.zeros(3, bool), "xywh", convention)


@needs_kernel
def test_kernel_refuses_inconsistent_inputs():
    box = np.zeros((2, 4))
    with pytest.raises(ValueError, match="out of range"):
        CBOX.pair_iou(
            box,
            box,
            np.array([0, 2], np.int64),
            np.array([0, 0], np.int64),
            np.zeros(2, bool),
            False,
            np.empty(2),
        )
    with pytest.raises(ValueError, match="lengths"):
        CBOX.pair_iou(box, box, None, None, np.zeros(3, bool), False, np.empty(3))
    with pytest.raises(TypeError, match="float64"):
        CBOX.pair_iou(box.astype(np.float32), box, None, None, np.zeros(2, bool), False, np.empty(2))


coordinate = st.one_of(st.integers(-20, 60).map(float), st.floats(-20, 60, allow_nan=False))


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(*(coordinate,) * 8, st.booleans()), min_size=1, max_size=30),
    st.sampled_from(["continuous", "pixel_inclusive"]),
)
def test_kernel_equals_numpy_property(pairs, convention):
    det = np.array([p[:4] for p in pairs])
    gt = np.array([p[4:8] for p in pairs])
    crowd = np.array([p[8] for p in pairs])
    assert_same(det, gt, crowd, "xywh", convention)
