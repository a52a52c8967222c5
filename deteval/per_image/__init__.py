"""Which images, objects and detections cost the AP: per-image results and matches that explain themselves.

Two analyses of an :class:`~deteval.evaluate.EvalResult` with the values it was scored from
(the result keeps who matched whom, not the boxes):

- :func:`per_image`: per image, TP / FP / FN / ignored at one IoU threshold (and a confidence),
  F1, the image's TIDE error counts, and ``ap_gain``: how much the dataset AP would rise if that
  image's errors were fixed (:class:`PerImage`);
- :func:`explained_matches`: every scored detection with its box, its outcome at every IoU
  threshold, the IoU of its match (or its best overlap, and with which object), its TIDE error
  type, and every missed ground truth (:class:`ExplainedMatches`).

Both work at one *lane*: an IoU threshold of the protocol (default 0.5 if it has it, else its
first), its first area range and its largest ``max_dets``, as :mod:`deteval.analysis` does.

Notes
-----
``ap_gain`` of an image is ``AP_fixed - AP`` where ``AP`` is the mean over classes with ground
truth of the per-class AP at the lane (the protocol's interpolation, tie order and ``max_dets``)
and ``AP_fixed`` the same after *fixing* the image: its false positives at the lane are removed,
and each of its missed objects (counted ground truth that no detection matched at the lane) is
found by a detection with the object's own box and class, scored above every detection. Ignored
detections stay. Detections beyond ``max_dets`` stay unscored: the removed ones free no place,
the added ones take none (re-evaluating such an input gives the same number when no
(image, class) reaches ``max_dets``). Only the classes present in the image change, so the gain
is computed for every image with errors at once: one accumulation of the classes' ranked lists
with the image's false positives left out and its found objects put first
(:func:`deteval.accumulate.accumulate`, the protocol's own AP).
"""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.accumulate import accumulate
from deteval.analysis import _lane
from deteval.data import Detections, GroundTruth
from deteval.evaluate import EvalResult, ground_truth_flags, ranking_order
from deteval.matching import LaneFlags
from deteval.per_image.common import (
    ERROR_WORDS,
    TIDE_BACKGROUND,
    _checked_values,
    _pair_iou_fn,
    _table_det_rows,
    _tide,
)
from deteval.per_image.matches import (
    MATCH_COLUMNS_AFTER,
    MATCH_COLUMNS_BEFORE,
    MATCH_OUTCOME_WORDS,
    ExplainedMatches,
    explained_matches,
)
from deteval.protocol import Protocol
from deteval.summary import none_if_nan
from deteval.tide.outcome import _single_lane
from deteval.tide.result import _CODE, MAIN_ERRORS

__all__ = [
    "PerImage",
    "per_image",
    "ExplainedMatches",
    "explained_matches",
    "ERROR_WORDS",
    "MATCH_OUTCOME_WORDS",
    "TIDE_BACKGROUND",
    "AP_GAIN_MAX_ROWS",
    "MATCH_COLUMNS_BEFORE",
    "MATCH_COLUMNS_AFTER",
]


#: Ranked rows :func:`per_image` accumulates at most for ``ap_gain`` (the sum, over the images
#: it computes, of the sizes of the classes each image has errors in: their detections down to
#: the last true positive, ignored ones left out); beyond, the images of the largest estimated
#: gain (:func:`_fp_cost`, and 1 / n_positive a missed object) come first, the others get NaN.
AP_GAIN_MAX_ROWS = 20_000_000


#: Ranked rows accumulated in one call.
_GAIN_CHUNK_ROWS = 1 << 21


@frozen(eq=False)
class PerImage:
    """Per-image counts, F1, TIDE errors and AP gain at one lane (what :func:`per_image` returns).

    Attributes
    ----------
    iou_threshold : float
    area : str
    confidence : float or None
        Counts are of the detections scoring >= it (None: every detection within ``max_dets``).
    ap : float
        The dataset AP ``ap_gain`` is measured against: the mean over classes with ground truth
        of the per-class AP at the lane (all detections, whatever ``confidence``).
    image_id : int64 (n_img,)
    image_name : tuple of str
        File names where the ground truth has them, else "".
    tp, fp, fn, ignored : int64 (n_img,)
    f1 : float64 (n_img,)
        ``2 tp / (2 tp + fp + fn)``; NaN for an image with neither ground truth nor detection.
    errors : dict
        TIDE error type (``cls, loc, both, dupe, bkg, miss``) -> int64 (n_img,) counts; the
        first five sum to ``fp``.
    ap_gain : float64 (n_img,)
        ``AP_fixed - AP`` (module Notes); 0 for an image without errors; NaN where not computed
        (beyond :data:`AP_GAIN_MAX_ROWS`) or where no class has ground truth.
    """

    iou_threshold: float
    area: str
    confidence: float | None
    ap: float
    image_id: np.ndarray
    image_name: tuple
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    ignored: np.ndarray
    f1: np.ndarray
    errors: dict
    ap_gain: np.ndarray

    def ranking(self) -> np.ndarray:
        """Image rows by ``ap_gain``, largest first (NaN last; ties in ground-truth image order)."""
        gain = np.where(np.isnan(self.ap_gain), -np.inf, self.ap_gain)
        return np.lexsort((np.arange(len(gain)), np.isnan(self.ap_gain), -gain))

    def rows(self) -> list[dict]:
        """One dict per image, in :meth:`ranking` order (NaN as None).

        Keys: ``rank, image_id, file_name, tp, fp, fn, ignored, f1, cls, loc, both, dupe, bkg,
        miss, ap_gain``.
        """
        out = []
        for rank, i in enumerate(self.ranking().tolist(), start=1):
            row = {
                "rank": rank,
                "image_id": int(self.image_id[i]),
                "file_name": self.image_name[i],
                "tp": int(self.tp[i]),
                "fp": int(self.fp[i]),
                "fn": int(self.fn[i]),
                "ignored": int(self.ignored[i]),
                "f1": none_if_nan(self.f1[i]),
            }
            row.update({kind: int(self.errors[kind][i]) for kind in MAIN_ERRORS})
            row["ap_gain"] = none_if_nan(self.ap_gain[i])
            out.append(row)
        return out

    def to_dict(self) -> dict:
        """The ``per_image`` entry of a result in the JSON document."""
        return {
            "iou_threshold": self.iou_threshold,
            "area": self.area,
            "confidence": self.confidence,
            "ap": none_if_nan(self.ap),
            "images": self.rows(),
        }


def per_image(
    result: EvalResult,
    gt: GroundTruth,
    dt: Detections,
    *,
    iou_threshold: float | None = None,
    confidence: float | None = None,
    max_rows: int = AP_GAIN_MAX_ROWS,
) -> PerImage:
    """Per-image TP / FP / FN / ignored, F1, TIDE error counts and AP gain.

    Parameters
    ----------
    result : EvalResult
    gt, dt : GroundTruth, Detections
        The values ``result`` was scored from (refused otherwise).
    iou_threshold : float, optional
        One of the protocol's thresholds (default 0.5 if it has it, else its first).
    confidence : float, optional
        Count only the detections scoring >= it (the TIDE errors too); ``ap_gain`` is always of
        the whole ranked list.
    max_rows : int
        Budget of ranked rows for ``ap_gain`` (:data:`AP_GAIN_MAX_ROWS`).

    Returns
    -------
    PerImage

    Raises
    ------
    ConfigError
        A threshold the protocol does not have, or values the result was not scored from.

    Examples
    --------
    >>> import deteval
    >>> from deteval.io import load_detections, load_ground_truth
    >>> gt = load_ground_truth({"images": [{"id": 1}, {"id": 2}],
    ...     "categories": [{"id": 1, "name": "cat"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                      "area": 100, "iscrowd": 0},
    ...                     {"id": 2, "image_id": 2, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                      "area": 100, "iscrowd": 0}]})
    >>> dt = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": .9},
    ...                       {"image_id": 2, "category_id": 1, "bbox": [50, 50, 5, 5], "score": .8}], gt)
    >>> p = per_image(deteval.evaluate(gt, dt, "voc2010"), gt, dt)
    >>> p.tp.tolist(), p.fp.tolist(), p.fn.tolist(), p.errors["bkg"].tolist(), p.ap_gain.tolist()
    ([1, 0], [0, 1], [0, 1], [0, 1], [0.0, 0.5])
    """
    gt, dt = _checked_values(result, gt, dt)
    protocol = result.protocol
    lane, a = _lane(result, iou_threshold, None)
    n_thr = len(protocol.iou_thresholds)
    threshold = float(protocol.iou_thresholds[lane % n_thr])
    table = result.table
    n_img = len(gt.image_id)
    in_cap = _in_cap(result)
    selected = in_cap if confidence is None else in_cap & (table.det_score >= confidence)
    is_tp = table.lane_is_tp(lane)
    is_ignored = table.lane_is_ignored(lane)
    is_fp = ~is_tp & ~is_ignored
    image = table.det_image.astype(np.int64)

    def per_img(mask: np.ndarray) -> np.ndarray:
        return np.bincount(image[mask], minlength=n_img).astype(np.int64)

    tp, fp, ignored = per_img(selected & is_tp), per_img(selected & is_fp), per_img(selected & is_ignored)
    gt_is_counted = ~ground_truth_flags(gt, protocol)[0][a]
    n_counted = np.bincount(gt.image[gt_is_counted], minlength=n_img).astype(np.int64)
    fn = n_counted - tp
    denominator = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), np.nan)

    eff = _single_lane(protocol, threshold)
    det_rows = _table_det_rows(result, gt, dt)
    rows = np.flatnonzero(selected)
    tide = _tide(gt, dt, result, lane, threshold, det_rows, rows, gt_is_counted, _pair_iou_fn(gt, dt, eff))
    errors = {}
    sel_image, sel_fp = image[rows], is_fp[rows]
    for kind in MAIN_ERRORS:
        if kind == "miss":
            errors[kind] = np.bincount(gt.image[tide.is_missed], minlength=n_img).astype(np.int64)
        else:
            errors[kind] = np.bincount(
                sel_image[sel_fp & (tide.code == _CODE[kind])], minlength=n_img
            ).astype(np.int64)
    ap, gain = _ap_gain(result, lane, a, eff, gt, gt_is_counted, in_cap, max_rows)
    names = tuple(getattr(gt, "image_name", None) or ("",) * n_img)
    return PerImage(
        iou_threshold=threshold,
        area=protocol.area_names[a],
        confidence=None if confidence is None else float(confidence),
        ap=ap,
        image_id=np.asarray(gt.image_id, dtype=np.int64),
        image_name=tuple("" if n is None else str(n) for n in names),
        tp=tp,
        fp=fp,
        fn=fn,
        ignored=ignored,
        f1=f1,
        errors=errors,
        ap_gain=gain,
    )


def _in_cap(result: EvalResult) -> np.ndarray:
    """Bool (n_det,): the table rows within the protocol's largest ``max_dets``."""
    table = result.table
    if result.protocol.max_dets is None:
        return np.ones(len(table.det_score), dtype=bool)
    return table.det_rank < max(result.protocol.max_dets)


def _ap_gain(
    result: EvalResult,
    lane: int,
    a: int,
    eff: Protocol,
    gt: GroundTruth,
    gt_is_counted: np.ndarray,
    in_cap: np.ndarray,
    max_rows: int,
) -> tuple[float, np.ndarray]:
    """(the dataset AP at the lane, the AP gain of fixing each image): see the module Notes."""
    table = result.table
    n_img = len(gt.image_id)
    n_class = table.n_positive.shape[0]
    is_tp = table.lane_is_tp(lane)
    is_ignored = table.lane_is_ignored(lane)
    is_fp = ~is_tp & ~is_ignored & in_cap
    n_positive = table.n_positive[:, a : a + 1]
    ranking = ranking_order(table, result.protocol)
    ranking = ranking[in_cap[ranking]]
    ranked_class = table.det_class[ranking].astype(np.int64)
    if len(ranked_class) > 1 and np.any(ranked_class[1:] < ranked_class[:-1]):
        keep_order = np.argsort(ranked_class, kind="stable")
        ranking, ranked_class = ranking[keep_order], ranked_class[keep_order]

    def class_ap(tp: np.ndarray, ignored: np.ndarray, score, cls, rank, n_pos: np.ndarray) -> np.ndarray:
        acc = accumulate(_one_lane(tp), _one_lane(ignored), score, cls, rank, np.arange(len(cls)), n_pos, eff)
        return acc.ap[0, :, 0, -1]

    base = class_ap(
        is_tp[ranking],
        is_ignored[ranking],
        table.det_score[ranking],
        ranked_class,
        table.det_rank[ranking].astype(np.int64),
        n_positive,
    )
    is_defined = ~np.isnan(base)
    n_defined = int(is_defined.sum())
    # The rows a fixed class's AP reads: ignored detections leave every curve unchanged, and
    # (except for the trapezoid, whose last point ends the curve) so do the false positives
    # ranked after the class's last true positive and its ties; fixing neither moves that one.
    shorter = ~is_ignored[ranking]
    fp_cost = _fp_cost(is_tp[ranking][shorter], ranked_class[shorter], n_positive[:, 0])
    cost_of = np.zeros(len(is_tp))
    cost_of[ranking[shorter]] = fp_cost
    if eff.ap_method != "trapezoid_101":
        last_tp_score = np.full(n_class, np.inf)
        tp_ranked = is_tp[ranking]
        np.minimum.at(last_tp_score, ranked_class[tp_ranked], table.det_score[ranking][tp_ranked])
        shorter &= table.det_score[ranking] >= last_tp_score[ranked_class]
    ranking, ranked_class = ranking[shorter], ranked_class[shorter]
    class_start = np.r_[0, np.cumsum(np.bincount(ranked_class, minlength=n_class))]
    ap = float(base[is_defined].mean()) if n_defined else float("nan")
    gain = np.zeros(n_img)
    if n_defined == 0:
        return ap, np.full(n_img, np.nan)
    # The (image, class) pairs with errors: false positives, or counted objects left unmatched.
    key_fp = table.det_image[is_fp].astype(np.int64) * n_class + table.det_class[is_fp]
    tp_rows = is_tp & in_cap
    key_tp = table.det_image[tp_rows].astype(np.int64) * n_class + table.det_class[tp_rows]
    key_gt = gt.image[gt_is_counted].astype(np.int64) * n_class + gt.category[gt_is_counted]
    keys, inverse = np.unique(np.concatenate([key_fp, key_gt, key_tp]), return_inverse=True)
    n_fp_of = np.bincount(inverse[: len(key_fp)], minlength=len(keys))
    n_gt_of = np.bincount(inverse[len(key_fp) : len(key_fp) + len(key_gt)], minlength=len(keys))
    n_tp_of = np.bincount(inverse[len(key_fp) + len(key_gt) :], minlength=len(keys))
    n_missed_of = n_gt_of - n_tp_of
    has_error = (n_fp_of > 0) | (n_missed_of > 0)
    keys, n_missed_of = keys[has_error], n_missed_of[has_error]
    pair_image, pair_class = keys // n_class, keys % n_class
    pair_size = class_start[pair_class + 1] - class_start[pair_class] + n_missed_of
    # Images by an estimate of their gain (largest first), whole images within the budget of
    # ranked rows: each missed object 1 / n_positive, each false positive :func:`_fp_cost`.
    n_errors = np.bincount(
        table.det_image[is_fp].astype(np.int64), weights=cost_of[is_fp], minlength=n_img
    ) + np.bincount(
        pair_image, weights=n_missed_of / np.maximum(n_positive[pair_class, 0], 1), minlength=n_img
    )
    image_rows = np.bincount(pair_image, weights=pair_size, minlength=n_img)
    by_errors = np.lexsort((np.arange(n_img), -n_errors))
    within = np.cumsum(image_rows[by_errors]) <= max_rows
    is_computed = np.zeros(n_img, dtype=bool)
    is_computed[by_errors[within]] = True
    gain[~is_computed] = np.nan
    todo = np.flatnonzero(is_computed[pair_image])
    # The ranked columns, contiguous by class: each pair's class is a slice of them.
    ranked = _RankedColumns(
        is_tp=is_tp[ranking],
        is_ignored=is_ignored[ranking],
        is_fp=is_fp[ranking],
        image=table.det_image[ranking].astype(np.int64),
        score=table.det_score[ranking],
        rank=table.det_rank[ranking].astype(np.int64),
    )
    delta = np.zeros(len(keys))
    chunk_end = np.cumsum(pair_size[todo])
    start = 0
    while start < len(todo):
        stop = max(
            start + 1,
            int(
                np.searchsorted(
                    chunk_end, chunk_end[start] - pair_size[todo[start]] + _GAIN_CHUNK_ROWS, "right"
                )
            ),
        )
        part = todo[start:stop]
        fixed = _fixed_class_ap(ranked, class_start, pair_image[part], pair_class[part], n_missed_of[part])
        delta[part] = class_ap(*fixed, n_positive[pair_class[part]]) - base[pair_class[part]]
        start = stop
    delta = np.where(np.isnan(delta), 0.0, delta)  # a class without ground truth stays undefined
    gain[is_computed] = (np.bincount(pair_image, weights=delta, minlength=n_img) / n_defined)[is_computed]
    return ap, gain


def _fp_cost(is_tp: np.ndarray, det_class: np.ndarray, n_positive: np.ndarray) -> np.ndarray:
    """First-order AP cost of each ranked detection were it a false positive removed.

    Removing a false positive at position ``r`` of its class raises the precision at each later
    true positive ``j`` (``tp_j`` true positives in ``n_j`` rows) by about ``tp_j / n_j**2``;
    each counts ``1 / n_positive`` in the AP. Only the ordering of images uses it.
    """
    n = len(is_tp)
    if n == 0:
        return np.zeros(0)
    start = np.r_[0, np.cumsum(np.bincount(det_class, minlength=len(n_positive)))]
    position = np.arange(n) - start[det_class] + 1
    tp_cum = np.cumsum(is_tp)
    tp_before_class = np.r_[0, tp_cum][start[det_class]]
    tp_in_class = tp_cum - tp_before_class
    term = np.where(is_tp, tp_in_class / position.astype(np.float64) ** 2, 0.0)
    suffix = np.cumsum(term[::-1])[::-1]  # sum from each row to the end of everything
    class_end = np.r_[suffix, 0.0][start[det_class + 1]]  # the sum after the class's last row
    return (suffix - class_end) / np.maximum(n_positive[det_class], 1)


def _one_lane(flags: np.ndarray) -> LaneFlags:
    """Bool (n,) as the packed flags of one lane (bit 0 of one byte a row)."""
    return LaneFlags(bits=flags.astype(np.uint8).reshape(-1, 1), n_lane=1)


@frozen(eq=False)
class _RankedColumns:
    """The detections of the ranked lists at one lane, by class then rank (rows of the ranking)."""

    is_tp: np.ndarray
    is_ignored: np.ndarray
    is_fp: np.ndarray
    image: np.ndarray
    score: np.ndarray
    rank: np.ndarray


def _fixed_class_ap(
    ranked: _RankedColumns,
    class_start: np.ndarray,
    pair_image: np.ndarray,
    pair_class: np.ndarray,
    n_missed: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ranked lists of each (image, class) pair's class with the image fixed, one class a pair.

    ``(is_tp, is_ignored, score, class, rank)`` in ranking order: per pair, its found objects
    first (true positives scored +inf), then its class's list with the image's false positives
    marked ignored (an ignored detection leaves the curve as if removed). Slices are copied
    whole (``np.concatenate``): no gather per row.
    """
    n_pair = len(pair_image)
    lo, hi = class_start[pair_class].tolist(), class_start[pair_class + 1].tolist()
    missed = n_missed.tolist()
    most = max(missed, default=0)
    ones, zeros = np.ones(most, bool), np.zeros(most, bool)
    tops, zero_ranks = np.full(most, np.inf), np.zeros(most, np.int64)

    def laid_out(column: np.ndarray, top: np.ndarray) -> np.ndarray:
        pieces = []
        for a, b, m in zip(lo, hi, missed, strict=True):
            pieces.append(top[:m])
            pieces.append(column[a:b])
        return np.concatenate(pieces) if pieces else column[:0]

    size = np.asarray(hi) - np.asarray(lo) + n_missed if n_pair else np.zeros(0, np.int64)
    pair_of = np.repeat(np.arange(n_pair), size)
    image_of = laid_out(ranked.image, np.full(most, -1, np.int64))
    is_ignored = laid_out(ranked.is_ignored, zeros) | (
        laid_out(ranked.is_fp, zeros) & (image_of == pair_image[pair_of])
    )
    return (
        laid_out(ranked.is_tp, ones),
        is_ignored,
        laid_out(ranked.score, tops),
        pair_of,
        laid_out(ranked.rank, zero_ranks),
    )
