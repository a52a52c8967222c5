"""``--calibration`` / ``--lrp`` of ``deteval evaluate | compare | plot | report`` (docs/analysis.md).

Each scored result (detector x protocol) gains the JSON parts ``calibration`` / ``lrp``; with
``--bootstrap N`` their intervals (``calibration_ci``, ``lrp_ci``) over the same image draws as
AP's, and with several ``--dt`` the paired differences to the first detector (``paired``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from deteval.api.beyond import BeyondOptions, beyond_document
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult
from deteval.report.beyond import format_beyond

__all__ = ["beyond_options", "parse_calibration", "add_beyond", "beyond_blocks"]


def parse_calibration(features: str, bins: str) -> tuple[tuple, int | tuple]:
    """``--calibration-features`` and ``--calibration-bins`` as values.

    Raises
    ------
    ConfigError
        Bins that are not integers (the features and counts are checked by the calibration).
    """
    names = tuple(f.strip() for f in features.split(","))
    try:
        counts = [int(b) for b in bins.split(",")]
    except ValueError:
        raise ConfigError(
            f"--calibration-bins: expected a positive integer or a comma-separated list of them, found {bins!r}"
        ) from None
    return names, counts[0] if len(counts) == 1 else tuple(counts)


def beyond_options(args: argparse.Namespace) -> BeyondOptions:
    """The parts asked for on the command line (``wanted`` False when neither)."""
    features, bins = parse_calibration(args.calibration_features, args.calibration_bins)
    return BeyondOptions(
        calibration=args.calibration,
        lrp=args.lrp,
        iou=args.calibration_iou,
        lrp_tau=args.lrp_tau,
        calibration_features=features,
        calibration_bins=bins,
    )


def add_beyond(
    args: argparse.Namespace,
    doc: dict,
    gt: GroundTruth,
    names: Sequence[str],
    detections: Sequence[Detections],
    results: Sequence[Sequence[EvalResult]],
) -> list[tuple[str, dict]]:
    """Put each result's calibration / LRP parts into ``doc["results"]`` (detector, then protocol order).

    Parameters
    ----------
    doc : dict
        The command's JSON document; its ``results`` are one entry per detector and protocol.
    names, detections, results
        Per detector: its name, detections, and results per protocol.

    Returns
    -------
    list of (label, dict)
        Per result, a label (``detector · protocol``) and its parts (with the bootstrap's
        settings when intervals were drawn): what the tables and the report show.
    """
    options = beyond_options(args)
    if not options.wanted:
        return []
    bootstrap = getattr(args, "bootstrap", 0) or 0
    settings = {"bootstrap": bootstrap, "seed": args.seed, "ci": args.ci, "method": args.bootstrap_method}
    several = len(names) > 1
    out = []
    entries = iter(doc["results"])
    for d, (name, dt, per_protocol) in enumerate(zip(names, detections, results)):
        for p, result in enumerate(per_protocol):
            against = (results[0][p], detections[0]) if several and d > 0 and bootstrap else None
            found = beyond_document(
                result,
                gt,
                dt,
                options,
                against=against,
                labels=(name, names[0]),
                **settings,
            )
            entry = next(entries)
            entry.update({k: v for k, v in found.items() if k != "bootstrap"})
            label = " · ".join(x for x in (name if several else "", result.protocol.name) if x)
            out.append((label, found))
    return out


def beyond_blocks(found: list[tuple[str, dict]], fmt: str = "table") -> list[str]:
    """The text tables of :func:`add_beyond`'s parts, one block per result."""
    return ["\n" + format_beyond(doc, title=label, fmt=fmt) for label, doc in found]


def check_beyond(args: argparse.Namespace) -> bool:
    """Refuse what ``--calibration`` / ``--lrp`` cannot do before any scoring; whether either is asked.

    Raises
    ------
    ConfigError
        ``--bootstrap-method bca`` with them, ``--scheduler``, or bins that are not integers.
    """
    options = beyond_options(args)
    if not options.wanted:
        return False
    if getattr(args, "bootstrap", 0) and args.bootstrap_method == "bca":
        raise ConfigError(
            "--bootstrap-method bca: the intervals of --calibration / --lrp are basic or percentile "
            "(BCa's jackknife would re-run every class); use --bootstrap-method basic or percentile"
        )
    if getattr(args, "scheduler", None):
        raise ConfigError(
            "--scheduler: --calibration / --lrp score one process's detections; run without --scheduler"
        )
    if args.command in ("evaluate", "compare") and args.format == "csv" and not args.quiet:
        print(
            "deteval: note: --calibration / --lrp are not part of the CSV; use --format json, table or markdown",
            file=sys.stderr,
        )
    return True
