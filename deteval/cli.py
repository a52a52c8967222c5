"""Command line: ``deteval evaluate | compare | validate | protocols | analyze | rank``.

argparse and dispatch only: each handler reads its arguments, calls :mod:`deteval.api`, hands
the values to :mod:`deteval.report` and writes the text. The only module that prints.
Exit codes: 0 ok, 2 usage, 3 invalid input or config (or stdout/an output file cannot be
written), 130 interrupted (Ctrl-C), 141 stdout closed early (``deteval ... | head``), 143
terminated (SIGTERM). Interrupted or failed runs leave no partial output file: every file is
written atomically (:func:`deteval.io.output.write_atomic`), and never over a file or into a
folder the run read (:func:`deteval.io.output.check_output`).

Warnings: the API emits :class:`~deteval.errors.InputWarning` and
:class:`~deteval.errors.UndefinedMetricWarning`; the CLI records them and prints each once at the
end (``deteval: warning: ...`` / ``deteval: note: ...``, not with -q). ``--strict`` is the filter
``simplefilter("error", InputWarning)``: its exception is reported as an error (exit 3).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence

from deteval import api, report
from deteval._version import __version__
from deteval.diagnose import analyze
from deteval.errors import (
    ConfigError,
    DetevalError,
    DetevalWarning,
    InputError,
    InputWarning,
    UndefinedMetricWarning,
    printable,
)
from deteval.evaluate import check_protocol
from deteval.io.matrix import read_labels_and_scores
from deteval.io.output import ReadLog, check_output, recording_reads, write_atomic
from deteval.io.yolo import LAYOUTS as _YOLO_LAYOUTS
from deteval.memory import memory_limit
from deteval.protocol import PRESETS, Protocol
from deteval.ranking import AP_METHODS, AVERAGES, rank_report
from deteval.sharding import effective_workers
from deteval.stats import bootstrap, compare_detectors, metrics_ci_dict, per_class_ci_list

__all__ = ["main"]

EXIT_OK, EXIT_USAGE, EXIT_INPUT = 0, 2, 3
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE, EXIT_TERMINATED = 130, 141, 143


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every ``finally`` and temporary-file cleanup runs."""


_EVALUATE_EXAMPLE = """examples:
  deteval evaluate --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json
  deteval evaluate --gt gt.json --dt dt.json --protocol coco --protocol coco50 --format markdown
  deteval evaluate --gt fixtures/voc --dt fixtures/voc/results --protocol voc2007
  deteval evaluate --gt gt.json --dt dt.json --protocol voc2010 --set iou_thresholds=[0.3]
"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, found {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, found {text}")
    return value


def _size(text: str) -> int:
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    number, unit = text.upper().rstrip("IB"), ""
    if number[-1:] in units:
        number, unit = number[:-1], number[-1]
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 8G or 512M, found {text}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive size, found {text}")
    return int(value)


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
        help="with --drop-unknown-categories: drop any share of the detections",
    )
    p.add_argument(
        "--category-map",
        metavar="index0|index1|FILE",
        help="detection category ids are 0-based (index0) or 1-based (index1) indices of the "
        "GT categories in id order, or FILE (YAML/JSON) maps detection id -> GT id or name",
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
        type=float,
        default=0.95,
        metavar="LEVEL",
        help="confidence level of the intervals (default 0.95)",
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
        "--iou-type", choices=["bbox", "segm", "keypoints"], help="shorthand for --set iou_type=..."
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
        "--compare-mask-modes",
        action="store_true",
        help="segm: also score with the other mask IoU (exact vs raster) and report "
        "per-metric differences and how many matches changed",
    )
    p.add_argument(
        "--confidence",
        type=float,
        metavar="T",
        help="also report per-class precision/recall/F1 of the detections scoring >= T "
        "(at IoU 0.5, or the protocol's first threshold)",
    )
    p.add_argument(
        "--matches",
        metavar="FILE.csv",
        help="write every scored detection with its outcome (tp/fp/ignored) and the "
        "ground truth it matched (first protocol, IoU 0.5 or its first threshold)",
    )
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="match image shards in N processes and merge (same numbers; default 1)",
    )
    p.add_argument(
        "--memory-limit",
        type=_size,
        metavar="SIZE",
        help="refuse runs whose big arrays would need more than SIZE bytes (e.g. 8G, 512M); "
        "default: the memory available (MemAvailable)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no warnings on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deteval",
        allow_abbrev=False,
        description="Score object detectors: COCO, PASCAL VOC and custom protocols, equal to the reference tools.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EVALUATE_EXAMPLE,
    )
    parser.add_argument("--version", action="version", version=f"deteval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ev = sub.add_parser(
        "evaluate",
        help="score detections under one or more protocols",
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EVALUATE_EXAMPLE,
        description="Score detections against ground truth.",
    )
    _add_common(ev)
    pr = sub.add_parser(
        "protocols",
        help="list the preset protocols and their fields",
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  deteval protocols\n  deteval protocols --format json\n",
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
    _add_common(co)
    co.add_argument(
        "--explain",
        action="store_true",
        help="attribute the difference between consecutive protocols to their fields",
    )
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
        "--iou-type", choices=["bbox", "segm", "keypoints"], help="shorthand for the protocol's iou_type"
    )
    va.add_argument("--mask-iou", choices=["exact", "raster"], help="shorthand for --set mask_iou=...")
    _add_input_options(va)
    va.add_argument(
        "--format",
        choices=["table", "json"],
        default="table",
        help="what to print on stdout (default: table)",
    )
    _add_analyze(sub)
    _add_rank(sub)
    return parser


_ANALYZE_EXAMPLE = """examples:
  deteval analyze --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json
  deteval analyze --gt gt.json --dt dt.json --errors --format json --output analysis.json
  deteval analyze --gt gt.json --dt dt.json --confusion --confidence 0.3 --iou 0.5
"""


def _add_analyze(sub: argparse._SubParsersAction) -> None:
    an = sub.add_parser(
        "analyze",
        help="why the number is what it is: TIDE errors, AP decomposition, confusion matrix",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_ANALYZE_EXAMPLE,
        description="TIDE error types (tidecv's numbers by default), the decomposition "
        "AP = localization x classification given localization, and the "
        "confusion matrix (docs/analysis.md). No selector: all three.",
    )
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
        "--confidence",
        type=float,
        default=0.5,
        metavar="C",
        help="score cut of the confusion matrix (default 0.5)",
    )
    an.add_argument(
        "--iou",
        type=float,
        default=0.5,
        metavar="T",
        help="IoU threshold of all three parts (TIDE's foreground threshold; default 0.5)",
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


def _add_rank(sub: argparse._SubParsersAction) -> None:
    ra = sub.add_parser(
        "rank",
        help="average precision of scores (scikit-learn exact), AP@K, raw vs binarized",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_RANK_EXAMPLE,
        description="Ranking metrics of scores against 0/1 labels: one row per sample, "
        "one column per label (.npy, .csv or whitespace .txt). "
        "docs/ranking.md defines every number.",
    )
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
    ra.add_argument("--k", type=_positive_int, metavar="K", help="also P@K, R@K, AP@K and nDCG@K")
    ra.add_argument(
        "--binarize",
        type=float,
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


def _outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(option, path) of every file this run will write."""
    return [
        (option, path)
        for option, path in (("--output", args.output), ("--matches", getattr(args, "matches", None)))
        if path
    ]


def _refuse_overwrite(args: argparse.Namespace, log: ReadLog | None = None) -> None:
    """Refuse outputs that are inputs: before loading (by the paths given), and again with ``log``,
    every file and folder loading actually read (protocol files and their ``extends:`` included).
    """
    dts = args.dt if isinstance(args.dt, list) else [args.dt]
    given = {
        "--gt": args.gt,
        **{("--dt" if len(dts) == 1 else f"--dt #{i + 1}"): d for i, d in enumerate(dts)},
    }
    for option, path in _outputs(args):
        check_output(path, given, option=option)
        if log is not None:
            check_output(path, log, option=option)


class _Progress:
    """Stage progress on stderr (tqdm), off with -q or when stderr is not a terminal.

    ``stage(label)`` marks the previous stage done and names the one starting now, so the bar
    shows what is running (``matching coco``) while it runs; ``finish()`` completes the last
    stage: the bar ends at 100%.
    """

    def __init__(self, total: int, quiet: bool):
        self.bar = None
        self.running = False
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm  # lazy on purpose: only for a progress bar on a terminal

            self.bar = tqdm(total=total, file=sys.stderr, leave=False, unit="stage")

    def stage(self, label: str) -> None:
        if self.bar is not None:
            if self.running:
                self.bar.update(1)
            self.bar.set_description(label)
            self.bar.refresh()
        self.running = True

    def finish(self) -> None:
        if self.bar is not None and self.running:
            self.bar.update(1)
        self.running = False

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _protocols(args: argparse.Namespace) -> list[Protocol]:
    return api.resolve_protocols(
        args.protocol, overrides=args.overrides, iou_type=args.iou_type, mask_iou=args.mask_iou
    )


def _input_options(args: argparse.Namespace) -> dict:
    return {
        "split": args.split,
        "area_from_box": args.area_from_box,
        "drop_unknown_categories": args.drop_unknown_categories,
        "yolo_layout": args.yolo_layout,
        "category_map": args.category_map,
        "allow_large_drop": args.allow_large_drop,
        "classes": args.classes,
        "result_prefix": args.result_prefix,
    }


@contextlib.contextmanager
def _warnings_of(args: argparse.Namespace) -> Iterator[list]:
    """Record deteval's warnings (printed at the end); ``--strict`` makes InputWarning an error.

    Other warnings (a stray numpy RuntimeWarning) are recorded too and printed as notes.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.strict:
            warnings.simplefilter("error", InputWarning)
        yield caught


def _strict(exc: InputWarning, stage: str, error: type = ConfigError) -> DetevalError:
    return error(f"--strict: {stage}warnings are errors:\n  " + "\n  ".join(exc.messages))


def _load(args: argparse.Namespace, protocols: list[Protocol], dt: str | None = None) -> api.Inputs:
    """Load --gt and one detections input (default: the first --dt)."""
    if dt is None:
        dt = args.dt[0] if isinstance(args.dt, list) else args.dt
    try:
        return api.load_inputs(args.gt, dt, protocols=protocols, **_input_options(args))
    except InputWarning as exc:
        raise _strict(exc, "input ") from None


def _print_warnings(args: argparse.Namespace, caught: list) -> None:
    """Each warning once on stderr (unless -q): input warnings, then notes.

    A warning that is not deteval's (a stray numpy RuntimeWarning, say) is a note naming its
    category; it never reaches stderr raw.
    """
    if not args.quiet:
        for category, label in ((InputWarning, "warning"), (UndefinedMetricWarning, "note")):
            for text in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, category)):
                print(f"deteval: {label}: {printable(text)}", file=sys.stderr)
        others = (
            f"{w.category.__name__}: {w.message}"
            for w in caught
            if not issubclass(w.category, DetevalWarning)
        )
        for text in dict.fromkeys(others):
            print(f"deteval: note: {printable(text)}", file=sys.stderr)


def _write(path: str, text: str, option: str, log: ReadLog | None) -> None:
    """Write an output file atomically, never over an input (see :mod:`deteval.io.output`)."""
    write_atomic(path, text, option=option, inputs=log)


def _note_workers(args: argparse.Namespace) -> None:
    """``--workers`` above the usable CPUs is capped (:func:`deteval.sharding.effective_workers`)."""
    used = effective_workers(args.workers)
    if used < args.workers and not args.quiet:
        print(
            f"deteval: note: --workers {args.workers}: using {used}, the CPUs this process may "
            f"use (more processes would not be faster)",
            file=sys.stderr,
        )


def _evaluate(args: argparse.Namespace) -> int:
    _note_workers(args)
    _refuse_overwrite(args)
    note = ""
    if args.protocol is None:  # a VOC root is scored under its year's protocol, or refused
        name, note = api.default_protocol(args.gt)
        args.protocol = [name]
    with recording_reads() as log:
        protocols = _protocols(args)
    if len(args.dt) > 1 or args.bootstrap:
        return _detectors(args, protocols, log)
    progress = _Progress(1 + 2 * len(protocols), args.quiet)  # loading, then matching + scoring each
    with _warnings_of(args) as caught:
        try:
            progress.stage("loading")
            with recording_reads(log):
                inputs = _load(args, protocols)
            _refuse_overwrite(args, log)
            try:
                results = api.evaluate_inputs(
                    inputs, protocols, workers=args.workers, progress=progress.stage
                )
            except InputWarning as exc:
                raise _strict(exc, "") from None
            progress.finish()
        finally:
            progress.close()
    doc = report.to_json(results, inputs=inputs.summary(), warnings=inputs.warnings)
    confidence_rows = []
    if args.confidence is not None:
        for result, entry in zip(results, doc["results"]):
            confidence_rows.append(api.at_confidence(result, args.confidence))
            entry["at_confidence"] = report.confidence_json(result, confidence_rows[-1], args.confidence)
    mask_reports = []
    if args.compare_mask_modes:
        for result, entry in zip(results, doc["results"]):
            comparison = api.compare_mask_modes(inputs.gt, inputs.dt, result.protocol)
            entry["mask_mode_comparison"] = report.mask_mode_json(comparison)
            mask_reports.append(report.format_mask_mode_comparison(result.protocol, comparison))
    if args.matches:
        _write(args.matches, report.format_matches_csv(results[0], api.matches(results[0])), "--matches", log)
    text = report.dumps(doc)
    _finish(args, text, caught, log)
    if note and not args.quiet:
        print(f"deteval: note: {note}", file=sys.stderr)
    per_class = not args.no_per_class
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        _out(report.format_markdown(results, per_class=per_class))
    elif args.format == "csv":
        _out(report.format_csv(results))
    else:
        _out(report.format_table(results, per_class=per_class))
        for result, rows in zip(results, confidence_rows):
            _out(report.format_confidence_table(result, rows, args.confidence))
        for text_block in mask_reports:
            _out(text_block)
    return EXIT_OK


def _out(text: str) -> None:
    """Write report text on stdout, terminal-safe (:func:`deteval.errors.printable`)."""
    sys.stdout.write(printable(text, keep_newlines=True))


def _finish(args: argparse.Namespace, text: str, caught: list, log: ReadLog | None) -> None:
    """Write ``--output``; print warnings and notes on stderr (unless -q)."""
    if args.output:
        _write(args.output, text + "\n", "--output", log)
    _print_warnings(args, caught)


def _validate(args: argparse.Namespace) -> int:
    """``deteval validate``: load and check the inputs, print what was found, score nothing."""
    protocols = _protocols(args)
    with _warnings_of(args):
        try:
            found = api.validate(args.gt, args.dt, protocols=protocols, **_input_options(args))
        except InputWarning as exc:
            raise _strict(exc, "input ", InputError) from None
    if args.format == "json":
        _out(report.dumps(found.to_dict()) + "\n")
    else:
        _out(report.format_validation(found.to_dict()))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    """``deteval compare``: several protocols side by side, optionally explained."""
    _note_workers(args)
    _refuse_overwrite(args)
    with recording_reads() as log:
        protocols = _protocols(args)
    if len(args.dt) > 1 or args.bootstrap:
        return _detectors(args, protocols, log)
    if len(protocols) < 2:
        print(
            "deteval compare: error: expected at least two --protocol or two --dt, found "
            f"{len(protocols)} protocol and 1 detector; e.g. --protocol voc2007 --protocol coco",
            file=sys.stderr,
        )
        return EXIT_USAGE
    for protocol in protocols:
        check_protocol(protocol)
    progress = _Progress(2 + (len(protocols) - 1 if args.explain else 0), args.quiet)
    with _warnings_of(args) as caught:
        try:
            progress.stage("loading")
            with recording_reads(log):
                inputs = _load(args, protocols)
            _refuse_overwrite(args, log)
            progress.stage("matching and scoring")
            cache = api.MatchCache(inputs.gt, inputs.dt, workers=args.workers)
            try:
                comparison = api.compare(
                    inputs.gt, inputs.dt, protocols, cache=cache, inputs=inputs.summary()
                )
            except InputWarning as exc:
                raise _strict(exc, "") from None
            explanations = []
            if args.explain:
                for a, b in zip(protocols, protocols[1:], strict=False):
                    progress.stage(f"explaining {a.name} -> {b.name}")
                    explanations.append(api.explain(inputs.gt, inputs.dt, a, b, cache=cache))
            progress.finish()
        finally:
            progress.close()
    results = list(comparison.results)
    doc = report.compare_json(
        results,
        inputs=inputs.summary(),
        warnings=inputs.warnings,
        matching_groups=comparison.matching_groups,
        explanations=explanations,
    )
    text = report.dumps(doc)
    _finish(args, text, caught, log)
    groups = comparison.matching_groups
    per_class = not args.no_per_class
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        parts = [report.format_compare_markdown(results, matching_groups=groups, per_class=per_class)]
        parts += [report.format_explanation_markdown(e) for e in explanations]
        _out("\n".join(parts))
    elif args.format == "csv":
        _out(report.format_compare_csv(results, per_class=per_class))
        if explanations and not args.quiet:
            print(
                "deteval: note: --explain is not part of the CSV; use --format json or table", file=sys.stderr
            )
    else:
        parts = [report.format_compare_table(results, matching_groups=groups, per_class=per_class)]
        parts += [report.format_explanation(e) for e in explanations]
        _out("\n".join(parts))
    return EXIT_OK


def _list_protocols(args: argparse.Namespace) -> int:
    listed = {n: api.resolve_protocol(n) for n in (args.names or list(PRESETS))}
    if args.format == "json":
        _out(json.dumps(report.protocols_json(listed), indent=2) + "\n")
    elif args.format == "yaml":
        _out(report.format_protocols_yaml(listed))
    else:
        _out(report.format_protocols(listed))
    return EXIT_OK


def _detector_names(args: argparse.Namespace) -> list[str]:
    """--name values, or each --dt's file name (its path where two file names are equal)."""
    if args.name:
        if len(args.name) != len(args.dt):
            raise ConfigError(
                f"--name: {len(args.name)} names for {len(args.dt)} --dt; expected one per --dt"
            )
        names = list(args.name)
    else:
        names = [os.path.basename(os.path.normpath(d)) for d in args.dt]
        if len(set(names)) < len(names):
            names = list(args.dt)
    if len(set(names)) < len(names):
        raise ConfigError(f"--name: detector names must differ, found {names}")
    return names


def _detectors(args: argparse.Namespace, protocols: list[Protocol], log: ReadLog) -> int:
    """Several detectors (and/or --bootstrap): one table, differences to the first, intervals."""
    for option in ("confidence", "matches", "compare_mask_modes", "explain"):
        if getattr(args, option, None):
            raise ConfigError(
                f"--{option.replace('_', '-')}: not available with several --dt or "
                f"--bootstrap; run it on one detector"
            )
    for protocol in protocols:
        check_protocol(protocol)
    names = _detector_names(args)
    with _warnings_of(args) as caught:
        with recording_reads(log):
            loaded = [_load(args, protocols, dt) for dt in args.dt]
        _refuse_overwrite(args, log)
        gt = loaded[0].gt
        try:
            results = [api.evaluate_inputs(inputs, protocols, workers=args.workers) for inputs in loaded]
        except InputWarning as exc:
            raise _strict(exc, "") from None
    intervals, comparisons, settings = None, [], None
    if args.bootstrap:
        intervals = [[{} for _ in protocols] for _ in names]
        for p, protocol in enumerate(protocols):
            if len(names) > 1:
                found = compare_detectors(
                    gt,
                    {n: r[p].table for n, r in zip(names, results)},
                    protocol,
                    n=args.bootstrap,
                    seed=args.seed,
                    ci=args.ci,
                    workers=args.workers,
                )
                comparisons += [{**c.to_dict(), "verdict": c.verdict} for c in found.comparisons]
                boot = found.bootstrap
            else:
                boot = bootstrap(
                    gt,
                    {names[0]: results[0][p]},
                    n=args.bootstrap,
                    seed=args.seed,
                    ci=args.ci,
                    workers=args.workers,
                )
            settings = boot.settings.to_dict()
            for d, name in enumerate(names):
                detector = boot.get(name, protocol.name)
                intervals[d][p] = {
                    "metrics_ci": metrics_ci_dict(detector),
                    "per_class_ci": per_class_ci_list(detector),
                }
    summaries = [inputs.summary() for inputs in loaded]
    inputs_doc = {
        "gt": args.gt,
        "dt": list(args.dt),
        "detectors": names,
        "images": gt.n_images,
        "gt_objects": len(gt),
        "detections": [s["detections"] for s in summaries],
    }
    warnings_seen = list(dict.fromkeys(w for inputs in loaded for w in inputs.warnings))
    doc = report.detectors_json(
        names,
        results,
        inputs=inputs_doc,
        warnings=warnings_seen,
        intervals=intervals,
        comparisons=comparisons,
        bootstrap=settings,
    )
    text = report.dumps(doc)
    _finish(args, text, caught, log)
    per_class = not args.no_per_class
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        _out(report.format_detectors_markdown(doc, per_class=per_class))
    elif args.format == "csv":
        _out(report.format_detectors_csv(doc))
    else:
        _out(report.format_detectors_table(doc, per_class=per_class))
    return EXIT_OK


def _analyze(args: argparse.Namespace) -> int:
    """``deteval analyze``: TIDE errors, the decomposition and the confusion matrix."""
    _refuse_overwrite(args)
    selected = (args.errors, args.decompose, args.confusion)
    parts = selected if any(selected) else (True, True, True)
    with _warnings_of(args) as caught:
        with recording_reads() as log:
            protocol = api.resolve_protocol(args.protocol)
            inputs = _load(args, [protocol])
        _refuse_overwrite(args, log)
        found = analyze(
            inputs.gt,
            inputs.dt,
            protocol,
            errors=parts[0],
            decompose=parts[1],
            confusion=parts[2],
            confidence=args.confidence,
            iou=args.iou,
            tide_mode=args.tide_mode,
        )
    doc = report.analysis_json(
        found.to_dict(), protocol=protocol, inputs=inputs.summary(), warnings=inputs.warnings
    )
    text = report.dumps(doc)
    _finish(args, text, caught, log)
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        _out(report.format_analysis_markdown(doc))
    else:
        _out(report.format_analysis_table(doc))
    return EXIT_OK


def _rank(args: argparse.Namespace) -> int:
    """``deteval rank``: ranking metrics of a score matrix against its labels."""
    given = {"--labels": args.labels, "--scores": args.scores}
    if args.output:
        check_output(args.output, given, option="--output")
    labels, scores = read_labels_and_scores(args.labels, args.scores)
    doc = {
        "deteval_version": __version__,
        **rank_report(
            labels,
            scores,
            average=args.average,
            method=args.method,
            k=args.k,
            binarize=args.binarize,
            labels_name=args.labels,
            scores_name=args.scores,
        ),
    }
    text = report.dumps(doc)
    if args.output:
        _write(args.output, text + "\n", "--output", given)
    if not args.quiet:
        for message in doc["warnings"]:
            print(printable(f"deteval: note: {message}"), file=sys.stderr)
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "csv":
        _out(report.format_rank_csv(doc) + "\n")
    else:
        _out(report.format_rank_table(doc, warnings=False) + "\n")
    return EXIT_OK


_COMMANDS = {
    "evaluate": _evaluate,
    "protocols": _list_protocols,
    "compare": _compare,
    "validate": _validate,
    "analyze": _analyze,
    "rank": _rank,
}


_STDOUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE}


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`_Terminated` (a KeyboardInterrupt) while the command runs.

    Only in the main thread (the only one that may set handlers); the previous handler is
    restored afterwards, so a test calling :func:`main` leaves the process as it found it.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _silence_stdout() -> None:
    """Point stdout's file descriptor at /dev/null, so that the interpreter's final flush of what
    is still buffered cannot fail again (the Python docs' recipe for SIGPIPE).
    """
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (tests call it directly).

    Failures end in one line on stderr and an exit code, never a traceback: invalid input or
    config 3; stdout that cannot be written (a full disk) 3; stdout closed by the reader
    (``| head``) 141, silently; Ctrl-C 130; SIGTERM 143. Output files are never half-written.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        with _sigterm_raises(), memory_limit(getattr(args, "memory_limit", None)):
            code = _COMMANDS[args.command](args)
            if code is not None:
                sys.stdout.flush()  # inside the handlers: a closed or full stdout fails here
    except DetevalError as exc:
        print(f"deteval: error: {printable(str(exc), keep_newlines=True)}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # `deteval ... | head`: the reader has what it wanted
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except _Terminated:
        print("deteval: terminated (SIGTERM); every output file is complete or untouched", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("deteval: interrupted (Ctrl-C); every output file is complete or untouched", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _STDOUT_ERRNOS:
            raise  # not a full or failing stdout: a bug to report, not a condition to hide
        _silence_stdout()
        print(
            f"deteval: error: cannot write to stdout ({exc.strerror or exc}); the output is incomplete",
            file=sys.stderr,
        )
        return EXIT_INPUT
    if code is not None:
        return code
    parser.print_usage(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
