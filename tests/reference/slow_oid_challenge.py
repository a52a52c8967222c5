"""Slow, plainly written twin of the Open Images detection challenge evaluation.

A re-typing, on plain numpy and Python lists, of the TensorFlow Object Detection API
(tensorflow/models) as ``metrics/oid_challenge_evaluation.py`` drives it. Files and commits read:

- ``research/object_detection/metrics/oid_challenge_evaluation.py`` (commit
  c4a1f4e1c2de5ca2e604c7c78d93b746e15a58b4) and ``metrics/oid_challenge_evaluation_utils.py``
  (commit 3617973260592c3a85aceeaab7576d198246784f): every image's boxes and image-level labels
  (positive and negative: every row with a ``Confidence``) are grouped by ``ImageID``;
- ``research/object_detection/utils/object_detection_evaluation.py`` (commit of the
  ``OpenImagesChallengeEvaluator`` read at 2026-11, 54607 characters):
  ``OpenImagesChallengeEvaluator`` (``group_of_weight`` 1.0, IoU 0.5; the evaluatable classes of
  an image are its image-level labels and its box classes; detections of other classes, and
  all detections of an image without ground truth, are dropped) and ``ObjectDetectionEvaluation``
  (``nms_iou_threshold`` 1.0 and ``nms_max_output_boxes`` 10000: a sort by score and a cap;
  ``num_gt_instances`` counts group-of boxes with weight 1; AP NaN for classes without ground
  truth, mAP ``np.nanmean``);
- ``research/object_detection/utils/per_image_evaluation.py`` (commit
  37463a830e601397a3196b706fd66c89d3a03fc6): ``_remove_invalid_boxes``,
  ``_compute_tp_fp_for_single_class`` (``compute_match_iou``, then ``compute_match_ioa``);
- ``research/object_detection/utils/metrics.py`` (commit 5eba85bc881d6859d92fa0281c661a51cf1719da):
  ``compute_precision_recall``, ``compute_average_precision`` (the VOC all-point area);
- ``research/object_detection/dataset_tools/oid_hierarchical_labels_expansion.py`` (commit
  1161ef509440f5b8e4426f119cbcafa6c5ef6998): ``_build_plain_hierarchy(skip_root=True)``; a box
  is copied to every ancestor, a positive image-level label to every ancestor, a negative one
  to every descendant.

Changed from the reference: the sorts by score (``np.argsort(scores)[::-1]``, whose order of ties
depends on numpy's quicksort) are a stable descending sort; callers use distinct scores. The
twin takes plain Python values (dicts and lists) instead of CSV files, and boxes as
(xmin, ymin, xmax, ymax). It does not import deteval.
"""

from __future__ import annotations

import numpy as np

NMS_MAX_OUTPUT_BOXES = 10000


def build_plain_hierarchy(hierarchy, skip_root=False):
    """``_build_plain_hierarchy``: (keyed_parent, keyed_child, children) as the TF script builds them."""
    all_children = []
    all_keyed_parent = {}
    all_keyed_child = {}
    if "Subcategory" in hierarchy:
        for node in hierarchy["Subcategory"]:
            keyed_parent, keyed_child, children = build_plain_hierarchy(node)
            for key, value_list in keyed_parent.items():
                if key in all_keyed_parent:
                    all_keyed_parent[key].extend(value_list)
                else:
                    all_keyed_parent[key] = value_list
            for key, value_list in keyed_child.items():
                if key in all_keyed_child:
                    all_keyed_child[key].extend(value_list)
                else:
                    all_keyed_child[key] = value_list
            all_children.extend(children)
    if not skip_root:
        all_keyed_parent[hierarchy["LabelName"]] = all_children
        all_children = [hierarchy["LabelName"]] + all_children
        for child in all_keyed_child:
            all_keyed_child[child].append(hierarchy["LabelName"])
        all_keyed_child[hierarchy["LabelName"]] = []
    return all_keyed_parent, all_keyed_child, all_children


def expand_boxes(rows, hierarchy):
    """``expand_boxes_from_csv`` on every row: each row, then one copy per ancestor."""
    _, keyed_child, _ = build_plain_hierarchy(hierarchy, skip_root=True)
    out = []
    for row in rows:
        out.append(row)
        assert row["LabelName"] in keyed_child
        for parent in keyed_child[row["LabelName"]]:
            out.append({**row, "LabelName": parent})
    return out


def expand_labels(rows, hierarchy):
    """``expand_labels_from_csv``: positive labels to ancestors, negative ones to descendants."""
    keyed_parent, keyed_child, _ = build_plain_hierarchy(hierarchy, skip_root=True)
    out = []
    for row in rows:
        out.append(row)
        if int(row["Confidence"]) == 1:
            assert row["LabelName"] in keyed_child
            for parent in keyed_child[row["LabelName"]]:
                out.append({**row, "LabelName": parent})
        else:
            assert row["LabelName"] in keyed_parent
            for child in keyed_parent[row["LabelName"]]:
                out.append({**row, "LabelName": child})
    return out


def _iou(boxes1, boxes2):
    """``np_box_ops.iou`` (continuous boxes, no +1)."""
    out = np.zeros((len(boxes1), len(boxes2)))
    for i, a in enumerate(boxes1):
        for j, b in enumerate(boxes2):
            iw = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
            ih = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
            inter = iw * ih
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            out[i, j] = inter / union
    return out


def _ioa_of_detection(det_boxes, group_boxes):
    """``np.transpose(ioa(gt_group_of, detected))``: intersection over the *detection's* area."""
    out = np.zeros((len(det_boxes), len(group_boxes)))
    for i, a in enumerate(det_boxes):
        for j, b in enumerate(group_boxes):
            iw = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
            ih = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
            out[i, j] = iw * ih / ((a[2] - a[0]) * (a[3] - a[1]))
    return out


def tp_fp_single_class(
    det_boxes, det_scores, gt_boxes, gt_is_group_of, iou_threshold=0.5, group_of_weight=1.0
):
    """``_compute_tp_fp_for_single_class`` in box mode (no difficult boxes): (scores, tp_fp_labels)."""
    det_boxes = np.asarray(det_boxes, dtype=float).reshape(-1, 4)
    det_scores = np.asarray(det_scores, dtype=float)
    gt_boxes = np.asarray(gt_boxes, dtype=float).reshape(-1, 4)
    gt_is_group_of = np.asarray(gt_is_group_of, dtype=bool)
    if det_boxes.size == 0:
        return np.array([], dtype=float), np.array([], dtype=float)
    # non_max_suppression with iou_threshold 1.0: sort by score, descending, then cap.
    order = np.argsort(-det_scores, kind="stable")[:NMS_MAX_OUTPUT_BOXES]
    det_boxes, scores = det_boxes[order], det_scores[order]
    n = len(scores)
    if gt_boxes.size == 0:
        return scores, np.zeros(n, dtype=float)
    iou = _iou(det_boxes, gt_boxes[~gt_is_group_of])
    ioa = _ioa_of_detection(det_boxes, gt_boxes[gt_is_group_of])
    tp_fp = np.zeros(n, dtype=bool)
    matched_group_of = np.zeros(n, dtype=bool)
    if iou.shape[1] > 0:
        best = np.argmax(iou, axis=1)
        gt_detected = np.zeros(iou.shape[1], dtype=bool)
        for i in range(n):
            g = best[i]
            if iou[i, g] >= iou_threshold and not gt_detected[g]:
                tp_fp[i] = True
                gt_detected[g] = True
    group_scores = np.zeros(0)
    group_labels = np.zeros(0)
    if ioa.shape[1] > 0:
        scores_group_of = np.zeros(ioa.shape[1])
        labels_group_of = group_of_weight * np.ones(ioa.shape[1])
        best = np.argmax(ioa, axis=1)
        for i in range(n):
            g = best[i]
            if not tp_fp[i] and ioa[i, g] >= iou_threshold and not matched_group_of[i]:
                matched_group_of[i] = True
                scores_group_of[g] = max(scores_group_of[g], scores[i])
        keep = (scores_group_of > 0) & (labels_group_of > 0)
        group_scores, group_labels = scores_group_of[keep], labels_group_of[keep]
    valid = ~matched_group_of
    return (
        np.concatenate((scores[valid], group_scores)),
        np.concatenate((tp_fp[valid].astype(float), group_labels)),
    )


def average_precision(scores, labels, num_gt):
    """``compute_precision_recall`` then ``compute_average_precision``; NaN when ``num_gt`` is 0."""
    if num_gt == 0:
        return float("nan")
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels, dtype=float)
    order = np.argsort(-scores, kind="stable")
    tp_labels = labels[order]
    fp_labels = (tp_labels <= 0).astype(float)
    cum_tp = np.cumsum(tp_labels)
    cum_fp = np.cumsum(fp_labels)
    precision = cum_tp / (cum_tp + cum_fp)
    recall = cum_tp / num_gt
    if not precision.size:
        return 0.0
    recall = np.concatenate([[0], recall, [1]])
    precision = np.concatenate([[0], precision, [0]])
    for i in range(len(precision) - 2, -1, -1):
        precision[i] = np.maximum(precision[i], precision[i + 1])
    indices = np.where(recall[1:] != recall[:-1])[0] + 1
    return float(np.sum((recall[indices] - recall[indices - 1]) * precision[indices]))


def evaluate(boxes, labels, predictions, classes, hierarchy=None, expand_predictions=True):
    """The challenge's per-class AP and mAP.

    Parameters
    ----------
    boxes : list of dict
        Ground-truth rows: ``ImageID``, ``LabelName``, ``XMin``, ``YMin``, ``XMax``, ``YMax``,
        ``IsGroupOf`` (0/1).
    labels : list of dict
        Image-level label rows: ``ImageID``, ``LabelName``, ``Confidence`` (0/1).
    predictions : list of dict
        ``ImageID``, ``LabelName``, ``Score``, ``XMin``, ``YMin``, ``XMax``, ``YMax``.
    classes : list of str
        The label map (every class that can appear, hierarchy nodes included).
    hierarchy : dict, optional
        The hierarchy JSON; when given, boxes and labels (and predictions, when
        ``expand_predictions``) are expanded first, as the challenge's files are.

    Returns
    -------
    (dict, float)
        AP per class name (NaN without ground truth) and the mAP (``np.nanmean``).
    """
    if hierarchy is not None:
        boxes = expand_boxes(boxes, hierarchy)
        labels = expand_labels(labels, hierarchy)
        if expand_predictions:
            predictions = expand_boxes(predictions, hierarchy)
    # Ground truth: grouped by image (boxes and labels concatenated, as main() does).
    gt_images = sorted({r["ImageID"] for r in boxes} | {r["ImageID"] for r in labels})
    evaluatable = {}
    gt_by_image = {}
    num_gt = dict.fromkeys(classes, 0.0)
    for image in gt_images:
        rows = [r for r in boxes if r["ImageID"] == image]
        gt_by_image[image] = rows
        image_classes = [r["LabelName"] for r in labels if r["ImageID"] == image]
        evaluatable[image] = set(image_classes) | {r["LabelName"] for r in rows}
        for r in rows:
            num_gt[r["LabelName"]] += 1.0  # non-group-of 1, group-of group_of_weight 1.0
    scores_per_class = {c: [] for c in classes}
    labels_per_class = {c: [] for c in classes}
    for image in sorted({r["ImageID"] for r in predictions}):
        allowed = evaluatable.get(image, set())
        dets = [r for r in predictions if r["ImageID"] == image and r["LabelName"] in allowed]
        # _remove_invalid_boxes: ymin < ymax and xmin < xmax
        dets = [r for r in dets if r["YMin"] < r["YMax"] and r["XMin"] < r["XMax"]]
        rows = gt_by_image.get(image, [])
        for c in classes:
            cd = [r for r in dets if r["LabelName"] == c]
            cg = [r for r in rows if r["LabelName"] == c]
            s, lab = tp_fp_single_class(
                [[r["XMin"], r["YMin"], r["XMax"], r["YMax"]] for r in cd],
                [r["Score"] for r in cd],
                [[r["XMin"], r["YMin"], r["XMax"], r["YMax"]] for r in cg],
                [bool(int(r["IsGroupOf"])) for r in cg],
            )
            if len(s):
                scores_per_class[c].append(s)
                labels_per_class[c].append(lab)
    ap = {}
    for c in classes:
        if num_gt[c] == 0:
            ap[c] = float("nan")
            continue
        s = np.concatenate(scores_per_class[c]) if scores_per_class[c] else np.zeros(0)
        lab = np.concatenate(labels_per_class[c]) if labels_per_class[c] else np.zeros(0)
        ap[c] = average_precision(s, lab, num_gt[c])
    values = np.array([ap[c] for c in classes], dtype=float)
    m_ap = float(np.nanmean(values)) if np.any(~np.isnan(values)) else float("nan")
    return ap, m_ap
