"""Best-F1 operating points against a brute force over every confidence (``at_confidence``)."""

from __future__ import annotations

import importlib
import math

import numpy as np
import orjson
import pytest

import deteval
from deteval.analysis import at_confidence
from tests.crosscheck.generate import generate

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")


def _brute(result, classes):
    """(confidence, precision, recall, f1) maximising micro F1 over ``classes`` (ties: highest)."""
    scores = np.unique(result.table.det_score[np.isin(result.table.det_class, classes)])[::-1]
    best = None
    for s in scores:
        rows = [r for k, r in enumerate(at_confidence(result, float(s))) if k in classes]
        tp, fp, fn = (sum(r[key] for r in rows) for key in ("tp", "fp", "fn"))
        f1 = 2 * tp / (2 * tp + fp + fn)
        if best is None or f1 > best[3]:
            best = (float(s), tp / (tp + fp) if tp + fp else math.nan, tp / (tp + fn), f1)
    return best


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("protocol", ["coco", "voc2010"])
def test_per_class_and_overall_equal_a_brute_force(seed, protocol):
    gt, dt = generate(seed=seed)
    result = deteval.evaluate(gt, dt, protocol)
    points = result.best_f1
    n_positive = result.table.n_positive[:, 0]
    for k, row in enumerate(points["per_class"]):
        assert row["category_id"] == result.category_ids[k]
        has_dets = (result.table.det_class == k).any()
        if n_positive[k] == 0:
            assert all(math.isnan(row[key]) for key in ("confidence", "precision", "recall", "f1"))
        elif not has_dets:
            assert math.isnan(row["confidence"])
            assert row["recall"] == 0
            assert row["f1"] == 0
        else:
            expected = _brute(result, [k])
            got = (row["confidence"], row["precision"], row["recall"], row["f1"])
            np.testing.assert_equal(got, expected)
    counted = [k for k in range(len(n_positive)) if n_positive[k] > 0]
    if counted and np.isin(result.table.det_class, counted).any():
        overall = points["overall"]
        got = (overall["confidence"], overall["precision"], overall["recall"], overall["f1"])
        np.testing.assert_equal(got, _brute(result, counted))


def test_json_has_best_f1_with_nulls():
    gt = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}
        ],
    }
    dt = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.4},
    ]
    doc = deteval.evaluate(gt, dt, "coco").to_dict()["best_f1"]
    assert doc["iou_threshold"] == 0.5
    assert doc["per_class"][0] == {
        "category_id": 1,
        "name": "cat",
        "confidence": 0.9,
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
    }
    assert doc["per_class"][1]["confidence"] is None
    assert doc["per_class"][1]["f1"] is None
    assert doc["overall"] == {"confidence": 0.9, "precision": 1.0, "recall": 1.0, "f1": 1.0}


def test_best_f1_is_computed_on_first_access_only(monkeypatch):
    """``best_f1`` costs a fifth of scoring at 20k images: computed when read, same numbers."""
    # where the result's best_f1 reads it, when read (deteval.evaluate.scoring imports it then)
    operating_points = importlib.import_module("deteval.operating_points")

    gt, dt = generate(seed=3)
    eager = deteval.evaluate(gt, dt, "coco").to_dict()["best_f1"]
    calls = []
    real = operating_points.best_f1_points
    monkeypatch.setattr(operating_points, "best_f1_points", lambda *a: calls.append(1) or real(*a))
    result = deteval.evaluate(gt, dt, "coco")
    assert calls == []
    first = result.to_dict()["best_f1"]
    assert result.best_f1 is result.best_f1
    assert calls == [1]
    assert orjson.dumps(first) == orjson.dumps(eager)
