"""The top of a ranked list: P@K, R@K, AP@K (two normalizations) and nDCG@K."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from deteval.errors import ConfigError, InputError, UndefinedMetricWarning
from deteval.ranking._common import (
    _as_indicator,
    _as_scores,
    _as_weights,
    _block_end_index,
    _block_start_index,
    _choice,
    _index_text,
)


def _queries(y_true: Any, y_score: Any, k: Any, *, graded: bool = False) -> tuple:
    scores = _as_scores(y_score)
    if scores.ndim == 1:
        scores = scores[None, :]
        y_true = np.asarray(y_true)[None, ...] if np.ndim(y_true) == 1 else np.asarray(y_true)
    if graded:
        truth = np.asarray(y_true)
        if truth.shape != scores.shape:
            raise InputError(
                f"y_true: shape {truth.shape} differs from y_score's {scores.shape}; "
                f"expected one relevance per score"
            )
        truth = _as_scores(truth, "y_true")
        if (truth < 0).any():
            where = tuple(np.argwhere(truth < 0)[0])
            raise InputError(
                f"y_true: element {_index_text(where)} is {truth[where]}; expected a relevance >= 0"
            )
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
        warnings.warn(
            f"{int((~is_defined).sum())} of {is_defined.size} queries without positives: "
            f"{what} is undefined for them and they are left out of the mean",
            UndefinedMetricWarning,
            stacklevel=3,
        )
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


def ndcg_at_k(
    y_true: Any, y_score: Any, k: int | None = None, *, sample_weight: Any = None, ignore_ties: bool = False
) -> float:
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
