"""The HTML report.

One self-contained file, every user string escaped, no network reference, within its size budget,
written atomically.
"""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
import deteval.plot.html as report_html  # noqa: E402
from deteval.diagnose import analyze  # noqa: E402
from deteval.errors import ConfigError  # noqa: E402
from deteval.io import load_detections, load_ground_truth  # noqa: E402
from deteval.plot import render_report, write_report  # noqa: E402
from deteval.stats import compare_detectors  # noqa: E402
from tests.support.figures import no_drawing_in_fast_tier  # noqa: E402
from tests.unit.plot_data import synthetic  # noqa: E402

# The fixtures have a class without ground truth (a note through the API); incidental here.
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]


BUDGET = 5 * 1024 * 1024


class _Collect(html.parser.HTMLParser):
    """Tags, attribute values, and the text of <script> / <style> (code, not plain text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list = []
        self.attributes: list = []
        self.code: list = []
        self.text: list = []
        self._in_code = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, k, v or "") for k, v in attrs]
        self._in_code = tag in ("script", "style")

    def handle_endtag(self, tag):
        self._in_code = False

    def handle_data(self, data):
        (self.code if self._in_code else self.text).append(data)


def _parse(text: str) -> _Collect:
    parser = _Collect()
    parser.feed(text)
    return parser


@pytest.fixture(scope="module")
def nasty_run():
    gt_doc, dt_doc = synthetic(12, seed=5)
    gt = load_ground_truth(gt_doc)
    dt = load_detections(dt_doc, gt)
    results = deteval.compare(gt, dt, ["coco", "voc2007"]).results
    return gt, dt, results


@pytest.fixture(scope="module")
def full_report(nasty_run, request):
    """One report with every optional section, read by the tests below (drawing is most of a test's time).

    They read its HTML, not its pixels: in the fast tier the figures are placeholders
    (tests/support/figures.py).
    """
    gt, dt, results = nasty_run
    explanation = deteval.explain(gt, dt, "voc2007", "coco")
    boot = compare_detectors(gt, {"A": dt, "B": dt}, "voc2010", n=20)
    with no_drawing_in_fast_tier(request.config):
        text = render_report(
            results,
            title='<b>"mine"</b> & co',
            analysis=analyze(gt, dt, "coco"),
            explanation=explanation,
            bootstrap=boot,
        )
    return text, explanation


def test_every_user_string_is_escaped(full_report):
    text = full_report[0]
    parsed = _parse(text)
    assert parsed.tags.count("script") == 1
    assert "alert(1)" not in "".join(parsed.code)
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "tab\there\\x07bell" in "".join(parsed.text)
    assert "\x07" not in text
    assert "<b>" not in text
    assert "&lt;b&gt;&quot;mine&quot;&lt;/b&gt; &amp; co" in text
    # the nasty names reach the table as text, sortable by their real value
    cells = [v for tag, k, v in parsed.attributes if k == "data-v"]
    assert "<script>alert(1)</script>" in cells
    assert "a \"quoted\" & 'single'" in cells


def test_no_network_reference(full_report):
    text = full_report[0]
    parsed = _parse(text)
    for tag, key, value in parsed.attributes:
        if key in ("src", "href", "srcset", "poster", "action", "style"):
            assert re.fullmatch(r"data:image/png;base64,[A-Za-z0-9+/=]+|#[a-z-]+", value), (
                tag,
                key,
                value[:60],
            )
        elif key not in ("data-v", "data-class"):  # they hold a class name: text, never loaded
            assert not re.search(r"https?:|^//", value), (tag, key, value[:80])
    code = "".join(parsed.code)
    assert not re.search(r"https?:|//[a-z]|@import|url\(", code, flags=re.I)
    # http(s):// appears only as plain text (a class named https://example.com/cls)
    outside_text = text
    for chunk in parsed.text:
        outside_text = outside_text.replace(chunk, "")
    assert "http" not in re.sub(r'data-(?:v|class)="[^"]*"', "", outside_text.replace("&quot;", '"'))


def test_sections_and_numbers_come_from_the_documents(nasty_run, full_report):
    results = nasty_run[2]
    text, explanation = full_report
    for section in ("inputs", "metrics", "protocols", "classes", "figures", "explain", "errors", "intervals"):
        assert f'<section id="{section}">' in text
    coco = results[0].to_dict()
    assert f'data-v="{coco["metrics"]["AP"]!r}">{coco["metrics"]["AP"]:.3f}</td>' in text
    assert results[0].protocol.fingerprint() in text
    assert "B - A = +0.000 mAP" in text  # the stats module's verdict line
    assert explanation.summary_line().replace(">", "&gt;") in text
    assert (
        text.count("<img ") == 1 + 2 * 3 + 1 + 3 + 1
    )  # overlay, 2 results x 3, waterfall, errors x 3, forest


@pytest.mark.parametrize("n", [80, 1000])  # a sweep (tests/conftest.py): the fast tier draws 80 classes
def test_many_classes_all_listed_and_within_budget(tmp_path, n):
    gt, dt = synthetic(n, n_images=max(40, n // 3), seed=n)
    result = deteval.evaluate(gt, dt, "coco")
    path = write_report({"detector": result}, out=tmp_path / f"r{n}.html")
    text = path.read_text(encoding="utf-8")
    body = text[text.index('id="class-table"') :]
    body = body[: body.index("</table>")]
    assert body.count("<tr>") == n + 1  # header row + one per class
    assert path.stat().st_size < BUDGET


@pytest.mark.usefixtures("figures_unless_fast")  # the file's rules, not its pixels
def test_write_is_atomic(tmp_path, monkeypatch, nasty_run):
    target = tmp_path / "report.html"
    target.write_text("previous report", encoding="utf-8")
    _, _, results = nasty_run

    def broken(*args, **kwargs):
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(report_html, "figure_bytes", broken)
    with pytest.raises(RuntimeError, match="rendering failed"):
        write_report(results, out=target)
    assert target.read_text(encoding="utf-8") == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    monkeypatch.undo()
    write_report(results, out=target)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_bad_results_are_config_errors():
    with pytest.raises(ConfigError, match="write_report: results: expected an EvalResult, a sequence"):
        render_report("coco")
    with pytest.raises(ConfigError, match="write_report: results: expected at least one EvalResult"):
        render_report([])


_COCO = Path(__file__).resolve().parents[2] / "fixtures" / "coco"


def test_report_figures_drawn_in_forked_processes_are_the_same_bytes(monkeypatch):
    """The HTML report draws its figures on every usable CPU; the document is byte for byte the same."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = deteval.evaluate(str(_COCO / "gt.json"), str(_COCO / "dt.json"), "coco")
    forks = []
    real = report_html.run_forked
    monkeypatch.setattr(report_html, "run_forked", lambda *a, **k: forks.append(1) or real(*a, **k))
    monkeypatch.setattr(report_html, "usable_cpus", lambda: 1)
    serial = report_html.render_report(result)
    assert forks == []
    monkeypatch.setattr(report_html, "usable_cpus", lambda: 2)
    assert report_html.render_report(result) == serial
    assert forks == [1]
