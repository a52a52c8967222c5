"""Property tests (hypothesis) for deteval's box IoU and COCO evaluation.

Invariances checked: IoU symmetry and bounds (and bit-equality with pycocotools' bbIou);
AP in [0, 1]; perfect detections give exactly pycocotools' value (1 / (1 + eps) effects
included); results unchanged by reordering images in the GT file, by reordering detections
whose scores are distinct, and by a strictly monotone transform of the scores; and deteval
equals the slow reference (tests/reference/slow_coco.py) in both modes on small datasets
that include annotation id 0 and explicit ``ignore`` fields.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycocotools import mask as mask_utils

import deteval
from deteval.geometry import box_iou
from tests.crosscheck.compare import assert_matches
from tests.reference.run_pycocotools import run_pycocotools
from tests.reference.slow_coco import evaluate_slow

# Generated data has classes without ground truth and degenerate boxes: the API's
# UndefinedMetricWarning / InputWarning are incidental here (tests/unit/test_api.py checks them).
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

# derandomize: CI sees the same examples every run (no flaky gate); database=None: no
# example files written into the work tree.
_COMMON = dict(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SETTINGS = settings(max_examples=60, **_COMMON)
FEW = settings(max_examples=30, **_COMMON)

EPS_PRECISION = 1 / (1 + np.spacing(1))  # 0.9999999999999998: one TP, pycocotools' epsilon


# --------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------


def _float_boxes(min_size=1, max_size=6, *, extreme=False):
    if extreme:  # sizes down to subnormals, coordinates up to 1e6
        coord = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
        size = st.floats(0, 1e3, allow_nan=False, allow_infinity=False)
    else:
        coord = st.floats(-200, 200, allow_nan=False, allow_infinity=False)
        size = st.one_of(st.just(0.0), st.floats(0.01, 150, allow_nan=False, allow_infinity=False))
    box = st.tuples(coord, coord, size, size)
    return st.lists(box, min_size=min_size, max_size=max_size).map(
        lambda b: np.array(b, dtype=np.float64).reshape(-1, 4)
    )


def _int_boxes(min_size=1, max_size=6):
    coord = st.integers(-50, 50)
    size = st.integers(0, 60)
    box = st.tuples(coord, coord, size, size)
    return st.lists(box, min_size=min_size, max_size=max_size).map(
        lambda b: np.array(b, dtype=np.float64).reshape(-1, 4)
    )


@st.composite
def coco_datasets(
    draw,
    *,
    max_images=4,
    max_classes=3,
    max_gt=12,
    max_det=20,
    with_id_zero=False,
    with_ignore_fields=False,
    distinct_scores=False,
    positive_scores=False,
):
    """(gt, dt): small COCO dicts with overlapping integer / float boxes and score ties."""
    n_images = draw(st.integers(1, max_images))
    image_ids = draw(st.lists(st.integers(1, 10**6), min_size=n_images, max_size=n_images, unique=True))
    n_classes = draw(st.integers(1, max_classes))
    cat_ids = draw(st.lists(st.integers(1, 1000), min_size=n_classes, max_size=n_classes, unique=True))
    coord = st.integers(0, 60)
    size = st.integers(0, 50)
    annotations = []
    for _ in range(draw(st.integers(0, max_gt))):
        x, y, w, h = draw(coord), draw(coord), draw(size), draw(size)
        if draw(st.booleans()):
            x, y = x + 0.5, y + draw(st.sampled_from([0, 0.25, 0.1]))
        area = draw(st.sampled_from(["box", "box", "other"]))
        ann = {
            "image_id": draw(st.sampled_from(image_ids)),
            "category_id": draw(st.sampled_from(cat_ids)),
            "bbox": [x, y, w, h],
            "area": w * h if area == "box" else draw(st.sampled_from([0, 1024, 9216, 500.5])),
            "iscrowd": int(draw(st.integers(0, 9)) == 0),
        }
        if with_ignore_fields and draw(st.booleans()):
            ann["ignore"] = draw(st.sampled_from([0, 1]))
        annotations.append(ann)
    ann_ids = draw(
        st.lists(st.integers(1, 10**6), min_size=len(annotations), max_size=len(annotations), unique=True)
    )
    for ann, ann_id in zip(annotations, ann_ids, strict=True):
        ann["id"] = ann_id
    if with_id_zero and annotations:
        annotations[draw(st.integers(0, len(annotations) - 1))]["id"] = 0

    n_det = draw(st.integers(0, max_det))
    if distinct_scores:
        scores = draw(st.lists(st.integers(1, 10**6), min_size=n_det, max_size=n_det, unique=True))
        scores = [k / 10**6 for k in scores]
    else:
        low = 1 if positive_scores else 0
        scores = [k / 20 for k in draw(st.lists(st.integers(low, 20), min_size=n_det, max_size=n_det))]
    detections = []
    for score in scores:
        if annotations and draw(st.booleans()):  # near a GT of the same image and class
            ann = draw(st.sampled_from(annotations))
            x, y, w, h = ann["bbox"]
            dx, dy, dw, dh = (draw(st.integers(-4, 4)) for _ in range(4))
            box = [x + dx, y + dy, max(w + dw, 1), max(h + dh, 1)]
            image_id, cat = ann["image_id"], ann["category_id"]
        else:
            box = [draw(coord), draw(coord), draw(st.integers(1, 50)), draw(st.integers(1, 50))]
            image_id, cat = draw(st.sampled_from(image_ids)), draw(st.sampled_from(cat_ids))
        detections.append({"image_id": image_id, "category_id": cat, "bbox": box, "score": score})
    gt = {
        "images": [{"id": i, "width": 100, "height": 100} for i in image_ids],
        "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids],
        "annotations": annotations,
    }
    return gt, detections


@st.composite
def perfect_datasets(draw):
    """Every GT (positive size, not crowd) has exactly one detection equal to it."""
    gt, _ = draw(coco_datasets(max_gt=15, max_det=0))
    annotations = [a for a in gt["annotations"] if a["bbox"][2] > 0 and a["bbox"][3] > 0]
    for a in annotations:
        a["iscrowd"] = 0
        a["area"] = a["bbox"][2] * a["bbox"][3]
    gt["annotations"] = annotations
    scores = draw(st.lists(st.floats(0.01, 1.0), min_size=len(annotations), max_size=len(annotations)))
    dt = [
        {"image_id": a["image_id"], "category_id": a["category_id"], "bbox": list(a["bbox"]), "score": s}
        for a, s in zip(annotations, scores, strict=True)
    ]
    return gt, dt


# --------------------------------------------------------------------------------------
# Box IoU
# --------------------------------------------------------------------------------------


@SETTINGS
@given(a=_float_boxes(), b=_float_boxes())
def test_box_iou_is_symmetric_and_bounded(a, b):
    """Symmetric bit for bit; in [0, 1] up to rounding.

    With float coordinates the reference arithmetic can exceed 1: for two identical boxes
    [0.1, 0.1, 0.2, 0.2], ``(0.1 + 0.2) - 0.1`` is 0.20000000000000004 and pycocotools'
    bbIou gives 1.0000000000000004. The excess grows with |x| / w (the overlap width is a
    difference of coordinates), so the bound holds for sizes >= 0.01 at |x| <= 200 only; see
    ``test_box_iou_is_not_clamped_like_pycocotools`` for tiny boxes. Integer coordinates are
    exact (next test).
    """
    ab = box_iou(a, b)
    ba = box_iou(b, a)
    assert ab.shape == (len(a), len(b))
    np.testing.assert_array_equal(ab, ba.T)
    assert np.all(ab >= 0.0)
    assert np.all(ab <= 1.0 + 1e-9)


@SETTINGS
@given(a=_float_boxes(extreme=True), b=_float_boxes(extreme=True))
def test_box_iou_is_symmetric_and_non_negative_for_any_floats(a, b):
    ab = box_iou(a, b)
    np.testing.assert_array_equal(ab, box_iou(b, a).T)
    assert np.all(ab >= 0.0)
    assert np.all(np.isfinite(ab))


@SETTINGS
@given(a=_int_boxes(), b=_int_boxes())
def test_box_iou_integer_boxes_in_unit_interval(a, b):
    ab = box_iou(a, b)
    np.testing.assert_array_equal(ab, box_iou(b, a).T)
    assert np.all((ab >= 0.0) & (ab <= 1.0))
    positive = (a[:, 2] > 0) & (a[:, 3] > 0)
    assert np.all(np.diag(box_iou(a, a))[positive] == 1.0)
    assert np.all(np.diag(box_iou(a, a))[~positive] == 0.0)


@SETTINGS
@given(
    d=st.one_of(_float_boxes(), _int_boxes(), _float_boxes(extreme=True)),
    g=st.one_of(_float_boxes(), _int_boxes(), _float_boxes(extreme=True)),
    data=st.data(),
)
def test_box_iou_equals_pycocotools_bbiou_bit_for_bit(d, g, data):
    crowd = data.draw(st.lists(st.booleans(), min_size=len(g), max_size=len(g)))
    expected = mask_utils.iou(d.tolist(), g.tolist(), [int(c) for c in crowd])
    actual = box_iou(d, g, np.array(crowd, dtype=bool))
    np.testing.assert_array_equal(actual, np.asarray(expected, dtype=np.float64))


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        ([0.1, 0.1, 0.2, 0.2], 1.0000000000000004),
        ([15.0, 0.0, 1.1, 1.0], 1.0000000000000024),
        # (15 + 1e-15) - 15 is one ulp of 15 (1.78e-15), not 1e-15: IoU far above 1.
        ([15.0, 0.0, 1e-15, 1.0], 7.942817632502367),
    ],
)
def test_box_iou_is_not_clamped_like_pycocotools(box, expected):
    """Identical boxes, IoU above 1 by float rounding: parity keeps pycocotools' value."""
    boxes = np.array([box])
    assert mask_utils.iou(boxes.tolist(), boxes.tolist(), [0])[0, 0] == expected
    assert box_iou(boxes, boxes)[0, 0] == expected


# --------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------


def _in_unit_interval_or_nan(values):
    values = np.asarray(values, dtype=np.float64)
    return bool(np.all(np.isnan(values) | ((values >= 0.0) & (values <= 1.0))))


@SETTINGS
@given(data=coco_datasets(), protocol=st.sampled_from(["coco", "coco-pycocotools"]))
def test_ap_and_recall_in_unit_interval(data, protocol):
    gt, dt = data
    result = deteval.evaluate(gt, dt, protocol=protocol)
    assert _in_unit_interval_or_nan(list(result.metrics.values()))
    assert _in_unit_interval_or_nan(result.precision)
    assert _in_unit_interval_or_nan(result.recall)
    assert _in_unit_interval_or_nan([c["AP"] for c in result.per_class])


@SETTINGS
@given(data=perfect_datasets())
def test_perfect_detections_equal_pycocotools_value(data):
    """Perfect detections: AP is 1 up to pycocotools' epsilon, and bit-equal to it.

    A class with a single positive has precision 1 / (1 + eps) = 0.9999999999999998; with two
    or more the envelope lifts it to 2 / (2 + eps) == 1.0; the means then land on
    0.9999999999999998, 0.9999999999999999 or 1.0 depending on the mix (np.mean rounding).
    """
    gt, dt = data
    ref = run_pycocotools(gt, dt)
    for protocol in ("coco-pycocotools", "coco"):
        result = deteval.evaluate(gt, dt, protocol=protocol)
        assert_matches(result, ref, f"perfect detections ({protocol})")
        defined = ~np.isnan(result.precision[:, :, :, :, 2])
        assert np.all(np.isin(result.precision[:, :, :, :, 2][defined], [EPS_PRECISION, 1.0]))
        for name in ("AP", "AP50", "AP75", "APs", "APm", "APl"):
            value = result.metrics[name]
            assert np.isnan(value) or 1.0 - 3 * np.spacing(1) <= value <= 1.0, (name, value)
        for name in ("AR100", "ARs", "ARm", "ARl"):
            assert np.isnan(result.metrics[name]) or result.metrics[name] == 1.0
    if gt["annotations"]:
        assert not np.isnan(ref.stats[0])
        assert ref.stats[0] != -1


def _assert_same_result(a, b):
    np.testing.assert_array_equal(a.precision, b.precision)
    np.testing.assert_array_equal(a.recall, b.recall)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a.metrics.keys() == b.metrics.keys()
    for key in a.metrics:
        assert a.metrics[key] == b.metrics[key] or (np.isnan(a.metrics[key]) and np.isnan(b.metrics[key])), (
            key
        )


@SETTINGS
@given(
    data=coco_datasets(max_images=6),
    seed=st.randoms(use_true_random=False),
    protocol=st.sampled_from(["coco", "coco-pycocotools"]),
)
def test_reordering_images_in_gt_file_changes_nothing(data, seed, protocol):
    gt, dt = data
    shuffled = copy.deepcopy(gt)
    seed.shuffle(shuffled["images"])
    seed.shuffle(shuffled["categories"])
    _assert_same_result(
        deteval.evaluate(gt, dt, protocol=protocol), deteval.evaluate(shuffled, dt, protocol=protocol)
    )


@SETTINGS
@given(
    data=coco_datasets(distinct_scores=True),
    seed=st.randoms(use_true_random=False),
    protocol=st.sampled_from(["coco", "coco-pycocotools"]),
)
def test_reordering_detections_with_distinct_scores_changes_nothing(data, seed, protocol):
    gt, dt = data
    shuffled = list(dt)
    seed.shuffle(shuffled)
    _assert_same_result(
        deteval.evaluate(gt, dt, protocol=protocol), deteval.evaluate(gt, shuffled, protocol=protocol)
    )


def _monotone(score):
    # Strictly increasing on the k / 20 grid (and exact on ties: same input, same output).
    return 0.001 + 0.9 * score * score * score


@SETTINGS
@given(data=coco_datasets(positive_scores=True), protocol=st.sampled_from(["coco", "coco-pycocotools"]))
def test_monotone_score_transform_keeps_ap(data, protocol):
    gt, dt = data
    transformed = [{**d, "score": _monotone(d["score"])} for d in dt]
    a = deteval.evaluate(gt, dt, protocol=protocol)
    b = deteval.evaluate(gt, transformed, protocol=protocol)
    np.testing.assert_array_equal(a.precision, b.precision)
    np.testing.assert_array_equal(a.recall, b.recall)
    for key in a.metrics:
        assert a.metrics[key] == b.metrics[key] or (np.isnan(a.metrics[key]) and np.isnan(b.metrics[key])), (
            key
        )
    # The scores array follows the transform (0 where a recall threshold is never reached).
    reached = a.scores > 0
    np.testing.assert_array_equal(b.scores[reached], _monotone(a.scores[reached]))
    np.testing.assert_array_equal(b.scores[~reached], a.scores[~reached])


@FEW
@given(data=coco_datasets(with_id_zero=True, with_ignore_fields=True))
def test_both_modes_equal_slow_reference(data):
    gt, dt = data
    parity = evaluate_slow(gt, dt, gt_ignore_field="iscrowd", gt_id_zero="unmatchable")
    fixed = evaluate_slow(gt, dt, gt_ignore_field="honour", gt_id_zero="matchable")
    assert_matches(deteval.evaluate(gt, dt, protocol="coco-pycocotools"), parity, "parity")
    assert_matches(deteval.evaluate(gt, dt, protocol="coco"), fixed, "fixed")


@FEW
@given(data=coco_datasets(with_id_zero=True, with_ignore_fields=True))
def test_parity_protocol_equals_pycocotools_on_small_data(data):
    gt, dt = data
    assert_matches(
        deteval.evaluate(gt, dt, protocol="coco-pycocotools"),
        run_pycocotools(gt, dt),
        "parity vs pycocotools",
    )


@pytest.mark.parametrize("protocol", ["coco", "coco-pycocotools"])
def test_evaluate_twice_is_deterministic(protocol):
    from tests.crosscheck.generate import generate

    gt, dt = generate(5, max_images=10)
    _assert_same_result(
        deteval.evaluate(gt, dt, protocol=protocol), deteval.evaluate(gt, dt, protocol=protocol)
    )
