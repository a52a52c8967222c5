"""Time the bootstrap: N resamples of two detectors vs one evaluate of one detector.

Reuses scripts/bench.py's COCO-like generator (cached). Detector B is A with jittered scores.

    python scripts/bench_bootstrap.py --images 5000 --resamples 1000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import bench  # noqa: E402

import deteval  # noqa: E402
from deteval.stats import bootstrap  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--protocol", default="coco")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--cache", default="/tmp/deteval-bench-cache")
    args = ap.parse_args(argv)
    files = bench.ensure_dataset(Path(args.cache), args.images, 0, print)
    gt = deteval.load_ground_truth(str(files.gt))
    dt_a = deteval.load_detections(str(files.dt("bbox")), gt)
    rng = np.random.default_rng(1)
    dt_b = deteval.data.Detections(
        image=dt_a.image,
        category=dt_a.category,
        box=dt_a.box,
        score=np.clip(dt_a.score + rng.normal(0, 0.05, len(dt_a)), 0, 1),
        order=dt_a.order,
        has_box=dt_a.has_box,
    )
    t0, c0 = time.perf_counter(), time.process_time()
    res_a = deteval.evaluate(gt, dt_a, args.protocol)
    t_eval, c_eval = time.perf_counter() - t0, time.process_time() - c0
    res_b = deteval.evaluate(gt, dt_b, args.protocol)
    t0, c0 = time.perf_counter(), time.process_time()
    boot = bootstrap(gt, {"A": res_a, "B": res_b}, n=args.resamples, seed=0, workers=args.workers)
    t_boot, c_boot = time.perf_counter() - t0, time.process_time() - c0
    print(f"{args.images} images, {len(gt)} objects, {len(dt_a)} detections, protocol {args.protocol}")
    print(f"evaluate (one detector, in memory): {t_eval:.2f} s wall, {c_eval:.2f} s CPU")
    print(
        f"bootstrap {args.resamples} resamples x 2 detectors, workers={args.workers}: {t_boot:.1f} s wall "
        f"= {t_boot / t_eval:.1f}x one evaluate"
        + (
            f"; {c_boot:.1f} s CPU = {c_boot / c_eval:.1f}x (CPU time is steadier on a shared machine)"
            if args.workers <= 1
            else ""
        )
    )
    for r in boot.results:
        print(r.name, {k: v.as_list() for k, v in list(r.metrics_ci.items())[:3]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
