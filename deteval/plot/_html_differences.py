"""The report's per-class paired differences (``#differences``): each detector against the first.

From the ``class_comparisons`` of a :class:`~deteval.stats.ComparisonResult` document
(:func:`deteval.stats.per_class_differences`): per class, ``B - A`` on AP with its paired
bootstrap interval (the same resamples of the images for both detectors) and p-value, the row
marked when the interval excludes 0; the headline comparison (AP or mAP over classes) on top,
in a table of its own (sorting the classes' table never moves it).
Every number is the document's; nothing is computed here.
"""

from __future__ import annotations

from typing import Any

from deteval.plot._html_format import _num, _num_cell, _table, _text_cell, escape

__all__ = ["differences_section", "DIFFERENCES_CSS"]

DIFFERENCES_CSS = (
    "tr.excludes-zero td{background:var(--hl)}"
    "td.mark{white-space:nowrap;font-weight:600}"
    "td.ci{white-space:nowrap;font-variant-numeric:tabular-nums;text-align:right}"
)


def _ci_cell(ci: Any) -> str:
    """``[lo, hi]`` with both ends as ``data-lo`` / ``data-hi`` (the document's floats)."""
    if not ci:
        return '<td class="ci na">n/a</td>'
    lo, hi = ci
    return (
        f'<td class="ci" data-lo="{float(lo)!r}" data-hi="{float(hi)!r}">'
        f"[{_num(lo, 3, sign=True)}, {_num(hi, 3, sign=True)}]</td>"
    )


def _excludes_zero(ci: Any) -> bool:
    return bool(ci) and ci[0] is not None and (ci[0] > 0 or ci[1] < 0)


def _row(label: str, c: dict, ap_a: Any, ap_b: Any, *, total: bool = False) -> str:
    marked = _excludes_zero(c.get("ci"))
    classes = " ".join(filter(None, ["total" if total else "", "excludes-zero" if marked else ""]))
    mark = ("▲ B better" if c["difference"] > 0 else "▼ A better") if marked else ""
    return (
        f'<tr{f" class={chr(34)}{classes}{chr(34)}" if classes else ""} data-class="{escape(label)}">'
        f"{_text_cell(label)}{_num_cell(ap_a)}{_num_cell(ap_b)}{_num_cell(c.get('difference'), 3, sign=True)}"
        f"{_ci_cell(c.get('ci'))}{_num_cell(c.get('p_value'), 3)}"
        f'<td class="mark">{escape(mark)}</td></tr>'
    )


def differences_section(doc: dict) -> str:
    """The ``#differences`` section of a bootstrap document, or "" without class comparisons."""
    class_comparisons = doc.get("class_comparisons") or []
    if not class_comparisons:
        return ""
    settings = doc.get("bootstrap", {})
    level = settings.get("ci", 0.95)
    entries = {r.get("detector"): r for r in doc.get("results", [])}
    pairs = list(dict.fromkeys((c["a"], c["b"]) for c in class_comparisons))
    parts = [
        '<section id="differences"><h2>Paired differences per class</h2>',
        f'<p class="hint">Each detector minus the first ({escape(pairs[0][0])}), per class on AP, '
        f"protocol {escape(class_comparisons[0].get('protocol'))}: the same "
        f"{escape(settings.get('n', '?'))} resamples of the images for both detectors (seed "
        f"{escape(settings.get('seed', '?'))}), {_num(level * 100, 0)}% "
        f"{escape(settings.get('method', 'basic'))} intervals of the difference. A row is marked "
        "(▲ / ▼) when its interval excludes 0. The p-value is the paired bootstrap's two-sided "
        "test (docs/statistics.md); on few images it can disagree with the interval.</p>",
    ]
    for i, (a, b) in enumerate(pairs):
        per_a = (entries.get(a) or {}).get("per_class", [])
        per_b = (entries.get(b) or {}).get("per_class", [])
        headline = []  # its own table: sorting the classes never moves it
        for c in doc.get("comparisons", []):
            if (c["a"], c["b"]) == (a, b):
                metric = c["metric"]
                ap_a = (entries.get(a) or {}).get("metrics", {}).get(metric)
                ap_b = (entries.get(b) or {}).get("metrics", {}).get(metric)
                headline.append(_row(f"all classes ({metric})", c, ap_a, ap_b, total=True))
        rows = []
        mine = [c for c in class_comparisons if (c["a"], c["b"]) == (a, b)]
        for k, c in enumerate(mine):
            ap_a = per_a[k].get("AP") if k < len(per_a) else None
            ap_b = per_b[k].get("AP") if k < len(per_b) else None
            rows.append(_row(c["class"], c, ap_a, ap_b))
        n_marked = sum(_excludes_zero(c.get("ci")) for c in mine)
        header = [
            ("class", "text"),
            (f"AP · {escape(a)}", "num"),
            (f"AP · {escape(b)}", "num"),
            (f"{escape(b)} − {escape(a)}", "num"),
            ("interval", "text"),
            ("p", "num"),
            ("", "text"),
        ]
        parts.append(
            f"<h3>{escape(b)} − {escape(a)}"
            f'<span class="count">{n_marked} of {len(mine)} classes differ (interval excludes 0)</span></h3>'
        )
        if headline:
            parts.append(_table(header, headline, sortable=False))
        parts.append(_table(header, rows, table_id=f"differences-{i + 1}"))
    parts.append("</section>")
    return "".join(parts)
