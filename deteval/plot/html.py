r"""One self-contained HTML report of a run: what ``deteval report ... --out report.html`` writes.

The file needs nothing but a browser: figures are inline base64 PNG, the style sheet and a small
script (table sorting, an image check, a self-test) are inline, no font or script is fetched.
Every number comes from the values' ``to_dict()`` documents (the JSON the CLI writes) and every
figure from :mod:`deteval.plot`, so the report never computes a number another way. Every user
string (class names, paths, protocol names) is escaped, control characters shown as ``\xNN``.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import re
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deteval._version import __version__
from deteval.plot._base import as_document, atomic_write, figure_bytes
from deteval.plot._select import named_results
from deteval.plot.files import FigureSpec, figure_specs
from deteval.stats import Comparison, Interval, verdict

__all__ = ["render_report", "write_report", "escape"]

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


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _figure(spec: FigureSpec) -> str:
    data = figure_bytes(spec.build(), "png")
    width, height = _png_size(data)
    encoded = base64.b64encode(data).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{encoded}" width="{width}" height="{height}" '
        f'alt="{escape(spec.caption)}" loading="eager"><figcaption>{escape(spec.caption)}</figcaption></figure>'
    )


def _field_text(key: str, value: Any) -> str:
    if key == "area_ranges" and isinstance(value, dict):
        return ", ".join(f"{n} [{lo:g}, {hi:g}]" for n, (lo, hi) in value.items())
    if key == "iou_thresholds" and isinstance(value, list):
        if len(value) > 3:
            return f"{value[0]:.2f}:{value[-1]:.2f} ({len(value)} thresholds)"
        return ", ".join(f"{t:g}" for t in value)
    if value is None:
        return "null"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


# ------------------------------------------------------------------------------------------
# Sections
# ------------------------------------------------------------------------------------------


def _inputs_section(named: list, docs: list) -> tuple[str, str]:
    """(inputs section, protocol fields section)."""
    rows = []
    for (label, result), doc in zip(named, docs):
        inputs = result.inputs
        rows.append(
            "<tr>"
            + _text_cell(label)
            + _text_cell(inputs.get("gt", ""))
            + _text_cell(inputs.get("dt", ""))
            + "".join(_num_cell(inputs.get(k)) for k in ("images", "gt_objects", "detections"))
            + _text_cell(doc["protocol"])
            + "</tr>"
        )
    header = [
        ("result", "text"),
        ("ground truth", "text"),
        ("detections", "text"),
        ("images", "num"),
        ("GT objects", "num"),
        ("detections", "num"),
        ("protocol", "text"),
    ]
    body = _table(header, rows, sortable=False)

    protocols: dict = {}
    for (_, result), doc in zip(named, docs):
        protocols.setdefault((doc["protocol"], doc["protocol_hash"]), (result.protocol, doc))
    columns = list(protocols.values())
    head = [("field", "text")] + [(f"{escape(doc['protocol'])}", "text") for _, doc in columns]
    field_rows = []
    fingerprints = [doc["protocol_hash"] for _, doc in columns]
    field_rows.append(
        '<tr class="fingerprint"><th scope="row">fingerprint</th>'
        + "".join(f"<td><code>{escape(h)}</code></td>" for h in fingerprints)
        + "</tr>"
    )
    keys = list(columns[0][1]["config"])
    for key in keys:
        values = [_field_text(key, doc["config"].get(key)) for _, doc in columns]
        differs = len(set(values)) > 1
        field_rows.append(
            f'<tr{" class=differs" if differs else ""}><th scope="row">{escape(key)}</th>'
            + "".join(f"<td>{escape(v)}</td>" for v in values)
            + "</tr>"
        )
    note = (
        '<p class="hint">Highlighted rows differ between protocols. The fingerprint hashes the fields '
        "that change numbers.</p>"
        if len(columns) > 1
        else ""
    )
    protocol_table = _table(head, field_rows, sortable=False)
    return (
        f'<section id="inputs"><h2>Inputs</h2>{body}</section>',
        f'<section id="protocols"><h2>Protocols: resolved fields</h2>{protocol_table}{note}</section>',
    )


def _metrics_section(named: list, docs: list) -> str:
    names: list = []
    for doc in docs:
        for m in doc["metrics"]:
            if m not in names:
                names.append(m)
    rows = []
    for m in names:
        rows.append(
            f'<tr><th scope="row">{escape(m)}</th>'
            + "".join(
                _num_cell(doc["metrics"].get(m)) if m in doc["metrics"] else '<td class="na">–</td>'
                for doc in docs
            )
            + "</tr>"
        )
    header = [("metric", "text")] + [(escape(label), "num") for label, _ in named]
    return (
        f'<section id="metrics"><h2>Headline metrics</h2>{_table(header, rows, sortable=False)}'
        '<p class="hint">n/a: undefined (no ground truth counted); – : not reported by that '
        "protocol.</p></section>"
    )


def _class_section(named: list, docs: list) -> str:
    classes: dict = {}
    for doc in docs:
        for c in doc["per_class"]:
            classes.setdefault(c["category_id"], c["name"])
    by_result = [{c["category_id"]: c for c in doc["per_class"]} for doc in docs]
    ids = list(classes)
    columns: list = []  # (header, kind, values)
    for kind, key in (("GT", "num_gt"), ("detections", "num_det")):
        lists = [[rows.get(i, {}).get(key) for i in ids] for rows in by_result]
        distinct = []
        for values in lists:
            if values not in distinct:
                distinct.append(values)
        if len(distinct) == 1:
            columns.append((kind, distinct[0]))
        else:
            columns += [(f"{kind} · {label}", values) for (label, _), values in zip(named, lists)]
    for (label, _), rows in zip(named, by_result):
        columns.append(
            ("AP" if len(named) == 1 else f"AP · {label}", [rows.get(i, {}).get("AP") for i in ids])
        )
    header = [("id", "num"), ("class", "text")] + [(escape(h), "num") for h, _ in columns]
    body = []
    for j, cid in enumerate(ids):
        body.append(
            "<tr>"
            + _num_cell(cid)
            + _text_cell(classes[cid])
            + "".join(_num_cell(values[j]) for _, values in columns)
            + "</tr>"
        )
    return (
        f'<section id="classes"><h2>Per-class results <span class="count">{len(ids)} classes</span></h2>'
        '<p class="hint">Click a column header to sort (numbers numerically, n/a always last; '
        "click again to reverse).</p>"
        f"{_table(header, body, table_id='class-table')}</section>"
    )


def _explain_section(explanations: list, specs: list) -> str:
    parts = ['<section id="explain"><h2>Why the protocols differ</h2>']
    figures = [s for s in specs if s.section == "explain"]
    for i, doc in enumerate(explanations):
        parts.append(f"<h3>{escape(doc.get('from'))} → {escape(doc.get('to'))}</h3>")
        parts.append(f'<p class="summary"><code>{escape(doc.get("summary", ""))}</code></p>')
        parts.append(f'<p class="hint">Compared: {escape(doc.get("definition", ""))}</p>')
        rows = [
            f'<tr><td>({escape(doc.get("from"))})</td><td class="num"></td>{_num_cell(doc.get("start"), 4)}'
            "<td></td><td></td></tr>"
        ]
        for s in doc.get("steps", []):
            fields = "; ".join(
                f"{f['field']}: {json.dumps(f['from'])} → {json.dumps(f['to'])}" for f in s["fields"]
            )
            moved = ", ".join(f"{c['name']} {_num(c['change'], 4, sign=True)}" for c in s["classes"][:8])
            if len(s["classes"]) > 8:
                moved += f", … ({len(s['classes'])} classes)"
            name = s["step"] + ("" if s.get("affects_measure", True) else " *")
            rows.append(
                f"<tr>{_text_cell(name)}{_num_cell(s.get('change'), 4, sign=True)}"
                f"{_num_cell(s.get('value'), 4)}<td>{escape(fields)}</td><td>{escape(moved)}</td></tr>"
            )
        rows.append(
            f'<tr class="total"><td>total</td>{_num_cell(doc.get("total"), 4, sign=True)}'
            f"{_num_cell(doc.get('end'), 4)}<td></td><td></td></tr>"
        )
        header = [
            ("step", "text"),
            ("change", "num"),
            (escape(doc.get("measure", "value")), "num"),
            ("fields changed", "text"),
            ("classes moved", "text"),
        ]
        parts.append(_table(header, rows, sortable=False))
        for note in doc.get("notes", []):
            parts.append(f'<p class="hint">{escape(note)}</p>')
        if i < len(figures):
            parts.append(_figure(figures[i]))
    parts.append("</section>")
    return "".join(parts)


def _errors_section(doc: dict, specs: list) -> str:
    figures = {s.name: s for s in specs if s.section == "errors"}
    parts = ['<section id="errors"><h2>Errors and their cost</h2>']
    if "errors" in doc:
        e = doc["errors"]
        main, special = list(e["main"]), list(e["special"])
        parts.append(f"<h3>TIDE error types (mode {escape(e.get('mode'))}): AP {_num(e.get('ap'))}</h3>")
        header = [("", "text")] + [(escape(k), "num") for k in main + special]
        rows = [
            '<tr><th scope="row">dAP</th>'
            + "".join(_num_cell(e["main"][k]) for k in main)
            + "".join(_num_cell(e["special"][k]) for k in special)
            + "</tr>",
            '<tr><th scope="row">count</th>'
            + "".join(_num_cell(e["counts"].get(k)) for k in main)
            + "<td></td>" * len(special)
            + "</tr>",
        ]
        parts.append(_table(header, rows, sortable=False))
        if "errors" in figures:
            parts.append(_figure(figures["errors"]))
        per_class = e.get("per_class", [])
        if per_class:
            header = [("class", "text"), ("AP", "num")] + [(escape(k), "num") for k in main + special]
            rows = [
                "<tr>"
                + _text_cell(c["name"])
                + _num_cell(c.get("ap"))
                + "".join(_num_cell((c.get("main") or {}).get(k)) for k in main)
                + "".join(_num_cell((c.get("special") or {}).get(k)) for k in special)
                + "</tr>"
                for c in per_class
            ]
            parts.append(
                f"<details><summary>dAP per class ({len(per_class)} classes)</summary>"
                f"{_table(header, rows, table_id='tide-table')}</details>"
            )
    if "confusion" in doc:
        c = doc["confusion"]
        parts.append(
            f"<h3>Confusion matrix ({len(c['labels']) - 1} classes + background, IoU "
            f"{_num(c.get('iou_threshold'), 2)}, confidence {_num(c.get('confidence'), 2)})</h3>"
        )
        if "confusion" in figures:
            parts.append(_figure(figures["confusion"]))
    if "decomposition" in doc:
        d = doc["decomposition"]
        mean = d.get("mean", {})
        parts.append(
            f"<h3>AP decomposition at IoU {_num(d.get('iou_threshold'), 2)}: mean AP_D "
            f"{_num(mean.get('AP_D'))}, AP_L {_num(mean.get('AP_L'))}, AP_C|L {_num(mean.get('AP_CgL'))}</h3>"
        )
        if "decomposition" in figures:
            parts.append(_figure(figures["decomposition"]))
        header = [("class", "text"), ("AP_D", "num"), ("AP_L", "num"), ("AP_C|L", "num")]
        rows = [
            "<tr>"
            + _text_cell(c["name"])
            + _num_cell(c.get("AP_D"))
            + _num_cell(c.get("AP_L"))
            + _num_cell(c.get("AP_CgL"))
            + "</tr>"
            for c in d.get("per_class", [])
        ]
        parts.append(
            f"<details><summary>Decomposition per class ({len(rows)} classes)</summary>"
            f"{_table(header, rows, table_id='decomposition-table')}</details>"
        )
    parts.append("</section>")
    return "".join(parts)


def _intervals_section(doc: dict, specs: list) -> str:
    settings = doc.get("bootstrap", {})
    results = doc.get("results", [])
    metrics: list = []
    for r in results:
        for m in r.get("metrics", {}):
            if m not in metrics:
                metrics.append(m)
    rows = []
    for r in results:
        cells = []
        for m in metrics:
            point = r.get("metrics", {}).get(m)
            ci = (r.get("metrics_ci") or {}).get(m)
            text = _num(point) + ("" if ci is None else f" [{_num(ci[0])}, {_num(ci[1])}]")
            cells.append(f"<td class=num>{text}</td>")
        rows.append(
            "<tr>"
            + _text_cell(r.get("detector", ""))
            + _text_cell(r.get("protocol", ""))
            + "".join(cells)
            + "</tr>"
        )
    header = [("detector", "text"), ("protocol", "text")] + [(escape(m), "text") for m in metrics]
    level = settings.get("ci")
    parts = [
        f'<section id="intervals"><h2>Uncertainty: bootstrap over images</h2>'
        f'<p class="hint">{_num(level * 100 if level is not None else None, 0)}% percentile intervals, '
        f"{escape(settings.get('n', '?'))} resamples, seed {escape(settings.get('seed', '?'))}.</p>",
        _table(header, rows, sortable=False),
    ]
    comparisons = doc.get("comparisons", [])
    if comparisons:
        items = []
        for c in comparisons:
            ci = c.get("ci")
            comparison = Comparison(
                a=c["a"],
                b=c["b"],
                protocol=c["protocol"],
                metric=c["metric"],
                difference=c.get("difference"),
                ci=Interval(None, None) if ci is None else Interval(ci[0], ci[1]),
                p_value=c.get("p_value"),
                level=level if level is not None else 0.95,
            )
            items.append(f"<li><code>{escape(verdict(comparison))}</code></li>")
        parts.append(f"<h3>Paired comparisons</h3><ul class=verdicts>{''.join(items)}</ul>")
    for spec in specs:
        if spec.section == "intervals":
            parts.append(_figure(spec))
    parts.append("</section>")
    return "".join(parts)


def _notes_section(named: list, docs: list) -> str:
    items = []
    for (label, _), doc in zip(named, docs):
        for kind in ("warnings", "notes"):
            for text in doc.get(kind, []):
                items.append(f"<li><b>{escape(label)}</b> ({kind[:-1]}): {escape(text)}</li>")
    if not items:
        return ""
    return (
        f'<section id="notes"><h2>Warnings and notes</h2><ul>{"".join(dict.fromkeys(items))}</ul></section>'
    )


_CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#dde2ea;--bg:#f6f7f9;--card:#fff;--accent:#2c5fab;--hl:#fff4d6}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:var(--bg)}
header{background:#1f3358;color:#fff;padding:22px 32px 16px}
header h1{margin:0 0 4px;font-size:24px;font-weight:600;overflow-wrap:anywhere}
header p{margin:0;color:#c9d4e8}
nav{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line);padding:8px 32px}
nav a{color:var(--accent);text-decoration:none;margin-right:18px;font-weight:500}
main{padding:8px 32px 40px;max-width:1400px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:4px 20px 16px;margin:18px 0}
h2{font-size:18px;margin:14px 0 10px}h3{font-size:15px;margin:16px 0 8px}
.count{font-size:13px;font-weight:400;color:var(--muted);margin-left:6px}
.scroll{overflow-x:auto;max-width:100%}
table.data{border-collapse:collapse;font-size:13px;margin:6px 0}
table.data th,table.data td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:left;vertical-align:top}
table.data thead th{background:#eef1f6;position:sticky;top:0;white-space:nowrap}
table.data td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.data td.na{color:#9aa2b1}
table.data th[data-type=num]{text-align:right}
.cols{display:flex;flex-wrap:wrap;gap:0 18px;align-items:flex-start}
.cols>section{flex:1 1 340px;min-width:0}
.cols>#metrics{flex:0 1 auto}
table.data tbody tr:hover{background:#f3f6fb}
table.sortable thead th{cursor:pointer;user-select:none}
table.sortable thead th::after{content:" \\2195";color:#9aa2b1;font-size:11px}
table.sortable thead th[aria-sort=ascending]::after{content:" \\25B2";color:var(--accent)}
table.sortable thead th[aria-sort=descending]::after{content:" \\25BC";color:var(--accent)}
#class-table{min-width:480px}
#classes .scroll{max-height:640px;overflow-y:auto}
tr.differs{background:var(--hl)}tr.total td{font-weight:600}
figure{margin:14px 0;max-width:100%}
figure img{max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px;background:#fff}
figcaption{color:var(--muted);font-size:12px;margin-top:4px}
.hint{color:var(--muted);font-size:12.5px;margin:4px 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
details{margin:8px 0}summary{cursor:pointer;color:var(--accent)}
ul.verdicts{padding-left:18px}
footer{color:var(--muted);font-size:12px;padding:0 32px 30px}
"""

_JS = r"""
(function () {
  "use strict";
  function isMissing(cell) { return !cell || !cell.hasAttribute("data-v"); }
  function sortTable(table, col, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var numeric = table.tHead.rows[0].cells[col].getAttribute("data-type") === "num";
    var index = new Map();
    rows.forEach(function (r, i) { index.set(r, i); });
    rows.sort(function (a, b) {
      var x = a.cells[col], y = b.cells[col];
      var mx = isMissing(x), my = isMissing(y);
      if (mx || my) { return mx === my ? index.get(a) - index.get(b) : (mx ? 1 : -1); }
      var vx = x.getAttribute("data-v"), vy = y.getAttribute("data-v");
      var c = numeric ? parseFloat(vx) - parseFloat(vy) : vx.localeCompare(vy);
      return c === 0 ? index.get(a) - index.get(b) : dir * c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      if (i === col) { th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending"); }
      else { th.removeAttribute("aria-sort"); }
    });
  }
  function onHeader(table, col, th) {
    var current = th.getAttribute("aria-sort");
    var first = th.getAttribute("data-type") === "num" ? -1 : 1;
    var dir = current === null ? first : (current === "ascending" ? -1 : 1);
    sortTable(table, col, dir);
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener("click", function () { onHeader(table, col, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onHeader(table, col, th); }
      });
    });
  });
  function column(table, col) {
    return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
      var c = r.cells[col]; return isMissing(c) ? null : c.getAttribute("data-v");
    });
  }
  function ordered(values, numeric, dir) {
    var seenMissing = false;
    for (var i = 0; i < values.length; i++) {
      if (values[i] === null) { seenMissing = true; continue; }
      if (seenMissing) { return "a value after n/a"; }
      if (i > 0 && values[i - 1] !== null) {
        var c = numeric ? parseFloat(values[i]) - parseFloat(values[i - 1]) : values[i].localeCompare(values[i - 1]);
        if (dir * c < 0) { return "out of order at row " + i; }
      }
    }
    return "";
  }
  function selftest() {
    var out = document.getElementById("selftest");
    var table = document.getElementById("class-table");
    var problems = [];
    var ths = table.tHead.rows[0].cells, ap = -1, name = -1;
    for (var i = 0; i < ths.length; i++) {
      if (ap < 0 && /^AP/.test(ths[i].textContent)) { ap = i; }
      if (name < 0 && ths[i].textContent === "class") { name = i; }
    }
    ths[ap].click();
    var p = ordered(column(table, ap), true, -1); if (p) { problems.push("AP descending: " + p); }
    if (ths[ap].getAttribute("aria-sort") !== "descending") { problems.push("AP first click not descending"); }
    ths[ap].click();
    p = ordered(column(table, ap), true, 1); if (p) { problems.push("AP ascending: " + p); }
    ths[name].click();
    p = ordered(column(table, name), false, 1); if (p) { problems.push("class ascending: " + p); }
    ths[0].click(); ths[0].click();
    p = ordered(column(table, 0), true, 1); if (p) { problems.push("id ascending: " + p); }
    out.setAttribute("data-result", problems.length ? "fail: " + problems.join("; ") : "pass");
    out.setAttribute("data-rows", String(table.tBodies[0].rows.length));
  }
  window.addEventListener("load", function () {
    var images = Array.prototype.slice.call(document.images);
    var ok = images.every(function (img) { return img.complete && img.naturalWidth > 0; });
    document.body.setAttribute("data-images", String(images.length));
    document.body.setAttribute("data-images-ok", ok ? "true" : "false");
    if (location.hash === "#selftest") { selftest(); }
  });
})();
"""


def render_report(
    results: Any,
    *,
    analysis: Any = None,
    explanation: Any = None,
    bootstrap: Any = None,
    title: str | None = None,
    top_k: int = 30,
    max_classes: int = 12,
) -> str:
    """The report as one HTML string (see :func:`write_report`)."""
    named = named_results(results, where="write_report")
    docs = [r.to_dict() for _, r in named]
    analysis_doc = None if analysis is None else as_document(analysis, what="analysis")
    explanations = [
        as_document(e, what="explanation")
        for e in (
            explanation
            if isinstance(explanation, (list, tuple))
            else ([] if explanation is None else [explanation])
        )
    ]
    bootstrap_doc = None if bootstrap is None else as_document(bootstrap, what="bootstrap")
    specs = figure_specs(
        results,
        analysis=analysis_doc,
        explanation=explanations or None,
        bootstrap=bootstrap_doc,
        top_k=top_k,
        max_classes=max_classes,
    )
    if title is None:
        title = "deteval report: " + ", ".join(label for label, _ in named)
    nav = [
        ("inputs", "Inputs"),
        ("metrics", "Metrics"),
        ("protocols", "Protocols"),
        ("classes", "Classes"),
        ("figures", "Figures"),
    ]
    if explanations:
        nav.append(("explain", "Explain"))
    if analysis_doc:
        nav.append(("errors", "Errors"))
    if bootstrap_doc:
        nav.append(("intervals", "Intervals"))
    inputs, protocols = _inputs_section(named, docs)
    sections = [
        inputs,
        f'<div class="cols">{_metrics_section(named, docs)}{protocols}</div>',
        _class_section(named, docs),
    ]
    figures = "".join(_figure(s) for s in specs if s.section == "results")
    sections.append(f'<section id="figures"><h2>Figures</h2>{figures}</section>')
    if explanations:
        sections.append(_explain_section(explanations, specs))
    if analysis_doc:
        sections.append(_errors_section(analysis_doc, specs))
    if bootstrap_doc:
        sections.append(_intervals_section(bootstrap_doc, specs))
    notes = _notes_section(named, docs)
    if notes:
        nav.append(("notes", "Notes"))
        sections.append(notes)
    first = named[0][1].inputs
    subtitle = (
        f"deteval {escape(__version__)} · {len(named)} result{'s' if len(named) > 1 else ''} · "
        f"ground truth {escape(first.get('gt', '?'))}"
    )
    nav_html = "".join(f'<a href="#{key}">{label}</a>' for key, label in nav)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n"
        f"<body><header><h1>{escape(title)}</h1><p>{subtitle}</p></header>"
        f"<nav>{nav_html}</nav><main>{''.join(sections)}</main>"
        "<footer>Self-contained: figures are inline PNG, no network access is needed. "
        "Numbers are those of deteval's JSON output for the same run.</footer>"
        '<output id="selftest" hidden></output>'
        f"<script>{_JS}</script></body></html>\n"
    )


def write_report(
    results: Any,
    *,
    out: os.PathLike | str,
    analysis: Any = None,
    explanation: Any = None,
    bootstrap: Any = None,
    title: str | None = None,
    top_k: int = 30,
    max_classes: int = 12,
) -> Path:
    """Write one self-contained HTML report of a run.

    Parameters
    ----------
    results : EvalResult, sequence or mapping label -> EvalResult
        Several detectors and / or protocols are shown side by side (a mapping names them).
    out : path
        The HTML file. Rendered completely in memory first, then written atomically (a
        temporary file beside it, fsynced, renamed over it): if anything fails, ``out`` is
        left as it was.
    analysis : AnalysisResult or dict, optional
        :func:`deteval.diagnose.analyze` 's value or document: TIDE errors, confusion matrix,
        decomposition.
    explanation : Explanation, dict or a list of them, optional
        :func:`deteval.explain` walks.
    bootstrap : BootstrapResult, ComparisonResult or dict, optional
        Intervals and paired comparisons (:mod:`deteval.stats`).
    title : str, optional
    top_k, max_classes : int
        Bars / heatmap cells and curve panels per figure; the per-class table lists every class.

    Returns
    -------
    Path

    Examples
    --------
    >>> import deteval, tempfile, pathlib
    >>> r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "coco")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = write_report(r, out=pathlib.Path(d) / "report.html")
    ...     path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    True
    """
    text = render_report(
        results,
        analysis=analysis,
        explanation=explanation,
        bootstrap=bootstrap,
        title=title,
        top_k=top_k,
        max_classes=max_classes,
    )
    return atomic_write(out, text.encode("utf-8"))
