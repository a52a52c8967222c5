"""Validation for the front door: the checks evaluate runs, nothing scored (``deteval validate``).

:func:`validate` loads the inputs as :func:`~deteval.api.load_inputs` does, checks them against
each protocol's needs (boxes, ``max_dets``, masks) and counts what they hold in a
:class:`Validation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.api._emit import _emit
from deteval.api.inputs import _load_inputs
from deteval.data import Detections, GroundTruth
from deteval.errors import InputWarning
from deteval.geometry import check_masks
from deteval.io import gt_format
from deteval.masks import detection_source, ground_truth_source, parse_masks
from deteval.masks.sources import PolygonSegmentations, RleSegmentations
from deteval.protocol import Protocol, resolve_protocol


@frozen
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
    if isinstance(segmentation, (PolygonSegmentations, RleSegmentations)):  # parsed: every record has one
        return len(segmentation) > 0
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
    if any(p.iou_type in ("segm", "boundary") for p in resolved):  # polygons and RLE checked as scoring would
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
    mask_settings = {
        (p.mask_iou, p.invalid_polygons): p for p in resolved if p.iou_type in ("segm", "boundary")
    }
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
