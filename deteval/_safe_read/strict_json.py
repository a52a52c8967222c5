"""Strict JSON reading: the JSON part of the one reading policy.

Fast (orjson), but refusing NaN/Infinity tokens, duplicate keys, documents nested deeper than
:data:`MAX_DEPTH`, and files that are not UTF-8 JSON at all (gzip, UTF-16: named by
:func:`deteval._safe_read.files.not_text`). A UTF-8 byte-order mark is skipped, as in every
text file deteval reads.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from types import ModuleType
from typing import Any

from deteval._safe_read.files import BOM, MAX_BYTES, not_text, read_bytes
from deteval.errors import InputError, shorten

#: orjson once imported (:func:`orjson_module`); False until then.
_orjson: ModuleType | None | bool = False


def orjson_module() -> ModuleType | None:
    """orjson, imported on first use; None where it is not installed.

    orjson parses COCO-sized files 2-3x faster than the standard library, but importing it costs
    ~5 ms (it imports uuid, zoneinfo and json): a run whose files the compiled readers parse, with
    only a small rest of a document left (:func:`loads_small`), never imports it.
    """
    global _orjson
    if _orjson is False:
        try:
            import orjson
        except ImportError:  # pragma: no cover - orjson is a declared dependency
            _orjson = None
        else:
            _orjson = orjson
    return _orjson  # type: ignore[return-value]


def orjson_loads(raw: bytes | bytearray | memoryview | str) -> Any:
    """``orjson.loads(raw)``, orjson imported on the first call (what a lazily decoded item keeps)."""
    module = orjson_module()
    assert module is not None  # the readers that keep it check orjson_module() first
    return module.loads(raw)


#: Texts up to this size may be decoded by the standard library (:func:`loads_small`).
SMALL_JSON_BYTES = 64 << 10

#: What :func:`loads_small` returns when the standard library's value could differ from orjson's.
DECLINED: Any = object()

__all__ = [
    "loads_strict",
    "loads_small",
    "orjson_module",
    "orjson_loads",
    "read_json",
    "count_raw_keys",
    "count_json_keys",
    "json_keys",
    "MAX_DEPTH",
    "not_json_text",
]

#: Deepest nesting of arrays and objects accepted in a JSON input. COCO needs 5 levels (file,
#: ``annotations``, record, ``segmentation``, polygon); deeper documents are refused with a clear
#: error before anything could recurse over them (orjson's own limit is 1024, Python's 1000).
MAX_DEPTH = 100

_SPACED_KEY = re.compile(rb'"[ \t\n\r]+:')
#: A JSON string, whole (escapes skipped), then the ``:`` that makes it a key when there is one.
_STRING_THEN_COLON = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"([ \t\n\r]*:)?', re.DOTALL)
#: The same, with the string's text as the first group.
_KEY_STRING = re.compile(rb'("[^"\\]*(?:\\.[^"\\]*)*")([ \t\n\r]*:)?', re.DOTALL)


def not_json_text(raw: bytes) -> str | None:
    r"""What ``raw`` is when it cannot be UTF-8 JSON text (compressed, UTF-16/32), else None.

    Examples
    --------
    >>> not_json_text(b"\x1f\x8b\x08\x00")
    'gzip-compressed; expected JSON text: decompress it first (gunzip)'
    >>> not_json_text(b"[1]") is None
    True
    """
    return not_text(raw, "JSON text")


def count_raw_keys(raw: bytes) -> int:
    r"""An upper bound of the object keys in the JSON text ``raw``, exact for ordinary files.

    Every key is a string followed by optional whitespace and ``:``; outside strings a ``"``
    cannot occur, so counting ``"`` + whitespace + ``:`` counts every key once, plus any such text
    inside a string value (``"a\" : b"``). With the keys actually parsed (duplicates collapse
    into one), a smaller parsed count means a duplicate key or such a string -- either way the
    exact check runs. ``"score" : 0.1`` is counted like ``"score": 0.1``.

    Examples
    --------
    >>> count_raw_keys(b'{"a": 1, "b" : 2, "c"\n:3}')
    3
    """
    return raw.count(b'":') + len(_SPACED_KEY.findall(raw))


def count_json_keys(raw: bytes) -> int:
    r"""The object keys in the JSON text ``raw``, exactly: what :func:`count_raw_keys` bounds.

    Strings are matched whole, from the first quote on, so a ``":`` inside a string value (an RLE
    ``counts`` string that opens with ``:``, a name ``"x\": 1"``) is not counted: on valid JSON
    (a quote outside strings always opens one) this is the number of keys, duplicates included.
    Slower than :func:`count_raw_keys` (a regular expression over every string): the exact check
    when that count is above the parsed keys, before a decision to refuse.

    Examples
    --------
    >>> count_json_keys(b'{"a": ":", "b" : "\\" :", "c"\n:[":"]}')
    3
    >>> count_raw_keys(b'{"a": ":", "b" : "\\" :", "c"\n:[":"]}')
    6
    """
    found = _STRING_THEN_COLON.findall(raw)
    return len(found) - found.count(b"")


def json_keys(raw: bytes) -> list[bytes]:
    r"""The keys of the JSON text ``raw`` as written (quotes and escapes kept), in order.

    As :func:`count_json_keys` counts them: for small texts (an RLE object, ``{"size": [h, w],
    "counts": "..."}``) whose keys must be known exactly, duplicates included.

    Examples
    --------
    >>> json_keys(b'{"size": [2, 2], "counts": ":3"}')
    [b'"size"', b'"counts"']
    """
    return [key for key, colon in _KEY_STRING.findall(raw) if colon]


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests arrays/objects more than ``limit`` levels (iterative, level by level).

    Each level is scanned at C speed (``map(type, ...)``); only the containers of the next level
    are collected in Python.
    """
    level = [value] if isinstance(value, (list, dict)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        children = itertools.chain.from_iterable(
            item.values() if type(item) is dict else item for item in level
        )
        level = [v for v in children if type(v) is list or type(v) is dict]
    return False


def loads_strict(raw: bytes, where: str) -> Any:
    """Parse ``raw`` strictly.

    Reject NaN/Infinity tokens, duplicate keys inside an object, nesting deeper than
    :data:`MAX_DEPTH`, and compressed or UTF-16 files (named as such); skip a UTF-8 BOM.

    The duplicate-key check is structural: a count of the keys in the text (:func:`count_raw_keys`,
    whitespace before the colon included) against the parsed keys; only when the counts differ
    (a duplicate, or a string that happens to contain ``":``) does the slow exact check run.

    Examples
    --------
    >>> loads_strict(b'[{"score": 0.9}]', "dt.json")
    [{'score': 0.9}]
    >>> loads_strict(b'[{"score" : 0.9, "score" : 0.1}]', "dt.json")
    Traceback (most recent call last):
    ...
    deteval.errors.InputError: dt.json: duplicate key 'score' in one JSON object (first value 0.9, then 0.1); expected each key once
    """
    if raw.startswith(BOM):  # one policy with every text file: a UTF-8 byte-order mark is skipped
        raw = raw[len(BOM) :]
    what = not_json_text(raw)
    if what is not None:
        raise InputError(f"{where}: invalid JSON: the file is {what}")
    orjson = orjson_module()
    if orjson is not None:
        try:
            data = orjson.loads(raw)
        except RecursionError:
            raise _too_deep_error(where) from None
        except orjson.JSONDecodeError as exc:
            if any(word in str(exc).lower() for word in ("recursion", "depth limit")):  # orjson < / >= 3.10
                raise _too_deep_error(where) from None
            raise InputError(f"{where}: invalid JSON: {_describe(exc, raw)}") from None
    else:  # pragma: no cover
        data = _stdlib_loads(raw, where)
    if _too_deep(data):
        raise _too_deep_error(where)
    if count_raw_keys(raw) != _count_keys(data):
        _stdlib_loads(raw, where)  # raises on a real duplicate
    return data


def loads_small(raw: bytes) -> Any:
    r"""``orjson.loads(raw)`` of a small text, by the standard library; :data:`DECLINED` where they may differ.

    For a few kilobytes (what the compiled instances readers leave of a document: categories,
    ``info``, ``licenses``) importing orjson costs more than decoding with ``json``. Declined, for
    orjson to decide: texts over :data:`SMALL_JSON_BYTES`; ``\u`` escapes (orjson refuses a lone
    surrogate); bytes that are not UTF-8; NaN and Infinity tokens and numbers beyond a double
    (orjson refuses them); integers outside [-2**63, 2**64) (orjson reads them as floats); nesting
    beyond Python's recursion limit; and anything the standard library refuses. Otherwise both give
    the same value: duplicate keys keep their last value in both (callers count keys).

    Examples
    --------
    >>> loads_small(b'{"categories": [{"id": 1, "name": "person"}]}')
    {'categories': [{'id': 1, 'name': 'person'}]}
    >>> loads_small(b'[NaN]') is DECLINED, loads_small(b'[1e400]') is DECLINED
    (True, True)
    >>> loads_small(b'["\\ud800"]') is DECLINED
    True
    """
    if len(raw) > SMALL_JSON_BYTES or b"\\u" in raw:
        return DECLINED
    try:
        return json.loads(
            raw.decode("utf-8"),
            parse_constant=_refuse_token,
            parse_float=_finite_float,
            parse_int=_orjson_int,
        )
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError and the hooks' refusals
        return DECLINED


def _refuse_token(token: str) -> None:
    raise ValueError(f"{token} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond a double")
    return value


def _orjson_int(text: str) -> int:
    value = int(text)
    if not -(2**63) <= value < 2**64:
        raise ValueError(f"{text}: orjson reads it as a float")
    return value


def _too_deep_error(where: str) -> InputError:
    return InputError(
        f"{where}: invalid JSON: arrays and objects nested more than {MAX_DEPTH} "
        f"levels deep; expected a COCO file (at most a few levels)"
    )


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
                raise InputError(
                    f"{where}: duplicate key {key!r} in one JSON object "
                    f"(first value {shorten(out[key], 40)}, then {shorten(value, 40)}); "
                    f"expected each key once"
                )
            out[key] = value
        return out

    try:
        return json.loads(raw, object_pairs_hook=no_duplicates, parse_constant=_reject_constant)
    except InputError:
        raise
    except RecursionError:
        raise _too_deep_error(where) from None
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


def read_json(path: str, *, what: str = "a JSON file", limit: int = MAX_BYTES["json"]) -> Any:
    """The strict JSON value of the regular file ``path`` (:func:`read_bytes`, :func:`loads_strict`)."""
    return loads_strict(read_bytes(path, what=what, limit=limit), path)
