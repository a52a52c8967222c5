"""deteval's ``crowdpose`` against xtcocotools' ``COCOeval(..., "keypoints_crowd", sigmas, use_area=False)``.

The nine stats must be equal (``==``; NaN where xtcocotools reports -1) and the precision /
recall / scores arrays within one float step, on generated CrowdPose-style datasets
(``generate_crowdpose.py``): crowded images, invisible keypoints, crowd regions, results with
no keypoint score, every crowd-index band.
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

import deteval
from tests.crosscheck.compare import assert_array_within_one_step
from tests.crosscheck.generate_crowdpose import generate_crowdpose
from tests.support.references import load_results

try:
    from xtcocotools.coco import COCO
    from xtcocotools.cocoeval import COCOeval
except (ImportError, ValueError) as exc:  # ValueError: a wheel built against another numpy ABI
    pytest.skip(
        f"xtcocotools cannot be imported ({exc}); .ci/run builds it from source against this numpy",
        allow_module_level=True,
    )

pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning"),
    # xtcocotools' COCOeval.split opens the ground-truth file without closing it.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

STATS = ("AP", "AP50", "AP75", "AR", "AR50", "AR75", "AP(E)", "AP(M)", "AP(H)")
SIGMAS = np.array([0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89, 0.79, 0.79]) / 10.0


def run_xtcocotools(gt: dict, dt: list, path) -> COCOeval:
    path.write_text(json.dumps(gt))  # xtcocotools' split() reads the crowd index from the file
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(str(path))
        coco_dt = load_results(coco_gt, dt)
        evaluator = COCOeval(coco_gt, coco_dt, "keypoints_crowd", SIGMAS, use_area=False)
        evaluator.evaluate()
        evaluator.accumulate()
        precision = evaluator.eval["precision"].copy()
        recall = evaluator.eval["recall"].copy()
        scores = evaluator.eval["scores"].copy()
        evaluator.summarize()  # re-evaluates each crowd band in place
    evaluator.full = {"precision": precision, "recall": recall, "scores": scores}
    return evaluator


@pytest.mark.parametrize("seed", [*range(24), "0 no detections"])
def test_crowdpose_equal_xtcocotools(seed, tmp_path):
    number = int(str(seed).split()[0])
    gt, dt = generate_crowdpose(number, with_bbox=bool(number % 2))
    if str(seed).endswith("no detections"):  # a detector that found nothing still gets its number
        dt = []
    ref = run_xtcocotools(gt, dt, tmp_path / "gt.json")
    result = deteval.evaluate(gt, dt, "crowdpose")
    for stat, expected in zip(STATS, ref.stats, strict=True):
        value = result.metrics[stat]
        if expected == -1:
            assert np.isnan(value), f"seed {seed}: {stat}: deteval {value!r}, xtcocotools -1"
        else:
            assert value == expected, f"seed {seed}: {stat}: deteval {value!r}, xtcocotools {expected!r}"
    for key in ("precision", "recall", "scores"):
        # xtcocotools keeps setKpParams' three area rows; every stat reads "all", the first.
        expected = ref.full[key][..., :1, :]
        assert_array_within_one_step(getattr(result, key), expected, f"seed {seed}: {key}")


def test_generated_data_covers_the_cases():
    """The generator makes what the cross-check claims to test."""
    seen = {"band": set(), "crowd": 0, "dropped": 0, "invisible_only": 0, "over_20": 0}
    for seed in range(24):
        gt, dt = generate_crowdpose(seed)
        for image in gt["images"]:
            c = image["crowdIndex"]
            seen["band"].add("easy" if c < 0.2 else "medium" if c < 0.8 else "hard")
        for ann in gt["annotations"]:
            seen["crowd"] += ann["iscrowd"]
            vis = ann["keypoints"][2::3]
            seen["invisible_only"] += ann["num_keypoints"] == 0 and any(v > 0 for v in vis)
        seen["dropped"] += sum(all(s == 0 for s in d["keypoints"][2::3]) for d in dt)
        per_image = np.bincount([d["image_id"] for d in dt]) if dt else np.zeros(1)
        seen["over_20"] += int((per_image > 20).sum())
    assert seen["band"] == {"easy", "medium", "hard"}
    assert min(seen["crowd"], seen["dropped"], seen["invisible_only"], seen["over_20"]) > 0, seen
