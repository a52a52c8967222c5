"""``match``: detections to ground truth under a protocol, in image shards of bounded size, into one table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import numpy as np

from deteval import _speedups
from deteval._dtypes import lane_dtype, row_dtype
from deteval._parallel import kernel_threads
from deteval._values import frozen
from deteval.data import Detections, FederatedLabels, GroundTruth, boxes_as
from deteval.evaluate import threads as per_thread
from deteval.evaluate.flags import _det_area, ground_truth_flags, outside_area_ranges
from deteval.evaluate.iou import _checked_masks, pair_iou
from deteval.evaluate.selection import _federated_labels, _kept_detections
from deteval.evaluate.table import MatchTable, _table_rows
from deteval.geometry.boxes import pair_box_iou
from deteval.geometry.keypoints import OKS_PAIRS_PER_THREAD
from deteval.grouping import (
    Groups,
    candidate_pairs,
    group_rows,
    require_pairs,
)
from deteval.matching import LaneFlags, match_coco, match_voc
from deteval.memory import BYTES_PER_PAIR, available_bytes, release_free_memory, require_match
from deteval.pooling import pooled_for
from deteval.protocol import Protocol, resolve_protocol

if TYPE_CHECKING:  # the mask code is imported where masks are scored
    from deteval.geometry.masks import PreparedMasks


def match(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    *,
    images: np.ndarray | None = None,
    masks: PreparedMasks | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | str | None = 1,
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
    workers : int or "auto"
        Threads of the compiled kernels (the sort of the detections, the matching): that many,
        at most the usable CPUs, ``"auto"`` by each call's size
        (:func:`deteval._parallel.kernel_threads`). The table is the same for every value.

    Returns
    -------
    MatchTable
        Plain arrays (picklable): ground-truth rows refer to the whole ``gt`` (to the pooled
        ``gt`` under ``class_agnostic``: :func:`deteval.pooling.ground_truth_for`, the ground
        truth :func:`score` reads the table with).

    Raises
    ------
    ConfigError
        ``masks`` prepared from other ground truth or detections; a protocol that cannot be
        scored (:meth:`~deteval.protocol.Protocol.check_scorable`); a protocol with Open Images
        label rules (``hierarchy_expansion``, ``image_level_labels``) and ground truth they
        were not applied to (:func:`deteval.openimages.apply_challenge_rules`).
    """
    protocol = resolve_protocol(protocol)
    protocol.check_scorable("match")  # before any work is done
    if protocol.hierarchy_expansion != "none" or protocol.image_level_labels != "none":
        from deteval.openimages import refuse_unapplied_label_rules  # Open Images' code, only then

        refuse_unapplied_label_rules(gt, protocol)  # openimages-challenge: rules applied by the caller
    pooled_gt, pooled_dt = pooled_for(gt, dt, protocol)  # class_agnostic: one class, useCats=0
    if pooled_gt is not gt:
        if masks is not None and masks.is_for(gt, dt):
            masks = None  # prepared from the unpooled values: their ground-truth rows moved
        gt, dt = pooled_gt, pooled_dt
    masks = _checked_masks(gt, dt, protocol, masks, workers=workers)
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
    det_rows, det_key_kept, det_rank, n_over, n_det_per_class = _kept_detections(
        gt, dt, protocol, det_sel, workers=workers
    )

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
            gt, dt, protocol, masks, det_rows, det_key_kept, sorted_truth, thresholds, narrow, workers=workers
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
                workers=workers,
            )
            tp.bits[start:stop] = part_tp.bits
            ignored.bits[start:stop] = part_ignored.bits
            parts.append(part)
            del part_tp, part_ignored, part
            if progress is not None:
                progress(int(stop), n_det)
        del det_key_kept
        # the chunks' freed temporaries back to the system before the table is built (the heap
        # kept them for the next chunk: memory.map_large_allocations' keep_free)
        release_free_memory()
        match_lane, match_det, match_gt = _table_rows(parts, n_lane, n_det, len(gt))
        del parts
    del sorted_truth, gt_groups, gt_rows  # freed before the table's detection columns are made
    if len(bounds) > 2:
        release_free_memory()  # and the parts' matches, now in the table's columns
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


@frozen(eq=False)
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
    # Non-decreasing (det_key is sorted): drop repeats by neighbour, as np.unique would, without
    # np.unique's import of numpy.ma (~15 ms on every run with a progress callback, the CLI's).
    bounds = np.concatenate([starts, [n]]).astype(np.int64)
    return bounds[np.concatenate([[True], bounds[1:] != bounds[:-1]])]


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
    workers: int | str | None = 1,
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
    if (
        protocol.iou_type == "bbox"
        and masks is None
        and protocol.box_convention == "continuous"
        and (protocol.group_of != "openimages")
    ):
        # Boxes (no group-of pairs): the pairs and their IoUs in one compiled pass, without
        # the per-pair gathers of rows, boxes and crowd flags.
        pair_det, pair_gt, pair_ious = box_pairs(
            det_key,
            truth.groups.key,
            det_rows,
            truth.rows,
            boxes_as(dt.box, dt.box_format, "xywh"),
            boxes_as(gt.box, gt.box_format, "xywh"),
            truth.is_reusable,
            threads=kernel_threads(workers, len(det_rows), per_thread.BOX_PAIRS_PER_THREAD),
        )
        group_pairs: tuple[np.ndarray, ...] = ()
    else:
        pair_det, pair_gt, pair_ious, group_pairs = _pairs_and_ious(
            gt, dt, protocol, masks, det_rows, det_key, truth, workers=workers
        )
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
        from deteval.matching.others import match_ultralytics  # Ultralytics' presets only

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
            threads=kernel_threads(workers, len(pair_det), per_thread.MATCH_PER_THREAD),
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
    if group_pairs:
        from deteval.matching.others import match_group_of  # Open Images' group-of boxes only

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


def _pairs_and_ious(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    masks: PreparedMasks | None,
    det_rows: np.ndarray,
    det_key: np.ndarray,
    truth: _SortedTruth,
    *,
    workers: int | str | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """The candidate pairs of a shard and their IoUs (any overlap), and its group-of pairs apart.

    ``(pair_det, pair_gt, pair_iou, group_pairs)``; ``group_pairs`` is ``(pair_det, pair_gt,
    pair_iou)`` of the group-of pairs under ``group_of="openimages"``, else empty.
    """
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
        threads=kernel_threads(workers, len(pair_det), OKS_PAIRS_PER_THREAD),
    )
    group_pairs = (pair_det[pair_is_group], pair_gt[pair_is_group], pair_ious[pair_is_group])
    if pair_is_group.any():
        pair_det, pair_gt, pair_ious = (
            pair_det[~pair_is_group],
            pair_gt[~pair_is_group],
            pair_ious[~pair_is_group],
        )
    del pair_is_group
    if protocol.group_of != "openimages":
        return pair_det, pair_gt, pair_ious, ()
    return pair_det, pair_gt, pair_ious, group_pairs


def box_pairs(
    det_key: np.ndarray,
    gt_key: np.ndarray,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    det_box: np.ndarray,
    gt_box: np.ndarray,
    gt_is_crowd: np.ndarray,
    *,
    threads: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (detection, ground truth) pair of equal keys and its continuous box IoU.

    Parameters
    ----------
    det_key : int64 (n_det,)
        Group key of each detection, non-decreasing.
    gt_key : int64 (n_gt,)
        Group key of each ground truth, non-decreasing (``Groups.key``).
    det_rows, gt_rows : int (n_det,), (n_gt,)
        The rows of ``det_box`` / ``gt_box`` of each detection / ground truth.
    det_box, gt_box : float64 (rows, 4)
        Boxes ``[x, y, w, h]``.
    gt_is_crowd : bool (n_gt,)
        Crowd ground truth: intersection over the detection's area.
    threads : int
        Threads of the compiled kernel (the same values for every count).

    Returns
    -------
    pair_det, pair_gt : int64 (n_pair,)
        Detection and ground-truth index (into ``det_key`` / ``gt_key``) of each pair,
        detection-major: :func:`deteval.grouping.candidate_pairs`.
    pair_iou : float64 (n_pair,)
        :func:`deteval.geometry.boxes.pair_box_iou` of the pairs, bit for bit.

    Examples
    --------
    >>> box = np.array([[0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 10.0, 6.0]])
    >>> d, g, iou = box_pairs(np.array([1, 2]), np.array([1, 1]), np.array([0, 1]), np.array([1, 0]),
    ...                       box, box, np.array([False, False]))
    >>> d.tolist(), g.tolist(), iou.tolist()
    ([0, 0], [0, 1], [0.6, 1.0])
    """
    return _speedups.dispatch(
        "_cmatch.box_pairs", det_key, gt_key, det_rows, gt_rows, det_box, gt_box, gt_is_crowd, threads
    )


#: The declines of the pair kernel: inputs outside its dtypes or assumptions (keys not sorted,
#: rows out of range), and boxes whose IoU terms overflow (the twin rescales them).
_OUTSIDE = "inputs outside the kernel's assumptions"
_OVERFLOW = "boxes whose IoU terms are not finite"


def _box_pairs_compiled(
    det_key: np.ndarray,
    gt_key: np.ndarray,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    det_box: np.ndarray,
    gt_box: np.ndarray,
    gt_is_crowd: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | _speedups.Decline:
    """:func:`box_pairs` by ``_cmatch.box_pairs``, or a decline."""
    arrays = (det_key, gt_key, det_rows, gt_rows)
    if not (
        all(a.dtype.kind in "iu" and a.ndim == 1 for a in arrays)
        and det_box.ndim == gt_box.ndim == 2
        and det_box.shape[1] == gt_box.shape[1] == 4
        and det_box.dtype.kind == gt_box.dtype.kind == "f"
        and gt_is_crowd.dtype == np.bool_
    ):
        return _speedups.Decline(_OUTSIDE)
    contiguous = np.ascontiguousarray
    # The kernel counts the pairs first and stops above this (at most every det x every truth).
    available = available_bytes(len(det_rows) * len(gt_rows) * BYTES_PER_PAIR)
    found = _speedups.module_of("_cmatch.box_pairs").box_pairs(  # type: ignore[union-attr]
        *(contiguous(a, dtype=np.int64) for a in arrays),
        contiguous(det_box, dtype=np.float64),
        contiguous(gt_box, dtype=np.float64),
        contiguous(gt_is_crowd),
        max(1, int(threads)),
        -1 if available is None else available // BYTES_PER_PAIR,
    )
    if found is None:
        return _speedups.Decline(_OUTSIDE)
    if isinstance(found, int):
        require_pairs(found)  # raises: more pairs than the memory available
    det_buffer, gt_buffer, iou_buffer, n_nonfinite = found
    if n_nonfinite:
        return _speedups.Decline(_OVERFLOW)
    return (
        np.frombuffer(det_buffer, dtype=np.int64),
        np.frombuffer(gt_buffer, dtype=np.int64),
        np.frombuffer(iou_buffer, dtype=np.float64),
    )


def _box_pairs_numpy(
    det_key: np.ndarray,
    gt_key: np.ndarray,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    det_box: np.ndarray,
    gt_box: np.ndarray,
    gt_is_crowd: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`box_pairs` in numpy (the pairs of :func:`candidate_pairs`, then :func:`pair_box_iou`)."""
    del threads  # the numpy code runs on one thread
    pair_det, pair_gt = candidate_pairs(det_key, Groups(order=np.arange(len(gt_key)), key=gt_key))
    pair_iou = pair_box_iou(
        det_box,
        gt_box,
        gt_is_crowd[pair_gt],
        det_rows=det_rows[pair_det],
        gt_rows=gt_rows[pair_gt],
    )
    return pair_det, pair_gt, pair_iou


_speedups.register(
    "_cmatch.box_pairs",
    "deteval._cmatch",
    _box_pairs_compiled,
    _box_pairs_numpy,
    declines=(_OUTSIDE, _OVERFLOW),
)
