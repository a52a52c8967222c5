"""Strict JSON reading: fast (orjson), but refusing NaN/Infinity tokens and duplicate keys."""

from __future__ import annotations

import itertools
import json
from typing import Any

from deteval.errors import InputError, shorten

try:  # orjson parses COCO-sized files 2-3x faster than the standard library
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    _orjson = None

__all__ = ["loads_strict"]


def loads_strict(raw: bytes, where: str) -> Any:
    """Parse ``raw``; reject NaN/Infinity tokens and duplicate keys inside an object.

    The duplicate-key check is a fast count of ``":`` against the parsed keys; only when the
    counts differ (a duplicate, or a string that happens to contain ``":``) does the slow exact
    check run.
    """
    if _orjson is not None:
        try:
            data = _orjson.loads(raw)
        except _orjson.JSONDecodeError as exc:
            raise InputError(f"{where}: invalid JSON: {_describe(exc, raw)}") from None
    else:  # pragma: no cover
        data = _stdlib_loads(raw, where)
    if raw.count(b'":') != _count_keys(data):
        _stdlib_loads(raw, where)  # raises on a real duplicate
    return data


def _describe(exc: Exception, raw: bytes) -> str:
    msg = str(exc)
    lowered = raw[:2_000_000]
    for token in (b"NaN", b"Infinity"):
        if token in lowered and ("line" in msg):
            return f"{msg}; NaN/Infinity are not JSON (expected finite numbers)"
    return msg


def _reject_constant(token: str) -> None:
    raise ValueError(f"{token} is not valid JSON (expected a finite number)")


def _stdlib_loads(raw: bytes, where: str) -> Any:
    def no_duplicates(pairs: list) -> dict:
        out: dict = {}
        for key, value in pairs:
            if key in out:
                raise InputError(f"{where}: duplicate key {key!r} in one JSON object "
                                 f"(first value {shorten(out[key], 40)}, then {shorten(value, 40)}); "
                                 f"expected each key once")
            out[key] = value
        return out

    try:
        return json.loads(raw, object_pairs_hook=no_duplicates, parse_constant=_reject_constant)
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"{where}: invalid JSON: nested too deeply; expected a COCO file "
                         f"(a few levels of arrays and objects)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: invalid JSON: {exc}") from None


def _count_keys(value: Any) -> int:
    """A lower bound of the number of object keys in a parsed JSON value.

    Exact for COCO-shaped data (objects, arrays of objects, arrays of numbers); objects hidden
    inside arrays of numbers are not counted. Undercounting is safe: the raw count is then larger
    and the exact (slow) duplicate check runs. Lists of records are counted at C speed, nested
    objects only when present. Iterative, so that a deeply nested document (orjson accepts 1024
    levels) cannot exhaust Python's recursion limit.
    """
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            total += len(item)
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list) and item:
            if type(item[0]) is dict and set(map(type, item)) == {dict}:
                total += sum(map(len, item))
                value_types = set(map(type, itertools.chain.from_iterable(map(dict.values, item))))
                if dict in value_types:
                    stack.extend(v for r in item for v in r.values() if type(v) is dict)
            elif isinstance(item[0], (dict, list)):
                stack.extend(v for v in item if isinstance(v, (dict, list)))
    return total
