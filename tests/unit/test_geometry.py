"""Box IoU: hand-derived values, both conventions, crowd rule, bit-equality with pycocotools."""

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from deteval.geometry import box_iou, pair_box_iou


def test_continuous_hand_values():
    det = np.array([[0.0, 0.0, 10.0, 10.0]])
    gt = np.array([[0.0, 0.0, 10.0, 6.0], [5.0, 0.0, 10.0, 10.0], [20.0, 20.0, 5.0, 5.0]])
    assert box_iou(det, gt).tolist() == [[0.6, 50 / 150, 0.0]]


def test_pixel_inclusive_adds_one_to_widths():
    # VOC corners [1, 1, 10, 10] cover 10 x 10 pixels; [1, 1, 10, 5] covers 10 x 5.
    det = np.array([[1.0, 1.0, 10.0, 10.0]])
    gt = np.array([[1.0, 1.0, 10.0, 5.0]])
    iou = box_iou(det, gt, box_format="xyxy", convention="pixel_inclusive")
    assert iou.tolist() == [[0.5]]


def test_known_answers_section_2():
    d2 = np.array([[15.0, 0.0, 100.0, 100.0]])
    gts = np.array([[0.0, 0.0, 100.0, 100.0], [40.0, 0.0, 100.0, 100.0]])
    iou = box_iou(d2, gts)[0]
    assert iou[0] == 8500 / 11500
    assert round(iou[0], 3) == 0.739
    assert iou[1] == 0.6


def test_crowd_is_intersection_over_detection_area():
    det = np.array([[10.0, 10.0, 10.0, 10.0]])
    crowd = np.array([[0.0, 0.0, 100.0, 100.0]])
    assert box_iou(det, crowd, np.array([True])).tolist() == [[1.0]]
    assert box_iou(det, crowd, np.array([False])).tolist() == [[0.01]]


def test_degenerate_boxes_overlap_nothing():
    det = np.array([[0.0, 0.0, 0.0, 10.0], [0.0, 0.0, 10.0, 10.0]])
    gt = np.array([[0.0, 0.0, 10.0, 10.0], [5.0, 5.0, 0.0, 0.0]])
    assert box_iou(det, gt).tolist() == [[0.0, 0.0], [1.0, 0.0]]


@pytest.mark.parametrize("seed", range(5))
def test_bit_equal_to_pycocotools(seed):
    rng = np.random.default_rng(seed)
    det = np.round(rng.uniform(0, 60, (80, 4)), rng.integers(0, 4))
    gt = np.round(rng.uniform(0, 60, (40, 4)), rng.integers(0, 4))
    crowd = rng.random(40) < 0.3
    ours = box_iou(det, gt, crowd)
    theirs = np.asarray(mask_utils.iou(det.tolist(), gt.tolist(), crowd.astype(int).tolist()))
    assert np.array_equal(ours, theirs)


def test_pair_and_matrix_agree():
    rng = np.random.default_rng(3)
    det, gt = rng.uniform(0, 50, (7, 4)), rng.uniform(0, 50, (5, 4))
    matrix = box_iou(det, gt)
    d, g = np.meshgrid(np.arange(7), np.arange(5), indexing="ij")
    pairs = pair_box_iou(det[d.ravel()], gt[g.ravel()], np.zeros(35, bool))
    assert np.array_equal(pairs.reshape(7, 5), matrix)


def test_unknown_convention_is_refused():
    with pytest.raises(ValueError, match="convention must be one of"):
        pair_box_iou(np.zeros((1, 4)), np.zeros((1, 4)), np.zeros(1, bool), convention="half")


@pytest.mark.parametrize("convention", ["continuous", "pixel_inclusive"])
def test_pair_box_iou_in_chunks_and_by_rows_equals_one_call(convention):
    """More pairs than one chunk, given as boxes or as rows into boxes: the same values bit for bit."""
    rng = np.random.default_rng(3)
    det = np.c_[rng.random((500, 2)) * 50, rng.random((500, 2)) * 30 + 1]
    gt = np.c_[rng.random((400, 2)) * 50, rng.random((400, 2)) * 30 + 1]
    n = (1 << 16) * 2 + 123
    det_rows, gt_rows = rng.integers(0, 500, n), rng.integers(0, 400, n)
    crowd = rng.random(n) < 0.1
    gathered = pair_box_iou(det[det_rows], gt[gt_rows], crowd, convention=convention)
    by_rows = pair_box_iou(det, gt, crowd, convention=convention, det_rows=det_rows, gt_rows=gt_rows)
    one_call = np.concatenate(
        [
            pair_box_iou(
                det[det_rows[i : i + 1000]],
                gt[gt_rows[i : i + 1000]],
                crowd[i : i + 1000],
                convention=convention,
            )
            for i in range(0, n, 1000)
        ]
    )
    assert (
        gathered.view(np.int64).tolist()
        == by_rows.view(np.int64).tolist()
        == one_call.view(np.int64).tolist()
    )
    with pytest.raises(ValueError, match="together"):
        pair_box_iou(det, gt, crowd, det_rows=det_rows)
