"""The options of ``deteval report``'s error browser and the examples of ``plot`` and ``report``.

Parser only (deteval/cli/parser.py adds them): kept apart so that the parser module stays short.
"""

from __future__ import annotations

import argparse

from deteval.cli._float_options import _FloatOption

_PLOT_EXAMPLE = """examples:
  deteval plot --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json --out figures/
  deteval plot --gt gt.json --dt a.json --dt b.json --protocol coco --analyze --bootstrap 200 --out figures/
"""

_REPORT_EXAMPLE = """examples:
  deteval report --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json --out report.html
  deteval report --gt gt.json --dt a.json --dt b.json --protocol coco --protocol voc2010 \\
      --explain --analyze --bootstrap 200 --out report.html
"""


def _add_gallery(p: argparse.ArgumentParser) -> None:
    """``deteval report``'s error browser and label-error candidates (docs/error-browser.md)."""
    p.add_argument(
        "--images",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="add the error browser with pictures: the ground truth's file names are relative to "
        "DIR (no DIR: to the ground truth file's folder); pictures downscaled and embedded",
    )
    p.add_argument(
        "--gallery",
        action="store_true",
        help="add the error browser without pictures (boxes on a blank canvas); implied by --images",
    )
    p.add_argument(
        "--gallery-max-images",
        type=int,
        default=60,
        metavar="N",
        help="images in the error browser at most (the largest AP gains; default 60)",
    )
    p.add_argument(
        "--gallery-max-bytes",
        type=_FloatOption(0.01, 1e6, hint="MB"),
        default=8.0,
        metavar="MB",
        help="size of the error browser's section at most, in MB (default 8; shared evenly by "
        "several --dt); beyond, pictures and then images are left out, and the page says so",
    )
    p.add_argument(
        "--label-errors",
        action="store_true",
        help="add the label-error candidates (first protocol; a table per --dt)",
    )
