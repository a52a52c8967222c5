"""Run pycocotools' COCOeval (bbox) on in-memory data, quietly and without touching the inputs.

pycocotools mutates what it is given (``loadRes`` adds ``area``, ``id``, ``iscrowd`` and
``segmentation`` to every result; ``_prepare`` overwrites ``ignore`` on every GT) and
prints progress, so this wrapper deep-copies the inputs and swallows stdout.
``loadRes`` cannot take an empty result list (it reads ``anns[0]``): an empty detection
set is built as an empty COCO object instead, which is what the evaluation would see.
"""

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
    precision: np.ndarray  # (T, R, K, A, M), -1 where no GT
    recall: np.ndarray  # (T, K, A, M)
    scores: np.ndarray  # (T, R, K, A, M)
    stats: np.ndarray | None  # (12,) or None when summarize cannot run (< 3 max_dets)


def run_pycocotools(gt, dt, *, iou_thresholds=None, area_ranges=None, max_dets=None):
    """COCOeval(bbox) on deep copies of ``gt`` (dict) and ``dt`` (list of dicts).

    area_ranges: sequence of (label, lo, hi); None keeps pycocotools' defaults.
    """
    gt = copy.deepcopy(gt)
    dt = copy.deepcopy(dt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        if dt:
            coco_dt = coco_gt.loadRes(dt)
        else:
            coco_dt = COCO()
            coco_dt.dataset = {
                "images": list(gt["images"]),
                "categories": copy.deepcopy(gt["categories"]),
                "annotations": [],
            }
            coco_dt.createIndex()
        ev = COCOeval(coco_gt, coco_dt, iouType="bbox")
        if iou_thresholds is not None:
            ev.params.iouThrs = np.array(iou_thresholds, dtype=np.float64)
        if area_ranges is not None:
            ev.params.areaRng = [[lo, hi] for _, lo, hi in area_ranges]
            ev.params.areaRngLbl = [lbl for lbl, _, _ in area_ranges]
        if max_dets is not None:
            ev.params.maxDets = list(max_dets)
        ev.evaluate()
        ev.accumulate()
        stats = None
        if len(ev.params.maxDets) >= 3:
            ev.summarize()
            stats = np.asarray(ev.stats, dtype=np.float64)
    return PycocoResult(ev.eval["precision"], ev.eval["recall"], ev.eval["scores"], stats)
