"""Synthetic datasets for the plot and report tests: many classes, nasty class names."""

from __future__ import annotations

import numpy as np

NASTY = [
    "<script>alert(1)</script>",
    "a \"quoted\" & 'single'",
    "tab\there\x07bell",
    "$x^2$ math",
    "https://example.com/cls",
    "ünïcødé 猫",
]


def synthetic(n_classes: int, *, n_images: int | None = None, seed: int = 0, nasty: bool = True) -> tuple:
    """(gt dict, detections list) of a synthetic dataset.

    Every class has ground truth; detections are jittered copies of it (true positives, at
    varying quality), duplicates and background boxes.
    """
    rng = np.random.default_rng(seed)
    n_images = n_images or max(20, n_classes // 2)
    names = [f"class_{k:04d}" for k in range(n_classes)]
    if nasty:
        for i, name in enumerate(NASTY[:n_classes]):
            names[i] = name
    categories = [{"id": k + 1, "name": names[k]} for k in range(n_classes)]
    images = [{"id": i + 1, "width": 640, "height": 480} for i in range(n_images)]
    annotations, detections = [], []
    per_class = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, size=n_classes * 2)])
    image_of = rng.integers(0, n_images, size=len(per_class))
    skill = rng.uniform(0.2, 0.95, size=n_classes)
    for a, (k, i) in enumerate(zip(per_class, image_of)):
        w, h = rng.uniform(8, 200, size=2)
        x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
        annotations.append(
            {
                "id": a + 1,
                "image_id": int(i) + 1,
                "category_id": int(k) + 1,
                "bbox": [x, y, w, h],
                "area": w * h,
                "iscrowd": 0,
            }
        )
        if rng.random() < skill[k]:
            jitter = rng.normal(0, 0.08 * min(w, h), size=4) * (1.2 - skill[k])
            detections.append(
                {
                    "image_id": int(i) + 1,
                    "category_id": int(k) + 1,
                    "bbox": [x + jitter[0], y + jitter[1], w + jitter[2], h + jitter[3]],
                    "score": float(np.clip(rng.normal(0.4 + 0.5 * skill[k], 0.15), 0.01, 1.0)),
                }
            )
    for _ in range(len(annotations) // 2):
        w, h = rng.uniform(8, 150, size=2)
        detections.append(
            {
                "image_id": int(rng.integers(1, n_images + 1)),
                "category_id": int(rng.integers(1, n_classes + 1)),
                "bbox": [float(rng.uniform(0, 400)), float(rng.uniform(0, 300)), w, h],
                "score": float(rng.uniform(0.01, 0.7)),
            }
        )
    gt = {"images": images, "categories": categories, "annotations": annotations}
    return gt, detections
