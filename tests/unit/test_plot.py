"""deteval.plot figures.

Each figure builds from fixture results with the right curves, bars, cells and labels; SVG bytes
repeat exactly; 1,000 classes give a readable top-k figure; without matplotlib the package says
how to install it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.analysis import best_f1  # noqa: E402
from deteval.diagnose import analyze  # noqa: E402
from deteval.errors import ConfigError  # noqa: E402
from deteval.io import load_detections, load_ground_truth  # noqa: E402
from deteval.plot import (  # noqa: E402
    PlotDependencyError,
    confusion_matrix,
    decomposition_curves,
    error_breakdown,
    explain_waterfall,
    f1_curves,
    figure_bytes,
    forest,
    per_class_ap,
    plot_all,
    pr_curves,
)
from deteval.plot.curves import envelope, mean_interpolated_curve  # noqa: E402
from deteval.plot.matrix import reduce_confusion  # noqa: E402
from deteval.stats import compare_detectors  # noqa: E402
from tests import ROOT
from tests.unit.plot_data import synthetic  # noqa: E402

# The fixtures have a class without ground truth (a note through the API); incidental here.
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]


COCO = ROOT / "fixtures" / "coco"
VOC = ROOT / "fixtures" / "voc"


@pytest.fixture(scope="module")
def coco():
    return deteval.evaluate(COCO / "gt.json", COCO / "dt.json", "coco")


@pytest.fixture(scope="module")
def voc():
    return deteval.evaluate(VOC, VOC / "results", "voc2010")


@pytest.fixture(scope="module")
def inputs():
    gt = load_ground_truth(COCO / "gt.json")
    return gt, load_detections(COCO / "dt.json", gt)


@pytest.fixture(scope="module")
def analysis(inputs):
    return analyze(*inputs, "coco")


@pytest.fixture(scope="module")
def big():
    gt, dt = synthetic(1000, n_images=300, seed=1)
    return deteval.evaluate(gt, dt, "coco")


def _labels(ax) -> list:
    return [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_pr_curves_panels_and_curves(coco):
    fig = pr_curves(coco)  # 0.5 and 0.75, interpolated + raw, operating point at 0.5
    assert [ax.get_title() for ax in fig.axes] == ["all classes (mean)", "person", "dog", "cat", "bird"]
    assert _labels(fig.axes[0]) == ["IoU 0.5 mean interpolated", "IoU 0.75 mean interpolated"]
    person = _labels(fig.axes[1])
    assert sorted(person) == sorted(
        [
            "IoU 0.5 raw",
            "IoU 0.5 interpolated",
            "conf >= 0.5 (IoU 0.5)",
            "IoU 0.75 raw",
            "IoU 0.75 interpolated",
            "conf >= 0.5 (IoU 0.75)",
        ]
    )
    assert _labels(fig.axes[3]) == ["IoU 0.5 interpolated", "IoU 0.75 interpolated"]  # cat: no detection
    assert _labels(fig.axes[4]) == []  # bird: no ground truth, nothing to draw
    assert fig.legends
    assert "IoU 0.5 raw" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_pr_curves_options(coco):
    fig = pr_curves(coco, iou_thresholds=[0.9], classes=["dog", 1], interpolated=False, operating_points=())
    assert [ax.get_title() for ax in fig.axes] == ["dog", "person"]
    assert _labels(fig.axes[0]) == ["IoU 0.9 raw"]  # 0.9 finds the protocol's 0.8999999999999999
    with pytest.raises(
        ConfigError, match=r"pr_curves: iou_thresholds: expected thresholds of protocol 'coco'.*found 0\.3"
    ):
        pr_curves(coco, iou_thresholds=[0.3])
    with pytest.raises(
        ConfigError, match="pr_curves: classes: expected category ids or names.*found 'zebra'"
    ):
        pr_curves(coco, classes=["zebra"])
    with pytest.raises(ConfigError, match="area: expected one of the protocol's area ranges"):
        pr_curves(coco, area="huge")


def test_interpolated_curves_are_the_protocols_numbers(coco, voc):
    # 101-point: the mean curve is the mean of the precision array, i.e. AP50
    rec, prec = mean_interpolated_curve(coco, 0, 0)
    assert len(rec) == 101
    assert np.mean(prec) == pytest.approx(coco.metrics["AP50"], abs=1e-12)
    # all-point: the area under each class's envelope is its AP
    from deteval.analysis import pr_curve

    for k, cid in enumerate(voc.category_ids):
        curve = pr_curve(voc, cid)
        if curve.n_positive:
            r, p = envelope(curve)
            assert np.sum(np.diff(r) * p[1:]) == pytest.approx(voc.ap[0, k, 0, -1], abs=1e-12)


def test_f1_curves_mark_best_f1(coco):
    fig = f1_curves(coco)
    assert [ax.get_title() for ax in fig.axes][:2] == ["all classes (pooled counts)", "person"]
    best = best_f1(coco, 1, iou_threshold=0.5)
    (marker,) = [line for line in fig.axes[1].get_lines() if line.get_label() == "best F1"]
    assert marker.get_xdata()[0] == best["threshold"]
    assert marker.get_ydata()[0] == pytest.approx(best["f1"])
    assert _labels(fig.axes[1]) == ["precision", "recall", "F1", "best F1"]


def test_per_class_ap_bars_sorted_with_gt(coco):
    ax = per_class_ap(coco).axes[0]
    assert len(ax.patches) == 4
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "person",
        "dog",
        "cat",
        "bird",
    ]  # AP desc, n/a last
    texts = [t.get_text() for t in ax.child_axes[0].get_yticklabels()]  # at the right of the axes
    assert "0.731  (5 GT)" in texts
    assert "n/a  (0 GT)" in texts


def test_thousand_classes_top_k_is_readable(big):
    fig = per_class_ap(big, top_k=30)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ax.patches) == 31
    assert labels[-1] == "others (970 classes)"
    ap = sorted((c["AP"] for c in big.per_class), reverse=True)
    assert ax.patches[0].get_width() == pytest.approx(ap[0])
    width, height = fig.get_size_inches()
    assert height < 12
    assert width < 10
    curves = pr_curves(big)
    assert len(curves.axes) == 1 + 12  # the mean and the 12 classes with the most ground truth
    assert len(figure_bytes(curves, "png")) < 600_000


def test_confusion_matrix_cells(analysis):
    doc = analysis.confusion.to_dict()
    n = len(doc["labels"])
    image = confusion_matrix(analysis.confusion).axes[0].images[0]
    assert image.get_array().shape == (n, n)
    rows = confusion_matrix(doc, normalize="true").axes[0].images[0].get_array()
    sums = np.asarray(rows).sum(axis=1)
    assert np.allclose(sums[sums > 0], 1.0)
    small = confusion_matrix(doc, top_k=1).axes[0]
    assert small.images[0].get_array().shape == (3, 3)
    assert [t.get_text() for t in small.get_xticklabels()][-2:] == ["others", "background"]
    with pytest.raises(ConfigError, match="normalize: expected one of"):
        confusion_matrix(doc, normalize="rows")


def test_reduce_confusion_keeps_totals():
    rng = np.random.default_rng(0)
    m = rng.integers(0, 5, size=(41, 41))
    small, labels = reduce_confusion(m, [f"c{i}" for i in range(40)] + ["background"], top_k=7)
    assert small.shape == (9, 9)
    assert small.sum() == m.sum()
    assert labels[-1] == "background"
    assert small[-1].sum() == m[-1].sum()  # background row kept as is


def test_error_breakdown_and_decomposition(analysis):
    fig = error_breakdown(analysis)  # the AnalysisResult: its errors
    assert [len(ax.patches) for ax in fig.axes] == [6, 2]
    assert "background" in [t.get_text() for t in fig.axes[0].get_xticklabels()]
    fig = decomposition_curves(analysis.decomposition.to_dict())
    assert len(fig.axes) == 2 * 3  # person, dog, cat have ground truth
    assert _labels(fig.axes[0]) == ["D", "L", "C|L"]
    fig = decomposition_curves(analysis, category_id=2)
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title(loc="left").startswith("dog")
    with pytest.raises(ConfigError, match="decomposition_curves: category_id"):
        decomposition_curves(analysis, category_id=99)


def test_explain_waterfall(inputs):
    explanation = deteval.explain(*inputs, "voc2007", "coco")
    fig = explain_waterfall(explanation)
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0] == "voc2007"
    assert ticks[-1] == "coco"
    assert len(ticks) == len(explanation.steps) + 2
    assert len(ax.patches) == len(explanation.steps) + 2
    tops = [p.get_y() + p.get_height() for p in ax.patches]
    assert tops[:2] == pytest.approx([explanation.start, explanation.end])  # A and B are drawn first
    with pytest.raises(ConfigError, match="explain_waterfall: expected an Explanation"):
        explain_waterfall({"nothing": 1})


def test_forest_rows_and_differences(inputs):
    gt, dt = inputs
    result = compare_detectors(gt, {"A": dt, "B": load_detections(COCO / "dt.json", gt)}, "voc2010", n=30)
    fig = forest(result)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["mAP  A", "mAP  B"]
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()] == ["B - A  mAP"]
    with pytest.raises(ConfigError, match="forest: metrics"):
        forest(result, metrics=["AP"])


PLOTS = {
    "pr_curves": lambda c, a, e: pr_curves(c),
    "f1_curves": lambda c, a, e: f1_curves(c),
    "per_class_ap": lambda c, a, e: per_class_ap(c),
    "confusion": lambda c, a, e: confusion_matrix(a),
    "errors": lambda c, a, e: error_breakdown(a),
    "decomposition": lambda c, a, e: decomposition_curves(a),
    "waterfall": lambda c, a, e: explain_waterfall(e),
}


@pytest.mark.parametrize("name", sorted(PLOTS))
def test_svg_is_deterministic(name, coco, analysis, inputs):
    explanation = deteval.explain(*inputs, "voc2007", "voc2010")
    first = figure_bytes(PLOTS[name](coco, analysis, explanation), "svg")
    second = figure_bytes(PLOTS[name](coco, analysis, explanation), "svg")
    assert first == second
    assert b"<dc:date>" not in first
    assert figure_bytes(PLOTS[name](coco, analysis, explanation), "png")[:8] == b"\x89PNG\r\n\x1a\n"


def test_nasty_class_names_draw():
    gt, dt = synthetic(8, seed=3)
    result = deteval.evaluate(gt, dt, "coco")
    fig = per_class_ap(result)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "$x^2$ math" in labels
    assert "tab\\x09here\\x07bell" in labels
    assert figure_bytes(fig, "svg") == figure_bytes(per_class_ap(result), "svg")


@pytest.mark.usefixtures("figures_unless_fast")  # names and leftovers; the pixels: the tests above
def test_plot_all_writes_every_figure(tmp_path, coco, analysis, inputs):
    explanation = deteval.explain(*inputs, "voc2007", "voc2010")
    paths = plot_all({"mine": coco}, out_dir=tmp_path / "figs", analysis=analysis, explanation=explanation)
    names = [p.name for p in paths]
    assert names[:2] == ["pr_curves.png", "pr_curves.svg"]
    assert {"errors.svg", "confusion.png", "decomposition.png", "explain.png"} <= set(names)
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == sorted(names)  # no temporary files left
    with pytest.raises(
        ConfigError, match=r"plot_all: formats: expected some of \['png', 'svg'\], found \['jpg'\]"
    ):
        plot_all(coco, out_dir=tmp_path, formats=["jpg"])


def test_missing_matplotlib_says_how_to_install():
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import deteval\n"
        "r = deteval.evaluate('fixtures/coco/gt.json', 'fixtures/coco/dt.json', 'voc2010')\n"
        "try:\n    import deteval.plot\nexcept ImportError as e:\n"
        "    print(type(e).__name__, isinstance(e, deteval.DetevalError), e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("PlotDependencyError True deteval.plot:")
    assert 'pip install "deteval[plot]"' in out.stdout
    assert issubclass(PlotDependencyError, ImportError)
