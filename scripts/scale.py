"""Time and peak memory of deteval at LVIS and V3Det scale (boxes), one fresh process per run.

The data are COCO-shaped like ``scripts/bench.py``'s (its image sizes, COCO's small / medium /
large object-size mix, ~7.3 objects per image with a long tail, scores that rise with the
localisation quality, exact score ties from 4-decimal rounding), with more classes and more
detections: ``--classes`` classes with power-law frequencies and exactly ``--dets`` detections
per image (jittered copies of the ground truth, 1 in 6 of them with a wrong class, and
background boxes filling the rest). Boxes are drawn directly (no polygons), vectorised, so
6 million detections take about a minute to generate. With ``--lvis`` the ground truth carries
LVIS' federated labels: a ``frequency`` (r / c / f) per category by its rank, 5
``neg_category_ids`` and, on 1 image in 10, one ``not_exhaustive_category_ids`` per image.

Each run is ``scripts/_bench_worker.py --tool deteval --protocol P`` in a fresh process:
``load_s`` (``deteval.load_ground_truth`` + ``load_detections``), ``eval_s``
(``deteval.evaluate`` on the loaded values), and ``peak_rss_mib``, the process's ``VmHWM``
from ``/proc/self/status``. A run is killed after ``--timeout`` seconds.

Usage
-----
LVIS scale (1,203 classes, 20,000 images x 300 detections), presets coco and lvis::

    python scripts/scale.py --images 20000 --classes 1203 --dets 300 --lvis --protocols coco,lvis

V3Det scale (13,204 classes, 30,000 images x 100 detections)::

    python scripts/scale.py --images 30000 --classes 13204 --dets 100 --protocols coco

Several sizes (the largest run that fits a memory budget is found this way)::

    python scripts/scale.py --images 10000,30000,60000 --classes 13204 --dets 100

Output: one JSON line per run on stdout, a Markdown table at the end (``--json OUT`` keeps every
record). Nothing here is asserted by tests: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (scripts/ is not a package)

GENERATOR_VERSION = 1
WORKER = Path(__file__).resolve().with_name("_bench_worker.py")
REPO_ROOT = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def _boxes(rng: np.random.Generator, width: np.ndarray, height: np.ndarray) -> np.ndarray:
    """Boxes (xywh) inside their images, areas drawn with COCO's size mix (bench.SIZE_MIX)."""
    area = bench._sample_areas(rng, bench.SIZE_MIX, (width * height).astype(float))
    aspect = np.exp(rng.normal(0.0, 0.5, len(area)))
    w = np.minimum(np.sqrt(area * aspect), width - 1.0)
    h = np.minimum(area / w, height - 1.0)
    x = rng.uniform(0, 1, len(w)) * (width - w)
    y = rng.uniform(0, 1, len(h)) * (height - h)
    return np.round(np.stack([x, y, w, h], axis=1), 2)


def _jitter(rng: np.random.Generator, box: np.ndarray, width: np.ndarray, height: np.ndarray) -> np.ndarray:
    """Boxes moved and resized by a random fraction of their size (localisation error)."""
    sigma = rng.uniform(0.02, 0.3, len(box))[:, None]
    w, h = box[:, 2:3], box[:, 3:4]
    shift = rng.normal(0, 1, (len(box), 2)) * sigma * np.hstack([w, h])
    scale = np.exp(rng.normal(0, 1, (len(box), 2)) * sigma)
    size = np.hstack([w, h]) * scale
    x = np.clip(box[:, 0] + shift[:, 0], 0, width - 1)
    y = np.clip(box[:, 1] + shift[:, 1], 0, height - 1)
    size[:, 0] = np.clip(size[:, 0], 1, width - x)
    size[:, 1] = np.clip(size[:, 1], 1, height - y)
    return np.round(np.column_stack([x, y, size]), 2)


def generate(n_images: int, n_classes: int, dets_per_image: int, seed: int, lvis: bool) -> tuple:
    """(ground-truth dict, results list) of the synthetic dataset."""
    rng = np.random.default_rng([seed, n_images, n_classes, dets_per_image, GENERATOR_VERSION])
    imgs = bench._images(rng, n_images)
    weights = (1.0 + rng.permutation(n_classes)) ** -1.0
    weights /= weights.sum()
    counts = bench._objects_per_image(rng, n_images)
    gt_image = np.repeat(np.arange(n_images), counts)
    gt_class = rng.choice(n_classes, size=len(gt_image), p=weights)
    gt_box = _boxes(rng, imgs["width"][gt_image], imgs["height"][gt_image])
    crowd = (rng.uniform(size=len(gt_image)) < 0.01) & (not lvis)

    # Detections from the ground truth: found with p 0.7, plus Poisson(0.5) duplicates each.
    found = np.flatnonzero(rng.uniform(size=len(gt_image)) < 0.7)
    src = np.repeat(found, 1 + rng.poisson(0.5, len(found)))
    w_src, h_src = imgs["width"][gt_image[src]], imgs["height"][gt_image[src]]
    from_gt_box = _jitter(rng, gt_box[src], w_src, h_src)
    wrong = rng.uniform(size=len(src)) < 1 / 6
    from_gt_class = np.where(wrong, rng.choice(n_classes, size=len(src), p=weights), gt_class[src])
    iou = bench._box_iou_pairs(from_gt_box, gt_box[src])
    from_gt_score = bench._sigmoid(8.0 * (iou - 0.6) + 0.8 + rng.normal(0, 1.1, len(src)) - 2.0 * wrong)
    # Background boxes fill every image up to dets_per_image.
    n_bg = np.full(n_images, dets_per_image)
    bg_image = np.repeat(np.arange(n_images), n_bg)
    bg_box = _boxes(rng, imgs["width"][bg_image], imgs["height"][bg_image])
    bg_class = rng.choice(n_classes, size=len(bg_image), p=weights)
    bg_score = rng.beta(1.0, 7.0, len(bg_image))
    image = np.concatenate([gt_image[src], bg_image])
    score = np.round(0.05 + 0.949 * np.concatenate([from_gt_score, bg_score]), 4)
    box = np.concatenate([from_gt_box, bg_box])
    category = np.concatenate([from_gt_class, bg_class])
    # Keep the top dets_per_image of each image, in image order.
    by_score = np.lexsort((-score, image))
    first = np.searchsorted(image[by_score], np.arange(n_images))
    rank = np.arange(len(by_score)) - first[image[by_score]]
    keep = by_score[rank < dets_per_image]

    cat_ids = np.arange(1, n_classes + 1)
    categories = [{"id": int(i), "name": f"class{i}"} for i in cat_ids]
    images = [
        {"id": i, "width": w, "height": h}
        for i, w, h in zip(imgs["id"].tolist(), imgs["width"].tolist(), imgs["height"].tolist())
    ]
    if lvis:
        by_weight = np.argsort(-weights, kind="stable")
        frequency = np.empty(n_classes, dtype=object)
        frequency[by_weight] = np.repeat(
            ["f", "c", "r"], np.diff([0, n_classes // 4, n_classes // 2, n_classes])
        )
        for c, f in zip(categories, frequency.tolist()):
            c["frequency"] = f
        neg = rng.choice(n_classes, size=(n_images, 5), p=weights)
        bounds = np.cumsum(np.r_[0, counts])
        for k, img in enumerate(images):
            present = set(gt_class[bounds[k] : bounds[k + 1]].tolist())
            img["neg_category_ids"] = sorted({int(c) + 1 for c in neg[k].tolist() if c not in present})
            not_exhaustive = sorted(present)[:1] if present and rng.uniform() < 0.1 else []
            img["not_exhaustive_category_ids"] = [int(c) + 1 for c in not_exhaustive]
    area = gt_box[:, 2] * gt_box[:, 3]
    anns = [
        {"id": k + 1, "image_id": i, "category_id": c, "bbox": b, "area": a, "iscrowd": z}
        for k, (i, c, b, a, z) in enumerate(
            zip(
                imgs["id"][gt_image].tolist(),
                cat_ids[gt_class].tolist(),
                gt_box.tolist(),
                area.round(2).tolist(),
                crowd.astype(int).tolist(),
            )
        )
    ]
    results = [
        {"image_id": i, "category_id": c, "bbox": b, "score": s}
        for i, c, b, s in zip(
            imgs["id"][image[keep]].tolist(),
            cat_ids[category[keep]].tolist(),
            box[keep].tolist(),
            score[keep].tolist(),
        )
    ]
    return {"images": images, "annotations": anns, "categories": categories}, results


def ensure_data(cache: Path, n_images: int, n_classes: int, dets: int, seed: int, lvis: bool) -> tuple:
    """Paths of the cached GT and results, generated first if missing; and the counts."""
    root = (
        cache
        / f"scale-v{GENERATOR_VERSION}-s{seed}-n{n_images}-k{n_classes}-d{dets}{'-lvis' if lvis else ''}"
    )
    gt_path, dt_path, meta_path = root / "gt.json", root / "dt.json", root / "meta.json"
    if not meta_path.exists():
        root.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        gt, results = generate(n_images, n_classes, dets, seed, lvis)
        meta = {"n_gt": len(gt["annotations"]), "n_det": len(results), "generate_s": time.perf_counter() - t0}
        for path, obj in ((gt_path, gt), (dt_path, results)):
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(orjson.dumps(obj))
            os.replace(tmp, path)
        del gt, results
        meta_path.write_text(json.dumps(meta))
    return gt_path, dt_path, json.loads(meta_path.read_text())


# ----------------------------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------------------------


def run_once(gt: Path, dt: Path, protocol: str, args: argparse.Namespace) -> dict:
    """One fresh worker process; its JSON line, or the reason it failed."""
    cmd = [sys.executable, str(WORKER), "--tool", "deteval", "--gt", str(gt), "--dt", str(dt)]
    cmd += ["--protocol", protocol]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    if args.memory_limit:
        cmd += ["--memory-limit", str(args.memory_limit)]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {args.timeout} s", "total_s": time.perf_counter() - t0}
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        return {
            "error": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"],
            "total_s": total,
        }
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    record["total_s"] = total
    return record


def table(records: list) -> str:
    """Markdown table of the runs."""
    head = (
        "| classes | images | det/img | detections | GT | protocol | scored | load s | eval s | total s "
        "| peak RSS GiB (after load) | MiB per M det | AP |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in records:
        if "error" in r:
            lines.append(
                f"| {r['classes']} | {r['images']} | {r['dets']} | {r['n_det']:,} | {r['n_gt']:,} | "
                f"{r['protocol']} | - | - | - | {r['total_s']:.0f} | - | - | {r['error']} |"
            )
            continue
        peak = r["peak_rss_mib"]
        after_load = r.get("load_peak_rss_mib")
        loaded = "" if after_load is None else f" ({after_load / 1024:.2f})"
        ap = r["metrics"].get("AP")
        lines.append(
            f"| {r['classes']:,} | {r['images']:,} | {r['dets']} | {r['n_det']:,} | {r['n_gt']:,} | "
            f"{r['protocol']} | {r['n_det_scored']:,} | {r['load_s']:.1f} | {r['eval_s']:.1f} | "
            f"{r['total_s']:.1f} | {peak / 1024:.2f}{loaded} | {peak / (r['n_det'] / 1e6):.0f} | "
            f"{'-' if ap is None else f'{ap:.4f}'} |"
        )
    return "\n".join(lines)


def main(argv: list | None = None) -> int:
    """Generate (cached) and run each size x protocol in a fresh process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", default="20000", help="comma-separated image counts")
    parser.add_argument("--classes", type=int, default=1203)
    parser.add_argument("--dets", type=int, default=300, help="detections per image")
    parser.add_argument("--lvis", action="store_true", help="LVIS federated labels in the GT")
    parser.add_argument("--protocols", default="coco", help="comma-separated presets")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/deteval-scale"))
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--memory-limit", type=int, default=None, help="bytes (deteval's --memory-limit)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--json", type=Path, default=None, help="append every record to this file")
    parser.add_argument("--generate-only", action="store_true")
    args = parser.parse_args(argv)
    print(
        f"# {datetime.date.today()} {platform.node()} {platform.processor() or platform.machine()} "
        f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.2f} python={platform.python_version()}",
        file=sys.stderr,
    )
    records = []
    for n_images in [int(n) for n in args.images.split(",")]:
        gt, dt, meta = ensure_data(args.cache, n_images, args.classes, args.dets, args.seed, args.lvis)
        print(f"# data {gt.parent}: {meta}", file=sys.stderr)
        if args.generate_only:
            continue
        for protocol in args.protocols.split(","):
            record = run_once(gt, dt, protocol, args)
            record.update(
                classes=args.classes,
                images=n_images,
                dets=args.dets,
                protocol=protocol,
                n_gt=meta["n_gt"],
                n_det=meta["n_det"],
                load_avg=os.getloadavg()[0],
            )
            records.append(record)
            print(json.dumps(record), flush=True)
            if args.json:
                with args.json.open("a") as f:
                    f.write(json.dumps(record) + "\n")
    if records:
        print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
