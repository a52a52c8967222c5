"""The drop-in's result areas: pycocotools' ``loadRes`` branches, and refused areas named."""

from __future__ import annotations

import pytest

from deteval.errors import InputError
from deteval.interop import COCOeval
from deteval.interop.cocoeval import result_areas

RLE_2PX = {"size": [4, 4], "counts": "02>"}  # pixels (0, 0) and (1, 0) of a 4 x 4 image


def test_own_area_wins_over_box_and_mask():
    records = [{"bbox": [0, 0, 4, 4], "segmentation": RLE_2PX, "area": 7}, {"bbox": [0, 0, 1, 1], "area": 0}]
    assert result_areas(records).tolist() == [7.0, 0.0]


def test_without_area_the_first_record_decides():
    boxed_first = [{"bbox": [0, 0, 4, 3], "segmentation": RLE_2PX}, {"bbox": [1, 1, 2, 2]}]
    assert result_areas(boxed_first).tolist() == [12.0, 4.0]
    mask_first = [{"segmentation": RLE_2PX}, {"segmentation": RLE_2PX, "bbox": [0, 0, 4, 4]}]
    assert result_areas(mask_first).tolist() == [2.0, 2.0]
    keypoints = [{"keypoints": [0, 0, 0, 3, 4, 2, 1, 2, 2]}]  # the (0, 0) point counts
    assert result_areas(keypoints).tolist() == [12.0]
    empty_box_first = [{"bbox": [], "segmentation": RLE_2PX}]
    assert result_areas(empty_box_first).tolist() == [2.0]


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "12", True])
def test_bad_area_is_refused_naming_the_result(bad):
    with pytest.raises(InputError) as caught:
        result_areas([{"bbox": [0, 0, 1, 1], "area": 1}, {"bbox": [0, 0, 1, 1], "area": bad}])
    message = str(caught.value)
    assert "cocoDt" in message
    assert "result #1" in message
    assert "`area` is not a finite number >= 0" in message


def test_uncomputable_area_is_refused_naming_the_branch():
    with pytest.raises(InputError) as caught:
        result_areas([{"bbox": [0, 0, 4, 4]}, {"segmentation": RLE_2PX}])
    message = str(caught.value)
    assert "result #1" in message
    assert "COCO.loadRes cannot compute" in message
    assert "a bbox [x, y, w, h] (the first result has one)" in message
    with pytest.raises(InputError, match="a compressed RLE segmentation"):
        result_areas([{"segmentation": RLE_2PX}, {"segmentation": [[0, 0, 2, 0, 2, 2]]}])


def test_drop_in_uses_the_record_area_for_size_ranges():
    """A plain dataset (not from loadRes) with its own areas: the ranges follow them.

    The false positive's box is 30 x 30 (small by ``w * h``) but its ``area`` is 2000 (medium):
    for the medium range it counts, so precision at full recall is 1/2 (it would be 1 with
    ``w * h``, the false positive then ignored as outside the range).
    """
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "area": 2500, "iscrowd": 0}
        ],
    }
    dt = {
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "score": 0.5, "area": 2500},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [60, 60, 30, 30], "score": 0.9, "area": 2000},
        ]
    }
    evaluator = COCOeval(gt, dt, "bbox")
    evaluator.evaluate()
    evaluator.accumulate()
    medium = evaluator.eval["precision"][0, :, 0, 2, 2]  # IoU 0.5, class 0, "medium", 100 dets
    assert medium.tolist() == [0.5] * 101
