"""Per-class rows (``AP50``, ``AP75``, ``APs`` ... ``AR100`` ...) against pycocotools' arrays.

Each per-class value is pycocotools' ``summarize`` restricted to one class: the mean of
``E.eval['precision'][t, :, k, a, m]`` (``recall[t, k, a, m]`` for AR) over its entries > -1, at
the thresholds, area and maxDets of the headline metric of the same name; -1 (nothing defined)
is None / NaN. Compared exactly on the generated cross-check datasets.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import deteval
from tests.crosscheck.generate import generate
from tests.reference.run_pycocotools import run_pycocotools

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

#: name -> (kind, IoU threshold index or None for all, area index, maxDets index): pycocotools'
#: summarize rows (AP at maxDets=100 is the per-class ``AP``, compared elsewhere).
ROWS = {
    "AP50": ("AP", 0, 0, 2),
    "AP75": ("AP", 5, 0, 2),
    "APs": ("AP", None, 1, 2),
    "APm": ("AP", None, 2, 2),
    "APl": ("AP", None, 3, 2),
    "AR1": ("AR", None, 0, 0),
    "AR10": ("AR", None, 0, 1),
    "AR100": ("AR", None, 0, 2),
    "ARs": ("AR", None, 1, 2),
    "ARm": ("AR", None, 2, 2),
    "ARl": ("AR", None, 3, 2),
}


def pycocotools_class_value(ev, name, k):
    kind, t, a, m = ROWS[name]
    thresholds = slice(None) if t is None else [t]
    if kind == "AP":
        s = ev.precision[thresholds][:, :, k, a, m]
    else:
        s = ev.recall[thresholds][:, k, a, m]
    return -1.0 if len(s[s > -1]) == 0 else float(np.mean(s[s > -1]))


DATASETS = [dict(seed=s) for s in range(0, 40)] + [
    dict(seed=s, max_images=150, max_classes=30) for s in range(1000, 1004)
]


@pytest.mark.parametrize("options", DATASETS, ids=lambda o: str(o["seed"]))
def test_per_class_rows_equal_pycocotools_arrays(options):
    gt, dt = generate(**options)
    ev = run_pycocotools(gt, dt)
    result = deteval.evaluate(gt, dt, "coco-pycocotools")
    rows = result.to_dict()["per_class"]
    assert [r["category_id"] for r in rows] == sorted(c["id"] for c in gt["categories"])
    for k, (row, python_row) in enumerate(zip(rows, result.per_class, strict=True)):
        assert set(ROWS) <= set(row)
        for name in ROWS:
            expected = pycocotools_class_value(ev, name, k)
            if expected == -1:
                assert row[name] is None, (options, row["name"], name)
                assert math.isnan(python_row[name])
            else:
                assert row[name] == expected, (options, row["name"], name, row[name], expected)


def test_rows_are_named_after_the_protocols_max_dets():
    gt, dt = generate(seed=3)
    protocol = deteval.protocol.get_protocol("coco").replace(name="md", max_dets=(1, 20, 300))
    row = deteval.evaluate(gt, dt, protocol).per_class[0]
    assert {"AR1", "AR20", "AR300"} <= set(row)
    assert "AR100" not in row


@pytest.mark.parametrize("seed", [2, 9, 2100])
def test_per_class_rows_at_other_max_dets_equal_pycocotools(seed):
    gt, dt = generate(seed=seed, force_many_dets=seed >= 2100, max_images=5 if seed >= 2100 else 20)
    ev = run_pycocotools(gt, dt, max_dets=(1, 5, 300))
    protocol = deteval.protocol.get_protocol("coco-pycocotools").replace(name="md", max_dets=(1, 5, 300))
    rows = deteval.evaluate(gt, dt, protocol).to_dict()["per_class"]
    names = {"AR1": "AR1", "AR5": "AR10", "AR300": "AR100"}  # ROWS' maxDets indices 0, 1, 2
    for k, row in enumerate(rows):
        for name in ("AP50", "AP75", "APs", "APm", "APl", "ARs", "ARm", "ARl", *names):
            expected = pycocotools_class_value(ev, names.get(name, name), k)
            assert row[name] == (None if expected == -1 else expected), (seed, row["name"], name)
