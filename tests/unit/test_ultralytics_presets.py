"""The two Ultralytics presets and the two fields that tell them apart (gt_ties, curve_end)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deteval.api import evaluate, explain
from deteval.cli import main
from deteval.errors import ConfigError
from deteval.protocol import get_protocol, load_protocol_text
from tests.support.presets import _coco, _dataset


def _one_class(anns, dts):
    gt = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": i + 1, "image_id": 1, "category_id": 1, "bbox": b, "area": b[2] * b[3], "iscrowd": 0}
            for i, b in enumerate(anns)
        ],
    }
    dt = [{"image_id": 1, "category_id": 1, "bbox": b, "score": s} for b, s in dts]
    return gt, dt


def test_the_presets_differ_in_exactly_the_two_fields_and_name_their_releases():
    new, old = get_protocol("ultralytics"), get_protocol("ultralytics-8.3")
    differ = {k for k, v in new.to_dict().items() if old.to_dict().get(k) != v}
    assert differ == {"name", "source", "matching", "gt_ties", "curve_end"}
    assert (new.matching, new.gt_ties, new.curve_end) == ("coco", "first", "drop")
    assert (old.matching, old.gt_ties, old.curve_end) == ("ultralytics", "last", "slope")
    assert "8.4.176" in new.source
    assert "8.3.x to 8.4.36" in old.source


def test_gt_ties_first_takes_the_first_of_two_equally_overlapped_labels():
    # The first detection overlaps both labels at IoU 0.6; the second only the second label
    # (IoU 0.818). Taking the first label (np.argmax, Ultralytics 8.4.176+) leaves the second
    # label to the second detection; taking the last (pycocotools) leaves it nothing.
    gt, dt = _one_class([[0, 0, 10, 10], [5, 0, 10, 10]], [([2.5, 0, 10, 10], 0.9), ([6, 0, 10, 10], 0.8)])
    first = get_protocol("ultralytics").replace(name="u", curve_end="slope", iou_thresholds=[0.5])
    last = first.replace(gt_ties="last")
    assert evaluate(gt, dt, first).recall[0, 0, 0, 0] == 1.0
    assert evaluate(gt, dt, last).recall[0, 0, 0, 0] == 0.5


def test_curve_end_drop_is_zero_past_the_last_recall_point():
    # Two labels, one found at precision 1: recall [0.5], precision [1.0].
    gt, dt = _one_class([[0, 0, 10, 10], [50, 50, 10, 10]], [([0, 0, 10, 10], 0.9)])
    new = evaluate(gt, dt, "ultralytics").ap[0, 0, 0, 0]
    old = evaluate(gt, dt, "ultralytics-8.3").ap[0, 0, 0, 0]
    # slope: 0.5 under precision 1, then a line down to 0 at recall 1 (0.25 more).
    assert old == pytest.approx(0.75, abs=1e-12)
    # drop: np.interp reads 0 at recall 0.5 itself, so the last trapezoid (0.49..0.5) is halved.
    assert new == pytest.approx(0.495, abs=1e-12)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"gt_ties": "first", "matching": "voc"}, "gt_ties 'first' is read by matching: coco only"),
        (
            {"curve_end": "drop", "ap_method": "101_point"},
            "curve_end 'drop' is read by ap_method: trapezoid_101",
        ),
    ],
)
def test_a_field_that_would_change_nothing_is_refused(fields, message):
    gt, dt = _one_class([[0, 0, 10, 10]], [([0, 0, 10, 10], 0.9)])
    protocol = get_protocol("ultralytics").replace(name="x", **fields)
    with pytest.raises(ConfigError, match=message):
        evaluate(gt, dt, protocol)


def test_the_releases_between_the_two_changes_are_one_field_away():
    between = load_protocol_text(
        "extends: ultralytics-8.3\ncurve_end: drop\n", filename="ultralytics-8.4.37.yaml"
    )
    assert (between.matching, between.curve_end) == ("ultralytics", "drop")


def _crowded(seed: int):
    """_dataset's images plus a crowded one: overlapping labels, where the two matchings differ."""
    rng = np.random.default_rng(seed)
    images = _dataset(seed)
    xy = rng.normal(100, 15, (30, 2))
    gt_boxes = np.concatenate([xy, xy + 40], axis=1)
    dets = np.repeat(gt_boxes, 2, axis=0) + rng.normal(0, 4, (60, 4))
    scores = rng.permutation(60) / 60 * 0.5 + 0.995  # above every score of _dataset: distinct
    images.append(
        (gt_boxes, np.zeros(30, np.int64), np.zeros(30, bool), dets, scores, np.zeros(60, np.int64))
    )
    return _coco(images)


def test_explain_walks_from_8_3_to_the_current_release_field_by_field():
    gt, dt = _crowded(3)
    walk = explain(gt, dt, "ultralytics-8.3", "ultralytics")
    steps = {s.name: {f for f, _, _ in s.changes} for s in walk.steps}
    assert steps == {"interpolation": {"curve_end"}, "matching rule": {"matching", "gt_ties"}}
    assert [s.name for s in walk.steps] == ["interpolation", "matching rule"]
    assert all(s.change != 0 for s in walk.steps)
    assert sum(s.change for s in walk.steps) == pytest.approx(walk.total, abs=1e-12)
    assert walk.end == pytest.approx(np.nanmean(evaluate(gt, dt, "ultralytics").ap[:, :, 0, -1]), abs=1e-12)


def test_cli_compare_explain_names_both_steps(tmp_path, capsys):
    gt, dt = _crowded(3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    argv = ["compare", "--gt", tmp_path / "gt.json", "--dt", tmp_path / "dt.json"]
    argv += ["--protocol", "ultralytics-8.3", "--protocol", "ultralytics", "--explain"]
    code = main([str(a) for a in argv])
    out = capsys.readouterr().out
    assert code == 0
    for word in ("interpolation", "matching rule", "curve_end", "gt_ties"):
        assert word in out


@pytest.mark.parametrize("seed", range(60))
def test_gt_ties_first_is_last_on_reversed_ground_truth(seed):
    """gt_ties="first" equals the default rule on each group's ground truths in reverse order.

    The first runs the numpy code, the second the compiled kernel when built: both take the
    lexicographic maximum of (non-ignored, IoU, position), the first with the position negated.
    """
    from deteval.matching import match_coco
    from tests.support.matching import THRESHOLDS, pairs_of, random_problem

    _, det_key, gt_key, gt_ignored, reusable, unmatchable, det_out = problem = random_problem(seed)
    pair_det, pair_gt, pair_iou = pairs_of(problem[0], det_key, gt_key)
    # Reverse the GT rows within each group (gt_key is sorted): new row of each old row.
    new_row = np.arange(len(gt_key))
    for key in np.unique(gt_key):
        rows = np.flatnonzero(gt_key == key)
        new_row[rows] = rows[::-1]
    old_row = np.argsort(new_row)

    def run(pair_gt_rows, ignored, reuse, unmatch, gt_ties):
        return match_coco(
            pair_det,
            pair_gt_rows,
            pair_iou,
            det_key=det_key,
            n_gt=len(gt_key),
            iou_thresholds=THRESHOLDS,
            gt_is_ignored=ignored,
            gt_is_reusable=reuse,
            gt_is_unmatchable=unmatch,
            det_is_out_of_range=det_out,
            gt_ties=gt_ties,
        )

    first = run(pair_gt, gt_ignored, reusable, unmatchable, "first")
    last = run(new_row[pair_gt], gt_ignored[:, old_row], reusable[old_row], unmatchable[old_row], "last")
    assert np.array_equal(first.det_is_tp, last.det_is_tp)
    assert np.array_equal(first.det_is_ignored, last.det_is_ignored)
    assert np.array_equal(first.match_lane, last.match_lane)
    assert np.array_equal(first.match_det, last.match_det)
    assert np.array_equal(first.match_gt, old_row[last.match_gt])


def test_gt_ties_refuses_an_unknown_rule():
    from deteval.matching import match_coco

    with pytest.raises(ConfigError, match="gt_ties: expected one of"):
        match_coco(
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0),
            det_key=np.zeros(0, np.int64),
            n_gt=0,
            iou_thresholds=np.array([0.5]),
            gt_is_ignored=np.zeros((1, 0), bool),
            gt_is_reusable=np.zeros(0, bool),
            gt_is_unmatchable=np.zeros(0, bool),
            det_is_out_of_range=np.zeros((1, 0), bool),
            gt_ties="middle",
        )


def test_sharded_matching_gives_the_same_numbers():
    gt, dt = _crowded(5)
    one = evaluate(gt, dt, "ultralytics")
    two = evaluate(gt, dt, "ultralytics", workers=2)
    np.testing.assert_array_equal(one.ap, two.ap)
    assert one.metrics == two.metrics
