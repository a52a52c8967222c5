"""Renderers of evaluation results: the JSON document, table, Markdown, CSV, analysis outputs.

What ``deteval evaluate`` prints: :func:`to_json` (the JSON contract), :func:`format_table`,
:func:`format_markdown`, :func:`format_csv`, and the per-result analysis outputs (confidence
tables, exact vs raster mask modes, ``--matches`` CSV).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from deteval._version import __version__
from deteval.errors import printable
from deteval.evaluate import EvalResult
from deteval.protocol import FIELDS, Protocol
from deteval.report._format import _cells, _csv_number, _fmt, _md_escape, csv_safe
from deteval.summary import SUMMARY_TERMS
from deteval.summary import none_if_nan as _none_if_nan

if TYPE_CHECKING:  # --matches only: imported by its writer (deteval evaluate needs no analysis code)
    from deteval.analysis import MatchColumns

__all__ = [
    "to_json",
    "dumps",
    "describe_protocol",
    "format_table",
    "format_markdown",
    "format_csv",
    "format_confidence_table",
    "format_mask_mode_comparison",
    "confidence_json",
    "mask_mode_json",
    "format_matches_csv",
]


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
        f"protocol {printable(p.name)} [{p.fingerprint()}]: {printable(p.source)}\n"
        f"  iou_type={p.iou_type} iou={thr} {p.iou_comparison} matching={p.matching} "
        f"boxes={p.box_convention} ap={p.ap_method} areas={areas} max_dets={p.max_dets} "
        f"difficult={p.difficult} crowd={p.crowd}"
        + (f" score_ties={p.score_ties}" if p.score_ties != FIELDS["score_ties"].default else "")
    )


def _headline_terms(p: Protocol) -> dict[str, tuple[str, float | None, str, int | None]]:
    """Each headline metric's (kind, IoU threshold or None for all, area, max_det) as it is computed.

    pycocotools' and configured summaries by their terms (:mod:`deteval.summary`); keypoints'
    ``_summarizeKps`` at maxDets 20; lvis-api's numbers at the largest ``max_dets``, the area rows
    by name (APr/APc/APf: a frequency group of classes, all areas); Ultralytics' ``mAP50`` at the
    first threshold and ``mAP50-95`` over all of them.
    """
    areas = {"s": "small", "m": "medium", "l": "large"}
    top = p.max_dets[-1] if p.max_dets else None
    first = p.area_names[0]
    if p.summary in SUMMARY_TERMS and not (p.summary == "pycocotools" and p.iou_type == "keypoints"):
        return {t.name: (t.kind, t.iou_threshold, t.area, t.max_det) for t in SUMMARY_TERMS[p.summary](p)}
    if p.summary == "ultralytics":
        return {"mAP50": ("AP", p.iou_thresholds[0], first, top), "mAP50-95": ("AP", None, first, top)}
    out = {}
    names: tuple[str, ...] = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")
    if p.summary == "crowdpose":  # xtcocotools' _summarizeKps_crowd, every number at maxDets 20
        names = ("AP", "AP50", "AP75", "AR", "AR50", "AR75", "AP(E)", "AP(M)", "AP(H)")
    if p.summary == "lvis":
        label = "all" if top is None else top
        names = ("AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf")
        names += tuple(f"AR{a}@{label}" for a in ("", "s", "m", "l"))
    for name in names:
        base = name.partition("@")[0]
        threshold = {"50": 0.5, "75": 0.75}.get(base[2:])
        area = areas.get(base[2:], "all")
        out[name] = (base[:2], threshold, area, top if p.summary == "lvis" else 20)
    return out


def _metric_lines(result: EvalResult) -> list[str]:
    p = result.protocol
    if "mAP" in result.metrics:
        return [f"  mAP = {_fmt(result.metrics['mAP'], 4)}"]
    thresholds = p.iou_thresholds
    all_thr = f"{thresholds[0]:.2f}:{thresholds[-1]:.2f}"
    terms = _headline_terms(p)
    lines = []
    for name, value in result.metrics.items():
        kind, threshold, area, max_det = terms[name]
        title = "Average Precision" if kind == "AP" else "Average Recall"
        iou = all_thr if threshold is None else f"{threshold:.2f}"
        md = "all" if max_det is None else str(max_det)
        # xtcocotools' keypoints_crowd lines name the crowd-index band: "type=  easy"
        where = f"type={_CROWD_BANDS[name]:>6s}" if name in _CROWD_BANDS else f"area={area:>6s}"
        lines.append(
            f"  {title:<18} ({kind}) @[ IoU={iou:<9} | {where} | maxDets={md:>3s} ] = {_fmt(value)}   {name}"
        )
    return lines


#: ``summary: crowdpose``'s band metrics and the band names xtcocotools prints.
_CROWD_BANDS = {"AP(E)": "easy", "AP(M)": "medium", "AP(H)": "hard"}


def _ultralytics_line(result: EvalResult) -> list[str]:
    """``summary: ultralytics``: the P and R ``yolo val`` prints (``best_f1["ultralytics"]``)."""
    point = result.best_f1.get("ultralytics")
    if point is None:
        return []
    return [
        f"  P = {_fmt(point['precision'], 4)}  R = {_fmt(point['recall'], 4)}  (Ultralytics: mean over "
        f"classes at the max mean F1, confidence {_fmt(point['confidence'], 4)})"
    ]


def _per_class_rows(result: EvalResult) -> list[list[str]]:
    return [
        [str(c["category_id"]), c["name"], _fmt(c["AP"], 4), str(c["num_gt"]), str(c["num_det"])]
        for c in result.per_class
    ]


def _text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    header, rows = _cells(header), [_cells(r) for r in rows]
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
        lines += _ultralytics_line(r)
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
        f"\n{printable(result.protocol.name)}: detections with score >= {threshold:g} at IoU {iou:g}",
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
        f"\n{printable(protocol.name)}: exact polygon IoU vs raster (pycocotools) IoU",
        "",
        *_text_table(["metric", "exact", "raster", "exact-raster"], rows),
        "",
        f"outcomes changed: {comparison.n_changed} of {comparison.n_outcomes} (lane x detection); "
        f"matches changed: {comparison.n_matches_changed}; detections affected: "
        f"{comparison.n_detections_changed}",
        f"changed per IoU threshold (area all): {thresholds or 'none'}",
    ]
    if comparison.n_gt_rle or comparison.n_det_rle:
        lines.append(
            f"RLE masks are rasters in both modes (only polygon-polygon pairs can change): "
            f"{comparison.n_gt_rle} of {comparison.n_gt_masks} ground-truth masks, "
            f"{comparison.n_det_rle} of {comparison.n_det_masks} detection masks"
        )
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
        "n_gt_rle": comparison.n_gt_rle,
        "n_det_rle": comparison.n_det_rle,
    }


_MATCHES_HEADER = "detection,image_id,category_id,category,score,outcome,gt_annotation_id\n"

#: Rows of the ``--matches`` CSV assembled at a time (bounds the byte matrices to a few MB).
_MATCHES_CHUNK_ROWS = 1 << 16


def format_matches_csv(result: EvalResult, rows: MatchColumns | Sequence[Mapping]) -> str:
    """``--matches``: one CSV row per scored detection.

    Parameters
    ----------
    result : EvalResult
    rows : MatchColumns or sequence of dict
        :func:`deteval.analysis.match_columns` (fast: no Python object per detection), or the
        rows of :func:`deteval.analysis.matches` (the same text).

    Returns
    -------
    str
        ``detection,image_id,category_id,category,score,outcome,gt_annotation_id`` then one line
        per detection; a score is written as Python's ``repr`` of the float.

    Examples
    --------
    >>> import deteval
    >>> from deteval.analysis import match_columns, matches
    >>> gt = {"images": [{"id": 7}], "categories": [{"id": 3, "name": "cat, wild"}],
    ...       "annotations": [{"id": 9, "image_id": 7, "category_id": 3, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 7, "category_id": 3, "bbox": [0, 0, 10, 10], "score": 0.5},
    ...       {"image_id": 7, "category_id": 3, "bbox": [50, 50, 10, 10], "score": 1e-05}]
    >>> r = deteval.evaluate(gt, dt, "voc2010")
    >>> print(format_matches_csv(r, match_columns(r)), end="")
    detection,image_id,category_id,category,score,outcome,gt_annotation_id
    0,7,3,"cat, wild",0.5,tp,9
    1,7,3,"cat, wild",1e-05,fp,
    >>> format_matches_csv(r, match_columns(r)) == format_matches_csv(r, matches(r))
    True
    """
    # The name is the one field csv quoting can touch: encode it once per category; the other
    # fields (integers, repr of floats, fixed words) never need quoting.
    from deteval.analysis import MatchColumns, match_rows

    name_field = {}
    for category_id, name in zip(result.category_ids, result.category_names):
        one = io.StringIO()
        csv.writer(one, lineterminator="").writerow([csv_safe(name)])
        name_field[category_id] = one.getvalue()
    if isinstance(rows, MatchColumns):
        text = _matches_csv_columns(result, rows, name_field)
        if text is not None:
            return text.decode("utf-8")
        rows = match_rows(result, rows)
    buf = io.StringIO()
    buf.write(_MATCHES_HEADER)
    buf.writelines(
        f"{m['detection']},{m['image_id']},{m['category_id']},{name_field[m['category_id']]},"
        f"{m['score']!r},{m['outcome']},{'' if m['gt_annotation_id'] is None else m['gt_annotation_id']}\n"
        for m in rows
    )
    return buf.getvalue()


def _text_field(texts: Sequence[str]) -> np.ndarray:
    """UTF-8 of ``texts``, left-aligned and NUL-padded: uint8 (n, width)."""
    encoded = [t.encode("utf-8") for t in texts]
    width = max((len(b) for b in encoded), default=0)
    data = np.frombuffer(b"".join(b.ljust(width, b"\0") for b in encoded), dtype=np.uint8)
    return data.reshape(len(encoded), width)


def _integer_field(values: np.ndarray) -> np.ndarray:
    """``str`` of each int64 of ``values`` in ASCII, right-aligned and NUL-padded: uint8 (n, width)."""
    values = np.asarray(values, dtype=np.int64)
    is_negative = values < 0
    magnitude = values.view(np.uint64).copy()
    # Two's complement: |v| for every int64, its minimum included (np.abs would overflow).
    magnitude[is_negative] = ~magnitude[is_negative] + np.uint64(1)
    n_digits = len(str(int(magnitude.max()))) if len(values) else 1
    width = n_digits + int(is_negative.any())
    data = np.zeros((len(values), width), dtype=np.uint8)
    # 32-bit division is several times faster, and ids and indices mostly fit.
    rest = magnitude.astype(np.uint32) if n_digits < 10 else magnitude
    ten = rest.dtype.type(10)
    for j in range(width - 1, width - 1 - n_digits, -1):
        rest, digit = np.divmod(rest, ten)
        data[:, j] = digit.astype(np.uint8) + ord("0")
        if j < width - 1:  # a leading zero is no digit (0 itself is "0")
            data[(rest == 0) & (digit == 0), j] = 0
    if is_negative.any():
        sign_at = width - 1 - np.count_nonzero(data[is_negative], axis=1)
        data[np.flatnonzero(is_negative), sign_at] = ord("-")
    return data


def _matches_csv_columns(result: EvalResult, columns: MatchColumns, name_field: Mapping) -> bytes | None:
    """The ``--matches`` CSV of ``columns`` as UTF-8, assembled from per-column byte tables.

    Each column is a small table of texts (one per image, category, distinct score, outcome,
    annotation; the detection index its own) whose rows are taken into one NUL-padded byte
    matrix per chunk of rows; dropping the NULs leaves the lines: no Python object per
    detection. The texts are those of the row writer (``str`` of integers, ``repr`` of the
    float score). None when a category's name holds a NUL character (the row writer then).
    """
    from deteval.analysis import OUTCOME_WORDS

    category_texts = [f"{c},{name_field[c]}" for c in result.category_ids]
    if any("\0" in text for text in category_texts):
        return None
    image_ids = np.asarray(result.image_ids, dtype=np.int64)
    annotation_ids = np.asarray(result.annotation_ids, dtype=np.int64)
    # Distinct scores by their bits: -0.0 and 0.0 print apart.
    score_bits, score_row = np.unique(columns.score.view(np.uint64), return_inverse=True)
    annotation = _integer_field(annotation_ids)
    # (table, the table row of each detection or None: the detection's own row), separator after.
    fields = [
        (_integer_field(columns.detection), None, ord(",")),
        (_integer_field(image_ids), columns.image_row, ord(",")),
        (_text_field(category_texts), columns.class_index, ord(",")),
        (_text_field([repr(x) for x in score_bits.view(np.float64).tolist()]), score_row, ord(",")),
        (_text_field(OUTCOME_WORDS), columns.outcome, ord(",")),
        # a last row of NULs: no ground truth matched, an empty field
        (
            np.vstack([annotation, np.zeros((1, annotation.shape[1]), dtype=np.uint8)]),
            np.where(columns.has_gt, columns.gt_row, len(annotation_ids)),
            ord("\n"),
        ),
    ]
    row_width = sum(table.shape[1] + 1 for table, _, _ in fields)
    n = len(columns.detection)
    chunks = [_MATCHES_HEADER.encode("utf-8")]
    for lo in range(0, n, _MATCHES_CHUNK_ROWS):
        hi = min(n, lo + _MATCHES_CHUNK_ROWS)
        data = np.empty((hi - lo, row_width), dtype=np.uint8)
        at = 0
        for table, table_row, separator in fields:
            w = table.shape[1]
            if table_row is None:
                data[:, at : at + w] = table[lo:hi]
            else:
                data[:, at : at + w] = np.take(table, table_row[lo:hi], axis=0)
            data[:, at + w] = separator
            at += w + 1
        flat = data.ravel()
        chunks.append(np.compress(flat != 0, flat).tobytes())
    return b"".join(chunks)
