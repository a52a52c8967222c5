"""Boundary IoU (Cheng et al., CVPR 2021) for ``iou_type="boundary"``, on pycocotools rasters.

A mask's boundary is the mask minus its erosion: a pixel of the mask is on the boundary when
some pixel within Chebyshev distance ``d`` of it is outside the mask or outside the image.
``d = max(1, round(ratio * sqrt(h**2 + w**2)))`` for an image of ``h`` x ``w`` pixels and
``ratio`` = ``Protocol.boundary_dilation_ratio``. Boundary IoU is ``|G_d & D_d| / |G_d | D_d|``
of the two boundaries, computed by pycocotools' ``mask.iou`` on their RLEs, and the COCO
"Boundary AP" scores a pair by ``min(mask IoU, Boundary IoU)`` (crowd ground truth: the mask's
intersection over the detection's area alone).

Notes
-----
The reference, bowenc0221/boundary-iou-api (``boundary_utils.mask_to_boundary``), erodes with
OpenCV: ``cv2.erode`` of the mask padded by one zero pixel, with a 3 x 3 square kernel,
``dilation`` iterations. That is erosion by a (2d + 1) x (2d + 1) square with everything
outside the image counted as background; here it is computed exactly with numpy (one running
count of background pixels per axis), so OpenCV is not needed. faster-coco-eval 1.8's
``iouType="boundary"`` does the same arithmetic (its ``rleToBoundaryCV`` is the reference's code;
its default C++ ``toBoundary`` is meant to agree) and combines the IoUs the same way.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from pycocotools import mask as mask_utils

from deteval.geometry.raster import RasterMasks, raster_pair_iou
from deteval.masks import CheckedMasks, SegmentationSource

__all__ = ["dilation_pixels", "mask_boundary", "boundary_rle", "boundary_pair_iou"]


def dilation_pixels(height: int, width: int, ratio: float) -> int:
    """The band width ``d`` in pixels: ``max(1, round(ratio * diagonal))`` (Python's round).

    >>> dilation_pixels(480, 640, 0.02)
    16
    """
    return max(1, int(round(ratio * math.sqrt(height**2 + width**2))))


def _erode_axis(mask: np.ndarray, d: int, axis: int) -> np.ndarray:
    """Pixels whose every neighbour within ``d`` along ``axis`` is set (outside: unset)."""
    n = mask.shape[axis]
    background = np.cumsum(~mask, axis=axis, dtype=np.int64)
    pad = [(0, 0), (0, 0)]
    pad[axis] = (1, 0)
    background = np.pad(background, pad)  # background[i] = background pixels before i
    idx = np.arange(n)
    lo, hi = idx - d, idx + d + 1
    inside = (lo >= 0) & (hi <= n)
    count = np.take(background, np.clip(hi, 0, n), axis=axis) - np.take(
        background, np.clip(lo, 0, n), axis=axis
    )
    shape = [1, 1]
    shape[axis] = n
    return (count == 0) & inside.reshape(shape)


def mask_boundary(mask: np.ndarray, d: int) -> np.ndarray:
    """The boundary band of a bool (h, w) mask: the mask minus its erosion by a (2d+1)² square.

    >>> m = np.zeros((5, 5), bool); m[:, :] = True
    >>> int(mask_boundary(m, 1).sum())  # the image border counts as outside
    16
    """
    mask = np.asarray(mask, dtype=bool)
    eroded = _erode_axis(_erode_axis(mask, d, 0), d, 1)
    return mask & ~eroded


def boundary_rle(rle: dict, ratio: float) -> dict:
    """The compressed RLE of the boundary band of a pycocotools RLE mask."""
    h, w = (int(v) for v in rle["size"])
    with warnings.catch_warnings():
        # pycocotools 2.0.x's decode passes copy=False to an __array__ of its own that numpy 2
        # warns about; the pixels are right.
        warnings.filterwarnings("ignore", message="__array__ implementation", category=DeprecationWarning)
        mask = mask_utils.decode(rle).astype(bool)
    band = mask_boundary(mask, dilation_pixels(h, w, ratio))
    return mask_utils.encode(np.asfortranarray(band.astype(np.uint8)))


def boundary_pair_iou(
    det_src: SegmentationSource,
    det: CheckedMasks,
    det_raster: RasterMasks,
    gt_src: SegmentationSource,
    gt: CheckedMasks,
    gt_raster: RasterMasks,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    is_crowd: np.ndarray,
    *,
    ratio: float,
) -> np.ndarray:
    """boundary-iou-api's ``computeBoundaryIoU`` for aligned pairs: ``min(mask IoU, Boundary IoU)``.

    Crowd pairs keep the mask value (intersection over the detection's area). Pairs whose mask
    IoU is 0 need no boundary (the minimum is 0); the boundaries of the others are made once
    per record and kept in the collection's :class:`RasterMasks`.
    """
    iou = raster_pair_iou(det_src, det, det_raster, gt_src, gt, gt_raster, det_rows, gt_rows, is_crowd)
    todo = np.flatnonzero((iou > 0) & ~np.asarray(is_crowd, dtype=bool))
    if not len(todo):
        return iou
    d_rows, g_rows = det_rows[todo], gt_rows[todo]
    d_band = _boundaries(det_raster, d_rows, ratio)
    g_band = _boundaries(gt_raster, g_rows, ratio)
    no_crowd = np.zeros(1, dtype=np.uint8)
    for i in range(len(todo)):
        value = float(np.asarray(mask_utils.iou([d_band[i]], [g_band[i]], no_crowd)).reshape(()))
        iou[todo[i]] = min(iou[todo[i]], value)
    return iou


def _boundaries(raster: RasterMasks, rows: np.ndarray, ratio: float) -> list:
    """The boundary RLEs of ``rows`` (their rasters made already), computed once per record."""
    cache = raster.boundary.setdefault(ratio, {})
    out = []
    for r in rows.tolist():
        if r not in cache:
            cache[r] = boundary_rle(raster.rle_of(r), ratio)
        out.append(cache[r])
    return out
