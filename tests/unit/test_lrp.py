"""Optimal LRP, the true positives' IoU and the beyond-AP parts of `deteval analyze`: hand-derived cases."""

from __future__ import annotations

import json
import math

import pytest

import deteval
from deteval.beyond import beyond_ap
from deteval.cli import main
from deteval.errors import ConfigError
from deteval.lrp import lrp_curve, mean_tp_iou, optimal_lrp, tp_ious
from tests import ROOT

FIXTURE_GT, FIXTURE_DT = str(ROOT / "fixtures/coco/gt.json"), str(ROOT / "fixtures/coco/dt.json")

# Class a: two objects. Ranked: a TP of IoU 0.6 (score 0.9), an FP (0.8), a TP of IoU 1 (0.7),
# a detection on a crowd region (0.65, ignored). Class b: one object, no detection. Class c: no
# object, one detection.
GT = {
    "images": [{"id": 1, "width": 200, "height": 200}],
    "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 20], "area": 400, "iscrowd": 0},
        {"id": 3, "image_id": 1, "category_id": 1, "bbox": [100, 100, 50, 50], "area": 2500, "iscrowd": 1},
        {"id": 4, "image_id": 1, "category_id": 2, "bbox": [0, 100, 20, 20], "area": 400, "iscrowd": 0},
    ],
}
DT = [
    {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 6], "score": 0.9},  # IoU 0.6
    {"image_id": 1, "category_id": 1, "bbox": [150, 0, 10, 10], "score": 0.8},  # FP
    {"image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 20], "score": 0.7},  # IoU 1
    {"image_id": 1, "category_id": 1, "bbox": [110, 110, 10, 10], "score": 0.65},  # on the crowd
    {"image_id": 1, "category_id": 3, "bbox": [0, 0, 10, 10], "score": 0.5},
]

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")


def _scored():
    g = deteval.load_ground_truth(GT)
    d = deteval.load_detections(DT, g)
    return g, d, deteval.evaluate(g, d, "coco")


def test_lrp_curve_by_hand() -> None:
    import numpy as np

    c = lrp_curve(
        np.array([True, False, True, False]),
        np.array([False, True, False, False]),
        np.array([0.6, 0.0, 1.0, 0.0]),
        2,
        0.5,
    )
    # (0.4/0.5 + 0 + 1) / 2, (0.8 + 1 + 1) / 3, (0.8 + 1 + 0) / 3, then the ignored one repeats.
    assert c["lrp"].tolist() == pytest.approx([0.9, 2.8 / 3, 0.6, 0.6], abs=1e-15)


def test_optimal_lrp_by_hand() -> None:
    g, d, r = _scored()
    found = optimal_lrp(r, tp_ious(r, g, d))
    a, b, c = found.per_class
    assert a["oLRP"] == pytest.approx(0.6, abs=1e-15)
    assert a["oLRP_loc"] == pytest.approx(0.2, abs=1e-15)  # (0.4 + 0) / 2
    assert a["oLRP_FP"] == pytest.approx(1 / 3, abs=1e-15)
    assert a["oLRP_FN"] == 0.0
    assert a["threshold"] == 0.7  # the first of the equal minima (the ignored detection ties)
    assert (a["n_tp"], a["n_fp"], a["n_fn"]) == (2, 1, 0)
    # b: an object and no detection: the worst; c: no object: no value, left out of the means.
    assert (b["oLRP"], b["oLRP_FN"]) == (1.0, 1.0)
    assert math.isnan(b["oLRP_loc"]) and math.isnan(b["threshold"])  # noqa: PT018
    assert math.isnan(c["oLRP"]) and c["n_tp"] == -1  # noqa: PT018
    assert found.moLRP == pytest.approx(0.8, abs=1e-15)
    assert found.moLRP_loc == pytest.approx(0.2, abs=1e-15)
    assert found.to_dict()["per_class"][2]["oLRP"] is None


def test_tau_is_a_lane() -> None:
    g, d, r = _scored()
    at_75 = optimal_lrp(r, tp_ious(r, g, d, iou_threshold=0.75), tau=0.75).per_class[0]
    # At 0.75 the IoU-0.6 box is an FP: ranked FP, FP, TP(1.0): (0 + 2 + 1) / 4 at the end.
    assert at_75["oLRP"] == pytest.approx(0.75, abs=1e-15)
    assert at_75["threshold"] == 0.7
    with pytest.raises(ConfigError, match="not one of the protocol's thresholds"):
        optimal_lrp(r, tp_ious(r, g, d), tau=0.42)
    with pytest.raises(ConfigError, match=r"in \[0, 1\)"):
        optimal_lrp(r, tp_ious(r, g, d), tau=1.0)


def test_mean_tp_iou_by_hand() -> None:
    g, d, r = _scored()
    rows = mean_tp_iou(r, tp_ious(r, g, d))
    assert rows[0]["n_tp"] == 2
    assert rows[0]["mean_tp_iou"] == pytest.approx(0.8, abs=1e-15)
    assert rows[1]["n_tp"] == 0
    assert math.isnan(rows[1]["mean_tp_iou"])


def test_tp_ious_refuses_other_detections() -> None:
    g, d, r = _scored()
    other = deteval.load_detections(DT[:2], g)
    with pytest.raises(ConfigError, match="expected the detections the result was scored from"):
        tp_ious(r, g, other)


def test_beyond_ap_at_an_iou_the_protocol_lacks() -> None:
    g, d, _ = _scored()
    found = beyond_ap(g, d, "coco", iou=0.3, tp_iou=True, lrp=True, lrp_tau=0.3).to_dict()
    assert found["mean_tp_iou"]["iou_threshold"] == 0.3
    assert found["lrp"]["tau"] == 0.3
    assert found["mean_tp_iou"]["per_class"][0]["n_tp"] == 2


# ---------------------------------------------------------------------------------------------
# the CLI


def _run(argv: list[str], capsys) -> tuple[int, str, str]:  # noqa: ANN001
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_analyze_beyond_parts_json(capsys) -> None:  # noqa: ANN001
    argv = ["analyze", "--gt", FIXTURE_GT, "--dt", FIXTURE_DT, "--format", "json", "-q"]
    code, out, _ = _run([*argv, "--calibration", "--lrp", "--tp-iou", "--mauc"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert {"calibration", "lrp", "mean_tp_iou", "mAUC"} <= set(doc)
    assert not {"errors", "decomposition", "confusion"} & set(doc)  # only the parts asked for
    person = doc["lrp"]["per_class"][0]
    assert (person["name"], person["oLRP"], person["threshold"]) == ("person", 0.5, 0.65)
    assert doc["calibration"]["bins"] == [10]
    assert len(doc["calibration"]["reliability"]) == 10
    code, out, _ = _run(argv, capsys)
    assert not {"calibration", "lrp", "mean_tp_iou", "mAUC"} & set(json.loads(out))  # not by default


def test_analyze_beyond_parts_table(capsys) -> None:  # noqa: ANN001
    argv = ["analyze", "--gt", FIXTURE_GT, "--dt", FIXTURE_DT, "-q", "--lrp", "--calibration"]
    code, out, _ = _run(
        [*argv, "--calibration-features", "confidence,cx,cy", "--calibration-bins", "5,2,2"], capsys
    )
    assert code == 0
    assert "Calibration at IoU 0.5 (bins: 5 confidence x 2 cx x 2 cy): D-ECE" in out
    assert "Optimal LRP at tau 0.5 (area all, maxDets 100): moLRP 0.6333" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--calibration-bins", "x"], "--calibration-bins: expected a positive integer"),
        (["--calibration-bins", "0"], "calibration bins: expected a positive integer"),
        (["--calibration-features", "cx"], "calibration features: expected 'confidence' followed by"),
        (["--lrp-tau", "1"], "LRP tau: expected an IoU threshold in [0, 1)"),
    ],
)
def test_analyze_beyond_bad_options(capsys, extra: list, message: str) -> None:  # noqa: ANN001
    argv = ["analyze", "--gt", FIXTURE_GT, "--dt", FIXTURE_DT, "-q", "--calibration", "--lrp", *extra]
    code, _, err = _run(argv, capsys)
    assert code == 3
    assert message in err


def test_analyze_calibration_refuses_scores_beyond_one(tmp_path, capsys) -> None:  # noqa: ANN001
    dt = tmp_path / "dt.json"
    dt.write_text(json.dumps([dict(DT[0], score=7.0)]))
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(GT))
    code, _, err = _run(["analyze", "--gt", str(gt), "--dt", str(dt), "-q", "--calibration"], capsys)
    assert code == 3
    assert "expected confidences in [0, 1], found 7.0" in err


@pytest.mark.parametrize("protocol", ["ultralytics", "openimages"])
def test_mauc_undefined_without_a_recall_grid(protocol: str) -> None:
    from deteval.analysis import pr_auc

    found = pr_auc(deteval.evaluate(FIXTURE_GT, FIXTURE_DT, protocol))
    assert math.isnan(found["mAUC"])
    assert all(math.isnan(v) for v in found["auc"].ravel())
