"""Strict JSON reading: fast (orjson), but refusing NaN/Infinity tokens and duplicate keys."""

from __future__ import annotations

import json
import os
from typing import Any

from deteval.errors import InputError

try:  # orjson parses COCO-sized files 2-3x faster than the standard library
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    _orjson = None

__all__ = ["read_json", "loads_strict"]


def read_json(path: "str | os.PathLike") -> Any:
    """Read and parse a JSON file strictly; errors name the file and position."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory; expected a JSON file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return loads_strict(raw, path)


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
                                 f"(first value {_short(out[key])}, then {_short(value)}); "
                                 f"expected each key once")
            out[key] = value
        return out

    try:
        return json.loads(raw, object_pairs_hook=no_duplicates, parse_constant=_reject_constant)
    except InputError:
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: invalid JSON: {exc}") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _count_keys(value: Any) -> int:
    """Number of object keys in a parsed JSON value (lists of numbers skipped quickly)."""
    if isinstance(value, dict):
        return len(value) + sum(_count_keys(v) for v in value.values()
                                if isinstance(v, (dict, list)))
    if isinstance(value, list):
        # A list that starts with a number is taken as a list of numbers (coordinates); if it
        # hides objects the counts differ and the exact check runs, so this is only a shortcut.
        if not value or not isinstance(value[0], (dict, list)):
            return 0
        return sum(_count_keys(v) for v in value if isinstance(v, (dict, list)))
    return 0
