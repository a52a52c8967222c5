"""The same detections read as COCO results JSON, a VOC result folder and YOLO prediction files.

From scripts/bench.py's cached COCO-like dataset (``--images`` picks it; generated when
missing), this script writes the same ground truth and detections as

* a VOC root: ``Annotations/<stem>.xml`` (iscrowd objects as ``<difficult>1``),
  ``ImageSets/Main/val.txt`` and a result folder of ``comp4_det_test_<class>.txt`` files,
  lines ``image_id score x1 y1 x2 y2`` with ``x2 = x + w`` and ``y2 = y + h``;
* a YOLO dataset: ``data.yaml`` (``names`` the COCO category names in id order, class = the
  0-based position), empty ``images/val/<file name>`` with a ``sizes.txt``, label files and a
  prediction folder of ``<stem>.txt`` files, rows ``class cx cy w h conf`` normalized;

(cached in ``<cache>/formats-v1-<dataset>``), checks that the three loads give the same
detections, then times in fresh processes ``load_detections`` (after the ground truth is read)
and the whole ``deteval evaluate`` for each format: median CPU (user + sys) and wall seconds
and peak RSS, runs interleaved format by format, and the ratios to COCO JSON.

What "the same detections" means here, format by format (scores are written as in the
COCO file, ``repr`` of the float, so reading them back gives the same double):

* images are joined by file-name stem (VOC ids, YOLO file names), classes by name (VOC file
  names spell spaces as ``_``);
* scores are equal bit for bit in all three;
* VOC boxes are the corners ``x1 y1 x2 y2``: ``x`` and ``y`` as in the COCO file, ``x + w`` and
  ``y + h`` written with at most 6 decimals (the dataset's boxes have 2, so these are the exact
  decimal sums): within 1e-6 px of the float sums;
* YOLO rows are written as Ultralytics' ``save_txt`` writes them (``%g``: 6 significant
  digits), normalized (``cx = (x + w / 2) / width``); read back (``x = (cx - w / 2) * width``)
  they are within 1e-3 px of the COCO box;
* the rows of one image and class keep the COCO file's order in all three layouts.

Usage::

    python scripts/bench_formats.py --images 5000 --repeats 5
    python scripts/bench_formats.py --no-cli          # only the loads
    DETEVAL_NO_EXTENSION=1 python scripts/bench_formats.py   # without the compiled parser

Run it from the repository root whose code is to be timed (the worker processes import
``deteval`` from there). Timings depend on the machine; nothing here is asserted by tests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
LAYOUT_VERSION = 2
FORMATS = ("coco", "voc", "yolo")
VOC_PREFIX = "comp4_det_test_"

# One fresh process: read the ground truth, then time load_detections alone.
_LOAD_WORKER = """
import json, resource, sys, time
fmt, gt_path, dt_path = sys.argv[1:4]
import deteval
options = {"split": "val"} if fmt == "voc" else {}
gt = deteval.load_ground_truth(gt_path, **options)
cpu, wall = time.process_time(), time.perf_counter()
dt = deteval.load_detections(dt_path, gt)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cpu": cpu, "wall": wall, "peak_mb": peak, "n": len(dt.score), "file": deteval.__file__}))
"""


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# Writing the layouts
# ----------------------------------------------------------------------------------------------


def _corner(value: float) -> str:
    """``x + w`` as a short decimal (6 decimals at most; the dataset's boxes have 2)."""
    return repr(float(f"{value:.6f}"))


def _voc_name(name: str) -> str:
    return name.replace(" ", "_")


def _write_voc(root: Path, gt: dict, dt: list) -> None:
    """A VOC root (Annotations, ImageSets/Main/val.txt) and its result folder ``results``."""
    (root / "Annotations").mkdir(parents=True)
    (root / "ImageSets" / "Main").mkdir(parents=True)
    (root / "results").mkdir()
    category = {c["id"]: _voc_name(c["name"]) for c in gt["categories"]}
    objects: dict[int, list[str]] = {}
    for a in gt["annotations"]:
        x, y, w, h = (float(v) for v in a["bbox"])
        objects.setdefault(a["image_id"], []).append(
            f"<object><name>{category[a['category_id']]}</name><difficult>{int(a['iscrowd'])}</difficult>"
            f"<bndbox><xmin>{x!r}</xmin><ymin>{y!r}</ymin><xmax>{_corner(x + w)}</xmax><ymax>{_corner(y + h)}</ymax>"
            f"</bndbox></object>"
        )
    stems = []
    for image in gt["images"]:
        stem = os.path.splitext(image["file_name"])[0]
        stems.append(stem)
        (root / "Annotations" / f"{stem}.xml").write_text(
            f"<annotation><filename>{image['file_name']}</filename><size><width>{image['width']}</width>"
            f"<height>{image['height']}</height><depth>3</depth></size>"
            + "".join(objects.get(image["id"], []))
            + "</annotation>\n"
        )
    (root / "ImageSets" / "Main" / "val.txt").write_text("".join(s + "\n" for s in stems))
    stem_of = {image["id"]: os.path.splitext(image["file_name"])[0] for image in gt["images"]}
    lines: dict[str, list[str]] = {name: [] for name in category.values()}
    for d in dt:
        x, y, w, h = (float(v) for v in d["bbox"])
        lines[category[d["category_id"]]].append(
            f"{stem_of[d['image_id']]} {float(d['score'])!r} {x!r} {y!r} {_corner(x + w)} {_corner(y + h)}\n"
        )
    for name, rows in lines.items():
        if rows:
            (root / "results" / f"{VOC_PREFIX}{name}.txt").write_text("".join(rows))


def _write_yolo(root: Path, gt: dict, dt: list) -> None:
    """A YOLO dataset (data.yaml, empty images with sizes.txt, labels) and ``predictions``."""
    for sub in ("images/val", "labels/val", "predictions"):
        (root / sub).mkdir(parents=True)
    categories = sorted(gt["categories"], key=lambda c: c["id"])
    index = {c["id"]: k for k, c in enumerate(categories)}
    names = ", ".join(json.dumps(c["name"]) for c in categories)
    (root / "data.yaml").write_text(f"path: .\nval: images/val\nsizes: sizes.txt\nnames: [{names}]\n")
    images = {image["id"]: image for image in gt["images"]}
    sizes = []
    for image in gt["images"]:
        (root / "images" / "val" / image["file_name"]).write_bytes(b"")
        sizes.append(f"{image['file_name']} {image['width']} {image['height']}\n")
    (root / "sizes.txt").write_text("".join(sizes))

    def rows(records: list, with_conf: bool) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for r in records:
            image = images[r["image_id"]]
            width, height = float(image["width"]), float(image["height"])
            x, y, w, h = (float(v) for v in r["bbox"])
            # Ultralytics' save_txt: ("%g " * len(line)).rstrip() % line
            row = f"{index[r['category_id']]} {(x + w / 2) / width:g} {(y + h / 2) / height:g} {w / width:g} {h / height:g}"
            out.setdefault(r["image_id"], []).append(
                row + (f" {float(r['score']):g}\n" if with_conf else "\n")
            )
        return out

    labels = rows([a for a in gt["annotations"] if not a["iscrowd"]], with_conf=False)
    for image_id, lines in labels.items():
        stem = os.path.splitext(images[image_id]["file_name"])[0]
        (root / "labels" / "val" / f"{stem}.txt").write_text("".join(lines))
    for image_id, lines in rows(dt, with_conf=True).items():
        stem = os.path.splitext(images[image_id]["file_name"])[0]
        (root / "predictions" / f"{stem}.txt").write_text("".join(lines))


def ensure_layouts(dataset_root: Path) -> dict[str, tuple[str, str]]:
    """(ground truth, detections) paths of each format, writing the VOC and YOLO layouts once."""
    target = dataset_root.parent / f"formats-v{LAYOUT_VERSION}-{dataset_root.name}"
    if not (target / "complete").exists():
        _log(f"writing the VOC and YOLO layouts -> {target} ...")
        t0 = time.perf_counter()
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        gt = json.loads((dataset_root / "instances.json").read_text())
        dt = json.loads((dataset_root / "results_bbox.json").read_text())
        _write_voc(tmp / "voc", gt, dt)
        _write_yolo(tmp / "yolo", gt, dt)
        (tmp / "complete").write_text("")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
        _log(f"  done in {time.perf_counter() - t0:.1f} s")
    return {
        "coco": (str(dataset_root / "instances.json"), str(dataset_root / "results_bbox.json")),
        "voc": (str(target / "voc"), str(target / "voc" / "results")),
        "yolo": (str(target / "yolo"), str(target / "yolo" / "predictions")),
    }


# ----------------------------------------------------------------------------------------------
# The three loads give the same detections
# ----------------------------------------------------------------------------------------------


def _rows(fmt: str, gt_path: str, dt_path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(image stem, class name, score, box xywh) of every detection, stably sorted by image and class."""
    import deteval

    gt = deteval.load_ground_truth(gt_path, **({"split": "val"} if fmt == "voc" else {}))
    dt = deteval.load_detections(dt_path, gt)
    stems = np.array([os.path.splitext(str(n))[0] for n in gt.image_name])[dt.image]
    names = np.array([_voc_name(n) for n in gt.category_name])[dt.category]
    box = np.asarray(dt.box, dtype=np.float64)  # VOC: corners, compared as corners below
    order = np.lexsort((names, stems))  # stable: file order within an image and class
    return stems[order], names[order], dt.score[order], box[order]


def check_same(paths: dict[str, tuple[str, str]]) -> str:
    """Compare the three loads (see the module docstring); a line saying what was checked."""
    sys.path.insert(0, str(CODE_ROOT))
    stems, names, score, box = _rows("coco", *paths["coco"])
    corners = np.column_stack([box[:, 0], box[:, 1], box[:, 0] + box[:, 2], box[:, 1] + box[:, 3]])
    for fmt in ("voc", "yolo"):
        s, n, sc, b = _rows(fmt, *paths[fmt])
        if len(s) != len(stems) or (s != stems).any() or (n != names).any():
            raise SystemExit(f"{fmt}: not the same images and classes as COCO JSON")
        if not np.array_equal(sc, score):
            raise SystemExit(f"{fmt}: scores differ from COCO JSON")
        if fmt == "voc" and not np.allclose(b, corners, rtol=0, atol=1e-6):
            raise SystemExit("voc: corners differ from x, y, x + w, y + h of COCO JSON")
        if fmt == "voc":
            voc_off = np.abs(b - corners).max()
        if fmt == "yolo" and not np.allclose(b, box, rtol=0, atol=1e-3):
            raise SystemExit(f"yolo: boxes differ from COCO JSON by up to {np.abs(b - box).max()}")
    return (
        f"same detections in all three: {len(score)} rows, scores bit-equal, VOC corners within "
        f"{voc_off:.1e} px of x+w / y+h, YOLO boxes (%g) within {np.abs(b - box).max():.1e} px"
    )


# ----------------------------------------------------------------------------------------------
# Timing in fresh processes
# ----------------------------------------------------------------------------------------------


#: The checkout whose ``deteval`` the worker processes import (``--repo``).
CODE_ROOT = REPO_ROOT


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(CODE_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _child(argv: list[str]) -> tuple[str, float, float]:
    """(stdout, CPU user + sys, wall) of one child process (CPU from the children's totals)."""
    cpu, wall = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=_env(), cwd=CODE_ROOT, check=False)
    cpu, wall = _children_cpu() - cpu, time.perf_counter() - wall
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr.decode()[-2000:]}")
    return done.stdout.decode(), cpu, wall


def _peak_mb(argv: list[str]) -> float:
    """Peak RSS (MB) of a command, by /usr/bin/time when there is one."""
    if not os.path.exists("/usr/bin/time"):
        return float("nan")
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *argv], capture_output=True, env=_env(), cwd=CODE_ROOT, check=False
    )
    return int(done.stderr.decode().strip().splitlines()[-1]) / 1024


def time_loads(paths: dict[str, tuple[str, str]], repeats: int) -> dict[str, dict[str, float]]:
    """Median CPU / wall of load_detections and peak RSS of the process, per format."""
    runs: dict[str, list[dict]] = {fmt: [] for fmt in FORMATS}
    for _ in range(repeats):
        for fmt in FORMATS:
            out, _, _ = _child([sys.executable, "-c", _LOAD_WORKER, fmt, *paths[fmt]])
            runs[fmt].append(json.loads(out))
    files = {r["file"] for rs in runs.values() for r in rs}
    _log(f"deteval imported from {sorted(files)}")
    return {
        fmt: {
            "cpu": statistics.median(r["cpu"] for r in rs),
            "wall": statistics.median(r["wall"] for r in rs),
            "peak_mb": statistics.median(r["peak_mb"] for r in rs),
            "n": rs[0]["n"],
        }
        for fmt, rs in runs.items()
    }


def _cli(fmt: str, paths: dict[str, tuple[str, str]]) -> list[str]:
    """The same protocol (coco) for every format: only reading differs."""
    gt, dt = paths[fmt]
    argv = [
        sys.executable,
        "-m",
        "deteval",
        "evaluate",
        "--gt",
        gt,
        "--dt",
        dt,
        "--no-per-class",
        "-q",
        "--protocol",
        "coco",
    ]
    return argv + (["--split", "val"] if fmt == "voc" else [])


def time_cli(paths: dict[str, tuple[str, str]], repeats: int) -> dict[str, dict[str, float]]:
    """Median CPU / wall and peak RSS of ``deteval evaluate`` per format."""
    runs: dict[str, list[tuple[float, float, float]]] = {fmt: [] for fmt in FORMATS}
    for _ in range(repeats):
        for fmt in FORMATS:
            _, cpu, wall = _child(_cli(fmt, paths))
            runs[fmt].append((cpu, wall, _peak_mb(_cli(fmt, paths)) if not runs[fmt] else float("nan")))
    return {
        fmt: {
            "cpu": statistics.median(r[0] for r in rs),
            "wall": statistics.median(r[1] for r in rs),
            "peak_mb": rs[0][2],
        }
        for fmt, rs in runs.items()
    }


def _table(title: str, results: dict[str, dict[str, float]]) -> str:
    base = results["coco"]
    lines = [
        title,
        f"  {'format':<6} {'CPU s':>8} {'wall s':>8} {'peak MB':>8} {'CPU/COCO':>9} {'wall/COCO':>10}",
    ]
    for fmt, r in results.items():
        lines.append(
            f"  {fmt:<6} {r['cpu']:8.3f} {r['wall']:8.3f} {r['peak_mb']:8.0f} "
            f"{r['cpu'] / base['cpu']:9.2f} {r['wall'] / base['wall']:10.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/deteval-bench"))
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per format (median)")
    parser.add_argument("--no-cli", action="store_true", help="time the loads only")
    parser.add_argument("--no-check", action="store_true", help="skip the same-detections check")
    parser.add_argument(
        "--repo", type=Path, default=REPO_ROOT, help="checkout whose deteval is timed (default: this one)"
    )
    args = parser.parse_args(argv)
    global CODE_ROOT
    CODE_ROOT = args.repo.resolve()

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench import ensure_dataset

    files = ensure_dataset(args.cache, args.images, args.seed, _log)
    paths = ensure_layouts(files.root)
    extension = "off" if os.environ.get("DETEVAL_NO_EXTENSION") == "1" else "on"
    print(
        _table(
            f"load_detections, {args.images} images, median of {args.repeats} (compiled parser {extension}):",
            time_loads(paths, args.repeats),
        )
    )
    if not args.no_cli:
        print(_table(f"deteval evaluate, median of {args.repeats}:", time_cli(paths, args.repeats)))
    if not args.no_check:  # last: a child inherits the peak RSS of this process
        print(check_same(paths))


if __name__ == "__main__":
    main()
