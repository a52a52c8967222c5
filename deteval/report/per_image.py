"""Renderers of the per-image diagnostics: ``--per-image`` CSV and ``--matches`` explained CSV.

The ``--matches`` CSV is assembled from per-column byte tables as
:func:`deteval.report.results.format_matches_csv` does (no Python object per detection): its
first seven columns are that writer's text, byte for byte, and the explaining columns follow.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import numpy as np

from deteval.evaluate import EvalResult
from deteval.per_image import ERROR_WORDS, MATCH_OUTCOME_WORDS, ExplainedMatches, PerImage
from deteval.report._format import _csv_number, csv_safe
from deteval.report.results import _MATCHES_CHUNK_ROWS, _integer_field, _text_field

__all__ = ["format_per_image_csv", "format_explained_matches_csv", "PER_IMAGE_COLUMNS"]

#: The ``--per-image`` CSV columns.
PER_IMAGE_COLUMNS = (
    "protocol",
    "rank",
    "image_id",
    "file_name",
    "tp",
    "fp",
    "fn",
    "ignored",
    "f1",
    "cls",
    "loc",
    "both",
    "dupe",
    "bkg",
    "miss",
    "ap_gain",
)


def format_per_image_csv(results: Sequence[EvalResult], per_images: Sequence[PerImage]) -> str:
    """``--per-image``: one row per image and protocol, each protocol's images by ``ap_gain``.

    Empty cells: an undefined F1 (an image with neither ground truth nor detection) or AP gain.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(PER_IMAGE_COLUMNS)
    for result, p in zip(results, per_images, strict=True):
        name = csv_safe(result.protocol.name)
        for row in p.rows():
            writer.writerow(
                [name if key == "protocol" else _cell(key, row[key]) for key in PER_IMAGE_COLUMNS]
            )
    return buf.getvalue()


def _cell(key: str, value: object) -> object:
    if key == "file_name":
        return csv_safe(str(value))
    if key in ("f1", "ap_gain"):
        return _csv_number(value)  # type: ignore[arg-type]
    return value


def _float_field(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(texts table, row of each value): ``repr`` of each float, NaN an empty field."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    bits, row = np.unique(values.view(np.uint64), return_inverse=True)
    texts = ["" if v != v else repr(v) for v in bits.view(np.float64).tolist()]
    return _text_field(texts), row


def _with_empty(table: np.ndarray, rows: np.ndarray, is_empty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``table`` with a last row of NULs, which the ``is_empty`` rows take (an empty field)."""
    padded = np.vstack([table, np.zeros((1, table.shape[1]), dtype=np.uint8)])
    return padded, np.where(is_empty, len(table), rows)


def _assemble(fields: list, n: int) -> bytes:
    """Lines from ``(table, table row of each line)`` fields, comma-separated, a newline each."""
    row_width = sum(table.shape[1] + 1 for table, _ in fields)
    chunks = []
    for lo in range(0, n, _MATCHES_CHUNK_ROWS):
        hi = min(n, lo + _MATCHES_CHUNK_ROWS)
        data = np.empty((hi - lo, row_width), dtype=np.uint8)
        at = 0
        for i, (table, table_row) in enumerate(fields):
            w = table.shape[1]
            data[:, at : at + w] = np.take(table, table_row[lo:hi], axis=0)
            data[:, at + w] = ord("\n") if i == len(fields) - 1 else ord(",")
            at += w + 1
        flat = data.ravel()
        chunks.append(np.compress(flat != 0, flat).tobytes())
    return b"".join(chunks)


def format_explained_matches_csv(result: EvalResult, m: ExplainedMatches) -> str:
    """``--matches``: every scored detection explained, then every missed object.

    Columns (:meth:`ExplainedMatches.column_names`): ``detection, image_id, category_id,
    category, score, outcome, gt_annotation_id`` (as before), ``x, y, w, h`` (the box),
    ``outcome_50, outcome_55, ...`` (one per IoU threshold), ``iou, best_iou, best_gt,
    best_gt_category, error``. A missed object's row has ``outcome`` ``fn``, no detection and no
    score, its own box and annotation id. Numbers are Python's ``repr`` of the float.
    """
    names = []
    for name in result.category_names:
        one = io.StringIO()
        csv.writer(one, lineterminator="").writerow([csv_safe(name)])
        names.append(one.getvalue())
    category_texts = [f"{c},{n}" for c, n in zip(result.category_ids, names, strict=True)]
    if any("\0" in text for text in category_texts):  # the byte tables drop NULs: rows one by one
        return _explained_rows_csv(result, m)
    image_ids = _integer_field(np.asarray(result.image_ids, dtype=np.int64))
    annotation_ids = _integer_field(np.asarray(result.annotation_ids, dtype=np.int64))
    category_ids = _integer_field(np.asarray(result.category_ids, dtype=np.int64))
    categories = _text_field(category_texts)
    outcome_words = _text_field(MATCH_OUTCOME_WORDS)
    c = m.columns
    n_det, n_miss = len(c.detection), len(m.missed_gt_row)

    def explaining(box, outcomes, iou, best_iou, best_gt, best_class, error_texts, error_rows) -> list:
        out = [_float_field(box[:, j]) for j in range(4)]
        out += [(outcome_words, outcomes[j].astype(np.int64)) for j in range(len(m.iou_thresholds))]
        out += [_float_field(iou), _float_field(best_iou)]
        out.append(_with_empty(annotation_ids, np.maximum(best_gt, 0), best_gt < 0))
        out.append(_with_empty(category_ids, np.maximum(best_class, 0), best_gt < 0))
        out.append((_text_field(error_texts), error_rows))
        return out

    nothing = np.zeros(0, dtype=np.int64)
    empty = (np.zeros((1, 0), dtype=np.uint8), nothing)
    detection_fields = [
        (_integer_field(c.detection), np.arange(n_det)),
        (image_ids, c.image_row),
        (categories, c.class_index),
        _float_field(c.score),
        (outcome_words, c.outcome.astype(np.int64)),
        _with_empty(annotation_ids, np.maximum(c.gt_row, 0), ~c.has_gt),
        *explaining(
            m.box,
            m.outcome_by_threshold,
            m.iou,
            m.best_iou,
            m.best_gt_row,
            m.best_gt_class,
            ERROR_WORDS,
            m.error.astype(np.int64),
        ),
    ]
    no_value = np.full(n_miss, np.nan)
    missed_fields = [
        (empty[0], np.zeros(n_miss, dtype=np.int64)),
        (image_ids, m.missed_image_row),
        (categories, m.missed_class_index),
        (empty[0], np.zeros(n_miss, dtype=np.int64)),
        (outcome_words, np.full(n_miss, MATCH_OUTCOME_WORDS.index("fn"), dtype=np.int64)),
        (annotation_ids, m.missed_gt_row),
        *explaining(
            m.missed_box,
            m.missed_outcome_by_threshold,
            no_value,
            no_value,
            np.full(n_miss, -1),
            np.full(n_miss, -1),
            ("", "miss"),
            m.missed_is_miss.astype(np.int64),
        ),
    ]
    header = ",".join(m.column_names()) + "\n"
    body = _assemble(detection_fields, n_det) + _assemble(missed_fields, n_miss)
    return header + body.decode("utf-8")


def _explained_rows_csv(result: EvalResult, m: ExplainedMatches) -> str:
    """The same text, one row at a time (a category name with a NUL character)."""
    columns = m.column_names()
    buf = io.StringIO()
    buf.write(",".join(columns) + "\n")
    writer = csv.writer(buf, lineterminator="\n")
    for row in m.rows(result):
        cells = []
        for key in columns:
            value = row[key]
            if value is None:
                cells.append("")
            elif key == "category":
                cells.append(csv_safe(value))
            elif isinstance(value, float):
                cells.append(repr(value))
            else:
                cells.append(value)
        writer.writerow(cells)
    return buf.getvalue()
