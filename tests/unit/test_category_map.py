"""Category-id lookups of the loaders (deteval.io.category_map)."""

import numpy as np


def _by_search(values, sorted_ids, dtype=np.int32):
    if len(sorted_ids) == 0:
        return np.full(len(values), -1, dtype)
    pos = np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)
    return np.where(sorted_ids[pos] == values, pos, -1).astype(dtype)


def test_index_of_by_table_equals_the_binary_search():
    """Class ids of a small range go through a lookup table: the same positions as searchsorted."""
    from deteval.io.identity import _index_of

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
        assert np.array_equal(found, _by_search(values, ids))


def test_index_of_spread_ids_by_table_equals_the_binary_search():
    """Image ids spread over up to 128 ids each (the annotations' and detections' joins), int64 out."""
    from deteval.io import identity

    rng = np.random.default_rng(1)
    for _ in range(400):
        n = int(rng.integers(1, 300))
        spread = int(rng.choice([1, 50, 128, 129, 10_000]))
        low = int(rng.choice([0, -(2**40), 2**62]))
        ids = np.unique(low + rng.integers(0, n * spread, n)).astype(np.int64)
        values = np.concatenate(
            [rng.choice(ids, 50), low + rng.integers(-5, n * spread + 5, 50), [2**63 - 1, -(2**63), 0]]
        ).astype(np.int64)
        found = identity._index_of(values, ids, np.int64)
        assert found.dtype == np.int64
        assert np.array_equal(found, _by_search(values, ids, np.int64))
        if int(ids[-1]) - int(ids[0]) + 1 <= identity._TABLE_IDS_PER_ID * len(ids):
            assert identity._position_table(values, ids) is not None  # the table path was the one taken
    assert identity._position_table(np.array([1], np.uint64), np.array([1])) is None  # uint64: searched


def test_category_map_key_beyond_int64_is_a_config_error(tmp_path, capsys):
    """A category map ``{"99999999999999999999": 1}`` was an OverflowError traceback."""
    from deteval.cli import main
    from tests import ROOT

    path = tmp_path / "map.json"
    path.write_text('{"0": 1,\n "99999999999999999999": 2}\n')
    gt, dt = ROOT / "fixtures" / "coco" / "gt.json", ROOT / "fixtures" / "coco" / "dt.json"
    code = main(["evaluate", "--gt", str(gt), "--dt", str(dt), "--category-map", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 3, err
    assert err.strip() == (
        f"deteval: error: {path}:2: key 99999999999999999999 does not fit a 64-bit category id; "
        "expected a detection category id (the id or class index the detections carry) "
        f"within +-2**63"
    )


def test_category_map_target_beyond_int64_names_the_entry(tmp_path, capsys):
    from deteval.cli import main
    from tests import ROOT

    path = tmp_path / "map.json"
    path.write_text('{"0": 99999999999999999999}\n')
    gt, dt = ROOT / "fixtures" / "coco" / "gt.json", ROOT / "fixtures" / "coco" / "dt.json"
    code = main(["evaluate", "--gt", str(gt), "--dt", str(dt), "--category-map", str(path)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert f"{path}:1: 0: 99999999999999999999 is not a category id of" in err
