"""A box-results file streamed in parts (fast._stream_box_results) against the whole-file paths.

The streamed reader parses a plain file part by part (cut after a record's ``}``) with the C
extension's ``box_results_part`` and joins each part's ids at once; anything else goes back to
the whole-file paths. These tests check, on many generated files and with tiny parts (so that the
read boundaries fall at every byte of a record), that the streamed columns equal the whole-file
fast path's bit for bit, that every file it declines gives exactly today's result or error, and
the file cases: empty, one record, late non-plain records, truncation, trailing garbage, a file
that changes while read, a FIFO.
"""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest

from deteval import _speedups
from deteval._dtypes import row_dtype
from deteval._safe_read import recording_reads
from deteval.data import Detections
from deteval.errors import DetevalError, InputError
from deteval.io.category_map import _with_categories
from deteval.io.coco import fast, load_coco_dt, load_coco_gt, results
from deteval.io.identity import _named
from tests.support.kernels import needs_kernel

_colparse = _speedups.load("deteval.io._colparse")  # None: not built, stale or disabled

pytestmark = needs_kernel("deteval.io._colparse")

N_IMAGES, CATEGORIES = 12, (1, 2, 5, 9)


@pytest.fixture(autouse=True)
def compiled(monkeypatch):
    """The compiled path switched on, whatever DETEVAL_NO_EXTENSION said at import."""
    monkeypatch.setattr(fast, "_colparse", _colparse)


@pytest.fixture(scope="module")
def gt():
    return load_coco_gt(
        {
            "images": [{"id": i, "width": 100, "height": 80} for i in range(1, N_IMAGES + 1)],
            "categories": [{"id": c, "name": f"c{c}"} for c in CATEGORIES],
            "annotations": [],
        }
    )


def _bits(column: np.ndarray) -> np.ndarray:
    return column.view(np.int64) if column.dtype == np.float64 else column


def assert_same(a: Detections, b: Detections) -> None:
    """Equal Detections: every column equal in value (floats bit for bit), equal warnings."""
    for name in ("image", "category", "box", "score", "order", "has_box"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape, name
        assert np.array_equal(_bits(x), _bits(y)), name
    assert a.warnings == b.warnings
    assert a.source == b.source
    if a.segmentation is None or b.segmentation is None:
        assert a.segmentation is b.segmentation
    else:
        assert tuple(a.segmentation) == tuple(b.segmentation)


class _Trickle(io.RawIOBase):
    """A reader of ``raw`` whose reads return at most the next of ``sizes`` bytes (cycled)."""

    def __init__(self, raw: bytes, sizes: list[int]):
        self._raw, self._sizes, self._at, self._k = raw, sizes, 0, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        size = min(len(buffer), self._sizes[self._k % len(self._sizes)], len(self._raw) - self._at)
        self._k += 1
        buffer[:size] = self._raw[self._at : self._at + size]
        self._at += size
        return size


def _parts_columns(raw: bytes, gt, sizes: list[int], chunk_size: int):
    parts = fast._BoxParts(len(raw), gt, None)
    if not fast._read_parts(_Trickle(raw, sizes), parts, len(raw), chunk_size):
        return None
    return parts.finish()


def _whole(raw: bytes, gt, path: str = "dt.json", cmap=None) -> Detections | None:
    return fast._fast_box_results(raw, path, gt, cmap)


def _number(rng: np.random.Generator) -> str:
    kind = rng.integers(8)
    if kind == 0:
        return str(int(rng.integers(0, 500)))
    if kind == 1:
        return "-0" if rng.random() < 0.5 else "-0.0"
    if kind == 2:
        return f"{rng.random() * 10.0 ** int(rng.integers(-3, 4)):.{int(rng.integers(1, 20))}g}"
    if kind == 3:
        return f"{rng.integers(1, 99)}e{rng.integers(-30, 30)}"
    if kind == 4:
        return "0." + "".join(str(d) for d in rng.integers(0, 10, int(rng.integers(1, 30))))
    if kind == 5:
        return f"{rng.random():.17g}"
    if kind == 6:
        return f"{rng.integers(1, 10)}.{rng.integers(0, 99)}E+{rng.integers(0, 3)}"
    return repr(float(rng.random() * 300))


def _space(rng: np.random.Generator) -> str:
    return "".join(rng.choice([" ", "\n", "\t", "\r\n", ""], size=int(rng.integers(0, 3))))


def _record(rng: np.random.Generator, *, image: int | None = None) -> str:
    fields = [
        f'"image_id"{_space(rng)}:{_space(rng)}{image if image is not None else rng.integers(1, N_IMAGES + 1)}',
        f'"category_id":{_space(rng)}{rng.choice(CATEGORIES)}',
        '"bbox":[' + ",".join(_space(rng) + _number(rng) + _space(rng) for _ in range(4)) + "]",
        f'"score":{_number(rng)}',
    ]
    order = rng.permutation(4)
    return "{" + _space(rng) + ("," + _space(rng)).join(fields[i] for i in order) + _space(rng) + "}"


def _file(rng: np.random.Generator, n: int) -> bytes:
    records = [_record(rng) for _ in range(n)]
    text = (
        _space(rng) + "[" + _space(rng) + ("," + _space(rng)).join(records) + _space(rng) + "]" + _space(rng)
    )
    return text.encode()


# --------------------------------------------------------------------------------------
# The parts read as the whole file is


def test_parts_are_cut_only_after_a_record():
    raw = b'[{"image_id":1,"category_id":1,"bbox":[1,2,3,4],"score":0.5},\n {"image_id":2,"category_id":2,"bbox":[1,2,3,4],"score":1}]'
    cut = raw.index(b"}") + 1
    n = 3
    ids, cats, box, score = (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(4 * n), np.empty(n))
    assert _colparse.box_results_part(raw[:cut], True, False, ids, cats, box, score) == 1
    assert _colparse.box_results_part(raw[cut:], False, True, ids[1:], cats[1:], box[4:], score[1:]) == 1
    assert ids[:2].tolist() == [1, 2]
    assert score[:2].tolist() == [0.5, 1.0]
    # a part that is not the last must end with a record; the first must start with [
    assert _colparse.box_results_part(raw[: cut + 1], True, False, ids, cats, box, score) is None
    assert _colparse.box_results_part(raw[cut:], True, True, ids, cats, box, score) is None
    assert _colparse.box_results_part(raw[:cut], True, True, ids, cats, box, score) is None  # no ]
    assert _colparse.box_results_part(b" ] ", False, True, ids, cats, box, score) == 0
    assert _colparse.box_results_part(b",]", False, True, ids, cats, box, score) is None
    assert _colparse.box_results_part(b"] x", False, True, ids, cats, box, score) is None
    assert _colparse.box_results_part(b"", False, True, ids, cats, box, score) is None
    assert _colparse.box_results_part(raw, True, True, ids[:1], cats, box, score) is None  # capacity


def test_read_boundaries_at_every_byte(gt):
    rng = np.random.default_rng(0)
    raw = _file(rng, 4)
    whole = _whole(raw, gt)
    assert whole is not None
    for first in range(1, len(raw) + 1):
        for chunk_size in (1, 7, 64):
            got = _parts_columns(raw, gt, [first, len(raw)], chunk_size)
            assert got is not None, (first, chunk_size)
            image, category, box, score, _ = got
            assert np.array_equal(image, whole.image)
            assert np.array_equal(category, whole.category)
            assert np.array_equal(_bits(box), _bits(whole.box))
            assert np.array_equal(_bits(score), _bits(whole.score))


@pytest.mark.parametrize("seed", range(40))
def test_generated_files_stream_as_read_whole(gt, tmp_path, seed):
    rng = np.random.default_rng(seed)
    raw = _file(rng, int(rng.integers(1, 60)))
    path = tmp_path / "dt.json"
    path.write_bytes(raw)
    whole = _whole(raw, gt, str(path))
    assert whole is not None
    for chunk_size in (1, int(rng.integers(2, 200)), int(rng.integers(200, 5000)), 1 << 20):
        streamed = fast._stream_box_results(str(path), gt, chunk_size=chunk_size)
        assert streamed is not None
        assert_same(streamed, whole)
    sizes = [int(s) for s in rng.integers(1, 300, size=7)]
    got = _parts_columns(raw, gt, sizes, int(rng.integers(1, 400)))
    assert got is not None
    assert np.array_equal(_bits(got[2]), _bits(whole.box))


def test_loader_streams_a_file_by_path(gt, tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    path = tmp_path / "dt.json"
    path.write_bytes(_file(rng, 300))
    calls = []
    real = fast._stream_box_results
    monkeypatch.setattr(results, "_stream_box_results", lambda *a, **k: calls.append(a) or real(*a, **k))
    with recording_reads() as log:
        streamed = load_coco_dt(path, gt)
    assert calls
    assert len(log.files) == 1
    monkeypatch.setattr(results, "_stream_box_results", lambda *a, **k: None)
    assert_same(streamed, load_coco_dt(path, gt))
    assert_same(load_coco_dt(str(path), gt), streamed)


def test_warnings_are_those_of_the_whole_file(tmp_path):
    """Degenerate boxes, normalized boxes and the YOLO index suspicion, summed over the parts."""
    yolo_gt = _with_categories(_named([f"{i}.jpg" for i in range(1, 20)]), [0, 1, 2], ["a", "b", "c"])
    records = [
        {
            "image_id": 1 + i % 19,
            "category_id": 1 + i % 2,
            "bbox": [0.1, 0.1, 0.0 if i % 5 else 0.2, 0.3],
            "score": 0.5,
        }
        for i in range(200)
    ]
    raw = json.dumps(records).encode()
    path = tmp_path / "dt.json"
    path.write_bytes(raw)
    whole = _whole(raw, yolo_gt, str(path))
    assert whole is not None
    assert whole.warnings
    for chunk_size in (1, 100, 1000, 1 << 20):
        streamed = fast._stream_box_results(str(path), yolo_gt, chunk_size=chunk_size)
        assert streamed is not None
        assert_same(streamed, whole)


@pytest.mark.parametrize("cmap", ["index0", "index1", {1: 1, 2: "c5", 3: 9}])
def test_category_maps(gt, tmp_path, cmap):
    from deteval.io.category_map import read_category_map

    records = [
        {"image_id": 1 + i % 5, "category_id": 1 + i % 2, "bbox": [1, 2, 3, 4], "score": i / 10}
        for i in range(30)
    ]
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(records))
    category_map = read_category_map(cmap)
    whole = _whole(path.read_bytes(), gt, str(path), category_map)
    streamed = fast._stream_box_results(str(path), gt, category_map, chunk_size=50)
    assert whole is not None
    assert streamed is not None
    assert_same(streamed, whole)


# --------------------------------------------------------------------------------------
# Declined files: exactly today's result or error


def _today(path, gt, monkeypatch, **options):
    """load_coco_dt with the streaming switched off: the result or the error message."""
    with monkeypatch.context() as m:
        m.setattr(results, "_stream_box_results", lambda *a, **k: None)
        try:
            return load_coco_dt(path, gt, **options)
        except DetevalError as exc:
            return f"{type(exc).__name__}: {exc}"


def _now(path, gt, **options):
    try:
        return load_coco_dt(path, gt, **options)
    except DetevalError as exc:
        return f"{type(exc).__name__}: {exc}"


def _check_as_today(path, gt, monkeypatch, chunk_size=64, **options):
    monkeypatch.setattr(fast, "_STREAM_CHUNK", chunk_size)
    monkeypatch.setattr(
        results,
        "_stream_box_results",
        lambda p, g, c, **k: fast._stream_box_results(p, g, c, chunk_size=chunk_size, **k),
    )
    now = _now(path, gt, **options)
    today = _today(path, gt, monkeypatch, **options)
    if isinstance(today, str):
        assert now == today
    else:
        assert isinstance(now, Detections)
        assert_same(now, today)
    return now


PLAIN = [
    {"image_id": 1 + i % N_IMAGES, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5} for i in range(40)
]


def _late(change: dict) -> list:
    return [*PLAIN[:-1], {**PLAIN[-1], **change}]


DECLINED = {
    "empty": b"[]",
    "empty spaced": b" [ \n ] \n",
    "empty file": b"",
    "whitespace": b"   \n",
    "not an array": b'{"annotations": []}',
    "late extra key": json.dumps(_late({"extra": 1})).encode(),
    "late segmentation": json.dumps(_late({"segmentation": [[1, 2, 3, 4, 5, 6]]})).encode(),
    "late string id": json.dumps(_late({"image_id": "1"})).encode(),
    "late float id": json.dumps(_late({"image_id": 1.0})).encode(),
    "late unknown image": json.dumps(_late({"image_id": 987654})).encode(),
    "late unknown category": json.dumps(_late({"category_id": 3})).encode(),
    "late negative width": json.dumps(_late({"bbox": [1, 2, -3, 4]})).encode(),
    "late NaN": json.dumps(_late({"score": float("nan")})).encode(),
    "late huge number": json.dumps(_late({})).encode().replace(b'"score": 0.5}]', b'"score": 1e999}]'),
    "late duplicate key": json.dumps(PLAIN).encode()[:-2] + b', "score": 0.1}]',
    "late nested": json.dumps(_late({"bbox": [[1, 2, 3, 4]]})).encode(),
    "truncated": json.dumps(PLAIN).encode()[:-1],
    "truncated mid record": json.dumps(PLAIN).encode()[:-30],
    "truncated after comma": json.dumps(PLAIN).encode()[:-1][: json.dumps(PLAIN).rindex("{")],
    "trailing garbage": json.dumps(PLAIN).encode() + b"x",
    "trailing array": json.dumps(PLAIN).encode() + b"[]",
    "trailing comma": json.dumps(PLAIN).encode()[:-1] + b",]",
    "missing comma": json.dumps(PLAIN).encode().replace(b"}, {", b"} {", 1),
    "bom": b"\xef\xbb\xbf" + json.dumps(PLAIN).encode(),
    "gzip": b"\x1f\x8b\x08\x00" + b"}" * 80,
    "brace in a key": json.dumps(_late({"a}b": 1})).encode(),
}


@pytest.mark.parametrize("name", sorted(DECLINED))
@pytest.mark.parametrize("chunk_size", [1, 64, 1 << 20])
def test_declined_files_give_todays_result(gt, tmp_path, monkeypatch, name, chunk_size):
    path = tmp_path / "dt.json"
    path.write_bytes(DECLINED[name])
    assert fast._stream_box_results(str(path), gt, chunk_size=chunk_size) is None
    _check_as_today(path, gt, monkeypatch, chunk_size)


def test_dropped_categories_as_today(gt, tmp_path, monkeypatch):
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(_late({"category_id": 3})))
    now = _check_as_today(path, gt, monkeypatch, unknown_category="drop")
    assert isinstance(now, Detections)
    assert len(now) == len(PLAIN) - 1


def test_plain_segm_results_take_their_own_path(gt, tmp_path, monkeypatch):
    records = [{**r, "segmentation": [[1, 2, 3, 4, 5, 6]]} for r in PLAIN]
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(records))
    now = _check_as_today(path, gt, monkeypatch)
    assert isinstance(now, Detections)
    assert now.segmentation is not None


def test_missing_path_and_folder_as_today(gt, tmp_path, monkeypatch):
    assert "file not found" in _check_as_today(tmp_path / "missing.json", gt, monkeypatch)
    assert fast._stream_box_results(str(tmp_path), gt) is None  # the whole-file reader decides


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_left_to_the_whole_file_reader(gt, tmp_path, monkeypatch):
    """A FIFO (a /dev/stdin-like input) is never streamed: the whole-file reader decides (today it refuses it)."""
    fifo = tmp_path / "dt.fifo"
    os.mkfifo(fifo)
    assert fast._stream_box_results(str(fifo), gt) is None  # opened without blocking, not read
    now = _check_as_today(fifo, gt, monkeypatch)
    assert "FIFO" in now


def test_without_the_extension_nothing_streams(gt, tmp_path, monkeypatch):
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(PLAIN))
    monkeypatch.setattr(fast, "_colparse", None)
    assert fast._stream_box_results(str(path), gt) is None
    assert len(load_coco_dt(path, gt)) == len(PLAIN)


# --------------------------------------------------------------------------------------
# A file that changes while it is read


def test_a_file_changed_while_read_is_an_error(gt, tmp_path, monkeypatch):
    """Appended to while streamed: an error naming the file (its parts may mix two versions)."""
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(PLAIN))
    grown = json.dumps(PLAIN * 2)
    real_feed = fast._BoxParts.feed

    def feed(self, raw, *, first, last):
        if first:
            path.write_text(grown)
        return real_feed(self, raw, first=first, last=last)

    monkeypatch.setattr(fast._BoxParts, "feed", feed)
    with pytest.raises(InputError, match=f"^{path}: changed while read"):
        fast._stream_box_results(str(path), gt, chunk_size=100)
    monkeypatch.setattr(fast._BoxParts, "feed", real_feed)
    assert len(load_coco_dt(path, gt)) == 2 * len(PLAIN)  # once the writer is done, it loads


@pytest.mark.parametrize("size_change", [-1, 1])
def test_more_or_fewer_bytes_than_the_size_are_counted(gt, size_change):
    """Reading stops past the size, or at the end: the count differs from it (check_unchanged refuses)."""
    raw = json.dumps(PLAIN).encode()
    parts = fast._BoxParts(len(raw), gt, None)
    n_read = fast._read_parts(_Trickle(raw, [50]), parts, len(raw) + size_change, 64)
    assert n_read is not None
    assert n_read != len(raw) + size_change


def test_a_long_run_of_whitespace_grows_the_buffer(gt):
    raw = json.dumps(PLAIN[:3]).encode().replace(b"}, {", b"}," + b" " * 5000 + b"{")
    got = _parts_columns(raw, gt, [len(raw)], 16)
    assert got is not None
    assert len(got[0]) == 3


def test_named_images_are_joined_at_the_end(tmp_path):
    named = _with_categories(_named(["1.jpg", "2.jpg", "007.png", "x.jpg"]), [1, 2], ["a", "b"])
    records = [
        {"image_id": i, "category_id": 1 + i % 2, "bbox": [1, 2, 3, 4], "score": 0.5} for i in (1, 2, 7, 7)
    ]
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(records * 20))
    whole = _whole(path.read_bytes(), named, str(path))
    streamed = fast._stream_box_results(str(path), named, chunk_size=33)
    assert whole is not None
    assert streamed is not None
    assert_same(streamed, whole)
    path.write_text(json.dumps([*records, {**records[0], "image_id": 3}]))
    assert fast._stream_box_results(str(path), named, chunk_size=33) is None


def test_the_file_is_never_held_whole(gt, tmp_path, monkeypatch):
    """Streamed: no part larger than the chunk is parsed (the file is never read whole)."""
    path = tmp_path / "dt.json"
    path.write_bytes(_file(np.random.default_rng(3), 2000))
    sizes = []
    real = fast._BoxParts.feed
    monkeypatch.setattr(
        fast._BoxParts, "feed", lambda self, raw, **k: sizes.append(len(raw)) or real(self, raw, **k)
    )
    assert len(fast._stream_box_results(str(path), gt, chunk_size=4096)) == 2000
    assert max(sizes) <= 4096
    assert len(sizes) > 10


# --------------------------------------------------------------------------------------
# Index columns: int32 on every path


def test_fast_and_full_paths_give_equal_int32_index_columns(gt, tmp_path, monkeypatch):
    """Streamed, whole-file fast and full loader: equal columns (values), int32 index columns."""
    records = [
        {"image_id": 1 + i % N_IMAGES, "category_id": CATEGORIES[i % 4], "bbox": [i, 2, 3, 4], "score": i / 7}
        for i in range(100)
    ]
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(records))
    streamed = load_coco_dt(path, gt)
    monkeypatch.setattr(results, "_stream_box_results", lambda *a, **k: None)
    whole = load_coco_dt(path, gt)
    monkeypatch.setattr(results, "_fast_box_results_held", lambda *a, **k: None)
    full = load_coco_dt(path, gt)
    in_memory = load_coco_dt(records, gt)
    for dt in (streamed, whole, full, in_memory):
        for name in ("image", "category", "order"):
            assert getattr(dt, name).dtype == np.int32, name
        for name in ("image", "category", "order", "box", "score", "has_box"):
            assert np.array_equal(getattr(dt, name), getattr(full, name)), name
    # The loaders' index columns take the one rule of deteval._dtypes: int32 while every row
    # index (0 .. n - 1) fits.
    assert row_dtype(2**31) == np.int32
    assert row_dtype(2**31 + 1) == np.int64
