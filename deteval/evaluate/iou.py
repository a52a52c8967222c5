"""Which overlap a protocol scores pairs by (boxes, masks, OKS), and the inputs it needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import ConfigError, InputError
from deteval.evaluate.flags import _gt_area
from deteval.geometry.boxes import pair_box_iou
from deteval.geometry.keypoints import keypoint_sigmas, pair_oks
from deteval.protocol import Protocol
from deteval.scorable import require_boxes, require_keypoints

if TYPE_CHECKING:  # the mask and rotated-box code is imported where those are scored
    from deteval.geometry.masks import PreparedMasks


def pair_iou(
    gt: GroundTruth,
    dt: Detections,
    gt_rows: np.ndarray,
    det_rows: np.ndarray,
    gt_is_crowd: np.ndarray,
    protocol: Protocol,
    masks: PreparedMasks | None,
    *,
    threads: int = 1,
) -> np.ndarray:
    """IoU of aligned pairs.

    Masks when ``masks`` is given (``iou_type="segm"``), OKS for ``iou_type="keypoints"``, else
    boxes. ``threads``: the OKS kernel's (the same numbers for every count).
    """
    if protocol.iou_type == "keypoints":
        if len(gt_rows) == 0:  # no candidate pair (e.g. no detections: then dt.keypoints is None)
            return np.zeros(0, dtype=np.float64)
        gt_keypoints, det_keypoints = gt.keypoints, dt.keypoints
        if gt_keypoints is None or det_keypoints is None:
            raise InputError(
                f"{gt.source} / {dt.source}: pairs to score by OKS, but "
                f"{'the ground truth' if gt_keypoints is None else 'the detections'} have no "
                f"`keypoints`; expected `keypoints` [x1, y1, v1, ...] on both sides for iou_type "
                f"'keypoints'"
            )
        return pair_oks(
            gt_keypoints,
            boxes_as(gt.box, gt.box_format, "xywh"),
            _gt_area(gt, protocol),
            det_keypoints,
            sigmas=keypoint_sigmas(protocol.keypoint_sigmas),
            gt_rows=gt_rows,
            det_rows=det_rows,
            threads=threads,
        )
    if protocol.iou_type == "rotated":  # hook: deteval.geometry.rotated
        from deteval.geometry.rotated import rotated_pair_iou

        return rotated_pair_iou(gt, dt, gt_rows, det_rows, gt_is_crowd, protocol)
    if masks is not None:
        from deteval.geometry.masks import pair_mask_iou

        return pair_mask_iou(masks, gt_rows, det_rows, gt_is_crowd, protocol)
    native = "xywh" if protocol.box_convention == "continuous" else "xyxy"
    return pair_box_iou(
        boxes_as(dt.box, dt.box_format, native),
        boxes_as(gt.box, gt.box_format, native),
        gt_is_crowd,
        box_format=native,
        convention=protocol.box_convention,
        det_rows=det_rows,
        gt_rows=gt_rows,
    )


def _checked_masks(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    masks: PreparedMasks | None,
    *,
    workers: int | str | None = 1,
) -> PreparedMasks | None:
    """Check the inputs carry what ``protocol.iou_type`` scores; the masks to use (segm only).

    Raises
    ------
    InputError
        Detections without boxes (``bbox``), records without keypoints (``keypoints``).
    ConfigError
        ``masks`` prepared from other ground truth or detections.
    """
    if protocol.iou_type == "bbox":
        require_boxes(dt)
        return None
    if protocol.iou_type == "rotated":  # hook: deteval.geometry.rotated
        from deteval.geometry.rotated import require_rotated

        require_rotated(gt, dt, protocol)
        return None
    if protocol.iou_type == "keypoints":
        require_keypoints(
            gt, dt, n_sigmas=None if protocol.keypoint_sigmas is None else len(protocol.keypoint_sigmas)
        )
        return None
    if masks is None:
        return prepared_masks(gt, dt, protocol, workers=workers)
    if not masks.is_for(gt, dt):
        raise ConfigError(
            "match: `masks` were prepared from other ground truth or detections; "
            "expected prepare_masks(gt, dt, protocol) of the objects being matched, "
            f"found masks of {masks.gt.source!r} / {masks.dt.source!r}"
        )
    return masks


def prepared_masks(
    gt: GroundTruth, dt: Detections, protocol: Protocol, *, workers: int | str | None = 1
) -> PreparedMasks:
    """:func:`deteval.geometry.prepare_masks` on the threads ``workers`` gives.

    The one call site of matching (:func:`~deteval.evaluate.match` and
    :func:`deteval.sharding.match_sharded`): threads by :func:`deteval.geometry.mask_threads`
    over the records of ``gt`` and ``dt``, kept by the prepared masks for their pair IoUs; the
    masks and the numbers do not depend on it.
    """
    from deteval.geometry.masks import mask_threads, prepare_masks

    return prepare_masks(gt, dt, protocol, threads=mask_threads(workers, len(gt) + len(dt)))
