"""Figures drawn for real in the full suite, skipped in the fast tier where a test reads no pixel.

Drawing (matplotlib's text layout and rasterising in ``Figure.savefig``) is about a second a
figure and was most of the fast tier's time: a CLI report of two detectors draws a dozen. A
test whose assertions are about file names, sections, numbers in the HTML, progress stages or
the writer's rules -- never about the pictures -- takes the ``figures_unless_fast`` fixture
(tests/conftest.py): in the fast tier every figure is still built (its data, axes and labels),
and ``savefig`` writes a small fixed placeholder in the requested format instead of drawing; the
full suite draws every figure as before. The pictures themselves are checked, in both tiers, by
tests/unit/test_plot*.py (deterministic bytes, sizes, nasty names, every figure kind).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: What ``savefig`` writes in the fast tier: the shortest file each format's readers accept as
#: its kind (the PNG signature and an empty IHDR-less stream is enough for the tests that look
#: at the bytes' kind, none decodes them).
PLACEHOLDERS = {
    "png": b"\x89PNG\r\n\x1a\n placeholder: the fast tier does not draw",
    "svg": b'<?xml version="1.0" encoding="utf-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>\n',
}


def _placeholder_savefig(self: Any, fname: Any, *args: Any, format: str | None = None, **kwargs: Any) -> None:
    """``Figure.savefig`` without drawing: the placeholder of the requested format."""
    if format is None:
        format = Path(fname).suffix.lstrip(".") if isinstance(fname, (str, Path)) else "png"
    data = PLACEHOLDERS.get(str(format).lower(), PLACEHOLDERS["png"])
    if isinstance(fname, (str, Path)):
        Path(fname).write_bytes(data)
    else:
        fname.write(data)


@contextlib.contextmanager
def no_drawing() -> Iterator[None]:
    """Within the block (and in processes forked from it), ``savefig`` writes placeholders."""
    from matplotlib.figure import Figure

    with pytest.MonkeyPatch.context() as m:
        m.setattr(Figure, "savefig", _placeholder_savefig)
        yield


def placeholders_for_good() -> None:
    """``savefig`` writes placeholders for the rest of this process (a test's child process)."""
    from matplotlib.figure import Figure

    Figure.savefig = _placeholder_savefig  # type: ignore[method-assign]


@contextlib.contextmanager
def no_drawing_in_fast_tier(config: pytest.Config) -> Iterator[None]:
    """:func:`no_drawing` in the fast tier, nothing in the full suite (for module-scoped fixtures)."""
    from tests.support.tier import is_fast_tier

    if not is_fast_tier(config):
        yield
        return
    with no_drawing():
        yield


#: The environment variable a child process of a test reads: set, the child's figures are placeholders.
CHILD_ENV = "DETEVAL_TEST_NO_DRAWING"

#: ``python -c`` code of a test's child ``deteval`` run: the CLI's main, with placeholder figures
#: when the parent set :data:`CHILD_ENV` (the fast tier; tests/unit/test_report_progress.py).
CHILD_MAIN = (
    "import os, sys\n"
    f"if os.environ.get({CHILD_ENV!r}):\n"
    "    from tests.support.figures import placeholders_for_good\n"
    "    placeholders_for_good()\n"
    "from deteval.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
