"""``accumulate._min_tp_for_recall`` equals a brute-force search with pycocotools' float division.

The count of true positives needed to reach each recall point decides which precision is read
(pycocotools: ``np.searchsorted(tp / npos, recThrs, side="left")``); the fast version tries four
counts around ``ceil(thr * n)`` and must agree with the full search for every count.
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval.accumulate import recall_grid
from deteval.accumulate.point_sampled import _min_tp_for_recall

GRIDS = {
    "101_point": np.linspace(0, 1, 101),
    "matlab_colon": recall_grid("11_point", "matlab_colon"),
    "numpy_arange": recall_grid("11_point", "numpy_arange"),
    "edges": np.array([0.0, 1e-12, 0.5, 1 - 1e-16, 1.0, 1.0000001]),
    "random": np.random.default_rng(0).random(200),
}


def _searched(n_pos: np.ndarray, rec_thr: np.ndarray) -> np.ndarray:
    out = np.full((len(n_pos), len(rec_thr)), np.iinfo(np.int64).max // 4, dtype=np.int64)
    for n in np.unique(n_pos[n_pos > 0]):
        out[n_pos == n] = np.searchsorted(np.arange(n + 1) / n, rec_thr, side="left")
    return out


@pytest.mark.parametrize("grid", list(GRIDS))
def test_needed_counts_equal_the_full_search(grid):
    n_pos = np.r_[np.arange(0, 3001), [10**5 + 7, 10**6]]
    assert (_min_tp_for_recall(n_pos, GRIDS[grid]) == _searched(n_pos, GRIDS[grid])).all()
