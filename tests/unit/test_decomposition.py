"""deteval.decomposition against its slow twin, its factorisation, and hand-derived cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deteval.accumulate import accumulate
from deteval.decomposition import CURVE_NAMES, decompose, interpolated_ap
from deteval.errors import ConfigError
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import get_protocol
from tests.reference.slow_decomposition import confused, decomposition_slow

SEEDS = list(range(40))


def _load(gt_dict, dt_list):
    gt = load_ground_truth(gt_dict)
    return gt, load_detections(dt_list, gt)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("t", [0.5, 0.75])
def test_equals_slow_twin(seed, t):
    gt_dict, dt_list = confused(seed, max_images=12, max_classes=5)
    gt, dt = _load(gt_dict, dt_list)
    result = decompose(gt, dt, "coco", iou_threshold=t)
    for c in result.per_class:
        slow = decomposition_slow(gt_dict, dt_list, c.category_id, t)
        assert c.confidence.tolist() == slow["confidence"], c.category_id
        for name in CURVE_NAMES:
            np.testing.assert_allclose(
                c.curves[name],
                np.array(slow[name], dtype=float),
                rtol=0,
                atol=1e-15,
                equal_nan=True,
                err_msg=f"{seed} {c.category_id} {name}",
            )


@pytest.mark.parametrize("seed", SEEDS)
def test_factorisation_holds_at_every_point(seed):
    gt_dict, dt_list = confused(seed, max_images=12, max_classes=5)
    result = decompose(*_load(gt_dict, dt_list), "coco")
    n_points = 0
    for c in result.per_class:
        cv = c.curves
        for kind in ("precision", "recall"):
            d, loc, cgl = cv[f"{kind}_D"], cv[f"{kind}_L"], cv[f"{kind}_CgL"]
            defined = ~np.isnan(loc) & ~np.isnan(cgl)
            np.testing.assert_allclose(d[defined], (loc * cgl)[defined], rtol=0, atol=1e-12)
            # Where P_L (or R_L) is 0 the conditional is undefined, and the product's value is 0.
            assert np.all(d[np.isnan(cgl) & ~np.isnan(d)] == 0)
            n_points += int(defined.sum())
    if n_points == 0:
        pytest.skip("no localized detection in this dataset")


def test_recall_can_exceed_one_and_is_not_clipped():
    gt_dict = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}
        ],
    }
    dt_list = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 9], "score": 0.8},
    ]
    c = decompose(*_load(gt_dict, dt_list), "coco").per_class[0]
    assert c.curves["recall_D"].tolist() == [1.0, 2.0]
    assert c.curves["precision_D"].tolist() == [1.0, 1.0]
    assert c.ap["AP_D"] == 1.0


def test_hand_derived_confusion_and_localization():
    """Class a: one GT; detections: a (IoU 1, .9), b on the a object (.8), a far away (.7)."""
    gt_dict = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}
        ],
    }
    dt_list = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "score": 0.8},
        {"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.7},
    ]
    result = decompose(*_load(gt_dict, dt_list), "voc2010-continuous")
    a, b = result.per_class
    assert a.confidence.tolist() == [0.9, 0.8, 0.7]
    assert a.curves["precision_L"].tolist() == [1.0, 1.0, 0.5]
    assert a.curves["recall_L"].tolist() == [1.0, 2.0, 2.0]
    assert a.curves["recall_CgL"].tolist() == [1.0, 0.5, 0.5]
    assert b.n_gt == 0
    assert math.isnan(b.ap["AP_D"])
    assert b.curves["precision_CgL"].tolist() == [0.0]  # localized, on an object of class a
    assert result.mean["AP_D"] == a.ap["AP_D"] == 1.0
    doc = result.to_dict()
    assert doc["per_class"][1]["AP_D"] is None
    assert set(doc["per_class"][0]["curve"]) == {"confidence", *CURVE_NAMES}


@pytest.mark.parametrize("preset", ["coco", "voc2007", "voc2010", "voc2007-pyfrcnn"])
@pytest.mark.parametrize("seed", range(30))
def test_interpolated_ap_equals_accumulate_on_ranked_lists(preset, seed):
    """On an ordinary ranked list (distinct scores) the one interpolation equals the protocol's."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    is_tp = rng.random(n) < rng.random()
    n_pos = int(is_tp.sum() + rng.integers(0 if is_tp.any() else 1, 5))
    score = np.sort(rng.permutation(n) + 0.5)[::-1].astype(float)
    protocol = get_protocol(preset).replace(max_dets=None, area_ranges=(("all", 0.0, 1e10),))
    protocol = protocol.replace(iou_thresholds=(0.5,))
    acc = accumulate(
        is_tp[None, :],
        np.zeros((1, n), bool),
        score,
        np.zeros(n, np.int64),
        np.zeros(n, np.int64),
        np.arange(n),
        np.array([[n_pos]]),
        protocol,
    )
    tp = np.cumsum(is_tp)
    recall = tp / n_pos
    precision = tp / np.arange(1, n + 1)
    assert interpolated_ap(recall, precision, protocol) == pytest.approx(float(acc.ap[0, 0, 0, 0]), abs=1e-12)


def test_keypoints_and_bad_options_are_refused_with_a_config_error():
    gt_dict, dt_list = confused(1)
    gt, dt = _load(gt_dict, dt_list)
    with pytest.raises(ConfigError, match="iou_type 'keypoints' is not available"):
        decompose(gt, dt, get_protocol("coco-keypoints"))
    with pytest.raises(
        ConfigError, match=r"variant must be one of \['max_iou', 'matched'\], found 'nearest'"
    ):
        decompose(gt, dt, variant="nearest")
    with pytest.raises(ConfigError, match="iou_threshold must be in"):
        decompose(gt, dt, iou_threshold=1.5)


# -- the matched variant -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS[:20])
def test_matched_variant_factorises_and_localizes_each_object_once(seed):
    gt_dict, dt_list = confused(seed, max_images=12, max_classes=5)
    result = decompose(*_load(gt_dict, dt_list), "coco", variant="matched")
    for c in result.per_class:
        cv = c.curves
        for kind in ("precision", "recall"):
            d, loc, cgl = cv[f"{kind}_D"], cv[f"{kind}_L"], cv[f"{kind}_CgL"]
            defined = ~np.isnan(loc) & ~np.isnan(cgl)
            np.testing.assert_allclose(d[defined], (loc * cgl)[defined], rtol=0, atol=1e-12)
        # One-to-one: at most one localized detection per object, so recall stays <= 1.
        assert np.all(cv["recall_L"][~np.isnan(cv["recall_L"])] <= 1.0)


@pytest.mark.parametrize("seed", range(12))
def test_matched_variant_on_one_class_is_the_protocols_own_count(seed):
    """One class: the pooled matching is the protocol's, so D's last point is its recall and precision."""
    from deteval.evaluate import match, score
    from tests.crosscheck.generate import generate

    gt_dict, dt_list = generate(seed, max_images=12, max_classes=1)
    gt, dt = _load(gt_dict, dt_list)
    protocol = get_protocol("coco").replace(
        iou_thresholds=(0.5,), area_ranges=(("all", 0.0, 1e10),), max_dets=None, summary="configured"
    )
    c = decompose(gt, dt, protocol, variant="matched").per_class[0]
    if c.n_gt == 0 or not len(c.confidence):
        pytest.skip("no ground truth or no detection")
    table = match(gt, dt, protocol)
    result = score(table, gt, protocol)
    n_tp = int(table.det_is_tp[0].sum())
    n_counted = int((~table.det_is_ignored[0]).sum())
    assert c.curves["recall_D"][-1] == n_tp / c.n_gt == pytest.approx(float(result.recall[0, 0, 0, 0]))
    assert c.curves["precision_D"][-1] == n_tp / n_counted


def test_matched_variant_sits_beside_the_default_in_analyze():
    gt_dict, dt_list = confused(3)
    from deteval.diagnose import analyze

    doc = analyze(*_load(gt_dict, dt_list), "coco", decompose_matched=True).to_dict()
    assert list(doc) == ["errors", "decomposition", "decomposition_matched", "confusion"]
    assert doc["decomposition"] == analyze(*_load(gt_dict, dt_list), "coco").to_dict()["decomposition"]
    with pytest.raises(ConfigError, match="variant 'matched' decomposes boxes only"):
        decompose(*_load(gt_dict, dt_list), get_protocol("coco").replace(iou_type="segm"), variant="matched")


# --- the scalar summaries: AP_CgL = AP_D / AP_L, so that AP_D = AP_L * AP_CgL exactly ----------


def _confused_detector(n_per_class=40, swap_every=3, top=3):
    """Two classes, one object an image, one exact box on every object, scores descending.

    Each class's ``top`` most confident detections carry the right label; below them every
    ``swap_every``-th detection is called the other class. The C|L curves then start at 1 with
    precision 1, so an AP of the C|L curve's envelope is 1 whatever the confusion below.
    """
    images, annotations, dets = [], [], []
    for i in range(2 * n_per_class):
        cls = 1 + i % 2
        images.append({"id": i + 1})
        annotations.append(
            {
                "id": i + 1,
                "image_id": i + 1,
                "category_id": cls,
                "bbox": [0, 0, 10, 10],
                "area": 100,
                "iscrowd": 0,
            }
        )
        rank = i // 2
        called = cls if rank < top or rank % swap_every else 3 - cls
        dets.append({"image_id": i + 1, "category_id": called, "bbox": [0, 0, 10, 10], "score": 1 - i / 1000})
    gt_dict = {"images": images, "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}
    gt_dict["annotations"] = annotations
    return gt_dict, dets


@pytest.mark.parametrize("preset", ["coco", "voc2007", "voc2010"])
def test_class_confusion_lowers_ap_cgl_and_the_summaries_factor(preset):
    result = decompose(*_load(*_confused_detector()), preset)
    for c in result.per_class:
        assert c.ap["AP_L"] == pytest.approx(1.0, abs=0.02)  # every box is on an object
        assert c.ap["AP_D"] < 0.9  # a third of the labels below the top 3 are wrong
        assert c.ap["AP_CgL"] < 0.9, c.ap  # the old envelope summary gave 1.0 here
        assert abs(c.ap["AP_D"] - c.ap["AP_L"] * c.ap["AP_CgL"]) <= 1e-12
    m = result.mean
    assert abs(m["AP_D"] - m["AP_L"] * m["AP_CgL"]) <= 1e-12


@pytest.mark.parametrize("seed", SEEDS)
def test_summaries_factor_exactly_on_generated_confusions(seed):
    gt_dict, dt_list = confused(seed, max_images=12, max_classes=5)
    result = decompose(*_load(gt_dict, dt_list), "coco")
    for c in [*result.per_class, result]:
        ap = c.ap if hasattr(c, "ap") else c.mean
        if math.isnan(ap["AP_D"]):
            assert math.isnan(ap["AP_CgL"])
            continue
        assert ap["AP_D"] <= ap["AP_L"]
        if ap["AP_L"] == 0:  # nothing localized: classification given localization is undefined
            assert ap["AP_D"] == 0
            assert math.isnan(ap["AP_CgL"])
        else:
            assert 0 <= ap["AP_CgL"] <= 1
            assert abs(ap["AP_D"] - ap["AP_L"] * ap["AP_CgL"]) <= 1e-12


def test_nothing_localized_leaves_ap_cgl_undefined():
    gt_dict = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}
        ],
    }
    dt_list = [{"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.9}]
    result = decompose(*_load(gt_dict, dt_list), "coco")
    c = result.per_class[0]
    assert (c.ap["AP_D"], c.ap["AP_L"]) == (0.0, 0.0)
    assert math.isnan(c.ap["AP_CgL"])
    assert math.isnan(result.mean["AP_CgL"])
    assert result.to_dict()["per_class"][0]["AP_CgL"] is None
