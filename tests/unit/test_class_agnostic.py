"""The protocol field ``class_agnostic``: sparse, validated, applied on every scoring path.

The numbers themselves are checked against pycocotools' ``useCats = 0`` in
``tests/crosscheck/test_class_agnostic_pycocotools.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import deteval
import deteval.diagnose
from deteval import api
from deteval.cli import main
from deteval.errors import ConfigError
from deteval.evaluate import match, score
from deteval.geometry import prepare_masks
from deteval.io import load_detections, load_ground_truth
from deteval.pooling import ground_truth_for, is_pooled, pool_categories, pooled_for
from deteval.protocol import PRESETS, get_protocol, load_protocol_text
from deteval.protocol.yaml_dump import dump_protocol
from tests import ROOT
from tests.crosscheck.generate import generate

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

GT = ROOT / "fixtures" / "coco" / "gt.json"
DT = ROOT / "fixtures" / "coco" / "dt.json"

CONFUSED_GT = {
    "images": [{"id": 1, "width": 100, "height": 100}],
    "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "area": 2500, "iscrowd": 0}
    ],
}
CONFUSED_DT = [{"image_id": 1, "category_id": 2, "bbox": [0, 0, 50, 50], "score": 0.9}]


def agnostic(name="coco", **changes):
    return get_protocol(name).replace(class_agnostic=True, **changes)


def data(seed=3, **options):
    gt_dict, dt_list = generate(seed, **options)
    gt = load_ground_truth(gt_dict)
    return gt, load_detections(dt_list, gt)


# -- the field ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_sparse_every_preset_keeps_its_hash_and_output(name):
    preset = PRESETS[name]
    assert preset.class_agnostic is False
    assert "class_agnostic" not in preset.to_dict()
    assert preset.replace(class_agnostic=False).fingerprint() == preset.fingerprint()


def test_true_is_written_hashed_and_loads_back():
    p = agnostic()
    assert p.to_dict()["class_agnostic"] is True
    assert p.fingerprint() != PRESETS["coco"].fingerprint()
    text = dump_protocol(p)
    assert "class_agnostic: true" in text
    assert load_protocol_text(text) == p


def test_yaml_and_set_spell_it_as_a_yaml_boolean():
    p = load_protocol_text("extends: coco\nclass_agnostic: true\n")
    assert p.class_agnostic is True
    p = api.resolve_protocols(["coco"], overrides=["class_agnostic=true"])[0]
    assert p.class_agnostic is True


@pytest.mark.parametrize("value", ["true", "yes", 1, 0, None])
def test_other_values_are_refused_with_the_yaml_spelling(value):
    with pytest.raises(ConfigError, match=r"class_agnostic: expected one of false, true, found"):
        get_protocol("coco").replace(class_agnostic=value)


def test_docs_table_row():
    row = next(r for r in deteval.protocol.protocol_table_markdown().splitlines() if "`class_agnostic`" in r)
    assert "`false`, `true` (default `false`)" in row
    assert "| match | matching rule |" in row


def test_lvis_rules_are_refused():
    with pytest.raises(ConfigError, match="class_agnostic pools every category"):
        deteval.check_protocol(agnostic("lvis"))


# -- pooling helpers -----------------------------------------------------------------------------


def test_pooling_is_idempotent_and_passes_pooled_values_through():
    gt, dt = data()
    pg, pd = pooled_for(gt, dt, agnostic())
    assert is_pooled(pg)
    assert not is_pooled(gt)
    assert pooled_for(pg, pd, agnostic()) == (pg, pd)
    assert pooled_for(gt, dt, PRESETS["coco"]) == (gt, dt)
    assert ground_truth_for(pg, agnostic()) is pg
    assert ground_truth_for(gt, PRESETS["coco"]) is gt
    again = pool_categories(pg, pd)
    for field in ("annotation_id", "image", "box"):
        assert np.array_equal(getattr(again[0], field), getattr(pg, field))
    assert np.array_equal(np.argsort(again[1].order), np.argsort(pd.order))


# -- every path ----------------------------------------------------------------------------------


def test_the_field_equals_pooling_the_inputs():
    gt, dt = data(seed=7, max_images=40, max_classes=8)
    result = deteval.evaluate(gt, dt, agnostic())
    pooled = deteval.evaluate(*pool_categories(gt, dt), "coco")
    assert result.category_ids == (-1,)
    assert result.category_names == ("all classes",)
    assert [c["name"] for c in result.per_class] == ["all classes"]
    for field in ("precision", "recall", "scores", "ap"):
        assert np.array_equal(getattr(result, field), getattr(pooled, field), equal_nan=True), field
    assert result.metrics == pooled.metrics


def test_a_right_box_with_the_wrong_class_counts():
    assert deteval.evaluate(CONFUSED_GT, CONFUSED_DT, "coco").metrics["AP"] == 0.0
    assert deteval.evaluate(CONFUSED_GT, CONFUSED_DT, agnostic()).metrics["AP"] == pytest.approx(1.0)


def test_matches_name_the_original_annotations():
    gt, dt = data(seed=11)
    result = deteval.evaluate(gt, dt, agnostic())
    rows = deteval.analysis.matches(result)
    matched = {r["gt_annotation_id"] for r in rows if r["gt_annotation_id"] is not None}
    assert matched
    assert matched <= set(gt.annotation_id.tolist())
    pooled = deteval.evaluate(*pool_categories(gt, dt), "coco")
    assert rows == deteval.analysis.matches(pooled)


def test_segm_masks_prepared_for_the_unpooled_values_are_replaced():
    gt = load_ground_truth(
        {
            "images": [{"id": 1, "width": 20, "height": 20}],
            "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
            "annotations": [
                {"id": 1, "image_id": 1, "category_id": 2, "segmentation": [[0, 0, 10, 0, 10, 10, 0, 10]],
                 "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
                {"id": 2, "image_id": 1, "category_id": 1, "segmentation": [[10, 10, 20, 10, 20, 20, 10, 20]],
                 "bbox": [10, 10, 10, 10], "area": 100, "iscrowd": 0},
            ],
        }
    )  # fmt: skip
    dt = load_detections(
        [{"image_id": 1, "category_id": 1, "segmentation": [[0, 0, 10, 0, 10, 10, 0, 10]], "score": 0.9}], gt
    )
    protocol = agnostic(iou_type="segm", mask_iou="raster")
    table = match(gt, dt, protocol, masks=prepare_masks(gt, dt, protocol))
    assert score(table, gt, protocol).metrics["AP50"] == pytest.approx(51 / 101)  # 1 of 2 objects found
    assert np.array_equal(table.det_is_tp, match(*pool_categories(gt, dt), protocol).det_is_tp)


def test_cli_evaluate_set_and_bootstrap(capsys, tmp_path):
    out = tmp_path / "r.json"
    code = main(
        ["evaluate", "--gt", str(GT), "--dt", str(DT), "--set", "class_agnostic=true", "--bootstrap", "20",
         "--format", "json", "--output", str(out)]
    )  # fmt: skip
    capsys.readouterr()
    assert code == 0
    doc = json.loads(out.read_text())
    result = doc["results"][0]
    assert result["config"]["class_agnostic"] is True
    assert [c["name"] for c in result["per_class"]] == ["all classes"]
    assert result["metrics_ci"]["AP"] is not None


def test_compare_explain_attributes_it_to_the_matching_rule():
    explanation = api.explain(CONFUSED_GT, CONFUSED_DT, "coco", agnostic().replace(name="coco-agnostic"))
    steps = {s.name: s for s in explanation.steps}
    assert list(steps) == ["matching rule"]
    assert steps["matching rule"].changes == (("class_agnostic", False, True),)
    assert steps["matching rule"].change == pytest.approx(1.0)
    assert explanation.total == pytest.approx(1.0)


def test_the_evaluator_refuses_it():
    with pytest.raises(ConfigError, match="class_agnostic: true, which the Evaluator does not support"):
        deteval.Evaluator(agnostic())


def test_analyze_pools_all_three_parts():
    gt = load_ground_truth(CONFUSED_GT)
    dt = load_detections(CONFUSED_DT, gt)
    found = deteval.diagnose.analyze(gt, dt, agnostic(), tide_mode="protocol")
    assert [c["name"] for c in found.errors.per_class] == ["all classes"]
    assert found.errors.ap == pytest.approx(1.0)
    assert found.decomposition.mean["AP_D"] == pytest.approx(1.0)
    assert found.confusion.labels == ("all classes", "background")
    assert found.confusion.matrix.tolist() == [[1, 0], [0, 0]]
