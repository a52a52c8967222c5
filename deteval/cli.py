"""Command line: ``deteval evaluate | compare | validate | protocols``.

argparse and dispatch only: each handler reads its arguments, calls :mod:`deteval.api`, hands
the values to :mod:`deteval.report` and writes the text. The only module that prints.
Exit codes: 0 ok, 2 usage, 3 invalid input or config.

Warnings: the API emits :class:`~deteval.errors.InputWarning` and
:class:`~deteval.errors.UndefinedMetricWarning`; the CLI records them and prints each once at the
end (``deteval: warning: ...`` / ``deteval: note: ...``, not with -q). ``--strict`` is the filter
``simplefilter("error", InputWarning)``: its exception is reported as an error (exit 3).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
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
)
from deteval.evaluate import check_protocol
from deteval.io.yolo import LAYOUTS as _YOLO_LAYOUTS
from deteval.protocol import PRESETS, Protocol

__all__ = ["main"]

EXIT_OK, EXIT_USAGE, EXIT_INPUT = 0, 2, 3

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
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no warnings on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deteval", allow_abbrev=False,
        description="Score object detectors: COCO, PASCAL VOC and custom protocols, equal to the reference tools.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EVALUATE_EXAMPLE)
    parser.add_argument("--version", action="version", version=f"deteval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ev = sub.add_parser("evaluate", help="score detections under one or more protocols", allow_abbrev=False,
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EVALUATE_EXAMPLE,
                        description="Score detections against ground truth.")
    _add_common(ev)
    pr = sub.add_parser("protocols", help="list the preset protocols and their fields", allow_abbrev=False,
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="example:\n  deteval protocols\n  deteval protocols --format json\n")
    pr.add_argument("names", nargs="*", metavar="NAME_OR_YAML",
                    help="show these presets or YAML files, resolved (default: every preset)")
    pr.add_argument("--format", choices=["table", "json", "yaml"], default="table",
                    help="yaml: complete protocol files, a starting point for your own")
    co = sub.add_parser("compare", help="score under several protocols side by side (and explain why "
                                        "they differ)", allow_abbrev=False,
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_COMPARE_EXAMPLE,
                        description="Score one dataset under several protocols (one matching per distinct "
                                    "matching setting) and print classes x protocols. --explain walks "
                                    "from each protocol to the next one field group at a time and "
                                    "attributes the change of the headline to each (docs/protocols.md).")
    _add_common(co)
    co.add_argument("--explain", action="store_true",
                    help="attribute the difference between consecutive protocols to their fields")
    va = sub.add_parser("validate", help="check inputs without scoring and print what was found", allow_abbrev=False,
                        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_VALIDATE_EXAMPLE,
                        description="Load and check ground truth (and detections) as `evaluate` would, "
                                    "without scoring. Exit 0: they can be scored (warnings listed); "
                                    "exit 3: they cannot (the error names file, record and field).")
    va.add_argument("--gt", required=True, help="ground truth: COCO JSON, VOC root, or YOLO dataset")
    va.add_argument("--dt", help="detections (optional): COCO results JSON, VOC result folder, "
                                 "or YOLO prediction folder")
    va.add_argument("--protocol", action="append", default=None, metavar="NAME_OR_YAML",
                    help="check against these protocols' needs (boxes, max_dets); default: coco")
    va.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", dest="overrides",
                    help="override a protocol field, as evaluate does (e.g. invalid_polygons=error)")
    va.add_argument("--iou-type", choices=["bbox", "segm"], help="shorthand for the protocol's iou_type")
    va.add_argument("--mask-iou", choices=["exact", "raster"], help="shorthand for --set mask_iou=...")
    _add_input_options(va)
    va.add_argument("--format", choices=["table", "json"], default="table",
                    help="what to print on stdout (default: table)")
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


def _refuse_overwrite(args: argparse.Namespace) -> None:
    if args.output:
        api.refuse_overwrite(args.output, {"gt": args.gt, "dt": args.dt})


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
    return api.resolve_protocols(args.protocol, overrides=args.overrides, iou_type=args.iou_type,
                                 mask_iou=args.mask_iou)


def _input_options(args: argparse.Namespace) -> dict:
    return {"split": args.split, "area_from_box": args.area_from_box,
            "drop_unknown_categories": args.drop_unknown_categories, "yolo_layout": args.yolo_layout}


@contextlib.contextmanager
def _warnings_of(args: argparse.Namespace) -> Iterator[list]:
    """Record deteval's warnings (printed at the end); ``--strict`` makes InputWarning an error.

    Other warnings are shown as Python shows them.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DetevalWarning)
        if args.strict:
            warnings.simplefilter("error", InputWarning)
        yield caught
    for w in caught:
        if not issubclass(w.category, DetevalWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _strict(exc: InputWarning, stage: str, error: type = ConfigError) -> DetevalError:
    return error(f"--strict: {stage}warnings are errors:\n  " + "\n  ".join(exc.messages))


def _load(args: argparse.Namespace, protocols: list[Protocol]) -> api.Inputs:
    try:
        return api.load_inputs(args.gt, args.dt, protocols=protocols, **_input_options(args))
    except InputWarning as exc:
        raise _strict(exc, "input ") from None


def _print_warnings(args: argparse.Namespace, caught: list) -> None:
    """Each deteval warning once on stderr (unless -q): input warnings, then notes."""
    if not args.quiet:
        for category, label in ((InputWarning, "warning"), (UndefinedMetricWarning, "note")):
            for text in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, category)):
                print(f"deteval: {label}: {text}", file=sys.stderr)


def _write(path: str, text: str, option: str, hint: str = "") -> None:
    try:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot write ({exc.strerror}){hint}") from None


def _evaluate(args: argparse.Namespace) -> int:
    _refuse_overwrite(args)
    protocols = _protocols(args)
    progress = _Progress(1 + 2 * len(protocols), args.quiet)  # loading, then matching + scoring each
    with _warnings_of(args) as caught:
        try:
            progress.stage("loading")
            inputs = _load(args, protocols)
            try:
                results = api.evaluate_inputs(inputs, protocols, workers=args.workers, progress=progress.stage)
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
        if os.path.realpath(args.matches) in (os.path.realpath(args.gt), os.path.realpath(args.dt)):
            raise ConfigError(f"--matches {args.matches}: is an input; refusing to overwrite it")
        _write(args.matches, report.format_matches_csv(results[0], api.matches(results[0])), "--matches")
    text = report.dumps(doc)
    _finish(args, text, caught)
    per_class = not args.no_per_class
    if args.format == "json":
        sys.stdout.write(text + "\n")
    elif args.format == "markdown":
        sys.stdout.write(report.format_markdown(results, per_class=per_class))
    elif args.format == "csv":
        sys.stdout.write(report.format_csv(results))
    else:
        sys.stdout.write(report.format_table(results, per_class=per_class))
        for result, rows in zip(results, confidence_rows):
            sys.stdout.write(report.format_confidence_table(result, rows, args.confidence))
        for text_block in mask_reports:
            sys.stdout.write(text_block)
    return EXIT_OK


def _finish(args: argparse.Namespace, text: str, caught: list) -> None:
    """Write ``--output``; print warnings and notes on stderr (unless -q)."""
    if args.output:
        _write(args.output, text + "\n", "--output", "; expected a writable file path")
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
        sys.stdout.write(report.dumps(found.to_dict()) + "\n")
    else:
        sys.stdout.write(report.format_validation(found.to_dict()))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    """``deteval compare``: several protocols side by side, optionally explained."""
    _refuse_overwrite(args)
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
            progress.stage("loading")
            inputs = _load(args, protocols)
            progress.stage("matching and scoring")
            cache = api.MatchCache(inputs.gt, inputs.dt, workers=args.workers)
            try:
                comparison = api.compare(inputs.gt, inputs.dt, protocols, cache=cache, inputs=inputs.summary())
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
    doc = report.compare_json(results, inputs=inputs.summary(), warnings=inputs.warnings,
                              matching_groups=comparison.matching_groups, explanations=explanations)
    text = report.dumps(doc)
    _finish(args, text, caught)
    groups = comparison.matching_groups
    per_class = not args.no_per_class
    if args.format == "json":
        sys.stdout.write(text + "\n")
    elif args.format == "markdown":
        parts = [report.format_compare_markdown(results, matching_groups=groups, per_class=per_class)]
        parts += [report.format_explanation_markdown(e) for e in explanations]
        sys.stdout.write("\n".join(parts))
    elif args.format == "csv":
        sys.stdout.write(report.format_compare_csv(results, per_class=per_class))
        if explanations and not args.quiet:
            print("deteval: note: --explain is not part of the CSV; use --format json or table",
                  file=sys.stderr)
    else:
        parts = [report.format_compare_table(results, matching_groups=groups, per_class=per_class)]
        parts += [report.format_explanation(e) for e in explanations]
        sys.stdout.write("\n".join(parts))
    return EXIT_OK


def _list_protocols(args: argparse.Namespace) -> int:
    listed = {n: api.resolve_protocol(n) for n in (args.names or list(PRESETS))}
    if args.format == "json":
        sys.stdout.write(json.dumps(report.protocols_json(listed), indent=2) + "\n")
    elif args.format == "yaml":
        sys.stdout.write(report.format_protocols_yaml(listed))
    else:
        sys.stdout.write(report.format_protocols(listed))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (tests call it directly)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if args.command == "evaluate":
            return _evaluate(args)
        if args.command == "protocols":
            return _list_protocols(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "validate":
            return _validate(args)
    except DetevalError as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # pragma: no cover - `deteval ... | head`
        return EXIT_OK
    parser.print_usage(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
