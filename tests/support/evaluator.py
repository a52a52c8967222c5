"""Shared test helpers (moved from tests/unit/test_evaluator.py, which imports them from here)."""

from __future__ import annotations


def per_image(gt, dt):
    """COCO dicts -> (image ids in file order, {id: target dict}, {id: pred dict})."""
    ids = [im["id"] for im in gt["images"]]
    targets = {i: {"boxes": [], "labels": [], "iscrowd": [], "area": []} for i in ids}
    preds = {i: {"boxes": [], "labels": [], "scores": []} for i in ids}
    for a in gt["annotations"]:
        t = targets[a["image_id"]]
        t["boxes"].append(a["bbox"])
        t["labels"].append(a["category_id"])
        t["iscrowd"].append(a["iscrowd"])
        t["area"].append(a["area"])
    for d in dt:
        p = preds[d["image_id"]]
        p["boxes"].append(d["bbox"])
        p["labels"].append(d["category_id"])
        p["scores"].append(d["score"])
    return ids, targets, preds


def metrics(result):
    """Headline metrics with NaN as None (comparable with ==)."""
    return result.to_dict()["metrics"]
