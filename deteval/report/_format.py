"""Cells every renderer shares: numbers as text, Markdown escaping, CSV-safe cells.

Private to :mod:`deteval.report`; :func:`csv_safe` is public there.
"""

from __future__ import annotations

import math
from typing import Any

from deteval.errors import printable

__all__ = [
    "csv_safe",
]


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _cells(row: Any) -> list[str]:
    """A text table's row, each cell on one line and terminal-safe.

    A class, detector or file name may hold a newline, a carriage return, U+2028, an escape
    sequence: each is shown escaped (:func:`deteval.errors.printable`), before the widths are
    measured, so a name is never a fake row nor a shifted column.
    """
    return [printable(str(value)) for value in row]


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def csv_safe(value: Any) -> Any:
    """Escape text that a spreadsheet would run as a formula (``= + - @``, tab, CR).

    >>> csv_safe("=HYPERLINK(1)"), csv_safe("person"), csv_safe(-0.5)
    ("'=HYPERLINK(1)", 'person', -0.5)
    """
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _csv_number(value: float) -> str:
    return "" if value is None or value != value else repr(float(value))
