"""Bootstrap intervals of D-ECE and optimal LRP (deteval.stats.beyond).

A resample weighs each image by how often it was drawn. The slow twin here builds that resample
literally (tests/support/resample.py) and scores it with the point functions; every resample's D-ECE and
oLRP (per class and overall, with components) must equal the weighted computation.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import deteval
from deteval.calibration import calibration
from deteval.errors import ConfigError
from deteval.lrp import optimal_lrp, tp_ious
from deteval.stats.beyond import beyond_differences, beyond_intervals, beyond_samples
from deteval.stats.settings import bootstrap_weights
from tests.support.resample import dataset, resampled, scored

KEYS = ("oLRP", "oLRP_loc", "oLRP_FP", "oLRP_FN")


_dataset, _score, _resampled = dataset, scored, resampled


@pytest.mark.parametrize("seed", range(6))
def test_each_resample_equals_scoring_the_resampled_dataset(seed):
    gt, dt = _dataset(seed)
    g, d, result = _score(gt, dt)
    weights = bootstrap_weights(g.n_images, n=4, seed=seed)
    found = beyond_samples(result, g, d, weights=weights)
    compared = 0
    for b, w in enumerate(weights):
        if not w.any():
            continue
        rgt, rdt = _resampled(gt, dt, w, g.image_id)
        if not rdt:
            continue
        rg, rd, rresult = _score(rgt, rdt)
        cal = calibration(rresult)
        assert found.samples["D-ECE"][b] == pytest.approx(cal.d_ece, abs=1e-12, nan_ok=True)
        assert found.samples["D-ECE_per_class"][b] == pytest.approx(
            [c["D-ECE"] for c in cal.per_class], abs=1e-12, nan_ok=True
        )
        lrp = optimal_lrp(rresult, tp_ious(rresult, rg, rd))
        for key in KEYS:
            assert found.samples[key][b] == pytest.approx(
                [c[key] for c in lrp.per_class], abs=1e-12, nan_ok=True
            )
        assert found.samples["moLRP"][b] == pytest.approx(lrp.moLRP, abs=1e-12, nan_ok=True)
        assert not np.allclose(w, 1) or found.samples["moLRP"][b] == found.point["moLRP"]
        compared += 1
    assert compared == len(weights)  # every resample of these datasets has detections


@pytest.mark.parametrize("seed", range(4))
def test_point_values_are_the_unresampled_measures(seed):
    gt, dt = _dataset(seed)
    g, d, result = _score(gt, dt)
    ones = np.ones((1, g.n_images), dtype=np.int64)
    found = beyond_samples(
        result, g, d, weights=ones, calibration_features=("confidence", "cx"), calibration_bins=5
    )
    cal = calibration(result, g, d, features=("confidence", "cx"), bins=5)
    assert found.point["D-ECE"] == cal.d_ece
    assert found.samples["D-ECE"][0] == cal.d_ece
    lrp = optimal_lrp(result, tp_ious(result, g, d))
    for key in KEYS:
        np.testing.assert_array_equal(found.point[key], [c[key] for c in lrp.per_class])
        np.testing.assert_array_equal(found.samples[key][0], [c[key] for c in lrp.per_class])
    assert found.point["moLRP"] == lrp.moLRP


def test_intervals_contain_the_value_and_json_shape():
    gt, dt = _dataset(2)
    g, d, result = _score(gt, dt)
    found = beyond_intervals(result, g, d, n=200, seed=3)
    doc = found.to_dict()
    assert sorted(doc) == ["bootstrap", "calibration_ci", "lrp_ci"]
    assert doc["bootstrap"] == {"n": 200, "seed": 3, "ci": 0.95, "method": "basic"}
    d_ece = doc["calibration_ci"]["D-ECE"]
    assert d_ece["ci"][0] <= d_ece["value"] <= d_ece["ci"][1]
    mo = doc["lrp_ci"]["moLRP"]
    assert 0 <= mo["ci"][0] <= mo["ci"][1] <= 1
    assert [c["category_id"] for c in doc["lrp_ci"]["per_class"]] == list(result.category_ids)
    # same seed, same draws: the intervals are reproducible
    assert beyond_intervals(result, g, d, n=200, seed=3).to_dict() == doc


def test_paired_differences_of_a_detector_with_itself_are_zero():
    gt, dt = _dataset(4)
    g, d, result = _score(gt, dt)
    found = beyond_differences(result, result, g, d, d, n=100, seed=0)
    assert found.calibration["D-ECE"] == {"value": 0.0, "ci": [0.0, 0.0], "n_undefined": 0}
    assert found.lrp["moLRP"]["value"] == 0.0
    assert found.lrp["moLRP"]["ci"] == [0.0, 0.0]
    assert found.settings["difference"] == "b - a"


def test_paired_differences_see_a_worse_detector():
    gt, dt = _dataset(5)
    g, d, result = _score(gt, dt)
    # detector b: every score pushed towards 1 (overconfident), same boxes
    worse = [{**r, "score": 0.5 + r["score"] / 2} for r in dt]
    gb, db, result_b = _score(gt, worse)
    found = beyond_differences(result, result_b, g, d, db, n=200, seed=0, lrp=False)
    a = calibration(result).d_ece
    b = calibration(result_b).d_ece
    assert found.calibration["D-ECE"]["value"] == pytest.approx(b - a, abs=1e-12)
    lo, hi = found.calibration["D-ECE"]["ci"]
    assert lo <= b - a <= hi


def test_bad_method_and_missing_detections():
    gt, dt = _dataset(1)
    g, d, result = _score(gt, dt)
    with pytest.raises(ConfigError, match=r"method must be 'percentile' or 'basic', found 'bca'"):
        beyond_intervals(result, g, d, n=10, method="bca")
    with pytest.raises(ConfigError, match=r"LRP intervals need the detections"):
        beyond_intervals(result, g, None, n=10)


def test_cli_analyze_bootstrap_json_and_table(capsys):
    from deteval.cli import main
    from tests import ROOT

    argv = ["analyze", "--gt", str(ROOT / "fixtures/coco/gt.json"), "--dt", str(ROOT / "fixtures/coco/dt.json"),
            "--calibration", "--lrp", "--bootstrap", "100", "--seed", "2"]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    assert doc["bootstrap"] == {"n": 100, "seed": 2, "ci": 0.95, "method": "basic"}
    assert doc["calibration_ci"]["D-ECE"]["value"] == doc["calibration"]["D-ECE"]
    assert doc["lrp_ci"]["moLRP"]["value"] == doc["lrp"]["moLRP"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Bootstrap intervals (100 image resamples, 0.95 basic, seed 2)" in text
    assert main(["analyze", "--gt", str(ROOT / "fixtures/coco/gt.json"), "--dt", str(ROOT / "fixtures/coco/dt.json"),
                 "--errors", "--bootstrap", "10"]) == 3  # fmt: skip
    assert (
        "--bootstrap: deteval analyze resamples --calibration and --lrp; found neither"
        in capsys.readouterr().err
    )


def test_cli_analyze_against_gives_the_paired_differences(capsys):
    from deteval.cli import main
    from tests import ROOT

    gt_path, a_path, b_path = (str(ROOT / "fixtures/coco" / n) for n in ("gt.json", "dt.json", "dt_b.json"))
    argv = ["analyze", "--gt", gt_path, "--dt", b_path, "--against", a_path, "--calibration", "--lrp",
            "--bootstrap", "50", "--seed", "4"]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bird has no ground truth (noted)
        g = deteval.load_ground_truth(gt_path)
        a, b = deteval.load_detections(a_path, g), deteval.load_detections(b_path, g)
        result_a, result_b = deteval.evaluate(g, a, "coco"), deteval.evaluate(g, b, "coco")
    expected = beyond_differences(result_a, result_b, g, a, b, n=50, seed=4).to_dict()
    paired = doc["paired"]
    assert (paired["dt"], paired["against"]) == (b_path, a_path)
    assert paired["calibration_ci"] == expected["calibration_ci"]
    assert paired["lrp_ci"] == expected["lrp_ci"]
    assert main(argv) == 0
    assert f"minus {a_path}" in capsys.readouterr().out
    assert main(["analyze", "--gt", gt_path, "--dt", b_path, "--against", a_path, "--calibration"]) == 3
    assert (
        "--against: the paired differences are bootstrap intervals; expected --bootstrap N"
        in capsys.readouterr().err
    )
