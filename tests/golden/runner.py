"""Run one golden CLI command in-process and render everything it produced as one text."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
from pathlib import Path

from tests import ROOT

GOLDEN = Path(__file__).resolve().parent / "outputs"


def commands() -> list[list[str]]:
    text = (Path(__file__).resolve().parent / "commands.txt").read_text(encoding="utf-8")
    return [shlex.split(line) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def run(argv: list[str]) -> str:
    from deteval.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's own exits
                code = exc.code
    finally:
        os.chdir(cwd)
    return f"$ deteval {shlex.join(argv)}\n--- exit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"
