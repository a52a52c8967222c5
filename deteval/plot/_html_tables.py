"""The table-only sections of the HTML report (:mod:`deteval.plot.html`).

Inputs and resolved protocol fields, headline metrics, per-class results, warnings and notes:
each built from the values' ``to_dict()`` documents, with no figure.
"""

from __future__ import annotations

from typing import Any

from deteval.plot._html_format import _num_cell, _table, _text_cell, escape


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
    # AP columns first: with several results the count columns would push them off-screen
    columns: list = [
        ("AP" if len(named) == 1 else f"AP · {label}", [rows.get(i, {}).get("AP") for i in ids])
        for (label, _), rows in zip(named, by_result)
    ]  # (header, values)
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
