"""deteval's ``lvis`` and ``lvis-fixed-ap`` against lvis-api's ``LVISEval`` (the ``lvis`` package).

lvis-api uses ``np.float``, removed in numpy 2: the test (only the test) sets ``np.float = float``
before running it. Stats are compared with ``==``, precision / recall arrays within one float
step (NaN where lvis-api has -1). Fixed AP's oracle is ``scripts/evaluate_ap_fixed.py`` of
achalddave/large-vocab-devil, done here in a few lines: each class's top 10,000 results by a
stable score sort, then ``LVISResults(max_dets=-1)`` and ``params.max_dets = -1``.

faster-coco-eval has an LVIS mode (``lvis_style``); it is not used as an oracle here (see
docs/protocols.md).
"""

from __future__ import annotations

import copy
import logging
from collections import defaultdict

import numpy as np
import pytest

import deteval
from tests.crosscheck.compare import assert_array_within_one_step
from tests.crosscheck.generate_lvis import generate_lvis

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning", "ignore::DeprecationWarning")

lvis = pytest.importorskip("lvis")

LVIS_NAMES = (
    "AP",
    "AP50",
    "AP75",
    "APs",
    "APm",
    "APl",
    "APr",
    "APc",
    "APf",
    "AR@300",
    "ARs@300",
    "ARm@300",
    "ARl@300",
)


@pytest.fixture(autouse=True)
def numpy_float_for_lvis_api(monkeypatch):
    """lvis-api calls ``np.float`` (gone in numpy 2): give it back for the test's duration only."""
    monkeypatch.setattr(np, "float", float, raising=False)
    logging.getLogger("lvis").setLevel(logging.ERROR)


def run_lvis_api(gt: dict, dt: list, *, fixed_ap: int | None = None):
    from lvis import LVIS, LVISEval, LVISResults

    lvis_gt = LVIS.__new__(LVIS)
    lvis_gt.logger = logging.getLogger("lvis")
    lvis_gt.dataset = copy.deepcopy(gt)
    lvis_gt._create_index()
    results = copy.deepcopy(dt)
    if fixed_ap is not None:
        by_cat = defaultdict(list)
        for ann in results:
            by_cat[ann["category_id"]].append(ann)
        results = [
            a
            for anns in by_cat.values()
            for a in sorted(anns, key=lambda x: x["score"], reverse=True)[:fixed_ap]
        ]
        lvis_dt = LVISResults(lvis_gt, results, max_dets=-1)
    else:
        lvis_dt = LVISResults(lvis_gt, results)
    evaluator = LVISEval(lvis_gt, lvis_dt, iou_type="bbox")
    if fixed_ap is not None:
        evaluator.params.max_dets = -1
    evaluator.run()
    return evaluator


def check(name, result, ref, names):
    for key, expected in zip(names, ref.results.values(), strict=True):
        value = result.metrics[key]
        if expected == -1:
            assert np.isnan(value), f"{name}: {key}"
        else:
            assert value == expected, f"{name}: {key}: deteval {value!r}, lvis-api {expected!r}"
    assert_array_within_one_step(result.precision[..., 0], ref.eval["precision"], f"{name} precision")
    assert_array_within_one_step(result.recall[..., 0], ref.eval["recall"], f"{name} recall")


@pytest.mark.parametrize("seed", range(60))
def test_lvis_equals_lvis_api(seed):
    gt, dt = generate_lvis(seed)
    if not dt:
        pytest.skip("lvis-api cannot take an empty result list")
    check(f"lvis-{seed}", deteval.evaluate(gt, dt, "lvis"), run_lvis_api(gt, dt), LVIS_NAMES)


FIXED_NAMES = LVIS_NAMES[:9] + ("AR@all", "ARs@all", "ARm@all", "ARl@all")


@pytest.mark.parametrize("seed", range(20))
def test_lvis_fixed_ap_equals_the_fixed_ap_script(seed):
    gt, dt = generate_lvis(seed)
    check(
        f"fixed-{seed}",
        deteval.evaluate(gt, dt, "lvis-fixed-ap"),
        run_lvis_api(gt, dt, fixed_ap=10000),
        FIXED_NAMES,
    )


@pytest.mark.parametrize("seed", range(20))
def test_a_small_class_budget_bites_as_in_the_fixed_ap_script(seed):
    """The budget is a field: 40 per class cuts these small datasets (ties at the cut included)."""
    gt, dt = generate_lvis(seed)
    protocol = deteval.get_protocol("lvis-fixed-ap").replace(max_dets_per_class=40)
    check(
        f"fixed40-{seed}", deteval.evaluate(gt, dt, protocol), run_lvis_api(gt, dt, fixed_ap=40), FIXED_NAMES
    )
