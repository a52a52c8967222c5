"""Property: the compiled box-results parser equals the msgspec/numpy path bit for bit.

Generated files mix every way JSON can spell a number (integers near the int64 bounds and beyond,
negative zero, exponents in both cases and signs, 17- to 40-digit mantissas, subnormals, values
that overflow or underflow a double), JSON whitespace anywhere it may go, and every key order.
Whatever the msgspec path accepts the compiled path must read to the same bits; whatever msgspec
refuses the compiled path must refuse too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval import _speedups
from deteval.io.coco import fast, fast_instances, fast_msgspec
from tests.support.colparse import assert_same_gt, assert_same_images
from tests.support.kernels import needs_kernel

_colparse = _speedups.load("deteval.io._colparse")  # None: not built, stale or disabled

pytestmark = needs_kernel("deteval.io._colparse")

KEYS = ("image_id", "category_id", "bbox", "score")
WS = st.text(alphabet=" \t\r\n", max_size=3)

digits = st.text(alphabet="0123456789", min_size=1, max_size=40)
nonzero_int = st.builds(
    lambda first, rest: first + rest, st.sampled_from("123456789"), st.text("0123456789", max_size=25)
)
int_text = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["0", "-0", str(2**63), str(-(2**63) - 1), str(2**64), str(2**53 + 1)]),
    st.builds(lambda sign, body: sign + body, st.sampled_from(["", "-"]), nonzero_int),
)
exponent = st.builds(
    lambda e, sign, value: f"{e}{sign}{value}",
    st.sampled_from("eE"),
    st.sampled_from(["", "+", "-"]),
    st.one_of(st.integers(0, 30), st.integers(280, 330), st.integers(0, 400)).map(str),
)
decimal_text = st.builds(
    lambda sign, whole, frac, exp: sign + whole + (f".{frac}" if frac else "") + exp,
    st.sampled_from(["", "-"]),
    st.one_of(st.just("0"), nonzero_int),
    st.one_of(st.just(""), digits),
    st.one_of(st.just(""), exponent),
)
float_repr = st.floats(allow_nan=False, allow_infinity=False).flatmap(
    lambda x: st.sampled_from([repr(x), f"{x:.17g}", f"{x:.3e}", f"{x:.20e}", f"{x:.25f}"])
)
subnormal = st.floats(min_value=0, max_value=2.3e-308, allow_subnormal=True).map(repr)
number_text = st.one_of(int_text, decimal_text, float_repr, subnormal)


@st.composite
def record(draw):
    values = {
        "image_id": draw(int_text),
        "category_id": draw(int_text),
        "bbox": "[" + ",".join(draw(WS) + draw(number_text) + draw(WS) for _ in range(4)) + "]",
        "score": draw(number_text),
    }
    order = draw(st.permutations(KEYS))
    parts = [f'{draw(WS)}"{key}"{draw(WS)}:{draw(WS)}{values[key]}{draw(WS)}' for key in order]
    return "{" + ",".join(parts) + "}"


@st.composite
def results_file(draw):
    records = draw(st.lists(record(), min_size=1, max_size=6))
    return (draw(WS) + "[" + ",".join(draw(WS) + r + draw(WS) for r in records) + "]" + draw(WS)).encode()


def _bits(column: np.ndarray) -> np.ndarray:
    return column.view(np.int64) if column.dtype == np.float64 else column


@settings(max_examples=400, deadline=None)
@given(results_file())
def test_compiled_columns_equal_msgspec_columns(raw):
    saved = fast._colparse
    fast._colparse = _colparse
    try:
        c_cols = fast._compiled_box_columns(raw)
    finally:
        fast._colparse = saved
    py_cols = fast_msgspec._msgspec_box_columns(raw)
    if py_cols is None:
        assert c_cols is None
        return
    assert c_cols is not None
    for c_col, py_col in zip(c_cols, py_cols):
        assert c_col.dtype == py_col.dtype
        assert c_col.shape == py_col.shape
        assert np.array_equal(_bits(c_col), _bits(py_col))


@settings(max_examples=300, deadline=None)
@given(number_text)
def test_every_number_reads_as_msgspec_reads_it(number):
    raw = f'[{{"image_id": 1, "category_id": 1, "bbox": [{number}, 0, 0, 0], "score": {number}}}]'.encode()
    capacity = 1
    columns = [np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty(4), np.empty(1)]
    n = _colparse.box_results(raw, *columns)
    py_cols = fast_msgspec._msgspec_box_columns(raw)
    if py_cols is None:
        assert n is None
        return
    assert n == 1
    assert columns[3].view(np.int64)[0] == py_cols[3].view(np.int64)[0]
    assert columns[2].view(np.int64)[0] == py_cols[2].view(np.int64)[0, 0]


text_number = st.one_of(
    number_text,
    st.builds(
        lambda sign, body: sign + body,
        st.sampled_from(["+", "-", ""]),
        decimal_text.map(lambda t: t.lstrip("-")),
    ),
    st.builds(lambda a, b: f"{a}.{b}", st.text("0123456789", max_size=5), st.text("0123456789", max_size=5)),
)
GAP = st.text(alphabet=" \t", min_size=1, max_size=3)
BREAK = st.sampled_from(["\n", "\r\n", "\r", "\n\n", "\n \t\n"])


@st.composite
def text_file(draw, first_is_text):
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        first = (
            draw(st.from_regex(r"[A-Za-z0-9_.\-]{1,8}", fullmatch=True)) if first_is_text else draw(int_text)
        )
        fields = [first] + [draw(text_number) for _ in range(5)]
        lines.append(
            draw(st.text(" \t", max_size=2)) + "".join(f + draw(GAP) for f in fields[:-1]) + fields[-1]
        )
    return "".join(line + draw(BREAK) for line in lines).encode()


def _python_rows(raw, first_is_text):
    from deteval.errors import InputError
    from deteval.io._text import parse_floats, split_rows
    from deteval.io.yolo import _class_ids

    rows = split_rows(raw.decode("utf-8-sig"))
    try:
        numbers = parse_floats(rows, slice(1, 6), "f.txt", "numbers")
        first = [f[0] for _, f in rows] if first_is_text else _class_ids(rows, 0, "f.txt")
    except InputError:
        return None
    return first, numbers, np.array([n for n, _ in rows], dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(st.booleans().flatmap(lambda t: st.tuples(st.just(t), text_file(t))))
def test_text_rows_equal_the_python_reader(case):
    first_is_text, raw = case
    saved = fast._colparse
    fast._colparse = _colparse
    try:
        compiled = fast._compiled_text_rows(raw, first_is_text=first_is_text)
    finally:
        fast._colparse = saved
    python = _python_rows(raw, first_is_text)
    if python is None:
        assert compiled is None
        return
    if compiled is None:  # a subset: only class ids not written as str(int) writes them
        assert not first_is_text
        return
    if first_is_text:
        assert compiled[0] == python[0]
    else:
        assert np.array_equal(compiled[0], python[0])
    assert np.array_equal(compiled[1].view(np.int64), python[1].view(np.int64))
    assert np.array_equal(compiled[2], python[2])


ANN_KEYS = ("id", "image_id", "category_id", "bbox", "area", "iscrowd")
rle_counts = st.text(alphabet=[chr(c) for c in range(0x20, 0x7F)], max_size=12).map(
    lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
)
polygon = st.lists(st.lists(number_text, max_size=6), max_size=3).map(
    lambda rings: "[" + ",".join("[" + ", ".join(ring) + "]" for ring in rings) + "]"
)
rle = st.builds(
    lambda h, w, counts, size_first: (
        f'{{"size": [{h}, {w}], "counts": {counts}}}'
        if size_first
        else f'{{"counts": {counts}, "size": [{h}, {w}]}}'
    ),
    int_text,
    int_text,
    st.one_of(rle_counts, st.lists(int_text, max_size=5).map(lambda c: "[" + ",".join(c) + "]")),
    st.booleans(),
)
segmentation = st.one_of(
    polygon, rle, st.sampled_from(["null", "[[1, 2], {}]", "[[[[[1]]]]]", '"x"', "[NaN]"])
)


@st.composite
def annotation(draw):
    values = {
        "id": draw(int_text),
        "image_id": draw(st.sampled_from(["1", "2", "3", "1.0", "true"])),
        "category_id": draw(st.sampled_from(["1", "2", "-0"])),
        "bbox": "[" + ",".join(draw(WS) + draw(number_text) + draw(WS) for _ in range(4)) + "]",
        "area": draw(number_text),
        "iscrowd": draw(st.sampled_from(["0", "1", "2", "-0", "0.0"])),
    }
    for key in draw(st.sets(st.sampled_from(["segmentation", "ignore", "difficult"]))):
        values[key] = draw(segmentation) if key == "segmentation" else draw(st.sampled_from(["0", "1", "5"]))
    order = draw(st.permutations(list(values)))
    parts = [f'{draw(WS)}"{key}"{draw(WS)}:{draw(WS)}{values[key]}{draw(WS)}' for key in order]
    return "{" + ",".join(parts) + "}"


@st.composite
def instances_file(draw):
    anns = draw(st.lists(annotation(), max_size=5))
    parts = {
        "images": '[{"id": 1, "width": 64, "height": 48}, {"id": 2, "file_name": "b\\"c.jpg"}, {"id": 3}]',
        "categories": '[{"id": 1, "name": "\\u00e9t\\u00e9"}, {"id": 2, "name": "x"}]',
        "annotations": "[" + ",".join(draw(WS) + a + draw(WS) for a in anns) + "]",
    }
    if draw(st.booleans()):
        parts["info"] = '{"year": 2024, "note": "a\\": b"}'
    order = draw(st.permutations(list(parts)))
    body = ",".join(f'{draw(WS)}"{key}"{draw(WS)}:{draw(WS)}{parts[key]}' for key in order)
    return (draw(WS) + "{" + body + "}" + draw(WS)).encode()


@settings(max_examples=300, deadline=None)
@given(instances_file())
def test_compiled_instances_equal_msgspec_instances(raw):
    saved = fast._colparse
    fast._colparse = _colparse
    try:
        c_parts = fast_instances._compiled_instances(raw)
    finally:
        fast._colparse = saved
    py_parts = fast_instances._msgspec_instances(raw)
    if py_parts is None:
        assert c_parts is None
        return
    if c_parts is None:  # stricter than msgspec on purpose (e.g. an RLE counts string opening with ':')
        return
    for c_col, py_col in zip(c_parts[1][:8], py_parts[1][:8]):
        assert c_col.dtype == py_col.dtype
        assert c_col.shape == py_col.shape
        assert np.array_equal(_bits(c_col), _bits(py_col))
    assert list(c_parts[1][8]) == list(py_parts[1][8])
    assert_same_images(c_parts[0], py_parts[0].images)
    assert c_parts[0].categories == py_parts[0].categories


# ---- the images array of an instances file (``_colparse.images``) ----

image_number = st.one_of(
    number_text, st.sampled_from(["true", "null", '"640"', "-1", "-0", "-0.0", "[1]", "1e400"])
)
file_name = st.one_of(
    st.text(alphabet="abc0123456789._-/ ", max_size=12).map(lambda s: f'"{s}"'),
    st.sampled_from(
        [
            '"a\\"b.jpg"',  # an escape: orjson decodes it
            '"C:\\\\data\\\\x.jpg"',
            '"\\u00e9t\\u00e9.jpg"',
            '"\\ud800.jpg"',  # a lone surrogate: orjson refuses the file
            '"été.jpg"',  # UTF-8 as is
            '"\xff.jpg"',  # not UTF-8 (written as latin-1 below): refused
            '"a\x01b"',  # a control character: refused
            '""',
            "7",
            "null",
        ]
    ),
)
extra_value = st.one_of(
    int_text,
    st.sampled_from(
        ['"http://a.org/b.jpg"', '"2013-11-14 11:18:45"', "null", '"\\u0041"', '"é"', "1.5", "[]", "{}"]
    ),
)


@st.composite
def image(draw, image_id):
    values = {"id": image_id}
    for key in draw(st.sets(st.sampled_from(["width", "height", "file_name"]))):
        values[key] = draw(file_name) if key == "file_name" else draw(image_number)
    for key in draw(
        st.sets(st.sampled_from(["license", "coco_url", "flickr_url", "date_captured"]), max_size=2)
    ):
        values[key] = draw(extra_value)
    keys = draw(st.permutations(list(values)))
    if draw(st.integers(0, 9)) == 0:
        keys.pop(0)  # maybe without its id
    odd = draw(st.integers(0, 14))
    if odd == 0 and keys:
        keys.append(keys[0])  # a repeated key
    elif odd == 1:
        values["crowdIndex"], keys = "0.5", [*keys, "crowdIndex"]  # read by the full loader only
    elif odd == 2:
        values["neg_category_ids"], keys = "[1]", [*keys, "neg_category_ids"]
    elif odd == 3:
        values["idx"], keys = "1", [*keys, "idx"]  # unknown
    parts = [f'{draw(WS)}"{key}"{draw(WS)}:{draw(WS)}{values[key]}{draw(WS)}' for key in keys]
    return "{" + ",".join(parts) + "}"


@st.composite
def images_file(draw):
    ids = draw(
        st.lists(
            st.one_of(st.integers(1, 6).map(str), int_text, st.sampled_from(["1.0", "true", '"1"'])),
            max_size=6,
        )
    )
    images = [draw(image(i)) for i in ids]
    annotation = '{"id": 1, "image_id": %s, "category_id": 1, "bbox": [0, 0, 2, 2], "area": 4, "iscrowd": 0}'
    anns = [annotation % ids[0]] if ids and draw(st.booleans()) else []
    parts = {
        "images": "[" + ",".join(draw(WS) + i + draw(WS) for i in images) + "]",
        "categories": '[{"id": 1, "name": "a"}]',
        "annotations": "[" + ",".join(anns) + "]",
    }
    if draw(st.booleans()):
        parts["info"] = '{"year": 2024}'
    if draw(st.booleans()):
        parts["licenses"] = '[{"id": 1, "name": "x", "url": "http://x"}]'
    order = draw(st.permutations(list(parts)))
    body = ",".join(f'{draw(WS)}"{key}"{draw(WS)}:{draw(WS)}{parts[key]}' for key in order)
    text = draw(WS) + "{" + body + "}" + draw(WS)
    return text.encode("utf-8", "surrogatepass").replace(b"\xc3\xbf.jpg", b"\xff.jpg")


def _full_loader(path):
    """The ground truth of the file at ``path`` by the full loader (no fast path), or its InputError."""
    from unittest import mock

    from deteval.errors import InputError
    from deteval.io.coco import ground_truth, load_coco_gt

    with mock.patch.object(ground_truth, "_fast_ground_truth", return_value=None):
        try:
            return load_coco_gt(path)
        except InputError as error:
            return error


@settings(max_examples=500, deadline=None)
@given(images_file())
def test_compiled_images_read_as_the_full_loader_reads_them(tmp_path_factory, raw):
    """The compiled images parser reads what the full loader reads, bit for bit.

    Whatever file the fast path takes gives the full loader's ground truth; whatever the full
    loader refuses the fast path leaves to it.
    """
    from deteval._safe_read import loads_strict

    path = tmp_path_factory.mktemp("images") / "gt.json"
    path.write_bytes(raw)
    saved = fast._colparse
    fast._colparse = _colparse
    try:
        columns = fast_instances._compiled_images(raw)
        fast_gt = fast_instances._fast_ground_truth(raw, str(path))
    finally:
        fast._colparse = saved
    full = _full_loader(str(path))
    if isinstance(full, Exception):
        assert fast_gt is None
        return
    if fast_gt is not None:
        assert_same_gt(fast_gt, full)
    if columns is None:
        return
    # the columns themselves, against orjson's decoding of the same images
    (start, stop), image_columns = columns
    rest = fast_instances._Rest([], [], image_columns=image_columns)
    assert_same_images(rest, loads_strict(raw[start:stop], "images"))


@pytest.mark.parametrize(
    "images",
    [
        '[{"id": 1, "width": 640, "height": 480, "file_name": "a.jpg"}]',
        '[{"license": 4, "file_name": "000000397133.jpg", "coco_url": "http://images.cocodataset.org/val2017/'
        '000000397133.jpg", "height": 427, "width": 640, "date_captured": "2013-11-14 17:02:52", "flickr_url": '
        '"http://farm7.staticflickr.com/6116/6255196340_da26cf2c9e_z.jpg", "id": 397133}]',
        '[{"id": 2, "file_name": "été.jpg", "flickr_url": null}, {"id": 1}]',
        "[]",
    ],
)
def test_plain_images_take_the_compiled_parser(tmp_path, images):
    """COCO's own image records (val2017's first), UTF-8 names, no name, no images: read in C."""
    categories = '"categories": [{"id": 1, "name": "a"}]'
    raw = f'{{"images": {images}, "annotations": [], {categories}}}'.encode()
    saved = fast._colparse
    fast._colparse = _colparse
    try:
        assert fast_instances._compiled_images(raw) is not None
        gt = fast_instances._fast_ground_truth(raw, str(tmp_path / "gt.json"))
    finally:
        fast._colparse = saved
    assert gt is not None
    (tmp_path / "gt.json").write_bytes(raw)
    assert_same_gt(gt, _full_loader(str(tmp_path / "gt.json")))


@pytest.mark.parametrize(
    ("images", "compiled"),
    [
        (b'[{"id": 1, "file_name": "a\x01b"}]', False),  # a control character: not JSON
        (b'[{"id": 1, "file_name": "a\tb"}]', False),
        (b'[{"id": 1, "file_name": "\xff.jpg"}]', False),  # not UTF-8
        (b'[{"id": 1, "file_name": "\xed\xa0\x80.jpg"}]', False),  # a surrogate in UTF-8: not UTF-8
        (b'[{"id": 1, "coco_url": "a\x7fb\x1f"}]', False),
        (b'[{"id": 1, "width": 1e400}]', False),  # beyond a double
        (b'[{"id": 1, "width": 01}]', False),
        (b'[{"id": 1, "width": true}]', False),
        (b'[{"id": 1.0}]', False),
        (b'[{"id": 9223372036854775808}]', False),
        (b'[{"id": 1, "id": 2}]', False),
        (b'[{"width": 3}]', False),
        (b'[{"id": 1, "width": 3,}]', False),
        (b'[{"id": 1}, {"id": 1}]', True),  # a repeated id: read, then named by the full loader
        (b'[{"id": 1, "height": -2}]', True),  # a negative size: the same
    ],
)
def test_images_the_full_loader_refuses_are_left_to_it(tmp_path, images, compiled):
    """Every image the full loader refuses makes the fast path decline, in C or after it."""
    raw = b'{"images": ' + images + b', "annotations": [], "categories": [{"id": 1, "name": "a"}]}'
    path = tmp_path / "gt.json"
    path.write_bytes(raw)
    saved = fast._colparse
    fast._colparse = _colparse
    try:
        assert (fast_instances._compiled_images(raw) is not None) == compiled
        assert fast_instances._fast_ground_truth(raw, str(path)) is None
    finally:
        fast._colparse = saved
    assert isinstance(_full_loader(str(path)), Exception)
