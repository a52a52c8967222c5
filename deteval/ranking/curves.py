"""Average precision (every ``method``), the precision-recall curve, ROC curve and ROC AUC."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from deteval.errors import InputError, UndefinedMetricWarning
from deteval.ranking._common import (
    _as_scores,
    _as_weights,
    _average,
    _binary_truth,
    _choice,
    _interpolated_ap,
    _problems,
    _rank_rows,
    _Ranked,
    _step_ap,
    _warn_no_positive,
)
from deteval.ranking._options import AP_METHODS, ELEVEN_POINT_GRIDS


def average_precision(
    y_true: Any,
    y_score: Any,
    *,
    average: str | None = "macro",
    method: str = "step",
    grid: str = "matlab_colon",
    sample_weight: Any = None,
    pos_label: Any = 1,
) -> Any:
    """Average precision of scores, binary or multilabel.

    Parameters
    ----------
    y_true : array_like of shape (n_samples,) or (n_samples, n_labels)
        Binary labels (two values at most; the positive is ``pos_label``), or a multilabel
        indicator matrix of 0/1.
    y_score : array_like of shape (n_samples,) or (n_samples, n_labels)
        Scores, higher means more likely positive. Finite.
    average : {"macro", "micro", "weighted", "samples"} or None, default "macro"
        scikit-learn's meanings, ignored for binary input: ``macro`` the unweighted mean over
        labels; ``micro`` every cell of the matrix as one ranking; ``weighted`` the mean over
        labels weighted by their (weighted) positives; ``samples`` the mean over rows, each row
        a ranking of the labels; None the per-label values, shape (n_labels,).
    method : {"step", "all_point", "11_point", "101_point"}, default "step"
        ``step``: sum over thresholds of (R_n - R_{n-1}) * P_n, scikit-learn's
        ``average_precision_score``. ``all_point``: area under the precision envelope
        (precision made monotone from the right), at every recall change (VOC2010+).
        ``11_point`` / ``101_point``: mean over a recall grid of the best precision at recall
        >= r, 0 where no recall reaches r (VOC2007; pycocotools' ``np.linspace(0, 1, 101)``).
    grid : {"matlab_colon", "numpy_arange", "decimal"}, default "matlab_colon"
        The 11-point grid (only for ``method="11_point"``): the devkit's MATLAB ``0:0.1:1``,
        ``np.arange(0., 1.1, 0.1)`` of the Python VOC port, or exact ``k / 10``. Under the first
        two the fourth point is 0.30000000000000004, so a recall of exactly 3/10 misses it.
    sample_weight : array_like of shape (n_samples,), optional
        Non-negative weights, at least one positive.
    pos_label : int, float, bool or str, default 1
        The positive label of binary input; fixed to 1 for multilabel input.

    Returns
    -------
    float or ndarray of shape (n_labels,)
        The average; per-label values when ``average`` is None and the input multilabel.

    Raises
    ------
    InputError
        Labels that are not binary, shapes that differ, non-finite scores, bad weights.
    ConfigError
        An unknown ``average``, ``method`` or ``grid``; a ``pos_label`` that is not a label.

    Warns
    -----
    UndefinedMetricWarning
        When a ranking (label, row, or the whole binary input) has no positive sample. Its AP
        is then 0, as scikit-learn 1.9 returns (scikit-learn warns "No positive class found in
        y_true, recall is set to one for all thresholds"), and it counts as 0 in the mean.

    Notes
    -----
    Tied scores form one threshold under every method: the precision of a tied block is that
    of the whole block. Detection protocols rank tied detections one at a time instead.
    ``average="weighted"`` with no positive anywhere returns 0, as scikit-learn does.
    A single column ``(n_samples, 1)`` is read as binary input, as scikit-learn reads it.

    Examples
    --------
    >>> average_precision([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.8333333333333333
    >>> average_precision([1, 0, 1, 0, 0, 1], [.9, .8, .7, .6, .5, .4], method="11_point")
    0.7272727272727273
    >>> average_precision([[1, 0], [0, 1], [1, 1]], [[.9, .2], [.8, .7], [.1, .6]], average=None)
    array([0.83333333, 1.        ])
    """
    _choice("method", method, AP_METHODS)
    _choice("grid", grid, ELEVEN_POINT_GRIDS)
    truth, scores, item_weights, label_weights, is_binary = _problems(
        y_true, y_score, sample_weight, average, pos_label
    )
    if average == "weighted" and not is_binary and np.isclose(label_weights.sum(), 0.0):
        return 0.0  # scikit-learn: no positive anywhere, weighted average is 0
    ranked = _rank_rows(truth, scores, item_weights)
    values = _step_ap(ranked) if method == "step" else _interpolated_ap(ranked, method, grid)
    no_pos = ranked.n_pos == 0
    if no_pos.any():
        values = np.where(no_pos, 0.0, values)
        what = (
            ("rows" if average == "samples" else "labels")
            if not is_binary and average != "micro"
            else "rankings"
        )
        _warn_no_positive(int(no_pos.sum()), what)
    if is_binary or average == "micro":
        return float(values[0])
    return _average(values, average, label_weights)


# --------------------------------------------------------------------------------------------
# Curves and ROC AUC


def _binary_curve_inputs(y_true: Any, y_score: Any, sample_weight: Any, pos_label: Any):
    scores = _as_scores(y_score)
    if scores.ndim != 1:
        raise InputError(f"y_score: expected shape (n_samples,) for a curve, found {scores.shape}")
    truth = _binary_truth(y_true, scores.shape[0], pos_label)
    weights = _as_weights(sample_weight, scores.shape[0])
    if weights is not None:  # zero-weight samples cannot move a curve: scikit-learn drops them
        keep = weights != 0
        truth, scores, weights = truth[keep], scores[keep], weights[keep]
    ranked = _rank_rows(truth[None, :], scores[None, :], weights)
    end = ranked.is_end[0]
    return ranked.tps[0][end], ranked.fps[0][end], ranked.scores[0][end]


def precision_recall_curve(
    y_true: Any,
    y_score: Any,
    *,
    sample_weight: Any = None,
    drop_intermediate: bool = False,
    pos_label: Any = None,
) -> tuple:
    """Precision and recall at every distinct score, scikit-learn's arrays.

    Parameters
    ----------
    y_true : array_like of shape (n_samples,)
        Binary labels: {0, 1} or {-1, 1}, or any two values with ``pos_label``.
    y_score : array_like of shape (n_samples,)
        Scores, finite.
    sample_weight : array_like of shape (n_samples,), optional
        Non-negative weights; zero-weight samples are dropped first (as scikit-learn does).
    drop_intermediate : bool, default False
        Keep only the first and last threshold of each run of equal true-positive counts.
    pos_label : optional
        The positive label (None: 1 of {0, 1} or {-1, 1}).

    Returns
    -------
    precision : ndarray of shape (n_thresholds + 1,)
        Precision at score >= ``thresholds[i]``; the last element is 1.
    recall : ndarray of shape (n_thresholds + 1,)
        Decreasing; the last element is 0 (the point (recall 0, precision 1) has no threshold).
    thresholds : ndarray of shape (n_thresholds,)
        Increasing distinct scores.

    Warns
    -----
    UndefinedMetricWarning
        No positive sample: recall is set to 1 at every threshold (scikit-learn's rule).

    Examples
    --------
    >>> p, r, t = precision_recall_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> p.tolist(), r.tolist(), t.tolist()
    ([0.5, 0.6666666666666666, 0.5, 1.0, 1.0], [1.0, 1.0, 0.5, 0.5, 0.0], [0.1, 0.35, 0.4, 0.8])
    """
    tps, fps, thresholds = _binary_curve_inputs(y_true, y_score, sample_weight, pos_label)
    if drop_intermediate and fps.shape[0] > 2:
        keep = np.concatenate(([True], np.logical_or(np.diff(tps[:-1]), np.diff(tps[1:])), [True]))
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    ps = tps + fps
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(ps != 0, tps / ps, 0.0)
    if tps[-1] == 0:
        warnings.warn(
            "no positive sample in y_true: recall is set to 1 at every threshold (scikit-learn's rule)",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        recall = np.ones_like(tps)
    else:
        recall = tps / tps[-1]
    return (
        np.concatenate((precision[::-1], [1.0])),
        np.concatenate((recall[::-1], [0.0])),
        thresholds[::-1].copy(),
    )


def roc_curve(
    y_true: Any,
    y_score: Any,
    *,
    sample_weight: Any = None,
    drop_intermediate: bool = True,
    pos_label: Any = None,
) -> tuple:
    """Receiver operating characteristic, scikit-learn's arrays.

    Parameters
    ----------
    y_true : array_like of shape (n_samples,)
        Binary labels: {0, 1} or {-1, 1}, or any two values with ``pos_label``.
    y_score : array_like of shape (n_samples,)
        Scores, finite.
    sample_weight : array_like of shape (n_samples,), optional
        Non-negative weights; zero-weight samples are dropped first.
    drop_intermediate : bool, default True
        Drop thresholds whose point is collinear with its neighbours (no corner: the second
        differences of both FP and TP counts are 0). The area does not change.
    pos_label : optional
        The positive label (None: 1 of {0, 1} or {-1, 1}).

    Returns
    -------
    fpr, tpr : ndarray of shape (n_points,)
        Increasing rates; the first point is (0, 0).
    thresholds : ndarray of shape (n_points,)
        Decreasing; the first is ``inf`` (nothing predicted positive).

    Warns
    -----
    UndefinedMetricWarning
        No negative (``fpr`` all NaN) or no positive (``tpr`` all NaN) sample.

    Examples
    --------
    >>> fpr, tpr, t = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> fpr.tolist(), tpr.tolist(), t.tolist()
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0], [inf, 0.8, 0.4, 0.35, 0.1])
    """
    tps, fps, thresholds = _binary_curve_inputs(y_true, y_score, sample_weight, pos_label)
    if drop_intermediate and fps.shape[0] > 2:
        keep = np.concatenate(([True], np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), [True]))
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    tps = np.concatenate(([0.0], tps))
    fps = np.concatenate(([0.0], fps))
    thresholds = np.concatenate(([np.inf], thresholds))
    if fps[-1] <= 0:
        warnings.warn(
            "no negative sample in y_true: false positive rate undefined (NaN)",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        fpr = np.full(fps.shape, np.nan)
    else:
        fpr = fps / fps[-1]
    if tps[-1] <= 0:
        warnings.warn(
            "no positive sample in y_true: true positive rate undefined (NaN)",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        tpr = np.full(tps.shape, np.nan)
    else:
        tpr = tps / tps[-1]
    return fpr, tpr, thresholds


def _auc_rows(ranked: _Ranked) -> np.ndarray:
    """Trapezoidal area under each row's ROC curve (NaN where a class is missing)."""
    m = ranked.tps.shape[0]
    counts = ranked.is_end.sum(axis=1) + 1  # + the (0, 0) point
    row = np.repeat(np.arange(m), counts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    tps = np.zeros(counts.sum())
    fps = np.zeros(counts.sum())
    is_point = np.ones(counts.sum(), dtype=bool)
    is_point[starts] = False
    tps[is_point] = ranked.tps[ranked.is_end]
    fps[is_point] = ranked.fps[ranked.is_end]
    n_pos = ranked.tps[:, -1][row]
    n_neg = ranked.fps[:, -1][row]
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = tps / n_pos
        fpr = fps / n_neg
    dx = np.empty_like(fpr)
    dx[1:] = np.diff(fpr)
    mid = np.empty_like(tpr)
    mid[1:] = (tpr[1:] + tpr[:-1]) / 2.0
    dx[starts] = 0.0
    mid[starts] = 0.0
    return np.add.reduceat(dx * mid, starts)


def roc_auc(y_true: Any, y_score: Any, *, average: str | None = "macro", sample_weight: Any = None) -> Any:
    """Area under the ROC curve, binary or multilabel, as scikit-learn's ``roc_auc_score``.

    Parameters
    ----------
    y_true : array_like of shape (n_samples,) or (n_samples, n_labels)
        Binary labels ({0, 1} or {-1, 1}) or a multilabel 0/1 indicator matrix.
    y_score : array_like of shape (n_samples,) or (n_samples, n_labels)
        Scores, finite.
    average : {"macro", "micro", "weighted", "samples"} or None, default "macro"
        As in :func:`average_precision`.
    sample_weight : array_like of shape (n_samples,), optional
        Non-negative weights.

    Returns
    -------
    float or ndarray of shape (n_labels,)

    Warns
    -----
    UndefinedMetricWarning
        A ranking with only one class: its AUC is NaN (scikit-learn's value), which makes a
        ``macro`` or ``samples`` mean NaN; ``weighted`` gives labels without positives weight 0.

    Examples
    --------
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    truth, scores, item_weights, label_weights, is_binary = _problems(
        y_true,
        y_score,
        sample_weight,
        average,
        None if np.ndim(y_score) == 1 or np.shape(y_score)[1:] == (1,) else 1,
    )
    if average == "weighted" and not is_binary and np.isclose(label_weights.sum(), 0.0):
        return 0.0
    one_class = truth.min(axis=1) == truth.max(axis=1)
    ranked = _rank_rows(truth, scores, item_weights)
    values = np.where(one_class, np.nan, _auc_rows(ranked))
    if one_class.any():
        warnings.warn(
            f"{int(one_class.sum())} ranking(s) with only one class in y_true: ROC AUC is undefined (NaN)",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    if is_binary or average == "micro":
        return float(values[0])
    return _average(values, average, label_weights)


# --------------------------------------------------------------------------------------------
# Metrics at K (one query per row)
