"""Several detectors side by side (`--dt` repeated) and `--bootstrap` through the CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from deteval.cli import main
from tests import ROOT

GT, DT = str(ROOT / "fixtures/coco/gt.json"), str(ROOT / "fixtures/coco/dt.json")


@pytest.fixture
def second_detector(tmp_path) -> str:
    """fixtures/coco's detections with jittered scores: a different ranking, same boxes."""
    dt = json.loads(Path(DT).read_text())
    rng = random.Random(1)
    for d in dt:
        d["score"] = round(min(1.0, max(0.0, d["score"] + rng.uniform(-0.2, 0.2))), 3)
    path = tmp_path / "other.json"
    path.write_text(json.dumps(dt))
    return str(path)


def _json(argv, capsys) -> dict:
    assert main([*argv, "--format", "json", "-q"]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_detectors_equal_two_single_runs(second_detector, capsys):
    doc = _json(
        [
            "evaluate",
            "--gt",
            GT,
            "--dt",
            DT,
            "--dt",
            second_detector,
            "--protocol",
            "coco",
            "--protocol",
            "voc2010",
        ],
        capsys,
    )
    assert doc["inputs"]["detectors"] == ["dt.json", "other.json"]
    assert [(e["detector"], e["protocol"]) for e in doc["results"]] == [
        ("dt.json", "coco"),
        ("dt.json", "voc2010"),
        ("other.json", "coco"),
        ("other.json", "voc2010"),
    ]
    for dt, name in ((DT, "dt.json"), (second_detector, "other.json")):
        single = _json(
            ["evaluate", "--gt", GT, "--dt", dt, "--protocol", "coco", "--protocol", "voc2010"], capsys
        )
        mine = [e for e in doc["results"] if e["detector"] == name]
        assert [e["metrics"] for e in mine] == [e["metrics"] for e in single["results"]]
        assert [e["per_class"] for e in mine] == [e["per_class"] for e in single["results"]]
    assert "bootstrap" not in doc
    assert "comparisons" not in doc


def test_names_and_the_difference_column(second_detector, capsys):
    assert (
        main(
            [
                "compare",
                "--gt",
                GT,
                "--dt",
                DT,
                "--dt",
                second_detector,
                "--name",
                "A",
                "--name",
                "B",
                "--protocol",
                "voc2010",
                "-q",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.splitlines()[1].split() == ["metric", "A", "B", "B", "-", "A"]


def test_bootstrap_json_contract_and_determinism(second_detector, capsys):
    argv = [
        "compare",
        "--gt",
        GT,
        "--dt",
        DT,
        "--dt",
        second_detector,
        "--name",
        "A",
        "--name",
        "B",
        "--protocol",
        "coco",
        "--bootstrap",
        "50",
        "--seed",
        "3",
    ]
    doc = _json(argv, capsys)
    assert doc["bootstrap"] == {"n": 50, "seed": 3, "ci": 0.95, "method": "basic"}
    for entry in doc["results"]:
        assert set(entry["metrics_ci"]) == set(entry["metrics"])
        assert set(entry["metrics_bias"]) == set(entry["metrics"])
        lo, hi = entry["metrics_ci"]["AP"]
        assert lo <= entry["metrics"]["AP"] <= hi
        assert all("AP_ci" in c and "AP_bias" in c for c in entry["per_class"])
    (comparison,) = doc["comparisons"]
    assert {"a", "b", "protocol", "metric", "difference", "ci", "p_value"} <= set(comparison)
    assert (comparison["a"], comparison["b"], comparison["metric"]) == ("A", "B", "AP")
    a, b = (e["metrics"]["AP"] for e in doc["results"])
    assert comparison["difference"] == pytest.approx(b - a, abs=1e-15)
    assert 0.0 < comparison["p_value"] <= 1.0
    assert _json(argv, capsys) == doc  # the same seed gives the same document
    assert _json([*argv, "--workers", "2"], capsys) == doc  # and so does any number of workers


def test_bootstrap_method_percentile_is_kept_by_name(capsys):
    argv = ["evaluate", "--gt", GT, "--dt", DT, "--protocol", "voc2010", "--bootstrap", "40"]
    basic = _json(argv, capsys)
    percentile = _json([*argv, "--bootstrap-method", "percentile"], capsys)
    assert (basic["bootstrap"]["method"], percentile["bootstrap"]["method"]) == ("basic", "percentile")
    # Same resamples (same seed), so the same bias; the intervals are placed differently.
    assert basic["results"][0]["metrics_bias"] == percentile["results"][0]["metrics_bias"]
    samples = (basic["results"][0]["metrics_ci"]["mAP"], percentile["results"][0]["metrics_ci"]["mAP"])
    assert all(ci is not None for ci in samples)
    assert main([*argv, "--bootstrap-method", "studentized"]) == 2
    assert "invalid choice: 'studentized'" in capsys.readouterr().err


def test_identical_detectors_differ_by_zero_with_p_one(tmp_path, capsys):
    copy = tmp_path / "copy.json"
    copy.write_text(Path(DT).read_text())
    doc = _json(
        ["compare", "--gt", GT, "--dt", DT, "--dt", str(copy), "--protocol", "voc2010", "--bootstrap", "30"],
        capsys,
    )
    (comparison,) = doc["comparisons"]
    assert comparison["difference"] == 0.0
    assert comparison["p_value"] == 1.0


def test_one_detector_with_bootstrap_gets_intervals_only(capsys):
    doc = _json(["evaluate", "--gt", GT, "--dt", DT, "--protocol", "voc2010", "--bootstrap", "20"], capsys)
    assert doc["comparisons"] == []
    assert doc["results"][0]["metrics_ci"]["mAP"] is not None


def test_text_markdown_csv_outputs(second_detector, capsys):
    base = [
        "evaluate",
        "--gt",
        GT,
        "--dt",
        DT,
        "--dt",
        second_detector,
        "--protocol",
        "voc2010",
        "--bootstrap",
        "20",
        "-q",
    ]
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "bootstrap: 20 resamples" in text
    assert "no significant difference" in text
    assert main([*base, "--format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith("**protocol voc2010")
    assert main([*base, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "detector,protocol,class,metric,value,ci_lo,ci_hi,bias"


def test_usage_errors(second_detector, capsys):
    assert main(["evaluate", "--gt", GT, "--dt", DT, "--dt", second_detector, "--name", "only-one"]) == 3
    assert "one per --dt" in capsys.readouterr().err
    assert main(["evaluate", "--gt", GT, "--dt", DT, "--dt", second_detector, "--confidence", "0.5"]) == 3
    assert "not available with several --dt" in capsys.readouterr().err
    assert main(["evaluate", "--gt", GT, "--dt", DT, "--bootstrap", "-1"]) == 2
    assert main(["compare", "--gt", GT, "--dt", DT, "--protocol", "coco"]) == 2
    assert "two --protocol or two --dt" in capsys.readouterr().err
