"""``deteval evaluate | compare --calibration --lrp`` (cli/beyond.py, deteval.api.beyond).

The intervals of ``evaluate --dt a --dt b --bootstrap N --calibration --lrp`` are checked against
the slow twin: every resample rebuilt as a dataset (tests/support/resample.py), scored by the point
functions, and the interval of those values; the same draws as AP's bootstrap (AP's intervals come
out of the same rebuilt datasets).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import deteval
from deteval.api.beyond import BeyondOptions, beyond_document
from deteval.calibration import calibration
from deteval.cli import main
from deteval.errors import ConfigError
from deteval.lrp import optimal_lrp, tp_ious
from deteval.stats.intervals import interval
from deteval.stats.settings import bootstrap_weights
from tests import ROOT
from tests.support.resample import dataset, resampled, scored

GT, DT, DT_B = (str(ROOT / "fixtures/coco" / n) for n in ("gt.json", "dt.json", "dt_b.json"))


def _run(argv: list, capsys) -> tuple[int, str, str]:  # noqa: ANN001
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def _values(gt: dict, dt: list) -> dict:
    """D-ECE, moLRP, oLRP per class and AP of a dataset, by the point functions."""
    g, d, r = scored(gt, dt)
    cal = calibration(r)
    lrp = optimal_lrp(r, tp_ious(r, g, d))
    return {
        "D-ECE": cal.d_ece,
        "D-ECE_per_class": [c["D-ECE"] for c in cal.per_class],
        "moLRP": lrp.moLRP,
        "oLRP": [c["oLRP"] for c in lrp.per_class],
        "AP": r.metrics["AP"],
    }


def _ci(samples: list, point: float, bounds: tuple = (0.0, 1.0)) -> list | None:
    found = interval(np.asarray(samples, dtype=float), point, ci=0.95, method="basic", bounds=bounds)
    return found.to_dict()["ci"]


@pytest.mark.parametrize("seed", [0, 3])
def test_evaluate_intervals_are_those_of_the_rebuilt_resamples(tmp_path, capsys, seed):  # noqa: ANN001
    gt, dt_a = dataset(seed)
    dt_b = [{**r, "score": 0.5 + r["score"] / 2} for r in dt_a[::2]]  # overconfident, fewer boxes
    paths = {}
    for name, value in (("gt", gt), ("a", dt_a), ("b", dt_b)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(value))
    n, boot_seed = 8, seed + 1
    argv = ["evaluate", "--gt", str(paths["gt"]), "--dt", str(paths["a"]), "--dt", str(paths["b"]),
            "--name", "a", "--name", "b", "--calibration", "--lrp", "--bootstrap", str(n),
            "--seed", str(boot_seed), "--format", "json", "-q"]  # fmt: skip
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)
    entries = {e["detector"]: e for e in doc["results"]}
    g, _, _ = scored(gt, dt_a)
    weights = bootstrap_weights(g.n_images, n=n, seed=boot_seed)
    points = {"a": _values(gt, dt_a), "b": _values(gt, dt_b)}
    samples: dict = {"a": [], "b": []}
    for w in weights:
        for name, dt in (("a", dt_a), ("b", dt_b)):
            rgt, rdt = resampled(gt, dt, w, g.image_id)
            assert rdt, "a resample without detections: pick another seed"
            samples[name].append(_values(rgt, rdt))
    for name in ("a", "b"):
        e, p, s = entries[name], points[name], samples[name]
        assert e["calibration"]["D-ECE"] == pytest.approx(p["D-ECE"], abs=1e-12)
        assert e["calibration_ci"]["D-ECE"]["ci"] == pytest.approx(
            _ci([v["D-ECE"] for v in s], p["D-ECE"]), abs=1e-12
        )
        assert e["lrp_ci"]["moLRP"]["ci"] == pytest.approx(
            _ci([v["moLRP"] for v in s], p["moLRP"]), abs=1e-12
        )
        for k, row in enumerate(e["lrp_ci"]["per_class"]):
            column = [v["oLRP"][k] for v in s]
            expected = _ci(column, p["oLRP"][k])
            assert row["oLRP"]["ci"] == (None if expected is None else pytest.approx(expected, abs=1e-12))
        # AP's interval comes from the same draws: the rebuilt resamples give it too
        assert e["metrics_ci"]["AP"] == pytest.approx(_ci([v["AP"] for v in s], p["AP"]), abs=1e-9)
    paired = entries["b"]["paired"]
    assert (paired["dt"], paired["against"]) == ("b", "a")
    assert "paired" not in entries["a"]
    diff = [sb["moLRP"] - sa["moLRP"] for sa, sb in zip(samples["a"], samples["b"])]
    point = points["b"]["moLRP"] - points["a"]["moLRP"]
    assert paired["lrp_ci"]["moLRP"]["value"] == pytest.approx(point, abs=1e-12)
    assert paired["lrp_ci"]["moLRP"]["ci"] == pytest.approx(_ci(diff, point, (-1.0, 1.0)), abs=1e-12)
    diff = [sb["D-ECE"] - sa["D-ECE"] for sa, sb in zip(samples["a"], samples["b"])]
    point = points["b"]["D-ECE"] - points["a"]["D-ECE"]
    assert paired["calibration_ci"]["D-ECE"]["ci"] == pytest.approx(_ci(diff, point, (-1.0, 1.0)), abs=1e-12)


def test_evaluate_one_detector_json_equals_analyze(capsys) -> None:  # noqa: ANN001
    common = ["--gt", GT, "--dt", DT, "--calibration", "--lrp", "--format", "json", "-q"]
    code, out, err = _run(["evaluate", *common, "--calibration-bins", "5", "--lrp-tau", "0.6"], capsys)
    assert code == 0, err
    entry = json.loads(out)["results"][0]
    code, out, _ = _run(["analyze", *common, "--calibration-bins", "5", "--lrp-tau", "0.6"], capsys)
    analysis = json.loads(out)
    assert entry["calibration"] == analysis["calibration"]
    assert entry["lrp"] == analysis["lrp"]
    assert entry["lrp"]["tau"] == 0.6
    assert entry["calibration"]["bins"] == [5]
    assert "calibration_ci" not in entry  # no --bootstrap, no intervals


def test_evaluate_table_and_markdown_show_the_parts(capsys) -> None:  # noqa: ANN001
    code, out, _ = _run(["evaluate", "--gt", GT, "--dt", DT, "--calibration", "--lrp", "-q"], capsys)
    assert code == 0
    assert "Calibration at IoU 0.5 (bins: 10 confidence): D-ECE 0.2423 [coco]" in out
    assert "Optimal LRP at tau 0.5 (area all, maxDets 100): moLRP 0.6333 [coco]" in out
    code, out, _ = _run(["evaluate", "--gt", GT, "--dt", DT, "--lrp", "--format", "markdown", "-q"], capsys)
    assert "**Optimal LRP at tau 0.5 (area all, maxDets 100): moLRP 0.6333 [coco]**" in out
    assert "| person | 0.5000 | 0.0000 | 0.4286 | 0.2000 | 0.6500 |" in out
    argv = [
        "evaluate",
        "--gt",
        GT,
        "--dt",
        DT,
        "--dt",
        DT_B,
        "--lrp",
        "--bootstrap",
        "20",
        "--format",
        "markdown",
        "-q",
    ]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    assert "**Optimal LRP at tau 0.5 (area all, maxDets 100): moLRP 0.6333 [dt.json · coco]**" in out
    assert "minus dt.json [dt_b.json · coco]**" in out


def test_compare_gives_each_protocol_its_own_parts(capsys) -> None:  # noqa: ANN001
    argv = ["compare", "--gt", GT, "--dt", DT, "--protocol", "coco", "--protocol", "voc2007", "--lrp",
            "--calibration", "--format", "json", "-q"]  # fmt: skip
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = deteval.load_ground_truth(GT)
        d = deteval.load_detections(DT, g)
        for entry, name in zip(doc["results"], ("coco", "voc2007")):
            r = deteval.evaluate(g, d, name)
            expected = beyond_document(r, g, d, BeyondOptions(calibration=True, lrp=True))
            assert entry["protocol"] == name
            assert entry["lrp"] == expected["lrp"]
            assert entry["calibration"] == expected["calibration"]
    # voc2007's matching differs: dog's second box is a duplicate there, its D-ECE moves
    assert doc["results"][0]["calibration"]["D-ECE"] != doc["results"][1]["calibration"]["D-ECE"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--bootstrap", "5", "--bootstrap-method", "bca"],
            "--bootstrap-method bca: the intervals of --calibration",
        ),
        (["--calibration-bins", "x"], "--calibration-bins: expected a positive integer"),
        (["--calibration-features", "confidence,depth"], "calibration"),
        (["--scheduler", "dask"], "--scheduler: --calibration / --lrp score one process's detections"),
    ],
)
def test_evaluate_refusals(capsys, extra: list, message: str) -> None:  # noqa: ANN001
    code, _, err = _run(["evaluate", "--gt", GT, "--dt", DT, "--calibration", "--lrp", *extra, "-q"], capsys)
    assert code == 3
    assert message in err


def test_beyond_document_refusals() -> None:
    gt, dt = dataset(1)
    g, d, r = scored(gt, dt)
    with pytest.raises(ConfigError, match="expected calibration=True and / or lrp=True"):
        beyond_document(r, g, d, BeyondOptions())
    with pytest.raises(ConfigError, match="expected bootstrap > 0"):
        beyond_document(r, g, d, BeyondOptions(lrp=True), against=(r, d))
    with pytest.raises(ConfigError, match="expected a result scored under protocol 'voc2007'"):
        deteval.beyond_ap(g, d, "voc2007", lrp=True, result=r)


def test_csv_says_the_parts_are_not_in_it(capsys) -> None:  # noqa: ANN001
    code, out, err = _run(["evaluate", "--gt", GT, "--dt", DT, "--lrp", "--format", "csv"], capsys)
    assert code == 0
    assert "--calibration / --lrp are not part of the CSV" in err
    assert "oLRP" not in out
