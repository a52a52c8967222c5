"""Raw scores against thresholded predictions, and the one-call report the ``rank`` command prints."""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict
from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.errors import ConfigError, DetevalWarning, UndefinedMetricWarning
from deteval.ranking._common import (
    AVERAGES,
    _as_indicator,
    _as_scores,
    _binary_truth,
    _choice,
)
from deteval.ranking.at_k import average_precision_at_k, ndcg_at_k, precision_at_k, recall_at_k
from deteval.ranking.curves import average_precision, roc_auc


@frozen
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
        return {
            key: (None if isinstance(value, float) and math.isnan(value) else value)
            for key, value in asdict(self).items()
        }


def compare_raw_binarized(
    y_true: Any, y_score: Any, *, threshold: float = 0.5, average: str = "micro"
) -> RawBinarizedComparison:
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
        warnings.warn(
            f"at threshold {threshold}: {n_predicted} predicted positive, {int(n_pos)} "
            f"positives; precision or recall undefined (NaN)",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    precision = hits / n_predicted if n_predicted else math.nan
    recall = hits / n_pos if n_pos else math.nan
    return RawBinarizedComparison(
        ap_raw=ap_raw,
        ap_binarized=ap_binarized,
        precision=precision,
        recall=recall,
        n_predicted_positive=n_predicted,
        threshold=float(threshold),
        average=average,
    )


# --------------------------------------------------------------------------------------------
# The `deteval rank` document and its text renderings


def _plain(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def rank_report(
    y_true: Any,
    y_score: Any,
    *,
    average: str = "macro",
    method: str = "step",
    grid: str = "matlab_colon",
    k: int | None = None,
    binarize: float | None = None,
    sample_weight: Any = None,
    labels_name: str | None = None,
    scores_name: str | None = None,
    label_names: Any = None,
) -> dict:
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
    label_names : sequence of str, optional
        A name for each label column (a CSV header): ``per_label`` rows carry it as ``name``.

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
    truth = (
        _as_indicator(y_true, scores.shape)
        if scores.ndim == 2
        else _binary_truth(y_true, scores.shape[0], None)
    )
    is_multilabel = scores.ndim == 2 and scores.shape[1] > 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DetevalWarning)
        metrics = {
            "AP": _plain(
                average_precision(
                    truth, scores, average=average, method=method, grid=grid, sample_weight=sample_weight
                )
                if average
                else None
            ),
            "ROC_AUC": _plain(
                roc_auc(truth, scores, average=average, sample_weight=sample_weight) if average else None
            ),
        }
        per_label = []
        if is_multilabel:
            ap = average_precision(
                truth, scores, average=None, method=method, grid=grid, sample_weight=sample_weight
            )
            auc = roc_auc(truth, scores, average=None, sample_weight=sample_weight)
            n_pos = truth.sum(axis=0)
            if label_names is not None and len(label_names) != scores.shape[1]:
                raise ConfigError(
                    f"label_names: {len(label_names)} names for {scores.shape[1]} label columns; "
                    "expected one name a column"
                )
            per_label = [
                {
                    "label": j,
                    "name": None if label_names is None else str(label_names[j]),
                    "AP": _plain(ap[j]),
                    "ROC_AUC": _plain(auc[j]),
                    "n_positives": int(n_pos[j]),
                }
                for j in range(scores.shape[1])
            ]
        at_k = None
        if k is not None:
            at_k = {
                "k": k,
                "P@K": _plain(precision_at_k(truth, scores, k)),
                "R@K": _plain(recall_at_k(truth, scores, k)),
                "AP@K": _plain(average_precision_at_k(truth, scores, k, normalize="min")),
                "AP@K_positives": _plain(average_precision_at_k(truth, scores, k, normalize="positives")),
                "nDCG@K": _plain(ndcg_at_k(truth, scores, k)),
            }
        binarized = None
        if binarize is not None:
            binarized = compare_raw_binarized(
                truth, scores, threshold=binarize, average=average or "micro"
            ).to_dict()
    messages = list(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, DetevalWarning)))
    for w in caught:  # anything that is not ours is passed on untouched
        if not issubclass(w.category, DetevalWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    n_labels = scores.shape[1] if scores.ndim == 2 else 1
    return {
        "inputs": {
            "labels": labels_name,
            "scores": scores_name,
            "n_samples": int(scores.shape[0]),
            "n_labels": int(n_labels),
            "n_positives": int(truth.sum()),
        },
        "options": {
            "average": average,
            "method": method,
            "grid": grid if method == "11_point" else None,
            "k": k,
            "binarize": binarize,
        },
        "metrics": metrics,
        "per_label": per_label,
        "at_k": at_k,
        "binarized": binarized,
        "warnings": messages,
    }
