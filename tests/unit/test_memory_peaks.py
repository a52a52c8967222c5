"""Peak memory of the steps whose working arrays scale with classes or detections.

numpy's allocations are traced by ``tracemalloc``: each test bounds the peak of one step by the
arrays it must return, plus a small fraction of them, so that a whole extra copy (a second
precision array of every ``max_dets`` value, a (lanes x candidates) int64 temporary) fails.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from deteval import accumulate as acc_module
from deteval.protocol import get_protocol
from tests.support.kernels import coco_numpy, needs_kernel


def traced_peak(fn, *args, **kwargs):
    """(result, peak bytes traced while ``fn`` ran)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn(*args, **kwargs)
        return out, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@needs_kernel("deteval._cacc")
def test_compiled_accumulation_holds_no_second_precision_array():
    # Many classes, few detections: the (thresholds x recall points x classes x areas x
    # max_dets) outputs dominate; the AP is taken one max_dets value and threshold at a time.
    protocol = get_protocol("coco")
    rng = np.random.default_rng(0)
    n_class, n_area, n_thr, n_det = 300, 4, 10, 2000
    det_class = np.sort(rng.integers(0, n_class, n_det))
    det_is_tp = rng.random((n_area * n_thr, n_det)) < 0.3
    det_is_ignored = ~det_is_tp & (rng.random((n_area * n_thr, n_det)) < 0.1)
    det_score = rng.random(n_det)
    det_rank = rng.integers(0, 120, n_det)
    ranking = np.lexsort((-det_score, det_class))
    n_positive = rng.integers(0, 20, (n_class, n_area))
    rec_thr = acc_module.recall_thresholds(protocol)
    args = (det_is_tp, det_is_ignored, det_score, det_class, det_rank, ranking, n_positive, protocol, rec_thr)
    acc, peak = traced_peak(acc_module._accumulate_compiled, *args)
    assert acc is not None
    outputs = acc.precision.nbytes + acc.scores.nbytes
    assert peak < 1.25 * outputs, (peak, outputs)
    expected = acc_module._accumulate_numpy(*args)
    assert np.array_equal(acc.ap, expected.ap, equal_nan=True)


def test_numpy_matching_has_no_lanes_by_candidates_int64_temporary():
    # Every detection a candidate with one pair, in groups of 50 (50 rounds of 400 pairs): the
    # (lanes x candidates) arrays of the outcomes dominate, not the rounds' (lanes x pairs) ones.
    rng = np.random.default_rng(1)
    n_det, n_area = 20000, 4
    thresholds = np.linspace(0.5, 0.95, 10)
    n_lane = n_area * len(thresholds)
    pair_det = np.arange(n_det, dtype=np.int64)
    pair_gt = np.arange(n_det, dtype=np.int64)
    result, peak = traced_peak(
        coco_numpy,
        pair_det,
        pair_gt,
        rng.random(n_det),
        det_key=np.arange(n_det, dtype=np.int64) // 50,
        n_gt=n_det,
        iou_thresholds=thresholds,
        gt_is_ignored=rng.random((n_area, n_det)) < 0.1,
        gt_is_reusable=np.zeros(n_det, bool),
        gt_is_unmatchable=np.zeros(n_det, bool),
        det_is_out_of_range=rng.random((n_area, n_det)) < 0.2,
    )
    returned = sum(
        getattr(result, name).nbytes
        for name in ("det_is_tp", "det_is_ignored", "match_lane", "match_det", "match_gt")
    )
    # Besides what it returns: the int32 (lanes x candidates) ground-truth array and a bool one
    # (an int64 one more, as before, fails).
    assert peak < returned + 8 * n_lane * n_det, (peak, returned)
