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
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval import _speedups, grouping
from deteval.grouping import lexsort, rank_in_group
from tests.support.kernels import twins_only

_csort = _speedups.load("deteval._csort")

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


@settings(max_examples=500, deadline=None)
@given(
    key_sets(), st.integers(0, 2**32 - 1), st.sampled_from([np.int64, np.int8, np.uint8, np.uint64, np.bool_])
)
def test_few_long_groups_is_numpy_lexsort(inner, seed, dtype):
    """The run-by-run path (a leading key of few values, each a long run) on short inputs too."""
    n = len(inner[0])
    values = np.random.default_rng(seed).integers(0, 2 if dtype is np.bool_ else 4, n)
    group = (values - 2 if dtype in (np.int64, np.int8) else values).astype(dtype)
    order = grouping._few_long_groups(group, inner, min_run=0)
    if n == 0:
        assert order is None
        return
    assert order is not None
    assert order.tolist() == np.lexsort(inner + (group,)).tolist()


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-3, 3), FLOATS, st.integers(0, 2)), max_size=60),
    st.sampled_from([np.int64, np.int32]),
    st.booleans(),
)
def test_by_group_then_descending_is_lexsort(rows, dtype, with_ties):
    """Compiled counting sort, run-by-run numpy path and plain lexsort: one permutation."""
    group = np.array([r[0] for r in rows], dtype=dtype)
    score = np.array([r[1] for r in rows], dtype=np.float64)
    ties = (np.array([r[2] for r in rows], dtype=np.int64),) if with_ties else ()
    expected = np.lexsort(ties + (-score, group)).tolist()
    assert grouping.by_group_then_descending(group, score, ties).tolist() == expected
    if len(rows):
        by_runs = grouping._few_long_groups(group, ties + (score,), min_run=0, negate_last=True)
        assert by_runs is not None
        assert by_runs.tolist() == expected
    if _csort is not None and not with_ties and len(rows):
        order = np.empty(len(rows), dtype=np.int64)
        low = int(group.min())
        assert _csort.order_by_group_then_score(order, group, group.dtype.itemsize, low, 7, score)
        assert order.tolist() == expected


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize(
    ("n", "n_distinct", "spread", "dtype"),
    [
        (4000, 600, 1 << 40, np.int64),  # far wider than the rows: three 14-bit radix passes
        (3000, 900, 6_000_000, np.int32),  # LVIS' image * 1203 + class after the federated filter
        (50, 40, (1 << 62) + 5, np.int64),  # more than 62 bits of range
        (1, 1, 1 << 30, np.int64),
        (7, 7, 1 << 20, np.int32),  # more parts than groups
    ],
)
def test_spread_groups_are_sorted_by_the_kernel_itself(threads, n, n_distinct, spread, dtype):
    """Group values spread far wider than the rows are sorted by the kernel in radix passes.

    The counting sort's table cannot hold LVIS' (image, class) keys (7 million codes for 300k
    kept detections at 5k images): the kernel sorts them by a few radix passes instead of
    declining to the numpy passes; the permutation is np.lexsort's for every thread count.
    """
    if _csort is None:
        pytest.skip("deteval._csort not built")
    rng = np.random.default_rng(n + n_distinct)
    low = -(spread // 3)
    pool = low + rng.integers(0, spread - 1, n_distinct, dtype=np.int64, endpoint=True)
    pool[0], pool[-1] = low, low + spread - 1  # the range's two ends
    group = rng.choice(pool, n).astype(dtype)
    score = rng.choice(np.array([0.1, 0.5, -0.0, 0.0, np.nan, np.inf, 0.3]), n)
    expected = np.lexsort((-score, group)).tolist()
    _speedups.reset_declines()
    got = grouping.by_group_then_descending(group, score, threads=threads)
    assert _speedups.declines() == {}
    assert got.tolist() == expected
    rank = grouping.rank_by_group_then_descending(group, score, threads=threads)  # written as it sorts
    assert _speedups.declines() == {}
    expected_rank = np.empty(n, dtype=np.int64)
    expected_rank[expected] = rank_in_group(group[expected])
    assert rank.dtype == np.int32
    assert rank.tolist() == expected_rank.tolist()
    order = np.empty(n, dtype=np.int64)
    n_codes = int(group.max()) - int(group.min()) + 1
    assert _csort.order_by_group_then_score(
        order, group, group.dtype.itemsize, int(group.min()), n_codes, score, threads
    )
    assert order.tolist() == expected


def test_the_counting_sort_declines_what_it_cannot_read():
    if _csort is None:
        pytest.skip("deteval._csort not built")
    group, score = np.array([0, 5, 1]), np.array([0.1, 0.2, 0.3])
    order = np.full(3, -1, dtype=np.int64)
    assert _csort.order_by_group_then_score(order, group, 8, 0, 5, score) is None  # 5 is out of range
    assert _csort.order_by_group_then_score(order, group, 8, 0, 6, score[:2]) is None  # lengths differ
    assert _csort.order_by_group_then_score(order, group, 2, 0, 6, score) is None  # itemsize
    assert order.tolist() == [-1, -1, -1]
    assert grouping.by_group_then_descending(group, score).tolist() == [0, 2, 1]


def test_ranking_by_class_then_score_takes_the_run_path():
    """Few classes, long runs: the (class, -score) ranking of all detections, as np.lexsort."""
    rng = np.random.default_rng(3)
    n = 50_000
    cls = rng.integers(0, 7, n)
    score = -np.round(rng.random(n), 2)
    score[::97] = -0.0
    score[::89] = np.nan
    score[::83] = 0.0
    order = np.arange(n)[::-1].copy()
    for keys in ((score, cls), (order, score, cls), (score, cls.astype(np.int8))):
        assert grouping._few_long_groups(keys[-1], keys[:-1]) is not None
        assert (lexsort(keys) == np.lexsort(keys)).all()


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
        "print(sorted(m for m in ('deteval.stats', 'deteval.evaluator', 'deteval._version', 'shapely') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@st.composite
def grouped_scores(draw):
    n = draw(st.integers(0, 300))
    n_groups = draw(st.integers(1, 60))
    group = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)), dtype=np.int64)
    score = np.array(draw(st.lists(FLOATS, min_size=n, max_size=n)), dtype=np.float64)
    return score, group


@pytest.mark.skipif(_csort is None, reason="deteval._csort is not built (pip install . with a C compiler)")
@settings(max_examples=400, deadline=None)
@given(grouped_scores(), st.booleans())
def test_compiled_run_sort_equals_the_numpy_passes(data, negate):
    score, group = data
    keys = (-score if negate else score, group, group // 7)
    compiled = lexsort(keys)
    with pytest.MonkeyPatch.context() as m:
        twins_only(m, "deteval._csort")
        twin = lexsort(keys)
    assert compiled.tolist() == twin.tolist() == np.lexsort(keys).tolist()


@pytest.mark.skipif(_csort is None, reason="deteval._csort is not built (pip install . with a C compiler)")
@pytest.mark.parametrize("run_length", [1, 5, 24, 25, 100, 5000])
def test_compiled_run_sort_on_long_runs(run_length):
    rng = np.random.default_rng(run_length)
    n = 20_000
    group = np.arange(n) // run_length
    score = rng.choice(np.array([0.0, -0.0, 0.25, 0.5, 1.0, np.nan, np.inf, -np.inf]), n)
    fresh = rng.random(n) < 0.5
    score[fresh] = np.round(rng.random(int(fresh.sum())), 2)
    order = np.arange(n, dtype=np.int64)
    assert _csort.sort_runs_by_score(order, group.astype(np.int64), score) is True
    assert order.tolist() == np.lexsort((-score, group)).tolist()
