"""Shared test helpers (moved from tests/crosscheck/test_segm_vs_pycocotools.py, which imports them from here)."""

from __future__ import annotations

import contextlib
import copy
import io
from dataclasses import dataclass

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval


@dataclass(frozen=True)
class PycocoResult:
    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    stats: np.ndarray


def run_pycocotools_segm(gt: dict, dt: list, *, iou_thresholds=None, max_dets=None) -> PycocoResult:
    """COCOeval(segm) on deep copies (pycocotools mutates both), quietly."""
    gt, dt = copy.deepcopy(gt), copy.deepcopy(dt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(dt)
        ev = COCOeval(coco_gt, coco_dt, iouType="segm")
        if iou_thresholds is not None:
            ev.params.iouThrs = np.array(iou_thresholds, dtype=np.float64)
        if max_dets is not None:
            ev.params.maxDets = list(max_dets)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return PycocoResult(
        ev.eval["precision"], ev.eval["recall"], ev.eval["scores"], np.asarray(ev.stats, dtype=np.float64)
    )
