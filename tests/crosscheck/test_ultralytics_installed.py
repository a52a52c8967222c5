"""``--protocol ultralytics`` against the installed Ultralytics package (8.4.176 and later).

Ultralytics' own code does the scoring: per image, its matching (``BaseValidator.match_predictions``,
or ``DetectionValidator._process_batch``, which computes the IoU with its ``box_iou`` first) gives
the ``tp`` table; ``DetMetrics.update_stats`` / ``process`` (``ap_per_class``) turn the tables of
all images into per-class AP at ten thresholds, ``map50`` and ``map``. deteval scores the same
labels and predictions as COCO dicts.

Where both compute in float64, the values are equal to 1e-9 (they are in fact equal): the
IoU is given to ``match_predictions`` in float64 (boxes on a 1/8-pixel grid, so that the
intersection and union are exact in both), and ``ap_per_class`` is float64 throughout. Ultralytics'
validator computes the IoU in float32 (``box_iou`` calls ``.float()``, with ``+ 1e-7`` in the union)
against float32 thresholds (``torch.linspace``), and its scores are float32; that path is compared
on datasets with no pair within 1e-5 of a threshold, where it gives the same values.

Ties in scores: ``ap_per_class`` ranks by ``np.argsort(-conf)``, which orders ties in an unspecified
way (numpy's introsort). deteval ranks ties in file order, so the predictions are written in the
order that argsort gives (the same call on the same array); scores are tied across images and
across classes, distinct within one image and class (where Ultralytics matches in NMS order but
ranks in argsort order, which no single file order can follow: docs/protocols.md).
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval.analysis import OUTCOME_WORDS, match_columns
from deteval.api import evaluate
from deteval.protocol import get_protocol

ultralytics = pytest.importorskip(
    "ultralytics", reason="the installed-ultralytics cross-check needs ultralytics"
)

from ultralytics.utils.metrics import DetMetrics  # noqa: E402

from tests.support.ultralytics import (  # noqa: E402
    N_CLASS,
    NO_GT_CLASS,
    NO_PRED_CLASS,
    _coco,
    _ranked,
    dataset,
    iou64,
    ultralytics_metrics,
)

if tuple(int(v) for v in ultralytics.__version__.split(".")[:3]) < (8, 4, 176):
    pytest.skip(
        f"ultralytics {ultralytics.__version__} predates 8.4.176, whose rules the preset follows",
        allow_module_level=True,
    )


def _check(images, metrics: DetMetrics, *, atol: float) -> None:
    gt, dt = _coco(images)
    result = evaluate(gt, dt, "ultralytics")
    theirs_classes = metrics.box.ap_class_index  # classes with labels, ascending
    labelled = sorted({int(c) for _, gc, *_ in images for c in gc})
    assert list(theirs_classes) == labelled
    assert NO_PRED_CLASS in labelled
    assert NO_GT_CLASS not in labelled
    ours_ap = result.ap[:, :, 0, -1].T  # (class, threshold)
    assert np.isnan(ours_ap[NO_GT_CLASS]).all()  # no labels: no AP (Ultralytics leaves it out)
    # Per-class AP at every IoU threshold.
    np.testing.assert_allclose(ours_ap[labelled], metrics.box.all_ap, rtol=0, atol=atol)
    assert (ours_ap[NO_PRED_CLASS] == 0).all()
    # Final recall per class and threshold: the TPs Ultralytics' matching found over its labels.
    stats = {k: np.concatenate(v, 0) for k, v in metrics.stats.items()}
    n_label = np.bincount(stats["target_cls"].astype(int), minlength=N_CLASS)
    n_tp = np.stack([stats["tp"][stats["pred_cls"] == c].sum(0) for c in range(N_CLASS)])
    their_recall = n_tp[labelled] / (n_label[labelled][:, None] + 1e-16)
    np.testing.assert_allclose(result.recall[:, labelled, 0, -1].T, their_recall, rtol=0, atol=atol)
    # Every prediction's outcome at every threshold: deteval's matching is Ultralytics' tp table.
    their_tp = stats["tp"][_ranked(images)]  # in the order the predictions were written
    for t, threshold in enumerate(get_protocol("ultralytics").iou_thresholds):
        columns = match_columns(result, iou_threshold=threshold)
        ours_tp = np.zeros(len(their_tp), dtype=bool)
        ours_tp[columns.detection] = columns.outcome == OUTCOME_WORDS.index("tp")
        assert len(columns.detection) == len(their_tp)
        np.testing.assert_array_equal(ours_tp, their_tp[:, t])
    assert result.metrics["mAP50"] == pytest.approx(metrics.box.map50, abs=atol, rel=0)
    assert result.metrics["mAP50-95"] == pytest.approx(metrics.box.map, abs=atol, rel=0)


@pytest.mark.parametrize("seed", range(4))
def test_small_datasets_equal_installed_ultralytics(seed):
    images = dataset(seed, 60)
    _check(images, ultralytics_metrics(images, float32_iou=False), atol=1e-9)


@pytest.mark.parametrize("seed", [11, 12, 13])  # 400 images: about 3 s each
def test_several_hundred_images_equal_installed_ultralytics(seed):
    images = dataset(seed, 400)
    _check(images, ultralytics_metrics(images, float32_iou=False), atol=1e-9)


def _near_threshold(images, margin: float) -> int:
    """Same-class pairs whose float64 IoU lies within ``margin`` of one of the ten thresholds."""
    thresholds = np.array(get_protocol("ultralytics").iou_thresholds)
    n = 0
    for gt, gc, pb, _, pc in images:
        if len(gc) and len(pc):
            iou = iou64(gt, pb)[gc[:, None] == pc[None, :]]
            n += int((np.abs(iou[:, None] - thresholds[None, :]) < margin).sum())
    return n


@pytest.mark.parametrize("seed", [20, 24, 25])
def test_the_validators_float32_path_equals_where_no_pair_is_near_a_threshold(seed):
    """``_process_batch`` (float32 IoU, + 1e-7): equal where float32 cannot flip a comparison."""
    images = dataset(seed, 150, grid=1024.0)
    assert _near_threshold(images, 1e-5) == 0  # this seed's data is clear of the thresholds
    _check(images, ultralytics_metrics(images, float32_iou=True), atol=1e-9)


def test_the_8_3_preset_differs_from_the_installed_release():
    """The reason for two presets: the installed release does not give ultralytics-8.3's numbers."""
    images = dataset(3, 60)
    metrics = ultralytics_metrics(images, float32_iou=False)
    gt, dt = _coco(images)
    old = evaluate(gt, dt, "ultralytics-8.3").metrics
    assert abs(old["mAP50-95"] - metrics.box.map) > 1e-3


def test_a_tiny_pair_at_exactly_a_threshold_is_a_deliberate_difference():
    """Ultralytics' ``+ 1e-7`` in the union (float32) moves a tiny pair at IoU 0.5 below 0.5.

    A 1/4-pixel label and a prediction covering half of it: IoU exactly 0.5 in float64 (a match
    at 0.5 for deteval, as for pycocotools), 0.4999992 for Ultralytics' ``box_iou``.
    """
    images = [
        (
            np.array([[0, 0, 0.25, 0.25]]),
            np.array([0]),
            np.array([[0, 0, 0.25, 0.125]]),
            np.array([0.5]),
            np.array([0]),
        )
    ]
    theirs = ultralytics_metrics(images, float32_iou=True)
    float64 = ultralytics_metrics(images, float32_iou=False)
    gt, dt = _coco(images)
    ours = evaluate(gt, dt, "ultralytics").ap[0, 0, 0, -1]
    assert theirs.box.all_ap[0, 0] == 0.0
    assert float64.box.all_ap[0, 0] == ours == pytest.approx(0.995, abs=1e-12)
