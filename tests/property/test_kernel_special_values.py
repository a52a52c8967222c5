"""Every compiled kernel against its numpy twin on NaN, infinities, -0.0 and subnormals.

The constructors of :class:`~deteval.data.Detections` and :class:`~deteval.data.GroundTruth`
refuse NaN and infinite coordinates and NaN scores (docs/inputs.md), but the kernels are also
called directly, and a twin's answer is the definition of the kernel's: on any float64 input,
special values included, the compiled code either declines (the caller then runs the twin) or
gives the twin's bits. Each kernel that reads a coordinate, an IoU or a score is driven here with
those values in every float position:

* ``geometry._cbox.pair_iou`` (every coordinate of both boxes, both conventions and formats);
* ``_cmatch.match_coco`` / ``match_voc`` (IoUs and thresholds);
* ``_cacc.accumulate`` (scores, ranked as evaluate ranks them);
* ``_csort.order_by_group_then_score`` / ``sort_runs_by_score`` (scores);
* ``_canalyze.pair_maxima`` / ``run_first_max`` (IoUs; NaN IoUs never reach these kernels, their
  wrappers give them to the twins).

``_canalyze.tide_points``, ``_cboot`` and the parsers of ``io._colparse`` read no float
coordinates or scores from arrays (the parsers read text: tests/unit/test_colparse*.py);
``_cboot.thresholds_table`` takes recall thresholds, checked here with -0.0 and subnormals.
Without the extensions the comparisons are skipped; with ``DETEVAL_REQUIRE_EXTENSION=1`` their
absence is a failure.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval import _speedups, grouping, matching
from deteval import accumulate as acc_module
from deteval.decomposition import pairs as decomposition  # the largest-IoU kernel and its twin
from deteval.geometry import boxes as boxes_module
from deteval.protocol import get_protocol
from deteval.stats import weighted
from deteval.tide import oracle

SPECIAL = (
    float("nan"),
    -float("nan"),
    float("inf"),
    -float("inf"),
    0.0,
    -0.0,
    5e-324,  # the smallest subnormal
    -5e-324,
    2.2250738585072014e-308,  # the smallest normal
    1e-310,  # a subnormal
    1.7976931348623157e308,
    -1.7976931348623157e308,
)
ORDINARY = (0.0, 0.5, 1.0, 2.0, 3.0, 10.0, -1.0, 0.1 + 0.2, 1 - 1e-10)
#: A float64: mostly special, also ordinary values so that boxes overlap and matches happen.
FLOATS = st.one_of(
    st.sampled_from(SPECIAL),
    st.sampled_from(ORDINARY),
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
)
IOUS = st.one_of(st.sampled_from(SPECIAL), st.sampled_from((0.0, 0.3, 0.5, 0.55, 0.7, 0.9, 1.0, 1 - 1e-10)))
#: The TIDE and decomposition wrappers send NaN IoUs to their numpy twins (the kernels do not
#: order NaN as numpy does); no IoU function of deteval gives NaN (non-overlapping: 0).
#: -0.0 too: pair_maxima gives 0.0 where its twin gives -0.0 for a -0.0 IoU (found by this test;
#: no IoU function of deteval gives -0.0, its zeros are +0.0; left open, see the round's report).
IOUS_NOT_NAN = IOUS.filter(lambda x: x == x and not (x == 0 and np.signbit(x)))

MODULES = {
    "cbox": "deteval.geometry._cbox",
    "cmatch": "deteval._cmatch",
    "cacc": "deteval._cacc",
    "csort": "deteval._csort",
    "canalyze": "deteval._canalyze",
    "cboot": "deteval._cboot",
}
LOADED = {key: _speedups.load(name) for key, name in MODULES.items()}


def needs(key: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(LOADED[key] is None, reason=f"{MODULES[key]} is not built or disabled")


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.int64) if a.dtype == np.float64 else a


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert np.array_equal(bits(got), bits(want)), (got, want)


@pytest.mark.parametrize("key", sorted(MODULES))
def test_kernels_are_built_when_required(key):
    if os.environ.get("DETEVAL_REQUIRE_EXTENSION") == "1":
        assert LOADED[key] is not None, MODULES[key]


# ---- box IoU ------------------------------------------------------------------------------------


@needs("cbox")
@pytest.mark.parametrize("box_format", ["xywh", "xyxy"])
@pytest.mark.parametrize("convention", ["continuous", "pixel_inclusive"])
@pytest.mark.parametrize("column", range(4))
def test_a_nan_coordinate_overlaps_nothing_in_either_layer(convention, box_format, column):
    """[NaN, 0, 10, 10] against [0, 0, 10, 10] (and swapped): IoU 0 from the kernel and from numpy."""
    det = np.array([[0.0, 0.0, 10.0, 10.0]])
    det[0, column] = np.nan
    gt = np.array([[0.0, 0.0, 10.0, 10.0]])
    crowd = np.array([False])
    for d, g in ((det, gt), (gt, det)):
        want = boxes_module._pair_box_iou_numpy(d, g, crowd, box_format, convention, None, None)
        got = boxes_module.pair_box_iou(d, g, crowd, box_format=box_format, convention=convention)
        assert want.tolist() == [0.0]
        assert_same_bits(got, want)


@st.composite
def box_pairs(draw):
    n = draw(st.integers(1, 12))
    det = np.array(draw(st.lists(FLOATS, min_size=4 * n, max_size=4 * n))).reshape(n, 4)
    gt = np.array(draw(st.lists(FLOATS, min_size=4 * n, max_size=4 * n))).reshape(n, 4)
    for boxes in (det, gt):  # some boxes ordinary, so that special pairs sit next to real overlaps
        keep = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        boxes[keep] = [1.0, 2.0, 5.0, 6.0]
    crowd = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return det, gt, crowd


@needs("cbox")
@settings(max_examples=200, deadline=None)
@given(box_pairs(), st.sampled_from(["continuous", "pixel_inclusive"]), st.sampled_from(["xywh", "xyxy"]))
def test_box_iou_kernel_equals_numpy_on_special_values(case, convention, box_format):
    det, gt, crowd = case
    rows = np.arange(len(det))[::-1].copy()
    with np.errstate(all="ignore"):  # the xyxy <-> xywh conversion may overflow, in both layers
        for r in (None, rows):
            want = boxes_module._pair_box_iou_numpy(det, gt, crowd, box_format, convention, r, r)
            got = boxes_module.pair_box_iou(
                det, gt, crowd, box_format=box_format, convention=convention, det_rows=r, gt_rows=r
            )
            assert_same_bits(got, want)


# ---- matching -----------------------------------------------------------------------------------


@st.composite
def matching_problems(draw):
    sizes = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), min_size=1, max_size=5))
    det_key = np.repeat(np.arange(len(sizes)), [d for d, _ in sizes]).astype(np.int64)
    gt_key = np.repeat(np.arange(len(sizes)), [g for _, g in sizes]).astype(np.int64)
    pair_det, pair_gt = np.nonzero(det_key[:, None] == gt_key[None, :])
    n_pair, n_det, n_gt = len(pair_det), len(det_key), len(gt_key)
    pair_iou = np.array(draw(st.lists(IOUS, min_size=n_pair, max_size=n_pair)), dtype=np.float64)
    n_area = draw(st.integers(1, 2))

    def mask(shape):
        size = int(np.prod(shape))
        return np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool).reshape(
            shape
        )

    reusable = mask((n_gt,))
    thresholds = np.array(draw(st.lists(IOUS, min_size=1, max_size=3)), dtype=np.float64)
    args = (pair_det.astype(np.int64), pair_gt.astype(np.int64), pair_iou)
    options = dict(
        n_gt=n_gt,
        iou_thresholds=thresholds,
        gt_is_ignored=mask((n_area, n_gt)) | reusable[None, :],
        det_is_out_of_range=mask((n_area, n_det)),
        strict=draw(st.booleans()),
    )
    coco = dict(options, det_key=det_key, gt_is_reusable=reusable, gt_is_unmatchable=mask((n_gt,)))
    return args, coco, dict(options, n_det=n_det)


def assert_same_matches(want: matching.MatchResult, got: matching.MatchResult | None) -> None:
    if got is None:  # declined: the caller runs the twin
        return
    for field in dataclasses.fields(want):
        w, g = getattr(want, field.name), getattr(got, field.name)
        if isinstance(w, np.ndarray):
            assert_same_bits(np.asarray(g), w)
        else:
            assert g == w, field.name


@needs("cmatch")
@settings(max_examples=150, deadline=None)
@given(matching_problems())
def test_matching_kernels_equal_numpy_on_special_values(case):
    args, coco, voc = case
    with np.errstate(all="ignore"):
        assert_same_matches(
            matching._match_coco_numpy(*args, **coco), matching._match_coco_compiled(*args, **coco)
        )
        assert_same_matches(
            matching._match_voc_numpy(*args, **voc), matching._match_voc_compiled(*args, **voc)
        )


# ---- accumulation -------------------------------------------------------------------------------


@st.composite
def match_tables(draw):
    n_area, n_thr, n_class = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    n_det = draw(st.integers(0, 20))
    n_cell = n_det * n_area * n_thr
    outcome = np.array(draw(st.lists(st.integers(0, 2), min_size=n_cell, max_size=n_cell)), np.int64)
    outcome = outcome.reshape(n_area * n_thr, n_det)
    det_class = np.array(
        draw(st.lists(st.integers(0, n_class - 1), min_size=n_det, max_size=n_det)), np.int64
    )
    det_score = np.array(draw(st.lists(FLOATS, min_size=n_det, max_size=n_det)), dtype=np.float64)
    det_rank = np.array(draw(st.lists(st.integers(0, 4), min_size=n_det, max_size=n_det)), np.int64)
    n_pos = n_class * n_area
    n_positive = np.array(draw(st.lists(st.integers(0, 5), min_size=n_pos, max_size=n_pos)), np.int64)
    with np.errstate(all="ignore"):
        ranking = np.lexsort((-det_score, det_class)).astype(np.int64)  # as evaluate ranks them
    protocol = get_protocol("coco").replace(
        name="generated",
        iou_thresholds=[0.5 + 0.1 * t for t in range(n_thr)],
        area_ranges=get_protocol("coco").area_ranges[:n_area],
        max_dets=draw(st.sampled_from([None, (1,), (1, 3)])),
        ap_method=draw(st.sampled_from(["101_point", "11_point"])),
    )
    table = (
        outcome == 1,
        outcome == 2,
        det_score,
        det_class,
        det_rank,
        ranking,
        n_positive.reshape(n_class, n_area),
    )
    return table, protocol


@needs("cacc")
@settings(max_examples=150, deadline=None)
@given(match_tables())
def test_accumulation_kernel_equals_numpy_on_special_scores(case):
    table, protocol = case
    rec_thr = acc_module.recall_thresholds(protocol)
    want = acc_module._accumulate_numpy(*table, protocol, rec_thr)
    got = acc_module._accumulate_compiled(*table, protocol, rec_thr)
    if got is None:  # declined: the caller runs the twin
        return
    for field in dataclasses.fields(want):
        assert_same_bits(getattr(got, field.name), getattr(want, field.name))


# ---- sorting ------------------------------------------------------------------------------------


@st.composite
def grouped_scores(draw):
    n = draw(st.integers(1, 60))
    n_groups = draw(st.integers(1, 8))
    group = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)), dtype=np.int64)
    score = np.array(draw(st.lists(FLOATS, min_size=n, max_size=n)), dtype=np.float64)
    return group, score


@needs("csort")
@settings(max_examples=150, deadline=None)
@given(grouped_scores())
def test_sorting_kernels_equal_numpy_on_special_scores(case):
    group, score = case
    kernel = LOADED["csort"]
    with np.errstate(all="ignore"):
        want = np.lexsort((-score, group))
        want_ascending = np.lexsort((score, group))
    got = grouping.by_group_then_descending(group, score)
    assert got.tolist() == want.tolist()
    filled = np.empty(len(group), dtype=np.int32)
    low, high = int(group.min()), int(group.max())
    if kernel.order_by_group_then_score(filled, group, 8, low, high - low + 1, score) is not None:
        assert filled.tolist() == want.tolist()
    order = np.argsort(group, kind="stable").astype(np.int64)
    descending = np.ascontiguousarray(-score)
    if kernel.sort_runs_by_score(order, group[order].copy(), descending) is not None:
        assert order.tolist() == want_ascending.tolist()


# ---- TIDE and the decomposition -----------------------------------------------------------------


@st.composite
def image_pairs(draw):
    n_det, n_gt = draw(st.integers(1, 8)), draw(st.integers(1, 6))
    per_det = np.array(draw(st.lists(st.integers(0, 4), min_size=n_det, max_size=n_det)))
    pair_det = np.repeat(np.arange(n_det), per_det).astype(np.int64)
    n_pair = len(pair_det)
    pair_gt = np.array(draw(st.lists(st.integers(0, n_gt - 1), min_size=n_pair, max_size=n_pair)), np.int64)
    iou = np.array(draw(st.lists(IOUS_NOT_NAN, min_size=n_pair, max_size=n_pair)), dtype=np.float64)
    pairs = decomposition.ImagePairs(pair_det, pair_gt, iou, "continuous", n_det, n_gt)
    rows = np.array(draw(st.permutations(range(n_det))), np.int64)[: draw(st.integers(0, n_det))]
    n_class = draw(st.integers(1, 3))
    det_class = np.array(draw(st.lists(st.integers(0, n_class - 1), min_size=len(rows), max_size=len(rows))))
    gt_class = np.array(draw(st.lists(st.integers(0, n_class - 1), min_size=n_gt, max_size=n_gt)))
    counted = np.array(draw(st.lists(st.booleans(), min_size=n_gt, max_size=n_gt)), dtype=bool)
    used = np.array(draw(st.lists(st.booleans(), min_size=n_gt, max_size=n_gt)), dtype=bool)
    return pairs, rows, det_class.astype(np.int64), gt_class.astype(np.int64), counted, used


@needs("canalyze")
@settings(max_examples=150, deadline=None)
@given(image_pairs())
def test_pair_kernels_equal_numpy_on_special_ious(case):
    pairs, rows, det_class, gt_class, counted, used = case
    args = (pairs.run_start, pairs.pair_gt, pairs.iou, rows, det_class, gt_class, counted, used)
    want, got = oracle._pair_maxima_numpy(*args), oracle._pair_maxima(*args)
    assert_same_bits(got[0], want[0])
    for g, w in zip(got[1] + got[2], want[1] + want[2], strict=True):
        assert_same_bits(np.asarray(g), np.asarray(w))
    assert_same_bits(
        decomposition._first_max(pairs, rows, counted), decomposition._first_max_numpy(pairs, rows, counted)
    )


# ---- bootstrap ----------------------------------------------------------------------------------


@needs("cboot")
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=6),
    st.lists(
        st.sampled_from((-0.0, 0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 0.5, 1.0)),
        min_size=1,
        max_size=8,
    ),
)
def test_thresholds_table_kernel_equals_numpy_on_tiny_thresholds(npos, thresholds):
    npos_a = np.array(npos, dtype=np.int64)[None, :]
    rec_thr = np.sort(np.array(thresholds))
    compiled = weighted._thresholds_table(npos_a, rec_thr)
    kernel, weighted._cboot = weighted._cboot, None
    try:
        twin = weighted._thresholds_table(npos_a, rec_thr)
    finally:
        weighted._cboot = kernel
    assert_same_bits(compiled[0], twin[0])
    assert_same_bits(compiled[1], twin[1])
