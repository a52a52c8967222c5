"""The dataset-wide selection's lookups give what the per-call numpy code gives, on every path."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.data import FederatedLabels
from deteval.evaluate import selection


@pytest.mark.parametrize("rows_per_image", [0.5, 3, 400])  # the per-list path, then the table's
def test_is_listed_is_the_union_of_has_pair(rows_per_image, monkeypatch):
    rng = np.random.default_rng(int(rows_per_image * 10))
    n_image, n_class = 40, 30
    n = int(n_image * rows_per_image)
    image, category = rng.integers(0, n_image, n), rng.integers(0, n_class, n).astype(np.int32)
    pairs = tuple((rng.integers(0, n_image, m), rng.integers(0, n_class, m)) for m in (0, 50, 300))
    expected = np.zeros(n, dtype=bool)
    for pair_image, pair_category in pairs:
        expected |= FederatedLabels.has_pair(pair_image, pair_category, image, category, n_class=n_class)
    got = selection._is_listed(pairs, image, category, n_image=n_image, n_class=n_class)
    assert got.dtype == bool
    assert np.array_equal(got, expected)
    monkeypatch.setattr(selection, "_LOOKUP_BLOCK", 7)  # looked up in blocks, the last one short
    assert np.array_equal(
        selection._is_listed(pairs, image, category, n_image=n_image, n_class=n_class), expected
    )
    assert 0 < expected.sum() < n or n < 50


def test_image_ranking_equals_a_lexsort_by_image_score_and_file_order():
    """_rank_in (the compiled sort) is the rank a stable lexsort by (key, -score, order) gives."""
    rng = np.random.default_rng(5)
    n = 5000
    key = rng.integers(-1, 60, n)
    score = rng.choice(np.array([0.1, 0.2, 0.2, -0.0, 0.0, np.nan, 0.9]), n)
    file_order = rng.permutation(n)  # not in row order: the ties key is read

    class _Dt:
        def __init__(self) -> None:
            self.score, self.order = score, file_order

        def __len__(self) -> int:
            return n

    for threads in (1, 2, 3, 7):
        rank = selection._rank_in(key, _Dt(), threads)  # type: ignore[arg-type]
        order = np.lexsort((file_order, -score, key))
        expected = np.empty(n, dtype=np.int64)
        sorted_key = key[order]
        starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
        expected[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
        assert np.array_equal(rank.astype(np.int64), expected)
