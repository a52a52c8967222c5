"""Overlap between boxes: box IoU in the continuous (COCO) and pixel-inclusive (VOC) arithmetics.

Two box arithmetics are reproduced exactly, because published numbers depend on them:

* ``"continuous"`` -- pycocotools' ``maskApi.c`` ``bbIou``: boxes in float64 ``[x, y, w, h]``,
  area ``w * h``, overlap width ``min(x1 + w1, x2 + w2) - max(x1, x2)``.
* ``"pixel_inclusive"`` -- the PASCAL VOC devkit: corners ``[x1, y1, x2, y2]`` are 1-based
  inclusive pixel indices, so a width is ``x2 - x1 + 1``.

A *crowd* ground truth (COCO ``iscrowd=1``) uses intersection over the detection's own area, so
any detection inside a crowd region overlaps it fully (pycocotools' ``iscrowd`` rule).
"""

from __future__ import annotations

import numpy as np

from deteval.data import boxes_as

__all__ = ["box_iou", "pair_box_iou", "BOX_CONVENTIONS"]

BOX_CONVENTIONS = ("continuous", "pixel_inclusive")


def pair_box_iou(det_box: np.ndarray, gt_box: np.ndarray, gt_is_crowd: np.ndarray, *,
                 box_format: str = "xywh", convention: str = "continuous") -> np.ndarray:
    """IoU of aligned pairs: row ``i`` of ``det_box`` against row ``i`` of ``gt_box``.

    Parameters
    ----------
    det_box, gt_box : float64 (n_pair, 4)
        Boxes in ``box_format`` ("xywh" or "xyxy").
    gt_is_crowd : bool (n_pair,)
        Crowd ground truth: the overlap is intersection / detection area.
    box_format : {"xywh", "xyxy"}
    convention : {"continuous", "pixel_inclusive"}

    Returns
    -------
    float64 (n_pair,)
        In [0, 1]; 0 where the boxes do not overlap (also for degenerate boxes).

    Notes
    -----
    ``continuous`` follows pycocotools ``bbIou`` operation by operation (``u = da + ga - i``,
    ``o = i / u``) so the values are bit-identical; ``pixel_inclusive`` follows the VOC devkit's
    ``VOCevalDet.m`` (``ua = (w_d + 1)(h_d + 1) + (w_g + 1)(h_g + 1) - iw * ih``).

    Examples
    --------
    >>> d = np.array([[0., 0., 10., 10.]]); g = np.array([[0., 0., 10., 6.]])
    >>> pair_box_iou(d, g, np.array([False])).tolist()
    [0.6]
    """
    if convention == "continuous":
        d = boxes_as(det_box, box_format, "xywh")
        g = boxes_as(gt_box, box_format, "xywh")
        dx, dy, dw, dh = d[:, 0], d[:, 1], d[:, 2], d[:, 3]
        gx, gy, gw, gh = g[:, 0], g[:, 1], g[:, 2], g[:, 3]
        det_area = dw * dh
        gt_area = gw * gh
        iw = np.minimum(dw + dx, gw + gx) - np.maximum(dx, gx)
        ih = np.minimum(dh + dy, gh + gy) - np.maximum(dy, gy)
    elif convention == "pixel_inclusive":
        d = boxes_as(det_box, box_format, "xyxy")
        g = boxes_as(gt_box, box_format, "xyxy")
        iw = np.minimum(d[:, 2], g[:, 2]) - np.maximum(d[:, 0], g[:, 0]) + 1.0
        ih = np.minimum(d[:, 3], g[:, 3]) - np.maximum(d[:, 1], g[:, 1]) + 1.0
        det_area = (d[:, 2] - d[:, 0] + 1.0) * (d[:, 3] - d[:, 1] + 1.0)
        gt_area = (g[:, 2] - g[:, 0] + 1.0) * (g[:, 3] - g[:, 1] + 1.0)
    else:
        raise ValueError(f"convention must be one of {BOX_CONVENTIONS}, found {convention!r}")
    overlaps = (iw > 0) & (ih > 0)
    inter = np.where(overlaps, iw * ih, 0.0)
    union = np.where(gt_is_crowd, det_area, det_area + gt_area - inter)
    iou = np.zeros(len(inter))
    np.divide(inter, union, out=iou, where=overlaps & (union > 0))
    return iou


def box_iou(det_box: np.ndarray, gt_box: np.ndarray, gt_is_crowd: np.ndarray | None = None, *,
            box_format: str = "xywh", convention: str = "continuous") -> np.ndarray:
    """IoU matrix between every detection and every ground-truth box.

    Parameters
    ----------
    det_box : float64 (n_det, 4)
    gt_box : float64 (n_gt, 4)
    gt_is_crowd : bool (n_gt,), optional
        Crowd columns use intersection over detection area (not symmetric).
    box_format : {"xywh", "xyxy"}
    convention : {"continuous", "pixel_inclusive"}

    Returns
    -------
    float64 (n_det, n_gt)

    Examples
    --------
    >>> box_iou(np.array([[0., 0., 10., 10.]]), np.array([[5., 0., 10., 10.], [0., 0., 5., 5.]])).round(4).tolist()
    [[0.3333, 0.25]]
    """
    det_box = np.asarray(det_box, dtype=np.float64).reshape(-1, 4)
    gt_box = np.asarray(gt_box, dtype=np.float64).reshape(-1, 4)
    n_det, n_gt = len(det_box), len(gt_box)
    if gt_is_crowd is None:
        gt_is_crowd = np.zeros(n_gt, dtype=bool)
    det_index = np.repeat(np.arange(n_det), n_gt)
    gt_index = np.tile(np.arange(n_gt), n_det)
    iou = pair_box_iou(det_box[det_index], gt_box[gt_index], np.asarray(gt_is_crowd, bool)[gt_index],
                       box_format=box_format, convention=convention)
    return iou.reshape(n_det, n_gt)
