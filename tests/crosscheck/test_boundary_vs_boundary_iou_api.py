"""deteval's ``coco-boundary`` against boundary-iou-api's arithmetic, on pycocotools' ``COCOeval``.

boundary-iou-api (bowenc0221/boundary-iou-api, commit 8006aa9) is pycocotools' ``COCOeval`` with a
``computeBoundaryIoU``; it is not on the package index, so its two functions are re-typed here
(``mask_to_boundary`` with OpenCV, as in ``boundary_iou/utils/boundary_utils.py``; the
``min(mask IoU, boundary IoU)`` of ``coco_instance_api/cocoeval.py``) into pycocotools 2.0.11's
``COCOeval.computeIoU``. Its ``_prepare`` keeps an explicit ``ignore`` (``ignore or iscrowd``);
the generated data has no ``ignore`` field, so pycocotools' ``_prepare`` gives the same.
The twelve stats must be equal (``==``) and the arrays within one float step.
"""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

import deteval
from tests.crosscheck.compare import assert_array_within_one_step
from tests.crosscheck.generate_segm import generate_segm
from tests.support.boundary import generate_boundary
from tests.support.references import load_results

cv2 = pytest.importorskip("cv2")

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning", "ignore::DeprecationWarning")

DILATION_RATIO = 0.02


def mask_to_boundary(mask: np.ndarray, dilation_ratio: float) -> np.ndarray:
    """boundary-iou-api's ``mask_to_boundary`` (OpenCV erosion of the zero-padded mask)."""
    h, w = mask.shape
    dilation = int(round(dilation_ratio * np.sqrt(h**2 + w**2)))
    dilation = max(dilation, 1)
    padded = cv2.copyMakeBorder(mask, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), dtype=np.uint8), iterations=dilation)[1 : h + 1, 1 : w + 1]
    return mask - eroded


def _boundary(rle: dict) -> dict:
    mask = mask_utils.decode(rle)
    return mask_utils.encode(np.asfortranarray(mask_to_boundary(mask, DILATION_RATIO)))


class BoundaryCOCOeval(COCOeval):
    """pycocotools' COCOeval scoring pairs as boundary-iou-api's ``computeBoundaryIoU``."""

    def computeIoU(self, imgId, catId):  # noqa: N802 (pycocotools' name)
        p = self.params
        gt = self._gts[imgId, catId]
        dt = self._dts[imgId, catId]
        if len(gt) == 0 and len(dt) == 0:
            return []
        inds = np.argsort([-d["score"] for d in dt], kind="mergesort")
        dt = [dt[i] for i in inds][: p.maxDets[-1]]
        iscrowd = [int(o["iscrowd"]) for o in gt]
        mask_ious = np.array(
            mask_utils.iou([d["segmentation"] for d in dt], [g["segmentation"] for g in gt], iscrowd)
        )
        if not len(gt) or not len(dt):
            return mask_ious
        boundary_ious = np.array(
            mask_utils.iou(
                [_boundary(d["segmentation"]) for d in dt],
                [_boundary(g["segmentation"]) for g in gt],
                iscrowd,
            )
        )
        crowd = np.array(iscrowd)
        mask_ious[:, crowd == 0] = np.minimum(mask_ious[:, crowd == 0], boundary_ious[:, crowd == 0])
        return mask_ious


def run_reference(gt: dict, dt: list) -> COCOeval:
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = load_results(coco_gt, dt)
        evaluator = BoundaryCOCOeval(coco_gt, coco_dt, "segm")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator


def check_equal(name: str, gt: dict, dt: list) -> None:
    ref = run_reference(gt, dt)
    result = deteval.evaluate(gt, dt, "coco-boundary")
    for stat, value, expected in zip(result.metrics, result.metrics.values(), ref.stats, strict=True):
        if expected == -1:
            assert np.isnan(value), f"{name}: {stat}"
        else:
            assert value == expected, f"{name}: {stat}: deteval {value!r}, boundary-iou-api {expected!r}"
    for key in ("precision", "recall", "scores"):
        assert_array_within_one_step(getattr(result, key), ref.eval[key], f"{name}: {key}")


@pytest.mark.parametrize("seed", range(12))
def test_boundary_equal_boundary_iou_api_on_masks(seed):
    gt, dt = generate_boundary(seed)
    check_equal(f"masks-{seed}", gt, dt)


@pytest.mark.parametrize("seed", range(8))
def test_boundary_equal_boundary_iou_api_on_polygons(seed):
    gt, dt = generate_segm(seed, max_images=4)
    check_equal(f"segm-{seed}", gt, dt)


def test_small_images_follow_opencv():
    """An image narrower than the band (2 d + 1 > a side): the border still counts as outside."""
    from deteval.geometry.boundary import dilation_pixels, mask_boundary

    rng = np.random.default_rng(5)
    for h, w in ((3, 73), (6, 45), (1, 1), (2, 500)):
        mask = (rng.random((h, w)) < 0.7).astype(np.uint8)
        d = dilation_pixels(h, w, 0.1)
        expected = mask_to_boundary(mask, 0.1).astype(bool)
        assert np.array_equal(mask_boundary(mask.astype(bool), d), expected), (h, w)


def test_boundary_with_no_detections_equals_boundary_iou_api():
    gt, _ = generate_boundary(0)
    check_equal("masks-0 no detections", gt, [])
