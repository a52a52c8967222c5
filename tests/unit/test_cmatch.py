"""The compiled matching kernels (``deteval/_cmatch.c``) against their numpy twins, bit for bit.

``match_coco`` and ``match_voc`` run the kernels when they were built and
``DETEVAL_NO_EXTENSION`` is not set; the numpy code (``_match_coco_numpy``,
``_match_voc_numpy``) is the reference. Every field of the ``MatchResult`` must be
identical (values, dtype, shape) on generated problems (ties, crowds, ignored GTs, id-0 GTs,
empty groups, strict and non-strict, one and many thresholds, several area ranges), on the
arguments ``evaluate`` passes on the cross-check datasets and the fixtures, and under a
hypothesis property. Without the extension the comparisons are skipped (the loading rules and the
shared special-value cases: tests/unit/test_kernels.py).
"""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deteval
from deteval import matching
from deteval.protocol import get_protocol
from tests import ROOT
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_voc import generate_voc, write_voc
from tests.support.kernels import checked_dispatch, coco_kernel, coco_numpy, voc_kernel, voc_numpy
from tests.support.kernels import needs_kernel as kernel_built
from tests.support.matching import pairs_of, random_problem

needs_kernel = kernel_built("deteval._cmatch")

COCO_THRESHOLDS = np.linspace(0.5, 0.95, 10)
THRESHOLD_SETS = {
    "coco": COCO_THRESHOLDS,
    "one": np.array([0.5]),
    "one-at-1": np.array([1.0]),
    "unsorted": np.array([0.75, 0.5, 0.9]),
}
#: The module (``deteval.evaluate`` the attribute is the function of the same name).
EVALUATE_MODULE = importlib.import_module("deteval.evaluate.run")  # where match() looks the matchers up
FIELDS = [field.name for field in dataclasses.fields(matching.MatchResult)]


def assert_identical(expected: matching.MatchResult, found: matching.MatchResult | None) -> None:
    assert found is not None
    for name in FIELDS:
        want, got = getattr(expected, name), getattr(found, name)
        if isinstance(want, matching.LaneFlags):  # packed lanes: the same lanes and bytes
            assert got.n_lane == want.n_lane, name
            want, got = want.bits, got.bits
        assert got.dtype == want.dtype, name
        assert got.shape == want.shape, name
        assert np.array_equal(got, want), name


def assert_narrow(expected: matching.MatchResult, found: matching.MatchResult | None) -> None:
    """``found`` (the kernel's narrow matches) holds ``expected``'s values as int32 rows, int8/16 lanes."""
    assert found is not None
    assert found.tp == expected.tp
    assert found.ignored == expected.ignored
    assert found.match_det.dtype == found.match_gt.dtype == np.int32
    assert found.match_lane.dtype == matching.lane_dtype(expected.tp.n_lane)
    for name in ("match_lane", "match_det", "match_gt"):
        assert np.array_equal(getattr(found, name).astype(np.int64), getattr(expected, name)), name


def both(*args, **options) -> tuple[matching.MatchResult, matching.MatchResult | None]:
    return coco_numpy(*args, **options), coco_kernel(*args, **options)


def problem(seed: int, n_area: int) -> tuple[tuple, dict]:
    """``random_problem`` of test_matching, with ``n_area`` area ranges."""
    groups, det_key, gt_key, gt_ignored, reusable, unmatchable, _ = random_problem(seed)
    rng = np.random.default_rng(10_000 + seed)
    gt_ignored = np.concatenate([gt_ignored, rng.random((max(n_area - 2, 0), len(gt_key))) < 0.3])[:n_area]
    gt_ignored[:, reusable] = True
    det_out = rng.random((n_area, len(det_key))) < 0.3
    args = pairs_of(groups, det_key, gt_key)
    options = dict(
        det_key=det_key,
        n_gt=len(gt_key),
        gt_is_ignored=gt_ignored,
        gt_is_reusable=reusable,
        gt_is_unmatchable=unmatchable,
        det_is_out_of_range=det_out,
    )
    return args, options


# --------------------------------------------------------------------------------------
# Generated problems
# --------------------------------------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("seed", range(200))
def test_kernel_equals_numpy_on_random_groups(seed):
    args, options = problem(seed, n_area=1 + seed % 4)
    for thresholds in THRESHOLD_SETS.values():
        for strict in (False, True):
            expected, found = both(*args, **options, iou_thresholds=thresholds, strict=strict)
            if len(args[0]) == 0 or options["n_gt"] == 0:
                assert found is None  # nothing to match: the numpy code's shortcut answers
                continue
            assert_identical(expected, found)
            narrow = coco_kernel(*args, **options, iou_thresholds=thresholds, strict=strict, narrow=True)
            assert_narrow(expected, narrow)
            assert_identical(
                expected, matching.match_coco(*args, **options, iou_thresholds=thresholds, strict=strict)
            )


def crowded_problem(seed: int) -> tuple[tuple, dict]:
    """Few groups, many detections and GTs each, IoUs from a handful of values (many ties)."""
    rng = np.random.default_rng(seed)
    n_group = int(rng.integers(1, 4))
    det_key = np.sort(rng.integers(0, n_group, int(rng.integers(1, 150))))
    gt_key = np.sort(rng.integers(0, n_group, int(rng.integers(1, 40))))
    pair_det, pair_gt = np.nonzero(det_key[:, None] == gt_key[None, :])
    values = np.array([0.0, 0.5, 0.5000000000000001, 0.7, 0.75, 0.95, 1 - 1e-10, 1.0])
    pair_iou = rng.choice(values, len(pair_det))
    n_area = int(rng.integers(1, 4))
    reusable = rng.random(len(gt_key)) < 0.15
    gt_ignored = rng.random((n_area, len(gt_key))) < 0.25
    gt_ignored[:, reusable] = True
    options = dict(
        det_key=det_key,
        n_gt=len(gt_key),
        gt_is_ignored=gt_ignored,
        gt_is_reusable=reusable,
        gt_is_unmatchable=rng.random(len(gt_key)) < 0.1,
        det_is_out_of_range=rng.random((n_area, len(det_key))) < 0.3,
    )
    return (pair_det.astype(np.int64), pair_gt.astype(np.int64), pair_iou), options


@needs_kernel
@pytest.mark.parametrize("seed", range(60))
def test_kernel_equals_numpy_on_crowded_groups(seed):
    args, options = crowded_problem(seed)
    for thresholds in THRESHOLD_SETS.values():
        for strict in (False, True):
            assert_identical(*both(*args, **options, iou_thresholds=thresholds, strict=strict))


@needs_kernel
@pytest.mark.parametrize("seed", range(60))
def test_kernel_equals_numpy_with_first_gt_on_ties(seed):
    """gt_ties "first" (Ultralytics): of equal IoUs the earliest GT; many exact ties here."""
    args, options = crowded_problem(seed)
    for thresholds in THRESHOLD_SETS.values():
        for strict in (False, True):
            kw = dict(options, iou_thresholds=thresholds, strict=strict, gt_ties="first")
            expected, found = both(*args, **kw)
            assert_identical(expected, found)  # the kernel ran: assert_identical refuses None
            assert_narrow(expected, coco_kernel(*args, **kw, narrow=True))
            assert_identical(expected, matching.match_coco(*args, **kw))


@needs_kernel
def test_kernel_pairs_in_any_order():
    # The kernel groups the pairs by detection itself; the numpy code sorts them.
    args, options = crowded_problem(7)
    shuffle = np.random.default_rng(0).permutation(len(args[0]))
    shuffled = tuple(a[shuffle] for a in args)
    assert_identical(*both(*shuffled, **options, iou_thresholds=COCO_THRESHOLDS))


@needs_kernel
def test_kernel_declines_inputs_outside_its_assumptions():
    args, options = crowded_problem(3)
    base = dict(options, iou_thresholds=COCO_THRESHOLDS)
    pair_det, pair_gt, pair_iou = args
    # Detection keys not sorted: the numpy code's rounds are not the row order.
    unsorted = dict(base, det_key=base["det_key"][::-1].copy())
    # A GT paired with detections of two groups.
    two_groups = dict(base, det_key=np.arange(len(base["det_key"]), dtype=np.int64))
    # Other dtypes than the kernel's.
    cases = [
        (args, unsorted),
        (args, two_groups),
        ((pair_det.astype(np.int32), pair_gt, pair_iou), base),
        ((pair_det, pair_gt, pair_iou.astype(np.longdouble)), base),
        (args, dict(base, gt_is_reusable=base["gt_is_reusable"].astype(np.int8))),
        ((pair_det, pair_gt + 1000, pair_iou), base),  # GT rows out of range
    ]
    for case_args, case_options in cases:
        assert coco_kernel(*case_args, **case_options) is None
    # match_coco then answers with the numpy code.
    assert_identical(coco_numpy(*args, **unsorted), matching.match_coco(*args, **unsorted))
    assert_identical(coco_numpy(*args, **two_groups), matching.match_coco(*args, **two_groups))


@needs_kernel
def test_kernel_does_not_mutate_inputs():
    args, options = crowded_problem(11)
    copies = [a.copy() for a in args], {k: np.copy(v) for k, v in options.items()}
    coco_kernel(*args, **options, iou_thresholds=COCO_THRESHOLDS)
    for before, after in zip(copies[0], args, strict=True):
        assert np.array_equal(before, after)
    for key, before in copies[1].items():
        assert np.array_equal(before, options[key])


# --------------------------------------------------------------------------------------
# Hypothesis
# --------------------------------------------------------------------------------------

IOU_VALUES = (0.0, 0.3, 0.5, 0.55, 0.7, 0.75, 0.8999999999999999, 0.9, 0.95, 1 - 1e-10, 1.0)


@st.composite
def matching_problems(draw):
    sizes = draw(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5)), min_size=1, max_size=6))
    det_key = np.repeat(np.arange(len(sizes)), [d for d, _ in sizes]).astype(np.int64)
    gt_key = np.repeat(np.arange(len(sizes)), [g for _, g in sizes]).astype(np.int64)
    pair_det, pair_gt = np.nonzero(det_key[:, None] == gt_key[None, :])
    n_pair, n_det, n_gt = len(pair_det), len(det_key), len(gt_key)
    pair_iou = np.array(draw(st.lists(st.sampled_from(IOU_VALUES), min_size=n_pair, max_size=n_pair)))
    n_area = draw(st.integers(1, 3))

    def mask(shape):
        flat = draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        return np.array(flat, dtype=bool).reshape(shape)

    reusable = mask((n_gt,))
    gt_ignored = mask((n_area, n_gt)) | reusable[None, :]
    thresholds = np.array(draw(st.lists(st.sampled_from(IOU_VALUES[1:]), min_size=1, max_size=4)))
    args = (pair_det.astype(np.int64), pair_gt.astype(np.int64), pair_iou.astype(np.float64))
    options = dict(
        det_key=det_key,
        n_gt=n_gt,
        iou_thresholds=thresholds,
        gt_is_ignored=gt_ignored,
        gt_is_reusable=reusable,
        gt_is_unmatchable=mask((n_gt,)),
        det_is_out_of_range=mask((n_area, n_det)),
        strict=draw(st.booleans()),
    )
    return args, options


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(matching_problems())
def test_kernel_equals_numpy_property(case):
    args, options = case
    expected = coco_numpy(*args, **options)
    assert_identical(expected, matching.match_coco(*args, **options))
    narrow = coco_kernel(*args, **options, narrow=True)
    if narrow is not None:
        assert_narrow(expected, narrow)


# --------------------------------------------------------------------------------------
# What evaluate passes: cross-check datasets and fixtures
# --------------------------------------------------------------------------------------


@pytest.fixture
def twin_spy(monkeypatch):
    """Every kernel evaluate runs is checked against its twin (tests/support/kernels.py)."""
    return checked_dispatch(monkeypatch)


def _protocols():
    coco = get_protocol("coco")
    return {
        "coco": coco,
        "coco-pycocotools": get_protocol("coco-pycocotools"),
        "strict": coco.replace(name="strict", iou_comparison=">"),
        "one-threshold": coco.replace(name="one", iou_thresholds=[0.5]),
        "at-one": coco.replace(name="at-one", iou_thresholds=[0.9, 1.0]),
        "max-dets": coco.replace(name="max-dets", max_dets=[1, 2, 5]),
    }


DATASETS = {
    **{f"small-{s}": dict(seed=s) for s in range(12)},
    **{
        f"id0-ignore-{s}": dict(seed=s, with_id_zero=True, with_ignore_fields=True) for s in range(3000, 3006)
    },
    "medium": dict(seed=1001, max_images=150, max_classes=30),
    "many-dets": dict(seed=2100, max_images=5, max_classes=3, force_many_dets=True),
}


@needs_kernel
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_kernel_equals_numpy_on_crosscheck_datasets(dataset, twin_spy):
    gt, dt = generate(**DATASETS[dataset])
    for protocol in _protocols().values():
        deteval.evaluate(gt, dt, protocol)
    assert "_cmatch.match_coco" in twin_spy or not dt


@needs_kernel
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize(
    ("gt", "dt", "protocol"),
    [
        ("coco/gt.json", "coco/dt.json", "coco"),
        ("coco/gt.json", "coco/dt_b.json", "coco-pycocotools"),
        ("lvis/gt.json", "lvis/dt.json", "lvis"),
        ("segm/gt.json", "segm/dt.json", "coco"),
        ("keypoints/gt.json", "keypoints/dt.json", "keypoints/three.yaml"),
    ],
)
def test_kernel_equals_numpy_on_fixtures(gt, dt, protocol, twin_spy):
    fixtures = ROOT / "fixtures"
    if protocol.endswith(".yaml"):
        protocol = str(fixtures / protocol)
    elif gt.startswith("segm"):
        protocol = get_protocol(protocol).replace(name="segm", iou_type="segm")
    deteval.evaluate(str(fixtures / gt), str(fixtures / dt), protocol)
    assert "_cmatch.match_coco" in twin_spy


# --------------------------------------------------------------------------------------
# VOC
# --------------------------------------------------------------------------------------


def both_voc(*args, **options) -> tuple[matching.MatchResult, matching.MatchResult | None]:
    return voc_numpy(*args, **options), voc_kernel(*args, **options)


def voc_options(options: dict) -> dict:
    """The COCO problem's arguments that ``match_voc`` takes."""
    return dict(
        n_det=len(options["det_key"]),
        n_gt=options["n_gt"],
        gt_is_ignored=options["gt_is_ignored"],
        det_is_out_of_range=options["det_is_out_of_range"],
    )


VOC_THRESHOLD_SETS = {**THRESHOLD_SETS, "zero": np.array([0.0, 0.5])}


@needs_kernel
@pytest.mark.parametrize("seed", range(10))
def test_narrow_matches_with_more_than_128_lanes(seed):
    """13 area ranges x 10 thresholds: int16 lanes in the narrow layout, the same values."""
    args, options = problem(seed, n_area=13)
    if len(args[0]) == 0 or options["n_gt"] == 0:
        return
    kw = dict(options, iou_thresholds=COCO_THRESHOLDS)
    expected = coco_numpy(*args, **kw)
    assert expected.tp.n_lane == 130
    assert_narrow(expected, coco_kernel(*args, **kw, narrow=True))
    vkw = dict(voc_options(options), iou_thresholds=COCO_THRESHOLDS)
    assert_narrow(voc_numpy(*args, **vkw), voc_kernel(*args, **vkw, narrow=True))


@needs_kernel
@pytest.mark.parametrize("seed", range(200))
def test_voc_kernel_equals_numpy_on_random_groups(seed):
    args, options = problem(seed, n_area=1 + seed % 4)
    for thresholds in VOC_THRESHOLD_SETS.values():
        for strict in (False, True):
            kw = dict(voc_options(options), iou_thresholds=thresholds, strict=strict)
            expected, found = both_voc(*args, **kw)
            if len(args[0]) == 0 or options["n_gt"] == 0:
                assert found is None
                continue
            assert_identical(expected, found)
            assert_identical(expected, matching.match_voc(*args, **kw))
            assert_narrow(expected, voc_kernel(*args, **kw, narrow=True))


@needs_kernel
@pytest.mark.parametrize("seed", range(60))
def test_voc_kernel_equals_numpy_on_crowded_groups(seed):
    args, options = crowded_problem(seed)
    shuffle = np.random.default_rng(seed).permutation(len(args[0]))  # pairs in any order
    for case in (args, tuple(a[shuffle] for a in args)):
        for thresholds in VOC_THRESHOLD_SETS.values():
            for strict in (False, True):
                kw = dict(voc_options(options), iou_thresholds=thresholds, strict=strict)
                assert_identical(*both_voc(*case, **kw))


@needs_kernel
def test_voc_kernel_declines_inputs_outside_its_assumptions():
    args, options = crowded_problem(5)
    base = dict(voc_options(options), iou_thresholds=COCO_THRESHOLDS)
    pair_det, pair_gt, pair_iou = args
    cases = [
        (args, dict(base, iou_thresholds=np.array([-np.inf, 0.5]))),  # passes detections without a GT
        (args, dict(base, iou_thresholds=np.array([np.nan]))),
        ((pair_det, pair_gt, pair_iou.astype(np.longdouble)), base),
        (args, dict(base, gt_is_ignored=base["gt_is_ignored"].astype(np.int8))),
        ((pair_det, pair_gt + 1000, pair_iou), base),  # GT rows out of range
    ]
    for case_args, case_options in cases:
        assert voc_kernel(*case_args, **case_options) is None


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(matching_problems())
def test_voc_kernel_equals_numpy_property(case):
    args, options = case
    kw = dict(voc_options(options), iou_thresholds=options["iou_thresholds"], strict=options["strict"])
    expected = voc_numpy(*args, **kw)
    assert_identical(expected, matching.match_voc(*args, **kw))
    narrow = voc_kernel(*args, **kw, narrow=True)
    if narrow is not None:
        assert_narrow(expected, narrow)


@pytest.fixture
def voc_twin_spy(monkeypatch):
    """Every kernel evaluate runs is checked against its twin (tests/support/kernels.py)."""
    return checked_dispatch(monkeypatch)


@needs_kernel
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize("seed", range(8))
def test_voc_kernel_equals_numpy_on_crosscheck_datasets(seed, tmp_path, voc_twin_spy):
    root, results = write_voc(tmp_path, generate_voc(seed))
    for preset in ("voc2007", "voc2010", "voc2007-pyfrcnn", "voc2010-pyfrcnn"):
        deteval.evaluate(root, results, protocol=preset)
    gt, dt = generate(seed)
    deteval.evaluate(
        gt,
        dt,
        get_protocol("voc2010").replace(name="voc-areas", area_ranges=_protocols()["coco"].area_ranges),
    )
    assert "_cmatch.match_voc" in voc_twin_spy
