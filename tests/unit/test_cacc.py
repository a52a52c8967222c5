"""The compiled point-sampled accumulation (``deteval/_cacc.c``) against its numpy twin, bit for bit.

``accumulate`` runs the kernel for ``101_point`` and ``11_point`` under ``score_ties: ranked``
when it was built and ``DETEVAL_NO_EXTENSION`` is not set; the numpy code
(``_accumulate_numpy``) is the reference. Every array of the ``Accumulated`` must be identical
(the float64 bits, NaN positions included, dtype and shape) on generated match tables (ties,
ignored detections, classes without detections or without positives, detections beyond
``max_dets``, several area ranges and thresholds), on the tables ``evaluate`` builds for the
cross-check datasets, the fixtures and the 5k benchmark data (when present), and under a
hypothesis property. Without the extension the comparisons are skipped (the loading rules and the
shared special-value cases: tests/unit/test_kernels.py).
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deteval
from deteval import _speedups
from deteval import accumulate as acc_module
from deteval.matching import LaneFlags
from deteval.protocol import get_protocol
from tests import ROOT
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_voc import generate_voc, write_voc
from tests.support.kernels import checked_dispatch, twins_only
from tests.support.kernels import needs_kernel as kernel_built

needs_kernel = kernel_built("deteval._cacc")

EVALUATE_MODULE = importlib.import_module("deteval.evaluate.scoring")  # where score() looks accumulate up
FIELDS = [field.name for field in dataclasses.fields(acc_module.Accumulated)]
BENCH_5K = Path("/tmp/deteval-bench/coco-synth-v2-seed0-n5000")


def assert_identical(expected: acc_module.Accumulated, found: acc_module.Accumulated | None) -> None:
    assert found is not None
    for name in FIELDS:
        want, got = getattr(expected, name), getattr(found, name)
        assert got.dtype == want.dtype == np.float64, name
        assert got.shape == want.shape, name
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), name


def both(*args, protocol, rec_thr=None):
    """(numpy, compiled) accumulation of one match table."""
    if rec_thr is None:
        rec_thr = acc_module.recall_thresholds(protocol)
    return (
        acc_module._accumulate_numpy(*args, protocol, rec_thr),
        acc_module._accumulate_compiled(*args, protocol, rec_thr),
    )


def _protocols() -> dict:
    coco = get_protocol("coco")
    return {
        "coco": coco,
        "coco-pycocotools": get_protocol("coco-pycocotools"),
        "coco50": get_protocol("coco50"),
        "lvis-fixed-ap": get_protocol("lvis-fixed-ap").replace(name="fixed-ap", federated_labels="ignore"),
        "voc2007": get_protocol("voc2007"),
        "voc2007-pyfrcnn": get_protocol("voc2007-pyfrcnn"),
        "detectron2-voc": get_protocol("detectron2-voc"),
        "max-dets": coco.replace(name="max-dets", max_dets=[1, 2, 5]),
        "coco-11": coco.replace(name="coco-11", ap_method="11_point"),
    }


PROTOCOLS = _protocols()


# --------------------------------------------------------------------------------------
# Generated match tables
# --------------------------------------------------------------------------------------


def random_table(seed: int, n_area: int, n_thr: int):
    """A match table as ``evaluate`` passes it: ranking grouped by class, scores descending."""
    rng = np.random.default_rng(seed)
    n_det = int(rng.integers(0, 300))
    n_class = int(rng.integers(1, 7))
    n_lane = n_area * n_thr
    # Index columns as match tables hold them (int32) or wide (int64): the kernel reads both.
    det_class = rng.integers(0, n_class, n_det).astype((np.int32, np.int64)[seed % 2])
    det_score = (
        rng.choice(np.array([0.9, 0.5, 0.5, 0.25, 0.1]), n_det) if seed % 3 == 0 else rng.random(n_det)
    )
    det_rank = rng.integers(0, 12, n_det).astype((np.int32, np.int64)[seed // 2 % 2])
    outcome = rng.integers(0, 3, (n_lane, n_det))  # 0 FP, 1 TP, 2 ignored
    # Thresholds of one area: a TP at a higher threshold is a TP at the lower ones (mostly).
    det_is_tp = outcome == 1
    det_is_ignored = outcome == 2
    det_is_ignored[:, rng.random(n_det) < 0.2] = True
    if seed % 7:  # a detection is a TP, an FP or ignored; every 7th table breaks that (same formula)
        det_is_tp &= ~det_is_ignored
    # The ranking as evaluate's compiled counting sort gives it (int32) or as numpy does (int64).
    ranking = np.lexsort((-det_score, det_class)).astype((np.int64, np.int32)[seed // 4 % 2])
    n_positive = rng.integers(0, 30, (n_class, n_area)).astype(np.int64)
    n_positive[rng.random((n_class, n_area)) < 0.15] = 0
    return det_is_tp, det_is_ignored, det_score, det_class, det_rank, ranking, n_positive


@needs_kernel
@pytest.mark.parametrize("seed", range(120))
def test_kernel_equals_numpy_on_random_tables(seed):
    for name in ("coco", "max-dets", "coco50", "voc2007", "voc2007-pyfrcnn", "lvis-fixed-ap", "coco-11"):
        protocol = PROTOCOLS[name]
        n_area = len(protocol.area_ranges) if protocol.area_ranges else 1
        table = random_table(seed, n_area, len(protocol.iou_thresholds))
        assert_identical(*both(*table, protocol=protocol))


@needs_kernel
@pytest.mark.parametrize("n_class", [15, 16, 17, 33, 80])
def test_kernel_equals_numpy_across_class_blocks_and_threads(n_class):
    """Tables of more classes than the kernel's block of 16 give the numpy code's arrays.

    Classes are finished in blocks and copied out a block at a time, each part its own (a part's
    last block short, parts cut inside blocks): 1, 2, 3 and 7 threads, NaN classes included.
    """
    rng = np.random.default_rng(n_class)
    protocol = PROTOCOLS["coco"]
    n_area, n_thr = len(protocol.area_ranges), len(protocol.iou_thresholds)
    n_det = 40 * n_class
    det_class = np.sort(rng.integers(0, n_class, n_det)).astype(np.int32)
    det_class[det_class == n_class // 2] = n_class // 3  # a class without detections
    det_score = rng.random(n_det)
    det_rank = rng.integers(0, 120, n_det).astype(np.int32)
    outcome = rng.integers(0, 3, (n_area * n_thr, n_det))
    det_is_tp, det_is_ignored = outcome == 1, outcome == 2
    ranking = np.lexsort((-det_score, det_class)).astype(np.int32)
    n_positive = rng.integers(0, 30, (n_class, n_area)).astype(np.int64)
    n_positive[rng.random((n_class, n_area)) < 0.15] = 0
    n_positive[n_class - 1] = 0  # the last class: NaN everywhere
    args = (det_is_tp, det_is_ignored, det_score, det_class, det_rank, ranking, n_positive, protocol)
    rec_thr = acc_module.recall_thresholds(protocol)
    expected = acc_module._accumulate_numpy(*args, rec_thr)
    for threads in (1, 2, 3, 7):
        assert_identical(expected, acc_module._accumulate_compiled(*args, rec_thr, threads=threads))


@needs_kernel
@pytest.mark.parametrize("seed", range(40))
def test_kernel_reads_packed_lanes_as_the_bool_tables(seed):
    """A match table's LaneFlags go to the kernel as they are: the numpy code on the bool tables agrees."""
    for name in ("coco", "coco50", "voc2007", "coco-11"):
        protocol = PROTOCOLS[name]
        n_area = len(protocol.area_ranges) if protocol.area_ranges else 1
        det_is_tp, det_is_ignored, *rest = random_table(seed, n_area, len(protocol.iou_thresholds))
        rec_thr = acc_module.recall_thresholds(protocol)
        expected = acc_module._accumulate_numpy(det_is_tp, det_is_ignored, *rest, protocol, rec_thr)
        tp, ignored = LaneFlags.pack(det_is_tp), LaneFlags.pack(det_is_ignored)
        assert_identical(expected, acc_module._accumulate_compiled(tp, ignored, *rest, protocol, rec_thr))
        assert_identical(expected, acc_module._accumulate_numpy(tp, ignored, *rest, protocol, rec_thr))
        assert_identical(expected, acc_module.accumulate(tp, ignored, *rest, protocol))


@needs_kernel
@pytest.mark.parametrize("seed", range(20))
def test_kernel_equals_numpy_with_other_recall_points(seed):
    protocol = PROTOCOLS["coco"]
    table = random_table(seed, 4, 10)
    rng = np.random.default_rng(seed)
    grids = [
        np.array([0.0]),
        np.array([1.0]),
        np.sort(rng.random(7)),
        np.array([0.0, 0.0, 0.3, 0.3, 1.0, 1.0]),
        np.linspace(0, 1, 11),
        np.sort(rng.random(16)),  # the AP's pairwise sum: two blocks of eight
        np.sort(rng.random(300)),  # beyond 128 points: the sum in halves
    ]
    for grid in grids:
        assert_identical(*both(*table, protocol=protocol, rec_thr=grid))


@needs_kernel
def test_kernel_declines_what_it_does_not_handle():
    protocol = PROTOCOLS["coco"]
    table = random_table(5, 4, 10)
    det_is_tp, det_is_ignored, det_score, det_class, det_rank, ranking, n_positive = table
    rec_thr = acc_module.recall_thresholds(protocol)

    def changed(index: int, value: np.ndarray) -> tuple:
        return (*table[:index], value, *table[index + 1 :])

    cases = [
        (table, protocol.replace(name="tie", score_ties="threshold"), rec_thr),
        (table, get_protocol("voc2010"), rec_thr),
        (table, protocol, np.array([0.5, 0.1, 0.9])),  # needed counts decrease along the recall points
        (table, protocol, np.array([np.nan, 0.5])),
        (table, protocol, np.zeros(0)),
        (changed(5, ranking[::-1].copy()), protocol, rec_thr),  # classes not in increasing order
        (changed(2, det_score.astype(np.float32)), protocol, rec_thr),
        (changed(0, det_is_tp.astype(np.int8)), protocol, rec_thr),
        (changed(3, det_class + 100), protocol, rec_thr),  # classes out of range
        (changed(5, ranking + 10_000), protocol, rec_thr),  # rows out of range
        (changed(5, np.sort(np.concatenate([ranking[:1], ranking]))), protocol, rec_thr),  # a row twice
    ]
    for args, case_protocol, grid in cases:
        assert isinstance(acc_module._accumulate_compiled(*args, case_protocol, grid), _speedups.Decline)


@needs_kernel
@pytest.mark.parametrize("seed", range(8))
def test_kernel_reads_int32_and_int64_index_columns_alike(seed):
    protocol = PROTOCOLS["max-dets"]
    det_is_tp, det_is_ignored, det_score, det_class, det_rank, ranking, n_positive = random_table(seed, 4, 10)
    rec_thr = acc_module.recall_thresholds(protocol)
    expected = acc_module._accumulate_numpy(
        det_is_tp, det_is_ignored, det_score, det_class, det_rank, ranking, n_positive, protocol, rec_thr
    )
    for class_dtype in (np.int32, np.int64, np.uint16):
        for rank_dtype in (np.int32, np.int64, np.int16):
            for ranking_dtype in (np.int32, np.int64, np.intp, np.uint32):
                found = acc_module._accumulate_compiled(
                    det_is_tp,
                    det_is_ignored,
                    det_score,
                    det_class.astype(class_dtype),
                    det_rank.astype(rank_dtype),
                    ranking.astype(ranking_dtype),
                    n_positive,
                    protocol,
                    rec_thr,
                )
                assert_identical(expected, found)


@needs_kernel
def test_kernel_does_not_mutate_inputs():
    table = random_table(9, 4, 10)
    copies = [np.copy(a) for a in table]
    both(*table, protocol=PROTOCOLS["coco"])
    for before, after in zip(copies, table, strict=True):
        assert np.array_equal(before, after)


@needs_kernel
def test_accumulate_with_and_without_kernel(monkeypatch):
    table = random_table(3, 4, 10)
    with_kernel = acc_module.accumulate(*table, PROTOCOLS["coco"])
    twins_only(monkeypatch, "deteval._cacc")
    assert_identical(acc_module.accumulate(*table, PROTOCOLS["coco"]), with_kernel)


# --------------------------------------------------------------------------------------
# Hypothesis
# --------------------------------------------------------------------------------------


@st.composite
def tables(draw):
    n_area = draw(st.integers(1, 3))
    n_thr = draw(st.integers(1, 3))
    n_class = draw(st.integers(1, 3))
    n_det = draw(st.integers(0, 25))
    outcome = np.array(
        draw(st.lists(st.integers(0, 2), min_size=n_det * n_area * n_thr, max_size=n_det * n_area * n_thr)),
        dtype=np.int64,
    ).reshape(n_area * n_thr, n_det)
    det_class = np.array(
        draw(st.lists(st.integers(0, n_class - 1), min_size=n_det, max_size=n_det)), np.int64
    )
    det_score = np.array(
        draw(st.lists(st.sampled_from([0.1, 0.5, 0.7, 0.9]), min_size=n_det, max_size=n_det))
    )
    det_rank = np.array(draw(st.lists(st.integers(0, 4), min_size=n_det, max_size=n_det)), np.int64)
    n_positive = np.array(
        draw(st.lists(st.integers(0, 6), min_size=n_class * n_area, max_size=n_class * n_area)), np.int64
    ).reshape(n_class, n_area)
    ranking = np.lexsort((-det_score, det_class)).astype(np.int64)
    max_dets = draw(st.sampled_from([None, (1,), (1, 3), (2, 100)]))
    ap_method = draw(st.sampled_from(["101_point", "11_point"]))
    protocol = get_protocol("coco").replace(
        name="generated",
        iou_thresholds=[0.5 + 0.1 * t for t in range(n_thr)],
        area_ranges=get_protocol("coco").area_ranges[:n_area],
        max_dets=max_dets,
        ap_method=ap_method,
    )
    table = (outcome == 1, outcome == 2, det_score, det_class, det_rank, ranking, n_positive)
    return table, protocol


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(tables())
def test_kernel_equals_numpy_property(case):
    table, protocol = case
    assert_identical(*both(*table, protocol=protocol))


# --------------------------------------------------------------------------------------
# What evaluate passes: cross-check datasets, fixtures, the benchmark data
# --------------------------------------------------------------------------------------


@pytest.fixture
def twin_spy(monkeypatch):
    """Every kernel evaluate runs is checked against its twin (tests/support/kernels.py)."""
    return checked_dispatch(monkeypatch)


DATASETS = {
    **{f"small-{s}": dict(seed=s) for s in range(10)},
    **{
        f"id0-ignore-{s}": dict(seed=s, with_id_zero=True, with_ignore_fields=True) for s in range(3000, 3004)
    },
    "medium": dict(seed=1001, max_images=150, max_classes=30),
    "many-dets": dict(seed=2100, max_images=5, max_classes=3, force_many_dets=True),
}


@needs_kernel
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_kernel_equals_numpy_on_crosscheck_datasets(dataset, twin_spy):
    gt, dt = generate(**DATASETS[dataset])
    for protocol in PROTOCOLS.values():
        deteval.evaluate(gt, dt, protocol)
    assert "_cacc.accumulate" in twin_spy


@needs_kernel
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize("seed", range(6))
def test_kernel_equals_numpy_on_voc_datasets(seed, tmp_path, twin_spy):
    root, results = write_voc(tmp_path, generate_voc(seed))
    for preset in ("voc2007", "voc2007-pyfrcnn", "detectron2-voc"):
        deteval.evaluate(root, results, protocol=preset)
    assert "_cacc.accumulate" in twin_spy


@needs_kernel
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.parametrize(
    ("gt", "dt", "protocol"),
    [
        ("coco/gt.json", "coco/dt.json", "coco"),
        ("coco/gt.json", "coco/dt_b.json", "coco-pycocotools"),
        ("lvis/gt.json", "lvis/dt.json", "lvis"),
        ("keypoints/gt.json", "keypoints/dt.json", "keypoints/three.yaml"),
    ],
)
def test_kernel_equals_numpy_on_fixtures(gt, dt, protocol, twin_spy):
    fixtures = ROOT / "fixtures"
    if protocol.endswith(".yaml"):
        protocol = str(fixtures / protocol)
    deteval.evaluate(str(fixtures / gt), str(fixtures / dt), protocol)
    assert "_cacc.accumulate" in twin_spy


@needs_kernel
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@pytest.mark.skipif(not (BENCH_5K / "results_bbox.json").exists(), reason="5k benchmark data not generated")
def test_kernel_equals_numpy_on_5k_benchmark(twin_spy):
    deteval.evaluate(str(BENCH_5K / "instances.json"), str(BENCH_5K / "results_bbox.json"), "coco")
    assert "_cacc.accumulate" in twin_spy
