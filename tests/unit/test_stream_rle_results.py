"""A compressed-RLE segm-results file streamed in parts (fast_rle._stream_rle_results).

The streamed reader parses a plain file part by part (cut after a record's ``}``) with the C
extension's ``rle_results_part`` into growing columns and one blob of counts strings. These tests
check, on generated files, for several chunk sizes and thread counts, that its columns equal the
whole-file reader's (``fast._compiled_rle_columns``) byte for byte, that the loader takes it for a
path, and that every file it declines gives exactly today's result or error.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
from pycocotools import mask as mask_utils

import deteval
from deteval import _speedups
from deteval._safe_read import recording_reads
from deteval.data import Detections
from deteval.errors import DetevalError, InputError
from deteval.io.coco import fast, fast_rle
from deteval.masks import parse_masks
from deteval.masks.sources import RleSegmentations, detection_source
from tests.support.kernels import needs_kernel

_colparse = _speedups.load("deteval.io._colparse")  # None: not built, stale or disabled

pytestmark = [
    needs_kernel("deteval.io._colparse"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]

CHUNKS = [1 << 10, 7 << 10, 64 << 10, fast._STREAM_CHUNK]
THREADS = [1, 2, 3, 7]


@pytest.fixture(autouse=True)
def compiled(monkeypatch):
    """The compiled path switched on, whatever DETEVAL_NO_EXTENSION said at import."""
    monkeypatch.setattr(fast, "_colparse", _colparse)


# --------------------------------------------------------------------------------------
# Generated files: the parser's grammar (key orders, whitespace, escapes), any counts text


def _space(rng: np.random.Generator) -> str:
    return ["", "", "", " ", "\n  ", "\t", " \r\n"][int(rng.integers(0, 7))]


def _counts(rng: np.random.Generator) -> str:
    r"""A JSON string of counts text: '0'..'o' and '/', written with ``\\`` and sometimes ``\/``."""
    chars = [chr(c) for c in rng.integers(47, 112, size=int(rng.integers(0, 300)))]
    text = "".join(chars).replace("\\", "\\\\")
    return text.replace("/", "\\/") if rng.random() < 0.5 else text


def _record(rng: np.random.Generator) -> str:
    s = lambda: _space(rng)  # noqa: E731
    size = f'"size"{s()}:{s()}[{s()}{int(rng.integers(1, 900))}{s()},{s()}{int(rng.integers(1, 900))}{s()}]'
    counts = f'"counts"{s()}:{s()}"{_counts(rng)}"'
    rle = [size, counts] if rng.random() < 0.7 else [counts, size]
    box = ",".join(f"{s()}{float(v):.3f}" for v in rng.uniform(0, 500, 4))
    fields = [
        f'"image_id"{s()}:{s()}{int(rng.integers(0, 10**6))}',
        f'"category_id"{s()}:{s()}{int(rng.integers(1, 91))}',
        f'"bbox"{s()}:{s()}[{box}]',
        f'"score"{s()}:{s()}{round(float(rng.uniform()), 4)}',
        f'"segmentation"{s()}:{s()}{{{s()}{rle[0]}{s()},{s()}{rle[1]}{s()}}}',
    ]
    if rng.random() < 0.3:  # the segmentation not last: its ``}`` is followed by ``,"key"``
        fields = [fields[i] for i in rng.permutation(5)]
    return "{" + ",".join(s() + f + s() for f in fields) + "}"


def _file(rng: np.random.Generator, n: int, tail: str = "") -> bytes:
    records = (_space(rng) + _record(rng) + _space(rng) for _ in range(n))
    return ("[" + ",".join(records) + "]" + tail).encode()


def _columns(parsed) -> list:
    columns, segmentation = parsed
    return [*columns, segmentation.sizes, segmentation.offsets, np.frombuffer(segmentation.blob, np.uint8)]


def _assert_same_columns(got, want) -> None:
    """Sizes, blob, offsets, ids, boxes, scores: equal shapes, dtypes and bytes."""
    assert got is not None
    assert want is not None
    for x, y in zip(_columns(got), _columns(want), strict=True):
        assert x.dtype == y.dtype
        assert x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def _streamed(raw: bytes, chunk_size: int, threads: int):
    parts = fast_rle.RleParts(len(raw), _colparse, threads)
    n_read = fast._read_parts(io.BytesIO(raw), parts, len(raw), chunk_size, fast_rle.record_cut)
    if n_read is None:
        return None
    assert n_read == len(raw)
    return parts.finish()


@pytest.fixture(scope="module")
def generated() -> bytes:
    return _file(np.random.default_rng(0), 700, tail=" \n\t\r\n  ")  # ends with whitespace


def test_generated_file_splits_records_inside_counts_strings(generated):
    """The test file is what it should be: read ends fall inside counts strings, escapes occur."""
    spans = [m.span(1) for m in re.finditer(rb'"counts"\s*:\s*"((?:[^"\\]|\\.)*)"', generated)]
    assert len(spans) == 700
    inside = [k for k in range(1024, len(generated), 1024) if any(a < k < b for a, b in spans)]
    assert len(inside) > 20
    assert b"\\/" in generated
    assert b"\\\\" in generated
    assert generated.endswith(b"] \n\t\r\n  ")


@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("threads", THREADS)
def test_streamed_columns_are_the_whole_files(generated, chunk_size, threads):
    whole = fast._compiled_rle_columns(generated, 1)
    refused = _colparse._parts_refused()
    _assert_same_columns(_streamed(generated, chunk_size, threads), whole)
    if chunk_size >= 64 << 10:  # parts of many records: cut on threads, not parsed again on one
        assert _colparse._parts_refused() == refused
    _assert_same_columns(fast._compiled_rle_columns(generated, threads), whole)


@pytest.mark.parametrize("seed", range(6))
def test_small_files_and_odd_chunks(seed):
    rng = np.random.default_rng(seed)
    raw = _file(rng, int(rng.integers(1, 40)), tail=_space(rng))
    whole = fast._compiled_rle_columns(raw, 1)
    for chunk_size in (1, 17, 333, len(raw)):
        for threads in (1, 3, 7):  # 7: more parts than some parts have records
            _assert_same_columns(_streamed(raw, chunk_size, threads), whole)


def test_record_cut_is_after_a_records_end_only():
    raw = bytearray(b'[{"a":{"b":1},"c":2},{"a":{"b":"x"}}, \n{"c":1}')
    assert fast_rle.record_cut(raw, len(raw)) == raw.rindex(b"}, ") + 1
    # not after an RLE object's ``}``, nor after a record's ``}`` whose next ``{`` is not read yet
    assert fast_rle.record_cut(raw, raw.rindex(b"{")) == raw.index(b"},{") + 1
    assert fast_rle.record_cut(raw, raw.index(b"},{") + 1) == 0
    assert fast_rle.record_cut(bytearray(b'[{"a":{"b":1}}'), 14) == 0
    long = bytearray(b'[{"a":1},{"b":' + b" " * 200_000 + b"2}")
    assert fast_rle.record_cut(long, len(long)) == 8  # found past the first window


@pytest.mark.parametrize(
    "raw",
    [b"[]", b"  [ ]\n", b"", b"[", b'[{"image_id":1}]', b"{}", b"[1]", b"null"],
    ids=["empty", "empty-spaced", "no-bytes", "open", "short-record", "object", "number", "null"],
)
def test_files_without_plain_records_are_declined(raw):
    assert fast._compiled_rle_columns(raw, 1) is None
    for chunk_size in (1, 1024):
        assert _streamed(raw, chunk_size, 2) is None


# --------------------------------------------------------------------------------------
# The loader: a path streams; anything declined gives today's result or error


def _gt():
    images = [{"id": i, "width": 30, "height": 20} for i in (1, 2, 3)]
    anns = [
        {"id": k + 1, "image_id": 1 + k % 3, "category_id": 1, "iscrowd": 0, "area": 40, "bbox": [2, 2, 8, 5]}
        for k in range(6)
    ]
    for a in anns:
        x, y, w, h = a["bbox"]
        a["segmentation"] = [[x, y, x + w, y, x + w, y + h, x, y + h]]
    return deteval.load_ground_truth(
        {
            "images": images,
            "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
            "annotations": anns,
        }
    )


def _mask_records(rng: np.random.Generator, n: int) -> list:
    out = []
    for _ in range(n):
        m = np.zeros((20, 30), np.uint8, order="F")
        y, x = rng.integers(0, 15), rng.integers(0, 25)
        m[y : y + rng.integers(1, 8), x : x + rng.integers(1, 8)] = 1
        out.append(
            {
                "image_id": int(rng.integers(1, 4)),
                "category_id": int(rng.integers(1, 3)),
                "bbox": [float(x), float(y), 5.0, 5.0],
                "score": round(float(rng.uniform()), 3),
                "segmentation": {"size": [20, 30], "counts": mask_utils.encode(m)["counts"].decode()},
            }
        )
    return out


def _load(path, gt, monkeypatch, *, stream: bool, chunk_size: int = 1024):
    """load_detections with the RLE streaming on (small chunks) or off: Detections, or the error."""
    with monkeypatch.context() as m:
        if stream:
            real = fast_rle._stream_rle_results
            m.setattr(
                fast_rle,
                "_stream_rle_results",
                lambda p, g, c, **k: real(p, g, c, chunk_size=chunk_size, **k),
            )
        else:
            m.setattr(fast_rle, "_stream_rle_results", lambda *a, **k: None)
        try:
            return deteval.load_detections(path, gt)
        except DetevalError as exc:
            return f"{type(exc).__name__}: {exc}"


def _assert_same_detections(a, b) -> None:
    assert isinstance(a, Detections)
    assert isinstance(b, Detections)
    for name in ("image", "category", "box", "score", "order", "has_box"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype
        assert x.tobytes() == y.tobytes(), name
    assert a.warnings == b.warnings
    assert a.source == b.source
    assert tuple(a.segmentation) == tuple(b.segmentation)


@pytest.mark.parametrize("workers", [1, "auto"])
def test_loader_streams_a_file_by_path(tmp_path, monkeypatch, workers):
    gt = _gt()
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(_mask_records(np.random.default_rng(1), 300), indent=1))
    calls = []
    real = fast_rle._stream_rle_results
    monkeypatch.setattr(fast_rle, "_stream_rle_results", lambda *a, **k: calls.append(a) or real(*a, **k))
    monkeypatch.setattr(fast, "_compiled_rle_columns", lambda *a, **k: pytest.fail("read whole"))
    with recording_reads() as log:
        streamed = deteval.load_detections(str(path), gt, workers=workers)
    assert calls
    assert len(log.files) == 1
    assert isinstance(streamed.segmentation, RleSegmentations)
    monkeypatch.undo()
    monkeypatch.setattr(fast, "_colparse", _colparse)
    whole = _load(path, gt, monkeypatch, stream=False)
    _assert_same_detections(streamed, whole)
    assert isinstance(whole.segmentation, RleSegmentations)  # today's whole-file columns
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    assert json.dumps(deteval.evaluate(gt, streamed, protocol=protocol).metrics) == json.dumps(
        deteval.evaluate(gt, whole, protocol=protocol).metrics
    )


def test_the_file_is_never_held_whole(tmp_path, monkeypatch):
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(_mask_records(np.random.default_rng(2), 500)))
    sizes = []
    real = fast_rle.RleParts.feed
    monkeypatch.setattr(
        fast_rle.RleParts, "feed", lambda self, raw, **k: sizes.append(len(raw)) or real(self, raw, **k)
    )
    assert len(fast_rle._stream_rle_results(str(path), _gt(), chunk_size=4096)) == 500
    assert max(sizes) <= 4096
    assert len(sizes) > 5


def _late(change) -> list:
    """300 plain records, the 250th (past the first parts) changed by ``change``."""
    records = _mask_records(np.random.default_rng(3), 300)
    change(records[250])
    return records


LATE = {
    "polygon": lambda r: r.update(segmentation=[[1, 1, 5, 1, 5, 5]]),
    "uncompressed": lambda r: r.update(segmentation={"size": [20, 30], "counts": [0, 600]}),
    "extra-key": lambda r: r.update(id=7),
    "no-bbox": lambda r: r.pop("bbox"),
    "string-score": lambda r: r.update(score="0.5"),
    "unknown-image": lambda r: r.update(image_id=99),
    "unknown-category": lambda r: r.update(category_id=99),
    "negative-width": lambda r: r.update(bbox=[1.0, 1.0, -2.0, 3.0]),
    "bad-counts": lambda r: r["segmentation"].update(counts="0!"),
    "brace-counts": lambda r: r["segmentation"].update(counts="a},{b"),
    "escaped-unicode": lambda r: r["segmentation"].update(counts="\u00e9"),
    "bad-size": lambda r: r["segmentation"].update(size=[-1, 30]),
}


@pytest.mark.parametrize("name", list(LATE))
def test_a_late_record_declined_gives_todays_result(tmp_path, monkeypatch, name):
    gt = _gt()
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(_late(LATE[name])))
    now = _load(path, gt, monkeypatch, stream=True)
    today = _load(path, gt, monkeypatch, stream=False)
    if isinstance(today, str):
        assert now == today
    else:
        _assert_same_detections(now, today)
    if name in ("polygon", "uncompressed", "extra-key", "unknown-image", "negative-width"):
        assert fast_rle._stream_rle_results(str(path), gt, chunk_size=1024) is None


def test_a_cut_inside_a_counts_string_falls_back(tmp_path, monkeypatch):
    """A counts string holding ``},{``: a part cut inside it is refused; the whole-file reader decides."""
    gt = _gt()
    records = _late(LATE["brace-counts"])
    raw = json.dumps(records).encode()
    at = raw.index(b'"a},{b"') + 6  # the read ends after ``{b``: the last "record end" is in the string
    assert fast_rle.record_cut(bytearray(raw[:at]), at) == at - 3
    assert _streamed(raw, at, 1) is None
    path = tmp_path / "dt.json"
    path.write_bytes(raw)
    now = _load(path, gt, monkeypatch, stream=True, chunk_size=at)
    today = _load(path, gt, monkeypatch, stream=False)
    _assert_same_detections(now, today)
    messages = []
    for dt in (now, today):
        with pytest.raises(InputError, match="counts") as caught:
            parse_masks(detection_source(dt, gt))
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("text", ["[]", "[ ]\n", "", "[", "null"])
def test_files_without_records_give_todays_result(tmp_path, monkeypatch, text):
    gt = _gt()
    path = tmp_path / "dt.json"
    path.write_text(text)
    assert fast_rle._stream_rle_results(str(path), gt) is None
    now = _load(path, gt, monkeypatch, stream=True)
    today = _load(path, gt, monkeypatch, stream=False)
    assert type(now) is type(today)
    if isinstance(today, str):
        assert now == today
    else:
        assert len(now) == len(today) == 0


def test_without_the_extension_nothing_streams(tmp_path, monkeypatch):
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(_mask_records(np.random.default_rng(4), 20)))
    monkeypatch.setattr(fast, "_colparse", None)
    assert fast_rle._stream_rle_results(str(path), _gt()) is None
    assert len(deteval.load_detections(str(path), _gt())) == 20
