"""deteval's raster mask IoU against pycocotools' ``COCOeval(iouType="segm")``.

``mask_iou: raster`` rasterises with pycocotools.mask at the image size, so under the
``coco-pycocotools`` protocol it must give pycocotools' numbers: the 12 stats exactly and the
precision / recall / scores arrays within one float step (NaN where pycocotools has -1).

The datasets (``generate_segm.py``) carry star, rectangle and triangle polygons from
sub-pixel to large, multi-part masks, crowd regions as uncompressed and compressed RLE,
results as polygons or compressed RLE with a bbox, or compressed RLE without one, and (in
part of them) self-intersecting polygons, which raster mode accepts as pycocotools does.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import pytest

import deteval
from tests.crosscheck.compare import assert_matches
from tests.crosscheck.generate_segm import RESULT_STYLES, generate_segm
from tests.support.segm import run_pycocotools_segm

# Generated data has classes without ground truth and degenerate boxes: the API's
# UndefinedMetricWarning / InputWarning are incidental here (tests/unit/test_api.py checks them).
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

RASTER = deteval.get_protocol("coco-pycocotools").replace(iou_type="segm", mask_iou="raster")

DATASETS = {}
for _seed in range(100):
    DATASETS[f"segm-{_seed}"] = dict(seed=_seed)
for _seed in range(100, 112):
    DATASETS[f"segm-{_seed}-{RESULT_STYLES[_seed % 4]}"] = dict(
        seed=_seed, result_style=RESULT_STYLES[_seed % 4], max_images=25, max_classes=6
    )
for _seed in range(200, 216):
    DATASETS[f"self-intersecting-{_seed}"] = dict(seed=_seed, with_self_intersections=True)


@functools.cache
def dataset(name):
    return generate_segm(**DATASETS[name])


@pytest.mark.parametrize("name", list(DATASETS))
def test_raster_mode_equals_pycocotools(name):
    gt, dt = dataset(name)
    expected = run_pycocotools_segm(gt, dt)
    result = deteval.evaluate(gt, dt, protocol=RASTER)
    assert_matches(result, expected, name)


def test_generated_data_covers_the_cases():
    """The datasets really contain what the module docstring promises."""
    seen = {
        "multi_part": 0,
        "uncompressed_crowd": 0,
        "compressed_crowd": 0,
        "polygon_crowd": 0,
        "dt_polygon": 0,
        "dt_rle": 0,
        "dt_without_bbox": 0,
        "self_intersecting": 0,
    }
    import shapely

    for name in DATASETS:
        gt, dt = dataset(name)
        for ann in gt["annotations"]:
            seg = ann["segmentation"]
            if isinstance(seg, list):
                seen["multi_part"] += len(seg) > 1
                seen["polygon_crowd"] += ann["iscrowd"] == 1
                for part in seg:
                    ring = np.reshape(np.asarray(part, float), (-1, 2))
                    seen["self_intersecting"] += not shapely.is_valid(shapely.Polygon(ring))
            elif isinstance(seg["counts"], list):
                seen["uncompressed_crowd"] += 1
            else:
                seen["compressed_crowd"] += 1
        for rec in dt:
            seen["dt_polygon"] += isinstance(rec["segmentation"], list)
            seen["dt_rle"] += isinstance(rec["segmentation"], dict)
            seen["dt_without_bbox"] += "bbox" not in rec
    assert all(count >= 5 for count in seen.values()), seen


# --------------------------------------------------------------------------------------------
# Named experiments
# --------------------------------------------------------------------------------------------


def _triangle_data(det_segmentation, **det_fields):
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "thing"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "iscrowd": 0,
                "bbox": [10, 10, 50, 50],
                "area": 1225,
                "segmentation": [[10, 10, 60, 10, 10, 60]],
            }
        ],
    }
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": det_segmentation, **det_fields}]
    return gt, dt


@pytest.mark.parametrize("extent", [61.0, 62.5, 65.5, 67.5, 69.5])
def test_known_triangle_threshold_crossings(extent):
    """A grown triangle whose raster IoU falls just below a threshold that the exact IoU passes."""
    det = [[10, 10, extent, 10, 10, extent]]
    gt, dt = _triangle_data(det, bbox=[10, 10, extent - 10, extent - 10])
    assert_matches(
        deteval.evaluate(gt, dt, protocol=RASTER), run_pycocotools_segm(gt, dt), f"triangle to {extent}"
    )


def test_results_without_bbox_take_the_mask_area():
    """No bbox in the first record: pycocotools reads maskUtils.area (here, a small object)."""
    from pycocotools import mask as mask_utils

    rle = mask_utils.merge(mask_utils.frPyObjects([[10, 10, 40, 10, 10, 40]], 100, 100))
    gt, dt = _triangle_data({"size": [100, 100], "counts": rle["counts"].decode()})
    gt["annotations"][0]["segmentation"] = [[10, 10, 40, 10, 10, 40]]
    gt["annotations"][0]["area"] = 435.0
    result = deteval.evaluate(gt, dt, protocol=RASTER)
    assert_matches(result, run_pycocotools_segm(gt, dt), "no bbox")
    assert result.metrics["APs"] > 0.99  # 0.9999999999999998: pycocotools' epsilon


@pytest.mark.parametrize(
    ("thresholds", "max_dets"),
    [((0.3, 0.5, 0.7), (1, 10, 100)), ((0.5,), (1, 2, 3)), (tuple(np.linspace(0.5, 0.95, 10)), (1, 5, 300))],
)
def test_custom_thresholds_and_max_dets(thresholds, max_dets):
    for seed in (3, 17, 41):
        gt, dt = generate_segm(seed, max_images=8)
        expected = run_pycocotools_segm(gt, dt, iou_thresholds=thresholds, max_dets=max_dets)
        protocol = RASTER.replace(iou_thresholds=tuple(float(t) for t in thresholds), max_dets=max_dets)
        assert_matches(
            deteval.evaluate(gt, dt, protocol=protocol),
            expected,
            f"seed {seed}, thresholds {thresholds}, max_dets {max_dets}",
            max_dets=max_dets,
        )


def test_caller_data_is_not_mutated():
    gt, dt = dataset("segm-1")
    before = copy.deepcopy((gt, dt))
    deteval.evaluate(gt, dt, protocol=RASTER)
    deteval.evaluate(gt, dt, protocol=RASTER.replace(mask_iou="exact"))
    assert (gt, dt) == before
