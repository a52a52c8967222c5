"""Papercuts (#35): TIDE's AP says whose it is; every input kind says which protocol scores it and why."""

from __future__ import annotations

import json

import pytest

import deteval
from tests import ROOT

FIX = ROOT / "fixtures"
GT = str(FIX / "coco" / "gt.json")
DT = str(FIX / "coco" / "dt.json")


def test_analyze_says_tides_ap_follows_tidecvs_rules(run_cli):
    code, out, _ = run_cli("analyze", "--gt", GT, "--dt", DT, "--errors", "-q")
    assert code == 0
    first = out.splitlines()[0]
    assert "AP 0.4328 (tidecv's rules, not evaluate's: a class without ground truth counts 0" in first
    code, out, _ = run_cli("analyze", "--gt", GT, "--dt", DT, "--errors", "--tide-mode", "protocol", "-q")
    assert code == 0
    assert "AP 0.5771 (coco's AP at IoU 0.5)" in out.splitlines()[0]


VOC = FIX / "real" / "VOC2007"
VOC_ARGS = ["--split", "test", "--result-prefix", "comp3_det_test_"]
KINDS = [
    pytest.param([GT, "--dt", DT], "coco", "COCO JSON ground truth", id="coco-json"),
    pytest.param(
        [str(VOC), "--dt", str(VOC / "results"), *VOC_ARGS], "voc2007", "a VOC2007 root", id="voc-root"
    ),
    pytest.param(
        [str(FIX / "yolo"), "--dt", str(FIX / "yolo" / "predictions")],
        "coco",
        "a YOLO dataset",
        id="yolo-dataset",
    ),
]


@pytest.mark.parametrize(("inputs", "chosen", "kind"), KINDS)
def test_every_input_kind_says_which_protocol_scores_it_and_why(run_cli, inputs, chosen, kind):
    code, out, err = run_cli("evaluate", "--gt", *inputs, "--no-per-class")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "no --protocol" in line]
    assert len(notes) == 1, err
    assert notes[0].startswith(
        f"deteval: note: --gt {inputs[0]}: {kind} and no --protocol: scored under {chosen} ("
    )
    assert out.startswith(f"protocol {chosen} [")
    if kind == "a YOLO dataset":
        assert "--protocol ultralytics gives Ultralytics' own numbers" in notes[0]
    # recorded in the JSON inputs; nothing on stderr with -q
    code, out, err = run_cli("evaluate", "--gt", *inputs, "--format", "json", "-q")
    assert code == 0
    assert err == ""
    doc = json.loads(out)
    assert doc["inputs"]["default_protocol"] == {
        "name": chosen,
        "note": notes[0].removeprefix("deteval: note: "),
    }
    assert doc["results"][0]["protocol"] == chosen


@pytest.mark.parametrize(("inputs", "chosen", "kind"), KINDS)
def test_a_given_protocol_needs_no_note(run_cli, inputs, chosen, kind):
    code, out, err = run_cli("evaluate", "--gt", *inputs, "--protocol", chosen, "--format", "json")
    assert code == 0
    assert "no --protocol" not in err
    assert "default_protocol" not in json.loads(out)["inputs"]


def test_several_detectors_and_compare_choose_the_same_way(run_cli):
    yolo = str(FIX / "yolo")
    preds = str(FIX / "yolo" / "predictions")
    for command in ("evaluate", "compare"):
        code, out, err = run_cli(
            command, "--gt", yolo, "--dt", preds, "--dt", preds, "--name", "a", "--name", "b"
        )
        assert code == 0, err
        assert f"--gt {yolo}: a YOLO dataset and no --protocol: scored under coco" in err
    # a VOC root without a year is refused by compare as by evaluate (it silently used coco)
    voc = str(FIX / "voc")
    code, out, err = run_cli(
        "compare",
        "--gt",
        voc,
        "--dt",
        f"{voc}/results",
        "--dt",
        f"{voc}/results",
        "--name",
        "a",
        "--name",
        "b",
    )
    assert code == 3
    assert out == ""
    assert "a VOC root and no --protocol; expected one of --protocol voc2007" in err


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")  # bird: no ground truth
@pytest.mark.usefixtures("figures_unless_fast")  # the report's text
def test_the_html_report_says_whose_tide_ap_it_shows(tmp_path):
    pytest.importorskip("matplotlib")
    from deteval.diagnose import analyze
    from deteval.plot import write_report

    gt = deteval.load_ground_truth(GT)
    dt = deteval.load_detections(DT, gt)
    result = deteval.evaluate(gt, dt, "coco")
    out = write_report(
        result, out=tmp_path / "r.html", analysis=analyze(gt, dt, "coco", decompose=False, confusion=False)
    )
    html = out.read_text(encoding="utf-8")
    assert "AP 0.433 (tidecv&#x27;s rules, not evaluate&#x27;s: a class without ground truth counts 0" in html
