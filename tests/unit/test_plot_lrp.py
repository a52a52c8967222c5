"""deteval.plot.lrp_components and the beyond figures of figure_specs / plot_all: their content."""

from __future__ import annotations

import math
import warnings

import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.beyond import beyond_ap  # noqa: E402
from deteval.errors import ConfigError  # noqa: E402
from deteval.plot import figure_bytes, lrp_components, plot_all  # noqa: E402
from deteval.plot.files import figure_specs  # noqa: E402
from deteval.plot.lrp import lrp_shares  # noqa: E402
from tests import ROOT  # noqa: E402

GT, DT = ROOT / "fixtures/coco/gt.json", ROOT / "fixtures/coco/dt.json"


def _inputs():
    gt = deteval.load_ground_truth(str(GT))
    return gt, deteval.load_detections(str(DT), gt)


def _beyond(**options):  # noqa: ANN003, ANN202
    gt, dt = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
        return beyond_ap(gt, dt, "coco", **options)


def test_shares_add_up_to_olrp_on_real_classes() -> None:
    lrp = _beyond(lrp=True).lrp
    checked = 0
    for row in lrp.per_class:
        shares = lrp_shares(row, lrp.tau)
        if row["n_tp"] < 0:
            assert shares is None  # no ground truth: no oLRP, nothing drawn
            continue
        assert math.isclose(sum(shares), row["oLRP"], rel_tol=0, abs_tol=1e-12)
        checked += 1
    assert checked >= 2


def test_bars_thresholds_and_title_are_the_documents() -> None:
    lrp = _beyond(lrp=True).lrp
    doc = lrp.to_dict()
    fig = lrp_components(lrp)
    bars, dots = fig.axes[0], fig.axes[1]
    drawn = [r for r in doc["per_class"] if r["oLRP"] is not None]
    drawn.sort(key=lambda r: -r["oLRP"])
    names = [t.get_text() for t in bars.get_yticklabels()]
    assert names == [r["name"] for r in drawn] == ["cat", "person", "dog"]  # worst first
    assert list(bars.get_yticks()) == [2.0, 1.0, 0.0]  # the worst at the top
    # one bar per class and part; each class's three segments add up to its oLRP
    by_y: dict = {}
    for patch in bars.patches:
        by_y.setdefault(round(patch.get_y(), 6), []).append(patch)
    assert len(bars.patches) == 3 * len(drawn)
    totals = sorted(sum(p.get_width() for p in ps) for ps in by_y.values())
    assert totals == pytest.approx(sorted(r["oLRP"] for r in drawn), abs=1e-12)
    assert [t.get_text() for t in bars.get_legend().get_texts()] == ["localisation", "FP", "FN"]
    # the optimal thresholds, one dot per class that has one
    xs = sorted(float(line.get_xdata()[0]) for line in dots.lines)
    assert xs == sorted(r["threshold"] for r in drawn if r["threshold"] is not None)
    title = fig.texts[0].get_text() if fig.texts else fig._suptitle.get_text()
    assert f"moLRP {doc['moLRP']:.3f}" in title
    assert "1 without ground truth" in title  # the fixture's bird


def test_top_k_keeps_the_worst_and_says_so() -> None:
    doc = _beyond(lrp=True).lrp.to_dict()
    fig = lrp_components(doc, top_k=1)
    worst = max((r for r in doc["per_class"] if r["oLRP"] is not None), key=lambda r: r["oLRP"])
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [worst["name"]]
    assert "better classes not drawn" in fig._suptitle.get_text()


def test_repeatable_bytes_and_refusals() -> None:
    doc = _beyond(lrp=True).to_dict()
    assert figure_bytes(lrp_components(doc), "svg") == figure_bytes(lrp_components(doc), "svg")
    with pytest.raises(ConfigError, match="expected an optimal LRP document"):
        lrp_components({"errors": {}})
    with pytest.raises(ConfigError, match="top_k: expected a positive integer"):
        lrp_components(doc, top_k=0)


@pytest.mark.usefixtures("figures_unless_fast")  # names; the pixels: test_repeatable_bytes_and_refusals
def test_figure_specs_draw_beyond_per_detector(tmp_path) -> None:  # noqa: ANN001
    gt, dt = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
        r = deteval.evaluate(gt, dt, "coco")
    b = _beyond(calibration=True, lrp=True)
    specs = figure_specs({"a": r, "b": r}, beyond={"a": b, "b": b.to_dict()})
    beyond = [s.name for s in specs if s.section == "beyond"]
    assert beyond == ["reliability-a", "lrp_components-a", "reliability-b", "lrp_components-b"]
    one = [s.name for s in figure_specs(r, beyond=b) if s.section == "beyond"]
    assert one == ["reliability", "lrp_components"]
    written = plot_all(r, out_dir=tmp_path, formats=["svg"], beyond=b)
    assert [p.name for p in written][-2:] == ["reliability.svg", "lrp_components.svg"]
    with pytest.raises(ConfigError, match="expected a document with 'calibration' and/or 'lrp'"):
        figure_specs(r, beyond={"a": {"mean_tp_iou": {}}})


def test_bootstrapped_documents_add_one_intervals_figure() -> None:
    from deteval.plot._beyond import beyond_documents, beyond_forest_document

    gt, a = _inputs()
    b = deteval.load_detections(str(ROOT / "fixtures/coco/dt_b.json"), gt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
        ra, rb = deteval.evaluate(gt, a, "coco"), deteval.evaluate(gt, b, "coco")
    options = deteval.BeyondOptions(calibration=True, lrp=True)
    docs = {
        "a": deteval.beyond_document(ra, gt, a, options, bootstrap=30),
        "b": deteval.beyond_document(rb, gt, b, options, bootstrap=30, against=(ra, a), labels=("b", "a")),
    }
    specs = [s for s in figure_specs({"a": ra, "b": rb}, beyond=docs) if s.section == "beyond"]
    assert [s.name for s in specs][-1] == "beyond_intervals"
    forest_doc = beyond_forest_document(list(docs.items()))
    row = next(r for r in forest_doc["results"] if r["detector"] == "b")
    assert row["metrics"]["moLRP"] == docs["b"]["lrp"]["moLRP"]
    assert row["metrics_ci"]["D-ECE"] == docs["b"]["calibration_ci"]["D-ECE"]["ci"]
    assert [(c["a"], c["b"], c["metric"]) for c in forest_doc["comparisons"]][:2] == [
        ("a", "b", "D-ECE"),
        ("a", "b", "moLRP"),
    ]
    fig = specs[-1].build()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[:4] == ["D-ECE  a", "D-ECE  b", "moLRP  a", "moLRP  b"]
    # each interval is drawn from lo to hi of the document
    paired = docs["b"]["paired"]["calibration_ci"]["D-ECE"]
    xs = [tuple(line.get_xdata()) for line in fig.axes[1].lines if len(line.get_xdata()) == 2]
    assert any(x == pytest.approx(tuple(paired["ci"])) for x in xs)
    # without intervals: no such figure
    plain = {"a": beyond_ap(gt, a, "coco", lrp=True)}
    assert beyond_forest_document(beyond_documents(plain)) is None
