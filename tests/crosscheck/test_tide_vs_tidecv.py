"""deteval.tide (mode "tidecv") against the tidecv package, on generated datasets and fixtures/coco.

tidecv's ``Data`` objects are built in memory the way its COCO loaders build them (crowd
annotations become class-specific ignore regions with their box), images registered in
ascending id order (deteval's image order: it decides score ties in tidecv's AP). Every main and
special dAP, the AP and the AP at each COCO threshold must agree to 1e-9 (tidecv reports percent).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from deteval.io import load_detections, load_ground_truth
from deteval.tide import MAIN_ERRORS, TIDE_COCO_THRESHOLDS, tide_errors
from tests.crosscheck.generate import generate
from tests.reference.slow_decomposition import confused

tidecv = pytest.importorskip("tidecv")
from tidecv import TIDE  # noqa: E402
from tidecv.data import Data  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SHORT = {"cls": "Cls", "loc": "Loc", "both": "Both", "dupe": "Dupe", "bkg": "Bkg", "miss": "Miss"}

DATASETS = {f"small-{s}": dict(seed=s) for s in range(0, 80)}
DATASETS.update({f"medium-{s}": dict(seed=s, max_images=60, max_classes=10) for s in range(1000, 1008)})
DATASETS.update(
    {
        f"many-dets-{s}": dict(seed=s, max_images=5, max_classes=3, force_many_dets=True)
        for s in range(2100, 2105)
    }
)


def _tidecv_data(gt_dict, dt_list):
    gt = Data("gt", max_dets=100)
    for image in sorted(gt_dict["images"], key=lambda i: i["id"]):
        gt.add_image(image["id"], image.get("file_name", str(image["id"])))
    for cat in gt_dict["categories"]:
        gt.add_class(cat["id"], cat["name"])
    for ann in gt_dict["annotations"]:
        if ann.get("iscrowd", 0):
            gt.add_ignore_region(ann["image_id"], ann["category_id"], ann["bbox"], None)
        else:
            gt.add_ground_truth(ann["image_id"], ann["category_id"], ann["bbox"], None)
    preds = Data("dt")
    for det in dt_list:
        preds.add_detection(det["image_id"], det["category_id"], det["score"], det["bbox"], None)
    return gt, preds


def run_tidecv(gt_dict, dt_list):
    """(ap, main, special, ap_by_threshold) of tidecv, as fractions."""
    gt, preds = _tidecv_data(gt_dict, dt_list)
    tide = TIDE()
    with contextlib.redirect_stdout(io.StringIO()):
        tide.evaluate_range(gt, preds, mode=TIDE.BOX)
        errors = tide.get_all_errors()
    run = tide.runs["dt"]
    by_threshold = {t: r.ap / 100 for t, r in zip(TIDE_COCO_THRESHOLDS, tide.run_thresholds["dt"])}
    main = {k: errors["main"]["dt"][SHORT[k]] / 100 for k in MAIN_ERRORS}
    special = {
        "false_pos": errors["special"]["dt"]["FalsePos"] / 100,
        "false_neg": errors["special"]["dt"]["FalseNeg"] / 100,
    }
    return run.ap / 100, main, special, by_threshold


def _check(gt_dict, dt_list, what):
    gt = load_ground_truth(gt_dict)
    dt = load_detections(dt_list, gt)
    ours = tide_errors(gt, dt)
    ap, main, special, by_threshold = run_tidecv(gt_dict, dt_list)
    assert ours.ap == pytest.approx(ap, abs=1e-9), f"{what}: ap"
    for k in MAIN_ERRORS:
        assert ours.main[k] == pytest.approx(main[k], abs=1e-9), f"{what}: {k}"
    for k in special:
        assert ours.special[k] == pytest.approx(special[k], abs=1e-9), f"{what}: {k}"
    for t in TIDE_COCO_THRESHOLDS:
        assert ours.ap_by_threshold[t] == pytest.approx(by_threshold[t], abs=1e-9), f"{what}: AP@{t}"
    return ours


CONFUSED = {f"confused-{s}": dict(seed=s, max_images=30, max_classes=6) for s in range(500, 540)}


@pytest.mark.parametrize("name", list(CONFUSED))
def test_tide_equals_tidecv_with_class_confusions(name):
    gt_dict, dt_list = confused(**CONFUSED[name])
    if not gt_dict["annotations"] and not dt_list:
        pytest.skip("tidecv divides by zero classes")
    _check(gt_dict, dt_list, name)


def test_confused_datasets_exercise_every_error_type():
    totals = dict.fromkeys(MAIN_ERRORS, 0)
    for kwargs in CONFUSED.values():
        gt_dict, dt_list = confused(**kwargs)
        gt = load_ground_truth(gt_dict)
        counts = tide_errors(gt, load_detections(dt_list, gt)).counts
        for k in MAIN_ERRORS:
            totals[k] += counts[k]
    assert all(v >= 5 for v in totals.values()), totals


@pytest.mark.parametrize("name", list(DATASETS))
def test_tide_equals_tidecv(name):
    gt_dict, dt_list = generate(**DATASETS[name])
    if not gt_dict["annotations"] and not dt_list:
        pytest.skip("tidecv divides by zero classes")
    _check(gt_dict, dt_list, name)


def test_tide_equals_tidecv_on_fixture_coco():
    gt_dict = json.loads((FIXTURES / "coco" / "gt.json").read_text())
    dt_list = json.loads((FIXTURES / "coco" / "dt.json").read_text())
    ours = _check(gt_dict, dt_list, "fixtures/coco")
    assert np.isfinite(ours.ap)


@pytest.mark.parametrize("seed", range(600, 620))
def test_tide_equals_tidecv_when_most_scores_tie(seed):
    """Scores on a grid of four values: tidecv's order among equal scores (image, then file order) decides."""
    gt_dict, dt_list = confused(seed=seed, max_images=30, max_classes=6)
    for det in dt_list:
        det["score"] = round(det["score"] * 3) / 3
    if not gt_dict["annotations"]:
        pytest.skip("tidecv divides by zero classes")
    _check(gt_dict, dt_list, f"ties-{seed}")
