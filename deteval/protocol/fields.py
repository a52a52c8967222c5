"""The one table of protocol fields, :data:`FIELDS`, and what is derived from it.

:data:`FIELDS` describes each field of :class:`~deteval.protocol.spec.Protocol` once: its allowed
values, the stage that reads it (matching, accumulation, or description only), the step of
:func:`deteval.explain.explain` it belongs to, the value a complete YAML file may leave it at, a
one-line doc, and the function that validates and normalizes it. Derived from it here:
:data:`FIELD_CHOICES`, :func:`field_names`, :func:`display_fields`, :func:`optional_fields`, the one
validation of protocol values (:func:`check_field`, :func:`check_fields`) and the docs table
(:func:`protocol_table_markdown`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from deteval._values import frozen
from deteval.errors import ConfigError
from deteval.protocol.checks import (
    _check_area_ranges,
    _check_class_budget,
    _check_dilation_ratio,
    _check_iou_thresholds,
    _check_keypoint_sigmas,
    _check_max_dets,
    _check_text,
    _fail,
)

__all__ = [
    "FieldSpec",
    "FIELDS",
    "FIELD_CHOICES",
    "EXPLAIN_STEPS",
    "field_names",
    "display_fields",
    "optional_fields",
    "check_fields",
    "check_field",
    "protocol_table_markdown",
]

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


def _spell(choice: Any) -> str:
    """A choice as a YAML file writes it (``true``, not ``True``)."""
    return ("true" if choice else "false") if isinstance(choice, bool) else repr(choice)


def _check_choice(key: str, value: Any, where: str) -> Any:
    allowed = FIELDS[key].choices or ()
    # The type must match too: 1 == True, but `class_agnostic: 1` is not a YAML boolean.
    if type(value) not in {type(a) for a in allowed} or value not in allowed:
        hint = ' (quoted: iou_comparison: ">=")' if key == "iou_comparison" else ""
        raise _fail(where, key, f"one of {', '.join(_spell(a) for a in allowed)}{hint}", value)
    return value


# --------------------------------------------------------------------------------------------
# The field table
# --------------------------------------------------------------------------------------------


@frozen
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
    iou_types : tuple of str or None
        The IoU types the field can change a number for (``mask_iou``: segm only); None: every
        type. ``compare --explain`` makes no step of a field that applies to neither protocol.
    """

    name: str
    choices: tuple | None
    stage: Stage
    step: str | None
    doc: str
    default: Any = _NO_DEFAULT
    check: Callable[[str, Any, str], Any] | None = None
    is_sparse: bool = False
    iou_types: tuple | None = None

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
        ("bbox", "segm", "keypoints", "boundary", "rotated"),
        "match",
        "IoU type/masks",
        "boxes, segmentation masks, keypoints (OKS, pycocotools' computeOks), boundary: "
        "min(mask IoU, Boundary IoU) of raster masks (Cheng et al. 2021, boundary-iou-api), or "
        "rotated (oriented) boxes: see rotated_box and rotated_iou",
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
        "ultralytics: each detection's best GT, then each GT's best detection, by IoU alone "
        "(Ultralytics before 8.4.176; from 8.4.176: coco with gt_ties: first)",
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
        ("101_point", "11_point", "all_point", "trapezoid_101", "step"),
        "accumulate",
        "interpolation",
        "COCO's 101 recall points, VOC2007's 11 points, VOC2010+'s area under "
        "the envelope, Ultralytics' trapezoid over the envelope at 101 points, or `step`: "
        "no interpolation, sum of (R_n - R_n-1) * P_n (scikit-learn's average_precision_score)",
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
        "score_ties",
        ("ranked", "threshold"),
        "accumulate",
        "ties/score order",
        "ranked: each detection is its own threshold (in `score_order`); threshold: a class's "
        "detections of equal score form one threshold, precision and recall read at its end "
        "(scikit-learn's rule)",
        default="ranked",
        is_sparse=True,
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
        ("pycocotools", "configured", "ultralytics", "lvis", "crowdpose"),
        "accumulate",
        "summary",
        "headline metrics: COCOeval.summarize literally (its keypoint stats for keypoints), from "
        "the configured values, Ultralytics' mAP50 and mAP50-95, or lvis-api's get_results "
        "(APr/APc/APf by frequency), or xtcocotools' keypoints_crowd summary (AP, AR and AP(E/M/H) "
        "by the images' `crowdIndex`)",
    ),
    FieldSpec(
        "mask_iou",
        ("exact", "raster"),
        "match",
        "IoU type/masks",
        "segm only: exact polygon geometry (shapely) or pycocotools' raster masks",
        default="exact",
        iou_types=("segm",),
    ),
    FieldSpec(
        "invalid_polygons",
        ("even_odd", "error", "make_valid"),
        "match",
        "IoU type/masks",
        "segm, exact masks: fill a self-intersecting polygon by the even-odd rule as pycocotools' "
        "rasteriser does, refuse it, or repair it with shapely.make_valid",
        default="even_odd",
        iou_types=("segm",),
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
        iou_types=("keypoints",),
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
    # -- Ultralytics 8.4 (added later: sparse, so older hashes stay) ----------------------------
    FieldSpec(
        "gt_ties",
        ("last", "first"),
        "match",
        "matching rule",
        "coco matching only: of the available ground truths with the highest IoU, the last in "
        "file order (pycocotools) or the first (np.argmax: Ultralytics 8.4 and later)",
        default="last",
        is_sparse=True,
    ),
    FieldSpec(
        "curve_end",
        ("slope", "drop"),
        "accumulate",
        "interpolation",
        "trapezoid_101 only: after the last recall point the precision envelope falls linearly to "
        "0 at recall 1 (slope: Ultralytics before 8.4) or is 0 at once (drop: 8.4 and later)",
        default="slope",
        is_sparse=True,
    ),
    # -- class-agnostic scoring (added later: sparse, so older hashes stay) ----------------------
    FieldSpec(
        "class_agnostic",
        (False, True),
        "match",
        "matching rule",
        "true: every ground truth and detection pooled into one class, 'all classes' (id -1), "
        "before matching: pycocotools' useCats=0",
        default=False,
        is_sparse=True,
    ),
    # -- CrowdPose and Boundary IoU (added later: sparse, so older hashes stay) -----------------
    FieldSpec(
        "keypoint_area",
        ("area", "box"),
        "match",
        "IoU type/masks",
        "keypoints only: the object scale of OKS and of the GT area ranges: the GT `area` field "
        "(pycocotools), or 0.53 * w * h of the GT box (xtcocotools use_area=False: CrowdPose)",
        default="area",
        is_sparse=True,
        iou_types=("keypoints",),
    ),
    FieldSpec(
        "empty_keypoint_detections",
        ("keep", "drop"),
        "match",
        "IoU type/masks",
        "keypoints only: detections with no keypoint of score > 0 are scored (pycocotools) or "
        "dropped before anything else (xtcocotools)",
        default="keep",
        is_sparse=True,
        iou_types=("keypoints",),
    ),
    FieldSpec(
        "boundary_dilation_ratio",
        None,
        "match",
        "IoU type/masks",
        "boundary only: the boundary band's width as a fraction of the image diagonal "
        "(dilation = max(1, round(ratio * diagonal)) pixels; boundary-iou-api: 0.02)",
        default=0.02,
        check=_check_dilation_ratio,
        is_sparse=True,
        iou_types=("boundary",),
    ),
    # -- Rotated boxes (added later: sparse, so older hashes stay) -------------------------------
    FieldSpec(
        "rotated_box",
        ("polygon4", "xywhr"),
        "match",
        "IoU type/masks",
        "rotated only: the shape scored: the four corners as given (polygon4: x1 y1 .. x4 y4, "
        "the DOTA devkit), or their minimum-area rectangle cx cy w h angle (xywhr: Ultralytics' "
        "xyxyxyxy2xywhr)",
        default="polygon4",
        is_sparse=True,
        iou_types=("rotated",),
    ),
    FieldSpec(
        "rotated_iou",
        ("polygon", "probiou"),
        "match",
        "IoU type/masks",
        "rotated only: exact polygon IoU (the DOTA devkit's polyiou, hotcoco's obb), or "
        "Ultralytics' ProbIoU (batch_probiou, 1 - Hellinger distance of Gaussians; needs "
        "rotated_box: xywhr)",
        default="polygon",
        is_sparse=True,
        iou_types=("rotated",),
    ),
    # -- Open Images challenge labels (added later: sparse, so older hashes stay) ---------------
    FieldSpec(
        "hierarchy_expansion",
        ("none", "ground_truth", "ground_truth_and_detections"),
        "match",
        "matching rule",
        "Open Images: GT boxes (and positive image-level labels) copied to every ancestor class of "
        "the --hierarchy, negative labels to every descendant; also each detection, with "
        "ground_truth_and_detections (TF OD API oid_hierarchical_labels_expansion.py)",
        default="none",
        is_sparse=True,
    ),
    FieldSpec(
        "image_level_labels",
        ("none", "verified"),
        "match",
        "matching rule",
        "verified: on each image only the classes of its --image-labels (positive or negative) "
        "and of its boxes are scored; other detections are dropped (OpenImagesChallengeEvaluator)",
        default="none",
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
    ['eleven_point_grid', 'score_ties', 'mask_iou']
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
            values = ", ".join(f"`{_spell(c) if isinstance(c, bool) else c}`" for c in s.choices)
        else:
            values = "text" if s.stage == "describe" else "see description"
        if s.has_default and s.stage != "describe":
            default = _spell(s.default) if isinstance(s.default, bool) else s.default
            values += f" (default `{default}`)"
        lines.append(f"| `{key}` | {values} | {s.stage} | {s.step or '-'} | {s.doc} |")
    return "\n".join(lines) + "\n"
