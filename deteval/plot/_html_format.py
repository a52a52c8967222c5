"""The cells and tables of the HTML report (:mod:`deteval.plot.html`): escaping and number formatting.

Every user string goes through :func:`escape`; numbers are shown by ``_num`` (``n/a`` when
undefined) and sit in cells whose ``data-v`` attribute is the sort key of the report's tables.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def escape(value: Any) -> str:
    r"""Text safe inside HTML elements and quoted attributes.

    Control characters (which HTML forbids) are shown as ``\xNN``.

    Examples
    --------
    >>> escape('<script>alert("1")</script> & \x07')
    '&lt;script&gt;alert(&quot;1&quot;)&lt;/script&gt; &amp; \\x07'
    """
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))
    return html.escape(text, quote=True)


def _undefined(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _num(value: Any, digits: int = 3, *, sign: bool = False) -> str:
    if _undefined(value):
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return escape(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _num_cell(value: Any, digits: int = 3, *, sign: bool = False) -> str:
    """A numeric table cell; ``data-v`` is the sort key (absent for n/a, which sorts last)."""
    if _undefined(value):
        return '<td class="num na">n/a</td>'
    return f'<td class="num" data-v="{float(value)!r}">{_num(value, digits, sign=sign)}</td>'


def _text_cell(value: Any) -> str:
    return f'<td data-v="{escape(value)}">{escape(value)}</td>'


def _table(
    header: Sequence[tuple[str, str]],
    rows: Sequence[str],
    *,
    table_id: str | None = None,
    sortable: bool = True,
    caption: str | None = None,
) -> str:
    """``header``: (escaped label, "num" | "text"); ``rows``: ready ``<tr>`` markup."""
    attrs = f' id="{table_id}"' if table_id else ""
    cls = "data sortable" if sortable else "data"
    head = "".join(
        f'<th data-type="{kind}" scope="col"' + (' tabindex="0"' if sortable else "") + f">{label}</th>"
        for label, kind in header
    )
    cap = f"<caption>{caption}</caption>" if caption else ""
    return (
        f'<div class="scroll"><table class="{cls}"{attrs}>{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
