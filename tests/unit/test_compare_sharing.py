"""compare's shared work, checked against separate runs array for array.

A MatchCache gives one protocol another's matching in two ways besides the matching key:
ground-truth rules that flag this ground truth alike (``coco`` / ``coco-pycocotools`` on data
without ``ignore: 1`` or annotation id 0), and a table restricted to some of its lanes
(``coco50`` from ``coco``). Each must give exactly the arrays of its own matching.
"""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

import deteval
from deteval.errors import ConfigError
from deteval.evaluate import match, merge_match_tables, score
from deteval.explain import MatchCache, compare, matching_key, restrict_lanes
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import PRESETS
from tests import ROOT
from tests.crosscheck.generate import generate

# The API warns about what the generated data has (classes without ground truth, detections over
# max_dets, pycocotools' bugs): incidental here, the results' warnings are compared instead.
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
]

explain_module = importlib.import_module("deteval.explain.cache")  # MatchCache looks match and score up there

SIX = ["coco", "coco50", "voc2007", "voc2010", "ultralytics", "coco-pycocotools"]
SEEDS = [0, 1, 2, 5, 11]


def load(seed: int, **options):
    gt_dict, dt_list = generate(seed, force_many_dets=seed % 2 == 0, **options)
    gt = load_ground_truth(gt_dict)
    return gt, load_detections(dt_list, gt)


def assert_same_table(a, b, where=""):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, (where, f.name)
            assert x.shape == y.shape, (where, f.name)
        assert np.array_equal(x, y), (where, f.name)


def assert_same_result(a, b):
    for name in ("precision", "recall", "scores", "ap"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert x.shape == y.shape, name
        assert np.array_equal(x, y, equal_nan=True), name
        assert np.array_equal(np.isnan(x), np.isnan(y)), name
    np.testing.assert_equal(a.metrics, b.metrics)  # NaN == NaN here
    np.testing.assert_equal(a.per_class, b.per_class)
    assert a.warnings == b.warnings
    assert a.notes == b.notes
    assert a.protocol == b.protocol


# --------------------------------------------------------------------------------------------
# Restricted lanes
# --------------------------------------------------------------------------------------------

COCO = PRESETS["coco"]
LANE_PAIRS = [
    (COCO, PRESETS["coco50"]),
    (
        COCO,
        COCO.replace(
            name="c75", iou_thresholds=(COCO.iou_thresholds[5],), max_dets=(100,), summary="configured"
        ),
    ),
    (
        COCO,
        COCO.replace(
            name="c-sub",
            iou_thresholds=COCO.iou_thresholds[::3],
            area_ranges=COCO.area_ranges[2:],
            summary="configured",
        ),
    ),
    (
        PRESETS["voc2007"].replace(name="v3", iou_thresholds=(0.3, 0.5, 0.7)),
        PRESETS["voc2010"],
    ),
    (
        PRESETS["ultralytics"],
        PRESETS["ultralytics"].replace(name="u50", iou_thresholds=(0.5,), summary="configured"),
    ),
    (
        PRESETS["openimages"].replace(name="oi2", iou_thresholds=(0.5, 0.75)),
        PRESETS["openimages"],
    ),
    (
        COCO.replace(name="c-renamed", area_ranges=(("everything", 0.0, 1e10), ("big", 9216.0, 1e10))),
        COCO.replace(name="c-big", area_ranges=(("large", 9216.0, 1e10),), summary="configured"),
    ),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("source", "target"), LANE_PAIRS, ids=lambda p: p.name)
def test_a_restricted_table_is_the_matching_of_its_lanes(seed, source, target):
    gt, dt = load(seed)
    cache = MatchCache(gt, dt)
    cache.table(source)
    assert_same_table(cache.table(target), match(gt, dt, target), target.name)
    assert cache.n_computed == 1
    assert_same_result(cache.result(target), score(match(gt, dt, target), gt, target))


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_restricting_a_table_merged_from_shards_is_the_merged_restriction(seed):
    gt, dt = load(seed)
    halves = np.arange(gt.n_images) % 2 == 0
    shards = [halves, ~halves]
    source, target = COCO, PRESETS["coco50"]
    lanes, areas = np.array([0]), np.array([0])
    merged = merge_match_tables([match(gt, dt, source, images=s) for s in shards])
    expected = merge_match_tables([match(gt, dt, target, images=s) for s in shards])
    assert_same_table(restrict_lanes(merged, lanes, areas), expected)


def test_lanes_out_of_order_are_matched_on_their_own(monkeypatch):
    gt, dt = load(2)
    calls = []

    def counting_match(gt, dt, protocol):
        calls.append(protocol.name)
        return match(gt, dt, protocol)

    monkeypatch.setattr(explain_module, "match", counting_match)
    cache = MatchCache(gt, dt)
    cache.table(COCO)
    reversed_areas = COCO.replace(name="reversed", area_ranges=COCO.area_ranges[::-1])
    other_threshold = COCO.replace(
        name="t-0.45", iou_thresholds=(0.45,), max_dets=(100,), summary="configured"
    )
    assert_same_table(cache.table(reversed_areas), match(gt, dt, reversed_areas))
    assert_same_table(cache.table(other_threshold), match(gt, dt, other_threshold))
    assert calls == ["coco", "reversed", "t-0.45"]


def test_other_settings_are_never_restricted(monkeypatch):
    """Same lanes but another cap, crowd rule or box convention: a matching of its own."""
    gt, dt = load(0)
    cache = MatchCache(gt, dt)
    cache.table(COCO)
    for other in (
        PRESETS["coco50"].replace(max_dets=(10,)),
        PRESETS["coco50"].replace(crowd="none"),
        PRESETS["coco50"].replace(box_convention="pixel_inclusive"),
    ):
        assert_same_table(cache.table(other), match(gt, dt, other))
    assert cache.n_computed == 4


def test_restrict_lanes_refuses_lanes_out_of_order():
    gt, dt = load(1)
    table = match(gt, dt, COCO)
    with pytest.raises(ConfigError, match=r"expected strictly increasing lanes in \[0, 40\), found \[3, 1\]"):
        restrict_lanes(table, np.array([3, 1]), np.array([0]))
    with pytest.raises(ConfigError, match=r"found \[40\]"):
        restrict_lanes(table, np.array([40]), np.array([0]))


# --------------------------------------------------------------------------------------------
# Ground-truth rules that flag this ground truth alike
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_rules_share_a_matching_where_the_ground_truth_is_plain(seed):
    gt, dt = load(seed)
    assert not (gt.is_ignore & ~gt.is_crowd).any()
    assert not (gt.annotation_id == 0).any()
    cache = MatchCache(gt, dt)
    pycoco = PRESETS["coco-pycocotools"]
    assert cache.key(COCO) == cache.key(pycoco)
    assert matching_key(COCO) != matching_key(pycoco)
    assert_same_table(match(gt, dt, COCO), match(gt, dt, pycoco))
    assert cache.table(pycoco) is cache.table(COCO)


@pytest.mark.parametrize("options", [{"with_id_zero": True}, {"with_ignore_fields": True}])
def test_parity_rules_match_apart_where_they_flag_differently(options):
    for seed in range(40):  # the first seed whose ground truth triggers the bug
        gt, dt = load(seed, **options)
        if (gt.annotation_id == 0).any() or (gt.is_ignore & ~gt.is_crowd).any():
            break
    else:
        pytest.fail(f"no generated ground truth with {options}")
    cache = MatchCache(gt, dt)
    pycoco = PRESETS["coco-pycocotools"]
    assert cache.key(COCO) != cache.key(pycoco)
    assert_same_table(cache.table(pycoco), match(gt, dt, pycoco))
    assert cache.n_computed == 1
    cache.table(COCO)
    assert cache.n_computed == 2


def test_each_parity_rule_is_canonical_on_its_own():
    """Id 0 present but no lost ignore: only gt_ignore_field is keyed at its first value."""
    for seed in range(40):
        gt, dt = load(seed, with_id_zero=True)
        if (gt.annotation_id == 0).any() and not (gt.is_ignore & ~gt.is_crowd).any():
            break
    else:
        pytest.fail("no generated ground truth with id 0 alone")
    cache = MatchCache(gt, dt)
    pycoco = PRESETS["coco-pycocotools"]
    assert cache.key(pycoco) == cache.key(pycoco.replace(gt_ignore_field="honour"))
    assert cache.key(pycoco) != cache.key(pycoco.replace(gt_id_zero="matchable"))


# --------------------------------------------------------------------------------------------
# compare as a whole
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{}, {"with_id_zero": True}, {"with_ignore_fields": True}])
@pytest.mark.parametrize("seed", SEEDS)
def test_compare_equals_separate_evaluate_runs(seed, options):
    gt, dt = load(seed, **options)
    comparison = compare(gt, dt, [PRESETS[n] for n in SIX], warnings=gt.warnings + dt.warnings)
    for name, result in zip(SIX, comparison.results, strict=True):
        assert_same_result(result, deteval.evaluate(gt, dt, name))


def test_six_presets_need_three_matchings_on_plain_ground_truth(monkeypatch):
    gt, dt = load(0)
    calls = []

    def counting_match(gt, dt, protocol):
        calls.append(protocol.name)
        return match(gt, dt, protocol)

    monkeypatch.setattr(explain_module, "match", counting_match)
    comparison = compare(gt, dt, [PRESETS[n] for n in SIX])
    # most lanes first (coco: 40, ultralytics: 10), so that coco50 restricts coco's table
    assert calls == ["coco", "ultralytics", "voc2007"]
    # coco50 has its own table (restricted), coco-pycocotools shares coco's
    assert comparison.matching_groups == ((0, 5), (1,), (2, 3), (4,))
    assert comparison.results[5].table is comparison.results[0].table


def test_twins_are_scored_once_and_get_their_own_arrays(monkeypatch):
    gt, dt = load(1)
    calls = []

    def counting_score(table, gt, protocol, **kwargs):
        calls.append(protocol.name)
        return score(table, gt, protocol, **kwargs)

    monkeypatch.setattr(explain_module, "score", counting_score)
    renamed = COCO.replace(name="coco-copy", source="the same rules")
    comparison = compare(gt, dt, [COCO, PRESETS["coco-pycocotools"], renamed, PRESETS["coco50"]])
    assert calls == ["coco", "coco50"]
    coco, pycoco, copy, _ = comparison.results
    assert [pycoco.protocol.name, copy.protocol.name] == ["coco-pycocotools", "coco-copy"]
    for twin in (pycoco, copy):
        assert_same_result(twin, score(match(gt, dt, twin.protocol), gt, twin.protocol))
        for name in ("precision", "recall", "scores", "ap"):
            assert not np.shares_memory(getattr(twin, name), getattr(coco, name))
        assert twin.per_class is not coco.per_class
        assert twin.metrics is not coco.metrics
    assert twin.to_dict()["protocol"] == "coco-copy"


def test_no_twins_where_a_warning_tells_them_apart():
    """LVIS federated labels: coco's warning names the protocol, so a renamed copy is scored again."""
    gt = load_ground_truth(str(ROOT / "fixtures" / "lvis" / "gt.json"))
    dt = load_detections(str(ROOT / "fixtures" / "lvis" / "dt.json"), gt)
    renamed = COCO.replace(name="coco-copy")
    comparison = compare(gt, dt, [COCO, renamed])
    assert any("'coco-copy'" in w for w in comparison.results[1].warnings)
    for result in comparison.results:
        assert_same_result(result, score(match(gt, dt, result.protocol), gt, result.protocol))
    for options in ({"with_id_zero": True}, {"with_ignore_fields": True}):
        gt, dt = load(3, **options)
        cache = MatchCache(gt, dt)
        assert cache.score_key(COCO) != cache.score_key(PRESETS["coco-pycocotools"])
