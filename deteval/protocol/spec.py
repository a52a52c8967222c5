"""The frozen :class:`Protocol` and the one table of its fields.

Every difference between two protocols is a field; no code branches on a protocol's *name*.
:data:`FIELDS` describes each field once: its allowed values, the stage that reads it (matching,
accumulation, or description only), the step of :func:`deteval.explain.explain` it belongs to,
the value a complete YAML file may leave it at, a one-line doc, and the function that validates
and normalizes it. Everything else is derived from that table: :data:`FIELD_CHOICES`,
:func:`field_names`, validation (for YAML files and for Python construction alike), the explain
walk and the docs table (:func:`protocol_table_markdown`).

Validation has one implementation, :func:`check_fields`. Its messages have the form
``WHERE: KEY.PATH: expected ..., found ...``; ``WHERE`` is the file name for a YAML file (or
``--set``) and ``protocol 'NAME'`` when a :class:`Protocol` is built in Python.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from deteval.errors import ConfigError

__all__ = [
    "Protocol",
    "FieldSpec",
    "FIELDS",
    "FIELD_CHOICES",
    "EXPLAIN_STEPS",
    "field_names",
    "display_fields",
    "optional_fields",
    "check_fields",
    "check_field",
    "describe_value",
    "protocol_table_markdown",
    "COCO_IOU_THRESHOLDS",
    "COCO_RECALL_THRESHOLDS",
]

#: pycocotools' thresholds, bit for bit: ``np.linspace(.5, .95, 10)`` (the ninth is
#: 0.8999999999999999, not 0.9).
COCO_IOU_THRESHOLDS = tuple(
    float(t) for t in np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True)
)
#: pycocotools' recall thresholds ``np.linspace(0, 1, 101)``: ten of them lie one float step
#: above i/100 (indices 35, 41, 47, 57, 69, 70, 82, 83, 94, 95).
COCO_RECALL_THRESHOLDS = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)
COCO_RECALL_THRESHOLDS.flags.writeable = False

IouType = Literal["bbox", "segm", "keypoints"]
IouComparison = Literal[">=", ">"]
Matching = Literal["coco", "voc", "ultralytics"]
BoxConvention = Literal["continuous", "pixel_inclusive"]
ApMethod = Literal["101_point", "11_point", "all_point", "trapezoid_101"]
ElevenPointGrid = Literal["matlab_colon", "decimal", "numpy_arange"]
Difficult = Literal["ignore", "count"]
Crowd = Literal["ignore_reusable", "none"]
ScoreOrder = Literal["image_major", "file"]
GtIgnoreField = Literal["honour", "iscrowd"]
GtIdZero = Literal["matchable", "unmatchable"]
Summary = Literal["pycocotools", "configured", "ultralytics", "lvis"]
MaskIou = Literal["exact", "raster"]
InvalidPolygons = Literal["even_odd", "error", "make_valid"]
GroupOf = Literal["none", "openimages"]
MaxDetsScope = Literal["image_class", "image"]
FederatedLabels = Literal["ignore", "lvis"]
Stage = Literal["match", "accumulate", "describe"]

#: Steps of :func:`deteval.explain.explain`, in walk order. ``summary`` is always the last step.
EXPLAIN_STEPS = (
    "interpolation",
    "IoU comparison",
    "box convention",
    "matching rule",
    "difficult/crowd",
    "max_dets",
    "area ranges",
    "IoU thresholds",
    "ties/score order",
    "parity bugs",
    "IoU type/masks",
    "summary",
)


class _NoDefault:
    """Marks a field that a complete protocol file must write (no default)."""

    def __repr__(self) -> str:
        return "<no default>"


_NO_DEFAULT: Any = _NoDefault()


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def describe_value(value: Any) -> str:
    """How a found value is named in messages.

    >>> describe_value(True)
    'true (a boolean; YAML reads yes/no/on/off/true/false so)'
    >>> describe_value([10, 1]), describe_value("0.5")
    ('the list [10, 1]', "the string '0.5'")
    """
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return f"{str(bool(value)).lower()} (a boolean; YAML reads yes/no/on/off/true/false so)"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        text = repr(list(value))
        kind = "list" if isinstance(value, list) else "tuple"
        return f"the {kind} {text if len(text) <= 60 else text[:57] + '...'}"
    if isinstance(value, dict):
        return f"a mapping with keys {list(value)[:8]}"
    return f"{type(value).__name__} {value!r}"


def _fail(where: str, path: str, expected: str, found: Any) -> ConfigError:
    return ConfigError(f"{where}: {path}: expected {expected}, found {describe_value(found)}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# --------------------------------------------------------------------------------------------
# Checks of structured fields: plain values (YAML) or the frozen representation (Python) in,
# the frozen representation out.
# --------------------------------------------------------------------------------------------


def _check_text(key: str, value: Any, where: str) -> str:
    if not isinstance(value, str) or (key == "name" and not value.strip()):
        raise _fail(where, key, "a non-empty string" if key == "name" else "a string", value)
    return value


def _check_iou_thresholds(key: str, value: Any, where: str) -> tuple:
    if isinstance(value, dict):
        required = ("start", "stop", "num")
        if any(k not in required for k in value) or any(k not in value for k in required):
            raise _fail(
                where,
                key,
                "a list of numbers, or exactly {start, stop, num} for np.linspace(start, stop, num)",
                value,
            )
        for k in ("start", "stop"):
            if not _is_number(value[k]) or not 0.0 <= value[k] <= 1.0:
                raise _fail(where, f"{key}.{k}", "a number in [0, 1]", value[k])
        num = value["num"]
        if not _is_integer(num) or not 1 <= num <= 1000:
            raise _fail(where, f"{key}.num", "an integer in [1, 1000]", num)
        if num > 1 and value["start"] == value["stop"]:
            raise _fail(where, key, "start < stop when num > 1", value)
        # Exactly pycocotools' construction: np.linspace(start, stop, num, endpoint=True).
        return tuple(float(t) for t in np.linspace(value["start"], value["stop"], num, endpoint=True))
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        raise _fail(
            where,
            key,
            "a non-empty list of numbers in [0, 1] (e.g. [0.5]) or {start: 0.5, stop: 0.95, num: 10}",
            value,
        )
    out = []
    for i, t in enumerate(value):
        if not _is_number(t) or not 0.0 <= t <= 1.0:
            raise _fail(where, f"{key}[{i}]", "a number in [0, 1]", t)
        out.append(float(t))
    if len(set(out)) != len(out):
        raise _fail(where, key, "distinct thresholds", value)
    return tuple(out)


def _check_area_ranges(key: str, value: Any, where: str) -> tuple:
    # A mapping name -> [lo, hi] (YAML and Python), or the frozen tuple of (name, lo, hi).
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) and len(v) == 3 for v in value):
        items = [(v[0], [v[1], v[2]]) for v in value]
    elif isinstance(value, dict) and value:
        items = list(value.items())
    else:
        raise _fail(
            where, key, "a non-empty mapping name: [lo, hi] (e.g. {all: [0, 1e10], small: [0, 1024]})", value
        )
    out = []
    for name, bounds in items:
        if not isinstance(name, str) or not name:
            raise _fail(where, f"{key}.{name}", "a range name that is a non-empty string", name)
        path = f"{key}.{name}"
        if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            raise _fail(where, path, "[lo, hi], two numbers", bounds)
        for i, b in enumerate(bounds):
            if not _is_number(b) or not math.isfinite(b) or b < 0:
                raise _fail(
                    where,
                    f"{path}[{i}]",
                    "a finite number >= 0 (areas in pixels², e.g. 1e10 for no upper bound)",
                    b,
                )
        lo, hi = float(bounds[0]), float(bounds[1])
        if lo > hi:
            raise _fail(where, path, "[lo, hi] with lo <= hi", bounds)
        out.append((name, lo, hi))
    if len({n for n, _, _ in out}) != len(out):
        raise _fail(where, key, "distinct range names", value)
    return tuple(out)


def _check_max_dets(key: str, value: Any, where: str) -> tuple | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise _fail(
            where, key, "a non-empty list of positive integers (e.g. [1, 10, 100]) or null for no cap", value
        )
    for i, m in enumerate(value):
        if not _is_integer(m) or m < 1:
            raise _fail(where, f"{key}[{i}]", "a positive integer", m)
    if any(b <= a for a, b in zip(value, value[1:])):
        raise _fail(where, key, "strictly increasing values (pycocotools sorts them)", value)
    return tuple(int(m) for m in value)


def _check_keypoint_sigmas(key: str, value: Any, where: str) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        raise _fail(
            where,
            key,
            "a non-empty list of positive numbers, one per keypoint (e.g. "
            "COCO's 17), or null for COCO's person sigmas",
            value,
        )
    for i, s in enumerate(value):
        if not _is_number(s) or not math.isfinite(s) or s <= 0:
            raise _fail(where, f"{key}[{i}]", "a finite number > 0", s)
    return tuple(float(s) for s in value)


def _check_class_budget(key: str, value: Any, where: str) -> int | None:
    if value is None:
        return None
    if not _is_integer(value) or value < 1:
        raise _fail(where, key, "a positive integer (Fixed AP: 10000) or null for no budget", value)
    return int(value)


def _check_choice(key: str, value: Any, where: str) -> str:
    allowed = FIELDS[key].choices or ()
    if not isinstance(value, str) or value not in allowed:
        hint = ' (quoted: iou_comparison: ">=")' if key == "iou_comparison" else ""
        raise _fail(where, key, f"one of {', '.join(repr(a) for a in allowed)}{hint}", value)
    return value


# --------------------------------------------------------------------------------------------
# The field table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """One field of :class:`Protocol`.

    Attributes
    ----------
    name : str
        Field name (= YAML key).
    choices : tuple of str or None
        Allowed values of an enumerated field; None for structured values (checked by ``check``).
    stage : {"match", "accumulate", "describe"}
        Who reads the field: :func:`deteval.evaluate.match`, accumulation only (protocols that
        differ only there share one matching), or nobody (descriptive).
    step : str or None
        The step of :func:`deteval.explain.explain` that changes this field (one of
        :data:`EXPLAIN_STEPS`); None for descriptive fields.
    doc : str
        One line for the docs table.
    default : Any
        The value a complete protocol file (no ``extends:``) may leave the field at, and the
        dataclass default; a marker (``has_default`` False) where a complete file must write it.
    check : callable or None
        ``check(key, value, where) -> normalized`` for structured fields; None for enumerated
        fields (checked against ``choices``).
    is_sparse : bool
        A field added after results and preset hashes were pinned: at its default it is left
        out of :meth:`Protocol.to_dict` (the JSON ``config``) and of
        :meth:`Protocol.fingerprint`, so every existing protocol keeps its hash and output.
    """

    name: str
    choices: tuple | None
    stage: Stage
    step: str | None
    doc: str
    default: Any = _NO_DEFAULT
    check: Callable[[str, Any, str], Any] | None = None
    is_sparse: bool = False

    @property
    def has_default(self) -> bool:
        """Whether the field has a default value (else it must be given)."""
        return self.default is not _NO_DEFAULT

    def validate(self, value: Any, where: str) -> Any:
        """Return ``value`` in the Protocol's representation, or raise :class:`ConfigError`."""
        if self.check is not None:
            return self.check(self.name, value, where)
        return _check_choice(self.name, value, where)


def _table(*specs: FieldSpec) -> Mapping[str, FieldSpec]:
    return {s.name: s for s in specs}


#: The one table of protocol fields, in the Protocol's field order (= YAML / JSON key order).
FIELDS: Mapping[str, FieldSpec] = _table(
    FieldSpec(
        "name",
        None,
        "describe",
        None,
        "preset name, or the name a file gives (default: its stem)",
        default="custom",
        check=_check_text,
    ),
    FieldSpec(
        "source",
        None,
        "describe",
        None,
        "one line: what this protocol reproduces",
        default="",
        check=_check_text,
    ),
    FieldSpec(
        "iou_type",
        ("bbox", "segm", "keypoints"),
        "match",
        "IoU type/masks",
        "boxes, segmentation masks, or keypoints (OKS, pycocotools' computeOks)",
    ),
    FieldSpec(
        "iou_thresholds",
        None,
        "match",
        "IoU thresholds",
        "matching thresholds in order (the T axis); a list, or {start, stop, num} for np.linspace",
        check=_check_iou_thresholds,
    ),
    FieldSpec(
        "iou_comparison",
        (">=", ">"),
        "match",
        "IoU comparison",
        "`>=`: devkit and pycocotools; `>`: py-faster-rcnn / detectron2 voc_eval.py",
    ),
    FieldSpec(
        "matching",
        ("coco", "voc", "ultralytics"),
        "match",
        "matching rule",
        "coco: best still-unmatched GT, crowd reusable; voc: argmax over all GTs, taken -> FP; "
        "ultralytics: each detection's best GT, then each GT's best detection, by IoU alone",
    ),
    FieldSpec(
        "box_convention",
        ("continuous", "pixel_inclusive"),
        "match",
        "box convention",
        "continuous xywh, or 1-based inclusive pixels (+1 in widths, the VOC devkit)",
    ),
    FieldSpec(
        "ap_method",
        ("101_point", "11_point", "all_point", "trapezoid_101"),
        "accumulate",
        "interpolation",
        "COCO's 101 recall points, VOC2007's 11 points, VOC2010+'s area under "
        "the envelope, or Ultralytics' trapezoid over the envelope at 101 points",
    ),
    FieldSpec(
        "eleven_point_grid",
        ("matlab_colon", "decimal", "numpy_arange"),
        "accumulate",
        "interpolation",
        "11-point recall grid: MATLAB's 0:0.1:1, k / 10, or np.arange(0, 1.1, 0.1)",
        default="matlab_colon",
    ),
    FieldSpec(
        "area_ranges",
        None,
        "match",
        "area ranges",
        "size buckets name: [lo, hi] on the GT `area` field, bounds inclusive (the A axis)",
        check=_check_area_ranges,
    ),
    FieldSpec(
        "max_dets",
        None,
        "match",
        "max_dets",
        "detections kept per image and class, increasing (the M axis); null: no cap",
        check=_check_max_dets,
    ),
    FieldSpec(
        "difficult",
        ("ignore", "count"),
        "match",
        "difficult/crowd",
        "VOC `difficult` objects: ignored, or counted as normal objects",
    ),
    FieldSpec(
        "crowd",
        ("ignore_reusable", "none"),
        "match",
        "difficult/crowd",
        "COCO crowd regions: ignored and absorbing many detections, or normal objects",
    ),
    FieldSpec(
        "score_order",
        ("image_major", "file"),
        "accumulate",
        "ties/score order",
        "ties in the ranking: image-id order then rank (pycocotools), or file order (devkit)",
    ),
    FieldSpec(
        "gt_ignore_field",
        ("honour", "iscrowd"),
        "match",
        "parity bugs",
        "`iscrowd`: pycocotools' bug that overwrites `ignore` with `iscrowd`; `honour` keeps it",
    ),
    FieldSpec(
        "gt_id_zero",
        ("matchable", "unmatchable"),
        "match",
        "parity bugs",
        "`unmatchable`: pycocotools' bug that never matches annotation id 0",
    ),
    FieldSpec(
        "summary",
        ("pycocotools", "configured", "ultralytics", "lvis"),
        "accumulate",
        "summary",
        "headline metrics: COCOeval.summarize literally (its keypoint stats for keypoints), from "
        "the configured values, Ultralytics' mAP50 and mAP50-95, or lvis-api's get_results "
        "(APr/APc/APf by frequency)",
    ),
    FieldSpec(
        "mask_iou",
        ("exact", "raster"),
        "match",
        "IoU type/masks",
        "segm only: exact polygon geometry (shapely) or pycocotools' raster masks",
        default="exact",
    ),
    FieldSpec(
        "invalid_polygons",
        ("even_odd", "error", "make_valid"),
        "match",
        "IoU type/masks",
        "segm, exact masks: fill a self-intersecting polygon by the even-odd rule as pycocotools' "
        "rasteriser does, refuse it, or repair it with shapely.make_valid",
        default="even_odd",
    ),
    # -- Open Images and tool presets (added later: sparse, so older hashes stay) ------------
    FieldSpec(
        "group_of",
        ("none", "openimages"),
        "match",
        "difficult/crowd",
        "openimages: GT `is_group_of` boxes match leftover detections by intersection over the "
        "detection's area, one TP per box",
        default="none",
        is_sparse=True,
    ),
    # -- COCO keypoints and LVIS (added later: sparse, so older hashes stay) --------------------
    FieldSpec(
        "keypoint_sigmas",
        None,
        "match",
        "IoU type/masks",
        "keypoints only: per-keypoint OKS sigmas; null: COCO's 17 person sigmas (pycocotools)",
        default=None,
        check=_check_keypoint_sigmas,
        is_sparse=True,
    ),
    FieldSpec(
        "max_dets_scope",
        ("image_class", "image"),
        "match",
        "max_dets",
        "what max_dets caps: each image and class (pycocotools), or each image across classes "
        "(lvis-api's 300 per image)",
        default="image_class",
        is_sparse=True,
    ),
    FieldSpec(
        "max_dets_per_class",
        None,
        "match",
        "max_dets",
        "detections kept per class over the whole dataset, top scores first (Fixed AP: "
        "10000); null: no such budget",
        default=None,
        check=_check_class_budget,
        is_sparse=True,
    ),
    FieldSpec(
        "federated_labels",
        ("ignore", "lvis"),
        "match",
        "difficult/crowd",
        "lvis: score a class on an image only if it is annotated or negative there, and ignore "
        "unmatched detections of not-exhaustive classes (lvis-api); ignore: labels not read",
        default="ignore",
        is_sparse=True,
    ),
)

#: Allowed values of the enumerated fields (YAML key = field name).
FIELD_CHOICES: Mapping[str, tuple] = {k: s.choices for k, s in FIELDS.items() if s.choices is not None}


def field_names() -> tuple:
    """Every field name, in the Protocol's order.

    >>> field_names()[:4]
    ('name', 'source', 'iou_type', 'iou_thresholds')
    """
    return tuple(FIELDS)


def display_fields() -> tuple:
    """The fields that decide numbers, in display order (the CLI command ``protocols`` lists these).

    >>> display_fields()[:3]
    ('iou_type', 'iou_thresholds', 'iou_comparison')
    """
    return tuple(k for k, s in FIELDS.items() if s.stage != "describe")


def optional_fields() -> dict:
    """Fields a complete protocol file may leave out, with the value they then take.

    >>> list(optional_fields())[:3]
    ['eleven_point_grid', 'mask_iou', 'invalid_polygons']
    """
    return {k: s.default for k, s in FIELDS.items() if s.has_default and s.stage != "describe"}


def check_field(key: str, value: Any, *, where: str) -> Any:
    """Validate one field's value and return it in the Protocol's representation.

    Raises
    ------
    ConfigError
        ``WHERE: KEY.PATH: expected ..., found ...``; an unknown key lists the allowed ones.

    Examples
    --------
    >>> check_field("max_dets", [1, 10, 100], where="x.yaml")
    (1, 10, 100)
    >>> check_field("matching", "pascal", where="x.yaml")
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: x.yaml: matching: expected one of 'coco', 'voc', 'ultralytics', found the string 'pascal'
    """
    spec = FIELDS.get(key)
    if spec is None:
        raise ConfigError(f"{where}: {key}: unknown key; expected one of {', '.join(FIELDS)}")
    return spec.validate(value, where)


def check_fields(values: Mapping[str, Any], *, where: str) -> dict:
    """Validate several fields (see :func:`check_field`); the one validation of protocol values."""
    return {key: check_field(key, value, where=where) for key, value in values.items()}


def protocol_table_markdown() -> str:
    """The docs table of protocol fields (docs/protocols.md pastes it; a test keeps them equal).

    >>> protocol_table_markdown().splitlines()[0]
    '| field | values | read by | explain step | description |'
    """
    lines = ["| field | values | read by | explain step | description |", "|---|---|---|---|---|"]
    for key, s in FIELDS.items():
        if s.choices:
            values = ", ".join(f"`{c}`" for c in s.choices)
        else:
            values = "text" if s.stage == "describe" else "see description"
        if s.has_default and s.stage != "describe":
            values += f" (default `{s.default}`)"
        lines.append(f"| `{key}` | {values} | {s.stage} | {s.step or '-'} | {s.doc} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# The Protocol
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Protocol:
    """A complete, frozen description of how to score detections.

    Every field is described once in :data:`FIELDS` (values, stage, doc); the fields that decide
    numbers have no default except three that only matter for segm or 11-point AP, so
    ``Protocol()`` is a ``TypeError``: start from a preset (``get_protocol("coco").replace(...)``)
    or give every field (``Protocol(**fields)``). Values are validated and normalized on
    construction (lists become tuples, ``area_ranges`` may be a mapping ``name -> [lo, hi]``).

    Parameters
    ----------
    name : str
        Preset name, or the name given by a config.
    source : str
        One line: what this reproduces.
    iou_type : {"bbox", "segm", "keypoints"}
        ``keypoints`` scores COCO keypoints by OKS (pycocotools' ``computeOks``).
    iou_thresholds : tuple of float
        Matching thresholds, in order (the T axis).
    iou_comparison : {">=", ">"}
        ``>=``: the devkit and pycocotools (which compares against ``min(t, 1 - 1e-10)`` under
        COCO matching); ``>``: the Python VOC port of py-faster-rcnn / detectron2.
    matching : {"coco", "voc", "ultralytics"}
        ``coco``: best still-unmatched GT at or above the threshold, non-ignored first, ties to
        the later GT, crowd reusable. ``voc``: the GT with the highest IoU over all GTs (first
        on ties); if it is taken the detection is a false positive. ``ultralytics``: the pairs
        at or above the threshold sorted by IoU, each detection keeps its best GT, then each GT
        its best detection; score plays no part (Ultralytics' ``match_predictions``).
    box_convention : {"continuous", "pixel_inclusive"}
        See :mod:`deteval.geometry`.
    ap_method : {"101_point", "11_point", "all_point", "trapezoid_101"}
        COCO's 101 recall thresholds (precision = tp / (tp + fp + eps)); VOC2007's 11 points;
        VOC2010+'s area under the precision envelope; ``trapezoid_101``: Ultralytics'
        ``compute_ap``, ``np.trapezoid`` of the envelope (starting at precision 1) interpolated
        at ``np.linspace(0, 1, 101)``.
    eleven_point_grid : {"matlab_colon", "decimal", "numpy_arange"}
        11-point recall grid. ``matlab_colon``: the devkit's ``0:0.1:1``, which MATLAB builds
        from both ends (``a + k*d`` for the first half, ``b - (n-k)*d`` for the second), so the
        fourth point is 0.30000000000000004 while 0.6 and 0.7 are exact; ``numpy_arange``:
        ``np.arange(0., 1.1, 0.1)`` as the Python VOC port builds it (0.30000000000000004,
        0.6000000000000001, 0.7000000000000001; GNU Octave's colon gives the same);
        ``decimal``: ``k / 10``. A recall of exactly 0.3 misses the 0.3 point under the first
        two.
    area_ranges : tuple of (name, lo, hi)
        Size buckets on the GT ``area`` field, bounds inclusive (the A axis).
    max_dets : tuple of int or None
        Detections kept per image *and class*, after a stable score sort (the M axis); None: no
        cap.
    difficult : {"ignore", "count"}
        VOC ``difficult`` objects: ignored (not positives; a detection matching one is neither
        TP nor FP), or counted as normal objects.
    crowd : {"ignore_reusable", "none"}
        COCO crowd regions: ignored and able to absorb many detections; or treated as normal
        objects.
    score_order : {"image_major", "file"}
        Tie rule of the global ranking: pycocotools concatenates per-image lists in image-id
        order then sorts stably; the devkit sorts the class's result file stably.
    gt_ignore_field : {"honour", "iscrowd"}
        ``iscrowd`` reproduces pycocotools, which overwrites an annotation's ``ignore`` with its
        ``iscrowd`` (a bug); ``honour`` keeps ``ignore or iscrowd``.
    gt_id_zero : {"matchable", "unmatchable"}
        ``unmatchable`` reproduces pycocotools, which stores the matched GT's id as the match
        flag, so a detection matched to annotation id 0 counts as unmatched (a bug).
    summary : {"pycocotools", "configured", "ultralytics", "lvis"}
        Headline metrics: pycocotools' ``summarize`` (AP at maxDets=100 hard-coded, the others
        at ``max_dets[2]``; for ``keypoints`` its ten keypoint stats at maxDets=20), computed
        from the configured values, Ultralytics' ``mAP50`` (first threshold) and ``mAP50-95``
        (mean over thresholds), or lvis-api's ``get_results`` (APr/APc/APf by category
        ``frequency``, AR at the largest ``max_dets``).
    mask_iou : {"exact", "raster"}
        ``segm`` only: exact polygon geometry (shapely) or pycocotools' rasterised masks.
    invalid_polygons : {"even_odd", "error", "make_valid"}
        ``segm`` with exact masks only. ``even_odd``: a self-intersecting polygon covers the
        points it encloses an odd number of times, the fill rule of pycocotools' rasteriser,
        computed exactly; ``error``: refuse polygons whose edges cross or overlap;
        ``make_valid``: repair them with ``shapely.make_valid(method="linework")``.
    group_of : {"none", "openimages"}
        ``openimages``: the Open Images challenge's group-of rule (TF object detection API
        ``per_image_evaluation.py``): ground truth flagged ``is_group_of`` takes no part in the
        matching; each detection left unmatched (not a TP, not ignored) is then compared with
        the group-of boxes of its image and class by intersection over the *detection's* area
        (IoA), at the lane's threshold; all detections inside one group-of box count as one
        true positive (the best-scored) and the rest are ignored. ``none``: ``is_group_of`` is
        not read.
    keypoint_sigmas : tuple of float or None
        ``keypoints`` only: the per-keypoint OKS sigmas (one per keypoint, as xtcocotools and
        faster-coco-eval allow); None: pycocotools' ``kpt_oks_sigmas`` of COCO's 17 person
        keypoints.
    max_dets_scope : {"image_class", "image"}
        What ``max_dets`` caps: each (image, class) group (pycocotools), or each image across
        its classes (lvis-api's ``LVISResults(max_dets=300)``, applied to the results before
        anything else, ties in file order).
    max_dets_per_class : int or None
        Keep only the top-scoring detections of each class over the whole dataset (ties in file
        order), before anything else: the Fixed AP budget of Dave et al. (2021), 10000.
    federated_labels : {"ignore", "lvis"}
        ``lvis``: the federated rules of lvis-api's ``LVISEval``: a detection of class c on an
        image is scored only if c is annotated (positive) on the image or in its
        ``neg_category_ids``; an unmatched detection of a class in the image's
        ``not_exhaustive_category_ids`` is ignored, not a false positive. ``ignore``: those
        labels are not read (a counted warning says so when the ground truth has them).

    Raises
    ------
    ConfigError
        A value outside its field's rules: ``protocol 'NAME': KEY.PATH: expected ..., found ...``.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> p = get_protocol("voc2010").replace(iou_thresholds=[0.3])
    >>> p.iou_thresholds, p.is_single_threshold
    ((0.3,), True)
    >>> get_protocol("coco").replace(name="x", max_dets=[10, 1])
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: protocol 'x': max_dets: expected strictly increasing values (pycocotools sorts them), found the list [10, 1]
    """

    name: str = FIELDS["name"].default
    source: str = FIELDS["source"].default
    iou_type: IouType
    iou_thresholds: tuple[float, ...]
    iou_comparison: IouComparison
    matching: Matching
    box_convention: BoxConvention
    ap_method: ApMethod
    eleven_point_grid: ElevenPointGrid = FIELDS["eleven_point_grid"].default
    area_ranges: tuple[tuple[str, float, float], ...]
    max_dets: tuple[int, ...] | None
    difficult: Difficult
    crowd: Crowd
    score_order: ScoreOrder
    gt_ignore_field: GtIgnoreField
    gt_id_zero: GtIdZero
    summary: Summary
    mask_iou: MaskIou = FIELDS["mask_iou"].default
    invalid_polygons: InvalidPolygons = FIELDS["invalid_polygons"].default
    group_of: GroupOf = FIELDS["group_of"].default
    keypoint_sigmas: tuple[float, ...] | None = FIELDS["keypoint_sigmas"].default
    max_dets_scope: MaxDetsScope = FIELDS["max_dets_scope"].default
    max_dets_per_class: int | None = FIELDS["max_dets_per_class"].default
    federated_labels: FederatedLabels = FIELDS["federated_labels"].default

    def __post_init__(self) -> None:
        name = self.name if isinstance(self.name, str) else repr(self.name)
        where = f"protocol {name!r}"
        for key, spec in FIELDS.items():
            value = getattr(self, key)
            normalized = spec.validate(value, where)
            if normalized is not value:
                object.__setattr__(self, key, normalized)  # frozen: normalize once, on construction

    # -- derived --------------------------------------------------------------------------
    @property
    def area_names(self) -> tuple:
        """Names of the area ranges, in order (the A axis)."""
        return tuple(a[0] for a in self.area_ranges)

    @property
    def is_single_threshold(self) -> bool:
        """True for VOC-like protocols that report one ``mAP``."""
        return (
            len(self.iou_thresholds) == 1
            and len(self.area_ranges) == 1
            and (self.max_dets is None or len(self.max_dets) == 1)
        )

    def replace(self, **changes: Any) -> Protocol:
        """Return a copy with fields changed (validated).

        Examples
        --------
        >>> from deteval.protocol import get_protocol
        >>> get_protocol("coco").replace(max_dets=(1, 10, 300)).max_dets
        (1, 10, 300)
        """
        unknown = sorted(set(changes) - set(FIELDS))
        if unknown:
            raise ConfigError(
                f"protocol {self.name!r}: unknown protocol field(s) {unknown}; "
                f"expected one of {', '.join(FIELDS)}"
            )
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The resolved fields as plain JSON values (lists for tuples).

        A sparse field (see :class:`FieldSpec`) at its default is left out.
        """
        out = {}
        for key, spec in FIELDS.items():
            value = getattr(self, key)
            if spec.is_sparse and value == spec.default:
                continue
            if key == "area_ranges":
                value = {n: [lo, hi] for n, lo, hi in value}
            elif isinstance(value, tuple):
                value = list(value)
            out[key] = value
        return out

    def fingerprint(self) -> str:
        """Short hash of the fields that change numbers (not name or source).

        Notes
        -----
        Sparse fields count only when they differ from their default (see :class:`FieldSpec`).
        ``invalid_polygons: even_odd`` is hashed under the spelling ``error``, the default
        of deteval 0.1.0: the two give the same numbers on every input ``error`` accepts (it
        only refuses the polygons ``even_odd`` fills), so fingerprints printed by 0.1.0 stay
        valid for the protocols whose numbers did not change.
        """
        fields = {k: v for k, v in self.to_dict().items() if FIELDS[k].stage != "describe"}
        if fields["invalid_polygons"] == "even_odd":
            fields["invalid_polygons"] = "error"
        blob = json.dumps(fields, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]
