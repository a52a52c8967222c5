"""Keypoint lists' numbers, read a word at a time, are Python's values bit for bit.

The compiled parser reads the common number of a keypoint list (``-?``, 1-7 digits, optionally
``.`` and 1-7 digits) eight bytes at a time, and every other token as a polygon coordinate. These
tests put tokens on both sides of that line, at every distance from the end of the bytes (the
word reads need eight bytes to spare), in keypoint results and in a ground truth's annotations.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from deteval.io.coco.fast import _colparse
from tests.support.kernels import needs_kernel

pytestmark = needs_kernel("deteval.io._colparse")

#: Tokens about the word path's edges: 7 and 8 digits on each side of the point, a lone or leading
#: zero, signs and zeros, exponents, a point without digits, integers beyond 18 digits.
TOKENS = (
    "0",
    "-0",
    "0.0",
    "-0.0",
    "-0.000",
    "7",
    "-7",
    "1.5",
    "355.84",
    "-0.5",
    "0.05",
    "1234567",
    "12345678",
    "1234567.1234567",
    "-1234567.1234567",
    "1234567.12345678",
    "12345678.1234567",
    "9999999.9999999",
    "0.0000001",
    "0.00000001",
    "0.1234567",
    "1e5",
    "1.5E-3",
    "2.5e+2",
    "12e1",
    "1.",
    ".5",
    "01",
    "-",
    "--1",
    "1..2",
    "1.2.3",
    "999999999999999999",
    "1000000000000000000",
    "123456789012345678.5",
)


def _value(token: str) -> float | None:
    """What the parser must give for ``token`` in a keypoint list: Python's float, or None (refused)."""
    try:
        value = json.loads(token)
    except ValueError:
        return None
    if isinstance(value, int):
        return None if len(token.lstrip("-")) > 18 else float(value)
    return value


def _keypoint_results(raw: bytes) -> np.ndarray | None:
    cap = len(raw) // 61 + 1
    ids, cats, score = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap)
    numbers = np.empty(len(raw) // 2 + 1)
    found = _colparse.keypoint_results(raw, ids, cats, score, numbers, None, True, True, 0, 1)
    return None if found is None else numbers[: found[0] * found[1]]


def _instances(raw: bytes) -> np.ndarray | None:
    cap = len(raw) // 76 + 1
    ints = [np.empty(cap, np.int64) for _ in range(8)]
    box, area, numbers = np.empty(4 * cap), np.empty(cap), np.empty(len(raw) // 2 + 1)
    found = _colparse.instances(raw, *ints[:3], box, area, *ints[3:], numbers, np.empty(cap, np.int64), 1)
    return None if found is None else numbers[: found[0] * found[3]]


def _bits(values: list[float]) -> np.ndarray:
    return np.array(values, dtype=np.float64).view(np.uint64)


def _results_file(tokens: list[str], tail: str) -> bytes:
    listed = ",".join(tokens)
    return f'[{{"image_id":1,"category_id":1,"score":0.5,"keypoints":[{listed}]{tail}}}]'.encode()


def _instances_file(tokens: list[str], tail: str) -> bytes:
    listed = ",".join(tokens)
    return (
        '{"images":[{"id":1}],"categories":[{"id":1}],"annotations":[{"id":1,"image_id":1,'
        f'"category_id":1,"bbox":[0,0,1,1],"area":1,"iscrowd":0,"keypoints":[{listed}]{tail}}}]}}'
    ).encode()


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("tail", ["", " ", "\n" * 9, ',"num_keypoints":1'])
@pytest.mark.parametrize("where", ["first", "last"])
def test_a_keypoint_number_is_pythons_value(token, tail, where):
    tokens = [token, "2.5", "1"] if where == "first" else ["2.5", "1", token]
    want = _value(token)
    for read, make in ((_keypoint_results, _results_file), (_instances, _instances_file)):
        if read is _keypoint_results and tail.startswith(","):
            continue  # num_keypoints is an annotation's key
        got = read(make(tokens, tail))
        if want is None:
            assert got is None, (token, read.__name__)
        else:
            assert got is not None, (token, read.__name__)
            expected = [want, 2.5, 1.0] if where == "first" else [2.5, 1.0, want]
            assert np.array_equal(got.view(np.uint64), _bits(expected)), (token, read.__name__)


@pytest.mark.parametrize("seed", range(3))
def test_random_keypoint_numbers_are_pythons_values(seed):
    """Decimals of 1-9 digits before and 0-9 after the point, signs, JSON spacing, in long lists."""
    rng = random.Random(seed)
    tokens = []
    for _ in range(3000):
        whole = str(rng.randrange(10 ** rng.randint(1, 9)))
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 9)))
        sign = "-" if rng.random() < 0.3 else ""
        tokens.append(f"{sign}{whole}.{fraction}" if fraction else f"{sign}{whole}")
    spaced = [rng.choice(["", " ", "\n  "]) + t + rng.choice(["", " ", "\t"]) for t in tokens]
    want = _bits([_value(t) for t in tokens])  # type: ignore[misc]
    for raw in (_results_file(spaced, ""), _instances_file(spaced, "")):
        got = _keypoint_results(raw) if raw.startswith(b"[") else _instances(raw)
        assert got is not None
        assert np.array_equal(got.view(np.uint64), want)
