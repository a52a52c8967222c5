"""Renderers on their own (deteval.report).

Table, Markdown, CSV and JSON of small results built by the front door on fixtures/coco; Markdown
escaping of `|` and CSV escaping of formula cells.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import pytest

from deteval import api, report
from deteval.errors import UndefinedMetricWarning
from tests import ROOT

GT = str(ROOT / "fixtures" / "coco" / "gt.json")
DT = str(ROOT / "fixtures" / "coco" / "dt.json")


@pytest.fixture(scope="module")
def results():
    with pytest.warns(UndefinedMetricWarning):
        return [api.evaluate(GT, DT, "voc2010"), api.evaluate(GT, DT, "coco")]


def _renamed(result, name: str):
    """The same result with a class name that needs escaping."""
    per_class = [dict(c) for c in result.per_class]
    per_class[0]["name"] = name
    names = (name,) + tuple(result.category_names[1:])
    return dataclasses.replace(result, per_class=per_class, category_names=names)


def test_table_lists_protocol_metrics_and_classes(results):
    text = report.format_table(results)
    assert text.startswith("protocol voc2010 [")
    assert "  mAP = 0.4095" in text  # fixtures/coco/NOTES.md
    assert "Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] =" in text
    assert text.count("id  class") == 2
    assert "person" in text
    assert "id  class" not in report.format_table(results, per_class=False)
    assert text.endswith("\n")


def test_markdown_has_one_section_per_protocol(results):
    md = report.format_markdown(results)
    assert md.count("### ") == 2
    assert "| mAP | 0.4095 |" in md
    assert "| id | class | AP | num_gt | num_det |" in md


def test_markdown_escapes_pipes_in_names(results):
    md = report.format_markdown([_renamed(results[0], "a|b\nc")])
    assert "| a\\|b c |" in md
    table = report.format_compare_markdown([_renamed(results[0], "x|y"), _renamed(results[1], "x|y")])
    assert "x\\|y" in table
    assert "x|y |" not in table


def test_csv_is_long_format_and_parses(results):
    rows = list(csv.reader(io.StringIO(report.format_csv(results))))
    assert rows[0] == ["protocol", "kind", "name", "category_id", "value", "num_gt", "num_det"]
    assert ["voc2010", "metric", "mAP"] == rows[1][:3]
    bird = [r for r in rows if r[2] == "bird"]
    assert bird
    assert all(r[4] == "" for r in bird)


@pytest.mark.parametrize("name", ["=HYPERLINK(1)", "+1", "-1", "@SUM(A1)", "\tx"])
def test_csv_escapes_formula_cells(results, name):
    for text in (
        report.format_csv([_renamed(results[0], name)]),
        report.format_compare_csv([_renamed(results[0], name), _renamed(results[1], name)]),
    ):
        cells = [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]
        assert "'" + name in cells
        assert name not in cells


def test_json_document_is_the_contract(results):
    doc = report.to_json(results, inputs={"gt": GT, "dt": DT}, warnings=["w1"])
    text = report.dumps(doc)
    back = json.loads(text)
    assert set(back) == {"deteval_version", "inputs", "results", "warnings", "notes"}
    assert [r["protocol"] for r in back["results"]] == ["voc2010", "coco"]
    assert back["warnings"] == ["w1"]
    assert len(back["notes"]) == 1
    bird = [c for c in back["results"][0]["per_class"] if c["name"] == "bird"][0]
    assert bird["AP"] is None  # NaN -> null
    assert "NaN" not in text


def test_confidence_and_matches_renderers(results):
    voc = results[0]
    rows = api.at_confidence(voc, 0.7)
    table = report.format_confidence_table(voc, rows, 0.7)
    assert "voc2010: detections with score >= 0.7 at IoU 0.5" in table
    assert "precision" in table
    entry = report.confidence_json(voc, rows, 0.7)
    assert entry["threshold"] == 0.7
    assert entry["iou_threshold"] == 0.5
    json.dumps(entry, allow_nan=False)
    lines = list(csv.reader(io.StringIO(report.format_matches_csv(voc, api.matches(voc)))))
    assert lines[0][0] == "detection"
    assert len(lines) == 1 + len(voc.table.det_score)


def test_explanation_text_and_markdown():
    with pytest.warns(UndefinedMetricWarning):
        comparison = api.compare(GT, DT, ["voc2007", "voc2010"])
    e = api.explain(GT, DT, comparison.results[0].protocol, comparison.results[1].protocol)
    text = report.format_explanation(e)
    assert text.startswith("voc2007 -> voc2010: mAP ")
    assert text.rstrip().endswith(e.summary_line())
    md = report.format_explanation_markdown(e)
    assert md.startswith("**voc2007 → voc2010**")
    assert "| step | change |" in md


def test_validation_and_protocol_listing():
    found = api.validate(GT)
    text = report.format_validation(found.to_dict())
    assert text.startswith(f"ground truth: {GT} (coco)")
    assert text.endswith("OK: the ground truth can be scored\n")
    listed = {"voc2007": api.resolve_protocol("voc2007")}
    assert report.format_protocols(listed).startswith("voc2007 [")
    assert "    ap_method: 11_point\n" in report.format_protocols(listed)
    assert report.protocols_json(listed)["voc2007"]["protocol_hash"] == listed["voc2007"].fingerprint()
    assert report.format_protocols_yaml(listed).startswith("# voc2007 [")


# --------------------------------------------------------------------------------------------
# dumps_analysis: the analyze document is json.dumps(indent=2) byte for byte


def _float_lists():
    from hypothesis import strategies as st

    item = st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(min_value=-1e-3, max_value=1e-3),  # where orjson writes 0.0000x, repr 1e-05
        st.integers(min_value=-(2**70), max_value=2**70),
        st.none(),
    )
    return st.lists(item, max_size=40)


def test_dumps_analysis_equals_json_dumps_on_number_lists(request):
    from hypothesis import given, settings

    from deteval.report.analyze import dumps_analysis
    from tests.support.tier import examples

    @settings(max_examples=examples(request.config, 300), deadline=None)
    @given(_float_lists(), _float_lists())
    def check(a, b):
        doc = {"curve": a, "nested": [{"x": b, "name": "n"}], "empty": []}
        assert dumps_analysis(doc) == json.dumps(doc, indent=2, allow_nan=False)

    check()


@pytest.mark.parametrize(
    "values",
    [
        [1e-05, -3.5e-07, 0.0001, 9.999999999999999e-05, 10.00001, 100.000002, 1e16, 1.5e300, -0.0, 5e-324],
        [0.5, None, 2, 2**65],  # an integer beyond 64 bits: the standard library writes it
        [True, 1.0],  # not plain numbers: item by item
    ],
)
def test_dumps_analysis_formats_like_the_standard_library(values):
    from deteval.report.analyze import dumps_analysis

    doc = {"values": values}
    assert dumps_analysis(doc) == json.dumps(doc, indent=2, allow_nan=False)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_dumps_analysis_refuses_nan_and_infinity(bad):
    from deteval.report.analyze import dumps_analysis

    with pytest.raises(ValueError, match="JSON compliant"):
        dumps_analysis({"values": [0.5, bad, None]})


def test_dumps_analysis_writes_arrays_as_their_lists_with_nan_as_null():
    import numpy as np

    from deteval.report.analyze import dumps_analysis

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.random(50), rng.random(20) * 1e-5, [np.nan, 0.0, -0.0, 1e16, 1.0]])
    as_list = [None if v != v else v for v in values.tolist()]
    doc = {"curve": {"a": values, "b": np.arange(4), "c": np.zeros(0)}}
    want = {"curve": {"a": as_list, "b": [0, 1, 2, 3], "c": []}}
    assert dumps_analysis(doc) == json.dumps(want, indent=2, allow_nan=False)
    with pytest.raises(ValueError, match="JSON compliant"):
        dumps_analysis({"a": np.array([0.5, np.inf])})


def test_analysis_to_dict_arrays_dumps_like_the_lists():
    from deteval.diagnose import analyze
    from deteval.io import load_detections, load_ground_truth
    from deteval.report.analyze import dumps_analysis

    gt = load_ground_truth(GT)
    result = analyze(gt, load_detections(DT, gt), "coco")
    assert dumps_analysis(result.to_dict(arrays=True)) == json.dumps(
        result.to_dict(), indent=2, allow_nan=False
    )
