"""Slow, obviously-correct twin of pycocotools' COCOeval for boxes.

This module re-implements ``COCOeval.evaluate()``, ``accumulate()`` and ``summarize()``
(iouType ``bbox``) of pycocotools 2.0.x in plain Python: one loop per image, category,
area range, threshold and detection, written to be read next to ``cocoeval.py``.
It imports neither pycocotools nor deteval, so it is a second, independent oracle:

* in *parity* mode (``gt_ignore_field="iscrowd"``, ``gt_id_zero="unmatchable"``, the
  defaults) it must equal pycocotools exactly, which ``tests/crosscheck`` checks;
* in *fixed* mode (``gt_ignore_field="honour"``, ``gt_id_zero="matchable"``) it is the
  reference for deteval's default ``coco`` protocol, where two pycocotools bugs are fixed.

Numerics follow the reference bit for bit: boxes in float64 xywh, overlap computed as in
``maskApi.c`` ``bbIou`` (``w = min(dx + dw, gx + gw) - max(dx, gx)``), IoU threshold
``min(t, 1 - 1e-10)``, precision ``tp / (tp + fp + np.spacing(1))``, recall thresholds
from ``np.linspace(0, 1, 101)`` looked up with a left bisection, and summary means taken
with ``np.mean`` (pairwise summation) over values in C order, exactly as ``_summarize``.
numpy is used only for those constants, the final means, and to return arrays.

Reproduced pycocotools behaviour (quirks, on purpose):

* ``gt['ignore'] = iscrowd``: the annotation's own ``ignore`` field is overwritten
  (``gt_ignore_field="iscrowd"``); ``"honour"`` uses ``ignore or iscrowd`` instead.
* a detection matched to a GT whose ``id`` is 0 stores ``dtm = 0`` and so counts as
  unmatched (FP, or ignored when its own area is outside the range) while the GT is
  consumed (``gt_id_zero="unmatchable"``); ``"matchable"`` makes it a normal match.
* ties: GTs sorted ignore-last by a stable sort; detections by a stable sort on -score
  (file order for ties), truncated to ``max(max_dets)`` before matching; among GTs with
  equal IoU the *later* one (in ignore-last order) wins, because the test is ``iou < best``.
* a crowd GT can absorb any number of detections; crowd IoU = intersection / det area.
* summary stats 0 uses maxDets == 100 whatever ``max_dets`` is (-1 if 100 is absent),
  stats 1..5, 8..11 use ``max_dets[2]``, 6 and 7 use ``max_dets[0]`` and ``[1]``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

# Exactly as pycocotools' Params.setDetParams (note 0.8999999999999999 and the recall
# thresholds one float step above i/100 for some i).
COCO_IOU_THRESHOLDS = tuple(
    np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True).tolist()
)
COCO_RECALL_THRESHOLDS = tuple(
    np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True).tolist()
)
COCO_AREA_RANGES = (
    ("all", 0**2, 1e5**2),
    ("small", 0**2, 32**2),
    ("medium", 32**2, 96**2),
    ("large", 96**2, 1e5**2),
)
COCO_MAX_DETS = (1, 10, 100)
EPS = float(np.spacing(1))

STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")


@dataclass(frozen=True)
class SlowResult:
    """Output of :func:`evaluate_slow`, in pycocotools' layout and with its -1 values.

    precision, scores: (n_iou_thr, n_recall_thr, n_class, n_area, n_max_dets)
    recall: (n_iou_thr, n_class, n_area, n_max_dets)
    stats: (12,) like ``COCOeval.stats``, or None when fewer than 3 max_dets are given
    """

    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    stats: np.ndarray | None
    category_ids: tuple
    image_ids: tuple


@dataclass(frozen=True)
class _Gt:
    id: object
    box: tuple  # float x, y, w, h
    area: float  # the annotation's own ``area`` field
    is_crowd: bool
    is_ignore: bool


@dataclass(frozen=True)
class _Det:
    box: tuple
    area: float  # w * h, as pycocotools' loadRes computes it
    score: float


@dataclass(frozen=True)
class _ImageEval:
    """Result of matching one (image, category, area range)."""

    det_scores: list  # per detection, sorted by score, truncated to max(max_dets)
    det_is_matched: list  # [threshold][detection]
    det_is_ignored: list  # [threshold][detection]
    gt_is_ignored: list  # per GT


def box_iou(det_box, gt_box, gt_is_crowd):
    """IoU of two xywh boxes exactly as maskApi.c ``bbIou`` (crowd: inter / det area)."""
    dx, dy, dw, dh = det_box
    gx, gy, gw, gh = gt_box
    det_area = dw * dh
    gt_area = gw * gh
    w = min(dw + dx, gw + gx) - max(dx, gx)
    if w <= 0:
        return 0.0
    h = min(dh + dy, gh + gy) - max(dy, gy)
    if h <= 0:
        return 0.0
    inter = w * h
    union = det_area if gt_is_crowd else det_area + gt_area - inter
    return inter / union


def _stable_sort_by_descending_score(dets):
    # Python's sort is stable, like np.argsort(-scores, kind="mergesort").
    return sorted(dets, key=lambda d: -d.score)


def _evaluate_image(gts, dets, area_lo, area_hi, max_det, iou_thresholds, *, gt_id_zero):
    """Greedy matching of one (image, category) group for one area range."""
    if not gts and not dets:
        return None
    gt_ignore_in_range = [g.is_ignore or g.area < area_lo or g.area > area_hi for g in gts]
    # Ignored GTs last, stable.
    order = sorted(range(len(gts)), key=lambda i: gt_ignore_in_range[i])
    gts = [gts[i] for i in order]
    gt_is_ignored = [gt_ignore_in_range[i] for i in order]
    dets = _stable_sort_by_descending_score(dets)[:max_det]

    ious = [[box_iou(d.box, g.box, g.is_crowd) for g in gts] for d in dets]

    det_is_matched = []
    det_is_ignored = []
    for threshold in iou_thresholds:
        gt_is_taken = [False] * len(gts)
        matched_row = []
        ignored_row = []
        for di, det in enumerate(dets):
            best_iou = min(threshold, 1 - 1e-10)
            best = -1
            for gi, gt in enumerate(gts):
                # Taken and not a crowd: cannot match again.
                if gt_is_taken[gi] and not gt.is_crowd:
                    continue
                # Already on a regular GT and now reaching the ignored ones: stop.
                if best > -1 and not gt_is_ignored[best] and gt_is_ignored[gi]:
                    break
                # Equal IoU replaces the previous best (the test is "<").
                if ious[di][gi] < best_iou:
                    continue
                best_iou = ious[di][gi]
                best = gi
            if best == -1:
                is_matched = False
                is_ignored = False
            else:
                gt_is_taken[best] = True
                is_ignored = gt_is_ignored[best]
                # pycocotools stores the GT id as the match: id 0 reads as "no match".
                is_matched = not (gt_id_zero == "unmatchable" and gts[best].id == 0)
            det_out_of_range = det.area < area_lo or det.area > area_hi
            if not is_matched and det_out_of_range:
                is_ignored = True
            matched_row.append(is_matched)
            ignored_row.append(is_ignored)
        det_is_matched.append(matched_row)
        det_is_ignored.append(ignored_row)
    return _ImageEval([d.score for d in dets], det_is_matched, det_is_ignored, gt_is_ignored)


def _accumulate_one(image_evals, max_det, n_thresholds, recall_thresholds):
    """Precision (per recall threshold), recall and scores of one (class, area, maxDet).

    Returns None where pycocotools leaves -1 (no image evaluated, or no non-ignored GT).
    """
    image_evals = [e for e in image_evals if e is not None]
    if not image_evals:
        return None
    # Concatenate in image-id order, each image truncated to max_det, then stable sort.
    entries = []  # (score, image eval, index in image)
    for e in image_evals:
        for j in range(min(max_det, len(e.det_scores))):
            entries.append((e.det_scores[j], e, j))
    entries = sorted(entries, key=lambda entry: -entry[0])
    n_gt = sum(1 for e in image_evals for ig in e.gt_is_ignored if not ig)
    if n_gt == 0:
        return None
    n_det = len(entries)
    sorted_scores = [float(s) for s, _, _ in entries]

    precision_rows, recall_values, score_rows = [], [], []
    for t in range(n_thresholds):
        tp = 0.0
        fp = 0.0
        rc = []
        pr = []
        for _, e, j in entries:
            is_matched = e.det_is_matched[t][j]
            is_ignored = e.det_is_ignored[t][j]
            if is_matched and not is_ignored:
                tp += 1.0
            if not is_matched and not is_ignored:
                fp += 1.0
            # Every detection, ignored ones included, adds a point (as pycocotools does).
            rc.append(tp / n_gt)
            pr.append(tp / (fp + tp + EPS))
        recall_values.append(rc[-1] if n_det else 0.0)
        # Precision envelope: non-increasing from the right.
        for i in range(n_det - 1, 0, -1):
            if pr[i] > pr[i - 1]:
                pr[i - 1] = pr[i]
        q = [0.0] * len(recall_thresholds)
        ss = [0.0] * len(recall_thresholds)
        for ri, r in enumerate(recall_thresholds):
            pi = bisect.bisect_left(rc, r)  # np.searchsorted(rc, r, side="left")
            if pi >= n_det:
                break  # pycocotools' try/except: this and later thresholds stay 0
            q[ri] = pr[pi]
            ss[ri] = sorted_scores[pi]
        precision_rows.append(q)
        score_rows.append(ss)
    return precision_rows, recall_values, score_rows


def _mean_like_summarize(values):
    """np.mean over the values > -1, in C order (as ``_summarize``); -1 if none."""
    kept = [v for v in values if v > -1]
    if not kept:
        return -1.0
    return float(np.mean(np.array(kept, dtype=np.float64)))


def _summarize(
    precision,
    recall,
    iou_thresholds,
    area_labels,
    max_dets,
    *,
    is_ap,
    iou_thr=None,
    area_label="all",
    max_det=100,
):
    t_idx = (
        list(range(len(iou_thresholds)))
        if iou_thr is None
        else [i for i, t in enumerate(iou_thresholds) if t == iou_thr]
    )
    a_idx = [i for i, lbl in enumerate(area_labels) if lbl == area_label]
    m_idx = [i for i, m in enumerate(max_dets) if m == max_det]
    if len(a_idx) != 1 or len(m_idx) != 1:
        if not a_idx or not m_idx:
            return -1.0
        raise ValueError("ambiguous area label or max_det in summary")
    a, m = a_idx[0], m_idx[0]
    n_class = precision.shape[2]
    if is_ap:
        values = [
            precision[t, r, k, a, m] for t in t_idx for r in range(precision.shape[1]) for k in range(n_class)
        ]
    else:
        values = [recall[t, k, a, m] for t in t_idx for k in range(n_class)]
    return _mean_like_summarize(values)


def evaluate_slow(
    gt,
    dt,
    *,
    iou_thresholds=COCO_IOU_THRESHOLDS,
    recall_thresholds=COCO_RECALL_THRESHOLDS,
    area_ranges=COCO_AREA_RANGES,
    max_dets=COCO_MAX_DETS,
    gt_ignore_field="iscrowd",
    gt_id_zero="unmatchable",
):
    """Evaluate COCO boxes like pycocotools' COCOeval (bbox), slowly and plainly.

    Parameters
    ----------
    gt : dict
        COCO instances dict (``images``, ``annotations``, ``categories``); not modified.
    dt : list of dict
        COCO results (``image_id``, ``category_id``, ``bbox``, ``score``); not modified.
    iou_thresholds, recall_thresholds : sequence of float
    area_ranges : sequence of (label, lo, hi), bounds inclusive
    max_dets : sequence of int (sorted here, as pycocotools does)
    gt_ignore_field : {"iscrowd", "honour"}
        "iscrowd" = pycocotools (ignore := iscrowd); "honour" = ignore field or iscrowd.
    gt_id_zero : {"unmatchable", "matchable"}
        "unmatchable" = pycocotools (a match to GT id 0 counts as no match).

    Returns
    -------
    SlowResult
    """
    if gt_ignore_field not in ("iscrowd", "honour"):
        raise ValueError(gt_ignore_field)
    if gt_id_zero not in ("unmatchable", "matchable"):
        raise ValueError(gt_id_zero)
    iou_thresholds = tuple(float(t) for t in iou_thresholds)
    recall_thresholds = tuple(float(r) for r in recall_thresholds)
    max_dets = tuple(sorted(max_dets))
    image_ids = tuple(sorted({img["id"] for img in gt["images"]}))
    category_ids = tuple(sorted({cat["id"] for cat in gt["categories"]}))
    image_set, category_set = set(image_ids), set(category_ids)

    gts_by_group = {}
    for ann in gt.get("annotations", []):
        if ann["image_id"] not in image_set or ann["category_id"] not in category_set:
            continue
        is_crowd = bool(ann["iscrowd"])
        if gt_ignore_field == "iscrowd":
            is_ignore = is_crowd
        else:
            is_ignore = bool(ann.get("ignore", 0)) or is_crowd
        g = _Gt(ann["id"], tuple(float(v) for v in ann["bbox"]), ann["area"], is_crowd, is_ignore)
        gts_by_group.setdefault((ann["image_id"], ann["category_id"]), []).append(g)
    dets_by_group = {}
    for res in dt:
        if res["image_id"] not in image_set:
            raise ValueError("detection on an image absent from the GT")
        if res["category_id"] not in category_set:
            continue  # pycocotools drops them silently
        box = tuple(float(v) for v in res["bbox"])
        d = _Det(box, res["bbox"][2] * res["bbox"][3], res["score"])
        dets_by_group.setdefault((res["image_id"], res["category_id"]), []).append(d)

    n_thr, n_rec = len(iou_thresholds), len(recall_thresholds)
    n_cls, n_area, n_md = len(category_ids), len(area_ranges), len(max_dets)
    precision = -np.ones((n_thr, n_rec, n_cls, n_area, n_md))
    recall = -np.ones((n_thr, n_cls, n_area, n_md))
    scores = -np.ones((n_thr, n_rec, n_cls, n_area, n_md))

    for k, cat in enumerate(category_ids):
        for a, (_, lo, hi) in enumerate(area_ranges):
            image_evals = [
                _evaluate_image(
                    gts_by_group.get((img, cat), []),
                    dets_by_group.get((img, cat), []),
                    lo,
                    hi,
                    max_dets[-1],
                    iou_thresholds,
                    gt_id_zero=gt_id_zero,
                )
                for img in image_ids
            ]
            for m, max_det in enumerate(max_dets):
                acc = _accumulate_one(image_evals, max_det, n_thr, recall_thresholds)
                if acc is None:
                    continue
                precision_rows, recall_values, score_rows = acc
                for t in range(n_thr):
                    precision[t, :, k, a, m] = precision_rows[t]
                    recall[t, k, a, m] = recall_values[t]
                    scores[t, :, k, a, m] = score_rows[t]

    stats = None
    if len(max_dets) >= 3:
        labels = [lbl for lbl, _, _ in area_ranges]

        def s(is_ap, **kw):
            return _summarize(precision, recall, iou_thresholds, labels, max_dets, is_ap=is_ap, **kw)

        stats = np.array(
            [
                s(True),  # max_det=100, whatever max_dets is (pycocotools)
                s(True, iou_thr=0.5, max_det=max_dets[2]),
                s(True, iou_thr=0.75, max_det=max_dets[2]),
                s(True, area_label="small", max_det=max_dets[2]),
                s(True, area_label="medium", max_det=max_dets[2]),
                s(True, area_label="large", max_det=max_dets[2]),
                s(False, max_det=max_dets[0]),
                s(False, max_det=max_dets[1]),
                s(False, max_det=max_dets[2]),
                s(False, area_label="small", max_det=max_dets[2]),
                s(False, area_label="medium", max_det=max_dets[2]),
                s(False, area_label="large", max_det=max_dets[2]),
            ]
        )
    return SlowResult(precision, recall, scores, stats, category_ids, image_ids)
