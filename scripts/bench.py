r"""Benchmark deteval against pycocotools and faster-coco-eval on COCO-like data.

The script generates seeded, COCO-shaped datasets (80 COCO categories with their
real ids, ~7.3 objects per image with a long tail, ~1% crowd, COCO's object-size
mix of ~41% small / 34% medium / 24% large by the ``area`` field, ~640x480 images,
star-shaped polygon masks, up to 100 detections per image mixing jittered true
positives, duplicates, wrong-class and background false positives, scores that
rise with localisation quality and exact score ties). The files are cached under
``--cache`` so that later runs reuse them.

Each tool then runs in a fresh Python process (``scripts/_bench_worker.py``), once
per repetition, and the medians are reported:

* ``deteval``      ``deteval.evaluate(gt, dt, protocol="coco")``; for segm the coco
                   protocol with ``iou_type="segm"`` and ``mask_iou="raster"``
                   (pycocotools parity) and ``mask_iou="exact"`` (shapely polygons).
                   By default the load is timed apart with the public loaders
                   ``deteval.load_ground_truth`` / ``load_detections`` (what
                   ``evaluate`` calls on paths); ``--deteval-call paths`` times
                   ``deteval.evaluate(gt_path, dt_path)`` as one call;
* ``pycocotools``  ``COCO``, ``loadRes``, ``COCOeval`` evaluate/accumulate/summarize;
* ``fcoco``        faster-coco-eval's ``COCO`` and ``COCOeval_faster``;
* ``orjson``       the floor: reading and parsing both JSON files with orjson.

Columns: ``load`` (parsing + indexing, measured in the child; "-" when the tool
loads inside its evaluate call), ``eval`` (evaluation, summary included),
``total`` (wall time of the whole child process, interpreter start and imports
included: what a user waits for), ``peak RSS`` (the child's own high-water mark,
``VmHWM``; ``ru_maxrss`` is recorded in the JSON too, but Linux carries it over
``execve`` from the spawning process, so it would show this script's own peak),
``x deteval`` (total / deteval's total; for segm the raster mode is the baseline)
and ``x floor`` (total / the orjson floor's total).

The 12 summary stats of every tool are compared: deteval (protocol "coco", and
segm with ``mask_iou="raster"``) must equal pycocotools exactly on this data (no
annotation has id 0 and none carries an explicit ``ignore`` flag, so the two
pycocotools bugs deteval fixes do not fire); the others are reported as the
largest absolute difference.

Usage
-----
Quick check (500 and 5,000 images, boxes, 3 repetitions)::

    python scripts/bench.py --sizes 500,5000 --iou-type bbox --repeat 3

The full benchmark (pycocotools at 20,000 images takes minutes per run)::

    python scripts/bench.py --sizes 500,5000,20000 --iou-type bbox,segm --repeat 3 \\
        --json bench.json

Skip pycocotools, give deteval two worker processes, print a Markdown table::

    python scripts/bench.py --sizes 20000 --tools deteval,fcoco,orjson --workers 2 \\
        --format markdown

Only generate the data and print its statistics::

    python scripts/bench.py --sizes 500,5000,20000 --stats --tools none

Every workload against every peer that has it (bbox at 5k / 20k / 50k images, segm polygons
and RLE, keypoints, LVIS, TIDE, the training-loop evaluators, report, bootstrap and import
time; scripts/bench_suite.py says which tools run on which), as one Markdown table::

    python scripts/bench.py --suite --quick --repeat 1          # a few minutes
    python scripts/bench.py --suite --repeat 3 --json suite.json  # the full run

Notes
-----
Nothing here is asserted by tests (docs/benchmarks.md): timings depend on the
machine. Run it on an otherwise idle machine; the header records what it ran on.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
from _bench_common import SUITE_PEERS, SUITE_WORKLOADS

GENERATOR_VERSION = 2
WORKER = Path(__file__).resolve().with_name("_bench_worker.py")
REPO_ROOT = Path(__file__).resolve().parent.parent
ALL_TOOLS = ("deteval", "pycocotools", "fcoco", "orjson")
METRIC_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
SIZE_EDGES = (32.0**2, 96.0**2)  # COCO small / medium / large bounds on `area`
SIZE_MIX = (0.415, 0.345, 0.24)  # COCO paper: 41% small, 34% medium, 24% large
CROWD_SIZE_MIX = (0.05, 0.25, 0.70)  # crowd regions are mostly large
MAX_DETS_PER_IMAGE = 100

# COCO 2017 categories: id, name, supercategory (the 80 ids are not contiguous).
COCO_CATEGORIES = tuple(
    (int(i), n.replace("_", " "), s)
    for i, n, s in re.findall(
        r"(\d+) (\S+) (\S+)",
        """
    1 person person        2 bicycle vehicle      3 car vehicle          4 motorcycle vehicle
    5 airplane vehicle     6 bus vehicle          7 train vehicle        8 truck vehicle
    9 boat vehicle         10 traffic_light outdoor 11 fire_hydrant outdoor 13 stop_sign outdoor
    14 parking_meter outdoor 15 bench outdoor     16 bird animal         17 cat animal
    18 dog animal          19 horse animal        20 sheep animal        21 cow animal
    22 elephant animal     23 bear animal         24 zebra animal        25 giraffe animal
    27 backpack accessory  28 umbrella accessory  31 handbag accessory   32 tie accessory
    33 suitcase accessory  34 frisbee sports      35 skis sports         36 snowboard sports
    37 sports_ball sports  38 kite sports         39 baseball_bat sports 40 baseball_glove sports
    41 skateboard sports   42 surfboard sports    43 tennis_racket sports 44 bottle kitchen
    46 wine_glass kitchen  47 cup kitchen         48 fork kitchen        49 knife kitchen
    50 spoon kitchen       51 bowl kitchen        52 banana food         53 apple food
    54 sandwich food       55 orange food         56 broccoli food       57 carrot food
    58 hot_dog food        59 pizza food          60 donut food          61 cake food
    62 chair furniture     63 couch furniture     64 potted_plant furniture 65 bed furniture
    67 dining_table furniture 70 toilet furniture 72 tv electronic       73 laptop electronic
    74 mouse electronic    75 remote electronic   76 keyboard electronic 77 cell_phone electronic
    78 microwave appliance 79 oven appliance      80 toaster appliance   81 sink appliance
    82 refrigerator appliance 84 book indoor      85 clock indoor        86 vase indoor
    87 scissors indoor     88 teddy_bear indoor   89 hair_drier indoor   90 toothbrush indoor
    """,
    )
)


# ----------------------------------------------------------------------------------------------
# Dataset files
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DatasetFiles:
    """Paths of one cached dataset: GT, box results, polygon results, generator metadata."""

    root: Path
    n_images: int

    @property
    def gt(self) -> Path:
        return self.root / "instances.json"

    @property
    def meta(self) -> Path:
        return self.root / "meta.json"

    def dt(self, iou_type: str) -> Path:
        """Results file for an IoU type (boxes only, or polygons plus boxes)."""
        return self.root / f"results_{iou_type}.json"

    def complete(self) -> bool:
        """Whether every file exists (files are renamed into place when fully written)."""
        return all(p.exists() for p in (self.gt, self.meta, self.dt("bbox"), self.dt("segm")))


def dataset_files(cache: Path, n_images: int, seed: int) -> DatasetFiles:
    """Where the dataset for (n_images, seed) lives; the generator version is in the name."""
    return DatasetFiles(cache / f"coco-synth-v{GENERATOR_VERSION}-seed{seed}-n{n_images}", n_images)


# ----------------------------------------------------------------------------------------------
# Generator: polygons are star-shaped (vertex angles increasing around a centre, radii > 0),
# so they are always simple; jitter changes centre, axis scales and radii, never the order.
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Shapes:
    """Ragged set of star polygons.

    Vertex i of shape j is (cx[j] + sx[j] * rad[i] * cos(theta[i]), cy[j] + sy[j] * rad[i] * sin(theta[i]))
    for i in start[j]:start[j+1].
    """

    start: np.ndarray
    theta: np.ndarray
    rad: np.ndarray
    cx: np.ndarray
    cy: np.ndarray
    sx: np.ndarray
    sy: np.ndarray

    @property
    def owner(self) -> np.ndarray:
        """Shape index of every vertex."""
        return np.repeat(np.arange(len(self.cx)), np.diff(self.start))


def _unit_stars(rng: np.random.Generator, n_vertices: np.ndarray) -> Shapes:
    """Random star polygons of radius <= 1 centred at 0, with the given vertex counts."""
    start = np.concatenate([[0], np.cumsum(n_vertices)])
    owner = np.repeat(np.arange(len(n_vertices)), n_vertices)
    k = n_vertices[owner].astype(float)
    step = np.arange(start[-1]) - start[owner]
    phase = rng.uniform(0, 2 * np.pi, len(n_vertices))[owner]
    theta = phase + (step + rng.uniform(-0.3, 0.3, start[-1])) * (2 * np.pi / k)
    rad = rng.uniform(0.65, 1.0, start[-1])
    ones, zeros = np.ones(len(n_vertices)), np.zeros(len(n_vertices))
    return Shapes(start, theta, rad, zeros, zeros.copy(), ones, ones.copy())


def _vertices(sh: Shapes) -> tuple:
    """Flat x and y of every vertex."""
    o = sh.owner
    return (sh.cx[o] + sh.sx[o] * sh.rad * np.cos(sh.theta), sh.cy[o] + sh.sy[o] * sh.rad * np.sin(sh.theta))


def _polygon_areas(x: np.ndarray, y: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Shoelace area of every ragged polygon."""
    idx = np.arange(len(x))
    nxt = idx + 1
    last = start[1:] - 1
    nxt[last] = start[:-1]
    return 0.5 * np.abs(np.add.reduceat(x * y[nxt] - x[nxt] * y, start[:-1]))


def _bounds(x: np.ndarray, y: np.ndarray, start: np.ndarray) -> tuple:
    """Per-polygon x0, y0, x1, y1."""
    s = start[:-1]
    return (
        np.minimum.reduceat(x, s),
        np.minimum.reduceat(y, s),
        np.maximum.reduceat(x, s),
        np.maximum.reduceat(y, s),
    )


def _fit_in_images(sh: Shapes, width: np.ndarray, height: np.ndarray, margin: float = 0.02) -> Shapes:
    """Shrink shapes larger than their image, then shift them inside it."""
    x, y = _vertices(dataclasses.replace(sh, cx=sh.cx * 0, cy=sh.cy * 0))
    x0, y0, x1, y1 = _bounds(x, y, sh.start)
    f = np.minimum(1.0, np.minimum((width - 2 * margin) / (x1 - x0), (height - 2 * margin) / (y1 - y0)))
    x0, y0, x1, y1 = x0 * f, y0 * f, x1 * f, y1 * f
    cx = np.clip(sh.cx, margin - x0, width - margin - x1)
    cy = np.clip(sh.cy, margin - y0, height - margin - y1)
    return dataclasses.replace(sh, cx=cx, cy=cy, sx=sh.sx * f, sy=sh.sy * f)


def _take(sh: Shapes, idx: np.ndarray) -> Shapes:
    """Copy shapes ``idx`` (ragged gather)."""
    lengths = np.diff(sh.start)[idx]
    start = np.concatenate([[0], np.cumsum(lengths)])
    flat = np.repeat(sh.start[idx] - start[:-1], lengths) + np.arange(start[-1])
    return Shapes(start, sh.theta[flat], sh.rad[flat], sh.cx[idx], sh.cy[idx], sh.sx[idx], sh.sy[idx])


def _concat(parts: list) -> Shapes:
    """Concatenate several Shapes."""
    offsets = np.cumsum([0] + [p.start[-1] for p in parts[:-1]])
    start = np.concatenate([[0]] + [p.start[1:] + o for p, o in zip(parts, offsets)])
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    return Shapes(start, cat("theta"), cat("rad"), cat("cx"), cat("cy"), cat("sx"), cat("sy"))


def _jitter(rng: np.random.Generator, sh: Shapes, sigma: np.ndarray) -> Shapes:
    """Move, rescale and roughen shapes by a relative amount ``sigma`` (one per shape)."""
    n = len(sh.cx)
    o = sh.owner
    return dataclasses.replace(
        sh,
        cx=sh.cx + rng.normal(0, 1, n) * sigma * sh.sx,
        cy=sh.cy + rng.normal(0, 1, n) * sigma * sh.sy,
        sx=sh.sx * np.exp(rng.normal(0, 1, n) * sigma),
        sy=sh.sy * np.exp(rng.normal(0, 1, n) * sigma),
        rad=np.clip(sh.rad * np.exp(rng.normal(0, 1, len(sh.rad)) * 0.5 * sigma[o]), 0.3, 1.2),
    )


def _random_shapes(
    rng: np.random.Generator, image: np.ndarray, width: np.ndarray, height: np.ndarray, size_mix: tuple
) -> Shapes:
    """New shapes with COCO-like areas and aspect ratios, placed uniformly in their images."""
    w, h = width[image].astype(float), height[image].astype(float)
    area = _sample_areas(rng, size_mix, w * h)
    n_vertices = np.clip(np.round(6 + np.sqrt(area) / 5), 6, 40).astype(int)
    unit = _unit_stars(rng, n_vertices)
    x, y = _vertices(unit)
    unit_area = _polygon_areas(x, y, unit.start)
    aspect = np.exp(np.clip(rng.normal(0, 0.5, len(area)), -1.6, 1.6))  # h / w
    sx = np.sqrt(area / (aspect * unit_area))
    sh = dataclasses.replace(
        unit, sx=sx, sy=sx * aspect, cx=rng.uniform(0, 1, len(area)) * w, cy=rng.uniform(0, 1, len(area)) * h
    )
    return _fit_in_images(sh, w, h)


def _sample_areas(rng: np.random.Generator, size_mix: tuple, image_area: np.ndarray) -> np.ndarray:
    """Areas log-uniform within COCO's small / medium / large buckets, drawn with ``size_mix``."""
    bucket = rng.choice(3, size=len(image_area), p=size_mix)
    lo = np.array([12.0, SIZE_EDGES[0], SIZE_EDGES[1]])[bucket]
    hi = np.minimum(np.array([SIZE_EDGES[0], SIZE_EDGES[1], np.inf])[bucket], 0.6 * image_area)
    return np.exp(rng.uniform(np.log(lo), np.log(hi)))


def _images(rng: np.random.Generator, n: int) -> dict:
    """Image ids (random, unsorted like COCO's file order) and ~640x480 sizes."""
    ids = rng.choice(np.arange(1, 100 * n + 1000), size=n, replace=False)
    short = rng.choice(
        [480, 427, 426, 424, 428, 425, 360, 512, 383, 640],
        p=[0.40, 0.16, 0.09, 0.05, 0.05, 0.05, 0.06, 0.05, 0.04, 0.05],
        size=n,
    )
    landscape = rng.uniform(size=n) < 0.72
    long_side = np.where(rng.uniform(size=n) < 0.96, 640, rng.integers(500, 640, n))
    return {
        "id": ids,
        "width": np.where(landscape, long_side, short),
        "height": np.where(landscape, short, long_side),
    }


def _category_weights(rng: np.random.Generator) -> np.ndarray:
    """COCO-like long-tailed class frequencies.

    Person weighted so that ~30% of objects are people (several classes share an image), the other 79 a power law in random order.
    """
    rest = (1.0 + rng.permutation(len(COCO_CATEGORIES) - 1)) ** -0.9
    rest = 0.54 * rest / rest.sum()
    return np.concatenate([[0.46], rest])


def _objects_per_image(rng: np.random.Generator, n: int) -> np.ndarray:
    """Long-tailed counts with mean ~7.3 and ~1% empty images (COCO val2017 has ~1%)."""
    mean_extra, r = 6.35, 1.3
    counts = 1 + rng.negative_binomial(r, r / (r + mean_extra), size=n)
    counts[rng.uniform(size=n) < 0.01] = 0
    return np.minimum(counts, 90)


def _classes_in_images(rng: np.random.Generator, counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Category index of every object: a few classes per image, objects clustered among them."""
    out = []
    for count in counts:
        n_cls = min(count, 1 + rng.poisson(2.5))
        classes = rng.choice(len(weights), size=n_cls, replace=False, p=weights)
        share = rng.dirichlet(np.full(n_cls, 0.8)) if n_cls else np.zeros(0)
        extra = rng.choice(n_cls, size=count - n_cls, p=share) if count > n_cls else []
        out.append(classes[np.concatenate([np.arange(n_cls), extra]).astype(int)])
    return np.concatenate(out) if out else np.zeros(0, int)


def _ground_truth(rng: np.random.Generator, imgs: dict, weights: np.ndarray) -> dict:
    """GT objects: image index, category index, crowd flag, polygon shape."""
    counts = _objects_per_image(rng, len(imgs["id"]))
    image = np.repeat(np.arange(len(counts)), counts)
    category = _classes_in_images(rng, counts, weights)
    crowd = rng.uniform(size=len(image)) < 0.01
    w, h = imgs["width"], imgs["height"]
    normal = _random_shapes(rng, image[~crowd], w, h, SIZE_MIX)
    crowded = _random_shapes(rng, image[crowd], w, h, CROWD_SIZE_MIX)
    order = np.argsort(np.concatenate([np.flatnonzero(~crowd), np.flatnonzero(crowd)]), kind="stable")
    shapes = _take(_concat([normal, crowded]), order)
    return {"image": image, "category": category, "crowd": crowd, "shapes": shapes}


def _rounded_geometry(sh: Shapes) -> dict:
    """Vertices rounded to 0.01 px (as written), tight boxes and polygon areas from them."""
    x, y = (np.round(v, 2) for v in _vertices(sh))
    x0, y0, x1, y1 = _bounds(x, y, sh.start)
    box = np.round(np.stack([x0, y0, x1 - x0, y1 - y0], axis=1), 2)
    return {"x": x, "y": y, "box": box, "area": _polygon_areas(x, y, sh.start)}


def _box_iou_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of a[i] with b[i] for xywh boxes."""
    iw = np.clip(np.minimum(a[:, 0] + a[:, 2], b[:, 0] + b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
    ih = np.clip(np.minimum(a[:, 1] + a[:, 3], b[:, 1] + b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
    inter = iw * ih
    return inter / (a[:, 2] * a[:, 3] + b[:, 2] * b[:, 3] - inter)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _detection_sources(rng: np.random.Generator, gt: dict, gt_box: np.ndarray) -> dict:
    """Which GT each non-background detection comes from, and its kind."""
    normal = np.flatnonzero(~gt["crowd"])
    area = gt_box[normal, 2] * gt_box[normal, 3]
    p_found = np.where(area < SIZE_EDGES[0], 0.55, np.where(area < SIZE_EDGES[1], 0.80, 0.90))
    tp_src = normal[rng.uniform(size=len(normal)) < p_found]
    n_dup = rng.poisson(0.35, len(tp_src))
    dup_of = np.repeat(np.arange(len(tp_src)), n_dup)  # index into tp_src
    wrong_src = normal[rng.uniform(size=len(normal)) < 0.12]
    return {"tp_src": tp_src, "dup_of": dup_of, "wrong_src": wrong_src}


def _detections(
    rng: np.random.Generator, imgs: dict, gt: dict, gt_box: np.ndarray, weights: np.ndarray
) -> dict:
    """All detections before the per-image cap: shapes, image, category, kind, score."""
    src = _detection_sources(rng, gt, gt_box)
    tp_src, dup_of, wrong_src = src["tp_src"], src["dup_of"], src["wrong_src"]
    n_tp, n_dup, n_wrong = len(tp_src), len(dup_of), len(wrong_src)
    n_bg_img = rng.poisson(rng.gamma(2.0, 22.0, len(imgs["id"])))
    bg_image = np.repeat(np.arange(len(imgs["id"])), n_bg_img)
    w, h = imgs["width"], imgs["height"]

    from_gt = np.concatenate([tp_src, tp_src[dup_of], wrong_src])
    sigma = np.concatenate(
        [rng.uniform(0.02, 0.22, n_tp), rng.uniform(0.10, 0.40, n_dup), rng.uniform(0.03, 0.20, n_wrong)]
    )
    moved = _jitter(rng, _take(gt["shapes"], from_gt), sigma)
    moved = _fit_in_images(moved, w[gt["image"][from_gt]], h[gt["image"][from_gt]])
    shapes = _concat([moved, _random_shapes(rng, bg_image, w, h, SIZE_MIX)])
    geo = _rounded_geometry(shapes)

    wrong_cat = (gt["category"][wrong_src] + rng.integers(1, len(weights), n_wrong)) % len(weights)
    category = np.concatenate(
        [
            gt["category"][from_gt[: n_tp + n_dup]],
            wrong_cat,
            rng.choice(len(weights), size=len(bg_image), p=weights),
        ]
    )
    image = np.concatenate([gt["image"][from_gt], bg_image])
    kind = np.repeat(np.arange(4), [n_tp, n_dup, n_wrong, len(bg_image)])
    iou = np.full(len(kind), np.nan)
    iou[: len(from_gt)] = _box_iou_pairs(geo["box"][: len(from_gt)], gt_box[from_gt])
    score = _scores(rng, kind, iou, gt_box[from_gt], dup_of)
    return {
        "shapes": shapes,
        "geo": geo,
        "image": image,
        "category": category,
        "kind": kind,
        "iou": iou,
        "score": score,
    }


KIND_NAMES = ("true_positive", "duplicate", "wrong_class", "background")


def _scores(
    rng: np.random.Generator, kind: np.ndarray, iou: np.ndarray, src_box: np.ndarray, dup_of: np.ndarray
) -> np.ndarray:
    """Scores in [0.05, 1) that rise with IoU.

    Duplicates below their TP (25% tie with it exactly); rounded to 4 decimals, so equal scores also occur across and within images.
    """
    n_tp, n_dup = int((kind == 0).sum()), int((kind == 1).sum())
    small = (src_box[:n_tp, 2] * src_box[:n_tp, 3]) < SIZE_EDGES[0]
    tp = _sigmoid(8.0 * (iou[:n_tp] - 0.6) + 1.2 - 0.8 * small + rng.normal(0, 1.1, n_tp))
    dup = tp[dup_of] * rng.uniform(0.15, 0.9, n_dup)
    tie = rng.uniform(size=n_dup) < 0.25
    dup[tie] = tp[dup_of][tie]
    wrong = _sigmoid(rng.normal(-1.8, 1.1, int((kind == 2).sum())))
    bg = rng.beta(1.0, 7.0, int((kind == 3).sum()))
    return np.round(0.05 + 0.949 * np.concatenate([tp, dup, wrong, bg]), 4)


def _cap_and_order(rng: np.random.Generator, det: dict, n_images: int) -> np.ndarray:
    """Indices of kept detections: top 100 per image by score, then shuffled within each image."""
    by_score = np.lexsort((-det["score"], det["image"]))
    image_sorted = det["image"][by_score]
    first = np.searchsorted(image_sorted, np.arange(n_images))
    rank = np.arange(len(by_score)) - first[image_sorted]
    kept = by_score[rank < MAX_DETS_PER_IMAGE]
    shuffled = kept[rng.permutation(len(kept))]
    return shuffled[np.argsort(det["image"][shuffled], kind="stable")]


def _polygon_lists(geo: dict, start: np.ndarray, idx: np.ndarray) -> list:
    """COCO polygon segmentations ([[x0, y0, x1, y1, ...]]) of shapes ``idx``."""
    xy = np.stack([geo["x"], geo["y"]], axis=1).ravel().tolist()
    s = (2 * start).tolist()
    return [[xy[s[i] : s[i + 1]]] for i in idx.tolist()]


def _gt_json(imgs: dict, gt: dict, geo: dict, ann_order: np.ndarray) -> dict:
    """The COCO instances dict (annotation ids from 1, in shuffled file order)."""
    cats = [{"id": i, "name": n, "supercategory": s} for i, n, s in COCO_CATEGORIES]
    cat_ids = np.array([c[0] for c in COCO_CATEGORIES])
    images = [
        {"id": i, "width": w, "height": h, "file_name": f"{i:012d}.jpg"}
        for i, w, h in zip(imgs["id"].tolist(), imgs["width"].tolist(), imgs["height"].tolist())
    ]
    segs = _polygon_lists(geo, gt["shapes"].start, ann_order)
    columns = zip(
        imgs["id"][gt["image"][ann_order]].tolist(),
        cat_ids[gt["category"][ann_order]].tolist(),
        geo["area"][ann_order].tolist(),
        geo["box"][ann_order].tolist(),
        gt["crowd"][ann_order].astype(int).tolist(),
        segs,
    )
    anns = [
        {
            "id": k + 1,
            "image_id": i,
            "category_id": c,
            "segmentation": seg,
            "area": a,
            "bbox": b,
            "iscrowd": z,
        }
        for k, (i, c, a, b, z, seg) in enumerate(columns)
    ]
    info = {"description": f"deteval synthetic COCO-like benchmark data v{GENERATOR_VERSION}"}
    return {"info": info, "licenses": [], "images": images, "annotations": anns, "categories": cats}


def _dt_json(imgs: dict, det: dict, keep: np.ndarray, with_segm: bool) -> list:
    """COCO results list: boxes only, or polygon segmentation plus box."""
    cat_ids = np.array([c[0] for c in COCO_CATEGORIES])
    columns = zip(
        imgs["id"][det["image"][keep]].tolist(),
        cat_ids[det["category"][keep]].tolist(),
        det["geo"]["box"][keep].tolist(),
        det["score"][keep].tolist(),
    )
    out = [{"image_id": i, "category_id": c, "bbox": b, "score": s} for i, c, b, s in columns]
    if with_segm:
        for rec, seg in zip(out, _polygon_lists(det["geo"], det["shapes"].start, keep)):
            rec["segmentation"] = seg
    return out


def _write_json(path: Path, obj) -> None:
    """Write atomically: a partial file is never mistaken for a cached one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(obj))
    os.replace(tmp, path)


def _generator_meta(det: dict, keep: np.ndarray, seed: int, n_images: int) -> dict:
    """What the JSON files cannot tell: detection kinds and how scores follow IoU."""
    kind, score, iou = det["kind"][keep], det["score"][keep], det["iou"][keep]
    tp = kind == 0
    ranks = lambda v: np.argsort(np.argsort(v))  # noqa: E731
    rho = float(np.corrcoef(ranks(score[tp]), ranks(iou[tp]))[0, 1]) if tp.sum() > 2 else None
    return {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "n_images": n_images,
        "kinds": {name: int((kind == k).sum()) for k, name in enumerate(KIND_NAMES)},
        "mean_score": {
            name: float(score[kind == k].mean()) if (kind == k).any() else None
            for k, name in enumerate(KIND_NAMES)
        },
        "tp_score_iou_spearman": rho,
        "tp_mean_box_iou": float(iou[tp].mean()) if tp.any() else None,
    }


def generate_dataset(files: DatasetFiles, seed: int) -> None:
    """Generate and write one dataset (GT, bbox results, segm results, metadata)."""
    rng = np.random.default_rng([seed, files.n_images, GENERATOR_VERSION])
    files.root.mkdir(parents=True, exist_ok=True)
    imgs = _images(rng, files.n_images)
    weights = _category_weights(rng)
    gt = _ground_truth(rng, imgs, weights)
    gt_geo = _rounded_geometry(gt["shapes"])
    det = _detections(rng, imgs, gt, gt_geo["box"], weights)
    keep = _cap_and_order(rng, det, files.n_images)
    ann_order = rng.permutation(len(gt["image"]))
    _write_json(files.gt, _gt_json(imgs, gt, gt_geo, ann_order))
    _write_json(files.dt("bbox"), _dt_json(imgs, det, keep, with_segm=False))
    _write_json(files.dt("segm"), _dt_json(imgs, det, keep, with_segm=True))
    _write_json(files.meta, _generator_meta(det, keep, seed, files.n_images))


def ensure_dataset(cache: Path, n_images: int, seed: int, log) -> DatasetFiles:
    """Return the cached dataset, generating it first if missing."""
    files = dataset_files(cache, n_images, seed)
    if not files.complete():
        t0 = time.perf_counter()
        log(f"generating {n_images} images -> {files.root} ...")
        generate_dataset(files, seed)
        log(f"  done in {time.perf_counter() - t0:.1f} s")
    return files


# ----------------------------------------------------------------------------------------------
# Dataset statistics (--stats): read back from the written files
# ----------------------------------------------------------------------------------------------


def _share(mask: np.ndarray) -> str:
    return f"{100.0 * mask.mean():.1f}%" if len(mask) else "n/a"


def _gt_stats(gt: dict) -> list:
    """Lines describing the GT file."""
    anns = gt["annotations"]
    n_img = len(gt["images"])
    index = {img["id"]: k for k, img in enumerate(gt["images"])}
    per_img = np.bincount([index[a["image_id"]] for a in anns], minlength=n_img)
    area = np.array([a["area"] for a in anns])
    crowd = np.array([a["iscrowd"] for a in anns], bool)
    cats = np.array([a["category_id"] for a in anns])
    n_vert = np.array([len(a["segmentation"][0]) // 2 for a in anns])
    wh = np.array([(img["width"], img["height"]) for img in gt["images"]])
    pairs = {(a["image_id"], a["category_id"]) for a in anns}
    small, large = area < SIZE_EDGES[0], area > SIZE_EDGES[1]
    top_id, top_n = np.unique(cats, return_counts=True)
    return [
        f"images {n_img}; GT {len(anns)} = {per_img.mean():.2f}/image "
        f"(median {np.median(per_img):.0f}, p99 {np.percentile(per_img, 99):.0f}, max {per_img.max()}, "
        f"empty images {_share(per_img == 0)})",
        f"crowd {_share(crowd)}; categories used {len(top_id)}/80; most frequent id "
        f"{top_id[top_n.argmax()]} ({100.0 * top_n.max() / len(cats):.1f}%); "
        f"classes per image {len(pairs) / max(1, (per_img > 0).sum()):.2f}",
        f"sizes by area (all): small {_share(small)} medium {_share(~small & ~large)} large {_share(large)}; "
        f"non-crowd: small {_share(small[~crowd])} medium {_share((~small & ~large)[~crowd])} "
        f"large {_share(large[~crowd])}",
        f"image size: median {np.median(wh[:, 0]):.0f}x{np.median(wh[:, 1]):.0f}, "
        f"mean {wh[:, 0].mean():.0f}x{wh[:, 1].mean():.0f}, landscape {_share(wh[:, 0] > wh[:, 1])}; "
        f"polygon vertices mean {n_vert.mean():.1f} (min {n_vert.min()}, max {n_vert.max()})",
        f"ids: image ids sorted in file: {bool(np.all(np.diff([i['id'] for i in gt['images']]) > 0))}; "
        f"min annotation id {min(a['id'] for a in anns)}; any 'ignore' field: "
        f"{any('ignore' in a for a in anns)}",
    ]


def _tie_share(dt: list) -> tuple:
    """Share of detections whose score equals another one's in the same (image, class).

    Also the number of distinct scores.
    """
    keys = np.array([(d["image_id"], d["category_id"], d["score"]) for d in dt])
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    return float((counts[inverse.ravel()] > 1).mean()), len(np.unique(keys[:, 2]))


def _dt_stats(dt: list, n_images: int, meta: dict) -> list:
    """Lines describing a results file and the generator's metadata."""
    per_img = np.bincount(np.unique([d["image_id"] for d in dt], return_inverse=True)[1], minlength=n_images)
    tie, distinct = _tie_share(dt)
    kinds = meta["kinds"]
    total = sum(kinds.values())
    mean_score = ", ".join(f"{k} {v:.3f}" for k, v in meta["mean_score"].items() if v is not None)
    return [
        f"detections {len(dt)} = {len(dt) / n_images:.1f}/image (max {per_img.max()}, "
        f"images at the {MAX_DETS_PER_IMAGE} cap {_share(per_img >= MAX_DETS_PER_IMAGE)})",
        "kinds: " + ", ".join(f"{k} {100.0 * v / total:.1f}%" for k, v in kinds.items()),
        f"mean score by kind: {mean_score}; TP Spearman(score, box IoU) "
        f"{meta['tp_score_iou_spearman']:.2f}; TP mean box IoU {meta['tp_mean_box_iou']:.3f}",
        f"score ties: {100.0 * tie:.1f}% of detections share their exact score with another "
        f"in the same image and class; {distinct} distinct scores",
    ]


def print_stats(files: DatasetFiles, log) -> None:
    """Print the statistics of one dataset, computed from the written files."""
    gt = orjson.loads(files.gt.read_bytes())
    dt = orjson.loads(files.dt("bbox").read_bytes())
    meta = orjson.loads(files.meta.read_bytes())
    sizes = ", ".join(
        f"{p.name} {p.stat().st_size / 2**20:.1f} MiB" for p in (files.gt, files.dt("bbox"), files.dt("segm"))
    )
    log(f"\nDataset {files.root.name} ({sizes})")
    for line in _gt_stats(gt) + _dt_stats(dt, len(gt["images"]), meta):
        log("  " + line)


# ----------------------------------------------------------------------------------------------
# Running the tools
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Variant:
    """One benchmarked configuration: a label in the table and the worker's arguments."""

    label: str
    tool: str
    mask_iou: str | None = None


def variants(tools: list, iou_type: str, mask_modes: list) -> list:
    """The rows to run for one IoU type (deteval segm expands into its mask-IoU modes)."""
    out = []
    for tool in tools:
        if tool == "deteval" and iou_type == "segm":
            out += [Variant(f"deteval[{m}]", tool, m) for m in mask_modes]
        else:
            out.append(Variant(tool, tool))
    return out


def _worker_command(
    v: Variant, files: DatasetFiles, iou_type: str, workers: int | None, deteval_call: str
) -> list:
    cmd = [
        sys.executable,
        str(WORKER),
        "--tool",
        v.tool,
        "--gt",
        str(files.gt),
        "--dt",
        str(files.dt(iou_type)),
        "--iou-type",
        iou_type,
    ]
    if v.mask_iou:
        cmd += ["--mask-iou", v.mask_iou]
    if v.tool == "deteval":
        cmd += ["--deteval-call", deteval_call]
        if workers is not None:
            cmd += ["--workers", str(workers)]
    return cmd


def _child_env() -> dict:
    """Environment of a worker: the repo root first on PYTHONPATH, so `import deteval` is this tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return env


def run_once(v: Variant, files: DatasetFiles, iou_type: str, args: argparse.Namespace) -> dict:
    """Run one worker process and return its record (with wall time, or the error)."""
    cmd = _worker_command(v, files, iou_type, args.workers, args.deteval_call)
    timeout = args.timeout
    load_before = _load_average()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_child_env())
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout:g} s", "total_s": None}
    wall = time.perf_counter() - t0
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-25:])
        return {"ok": False, "error": f"exit code {proc.returncode}\n{tail}", "total_s": wall}
    record = orjson.loads(lines[-1])
    record.update(ok=True, total_s=wall, loadavg_before=load_before, loadavg_after=_load_average())
    return record


def _load_average() -> float | None:
    """1-minute load average (None where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def contention_note(runs: list) -> str | None:
    """A warning when other processes competed for the CPUs during the runs.

    One child runs at a time and adds ~1 to the load average by itself; clearly more than
    that means someone else was busy and the timings are inflated (the JSON keeps each
    child's CPU time, ``cpu_s``, which suffers less).
    """
    loads = [r[k] for r in runs for k in ("loadavg_before", "loadavg_after") if r.get(k) is not None]
    if not loads or max(loads) < 1.6:
        return None
    return (
        f"other processes competed for the CPUs: the 1-minute load average reached "
        f"{max(loads):.1f} (median {statistics.median(loads):.1f}) while one child ran at a time "
        f"on {os.cpu_count()} CPUs; timings may be inflated"
    )


def run_all(args: argparse.Namespace, datasets: dict, log) -> list:
    """Every (size, iou_type, variant, repetition); repetitions interleave the tools."""
    runs = []
    for size, files in datasets.items():
        for iou_type in args.iou_type:
            rows = variants(args.tools, iou_type, args.mask_iou)
            for rep in range(args.repeat):
                for v in rows:
                    rec = run_once(v, files, iou_type, args)
                    rec.update(size=size, iou_type=iou_type, label=v.label, rep=rep)
                    runs.append(rec)
                    log(_progress_line(rec))
    return runs


def _progress_line(rec: dict) -> str:
    head = f"  [{rec['size']:>6} {rec['iou_type']} rep {rec['rep'] + 1}] {rec['label']:<16}"
    if not rec["ok"]:
        return f"{head} FAILED: {rec['error'].splitlines()[-1] if rec['error'] else ''}"
    return f"{head} total {rec['total_s']:8.3f} s  peak {rec['peak_rss_mib']:7.0f} MiB"


# ----------------------------------------------------------------------------------------------
# Summaries, agreement, table
# ----------------------------------------------------------------------------------------------


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(runs: list) -> list:
    """Median timings per (size, iou_type, label), first successful stats, and every error."""
    groups: dict[tuple, list] = {}
    for rec in runs:
        groups.setdefault((rec["size"], rec["iou_type"], rec["label"]), []).append(rec)
    rows = []
    for (size, iou_type, label), recs in groups.items():
        ok = [r for r in recs if r["ok"]]
        stats = [r["stats"] for r in ok if r.get("stats") is not None]
        rows.append(
            {
                "size": size,
                "iou_type": iou_type,
                "label": label,
                "runs": len(recs),
                "ok_runs": len(ok),
                **{
                    k: _median([r.get(k) for r in ok])
                    for k in ("import_s", "load_s", "eval_s", "inproc_s", "total_s", "cpu_s", "peak_rss_mib")
                },
                "stats": stats[0] if stats else None,
                "stats_stable": all(s == stats[0] for s in stats),
                "errors": sorted({r["error"] for r in recs if not r["ok"]}),
                "notes": sorted({n for r in ok for n in r.get("notes", [])}),
            }
        )
    return rows


def _baseline(rows: list, prefix: str) -> dict | None:
    """The first successful row whose label starts with ``prefix`` (rows of one group)."""
    return next((r for r in rows if r["label"].startswith(prefix) and r["total_s"] and r["ok_runs"]), None)


def _max_abs_diff(a: list, b: list) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


def agreement(rows: list) -> list:
    """Per (size, iou_type): each tool's stats against the reference.

    The reference is pycocotools if it ran, else deteval. Tools that must match exactly are marked so.
    """
    out = []
    for key in dict.fromkeys((r["size"], r["iou_type"]) for r in rows):
        group = [r for r in rows if (r["size"], r["iou_type"]) == key]
        ref = _baseline(group, "pycocotools") or _baseline(group, "deteval")
        if ref is None or ref["stats"] is None:
            continue
        for r in group:
            if r is ref or r["stats"] is None:
                continue
            must = ref["label"] == "pycocotools" and r["label"] in ("deteval", "deteval[raster]")
            diff = _max_abs_diff(r["stats"], ref["stats"])
            diffs = {n: b - a for n, a, b in zip(METRIC_NAMES, ref["stats"], r["stats"]) if a != b}
            out.append(
                {
                    "size": key[0],
                    "iou_type": key[1],
                    "label": r["label"],
                    "reference": ref["label"],
                    "max_abs_diff": diff,
                    "exact": not diffs,
                    "must_be_exact": must,
                    "diffs": diffs,
                }
            )
    return out


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table_rows(rows: list) -> list:
    """Cells of the table (strings), ratios computed within each (size, iou_type) group."""
    cells = []
    for key in dict.fromkeys((r["size"], r["iou_type"]) for r in rows):
        group = [r for r in rows if (r["size"], r["iou_type"]) == key]
        base, floor = _baseline(group, "deteval"), _baseline(group, "orjson")
        for r in group:
            ok = r["ok_runs"] > 0
            ratio = r["total_s"] / base["total_s"] if ok and base else None
            vs_floor = r["total_s"] / floor["total_s"] if ok and floor else None
            cells.append(
                [
                    f"{key[0]:,}",
                    key[1],
                    r["label"] + ("" if ok else " FAILED"),
                    _fmt(r["load_s"], ".3f"),
                    _fmt(r["eval_s"], ".3f"),
                    _fmt(r["total_s"], ".3f"),
                    _fmt(r["peak_rss_mib"], ".0f"),
                    _fmt(ratio, ".2f"),
                    _fmt(vs_floor, ".2f"),
                ]
            )
    return cells


TABLE_HEADER = [
    "images",
    "iou",
    "tool",
    "load s",
    "eval s",
    "total s",
    "peak RSS MiB",
    "x deteval",
    "x floor",
]


def format_table(cells: list, fmt: str) -> str:
    """Plain aligned text or a Markdown table."""
    if fmt == "markdown":
        lines = ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "|".join(["---"] * 3 + ["---:"] * 6) + "|"]
        return "\n".join(lines + ["| " + " | ".join(c) + " |" for c in cells])
    widths = [
        max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(TABLE_HEADER)
    ]
    just = lambda row: "  ".join(  # noqa: E731
        v.ljust(w) if i < 3 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths))
    )
    return "\n".join([just(TABLE_HEADER), just(["-" * w for w in widths])] + [just(c) for c in cells])


def format_reference_stats(rows: list) -> list:
    """The 12 stats of each group's reference tool, so that the data's difficulty is visible."""
    lines = []
    for key in dict.fromkeys((r["size"], r["iou_type"]) for r in rows):
        group = [r for r in rows if (r["size"], r["iou_type"]) == key]
        ref = _baseline(group, "pycocotools") or _baseline(group, "deteval") or _baseline(group, "fcoco")
        if ref and ref["stats"]:
            values = " ".join(f"{n} {v:.3f}" for n, v in zip(METRIC_NAMES, ref["stats"]))
            lines.append(f"  {key[0]:>6,} {key[1]:<4} ({ref['label']}): {values}")
    return lines


def format_agreement(items: list) -> list:
    """One line per compared tool."""
    lines = []
    for a in items:
        verdict = "identical" if a["exact"] else f"max |diff| {a['max_abs_diff']:.3g}"
        flag = "" if a["exact"] or not a["must_be_exact"] else "   <-- MISMATCH (must be exact)"
        detail = "" if a["exact"] else "  " + ", ".join(f"{k} {v:+.3g}" for k, v in a["diffs"].items())
        lines.append(
            f"  {a['size']:>6,} {a['iou_type']:<4} {a['label']:<16} vs {a['reference']}: "
            f"{verdict}{flag}{detail}"
        )
    return lines


# ----------------------------------------------------------------------------------------------
# Machine facts
# ----------------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _versions() -> dict:
    """Package versions as the workers see them."""
    proc = subprocess.run(
        [sys.executable, str(WORKER), "--versions"], capture_output=True, text=True, env=_child_env()
    )
    return orjson.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr[-500:]}


def _git_revision() -> str:
    proc = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "status", "--porcelain"], capture_output=True, text=True
    ).stdout.strip()
    rev = proc.stdout.strip() if proc.returncode == 0 else "no commit"
    return rev + (" (+ local changes)" if dirty else "")


def machine_facts() -> dict:
    """What the numbers were measured on."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": affinity,
        "memory_gib": _memory_gib(),
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": _versions(),
        "repo_revision": _git_revision(),
    }


def format_header(facts: dict, args: argparse.Namespace) -> str:
    mem = _fmt(facts["memory_gib"], ".1f")
    pkgs = ", ".join(f"{k} {v}" for k, v in facts["packages"].items())
    return "\n".join(
        [
            f"deteval benchmark  {facts['date']}",
            f"machine: {facts['cpu']}, {facts['logical_cpus']} logical CPUs ({facts['usable_cpus']} usable), "
            f"{mem} GiB RAM, {facts['platform']}",
            f"python: {facts['python']}; {pkgs}",
            f"repo: {facts['repo_revision']}; repeat {args.repeat} (medians), seed {args.seed}, "
            f"deteval workers {args.workers if args.workers is not None else 'default'}",
        ]
    )


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------


def _csv(kind, allowed: tuple | None = None):
    """Argparse type: comma-separated list, each item converted and checked."""

    def parse(text: str) -> list:
        items = [kind(t.strip()) for t in text.split(",") if t.strip()]
        bad = [i for i in items if allowed is not None and i not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {bad}; choose from {', '.join(map(str, allowed or ()))}"
            )
        return items

    return parse


def parse_args(argv: list | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes",
        type=_csv(int),
        default=[500, 5000, 20000],
        help="numbers of images, comma-separated (default 500,5000,20000)",
    )
    parser.add_argument(
        "--iou-type",
        type=_csv(str, ("bbox", "segm")),
        default=["bbox", "segm"],
        help="bbox, segm or both (default bbox,segm)",
    )
    parser.add_argument(
        "--tools",
        type=_csv(str, ALL_TOOLS + ("none",)),
        default=list(ALL_TOOLS),
        help=f"subset of {','.join(ALL_TOOLS)} (or 'none' to only generate)",
    )
    parser.add_argument(
        "--mask-iou",
        type=_csv(str, ("raster", "exact")),
        default=["raster", "exact"],
        help="deteval's segm modes to time (default raster,exact)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process runs per tool (median)")
    parser.add_argument(
        "--workers",
        default=None,
        help="passed to deteval.evaluate(workers=N) when it accepts it: a number or auto (the suite's default)",
    )
    suite = parser.add_argument_group(
        "suite (--suite): every workload against every peer that has it (scripts/bench_suite.py)"
    )
    suite.add_argument("--suite", action="store_true", help="run the suite instead of the bbox/segm table")
    suite.add_argument("--quick", action="store_true", help="small sizes (a few minutes in all)")
    suite.add_argument(
        "--workloads",
        type=_csv(str, SUITE_WORKLOADS),
        default=list(SUITE_WORKLOADS),
        help=f"subset of {','.join(SUITE_WORKLOADS)}",
    )
    suite.add_argument(
        "--peers",
        type=_csv(str, SUITE_PEERS),
        default=list(SUITE_PEERS),
        help=f"peers to time (deteval always runs): subset of {','.join(SUITE_PEERS)}",
    )
    suite.add_argument(
        "--suite-sizes",
        action="append",
        default=[],
        metavar="WORKLOAD=N,N",
        help="image counts of one workload (repeatable), e.g. bbox=5000,20000",
    )
    suite.add_argument(
        "--slow-max-images",
        type=int,
        default=5000,
        help="pycocotools, lvis-api, torchmetrics, tidecv and faster-coco-eval run up to this many images (default 5000)",
    )
    suite.add_argument("--resamples", type=int, default=1000, help="bootstrap workload's resamples")
    parser.add_argument(
        "--deteval-call",
        choices=("split", "paths"),
        default="split",
        help="split (default): time deteval.load_ground_truth/load_detections, then "
        "deteval.evaluate on the loaded values; paths: time the one call "
        "deteval.evaluate(gt_path, dt_path) (load column shows '-')",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("/tmp/deteval-bench"),
        help="where generated datasets are kept (default /tmp/deteval-bench)",
    )
    parser.add_argument("--seed", type=int, default=0, help="dataset seed (default 0)")
    parser.add_argument("--timeout", type=float, default=7200.0, help="seconds per child process")
    parser.add_argument("--stats", action="store_true", help="print the generated data's statistics")
    parser.add_argument("--format", choices=("text", "markdown"), default="text", help="table format")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write raw results here")
    args = parser.parse_args(argv)
    args.tools = [t for t in args.tools if t != "none"]
    try:
        args.sizes_of = {
            k: [int(n) for n in v.split(",")] for k, v in (x.split("=", 1) for x in args.suite_sizes)
        }
    except ValueError:
        parser.error("--suite-sizes: expected WORKLOAD=N,N (e.g. bbox=5000,20000)")
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    return args


def _log(message: str) -> None:
    print(message, flush=True)


def suite_main(args: argparse.Namespace, facts: dict) -> int:
    """``--suite``: every workload against every peer (scripts/bench_suite.py), one Markdown table."""
    import bench_suite  # noqa: PLC0415  (scripts/ is not a package)

    missing = bench_suite.missing_tools()
    for tool, why in missing.items():
        _log(f"skipped {tool}: {why}")
    runs, skipped = bench_suite.run_suite(args, _log)
    rows = bench_suite.summarize(runs)
    lines = bench_suite.table(rows)
    _log("\n" + "\n".join(lines))
    notes = [f"- {w} {n or ''}: {t} skipped ({why})" for w, n, t, why in skipped]
    notes += [
        f"- {r['workload']} {r['size']}: {r['tool']} numbers differ between repetitions"
        for r in rows
        if not r["stable"]
    ]
    note = contention_note(runs)
    if note:
        notes.append(f"- {note}")
    if notes:
        _log("\n" + "\n".join(notes))
    if args.json:
        payload = {"machine": facts, "runs": runs, "summary": rows, "skipped": skipped}
        args.json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
        _log(f"\nraw results: {args.json}")
    return 0


def main(argv: list | None = None) -> int:
    args = parse_args(argv)
    facts = machine_facts()
    _log(format_header(facts, args))
    if args.suite:
        return suite_main(args, facts)
    datasets = {n: ensure_dataset(args.cache, n, args.seed, _log) for n in args.sizes}
    if args.stats:
        for files in datasets.values():
            print_stats(files, _log)
    if not args.tools:
        return 0
    _log("\nRunning (one fresh process per tool and repetition):")
    runs = run_all(args, datasets, _log)
    rows = summarize(runs)
    checks = agreement(rows)
    _log("\n" + format_table(table_rows(rows), args.format))
    _log("\nCOCO stats:\n" + "\n".join(format_reference_stats(rows)))
    _log("\nAgreement of the 12 COCO stats:")
    _log("\n".join(format_agreement(checks)) or "  (nothing to compare)")
    problems = [
        f"  {r['size']:,} {r['iou_type']} {r['label']}: " + e.replace("\n", "\n      ")
        for r in rows
        for e in r["errors"]
    ]
    problems += [f"  {r['size']:,} {r['iou_type']} {r['label']}: {n}" for r in rows for n in r["notes"]]
    problems += [
        f"  {r['size']:,} {r['iou_type']} {r['label']}: stats differ between repetitions"
        for r in rows
        if not r["stats_stable"]
    ]
    problems += [f"  {note}" for note in [contention_note(runs)] if note]
    if problems:
        _log("\nNotes and failures:\n" + "\n".join(problems))
    if args.json:
        payload = {
            "machine": facts,
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "datasets": {str(n): str(f.root) for n, f in datasets.items()},
            "runs": runs,
            "summary": rows,
            "agreement": checks,
        }
        args.json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
        _log(f"\nraw results: {args.json}")
    mismatch = any(a["must_be_exact"] and not a["exact"] for a in checks)
    return 1 if mismatch else 0


if __name__ == "__main__":
    sys.exit(main())
