"""``deteval analyze | rank | plot | report``: why the number is what it is, ranking AP, pictures."""

from __future__ import annotations

import argparse
import sys

from deteval import api, report
from deteval._version import __version__
from deteval.cli._common import (
    EXIT_OK,
    _finish,
    _load,
    _out,
    _refuse_overwrite,
    _warnings_of,
    _write,
)
from deteval.diagnose import analyze
from deteval.errors import (
    printable,
)
from deteval.io.matrix import read_labels_and_scores
from deteval.io.output import check_output, recording_reads
from deteval.ranking import rank_report


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
