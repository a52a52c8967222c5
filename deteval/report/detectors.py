"""Renderers of several detectors side by side (several ``--dt``), with bootstrap intervals."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from deteval._version import __version__
from deteval.errors import printable
from deteval.evaluate import EvalResult
from deteval.report._format import _cells, _csv_number, _fmt, _md_escape, csv_safe

__all__ = [
    "detectors_json",
    "format_detectors_table",
    "format_detectors_markdown",
    "format_detectors_csv",
]


# --------------------------------------------------------------------------------------------
# Several detectors (evaluate / compare with several --dt), with bootstrap intervals


def _interval_text(interval: Sequence | None) -> str:
    return "" if interval is None else f" [{_fmt(interval[0], 4)}, {_fmt(interval[1], 4)}]"


def _bias_text(bias: float | None) -> str:
    """The bootstrap bias beside an estimate (mean resampled value - estimate)."""
    return "" if bias is None else f" bias {bias:+.4f}"


def detectors_json(
    names: Sequence[str],
    results: Sequence[Sequence[EvalResult]],
    *,
    inputs: dict,
    warnings: Sequence[str] = (),
    intervals: Sequence[Sequence[dict]] | None = None,
    comparisons: Sequence[dict] = (),
    class_comparisons: Sequence[dict] = (),
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
        Bootstrap intervals: each result gains ``metrics_ci`` and each class ``AP_ci``; with
        ``"metrics_bias"`` / ``"per_class_bias"`` also ``metrics_bias`` and each class
        ``AP_bias`` (the bootstrap bias beside each estimate).
    comparisons : list of dict
        ``{"a", "b", "protocol", "metric", "difference", "ci", "p_value"}`` entries.
    class_comparisons : list of dict
        The same entries on each class's AP, each with its ``class``
        (``ComparisonResult.to_dict()["class_comparisons"]``, protocol by protocol).
    bootstrap : dict, optional
        ``{"n", "seed", "ci", "method"}``; with it the document has ``comparisons`` and
        ``class_comparisons`` (empty lists with one detector).
    """
    entries = []
    for d, (name, per_protocol) in enumerate(zip(names, results)):
        for p, result in enumerate(per_protocol):
            entry = {"detector": name, **result.to_dict()}
            if intervals is not None:
                found = intervals[d][p]
                entry["metrics_ci"] = found["metrics_ci"]
                if "metrics_bias" in found:
                    entry["metrics_bias"] = found["metrics_bias"]
                biases = found.get("per_class_bias") or [None] * len(entry["per_class"])
                for row, ci, bias in zip(entry["per_class"], found["per_class_ci"], biases):
                    row["AP_ci"] = ci
                    if "metrics_bias" in found:
                        row["AP_bias"] = bias
            entries.append(entry)
    doc = {"deteval_version": __version__, "inputs": dict(inputs), "results": entries}
    if bootstrap is not None:
        doc["bootstrap"] = dict(bootstrap)
        doc["comparisons"] = list(comparisons)
        doc["class_comparisons"] = list(class_comparisons)
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
                bias = e.get("metrics_bias", {}).get(metric)
                row.append(_fmt(e["metrics"][metric], 4) + _interval_text(ci) + _bias_text(bias))
            for e in entries[1:]:
                value = e["metrics"][metric]
                diff = "n/a" if value is None or base is None else f"{value - base:+.4f}"
                comparison = _comparison_of(doc, protocol, names[0], e["detector"], metric)
                if comparison is not None:
                    diff += _interval_text(comparison["ci"]) + f" p={comparison['p_value']:.3g}"
                row.append(diff)
            rows.append(row)
        title = f"protocol {printable(protocol)} [{first['protocol_hash']}]"
        tables.append((title, header, rows))
        if per_class:
            class_rows = [
                [
                    c["name"],
                    *(
                        _fmt(e["per_class"][k]["AP"], 4)
                        + _interval_text(e["per_class"][k].get("AP_ci"))
                        + _bias_text(e["per_class"][k].get("AP_bias"))
                        for e in entries
                    ),
                ]
                for k, c in enumerate(first["per_class"])
            ]
            tables.append((f"{printable(protocol)}: AP per class", ["class", *names], class_rows))
            tables += _class_difference_tables(doc, protocol)
    closing = []
    if "bootstrap" in doc:
        b = doc["bootstrap"]
        closing.append(
            f"bootstrap: {b['n']} resamples of the images (seed {b['seed']}), "
            f"{b['method']} intervals at {b['ci']:g}"
        )
        closing += [printable(c["verdict"]) for c in doc.get("comparisons", []) if c.get("verdict")]
    return tables, closing


def _class_difference_tables(doc: dict, protocol: str) -> list:
    """Per pair (each detector against the first), B - A on each class's AP: (title, header, rows).

    The rows are the document's ``class_comparisons`` of ``protocol``, in ``per_class`` order
    (the per-class AP table's); ``*`` marks a class whose interval excludes 0.
    """
    found = [c for c in doc.get("class_comparisons", []) if c["protocol"] == protocol]
    tables = []
    for a, b in dict.fromkeys((c["a"], c["b"]) for c in found):
        rows = []
        for c in (c for c in found if (c["a"], c["b"]) == (a, b)):
            ci, p = c["ci"], c["p_value"]
            has_ci = ci is not None and ci[0] is not None and ci[1] is not None
            excludes_zero = has_ci and (ci[0] > 0 or ci[1] < 0)
            rows.append(
                [
                    c["class"],
                    "n/a" if c["difference"] is None else f"{c['difference']:+.4f}",
                    f"[{_fmt(ci[0], 4)}, {_fmt(ci[1], 4)}]" if has_ci else "n/a",
                    "n/a" if p is None else f"{p:.3g}",
                    "*" if excludes_zero else "",
                ]
            )
        title = (
            f"{printable(protocol)}: AP per class, {printable(b)} - {printable(a)} "
            f"(paired; * the interval excludes 0)"
        )
        tables.append((title, ["class", f"{b} - {a}", "interval", "p", ""], rows))
    return tables


def format_detectors_table(doc: dict, *, per_class: bool = True) -> str:
    """Detectors side by side: per protocol, metrics x detectors, differences to the first.

    With bootstrap intervals each value shows ``[lo, hi]`` and the bootstrap bias (``bias
    +0.0052``: the resampled values' mean minus the estimate), and each difference its interval
    and p-value (for the metric the comparison was made on). With several detectors and
    ``per_class``, each later detector's per-class differences to the first follow the per-class
    AP table (B - A, interval, p, ``*`` when the interval excludes 0).
    """
    tables, closing = _detector_tables(doc, per_class=per_class)
    blocks = ["\n".join([title, *_plain_table(header, rows)]) for title, header, rows in tables]
    return "\n\n".join(blocks + (["\n".join(closing)] if closing else [])) + "\n"


def _plain_table(header: list[str], rows: list[list[str]]) -> list[str]:
    header, rows = _cells(header), [_cells(r) for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    out.append("  ".join("-" * w for w in widths))
    for r in rows:
        out.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))))
    return [line.rstrip() for line in out]  # an empty last cell (a mark not set) pads nothing


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
    """``detector,protocol,class,metric,value,ci_lo,ci_hi,bias`` rows (headline metrics, per-class AP).

    ``bias``: the bootstrap bias beside the estimate (empty without ``--bootstrap``).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["detector", "protocol", "class", "metric", "value", "ci_lo", "ci_hi", "bias"])
    for e in doc["results"]:
        for metric, value in e["metrics"].items():
            ci = e.get("metrics_ci", {}).get(metric) or ["", ""]
            bias = _csv_number(e.get("metrics_bias", {}).get(metric))
            writer.writerow(
                [csv_safe(e["detector"]), e["protocol"], "", metric, _csv_number(value), *ci, bias]
            )
        for c in e["per_class"]:
            ci = c.get("AP_ci") or ["", ""]
            row = [csv_safe(e["detector"]), e["protocol"], csv_safe(c["name"]), "AP", _csv_number(c["AP"])]
            writer.writerow([*row, *ci, _csv_number(c.get("AP_bias"))])
    return buffer.getvalue()
