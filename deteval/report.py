"""Every text renderer: results, comparisons, explanations, validation, protocols -> text or JSON.

Pure functions returning strings or dicts; printing (and writing files) is the CLI's job.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval._version import __version__
from deteval.evaluate import EvalResult
from deteval.explain import Explanation
from deteval.protocol import Protocol, display_fields, dump_protocol
from deteval.summary import AREA_ABBREVIATIONS, class_ap, threshold_label
from deteval.summary import none_if_nan as _none_if_nan
from deteval.tide import MAIN_ERRORS, SPECIAL_ERRORS

__all__ = [
    "to_json",
    "dumps",
    "format_table",
    "format_markdown",
    "format_csv",
    "csv_safe",
    "describe_protocol",
    "compare_table",
    "format_compare_table",
    "format_compare_markdown",
    "format_compare_csv",
    "compare_json",
    "format_confidence_table",
    "confidence_json",
    "format_mask_mode_comparison",
    "mask_mode_json",
    "format_matches_csv",
    "format_explanation",
    "format_explanation_markdown",
    "format_validation",
    "format_protocols",
    "protocols_json",
    "format_protocols_yaml",
]

_COCO_LINES = {
    "AP": ("Average Precision", "all", "all"),
    "AP50": ("Average Precision", "0.50", "all"),
    "AP75": ("Average Precision", "0.75", "all"),
    "APs": ("Average Precision", "all", "small"),
    "APm": ("Average Precision", "all", "medium"),
    "APl": ("Average Precision", "all", "large"),
    "ARs": ("Average Recall", "all", "small"),
    "ARm": ("Average Recall", "all", "medium"),
    "ARl": ("Average Recall", "all", "large"),
}


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def to_json(
    results: Sequence[EvalResult], *, inputs: dict | None = None, warnings: Sequence[str] = ()
) -> dict:
    """The CLI's JSON document (the contract in README.md); undefined values are ``null``."""
    first = results[0] if results else None
    doc = {
        "deteval_version": __version__,
        "inputs": dict(inputs if inputs is not None else (first.inputs if first else {})),
        "results": [r.to_dict() for r in results],
    }
    all_warnings = list(warnings) + [w for r in results for w in r.warnings]
    doc["warnings"] = list(dict.fromkeys(all_warnings))
    doc["notes"] = list(dict.fromkeys(n for r in results for n in r.notes))
    return doc


def dumps(doc: Any) -> str:
    """A JSON document as the CLI writes it: indented, NaN refused (undefined is ``null``)."""
    return json.dumps(doc, indent=2, allow_nan=False)


def describe_protocol(result: EvalResult) -> str:
    """One line: the protocol, its source, and the fields that decide its numbers."""
    p = result.protocol
    thresholds = p.iou_thresholds
    thr = (
        f"{thresholds[0]:.2f}:{thresholds[-1]:.2f} ({len(thresholds)})"
        if len(thresholds) > 3
        else ",".join(f"{t:g}" for t in thresholds)
    )
    areas = ",".join(p.area_names)
    return (
        f"protocol {p.name} [{p.fingerprint()}]: {p.source}\n"
        f"  iou_type={p.iou_type} iou={thr} {p.iou_comparison} matching={p.matching} "
        f"boxes={p.box_convention} ap={p.ap_method} areas={areas} max_dets={p.max_dets} "
        f"difficult={p.difficult} crowd={p.crowd}"
    )


def _metric_lines(result: EvalResult) -> list[str]:
    p = result.protocol
    lines = []
    if "mAP" in result.metrics:
        return [f"  mAP = {_fmt(result.metrics['mAP'], 4)}"]
    thresholds = p.iou_thresholds
    all_thr = f"{thresholds[0]:.2f}:{thresholds[-1]:.2f}"
    top = max(p.max_dets) if p.max_dets else "all"
    first_area = p.area_names[0]
    by_label = {threshold_label(t): f"{t:.2f}" for t in thresholds}
    area_of = {AREA_ABBREVIATIONS.get(a, "_" + a): a for a in p.area_names}
    for name, value in result.metrics.items():
        suffix = name[2:]
        if name.startswith("AR") and suffix.isdigit():
            title, iou, area, md = "Average Recall", all_thr, first_area, suffix
        else:
            if p.summary == "pycocotools" and name in _COCO_LINES:
                title, iou, area = _COCO_LINES[name]
            else:  # configured summaries: AP<threshold>, AP<area>, AR<area> of this protocol
                title = "Average Precision" if name.startswith("AP") else "Average Recall"
                iou = by_label.get(suffix, "all") if title.startswith("Average Precision") else "all"
                area = area_of.get(suffix, first_area)
            iou = all_thr if iou == "all" else iou
            md = "100" if (name == "AP" and p.summary == "pycocotools") else str(top)
            if p.summary == "pycocotools" and name != "AP" and p.max_dets:
                md = str(p.max_dets[2])
        kind = "(AP)" if title.startswith("Average Precision") else "(AR)"
        lines.append(
            f"  {title:<18} {kind} @[ IoU={iou:<9} | area={area:>6s} | maxDets={md:>3s} ] "
            f"= {_fmt(value)}   {name}"
        )
    return lines


def _per_class_rows(result: EvalResult) -> list[list[str]]:
    return [
        [str(c["category_id"]), c["name"], _fmt(c["AP"], 4), str(c["num_gt"]), str(c["num_det"])]
        for c in result.per_class
    ]


def _text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(v.rjust(w) if i != 1 else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths))))
    return out


def format_table(results: Sequence[EvalResult], *, per_class: bool = True) -> str:
    """A readable report: per protocol, its fields, headline metrics and per-class AP."""
    blocks = []
    for r in results:
        lines = [describe_protocol(r), ""]
        lines += _metric_lines(r)
        if per_class:
            lines += ["", *_text_table(["id", "class", "AP", "num_gt", "num_det"], _per_class_rows(r))]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def format_markdown(results: Sequence[EvalResult], *, per_class: bool = True) -> str:
    """Markdown: a metrics table per protocol and a per-class table."""
    out = []
    for r in results:
        out.append(f"### {r.protocol.name} `{r.protocol.fingerprint()}`\n\n{r.protocol.source}\n")
        out.append("| metric | value |\n|---|---|")
        out += [f"| {k} | {_fmt(v, 4)} |" for k, v in r.metrics.items()]
        if per_class:
            out.append("\n| id | class | AP | num_gt | num_det |\n|---|---|---|---|---|")
            out += [f"| {a} | {_md_escape(b)} | {c} | {d} | {e} |" for a, b, c, d, e in _per_class_rows(r)]
        out.append("")
    return "\n".join(out)


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


def format_csv(results: Sequence[EvalResult]) -> str:
    """Long-format CSV: protocol, scope (metric or class), name, value, num_gt, num_det."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["protocol", "kind", "name", "category_id", "value", "num_gt", "num_det"])
    for r in results:
        for k, v in r.metrics.items():
            writer.writerow([csv_safe(r.protocol.name), "metric", k, "", _csv_number(v), "", ""])
        for c in r.per_class:
            writer.writerow(
                [
                    csv_safe(r.protocol.name),
                    "class",
                    csv_safe(c["name"]),
                    c["category_id"],
                    _csv_number(c["AP"]),
                    c["num_gt"],
                    c["num_det"],
                ]
            )
    return buf.getvalue()


def _csv_number(value: float) -> str:
    return "" if value is None or value != value else repr(float(value))


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
    labels = _unique_labels(results)
    width = max(len(x) for x in labels)
    lines = [
        f"  {label:<{width}}  [{r.protocol.fingerprint()}]  {r.protocol.source}"
        for label, r in zip(labels, results, strict=False)
    ]
    sharing = _sharing_line(results, matching_groups)
    head = [f"{sharing or 'protocols'}:"] + lines + [""]
    header = ["class"] + [c["label"] for c in table["columns"]]
    body = [[row["name"]] + [_fmt(v, 4) for v in row["values"]] for row in table["rows"]]
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


def format_confidence_table(result: EvalResult, rows: list, threshold: float) -> str:
    """Per-class precision/recall/F1 of the detections scoring >= ``threshold`` (a text table)."""
    thresholds = result.protocol.iou_thresholds
    iou = 0.5 if 0.5 in thresholds else thresholds[0]
    body = [
        [
            str(r["category_id"]),
            r["name"],
            str(r["tp"]),
            str(r["fp"]),
            str(r["fn"]),
            _fmt(r["precision"], 4),
            _fmt(r["recall"], 4),
            _fmt(r["f1"], 4),
        ]
        for r in rows
    ]
    lines = [
        f"\n{result.protocol.name}: detections with score >= {threshold:g} at IoU {iou:g}",
        "",
        *_text_table(["id", "class", "tp", "fp", "fn", "precision", "recall", "F1"], body),
    ]
    return "\n".join(lines) + "\n"


def format_mask_mode_comparison(protocol: Any, comparison: Any) -> str:
    """Exact vs raster mask IoU: metric differences and how many outcomes changed (text)."""
    rows = [
        [
            name,
            _fmt(comparison.exact.metrics[name], 4),
            _fmt(comparison.raster.metrics[name], 4),
            _signed(diff),
        ]
        for name, diff in comparison.metric_difference.items()
    ]
    thresholds = ", ".join(
        f"{t:g}: {n}" for t, n in zip(protocol.iou_thresholds, comparison.changed_by_threshold) if n
    )
    lines = [
        f"\n{protocol.name}: exact polygon IoU vs raster (pycocotools) IoU",
        "",
        *_text_table(["metric", "exact", "raster", "exact-raster"], rows),
        "",
        f"outcomes changed: {comparison.n_changed} of {comparison.n_outcomes} (lane x detection); "
        f"matches changed: {comparison.n_matches_changed}; detections affected: "
        f"{comparison.n_detections_changed}",
        f"changed per IoU threshold (area all): {thresholds or 'none'}",
    ]
    return "\n".join(lines) + "\n"


def _signed(value: float) -> str:
    return "n/a" if value != value else f"{value:+.4f}"


# --------------------------------------------------------------------------------------------
# Analysis outputs: confidence tables, mask modes, matches
# --------------------------------------------------------------------------------------------


def _default_iou(result: EvalResult) -> float:
    thresholds = result.protocol.iou_thresholds
    return 0.5 if 0.5 in thresholds else thresholds[0]


def confidence_json(result: EvalResult, rows: list, threshold: float) -> dict:
    """The ``at_confidence`` entry of a result in the JSON document (NaN -> null)."""
    return {
        "threshold": threshold,
        "iou_threshold": _default_iou(result),
        "per_class": [
            {k: (_none_if_nan(v) if k in ("precision", "recall", "f1") else v) for k, v in row.items()}
            for row in rows
        ],
    }


def mask_mode_json(comparison: Any) -> dict:
    """The ``mask_mode_comparison`` entry of a result in the JSON document (NaN -> null)."""
    return {
        "metric_difference_exact_minus_raster": {
            k: _none_if_nan(v) for k, v in comparison.metric_difference.items()
        },
        "n_outcomes": comparison.n_outcomes,
        "n_changed": comparison.n_changed,
        "n_matches_changed": comparison.n_matches_changed,
        "n_detections_changed": comparison.n_detections_changed,
        "changed_by_threshold": [int(v) for v in comparison.changed_by_threshold],
    }


def format_matches_csv(result: EvalResult, rows: Sequence[Mapping]) -> str:
    """``--matches``: one CSV row per scored detection (:func:`deteval.analysis.matches`)."""
    names = dict(zip(result.category_ids, result.category_names))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        ["detection", "image_id", "category_id", "category", "score", "outcome", "gt_annotation_id"]
    )
    for m in rows:
        writer.writerow(
            [
                m["detection"],
                m["image_id"],
                m["category_id"],
                csv_safe(names[m["category_id"]]),
                repr(m["score"]),
                m["outcome"],
                "" if m["gt_annotation_id"] is None else m["gt_annotation_id"],
            ]
        )
    return buf.getvalue()


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
    head = [
        f"{e.a.name} -> {e.b.name}: {e.measure} {_fmt_change(e.start)} -> {_fmt_change(e.end)} "
        f"({e.a.name} {na} {_fmt_change(va)}, {e.b.name} {nb} {_fmt_change(vb)})",
        f"compared: {e.definition}",
    ] + [f"note: {n}" for n in e.notes]
    header = [
        "step",
        "change",
        e.measure if len(e.measure) < 8 else "value",
        "fields changed",
        "classes moved",
    ]
    rows = _explanation_rows(e)
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
    lines.append(e.summary_line())
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


# --------------------------------------------------------------------------------------------
# deteval validate, deteval protocols
# --------------------------------------------------------------------------------------------


def format_validation(report: Mapping) -> str:
    """What ``deteval validate`` found (``Validation.to_dict()``), as text."""
    g, d, found = report["gt"], report["dt"], report["warnings"]
    lines = [
        f"ground truth: {g['source']} ({g['format']})",
        f"  {g['images']} images, {g['categories']} categories, {g['objects']} objects "
        f"({g['crowd']} crowd, {g['difficult']} difficult, {g['ignore']} ignore)",
    ]
    if g["images_without_objects"]:
        lines.append(f"  {g['images_without_objects']} images without objects")
    empty_classes = g["categories_without_objects"]
    if empty_classes:
        lines.append(f"  {len(empty_classes)} categories without objects: {empty_classes[:10]}")
    if d is not None:
        scores = f", scores {d['score_min']:g} .. {d['score_max']:g}" if d["detections"] else ""
        lines.append(f"detections: {d['source']}")
        lines.append(
            f"  {d['detections']} detections on {d['images']} of {g['images']} images, "
            f"{d['categories']} categories{scores}"
        )
    lines.append(f"warnings: {len(found)}")
    lines += [f"  - {w}" for w in found]
    lines.append("OK: the inputs can be scored" if d is not None else "OK: the ground truth can be scored")
    return "\n".join(lines) + "\n"


#: The fields ``deteval protocols`` lists, in this order.
def format_protocols(protocols: Mapping[str, Protocol]) -> str:
    """``deteval protocols``: each protocol's name, hash, source and fields."""
    lines = []
    for name, p in protocols.items():
        lines.append(f"{name} [{p.fingerprint()}]\n  {p.source}")
        fields = p.to_dict()
        for key in display_fields():
            # Sparse fields (group_of, the LVIS ones...) are in to_dict only away from their default.
            value = fields[key] if key in fields else getattr(p, key)
            if value is None:
                value = "null"
            elif key == "iou_thresholds" and len(value) > 3:
                how = (
                    "np.linspace"
                    if value == [float(t) for t in np.linspace(value[0], value[-1], len(value))]
                    else "listed"
                )
                value = f"[{value[0]}, ..., {value[-1]}] ({len(value)} values, {how})"
            lines.append(f"    {key}: {value}")
    return "".join(line + "\n" for line in lines)


def protocols_json(protocols: Mapping[str, Protocol]) -> dict:
    """``deteval protocols --format json``: name -> resolved fields and ``protocol_hash``."""
    return {n: {**p.to_dict(), "protocol_hash": p.fingerprint()} for n, p in protocols.items()}


def format_protocols_yaml(protocols: Mapping[str, Protocol]) -> str:
    """``deteval protocols --format yaml``: complete protocol files, each under a comment."""
    return "\n".join(f"# {n} [{p.fingerprint()}]\n{dump_protocol(p)}" for n, p in protocols.items())


# --------------------------------------------------------------------------------------------
# deteval rank


def _rank_cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def format_rank_table(doc: dict, *, warnings: bool = True) -> str:
    """Plain-text table of a :func:`rank_report` document (its warnings last, unless ``warnings=False``).

    Examples
    --------
    >>> from deteval.ranking import rank_report
    >>> print(format_rank_table(rank_report([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])))
    ranking: 4 samples, 1 label, 2 positives (average=macro, method=step)
    AP       0.8333
    ROC_AUC  0.7500
    """
    inputs, options = doc["inputs"], doc["options"]
    method = options["method"] + (f", grid={options['grid']}" if options.get("grid") else "")
    lines = [
        f"ranking: {inputs['n_samples']} samples, {inputs['n_labels']} "
        f"label{'s' if inputs['n_labels'] != 1 else ''}, {inputs['n_positives']} positives "
        f"(average={options['average']}, method={method})"
    ]
    rows = [(name, value) for name, value in doc["metrics"].items()]
    if doc["at_k"]:
        rows += [(name, value) for name, value in doc["at_k"].items() if name != "k"]
    if doc["binarized"]:
        b = doc["binarized"]
        rows += [
            ("AP raw", b["ap_raw"]),
            (f"AP binarized (>= {b['threshold']:g})", b["ap_binarized"]),
            ("precision at threshold", b["precision"]),
            ("recall at threshold", b["recall"]),
            ("predicted positive", b["n_predicted_positive"]),
        ]
    width = max(len(name) for name, _ in rows)
    lines += [
        f"{name.replace('@K', '@' + str(doc['at_k']['k']) if doc['at_k'] else '@K'):<{width}}  "
        f"{_rank_cell(value)}"
        for name, value in rows
    ]
    if doc["per_label"]:
        lines.append("")
        lines.append(f"{'label':>5}  {'AP':>6}  {'ROC_AUC':>7}  {'positives':>9}")
        lines += [
            f"{row['label']:>5}  {_rank_cell(row['AP']):>6}  {_rank_cell(row['ROC_AUC']):>7}  "
            f"{row['n_positives']:>9}"
            for row in doc["per_label"]
        ]
    if warnings:
        lines += [f"warning: {message}" for message in doc["warnings"]]
    return "\n".join(lines)


def format_rank_csv(doc: dict) -> str:
    """CSV of a :func:`rank_report` document: ``scope,metric,value`` rows.

    ``scope`` is ``all``, ``at_k``, ``binarized`` or ``label=<j>``; undefined values are empty.

    Examples
    --------
    >>> from deteval.ranking import rank_report
    >>> print(format_rank_csv(rank_report([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])))
    scope,metric,value
    all,AP,0.8333333333333333
    all,ROC_AUC,0.75
    """

    def text(value: Any) -> str:
        return "" if value is None else repr(value) if isinstance(value, float) else str(value)

    rows = ["scope,metric,value"]
    rows += [f"all,{name},{text(value)}" for name, value in doc["metrics"].items()]
    if doc["at_k"]:
        rows += [f"at_k,{name},{text(value)}" for name, value in doc["at_k"].items()]
    if doc["binarized"]:
        rows += [f"binarized,{name},{text(value)}" for name, value in doc["binarized"].items()]
    for row in doc["per_label"]:
        rows += [
            f"label={row['label']},{name},{text(row[name])}" for name in ("AP", "ROC_AUC", "n_positives")
        ]
    return "\n".join(rows)


# --------------------------------------------------------------------------------------------
# deteval analyze


def analysis_json(
    parts: dict, *, protocol: Protocol, inputs: dict | None = None, warnings: Sequence[str] = ()
) -> dict:
    """The ``analyze`` JSON contract: version, inputs and protocol around the analysis parts.

    ``parts`` is :meth:`deteval.diagnose.AnalysisResult.to_dict` (``errors``, ``decomposition``,
    ``confusion``: the parts asked for).
    """
    return {
        "deteval_version": __version__,
        "inputs": dict(inputs or {}),
        "protocol": {
            "name": protocol.name,
            "protocol_hash": protocol.fingerprint(),
            "config": protocol.to_dict(),
        },
        **parts,
        "warnings": list(warnings),
    }


def _analysis_num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _analysis_sections(doc: dict) -> list:
    """(title, header, rows) tables of an analysis document."""
    out = []
    if "errors" in doc:
        e = doc["errors"]
        title = (
            f"TIDE errors (mode {e['mode']}, foreground {e['thresholds']['foreground']:g}, "
            f"background {e['thresholds']['background']:g}): AP {_analysis_num(e['ap'])}, dAP per type"
        )
        header = ["", *MAIN_ERRORS, *SPECIAL_ERRORS]
        rows = [
            [
                "all",
                *(_analysis_num(e["main"][k]) for k in MAIN_ERRORS),
                *(_analysis_num(e["special"][k]) for k in SPECIAL_ERRORS),
            ],
            ["count", *(str(e["counts"][k]) for k in MAIN_ERRORS), "", ""],
        ]
        for c in e["per_class"]:
            rows.append(
                [
                    c["name"],
                    *(_analysis_num(c["main"][k]) for k in MAIN_ERRORS),
                    *(_analysis_num(c["special"][k]) for k in SPECIAL_ERRORS),
                ]
            )
        out.append((title, header, rows))
    if "decomposition" in doc:
        d = doc["decomposition"]
        title = f"AP decomposition at IoU {d['iou_threshold']:g} (D = L x C|L)"
        header = ["class", "AP_D", "AP_L", "AP_CgL"]
        rows = [
            [c["name"], _analysis_num(c["AP_D"]), _analysis_num(c["AP_L"]), _analysis_num(c["AP_CgL"])]
            for c in d["per_class"]
        ]
        rows.append(
            [
                "mean",
                _analysis_num(d["mean"]["AP_D"]),
                _analysis_num(d["mean"]["AP_L"]),
                _analysis_num(d["mean"]["AP_CgL"]),
            ]
        )
        out.append((title, header, rows))
    if "confusion" in doc:
        c = doc["confusion"]
        title = (
            f"Confusion matrix at IoU {c['iou_threshold']:g}, confidence {c['confidence']:g} "
            f"(rows: true, columns: predicted)"
        )
        header = ["", *c["labels"]]
        rows = [[label, *(str(v) for v in row)] for label, row in zip(c["labels"], c["matrix"])]
        out.append((title, header, rows))
    return out


def format_analysis_table(doc: dict) -> str:
    """Plain-text tables of an :meth:`AnalysisResult.to_dict` document."""
    blocks = []
    for title, header, rows in _analysis_sections(doc):
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        lines = [
            title,
            "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths))),
        ]
        for r in rows:
            lines.append(
                "  ".join(
                    str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths))
                )
            )
        blocks.append("\n".join(line.rstrip() for line in lines))
    return "\n\n".join(blocks) + "\n"


def format_analysis_markdown(doc: dict) -> str:
    """Markdown tables of an :meth:`AnalysisResult.to_dict` document."""
    blocks = []
    for title, header, rows in _analysis_sections(doc):
        lines = [
            f"**{title}**",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join("---" for _ in header) + "|",
        ]
        lines += ["| " + " | ".join(_md_escape(str(v)) for v in r) + " |" for r in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


# --------------------------------------------------------------------------------------------
# Several detectors (evaluate / compare with several --dt), with bootstrap intervals


def _interval_text(interval: Sequence | None) -> str:
    return "" if interval is None else f" [{_fmt(interval[0], 4)}, {_fmt(interval[1], 4)}]"


def detectors_json(
    names: Sequence[str],
    results: Sequence[Sequence[EvalResult]],
    *,
    inputs: dict,
    warnings: Sequence[str] = (),
    intervals: Sequence[Sequence[dict]] | None = None,
    comparisons: Sequence[dict] = (),
    bootstrap: dict | None = None,
) -> dict:
    """The JSON document of several detectors (the evaluate contract, extended).

    Parameters
    ----------
    names : sequence of str
        Detector names, the first is the reference of the differences.
    results : sequence (per detector) of sequences (per protocol) of EvalResult
    inputs : dict
        ``gt``, ``dt`` (one path per detector), ``detectors``, ``images``, ``gt_objects``,
        ``detections`` (one count per detector).
    intervals : per detector, per protocol: ``{"metrics_ci": ..., "per_class_ci": [...]}``, optional
        Bootstrap intervals: each result gains ``metrics_ci`` and each class ``AP_ci``.
    comparisons : list of dict
        ``{"a", "b", "protocol", "metric", "difference", "ci", "p_value"}`` entries.
    bootstrap : dict, optional
        ``{"n", "seed", "ci", "method"}``.
    """
    entries = []
    for d, (name, per_protocol) in enumerate(zip(names, results)):
        for p, result in enumerate(per_protocol):
            entry = {"detector": name, **result.to_dict()}
            if intervals is not None:
                entry["metrics_ci"] = intervals[d][p]["metrics_ci"]
                for row, ci in zip(entry["per_class"], intervals[d][p]["per_class_ci"]):
                    row["AP_ci"] = ci
            entries.append(entry)
    doc = {"deteval_version": __version__, "inputs": dict(inputs), "results": entries}
    if bootstrap is not None:
        doc["bootstrap"] = dict(bootstrap)
        doc["comparisons"] = list(comparisons)
    all_warnings = list(warnings) + [w for per in results for r in per for w in r.warnings]
    doc["warnings"] = list(dict.fromkeys(all_warnings))
    doc["notes"] = list(dict.fromkeys(n for per in results for r in per for n in r.notes))
    return doc


def _detector_rows(doc: dict, protocol: str) -> tuple[list[str], list[dict]]:
    entries = [e for e in doc["results"] if e["protocol"] == protocol]
    return [e["detector"] for e in entries], entries


def _comparison_of(doc: dict, protocol: str, a: str, b: str, metric: str) -> dict | None:
    for c in doc.get("comparisons", []):
        if (c["protocol"], c["a"], c["b"], c["metric"]) == (protocol, a, b, metric):
            return c
    return None


def _detector_tables(doc: dict, *, per_class: bool) -> tuple[list, list[str]]:
    """(title, header, rows) tables of a several-detectors document, and its closing lines."""
    tables = []
    for protocol in dict.fromkeys(e["protocol"] for e in doc["results"]):
        names, entries = _detector_rows(doc, protocol)
        first = entries[0]
        header = ["metric", *names, *(f"{n} - {names[0]}" for n in names[1:])]
        rows = []
        for metric, base in first["metrics"].items():
            row = [metric]
            for e in entries:
                ci = e.get("metrics_ci", {}).get(metric)
                row.append(_fmt(e["metrics"][metric], 4) + _interval_text(ci))
            for e in entries[1:]:
                value = e["metrics"][metric]
                diff = "n/a" if value is None or base is None else f"{value - base:+.4f}"
                comparison = _comparison_of(doc, protocol, names[0], e["detector"], metric)
                if comparison is not None:
                    diff += _interval_text(comparison["ci"]) + f" p={comparison['p_value']:.3g}"
                row.append(diff)
            rows.append(row)
        title = f"protocol {protocol} [{first['protocol_hash']}]"
        tables.append((title, header, rows))
        if per_class:
            class_rows = [
                [
                    c["name"],
                    *(
                        _fmt(e["per_class"][k]["AP"], 4) + _interval_text(e["per_class"][k].get("AP_ci"))
                        for e in entries
                    ),
                ]
                for k, c in enumerate(first["per_class"])
            ]
            tables.append((f"{protocol}: AP per class", ["class", *names], class_rows))
    closing = []
    if "bootstrap" in doc:
        b = doc["bootstrap"]
        closing.append(
            f"bootstrap: {b['n']} resamples of the images (seed {b['seed']}), "
            f"{b['method']} intervals at {b['ci']:g}"
        )
        closing += [c["verdict"] for c in doc.get("comparisons", []) if c.get("verdict")]
    return tables, closing


def format_detectors_table(doc: dict, *, per_class: bool = True) -> str:
    """Detectors side by side: per protocol, metrics x detectors, differences to the first.

    With bootstrap intervals each value shows ``[lo, hi]``, and each difference its interval and
    p-value (for the metric the comparison was made on).
    """
    tables, closing = _detector_tables(doc, per_class=per_class)
    blocks = ["\n".join([title, *_plain_table(header, rows)]) for title, header, rows in tables]
    return "\n\n".join(blocks + (["\n".join(closing)] if closing else [])) + "\n"


def _plain_table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    out.append("  ".join("-" * w for w in widths))
    for r in rows:
        out.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))))
    return out


def format_detectors_markdown(doc: dict, *, per_class: bool = True) -> str:
    """Markdown version of :func:`format_detectors_table`."""
    tables, closing = _detector_tables(doc, per_class=per_class)
    blocks = []
    for title, header, rows in tables:
        lines = [
            f"**{_md_escape(title)}**",
            "",
            "| " + " | ".join(_md_escape(h) for h in header) + " |",
            "|" + "|".join("---" for _ in header) + "|",
        ]
        lines += ["| " + " | ".join(_md_escape(v) for v in r) + " |" for r in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks + (["\n".join(_md_escape(c) for c in closing)] if closing else [])) + "\n"


def format_detectors_csv(doc: dict) -> str:
    """``detector,protocol,metric,value,ci_lo,ci_hi`` rows (headline metrics and per-class AP)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["detector", "protocol", "class", "metric", "value", "ci_lo", "ci_hi"])
    for e in doc["results"]:
        for metric, value in e["metrics"].items():
            ci = e.get("metrics_ci", {}).get(metric) or ["", ""]
            writer.writerow([csv_safe(e["detector"]), e["protocol"], "", metric, _csv_number(value), *ci])
        for c in e["per_class"]:
            ci = c.get("AP_ci") or ["", ""]
            writer.writerow(
                [csv_safe(e["detector"]), e["protocol"], csv_safe(c["name"]), "AP", _csv_number(c["AP"]), *ci]
            )
    return buffer.getvalue()
