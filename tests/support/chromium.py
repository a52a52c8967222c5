"""Headless Chromium for the browser tests (tests/browser): network off, a fresh profile each run.

One launch for every browser test: the flags, the profile folder and the net-log reading.
Test modules mark themselves with :data:`needs_chromium` (skipped when ``chromium`` is not on
PATH: apt-get install chromium).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not on PATH (apt-get install chromium)"
)

FLAGS = [
    "--headless=new",
    "--disable-gpu",
    "--no-sandbox",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no name resolves: nothing can be fetched
    "--enable-logging=stderr",
    "--v=0",
]


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium with :data:`FLAGS` and ``args`` in a fresh profile under ``tmp_path``."""
    assert CHROMIUM is not None  # callers are marked needs_chromium
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120
    )


def console_messages(run: subprocess.CompletedProcess) -> list:
    """The page's console lines (and uncaught errors) in Chromium's stderr log."""
    return [line for line in run.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def page_requests(netlog: Path) -> list:
    """URLs the page asked for, from Chromium's net log (``--log-net-log``).

    The browser's own background requests (initiator "not an origin") are not the page's.
    """
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        e["params"]["url"]
        for e in log["events"]
        if e["type"] == start
        and "url" in e.get("params", {})  # the job's start (its end has no parameters)
        and e["params"].get("initiator") != "not an origin"
    ]
