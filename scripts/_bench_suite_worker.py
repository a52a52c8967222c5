r"""One (workload, tool) run of ``scripts/bench.py --suite``, in a fresh process.

Prints one JSON line on stdout: ``{"ok", "import_s", "timed_s", "peak_rss_mib", "cpu_s",
"stats", "stat_names", "notes"}``. ``timed_s`` is the tool's own work as a user calls it
(loading included for the file workloads; for ``evaluator`` the update and compute calls
only, the arrays being what a data loader yields); the parent times the whole process.
``stats`` are the numbers compared between tools (the 12 COCO stats, the 10 keypoint
stats, LVIS' AP / APr / APc / APf, TIDE's six dAP, ...), NaN as None.

Usage::

    python scripts/_bench_suite_worker.py WORKLOAD TOOL --gt GT --dt DT [--workers auto]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import resource
import sys
import time

COCO_STATS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
KPT_STATS = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")
LVIS_STATS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf")
TIDE_STATS = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _floats(values) -> list:
    out = []
    for v in values:
        v = float(v)
        out.append(None if math.isnan(v) or v == -1.0 else v)
    return out


@contextlib.contextmanager
def _silent():
    with contextlib.redirect_stdout(io.StringIO()):
        yield


# ------------------------------------------------------------------------------------------------
# COCO-interface tools (bbox, segm, keypoints)
# ------------------------------------------------------------------------------------------------


def _cocoapi(module: str, iou_type: str, gt: str, dt: str) -> list:
    """pycocotools-shaped packages: COCO, loadRes, COCOeval evaluate/accumulate/summarize."""
    if module == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    elif module == "fcoco":
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as COCOeval
    elif module == "hotcoco":
        from hotcoco import COCO, COCOeval
    elif module == "ultrafast":
        from ultrafast_pycocotools import COCO, COCOeval
    else:
        raise ValueError(module)
    with _silent():
        coco_gt = COCO(gt)
        coco_dt = coco_gt.loadRes(dt)
        ev = COCOeval(coco_gt, coco_dt, iou_type)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return _floats(ev.stats)


def _vernier(iou_type: str, gt: str, dt: str) -> list:
    """Vernier's own pipeline on the file bytes (its fastest entry point)."""
    from vernier import instance

    run = {
        "bbox": instance.evaluate_bbox_summary,
        "segm": instance.evaluate_segm_summary,
    }.get(iou_type)
    with open(gt, "rb") as f:
        gt_bytes = f.read()
    with open(dt, "rb") as f:
        dt_bytes = f.read()
    if iou_type == "keypoints":
        summary = instance.evaluate_keypoints_summary(
            gt_bytes, dt_bytes, parity_mode="strict", max_dets=[20], use_cats=True, sigmas={}
        )
    else:
        summary = run(gt_bytes, dt_bytes, parity_mode="strict", max_dets=[1, 10, 100], use_cats=True)
    return _floats(summary.stats)


def _deteval_file(protocol: str, iou_type: str, gt: str, dt: str, workers: str) -> list:
    import deteval
    from deteval import memory

    if sum(os.path.getsize(p) for p in (gt, dt)) > memory.LARGE_INPUT_BYTES:
        memory.map_large_allocations(memory.CLI_MMAP_THRESHOLD)  # as `deteval evaluate` does
    p = deteval.get_protocol(protocol)
    if iou_type != p.iou_type:
        p = p.replace(iou_type=iou_type, **({"mask_iou": "raster"} if iou_type == "segm" else {}))
    with _warnings_off():
        result = deteval.evaluate(gt, dt, p, workers=workers)
    names = {"coco-keypoints": KPT_STATS, "lvis": LVIS_STATS}.get(protocol, COCO_STATS)
    return _floats(result.metrics.get(n, math.nan) for n in names)


@contextlib.contextmanager
def _warnings_off():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ------------------------------------------------------------------------------------------------
# LVIS
# ------------------------------------------------------------------------------------------------


def _lvis(tool: str, gt: str, dt: str, workers: str) -> list:
    if tool == "deteval":
        return _deteval_file("lvis", "bbox", gt, dt, workers)
    if tool == "lvis-api":
        import numpy

        setattr(numpy, "float", float)  # noqa: B010  (lvis-api 0.5.3 still reads the removed np.float)
        from lvis import LVIS, LVISEval, LVISResults

        with _silent():
            lvis_gt = LVIS(gt)
            ev = LVISEval(lvis_gt, LVISResults(lvis_gt, dt, max_dets=300), "bbox")
            ev.run()
        return _floats(ev.results[n] for n in LVIS_STATS)
    if tool == "hotcoco":
        import hotcoco

        with _silent():
            ev = hotcoco.LVISeval(hotcoco.LVIS(gt), hotcoco.LVISResults(hotcoco.LVIS(gt), dt), "bbox")
            ev.run()
        res = ev.get_results() if hasattr(ev, "get_results") else ev.results
        return _floats(res.get(n, math.nan) for n in LVIS_STATS)
    if tool == "ultrafast":
        from ultrafast_pycocotools import COCO, COCOeval

        with _silent():
            coco_gt = COCO(gt, verbose=False)
            ev = COCOeval(
                coco_gt, coco_gt.loadRes(dt), "bbox", lvis_style=True, print_function=lambda s: None
            )
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
        res = ev.stats_as_dict if isinstance(ev.stats_as_dict, dict) else ev.stats_as_dict()
        return _floats(res.get(n, math.nan) for n in LVIS_STATS)
    raise ValueError(tool)


# ------------------------------------------------------------------------------------------------
# analyze (TIDE)
# ------------------------------------------------------------------------------------------------


def _tide_deteval(gt: str, dt: str) -> list:
    import deteval
    from deteval.tide import tide_errors

    g = deteval.load_ground_truth(gt)
    d = deteval.load_detections(dt, g)
    with _warnings_off():
        found = tide_errors(g, d)
    main = found.to_dict()["main"]
    return _floats(100 * main[k.lower()] for k in TIDE_STATS)  # tidecv's unit: AP points


def _tide_tidecv(gt: str, dt: str) -> list:
    import orjson
    from _bench_common import tidecv_data
    from tidecv import TIDE

    gt_json = orjson.loads(open(gt, "rb").read())
    dt_json = orjson.loads(open(dt, "rb").read())
    g, p = tidecv_data(gt_json, dt_json)
    tide = TIDE()
    with _silent():
        tide.evaluate(g, p, mode=TIDE.BOX)
        errors = tide.get_main_errors()
    (run_errors,) = errors.values()
    return _floats(run_errors[k] for k in TIDE_STATS)


def _tide_hotcoco(gt: str, dt: str) -> list:
    import hotcoco

    with _silent():
        coco_gt = hotcoco.COCO(gt)
        ev = hotcoco.COCOeval(coco_gt, coco_gt.loadRes(dt), "bbox")
        ev.evaluate()
        found = ev.tide_errors()
    return _floats(100 * found["delta_ap"][k] for k in TIDE_STATS)


# ------------------------------------------------------------------------------------------------
# Evaluator (training loop): per-image arrays in batches of 16
# ------------------------------------------------------------------------------------------------


def _batches(gt: str, dt: str) -> tuple:
    import orjson
    from _bench_common import per_image

    g = orjson.loads(open(gt, "rb").read())
    d = orjson.loads(open(dt, "rb").read())
    targets, preds = per_image(g, d)
    return g, targets, preds


def _evaluator(tool: str, gt: str, dt: str) -> tuple:
    """(seconds of update + compute, stats)."""
    g, targets, preds = _batches(gt, dt)
    batch = 16
    if tool == "deteval":
        from deteval.evaluator import Evaluator

        t0 = time.perf_counter()
        ev = Evaluator("coco", box_format="xywh", class_ids=[c["id"] for c in g["categories"]])
        for k in range(0, len(targets), batch):
            ev.update(preds[k : k + batch], targets[k : k + batch])
        with _warnings_off():
            result = ev.compute()
        return time.perf_counter() - t0, _floats(result.metrics[n] for n in COCO_STATS)
    if tool == "hotcoco":
        import hotcoco

        images = {im["id"]: im for im in g["images"]}

        def anns(rows: list, kind: str) -> list:
            out = []
            for r in rows:
                for j in range(len(r["boxes"])):
                    a = {
                        "image_id": r["image_id"],
                        "category_id": int(r["labels"][j]),
                        "bbox": r["boxes"][j].tolist(),
                    }
                    if kind == "gt":
                        a.update(id=len(out) + 1, iscrowd=int(r["iscrowd"][j]), area=float(r["area"][j]))
                    else:
                        a["score"] = float(r["scores"][j])
                    out.append(a)
            return out

        t0 = time.perf_counter()
        se = hotcoco.StreamingEval(g["categories"], iou_type="bbox")
        next_id = 0
        for k in range(0, len(targets), batch):
            gts = anns(targets[k : k + batch], "gt")
            for a in gts:
                next_id += 1
                a["id"] = next_id
            se.update(
                [images[t["image_id"]] for t in targets[k : k + batch]], gts, anns(preds[k : k + batch], "dt")
            )
        with _silent():
            ev = se.finalize()
            ev.accumulate()
            ev.summarize()
        return time.perf_counter() - t0, _floats(ev.stats)
    if tool == "torchmetrics":
        import torch
        from torchmetrics.detection import MeanAveragePrecision

        t0 = time.perf_counter()
        metric = MeanAveragePrecision(box_format="xywh", iou_type="bbox", backend="faster_coco_eval")
        for k in range(0, len(targets), batch):
            metric.update(
                [
                    {
                        "boxes": torch.from_numpy(p["boxes"]),
                        "scores": torch.from_numpy(p["scores"]),
                        "labels": torch.from_numpy(p["labels"]),
                    }
                    for p in preds[k : k + batch]
                ],
                [
                    {
                        "boxes": torch.from_numpy(t["boxes"]),
                        "labels": torch.from_numpy(t["labels"]),
                        "iscrowd": torch.from_numpy(t["iscrowd"]),
                        "area": torch.from_numpy(t["area"]),
                    }
                    for t in targets[k : k + batch]
                ],
            )
        with _silent():
            out = metric.compute()
        keys = (
            "map",
            "map_50",
            "map_75",
            "map_small",
            "map_medium",
            "map_large",
            "mar_1",
            "mar_10",
            "mar_100",
            "mar_small",
            "mar_medium",
            "mar_large",
        )
        return time.perf_counter() - t0, _floats(float(out[k]) for k in keys)
    raise ValueError(tool)


# ------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------


def run(workload: str, tool: str, args: argparse.Namespace) -> tuple:
    """(import seconds, timed seconds, stats) of one run."""
    gt, dt = args.gt, args.dt
    t0 = time.perf_counter()
    if workload == "import":
        __import__(
            {
                "deteval": "deteval",
                "hotcoco": "hotcoco",
                "ultrafast": "ultrafast_pycocotools",
                "vernier": "vernier",
                "fcoco": "faster_coco_eval",
                "pycocotools": "pycocotools.cocoeval",
                "lvis-api": "lvis",
                "torchmetrics": "torchmetrics.detection",
            }[tool]
        )
        return time.perf_counter() - t0, time.perf_counter() - t0, []
    if workload in ("bbox", "segm-poly", "segm-rle", "keypoints"):
        iou_type = {"bbox": "bbox", "segm-poly": "segm", "segm-rle": "segm", "keypoints": "keypoints"}[
            workload
        ]
        if tool == "deteval":
            protocol = "coco-keypoints" if iou_type == "keypoints" else "coco"
            stats = _deteval_file(protocol, iou_type, gt, dt, args.workers)
        elif tool == "vernier":
            stats = _vernier(iou_type, gt, dt)
        else:
            stats = _cocoapi(tool, iou_type, gt, dt)
        return None, time.perf_counter() - t0, stats
    if workload == "lvis":
        stats = _lvis(tool, gt, dt, args.workers)
        return None, time.perf_counter() - t0, stats
    if workload == "analyze":
        fn = {"deteval": _tide_deteval, "tidecv": _tide_tidecv, "hotcoco": _tide_hotcoco}[tool]
        stats = fn(gt, dt)
        return None, time.perf_counter() - t0, stats
    if workload == "evaluator":
        timed, stats = _evaluator(tool, gt, dt)
        return None, timed, stats
    if workload == "report":
        from deteval.cli import main

        with _silent(), contextlib.redirect_stderr(io.StringIO()):
            code = main(["report", "--gt", gt, "--dt", dt, "--out", args.out, "-q"])
        if code != 0:
            raise RuntimeError(f"deteval report exited {code}")
        return None, time.perf_counter() - t0, []
    if workload == "bootstrap":
        from deteval.cli import main

        with _silent(), contextlib.redirect_stderr(io.StringIO()):
            code = main(
                [
                    "evaluate",
                    "--gt",
                    gt,
                    "--dt",
                    dt,
                    "--bootstrap",
                    str(args.resamples),
                    "-q",
                    "--format",
                    "json",
                ]
            )
        if code != 0:
            raise RuntimeError(f"deteval evaluate --bootstrap exited {code}")
        return None, time.perf_counter() - t0, []
    raise ValueError(workload)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("workload")
    parser.add_argument("tool")
    parser.add_argument("--gt", default="")
    parser.add_argument("--dt", default="")
    parser.add_argument("--out", default=os.devnull)
    parser.add_argument("--workers", default="auto")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)
    cpu0 = time.process_time()
    record: dict = {"ok": True, "notes": []}
    try:
        import_s, timed_s, stats = run(args.workload, args.tool, args)
        record.update(import_s=import_s, timed_s=timed_s, stats=stats)
    except Exception as error:  # reported by the parent as this tool's failure
        record.update(ok=False, error=f"{type(error).__name__}: {error}"[:600])
    record.update(peak_rss_mib=_peak_rss_mib(), cpu_s=time.process_time() - cpu0)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    record["children_cpu_s"] = children.ru_utime + children.ru_stime
    sys.stdout.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
