"""``deteval analyze | rank | plot | report``: why the number is what it is, ranking AP, pictures."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from deteval import api, report
from deteval._safe_read import recording_reads
from deteval._version import __version__
from deteval.api.beyond import BeyondOptions, beyond_document, protocol_with_thresholds
from deteval.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    _default_protocol,
    _detections,
    _finish,
    _inputs_record,
    _load,
    _out,
    _print_warnings,
    _Progress,
    _protocols,
    _refuse_overwrite,
    _warnings_of,
    _write,
)
from deteval.cli.beyond import add_beyond, check_beyond
from deteval.cli.scoring import resample, score_detectors, score_stages
from deteval.diagnose import analyze
from deteval.errors import ConfigError, printable
from deteval.evaluate import match, score
from deteval.io.matrix import read_rank_inputs
from deteval.io.output import check_output
from deteval.protocol import Protocol
from deteval.ranking import rank_report


def _analyze(args: argparse.Namespace) -> int:
    """``deteval analyze``: TIDE errors, the decomposition and the confusion matrix."""
    _refuse_overwrite(args)
    selected = (args.errors, args.decompose, args.confusion)
    beyond = {"calibration": args.calibration, "lrp": args.lrp, "tp_iou": args.tp_iou, "mauc": args.mauc}
    wants_labels = args.label_errors is not None
    thresholds = _label_thresholds(args.label_thresholds)
    parts = selected if any(selected) or any(beyond.values()) or wants_labels else (True, True, True)
    with _warnings_of(args) as caught:
        with recording_reads() as log:
            protocol = api.resolve_protocol(args.protocol)
            inputs = _load(args, [protocol])
        _refuse_overwrite(args, log)
        found = analyze(
            inputs.gt,
            _detections(inputs),
            protocol,
            errors=parts[0],
            decompose=parts[1],
            confusion=parts[2],
            confidence=args.confidence,
            iou=args.iou,
            tide_mode=args.tide_mode,
            beyond=_beyond_options(args, beyond),
        )
        parts_doc = found.to_dict(arrays=True)
        if wants_labels:
            from deteval.label_errors import label_errors

            dt = _detections(inputs)
            result = api.evaluate_inputs(inputs, [protocol])[0]
            parts_doc["label_errors"] = label_errors(result, inputs.gt, dt, **thresholds).to_dict()
    doc = report.analysis_json(
        parts_doc, protocol=protocol, inputs=inputs.summary(), warnings=inputs.warnings
    )
    if args.bootstrap or args.against:
        doc.update(_beyond_intervals(args, inputs, protocol))
    text = report.dumps_analysis(doc)  # report.dumps byte for byte, faster on the curves
    if args.label_errors:
        label_doc = {
            "deteval_version": __version__,
            "inputs": inputs.summary(),
            "protocol": doc["protocol"]["name"],
            "label_errors": doc["label_errors"],
        }
        _write(args.label_errors, report.dumps(label_doc) + "\n", "--label-errors", log)
    _finish(args, text, caught, log)
    if args.format == "json":
        _out(text + "\n")
    elif args.format == "markdown":
        _out(report.format_analysis_markdown(doc))
    else:
        _out(report.format_analysis_table(doc))
    return EXIT_OK


def _beyond_intervals(args: argparse.Namespace, inputs: api.Inputs, protocol: Protocol) -> dict:
    """``--bootstrap N`` with ``--calibration`` / ``--lrp``: their intervals (JSON keys)."""
    if not (args.calibration or args.lrp):
        raise ConfigError("--bootstrap: deteval analyze resamples --calibration and --lrp; found neither")
    if args.against and not args.bootstrap:
        raise ConfigError("--against: the paired differences are bootstrap intervals; expected --bootstrap N")
    options = _beyond_options(args, {"calibration": args.calibration, "lrp": args.lrp}) or {}
    settings = BeyondOptions(
        calibration=args.calibration,
        lrp=args.lrp,
        iou=args.iou,
        lrp_tau=args.lrp_tau,
        calibration_features=options.get("calibration_features", ("confidence",)),
        calibration_bins=options.get("calibration_bins", 10),
    )
    scored = protocol_with_thresholds(protocol, settings)  # scored once, at every threshold needed
    dt = _detections(inputs)
    result = score(match(inputs.gt, dt, scored), inputs.gt, scored)
    against = None
    if args.against:
        other = _detections(_load(args, [protocol], dt=args.against))
        against = (score(match(inputs.gt, other, scored), inputs.gt, scored), other)
    found = beyond_document(
        result,
        inputs.gt,
        dt,
        settings,
        bootstrap=args.bootstrap,
        seed=args.seed,
        ci=args.ci,
        method=args.bootstrap_method,
        against=against,
        labels=(args.dt, args.against or ""),
    )
    return {k: found[k] for k in ("bootstrap", "calibration_ci", "lrp_ci", "paired") if k in found}


def _label_thresholds(text: str) -> dict:
    """``--label-thresholds confidence=0.6,duplicate_iou=0.95`` -> keyword arguments of label_errors."""
    from deteval.label_errors import DEFAULT_THRESHOLDS

    out: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in DEFAULT_THRESHOLDS:
            raise ConfigError(
                f"--label-thresholds: {item!r}: expected KEY=VALUE with KEY one of "
                f"{', '.join(DEFAULT_THRESHOLDS)}"
            )
        try:
            out[key] = float(value)
        except ValueError:
            raise ConfigError(
                f"--label-thresholds: {key}: expected a number, found {value.strip()!r}"
            ) from None
    return out


def _beyond_options(args: argparse.Namespace, parts: dict) -> dict | None:
    """The keyword arguments of :func:`deteval.beyond.beyond_ap`, or None when no part is asked for."""
    if not any(parts.values()):
        return None
    features = tuple(f.strip() for f in args.calibration_features.split(","))
    try:
        counts = [int(b) for b in args.calibration_bins.split(",")]
    except ValueError:
        raise ConfigError(
            f"--calibration-bins: expected a positive integer or a comma-separated list of them, "
            f"found {args.calibration_bins!r}"
        ) from None
    return {
        **parts,
        "calibration_features": features,
        "calibration_bins": counts[0] if len(counts) == 1 else tuple(counts),
        "lrp_tau": args.lrp_tau,
    }


def _rank(args: argparse.Namespace) -> int:
    """``deteval rank``: ranking metrics of a score matrix against its labels."""
    given = {"--labels": args.labels, "--scores": args.scores}
    if args.output:
        check_output(args.output, given, option="--output")
    labels, scores, names = read_rank_inputs(args.labels, args.scores, id_column=args.id_column)
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
            label_names=names,
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


def _labelled(names: list[str], results: list) -> dict:
    """Label -> EvalResult for the figures: the detector, the protocol, or both when several."""
    n_protocols = len(results[0])
    out = {}
    for name, per_protocol in zip(names, results):
        for result in per_protocol:
            if len(names) == 1:
                label = result.protocol.name if n_protocols > 1 else name
            else:
                label = name if n_protocols == 1 else f"{name} / {result.protocol.name}"
            out[label] = result
    return out


def _default_image_folder(gt: str) -> str:
    """``--images`` without a folder: the ground truth file's folder; a VOC root's JPEGImages."""
    if os.path.isfile(gt):
        return os.path.dirname(os.path.abspath(gt))
    voc = os.path.join(gt, "JPEGImages")
    return voc if os.path.isdir(voc) else gt


def _gallery_extras(
    args: argparse.Namespace,
    names: list[str],
    loaded: list[api.Inputs],
    results: list,
    progress: _Progress,
) -> dict:
    """``--images`` / ``--gallery`` / ``--label-errors``: the report's error browser and candidates.

    One gallery and one list of candidates per detector, under the first protocol; with several
    detectors the galleries share ``--gallery-max-bytes`` evenly (each keeps to its share).
    """
    out: dict[str, Any] = {}
    several = len(names) > 1
    if args.images is not None or args.gallery:
        from deteval.plot.gallery import MIN_BYTES, build_gallery

        folder = None
        if args.images is not None:
            folder = args.images or _default_image_folder(args.gt)
        if args.gallery_max_bytes <= 0 or args.gallery_max_images < 1:
            raise ConfigError(
                "--gallery-max-bytes / --gallery-max-images: expected positive numbers, found "
                f"{args.gallery_max_bytes:g} / {args.gallery_max_images}"
            )
        share = int(args.gallery_max_bytes * 1e6 / len(names))
        if several and share < MIN_BYTES:
            raise ConfigError(
                f"--gallery-max-bytes {args.gallery_max_bytes:g}: shared by {len(names)} detectors, "
                f"{share} bytes each; expected at least {MIN_BYTES} each "
                f"(--gallery-max-bytes {MIN_BYTES * len(names) / 1e6:g} or more)"
            )
        galleries = {}
        for name, inputs, per_protocol in zip(names, loaded, results):
            result = per_protocol[0]
            progress.stage(f"error browser: {name}" if several else "error browser")
            galleries[name] = build_gallery(
                result,
                inputs.gt,
                _detections(inputs),
                images=folder,
                label=f"{name} / {result.protocol.name}" if several else result.protocol.name,
                max_images=args.gallery_max_images,
                max_bytes=share,
                progress=progress.advance,
            )
        out["gallery"] = galleries
    if args.label_errors:
        from deteval.label_errors import label_errors

        found = {}
        for name, inputs, per_protocol in zip(names, loaded, results):
            progress.stage(f"label errors: {name}" if several else "label errors")
            found[name] = label_errors(per_protocol[0], inputs.gt, _detections(inputs))
        out["label_errors"] = found
    return out


def _report_stages(args: argparse.Namespace, n_detectors: int, n_protocols: int) -> int:
    """Stages of ``deteval report``'s progress bar (:func:`_pictures`)."""
    stages = score_stages(n_detectors, n_protocols) + 1  # + drawing the figures
    # --analyze and --explain: each detector's analysis and walks
    stages += n_detectors * (bool(args.analyze) + (n_protocols - 1 if args.explain else 0)) + bool(
        args.bootstrap
    )
    stages += bool(getattr(args, "calibration", False) or getattr(args, "lrp", False))
    if args.command == "report":
        stages += n_detectors * ((args.images is not None or args.gallery) + bool(args.label_errors))
    return stages


def _report_analysis(args: argparse.Namespace, inputs: api.Inputs, protocol: Any, note: bool = True) -> Any:
    """``--analyze`` of plot / report: one detector under the first protocol (``note``: say what is left out).

    No decomposition (said on stderr) under a protocol it does not support (ultralytics'
    trapezoid AP, ...): TIDE errors and the confusion matrix still are.
    """
    from deteval.decomposition import unsupported_reason

    reason = unsupported_reason(protocol)
    if reason is not None and note and not args.quiet:
        print(
            printable(
                f"deteval {args.command}: note: --analyze: no AP decomposition under the first protocol "
                f"({reason}); TIDE errors and the confusion matrix are shown. Put a protocol it "
                "supports first (e.g. --protocol coco) for it"
            ),
            file=sys.stderr,
        )
    return analyze(inputs.gt, _detections(inputs), protocol, decompose=reason is None)


def _per_detector(
    args: argparse.Namespace, names: list[str], loaded: list[api.Inputs], protocols: list, progress: _Progress
) -> tuple[Any, Any]:
    """``--analyze`` and ``--explain`` of plot / report: each detector's analysis and walks.

    One detector: its analysis and list of walks, as before; several: mappings name -> each.
    """
    several = len(names) > 1
    analyses: dict[str, Any] = {}
    walks: dict[str, list] = {}
    for name, inputs in zip(names, loaded):
        who = f"{name}: " if several else ""
        if args.analyze:
            progress.stage(f"{who}analysing")
            analyses[name] = _report_analysis(args, inputs, protocols[0], note=not analyses)
        walks[name] = []
        for a, b in zip(protocols, protocols[1:]) if args.explain else ():
            progress.stage(f"{who}explaining {a.name} -> {b.name}")
            walks[name].append(api.explain(inputs.gt, _detections(inputs), a, b))
    if not several:
        return analyses.get(names[0]), walks[names[0]]
    return analyses or None, walks


def _pictures(args: argparse.Namespace) -> int:
    """``deteval plot`` / ``deteval report``: figures of the run, or one self-contained HTML file."""
    from deteval import plot  # the optional extra, only when asked (a clear error without matplotlib)

    for option in ("confidence", "matches", "per_image", "compare_mask_modes"):
        if getattr(args, option, None):
            raise ConfigError(
                f"--{option.replace('_', '-')}: not part of `deteval {args.command}`; use deteval evaluate"
            )
    _default_protocol(args)
    with recording_reads() as log:
        protocols = _protocols(args)
    wants_beyond = check_beyond(args)  # --calibration / --lrp (cli/beyond.py)
    if args.explain and len(protocols) < 2:  # the walk goes from one protocol to the next
        print(
            f"deteval {args.command}: error: --explain walks from each protocol to the next: expected "
            f"at least two --protocol, found 1; e.g. --protocol voc2007 --protocol coco",
            file=sys.stderr,
        )
        return EXIT_USAGE
    dts = {f"--dt #{i + 1}": d for i, d in enumerate(args.dt)}
    check_output(args.out, {"--gt": args.gt, **dts}, option="--out")
    # on a terminal, a stage bar on stderr (off with -q): loading, matching and scoring each
    # detector, analysing, explaining, resampling, error browsers, label errors, figures
    progress = _Progress(_report_stages(args, len(args.dt), len(protocols)), args.quiet)
    try:
        with _warnings_of(args) as caught:
            names, loaded, results = score_detectors(args, protocols, log, progress)
            check_output(args.out, log, option="--out")
            first = loaded[0]
            analysis, explanations = _per_detector(args, names, loaded, protocols, progress)
        with _warnings_of(args) as boot_caught:  # the bootstrap's BootstrapBiasWarning, printed below
            boot = None
            if args.bootstrap:
                progress.stage(f"resampling ({args.bootstrap} resamples)")
                boot = resample(args, first.gt, names, results, progress.advance)[3][0]
        caught.extend(boot_caught)
        inputs_doc = {"gt": args.gt, "dt": list(args.dt), "detectors": names}
        doc = report.detectors_json(names, results, inputs=_inputs_record(args, inputs_doc))
        if wants_beyond:
            progress.stage("calibration and LRP")
        with _warnings_of(args) as beyond_caught:
            found = add_beyond(args, doc, first.gt, names, [_detections(i) for i in loaded], results)
        caught.extend(beyond_caught)
        figures = _labelled(names, results)
        extras_report = {}
        if args.command == "report":
            extras_report = _gallery_extras(args, names, loaded, results, progress)
        extras: dict[str, Any] = {
            "analysis": analysis,
            "explanation": explanations if args.explain else None,
            "bootstrap": boot,
            "beyond": found if wants_beyond else None,
        }
        progress.stage("drawing the figures")
        if args.command == "plot":
            written = plot.plot_all(
                figures, out_dir=args.out, formats=tuple(args.plot_format or ("png", "svg")), **extras
            )
            summary = f"wrote {len(written)} files to {args.out}"
        else:
            path = plot.write_report(
                figures,
                out=args.out,
                title=args.title,
                progress=progress.advance if progress.bar is not None else None,
                **extras,
                **extras_report,
            )
            summary = f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)"
        progress.finish()
    finally:
        progress.close()
    if args.output:
        _finish(args, report.dumps(doc), caught, log)
    else:
        _print_warnings(args, caught)
    _out(summary + "\n")
    return EXIT_OK
