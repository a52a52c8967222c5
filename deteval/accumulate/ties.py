"""Tied scores (``score_ties: threshold``) and the step sum: shared with :mod:`deteval.ranking`."""

from __future__ import annotations

import numpy as np

from deteval.accumulate.values import _Ranked


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
