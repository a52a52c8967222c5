"""The outcome of scoring: :class:`EvalResult`."""

from __future__ import annotations

from dataclasses import field
from functools import cached_property
from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.evaluate.table import MatchTable
from deteval.protocol import Protocol
from deteval.summary import none_if_nan


@frozen(eq=False)
class EvalResult:
    """The outcome of :func:`evaluate`.

    Attributes
    ----------
    protocol : Protocol
    metrics : dict
        Headline numbers (``AP``, ``AP50``, ... or ``mAP``); NaN where undefined.
    per_class : list of dict
        ``{category_id, name, AP, num_gt, num_det}`` then the class's value of each headline
        term (``AP50``, ``AP75``, ``APs`` ... ``AR1``, ``AR10``, ``AR100`` ...:
        :func:`deteval.summary.per_class_terms`); NaN where undefined (a class without ground
        truth).
    precision, scores : float64 (n_iou_thr, n_recall_thr, n_class, n_area, n_max_dets)
        pycocotools' axis order (T x R x K x A x M); NaN where pycocotools stores -1.
    recall : float64 (n_iou_thr, n_class, n_area, n_max_dets)
    ap : float64 (n_iou_thr, n_class, n_area, n_max_dets)
    category_ids : tuple of int
    table : MatchTable
        Who matched whom (for explanations and PR curves; see :mod:`deteval.analysis`).
    warnings : tuple of str
        Counted warnings about the input (``--strict`` makes them errors).
    notes : tuple of str
        What the protocol defines for this input that a reader should know (classes without
        ground truth); informational, never an error.
    inputs : dict
    image_ids, annotation_ids : int64 arrays
        The ground truth's image ids and annotation ids (to name matches).
    best_f1 : dict
        Best-F1 operating points per class and overall
        (:func:`deteval.operating_points.best_f1_points`); NaN where undefined. Computed on
        first access (the JSON, a report or the caller), then kept: a run that never reads it
        does not pay for it; the numbers are the same.
    best_f1_source : callable or dict, optional
        What ``best_f1`` is made from: a dict as is, or a function of no arguments called on
        first access (:func:`score` passes one).
    per_image : PerImage or None
        Per-image diagnostics (:func:`deteval.per_image.per_image`), on request only
        (``deteval.evaluate(..., per_image=True)``, ``--per-image``): None otherwise, so an
        ordinary run does not pay for them.
    matches : ExplainedMatches or None
        Every detection and missed object explained (:func:`deteval.per_image.explained_matches`),
        on request only (``deteval.evaluate(..., matches=True)``, ``--matches``).
    """

    protocol: Protocol
    metrics: dict
    per_class: list
    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    ap: np.ndarray
    category_ids: tuple
    category_names: tuple
    table: MatchTable
    warnings: tuple = field(default=())
    notes: tuple = field(default=())
    inputs: dict = field(default_factory=dict)
    image_ids: np.ndarray | None = None
    annotation_ids: np.ndarray | None = None
    best_f1_source: Any = field(default=None, repr=False)
    per_image: Any = None
    matches: Any = None

    @cached_property
    def best_f1(self) -> dict:
        """Best-F1 operating points (see the class docstring), computed on first access."""
        source = self.best_f1_source
        return dict(source() if callable(source) else (source or {}))

    def to_dict(self) -> dict:
        """One entry of the JSON contract's ``results`` (NaN -> None); ``per_image`` / ``matches`` when computed."""
        out = {
            "protocol": self.protocol.name,
            "iou_type": self.protocol.iou_type,
            "protocol_hash": self.protocol.fingerprint(),
            "config": self.protocol.to_dict(),
            "metrics": {k: none_if_nan(v) for k, v in self.metrics.items()},
            "per_class": [{k: _json_value(v) for k, v in c.items()} for c in self.per_class],
            "best_f1": _json_value(self.best_f1),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }
        if self.per_image is not None:
            out["per_image"] = self.per_image.to_dict()
        if self.matches is not None:
            out["matches"] = self.matches.to_dict(self)
        return out


def _json_value(value: object) -> object:
    """``value`` with every float NaN (nested in dicts and lists) as None (JSON ``null``)."""
    if isinstance(value, float):
        return none_if_nan(value)
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def inputs_summary(
    gt: GroundTruth,
    dt: Detections | None = None,
    *,
    names: tuple | None = None,
    detections: int | None = None,
) -> dict:
    """The JSON ``inputs`` of a result: ``{"gt", "dt", "images", "gt_objects", "detections"}``.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections, optional
    names : (gt name, dt name), optional
        How to name the inputs (used as given); their ``source`` by default.
    detections : int, optional
        The number of detections; ``len(dt)`` by default (0 without ``dt``).
    """
    if names is None:
        names = (gt.source, dt.source if dt is not None else None)
    return {
        "gt": names[0],
        "dt": names[1],
        "images": gt.n_images,
        "gt_objects": len(gt),
        "detections": (len(dt) if dt is not None else 0) if detections is None else detections,
    }
