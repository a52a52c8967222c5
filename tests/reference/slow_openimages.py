"""Slow, plainly written twin of Open Images' group-of matching and its AP.

A re-typing, on plain numpy, of mmdetection's ``tpfp_openimages`` and the parts of ``eval_map``
that score one class (``mmdet/evaluation/functional/mean_ap.py``, open-mmlab/mmdetection at
commit 114dbbfa6503bf4020ff55d5228805629bd451d5), which follows the TF object detection API's
``research/object_detection/utils/per_image_evaluation.py`` (tensorflow/models at commit
37463a830e601397a3196b706fd66c89d3a03fc6). It does not import deteval.

Kept from the reference: non-group-of boxes matched first by IoU (argmax over them; taken ->
FP), then the detections that are not TPs matched to group-of boxes by
``bbox_overlaps(..., mode="iof")`` (intersection over the *detection's* area), argmax, ``>=``
the IoA threshold; all detections inside one group-of box are replaced by one entry with the
highest score, TP; an unmatched group-of box adds an FP entry of score 0. AP: the VOC
``area`` mode (``average_precision``), with ``tp / max(tp + fp, eps)`` and float32 AP storage.

Left out (not used by the Open Images evaluation): ``gt_bboxes_ignore`` and area ranges.
Changed: ``np.argsort(-scores)`` becomes a stable sort (quicksort's order of ties is not
reproducible), and boxes are continuous (mmdet's default ``use_legacy_coordinate=False``).
"""

from __future__ import annotations

import numpy as np


def bbox_overlaps(b1, b2, mode="iou"):
    """Mmdet's ``bbox_overlaps`` (continuous, no +1): IoU, or ``iof`` = intersection / area(b1)."""
    b1 = np.asarray(b1, dtype=np.float64).reshape(-1, 4)
    b2 = np.asarray(b2, dtype=np.float64).reshape(-1, 4)
    out = np.zeros((len(b1), len(b2)), dtype=np.float64)
    area1 = (b1[:, 2] - b1[:, 0]) * (b1[:, 3] - b1[:, 1])
    area2 = (b2[:, 2] - b2[:, 0]) * (b2[:, 3] - b2[:, 1])
    for i in range(len(b1)):
        x_start = np.maximum(b1[i, 0], b2[:, 0])
        y_start = np.maximum(b1[i, 1], b2[:, 1])
        x_end = np.minimum(b1[i, 2], b2[:, 2])
        y_end = np.minimum(b1[i, 3], b2[:, 3])
        overlap = np.maximum(x_end - x_start, 0) * np.maximum(y_end - y_start, 0)
        union = area1[i] + area2 - overlap if mode == "iou" else area1[i]
        union = np.maximum(union, np.finfo(np.float32).eps)
        out[i, :] = overlap / union
    return out


def tpfp_openimages(det_bboxes, gt_bboxes, gt_is_group_of, iou_thr=0.5, ioa_thr=0.5, use_group_of=True):
    """``tpfp_openimages`` for one image and class, one scale: (tp, fp, det_bboxes) as mmdet returns them.

    ``det_bboxes`` (m, 5) x1, y1, x2, y2, score; ``gt_bboxes`` (n, 4); ``gt_is_group_of`` (n,) bool.
    """
    det_bboxes = np.asarray(det_bboxes, dtype=np.float64).reshape(-1, 5)
    gt_bboxes = np.asarray(gt_bboxes, dtype=np.float64).reshape(-1, 4)
    gt_is_group_of = np.asarray(gt_is_group_of, dtype=bool)
    num_dets, num_gts = det_bboxes.shape[0], gt_bboxes.shape[0]
    tp = np.zeros((1, num_dets), dtype=np.float32)
    fp = np.zeros((1, num_dets), dtype=np.float32)
    if num_gts == 0:
        fp[...] = 1
        return tp, fp, det_bboxes
    if use_group_of:
        non_group_gt_bboxes = gt_bboxes[~gt_is_group_of]
        group_gt_bboxes = gt_bboxes[gt_is_group_of]
        num_gts_group = group_gt_bboxes.shape[0]
        ious = bbox_overlaps(det_bboxes[:, :4], non_group_gt_bboxes)
        ioas = bbox_overlaps(det_bboxes[:, :4], group_gt_bboxes, mode="iof")
    else:
        ious = bbox_overlaps(det_bboxes[:, :4], gt_bboxes)
        ioas = None
    sort_inds = np.argsort(-det_bboxes[:, -1], kind="stable")
    if ious.shape[1] > 0:
        ious_max = ious.max(axis=1)
        ious_argmax = ious.argmax(axis=1)
        gt_covered = np.zeros(num_gts, dtype=bool)
        for i in sort_inds:
            if ious_max[i] >= iou_thr:
                matched_gt = ious_argmax[i]
                if not gt_covered[matched_gt]:
                    gt_covered[matched_gt] = True
                    tp[0, i] = 1
                else:
                    fp[0, i] = 1
            else:
                fp[0, i] = 1
    else:
        fp[...] = 1
    if ioas is None or ioas.shape[1] <= 0:
        return tp, fp, det_bboxes
    det_bboxes_group = np.zeros((1, ioas.shape[1], det_bboxes.shape[1]), dtype=float)
    match_group_of = np.zeros((1, num_dets), dtype=bool)
    tp_group = np.zeros((1, num_gts_group), dtype=np.float32)
    ioas_max = ioas.max(axis=1)
    ioas_argmax = ioas.argmax(axis=1)
    box_is_covered = tp[0]
    for i in sort_inds:
        matched_gt = ioas_argmax[i]
        if not box_is_covered[i]:
            if ioas_max[i] >= ioa_thr:
                if not tp_group[0, matched_gt]:
                    tp_group[0, matched_gt] = 1
                match_group_of[0, i] = True
                if det_bboxes_group[0, matched_gt, -1] < det_bboxes[i, -1]:
                    det_bboxes_group[0, matched_gt] = det_bboxes[i]
    fp_group = (tp_group <= 0).astype(float)
    tp = np.concatenate((tp[0][~match_group_of[0]], tp_group[0]))[None, :]
    fp = np.concatenate((fp[0][~match_group_of[0]], fp_group[0]))[None, :]
    det_bboxes = np.concatenate((det_bboxes[~match_group_of[0]], det_bboxes_group[0]))
    return tp, fp, det_bboxes


def average_precision_area(recalls, precisions):
    """Mmdet's ``average_precision(..., mode="area")`` for one scale (float32 result, as mmdet stores it)."""
    ap = np.zeros(1, dtype=np.float32)
    mrec = np.hstack(([0.0], recalls, [1.0]))
    mpre = np.hstack(([0.0], precisions, [0.0]))
    for i in range(mpre.shape[0] - 1, 0, -1):
        mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])
    ind = np.where(mrec[1:] != mrec[:-1])[0]
    ap[0] = np.sum((mrec[ind + 1] - mrec[ind]) * mpre[ind + 1])
    return float(ap[0])


def eval_class(per_image, iou_thr=0.5, use_group_of=True):
    """AP of one class: ``per_image`` is a list of (det_bboxes (m, 5), gt_bboxes (n, 4), is_group_of (n,)).

    Returns None when the class has no ground truth (mmdet leaves it out of the mean).
    """
    tps, fps, dets = [], [], []
    num_gts = 0
    for det_bboxes, gt_bboxes, is_group_of in per_image:
        tp, fp, kept = tpfp_openimages(det_bboxes, gt_bboxes, is_group_of, iou_thr, iou_thr, use_group_of)
        tps.append(tp)
        fps.append(fp)
        dets.append(kept)
        num_gts += np.asarray(gt_bboxes).reshape(-1, 4).shape[0]
    if num_gts == 0:
        return None
    cls_dets = np.vstack(dets)
    sort_inds = np.argsort(-cls_dets[:, -1], kind="stable")
    tp = np.cumsum(np.hstack(tps)[:, sort_inds], axis=1)
    fp = np.cumsum(np.hstack(fps)[:, sort_inds], axis=1)
    eps = np.finfo(np.float32).eps
    recalls = tp / np.maximum(num_gts, eps)
    precisions = tp / np.maximum(tp + fp, eps)
    return average_precision_area(recalls[0], precisions[0])
