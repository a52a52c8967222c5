"""Which detections a protocol scores: max_dets, Fixed AP's per-class budget, LVIS' scope and federated labels."""

from __future__ import annotations

from typing import cast

import numpy as np

from deteval._dtypes import row_dtype
from deteval._parallel import kernel_threads
from deteval.data import Detections, FederatedLabels, GroundTruth
from deteval.errors import InputError
from deteval.evaluate import threads as per_thread
from deteval.grouping import by_group_then_descending, rank_by_group_then_descending, rank_in_group
from deteval.protocol import Protocol


def _kept_detections(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    det_sel: np.ndarray | None,
    *,
    workers: int | str | None = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """The detections :func:`match` scores, sorted by (image, class, rank), within ``max_dets``.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol
    det_sel : int64 (n_sel,) or None
        Rows of the shard's detections; None for all of them.
    workers : int or "auto"
        Threads of the compiled sort (:func:`deteval._parallel.kernel_threads`).

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
    if (
        protocol.iou_type == "keypoints"
        and protocol.empty_keypoint_detections == "drop"
        and dt.keypoints is not None
    ):
        # xtcocotools' _prepare: a result none of whose keypoints has a score > 0 is dropped.
        visibility = dt.keypoints[:, :, 2] if det_sel is None else dt.keypoints[det_sel, :, 2]
        has_score = (visibility > 0).any(axis=1)
        det_sel = np.flatnonzero(has_score) if det_sel is None else det_sel[has_score]
    # det_sel None: every detection (no arange of every row is made)
    det_sel, image_rank = _dataset_wide_selection(gt, dt, protocol, det_sel, workers=workers)
    # every detection, in row order (det_sel is then None or an arange)
    every = det_sel is None or len(det_sel) == len(dt)
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
    threads = kernel_threads(workers, len(det_key), per_thread.SORT_PER_THREAD)
    order = by_group_then_descending(det_key, det_score, (det_order,), threads=threads)
    del det_score, det_order
    sorted_key = det_key[order]
    del det_key
    # Rows of dt: the order itself when every detection was selected (int32 from the compiled
    # sort, no int64 copy), else the selected rows it orders.
    det_rows = order if every else cast(np.ndarray, det_sel)[order]
    del order
    if image_rank is not None:  # max_dets_scope "image": the rank among all the image's results
        det_rank_all = image_rank[det_rows]
    else:
        det_rank_all = rank_in_group(sorted_key)
    det_rank_all = det_rank_all.astype(row_dtype(len(dt)), copy=False)  # ranks < rows: int32
    cap = None if protocol.max_dets is None else max(protocol.max_dets)
    if cap is None:
        return det_rows, sorted_key, det_rank_all, 0, n_det_per_class
    keep = det_rank_all < cap
    n_over = len(keep) - int(np.count_nonzero(keep))
    return det_rows[keep], sorted_key[keep], det_rank_all[keep], n_over, n_det_per_class


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


def _rank_in(key: np.ndarray, dt: Detections, threads: int = 1) -> np.ndarray:
    """Rank of each detection among those of its ``key`` by score, ties in file order (row order).

    The order is :func:`~deteval.grouping.by_group_then_descending`'s, the permutation of
    ``group_rows(key, -dt.score, dt.order)``; the compiled sort writes the ranks as it sorts each
    group, on ``threads`` threads (:func:`~deteval.grouping.rank_by_group_then_descending`).
    """
    rank = rank_by_group_then_descending(key, dt.score, (dt.order,), threads=threads)
    return rank.astype(row_dtype(len(dt)), copy=False)


def _dataset_wide_selection(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    det_sel: np.ndarray | None,
    *,
    workers: int | str | None = 1,
) -> tuple[np.ndarray | None, np.ndarray | None]:
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
    threads = kernel_threads(workers, len(dt), per_thread.SORT_PER_THREAD)
    is_kept = np.ones(len(dt), dtype=bool)
    if protocol.max_dets_per_class is not None:
        is_kept &= _rank_in(dt.category, dt, threads) < protocol.max_dets_per_class
    image_rank = None
    if protocol.max_dets_scope == "image":
        # Detections outside the class budget take no place in the image's ranking.
        image_key = dt.image if is_kept.all() else np.where(is_kept, dt.image.astype(np.int64), -1)
        image_rank = _rank_in(image_key, dt, threads)
    if protocol.federated_labels == "lvis":
        labels = _federated_labels(gt, protocol)
        is_kept &= _is_listed(
            ((gt.image, gt.category), (labels.neg_image, labels.neg_category)),
            dt.image,
            dt.category,
            n_image=gt.n_images,
            n_class=gt.n_classes,
        )
    if is_kept.all():
        return det_sel, image_rank
    if det_sel is None:  # every detection: the kept ones' rows, no arange gathered
        return np.flatnonzero(is_kept), image_rank
    return det_sel[is_kept[det_sel]], image_rank


def _is_listed(
    pairs: tuple[tuple[np.ndarray, np.ndarray], ...],
    image: np.ndarray,
    category: np.ndarray,
    *,
    n_image: int,
    n_class: int,
) -> np.ndarray:
    """Bool (n,): whether each (image, category) is in any of ``pairs`` (image and class indices).

    The union of :meth:`~deteval.data.FederatedLabels.has_pair` over ``pairs``. When the
    (image, class) table has at most a byte per row of ``image`` times :data:`_TABLE_BYTES_PER_ROW`
    (LVIS: 1,203 classes, 300 detections an image), the pairs are marked in that table and each
    row looks its pair up, one pass, with no int64 key per row; else ``has_pair`` per list.
    """
    if n_image * n_class > _TABLE_BYTES_PER_ROW * len(image):
        out = np.zeros(len(image), dtype=bool)
        for pair_image, pair_category in pairs:
            out |= FederatedLabels.has_pair(pair_image, pair_category, image, category, n_class=n_class)
        return out
    table = np.zeros((n_image, n_class), dtype=bool)
    for pair_image, pair_category in pairs:
        table[pair_image, pair_category] = True
    out = np.empty(len(image), dtype=bool)
    for start in range(0, len(image), _LOOKUP_BLOCK):  # numpy's intp copies of a block's indices only
        block = slice(start, start + _LOOKUP_BLOCK)
        out[block] = table[image[block], category[block]]
    return out


#: Rows looked up at a time by :func:`_is_listed` (the index arrays numpy converts: 16 MiB).
_LOOKUP_BLOCK = 1 << 20

#: Bytes of the (image, class) table of :func:`_is_listed` per looked-up row at most (an int64
#: key per row, what ``has_pair`` makes, is 8).
_TABLE_BYTES_PER_ROW = 8
