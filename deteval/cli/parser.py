"""The argparse parser of every command (options, help, examples)."""

from __future__ import annotations

import argparse

from deteval._version import __version__
from deteval.cli._beyond_options import _add_beyond
from deteval.cli._common import _non_negative_int, _positive_int, _size, _workers
from deteval.cli._float_options import _IOU, _LEVEL, _SCORE
from deteval.cli._picture_options import _PLOT_EXAMPLE, _REPORT_EXAMPLE, _add_gallery
from deteval.io.yolo_layouts import LAYOUTS as _YOLO_LAYOUTS
from deteval.protocol.fields import FIELD_CHOICES
from deteval.ranking._options import AP_METHODS, AVERAGES

_EVALUATE_EXAMPLE = """examples:
  deteval evaluate --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json
  deteval evaluate --gt gt.json --dt dt.json --protocol coco --protocol coco50 --format markdown
  deteval evaluate --gt fixtures/voc --dt fixtures/voc/results --protocol voc2007
  deteval evaluate --gt gt.json --dt dt.json --protocol voc2010 --set iou_thresholds=[0.3]
"""


def _add_input_options(p: argparse.ArgumentParser) -> None:
    """How inputs are read: shared by evaluate, compare and validate."""
    p.add_argument("--split", help="VOC image set (ImageSets/Main/<split>.txt)")
    p.add_argument(
        "--area-from-box",
        action="store_true",
        help="COCO GT without `area`: use w*h of the box (with a warning) instead of failing",
    )
    p.add_argument(
        "--drop-unknown-categories",
        action="store_true",
        help="drop detections of categories not in the GT (a warning with their share) instead "
        "of failing; refused above 10%% of the detections (see --allow-large-drop)",
    )
    p.add_argument(
        "--allow-large-drop",
        action="store_true",
        help="with --drop-unknown-categories: drop any share of the detections; with "
        "--category-map: accept any share mapped onto categories without ground truth",
    )
    p.add_argument(
        "--category-map",
        metavar="index0|index1|coco91|FILE",
        help="detection category ids are 0-based (index0) or 1-based (index1) indices of the "
        "GT categories in id order, COCO's 91-style ids against its 80 classes or back (coco91), "
        "or FILE (YAML/JSON) maps detection id -> GT id or name",
    )
    p.add_argument(
        "--classes",
        metavar="FILE|voc",
        help="VOC class list: a file with one class name per line, or voc (the 20 PASCAL "
        "classes); listed classes without objects are scored with no ground truth",
    )
    p.add_argument(
        "--result-prefix",
        metavar="PREFIX",
        help="VOC result file prefix, e.g. comp4_det_test_ (default: detected)",
    )
    p.add_argument("--strict", action="store_true", help="turn input warnings into errors (exit 3)")
    p.add_argument(
        "--yolo-layout",
        choices=_YOLO_LAYOUTS,
        metavar="LAYOUT",
        help="column order of YOLO prediction rows: 'cls cx cy w h conf' (Ultralytics, the "
        "default) or 'cls conf cx cy w h'",
    )


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gt", required=True, help="ground truth: COCO JSON, VOC root, or YOLO dataset")
    p.add_argument(
        "--dt",
        required=True,
        action="append",
        metavar="DT",
        help="detections: COCO results JSON, VOC result folder, or YOLO prediction folder; "
        "repeat for several detectors side by side (differences to the first)",
    )
    p.add_argument(
        "--name",
        action="append",
        default=None,
        metavar="NAME",
        help="a name per --dt, in the same order (default: the file names)",
    )
    p.add_argument(
        "--bootstrap",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="N bootstrap resamples of the images: intervals for every metric and per-class "
        "AP; with several --dt also the paired difference to the first, its interval "
        "and p-value (docs/statistics.md)",
    )
    p.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        metavar="S",
        help="seed of the resampling (default 0; the same seed gives the same numbers)",
    )
    p.add_argument(
        "--ci",
        type=_LEVEL,
        default=0.95,
        metavar="LEVEL",
        help="confidence level of the intervals (default 0.95)",
    )
    p.add_argument(
        "--bootstrap-method",
        choices=["basic", "bca", "percentile"],
        default="basic",
        help="how the intervals are placed: basic (default: reflected about the estimate, so "
        "corrected for AP's bias), bca (bias-corrected and accelerated) or percentile (right "
        "only for an unbiased statistic, which AP is not); docs/statistics.md",
    )
    p.add_argument(
        "--protocol",
        action="append",
        default=None,
        metavar="NAME_OR_YAML",
        help="preset name or YAML file; repeat for several (default: coco)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        dest="overrides",
        help="override a protocol field for this run, VALUE in YAML syntax "
        "(e.g. iou_thresholds=[0.3], box_convention=continuous)",
    )
    p.add_argument(
        "--iou-type", choices=list(FIELD_CHOICES["iou_type"]), help="shorthand for --set iou_type=..."
    )
    p.add_argument("--mask-iou", choices=["exact", "raster"], help="shorthand for --set mask_iou=...")
    p.add_argument("--output", help="also write the JSON result to this file")
    p.add_argument(
        "--format",
        choices=["table", "markdown", "csv", "json"],
        default="table",
        help="what to print on stdout (default: table)",
    )
    p.add_argument("--no-per-class", action="store_true", help="omit the per-class table")
    _add_input_options(p)
    p.add_argument(
        "--image-labels",
        metavar="FILE",
        help="Open Images verified image-level labels (ImageID,Source,LabelName,Confidence CSV, or "
        "COCO JSON with images' pos_labels/neg_labels) for --protocol openimages-challenge",
    )
    p.add_argument(
        "--hierarchy",
        metavar="FILE",
        help="Open Images class hierarchy JSON ({LabelName, Subcategory}) for --protocol "
        "openimages-challenge",
    )
    p.add_argument(
        "--compare-mask-modes",
        action="store_true",
        help="segm: also score with the other mask IoU (exact vs raster) and report "
        "per-metric differences and how many matches changed",
    )
    p.add_argument(
        "--confidence",
        type=_SCORE,
        metavar="T",
        help="also report per-class precision/recall/F1 of the detections scoring >= T "
        "(at IoU 0.5, or the protocol's first threshold)",
    )
    p.add_argument(
        "--matches",
        metavar="FILE.csv",
        help="write every scored detection with its outcome (tp/fp/ignored) and the "
        "ground truth it matched (first protocol, IoU 0.5 or its first threshold), then its box, "
        "outcome at each threshold, IoU or best overlap, TIDE error; and every missed object (fn)",
    )
    p.add_argument(
        "--per-image",
        metavar="FILE.csv",
        help="write per image and protocol TP/FP/FN/ignored, F1, TIDE error counts and the AP "
        "gain of fixing the image, images ranked by that gain (also `per_image` in the JSON)",
    )
    p.add_argument(
        "--per-image-iou",
        type=_IOU,
        metavar="T",
        help="the IoU threshold of --per-image (one of the protocol's; default 0.5 or its first)",
    )
    p.add_argument(
        "--workers",
        type=_workers,
        default="auto",
        metavar="N",
        help="use N CPUs: threads in the compiled kernels, or image shards in processes where "
        "matching runs in Python (exact masks, Boundary IoU); same numbers; default auto: by the "
        "input's size (one thread or process for small inputs); 1 forces one",
    )
    p.add_argument(
        "--memory-limit",
        type=_size,
        metavar="SIZE",
        help="refuse runs whose big arrays would need more than SIZE bytes (e.g. 8G, 512M); "
        "default: the memory available (MemAvailable)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no warnings on stderr")
    _add_beyond(p)


def _add_diagnostics(p: argparse.ArgumentParser) -> None:
    """``evaluate``'s per-class metrics and slices (docs/slices.md)."""
    p.add_argument(
        "--per-class-metrics",
        action="store_true",
        help="also print every per-class metric (AP50, AP75, APs ... AR1, AR10, AR100 ...) with "
        "each class's best-F1 confidence, and the overall best-F1 points",
    )
    p.add_argument(
        "--slice",
        action="append",
        default=[],
        metavar="KEY[=VALUE]",
        help="also score subsets of the images: one per value of the image attribute KEY (a field "
        "of the ground truth's image records, of --image-attributes, or built in: image_size, "
        "has_crowd), or only the images with KEY=VALUE; repeat for several",
    )
    p.add_argument(
        "--image-attributes",
        metavar="FILE",
        help="CSV or JSON file of image attributes for --slice (image_id or file_name, then one "
        "column per attribute)",
    )


#: The optional compiled extensions setup.py builds; each has a numpy twin (docs/benchmarks.md).
COMPILED_EXTENSIONS = (
    "deteval.io._colparse",
    "deteval._cmatch",
    "deteval._csort",
    "deteval._cboot",
    "deteval._cacc",
    "deteval._canalyze",
)


def version_text() -> str:
    """``deteval --version``: the version, where it runs from, and the compiled extensions' state.

    Each extension is ``active``, ``disabled`` (``DETEVAL_NO_EXTENSION=1``), ``not built`` (a
    source tree imported without ``pip install``, or no C compiler at install time: the numpy
    twins give the same numbers, slower) or a ``stale build`` (built from older sources: the
    twins run; :func:`deteval._speedups.state`).
    """
    import os

    from deteval import _speedups

    states = []
    for name in COMPILED_EXTENSIONS:
        states.append(f"  {name.rsplit('.', 1)[1]}: {_speedups.state(name)}")
    where = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package: deteval/cli/..
    return f"deteval {__version__} ({where})\ncompiled extensions:\n" + "\n".join(states)


class _VersionAction(argparse.Action):
    """``--version``: print :func:`version_text` and exit (the extensions load only when asked)."""

    def __init__(self, option_strings: list, dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        import sys

        parser._print_message(version_text() + "\n", sys.stdout)
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``deteval`` parser with every command (tests build it to check usage errors).

    ``command``: only that command's options are added; every command is still listed with its
    help (``deteval --help`` is the same). :func:`deteval.cli.main` builds the parser of the
    command it runs, without the other commands' hundreds of options. None: every command's.
    """
    parser = argparse.ArgumentParser(
        prog="deteval",
        allow_abbrev=False,
        description="Score object detectors: COCO, PASCAL VOC and custom protocols, equal to the reference tools.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EVALUATE_EXAMPLE,
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="the version, and which compiled extensions this process runs (the rest: numpy twins)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_evaluate(sub, command)
    _add_protocols(sub, command)
    _add_compare(sub, command)
    _add_validate(sub, command)
    _add_analyze(sub, command)
    _add_rank(sub, command)
    _add_pictures(sub, command)
    return parser


def _add_evaluate(sub: argparse._SubParsersAction, command: str | None) -> None:
    ev = sub.add_parser(
        "evaluate",
        help="score detections under one or more protocols",
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EVALUATE_EXAMPLE,
        description="Score detections against ground truth.",
    )
    if command not in (None, "evaluate"):
        return  # listed with its help; its options only when it runs
    _add_common(ev)
    ev.add_argument(
        "--scheduler",
        metavar="dask|dask://ADDRESS",
        help="--dt is a folder or glob of COCO result shard files: load and match each shard in a Dask "
        "task (a local cluster, or the scheduler at ADDRESS) and score once (the dask extra; "
        "docs/training-loop.md)",
    )
    _add_diagnostics(ev)


def _add_protocols(sub: argparse._SubParsersAction, command: str | None) -> None:
    pr = sub.add_parser(
        "protocols",
        help="list the preset protocols and their fields",
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  deteval protocols --list\n  deteval protocols voc2007\n  deteval protocols --format json\n",
    )
    if command not in (None, "protocols"):
        return  # listed with its help; its options only when it runs
    pr.add_argument(
        "--list",
        action="store_true",
        help="one line a protocol: name, fingerprint and source (no fields)",
    )
    pr.add_argument(
        "names",
        nargs="*",
        metavar="NAME_OR_YAML",
        help="show these presets or YAML files, resolved (default: every preset)",
    )
    pr.add_argument(
        "--format",
        choices=["table", "json", "yaml"],
        default="table",
        help="yaml: complete protocol files, a starting point for your own",
    )


def _add_compare(sub: argparse._SubParsersAction, command: str | None) -> None:
    co = sub.add_parser(
        "compare",
        help="score under several protocols side by side (and explain why they differ)",
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_COMPARE_EXAMPLE,
        description="Score one dataset under several protocols (one matching per distinct "
        "matching setting) and print classes x protocols. --explain walks "
        "from each protocol to the next one field group at a time and "
        "attributes the change of the headline to each (docs/protocols.md).",
    )
    if command not in (None, "compare"):
        return  # listed with its help; its options only when it runs
    _add_common(co)
    co.add_argument(
        "--explain",
        action="store_true",
        help="attribute the difference between consecutive protocols to their fields",
    )


def _add_validate(sub: argparse._SubParsersAction, command: str | None) -> None:
    va = sub.add_parser(
        "validate",
        help="check inputs without scoring and print what was found",
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_VALIDATE_EXAMPLE,
        description="Load and check ground truth (and detections) as `evaluate` would, "
        "without scoring. Exit 0: they can be scored (warnings listed); "
        "exit 3: they cannot (the error names file, record and field).",
    )
    if command not in (None, "validate"):
        return  # listed with its help; its options only when it runs
    va.add_argument("--gt", required=True, help="ground truth: COCO JSON, VOC root, or YOLO dataset")
    va.add_argument(
        "--dt", help="detections (optional): COCO results JSON, VOC result folder, or YOLO prediction folder"
    )
    va.add_argument(
        "--protocol",
        action="append",
        default=None,
        metavar="NAME_OR_YAML",
        help="check against these protocols' needs (boxes, max_dets); default: coco",
    )
    va.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        dest="overrides",
        help="override a protocol field, as evaluate does (e.g. invalid_polygons=error)",
    )
    va.add_argument(
        "--iou-type", choices=list(FIELD_CHOICES["iou_type"]), help="shorthand for the protocol's iou_type"
    )
    va.add_argument("--mask-iou", choices=["exact", "raster"], help="shorthand for --set mask_iou=...")
    _add_input_options(va)
    va.add_argument(
        "--format",
        choices=["table", "json"],
        default="table",
        help="what to print on stdout (default: table)",
    )


_ANALYZE_EXAMPLE = """examples:
  deteval analyze --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json
  deteval analyze --gt gt.json --dt dt.json --errors --format json --output analysis.json
  deteval analyze --gt gt.json --dt dt.json --confusion --confidence 0.3 --iou 0.5
  deteval analyze --gt gt.json --dt dt.json --calibration --lrp --tp-iou --mauc
"""


def _add_analyze(sub: argparse._SubParsersAction, command: str | None = None) -> None:
    an = sub.add_parser(
        "analyze",
        help="why the number is what it is: TIDE errors, AP decomposition, confusion matrix",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_ANALYZE_EXAMPLE,
        description="TIDE error types (tidecv's numbers by default), the decomposition "
        "AP = localization x classification given localization, and the "
        "confusion matrix (docs/analysis.md). No selector: all three.",
    )
    if command not in (None, "analyze"):
        return  # listed with its help; its options only when it runs
    an.add_argument("--gt", required=True, help="ground truth: COCO JSON, VOC root, or YOLO dataset")
    an.add_argument(
        "--dt",
        required=True,
        help="detections: COCO results JSON, VOC result folder, or YOLO prediction folder",
    )
    an.add_argument(
        "--protocol",
        default="coco",
        metavar="NAME_OR_YAML",
        help="protocol for the decomposition, the confusion matrix's ignore rules and "
        "--tide-mode protocol (default: coco)",
    )
    an.add_argument("--errors", action="store_true", help="TIDE error types (dAP per error type)")
    an.add_argument(
        "--decompose", action="store_true", help="AP = localization x classification|localization"
    )
    an.add_argument("--confusion", action="store_true", help="confusion matrix")
    an.add_argument(
        "--calibration", action="store_true", help="D-ECE of the confidences and the reliability curve"
    )
    an.add_argument("--lrp", action="store_true", help="optimal LRP, its components and thresholds")
    an.add_argument("--tp-iou", action="store_true", help="mean IoU of the true positives per class")
    an.add_argument("--mauc", action="store_true", help="faster-coco-eval's precision/recall AUC")
    an.add_argument(
        "--label-errors",
        nargs="?",
        const="",
        default=None,
        metavar="FILE",
        help="label-error candidates (JSON key label_errors; docs/label-errors.md); with FILE, "
        "also written there as JSON",
    )
    an.add_argument(
        "--label-thresholds",
        default="",
        metavar="KEY=V,...",
        help="--label-errors' thresholds: confidence (0.5), wrong_class_iou (0.7), background_iou "
        "(0.1), duplicate_iou (0.9)",
    )
    an.add_argument(
        "--calibration-features",
        default="confidence",
        metavar="F,...",
        help="what D-ECE bins on: confidence, then any of cx,cy,w,h (default: confidence)",
    )
    an.add_argument(
        "--calibration-bins",
        default="10",
        metavar="N[,N...]",
        help="equal-width bins, one count or one per feature (default 10)",
    )
    an.add_argument(
        "--lrp-tau", type=_IOU, default=0.5, metavar="T", help="LRP's IoU threshold (default 0.5)"
    )
    an.add_argument(
        "--bootstrap",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="with --calibration / --lrp: intervals of D-ECE and oLRP (overall, components, per "
        "class) over N image resamples",
    )
    an.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        metavar="S",
        help="seed of the --bootstrap draws (default 0)",
    )
    an.add_argument(
        "--ci", type=_LEVEL, default=0.95, metavar="LEVEL", help="--bootstrap interval level (default 0.95)"
    )
    an.add_argument(
        "--against",
        metavar="DT",
        help="with --bootstrap: a second detector's detections (same format as --dt); adds the paired "
        "differences --dt minus --against of D-ECE and oLRP, both drawn on the same images",
    )
    an.add_argument(
        "--bootstrap-method",
        choices=["basic", "percentile"],
        default="basic",
        help="--bootstrap intervals: basic (default, reflected about the estimate: D-ECE is biased "
        "upwards on few detections) or percentile",
    )
    an.add_argument(
        "--confidence",
        type=_SCORE,
        default=0.5,
        metavar="C",
        help="score cut of the confusion matrix (default 0.5)",
    )
    an.add_argument(
        "--iou",
        type=_IOU,
        default=0.5,
        metavar="T",
        help="IoU threshold of the parts (TIDE's foreground threshold, --calibration, --tp-iou; default 0.5)",
    )
    an.add_argument(
        "--tide-mode",
        choices=["tidecv", "protocol"],
        default="tidecv",
        help="tidecv: the tidecv package's numbers; protocol: the same error types under "
        "--protocol's matching and interpolation",
    )
    an.add_argument(
        "--format",
        choices=["table", "markdown", "json"],
        default="table",
        help="what to print on stdout (default: table)",
    )
    an.add_argument("--output", help="also write the JSON document to this file")
    _add_input_options(an)
    an.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr")


_RANK_EXAMPLE = """examples:
  deteval rank --labels labels.npy --scores scores.npy
  deteval rank --labels labels.csv --scores scores.csv --average micro --binarize 0.5
  deteval rank --labels y.txt --scores s.txt --method 11_point --k 10 --format json
"""


def _add_rank(sub: argparse._SubParsersAction, command: str | None = None) -> None:
    ra = sub.add_parser(
        "rank",
        help="average precision of scores (scikit-learn exact), AP@K, raw vs binarized",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_RANK_EXAMPLE,
        description="Ranking metrics of scores against 0/1 labels: one row per sample, "
        "one column per label (.npy, .csv or whitespace .txt). "
        "docs/ranking.md defines every number.",
    )
    if command not in (None, "rank"):
        return  # listed with its help; its options only when it runs
    ra.add_argument("--labels", required=True, metavar="FILE", help="0/1 labels (.npy, .csv, .txt)")
    ra.add_argument("--scores", required=True, metavar="FILE", help="scores of the same shape")
    ra.add_argument(
        "--average",
        choices=[a for a in AVERAGES if a],
        default="macro",
        help="how labels are combined (scikit-learn's meanings; default macro)",
    )
    ra.add_argument(
        "--method",
        choices=AP_METHODS,
        default="step",
        help="step: scikit-learn's AP; all_point / 11_point / 101_point: the detection "
        "protocols' interpolations (default step)",
    )
    ra.add_argument(
        "--id-column",
        metavar="NAME_OR_NUMBER",
        help="a column of row ids in both text files (its header name or 1-based number): set aside, "
        "and checked to list the same rows in the same order in both files",
    )
    ra.add_argument("--k", type=_positive_int, metavar="K", help="also P@K, R@K, AP@K and nDCG@K")
    ra.add_argument(
        "--binarize",
        type=_SCORE,
        metavar="T",
        help="also AP of the predictions thresholded at >= T, beside the raw AP",
    )
    ra.add_argument(
        "--format",
        choices=["table", "json", "csv"],
        default="table",
        help="what to print on stdout (default: table)",
    )
    ra.add_argument("--output", help="also write the JSON document to this file")
    ra.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr")


_COMPARE_EXAMPLE = """examples:
  deteval compare --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json \\
      --protocol voc2007 --protocol voc2010 --protocol coco
  deteval compare --gt gt.json --dt dt.json --protocol voc2007 --protocol voc2010 --explain
  deteval compare --gt gt.json --dt dt.json --protocol coco --protocol my-coco.yaml --format markdown
"""


_VALIDATE_EXAMPLE = """examples:
  deteval validate --gt fixtures/coco/gt.json
  deteval validate --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json --format json
  deteval validate --gt gt.json --dt dt.json --strict      # warnings are errors (exit 3)
"""


def _add_pictures(sub: argparse._SubParsersAction, command: str | None = None) -> None:
    """``deteval plot`` and ``deteval report`` (the ``plot`` extra: matplotlib)."""
    for name, example, what in (
        ("plot", _PLOT_EXAMPLE, "write every figure of the run (PNG and SVG) into a folder"),
        ("report", _REPORT_EXAMPLE, "write one self-contained HTML report of the run"),
    ):
        p = sub.add_parser(
            name,
            help=what,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=example,
            description=what[0].upper() + what[1:] + ' (needs the plot extra: pip install "deteval[plot]"; '
            "docs/plots.md). Several --dt and --protocol are shown side by side.",
            allow_abbrev=False,
        )
        if command not in (None, name):
            continue  # listed with its help; its options only when it runs
        _add_common(p)
        p.add_argument(
            "--out",
            required=True,
            metavar="DIR" if name == "plot" else "FILE.html",
            help="the folder of figures" if name == "plot" else "the HTML file",
        )
        p.add_argument(
            "--analyze",
            action="store_true",
            help="add TIDE errors, the decomposition and the confusion matrix (first detector, first protocol)",
        )
        p.add_argument(
            "--explain",
            action="store_true",
            help="add the explain walk between consecutive protocols (first detector)",
        )
        p.add_argument("--title", help="the report's title")
        if name == "report":
            _add_gallery(p)
        if name == "plot":
            p.add_argument(
                "--plot-format",
                action="append",
                choices=["png", "svg"],
                default=None,
                help="image formats (repeat; default both)",
            )
