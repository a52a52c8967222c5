"""Benchmark the training-loop Evaluator and the Dask shard evaluation.

Data: scripts/bench.py's seeded COCO-like generator (cached under ``--cache``).

* ``Evaluator.update`` per batch of ``--batch`` images (median and p95 over all batches) and
  ``compute()`` at ``--images`` images, beside faster-coco-eval's API on the same in-memory data
  (COCO dataset dict + results list -> ``COCOeval_faster`` evaluate/accumulate/summarize); the
  ``map`` of both is printed (they must agree). Peak memory is tracemalloc's peak of each phase
  (Python and numpy allocations; faster-coco-eval's C++ allocations are not seen by it).
* Dask: ``evaluate_shards`` on a ``LocalCluster(n_workers=2, processes=True)`` over ``--shards``
  image-disjoint shard files of ``--dask-images`` images, against ``deteval.evaluate`` of the
  concatenated file in this process; cluster start-up timed apart.

Usage::

    python scripts/bench_evaluator.py --images 5000 --dask-images 20000

Timings depend on the machine; nothing here is asserted by tests.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench  # noqa: E402  (scripts/bench.py: the generator)
from _bench_common import per_image  # noqa: E402

import deteval  # noqa: E402
from deteval.evaluator import Evaluator  # noqa: E402

TRACE = False  # tracemalloc slows Python allocations a lot: time with it off, then measure memory


@contextlib.contextmanager
def peak(out: dict, key: str):
    if TRACE:
        tracemalloc.start()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if TRACE:
            out[key + "_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        else:
            out[key + "_s"] = time.perf_counter() - t0


def bench_evaluator(gt: dict, dt: list, batch: int, categories: list) -> dict:
    targets, preds = per_image(gt, dt)
    ev = Evaluator("coco", box_format="xywh", class_ids=categories)
    times = []
    out: dict = {}
    with peak(out, "update_all"):
        for k in range(0, len(targets), batch):
            t0 = time.perf_counter()
            ev.update(preds[k : k + batch], targets[k : k + batch])
            times.append(time.perf_counter() - t0)
    with peak(out, "compute"):
        result = ev.compute()
    out["update_median_ms"] = 1e3 * statistics.median(times)
    out["update_p95_ms"] = 1e3 * float(np.percentile(times, 95))
    out["state_mb"] = len(__import__("pickle").dumps(ev.state_dict())) / 2**20
    out["AP"] = result.metrics["AP"]
    return out


def bench_fcoco(gt: dict, dt: list) -> dict:
    from faster_coco_eval import COCO, COCOeval_faster

    out: dict = {}
    with peak(out, "fcoco"), contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(gt)
        coco_dt = coco_gt.loadRes(dt)
        e = COCOeval_faster(coco_gt, coco_dt, "bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
    out["AP"] = float(e.stats[0])
    return out


def bench_dask(files, shards: int) -> dict:
    from distributed import Client, LocalCluster

    from deteval.integrations.dask import evaluate_shards

    dt = json.loads(files.dt("bbox").read_text())
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        parts = [[d for d in dt if d["image_id"] % shards == k] for k in range(shards)]
        for k, part in enumerate(parts):
            (folder / f"preds-{k:02d}.json").write_text(json.dumps(part))
        concat = folder / "all.json.txt"
        concat.write_text(json.dumps([d for part in parts for d in part]))
        t0 = time.perf_counter()
        one = deteval.evaluate(files.gt, str(concat), "coco")
        out["one_process_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        with (
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl,
            Client(cl) as client,
        ):
            out["cluster_start_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            sharded = evaluate_shards(files.gt, str(folder / "preds-*.json"), "coco", scheduler=client)
            out["dask_s"] = time.perf_counter() - t0
    out["identical"] = sharded.to_dict()["metrics"] == one.to_dict()["metrics"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--dask-images", type=int, default=20000, help="0 to skip")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "deteval-bench")
    args = parser.parse_args()
    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    files = bench.ensure_dataset(args.cache, args.images, args.seed, log)
    gt = json.loads(files.gt.read_text())
    dt = json.loads(files.dt("bbox").read_text())
    categories = [c["id"] for c in gt["categories"]]
    global TRACE
    ev = bench_evaluator(gt, dt, args.batch, categories)
    fc = bench_fcoco(gt, dt)
    TRACE = True  # second pass: peak memory only
    ev.update({k: v for k, v in bench_evaluator(gt, dt, args.batch, categories).items() if "peak" in k})
    fc.update({k: v for k, v in bench_fcoco(gt, dt).items() if "peak" in k})
    print(f"## Evaluator, {args.images} images, {len(dt)} detections, batches of {args.batch}")
    print(
        f"update per batch: median {ev['update_median_ms']:.2f} ms, p95 {ev['update_p95_ms']:.2f} ms; "
        f"all updates {ev['update_all_s']:.2f} s (peak {ev['update_all_peak_mb']:.0f} MB); "
        f"state {ev['state_mb']:.1f} MB pickled"
    )
    print(f"compute(): {ev['compute_s']:.3f} s (peak {ev['compute_peak_mb']:.0f} MB); AP {ev['AP']:.6f}")
    print(
        f"faster-coco-eval (COCO(dict) + loadRes(list) + evaluate/accumulate/summarize): "
        f"{fc['fcoco_s']:.2f} s (Python-side peak {fc['fcoco_peak_mb']:.0f} MB); AP {fc['AP']:.6f}"
    )
    if args.dask_images:
        files = bench.ensure_dataset(args.cache, args.dask_images, args.seed, log)
        dk = bench_dask(files, args.shards)
        print(f"## Dask, {args.dask_images} images, {args.shards} shards, LocalCluster(2 processes)")
        print(
            f"one process deteval.evaluate: {dk['one_process_s']:.2f} s; evaluate_shards: {dk['dask_s']:.2f} s "
            f"(+ {dk['cluster_start_s']:.2f} s cluster start); identical metrics: {dk['identical']}"
        )


if __name__ == "__main__":
    main()
