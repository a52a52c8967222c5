"""D-ECE (deteval.calibration): hand-derived cases, refusals, and netcal's ECE(detection=True) as oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest

import deteval
from deteval.analysis import matches
from deteval.calibration import binned_calibration_error, calibration
from deteval.errors import ConfigError, InputError
from tests.crosscheck.generate import generate

# Class 'b' of the hand-made case has only a crowd region (no ground truth counted: a note).
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")

GT = {
    "images": [{"id": 1, "width": 100, "height": 50}],
    "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 1, "bbox": [40, 20, 20, 20], "area": 400, "iscrowd": 0},
        {"id": 3, "image_id": 1, "category_id": 2, "bbox": [70, 0, 30, 30], "area": 900, "iscrowd": 1},
    ],
}
DT = [
    {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.95},  # tp
    {"image_id": 1, "category_id": 1, "bbox": [41, 20, 20, 20], "score": 0.55},  # tp
    {"image_id": 1, "category_id": 1, "bbox": [80, 40, 10, 10], "score": 0.45},  # fp
    {"image_id": 1, "category_id": 2, "bbox": [70, 0, 30, 30], "score": 0.9},  # on a crowd: ignored
    {"image_id": 1, "category_id": 2, "bbox": [0, 30, 10, 10], "score": 0.35},  # fp
]


def test_hand_derived_confidence_bins() -> None:
    c = calibration(deteval.evaluate(GT, DT, "coco"), bins=10)
    # Bins (10 wide): 0.95 -> [0.9, 1] correct; 0.55 -> [0.5, 0.6) correct; 0.45 -> [0.4, 0.5)
    # wrong; 0.35 -> [0.3, 0.4) wrong; the ignored detection left out: n = 4.
    expected = (abs(1 - 0.95) + abs(1 - 0.55) + abs(0 - 0.45) + abs(0 - 0.35)) / 4
    assert c.d_ece == pytest.approx(expected, abs=1e-15)
    assert [row["n_det"] for row in c.per_class] == [3, 1]
    assert c.per_class[0]["D-ECE"] == pytest.approx((0.05 + 0.45 + 0.45) / 3, abs=1e-15)
    assert c.per_class[1]["D-ECE"] == pytest.approx(0.35, abs=1e-15)
    rel = c.to_dict()["reliability"]
    assert [r["count"] for r in rel] == [0, 0, 0, 1, 1, 1, 0, 0, 0, 1]
    assert rel[9]["precision"] == 1.0
    assert rel[3]["precision"] == 0.0
    assert rel[0]["precision"] is None


def test_hand_derived_two_bins_pool_the_errors() -> None:
    c = calibration(deteval.evaluate(GT, DT, "coco"), bins=2)
    # [0, 0.5): 0.45, 0.35 both wrong -> |0 - 0.4|; [0.5, 1]: 0.95, 0.55 both right -> |1 - 0.75|
    assert c.d_ece == pytest.approx(0.5 * 0.4 + 0.5 * 0.25, abs=1e-15)


def test_box_position_bins_split_by_place() -> None:
    g = deteval.load_ground_truth(GT)
    d = deteval.load_detections(DT, g)
    r = deteval.evaluate(g, d, "coco")
    c = calibration(r, g, d, features=("confidence", "cx"), bins=(1, 2))
    # One confidence bin; cx / 100: 0.05, 0.51, 0.85 | 0.05 -> left: 0.05 (tp 0.95), 0.05
    # (fp 0.35); right: 0.51 (tp 0.55), 0.85 (fp 0.45).
    left = abs(0.5 - (0.95 + 0.35) / 2)
    right = abs(0.5 - (0.55 + 0.45) / 2)
    assert c.d_ece == pytest.approx((2 * left + 2 * right) / 4, abs=1e-15)


def test_value_on_an_inner_edge_goes_up() -> None:
    out = binned_calibration_error(np.array([[0.5]]), np.array([True]), bins=2)
    assert out["bin"].tolist() == [1]
    assert out["count"].tolist() == [1.0]


def test_scores_outside_unit_interval_are_refused() -> None:
    dt = [dict(DT[0], score=3.5)]
    with pytest.raises(InputError, match=r"expected confidences in \[0, 1\], found 3.5"):
        calibration(deteval.evaluate(GT, dt, "coco"))


def test_box_features_need_image_sizes() -> None:
    gt = dict(GT, images=[{"id": 1}])
    g = deteval.load_ground_truth(gt)
    d = deteval.load_detections(DT, g)
    with pytest.raises(InputError, match="expected the image's width and height"):
        calibration(deteval.evaluate(g, d, "coco"), g, d, features=("confidence", "cx"))
    with pytest.raises(ConfigError, match="box position needs the ground truth"):
        calibration(deteval.evaluate(g, d, "coco"), features=("confidence", "w"))


@pytest.mark.parametrize(
    ("features", "bins"),
    [
        (("cx", "confidence"), 10),
        (("confidence", "cx", "cx"), 10),
        (("confidence",), 0),
        (("confidence",), (3, 3)),
    ],
)
def test_bad_options_are_refused(features: tuple, bins: object) -> None:
    with pytest.raises(ConfigError, match="calibration"):
        calibration(deteval.evaluate(GT, DT, "coco"), features=features, bins=bins)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# netcal as the oracle

BINNINGS = [
    (("confidence",), 10),
    (("confidence",), 7),
    (("confidence",), 1),
    (("confidence",), 20),
    (("confidence", "cx", "cy", "w", "h"), 3),
    (("confidence", "cx", "cy", "w", "h"), (10, 2, 3, 2, 4)),
    (("confidence", "cx", "cy"), (5, 4, 4)),
    (("confidence", "w", "h"), 6),
]


@pytest.fixture(scope="module")
def ece_class():  # noqa: ANN201
    netcal = pytest.importorskip("netcal.metrics")
    return netcal.ECE


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("features", "bins"), BINNINGS)
def test_binned_error_equals_netcal(ece_class, seed: int, features: tuple, bins) -> None:  # noqa: ANN001
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    x = rng.random((n, len(features)))
    x[rng.random((n, len(features))) < 0.2] = rng.choice([0.0, 0.1, 0.3, 0.5, 0.7, 1.0])  # edges
    y = rng.random(n) < x[:, 0]
    ours = binned_calibration_error(x, y, bins=bins)["d_ece"]
    theirs = ece_class(list(bins) if isinstance(bins, tuple) else bins, detection=True).measure(
        x, y.astype(int)
    )
    assert ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning")
@pytest.mark.parametrize("seed", [1, 2, 3, 5, 8, 1000, 1001])
@pytest.mark.parametrize(("features", "bins"), BINNINGS)
def test_calibration_equals_netcal_on_generated_detections(
    ece_class, seed: int, features: tuple, bins
) -> None:  # noqa: ANN001
    gt, dt = generate(seed, max_images=30, max_classes=6)
    if not dt:
        pytest.skip("no detections for this seed")
    size = {im["id"]: (im["width"], im["height"]) for im in gt["images"]}
    g = deteval.load_ground_truth(gt)
    d = deteval.load_detections(dt, g)
    result = deteval.evaluate(g, d, "coco")
    c = calibration(result, g, d, features=features, bins=bins)
    rows = [m for m in matches(result) if m["outcome"] != "ignored"]  # IoU 0.5, area all, 100
    columns = []
    for m in rows:
        x0, y0, w, h = dt[m["detection"]]["bbox"]
        W, H = size[m["image_id"]]
        box = {"cx": (x0 + w / 2) / W, "cy": (y0 + h / 2) / H, "w": w / W, "h": h / H}
        columns.append([m["score"], *(box[f] for f in features[1:])])
    x = np.array(columns, dtype=np.float64).reshape(len(rows), len(features))
    y = np.array([m["outcome"] == "tp" for m in rows], dtype=int)
    netcal_bins = list(bins) if isinstance(bins, tuple) else bins
    assert c.d_ece == pytest.approx(ece_class(netcal_bins, detection=True).measure(x, y), abs=1e-12)
    for row in c.per_class:
        mine = np.array([m["category_id"] == row["category_id"] for m in rows], dtype=bool)
        if not mine.any():
            assert math.isnan(row["D-ECE"])
            continue
        expected = ece_class(netcal_bins, detection=True).measure(x[mine], y[mine])
        assert row["D-ECE"] == pytest.approx(expected, abs=1e-12)
