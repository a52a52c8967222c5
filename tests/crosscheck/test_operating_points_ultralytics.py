"""``best_f1["ultralytics"]`` against the installed Ultralytics package's ``ap_per_class``.

Ultralytics' validator reports ``P`` and ``R`` (``Metric.mp`` / ``Metric.mr``): the mean over the
classes with labels of each class's precision and recall at the confidence-grid point that
maximises the smoothed mean F1. The datasets and Ultralytics' own matching are those of
``test_ultralytics_installed.py`` (scores on a 1/256 grid, written in Ultralytics' argsort order,
so tied scores rank alike); the values are compared exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch", reason="the installed-ultralytics cross-check needs torch")
pytest.importorskip("ultralytics", reason="the installed-ultralytics cross-check needs ultralytics")

from deteval.api import evaluate  # noqa: E402
from tests.support.ultralytics import _coco, dataset, ultralytics_metrics  # noqa: E402


@pytest.mark.parametrize("seed", [0, 1, 2, 5, 11])
def test_precision_and_recall_at_max_mean_f1_equal_installed_ultralytics(seed):
    images = dataset(seed, 80)
    theirs = ultralytics_metrics(images, float32_iou=False).box
    gt, dt = _coco(images)
    point = evaluate(gt, dt, "ultralytics").best_f1["ultralytics"]
    assert point["precision"] == theirs.mp
    assert point["recall"] == theirs.mr
    assert point["f1"] == float(np.mean(theirs.f1))
    assert 0 < point["precision"] < 1
    assert 0 < point["recall"] < 1


def test_other_protocols_have_no_ultralytics_point():
    images = dataset(0, 20)
    gt, dt = _coco(images)
    assert "ultralytics" not in evaluate(gt, dt, "coco").best_f1
