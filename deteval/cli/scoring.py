"""``deteval evaluate | compare | validate | protocols``, and several detectors side by side."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from deteval import api, report
from deteval._safe_read import ReadLog, recording_reads
from deteval.api.openimages import refuse_label_rules
from deteval.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    _default_protocol,
    _detections,
    _finish,
    _input_options,
    _inputs_record,
    _load,
    _note_workers,
    _out,
    _Progress,
    _protocols,
    _refuse_overwrite,
    _strict,
    _warnings_of,
)
from deteval.cli.beyond import add_beyond, beyond_blocks, check_beyond
from deteval.cli.diagnostics import _write_diagnostics
from deteval.data import GroundTruth
from deteval.errors import (
    ConfigError,
    DetevalWarning,
    InputError,
    InputWarning,
)
from deteval.evaluate import EvalResult, check_protocol
from deteval.pooling import ground_truth_for
from deteval.protocol import PRESETS, Protocol


def _evaluate(args: argparse.Namespace) -> int:
    _note_workers(args)
    _refuse_overwrite(args)
    _default_protocol(args)
    with recording_reads() as log:
        protocols = _protocols(args)
    if len(args.dt) > 1 or args.bootstrap or getattr(args, "scheduler", None):
        _refuse_diagnostics(args)
    if args.bootstrap or getattr(args, "scheduler", None):
        refuse_label_rules(protocols, "--bootstrap" if args.bootstrap else "--scheduler")
    wants_beyond = check_beyond(args)  # --calibration / --lrp (cli/beyond.py)
    if len(args.dt) > 1 or args.bootstrap:
        return _detectors(args, protocols, log)
    if getattr(args, "scheduler", None):
        return _evaluate_shards(args, protocols, log)
    # loading, matching + scoring each protocol, then the results (extras, --matches, JSON)
    progress = _Progress(2 + 2 * len(protocols), args.quiet)
    try:
        with _warnings_of(args) as caught:
            progress.stage("loading")
            with recording_reads(log):
                inputs = _load(args, protocols)
            _refuse_overwrite(args, log)
            try:
                results = api.evaluate_inputs(
                    inputs,
                    protocols,
                    workers=args.workers,
                    progress=progress.stage,
                    # parts of the matching only to move a bar: without one, a single pass
                    advance=progress.advance if progress.bar is not None else None,
                )
            except InputWarning as exc:
                raise _strict(exc, "") from None
        progress.stage("writing the results")
        doc = report.to_json(results, inputs=_inputs_record(args, inputs.summary()), warnings=inputs.warnings)
        confidence_rows, mask_reports = _evaluate_extras(args, inputs, results, doc)
        with recording_reads(log):
            diagnostics = _evaluate_diagnostics(args, inputs, results, doc)
        _write_diagnostics(args, inputs, results, doc, log)  # --matches, --per-image
        found = (
            add_beyond(args, doc, inputs.gt, args.dt, [_detections(inputs)], [results])
            if wants_beyond
            else []
        )
        text = report.dumps(doc)
        progress.finish()
    finally:
        progress.close()
    _finish(args, text, caught, log)
    blocks = [
        report.format_confidence_table(r, rows, args.confidence) for r, rows in zip(results, confidence_rows)
    ]
    _print_results(args, text, results, [*blocks, *mask_reports, *diagnostics])
    if args.format in ("table", "markdown"):  # --calibration / --lrp, after the other blocks
        _out("".join(beyond_blocks(found, args.format)))
    return EXIT_OK


def _refuse_diagnostics(args: argparse.Namespace) -> None:
    """``--per-class-metrics``, ``--slice``: one detector, no --bootstrap, no --scheduler."""
    used = [
        name
        for name, value in (
            ("--per-class-metrics", args.per_class_metrics),
            ("--slice", args.slice),
            ("--image-attributes", args.image_attributes),
        )
        if value
    ]
    if used:
        raise ConfigError(
            f"{', '.join(used)}: score one detector without --bootstrap and --scheduler; found "
            f"{len(args.dt)} --dt{', --bootstrap' if args.bootstrap else ''}"
            f"{', --scheduler' if getattr(args, 'scheduler', None) else ''}"
        )


def _evaluate_diagnostics(args: argparse.Namespace, inputs: api.Inputs, results: tuple, doc: dict) -> list:
    """``--per-class-metrics`` and ``--slice`` text blocks; slices also placed in ``doc``."""
    blocks = []
    if args.per_class_metrics:
        blocks += [report.format_per_class_metrics(r) for r in results]
    if args.image_attributes and not args.slice:
        raise ConfigError("--image-attributes: expected --slice KEY to slice by them, found no --slice")
    if args.slice:
        from deteval.slices import parse_slice, slice_results

        specs = [parse_slice(s) for s in args.slice]
        attributes = api.image_attributes(args.gt, args.image_attributes, slices=specs)
        for result, entry in zip(results, doc["results"]):
            slices = slice_results(
                inputs.gt, _detections(inputs), result.protocol, specs, attributes=attributes
            )
            entry["slices"] = report.slices_json(slices)
            blocks.append(report.format_slices_table(result, slices))
    return blocks


def _evaluate_shards(args: argparse.Namespace, protocols: list[Protocol], log: ReadLog) -> int:
    """``evaluate --scheduler dask[://ADDRESS]``: shard files matched in Dask tasks, scored once."""
    if not (args.scheduler == "dask" or args.scheduler.startswith("dask://")):
        raise ConfigError(f"--scheduler: expected dask or dask://ADDRESS, found {args.scheduler!r}")
    from deteval.integrations.dask import evaluate_shards  # the dask extra, only when asked

    with _warnings_of(args) as caught:
        results = tuple(evaluate_shards(args.gt, args.dt[0], p, scheduler=args.scheduler) for p in protocols)
    doc = report.to_json(results, inputs=_inputs_record(args, results[0].inputs))
    text = report.dumps(doc)
    _finish(args, text, caught, log)
    _print_results(args, text, results)
    return EXIT_OK


def _print_results(args: argparse.Namespace, text: str, results: tuple, blocks: Sequence[str] = ()) -> None:
    """Print ``evaluate``'s results in ``--format`` (``blocks``: extra text after the table)."""
    per_class = not args.no_per_class
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        _out(report.format_markdown(results, per_class=per_class))
    elif args.format == "csv":
        _out(report.format_csv(results))
    else:
        _out(report.format_table(results, per_class=per_class))
        for block in blocks:
            _out(block)


def _evaluate_extras(
    args: argparse.Namespace, inputs: api.Inputs, results: tuple, doc: dict
) -> tuple[list, list]:
    """``--confidence`` rows and ``--compare-mask-modes`` reports, each also placed in ``doc``."""
    confidence_rows = []
    if args.confidence is not None:
        for result, entry in zip(results, doc["results"]):
            confidence_rows.append(api.at_confidence(result, args.confidence))
            entry["at_confidence"] = report.confidence_json(result, confidence_rows[-1], args.confidence)
    mask_reports = []
    if args.compare_mask_modes:
        for result, entry in zip(results, doc["results"]):
            if result.protocol.iou_type != "segm":
                raise ConfigError(
                    f"--compare-mask-modes: protocol {result.protocol.name!r} scores boxes; expected "
                    f"--iou-type segm"
                )
            comparison = api.compare_mask_modes(inputs.gt, _detections(inputs), result.protocol)
            entry["mask_mode_comparison"] = report.mask_mode_json(comparison)
            mask_reports.append(report.format_mask_mode_comparison(result.protocol, comparison))
    return confidence_rows, mask_reports


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
    _default_protocol(args)
    with recording_reads() as log:
        protocols = _protocols(args)
    wants_beyond = check_beyond(args)  # --calibration / --lrp (cli/beyond.py)
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
            detections = _detections(inputs)
            cache = api.MatchCache(inputs.gt, detections, workers=args.workers)
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
        inputs=_inputs_record(args, inputs.summary()),
        warnings=inputs.warnings,
        matching_groups=comparison.matching_groups,
        explanations=explanations,
    )
    with _warnings_of(args) as beyond_caught:  # --calibration / --lrp (cli/beyond.py)
        found = add_beyond(args, doc, inputs.gt, args.dt, [detections], [results]) if wants_beyond else []
    caught.extend(beyond_caught)
    text = report.dumps(doc)
    _finish(args, text, caught, log)
    groups = comparison.matching_groups
    per_class = not args.no_per_class
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        parts = [report.format_compare_markdown(results, matching_groups=groups, per_class=per_class)]
        parts += [report.format_explanation_markdown(e) for e in explanations]
        _out("\n".join(parts) + "".join(beyond_blocks(found, "markdown")))
    elif args.format == "csv":
        _out(report.format_compare_csv(results, per_class=per_class))
        if explanations and not args.quiet:
            print(
                "deteval: note: --explain is not part of the CSV; use --format json or table", file=sys.stderr
            )
    else:
        parts = [report.format_compare_table(results, matching_groups=groups, per_class=per_class)]
        parts += [report.format_explanation(e) for e in explanations]
        _out("\n".join(parts) + "".join(beyond_blocks(found)))
    return EXIT_OK


def _list_protocols(args: argparse.Namespace) -> int:
    listed = {n: api.resolve_protocol(n) for n in (args.names or list(PRESETS))}
    if args.list:
        if args.format != "table":
            raise ConfigError("--list: a table of names; --format json and yaml list every field")
        _out(report.format_protocol_list(listed))
    elif args.format == "json":
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


def score_detectors(
    args: argparse.Namespace, protocols: list[Protocol], log: ReadLog, progress: _Progress | None = None
) -> tuple[list[str], list[api.Inputs], list[tuple[EvalResult, ...]]]:
    """Load every ``--dt`` (recording what is read) and score each under every protocol.

    Call inside :func:`_warnings_of`. Returns the detector names, the loaded inputs and, per
    detector, its results in protocol order. ``progress``: a stage bar that shows each
    detector's loading, matching and scoring (:func:`score_stages` of them).
    """
    for protocol in protocols:
        check_protocol(protocol)
    names = _detector_names(args)
    several = len(names) > 1

    def stage(name: str, label: str) -> None:
        if progress is not None:
            progress.stage(f"{name}: {label}" if several else label)

    with recording_reads(log):
        loaded = []
        for name, dt in zip(names, args.dt):
            stage(name, "loading")
            loaded.append(_load(args, protocols, dt))
    _refuse_overwrite(args, log)
    try:
        results = [
            api.evaluate_inputs(
                inputs,
                protocols,
                workers=args.workers,
                progress=None if progress is None else functools.partial(stage, name),
                advance=None if progress is None or progress.bar is None else progress.advance,
            )
            for name, inputs in zip(names, loaded)
        ]
    except InputWarning as exc:
        raise _strict(exc, "") from None
    return names, loaded, results


def score_stages(n_detectors: int, n_protocols: int) -> int:
    """Stages :func:`score_detectors` shows: per detector, loading, then matching and scoring per protocol."""
    return n_detectors * (1 + 2 * n_protocols)


def resample(
    args: argparse.Namespace,
    gt: GroundTruth,
    names: list[str],
    results: list[tuple[EvalResult, ...]],
    advance: Callable[[int, int], None] | None = None,
) -> tuple[list[list[dict]], list[dict], dict, list[Any], list[dict]]:
    """``--bootstrap``: intervals, paired comparisons, settings, bootstrap values, per-class comparisons.

    Per detector and protocol the intervals; the paired comparisons with the first detector; the
    settings; the bootstrap values (one per protocol, for the report); and the per-class paired
    comparisons (``ComparisonResult.class_comparisons`` of the same resamples, protocol by
    protocol, as ``to_dict()`` writes them; empty with one detector). ``advance(done, total)``:
    the re-accumulations done, for a stage bar's running stage (instead of the resampling's own
    bar).
    """
    from deteval.stats import (
        bootstrap,
        bootstrap_rows,
        compare_detectors,
        metrics_bias_dict,
        metrics_ci_dict,
        per_class_bias_list,
        per_class_ci_list,
    )

    n_protocols = len(results[0])
    intervals: list[list[dict]] = [[{} for _ in range(n_protocols)] for _ in names]
    comparisons: list[dict] = []
    class_comparisons: list[dict] = []
    settings: dict = {}
    values: list[Any] = []
    method = args.bootstrap_method
    rows = bootstrap_rows(gt.n_images, n=args.bootstrap, method=method)
    total = rows * len(names) * n_protocols
    bar = _ResampleBar(total, args.quiet) if advance is None else _Counted(total, advance)
    try:
        for p in range(n_protocols):
            protocol = results[0][p].protocol
            options = {
                "n": args.bootstrap,
                "seed": args.seed,
                "ci": args.ci,
                "method": method,
                # auto: one process (a forked bootstrap pays only with many resamples of
                # large tables; --workers N asks for it)
                "workers": 1 if args.workers == "auto" else args.workers,
            }
            scored_gt = ground_truth_for(gt, protocol)  # class_agnostic: the tables' one pooled class
            bar.describe(f"resampling {protocol.name}")
            if len(names) > 1:
                tables = {n: r[p].table for n, r in zip(names, results)}
                found = compare_detectors(scored_gt, tables, protocol, progress=bar.update, **options)
                comparisons += [{**c.to_dict(), "verdict": c.verdict} for c in found.comparisons]
                class_comparisons += [c.to_dict() for c in found.class_comparisons]
                boot = found.bootstrap
                values.append(found)
            else:
                boot = bootstrap(scored_gt, {names[0]: results[0][p]}, progress=bar.update, **options)
                values.append(boot)
            settings = boot.settings.to_dict()
            for d, name in enumerate(names):
                detector = boot.get(name, protocol.name)
                intervals[d][p] = {
                    "metrics_ci": metrics_ci_dict(detector),
                    "per_class_ci": per_class_ci_list(detector),
                    "metrics_bias": metrics_bias_dict(detector),
                    "per_class_bias": per_class_bias_list(detector),
                }
    finally:
        bar.close()
    return intervals, comparisons, settings, values, class_comparisons


class _ResampleBar:
    """The resampling's progress on stderr (tqdm, one step per re-accumulation).

    Off with -q or when stderr is not a terminal, as the stage bar (``_Progress``).
    """

    def __init__(self, total: int, quiet: bool):
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm  # lazy on purpose: only for a progress bar on a terminal

            self.bar = tqdm(total=total, file=sys.stderr, leave=False, unit="resample")

    def describe(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_description(label)

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class _Counted:
    """The resampling's steps counted for a stage bar's ``advance(done, total)`` (no bar of its own)."""

    def __init__(self, total: int, advance: Callable[[int, int], None]):
        self.total, self.done, self.advance = total, 0, advance

    def describe(self, label: str) -> None:
        pass  # the stage bar names the stage

    def update(self, n: int) -> None:
        self.done += n
        self.advance(self.done, self.total)

    def close(self) -> None:
        pass


def _detectors(args: argparse.Namespace, protocols: list[Protocol], log: ReadLog) -> int:
    """Several detectors (and/or --bootstrap): one table, differences to the first, intervals."""
    for option in ("confidence", "matches", "per_image", "compare_mask_modes", "explain"):
        if getattr(args, option, None):
            raise ConfigError(
                f"--{option.replace('_', '-')}: not available with several --dt or "
                f"--bootstrap; run it on one detector"
            )
    with _warnings_of(args) as caught:
        names, loaded, results = score_detectors(args, protocols, log)
    gt = loaded[0].gt
    intervals: list | None = None
    comparisons: list[dict] = []
    class_comparisons: list[dict] = []
    settings: dict | None = None
    boot_warnings: list[str] = []
    if args.bootstrap:
        with _warnings_of(args) as boot_caught:  # BootstrapBiasWarning: in the document and on stderr
            intervals, comparisons, settings, _, class_comparisons = resample(args, gt, names, results)
        caught.extend(boot_caught)
        boot_warnings = [str(w.message) for w in boot_caught if issubclass(w.category, DetevalWarning)]
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
    warnings_seen += boot_warnings
    doc = report.detectors_json(
        names,
        results,
        inputs=_inputs_record(args, inputs_doc),
        warnings=warnings_seen,
        intervals=intervals,
        comparisons=comparisons,
        class_comparisons=class_comparisons,
        bootstrap=settings,
    )
    with _warnings_of(args) as beyond_caught:  # --calibration / --lrp (cli/beyond.py)
        found = add_beyond(args, doc, gt, names, [_detections(i) for i in loaded], results)
    caught.extend(beyond_caught)
    text = report.dumps(doc)
    _finish(args, text, caught, log)
    per_class = not args.no_per_class
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        _out(
            "".join(
                [
                    report.format_detectors_markdown(doc, per_class=per_class),
                    *beyond_blocks(found, "markdown"),
                ]
            )
        )
    elif args.format == "csv":
        _out(report.format_detectors_csv(doc))
    else:
        _out("".join([report.format_detectors_table(doc, per_class=per_class), *beyond_blocks(found)]))
    return EXIT_OK
