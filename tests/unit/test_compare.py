"""Side-by-side comparison (shared matchings) and the field-by-field explanation."""

from __future__ import annotations

import csv
import dataclasses
import importlib
import io
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.api import compare, explain
from deteval.cli import main
from deteval.evaluate import match
from deteval.explain import (
    ACCUMULATION_FIELDS,
    WALK_ORDER,
    MatchCache,
    _inapplicable,
    class_mean_ap,
    matching_key,
)
from deteval.protocol import FIELD_CHOICES, PRESETS, field_names, get_protocol
from deteval.report import (
    compare_table,
    format_compare_csv,
    format_compare_markdown,
    format_compare_table,
    format_explanation,
    format_explanation_markdown,
)
from tests import ROOT

# fixtures/coco has a class without ground truth ('bird'): the API says so with an
# UndefinedMetricWarning on every call; incidental here (tests/unit/test_api.py checks it).
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")

# deteval exports the function `explain`, which shadows the module as an attribute.
explain_module = importlib.import_module("deteval.explain.cache")  # MatchCache looks match and score up there

GT = str(ROOT / "fixtures" / "coco" / "gt.json")
DT = str(ROOT / "fixtures" / "coco" / "dt.json")

# fixtures/coco/NOTES.md (hand-derived from docs/known-answers.md sections 1 and 2)
PERSON = {"voc2007": 0.7532467532, "voc2010": 0.7285714286, "coco": 0.7312588402}
DOG = {"voc2007": 0.5454545455, "voc2010": 0.5, "coco": 0.6534653465}
MEAN = {"voc2007": 0.4329004329, "voc2010": 0.4095238095, "coco": (0.7312588402 + 0.6534653465 + 0) / 3}

# docs/known-answers.md section 2 alone: one image, one class, two GTs, two detections.
SECTION2_GT = {
    "images": [{"id": 1, "width": 640, "height": 480}],
    "categories": [{"id": 1, "name": "dog"}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100], "area": 10000, "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 1, "bbox": [40, 0, 100, 100], "area": 10000, "iscrowd": 0},
    ],
}
SECTION2_DT = [
    {"image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100], "score": 0.9},
    {"image_id": 1, "category_id": 1, "bbox": [15, 0, 100, 100], "score": 0.8},
]


@pytest.fixture(scope="module")
def data():
    gt = deteval.load_ground_truth(GT)
    return gt, deteval.load_detections(DT, gt)


# --------------------------------------------------------------------------------------------
# compare: the documented numbers, one matching per matching setting
# --------------------------------------------------------------------------------------------


def test_compare_known_answers(data):
    comparison = compare(*data, ["voc2007", "voc2010", "coco"])
    table = compare_table(comparison.results)
    labels = [c["label"] for c in table["columns"]]
    assert labels == ["voc2007", "voc2010", "coco AP", "coco AP50", "coco AP75"]
    rows = {r["name"]: r["values"] for r in table["rows"]}
    assert list(rows) == ["person", "dog", "cat", "bird", "mean"]
    for i, name in enumerate(["voc2007", "voc2010", "coco"]):
        assert rows["person"][i] == pytest.approx(PERSON[name], abs=1e-10)
        assert rows["dog"][i] == pytest.approx(DOG[name], abs=1e-10)
        assert rows["cat"][i] == 0.0
        assert np.isnan(rows["bird"][i])
        assert rows["mean"][i] == pytest.approx(MEAN[name], abs=1e-10)
    # COCO AP50 / AP75 per class (NOTES.md: dog is 1 at IoU .5, 51/101 at .75)
    assert rows["dog"][3] == pytest.approx(1.0, abs=1e-15)
    assert rows["dog"][4] == pytest.approx(51 / 101, abs=1e-9)
    assert rows["person"][3] == rows["person"][4] == pytest.approx(PERSON["coco"], abs=1e-10)
    coco = comparison.results[2]
    assert rows["mean"][2:] == [coco.metrics["AP"], coco.metrics["AP50"], coco.metrics["AP75"]]


def test_compare_shares_one_matching_per_matching_setting(data, monkeypatch):
    calls = []

    def counting_match(gt, dt, protocol):
        calls.append(protocol.name)
        return match(gt, dt, protocol)

    monkeypatch.setattr(explain_module, "match", counting_match)
    names = ["voc2007", "voc2010", "voc2012", "coco", "coco-pycocotools", "voc2007-pyfrcnn"]
    comparison = compare(*data, names)
    # voc2007/2010/2012 share; pyfrcnn differs in ">"; coco and coco-pycocotools differ in two
    # GT rules that flag this ground truth alike (no `ignore: 1`, no annotation id 0), so share
    assert calls == ["coco", "voc2007", "voc2007-pyfrcnn"]
    assert comparison.matching_groups == ((0, 1, 2), (3, 4), (5,))
    assert comparison.n_matchings == 3


def test_max_dets_with_the_same_largest_cap_share_a_matching():
    coco = PRESETS["coco"]
    assert matching_key(coco) == matching_key(coco.replace(max_dets=(100,), summary="configured"))
    assert matching_key(coco) == matching_key(coco.replace(max_dets=(5, 100)))
    assert matching_key(coco) != matching_key(coco.replace(max_dets=(1, 10, 300), summary="configured"))


@pytest.mark.parametrize("field", [f for f in ACCUMULATION_FIELDS if f in FIELD_CHOICES])
def test_accumulation_fields_do_not_change_the_matching(field, data):
    """ACCUMULATION_FIELDS is checked against evaluate.match itself, value by value."""
    gt, dt = data
    for base in (PRESETS["coco"], PRESETS["voc2007"]):
        reference = match(gt, dt, base)
        for value in FIELD_CHOICES[field]:
            other = dataclasses.replace(base, **{field: value})
            assert matching_key(other) == matching_key(base)
            table = match(gt, dt, other)
            for f in dataclasses.fields(table):
                a, b = getattr(reference, f.name), getattr(table, f.name)
                assert np.array_equal(a, b), (field, value, f.name)


def test_every_other_field_is_in_the_matching_key():
    base = PRESETS["coco"]
    alternatives = {
        "iou_thresholds": (0.5,),
        "area_ranges": (("all", 0.0, 1e10),),
        "max_dets": (1, 10, 300),
        "keypoint_sigmas": (0.1,) * 17,
        "max_dets_per_class": 10000,
        "boundary_dilation_ratio": 0.005,
    }
    for f in field_names():
        if f in ACCUMULATION_FIELDS:
            continue
        if f in FIELD_CHOICES:
            value = next(v for v in FIELD_CHOICES[f] if v != getattr(base, f))
        else:
            value = alternatives[f]
        assert matching_key(base) != matching_key(dataclasses.replace(base, **{f: value})), f


PROTOCOL_SETS = [
    ["voc2007", "voc2010", "coco"],
    ["coco", "coco-pycocotools", "coco50"],
    ["voc2007-pyfrcnn", "voc2010-pyfrcnn", "voc2007-continuous", "voc2010-continuous"],
    [
        PRESETS["coco"],
        PRESETS["coco"].replace(name="coco-md", max_dets=(1, 5, 100)),
        PRESETS["coco"].replace(name="coco-300", max_dets=(1, 10, 300), summary="configured"),
    ],
]


@pytest.mark.parametrize(
    "protocols", PROTOCOL_SETS, ids=lambda ps: "+".join(getattr(p, "name", p) for p in ps)
)
def test_shared_matching_gives_the_same_results_as_separate_runs(protocols, data):
    comparison = compare(*data, protocols)
    for result, protocol in zip(comparison.results, protocols, strict=False):
        alone = deteval.evaluate(*data, protocol)
        np.testing.assert_equal(result.metrics, alone.metrics)  # NaN == NaN here
        np.testing.assert_equal(result.per_class, alone.per_class)
        for name in ("precision", "recall", "scores", "ap"):
            np.testing.assert_array_equal(getattr(result, name), getattr(alone, name))


def test_compare_checks_each_summary(data):
    bad = PRESETS["coco"].replace(name="bad", max_dets=(1, 10))
    with pytest.raises(deteval.ConfigError, match="summary 'pycocotools' needs three max_dets"):
        compare(*data, ["voc2007", bad])


def test_compare_takes_paths_and_yaml(tmp_path):
    path = tmp_path / "loose.yaml"
    path.write_text("extends: voc2010\niou_thresholds: [0.3]\n")
    comparison = compare(GT, DT, ["voc2010", str(path)])
    assert [r.protocol.name for r in comparison.results] == ["voc2010", "loose"]
    assert comparison.results[0].inputs["images"] == 5


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------


def test_terminal_table(data):
    comparison = compare(*data, ["voc2007", "voc2010", "coco"])
    text = format_compare_table(comparison.results, matching_groups=comparison.matching_groups)
    assert text.startswith("3 protocols, 2 matchings (voc2007 + voc2010 shared one):\n")
    assert f"  voc2007  [{PRESETS['voc2007'].fingerprint()}]  {PRESETS['voc2007'].source}" in text
    lines = text.splitlines()
    assert "class   voc2007  voc2010  coco AP  coco AP50  coco AP75" in lines
    assert "dog      0.5455   0.5000   0.6535     1.0000     0.5050" in lines
    assert "bird        n/a      n/a      n/a        n/a        n/a" in lines
    assert "mean     0.4329   0.4095   0.4616     0.5771     0.4121" in lines


def test_markdown_table(data):
    comparison = compare(*data, ["voc2007", "coco"])
    text = format_compare_markdown(comparison.results, matching_groups=comparison.matching_groups)
    assert "| class | voc2007 | coco AP | coco AP50 | coco AP75 |" in text
    assert "| **mean** | 0.4329 | 0.4616 | 0.5771 | 0.4121 |" in text
    assert f"- **coco** `{PRESETS['coco'].fingerprint()}`: " in text


def test_csv_table_is_wide_and_exact(data):
    comparison = compare(*data, ["voc2007", "voc2010"])
    rows = list(csv.reader(io.StringIO(format_compare_csv(comparison.results))))
    assert rows[0] == ["class", "category_id", "voc2007", "voc2010"]
    assert rows[1][:2] == ["person", "1"]
    assert float(rows[1][2]) == pytest.approx(PERSON["voc2007"], abs=1e-10)
    assert rows[4] == ["bird", "4", "", ""]
    assert rows[5][:2] == ["mean", ""]
    assert float(rows[5][3]) == pytest.approx(MEAN["voc2010"], abs=1e-10)


def test_duplicate_names_get_distinct_labels_and_csv_escapes_formulas(data):
    evil = PRESETS["voc2007"].replace(name="=cmd|' /C calc'!A0")
    comparison = compare(*data, ["voc2007", "voc2007", evil])
    labels = [c["label"] for c in compare_table(comparison.results)["columns"]]
    assert labels == ["voc2007", "voc2007#2", "=cmd|' /C calc'!A0"]
    header = next(csv.reader(io.StringIO(format_compare_csv(comparison.results))))
    assert header[4] == "'=cmd|' /C calc'!A0"
    assert "\\|" in format_compare_markdown(comparison.results)


# --------------------------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------------------------


def test_explain_matching_rule_example_is_attributed_to_matching():
    """docs/known-answers.md section 2: COCO matching finds d2 -> B, VOC calls it a false positive."""
    a = get_protocol("voc2010")
    b = a.replace(name="voc2010-coco-matching", matching="coco")
    e = explain(SECTION2_GT, SECTION2_DT, a, b)
    assert [s.name for s in e.steps] == ["matching rule"]
    step = e.steps[0]
    assert step.changes == (("matching", "voc", "coco"),)
    assert (e.start, e.end) == (0.5, 1.0)
    assert step.change == 0.5
    assert step.class_changes == (("dog", 0.5),)
    assert e.summary_line() == "voc2010 -> voc2010-coco-matching: matching rule +0.5000 (total +0.5000)"


def test_explain_voc2010_to_coco50_on_section2():
    e = explain(SECTION2_GT, SECTION2_DT, "voc2010", "coco50")
    by_name = {s.name: s for s in e.steps}
    assert by_name["interpolation"].change == pytest.approx(51 / 101 - 0.5, abs=1e-9)
    assert by_name["matching rule"].change == pytest.approx(1 - 51 / 101, abs=1e-9)
    assert by_name["box convention"].change == 0.0
    assert e.end == pytest.approx(1.0, abs=1e-15)


def test_explain_fixture_voc2007_to_coco(data):
    e = explain(*data, "voc2007", "coco")
    assert e.measure == "mean class AP"
    assert "voc2007 reports mAP and coco AP" in e.definition
    assert [s.name for s in e.steps] == [
        "interpolation",
        "box convention",
        "matching rule",
        "difficult/crowd",
        "max_dets",
        "area ranges",
        "IoU thresholds",
        "ties/score order",
        "summary",
    ]  # coco's mask_iou (raster) differs but does not apply to boxes: a note, not a step
    assert "not a step: mask_iou (differ, but do not apply to iou_type bbox)" in e.notes
    steps = {s.name: s for s in e.steps}
    matching = steps["matching rule"]
    assert [n for n, _ in matching.class_changes] == ["dog"]
    assert matching.change == pytest.approx((1 - 51 / 101) / 3, abs=1e-9)
    assert steps["IoU thresholds"].class_changes[0][0] == "dog"
    assert not steps["summary"].affects_measure
    assert steps["summary"].change == 0.0
    assert e.start == pytest.approx(MEAN["voc2007"], abs=1e-9)
    assert e.end == pytest.approx(MEAN["coco"], abs=1e-9)
    assert e.summary_line() == (
        "voc2007 -> coco: interpolation -0.0208; matching rule +0.1650; IoU thresholds "
        "-0.1155 (total +0.0287; no effect here: box convention, difficult/crowd, "
        "max_dets, area ranges, ties/score order)"
    )


def test_explain_voc2007_to_voc2010_is_interpolation_only(data):
    e = explain(*data, "voc2007", "voc2010")
    assert e.measure == "mAP"
    assert [s.name for s in e.steps] == ["interpolation"]
    assert e.total == pytest.approx(MEAN["voc2010"] - MEAN["voc2007"], abs=1e-9)
    assert e.summary_line() == "voc2007 -> voc2010: interpolation -0.0234 (total -0.0234)"


@pytest.mark.parametrize(
    ("a", "b"),
    list(
        itertools.permutations(
            ["voc2007", "voc2010-pyfrcnn", "coco", "coco-pycocotools", "coco50", "voc2007-continuous"], 2
        )
    ),
)
def test_steps_add_up_and_follow_the_documented_order(a, b, data):
    e = explain(*data, a, b)
    pa, pb = get_protocol(a), get_protocol(b)
    assert e.start == pytest.approx(class_mean_ap(deteval.evaluate(*data, pa)), abs=0)
    assert e.end == pytest.approx(class_mean_ap(deteval.evaluate(*data, pb)), abs=0)
    assert sum(s.change for s in e.steps) == pytest.approx(e.total, abs=1e-12)
    order = [name for name, _ in WALK_ORDER] + ["summary"]
    assert [s.name for s in e.steps] == sorted((s.name for s in e.steps), key=order.index)
    changed = {f for s in e.steps for f, _, _ in s.changes}
    differing = {f for f in field_names() if f not in ("name", "source") and getattr(pa, f) != getattr(pb, f)}
    skipped = set(_inapplicable(pa, pb))  # fields of another IoU type (mask_iou of box protocols)
    assert changed | skipped == differing
    assert not changed & skipped
    if "mAP" in deteval.evaluate(*data, pa).metrics and "mAP" in deteval.evaluate(*data, pb).metrics:
        assert e.measure == "mAP"


def test_explain_same_protocol_has_no_steps(data):
    e = explain(*data, "coco", "coco")
    assert e.steps == ()
    assert e.total == 0.0
    assert e.summary_line() == "coco -> coco: no change (total +0.0000)"


def test_explain_walks_through_invalid_summary_combinations(data):
    """Coco -> coco50 passes through max_dets=(100,) with summary pycocotools (not scorable as is)."""
    e = explain(*data, "coco", "coco50")
    assert "max_dets" in [s.name for s in e.steps]
    assert sum(s.change for s in e.steps) == pytest.approx(e.total, abs=1e-12)
    assert any("summary decides which numbers are the headlines" in n for n in e.notes)


def test_explain_reuses_the_cache(data, monkeypatch):
    calls = []

    def counting_match(gt, dt, protocol):
        calls.append(protocol.name)
        return match(gt, dt, protocol)

    monkeypatch.setattr(explain_module, "match", counting_match)
    cache = MatchCache(*data)
    compare(*data, ["voc2007", "voc2010"], cache=cache)
    explain(*data, "voc2007", "voc2010", cache=cache)
    assert len(calls) == 1


def test_fields_outside_the_order_get_their_own_step(data, monkeypatch):
    monkeypatch.setattr(
        sys.modules["deteval.explain"], "WALK_ORDER", tuple(s for s in WALK_ORDER if s[0] != "IoU comparison")
    )
    e = explain(*data, "voc2007", "voc2007-pyfrcnn")
    assert [s.name for s in e.steps] == ["interpolation", "iou_comparison"]
    assert any("outside the documented order" in n for n in e.notes)


def test_explanation_dict_is_json_and_complete(data):
    e = explain(*data, "voc2010", "coco")
    doc = json.loads(json.dumps(e.to_dict(), allow_nan=False))
    assert doc["from"] == "voc2010"
    assert doc["to"] == "coco"
    assert doc["order"][:4] == ["interpolation", "IoU comparison", "box convention", "matching rule"]
    matching = next(s for s in doc["steps"] if s["step"] == "matching rule")
    assert matching["fields"] == [{"field": "matching", "from": "voc", "to": "coco"}]
    assert matching["classes"][0]["name"] == "dog"
    area = next(s for s in doc["steps"] if s["step"] == "area ranges")
    assert area["fields"][0]["to"]["small"] == [0.0, 1024.0]
    assert doc["headlines"] == {
        "from": {"mAP": pytest.approx(MEAN["voc2010"])},
        "to": {"AP": pytest.approx(MEAN["coco"])},
    }


def test_explanation_text_and_markdown(data):
    e = explain(*data, "voc2007", "coco")
    text = format_explanation(e)
    assert text.splitlines()[0] == (
        "voc2007 -> coco: mean class AP 0.4329 -> 0.4616 (voc2007 mAP 0.4329, coco AP 0.4616)"
    )
    assert any(
        line.startswith("matching rule     +0.1650  0.5771  matching: voc -> coco")
        for line in text.splitlines()
    )
    assert text.rstrip().endswith(e.summary_line())
    md = format_explanation_markdown(e)
    assert "| matching rule | +0.1650 | 0.5771 | matching: voc -> coco | dog +0.4950 |" in md


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def run_cli(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_compare_table_with_explain(capsys):
    code, out, _ = run_cli(
        [
            "compare",
            "--gt",
            GT,
            "--dt",
            DT,
            "--protocol",
            "voc2007",
            "--protocol",
            "voc2010",
            "--protocol",
            "coco",
            "--explain",
            "-q",
        ],
        capsys,
    )
    assert code == 0
    lines = out.splitlines()
    assert "mean     0.4329   0.4095   0.4616     0.5771     0.4121" in lines
    assert "voc2007 -> voc2010: interpolation -0.0234 (total -0.0234)" in lines
    assert any(
        line.startswith("voc2010 -> coco: interpolation +0.0025; matching rule +0.1650") for line in lines
    )


def test_cli_compare_json_contract(capsys, tmp_path):
    out_path = tmp_path / "cmp.json"
    code, out, _ = run_cli(
        [
            "compare",
            "--gt",
            GT,
            "--dt",
            DT,
            "--protocol",
            "voc2007",
            "--protocol",
            "coco",
            "--explain",
            "--format",
            "json",
            "--output",
            out_path,
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    assert doc == json.loads(out_path.read_text())
    assert set(doc) >= {
        "deteval_version",
        "inputs",
        "results",
        "comparison",
        "matchings",
        "explanations",
        "warnings",
    }
    assert [r["protocol"] for r in doc["results"]] == ["voc2007", "coco"]
    for r in doc["results"]:
        assert set(r) >= {"protocol", "iou_type", "config", "protocol_hash", "metrics", "per_class"}
        assert r["protocol_hash"] == PRESETS[r["protocol"]].fingerprint()
    assert doc["results"][0]["metrics"] == {"mAP": pytest.approx(MEAN["voc2007"])}
    assert doc["comparison"]["rows"][3] == {"category_id": 4, "name": "bird", "values": [None] * 4}
    assert doc["matchings"] == [["voc2007"], ["coco"]]
    assert doc["explanations"][0]["summary"].startswith("voc2007 -> coco: interpolation -0.0208")


def test_cli_compare_markdown_and_csv(capsys):
    code, out, _ = run_cli(
        [
            "compare",
            "--gt",
            GT,
            "--dt",
            DT,
            "--protocol",
            "voc2007",
            "--protocol",
            "voc2010",
            "--format",
            "markdown",
            "--explain",
            "-q",
        ],
        capsys,
    )
    assert code == 0
    assert "| **mean** | 0.4329 | 0.4095 |" in out
    assert "| interpolation | -0.0234 |" in out
    code, out, err = run_cli(
        [
            "compare",
            "--gt",
            GT,
            "--dt",
            DT,
            "--protocol",
            "voc2007",
            "--protocol",
            "voc2010",
            "--format",
            "csv",
            "--explain",
        ],
        capsys,
    )
    assert code == 0
    assert out.splitlines()[0] == "class,category_id,voc2007,voc2010"
    assert "--explain is not part of the CSV" in err


def test_cli_compare_needs_two_protocols(capsys):
    code, out, err = run_cli(["compare", "--gt", GT, "--dt", DT, "--protocol", "coco"], capsys)
    assert code == 2
    assert out == ""
    assert "expected at least two --protocol or two --dt, found 1 protocol" in err


def test_cli_compare_bad_protocol_exits_3(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("extends: voc2010\nmatching: pascal\n")
    code, out, err = run_cli(
        ["compare", "--gt", GT, "--dt", DT, "--protocol", "coco", "--protocol", bad], capsys
    )
    assert code == 3
    assert out == ""
    assert f"{bad}: matching: expected one of 'coco', 'voc', 'ultralytics', found the string 'pascal'" in err


def test_cli_compare_help_has_an_example(capsys):
    code, out, _ = run_cli(["compare", "--help"], capsys)
    assert code == 0
    assert "--protocol voc2007 --protocol voc2010 --explain" in out


def test_docs_compare_example_is_the_real_output(capsys):
    """docs/protocols.md pastes a real run; it must stay what the code prints."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "protocols.md").read_text()
    block = text.split("$ deteval compare --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json \\\n")[1]
    pasted = block.split("\n", 1)[1].split("\n```")[0]
    code = main(
        [
            "compare",
            "--gt",
            str(root / "fixtures/coco/gt.json"),
            "--dt",
            str(root / "fixtures/coco/dt.json"),
            "--protocol",
            "voc2007",
            "--protocol",
            "voc2010",
            "--protocol",
            "coco",
            "--explain",
            "-q",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.rstrip("\n") == pasted.rstrip("\n")
