"""Time ``deteval.diagnose.analyze`` against one ``deteval.evaluate`` and against tidecv.

Same seeded COCO-like data as ``scripts/bench.py`` (its generator and cache). In one process,
after loading: ``evaluate(gt, dt, "coco")``, each part of ``analyze`` alone, then as ``analyze``
runs them (one pass of image-pair IoUs shared by the three), the whole of ``analyze``, and tidecv's ``TIDE.evaluate`` + errors at IoU 0.5 (``--tidecv``, slow).

    python scripts/bench_analyze.py --images 5000 [--tidecv]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson  # noqa: E402
from _bench_common import tidecv_data  # noqa: E402
from bench import ensure_dataset  # noqa: E402

import deteval  # noqa: E402
from deteval.confusion import confusion_matrix  # noqa: E402
from deteval.decomposition import decompose, image_pairs  # noqa: E402
from deteval.diagnose import analyze  # noqa: E402
from deteval.tide import tide_errors  # noqa: E402


def timed(label: str, fn) -> object:
    start = time.perf_counter()
    out = fn()
    print(f"{label:<34} {time.perf_counter() - start:8.2f} s", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/deteval-bench"))
    parser.add_argument("--tidecv", action="store_true")
    args = parser.parse_args()
    files = ensure_dataset(args.cache, args.images, args.seed, lambda *a: None)
    gt = deteval.load_ground_truth(files.gt)
    dt = deteval.load_detections(files.dt("bbox"), gt)
    print(f"{args.images} images, {len(gt)} objects, {len(dt)} detections")
    timed("evaluate (coco)", lambda: deteval.evaluate(gt, dt, "coco"))
    timed("tide_errors (tidecv mode)", lambda: tide_errors(gt, dt))
    timed("tide_errors (protocol mode, coco)", lambda: tide_errors(gt, dt, "coco", mode="protocol"))
    timed("decompose", lambda: decompose(gt, dt, "coco"))
    timed("confusion_matrix", lambda: confusion_matrix(gt, dt, "coco"))
    pairs = timed("  image pairs, shared by analyze", lambda: image_pairs(gt, dt))
    timed("  tide_errors (tidecv, shared)", lambda: tide_errors(gt, dt, pairs=pairs))
    timed("  decompose (shared)", lambda: decompose(gt, dt, "coco", pairs=pairs))
    timed("  confusion_matrix (shared)", lambda: confusion_matrix(gt, dt, "coco", pairs=pairs))
    timed("analyze (all three)", lambda: analyze(gt, dt, "coco"))
    if args.tidecv:
        from tidecv import TIDE

        gt_json = orjson.loads(files.gt.read_bytes())
        dt_json = orjson.loads(files.dt("bbox").read_bytes())

        def run() -> None:
            g, p = tidecv_data(gt_json, dt_json)
            tide = TIDE()
            with contextlib.redirect_stdout(io.StringIO()):
                tide.evaluate(g, p, mode=TIDE.BOX)
                tide.get_all_errors()

        timed("tidecv evaluate + errors", run)


if __name__ == "__main__":
    main()
