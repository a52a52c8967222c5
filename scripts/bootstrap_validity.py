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

``--table`` measures the interval methods (BCa, basic, percentile) side by side: COCO AP of
three detectors (AP near 0.05, 0.4 and 0.9) on test sets of 100, 500 and 5,000 images, each
interval's coverage of the population AP, how often it contains the test set's own AP, and the
bootstrap bias against the estimate's real bias (docs/statistics.md prints its table):

    python scripts/bootstrap_validity.py --table
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deteval.data import Detections, GroundTruth  # noqa: E402
from deteval.evaluate import match, score  # noqa: E402
from deteval.protocol import get_protocol  # noqa: E402
from deteval.stats import BootstrapBiasWarning, bootstrap, compare_detectors, interval  # noqa: E402

N_CLASSES = 3
SIZE = 400.0


def make_ground_truth(rng: np.random.Generator, n_images: int, n_classes: int = N_CLASSES) -> GroundTruth:
    """Images with Poisson(1.5) objects each (some images empty), boxes of 16..120 pixels.

    Classes: 50/30/20% for the default three; ``1 / rank`` frequencies (a long tail) otherwise.
    """
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
        category_id=np.arange(1, n_classes + 1),
        category_name=tuple(f"c{k}" for k in range(n_classes)),
        annotation_id=np.arange(1, n + 1),
        image=image,
        category=rng.choice(n_classes, n, p=_class_frequencies(n_classes)),
        box=box,
        area=wh[:, 0] * wh[:, 1],
        is_crowd=np.zeros(n, bool),
        is_difficult=np.zeros(n, bool),
        is_ignore=np.zeros(n, bool),
        source="<synthetic>",
    )


def _class_frequencies(n_classes: int) -> np.ndarray:
    if n_classes == N_CLASSES:
        return np.array([0.5, 0.3, 0.2])
    freq = 1.0 / np.arange(1, n_classes + 1)
    return freq / freq.sum()


def make_detections(
    rng: np.random.Generator,
    gt: GroundTruth,
    quality: float,
    *,
    fp_rate: float = 0.8,
    tp_shift: float = 1.0,
    jitter_sd: float = 0.1,
) -> Detections:
    """Detections of a simulated detector of the given quality.

    Each object found with probability ``quality`` (box jittered by ``jitter_sd`` of its size,
    score ``sigmoid(N(tp_shift, 1) - 2 |jitter|)``: higher for better boxes); Poisson(``fp_rate``)
    false positives per image with scores ``sigmoid(N(-0.5, 1))``, of a uniform class.
    """
    n_classes = gt.n_classes
    found = rng.random(len(gt)) < quality
    box = gt.box[found].copy()
    jitter = rng.normal(0, jitter_sd, (len(box), 4))
    box[:, :2] += jitter[:, :2] * box[:, 2:]
    box[:, 2:] *= np.exp(jitter[:, 2:])
    tp_score = 1 / (1 + np.exp(-rng.normal(tp_shift, 1.0, len(box)) + 2 * np.abs(jitter).sum(axis=1)))
    n_fp = rng.poisson(fp_rate, gt.n_images)
    fp_image = np.repeat(np.arange(gt.n_images), n_fp)
    fp_wh = rng.uniform(16, 120, (len(fp_image), 2))
    fp_box = np.concatenate([rng.uniform(0, SIZE - 120, (len(fp_image), 2)), fp_wh], axis=1)
    fp_score = 1 / (1 + np.exp(-rng.normal(-0.5, 1.0, len(fp_image))))
    image = np.concatenate([gt.image[found], fp_image])
    order = np.argsort(image, kind="stable")
    n = len(image)
    return Detections(
        image=image[order],
        category=np.concatenate([gt.category[found], rng.integers(0, n_classes, len(fp_image))])[order],
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
    with warnings.catch_warnings():  # a biased test set is part of what is measured
        warnings.simplefilter("ignore", BootstrapBiasWarning)
        for r in range(replications):
            gt = make_ground_truth(rng, test_images)
            dt_a = make_detections(rng, gt, quality_a)
            dt_a2 = make_detections(rng, gt, quality_a)
            dt_b = make_detections(rng, gt, quality_b)
            res = score(match(gt, dt_a, p), gt, p)
            boot = bootstrap(gt, {"A": res}, n=resamples, seed=r, ci=ci)
            iv = boot.results[0].metrics_ci[metric]
            covered += iv.lo <= truth <= iv.hi
            same = compare_detectors(
                gt, {"A": dt_a, "A2": dt_a2}, p, n=resamples, seed=r, ci=ci, metric=metric
            )
            false_pos += same.comparisons[0].p_value < 1 - ci
            better = compare_detectors(
                gt, {"A": dt_a, "B": dt_b}, p, n=resamples, seed=r, ci=ci, metric=metric
            )
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


#: The detectors of the table: (name, classes, quality, false positives per image, score shift of
#: true positives, box jitter). Their COCO AP on 50,000 images: about 0.05, 0.4 and 0.9.
SCENARIOS = (
    ("low", 20, 0.6, 2.0, 0.0, 0.1),
    ("mid", 3, 0.8, 0.8, 1.0, 0.05),
    ("high", 3, 0.97, 0.2, 2.0, 0.01),
)
#: Test-set sizes of the table and the replications at each (few at 5,000 images: runtime).
TABLE_SIZES = ((100, 100), (500, 60), (5000, 15))
METHODS = ("bca", "basic", "percentile")


def _scenario_data(rng: np.random.Generator, scenario: tuple, n_images: int) -> tuple:
    _, n_classes, quality, fp_rate, shift, jitter = scenario
    gt = make_ground_truth(rng, n_images, n_classes)
    dt = make_detections(rng, gt, quality, fp_rate=fp_rate, tp_shift=shift, jitter_sd=jitter)
    return gt, dt


def coverage_table(
    *,
    sizes: tuple = TABLE_SIZES,
    resamples: int = 200,
    ci: float = 0.95,
    seed: int = 0,
    population_images: int = 50_000,
    scenarios: tuple = SCENARIOS,
) -> list:
    """One row per (scenario, test-set size): coverage and containment of each interval method.

    Per replication one bootstrap (BCa, with its jackknife) gives the resampled values; the
    three intervals are placed on the same values. Returns dicts with the population AP, the
    mean test-set AP, the estimate's real bias (mean test-set AP - population AP), the mean
    bootstrap bias, and per method the coverage of the population AP and the share of
    intervals containing the test set's own AP.
    """
    p = get_protocol("coco")
    rows = []
    for scenario in scenarios:
        rng = np.random.default_rng([seed, 7])
        gt, dt = _scenario_data(rng, scenario, population_images)
        truth = score(match(gt, dt, p), gt, p).metrics["AP"]
        for n_images, replications in sizes:
            rng = np.random.default_rng([seed, n_images])
            covered = dict.fromkeys(METHODS, 0)
            contains = dict.fromkeys(METHODS, 0)
            estimates, biases, done = [], [], 0
            for r in range(replications):
                gt, dt = _scenario_data(rng, scenario, n_images)
                res = score(match(gt, dt, p), gt, p)
                point = res.metrics["AP"]
                if point != point:  # no ground truth drawn at all
                    continue
                with warnings.catch_warnings():  # the table counts these cases itself
                    warnings.simplefilter("ignore", BootstrapBiasWarning)
                    det = bootstrap(gt, {"A": res}, n=resamples, seed=r, ci=ci, method="bca").results[0]
                j = det.samples.metric_names.index("AP")
                samples = det.samples.metrics[:, j]
                jack = None if det.jackknife is None else det.jackknife.metrics[:, j]
                for m in METHODS:
                    iv = interval(samples, point, ci=ci, method=m, jackknife=jack)
                    covered[m] += iv.lo is not None and iv.lo <= truth <= iv.hi
                    contains[m] += iv.lo is not None and iv.lo <= point <= iv.hi
                estimates.append(point)
                biases.append(det.metrics_bias["AP"])
                done += 1
            rows.append(
                {
                    "detector": scenario[0],
                    "images": n_images,
                    "replications": done,
                    "population_ap": truth,
                    "mean_ap": float(np.mean(estimates)),
                    "real_bias": float(np.mean(estimates) - truth),
                    "bootstrap_bias": float(np.mean(biases)),
                    **{f"coverage_{m}": covered[m] / done for m in METHODS},
                    **{f"contains_{m}": contains[m] / done for m in METHODS},
                }
            )
    return rows


def table_markdown(rows: list) -> str:
    """The rows of :func:`coverage_table` as the Markdown table of docs/statistics.md."""
    out = [
        "| detector | images | reps | population AP | mean test-set AP | real bias | bootstrap bias "
        "| coverage BCa | basic | percentile | contains estimate BCa | basic | percentile |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['detector']} | {r['images']:,} | {r['replications']} | {r['population_ap']:.4f} "
            f"| {r['mean_ap']:.4f} | {r['real_bias']:+.4f} | {r['bootstrap_bias']:+.4f} | "
            + " | ".join(f"{r[f'coverage_{m}']:.2f}" for m in METHODS)
            + " | "
            + " | ".join(f"{r[f'contains_{m}']:.2f}" for m in METHODS)
            + " |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replications", type=int, default=300)
    ap.add_argument("--protocol", default="voc2010")
    ap.add_argument("--test-images", type=int, default=500)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--table", action="store_true", help="the interval methods' table (docs/statistics.md)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.table:
        rows = coverage_table(resamples=args.resamples, seed=args.seed)
        print(table_markdown(rows))
        print(f"{time.perf_counter() - t0:.0f} s")
        return 0
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
