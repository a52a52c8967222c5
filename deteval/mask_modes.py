"""Exact against raster mask IoU on the same data: what the choice of ``mask_iou`` moves.

``mask_iou: exact`` measures polygons with shapely, ``mask_iou: raster`` with pycocotools'
rasteriser at the image size (see :mod:`deteval.geometry.masks`). :func:`compare_mask_modes`
runs both evaluations on the same masks, prepared once, and counts the outcomes that differ.
Values in, values out: :func:`deteval.api.compare_mask_modes` (``deteval.compare_mask_modes``)
also takes paths, dicts and protocol names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.evaluate import EvalResult, check_protocol, inputs_summary, score
from deteval.geometry import prepare_masks
from deteval.masks.sources import RLE
from deteval.protocol import Protocol, get_protocol
from deteval.sharding import match_sharded

__all__ = ["MaskModeComparison", "compare_mask_modes"]


@frozen(eq=False)
class MaskModeComparison:
    """Exact against raster mask IoU on the same data (see :func:`compare_mask_modes`).

    Attributes
    ----------
    exact, raster : EvalResult
        The two evaluations (``mask_iou`` "exact" and "raster", all else equal).
    metric_difference : dict
        Metric name -> exact minus raster (NaN where either is undefined).
    n_outcomes : int
        (lane, detection) outcomes compared: lanes are (area range, IoU threshold) pairs,
        detections those kept within ``max_dets``.
    n_changed : int
        Outcomes whose status (TP, FP or ignored) differs: what moves the metrics.
    n_matches_changed : int
        Outcomes whose matched ground truth differs (matched to another one, or matched in one
        mode only), matches to ignored ground truth included.
    n_detections_changed : int
        Detections whose status differs in at least one lane.
    changed_by_threshold : int64 (n_iou_thr,)
        Outcomes whose status differs in the first area range ("all"), per IoU threshold.
    n_gt_rle, n_det_rle : int
        Ground-truth and detection masks given as RLE. An RLE is a raster already: both modes
        measure a pair with an RLE side by pycocotools' raster IoU, so only polygon-polygon pairs
        can change.
    n_gt_masks, n_det_masks : int
        Every ground-truth and detection mask.
    """

    exact: EvalResult
    raster: EvalResult
    metric_difference: dict
    n_outcomes: int
    n_changed: int
    n_matches_changed: int
    n_detections_changed: int
    changed_by_threshold: np.ndarray
    n_gt_rle: int = 0
    n_det_rle: int = 0
    n_gt_masks: int = 0
    n_det_masks: int = 0


def _matched_gt(table: Any) -> np.ndarray:
    """(n_lane, n_det) ground-truth row matched by each detection in each lane, -1 if none."""
    out = np.full(table.det_is_tp.shape, -1, dtype=np.int64)
    out[table.match_lane, table.match_det] = table.match_gt
    return out


def _evaluate(gt: GroundTruth, dt: Detections, protocol: Any, masks: Any, workers: int | str) -> EvalResult:
    """What ``deteval.evaluate(gt, dt, protocol)`` returns, on masks prepared by the caller."""
    table = match_sharded(gt, dt, protocol, workers=workers, masks=masks)
    inputs = inputs_summary(gt, dt)
    return score(table, gt, protocol, warnings=gt.warnings + dt.warnings, inputs=inputs)


def compare_mask_modes(
    gt: GroundTruth, dt: Detections, protocol: Protocol | None = None, *, workers: int | str = 1
) -> MaskModeComparison:
    """Evaluate masks with exact and with raster IoU and report what differs.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol, optional
        Its ``iou_type`` is set to ``"segm"``; ``mask_iou`` is varied (default: ``coco``).
    workers : int
        Match image shards in this many processes (see :func:`deteval.sharding.match_sharded`).

    Returns
    -------
    MaskModeComparison

    Raises
    ------
    InputError
        Invalid input (the message names file, record and field).
    ConfigError
        Invalid protocol.

    Examples
    --------
    >>> gt = {"images": [{"id": 1, "width": 100, "height": 100}],
    ...       "categories": [{"id": 1, "name": "thing"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
    ...                        "bbox": [10, 10, 50, 50], "area": 1250,
    ...                        "segmentation": [[10, 10, 60, 10, 10, 60]]}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [10, 10, 52.5, 52.5],
    ...        "segmentation": [[10, 10, 62.5, 10, 10, 62.5]]}]
    >>> from deteval.io import load_detections, load_ground_truth
    >>> gt = load_ground_truth(gt)
    >>> c = compare_mask_modes(gt, load_detections(dt, gt))  # IoU 0.907 exact, 0.889 raster: t = 0.9
    >>> c.changed_by_threshold.tolist()  # only the threshold 0.9 differs
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 0]
    >>> c.n_outcomes, c.n_changed, c.n_matches_changed, c.changed_by_threshold.tolist()
    (40, 2, 4, [0, 0, 0, 0, 0, 0, 0, 0, 1, 0])
    >>> round(c.metric_difference["AP"], 3)
    0.1
    """
    protocol = (get_protocol("coco") if protocol is None else protocol).replace(iou_type="segm")
    exact_protocol = protocol.replace(mask_iou="exact")
    raster_protocol = protocol.replace(mask_iou="raster")
    check_protocol(exact_protocol)  # before any mask is parsed, as evaluate() does
    # One prepared value for both runs: the masks are parsed and checked once.
    masks = prepare_masks(gt, dt, exact_protocol)
    ex = _evaluate(gt, dt, exact_protocol, masks, workers)
    ra = _evaluate(gt, dt, raster_protocol, masks, workers)
    diff = {}
    for name, value in ex.metrics.items():
        other = ra.metrics.get(name, float("nan"))
        diff[name] = float(value) - float(other)
    te, tr = ex.table, ra.table
    changed = (te.det_is_tp != tr.det_is_tp) | (te.det_is_ignored != tr.det_is_ignored)
    matches_changed = _matched_gt(te) != _matched_gt(tr)
    by_threshold = changed[: len(protocol.iou_thresholds)].sum(axis=1)
    return MaskModeComparison(
        exact=ex,
        raster=ra,
        metric_difference=diff,
        n_outcomes=int(changed.size),
        n_changed=int(changed.sum()),
        n_matches_changed=int(matches_changed.sum()),
        n_detections_changed=int(changed.any(axis=0).sum()),
        changed_by_threshold=by_threshold,
        n_gt_rle=int(np.count_nonzero(masks.gt_masks.masks.kind == RLE)),
        n_det_rle=int(np.count_nonzero(masks.det_masks.masks.kind == RLE)),
        n_gt_masks=len(masks.gt_masks.masks.kind),
        n_det_masks=len(masks.det_masks.masks.kind),
    )
