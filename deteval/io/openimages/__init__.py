"""Open Images challenge files: boxes, image-level labels, the class hierarchy, submissions.

The formats of the challenge (https://storage.googleapis.com/openimages/web/challenge.html):

- boxes: ``ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,
  IsGroupOf,IsDepiction,IsInside`` with coordinates normalised to [0, 1] (columns found by name;
  ``ImageID``, ``LabelName``, ``XMin``, ``XMax``, ``YMin``, ``YMax``, ``IsGroupOf`` required);
- image-level labels: ``ImageID,Source,LabelName,Confidence`` (1 verified present, 0 verified
  absent), or a COCO JSON whose image records carry ``pos_labels`` / ``neg_labels`` (lists of
  category ids, named by the categories' ``name``);
- the hierarchy JSON: ``{"LabelName": ..., "Subcategory": [...]}``;
- a submission: ``ImageID,LabelName,Score,XMin,YMin,XMax,YMax`` rows, or Kaggle's
  ``ImageId,PredictionString`` with ``LabelName Score XMin YMin XMax YMax`` repeated.

Every error names the file, the line and the column, and says what was expected.
"""

from __future__ import annotations

import csv
import io
import math
import os
from typing import Any

import numpy as np

from deteval._safe_read import MAX_BYTES, decode_text, line_of, loads_strict, read_bytes
from deteval.data import Detections, GroundTruth
from deteval.errors import InputError, shorten
from deteval.io import is_openimages_csv as is_openimages_csv  # defined with the other format checks
from deteval.openimages import ClassHierarchy, ImageLevelLabels, build_hierarchy

__all__ = [
    "read_hierarchy",
    "read_image_labels",
    "read_boxes",
    "read_predictions",
    "is_openimages_csv",
    "BOX_COLUMNS",
    "PREDICTION_COLUMNS",
]

BOX_COLUMNS = ("ImageID", "LabelName", "XMin", "XMax", "YMin", "YMax", "IsGroupOf")
LABEL_COLUMNS = ("ImageID", "LabelName", "Confidence")
PREDICTION_COLUMNS = ("ImageID", "LabelName", "Score", "XMin", "YMin", "XMax", "YMax")
KAGGLE_COLUMNS = ("ImageId", "PredictionString")


def _text(raw: bytes, path: str, what: str) -> str:
    """UTF-8 text of a CSV file (:func:`deteval._safe_read.decode_text`: a BOM skipped)."""
    return decode_text(raw, path, what=what)


def _rows(path: str, what: str, required: tuple[str, ...]) -> tuple[list[str], list[tuple[int, dict]]]:
    """Header and (line, row) of a CSV file, each row checked for its cell count."""
    text = _text(read_bytes(path, what=what, limit=MAX_BYTES["text"]), path, what)
    if "\x00" in text:
        raise InputError(f"{path}:{line_of(text, text.index(chr(0)))}: a NUL byte; expected {what}")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(
            f"{path}: empty file; expected {what} with the header {','.join(required)}"
        ) from None
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(
            f"{path}:1: header has no column {missing[0]!r}; expected {what} with the columns "
            f"{','.join(required)}, found {shorten(','.join(header), 120)}"
        )
    rows = []
    for row in reader:
        line = reader.line_num
        if not row:
            continue
        if len(row) != len(header):
            raise InputError(
                f"{path}:{line}: {len(row)} cells; expected {len(header)} as the header has "
                "(a truncated or damaged line?)"
            )
        rows.append((line, dict(zip(header, row))))
    return header, rows


def _float(row: dict, column: str, path: str, line: int) -> float:
    text = row[column]
    try:
        value = float(text)
    except ValueError:
        value = math.nan
        bad = True
    else:
        bad = not math.isfinite(value)
    if bad:
        raise InputError(f"{path}:{line}: column {column}: expected a finite number, found {shorten(text)}")
    return value


def _flag(row: dict, column: str, path: str, line: int) -> bool:
    text = row[column].strip()
    if text not in ("0", "1"):
        raise InputError(
            f"{path}:{line}: column {column}: expected 0 or 1, found {shorten(text)}"
            + (
                " (Open Images writes -1 for 'unknown'; a group-of flag must be known)"
                if text == "-1"
                else ""
            )
        )
    return text == "1"


def _name(row: dict, column: str, path: str, line: int) -> str:
    text = row[column].strip()
    if not text:
        raise InputError(f"{path}:{line}: column {column} is empty; expected a name")
    return text


def read_hierarchy(path: str | os.PathLike) -> ClassHierarchy:
    """Read the challenge's hierarchy JSON (``--hierarchy``).

    Raises
    ------
    InputError
        Unreadable or invalid JSON, a node of the wrong shape, a cycle (see
        :func:`deteval.openimages.build_hierarchy`).
    """
    path = os.fspath(path)
    raw = read_bytes(path, what="the class hierarchy JSON", limit=MAX_BYTES["json"])
    return build_hierarchy(loads_strict(raw, path), source=path)


def read_image_labels(path: str | os.PathLike) -> ImageLevelLabels:
    """Read verified image-level labels (``--image-labels``): the challenge CSV or a COCO JSON.

    Raises
    ------
    InputError
        A missing column, a ``Confidence`` other than 0 or 1, an empty name; in a COCO JSON,
        ``pos_labels`` / ``neg_labels`` that are not lists of category ids.
    """
    path = os.fspath(path)
    if path.lower().endswith(".json"):
        return _coco_image_labels(path)
    _, rows = _rows(path, "an image-level labels CSV", LABEL_COLUMNS)
    images, labels, positive, lines = [], [], [], []
    for line, row in rows:
        images.append(_name(row, "ImageID", path, line))
        labels.append(_name(row, "LabelName", path, line))
        positive.append(_flag(row, "Confidence", path, line))
        lines.append(line)
    return ImageLevelLabels(
        tuple(images), tuple(labels), np.asarray(positive, bool), source=path, line=tuple(lines)
    )


def _coco_image_labels(path: str) -> ImageLevelLabels:
    data = loads_strict(
        read_bytes(path, what="a COCO JSON with pos_labels/neg_labels", limit=MAX_BYTES["json"]), path
    )
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise InputError(f"{path}: expected a COCO JSON object with an `images` array")
    names = {}
    for i, cat in enumerate(data.get("categories") or []):
        if (
            not isinstance(cat, dict)
            or not isinstance(cat.get("id"), int)
            or not isinstance(cat.get("name"), str)
        ):
            raise InputError(f"{path}: categories[{i}]: expected an object with an integer `id` and a `name`")
        names[cat["id"]] = cat["name"]
    images, labels, positive = [], [], []
    for i, image in enumerate(data["images"]):
        if not isinstance(image, dict):
            raise InputError(f"{path}: images[{i}]: expected an object, found {type(image).__name__}")
        image_name = image.get("file_name") if isinstance(image.get("file_name"), str) else None
        if image_name is None:
            image_name = str(image.get("id"))
        for key, is_pos in (("pos_labels", True), ("neg_labels", False)):
            ids = image.get(key, [])
            if not isinstance(ids, list) or not all(
                isinstance(c, int) and not isinstance(c, bool) for c in ids
            ):
                raise InputError(
                    f"{path}: images[{i}] (id {shorten(image.get('id'))}): `{key}`: expected a list of "
                    f"category ids, found {shorten(ids)}"
                )
            for c in ids:
                if c not in names:
                    raise InputError(
                        f"{path}: images[{i}] (id {shorten(image.get('id'))}): `{key}` names category id {c}, "
                        "which `categories` does not list; expected ids of the categories"
                    )
                images.append(image_name)
                labels.append(names[c])
                positive.append(is_pos)
    return ImageLevelLabels(tuple(images), tuple(labels), np.asarray(positive, bool), source=path)


def read_boxes(
    path: str | os.PathLike,
    *,
    image_labels: ImageLevelLabels | None = None,
    hierarchy: ClassHierarchy | None = None,
) -> GroundTruth:
    """Read the challenge's ground-truth boxes CSV as a :class:`GroundTruth` (normalised xyxy).

    Images are those of the boxes and of ``image_labels`` (an image with labels but no box
    is an image without objects); categories are every ``LabelName`` of the boxes, the labels
    and the hierarchy, ids 1..K in sorted name order.

    Raises
    ------
    InputError
        A missing column, a non-finite coordinate, ``XMin > XMax`` or ``YMin > YMax``, an
        ``IsGroupOf`` other than 0 or 1.
    """
    path = os.fspath(path)
    _, rows = _rows(path, "an Open Images boxes CSV", BOX_COLUMNS)
    images, cats, boxes, group = [], [], [], []
    for line, row in rows:
        images.append(_name(row, "ImageID", path, line))
        cats.append(_name(row, "LabelName", path, line))
        xmin, xmax = _float(row, "XMin", path, line), _float(row, "XMax", path, line)
        ymin, ymax = _float(row, "YMin", path, line), _float(row, "YMax", path, line)
        if xmin > xmax or ymin > ymax:
            raise InputError(
                f"{path}:{line}: box XMin {xmin} XMax {xmax} YMin {ymin} YMax {ymax}: expected "
                "XMin <= XMax and YMin <= YMax (the columns are XMin,XMax,YMin,YMax)"
            )
        boxes.append((xmin, ymin, xmax, ymax))
        group.append(_flag(row, "IsGroupOf", path, line))
    image_names = set(images)
    category_names = set(cats)
    if image_labels is not None:
        image_names |= set(image_labels.image_name)
        category_names |= set(image_labels.label)
    if hierarchy is not None:
        category_names |= set(hierarchy.labels)
    image_table = sorted(image_names)
    category_table = sorted(category_names)
    image_index = {n: i for i, n in enumerate(image_table)}
    category_index = {n: i for i, n in enumerate(category_table)}
    box = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    n = len(images)
    return GroundTruth(
        image_id=np.arange(len(image_table), dtype=np.int64),
        image_name=tuple(image_table),
        image_width=np.ones(len(image_table)),
        image_height=np.ones(len(image_table)),
        category_id=np.arange(1, len(category_table) + 1, dtype=np.int64),
        category_name=tuple(category_table),
        annotation_id=np.arange(1, n + 1, dtype=np.int64),
        image=np.asarray([image_index[i] for i in images], dtype=np.int64),
        category=np.asarray([category_index[c] for c in cats], dtype=np.int64),
        box=box,
        area=(box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1]),
        is_crowd=np.zeros(n, bool),
        is_difficult=np.zeros(n, bool),
        is_ignore=np.zeros(n, bool),
        box_format="xyxy",
        source=path,
        is_group_of=np.asarray(group, dtype=bool),
        has_image_ids=False,
    )


def read_predictions(path: str | os.PathLike, gt: GroundTruth) -> Detections:
    """Read a challenge submission against ``gt`` (from :func:`read_boxes`).

    Raises
    ------
    InputError
        Neither header, a non-finite score or coordinate, a box with ``XMin > XMax`` or
        ``YMin > YMax``, an image or class the ground truth does not have (the count and the
        first five).

    Notes
    -----
    Boxes with ``XMin == XMax`` or ``YMin == YMax`` are dropped, with a counted warning: the TF
    API's ``per_image_evaluation._remove_invalid_boxes`` drops them before matching.
    """
    path = os.fspath(path)
    text_head = _text(
        read_bytes(path, what="an Open Images submission CSV", limit=MAX_BYTES["text"]), path, "a CSV"
    )
    first = text_head.split("\n", 1)[0].strip().split(",")
    records: list[tuple[Any, ...]] = []  # (line, image, label, score, xmin, ymin, xmax, ymax)
    if all(c in first for c in KAGGLE_COLUMNS) and "LabelName" not in first:
        _, rows = _rows(path, "a submission CSV (ImageId,PredictionString)", KAGGLE_COLUMNS)
        for line, row in rows:
            image = _name(row, "ImageId", path, line)
            cells = row["PredictionString"].split()
            if len(cells) % 6:
                raise InputError(
                    f"{path}:{line}: column PredictionString: {len(cells)} values; expected groups of "
                    "6 (LabelName Score XMin YMin XMax YMax)"
                )
            for k in range(0, len(cells), 6):
                group = dict(zip(("LabelName", "Score", "XMin", "YMin", "XMax", "YMax"), cells[k : k + 6]))
                values = [_float(group, c, path, line) for c in ("Score", "XMin", "YMin", "XMax", "YMax")]
                records.append((line, image, group["LabelName"], *values))
    else:
        _, rows = _rows(path, "a submission CSV", PREDICTION_COLUMNS)
        for line, row in rows:
            values = [_float(row, c, path, line) for c in ("Score", "XMin", "YMin", "XMax", "YMax")]
            records.append(
                (line, _name(row, "ImageID", path, line), _name(row, "LabelName", path, line), *values)
            )
    image_index = {str(n): i for i, n in enumerate(gt.image_name)}
    category_index = {n: i for i, n in enumerate(gt.category_name)}
    unknown_images = [f"{r[1]} (line {r[0]})" for r in records if r[1] not in image_index]
    if unknown_images:
        raise InputError(
            f"{path}: {len(unknown_images)} detections on images the ground truth {gt.source} does "
            f"not have (first: {', '.join(unknown_images[:5])}); expected the submission for its image set"
        )
    unknown_labels = [f"{r[2]} (line {r[0]})" for r in records if r[2] not in category_index]
    if unknown_labels:
        raise InputError(
            f"{path}: {len(unknown_labels)} detections of classes the ground truth and hierarchy do "
            f"not have (first: {', '.join(unknown_labels[:5])}); expected LabelName MIDs of the challenge"
        )
    for r in records:
        if r[4] > r[6] or r[5] > r[7]:
            raise InputError(
                f"{path}:{r[0]}: box XMin {r[4]} YMin {r[5]} XMax {r[6]} YMax {r[7]}: expected "
                "XMin <= XMax and YMin <= YMax"
            )
    kept = [r for r in records if r[4] < r[6] and r[5] < r[7]]
    warnings: tuple[str, ...] = ()
    if len(kept) < len(records):
        warnings = (
            f"{path}: {len(records) - len(kept)} detections with zero width or height dropped, "
            "as the TF API's _remove_invalid_boxes does",
        )
    n = len(kept)
    return Detections(
        image=np.asarray([image_index[r[1]] for r in kept], dtype=np.int32),
        category=np.asarray([category_index[r[2]] for r in kept], dtype=np.int32),
        box=np.asarray([r[4:8] for r in kept], dtype=np.float64).reshape(-1, 4),
        score=np.asarray([r[3] for r in kept], dtype=np.float64),
        order=np.arange(n, dtype=np.int32),
        has_box=np.ones(n, bool),
        box_format="xyxy",
        source=path,
        warnings=warnings,
    )
