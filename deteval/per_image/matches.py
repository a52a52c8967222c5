"""Every detection and missed object explained: :func:`explained_matches` (``--matches``)."""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.analysis import OUTCOME_WORDS, MatchColumns, _lane, match_columns
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.evaluate import EvalResult, ground_truth_flags
from deteval.grouping import candidate_pairs, group_rows
from deteval.per_image.common import ERROR_WORDS, _checked_values, _pair_iou_fn, _table_det_rows, _tide
from deteval.summary import threshold_label
from deteval.tide.outcome import _single_lane

#: Words of the per-threshold outcomes: :data:`deteval.analysis.OUTCOME_WORDS` and ``fn`` (a
#: missed ground truth's row).
MATCH_OUTCOME_WORDS = (*OUTCOME_WORDS, "fn")


@frozen(eq=False)
class ExplainedMatches:
    """Every scored detection explained, and every missed ground truth (:func:`explained_matches`).

    Attributes
    ----------
    columns : MatchColumns
        :func:`deteval.analysis.match_columns` at the chosen threshold (input order).
    iou_threshold : float
        The chosen threshold (``columns.outcome``, ``iou``, ``error`` and the missed rows).
    iou_thresholds : tuple of float
        The protocol's thresholds (rows of ``outcome_by_threshold``).
    box : float64 (n_det, 4)
        The detection's box as x, y, w, h; NaN where the record has none.
    outcome_by_threshold : int8 (n_iou_thr, n_det)
        Index into :data:`MATCH_OUTCOME_WORDS` at each threshold (first area range).
    iou : float64 (n_det,)
        IoU (crowd regions: the protocol's crowd overlap) with the matched ground truth; NaN
        where nothing matched.
    best_iou : float64 (n_det,)
        Unmatched detections: the largest IoU with any ground truth of the image, any class and
        any flag (crowd regions: the protocol's crowd overlap); NaN for matched detections and
        images without ground truth.
    best_gt_row : int64 (n_det,)
        The ground truth of ``best_iou`` (first on ties, in file order); -1 where there is none
        or ``best_iou`` is 0 (it overlaps nothing).
    error : int8 (n_det,)
        Index into :data:`ERROR_WORDS`: the TIDE error type of a false positive.
    missed_gt_row : int64 (n_missed,)
        Counted ground truth no detection matched at the chosen threshold, in file order.
    missed_box : float64 (n_missed, 4)
    missed_outcome_by_threshold : int8 (n_iou_thr, n_missed)
        ``tp`` (0) where a detection matched it at that threshold, ``fn`` (3) otherwise.
    missed_is_miss : bool (n_missed,)
        TIDE's ``miss``; False where a ``loc`` or ``cls`` error points at it (TIDE charges that).
    best_gt_class, missed_image_row, missed_class_index : int64
        The class of ``best_gt_row`` (-1 where none); the image and class of each missed object.
    """

    columns: MatchColumns
    iou_threshold: float
    iou_thresholds: tuple
    box: np.ndarray
    outcome_by_threshold: np.ndarray
    iou: np.ndarray
    best_iou: np.ndarray
    best_gt_row: np.ndarray
    error: np.ndarray
    missed_gt_row: np.ndarray
    missed_box: np.ndarray
    missed_outcome_by_threshold: np.ndarray
    missed_is_miss: np.ndarray
    best_gt_class: np.ndarray
    missed_image_row: np.ndarray
    missed_class_index: np.ndarray

    def outcome_columns(self) -> list[str]:
        """``outcome_50``, ``outcome_55``, ...: one per IoU threshold (:func:`threshold_label`)."""
        return [f"outcome_{threshold_label(t)}" for t in self.iou_thresholds]

    def column_names(self) -> list[str]:
        """The ``--matches`` columns: the seven of before, then the explaining ones."""
        return [*MATCH_COLUMNS_BEFORE, "x", "y", "w", "h", *self.outcome_columns(), *MATCH_COLUMNS_AFTER]

    def rows(self, result: EvalResult) -> list[dict]:
        """One dict per detection (input order), then one per missed object (file order).

        Keys: :meth:`column_names`; ``None`` for an empty field (a missed object's detection and
        score, an unmatched detection's ``iou`` and ``gt_annotation_id``, ...).
        """
        image_ids = np.asarray(result.image_ids).tolist()
        category_ids = list(result.category_ids)
        annotation_ids = np.asarray(result.annotation_ids).tolist()
        outcome_names = self.outcome_columns()
        c = self.columns

        def number(value: float) -> float | None:
            return None if value != value else value

        out = []
        for j in range(len(c.detection)):
            row = {
                "detection": int(c.detection[j]),
                "image_id": image_ids[c.image_row[j]],
                "category_id": category_ids[c.class_index[j]],
                "category": result.category_names[c.class_index[j]],
                "score": float(c.score[j]),
                "outcome": OUTCOME_WORDS[c.outcome[j]],
                "gt_annotation_id": annotation_ids[c.gt_row[j]] if c.has_gt[j] else None,
            }
            row.update(zip("xywh", (number(v) for v in self.box[j].tolist()), strict=True))
            row.update(
                (name, MATCH_OUTCOME_WORDS[o])
                for name, o in zip(outcome_names, self.outcome_by_threshold[:, j].tolist(), strict=True)
            )
            best = int(self.best_gt_row[j])
            row["iou"] = number(float(self.iou[j]))
            row["best_iou"] = number(float(self.best_iou[j]))
            row["best_gt"] = annotation_ids[best] if best >= 0 else None
            row["best_gt_category"] = category_ids[self.best_gt_class[j]] if best >= 0 else None
            row["error"] = ERROR_WORDS[self.error[j]]
            out.append(row)
        for j, g in enumerate(self.missed_gt_row.tolist()):
            k = int(self.missed_class_index[j])
            row = {
                "detection": None,
                "image_id": image_ids[self.missed_image_row[j]],
                "category_id": category_ids[k],
                "category": result.category_names[k],
                "score": None,
                "outcome": "fn",
                "gt_annotation_id": annotation_ids[g],
            }
            row.update(zip("xywh", (number(v) for v in self.missed_box[j].tolist()), strict=True))
            row.update(
                (name, MATCH_OUTCOME_WORDS[o])
                for name, o in zip(
                    outcome_names, self.missed_outcome_by_threshold[:, j].tolist(), strict=True
                )
            )
            row.update(
                iou=None,
                best_iou=None,
                best_gt=None,
                best_gt_category=None,
                error="miss" if self.missed_is_miss[j] else "",
            )
            out.append(row)
        return out

    def to_dict(self, result: EvalResult) -> dict:
        """The ``matches`` entry of a result in the JSON document."""
        return {
            "iou_threshold": self.iou_threshold,
            "iou_thresholds": list(self.iou_thresholds),
            "columns": self.column_names(),
            "rows": self.rows(result),
        }


#: The ``--matches`` columns of before, first and in their order (users' scripts read them).
MATCH_COLUMNS_BEFORE = (
    "detection",
    "image_id",
    "category_id",
    "category",
    "score",
    "outcome",
    "gt_annotation_id",
)


#: The explaining columns after the box and the per-threshold outcomes.
MATCH_COLUMNS_AFTER = ("iou", "best_iou", "best_gt", "best_gt_category", "error")


def explained_matches(
    result: EvalResult, gt: GroundTruth, dt: Detections, *, iou_threshold: float | None = None
) -> ExplainedMatches:
    """Every scored detection with its box, outcomes, overlaps and TIDE error; every missed object.

    Parameters
    ----------
    result : EvalResult
    gt, dt : GroundTruth, Detections
        The values ``result`` was scored from (refused otherwise).
    iou_threshold : float, optional
        One of the protocol's thresholds (default 0.5 if it has it, else its first).

    Returns
    -------
    ExplainedMatches

    Examples
    --------
    >>> import deteval
    >>> from deteval.io import load_detections, load_ground_truth
    >>> gt = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"}],
    ...     "annotations": [{"id": 5, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                      "area": 100, "iscrowd": 0}]})
    >>> dt = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 4], "score": .9}], gt)
    >>> m = explained_matches(deteval.evaluate(gt, dt, "coco"), gt, dt)
    >>> m.best_iou.tolist(), ERROR_WORDS[m.error[0]], m.missed_gt_row.tolist(), m.missed_is_miss.tolist()
    ([0.4], 'loc', [0], [False])
    """
    gt, dt = _checked_values(result, gt, dt)
    protocol = result.protocol
    lane, a = _lane(result, iou_threshold, None)
    thresholds = tuple(float(t) for t in protocol.iou_thresholds)
    n_thr = len(thresholds)
    threshold = thresholds[lane % n_thr]
    table = result.table
    columns = match_columns(result, iou_threshold=threshold)
    order = np.argsort(table.det_order, kind="stable")  # match_columns' order: input order
    det_rows = _table_det_rows(result, gt, dt)[order]
    box = boxes_as(dt.box, dt.box_format, "xywh")[det_rows].astype(np.float64)
    box[~dt.has_box[det_rows]] = np.nan
    outcome = np.empty((n_thr, len(order)), dtype=np.int8)
    for j in range(n_thr):
        t_lane = a * n_thr + j
        tp, ig = table.lane_is_tp(t_lane)[order], table.lane_is_ignored(t_lane)[order]
        outcome[j] = np.where(tp, 0, np.where(ig, 1, 2))
    is_ignored_gt, is_reusable, _ = ground_truth_flags(gt, protocol)
    is_crowd_like = is_reusable.copy()
    if protocol.group_of == "openimages":
        is_crowd_like |= np.asarray(gt.is_group_of, dtype=bool)
    eff = _single_lane(protocol, threshold)
    iou_fn = _pair_iou_fn(gt, dt, eff)
    iou = np.full(len(order), np.nan)
    matched = np.flatnonzero(columns.has_gt)
    if len(matched):
        g = columns.gt_row[matched]
        iou[matched] = iou_fn(g, det_rows[matched], is_crowd_like[g])
    best_iou, best_gt = _best_overlap(gt, dt, det_rows, ~columns.has_gt, is_crowd_like, iou_fn)
    gt_is_counted = ~is_ignored_gt[a]
    all_rows = _table_det_rows(result, gt, dt)
    tide = _tide(gt, dt, result, lane, threshold, all_rows, np.arange(len(all_rows)), gt_is_counted, iou_fn)
    code = tide.code[order]
    is_fp = columns.outcome == 2
    error = np.where(is_fp, code, 0).astype(np.int8)  # _CODE: 0 tp, then ERROR_WORDS' order
    # Missed ground truth: counted, and matched by no detection at the chosen threshold.
    is_found = np.zeros((n_thr, len(gt)), dtype=bool)
    for j in range(n_thr):
        t_lane = a * n_thr + j
        in_lane = (table.match_lane == t_lane) & table.lane_is_tp(t_lane)[table.match_det]
        is_found[j, table.match_gt[in_lane]] = True
    missed = np.flatnonzero(gt_is_counted & ~is_found[lane % n_thr])
    missed_box = boxes_as(gt.box, gt.box_format, "xywh")[missed].astype(np.float64)
    return ExplainedMatches(
        columns=columns,
        iou_threshold=threshold,
        iou_thresholds=thresholds,
        box=box,
        outcome_by_threshold=outcome,
        iou=iou,
        best_iou=best_iou,
        best_gt_row=best_gt,
        error=error,
        missed_gt_row=missed,
        missed_box=missed_box,
        missed_outcome_by_threshold=np.where(is_found[:, missed], 0, 3).astype(np.int8),
        missed_is_miss=tide.is_missed[missed],
        best_gt_class=np.where(best_gt >= 0, gt.category[np.maximum(best_gt, 0)], -1).astype(np.int64),
        missed_image_row=gt.image[missed].astype(np.int64),
        missed_class_index=gt.category[missed].astype(np.int64),
    )


def _best_overlap(
    gt: GroundTruth,
    dt: Detections,
    det_rows: np.ndarray,
    wanted: np.ndarray,
    is_crowd_like: np.ndarray,
    iou_fn,
) -> tuple[np.ndarray, np.ndarray]:
    """Largest IoU of each ``wanted`` detection with any ground truth of its image, and which."""
    n = len(det_rows)
    best = np.full(n, np.nan)
    best_gt = np.full(n, -1, dtype=np.int64)
    which = np.flatnonzero(wanted)
    if len(which) == 0 or len(gt) == 0:
        return best, best_gt
    gt_groups = group_rows(gt.image.astype(np.int64))  # stable: file order within an image
    pair_det, sorted_gt = candidate_pairs(dt.image[det_rows[which]].astype(np.int64), gt_groups)
    if len(pair_det) == 0:
        return best, best_gt
    pair_gt = gt_groups.order[sorted_gt]
    values = iou_fn(pair_gt, det_rows[which][pair_det], is_crowd_like[pair_gt])
    # First pair of the largest IoU per detection (pairs come detection-major, GT in file order).
    by = np.lexsort((np.arange(len(pair_det)), -values, pair_det))
    first = by[np.r_[True, pair_det[by][1:] != pair_det[by][:-1]]]
    best[which[pair_det[first]]] = values[first]
    overlaps = first[values[first] > 0]  # no overlap names no object
    best_gt[which[pair_det[overlaps]]] = pair_gt[overlaps]
    return best, best_gt
