"""deteval.lrp against the slow twin of the authors' LRP (tests/reference/slow_lrp.py).

The twin matches with pycocotools itself and recomputes every count at every cut with loops; deteval
matches with its own code and cumulates. Per class, oLRP, its three components and the
LRP-optimal threshold must agree (bit for bit: the twin adds in the reference's order), at the
default tau 0.5 and at other taus (the lane of that threshold).
"""

from __future__ import annotations

import math

import pytest

import deteval
from deteval.lrp import mean_tp_iou, optimal_lrp, tp_ious
from tests.crosscheck.generate import generate
from tests.reference.slow_lrp import slow_mean_tp_iou, slow_optimal_lrp

DATASETS = {f"small-{s}": dict(seed=s) for s in range(0, 40)}
DATASETS.update({f"medium-{s}": dict(seed=s, max_images=40, max_classes=8) for s in range(1000, 1004)})
DATASETS.update(
    {
        f"many-dets-{s}": dict(seed=s, max_images=4, max_classes=3, force_many_dets=True)
        for s in range(2100, 2103)
    }
)
KEYS = ("oLRP", "oLRP_loc", "oLRP_FP", "oLRP_FN", "threshold")


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("tau", [0.5, 0.75, 0.3])
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_optimal_lrp_matches_the_twin(name: str, tau: float) -> None:
    gt, dt = generate(**DATASETS[name])
    if not dt:
        pytest.skip("the generator made no detection for this seed")
    g = deteval.load_ground_truth(gt)
    d = deteval.load_detections(dt, g)
    protocol = deteval.get_protocol("coco").replace(name="lrp", iou_thresholds=[tau])
    result = deteval.evaluate(g, d, protocol)
    ours = optimal_lrp(result, tp_ious(result, g, d), tau=tau)
    theirs = slow_optimal_lrp(gt, dt, tau=tau, max_det=100)
    for row in ours.per_class:
        expected = theirs[row["category_id"]]
        if expected is None:
            assert row["n_tp"] == -1
            assert math.isnan(row["oLRP"])
            continue
        for key in KEYS:
            assert _same(row[key], expected[key]), (row["category_id"], key, row[key], expected[key])
    values = [v["oLRP"] for v in theirs.values() if v is not None]
    assert _same(ours.moLRP, float(sum(values) / len(values)) if values else math.nan) or math.isclose(
        ours.moLRP, sum(values) / len(values), rel_tol=0, abs_tol=1e-15
    )


@pytest.mark.parametrize("iou", [0.5, 0.75])
@pytest.mark.parametrize("name", sorted(DATASETS)[:20])
def test_mean_tp_iou_matches_the_twin(name: str, iou: float) -> None:
    gt, dt = generate(**DATASETS[name])
    if not dt:
        pytest.skip("the generator made no detection for this seed")
    g = deteval.load_ground_truth(gt)
    d = deteval.load_detections(dt, g)
    result = deteval.evaluate(g, d, "coco")
    ours = mean_tp_iou(result, tp_ious(result, g, d, iou_threshold=iou))
    theirs = slow_mean_tp_iou(gt, dt, iou_threshold=iou)
    for row in ours:
        n_tp, mean = theirs[row["category_id"]]
        assert row["n_tp"] == n_tp
        assert _same(row["mean_tp_iou"], mean) or math.isclose(row["mean_tp_iou"], mean, abs_tol=1e-15)
