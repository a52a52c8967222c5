"""The protocol field ``class_agnostic: true`` against pycocotools' ``params.useCats = 0``.

Every COCO-like preset (the ones pycocotools computes: ``coco-pycocotools``, ``coco`` on data
without pycocotools' two bugs, ``coco50`` and the raster ``segm`` protocols) with ``class_agnostic: true`` must give pycocotools' full precision / recall / scores arrays
within one float step (and its stats exactly where ``summarize`` applies), on the generated
nasty datasets of this directory (``coco-keypoints``: see :func:`test_keypoints_pool_like_boxes`,
pycocotools' ``useCats = 0`` finds no keypoint pair). The field goes through every path: here ``deteval.evaluate``
(front door, shards) and ``evaluate.match`` / ``score`` directly.
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
from deteval.evaluate import match, score
from deteval.io import load_detections, load_ground_truth
from deteval.pooling import pool_categories
from tests.crosscheck.compare import assert_array_within_one_step, assert_matches
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_keypoints import generate_keypoints
from tests.crosscheck.generate_segm import generate_segm
from tests.reference.run_pycocotools import PycocoResult
from tests.support.references import load_results

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

BBOX_DATASETS = {f"small-{s}": dict(seed=s) for s in range(0, 24)}
BBOX_DATASETS.update({f"medium-{s}": dict(seed=s, max_images=80, max_classes=12) for s in range(1000, 1003)})
BBOX_DATASETS.update(
    {
        f"many-dets-{s}": dict(seed=s, max_images=5, max_classes=3, force_many_dets=True)
        for s in range(2100, 2103)
    }
)
SEGM_SEEDS = range(0, 10)
KEYPOINT_SEEDS = [s for s in range(0, 20) if s % 5 == 4] + [0, 1, 2]

BBOX_PRESETS = ("coco-pycocotools", "coco", "coco50")


def agnostic(preset: str, **changes) -> deteval.Protocol:
    return deteval.get_protocol(preset).replace(class_agnostic=True, **changes)


def run_pycocotools_agnostic(gt: dict, dt: list, protocol: deteval.Protocol) -> PycocoResult:
    """COCOeval with ``useCats = 0`` and the protocol's thresholds, ranges and caps (deep copies)."""
    gt, dt = copy.deepcopy(gt), copy.deepcopy(dt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        coco_dt = load_results(coco_gt, dt)
        ev = COCOeval(coco_gt, coco_dt, iouType=protocol.iou_type)
        ev.params.useCats = 0
        ev.params.iouThrs = np.array(protocol.iou_thresholds, dtype=np.float64)
        if protocol.iou_type != "keypoints":
            ev.params.areaRng = [[lo, hi] for _, lo, hi in protocol.area_ranges]
            ev.params.areaRngLbl = list(protocol.area_names)
            ev.params.maxDets = list(protocol.max_dets)
        ev.evaluate()
        ev.accumulate()
        stats = None
        if protocol.summary == "pycocotools":
            ev.summarize()
            stats = np.asarray(ev.stats, dtype=np.float64)
    return PycocoResult(ev.eval["precision"], ev.eval["recall"], ev.eval["scores"], stats)


def assert_arrays(result, expected, what):
    assert result.category_ids == (-1,), what
    assert result.category_names == ("all classes",), what
    if result.protocol.iou_type == "keypoints":  # keypoint stats have other names: arrays only
        for field in ("precision", "recall", "scores"):
            assert_array_within_one_step(getattr(result, field), getattr(expected, field), f"{what}: {field}")
    elif expected.stats is None:
        assert_matches(result, PycocoResult(expected.precision, expected.recall, expected.scores, None), what)
    else:
        assert_matches(result, expected, what)


@pytest.mark.parametrize("preset", BBOX_PRESETS)
@pytest.mark.parametrize("name", list(BBOX_DATASETS))
def test_bbox_presets_equal_pycocotools_use_cats_0(preset, name):
    gt, dt = generate(**BBOX_DATASETS[name])
    protocol = agnostic(preset)
    result = deteval.evaluate(gt, dt, protocol)
    assert_arrays(result, run_pycocotools_agnostic(gt, dt, protocol), f"{name} {preset} class_agnostic")


@pytest.mark.parametrize("preset", BBOX_PRESETS)
def test_no_detections_equal_pycocotools_use_cats_0(preset):
    gt, _ = generate(**BBOX_DATASETS[next(iter(BBOX_DATASETS))])
    protocol = agnostic(preset)
    result = deteval.evaluate(gt, [], protocol)
    assert_arrays(
        result, run_pycocotools_agnostic(gt, [], protocol), f"no detections {preset} class_agnostic"
    )


@pytest.mark.parametrize("seed", SEGM_SEEDS)
def test_segm_raster_equals_pycocotools_use_cats_0(seed):
    gt, dt = generate_segm(seed=seed)
    for preset in ("coco-pycocotools", "coco"):
        protocol = agnostic(preset, iou_type="segm", mask_iou="raster")
        result = deteval.evaluate(gt, dt, protocol)
        assert_arrays(result, run_pycocotools_agnostic(gt, dt, protocol), f"segm-{seed} {preset}")


@pytest.mark.parametrize("seed", KEYPOINT_SEEDS)
def test_keypoints_pool_like_boxes(seed):
    """Keypoints pool as boxes do; pycocotools cannot be the oracle.

    Its ``computeOks`` reads ``self._gts[imgId, catId]``
    with ``catId = -1`` under ``useCats = 0`` and so finds no pair at all. deteval pools keypoints
    exactly as boxes; on one-category data pooling changes nothing but the category's name.
    """
    gt_dict, dt_list = generate_keypoints(
        seed, with_bbox=("all", "none")[seed % 2], n_categories=1 + 2 * (seed % 5 == 4)
    )
    gt = load_ground_truth(gt_dict)
    dt = load_detections(dt_list, gt)
    result = deteval.evaluate(gt, dt, agnostic("coco-keypoints"))
    pooled = deteval.evaluate(*pool_categories(gt, dt), deteval.get_protocol("coco-keypoints"))
    per_class = deteval.evaluate(gt, dt, "coco-keypoints")
    assert result.category_ids == (-1,)
    for field in ("precision", "recall", "scores"):
        assert np.array_equal(getattr(result, field), getattr(pooled, field), equal_nan=True), field
        if gt.n_classes == 1:
            assert np.array_equal(getattr(result, field), getattr(per_class, field), equal_nan=True), field


@pytest.mark.parametrize("name", ["small-3", "medium-1000", "many-dets-2100"])
def test_every_path_pools_the_same(name):
    """Front door with and without shards, and match/score on unpooled values: one answer."""
    gt_dict, dt_list = generate(**BBOX_DATASETS[name])
    gt = load_ground_truth(gt_dict)
    dt = load_detections(dt_list, gt)
    protocol = agnostic("coco")
    reference = deteval.evaluate(gt, dt, protocol)
    direct = score(match(gt, dt, protocol), gt, protocol)
    sharded = deteval.evaluate(gt, dt, protocol, workers=2)
    for other in (direct, sharded):
        assert other.category_ids == (-1,)
        for field in ("precision", "recall", "scores"):
            assert np.array_equal(getattr(other, field), getattr(reference, field), equal_nan=True), field
