"""Shared pieces of the ranking metrics: options, input checks at the edge, the ranked form."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.accumulate import recall_grid, step_ap_sum, tie_group_end
from deteval.errors import ConfigError, InputError, UndefinedMetricWarning
from deteval.ranking._options import AVERAGES

# --------------------------------------------------------------------------------------------
# Grids


def _recall_grid(method: str, grid: str) -> np.ndarray:
    """Recall points of an interpolated method: the detection protocols' own grids."""
    return recall_grid(method, grid)


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
        raise InputError(
            f"{name}: expected shape (n_samples,) or (n_samples, n_labels), "
            f"found {scores.ndim} dimensions {scores.shape}"
        )
    if scores.size == 0:
        raise InputError(f"{name}: expected at least one sample, found shape {scores.shape}")
    scores = scores.astype(np.float64, copy=False)
    bad = ~np.isfinite(scores)
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        raise InputError(
            f"{name}: element {_index_text(where)} is {scores[where]}; expected finite "
            f"numbers ({int(bad.sum())} non-finite in all)"
        )
    return scores


def _as_indicator(y_true: Any, shape: tuple, name: str = "y_true") -> np.ndarray:
    """A 0/1 matrix or vector of the given shape, as float64."""
    labels = np.asarray(y_true)
    if labels.shape != shape:
        raise InputError(
            f"{name}: shape {labels.shape} differs from y_score's {shape}; expected one label per score"
        )
    if labels.dtype == object or not (np.issubdtype(labels.dtype, np.number) or labels.dtype == bool):
        raise InputError(f"{name}: expected 0/1 labels, found dtype {labels.dtype}")
    bad = (labels != 0) & (labels != 1)
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        raise InputError(
            f"{name}: element {_index_text(where)} is {labels[where].item()!r}; expected 0 or 1 "
            f"({int(bad.sum())} such elements)"
        )
    return labels.astype(np.float64)


def _binary_truth(y_true: Any, n: int, pos_label: Any, name: str = "y_true") -> np.ndarray:
    """1-D labels with at most two values -> 0/1 float64 (positive = ``pos_label``).

    ``pos_label=None`` follows scikit-learn: labels must be a subset of {0, 1} or {-1, 1}.
    """
    labels = np.asarray(y_true)
    if labels.shape != (n,):
        raise InputError(
            f"{name}: shape {labels.shape} differs from y_score's {(n,)}; expected one label per score"
        )
    if labels.dtype == object:
        raise InputError(f"{name}: expected numbers, booleans or strings, found dtype object")
    present = np.unique(labels)
    if present.size > 2:
        raise InputError(
            f"{name}: binary labels expected, found {present.size} distinct values "
            f"{present[:5].tolist()}{'...' if present.size > 5 else ''}"
        )
    if pos_label is None:
        if not (np.isin(present, [0, 1]).all() or np.isin(present, [-1, 1]).all()):
            raise InputError(
                f"{name}: labels {present.tolist()} are not {{0, 1}} or {{-1, 1}}; "
                f"expected those, or give pos_label"
            )
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


@frozen
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
    return tie_group_end(is_end)


def _block_start_index(is_end: np.ndarray) -> np.ndarray:
    """For each position, the index of the first position of its tied block."""
    n = is_end.shape[1]
    is_start = np.empty_like(is_end)
    is_start[:, 0] = True
    is_start[:, 1:] = is_end[:, :-1]
    idx = np.where(is_start, np.arange(n), 0)
    return np.maximum.accumulate(idx, axis=1)


def _step_ap(ranked: _Ranked) -> np.ndarray:
    """scikit-learn's AP per row: sum over thresholds of (R_n - R_{n-1}) * P_n.

    The sum is :func:`deteval.accumulate.step_ap_sum`, which ``ap_method: step`` of the
    detection protocols uses too.
    """
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
    return np.maximum(step_ap_sum(recall, precision, starts), 0.0)


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
        sampled[j] = np.where(
            found, np.take_along_axis(envelope, np.minimum(first, n - 1)[:, None], axis=1)[:, 0], 0.0
        )
    return sampled.mean(axis=0)


def _warn_no_positive(n_without: int, what: str) -> None:
    warnings.warn(
        f"{n_without} {what} without positive samples: their AP is undefined and counts "
        f"as 0 (scikit-learn's value)",
        UndefinedMetricWarning,
        stacklevel=3,
    )


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
