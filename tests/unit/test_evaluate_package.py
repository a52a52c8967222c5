"""deteval.evaluate as a package: one merge with one order, the protocol checked inside match/score."""

from __future__ import annotations

import numpy as np
import pytest

import deteval
from deteval.evaluate import match, merge_match_tables, score
from deteval.protocol import get_protocol

FIELDS = (
    "det_score",
    "det_class",
    "det_image",
    "det_rank",
    "det_order",
    "match_lane",
    "match_det",
    "match_gt",
)


def _inputs() -> tuple[deteval.GroundTruth, deteval.Detections]:
    rng = np.random.default_rng(7)
    images = [{"id": i, "width": 100, "height": 100} for i in range(1, 7)]
    anns, results = [], []
    for i in range(1, 7):
        for _ in range(3):
            x, y = rng.uniform(0, 60, 2)
            w, h = rng.uniform(5, 40, 2)
            cat = int(rng.integers(1, 3))
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": i,
                    "category_id": cat,
                    "iscrowd": 0,
                    "area": w * h,
                    "bbox": [x, y, w, h],
                }
            )
            for _ in range(2):
                results.append(
                    {
                        "image_id": i,
                        "category_id": cat,
                        "score": float(rng.uniform()),
                        "bbox": [x + rng.normal(0, 3), y + rng.normal(0, 3), w, h],
                    }
                )
    categories = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    gt = deteval.load_ground_truth({"images": images, "categories": categories, "annotations": anns})
    return gt, deteval.load_detections(results, gt)


def test_merged_shards_are_the_table_of_one_run() -> None:
    """Tables of consecutive image shards merge into exactly one run's table, matches included."""
    gt, dt = _inputs()
    protocol = get_protocol("coco")
    whole = match(gt, dt, protocol)
    assert whole.n_lane > 1
    assert len(whole.match_lane) > 0
    shards = [np.isin(np.arange(gt.n_images), part) for part in ([0, 1], [2, 3, 4], [5])]
    merged = merge_match_tables([match(gt, dt, protocol, images=s) for s in shards])
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name), err_msg=name)
        assert getattr(merged, name).dtype == getattr(whole, name).dtype, name
    np.testing.assert_array_equal(merged.tp.bits, whole.tp.bits)
    np.testing.assert_array_equal(merged.n_positive, whole.n_positive)


def test_match_and_score_check_the_protocol_themselves() -> None:
    """match() refuses what matching reads, score() every combination: no caller must remember it."""
    gt, dt = _inputs()
    voc = get_protocol("voc2007")
    with pytest.raises(deteval.ConfigError, match="gt_ties 'first' is read by matching: coco"):
        match(gt, dt, voc.replace(gt_ties="first"))
    bad = get_protocol("coco").replace(max_dets=(100,))  # summary pycocotools reads three
    table = match(gt, dt, bad)  # the summary is not matching's: the table is made
    with pytest.raises(deteval.ConfigError, match="needs three max_dets"):
        score(table, gt, bad)


def test_warnings_are_counted_and_notes_informational() -> None:
    """A cap leaving detections out is a (counted) warning; a class without ground truth a note."""
    gt, dt = _inputs()
    protocol = get_protocol("coco").replace(max_dets=(1, 2, 3), summary="configured")
    result = score(match(gt, dt, protocol), gt, protocol, warnings=("from the input",))
    assert result.warnings[0] == "from the input"
    assert any("beyond max_dets=3" in w for w in result.warnings)
    assert not any("beyond max_dets" in n for n in result.notes)
