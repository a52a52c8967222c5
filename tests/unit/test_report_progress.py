"""``deteval report``'s progress on stderr: a stage bar on a terminal, nothing in a pipe or with -q.

The command runs in a child process whose stderr is a real pseudo-terminal (``pty.openpty``) or
a pipe; stdout is always a pipe and holds only the one summary line. Nothing here depends on
timing: every stage change redraws the bar, so each stage's name is on the terminal however
fast the stage runs.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("PIL")
pytest.importorskip("tqdm")

from tests import ROOT  # noqa: E402
from tests.support.figures import CHILD_ENV, CHILD_MAIN  # noqa: E402
from tests.support.tier import is_fast_tier  # noqa: E402

FIXTURE = ROOT / "fixtures" / "gallery"
MAIN = CHILD_MAIN  # the CLI's main; placeholder figures where CHILD_ENV is set
STAGES = [
    "A: loading",
    "B: loading",
    "A: matching coco",
    "A: scoring coco",
    "B: matching coco",
    "B: scoring coco",
    "resampling (20 resamples)",
    "error browser: A",
    "error browser: B",
    "label errors: A",
    "label errors: B",
    "drawing the figures",
]


@pytest.fixture(autouse=True)
def _no_drawing_in_the_fast_tier(request, monkeypatch):
    """The stages and the terminal are the point, not the pixels: placeholders in the fast tier."""
    if is_fast_tier(request.config):
        monkeypatch.setenv(CHILD_ENV, "1")


def _argv(tmp_path) -> list:
    return [
        "report",
        "--gt",
        str(FIXTURE / "gt.json"),
        "--dt",
        str(FIXTURE / "dt.json"),
        "--dt",
        str(FIXTURE / "dt_b.json"),
        "--name",
        "A",
        "--name",
        "B",
        "--protocol",
        "coco",
        "--bootstrap",
        "20",
        "--images",
        str(FIXTURE / "images"),
        "--label-errors",
        "--output",
        str(tmp_path / "doc.json"),
        "--out",
        str(tmp_path / "r.html"),
    ]


def _run(argv: list, *, terminal: bool) -> tuple:
    """(exit code, stdout, stderr) of ``deteval argv`` with stderr a pseudo-terminal or a pipe."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    if not terminal:
        done = subprocess.run(
            [sys.executable, "-c", MAIN, *argv],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=600,
        )
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    # a terminal of 40 x 160 (a new pty is 0 x 0, and tqdm fits its bar into 0 columns)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", MAIN, *argv], stdout=subprocess.PIPE, stderr=slave, cwd=ROOT, env=env
        )
    finally:
        os.close(slave)  # the child holds its own copy: EOF (EIO) here once it exits
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    stdout = proc.stdout.read().decode()
    proc.stdout.close()
    return proc.wait(timeout=600), stdout, b"".join(chunks).decode(errors="replace")


def _summary_only(stdout: str, tmp_path) -> None:
    assert re.fullmatch(r"wrote \S+r\.html \(\d+\.\d\d MB\)\n", stdout), stdout
    doc = json.loads((tmp_path / "doc.json").read_text())  # the JSON document is whole
    assert doc["inputs"]["detectors"] == ["A", "B"]


def test_every_long_step_is_shown_on_a_terminal(tmp_path):
    code, stdout, stderr = _run(_argv(tmp_path), terminal=True)
    assert code == 0, stderr[-3000:]
    _summary_only(stdout, tmp_path)
    positions = [stderr.find(stage) for stage in STAGES]
    assert -1 not in positions, [s for s, p in zip(STAGES, positions) if p < 0]
    assert positions == sorted(positions)  # in the order they run
    # the stage counter beside each name counts every stage: the last is 12 of 12
    assert f"drawing the figures ({len(STAGES)}/{len(STAGES)})" in stderr
    assert "A: loading (1/12)" in stderr
    assert "\r" in stderr  # redrawn in place


def test_silent_in_a_pipe(tmp_path):
    code, stdout, stderr = _run(_argv(tmp_path), terminal=False)
    assert code == 0, stderr[-3000:]
    _summary_only(stdout, tmp_path)
    assert "\r" not in stderr
    assert not [stage for stage in STAGES if stage in stderr], stderr


def test_silent_on_a_terminal_with_quiet(tmp_path):
    code, stdout, stderr = _run([*_argv(tmp_path), "-q"], terminal=True)
    assert code == 0, stderr[-3000:]
    _summary_only(stdout, tmp_path)
    assert stderr == ""


def test_analysis_and_explain_stages_on_a_terminal(tmp_path):
    argv = ["report", "--gt", str(FIXTURE / "gt.json"), "--dt", str(FIXTURE / "dt.json")]
    argv += [
        "--protocol",
        "coco",
        "--protocol",
        "voc2007",
        "--analyze",
        "--explain",
        "--out",
        str(tmp_path / "r.html"),
    ]
    code, stdout, stderr = _run(argv, terminal=True)
    assert code == 0, stderr[-3000:]
    assert re.fullmatch(r"wrote \S+r\.html \(\d+\.\d\d MB\)\n", stdout), stdout
    stages = ["loading", "matching coco", "scoring coco", "matching voc2007", "scoring voc2007"]
    stages += ["analysing", "explaining coco -> voc2007", "drawing the figures (8/8)"]
    positions = [stderr.find(stage) for stage in stages]
    assert -1 not in positions, [s for s, p in zip(stages, positions) if p < 0]
    assert positions == sorted(positions)
