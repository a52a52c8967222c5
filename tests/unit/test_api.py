"""The front door (deteval.api).

Paths, dicts and values give one result; protocols by name, YAML file or value; warnings emitted
with the right category and stacklevel, kept in the result.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import deteval
from deteval import api
from deteval.errors import ConfigError, InputWarning, UndefinedMetricWarning
from tests import ROOT

GT = ROOT / "fixtures" / "coco" / "gt.json"
DT = ROOT / "fixtures" / "coco" / "dt.json"
BIRD = "1 class has no ground truth"  # fixtures/coco: 'bird' has no ground truth

# One image, two GTs; one detection on GT 1, none on GT 2 (zero-width GT 2: an InputWarning).
ZERO_WIDTH_GT = {
    "images": [{"id": 1, "width": 100, "height": 100}],
    "categories": [{"id": 1, "name": "cat"}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 0, 10], "area": 0, "iscrowd": 0},
    ],
}
ONE_DT = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]


def _same(a: deteval.EvalResult, b: deteval.EvalResult) -> None:
    assert a.metrics == b.metrics or all(
        (x == y) or (np.isnan(x) and np.isnan(y)) for x, y in zip(a.metrics.values(), b.metrics.values())
    )
    np.testing.assert_array_equal(a.precision, b.precision)
    np.testing.assert_array_equal(a.recall, b.recall)
    assert a.warnings == b.warnings
    assert a.notes == b.notes


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
def test_path_dict_and_values_give_equal_results():
    by_path = api.evaluate(str(GT), str(DT), "coco")
    by_pathlib = api.evaluate(GT, DT, "coco")
    gt_dict = json.loads(GT.read_text())
    dt_list = json.loads(DT.read_text())
    by_dict = api.evaluate(gt_dict, dt_list, "coco")
    gt = deteval.load_ground_truth(gt_dict)
    by_value = api.evaluate(gt, deteval.load_detections(dt_list, gt), "coco")
    for other in (by_pathlib, by_dict, by_value):
        _same(by_path, other)


def test_package_exports_the_front_door():
    assert deteval.evaluate is api.evaluate
    assert deteval.compare is api.compare
    assert deteval.explain is api.explain
    assert deteval.validate is api.validate
    assert deteval.resolve_protocol is api.resolve_protocol


def test_resolve_protocol_by_name_yaml_path_and_value(tmp_path):
    coco = api.resolve_protocol("coco")
    assert api.resolve_protocol(coco) is coco
    path = tmp_path / "loose.yaml"
    path.write_text("extends: voc2010\niou_thresholds: [0.3]\n")
    for spelled in (str(path), path):
        p = api.resolve_protocol(spelled)
        assert p.iou_thresholds == (0.3,)
        assert p.ap_method == "all_point"
        assert p.name == "loose"
    with pytest.raises(ConfigError):
        api.resolve_protocol("no-such-preset")


def test_resolve_protocols_applies_overrides_to_each():
    a, b = api.resolve_protocols(["voc2007", "voc2010"], overrides=["iou_thresholds=[0.3]"], iou_type="bbox")
    assert a.iou_thresholds == b.iou_thresholds == (0.3,)
    assert [p.name for p in api.resolve_protocols(None)] == ["coco"]
    with pytest.raises(ConfigError, match="expected FIELD=VALUE"):
        api.resolve_protocols(["coco"], overrides=["iou_thresholds"])


def test_evaluate_warns_input_warning_at_the_callers_line():
    with pytest.warns(InputWarning, match="zero area") as record:
        result = api.evaluate(ZERO_WIDTH_GT, ONE_DT, "voc2010")
    found = [w for w in record if issubclass(w.category, InputWarning)]
    assert len(found) == 1
    assert found[0].filename == __file__
    # still in the value and in its JSON entry, exactly as before
    assert len(result.warnings) == 1
    assert "zero area" in result.warnings[0]
    assert result.to_dict()["warnings"] == list(result.warnings)


def test_undefined_class_is_an_undefined_metric_warning_and_a_note():
    with pytest.warns(UndefinedMetricWarning, match=BIRD) as record:
        result = api.evaluate(GT, DT, "voc2010")
    assert all(w.filename == __file__ for w in record)
    assert not any(issubclass(w.category, InputWarning) for w in record)
    assert result.notes
    assert BIRD in result.notes[0]
    assert result.to_dict()["notes"] == list(result.notes)


def test_strict_filter_makes_every_input_warning_one_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        with pytest.raises(InputWarning, match="zero area") as info:
            api.evaluate(ZERO_WIDTH_GT, ONE_DT, "voc2010")
    assert len(info.value.messages) == 1


def test_one_error_names_every_message_of_the_batch():
    gt = json.loads(json.dumps(ZERO_WIDTH_GT))
    del gt["annotations"][0]["iscrowd"]  # a second input warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        with pytest.raises(InputWarning) as info:
            api.load_inputs(gt, ONE_DT)
    assert len(info.value.messages) == 2
    assert "zero area" in str(info.value)
    assert "iscrowd" in str(info.value)


def test_values_below_the_api_do_not_warn():
    gt = deteval.load_ground_truth(ZERO_WIDTH_GT)
    dt = deteval.load_detections(ONE_DT, gt)
    p = deteval.get_protocol("voc2010")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = deteval.score(deteval.match(gt, dt, p), gt, p, warnings=gt.warnings)
    assert result.warnings == gt.warnings


def test_compare_warns_and_keeps_results_as_before():
    with pytest.warns(UndefinedMetricWarning, match=BIRD) as record:
        c = api.compare(str(GT), str(DT), ["voc2007", "voc2010"])
    assert all(w.filename == __file__ for w in record)
    assert [r.protocol.name for r in c.results] == ["voc2007", "voc2010"]
    assert c.n_matchings == 1
    assert all(r.warnings == () for r in c.results)  # the inputs' warnings are not per result


def test_compare_emits_input_warnings():
    with pytest.warns(InputWarning, match="zero area"):
        c = api.compare(ZERO_WIDTH_GT, ONE_DT, ["voc2007", "voc2010"])
    assert all(r.warnings == () for r in c.results)


def test_load_inputs_options_are_checked():
    with pytest.raises(ConfigError, match="--split test: only for a VOC root"):
        api.load_inputs(str(GT), split="test")
    with pytest.raises(ConfigError, match="--yolo-layout: only for YOLO predictions"):
        api.load_inputs(str(GT), str(DT), yolo_layout="cls conf cx cy w h")


def test_inputs_summary_names_the_sources():
    inputs = api.load_inputs(str(GT), str(DT))
    assert inputs.summary() == {
        "gt": str(GT),
        "dt": str(DT),
        "images": inputs.gt.n_images,
        "gt_objects": len(inputs.gt),
        "detections": len(inputs.dt),
    }


def test_evaluate_inputs_keeps_input_warnings_out_of_each_result():
    with pytest.warns(InputWarning):
        inputs = api.load_inputs(ZERO_WIDTH_GT, ONE_DT)
    steps = []
    results = api.evaluate_inputs(inputs, ["voc2007", "voc2010"], progress=steps.append)
    assert steps == ["matching voc2007", "scoring voc2007", "matching voc2010", "scoring voc2010"]
    assert all(r.warnings == () for r in results)


def test_validate_counts_and_warns():
    with pytest.warns(InputWarning, match="zero area"):
        found = api.validate(ZERO_WIDTH_GT, ONE_DT, protocols=["coco"])
    doc = found.to_dict()
    assert doc["valid"]
    assert doc["gt"]["objects"] == 2
    assert doc["dt"]["detections"] == 1
    assert doc["warnings"] == list(found.warnings)
    assert len(found.warnings) == 1
    assert api.validate(str(GT)).dt is None
