"""``MeanAveragePrecision`` as a ``torchmetrics.Metric`` (imported only when torch and torchmetrics are)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from torchmetrics import Metric

from deteval.integrations.torchmetrics._engine import Settings, check_batch, compute_map, read_image

__all__ = ["MeanAveragePrecision"]

#: The list states, one tensor per image each (torchmetrics' ``dist_reduce_fx=None``: gathered
#: over ranks element by element, images interleaved by rank as torchmetrics' own are).
_STATES = (
    "detection_box",
    "detection_scores",
    "detection_labels",
    "detection_mask_counts",
    "detection_mask_shapes",
    "groundtruth_box",
    "groundtruth_labels",
    "groundtruth_crowds",
    "groundtruth_area",
    "groundtruth_mask_counts",
    "groundtruth_mask_shapes",
)


def _pack_masks(masks: list) -> tuple[np.ndarray, np.ndarray]:
    """RLE masks as tensors-to-be: the counts' bytes end to end, and (height, width, length) rows."""
    counts = b"".join(rle[1] for rle in masks)
    shapes = np.array([[*rle[0], len(rle[1])] for rle in masks], dtype=np.int64).reshape(-1, 3)
    return np.frombuffer(counts, dtype=np.uint8).copy(), shapes


def _unpack_masks(counts: torch.Tensor, shapes: torch.Tensor) -> list:
    data = counts.cpu().numpy().tobytes()
    out, start = [], 0
    for height, width, length in shapes.cpu().numpy().reshape(-1, 3).tolist():
        out.append(((int(height), int(width)), data[start : start + length]))
        start += length
    return out


def _to_tensor(value: Any) -> Any:
    """Torchmetrics' output types: numpy arrays become tensors (in dicts too); ``[]`` stays."""
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, dict):
        return {key: _to_tensor(v) for key, v in value.items()}
    return value


class MeanAveragePrecision(Metric):
    """torchmetrics' ``MeanAveragePrecision``, a ``torchmetrics.Metric`` computed by deteval.

    Same constructor, inputs, states semantics and ``compute()`` dict as
    ``torchmetrics.detection.MeanAveragePrecision`` (torchmetrics 1.x): the numbers are equal
    on every key, extended summary included (``docs/training-loop.md``).

    Parameters
    ----------
    box_format : {"xyxy", "xywh", "cxcywh"}
    iou_type : "bbox", "segm" or a tuple of both
        With both, every key but ``classes`` is prefixed ``bbox_`` / ``segm_``.
    iou_thresholds, rec_thresholds : list of float, optional
        Default: torchmetrics' ``torch.linspace(0.5, 0.95, 10).tolist()`` and
        ``torch.linspace(0.0, 1.0, 101).tolist()`` (float32 values).
    max_detection_thresholds : list of 3 int, optional
        Default ``[1, 10, 100]``, sorted.
    class_metrics, extended_summary : bool
    average : {"macro", "micro"}
    backend : {"pycocotools", "faster_coco_eval"}
        Whose numbers: they differ in ``map`` when 100 is not among the max detections
        (pycocotools: -1; faster-coco-eval: AP at the largest).
    **kwargs
        ``torchmetrics.Metric``'s (``dist_sync_on_step``, ``process_group``, ...).

    Examples
    --------
    >>> import torch
    >>> metric = MeanAveragePrecision()
    >>> preds = [{"boxes": torch.tensor([[258.0, 41.0, 606.0, 285.0]]), "scores": torch.tensor([0.536]),
    ...           "labels": torch.tensor([0])}]
    >>> target = [{"boxes": torch.tensor([[214.0, 41.0, 562.0, 285.0]]), "labels": torch.tensor([0])}]
    >>> out = metric(preds, target)  # forward: this batch's numbers, and the batch is kept
    >>> round(float(out["map"]), 4), float(out["map_50"]), float(out["map_small"])
    (0.6, 1.0, -1.0)
    """

    is_differentiable: bool = False
    higher_is_better: bool | None = True
    full_state_update: bool = False
    plot_lower_bound: float = 0.0
    plot_upper_bound: float = 1.0
    __jit_unused_properties__: ClassVar[list[str]] = [
        "is_differentiable",
        "higher_is_better",
        "plot_lower_bound",
        "plot_upper_bound",
        "plot_legend_name",
        "metric_state",
        "_update_called",
    ]

    detection_box: list[torch.Tensor]
    detection_scores: list[torch.Tensor]
    detection_labels: list[torch.Tensor]
    detection_mask_counts: list[torch.Tensor]
    detection_mask_shapes: list[torch.Tensor]
    groundtruth_box: list[torch.Tensor]
    groundtruth_labels: list[torch.Tensor]
    groundtruth_crowds: list[torch.Tensor]
    groundtruth_area: list[torch.Tensor]
    groundtruth_mask_counts: list[torch.Tensor]
    groundtruth_mask_shapes: list[torch.Tensor]

    def __init__(
        self,
        box_format: str = "xyxy",
        iou_type: str | Sequence[str] = "bbox",
        iou_thresholds: Sequence[float] | None = None,
        rec_thresholds: Sequence[float] | None = None,
        max_detection_thresholds: Sequence[int] | None = None,
        class_metrics: bool = False,
        extended_summary: bool = False,
        average: str = "macro",
        backend: str = "pycocotools",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.settings = Settings.from_arguments(
            box_format,
            iou_type,
            iou_thresholds,
            rec_thresholds,
            max_detection_thresholds,
            class_metrics,
            extended_summary,
            average,
            backend,
        )
        s = self.settings
        self.box_format, self.iou_type = s.box_format, s.iou_types
        self.iou_thresholds, self.rec_thresholds = list(s.iou_thresholds), list(s.rec_thresholds)
        self.max_detection_thresholds = list(s.max_dets)
        self.class_metrics, self.extended_summary = s.class_metrics, s.extended_summary
        self.average, self.backend = s.average, s.backend
        for name in _STATES:
            self.add_state(name, default=[], dist_reduce_fx=None)

    def update(self, preds: Sequence[dict], target: Sequence[dict]) -> None:
        """Keep a batch: torchmetrics' per-image dicts (tensors; numpy arrays and lists also accepted)."""
        check_batch(preds, target, self.settings)
        read = [
            (read_image(p, "preds", i, self.settings), read_image(t, "target", i, self.settings))
            for i, (p, t) in enumerate(zip(preds, target, strict=True))
        ]
        device = self.device

        def keep(state: str, value: np.ndarray) -> None:
            getattr(self, state).append(torch.from_numpy(np.ascontiguousarray(value)).to(device))

        for dt, gt in read:
            for prefix, image in (("detection", dt), ("groundtruth", gt)):
                keep(f"{prefix}_labels", image["labels"])
                if "boxes" in image:
                    keep(f"{prefix}_box", image["boxes"])
                if "masks" in image:
                    counts, shapes = _pack_masks(image["masks"])
                    keep(f"{prefix}_mask_counts", counts)
                    keep(f"{prefix}_mask_shapes", shapes)
            keep("detection_scores", dt["scores"])
            keep("groundtruth_crowds", gt["iscrowd"])
            keep("groundtruth_area", gt["area"])

    def compute(self) -> dict:
        """Torchmetrics' result dict: float32 tensors, -1 where undefined (see the class doc)."""

        def arrays(states: list[torch.Tensor]) -> list[np.ndarray]:
            return [t.detach().cpu().numpy() for t in states]

        def masks(counts: list[torch.Tensor], shapes: list[torch.Tensor]) -> list:
            return [_unpack_masks(c, s) for c, s in zip(counts, shapes, strict=True)]

        out = compute_map(
            self.settings,
            gt_labels=arrays(self.groundtruth_labels),
            gt_boxes=arrays(self.groundtruth_box),
            gt_masks=masks(self.groundtruth_mask_counts, self.groundtruth_mask_shapes),
            gt_crowds=arrays(self.groundtruth_crowds),
            gt_areas=arrays(self.groundtruth_area),
            dt_labels=arrays(self.detection_labels),
            dt_boxes=arrays(self.detection_box),
            dt_masks=masks(self.detection_mask_counts, self.detection_mask_shapes),
            dt_scores=arrays(self.detection_scores),
        )
        return {key: _to_tensor(value) for key, value in out.items()}
