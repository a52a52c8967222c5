"""Shared test helpers (moved from tests/unit/test_colparse.py, which imports them from here)."""

from __future__ import annotations

import numpy as np

from tests import ROOT


def _bits(column: np.ndarray) -> np.ndarray:
    return column.view(np.int64) if column.dtype == np.float64 else column


VOC_ROOT = ROOT / "fixtures" / "voc"


YOLO_ROOT = ROOT / "fixtures" / "yolo"


HOSTILE_TEXT = {
    "five fields": "a 1 2 3 4",
    "seven fields": "a 1 2 3 4 5 6",
    "nan": "a nan 2 3 4 5",
    "inf": "a inf 2 3 4 5",
    "overflow": "a 1e400 2 3 4 5",
    "underscore": "a 1_0 2 3 4 5",
    "hex": "a 0x1 2 3 4 5",
    "trailing letter": "a 1x 2 3 4 5",
    "lone dot": "a . 2 3 4 5",
    "empty exponent": "a 1e 2 3 4 5",
    "form feed": "a 1\x0c2 3 4 5",
    "vertical tab": "a 1 2 3 4 5\x0b",
    "non-ASCII id": "é 1 2 3 4 5",
    "non-breaking space": "a\u00a01 2 3 4 5",
    "NUL": "a 1 2 3 4 5\x00",
    "comma separated": "a,1,2,3,4,5",
}


HOSTILE_CLASS = ["3.0", "03", "-0", "+3", "1e0", "9007199254740993", "a", "1234567890123456"]


VOC_MUTATIONS = {
    "plain": None,
    **{name: text.replace("a", "000001", 1) for name, text in HOSTILE_TEXT.items()},
    "unknown id": "000009 0.5 1 1 5 5",
    "padded id": "1 0.5 1 1 5 5",
    "inverted box": "000001 0.5 10 1 5 5",
    "signs and dots": "000002 +.5 1. 01 5 5.0e0",
    "CRLF and blanks": "\r\n000001 0.5 1 1 5 5\r\n\r\n",
    "BOM": "\ufeff000001 0.5 1 1 5 5",
    "not UTF-8": b"000001 0.5 1 1 5 5 \xff",
}


YOLO_MUTATIONS = {
    "plain": None,
    **{name: text.replace("a", "1", 1) for name, text in HOSTILE_TEXT.items()},
    **{f"class {cls}": f"{cls} 0.5 0.5 0.1 0.1 0.9" for cls in HOSTILE_CLASS},
    "unknown class": "7 0.5 0.5 0.1 0.1 0.9",
    "negative width": "1 0.5 0.5 -0.1 0.1 0.9",
    "overflowing box": "1 0.5 0.5 1e308 0.1 0.9",
    "signs and dots": "1 +.5 .5 0.10 1. 9e-1",
}


def assert_same_images(compiled_rest, images: list) -> None:
    """The images of a compiled instances parse (``_Rest``) are ``images`` (a parsed JSON list).

    Read by ``_colparse.images`` into columns (``image_columns``: ``images`` is then ``[]``), or left
    to orjson with the rest of the document.
    """
    if compiled_rest.image_columns is None:
        assert compiled_rest.images == images
        return
    assert compiled_rest.images == []
    ids, width, height, names = compiled_rest.image_columns
    assert ids.dtype == np.int64
    assert ids.tolist() == [i["id"] for i in images]
    for key, column in (("width", width), ("height", height)):
        expected = np.array([i.get(key, np.nan) for i in images], dtype=np.float64)
        assert np.array_equal(_bits(column), _bits(expected)), key
    assert names == [i.get("file_name") for i in images]


#: The GroundTruth columns two readers of one file must give alike.
GT_FIELDS = (
    "image_id",
    "image_width",
    "image_height",
    "category_id",
    "annotation_id",
    "image",
    "category",
    "box",
    "area",
    "is_crowd",
    "is_difficult",
    "is_ignore",
)


def assert_same_gt(a, b) -> None:
    """Two ground truths of one file are the same: columns bit for bit, names, warnings, source."""
    for field in GT_FIELDS:
        x, y = np.asarray(getattr(a, field)), np.asarray(getattr(b, field))
        assert x.dtype == y.dtype, field
        assert x.shape == y.shape, field
        assert np.array_equal(_bits(x), _bits(y)), field
    assert a.image_name == b.image_name
    assert a.category_name == b.category_name
    assert a.warnings == b.warnings
    assert a.source == b.source
    assert tuple(a.segmentation) == tuple(b.segmentation)
