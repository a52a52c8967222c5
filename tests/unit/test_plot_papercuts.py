"""Papercuts of `deteval plot` (#35): stable file names, --explain needs two protocols, AP axis ends at 1."""

from __future__ import annotations

import shutil

import pytest

import deteval
from deteval.cli import main

pytest.importorskip("matplotlib")

from deteval.plot import per_class_ap  # noqa: E402
from tests import ROOT  # noqa: E402

# No test here reads a pixel: in the fast tier figures are placeholders (tests/support/figures.py).
pytestmark = pytest.mark.usefixtures("figures_unless_fast")

GT, DT = str(ROOT / "fixtures/coco/gt.json"), str(ROOT / "fixtures/coco/dt.json")
PER_RESULT = ("pr_curves", "f1_curves", "per_class_ap")


def _plot(tmp_path, *args: str) -> tuple[int, list[str]]:
    out = tmp_path / "figures"
    code = main(["plot", "--gt", GT, *args, "--out", str(out), "--plot-format", "png", "-q"])
    return code, sorted(p.name for p in out.iterdir()) if out.exists() else []


def test_one_result_gives_one_fixed_name_per_figure_kind(tmp_path):
    renamed = tmp_path / "my-detector-epoch-12.json"
    shutil.copy(DT, renamed)
    for i, args in enumerate(
        (["--dt", DT], ["--dt", str(renamed)], ["--dt", str(renamed), "--protocol", "voc2010"])
    ):
        code, names = _plot(tmp_path / str(i), *args)
        assert code == 0
        assert names == sorted(f"{kind}.png" for kind in PER_RESULT)


def test_several_results_add_the_label_after_the_kind(tmp_path):
    code, names = _plot(
        tmp_path, "--dt", DT, "--protocol", "coco", "--protocol", "voc2010", "--explain", "--analyze"
    )
    assert code == 0
    expected = {f"{kind}-{p}.png" for kind in PER_RESULT for p in ("coco", "voc2010")}
    expected |= {"pr_overlay.png", "explain.png", "errors.png", "confusion.png", "decomposition.png"}
    assert set(names) == expected
    code, names = _plot(
        tmp_path / "3",
        "--dt",
        DT,
        "--protocol",
        "coco",
        "--protocol",
        "voc2010",
        "--protocol",
        "voc2007",
        "--explain",
    )
    assert code == 0
    assert {"explain-coco-voc2010.png", "explain-voc2010-voc2007.png"} <= set(names)


@pytest.mark.parametrize("command", ["plot", "report"])
def test_explain_with_one_protocol_is_refused(tmp_path, capsys, command):
    out = tmp_path / ("figures" if command == "plot" else "r.html")
    code = main([command, "--gt", GT, "--dt", DT, "--explain", "--out", str(out)])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        f"deteval {command}: error: --explain walks from each protocol to the next: expected at least two --protocol, found 1"
        in captured.err
    )
    assert not out.exists()


def _perfect() -> deteval.EvalResult:
    """Every object detected exactly: AP 1 for each class with ground truth."""
    import json

    gt = json.loads((ROOT / "fixtures/coco/gt.json").read_text())
    dt = [
        {"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 0.9}
        for a in gt["annotations"]
        if not a.get("iscrowd")
    ]
    return deteval.evaluate(gt, dt, "voc2010")


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
def test_the_per_class_ap_axis_ends_at_one():
    for result in (deteval.evaluate(GT, DT, "coco"), _perfect()):
        for top_k in (30, 2):
            ax = per_class_ap(result, top_k=top_k).axes[0]
            assert ax.get_xlim() == (0.0, 1.0)  # AP is at most 1: the axis stops there
            assert max(bar.get_width() for bar in ax.patches) <= 1.0
    assert max(bar.get_width() for bar in per_class_ap(_perfect()).axes[0].patches) == 1.0
