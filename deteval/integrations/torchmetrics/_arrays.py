"""``MeanAveragePrecision`` without torch: the same numbers, numpy arrays in and out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.integrations.torchmetrics._engine import Settings, check_batch, compute_map, read_image

__all__ = ["ArrayMeanAveragePrecision"]


def _plain(value: Any) -> Any:
    """Torchmetrics squeezes one-element results: here a Python float (int for ``classes``)."""
    if isinstance(value, np.ndarray) and value.size == 1:
        return value.reshape(-1)[0].item()
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    return value


class ArrayMeanAveragePrecision:
    """torchmetrics' ``MeanAveragePrecision`` on numpy arrays or lists (torch not needed).

    The constructor, inputs and ``compute()`` keys and numbers of the ``torchmetrics.Metric``
    :class:`deteval.integrations.torchmetrics.MeanAveragePrecision` (which is this class when
    torch or torchmetrics is not installed); values are Python floats (one-element results) and
    numpy arrays instead of tensors. Not a ``Metric``: no ``forward``, ``.to()`` or rank sync.

    Examples
    --------
    >>> metric = ArrayMeanAveragePrecision()
    >>> metric.update([{"boxes": [[258.0, 41.0, 606.0, 285.0]], "scores": [0.536], "labels": [0]}],
    ...               [{"boxes": [[214.0, 41.0, 562.0, 285.0]], "labels": [0]}])
    >>> out = metric.compute()
    >>> round(out["map"], 4), out["map_50"], out["map_small"], out["classes"]
    (0.6, 1.0, -1.0, 0)
    """

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
    ) -> None:
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
        self.reset()

    def reset(self) -> None:
        """Forget every update."""
        self._images: dict[str, list] = {name: [] for name in ("dt", "gt")}

    def update(self, preds: Sequence[dict], target: Sequence[dict]) -> None:
        """Keep a batch: torchmetrics' per-image dicts (numpy arrays, lists or tensors)."""
        check_batch(preds, target, self.settings)
        read = [
            (read_image(p, "preds", i, self.settings), read_image(t, "target", i, self.settings))
            for i, (p, t) in enumerate(zip(preds, target, strict=True))
        ]
        for dt, gt in read:
            self._images["dt"].append(dt)
            self._images["gt"].append(gt)

    def compute(self) -> dict:
        """Torchmetrics' result dict with numpy values (one-element results as Python numbers)."""
        dt, gt = self._images["dt"], self._images["gt"]

        def column(images: list, name: str) -> list:
            return [image[name] for image in images if name in image]

        out = compute_map(
            self.settings,
            gt_labels=column(gt, "labels"),
            gt_boxes=column(gt, "boxes"),
            gt_masks=column(gt, "masks"),
            gt_crowds=column(gt, "iscrowd"),
            gt_areas=column(gt, "area"),
            dt_labels=column(dt, "labels"),
            dt_boxes=column(dt, "boxes"),
            dt_masks=column(dt, "masks"),
            dt_scores=column(dt, "scores"),
        )
        return {key: _plain(value) for key, value in out.items()}

    def __repr__(self) -> str:
        return f"ArrayMeanAveragePrecision(iou_type={self.settings.iou_types!r}, box_format={self.settings.box_format!r})"
