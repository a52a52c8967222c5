r"""Property: ``loads_small`` (the standard library) gives orjson's value exactly, or declines.

The compiled instances readers leave a few kilobytes of a document (categories, ``info``,
``licenses``) that the standard library decodes without importing orjson. Generated texts mix
JSON values of every kind with what the two decoders treat differently: NaN and Infinity tokens,
numbers beyond a double, integers beyond 64 bits, ``\u`` escapes and lone surrogates, control
characters, bytes that are not UTF-8, duplicate keys, deep nesting, odd whitespace.
"""

from __future__ import annotations

import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval._safe_read.strict_json import DECLINED, SMALL_JSON_BYTES, loads_small

numbers = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(
        [
            "-0",
            "-0.0",
            "1e400",
            "-1e400",
            "1e-400",
            "1E5",
            "1.7976931348623159e308",
            str(2**64),
            str(-(2**63) - 1),
        ]
    ),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "01", "1.", ".5", "+1", "0x10", "1_0"]),
)
strings = st.one_of(
    st.text(max_size=8).map(lambda t: json.dumps(t, ensure_ascii=False)),
    st.text(max_size=8).map(json.dumps),  # \\u escapes of everything beyond ASCII
    st.sampled_from(
        ['"\\ud800"', '"\\ud83d\\ude00"', '"a\\x"', '"a\x01b"', '"\\/"', '"\x7f"', '"tab\there"']
    ),
)
scalars = st.one_of(numbers, strings, st.sampled_from(["true", "false", "null", "nul", "True"]))
WS = st.sampled_from(["", " ", "\n", "\t", "\r\n", "\u00a0", "\x0c"])


def _object(items):
    return "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"


values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(st.one_of(strings, st.just('"id"')), inner), max_size=4).map(_object),
    ),
    max_leaves=12,
)


@st.composite
def texts(draw):
    text = draw(WS) + draw(values) + draw(WS)
    raw = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 19)) == 0:
        raw = raw.replace(b"a", b"\xff", 1)  # not UTF-8
    if draw(st.integers(0, 29)) == 0:
        raw = b"[" * 1200 + b"]" * 1200  # beyond Python's recursion limit
    return raw


@settings(max_examples=1500, deadline=None)
@given(texts())
def test_the_standard_library_value_is_orjsons_or_declined(raw):
    small = loads_small(raw)
    if small is DECLINED:
        return
    assert repr(small) == repr(orjson.loads(raw))  # types (int / float), -0.0, key order included


def test_large_texts_are_declined():
    raw = b"[" + b"1," * (SMALL_JSON_BYTES // 2) + b"1]"
    assert loads_small(raw) is DECLINED
    assert loads_small(b"[1]") == [1]
