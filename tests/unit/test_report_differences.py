"""The report's per-class paired differences (``#differences``) are the stats functions' numbers.

- every number of the section (point difference, interval ends, p-value, both APs) is, to the
  last bit, what :func:`deteval.stats.compare_detectors` gives for the same seed and resamples;
- its resamples are scores of files: one resample's per-class AP difference equals scoring the
  resample's explicit files (images repeated, tests/support/resample_files.py) with both detectors;
- per_class_differences is paired_difference on the per-class columns (one implementation);
- a row is marked exactly when its interval excludes 0.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.cli import main  # noqa: E402
from deteval.stats import compare_detectors, paired_difference, per_class_differences  # noqa: E402
from tests import ROOT  # noqa: E402
from tests.support.resample_files import replicate_files  # noqa: E402

GT = ROOT / "fixtures" / "coco" / "gt.json"
DT = ROOT / "fixtures" / "coco" / "dt.json"
DT_B = ROOT / "fixtures" / "coco" / "dt_b.json"
N, SEED = 60, 7

# the fixture's bird has no ground truth (its AP undefined: said by a warning, not our subject)
pytestmark = [
    pytest.mark.usefixtures("figures_unless_fast"),  # no test here reads a pixel: tests/support/figures.py
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
]


@pytest.fixture(scope="module")
def stats():
    gt = deteval.load_ground_truth(str(GT))
    a = deteval.load_detections(str(DT), gt)
    b = deteval.load_detections(str(DT_B), gt)
    return gt, compare_detectors(gt, {"A": a, "B": b}, "coco", n=N, seed=SEED)


def _defined(value):
    """None for an undefined (NaN) AP, as the document writes it."""
    return None if value is None or value != value else value


def _rows(html: str) -> dict:
    """Class name -> {"cells": [data-v of each numeric cell], "ci": (lo, hi), "marked": bool}."""
    section = html[html.index('<section id="differences"') :]
    section = section[: section.index("</section>")]
    out = {}
    for tr in re.findall(r"<tr[^>]*data-class=.*?</tr>", section, flags=re.S):
        name = re.search(r'data-class="([^"]*)"', tr).group(1)
        cells = re.findall(r'<td class="num(?: na)?"(?: data-v="([^"]*)")?>', tr)
        ci = re.search(r'data-lo="([^"]*)" data-hi="([^"]*)"', tr)
        out[name] = {
            "cells": [None if v == "" else float(v) for v in cells],
            "ci": None if ci is None else (float(ci.group(1)), float(ci.group(2))),
            "marked": "excludes-zero" in tr.split(">", 1)[0],
        }
    return out


def test_the_reports_numbers_are_the_stats_functions_numbers(stats, tmp_path, capsys):
    gt, found = stats
    out = tmp_path / "r.html"
    argv = ["report", "--gt", str(GT), "--dt", str(DT), "--dt", str(DT_B), "--name", "A", "--name", "B"]
    argv += ["--protocol", "coco", "--bootstrap", str(N), "--seed", str(SEED), "-q", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    rows = _rows(out.read_text(encoding="utf-8"))
    a, b = found.bootstrap.results
    assert len(found.class_comparisons) == len(a.result.per_class) == 4
    for k, c in enumerate(found.class_comparisons):
        row = rows[c.category]
        ap_a, ap_b = (_defined(r.result.per_class[k]["AP"]) for r in (a, b))
        assert row["cells"] == [ap_a, ap_b, c.difference, c.p_value], c.category
        assert row["ci"] == (None if c.ci.lo is None else (c.ci.lo, c.ci.hi)), c.category
        assert row["marked"] is c.excludes_zero, c.category
    (headline,) = found.comparisons
    row = rows["all classes (AP)"]
    assert row["cells"] == [
        a.result.metrics["AP"],
        b.result.metrics["AP"],
        headline.difference,
        headline.p_value,
    ]
    assert row["ci"] == (headline.ci.lo, headline.ci.hi)
    # the fixture's person: B is worse and the interval excludes 0; the bird: no ground truth
    assert rows["person"]["marked"]
    assert rows["person"]["cells"][2] < 0
    assert rows["bird"]["cells"] == [None, None, None, None]
    assert rows["bird"]["ci"] is None


def test_one_implementation_paired_difference_on_the_class_columns(stats):
    _, found = stats
    a, b = found.bootstrap.results
    again = per_class_differences(a, b, found.bootstrap.settings)
    assert again == found.class_comparisons
    for k, c in enumerate(found.class_comparisons):
        point_a, point_b = (
            np.nan if r.result.per_class[k]["AP"] is None else r.result.per_class[k]["AP"] for r in (a, b)
        )
        d, iv, p, n = paired_difference(
            a.samples.per_class_ap[:, k],
            b.samples.per_class_ap[:, k],
            point_a,
            point_b,
            ci=0.95,
            method="basic",
        )
        assert (d, iv, p, n) == (c.difference, c.ci, c.p_value, c.n), c.category


def test_one_resample_is_the_score_of_its_files(stats, tmp_path):
    gt, found = stats
    a, b = found.bootstrap.results
    gt_doc = json.loads(GT.read_text())
    lines = {name: json.loads(path.read_text()) for name, path in (("A", DT), ("B", DT_B))}
    checked = 0
    for i, w in enumerate(found.bootstrap.weights[:4]):
        gt_r, dts_r = replicate_files(gt_doc, lines["A"], gt.image_id, w)
        _, dt_b_r = replicate_files(gt_doc, lines["B"], gt.image_id, w)
        folder = tmp_path / f"resample-{i}"
        folder.mkdir()
        for name, doc in (("gt.json", gt_r), ("a.json", dts_r), ("b.json", dt_b_r)):
            (folder / name).write_text(json.dumps(doc))
        score_a = deteval.evaluate(str(folder / "gt.json"), str(folder / "a.json"), "coco")
        score_b = deteval.evaluate(str(folder / "gt.json"), str(folder / "b.json"), "coco")
        for k, c in enumerate(score_a.per_class):
            ap_a, ap_b = _defined(c["AP"]), _defined(score_b.per_class[k]["AP"])
            resampled = b.samples.per_class_ap[i, k] - a.samples.per_class_ap[i, k]
            if ap_a is None or ap_b is None:  # a class without ground truth in this resample
                assert np.isnan(resampled), (i, c["name"])
                continue
            assert resampled == pytest.approx(ap_b - ap_a, abs=1e-12), (i, c["name"])
            checked += 1
    assert checked >= 8  # defined differences were compared, not only undefined ones


def test_no_section_without_several_detectors_or_resamples(tmp_path, capsys):
    out = tmp_path / "one.html"
    argv = ["report", "--gt", str(GT), "--dt", str(DT), "--protocol", "coco", "--bootstrap", "20", "-q"]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    assert 'id="differences"' not in out.read_text()
    out = tmp_path / "two.html"
    argv = ["report", "--gt", str(GT), "--dt", str(DT), "--dt", str(DT_B), "--protocol", "coco", "-q"]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    assert 'id="differences"' not in out.read_text()


def test_detectors_of_different_protocols_or_classes_are_refused(stats):
    from deteval.errors import ConfigError
    from deteval.stats import bootstrap

    gt, found = stats
    a, _ = found.bootstrap.results
    voc = bootstrap(gt, {"V": deteval.evaluate(gt, deteval.load_detections(str(DT), gt), "voc2010")}, n=5)
    with pytest.raises(
        ConfigError, match=r"detectors 'A' \(coco\) and 'V' \(voc2010\) must be of the same protocol"
    ):
        per_class_differences(a, voc.results[0], found.bootstrap.settings)
