"""Fixtures every suite may use: the repository root and an in-process CLI runner."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import ROOT

# Ultralytics (a test oracle) writes its settings file under the user's config folder when it is first
# imported: point it at a folder of this run, so the suite touches nothing of the machine outside it.
os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="deteval-yolo-config-"))
os.environ.setdefault("YOLO_OFFLINE", "1")


@pytest.fixture
def repo_root() -> Path:
    """The repository root (fixtures/, docs/, README.md)."""
    return ROOT


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``deteval ARGS...`` in-process; returns (exit code, stdout, stderr)."""
    from deteval.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


#: Folders whose tests are the slow tier: cross-checks against the reference tools on generated
#: datasets, multi-process integration runs, the browser. `pytest -m "not slow"` is the fast tier a
#: developer runs all day; CI runs everything.
_SLOW_FOLDERS = ("tests/crosscheck/", "tests/integration/", "tests/browser/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of the slow folders ``slow`` (a test elsewhere may mark itself)."""
    for item in items:
        if item.nodeid.startswith(_SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)
