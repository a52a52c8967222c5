"""Category-id lookups of the loaders (deteval.io.category_map)."""

import numpy as np


def test_index_of_by_table_equals_the_binary_search():
    """Class ids of a small range go through a lookup table: the same positions as searchsorted."""
    from deteval.io.category_map.maps import _index_of

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
