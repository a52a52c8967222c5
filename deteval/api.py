"""The front door: paths, parsed JSON, values and names in; values out.

Everything below this module takes values (:class:`~deteval.data.GroundTruth`,
:class:`~deteval.data.Detections`, :class:`~deteval.protocol.Protocol`) and returns values,
warnings included (``EvalResult.warnings`` / ``.notes``). This module also accepts what a user
has at hand -- a COCO JSON path or dict, a VOC root, a YOLO dataset, a preset name or a YAML
file -- and emits what the values carry as Python warnings:

* each warning about the input (and the protocol's parity notes) as
  :class:`~deteval.errors.InputWarning`;
* each note about an undefined metric (a class without ground truth) as
  :class:`~deteval.errors.UndefinedMetricWarning`.

They stay in the returned values exactly as before, so ``to_dict()`` and the JSON output list
them too. ``warnings.simplefilter("error", InputWarning)`` makes them errors (``--strict``): the
one exception then carries every message of the batch (``exc.messages``), not only the first.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.analysis import at_confidence, matches
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, InputWarning, UndefinedMetricWarning
from deteval.evaluate import EvalResult, check_protocol, score
from deteval.explain import Comparison, Explanation, MatchCache
from deteval.explain import compare as _compare_values
from deteval.explain import explain as _explain_values
from deteval.geometry import check_masks
from deteval.io import gt_format, load_detections, load_ground_truth
from deteval.io.category_map import read_category_map
from deteval.io.coco import require_boxes
from deteval.io.segmentation import detection_source, ground_truth_source, parse_masks
from deteval.io.voc import read_class_list, voc_year, with_result_classes
from deteval.mask_modes import MaskModeComparison
from deteval.mask_modes import compare_mask_modes as _compare_mask_modes
from deteval.protocol import Protocol, apply_overrides, parse_yaml_value, resolve_protocol
from deteval.sharding import match_sharded

__all__ = [
    "resolve_protocol",
    "resolve_protocols",
    "default_protocol",
    "parse_overrides",
    "refuse_overwrite",
    "Inputs",
    "load_inputs",
    "evaluate",
    "evaluate_inputs",
    "compare",
    "explain",
    "validate",
    "Validation",
    "compare_mask_modes",
    "at_confidence",
    "matches",
    "MatchCache",
    "Comparison",
    "Explanation",
]


# ------------------------------------------------------------------------------------------
# Protocols: names, YAML files, values; --set overrides
# ------------------------------------------------------------------------------------------


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
    """The protocol to score ``gt`` under when none is given, and a note saying why.

    COCO and YOLO ground truth: ``coco`` (no note). A VOC root: the protocol of its year, read
    from its path as py-faster-rcnn does (``use_07_metric = year < 2010``): ``VOC2007`` ->
    ``voc2007`` (11-point), ``VOC2010``..``VOC2012`` -> ``voc2010`` (all-point), with a note.
    A VOC root whose path names no year is refused: the three candidates differ by several
    points and none is a safe guess.

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
    source = gt.source if isinstance(gt, GroundTruth) else gt
    if not isinstance(source, (str, os.PathLike)) or not os.path.isdir(source) or gt_format(source) != "voc":
        return "coco", ""
    year = voc_year(source)
    if year is None:
        raise ConfigError(
            f"--gt {os.fspath(source)}: a VOC root and no --protocol; expected one of "
            f"--protocol voc2007 (VOC2007 test: the devkit's 11-point AP), voc2010 "
            f"(VOC2010-2012: all-point AP) or coco (the folder's path names no VOC<year> "
            f"to choose by)"
        )
    name = "voc2007" if year < 2010 else "voc2010"
    return name, (
        f"--gt {os.fspath(source)}: a VOC{year} root and no --protocol: scored under {name} "
        f"(the devkit's metric for {year}: {'11-point' if year < 2010 else 'all-point'} AP); "
        f"pass --protocol to choose another"
    )


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------


def refuse_overwrite(output: str, sources: dict) -> None:
    """Refuse an ``--output`` that is an input, a link to one, or an existing file in an input folder.

    Parameters
    ----------
    output : str
    sources : dict
        Option name (``"gt"``, ``"dt"``) -> the path given, or None.

    Raises
    ------
    ConfigError
    """
    out = os.path.realpath(output)
    for name, source in sources.items():
        if not source:
            continue
        real = os.path.realpath(source)
        is_same = real == out or (
            os.path.exists(out) and os.path.exists(real) and os.path.samefile(real, out)
        )
        if is_same:
            raise ConfigError(f"--output {output}: is the --{name} input; refusing to overwrite it")
        if os.path.isdir(real) and os.path.isfile(out) and os.path.commonpath([real, out]) == real:
            raise ConfigError(
                f"--output {output}: is a file inside the --{name} folder {source}; "
                f"refusing to overwrite what may be an input (choose a path outside it)"
            )


def _emit(messages: Sequence[str], category: type[Warning], *, stacklevel: int) -> None:
    """Warn once per message; when a filter makes ``category`` an error, raise one with all of them.

    ``stacklevel`` counts from the caller of this function (2: the caller's caller).
    """
    refused = []
    for text in messages:
        try:
            warnings.warn(text, category, stacklevel=stacklevel + 1)
        except category:
            refused.append(text)
    if refused:
        raise category(*refused)


def _emit_result_warnings(messages: Sequence[str], notes: Sequence[str], *, stacklevel: int) -> None:
    _emit(messages, InputWarning, stacklevel=stacklevel + 1)
    _emit(notes, UndefinedMetricWarning, stacklevel=stacklevel + 1)


def _as_gt(gt: Any, **options: Any) -> GroundTruth:
    return gt if isinstance(gt, GroundTruth) else load_ground_truth(gt, **options)


def _as_dt(dt: Any, gt: GroundTruth, **options: Any) -> Detections:
    return dt if isinstance(dt, Detections) else load_detections(dt, gt, **options)


@dataclass(frozen=True, eq=False)
class Inputs:
    """Ground truth and (optionally) detections, loaded and checked.

    Attributes
    ----------
    gt : GroundTruth
    dt : Detections or None
    gt_name, dt_name : str or None
        The sources as the user named them (the ``inputs`` of the JSON output).
    """

    gt: GroundTruth
    dt: Detections | None
    gt_name: Any = None
    dt_name: Any = None

    @property
    def warnings(self) -> tuple:
        """What loading noticed: the ground truth's warnings, then the detections'."""
        return tuple(self.gt.warnings) + (tuple(self.dt.warnings) if self.dt is not None else ())

    def summary(self) -> dict:
        """``{"gt", "dt", "images", "gt_objects", "detections"}`` (the JSON ``inputs``)."""
        return {
            "gt": self.gt_name,
            "dt": self.dt_name,
            "images": self.gt.n_images,
            "gt_objects": len(self.gt),
            "detections": len(self.dt) if self.dt is not None else 0,
        }


def _is_voc_results(kind: str, dt: Any) -> bool:
    """A folder of detections that is read as VOC result files (any ground truth but YOLO)."""
    return kind != "yolo" and isinstance(dt, (str, os.PathLike)) and os.path.isdir(dt)


def _dt_options(
    kind: str,
    gt: Any,
    dt: Any,
    *,
    drop_unknown_categories: bool,
    allow_large_drop: bool,
    category_map: Any,
    result_prefix: str | None,
    yolo_layout: str | None,
) -> dict:
    """The loader options of the detection options, each refused where it does not apply."""
    is_voc_results = _is_voc_results(kind, dt)
    dt_options: dict[str, Any] = {}
    if allow_large_drop and not drop_unknown_categories:
        raise ConfigError(
            "--allow-large-drop: only with --drop-unknown-categories (it lifts the 10% cap "
            "on what that drops)"
        )
    if drop_unknown_categories:
        dt_options["unknown_category"] = "drop"
        if allow_large_drop and not is_voc_results:
            dt_options["max_drop"] = 1.0
    if category_map is not None:
        if is_voc_results:
            raise ConfigError(
                "--category-map: VOC result files name their class by file name; expected "
                "a COCO results JSON or YOLO predictions"
            )
        dt_options["category_map"] = read_category_map(category_map)
    if result_prefix is not None:
        if not is_voc_results:
            raise ConfigError(
                f"--result-prefix: only for a folder of VOC result files, but --dt {dt} is not one"
            )
        dt_options["prefix"] = result_prefix
    if yolo_layout:
        if kind != "yolo" or not (isinstance(dt, (str, os.PathLike)) and os.path.isdir(dt)):
            raise ConfigError(
                f"--yolo-layout: only for YOLO predictions (a folder of txt files with a "
                f"YOLO --gt), but --gt {gt} is {kind}"
            )
        dt_options["layout"] = yolo_layout
    return dt_options


def _load_inputs(
    gt: Any,
    dt: Any = None,
    *,
    split: str | None = None,
    area_from_box: bool = False,
    drop_unknown_categories: bool = False,
    yolo_layout: str | None = None,
    protocols: Sequence[Protocol] = (),
    category_map: Any = None,
    allow_large_drop: bool = False,
    classes: Any = None,
    result_prefix: str | None = None,
) -> Inputs:
    """:func:`load_inputs` without warning (its callers emit what they return)."""
    kind = gt_format(gt)
    gt_options: dict[str, Any] = {}
    if split:
        if kind != "voc":
            raise ConfigError(f"--split {split}: only for a VOC root, but --gt {gt} is {kind}")
        gt_options["split"] = split
    if classes is not None:
        if kind != "voc":
            raise ConfigError(f"--classes: only for a VOC root, but --gt {gt} is {kind}")
        gt_options["classes"] = read_class_list(classes)
    if area_from_box:
        if kind != "coco":
            raise ConfigError("--area-from-box: only for COCO ground truth")
        gt_options["area_missing"] = "box"
    ground_truth = _as_gt(gt, **gt_options)
    if dt is None:
        return Inputs(ground_truth, None, gt, None)
    dt_options = _dt_options(
        kind,
        gt,
        dt,
        drop_unknown_categories=drop_unknown_categories,
        allow_large_drop=allow_large_drop,
        category_map=category_map,
        result_prefix=result_prefix,
        yolo_layout=yolo_layout,
    )
    if kind == "voc" and classes is None and _is_voc_results(kind, dt) and not isinstance(gt, GroundTruth):
        ground_truth = with_result_classes(ground_truth, dt, prefix=result_prefix)
    detections = _as_dt(dt, ground_truth, **dt_options)
    if any(p.iou_type == "bbox" for p in protocols):
        require_boxes(detections)
    return Inputs(ground_truth, detections, gt, dt)


def load_inputs(
    gt: Any,
    dt: Any = None,
    *,
    split: str | None = None,
    area_from_box: bool = False,
    drop_unknown_categories: bool = False,
    yolo_layout: str | None = None,
    protocols: Sequence[Protocol] = (),
    category_map: Any = None,
    allow_large_drop: bool = False,
    classes: Any = None,
    result_prefix: str | None = None,
) -> Inputs:
    """Load ground truth and detections as ``deteval evaluate`` does, and warn what was noticed.

    Parameters
    ----------
    gt : str, os.PathLike, dict or GroundTruth
        COCO JSON (path or parsed), VOC root or YOLO dataset.
    dt : str, os.PathLike, list or Detections, optional
        COCO results JSON, VOC result folder or YOLO prediction folder.
    split : str, optional
        VOC image set (``ImageSets/Main/<split>.txt``); VOC only.
    area_from_box : bool
        COCO ground truth without ``area``: use ``w * h`` of the box (with a warning).
    drop_unknown_categories : bool
        Drop detections of categories not in the ground truth (a warning with their share)
        instead of failing; refused above 10% of the detections unless ``allow_large_drop``.
    yolo_layout : str, optional
        Column order of YOLO prediction rows (``"cls cx cy w h conf"`` or ``"cls conf cx cy w h"``).
    protocols : sequence of Protocol
        When one scores boxes, every detection must have one.
    category_map : {"index0", "index1"}, mapping or path, optional
        How detection category ids name ground-truth categories (COCO results, YOLO
        predictions; see docs/inputs.md).
    allow_large_drop : bool
        With ``drop_unknown_categories``: drop any share (COCO results, YOLO predictions).
    classes : "voc", path or sequence of str, optional
        VOC class list (category ids 1..K in its order); result files of other classes are errors.
    result_prefix : str, optional
        VOC result file prefix (``comp4_det_test_``); default: detected from the file names.

    Returns
    -------
    Inputs

    Warns
    -----
    InputWarning
        Each of ``Inputs.warnings``.

    Raises
    ------
    InputError, ConfigError
    """
    inputs = _load_inputs(
        gt,
        dt,
        split=split,
        area_from_box=area_from_box,
        drop_unknown_categories=drop_unknown_categories,
        yolo_layout=yolo_layout,
        protocols=protocols,
        category_map=category_map,
        allow_large_drop=allow_large_drop,
        classes=classes,
        result_prefix=result_prefix,
    )
    _emit(inputs.warnings, InputWarning, stacklevel=2)
    return inputs


# ------------------------------------------------------------------------------------------
# Scoring
# ------------------------------------------------------------------------------------------


def evaluate(
    gt: Any, dt: Any, protocol: str | Protocol | None = None, *, workers: int = 1, category_map: Any = None
) -> EvalResult:
    """Score detections against ground truth under a protocol.

    Parameters
    ----------
    gt : GroundTruth, str, os.PathLike or dict
        Ground truth, or a COCO instances JSON path / dict (or a VOC root, a YOLO dataset).
    dt : Detections, str, os.PathLike or list
        Detections, or a COCO results JSON path / list (or VOC result files, YOLO predictions).
    protocol : str or Protocol, optional
        A preset name (``"coco"``, ``"coco-pycocotools"``, ``"voc2007"``, ...), a YAML file, or
        a :class:`Protocol`. Default: :func:`default_protocol` (``coco``; a VOC root's year).
    workers : int
        Match image shards in this many processes, then merge (identical numbers).
    category_map : {"index0", "index1"}, mapping or path, optional
        How the detections' category ids name ground-truth categories (when ``dt`` is loaded
        here; see docs/inputs.md).

    Returns
    -------
    EvalResult

    Warns
    -----
    InputWarning
        Each of ``result.warnings`` (the inputs' warnings, then the protocol's).
    UndefinedMetricWarning
        Each of ``result.notes`` (classes without ground truth).

    Raises
    ------
    InputError
        Invalid input (the message names file, record and field).
    ConfigError
        Invalid protocol.

    Examples
    --------
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]
    >>> evaluate(gt, dt, "voc2010").metrics
    {'mAP': 1.0}
    """
    if protocol is None:
        protocol, note = default_protocol(gt)
        if note:
            _emit([note], InputWarning, stacklevel=2)
    protocol = resolve_protocol(protocol)
    check_protocol(protocol)
    gt = _as_gt(gt)
    dt = _as_dt(dt, gt, **({} if category_map is None else {"category_map": category_map}))
    table = match_sharded(gt, dt, protocol, workers=workers)
    inputs = {
        "gt": gt.source,
        "dt": dt.source,
        "images": gt.n_images,
        "gt_objects": len(gt),
        "detections": len(dt),
    }
    result = score(table, gt, protocol, warnings=gt.warnings + dt.warnings, inputs=inputs)
    _emit_result_warnings(result.warnings, result.notes, stacklevel=2)
    return result


def evaluate_inputs(
    inputs: Inputs,
    protocols: Sequence[str | Protocol],
    *,
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
) -> tuple[EvalResult, ...]:
    """Score loaded inputs under each protocol (``deteval evaluate``).

    Unlike :func:`evaluate`, the results carry only each protocol's own warnings: the inputs'
    were given (and warned) by :func:`load_inputs`.

    Parameters
    ----------
    inputs : Inputs
    protocols : sequence of str or Protocol
    workers : int
    progress : callable, optional
        Called with a label as each stage starts: ``"matching NAME"``, then ``"scoring NAME"``,
        per protocol (the CLI's progress bar).

    Returns
    -------
    tuple of EvalResult

    Warns
    -----
    InputWarning, UndefinedMetricWarning
        Every result's ``warnings`` (all protocols, in order), then every result's ``notes``.
    """
    if inputs.dt is None:
        raise ConfigError("evaluate_inputs: the inputs have no detections; expected load_inputs(gt, dt)")
    results = []
    for protocol in (resolve_protocol(p) for p in protocols):
        check_protocol(protocol)
        if progress is not None:
            progress(f"matching {protocol.name}")
        table = match_sharded(inputs.gt, inputs.dt, protocol, workers=workers)
        if progress is not None:
            progress(f"scoring {protocol.name}")
        results.append(score(table, inputs.gt, protocol, warnings=(), inputs=inputs.summary()))
    _emit_result_warnings(
        [w for r in results for w in r.warnings], [n for r in results for n in r.notes], stacklevel=2
    )
    return tuple(results)


def compare(
    gt: Any,
    dt: Any,
    protocols: Sequence[str | Protocol],
    *,
    workers: int = 1,
    cache: MatchCache | None = None,
    inputs: dict | None = None,
) -> Comparison:
    """Score one dataset under several protocols, sharing matchings where the settings agree.

    Parameters
    ----------
    gt, dt
        As :func:`evaluate` takes them (values, paths or parsed JSON); ignored when ``cache``
        is given (its inputs are used).
    protocols : sequence of str or Protocol
        Preset names, YAML paths or protocols.
    workers : int
        Match image shards in this many processes (when no ``cache`` is given).
    cache : MatchCache, optional
        Reuse (and fill) matchings of the same ``gt``/``dt``.
    inputs : dict, optional
        The JSON ``inputs`` entry of the results (default: from the loaded values).

    Returns
    -------
    Comparison

    Warns
    -----
    InputWarning
        The inputs' warnings, then each result's ``warnings`` (which do not repeat the inputs').
    UndefinedMetricWarning
        Each result's ``notes``.

    Raises
    ------
    ConfigError
        A protocol that cannot be resolved or whose summary cannot be computed.

    Examples
    --------
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]
    >>> c = compare(gt, dt, ["voc2007", "voc2010", "coco"])
    >>> [r.protocol.name for r in c.results], c.n_matchings
    (['voc2007', 'voc2010', 'coco'], 2)
    """
    resolved = [resolve_protocol(p) for p in protocols]
    if not resolved:
        raise ConfigError("compare: expected at least one protocol, found none")
    for p in resolved:
        check_protocol(p)
    if cache is None:
        ground_truth = _as_gt(gt)
        cache = MatchCache(ground_truth, _as_dt(dt, ground_truth), workers=workers)
    comparison = _compare_values(cache.gt, cache.dt, resolved, cache=cache, inputs=inputs)
    results = comparison.results
    _emit_result_warnings(
        list(cache.gt.warnings + cache.dt.warnings) + [w for r in results for w in r.warnings],
        [n for r in results for n in r.notes],
        stacklevel=2,
    )
    return comparison


def explain(
    gt: Any, dt: Any, a: str | Protocol, b: str | Protocol, *, cache: MatchCache | None = None
) -> Explanation:
    """Attribute the difference between two protocols to their differing fields, step by step.

    :func:`deteval.explain.explain` on loaded values (see there for the walk).

    Parameters
    ----------
    gt, dt
        As :func:`evaluate` takes them; ignored when ``cache`` is given.
    a, b : str or Protocol
        Preset names, YAML paths or protocols.
    cache : MatchCache, optional

    Returns
    -------
    Explanation

    Examples
    --------
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "dog"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100],
    ...                        "area": 1e4, "iscrowd": 0},
    ...                       {"id": 2, "image_id": 1, "category_id": 1, "bbox": [40, 0, 100, 100],
    ...                        "area": 1e4, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100], "score": 0.9},
    ...       {"image_id": 1, "category_id": 1, "bbox": [15, 0, 100, 100], "score": 0.8}]
    >>> from deteval.protocol import get_protocol
    >>> voc_coco_matching = get_protocol("voc2010").replace(name="voc2010-cocomatch", matching="coco")
    >>> explain(gt, dt, "voc2010", voc_coco_matching).summary_line()
    'voc2010 -> voc2010-cocomatch: matching rule +0.5000 (total +0.5000)'
    >>> print(explain(gt, dt, "voc2007", "voc2010").summary_line())
    voc2007 -> voc2010: interpolation -0.0455 (total -0.0455)
    """
    a, b = resolve_protocol(a), resolve_protocol(b)
    if cache is None:
        ground_truth = _as_gt(gt)
        cache = MatchCache(ground_truth, _as_dt(dt, ground_truth))
    return _explain_values(cache.gt, cache.dt, a, b, cache=cache)


def compare_mask_modes(gt: GroundTruth, dt: Detections, protocol: Protocol) -> MaskModeComparison:
    """Exact vs raster mask IoU under a segm ``protocol`` (``--compare-mask-modes``).

    Raises
    ------
    ConfigError
        When ``protocol`` scores boxes.
    """
    if protocol.iou_type != "segm":
        raise ConfigError(
            f"--compare-mask-modes: protocol {protocol.name!r} scores boxes; expected --iou-type segm"
        )
    return _compare_mask_modes(gt, dt, protocol)


# ------------------------------------------------------------------------------------------
# Validation: the checks evaluate runs, nothing scored
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Validation:
    """What ``deteval validate`` found.

    Attributes
    ----------
    gt : dict
        ``source, format, images, categories, objects, crowd, difficult, ignore,
        images_without_objects, categories_without_objects``.
    dt : dict or None
        ``source, detections, images, categories, score_min, score_max``.
    warnings : tuple of str
        Each once, in the order found.
    """

    gt: dict
    dt: dict | None
    warnings: tuple

    def to_dict(self) -> dict:
        """The ``--format json`` document."""
        return {"valid": True, "gt": self.gt, "dt": self.dt, "warnings": list(self.warnings)}


def _over_max_dets(gt: GroundTruth, dt: Detections, protocol: Protocol) -> int:
    """Detections beyond ``max(max_dets)`` in their (image, class) group under ``protocol``."""
    if protocol.max_dets is None or len(dt) == 0:
        return 0
    _, counts = np.unique(dt.image.astype(np.int64) * gt.n_classes + dt.category, return_counts=True)
    return int(np.maximum(counts - max(protocol.max_dets), 0).sum())


def _has_masks(segmentation: Any) -> bool:
    """Whether every record has a polygon or RLE.

    When it has, validate checks them as scoring would (corrupt RLE included); records without one
    are reported by the evaluation itself.
    """
    return segmentation is not None and len(segmentation) > 0 and all(s is not None for s in segmentation)


def validate(
    gt: Any, dt: Any = None, *, protocols: Sequence[str | Protocol] = ("coco",), **options: Any
) -> Validation:
    """Load and check the inputs as :func:`load_inputs` does, and count what they hold.

    Parameters
    ----------
    gt, dt
        As :func:`load_inputs` takes them (``dt`` optional).
    protocols : sequence of str or Protocol
        Checked against their needs (boxes, ``max_dets``; ``segm``: the masks, parsed and
        checked as evaluation does under each protocol's ``mask_iou`` / ``invalid_polygons``).
    **options
        The options of :func:`load_inputs`.

    Returns
    -------
    Validation

    Warns
    -----
    InputWarning
        Each of ``Validation.warnings``.
    """
    resolved = [resolve_protocol(p) for p in protocols]
    inputs = _load_inputs(gt, dt or None, protocols=resolved, **options)
    ground_truth, detections = inputs.gt, inputs.dt
    if any(p.iou_type == "segm" for p in resolved):  # polygons and RLE checked as scoring would
        if _has_masks(ground_truth.segmentation):
            parse_masks(ground_truth_source(ground_truth))
        if detections is not None and _has_masks(detections.segmentation):
            parse_masks(detection_source(detections, ground_truth))
    per_class = np.bincount(ground_truth.category, minlength=ground_truth.n_classes)
    gt_report = {
        "source": gt,
        "format": gt_format(gt),
        "images": ground_truth.n_images,
        "categories": ground_truth.n_classes,
        "objects": len(ground_truth),
        "crowd": int(ground_truth.is_crowd.sum()),
        "difficult": int(ground_truth.is_difficult.sum()),
        "ignore": int(ground_truth.is_ignore.sum()),
        "images_without_objects": int(ground_truth.n_images - len(np.unique(ground_truth.image))),
        "categories_without_objects": [ground_truth.category_name[k] for k in np.flatnonzero(per_class == 0)],
    }
    # The mask checks evaluation runs (deteval.geometry.prepare_masks), once per distinct mask
    # setting of the segm protocols: validate refuses exactly what evaluate refuses.
    mask_settings = {(p.mask_iou, p.invalid_polygons): p for p in resolved if p.iou_type == "segm"}
    for p in mask_settings.values():
        check_masks(ground_truth, detections, p)
    found = list(ground_truth.warnings)
    dt_report = None
    if detections is not None:
        dt_report = {
            "source": dt,
            "detections": len(detections),
            "images": int(len(np.unique(detections.image))),
            "categories": int(len(np.unique(detections.category))),
            "score_min": float(detections.score.min()) if len(detections) else None,
            "score_max": float(detections.score.max()) if len(detections) else None,
        }
        found += list(detections.warnings)
        for p in resolved:
            over = _over_max_dets(ground_truth, detections, p)
            if over and p.max_dets is not None:
                found.append(
                    f"{over} detections beyond max_dets={max(p.max_dets)} in their image and "
                    f"class would not be scored under {p.name} (as the protocol says)"
                )
    report = Validation(gt=gt_report, dt=dt_report, warnings=tuple(dict.fromkeys(found)))
    _emit(report.warnings, InputWarning, stacklevel=2)
    return report
