"""`deteval plot` and `deteval report` through the CLI (the plot extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deteval.cli import main

pytest.importorskip("matplotlib")

from tests import ROOT

# No test here reads a pixel: in the fast tier figures are placeholders (tests/support/figures.py).
pytestmark = pytest.mark.usefixtures("figures_unless_fast")

GT, DT = str(ROOT / "fixtures/coco/gt.json"), str(ROOT / "fixtures/coco/dt.json")


def test_report_is_one_self_contained_file(tmp_path, capsys):
    out = tmp_path / "report.html"
    code = main(
        [
            "report",
            "--gt",
            GT,
            "--dt",
            DT,
            "--protocol",
            "coco",
            "--protocol",
            "voc2010",
            "--analyze",
            "--explain",
            "--out",
            str(out),
            "-q",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}")
    html = out.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert "<script src=" not in html
    assert "<link " not in html
    assert "person" in html
    assert "voc2010" in html


def test_two_detectors_with_intervals(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(Path(DT).read_text())
    out = tmp_path / "r.html"
    assert (
        main(
            [
                "report",
                "--gt",
                GT,
                "--dt",
                DT,
                "--dt",
                str(other),
                "--protocol",
                "voc2010",
                "--bootstrap",
                "20",
                "--out",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    assert "other.json" in out.read_text(encoding="utf-8")


def test_plot_writes_every_figure(tmp_path, capsys):
    out = tmp_path / "figures"
    assert main(["plot", "--gt", GT, "--dt", DT, "--out", str(out), "--plot-format", "svg", "-q"]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files
    assert all(name.endswith(".svg") for name in files)
    assert capsys.readouterr().out == f"wrote {len(files)} files to {out}\n"


def test_report_never_overwrites_an_input(tmp_path, capsys):
    copy = tmp_path / "dt.json"
    copy.write_text(Path(DT).read_text())
    before = copy.read_bytes()
    code = main(["report", "--gt", GT, "--dt", str(copy), "--out", str(copy)])
    assert code == 3
    assert copy.read_bytes() == before
    assert "--out" in capsys.readouterr().err


def test_without_matplotlib_the_error_says_how_to_get_it(tmp_path):
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from deteval.cli import main\n"
        f"sys.exit(main(['report', '--gt', {GT!r}, '--dt', {DT!r}, '--out', {str(tmp_path / 'r.html')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 3
    assert 'pip install "deteval[plot]"' in done.stderr
    assert "Traceback" not in done.stderr
