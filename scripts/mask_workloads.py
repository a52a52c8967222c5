"""Mask and keypoint benchmark data, and one timed evaluation of it (for profiling, not for tests).

``generate`` derives two workloads from scripts/bench.py's cached polygon dataset (generate it
first: ``python scripts/bench.py --sizes N --tools none``):

* ``results_segm_rle.json``: the polygon results with each polygon turned into pycocotools'
  compressed RLE at its image's size (``mask.frPyObjects`` + ``merge``), bbox kept;
* ``person_keypoints.json`` / ``results_keypoints.json``: 17-keypoint people (1-6 per image)
  and 20 noisy detections per image (keypoints jittered, some dropped, scores random).

``run`` evaluates one workload in this process and prints the stats and CPU time; run it under
``/usr/bin/time -v`` for peak memory or ``python -m cProfile -s cumtime`` for a profile.

Usage::

    python scripts/mask_workloads.py generate --images 5000
    /usr/bin/time -v python scripts/mask_workloads.py run segm-rle --images 5000
    python scripts/mask_workloads.py run keypoints --images 5000

Timings depend on the machine; nothing here is asserted by tests.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

WORKLOADS = ("segm-polygons", "segm-rle", "keypoints")


def _folder(cache: str, images: int, seed: int) -> Path:
    return Path(cache) / f"coco-synth-v2-seed{seed}-n{images}"


def _rle_results(folder: Path) -> None:
    from pycocotools import mask as mask_utils

    gt = json.loads((folder / "instances.json").read_text())
    size = {im["id"]: (im["height"], im["width"]) for im in gt["images"]}
    dets = json.loads((folder / "results_segm.json").read_text())
    for d in dets:
        h, w = size[d["image_id"]]
        rle = mask_utils.merge(mask_utils.frPyObjects(d["segmentation"], h, w))
        d["segmentation"] = {"size": [h, w], "counts": rle["counts"].decode("ascii")}
    (folder / "results_segm_rle.json").write_text(json.dumps(dets))


def _keypoints(folder: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = json.loads((folder / "instances.json").read_text())
    images = base["images"]
    names = [f"k{i}" for i in range(17)]
    anns, dets = [], []
    for im in images:
        w, h = im["width"], im["height"]
        n = int(rng.integers(1, 7))
        for _ in range(n):
            bw, bh = rng.uniform(20, w / 2), rng.uniform(40, h / 2)
            x0, y0 = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            kx, ky = x0 + rng.uniform(0, bw, 17), y0 + rng.uniform(0, bh, 17)
            v = rng.choice([0, 1, 2], 17, p=[0.2, 0.2, 0.6])
            kp = np.c_[np.where(v > 0, kx.round(), 0), np.where(v > 0, ky.round(), 0), v].ravel()
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": im["id"],
                    "category_id": 1,
                    "iscrowd": 0,
                    "bbox": [round(x0, 2), round(y0, 2), round(bw, 2), round(bh, 2)],
                    "area": round(bw * bh * 0.6, 2),
                    "keypoints": [int(t) for t in kp],
                    "num_keypoints": int((v > 0).sum()),
                }
            )
            for _ in range(3):
                s = rng.uniform(0, 0.08) * np.sqrt(bw * bh)
                dx, dy = kx + rng.normal(0, s, 17), ky + rng.normal(0, s, 17)
                dets.append(_det(rng, im["id"], dx, dy))
        for _ in range(20 - 3 * n):
            dx, dy = rng.uniform(0, w, 17), rng.uniform(0, h, 17)
            dets.append(_det(rng, im["id"], dx, dy))
    gt = {
        "images": images,
        "categories": [{"id": 1, "name": "person", "keypoints": names, "skeleton": []}],
        "annotations": anns,
    }
    (folder / "person_keypoints.json").write_text(json.dumps(gt))
    (folder / "results_keypoints.json").write_text(json.dumps(dets))


def _det(rng: np.random.Generator, image_id: int, x: np.ndarray, y: np.ndarray) -> dict:
    kp = np.c_[x.round(2), y.round(2), rng.uniform(0, 1, 17).round(3)].ravel()
    return {
        "image_id": image_id,
        "category_id": 1,
        "keypoints": kp.tolist(),
        "score": round(float(rng.uniform()), 4),
    }


def run(workload: str, folder: Path, use_pycocotools: bool) -> None:
    files = {
        "segm-polygons": ("instances.json", "results_segm.json", "segm"),
        "segm-rle": ("instances.json", "results_segm_rle.json", "segm"),
        "keypoints": ("person_keypoints.json", "results_keypoints.json", "keypoints"),
    }
    gt_name, dt_name, iou_type = files[workload]
    t = time.perf_counter()
    if use_pycocotools:
        import contextlib
        import io

        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval

        with contextlib.redirect_stdout(io.StringIO()):
            cg = COCO(str(folder / gt_name))
            cd = cg.loadRes(str(folder / dt_name))
            ev = COCOeval(cg, cd, iou_type)
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
        stats = ev.stats.tolist()
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        import deteval

        gt = deteval.load_ground_truth(str(folder / gt_name))
        dt = deteval.load_detections(str(folder / dt_name), gt)
        preset = "coco-keypoints" if iou_type == "keypoints" else "coco"
        protocol = deteval.get_protocol(preset).replace(iou_type=iou_type)
        if iou_type == "segm":
            protocol = protocol.replace(mask_iou="raster")
        result = deteval.evaluate(gt, dt, protocol=protocol)
        stats = [result.metrics[k] for k in sorted(result.metrics) if isinstance(result.metrics[k], float)]
    print(workload, f"{time.perf_counter() - t:.2f} s", json.dumps(stats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("generate", "run"))
    parser.add_argument("workload", nargs="?", choices=WORKLOADS)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--cache", default="/tmp/deteval-bench")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pycocotools", action="store_true", help="run pycocotools instead (reference)")
    args = parser.parse_args()
    folder = _folder(args.cache, args.images, args.seed)
    if not folder.exists():
        sys.exit(f"{folder}: not generated; run: python scripts/bench.py --sizes {args.images} --tools none")
    if args.command == "generate":
        _rle_results(folder)
        _keypoints(folder, args.seed)
    else:
        run(args.workload, folder, args.pycocotools)


if __name__ == "__main__":
    main()
