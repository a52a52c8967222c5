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


def _index_of(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Position of each value in ``sorted_keys``; -1 where absent."""
    if len(sorted_keys) == 0:
        return np.full(len(values), UNKNOWN, dtype=np.int32)
    pos = np.minimum(np.searchsorted(sorted_keys, values), len(sorted_keys) - 1)
    return np.where(sorted_keys[pos] == values, pos, UNKNOWN).astype(np.int32)  # Detections.image's dtype


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
