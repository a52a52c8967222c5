"""The drop-in ``deteval.interop.COCOeval`` runs pycocotools-style scripts unchanged.

Each experiment is one script, run twice: with ``pycocotools.cocoeval.COCOeval`` and with
``deteval.interop.COCOeval``. Both must print the same text, give the same ``stats``, the same
``eval`` arrays (within one float step), the same ``evalImgs`` and the same ``ious``.
"""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval as ReferenceCOCOeval

from deteval.interop import COCOeval as DropInCOCOeval
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_segm import generate_segm


def _coco(gt: dict, dt: list) -> tuple:
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(copy.deepcopy(dt))
    return coco_gt, coco_dt


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


def script(coco_eval_class, coco_gt, coco_dt, iou_type, settings):
    """What detectron2 / mmdetection do: set params, evaluate, accumulate, summarize (stdout)."""
    evaluator = coco_eval_class(coco_gt, coco_dt, iou_type)
    for name, value in settings.items():
        setattr(evaluator.params, name, value)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        evaluator.evaluate()
        evaluator.accumulate()
    summary = io.StringIO()
    with contextlib.redirect_stdout(summary):
        evaluator.summarize()
    return evaluator, summary.getvalue()


EXPERIMENTS = {
    "defaults": {},
    "class-agnostic": {"useCats": 0},
    "custom-recall-thresholds": {"recThrs": np.linspace(0, 1, 41)},
    "custom-iou-thresholds": {"iouThrs": np.array([0.3, 0.5, 0.7])},
    "max-dets-1-10-300": {"maxDets": [1, 10, 300]},
    "max-dets-without-100": {"maxDets": [1, 5, 20]},
    "area-ranges": {"areaRng": [[0, 1e10], [0, 500], [500, 1e10]], "areaRngLbl": ["all", "small", "large"]},
}


def _same(ours, ref, ours_text, ref_text):
    assert ours_text == ref_text
    assert ours.stats.tolist() == ref.stats.tolist()
    assert sorted(ours.eval) == sorted(ref.eval)
    assert ours.eval["counts"] == ref.eval["counts"]
    for key in ("precision", "recall", "scores"):
        np.testing.assert_array_max_ulp(ours.eval[key], ref.eval[key], maxulp=1)
    assert len(ours.evalImgs) == len(ref.evalImgs)
    for mine, theirs in zip(ours.evalImgs, ref.evalImgs, strict=True):
        assert (mine is None) == (theirs is None)
        if mine is None:
            continue
        assert sorted(mine) == sorted(theirs)
        for key, value in theirs.items():
            if isinstance(value, np.ndarray) or key in ("dtMatches", "gtMatches", "dtIgnore", "gtIgnore"):
                np.testing.assert_array_equal(np.asarray(mine[key]), np.asarray(value), err_msg=key)
            else:
                assert list(np.atleast_1d(mine[key])) == list(np.atleast_1d(value)), key
    assert sorted(ours.ious) == sorted(ref.ious)
    for key, value in ref.ious.items():
        np.testing.assert_array_equal(np.asarray(ours.ious[key]), np.asarray(value), err_msg=str(key))


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
