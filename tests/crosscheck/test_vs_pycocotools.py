"""deteval against pycocotools' COCOeval and the slow reference, on generated datasets.

Three oracles meet here:

* pycocotools 2.0.x ``COCOeval`` (bbox): the definition of ``coco-pycocotools``;
* ``tests/reference/slow_coco.py``: a plain re-implementation, first checked bit for bit
  against pycocotools on every dataset (so it can be trusted), then used as the reference
  for deteval's default ``coco`` protocol, where pycocotools' two bugs are fixed;
* deteval itself.

What "equal" means (README, "COCO parity"): the 12 summary stats exactly (``==``, NaN in
deteval where pycocotools has -1) and the full precision / recall / scores arrays within
one float step.

Layout follows detectron2's COCO evaluation tests: many generated datasets, plus a table of
named experiments (empty detections, crowd only, custom thresholds, max_dets ...).
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import pytest

import deteval
from tests.crosscheck.compare import assert_matches, assert_same_reference
from tests.crosscheck.generate import generate
from tests.reference.run_pycocotools import run_pycocotools
from tests.reference.slow_coco import COCO_AREA_RANGES, evaluate_slow

# Generated data has classes without ground truth and degenerate boxes: the API's
# UndefinedMetricWarning / InputWarning are incidental here (tests/unit/test_api.py checks them).
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

PARITY = "coco-pycocotools"
FIXED = "coco"

# name -> generate() keyword arguments. Mostly small datasets (the nasty cases are dense in
# them), some medium, a few at the generator's maximum size (300 images, 30 classes).
DATASETS = {}
for _seed in range(0, 300):
    DATASETS[f"small-{_seed}"] = dict(seed=_seed)
for _seed in range(1000, 1030):
    DATASETS[f"medium-{_seed}"] = dict(seed=_seed, max_images=150, max_classes=30)
for _seed in range(2000, 2006):
    DATASETS[f"large-{_seed}"] = dict(seed=_seed, n_images=300, n_classes=30, force_many_dets=True)
for _seed in range(2100, 2110):
    DATASETS[f"many-dets-{_seed}"] = dict(seed=_seed, max_images=5, max_classes=3, force_many_dets=True)
# Annotation id 0 and explicit ``ignore`` fields: pycocotools' two bugs show here.
BUGGY_DATASETS = {
    f"id0-ignore-{s}": dict(seed=s, with_id_zero=True, with_ignore_fields=True) for s in range(3000, 3060)
}
ALL_DATASETS = {**DATASETS, **BUGGY_DATASETS}


@functools.cache
def dataset(name):
    return generate(**ALL_DATASETS[name])


@functools.cache
def pycocotools_result(name):
    gt, dt = dataset(name)
    return run_pycocotools(gt, dt)


@functools.cache
def slow_result(name, mode):
    gt, dt = dataset(name)
    if mode == "parity":
        return evaluate_slow(gt, dt, gt_ignore_field="iscrowd", gt_id_zero="unmatchable")
    return evaluate_slow(gt, dt, gt_ignore_field="honour", gt_id_zero="matchable")


# --------------------------------------------------------------------------------------
# Generated datasets
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ALL_DATASETS))
def test_slow_reference_equals_pycocotools(name):
    """The oracle first: the slow twin is bit-identical to pycocotools (parity switches)."""
    assert_same_reference(slow_result(name, "parity"), pycocotools_result(name), name)


@pytest.mark.parametrize("name", list(ALL_DATASETS))
def test_parity_protocol_equals_pycocotools(name):
    gt, dt = dataset(name)
    result = deteval.evaluate(gt, dt, protocol=PARITY)
    assert_matches(result, pycocotools_result(name), f"{name} ({PARITY} vs pycocotools)")


@pytest.mark.parametrize("name", list(ALL_DATASETS))
def test_default_protocol_equals_slow_reference_fixed_mode(name):
    gt, dt = dataset(name)
    result = deteval.evaluate(gt, dt, protocol=FIXED)
    assert_matches(result, slow_result(name, "fixed"), f"{name} ({FIXED} vs slow reference)")


def test_category_axis_is_sorted_category_ids():
    gt, dt = dataset("small-3")
    result = deteval.evaluate(gt, dt, protocol=PARITY)
    assert tuple(result.category_ids) == tuple(sorted(c["id"] for c in gt["categories"]))


# --------------------------------------------------------------------------------------
# pycocotools' two bugs: parity mode reproduces them, the default mode fixes them
# --------------------------------------------------------------------------------------


def _same(a, b):
    return all(
        np.array_equal(getattr(a, f), getattr(b, f)) for f in ("precision", "recall", "scores", "stats")
    )


def test_generated_buggy_datasets_exercise_both_bugs():
    """On the id-0 / ignore-field datasets each bug alone changes some results.

    And pycocotools differs from the fixed evaluation on those datasets only.
    """
    ignore_bug_matters = id_zero_bug_matters = pycocotools_differs = 0
    for name in BUGGY_DATASETS:
        gt, dt = dataset(name)
        fixed = slow_result(name, "fixed")
        only_ignore_bug = evaluate_slow(gt, dt, gt_ignore_field="iscrowd", gt_id_zero="matchable")
        only_id_zero_bug = evaluate_slow(gt, dt, gt_ignore_field="honour", gt_id_zero="unmatchable")
        ignore_bug_matters += not _same(only_ignore_bug, fixed)
        id_zero_bug_matters += not _same(only_id_zero_bug, fixed)
        pycocotools_differs += not _same(pycocotools_result(name), fixed)
        # Without ignore fields and id 0, the two modes cannot differ.
        plain_gt = copy.deepcopy(gt)
        for ann in plain_gt["annotations"]:
            ann.pop("ignore", None)
            if ann["id"] == 0:
                ann["id"] = 10**8
        assert _same(
            evaluate_slow(plain_gt, dt, gt_ignore_field="iscrowd", gt_id_zero="unmatchable"),
            evaluate_slow(plain_gt, dt, gt_ignore_field="honour", gt_id_zero="matchable"),
        ), name
    assert ignore_bug_matters >= 10
    assert id_zero_bug_matters >= 10
    assert pycocotools_differs >= 10


def _one_image(annotations, detections, categories=(1,)):
    gt = {
        "images": [{"id": 7, "width": 200, "height": 200, "file_name": "7.jpg"}],
        "categories": [{"id": c, "name": f"c{c}"} for c in categories],
        "annotations": annotations,
    }
    return gt, detections


def _box_ann(ann_id, box, **extra):
    return {
        "id": ann_id,
        "image_id": 7,
        "category_id": 1,
        "bbox": box,
        "area": box[2] * box[3],
        "iscrowd": 0,
        **extra,
    }


def _det(box, score):
    return {"image_id": 7, "category_id": 1, "bbox": box, "score": score}


def test_annotation_id_zero_hand_derived():
    """One GT with id 0 and its exact copy as detection.

    pycocotools records the match as ``dtm = gt['id'] = 0``, i.e. "unmatched": the detection
    is a false positive and the GT is consumed, so recall 0 and AP 0. Fixed: one TP, precision
    1 / (1 + eps) = 0.9999999999999998 at every recall threshold.
    """
    gt, dt = _one_image([_box_ann(0, [10, 10, 50, 50])], [_det([10, 10, 50, 50], 0.9)])
    expected_pr = 1 / (1 + np.spacing(1))
    assert expected_pr == 0.9999999999999998

    ref = run_pycocotools(gt, dt)
    assert ref.stats[0] == 0.0
    assert ref.stats[8] == 0.0
    assert np.all(ref.precision[:, :, 0, 0, 2] == 0.0)

    parity = deteval.evaluate(gt, dt, protocol=PARITY)
    assert_matches(parity, ref, "id 0, parity")
    assert parity.metrics["AP"] == 0.0

    fixed = deteval.evaluate(gt, dt, protocol=FIXED)
    assert_matches(
        fixed, evaluate_slow(gt, dt, gt_ignore_field="honour", gt_id_zero="matchable"), "id 0, fixed"
    )
    assert np.all(fixed.precision[:, :, 0, 0, 2] == expected_pr)
    assert fixed.metrics["AR100"] == 1.0
    assert fixed.metrics["AP"] == pytest.approx(1.0, abs=1e-15)


def test_annotation_id_zero_matched_detection_outside_area_range_is_ignored():
    """An "unmatched" (id-0 GT) detection whose own area is out of range: pycocotools ignores it.

    It is not a false positive there; the GT is small, the detection medium.
    """
    gt, dt = _one_image(
        [_box_ann(0, [0, 0, 30, 30]), _box_ann(5, [100, 100, 20, 20])],
        [_det([0, 0, 33, 33], 0.9), _det([100, 100, 20, 20], 0.8)],
    )
    # IoU(det0, gt0) = 900 / 1089 = 0.826..: matched at thresholds 0.5 .. 0.8
    ref = run_pycocotools(gt, dt)
    small = 1
    assert ref.recall[0, 0, small, 2] == 0.5  # gt0 consumed without a TP; gt5 found
    # det0 (area 1089) is outside "small": ignored (not a FP), so precision at recall 0.5 is
    # 1 / (1 + eps) after the envelope.
    assert np.all(ref.precision[0, :51, 0, small, 2] == 1 / (1 + np.spacing(1)))
    assert_matches(deteval.evaluate(gt, dt, protocol=PARITY), ref, "id 0 area, parity")
    fixed = deteval.evaluate(gt, dt, protocol=FIXED)
    assert fixed.recall[0, 0, small, 2] == 1.0


def test_ignore_field_hand_derived():
    """GT A has ``ignore: 1`` (not crowd) and no detection; GT B is found.

    pycocotools overwrites ``ignore`` with ``iscrowd`` (0): two positives, recall 0.5 and
    AP50 = 51 / 101 (precision 1 at recall thresholds 0 .. 0.5). Fixed: A is ignored, one
    positive, recall 1.
    """
    gt, dt = _one_image(
        [_box_ann(1, [0, 0, 40, 40], ignore=1), _box_ann(2, [100, 100, 40, 40])],
        [_det([100, 100, 40, 40], 0.9)],
    )
    ref = run_pycocotools(gt, dt)
    assert ref.recall[0, 0, 0, 2] == 0.5
    parity = deteval.evaluate(gt, dt, protocol=PARITY)
    assert_matches(parity, ref, "ignore field, parity")
    assert parity.metrics["AR100"] == 0.5

    fixed = deteval.evaluate(gt, dt, protocol=FIXED)
    slow_fixed = evaluate_slow(gt, dt, gt_ignore_field="honour", gt_id_zero="matchable")
    assert_matches(fixed, slow_fixed, "ignore field, fixed")
    assert fixed.metrics["AR100"] == 1.0
    # With the flag honoured, a detection on A is ignored (neither TP nor FP).
    gt2, dt2 = _one_image(gt["annotations"], dt + [_det([0, 0, 40, 40], 0.95)])
    fixed2 = deteval.evaluate(gt2, dt2, protocol=FIXED)
    assert fixed2.metrics["AR100"] == 1.0
    assert np.all(fixed2.precision[:, :, 0, 0, 2] == 1 / (1 + np.spacing(1)))


def test_known_answers_matching_rules_disagree():
    """docs/known-answers.md section 2: COCO matching gives d1 -> A and d2 -> B, both TP at 0.5."""
    gt, dt = _one_image(
        [_box_ann(1, [0, 0, 100, 100]), _box_ann(2, [40, 0, 100, 100])],
        [_det([0, 0, 100, 100], 0.9), _det([15, 0, 100, 100], 0.8)],
    )
    ref = run_pycocotools(gt, dt)
    result = deteval.evaluate(gt, dt, protocol=PARITY)
    assert_matches(result, ref, "known answers 2")
    assert result.recall[0, 0, 0, 2] == 1.0  # both GTs found at IoU 0.5
    # Two TPs: precision 1/(1+eps) then 2/(2+eps) == 1.0; the envelope makes every point 1.0.
    assert np.all(result.precision[0, :, 0, 0, 2] == 1.0)
    assert result.metrics["AP50"] == 1.0


# --------------------------------------------------------------------------------------
# Named experiments (as detectron2's test_coco_evaluation.py)
# --------------------------------------------------------------------------------------


def _crowd_only():
    gt, dt = generate(41, max_images=6, max_classes=3)
    gt = copy.deepcopy(gt)
    for ann in gt["annotations"]:
        ann["iscrowd"] = 1
    return gt, dt


def _no_gt_objects():
    gt, dt = generate(42, max_images=6, max_classes=3)
    return {**gt, "annotations": []}, dt


def _one_image_only():
    gt, dt = generate(43, n_images=1, n_classes=4, force_many_dets=True)
    return gt, dt


def _ties_everywhere():
    gt, dt = generate(44, max_images=30, max_classes=4)
    dt = [{**d, "score": 0.5} for d in dt]
    return gt, dt


def _empty_detections():
    gt, _ = generate(45, max_images=10, max_classes=4)
    return gt, []


def _integer_scores_and_boxes():
    gt, dt = generate(46, max_images=10, max_classes=3)
    dt = [{**d, "bbox": [round(v) for v in d["bbox"]], "score": int(d["score"] * 4)} for d in dt]
    return gt, dt


EXPERIMENTS = {
    # name: (dataset factory, protocol fields to replace)
    "default": (lambda: generate(40, max_images=25, max_classes=5), {}),
    "empty_detections": (_empty_detections, {}),
    "crowd_only": (_crowd_only, {}),
    "no_gt_objects": (_no_gt_objects, {}),
    "one_image": (_one_image_only, {}),
    "ties_everywhere": (_ties_everywhere, {}),
    "integer_scores_and_boxes": (_integer_scores_and_boxes, {}),
    "custom_iou_thresholds": (
        lambda: generate(47, max_images=25, max_classes=5),
        {"iou_thresholds": (0.3, 0.5, 0.6, 0.9, 1.0)},
    ),
    "single_iou_threshold": (lambda: generate(48, max_images=25, max_classes=5), {"iou_thresholds": (0.75,)}),
    "max_dets_1_10_300": (
        lambda: generate(49, max_images=10, max_classes=4, force_many_dets=True),
        {"max_dets": (1, 10, 300)},
    ),
    "max_dets_1_5_20": (
        lambda: generate(50, max_images=25, max_classes=4, force_many_dets=True),
        {"max_dets": (1, 5, 20)},
    ),
    "max_dets_2_100_1000": (
        lambda: generate(51, max_images=10, max_classes=3, force_many_dets=True),
        {"max_dets": (2, 100, 1000)},
    ),
    "custom_area_ranges": (
        lambda: generate(52, max_images=25, max_classes=4),
        {
            "area_ranges": (
                ("all", 0.0, 1e10),
                ("small", 0.0, 400.0),
                ("medium", 400.0, 5000.0),
                ("large", 5000.0, 1e10),
            )
        },
    ),
    "area_ranges_without_all": (
        lambda: generate(53, max_images=25, max_classes=4),
        {"area_ranges": (("small", 0.0, 1024.0), ("medium", 1024.0, 9216.0), ("large", 9216.0, 1e10))},
    ),
}


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_experiment(name):
    factory, changes = EXPERIMENTS[name]
    gt, dt = factory()
    protocol = deteval.get_protocol(PARITY).replace(**changes)
    kwargs = {}
    if "iou_thresholds" in changes:
        kwargs["iou_thresholds"] = changes["iou_thresholds"]
    if "max_dets" in changes:
        kwargs["max_dets"] = changes["max_dets"]
    if "area_ranges" in changes:
        kwargs["area_ranges"] = changes["area_ranges"]
    ref = run_pycocotools(gt, dt, **kwargs)
    slow = evaluate_slow(gt, dt, **kwargs)
    assert_same_reference(slow, ref, f"experiment {name}: slow reference vs pycocotools")
    result = deteval.evaluate(gt, dt, protocol=protocol)
    assert_matches(
        result, ref, f"experiment {name}", max_dets=tuple(sorted(changes.get("max_dets", (1, 10, 100))))
    )


def test_experiment_max_dets_without_100_has_undefined_ap():
    """Pycocotools' summarize() hard-codes maxDets=100 for stats[0]: -1 with (1, 10, 300)."""
    gt, dt = EXPERIMENTS["max_dets_1_10_300"][0]()
    ref = run_pycocotools(gt, dt, max_dets=(1, 10, 300))
    assert ref.stats[0] == -1
    protocol = deteval.get_protocol(PARITY).replace(max_dets=(1, 10, 300))
    assert np.isnan(deteval.evaluate(gt, dt, protocol=protocol).metrics["AP"])


def test_experiment_empty_detections_scores_zero():
    gt, dt = _empty_detections()
    result = deteval.evaluate(gt, dt, protocol=PARITY)
    defined = ~np.isnan(result.precision)
    assert defined.any()
    assert np.all(result.precision[defined] == 0.0)
    assert result.metrics["AP"] == 0.0


def test_experiment_crowd_only_is_undefined():
    gt, dt = _crowd_only()
    result = deteval.evaluate(gt, dt, protocol=PARITY)
    assert np.all(np.isnan(result.precision))
    assert all(np.isnan(v) for v in result.metrics.values())


def test_default_area_ranges_are_pycocotools():
    protocol = deteval.get_protocol(PARITY)
    assert [(n, float(lo), float(hi)) for n, lo, hi in protocol.area_ranges] == [
        (n, float(lo), float(hi)) for n, lo, hi in COCO_AREA_RANGES
    ]


# --------------------------------------------------------------------------------------
# Inputs are not mutated (pycocotools mutates both)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["small-0", "small-7", "many-dets-2100", "id0-ignore-3001"])
@pytest.mark.parametrize("protocol", [FIXED, PARITY])
def test_inputs_not_mutated(name, protocol):
    gt, dt = dataset(name)
    gt, dt = copy.deepcopy(gt), copy.deepcopy(dt)
    gt_before, dt_before = copy.deepcopy(gt), copy.deepcopy(dt)
    deteval.evaluate(gt, dt, protocol=protocol)
    assert gt == gt_before
    assert dt == dt_before
    # Same objects' types too (e.g. int boxes not turned into floats in place).
    assert [type(v) for a in gt["annotations"] for v in a["bbox"]] == [
        type(v) for a in gt_before["annotations"] for v in a["bbox"]
    ]
