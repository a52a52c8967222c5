"""Shared test helpers (moved from tests/crosscheck/test_boundary_vs_faster_coco_eval.py, which imports them from here)."""

from __future__ import annotations

import numpy as np
from pycocotools import mask as mask_utils  # noqa: E402


def _rle(mask: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode()}


def _shape(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A mask with maybe a hole, a thin arm, a ring, or a side on the image border."""
    m = np.zeros((h, w), dtype=bool)
    y, x = int(rng.integers(0, h - 20)), int(rng.integers(0, w - 20))
    bh, bw = int(rng.integers(8, 90)), int(rng.integers(8, 90))
    if rng.random() < 0.15:
        x = 0  # on the border: the border counts as outside
    m[y : y + bh, x : x + bw] = True
    kind = rng.integers(0, 4)
    if kind == 0:  # a hole
        m[y + bh // 4 : y + bh // 2, x + bw // 4 : x + bw // 2] = False
    elif kind == 1:  # a thin arm, 1 to 3 px wide
        t = int(rng.integers(1, 4))
        m[y + bh // 2 : y + bh // 2 + t, x : min(w, x + bw + int(rng.integers(5, 60)))] = True
    elif kind == 2:  # a ring
        m[y + 3 : y + bh - 3, x + 3 : x + bw - 3] = False
    return m


def generate_boundary(seed: int) -> tuple[dict, list]:
    """Ground truth and results as RLE masks (results without bbox: areas from the masks)."""
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(100, 260)), int(rng.integers(100, 320))
    images = [{"id": i + 1, "width": w, "height": h, "file_name": f"{i + 1}.png"} for i in range(5)]
    anns: list = []
    dets: list = []
    for image in images:
        for cat in (1, 2):
            for _ in range(int(rng.integers(0, 5))):
                m = _shape(rng, h, w)
                rle = _rle(m)
                anns.append(
                    {
                        "id": len(anns) + 1,
                        "image_id": image["id"],
                        "category_id": cat,
                        "segmentation": rle,
                        "area": float(m.sum()),
                        "bbox": [float(v) for v in mask_utils.toBbox(rle)],
                        "iscrowd": int(rng.random() < 0.1),
                    }
                )
                for _ in range(int(rng.integers(0, 3))):
                    if rng.random() < 0.7:
                        d = np.roll(m, (int(rng.integers(-5, 6)), int(rng.integers(-5, 6))), axis=(0, 1))
                        if rng.random() < 0.4:
                            d = d & ~_shape(rng, h, w)
                    else:
                        d = _shape(rng, h, w)
                    if d.any():
                        score = (
                            float(rng.choice([0.5, 0.25]))
                            if rng.random() < 0.2
                            else round(float(rng.random()), 4)
                        )
                        dets.append(
                            {
                                "image_id": image["id"],
                                "category_id": cat,
                                "segmentation": _rle(d),
                                "score": score,
                            }
                        )
    categories = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    return {"images": images, "annotations": anns, "categories": categories}, dets
