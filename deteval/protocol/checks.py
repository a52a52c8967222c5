"""Checks of protocol field values, and how a found value is named in messages.

Each ``_check_*`` function takes ``(key, value, where)``, accepts the plain value of a YAML file or
the frozen representation of a :class:`~deteval.protocol.spec.Protocol`, and returns the frozen
representation, or raises :class:`~deteval.errors.ConfigError` with a message of the form
``WHERE: KEY.PATH: expected ..., found ...``. :data:`~deteval.protocol.fields.FIELDS` names the
check of each structured field; the enumerated fields are checked against their choices there.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deteval.errors import ConfigError

__all__ = ["describe_value"]


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def describe_value(value: Any) -> str:
    """How a found value is named in messages.

    >>> describe_value(True)
    'true (a boolean; YAML reads yes/no/on/off/true/false so)'
    >>> describe_value([10, 1]), describe_value("0.5")
    ('the list [10, 1]', "the string '0.5'")
    """
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return f"{str(bool(value)).lower()} (a boolean; YAML reads yes/no/on/off/true/false so)"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        text = repr(list(value))
        kind = "list" if isinstance(value, list) else "tuple"
        return f"the {kind} {text if len(text) <= 60 else text[:57] + '...'}"
    if isinstance(value, dict):
        return f"a mapping with keys {list(value)[:8]}"
    return f"{type(value).__name__} {value!r}"


def _fail(where: str, path: str, expected: str, found: Any) -> ConfigError:
    return ConfigError(f"{where}: {path}: expected {expected}, found {describe_value(found)}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# --------------------------------------------------------------------------------------------
# Checks of structured fields: plain values (YAML) or the frozen representation (Python) in,
# the frozen representation out.
# --------------------------------------------------------------------------------------------


def _check_text(key: str, value: Any, where: str) -> str:
    if not isinstance(value, str) or (key == "name" and not value.strip()):
        raise _fail(where, key, "a non-empty string" if key == "name" else "a string", value)
    return value


def _check_iou_thresholds(key: str, value: Any, where: str) -> tuple:
    if isinstance(value, dict):
        required = ("start", "stop", "num")
        if any(k not in required for k in value) or any(k not in value for k in required):
            raise _fail(
                where,
                key,
                "a list of numbers, or exactly {start, stop, num} for np.linspace(start, stop, num)",
                value,
            )
        for k in ("start", "stop"):
            if not _is_number(value[k]) or not 0.0 <= value[k] <= 1.0:
                raise _fail(where, f"{key}.{k}", "a number in [0, 1]", value[k])
        num = value["num"]
        if not _is_integer(num) or not 1 <= num <= 1000:
            raise _fail(where, f"{key}.num", "an integer in [1, 1000]", num)
        if num > 1 and value["start"] == value["stop"]:
            raise _fail(where, key, "start < stop when num > 1", value)
        # Exactly pycocotools' construction: np.linspace(start, stop, num, endpoint=True).
        return tuple(float(t) for t in np.linspace(value["start"], value["stop"], num, endpoint=True))
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        raise _fail(
            where,
            key,
            "a non-empty list of numbers in [0, 1] (e.g. [0.5]) or {start: 0.5, stop: 0.95, num: 10}",
            value,
        )
    out = []
    for i, t in enumerate(value):
        if not _is_number(t) or not 0.0 <= t <= 1.0:
            raise _fail(where, f"{key}[{i}]", "a number in [0, 1]", t)
        out.append(float(t))
    if len(set(out)) != len(out):
        raise _fail(where, key, "distinct thresholds", value)
    return tuple(out)


def _check_area_ranges(key: str, value: Any, where: str) -> tuple:
    # A mapping name -> [lo, hi] (YAML and Python), or the frozen tuple of (name, lo, hi).
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) and len(v) == 3 for v in value):
        items = [(v[0], [v[1], v[2]]) for v in value]
    elif isinstance(value, dict) and value:
        items = list(value.items())
    else:
        raise _fail(
            where, key, "a non-empty mapping name: [lo, hi] (e.g. {all: [0, 1e10], small: [0, 1024]})", value
        )
    out = []
    for name, bounds in items:
        if not isinstance(name, str) or not name:
            raise _fail(where, f"{key}.{name}", "a range name that is a non-empty string", name)
        path = f"{key}.{name}"
        if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            raise _fail(where, path, "[lo, hi], two numbers", bounds)
        for i, b in enumerate(bounds):
            if not _is_number(b) or not math.isfinite(b) or b < 0:
                raise _fail(
                    where,
                    f"{path}[{i}]",
                    "a finite number >= 0 (areas in pixels², e.g. 1e10 for no upper bound)",
                    b,
                )
        lo, hi = float(bounds[0]), float(bounds[1])
        if lo > hi:
            raise _fail(where, path, "[lo, hi] with lo <= hi", bounds)
        out.append((name, lo, hi))
    if len({n for n, _, _ in out}) != len(out):
        raise _fail(where, key, "distinct range names", value)
    return tuple(out)


def _check_max_dets(key: str, value: Any, where: str) -> tuple | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise _fail(
            where, key, "a non-empty list of positive integers (e.g. [1, 10, 100]) or null for no cap", value
        )
    for i, m in enumerate(value):
        if not _is_integer(m) or m < 1:
            raise _fail(where, f"{key}[{i}]", "a positive integer", m)
    if any(b <= a for a, b in zip(value, value[1:])):
        raise _fail(where, key, "strictly increasing values (pycocotools sorts them)", value)
    return tuple(int(m) for m in value)


def _check_keypoint_sigmas(key: str, value: Any, where: str) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        raise _fail(
            where,
            key,
            "a non-empty list of positive numbers, one per keypoint (e.g. "
            "COCO's 17), or null for COCO's person sigmas",
            value,
        )
    for i, s in enumerate(value):
        if not _is_number(s) or not math.isfinite(s) or s <= 0:
            raise _fail(where, f"{key}[{i}]", "a finite number > 0", s)
    return tuple(float(s) for s in value)


def _check_dilation_ratio(key: str, value: Any, where: str) -> float:
    if not _is_number(value) or not math.isfinite(value) or not 0 < value <= 1:
        raise _fail(where, key, "a number in (0, 1] (boundary-iou-api: 0.02)", value)
    return float(value)


def _check_class_budget(key: str, value: Any, where: str) -> int | None:
    if value is None:
        return None
    if not _is_integer(value) or value < 1:
        raise _fail(where, key, "a positive integer (Fixed AP: 10000) or null for no budget", value)
    return int(value)
