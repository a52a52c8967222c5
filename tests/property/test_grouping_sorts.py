"""The radix sorts of :mod:`deteval.grouping` give exactly numpy's permutations.

Matching, grouping and ranking order every detection with :func:`deteval.grouping.lexsort` and
:func:`deteval.grouping.rank_in_group`; their tie rules decide which detection matches, so they
must equal ``np.lexsort`` (stable, last key first) and a plain rank count on every input: ties,
-0.0 next to 0.0, NaN and infinities, keys already in order, and integer keys too wide to pack.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval.grouping import lexsort, rank_in_group

FLOATS = st.sampled_from([0.0, -0.0, 0.5, -0.5, 1.0, np.inf, -np.inf, np.nan, 1e-300, 0.1 + 0.2])


@st.composite
def key_sets(draw):
    n = draw(st.integers(0, 40))
    keys = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["small", "wide", "float", "sorted"]))
        if kind == "small":
            keys.append(np.array(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), dtype=np.int64))
        elif kind == "wide":
            values = st.integers(-(2**62), 2**62)
            keys.append(np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.int64))
        elif kind == "float":
            keys.append(np.array(draw(st.lists(FLOATS, min_size=n, max_size=n)), dtype=np.float64))
        else:
            keys.append(
                np.sort(np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=np.int64))
            )
    return tuple(keys)


@settings(max_examples=500, deadline=None)
@given(key_sets())
def test_lexsort_is_numpy_lexsort(keys):
    assert lexsort(keys).tolist() == np.lexsort(keys).tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=60))
def test_rank_in_group_counts_within_runs(values):
    key = np.sort(np.array(values, dtype=np.int64))
    expected = [sum(1 for earlier in key[:i] if earlier == k) for i, k in enumerate(key.tolist())]
    assert rank_in_group(key).tolist() == expected


def test_large_keys_use_several_radix_passes():
    rng = np.random.default_rng(0)
    n = 200_000
    keys = (np.arange(n), np.round(rng.random(n), 3), rng.integers(0, 1_600_000, n))
    assert (lexsort(keys) == np.lexsort(keys)).all()


def test_import_deteval_loads_only_what_scoring_needs():
    code = (
        "import sys, deteval; "
        "print(sorted(m for m in ('deteval.stats', 'deteval.evaluator', 'deteval._version') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
