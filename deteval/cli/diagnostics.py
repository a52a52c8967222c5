"""``evaluate --matches`` and ``--per-image``: computed on request, written, and put in the JSON."""

from __future__ import annotations

import argparse

from deteval import api, report
from deteval._safe_read import ReadLog
from deteval.cli._common import _detections, _write
from deteval.errors import ConfigError


def _write_diagnostics(
    args: argparse.Namespace, inputs: api.Inputs, results: tuple, doc: dict, log: ReadLog
) -> None:
    """Write ``--matches`` (first protocol) and ``--per-image`` (every protocol); add them to ``doc``.

    ``doc``'s results get ``matches`` / ``per_image`` entries (the JSON of ``--format json`` and
    ``--output``) only when the option is given: ordinary runs compute neither.
    """
    if getattr(args, "per_image_iou", None) is not None and not getattr(args, "per_image", None):
        raise ConfigError(
            f"--per-image-iou {args.per_image_iou:g}: expected --per-image FILE.csv with it, found none"
        )
    if args.matches:
        explained = api.explained_matches(results[0], inputs.gt, _detections(inputs))
        doc["results"][0]["matches"] = explained.to_dict(results[0])
        _write(args.matches, report.format_explained_matches_csv(results[0], explained), "--matches", log)
    if getattr(args, "per_image", None):
        per_images = [
            api.per_image(
                result,
                inputs.gt,
                _detections(inputs),
                iou_threshold=args.per_image_iou,
                confidence=args.confidence,
            )
            for result in results
        ]
        for entry, p in zip(doc["results"], per_images, strict=True):
            entry["per_image"] = p.to_dict()
        _write(args.per_image, report.format_per_image_csv(results, per_images), "--per-image", log)
