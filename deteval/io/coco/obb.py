"""Oriented boxes in COCO JSON: hotcoco's ``obb: [cx, cy, w, h, angle]`` (angle in radians).

A record's ``obb`` is read into ``GroundTruth.rotated`` / ``Detections.rotated`` (``(n, 5)``, the
numbers as written) and its axis-aligned envelope becomes the ``bbox`` column (``xywh``), so any
upright protocol scores the envelopes. A file either gives every record an ``obb`` or none.

A five-number ``bbox`` is refused rather than guessed: detectron2's rotated COCO files write
``[cx, cy, w, h, angle]`` with the angle in *degrees*, counter-clockwise, while hotcoco and
Ultralytics use radians, clockwise on the image; the two readings of one file differ and
neither can be told from the numbers.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from deteval.io._records import Problems

__all__ = ["obb_column", "obb_envelope_xywh", "boxes_of", "with_rotated", "OBB_EXPECTED"]

MISSING = object()
OBB_EXPECTED = "[cx, cy, w, h, angle]: 5 finite numbers, w >= 0 and h >= 0, angle in radians (hotcoco)"


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _as_list(value: Any) -> Any:
    """A numeric array or tuple (the Python API: numpy arrays, tensors) as a list of numbers."""
    if isinstance(value, tuple) or (hasattr(value, "__array__") and not isinstance(value, list)):
        array = np.asarray(value)
        if array.dtype.kind in "iuf" and array.ndim == 1:
            return [float(v) for v in array]
    return value


def obb_column(records: list, problems: Problems) -> np.ndarray | None:
    """The records' ``obb`` as float64 ``(n, 5)``; None when no record has one.

    Raises
    ------
    InputError
        A five-number ``bbox`` (ambiguous angle unit); an ``obb`` that is not 5 finite numbers or
        has a negative side; some records with an ``obb`` and others without.
    """
    five = [i for i, r in enumerate(records) if isinstance(r.get("bbox"), list) and len(r["bbox"]) == 5]
    if five:
        problems.fail(
            five,
            "`bbox` has 5 numbers: a rotated box whose angle unit cannot be told (detectron2 "
            "writes degrees counter-clockwise; hotcoco and Ultralytics radians)",
            f"`bbox` [x, y, w, h], with a rotated box as `obb` {OBB_EXPECTED} (convert "
            "detectron2's degrees: angle_radians = -angle_degrees * pi / 180)",
            lambda i: records[i]["bbox"],
        )
    values = [_as_list(r.get("obb", MISSING)) for r in records]
    present = [i for i, v in enumerate(values) if v is not MISSING]
    if not present:
        return None
    missing = [i for i, v in enumerate(values) if v is MISSING]
    if missing:
        problems.fail(
            missing,
            "no `obb`, where other records have one",
            f"an `obb` {OBB_EXPECTED} on every record (or on none)",
            lambda i: "nothing",
        )
    bad = [
        i
        for i, v in enumerate(values)
        if not isinstance(v, list) or len(v) != 5 or not all(_is_number(c) for c in v)
    ]
    if bad:
        problems.fail(bad, "`obb` is not 5 finite numbers", OBB_EXPECTED, lambda i: values[i])
    out = np.array(values, dtype=np.float64).reshape(len(records), 5)
    negative = np.flatnonzero((out[:, 2] < 0) | (out[:, 3] < 0))
    if len(negative):
        problems.fail(negative, "`obb` has a negative width or height", OBB_EXPECTED, lambda i: values[i])
    return out


def obb_envelope_xywh(obb: np.ndarray) -> np.ndarray:
    """The axis-aligned envelope ``(n, 4)`` ``x y w h`` of ``(n, 5)`` oriented boxes.

    Examples
    --------
    >>> obb_envelope_xywh(np.array([[5.0, 5.0, 4.0, 2.0, 0.0]])).tolist()
    [[3.0, 4.0, 4.0, 2.0]]
    """
    cos, sin = np.cos(obb[:, 4]), np.sin(obb[:, 4])
    half_w = (np.abs(obb[:, 2] * cos) + np.abs(obb[:, 3] * sin)) / 2
    half_h = (np.abs(obb[:, 2] * sin) + np.abs(obb[:, 3] * cos)) / 2
    return np.stack([obb[:, 0] - half_w, obb[:, 1] - half_h, 2 * half_w, 2 * half_h], axis=1)


def boxes_of(rotated: np.ndarray | None, box: np.ndarray, box_missing: np.ndarray) -> tuple:
    """The ``bbox`` column and its missing flags: the oriented boxes' envelopes when there are any."""
    if rotated is None:
        return box, box_missing
    return obb_envelope_xywh(rotated), np.zeros(len(rotated), dtype=bool)


def with_rotated(value: Any, rotated: np.ndarray | None) -> Any:
    """``value`` (GroundTruth or Detections) with its ``rotated`` column set, when there is one."""
    return value if rotated is None else dataclasses.replace(value, rotated=rotated)
