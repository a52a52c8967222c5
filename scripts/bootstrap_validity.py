"""Does the bootstrap do what it claims? Coverage, size and power by simulation.

A fixed synthetic process generates images (a few objects of a few classes) and two detectors
(``quality``: the chance that an object is found; false positives besides). The *population*
value of a metric is computed once on a large population of images. Then, many times: draw a
test set of ``--test-images`` images from the same process, compute the bootstrap interval,
and check whether it covers the population value (coverage should be about ``ci``); score two
detectors of equal quality (the paired test should reject about ``alpha`` of the time) and of
different quality (it should reject nearly always: power).

    python scripts/bootstrap_validity.py --replications 300 --protocol voc2010
    python scripts/bootstrap_validity.py --replications 200 --protocol coco
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deteval.data import Detections, GroundTruth  # noqa: E402
from deteval.evaluate import match, score  # noqa: E402
from deteval.protocol import get_protocol  # noqa: E402
from deteval.stats import bootstrap, compare_detectors  # noqa: E402

N_CLASSES = 3
SIZE = 400.0


def make_ground_truth(rng: np.random.Generator, n_images: int) -> GroundTruth:
    """Images with Poisson(1.5) objects each (some images empty), boxes of 16..120 pixels."""
    counts = rng.poisson(1.5, n_images)
    image = np.repeat(np.arange(n_images), counts)
    n = len(image)
    wh = rng.uniform(16, 120, (n, 2))
    xy = rng.uniform(0, SIZE - 120, (n, 2))
    box = np.concatenate([xy, wh], axis=1)
    return GroundTruth(
        image_id=np.arange(1, n_images + 1),
        image_name=tuple(str(i) for i in range(1, n_images + 1)),
        image_width=np.full(n_images, SIZE),
        image_height=np.full(n_images, SIZE),
        category_id=np.arange(1, N_CLASSES + 1),
        category_name=tuple(f"c{k}" for k in range(N_CLASSES)),
        annotation_id=np.arange(1, n + 1),
        image=image,
        category=rng.choice(N_CLASSES, n, p=[0.5, 0.3, 0.2]),
        box=box,
        area=wh[:, 0] * wh[:, 1],
        is_crowd=np.zeros(n, bool),
        is_difficult=np.zeros(n, bool),
        is_ignore=np.zeros(n, bool),
        source="<synthetic>",
    )


def make_detections(rng: np.random.Generator, gt: GroundTruth, quality: float) -> Detections:
    """Detections of a simulated detector of the given quality.

    Each object found with probability ``quality`` (box jittered by ~10%, score higher for
    better boxes); Poisson(0.8) false positives per image with lower scores.
    """
    found = rng.random(len(gt)) < quality
    box = gt.box[found].copy()
    jitter = rng.normal(0, 0.1, (len(box), 4))
    box[:, :2] += jitter[:, :2] * box[:, 2:]
    box[:, 2:] *= np.exp(jitter[:, 2:])
    tp_score = 1 / (1 + np.exp(-rng.normal(1.0, 1.0, len(box)) + 2 * np.abs(jitter).sum(axis=1)))
    n_fp = rng.poisson(0.8, gt.n_images)
    fp_image = np.repeat(np.arange(gt.n_images), n_fp)
    fp_wh = rng.uniform(16, 120, (len(fp_image), 2))
    fp_box = np.concatenate([rng.uniform(0, SIZE - 120, (len(fp_image), 2)), fp_wh], axis=1)
    fp_score = 1 / (1 + np.exp(-rng.normal(-0.5, 1.0, len(fp_image))))
    image = np.concatenate([gt.image[found], fp_image])
    order = np.argsort(image, kind="stable")
    n = len(image)
    return Detections(
        image=image[order],
        category=np.concatenate([gt.category[found], rng.integers(0, N_CLASSES, len(fp_image))])[order],
        box=np.concatenate([box, fp_box])[order],
        score=np.concatenate([tp_score, fp_score])[order],
        order=np.arange(n),
        has_box=np.ones(n, bool),
        source="<synthetic>",
    )


def headline(protocol) -> str:
    return "mAP" if protocol.is_single_threshold else "AP"


def population_value(protocol, quality: float, *, n_images: int = 50_000, seed: int = 12345) -> float:
    rng = np.random.default_rng(seed)
    gt = make_ground_truth(rng, n_images)
    dt = make_detections(rng, gt, quality)
    return score(match(gt, dt, protocol), gt, protocol).metrics[headline(protocol)]


def run(
    *,
    replications: int,
    protocol: str = "voc2010",
    test_images: int = 500,
    resamples: int = 200,
    ci: float = 0.95,
    quality_a: float = 0.8,
    quality_b: float = 0.9,
    seed: int = 0,
    population_images: int = 50_000,
) -> dict:
    """Coverage of the interval, size and power of the paired test over ``replications`` test sets."""
    p = get_protocol(protocol)
    metric = headline(p)
    truth = population_value(p, quality_a, n_images=population_images)
    rng = np.random.default_rng(seed)
    covered = false_pos = true_pos = 0
    for r in range(replications):
        gt = make_ground_truth(rng, test_images)
        dt_a = make_detections(rng, gt, quality_a)
        dt_a2 = make_detections(rng, gt, quality_a)
        dt_b = make_detections(rng, gt, quality_b)
        res = score(match(gt, dt_a, p), gt, p)
        boot = bootstrap(gt, {"A": res}, n=resamples, seed=r, ci=ci)
        iv = boot.results[0].metrics_ci[metric]
        covered += iv.lo <= truth <= iv.hi
        same = compare_detectors(gt, {"A": dt_a, "A2": dt_a2}, p, n=resamples, seed=r, ci=ci, metric=metric)
        false_pos += same.comparisons[0].p_value < 1 - ci
        better = compare_detectors(gt, {"A": dt_a, "B": dt_b}, p, n=resamples, seed=r, ci=ci, metric=metric)
        true_pos += better.comparisons[0].p_value < 1 - ci
    return {
        "protocol": protocol,
        "metric": metric,
        "population_value": truth,
        "replications": replications,
        "test_images": test_images,
        "resamples": resamples,
        "coverage": covered / replications,
        "size": false_pos / replications,
        "power": true_pos / replications,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replications", type=int, default=300)
    ap.add_argument("--protocol", default="voc2010")
    ap.add_argument("--test-images", type=int, default=500)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = run(
        replications=args.replications,
        protocol=args.protocol,
        test_images=args.test_images,
        resamples=args.resamples,
        seed=args.seed,
    )
    se = (0.95 * 0.05 / args.replications) ** 0.5
    print(
        f"{out['protocol']} {out['metric']}: population {out['population_value']:.4f}; "
        f"{out['replications']} test sets of {out['test_images']} images, {out['resamples']} resamples"
    )
    print(f"coverage of the 95% interval: {out['coverage']:.3f} (target 0.95 +- {2 * se:.3f})")
    print(f"paired test, equal detectors: rejects {out['size']:.3f} (target 0.05)")
    print(f"paired test, better detector: rejects {out['power']:.3f} (power)")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
