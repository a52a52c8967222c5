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

This module holds :class:`Protocol`, the types of its fields and the COCO threshold constants;
the table and what derives from it live in :mod:`deteval.protocol.fields`, the checks of
structured values and the message helpers in :mod:`deteval.protocol.checks`. Both are
re-exported here, so ``from deteval.protocol.spec import ...`` works for every name in
:data:`__all__`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any, Literal

import numpy as np

from deteval._values import frozen
from deteval.errors import ConfigError
from deteval.protocol.checks import describe_value
from deteval.protocol.fields import (
    EXPLAIN_STEPS,
    FIELD_CHOICES,
    FIELDS,
    FieldSpec,
    check_field,
    check_fields,
    display_fields,
    field_names,
    optional_fields,
    protocol_table_markdown,
)

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

IouType = Literal["bbox", "segm", "keypoints", "boundary", "rotated"]
IouComparison = Literal[">=", ">"]
Matching = Literal["coco", "voc", "ultralytics"]
BoxConvention = Literal["continuous", "pixel_inclusive"]
ApMethod = Literal["101_point", "11_point", "all_point", "trapezoid_101", "step"]
ElevenPointGrid = Literal["matlab_colon", "decimal", "numpy_arange"]
Difficult = Literal["ignore", "count"]
Crowd = Literal["ignore_reusable", "none"]
ScoreOrder = Literal["image_major", "file"]
ScoreTies = Literal["ranked", "threshold"]
GtIgnoreField = Literal["honour", "iscrowd"]
GtIdZero = Literal["matchable", "unmatchable"]
Summary = Literal["pycocotools", "configured", "ultralytics", "lvis", "crowdpose"]
MaskIou = Literal["exact", "raster"]
InvalidPolygons = Literal["even_odd", "error", "make_valid"]
GroupOf = Literal["none", "openimages"]
MaxDetsScope = Literal["image_class", "image"]
FederatedLabels = Literal["ignore", "lvis"]
ClassAgnostic = Literal[False, True]
GtTies = Literal["last", "first"]
CurveEnd = Literal["slope", "drop"]
KeypointArea = Literal["area", "box"]
EmptyKeypointDetections = Literal["keep", "drop"]
RotatedBox = Literal["polygon4", "xywhr"]
RotatedIou = Literal["polygon", "probiou"]
HierarchyExpansion = Literal["none", "ground_truth", "ground_truth_and_detections"]
ImageLevelLabels = Literal["none", "verified"]


# --------------------------------------------------------------------------------------------
# The Protocol
# --------------------------------------------------------------------------------------------


@frozen(kw_only=True)
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
    iou_type : {"bbox", "segm", "keypoints", "boundary"}
        ``keypoints`` scores COCO keypoints by OKS (pycocotools' ``computeOks``); ``boundary``
        scores masks by ``min(mask IoU, Boundary IoU)`` of their rasters (boundary-iou-api's
        "Boundary AP", see :mod:`deteval.geometry.boundary`).
    iou_thresholds : tuple of float
        Matching thresholds, in order (the T axis).
    iou_comparison : {">=", ">"}
        ``>=``: the devkit and pycocotools (which compares against ``min(t, 1 - 1e-10)`` under
        COCO matching); ``>``: the Python VOC port of py-faster-rcnn / detectron2.
    matching : {"coco", "voc", "ultralytics"}
        ``coco``: best still-unmatched GT at or above the threshold, non-ignored first, ties to
        the later GT (``gt_ties``), crowd reusable. ``voc``: the GT with the highest IoU over all
        GTs (first on ties); if it is taken the detection is a false positive. ``ultralytics``:
        the pairs at or above the threshold sorted by IoU, each detection keeps its best GT, then
        each GT the first (highest-scored) of the detections that kept it; the others are false
        positives (Ultralytics' ``match_predictions`` before 8.4.176; from 8.4.176 it is
        ``coco`` with ``gt_ties: first``).
    box_convention : {"continuous", "pixel_inclusive"}
        See :mod:`deteval.geometry`.
    ap_method : {"101_point", "11_point", "all_point", "trapezoid_101", "step"}
        COCO's 101 recall thresholds (precision = tp / (tp + fp + eps)); VOC2007's 11 points;
        VOC2010+'s area under the precision envelope; ``trapezoid_101``: Ultralytics'
        ``compute_ap``, ``np.trapezoid`` of the envelope (starting at precision 1) interpolated
        at ``np.linspace(0, 1, 101)``; ``step``: no interpolation, the sum over thresholds of
        ``(R_n - R_{n-1}) * P_n`` (scikit-learn's ``average_precision_score``; no recall points,
        so ``precision`` and ``scores`` have an empty R axis, as for ``all_point``).
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
    score_ties : {"ranked", "threshold"}
        ``ranked``: every detection is a threshold of its own, tied scores in the order of
        ``score_order`` (pycocotools, the devkits). ``threshold``: a class's detections of equal
        score (``np.float64`` equality) form one threshold; precision and recall are read only
        at the end of each tied group (scikit-learn's rule), under every ``ap_method``.
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
        ``frequency``, AR at the largest ``max_dets``), or ``crowdpose``: xtcocotools'
        ``keypoints_crowd`` summary (AP, AP50, AP75, AR, AR50, AR75 at maxDets=20, then AP(E),
        AP(M), AP(H) over the images whose ``crowdIndex`` is < 0.2, < 0.8, or more).
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
    gt_ties : {"last", "first"}
        ``matching: coco`` only: which ground truth a detection takes when several available
        ones share the highest IoU: the last in file order (pycocotools, whose scan keeps a GT
        whose IoU is ``>=`` the best so far) or the first (``np.argmax``: Ultralytics 8.4 and
        later, ``BaseValidator.match_predictions``).
    curve_end : {"slope", "drop"}
        ``ap_method: trapezoid_101`` only: how the precision envelope ends after the last recall
        point. ``slope``: ``mrec = [0, recall, 1]``, ``mpre = [1, precision, 0]``, so it falls
        linearly to 0 at recall 1 (Ultralytics before 8.4); ``drop``: ``mrec = [0, recall,
        recall[-1], 1]``, ``mpre = [1, precision, 0, 0]``, so it is 0 right after the last
        recall point (Ultralytics 8.4 and later, ``compute_ap``).
    class_agnostic : bool
        True: before anything else, every category of the ground truth and the detections is
        pooled into one, ``"all classes"`` with id -1 (:func:`deteval.pooling.pool_categories`),
        exactly as pycocotools' ``params.useCats = 0``: a detection may match a ground truth of
        any class, ``max_dets`` caps an image's detections across classes, and results have
        one class. False (the default): classes are scored separately.
    keypoint_area : {"area", "box"}
        ``keypoints`` only: the scale ``s`` of OKS and the area the ground truth's size ranges
        read: its ``area`` field (pycocotools), or ``bbox[3] * bbox[2] * 0.53`` (xtcocotools'
        ``COCOeval(..., use_area=False)``, used for CrowdPose, whose annotations have no area).
    empty_keypoint_detections : {"keep", "drop"}
        ``keypoints`` only: ``drop``: a detection none of whose keypoints has a score
        (visibility) > 0 is removed before anything else (xtcocotools' ``_prepare``);
        ``keep``: it is scored like any other (pycocotools).
    boundary_dilation_ratio : float
        ``iou_type="boundary"`` only: the width ``d`` of the boundary band in pixels is
        ``max(1, round(ratio * sqrt(height**2 + width**2)))`` of the image (boundary-iou-api's
        ``dilation_ratio``, 0.02 by default).
    rotated_box : {"polygon4", "xywhr"}
        ``iou_type="rotated"`` only: the four corners as read (the DOTA devkit), or their
        minimum-area rectangle (Ultralytics' ``xyxyxyxy2xywhr``).
    rotated_iou : {"polygon", "probiou"}
        ``iou_type="rotated"`` only: exact polygon IoU, or Ultralytics' ProbIoU
        (``batch_probiou``), which needs ``rotated_box="xywhr"``.
    hierarchy_expansion : {"none", "ground_truth", "ground_truth_and_detections"}
        Open Images' class hierarchy, applied to the inputs before matching
        (:func:`deteval.openimages.apply_challenge_rules`): ground-truth boxes and positive
        image-level labels copied to every ancestor class, negative labels to every descendant
        (TF OD API ``oid_hierarchical_labels_expansion.py``); detections too with
        ``ground_truth_and_detections``. Needs a hierarchy (``--hierarchy``).
    image_level_labels : {"none", "verified"}
        ``verified``: on each image only the classes of its verified image-level labels
        (positive or negative) and of its boxes are scored; detections of other classes are
        dropped (``OpenImagesChallengeEvaluator``). Needs the labels (``--image-labels``).

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
    score_ties: ScoreTies = FIELDS["score_ties"].default
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
    gt_ties: GtTies = FIELDS["gt_ties"].default
    curve_end: CurveEnd = FIELDS["curve_end"].default
    class_agnostic: ClassAgnostic = FIELDS["class_agnostic"].default
    keypoint_area: KeypointArea = FIELDS["keypoint_area"].default
    empty_keypoint_detections: EmptyKeypointDetections = FIELDS["empty_keypoint_detections"].default
    boundary_dilation_ratio: float = FIELDS["boundary_dilation_ratio"].default
    rotated_box: RotatedBox = FIELDS["rotated_box"].default
    rotated_iou: RotatedIou = FIELDS["rotated_iou"].default
    hierarchy_expansion: HierarchyExpansion = FIELDS["hierarchy_expansion"].default
    image_level_labels: ImageLevelLabels = FIELDS["image_level_labels"].default

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

    def check_scorable(self, stage: Literal["match", "score"] = "score") -> None:
        """Refuse field combinations that cannot be scored (before any work is done).

        pycocotools' summary reads ``max_dets[0..2]``, so ``summary: pycocotools`` needs three (its
        keypoint summary reads maxDets=20 by value and needs none). ``gt_ties`` other than ``last``
        needs ``matching: coco`` and ``curve_end`` other than ``slope`` needs ``ap_method:
        trapezoid_101`` (the only code that reads them: elsewhere they would change nothing).
        ``class_agnostic`` cannot be combined with LVIS' federated labels or frequency groups.

        :func:`deteval.evaluate.match` checks the combinations matching reads (``stage="match"``:
        ``gt_ties``, ``class_agnostic`` with federated labels), :func:`deteval.evaluate.score`
        all of them, so a caller need not; the outcome is computed once per object (the object
        is frozen).

        Raises
        ------
        ConfigError
            The combination, and the fields to change.
        """
        for problem_stage, message in self._scoring_problems:
            if stage == "score" or problem_stage == "match":
                raise ConfigError(message)

    @functools.cached_property
    def _scoring_problems(self) -> tuple[tuple[str, str], ...]:
        """(stage, message) of each combination :meth:`check_scorable` refuses (cached: frozen fields)."""
        out = []
        if (
            self.summary == "pycocotools"
            and self.iou_type != "keypoints"
            and not self.is_single_threshold
            and (self.max_dets is None or len(self.max_dets) < 3)
        ):
            out.append(
                (
                    "score",
                    f"protocol {self.name!r}: summary 'pycocotools' needs three max_dets "
                    f"(it reads max_dets[0..2]), found {self.max_dets}; "
                    f"set summary: configured",
                )
            )
        if self.gt_ties != "last" and self.matching != "coco":
            out.append(
                (
                    "match",
                    f"protocol {self.name!r}: gt_ties {self.gt_ties!r} is read by matching: coco "
                    f"only, found matching {self.matching!r}; expected gt_ties: last (or matching: coco)",
                )
            )
        if self.curve_end != "slope" and self.ap_method != "trapezoid_101":
            out.append(
                (
                    "score",
                    f"protocol {self.name!r}: curve_end {self.curve_end!r} is read by ap_method: "
                    f"trapezoid_101 only, found ap_method {self.ap_method!r}; expected curve_end: "
                    f"slope (or ap_method: trapezoid_101)",
                )
            )
        if self.class_agnostic and (self.federated_labels == "lvis" or self.summary == "lvis"):
            out.append(
                (
                    "match" if self.federated_labels == "lvis" else "score",
                    f"protocol {self.name!r}: class_agnostic pools every category into one, but "
                    f"LVIS' federated labels and frequency groups name categories; expected "
                    f"federated_labels: ignore and a summary other than 'lvis' (or class_agnostic: false)",
                )
            )
        return tuple(out)

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
        import hashlib  # only when a fingerprint is asked for

        return hashlib.sha256(blob).hexdigest()[:12]
