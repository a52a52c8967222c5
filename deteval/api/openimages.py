"""The Open Images challenge's side files applied to loaded inputs (``--image-labels``, ``--hierarchy``).

:func:`challenge_inputs` is the one place the ``openimages-challenge`` rules meet the inputs: the
CLI and :func:`deteval.api.evaluate` call it after loading and before matching.
"""

from __future__ import annotations

import os
from typing import Any

from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.io.openimages import read_boxes, read_hierarchy, read_image_labels, read_predictions
from deteval.openimages import ClassHierarchy, ImageLevelLabels, apply_challenge_rules
from deteval.protocol import Protocol

__all__ = ["challenge_inputs", "load_challenge", "needs_challenge_rules"]


def needs_challenge_rules(protocol: Protocol) -> bool:
    """True when ``protocol`` reads image-level labels or expands the class hierarchy."""
    return protocol.hierarchy_expansion != "none" or protocol.image_level_labels != "none"


def _as_hierarchy(hierarchy: Any) -> ClassHierarchy | None:
    if hierarchy is None or isinstance(hierarchy, ClassHierarchy):
        return hierarchy
    if isinstance(hierarchy, dict):
        from deteval.openimages import build_hierarchy

        return build_hierarchy(hierarchy)
    return read_hierarchy(hierarchy)


def _as_labels(labels: Any) -> ImageLevelLabels | None:
    if labels is None or isinstance(labels, ImageLevelLabels):
        return labels
    return read_image_labels(labels)


def challenge_inputs(
    gt: GroundTruth,
    dt: Detections | None,
    protocol: Protocol,
    *,
    image_labels: Any = None,
    hierarchy: Any = None,
) -> tuple[GroundTruth, Detections | None]:
    """Ground truth and detections with ``protocol``'s Open Images label rules applied.

    Parameters
    ----------
    gt, dt : GroundTruth, Detections
    protocol : Protocol
    image_labels : ImageLevelLabels or path, optional
        Needed when ``protocol.image_level_labels`` is ``"verified"``.
    hierarchy : ClassHierarchy, dict or path, optional
        Needed when ``protocol.hierarchy_expansion`` is not ``"none"``.

    Returns
    -------
    (GroundTruth, Detections or None)
        Unchanged when the protocol asks for neither rule.

    Raises
    ------
    ConfigError
        Side files given to a protocol that does not read them.
    InputError
        A side file missing when the protocol needs it, or invalid.
    """
    if not needs_challenge_rules(protocol):
        given = [flag for flag, value in (("--image-labels", image_labels), ("--hierarchy", hierarchy)) if value is not None]
        if given:
            raise ConfigError(
                f"{' and '.join(given)} given, but protocol {protocol.name!r} reads neither image-level "
                "labels nor a hierarchy; expected --protocol openimages-challenge (or --set "
                "image_level_labels=verified / hierarchy_expansion=ground_truth_and_detections)"
            )
        return gt, dt
    out_gt, out_dt, _ = apply_challenge_rules(
        gt,
        dt,
        hierarchy=_as_hierarchy(hierarchy),
        image_labels=_as_labels(image_labels),
        hierarchy_expansion=protocol.hierarchy_expansion,
        image_level_labels=protocol.image_level_labels,
    )
    return out_gt, out_dt


def load_challenge(
    boxes: str | os.PathLike,
    predictions: str | os.PathLike | None,
    *,
    image_labels: Any = None,
    hierarchy: Any = None,
) -> tuple[GroundTruth, Detections | None]:
    """Read the challenge's CSV files (boxes, submission) with their side files, unexpanded."""
    labels = _as_labels(image_labels)
    tree = _as_hierarchy(hierarchy)
    gt = read_boxes(boxes, image_labels=labels, hierarchy=tree)
    dt = None if predictions is None else read_predictions(predictions, gt)
    return gt, dt
