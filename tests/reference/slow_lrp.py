"""A slow, plain twin of optimal LRP (Oksuz et al., TPAMI 2021), over pycocotools' own matching.

The authors' implementation is a pycocotools fork: ``kemaloksuz/LRP-Error``, file
``pycocotools/pycocotools/cocoeval.py``, ``COCOeval.accumulate`` (commit
ec408f3c8a3bc3408e0fdc84469e0101245f3bfb); the fork is not on PyPI, so this file restates its
algorithm in our own code (nothing copied):

1. pycocotools matches each (image, class) at IoU ``tau`` (the first IoU threshold), area
   ``all``, keeping the ``max_det`` best detections of each image;
2. per class, the kept detections of every image (images in ascending id order) are sorted by
   descending score, stably;
3. at each position ``j`` of that ranking: TP = matched to a non-ignored GT, FP = unmatched and
   not ignored, FN = n_positive - TP, loc = TP - (sum of the TPs' IoUs, added in ranking order),
   and ``LRP_j = (loc / (1 - tau) + FP + FN) / (TP + FP + FN)``;
4. oLRP is the first smallest ``LRP_j``; at it: loc / TP, FP / (TP + FP), FN / n_positive, and the
   score of detection ``j``. No ground truth: no value. No true positive anywhere: oLRP 1, FN 1,
   the rest NaN.

Each count is recomputed from scratch with Python loops (no cumulative arrays).
"""

from __future__ import annotations

import contextlib
import copy
import io
import math

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval


def _evaluated(gt: dict, dt: list, tau: float, max_det: int) -> COCOeval:
    gt, dt = copy.deepcopy(gt), copy.deepcopy(dt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(dt)
        ev = COCOeval(coco_gt, coco_dt, iouType="bbox")
        ev.params.iouThrs = np.array([tau])
        ev.params.maxDets = [max_det]
        ev.evaluate()
    return ev


def _ranked_outcomes(ev: COCOeval, cat_index: int) -> tuple[list, int]:
    """[(score, outcome, iou)] of one class, ranked; outcome 'tp', 'fp' or 'ignored'; n_positive."""
    p = ev.params
    n_img, n_area = len(p.imgIds), len(p.areaRng)
    found = []
    n_positive = 0
    for i, img_id in enumerate(p.imgIds):
        e = ev.evalImgs[cat_index * n_area * n_img + i]  # area range 0 ("all")
        if e is None:
            continue
        n_positive += sum(1 for ig in e["gtIgnore"] if not ig)
        cat_id = p.catIds[cat_index]
        ious = ev.ious[img_id, cat_id]
        gts = ev._gts[img_id, cat_id]
        for d, (score, matched, ignored) in enumerate(
            zip(e["dtScores"], e["dtMatches"][0], e["dtIgnore"][0], strict=True)
        ):
            if ignored:
                found.append((score, "ignored", 0.0))
            elif matched:
                g = next(j for j, a in enumerate(gts) if a["id"] == matched)
                found.append((score, "tp", float(ious[d, g])))
            else:
                found.append((score, "fp", 0.0))
    ranked = sorted(found, key=lambda item: -item[0])  # sorted() is stable
    return ranked, n_positive


def slow_optimal_lrp(gt: dict, dt: list, *, tau: float = 0.5, max_det: int = 100) -> dict:
    """``{category_id: {oLRP, oLRP_loc, oLRP_FP, oLRP_FN, threshold}}``; None without GT."""
    ev = _evaluated(gt, dt, tau, max_det)
    out: dict = {}
    for k, cat_id in enumerate(ev.params.catIds):
        ranked, n_positive = _ranked_outcomes(ev, k)
        if n_positive == 0:
            out[cat_id] = None
            continue
        best = None
        for j in range(len(ranked)):
            tp = sum(1 for item in ranked[: j + 1] if item[1] == "tp")
            fp = sum(1 for item in ranked[: j + 1] if item[1] == "fp")
            iou_sum = 0.0
            for item in ranked[: j + 1]:
                if item[1] == "tp":
                    iou_sum += item[2]
            loc = float(tp) - iou_sum
            fn = n_positive - tp
            lrp = (loc / (1 - tau) + fp + fn) / (tp + fp + fn)
            if best is None or lrp < best[0]:
                best = (lrp, j, tp, fp, fn, loc)
        if best is None or not any(item[1] == "tp" for item in ranked):
            out[cat_id] = {
                "oLRP": 1.0,
                "oLRP_loc": math.nan,
                "oLRP_FP": math.nan,
                "oLRP_FN": 1.0,
                "threshold": math.nan,
            }
            continue
        lrp, j, tp, fp, fn, loc = best
        out[cat_id] = {
            "oLRP": lrp,
            "oLRP_loc": loc / tp if tp else math.nan,
            "oLRP_FP": fp / (tp + fp) if tp + fp else math.nan,
            "oLRP_FN": fn / n_positive,
            "threshold": ranked[j][0],
        }
    return out


def slow_mean_tp_iou(gt: dict, dt: list, *, iou_threshold: float = 0.5, max_det: int = 100) -> dict:
    """``{category_id: (n_tp, mean IoU of the true positives or NaN)}`` under pycocotools' matching."""
    ev = _evaluated(gt, dt, iou_threshold, max_det)
    out = {}
    for k, cat_id in enumerate(ev.params.catIds):
        ranked, _ = _ranked_outcomes(ev, k)
        ious = [item[2] for item in ranked if item[1] == "tp"]
        out[cat_id] = (len(ious), sum(ious) / len(ious) if ious else math.nan)
    return out
