"""Ground-truth flag policy: which objects are ignored, reusable, unmatchable; areas for the size ranges."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deteval.data import Detections, GroundTruth, boxes_as
from deteval.geometry.boxes import take_rows
from deteval.protocol import Protocol

if TYPE_CHECKING:  # the mask code is imported where masks are scored
    from deteval.geometry.masks import PreparedMasks


def outside_area_ranges(area: np.ndarray, protocol: Protocol) -> np.ndarray:
    """Bool (n_area, n): area outside each range; bounds inclusive at both ends (pycocotools)."""
    lo = np.array([a[1] for a in protocol.area_ranges])[:, None]
    hi = np.array([a[2] for a in protocol.area_ranges])[:, None]
    return (area[None, :] < lo) | (area[None, :] > hi)


def ground_truth_flags(gt: GroundTruth, protocol: Protocol) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(is_ignored (n_area, n_gt), is_reusable (n_gt,), is_unmatchable (n_gt,)) in GT row order."""
    crowd_active = gt.is_crowd if protocol.crowd == "ignore_reusable" else np.zeros(len(gt), bool)
    base = crowd_active.copy()
    if protocol.gt_ignore_field == "honour":
        base |= gt.is_ignore
    if protocol.difficult == "ignore":
        base |= gt.is_difficult
    if protocol.iou_type == "keypoints" and gt.num_keypoints is not None:
        base |= gt.num_keypoints == 0  # pycocotools: ignore = (num_keypoints == 0) or ignore
    is_ignored = base[None, :] | outside_area_ranges(_gt_area(gt, protocol), protocol)
    if protocol.gt_id_zero == "unmatchable":
        is_unmatchable = gt.annotation_id == 0
    else:
        is_unmatchable = np.zeros(len(gt), bool)
    return is_ignored, crowd_active, is_unmatchable


def _gt_area(gt: GroundTruth, protocol: Protocol) -> np.ndarray:
    """The ground truth's area for OKS and the size ranges (``keypoint_area``).

    Notes
    -----
    ``keypoint_area: box`` is xtcocotools' ``use_area=False``: ``bbox[3] * bbox[2] * 0.53``
    (``computeOks``; its ``evaluateImg`` multiplies ``bbox[2] * bbox[3]``, the same product).
    """
    if protocol.iou_type != "keypoints" or protocol.keypoint_area == "area":
        return gt.area
    box = boxes_as(gt.box, gt.box_format, "xywh")
    return box[:, 3] * box[:, 2] * 0.53


def _det_area(
    dt: Detections, rows: np.ndarray, protocol: Protocol, masks: PreparedMasks | None
) -> np.ndarray:
    """Detection area for size ranges: ``w * h`` of the box (pycocotools' loadRes).

    ``dt.area``, when given, wins (the drop-in COCOeval's ``loadRes`` areas). ``masks`` is given
    exactly when ``iou_type`` is ``"segm"`` (see :func:`match`).
    """
    if dt.area is not None:
        return np.asarray(dt.area[rows], dtype=np.float64)
    if protocol.iou_type == "rotated":  # hook: the rotated box's own area
        from deteval.geometry.rotated import rotated_areas

        return rotated_areas(dt, rows, protocol)
    if masks is not None:
        from deteval.geometry.masks import detection_areas

        return detection_areas(masks, rows, protocol)
    box = boxes_as(take_rows(np.asarray(dt.box), rows), dt.box_format, "xywh")
    with np.errstate(over="ignore"):  # a finite box of area > 1.8e308: inf, outside every range
        return box[:, 2] * box[:, 3]
