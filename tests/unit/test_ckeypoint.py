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
