"""Slow, plainly written twins of deteval.decomposition and deteval.confusion, and a generator.

Written straight from the definitions in docs/analysis.md with Python loops over detections,
ground truths and confidences, so that the vectorized code can be checked against them.
"""

from __future__ import annotations

import copy
import math
import random

import numpy as np

from tests.crosscheck.generate import generate


def confused(seed, **kwargs):
    """A generated dataset plus cross-class confusions.

    Relabelled detections, and copies of detections under another class (several detections on
    one object, of several classes).
    """
    gt, dt = generate(seed, **kwargs)
    rng = random.Random(seed + 12345)
    cats = [c["id"] for c in gt["categories"]]
    out = []
    for det in dt:
        det = copy.deepcopy(det)
        r = rng.random()
        if len(cats) > 1 and r < 0.2:
            det["category_id"] = rng.choice([c for c in cats if c != det["category_id"]])
        elif len(cats) > 1 and r < 0.35:
            twin = copy.deepcopy(det)
            twin["category_id"] = rng.choice([c for c in cats if c != det["category_id"]])
            twin["score"] = det["score"] * rng.choice((1.0, 0.5, 0.9))
            out.append(twin)
        out.append(det)
    return gt, out


def _iou(d, g, crowd=False):
    """Pycocotools bbIou on xywh."""
    dx, dy, dw, dh = d
    gx, gy, gw, gh = g
    iw = min(dw + dx, gw + gx) - max(dx, gx)
    ih = min(dh + dy, gh + gy) - max(dy, gy)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = dw * dh if crowd else dw * dh + gw * gh - inter
    return inter / union if union > 0 else 0.0


def max_iou_assignment(gt_dict, dt_list):
    """Per detection: (IoU_d, class of the max-IoU GT or None).

    Over the non-crowd GTs of its image (any class); ties: the first GT in file order.
    """
    by_image = {}
    for ann in gt_dict["annotations"]:
        if not ann.get("iscrowd", 0):
            by_image.setdefault(ann["image_id"], []).append(ann)
    out = []
    for det in dt_list:
        best, best_cls = 0.0, None
        for ann in by_image.get(det["image_id"], []):
            v = _iou(det["bbox"], ann["bbox"])
            if v > best:
                best, best_cls = v, ann["category_id"]
        out.append((best, best_cls))
    return out


def decomposition_slow(gt_dict, dt_list, category_id, t):
    """Curves of one class straight from the definitions: a dict of lists per confidence."""
    assign = max_iou_assignment(gt_dict, dt_list)
    n_gt = sum(
        1 for a in gt_dict["annotations"] if a["category_id"] == category_id and not a.get("iscrowd", 0)
    )
    confidences = sorted(
        {
            d["score"]
            for d, a in zip(dt_list, assign)
            if d["category_id"] == category_id or (a[0] >= t and a[1] == category_id)
        },
        reverse=True,
    )
    curves = {
        k: []
        for k in (
            "confidence",
            "precision_D",
            "recall_D",
            "precision_L",
            "recall_L",
            "precision_CgL",
            "recall_CgL",
        )
    }

    def ratio(a, b):
        return a / b if b else math.nan

    for delta in confidences:
        kept = [(d, a) for d, a in zip(dt_list, assign) if d["score"] >= delta]
        pred_c = [(d, a) for d, a in kept if d["category_id"] == category_id]
        pred_c_loc = [(d, a) for d, a in pred_c if a[0] >= t and a[1] is not None]
        pred_c_ok = [(d, a) for d, a in pred_c_loc if a[1] == category_id]
        true_c_loc = [(d, a) for d, a in kept if a[0] >= t and a[1] == category_id]
        true_c_ok = [(d, a) for d, a in true_c_loc if d["category_id"] == category_id]
        curves["confidence"].append(delta)
        curves["precision_D"].append(ratio(len(pred_c_ok), len(pred_c)))
        curves["precision_L"].append(ratio(len(pred_c_loc), len(pred_c)))
        curves["precision_CgL"].append(ratio(len(pred_c_ok), len(pred_c_loc)))
        curves["recall_D"].append(ratio(len(true_c_ok), n_gt))
        curves["recall_L"].append(ratio(len(true_c_loc), n_gt))
        curves["recall_CgL"].append(ratio(len(true_c_ok), len(true_c_loc)))
    return curves


def confusion_slow(gt_dict, dt_list, t, confidence):
    """The confusion matrix from its rule, with loops (COCO-style data, crowd absorbs)."""
    cats = sorted(c["id"] for c in gt_dict["categories"])
    index = {c: i for i, c in enumerate(cats)}
    n = len(cats)
    matrix = np.zeros((n + 1, n + 1), dtype=np.int64)
    images = sorted({a["image_id"] for a in gt_dict["annotations"]} | {d["image_id"] for d in dt_list})
    dets_all = [(i, d) for i, d in enumerate(dt_list) if d["score"] >= confidence]
    for image in images:
        gts = [(j, a) for j, a in enumerate(gt_dict["annotations"]) if a["image_id"] == image]
        normal = [(j, a) for j, a in gts if not a.get("iscrowd", 0)]
        crowd = [(j, a) for j, a in gts if a.get("iscrowd", 0)]
        dets = [(i, d) for i, d in dets_all if d["image_id"] == image]
        pairs = []
        for i, d in dets:
            for j, a in normal:
                v = _iou(d["bbox"], a["bbox"])
                if v >= t:
                    pairs.append((-v, -d["score"], i, j))
        pairs.sort()
        used_d, used_g = set(), set()
        for _, _, i, j in pairs:
            if i in used_d or j in used_g:
                continue
            used_d.add(i)
            used_g.add(j)
            matrix[index[gt_dict["annotations"][j]["category_id"]], index[dt_list[i]["category_id"]]] += 1
        for i, d in dets:
            if i in used_d:
                continue
            if any(
                _iou(d["bbox"], a["bbox"], crowd=True) >= t
                for _, a in crowd
                if a["category_id"] == d["category_id"]
            ):
                continue  # absorbed by a crowd region of its class: not in the matrix
            matrix[n, index[d["category_id"]]] += 1
        for j, a in normal:
            if j not in used_g:
                matrix[index[a["category_id"]], n] += 1
    return matrix
