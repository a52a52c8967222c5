"""Bootstrap resamples rebuilt as datasets (shared by the beyond-AP bootstrap tests).

A resample weighs each image by how often it was drawn; :func:`resampled` builds that resample
literally -- a COCO dataset in which every drawn image appears as many times as drawn, with its
objects and detections -- so the point functions can score it.
"""

from __future__ import annotations

import copy
import random
import warnings

import numpy as np

import deteval
from tests.crosscheck.generate import generate


def dataset(seed: int, *, max_images: int = 8, max_classes: int = 3) -> tuple[dict, list]:
    """A generated dataset whose detection scores are distinct (ties would reorder copies)."""
    gt, dt = generate(seed, max_images=max_images, max_classes=max_classes)
    rng = random.Random(seed)
    scores = rng.sample(range(1, 10 * len(dt) + 10), len(dt))
    for record, s in zip(dt, scores):
        record["score"] = s / (10 * len(dt) + 10)
    return gt, dt


def scored(gt: dict, dt: list, protocol: str = "coco"):  # noqa: ANN201 - (GroundTruth, Detections, EvalResult)
    """Loaded and scored, warnings (a class without ground truth) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = deteval.load_ground_truth(gt)
        d = deteval.load_detections(dt, g)
        return g, d, deteval.evaluate(g, d, protocol)


def resampled(gt: dict, dt: list, weight: np.ndarray, image_ids: np.ndarray) -> tuple[dict, list]:
    """The resample as a dataset: image ``i`` drawn ``w`` times appears ``w`` times (new ids)."""
    out = copy.deepcopy(gt)
    out["images"], out["annotations"], results = [], [], []
    ann_id = 1
    for image_id, w in zip(image_ids.tolist(), weight.tolist()):
        record = next(r for r in gt["images"] if r["id"] == image_id)
        for copy_index in range(w):
            new_id = image_id * 1000 + copy_index  # copies adjacent in image-id order
            out["images"].append({**record, "id": new_id})
            for ann in gt["annotations"]:
                if ann["image_id"] == image_id:
                    out["annotations"].append({**ann, "id": ann_id, "image_id": new_id})
                    ann_id += 1
            results += [{**r, "image_id": new_id} for r in dt if r["image_id"] == image_id]
    return out, results
