"""`deteval analyze` and `deteval rank` through the CLI: outputs, the JSON contracts, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deteval.cli import main
from tests import ROOT

GT, DT = str(ROOT / "fixtures/coco/gt.json"), str(ROOT / "fixtures/coco/dt.json")
LABELS, SCORES = str(ROOT / "fixtures/ranking/labels.csv"), str(ROOT / "fixtures/ranking/scores.csv")


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_analyze_json_contract_on_the_fixture(capsys):
    code, out, _ = _run(["analyze", "--gt", GT, "--dt", DT, "--format", "json", "-q"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert {"deteval_version", "inputs", "protocol", "errors", "decomposition", "confusion"} <= set(doc)
    assert set(doc["errors"]["main"]) == {"cls", "loc", "both", "dupe", "bkg", "miss"}
    assert set(doc["errors"]["special"]) == {"false_pos", "false_neg"}
    assert doc["protocol"]["name"] == "coco"
    confusion = doc["confusion"]
    assert confusion["labels"] == ["person", "dog", "cat", "bird", "background"]
    matrix = np.array(confusion["matrix"])
    # Rows are true classes: person 5 GT, dog 2, cat 1, bird 0; the last row holds detections
    # that found no object; the bottom-right cell is always 0.
    assert matrix[:4].sum(axis=1).tolist() == [5, 2, 1, 0]
    assert matrix[-1, -1] == 0
    person = doc["decomposition"]["per_class"][0]
    assert person["name"] == "person"
    assert person["AP_D"] == pytest.approx(0.7312588401697313, abs=1e-12)  # docs/known-answers.md 1
    assert set(person["curve"]) == {
        "confidence",
        "precision_D",
        "recall_D",
        "precision_L",
        "recall_L",
        "precision_CgL",
        "recall_CgL",
    }


def test_analyze_selectors_give_only_the_parts_asked_for(capsys):
    code, out, _ = _run(["analyze", "--gt", GT, "--dt", DT, "--confusion", "--format", "json", "-q"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert "confusion" in doc
    assert "errors" not in doc
    assert "decomposition" not in doc


def test_analyze_table_and_markdown(capsys):
    code, out, _ = _run(["analyze", "--gt", GT, "--dt", DT, "-q"], capsys)
    assert code == 0
    assert out.startswith("TIDE errors (mode tidecv")
    assert "AP decomposition at IoU 0.5" in out
    assert "Confusion matrix at IoU 0.5" in out
    code, out, _ = _run(["analyze", "--gt", GT, "--dt", DT, "--format", "markdown", "--errors", "-q"], capsys)
    assert code == 0
    assert out.startswith("**TIDE errors")
    assert "| person |" in out


def test_analyze_output_file_and_refusal_to_overwrite_an_input(tmp_path, capsys):
    out_file = tmp_path / "analysis.json"
    code, _, _ = _run(["analyze", "--gt", GT, "--dt", DT, "--output", str(out_file), "-q"], capsys)
    assert code == 0
    assert json.loads(out_file.read_text())["deteval_version"]
    code, out, err = _run(["analyze", "--gt", GT, "--dt", DT, "--output", DT], capsys)
    assert code == 3
    assert out == ""
    assert "dt.json" in err


def test_analyze_bad_input_names_the_file(capsys):
    code, out, err = _run(
        ["analyze", "--gt", GT, "--dt", str(ROOT / "fixtures/broken/coco/dt_unknown_image.json")], capsys
    )
    assert code == 3
    assert out == ""
    assert "dt_unknown_image.json" in err
    assert "Traceback" not in err


def test_rank_raw_against_binarized_on_the_fixture(capsys):
    code, out, err = _run(
        [
            "rank",
            "--labels",
            LABELS,
            "--scores",
            SCORES,
            "--average",
            "micro",
            "--binarize",
            "0.5",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["metrics"]["AP"] == 1.0
    assert doc["binarized"]["ap_raw"] == 1.0
    assert doc["binarized"]["ap_binarized"] == pytest.approx(0.6, abs=1e-15)
    assert doc["deteval_version"]
    # The per-label rows still show labels without positives: notes, not errors.
    assert all(line.startswith("deteval: note: ") for line in err.splitlines())


def test_rank_table_and_csv(capsys):
    code, out, err = _run(["rank", "--labels", LABELS, "--scores", SCORES], capsys)
    assert code == 0
    assert out.startswith("ranking: 2 samples, 4 labels, 3 positives (average=macro")
    assert "deteval: note: 2 labels without positive samples" in err  # macro: columns 0 and 1
    code, out, _ = _run(["rank", "--labels", LABELS, "--scores", SCORES, "--format", "csv", "-q"], capsys)
    assert code == 0
    assert out.splitlines()[0] == "scope,metric,value"


def test_rank_at_k_and_methods(capsys):
    code, out, _ = _run(
        [
            "rank",
            "--labels",
            LABELS,
            "--scores",
            SCORES,
            "--method",
            "11_point",
            "--k",
            "2",
            "--format",
            "json",
            "-q",
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["options"]["method"] == "11_point"
    assert doc["at_k"]["k"] == 2


def test_rank_mismatched_shapes_exit_3(tmp_path, capsys):
    bad = tmp_path / "scores.csv"
    bad.write_text("0.1,0.2\n0.3,0.4\n")
    code, out, err = _run(["rank", "--labels", LABELS, "--scores", str(bad)], capsys)
    assert code == 3
    assert out == ""
    assert "shape" in err


def test_rank_usage_errors_exit_2(capsys):
    assert main(["rank", "--labels", LABELS]) == 2
    assert main(["rank", "--labels", LABELS, "--scores", SCORES, "--k", "0"]) == 2
