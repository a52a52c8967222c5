"""COCO loading: the msgspec fast path for plain box results equals the full loader."""

import json
from pathlib import Path

import numpy as np
import pytest

from deteval.io.coco import _fast_box_results, load_coco_dt, load_coco_gt
from tests.crosscheck.generate import generate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "coco"
FIELDS = ("image", "category", "box", "score", "order", "has_box")


def _same(a, b):
    for field in FIELDS:
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.warnings == b.warnings and a.segmentation == b.segmentation


@pytest.mark.parametrize("seed", range(15))
def test_fast_path_equals_full_loader(tmp_path, seed):
    gt_dict, dt_list = generate(seed)
    if not dt_list:
        pytest.skip("empty results take the full path by design")  # checked below
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dt_list))
    gt = load_coco_gt(gt_dict)
    fast = _fast_box_results(str(path), gt)
    assert fast is not None
    _same(fast, load_coco_dt(dt_list, gt, name=str(path)))


@pytest.mark.parametrize("text", [
    '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5, "id": 3}]',   # extra key
    '[{"image_id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}]',  # duplicate
    '[{"image_id": true, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}]',  # bool id
    '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, -1, 1], "score": 0.5}]',  # negative width
    '[{"image_id": 99, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}]',  # unknown image
    '[]',
])
def test_anything_unusual_takes_the_full_path(tmp_path, text):
    path = tmp_path / "dt.json"
    path.write_text(text)
    gt = load_coco_gt(FIXTURES / "gt.json")
    assert _fast_box_results(str(path), gt) is None


def test_fixture_results_take_the_fast_path():
    gt = load_coco_gt(FIXTURES / "gt.json")
    fast = _fast_box_results(str(FIXTURES / "dt.json"), gt)
    assert fast is not None
    _same(fast, load_coco_dt(json.loads((FIXTURES / "dt.json").read_text()), gt,
                             name=str(FIXTURES / "dt.json")))
