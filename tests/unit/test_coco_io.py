"""COCO loading: the msgspec fast path for plain box results equals the full loader."""

import json
from pathlib import Path

import numpy as np
import pytest

from deteval.io.coco import _fast_box_results, load_coco_dt, load_coco_gt
from tests.crosscheck.generate import generate
from tests.support.colparse import assert_same_gt

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "coco"
FIELDS = ("image", "category", "box", "score", "order", "has_box")


def _same(a, b):
    for field in FIELDS:
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.warnings == b.warnings
    assert a.segmentation == b.segmentation


@pytest.mark.parametrize("seed", range(15))
def test_fast_path_equals_full_loader(tmp_path, seed):
    gt_dict, dt_list = generate(seed)
    if not dt_list:
        pytest.skip("empty results take the full path by design")  # checked below
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dt_list))
    gt = load_coco_gt(gt_dict)
    fast = _fast_box_results(path.read_bytes(), str(path), gt)
    assert fast is not None
    _same(fast, load_coco_dt(dt_list, gt, name=str(path)))


@pytest.mark.parametrize(
    "text",
    [
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "id": 3}]',  # extra key
        '[{"image_id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}]',  # duplicate
        '[{"image_id": true, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}]',  # bool id
        '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, -1, 1], "score": 0.5}]',  # negative width
        '[{"image_id": 99, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}]',  # unknown image
        "[]",
    ],
)
def test_anything_unusual_takes_the_full_path(tmp_path, text):
    path = tmp_path / "dt.json"
    path.write_text(text)
    gt = load_coco_gt(FIXTURES / "gt.json")
    assert _fast_box_results(path.read_bytes(), str(path), gt) is None


def test_fixture_results_take_the_fast_path():
    gt = load_coco_gt(FIXTURES / "gt.json")
    fast = _fast_box_results((FIXTURES / "dt.json").read_bytes(), str(FIXTURES / "dt.json"), gt)
    assert fast is not None
    _same(
        fast, load_coco_dt(json.loads((FIXTURES / "dt.json").read_text()), gt, name=str(FIXTURES / "dt.json"))
    )


@pytest.mark.parametrize("seed", range(12))
def test_ground_truth_fast_path_equals_full_loader(tmp_path, seed):
    from tests.crosscheck.generate_segm import generate_segm

    gt_dict, _ = generate(seed) if seed % 2 else generate_segm(seed)
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt_dict))
    from deteval.io.coco import _fast_ground_truth

    fast = _fast_ground_truth(path.read_bytes(), str(path))
    assert fast is not None
    assert_same_gt(fast, load_coco_gt(gt_dict, name=str(path)))


@pytest.mark.parametrize(
    "change",
    [
        lambda g: g["annotations"][0].update(extra=1),  # unknown key
        lambda g: g["annotations"][0].update(iscrowd=True),  # bool flag (full path reads it)
        lambda g: g["annotations"][0].update(area=-1),  # an error to name
        lambda g: g["annotations"][0].pop("iscrowd"),  # a warning to give
        lambda g: g["annotations"].append(dict(g["annotations"][0])),  # duplicate id
        lambda g: g["annotations"][0].update(image_id=12345),  # unknown image
    ],
)
def test_ground_truth_fast_path_leaves_anything_unusual_to_the_full_loader(tmp_path, change):
    from deteval.io.coco import _fast_ground_truth

    gt_dict = json.loads((FIXTURES / "gt.json").read_text())
    change(gt_dict)
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt_dict))
    assert _fast_ground_truth(path.read_bytes(), str(path)) is None


def test_ground_truth_duplicate_key_takes_the_full_path(tmp_path):
    from deteval.io.coco import _fast_ground_truth

    text = (FIXTURES / "gt.json").read_text().replace('"iscrowd": 0', '"iscrowd": 0, "iscrowd": 1', 1)
    path = tmp_path / "gt.json"
    path.write_text(text)
    assert _fast_ground_truth(path.read_bytes(), str(path)) is None
    with pytest.raises(Exception, match="duplicate key 'iscrowd'"):
        load_coco_gt(path)


def test_integers_beyond_int64_take_the_full_path(tmp_path):
    """Msgspec reads integers up to 2**64; the fast paths bound them so the full loader names it."""
    from deteval.io.coco import _fast_ground_truth

    gt_dict = json.loads((FIXTURES / "gt.json").read_text())
    gt_dict["annotations"][0]["iscrowd"] = 2**63
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt_dict))
    assert _fast_ground_truth(path.read_bytes(), str(path)) is None
    dt_path = tmp_path / "dt.json"
    dt_path.write_text(
        '[{"image_id": 9223372036854775808, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}]'
    )
    assert _fast_box_results(dt_path.read_bytes(), str(dt_path), load_coco_gt(FIXTURES / "gt.json")) is None
