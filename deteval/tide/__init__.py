"""TIDE error types (Bolya et al., ECCV 2020): how much AP each kind of mistake costs.

Every detection that is not a true positive gets one error type, tested in this order (IoU with
the non-ignored ground truths of its image; ``fg`` the foreground threshold, 0.5, ``bg`` the
background threshold, 0.1):

* ``loc``  (localization): its best same-class IoU is in ``[bg, fg]``;
* ``cls``  (classification): some other-class ground truth has IoU ``>= fg``;
* ``dupe`` (duplicate): a same-class ground truth already taken by a higher-scored detection
  has IoU ``>= fg``;
* ``bkg``  (background): every IoU is ``<= bg`` (also: the image has no ground truth);
* ``both`` (classification and localization): anything else.

A ground truth that no detection found and that no ``loc`` / ``cls`` error points at is
``miss``. Each type's dAP is the AP gained by fixing all errors of that type with TIDE's oracle,
the others left alone: the best-scored ``loc`` / ``cls`` error on an untaken ground truth becomes
a true positive (relabelled to the ground truth's class for ``cls``), the other errors of the
type are removed, and a fixed ``miss`` leaves the ground-truth count. The special errors:
``false_pos`` (every false positive scored below every true positive) and ``false_neg`` (every
missed object removed from the ground truth).

``mode="tidecv"`` reproduces the ``tidecv`` package exactly (its matching and its own AP);
``mode="protocol"`` reports the same error types under a deteval protocol (see
:func:`tide_errors`). Values are fractions, like AP (tidecv prints percent).

The package's modules, lowest first (each imports only those above it):

- :mod:`~deteval.tide.result`: the error-type names, the thresholds, :class:`TideErrors`;
- :mod:`~deteval.tide.outcome`: the kept detections and their matching (tidecv's or a protocol's);
- :mod:`~deteval.tide.ap`: :func:`tide_ap` and the AP of one fixed scenario;
- :mod:`~deteval.tide.oracle`: the error type of each detection and TIDE's oracle;
- :mod:`~deteval.tide.breakdown`: :func:`tide_errors`.

Every public name is re-exported here: ``from deteval.tide import ...`` is the import path.
"""

from __future__ import annotations

from deteval.tide.ap import tide_ap
from deteval.tide.breakdown import ApFn, PairIou, tide_errors  # noqa: F401  (ApFn, PairIou)
from deteval.tide.result import (  # noqa: F401  (MODES)
    MAIN_ERRORS,
    MODES,
    SPECIAL_ERRORS,
    TIDE_COCO_THRESHOLDS,
    TideErrors,
    whose_ap,
)

__all__ = [
    "TideErrors",
    "tide_errors",
    "tide_ap",
    "whose_ap",
    "MAIN_ERRORS",
    "SPECIAL_ERRORS",
    "TIDE_COCO_THRESHOLDS",
]
