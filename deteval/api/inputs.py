"""Inputs for the front door: paths, parsed JSON or values -> checked ground truth and detections.

:func:`load_inputs` loads ground truth and detections as ``deteval evaluate`` does (each loader
option refused where it does not apply) and warns what loading noticed; :class:`Inputs` holds them.
:func:`refuse_overwrite` keeps an ``--output`` off the inputs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.api._emit import _emit
from deteval.api.openimages import load_challenge, side_files
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, InputWarning
from deteval.evaluate import inputs_summary
from deteval.io import (
    PredictionSource,
    gt_format,
    is_openimages_csv,
    load_detections,
    load_ground_truth,
    locate_predictions,
)
from deteval.io.category_map import MAX_DROP, read_category_map, refuse_off_ground_truth
from deteval.protocol import Protocol
from deteval.scorable import require_boxes


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


def _as_gt(gt: Any, *, workers: int | str = 1, **options: Any) -> GroundTruth:
    return gt if isinstance(gt, GroundTruth) else load_ground_truth(gt, workers=workers, **options)


def _as_dt(
    dt: Any, gt: GroundTruth, *, allow_large_drop: bool = False, workers: int | str = 1, **options: Any
) -> Detections:
    """``dt`` loaded against ``gt`` (a folder looked into), refused when its ids are misread.

    Detections given as :class:`Detections` are taken as they are. Loaded ones are refused when
    their category ids, as read (``category_map``), put more than :data:`MAX_DROP` of them on
    categories without ground-truth objects (:func:`refuse_off_ground_truth`; ``allow_large_drop``
    lifts the cap). ``workers``: threads that parse a COCO results file (:func:`load_detections`).
    """
    if isinstance(dt, Detections):
        return dt
    if options.get("category_map") is not None:
        options["category_map"] = read_category_map(options["category_map"])
    detections = load_detections(dt, gt, workers=workers, **options)
    refuse_off_ground_truth(
        detections.category,
        gt,
        options.get("category_map"),
        where=str(detections.source),
        max_share=1.0 if allow_large_drop else MAX_DROP,
    )
    return detections


@frozen(eq=False)
class Inputs:
    """Ground truth and (optionally) detections, loaded and checked.

    Attributes
    ----------
    gt : GroundTruth
    dt : Detections or None
    gt_name, dt_name : str or None
        The sources as the user named them (the ``inputs`` of the JSON output).
    dt_read : str or None
        The file or folder read when ``dt_name`` is a folder that holds it (an Ultralytics run
        folder's ``labels/`` or ``predictions.json``, say); None when it is ``dt_name`` itself.
    split : str or None
        The VOC image set chosen by the detections' image ids when none was given.
    image_labels, hierarchy : ImageLevelLabels, ClassHierarchy or None
        Open Images' side files (``--image-labels``, ``--hierarchy``), applied per protocol by
        :func:`deteval.api.openimages.challenge_inputs`.
    """

    gt: GroundTruth
    dt: Detections | None
    gt_name: Any = None
    dt_name: Any = None
    dt_read: str | None = None
    split: str | None = None
    image_labels: Any = None
    hierarchy: Any = None

    @property
    def warnings(self) -> tuple:
        """What loading noticed: the ground truth's warnings, then the detections'."""
        return tuple(self.gt.warnings) + (tuple(self.dt.warnings) if self.dt is not None else ())

    def summary(self) -> dict:
        """``{"gt", "dt", "images", "gt_objects", "detections"}`` (the JSON ``inputs``).

        Plus ``"dt_read"`` when the detections were found inside the ``dt`` folder, and
        ``"split"`` when the VOC image set was chosen by the detections' image ids.
        """
        out = inputs_summary(self.gt, self.dt, names=(self.gt_name, self.dt_name))
        if self.dt_read is not None:
            out["dt_read"] = self.dt_read
        if self.split is not None:
            out["split"] = self.split
        return out


def _dt_options(
    kind: str,
    gt: Any,
    dt: Any,
    located: PredictionSource | None,
    *,
    drop_unknown_categories: bool,
    allow_large_drop: bool,
    category_map: Any,
    result_prefix: str | None,
    yolo_layout: str | None,
) -> dict:
    """The loader options of the detection options, each refused where it does not apply."""
    is_voc_results = located is not None and located.kind == "voc"
    dt_options: dict[str, Any] = {}
    if allow_large_drop and not drop_unknown_categories and category_map is None:
        raise ConfigError(
            "--allow-large-drop: only with --drop-unknown-categories (it lifts the 10% cap "
            "on what that drops) or --category-map (it lifts the 10% cap on detections the "
            "map puts on categories without ground-truth objects)"
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
        if located is None or located.kind != "yolo":
            raise ConfigError(
                f"--yolo-layout: only for YOLO predictions (a folder of <image stem>.txt "
                f"files), but --dt {dt} is not one (--gt {gt} is {kind})"
            )
        dt_options["layout"] = yolo_layout
    return dt_options


def _gt_options(kind: str, gt: Any, *, split: str | None, classes: Any, area_from_box: bool) -> dict:
    """The loader options of the ground-truth options, each refused where it does not apply."""
    gt_options: dict[str, Any] = {}
    if split:
        if kind != "voc":
            raise ConfigError(f"--split {split}: only for a VOC root, but --gt {gt} is {kind}")
        gt_options["split"] = split
    if classes is not None:
        if kind != "voc":
            raise ConfigError(f"--classes: only for a VOC root, but --gt {gt} is {kind}")
        from deteval.io.voc import read_class_list  # VOC's readers only for a VOC root

        gt_options["classes"] = read_class_list(classes)
    if area_from_box:
        if kind != "coco":
            raise ConfigError("--area-from-box: only for COCO ground truth")
        gt_options["area_missing"] = "box"
    return gt_options


def _split_of(gt: Any, ground_truth: GroundTruth, detections: Detections) -> tuple[str | None, str]:
    """The image set a VOC root read whole is for, by the detections' images, and the note saying so."""
    # every Annotations/*.xml was read: the detections' images say which image set they are for
    from deteval.io.voc.annotations import choose_split

    named = [str(ground_truth.image_name[i]) for i in np.unique(detections.image)]
    chosen = choose_split(gt, named)
    if chosen is None:
        return None, ""
    return chosen, (
        f"{gt}: no split given: the detections' {len(named)} images are all in "
        f"ImageSets/Main/{chosen}.txt and in no other image set that fits: scored on the "
        f"split {chosen!r} (pass --split {chosen} to state it)"
    )


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
    image_labels: Any = None,
    hierarchy: Any = None,
    workers: int | str = 1,
) -> Inputs:
    """:func:`load_inputs` without warning (its callers emit what they return)."""
    labels, tree = side_files(image_labels, hierarchy, protocols)
    if is_openimages_csv(gt):
        ground_truth, detections = load_challenge(gt, dt, image_labels=labels, hierarchy=tree)
        return Inputs(ground_truth, detections, gt, dt, image_labels=labels, hierarchy=tree)
    kind = gt_format(gt)
    gt_options = _gt_options(kind, gt, split=split, classes=classes, area_from_box=area_from_box)
    ground_truth = _as_gt(gt, workers=workers, **gt_options)
    if dt is None:
        return Inputs(ground_truth, None, gt, None, image_labels=labels, hierarchy=tree)

    def with_detections(ground_truth: GroundTruth) -> tuple[GroundTruth, Detections, PredictionSource | None]:
        located = None
        if isinstance(dt, (str, os.PathLike)) and os.path.isdir(dt):
            located = locate_predictions(dt, ground_truth)
        dt_options = _dt_options(
            kind,
            gt,
            dt,
            located,
            drop_unknown_categories=drop_unknown_categories,
            allow_large_drop=allow_large_drop,
            category_map=category_map,
            result_prefix=result_prefix,
            yolo_layout=yolo_layout,
        )
        is_voc_results = located is not None and located.kind == "voc"
        if kind == "voc" and classes is None and is_voc_results and not isinstance(gt, GroundTruth):
            from deteval.io.voc import with_result_classes

            ground_truth = with_result_classes(ground_truth, dt, prefix=result_prefix)
        source = located.path if located is not None else dt
        detections = _as_dt(
            source, ground_truth, allow_large_drop=allow_large_drop, workers=workers, **dt_options
        )
        return ground_truth, detections, located

    ground_truth, detections, located = with_detections(ground_truth)
    chosen = None
    if kind == "voc" and not split and not isinstance(gt, GroundTruth):
        chosen, note = _split_of(gt, ground_truth, detections)
        if chosen is not None:
            ground_truth = _as_gt(gt, **gt_options, split=chosen, workers=workers)
            ground_truth = replace(ground_truth, warnings=(*ground_truth.warnings, note))
            ground_truth, detections, located = with_detections(ground_truth)
    if any(p.iou_type == "bbox" for p in protocols):
        require_boxes(detections)
    dt_read = located.path if located is not None and located.path != os.fspath(dt) else None
    return Inputs(
        ground_truth, detections, gt, dt, dt_read=dt_read, split=chosen, image_labels=labels, hierarchy=tree
    )


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
    image_labels: Any = None,
    hierarchy: Any = None,
    workers: int | str = 1,
) -> Inputs:
    """Load ground truth and detections as ``deteval evaluate`` does, and warn what was noticed.

    Parameters
    ----------
    gt : str, os.PathLike, dict or GroundTruth
        COCO JSON (path or parsed), VOC root or YOLO dataset.
    dt : str, os.PathLike, list or Detections, optional
        COCO results JSON, VOC result folder or YOLO prediction folder; a tool's output folder
        is looked into (:func:`deteval.io.locate_predictions`).
    split : str, optional
        VOC image set (``ImageSets/Main/<split>.txt``); VOC only. Without it, a root with
        several image sets is scored on the one the detections' images fit, or refused.
    area_from_box : bool
        COCO ground truth without ``area``: use ``w * h`` of the box (with a warning).
    drop_unknown_categories : bool
        Drop detections of categories not in the ground truth (a warning with their share)
        instead of failing; refused above 10% of the detections unless ``allow_large_drop``.
    yolo_layout : str, optional
        Column order of YOLO prediction rows (``"cls cx cy w h conf"`` or ``"cls conf cx cy w h"``).
    protocols : sequence of Protocol
        When one scores boxes, every detection must have one.
    category_map : {"index0", "index1", "coco91"}, mapping or path, optional
        How detection category ids name ground-truth categories (COCO results, YOLO
        predictions; see docs/inputs.md).
    allow_large_drop : bool
        With ``drop_unknown_categories``: drop any share (COCO results, YOLO predictions). With
        ``category_map``: accept a map that puts more than 10% of the detections on categories
        without ground-truth objects.
    classes : "voc", path or sequence of str, optional
        VOC class list (category ids 1..K in its order); result files of other classes are errors.
    result_prefix : str, optional
        VOC result file prefix (``comp4_det_test_``); default: detected from the file names.
    image_labels, hierarchy : path, optional
        Open Images' verified image-level labels (CSV, or COCO JSON with ``pos_labels`` /
        ``neg_labels``) and class hierarchy JSON, for ``openimages-challenge`` (docs/inputs.md).
        With ``gt`` an Open Images boxes ``.csv``, ``dt`` is a submission ``.csv``.
    workers : int or "auto"
        Threads that parse a COCO results file and a COCO instances file's annotations (default 1;
        ``"auto"``: by the file's size, at most the usable CPUs; the CLI passes its ``--workers``).
        The inputs are the same for every value.

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
        image_labels=image_labels,
        hierarchy=hierarchy,
        workers=workers,
    )
    _emit(inputs.warnings, InputWarning, stacklevel=2)
    return inputs
