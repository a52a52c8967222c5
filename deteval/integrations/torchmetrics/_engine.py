"""The numbers of torchmetrics' ``MeanAveragePrecision``, computed on numpy arrays (no torch).

torchmetrics 1.x (``src/torchmetrics/detection/mean_ap.py`` and ``helpers.py``) keeps every
image's boxes, masks (as RLE), labels, scores, crowd flags and areas, and at ``compute()``
writes them as two COCO datasets, hands them to a ``COCOeval`` (pycocotools' or
faster-coco-eval's) with its own thresholds and reads ``stats``. This module writes the same
datasets from the same per-image arrays and runs deteval's pycocotools-exact ``COCOeval``
(:mod:`deteval.interop.cocoeval`), so the numbers are those torchmetrics returns, key by key.
Each reproduced behaviour of torchmetrics is named where it is reproduced (Notes). Nothing
here imports torch; :mod:`deteval.integrations.torchmetrics` wraps it as a ``Metric``.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from deteval._values import frozen
from deteval.errors import ConfigError, InputError
from deteval.interop.cocoeval import COCOeval

__all__ = [
    "BOX_FORMATS",
    "IOU_TYPES",
    "BACKENDS",
    "Settings",
    "float32_linspace",
    "to_xywh",
    "encode_masks",
    "compute_map",
    "check_batch",
    "read_image",
]

BOX_FORMATS = ("xyxy", "xywh", "cxcywh")
IOU_TYPES = ("bbox", "segm")
BACKENDS = ("pycocotools", "faster_coco_eval")

#: One image's RLE masks: ``((height, width), counts)`` per object, counts as pycocotools' bytes.
Rle = tuple[tuple[int, int], bytes]


def float32_linspace(start: float, stop: float, num: int) -> tuple[float, ...]:
    """``torch.linspace(start, stop, num).tolist()`` (float32 values, as Python floats).

    torch's CPU kernel steps from ``start`` for the first half and back from ``stop`` for the
    second, in float32 with one rounding per value (``start + step * i``); torchmetrics' default
    thresholds are these values, e.g. ``0.550000011920929`` where COCO has ``0.55``.

    Examples
    --------
    >>> float32_linspace(0.5, 0.95, 10)[1]
    0.550000011920929
    >>> float32_linspace(0.0, 1.0, 101)[1]
    0.009999999776482582
    """
    f32 = np.float32
    step = np.float64(f32((f32(stop) - f32(start)) / f32(num - 1)))
    index = np.arange(num, dtype=np.float64)
    half = num // 2
    values = np.where(
        index < half,
        np.float64(f32(start)) + step * index,
        np.float64(f32(stop)) - step * (num - 1 - index),
    ).astype(np.float32)
    return tuple(float(v) for v in values)


@frozen
class Settings:
    """torchmetrics' constructor arguments, checked and normalised.

    Attributes
    ----------
    box_format : {"xyxy", "xywh", "cxcywh"}
    iou_types : tuple of {"bbox", "segm"}
        One or both (in the given order); with both, result keys get ``bbox_`` / ``segm_``.
    iou_thresholds, rec_thresholds : tuple of float
        Default: torchmetrics' float32 ``torch.linspace`` grids (:func:`float32_linspace`).
    max_dets : tuple of 3 int, sorted
    class_metrics, extended_summary : bool
    average : {"macro", "micro"}
    backend : {"pycocotools", "faster_coco_eval"}
    """

    box_format: str = "xyxy"
    iou_types: tuple[str, ...] = ("bbox",)
    iou_thresholds: tuple[float, ...] = float32_linspace(0.5, 0.95, 10)
    rec_thresholds: tuple[float, ...] = float32_linspace(0.0, 1.0, 101)
    max_dets: tuple[int, ...] = (1, 10, 100)
    class_metrics: bool = False
    extended_summary: bool = False
    average: str = "macro"
    backend: str = "pycocotools"

    @classmethod
    def from_arguments(
        cls,
        box_format: str = "xyxy",
        iou_type: str | Sequence[str] = "bbox",
        iou_thresholds: Sequence[float] | None = None,
        rec_thresholds: Sequence[float] | None = None,
        max_detection_thresholds: Sequence[int] | None = None,
        class_metrics: bool = False,
        extended_summary: bool = False,
        average: str = "macro",
        backend: str = "pycocotools",
    ) -> Settings:
        """Check torchmetrics' arguments (one :class:`~deteval.errors.ConfigError` per problem).

        Examples
        --------
        >>> Settings.from_arguments(iou_type=("bbox", "segm"), max_detection_thresholds=[100, 1, 10]).max_dets
        (1, 10, 100)
        >>> Settings.from_arguments(backend="detectron2")
        Traceback (most recent call last):
        ...
        deteval.errors.ConfigError: MeanAveragePrecision: `backend` must be one of 'pycocotools', 'faster_coco_eval', found 'detectron2'
        """
        where = "MeanAveragePrecision"
        if box_format not in BOX_FORMATS:
            raise ConfigError(
                f"{where}: `box_format` must be one of {', '.join(map(repr, BOX_FORMATS))}, found {box_format!r}"
            )
        types = (iou_type,) if isinstance(iou_type, str) else tuple(iou_type)
        if not types or any(t not in IOU_TYPES for t in types) or len(set(types)) != len(types):
            raise ConfigError(
                f"{where}: `iou_type` must be 'bbox', 'segm' or a tuple of them (each once), found {iou_type!r}"
            )
        for name, value in (("class_metrics", class_metrics), ("extended_summary", extended_summary)):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: `{name}` must be a bool, found {value!r}")
        if average not in ("macro", "micro"):
            raise ConfigError(f"{where}: `average` must be 'macro' or 'micro', found {average!r}")
        if backend not in BACKENDS:
            raise ConfigError(
                f"{where}: `backend` must be one of {', '.join(map(repr, BACKENDS))}, found {backend!r}"
            )
        iou = _thresholds(where, "iou_thresholds", iou_thresholds)
        rec = _thresholds(where, "rec_thresholds", rec_thresholds)
        dets = (1, 10, 100) if max_detection_thresholds is None else tuple(max_detection_thresholds)
        if len(dets) != 3 or not all(isinstance(m, int | np.integer) and m > 0 for m in dets):
            raise ConfigError(
                f"{where}: `max_detection_thresholds` must be 3 positive ints (the summary reads "
                f"three), found {max_detection_thresholds!r}"
            )
        return cls(
            box_format=box_format,
            iou_types=types,
            iou_thresholds=iou if iou else float32_linspace(0.5, 0.95, 10),
            rec_thresholds=rec if rec else float32_linspace(0.0, 1.0, 101),
            max_dets=tuple(sorted(int(m) for m in dets)),
            class_metrics=class_metrics,
            extended_summary=extended_summary,
            average=average,
            backend=backend,
        )


def _thresholds(where: str, name: str, values: Sequence[float] | None) -> tuple[float, ...]:
    """The thresholds as floats; empty for None (torchmetrics' ``values or default``)."""
    if values is None:
        return ()
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
        raise ConfigError(f"{where}: `{name}` must be None or a list of floats in [0, 1], found {values!r}")
    out = tuple(float(v) for v in values)
    if any(not 0.0 <= v <= 1.0 for v in out):
        raise ConfigError(f"{where}: `{name}` must be None or a list of floats in [0, 1], found {values!r}")
    return out


def to_xywh(boxes: np.ndarray, box_format: str) -> np.ndarray:
    """Boxes as ``xywh`` with torchvision's ``box_convert`` arithmetic, in the array's dtype.

    Notes
    -----
    torchmetrics converts with ``torchvision.ops.box_convert`` before anything else: ``xyxy``
    as ``(x1, y1, x2 - x1, y2 - y1)``; ``cxcywh`` through ``xyxy`` (``cx - 0.5 * w`` ...,
    then the differences), so a width can move by a rounding step. Integer boxes stay
    integers except for ``cxcywh`` (float32, torch's default dtype).

    Examples
    --------
    >>> to_xywh(np.array([[1.0, 2.0, 4.0, 8.0]], np.float32), "xyxy").tolist()
    [[1.0, 2.0, 3.0, 6.0]]
    """
    if box_format == "xywh" or boxes.size == 0:
        return boxes
    if box_format == "cxcywh":
        if not np.issubdtype(boxes.dtype, np.floating):
            boxes = boxes.astype(np.float32)
        half = boxes.dtype.type(0.5)
        cx, cy, w, h = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
        boxes = np.stack([cx - half * w, cy - half * h, cx + half * w, cy + half * h], axis=-1)
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    return np.stack([x1, y1, x2 - x1, y2 - y1], axis=-1)


def encode_masks(masks: np.ndarray) -> list[Rle]:
    """Pycocotools' compressed RLE of binary (n, height, width) masks (none for shape ``(0,)``).

    Examples
    --------
    >>> encode_masks(np.array([[[0, 1], [1, 1]]]))
    [((2, 2), b'13')]
    >>> encode_masks(np.zeros((0,)))
    []
    """
    if masks.size == 0:
        return []
    rles = mask_utils.encode(np.asfortranarray(masks.transpose(1, 2, 0).astype(np.uint8)))
    return [((int(r["size"][0]), int(r["size"][1])), r["counts"]) for r in rles]


def _rle(mask: Rle) -> dict:
    return {"size": list(mask[0]), "counts": mask[1]}


@frozen
class _Side:
    """One side's per-image arrays, as torchmetrics keeps them (targets: crowds and areas)."""

    labels: Sequence[np.ndarray]
    boxes: Sequence[np.ndarray]
    masks: Sequence[Sequence[Rle]]
    scores: Sequence[np.ndarray] | None = None
    crowds: Sequence[np.ndarray] | None = None
    areas: Sequence[np.ndarray] | None = None


def _coco_dataset(side: _Side, categories: list[int], settings: Settings, *, micro: bool) -> dict:
    """The COCO dict torchmetrics builds of one side (``CocoBackend._get_coco_format``).

    Notes
    -----
    Reproduced from torchmetrics: images are numbered by position; with masks and no boxes an
    image without masks is left out (so detections on a target image without masks are never
    scored, and a target image without masks is not an image); an ``area`` that is not positive
    (targets without ``area``: 0) becomes the mask area (any ``segm`` in ``iou_type``) or the
    ``xywh`` box's ``w * h``; with both iou types, ``area_bbox`` and ``area_segm`` are kept
    beside it (only the detections' are swapped in later); micro averaging puts every object in
    class 0.
    """
    has_boxes = "bbox" in settings.iou_types and len(side.boxes) > 0
    has_masks = "segm" in settings.iou_types and len(side.masks) > 0
    both = len(settings.iou_types) > 1
    images: list[dict] = []
    annotations: list[dict] = []
    for image, labels in enumerate(side.labels):
        masks = side.masks[image] if has_masks else []
        if has_masks and not masks and not has_boxes:
            continue
        boxes = side.boxes[image].tolist() if has_boxes else []
        record: dict = {"id": image}
        if "segm" in settings.iou_types and masks:
            record["height"], record["width"] = masks[0][0]
        images.append(record)
        areas = side.areas[image].tolist() if side.areas is not None else None
        for k, label in enumerate(labels.tolist()):
            mask_area = float(mask_utils.area(_rle(masks[k]))) if masks else None
            box_area = boxes[k][2] * boxes[k][3] if has_boxes else None
            ann: dict = {
                "id": len(annotations) + 1,
                "image_id": image,
                "category_id": 0 if micro else label,
                "iscrowd": int(side.crowds[image][k]) if side.crowds is not None else 0,
            }
            if areas is not None and areas[k] > 0:
                ann["area"] = areas[k]
            else:
                ann["area"] = mask_area if "segm" in settings.iou_types else box_area
                if both:
                    ann["area_bbox"], ann["area_segm"] = box_area, mask_area
            if has_boxes:
                ann["bbox"] = boxes[k]
            if masks:
                ann["segmentation"] = _rle(masks[k])
            if side.scores is not None:
                ann["score"] = side.scores[image][k].item()
            annotations.append(ann)
    return {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": 0}] if micro else [{"id": c} for c in categories],
    }


def _run(gt: dict, dt: dict, iou_type: str, settings: Settings, cat_ids: list[int] | None = None) -> COCOeval:
    """Evaluate / accumulate / summarize with torchmetrics' parameters (float64 copies of its lists)."""
    if iou_type == "segm":
        gt, dt = _as_segm_datasets(gt, dt)
    evaluation = COCOeval(gt, dt, iou_type)
    evaluation.params.iouThrs = np.array(settings.iou_thresholds, dtype=np.float64)
    evaluation.params.recThrs = np.array(settings.rec_thresholds, dtype=np.float64)
    evaluation.params.maxDets = list(settings.max_dets)
    if cat_ids is not None:
        evaluation.params.catIds = cat_ids
    with contextlib.redirect_stdout(io.StringIO()):  # COCOeval prints its 12 lines, as pycocotools
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    if settings.backend == "faster_coco_eval":
        _as_faster_coco_eval(evaluation)
    return evaluation


def _as_segm_datasets(gt: dict, dt: dict) -> tuple[dict, dict]:
    """The datasets as deteval reads a mask evaluation (same numbers as pycocotools on torchmetrics').

    deteval takes a detection's area from its ``bbox`` when it has one (pycocotools' ``loadRes``
    rule), while torchmetrics sets the detections' ``area`` itself (the mask's under ``segm``):
    the boxes are dropped from the detections, so deteval measures the masks. A ground truth
    without a box (``iou_type="segm"`` alone) gets its mask's bounding box, which deteval
    requires and a mask evaluation does not read (the ``area`` is given).
    """
    anns = [
        ann if "bbox" in ann else {**ann, "bbox": mask_utils.toBbox(ann["segmentation"]).tolist()}
        for ann in gt["annotations"]
    ]
    dets = [{k: v for k, v in ann.items() if k != "bbox"} for ann in dt["annotations"]]
    return {**gt, "annotations": anns}, {**dt, "annotations": dets}


#: pycocotools' precision of a curve's first point when it is a true positive: 1 / (1 + eps).
_ONE_WITH_EPS = 1.0 / (1.0 + np.spacing(1.0))


def _as_faster_coco_eval(evaluation: COCOeval) -> None:
    """Turn pycocotools' ``eval["precision"]`` and ``stats`` into faster-coco-eval's (in place).

    Notes
    -----
    faster-coco-eval 1.x (``csrc/faster_eval_api/coco_eval/cocoeval.cpp``, ``core/cocoeval.py``)
    differs from pycocotools in two places torchmetrics reads:

    * precision is ``tp / (tp + fp)`` where pycocotools divides by ``tp + fp + eps``: the two
      agree except after one counted detection, where pycocotools has ``1 / (1 + eps)``
      (0.9999999999999998) and faster-coco-eval 1.0;
    * ``summarize`` reads every AP at the largest ``maxDets``, where pycocotools reads ``map``
      at 100 (-1 when 100 is not among ``max_detection_thresholds``).
    """
    precision = np.array(evaluation.eval["precision"], dtype=np.float64)
    precision[precision == _ONE_WITH_EPS] = 1.0
    evaluation.eval["precision"] = precision
    recall = evaluation.eval["recall"]
    p = evaluation.params
    last = len(p.maxDets) - 1

    def mean(values: np.ndarray) -> float:
        defined = values[values > -1]
        return float(np.mean(defined)) if defined.size else -1.0

    def at(iou: float) -> np.ndarray:
        return np.where(iou == p.iouThrs)[0]

    stats = [
        mean(precision[:, :, :, 0, last]),
        mean(precision[at(0.5)][:, :, :, 0, last]),
        mean(precision[at(0.75)][:, :, :, 0, last]),
        *(mean(precision[:, :, :, a, last]) for a in (1, 2, 3)),
        *(mean(recall[:, :, 0, m]) for m in range(len(p.maxDets))),
        *(mean(recall[:, :, a, last]) for a in (1, 2, 3)),
    ]
    evaluation.stats = np.array(stats, dtype=np.float64)


_STAT_KEYS = ("map", "map_50", "map_75", "map_small", "map_medium", "map_large")
_AREA_AR_KEYS = ("mar_small", "mar_medium", "mar_large")


def _stat_dict(stats: Sequence[float], prefix: str, settings: Settings) -> dict:
    names = [*_STAT_KEYS, *(f"mar_{m}" for m in settings.max_dets), *_AREA_AR_KEYS]
    return {
        f"{prefix}{name}": np.array([value], dtype=np.float32)
        for name, value in zip(names, stats, strict=True)
    }


def compute_map(
    settings: Settings,
    *,
    gt_labels: Sequence[np.ndarray],
    gt_boxes: Sequence[np.ndarray],
    gt_masks: Sequence[Sequence[Rle]],
    gt_crowds: Sequence[np.ndarray],
    gt_areas: Sequence[np.ndarray],
    dt_labels: Sequence[np.ndarray],
    dt_boxes: Sequence[np.ndarray],
    dt_masks: Sequence[Sequence[Rle]],
    dt_scores: Sequence[np.ndarray],
) -> dict[str, Any]:
    """Torchmetrics' ``compute()`` dict, as numpy values (shapes and dtypes as its tensors).

    Parameters
    ----------
    settings : Settings
    gt_labels, gt_crowds, gt_areas, dt_labels, dt_scores : list of (n,) arrays, one per image
    gt_boxes, dt_boxes : list of (n, 4) ``xywh`` arrays (:func:`to_xywh`); empty list without bbox
    gt_masks, dt_masks : list of lists of RLE masks (:func:`encode_masks`); empty list without segm

    Returns
    -------
    dict
        ``map`` ... ``mar_large`` (float32 arrays of shape (1,)), ``map_per_class`` and
        ``mar_<last>_per_class`` (float32), ``ious`` (``{(image, class): float32 (D, G) array or
        []}``), ``precision``, ``recall``, ``scores`` (float64, -1 where undefined) with
        ``extended_summary``, ``classes`` (int32). With both iou types every key but
        ``classes`` is prefixed ``bbox_`` / ``segm_``.

    Notes
    -----
    Reproduced from torchmetrics: when either side has no image at all, the twelve stats are -1
    and the per-class and extended keys are absent; ``class_metrics`` evaluates each class alone
    on datasets rebuilt without micro averaging, and the rebuilt datasets are the ones the
    following iou type is scored on (with ``average="micro"`` and both types, ``segm_`` headline
    numbers are per class, not micro); with both types the detections' ``area`` is switched to
    the type's (``area_bbox`` / ``area_segm``) before each evaluation, the targets' is not.
    """
    categories = sorted({int(c) for labels in [*dt_labels, *gt_labels] for c in labels.tolist()})
    gt_side = _Side(gt_labels, gt_boxes, gt_masks, crowds=gt_crowds, areas=gt_areas)
    dt_side = _Side(dt_labels, dt_boxes, dt_masks, scores=dt_scores)

    def datasets(micro: bool) -> tuple[dict, dict]:
        return (
            _coco_dataset(gt_side, categories, settings, micro=micro),
            _coco_dataset(dt_side, categories, settings, micro=micro),
        )

    gt, dt = datasets(settings.average == "micro")
    out: dict[str, Any] = {}
    last = settings.max_dets[-1]
    both = len(settings.iou_types) > 1
    for iou_type in settings.iou_types:
        prefix = f"{iou_type}_" if both else ""
        if both:
            for ann in dt["annotations"]:
                ann["area"] = ann[f"area_{iou_type}"]
        if not gt["images"] or not dt["images"]:
            out.update(_stat_dict([-1.0] * 12, prefix, settings))
            continue
        evaluation = _run(gt, dt, iou_type, settings)
        out.update(_stat_dict(evaluation.stats.tolist(), prefix, settings))
        if settings.extended_summary:
            out[f"{prefix}ious"] = {
                key: (np.asarray(value, dtype=np.float32) if isinstance(value, np.ndarray) else value)
                for key, value in evaluation.ious.items()
            }
            for name in ("precision", "recall", "scores"):
                out[f"{prefix}{name}"] = np.asarray(evaluation.eval[name], dtype=np.float64)
        if settings.class_metrics:
            gt, dt = datasets(False)
            per_class = [_run(gt, dt, iou_type, settings, [c]).stats for c in categories]
            out[f"{prefix}map_per_class"] = np.array([s[0] for s in per_class], dtype=np.float32)
            out[f"{prefix}mar_{last}_per_class"] = np.array([s[8] for s in per_class], dtype=np.float32)
        else:
            out[f"{prefix}map_per_class"] = np.array([-1.0], dtype=np.float32)
            out[f"{prefix}mar_{last}_per_class"] = np.array([-1.0], dtype=np.float32)
    out["classes"] = np.array(categories, dtype=np.int32)
    return out


def check_batch(preds: Sequence[Any], target: Sequence[Any], settings: Settings) -> None:
    """Torchmetrics' input checks, with deteval's messages (the image and the field named)."""
    if isinstance(preds, dict) or not isinstance(preds, Sequence):
        raise InputError(
            f"MeanAveragePrecision.update: `preds` must be a list of dicts, found {type(preds).__name__}"
        )
    if isinstance(target, dict) or not isinstance(target, Sequence):
        raise InputError(
            f"MeanAveragePrecision.update: `target` must be a list of dicts, found {type(target).__name__}"
        )
    if len(preds) != len(target):
        raise InputError(
            f"MeanAveragePrecision.update: `preds` has {len(preds)} images and `target` {len(target)}; "
            f"expected one dict per image on both sides"
        )
    fields = [{"bbox": "boxes", "segm": "masks"}[t] for t in settings.iou_types]
    for side, items, needed in (
        ("preds", preds, [*fields, "labels", "scores"]),
        ("target", target, [*fields, "labels"]),
    ):
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError(
                    f"MeanAveragePrecision.update: {side}[{i}] must be a dict, found {type(item).__name__}"
                )
            missing = [k for k in needed if k not in item]
            if missing:
                raise InputError(
                    f"MeanAveragePrecision.update: {side}[{i}] has no {', '.join(map(repr, missing))}; "
                    f"expected the keys {', '.join(map(repr, needed))}"
                )


def _array(value: Any) -> np.ndarray:
    """A numpy array of ``value``; tensors through ``.detach().cpu().numpy()`` (no torch import)."""
    if all(hasattr(value, name) for name in ("detach", "cpu", "numpy")):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def read_image(item: dict, side: str, index: int, settings: Settings) -> dict[str, Any]:
    """One image's arrays as torchmetrics keeps them: ``xywh`` boxes, RLE masks, defaults filled.

    Parameters
    ----------
    item : dict
        ``labels``; ``scores`` (preds); ``boxes`` (n, 4) for bbox, ``masks`` (n, H, W) binary
        for segm (shape ``(0,)`` for none); targets optionally ``iscrowd`` and ``area``. Tensors,
        numpy arrays or lists.
    side : {"preds", "target"}
    index : int
        The image's position in the batch (for messages).
    settings : Settings

    Returns
    -------
    dict
        ``labels``, ``boxes`` (absent without bbox), ``masks`` (list of RLE, absent without segm),
        ``scores`` (preds) or ``iscrowd`` and ``area`` (targets: zeros when not given).

    Raises
    ------
    InputError
        A field of the wrong shape or kind (the field and the image named).
    """
    where = f"MeanAveragePrecision.update: {side}[{index}]"
    labels = _array(item["labels"])
    if labels.size == 0:
        labels = labels.reshape(0).astype(np.int64)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise InputError(
            f"{where}: `labels` has shape {labels.shape} and dtype {labels.dtype}; expected (n,) integers"
        )
    n = len(labels)
    out: dict[str, Any] = {"labels": labels}
    if "bbox" in settings.iou_types:
        out["boxes"] = _read_boxes(item["boxes"], n, where, settings.box_format)
    if "segm" in settings.iou_types:
        out["masks"] = _read_masks(item["masks"], n, where)
    if side == "preds":
        out["scores"] = _read_scores(item["scores"], n, where)
        return out
    for name in ("iscrowd", "area"):
        value = _array(item[name]) if name in item else np.zeros(n, dtype=labels.dtype)
        if value.size == 0:
            value = value.reshape(0)
        if value.shape != (n,) or value.dtype.kind not in "biuf":
            raise InputError(
                f"{where}: `{name}` has shape {value.shape}; expected ({n},) numbers, one per label"
            )
        out[name] = value
    if not np.isin(out["iscrowd"], (0, 1)).all():
        raise InputError(f"{where}: `iscrowd` holds values other than 0 and 1; expected 0 or 1 per label")
    if not np.isfinite(out["area"].astype(np.float64)).all():
        raise InputError(f"{where}: `area` holds NaN or inf; expected finite areas (or 0: computed)")
    return out


def _read_boxes(value: Any, n: int, where: str, box_format: str) -> np.ndarray:
    boxes = _array(value)
    if boxes.size == 0:
        boxes = boxes.reshape(0, 4)
    if boxes.shape != (n, 4) or boxes.dtype.kind not in "iuf":
        raise InputError(
            f"{where}: `boxes` has shape {boxes.shape}; expected ({n}, 4) numbers, one row per label"
        )
    if not np.isfinite(boxes).all():
        raise InputError(f"{where}: `boxes` holds NaN or inf; expected finite coordinates")
    xywh = to_xywh(boxes, box_format)
    negative = np.flatnonzero((xywh[:, 2] < 0) | (xywh[:, 3] < 0))
    if len(negative):
        row = negative[0]
        raise InputError(
            f"{where}: `boxes` row {row} is {boxes[row].tolist()}, a negative width or height as "
            f"box_format={box_format!r} ({len(negative)} such row(s)); expected {box_format} boxes "
            f"(torchmetrics would score them silently)"
        )
    return xywh


def _read_masks(value: Any, n: int, where: str) -> list[Rle]:
    masks = _array(value)
    if masks.size == 0 and n == 0:
        return []
    if masks.ndim != 3 or len(masks) != n:
        raise InputError(
            f"{where}: `masks` has shape {masks.shape}; expected ({n}, height, width) binary masks, "
            f"one per label (or shape (0,) for none)"
        )
    if not (masks.dtype == bool or np.isin(masks, (0, 1)).all()):
        raise InputError(f"{where}: `masks` has values other than 0 and 1; expected binary masks")
    return encode_masks(masks)


def _read_scores(value: Any, n: int, where: str) -> np.ndarray:
    scores = _array(value)
    if scores.size == 0:
        scores = scores.reshape(0).astype(np.float32)
    if scores.shape != (n,) or scores.dtype.kind != "f":
        raise InputError(
            f"{where}: `scores` has shape {scores.shape} and dtype {scores.dtype}; expected ({n},) floats"
        )
    if not np.isfinite(scores).all():
        raise InputError(f"{where}: `scores` holds NaN or inf; expected finite scores")
    return scores
