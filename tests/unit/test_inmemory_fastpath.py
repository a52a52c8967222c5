"""In-memory inputs: the msgspec fast paths for result lists and annotation lists equal the full loader.

``load_coco_dt(list)`` and ``load_coco_gt(dict)`` type plain records with ``msgspec.convert``
(:func:`deteval.io.coco.fast._fast_box_records`, :func:`~deteval.io.coco.fast_instances._fast_annotations`);
the value must be the one the full loader builds, bit for bit, with the same warnings, and
anything unusual (integral floats, numpy scalars, extra keys, problems to name) must take the
full loader.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from deteval import _speedups
from deteval.errors import DetevalError
from deteval.io.coco import fast, fast_instances, fast_msgspec, load_coco_dt, load_coco_gt
from deteval.io.coco import ground_truth as gt_module
from deteval.io.coco import results as dt_module
from tests import ROOT
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_segm import generate_segm
from tests.support.colparse import GT_FIELDS as SHARED_GT_FIELDS
from tests.support.kernels import needs_kernel

pytestmark = pytest.mark.skipif(not fast._HAS_MSGSPEC, reason="msgspec is not installed")

FIXTURES = ROOT / "fixtures" / "coco"
DT_FIELDS = ("image", "category", "box", "score", "order", "has_box")
GT_FIELDS = (*SHARED_GT_FIELDS, "is_group_of")


def _bits(column) -> bytes:
    column = np.asarray(column)
    return (column.view(np.int64) if column.dtype == np.float64 else column).tobytes()


def _dt_outcome(records, gt, **options) -> tuple:
    try:
        dt = load_coco_dt(records, gt, **options)
    except DetevalError as exc:
        return type(exc).__name__, str(exc)
    return (
        *(_bits(getattr(dt, f)) for f in DT_FIELDS),
        dt.warnings,
        dt.source,
        dt.box_format,
        dt.segmentation,
        dt.keypoints is None,
    )


def _gt_outcome(data, **options) -> tuple:
    try:
        gt = load_coco_gt(data, **options)
    except DetevalError as exc:
        return type(exc).__name__, str(exc)
    return (
        *(_bits(getattr(gt, f)) for f in GT_FIELDS),
        gt.image_name,
        gt.category_name,
        gt.warnings,
        gt.source,
        tuple(gt.segmentation),
        gt.keypoints is None,
        gt.federated,
        gt.category_frequency,
    )


def assert_dt_alike(monkeypatch, records, gt, **options) -> tuple:
    """The same outcome with and without the fast path; returns it."""
    with_fast = _dt_outcome(records, gt, **options)
    with monkeypatch.context() as m:
        m.setattr(dt_module, "_fast_box_records", lambda *a, **k: None)
        assert _dt_outcome(records, gt, **options) == with_fast
    return with_fast


def assert_gt_alike(monkeypatch, data, **options) -> tuple:
    with_fast = _gt_outcome(data, **options)
    with monkeypatch.context() as m:
        m.setattr(gt_module, "_fast_annotations", lambda *a, **k: None)
        assert _gt_outcome(data, **options) == with_fast
    return with_fast


def _gt_fixture() -> dict:
    return json.loads((FIXTURES / "gt.json").read_text())


def _dt_fixture() -> list:
    return json.loads((FIXTURES / "dt.json").read_text())


def test_fixture_takes_the_fast_paths(monkeypatch):
    gt_dict, dt_list = _gt_fixture(), _dt_fixture()
    gt = load_coco_gt(gt_dict)
    meta_gt = gt_module._images_and_categories(
        gt_dict["images"], gt_dict["categories"], "x", integral_floats=True
    )
    assert fast_instances._fast_annotations(meta_gt, gt_dict["annotations"], "x") is not None
    assert fast._fast_box_records(dt_list, "<detections>", gt) is not None
    assert_gt_alike(monkeypatch, gt_dict)
    assert_dt_alike(monkeypatch, dt_list, gt)


@pytest.mark.parametrize("seed", range(10))
def test_generated_data_load_alike(monkeypatch, seed):
    gt_dict, dt_list = generate(seed) if seed % 2 else generate_segm(seed)
    assert_gt_alike(monkeypatch, gt_dict)
    gt = load_coco_gt(gt_dict)
    assert_dt_alike(monkeypatch, dt_list, gt)
    if seed % 2:  # box results (the segm generator's carry segmentations: the full path)
        assert fast._fast_box_records(dt_list, "<detections>", gt) is not None


def test_inputs_are_not_modified():
    gt_dict, dt_list = _gt_fixture(), _dt_fixture()
    before = json.dumps([gt_dict, dt_list])
    gt = load_coco_gt(gt_dict)
    load_coco_dt(dt_list, gt)
    assert json.dumps([gt_dict, dt_list]) == before


def test_segmentations_are_the_callers_objects():
    gt_dict = _gt_fixture()
    gt = load_coco_gt(gt_dict)
    for value, ann in zip(gt.segmentation, gt_dict["annotations"]):
        assert value is ann.get("segmentation")


def _dt_edit(change):
    def edited():
        records = _dt_fixture()
        change(records)
        return records

    return edited


DT_CHANGES = {
    "integral float id": lambda r: r[0].update(image_id=float(r[0]["image_id"])),
    "integral float category": lambda r: r[0].update(category_id=float(r[0]["category_id"])),
    "numpy int id": lambda r: r[0].update(image_id=np.int64(r[0]["image_id"])),
    "numpy float score": lambda r: r[0].update(score=np.float64(r[0]["score"])),
    "numpy float32 score": lambda r: r[0].update(score=np.float32(r[0]["score"])),
    "numpy array bbox": lambda r: r[0].update(bbox=np.asarray(r[0]["bbox"])),
    "tuple bbox": lambda r: r[0].update(bbox=tuple(r[0]["bbox"])),
    "integer bbox and score": lambda r: r[0].update(bbox=[1, 2, 3, 4], score=1),
    "big integer score": lambda r: r[0].update(score=2**70 + 1),
    "bool id": lambda r: r[0].update(image_id=True),
    "string id": lambda r: r[0].update(image_id=str(r[0]["image_id"])),
    "NaN score": lambda r: r[0].update(score=float("nan")),
    "inf bbox": lambda r: r[0].update(bbox=[0, 0, float("inf"), 1]),
    "negative width": lambda r: r[0].update(bbox=[0, 0, -1, 1]),
    "unknown image": lambda r: r[0].update(image_id=987654),
    "unknown category": lambda r: r[0].update(category_id=987654),
    "extra key": lambda r: r[0].update(extra=1),
    "segmentation": lambda r: r[0].update(segmentation=[[0, 0, 1, 0, 1, 1]]),
    "missing bbox": lambda r: r[0].pop("bbox"),
    "not a dict": lambda r: r.append([1, 2]),
    "id above int64": lambda r: r[0].update(image_id=2**63),
    "zero-width box": lambda r: r[0].update(bbox=[0, 0, 0, 1]),
    "normalized boxes": lambda r: [d.update(bbox=[0.1, 0.1, 0.2, 0.2]) for d in r],
    "xyxy boxes": lambda r: [d.update(bbox=[d["bbox"][0], d["bbox"][1], 5000, 5000]) for d in r],
    "empty": lambda r: r.clear(),
}

OLD_PATH = {
    "integral float id",
    "integral float category",
    "numpy int id",
    "numpy float score",
    "numpy float32 score",
    "numpy array bbox",
    "bool id",
    "string id",
    "NaN score",
    "inf bbox",
    "negative width",
    "unknown image",
    "unknown category",
    "extra key",
    "segmentation",
    "missing bbox",
    "not a dict",
    "id above int64",
    "empty",
}


@pytest.mark.parametrize("name", sorted(DT_CHANGES))
def test_result_records_load_alike(monkeypatch, name):
    gt = load_coco_gt(_gt_fixture())
    records = _dt_edit(DT_CHANGES[name])()
    assert_dt_alike(monkeypatch, records, gt)
    if name in OLD_PATH:
        assert fast._fast_box_records(records, "<detections>", gt) is None
    else:
        assert fast._fast_box_records(records, "<detections>", gt) is not None


@pytest.mark.parametrize(
    "options", [{"unknown_category": "drop"}, {"category_map": "index0"}, {"name": "mine"}]
)
def test_options_load_alike(monkeypatch, options):
    gt = load_coco_gt(_gt_fixture())
    records = _dt_fixture()
    records[0]["category_id"] = 987654
    assert_dt_alike(monkeypatch, records, gt, **options)
    assert_dt_alike(monkeypatch, _dt_fixture(), gt, **options)


GT_CHANGES = {
    "integral float id": lambda g: g["annotations"][0].update(id=float(g["annotations"][0]["id"])),
    "integral float image id": lambda g: g["annotations"][0].update(
        image_id=float(g["annotations"][0]["image_id"])
    ),
    "numpy int iscrowd": lambda g: g["annotations"][0].update(iscrowd=np.int64(0)),
    "numpy float area": lambda g: g["annotations"][0].update(area=np.float64(3.5)),
    "bool iscrowd": lambda g: g["annotations"][0].update(iscrowd=False),
    "iscrowd 2": lambda g: g["annotations"][0].update(iscrowd=2),
    "ignore flag": lambda g: g["annotations"][0].update(ignore=1),
    "difficult flag": lambda g: g["annotations"][1].update(difficult=1),
    "missing iscrowd": lambda g: g["annotations"][0].pop("iscrowd"),
    "missing area": lambda g: g["annotations"][0].pop("area"),
    "null segmentation": lambda g: g["annotations"][0].update(segmentation=None),
    "rle segmentation": lambda g: g["annotations"][0].update(segmentation={"size": [4, 4], "counts": "0:1"}),
    "extra key": lambda g: g["annotations"][0].update(extra=1),
    "is_group_of": lambda g: g["annotations"][0].update(is_group_of=1),
    "negative area": lambda g: g["annotations"][0].update(area=-1.0),
    "duplicate id": lambda g: g["annotations"].append(dict(g["annotations"][0])),
    "unknown image": lambda g: g["annotations"][0].update(image_id=987654),
    "unknown category": lambda g: g["annotations"][0].update(category_id=987654),
    "integral float image table id": lambda g: g["images"][0].update(id=float(g["images"][0]["id"])),
    "no annotations": lambda g: g["annotations"].clear(),
    "not a dict": lambda g: g["annotations"].append(3),
}


@pytest.mark.parametrize("name", sorted(GT_CHANGES))
def test_annotation_records_load_alike(monkeypatch, name):
    data = _gt_fixture()
    GT_CHANGES[name](data)
    assert_gt_alike(monkeypatch, data)


@pytest.mark.parametrize("area_missing", ["error", "box"])
def test_area_option_loads_alike(monkeypatch, area_missing):
    data = _gt_fixture()
    assert_gt_alike(monkeypatch, data, area_missing=area_missing)
    data["annotations"][0].pop("area")
    assert_gt_alike(monkeypatch, data, area_missing=area_missing)


_colparse = _speedups.load("deteval.io._colparse")  # None: not built, stale or disabled

needs_extension = needs_kernel("deteval.io._colparse")


def _assert_column_twins(c_cols, py_cols) -> None:
    """The compiled reader's columns equal msgspec's bit for bit; it may refuse more, never less."""
    if py_cols is None:
        assert c_cols is None, "the compiled reader accepted records msgspec refuses"
        return
    if c_cols is None:
        return
    for c_col, py_col in zip(c_cols, py_cols, strict=True):
        if py_col is None:  # keypoint columns: in-memory annotations never have them
            assert c_col is None
        elif isinstance(py_col, np.ndarray):
            assert c_col.dtype == py_col.dtype
            assert c_col.shape == py_col.shape
            assert _bits(c_col) == _bits(py_col)
        else:
            assert all(a is b for a, b in zip(c_col, py_col, strict=True))


@needs_extension
@pytest.mark.parametrize("name", sorted(DT_CHANGES))
def test_compiled_box_records_are_twins(monkeypatch, name):
    monkeypatch.setattr(fast, "_colparse", _colparse)
    records = _dt_edit(DT_CHANGES[name])()
    c_cols = fast._compiled_box_records(records)
    _assert_column_twins(c_cols, fast_msgspec._msgspec_box_records(records))
    if name not in OLD_PATH or name in ("NaN score", "inf bbox", "negative width", "unknown image"):
        assert c_cols is not None


@needs_extension
@pytest.mark.parametrize("name", sorted(GT_CHANGES))
def test_compiled_annotation_records_are_twins(monkeypatch, name):
    monkeypatch.setattr(fast, "_colparse", _colparse)
    data = _gt_fixture()
    GT_CHANGES[name](data)
    anns = data["annotations"]
    _assert_column_twins(
        fast_instances._compiled_annotation_records(anns), fast_instances._msgspec_annotation_records(anns)
    )


@needs_extension
@pytest.mark.parametrize("seed", range(10))
def test_compiled_readers_on_generated_data(monkeypatch, seed):
    monkeypatch.setattr(fast, "_colparse", _colparse)
    gt_dict, dt_list = generate(seed) if seed % 2 else generate_segm(seed)
    c_anns = fast_instances._compiled_annotation_records(gt_dict["annotations"])
    assert c_anns is not None or not gt_dict["annotations"]
    _assert_column_twins(c_anns, fast_instances._msgspec_annotation_records(gt_dict["annotations"]))
    c_dets = fast._compiled_box_records(dt_list)
    _assert_column_twins(c_dets, fast_msgspec._msgspec_box_records(dt_list))
    if seed % 2 and dt_list:
        assert c_dets is not None


@needs_extension
@pytest.mark.parametrize(
    "value",
    [
        0,
        -0.0,
        1,
        2**53 + 1,
        2**63 - 1,
        -(2**63),
        2**64,
        2**70 + 1,
        10**400,
        1e308,
        5e-324,
        True,
        np.float64(1),
    ],
    ids=repr,
)
def test_compiled_numbers_are_bit_identical(monkeypatch, value):
    monkeypatch.setattr(fast, "_colparse", _colparse)
    for field in ("score", "bbox"):
        record = {"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}
        record[field] = [value, 0, 1, 1] if field == "bbox" else value
        _assert_column_twins(
            fast._compiled_box_records([record]), fast_msgspec._msgspec_box_records([record])
        )
    record = {"image_id": value, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}
    _assert_column_twins(fast._compiled_box_records([record]), fast_msgspec._msgspec_box_records([record]))


@needs_extension
def test_compiled_readers_refuse_other_containers(monkeypatch):
    from collections import OrderedDict

    monkeypatch.setattr(fast, "_colparse", _colparse)
    record = {"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}
    assert fast._compiled_box_records([record]) is not None
    assert fast._compiled_box_records([OrderedDict(record)]) is None
    assert fast._compiled_box_records((record,)) is None  # type: ignore[arg-type]
    assert fast._compiled_box_records([]) is None
    assert fast._compiled_box_records([{**record, 1: 2}]) is None
