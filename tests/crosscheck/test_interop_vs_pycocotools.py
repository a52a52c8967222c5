"""The drop-in ``deteval.interop.COCOeval`` runs pycocotools-style scripts unchanged.

Each experiment is one script, run twice: with ``pycocotools.cocoeval.COCOeval`` and with
``deteval.interop.COCOeval``. Both must print the same text, give the same ``stats``, the same
``eval`` arrays (within one float step), the same ``evalImgs`` and the same ``ious``.
"""

from __future__ import annotations

import copy

import pytest
from pycocotools import mask as mask_utils
from pycocotools.cocoeval import COCOeval as ReferenceCOCOeval

from deteval.interop import COCOeval as DropInCOCOeval
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_segm import generate_segm
from tests.support.interop import EXPERIMENTS, _coco, _same, script


def _mask_only(dt: list, gt: dict) -> list:
    """Results as many segmentation models write them: compressed RLE, no bbox."""
    size = {im["id"]: (im["height"], im["width"]) for im in gt["images"]}
    out = []
    for d in dt:
        seg = d["segmentation"]
        h, w = size[d["image_id"]]
        if isinstance(seg, list):
            rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
        elif isinstance(seg["counts"], list):
            rle = mask_utils.frPyObjects(seg, h, w)
        else:
            rle = seg
        counts = rle["counts"].decode() if isinstance(rle["counts"], bytes) else rle["counts"]
        out.append(
            {
                "image_id": d["image_id"],
                "category_id": d["category_id"],
                "score": d["score"],
                "segmentation": {"size": [h, w], "counts": counts},
            }
        )
    return out


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
@pytest.mark.parametrize("seed", [1, 2])
def test_bbox_script(name, seed):
    gt, dt = generate(seed)
    coco_gt, coco_dt = _coco(gt, dt)
    ref, ref_text = script(
        ReferenceCOCOeval, copy.deepcopy(coco_gt), copy.deepcopy(coco_dt), "bbox", EXPERIMENTS[name]
    )
    ours, ours_text = script(DropInCOCOeval, coco_gt, coco_dt, "bbox", EXPERIMENTS[name])
    _same(ours, ref, ours_text, ref_text)


@pytest.mark.parametrize("name", ["defaults", "class-agnostic", "custom-recall-thresholds"])
@pytest.mark.parametrize("mask_only", [False, True])
def test_segm_script(name, mask_only):
    gt, dt = generate_segm(3)
    if mask_only:
        dt = _mask_only(dt, gt)
    coco_gt, coco_dt = _coco(gt, dt)
    ref, ref_text = script(
        ReferenceCOCOeval, copy.deepcopy(coco_gt), copy.deepcopy(coco_dt), "segm", EXPERIMENTS[name]
    )
    ours, ours_text = script(DropInCOCOeval, coco_gt, coco_dt, "segm", EXPERIMENTS[name])
    _same(ours, ref, ours_text, ref_text)


def test_summarize_prints_and_returns_the_text(capsys):
    gt, dt = generate(4)
    coco_gt, coco_dt = _coco(gt, dt)
    evaluator = DropInCOCOeval(coco_gt, coco_dt, "bbox")
    evaluator.evaluate()
    evaluator.accumulate()
    text = evaluator.summarize()
    assert capsys.readouterr().out == text + "\n"
    assert len(text.splitlines()) == 12
