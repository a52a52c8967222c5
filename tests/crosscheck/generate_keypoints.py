"""Random COCO keypoint datasets for cross-checks against pycocotools (``iouType="keypoints"``).

Each dataset has people (and, in some, a second keypoint category) with the 17 COCO keypoints:
visibility flags 0 / 1 / 2 mixed, ground truth with no labelled keypoint (``num_keypoints`` 0,
ignored by pycocotools; its OKS uses the "outside the doubled box" distance), crowd regions,
tied scores, images with more than 20 detections (pycocotools' maxDets), GT areas exactly on the
range bounds 32² and 96², integer and float coordinates, and results with or without a bbox
(pycocotools takes a result's area from its bbox, or from the keypoints' extent).
"""

from __future__ import annotations

import numpy as np

N_KEYPOINTS = 17


def _keypoints(
    rng: np.random.Generator, cx: float, cy: float, scale: float, *, labelled: bool, integer: bool
) -> list:
    out = []
    for _ in range(N_KEYPOINTS):
        v = int(rng.integers(0, 3)) if labelled else 0
        x, y = cx + rng.normal() * scale, cy + rng.normal() * scale
        if integer:
            x, y = float(round(x)), float(round(y))
        if v == 0 and rng.random() < 0.7:
            x = y = 0.0  # COCO writes unlabelled keypoints as (0, 0, 0)
        out += [int(x) if integer else round(x, 2), int(y) if integer else round(y, 2), v]
    return out


def generate_keypoints(
    seed: int, *, n_images: int = 6, n_categories: int = 1, with_bbox: str = "mixed"
) -> tuple[dict, list]:
    """(ground truth dict, results list); ``with_bbox``: "all", "none" or "mixed" (per record)."""
    rng = np.random.default_rng(seed)
    integer = bool(seed % 3 == 0)
    images = [
        {"id": int(i), "width": 640, "height": 480, "file_name": f"{i}.jpg"}
        for i in rng.choice(np.arange(1, 10 * n_images), n_images, replace=False)
    ]
    categories = [{"id": c + 1, "name": f"kp{c + 1}"} for c in range(n_categories)]
    anns: list = []
    dets: list = []
    boundary_areas = [32.0**2, 96.0**2, 1024.0, 9216.0]
    for image in images:
        for cat in categories:
            n_gt = int(rng.integers(0, 6))
            people = []
            for _ in range(n_gt):
                cx, cy = rng.uniform(40, 600), rng.uniform(40, 440)
                w, h = rng.uniform(8, 200), rng.uniform(8, 300)
                labelled = rng.random() > 0.15
                kp = _keypoints(rng, cx, cy, max(w, h) / 5, labelled=labelled, integer=integer)
                area = (
                    float(rng.choice(boundary_areas)) if rng.random() < 0.15 else round(float(w * h * 0.6), 3)
                )
                crowd = int(rng.random() < 0.08)
                anns.append(
                    {
                        "id": len(anns) + 1,
                        "image_id": image["id"],
                        "category_id": cat["id"],
                        "bbox": [round(cx - w / 2, 2), round(cy - h / 2, 2), round(w, 2), round(h, 2)],
                        "area": area,
                        "iscrowd": crowd,
                        "keypoints": kp,
                        "num_keypoints": sum(1 for v in kp[2::3] if v > 0),
                    }
                )
                people.append((kp, w, h))
            n_det = int(rng.integers(0, 6)) if rng.random() > 0.15 else int(rng.integers(21, 30))
            for _ in range(n_det):
                if people and rng.random() < 0.75:
                    kp, w, h = people[int(rng.integers(len(people)))]
                    noise = rng.uniform(0.5, 25)
                    base = np.array(kp, dtype=float).reshape(-1, 3)
                    if (base[:, 2] == 0).all():
                        base[:, :2] = [rng.uniform(0, 640), rng.uniform(0, 480)]
                    xy = base[:, :2] + rng.normal(size=(N_KEYPOINTS, 2)) * noise
                else:
                    xy = np.stack([rng.uniform(0, 640, N_KEYPOINTS), rng.uniform(0, 480, N_KEYPOINTS)], 1)
                    xy = xy * rng.uniform(0.1, 1) + rng.uniform(0, 200)
                flat = []
                for x, y in xy:
                    flat += [round(float(x), 2), round(float(y), 2), round(float(rng.random()), 3)]
                score = (
                    float(rng.choice([0.5, 0.25, 0.75]))
                    if rng.random() < 0.3
                    else round(float(rng.random()), 4)
                )
                record = {
                    "image_id": image["id"],
                    "category_id": cat["id"],
                    "keypoints": flat,
                    "score": score,
                }
                if with_bbox == "all" or (with_bbox == "mixed" and rng.random() < 0.5):
                    x0, y0 = xy.min(axis=0)
                    x1, y1 = xy.max(axis=0)
                    record["bbox"] = [
                        round(float(x0), 2),
                        round(float(y0), 2),
                        round(float(x1 - x0) * 1.1, 2),
                        round(float(y1 - y0) * 1.1, 2),
                    ]
                dets.append(record)
    order = rng.permutation(len(dets))
    return ({"images": images, "annotations": anns, "categories": categories}, [dets[i] for i in order])
