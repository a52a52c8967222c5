"""LaneFlags: the match table's packed (lanes x detections) flags against plain bool tables."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from deteval.errors import ConfigError
from deteval.matching import LaneFlags, lane_bytes


def random_flags(seed: int, n_lane: int, n_det: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n_lane, n_det)) < 0.4


@pytest.mark.parametrize("n_lane", [0, 1, 7, 8, 9, 40, 64, 65, 130])
@pytest.mark.parametrize("n_det", [0, 1, 13])
def test_pack_unpack_and_lanes(n_lane, n_det):
    flags = random_flags(n_lane * 100 + n_det, n_lane, n_det)
    packed = LaneFlags.pack(flags)
    assert packed.bits.dtype == np.uint8
    assert packed.bits.flags.c_contiguous
    assert packed.bits.shape == (n_det, lane_bytes(n_lane))
    assert len(packed) == n_det
    assert packed.n_lane == n_lane
    unpacked = packed.unpack()
    assert unpacked.dtype == np.bool_
    assert unpacked.shape == (n_lane, n_det)
    assert np.array_equal(unpacked, flags)
    for lane in range(n_lane):
        assert np.array_equal(packed.lane(lane), flags[lane])
    if n_lane <= 64:
        words = packed.words()
        expected = np.zeros(n_det, dtype=np.uint64)
        for lane in range(n_lane):
            expected |= flags[lane].astype(np.uint64) << np.uint64(lane)
        assert words.dtype == np.uint64
        assert np.array_equal(words, expected)


@pytest.mark.parametrize("n_lane", [1, 10, 40, 64, 80])
def test_select_equals_the_bool_rows(n_lane):
    flags = random_flags(n_lane, n_lane, 101)
    packed = LaneFlags.pack(flags)
    rng = np.random.default_rng(n_lane)
    choices = [
        np.arange(n_lane),
        np.arange(min(n_lane, 10)),
        np.arange(n_lane)[n_lane // 2 :],
        np.arange(0, n_lane, 3),
        np.sort(rng.choice(n_lane, size=max(n_lane // 3, 1), replace=False)),
        np.zeros(0, dtype=np.int64),
    ]
    for lanes in choices:
        got = packed.select(lanes)
        assert got.n_lane == len(lanes)
        assert np.array_equal(got.bits, LaneFlags.pack(flags[lanes]).bits), lanes.tolist()


@pytest.mark.parametrize(("n_area", "n_thr"), [(1, 1), (4, 10), (3, 3), (2, 40), (1, 101)])
def test_by_area_repeats_each_area_over_its_lanes(n_area, n_thr):
    out = random_flags(n_area + n_thr, n_area, 57)
    got = LaneFlags.by_area(out, n_thr)
    assert np.array_equal(got.bits, LaneFlags.pack(np.repeat(out, n_thr, axis=0)).bits)


def test_take_concatenate_zeros_and_pickle():
    flags = random_flags(3, 40, 20)
    packed = LaneFlags.pack(flags)
    order = np.random.default_rng(3).permutation(20)
    assert np.array_equal(packed.take(order).unpack(), flags[:, order])
    both = LaneFlags.concatenate([packed, packed.take(order[:5])])
    assert np.array_equal(both.unpack(), np.concatenate([flags, flags[:, order[:5]]], axis=1))
    assert not LaneFlags.zeros(40, 20).unpack().any()
    again = pickle.loads(pickle.dumps(packed))
    assert again.n_lane == 40
    assert np.array_equal(again.bits, packed.bits)
    assert again == packed
    assert packed != LaneFlags.zeros(40, 20)
    assert packed != LaneFlags.pack(flags[:39])


def test_errors_name_what_was_expected():
    packed = LaneFlags.pack(random_flags(0, 3, 4))
    with pytest.raises(ConfigError, match=r"expected a lane in \[0, 3\), found 3"):
        packed.lane(3)
    with pytest.raises(ConfigError, match="expected at most 64 lanes"):
        LaneFlags.pack(random_flags(0, 65, 2)).words()
    with pytest.raises(ConfigError, match="expected the same lanes"):
        LaneFlags.concatenate([packed, LaneFlags.zeros(4, 1)])


def test_match_table_lane_readers_equal_the_unpacked_tables():
    import warnings

    import deteval

    with warnings.catch_warnings():  # the fixture's notes
        warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
        result = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "coco")
    table = result.table
    tp, ignored = table.det_is_tp, table.det_is_ignored
    assert tp.shape == ignored.shape == (table.n_lane, len(table.det_score)) == (40, len(table.det_score))
    for lane in range(table.n_lane):
        assert np.array_equal(table.lane_is_tp(lane), tp[lane])
        assert np.array_equal(table.lane_is_ignored(lane), ignored[lane])
