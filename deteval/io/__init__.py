"""Readers and writers: the only code that touches files.

:func:`load_ground_truth` and :func:`load_detections` pick the format from what they are given.
"""

from __future__ import annotations

import os
from typing import Any

from deteval.data import Detections, GroundTruth
from deteval.io.coco import load_coco_dt, load_coco_gt

__all__ = ["load_ground_truth", "load_detections", "load_coco_gt", "load_coco_dt"]


def load_ground_truth(source: Any, **options: Any) -> GroundTruth:
    """COCO JSON (path or dict), a VOC root (folder with Annotations/), or a YOLO dataset."""
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        from deteval.io import detect_dataset_kind
        return detect_dataset_kind(source, **options)
    return load_coco_gt(source, **options)


def load_detections(source: Any, gt: GroundTruth, **options: Any) -> Detections:
    """COCO results JSON (path or list), VOC per-class result files, or YOLO predictions."""
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        from deteval.io import detect_results_kind
        return detect_results_kind(source, gt, **options)
    return load_coco_dt(source, gt, **options)
