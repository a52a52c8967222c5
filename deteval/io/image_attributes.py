"""Image attributes for slices: the extra fields of COCO image records, or a CSV / JSON side file.

An attribute is any field of an image other than its id (``weather``, ``camera``,
``file_name``, ``width`` ...). :func:`coco_image_attributes` reads them from a COCO ground
truth's ``images``; :func:`read_image_attributes` from a side file that maps each image (by
``image_id`` or ``file_name``) to its attributes:

* CSV: a header row with an ``image_id`` or ``file_name`` column and one column per
  attribute; values are the cells' text (an empty cell: no value);
* JSON: an object ``{"<image_id or file_name>": {"attribute": value, ...}, ...}`` (a key of
  digits names an image id and a name: VOC ids such as ``"000001"``), or an array of objects
  each with ``image_id`` or ``file_name`` and the attributes.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from deteval._safe_read import MAX_BYTES, decode_text, loads_strict, read_bytes
from deteval.data import ImageAttributes
from deteval.errors import InputError, shorten
from deteval.io._records import json_type

__all__ = ["ImageAttributes", "coco_image_attributes", "read_image_attributes", "merge_attributes"]

#: The columns that name an image in a side file.
IMAGE_KEYS = ("image_id", "file_name")


def merge_attributes(first: ImageAttributes | None, second: ImageAttributes | None) -> ImageAttributes | None:
    """Both tables (``second``'s values win for an attribute both give an image)."""
    if first is None or second is None:
        return first if second is None else second
    by_id = {k: dict(v) for k, v in first.by_id.items()}
    for k, v in second.by_id.items():
        by_id.setdefault(k, {}).update(v)
    by_name = {k: dict(v) for k, v in first.by_name.items()}
    for k, v in second.by_name.items():
        by_name.setdefault(k, {}).update(v)
    return ImageAttributes(by_id=by_id, by_name=by_name, source=f"{first.source} + {second.source}")


def coco_image_attributes(source: Any, *, name: str = "<ground truth>") -> ImageAttributes | None:
    """The fields other than ``id`` of a COCO ground truth's image records (a path or the dict).

    None when ``source`` is not a COCO JSON file or dict (a VOC root, a YOLO dataset, values).

    Examples
    --------
    >>> gt = {"images": [{"id": 1, "weather": "rain"}, {"id": 2}], "annotations": [], "categories": []}
    >>> coco_image_attributes(gt).by_id
    {1: {'weather': 'rain'}, 2: {}}
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isfile(path) or not path.lower().endswith(".json"):
            return None
        data = loads_strict(read_bytes(path, what="a JSON file", limit=MAX_BYTES["json"]), path)
        name = path
    elif isinstance(source, dict):
        data = source
    else:
        return None
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        return None  # the ground-truth loader names what is wrong with it
    by_id = {}
    for record in images:
        if (
            isinstance(record, dict)
            and isinstance(record.get("id"), int)
            and not isinstance(record["id"], bool)
        ):
            by_id[record["id"]] = {k: v for k, v in record.items() if k != "id"}
    return ImageAttributes(by_id=by_id, source=name)


def read_image_attributes(path: str) -> ImageAttributes:
    """Read a CSV or JSON side file of image attributes (``--image-attributes``).

    Raises
    ------
    InputError
        Unreadable file, no ``image_id`` / ``file_name`` column, an image named twice, an
        ``image_id`` that is not an integer, or a JSON document of another shape.
    """
    path = os.fspath(path)
    raw = read_bytes(path, what="a CSV or JSON file of image attributes", limit=MAX_BYTES["json"])
    if path.lower().endswith(".json"):
        return _from_json(loads_strict(raw, path), path)
    return _from_csv(raw, path)


def _image_key(record: dict, where: str) -> tuple[str, Any]:
    if "image_id" in record:
        value = record["image_id"]
        if isinstance(value, str):
            text = value.strip()
            if text.lstrip("-").isdigit():
                return "image_id", int(text)
        elif isinstance(value, int) and not isinstance(value, bool):
            return "image_id", value
        raise InputError(
            f"{where}: `image_id` is not an integer; expected an image id such as 42, found "
            f"{shorten(value)} ({json_type(value)})"
        )
    value = record.get("file_name")
    if not isinstance(value, str) or not value:
        raise InputError(
            f"{where}: no image named; expected an `image_id` or `file_name` field, found "
            f"fields {shorten(sorted(record))}"
        )
    return "file_name", value


def _add(tables: dict, kind: str, key: Any, values: dict, where: str) -> None:
    table = tables[kind]
    if key in table:
        raise InputError(f"{where}: {kind} {key!r} is listed twice; expected each image once")
    table[key] = values


def _from_csv(raw: bytes, path: str) -> ImageAttributes:
    text = decode_text(raw, path, what="a UTF-8 CSV file")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    if not any(k in header for k in IMAGE_KEYS):
        raise InputError(
            f"{path}: header row: no `image_id` or `file_name` column; expected one of them and "
            f"one column per attribute, found {shorten(header)}"
        )
    tables: dict = {"image_id": {}, "file_name": {}}
    for line, row in enumerate(reader, start=2):
        where = f"{path}: line {line}"
        if None in row:
            raise InputError(f"{where}: more cells than the header's {len(header)}; expected {len(header)}")
        kind, key = _image_key({k: v for k, v in row.items() if k in IMAGE_KEYS and v}, where)
        values = {k: v for k, v in row.items() if k not in IMAGE_KEYS and v not in (None, "")}
        _add(tables, kind, key, values, where)
    return ImageAttributes(by_id=tables["image_id"], by_name=tables["file_name"], source=path)


def _from_json(data: Any, path: str) -> ImageAttributes:
    tables: dict = {"image_id": {}, "file_name": {}}
    if isinstance(data, dict):
        for name, values in data.items():
            where = f"{path}: image {shorten(name)}"
            if not isinstance(values, dict):
                raise InputError(f"{where}: expected an object of attributes, found {json_type(values)}")
            # A key of digits names an image id or a name (VOC ids such as "000001"): both.
            if name.lstrip("-").isdigit():
                _add(tables, "image_id", int(name), dict(values), where)
            _add(tables, "file_name", name, dict(values), where)
    elif isinstance(data, list):
        for i, record in enumerate(data):
            where = f"{path}: record #{i}"
            if not isinstance(record, dict):
                raise InputError(f"{where}: expected an object, found {json_type(record)}")
            kind, key = _image_key(record, where)
            _add(tables, kind, key, {k: v for k, v in record.items() if k not in IMAGE_KEYS}, where)
    else:
        raise InputError(
            f"{path}: expected an object {{image: {{attribute: value}}}} or an array of objects "
            f"with `image_id` or `file_name`, found {json_type(data)}"
        )
    return ImageAttributes(by_id=tables["image_id"], by_name=tables["file_name"], source=path)
