"""The compiled instances parser (deteval.io._colparse.instances) against its twin, the msgspec path.

Where the C extension was built, a COCO instances file read by it (annotations) and msgspec (the
rest of the document) must give the same columns bit for bit, the same images and categories and
the same segmentations as msgspec alone; it must refuse anything msgspec's strict structs refuse;
and ``load_coco_gt`` must return the same GroundTruth, or raise the same error, with and without
the extension. Without the extension these tests skip (``test_colparse.py`` fails then in CI).
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from deteval import _speedups
from deteval.errors import DetevalError
from deteval.io.coco import fast, fast_instances, load_coco_gt
from tests import ROOT
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_segm import generate_segm
from tests.support.colparse import GT_FIELDS, assert_same_images
from tests.support.kernels import needs_kernel

_colparse = _speedups.load("deteval.io._colparse")  # None: not built, stale or disabled

pytestmark = needs_kernel("deteval.io._colparse")

GT_PATH = ROOT / "fixtures" / "coco" / "gt.json"


@pytest.fixture
def compiled(monkeypatch):
    """The compiled path switched on, whatever DETEVAL_NO_EXTENSION said at import."""
    monkeypatch.setattr(fast, "_colparse", _colparse)


def _bits(column: np.ndarray) -> np.ndarray:
    return column.view(np.int64) if column.dtype == np.float64 else column


def assert_twins(raw: bytes) -> tuple | None:
    """Both paths on ``raw``: the same parts bit for bit, or the compiled one None.

    The compiled parser may refuse more than msgspec, never less. Returns the compiled parts.
    """
    c_parts = fast_instances._compiled_instances(raw)
    py_parts = fast_instances._msgspec_instances(raw)
    if py_parts is None:
        assert c_parts is None, "the compiled parser accepted a file msgspec refuses"
        return None
    if c_parts is None:
        return None
    c_data, c_cols = c_parts
    py_data, py_cols = py_parts
    assert_same_images(c_data, py_data.images)
    assert c_data.categories == py_data.categories
    assert c_data.info == py_data.info
    assert c_data.licenses == py_data.licenses
    for c_col, py_col in zip(c_cols[:8], py_cols[:8]):
        assert c_col.dtype == py_col.dtype
        assert c_col.shape == py_col.shape
        assert c_col.flags.c_contiguous
        assert np.array_equal(_bits(c_col), _bits(py_col))
    assert len(c_cols[8]) == len(py_cols[8])
    assert list(c_cols[8]) == list(py_cols[8])
    assert c_cols[8][:] == py_cols[8][:]
    for c_col, py_col in zip(c_cols[9:], py_cols[9:], strict=True):  # keypoints, num_keypoints
        assert (c_col is None) == (py_col is None)
        if c_col is not None:
            assert c_col.dtype == py_col.dtype
            assert c_col.shape == py_col.shape
            assert np.array_equal(_bits(c_col), _bits(py_col))
    return c_parts


def _outcome(path) -> tuple:
    """What ``load_coco_gt`` makes of ``path``: the error, or every field bit for bit."""
    try:
        gt = load_coco_gt(path)
    except DetevalError as exc:
        return type(exc).__name__, str(exc)
    fields = tuple(_bits(np.asarray(getattr(gt, f))).tobytes() for f in GT_FIELDS)
    keypoints = tuple(
        None if value is None else (value.dtype.str, value.shape, _bits(value).tobytes())
        for value in (gt.keypoints, gt.num_keypoints)
    )
    return (
        *fields,
        *keypoints,
        gt.image_name,
        gt.category_name,
        gt.warnings,
        gt.source,
        tuple(gt.segmentation),
    )


def assert_loads_alike(tmp_path, monkeypatch, raw: bytes) -> tuple:
    path = tmp_path / "gt.json"
    path.write_bytes(raw)
    monkeypatch.setattr(fast, "_colparse", _colparse)
    with_extension = _outcome(path)
    monkeypatch.setattr(fast, "_colparse", None)
    assert _outcome(path) == with_extension
    return with_extension


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(
    "path",
    sorted(p for p in [*ROOT.joinpath("fixtures").rglob("*.json"), *ROOT.joinpath("tests").rglob("*.json")]),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_json_file_in_the_repository_reads_the_same(path):
    assert_twins(path.read_bytes())


@pytest.mark.usefixtures("compiled")
def test_plain_fixture_is_read_by_the_compiled_path():
    parts = assert_twins(GT_PATH.read_bytes())
    assert parts is not None
    assert isinstance(parts[1][8], fast_instances.SpanSegmentations)


def _rle_dataset(seed: int) -> dict:
    """Ground truth with compressed RLE (counts with backslashes), uncompressed RLE and polygons."""
    from pycocotools import mask as mask_utils

    rng = np.random.default_rng(seed)
    images = [{"id": i, "width": 64, "height": 48, "file_name": f'ïmg "{i}" \\ \u2603.jpg'} for i in (1, 2)]
    categories = [{"id": 1, "name": "caté\tgory"}, {"id": 7, "name": '\u00e9\\"x', "supercategory": "s"}]
    anns = []
    for k in range(30):
        m = np.asfortranarray((rng.random((48, 64)) < 0.3).astype(np.uint8))
        rle = mask_utils.encode(m)
        rle["counts"] = rle["counts"].decode("ascii")
        if k % 3 == 1:
            flat = m.flatten(order="F")
            change = np.flatnonzero(np.diff(flat)) + 1
            runs = np.diff(np.concatenate([[0], change, [flat.size]]))
            counts = ([0] if flat[0] else []) + runs.tolist()
            segm: object = {"counts": counts, "size": [48, 64]}
        elif k % 3 == 2:
            segm = [rng.uniform(0, 40, 8).round(2).tolist(), rng.uniform(0, 40, 6).tolist()]
        else:
            segm = rle
        ann = {
            "segmentation": segm,
            "area": float(m.sum()),
            "iscrowd": int(k % 5 == 0),
            "image_id": int(k % 2 + 1),
            "bbox": [float(v) for v in rng.uniform(0, 30, 4).round(3)],
            "category_id": 1 if k % 4 else 7,
            "id": 1000 - k,
        }
        if k % 7 == 3:
            ann["ignore"] = 1
        if k % 6 == 2:
            ann["difficult"] = 0
        if k % 11 == 4:
            del ann["segmentation"]
        anns.append(dict(sorted(ann.items(), key=lambda kv: (hash(kv[0]) + k) % 13)))
    return {
        "info": {"year": 2024, "x": [{"y": "z"}]},
        "images": images,
        "licenses": [],
        "annotations": anns,
        "categories": categories,
    }


def _generated() -> list[tuple[str, bytes]]:
    files = []
    for seed in range(8):
        gt, _ = generate(seed) if seed % 2 else generate_segm(seed)
        files.append((f"generated {seed}", json.dumps(gt).encode()))
        files.append((f"generated {seed} compact", json.dumps(gt, separators=(",", ":")).encode()))
    for seed in range(3):
        rle = _rle_dataset(seed)
        files.append((f"rle {seed}", json.dumps(rle).encode()))
        files.append((f"rle {seed} utf-8", json.dumps(rle, ensure_ascii=False, indent=1).encode()))
    spaced = json.dumps(_rle_dataset(9), indent="\t").replace('":', '"  :\r\n').encode()
    files.append(("whitespace before colons", spaced))
    return files


GENERATED = _generated()


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("name", [n for n, _ in GENERATED])
def test_generated_files_are_read_by_both_alike(name):
    raw = dict(GENERATED)[name]
    parts = assert_twins(raw)
    if fast_instances._msgspec_instances(raw) is not None:
        assert parts is not None, "a plain generated file should take the compiled path"


@pytest.mark.parametrize("name", [n for n, _ in GENERATED[-4:]])
def test_generated_files_load_alike(tmp_path, monkeypatch, name):
    outcome = assert_loads_alike(tmp_path, monkeypatch, dict(GENERATED)[name])
    assert outcome[0] != "InputError"


PLAIN = json.loads(GT_PATH.read_text())


def _edit(change) -> bytes:
    data = json.loads(json.dumps(PLAIN))
    text = change(data)
    return (text if isinstance(text, str) else json.dumps(data)).encode("utf-8", "surrogateescape")


def _text(old: str, new: str, segmentation: object = None):
    """``old`` replaced by ``new`` in the fixture's text; ``old`` must be there.

    The first annotation's segmentation is set to ``segmentation`` first, when given.
    """

    def change(d: dict) -> str:
        if segmentation is not None:
            d["annotations"][0]["segmentation"] = segmentation
        text = json.dumps(d)
        assert old in text, f"{old!r} is not in the file: the case would test nothing"
        return text.replace(old, new, 1)

    return change


def _polygon_text(old: str, new: str):
    """:func:`_text` on the fixture with a polygon in its first annotation."""
    return _text(old, new, [[10, 10, 60, 10, 60, 90]])


ANN0 = PLAIN["annotations"][0]
IMG0 = PLAIN["images"][0]["id"]
HOSTILE = {
    "duplicate key in an annotation": _text('"iscrowd": 0', '"iscrowd": 0, "iscrowd": 0'),
    "duplicate id key": _text(f'"id": {ANN0["id"]}', f'"id": {ANN0["id"]}, "id": {ANN0["id"]}'),
    "unknown key": lambda d: d["annotations"][0].update(extra=1),
    "is_group_of": lambda d: d["annotations"][0].update(is_group_of=1),
    "keypoints": lambda d: d["annotations"][0].update(keypoints=[1, 2, 2], num_keypoints=1),
    "missing area": lambda d: d["annotations"][0].pop("area"),
    "missing iscrowd": lambda d: d["annotations"][0].pop("iscrowd"),
    "bool id": lambda d: d["annotations"][0].update(id=True),
    "bool iscrowd": lambda d: d["annotations"][0].update(iscrowd=False),
    "float id": lambda d: d["annotations"][0].update(id=3.0),
    "float image id": lambda d: d["annotations"][0].update(image_id=1.5),
    "string category": lambda d: d["annotations"][0].update(category_id="1"),
    "id above int64": lambda d: d["annotations"][0].update(id=2**63),
    "iscrowd 2": lambda d: d["annotations"][0].update(iscrowd=2),
    "ignore 5": lambda d: d["annotations"][0].update(ignore=5),
    "difficult -1": lambda d: d["annotations"][0].update(difficult=-1),
    "negative area": lambda d: d["annotations"][0].update(area=-1),
    "negative width": lambda d: d["annotations"][0].update(bbox=[0, 0, -1, 1]),
    "bbox of 3": lambda d: d["annotations"][0].update(bbox=[0, 0, 1]),
    "null bbox": lambda d: d["annotations"][0].update(bbox=None),
    "unknown image": lambda d: d["annotations"][0].update(image_id=123456),
    "unknown category": lambda d: d["annotations"][0].update(category_id=123456),
    "duplicate annotation id": lambda d: d["annotations"].append(dict(d["annotations"][0])),
    "NaN area": _text('"area": ', '"area": NaN, "x": '),
    "NaN bbox": lambda d: json.dumps(d).replace('"bbox": [', '"bbox": [NaN, ', 1).replace(", NaN", "", 0),
    "Infinity in polygon": _polygon_text('"segmentation": [[', '"segmentation": [[Infinity, '),
    "overflow in polygon": _polygon_text('"segmentation": [[', '"segmentation": [[1e400, '),
    "huge integer in polygon": _polygon_text(
        '"segmentation": [[', '"segmentation": [[123456789012345678901234567890, '
    ),
    "leading zero in polygon": _polygon_text('"segmentation": [[', '"segmentation": [[01, '),
    "string in polygon": _polygon_text('"segmentation": [[', '"segmentation": [["a", '),
    "object in polygon": _polygon_text('"segmentation": [[', '"segmentation": [[{"a": 1}], ['),
    "null segmentation": lambda d: d["annotations"][0].update(segmentation=None),
    "number segmentation": lambda d: d["annotations"][0].update(segmentation=5),
    "string segmentation": lambda d: d["annotations"][0].update(segmentation="x"),
    "empty segmentation": lambda d: d["annotations"][0].update(segmentation=[]),
    "empty polygon": lambda d: d["annotations"][0].update(segmentation=[[]]),
    "rle extra key": lambda d: d["annotations"][0].update(
        segmentation={"size": [2, 2], "counts": "04", "x": 1}
    ),
    "rle one key": lambda d: d["annotations"][0].update(segmentation={"counts": "04"}),
    "rle other keys": lambda d: d["annotations"][0].update(segmentation={"a": [2, 2], "b": "04"}),
    "rle duplicate key": _text(
        '"counts": "1"', '"counts": "1", "counts": "2"', {"size": [2, 2], "counts": "1"}
    ),
    "rle quote in counts": lambda d: d["annotations"][0].update(
        segmentation={"size": [2, 2], "counts": 'a":b'}
    ),
    "rle counts starting with a colon": lambda d: d["annotations"][0].update(
        segmentation={"size": [2, 2], "counts": ":3"}
    ),
    "rle counts starting with a space": lambda d: d["annotations"][0].update(
        segmentation={"size": [2, 2], "counts": " :3"}
    ),
    "rle counts starting with a colon, another image name too": lambda d: (
        d["annotations"][0].update(segmentation={"size": [2, 2], "counts": ":3"}),
        d["images"][0].update(file_name=":a.jpg"),
    ),
    "space-leading key-like image name": lambda d: d["images"][0].update(file_name=' :a.jpg", "id": 5'),
    "rle non-ascii counts": lambda d: d["annotations"][0].update(
        segmentation={"size": [2, 2], "counts": "é"}
    ),
    "rle unicode escape": lambda d: d["annotations"][0].update(
        segmentation={"size": [2, 2], "counts": "\u0001"}
    ),
    "rle backslash": lambda d: d["annotations"][0].update(segmentation={"size": [2, 2], "counts": "a\\b/c"}),
    "rle newline escape": lambda d: d["annotations"][0].update(
        segmentation={"size": [2, 2], "counts": "a\nb"}
    ),
    "rle nested object": lambda d: d["annotations"][0].update(segmentation={"size": {"h": 2}, "counts": "0"}),
    "nested deeper": lambda d: d["annotations"][0].update(segmentation=[[[[[[[[1]]]]]]]]),
    "nested very deep": lambda d: d["annotations"][0].update(segmentation=json.loads("[" * 200 + "]" * 200)),
    "escaped key": _text('"iscrowd"', '"\\u0069scrowd"'),
    "escaped annotations key": _text('"annotations"', '"\\u0061nnotations"'),
    "second annotations key": lambda d: json.dumps(d)[:-1] + ', "annotations": []}',
    "second annotations key first": lambda d: '{"annotations": [], ' + json.dumps(d)[1:],
    "annotations not a list": lambda d: d.update(annotations={"a": 1}),
    "annotations null": lambda d: d.update(annotations=None),
    "no annotations": lambda d: d.pop("annotations"),
    "empty annotations": lambda d: d.update(annotations=[]),
    "unknown top-level key": lambda d: d.update(extra=[{"a": 1}]),
    "duplicate images key": lambda d: json.dumps(d)[:-1] + ', "images": []}',
    "image with duplicate key": _text(f'"id": {IMG0}', f'"id": 0, "id": {IMG0}'),
    "key-like string in a name": lambda d: d["categories"][0].update(name='x": 1'),
    "annotations first": lambda d: json.dumps({"annotations": d.pop("annotations"), **d}),
    "trailing comma": lambda d: json.dumps(d).replace("]}]", "]},]", 1),
    "trailing garbage": lambda d: json.dumps(d) + " x",
    "top-level list": lambda d: json.dumps([d]),
    "bad utf-8 name": lambda d: json.dumps(d, ensure_ascii=False).replace('"name": "', '"name": "\udcff', 1),
    "BOM": lambda d: "\ufeff" + json.dumps(d),
}


def _second_annotation(text: str, old: str, new: str) -> str:
    """``text`` with the first ``old`` after the second annotation's id replaced by ``new``."""
    ann = PLAIN["annotations"][1]
    at = text.index(old, text.index(f'"id": {ann["id"]}, "image_id": {ann["image_id"]}'))
    return text[:at] + new + text[at + len(old) :]


def _rle_and_duplicate(segmentation: dict, duplicate=('"iscrowd": 0', '"iscrowd": 0, "iscrowd": 0')):
    """The first annotation's segmentation set, and a duplicate key in the second annotation."""

    def change(d: dict) -> str:
        d["annotations"][0]["segmentation"] = segmentation
        return _second_annotation(json.dumps(d), *duplicate)

    return change


#: Files with a duplicate key somewhere, each next to a string or an RLE object that a count of
#: keys could take for one key more or less. Every path refuses them (the full loader names the key).
DUPLICATES = {
    "rle with one key, duplicate key elsewhere": _rle_and_duplicate({"counts": "04"}),
    "rle with no key, two duplicate keys elsewhere": _rle_and_duplicate(
        {}, ('"iscrowd": 0', '"iscrowd": 0, "iscrowd": 0, "iscrowd": 0')
    ),
    "rle counts starting with a colon, duplicate key elsewhere": _rle_and_duplicate(
        {"size": [2, 2], "counts": ":3"}
    ),
    "rle with one key opening with a colon, duplicate key elsewhere": _rle_and_duplicate({"counts": ":3"}),
    "rle counts with a space and a colon, duplicate key elsewhere": _rle_and_duplicate({"counts": " :3"}),
    "duplicate counts opening with a colon": _text(
        '"counts": ":3"', '"counts": ":3", "counts": ":3"', {"size": [2, 2], "counts": ":3"}
    ),
    "two counts keys opening with a colon, no size": _text(
        '"counts": ":3"', '"counts": ":3", "counts": ":3"', {"counts": ":3"}
    ),
    "duplicate image key, a name opening with a colon": lambda d: (
        d["images"][1].update(file_name=":b.jpg"),
        json.dumps(d).replace(f'"id": {IMG0}', f'"id": {IMG0}, "id": {IMG0}', 1),
    )[1],
}


def _hostile_files() -> dict[str, bytes]:
    files = {name: _edit(change) for name, change in {**HOSTILE, **DUPLICATES}.items()}
    plain = json.dumps(PLAIN).encode()
    for cut in range(1, len(plain), max(1, len(plain) // 40)):
        files[f"truncated at {cut}"] = plain[:cut]
    files["empty file"] = b""
    return files


HOSTILE_FILES = _hostile_files()


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_hostile_files_are_twins(name):
    assert_twins(HOSTILE_FILES[name])


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_loader_behaves_as_without_the_extension(tmp_path, monkeypatch, name):
    assert_loads_alike(tmp_path, monkeypatch, HOSTILE_FILES[name])


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(
    "name",
    [
        "duplicate key in an annotation",
        "unknown key",
        "bool id",
        "float id",
        "NaN area",
        "nested deeper",
        "escaped key",
        "second annotations key",
        "rle quote in counts",
        "null segmentation",
    ],
)
def test_the_compiled_parser_refuses_what_is_not_plain(name):
    assert fast_instances._compiled_instances(HOSTILE_FILES[name]) is None


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(
    "name",
    [
        "annotations first",
        "rle backslash",
        "empty segmentation",
        "empty annotations",
        "rle counts starting with a colon",
        "rle counts starting with a space",
        "rle counts starting with a colon, another image name too",
        "space-leading key-like image name",
        "key-like string in a name",
    ],
)
def test_the_compiled_parser_takes_plain_variants(name):
    assert assert_twins(HOSTILE_FILES[name]) is not None


@pytest.mark.parametrize("name", sorted([*DUPLICATES, "rle duplicate key", "duplicate key in an annotation"]))
def test_a_duplicate_key_is_refused_on_every_path(tmp_path, monkeypatch, name):
    raw = HOSTILE_FILES[name]
    monkeypatch.setattr(fast, "_colparse", _colparse)
    assert fast_instances._compiled_instances(raw) is None
    assert fast_instances._msgspec_instances(raw) is None
    path = tmp_path / "gt.json"
    path.write_bytes(raw)
    with pytest.raises(DetevalError, match="duplicate key") as with_extension:
        load_coco_gt(path)
    monkeypatch.setattr(fast, "_colparse", None)
    with pytest.raises(DetevalError, match="duplicate key") as without:
        load_coco_gt(path)
    assert str(without.value) == str(with_extension.value)


@pytest.mark.usefixtures("compiled")
def test_span_segmentations_decode_on_access():
    parts = fast_instances._compiled_instances(GT_PATH.read_bytes())
    assert parts is not None
    segm = parts[1][8]
    assert len(segm) == len(PLAIN["annotations"])
    assert segm[0] == PLAIN["annotations"][0].get("segmentation")
    assert segm[-1] == PLAIN["annotations"][-1].get("segmentation")
    assert segm[:2] == tuple(a.get("segmentation") for a in PLAIN["annotations"][:2])


@pytest.mark.usefixtures("compiled")
def test_results_bytes_are_let_go_and_read_again_for_a_message(tmp_path, monkeypatch):
    """Once a results file's columns exist its bytes are freed; a message needs a second read.

    (The whole-file path: a plain file read by path is streamed, and never read whole.)
    """
    from deteval.io.coco import _common, load_coco_dt, results

    gt = load_coco_gt(GT_PATH)
    image = int(gt.image_id[0])
    record = {"image_id": image, "category_id": int(gt.category_id[0]), "bbox": [1, 2, 3, 4], "score": 0.5}
    reads = []
    real_read = _common.read_bytes
    monkeypatch.setattr(_common, "read_bytes", lambda *a, **k: reads.append(a[0]) or real_read(*a, **k))
    good = tmp_path / "good.json"
    good.write_text(json.dumps([record] * 3))
    assert len(load_coco_dt(good, gt).score) == 3
    assert not reads  # streamed
    monkeypatch.setattr(results, "_stream_box_results", lambda *a, **k: None)
    assert len(load_coco_dt(good, gt).score) == 3
    assert len(reads) == 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([record, {**record, "image_id": 987654321}]))
    with pytest.raises(DetevalError, match="987654321") as compiled_error:
        load_coco_dt(bad, gt)
    assert len(reads) == 3
    monkeypatch.setattr(fast, "_colparse", None)
    with pytest.raises(DetevalError) as msgspec_error:
        load_coco_dt(bad, gt)
    assert str(compiled_error.value) == str(msgspec_error.value)


# --------------------------------------------------------------------------------------
# A ground truth read from a file keeps its segmentations on disk


def _segm_copy(tmp_path):
    path = tmp_path / "gt.json"
    path.write_bytes((ROOT / "fixtures" / "segm" / "gt.json").read_bytes())
    return path


@pytest.mark.usefixtures("compiled")
def test_ground_truth_from_a_file_does_not_keep_its_bytes_and_scores_the_same(tmp_path):
    import deteval
    from deteval.protocol import get_protocol

    path = _segm_copy(tmp_path)
    gt = load_coco_gt(str(path))
    assert isinstance(gt.segmentation, fast_instances.SpanSegmentations)
    assert gt.segmentation._raw is None  # dropped after parsing: read again when a segm run needs it
    in_memory = load_coco_gt(json.loads(path.read_text()))
    dt = str(ROOT / "fixtures" / "segm" / "dt.json")
    for name in ("coco", "coco-exact-masks"):
        protocol = get_protocol(name).replace(iou_type="segm")
        got = deteval.evaluate(gt, deteval.load_detections(dt, gt), protocol)
        want = deteval.evaluate(in_memory, deteval.load_detections(dt, in_memory), protocol)
        assert json.dumps(got.metrics) == json.dumps(want.metrics)  # NaN where NaN
        assert np.array_equal(got.precision, want.precision, equal_nan=True)


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("workers", [1, 2])  # 2: the CRC-32 is computed on a second thread
@pytest.mark.parametrize("change", ["same size", "longer", "deleted"])
def test_a_ground_truth_file_changed_after_loading_is_refused_not_misread(tmp_path, change, workers):
    path = _segm_copy(tmp_path)
    gt = load_coco_gt(str(path), workers=workers)
    assert gt.segmentation._origin.crc == zlib.crc32(path.read_bytes())
    raw = path.read_bytes()
    first = raw.index(b'"segmentation"')
    digit = raw.index(b"1", first)  # a coordinate of the first polygon
    if change == "same size":
        path.write_bytes(raw[:digit] + b"2" + raw[digit + 1 :])
    elif change == "longer":
        path.write_bytes(raw + b" ")
    else:
        path.unlink()
    message = "changed since the ground truth was loaded" if change != "deleted" else "file not found"
    with pytest.raises(DetevalError, match=message):
        gt.segmentation[0]


@pytest.mark.usefixtures("compiled")
def test_a_pickled_ground_truth_carries_its_segmentations(tmp_path):
    import pickle

    path = _segm_copy(tmp_path)
    gt = load_coco_gt(str(path))
    copy = pickle.loads(pickle.dumps(gt))
    want = [gt.segmentation[i] for i in range(len(gt))]
    path.unlink()
    assert [copy.segmentation[i] for i in range(len(copy))] == want


def _keypoint_ground_truth(seed: int, n_keypoints: int = 5) -> dict:
    """People with keypoints (random visibility, some with none labelled, a crowd), ids in any order."""
    rng = np.random.default_rng(seed)
    anns = []
    for k in range(40):
        x, y, w, h = (round(float(v), 2) for v in rng.uniform(1, 50, 4))
        flags = rng.integers(0, 3, n_keypoints) if k % 7 else np.zeros(n_keypoints, dtype=int)
        keypoints = []
        for v in flags:
            xy = [round(float(c), 3) for c in rng.uniform(0, 60, 2)] if v else [0, 0]
            keypoints += [*xy, int(v)]
        anns.append(
            {
                "num_keypoints": int((flags > 0).sum()),
                "keypoints": keypoints,
                "id": int(1000 - k),
                "image_id": int(rng.integers(1, 4)),
                "category_id": 1,
                "bbox": [x, y, w, h],
                "area": round(w * h * 0.6, 2),
                "iscrowd": int(k == 3),
            }
        )
    return {
        "images": [{"id": i, "width": 64, "height": 48} for i in (1, 2, 3)],
        "annotations": anns,
        "categories": [{"id": 1, "name": "person", "keypoints": [f"k{i}" for i in range(n_keypoints)]}],
    }


def _full_path_outcome(monkeypatch, path) -> tuple:
    """``_outcome`` with both fast paths off (the full loader's checks and messages)."""
    monkeypatch.setattr(fast, "_colparse", None)
    monkeypatch.setattr(fast_instances, "_HAS_MSGSPEC", False)
    try:
        return _outcome(path)
    finally:
        monkeypatch.undo()


KEYPOINT_VARIANTS = {
    "plain": lambda d: None,
    "integer coordinates": lambda d: d["annotations"][0]["keypoints"].__setitem__(0, 12),
    "num_keypoints missing": lambda d: d["annotations"][2].pop("num_keypoints"),
    "num_keypoints out of range": lambda d: d["annotations"][2].__setitem__("num_keypoints", 9),
    "visibility flag 3": lambda d: d["annotations"][4]["keypoints"].__setitem__(2, 3),
    "a record without keypoints": lambda d: d["annotations"][5].pop("keypoints"),
    "the first record without keypoints": lambda d: d["annotations"][0].pop("keypoints"),
    "a shorter list": lambda d: d["annotations"][6].__setitem__("keypoints", [1, 2, 2]),
    "an empty list": lambda d: d["annotations"][6].__setitem__("keypoints", []),
    "not a multiple of 3": lambda d: [
        a.__setitem__("keypoints", a["keypoints"][:-1]) for a in d["annotations"]
    ],
    "a string coordinate": lambda d: d["annotations"][1]["keypoints"].__setitem__(0, "1"),
    "a null coordinate": lambda d: d["annotations"][1]["keypoints"].__setitem__(0, None),
    "num_keypoints as a float": lambda d: d["annotations"][1].__setitem__("num_keypoints", 2.0),
    "num_keypoints only": lambda d: [a.pop("keypoints") for a in d["annotations"]],
    "an infinite coordinate": lambda d: d["annotations"][1]["keypoints"].__setitem__(0, 123456.5),
    "a 19-digit integer coordinate": lambda d: d["annotations"][1]["keypoints"].__setitem__(0, 10**18),
}


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("variant", sorted(KEYPOINT_VARIANTS))
def test_keypoint_ground_truth_loads_as_the_full_loader_reads_it(tmp_path, monkeypatch, variant):
    data = _keypoint_ground_truth(5)
    KEYPOINT_VARIANTS[variant](data)
    raw = json.dumps(data).replace("123456.5", "1e400").encode()  # JSON's way to an infinity
    parts = assert_twins(raw)
    path = tmp_path / "gt.json"
    path.write_bytes(raw)
    full = _full_path_outcome(monkeypatch, path)
    assert assert_loads_alike(tmp_path, monkeypatch, raw) == full
    if variant in ("plain", "integer coordinates"):
        assert parts is not None  # read by the compiled parser,
        assert parts[1][9] is not None  # keypoints too
        assert parts[1][9].shape == (40, 5, 3)


@pytest.mark.usefixtures("compiled")
def test_a_generated_keypoint_dataset_is_read_in_columns_as_the_full_loader_reads_it(tmp_path, monkeypatch):
    data = _keypoint_ground_truth(11, n_keypoints=17)
    raw = json.dumps(data).encode()
    path = tmp_path / "gt.json"
    path.write_bytes(raw)
    monkeypatch.setattr(fast, "_colparse", _colparse)
    gt = load_coco_gt(path)
    assert gt.segmentation.__class__ is fast_instances.SpanSegmentations  # the compiled path
    assert _outcome(path) == _full_path_outcome(monkeypatch, path)
    assert gt.num_keypoints.tolist() == [a["num_keypoints"] for a in data["annotations"]]
    assert gt.keypoints.reshape(len(gt), -1).tolist() == [a["keypoints"] for a in data["annotations"]]


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("with_keypoints", [True, False])
def test_a_ground_truth_file_is_parsed_once(tmp_path, monkeypatch, with_keypoints):
    """One pass of the compiled parser over the annotations, with or without keypoint lists.

    A keypoint file is parsed with the keypoint buffers from the start (not first without them,
    refused at the first ``keypoints`` key, then again); a file whose only ``"keypoints"`` is a
    category's list of names reads the same columns as without the buffers.
    """
    data = _keypoint_ground_truth(3)
    if not with_keypoints:
        for annotation in data["annotations"]:
            del annotation["keypoints"], annotation["num_keypoints"]
    path = tmp_path / "gt.json"
    path.write_bytes(json.dumps(data).encode())
    calls = []
    real = _colparse.instances
    monkeypatch.setattr(_colparse, "instances", lambda *a: calls.append(a[-3] is None) or real(*a))
    gt = load_coco_gt(path)
    assert gt.segmentation.__class__ is fast_instances.SpanSegmentations  # the compiled path
    assert calls == [False]  # once, with the keypoint buffers ("keypoints" is in the file)
    assert (gt.keypoints is None) is not with_keypoints
    monkeypatch.undo()
    assert _outcome(path) == _full_path_outcome(monkeypatch, path)


@pytest.mark.usefixtures("compiled")
def test_a_ground_truth_without_segmentations_keeps_nothing_of_its_file(tmp_path):
    """No segmentation span: nothing is read again (no CRC-32 of the file is taken or checked).

    The file may then change or go: the loaded ground truth (and a pickled copy) needs none of it.
    """
    import pickle

    path = tmp_path / "gt.json"
    path.write_bytes(json.dumps(_keypoint_ground_truth(4)).encode())
    gt = load_coco_gt(str(path))
    assert gt.segmentation.__class__ is fast_instances.SpanSegmentations  # the compiled path
    path.write_bytes(b"[]")  # changed after loading
    copy = pickle.loads(pickle.dumps(gt))
    assert list(copy.segmentation) == [None] * len(gt) == list(gt.segmentation)
    assert copy.keypoints.tolist() == gt.keypoints.tolist()


def _loosely_skipped(shift: int) -> bytes:
    """A keypoint file with values the compiled parser skips by structure (eight bytes at a time).

    Quotes, escaped quotes, brackets inside strings and nested arrays at every offset within a
    word, before the annotations and inside them (the threaded parse scans the array loosely).
    """
    data = _keypoint_ground_truth(shift)
    pad = "x" * shift
    data = {
        "info": {
            "description": pad + '[{"}]\\\\"' + pad + "]",
            "é" + pad: [[pad], {"k": [1, [2]]}],
            "escapes": ["".join("a" * k + '"' + "\\" + "é" for k in range(17)) + pad, "b" * (40 + shift)],
        },
        "licenses": [{"name": pad + "}" * 9, "url": "[" * shift + '\\"'}],
        **data,
    }
    for k, ann in enumerate(data["annotations"]):
        if k % 3 == 0:
            ann["segmentation"] = [[float(v) for v in range(6 + shift)]]
    return json.dumps(data, ensure_ascii=shift % 2 == 0).encode()


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("shift", range(9))
def test_values_skipped_by_structure_read_as_msgspec_reads_them(shift):
    raw = _loosely_skipped(shift)
    _threads_read_as_one(raw, keypoints=True)


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("shift", range(9))
def test_long_strings_skipped_on_threads_read_as_on_one(shift):
    """RLE strings of 20-80 bytes with escaped backslashes at every offset within a word.

    The threaded parse scans the annotations array loosely (eight bytes at a time) for its end.
    """
    anns = []
    for k in range(60):
        counts = "x" * ((k + shift) % 9) + "\\" + "y" * (k % 13) + "\\" + "z" * (20 + k % 50)
        anns.append(
            {
                "id": k + 1,
                "image_id": 1 + k % 3,
                "category_id": 1,
                "bbox": [1.5, 2, 3, 4],
                "area": 12.25,
                "iscrowd": k % 2,
                "segmentation": {"size": [10, 20], "counts": counts},
            }
        )
    data = {
        "images": [{"id": i, "width": 20, "height": 10} for i in (1, 2, 3)],
        "annotations": anns,
        "categories": [{"id": 1, "name": "a"}],
    }
    _threads_read_as_one(json.dumps(data).encode(), keypoints=False)


def _threads_read_as_one(raw: bytes, *, keypoints: bool) -> None:
    """The compiled instances parse of ``raw`` on 2, 3 and 7 threads: the columns of one thread, bit for bit."""
    one = assert_twins(raw)
    assert one is not None, "the compiled parser refused a plain file"
    for threads in (2, 3, 7):
        parts = fast_instances._compiled_instances(raw, threads)
        assert parts is not None
        for c_col, one_col in zip(parts[1][:8], one[1][:8], strict=True):
            assert np.array_equal(_bits(c_col), _bits(one_col))
        if keypoints:
            assert np.array_equal(_bits(parts[1][9]), _bits(one[1][9]))
        assert list(parts[1][8]) == list(one[1][8])
