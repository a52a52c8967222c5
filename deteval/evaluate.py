"""Values in, values out: ``match`` -> ``merge_match_tables`` -> ``score`` -> :class:`EvalResult`.

The work is done by :mod:`deteval.matching` (who matched whom), :mod:`deteval.accumulate`
(curves and AP) and :mod:`deteval.summary` (headline metrics); this module wires them together
and packages the result. Paths, parsed JSON and protocol names are the front
door's (:mod:`deteval.api`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any, cast

import numpy as np

from deteval.accumulate import accumulate
from deteval.data import Detections, FederatedLabels, GroundTruth, boxes_as
from deteval.errors import ConfigError, InputError
from deteval.geometry import PreparedMasks, detection_areas, pair_box_iou, pair_mask_iou, prepare_masks
from deteval.geometry.keypoints import keypoint_sigmas, pair_oks
from deteval.geometry.rotated import require_rotated, rotated_areas, rotated_pair_iou
from deteval.grouping import (
    Groups,
    by_group_then_descending,
    candidate_pairs,
    group_rows,
    rank_in_group,
)
from deteval.matching import (
    LaneFlags,
    lane_dtype,
    match_coco,
    match_group_of,
    match_ultralytics,
    match_voc,
    narrow_rows,
    row_dtype,
)
from deteval.memory import require_match
from deteval.openimages import refuse_unapplied_label_rules
from deteval.operating_points import best_f1_points, default_iou_index
from deteval.pooling import ground_truth_for, pooled_for
from deteval.protocol import Protocol, resolve_protocol
from deteval.summary import CROWD_INDEX_BANDS, class_ap, class_metrics_all, headline_metrics, none_if_nan

__all__ = ["EvalResult", "MatchTable", "match", "score", "merge_match_tables"]


@dataclass(frozen=True, eq=False)
class MatchTable:
    """Per-detection outcome of matching, ready to accumulate; shards concatenate.

    Attributes
    ----------
    det_score, det_class, det_image, det_rank, det_order : (n_det,)
        Kept detections (within ``max_dets``), in (image, class, rank) order. ``det_score``
        float64; ``det_class``, ``det_image`` int32 (as in :class:`~deteval.data.Detections`);
        ``det_rank``, ``det_order`` int32 (int64 beyond 2**31 rows). Compute keys from them in
        int64 (``image.astype(np.int64) * n_class + cls``), not in their dtype.
    match_lane, match_det, match_gt : (n_match,)
        Who matched whom: lane (area * n_iou_thr + threshold), detection (row of this table)
        and ground-truth annotation (row of the GroundTruth), matches to ignored GTs included.
        Narrow integers: lanes int8 (int16 beyond 128 lanes), rows int32 (int64 beyond 2**31
        rows); compute keys from them in int64 (``astype(np.int64)``), not in their dtype.
    tp, ignored : LaneFlags (n_lane x n_det)
        True positives and ignored detections per lane, packed eight lanes a byte
        (``tp.bits``: uint8 (n_det, ceil(n_lane / 8))). :meth:`lane_is_tp` /
        :meth:`lane_is_ignored` read one lane; :attr:`det_is_tp` / :attr:`det_is_ignored`
        unpack the whole bool (n_lane, n_det) tables (new arrays, n_lane bytes per detection
        each: read lanes where that is enough).
    n_positive : int64 (n_class, n_area)
    n_det_per_class : int64 (n_class,)
        All detections of each class given as input (before ``max_dets``).
    n_over_max_dets : int
        Detections beyond ``max(max_dets)`` in their (image, class) group.
    """

    det_score: np.ndarray
    det_class: np.ndarray
    det_image: np.ndarray
    det_rank: np.ndarray
    det_order: np.ndarray
    match_lane: np.ndarray
    match_det: np.ndarray
    match_gt: np.ndarray
    tp: LaneFlags
    ignored: LaneFlags
    n_positive: np.ndarray
    n_det_per_class: np.ndarray
    n_over_max_dets: int

    @property
    def n_lane(self) -> int:
        """Number of lanes (area ranges x IoU thresholds)."""
        return self.tp.n_lane

    @property
    def det_is_tp(self) -> np.ndarray:
        """Bool (n_lane, n_det): true positives, unpacked (allocates; see :meth:`lane_is_tp`)."""
        return self.tp.unpack()

    @property
    def det_is_ignored(self) -> np.ndarray:
        """Bool (n_lane, n_det): ignored detections, unpacked (allocates; see :meth:`lane_is_ignored`)."""
        return self.ignored.unpack()

    def lane_is_tp(self, lane: int) -> np.ndarray:
        """Bool (n_det,): the true positives of one lane."""
        return self.tp.lane(lane)

    def lane_is_ignored(self, lane: int) -> np.ndarray:
        """Bool (n_det,): the ignored detections of one lane."""
        return self.ignored.lane(lane)


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
        return rotated_areas(dt, rows, protocol)
    if masks is not None:
        return detection_areas(masks, rows, protocol)
    box = boxes_as(dt.box[rows], dt.box_format, "xywh")
    with np.errstate(over="ignore"):  # a finite box of area > 1.8e308: inf, outside every range
        return box[:, 2] * box[:, 3]


def pair_iou(
    gt: GroundTruth,
    dt: Detections,
    gt_rows: np.ndarray,
    det_rows: np.ndarray,
    gt_is_crowd: np.ndarray,
    protocol: Protocol,
    masks: PreparedMasks | None,
) -> np.ndarray:
    """IoU of aligned pairs.

    Masks when ``masks`` is given (``iou_type="segm"``), OKS for ``iou_type="keypoints"``, else
    boxes.
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
        )
    if protocol.iou_type == "rotated":  # hook: deteval.geometry.rotated
        return rotated_pair_iou(gt, dt, gt_rows, det_rows, gt_is_crowd, protocol)
    if masks is not None:
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


def match(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    *,
    images: np.ndarray | None = None,
    masks: PreparedMasks | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MatchTable:
    """Match detections to ground truth under ``protocol`` (no accumulation).

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol
    images : bool (n_img,), optional
        Only these images (a shard). Tables of disjoint shards merge with
        :func:`merge_match_tables` into exactly the table of one run over all images.
    masks : PreparedMasks, optional
        ``iou_type="segm"`` only: the masks of ``gt`` and ``dt`` from
        :func:`deteval.geometry.prepare_masks`, to parse and validate them once for several
        calls (shards, protocols); built here when not given. Ignored for ``"bbox"``. Under
        ``class_agnostic`` pass masks prepared from the pooled values
        (:func:`deteval.pooling.pooled_for`); masks of the unpooled ones are prepared again.
    progress : callable, optional
        Called as ``progress(done, total)`` after each part of the matching (pairs, their IoUs
        and the greedy matching of whole images; about 16 parts): ``done`` of ``total`` kept
        detections are matched. The table is the same with or without it.

    Returns
    -------
    MatchTable
        Plain arrays (picklable): ground-truth rows refer to the whole ``gt`` (to the pooled
        ``gt`` under ``class_agnostic``: :func:`deteval.pooling.ground_truth_for`, the ground
        truth :func:`score` reads the table with).

    Raises
    ------
    ConfigError
        ``masks`` prepared from other ground truth or detections; a protocol with Open Images
        label rules (``hierarchy_expansion``, ``image_level_labels``) and ground truth they
        were not applied to (:func:`deteval.openimages.apply_challenge_rules`).
    """
    protocol = resolve_protocol(protocol)
    refuse_unapplied_label_rules(gt, protocol)  # openimages-challenge: rules applied by the caller
    pooled_gt, pooled_dt = pooled_for(gt, dt, protocol)  # class_agnostic: one class, useCats=0
    if pooled_gt is not gt:
        if masks is not None and masks.is_for(gt, dt):
            masks = None  # prepared from the unpooled values: their ground-truth rows moved
        gt, dt = pooled_gt, pooled_dt
    masks = _checked_masks(gt, dt, protocol, masks)
    n_class = gt.n_classes
    n_area = len(protocol.area_ranges)
    if images is None:
        det_sel = None
        gt_sel = np.arange(len(gt))
    else:
        images = np.asarray(images, dtype=bool)
        det_sel = np.flatnonzero(images[dt.image])
        gt_sel = np.flatnonzero(images[gt.image])
    # In a function of its own, so that its sorting arrays (keys, orders, ranks of every
    # detection before the max_dets cap) are freed before pairs, IoUs and matches are made.
    det_rows, det_key_kept, det_rank, n_over, n_det_per_class = _kept_detections(gt, dt, protocol, det_sel)

    gt_key = gt.image[gt_sel].astype(np.int64) * n_class + gt.category[gt_sel]
    gt_groups = group_rows(gt_key)
    del gt_key
    gt_rows = gt_sel[gt_groups.order]
    is_ignored, is_reusable, is_unmatchable = ground_truth_flags(gt, protocol)
    require_match(n_area, len(protocol.iou_thresholds), len(det_rows))
    thresholds = np.array(protocol.iou_thresholds, dtype=np.float64)
    n_lane = n_area * len(thresholds)
    n_det = len(det_rows)
    # GroundTruth.__post_init__ fills a missing is_group_of with False: never None on an instance.
    is_group_of = cast(np.ndarray, gt.is_group_of)
    sorted_truth = _SortedTruth(
        groups=gt_groups,
        rows=gt_rows,
        is_ignored=is_ignored[:, gt_rows],
        is_reusable=is_reusable[gt_rows],
        is_unmatchable=is_unmatchable[gt_rows],
        is_group=is_group_of[gt_rows] if protocol.group_of == "openimages" else np.zeros(len(gt_rows), bool),
        labels=_federated_labels(gt, protocol) if protocol.federated_labels == "lvis" else None,
    )
    # Matches as int32 rows and int8 lanes straight from the compiled matchers where they fit
    # (ground-truth rows of the whole `gt`: they are written over the sorted rows below).
    narrow = (
        lane_dtype(n_lane).itemsize <= 2 and row_dtype(n_det) == np.int32 and row_dtype(len(gt)) == np.int32
    )
    # With a progress callback, parts of about n_det / 16 detections, so that it moves inside
    # the stage (the parts' table is the one-pass table).
    chunk = _MATCH_CHUNK if progress is None else min(_MATCH_CHUNK, max(1, -(-len(det_rows) // 16)))
    bounds = _chunk_bounds(det_key_kept, n_class, chunk)
    if len(bounds) == 2:  # one chunk: its outcome is the table's
        tp, ignored, (match_lane, match_det, match_gt) = _match_chunk(
            gt, dt, protocol, masks, det_rows, det_key_kept, sorted_truth, thresholds, narrow
        )
        del det_key_kept
        if progress is not None:
            progress(n_det, n_det)
    else:
        # Image shards of the sorted detections, matched one at a time: the pairs, IoUs and the
        # matcher's working set exist for one shard only (a bounded working set); the flags go
        # into the table's arrays, the matches are laid out lane-major at the end, so the table
        # is the one a single pass makes (tests/unit/test_match_chunks.py).
        tp, ignored = LaneFlags.zeros(n_lane, n_det), LaneFlags.zeros(n_lane, n_det)
        parts = []
        for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
            part_tp, part_ignored, part = _match_chunk(
                gt,
                dt,
                protocol,
                masks,
                det_rows[start:stop],
                det_key_kept[start:stop],
                sorted_truth,
                thresholds,
                narrow,
                det_offset=int(start),
            )
            tp.bits[start:stop] = part_tp.bits
            ignored.bits[start:stop] = part_ignored.bits
            parts.append(part)
            del part_tp, part_ignored, part
            if progress is not None:
                progress(int(stop), n_det)
        del det_key_kept
        match_lane, match_det, match_gt = _table_rows(parts, n_lane, n_det, len(gt))
        del parts
    del sorted_truth, gt_groups, gt_rows  # freed before the table's detection columns are made
    n_positive = np.zeros((n_class, n_area), dtype=np.int64)
    for a in range(n_area):
        counted = gt_sel[~is_ignored[a, gt_sel]]
        n_positive[:, a] = np.bincount(gt.category[counted], minlength=n_class)
    return MatchTable(
        det_score=dt.score[det_rows],
        det_class=dt.category[det_rows],
        det_image=dt.image[det_rows],
        det_rank=det_rank,
        det_order=dt.order[det_rows],
        match_lane=match_lane,
        match_det=match_det,
        match_gt=match_gt,
        tp=tp,
        ignored=ignored,
        n_positive=n_positive,
        n_det_per_class=n_det_per_class,
        n_over_max_dets=n_over,
    )


#: Detections matched in one pass of :func:`match` (whole images): beyond, the sorted detections
#: are matched in image shards of about this many, so the pairs, IoUs and the matcher's working
#: set stay bounded (about 30 MiB at COCO's shape) whatever the dataset's size.
_MATCH_CHUNK = 1 << 18


@dataclass(frozen=True, eq=False)
class _SortedTruth:
    """The ground truth as :func:`_match_chunk` reads it: sorted by (image, class), with its flags."""

    groups: Groups
    rows: np.ndarray  # rows of the (pooled) ground truth, in sorted order
    is_ignored: np.ndarray  # bool (n_area, n_sorted)
    is_reusable: np.ndarray
    is_unmatchable: np.ndarray
    is_group: np.ndarray  # group-of boxes matched in Open Images' second stage
    labels: FederatedLabels | None  # federated_labels: lvis


def _chunk_bounds(det_key: np.ndarray, n_class: int, size: int) -> np.ndarray:
    """Starts of shards of about ``size`` sorted detections, each made of whole images, and the end."""
    n = len(det_key)
    if n <= size:
        return np.array([0, n], dtype=np.int64)
    image = det_key[::size] // n_class  # the image at every size-th row: its first row starts a shard
    starts = np.searchsorted(det_key, image * n_class, side="left")
    return np.unique(np.concatenate([starts, [n]])).astype(np.int64)


def _match_chunk(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    masks: PreparedMasks | None,
    det_rows: np.ndarray,
    det_key: np.ndarray,
    truth: _SortedTruth,
    thresholds: np.ndarray,
    narrow: bool,
    *,
    det_offset: int | None = None,
) -> tuple[LaneFlags, LaneFlags, list]:
    """Match whole images' detections (rows of ``dt`` sorted by (image, class, rank)).

    Returns the packed true-positive and ignored flags and the matches, ``[match_lane, match_det,
    match_gt]`` sorted by (lane, detection) as every matcher sorts them.

    ``det_offset`` is given for a shard of a larger table: the matches are then copied out of the
    matcher's buffer, a column each, with detection rows of the table (shard row + offset).
    """
    n_class = gt.n_classes
    n_area = truth.is_ignored.shape[0]
    n_lane = n_area * len(thresholds)
    strict = protocol.iou_comparison == ">"
    pair_det, pair_gt = candidate_pairs(det_key, truth.groups)
    # Group-of pairs (group_of: openimages) are scored by intersection over the detection's
    # area: the crowd overlap of pycocotools, so one IoU call computes both.
    pair_is_group = truth.is_group[pair_gt]
    pair_ious = pair_iou(
        gt,
        dt,
        truth.rows[pair_gt],
        det_rows[pair_det],
        truth.is_reusable[pair_gt] | pair_is_group,
        protocol,
        masks,
    )
    group_pairs = (pair_det[pair_is_group], pair_gt[pair_is_group], pair_ious[pair_is_group])
    if pair_is_group.any():
        pair_det, pair_gt, pair_ious = (
            pair_det[~pair_is_group],
            pair_gt[~pair_is_group],
            pair_ious[~pair_is_group],
        )
    del pair_is_group

    det_out = outside_area_ranges(_det_area(dt, det_rows, protocol, masks), protocol)
    if truth.labels is not None:
        # lvis-api: an unmatched detection of a class not exhaustively annotated on its image is
        # ignored (at every threshold where it is unmatched), like one outside the area range.
        labels = truth.labels
        det_out = (
            det_out
            | labels.has_pair(
                labels.not_exhaustive_image,
                labels.not_exhaustive_category,
                dt.image[det_rows],
                dt.category[det_rows],
                n_class=n_class,
            )[None, :]
        )
    n_gt = len(truth.rows)
    if protocol.matching == "ultralytics":
        result = match_ultralytics(
            pair_det,
            pair_gt,
            pair_ious,
            n_det=len(det_rows),
            n_gt=n_gt,
            iou_thresholds=thresholds,
            gt_is_ignored=truth.is_ignored,
            det_is_out_of_range=det_out,
            strict=strict,
        )
    elif protocol.matching == "coco":
        result = match_coco(
            pair_det,
            pair_gt,
            pair_ious,
            det_key=det_key,
            n_gt=n_gt,
            iou_thresholds=thresholds,
            gt_is_ignored=truth.is_ignored,
            gt_is_reusable=truth.is_reusable,
            gt_is_unmatchable=truth.is_unmatchable,
            det_is_out_of_range=det_out,
            strict=strict,
            narrow=narrow,
            gt_ties=protocol.gt_ties,
        )
    else:
        result = match_voc(
            pair_det,
            pair_gt,
            pair_ious,
            n_det=len(det_rows),
            n_gt=n_gt,
            iou_thresholds=thresholds,
            gt_is_ignored=truth.is_ignored,
            det_is_out_of_range=det_out,
            strict=strict,
            narrow=narrow,
        )
    del pair_det, pair_gt, pair_ious, det_out  # freed before the table's columns are made
    if protocol.group_of == "openimages":
        result = match_group_of(
            result,
            *group_pairs,
            iou_thresholds=thresholds,
            gt_is_ignored=truth.is_ignored,
            strict=strict,
        )
    del group_pairs
    if det_offset is None:
        # Ground-truth rows of the whole `gt`, written over the matcher's rows of the sorted
        # ground truth: the result's arrays are this call's own, and the compiled matcher's
        # three match arrays share one buffer that a new array would keep alive beside it.
        result.match_gt[...] = truth.rows[result.match_gt]
        columns = [
            result.match_lane.astype(lane_dtype(n_lane), copy=False),
            result.match_det.astype(row_dtype(len(det_rows)), copy=False),
            result.match_gt.astype(row_dtype(len(gt)), copy=False),
        ]
    else:  # separate arrays, so that each column is freed once the table's is laid out
        match_det = result.match_det.astype(row_dtype(det_offset + len(det_rows)))
        match_det += det_offset
        columns = [
            result.match_lane.astype(lane_dtype(n_lane)),
            match_det,
            truth.rows[result.match_gt].astype(row_dtype(len(gt)), copy=False),
        ]
    return result.tp, result.ignored, columns


def _table_rows(parts: list, n_lane: int, n_det: int, n_gt: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shards' matches as the table's (match_lane, match_det, match_gt), sorted by (lane, detection).

    Each shard's matches are sorted by lane, then detection, and the shards come in detection
    order: lane by lane, the shards' runs follow each other. The columns are laid out one at a
    time, each shard's column dropped once copied (the peak is one column, not the table).
    """
    counts = [np.bincount(part[0].astype(np.int64), minlength=n_lane) for part in parts]
    counts_arr = np.array(counts, dtype=np.int64).reshape(len(parts), n_lane)
    first_in_part = np.cumsum(counts_arr, axis=1) - counts_arr
    out = []
    for k, dtype in enumerate((lane_dtype(n_lane), row_dtype(n_det), row_dtype(n_gt))):
        column = np.empty(int(counts_arr.sum()), dtype=dtype)
        at = 0
        for lane in range(n_lane):
            for p, part in enumerate(parts):
                size = int(counts_arr[p, lane])
                if size:
                    first = int(first_in_part[p, lane])
                    column[at : at + size] = part[k][first : first + size]
                    at += size
        for part in parts:
            part[k] = None
        out.append(column)
    return out[0], out[1], out[2]


def _kept_detections(
    gt: GroundTruth, dt: Detections, protocol: Protocol, det_sel: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """The detections :func:`match` scores, sorted by (image, class, rank), within ``max_dets``.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol
    det_sel : int64 (n_sel,) or None
        Rows of the shard's detections; None for all of them.

    Returns
    -------
    det_rows : (n_kept,)
        Rows of ``dt``, in (image, class, rank) order.
    det_key : int64 (n_kept,)
        Their group (``image * n_class + class``), non-decreasing.
    det_rank : int32 (n_kept,), int64 beyond 2**31 rows
        Their rank in their group (in their image under ``max_dets_scope: image``).
    n_over : int
        Detections beyond ``max(max_dets)``.
    n_det_per_class : int64 (n_class,)
        Every selected detection of each class (before ``max_dets``).
    """
    n_class = gt.n_classes
    det_sel = np.arange(len(dt)) if det_sel is None else det_sel
    if (
        protocol.iou_type == "keypoints"
        and protocol.empty_keypoint_detections == "drop"
        and dt.keypoints is not None
    ):
        # xtcocotools' _prepare: a result none of whose keypoints has a score > 0 is dropped.
        det_sel = det_sel[(dt.keypoints[det_sel, :, 2] > 0).any(axis=1)]
    det_sel, image_rank = _dataset_wide_selection(gt, dt, protocol, det_sel)
    every = len(det_sel) == len(dt)  # every detection, in row order (det_sel is then an arange)
    if every:  # the columns themselves, no copies
        image, category, det_score, det_order = dt.image, dt.category, dt.score, dt.order
    else:
        image, category = dt.image[det_sel], dt.category[det_sel]
        det_score, det_order = dt.score[det_sel], dt.order[det_sel]
    n_det_per_class = np.bincount(category, minlength=n_class)
    det_key = np.multiply(image, n_class, dtype=np.int64)
    det_key += category
    del image, category
    # Rows by (image, class), then descending score, then file order (lexsort's result).
    order = by_group_then_descending(det_key, det_score, (det_order,))
    del det_score, det_order
    sorted_key = det_key[order]
    del det_key
    # Rows of dt: the order itself when every detection was selected (int32 from the compiled
    # sort, no int64 copy), else the selected rows it orders.
    det_rows = order if every else det_sel[order]
    del order
    det_rank_all = rank_in_group(sorted_key)
    if image_rank is not None:  # max_dets_scope "image": the rank among all the image's results
        det_rank_all = image_rank[det_rows]
    det_rank_all = det_rank_all.astype(row_dtype(len(dt)), copy=False)  # ranks < rows: int32
    cap = None if protocol.max_dets is None else max(protocol.max_dets)
    if cap is None:
        return det_rows, sorted_key, det_rank_all, 0, n_det_per_class
    keep = det_rank_all < cap
    n_over = len(keep) - int(np.count_nonzero(keep))
    return det_rows[keep], sorted_key[keep], det_rank_all[keep], n_over, n_det_per_class


def _checked_masks(
    gt: GroundTruth, dt: Detections, protocol: Protocol, masks: PreparedMasks | None
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
        from deteval.io.coco import require_boxes

        require_boxes(dt)
        return None
    if protocol.iou_type == "rotated":  # hook: deteval.geometry.rotated
        require_rotated(gt, dt, protocol)
        return None
    if protocol.iou_type == "keypoints":
        from deteval.io.coco import require_keypoints

        require_keypoints(
            gt, dt, n_sigmas=None if protocol.keypoint_sigmas is None else len(protocol.keypoint_sigmas)
        )
        return None
    if masks is None:
        return prepare_masks(gt, dt, protocol)
    if not masks.is_for(gt, dt):
        raise ConfigError(
            "match: `masks` were prepared from other ground truth or detections; "
            "expected prepare_masks(gt, dt, protocol) of the objects being matched, "
            f"found masks of {masks.gt.source!r} / {masks.dt.source!r}"
        )
    return masks


def _federated_labels(gt: GroundTruth, protocol: Protocol) -> FederatedLabels:
    """The federated labels of ``gt``, which ``federated_labels: lvis`` needs.

    Raises
    ------
    InputError
        Ground truth without LVIS' federated labels.
    """
    labels = gt.federated
    if labels is None:
        raise InputError(
            f"{gt.source}: protocol {protocol.name!r} scores LVIS' federated labels, but no "
            f"image has `neg_category_ids` / `not_exhaustive_category_ids`; expected LVIS "
            f"ground truth (or a protocol with federated_labels: ignore)"
        )
    return labels


def _rank_in(key: np.ndarray, dt: Detections) -> np.ndarray:
    """Rank of each detection among those of its ``key`` by score, ties in file order (row order)."""
    groups = group_rows(key, -dt.score, dt.order)
    rank = np.empty(len(dt), dtype=row_dtype(len(dt)))
    rank[groups.order] = rank_in_group(groups.key)
    return rank


def _dataset_wide_selection(
    gt: GroundTruth, dt: Detections, protocol: Protocol, det_sel: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """The detections the protocol scores at all, and their rank in their image (scope "image").

    Computed over all detections whatever the shard, so shards still merge exactly.

    Notes
    -----
    In this order, each on the detections left by the one before: ``max_dets_per_class`` keeps
    each class's top-scoring detections over the dataset (Fixed AP, Dave et al. 2021);
    ``max_dets_scope: image`` ranks each image's results across classes (lvis-api's
    ``LVISResults.limit_dets_per_image``, a stable sort: ties in file order), and the cap on
    that rank is applied as ``max_dets``; ``federated_labels: lvis`` then drops detections of a
    class that is neither annotated nor negative on their image (``LVISEval._prepare``), so
    they neither count nor use up the image's cap afterwards -- the cap came first.
    """
    is_kept = np.ones(len(dt), dtype=bool)
    if protocol.max_dets_per_class is not None:
        is_kept &= _rank_in(dt.category.astype(np.int64), dt) < protocol.max_dets_per_class
    image_rank = None
    if protocol.max_dets_scope == "image":
        # Detections outside the class budget take no place in the image's ranking.
        image_key = np.where(is_kept, dt.image.astype(np.int64), -1)
        image_rank = _rank_in(image_key, dt)
    if protocol.federated_labels == "lvis":
        labels = _federated_labels(gt, protocol)
        n_class = gt.n_classes
        is_annotated = labels.has_pair(gt.image, gt.category, dt.image, dt.category, n_class=n_class)
        is_negative = labels.has_pair(
            labels.neg_image, labels.neg_category, dt.image, dt.category, n_class=n_class
        )
        is_kept &= is_annotated | is_negative
    if is_kept.all():
        return det_sel, image_rank
    return det_sel[is_kept[det_sel]], image_rank


def merge_match_tables(tables: list) -> MatchTable:
    """Concatenate the match tables of disjoint image shards (same GT categories, same protocol).

    The merged table accumulates to exactly the numbers of one run over all images.
    """
    if len(tables) == 1:
        return tables[0]
    cat = np.concatenate
    sizes = [len(t.det_score) for t in tables]
    offsets = np.cumsum([0] + sizes[:-1])
    return MatchTable(
        det_score=cat([t.det_score for t in tables]),
        det_class=cat([t.det_class for t in tables]),
        det_image=cat([t.det_image for t in tables]),
        det_rank=cat([t.det_rank for t in tables]),
        det_order=cat([t.det_order for t in tables]),
        match_lane=cat([t.match_lane for t in tables]),
        match_det=_shifted_rows([t.match_det for t in tables], offsets, sum(sizes)),
        match_gt=narrow_rows(cat([t.match_gt for t in tables])),
        tp=LaneFlags.concatenate([t.tp for t in tables]),
        ignored=LaneFlags.concatenate([t.ignored for t in tables]),
        n_positive=sum(t.n_positive for t in tables),
        n_det_per_class=sum(t.n_det_per_class for t in tables),
        n_over_max_dets=sum(t.n_over_max_dets for t in tables),
    )


def _shifted_rows(parts: list, offsets: np.ndarray, n_row: int) -> np.ndarray:
    """The parts' rows, each shifted by its offset, in one array of the narrowest row dtype."""
    out = np.empty(sum(len(p) for p in parts), dtype=row_dtype(n_row))
    at = 0
    for part, offset in zip(parts, offsets, strict=True):
        out[at : at + len(part)] = part
        out[at : at + len(part)] += int(offset)
        at += len(part)
    return out


def ranking_order(table: MatchTable, protocol: Protocol) -> np.ndarray:
    """Global ranking grouped by class; ties as the reference tool breaks them.

    Notes
    -----
    pycocotools concatenates each image's score-sorted list in image-id order, then sorts by
    ``-score`` with a stable mergesort: ties go by (image id, rank in image). The VOC devkit
    sorts a class's result file stably: ties go by file order.
    """
    if protocol.score_order == "image_major":
        if _in_image_class_rank_order(table):
            # Within a class the rows already come by (image, rank): a stable sort by (class,
            # -score) leaves ties in that order, which is the order the full key gives.
            return by_group_then_descending(table.det_class, table.det_score)
        return by_group_then_descending(table.det_class, table.det_score, (table.det_rank, table.det_image))
    return by_group_then_descending(table.det_class, table.det_score, (table.det_order,))


def _in_image_class_rank_order(table: MatchTable) -> bool:
    """Whether the table's rows are sorted by (image, class, rank), as one :func:`match` makes them.

    Compared a block of rows at a time with comparisons of neighbours (bool arrays of one block;
    no differences of the whole columns).
    """
    image, cls, rank = table.det_image, table.det_class, table.det_rank
    n = len(image)
    for start in range(0, max(n - 1, 0), _ORDER_CHECK_BLOCK):
        a = slice(start, min(start + _ORDER_CHECK_BLOCK, n - 1))  # rows compared with the next
        b = slice(a.start + 1, a.stop + 1)
        same_image = image[b] == image[a]
        same_class = cls[b] == cls[a]
        in_order = (
            (image[b] > image[a])
            | (same_image & (cls[b] > cls[a]))
            | (same_image & same_class & (rank[b] > rank[a]))
        )
        if not in_order.all():
            return False
    return True


#: Rows compared at a time by :func:`_in_image_class_rank_order`.
_ORDER_CHECK_BLOCK = 1 << 20


@dataclass(frozen=True, eq=False)
class EvalResult:
    """The outcome of :func:`evaluate`.

    Attributes
    ----------
    protocol : Protocol
    metrics : dict
        Headline numbers (``AP``, ``AP50``, ... or ``mAP``); NaN where undefined.
    per_class : list of dict
        ``{category_id, name, AP, num_gt, num_det}`` then the class's value of each headline
        term (``AP50``, ``AP75``, ``APs`` ... ``AR1``, ``AR10``, ``AR100`` ...:
        :func:`deteval.summary.per_class_terms`); NaN where undefined (a class without ground
        truth).
    precision, scores : float64 (n_iou_thr, n_recall_thr, n_class, n_area, n_max_dets)
        pycocotools' axis order (T x R x K x A x M); NaN where pycocotools stores -1.
    recall : float64 (n_iou_thr, n_class, n_area, n_max_dets)
    ap : float64 (n_iou_thr, n_class, n_area, n_max_dets)
    category_ids : tuple of int
    table : MatchTable
        Who matched whom (for explanations and PR curves; see :mod:`deteval.analysis`).
    warnings : tuple of str
        Counted warnings about the input (``--strict`` makes them errors).
    notes : tuple of str
        What the protocol defines for this input that a reader should know (classes without
        ground truth); informational, never an error.
    inputs : dict
    image_ids, annotation_ids : int64 arrays
        The ground truth's image ids and annotation ids (to name matches).
    best_f1 : dict
        Best-F1 operating points per class and overall
        (:func:`deteval.operating_points.best_f1_points`); NaN where undefined. Computed on
        first access (the JSON, a report or the caller), then kept: a run that never reads it
        does not pay for it; the numbers are the same.
    best_f1_source : callable or dict, optional
        What ``best_f1`` is made from: a dict as is, or a function of no arguments called on
        first access (:func:`score` passes one).
    per_image : PerImage or None
        Per-image diagnostics (:func:`deteval.per_image.per_image`), on request only
        (``deteval.evaluate(..., per_image=True)``, ``--per-image``): None otherwise, so an
        ordinary run does not pay for them.
    matches : ExplainedMatches or None
        Every detection and missed object explained (:func:`deteval.per_image.explained_matches`),
        on request only (``deteval.evaluate(..., matches=True)``, ``--matches``).
    """

    protocol: Protocol
    metrics: dict
    per_class: list
    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    ap: np.ndarray
    category_ids: tuple
    category_names: tuple
    table: MatchTable
    warnings: tuple = field(default=())
    notes: tuple = field(default=())
    inputs: dict = field(default_factory=dict)
    image_ids: np.ndarray | None = None
    annotation_ids: np.ndarray | None = None
    best_f1_source: Any = field(default=None, repr=False)
    per_image: Any = None
    matches: Any = None

    @cached_property
    def best_f1(self) -> dict:
        """Best-F1 operating points (see the class docstring), computed on first access."""
        source = self.best_f1_source
        return dict(source() if callable(source) else (source or {}))

    def to_dict(self) -> dict:
        """One entry of the JSON contract's ``results`` (NaN -> None); ``per_image`` / ``matches`` when computed."""
        out = {
            "protocol": self.protocol.name,
            "iou_type": self.protocol.iou_type,
            "protocol_hash": self.protocol.fingerprint(),
            "config": self.protocol.to_dict(),
            "metrics": {k: none_if_nan(v) for k, v in self.metrics.items()},
            "per_class": [{k: _json_value(v) for k, v in c.items()} for c in self.per_class],
            "best_f1": _json_value(self.best_f1),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }
        if self.per_image is not None:
            out["per_image"] = self.per_image.to_dict()
        if self.matches is not None:
            out["matches"] = self.matches.to_dict(self)
        return out


def _json_value(value: object) -> object:
    """``value`` with every float NaN (nested in dicts and lists) as None (JSON ``null``)."""
    if isinstance(value, float):
        return none_if_nan(value)
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def _parity_warnings(gt: GroundTruth, protocol: Protocol) -> list:
    """Say when the input triggers a pycocotools bug that the protocol reproduces."""
    out = []
    if protocol.gt_id_zero == "unmatchable":
        n_zero = int((gt.annotation_id == 0).sum())
        if n_zero:
            out.append(
                f"{n_zero} annotation(s) with id 0: a detection matched to one counts as a false "
                f"positive, as in pycocotools (its match flag is the annotation id); protocol "
                f"'coco' matches them normally"
            )
    if protocol.gt_ignore_field == "iscrowd":
        n_lost = int((gt.is_ignore & ~gt.is_crowd).sum())
        if n_lost:
            out.append(
                f"{n_lost} annotation(s) with `ignore: 1` scored as normal objects: pycocotools "
                f"overwrites `ignore` with `iscrowd`; protocol 'coco' honours the ignore field"
            )
    return out


def _federated_warnings(gt: GroundTruth, protocol: Protocol) -> list:
    """Say when LVIS ground truth is scored without its federated labels, or the reverse."""
    labels = gt.federated
    if labels is None or protocol.federated_labels != "ignore":
        if protocol.summary == "lvis" and gt.category_frequency is None:
            return ["no category has an LVIS `frequency`: APr, APc and APf are undefined"]
        return []
    n_images = len(np.unique(np.concatenate([labels.neg_image, labels.not_exhaustive_image])))
    return [
        f"{n_images} image(s) carry LVIS federated labels (neg_category_ids / "
        f"not_exhaustive_category_ids) that protocol {protocol.name!r} ignores: detections of "
        f"unverified classes count as false positives; use protocol 'lvis' to apply them"
    ]


def score(
    table: MatchTable,
    gt: GroundTruth,
    protocol: Protocol,
    *,
    warnings: tuple = (),
    inputs: dict | None = None,
) -> EvalResult:
    """Accumulate a :class:`MatchTable` into an :class:`EvalResult`.

    Under ``class_agnostic`` the result has the one pooled class of
    :func:`deteval.pooling.ground_truth_for` (``gt`` may be given pooled or not).
    """
    gt = ground_truth_for(gt, protocol)
    ranking = ranking_order(table, protocol)
    acc = accumulate(
        table.tp,
        table.ignored,
        table.det_score,
        table.det_class,
        table.det_rank,
        ranking,
        table.n_positive,
        protocol,
    )
    per_class_ap = np.array(
        [class_ap(acc.precision, acc.ap, protocol, k) for k in range(gt.n_classes)], dtype=np.float64
    )
    is_crowd_summary = protocol.summary == "crowdpose" and not protocol.is_single_threshold
    band_precision = _crowd_band_precision(table, gt, protocol) if is_crowd_summary else None
    metrics = headline_metrics(
        acc, per_class_ap, protocol, category_frequency=gt.category_frequency, band_precision=band_precision
    )
    class_terms = class_metrics_all(acc, protocol)  # every class at once (LVIS: 1,203 of them)
    per_class = [
        {
            "category_id": int(gt.category_id[k]),
            "name": gt.category_name[k],
            "AP": float(per_class_ap[k]),
            "num_gt": int(table.n_positive[k, 0]),
            "num_det": int(table.n_det_per_class[k]),
            **class_terms[k],
        }
        for k in range(gt.n_classes)
    ]
    # On demand (EvalResult.best_f1): a run that never reads it does not pay for it.
    best_f1 = partial(
        _best_f1, table, ranking, tuple(int(c) for c in gt.category_id), tuple(gt.category_name), protocol
    )
    notes = list(warnings)
    info = []
    undefined = [gt.category_name[k] for k in range(gt.n_classes) if table.n_positive[k, 0] == 0]
    if undefined:
        info.append(
            f"{len(undefined)} {'class has' if len(undefined) == 1 else 'classes have'} no ground "
            f"truth counted under this protocol (AP undefined, left out of the mean): "
            f"{undefined[:10]}"
        )
    notes.extend(_parity_warnings(gt, protocol))
    notes.extend(_federated_warnings(gt, protocol))
    if table.n_over_max_dets and protocol.max_dets is not None:  # only a cap leaves some out
        scope = "image" if protocol.max_dets_scope == "image" else "image and class"
        notes.append(
            f"{table.n_over_max_dets} detections beyond max_dets={max(protocol.max_dets)} "
            f"in their {scope} were not scored (as the protocol says)"
        )
    if (
        protocol.summary == "pycocotools"
        and protocol.iou_type != "keypoints"
        and protocol.max_dets is not None
        and 100 not in protocol.max_dets
    ):
        notes.append(
            "summary=pycocotools computes AP at maxDets=100 as pycocotools does; 100 is not "
            "in max_dets, so AP is undefined (pycocotools prints -1): set summary: configured"
        )
    return EvalResult(
        protocol=protocol,
        metrics=metrics,
        per_class=per_class,
        precision=acc.precision,
        recall=acc.recall,
        scores=acc.scores,
        ap=acc.ap,
        category_ids=tuple(int(c) for c in gt.category_id),
        category_names=tuple(gt.category_name),
        table=table,
        image_ids=gt.image_id,
        annotation_ids=gt.annotation_id,
        best_f1_source=best_f1,
        warnings=tuple(notes),
        notes=tuple(info),
        inputs=dict(inputs or {}),
    )


def _best_f1(
    table: MatchTable, ranking: np.ndarray, category_ids: tuple, names: tuple, protocol: Protocol
) -> dict:
    """``EvalResult.best_f1`` of a scored table (:func:`deteval.operating_points.best_f1_points`)."""
    lane = default_iou_index(protocol)  # first area range
    return best_f1_points(
        table.lane_is_tp(lane),
        table.lane_is_ignored(lane),
        table.det_score,
        table.det_class,
        ranking,
        table.n_positive[:, 0],
        category_ids,
        names,
        protocol,
    )


def _crowd_band_precision(table: MatchTable, gt: GroundTruth, protocol: Protocol) -> tuple:
    """The precision of the images of each crowd-index band (``summary: crowdpose``).

    xtcocotools evaluates each band again with ``params.imgIds`` set to its images; matching is
    per image, so this is the table's rows of those images, accumulated on their own.

    Raises
    ------
    InputError
        Ground truth without CrowdPose's ``crowdIndex`` on its images.
    """
    if gt.image_crowd_index is None:
        raise InputError(
            f"{gt.source}: protocol {protocol.name!r} splits AP by CrowdPose's crowd index, but no "
            f"image has `crowdIndex`; expected CrowdPose ground truth (a `crowdIndex` number on "
            f"every image) or a protocol with another summary"
        )
    is_ignored, _, _ = ground_truth_flags(gt, protocol)
    out = []
    for _, lo, hi in CROWD_INDEX_BANDS:
        is_in = (gt.image_crowd_index >= lo) & (gt.image_crowd_index < hi)
        det_sel = np.flatnonzero(is_in[table.det_image])
        n_positive = np.zeros_like(table.n_positive)
        for a in range(n_positive.shape[1]):
            counted = ~is_ignored[a] & is_in[gt.image]
            n_positive[:, a] = np.bincount(gt.category[counted], minlength=gt.n_classes)
        band = replace(
            table,
            det_score=table.det_score[det_sel],
            det_class=table.det_class[det_sel],
            det_image=table.det_image[det_sel],
            det_rank=table.det_rank[det_sel],
            det_order=table.det_order[det_sel],
            tp=LaneFlags(bits=table.tp.bits[det_sel], n_lane=table.tp.n_lane),
            ignored=LaneFlags(bits=table.ignored.bits[det_sel], n_lane=table.ignored.n_lane),
            n_positive=n_positive,
        )
        acc = accumulate(
            band.tp,
            band.ignored,
            band.det_score,
            band.det_class,
            band.det_rank,
            ranking_order(band, protocol),
            band.n_positive,
            protocol,
        )
        out.append(acc.precision)
    return tuple(out)


def check_protocol(protocol: Protocol) -> None:
    """Refuse protocol combinations that cannot be scored (before any work is done).

    pycocotools' summary reads ``max_dets[0..2]``, so ``summary: pycocotools`` needs three (its
    keypoint summary reads maxDets=20 by value and needs none). ``gt_ties`` other than ``last``
    needs ``matching: coco`` and ``curve_end`` other than ``slope`` needs ``ap_method:
    trapezoid_101`` (the only code that reads them: elsewhere they would change nothing).
    """
    if (
        protocol.summary == "pycocotools"
        and protocol.iou_type != "keypoints"
        and not protocol.is_single_threshold
        and (protocol.max_dets is None or len(protocol.max_dets) < 3)
    ):
        raise ConfigError(
            f"protocol {protocol.name!r}: summary 'pycocotools' needs three max_dets "
            f"(it reads max_dets[0..2]), found {protocol.max_dets}; "
            f"set summary: configured"
        )
    if protocol.gt_ties != "last" and protocol.matching != "coco":
        raise ConfigError(
            f"protocol {protocol.name!r}: gt_ties {protocol.gt_ties!r} is read by matching: coco "
            f"only, found matching {protocol.matching!r}; expected gt_ties: last (or matching: coco)"
        )
    if protocol.curve_end != "slope" and protocol.ap_method != "trapezoid_101":
        raise ConfigError(
            f"protocol {protocol.name!r}: curve_end {protocol.curve_end!r} is read by ap_method: "
            f"trapezoid_101 only, found ap_method {protocol.ap_method!r}; expected curve_end: slope "
            f"(or ap_method: trapezoid_101)"
        )
    if protocol.class_agnostic and (protocol.federated_labels == "lvis" or protocol.summary == "lvis"):
        raise ConfigError(
            f"protocol {protocol.name!r}: class_agnostic pools every category into one, but "
            f"LVIS' federated labels and frequency groups name categories; expected "
            f"federated_labels: ignore and a summary other than 'lvis' (or class_agnostic: false)"
        )
