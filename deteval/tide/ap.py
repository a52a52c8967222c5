"""TIDE's AP: tidecv's 101-point AP (:func:`tide_ap`) and the AP of one fixed scenario.

The scenario functions score the data with some errors fixed: :func:`_tidecv_ap_fn` as tidecv
does, :func:`_protocol_ap_fn` under a deteval protocol's interpolation, ties and mean.
"""

from __future__ import annotations

import numpy as np

from deteval import _speedups
from deteval.accumulate import accumulate
from deteval.grouping import lexsort
from deteval.protocol import Protocol
from deteval.summary import mean_defined
from deteval.tide.outcome import _Outcome


def tide_ap(
    point_class: np.ndarray,
    point_score: np.ndarray,
    point_is_tp: np.ndarray,
    n_positive: np.ndarray,
    *,
    tie_keys: tuple = (),
    is_included: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Per-class AP exactly as tidecv's ``APDataObject.get_ap`` computes it (as a fraction).

    Parameters
    ----------
    point_class : int64 (n_point,)
    point_score : float64 (n_point,)
    point_is_tp : bool (n_point,)
    n_positive : int64 (n_class,)
    tie_keys : tuple of (n_point,) arrays
        Order of equal scores, most significant first (tidecv: the order points were pushed,
        its sort is stable).
    is_included : bool (n_class,), optional
        Classes that enter the mean; the others are NaN. Default: classes with points or
        positives (tidecv's ``not is_empty()``).
    order : int64 (n_point,), optional
        The ranking (class, then descending score, then ``tie_keys``), when already known.

    Returns
    -------
    float64 (n_class,)
        0 for an included class without positives (tidecv: ``if num_gt_positives == 0: return
        0``), NaN for an excluded class.

    Notes
    -----
    tidecv: ``precision = tp / (tp + fp)`` (no epsilon), the envelope, recall points
    ``x / 100`` for x in 0..100 (typed fractions, not ``np.linspace``), ``searchsorted(recalls,
    x, "left")``, 0 beyond the last recall; the mean of the 101 values. pycocotools differs in
    the epsilon and in ten recall points one float step above x / 100.

    Examples
    --------
    >>> tide_ap(np.array([0, 0]), np.array([.9, .8]), np.array([True, False]), np.array([2])).round(6).tolist()
    [0.50495]
    """
    n_class = len(n_positive)
    n_positive = np.asarray(n_positive, dtype=np.int64)
    if is_included is None:
        is_included = (n_positive > 0) | (np.bincount(point_class, minlength=n_class) > 0)
    if order is None:
        order = ranking(point_class, point_score, tie_keys)
    y = _tide_points(point_class[order], point_is_tp[order], n_positive, is_included)
    out = np.full(n_class, np.nan)
    for k in np.flatnonzero(is_included).tolist():
        out[k] = sum(y[k].tolist()) / 101  # tidecv: sum(y_range) / len(y_range)
    return out


def _tide_points(
    cls: np.ndarray, is_tp: np.ndarray, n_positive: np.ndarray, is_included: np.ndarray
) -> np.ndarray:
    """TIDE's 101 recall-point values per class (rows of zeros where no positives or not included).

    ``cls`` and ``is_tp``: the points in ranking order (classes increasing). Runs the compiled
    kernel ``deteval._canalyze`` when built, else this numpy code (its twin, bit for bit).
    """
    return _speedups.dispatch("_canalyze.tide_points", cls, is_tp, n_positive, is_included)


def _tide_points_kernel(
    cls: np.ndarray, is_tp: np.ndarray, n_positive: np.ndarray, is_included: np.ndarray
) -> np.ndarray:
    """:func:`_tide_points` by the compiled kernel (it takes every input)."""
    y = np.zeros((len(n_positive), 101))
    _speedups.module_of("_canalyze.tide_points").tide_points(  # type: ignore[union-attr]
        np.ascontiguousarray(cls, dtype=np.int64),
        np.ascontiguousarray(is_tp, dtype=bool),
        np.ascontiguousarray(n_positive, dtype=np.int64),
        np.ascontiguousarray(is_included, dtype=bool),
        y,
    )
    return y


def _tide_points_numpy(
    cls: np.ndarray, is_tp: np.ndarray, n_positive: np.ndarray, is_included: np.ndarray
) -> np.ndarray:
    """The numpy twin of the ``deteval._canalyze`` kernel: :func:`_tide_points`, class by class."""
    n_class = len(n_positive)
    y = np.zeros((n_class, 101))
    bounds = np.searchsorted(cls, np.arange(n_class + 1))
    tp_cum = np.cumsum(is_tp)
    fp_cum = np.cumsum(~is_tp)
    recall_points = np.arange(101) / 100
    for k in np.flatnonzero(is_included & (n_positive > 0)).tolist():
        npos = int(n_positive[k])
        lo, hi = bounds[k], bounds[k + 1]
        tp_pos = lo + np.flatnonzero(is_tp[lo:hi])
        if len(tp_pos) == 0:
            continue
        base_tp = tp_cum[lo - 1] if lo > 0 else 0
        base_fp = fp_cum[lo - 1] if lo > 0 else 0
        t = (tp_cum[tp_pos] - base_tp).astype(np.float64)
        f = (fp_cum[tp_pos] - base_fp).astype(np.float64)
        precision = t / (t + f)
        envelope = np.maximum.accumulate(precision[::-1])[::-1]
        j_min = np.searchsorted(np.arange(npos + 1) / npos, recall_points, side="left")
        target = np.maximum(j_min, 1)
        reached = target <= len(tp_pos)
        y[k] = np.where(reached, envelope[np.minimum(target, len(tp_pos)) - 1], 0.0)
    return y


_speedups.register("_canalyze.tide_points", "deteval._canalyze", _tide_points_kernel, _tide_points_numpy)


def ranking(
    point_class: np.ndarray, point_score: np.ndarray, tie_keys: tuple = (), *, base: np.ndarray | None = None
) -> np.ndarray:
    """``lexsort(reversed(tie_keys) + (-point_score, point_class))``, the float key sorted first.

    The points are ranked by (class, descending score) (``base``: that ranking, when known), then
    only runs of equal (class, score) are ordered by ``tie_keys`` (a stable sort by integer run
    number and the keys): the same permutation without ranking the scores among themselves under
    the tie keys. Scores are finite (the loaders refuse others), so equal means ``==``, as in
    ``lexsort``.
    """
    order = lexsort((-point_score, point_class)) if base is None else base
    if not tie_keys or len(order) < 2:
        return order
    c, s = point_class[order], point_score[order]
    run = np.cumsum(np.r_[False, (c[1:] != c[:-1]) | (s[1:] != s[:-1])])
    return order[lexsort(tuple(reversed([k[order] for k in tie_keys])) + (run,))]


def _mean_included(ap: np.ndarray) -> float:
    """Tidecv's ``get_mAP``: the plain mean over the included classes (NaN if none)."""
    values = ap[~np.isnan(ap)]
    return float(sum(values.tolist()) / len(values)) if len(values) else float("nan")


def _tidecv_ap_fn(
    cls: np.ndarray,
    score: np.ndarray,
    is_tp: np.ndarray,
    keep: np.ndarray,
    npos: np.ndarray,
    out: _Outcome,
    *,
    fixed_order: bool,
) -> tuple[np.ndarray, float]:
    """Tidecv's AP of one scenario: (per class, mean). ``fixed_order``: errors before TPs on ties.

    tidecv pushes data points image by image in score order (the first run), but
    ``TIDERun.fix_errors`` pushes every error first and the true positives after.
    """
    included = (npos > 0) | (np.bincount(cls[keep], minlength=len(npos)) > 0)
    base = out.order_fixed if fixed_order else out.order_first
    if base is not None and cls is out.det_class and score is out.det_score:
        # Same classes and scores: the precomputed ranking restricted to the kept points.
        ranked = base[keep[base]]
        per = tide_ap(cls, score, is_tp, npos, is_included=included, order=ranked)
        return per, _mean_included(per)
    tie = tuple(k[keep] for k in out.tie_keys)
    if fixed_order:
        tie = (out.is_tp[keep],) + tie
    per = tide_ap(cls[keep], score[keep], is_tp[keep], npos, tie_keys=tie, is_included=included)
    return per, _mean_included(per)


def _protocol_ap_fn(protocol: Protocol):
    """AP of one scenario under the protocol's interpolation, ties and mean."""

    def ap_fn(
        cls: np.ndarray,
        score: np.ndarray,
        is_tp: np.ndarray,
        keep: np.ndarray,
        npos: np.ndarray,
        out: _Outcome,
        *,
        fixed_order: bool,
    ) -> tuple[np.ndarray, float]:
        rows = np.flatnonzero(keep)
        tie = tuple(k[rows] for k in out.tie_keys)
        order = ranking(cls[rows], score[rows], tie)
        n = len(rows)
        acc = accumulate(
            is_tp[rows][None, :],
            np.zeros((1, n), bool),
            score[rows],
            cls[rows],
            np.zeros(n, np.int64),
            order,
            np.asarray(npos, np.int64)[:, None],
            protocol.replace(max_dets=None),
        )
        if acc.precision.shape[1] > 0 and protocol.ap_method == "101_point":
            per = np.array([mean_defined(acc.precision[0, :, k, 0, 0]) for k in range(len(npos))])
        else:
            per = acc.ap[0, :, 0, 0]
        return per, mean_defined(per)

    return ap_fn
