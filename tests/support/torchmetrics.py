"""Shared test helpers (moved from tests/crosscheck/test_vs_torchmetrics.py, which imports them from here)."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from pycocotools import mask as mask_utils  # noqa: E402

torch = pytest.importorskip("torch")


def _boxes(xywh: list, box_format: str, dtype) -> torch.Tensor:
    b = np.asarray(xywh, dtype=np.float64).reshape(-1, 4)
    if box_format == "xyxy":
        b = np.c_[b[:, :2], b[:, :2] + b[:, 2:]]
    elif box_format == "cxcywh":
        b = np.c_[b[:, :2] + b[:, 2:] / 2, b[:, 2:]]
    return torch.tensor(b, dtype=dtype)


def coco_batches(
    gt: dict, dt: list, rng: random.Random, *, box_format="xywh", dtype=torch.float32, masks=False
):
    """Torchmetrics' per-image dicts of COCO data, in random batches (images in file order)."""
    images = gt["images"]
    by_image_gt: dict = {im["id"]: [] for im in images}
    by_image_dt: dict = {im["id"]: [] for im in images}
    for a in gt["annotations"]:
        by_image_gt[a["image_id"]].append(a)
    for d in dt:
        by_image_dt[d["image_id"]].append(d)
    keep_area = rng.random() < 0.5
    items = []
    for im in images:
        h, w = im.get("height", 1), im.get("width", 1)
        anns, dets = by_image_gt[im["id"]], by_image_dt[im["id"]]
        target = {
            "labels": torch.tensor([a["category_id"] for a in anns], dtype=torch.int64),
            "iscrowd": torch.tensor([a.get("iscrowd", 0) for a in anns], dtype=torch.int64),
        }
        pred = {
            "labels": torch.tensor([d["category_id"] for d in dets], dtype=torch.int64),
            "scores": torch.tensor([d["score"] for d in dets], dtype=dtype),
        }
        if keep_area:
            target["area"] = torch.tensor([float(a["area"]) for a in anns], dtype=dtype)
        if masks:
            target["masks"] = _masks([_ann_rle(a, h, w) for a in anns], h, w)
            pred["masks"] = _masks([_ann_rle(d, h, w) for d in dets], h, w)
            target["boxes"] = _boxes(
                [mask_utils.toBbox(_ann_rle(a, h, w)).tolist() for a in anns], box_format, dtype
            )
            pred["boxes"] = _boxes(
                [d["bbox"] if "bbox" in d else mask_utils.toBbox(_ann_rle(d, h, w)).tolist() for d in dets],
                box_format,
                dtype,
            )
        else:
            target["boxes"] = _boxes([a["bbox"] for a in anns], box_format, dtype)
            pred["boxes"] = _boxes([d["bbox"] for d in dets], box_format, dtype)
        items.append((pred, target))
    batches, i = [], 0
    while i < len(items):
        k = rng.randint(1, 5)
        batches.append(([p for p, _ in items[i : i + k]], [t for _, t in items[i : i + k]]))
        i += k
    return batches


def _ann_rle(ann: dict, h: int, w: int) -> dict:
    seg = ann["segmentation"]
    if isinstance(seg, list):
        return mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    if isinstance(seg["counts"], list):
        return mask_utils.frPyObjects(seg, h, w)
    return seg


def _masks(rles: list, h: int, w: int) -> torch.Tensor:
    if not rles:
        return torch.zeros((0,), dtype=torch.bool)  # what torchmetrics' coco_to_tm gives: shape (0,)
    with warnings.catch_warnings():
        # pycocotools' decode of frPyObjects' output trips numpy 2's __array__(copy=) deprecation
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.from_numpy(np.stack([mask_utils.decode(r) for r in rles]).astype(bool))
