"""Accumulation on its own: hand-derived ranked lists -> AP per ap_method, and a plain twin."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.accumulate import AP_METHODS, Accumulated, accumulate, recall_thresholds
from deteval.protocol import COCO_RECALL_THRESHOLDS, FIELD_CHOICES, get_protocol

VOC2007_NUMPY_GRID = get_protocol("voc2007-pyfrcnn")  # 11-point on np.arange(0, 1.1, 0.1)
VOC2007 = get_protocol("voc2007")  # 11-point on MATLAB's 0:0.1:1
VOC2010 = get_protocol("voc2010")  # all-point
COCO50 = get_protocol("coco50")  # 101-point, one threshold, one area, max_dets [100]


def run(outcomes: str, n_gt: int, protocol, *, scores=None, ignored: str | None = None) -> Accumulated:
    """One class, one lane: ``outcomes`` like "TTFF" in ranking order."""
    is_tp = np.array([[c == "T" for c in outcomes]], dtype=bool)
    is_ignored = np.array([[c == "I" for c in (ignored or "." * len(outcomes))]], dtype=bool)
    n = len(outcomes)
    score = np.linspace(1.0, 0.1, n) if scores is None else np.asarray(scores, dtype=float)
    return accumulate(
        is_tp,
        is_ignored,
        score,
        np.zeros(n, np.int64),
        np.arange(n),
        np.arange(n),
        np.array([[n_gt]]),
        protocol,
    )


# docs/known-answers.md section 1: 5 GT, outcomes TP TP FP FP FP TP TP FP FP TP
SECTION1 = "TTFFFTTFFT"


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        (VOC2007_NUMPY_GRID, 0.7532467532),
        (VOC2007, 0.7532467532),
        (VOC2010, 0.7285714286),
        (COCO50, 0.7312588402),
    ],
)
def test_section1_ap_per_method(protocol, expected):
    acc = run(SECTION1, 5, protocol)
    assert acc.ap[0, 0, 0, 0] == pytest.approx(expected, abs=1e-10)
    assert acc.recall[0, 0, 0, 0] == 1.0


def test_section1_all_point_by_hand():
    # Precision at each TP: 1/1, 2/2, 3/6, 4/7, 5/10; envelope 1, 1, 4/7, 4/7, 1/2 over recall steps of 0.2.
    expected = 0.2 * (1 + 1 + 4 / 7 + 4 / 7 + 0.5)
    assert run(SECTION1, 5, VOC2010).ap[0, 0, 0, 0] == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        (VOC2007_NUMPY_GRID, 0.5454545455),  # 6 points at precision 1, of 11
        (VOC2010, 0.5),
        (COCO50, 0.5049504950),  # 51 points of 101 at 1 / (1 + eps)
    ],
)
def test_section2_one_tp_of_two_gt(protocol, expected):
    acc = run("TF", 2, protocol)
    assert acc.ap[0, 0, 0, 0] == pytest.approx(expected, abs=1e-10)
    assert acc.recall[0, 0, 0, 0] == 0.5


def test_101_point_without_the_eps_term_is_within_1e_15():
    assert run("TF", 2, COCO50).ap[0, 0, 0, 0] == pytest.approx(51 / 101, abs=1e-15)


def test_101_point_precision_and_scores_arrays():
    acc = run("TF", 2, COCO50, scores=[0.9, 0.8])
    precision, scores = acc.precision[0, :, 0, 0, 0], acc.scores[0, :, 0, 0, 0]
    assert precision.shape == (101,)
    assert np.all(precision[:51] == 1 / (1 + np.spacing(1)))
    assert np.all(precision[51:] == 0)
    assert np.all(scores[:51] == 0.9)
    assert np.all(scores[51:] == 0)


def test_class_without_ground_truth_is_nan_everywhere():
    acc = run("FF", 0, COCO50)
    for array in (acc.precision, acc.scores, acc.recall, acc.ap):
        assert np.isnan(array).all()
    assert np.isnan(run("FF", 0, VOC2010).ap).all()


def test_no_detections_gives_zero_ap_and_recall():
    for protocol in (VOC2007, VOC2010, COCO50):
        acc = run("", 3, protocol)
        assert acc.ap[0, 0, 0, 0] == 0.0
        assert acc.recall[0, 0, 0, 0] == 0.0


def test_ignored_detections_count_as_neither_tp_nor_fp():
    # An ignored detection between the two TPs changes nothing: same as "TT".
    for protocol in (VOC2007, VOC2010, COCO50):
        with_ignored = run("TFT", 2, protocol, ignored=".I.")
        plain = run("TT", 2, protocol)
        assert with_ignored.ap[0, 0, 0, 0] == plain.ap[0, 0, 0, 0] == pytest.approx(1.0, abs=1e-15)


def test_max_dets_keeps_the_top_ranks_of_each_group():
    protocol = get_protocol("coco").replace(
        iou_thresholds=(0.5,), area_ranges=(("all", 0.0, 1e10),), max_dets=(1, 2), summary="configured"
    )
    is_tp = np.array([[True, False, True]])
    acc = accumulate(
        is_tp,
        np.zeros_like(is_tp),
        np.array([0.9, 0.8, 0.7]),
        np.zeros(3, np.int64),
        np.arange(3),
        np.arange(3),
        np.array([[2]]),
        protocol,
    )
    assert acc.recall[0, 0, 0].tolist() == [0.5, 0.5]  # the third detection is beyond both caps
    assert acc.precision.shape == (1, 101, 1, 1, 2)


def test_the_table_has_one_function_per_ap_method():
    assert set(AP_METHODS) == set(FIELD_CHOICES["ap_method"])


def test_recall_grids():
    assert recall_thresholds(COCO50) is COCO_RECALL_THRESHOLDS
    assert len(recall_thresholds(VOC2010)) == 0
    decimal = recall_thresholds(VOC2007.replace(eleven_point_grid="decimal"))
    assert decimal.tolist() == [k / 10 for k in range(11)]
    assert recall_thresholds(VOC2007_NUMPY_GRID).tolist() == np.arange(0.0, 1.1, 0.1).tolist()


# --------------------------------------------------------------------------------------------
# A plain twin: the devkit's loops, written out, on random ranked lists of several classes
# --------------------------------------------------------------------------------------------


def plain_voc_ap(outcomes: list, n_gt: int, *, eleven_point: bool) -> float:
    tp = np.cumsum([o == "T" for o in outcomes]).astype(float)
    fp = np.cumsum([o == "F" for o in outcomes]).astype(float)
    if not outcomes:
        return 0.0
    rec = tp / n_gt
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    if eleven_point:
        ap = 0.0
        for t in np.arange(0.0, 1.1, 0.1):
            p = np.max(prec[rec >= t]) if np.any(rec >= t) else 0.0
            ap = ap + p / 11.0
        return ap
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    for i in range(len(mpre) - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


@pytest.mark.parametrize("seed", range(20))
def test_voc_methods_equal_the_plain_twin(seed):
    rng = np.random.default_rng(seed)
    n_class = 3
    outcomes = [
        list(rng.choice(["T", "F", "I"], size=rng.integers(0, 12), p=[0.5, 0.4, 0.1])) for _ in range(n_class)
    ]
    n_gt = np.array([[sum(o == "T" for o in out) + int(rng.integers(0, 3))] for out in outcomes])
    flat = [o for out in outcomes for o in out]
    det_class = np.repeat(np.arange(n_class), [len(o) for o in outcomes])
    is_tp = np.array([[o == "T" for o in flat]], dtype=bool).reshape(1, -1)
    is_ignored = np.array([[o == "I" for o in flat]], dtype=bool).reshape(1, -1)
    n = len(flat)
    for protocol, eleven in ((VOC2007_NUMPY_GRID, True), (VOC2010, False)):
        acc = accumulate(
            is_tp, is_ignored, np.linspace(1, 0, n), det_class, np.arange(n), np.arange(n), n_gt, protocol
        )
        for k in range(n_class):
            if n_gt[k, 0] == 0:
                assert np.isnan(acc.ap[0, k, 0, 0])
                continue
            kept = [o for o in outcomes[k] if o != "I"]
            assert acc.ap[0, k, 0, 0] == pytest.approx(
                plain_voc_ap(kept, n_gt[k, 0], eleven_point=eleven), abs=1e-12
            ), (protocol.name, k)
