"""Class-agnostic pooling: every category mapped to one, as pycocotools' ``useCats = 0``.

A small transform on values (data layer only), applied by the protocol field
``class_agnostic: true``: ``evaluate(gt, dt, coco.replace(class_agnostic=True))`` equals
``evaluate(*pool_categories(gt, dt), coco)`` equals pycocotools' ``COCOeval`` with
``params.useCats = 0``. :func:`deteval.evaluate.match` and :func:`deteval.evaluate.score` apply
it themselves (:func:`pooled_for`, :func:`ground_truth_for`), so every path that scores (the CLI,
``compare``, the Evaluator, shards, bootstrap) pools the same way; pooling is idempotent and
already pooled values pass through unchanged (:func:`is_pooled`), so a caller may pool once up
front and hand the pooled values (and masks prepared from them) down.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from deteval.data import Detections, GroundTruth
from deteval.protocol import Protocol

__all__ = [
    "pool_categories",
    "pool_ground_truth",
    "pooled_for",
    "ground_truth_for",
    "is_pooled",
    "pooled_rows",
    "POOLED_CATEGORY_ID",
    "POOLED_CATEGORY_NAME",
]

#: pycocotools evaluates ``useCats = 0`` under the single category id ``-1`` (``catIds = [-1]``).
POOLED_CATEGORY_ID = -1
POOLED_CATEGORY_NAME = "all classes"


def pool_categories(
    gt: GroundTruth,
    dt: Detections,
    *,
    category_id: int = POOLED_CATEGORY_ID,
    category_name: str = POOLED_CATEGORY_NAME,
) -> tuple[GroundTruth, Detections]:
    """Map every category of ``gt`` and ``dt`` to one category ("all classes").

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
        Detections relative to ``gt``.
    category_id : int
        Id of the pooled category (pycocotools uses -1).
    category_name : str

    Returns
    -------
    (GroundTruth, Detections)
        New values with one category; the inputs are not modified.

    Notes
    -----
    pycocotools with ``useCats = 0`` concatenates an image's ground truths (and detections)
    category by category, in ascending category id order, each in file order
    (``COCOeval.computeIoU`` / ``evaluateImg``: ``[_ for cId in p.catIds for _ in
    self._gts[imgId, cId]]``). That order decides ties: a detection with equal IoU to two ground
    truths takes the later one, and detections with equal scores keep it after the stable score
    sort. So the ground-truth rows are reordered stably by category, and the detections'
    ``order`` (their tie rule) becomes (category, file order). Everything else is unchanged:
    crowd regions still absorb detections, ``max_dets`` now caps the detections of an image
    across classes, and the size ranges still use the ``area`` field.

    Examples
    --------
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> from deteval.io import load_detections, load_ground_truth
    >>> g = load_ground_truth(gt)
    >>> d = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 1}], g)
    >>> pg, pd = pool_categories(g, d)
    >>> pg.category_id.tolist(), pg.category.tolist(), pd.category.tolist()
    ([-1], [0], [0])
    """
    pooled_gt = pool_ground_truth(gt, category_id=category_id, category_name=category_name)
    # New tie order: (category, file order); rows stay where they are.
    tie_rank = np.empty(len(dt), dtype=np.int32 if len(dt) <= 2**31 else np.int64)
    tie_rank[np.lexsort((dt.order, dt.category))] = np.arange(len(dt))
    pooled_dt = Detections(
        image=dt.image,
        category=np.zeros(len(dt), dtype=np.int32),
        box=dt.box,
        score=dt.score,
        order=tie_rank,
        has_box=dt.has_box,
        box_format=dt.box_format,
        segmentation=dt.segmentation,
        source=dt.source,
        warnings=dt.warnings,
        keypoints=dt.keypoints,
        area=dt.area,
        rotated=dt.rotated,
    )
    return pooled_gt, pooled_dt


def pool_ground_truth(
    gt: GroundTruth,
    *,
    category_id: int = POOLED_CATEGORY_ID,
    category_name: str = POOLED_CATEGORY_NAME,
) -> GroundTruth:
    """The ground-truth half of :func:`pool_categories` (rows reordered stably by category).

    Examples
    --------
    >>> from deteval.io import load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1}, {"id": 2}],
    ...     "annotations": [{"id": i, "image_id": 1, "category_id": c, "bbox": [0, 0, 1, 1],
    ...                      "area": 1, "iscrowd": 0} for i, c in ((7, 2), (8, 1))]})
    >>> pool_ground_truth(g).annotation_id.tolist()
    [8, 7]
    """
    gt_rows = pooled_rows(gt)
    gt_segm = None if gt.segmentation is None else tuple(gt.segmentation[i] for i in gt_rows)
    return GroundTruth(
        image_id=gt.image_id,
        image_name=gt.image_name,
        image_width=gt.image_width,
        image_height=gt.image_height,
        image_crowd_index=gt.image_crowd_index,
        category_id=np.array([category_id], dtype=np.int64),
        category_name=(category_name,),
        annotation_id=gt.annotation_id[gt_rows],
        image=gt.image[gt_rows],
        category=np.zeros(len(gt), dtype=np.int64),
        box=gt.box[gt_rows],
        area=gt.area[gt_rows],
        is_crowd=gt.is_crowd[gt_rows],
        is_difficult=gt.is_difficult[gt_rows],
        is_ignore=gt.is_ignore[gt_rows],
        box_format=gt.box_format,
        segmentation=gt_segm,
        source=gt.source,
        warnings=gt.warnings,
        # GroundTruth.__post_init__ fills a missing is_group_of with False: never None on an instance.
        is_group_of=cast(np.ndarray, gt.is_group_of)[gt_rows],
        keypoints=None if gt.keypoints is None else gt.keypoints[gt_rows],
        num_keypoints=None if gt.num_keypoints is None else gt.num_keypoints[gt_rows],
        rotated=None if gt.rotated is None else gt.rotated[gt_rows],
        # federated (LVIS) labels and category frequencies name categories: none is left.
        has_image_ids=gt.has_image_ids,
    )


def pooled_rows(gt: GroundTruth) -> np.ndarray:
    """Row ``i`` of :func:`pool_ground_truth`'s result is row ``pooled_rows(gt)[i]`` of ``gt``.

    Examples
    --------
    >>> from deteval.io import load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1}, {"id": 2}],
    ...     "annotations": [{"id": i, "image_id": 1, "category_id": c, "bbox": [0, 0, 1, 1],
    ...                      "area": 1, "iscrowd": 0} for i, c in ((7, 2), (8, 1))]})
    >>> pooled_rows(g).tolist()
    [1, 0]
    """
    return np.lexsort((np.arange(len(gt)), gt.category))


def is_pooled(gt: GroundTruth) -> bool:
    """Whether ``gt`` already has the single pooled category (pooling it again changes nothing)."""
    return gt.n_classes == 1 and int(gt.category_id[0]) == POOLED_CATEGORY_ID


def ground_truth_for(gt: GroundTruth, protocol: Protocol) -> GroundTruth:
    """``gt`` as ``protocol`` scores it: pooled when ``protocol.class_agnostic``, else itself.

    Pass this to code that reads a result's table next to its ground truth (bootstrap).
    """
    if getattr(protocol, "class_agnostic", False) and not is_pooled(gt):
        return pool_ground_truth(gt)
    return gt


def pooled_for(gt: GroundTruth, dt: Detections, protocol: Protocol) -> tuple[GroundTruth, Detections]:
    """``(gt, dt)`` as ``protocol`` scores them: pooled when ``protocol.class_agnostic``.

    Values already pooled (:func:`is_pooled`) are returned unchanged, the same objects, so masks
    prepared from them stay valid.
    """
    if getattr(protocol, "class_agnostic", False) and not is_pooled(gt):
        return pool_categories(gt, dt)
    return gt, dt
