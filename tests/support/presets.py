"""Shared test helpers (moved from tests/crosscheck/test_tool_presets_vs_reference.py, which imports them from here)."""

from __future__ import annotations

import numpy as np

N_CLASS = 3


def _dataset(seed: int, *, group_rate: float = 0.0, integer: bool = False):
    """Images with GT boxes (xyxy), jittered and random detections with distinct scores."""
    rng = np.random.default_rng(seed)
    images = []
    for _ in range(int(rng.integers(3, 9))):
        n_gt = int(rng.integers(0, 6))
        xy = rng.uniform(0, 200, (n_gt, 2))
        wh = rng.uniform(8, 80, (n_gt, 2))
        gt_boxes = np.concatenate([xy, xy + wh], axis=1)
        gt_cls = rng.integers(0, N_CLASS, n_gt)
        is_group = rng.random(n_gt) < group_rate
        dets, det_cls = [], []
        for b, c in zip(gt_boxes, gt_cls):
            for _ in range(int(rng.integers(0, 4))):  # hits, duplicates, and boxes inside groups
                scale = rng.uniform(0.2, 1.0) if rng.random() < 0.3 else 1.0
                size = (b[2:] - b[:2]) * scale
                lo = b[:2] + rng.uniform(-0.15, 0.15, 2) * size + (b[2:] - b[:2] - size) * rng.random(2)
                dets.append(np.r_[lo, lo + size])
                det_cls.append(c if rng.random() < 0.9 else rng.integers(0, N_CLASS))
        for _ in range(int(rng.integers(0, 4))):
            lo = rng.uniform(0, 220, 2)
            dets.append(np.r_[lo, lo + rng.uniform(5, 60, 2)])
            det_cls.append(rng.integers(0, N_CLASS))
        det_boxes = np.array(dets, float).reshape(-1, 4)
        if integer:
            gt_boxes, det_boxes = np.round(gt_boxes), np.round(det_boxes)
            det_boxes[:, 2:] = np.maximum(det_boxes[:, 2:], det_boxes[:, :2] + 1)
        images.append((gt_boxes, gt_cls, is_group, det_boxes, np.array(det_cls, dtype=np.int64)))
    n_det = sum(len(im[3]) for im in images)
    scores = rng.permutation(n_det) / n_det * 0.98 + 0.01  # distinct, > 0
    out, start = [], 0
    for gt_boxes, gt_cls, is_group, det_boxes, det_cls in images:
        out.append((gt_boxes, gt_cls, is_group, det_boxes, scores[start : start + len(det_boxes)], det_cls))
        start += len(det_boxes)
    return out


def _coco(images):
    anns, dts = [], []
    for i, (gt_boxes, gt_cls, is_group, det_boxes, scores, det_cls) in enumerate(images):
        for b, c, g in zip(gt_boxes, gt_cls, is_group):
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": i + 1,
                    "category_id": int(c) + 1,
                    "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]],
                    "area": float((b[2] - b[0]) * (b[3] - b[1])),
                    "iscrowd": 0,
                    "is_group_of": int(g),
                }
            )
        for b, s, c in zip(det_boxes, scores, det_cls):
            dts.append(
                {
                    "image_id": i + 1,
                    "category_id": int(c) + 1,
                    "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]],
                    "score": float(s),
                }
            )
    gt = {
        "images": [{"id": i + 1} for i in range(len(images))],
        "categories": [{"id": c + 1, "name": f"c{c}"} for c in range(N_CLASS)],
        "annotations": anns,
    }
    return gt, dts
