"""Command line: ``deteval evaluate | compare | validate | protocols``.

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
from deteval.io.output import ReadLog, check_output, recording_reads, write_atomic
from deteval.io.yolo import LAYOUTS as _YOLO_LAYOUTS
from deteval.memory import memory_limit
from deteval.protocol import PRESETS, Protocol
from deteval.sharding import effective_workers

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
    p.add_argument("--area-from-box", action="store_true",
                   help="COCO GT without `area`: use w*h of the box (with a warning) instead of failing")
    p.add_argument("--drop-unknown-categories", action="store_true",
                   help="drop detections of categories not in the GT (counted warning) instead of failing")
    p.add_argument("--strict", action="store_true", help="turn input warnings into errors (exit 3)")
    p.add_argument("--yolo-layout", choices=_YOLO_LAYOUTS, metavar="LAYOUT",
                   help="column order of YOLO prediction rows: 'cls cx cy w h conf' (Ultralytics, the "
                        "default) or 'cls conf cx cy w h'")


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gt", required=True, help="ground truth: COCO JSON, VOC root, or YOLO dataset")
    p.add_argument("--dt", required=True, help="detections: COCO results JSON, VOC result folder, "
                                               "or YOLO prediction folder")
    p.add_argument("--protocol", action="append", default=None, metavar="NAME_OR_YAML",
                   help="preset name or YAML file; repeat for several (default: coco)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", dest="overrides",
                   help="override a protocol field for this run, VALUE in YAML syntax "
                        "(e.g. iou_thresholds=[0.3], box_convention=continuous)")
    p.add_argument("--iou-type", choices=["bbox", "segm"], help="shorthand for --set iou_type=...")
    p.add_argument("--mask-iou", choices=["exact", "raster"], help="shorthand for --set mask_iou=...")
    p.add_argument("--output", help="also write the JSON result to this file")
    p.add_argument("--format", choices=["table", "markdown", "csv", "json"], default="table",
                   help="what to print on stdout (default: table)")
    p.add_argument("--no-per-class", action="store_true", help="omit the per-class table")
    _add_input_options(p)
    p.add_argument("--compare-mask-modes", action="store_true",
                   help="segm: also score with the other mask IoU (exact vs raster) and report "
                        "per-metric differences and how many matches changed")
    p.add_argument("--confidence", type=float, metavar="T",
                   help="also report per-class precision/recall/F1 of the detections scoring >= T "
                        "(at IoU 0.5, or the protocol's first threshold)")
    p.add_argument("--matches", metavar="FILE.csv",
                   help="write every scored detection with its outcome (tp/fp/ignored) and the "
                        "ground truth it matched (first protocol, IoU 0.5 or its first threshold)")
    p.add_argument("--workers", type=_positive_int, default=1, metavar="N",
                   help="match image shards in N processes and merge (same numbers; default 1)")
    p.add_argument("--memory-limit", type=_size, metavar="SIZE",
                   help="refuse runs whose big arrays would need more than SIZE bytes (e.g. 8G, 512M); "
                        "default: the memory available (MemAvailable)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no warnings on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deteval", description="Score object detectors: COCO, PASCAL VOC and custom protocols, "
                                    "equal to the reference tools.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EVALUATE_EXAMPLE)
    parser.add_argument("--version", action="version", version=f"deteval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ev = sub.add_parser("evaluate", help="score detections under one or more protocols",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EVALUATE_EXAMPLE,
                        description="Score detections against ground truth.")
    _add_common(ev)
    pr = sub.add_parser("protocols", help="list the preset protocols and their fields",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="example:\n  deteval protocols\n  deteval protocols --format json\n")
    pr.add_argument("names", nargs="*", metavar="NAME_OR_YAML",
                    help="show these presets or YAML files, resolved (default: every preset)")
    pr.add_argument("--format", choices=["table", "json", "yaml"], default="table",
                    help="yaml: complete protocol files, a starting point for your own")
    co = sub.add_parser("compare", help="score under several protocols side by side (and explain why "
                                        "they differ)",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_COMPARE_EXAMPLE,
                        description="Score one dataset under several protocols (one matching per distinct "
                                    "matching setting) and print classes x protocols. --explain walks "
                                    "from each protocol to the next one field group at a time and "
                                    "attributes the change of the headline to each (docs/protocols.md).")
    _add_common(co)
    co.add_argument("--explain", action="store_true",
                    help="attribute the difference between consecutive protocols to their fields")
    va = sub.add_parser("validate", help="check inputs without scoring and print what was found",
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_VALIDATE_EXAMPLE,
                        description="Load and check ground truth (and detections) as `evaluate` would, "
                                    "without scoring. Exit 0: they can be scored (warnings listed); "
                                    "exit 3: they cannot (the error names file, record and field).")
    va.add_argument("--gt", required=True, help="ground truth: COCO JSON, VOC root, or YOLO dataset")
    va.add_argument("--dt", help="detections (optional): COCO results JSON, VOC result folder, "
                                 "or YOLO prediction folder")
    va.add_argument("--protocol", action="append", default=None, metavar="NAME_OR_YAML",
                    help="check against these protocols' needs (boxes, max_dets); default: coco")
    va.add_argument("--iou-type", choices=["bbox", "segm"], help="shorthand for the protocol's iou_type")
    _add_input_options(va)
    va.add_argument("--format", choices=["table", "json"], default="table",
                    help="what to print on stdout (default: table)")
    va.set_defaults(overrides=[], mask_iou=None)
    return parser


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
    return [(option, path) for option, path in (("--output", args.output),
                                                ("--matches", getattr(args, "matches", None))) if path]


def _refuse_overwrite(args: argparse.Namespace, log: ReadLog | None = None) -> None:
    """Refuse outputs that are inputs: before loading (by the paths given), and again with ``log``,
    every file and folder loading actually read (protocol files and their ``extends:`` included)."""
    given = {"--gt": args.gt, "--dt": args.dt}
    for option, path in _outputs(args):
        check_output(path, given, option=option)
        if log is not None:
            check_output(path, log, option=option)


class _Progress:
    """Stage progress on stderr (tqdm), off with -q or when stderr is not a terminal."""

    def __init__(self, total: int, quiet: bool):
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm  # lazy on purpose: only for a progress bar on a terminal
            self.bar = tqdm(total=total, file=sys.stderr, leave=False, unit="step")

    def step(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_description(label)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _protocols(args: argparse.Namespace) -> list[Protocol]:
    return api.resolve_protocols(args.protocol, overrides=args.overrides, iou_type=args.iou_type,
                                 mask_iou=args.mask_iou)


def _input_options(args: argparse.Namespace) -> dict:
    return {"split": args.split, "area_from_box": args.area_from_box,
            "drop_unknown_categories": args.drop_unknown_categories, "yolo_layout": args.yolo_layout}


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


def _load(args: argparse.Namespace, protocols: list[Protocol]) -> api.Inputs:
    try:
        return api.load_inputs(args.gt, args.dt, protocols=protocols, **_input_options(args))
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
        others = (f"{w.category.__name__}: {w.message}" for w in caught
                  if not issubclass(w.category, DetevalWarning))
        for text in dict.fromkeys(others):
            print(f"deteval: note: {printable(text)}", file=sys.stderr)


def _write(path: str, text: str, option: str, log: ReadLog | None) -> None:
    """Write an output file atomically, never over an input (see :mod:`deteval.io.output`)."""
    write_atomic(path, text, option=option, inputs=log)


def _note_workers(args: argparse.Namespace) -> None:
    """``--workers`` above the usable CPUs is capped (:func:`deteval.sharding.effective_workers`)."""
    used = effective_workers(args.workers)
    if used < args.workers and not args.quiet:
        print(f"deteval: note: --workers {args.workers}: using {used}, the CPUs this process may "
              f"use (more processes would not be faster)", file=sys.stderr)


def _evaluate(args: argparse.Namespace) -> int:
    _note_workers(args)
    _refuse_overwrite(args)
    with recording_reads() as log:
        protocols = _protocols(args)
    progress = _Progress(2 + len(protocols), args.quiet)
    with _warnings_of(args) as caught:
        try:
            with recording_reads(log):
                inputs = _load(args, protocols)
            _refuse_overwrite(args, log)
            progress.step("loaded")
            try:
                results = api.evaluate_inputs(inputs, protocols, workers=args.workers, progress=progress.step)
            except InputWarning as exc:
                raise _strict(exc, "") from None
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
        _write(args.matches, report.format_matches_csv(results[0], api.matches(results[0])), "--matches",
               log)
    text = report.dumps(doc)
    _finish(args, text, caught, log)
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
    if len(protocols) < 2:
        print("deteval compare: error: expected at least two --protocol, found "
              f"{len(protocols)}; e.g. --protocol voc2007 --protocol coco", file=sys.stderr)
        return EXIT_USAGE
    for protocol in protocols:
        check_protocol(protocol)
    progress = _Progress(2 + (len(protocols) - 1 if args.explain else 0), args.quiet)
    with _warnings_of(args) as caught:
        try:
            with recording_reads(log):
                inputs = _load(args, protocols)
            _refuse_overwrite(args, log)
            progress.step("loaded")
            cache = api.MatchCache(inputs.gt, inputs.dt, workers=args.workers)
            try:
                comparison = api.compare(inputs.gt, inputs.dt, protocols, cache=cache, inputs=inputs.summary())
            except InputWarning as exc:
                raise _strict(exc, "") from None
            progress.step("compared")
            explanations = []
            if args.explain:
                for a, b in zip(protocols, protocols[1:], strict=False):
                    explanations.append(api.explain(inputs.gt, inputs.dt, a, b, cache=cache))
                    progress.step(f"{a.name} -> {b.name}")
        finally:
            progress.close()
    results = list(comparison.results)
    doc = report.compare_json(results, inputs=inputs.summary(), warnings=inputs.warnings,
                              matching_groups=comparison.matching_groups, explanations=explanations)
    text = report.dumps(doc)
    _finish(args, text, caught, log)
    groups = comparison.matching_groups
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        parts = [report.format_compare_markdown(results, matching_groups=groups)]
        parts += [report.format_explanation_markdown(e) for e in explanations]
        _out("\n".join(parts))
    elif args.format == "csv":
        _out(report.format_compare_csv(results))
        if explanations and not args.quiet:
            print("deteval: note: --explain is not part of the CSV; use --format json or table",
                  file=sys.stderr)
    else:
        parts = [report.format_compare_table(results, matching_groups=groups)]
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
    is still buffered cannot fail again (the Python docs' recipe for SIGPIPE)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _run(args: argparse.Namespace) -> int | None:
    if args.command == "evaluate":
        return _evaluate(args)
    if args.command == "protocols":
        return _list_protocols(args)
    if args.command == "compare":
        return _compare(args)
    if args.command == "validate":
        return _validate(args)
    return None


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
            code = _run(args)
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
        print(f"deteval: error: cannot write to stdout ({exc.strerror or exc}); the output is incomplete",
              file=sys.stderr)
        return EXIT_INPUT
    if code is not None:
        return code
    parser.print_usage(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
