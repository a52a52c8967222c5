"""deteval.confusion: equal to its slow twin, the invariants, and hand-derived cases."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.confusion import confusion_matrix, greedy_pairs
from deteval.errors import ConfigError
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import get_protocol
from tests.reference.slow_decomposition import confused, confusion_slow


def _load(gt_dict, dt_list):
    gt = load_ground_truth(gt_dict)
    return gt, load_detections(dt_list, gt)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize(("t", "confidence"), [(0.5, 0.0), (0.3, 0.5), (0.75, 0.2)])
def test_equals_slow_twin(seed, t, confidence):
    gt_dict, dt_list = confused(seed, max_images=15, max_classes=5)
    gt, dt = _load(gt_dict, dt_list)
    result = confusion_matrix(gt, dt, "coco", iou_threshold=t, confidence=confidence)
    assert result.matrix.tolist() == confusion_slow(gt_dict, dt_list, t, confidence).tolist()


@pytest.mark.parametrize("seed", range(40))
def test_invariants(seed):
    gt_dict, dt_list = confused(seed, max_images=15, max_classes=5)
    gt, dt = _load(gt_dict, dt_list)
    result = confusion_matrix(gt, dt, "coco", iou_threshold=0.5, confidence=0.3)
    m = result.matrix
    n = gt.n_classes
    counted = ~gt.is_crowd
    assert m[:n].sum(axis=1).tolist() == np.bincount(gt.category[counted], minlength=n).tolist()
    kept = dt.score >= 0.3
    assert m[:, :n].sum() == kept.sum() - result.n_dropped
    assert m[n, n] == 0
    assert result.labels[-1] == "background"
    assert len(result.labels) == n + 1


def test_greedy_pairs_equals_sequential_rule():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n_det, n_gt = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        n = int(rng.integers(0, 20))
        pd_, pg = rng.integers(0, n_det, n), rng.integers(0, n_gt, n)
        taken_d, taken_g, expected = set(), set(), []
        for i, (d, g) in enumerate(zip(pd_.tolist(), pg.tolist())):
            if d not in taken_d and g not in taken_g:
                taken_d.add(d)
                taken_g.add(g)
                expected.append(i)
        assert greedy_pairs(pd_, pg, n_det, n_gt).tolist() == expected


def test_hand_derived():
    """Cat GT and dog GT, with four detections.

    A 'dog' box on the cat, a 'dog' box on the dog (lower IoU), a cat box nowhere, a dog box
    inside a dog crowd region (dropped).
    """
    gt_dict = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
            {"id": 2, "image_id": 1, "category_id": 2, "bbox": [20, 0, 10, 10], "area": 100, "iscrowd": 0},
            {
                "id": 3,
                "image_id": 1,
                "category_id": 2,
                "bbox": [100, 100, 50, 50],
                "area": 2500,
                "iscrowd": 1,
            },
        ],
    }
    dt_list = [
        {"image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 1, "category_id": 2, "bbox": [20, 0, 10, 8], "score": 0.8},
        {"image_id": 1, "category_id": 1, "bbox": [60, 60, 5, 5], "score": 0.7},
        {"image_id": 1, "category_id": 2, "bbox": [110, 110, 5, 5], "score": 0.6},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.1},
    ]
    result = confusion_matrix(*_load(gt_dict, dt_list), "coco", iou_threshold=0.5, confidence=0.5)
    # rows: cat, dog, background; columns: cat, dog, background
    assert result.matrix.tolist() == [[0, 1, 0], [0, 1, 0], [1, 0, 0]]
    assert result.n_dropped == 1
    assert result.to_dict() == {
        "iou_threshold": 0.5,
        "confidence": 0.5,
        "labels": ["cat", "dog", "background"],
        "matrix": [[0, 1, 0], [0, 1, 0], [1, 0, 0]],
    }
    at_zero = confusion_matrix(*_load(gt_dict, dt_list), "coco", iou_threshold=0.5, confidence=0.0)
    # The late cat box on the cat comes after the dog box (IoU tie, lower score): background.
    assert at_zero.matrix.tolist() == [[0, 1, 0], [0, 1, 0], [2, 0, 0]]


def test_segm_refused():
    gt, dt = _load(*confused(2))
    with pytest.raises(ConfigError, match="iou_type 'segm' is not available"):
        confusion_matrix(gt, dt, get_protocol("coco").replace(iou_type="segm"))
