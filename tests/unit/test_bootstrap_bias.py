"""Bootstrap intervals of a biased statistic: the basic interval by default, the bias beside it.

AP is biased: a test set's AP overstates its population's, most for a low AP over many small
classes, and the resampled values sit above the estimate. The percentile interval (0.1.0's only
method) then lies above the estimate, and can exclude it (an AP 0.0621 got [0.0633, 0.0935]).
The data come from scripts/bootstrap_validity.py's generator (its table: docs/statistics.md).
"""

from __future__ import annotations

import importlib.util
import io
import sys
import warnings

import numpy as np
import pytest

from deteval.cli import main
from deteval.evaluate import match, score
from deteval.protocol import get_protocol
from deteval.stats import (
    BootstrapBiasWarning,
    acceleration,
    bca_interval,
    bootstrap,
    bootstrap_rows,
    compare_detectors,
    interval,
    jackknife_weights,
    percentile_interval,
)
from tests import ROOT

COCO = get_protocol("coco")


def _generator():
    spec = importlib.util.spec_from_file_location(
        "bootstrap_validity", ROOT / "scripts" / "bootstrap_validity.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _low_ap_many_classes(seed=1, n_images=1000):
    """COCO AP about 0.015 over 80 long-tailed classes: 99.5% of the resamples above the estimate."""
    gen = _generator()
    rng = np.random.default_rng(seed)
    gt = gen.make_ground_truth(rng, n_images, 80)
    dt = gen.make_detections(rng, gt, 0.3, fp_rate=4.0, tp_shift=-0.5, jitter_sd=0.1)
    return gt, score(match(gt, dt, COCO), gt, COCO)


def test_low_ap_interval_contains_the_estimate_and_says_why_it_reaches_it():
    gt, result = _low_ap_many_classes()
    point = result.metrics["AP"]
    with pytest.warns(BootstrapBiasWarning) as caught:
        det = bootstrap(gt, result, n=200, seed=0).results[0]
    (message,) = [str(w.message) for w in caught]
    assert "detector 'detector' (coco): AP 0.0153 (99.5% of the resamples above it, bias +0.0049)" in message
    lo, hi = det.metrics_ci["AP"].as_list()
    assert lo <= point <= hi, (lo, point, hi)  # 0.1.0: percentile [0.0162, 0.0257] around 0.0153
    assert hi - lo > 0.005  # not a sliver (BCa's is 0.0002 wide here: see below)
    samples = det.samples.metrics[:, det.samples.metric_names.index("AP")]
    assert det.metrics_bias["AP"] == pytest.approx(np.mean(samples) - point, abs=1e-15)
    assert det.metrics_bias["AP"] > 0.003  # the resamples sit above: the estimate overstates
    # The percentile interval, kept by name, excludes the estimate: its lower end lies above it.
    assert percentile_interval(samples).lo > point


def test_bca_collapses_where_the_bias_exceeds_the_interval():
    """Why BCa is not the default: made of resampled values, it cannot reach below all of them."""
    gt, result = _low_ap_many_classes()
    with pytest.warns(BootstrapBiasWarning):
        det = bootstrap(gt, result, n=200, seed=0, method="bca").results[0]
    lo, hi = det.metrics_ci["AP"].as_list()
    assert hi - lo < 0.001
    assert hi < result.metrics["AP"]
    assert det.jackknife.metrics.shape[0] == 100  # the grouped jackknife of its acceleration


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_default_interval_is_corrected_for_the_bias(seed):
    gen = _generator()
    rng = np.random.default_rng(seed)
    gt, dt = gen._scenario_data(rng, gen.SCENARIOS[0], 200)  # AP about 0.05 over 20 classes
    result = score(match(gt, dt, COCO), gt, COCO)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapBiasWarning)
        det = bootstrap(gt, result, n=200, seed=0).results[0]
    point = result.metrics["AP"]
    samples = det.samples.metrics[:, 0]
    basic, percentile = det.metrics_ci["AP"], percentile_interval(samples)
    assert basic.lo <= point <= basic.hi
    # Reflected about the estimate: shifted down by twice the distance of the resamples' middle.
    assert basic.lo < percentile.lo
    assert basic.hi < percentile.hi
    assert det.metrics_bias["AP"] > 0


def test_progress_counts_every_reaccumulation():
    gt, result = _low_ap_many_classes(n_images=150)
    for method in ("basic", "bca"):
        done = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BootstrapBiasWarning)
            bootstrap(gt, {"A": result, "B": result}, n=30, seed=0, method=method, progress=done.append)
        assert sum(done) == 2 * bootstrap_rows(gt.n_images, n=30, method=method)
    assert bootstrap_rows(150, n=30, method="bca") == 130
    assert bootstrap_rows(50, n=30, method="bca") == 80


def test_jackknife_leaves_each_image_out_once():
    for n_images in (1, 7, 100, 1234):
        w = jackknife_weights(n_images, seed=3)
        assert w.shape == (min(100, n_images), n_images)
        assert (w.sum(axis=0) == w.shape[0] - 1).all()  # every image out of exactly one row
        sizes = n_images - w.sum(axis=1)
        assert sizes.max() - sizes.min() <= 1
    assert not np.array_equal(jackknife_weights(500, seed=0), jackknife_weights(500, seed=1))


def test_bca_by_hand():
    x = np.arange(1.0, 9.0) / 10
    # Half the values on each side and no acceleration: BCa is the percentile interval.
    assert bca_interval(x, 0.45, ci=0.5).as_list() == percentile_interval(x, ci=0.5).as_list()
    assert acceleration(np.array([0.0, 0.0, 3.0])) == pytest.approx(-6 / (6 * 6**1.5))
    assert acceleration(np.array([1.0, np.nan])) == 0.0
    # A positive acceleration moves both levels up: the interval shifts right.
    plain = bca_interval(x, 0.45, ci=0.5)
    accelerated = bca_interval(x, 0.45, ci=0.5, jackknife=np.array([0.0, 1.0, 1.0, 1.0]))
    assert accelerated.lo > plain.lo
    assert accelerated.hi > plain.hi


def test_basic_interval_stays_in_the_statistics_range():
    samples = np.array([0.95, 0.97, 0.99, 1.0])
    assert interval(samples, 0.99, method="basic").hi == 1.0
    assert interval(-samples, -0.99, method="basic", bounds=(-1.0, 1.0)).lo == -1.0


def test_difference_interval_uses_the_method_and_contains_the_difference():
    gt, result = _low_ap_many_classes(n_images=300)
    gen = _generator()
    rng = np.random.default_rng(9)
    dt_b = gen.make_detections(rng, gt, 0.5, fp_rate=4.0, tp_shift=-0.5, jitter_sd=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BootstrapBiasWarning)
        found = {
            m: compare_detectors(gt, {"A": result.table, "B": dt_b}, COCO, n=100, seed=0, method=m)
            for m in ("basic", "percentile")
        }
    basic, percentile = (found[m].comparisons[0] for m in ("basic", "percentile"))
    assert basic.difference == percentile.difference
    assert basic.ci.lo <= basic.difference <= basic.ci.hi
    assert basic.ci.as_list() != percentile.ci.as_list()
    assert basic.p_value == percentile.p_value  # the test does not depend on the interval


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal (what the CLI checks before drawing a bar)."""

    def isatty(self) -> bool:
        return True


def _stderr_on_a_terminal(argv, monkeypatch) -> str:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(argv) == 0
    monkeypatch.undo()
    return terminal.getvalue()


def test_progress_bar_on_a_terminal_and_not_with_q(monkeypatch, capsys, tmp_path):
    argv = [
        "evaluate",
        "--gt",
        str(ROOT / "fixtures/coco/gt.json"),
        "--dt",
        str(ROOT / "fixtures/coco/dt.json"),
    ]
    argv += [
        "--protocol",
        "voc2010",
        "--bootstrap",
        "40",
        "--format",
        "json",
        "--output",
        str(tmp_path / "a.json"),
    ]
    shown = _stderr_on_a_terminal(argv, monkeypatch)
    assert "resampling voc2010:   0%|" in shown
    assert "0/40 [" in shown
    quiet = _stderr_on_a_terminal([*argv, "-q"], monkeypatch)
    assert "resampl" not in quiet
    capsys.readouterr()
    assert main(argv) == 0  # stderr not a terminal (captured): no bar
    assert "resampl" not in capsys.readouterr().err


def test_cli_reports_the_bias_warning_in_the_document_and_on_stderr(tmp_path, capsys):
    import json

    gen = _generator()
    rng = np.random.default_rng(1)
    gt = gen.make_ground_truth(rng, 1000, 80)
    dt = gen.make_detections(rng, gt, 0.3, fp_rate=4.0, tp_shift=-0.5, jitter_sd=0.1)
    gt_doc = {
        "images": [{"id": int(i)} for i in gt.image_id],
        "categories": [{"id": int(c), "name": n} for c, n in zip(gt.category_id, gt.category_name)],
        "annotations": [
            {"id": k + 1, "image_id": int(gt.image_id[gt.image[k]]), "category_id": int(gt.category_id[gt.category[k]]),
             "bbox": gt.box[k].tolist(), "area": float(gt.area[k]), "iscrowd": 0}
            for k in range(len(gt))
        ],
    }  # fmt: skip
    dt_doc = [
        {"image_id": int(gt.image_id[dt.image[k]]), "category_id": int(gt.category_id[dt.category[k]]),
         "bbox": dt.box[k].tolist(), "score": float(dt.score[k])}
        for k in range(len(dt))
    ]  # fmt: skip
    (tmp_path / "gt.json").write_text(json.dumps(gt_doc))
    (tmp_path / "dt.json").write_text(json.dumps(dt_doc))
    argv = [
        "evaluate",
        "--gt",
        str(tmp_path / "gt.json"),
        "--dt",
        str(tmp_path / "dt.json"),
        "--bootstrap",
        "200",
    ]
    assert main([*argv, "--format", "json"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    (message,) = [w for w in doc["warnings"] if w.startswith("bootstrap:")]
    assert "AP 0.0153 (99.5% of the resamples above it" in message
    assert "deteval: warning: bootstrap: detector 'dt.json' (coco): AP 0.0153" in out.err
    lo, hi = doc["results"][0]["metrics_ci"]["AP"]
    assert lo <= doc["results"][0]["metrics"]["AP"] <= hi
    assert doc["results"][0]["metrics_bias"]["AP"] > 0.003
