"""Ranked per-detection outcomes -> precision / recall / scores / AP, one function per ``ap_method``.

:func:`accumulate` is the entry point: it picks the function of the protocol's ``ap_method`` from
:data:`AP_METHODS` and runs it once per ``max_dets`` value. The point-sampled methods
(``101_point``, ``11_point``) share the machinery that works on true-positive positions only
(precision peaks at true positives); ``all_point`` follows the devkit's full curve; ``step`` sums
``(R_n - R_{n-1}) * P_n`` without interpolation (scikit-learn's ``average_precision_score``).

``score_ties: threshold`` is a flag through all of them: the ranked list's tied groups (a
class's detections of equal score) are found once per ``max_dets`` value (:func:`tie_group_end`),
and each method reads precision and recall only at the end of a group.

``101_point`` and ``11_point`` under ``score_ties: ranked`` run a compiled kernel
(``deteval/_cacc.c``) when it was built; the numpy code stays as its twin, with the same values
bit for bit (:func:`_accumulate_compiled`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property, partial
from typing import cast

import numpy as np

from deteval import _speedups
from deteval.grouping import rank_in_group
from deteval.matching import LaneFlags
from deteval.memory import precision_bytes, require
from deteval.protocol import COCO_RECALL_THRESHOLDS, Protocol

__all__ = ["Accumulated", "accumulate", "recall_thresholds", "AP_METHODS", "tie_group_end", "step_ap_sum"]


def recall_grid(ap_method: str, eleven_point_grid: str = "matlab_colon") -> np.ndarray:
    """The recall points of a point-sampled ``ap_method`` (empty for the others).

    One definition for the detection protocols and for :mod:`deteval.ranking`.

    Examples
    --------
    >>> float(recall_grid("11_point", "numpy_arange")[3])
    0.30000000000000004
    >>> g = recall_grid("11_point", "matlab_colon")  # MATLAB's 0:0.1:1
    >>> float(g[3]), float(g[6]), float(g[7])
    (0.30000000000000004, 0.6, 0.7)
    >>> len(recall_grid("101_point")), len(recall_grid("all_point"))
    (101, 0)
    """
    if ap_method == "101_point":
        return COCO_RECALL_THRESHOLDS
    if ap_method == "11_point":
        if eleven_point_grid == "numpy_arange":
            # The Python VOC port (py-faster-rcnn): np.arange(0., 1.1, 0.1).
            return np.arange(0.0, 1.1, 0.1)
        if eleven_point_grid == "matlab_colon":
            # The VOC devkit's 0:0.1:1. MATLAB's colon builds the first half as a + k*d and the
            # second half as b - (n-k)*d; the middle element is (a + b) / 2.
            grid = np.empty(11)
            grid[:6] = np.arange(6) * 0.1
            grid[6:] = 1.0 - np.arange(4, -1, -1) * 0.1
            grid[5] = 0.5
            return grid
        return np.arange(11) / 10.0
    return np.zeros(0)


def recall_thresholds(protocol: Protocol) -> np.ndarray:
    """The recall points of the protocol's ``ap_method`` (the R axis; empty for ``all_point``).

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> float(recall_thresholds(get_protocol("voc2007-pyfrcnn"))[3])
    0.30000000000000004
    """
    return recall_grid(protocol.ap_method, protocol.eleven_point_grid)


@dataclass(frozen=True)
class Accumulated:
    """Per-class curves summarised on the protocol's axes.

    Attributes
    ----------
    precision : float64 (n_iou_thr, n_recall_thr, n_class, n_area, n_max_dets)
        Interpolated precision at each recall threshold; NaN where a class has no positive GT
        (pycocotools stores -1). Empty R axis for ``all_point``.
    recall : float64 (n_iou_thr, n_class, n_area, n_max_dets)
        Final recall; NaN where undefined.
    scores : float64, like ``precision``
        Score of the detection where each recall threshold is reached (0 if never).
    ap : float64 (n_iou_thr, n_class, n_area, n_max_dets)
        Average precision of each curve; NaN where undefined.
    """

    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    ap: np.ndarray


class _Lanes:
    """The lanes x detections outcomes of all ranked detections, with cached sparse events.

    Shared by the ``max_dets`` values: each keeps a subset of the ranked positions. The sparse
    events (true positives, positions where a lane's ignored flag differs from its area's first
    lane) are found once, in the match table's order, and placed at their ranked positions; the
    dense (lanes x ranked detections) arrays are only gathered for the methods that read them.
    """

    def __init__(
        self, det_is_tp: np.ndarray, det_is_ignored: np.ndarray, ranking: np.ndarray, n_iou_thr: int
    ):
        self.det_is_tp = det_is_tp
        self.det_is_ignored = det_is_ignored
        self.ranking = ranking
        self.n_iou_thr = max(n_iou_thr, 1)
        self.n_lane = int(det_is_tp.shape[0])
        self.n = len(ranking)
        self.position = np.full(det_is_tp.shape[1], -1, dtype=np.int64)
        self.position[ranking] = np.arange(self.n)
        self._tp: tuple[np.ndarray, np.ndarray] | None = None
        self._differs: dict[int, np.ndarray] = {}
        self._base: dict[int, np.ndarray] = {}

    @cached_property
    def is_tp(self) -> np.ndarray:
        """True positives, bool (n_lane, n) in ranking order."""
        return np.take(self.det_is_tp, self.ranking, axis=1)

    @cached_property
    def is_ignored(self) -> np.ndarray:
        """Ignored detections, bool (n_lane, n) in ranking order."""
        return np.take(self.det_is_ignored, self.ranking, axis=1)

    def _ranked_positions(self, rows: np.ndarray) -> np.ndarray:
        """Sorted ranked positions of table ``rows`` (rows outside the ranking left out)."""
        pos = self.position[rows]
        return np.sort(pos[pos >= 0])

    def tp_events(self) -> tuple[np.ndarray, np.ndarray]:
        """(lane, ranked position) of every true positive, sorted by lane then position."""
        if self._tp is None:
            n_det = self.det_is_tp.shape[1]
            lane, row = np.divmod(np.flatnonzero(self.det_is_tp), max(n_det, 1))
            pos = self.position[row]
            key = lane[pos >= 0] * max(self.n, 1) + pos[pos >= 0]
            key.sort()  # (lane, position) pairs are distinct
            lane_sorted, pos_sorted = np.divmod(key, max(self.n, 1))
            self._tp = (lane_sorted, pos_sorted)
        return self._tp

    def base_row(self, lane: int) -> np.ndarray:
        """Ignored flags of an area's first ``lane`` in ranking order, bool (n,)."""
        if lane not in self._base:
            self._base[lane] = self.det_is_ignored[lane][self.ranking]
        return self._base[lane]

    def differs(self, lane: int) -> np.ndarray:
        """Ranked positions where ``lane``'s ignored flag differs from its area's first lane (sorted)."""
        if lane not in self._differs:
            base = lane - lane % self.n_iou_thr
            rows = np.flatnonzero(self.det_is_ignored[lane] ^ self.det_is_ignored[base])
            self._differs[lane] = self._ranked_positions(rows)
        return self._differs[lane]

    def ignored_at(self, lane: int, positions: np.ndarray) -> np.ndarray:
        """Ignored flags of ``lane`` at ranked ``positions``."""
        return self.det_is_ignored[lane, self.ranking[positions]]


@dataclass(frozen=True)
class _Ranked:
    """The detections kept under one ``max_dets`` value, in ranking order, grouped by class.

    ``lanes`` holds all detections; ``keep`` (None: all) the positions this ``max_dets`` keeps.
    ``is_tp`` / ``is_ignored`` are the kept positions' (n_lane, n) outcomes with lane =
    area * n_iou_thr + threshold, built on first use (the point-sampled methods work on sparse
    events instead); ``class_start`` / ``class_end`` bound each class's segment of the ranked
    list. ``tie_end`` (``score_ties: threshold`` only): for each position, the last position of
    its tied group.
    """

    lanes: _Lanes
    keep: np.ndarray | None
    det_class: np.ndarray
    scores: np.ndarray
    class_start: np.ndarray
    class_end: np.ndarray
    tie_end: np.ndarray | None = None

    @cached_property
    def is_tp(self) -> np.ndarray:
        """True positives of the kept positions, bool (n_lane, n)."""
        return self.kept(self.lanes.is_tp)

    @cached_property
    def is_ignored(self) -> np.ndarray:
        """Ignored detections of the kept positions, bool (n_lane, n)."""
        return self.kept(self.lanes.is_ignored)

    @property
    def n_lane(self) -> int:
        """Number of lanes (area ranges x IoU thresholds)."""
        return self.lanes.n_lane

    @property
    def n(self) -> int:
        """Number of kept detections."""
        return len(self.det_class)

    @cached_property
    def new_position(self) -> np.ndarray | None:
        """Position among the kept detections of each position of ``lanes`` (None: the same)."""
        return None if self.keep is None else np.cumsum(self.keep) - 1

    def kept(self, rows: np.ndarray) -> np.ndarray:
        """The kept positions (last axis) of ``rows``."""
        return rows if self.keep is None else np.compress(self.keep, rows, axis=-1)

    def kept_events(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of the sorted full ``positions`` are kept, and their kept positions."""
        if self.keep is None:
            return np.ones(len(positions), dtype=bool), positions
        is_kept = self.keep[positions]
        return is_kept, cast(np.ndarray, self.new_position)[positions[is_kept]]

    def tp_events(self) -> tuple[np.ndarray, np.ndarray]:
        """(lane, kept position) of every kept true positive, sorted by lane then position."""
        lane, pos = self.lanes.tp_events()
        is_kept, kept_pos = self.kept_events(pos)
        return (lane if self.keep is None else lane[is_kept]), kept_pos


@dataclass(frozen=True)
class _Output:
    """Views of the result arrays at one ``max_dets`` index (written in place, then frozen)."""

    precision: np.ndarray  # (n_iou_thr, n_recall_thr, n_class, n_area)
    recall: np.ndarray  # (n_iou_thr, n_class, n_area)
    scores: np.ndarray  # (n_iou_thr, n_recall_thr, n_class, n_area)
    ap: np.ndarray  # (n_iou_thr, n_class, n_area)


def accumulate(
    det_is_tp: LaneFlags | np.ndarray,
    det_is_ignored: LaneFlags | np.ndarray,
    det_score: np.ndarray,
    det_class: np.ndarray,
    det_rank: np.ndarray,
    ranking: np.ndarray,
    n_positive: np.ndarray,
    protocol: Protocol,
    *,
    recall_thresholds_override: np.ndarray | None = None,
) -> Accumulated:
    """Turn per-detection outcomes into precision/recall curves and AP.

    Parameters
    ----------
    det_is_tp, det_is_ignored : LaneFlags or bool (n_area * n_iou_thr, n_det)
        Outcome per lane (lane = area * n_iou_thr + threshold), packed
        (:class:`~deteval.matching.LaneFlags`, as a match table holds them: the compiled
        kernel reads them as they are) or as bool tables.
    det_score : float64 (n_det,)
    det_class : int32 or int64 (n_det,)
    det_rank : int32 or int64 (n_det,)
        Rank of each detection within its (image, class) group (for ``max_dets``).
    ranking : int64 (n_det,)
        Detection rows in global ranking order, already grouped by class (the protocol's tie
        rule applied).
    n_positive : int64 (n_class, n_area)
        Number of non-ignored ground truths.
    protocol : Protocol
    recall_thresholds_override : float64 (n_recall_thr,), optional
        Recall points other than the protocol's grid (pycocotools' ``params.recThrs``; the
        drop-in :class:`deteval.interop.COCOeval` passes them).

    Returns
    -------
    Accumulated

    Notes
    -----
    ``101_point`` is pycocotools' ``COCOeval.accumulate`` operation by operation;
    ``11_point`` and ``all_point`` follow the VOC devkit (see :func:`ap_101_point`,
    :func:`ap_11_point`, :func:`ap_all_point`); ``step`` is scikit-learn's
    ``average_precision_score`` (:func:`ap_step`). Under ``score_ties: threshold`` every method
    reads precision and recall only at the end of each tied group (:func:`tie_group_end`).

    Examples
    --------
    One class, two ground truths, a true positive then a false positive, VOC2010 rules:

    >>> from deteval.protocol import get_protocol
    >>> acc = accumulate(np.array([[True, False]]), np.zeros((1, 2), bool), np.array([.9, .8]),
    ...                  np.zeros(2, np.int64), np.zeros(2, np.int64), np.arange(2),
    ...                  np.array([[2]]), get_protocol("voc2010"))
    >>> float(acc.ap[0, 0, 0, 0]), float(acc.recall[0, 0, 0, 0])
    (0.5, 0.5)
    """
    n_class, n_area = n_positive.shape
    n_iou_thr = len(protocol.iou_thresholds)
    max_dets = protocol.max_dets if protocol.max_dets is not None else (None,)
    rec_thr = (
        recall_thresholds(protocol)
        if recall_thresholds_override is None
        else np.asarray(recall_thresholds_override, dtype=np.float64)
    )
    n_recall_thr = len(rec_thr)
    shape = (n_iou_thr, n_recall_thr, n_class, n_area, len(max_dets))
    require(
        precision_bytes(shape),
        what=f"the precision and score arrays ({' x '.join(map(str, shape))}: thresholds x recall "
        f"points x classes x area ranges x max_dets, float64)",
        hint="use fewer IoU thresholds, recall points, area ranges or max_dets, or fewer classes "
        "(or a larger --memory-limit on a machine that has it)",
    )
    return _speedups.dispatch(
        "_cacc.accumulate",
        det_is_tp,
        det_is_ignored,
        det_score,
        det_class,
        det_rank,
        ranking,
        n_positive,
        protocol,
        rec_thr,
    )


def _as_bool(flags: LaneFlags | np.ndarray) -> np.ndarray:
    """Lane flags as the bool (n_lane, n_det) table the numpy code reads (unpacked when packed)."""
    return flags.unpack() if isinstance(flags, LaneFlags) else flags


def _as_packed(flags: LaneFlags | np.ndarray, n_lane: int, n_det: int) -> np.ndarray | None:
    """The packed bits of lane flags, uint8 (n_det, ceil(n_lane / 8)), or None when not of that shape."""
    if not isinstance(flags, LaneFlags):
        if not (isinstance(flags, np.ndarray) and flags.dtype == np.bool_ and flags.shape == (n_lane, n_det)):
            return None
        flags = LaneFlags.pack(flags)
    if (
        flags.n_lane != n_lane
        or flags.bits.dtype != np.uint8
        or flags.bits.shape != (n_det, (n_lane + 7) // 8)
    ):
        return None
    return np.ascontiguousarray(flags.bits)


def _accumulate_numpy(
    det_is_tp: LaneFlags | np.ndarray,
    det_is_ignored: LaneFlags | np.ndarray,
    det_score: np.ndarray,
    det_class: np.ndarray,
    det_rank: np.ndarray,
    ranking: np.ndarray,
    n_positive: np.ndarray,
    protocol: Protocol,
    rec_thr: np.ndarray,
) -> Accumulated:
    """:func:`accumulate` by the numpy code of the protocol's ``ap_method`` (the reference)."""
    n_class, n_area = n_positive.shape
    n_iou_thr = len(protocol.iou_thresholds)
    max_dets = protocol.max_dets if protocol.max_dets is not None else (None,)
    shape = (n_iou_thr, len(rec_thr), n_class, n_area, len(max_dets))
    precision = np.full(shape, np.nan)
    scores = np.full(shape, np.nan)
    recall = np.full((n_iou_thr, n_class, n_area, len(max_dets)), np.nan)
    ap = np.full((n_iou_thr, n_class, n_area, len(max_dets)), np.nan)
    ap_method = AP_METHODS[protocol.ap_method]
    if protocol.curve_end != "slope":  # read by trapezoid_101 only (check_protocol refuses others)
        ap_method = partial(ap_method, curve_end=protocol.curve_end)
    # The sparse events of the lanes x detections arrays are found once, at their ranked
    # positions; each max_dets value keeps a subset of the positions (all of them when no
    # detection ranks beyond it) and filters the shared events to it.
    lanes = _Lanes(_as_bool(det_is_tp), _as_bool(det_is_ignored), ranking, n_iou_thr)
    ranked_rank = det_rank[ranking]
    for m, max_det in enumerate(max_dets):
        keep = None if max_det is None else ranked_rank < max_det
        if keep is not None and keep.all():
            keep = None
        rows = ranking if keep is None else ranking[keep]
        ranked_class = det_class[rows]
        bounds = np.searchsorted(ranked_class, _class_bounds(n_class, ranked_class.dtype))
        ranked_scores = det_score[rows]
        ranked = _Ranked(
            lanes=lanes,
            keep=keep,
            det_class=ranked_class,
            scores=ranked_scores,
            class_start=bounds[:-1],
            class_end=bounds[1:],
            tie_end=_tie_end_of(ranked_scores, ranked_class) if protocol.score_ties == "threshold" else None,
        )
        out = _Output(
            precision=precision[..., m], recall=recall[..., m], scores=scores[..., m], ap=ap[..., m]
        )
        ap_method(ranked, n_positive, rec_thr, n_iou_thr, out)
    return Accumulated(precision=precision, recall=recall, scores=scores, ap=ap)


def _class_bounds(n_class: int, dtype: np.dtype) -> np.ndarray:
    """``0 .. n_class`` in ``dtype`` where it fits (searchsorted then reads the classes uncopied)."""
    if np.dtype(dtype).kind in "iu" and n_class <= np.iinfo(dtype).max:
        return np.arange(n_class + 1, dtype=dtype)
    return np.arange(n_class + 1)


#: The largest ``max_dets`` value the kernel takes (``None`` is passed as this: no limit).
_NO_LIMIT = np.iinfo(np.int64).max


def _is_int_array(values: np.ndarray, ndim: int) -> bool:
    """Whether ``values`` is an integer array of ``ndim`` dimensions that int64 holds exactly."""
    return (
        isinstance(values, np.ndarray)
        and values.ndim == ndim
        and values.dtype.kind in "iu"
        and (values.dtype.kind == "i" or values.dtype.itemsize < 8)
    )


def _index_buffer(values: np.ndarray) -> np.ndarray:
    """``values`` as the kernel reads an index column: int32 or int64, C-contiguous (no copy when so)."""
    dtype = values.dtype if values.dtype in (np.int32, np.int64) else np.int64
    return np.ascontiguousarray(values, dtype=dtype)


#: The decline of inputs outside the compiled accumulation's shapes and dtypes (more than 64 lanes,
#: more than 8 max_dets values, other dtypes).
_OUTSIDE = "shapes or dtypes outside the kernel's"


def _accumulate_compiled(
    det_is_tp: LaneFlags | np.ndarray,
    det_is_ignored: LaneFlags | np.ndarray,
    det_score: np.ndarray,
    det_class: np.ndarray,
    det_rank: np.ndarray,
    ranking: np.ndarray,
    n_positive: np.ndarray,
    protocol: Protocol,
    rec_thr: np.ndarray,
) -> Accumulated | _speedups.Decline:
    """:func:`accumulate` by the compiled kernel, or a decline where it does not apply.

    The kernel (``deteval/_cacc.c``) fills the precision, scores and recall of ``101_point``
    and ``11_point`` under ``score_ties: ranked`` for every ``max_dets`` value in one walk of
    the ranking, with the same float64 operations as :func:`_point_sampled`; the AP is then
    taken from its precision by the same numpy expressions (:func:`_mean_ap`,
    :func:`_eleven_point_ap`) on an array of the same layout, so every value is identical.
    """
    ap_of = _COMPILED_AP.get(protocol.ap_method)
    if ap_of is None:
        return _speedups.Decline(f"ap_method {protocol.ap_method}")
    if protocol.score_ties != "ranked":
        return _speedups.Decline(f"score_ties {protocol.score_ties}")
    n_class, n_area = n_positive.shape
    n_thr, n_r = len(protocol.iou_thresholds), len(rec_thr)
    max_dets = protocol.max_dets if protocol.max_dets is not None else (None,)
    n_md, n_det = len(max_dets), len(det_score)
    limits = [_NO_LIMIT if m is None else m for m in max_dets]
    if not (
        n_thr >= 1
        and n_class >= 1
        and n_area >= 1
        and n_r >= 1
        and n_area * n_thr <= 64
        and n_md <= 8
        and all(isinstance(m, (int, np.integer)) and -_NO_LIMIT <= m <= _NO_LIMIT for m in limits)
        and isinstance(det_score, np.ndarray)
        and det_score.dtype == np.float64
        and det_score.shape == (n_det,)
        and _is_int_array(det_class, 1)
        and _is_int_array(det_rank, 1)
        and _is_int_array(ranking, 1)
        and _is_int_array(n_positive, 2)
        and det_class.shape == det_rank.shape == (n_det,)
    ):
        return _speedups.Decline(_OUTSIDE)
    tp_bits = _as_packed(det_is_tp, n_area * n_thr, n_det)
    ignored_bits = _as_packed(det_is_ignored, n_area * n_thr, n_det)
    if tp_bits is None or ignored_bits is None:
        return _speedups.Decline(_OUTSIDE)
    tp_needed = np.stack([_min_tp_for_recall(n_positive[:, a], rec_thr) for a in range(n_area)])
    precision = np.full((n_thr, n_r, n_class, n_area, n_md), np.nan)
    scores = np.full((n_thr, n_r, n_class, n_area, n_md), np.nan)
    recall = np.full((n_thr, n_class, n_area, n_md), np.nan)
    contiguous = np.ascontiguousarray
    ranking_buffer = _index_buffer(ranking)
    done = _speedups.module_of("_cacc.accumulate").accumulate(  # type: ignore[union-attr]
        tp_bits,
        ignored_bits,
        ranking_buffer,
        _index_buffer(det_rank),
        _index_buffer(det_class),
        contiguous(det_score),
        contiguous(n_positive, dtype=np.int64),
        contiguous(tp_needed, dtype=np.int64),
        np.array(limits, dtype=np.int64),
        n_area,
        n_thr,
        n_class,
        ap_of is _eleven_point_ap,
        precision,
        scores,
        recall,
        ranking_buffer.dtype.itemsize,
    )
    if done is None:
        return _speedups.Decline(_OUTSIDE)
    # The AP by the numpy code's reduction, on the precision laid out as _point_sampled returns
    # it (thresholds, areas, classes, recall points), one max_dets value and threshold at a time:
    # each row's reduction reads only that row, so the values are the same as on the whole
    # array, and the copy is 1 / (n_md * n_thr) of the precision array, not all of it again.
    ap = np.empty((n_thr, n_class, n_area, n_md))
    for m in range(n_md):
        for t in range(n_thr):
            at_recall = contiguous(precision[t, :, :, :, m].transpose(2, 1, 0))  # (area, class, R)
            ap[t, :, :, m] = ap_of(at_recall[None])[0]
    return Accumulated(precision=precision, recall=recall, scores=scores, ap=ap)


# --------------------------------------------------------------------------------------------
# One function per ap_method
# --------------------------------------------------------------------------------------------


_speedups.register(
    "_cacc.accumulate",
    "deteval._cacc",
    _accumulate_compiled,
    _accumulate_numpy,
    declines=(
        "ap_method all_point",
        "ap_method trapezoid_101",
        "ap_method step",
        "score_ties threshold",
        _OUTSIDE,
    ),
)


def ap_101_point(
    ranked: _Ranked, n_positive: np.ndarray, rec_thr: np.ndarray, n_iou_thr: int, out: _Output
) -> None:
    """COCO: mean interpolated precision at 101 recall points (pycocotools' ``accumulate``).

    Notes
    -----
    Operation by operation as ``COCOeval.accumulate``: ``pr = tp / (fp + tp + np.spacing(1))``,
    the backwards envelope, ``np.searchsorted(rc, recThrs, 'left')``, 0 beyond the last reached
    recall, AP = ``np.mean`` over the recall points. Ignored detections stay in the ranked list
    (they repeat the previous point), as in pycocotools; this matters for ``scores``.
    """

    def coco_precision(n_tp: np.ndarray, n_fp: np.ndarray) -> np.ndarray:
        return n_tp / (n_fp + n_tp + np.spacing(1))

    precision_at_recall = _point_sampled(ranked, n_positive, rec_thr, n_iou_thr, out, coco_precision)
    out.ap[...] = _mean_ap(precision_at_recall)


def _mean_ap(precision_at_recall: np.ndarray) -> np.ndarray:
    """COCO's AP, ``np.mean`` over the recall points: (thr, area, class, R) -> (thr, class, area)."""
    return np.mean(precision_at_recall, axis=-1).transpose(0, 2, 1)


def ap_11_point(
    ranked: _Ranked, n_positive: np.ndarray, rec_thr: np.ndarray, n_iou_thr: int, out: _Output
) -> None:
    """VOC2007: the mean of the interpolated precision at 11 recall points (``VOCevalDet.m``).

    Notes
    -----
    The devkit's ``ap = ap + p / 11`` in order, reproduced as a cumulative sum of ``p / 11``
    (the same additions, so the same rounding). Precision is ``tp / (tp + fp)``, 0 where nothing
    was counted yet (the Python port's ``np.maximum(tp + fp, eps)``).
    """
    precision_at_recall = _point_sampled(ranked, n_positive, rec_thr, n_iou_thr, out, devkit_precision)
    out.ap[...] = _eleven_point_ap(precision_at_recall)


def _eleven_point_ap(precision_at_recall: np.ndarray) -> np.ndarray:
    """The devkit's ``ap = ap + p / 11``: (thr, area, class, R) -> (thr, class, area)."""
    return np.cumsum(precision_at_recall / 11.0, axis=-1)[..., -1].transpose(0, 2, 1)


#: The point-sampled methods the compiled kernel runs, and the AP of their precision array.
_COMPILED_AP: Mapping[str, Callable[[np.ndarray], np.ndarray]] = {
    "101_point": _mean_ap,
    "11_point": _eleven_point_ap,
}


def ap_all_point(
    ranked: _Ranked, n_positive: np.ndarray, rec_thr: np.ndarray, n_iou_thr: int, out: _Output
) -> None:
    """VOC2010+: area under the precision envelope at every recall change (``VOCap.m``).

    Fills ``recall`` and ``ap``; there are no recall points, so ``precision`` and ``scores``
    have an empty R axis. Under ``score_ties: threshold`` the curve has one point per tied
    group (its end) instead of one per detection.
    """
    n_class, n_area = n_positive.shape
    is_fp = ~ranked.is_tp & ~ranked.is_ignored
    is_end = _is_tie_end(ranked)
    for k in range(n_class):
        segment = slice(ranked.class_start[k], ranked.class_end[k])
        n_tp = np.cumsum(ranked.is_tp[:, segment], axis=1).astype(float)
        n_fp = np.cumsum(is_fp[:, segment], axis=1).astype(float)
        if is_end is not None:  # score_ties: threshold: the curve's points are the tied groups' ends
            n_tp, n_fp = n_tp[:, is_end[segment]], n_fp[:, is_end[segment]]
        for a in range(n_area):
            n_pos = n_positive[k, a]
            if n_pos == 0:
                continue
            for t in range(n_iou_thr):
                lane = a * n_iou_thr + t
                rec = n_tp[lane] / n_pos
                out.recall[t, k, a] = rec[-1] if len(rec) else 0.0
                out.ap[t, k, a] = _area_under_envelope(rec, devkit_precision(n_tp[lane], n_fp[lane]))


def ap_trapezoid_101(
    ranked: _Ranked,
    n_positive: np.ndarray,
    rec_thr: np.ndarray,
    n_iou_thr: int,
    out: _Output,
    *,
    curve_end: str = "slope",
) -> None:
    """Ultralytics: trapezoid of the precision envelope at 101 recall points (``compute_ap``).

    Fills ``recall`` and ``ap``; the R axis is empty (the AP is not a mean of sampled points).
    ``curve_end`` is the protocol field: how the envelope ends after the last recall point.

    Notes
    -----
    ``ultralytics/utils/metrics.py``, ``ap_per_class`` and ``compute_ap``, operation by
    operation: ``recall = tpc / (n_l + 1e-16)``, ``precision = tpc / (tpc + fpc)``; under
    ``curve_end: slope`` (before 8.4, method "interp") ``mrec = [0, recall, 1]``, ``mpre = [1,
    precision, 0]``, so the envelope falls linearly to 0 at recall 1; under ``drop`` (8.4 and
    later) ``mrec = [0, recall, recall[-1], 1]``, ``mpre = [1, precision, 0, 0]``, so it is 0
    past the last recall point (``np.interp`` reads the later of the two equal ``mrec`` values,
    so precision at exactly ``recall[-1]`` is 0 too). The envelope starts at precision 1, unlike
    VOC's 0: ``mpre = flip(maximum.accumulate(flip(mpre)))``, then
    ``trapezoid(interp(linspace(0, 1, 101), mrec, mpre), x)``. A class with ground truth and no
    detection has AP 0 (Ultralytics skips it and leaves its zero). Ultralytics has no ignored
    detections; ignored ones (crowd, difficult under other settings) are left out of the curve.
    Under ``score_ties: threshold`` the curve has one point per tied group that keeps a
    detection (its last kept one).
    """
    n_class, n_area = n_positive.shape
    x = np.linspace(0, 1, 101)
    is_kept = ~ranked.is_ignored
    is_end = _is_tie_end(ranked)
    for k in range(n_class):
        segment = slice(ranked.class_start[k], ranked.class_end[k])
        for a in range(n_area):
            n_pos = n_positive[k, a]
            if n_pos == 0:
                continue
            for t in range(n_iou_thr):
                lane = a * n_iou_thr + t
                tp = ranked.is_tp[lane, segment][is_kept[lane, segment]].astype(float)
                if len(tp) == 0:
                    out.recall[t, k, a], out.ap[t, k, a] = 0.0, 0.0
                    continue
                tpc = np.cumsum(tp)
                fpc = np.cumsum(1 - tp)
                if is_end is not None:  # score_ties: threshold: one point per tied group (kept rows)
                    tpc, fpc = _at_kept_group_ends(is_end[segment], is_kept[lane, segment], tpc, fpc)
                recall = tpc / (n_pos + 1e-16)
                precision = tpc / (tpc + fpc)
                if curve_end == "drop":
                    mrec = np.concatenate(([0.0], recall, [recall[-1]], [1.0]))
                    mpre = np.concatenate(([1.0], precision, [0.0], [0.0]))
                else:
                    mrec = np.concatenate(([0.0], recall, [1.0]))
                    mpre = np.concatenate(([1.0], precision, [0.0]))
                mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
                out.recall[t, k, a] = recall[-1]
                out.ap[t, k, a] = float(_trapezoid(np.interp(x, mrec, mpre), x))


def ap_step(
    ranked: _Ranked, n_positive: np.ndarray, rec_thr: np.ndarray, n_iou_thr: int, out: _Output
) -> None:
    """No interpolation: AP = sum over thresholds of ``(R_n - R_{n-1}) * P_n`` (scikit-learn).

    Fills ``recall`` and ``ap``; the R axis is empty, as for ``all_point``: the AP is the exact
    area under the step curve, not a mean of sampled points (the curve itself:
    :func:`deteval.analysis.pr_curve`).

    Notes
    -----
    scikit-learn's ``average_precision_score`` with one threshold per distinct score; with
    ``score_ties: ranked`` (the default) every detection is its own threshold instead (ties in
    ``score_order``). Precision is ``tp / (tp + fp)``; recall is ``tp / n_positive``, so ground
    truths that no detection found count (scikit-learn's recall denominator is the positives
    in ``y_true``). Only thresholds that add a true positive move recall; their precision is
    read after every detection of the threshold, as :func:`step_ap_sum` sums them. Ignored
    detections are neither true nor false positives. A class with ground truth and no true
    positive has AP 0; without ground truth, NaN.
    """
    n_class, n_area = n_positive.shape
    n_lane, n = ranked.n_lane, ranked.n
    tp_lane, tp_pos = ranked.tp_events()
    tp_class = ranked.det_class[tp_pos]
    segment_key = tp_lane * n_class + tp_class
    n_tp_so_far = rank_in_group(segment_key) + 1
    count_pos = tp_pos
    if ranked.tie_end is not None:
        n_tp_so_far, count_pos = _counts_at_tie_end(ranked.tie_end, tp_lane, tp_pos, n_tp_so_far)
    # One threshold per distinct (lane, position where the counts are read): every TP under
    # `ranked`, the last TP of each tied group under `threshold`.
    point_key = tp_lane * max(n, 1) + count_pos
    is_point = np.ones(len(point_key), dtype=bool)
    is_point[:-1] = point_key[1:] != point_key[:-1]
    n_fp_so_far = _fp_before_each_tp(
        ranked,
        tp_lane[is_point],
        count_pos[is_point],
        ranked.class_start[tp_class[is_point]],
        n_tp_so_far[is_point],
        n_iou_thr,
    )
    n_tp_at = n_tp_so_far[is_point].astype(float)
    key_at = segment_key[is_point]
    lane_at = tp_lane[is_point]
    n_pos_at = n_positive[tp_class[is_point], lane_at // max(n_iou_thr, 1)]
    with np.errstate(divide="ignore", invalid="ignore"):  # a TP always has a counted GT
        recall_at = n_tp_at / n_pos_at
    precision_at = n_tp_at / (n_tp_at + n_fp_so_far)
    is_start = np.ones(len(key_at), dtype=bool)
    is_start[1:] = key_at[1:] != key_at[:-1]
    starts = np.flatnonzero(is_start)
    ap = np.zeros(n_lane * n_class)
    if len(starts):
        ap[key_at[starts]] = step_ap_sum(recall_at, precision_at, starts)
    n_tp = np.bincount(segment_key, minlength=n_lane * n_class)
    ap, n_tp = ap.reshape(n_lane, n_class), n_tp.reshape(n_lane, n_class)
    for a in range(n_area):
        n_pos = n_positive[:, a]
        is_defined = n_pos > 0
        for t in range(n_iou_thr):
            lane = a * n_iou_thr + t
            with np.errstate(divide="ignore", invalid="ignore"):
                out.recall[t, :, a] = np.where(is_defined, n_tp[lane] / n_pos, np.nan)
            out.ap[t, :, a] = np.where(is_defined, ap[lane], np.nan)


#: Ultralytics calls ``np.trapz``, renamed ``np.trapezoid`` in numpy 2 (the same sum).
_trapezoid = np.trapezoid  # np.trapz before numpy 2: the same sum


#: ``ap_method`` field value -> the function that fills one ``max_dets`` slice.
AP_METHODS: Mapping[str, Callable[..., None]] = {
    "101_point": ap_101_point,
    "11_point": ap_11_point,
    "all_point": ap_all_point,
    "trapezoid_101": ap_trapezoid_101,
    "step": ap_step,
}


# --------------------------------------------------------------------------------------------
# Tied scores (score_ties: threshold) and the step sum: shared with deteval.ranking
# --------------------------------------------------------------------------------------------


def tie_group_end(is_end: np.ndarray) -> np.ndarray:
    """For each position, the index of the last position of its tied group (along the last axis).

    Parameters
    ----------
    is_end : bool (..., n)
        True where a group of tied scores ends (the last position must be True).

    Returns
    -------
    int64 (..., n)

    Examples
    --------
    >>> tie_group_end(np.array([False, True, True, False, False, True])).tolist()
    [1, 1, 2, 5, 5, 5]
    """
    n = is_end.shape[-1]
    idx = np.where(is_end, np.arange(n), n - 1)
    return np.flip(np.minimum.accumulate(np.flip(idx, axis=-1), axis=-1), axis=-1)


def step_ap_sum(recall: np.ndarray, precision: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sum of ``(R_n - R_{n-1}) * P_n`` over each segment of thresholds (``R_{-1} = 0``).

    scikit-learn's ``average_precision_score`` for each segment (one binary problem or one
    detection curve), thresholds in decreasing score order.

    Parameters
    ----------
    recall, precision : float64 (n_thresholds,)
        At each threshold, segments one after another.
    starts : int64 (n_segments,)
        Index of each segment's first threshold (increasing; every segment non-empty).

    Examples
    --------
    >>> step_ap_sum(np.array([.5, .5, 1.]), np.array([1., .5, 2 / 3]), np.array([0])).round(6).tolist()
    [0.833333]
    """
    previous = np.empty_like(recall)
    previous[1:] = recall[:-1]
    previous[starts] = 0.0
    return np.add.reduceat((recall - previous) * precision, starts)


def _tie_end_of(scores: np.ndarray, det_class: np.ndarray) -> np.ndarray:
    """:func:`tie_group_end` of a ranked list: a group is a class's run of equal (float64) scores."""
    n = len(scores)
    is_end = np.ones(n, dtype=bool)
    if n > 1:
        np.not_equal(scores[1:], scores[:-1], out=is_end[:-1])
        is_end[:-1] |= det_class[1:] != det_class[:-1]
    return tie_group_end(is_end)


def _is_tie_end(ranked: _Ranked) -> np.ndarray | None:
    """Whether each ranked position ends its tied group (None under ``score_ties: ranked``)."""
    if ranked.tie_end is None:
        return None
    return ranked.tie_end == np.arange(len(ranked.tie_end))


def _counts_at_tie_end(
    tie_end: np.ndarray, tp_lane: np.ndarray, tp_pos: np.ndarray, n_tp_so_far: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each TP (in lane, position order): the TP count and the position at its group's end.

    The TPs of one lane and tied group are adjacent in that order, and their count at the
    group's end is the count of the group's last TP.
    """
    end_pos = tie_end[tp_pos]
    key = tp_lane * len(tie_end) + end_pos
    last = np.searchsorted(key, key, side="right") - 1
    return n_tp_so_far[last], end_pos


def _at_kept_group_ends(
    is_end: np.ndarray, is_kept: np.ndarray, *counts: np.ndarray
) -> tuple[np.ndarray, ...]:
    """``counts`` (one value per kept row) read only at each tied group's last kept row."""
    group = np.cumsum(np.concatenate(([True], is_end[:-1])))[is_kept]
    is_last = np.ones(len(group), dtype=bool)
    is_last[:-1] = group[1:] != group[:-1]
    return tuple(c[is_last] for c in counts)


# --------------------------------------------------------------------------------------------
# Shared machinery of the point-sampled methods
# --------------------------------------------------------------------------------------------


def _point_sampled(
    ranked: _Ranked,
    n_positive: np.ndarray,
    rec_thr: np.ndarray,
    n_iou_thr: int,
    out: _Output,
    precision_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Interpolated precision and scores at each recall threshold; fills ``out`` but ``ap``.

    Returns
    -------
    float64 (n_iou_thr, n_area, n_class, n_recall_thr)
        The interpolated precision (0 where a threshold is never reached; NaN for classes
        without positives), for the method's AP.
    """
    n_class, n_area = n_positive.shape
    n_lane, n = ranked.n_lane, ranked.n
    n_recall_thr = len(rec_thr)
    ranked_scores = np.append(ranked.scores, 0.0)
    # Precision peaks at true positives, so only TP positions are needed: for the j-th TP of
    # its (lane, class) at rank `tp_pos`, tp = j and fp = the FPs counted since the class began.
    tp_lane, tp_pos = ranked.tp_events()
    tp_class = ranked.det_class[tp_pos]
    segment_key = tp_lane * n_class + tp_class
    n_tp_so_far = rank_in_group(segment_key) + 1
    count_pos = tp_pos
    if ranked.tie_end is not None:  # score_ties: threshold: counts at the end of the TP's tied group
        n_tp_so_far, count_pos = _counts_at_tie_end(ranked.tie_end, tp_lane, tp_pos, n_tp_so_far)
    n_fp_so_far = _fp_before_each_tp(
        ranked, tp_lane, count_pos, ranked.class_start[tp_class], n_tp_so_far, n_iou_thr
    )
    # One trailing 0 so that an empty piece of suffix_max_at reads a valid element (padded once,
    # not once per lane: the array has one value per true positive of every lane).
    precision_at_tp = np.append(precision_of(n_tp_so_far.astype(float), n_fp_so_far.astype(float)), 0.0)
    n_tp = np.bincount(segment_key, minlength=n_lane * n_class).reshape(n_lane, n_class)
    tp_first = (np.cumsum(n_tp.ravel()) - n_tp.ravel()).reshape(n_lane, n_class)
    has_dets = ranked.class_end > ranked.class_start
    precision_at_recall = np.full((n_iou_thr, n_area, n_class, n_recall_thr), np.nan)
    for a in range(n_area):
        n_pos = n_positive[:, a]
        is_defined = n_pos > 0
        tp_needed = _min_tp_for_recall(n_pos, rec_thr)  # (n_class, n_recall_thr)
        target = np.maximum(tp_needed, 1)
        for t in range(n_iou_thr):
            lane = a * n_iou_thr + t
            with np.errstate(divide="ignore", invalid="ignore"):
                final_recall = n_tp[lane] / n_pos
            out.recall[t, :, a] = np.where(is_defined, np.where(has_dets, final_recall, 0.0), np.nan)
            # pycocotools: idx = searchsorted(rc, thr, "left"); recall >= thr <=> tp >= tp_needed.
            has_target = target <= n_tp[lane][:, None]
            first = tp_first[lane][:, None] + target - 1
            end = tp_first[lane] + n_tp[lane]
            interpolated = suffix_max_at(
                precision_at_tp, np.where(has_target, first, end[:, None]), end, has_target
            )
            is_reached = has_target | ((tp_needed == 0) & has_dets[:, None])
            # The rank where recall first reaches the threshold: the target TP, or the first
            # ranked detection when the threshold is 0 (searchsorted(rc, 0) == 0).
            from_tp = has_target & (tp_needed > 0)
            if len(tp_pos):
                pos = np.where(
                    from_tp, tp_pos[np.minimum(first, len(tp_pos) - 1)], ranked.class_start[:, None]
                )
            else:
                pos = np.broadcast_to(ranked.class_start[:, None], first.shape)
            score_at_recall = np.where(is_reached, ranked_scores[np.minimum(pos, n)], 0.0)
            interpolated = np.where(is_defined[:, None], interpolated, np.nan)
            out.precision[t, :, :, a] = interpolated.T
            out.scores[t, :, :, a] = np.where(is_defined[:, None], score_at_recall, np.nan).T
            precision_at_recall[t, a] = interpolated
    return precision_at_recall


def _fp_before_each_tp(
    ranked: _Ranked,
    tp_lane: np.ndarray,
    tp_pos: np.ndarray,
    tp_seg_start: np.ndarray,
    n_tp_so_far: np.ndarray,
    n_iou_thr: int,
) -> np.ndarray:
    """False positives from the start of each TP's class segment up to the TP, lane by lane.

    A detection is a TP, an FP or ignored (never two), so the FPs in [start, pos] are the
    detections there minus the TPs (``n_tp_so_far``) minus the ignored ones. The ignored counts
    come from one prefix sum per area range (its first lane) plus, for the area's other lanes,
    the few positions where their ignored flags differ (matches to ignored ground truth at some
    thresholds only), found once for every ``max_dets`` value: a prefix sum per lane would cost
    40 full passes for COCO.
    """
    lanes = ranked.lanes
    n_lane, n = ranked.n_lane, ranked.n
    out = np.empty(len(tp_pos), dtype=np.int64)
    base_before = np.zeros(n + 1, dtype=np.int64)
    lane_bounds = np.searchsorted(tp_lane, np.arange(n_lane + 1))
    for lane in range(n_lane):
        base_lane = lane - lane % n_iou_thr
        if lane == base_lane:  # the area's first lane: its own prefix sum, the others' base
            np.cumsum(ranked.kept(lanes.base_row(base_lane)), out=base_before[1:])
        lo, hi = lane_bounds[lane], lane_bounds[lane + 1]
        if lo == hi:
            continue
        pos, start = tp_pos[lo:hi], tp_seg_start[lo:hi]
        ignored = base_before[pos + 1] - base_before[start]
        if lane != base_lane:
            differs_full = lanes.differs(lane)
            is_kept, differs = ranked.kept_events(differs_full)
            if len(differs):
                sign = np.where(lanes.ignored_at(lane, differs_full[is_kept]), 1, -1)
                before = np.concatenate(([0], np.cumsum(sign)))
                ignored += before[np.searchsorted(differs, pos + 1)] - before[np.searchsorted(differs, start)]
        out[lo:hi] = (pos - start + 1) - n_tp_so_far[lo:hi] - ignored
    return out


def suffix_max_at(padded: np.ndarray, start: np.ndarray, end: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """max(padded[start[k, r] : end[k]]) for each k and r (0 where not ``valid``).

    ``padded`` is the values followed by one extra element (any value: it is only read for
    empty pieces, which ``valid`` masks). ``start`` is non-decreasing along r. One
    ``maximum.reduceat`` over the pieces [start[k, r], start[k, r + 1]) and a suffix maximum
    over r: a max is exact, so these are the values of pycocotools' backwards envelope.
    """
    n_class, n_r = start.shape
    if len(padded) <= 1:
        return np.zeros((n_class, n_r))
    bounds = np.concatenate([start, end[:, None]], axis=1)
    pieces = np.maximum.reduceat(padded, bounds.ravel()).reshape(n_class, n_r + 1)[:, :n_r]
    pieces = np.where(valid, pieces, 0.0)
    return np.maximum.accumulate(pieces[:, ::-1], axis=1)[:, ::-1]


def devkit_precision(n_tp: np.ndarray, n_fp: np.ndarray) -> np.ndarray:
    """``tp / max(tp + fp, eps)``: the Python VOC port (0 where nothing was counted yet)."""
    return n_tp / np.maximum(n_tp + n_fp, np.finfo(np.float64).eps)


def _min_tp_for_recall(n_pos: np.ndarray, rec_thr: np.ndarray) -> np.ndarray:
    """Smallest tp count j with ``j / n_pos >= thr`` for each class and threshold.

    Computed with the same float division as the recall values, so it is exact: the answer is
    within two of ``ceil(thr * n_pos)`` (both roundings are within one unit in the last place), so
    those four candidates are tried, smallest last. ``n_pos + 1`` where no count reaches the
    threshold; classes without positives get an unreachable count.

    Examples
    --------
    >>> _min_tp_for_recall(np.array([3, 0]), np.array([0.0, 0.34, 1.0])).tolist()[0]
    [0, 2, 3]
    """
    out = np.full((len(n_pos), len(rec_thr)), np.iinfo(np.int64).max // 4, dtype=np.int64)
    has = n_pos > 0
    n = n_pos[has].astype(np.float64)[:, None]
    thr = np.asarray(rec_thr, dtype=np.float64)[None, :]
    base = np.ceil(thr * n)
    best = np.broadcast_to(n + 1, base.shape).copy()
    for step in (1.0, 0.0, -1.0, -2.0):
        count = base + step
        with np.errstate(invalid="ignore"):
            reaches = (count >= 0) & (count <= n) & (count / n >= thr)
        best = np.where(reaches, count, best)
    out[has] = best.astype(np.int64)
    return out


def _area_under_envelope(rec: np.ndarray, prec: np.ndarray) -> float:
    """Area under the precision envelope at every recall change (VOC2010+ ``VOCap.m``).

    >>> round(_area_under_envelope(np.array([.5, .5, 1.]), np.array([1., .5, 2 / 3])), 10)
    0.8333333333
    """
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))
