"""Preset ``ultralytics-obb`` against the installed Ultralytics' own OBB scoring code.

Ultralytics' functions do the scoring, called directly on arrays: ``batch_probiou`` (labels,
predictions) per image, ``BaseValidator.match_predictions`` (the OBB validator's matching, as its
``_process_batch`` calls it), then ``DetMetrics.update_stats`` / ``process`` (``ap_per_class``).
deteval scores the same ``xywhr`` arrays through :class:`deteval.evaluator.Evaluator`. Compared:
per-class AP at all ten thresholds (the full ``all_ap`` array), mAP50 and mAP50-95.

Both sides get the boxes as ``xywhr``: Ultralytics' labels are corners turned into ``xywhr`` by
``cv2.minAreaRect`` in float32, which deteval does in float64 (``xywhr_from_corners``);
:func:`test_min_area_rectangle_equals_ultralytics_to_float32` checks that step on its own.
Scores are distinct multiples of 1/4096 (exact in the float32 Ultralytics stores them in).
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval.evaluator import Evaluator
from deteval.geometry.rotated import (
    corners_from_xywhr,
    pair_probiou,
    polygon_area,
    xywhr_from_corners,
)
from tests.crosscheck.generate_rotated import CLASSES, generate_rotated

torch = pytest.importorskip("torch")
pytest.importorskip("ultralytics")
from ultralytics.models.yolo.obb.val import OBBValidator  # noqa: E402
from ultralytics.utils import ops  # noqa: E402
from ultralytics.utils.metrics import DetMetrics, batch_probiou  # noqa: E402


def _validator() -> OBBValidator:
    validator = OBBValidator.__new__(OBBValidator)
    validator.iouv = torch.linspace(0.5, 0.95, 10)
    validator.niou = validator.iouv.numel()
    return validator


def _images(seed: int):
    data = generate_rotated(seed, n_images=10)
    out = []
    total = sum(len(data.dt_class[n]) for n in data.image_names)
    scores = (np.random.default_rng(seed).permutation(total) + 1) / 4096.0
    start = 0
    for name in data.image_names:
        g = data.gt_xywhr[name].copy()
        d = data.dt_xywhr[name].copy()
        # zero-area boxes kept: ProbIoU stays finite through its eps (about 0 with anything)
        s = scores[start : start + len(d)]
        start += len(d)
        by_score = np.argsort(-s)  # the validator's predictions are NMS output: by confidence
        out.append((g, data.gt_class[name], d[by_score], s[by_score], data.dt_class[name][by_score]))
    return out


def _ultralytics(images) -> DetMetrics:
    validator = _validator()
    metrics = DetMetrics(names=dict(enumerate(CLASSES)))
    for i, (g, gc, d, s, dc) in enumerate(images):
        pred_cls = torch.from_numpy(dc.astype(np.float32))
        true_cls = torch.from_numpy(gc.astype(np.float32))
        if len(gc) and len(dc):
            iou = batch_probiou(torch.from_numpy(g), torch.from_numpy(d))
            tp = validator.match_predictions(pred_cls, true_cls, iou).cpu().numpy()
        else:
            tp = np.zeros((len(dc), validator.niou), dtype=bool)
        metrics.update_stats(
            {
                "tp": tp,
                "target_cls": gc.astype(np.float32),
                "target_img": np.unique(gc.astype(np.float32)),
                "conf": s.astype(np.float32),
                "pred_cls": dc.astype(np.float32),
                "im_name": f"{i}.jpg",
            }
        )
    metrics.process()
    return metrics


def _deteval(images):
    ev = Evaluator("ultralytics-obb", box_format="xywhr", class_ids=list(range(len(CLASSES))))
    ev.update(
        [{"boxes": d, "scores": s, "labels": dc} for _, _, d, s, dc in images],
        [{"boxes": g, "labels": gc} for g, gc, *_ in images],
    )
    return ev.compute()


@pytest.mark.parametrize("seed", range(16))
def test_ultralytics_obb_preset_equals_installed_ultralytics(seed):
    images = _images(seed)
    theirs = _ultralytics(images)
    ours = _deteval(images)
    labelled = [int(c) for c in theirs.box.ap_class_index]
    ours_ap = ours.ap[:, :, 0, -1].T  # (class, threshold)
    np.testing.assert_allclose(ours_ap[labelled], theirs.box.all_ap, rtol=0, atol=1e-12)
    assert ours.metrics["mAP50"] == pytest.approx(theirs.box.map50, abs=1e-12, rel=0)
    assert ours.metrics["mAP50-95"] == pytest.approx(theirs.box.map, abs=1e-12, rel=0)


def test_probiou_equals_batch_probiou_on_hard_cases():
    rng = np.random.default_rng(7)
    g = np.column_stack(
        [rng.uniform(0, 100, (400, 2)), rng.uniform(0.3, 50, (400, 2)), rng.uniform(-4, 4, 400)]
    )
    d = g.copy()
    d[:100, 4] += 1e-7  # near-parallel
    d[100:200] = np.column_stack([g[100:200, :2], g[100:200, 3], g[100:200, 2], g[100:200, 4] + np.pi / 2])
    d[200:] += rng.normal(0, 2, (200, 5))
    d[200:, 2:4] = np.abs(d[200:, 2:4]) + 0.1
    theirs = batch_probiou(torch.from_numpy(g), torch.from_numpy(d)).numpy()
    rows = np.arange(400)
    ours = pair_probiou(d, g, det_rows=np.repeat(rows, 400), gt_rows=np.tile(rows, 400)).reshape(400, 400).T
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


def test_min_area_rectangle_equals_ultralytics_to_float32():
    rng = np.random.default_rng(3)
    n = 500
    x = np.column_stack(
        [
            rng.uniform(0, 1000, (n, 2)),
            rng.uniform(1, 300, (n, 2)),
            np.where(
                rng.random(n) < 0.3, rng.choice([0, np.pi / 2, np.pi, -np.pi / 2], n), rng.uniform(-4, 4, n)
            ),
        ]
    )
    corners = corners_from_xywhr(x)
    theirs = ops.xyxyxyxy2xywhr(corners)
    ours = xywhr_from_corners(corners)
    # the same rectangle: same centre, sides and area; ProbIoU between the two is ~1
    np.testing.assert_allclose(ours[:, :2], theirs[:, :2], rtol=0, atol=1e-3)
    np.testing.assert_allclose(np.sort(ours[:, 2:4], 1), np.sort(theirs[:, 2:4], 1), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(polygon_area(corners_from_xywhr(ours)), polygon_area(corners), rtol=1e-9)
    same = pair_probiou(ours, theirs, det_rows=np.arange(n), gt_rows=np.arange(n))
    assert (same > 1 - 1e-3).all()
