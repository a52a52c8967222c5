"""Renderers of per-class metrics, best-F1 operating points and slices (``evaluate`` options).

``--per-class-metrics`` prints :func:`format_per_class_metrics` (every per-class metric and each
class's best-F1 point, then the overall points); ``--slice`` prints :func:`format_slices_table`
and places :func:`slices_json` in the result's JSON entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from deteval.evaluate import EvalResult
from deteval.report._format import _cells, _fmt
from deteval.report.results import _text_table

if TYPE_CHECKING:  # annotations only: `deteval evaluate` without --slice does not import slices
    from deteval.slices import SliceResult

__all__ = ["format_per_class_metrics", "format_operating_points", "format_slices_table", "slices_json"]

_BASE_KEYS = ("category_id", "name", "AP", "num_gt", "num_det")


def format_operating_points(result: EvalResult) -> list[str]:
    """The overall best-F1 line: micro F1 at one confidence (Ultralytics' P and R: the headline table)."""
    points = result.best_f1
    if not points:
        return []
    lines = []
    o = points["overall"]
    lines.append(
        f"  best F1 (micro, one confidence, IoU {points['iou_threshold']:g}): "
        f"F1 {_fmt(o['f1'], 4)} at confidence {_fmt(o['confidence'], 4)} "
        f"(P {_fmt(o['precision'], 4)}, R {_fmt(o['recall'], 4)})"
    )
    return lines  # Ultralytics' P and R: in the headline table (report.results)


def format_per_class_metrics(result: EvalResult) -> str:
    """``--per-class-metrics``: every per-class metric, the class's best-F1 point, overall lines."""
    extra = [k for k in (result.per_class[0] if result.per_class else {}) if k not in _BASE_KEYS]
    header = ["id", "class", "AP", *extra, "num_gt", "num_det", "best_conf", "P", "R", "F1"]
    points = {p["category_id"]: p for p in result.best_f1.get("per_class", [])}
    rows = []
    for c in result.per_class:
        p = points.get(c["category_id"], {})
        rows.append(
            [
                str(c["category_id"]),
                c["name"],
                _fmt(c["AP"], 4),
                *(_fmt(c[k], 4) for k in extra),
                str(c["num_gt"]),
                str(c["num_det"]),
                *(_fmt(p.get(k), 4) for k in ("confidence", "precision", "recall", "f1")),
            ]
        )
    table = [line.rstrip() for line in _text_table(header, rows)]
    lines = [f"\n{result.protocol.name}: per-class metrics", "", *table, ""]
    lines += format_operating_points(result)
    return "\n".join(lines) + "\n"


def _slice_name(s: SliceResult) -> str:
    return f"{s.key}={'(none)' if s.value is None else s.value}"


def format_slices_table(result: EvalResult, slices: Sequence[SliceResult]) -> str:
    """``--slice``: one row per slice (the whole dataset first): counts and headline metrics."""
    names = list(result.metrics)
    header = ["slice", "images", "gt", "dets", *names]
    inputs = result.inputs
    rows = [
        [
            "(all)",
            str(inputs.get("images", "")),
            str(inputs.get("gt_objects", "")),
            str(inputs.get("detections", "")),
            *(_fmt(result.metrics[n], 4) for n in names),
        ]
    ]
    for s in slices:
        rows.append(
            [
                _slice_name(s),
                str(s.n_images),
                str(s.n_gt),
                str(s.n_det),
                *(_fmt(s.result.metrics.get(n), 4) for n in names),
            ]
        )
    header, rows = _cells(header), [_cells(r) for r in rows]  # attribute values: terminal-safe
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    table = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    table.append("  ".join("-" * w for w in widths))
    for r in rows:  # the slice's name left-aligned, numbers right-aligned
        table.append(
            "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
        )
    lines = [f"\n{result.protocol.name}: slices", "", *table]
    return "\n".join(lines) + "\n"


def slices_json(slices: Sequence[SliceResult]) -> list:
    """The ``slices`` entry of a result in the JSON document (NaN -> null)."""
    return [s.to_dict() for s in slices]
