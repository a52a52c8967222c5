"""The HTML report in a real browser: headless Chromium, network off, a fresh profile.

Checks that the page renders without console errors, that every image decodes, and that the
per-class table sorts when a header is clicked (the page's own ``#selftest``, which clicks
headers and writes its verdict into the DOM). Skipped when ``chromium`` is not on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.diagnose import analyze  # noqa: E402
from deteval.io import load_detections, load_ground_truth  # noqa: E402
from deteval.plot import write_report  # noqa: E402
from deteval.stats import compare_detectors  # noqa: E402
from tests.unit.plot_data import synthetic  # noqa: E402

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH (apt-get install chromium)")

FLAGS = [
    "--headless=new",
    "--disable-gpu",
    "--no-sandbox",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr",
    "--v=0",
]


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120
    )


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
    run = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", report.as_uri() + "#selftest")
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    body = re.search(r"<body[^>]*>", dom).group(0)
    n_images = int(re.search(r'data-images="(\d+)"', body).group(1))
    assert n_images == 1 + 2 * 3 + 1 + 3 + 1, body  # overlay, 2 results x 3, waterfall, errors x 3, forest
    assert 'data-images-ok="true"' in body, body
    selftest = re.search(r'<output id="selftest"[^>]*>', dom).group(0)
    assert 'data-result="pass"' in selftest, selftest
    assert 'data-rows="40"' in selftest, selftest
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == [], console
    # nothing was fetched: every src / href in the rendered DOM is inline or a fragment
    for value in re.findall(r'\s(?:src|href)="([^"]*)"', dom):
        assert value.startswith(("data:image/png;base64,", "#")), value[:60]


def test_report_screenshot(report, tmp_path):
    shot = tmp_path / "report.png"
    run = _chromium(
        tmp_path, "--hide-scrollbars", "--window-size=1280,2000", f"--screenshot={shot}", report.as_uri()
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000
