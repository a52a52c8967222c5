"""NaN means one thing: the constructors refuse non-finite coordinates and scores.

A detection ``[NaN, 0, 10, 10]`` built directly as :class:`deteval.Detections` used to score
IoU 1.0 and AP 1.0 with the compiled box IoU and 0.0 without it. The constructors of
:class:`~deteval.Detections` and :class:`~deteval.GroundTruth` now refuse NaN and infinite
coordinates and scores with an :class:`~deteval.InputError` that names the column, the count and
the first rows, as the file loaders refuse them (docs/inputs.md, "Non-finite values"); the kernels
and their twins agree on such values when called directly (tests/property/
test_kernel_special_values.py).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import deteval
from deteval import Detections, GroundTruth, InputError

GT_BOX = np.array([[0.0, 0.0, 10.0, 10.0]])


def ground_truth(box: np.ndarray = GT_BOX) -> GroundTruth:
    n = len(box)
    return GroundTruth(
        image_id=np.array([1]),
        image_name=("a.jpg",),
        image_width=np.array([100.0]),
        image_height=np.array([100.0]),
        category_id=np.array([1]),
        category_name=("thing",),
        annotation_id=np.arange(1, n + 1),
        image=np.zeros(n, np.int64),
        category=np.zeros(n, np.int64),
        box=box,
        area=np.full(n, 100.0),
        is_crowd=np.zeros(n, bool),
        is_difficult=np.zeros(n, bool),
        is_ignore=np.zeros(n, bool),
        source="gt.json",
    )


def detections(box: np.ndarray, score: np.ndarray | None = None) -> Detections:
    n = len(box)
    return Detections(
        image=np.zeros(n, np.int64),
        category=np.zeros(n, np.int64),
        box=box,
        score=np.full(n, 0.9) if score is None else score,
        order=np.arange(n),
        has_box=np.ones(n, bool),
        source="dets.json",
    )


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("column", range(4))
def test_detections_refuse_a_non_finite_coordinate(value, column):
    box = np.tile(GT_BOX, (3, 1))
    box[1, column] = value
    with pytest.raises(InputError) as raised:
        detections(box)
    message = str(raised.value)
    assert message.startswith("dets.json: row 1: Detections.box is not finite (NaN or an infinity)")
    assert "expected 4 finite coordinates" in message
    assert re.search(r"found \[.*(nan|inf).*\]$", message), message


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_detections_refuse_a_non_finite_score(value):
    with pytest.raises(
        InputError, match=r"^dets\.json: row 0: Detections\.score is not finite .*expected a finite score"
    ):
        detections(GT_BOX, np.array([value]))


def test_many_rows_give_the_count_and_the_first_five():
    box = np.tile(GT_BOX, (9, 1))
    box[[1, 2, 4, 5, 7, 8], 0] = np.nan
    with pytest.raises(InputError) as raised:
        detections(box)
    message = str(raised.value)
    assert message.startswith("dets.json: 6 rows: Detections.box is not finite")
    assert "found row 1: [nan, 0.0, 10.0, 10.0]; row 2: " in message
    assert "row 7: [nan" in message
    assert "row 8" not in message
    assert message.endswith("and 1 more")


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_ground_truth_refuses_a_non_finite_coordinate(value):
    box = np.array([[0.0, 0.0, 10.0, 10.0], [1.0, 2.0, 3.0, value]])
    with pytest.raises(InputError, match=r"^gt\.json: row 1: GroundTruth\.box is not finite"):
        ground_truth(box)


def test_replace_and_take_check_again():
    dt = detections(np.tile(GT_BOX, (2, 1)))
    with pytest.raises(InputError, match="Detections.box"):
        dataclasses.replace(dt, box=np.array([[np.nan, 0.0, 10.0, 10.0]] * 2))
    assert len(dt.take(np.array([1]))) == 1


def test_finite_extremes_signed_zeros_and_subnormals_are_accepted():
    box = np.array([[-0.0, 5e-324, 1e-310, 10.0], [1e308, 1e308, 1e308, 1e308], [-1e308, 0.0, 2.0, 2.0]])
    dt = detections(box, np.array([-0.0, 5e-324, -1e308]))
    assert np.array_equal(dt.box, box)
    assert len(dt) == 3
    assert len(ground_truth(box)) == 3


def test_the_nan_box_that_scored_ap_one_is_refused_before_scoring():
    """The issue's case: [NaN, 0, 10, 10] against a [0, 0, 10, 10] ground truth, under coco."""
    with pytest.raises(InputError, match="Detections.box"):
        detections(np.array([[np.nan, 0.0, 10.0, 10.0]]))
    finite = deteval.evaluate(ground_truth(), detections(np.array([[0.0, 0.0, 10.0, 10.0]])), "coco")
    assert finite.metrics["AP"] == pytest.approx(1.0)
