"""deteval's ``coco-boundary`` (``iou_type: boundary``) against faster-coco-eval's ``iouType="boundary"``.

faster-coco-eval 1.8 scores a pair by ``min(mask IoU, Boundary IoU)`` as boundary-iou-api does
(crowd ground truth: mask IoA alone); its boundaries equal boundary-iou-api's OpenCV erosion on
images at least ``2 d + 1`` pixels on each side (see docs/protocols.md). The twelve stats must be
equal (``==``) and the precision / recall / scores arrays within one float step, on generated
masks with holes, thin parts (1-3 px), masks touching the image border, crowd regions, and on
the polygon datasets of ``generate_segm.py``.
"""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
import pytest

import deteval
from deteval.geometry.masks import pair_mask_iou, prepare_masks
from tests.crosscheck.generate_segm import generate_segm

faster_coco_eval = pytest.importorskip("faster_coco_eval")
pytest.importorskip("cv2")  # faster-coco-eval's boundary mode imports OpenCV

from tests.support.boundary import generate_boundary  # noqa: E402
from tests.support.references import load_results  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")


def run_faster_coco_eval(gt: dict, dt: list):
    from faster_coco_eval import COCO, COCOeval_faster

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(copy.deepcopy(gt))
        coco_dt = load_results(coco_gt, dt)
        evaluator = COCOeval_faster(coco_gt, coco_dt, "boundary")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator


def deteval_ious(gt: dict, dt: list, image_id: int, category_id: int) -> np.ndarray:
    """Deteval's pair values of one (image, class), rows as faster-coco-eval orders them."""
    protocol = deteval.get_protocol("coco-boundary")
    g = deteval.load_ground_truth(gt)
    d = deteval.load_detections(dt, g)
    prepared = prepare_masks(g, d, protocol)
    gt_rows = np.flatnonzero((g.image_id[g.image] == image_id) & (g.category_id[g.category] == category_id))
    det_rows = np.flatnonzero((g.image_id[d.image] == image_id) & (g.category_id[d.category] == category_id))
    det_rows = det_rows[np.argsort(-d.score[det_rows], kind="stable")][:100]
    pairs_gt = np.tile(gt_rows, len(det_rows))
    pairs_det = np.repeat(det_rows, len(gt_rows))
    values = pair_mask_iou(prepared, pairs_gt, pairs_det, g.is_crowd[pairs_gt], protocol)
    return values.reshape(len(det_rows), len(gt_rows))


def check_equal(name: str, gt: dict, dt: list) -> None:
    ref = run_faster_coco_eval(gt, dt)
    # The boundary arithmetic: every (detection, ground truth) value equal.
    n_checked = 0
    for (image_id, category_id), expected in ref.ious.items():
        expected = np.asarray(expected, dtype=np.float64)
        if expected.size:
            actual = deteval_ious(gt, dt, image_id, category_id)
            assert np.array_equal(actual, expected), f"{name}: IoUs of image {image_id}, class {category_id}"
            n_checked += expected.size
    assert n_checked > 0 or not dt
    # The numbers: faster-coco-eval's C++ accumulation is not pycocotools' float for float
    # (precision 1.0 where pycocotools' tp / (tp + fp + eps) gives 0.9999999999999998), so the
    # stats and arrays agree to 1e-12 (deteval follows pycocotools there, checked `==` elsewhere).
    result = deteval.evaluate(gt, dt, "coco-boundary")
    stats = list(result.metrics.values())
    assert len(stats) == 12
    for stat, value, expected in zip(result.metrics, stats, ref.stats[:12], strict=True):
        if expected == -1:
            assert np.isnan(value), f"{name}: {stat}"
        else:
            assert value == pytest.approx(expected, abs=1e-12), f"{name}: {stat}"
    for key in ("precision", "recall"):
        expected = np.where(ref.eval[key] == -1, np.nan, ref.eval[key])
        np.testing.assert_allclose(
            getattr(result, key), expected, rtol=0, atol=1e-12, err_msg=f"{name}: {key}"
        )


@pytest.mark.parametrize("seed", range(12))
def test_boundary_equal_faster_coco_eval_on_masks(seed):
    gt, dt = generate_boundary(seed)
    check_equal(f"masks-{seed}", gt, dt)


@pytest.mark.parametrize("seed", range(8))
def test_boundary_equal_faster_coco_eval_on_polygons(seed):
    gt, dt = generate_segm(seed, max_images=4)
    check_equal(f"segm-{seed}", gt, dt)


def test_boundary_ap_is_below_mask_ap():
    """min(mask IoU, boundary IoU) <= mask IoU: every AP of coco-boundary is <= the mask AP."""
    gt, dt = generate_boundary(3)
    boundary = deteval.evaluate(gt, dt, "coco-boundary")
    masks = deteval.evaluate(gt, dt, deteval.get_protocol("coco-boundary").replace(iou_type="segm"))
    assert boundary.metrics["AP"] < masks.metrics["AP"]
    assert np.all(np.nan_to_num(boundary.recall, nan=0) <= np.nan_to_num(masks.recall, nan=0))


def test_boundary_with_no_detections_equals_faster_coco_eval():
    gt, _ = generate_boundary(0)
    check_equal("masks-0 no detections", gt, [])
