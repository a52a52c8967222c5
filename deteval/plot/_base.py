"""Shared pieces of the figures: the style, safe labels, deterministic bytes, atomic files.

This module imports matplotlib only inside functions, so :class:`PlotDependencyError` and
:func:`atomic_write` are usable (and the clear error is raised) when matplotlib is missing.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deteval.errors import ConfigError, DetevalError
from deteval.io.output import write_output

if TYPE_CHECKING:  # matplotlib is optional at run time (the 'plot' extra)
    from matplotlib.typing import RcKeyType

__all__ = [
    "PlotDependencyError",
    "require_matplotlib",
    "style",
    "new_figure",
    "safe_label",
    "figure_bytes",
    "atomic_write",
    "fmt",
    "is_undefined",
    "as_document",
    "FORMATS",
]

#: Output formats :func:`figure_bytes` writes.
FORMATS = ("png", "svg")

#: Every figure is built and saved under these settings (no global state is changed):
#: DejaVu Sans (shipped with matplotlib, so no system font decides the output), no mathtext
#: (a class named ``$x$`` stays ``$x$``), and a fixed SVG hash salt so SVG bytes repeat.
RC: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "legend.fontsize": 8.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "text.parse_math": False,
    "svg.hashsalt": "deteval",
    "svg.fonttype": "path",
    "figure.dpi": 100.0,
    "savefig.dpi": 100.0,
    "path.simplify": True,
}

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_MAX_LABEL = 40


class PlotDependencyError(DetevalError, ImportError):
    """matplotlib (the ``plot`` extra) is not installed."""


def require_matplotlib() -> None:
    """Import matplotlib or raise :class:`PlotDependencyError` saying how to install it.

    Raises
    ------
    PlotDependencyError
        matplotlib cannot be imported.
    """
    try:
        import matplotlib  # noqa: F401 - imported only to learn whether it is installed
    except ImportError as exc:
        raise PlotDependencyError(
            "deteval.plot: the figures and the HTML report need matplotlib (the 'plot' extra); "
            f'expected it importable, found: {exc}. Install it with: pip install "deteval[plot]"'
        ) from exc


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Build or save figures under :data:`RC` (a context; matplotlib's global state is restored).

    Missing-glyph warnings (a class name in a script DejaVu Sans lacks) are silenced: the label
    is drawn with a placeholder box, the numbers are unaffected.
    """
    import matplotlib

    with matplotlib.rc_context(RC), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from (current )?font")
        yield


def new_figure(width: float, height: float) -> Any:
    """A :class:`matplotlib.figure.Figure` with constrained layout, not registered with pyplot."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def safe_label(text: Any, *, limit: int = _MAX_LABEL) -> str:
    r"""A user string made safe for a figure: control characters shown as ``\xNN``, long names cut.

    Examples
    --------
    >>> safe_label("a\x07b")
    'a\\x07b'
    >>> safe_label("x" * 50, limit=10)
    'xxxxxxxxx…'
    """
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_undefined(value: Any) -> bool:
    """None or NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt(value: Any, digits: int = 3, *, sign: bool = False) -> str:
    """A number for a label: ``n/a`` when undefined."""
    if is_undefined(value):
        return "n/a"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def as_document(value: Any, *, what: str, key: str | None = None) -> dict:
    """The JSON document of a result value (its ``to_dict()``), or the document itself.

    ``key`` picks a part of a larger document (``"errors"`` of an analysis document).

    Raises
    ------
    ConfigError
        Neither a value with ``to_dict()`` nor a dict.
    """
    doc = value.to_dict() if hasattr(value, "to_dict") else value
    if not isinstance(doc, dict):
        raise ConfigError(
            f"deteval.plot: {what}: expected the value or its to_dict() document, "
            f"found {type(value).__name__}"
        )
    if key is not None and key in doc and isinstance(doc[key], dict):
        doc = doc[key]
    return doc


def figure_bytes(figure: Any, fmt_name: str) -> bytes:
    """The figure as PNG or SVG bytes; the same figure gives the same bytes on every run.

    Notes
    -----
    SVG ids come from ``svg.hashsalt`` and the date is left out (``metadata={"Date": None}``);
    PNG carries no date either. Glyphs are paths (``svg.fonttype: path``), so no font is needed
    to view the file.
    """
    if fmt_name not in FORMATS:
        raise ConfigError(f"deteval.plot: format: expected one of {list(FORMATS)}, found {fmt_name!r}")
    metadata = {"Date": None} if fmt_name == "svg" else {"Software": None}
    buffer = io.BytesIO()
    with style():
        figure.savefig(buffer, format=fmt_name, metadata=metadata)
    return buffer.getvalue()


def atomic_write(path: os.PathLike | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` with deteval's one writer (:func:`deteval.io.output.write_output`).

    A regular file or a new path (symbolic links followed) is written through a temporary file
    in the target's folder, fsynced, then renamed over it, so it holds either its old content or
    all of ``data``, never a part; a device or FIFO is written directly. Errors (a full disk)
    are a ConfigError naming ``path``.
    """
    write_output(path, data, option="deteval.plot:")
    return Path(path)
