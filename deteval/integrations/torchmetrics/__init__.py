"""torchmetrics' ``MeanAveragePrecision``, computed by deteval: the same numbers on every key.

* :class:`MeanAveragePrecision`: a ``torchmetrics.Metric`` (``forward``, ``.to()``,
  ``MetricCollection``, rank sync through its list states, Lightning logging) when torch and
  torchmetrics are installed; otherwise it is :class:`ArrayMeanAveragePrecision`.
* :class:`ArrayMeanAveragePrecision`: the same constructor, inputs and numbers on numpy arrays
  (no torch needed).

Both run :mod:`._engine`: torchmetrics' COCO datasets and parameters (its float32 default
thresholds included) scored by deteval's pycocotools-exact ``COCOeval``. ``docs/training-loop.md``
lists what is equal and what differs by design.
"""

from __future__ import annotations

import importlib.util

from deteval.integrations.torchmetrics._arrays import ArrayMeanAveragePrecision

__all__ = ["MeanAveragePrecision", "ArrayMeanAveragePrecision", "IS_METRIC"]

#: True when :class:`MeanAveragePrecision` is a ``torchmetrics.Metric`` (torch and torchmetrics found).
IS_METRIC = all(importlib.util.find_spec(name) is not None for name in ("torch", "torchmetrics"))

if IS_METRIC:
    from deteval.integrations.torchmetrics._metric import MeanAveragePrecision
else:  # pragma: no cover - exercised where torch is absent
    MeanAveragePrecision = ArrayMeanAveragePrecision  # type: ignore[misc,assignment]
