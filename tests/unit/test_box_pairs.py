"""The compiled pairs-and-IoU pass of box matching (``_cmatch.box_pairs``) and its declines.

The kernel against its twin on generated inputs, and every thread count, are in
tests/unit/test_kernels.py; here: the inputs it must not take (the twin runs instead).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from deteval import _speedups
from tests.support.kernels import needs_kernel

run = importlib.import_module("deteval.evaluate.run")

BOX = np.array([[0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 10.0, 6.0], [5.0, 5.0, 10.0, 10.0]])


def _args(det_key, gt_key, det_rows, gt_rows, det_box=BOX, gt_box=BOX):
    crowd = np.zeros(len(gt_key), dtype=bool)
    return (
        np.asarray(det_key, np.int64),
        np.asarray(gt_key, np.int64),
        np.asarray(det_rows, np.int64),
        np.asarray(gt_rows, np.int64),
        det_box,
        gt_box,
        crowd,
        2,
    )


@needs_kernel("deteval._cmatch")
@pytest.mark.parametrize(
    ("case", "args"),
    [
        ("detection keys not sorted", _args([2, 1], [1, 2], [0, 1], [1, 2])),
        ("ground-truth keys not sorted", _args([1, 2], [2, 1], [0, 1], [1, 2])),
        ("detection row past the boxes", _args([1, 2], [1, 2], [0, 3], [1, 2])),
        ("negative ground-truth row", _args([1, 2], [1, 2], [0, 1], [-1, 2])),
    ],
)
def test_box_pairs_declines_inputs_outside_its_assumptions(case, args):
    got = run._box_pairs_compiled(*args)
    assert got == _speedups.Decline(run._OUTSIDE), case


@needs_kernel("deteval._cmatch")
def test_box_pairs_declines_overflowing_boxes_and_the_twin_rescales_them():
    huge = np.array([[0.0, 0.0, 1e200, 1e200]])
    args = _args([0], [0], [0], [0], huge, huge)
    assert run._box_pairs_compiled(*args) == _speedups.Decline(run._OVERFLOW)
    pair_det, pair_gt, iou = run.box_pairs(*args[:-1])
    assert (pair_det.tolist(), pair_gt.tolist(), iou.tolist()) == ([0], [0], [1.0])


@needs_kernel("deteval._cmatch")
def test_box_pairs_pairs_every_detection_with_its_groups_ground_truth():
    args = _args([1, 1, 3, 5], [0, 1, 1, 3, 3, 4], [0, 1, 2, 0], [2, 0, 1, 0, 2, 1])
    compiled = run._box_pairs_compiled(*args)
    twin = run._box_pairs_numpy(*args)
    assert compiled[0].tolist() == [0, 0, 1, 1, 2, 2]
    assert compiled[1].tolist() == [1, 2, 1, 2, 3, 4]
    for got, want in zip(compiled, twin, strict=True):
        assert got.dtype == want.dtype
        assert np.array_equal(got.view(np.int64), want.view(np.int64))


@needs_kernel("deteval._cmatch")
def test_box_pairs_counts_before_allocating_and_the_memory_limit_refuses_them():
    """More pairs than the memory allows: the kernel returns their count, box_pairs refuses.

    (Before, the compiled pass allocated whatever the pairs needed: ``--memory-limit`` was not
    checked on the box path.)
    """
    from deteval.errors import ConfigError
    from deteval.memory import BYTES_PER_PAIR, memory_limit

    args = _args([1, 1, 3, 5], [0, 1, 1, 3, 3, 4], [0, 1, 2, 0], [2, 0, 1, 0, 2, 1])
    kernel = _speedups.module_of("_cmatch.box_pairs").box_pairs
    arrays = [np.ascontiguousarray(a) for a in args[:-1]]
    assert kernel(*arrays, 2, 5) == 6  # six pairs, five allowed: counted, nothing allocated
    assert len(kernel(*arrays, 2, 6)) == 4  # six allowed: the pairs
    assert len(kernel(*arrays, 2, -1)) == 4  # no limit
    with memory_limit(6 * BYTES_PER_PAIR):
        assert run._box_pairs_compiled(*args)[0].tolist() == [0, 0, 1, 1, 2, 2]
    with memory_limit(6 * BYTES_PER_PAIR - 1), pytest.raises(ConfigError, match="6 candidate"):
        run._box_pairs_compiled(*args)
