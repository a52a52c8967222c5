"""PR curves, P/R/F1 at a confidence and match lists, on the hand-derived COCO fixture."""

from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.analysis import at_confidence, best_f1, matches, pr_curve
from deteval.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "coco"


@pytest.fixture(scope="module")
def coco_result():
    with pytest.warns(deteval.UndefinedMetricWarning, match="bird"):  # the fixture's class without GT
        return deteval.evaluate(FIXTURES / "gt.json", FIXTURES / "dt.json", "coco")


def test_pr_curve_is_known_answers_section_1(coco_result):
    curve = pr_curve(coco_result, 1, iou_threshold=0.5)
    expected_p = [1, 1, 2 / 3, 0.5, 0.4, 0.5, 4 / 7, 0.5, 4 / 9, 0.5]
    expected_r = [0.2, 0.4, 0.4, 0.4, 0.4, 0.6, 0.8, 0.8, 0.8, 1.0]
    np.testing.assert_allclose(curve.precision, expected_p)
    np.testing.assert_allclose(curve.recall, expected_r)
    assert curve.n_positive == 5
    assert curve.is_tp.sum() == 5


def test_at_confidence_counts(coco_result):
    rows = {r["name"]: r for r in at_confidence(coco_result, 0.75, iou_threshold=0.5)}
    # person: scores .95 .90 .85 .80 .75 -> TP TP FP FP FP
    assert (rows["person"]["tp"], rows["person"]["fp"], rows["person"]["fn"]) == (2, 3, 3)
    assert rows["person"]["precision"] == 0.4
    assert rows["person"]["recall"] == 0.4
    assert rows["cat"]["tp"] == 0
    assert np.isnan(rows["cat"]["precision"])
    assert rows["cat"]["recall"] == 0
    assert np.isnan(rows["bird"]["recall"])  # no ground truth


def test_matching_rule_shows_in_matches(coco_result):
    # docs/known-answers.md section 2: at IoU 0.6 COCO matches d2 to B; at 0.65 it is a false positive.
    dog = [m for m in matches(coco_result, iou_threshold=0.6) if m["category_id"] == 2]
    assert [(m["outcome"], m["gt_annotation_id"]) for m in dog] == [("tp", 6), ("tp", 7)]
    dog = [m for m in matches(coco_result, iou_threshold=0.65) if m["category_id"] == 2]
    assert [(m["outcome"], m["gt_annotation_id"]) for m in dog] == [("tp", 6), ("fp", None)]
    with pytest.warns(deteval.UndefinedMetricWarning):
        voc = deteval.evaluate(FIXTURES / "gt.json", FIXTURES / "dt.json", "voc2010")
    dog = [m for m in matches(voc) if m["category_id"] == 2]
    assert [m["outcome"] for m in dog] == ["tp", "fp"]
    assert dog[1]["gt_annotation_id"] == 6  # VOC: the argmax GT (A), already taken


def test_best_f1(coco_result):
    best = best_f1(coco_result, 1, iou_threshold=0.5)
    assert best["threshold"] == 0.65
    assert best["f1"] == pytest.approx(2 / 3)


def test_unknown_lane_is_a_clear_error(coco_result):
    with pytest.raises(ConfigError, match=r"iou_threshold 0\.3 is not one of"):
        pr_curve(coco_result, 1, iou_threshold=0.3)
    with pytest.raises(ConfigError, match="category_id 99"):
        pr_curve(coco_result, 99)


def test_f1_is_the_count_formula(coco_result):
    rows = {r["name"]: r for r in at_confidence(coco_result, 0.7, iou_threshold=0.5)}
    assert rows["cat"]["f1"] == 0.0  # 1 FN, nothing detected
    assert rows["bird"]["f1"] == 0.0  # 1 FP, no ground truth
    assert rows["person"]["f1"] == pytest.approx(2 * 3 / (2 * 3 + 3 + 2))


def test_cli_confidence_and_matches(tmp_path, capsys):
    from deteval.cli import main

    out = tmp_path / "m.csv"
    code = main(
        [
            "evaluate",
            "--gt",
            str(FIXTURES / "gt.json"),
            "--dt",
            str(FIXTURES / "dt.json"),
            "--protocol",
            "voc2010",
            "--confidence",
            "0.7",
            "--matches",
            str(out),
            "-q",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "detections with score >= 0.7 at IoU 0.5" in text
    lines = out.read_text().splitlines()
    # the columns of before first, then the explaining ones (docs/analysis.md)
    assert lines[0].startswith("detection,image_id,category_id,category,score,outcome,gt_annotation_id,x,")
    assert lines[1] == "0,1,1,person,0.95,tp,1,10.0,10.0,50.0,80.0,tp,1.0,,,,"
    assert len(lines) == 16  # 13 detections, then 2 missed objects (outcome fn)
    assert lines[-1] == ",5,3,cat,,fn,8,50.0,50.0,100.0,100.0,fn,,,,,miss"
    code = main(
        [
            "evaluate",
            "--gt",
            str(FIXTURES / "gt.json"),
            "--dt",
            str(FIXTURES / "dt.json"),
            "--matches",
            str(FIXTURES / "dt.json"),
            "-q",
        ]
    )
    assert code == 3
    assert "refusing to overwrite" in capsys.readouterr().err


def test_pr_curve_precision_is_nan_where_nothing_is_retrieved():
    """Precision is NaN where tp + fp is 0 (chainercv's calc_detection_voc_prec_rec rule).

    The top detection lies on a crowd region (ignored: neither true nor false positive), so
    after it nothing is retrieved yet; the second finds the one object.
    """
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 20], "area": 400, "iscrowd": 1},
        ],
    }
    dt = [
        {"image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 20], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.8},
    ]
    curve = pr_curve(deteval.evaluate(gt, dt, "coco"), 1, iou_threshold=0.5)
    assert curve.is_ignored.tolist() == [True, False]
    assert np.isnan(curve.precision[0])
    assert curve.precision[1:].tolist() == [1.0]
    assert curve.recall.tolist() == [0.0, 1.0]
    pytest.importorskip("matplotlib")
    from deteval.plot.curves import envelope

    # the devkit's envelope over the defined points: NaN takes the best precision after it
    assert [v.tolist() for v in envelope(curve)] == [[0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]]
