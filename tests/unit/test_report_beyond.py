"""The report's calibration and optimal LRP section (#beyond), and ``deteval plot | report --calibration --lrp``."""

from __future__ import annotations

import html.parser
import json
import re

import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.beyond import beyond_ap  # noqa: E402
from deteval.cli import main  # noqa: E402
from deteval.plot import render_report  # noqa: E402
from tests import ROOT  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("figures_unless_fast"),  # no test here reads a pixel: tests/support/figures.py
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]

GT, DT, DT_B = (str(ROOT / "fixtures/coco" / n) for n in ("gt.json", "dt.json", "dt_b.json"))


class _Tables(html.parser.HTMLParser):
    """Per table id: its rows of cell texts; the figures' captions; the text of section #beyond."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict = {}
        self.captions: list = []
        self.sections: list = []
        self.nav: list = []
        self._table = self._row = self._cell = None
        self._in_caption = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.sections.append(attrs.get("id"))
        if tag == "a" and (attrs.get("href") or "").startswith("#"):
            self.nav.append(attrs["href"][1:])
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "figcaption":
            self._in_caption = True

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "figcaption":
            self._in_caption = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_caption:
            self.captions.append(data)


def _parse(text: str) -> _Tables:
    parser = _Tables()
    parser.feed(text)
    return parser


def _inputs(dt: str = DT):
    g = deteval.load_ground_truth(GT)
    return g, deteval.load_detections(dt, g)


def test_section_numbers_are_the_documents() -> None:
    g, d = _inputs()
    _, d_b = _inputs(DT_B)
    r = deteval.evaluate(g, d, "coco")
    docs = {
        "a": beyond_ap(g, d, calibration=True, lrp=True).to_dict(),
        "<b>": beyond_ap(g, d_b, calibration=True, lrp=True).to_dict(),
    }
    text = render_report({"a": r, "<b>": deteval.evaluate(g, d_b, "coco")}, beyond=docs)
    found = _parse(text)
    assert "beyond" in found.sections
    assert "beyond" in found.nav
    assert "&lt;b&gt;" in text  # the label is escaped
    for k, doc in enumerate(docs.values()):
        cal_rows = found.tables[f"calibration-table-{k}"][1:]
        assert [row[0] for row in cal_rows] == [c["name"] for c in doc["calibration"]["per_class"]]
        for row, c in zip(cal_rows, doc["calibration"]["per_class"]):
            assert row[2] == ("n/a" if c["D-ECE"] is None else f"{c['D-ECE']:.4f}")
        lrp_rows = found.tables[f"lrp-table-{k}"][1:]
        for row, c in zip(lrp_rows, doc["lrp"]["per_class"], strict=True):
            keys = ("oLRP", "oLRP_loc", "oLRP_FP", "oLRP_FN", "threshold")
            assert row[1:6] == ["n/a" if c[key] is None else f"{c[key]:.4f}" for key in keys]
            assert row[6:9] == ["n/a" if c["n_tp"] < 0 else str(c[key]) for key in ("n_tp", "n_fp", "n_fn")]
        assert f"moLRP {doc['lrp']['moLRP']:.4f}" in text
        assert f"D-ECE {doc['calibration']['D-ECE']:.4f}" in text
    assert [c for c in found.captions if "LRP" in c or "Reliability" in c] == [
        "Reliability diagram (D-ECE): a",
        "Optimal LRP: components and thresholds per class: a",
        "Reliability diagram (D-ECE): <b>",
        "Optimal LRP: components and thresholds per class: <b>",
    ]


def test_analysis_with_calibration_gives_the_section() -> None:
    g, d = _inputs()
    r = deteval.evaluate(g, d, "coco")
    from deteval.diagnose import analyze

    found = analyze(g, d, "coco", errors=False, decompose=False, confusion=False, beyond={"lrp": True})
    parsed = _parse(render_report(r, analysis=found))
    assert "beyond" in parsed.sections
    assert "lrp-table" in parsed.tables
    assert "calibration-table" not in parsed.tables


def test_cli_report_is_off_by_default_and_on_with_the_flags(tmp_path, capsys) -> None:  # noqa: ANN001
    plain = tmp_path / "plain.html"
    assert main(["report", "--gt", GT, "--dt", DT, "--out", str(plain), "-q"]) == 0
    assert "beyond" not in _parse(plain.read_text()).sections
    out = tmp_path / "r.html"
    argv = ["report", "--gt", GT, "--dt", DT, "--dt", DT_B, "--calibration", "--lrp", "--bootstrap", "20",
            "--out", str(out), "--output", str(tmp_path / "r.json"), "-q"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    text = out.read_text()
    found = _parse(text)
    assert "beyond" in found.sections
    doc = json.loads((tmp_path / "r.json").read_text())
    b = doc["results"][1]
    assert b["detector"] == "dt_b.json"
    assert b["paired"]["against"] == "dt.json"
    # the report's numbers are the JSON's: moLRP with its interval, each class's interval
    lo, hi = b["lrp_ci"]["moLRP"]["ci"]
    assert f"moLRP {b['lrp']['moLRP']:.4f} [{lo:.4f}, {hi:.4f}]" in text
    rows = found.tables["lrp-table-1"][1:]
    for row, c in zip(rows, b["lrp_ci"]["per_class"], strict=True):
        ci = c["oLRP"]["ci"]
        assert row[-1] == ("" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]")
    assert "dt_b.json minus dt.json" in re.sub(r"<[^>]+>", "", text)


def test_cli_plot_writes_the_beyond_figures(tmp_path) -> None:  # noqa: ANN001
    argv = ["plot", "--gt", GT, "--dt", DT, "--dt", DT_B, "--lrp", "--calibration", "--out", str(tmp_path),
            "--plot-format", "svg", "-q"]  # fmt: skip
    assert main(argv) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [n for n in names if n.startswith(("reliability", "lrp_components"))] == [
        "lrp_components-dt.json_coco.svg",
        "lrp_components-dt_b.json_coco.svg",
        "reliability-dt.json_coco.svg",
        "reliability-dt_b.json_coco.svg",
    ]
