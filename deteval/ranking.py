"""Ranking metrics of scores: average precision exactly as scikit-learn, AP@K, P@K, R@K, nDCG, ROC.

This is the analysis layer's answer to "how well do these scores rank these labels?": one
binary problem (``y_true`` of shape ``(n_samples,)``) or many (a multilabel indicator matrix of
shape ``(n_samples, n_labels)``), no boxes and no matching. A detection becomes a ranked item
once it has been matched: it is relevant when it matched a ground truth.

Conventions shared by every function here:

* Tied scores form **one threshold** in :func:`average_precision` (every ``method``),
  :func:`precision_recall_curve`, :func:`roc_curve` and :func:`roc_auc`, as in scikit-learn:
  the precision at a tie is that of the whole tied block. Detection protocols instead rank
  tied detections one by one (a stable sort), so both conventions exist in deteval and are
  named wherever they are used.
* The ``@K`` functions rank by score, ties broken by original position (``ties="stable"``);
  :func:`precision_at_k` and :func:`recall_at_k` also offer ``ties="average"``, the exact
  expectation over every order of the tied items (as :func:`ndcg_at_k` and scikit-learn's
  ``ndcg_score`` do).
* An undefined value is announced by :class:`deteval.errors.UndefinedMetricWarning`; the
  numbers it stands for follow scikit-learn (AP of a label without positives is 0, ROC AUC
  of a label with one class is NaN).

Input is checked once, here at the edge, and every failure is an
:class:`deteval.errors.InputError` (bad data) or :class:`deteval.errors.ConfigError` (bad
option) that names the argument, the element and what was expected.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deteval.errors import ConfigError, DetevalWarning, InputError, UndefinedMetricWarning

__all__ = [
    "AVERAGES",
    "AP_METHODS",
    "ELEVEN_POINT_GRIDS",
    "average_precision",
    "precision_recall_curve",
    "roc_curve",
    "roc_auc",
    "precision_at_k",
    "recall_at_k",
    "average_precision_at_k",
    "ndcg_at_k",
    "RawBinarizedComparison",
    "compare_raw_binarized",
    "rank_report",
    "format_rank_table",
    "format_rank_csv",
]

#: Values of ``average`` (scikit-learn's meanings).
AVERAGES = (None, "micro", "macro", "weighted", "samples")
#: Values of ``method`` in :func:`average_precision`.
AP_METHODS = ("step", "all_point", "11_point", "101_point")
#: Values of ``grid`` for ``method="11_point"``.
ELEVEN_POINT_GRIDS = ("matlab_colon", "numpy_arange", "decimal")


# --------------------------------------------------------------------------------------------
# Grids


def _recall_grid(method: str, grid: str) -> np.ndarray:
    """Recall points of an interpolated method.

    Must equal ``deteval.protocol``'s recall thresholds (``recall_thresholds`` of a protocol
    with the same ``ap_method`` / ``eleven_point_grid``); a test compares them. It is copied,
    not imported, because ranking sits beside the detection layers, not above their config.
    """
    if method == "101_point":
        # pycocotools: np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        return np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)
    if grid == "numpy_arange":
        # The Python VOC port (py-faster-rcnn): np.arange(0., 1.1, 0.1).
        return np.arange(0.0, 1.1, 0.1)
    if grid == "matlab_colon":
        # The VOC2007 devkit's 0:0.1:1. MATLAB's colon builds the first half as a + k*d and
        # the second half as b - (n-k)*d; the middle element is (a + b) / 2.
        out = np.empty(11)
        out[:6] = np.arange(6) * 0.1
        out[6:] = 1.0 - np.arange(4, -1, -1) * 0.1
        out[5] = 0.5
        return out
    return np.arange(11) / 10.0


# --------------------------------------------------------------------------------------------
# Input checks (the edge)


def _choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}: expected one of {list(allowed)}, found {value!r}")


def _index_text(index: tuple) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _as_scores(y_score: Any, name: str = "y_score") -> np.ndarray:
    try:
        scores = np.asarray(y_score)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: cannot be read as an array ({exc}); expected numbers") from None
    if scores.dtype == object or not (np.issubdtype(scores.dtype, np.number) or scores.dtype == bool):
        raise InputError(f"{name}: expected real numbers, found dtype {scores.dtype}")
    if np.issubdtype(scores.dtype, np.complexfloating):
        raise InputError(f"{name}: expected real numbers, found complex dtype {scores.dtype}")
    if scores.ndim not in (1, 2):
        raise InputError(f"{name}: expected shape (n_samples,) or (n_samples, n_labels), "
                         f"found {scores.ndim} dimensions {scores.shape}")
    if scores.size == 0:
        raise InputError(f"{name}: expected at least one sample, found shape {scores.shape}")
    scores = scores.astype(np.float64, copy=False)
    bad = ~np.isfinite(scores)
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        raise InputError(f"{name}: element {_index_text(where)} is {scores[where]}; expected finite "
                         f"numbers ({int(bad.sum())} non-finite in all)")
    return scores


def _as_indicator(y_true: Any, shape: tuple, name: str = "y_true") -> np.ndarray:
    """A 0/1 matrix or vector of the given shape, as float64."""
    labels = np.asarray(y_true)
    if labels.shape != shape:
        raise InputError(f"{name}: shape {labels.shape} differs from y_score's {shape}; expected "
                         f"one label per score")
    if labels.dtype == object or not (np.issubdtype(labels.dtype, np.number) or labels.dtype == bool):
        raise InputError(f"{name}: expected 0/1 labels, found dtype {labels.dtype}")
    bad = (labels != 0) & (labels != 1)
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        raise InputError(f"{name}: element {_index_text(where)} is {labels[where].item()!r}; expected 0 or 1 "
                         f"({int(bad.sum())} such elements)")
    return labels.astype(np.float64)


def _binary_truth(y_true: Any, n: int, pos_label: Any, name: str = "y_true") -> np.ndarray:
    """1-D labels with at most two values -> 0/1 float64 (positive = ``pos_label``).

    ``pos_label=None`` follows scikit-learn: labels must be a subset of {0, 1} or {-1, 1}.
    """
    labels = np.asarray(y_true)
    if labels.shape != (n,):
        raise InputError(f"{name}: shape {labels.shape} differs from y_score's {(n,)}; expected one "
                         f"label per score")
    if labels.dtype == object:
        raise InputError(f"{name}: expected numbers, booleans or strings, found dtype object")
    present = np.unique(labels)
    if present.size > 2:
        raise InputError(f"{name}: binary labels expected, found {present.size} distinct values "
                         f"{present[:5].tolist()}{'...' if present.size > 5 else ''}")
    if pos_label is None:
        if not (np.isin(present, [0, 1]).all() or np.isin(present, [-1, 1]).all()):
            raise InputError(f"{name}: labels {present.tolist()} are not {{0, 1}} or {{-1, 1}}; "
                             f"expected those, or give pos_label")
        pos_label = 1
    elif present.size == 2 and pos_label not in present.tolist():
        raise ConfigError(f"pos_label: {pos_label!r} is not one of the labels {present.tolist()}")
    return (labels == pos_label).astype(np.float64)


def _as_weights(sample_weight: Any, n: int, name: str = "sample_weight") -> np.ndarray | None:
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight)
    if weights.dtype == object or not (np.issubdtype(weights.dtype, np.number) or weights.dtype == bool):
        raise InputError(f"{name}: expected non-negative numbers, found dtype {weights.dtype}")
    if weights.shape != (n,):
        raise InputError(f"{name}: shape {weights.shape}; expected ({n},), one weight per sample")
    weights = weights.astype(np.float64)
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{name}: element [{i}] is {weights[i]}; expected a finite number >= 0")
    if not weights.sum() > 0:
        raise InputError(f"{name}: all weights are 0; expected at least one positive weight")
    return weights


# --------------------------------------------------------------------------------------------
# The ranking kernel: many binary problems at once, one row each


@dataclass(frozen=True)
class _Ranked:
    """Rows of binary problems sorted by decreasing score (stable), with per-position counts.

    ``tps`` / ``fps``: (weighted) true / false positives among the first ``i + 1`` items;
    ``is_end``: position ``i`` closes a block of tied scores (a threshold).
    """

    scores: np.ndarray  # (m, n) sorted descending
    truth: np.ndarray  # (m, n) 0/1 in that order
    tps: np.ndarray  # (m, n)
    fps: np.ndarray  # (m, n)
    is_end: np.ndarray  # (m, n) bool

    @property
    def n_pos(self) -> np.ndarray:
        return self.tps[:, -1]


def _rank_rows(truth: np.ndarray, scores: np.ndarray, weights: np.ndarray | None) -> _Ranked:
    """Sort each row by decreasing score and accumulate TP/FP (scikit-learn's arithmetic).

    ``weights`` is one weight per column (item) or None. Without weights, FP counts are
    ``1 + index - tps`` as scikit-learn computes them; with weights both are cumulative sums.
    """
    order = np.argsort(-scores, axis=1, kind="stable")
    scores_sorted = np.take_along_axis(scores, order, axis=1)
    truth_sorted = np.take_along_axis(truth, order, axis=1)
    if weights is None:
        tps = np.cumsum(truth_sorted, axis=1)
        fps = np.arange(1, scores.shape[1] + 1, dtype=np.float64) - tps
    else:
        w_sorted = weights[order]
        tps = np.cumsum(truth_sorted * w_sorted, axis=1)
        fps = np.cumsum((1.0 - truth_sorted) * w_sorted, axis=1)
    is_end = np.empty(scores.shape, dtype=bool)
    np.not_equal(scores_sorted[:, 1:], scores_sorted[:, :-1], out=is_end[:, :-1])
    is_end[:, -1] = True
    return _Ranked(scores_sorted, truth_sorted, tps, fps, is_end)


def _block_end_index(is_end: np.ndarray) -> np.ndarray:
    """For each position, the index of the last position of its tied block."""
    n = is_end.shape[1]
    idx = np.where(is_end, np.arange(n), n - 1)
    return np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1]


def _block_start_index(is_end: np.ndarray) -> np.ndarray:
    """For each position, the index of the first position of its tied block."""
    n = is_end.shape[1]
    is_start = np.empty_like(is_end)
    is_start[:, 0] = True
    is_start[:, 1:] = is_end[:, :-1]
    idx = np.where(is_start, np.arange(n), 0)
    return np.maximum.accumulate(idx, axis=1)


def _step_ap(ranked: _Ranked) -> np.ndarray:
    """scikit-learn's AP per row: sum over thresholds of (R_n - R_{n-1}) * P_n."""
    m = ranked.tps.shape[0]
    tps = ranked.tps[ranked.is_end]  # row-major: thresholds of row 0, then row 1, ...
    fps = ranked.fps[ranked.is_end]
    counts = ranked.is_end.sum(axis=1)
    row = np.repeat(np.arange(m), counts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    total = ranked.n_pos[row]
    ps = tps + fps
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(ps != 0, tps / ps, 0.0)
        recall = np.where(total != 0, tps / total, 1.0)
    previous = np.empty_like(recall)
    previous[1:] = recall[:-1]
    previous[starts] = 0.0
    ap = np.add.reduceat((recall - previous) * precision, starts)
    return np.maximum(ap, 0.0)


def _interpolated_ap(ranked: _Ranked, method: str, grid: str) -> np.ndarray:
    """All-point or k-point interpolated AP per row, tied scores as one threshold."""
    end = _block_end_index(ranked.is_end)
    tps = np.take_along_axis(ranked.tps, end, axis=1)
    fps = np.take_along_axis(ranked.fps, end, axis=1)
    n_pos = ranked.n_pos[:, None]
    ps = tps + fps
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(ps != 0, tps / ps, 0.0)
        recall = np.where(n_pos != 0, tps / n_pos, 0.0)
    # Precision envelope: the best precision at this recall or any higher one (VOC2010+).
    envelope = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
    if method == "all_point":
        gain = np.diff(recall, axis=1, prepend=0.0)
        return (gain * envelope).sum(axis=1)
    points = _recall_grid(method, grid)
    n = recall.shape[1]
    sampled = np.empty((points.size, recall.shape[0]))
    # One pass per recall point (11 or 101), each vectorized over every row and item.
    for j, r in enumerate(points):
        first = (recall < r).sum(axis=1)  # rows are sorted: first position with recall >= r
        found = first < n
        sampled[j] = np.where(found, np.take_along_axis(envelope, np.minimum(first, n - 1)[:, None],
                                                        axis=1)[:, 0], 0.0)
    return sampled.mean(axis=0)


def _warn_no_positive(n_without: int, what: str) -> None:
    warnings.warn(f"{n_without} {what} without positive samples: their AP is undefined and counts "
                  f"as 0 (scikit-learn's value)", UndefinedMetricWarning, stacklevel=3)


def _average(values: np.ndarray, average: str | None, weights: np.ndarray | None) -> Any:
    """scikit-learn's ``_average_binary_score`` averaging of per-row values."""
    if average is None:
        return values
    if weights is not None:
        values = np.where(weights == 0, 0.0, values)
    return float(np.average(values, weights=weights))


def _problems(y_true: Any, y_score: Any, sample_weight: Any, average: str | None, pos_label: Any):
    """Check inputs and lay them out as rows of binary problems.

    Returns ``(truth_rows, score_rows, item_weights, average_weights, is_binary)``.
    """
    _choice("average", average, AVERAGES)
    scores = _as_scores(y_score)
    if scores.ndim == 2 and scores.shape[1] == 1:
        # scikit-learn's type_of_target reads a single column as binary, not multilabel.
        scores = scores[:, 0]
        y_true = np.asarray(y_true)
        if y_true.ndim == 2 and y_true.shape[1] == 1:
            y_true = y_true[:, 0]
    n = scores.shape[0]
    weights = _as_weights(sample_weight, n)
    if scores.ndim == 1:
        truth = _binary_truth(y_true, n, pos_label)
        return truth[None, :], scores[None, :], weights, None, True
    if pos_label != 1:
        raise ConfigError(f"pos_label: fixed to 1 for multilabel y_true, found {pos_label!r}")
    truth = _as_indicator(y_true, scores.shape)
    n_labels = scores.shape[1]
    if average == "micro":
        item_weights = None if weights is None else np.repeat(weights, n_labels)
        return truth.reshape(1, -1), scores.reshape(1, -1), item_weights, None, False
    if average == "samples":
        return truth, scores, None, weights, False
    label_weights = None
    if average == "weighted":
        label_weights = truth.sum(axis=0) if weights is None else (truth * weights[:, None]).sum(axis=0)
    return truth.T, scores.T, weights, label_weights, False


# --------------------------------------------------------------------------------------------
# Average precision


def average_precision(y_true: Any, y_score: Any, *, average: str | None = "macro", method: str = "step",
                      grid: str = "matlab_colon", sample_weight: Any = None, pos_label: Any = 1) -> Any:
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
        y_true, y_score, sample_weight, average, pos_label)
    if average == "weighted" and not is_binary and np.isclose(label_weights.sum(), 0.0):
        return 0.0  # scikit-learn: no positive anywhere, weighted average is 0
    ranked = _rank_rows(truth, scores, item_weights)
    values = _step_ap(ranked) if method == "step" else _interpolated_ap(ranked, method, grid)
    no_pos = ranked.n_pos == 0
    if no_pos.any():
        values = np.where(no_pos, 0.0, values)
        what = ("rows" if average == "samples" else "labels") if not is_binary and average != "micro" \
            else "rankings"
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


def precision_recall_curve(y_true: Any, y_score: Any, *, sample_weight: Any = None,
                           drop_intermediate: bool = False, pos_label: Any = None) -> tuple:
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
        warnings.warn("no positive sample in y_true: recall is set to 1 at every threshold "
                      "(scikit-learn's rule)", UndefinedMetricWarning, stacklevel=2)
        recall = np.ones_like(tps)
    else:
        recall = tps / tps[-1]
    return (np.concatenate((precision[::-1], [1.0])), np.concatenate((recall[::-1], [0.0])),
            thresholds[::-1].copy())


def roc_curve(y_true: Any, y_score: Any, *, sample_weight: Any = None, drop_intermediate: bool = True,
              pos_label: Any = None) -> tuple:
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
        warnings.warn("no negative sample in y_true: false positive rate undefined (NaN)",
                      UndefinedMetricWarning, stacklevel=2)
        fpr = np.full(fps.shape, np.nan)
    else:
        fpr = fps / fps[-1]
    if tps[-1] <= 0:
        warnings.warn("no positive sample in y_true: true positive rate undefined (NaN)",
                      UndefinedMetricWarning, stacklevel=2)
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
    truth, scores, item_weights, label_weights, is_binary = _problems(y_true, y_score, sample_weight,
                                                                     average, None if np.ndim(y_score) == 1
                                                                     or np.shape(y_score)[1:] == (1,)
                                                                     else 1)
    if average == "weighted" and not is_binary and np.isclose(label_weights.sum(), 0.0):
        return 0.0
    one_class = (truth.min(axis=1) == truth.max(axis=1))
    ranked = _rank_rows(truth, scores, item_weights)
    values = np.where(one_class, np.nan, _auc_rows(ranked))
    if one_class.any():
        warnings.warn(f"{int(one_class.sum())} ranking(s) with only one class in y_true: ROC AUC is "
                      f"undefined (NaN)", UndefinedMetricWarning, stacklevel=2)
    if is_binary or average == "micro":
        return float(values[0])
    return _average(values, average, label_weights)


# --------------------------------------------------------------------------------------------
# Metrics at K (one query per row)


def _queries(y_true: Any, y_score: Any, k: Any, *, graded: bool = False) -> tuple:
    scores = _as_scores(y_score)
    if scores.ndim == 1:
        scores = scores[None, :]
        y_true = np.asarray(y_true)[None, ...] if np.ndim(y_true) == 1 else np.asarray(y_true)
    if graded:
        truth = np.asarray(y_true)
        if truth.shape != scores.shape:
            raise InputError(f"y_true: shape {truth.shape} differs from y_score's {scores.shape}; "
                             f"expected one relevance per score")
        truth = _as_scores(truth, "y_true")
        if (truth < 0).any():
            where = tuple(np.argwhere(truth < 0)[0])
            raise InputError(f"y_true: element {_index_text(where)} is {truth[where]}; expected a "
                             f"relevance >= 0")
    else:
        truth = _as_indicator(y_true, scores.shape)
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise ConfigError(f"k: expected a positive integer, found {k!r}")
    return truth, scores


def _sorted_by_score(truth: np.ndarray, scores: np.ndarray) -> tuple:
    order = np.argsort(-scores, axis=1, kind="stable")  # ties: original position first
    return np.take_along_axis(truth, order, axis=1), np.take_along_axis(scores, order, axis=1)


def _tie_averaged(truth_sorted: np.ndarray, scores_sorted: np.ndarray) -> np.ndarray:
    """Each position's relevance replaced by the mean relevance of its tied block."""
    is_end = np.empty(scores_sorted.shape, dtype=bool)
    np.not_equal(scores_sorted[:, 1:], scores_sorted[:, :-1], out=is_end[:, :-1])
    is_end[:, -1] = True
    end = _block_end_index(is_end)
    start = _block_start_index(is_end)
    cum = np.concatenate((np.zeros((truth_sorted.shape[0], 1)), np.cumsum(truth_sorted, axis=1)), axis=1)
    total = np.take_along_axis(cum, end + 1, axis=1) - np.take_along_axis(cum, start, axis=1)
    return total / (end - start + 1)


def _hits_at_k(truth: np.ndarray, scores: np.ndarray, k: int, ties: str) -> np.ndarray:
    _choice("ties", ties, ("stable", "average"))
    truth_sorted, scores_sorted = _sorted_by_score(truth, scores)
    if ties == "average":
        truth_sorted = _tie_averaged(truth_sorted, scores_sorted)
    return truth_sorted[:, :k].sum(axis=1)


def _mean_defined(values: np.ndarray, is_defined: np.ndarray, what: str) -> float:
    if not is_defined.all():
        warnings.warn(f"{int((~is_defined).sum())} of {is_defined.size} queries without positives: "
                      f"{what} is undefined for them and they are left out of the mean",
                      UndefinedMetricWarning, stacklevel=3)
    if not is_defined.any():
        return math.nan
    return float(values[is_defined].mean())


def precision_at_k(y_true: Any, y_score: Any, k: int, *, ties: str = "stable") -> float:
    """Fraction of the ``k`` best-scored items that are relevant, mean over queries.

    Parameters
    ----------
    y_true : array_like of shape (n_items,) or (n_queries, n_items)
        0/1 relevance; one query per row.
    y_score : array_like, same shape
        Scores, finite.
    k : int
        Cut-off, >= 1. When ``k`` exceeds ``n_items`` the missing places count as not
        relevant (the divisor stays ``k``).
    ties : {"stable", "average"}, default "stable"
        ``stable``: tied scores in their original order (reproducible). ``average``: the exact
        expectation over every order of tied items (each item of a tied block straddling the
        cut-off counts with the block's mean relevance).

    Returns
    -------
    float

    Examples
    --------
    >>> precision_at_k([1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1], k=2)
    0.5
    >>> precision_at_k([1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1], k=2, ties="average")
    0.75
    """
    truth, scores = _queries(y_true, y_score, k)
    return float((_hits_at_k(truth, scores, k, ties) / k).mean())


def recall_at_k(y_true: Any, y_score: Any, k: int, *, ties: str = "stable") -> float:
    """Fraction of a query's relevant items found among its ``k`` best-scored, mean over queries.

    Parameters are those of :func:`precision_at_k`.

    Returns
    -------
    float
        NaN (with a warning) when no query has a relevant item.

    Warns
    -----
    UndefinedMetricWarning
        Queries without relevant items: left out of the mean.

    Examples
    --------
    >>> recall_at_k([[1, 0, 1, 0], [0, 1, 0, 0]], [[0.9, 0.8, 0.7, 0.1], [0.1, 0.2, 0.3, 0.4]], k=2)
    0.25
    """
    truth, scores = _queries(y_true, y_score, k)
    n_pos = truth.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = _hits_at_k(truth, scores, k, ties) / n_pos
    return _mean_defined(values, n_pos > 0, "recall@k")


def average_precision_at_k(y_true: Any, y_score: Any, k: int, *, normalize: str = "min") -> float:
    """AP of the ``k`` best-scored items, mean over queries (mean average precision at K).

    ``AP@K = sum_{i <= k} P@i * rel_i / D``: the precision at each relevant place within the
    first ``k``, divided by ``D``.

    Parameters
    ----------
    y_true : array_like of shape (n_items,) or (n_queries, n_items)
        0/1 relevance; one query per row.
    y_score : array_like, same shape
        Scores, finite. Ties in original order (stable).
    k : int
        Cut-off, >= 1.
    normalize : {"min", "positives"}, default "min"
        ``min``: ``D = min(k, n_positives)`` (a perfect top-k scores 1 even when there are more
        positives than places; the usual mAP@K of recommender systems). ``positives``: ``D =
        n_positives`` (a truncated AP: positives beyond ``k`` count as never found; equals
        :func:`average_precision` when ``k >= n_items`` and scores have no ties).

    Returns
    -------
    float
        NaN (with a warning) when no query has a relevant item.

    Warns
    -----
    UndefinedMetricWarning
        Queries without relevant items: left out of the mean.

    Examples
    --------
    >>> average_precision_at_k([1, 0, 1, 1], [0.9, 0.8, 0.7, 0.6], k=2)
    0.5
    >>> average_precision_at_k([1, 0, 1, 1], [0.9, 0.8, 0.7, 0.6], k=2, normalize="positives")
    0.3333333333333333
    """
    _choice("normalize", normalize, ("min", "positives"))
    truth, scores = _queries(y_true, y_score, k)
    truth_sorted, _ = _sorted_by_score(truth, scores)
    top = truth_sorted[:, :k]
    precision_at_i = np.cumsum(top, axis=1) / np.arange(1, top.shape[1] + 1)
    n_pos = truth.sum(axis=1)
    divisor = np.minimum(k, n_pos) if normalize == "min" else n_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        values = (precision_at_i * top).sum(axis=1) / divisor
    return _mean_defined(values, n_pos > 0, "AP@k")


def ndcg_at_k(y_true: Any, y_score: Any, k: int | None = None, *, sample_weight: Any = None,
              ignore_ties: bool = False) -> float:
    """Normalized discounted cumulative gain, equal to scikit-learn's ``ndcg_score``.

    Parameters
    ----------
    y_true : array_like of shape (n_items,) or (n_queries, n_items)
        Graded relevance, >= 0; one query per row. A 2-D input needs at least 2 items.
    y_score : array_like, same shape
        Scores, finite.
    k : int, optional
        Only the ``k`` best places count (None: all).
    sample_weight : array_like of shape (n_queries,), optional
        Weights of the queries in the mean.
    ignore_ties : bool, default False
        False: tied items share the mean gain of their block (the expectation over every order
        of the ties, McSherry & Najork 2008, as scikit-learn). True: trust the scores to have
        no ties and rank them in ``argsort`` order.

    Returns
    -------
    float
        A query whose ideal DCG is 0 scores 0 (scikit-learn's rule).

    Examples
    --------
    >>> ndcg_at_k([[10, 0, 0, 1, 5]], [[1, 0, 0, 0, 1]], k=1)
    0.75
    """
    truth, scores = _queries(y_true, y_score, k, graded=True)
    n_queries, n_items = truth.shape
    if np.ndim(y_score) == 2 and n_items <= 1:
        raise InputError(f"y_true: nDCG needs more than one item per query, found {n_items}")
    weights = _as_weights(sample_weight, n_queries)
    discount = 1.0 / (np.log(np.arange(n_items) + 2) / np.log(2))
    if k is not None:
        discount[k:] = 0.0
    if ignore_ties:
        ranking = np.argsort(scores, axis=1)[:, ::-1]  # scikit-learn's order, not stable
        gains = np.take_along_axis(truth, ranking, axis=1)
    else:
        truth_sorted, scores_sorted = _sorted_by_score(truth, scores)
        gains = _tie_averaged(truth_sorted, scores_sorted)
    dcg = gains @ discount
    ideal = np.sort(truth, axis=1)[:, ::-1] @ discount
    ndcg = np.zeros(n_queries)
    np.divide(dcg, ideal, out=ndcg, where=ideal != 0)
    return float(np.average(ndcg, weights=weights))


# --------------------------------------------------------------------------------------------
# Raw scores vs binarized scores


@dataclass(frozen=True)
class RawBinarizedComparison:
    """AP of raw scores next to AP of the same scores thresholded to 0/1.

    Attributes
    ----------
    ap_raw, ap_binarized : float
        :func:`average_precision` of the scores and of ``y_score >= threshold``.
    precision, recall : float
        Of the binarized predictions, pooled over every cell (NaN when undefined).
    n_predicted_positive : int
        Cells with ``y_score >= threshold``.
    threshold : float
    average : str
    """

    ap_raw: float
    ap_binarized: float
    precision: float
    recall: float
    n_predicted_positive: int
    threshold: float
    average: str

    def to_dict(self) -> dict:
        """Plain values; NaN becomes None."""
        return {key: (None if isinstance(value, float) and math.isnan(value) else value)
                for key, value in asdict(self).items()}


def compare_raw_binarized(y_true: Any, y_score: Any, *, threshold: float = 0.5,
                          average: str = "micro") -> RawBinarizedComparison:
    """What thresholding scores before computing AP does to it.

    Binarizing keeps one operating point: the ranking collapses into two tied blocks, so AP
    becomes (roughly) precision x recall plus the base rate's share, usually far below the AP
    of the raw scores. Compute AP on raw scores.

    Parameters
    ----------
    y_true : array_like of shape (n_samples,) or (n_samples, n_labels)
        0/1 labels.
    y_score : array_like, same shape
        Raw scores, finite.
    threshold : float, default 0.5
        Binarized means ``y_score >= threshold``.
    average : {"micro", "macro", "weighted", "samples"}, default "micro"
        Passed to :func:`average_precision`.

    Returns
    -------
    RawBinarizedComparison

    Examples
    --------
    >>> c = compare_raw_binarized([[0, 0, 1, 1], [0, 0, 0, 1]],
    ...                           [[0.1, 0.7, 0.75, 0.8], [0.3, 0.6, 0.2, 0.8]])
    >>> c.ap_raw, c.ap_binarized, c.precision, c.recall, c.n_predicted_positive
    (1.0, 0.6, 0.6, 1.0, 5)
    """
    _choice("average", average, AVERAGES[1:])
    if not isinstance(threshold, (int, float, np.integer, np.floating)) or not math.isfinite(threshold):
        raise ConfigError(f"threshold: expected a finite number, found {threshold!r}")
    scores = _as_scores(y_score)
    truth = _as_indicator(y_true, scores.shape)
    predicted = (scores >= threshold).astype(np.float64)
    ap_raw = average_precision(truth, scores, average=average)
    ap_binarized = average_precision(truth, predicted, average=average)
    n_predicted = int(predicted.sum())
    hits = float((predicted * truth).sum())
    n_pos = float(truth.sum())
    if n_predicted == 0 or n_pos == 0:
        warnings.warn(f"at threshold {threshold}: {n_predicted} predicted positive, {int(n_pos)} "
                      f"positives; precision or recall undefined (NaN)", UndefinedMetricWarning,
                      stacklevel=2)
    precision = hits / n_predicted if n_predicted else math.nan
    recall = hits / n_pos if n_pos else math.nan
    return RawBinarizedComparison(ap_raw=ap_raw, ap_binarized=ap_binarized, precision=precision,
                                  recall=recall, n_predicted_positive=n_predicted,
                                  threshold=float(threshold), average=average)


# --------------------------------------------------------------------------------------------
# The `deteval rank` document and its text renderings


def _plain(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def rank_report(y_true: Any, y_score: Any, *, average: str = "macro", method: str = "step",
                grid: str = "matlab_colon", k: int | None = None, binarize: float | None = None,
                sample_weight: Any = None, labels_name: str | None = None,
                scores_name: str | None = None) -> dict:
    """Everything ``deteval rank`` prints, as one JSON-ready dict.

    Parameters
    ----------
    y_true : array_like of shape (n_samples,) or (n_samples, n_labels)
        0/1 labels.
    y_score : array_like, same shape
        Scores, finite.
    average, method, grid, sample_weight
        As in :func:`average_precision`.
    k : int, optional
        Adds P@K, R@K, AP@K (both normalizations) and nDCG@K, one query per row of a 2-D
        input (the whole vector for 1-D input).
    binarize : float, optional
        Adds :func:`compare_raw_binarized` at this threshold (``average`` as above, ``micro``
        when it is None).
    labels_name, scores_name : str, optional
        Where the arrays came from (file names), copied into ``inputs``.

    Returns
    -------
    dict
        Keys ``inputs``, ``options``, ``metrics``, ``per_label``, ``at_k``, ``binarized``,
        ``warnings`` (see docs/ranking.md); undefined numbers are None.

    Examples
    --------
    >>> doc = rank_report([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], k=2)
    >>> doc["metrics"], doc["at_k"]["P@K"]
    ({'AP': 0.8333333333333333, 'ROC_AUC': 0.75}, 0.5)
    """
    _choice("average", average, AVERAGES)
    scores = _as_scores(y_score)
    truth = _as_indicator(y_true, scores.shape) if scores.ndim == 2 else \
        _binary_truth(y_true, scores.shape[0], None)
    is_multilabel = scores.ndim == 2 and scores.shape[1] > 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DetevalWarning)
        metrics = {"AP": _plain(average_precision(truth, scores, average=average, method=method, grid=grid,
                                                  sample_weight=sample_weight) if average else None),
                   "ROC_AUC": _plain(roc_auc(truth, scores, average=average, sample_weight=sample_weight)
                                     if average else None)}
        per_label = []
        if is_multilabel:
            ap = average_precision(truth, scores, average=None, method=method, grid=grid,
                                   sample_weight=sample_weight)
            auc = roc_auc(truth, scores, average=None, sample_weight=sample_weight)
            n_pos = truth.sum(axis=0)
            per_label = [{"label": j, "AP": _plain(ap[j]), "ROC_AUC": _plain(auc[j]),
                          "n_positives": int(n_pos[j])} for j in range(scores.shape[1])]
        at_k = None
        if k is not None:
            at_k = {"k": k,
                    "P@K": _plain(precision_at_k(truth, scores, k)),
                    "R@K": _plain(recall_at_k(truth, scores, k)),
                    "AP@K": _plain(average_precision_at_k(truth, scores, k, normalize="min")),
                    "AP@K_positives": _plain(average_precision_at_k(truth, scores, k, normalize="positives")),
                    "nDCG@K": _plain(ndcg_at_k(truth, scores, k))}
        binarized = None
        if binarize is not None:
            binarized = compare_raw_binarized(truth, scores, threshold=binarize,
                                              average=average or "micro").to_dict()
    messages = list(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, DetevalWarning)))
    for w in caught:  # anything that is not ours is passed on untouched
        if not issubclass(w.category, DetevalWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    n_labels = scores.shape[1] if scores.ndim == 2 else 1
    return {
        "inputs": {"labels": labels_name, "scores": scores_name, "n_samples": int(scores.shape[0]),
                   "n_labels": int(n_labels), "n_positives": int(truth.sum())},
        "options": {"average": average, "method": method,
                    "grid": grid if method == "11_point" else None, "k": k, "binarize": binarize},
        "metrics": metrics,
        "per_label": per_label,
        "at_k": at_k,
        "binarized": binarized,
        "warnings": messages,
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def format_rank_table(doc: dict) -> str:
    """Plain-text table of a :func:`rank_report` document.

    Examples
    --------
    >>> print(format_rank_table(rank_report([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])))
    ranking: 4 samples, 1 label, 2 positives (average=macro, method=step)
    AP       0.8333
    ROC_AUC  0.7500
    """
    inputs, options = doc["inputs"], doc["options"]
    method = options["method"] + (f", grid={options['grid']}" if options.get("grid") else "")
    lines = [f"ranking: {inputs['n_samples']} samples, {inputs['n_labels']} "
             f"label{'s' if inputs['n_labels'] != 1 else ''}, {inputs['n_positives']} positives "
             f"(average={options['average']}, method={method})"]
    rows = [(name, value) for name, value in doc["metrics"].items()]
    if doc["at_k"]:
        rows += [(name, value) for name, value in doc["at_k"].items() if name != "k"]
    if doc["binarized"]:
        b = doc["binarized"]
        rows += [("AP raw", b["ap_raw"]), (f"AP binarized (>= {b['threshold']:g})", b["ap_binarized"]),
                 ("precision at threshold", b["precision"]), ("recall at threshold", b["recall"]),
                 ("predicted positive", b["n_predicted_positive"])]
    width = max(len(name) for name, _ in rows)
    lines += [f"{name.replace('@K', '@' + str(doc['at_k']['k']) if doc['at_k'] else '@K'):<{width}}  "
              f"{_cell(value)}" for name, value in rows]
    if doc["per_label"]:
        lines.append("")
        lines.append(f"{'label':>5}  {'AP':>6}  {'ROC_AUC':>7}  {'positives':>9}")
        lines += [f"{row['label']:>5}  {_cell(row['AP']):>6}  {_cell(row['ROC_AUC']):>7}  "
                  f"{row['n_positives']:>9}" for row in doc["per_label"]]
    lines += [f"warning: {message}" for message in doc["warnings"]]
    return "\n".join(lines)


def format_rank_csv(doc: dict) -> str:
    """CSV of a :func:`rank_report` document: ``scope,metric,value`` rows.

    ``scope`` is ``all``, ``at_k``, ``binarized`` or ``label=<j>``; undefined values are empty.

    Examples
    --------
    >>> print(format_rank_csv(rank_report([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])))
    scope,metric,value
    all,AP,0.8333333333333333
    all,ROC_AUC,0.75
    """
    def text(value: Any) -> str:
        return "" if value is None else repr(value) if isinstance(value, float) else str(value)

    rows = ["scope,metric,value"]
    rows += [f"all,{name},{text(value)}" for name, value in doc["metrics"].items()]
    if doc["at_k"]:
        rows += [f"at_k,{name},{text(value)}" for name, value in doc["at_k"].items()]
    if doc["binarized"]:
        rows += [f"binarized,{name},{text(value)}" for name, value in doc["binarized"].items()]
    for row in doc["per_label"]:
        rows += [f"label={row['label']},{name},{text(row[name])}" for name in ("AP", "ROC_AUC", "n_positives")]
    return "\n".join(rows)
