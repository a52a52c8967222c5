"""Renderers of ``deteval compare``: protocols side by side and the explanations of their gap.

:func:`compare_table` (classes x protocols, as data), its text, Markdown, CSV and JSON forms, and
the walk from one protocol to another (:func:`format_explanation`, ``--explain``).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import Any

from deteval.errors import printable
from deteval.evaluate import EvalResult
from deteval.report._format import _cells, _csv_number, _fmt, _md_escape, csv_safe
from deteval.report.explanation import Explanation
from deteval.report.results import to_json
from deteval.summary import class_ap

__all__ = [
    "compare_table",
    "format_compare_table",
    "format_compare_markdown",
    "format_compare_csv",
    "compare_json",
    "format_explanation",
    "format_explanation_markdown",
]


# --------------------------------------------------------------------------------------------
# Side by side: rows = classes plus the mean, columns = protocols (deteval compare)
# --------------------------------------------------------------------------------------------


def _unique_labels(results: Sequence[EvalResult]) -> list[str]:
    labels: list[str] = []
    for r in results:
        label, n = r.protocol.name, 2
        while label in labels:
            label, n = f"{r.protocol.name}#{n}", n + 1
        labels.append(label)
    return labels


def _class_ap_at(result: EvalResult, t: int, k: int) -> float:
    """Class ``k``'s AP at threshold index ``t`` (area "all", largest max_dets), as ``per_class``."""
    return class_ap(result.precision, result.ap, result.protocol, k, [t])


def compare_table(results: Sequence[EvalResult], *, per_class: bool = True) -> dict:
    """The side-by-side table as data: one column per protocol (AP, AP50, AP75 for COCO-style).

    Rows are the classes (each protocol's per-class AP; AP50/AP75 at that threshold, area "all",
    largest max_dets) and a last row ``mean``: each protocol's own headline (``mAP``, or ``AP``,
    ``AP50``, ``AP75`` exactly as its summary reports them). ``per_class=False``: the ``mean``
    row only (``--no-per-class``).

    Returns
    -------
    dict
        ``{"columns": [{"label", "protocol", "protocol_hash", "metric"}], "rows": [{"category_id",
        "name", "values"}]}``; values are floats, NaN where undefined.
    """
    columns: list[dict] = []
    getters: list[tuple[EvalResult, int | None, str]] = []  # (result, threshold index or None: all, metric)
    for r, label in zip(results, _unique_labels(results), strict=False):
        base = {"protocol": r.protocol.name, "protocol_hash": r.protocol.fingerprint()}
        if "mAP" in r.metrics:
            columns.append({"label": label, **base, "metric": "mAP"})
            getters.append((r, None, "mAP"))
            continue
        columns.append({"label": f"{label} AP", **base, "metric": "AP"})
        getters.append((r, None, "AP"))
        thresholds = list(r.protocol.iou_thresholds)
        for t, key in ((0.5, "AP50"), (0.75, "AP75")):
            if t in thresholds and key in r.metrics:
                columns.append({"label": f"{label} {key}", **base, "metric": key})
                getters.append((r, thresholds.index(t), key))
    rows = []
    names = results[0].per_class if results and per_class else []
    for k, c in enumerate(names):
        values = [float(r.per_class[k]["AP"]) if t is None else _class_ap_at(r, t, k) for r, t, _ in getters]
        rows.append({"category_id": c["category_id"], "name": c["name"], "values": values})
    rows.append(
        {
            "category_id": None,
            "name": "mean",
            "values": [float(r.metrics.get(key, float("nan"))) for r, _, key in getters],
        }
    )
    return {"columns": columns, "rows": rows}


def _sharing_line(results: Sequence[EvalResult], matching_groups: Sequence[Sequence[int]] | None) -> str:
    if matching_groups is None:
        return ""
    labels = _unique_labels(results)
    shared = [" + ".join(labels[i] for i in g) for g in matching_groups if len(g) > 1]
    text = (
        f"{len(results)} protocols, {len(matching_groups)} matching{'s' if len(matching_groups) != 1 else ''}"
    )
    return text + (f" ({'; '.join(shared)} shared one)" if shared else "")


def format_compare_table(
    results: Sequence[EvalResult],
    *,
    matching_groups: Sequence[Sequence[int]] | None = None,
    per_class: bool = True,
) -> str:
    """Terminal table: the protocols (name, hash, source), then classes x protocols."""
    table = compare_table(results, per_class=per_class)
    labels = [printable(x) for x in _unique_labels(results)]
    width = max(len(x) for x in labels)
    lines = [
        f"  {label:<{width}}  [{r.protocol.fingerprint()}]  {printable(r.protocol.source)}"
        for label, r in zip(labels, results, strict=False)
    ]
    sharing = _sharing_line(results, matching_groups)
    head = [f"{sharing or 'protocols'}:"] + lines + [""]
    header = _cells(["class"] + [c["label"] for c in table["columns"]])
    body = [_cells([row["name"]] + [_fmt(v, 4) for v in row["values"]]) for row in table["rows"]]
    widths = [max(len(header[i]), *(len(b[i]) for b in body)) for i in range(len(header))]
    out = [
        "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=False))
        ),
        "  ".join("-" * w for w in widths),
    ]
    for b in body:
        out.append(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(b, widths, strict=False))
            )
        )
    return "\n".join(head + out) + "\n"


def format_compare_markdown(
    results: Sequence[EvalResult],
    *,
    matching_groups: Sequence[Sequence[int]] | None = None,
    per_class: bool = True,
) -> str:
    """Markdown: the protocols as a list, then the classes x protocols table."""
    table = compare_table(results, per_class=per_class)
    sharing = _sharing_line(results, matching_groups)
    out = [f"{sharing or 'protocols'}:".capitalize(), ""]
    out += [
        f"- **{_md_escape(label)}** `{r.protocol.fingerprint()}`: {_md_escape(r.protocol.source)}"
        for label, r in zip(_unique_labels(results), results, strict=False)
    ]
    out += [
        "",
        "| class | " + " | ".join(_md_escape(c["label"]) for c in table["columns"]) + " |",
        "|---|" + "---:|" * len(table["columns"]),
    ]
    for row in table["rows"]:
        name = "**mean**" if row["category_id"] is None else _md_escape(row["name"])
        out.append(f"| {name} | " + " | ".join(_fmt(v, 4) for v in row["values"]) + " |")
    return "\n".join(out) + "\n"


def format_compare_csv(results: Sequence[EvalResult], *, per_class: bool = True) -> str:
    """Wide CSV: ``class, category_id`` then one column per protocol metric; last row ``mean``."""
    table = compare_table(results, per_class=per_class)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["class", "category_id"] + [csv_safe(c["label"]) for c in table["columns"]])
    for row in table["rows"]:
        cid = "" if row["category_id"] is None else row["category_id"]
        writer.writerow([csv_safe(row["name"]), cid] + [_csv_number(v) for v in row["values"]])
    return buf.getvalue()


def compare_json(
    results: Sequence[EvalResult],
    *,
    inputs: dict | None = None,
    warnings: Sequence[str] = (),
    matching_groups: Sequence[Sequence[int]] | None = None,
    explanations: Sequence[Any] = (),
) -> dict:
    """The JSON contract (one ``results`` entry per protocol) plus the side-by-side table.

    Extra keys: ``comparison`` (:func:`compare_table`, NaN -> null), ``matchings`` (the protocol
    labels that shared each matching) and, when given, ``explanations`` (their ``to_dict()``).
    """
    doc = to_json(results, inputs=inputs, warnings=warnings)
    table = compare_table(results)
    for row in table["rows"]:
        row["values"] = [None if v != v else v for v in row["values"]]
    doc["comparison"] = table
    if matching_groups is not None:
        labels = _unique_labels(results)
        doc["matchings"] = [[labels[i] for i in g] for g in matching_groups]
    if explanations:
        doc["explanations"] = [e.to_dict() for e in explanations]
    return doc


# --------------------------------------------------------------------------------------------
# Explanations (deteval compare --explain)
# --------------------------------------------------------------------------------------------


def _fmt_change(value: float, digits: int = 4, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _show_field(field: str, value: Any) -> str:
    """A protocol field's value, short (the "fields changed" column)."""
    if field == "iou_thresholds":
        if len(value) > 3:
            return f"{value[0]:.2f}:{value[-1]:.2f} ({len(value)})"
        return "[" + ", ".join(f"{t:g}" for t in value) + "]"
    if field == "area_ranges":
        return (
            "{" + ", ".join(n for n, _, _ in value) + "}"
            if len(value) > 1
            else "{" + ", ".join(f"{n}: [{lo:g}, {hi:g}]" for n, lo, hi in value) + "}"
        )
    if field == "max_dets":
        return "null" if value is None else "[" + ", ".join(str(m) for m in value) + "]"
    return str(value)


def _explanation_rows(e: Explanation) -> list[list[str]]:
    rows = [[f"({e.a.name})", "", _fmt_change(e.start), "", ""]]
    for s in e.steps:
        fields = "; ".join(f"{f}: {_show_field(f, a)} -> {_show_field(f, b)}" for f, a, b in s.changes)
        classes = ", ".join(f"{n} {_fmt_change(d, 4, sign=True)}" for n, d in s.class_changes[:6])
        if len(s.class_changes) > 6:
            classes += f", ... ({len(s.class_changes)} classes)"
        name = s.name if s.affects_measure else s.name + " *"
        rows.append([name, _fmt_change(s.change, 4, sign=True), _fmt_change(s.value), fields, classes])
    rows.append(["total", _fmt_change(e.total, 4, sign=True), _fmt_change(e.end), "", ""])
    return rows


def format_explanation(e: Explanation) -> str:
    """A plain-text table of the walk from A to B (terminal output)."""
    (na, va), (nb, vb) = e.headline_a, e.headline_b
    a, b = printable(e.a.name), printable(e.b.name)
    head = [
        f"{a} -> {b}: {e.measure} {_fmt_change(e.start)} -> {_fmt_change(e.end)} "
        f"({a} {na} {_fmt_change(va)}, {b} {nb} {_fmt_change(vb)})",
        f"compared: {printable(e.definition)}",
    ] + [f"note: {printable(n)}" for n in e.notes]
    header = [
        "step",
        "change",
        e.measure if len(e.measure) < 8 else "value",
        "fields changed",
        "classes moved",
    ]
    rows = [_cells(r) for r in _explanation_rows(e)]
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]
    lines = head + [""]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        cells = [
            r[0].ljust(widths[0]),
            r[1].rjust(widths[1]),
            r[2].rjust(widths[2]),
            r[3].ljust(widths[3]),
            r[4],
        ]
        lines.append("  ".join(cells).rstrip())
    lines.append("")
    lines.append(printable(e.summary_line()))
    return "\n".join(lines) + "\n"


def format_explanation_markdown(e: Explanation) -> str:
    """A Markdown table of the walk from A to B."""
    lines = [
        f"**{e.a.name} → {e.b.name}**: {e.measure} {_fmt_change(e.start)} → {_fmt_change(e.end)}",
        "",
        f"Compared: {e.definition}",
        "",
    ]
    lines += [f"Note: {n}\n" for n in e.notes]
    lines += ["| step | change | value | fields changed | classes moved |", "|---|---:|---:|---|---|"]
    for r in _explanation_rows(e):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    lines += ["", e.summary_line(), ""]
    return "\n".join(lines)
