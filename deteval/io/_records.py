"""Column extraction from lists of JSON records, with precise errors.

The fast path reads a field of every record with one list comprehension and checks the set of
Python types it found; only when something is off does a per-record scan run, to name the
records (the count and the first five) in the error.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from deteval.errors import SHOW, describe, is_number, records_error
from deteval.errors import json_type as _json_type

__all__ = [
    "Problems",
    "int_column",
    "id_or_name_column",
    "number_column",
    "box_column",
    "flag_column",
    "MISSING",
    "json_type",
    "plain",
]

MISSING = object()


def json_type(value: Any) -> str:
    """The JSON name of a value's type for messages (:func:`deteval.errors.json_type`; ``missing``)."""
    return "missing" if value is MISSING else _json_type(value)


def _show(value: Any) -> str:
    if value is MISSING:
        return "nothing (field missing)"
    return describe(value)  # MISSING is handled above


class Problems:
    """Collects records with a defect, then raises one InputError naming the first five."""

    def __init__(self, where: str, kind: str, label: Callable[[int], str]):
        self.where = where
        self.kind = kind
        self.label = label

    def fail(
        self, indices: Sequence[int] | np.ndarray, problem: str, expected: str, found: Callable[[int], Any]
    ) -> NoReturn:
        """Raise :func:`deteval.errors.records_error` for the records at ``indices``."""
        indices = list(indices)
        if len(indices) == 1:
            i = indices[0]
            hits = [(f"{self.kind} #{i} ({self.label(i)})", _show(found(i)))]
        else:
            hits = [(f"#{i} ({self.label(i)})", _show(found(i))) for i in indices[:SHOW]]
        raise records_error(
            self.where, problem, expected, hits, noun=f"{self.kind}s", separator=" ", n_records=len(indices)
        )


def _values(records: list, key: str) -> list:
    return [r.get(key, MISSING) for r in records]


def plain(value: Any) -> Any:
    """A numpy value (or anything with ``__array__``, e.g. a torch tensor) as plain Python.

    Arrays become lists, 0-d arrays and numpy scalars Python numbers; everything else is
    returned as is. Only the slow paths call it: JSON from a file never holds such values.

    Examples
    --------
    >>> plain(np.array([1, 2.5])), plain(np.float32(0.5)), plain(np.int64(3)), plain("a")
    ([1.0, 2.5], 0.5, 3, 'a')
    """
    if isinstance(value, (np.ndarray, np.generic)) or (
        hasattr(value, "__array__") and not isinstance(value, (list, tuple, dict, str))
    ):
        try:
            return np.asarray(value).tolist()
        except (TypeError, ValueError):
            return value
    return value


def _plain_all(values: list) -> list:
    """:func:`plain` of each value, or ``values`` itself when none needs it (the common case)."""
    kinds = set(map(type, values))
    if kinds <= {int, float, str, list, dict, type(None), bool, type(MISSING)}:
        return values
    return [plain(v) for v in values]


def _integral(value: Any) -> bool:
    """A float that is an integer a float64 holds exactly (``3.0``; not ``3.5``, not ``1e300``)."""
    return type(value) is float and value.is_integer() and abs(value) <= 2**53


def int_column(
    records: list, key: str, problems: Problems, *, default: Any = MISSING, integral_floats: bool = False
) -> np.ndarray:
    """An integer field (JSON integers only: not strings, floats or booleans).

    ``integral_floats``: also accept floats that are integers (``3.0``), as Python objects built
    from float arrays (``arr.tolist()``) carry them; numpy integers and 0-d arrays are accepted
    always. Files keep refusing ``3.0`` (see docs/inputs.md).
    """
    values = _values(records, key)
    if default is not MISSING:
        values = [default if v is MISSING else v for v in values]
    if set(map(type, values)) <= {int}:
        try:
            return np.array(values, dtype=np.int64).reshape(len(values))
        except OverflowError:
            pass
    values = _plain_all(values)
    if integral_floats:
        values = [int(v) if _integral(v) else v for v in values]
    bad = [
        i
        for i, v in enumerate(values)
        if not (type(v) is int or isinstance(v, np.integer)) or not (-(2**63) <= int(v) < 2**63)
    ]
    if not bad:
        return np.array([int(v) for v in values], dtype=np.int64).reshape(len(values))
    expected = (
        "an integer (64-bit; a float only when it is integral)"
        if integral_floats
        else "a JSON integer (64-bit)"
    )
    problems.fail(bad, f"`{key}` is not an integer", expected, lambda i: values[i])
    raise AssertionError  # unreachable


def id_or_name_column(records: list, key: str, problems: Problems, *, integral_floats: bool = False) -> list:
    """An id that is an integer or a string (an image named by file name or stem).

    Returns the values as Python ints and strings (see :mod:`deteval.io.identity`).
    """
    values = _plain_all(_values(records, key))
    if integral_floats:
        values = [int(v) if _integral(v) else v for v in values]
    bad = [
        i for i, v in enumerate(values) if not (type(v) is str or (type(v) is int and -(2**63) <= v < 2**63))
    ]
    if bad:
        problems.fail(
            bad,
            f"`{key}` is not an integer or a string",
            "an image's file name or stem (string), or int(stem) (integer)",
            lambda i: values[i],
        )
    return values


def number_column(
    records: list, key: str, problems: Problems, *, default: Any = MISSING, allow_missing: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """A finite numeric field; returns (values, is_missing)."""
    values = _values(records, key)
    if set(map(type, values)) <= {int, float}:  # fast path: nothing missing, all numbers
        out = np.array(values, dtype=np.float64).reshape(len(values))
        if np.isfinite(out).all():
            return out, np.zeros(len(values), dtype=bool)
    values = _plain_all(values)
    is_missing = np.fromiter((v is MISSING for v in values), dtype=bool, count=len(values))
    filled = [default if v is MISSING else v for v in values] if allow_missing else values
    if set(map(type, filled)) <= {int, float}:
        out = np.array(filled, dtype=np.float64).reshape(len(values))
        if np.isfinite(out[~is_missing]).all():
            return out, is_missing
    bad = [
        i
        for i, v in enumerate(values)
        if not (allow_missing and v is MISSING) and (not is_number(v) or not math.isfinite(v))
    ]
    if not bad:
        return np.array(filled, dtype=np.float64).reshape(len(values)), is_missing
    problems.fail(bad, f"`{key}` is not a finite number", "a finite JSON number", lambda i: values[i])
    raise AssertionError  # unreachable


def flag_column(
    records: list, key: str, problems: Problems, *, default: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A 0/1 flag (``iscrowd``, ``ignore``, ``difficult``); JSON booleans accepted as 0/1."""
    values = _plain_all(_values(records, key))
    is_missing = np.fromiter((v is MISSING for v in values), dtype=bool, count=len(values))
    filled = [default if v is MISSING else v for v in values]
    bad = [
        i for i, v in enumerate(filled) if not (v is True or v is False or (type(v) is int and v in (0, 1)))
    ]
    if bad:
        problems.fail(bad, f"`{key}` is not 0 or 1", "0 or 1", lambda i: values[i])
    return np.array(filled, dtype=bool).reshape(len(values)), is_missing


def box_column(
    records: list,
    key: str,
    problems: Problems,
    *,
    order: str = "[x, y, w, h]",
    allow_missing: bool = False,
    empty_is_missing: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """A list of four finite numbers; returns (boxes (n, 4), is_missing).

    ``empty_is_missing``: an empty list counts as no box (pycocotools' ``bbox == []``).
    """
    values = _values(records, key)
    n = len(values)
    if set(map(type, values)) <= {list} and set(map(len, values)) <= {4}:
        if set(map(type, itertools.chain.from_iterable(values))) <= {int, float}:
            out = np.fromiter(itertools.chain.from_iterable(values), dtype=np.float64, count=4 * n).reshape(
                n, 4
            )
            if np.isfinite(out).all():
                return out, np.zeros(n, dtype=bool)
    values = _plain_all(values)
    is_missing = np.fromiter(
        (v is MISSING or (empty_is_missing and v == []) for v in values), dtype=bool, count=len(values)
    )
    out = np.zeros((n, 4))
    bad_type, bad_len, bad_num = [], [], []
    for i, v in enumerate(values):
        if (v is MISSING or (empty_is_missing and v == [])) and allow_missing:
            continue
        if not isinstance(v, (list, tuple)):
            bad_type.append(i)
        elif len(v) != 4:
            bad_len.append(i)
        elif any(not is_number(c) or not math.isfinite(c) for c in v):
            bad_num.append(i)
        else:
            out[i] = v
    if bad_type:
        problems.fail(bad_type, f"`{key}` is not a list", f"4 numbers {order}", lambda i: values[i])
    if bad_len:
        problems.fail(bad_len, f"`{key}` does not have 4 numbers", f"4 numbers {order}", lambda i: values[i])
    if bad_num:
        problems.fail(
            bad_num,
            f"`{key}` has a value that is not a finite number",
            f"4 finite numbers {order}",
            lambda i: values[i],
        )
    return out, is_missing
