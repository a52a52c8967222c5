"""COCO instances JSON (ground truth) and COCO results JSON (detections).

Loading validates everything once (see docs/errors.md); the values returned are
frozen and the caller's lists and dicts are never modified.

The readers, by concern (each imports only those listed before it):

* :mod:`~deteval.io.coco._common`: record helpers (sources, lists of objects, duplicate ids);
* :mod:`~deteval.io.coco.instances`: images, categories (LVIS' too) and the assembled ground truth;
* :mod:`~deteval.io.coco.keypoints`: the ``keypoints`` column;
* :mod:`~deteval.io.coco.suspicions`: counted warnings about accepted results;
* :mod:`~deteval.io.coco.fast`: msgspec fast paths for plain files;
* :mod:`~deteval.io.coco.ground_truth`: :func:`load_coco_gt`;
* :mod:`~deteval.io.coco.results`: :func:`load_coco_dt`.

:func:`require_boxes` and :func:`require_keypoints` are checks of values: they live in
:mod:`deteval.scorable` (re-exported here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deteval._lazy import lazy_names
from deteval.io.coco.fast import _fast_box_results as _fast_box_results
from deteval.io.coco.fast_instances import RawSegmentations as RawSegmentations
from deteval.io.coco.fast_instances import _fast_ground_truth as _fast_ground_truth
from deteval.io.coco.ground_truth import load_coco_gt
from deteval.io.coco.instances import LVIS_FREQUENCIES as LVIS_FREQUENCIES
from deteval.io.coco.results import load_coco_dt
from deteval.scorable import require_boxes, require_keypoints

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from deteval.io.coco.keypoints import keypoint_column
    from deteval.io.coco.keypoints import keypoint_extent as keypoint_extent

__all__ = ["load_coco_gt", "load_coco_dt", "require_boxes", "require_keypoints", "keypoint_column"]

#: Names loaded from their module on first access (PEP 562): the plain files' fast paths read
#: keypoints without :mod:`~deteval.io.coco.keypoints`, which the full checks import.
_LAZY = {"keypoint_column": "deteval.io.coco.keypoints", "keypoint_extent": "deteval.io.coco.keypoints"}

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
