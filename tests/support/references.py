"""Feeding a reference evaluator the inputs it cannot take directly."""

from __future__ import annotations

import copy
from typing import Any


def load_results(coco_gt: Any, dt: list) -> Any:
    """``coco_gt.loadRes(dt)``, or for no detections at all an empty result set of the same class.

    pycocotools' ``loadRes`` (and faster-coco-eval's copy of it) reads ``dt[0]`` to learn the
    result type, so an empty list raises. A user with a detector that found nothing still gets a
    number, so the cross-checks compare that case too: the reference evaluates a result object
    holding the same images and categories and no annotation, which is what ``loadRes`` would
    have built.
    """
    if dt:
        return coco_gt.loadRes(copy.deepcopy(dt))
    empty = type(coco_gt)()
    empty.dataset = {
        "images": copy.deepcopy(coco_gt.dataset.get("images", [])),
        "categories": copy.deepcopy(coco_gt.dataset.get("categories", [])),
        "annotations": [],
    }
    empty.createIndex()
    anno_file = getattr(coco_gt, "anno_file", None)
    if isinstance(anno_file, list) and len(anno_file) == 1:
        anno_file.append([])  # xtcocotools' loadRes records the results on the ground truth
    return empty
