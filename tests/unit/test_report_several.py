"""The report of several detectors / protocols: every protocol order, AP columns first, whose sections."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("matplotlib")

from deteval.cli import main  # noqa: E402
from tests import ROOT  # noqa: E402

# No test here reads a pixel: in the fast tier figures are placeholders (tests/support/figures.py).
pytestmark = pytest.mark.usefixtures("figures_unless_fast")

GT = str(ROOT / "fixtures" / "coco" / "gt.json")
DT = str(ROOT / "fixtures" / "coco" / "dt.json")
DT_B = str(ROOT / "fixtures" / "coco" / "dt_b.json")


@pytest.mark.parametrize("order", [("ultralytics", "coco"), ("coco", "ultralytics")])
def test_analyze_works_in_every_protocol_order(order, tmp_path, capsys):
    out = tmp_path / "r.html"
    argv = ["report", "--gt", GT, "--dt", DT, "--protocol", order[0], "--protocol", order[1], "--analyze"]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    html = out.read_text()
    assert '<section id="errors">' in html
    err = capsys.readouterr().err
    if order[0] == "ultralytics":  # its trapezoid AP has no decomposition: said, not refused
        assert "no AP decomposition under the first protocol" in err
        assert "AP decomposition at IoU" not in html
    else:
        assert "AP decomposition at IoU" in html


def test_per_class_ap_columns_come_first_and_sections_say_whose(tmp_path, capsys):
    out = tmp_path / "r.html"
    argv = ["report", "--gt", GT, "--dt", DT, "--dt", DT_B, "--name", "A", "--name", "B", "--analyze"]
    assert main([*argv, "--gallery", "--label-errors", "--out", str(out), "-q"]) == 0, capsys.readouterr().err
    html = out.read_text()
    table = html[html.index('id="class-table"') :]
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", table[: table.index("</thead>")])
    assert headers[:4] == ["id", "class", "AP · A", "AP · B"]
    # each detector has its errors section (tests/unit/test_report_errors_all.py checks the numbers)
    for i, name in enumerate(("A", "B"), start=1):
        body = html[html.index(f'<section id="errors-{i}"') :]
        assert f"Detector: {name}." in body[: body.index("</section>")]
    # the error browser and the label errors cover every detector (a menu; a table each)
    for section in ("gallery", "label-errors"):
        body = html[html.index(f'<section id="{section}"') :]
        body = body[: body.index("</section>")]
        assert "not analysed here" not in body, section
        assert "2 detectors" in body, section
    gallery = html[html.index('<section id="gallery"') :]
    assert '<select id="gallery-detector"><option value="1">A</option><option value="2">B</option>' in gallery
    assert 'data-detector="1"' in gallery
    assert 'data-detector="2"' in gallery
    labels = html[html.index('<section id="label-errors"') :]
    assert "Detector A" in labels
    assert "Detector B" in labels


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")  # the fixture's bird
def test_pr_curves_of_several_results_are_overlaid(tmp_path):
    import deteval
    from deteval.plot import pr_overlay, write_report

    gt = deteval.load_ground_truth(GT)
    a = deteval.evaluate(gt, deteval.load_detections(DT, gt), "coco")
    b = deteval.evaluate(gt, deteval.load_detections(DT_B, gt), "coco")
    fig = pr_overlay({"A": a, "B": b})
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == [
        f"A: AP50 {a.metrics['AP50']:.3f}",
        f"B: AP50 {b.metrics['AP50']:.3f}",
    ]
    html = write_report({"A": a, "B": b}, out=tmp_path / "r.html").read_text()
    assert "Precision/recall of every result, overlaid" in html
    one = write_report({"A": a}, out=tmp_path / "one.html").read_text()
    assert "overlaid" not in one
