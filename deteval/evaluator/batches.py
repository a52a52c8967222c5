"""Matched batches: what ``Evaluator`` keeps of each batch, and their merge into one table.

``update`` builds a small :class:`~deteval.data.GroundTruth` / :class:`~deteval.data.Detections`
of the batch's images, matches them (:func:`deteval.evaluate.match`) and keeps a :class:`_Batch`:
the :class:`~deteval.evaluate.MatchTable` and the few ground-truth columns scoring needs.
``compute`` maps each batch's local image and category indices to the global ones, merges the
tables (:func:`~deteval.evaluate.merge_match_tables`) and puts the detections in the order of one
:func:`~deteval.evaluate.match` over all images (:func:`_canonical`).

The methods live on :class:`_BatchTables`, a mixin of :class:`~deteval.evaluator.Evaluator`.
"""

from __future__ import annotations

import numpy as np

from deteval._dtypes import row_dtype
from deteval._values import frozen
from deteval.data import Detections, GroundTruth, boxes_as, index_column_of, shifted_index
from deteval.evaluate import MatchTable, match, merge_match_tables
from deteval.geometry.rotated import rotated_area, rotated_envelope
from deteval.protocol import Protocol

_SOURCE = "<Evaluator>"


@frozen(eq=False)
class _Batch:
    """What one matched batch keeps: its images, categories, ground truth columns and MatchTable.

    Image and category indices inside ``table`` and ``gt_image`` / ``gt_category`` refer to
    this batch's sorted ``image_id`` and ``category_id``; ``table.match_gt`` to its GT rows
    (update order) and ``table.det_order`` to its detections (update order).
    """

    image_id: np.ndarray
    image_height: np.ndarray
    image_width: np.ndarray
    category_id: np.ndarray
    gt_image: np.ndarray
    gt_category: np.ndarray
    gt_box: np.ndarray
    gt_area: np.ndarray
    gt_is_crowd: np.ndarray
    n_det: int
    table: MatchTable

    def with_image_offset(self, offset: int) -> _Batch:
        """The same batch with its (auto-numbered) image ids moved by ``offset``."""
        return _Batch(**{**self.__dict__, "image_id": self.image_id + offset})


class _BatchTables:
    """Matching one batch and assembling every batch in global indices (a mixin of ``Evaluator``)."""

    _protocol: Protocol
    _box_format: str
    _class_ids: np.ndarray | None
    _class_names: dict
    _batches: list

    def _match_batch(self, image_ids: np.ndarray, gts: list, dts: list, sizes: np.ndarray | None) -> _Batch:
        """Build the batch's GroundTruth / Detections, match them, keep the table."""
        n_img = len(image_ids)
        img_order = np.argsort(image_ids, kind="stable")
        img_rank = np.empty(n_img, dtype=np.int64)
        img_rank[img_order] = np.arange(n_img)
        gt_count = np.array([len(g["labels"]) for g in gts], dtype=np.int64)
        dt_count = np.array([len(d["labels"]) for d in dts], dtype=np.int64)
        gt_labels = np.concatenate([g["labels"] for g in gts])
        dt_labels = np.concatenate([d["labels"] for d in dts])
        category_id = (
            self._class_ids
            if self._class_ids is not None
            else np.unique(np.concatenate([gt_labels, dt_labels]))
        )
        category_id = np.sort(category_id)
        native = "xywh" if self._box_format == "xywh" else "xyxy"
        segm = sizes is not None
        is_rotated = self._box_format in ("xywhr", "polygon4")

        # Without masks (boxes only) the lists stay empty and the records carry no segmentation.
        gt_masks = [m for g in gts for m in g["masks"][1:]] if segm else []
        dt_masks = [m for d in dts for m in d["masks"][1:]] if segm else []
        gt_corners = dt_corners = None
        if is_rotated:  # hook: rotated boxes as corners, their envelopes as the boxes
            gt_corners = self._corners([g["boxes"] for g in gts])
            dt_corners = self._corners([d["boxes"] for d in dts])
            gt_box, dt_box = rotated_envelope(gt_corners), rotated_envelope(dt_corners)
            dt_has_box = np.ones(len(dt_box), dtype=bool)
        elif all("boxes" in g for g in gts):
            gt_box = np.concatenate([g["boxes"] for g in gts]).reshape(-1, 4)
        else:
            gt_box = self._mask_boxes(gt_masks, native)
        if is_rotated:
            pass
        elif all("boxes" in d for d in dts):
            dt_box = np.concatenate([d["boxes"] for d in dts]).reshape(-1, 4)
            dt_has_box = np.ones(len(dt_box), dtype=bool)
        else:
            dt_box = np.zeros((int(dt_count.sum()), 4))
            dt_has_box = np.zeros(len(dt_box), dtype=bool)
        if is_rotated:
            given = [g.get("area") for g in gts]
            gt_area = np.concatenate(
                [
                    a if a is not None else rotated_area(self._corners([g["boxes"]]))
                    for a, g in zip(given, gts, strict=True)
                ]
            )
        else:
            gt_area = np.concatenate([self._areas(g, segm, native) for g in gts])
        gt_crowd = np.concatenate([g.get("iscrowd", np.zeros(len(g["labels"]), bool)) for g in gts])
        gt_image = np.repeat(img_rank, gt_count)
        gt_category = np.searchsorted(category_id, gt_labels)
        height = sizes[img_order, 0] if sizes is not None else np.full(n_img, np.nan)
        width = sizes[img_order, 1] if sizes is not None else np.full(n_img, np.nan)
        gt = GroundTruth(
            image_id=image_ids[img_order],
            image_name=tuple(str(i) for i in image_ids[img_order]),
            image_width=width,
            image_height=height,
            category_id=category_id,
            category_name=self._batch_names(category_id),
            annotation_id=np.arange(1, len(gt_labels) + 1, dtype=np.int64),
            image=gt_image,
            category=gt_category,
            box=gt_box,
            area=gt_area,
            is_crowd=gt_crowd,
            is_difficult=np.zeros(len(gt_labels), bool),
            is_ignore=np.zeros(len(gt_labels), bool),
            box_format=native,
            segmentation=tuple(gt_masks) if segm else None,
            source=_SOURCE,
            rotated=gt_corners,
        )
        dt = Detections(
            image=np.repeat(img_rank, dt_count),
            category=np.searchsorted(category_id, dt_labels),
            box=dt_box,
            score=np.concatenate([d["scores"] for d in dts]),
            order=np.arange(len(dt_labels), dtype=np.int64),
            has_box=dt_has_box,
            box_format=native,
            segmentation=tuple(dt_masks) if segm else None,
            source=_SOURCE,
            rotated=dt_corners,
        )
        table = match(gt, dt, self._protocol)
        return _Batch(
            image_id=gt.image_id,
            image_height=height,
            image_width=width,
            category_id=category_id,
            gt_image=gt_image,
            gt_category=gt_category,
            gt_box=gt_box,
            gt_area=gt_area,
            gt_is_crowd=gt_crowd,
            n_det=len(dt),
            table=table,
        )

    def _corners(self, boxes: list) -> np.ndarray:
        """Rotated boxes of several images as given: ``(n, 5)`` xywhr or ``(n, 8)`` corners."""
        width = 5 if self._box_format == "xywhr" else 8
        return np.concatenate(boxes).reshape(-1, width).astype(np.float64)

    @staticmethod
    def _mask_boxes(rles: list, native: str) -> np.ndarray:
        """Boxes of masks (pycocotools' toBbox, xywh) in ``native`` format."""
        from pycocotools import mask as mask_utils

        if not rles:
            return np.zeros((0, 4))
        return boxes_as(np.asarray(mask_utils.toBbox(rles), dtype=np.float64).reshape(-1, 4), "xywh", native)

    @staticmethod
    def _areas(gt: dict, segm: bool, native: str) -> np.ndarray:
        """The objects' ``area``: as given, else mask area (segm) or box w*h."""
        if "area" in gt:
            return gt["area"]
        if segm:
            from pycocotools import mask as mask_utils

            rles = gt["masks"][1:]
            return np.asarray(mask_utils.area(rles), dtype=np.float64) if rles else np.zeros(0)
        box = boxes_as(gt["boxes"], native, "xywh")
        return box[:, 2] * box[:, 3]

    def _categories(self) -> np.ndarray:
        if self._class_ids is not None:
            return np.sort(self._class_ids)
        if not self._batches:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate([b.category_id for b in self._batches]))

    def _assemble(self) -> tuple:
        """(GroundTruth, merged MatchTable, n_det) of all batches, in global indices."""
        category_id = self._categories()
        n_class = len(category_id)
        native = "xywh" if self._box_format == "xywh" else "xyxy"
        batches = self._batches
        if not batches:
            empty = np.zeros(0, dtype=np.int64)
            gt = GroundTruth(
                image_id=empty,
                image_name=(),
                image_width=np.zeros(0),
                image_height=np.zeros(0),
                category_id=category_id,
                category_name=self._names(category_id),
                annotation_id=empty,
                image=empty,
                category=empty,
                box=np.zeros((0, 4)),
                area=np.zeros(0),
                is_crowd=np.zeros(0, bool),
                is_difficult=np.zeros(0, bool),
                is_ignore=np.zeros(0, bool),
                box_format=native,
                source=_SOURCE,
            )
            dt = Detections(
                image=empty,
                category=empty,
                box=np.zeros((0, 4)),
                score=np.zeros(0),
                order=empty,
                has_box=np.zeros(0, bool),
                box_format=native,
                source=_SOURCE,
            )
            return gt, match(gt, dt, self._protocol.replace(iou_type="bbox")), 0
        cat = np.concatenate
        all_ids = cat([b.image_id for b in batches])
        img_order = np.argsort(all_ids, kind="stable")
        image_id = all_ids[img_order]
        height = cat([b.image_height for b in batches])[img_order]
        width = cat([b.image_width for b in batches])[img_order]
        tables, gt_image, gt_category = [], [], []
        gt_offset = det_offset = 0
        for b in batches:
            # Index maps in the table's int32 (int64 only beyond it), so the columns stay narrow.
            img_map = index_column_of(np.searchsorted(image_id, b.image_id))
            cat_map = index_column_of(np.searchsorted(category_id, b.category_id))
            t = b.table
            n_positive = np.zeros((n_class, t.n_positive.shape[1]), dtype=np.int64)
            n_positive[cat_map] = t.n_positive
            n_det_per_class = np.zeros(n_class, dtype=np.int64)
            n_det_per_class[cat_map] = t.n_det_per_class
            tables.append(
                MatchTable(
                    det_score=t.det_score,
                    det_class=cat_map[t.det_class],
                    det_image=img_map[t.det_image],
                    det_rank=t.det_rank,
                    det_order=shifted_index(t.det_order, det_offset),
                    match_lane=t.match_lane,
                    match_det=t.match_det,
                    match_gt=t.match_gt.astype(np.int64) + gt_offset,  # merge narrows it again
                    tp=t.tp,
                    ignored=t.ignored,
                    n_positive=n_positive,
                    n_det_per_class=n_det_per_class,
                    n_over_max_dets=t.n_over_max_dets,
                )
            )
            gt_image.append(img_map[b.gt_image])
            gt_category.append(cat_map[b.gt_category])
            gt_offset += len(b.gt_image)
            det_offset += b.n_det
        table = _canonical(merge_match_tables(tables))
        n_gt = gt_offset
        gt = GroundTruth(
            image_id=image_id,
            image_name=tuple(str(i) for i in image_id),
            image_width=width,
            image_height=height,
            category_id=category_id,
            category_name=self._names(category_id),
            annotation_id=np.arange(1, n_gt + 1, dtype=np.int64),
            image=cat(gt_image),
            category=cat(gt_category),
            box=cat([b.gt_box for b in batches]).reshape(-1, 4),
            area=cat([b.gt_area for b in batches]),
            is_crowd=cat([b.gt_is_crowd for b in batches]),
            is_difficult=np.zeros(n_gt, bool),
            is_ignore=np.zeros(n_gt, bool),
            box_format=native,
            source=_SOURCE,
        )
        return gt, table, det_offset

    def _batch_names(self, category_id: np.ndarray) -> tuple:
        """:meth:`_names` of a batch's categories: with ``class_ids``, always theirs, named once."""
        if self._class_ids is None:
            return self._names(category_id)
        names = self.__dict__.get("_class_id_names")  # not state: made again after unpickling
        if names is None:
            names = self.__dict__["_class_id_names"] = self._names(category_id)
        return names

    def _names(self, category_id: np.ndarray) -> tuple:
        return tuple(self._class_names.get(int(c), str(int(c))) for c in category_id)


def _canonical(table: MatchTable) -> MatchTable:
    """The table's detections in (image, class, rank) order, as one :func:`match` over all images.

    Each batch's rows come in that order and an image is in one batch only, so a stable sort by
    image alone gives it (a merge of sorted runs); the result is checked, and a lexsort of the
    three keys decides otherwise. The matches are ordered by (lane, detection) through one key,
    ``lane * n_det + detection``: lexsort's order, stable sort included.
    """
    n_det = len(table.det_image)
    order = np.argsort(table.det_image, kind="stable")
    if n_det and (order == np.arange(n_det)).all():
        return table
    keys = (table.det_image[order], table.det_class[order], table.det_rank[order])
    if not _in_key_order(*keys):
        order = np.lexsort((table.det_rank, table.det_class, table.det_image))
        keys = (table.det_image[order], table.det_class[order], table.det_rank[order])
    new_row = np.empty(n_det, dtype=row_dtype(n_det))
    new_row[order] = np.arange(n_det)
    match_det = new_row[table.match_det]
    m_order = np.argsort(table.match_lane.astype(np.int64) * n_det + match_det, kind="stable")
    return MatchTable(
        det_score=table.det_score[order],
        det_class=keys[1],
        det_image=keys[0],
        det_rank=keys[2],
        det_order=table.det_order[order],
        match_lane=table.match_lane[m_order],
        match_det=match_det[m_order],
        match_gt=table.match_gt[m_order],
        tp=table.tp.take(order),
        ignored=table.ignored.take(order),
        n_positive=table.n_positive,
        n_det_per_class=table.n_det_per_class,
        n_over_max_dets=table.n_over_max_dets,
    )


def _in_key_order(*keys: np.ndarray) -> bool:
    """Whether the rows of ``keys`` (first key first) are in non-decreasing lexicographic order.

    >>> _in_key_order(np.array([0, 0, 1]), np.array([2, 3, 0])), _in_key_order(np.array([0, 0]), np.array([1, 0]))
    (True, False)
    """
    tied = np.ones(max(len(keys[0]) - 1, 0), dtype=bool)  # rows equal on the keys so far
    for key in keys:
        step = np.diff(key.astype(np.int64))
        if (tied & (step < 0)).any():
            return False
        tied &= step == 0
    return True
