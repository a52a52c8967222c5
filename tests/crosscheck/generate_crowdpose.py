"""Random CrowdPose-style keypoint datasets for cross-checks against xtcocotools (``keypoints_crowd``).

Each dataset has people with CrowdPose's 14 keypoints: crowded images (many overlapping people),
visibility flags 0 / 1 / 2 mixed with ``num_keypoints`` counting only the visible ones (v = 2,
as CrowdPose writes it: a person with labelled but no visible keypoint is ignored), crowd
regions, images spread over the crowd-index bands (easy < 0.2, medium < 0.8, hard, and values
exactly on the bounds), results whose keypoints all have score 0 (xtcocotools drops them),
tied scores, and images with more than 20 results (maxDets 20).
"""

from __future__ import annotations

import numpy as np

N_KEYPOINTS = 14


def generate_crowdpose(seed: int, *, n_images: int = 8, with_bbox: bool = False) -> tuple[dict, list]:
    """(ground truth dict, results list)."""
    rng = np.random.default_rng(seed)
    crowd_values = [0.0, 0.1, 0.2, 0.5, 0.79, 0.8, 0.95, 1.0]
    images = [
        {
            "id": int(i),
            "width": 640,
            "height": 480,
            "file_name": f"{i}.jpg",
            "crowdIndex": float(rng.choice(crowd_values))
            if rng.random() < 0.5
            else round(float(rng.random()), 3),
        }
        for i in rng.choice(np.arange(1, 10 * n_images), n_images, replace=False)
    ]
    anns: list = []
    dets: list = []
    for image in images:
        crowded = rng.random() < 0.5
        n_gt = int(rng.integers(3, 9)) if crowded else int(rng.integers(0, 4))
        centre = rng.uniform(150, 450), rng.uniform(120, 330)
        people = []
        for _ in range(n_gt):
            spread = 40 if crowded else 200
            cx, cy = centre[0] + rng.normal() * spread, centre[1] + rng.normal() * spread
            w, h = rng.uniform(20, 160), rng.uniform(40, 260)
            kp = []
            is_occluded = rng.random() < 0.12  # labelled keypoints, none visible: ignored
            for _ in range(N_KEYPOINTS):
                v = int(rng.choice([0, 1, 2], p=[0.5, 0.5, 0.0] if is_occluded else [0.25, 0.25, 0.5]))
                x, y = cx + rng.normal() * w / 4, cy + rng.normal() * h / 4
                if v == 0:
                    x = y = 0.0
                kp += [round(float(x), 2), round(float(y), 2), v]
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": image["id"],
                    "category_id": 1,
                    "bbox": [round(cx - w / 2, 2), round(cy - h / 2, 2), round(w, 2), round(h, 2)],
                    "area": round(float(rng.uniform(1, 5e4)), 2),  # not read under use_area=False
                    "iscrowd": int(rng.random() < 0.07),
                    "keypoints": kp,
                    "num_keypoints": sum(1 for v in kp[2::3] if v == 2),
                }
            )
            people.append(np.array(kp, dtype=float).reshape(-1, 3))
        n_det = int(rng.integers(0, 2 * n_gt + 3)) if rng.random() > 0.15 else int(rng.integers(21, 28))
        for _ in range(n_det):
            if people and rng.random() < 0.8:
                base = people[int(rng.integers(len(people)))]
                xy = np.where(base[:, 2:] > 0, base[:, :2], rng.uniform(100, 400, (N_KEYPOINTS, 2)))
                xy = xy + rng.normal(size=(N_KEYPOINTS, 2)) * rng.uniform(0.5, 20)
            else:
                xy = np.stack([rng.uniform(0, 640, N_KEYPOINTS), rng.uniform(0, 480, N_KEYPOINTS)], 1)
            kp_scores = np.round(rng.random(N_KEYPOINTS), 3)
            if rng.random() < 0.08:
                kp_scores[:] = 0.0  # xtcocotools drops a result with no keypoint score > 0
            flat = []
            for (x, y), s in zip(xy, kp_scores, strict=True):
                flat += [round(float(x), 2), round(float(y), 2), float(s)]
            score = float(rng.choice([0.5, 0.25])) if rng.random() < 0.3 else round(float(rng.random()), 4)
            record = {"image_id": image["id"], "category_id": 1, "keypoints": flat, "score": score}
            if with_bbox:
                x0, y0 = xy.min(axis=0)
                x1, y1 = xy.max(axis=0)
                record["bbox"] = [
                    round(float(x0), 2),
                    round(float(y0), 2),
                    round(float(x1 - x0), 2),
                    round(float(y1 - y0), 2),
                ]
            dets.append(record)
    order = rng.permutation(len(dets))
    gt = {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "person"}]}
    return gt, [dets[i] for i in order]
