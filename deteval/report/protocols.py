"""Renderers of ``deteval validate`` (what the inputs hold) and ``deteval protocols``."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from deteval.protocol import Protocol, display_fields, dump_protocol

__all__ = [
    "format_validation",
    "format_protocols",
    "protocols_json",
    "format_protocols_yaml",
]


# --------------------------------------------------------------------------------------------
# deteval validate, deteval protocols
# --------------------------------------------------------------------------------------------


def format_validation(report: Mapping) -> str:
    """What ``deteval validate`` found (``Validation.to_dict()``), as text."""
    g, d, found = report["gt"], report["dt"], report["warnings"]
    lines = [
        f"ground truth: {g['source']} ({g['format']})",
        f"  {g['images']} images, {g['categories']} categories, {g['objects']} objects "
        f"({g['crowd']} crowd, {g['difficult']} difficult, {g['ignore']} ignore)",
    ]
    if g["images_without_objects"]:
        lines.append(f"  {g['images_without_objects']} images without objects")
    empty_classes = g["categories_without_objects"]
    if empty_classes:
        lines.append(f"  {len(empty_classes)} categories without objects: {empty_classes[:10]}")
    if d is not None:
        scores = f", scores {d['score_min']:g} .. {d['score_max']:g}" if d["detections"] else ""
        lines.append(f"detections: {d['source']}")
        lines.append(
            f"  {d['detections']} detections on {d['images']} of {g['images']} images, "
            f"{d['categories']} categories{scores}"
        )
    lines.append(f"warnings: {len(found)}")
    lines += [f"  - {w}" for w in found]
    lines.append("OK: the inputs can be scored" if d is not None else "OK: the ground truth can be scored")
    return "\n".join(lines) + "\n"


#: The fields ``deteval protocols`` lists, in this order.
def format_protocols(protocols: Mapping[str, Protocol]) -> str:
    """``deteval protocols``: each protocol's name, hash, source and fields."""
    lines = []
    for name, p in protocols.items():
        lines.append(f"{name} [{p.fingerprint()}]\n  {p.source}")
        fields = p.to_dict()
        for key in display_fields():
            # Sparse fields (group_of, the LVIS ones...) are in to_dict only away from their default.
            value = fields[key] if key in fields else getattr(p, key)
            if value is None:
                value = "null"
            elif isinstance(value, bool):  # as a YAML file writes it (class_agnostic)
                value = "true" if value else "false"
            elif key == "iou_thresholds" and len(value) > 3:
                how = (
                    "np.linspace"
                    if value == [float(t) for t in np.linspace(value[0], value[-1], len(value))]
                    else "listed"
                )
                value = f"[{value[0]}, ..., {value[-1]}] ({len(value)} values, {how})"
            lines.append(f"    {key}: {value}")
    return "".join(line + "\n" for line in lines)


def format_protocol_list(protocols: Mapping[str, Protocol]) -> str:
    """``deteval protocols --list``: one line a protocol (name, fingerprint, source), aligned."""
    width = max((len(n) for n in protocols), default=0)
    return "".join(f"{n:<{width}}  [{p.fingerprint()}]  {p.source}\n" for n, p in protocols.items())


def protocols_json(protocols: Mapping[str, Protocol]) -> dict:
    """``deteval protocols --format json``: name -> resolved fields and ``protocol_hash``."""
    return {n: {**p.to_dict(), "protocol_hash": p.fingerprint()} for n, p in protocols.items()}


def format_protocols_yaml(protocols: Mapping[str, Protocol]) -> str:
    """``deteval protocols --format yaml``: complete protocol files, each under a comment."""
    return "\n".join(f"# {n} [{p.fingerprint()}]\n{dump_protocol(p)}" for n, p in protocols.items())
