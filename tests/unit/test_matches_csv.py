"""``--matches``: the columnar CSV writer gives the row writer's bytes exactly."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

import deteval
from deteval.analysis import OUTCOME_WORDS, MatchColumns, match_columns, match_rows, matches
from deteval.cli import main
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import get_protocol
from deteval.report import format_matches_csv
from tests import ROOT
from tests.crosscheck.generate import generate

pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
]

results_module = importlib.import_module("deteval.report.results")
FX = ROOT / "fixtures"

FIXTURES = [
    (FX / "coco" / "gt.json", FX / "coco" / "dt.json", {}, "coco"),
    (FX / "coco" / "gt.json", FX / "coco" / "dt_b.json", {}, "voc2007"),
    (FX / "coco" / "gt.json", FX / "coco" / "dt.json", {}, "ultralytics"),
    (FX / "segm" / "gt.json", FX / "segm" / "dt.json", {"iou_type": "segm"}, "coco"),
    (FX / "segm" / "gt.json", FX / "segm" / "dt.json", {"iou_type": "segm"}, "coco-exact-masks"),
    (FX / "lvis" / "gt.json", FX / "lvis" / "dt.json", {}, "lvis"),
    (FX / "voc", FX / "voc" / "results", {}, "voc2007"),
    (FX / "voc", FX / "voc" / "results", {}, "coco"),
    (FX / "yolo", FX / "yolo" / "predictions", {}, "coco50"),
]


def row_writer(result, columns=None):
    """The writer as it was: one formatted line per dict of :func:`matches`."""
    rows = matches(result) if columns is None else match_rows(result, columns)
    return format_matches_csv(result, rows)


@pytest.mark.parametrize(
    ("gt", "dt", "options", "protocol"), FIXTURES, ids=lambda v: getattr(v, "name", None)
)
def test_fixtures_give_the_row_writers_bytes(gt, dt, options, protocol):
    result = deteval.evaluate(str(gt), str(dt), get_protocol(protocol).replace(**options))
    text = format_matches_csv(result, match_columns(result))
    assert text == row_writer(result)
    assert text.count("\n") == len(result.table.det_score) + 1


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("protocol", ["coco", "voc2010", "coco-pycocotools"])
def test_generated_data_at_every_lane(seed, protocol):
    gt_dict, dt_list = generate(seed, with_id_zero=seed % 2 == 0, force_many_dets=True)
    gt = load_ground_truth(gt_dict)
    result = deteval.evaluate(gt, load_detections(dt_list, gt), protocol)
    p = result.protocol
    for threshold in p.iou_thresholds[::3]:
        for area in p.area_names:
            columns = match_columns(result, iou_threshold=threshold, area=area)
            rows = matches(result, iou_threshold=threshold, area=area)
            assert match_rows(result, columns) == rows
            assert format_matches_csv(result, columns) == format_matches_csv(result, rows)


@pytest.fixture(scope="module")
def small_result():
    gt = {
        "images": [{"id": 7}, {"id": -3}],
        "categories": [
            {"id": 3, "name": 'cat, "wild"'},
            {"id": -12, "name": "=cmd"},
            {"id": 900, "name": "ökologisch 猫"},
        ],
        "annotations": [
            {"id": 0, "image_id": 7, "category_id": 3, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
            {"id": -5, "image_id": -3, "category_id": 900, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
            {"id": 2**62, "image_id": -3, "category_id": -12, "bbox": [0, 0, 9, 9], "area": 81, "iscrowd": 1},
        ],
    }
    dt = [
        {"image_id": 7, "category_id": 3, "bbox": [0, 0, 10, 10], "score": 0.5},
        {"image_id": -3, "category_id": 900, "bbox": [0, 0, 10, 10], "score": 1e-05},
        {"image_id": -3, "category_id": -12, "bbox": [0, 0, 9, 9], "score": 0.30000000000000004},
        {"image_id": 7, "category_id": -12, "bbox": [5, 5, 9, 9], "score": 0.0},
    ]
    return deteval.evaluate(gt, dt, "coco")


def test_names_ids_and_scores_that_need_care(small_result):
    text = format_matches_csv(small_result, match_columns(small_result))
    assert text == row_writer(small_result)
    assert '3,"cat, ""wild""",0.5,tp,0\n' in text
    assert "-12,'=cmd," in text
    assert "ökologisch 猫,1e-05," in text
    assert f",ignored,{2**62}\n" in text


@pytest.mark.parametrize("seed", range(4))
def test_any_float_and_integer_prints_as_repr_and_str(small_result, seed):
    """Columns as the writer may get them: scores of random bits, ids of any int64."""
    rng = np.random.default_rng(seed)
    n = 5000
    bits = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    score = bits.view(np.float64).copy()
    score[:12] = [0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1e16, 1e-4, 1e-5, 2.0**63, -1.5, 0.1]
    n_gt = len(small_result.annotation_ids)
    columns = MatchColumns(
        detection=np.sort(rng.choice(10**12, size=n, replace=False)).astype(np.int64),
        image_row=rng.integers(0, 2, n),
        class_index=rng.integers(0, 3, n),
        score=score,
        outcome=rng.integers(0, 3, n).astype(np.int8),
        gt_row=rng.integers(0, n_gt, n),
        has_gt=rng.random(n) < 0.5,
    )
    extreme_ids = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0], dtype=np.int64)
    result = dataclasses.replace(small_result, annotation_ids=extreme_ids)
    text = format_matches_csv(result, columns)
    assert text == row_writer(result, columns)
    assert f",{np.iinfo(np.int64).min}\n" in text


@pytest.mark.parametrize(
    "values", [[0], [-1], [9, 10, -10, 99, 100], [np.iinfo(np.int64).min, np.iinfo(np.int64).max], []]
)
def test_integer_field_is_str(values):
    data = results_module._integer_field(np.array(values, dtype=np.int64))
    texts = [bytes(row).replace(b"\0", b"").decode() for row in data]
    assert texts == [str(v) for v in values]


def test_a_name_with_a_nul_goes_through_the_row_writer(small_result, monkeypatch):
    result = dataclasses.replace(small_result, category_names=("a\0b", "=cmd", "x"))
    columns = match_columns(result)
    assert results_module._matches_csv_columns(result, columns, {3: "a\0b", -12: "'=cmd", 900: "x"}) is None
    assert format_matches_csv(result, columns) == row_writer(result)


def test_large_inputs_are_written_in_chunks(monkeypatch):
    monkeypatch.setattr(results_module, "_MATCHES_CHUNK_ROWS", 3)
    result = deteval.evaluate(str(FX / "coco" / "gt.json"), str(FX / "coco" / "dt.json"), "coco")
    assert format_matches_csv(result, match_columns(result)) == row_writer(result)


def test_cli_writes_the_rows(tmp_path, capsys):
    out = tmp_path / "m.csv"
    gt, dt = FX / "coco" / "gt.json", FX / "coco" / "dt.json"
    assert main(["evaluate", "--gt", str(gt), "--dt", str(dt), "-q", "--matches", str(out)]) == 0
    result = deteval.evaluate(str(gt), str(dt), "coco")
    # --matches explains itself (tests/unit/test_per_image.py): the columns of before come first,
    # with the row writer's text, then the new ones; missed objects (outcome fn) come last.
    lines = out.read_text(encoding="utf-8").splitlines()
    before = row_writer(result).splitlines()
    assert lines[0].startswith(before[0] + ",")
    assert all(line.startswith(was + ",") for line, was in zip(lines[1:], before[1:], strict=False))
    assert set(OUTCOME_WORDS) >= {line.split(",")[5] for line in lines[1 : len(before)]}
    assert {line.split(",")[5] for line in lines[len(before) :]} <= {"fn"}
