"""Generated rotated-box datasets with the hard cases of oriented-box IoU.

Each dataset has images with oriented ground truth and detections, as ``xywhr`` rows
(cx, cy, w, h, angle in radians) and as their 4 corners, with:

* angles at 0, pi/2, pi, -pi/2 and next to the wrap (pi - 1e-9, 1e-9);
* detections that are their ground truth's rectangle written with w and h swapped and the angle
  turned by pi/2 (the same rectangle, another parametrisation);
* near-parallel edges (a detection turned by 1e-7 from its ground truth);
* tiny boxes (0.5 pixels), degenerate boxes (a side of 0), crowded images (20 boxes on top of
  each other), difficult objects, label lines without the difficult field;
* distinct scores (the DOTA devkit sorts with an unstable quicksort: ties are not reproducible).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from deteval.geometry.rotated import corners_from_xywhr

CLASSES = ("plane", "ship", "small-vehicle")
_SPECIAL_ANGLES = np.array([0.0, np.pi / 2, np.pi, -np.pi / 2, np.pi - 1e-9, 1e-9, np.pi / 4])


@dataclass(frozen=True)
class RotatedDataset:
    """One generated dataset: per image, ground truth and detections as plain arrays."""

    image_names: tuple
    gt_xywhr: dict  # image -> (n, 5)
    gt_class: dict  # image -> (n,) int
    gt_difficult: dict  # image -> (n,) bool
    dt_xywhr: dict
    dt_class: dict
    dt_score: dict


def _boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    centre = rng.uniform(0, 200, (n, 2))
    size = np.exp(rng.uniform(np.log(0.5), np.log(60), (n, 2)))
    angle = np.where(rng.random(n) < 0.4, rng.choice(_SPECIAL_ANGLES, n), rng.uniform(-np.pi, np.pi, n))
    out = np.column_stack([centre, size, angle])
    degenerate = rng.random(n) < 0.03
    out[degenerate, 3] = 0.0
    return out


def generate_rotated(seed: int, n_images: int = 8) -> RotatedDataset:
    """A dataset of ``n_images`` images (image 0 crowded), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    names = tuple(f"P{seed:03d}_{i:02d}" for i in range(n_images))
    gx, gc, gd, dx, dc, ds = {}, {}, {}, {}, {}, {}
    for i, name in enumerate(names):
        n = int(rng.integers(0, 9))
        g = _boxes(rng, n)
        if i == 0:  # crowded: 20 boxes on top of each other
            base = _boxes(rng, 1)
            g = np.repeat(base, 20, axis=0)
            g[:, :2] += rng.normal(0, 1.5, (20, 2))
            g[:, 4] += rng.normal(0, 0.1, 20)
            n = 20
        cls = rng.integers(0, len(CLASSES), n)
        det, det_cls = [], []
        for k in range(n):
            r = rng.random()
            if r < 0.15:
                continue
            d = g[k].copy()
            kind = rng.random()
            if kind < 0.15:  # same rectangle, w and h swapped, angle turned by pi/2
                d = np.array([d[0], d[1], d[3], d[2], d[4] + np.pi / 2])
            elif kind < 0.3:  # near-parallel edges
                d[4] += 1e-7
            else:
                d[:2] += rng.normal(0, max(d[2], d[3], 1.0) * 0.1, 2)
                d[2:4] *= rng.uniform(0.8, 1.2, 2)
                d[4] += rng.normal(0, 0.15)
            det.append(d)
            det_cls.append(cls[k] if rng.random() > 0.05 else rng.integers(0, len(CLASSES)))
        n_fp = int(rng.integers(0, 4))
        det += list(_boxes(rng, n_fp))
        det_cls += list(rng.integers(0, len(CLASSES), n_fp))
        gx[name], gc[name] = g, cls
        gd[name] = rng.random(n) < 0.1
        dx[name] = np.array(det).reshape(-1, 5)
        dc[name] = np.array(det_cls, dtype=np.int64)
    # distinct scores over the whole dataset
    total = sum(len(v) for v in dx.values())
    scores = rng.permutation(total) / max(total, 1) * 0.98 + 0.01
    start = 0
    for name in names:
        ds[name] = scores[start : start + len(dx[name])]
        start += len(dx[name])
    return RotatedDataset(names, gx, gc, gd, dx, dc, ds)


def write_dota(folder: str | os.PathLike, data: RotatedDataset) -> tuple[str, str, str]:
    """Write ``data`` as a DOTA root, a Task1 results folder and an image-set file."""
    root = os.path.join(folder, "dota")
    labels = os.path.join(root, "labelTxt")
    results = os.path.join(folder, "results")
    os.makedirs(labels)
    os.makedirs(results)
    lines: dict[str, list[str]] = {c: [] for c in CLASSES}
    for i, name in enumerate(data.image_names):
        rows = ["imagesource:GoogleEarth", "gsd:0.146343590398"] if i % 2 else []
        for quad, c, diff in zip(
            corners_from_xywhr(data.gt_xywhr[name]), data.gt_class[name], data.gt_difficult[name], strict=True
        ):
            coords = " ".join(repr(float(v)) for v in quad)
            tail = f" {int(diff)}" if diff or i % 3 else ""
            rows.append(f"{coords} {CLASSES[c]}{tail}")
        with open(os.path.join(labels, f"{name}.txt"), "w") as f:
            f.write("".join(r + "\n" for r in rows))
        for quad, c, s in zip(
            corners_from_xywhr(data.dt_xywhr[name]), data.dt_class[name], data.dt_score[name], strict=True
        ):
            lines[CLASSES[c]].append(f"{name} {float(s)!r} " + " ".join(repr(float(v)) for v in quad))
    for c, rows in lines.items():
        with open(os.path.join(results, f"Task1_{c}.txt"), "w") as f:
            f.write("".join(r + "\n" for r in rows))
    image_set = os.path.join(folder, "imageset.txt")
    with open(image_set, "w") as f:
        f.write("".join(n + "\n" for n in data.image_names))
    return root, results, image_set
