"""Slow, plainly written twin of Ultralytics' validation mAP (mAP50, mAP50-95) before 8.4.37.

The rules of Ultralytics 8.3.x to 8.4.36, which preset ``ultralytics-8.3`` reproduces (8.4.37
changed how ``compute_ap`` ends the curve, 8.4.176 ``match_predictions``; the current rules are
checked against the installed package in tests/crosscheck/test_ultralytics_installed.py). The
two functions it follows are unchanged from these commits to the last 8.3 release (8.3.253) and
8.4.0, read from their wheels.

Re-typed on numpy from ultralytics/ultralytics: ``BaseValidator.match_predictions``
(``ultralytics/engine/validator.py``, commit 126010219904ff72c17b71b90f16999ace808ff9, the
``use_scipy=False`` branch) and ``ap_per_class`` / ``compute_ap`` (``ultralytics/utils/metrics.py``,
commit 000df7b31ef2cb308fa0a69c35ddc3f7c74f4302). It does not import deteval.

Changed, and why: torch tensors become numpy float64 (Ultralytics computes ``box_iou`` in
float32 with ``+ 1e-7`` in the union: :func:`box_iou` keeps the ``eps`` but not float32), and the
two ``np.argsort`` calls on scores are stable (quicksort's order of ties is unspecified). The
IoU thresholds are passed in (Ultralytics: ``torch.linspace(0.5, 0.95, 10)``, float32).
"""

from __future__ import annotations

import numpy as np

_trapezoid = np.trapezoid  # np.trapz before numpy 2: the same sum


def box_iou(box1, box2, eps=1e-7):
    """``box_iou`` (xyxy): (N, M) IoU of box1 (N, 4) with box2 (M, 4)."""
    a1, a2 = box1[:, None, :2], box1[:, None, 2:]
    b1, b2 = box2[None, :, :2], box2[None, :, 2:]
    inter = (np.minimum(a2, b2) - np.maximum(a1, b1)).clip(0).prod(2)
    return inter / ((a2 - a1).prod(2) + (b2 - b1).prod(2) - inter + eps)


def match_predictions(pred_classes, true_classes, iou, iouv):
    """``match_predictions``: correct (n_pred, n_thr) bool; ``iou`` is (n_gt, n_pred)."""
    correct = np.zeros((pred_classes.shape[0], len(iouv))).astype(bool)
    correct_class = true_classes[:, None] == pred_classes
    iou = iou * correct_class
    for i, threshold in enumerate(iouv):
        matches = np.nonzero(iou >= threshold)
        matches = np.array(matches).T
        if matches.shape[0]:
            if matches.shape[0] > 1:
                matches = matches[iou[matches[:, 0], matches[:, 1]].argsort()[::-1]]
                matches = matches[np.unique(matches[:, 1], return_index=True)[1]]
                matches = matches[np.unique(matches[:, 0], return_index=True)[1]]
            correct[matches[:, 1].astype(int), i] = True
    return correct


def compute_ap(recall, precision):
    """``compute_ap``, method "interp"."""
    mrec = np.concatenate(([0.0], recall, [1.0]))
    mpre = np.concatenate(([1.0], precision, [0.0]))
    mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
    x = np.linspace(0, 1, 101)
    return _trapezoid(np.interp(x, mrec, mpre), x)


def ap_per_class(tp, conf, pred_cls, target_cls, eps=1e-16):
    """``ap_per_class``'s AP part: (ap (nc, n_thr), unique_classes)."""
    i = np.argsort(-conf, kind="stable")
    tp, conf, pred_cls = tp[i], conf[i], pred_cls[i]
    unique_classes, nt = np.unique(target_cls, return_counts=True)
    nc = unique_classes.shape[0]
    ap = np.zeros((nc, tp.shape[1]))
    for ci, c in enumerate(unique_classes):
        i = pred_cls == c
        n_l = nt[ci]
        n_p = i.sum()
        if n_p == 0 or n_l == 0:
            continue
        fpc = (1 - tp[i]).cumsum(0)
        tpc = tp[i].cumsum(0)
        recall = tpc / (n_l + eps)
        precision = tpc / (tpc + fpc)
        for j in range(tp.shape[1]):
            ap[ci, j] = compute_ap(recall[:, j], precision[:, j])
    return ap, unique_classes


def validate(images, iouv):
    """mAP50 and mAP50-95 as ``DetectionValidator`` reports them.

    ``images``: list of (gt_boxes (n, 4) xyxy, gt_classes (n,), pred_boxes (m, 4), pred_scores (m,),
    pred_classes (m,)); predictions of an image are put in NMS output order (score, descending).
    """
    stats_tp, stats_conf, stats_cls, stats_target = [], [], [], []
    for gt_boxes, gt_cls, boxes, scores, cls in images:
        order = np.argsort(-scores, kind="stable")
        boxes, scores, cls = boxes[order], scores[order], cls[order]
        if len(boxes) == 0:
            stats_target.append(gt_cls)
            continue
        if len(gt_boxes):
            correct = match_predictions(cls, gt_cls, box_iou(gt_boxes, boxes), iouv)
        else:
            correct = np.zeros((len(boxes), len(iouv)), dtype=bool)
        stats_tp.append(correct)
        stats_conf.append(scores)
        stats_cls.append(cls)
        stats_target.append(gt_cls)
    ap, classes = ap_per_class(
        np.concatenate(stats_tp).astype(float),
        np.concatenate(stats_conf),
        np.concatenate(stats_cls),
        np.concatenate(stats_target),
    )
    return {"mAP50": ap[:, 0].mean(), "mAP50-95": ap.mean(), "ap": ap, "classes": classes}
