"""Readers and writers: the only code that touches files.

:func:`load_ground_truth` and :func:`load_detections` pick the format from what they are given:

* a COCO JSON path, or the parsed dict / list;
* a VOC root (a folder with ``Annotations/``) and a folder of per-class result files;
* a YOLO dataset (a folder or ``data.yaml`` with ``names``) and a folder of prediction txt files.
"""

from __future__ import annotations

import os
from typing import Any

from deteval.data import Detections, GroundTruth
from deteval.errors import InputError
from deteval.io.coco import load_coco_dt, load_coco_gt

__all__ = ["load_ground_truth", "load_detections", "load_coco_gt", "load_coco_dt", "gt_format"]


def gt_format(source: Any) -> str:
    """The format of a ground-truth source: "coco", "voc" or "yolo"."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            if os.path.isdir(os.path.join(path, "Annotations")):
                return "voc"
            if any(os.path.exists(os.path.join(path, f)) for f in ("data.yaml", "dataset.yaml")):
                return "yolo"
            raise InputError(
                f"{path}: a folder that is neither a VOC root (no Annotations/) nor a "
                f"YOLO dataset (no data.yaml); expected one of them or a COCO JSON file"
            )
        if path.endswith((".yaml", ".yml")):
            return "yolo"
    return "coco"


def load_ground_truth(source: Any, **options: Any) -> GroundTruth:
    """Load ground truth in whichever supported format ``source`` is."""
    kind = gt_format(source)
    if kind == "voc":
        from deteval.io.voc import load_voc_gt

        return load_voc_gt(source, **options)
    if kind == "yolo":
        from deteval.io.yolo import load_yolo_gt

        return load_yolo_gt(source, **options)
    return load_coco_gt(source, **options)


def load_detections(source: Any, gt: GroundTruth, **options: Any) -> Detections:
    """Load detections: COCO results JSON, VOC per-class result files, or YOLO predictions."""
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        if _gt_kind(gt) == "yolo":
            from deteval.io.yolo import load_yolo_dt

            return load_yolo_dt(source, gt, **options)
        from deteval.io.voc import load_voc_dt

        return load_voc_dt(source, gt, **options)
    return load_coco_dt(source, gt, **options)


def _gt_kind(gt: GroundTruth) -> str:
    try:
        return gt_format(gt.source)
    except InputError:
        return "coco"
