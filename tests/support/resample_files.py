"""The explicit files of a bootstrap resample (deteval.stats' definition of a resample's score).

A resample is image weights ``w``: image ``i`` counted ``w[i]`` times. Its score is that of the
files in which each image is repeated ``w[i]`` times, the copies adjacent in image order, each
annotation repeated per copy and each result line repeated in place (the copies of a detection
adjacent in the results file): deteval/stats/__init__.py, "Semantics of a resample".
"""

from __future__ import annotations

import copy

import numpy as np


def replicate_files(gt_doc: dict, results: list, image_ids, weights) -> tuple:
    """``(gt_doc, results)`` of the resample ``weights`` (one per image, in ``image_ids`` order).

    ``image_ids``: the loaded ground truth's ``image_id`` column (its image order). New image
    and annotation ids are 1, 2, ... in that order; nothing of the inputs is changed.
    """
    weights = np.asarray(weights, dtype=np.int64)
    by_id = {int(im["id"]): im for im in gt_doc["images"]}
    new_ids: dict[int, list] = {}
    images = []
    for image_id, w in zip((int(i) for i in image_ids), weights):
        new_ids[image_id] = []
        for _ in range(int(w)):
            record = dict(copy.deepcopy(by_id[image_id]), id=len(images) + 1)
            new_ids[image_id].append(record["id"])
            images.append(record)
    annotations = []
    for image_id in (int(i) for i in image_ids):
        for new in new_ids[image_id]:
            for ann in gt_doc["annotations"]:
                if int(ann["image_id"]) == image_id:
                    annotations.append(dict(copy.deepcopy(ann), id=len(annotations) + 1, image_id=new))
    lines = [
        dict(copy.deepcopy(line), image_id=new) for line in results for new in new_ids[int(line["image_id"])]
    ]
    return {**gt_doc, "images": images, "annotations": annotations}, lines
