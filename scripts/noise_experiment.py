"""Raw vs binarized scores: how much average precision a 0.5 threshold throws away.

100,000 samples x 10 labels of random {0, 1} (seeded). For i = 0..20 the noise is
sigma = i * 7.5 / 20; pred = labels + N(0, sigma); raw = clip(pred, 0, 1); binarized = raw > 0.5.
The table gives the micro AP of each (deteval.ranking.average_precision) and their difference.

    python scripts/noise_experiment.py                 # the table (a few seconds)
    python scripts/noise_experiment.py --check-sklearn # also one step recomputed by scikit-learn
    python scripts/noise_experiment.py --plot noise.png  # needs matplotlib (pip install matplotlib)
    python scripts/noise_experiment.py --bench         # average_precision vs scikit-learn, 1e6 x 10
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's deteval, not an installed one
from deteval.ranking import average_precision  # noqa: E402

SEED = 0
N_SAMPLES, N_LABELS = 100_000, 10
N_STEPS = 20
MAX_SIGMA = 7.5


def experiment(*, n_samples: int = N_SAMPLES, n_labels: int = N_LABELS, seed: int = SEED) -> list[dict]:
    """Rows of the table: sigma, AP of raw scores, AP of binarized scores, difference."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=(n_samples, n_labels))
    rows = []
    for i in range(N_STEPS + 1):
        sigma = i * MAX_SIGMA / N_STEPS
        raw = np.clip(labels + rng.normal(0.0, sigma, size=labels.shape), 0.0, 1.0)
        binarized = (raw > 0.5).astype(np.float64)
        ap_raw = average_precision(labels, raw, average="micro")
        ap_binarized = average_precision(labels, binarized, average="micro")
        rows.append(
            {
                "sigma": sigma,
                "ap_raw": ap_raw,
                "ap_binarized": ap_binarized,
                "difference": ap_raw - ap_binarized,
                "labels": labels if i == 0 else None,
                "raw": raw if i == N_STEPS // 2 else None,
            }
        )
    rows[N_STEPS // 2]["labels"] = labels
    return rows


def format_table(rows: list[dict]) -> str:
    lines = [f"{'sigma':>7}  {'AP raw':>8}  {'AP binarized':>12}  {'difference':>10}"]
    lines += [
        f"{r['sigma']:7.3f}  {r['ap_raw']:8.4f}  {r['ap_binarized']:12.4f}  {r['difference']:10.4f}"
        for r in rows
    ]
    return "\n".join(lines)


def check_sklearn(rows: list[dict]) -> float:
    """Recompute the middle step with scikit-learn; the largest absolute difference."""
    from sklearn.metrics import average_precision_score

    middle = rows[N_STEPS // 2]
    labels, raw = middle["labels"], middle["raw"]
    ours = [
        average_precision(labels, raw, average="micro"),
        average_precision(labels, (raw > 0.5).astype(float), average="micro"),
    ]
    theirs = [
        average_precision_score(labels, raw, average="micro"),
        average_precision_score(labels, (raw > 0.5).astype(float), average="micro"),
    ]
    return max(abs(a - b) for a, b in zip(ours, theirs))


def plot(rows: list[dict], out: str) -> None:
    try:
        import matplotlib
    except ImportError:
        sys.exit(
            "--plot needs matplotlib, which is not installed: pip install matplotlib "
            "(the table above does not need it)"
        )
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sigma = [r["sigma"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(sigma, [r["ap_raw"] for r in rows], marker="o", label="raw scores")
    ax.plot(sigma, [r["ap_binarized"] for r in rows], marker="s", label="binarized (> 0.5)")
    ax.set_xlabel("noise sigma")
    ax.set_ylabel("micro average precision")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)


def bench(*, n_samples: int = 1_000_000, n_labels: int = 10, repeat: int = 3) -> list[str]:
    """Best-of-``repeat`` seconds of average_precision vs scikit-learn (macro and micro)."""
    from sklearn.metrics import average_precision_score

    rng = np.random.default_rng(SEED)
    labels = rng.integers(0, 2, size=(n_samples, n_labels))
    scores = np.round(rng.random((n_samples, n_labels)), 3)
    lines = [f"average_precision on {n_samples:,} x {n_labels} (best of {repeat}):"]
    for average in ("macro", "micro"):
        timings = {}
        for name, function in (("deteval", average_precision), ("sklearn", average_precision_score)):
            best = float("inf")
            for _ in range(repeat):
                start = time.perf_counter()
                value = function(labels, scores, average=average)
                best = min(best, time.perf_counter() - start)
            timings[name] = (best, value)
        (ours, a), (theirs, b) = timings["deteval"], timings["sklearn"]
        lines.append(
            f"  {average:5}: deteval {ours:.3f} s, scikit-learn {theirs:.3f} s, "
            f"ratio {theirs / ours:.2f}x, |difference| {abs(a - b):.1e}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", metavar="OUT.png", help="also draw the two curves (needs matplotlib)")
    parser.add_argument(
        "--check-sklearn",
        action="store_true",
        help="recompute the middle step with scikit-learn and print the max difference",
    )
    parser.add_argument(
        "--bench", action="store_true", help="time average_precision vs scikit-learn on 1e6 x 10"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = experiment()
    print(format_table(rows))
    print(f"({N_SAMPLES:,} x {N_LABELS} labels, seed {SEED}: {time.perf_counter() - start:.1f} s)")
    if args.check_sklearn:
        print(
            f"max |deteval - scikit-learn| at sigma {rows[N_STEPS // 2]['sigma']}: {check_sklearn(rows):.1e}"
        )
    if args.plot:
        plot(rows, args.plot)
        print(f"wrote {args.plot}")
    if args.bench:
        print("\n".join(bench()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
