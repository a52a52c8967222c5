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

torch = pytest.importorskip("torch", reason="the installed-ultralytics cross-check needs torch")
ultralytics = pytest.importorskip(
    "ultralytics", reason="the installed-ultralytics cross-check needs ultralytics"
)

from ultralytics.models.yolo.detect.val import DetectionValidator  # noqa: E402
from ultralytics.utils.metrics import DetMetrics  # noqa: E402

if tuple(int(v) for v in ultralytics.__version__.split(".")[:3]) < (8, 4, 176):
    pytest.skip(
        f"ultralytics {ultralytics.__version__} predates 8.4.176, whose rules the preset follows",
        allow_module_level=True,
    )

N_CLASS = 7  # class 5: labels, never predicted; class 6: predicted, never labelled
NO_PRED_CLASS, NO_GT_CLASS = 5, 6


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
