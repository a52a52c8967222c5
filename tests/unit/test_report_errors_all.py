"""``--analyze`` / ``--explain`` of several detectors: an errors and an explain section (and figures) each."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.cli import analysis as cli_analysis  # noqa: E402
from deteval.cli import main  # noqa: E402
from deteval.diagnose import analyze  # noqa: E402
from deteval.plot.html import escape  # noqa: E402
from tests import ROOT  # noqa: E402

# No test here reads a pixel: in the fast tier figures are placeholders (tests/support/figures.py).
pytestmark = pytest.mark.usefixtures("figures_unless_fast")

GT = str(ROOT / "fixtures" / "coco" / "gt.json")
DT = {"A": str(ROOT / "fixtures" / "coco" / "dt.json"), "B": str(ROOT / "fixtures" / "coco" / "dt_b.json")}
TWO = ["--dt", DT["A"], "--dt", DT["B"], "--name", "A", "--name", "B"]
PROTOCOLS = ["--protocol", "coco", "--protocol", "voc2007"]


def _section(html: str, anchor: str) -> str:
    body = html[html.index(f'<section id="{anchor}">') :]
    return body[: body.index("</section>")]


def _cells(row: str) -> list[str]:
    return re.findall(r"<td[^>]*>([^<]*)</td>", row)


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")  # the fixture's bird
def test_two_detectors_each_have_their_errors_and_explain_sections(tmp_path, capsys):
    out = tmp_path / "r.html"
    argv = ["report", "--gt", GT, *TWO, *PROTOCOLS, "--analyze", "--explain", "--out", str(out), "-q"]
    assert main(argv) == 0, capsys.readouterr().err
    html = out.read_text(encoding="utf-8")
    assert '<section id="errors">' not in html
    assert '<section id="explain">' not in html
    assert "not analysed here" not in html
    gt = deteval.load_ground_truth(GT)
    for i, name in enumerate(("A", "B"), start=1):
        dt = deteval.load_detections(DT[name], gt)
        doc = analyze(gt, dt, deteval.resolve_protocol("coco")).to_dict()
        errors = _section(html, f"errors-{i}")
        assert f"<h2>Errors and their cost: {name}</h2>" in errors
        assert f"Detector: {name}.</p>" in errors
        e = doc["errors"]
        assert f"AP {e['ap']:.3f}" in errors
        row = errors[errors.index('<th scope="row">dAP</th>') :]
        expected = [f"{e['main'][k]:.3f}" for k in e["main"]] + [
            f"{e['special'][k]:.3f}" for k in e["special"]
        ]
        assert _cells(row[: row.index("</tr>")]) == expected
        mean = doc["decomposition"]["mean"]
        assert f"mean AP_D {mean['AP_D']:.3f}, AP_L {mean['AP_L']:.3f}" in errors
        assert f'id="tide-table-{i}"' in errors
        assert f'id="decomposition-table-{i}"' in errors
        for caption in ("TIDE error breakdown", "Confusion matrix", "AP decomposition factor curves"):
            assert f'alt="{caption}: {name}"' in errors
        walk = deteval.explain(gt, dt, "coco", "voc2007").to_dict()
        explain = _section(html, f"explain-{i}")
        assert f"<h2>Why the protocols differ: {name}</h2>" in explain
        assert f"Detector: {name}.</p>" in explain
        assert f"<code>{escape(walk['summary'])}</code>" in explain
        total = explain[explain.index('<tr class="total">') :]
        assert _cells(total[: total.index("</tr>")])[1:3] == [f"{walk['total']:+.4f}", f"{walk['end']:.4f}"]
        assert f'href="#errors-{i}">Errors: {name}</a>' in html
        assert f'href="#explain-{i}">Explain: {name}</a>' in html
    # the two detectors differ, so the sections do too
    assert _section(html, "errors-1").split("</p>", 1)[1] != _section(html, "errors-2").split("</p>", 1)[1]


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
def test_plot_writes_every_detectors_analysis_and_walk(tmp_path, capsys):
    out = tmp_path / "figures"
    argv = ["plot", "--gt", GT, *TWO, *PROTOCOLS, "--analyze", "--explain", "--plot-format", "svg"]
    assert main([*argv, "--out", str(out), "-q"]) == 0, capsys.readouterr().err
    files = {p.name for p in out.iterdir()}
    for name in ("A", "B"):
        for kind in ("errors", "confusion", "decomposition", "explain"):
            assert f"{kind}-{name}.svg" in files, (kind, name, sorted(files))
    assert not {"errors.svg", "confusion.svg", "decomposition.svg", "explain.svg"} & files
    # one detector: the names it always had
    one = tmp_path / "one"
    argv = ["plot", "--gt", GT, "--dt", DT["A"], *PROTOCOLS, "--analyze", "--explain", "--plot-format", "svg"]
    assert main([*argv, "--out", str(one), "-q"]) == 0
    assert {"errors.svg", "confusion.svg", "decomposition.svg", "explain.svg"} <= {
        p.name for p in one.iterdir()
    }


class _Counting:
    """Stands in for the CLI's progress bar: counts the stages against the announced total."""

    seen: list = []

    def __init__(self, total: int, quiet: bool):
        self.total, self.stages, self.bar = total, [], None
        _Counting.seen.append(self)

    def stage(self, label: str) -> None:
        self.stages.append(label)

    def advance(self, done: int, total: int) -> None:
        pass

    def finish(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
def test_progress_counts_every_detectors_analysis_and_walk(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli_analysis, "_Progress", _Counting)
    _Counting.seen = []
    argv = [
        "report",
        "--gt",
        GT,
        *TWO,
        *PROTOCOLS,
        "--analyze",
        "--explain",
        "--out",
        str(tmp_path / "r.html"),
    ]
    assert main([*argv, "-q"]) == 0, capsys.readouterr().err
    (progress,) = _Counting.seen
    assert len(progress.stages) == progress.total, progress.stages
    for name in ("A", "B"):
        assert f"{name}: analysing" in progress.stages
        assert f"{name}: explaining coco -> voc2007" in progress.stages
