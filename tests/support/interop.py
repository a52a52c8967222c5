"""Shared test helpers (moved from tests/crosscheck/test_interop_vs_pycocotools.py, which imports them from here)."""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
from pycocotools.coco import COCO


def _coco(gt: dict, dt: list) -> tuple:
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(copy.deepcopy(dt))
    return coco_gt, coco_dt


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
