"""``score``: a match table accumulated, summarised and explained into an :class:`EvalResult`."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np

from deteval._parallel import kernel_threads
from deteval.accumulate import accumulate
from deteval.data import GroundTruth
from deteval.errors import InputError
from deteval.evaluate import threads as per_thread
from deteval.evaluate.flags import ground_truth_flags
from deteval.evaluate.result import EvalResult
from deteval.evaluate.table import MatchTable
from deteval.grouping import (
    by_group_then_descending,
)
from deteval.matching import (
    LaneFlags,
)
from deteval.pooling import ground_truth_for
from deteval.protocol import Protocol
from deteval.summary import CROWD_INDEX_BANDS, class_ap_all, class_metrics_all, headline_metrics


def ranking_order(table: MatchTable, protocol: Protocol, *, workers: int | str | None = 1) -> np.ndarray:
    """Global ranking grouped by class; ties as the reference tool breaks them.

    ``workers``: threads of the compiled sort (:func:`deteval._parallel.kernel_threads`); the
    ranking does not depend on it.

    Notes
    -----
    pycocotools concatenates each image's score-sorted list in image-id order, then sorts by
    ``-score`` with a stable mergesort: ties go by (image id, rank in image). The VOC devkit
    sorts a class's result file stably: ties go by file order.
    """
    threads = kernel_threads(workers, len(table.det_score), per_thread.SORT_PER_THREAD)
    if protocol.score_order == "image_major":
        if _in_image_class_rank_order(table):
            # Within a class the rows already come by (image, rank): a stable sort by (class,
            # -score) leaves ties in that order, which is the order the full key gives.
            return by_group_then_descending(table.det_class, table.det_score, threads=threads)
        return by_group_then_descending(
            table.det_class, table.det_score, (table.det_rank, table.det_image), threads=threads
        )
    return by_group_then_descending(table.det_class, table.det_score, (table.det_order,), threads=threads)


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


def score(
    table: MatchTable,
    gt: GroundTruth,
    protocol: Protocol,
    *,
    warnings: tuple = (),
    inputs: dict | None = None,
    workers: int | str | None = 1,
) -> EvalResult:
    """Accumulate a :class:`MatchTable` into an :class:`EvalResult`.

    Under ``class_agnostic`` the result has the one pooled class of
    :func:`deteval.pooling.ground_truth_for` (``gt`` may be given pooled or not). ``workers``:
    threads of the compiled ranking sort and accumulation, that many or ``"auto"`` by size
    (:func:`deteval._parallel.kernel_threads`); the result is the same for every value.

    Raises
    ------
    ConfigError
        A protocol that cannot be scored (:meth:`~deteval.protocol.Protocol.check_scorable`).
    """
    protocol.check_scorable()
    gt = ground_truth_for(gt, protocol)
    ranking = ranking_order(table, protocol, workers=workers)
    acc = accumulate(
        table.tp,
        table.ignored,
        table.det_score,
        table.det_class,
        table.det_rank,
        ranking,
        table.n_positive,
        protocol,
        threads=kernel_threads(workers, len(ranking), per_thread.ACCUMULATE_PER_THREAD),
    )
    per_class_ap = class_ap_all(acc.precision, acc.ap, protocol)  # every class at once (LVIS: 1,203)
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
    counted = list(warnings)  # EvalResult.warnings: --strict makes them errors
    notes = []  # EvalResult.notes: informational
    undefined = [gt.category_name[k] for k in range(gt.n_classes) if table.n_positive[k, 0] == 0]
    if undefined:
        notes.append(
            f"{len(undefined)} {'class has' if len(undefined) == 1 else 'classes have'} no ground "
            f"truth counted under this protocol (AP undefined, left out of the mean): "
            f"{undefined[:10]}"
        )
    counted.extend(_parity_warnings(gt, protocol))
    counted.extend(_federated_warnings(gt, protocol))
    if table.n_over_max_dets and protocol.max_dets is not None:  # only a cap leaves some out
        scope = "image" if protocol.max_dets_scope == "image" else "image and class"
        counted.append(
            f"{table.n_over_max_dets} detections beyond max_dets={max(protocol.max_dets)} "
            f"in their {scope} were not scored (as the protocol says)"
        )
    if (
        protocol.summary == "pycocotools"
        and protocol.iou_type != "keypoints"
        and protocol.max_dets is not None
        and 100 not in protocol.max_dets
    ):
        counted.append(
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
        warnings=tuple(counted),
        notes=tuple(notes),
        inputs=dict(inputs or {}),
    )


def _best_f1(
    table: MatchTable, ranking: np.ndarray, category_ids: tuple, names: tuple, protocol: Protocol
) -> dict:
    """``EvalResult.best_f1`` of a scored table (:func:`deteval.operating_points.best_f1_points`)."""
    # Imported here: EvalResult.best_f1 calls this when it is read (the JSON document, the
    # reports), not while scoring.
    from deteval.operating_points import best_f1_points, default_iou_index

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
    if gt.rotated is not None and protocol.iou_type == "bbox":  # said, never passed off as rotated
        out.append(
            f"the ground truth has rotated boxes; protocol {protocol.name!r} scores their "
            f"axis-aligned envelopes; for the rotated boxes' IoU use --protocol coco-rotated "
            f"(or dota, ultralytics-obb)"
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
