"""Which image of the ground truth a detection names: by value, never by position.

A COCO ground truth has ids (``images[].id``) and detections name images by them. YOLO datasets
and VOC roots have no ids, only names: a YOLO image is a file (``000123.jpg``, stem ``000123``),
a VOC image is its id in ``ImageSets`` (``000123``). Their :class:`~deteval.data.GroundTruth`
numbers the images by position (``has_image_ids=False``) and detections are joined by name:

* a string ``image_id`` is an image's name (``000123.jpg``) or stem (``000123``), exactly;
* an integer ``image_id`` is ``int(stem)`` of an image whose stem is all digits -- the rule of
  Ultralytics' ``predictions.json`` (``image_id = int(stem) if stem.isnumeric() else stem``).
  Two stems with the same integer (``1`` and ``001``) make that integer ambiguous: an error when
  a detection uses it.

VOC result files compare ids as text, exactly, as the devkit does (``1`` is not ``000001``;
the error says when zero-padding would have matched).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.data import GroundTruth
from deteval.errors import shorten

__all__ = ["UNKNOWN", "AMBIGUOUS", "stem", "join_ids", "join_names", "join_voc_ids", "explain_miss"]

#: Index returned for a value that names no image.
UNKNOWN = -1
#: Index returned for an integer that is ``int(stem)`` of two or more images.
AMBIGUOUS = -2


def stem(name: str) -> str:
    """The file name without folder and extension (``images/000123.jpg`` -> ``000123``).

    Examples
    --------
    >>> stem("images/000123.jpg"), stem("000123"), stem("a.b.png")
    ('000123', '000123', 'a.b')
    """
    return os.path.splitext(os.path.basename(str(name)))[0]


def _named(names: Sequence[str]) -> GroundTruth:
    """A ground truth of named images without objects (for examples and tests)."""
    n = len(names)
    empty = np.zeros(0, dtype=np.int64)
    return GroundTruth(
        image_id=np.arange(n),
        image_name=tuple(names),
        image_width=np.full(n, np.nan),
        image_height=np.full(n, np.nan),
        category_id=empty,
        category_name=(),
        annotation_id=empty,
        image=empty,
        category=empty,
        box=np.zeros((0, 4)),
        area=np.zeros(0),
        is_crowd=np.zeros(0, bool),
        is_difficult=np.zeros(0, bool),
        is_ignore=np.zeros(0, bool),
        has_image_ids=False,
    )


def _is_digits(text: str) -> bool:
    """All ASCII digits (``str.isnumeric`` also accepts ``'²'``, which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


#: :func:`_index_of` looks ids up in a table of their positions (one int32 per id between the
#: smallest and the largest) when they span at most this many ids each, or when there are more than
#: four values per id within a span of the values' count plus 64k (class ids); else it searches.
_TABLE_IDS_PER_ID = 128


def _index_of(values: np.ndarray, sorted_ids: np.ndarray, dtype: Any = np.int32) -> np.ndarray:
    """Position of each value in the sorted ``sorted_ids`` (the first of equal ids), -1 where absent.

    The one lookup of ids of the loaders: detections' image ids (``Detections.image``'s int32),
    category ids and category-map keys (:mod:`deteval.io.category_map`), the annotations' image
    and category ids (:mod:`deteval.io.coco.instances`, int64). Strictly increasing integer ids of
    a small span are looked up in a table (:func:`_position_table`; one read per value: 144,096
    annotations into 20,000 image ids spread over 2,000,463, 17 -> 1 ms; class ids, ten times
    faster than the search on a quarter of a million detections); others are searched. Both
    give the same positions.

    >>> _index_of(np.array([7, 3, 9, 5, -4]), np.array([3, 5, 7])).tolist()
    [2, 0, -1, 1, -1]
    """
    if len(sorted_ids) == 0:
        return np.full(len(values), UNKNOWN, dtype=dtype)
    table = _position_table(values, sorted_ids)
    if table is not None:
        low, span = int(sorted_ids[0]), len(table) - 1
        values = values.astype(np.int64, copy=False)
        at = np.where((values >= low) & (values <= int(sorted_ids[-1])), values - low, span)  # outside: 0
        return np.subtract(table[at], 1, out=at).astype(dtype, copy=False)  # -1 where absent
    pos = np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)
    return np.where(sorted_ids[pos] == values, pos, UNKNOWN).astype(dtype)


def _exact_int64(column: np.ndarray) -> bool:
    """Whether every value of ``column``'s dtype is an int64 (signed, or unsigned below 64 bits)."""
    return column.dtype.kind == "i" or (column.dtype.kind == "u" and column.dtype.itemsize < 8)


def _position_table(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray | None:
    """Positions plus one of ``sorted_ids`` by id minus the smallest, 0 between them and one 0 after.

    None (search instead) unless values and ids are integers, the ids strictly increasing, fewer
    than 2**31 - 1, and of a span :data:`_TABLE_IDS_PER_ID` allows. Zeros (calloc: fresh pages are
    not written), so that only the pages holding ids are touched.
    """
    n = len(sorted_ids)
    if not (_exact_int64(values) and _exact_int64(sorted_ids)) or n >= 2**31 - 1:
        return None
    span = int(sorted_ids[-1]) - int(sorted_ids[0]) + 1
    small = span <= _TABLE_IDS_PER_ID * n or (span < len(values) + (1 << 16) and len(values) > 4 * n)
    if not small or not bool((sorted_ids[1:] > sorted_ids[:-1]).all()):
        return None
    table = np.zeros(span + 1, dtype=np.int32)
    table[sorted_ids.astype(np.int64) - int(sorted_ids[0])] = np.arange(1, n + 1, dtype=np.int32)
    return table


def join_ids(ids: np.ndarray, gt: GroundTruth) -> np.ndarray:
    """Image index of each integer ``image_id``: -1 (:data:`UNKNOWN`) or -2 (:data:`AMBIGUOUS`).

    Against a ground truth with ids (COCO) an id is the image's id; against one with only names
    (YOLO, VOC) it is ``int(stem)`` of an image whose stem is all digits (Ultralytics' rule).

    Parameters
    ----------
    ids : int64 (n_det,)
    gt : GroundTruth

    Returns
    -------
    int32 (n_det,)
        The dtype of ``Detections.image``, so that no int64 copy is made first.

    Examples
    --------
    >>> join_ids(np.array([1, 10, 7]), _named(["1.jpg", "10.jpg", "a.jpg"])).tolist()
    [0, 1, -1]
    >>> join_ids(np.array([1]), _named(["1.jpg", "001.jpg"])).tolist()
    [-2]
    """
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if gt.has_image_ids:
        return _index_of(ids, gt.image_id)
    numeric = [(int(s), i) for i, s in enumerate(map(stem, gt.image_name)) if _is_digits(s)]
    keys = np.array([k for k, _ in numeric], dtype=object)
    fits = np.array([-(2**63) <= k < 2**63 for k in keys], dtype=bool)
    keys = keys[fits].astype(np.int64) if len(keys) else np.zeros(0, dtype=np.int64)
    images = np.array([i for (_, i), ok in zip(numeric, fits, strict=True) if ok], dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    keys, images = keys[order], images[order]
    repeated = np.zeros(len(keys), dtype=bool)
    same = keys[1:] == keys[:-1]
    repeated[1:] |= same
    repeated[:-1] |= same
    unique_keys, first = np.unique(keys, return_index=True)
    pos = _index_of(ids, unique_keys)
    found = pos >= 0
    out = np.full(len(ids), UNKNOWN, dtype=np.int32)
    out[found] = np.where(repeated[first[pos[found]]], AMBIGUOUS, images[first[pos[found]]])
    return out


def join_names(values: Sequence[Any], gt: GroundTruth) -> np.ndarray:
    """Image index of each ``image_id`` that is a string (name or stem) or an integer.

    Integers go through :func:`join_ids`; a string is an image's name, else its stem, exactly
    (``"000001"`` is not ``"1"``). Returns -1 for a value that names no image, -2 for an
    ambiguous integer.

    Examples
    --------
    >>> join_names(["a", "a.jpg", 10, "10", "b"], _named(["a.jpg", "10.jpg"])).tolist()
    [0, 0, 1, 1, -1]
    """
    out = np.full(len(values), UNKNOWN, dtype=np.int32)
    is_text = np.fromiter((isinstance(v, str) for v in values), dtype=bool, count=len(values))
    if (~is_text).any():
        numbers = np.array([v for v, t in zip(values, is_text, strict=True) if not t], dtype=np.int64)
        out[~is_text] = join_ids(numbers, gt)
    if is_text.any():
        lookup = _name_lookup(gt)
        out[is_text] = [lookup.get(v, UNKNOWN) for v, t in zip(values, is_text, strict=True) if t]
    return out


def _name_lookup(gt: GroundTruth) -> dict[str, int]:
    """Image name -> index, then stem -> index for stems not already a name."""
    lookup: dict[str, int] = {}
    for i, name in enumerate(gt.image_name):
        lookup.setdefault(str(name), i)
    for i, name in enumerate(gt.image_name):
        lookup.setdefault(stem(name), i)
    return lookup


def join_voc_ids(values: Sequence[str], gt: GroundTruth) -> np.ndarray:
    """Image index of each VOC result-file id: the image's name or stem, compared as text.

    Notes
    -----
    The devkit (``VOCevaldet.m``) finds a result's image with ``strcmp`` on the id strings, and
    the Python ports with a dict keyed by the ids: ``1`` never matches ``000001``. deteval used
    to fall back to the image's position as a number, which scored such results against the
    wrong images; it is an error now (:func:`explain_miss` says when padding would match).

    Examples
    --------
    >>> join_voc_ids(["000001", "1", "000002.jpg"], _named(["000001", "000002.jpg"])).tolist()
    [0, -1, 1]
    """
    lookup = _name_lookup(gt)
    return np.fromiter((lookup.get(v, UNKNOWN) for v in values), dtype=np.int64, count=len(values))


def explain_miss(value: Any, gt: GroundTruth, *, ambiguous: bool = False) -> str:
    """What a value that names no image (or two) might have meant, for the error message.

    Examples
    --------
    >>> explain_miss("1", _named(["000001", "000002"]))
    "'1' would match '000001' after zero-padding, but ids are compared as text, as the devkit does"
    >>> explain_miss(1, _named(["1.jpg", "001.jpg"]), ambiguous=True)
    "1 is int(stem) of several images: '1.jpg', '001.jpg'"
    """
    if ambiguous:
        hits = [n for n in gt.image_name if _is_digits(stem(n)) and int(stem(n)) == int(value)]
        return f"{shorten(value)} is int(stem) of several images: {', '.join(map(repr, hits[:5]))}"
    text = str(value)
    if _is_digits(text):
        padded = [n for n in gt.image_name if _is_digits(stem(n)) and int(stem(n)) == int(text)]
        if isinstance(value, str) and padded:
            return (
                f"{shorten(value)} would match {stem(padded[0])!r} after zero-padding, but ids are "
                f"compared as text, as the devkit does"
            )
    return ""
