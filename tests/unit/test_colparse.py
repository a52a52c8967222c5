"""The compiled box-results parser (deteval.io._colparse) against its twin, the msgspec/numpy path.

Where the C extension was built, its columns must equal the msgspec path's bit for bit (floats
compared as int64 bit patterns), it must refuse everything that is not the plain shape, and the
public loader must behave exactly as it does without the extension. Without the extension the
twin comparisons skip; CI builds it and sets ``DETEVAL_REQUIRE_EXTENSION=1``, under which a
missing extension is a failure.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from deteval import _speedups
from deteval.errors import DetevalError
from deteval.io.coco import fast, fast_msgspec, load_coco_dt, load_coco_gt
from tests import ROOT
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

needs_extension = needs_kernel("deteval.io._colparse")

GT_PATH = ROOT / "fixtures" / "coco" / "gt.json"
RECORD = '{"image_id": 1, "category_id": 1, "bbox": [10, 20, 30.5, 40], "score": 0.9}'


@pytest.fixture
def compiled(monkeypatch):
    """The compiled path switched on, whatever DETEVAL_NO_EXTENSION said at import."""
    monkeypatch.setattr(fast, "_colparse", _colparse)


def assert_twins(raw: bytes) -> tuple | None:
    """Both paths on ``raw``: equal columns bit for bit, or both None. Returns the columns."""
    c_cols = fast._compiled_box_columns(raw)
    py_cols = fast_msgspec._msgspec_box_columns(raw)
    if py_cols is None:
        assert c_cols is None
        return None
    assert c_cols is not None, "the compiled parser refused a plain file msgspec accepts"
    for c_col, py_col in zip(c_cols, py_cols):
        assert c_col.dtype == py_col.dtype
        assert c_col.shape == py_col.shape
        assert c_col.flags.c_contiguous
        assert c_col.flags.writeable
        assert np.array_equal(_bits(c_col), _bits(py_col))
    return c_cols


def test_no_extension_env_turns_it_off():
    code = "from deteval.io.coco import fast; print(fast._colparse is None, fast.NO_EXTENSION)"
    env = {**os.environ, "DETEVAL_NO_EXTENSION": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "True"]


def test_loader_works_without_extension(monkeypatch):
    monkeypatch.setattr(fast, "_colparse", None)
    assert fast._compiled_box_columns(b"[" + RECORD.encode() + b"]") is None
    gt = load_coco_gt(GT_PATH)
    dt = load_coco_dt(ROOT / "fixtures" / "coco" / "dt.json", gt)
    assert len(dt.score) > 0


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(
    "path",
    sorted(p for p in [*ROOT.joinpath("fixtures").rglob("*.json"), *ROOT.joinpath("tests").rglob("*.json")]),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_json_file_in_the_repository_reads_the_same(path):
    assert_twins(path.read_bytes())


@needs_extension
@pytest.mark.usefixtures("compiled")
def test_plain_fixture_is_read_by_the_compiled_path():
    cols = assert_twins((ROOT / "fixtures" / "coco" / "dt.json").read_bytes())
    assert cols is not None


NUMBERS = [
    "0",
    "-0",
    "-0.0",
    "0.0",
    "-0e0",
    "0e-5",
    "1",
    "12",
    "1.5",
    "-1.5",
    "1e2",
    "1E2",
    "1e+2",
    "1.25e-3",
    "-7.5E+1",
    "0.1",
    "0.30000000000000004",
    "123456789.12345678",
    "1.7976931348623157e308",
    "2.2250738585072014e-308",
    "2.2250738585072011e-308",
    "4.9e-324",
    "5e-324",
    "2.4703282292062328e-324",
    "1e-400",
    "-1e-400",
    "9007199254740993",
    "9007199254740992.5",
    "18446744073709551615",
    "18446744073709551617",
    "123456789012345678901234567890",
    "0.000000000000000000000000000001234567890123456789",
    "3.141592653589793238462643383279",
    "1e22",
    "1e23",
    "8.98846567431158e307",
    "0.1e1",
    "100000000000000000000000e-23",
    # around the 15-digit first reading of parse_double (every digit counted, leading zeros too)
    "123456789012345",
    "1234567890123456",
    "-999999999999999",
    "99999999999999.9",
    "999999999999999.9",
    "0.00000000000001",
    "0.000000000000001",
    "-0.000",
    "1.0",
    "12345.678901234",
    "-9.99999999999999",
    "0.30000000000001",
    "4503599627370497.5",
]


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("number", NUMBERS)
def test_numbers_are_bit_identical(number):
    text = (
        f'[{{"image_id": 1, "category_id": 2, "bbox": [{number}, {number}, {number}, {number}], '
        f'"score": {number}}}]'
    )
    cols = assert_twins(text.encode())
    assert cols is not None
    value = cols[3][0]
    assert value == (0.0 if number == "-0" else float(number))
    assert np.signbit(value) == (number.startswith("-") and number != "-0")


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("seed", range(3))
def test_random_decimals_are_bit_identical(seed):
    """Decimals of 1-18 digits with the point anywhere (leading and trailing zeros), as Python reads them."""
    rng = np.random.default_rng(seed)
    numbers = []
    for _ in range(500):
        n_digits = int(rng.integers(1, 19))
        digits = "".join(str(d) for d in rng.integers(0, 10, n_digits))
        point = int(rng.integers(0, n_digits + 1))
        whole, fraction = digits[:point].lstrip("0") or "0", digits[point:]
        sign = "-" if rng.random() < 0.3 else ""
        numbers.append(f"{sign}{whole}.{fraction}" if fraction else f"{sign}{whole}")
    records = ",".join(
        f'{{"image_id": 1, "category_id": 2, "bbox": [{n}, {n}, {n}, {n}], "score": {n}}}' for n in numbers
    )
    cols = assert_twins(f"[{records}]".encode())
    assert cols is not None
    want = np.array([0.0 if float(n) == 0 and "." not in n else float(n) for n in numbers])
    assert np.array_equal(_bits(cols[3]), _bits(want))


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("ident", ["0", "-0", "7", "-3", "9223372036854775807", "-9223372036854775808"])
def test_ids_are_exact(ident):
    cols = assert_twins(
        f'[{{"image_id": {ident}, "category_id": {ident}, "bbox": [0,0,1,1], "score": 1}}]'.encode()
    )
    assert cols is not None
    assert cols[0][0] == int(ident) == cols[1][0]


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(
    "text",
    [
        f"[{RECORD}]",
        f"  \n[\t{RECORD} ,\r\n {RECORD}\n]\n\n",
        '[{"score":0.5,"bbox":[1,2,3,4],"category_id":3,"image_id":2}]',
        '[{ "bbox" : [ 1 , 2 , 3 , 4 ] , "score" : 1 , "image_id" : 2 , "category_id" : 3 }]',
        "[" + ",".join([RECORD] * 1000) + "]",
    ],
)
def test_whitespace_and_key_orders(text):
    assert assert_twins(text.encode()) is not None


HOSTILE = {
    "empty file": "",
    "only whitespace": "  \n",
    "empty list": "[]",
    "empty list spaced": " [ ] ",
    "top-level object": '{"annotations": []}',
    "top-level number": "3",
    "unknown key": RECORD[:-1] + ', "id": 3}',
    "missing key": '{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}',
    "duplicate key": '{"image_id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}',
    "empty object": "{}",
    "float id": RECORD.replace('"image_id": 1', '"image_id": 1.0'),
    "exponent id": RECORD.replace('"image_id": 1', '"image_id": 1e0'),
    "bool id": RECORD.replace('"image_id": 1', '"image_id": true'),
    "null id": RECORD.replace('"image_id": 1', '"image_id": null'),
    "string id": RECORD.replace('"image_id": 1', '"image_id": "1"'),
    "id above int64": RECORD.replace('"image_id": 1', '"image_id": 9223372036854775808'),
    "id below int64": RECORD.replace('"image_id": 1', '"image_id": -9223372036854775809'),
    "id above uint64": RECORD.replace('"image_id": 1', '"image_id": 99999999999999999999999'),
    "leading zero id": RECORD.replace('"image_id": 1', '"image_id": 01'),
    "null score": RECORD.replace('"score": 0.9', '"score": null'),
    "bool score": RECORD.replace('"score": 0.9', '"score": false'),
    "string score": RECORD.replace('"score": 0.9', '"score": "0.9"'),
    "NaN score": RECORD.replace('"score": 0.9', '"score": NaN'),
    "Infinity score": RECORD.replace('"score": 0.9', '"score": Infinity'),
    "-Infinity score": RECORD.replace('"score": 0.9', '"score": -Infinity'),
    "overflowing score": RECORD.replace('"score": 0.9', '"score": 1e400'),
    "nested score": RECORD.replace('"score": 0.9', '"score": [0.9]'),
    "object score": RECORD.replace('"score": 0.9', '"score": {"v": 0.9}'),
    "leading dot": RECORD.replace('"score": 0.9', '"score": .9'),
    "trailing dot": RECORD.replace('"score": 0.9', '"score": 9.'),
    "plus sign": RECORD.replace('"score": 0.9', '"score": +0.9'),
    "leading zero": RECORD.replace('"score": 0.9', '"score": 00.9'),
    "hex": RECORD.replace('"score": 0.9', '"score": 0x1'),
    "empty exponent": RECORD.replace('"score": 0.9', '"score": 9e'),
    "two dots": RECORD.replace('"score": 0.9', '"score": 0.9.1'),
    "bbox three numbers": RECORD.replace("[10, 20, 30.5, 40]", "[10, 20, 30.5]"),
    "bbox five numbers": RECORD.replace("[10, 20, 30.5, 40]", "[10, 20, 30.5, 40, 1]"),
    "bbox empty": RECORD.replace("[10, 20, 30.5, 40]", "[]"),
    "bbox null": RECORD.replace("[10, 20, 30.5, 40]", "null"),
    "bbox nested": RECORD.replace("[10, 20, 30.5, 40]", "[[10], 20, 30.5, 40]"),
    "bbox string": RECORD.replace("[10, 20, 30.5, 40]", '[10, "20", 30.5, 40]'),
    "bbox trailing comma": RECORD.replace("[10, 20, 30.5, 40]", "[10, 20, 30.5, 40,]"),
    "escaped key": RECORD.replace('"score"', '"\\u0073core"'),
    "key prefix": RECORD.replace('"score"', '"scores"'),
    "bad utf-8 key": RECORD.replace('"score"', '"sc\xffore"'),
    "unquoted key": RECORD.replace('"score"', "score"),
    "missing colon": RECORD.replace('"score":', '"score"'),
    "missing comma": RECORD.replace(', "score"', ' "score"'),
    "trailing comma in record": RECORD[:-1] + ",}",
    "segmentation": RECORD[:-1] + ', "segmentation": [[0, 0, 1, 0, 1, 1]]}',
    "non-JSON whitespace": RECORD.replace(', "score"', ',\x0b"score"'),
}


def _hostile_files() -> dict[str, bytes]:
    files = {}
    for name, text in HOSTILE.items():
        if text.lstrip().startswith("{") and name not in ("top-level object", "empty object"):
            files[name] = f"[{RECORD}, {text}]".encode("utf-8", "surrogateescape")
        else:
            files[name] = text.encode("utf-8", "surrogateescape")
    files["empty object"] = b"[{}]"
    files["bad utf-8 key"] = f"[{HOSTILE['bad utf-8 key']}]".encode("latin-1")
    files["trailing garbage"] = f"[{RECORD}] x".encode()
    files["two arrays"] = f"[{RECORD}][{RECORD}]".encode()
    files["trailing comma in list"] = f"[{RECORD},]".encode()
    files["missing bracket"] = f"[{RECORD}".encode()
    files["NUL after"] = f"[{RECORD}]\x00".encode()
    files["BOM"] = b"\xef\xbb\xbf" + f"[{RECORD}]".encode()
    plain = f"[{RECORD}, {RECORD}]".encode()
    for cut in range(1, len(plain), 7):
        files[f"truncated at {cut}"] = plain[:cut]
    return files


HOSTILE_FILES = _hostile_files()


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_hostile_files_are_refused(name):
    raw = HOSTILE_FILES[name]
    capacity = len(raw) // fast._MIN_RECORD_BYTES + 1
    columns = [np.empty(capacity, np.int64), np.empty(capacity, np.int64)]
    columns += [np.empty(4 * capacity), np.empty(capacity)]
    assert _colparse.box_results(raw, *columns) is None
    assert fast._compiled_box_columns(raw) is None


def _outcome(path, gt):
    try:
        dt = load_coco_dt(path, gt)
    except DetevalError as exc:
        return type(exc).__name__, str(exc)
    return tuple(
        _bits(np.asarray(getattr(dt, f))).tobytes() for f in ("image", "category", "box", "score", "order")
    ) + (dt.warnings,)


@needs_extension
@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_loader_behaves_as_without_the_extension(tmp_path, monkeypatch, name):
    path = tmp_path / "dt.json"
    path.write_bytes(HOSTILE_FILES[name])
    gt = load_coco_gt(GT_PATH)
    monkeypatch.setattr(fast, "_colparse", _colparse)
    with_extension = _outcome(path, gt)
    monkeypatch.setattr(fast, "_colparse", None)
    assert _outcome(path, gt) == with_extension


@needs_extension
@pytest.mark.parametrize(
    "path",
    sorted(ROOT.joinpath("fixtures", "broken").rglob("dt_*.json")) + [ROOT / "fixtures" / "coco" / "dt.json"],
    ids=lambda p: p.name,
)
def test_fixture_loads_as_without_the_extension(monkeypatch, path):
    gt = load_coco_gt(GT_PATH)
    monkeypatch.setattr(fast, "_colparse", _colparse)
    with_extension = _outcome(path, gt)
    monkeypatch.setattr(fast, "_colparse", None)
    assert _outcome(path, gt) == with_extension


@needs_extension
def test_capacity_too_small_is_refused():
    raw = f"[{RECORD}, {RECORD}]".encode()
    one = [np.empty(1, np.int64), np.empty(1, np.int64), np.empty(4), np.empty(1)]
    assert _colparse.box_results(raw, *one) is None
    two = [np.empty(2, np.int64), np.empty(2, np.int64), np.empty(8), np.empty(2)]
    assert _colparse.box_results(raw, *two) == 2


@needs_extension
@pytest.mark.parametrize(
    "columns",
    [
        [np.empty(2, np.int32), np.empty(2, np.int64), np.empty(8), np.empty(2)],
        [np.empty(2, np.int64), np.empty(2, np.int64), np.empty(8, np.float32), np.empty(2)],
        [np.empty(2, np.int64), np.empty(2, np.float64), np.empty(8), np.empty(2)],
        [np.empty(2, np.int64), np.empty(2, np.int64), np.empty(8), np.empty(4)[::2]],
        [np.empty(2, np.int64), np.empty(2, np.int64), np.empty(8), b"0" * 16],
    ],
)
def test_wrong_buffers_are_type_errors(columns):
    with pytest.raises((TypeError, BufferError, ValueError)):
        _colparse.box_results(f"[{RECORD}]".encode(), *columns)


@needs_extension
@pytest.mark.usefixtures("compiled")
def test_generated_datasets_read_the_same(tmp_path):
    from tests.crosscheck.generate import generate

    for seed in range(10):
        _, dt_list = generate(seed)
        if dt_list:
            assert assert_twins(json.dumps(dt_list).encode()) is not None
            assert assert_twins(json.dumps(dt_list, indent=2).encode()) is not None


# ---- VOC result lines and YOLO prediction rows (text_rows) ----


def _python_rows(raw: bytes, first_is_text: bool):
    """The Python reader's reading of a plain file: (first column, numbers (n, 5), line numbers)."""
    from deteval.io._text import parse_floats, split_rows
    from deteval.io.yolo import _class_ids

    rows = split_rows(raw.decode("utf-8-sig"))
    numbers = parse_floats(rows, slice(1, 6), "f.txt", "numbers")
    first = [f[0] for _, f in rows] if first_is_text else _class_ids(rows, 0, "f.txt")
    return first, numbers, np.array([n for n, _ in rows], dtype=np.int64)


def assert_text_twins(raw: bytes, first_is_text: bool) -> None:
    compiled = fast._compiled_text_rows(raw, first_is_text=first_is_text)
    assert compiled is not None, raw
    first, numbers, lines = _python_rows(raw, first_is_text)
    if first_is_text:
        assert compiled[0] == first
    else:
        assert np.array_equal(compiled[0], first)
    assert compiled[1].shape == numbers.shape
    assert np.array_equal(compiled[1].view(np.int64), numbers.view(np.int64))
    assert np.array_equal(compiled[2], lines)


TEXT_NUMBERS = [n for n in NUMBERS if n != "1e-400" and n != "-1e-400"] + [
    "1e-400",
    "+1.5",
    "1.",
    ".5",
    "-.5",
    "007",
    "-007.50",
    "00000000000000000000001",
    "0.000",
    "-0",
]


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("number", TEXT_NUMBERS)
def test_text_numbers_are_bit_identical(number):
    line = f"img {number} {number} {number} {number} {number}\n"
    assert_text_twins(line.encode(), True)
    assert_text_twins(f"3 {number} 1 2 3 {number}".encode(), False)


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "a 1 2 3 4 5",
        "\ufeffa 1 2 3 4 5\n",
        "a 1 2 3 4 5\r\nb 1 2 3 4 5\r\n",
        "a 1 2 3 4 5\rb 1 2 3 4 5\r\r\nc 1 2 3 4 5",
        "  a\t1  2\t\t3 4 5   \n\n\n   \t\nb 1 2 3 4 5",
        "x.y-z_1 0.25 1e2 2E-3 3 4\n",
    ],
)
def test_text_layouts(text):
    assert_text_twins(text.encode(), True)
    classes = itertools.cycle(["0", "-12", "7", "3"])
    yolo = re.sub(
        r"(^|[\r\n])([ \t\ufeff]*)[A-Za-z][^ \t\r\n]*",
        lambda m: m.group(1) + m.group(2) + next(classes),
        text,
    )
    assert_text_twins(yolo.encode(), False)


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXT))
def test_hostile_text_is_refused(name):
    raw = HOSTILE_TEXT[name].encode()
    assert fast._compiled_text_rows(raw, first_is_text=True) is None
    assert fast._compiled_text_rows(raw.replace(b"a", b"3", 1), first_is_text=False) is None


@needs_extension
@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("cls", HOSTILE_CLASS)
def test_class_ids_not_written_as_integers_are_refused(cls):
    assert fast._compiled_text_rows(f"{cls} 1 2 3 4 5".encode(), first_is_text=False) is None


def _dt_outcome(load):
    try:
        dt = load()
    except DetevalError as exc:
        return type(exc).__name__, str(exc)
    fields = ("image", "category", "box", "score", "order", "has_box")
    return tuple(_bits(np.asarray(getattr(dt, f))).tobytes() for f in fields) + (dt.warnings, dt.box_format)


def _same_with_and_without(monkeypatch, load):
    monkeypatch.setattr(fast, "_colparse", _colparse)
    with_extension = _dt_outcome(load)
    monkeypatch.setattr(fast, "_colparse", None)
    assert _dt_outcome(load) == with_extension
    return with_extension


@needs_extension
def test_voc_and_yolo_fixtures_take_the_compiled_path(monkeypatch):
    monkeypatch.setattr(fast, "_colparse", _colparse)
    for path in [
        *(VOC_ROOT / "results").glob("*.txt"),
        *(ROOT / "fixtures" / "real" / "VOC2007" / "results").glob("*.txt"),
    ]:
        assert fast._compiled_voc_rows(path.read_bytes()) is not None, path
    for path in (YOLO_ROOT / "predictions").glob("*.txt"):
        assert fast._compiled_yolo_rows(path.read_bytes()) is not None, path


@needs_extension
@pytest.mark.parametrize("name", sorted(VOC_MUTATIONS))
def test_voc_loader_behaves_as_without_the_extension(tmp_path, monkeypatch, name):
    import shutil

    from deteval.io.voc import load_voc_dt, load_voc_gt

    gt = load_voc_gt(VOC_ROOT)
    folder = tmp_path / "results"
    shutil.copytree(VOC_ROOT / "results", folder)
    line = VOC_MUTATIONS[name]
    if line is not None:
        target = folder / "comp4_det_test_dog.txt"
        extra = line if isinstance(line, bytes) else line.encode()
        target.write_bytes(target.read_bytes() + extra + b"\n")
    _same_with_and_without(monkeypatch, lambda: load_voc_dt(folder, gt))


@needs_extension
@pytest.mark.parametrize("layout", ["cls cx cy w h conf", "cls conf cx cy w h"])
@pytest.mark.parametrize("name", sorted(YOLO_MUTATIONS))
def test_yolo_loader_behaves_as_without_the_extension(tmp_path, monkeypatch, name, layout):
    import shutil

    from deteval.io.yolo import load_yolo_dt, load_yolo_gt

    gt = load_yolo_gt(YOLO_ROOT / "data.yaml")
    folder = tmp_path / "predictions"
    shutil.copytree(YOLO_ROOT / "predictions", folder)
    line = YOLO_MUTATIONS[name]
    if line is not None:
        target = folder / "b.txt"
        target.write_bytes(target.read_bytes() + line.encode() + b"\n")
    _same_with_and_without(monkeypatch, lambda: load_yolo_dt(folder, gt, layout=layout))
    _same_with_and_without(
        monkeypatch, lambda: load_yolo_dt(folder, gt, layout=layout, unknown_category="drop", max_drop=0.5)
    )


@needs_extension
def test_generated_text_files_read_the_same(monkeypatch):
    rng = np.random.default_rng(0)
    monkeypatch.setattr(fast, "_colparse", _colparse)
    for _ in range(20):
        n = int(rng.integers(1, 50))
        values = rng.standard_normal((n, 5)) * 10.0 ** rng.integers(-30, 30, (n, 5))
        spelled = [
            [f"{v:.{int(rng.integers(1, 20))}g}" if rng.random() < 0.5 else repr(float(v)) for v in row]
            for row in values
        ]
        gaps = [" ", "\t", "  ", " \t "]
        voc = "\n".join(
            gaps[int(rng.integers(4))].join([f"img{j}", *row])
            + gaps[int(rng.integers(4))] * int(rng.integers(2))
            for j, row in enumerate(spelled)
        )
        assert_text_twins(voc.encode(), True)
        yolo = "\r\n".join(" ".join([str(int(rng.integers(-5, 100))), *row]) for row in spelled)
        assert_text_twins(yolo.encode(), False)
