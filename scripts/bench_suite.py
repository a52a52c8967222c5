r"""``scripts/bench.py --suite``: every workload against every peer that has it, in one run.

Workloads (``--workloads``) and the tools timed on each:

=============  ==================================================================================
bbox           deteval, hotcoco, ultrafast-pycocotools, vernier, faster-coco-eval, pycocotools
segm-poly      the same, polygon masks (deteval: ``mask_iou: raster``, pycocotools' numbers)
segm-rle       the same, compressed-RLE masks (the polygons rasterised once by pycocotools)
keypoints      deteval (``keypoints`` preset), hotcoco, ultrafast, vernier, faster-coco-eval,
               pycocotools; generated people with 17 keypoints, up to 20 detections an image
lvis           deteval (``lvis`` preset), hotcoco, ultrafast (``lvis_style``), lvis-api; 1,203
               classes, 300 detections an image, federated labels (scripts/scale.py's data)
analyze        TIDE: deteval's ``tide_errors``, tidecv, hotcoco's ``tide_errors``
evaluator      the training-loop evaluators fed batches of 16 images' arrays: deteval's
               ``Evaluator``, hotcoco's ``StreamingEval``, torchmetrics' ``MeanAveragePrecision``
               (faster_coco_eval backend); timed: the update and compute calls
report         ``deteval report`` on the 4-class fixture (no peer writes the same document)
bootstrap      ``deteval evaluate --bootstrap 1000`` (whole process)
import         ``import deteval`` and each peer's import
=============  ==================================================================================

Every run is a fresh process (``scripts/_bench_suite_worker.py``); the two input files are read
once first, so every tool finds them in the page cache; the repetitions interleave the tools
(rep 1 of every tool, then rep 2, ...); the table gives medians of ``--repeat``, the
peak RSS (``VmHWM``), the ratio to the best peer on the workload's time, and whether the
numbers agree. The compared numbers must be exactly equal (TIDE: to 1e-9, tidecv reports
percent); where they are not, the ratio column says ``differs`` instead of a ratio. Peers that
are not installed are listed with the reason and skipped; slow reference tools (pycocotools,
lvis-api, torchmetrics, tidecv, faster-coco-eval) run up to ``--slow-max-images`` images only.

The time compared is the whole process (interpreter start, imports, reading, evaluating) for
the file workloads and ``import``; ``timed`` (the tool's own calls, the data already in arrays)
for ``evaluator``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
from _bench_common import MODULES, SUITE_WORKLOADS

SUITE_WORKER = Path(__file__).resolve().with_name("_bench_suite_worker.py")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

WORKLOADS = SUITE_WORKLOADS
TOOLS = {
    "bbox": ("deteval", "hotcoco", "ultrafast", "vernier", "fcoco", "pycocotools"),
    "segm-poly": ("deteval", "hotcoco", "ultrafast", "vernier", "fcoco", "pycocotools"),
    "segm-rle": ("deteval", "hotcoco", "ultrafast", "vernier", "fcoco", "pycocotools"),
    "keypoints": ("deteval", "hotcoco", "ultrafast", "vernier", "fcoco", "pycocotools"),
    "lvis": ("deteval", "hotcoco", "ultrafast", "lvis-api"),
    "analyze": ("deteval", "tidecv", "hotcoco"),
    "evaluator": ("deteval", "hotcoco", "torchmetrics"),
    "report": ("deteval",),
    "bootstrap": ("deteval",),
    "import": ("deteval", "hotcoco", "ultrafast", "vernier", "fcoco", "pycocotools"),
}
PACKAGES = {
    "ultrafast": "ultrafast-pycocotools",
    "fcoco": "faster-coco-eval",
    "lvis-api": "lvis",
}
#: Tools run up to --slow-max-images only. faster-coco-eval takes 5-15x deteval's time (7 s for
#: boxes at 5k, ~30 s at 20k); at 20k and 50k its masks alone would add about 20 minutes a run.
SLOW = {"pycocotools", "lvis-api", "torchmetrics", "tidecv", "fcoco"}
SIZED = {"bbox", "segm-poly", "segm-rle", "keypoints", "lvis", "analyze", "evaluator"}
QUICK_SIZES = {"bbox": [5000], "segm-poly": [500], "segm-rle": [500], "keypoints": [2000], "lvis": [1000]}
FULL_SIZES = {
    "bbox": [5000, 20000, 50000],
    "segm-poly": [5000, 20000, 50000],
    "segm-rle": [5000, 20000, 50000],
    "keypoints": [5000, 20000, 50000],
    "lvis": [5000, 20000, 50000],
}
FIXED_SIZES = {"analyze": [5000], "evaluator": [5000], "bootstrap": [5000]}


def missing_tools() -> dict:
    """Tools whose package is not importable here, with the reason."""
    out = {}
    for tool, module in MODULES.items():
        if tool != "deteval" and importlib.util.find_spec(module) is None:  # deteval: this checkout
            out[tool] = (
                f"{PACKAGES.get(tool, tool)} is not installed (pip install {PACKAGES.get(tool, tool)})"
            )
    return out


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------


def _write(path: Path, obj) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(obj))
    os.replace(tmp, path)


def rle_dataset(files, log) -> tuple:
    """bench.py's polygon dataset with every mask as compressed RLE (pycocotools rasterises once)."""
    from pycocotools import mask as mask_utils

    root = files.root / "rle"
    gt_path, dt_path = root / "instances.json", root / "results_segm.json"
    if dt_path.exists():
        return gt_path, dt_path
    t0 = time.perf_counter()
    log(f"  converting {files.root.name} polygons to RLE ...")
    root.mkdir(exist_ok=True)
    gt = orjson.loads(files.gt.read_bytes())
    size = {im["id"]: (im["height"], im["width"]) for im in gt["images"]}

    def to_rle(seg: list, image_id: int) -> dict:
        h, w = size[image_id]
        rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
        return {"size": [int(h), int(w)], "counts": rle["counts"].decode("ascii")}

    for a in gt["annotations"]:
        a["segmentation"] = to_rle(a["segmentation"], a["image_id"])
    _write(gt_path, gt)
    del gt
    dt = orjson.loads(files.dt("segm").read_bytes())
    for d in dt:
        d["segmentation"] = to_rle(d["segmentation"], d["image_id"])
    _write(dt_path, dt)
    log(f"  done in {time.perf_counter() - t0:.1f} s")
    return gt_path, dt_path


KEYPOINT_NAMES = (
    "nose left_eye right_eye left_ear right_ear left_shoulder right_shoulder left_elbow right_elbow "
    "left_wrist right_wrist left_hip right_hip left_knee right_knee left_ankle right_ankle"
).split()


def keypoint_dataset(cache: Path, n_images: int, seed: int, log) -> tuple:
    """People with 17 keypoints (COCO's person category), detections jittered, up to 20 an image."""
    root = cache / f"keypoints-v2-seed{seed}-n{n_images}"
    gt_path, dt_path = root / "gt.json", root / "dt.json"
    if dt_path.exists():
        return gt_path, dt_path
    t0 = time.perf_counter()
    log(f"generating {n_images} keypoint images -> {root} ...")
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, n_images, 17])
    images = [
        {"id": i + 1, "width": 640, "height": 480, "file_name": f"{i + 1:012d}.jpg"} for i in range(n_images)
    ]
    anns, dets = [], []
    for image in images:
        n_people = int(rng.poisson(2.7))
        for _ in range(n_people):
            w, h = rng.uniform(20, 250), rng.uniform(40, 400)
            x, y = rng.uniform(0, 640 - min(w, 630)), rng.uniform(0, 480 - min(h, 470))
            kx, ky = x + rng.uniform(0, w, 17), y + rng.uniform(0, h, 17)
            vis = rng.choice([0, 1, 2], size=17, p=[0.3, 0.1, 0.6])
            crowd = rng.uniform() < 0.01
            kpts = np.stack([np.where(vis > 0, kx, 0), np.where(vis > 0, ky, 0), vis], axis=1)
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": image["id"],
                    "category_id": 1,
                    "bbox": [round(x, 2), round(y, 2), round(w, 2), round(h, 2)],
                    "area": round(0.6 * w * h, 2),
                    "iscrowd": int(crowd),
                    "num_keypoints": 0 if crowd else int((vis > 0).sum()),
                    "keypoints": [
                        round(float(v), 2) if k % 3 < 2 else int(v) for k, v in enumerate(kpts.ravel())
                    ],
                }
            )
            copies = int(rng.uniform() < 0.85) + int(rng.poisson(0.3))
            for c in range(copies):
                sigma = rng.uniform(0.01, 0.12) * np.sqrt(w * h)
                jx, jy = kx + rng.normal(0, sigma, 17), ky + rng.normal(0, sigma, 17)
                dets.append((image["id"], jx, jy, float(rng.uniform(0.2, 1.0)) * (0.6 if c else 1.0)))
        for _ in range(int(rng.poisson(3.0))):  # background
            bx, by = rng.uniform(0, 600), rng.uniform(0, 440)
            dets.append(
                (
                    image["id"],
                    bx + rng.uniform(0, 60, 17),
                    by + rng.uniform(0, 120, 17),
                    float(rng.beta(1, 6)),
                )
            )
    results = []
    by_image: dict = {}
    for image_id, jx, jy, score in dets:
        by_image.setdefault(image_id, []).append((score, jx, jy))
    for image_id, rows in by_image.items():
        rows.sort(key=lambda r: -r[0])
        for score, jx, jy in rows[:20]:
            kp = np.round(np.stack([jx, jy, np.ones(17)], axis=1), 2)
            x0, y0 = float(kp[:, 0].min()), float(kp[:, 1].min())
            box = [x0, y0, round(float(kp[:, 0].max()) - x0, 2), round(float(kp[:, 1].max()) - y0, 2)]
            results.append(
                {
                    "image_id": image_id,
                    "category_id": 1,
                    "keypoints": [float(v) for v in kp.ravel()],
                    "bbox": box,  # the keypoints' extent, as pycocotools' loadRes makes it
                    "score": round(score, 4),
                }
            )
    category = {
        "id": 1,
        "name": "person",
        "supercategory": "person",
        "keypoints": KEYPOINT_NAMES,
        "skeleton": [[16, 14], [14, 12], [17, 15], [15, 13], [12, 13]],
    }
    _write(gt_path, {"images": images, "annotations": anns, "categories": [category]})
    _write(dt_path, results)
    log(f"  {len(anns)} people, {len(results)} detections; done in {time.perf_counter() - t0:.1f} s")
    return gt_path, dt_path


def datasets(workload: str, size: int, args, log) -> tuple:
    """(gt, dt) paths of one workload at one size (generated and cached on first use)."""
    import bench  # noqa: PLC0415  (scripts/ is not a package; bench imports this module lazily)
    import scale  # noqa: PLC0415

    if workload in ("bbox", "analyze", "evaluator", "bootstrap"):
        files = bench.ensure_dataset(args.cache, size, args.seed, log)
        return files.gt, files.dt("bbox")
    if workload == "segm-poly":
        files = bench.ensure_dataset(args.cache, size, args.seed, log)
        return files.gt, files.dt("segm")
    if workload == "segm-rle":
        return rle_dataset(bench.ensure_dataset(args.cache, size, args.seed, log), log)
    if workload == "keypoints":
        return keypoint_dataset(args.cache, size, args.seed, log)
    if workload == "lvis":
        gt, dt, _ = scale.ensure_data(args.cache, size, 1203, 300, args.seed, True)
        return gt, dt
    if workload == "report":
        return FIXTURES / "coco" / "gt.json", FIXTURES / "coco" / "dt.json"
    return Path(""), Path("")


# ------------------------------------------------------------------------------------------------
# Runs
# ------------------------------------------------------------------------------------------------


def _child_env() -> dict:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "2")
    return env


def run_one(workload: str, tool: str, gt: Path, dt: Path, args) -> dict:
    cmd = [sys.executable, str(SUITE_WORKER), workload, tool, "--gt", str(gt), "--dt", str(dt)]
    cmd += ["--workers", str(args.workers or "auto"), "--resamples", str(args.resamples)]
    if workload == "report":
        cmd += ["--out", str(args.cache / "bench-report.html")]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_child_env(), timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {args.timeout:.0f} s", "total_s": None}
    total = time.perf_counter() - t0
    try:
        rec = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        rec = {"ok": False, "error": (proc.stderr or "no output")[-600:]}
    rec.update(total_s=total, loadavg_before=load, loadavg_after=os.getloadavg()[0])
    return rec


def plan(args) -> list:
    """(workload, size, tools) in run order."""
    out = []
    unavailable = missing_tools()
    for workload in args.workloads:
        sizes = (args.sizes_of.get(workload) if args.sizes_of else None) or (
            FIXED_SIZES.get(workload, [0]) if workload not in SIZED or workload in FIXED_SIZES else None
        )
        if sizes is None:
            sizes = (QUICK_SIZES if args.quick else FULL_SIZES)[workload]
        if args.quick and workload in FIXED_SIZES and not (args.sizes_of or {}).get(workload):
            sizes = [500]
        for size in sizes:
            tools = [t for t in TOOLS[workload] if t in args.peers or t == "deteval"]
            skipped = {t: unavailable[t] for t in tools if t in unavailable}
            skipped.update(
                {
                    t: f"slow reference tool: run up to --slow-max-images {args.slow_max_images}"
                    for t in tools
                    if t in SLOW and size > args.slow_max_images and t not in skipped
                }
            )
            out.append((workload, size, [t for t in tools if t not in skipped], skipped))
    return out


def compile_checkout(log) -> None:
    """Byte-compile this checkout's deteval, as an installed wheel is.

    The peers are timed as installed (their ``.pyc`` written by pip); a checkout run with
    ``PYTHONDONTWRITEBYTECODE=1`` would compile ~100 modules on every start (about 1 s).
    """
    root = Path(__file__).resolve().parent.parent / "deteval"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root)], check=False, capture_output=True)
    log(f"byte-compiled {root} (as an installed package is)")


def _into_page_cache(*paths) -> None:
    """Read each input once before the timed runs: every tool then finds it in the page cache.

    Without this the first tool of a (workload, size) -- deteval, with ``--repeat 1`` -- also
    paid for reading the files from disk when the workloads before had pushed them out.
    """
    for path in paths:
        if not os.path.isfile(path):  # report, bootstrap and import name no input of their own
            continue
        with open(path, "rb") as f:
            while f.read(1 << 23):
                pass


def run_suite(args, log) -> tuple:
    """Every planned (workload, size): the repetitions interleave the tools."""
    compile_checkout(log)
    runs, skipped_all = [], []
    for workload, size, tools, skipped in plan(args):
        skipped_all += [(workload, size, t, why) for t, why in skipped.items()]
        if not tools:
            continue
        gt, dt = datasets(workload, size, args, log)
        _into_page_cache(gt, dt)
        for rep in range(args.repeat):
            order = tools[rep % len(tools) :] + tools[: rep % len(tools)]  # rotate: no tool always first
            for tool in order:
                rec = run_one(workload, tool, gt, dt, args)
                rec.update(workload=workload, size=size, tool=tool, rep=rep)
                runs.append(rec)
                if rec["ok"]:
                    log(
                        f"  [{workload} {size} rep {rep + 1}] {tool:<12} total {rec['total_s']:7.2f} s  "
                        f"timed {rec['timed_s']:7.2f} s  peak {rec['peak_rss_mib']:6.0f} MiB"
                    )
                else:
                    log(f"  [{workload} {size} rep {rep + 1}] {tool:<12} FAILED: {rec['error'][-200:]}")
    return runs, skipped_all


# ------------------------------------------------------------------------------------------------
# Summary and table
# ------------------------------------------------------------------------------------------------


def _same(a: list | None, b: list | None, workload: str) -> bool:
    if a is None or b is None or len(a) != len(b):
        return False
    if workload == "analyze":  # tidecv reports percent: deteval's fractions x 100 agree to rounding
        return all(
            (x is None and y is None)
            or (x is not None and y is not None and abs(x - y) <= 1e-9 * max(1, abs(x)))
            for x, y in zip(a, b)
        )
    return a == b


def summarize(runs: list) -> list:
    groups: dict = {}
    for rec in runs:
        groups.setdefault((rec["workload"], rec["size"], rec["tool"]), []).append(rec)
    rows = []
    for (workload, size, tool), recs in groups.items():
        ok = [r for r in recs if r["ok"]]

        def med(key: str, ok: list = ok) -> float | None:
            values = [r[key] for r in ok if r.get(key) is not None]
            return statistics.median(values) if values else None

        stats = [r.get("stats") for r in ok]
        rows.append(
            {
                "workload": workload,
                "size": size,
                "tool": tool,
                "runs": len(recs),
                "ok_runs": len(ok),
                "total_s": med("total_s"),
                "timed_s": med("timed_s"),
                "peak_rss_mib": med("peak_rss_mib"),
                "cpu_s": med("cpu_s"),
                "stats": stats[0] if stats else None,
                "stable": all(s == stats[0] for s in stats),
                "error": next((r["error"] for r in recs if not r["ok"]), None),
            }
        )
    return rows


def _time_of(row: dict) -> float | None:
    return row["timed_s"] if row["workload"] == "evaluator" else row["total_s"]


def table(rows: list) -> list:
    """Markdown lines: one row per (workload, size, tool), ratios to the best peer."""
    lines = [
        "| workload | images | tool | time s | peak RSS MiB | CPU s | ratio (deteval: to the best equal peer) | numbers |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for key in dict.fromkeys((r["workload"], r["size"]) for r in rows):
        group = [r for r in rows if (r["workload"], r["size"]) == key]
        ours = next((r for r in group if r["tool"] == "deteval"), None)
        peers = [r for r in group if r["tool"] != "deteval" and r["ok_runs"] and _time_of(r) is not None]
        agreeing = [r for r in peers if ours is not None and _same(r["stats"], ours["stats"], key[0])]
        best = min(agreeing, key=_time_of, default=None)
        for r in group:
            if not r["ok_runs"]:
                lines.append(
                    f"| {key[0]} | {key[1] or '-'} | {r['tool']} | failed | | | | {str(r['error'])[:80]} |"
                )
                continue
            t = _time_of(r)
            if r["tool"] == "deteval":
                ratio = f"{t / _time_of(best):.2f}" if best else "-"
                verdict = "reference" if peers else "-"
            elif ours is None or ours["stats"] is None or not r["stats"]:
                ratio, verdict = "-", "-"
            elif _same(r["stats"], ours["stats"], key[0]):
                ratio = f"{t / _time_of(ours):.2f}x deteval" if _time_of(ours) else "-"
                verdict = "equal" + ("" if r["stable"] else " (unstable)")
            else:
                diff = max(
                    (
                        abs(x - y)
                        for x, y in zip(r["stats"], ours["stats"])
                        if x is not None and y is not None
                    ),
                    default=float("nan"),
                )
                ratio, verdict = "differs", f"differ (max abs diff {diff:.2g})"
            mark = " (best peer)" if r is best else ""
            lines.append(
                f"| {key[0]} | {key[1] or '-'} | {r['tool']}{mark} | {t:.2f} | {r['peak_rss_mib']:.0f} | "
                f"{r['cpu_s']:.2f} | {ratio} | {verdict} |"
            )
    return lines
