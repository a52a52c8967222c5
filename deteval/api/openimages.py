"""The Open Images challenge's side files applied to loaded inputs (``--image-labels``, ``--hierarchy``).

:func:`challenge_inputs` is the one place the ``openimages-challenge`` rules meet the inputs: the
CLI and :func:`deteval.api.evaluate` call it after loading and before matching.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deteval.errors import ConfigError

if TYPE_CHECKING:  # the readers and rules load when a challenge input or rule is met (not per run)
    from deteval.data import Detections, GroundTruth
    from deteval.openimages import ClassHierarchy, ImageLevelLabels
    from deteval.protocol import Protocol

__all__ = ["challenge_inputs", "load_challenge", "needs_challenge_rules", "side_files", "refuse_label_rules"]


def needs_challenge_rules(protocol: Protocol) -> bool:
    """True when ``protocol`` reads image-level labels or expands the class hierarchy."""
    return protocol.hierarchy_expansion != "none" or protocol.image_level_labels != "none"


def _as_hierarchy(hierarchy: Any) -> ClassHierarchy | None:
    if hierarchy is None:
        return None
    from deteval.openimages import ClassHierarchy, build_hierarchy

    if isinstance(hierarchy, ClassHierarchy):
        return hierarchy
    if isinstance(hierarchy, dict):
        return build_hierarchy(hierarchy)
    from deteval.io.openimages import read_hierarchy

    return read_hierarchy(hierarchy)


def _as_labels(labels: Any) -> ImageLevelLabels | None:
    if labels is None:
        return None
    from deteval.openimages import ImageLevelLabels

    if isinstance(labels, ImageLevelLabels):
        return labels
    from deteval.io.openimages import read_image_labels

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
        Unchanged when the protocol asks for neither rule, or when ``gt.label_rules`` says they
        were applied already.

    Raises
    ------
    InputError
        A side file missing when the protocol needs it, or invalid.
    """
    if not needs_challenge_rules(protocol):
        return gt, dt  # no rule asked (label_rules_of gives none): the usual run
    from deteval.openimages import apply_challenge_rules, label_rules_of

    wanted = label_rules_of(protocol.hierarchy_expansion, protocol.image_level_labels)
    if all(rule in gt.label_rules for rule in wanted):
        return gt, dt  # nothing asked, or applied already (idempotent, as pooling is)
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
    from deteval.io.openimages import read_boxes, read_predictions

    labels = _as_labels(image_labels)
    tree = _as_hierarchy(hierarchy)
    gt = read_boxes(boxes, image_labels=labels, hierarchy=tree)
    dt = None if predictions is None else read_predictions(predictions, gt)
    return gt, dt


def side_files(
    image_labels: Any, hierarchy: Any, protocols: Sequence[Protocol]
) -> tuple[ImageLevelLabels | None, ClassHierarchy | None]:
    """``--image-labels`` and ``--hierarchy`` read once; refused when no protocol reads them.

    Raises
    ------
    ConfigError
        Side files given, ``protocols`` given, and none of them reads image-level labels or a
        hierarchy.
    InputError
        A side file that cannot be read.
    """
    given = [
        flag
        for flag, value in (("--image-labels", image_labels), ("--hierarchy", hierarchy))
        if value is not None
    ]
    if given and protocols and not any(needs_challenge_rules(p) for p in protocols):
        names = ", ".join(p.name for p in protocols)
        raise ConfigError(
            f"{' and '.join(given)} given, but no protocol of this run ({names}) reads image-level "
            "labels or a hierarchy; expected --protocol openimages-challenge (or --set "
            "image_level_labels=verified / hierarchy_expansion=ground_truth_and_detections)"
        )
    return _as_labels(image_labels), _as_hierarchy(hierarchy)


def refuse_label_rules(protocols: Sequence[Protocol], feature: str) -> None:
    """Refuse ``feature`` (``--bootstrap``, ``--scheduler``) under Open Images label rules.

    Raises
    ------
    ConfigError
        A protocol with ``hierarchy_expansion`` or ``image_level_labels``: these features
        read the ground truth as loaded, not as the rules expand it (not yet supported).
    """
    named = [p.name for p in protocols if needs_challenge_rules(p)]
    if named:
        raise ConfigError(
            f"{feature}: not available with Open Images label rules (protocol {named[0]!r}: "
            "hierarchy_expansion / image_level_labels); expected deteval evaluate without "
            f"{feature}, or --set hierarchy_expansion=none --set image_level_labels=none"
        )
