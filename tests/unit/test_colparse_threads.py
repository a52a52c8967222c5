"""The compiled results parsers on several threads give the one thread's columns, bit for bit.

Each parser (box, box parts, keypoint, polygon and RLE segm results) cuts its bytes after records
and parses the parts at once (``threads``); the columns and the outcome (None for a file that is
not plain) must be those of ``threads=1`` for every count, including more parts than records.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from deteval.io.coco.fast import _colparse

pytestmark = pytest.mark.skipif(_colparse is None, reason="the compiled parser is not built")

THREADS = (2, 3, 7, 64, 1000)

#: Numbers in every JSON form the parsers read: integers, -0, fractions, exponents of each case and
#: sign, more than 19 significant digits and exponents past 22 (Python's own conversion).
NUMBER_FORMS = (
    "0",
    "-0",
    "7",
    "-12",
    "0.5",
    "-0.0",
    "1e5",
    "1E-5",
    "2.5e+3",
    "-3.25E2",
    "123456789012345678901234",
    "0.12345678901234567890123",
    "1.2345678901234567e-30",
    "9.87654321e40",
    "4.9e-324",
    "0.1",
)


def _number(rng: random.Random) -> str:
    return rng.choice(NUMBER_FORMS) if rng.random() < 0.5 else repr(rng.uniform(-1e4, 1e4))


def _coordinate(rng: random.Random) -> str:
    """A number as a polygon or keypoint list may hold it (integers of at most 18 digits)."""
    number = _number(rng)
    return "1" + "0" * 17 if number == "123456789012345678901234" else number


def _space(rng: random.Random) -> str:
    return rng.choice(["", "", " ", "\n", "\t ", " \r\n  "])


def _record(fields: list[tuple[str, str]], rng: random.Random) -> str:
    rng.shuffle(fields)
    s = _space
    body = ",".join(f'{s(rng)}"{k}"{s(rng)}:{s(rng)}{v}{s(rng)}' for k, v in fields)
    return "{" + body + s(rng) + "}"


def _array(records: list[str], rng: random.Random) -> bytes:
    s = _space
    return ("[" + s(rng) + f"{s(rng)},{s(rng)}".join(records) + s(rng) + "]" + s(rng)).encode()


def _ids(rng: random.Random) -> list[tuple[str, str]]:
    return [
        ("image_id", str(rng.choice([0, -0, 5, 2**63 - 1, -(2**63), rng.randrange(10**6)]))),
        ("category_id", str(rng.randrange(-5, 100))),
    ]


def _bbox(rng: random.Random) -> str:
    return "[" + ",".join(_number(rng) for _ in range(4)) + "]"


def box_file(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    records = [_record([*_ids(rng), ("bbox", _bbox(rng)), ("score", _number(rng))], rng) for _ in range(n)]
    return _array(records, rng)


def keypoint_file(n: int, seed: int, *, with_bbox: bool = True, per: int = 9) -> bytes:
    rng = random.Random(seed)
    records = []
    for _ in range(n):
        fields = [*_ids(rng), ("score", _number(rng))]
        fields.append(("keypoints", "[" + ",".join(_coordinate(rng) for _ in range(per)) + "]"))
        if with_bbox:
            fields.append(("bbox", _bbox(rng)))
        records.append(_record(fields, rng))
    return _array(records, rng)


def polygon_file(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    records = []
    for _ in range(n):
        polys = [
            "[" + ",".join(_coordinate(rng) for _ in range(rng.randrange(1, 12))) + "]"
            for _ in range(rng.randrange(1, 4))
        ]
        segm = "[" + ",".join(polys) + "]"
        records.append(
            _record([*_ids(rng), ("bbox", _bbox(rng)), ("score", _number(rng)), ("segmentation", segm)], rng)
        )
    return _array(records, rng)


def rle_file(
    n: int,
    seed: int,
    *,
    counts_alphabet: str = "0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmno",
) -> bytes:
    rng = random.Random(seed)
    records = []
    for _ in range(n):
        counts = "".join(rng.choice(counts_alphabet) for _ in range(rng.randrange(0, 30)))
        counts = counts.replace("\\", "\\\\")
        size = f"[{rng.randrange(1, 500)},{_space(rng)}{rng.randrange(1, 500)}]"
        segm = _record([("size", size), ("counts", json.dumps(counts).replace("/", "\\/"))], rng)
        records.append(
            _record([*_ids(rng), ("bbox", _bbox(rng)), ("score", _number(rng)), ("segmentation", segm)], rng)
        )
    return _array(records, rng)


def _bits(arrays: tuple) -> list[bytes]:
    return [np.ascontiguousarray(a).tobytes() for a in arrays]


def parse_box(raw: bytes, threads: int) -> list[bytes] | None:
    cap = len(raw) // 58 + 1
    ids, cats, box, score = (
        np.empty(cap, np.int64),
        np.empty(cap, np.int64),
        np.empty(4 * cap),
        np.empty(cap),
    )
    n = _colparse.box_results(raw, ids, cats, box, score, threads)
    return None if n is None else _bits((ids[:n], cats[:n], box[: 4 * n], score[:n]))


def parse_box_parts(raw: bytes, threads: int, chunk: int) -> list[bytes] | None:
    """The file fed in chunks cut after a ``}`` (as the streamed reader feeds it), each on ``threads``."""
    cap = len(raw) // 58 + 1
    ids, cats, box, score = (
        np.empty(cap, np.int64),
        np.empty(cap, np.int64),
        np.empty(4 * cap),
        np.empty(cap),
    )
    n, start, first = 0, 0, True
    while True:
        stop = raw.rfind(b"}", start, start + chunk) + 1
        last = stop <= start or start + chunk >= len(raw)
        part = raw[start:] if last else raw[start:stop]
        got = _colparse.box_results_part(
            part, first, last, ids[n:], cats[n:], box[4 * n :], score[n:], threads
        )
        if got is None:
            return None
        n += got
        if last:
            return _bits((ids[:n], cats[:n], box[: 4 * n], score[:n]))
        start, first = stop, False


def parse_keypoints(raw: bytes, threads: int, with_bbox: bool = True) -> tuple | None:
    cap = len(raw) // 61 + 1
    ids, cats, score = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap)
    numbers, box = np.empty(len(raw) // 2 + 1), np.empty(4 * cap)
    found = _colparse.keypoint_results(
        raw, ids, cats, score, numbers, box if with_bbox else None, True, True, 0, threads
    )
    if found is None:
        return None
    n, per, n_box = found
    cols = (ids[:n], cats[:n], score[:n], numbers[: n * per]) + (
        (box[: 4 * n],) if n_box == n and n_box else ()
    )
    return found, _bits(cols)


def parse_polygons(raw: bytes, threads: int) -> tuple | None:
    cap = len(raw) // 79 + 1
    cols = [np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(4 * cap), np.empty(cap)]
    cols += [np.empty(cap, np.int64) for _ in range(3)]
    cols += [np.empty(len(raw) // 4 + 1, np.int64), np.empty(len(raw) // 2 + 1)]
    found = _colparse.segm_results(raw, *cols, threads)
    if found is None:
        return None
    n, n_part, n_coord = found
    sizes = (n, n, 4 * n, n, n, n, n, n_part, n_coord)
    return found, _bits(tuple(c[:k] for c, k in zip(cols, sizes)))


def parse_rle(raw: bytes, threads: int) -> tuple | None:
    cap = len(raw) // 99 + 1
    cols = [np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(4 * cap), np.empty(cap)]
    cols += [np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(2 * cap, np.int64)]
    cols += [np.empty(cap, np.int64), np.empty(cap, np.int64)]
    blob = np.empty(len(raw), np.uint8)
    found = _colparse.rle_results(raw, *cols, blob, threads)
    if found is None:
        return None
    n, n_blob = found
    sizes = (n, n, 4 * n, n, n, n, 2 * n, n, n)
    return found, _bits(tuple(c[:k] for c, k in zip(cols, sizes)) + (blob[:n_blob],))


MAKERS = {
    "box": (box_file, parse_box),
    "keypoints": (keypoint_file, parse_keypoints),
    "polygons": (polygon_file, parse_polygons),
    "rle": (rle_file, parse_rle),
}


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("n", [1, 2, 5, 300])
@pytest.mark.parametrize("seed", [0, 1])
def test_threads_give_one_threads_columns(kind: str, n: int, seed: int) -> None:
    make, parse = MAKERS[kind]
    raw = make(n, seed)
    one = parse(raw, 1)
    assert one is not None, raw[:300]
    refused = _colparse._parts_refused()
    for threads in THREADS:
        assert parse(raw, threads) == one, threads
    assert _colparse._parts_refused() == refused  # read on parts, not again on one thread


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_refused_file_is_refused_on_every_thread_count(kind: str) -> None:
    """A record not plain in the second half (an extra key; a non-ASCII string; 1e400): None always."""
    make, parse = MAKERS[kind]
    raw = make(200, 3)
    cut = raw.index(b"{", len(raw) * 2 // 3)
    for bad in (b'{"extra": 1, ', b'{"caf\xc3\xa9": "\xe2\x82\xac", '):
        broken = raw[:cut] + bad + raw[cut + 1 :]
        assert parse(broken, 1) is None
        for threads in THREADS:
            assert parse(broken, threads) is None, (bad, threads)
    at = raw.index(b'"score"', len(raw) * 2 // 3)
    colon = raw.index(b":", at) + 1
    end = min(raw.index(c, colon) for c in (b",", b"}") if raw.find(c, colon) >= 0)
    infinite = raw[:colon] + b"1e400" + raw[end:]
    assert parse(infinite, 1) is None
    for threads in THREADS:
        assert parse(infinite, threads) is None


def test_cut_inside_a_string_reads_as_one_thread() -> None:
    """RLE counts holding ``},{`` (a record end's look): a cut there is refused, the one thread decides."""
    raw = rle_file(100, 5, counts_alphabet="},{ ")
    assert b"},{" in raw
    one = parse_rle(raw, 1)
    assert one is not None
    for threads in THREADS:
        assert parse_rle(raw, threads) == one


def test_keypoint_lists_of_another_length_in_a_later_part() -> None:
    """Parts whose lists differ in length are refused, as one thread refuses the first such list."""
    head = keypoint_file(50, 1, per=9)
    tail = keypoint_file(50, 2, per=12)
    raw = head.rstrip()[:-1] + b"," + tail.lstrip()[1:]
    assert parse_keypoints(raw, 1) is None
    for threads in THREADS:
        assert parse_keypoints(raw, threads) is None
    same = head.rstrip()[:-1] + b"," + keypoint_file(50, 2, per=9).lstrip()[1:]
    one = parse_keypoints(same, 1)
    assert one is not None
    for threads in THREADS:
        assert parse_keypoints(same, threads) == one


@pytest.mark.parametrize("chunk", [64, 1000, 1 << 20])
def test_box_parts_on_threads(chunk: int) -> None:
    raw = box_file(400, 7)
    whole = parse_box(raw, 1)
    assert parse_box_parts(raw, 1, chunk) == whole
    for threads in THREADS:
        assert parse_box_parts(raw, threads, chunk) == whole


def test_tight_columns_fall_back_to_one_thread() -> None:
    """Columns exactly as long as the records: a part's share may be too short, the result is the same."""
    raw = box_file(64, 9)
    one = parse_box(raw, 1)
    assert one is not None
    n = len(one[0]) // 8
    for threads in THREADS:
        ids, cats, box, score = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(4 * n), np.empty(n)
        assert _colparse.box_results(raw, ids, cats, box, score, threads) == n
        assert _bits((ids, cats, box, score)) == one


def instances_file(n: int, seed: int, *, keypoints: bool = False, slow_segm: bool = False) -> bytes:
    """An instances object: images, then the annotations, then categories.

    The categories' ``},{`` lie past the array: a cut there would be refused.
    """
    rng = random.Random(seed)
    anns = []
    for i in range(n):
        fields = [
            ("id", str(i + 1)),
            *_ids(rng),
            ("bbox", _bbox(rng)),
            ("area", _number(rng)),
            ("iscrowd", rng.choice(["0", "1"])),
        ]
        if rng.random() < 0.3:
            fields.append(("ignore", "1"))
        if rng.random() < 0.3:
            fields.append(("difficult", "0"))
        form = 0.0 if slow_segm and i == n // 2 else rng.random()
        if form < 0.4:
            # numbers a segmentation check reads without Python (slow ones: the last test)
            coords = [rng.choice(["0", "-3", "2.5E2", repr(rng.uniform(0, 500))]) for _ in range(6)]
            if slow_segm and i == n // 2:
                coords[0] = "1.5e-30"
            fields.append(("segmentation", "[[" + ",".join(coords) + "]]"))
        elif form < 0.6:
            fields.append(("segmentation", '{"size": [10, 20], "counts": "abc\\\\d"}'))
        if keypoints:
            fields.append(("keypoints", "[" + ",".join(_coordinate(rng) for _ in range(6)) + "]"))
            fields.append(("num_keypoints", str(rng.randrange(3))))
        anns.append(_record(fields, rng))
    images = ",".join(f'{{"id": {i}, "width": 5}}' for i in range(5))
    cats = ",".join(f'{{"id": {i}, "name": "c{i}"}}' for i in range(5))
    array = _array(anns, rng).decode().rstrip()
    return f'{{"images": [{images}], "annotations": {array}, "categories": [{cats}]}}'.encode()


def parse_instances(raw: bytes, threads: int, keypoints: bool = False) -> tuple | None:
    cap = len(raw) // 76 + 1
    cols = [np.empty(cap, np.int64) for _ in range(3)] + [np.empty(4 * cap), np.empty(cap)]
    cols += [np.empty(cap, np.int64) for _ in range(5)]
    kp = [np.empty(len(raw) // 2 + 1), np.empty(cap, np.int64)] if keypoints else [None, None]
    found = _colparse.instances(raw, *cols, *kp, threads)
    if found is None:
        return None
    n = found[0]
    out = [c[: (4 * n if k == 3 else n)] for k, c in enumerate(cols)]
    if keypoints:
        out += [kp[0][: n * found[3]], kp[1][:n]]
    return found, _bits(tuple(out))


@pytest.mark.parametrize("n", [0, 1, 2, 5, 300])
@pytest.mark.parametrize("keypoints", [False, True])
def test_instances_on_threads(n: int, keypoints: bool) -> None:
    raw = instances_file(n, n, keypoints=keypoints)
    one = parse_instances(raw, 1, keypoints)
    assert one is not None
    refused = _colparse._parts_refused()
    for threads in THREADS:
        assert parse_instances(raw, threads, keypoints) == one, threads
    assert _colparse._parts_refused() == refused  # read on parts


def test_instances_keypoints_in_some_parts_only() -> None:
    """Keypoints in the first half's annotations only: refused, as one thread refuses it."""
    with_kp = instances_file(100, 1, keypoints=True)
    without = instances_file(100, 2)
    head = with_kp[: with_kp.index(b', "categories"')]
    tail = without[without.index(b'"annotations": ') + len(b'"annotations": ') :]
    raw = head.rstrip()[:-1].rstrip() + b"," + tail.lstrip()[1:]
    assert parse_instances(raw, 1, True) is None
    for threads in THREADS:
        assert parse_instances(raw, threads, True) is None


def test_instances_slow_segmentation_number_reads_as_one_thread() -> None:
    """A segmentation number Python must convert: the part is refused, one thread decides."""
    raw = instances_file(300, 4, slow_segm=True)
    assert b"1.5e-30" in raw
    one = parse_instances(raw, 1)
    assert one is not None
    refused = _colparse._parts_refused()
    for threads in THREADS:
        assert parse_instances(raw, threads) == one
    assert _colparse._parts_refused() == refused + len(THREADS)  # each parsed again on one thread


def test_a_refused_box_part_is_counted_once_per_call() -> None:
    """A box file refused on parts is parsed again on one thread: one refusal per call, not two."""
    raw = box_file(300, 5)
    at = raw.index(b'"score"', len(raw) * 3 // 4)
    bad = raw[:at] + b'"extra":1,' + raw[at:]  # another key late in the file: not plain
    assert parse_box(bad, 1) is None
    refused = _colparse._parts_refused()
    for threads in (2, 3, 7):
        assert parse_box(bad, threads) is None
    assert _colparse._parts_refused() == refused + 3
