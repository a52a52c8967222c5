"""Overlap between boxes and between masks.

* :mod:`deteval.geometry.boxes` -- box IoU in the two arithmetics published numbers use.
* :mod:`deteval.geometry.polygons` -- exact polygon areas and IoU (shapely 2).
* :mod:`deteval.geometry.raster` -- pycocotools' raster masks and their IoU.
* :mod:`deteval.geometry.masks` -- the per-pair dispatch between the two, over masks prepared
  once per (ground truth, detections).
"""

from deteval.geometry.boxes import BOX_CONVENTIONS, box_iou, pair_box_iou
from deteval.geometry.masks import (
    PreparedMasks,
    check_masks,
    detection_areas,
    mask_threads,
    pair_mask_iou,
    prepare_masks,
    segm_iou,
)

__all__ = [
    "BOX_CONVENTIONS",
    "box_iou",
    "pair_box_iou",
    "PreparedMasks",
    "prepare_masks",
    "mask_threads",
    "check_masks",
    "pair_mask_iou",
    "detection_areas",
    "segm_iou",
]
