"""The compiled OKS terms (deteval.geometry._ckeypoint): empty input and rows outside.

The kernel against its numpy twin, bit for bit, is in tests/unit/test_kernels.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval._speedups import load
from deteval.geometry.keypoints import COCO_KEYPOINT_SIGMAS, pair_oks

kernel = load("deteval.geometry._ckeypoint")
needs_kernel = pytest.mark.skipif(kernel is None, reason="deteval.geometry._ckeypoint not built")


def collections(rng: np.random.Generator, n_gt: int, n_det: int, n_kp: int) -> tuple:
    gt = np.empty((n_gt, n_kp, 3))
    gt[:, :, :2] = rng.uniform(0, 200, (n_gt, n_kp, 2)).round(rng.integers(0, 3))
    gt[:, :, 2] = rng.choice([0.0, 1.0, 2.0], (n_gt, n_kp), p=[0.4, 0.2, 0.4])
    gt[: n_gt // 4, :, 2] = 0  # ground truth without labelled keypoints: the doubled-box rule
    det = np.empty((n_det, n_kp, 3))
    det[:, :, :2] = rng.uniform(-250, 450, (n_det, n_kp, 2))
    det[:, :, 2] = rng.uniform(0, 1, (n_det, n_kp))
    box = np.c_[rng.uniform(0, 150, (n_gt, 2)), rng.uniform(0, 80, (n_gt, 2))]
    area = rng.uniform(0, 5000, n_gt)
    area[0] = 0.0
    return gt, box, area, det


@needs_kernel
def test_no_pairs_and_rows_outside_are_handled():
    rng = np.random.default_rng(0)
    gt, box, area, det = collections(rng, 3, 3, 17)
    none = np.zeros(0, np.int64)
    sigmas = COCO_KEYPOINT_SIGMAS
    assert pair_oks(gt, box, area, det, sigmas=sigmas, gt_rows=none, det_rows=none).shape == (0,)
    with pytest.raises(ValueError, match="outside"):
        pair_oks(gt, box, area, det, sigmas=sigmas, gt_rows=np.array([3]), det_rows=np.array([0]))


@needs_kernel
def test_terms_are_laid_out_by_count_in_pair_order():
    """Pairs grouped by term count (labelled keypoints, or all when none is), each group in pair order."""
    rng = np.random.default_rng(1)
    gt, box, area, det = collections(rng, 6, 4, 5)
    gt[:, :, 2] = 0
    for g, labelled in enumerate([2, 0, 5, 2, 1, 3]):  # ground truth 1: none labelled, all 5 terms
        gt[g, :labelled, 2] = 2
    gt_rows = np.array([0, 1, 2, 3, 4, 5, 0, 4, 1], dtype=np.int64)
    det_rows = np.array([0, 1, 2, 3, 0, 1, 2, 3, 0], dtype=np.int64)
    n_kp = 5
    terms = np.full(len(gt_rows) * n_kp, np.nan)
    order = np.empty(len(gt_rows), dtype=np.int64)
    group_size = np.empty(n_kp + 1, dtype=np.int64)
    variances = (np.full(n_kp, 0.05) * 2) ** 2
    kernel.oks_terms(
        gt, box, area + np.spacing(1), det, gt_rows, det_rows, variances, terms, order, group_size
    )
    assert group_size.tolist() == [0, 2, 3, 1, 0, 3]
    assert order.tolist() == [4, 7, 0, 3, 6, 5, 1, 2, 8]
    assert np.isnan(terms[2 * 1 + 3 * 2 + 1 * 3 + 3 * 5 :]).all()  # the rest is not written
    assert (terms[: 2 + 6 + 3 + 15] <= 0).all()  # negated terms
    oks = pair_oks(gt, box, area, det, sigmas=np.full(n_kp, 0.05), gt_rows=gt_rows, det_rows=det_rows)
    twin = pair_oks(gt[gt_rows], box[gt_rows], area[gt_rows], det[det_rows], sigmas=np.full(n_kp, 0.05))
    assert oks.view(np.int64).tolist() == twin.view(np.int64).tolist()


@needs_kernel
@pytest.mark.parametrize(
    ("n_gt", "n_det", "n_pair", "per_slice"),
    [(40, 50, 3, None), (300, 400, 5000, None), (300, 400, 5000, 7), (200, 100, 2001, 1000)],
)
def test_threads_give_one_threads_oks(monkeypatch, n_gt, n_det, n_pair, per_slice):
    """OKS on 1, 2, 3 and 7 threads, bit for bit; more threads than pairs, and many small slices."""
    import deteval.geometry.keypoints as keypoints

    if per_slice is not None:
        monkeypatch.setattr(keypoints, "_PAIRS_PER_SLICE", per_slice)
    rng = np.random.default_rng(n_pair)
    gt, box, area, det = collections(rng, n_gt, n_det, 17)
    gt_rows = rng.integers(0, n_gt, n_pair)
    det_rows = rng.integers(0, n_det, n_pair).astype(np.int32)  # candidate pairs may come as int32
    args = (gt, box, area, det)
    one = pair_oks(*args, sigmas=COCO_KEYPOINT_SIGMAS, gt_rows=gt_rows, det_rows=det_rows, threads=1)
    twin = pair_oks(gt[gt_rows], box[gt_rows], area[gt_rows], det[det_rows], sigmas=COCO_KEYPOINT_SIGMAS)
    assert one.tobytes() == twin.tobytes()
    for threads in (2, 3, 7):
        got = pair_oks(
            *args, sigmas=COCO_KEYPOINT_SIGMAS, gt_rows=gt_rows, det_rows=det_rows, threads=threads
        )
        assert got.tobytes() == one.tobytes(), threads


@needs_kernel
def test_an_error_on_a_helper_thread_reaches_the_caller():
    """A row outside the collections in a slice run by a helper thread raises on the calling thread."""
    rng = np.random.default_rng(3)
    gt, box, area, det = collections(rng, 10, 10, 17)
    gt_rows = np.zeros(100, np.int64)
    gt_rows[-1] = 10  # in the last slice: thread 1 of 2
    with pytest.raises(ValueError, match="outside"):
        pair_oks(
            gt, box, area, det, sigmas=COCO_KEYPOINT_SIGMAS, gt_rows=gt_rows, det_rows=gt_rows * 0, threads=2
        )
