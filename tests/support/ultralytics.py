"""Shared test helpers (moved from tests/crosscheck/test_ultralytics_installed.py, which imports them from here)."""

from __future__ import annotations

import numpy as np
import pytest

# An optional extra: without it, importing this module (a test that uses it, or the doctest
# collection of tests/) is a skip, not a collection error.
pytest.importorskip("ultralytics", reason="the installed-ultralytics cross-checks need ultralytics")
torch = pytest.importorskip("torch", reason="the installed-ultralytics cross-check needs torch")

from ultralytics.models.yolo.detect.val import DetectionValidator  # noqa: E402
from ultralytics.utils.metrics import DetMetrics  # noqa: E402

NO_PRED_CLASS, NO_GT_CLASS = 5, 6

N_CLASS = 7  # class 5: labels, never predicted; class 6: predicted, never labelled


def _boxes(rng, n, lo, hi, grid):
    xy = np.round(rng.uniform(0, 600, (n, 2)) * grid) / grid
    wh = np.maximum(np.round(rng.uniform(lo, hi, (n, 2)) * grid) / grid, 1 / grid)
    return np.concatenate([xy, xy + wh], axis=1)


def _jitter(rng, box, grid, scale=0.12):
    size = box[2:] - box[:2]
    out = box + rng.uniform(-scale, scale, 4) * np.r_[size, size]
    out = np.round(out * grid) / grid
    out[2:] = np.maximum(out[2:], out[:2] + 1 / grid)
    return out


def dataset(seed: int, n_image: int, *, grid: float = 8.0):
    """Images of labels and NMS-ordered predictions (xyxy, class, score), with the nasty cases.

    Empty images, images with labels only or predictions only, crowded images (many overlapping
    labels of one class and duplicates), tiny boxes (1/8 px to 3 px), duplicated labels (equal
    IoUs), a class never predicted, a class never labelled; scores on a 1/256 grid (exact in
    float32), tied across images and classes, distinct within an image and class.
    """
    rng = np.random.default_rng(seed)
    images = []
    for _ in range(n_image):
        kind = rng.random()
        if kind < 0.06:  # empty image
            gt, gc = np.zeros((0, 4)), np.zeros(0, np.int64)
        elif kind < 0.14:  # crowded: many overlapping labels of one class
            n = int(rng.integers(25, 60))
            centre = rng.uniform(100, 400, 2)
            xy = np.round((centre + rng.normal(0, 25, (n, 2))) * grid) / grid
            wh = np.round(rng.uniform(20, 60, (n, 2)) * grid) / grid
            gt = np.concatenate([xy, xy + wh], axis=1)
            gc = np.full(n, int(rng.integers(0, 3)), np.int64)
        else:
            n = int(rng.integers(0, 9))
            tiny = rng.random() < 0.15
            gt = _boxes(rng, n, 0.125, 3, grid) if tiny else _boxes(rng, n, 6, 120, grid)
            gc = rng.integers(0, NO_GT_CLASS, n)
            if n and rng.random() < 0.2:  # a duplicated label: equal IoUs with every prediction
                j = int(rng.integers(0, n))
                gt, gc = np.vstack([gt, gt[j]]), np.r_[gc, gc[j]]
        boxes, classes = [], []
        if rng.random() >= 0.05:  # some images have labels and no prediction
            for b, c in zip(gt, gc):
                for _ in range(int(rng.integers(0, 4))):
                    boxes.append(_jitter(rng, b, grid, scale=float(rng.choice([0.02, 0.12, 0.3]))))
                    wrong = rng.random() < 0.1
                    classes.append(int(rng.integers(0, N_CLASS)) if wrong else int(c))
            for _ in range(int(rng.integers(0, 5))):  # background and never-labelled classes
                boxes.extend(_boxes(rng, 1, 2, 90, grid))
                classes.append(int(rng.choice([0, 1, 2, 3, 4, NO_GT_CLASS])))
        pb = np.array(boxes, float).reshape(-1, 4)
        pc = np.array(classes, np.int64)
        keep = pc != NO_PRED_CLASS
        pb, pc = pb[keep], pc[keep]
        # Scores: k / 256, distinct within (image, class), tied across them.
        ps = np.zeros(len(pc))
        for c in np.unique(pc):
            at = np.flatnonzero(pc == c)
            ps[at] = (rng.choice(255, len(at), replace=False) + 1) / 256
        order = np.argsort(-ps, kind="stable")  # NMS output: by score, descending
        images.append((gt, gc, pb[order], ps[order], pc[order]))
    return images


def iou64(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """(n_gt, n_pred) IoU in float64, no epsilon (exact intersection and union on the grid)."""
    lo = np.maximum(gt[:, None, :2], pred[None, :, :2])
    hi = np.minimum(gt[:, None, 2:], pred[None, :, 2:])
    wh = np.clip(hi - lo, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    area_g = (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1])
    area_p = (pred[:, 2] - pred[:, 0]) * (pred[:, 3] - pred[:, 1])
    return inter / (area_g[:, None] + area_p[None, :] - inter)


def _validator() -> DetectionValidator:
    """A DetectionValidator with just what its matching reads (no model, no dataset, no files)."""
    validator = DetectionValidator.__new__(DetectionValidator)
    validator.iouv = torch.linspace(0.5, 0.95, 10)
    validator.niou = validator.iouv.numel()
    return validator


def ultralytics_metrics(images, *, float32_iou: bool) -> DetMetrics:
    """Ultralytics' DetMetrics after its own matching of every image (the validator's update_metrics)."""
    validator = _validator()
    metrics = DetMetrics(names={c: f"c{c}" for c in range(N_CLASS)})
    for i, (gt, gc, pb, ps, pc) in enumerate(images):
        pred_cls = torch.from_numpy(pc.astype(np.float32))
        true_cls = torch.from_numpy(gc.astype(np.float32))
        if float32_iou:  # the validator's path: box_iou in float32
            preds = {
                "bboxes": torch.from_numpy(pb),
                "cls": pred_cls,
                "conf": torch.from_numpy(ps.astype(np.float32)),
            }
            tp = validator._process_batch(preds, {"bboxes": torch.from_numpy(gt), "cls": true_cls})["tp"]
        elif len(gc) and len(pc):
            tp = (
                validator.match_predictions(pred_cls, true_cls, torch.from_numpy(iou64(gt, pb))).cpu().numpy()
            )
        else:
            tp = np.zeros((len(pc), validator.niou), dtype=bool)
        metrics.update_stats(
            {
                "tp": tp,
                "target_cls": gc.astype(np.float32),
                "target_img": np.unique(gc.astype(np.float32)),
                "conf": ps.astype(np.float32),
                "pred_cls": pc.astype(np.float32),
                "im_name": f"{i}.jpg",
            }
        )
    metrics.process()
    return metrics


def _ranked(images) -> np.ndarray:
    """``ap_per_class``' own ``np.argsort(-conf)`` of the predictions in image order.

    Not stable: it decides the order of tied scores, so deteval reads the predictions in this order.
    """
    conf = np.concatenate([ps for *_, ps, _ in images] + [np.zeros(0)]).astype(np.float32)
    return np.argsort(-conf)


def _coco(images):
    """COCO dicts of the images, the predictions in the order Ultralytics ranks them.

    ``ap_per_class`` ranks by ``np.argsort(-conf)`` over the predictions in image order; the same
    call here gives the order of tied scores, and deteval (``score_order: file``) ranks ties in
    file order.
    """
    anns = []
    for i, (gt, gc, *_rest) in enumerate(images):
        for b, c in zip(gt, gc):
            w, h = b[2] - b[0], b[3] - b[1]
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": i + 1,
                    "category_id": int(c) + 1,
                    "bbox": [b[0], b[1], w, h],
                    "area": float(w * h),
                    "iscrowd": 0,
                }
            )
    rows = [(i, b, s, c) for i, (_, _, pb, ps, pc) in enumerate(images) for b, s, c in zip(pb, ps, pc)]
    dts = [
        {
            "image_id": rows[k][0] + 1,
            "category_id": int(rows[k][3]) + 1,
            "bbox": [
                rows[k][1][0],
                rows[k][1][1],
                rows[k][1][2] - rows[k][1][0],
                rows[k][1][3] - rows[k][1][1],
            ],
            "score": float(rows[k][2]),
        }
        for k in _ranked(images)
    ]
    gt = {
        "images": [{"id": i + 1} for i in range(len(images))],
        "categories": [{"id": c + 1, "name": f"c{c}"} for c in range(N_CLASS)],
        "annotations": anns,
    }
    return gt, dts
