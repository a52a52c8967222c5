"""What an IoU type needs of the values: boxes for ``bbox``, keypoints for ``keypoints``.

Checks of :class:`~deteval.data.GroundTruth` / :class:`~deteval.data.Detections` values, in the
data layer: the core (:mod:`deteval.evaluate`) runs them before matching without knowing which
file format the values came from; the readers (:mod:`deteval.api.inputs`) run them on loading.
"""

from __future__ import annotations

import numpy as np

from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, InputError

__all__ = ["require_boxes", "require_keypoints"]


def require_boxes(dt: Detections) -> None:
    """Refuse detections without a ``bbox`` for a box evaluation (``iou_type="bbox"``).

    Notes
    -----
    pycocotools' ``loadRes`` derives a missing bbox from the mask when the *first* result has
    none; deteval decides per record, and scoring a box of zeros instead would be silent.

    Raises
    ------
    InputError
        Naming the first five records (their position in the source) and the count.
    """
    missing = np.flatnonzero(~dt.has_box)
    if not len(missing):
        return
    shown = ", ".join(f"#{int(dt.order[i])}" for i in missing[:5])
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    raise InputError(
        f"{dt.source}: {len(missing)} detection(s) ({shown}{more}) have a `segmentation` "
        f"but no `bbox`; expected a bbox [x, y, w, h] in every record for iou_type "
        f"'bbox' (or score them with --iou-type segm)"
    )


def require_keypoints(gt: GroundTruth, dt: Detections, *, n_sigmas: int | None) -> None:
    """Refuse a keypoints evaluation of records without keypoints, or of the wrong count.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    n_sigmas : int or None
        The protocol's ``keypoint_sigmas`` count (None: COCO's 17).

    Raises
    ------
    InputError
        Ground truth or detections without ``keypoints``, naming the count and the first ones.
    ConfigError
        A keypoint count that does not match the sigmas.
    """
    expected = 17 if n_sigmas is None else n_sigmas
    both = (("ground truth", gt, gt.annotation_id), ("detections", dt, dt.order))
    for name, value, positions in both:
        kp = value.keypoints
        missing = np.arange(len(value)) if kp is None else np.flatnonzero(np.isnan(kp[:, 0, 0]))
        if len(missing):
            label = "annotation id" if name == "ground truth" else "record #"
            shown = ", ".join(
                f"{label}{'' if label.endswith('#') else ' '}{int(positions[i])}" for i in missing[:5]
            )
            raise InputError(
                f"{value.source}: {len(missing)} {name} record(s) without `keypoints` "
                f"({shown}{', ...' if len(missing) > 5 else ''}); expected `keypoints` "
                f"[x1, y1, v1, ...] in every record for iou_type 'keypoints'"
            )
    for _, value, _ in both:
        kp = value.keypoints
        if kp is not None and len(value) and kp.shape[1] != expected:
            sigmas = "COCO's person keypoints" if n_sigmas is None else "keypoint_sigmas"
            raise ConfigError(
                f"{value.source}: {kp.shape[1]} keypoints per object, but the protocol has "
                f"{expected} OKS sigmas ({sigmas}); "
                f"expected keypoint_sigmas with {kp.shape[1]} values (e.g. --set "
                f"keypoint_sigmas=[...])"
            )
