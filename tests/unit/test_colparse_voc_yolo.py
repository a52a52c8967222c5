"""The compiled VOC and YOLO readers (``voc_rows``, ``key_slots``, ``yolo_files``) against their twins.

Three ways to read the same folder must give the same detections bit for bit, or the same error
message (file, line and field): the whole-load compiled readers of :mod:`deteval.io.voc.results`
and :mod:`deteval.io.yolo`; the per-file compiled reader (``text_rows``) with the Python
reader for what it refuses; and the Python reader alone. Without the extension the tests skip;
CI builds it and sets ``DETEVAL_REQUIRE_EXTENSION=1``.
"""

from __future__ import annotations

import os
import shutil
import string

import numpy as np
import pytest

from deteval import _speedups
from deteval._safe_read import MAX_BYTES
from deteval.errors import DetevalError
from deteval.io import output, yolo
from deteval.io.coco import fast
from deteval.io.identity import _named, join_voc_ids
from deteval.io.voc import load_voc_dt, load_voc_gt
from deteval.io.voc import results as voc_results
from deteval.io.yolo import load_yolo_dt, load_yolo_gt
from tests.support.colparse import (
    HOSTILE_CLASS,
    HOSTILE_TEXT,
    VOC_MUTATIONS,
    VOC_ROOT,
    YOLO_MUTATIONS,
    YOLO_ROOT,
    _bits,
)
from tests.support.kernels import needs_kernel

_colparse = _speedups.load("deteval.io._colparse")  # None: not built, stale or disabled

pytestmark = needs_kernel("deteval.io._colparse")

#: Which compiled readers each way uses: (whole-load readers, per-file reader).
WAYS = {"whole": (True, True), "per-file": (False, True), "python": (False, False)}


def _use(monkeypatch, way: str) -> None:
    whole, per_file = WAYS[way]
    monkeypatch.setattr(voc_results, "_colparse", _colparse if whole else None)
    monkeypatch.setattr(yolo, "_colparse", _colparse if whole else None)
    monkeypatch.setattr(fast, "_colparse", _colparse if per_file else None)


def _outcome(load):
    try:
        dt = load()
    except DetevalError as exc:
        return type(exc).__name__, str(exc)
    fields = ("image", "category", "box", "score", "order", "has_box")
    for f in fields:
        column = np.asarray(getattr(dt, f))
        assert column.flags.c_contiguous, f
    return tuple(_bits(np.asarray(getattr(dt, f))).tobytes() for f in fields) + (dt.warnings, dt.box_format)


def assert_same_every_way(monkeypatch, load):
    """``load()`` gives the same detections (or error) whichever readers run; returns that outcome."""
    outcomes = {}
    for way in WAYS:
        _use(monkeypatch, way)
        outcomes[way] = _outcome(load)
    assert outcomes["whole"] == outcomes["python"]
    assert outcomes["per-file"] == outcomes["python"]
    return outcomes["whole"]


# --------------------------------------------------------------------------------------------
# VOC
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(VOC_MUTATIONS))
def test_voc_loader_is_the_same_every_way(tmp_path, monkeypatch, name):
    gt = load_voc_gt(VOC_ROOT)
    folder = tmp_path / "results"
    shutil.copytree(VOC_ROOT / "results", folder)
    line = VOC_MUTATIONS[name]
    if line is not None:
        target = folder / "comp4_det_test_dog.txt"
        extra = line if isinstance(line, bytes) else line.encode()
        target.write_bytes(target.read_bytes() + extra + b"\n")
    assert_same_every_way(monkeypatch, lambda: load_voc_dt(folder, gt))


def test_voc_fixture_takes_the_id_lookup(monkeypatch):
    _use(monkeypatch, "whole")
    gt = load_voc_gt(VOC_ROOT)
    table = voc_results._id_table(gt)
    assert table is not None
    for path in (VOC_ROOT / "results").glob("*.txt"):
        found = voc_results._compiled_voc_indexed(path.read_bytes(), table)
        assert found is not None, path
        assert (found[0] >= 0).all(), path


def test_voc_unknown_ids_are_named_every_way(tmp_path, monkeypatch):
    gt = load_voc_gt(VOC_ROOT)
    folder = tmp_path / "results"
    shutil.copytree(VOC_ROOT / "results", folder)
    for k, path in enumerate(sorted(folder.glob("*.txt"))):
        path.write_bytes(path.read_bytes() + f"{k + 1} 0.5 1 1 5 5\nnope{k} 0.25 1 1 5 5\n".encode())
    kind, message = assert_same_every_way(monkeypatch, lambda: load_voc_dt(folder, gt))
    assert kind == "InputError"
    assert "image id not in the ground truth" in message
    assert "would match" in message  # the padding hint survives


def _random_names(rng: np.random.Generator, n: int) -> list[str]:
    letters = list(string.ascii_letters + string.digits + "._-")
    names = set()
    while len(names) < n:
        stem = "".join(rng.choice(letters, int(rng.integers(1, 8))))
        ext = str(rng.choice(["", ".jpg", ".png", ".tar.gz", "."]))
        names.add(stem + ext)
    out = sorted(names)
    out.append("é.jpg")  # not ASCII: never a key of the compiled table
    return out


@pytest.mark.parametrize("seed", range(8))
def test_voc_id_lookup_joins_as_join_voc_ids(seed):
    rng = np.random.default_rng(seed)
    names = _random_names(rng, int(rng.integers(1, 300)))
    gt = _named(names)
    stems = [os.path.splitext(n)[0] for n in names]
    pool = names + stems + ["x" * int(k) for k in range(1, 5)] + ["000001", "1"]
    pool = [p for p in pool if p and all(33 <= ord(ch) <= 126 for ch in p)]
    ids = [pool[int(j)] for j in rng.integers(0, len(pool), 500)]
    raw = "".join(f"{i} 0.5 1 2 3 4\n" for i in ids).encode()
    table = voc_results._id_table(gt)
    assert table is not None
    found = voc_results._compiled_voc_indexed(raw, table)
    assert found is not None
    assert np.array_equal(found[0], join_voc_ids(ids, gt))


def test_voc_id_lookup_of_an_empty_ground_truth():
    table = voc_results._id_table(_named([]))
    assert table is not None
    found = voc_results._compiled_voc_indexed(b"a 1 2 3 4 5\n", table)
    assert found is not None
    assert found[0].tolist() == [-1]


def _table(keys: list[bytes]):
    start = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in keys], out=start[1:])
    blob = b"".join(keys)
    return (
        blob,
        start,
        np.arange(len(keys), dtype=np.int64),
        np.frombuffer(_colparse.key_slots(blob, start), np.int64),
    )


def test_key_slots_and_voc_rows_refuse_inconsistent_tables():
    blob, start, index, slots = _table([b"a", b"bb", b"ccc"])
    assert len(slots) >= 6
    assert (len(slots) & (len(slots) - 1)) == 0
    assert sorted(slots[slots >= 0].tolist()) == [0, 1, 2]
    columns = (np.empty(4, np.int64), np.empty(20), np.empty(4, np.int64))
    assert _colparse.voc_rows(b"bb 1 2 3 4 5\n", blob, start, index, slots, *columns) == 1
    assert columns[0][0] == 1
    with pytest.raises(ValueError, match="offsets"):
        _colparse.key_slots(blob, start[:-1])
    with pytest.raises(ValueError, match="offsets"):
        _colparse.key_slots(blob + b"x", start)
    with pytest.raises(ValueError, match="decrease"):
        _colparse.key_slots(blob, np.array([0, 2, 1, 6], dtype=np.int64))
    with pytest.raises(ValueError, match="key_slots"):
        _colparse.voc_rows(b"", blob, start, index, np.zeros(8, np.int64), *columns)  # no empty slot
    with pytest.raises(ValueError, match="key_slots"):
        _colparse.voc_rows(b"", blob, start, index, slots[:3].copy(), *columns)  # too few
    with pytest.raises(ValueError, match="key_slots"):
        _colparse.voc_rows(b"", blob, start, index, np.full(8, 7, np.int64), *columns)  # no such key
    with pytest.raises(TypeError):
        _colparse.voc_rows(b"", blob, start.astype(np.int32), index, slots, *columns)


@pytest.mark.parametrize("name", sorted(HOSTILE_TEXT))
def test_voc_rows_refuses_what_text_rows_refuses(name):
    raw = HOSTILE_TEXT[name].encode()
    table = voc_results._id_table(_named(["a"]))
    assert table is not None
    assert voc_results._compiled_voc_indexed(raw, table) is None


# --------------------------------------------------------------------------------------------
# YOLO
# --------------------------------------------------------------------------------------------

YOLO_MORE = {
    "subnormal sizes": "1 0.5 0.5 1e-310 3e-320 0.9",
    "negative zero size": "1 0.5 0.5 -0.0 0.1 0.9",
    "huge but finite": "1 0.5 0.5 1e300 0.1 0.9",
    "many digits": "1 0.12345678901234567890 0.5 0.1 0.1 0.9",
    "exponents": "1 5e-1 0.5E0 1e-1 0.1 9e-1",
}


@pytest.mark.parametrize("layout", ["cls cx cy w h conf", "cls conf cx cy w h"])
@pytest.mark.parametrize("name", sorted({**YOLO_MUTATIONS, **YOLO_MORE}))
def test_yolo_loader_is_the_same_every_way(tmp_path, monkeypatch, name, layout):
    gt = load_yolo_gt(YOLO_ROOT / "data.yaml")
    folder = tmp_path / "predictions"
    shutil.copytree(YOLO_ROOT / "predictions", folder)
    line = {**YOLO_MUTATIONS, **YOLO_MORE}[name]
    if line is not None:
        target = folder / "b.txt"
        target.write_bytes(target.read_bytes() + line.encode() + b"\n")
    assert_same_every_way(monkeypatch, lambda: load_yolo_dt(folder, gt, layout=layout))
    assert_same_every_way(
        monkeypatch, lambda: load_yolo_dt(folder, gt, layout=layout, unknown_category="drop", max_drop=0.5)
    )
    assert_same_every_way(monkeypatch, lambda: load_yolo_dt(folder, gt, layout=layout, category_map="index0"))


def test_yolo_fixture_takes_the_whole_load_reader(monkeypatch):
    _use(monkeypatch, "whole")
    gt = load_yolo_gt(YOLO_ROOT / "data.yaml")
    calls = []
    real = _colparse.yolo_files

    def spy(*args):
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(yolo, "_colparse", type("M", (), {"yolo_files": staticmethod(spy)}))
    load_yolo_dt(YOLO_ROOT / "predictions", gt)
    assert len(calls) == 1
    assert calls[0] is not None


def _generated_yolo(tmp_path, rng, n_images):
    root = tmp_path / "ds"
    (root / "images" / "val").mkdir(parents=True)
    (root / "predictions").mkdir()
    sizes = []
    for i in range(n_images):
        (root / "images" / "val" / f"{i:04d}.jpg").write_bytes(b"")
        sizes.append(f"{i:04d}.jpg {int(rng.integers(1, 5000))} {int(rng.integers(1, 5000))}\n")
        if rng.random() < 0.8:
            rows = [
                " ".join(
                    [str(int(rng.integers(0, 3)))]
                    + [
                        f"{v:.{int(rng.integers(1, 18))}g}" if rng.random() < 0.7 else repr(float(v))
                        for v in row
                    ]
                )
                for row in rng.random((int(rng.integers(0, 30)), 5))
            ]
            (root / "predictions" / f"{i:04d}.txt").write_text(
                "\n".join(rows) + ("\n" if rng.random() < 0.5 else "")
            )
    (root / "sizes.txt").write_text("".join(sizes))
    (root / "data.yaml").write_text("names: [a, b, c]\nval: images/val\nsizes: sizes.txt\n")
    return root


@pytest.mark.parametrize("seed", range(4))
def test_generated_yolo_folders_read_the_same(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    root = _generated_yolo(tmp_path, rng, int(rng.integers(1, 60)))
    gt = load_yolo_gt(root)
    outcome = assert_same_every_way(monkeypatch, lambda: load_yolo_dt(root / "predictions", gt))
    assert outcome[0] != "InputError"


def test_yolo_reads_are_recorded_the_same(tmp_path, monkeypatch):
    gt = load_yolo_gt(YOLO_ROOT / "data.yaml")
    folder = tmp_path / "predictions"
    shutil.copytree(YOLO_ROOT / "predictions", folder)
    elsewhere = tmp_path / "elsewhere.txt"
    shutil.move(folder / "b.txt", elsewhere)
    os.symlink(elsewhere, folder / "b.txt")
    logs = {}
    for way in WAYS:
        _use(monkeypatch, way)
        with output.recording_reads() as log:
            load_yolo_dt(folder, gt)
        logs[way] = (log.files, log.folders)
    assert logs["whole"] == logs["python"] == logs["per-file"]
    assert os.path.realpath(elsewhere) in logs["whole"][0]


def test_a_file_the_whole_load_reader_refuses_is_read_by_the_others(tmp_path, monkeypatch):
    gt = load_yolo_gt(YOLO_ROOT / "data.yaml")
    folder = tmp_path / "predictions"
    shutil.copytree(YOLO_ROOT / "predictions", folder)
    monkeypatch.setitem(MAX_BYTES, "text", 20)  # the whole-load reader's limit (read_bytes keeps its own)
    outcome = assert_same_every_way(monkeypatch, lambda: load_yolo_dt(folder, gt))
    assert outcome[0] != "InputError"


def test_yolo_files_refuses_what_read_bytes_reports(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_text("0 0.5 0.5 0.1 0.1 0.9\n")
    size = np.ones(1)
    assert _colparse.yolo_files([str(plain)], 1 << 20, size, size, 0) is not None
    assert _colparse.yolo_files([str(tmp_path / "missing.txt")], 1 << 20, size, size, 0) is None
    assert _colparse.yolo_files([str(tmp_path)], 1 << 20, size, size, 0) is None  # a folder
    assert _colparse.yolo_files([str(plain)], 5, size, size, 0) is None  # over the limit
    assert _colparse.yolo_files([str(plain) + "\0x"], 1 << 20, size, size, 0) is None
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.txt"
        os.mkfifo(fifo)
        assert _colparse.yolo_files([str(fifo)], 1 << 20, size, size, 0) is None  # does not block
    with pytest.raises(ValueError, match="one value per path"):
        _colparse.yolo_files([str(plain)], 1 << 20, np.ones(2), size, 0)
    with pytest.raises(TypeError):
        _colparse.yolo_files((str(plain),), 1 << 20, size, size, 0)


def test_yolo_files_columns(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("2 0.5 0.25 0.5 0.5 0.75\n\n1 0 0 1 1 0.5")
    b.write_text("")
    found = _colparse.yolo_files([str(a), str(b)], 1 << 20, np.array([100.0, 7.0]), np.array([40.0, 7.0]), 0)
    class_ids, box, score, lines, counts, stats = (np.frombuffer(x, t) for x, t in zip(found, "qddqqq"))
    assert class_ids.tolist() == [2, 1]
    assert lines.tolist() == [1, 3]
    assert counts.tolist() == [2, 0]
    assert box.reshape(-1, 4).tolist() == [[25.0, 0.0, 50.0, 20.0], [-50.0, -20.0, 100.0, 40.0]]
    assert score.tolist() == [0.75, 0.5]
    st = os.stat(a)
    assert stats.reshape(2, 10)[0, :3].tolist() == [st.st_mode, st.st_ino, st.st_dev]
    assert stats.reshape(2, 10)[0, 6] == st.st_size


@pytest.mark.parametrize("cls", HOSTILE_CLASS)
def test_yolo_files_refuses_class_ids_not_written_as_integers(tmp_path, cls):
    path = tmp_path / "a.txt"
    path.write_text(f"{cls} 0.5 0.5 0.1 0.1 0.9\n")
    assert _colparse.yolo_files([str(path)], 1 << 20, np.ones(1), np.ones(1), 0) is None


# --------------------------------------------------------------------------------------------
# Numbers: the short path for plain decimals gives what float() gives
# --------------------------------------------------------------------------------------------

EDGE_NUMBERS = [
    "9007199254740992",  # 2**53: the short path
    "9007199254740993",  # 2**53 + 1: parse_double
    "9007199254740992.5",
    "1234567890123456789",  # 19 digits
    "12345678901234567890",  # 20 digits
    "0.1234567890123456789",
    "0." + "0" * 21 + "1",  # 22 fraction digits
    "0." + "0" * 22 + "1",  # 23
    "-0",
    "-0.0",
    "+0.",
    "-.0",
    "0.30000000000000004",
    "1.7976931348623157",
    "4.9406564584124654",
    "-123.456",
]


@pytest.mark.parametrize("number", EDGE_NUMBERS)
def test_text_numbers_read_as_float_reads_them(number):
    raw = f"a {number} {number} 1 {number} 2\n".encode()
    found = fast._compiled_text_rows(raw, first_is_text=True)
    if found is None:  # the reference reader of this module is the compiled one: it must read these
        pytest.fail(f"refused {number!r}")
    expected = np.array([float(number), float(number), 1.0, float(number), 2.0])
    assert np.array_equal(found[1][0].view(np.int64), expected.view(np.int64))


# --------------------------------------------------------------------------------------------
# YOLO ground truth: label files
# --------------------------------------------------------------------------------------------

LABEL_MUTATIONS = {
    "plain": None,
    "class 1.0": "1.0 0.5 0.5 0.1 0.1",
    "class 01": "01 0.5 0.5 0.1 0.1",
    "unknown class": "7 0.5 0.5 0.1 0.1",
    "negative class": "-1 0.5 0.5 0.1 0.1",
    "outside": "0 1.5 0.5 0.1 0.1",
    "negative size": "0 0.5 0.5 -0.1 0.1",
    "six columns": "0 0.5 0.5 0.1 0.1 0.9",
    "polygon": "0 0.1 0.1 0.2 0.2 0.3 0.3",
    "four columns": "0 0.5 0.5 0.1",
    "signs and dots": "0 +.5 .5 0.10 1.",
    "exponent": "0 5e-1 0.5 0.1 0.1",
    "nan": "0 nan 0.5 0.1 0.1",
    "not a number": "0 x 0.5 0.1 0.1",
    "not UTF-8": b"0 0.5 0.5 0.1 0.1 \xff",
    "CRLF and blanks": "\r\n0 0.5 0.5 0.1 0.1\r\n\r\n",
    "subnormal": "0 0.5 0.5 1e-310 3e-320",
    "many digits": "0 0.12345678901234567890 0.5 0.1 0.1",
    "zeros and ones": "1 0 1 1 0",
    "negative zero": "0 -0 0.5 -0.0 0.1",
}


def _gt_outcome(load):
    try:
        gt = load()
    except DetevalError as exc:
        return type(exc).__name__, str(exc)
    out = []
    for name in ("image", "category", "box", "area", "image_width", "image_height", "annotation_id"):
        column = np.asarray(getattr(gt, name))
        out.append((column.dtype.str, column.shape, _bits(column).tobytes()))
    return (*out, gt.image_name, gt.category_name, gt.warnings)


@pytest.mark.parametrize("name", sorted(LABEL_MUTATIONS))
def test_yolo_labels_are_read_the_same_every_way(tmp_path, monkeypatch, name):
    root = tmp_path / "yolo"
    shutil.copytree(YOLO_ROOT, root)
    line = LABEL_MUTATIONS[name]
    if line is not None:
        target = root / "labels" / "val" / "b.txt"
        extra = line if isinstance(line, bytes) else line.encode()
        target.write_bytes(target.read_bytes() + extra + b"\n")
    outcomes = {}
    for way in WAYS:
        _use(monkeypatch, way)
        outcomes[way] = _gt_outcome(lambda: load_yolo_gt(root))
    assert outcomes["whole"] == outcomes["python"] == outcomes["per-file"]


def test_yolo_labels_take_the_whole_load_reader(monkeypatch):
    _use(monkeypatch, "whole")
    gt = load_yolo_gt(YOLO_ROOT)
    found = yolo._compiled_labels(
        [str(p) for p in sorted((YOLO_ROOT / "labels" / "val").glob("*.txt"))],
        np.arange(2),
        gt.image_width,
        gt.image_height,
        gt.category_id,
    )
    assert found is not None
    assert np.array_equal(found[2], gt.box)


@pytest.mark.parametrize("seed", range(3))
def test_generated_yolo_labels_read_the_same(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    root = _generated_yolo(tmp_path, rng, int(rng.integers(1, 60)))
    shutil.copytree(root / "predictions", root / "labels" / "val")
    for path in (root / "labels" / "val").glob("*.txt"):  # drop the confidence column
        path.write_text("".join(" ".join(line.split()[:5]) + "\n" for line in path.read_text().splitlines()))
    outcomes = {}
    for way in WAYS:
        _use(monkeypatch, way)
        outcomes[way] = _gt_outcome(lambda: load_yolo_gt(root))
    assert outcomes["whole"] == outcomes["python"] == outcomes["per-file"]
    assert outcomes["whole"][0] != "InputError"


def test_yolo_files_label_layout(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("1 0.5 0.5 0.5 0.5\n0 0 0 0 0\n")
    found = _colparse.yolo_files([str(path)], 1 << 20, np.array([10.0]), np.array([20.0]), 2)
    assert found is not None
    assert np.frombuffer(found[1]).reshape(-1, 4).tolist() == [[2.5, 5.0, 5.0, 10.0], [0.0, 0.0, 0.0, 0.0]]
    assert len(found[2]) == 0  # no scores
    path.write_text("1 0.5 0.5 0.5 1.5\n")  # outside [0, 1]
    assert _colparse.yolo_files([str(path)], 1 << 20, np.ones(1), np.ones(1), 2) is None
    path.write_text("1 0.5 0.5 0.5 0.5 0.9\n")  # a prediction row
    assert _colparse.yolo_files([str(path)], 1 << 20, np.ones(1), np.ones(1), 2) is None
    with pytest.raises(ValueError, match="layout"):
        _colparse.yolo_files([str(path)], 1 << 20, np.ones(1), np.ones(1), 3)
