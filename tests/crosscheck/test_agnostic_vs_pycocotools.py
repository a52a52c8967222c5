"""Class-agnostic pooling against pycocotools' ``params.useCats = 0`` on generated datasets.

``evaluate(*pool_categories(gt, dt))`` must give pycocotools' 12 stats exactly and its
precision / recall / scores arrays within one float step (the one category axis entry is
pycocotools' ``catIds = [-1]``).
"""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

import deteval
from deteval.io import load_detections, load_ground_truth
from deteval.pooling import pool_categories
from tests.crosscheck.compare import assert_matches
from tests.crosscheck.generate import generate
from tests.reference.run_pycocotools import PycocoResult

DATASETS = {f"small-{s}": dict(seed=s) for s in range(0, 60)}
DATASETS.update({f"medium-{s}": dict(seed=s, max_images=80, max_classes=12) for s in range(1000, 1008)})
DATASETS.update(
    {
        f"many-dets-{s}": dict(seed=s, max_images=5, max_classes=3, force_many_dets=True)
        for s in range(2100, 2106)
    }
)


def run_pycocotools_agnostic(gt, dt):
    gt, dt = copy.deepcopy(gt), copy.deepcopy(dt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        if dt:
            coco_dt = coco_gt.loadRes(dt)
        else:
            coco_dt = COCO()
            coco_dt.dataset = {
                "images": list(gt["images"]),
                "categories": gt["categories"],
                "annotations": [],
            }
            coco_dt.createIndex()
        ev = COCOeval(coco_gt, coco_dt, iouType="bbox")
        ev.params.useCats = 0
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return PycocoResult(
        ev.eval["precision"], ev.eval["recall"], ev.eval["scores"], np.asarray(ev.stats, dtype=np.float64)
    )


@pytest.mark.parametrize("name", list(DATASETS))
def test_pooled_equals_pycocotools_use_cats_0(name):
    gt_dict, dt_list = generate(**DATASETS[name])
    gt = load_ground_truth(gt_dict)
    dt = load_detections(dt_list, gt)
    pooled_gt, pooled_dt = pool_categories(gt, dt)
    result = deteval.evaluate(pooled_gt, pooled_dt, protocol="coco-pycocotools")
    assert_matches(result, run_pycocotools_agnostic(gt_dict, dt_list), f"{name} (useCats=0)")
    assert result.category_ids == (-1,)


def test_pooling_does_not_modify_inputs_and_keeps_counts():
    gt_dict, dt_list = generate(3)
    gt = load_ground_truth(gt_dict)
    dt = load_detections(dt_list, gt)
    before = (gt.category.copy(), dt.category.copy(), dt.order.copy())
    pooled_gt, pooled_dt = pool_categories(gt, dt)
    assert np.array_equal(gt.category, before[0])
    assert np.array_equal(dt.category, before[1])
    assert np.array_equal(dt.order, before[2])
    assert len(pooled_gt) == len(gt)
    assert len(pooled_dt) == len(dt)
    assert sorted(pooled_gt.annotation_id.tolist()) == sorted(gt.annotation_id.tolist())
    assert set(pooled_gt.category.tolist()) <= {0}
    assert set(pooled_dt.category.tolist()) <= {0}


def test_pooling_changes_the_number_when_classes_are_confused():
    """A right box with the wrong class: per-class AP 0, class-agnostic AP 1."""
    gt_dict = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "area": 2500, "iscrowd": 0}
        ],
    }
    dt_list = [{"image_id": 1, "category_id": 2, "bbox": [0, 0, 50, 50], "score": 0.9}]
    gt = load_ground_truth(gt_dict)
    dt = load_detections(dt_list, gt)
    assert deteval.evaluate(gt, dt, protocol="coco").metrics["AP"] == 0.0
    pooled = deteval.evaluate(*pool_categories(gt, dt), protocol="coco")
    assert pooled.metrics["AP"] == pytest.approx(1.0)
