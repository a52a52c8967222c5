"""Category-id lookups of the loaders (deteval.io.category_map)."""

import numpy as np


def test_index_of_by_table_equals_the_binary_search():
    """Class ids of a small range go through a lookup table: the same positions as searchsorted."""
    from deteval.io.category_map import _index_of

    def by_search(values, sorted_ids):
        if len(sorted_ids) == 0:
            return np.full(len(values), -1, np.int32)
        pos = np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)
        return np.where(sorted_ids[pos] == values, pos, -1).astype(np.int32)

    rng = np.random.default_rng(0)
    for trial in range(600):
        ids = np.unique(rng.integers(-50, 200, rng.integers(0, 20))).astype((np.int64, np.int32)[trial % 2])
        if trial % 7 == 0 and len(ids) > 1:  # a repeated id: the first position, by the search
            ids = np.sort(np.concatenate([ids, ids[:1]]))
        values = rng.integers(-100, 300, rng.integers(0, 400)).astype(
            (np.int64, np.int32, np.uint16)[trial % 3]
        )
        if trial % 11 == 0:
            values = np.concatenate([np.array([2**62, -(2**62), 5]), values.astype(np.int64)])
        found = _index_of(values, ids)
        assert found.dtype == np.int32
        assert np.array_equal(found, by_search(values, ids))
