"""Counted warnings about accepted COCO results: degenerate boxes, suspicious encodings.

Shared by the full results reader (:mod:`deteval.io.coco.results`) and the fast path
(:mod:`deteval.io.coco.fast`), so both warn alike.
"""

from __future__ import annotations

import numpy as np

from deteval.data import GroundTruth
from deteval.io.category_map import CategoryMap


def _index_suspicion(
    category_ids: np.ndarray, gt: GroundTruth, cmap: CategoryMap | None, where: str
) -> list[str]:
    """Warn when results against a YOLO ground truth may be 1-based class indices.

    A YOLO dataset's categories are its class indices 0..K-1. Ultralytics' ``predictions.json``
    writes the index (older releases) or the index + 1 (newer ones, outside COCO). Ids in 1..K
    whose largest is K are refused as unknown (and recognised); when neither 0 nor K occurs the
    two readings cannot be told apart, so deteval says so.
    """
    k = gt.n_classes
    if (
        cmap is not None
        or gt.has_image_ids
        or not len(category_ids)
        or k < 2
        or not np.array_equal(gt.category_id, np.arange(k))
    ):
        return []
    if category_ids.min() >= 1:
        return [
            f"{where}: no detection has category_id 0 (the YOLO class indices are 0..{k - 1}): "
            f"if these are Ultralytics predictions written as index + 1, the classes are shifted "
            f"by one -- pass --category-map index1 (category_map='index1'); index0 states the "
            f"ids as they are"
        ]
    return []


#: Detections per slice when the warnings are counted: the temporaries stay a few MiB whatever
#: the number of detections.
_CHUNK = 1 << 16


def _box_warnings(box: np.ndarray, image: np.ndarray, gt: GroundTruth, where: str) -> list[str]:
    """Counted warnings about accepted boxes: degenerate ones, suspicious encodings."""
    out = []
    degenerate = sum(
        int(np.count_nonzero((part[:, 2] == 0) | (part[:, 3] == 0)))
        for part in (box[i : i + _CHUNK] for i in range(0, len(box), _CHUNK))
    )
    if degenerate:
        out.append(
            f"{where}: {degenerate} detections with a zero width or height: scored as "
            f"pycocotools does (they match nothing)"
        )
    return out + _encoding_suspicions(box, image, gt, where)


def _encoding_suspicions(box: np.ndarray, image: np.ndarray, gt: GroundTruth, where: str) -> list[str]:
    """Warn when boxes look like another encoding (normalized, or xyxy given as xywh).

    Counted slice by slice against per-image limits, so that no per-detection copy of the image
    sizes is made: images of unknown size (NaN) compare False and count as neither known nor
    overflowing. The median image width (over detections, as the message says) is computed only
    when every coordinate is <= 1.
    """
    if len(box) < 10:
        return []
    out = []
    known_image = np.isfinite(gt.image_width) & np.isfinite(gt.image_height)
    n_known = int(np.bincount(image, minlength=len(known_image))[known_image].sum())
    if not n_known:
        return []
    if box.max() <= 1.0:
        width = gt.image_width[image]
        median = np.nanmedian(width[np.isfinite(width) & np.isfinite(gt.image_height[image])])
        if median > 2:
            out.append(
                f"{where}: every box coordinate is <= 1 while images are "
                f"{int(median)} px wide: are the boxes normalized? "
                f"COCO results are absolute pixels [x, y, w, h]"
            )
    right_limit = np.where(known_image, 1.05 * gt.image_width + 1, np.nan)
    bottom_limit = np.where(known_image, 1.05 * gt.image_height + 1, np.nan)
    overflow = 0
    for i in range(0, len(box), _CHUNK):
        part, at = box[i : i + _CHUNK], image[i : i + _CHUNK]
        overflow += int(
            np.count_nonzero(
                (part[:, 0] + part[:, 2] > right_limit[at]) | (part[:, 1] + part[:, 3] > bottom_limit[at])
            )
        )
    if overflow / n_known > 0.25:
        out.append(
            f"{where}: {overflow} of {n_known} boxes extend past the "
            f"image by more than 5%: are they [x1, y1, x2, y2] given as [x, y, w, h]?"
        )
    return out
