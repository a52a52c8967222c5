"""Regenerate the pictures of docs/plots.md.

Run each Python block of the page, save its `fig` as the PNG named by the image line that follows
it, and screenshot the report in headless Chromium.

    python scripts/make_plot_docs.py      # from the repository root
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import deteval  # noqa: E402
import deteval.plot  # noqa: E402
from deteval.diagnose import analyze  # noqa: E402

PAGE = ROOT / "docs" / "plots.md"
IMAGES = ROOT / "docs" / "img"


def figures() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for code, name in re.findall(
        r"```python\n((?:(?!```).)*)```\s*\n!\[[^\]]*\]\(img/(\w+)\.png\)", text, flags=re.S
    ):
        namespace: dict = {"__name__": "__doc__"}
        exec(compile(code, f"<{name}>", "exec"), namespace)
        deteval.plot.atomic_write(IMAGES / f"{name}.png", deteval.plot.figure_bytes(namespace["fig"], "png"))
        print(f"docs/img/{name}.png")


def screenshot() -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium not on PATH: docs/img/report.png not updated")
        return
    os.chdir(ROOT)  # relative paths in the report, as a reader would type them
    gt = deteval.load_ground_truth("fixtures/coco/gt.json")
    dt = deteval.load_detections("fixtures/coco/dt.json", gt)
    results = deteval.compare(gt, dt, ["coco", "voc2007"]).results
    with tempfile.TemporaryDirectory() as folder:
        report = deteval.plot.write_report(
            results,
            out=Path(folder) / "report.html",
            analysis=analyze(gt, dt, "coco"),
            explanation=deteval.explain(gt, dt, "voc2007", "coco"),
        )
        subprocess.run(
            [
                chromium,
                "--headless=new",
                "--disable-gpu",
                "--no-sandbox",
                "--hide-scrollbars",
                f"--user-data-dir={folder}/profile",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--window-size=1280,2000",
                f"--screenshot={IMAGES / 'report.png'}",
                report.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print("docs/img/report.png")


if __name__ == "__main__":
    IMAGES.mkdir(exist_ok=True)
    figures()
    screenshot()
