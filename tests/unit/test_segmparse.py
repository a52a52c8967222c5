"""The compiled segm-results reader (``_colparse.segm_results``) against today's path.

A results file whose records are plain polygon lists is read by the C extension into columns and
flat polygon arrays (:class:`~deteval.masks.PolygonSegmentations`), which
:func:`~deteval.masks.parse_masks` checks as arrays. With and without the extension the
loader must give the same detections, the same :class:`CheckedMasks` bit for bit, or the same
error; and whole evaluations must give the same numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval import _speedups
from deteval.errors import DetevalError
from deteval.io.coco import fast, load_coco_dt, load_coco_gt
from deteval.masks import detection_source, parse_masks
from deteval.masks.sources import PolygonSegmentations
from tests import ROOT
from tests.support.kernels import needs_kernel

_colparse = _speedups.load("deteval.io._colparse")  # None: not built, stale or disabled

pytestmark = needs_kernel("deteval.io._colparse")

SEGM_GT = ROOT / "fixtures" / "segm" / "gt.json"
SEGM_DT = ROOT / "fixtures" / "segm" / "dt.json"
BROKEN = ROOT / "fixtures" / "broken" / "coco"

DETECTION_FIELDS = ("image", "category", "box", "score", "order", "has_box")
MASK_FIELDS = ("kind", "part_start", "point_start", "points", "bounds")


def _outcome(monkeypatch, gt, source, *, compiled: bool):
    """(detections, masks) read with or without the extension, or the error's type and text."""
    with monkeypatch.context() as patch:
        patch.setattr(fast, "_colparse", _colparse if compiled else None)
        try:
            dt = load_coco_dt(source, gt)
            masks = parse_masks(detection_source(dt, gt))
        except DetevalError as exc:
            return type(exc), str(exc)
    return dt, masks


def assert_same(monkeypatch, gt, source) -> bool:
    """Both paths give the same values bit for bit, or the same error; True if the fast one read it."""
    compiled = _outcome(monkeypatch, gt, source, compiled=True)
    full = _outcome(monkeypatch, gt, source, compiled=False)
    if isinstance(full[0], type):
        assert compiled == full
        return False
    (dt, masks), (dt_full, masks_full) = compiled, full
    assert not isinstance(dt_full.segmentation, PolygonSegmentations)
    for field in DETECTION_FIELDS:
        a, b = getattr(dt, field), getattr(dt_full, field)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), field
        assert a.tobytes() == b.tobytes(), field
    assert (dt.warnings, dt.source, dt.box_format) == (dt_full.warnings, dt_full.source, dt_full.box_format)
    values, full_values = tuple(dt.segmentation or ()), tuple(dt_full.segmentation or ())
    assert values == full_values
    assert [type(x) for s in values for p in s for x in p] == [
        type(x) for s in full_values for p in s for x in p
    ]
    for field in MASK_FIELDS:
        a, b = getattr(masks, field), getattr(masks_full, field)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), field
        assert a.tobytes() == b.tobytes(), field
    assert masks.rle == masks_full.rle
    return isinstance(dt.segmentation, PolygonSegmentations)


def _ground_truth():
    images = [{"id": i, "width": 640, "height": 480, "file_name": f"{i}.jpg"} for i in (1, 2, 3)]
    annotations = [
        {
            "id": k + 1,
            "image_id": 1 + k % 3,
            "category_id": 1 + k % 2,
            "bbox": [10.0, 10.0, 50.0, 40.0],
            "area": 2000.0,
            "iscrowd": 0,
            "segmentation": [[10, 10, 60, 10, 60, 50, 10, 50]],
        }
        for k in range(6)
    ]
    categories = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    return load_coco_gt({"images": images, "annotations": annotations, "categories": categories})


GT = _ground_truth()


def _record(segmentation, k: int = 0, **extra) -> dict:
    record = {
        "image_id": 1 + k % 3,
        "category_id": 1 + k % 2,
        "bbox": [10.5, 20, 30, 40.25],
        "score": 0.5 + k / 1000,
        "segmentation": segmentation,
    }
    record.update(extra)
    return record


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "results.json"
    path.write_text(text)
    return path


def test_fixture_is_read_by_the_compiled_path(monkeypatch):
    assert assert_same(monkeypatch, load_coco_gt(SEGM_GT), SEGM_DT)


@pytest.mark.parametrize(
    "path", sorted(BROKEN.glob("segm_dt*.json")) + [BROKEN / "dt_segmentation_only.json"]
)
def test_broken_fixtures_read_or_fail_the_same(monkeypatch, path):
    assert_same(monkeypatch, load_coco_gt(BROKEN / "segm_gt.json"), path)


def _polygon(rng, n_points: int, *, ints: bool) -> list:
    xy = rng.uniform(0, 600, size=2 * n_points)
    return [int(v) for v in xy] if ints else [float(round(v, int(rng.integers(0, 6)))) for v in xy]


def test_generated_polygons_many_parts_ints_and_floats(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    records = []
    for k in range(300):
        parts = [
            _polygon(rng, int(rng.integers(3, 40)), ints=bool(rng.integers(0, 2)))
            for _ in range(int(rng.integers(1, 6)))
        ]
        records.append(_record(parts, k))
    path = _write(tmp_path, json.dumps(records))
    assert assert_same(monkeypatch, GT, path)
    compact = _write(tmp_path, json.dumps(records, separators=(",", ":")))
    assert assert_same(monkeypatch, GT, compact)
    spaced = _write(tmp_path, json.dumps(records, indent=3))
    assert assert_same(monkeypatch, GT, spaced)


NUMBERS = ["0", "-0", "-0.0", "1e2", "1E-2", "0.1", "123456789012345678", "3.0000000000000004",
           "1.7976931348623157e308", "5e-324", "9999999.999999999", "-9999999", "12345678901234567890123",
           "1e400", "1.5e-400", "0.30000000000000004441", "10000000", "10000000.000000001"]  # fmt: skip


@pytest.mark.parametrize("number", NUMBERS)
def test_coordinates_are_bit_identical_or_refused(tmp_path, monkeypatch, number):
    text = f"[[{number}, 0, 10, 0, 10, 10, 0, 10]]"
    record = json.dumps(_record(None)).replace("null", text)
    assert_same(monkeypatch, GT, _write(tmp_path, f"[{record}]"))


DEGENERATE = {
    "odd": [[0, 0, 10, 0, 10, 10, 5]],
    "four_numbers": [[0, 0, 10, 10]],
    "two_points_repeated": [[0, 0, 10, 10, 0, 0, 10, 10]],
    "all_same": [[1, 1, 1, 1, 1, 1]],
    "huge": [[0, 0, 1e8, 0, 10, 10]],
    "huge_negative": [[0, 0, -10000001, 0, 10, 10]],
    "second_part_short": [[0, 0, 10, 0, 10, 10], [1, 2]],
    "later_distinct": [[0, 0, 0, 0, 0, 0, 5, 5, 0, 9]],
    "empty_list": [],
    "empty_part": [[]],
    "nested": [[[0, 0, 10, 0, 10, 10]]],
    "string": [["0", 0, 10, 0, 10, 10]],
    "bool": [[True, 0, 10, 0, 10, 10]],
    "null": [[None, 0, 10, 0, 10, 10]],
    "not_a_list": [5],
    "rle": {"size": [480, 640], "counts": "PPYo05"},
    "rle_list": {"size": [4, 4], "counts": [0, 16]},
}


@pytest.mark.parametrize("name", sorted(DEGENERATE))
def test_degenerate_records_read_or_fail_the_same(tmp_path, monkeypatch, name):
    good = [_record([[0, 0, 10, 0, 10, 10]], k) for k in range(4)]
    records = [*good[:2], _record(DEGENERATE[name], 2), *good[2:]]
    read_fast = assert_same(monkeypatch, GT, _write(tmp_path, json.dumps(records)))
    assert read_fast == (name == "later_distinct")


@pytest.mark.parametrize(
    "text",
    [
        '[{"image_id": 1, "category_id": 1, "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]]}]',
        '[{"image_id": 1, "category_id": 1, "bbox": [], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]]}]',
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]], "x": 1}]',
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]], "score": 1}]',
        '[{"image_id": 1, "category_id": 9, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]]}]',
        '[{"image_id": 7, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]]}]',
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, -1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]]}]',
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]]}] x',
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9],]}]',
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, NaN]]}]',
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 09]]}]',
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "segmentation": [[0, 0, 9, 0, 9, 9]]',
        "[]",
    ],
)
def test_hostile_files_read_or_fail_the_same(tmp_path, monkeypatch, text):
    assert_same(monkeypatch, GT, _write(tmp_path, text))


@pytest.mark.parametrize("mask_iou", ["raster", "exact"])
def test_evaluation_is_the_same(monkeypatch, mask_iou):
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou=mask_iou)
    results = []
    for module in (_colparse, None):
        with monkeypatch.context() as patch:
            patch.setattr(fast, "_colparse", module)
            gt = load_coco_gt(SEGM_GT)
            dt = load_coco_dt(SEGM_DT, gt)
            assert isinstance(dt.segmentation, PolygonSegmentations) == (module is not None)
            results.append(deteval.evaluate(gt, dt, protocol))
    fast_result, full = results
    assert repr(fast_result.metrics) == repr(full.metrics)  # NaN for empty area ranges
    for field in ("precision", "recall", "scores", "ap"):
        assert np.array_equal(getattr(fast_result, field), getattr(full, field), equal_nan=True)


def test_items_decode_as_the_full_loader_does(tmp_path, monkeypatch):
    monkeypatch.setattr(fast, "_colparse", _colparse)
    records = [_record([[0, 0.5, 10, 0, 10, 10], [1, 1, 2, 1, 2, 2]], k) for k in range(3)]
    dt = load_coco_dt(_write(tmp_path, json.dumps(records)), GT)
    segm = dt.segmentation
    assert isinstance(segm, PolygonSegmentations)
    assert segm[1] == records[1]["segmentation"]
    assert segm[-1] == records[-1]["segmentation"]
    assert segm[0:2] == (records[0]["segmentation"], records[1]["segmentation"])
    assert segm.n_parts.tolist() == [2, 2, 2]
    assert segm.part_len.tolist() == [6] * 6
    taken = dt.take(np.array([2, 0]))
    assert taken.segmentation == (records[2]["segmentation"], records[0]["segmentation"])


def test_capacity_too_small_is_refused():
    raw = json.dumps([_record([[0, 0, 10, 0, 10, 10]])]).encode()

    def columns(records: int, parts: int, coords: int) -> list:
        ints = [np.empty(records, np.int64) for _ in range(2)]
        floats = [np.empty(4 * records, np.float64), np.empty(records, np.float64)]
        spans = [np.empty(records, np.int64) for _ in range(3)]
        return [*ints, *floats, *spans, np.empty(parts, np.int64), np.empty(coords, np.float64)]

    assert _colparse.segm_results(raw, *columns(1, 1, 6)) == (1, 1, 6)
    assert _colparse.segm_results(raw, *columns(0, 1, 6)) is None
    assert _colparse.segm_results(raw, *columns(1, 0, 6)) is None
    assert _colparse.segm_results(raw, *columns(1, 1, 5)) is None
    with pytest.raises(TypeError):
        _colparse.segm_results(raw, *columns(1, 1, 6)[:-1], np.empty(6, np.float32))


@pytest.mark.parametrize("change", ["same size", "deleted", None])
def test_the_file_is_not_kept_and_a_changed_file_is_refused_not_misread(tmp_path, monkeypatch, change):
    """The polygons' raw JSON is read again from the file for an item (a message): not kept."""
    import pickle

    monkeypatch.setattr(fast, "_colparse", _colparse)
    records = [_record([[0, 0.5, 10, 0, 10, 10]], k) for k in range(3)]
    path = _write(tmp_path, json.dumps(records))
    dt = load_coco_dt(path, GT)
    assert not isinstance(dt.segmentation._raw, bytes)  # the bytes were dropped after parsing
    copy = pickle.loads(pickle.dumps(dt.segmentation))  # a copy carries the bytes
    raw = path.read_bytes()
    if change == "same size":
        path.write_bytes(raw.replace(b"0.5", b"0.6"))
    elif change == "deleted":
        path.unlink()
    assert copy[0] == records[0]["segmentation"]
    if change is None:
        assert dt.segmentation[0] == records[0]["segmentation"]
        return
    message = "changed since the detections were loaded" if change != "deleted" else "file not found"
    with pytest.raises(DetevalError, match=message):
        dt.segmentation[0]
