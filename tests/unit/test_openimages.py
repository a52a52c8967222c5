"""Open Images group-of rule: mmdetection's known answers, and the loader's `is_group_of`."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.api import evaluate
from deteval.errors import InputError
from deteval.evaluate import match
from deteval.io.coco import load_coco_dt, load_coco_gt
from deteval.protocol import get_protocol
from tests.reference.slow_openimages import tpfp_openimages

#: mmdetection tests/test_evaluation/test_mean_ap.py (test_tpfp_openimages): x1, y1, x2, y2, score.
DETS = [
    [10, 10, 15, 15, 1.0],
    [15, 15, 30, 30, 0.98],
    [10, 10, 25, 25, 0.98],
    [28, 28, 35, 35, 0.97],
    [30, 30, 51, 51, 0.96],
    [100, 110, 120, 130, 0.15],
]
GTS = [[10, 10, 30, 30], [30, 30, 50, 50]]


def _xywh(b):
    return [b[0], b[1], b[2] - b[0], b[3] - b[1]]


def _data(is_group_of, key="is_group_of"):
    anns = [
        {
            "id": i + 1,
            "image_id": 1,
            "category_id": 1,
            "bbox": _xywh(b),
            "area": 1.0,
            "iscrowd": 0,
            key: int(g),
        }
        for i, (b, g) in enumerate(zip(GTS, is_group_of))
    ]
    gt = load_coco_gt(
        {"images": [{"id": 1}], "categories": [{"id": 1, "name": "thing"}], "annotations": anns}
    )
    dt = load_coco_dt([{"image_id": 1, "category_id": 1, "bbox": _xywh(d), "score": d[4]} for d in DETS], gt)
    return gt, dt


def _kept(is_group_of, key="is_group_of"):
    gt, dt = _data(is_group_of, key)
    table = match(gt, dt, get_protocol("openimages"))
    kept = ~table.det_is_ignored[0]
    return sorted(zip(table.det_score[kept].tolist(), table.det_is_tp[0][kept].tolist()), reverse=True)


@pytest.mark.parametrize("key", ["is_group_of", "IsGroupOf"])
def test_one_group_of_box_keeps_four_detections(key):
    # mmdet: tp [0, 1, 0, 1], fp [1, 0, 1, 0]: the three detections inside the group-of box are one
    # TP (score 1.0); [30, 30, 51, 51] matches the other box; two false positives.
    assert _kept([True, False], key) == [(1.0, True), (0.97, False), (0.96, True), (0.15, False)]


def test_without_group_of_six_detections_are_kept():
    assert len(_kept([False, False])) == 6


def test_all_group_of_keeps_three():
    assert _kept([True, True]) == [(1.0, True), (0.97, True), (0.15, False)]


@pytest.mark.parametrize(
    ("group", "tp", "fp", "n"),
    [
        ([True, False], [0, 1, 0, 1], [1, 0, 1, 0], 4),
        ([False, False], None, None, 6),
        ([True, True], [0, 1, 1], [1, 0, 0], 3),
    ],
)
def test_the_twin_gives_mmdetections_known_answers(group, tp, fp, n):
    out_tp, out_fp, kept = tpfp_openimages(
        np.array(DETS, float), np.array(GTS, float), np.array(group), 0.5, 0.5
    )
    assert kept.shape[0] == n == out_tp.shape[1]
    if tp is not None:
        assert out_tp[0].tolist() == tp
        assert out_fp[0].tolist() == fp


def test_group_of_is_ignored_by_other_protocols():
    gt, dt = _data([True, False])
    voc = get_protocol("voc2010-continuous")
    assert evaluate(gt, dt, voc).metrics == evaluate(*_data([False, False]), voc).metrics


def test_openimages_map_on_the_known_case():
    # Ranked: 1.0 TP, 0.97 FP, 0.96 TP, 0.15 FP with 2 positives: all-point AP = 0.5 * 1 + 0.5 * 2/3.
    gt, dt = _data([True, False])
    assert evaluate(gt, dt, "openimages").metrics["mAP"] == pytest.approx(0.5 + 0.5 * 2 / 3, abs=1e-15)


def test_conflicting_spellings_are_refused():
    anns = [
        {
            "id": 1,
            "image_id": 1,
            "category_id": 1,
            "bbox": [0, 0, 1, 1],
            "area": 1,
            "iscrowd": 0,
            "is_group_of": 1,
            "IsGroupOf": 0,
        }
    ]
    with pytest.raises(
        InputError,
        match=r"annotation #0 \(id=1, image_id=1\): `is_group_of` and `IsGroupOf` "
        r"disagree; expected one of them, or equal values, found \[1, 0\]",
    ):
        load_coco_gt({"images": [{"id": 1}], "categories": [{"id": 1}], "annotations": anns})


def test_a_group_of_flag_that_is_not_0_or_1_is_refused():
    anns = [
        {
            "id": 1,
            "image_id": 1,
            "category_id": 1,
            "bbox": [0, 0, 1, 1],
            "area": 1,
            "iscrowd": 0,
            "is_group_of": 2,
        }
    ]
    with pytest.raises(InputError, match=r"`is_group_of` is not 0 or 1; expected 0 or 1, found 2"):
        load_coco_gt({"images": [{"id": 1}], "categories": [{"id": 1}], "annotations": anns})
