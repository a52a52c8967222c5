"""What per-image diagnostics and explained matches share: the values a result was scored from, IoUs, TIDE's error of each detection."""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult, pair_iou
from deteval.geometry import prepare_masks
from deteval.pooling import pooled_for
from deteval.protocol import Protocol
from deteval.tide.oracle import _best_fixable, _classify
from deteval.tide.outcome import _Outcome

#: TIDE's background threshold (tidecv's default), used for the error types here.
TIDE_BACKGROUND = 0.1


#: Words of :attr:`ExplainedMatches.error`: "" for a true positive or an ignored detection, then
#: the TIDE error types of a false positive (``_CODE``'s order).
ERROR_WORDS = ("", "cls", "loc", "both", "dupe", "bkg")


def _checked_values(result: EvalResult, gt: GroundTruth, dt: Detections) -> tuple[GroundTruth, Detections]:
    """The (pooled, under ``class_agnostic``) values ``result`` was scored from, or an error."""
    gt, dt = pooled_for(gt, dt, result.protocol)
    same_images = result.image_ids is not None and np.array_equal(result.image_ids, gt.image_id)
    same_objects = result.annotation_ids is not None and np.array_equal(
        result.annotation_ids, gt.annotation_id
    )
    if not (same_images and same_objects):
        raise _other_values(gt, dt, "images or annotations")
    return gt, dt


def _other_values(gt: GroundTruth, dt: Detections, what: str) -> ConfigError:
    return ConfigError(
        f"per-image diagnostics: gt {gt.source!r} / dt {dt.source!r}: expected the ground truth and "
        f"detections the result was scored from, found other values ({what} differ)"
    )


def _table_det_rows(result: EvalResult, gt: GroundTruth, dt: Detections) -> np.ndarray:
    """Rows of ``dt`` of the table's detections (matched by their ``order``), checked."""
    table = result.table
    if len(table.det_order) == 0:
        return np.zeros(0, dtype=np.int64)
    by_order = np.argsort(dt.order, kind="stable")
    at = np.searchsorted(dt.order[by_order], table.det_order)
    rows = by_order[np.minimum(at, len(by_order) - 1)] if len(by_order) else at
    if not (
        len(by_order)
        and np.array_equal(dt.order[rows], table.det_order)
        and np.array_equal(dt.image[rows], table.det_image)
        and np.array_equal(dt.category[rows], table.det_class)
        and np.array_equal(dt.score[rows], table.det_score)
    ):
        raise _other_values(gt, dt, "detections")
    return rows


def _pair_iou_fn(gt: GroundTruth, dt: Detections, protocol: Protocol):
    masks = prepare_masks(gt, dt, protocol) if protocol.iou_type == "segm" else None

    def fn(g: np.ndarray, d: np.ndarray, is_crowd: np.ndarray | None = None) -> np.ndarray:
        crowd = np.zeros(len(g), bool) if is_crowd is None else is_crowd
        return pair_iou(gt, dt, g, d, crowd, protocol, masks)

    return fn


@frozen(eq=False)
class _Tide:
    """TIDE error codes of the selected table rows and the missed ground truth."""

    code: np.ndarray  # (n_sel,) _CODE of each selected row
    target: np.ndarray
    is_missed: np.ndarray  # (n_gt,) counted, unmatched, no loc/cls error pointing at it


def _tide(
    gt: GroundTruth,
    dt: Detections,
    result: EvalResult,
    lane: int,
    threshold: float,
    det_rows: np.ndarray,
    selected: np.ndarray,
    gt_is_counted: np.ndarray,
    pair_iou_fn,
) -> _Tide:
    """TIDE's error types (foreground ``threshold``, background 0.1) of the protocol's own matching."""
    table = result.table
    is_tp = table.lane_is_tp(lane)[selected]
    det_gt = np.full(len(table.det_score), -1, dtype=np.int64)
    in_lane = table.match_lane == lane
    det_gt[table.match_det[in_lane]] = table.match_gt[in_lane]
    det_gt = np.where(is_tp, det_gt[selected], -1)
    if result.protocol.score_order == "image_major":
        tie_keys: tuple = (table.det_image[selected], table.det_rank[selected])
    else:
        tie_keys = (table.det_order[selected],)
    out = _Outcome(
        det_rows=det_rows[selected],
        is_tp=is_tp,
        is_ignored=table.lane_is_ignored(lane)[selected],
        det_gt=det_gt,
        gt_is_counted=gt_is_counted,
        tie_keys=tie_keys,
    )
    code, target = _classify(gt, dt, out, pair_iou_fn, foreground=threshold, background=TIDE_BACKGROUND)
    is_used = np.zeros(len(gt), dtype=bool)
    is_used[det_gt[is_tp]] = True
    _, is_usable = _best_fixable(code, target, table.det_score[selected], is_used, tie_keys, n_gt=len(gt))
    return _Tide(code=code, target=target, is_missed=gt_is_counted & ~is_used & ~is_usable)
