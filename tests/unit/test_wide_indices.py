"""Int32 index columns: keys built from them must not overflow on large datasets.

``Detections.image`` / ``.category`` / ``.order`` and the match table's ``det_class`` /
``det_image`` / ``det_rank`` / ``det_order`` are int32. Every key such as
``image * n_class + category`` must be computed in int64: with 100,000 images and 22,000
categories the key of the last image is beyond 2**31. These tests score a few objects on the
highest indices of such a dataset and compare every number with the same objects relabelled
onto a small dataset (evaluation, TIDE, the decomposition) or onto few categories with the same
images (the bootstrap, whose resamples draw images).
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval.data import Detections, GroundTruth, index_dtype
from deteval.decomposition import decompose as decompose_classes
from deteval.errors import InputError
from deteval.evaluate import match, merge_match_tables, score
from deteval.protocol import get_protocol
from deteval.stats import bootstrap
from deteval.tide import tide_errors

N_IMG, N_CLASS = 100_000, 22_000  # N_IMG * N_CLASS > 2**31

# (image, category, box) of the ground truth and (image, category, box, score) of the detections,
# in "slots": slot i of images / categories is mapped to an index by the dataset being built.
GT_OBJECTS = [
    (0, 0, [10, 10, 40, 40]),
    (0, 1, [60, 60, 30, 30]),
    (1, 0, [5, 5, 20, 20]),
    (2, 2, [0, 0, 50, 50]),
    (2, 2, [100, 100, 20, 20]),
    (3, 1, [30, 30, 30, 30]),
    (4, 3, [10, 10, 10, 10]),
]
DT_OBJECTS = [
    (0, 0, [12, 11, 40, 40], 0.9),
    (0, 1, [60, 62, 30, 29], 0.8),
    (0, 2, [60, 60, 30, 30], 0.7),  # the right box, the wrong class
    (1, 0, [5, 5, 20, 20], 0.95),
    (1, 0, [5, 5, 21, 20], 0.95),  # a tie with a duplicate
    (2, 2, [0, 0, 50, 30], 0.6),
    (2, 2, [101, 100, 20, 20], 0.85),
    (3, 1, [200, 200, 30, 30], 0.5),  # background
    (3, 1, [30, 30, 30, 31], 0.4),
    (4, 3, [10, 10, 10, 12], 0.3),
    (4, 0, [10, 10, 10, 10], 0.2),
]


def _dataset(image_of_slot, category_of_slot, n_img, n_class):
    """Ground truth and detections of the objects above, their slots mapped to indices."""
    gt_image = np.array([image_of_slot[o[0]] for o in GT_OBJECTS])
    gt_category = np.array([category_of_slot[o[1]] for o in GT_OBJECTS])
    n_gt = len(GT_OBJECTS)
    gt = GroundTruth(
        image_id=np.arange(n_img, dtype=np.int64) + 1,
        image_name=tuple(f"{i}.jpg" for i in range(n_img)),
        image_width=np.full(n_img, 640.0),
        image_height=np.full(n_img, 480.0),
        category_id=np.arange(n_class, dtype=np.int64) + 1,
        category_name=tuple(f"c{k}" for k in range(n_class)),
        annotation_id=np.arange(n_gt, dtype=np.int64) + 1,
        image=gt_image,
        category=gt_category,
        box=np.array([o[2] for o in GT_OBJECTS], dtype=np.float64),
        area=np.array([o[2][2] * o[2][3] for o in GT_OBJECTS], dtype=np.float64),
        is_crowd=np.zeros(n_gt, bool),
        is_difficult=np.zeros(n_gt, bool),
        is_ignore=np.zeros(n_gt, bool),
    )
    dt = Detections(
        image=np.array([image_of_slot[o[0]] for o in DT_OBJECTS]),
        category=np.array([category_of_slot[o[1]] for o in DT_OBJECTS]),
        box=np.array([o[2] for o in DT_OBJECTS], dtype=np.float64),
        score=np.array([o[3] for o in DT_OBJECTS]),
        order=np.arange(len(DT_OBJECTS)),
        has_box=np.ones(len(DT_OBJECTS), bool),
    )
    return gt, dt


def _evaluate(gt, dt, protocol):
    """``deteval.evaluate`` without its warnings (most classes have no ground truth here)."""
    return score(match(gt, dt, protocol), gt, protocol)


def _high(n):
    return [N_IMG - 1 - 3 * s for s in range(n)]


@pytest.fixture(scope="module")
def wide():
    """The objects on the last images and categories of a large dataset."""
    return _dataset(_high(5), [N_CLASS - 1 - 2 * s for s in range(4)][::-1], N_IMG, N_CLASS)


@pytest.fixture(scope="module")
def small():
    """The same objects on a dataset of five images and four categories (same order of indices)."""
    return _dataset(list(range(5))[::-1], list(range(4)), 5, 4)


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, float | np.floating):
        assert (np.isnan(a) and np.isnan(b)) or a == b
    else:
        assert a == b


def test_the_keys_would_overflow_in_int32(wide):
    gt, dt = wide
    assert dt.image.dtype == dt.category.dtype == dt.order.dtype == np.int32
    assert int(dt.image.max()) * gt.n_classes + int(dt.category.max()) > np.iinfo(np.int32).max


@pytest.mark.parametrize("name", ["coco50", "voc2007", "voc2010"])
def test_evaluate_on_high_indices_equals_the_small_dataset(wide, small, name):
    protocol = get_protocol(name).replace(name="narrow", summary="configured")
    big = _evaluate(*wide, protocol)
    ref = _evaluate(*small, protocol)
    _same(big.metrics, ref.metrics)
    defined = [c for c in big.per_class if c["num_gt"] or c["num_det"]]
    assert [(c["AP"], c["num_gt"], c["num_det"]) for c in defined] == [
        (c["AP"], c["num_gt"], c["num_det"]) for c in ref.per_class if c["num_gt"] or c["num_det"]
    ]
    table = big.table
    assert {table.det_class.dtype, table.det_image.dtype, table.det_order.dtype} == {np.dtype(np.int32)}


def test_shards_merge_on_high_indices(wide):
    gt, dt = wide
    protocol = get_protocol("coco50")
    images = np.zeros(gt.n_images, bool)
    images[N_IMG - 7 :] = True
    parts = [match(gt, dt, protocol, images=images), match(gt, dt, protocol, images=~images)]
    merged = score(merge_match_tables(parts), gt, protocol)
    _same(merged.metrics, _evaluate(gt, dt, protocol).metrics)


def test_tide_and_decomposition_on_high_indices_equal_the_small_dataset(wide, small):
    for mode in ("tidecv", "protocol"):
        big = tide_errors(*wide, "coco50", mode=mode)
        ref = tide_errors(*small, "coco50", mode=mode)
        _same(big.main, ref.main)
        _same(big.special, ref.special)
        assert big.counts == ref.counts
        assert big.ap == ref.ap
    big_d = decompose_classes(*wide, "coco50", iou_threshold=0.5)
    ref_d = decompose_classes(*small, "coco50", iou_threshold=0.5)
    _same(big_d.to_dict()["mean"], ref_d.to_dict()["mean"])


def test_bootstrap_on_high_indices_equals_few_categories(wide):
    gt, dt = wide
    few_gt, few_dt = _dataset(_high(5), list(range(4)), N_IMG, 4)  # the same images
    protocol = get_protocol("coco50")
    big = bootstrap(gt, {"A": _evaluate(gt, dt, protocol)}, n=20, seed=3)
    ref = bootstrap(few_gt, {"A": _evaluate(few_gt, few_dt, protocol)}, n=20, seed=3)
    got, want = big.results[0].samples.metrics, ref.results[0].samples.metrics
    assert np.array_equal(got, want, equal_nan=True)


def test_detections_keep_int32_columns_and_refuse_what_does_not_fit():
    args = {
        "box": np.zeros((2, 4)),
        "score": np.ones(2),
        "has_box": np.ones(2, bool),
        "source": "dt.json",
    }
    dt = Detections(image=[0, 1], category=np.array([3, 4], np.uint8), order=np.array([0, 2**31]), **args)
    assert dt.image.dtype == dt.category.dtype == np.int32
    assert dt.order.dtype == np.int64  # order only: int64 beyond int32
    assert dt.take(np.array([1])).order.tolist() == [2**31]
    assert index_dtype(np.array([-(2**31), 2**31 - 1])) == np.int32
    with pytest.raises(InputError, match=r"dt\.json: Detections\.image must fit int32"):
        Detections(image=np.array([0, 2**31]), category=[0, 0], order=[0, 1], **args)
    with pytest.raises(InputError, match=r"dt\.json: Detections\.category must hold integer indices"):
        Detections(image=[0, 1], category=np.array([0.0, 1.0]), order=[0, 1], **args)
    empty = Detections(
        image=np.zeros(0),
        category=np.zeros(0, np.int64),
        box=np.zeros((0, 4)),
        score=np.zeros(0),
        order=np.zeros(0, np.int64),
        has_box=np.zeros(0, bool),
    )
    assert empty.image.dtype == empty.order.dtype == np.int32


@pytest.mark.parametrize("name", ["coco50", "voc2007", "coco"])
def test_readers_take_int32_and_int64_table_columns_alike(small, name):
    """``det_rank`` (and every index column) int32 or int64: the same numbers from every reader."""
    import dataclasses

    from deteval.analysis import match_columns, pr_curve

    gt, dt = small
    protocol = get_protocol(name)
    table = match(gt, dt, protocol)
    columns = ("det_class", "det_image", "det_rank", "det_order")
    tables = [
        dataclasses.replace(table, **{c: getattr(table, c).astype(dtype) for c in columns})
        for dtype in (np.int32, np.int64)
    ]
    results = [score(t, gt, protocol) for t in tables]
    _same(results[0].metrics, results[1].metrics)
    assert np.array_equal(results[0].precision, results[1].precision, equal_nan=True)
    curves = [pr_curve(r, gt.category_id[0]) for r in results]
    assert np.array_equal(curves[0].precision, curves[1].precision, equal_nan=True)
    found = [match_columns(r) for r in results]
    assert all(
        np.array_equal(a, b) for a, b in zip(dataclasses.astuple(found[0]), dataclasses.astuple(found[1]))
    )
    boots = [bootstrap(gt, {"A": r}, n=10, seed=1).results[0].samples.metrics for r in results]
    assert np.array_equal(boots[0], boots[1], equal_nan=True)
