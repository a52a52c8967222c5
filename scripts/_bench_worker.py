r"""Time one evaluation tool on one dataset, in a fresh process.

``scripts/bench.py`` starts this script once per tool and repetition, so that
every measurement pays its own imports, JSON parsing and memory growth, and so
that the peak RSS is the tool's own. It prints exactly one JSON line on stdout::

    {"tool": ..., "import_s": ..., "load_s": ..., "eval_s": ..., "inproc_s": ...,
     "peak_rss_mib": ..., "ru_maxrss_mib": ..., "children_peak_rss_mib": ..., "cpu_s": ...,
     "stats": [12 floats, -1 where undefined], "notes": [...]}

``load_s`` is ``null`` when the tool does its loading inside the timed
evaluation call (deteval with ``--deteval-call paths``).

Usage
-----
    python scripts/_bench_worker.py --tool pycocotools --gt gt.json --dt dt.json --iou-type bbox
    python scripts/_bench_worker.py --tool deteval --gt gt.json --dt dt.json --iou-type segm \\
        --mask-iou exact --workers 2
    python scripts/_bench_worker.py --versions
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import sys
import time

METRIC_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
VERSION_DISTS = ("deteval", "pycocotools", "faster-coco-eval", "orjson", "numpy", "shapely")


def _ru_maxrss_mib() -> float:
    """``getrusage(RUSAGE_SELF).ru_maxrss`` in MiB (Linux reports KiB).

    Linux carries this value over ``execve`` from the process that spawned us
    (Python's subprocess uses vfork), so it is never below the parent's peak.
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _peak_rss_mib() -> float:
    """Peak RSS of this process in MiB.

    ``VmHWM`` (the high-water mark of the address space created by ``execve``), falling back to
    ``ru_maxrss`` where /proc is missing.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return _ru_maxrss_mib()


@contextlib.contextmanager
def _quiet_stdout():
    """Send everything the tools print to /dev/null (our JSON line goes to the real stdout)."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def _run_orjson(args: argparse.Namespace) -> dict:
    """The floor: read and parse both JSON files, nothing else."""
    t0 = time.perf_counter()
    import orjson

    t1 = time.perf_counter()
    with open(args.gt, "rb") as f:
        gt = orjson.loads(f.read())
    with open(args.dt, "rb") as f:
        dt = orjson.loads(f.read())
    t2 = time.perf_counter()
    del gt, dt
    return {"import_s": t1 - t0, "load_s": t2 - t1, "eval_s": 0.0, "stats": None}


def _run_cocoapi(args: argparse.Namespace, coco_cls, eval_cls, eval_kwargs: dict) -> tuple:
    """Shared body for pycocotools and faster-coco-eval (same API)."""
    with _quiet_stdout():
        t0 = time.perf_counter()
        gt = coco_cls(args.gt)
        dt = gt.loadRes(args.dt)
        t1 = time.perf_counter()
        ev = eval_cls(gt, dt, args.iou_type, **eval_kwargs)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        t2 = time.perf_counter()
    stats = [float(v) for v in list(ev.stats)[:12]]
    return t1 - t0, t2 - t1, stats


def _run_pycocotools(args: argparse.Namespace) -> dict:
    """pycocotools: COCO, loadRes, COCOeval evaluate/accumulate/summarize."""
    t0 = time.perf_counter()
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    t1 = time.perf_counter()
    load_s, eval_s, stats = _run_cocoapi(args, COCO, COCOeval, {})
    return {"import_s": t1 - t0, "load_s": load_s, "eval_s": eval_s, "stats": stats}


def _run_fcoco(args: argparse.Namespace) -> dict:
    """faster-coco-eval: its COCO and COCOeval_faster (C++ evaluate + accumulate)."""
    t0 = time.perf_counter()
    from faster_coco_eval import COCO, COCOeval_faster

    t1 = time.perf_counter()
    kwargs = {"print_function": lambda *a, **k: None}
    load_s, eval_s, stats = _run_cocoapi(args, COCO, COCOeval_faster, kwargs)
    return {"import_s": t1 - t0, "load_s": load_s, "eval_s": eval_s, "stats": stats}


def _deteval_protocol(deteval, iou_type: str, mask_iou: str | None, name: str | None = None):
    """Name the protocol deteval is benchmarked with.

    ``name`` (``--protocol``, scripts/scale.py), else "coco", or its segm variant.
    """
    if name is not None:
        return name
    if iou_type == "bbox":
        return "coco"
    return deteval.get_protocol("coco").replace(iou_type="segm", mask_iou=mask_iou or "raster")


def _accepts_kwarg(func, name: str) -> bool:
    """Whether ``func`` takes keyword ``name`` (directly or through ``**kwargs``)."""
    import inspect

    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _metrics_to_stats(metrics: dict) -> list:
    """Deteval's metrics dict -> pycocotools' 12 stats (NaN -> -1)."""
    out = []
    for name in METRIC_NAMES:
        value = metrics.get(name)
        value = float("nan") if value is None else float(value)
        out.append(-1.0 if math.isnan(value) else value)
    return out


def _deteval_call(deteval, args: argparse.Namespace, protocol, kwargs: dict) -> tuple:
    """Time deteval; returns (load_s or None, eval_s, result).

    ``--deteval-call split`` loads with the public ``deteval.load_ground_truth`` /
    ``deteval.load_detections`` (exactly what ``evaluate`` does with paths) and then
    evaluates the loaded values, so load and evaluation are timed apart;
    ``paths`` times the single call ``deteval.evaluate(gt_path, dt_path, ...)``.
    """
    split = args.deteval_call == "split" and all(
        hasattr(deteval, name) for name in ("load_ground_truth", "load_detections")
    )
    t0 = time.perf_counter()
    if not split:
        result = deteval.evaluate(args.gt, args.dt, protocol=protocol, **kwargs)
        return None, time.perf_counter() - t0, result
    gt = deteval.load_ground_truth(args.gt)
    dt = deteval.load_detections(args.dt, gt)
    t1 = time.perf_counter()
    args.load_peak_rss_mib = _peak_rss_mib()  # scripts/scale.py: loading's share of the peak
    result = deteval.evaluate(gt, dt, protocol=protocol, **kwargs)
    return t1 - t0, time.perf_counter() - t1, result


def _run_deteval(args: argparse.Namespace) -> dict:
    """deteval.evaluate(..., protocol=...), workers passed when supported."""
    t0 = time.perf_counter()
    import deteval

    t1 = time.perf_counter()
    from deteval import memory
    from deteval.memory import memory_limit

    # As `deteval evaluate` does for inputs over 64 MiB: freed large arrays go back to the
    # system (glibc's mmap threshold fixed), so the peak is the CLI's (docs/benchmarks.md).
    inputs = [p for p in (args.gt, args.dt) if os.path.isfile(p)]
    if sum(os.path.getsize(p) for p in inputs) > memory.LARGE_INPUT_BYTES:
        memory.map_large_allocations(memory.CLI_MMAP_THRESHOLD)

    protocol = _deteval_protocol(deteval, args.iou_type, args.mask_iou, args.protocol)
    kwargs, notes = {}, []
    if args.workers is not None:
        if _accepts_kwarg(deteval.evaluate, "workers"):
            kwargs["workers"] = args.workers
        else:
            notes.append("deteval.evaluate has no 'workers' argument; ran without it")
    with _quiet_stdout(), memory_limit(args.memory_limit):
        load_s, eval_s, result = _deteval_call(deteval, args, protocol, kwargs)
    return {
        "import_s": t1 - t0,
        "load_s": load_s,
        "eval_s": eval_s,
        "stats": _metrics_to_stats(result.metrics),
        "metrics": {k: None if v != v else float(v) for k, v in result.metrics.items()},
        "n_det_scored": int(len(result.table.det_score)),
        "load_peak_rss_mib": getattr(args, "load_peak_rss_mib", None),
        "notes": notes,
    }


RUNNERS = {
    "orjson": _run_orjson,
    "pycocotools": _run_pycocotools,
    "fcoco": _run_fcoco,
    "deteval": _run_deteval,
}


def _versions() -> dict:
    """Installed versions of the benchmarked packages; deteval's as the workers import it."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for dist in VERSION_DISTS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    # deteval: the version of the code the workers import. An editable install's metadata keeps the
    # version it was installed at (the 0.4.3 suite's header said 0.4.2).
    try:
        import deteval

        version = getattr(deteval, "__version__", "unknown")
        out["deteval"] = version if out["deteval"] == version else f"{version} (source tree)"
    except Exception as exc:  # report, never fail the header
        out["deteval"] = f"not importable: {type(exc).__name__}: {exc}"
    return out


def _parse_args(argv: list | None) -> argparse.Namespace:
    """Command line of the worker (bench.py builds it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", choices=sorted(RUNNERS))
    parser.add_argument("--gt")
    parser.add_argument("--dt")
    parser.add_argument("--iou-type", choices=("bbox", "segm"), default="bbox")
    parser.add_argument("--mask-iou", choices=("raster", "exact"), default=None)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--protocol", default=None, help="deteval: a preset name (default: coco)")
    parser.add_argument(
        "--memory-limit", type=int, default=None, help="deteval: bytes, as the CLI's --memory-limit"
    )
    parser.add_argument(
        "--deteval-call",
        choices=("split", "paths"),
        default="split",
        help="deteval: time loaders and evaluate apart, or evaluate(paths) as one call",
    )
    parser.add_argument("--versions", action="store_true", help="print package versions and exit")
    args = parser.parse_args(argv)
    if not args.versions and not (args.tool and args.gt and args.dt):
        parser.error("--tool, --gt and --dt are required")
    return args


def main(argv: list | None = None) -> int:
    """Run one tool once and print its JSON line."""
    start = time.perf_counter()
    args = _parse_args(argv)
    import json

    if args.versions:
        print(json.dumps(_versions()))
        return 0
    record = RUNNERS[args.tool](args)
    record.setdefault("notes", [])
    record["tool"] = args.tool
    record["inproc_s"] = time.perf_counter() - start
    record["peak_rss_mib"] = _peak_rss_mib()
    record["ru_maxrss_mib"] = _ru_maxrss_mib()
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    record["cpu_s"] = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    # Largest forked helper (deteval --workers), pages shared with us at fork included.
    record["children_peak_rss_mib"] = kids.ru_maxrss / 1024.0
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
