"""Command line: ``deteval evaluate | compare | protocols``.

The only module that prints. Exit codes: 0 ok, 2 usage, 3 invalid input or config.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from deteval import __version__
from deteval.errors import ConfigError, DetevalError
from deteval.evaluate import EvalResult, resolve_protocol
from deteval.protocol import PRESETS, Protocol

__all__ = ["main"]

EXIT_OK, EXIT_USAGE, EXIT_INPUT = 0, 2, 3

_EVALUATE_EXAMPLE = """examples:
  deteval evaluate --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json
  deteval evaluate --gt gt.json --dt dt.json --protocol coco --protocol coco50 --format markdown
  deteval evaluate --gt fixtures/voc --dt fixtures/voc/results --protocol voc2007
  deteval evaluate --gt gt.json --dt dt.json --protocol voc2010 --set iou_thresholds=[0.3]
"""


#: Column layouts of YOLO prediction rows (deteval.io.yolo.LAYOUTS; not imported at start-up).
_YOLO_LAYOUTS = ("cls cx cy w h conf", "cls conf cx cy w h")


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


def _parse_overrides(items: Sequence[str]) -> dict:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected FIELD=VALUE, e.g. --set iou_thresholds=[0.3]")
        key, _, raw = item.partition("=")
        from deteval.protocol import parse_yaml_value
        out[key.strip()] = parse_yaml_value(raw, where="--set", key=key.strip())
    return out


def _protocols(args: argparse.Namespace) -> list[Protocol]:
    overrides = _parse_overrides(args.overrides)
    if args.iou_type:
        overrides["iou_type"] = args.iou_type
    if args.mask_iou:
        overrides["mask_iou"] = args.mask_iou
    names = args.protocol or ["coco"]
    protocols = [resolve_protocol(n) for n in names]
    if overrides:
        from deteval.protocol import apply_overrides
        protocols = [apply_overrides(p, overrides, where="--set") for p in protocols]
    return protocols


def _refuse_overwrite(args: argparse.Namespace) -> None:
    """Refuse an --output that is an input, a link to one, or an existing file in an input folder."""
    if not args.output:
        return
    out = os.path.realpath(args.output)
    for name in ("gt", "dt"):
        source = getattr(args, name, None)
        if not source:
            continue
        real = os.path.realpath(source)
        is_same = real == out or (os.path.exists(out) and os.path.exists(real)
                                  and os.path.samefile(real, out))
        if is_same:
            raise ConfigError(f"--output {args.output}: is the --{name} input; refusing to overwrite it")
        if os.path.isdir(real) and os.path.isfile(out) and os.path.commonpath([real, out]) == real:
            raise ConfigError(f"--output {args.output}: is a file inside the --{name} folder {source}; "
                              f"refusing to overwrite what may be an input (choose a path outside it)")


class _Progress:
    """Stage progress on stderr (tqdm), off with -q or when stderr is not a terminal."""

    def __init__(self, total: int, quiet: bool):
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm
            self.bar = tqdm(total=total, file=sys.stderr, leave=False, unit="step")

    def step(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_description(label)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _load_inputs(args: argparse.Namespace, protocols: list[Protocol]) -> tuple:
    gt = _load_gt(args)
    return gt, _load_dt(args, gt, protocols)


def _load_dt(args: argparse.Namespace, gt: Any, protocols: list[Protocol]) -> Any:
    from deteval.io import load_detections
    dt_options: dict[str, Any] = {}
    if args.drop_unknown_categories:
        dt_options["unknown_category"] = "drop"
    if getattr(args, "yolo_layout", None):
        from deteval.io import gt_format
        if gt_format(args.gt) != "yolo" or not os.path.isdir(args.dt):
            raise ConfigError(f"--yolo-layout: only for YOLO predictions (a folder of txt files with a "
                              f"YOLO --gt), but --gt {args.gt} is {gt_format(args.gt)}")
        dt_options["layout"] = args.yolo_layout
    dt = load_detections(args.dt, gt, **dt_options)
    if any(p.iou_type == "bbox" for p in protocols):
        from deteval.io.coco import require_boxes
        require_boxes(dt)
    return dt


def _load_gt(args: argparse.Namespace) -> Any:
    from deteval.io import gt_format, load_ground_truth
    gt_options: dict[str, Any] = {}
    kind = gt_format(args.gt)
    if args.split:
        if kind != "voc":
            raise ConfigError(f"--split {args.split}: only for a VOC root, but --gt {args.gt} is {kind}")
        gt_options["split"] = args.split
    if args.area_from_box:
        if kind != "coco":
            raise ConfigError("--area-from-box: only for COCO ground truth")
        gt_options["area_missing"] = "box"
    return load_ground_truth(args.gt, **gt_options)


def _evaluate(args: argparse.Namespace) -> int:
    from deteval.evaluate import score
    from deteval.report import format_confidence_table, format_csv, format_markdown, format_table, to_json
    from deteval.sharding import match_sharded
    _refuse_overwrite(args)
    protocols = _protocols(args)
    progress = _Progress(2 + len(protocols), args.quiet)
    try:
        gt, dt, input_warnings, inputs = _load_checked(args, protocols)
        progress.step("loaded")
        results: list[EvalResult] = []
        for protocol in protocols:
            from deteval.evaluate import check_protocol
            check_protocol(protocol)
            table = match_sharded(gt, dt, protocol, workers=args.workers)
            results.append(score(table, gt, protocol, warnings=(), inputs=inputs))
            progress.step(protocol.name)
    finally:
        progress.close()
    protocol_warnings = [w for r in results for w in r.warnings]
    if args.strict and protocol_warnings:
        raise ConfigError("--strict: warnings are errors:\n  " + "\n  ".join(protocol_warnings))
    doc = to_json(results, inputs=inputs, warnings=input_warnings)
    confidence_rows = _confidence_rows(args, results, doc)
    mask_reports = _mask_mode_reports(args, gt, dt, results, doc)
    if args.matches:
        _write_matches(args, results[0])
    text = json.dumps(doc, indent=2, allow_nan=False)
    _write_output_and_warnings(args, doc, text)
    per_class = not args.no_per_class
    if args.format == "json":
        sys.stdout.write(text + "\n")
    elif args.format == "markdown":
        sys.stdout.write(format_markdown(results, per_class=per_class))
    elif args.format == "csv":
        sys.stdout.write(format_csv(results))
    else:
        sys.stdout.write(format_table(results, per_class=per_class))
        for result, rows in zip(results, confidence_rows):
            sys.stdout.write(format_confidence_table(result, rows, args.confidence))
        for text_block in mask_reports:
            sys.stdout.write(text_block)
    return EXIT_OK


def _mask_mode_reports(args: argparse.Namespace, gt: Any, dt: Any, results: list, doc: dict) -> list:
    """``--compare-mask-modes``: exact vs raster per protocol, into the JSON and as text."""
    if not getattr(args, "compare_mask_modes", False):
        return []
    from deteval.mask_modes import compare_mask_modes
    from deteval.report import format_mask_mode_comparison
    from deteval.summary import none_if_nan as _none_if_nan
    out = []
    for result, entry in zip(results, doc["results"]):
        if result.protocol.iou_type != "segm":
            raise ConfigError(f"--compare-mask-modes: protocol {result.protocol.name!r} scores boxes; "
                              f"expected --iou-type segm")
        comparison = compare_mask_modes(gt, dt, result.protocol)
        entry["mask_mode_comparison"] = {
            "metric_difference_exact_minus_raster": {k: _none_if_nan(v)
                                                     for k, v in comparison.metric_difference.items()},
            "n_outcomes": comparison.n_outcomes, "n_changed": comparison.n_changed,
            "n_matches_changed": comparison.n_matches_changed,
            "n_detections_changed": comparison.n_detections_changed,
            "changed_by_threshold": [int(v) for v in comparison.changed_by_threshold]}
        out.append(format_mask_mode_comparison(result.protocol, comparison))
    return out


def _load_checked(args: argparse.Namespace, protocols: list) -> tuple:
    """Load both inputs; ``--strict`` refuses their warnings. Returns (gt, dt, warnings, inputs)."""
    gt, dt = _load_inputs(args, protocols)
    input_warnings = list(gt.warnings + dt.warnings)
    if args.strict and input_warnings:
        raise ConfigError("--strict: input warnings are errors:\n  " + "\n  ".join(input_warnings))
    inputs = {"gt": args.gt, "dt": args.dt, "images": gt.n_images, "gt_objects": len(gt),
              "detections": len(dt)}
    return gt, dt, input_warnings, inputs


def _write_output_and_warnings(args: argparse.Namespace, doc: dict, text: str) -> None:
    """Write ``--output``; print warnings and notes on stderr (unless -q)."""
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as exc:
            raise ConfigError(f"--output {args.output}: cannot write ({exc.strerror}); "
                              f"expected a writable file path") from None
    if not args.quiet:
        for w in doc["warnings"]:
            print(f"deteval: warning: {w}", file=sys.stderr)
        for note in doc.get("notes", []):
            print(f"deteval: note: {note}", file=sys.stderr)


def _confidence_rows(args: argparse.Namespace, results: list, doc: dict) -> list:
    """Per-class P/R/F1 at ``--confidence`` for each result, also added to the JSON document."""
    if args.confidence is None:
        return []
    from deteval.analysis import at_confidence
    from deteval.summary import none_if_nan as _none_if_nan
    out = []
    for result, entry in zip(results, doc["results"]):
        rows = at_confidence(result, args.confidence)
        thresholds = result.protocol.iou_thresholds
        entry["at_confidence"] = {
            "threshold": args.confidence, "iou_threshold": 0.5 if 0.5 in thresholds else thresholds[0],
            "per_class": [{k: (_none_if_nan(v) if k in ("precision", "recall", "f1") else v)
                           for k, v in row.items()} for row in rows]}
        out.append(rows)
    return out


def _write_matches(args: argparse.Namespace, result: EvalResult) -> None:
    import csv

    from deteval.analysis import matches
    from deteval.report import csv_safe
    if os.path.realpath(args.matches) in (os.path.realpath(args.gt), os.path.realpath(args.dt)):
        raise ConfigError(f"--matches {args.matches}: is an input; refusing to overwrite it")
    names = dict(zip(result.category_ids, result.category_names))
    try:
        with open(args.matches, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["detection", "image_id", "category_id", "category", "score", "outcome",
                             "gt_annotation_id"])
            for m in matches(result):
                writer.writerow([m["detection"], m["image_id"], m["category_id"],
                                 csv_safe(names[m["category_id"]]), repr(m["score"]), m["outcome"],
                                 "" if m["gt_annotation_id"] is None else m["gt_annotation_id"]])
    except OSError as exc:
        raise ConfigError(f"--matches {args.matches}: cannot write ({exc.strerror})") from None


def _over_max_dets(gt: Any, dt: Any, protocol: Protocol) -> int:
    """Detections beyond ``max(max_dets)`` in their (image, class) group under ``protocol``."""
    import numpy as np
    if protocol.max_dets is None or len(dt) == 0:
        return 0
    _, counts = np.unique(dt.image.astype(np.int64) * gt.n_classes + dt.category, return_counts=True)
    return int(np.maximum(counts - max(protocol.max_dets), 0).sum())


def _validate(args: argparse.Namespace) -> int:
    """``deteval validate``: load and check the inputs, print what was found, score nothing."""
    import numpy as np

    from deteval.errors import InputError
    from deteval.io import gt_format
    protocols = _protocols(args)
    gt = _load_gt(args)
    n_crowd, n_difficult, n_ignore = (int(gt.is_crowd.sum()), int(gt.is_difficult.sum()),
                                      int(gt.is_ignore.sum()))
    per_class = np.bincount(gt.category, minlength=gt.n_classes)
    empty_classes = [gt.category_name[k] for k in np.flatnonzero(per_class == 0)]
    report: dict[str, Any] = {
        "valid": True,
        "gt": {"source": args.gt, "format": gt_format(args.gt), "images": gt.n_images,
               "categories": gt.n_classes, "objects": len(gt), "crowd": n_crowd,
               "difficult": n_difficult, "ignore": n_ignore,
               "images_without_objects": int(gt.n_images - len(np.unique(gt.image))),
               "categories_without_objects": empty_classes},
        "dt": None,
    }
    warnings = list(gt.warnings)
    if args.dt:
        dt = _load_dt(args, gt, protocols)
        report["dt"] = {
            "source": args.dt, "detections": len(dt), "images": int(len(np.unique(dt.image))),
            "categories": int(len(np.unique(dt.category))),
            "score_min": float(dt.score.min()) if len(dt) else None,
            "score_max": float(dt.score.max()) if len(dt) else None}
        warnings += list(dt.warnings)
        for p in protocols:
            over = _over_max_dets(gt, dt, p)
            if over:
                warnings.append(f"{over} detections beyond max_dets={max(p.max_dets)} in their image and "
                                f"class would not be scored under {p.name} (as the protocol says)")
    warnings = list(dict.fromkeys(warnings))
    if args.strict and warnings:
        raise InputError("--strict: input warnings are errors:\n  " + "\n  ".join(warnings))
    report["warnings"] = warnings
    if args.format == "json":
        sys.stdout.write(json.dumps(report, indent=2, allow_nan=False) + "\n")
        return EXIT_OK
    g = report["gt"]
    lines = [f"ground truth: {args.gt} ({g['format']})",
             f"  {g['images']} images, {g['categories']} categories, {g['objects']} objects "
             f"({n_crowd} crowd, {n_difficult} difficult, {n_ignore} ignore)"]
    if g["images_without_objects"]:
        lines.append(f"  {g['images_without_objects']} images without objects")
    if empty_classes:
        lines.append(f"  {len(empty_classes)} categories without objects: {empty_classes[:10]}")
    d = report["dt"]
    if d is not None:
        scores = (f", scores {d['score_min']:g} .. {d['score_max']:g}" if d["detections"] else "")
        lines.append(f"detections: {args.dt}")
        lines.append(f"  {d['detections']} detections on {d['images']} of {g['images']} images, "
                     f"{d['categories']} categories{scores}")
    lines.append(f"warnings: {len(warnings)}")
    lines += [f"  - {w}" for w in warnings]
    lines.append("OK: the inputs can be scored" if d is not None else "OK: the ground truth can be scored")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    """``deteval compare``: several protocols side by side, optionally explained."""
    from deteval.evaluate import check_protocol
    from deteval.explain import MatchCache, compare, explain
    from deteval.report import compare_json, format_compare_csv, format_compare_markdown, format_compare_table
    _refuse_overwrite(args)
    protocols = _protocols(args)
    if len(protocols) < 2:
        print("deteval compare: error: expected at least two --protocol, found "
              f"{len(protocols)}; e.g. --protocol voc2007 --protocol coco", file=sys.stderr)
        return EXIT_USAGE
    for protocol in protocols:
        check_protocol(protocol)
    progress = _Progress(2 + (len(protocols) - 1 if args.explain else 0), args.quiet)
    try:
        gt, dt, input_warnings, inputs = _load_checked(args, protocols)
        progress.step("loaded")
        cache = MatchCache(gt, dt, workers=args.workers)
        comparison = compare(gt, dt, protocols, cache=cache, inputs=inputs)
        progress.step("compared")
        explanations = []
        if args.explain:
            for a, b in zip(protocols, protocols[1:], strict=False):
                explanations.append(explain(gt, dt, a, b, cache=cache))
                progress.step(f"{a.name} -> {b.name}")
    finally:
        progress.close()
    results = list(comparison.results)
    protocol_warnings = [w for r in results for w in r.warnings]
    if args.strict and protocol_warnings:
        raise ConfigError("--strict: warnings are errors:\n  " + "\n  ".join(protocol_warnings))
    doc = compare_json(results, inputs=inputs, warnings=input_warnings,
                       matching_groups=comparison.matching_groups, explanations=explanations)
    text = json.dumps(doc, indent=2, allow_nan=False)
    _write_output_and_warnings(args, doc, text)
    groups = comparison.matching_groups
    if args.format == "json":
        sys.stdout.write(text + "\n")
    elif args.format == "markdown":
        parts = [format_compare_markdown(results, matching_groups=groups)]
        parts += [e.to_markdown() for e in explanations]
        sys.stdout.write("\n".join(parts))
    elif args.format == "csv":
        sys.stdout.write(format_compare_csv(results))
        if explanations and not args.quiet:
            print("deteval: note: --explain is not part of the CSV; use --format json or table",
                  file=sys.stderr)
    else:
        parts = [format_compare_table(results, matching_groups=groups)]
        parts += [e.to_text() for e in explanations]
        sys.stdout.write("\n".join(parts))
    return EXIT_OK


def _list_protocols(args: argparse.Namespace) -> int:
    names = getattr(args, "names", None) or list(PRESETS)
    listed = {n: resolve_protocol(n) for n in names}
    if args.format == "json":
        sys.stdout.write(json.dumps({n: {**p.to_dict(), "protocol_hash": p.fingerprint()}
                                     for n, p in listed.items()}, indent=2) + "\n")
        return EXIT_OK
    if args.format == "yaml":
        from deteval.protocol import dump_protocol
        sys.stdout.write("\n".join(f"# {n} [{p.fingerprint()}]\n{dump_protocol(p)}" for n, p in listed.items()))
        return EXIT_OK
    for name, p in listed.items():
        print(f"{name} [{p.fingerprint()}]\n  {p.source}")
        fields = p.to_dict()
        for key in ("iou_type", "iou_thresholds", "iou_comparison", "matching", "box_convention",
                    "ap_method", "eleven_point_grid", "area_ranges", "max_dets", "difficult", "crowd",
                    "score_order", "gt_ignore_field", "gt_id_zero", "summary"):
            value = fields[key]
            if key == "iou_thresholds" and len(value) > 3:
                value = f"[{value[0]}, ..., {value[-1]}] ({len(value)} values, np.linspace)"
            print(f"    {key}: {value}")
        for key in _shown_sparse_fields(fields):
            print(f"    {key}: {fields[key]}")
    return EXIT_OK


def _shown_sparse_fields(fields: dict) -> list:
    """Sparse protocol fields away from their default (``to_dict`` holds only those); for report.py."""
    from deteval.protocol import FIELDS
    return [k for k, spec in FIELDS.items() if spec.is_sparse and k in fields]


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
