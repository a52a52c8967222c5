"""Invariances every preset must satisfy, checked scikit-learn style: each check over each preset.

Like scikit-learn's ``check_estimator``, a new preset (a YAML file in ``deteval/protocol/presets``)
is picked up automatically and must pass every check, or be listed in :data:`EXCEPTIONS` with the
reason. Data come from the cross-check generator (crowds, ties, empty images, classes without GT,
boxes on area and IoU boundaries, more than 100 detections per image).

Documented exceptions
---------------------
* Tied scores are broken by file order *within an image* under every preset (pycocotools sorts each
  image's detections stably), so only reordering that keeps each image's own detections in their
  order is an invariance when scores tie.
* ``score_order: file`` presets (the VOC devkit sorts a class's result file stably) also break ties
  *across* images by file order, so even that reordering may change their numbers; with distinct
  scores they are invariant like every other preset.
"""

from __future__ import annotations

import copy
import math
import random
import warnings

import numpy as np
import pytest

from deteval.api import evaluate
from deteval.api.openimages import needs_challenge_rules
from deteval.data import GroundTruth
from deteval.io import load_ground_truth
from deteval.openimages import ImageLevelLabels
from deteval.protocol import get_protocol, preset_names
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_crowdpose import generate_crowdpose
from tests.crosscheck.generate_keypoints import generate_keypoints
from tests.crosscheck.generate_lvis import generate_lvis
from tests.crosscheck.generate_segm import RESULT_STYLES, generate_segm

PRESETS = preset_names()
SEEDS = (3, 11, 29, 47, 58)


def _quiet_evaluate(gt, dt, protocol):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(gt, dt, protocol, **_identity_label_rules(gt, protocol))


def _identity_label_rules(gt, protocol) -> dict:
    """``openimages-challenge``: side files under which its rules change nothing.

    A flat hierarchy (every class a child of the root: no ancestors to expand to) and every class
    verified on every image (no detection dropped), so the preset must pass every check as the
    ``openimages`` preset does; tests/crosscheck/test_openimages_challenge.py checks the rules.
    """
    resolved = get_protocol(protocol) if isinstance(protocol, str) else protocol
    if not needs_challenge_rules(resolved):
        return {}
    values = gt if isinstance(gt, GroundTruth) else load_ground_truth(gt)
    names = values.category_name
    hierarchy = {"LabelName": "__root__", "Subcategory": [{"LabelName": n} for n in names]}
    images = tuple(str(i) for i in values.image_name for _ in names)
    labels = ImageLevelLabels(images, tuple(names) * values.n_images, np.ones(len(images), bool))
    return {"image_labels": labels, "hierarchy": hierarchy}


def _numbers(result) -> dict:
    """Every number a user sees: metrics, per-class AP and the full arrays."""
    return {
        "metrics": result.metrics,
        "per_class": [(c["category_id"], c["AP"], c["num_gt"], c["num_det"]) for c in result.per_class],
        "precision": result.precision,
        "recall": result.recall,
        "ap": result.ap,
    }


def _assert_same(a, b) -> None:
    na, nb = _numbers(a), _numbers(b)
    assert na["metrics"].keys() == nb["metrics"].keys()
    for key in na["metrics"]:
        x, y = na["metrics"][key], nb["metrics"][key]
        assert (x != x and y != y) or x == y, key
    assert len(na["per_class"]) == len(nb["per_class"])
    for (ia, apa, ga, da), (ib, apb, gb, db) in zip(na["per_class"], nb["per_class"]):
        assert (ia, ga, da) == (ib, gb, db)
        assert (apa != apa and apb != apb) or apa == apb
    for key in ("precision", "recall", "ap"):
        np.testing.assert_array_equal(na[key], nb[key])


def _distinct_scores(dt: list, seed: int) -> list:
    rng = random.Random(seed)
    scores = rng.sample(range(1, 10 * len(dt) + 10), len(dt))
    return [{**d, "score": s / (10 * len(dt) + 10)} for d, s in zip(dt, scores)]


def _data(seed: int, *, distinct: bool, protocol: str = "coco"):
    """A generated dataset of the kind the preset scores: boxes, keypoints or LVIS labels."""
    p = get_protocol(protocol)
    if p.summary == "crowdpose":  # CrowdPose's 14 keypoints and per-image crowd index
        gt, dt = generate_crowdpose(seed, n_images=6, with_bbox=True)
    elif p.iou_type == "keypoints":
        gt, dt = generate_keypoints(seed, n_images=6, n_categories=2, with_bbox="all")
    elif p.federated_labels == "lvis":
        gt, dt = generate_lvis(seed, n_images=6, n_categories=6)
    elif p.iou_type == "boundary":  # masks: polygons and RLE, results with a bbox
        gt, dt = generate_segm(seed, max_images=6, result_style=RESULT_STYLES[0])
    elif p.iou_type == "rotated":  # the box data, every box turned: an `obb` per record
        gt, dt = generate(seed, max_images=12, max_classes=4)
        gt, dt = _with_obb(gt, dt, seed)
    else:
        gt, dt = generate(seed, max_images=12, max_classes=4)
    return gt, (_distinct_scores(dt, seed) if distinct else dt)


def _with_obb(gt: dict, dt: list, seed: int) -> tuple:
    """Every record with an ``obb`` (hotcoco's cx, cy, w, h, angle): its box, turned.

    Angles at 0, pi/2 and at random; a detection takes its image's first angle of its class so
    that some overlap their ground truth well.
    """
    rng = random.Random(seed)

    def obb(record: dict, angle: float) -> dict:
        x, y, w, h = record["bbox"]
        return {**record, "obb": [x + w / 2, y + h / 2, w, h, angle]}

    angles = [0.0, math.pi / 2, 0.3, -1.2]
    anns = [obb(a, rng.choice(angles)) for a in gt["annotations"]]
    first = {}
    for a in anns:
        first.setdefault((a["image_id"], a["category_id"]), a["obb"][4])
    dets = [obb(d, first.get((d["image_id"], d["category_id"]), rng.choice(angles))) for d in dt]
    return {**gt, "annotations": anns}, dets


def _with_box_polygon(record: dict) -> dict:
    """The record with its box as its ``segmentation`` polygon."""
    x, y, w, h = record["bbox"]
    return {**record, "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]]}


def _moved(record: dict, dx: float, dy: float) -> dict:
    """A record with its box (and keypoints) moved by whole pixels."""
    out = {**record, "bbox": [record["bbox"][0] + dx, record["bbox"][1] + dy, *record["bbox"][2:]]}
    if record.get("obb"):
        out["obb"] = [record["obb"][0] + dx, record["obb"][1] + dy, *record["obb"][2:]]
    if record.get("keypoints"):
        k = list(record["keypoints"])
        out["keypoints"] = [v + (dx if i % 3 == 0 else dy if i % 3 == 1 else 0) for i, v in enumerate(k)]
    return out


def check_metrics_are_fractions_or_undefined(protocol: str, seed: int) -> None:
    """Every metric is in [0, 1] or undefined (NaN).

    One float step above 1 is allowed: the devkit's 11-point AP adds ``p / 11`` eleven times
    (``ap = ap + p / 11``), and eleven additions of 1/11 give 1.0000000000000002; deteval
    reproduces that sum on purpose.
    """
    result = _quiet_evaluate(*_data(seed, distinct=False, protocol=protocol), protocol)
    values = list(result.metrics.values()) + [c["AP"] for c in result.per_class]
    assert all(v != v or 0.0 <= v <= 1.0 + 2 * np.finfo(float).eps for v in values), values


def check_detection_order(protocol: str, seed: int) -> None:
    gt, dt = _data(seed, distinct=True, protocol=protocol)
    shuffled = list(dt)
    random.Random(seed).shuffle(shuffled)
    _assert_same(_quiet_evaluate(gt, dt, protocol), _quiet_evaluate(gt, shuffled, protocol))


def check_detection_order_with_ties(protocol: str, seed: int) -> None:
    """Interleave the images' detection lists differently, each image's own order kept."""
    gt, dt = _data(seed, distinct=False, protocol=protocol)
    if get_protocol(protocol).score_order == "file":
        pytest.skip("documented exception: score_order 'file' breaks ties by file order (the devkit)")
    per_image: dict = {}
    for d in dt:
        per_image.setdefault(d["image_id"], []).append(d)
    rng = random.Random(seed)
    queues = [list(v) for v in per_image.values()]
    shuffled = []
    while queues:
        queue = rng.choice(queues)
        shuffled.append(queue.pop(0))
        queues = [q for q in queues if q]
    _assert_same(_quiet_evaluate(gt, dt, protocol), _quiet_evaluate(gt, shuffled, protocol))


def check_image_and_category_listing_order(protocol: str, seed: int) -> None:
    gt, dt = _data(seed, distinct=False, protocol=protocol)
    moved = copy.deepcopy(gt)
    random.Random(seed).shuffle(moved["images"])
    random.Random(seed + 1).shuffle(moved["categories"])
    _assert_same(_quiet_evaluate(gt, dt, protocol), _quiet_evaluate(moved, dt, protocol))


def check_monotone_score_transform(protocol: str, seed: int) -> None:
    gt, dt = _data(seed, distinct=False, protocol=protocol)
    cubed = [{**d, "score": d["score"] ** 3 + 1.0} for d in dt]
    _assert_same(_quiet_evaluate(gt, dt, protocol), _quiet_evaluate(gt, cubed, protocol))


def check_integer_translation(protocol: str, seed: int) -> None:
    """Moving every box by whole pixels changes no IoU and no area (both box conventions).

    Not a property of Boundary IoU: its band depends on the image's border (counted as outside)
    and diagonal (the band's width), so boundary protocols are checked by the cross-checks instead;
    nor, bit for bit, of rotated boxes (their corners are rounded where they lie).
    """
    if get_protocol(protocol).iou_type == "boundary":
        pytest.skip("Boundary IoU is not invariant under translation (image border and diagonal)")
    if get_protocol(protocol).iou_type == "rotated":
        # The generated boxes include pairs at IoU exactly 0.5 by design; turned, their corners
        # (centre +- rotated half sides) are rounded differently once moved, so such a pair can
        # fall on either side of the threshold: a float property, not a rule of the protocol.
        pytest.skip("rotated corners are rounded differently when moved (pairs built at IoU exactly 0.5)")
    gt, dt = _data(seed, distinct=False, protocol=protocol)
    moved_gt = {**gt, "annotations": [_moved(a, 64, 128) for a in gt["annotations"]]}
    moved_dt = [_moved(d, 64, 128) for d in dt]
    _assert_same(_quiet_evaluate(gt, dt, protocol), _quiet_evaluate(moved_gt, moved_dt, protocol))


def check_perfect_detections(protocol: str, seed: int) -> None:
    """A copy of every ground-truth box scores AP 1 for each class whose objects can all be found.

    A class is left out when one of its boxes has zero width or height (it can match nothing, by
    every reference) or when two of its boxes in one image are identical (the VOC rule gives both
    copies to the first box, the second copy is a false positive: the devkit's behaviour).
    """
    gt, _ = _data(seed, distinct=False, protocol=protocol)
    # Keypoints: copies of crowd regions and of objects without labelled keypoints are no
    # "perfect" detections (pycocotools scores such a copy by its distance to the box).
    keypoints = get_protocol(protocol).iou_type == "keypoints"
    perfect = [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "bbox": list(a["bbox"]),
            "score": 1.0 - i * 1e-6,
            **({"keypoints": a["keypoints"]} if a.get("keypoints") else {}),
            **({"segmentation": a["segmentation"]} if a.get("segmentation") else {}),
            **({"obb": a["obb"]} if a.get("obb") else {}),
        }
        for i, a in enumerate(gt["annotations"])
        if a["bbox"][2] > 0
        and a["bbox"][3] > 0
        and (not keypoints or (a.get("num_keypoints", 0) > 0 and not a.get("iscrowd")))
    ]
    seen: set = set()
    unfindable = set()
    for a in gt["annotations"]:
        key = (a["image_id"], a["category_id"], tuple(a["bbox"]))
        if a["bbox"][2] <= 0 or a["bbox"][3] <= 0 or key in seen:
            unfindable.add(a["category_id"])
        seen.add(key)
    result = _quiet_evaluate(gt, perfect, protocol)
    # Ultralytics' compute_ap integrates its envelope with trapezoids over 101 points and pads the
    # curve with precision 0 at recall 1, so a perfect class scores 0.995 there: its known value.
    best = 0.995 if get_protocol(protocol).ap_method == "trapezoid_101" else 1.0
    checked = 0
    for row in result.per_class:
        if row["num_gt"] > 0 and row["category_id"] not in unfindable:
            checked += 1
            # pycocotools' precision tp / (tp + fp + eps) stays one float step below 1 for a single TP.
            assert row["AP"] >= best - 4 * np.finfo(float).eps, row
    if not checked:
        pytest.skip("no class of this dataset can be detected perfectly")


def check_no_detections(protocol: str, seed: int) -> None:
    gt, _ = _data(seed, distinct=False, protocol=protocol)
    result = _quiet_evaluate(gt, [], protocol)
    for row in result.per_class:
        assert row["AP"] != row["AP"] or row["AP"] == 0.0


def check_detections_of_a_class_without_gt_change_nothing_else(protocol: str, seed: int) -> None:
    gt, dt = _data(seed, distinct=False, protocol=protocol)
    extra = copy.deepcopy(gt)
    new_id = max(c["id"] for c in gt["categories"]) + 1
    extra["categories"].append({"id": new_id, "name": "newcomer"})
    extra_det = {"image_id": gt["images"][0]["id"], "category_id": new_id, "bbox": [1, 1, 5, 5], "score": 0.5}
    if dt and dt[0].get("keypoints"):
        extra_det["keypoints"] = [2.0, 2.0, 1.0] * (len(dt[0]["keypoints"]) // 3)
    if dt and dt[0].get("segmentation"):
        extra_det = _with_box_polygon(extra_det)
    if dt and dt[0].get("obb"):
        extra_det["obb"] = [3.5, 3.5, 5, 5, 0.4]
    more = [*dt, extra_det]
    base = {c["category_id"]: c["AP"] for c in _quiet_evaluate(gt, dt, protocol).per_class}
    after = {c["category_id"]: c["AP"] for c in _quiet_evaluate(extra, more, protocol).per_class}
    assert after.pop(new_id) != after.get(new_id)  # NaN: no ground truth
    for cid, ap in base.items():
        assert (ap != ap and after[cid] != after[cid]) or ap == after[cid]


CHECKS = [
    check_metrics_are_fractions_or_undefined,
    check_detection_order,
    check_detection_order_with_ties,
    check_image_and_category_listing_order,
    check_monotone_score_transform,
    check_integer_translation,
    check_perfect_detections,
    check_no_detections,
    check_detections_of_a_class_without_gt_change_nothing_else,
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("protocol", PRESETS)
def test_preset_invariance(protocol: str, check, seed: int) -> None:
    check(protocol, seed)
