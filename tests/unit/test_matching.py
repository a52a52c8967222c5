"""The vectorized matchers against slow, plainly written twins on random groups."""

import numpy as np
import pytest

from deteval.grouping import rank_in_group
from deteval.matching import match_coco, match_voc
from tests.support.matching import THRESHOLDS, pairs_of, random_problem


def slow_coco(groups, thresholds, gt_ignored, reusable, unmatchable, det_out):
    """Pycocotools' evaluateImg loop, verbatim in spirit, per group and lane."""
    n_area = gt_ignored.shape[0]
    n_det = sum(len(g["dets"]) for g in groups)
    tp = np.zeros((n_area, len(thresholds), n_det), bool)
    ign = np.zeros_like(tp)
    for g in groups:
        for a in range(n_area):
            gts = sorted(g["gts"], key=lambda j: gt_ignored[a, j])  # stable: non-ignored first
            for ti, t in enumerate(thresholds):
                taken = set()
                for d in g["dets"]:
                    best, m = min(t, 1 - 1e-10), -1
                    for j in gts:
                        if j in taken and not reusable[j]:
                            continue
                        if m > -1 and not gt_ignored[a, m] and gt_ignored[a, j]:
                            break
                        if g["iou"][(d, j)] < best:
                            continue
                        best, m = g["iou"][(d, j)], j
                    if m == -1:
                        ign[a, ti, d] = det_out[a, d]
                        continue
                    taken.add(m)
                    matched = not unmatchable[m]
                    ign[a, ti, d] = gt_ignored[a, m] or (not matched and det_out[a, d])
                    tp[a, ti, d] = matched and not ign[a, ti, d]
    return tp.reshape(n_area * len(thresholds), n_det), ign.reshape(n_area * len(thresholds), n_det)


def slow_voc(groups, thresholds, gt_ignored, det_out, strict):
    n_area = gt_ignored.shape[0]
    n_det = sum(len(g["dets"]) for g in groups)
    tp = np.zeros((n_area, len(thresholds), n_det), bool)
    ign = np.zeros_like(tp)
    for g in groups:
        for a in range(n_area):
            for ti, t in enumerate(thresholds):
                taken = set()
                for d in g["dets"]:
                    ovmax, jmax = -np.inf, -1
                    for j in g["gts"]:
                        ov = g["iou"][(d, j)]
                        if ov > 0 and ov > ovmax:
                            ovmax, jmax = ov, j
                    passes = ovmax > t if strict else ovmax >= t
                    if passes:
                        if gt_ignored[a, jmax]:
                            ign[a, ti, d] = True
                        elif jmax not in taken:
                            tp[a, ti, d] = True
                            taken.add(jmax)
                    else:
                        ign[a, ti, d] = det_out[a, d]
    return tp.reshape(n_area * len(thresholds), n_det), ign.reshape(n_area * len(thresholds), n_det)


@pytest.mark.parametrize("seed", range(150))
def test_fast_coco_matcher_equals_slow_twin(seed):
    groups, det_key, gt_key, gt_ignored, reusable, unmatchable, det_out = random_problem(seed)
    pair_det, pair_gt, pair_iou = pairs_of(groups, det_key, gt_key)
    fast = match_coco(
        pair_det,
        pair_gt,
        pair_iou,
        det_key=det_key,
        n_gt=len(gt_key),
        iou_thresholds=THRESHOLDS,
        gt_is_ignored=gt_ignored,
        gt_is_reusable=reusable,
        gt_is_unmatchable=unmatchable,
        det_is_out_of_range=det_out,
    )
    tp, ign = slow_coco(groups, THRESHOLDS, gt_ignored, reusable, unmatchable, det_out)
    assert np.array_equal(fast.det_is_tp, tp)
    assert np.array_equal(fast.det_is_ignored, ign)


@pytest.mark.parametrize("seed", range(100))
@pytest.mark.parametrize("strict", [False, True])
def test_fast_voc_matcher_equals_slow_twin(seed, strict):
    groups, det_key, gt_key, gt_ignored, _, _, det_out = random_problem(seed)
    pair_det, pair_gt, pair_iou = pairs_of(groups, det_key, gt_key)
    thresholds = np.array([0.5, 0.75])
    fast = match_voc(
        pair_det,
        pair_gt,
        pair_iou,
        n_det=len(det_key),
        n_gt=len(gt_key),
        iou_thresholds=thresholds,
        gt_is_ignored=gt_ignored,
        det_is_out_of_range=det_out,
        strict=strict,
    )
    tp, ign = slow_voc(groups, thresholds, gt_ignored, det_out, strict)
    assert np.array_equal(fast.det_is_tp, tp)
    assert np.array_equal(fast.det_is_ignored, ign)


def test_coco_prefers_best_untaken_gt_voc_does_not():
    # docs/known-answers.md section 2: d1 -> A; d2 overlaps A (0.739, taken) and B (0.6).
    det_key = np.array([0, 0])
    pair_det, pair_gt = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    pair_iou = np.array([1.0, 0.6, 8500 / 11500, 0.6])
    none = np.zeros((1, 2), bool)
    coco = match_coco(
        pair_det,
        pair_gt,
        pair_iou,
        det_key=det_key,
        n_gt=2,
        iou_thresholds=np.array([0.5]),
        gt_is_ignored=none,
        gt_is_reusable=np.zeros(2, bool),
        gt_is_unmatchable=np.zeros(2, bool),
        det_is_out_of_range=none,
    )
    voc = match_voc(
        pair_det,
        pair_gt,
        pair_iou,
        n_det=2,
        n_gt=2,
        iou_thresholds=np.array([0.5]),
        gt_is_ignored=none,
        det_is_out_of_range=none,
    )
    assert coco.match_det.tolist() == [0, 1]
    assert coco.match_gt.tolist() == [0, 1]
    assert coco.det_is_tp.tolist() == [[True, True]]
    assert voc.match_det.tolist() == [0, 1]
    assert voc.match_gt.tolist() == [0, 0]
    assert voc.det_is_tp.tolist() == [[True, False]]


def test_rank_in_group():
    assert rank_in_group(np.array([1, 1, 1, 4, 9, 9])).tolist() == [0, 1, 2, 0, 0, 1]
    assert rank_in_group(np.array([], np.int64)).tolist() == []
