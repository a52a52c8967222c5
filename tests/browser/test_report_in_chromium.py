"""The HTML report in a real browser: headless Chromium, network off, a fresh profile.

Checks that the page renders without console errors, that every image decodes, and that the
per-class table sorts when a header is clicked (the page's own ``#selftest``, which clicks
headers and writes its verdict into the DOM). Skipped when ``chromium`` is not on PATH (the launch: tests/support/chromium.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.diagnose import analyze  # noqa: E402
from deteval.io import load_detections, load_ground_truth  # noqa: E402
from deteval.plot import write_report  # noqa: E402
from deteval.stats import compare_detectors  # noqa: E402
from tests.support.chromium import console_messages, needs_chromium, run_chromium  # noqa: E402
from tests.unit.plot_data import synthetic  # noqa: E402

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    gt_doc, dt_doc = synthetic(40, seed=11)
    gt = load_ground_truth(gt_doc)
    dt = load_detections(dt_doc, gt)
    results = deteval.compare(gt, dt, ["coco", "voc2007"]).results
    out = tmp_path_factory.mktemp("report") / "report.html"
    return write_report(
        results,
        out=out,
        analysis=analyze(gt, dt, "coco"),
        explanation=deteval.explain(gt, dt, "voc2007", "coco"),
        bootstrap=compare_detectors(gt, {"A": dt, "B": dt}, "voc2010", n=20),
    )


def test_report_renders_offline_sorts_and_decodes(report, tmp_path):
    run = run_chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", report.as_uri() + "#selftest")
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    body = re.search(r"<body[^>]*>", dom).group(0)
    n_images = int(re.search(r'data-images="(\d+)"', body).group(1))
    assert n_images == 1 + 2 * 3 + 1 + 3 + 1, body  # overlay, 2 results x 3, waterfall, errors x 3, forest
    assert 'data-images-ok="true"' in body, body
    selftest = re.search(r'<output id="selftest"[^>]*>', dom).group(0)
    assert 'data-result="pass"' in selftest, selftest
    assert 'data-rows="40"' in selftest, selftest
    assert console_messages(run) == []
    # nothing was fetched: every src / href in the rendered DOM is inline or a fragment
    for value in re.findall(r'\s(?:src|href)="([^"]*)"', dom):
        assert value.startswith(("data:image/png;base64,", "#")), value[:60]


def test_report_screenshot(report, tmp_path):
    shot = tmp_path / "report.png"
    run = run_chromium(tmp_path, "--window-size=1280,2000", f"--screenshot={shot}", report.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000
