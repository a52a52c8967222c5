"""``MeanAveragePrecision`` with torchmetrics' constructor, inputs and ``compute()`` keys.

A drop-in for ``torchmetrics.detection.MeanAveragePrecision`` (pycocotools backend) computed by
:class:`deteval.Evaluator` under the ``coco-pycocotools`` protocol, so the numbers are
pycocotools' own. torchmetrics itself is not needed; torch is optional: ``compute()`` returns
tensors when torch is installed, else Python floats (scalars) and numpy arrays.

Semantics reproduced from torchmetrics (``src/torchmetrics/detection/mean_ap.py``):

* images are numbered by position over all updates; classes are the labels seen in preds and
  targets (``classes``);
* a target ``area`` that is missing or not positive is replaced by the box's ``w * h`` (mask
  area for ``segm``);
* the summary is ``COCOeval.summarize``: ``map`` at maxDets=100 whatever
  ``max_detection_thresholds`` says, the rest at its third value; keys ``mar_<m>`` follow the
  thresholds; -1 where undefined;
* ``map_per_class`` / ``mar_<last>_per_class``: -1 (one value) unless ``class_metrics``;
  per class, pycocotools' ``stats[0]`` and ``stats[8]`` for that class alone;
* ``average="micro"``: every label mapped to one class for the headline numbers (per-class
  values stay per class);
* ``extended_summary``: adds ``precision``, ``recall``, ``scores`` (pycocotools' arrays, -1
  where undefined). Not reproduced: ``ious`` (deteval never builds IoU matrices per image).

Differences, by decision: boxes are converted and measured in float64 (torchmetrics converts
``xyxy`` to ``xywh`` in the tensors' dtype, usually float32, which can move an IoU that sits
exactly on a threshold); ``rec_thresholds`` other than COCO's 101 points are refused (not a
protocol field); ``backend`` is accepted and checked but the numbers are always pycocotools'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.evaluate import EvalResult
from deteval.evaluator import Evaluator
from deteval.protocol import COCO_RECALL_THRESHOLDS, get_protocol
from deteval.summary import mean_defined

__all__ = ["MeanAveragePrecision"]

_HEADLINE = (
    ("AP", "map"),
    ("AP50", "map_50"),
    ("AP75", "map_75"),
    ("APs", "map_small"),
    ("APm", "map_medium"),
    ("APl", "map_large"),
)
_AREA_AR = (("ARs", "mar_small"), ("ARm", "mar_medium"), ("ARl", "mar_large"))


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _scalar(value: float) -> Any:
    torch = _torch()
    value32 = np.float32(-1.0 if value != value else value)  # torchmetrics' dtype: float32
    return float(value32) if torch is None else torch.tensor(value32, dtype=torch.float32)


def _vector(values: np.ndarray, dtype: str = "float32") -> Any:
    values = np.asarray(values)
    if dtype == "float32":
        values = np.where(np.isnan(values), -1.0, values).astype(np.float32)
    else:
        values = values.astype(np.int32)
    torch = _torch()
    if torch is not None:
        tensor = torch.from_numpy(np.ascontiguousarray(values))
        return tensor.squeeze() if tensor.numel() == 1 else tensor
    if values.size == 1:
        return float(values.reshape(-1)[0]) if dtype == "float32" else int(values.reshape(-1)[0])
    if dtype == "float32" and values.ndim > 1:
        return values
    return values


def _array(values: np.ndarray) -> Any:
    """Pycocotools' float64 array (-1 where undefined), as a tensor when torch is installed."""
    values = np.where(np.isnan(values), -1.0, values)
    torch = _torch()
    return values if torch is None else torch.from_numpy(values)


class MeanAveragePrecision:
    """torchmetrics' ``MeanAveragePrecision``, computed by deteval (pycocotools' numbers).

    Parameters
    ----------
    box_format : {"xyxy", "xywh", "cxcywh"}
    iou_type : {"bbox", "segm"}
    iou_thresholds : list of float, optional
        Default: COCO's ``np.linspace(0.5, 0.95, 10)``.
    rec_thresholds : list of float, optional
        Only COCO's 101 points (the default) are supported.
    max_detection_thresholds : list of 3 int, optional
        Default ``[1, 10, 100]``; sorted, as torchmetrics does.
    class_metrics, extended_summary : bool
    average : {"macro", "micro"}
    backend : {"pycocotools", "faster_coco_eval"}
        Accepted for compatibility; the numbers are pycocotools' either way.

    Examples
    --------
    >>> metric = MeanAveragePrecision()
    >>> metric.update([{"boxes": [[258.0, 41.0, 606.0, 285.0]], "scores": [0.536], "labels": [0]}],
    ...               [{"boxes": [[214.0, 41.0, 562.0, 285.0]], "labels": [0]}])
    >>> out = metric.compute()
    >>> round(float(out["map"]), 4), float(out["map_50"]), float(out["map_small"]), int(out["classes"])
    (0.6, 1.0, -1.0, 0)
    """

    def __init__(
        self,
        box_format: str = "xyxy",
        iou_type: str = "bbox",
        iou_thresholds: Sequence[float] | None = None,
        rec_thresholds: Sequence[float] | None = None,
        max_detection_thresholds: Sequence[int] | None = None,
        class_metrics: bool = False,
        extended_summary: bool = False,
        average: str = "macro",
        backend: str = "pycocotools",
        **kwargs: Any,
    ) -> None:
        for name, value in (("class_metrics", class_metrics), ("extended_summary", extended_summary)):
            if not isinstance(value, bool):
                raise ConfigError(f"MeanAveragePrecision: `{name}` must be a bool, found {value!r}")
        if average not in ("macro", "micro"):
            raise ConfigError(
                f"MeanAveragePrecision: `average` must be 'macro' or 'micro', found {average!r}"
            )
        if backend not in ("pycocotools", "faster_coco_eval"):
            raise ConfigError(
                f"MeanAveragePrecision: `backend` must be 'pycocotools' or 'faster_coco_eval', "
                f"found {backend!r}"
            )
        if rec_thresholds is not None and not np.array_equal(
            np.asarray(rec_thresholds, np.float64), np.asarray(COCO_RECALL_THRESHOLDS)
        ):
            raise ConfigError(
                "MeanAveragePrecision: rec_thresholds other than COCO's 101 points "
                "np.linspace(0, 1, 101) are not supported; expected None"
            )
        max_dets = sorted(int(m) for m in (max_detection_thresholds or (1, 10, 100)))
        if len(max_dets) != 3:
            raise ConfigError(
                f"MeanAveragePrecision: max_detection_thresholds must have 3 values (the "
                f"summary reads three), found {max_dets}"
            )
        changes: dict = {"max_dets": tuple(max_dets), "iou_type": iou_type}
        if iou_thresholds is not None:
            changes["iou_thresholds"] = tuple(float(t) for t in iou_thresholds)
        self.protocol = get_protocol("coco-pycocotools").replace(**changes)
        self.box_format, self.iou_type = box_format, iou_type
        self.max_detection_thresholds = max_dets
        self.class_metrics, self.extended_summary = class_metrics, extended_summary
        self.average, self.backend = average, backend
        self._macro = Evaluator(self.protocol, box_format=box_format, iou_type=iou_type)
        self._micro = (
            Evaluator(self.protocol, box_format=box_format, iou_type=iou_type) if average == "micro" else None
        )

    def reset(self) -> None:
        """Forget every update."""
        self._macro.reset()
        if self._micro is not None:
            self._micro.reset()

    def update(self, preds: Sequence[Mapping], target: Sequence[Mapping]) -> None:
        """Add a batch (torchmetrics' per-image dicts; tensors, arrays or lists)."""
        target = [self._with_areas(t) for t in target]
        self._macro.update(preds, target)
        if self._micro is not None:
            self._micro.update([_one_class(p) for p in preds], [_one_class(t) for t in target])

    def _with_areas(self, item: Mapping) -> Mapping:
        """Torchmetrics' rule: an ``area`` that is absent or <= 0 is computed (box or mask)."""
        if not isinstance(item, Mapping) or "area" not in item:
            return item
        from deteval.evaluator import _to_numpy

        area = _to_numpy(item["area"]).astype(np.float64).reshape(-1)
        missing = ~(area > 0)
        if not missing.any():
            return item
        if self.iou_type == "segm" and "masks" in item:
            masks = _to_numpy(item["masks"])
            computed = masks.reshape(len(masks), -1).astype(bool).sum(axis=1).astype(np.float64)
        else:
            box = _to_numpy(item["boxes"]).astype(np.float64).reshape(-1, 4)
            if self.box_format == "xyxy":
                computed = (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])
            else:
                computed = box[:, 2] * box[:, 3]
        if computed.shape != area.shape:
            return item  # the Evaluator names the shape problem
        return {**item, "area": np.where(missing, computed, area)}

    def compute(self) -> dict:
        """Torchmetrics' result dict (tensors with torch installed, else floats / numpy arrays)."""
        macro = self._macro.compute()
        head = self._micro.compute() if self._micro is not None else macro
        out: dict = {}
        for ours, theirs in _HEADLINE:
            out[theirs] = _scalar(head.metrics[ours])
        for m in self.max_detection_thresholds:
            out[f"mar_{m}"] = _scalar(head.metrics[f"AR{m}"])
        for ours, theirs in _AREA_AR:
            out[theirs] = _scalar(head.metrics[ours])
        last = self.max_detection_thresholds[-1]
        if self.class_metrics:
            ap, ar = self._per_class(macro)
            out["map_per_class"], out[f"mar_{last}_per_class"] = _vector(ap), _vector(ar)
        else:
            out["map_per_class"] = _vector(np.array([-1.0]))
            out[f"mar_{last}_per_class"] = _vector(np.array([-1.0]))
        if self.extended_summary:
            for name in ("precision", "recall", "scores"):
                out[name] = _array(getattr(head, name))
        out["classes"] = _vector(np.array(macro.category_ids, dtype=np.int64), "int32")
        return out

    def _per_class(self, result: EvalResult) -> tuple:
        """Pycocotools' stats[0] and stats[8] of each class evaluated alone."""
        max_dets = list(self.max_detection_thresholds)
        n_class = len(result.category_ids)
        if 100 in max_dets:
            m = max_dets.index(100)
            ap = np.array([mean_defined(result.precision[:, :, k, 0, m]) for k in range(n_class)])
        else:
            ap = np.full(n_class, np.nan)
        ar = np.array([mean_defined(result.recall[:, k, 0, 2]) for k in range(n_class)])
        return ap, ar

    def __repr__(self) -> str:
        return f"MeanAveragePrecision(iou_type={self.iou_type!r}, box_format={self.box_format!r})"


def _one_class(item: Mapping) -> Mapping:
    """The item with every label 0 (torchmetrics' micro averaging)."""
    if not isinstance(item, Mapping) or "labels" not in item:
        return item
    from deteval.evaluator import _to_numpy

    return {**item, "labels": np.zeros(_to_numpy(item["labels"]).shape, dtype=np.int64)}
