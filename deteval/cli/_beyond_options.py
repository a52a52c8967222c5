"""The ``--calibration`` / ``--lrp`` options of evaluate, compare, plot and report (parser only).

Their values are read by :mod:`deteval.cli.beyond`, which is imported only by the commands (this
module keeps the parser light).
"""

from __future__ import annotations

import argparse

from deteval.cli._float_options import _IOU


def _add_beyond(p: argparse.ArgumentParser) -> None:
    """``--calibration``, ``--lrp`` and their settings: evaluate, compare, plot, report (cli/beyond.py).

    The names of ``deteval analyze``'s, but ``--calibration-iou`` for analyze's ``--iou``.
    """
    p.add_argument(
        "--calibration",
        action="store_true",
        help="also D-ECE of the confidences, overall and per class, and the reliability curve "
        "(JSON calibration; with --bootstrap its intervals)",
    )
    p.add_argument(
        "--lrp",
        action="store_true",
        help="also optimal LRP per class: oLRP, its localisation / FP / FN components and the "
        "optimal confidence threshold; moLRP (JSON lrp; with --bootstrap its intervals)",
    )
    p.add_argument(
        "--calibration-features",
        default="confidence",
        metavar="F,...",
        help="what D-ECE bins on: confidence, then any of cx,cy,w,h (default: confidence)",
    )
    p.add_argument(
        "--calibration-bins",
        default="10",
        metavar="N[,N...]",
        help="D-ECE's equal-width bins, one count or one per feature (default 10)",
    )
    p.add_argument(
        "--calibration-iou",
        type=_IOU,
        default=0.5,
        metavar="T",
        help="IoU threshold at which a detection is correct for --calibration (default 0.5)",
    )
    p.add_argument("--lrp-tau", type=_IOU, default=0.5, metavar="T", help="LRP's IoU threshold (default 0.5)")
