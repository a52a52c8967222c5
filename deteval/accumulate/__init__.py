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

The package: this module (the entry point, the numpy driver and the compiled path);
:mod:`~deteval.accumulate.methods` (one function per ``ap_method``);
:mod:`~deteval.accumulate.point_sampled` (their shared machinery); :mod:`~deteval.accumulate.ties`
(tied scores and the step sum); :mod:`~deteval.accumulate.grids` (recall grids);
:mod:`~deteval.accumulate.values` (:class:`Accumulated` and the working values).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from deteval import _speedups
from deteval.accumulate.grids import recall_grid, recall_thresholds
from deteval.accumulate.methods import (
    _COMPILED_AP,
    AP_METHODS,
    ap_11_point,
    ap_101_point,
    ap_all_point,
    ap_step,
    ap_trapezoid_101,
)
from deteval.accumulate.point_sampled import _min_tp_for_recall, devkit_precision, suffix_max_at
from deteval.accumulate.ties import _tie_end_of, step_ap_sum, tie_group_end
from deteval.accumulate.values import Accumulated, _Lanes, _Output, _Ranked
from deteval.matching import LaneFlags
from deteval.memory import precision_bytes, require
from deteval.protocol import Protocol

__all__ = [
    "Accumulated",
    "accumulate",
    "recall_thresholds",
    "AP_METHODS",
    "tie_group_end",
    "step_ap_sum",
    "ap_101_point",
    "ap_11_point",
    "ap_all_point",
    "ap_step",
    "ap_trapezoid_101",
    "devkit_precision",
    "recall_grid",
    "suffix_max_at",
]


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
    threads: int = 1,
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
    threads : int
        The compiled kernel splits the classes over this many threads (the caller's
        :func:`deteval._parallel.kernel_threads`); the values do not depend on it.

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
        threads=threads,
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
    threads: int = 1,
) -> Accumulated:
    """:func:`accumulate` by the numpy code of the protocol's ``ap_method`` (the reference).

    ``threads`` is the compiled kernel's; the numpy code runs on one.
    """
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
    threads: int = 1,
) -> Accumulated | _speedups.Decline:
    """:func:`accumulate` by the compiled kernel, or a decline where it does not apply.

    The kernel (``deteval/_cacc.c``) fills the precision, scores and recall of ``101_point``
    and ``11_point`` under ``score_ties: ranked`` for every ``max_dets`` value in one walk of
    the ranking, with the same float64 operations as :func:`_point_sampled`, and the AP from
    that precision with the additions of the numpy expressions (:func:`_mean_ap`: ``np.mean``'s
    pairwise sum over the recall points; :func:`_eleven_point_ap`: the cumulative sum), so every
    value is identical (tests/unit/test_cacc.py compares them with the numpy twin's). Classes
    without positives are NaN in every output, written by the kernel too.
    """
    eleven_point = _COMPILED_AP.get(protocol.ap_method)
    if eleven_point is None:
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
    # (n_area, n_class, n_r), every area in one call (element by element: the values of a call per area)
    tp_needed = _min_tp_for_recall(n_positive.T.ravel(), rec_thr).reshape(n_area, n_class, n_r)
    # Every item is written by the kernel (NaN for classes without positives, the AP too): no
    # fill pass over the precision and scores arrays before, no AP reduction after.
    precision = np.empty((n_thr, n_r, n_class, n_area, n_md))
    scores = np.empty((n_thr, n_r, n_class, n_area, n_md))
    recall = np.empty((n_thr, n_class, n_area, n_md))
    ap = np.empty((n_thr, n_class, n_area, n_md))
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
        eleven_point,
        precision,
        scores,
        recall,
        ap,
        ranking_buffer.dtype.itemsize,
        max(1, int(threads)),
    )
    if done is None:
        return _speedups.Decline(_OUTSIDE)
    return Accumulated(precision=precision, recall=recall, scores=scores, ap=ap)


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
