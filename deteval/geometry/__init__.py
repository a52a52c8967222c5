"""Overlap between boxes and between masks.

* :mod:`deteval.geometry.boxes` -- box IoU in the two arithmetics published numbers use.
* :mod:`deteval.geometry.polygons` -- exact polygon areas and IoU (shapely 2).
* :mod:`deteval.geometry.raster` -- pycocotools' raster masks and their IoU.
* :mod:`deteval.geometry.masks` -- the per-pair dispatch between the two, over masks prepared
  once per (ground truth, detections).

The mask names load :mod:`deteval.geometry.masks` on first use (PEP 562 ``__getattr__``): box and
keypoint scoring import no mask code.
"""

from typing import TYPE_CHECKING, Any

from deteval.geometry.boxes import BOX_CONVENTIONS, box_iou, pair_box_iou

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from deteval.geometry.masks import (
        PreparedMasks,
        check_masks,
        detection_areas,
        mask_threads,
        pair_mask_iou,
        prepare_masks,
        segm_iou,
    )

_MASK_NAMES = frozenset(
    (
        "PreparedMasks",
        "check_masks",
        "detection_areas",
        "mask_threads",
        "pair_mask_iou",
        "prepare_masks",
        "segm_iou",
    )
)

__all__ = [
    "BOX_CONVENTIONS",
    "box_iou",
    "pair_box_iou",
    "PreparedMasks",
    "prepare_masks",
    "mask_threads",
    "check_masks",
    "pair_mask_iou",
    "detection_areas",
    "segm_iou",
]


def __getattr__(name: str) -> Any:
    """Load a mask name from :mod:`deteval.geometry.masks` on first access.

    Raises
    ------
    AttributeError
        ``name`` is not a public name (submodules are bound by the import system when imported).
    """
    if name not in _MASK_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from deteval.geometry import masks

    value = getattr(masks, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _MASK_NAMES)
