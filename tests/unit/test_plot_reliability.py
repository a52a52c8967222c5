"""deteval.plot.reliability_diagram: built from a real calibration, repeatable bytes, refusals."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.calibration import calibration  # noqa: E402
from deteval.diagnose import analyze  # noqa: E402
from deteval.errors import ConfigError  # noqa: E402
from deteval.plot import figure_bytes, reliability_diagram  # noqa: E402
from tests import ROOT  # noqa: E402

GT, DT = ROOT / "fixtures/coco/gt.json", ROOT / "fixtures/coco/dt.json"


def _result():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
        return deteval.evaluate(str(GT), str(DT), "coco")


def test_bars_follow_the_reliability_curve() -> None:
    c = calibration(_result(), bins=5)
    fig = reliability_diagram(c)
    top, counts = fig.axes
    heights = [p.get_height() for p in top.patches]
    expected = [0.0 if r["precision"] is None else r["precision"] for r in c.to_dict()["reliability"]]
    assert heights == pytest.approx(expected)
    assert [p.get_height() for p in counts.patches] == [r["count"] for r in c.to_dict()["reliability"]]
    assert "D-ECE 0.2" in fig._suptitle.get_text()


def test_from_an_analysis_document_and_repeatable() -> None:
    gt = deteval.load_ground_truth(str(GT))
    dt = deteval.load_detections(str(DT), gt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
        doc = analyze(
            gt, dt, "coco", errors=False, decompose=False, confusion=False, beyond={"calibration": True}
        )
    doc = doc.to_dict()
    assert figure_bytes(reliability_diagram(doc), "svg") == figure_bytes(reliability_diagram(doc), "svg")


def test_other_documents_are_refused() -> None:
    with pytest.raises(ConfigError, match="expected a calibration document"):
        reliability_diagram({"errors": {}})
