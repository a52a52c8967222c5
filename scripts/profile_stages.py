"""Time and peak memory of each stage of one COCO bbox evaluation, in one fresh process.

Stages: interpreter + ``import deteval``; ground truth (read + decode + columns + checks);
detections (the same); then inside ``evaluate``: grouping and sorting, candidate pairs, IoU,
greedy matching, the rest of matching (flags, areas, table), accumulation, summary; and the JSON
output (``to_json`` + ``dumps``). Each stage reports CPU seconds and the growth of the peak
resident set (VmHWM) it caused. The stages inside ``evaluate`` are measured by wrapping the
functions it calls (this script only; the library has no timing hooks).

Data: scripts/bench.py's cached datasets (``--images`` picks one; generate it first with
``python scripts/bench.py --sizes N --tools none``).

Usage::

    python scripts/profile_stages.py --images 5000
    DETEVAL_NO_EXTENSION=1 python scripts/profile_stages.py --images 5000   # without any C
    python scripts/profile_stages.py --data /tmp/scalecache/scale-v1-s0-n20000-k80-d50 --without deteval._cmatch
    python scripts/profile_stages.py --data /tmp/deteval-bench/keypoints-v2-seed0-n20000 --protocol coco-keypoints

Timings depend on the machine; nothing here is asserted by tests.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

START = time.process_time()


def _vm(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) // 1024
    return 0


class Stages:
    """CPU time and peak-memory growth per named stage (nested wrapped calls count once)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[float]] = {}
        self.depth = 0

    def add(self, name: str, seconds: float, peak_growth: int) -> None:
        row = self.rows.setdefault(name, [0.0, 0, 0])
        row[0] += seconds
        row[1] += peak_growth
        row[2] += 1

    def wrap(self, module: object, attr: str, name: str) -> None:
        inner = getattr(module, attr)

        def timed(*args, **kwargs):
            if self.depth:
                return inner(*args, **kwargs)
            self.depth += 1
            peak, t = _vm("VmHWM"), time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.add(name, time.process_time() - t, _vm("VmHWM") - peak)
                self.depth -= 1

        setattr(module, attr, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--cache", default="/tmp/deteval-bench")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data",
        help="a folder with gt.json and dt.json (scripts/scale.py --generate-only makes one) instead of "
        "bench.py's dataset",
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="MODULE",
        help="run without this compiled module (e.g. deteval._cmatch; repeatable): its numpy twin runs",
    )
    parser.add_argument(
        "--workload",
        choices=("evaluate", "analyze", "bootstrap"),
        default="evaluate",
        help="after evaluate, also time deteval.diagnose.analyze (TIDE, decomposition, confusion: the "
        "_canalyze kernels) or deteval.bootstrap (the _cboot kernels)",
    )
    parser.add_argument(
        "--resamples", type=int, default=100, help="bootstrap resamples (--workload bootstrap)"
    )
    parser.add_argument(
        "--protocol",
        default="coco",
        help="the protocol evaluated (e.g. coco-keypoints on bench.py --suite's keypoint data)",
    )
    args = parser.parse_args()
    if args.data:
        folder = Path(args.data)
        gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    else:
        folder = Path(args.cache) / f"coco-synth-v2-seed{args.seed}-n{args.images}"
        gt_path, dt_path = folder / "instances.json", folder / "results_bbox.json"
    if not folder.exists():
        sys.exit(f"{folder}: not generated; run: python scripts/bench.py --sizes {args.images} --tools none")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    if args.without:  # before the first dispatch loads a kernel
        speedups = importlib.import_module("deteval._speedups")
        speedups.SKIPPED.update(args.without)
        if "deteval.io._colparse" in args.without:  # the readers load their parser at import
            for reader in ("deteval.io.coco.fast", "deteval.io.yolo", "deteval.io.voc.results"):
                importlib.import_module(reader)._colparse = None
    stages = Stages()
    peak = _vm("VmHWM")
    import deteval

    stages.add("interpreter + import deteval", time.process_time() - START, _vm("VmHWM"))
    evaluate_modules = [
        importlib.import_module(f"deteval.evaluate.{part}") for part in ("run", "selection", "scoring")
    ]
    for attr, name in (
        ("group_rows", "grouping and sorting"),
        ("candidate_pairs", "candidate pairs"),
        ("pair_iou", "IoU"),
        ("match_coco", "greedy matching"),
        ("ranking_order", "grouping and sorting"),
        ("accumulate", "accumulation"),
        ("headline_metrics", "summary"),
        ("class_ap", "summary"),
    ):
        for evaluate_module in evaluate_modules:  # the modules of deteval.evaluate that call it
            if hasattr(evaluate_module, attr):
                stages.wrap(evaluate_module, attr, name)

    def run(name, fn, *a, **k):
        peak, t = _vm("VmHWM"), time.process_time()
        out = fn(*a, **k)
        stages.add(name, time.process_time() - t, _vm("VmHWM") - peak)
        return out

    gt = run(
        "ground truth: read, decode, columns, checks",
        deteval.load_ground_truth,
        str(gt_path),
    )
    dt = run(
        "detections: read, decode, columns, checks",
        deteval.load_detections,
        str(dt_path),
        gt,
    )
    t, peak = time.process_time(), _vm("VmHWM")
    result = deteval.evaluate(gt, dt, protocol=args.protocol)
    total_eval = time.process_time() - t
    inner = [v for k, v in stages.rows.items() if k != "interpreter + import deteval" and "read" not in k]
    stages.add(
        "evaluate: the rest (flags, areas, table, arrays)",
        total_eval - sum(v[0] for v in inner),
        _vm("VmHWM") - peak - sum(v[1] for v in inner),
    )
    report = importlib.import_module("deteval.report.results")
    run("output: to_json + dumps", lambda: report.dumps(report.to_json([result])))
    if args.workload == "analyze":
        diagnose = importlib.import_module("deteval.diagnose")
        run("analyze: TIDE, decomposition, confusion", diagnose.analyze, gt, dt, "coco")
    elif args.workload == "bootstrap":
        run(f"bootstrap: {args.resamples} resamples", deteval.bootstrap, gt, result, n=args.resamples)
    total = time.process_time() - START
    print(f"{folder.name}: {len(dt):,} detections, {len(gt):,} ground truths, AP {result.metrics['AP']:.6f}")
    print(f"{'stage':<52} {'CPU s':>7} {'share':>6} {'peak +MiB':>10}")
    for name, (seconds, growth, _) in stages.rows.items():
        print(f"{name:<52} {seconds:7.3f} {seconds / total:6.1%} {growth:10d}")
    print(f"{'total (process CPU)':<52} {total:7.3f} {'':>6} {_vm('VmHWM'):10d} peak MiB")


if __name__ == "__main__":
    main()
