"""The drop-in's size ranges read each result's ``area`` as pycocotools' ``COCO.loadRes`` sets it.

pycocotools' ``COCOeval`` compares a detection's ``area`` field with the size ranges. ``loadRes``
fills that field by one of three branches, chosen by the FIRST result record: a non-empty
``bbox`` (then ``w * h`` for every record), else a ``segmentation`` (the mask's pixel count,
``maskUtils.area``, even for records that carry a bbox), else ``keypoints`` (their extent). Every
experiment below makes a box's ``w * h`` and the mask's pixel count fall in different size
ranges, runs the same script with pycocotools and with the drop-in, and compares everything.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from pycocotools.cocoeval import COCOeval as ReferenceCOCOeval

from deteval.interop import COCOeval as DropInCOCOeval
from tests.support.interop import EXPERIMENTS, _coco, _same, script

SIZE = 200  # images are SIZE x SIZE


def _band(x: int, y: int, side: int, width: int) -> np.ndarray:
    """A diagonal band across the square (x, y, side): box ``side**2``, far fewer pixels."""
    mask = np.zeros((SIZE, SIZE), dtype=np.uint8, order="F")
    for k in range(side):
        mask[y + k, x + max(0, k - width) : x + min(side, k + width + 1)] = 1
    return mask


def _rle(mask: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(mask))
    return {"size": rle["size"], "counts": rle["counts"].decode()}


def thin_masks(seed: int) -> tuple[dict, list]:
    """Ground truth and mask results whose box area and pixel count straddle 32**2 and 96**2."""
    rng = random.Random(seed)
    images, anns, dets = [], [], []
    for image_id in range(1, 9):
        images.append({"id": image_id, "width": SIZE, "height": SIZE})
        for _k in range(3):
            side = rng.choice([36, 40, 60, 100, 110, 130])
            width = rng.choice([1, 2, 4, 8, 20])
            x, y = rng.randint(0, SIZE - side - 4), rng.randint(0, SIZE - side - 4)
            gt_mask = _band(x, y, side, width)
            category = rng.choice([1, 2])
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": image_id,
                    "category_id": category,
                    "iscrowd": 0,
                    "area": float(gt_mask.sum()),
                    "bbox": [float(x), float(y), float(side), float(side)],
                    "segmentation": _rle(gt_mask),
                }
            )
            for _ in range(rng.choice([1, 2])):
                dx, dy = rng.randint(0, 3), rng.randint(0, 3)
                det_mask = _band(x + dx, y + dy, side, max(1, width + rng.randint(-1, 2)))
                dets.append(
                    {
                        "image_id": image_id,
                        "category_id": category if rng.random() < 0.85 else 3 - category,
                        "score": round(rng.random(), 3),
                        "segmentation": _rle(det_mask),
                    }
                )
    gt = {
        "images": images,
        "annotations": anns,
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    }
    return gt, dets


def _with_boxes(dets: list) -> list:
    """Each record also carries its mask's box (as detectron2 writes segm results)."""
    out = []
    for d in dets:
        rle = {"size": d["segmentation"]["size"], "counts": d["segmentation"]["counts"].encode()}
        out.append({**d, "bbox": [float(v) for v in mask_utils.toBbox(rle)]})
    return out


def _run_both(gt: dict, dt: list, iou_type: str, settings: dict) -> None:
    coco_gt, coco_dt = _coco(gt, dt)
    ref, ref_text = script(
        ReferenceCOCOeval, copy.deepcopy(coco_gt), copy.deepcopy(coco_dt), iou_type, settings
    )
    ours, ours_text = script(DropInCOCOeval, coco_gt, coco_dt, iou_type, settings)
    _same(ours, ref, ours_text, ref_text)


def test_the_experiment_discriminates():
    """Box area and pixel count land in different ranges for many results (else nothing is tested)."""
    gt, dt = thin_masks(1)
    boxed = _with_boxes(dt)
    box_area = np.array([d["bbox"][2] * d["bbox"][3] for d in boxed])
    mask_area = np.array(
        [mask_utils.area({**d["segmentation"], "counts": d["segmentation"]["counts"].encode()}) for d in dt]
    )
    small = (box_area <= 32**2) != (mask_area <= 32**2)
    large = (box_area <= 96**2) != (mask_area <= 96**2)
    assert small.sum() >= 5
    assert large.sum() >= 5


@pytest.mark.parametrize("name", ["defaults", "class-agnostic", "area-ranges"])
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_mask_only_results_use_the_mask_area(iou_type, seed, name):
    """Pycocotools' loadRes, segmentation branch: area = pixel count, bbox = the mask's box."""
    gt, dt = thin_masks(seed)
    _run_both(gt, dt, iou_type, EXPERIMENTS[name])


@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_results_with_box_and_mask_use_the_box_area(iou_type):
    """Pycocotools' loadRes, bbox branch (the first record has a bbox): area = w * h, the mask kept."""
    gt, dt = thin_masks(3)
    _run_both(gt, _with_boxes(dt), iou_type, {})


@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_first_record_decides_the_branch(iou_type):
    """First record mask-only, the others with a bbox too: every area is the pixel count."""
    gt, dt = thin_masks(4)
    mixed = dt[:1] + _with_boxes(dt[1:])
    _run_both(gt, mixed, iou_type, {})


def test_keypoint_results_use_their_extent():
    """Pycocotools' loadRes, keypoints branch: area and bbox from the keypoints' extent (zeros included)."""
    rng = random.Random(5)
    images, anns, dets = [], [], []
    for image_id in range(1, 6):
        images.append({"id": image_id, "width": 400, "height": 400})
        for _ in range(3):
            x, y, side = rng.randint(0, 250), rng.randint(0, 250), rng.choice([20, 40, 90, 120])
            kps = []
            for _k in range(17):
                kps += [x + rng.random() * side, y + rng.random() * side, 2]
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": image_id,
                    "category_id": 1,
                    "iscrowd": 0,
                    "area": float(side * side),
                    "bbox": [x, y, side, side],
                    "keypoints": kps,
                    "num_keypoints": 17,
                }
            )
            det = [v + rng.uniform(-2, 2) if i % 3 != 2 else 1.0 for i, v in enumerate(kps)]
            if rng.random() < 0.3:
                det[0:3] = [0.0, 0.0, 0.0]  # an unlabelled point at the origin widens the extent
            dets.append(
                {"image_id": image_id, "category_id": 1, "score": round(rng.random(), 3), "keypoints": det}
            )
    gt = {
        "images": images,
        "annotations": anns,
        "categories": [{"id": 1, "name": "person", "keypoints": [str(k) for k in range(17)], "skeleton": []}],
    }
    _run_both(gt, dets, "keypoints", {})
