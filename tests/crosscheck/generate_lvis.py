"""Random federated (LVIS-style) datasets for cross-checks against lvis-api's ``LVISEval``.

Each image lists negative categories (verified absent) and not-exhaustive categories (some
instances unannotated); categories carry all three frequencies r / c / f; some images get more
than 300 detections (lvis-api's per-image cap across classes), with tied scores at the cut;
detections fall on annotated, negative and unverified classes; GT areas sit on the range bounds;
some annotations carry an explicit ``ignore``.
"""

from __future__ import annotations

import numpy as np


def generate_lvis(
    seed: int, *, n_images: int = 8, n_categories: int = 9, many: bool | None = None
) -> tuple[dict, list]:
    """(ground truth dict, results list) with bbox results."""
    rng = np.random.default_rng(seed)
    many = bool(seed % 3 == 0) if many is None else many
    cat_ids = sorted(int(c) for c in rng.choice(np.arange(1, 40), n_categories, replace=False))
    frequencies = ["r", "c", "f"] * (n_categories // 3 + 1)
    categories = [{"id": c, "name": f"c{c}", "frequency": frequencies[i]} for i, c in enumerate(cat_ids)]
    images, anns, dets = [], [], []
    for i in range(n_images):
        image_id = int(i * 3 + 1)
        present = [c for c in cat_ids if rng.random() < 0.35]
        absent = [c for c in cat_ids if c not in present]
        neg = [c for c in absent if rng.random() < 0.5]
        not_exhaustive = [c for c in present if rng.random() < 0.3]
        images.append(
            {
                "id": image_id,
                "width": 640,
                "height": 480,
                "neg_category_ids": neg,
                "not_exhaustive_category_ids": not_exhaustive,
            }
        )
        boxes_by_cat = {}
        for c in present:
            boxes = []
            for _ in range(int(rng.integers(1, 5))):
                w, h = rng.uniform(4, 200, 2)
                x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
                area = float(rng.choice([1024.0, 9216.0])) if rng.random() < 0.1 else round(float(w * h), 3)
                ann = {
                    "id": len(anns) + 1,
                    "image_id": image_id,
                    "category_id": c,
                    "bbox": [round(float(v), 2) for v in (x, y, w, h)],
                    "area": area,
                }
                if rng.random() < 0.05:
                    ann["ignore"] = 1
                anns.append(ann)
                boxes.append((x, y, w, h))
            boxes_by_cat[c] = boxes
        n_det = int(rng.integers(310, 360)) if many and i % 2 == 0 else int(rng.integers(0, 40))
        for _ in range(n_det):
            c = int(rng.choice(cat_ids))
            if c in boxes_by_cat and rng.random() < 0.6:
                x, y, w, h = boxes_by_cat[c][int(rng.integers(len(boxes_by_cat[c])))]
                j = rng.normal(size=4) * rng.uniform(0, 0.3) * np.array([w, h, w, h])
                box = [x + j[0], y + j[1], max(w + j[2], 1.0), max(h + j[3], 1.0)]
            else:
                w, h = rng.uniform(4, 200, 2)
                box = [rng.uniform(0, 600), rng.uniform(0, 440), w, h]
            score = (
                float(rng.choice([0.1, 0.3, 0.5])) if rng.random() < 0.3 else round(float(rng.random()), 3)
            )
            dets.append(
                {
                    "image_id": image_id,
                    "category_id": c,
                    "bbox": [round(float(v), 2) for v in box],
                    "score": score,
                }
            )
    order = rng.permutation(len(dets))
    return ({"images": images, "annotations": anns, "categories": categories}, [dets[k] for k in order])
