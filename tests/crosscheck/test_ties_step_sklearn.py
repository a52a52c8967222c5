"""``ap_method: step`` + ``score_ties: threshold`` against scikit-learn; the tie rule against ranking.

Generated COCO datasets with heavy ties (scores rounded to one decimal).

A detection protocol with one IoU threshold, one area range and no ``max_dets`` cap turns each
class into a ranked list: the non-ignored detections, relevant when they matched. Its ground
truths that no detection found must still count in recall, while scikit-learn divides by the
positives of ``y_true``. Two exact ways to make them count, both checked to 1e-12:

* scale: AP over the detections alone, times ``n_found / n_ground_truth`` (every recall is
  ``tp / n_found`` there and ``tp / n_ground_truth`` here; precision is the same);
* append: the missed ground truths as positives scored below every detection (scikit-learn
  refuses -inf), then take off the one threshold they add, ``(1 - R_last) * P_final``.

Under ``all_point``, ``11_point`` and ``101_point`` the same lists go through deteval.ranking's own
interpolation kernel with the ground-truth count as its number of positives.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import deteval
from deteval.io import load_detections, load_ground_truth
from deteval.ranking import average_precision
from deteval.ranking._common import _interpolated_ap, _rank_rows, _Ranked
from tests.crosscheck.generate import generate

average_precision_score = pytest.importorskip("sklearn.metrics").average_precision_score


SEEDS = list(range(40)) + [1000, 1001, 1002]


@dataclasses.dataclass(frozen=True)
class _WithMissed(_Ranked):
    """deteval.ranking's ranked rows with the ground-truth count as the number of positives."""

    n_ground_truth: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(1))

    @property
    def n_pos(self) -> np.ndarray:
        return self.n_ground_truth


def _tied_dataset(seed):
    kwargs = {"max_images": 60, "max_classes": 8} if seed >= 1000 else {}
    gt_dict, dt_list = generate(seed, **kwargs)
    for record in dt_list:
        record["score"] = round(record["score"], 1)
    gt = load_ground_truth(gt_dict)
    return gt, load_detections(dt_list, gt)


def _protocol(ap_method):
    return deteval.get_protocol("coco").replace(
        name=f"one-threshold-{ap_method}",
        iou_thresholds=[0.5],
        area_ranges={"all": [0, 1e10]},
        max_dets=None,
        summary="configured",
        ap_method=ap_method,
        score_ties="threshold",
    )


def _class_lists(result):
    """(class index, y_true, y_score, n_ground_truth) of every class, in detection row order."""
    table = result.table
    kept = ~table.det_is_ignored[0]
    for k in range(table.n_positive.shape[0]):
        rows = (table.det_class == k) & kept
        yield k, table.det_is_tp[0, rows].astype(int), table.det_score[rows], int(table.n_positive[k, 0])


@pytest.mark.parametrize("seed", SEEDS)
def test_step_with_tied_thresholds_is_sklearn(seed):
    gt, dt = _tied_dataset(seed)
    result = deteval.evaluate(gt, dt, _protocol("step"))
    for k, y_true, y_score, n_gt in _class_lists(result):
        ap = result.ap[0, k, 0, 0]
        n_found = int(y_true.sum())
        if n_gt == 0:
            assert np.isnan(ap)
            continue
        if n_found == 0:
            assert ap == 0.0
            continue
        scaled = average_precision_score(y_true, y_score) * n_found / n_gt
        assert abs(ap - scaled) <= 1e-12, (seed, k, ap, scaled)
        n_missed = n_gt - n_found
        if n_missed:
            low = np.full(n_missed, y_score.min() - 1.0)
            full = average_precision_score(
                np.concatenate([y_true, np.ones(n_missed, int)]), np.concatenate([y_score, low])
            )
            last_step = (1.0 - n_found / n_gt) * (n_gt / (len(y_true) + n_missed))
            assert abs(ap - (full - last_step)) <= 1e-12, (seed, k, ap, full - last_step)


def test_the_ties_of_these_datasets_move_the_numbers():
    """The cross-checks above are not vacuous: the tie rule changes many classes' AP here."""
    moved = 0
    for seed in SEEDS[:10]:
        gt, dt = _tied_dataset(seed)
        tied = deteval.evaluate(gt, dt, _protocol("step"))
        ranked = deteval.evaluate(gt, dt, _protocol("step").replace(score_ties="ranked"))
        moved += int(np.sum(np.abs(np.nan_to_num(tied.ap - ranked.ap)) > 1e-9))
    assert moved >= 5


@pytest.mark.parametrize("method", ["all_point", "11_point", "101_point"])
@pytest.mark.parametrize("seed", SEEDS[::2])
def test_tie_rule_is_deteval_ranking_on_the_same_list(seed, method):
    gt, dt = _tied_dataset(seed)
    protocol = _protocol(method)
    result = deteval.evaluate(gt, dt, protocol)
    for k, y_true, y_score, n_gt in _class_lists(result):
        ap = result.ap[0, k, 0, 0]
        if n_gt == 0:
            assert np.isnan(ap)
            continue
        if len(y_true) == 0:
            assert ap == 0.0
            continue
        ranked = _rank_rows(y_true[None, :].astype(float), y_score[None, :], None)
        with_missed = _WithMissed(*dataclasses.astuple(ranked), n_ground_truth=np.array([float(n_gt)]))
        expected = _interpolated_ap(with_missed, method, protocol.eleven_point_grid)[0]
        assert abs(ap - expected) <= 1e-12, (seed, k, method, ap, expected)
        if y_true.sum() == n_gt:  # every ground truth found: the public function, as it is
            public = average_precision(y_true, y_score, method=method, grid=protocol.eleven_point_grid)
            assert abs(ap - public) <= 1e-12, (seed, k, method, ap, public)
