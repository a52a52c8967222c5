"""Label-error candidates (deteval.label_errors): kinds, evidence, thresholds, and no score change."""

from __future__ import annotations

import json

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.errors import ConfigError
from deteval.io import load_detections, load_ground_truth
from deteval.label_errors import DEFAULT_THRESHOLDS, LABEL_ERROR_KINDS, label_errors
from tests import ROOT

FIXTURE = ROOT / "fixtures" / "gallery"


def _values(gt_doc=None, dt_doc=None, protocol="coco"):
    gt = load_ground_truth(gt_doc if gt_doc is not None else str(FIXTURE / "gt.json"))
    dt = load_detections(dt_doc if dt_doc is not None else str(FIXTURE / "dt.json"), gt)
    return gt, dt, deteval.evaluate(gt, dt, protocol)


def _ann(i, image, cat, box):
    return {
        "id": i,
        "image_id": image,
        "category_id": cat,
        "bbox": box,
        "area": box[2] * box[3],
        "iscrowd": 0,
    }


def test_the_fixture_by_hand():
    gt, dt, result = _values()
    found = label_errors(result, gt, dt)
    assert found.counts() == {"wrong_class": 1, "missing_annotation": 1, "unfound": 2, "duplicate": 0}
    wrong, background, unfound_street, unfound_missing = found.candidates
    # park.png: a cat at 0.90 exactly on the dog ground truth 3
    assert wrong == {
        "kind": "wrong_class",
        "image_id": 2,
        "file_name": "park.png",
        "detection": 2,
        "category": "cat",
        "score": 0.9,
        "box": [30.0, 30.0, 100.0, 100.0],
        "gt_annotation_id": 3,
        "gt_category": "dog",
        "gt_box": [30.0, 30.0, 100.0, 100.0],
        "iou": 1.0,
    }
    # street.png: a cat at 0.80 overlapping nothing
    assert background["kind"] == "missing_annotation"
    assert (background["detection"], background["best_iou"], background["best_gt"]) == (1, 0.0, None)
    # the missed dog of street.png overlaps no detection; missing.png has none at all
    assert (
        unfound_street["gt_annotation_id"],
        unfound_street["best_iou"],
        unfound_street["best_detection"],
    ) == (
        2,
        0.0,
        None,
    )
    assert (unfound_missing["gt_annotation_id"], unfound_missing["best_iou"]) == (5, None)


def test_duplicates_and_the_best_detection_of_an_unfound_object():
    gt_doc = {
        "images": [{"id": 1, "file_name": "a.jpg"}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "annotations": [
            _ann(1, 1, 1, [0, 0, 100, 100]),
            _ann(2, 1, 1, [1, 0, 100, 100]),  # IoU 99/101 = 0.980 with 1: a duplicate
            _ann(3, 1, 2, [0, 0, 100, 100]),  # another class: never a duplicate of 1
            _ann(4, 1, 1, [300, 300, 50, 50]),  # missed; a dog detection half over it
        ],
    }
    dt_doc = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100], "score": 0.9},
        {"image_id": 1, "category_id": 2, "bbox": [0, 0, 100, 100], "score": 0.8},
        {"image_id": 1, "category_id": 2, "bbox": [325, 300, 50, 50], "score": 0.3},
    ]
    gt, dt, result = _values(gt_doc, dt_doc)
    found = label_errors(result, gt, dt)
    duplicates = [c for c in found.candidates if c["kind"] == "duplicate"]
    assert [(c["gt_annotation_id"], c["other_annotation_id"]) for c in duplicates] == [(1, 2)]
    assert duplicates[0]["iou"] == pytest.approx(99 * 100 / (2 * 10000 - 99 * 100))
    unfound = {c["gt_annotation_id"]: c for c in found.candidates if c["kind"] == "unfound"}
    assert unfound[4]["best_detection"] == 2
    assert unfound[4]["best_detection_category"] == "dog"
    assert unfound[4]["best_iou"] == pytest.approx(25 * 50 / (2 * 2500 - 25 * 50))
    # ground truth 2 (the duplicate) is unfound too: the detection went to 1; its best is detection 0
    assert unfound[2]["best_detection"] == 0
    # a higher threshold drops the duplicate
    assert not [
        c for c in label_errors(result, gt, dt, duplicate_iou=0.99).candidates if c["kind"] == "duplicate"
    ]


def test_thresholds_are_applied():
    gt, dt, result = _values()
    assert label_errors(result, gt, dt, confidence=0.95).counts()["wrong_class"] == 0
    assert label_errors(result, gt, dt, confidence=0.95).counts()["missing_annotation"] == 0
    assert label_errors(result, gt, dt, wrong_class_iou=1.0).counts()["wrong_class"] == 1
    # below background_iou 0 nothing is "not near"
    assert label_errors(result, gt, dt, background_iou=0.0).counts()["missing_annotation"] == 0
    found = label_errors(result, gt, dt, confidence=0.6, duplicate_iou=0.5)
    assert found.thresholds == {**DEFAULT_THRESHOLDS, "confidence": 0.6, "duplicate_iou": 0.5}
    assert list(found.counts()) == list(LABEL_ERROR_KINDS)


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("wrong_class_iou", 1.5, "wrong_class_iou: expected a number in [0, 1], found 1.5"),
        ("duplicate_iou", -0.1, "duplicate_iou: expected a number in [0, 1]"),
        ("confidence", float("nan"), "confidence: expected a finite number"),
    ],
)
def test_bad_thresholds_are_refused(option, value, words):
    gt, dt, result = _values()
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
        label_errors(result, gt, dt, **{option: value})


def test_the_score_never_changes():
    gt, dt, result = _values()
    before = json.dumps(result.to_dict(), sort_keys=True)
    arrays = {
        name: np.array(getattr(gt, name), copy=True) for name in ("box", "category", "image", "annotation_id")
    }
    det_arrays = {
        name: np.array(getattr(dt, name), copy=True) for name in ("box", "score", "category", "image")
    }
    label_errors(result, gt, dt, confidence=0.0, duplicate_iou=0.0, background_iou=1.0, wrong_class_iou=0.0)
    assert json.dumps(result.to_dict(), sort_keys=True) == before
    assert json.dumps(deteval.evaluate(gt, dt, "coco").to_dict(), sort_keys=True) == before
    for name, value in arrays.items():
        np.testing.assert_array_equal(getattr(gt, name), value)
    for name, value in det_arrays.items():
        np.testing.assert_array_equal(getattr(dt, name), value)


def test_values_of_another_result_are_refused():
    gt, dt, result = _values()
    other_gt = load_ground_truth(
        {"images": [{"id": 9}], "categories": [{"id": 1, "name": "cat"}], "annotations": []}
    )
    with pytest.raises(ConfigError):
        label_errors(result, other_gt, load_detections([], other_gt))


def test_cli_analyze_label_errors_json_and_file(tmp_path, capsys):
    out = tmp_path / "candidates.json"
    argv = ["analyze", "--gt", str(FIXTURE / "gt.json"), "--dt", str(FIXTURE / "dt.json")]
    assert main([*argv, "--label-errors", str(out), "--format", "json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["label_errors"]["counts"].values()) == [1, 1, 2, 0]
    assert "errors" not in doc  # only what was asked for
    written = json.loads(out.read_text())
    assert written["label_errors"] == doc["label_errors"]
    assert main([*argv, "--label-errors", "--label-thresholds", "confidence=0.95", "-q"]) == 0
    text = capsys.readouterr().out
    assert "Label-error candidates at IoU 0.5 (wrong_class 0, missing_annotation 0, unfound 2" in text
    assert main([*argv, "--label-errors", "--label-thresholds", "colour=1"]) == 3
    assert "--label-thresholds: 'colour=1': expected KEY=VALUE" in capsys.readouterr().err
    # never written over an input
    assert main([*argv, "--label-errors", str(FIXTURE / "gt.json")]) != 0
    assert json.loads((FIXTURE / "gt.json").read_text())["images"][0]["file_name"] == "street.png"


def test_the_documented_table_is_what_the_command_prints(capsys, monkeypatch):
    import re

    monkeypatch.chdir(ROOT)
    doc = (ROOT / "docs" / "label-errors.md").read_text()
    shown = re.search(r"```text\n(.*?)```", doc, flags=re.S).group(1)
    assert (
        main(
            [
                "analyze",
                "--gt",
                "fixtures/gallery/gt.json",
                "--dt",
                "fixtures/gallery/dt.json",
                "--label-errors",
                "-q",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == shown
