"""Shared test helpers (moved from tests/unit/test_matching.py, which imports them from here)."""

from __future__ import annotations

import numpy as np

from deteval.grouping import candidate_pairs, group_rows

THRESHOLDS = np.linspace(0.5, 0.95, 10)


def random_problem(seed):
    rng = np.random.default_rng(seed)
    n_groups = rng.integers(1, 12)
    # IoU values from a small set so that ties and exact thresholds are common.
    values = np.array([0.0, 0.3, 0.5, 0.55, 0.6, 0.7, 0.75, 0.8999999999999999, 0.9, 0.95, 1.0])
    groups, det_key, gt_key = [], [], []
    n_det = n_gt = 0
    for key in sorted(rng.choice(1000, n_groups, replace=False)):
        nd, ng = rng.integers(0, 8), rng.integers(0, 6)
        dets = list(range(n_det, n_det + nd))
        gts = list(range(n_gt, n_gt + ng))
        iou = {(d, j): float(rng.choice(values)) for d in dets for j in gts}
        groups.append({"dets": dets, "gts": gts, "iou": iou})
        det_key += [key] * nd
        gt_key += [key] * ng
        n_det += nd
        n_gt += ng
    n_area = 2
    gt_ignored = rng.random((n_area, n_gt)) < 0.3
    reusable = rng.random(n_gt) < 0.2
    gt_ignored[:, reusable] = True
    unmatchable = rng.random(n_gt) < 0.1
    det_out = rng.random((n_area, n_det)) < 0.3
    return (
        groups,
        np.array(det_key, np.int64),
        np.array(gt_key, np.int64),
        gt_ignored,
        reusable,
        unmatchable,
        det_out,
    )


def pairs_of(groups, det_key, gt_key):
    gt_groups = group_rows(gt_key)
    pair_det, pair_gt = candidate_pairs(det_key, gt_groups)
    iou = {k: v for g in groups for k, v in g["iou"].items()}
    pair_iou = np.array([iou[(d, g)] for d, g in zip(pair_det, gt_groups.order[pair_gt])])
    return pair_det, gt_groups.order[pair_gt], pair_iou
