"""Protocols for the front door: names, YAML files, values; ``--set`` overrides; the default.

:func:`resolve_protocols` resolves preset names, YAML paths and :class:`~deteval.protocol.Protocol`
values and applies the same ``FIELD=VALUE`` overrides (:func:`parse_overrides`) to all;
:func:`protocol_choice` says which protocol an input is scored under when none is given, and why
(:func:`default_protocol`: the same, with a note only where it is not ``coco``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from deteval.data import GroundTruth
from deteval.errors import ConfigError
from deteval.io import gt_format
from deteval.protocol import Protocol, apply_overrides, parse_yaml_value, resolve_protocol


def parse_overrides(items: Sequence[str]) -> dict:
    """``FIELD=VALUE`` strings (``--set``) -> {field: value}, each VALUE in YAML syntax.

    Examples
    --------
    >>> parse_overrides(["iou_thresholds=[0.3]", "box_convention=continuous"])
    {'iou_thresholds': [0.3], 'box_convention': 'continuous'}
    """
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected FIELD=VALUE, e.g. --set iou_thresholds=[0.3]")
        key, _, raw = item.partition("=")
        out[key.strip()] = parse_yaml_value(raw, where="--set", key=key.strip())
    return out


def resolve_protocols(
    protocols: Sequence[str | Protocol] | None,
    *,
    overrides: Sequence[str] = (),
    iou_type: str | None = None,
    mask_iou: str | None = None,
) -> list[Protocol]:
    """Resolve each protocol (default ``["coco"]``) and apply the same overrides to all.

    Parameters
    ----------
    protocols : sequence of str or Protocol, or None
    overrides : sequence of str
        ``FIELD=VALUE`` (see :func:`parse_overrides`).
    iou_type, mask_iou : str, optional
        Shorthands for ``iou_type=...`` / ``mask_iou=...``.

    Returns
    -------
    list of Protocol
    """
    fields = parse_overrides(overrides)
    if iou_type:
        fields["iou_type"] = iou_type
    if mask_iou:
        fields["mask_iou"] = mask_iou
    resolved = [resolve_protocol(p) for p in (protocols or ["coco"])]
    if fields:
        resolved = [apply_overrides(p, fields, where="--set") for p in resolved]
    return resolved


def default_protocol(gt: Any) -> tuple[str, str]:
    """The protocol to score ``gt`` under when none is given, and a note when it is not ``coco``.

    :func:`protocol_choice` with its note kept only for a VOC root (the API's warning): COCO
    and YOLO ground truth are scored under ``coco``, the documented default, without a warning.

    Parameters
    ----------
    gt : str, os.PathLike, dict or GroundTruth

    Returns
    -------
    (name, note) : (str, str)
        ``note`` is "" when nothing needs saying.

    Raises
    ------
    ConfigError
        A VOC root without a year in its path.

    Examples
    --------
    >>> default_protocol({"images": [], "annotations": [], "categories": []})
    ('coco', '')
    """
    name, note = protocol_choice(gt)
    source = gt.source if isinstance(gt, GroundTruth) else gt
    is_voc = isinstance(source, (str, os.PathLike)) and os.path.isdir(source) and gt_format(source) == "voc"
    return name, note if is_voc else ""


def protocol_choice(gt: Any) -> tuple[str, str]:
    """The protocol to score ``gt`` under when none is given, and one sentence saying why.

    COCO and YOLO ground truth: ``coco`` (the default; for a YOLO dataset the note names
    ``ultralytics``, Ultralytics' own numbers). Rotated boxes: a DOTA root ``dota``, an
    Ultralytics OBB dataset ``ultralytics-obb`` (their tools' own rules). A VOC root: the protocol of its year, read from
    its path as py-faster-rcnn does (``use_07_metric = year < 2010``): ``VOC2007`` -> ``voc2007``
    (11-point), ``VOC2010``..``VOC2012`` -> ``voc2010`` (all-point). A VOC root whose path names
    no year is refused: the three candidates differ by several points and none is a safe guess.
    The CLI prints the note for every input kind (not with -q) and records it in the JSON
    ``inputs`` as ``default_protocol``.

    Parameters
    ----------
    gt : str, os.PathLike, dict or GroundTruth

    Returns
    -------
    (name, note) : (str, str)

    Raises
    ------
    ConfigError
        A VOC root without a year in its path.

    Examples
    --------
    >>> protocol_choice({"images": [], "annotations": [], "categories": []})[1]
    'COCO ground truth and no protocol given: scored under coco (the default: pycocotools COCOeval, two plain bugs fixed)'
    """
    source = gt.source if isinstance(gt, GroundTruth) else gt
    if not isinstance(source, (str, os.PathLike)):
        return "coco", "COCO ground truth and no protocol given: scored under coco " + _COCO_WHY
    path = os.fspath(source)
    kind = gt_format(source)
    if kind == "dota":  # rotated boxes: the devkit's own rules, not the envelopes under coco
        return "dota", (
            f"--gt {path}: a DOTA root and no --protocol: scored under dota (the DOTA devkit's "
            f"dota_evaluation_task1); --protocol coco-rotated gives COCO-style AP over rotated IoU"
        )
    if kind == "yolo" and _is_yolo_obb(source):
        return "ultralytics-obb", (
            f"--gt {path}: an Ultralytics OBB dataset and no --protocol: scored under "
            f"ultralytics-obb (Ultralytics' OBB validation); --protocol dota or coco-rotated score "
            f"exact polygon IoU"
        )
    if kind == "yolo":
        return "coco", (
            f"--gt {path}: a YOLO dataset and no --protocol: scored under coco (the default; "
            f"--protocol ultralytics gives Ultralytics' own numbers)"
        )
    if kind == "coco":
        return "coco", f"--gt {path}: COCO JSON ground truth and no --protocol: scored under coco {_COCO_WHY}"
    from deteval.io.voc import voc_year

    year = voc_year(source)
    if year is None:
        raise ConfigError(
            f"--gt {path}: a VOC root and no --protocol; expected one of "
            f"--protocol voc2007 (VOC2007 test: the devkit's 11-point AP), voc2010 "
            f"(VOC2010-2012: all-point AP) or coco (the folder's path names no VOC<year> "
            f"to choose by)"
        )
    name = "voc2007" if year < 2010 else "voc2010"
    return name, (
        f"--gt {path}: a VOC{year} root and no --protocol: scored under {name} "
        f"(the devkit's metric for {year}: {'11-point' if year < 2010 else 'all-point'} AP); "
        f"pass --protocol to choose another"
    )


_COCO_WHY = "(the default: pycocotools COCOeval, two plain bugs fixed)"


def _is_yolo_obb(source: str | os.PathLike[str]) -> bool:
    """:func:`deteval.io.yolo_obb.is_yolo_obb`, its reader imported for a YOLO dataset only."""
    from deteval.io.yolo_obb import is_yolo_obb

    return is_yolo_obb(source)
