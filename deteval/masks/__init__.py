"""COCO segmentations (polygons and RLE) -> checked, columnar masks.

A COCO ``segmentation`` is one of

* a list of polygons ``[[x1, y1, x2, y2, ...], ...]``: the mask is the *union* of the parts
  (pycocotools rasterises each part and merges them);
* an uncompressed RLE ``{"size": [h, w], "counts": [n0, n1, ...]}`` (column-major runs,
  starting with background), as COCO stores crowd regions;
* a compressed RLE ``{"size": [h, w], "counts": "..."}`` (pycocotools' string encoding), as
  most detectors write their results.

This module only reads and checks: every record of a collection is validated at once and
turned into the columns of a :class:`CheckedMasks` (polygon vertices with offsets, canonical
RLE dicts, extents). Polygons with fewer than 3 distinct points, odd coordinate counts, NaN
or absurd (> 1e7) coordinates and malformed RLE are errors naming file, record and ids, so
pycocotools never sees input it would crash on. Geometry (exact areas, rasters, IoU) lives
in :mod:`deteval.geometry`.

The package's modules, each importing only the ones above it:
:mod:`~deteval.masks.sources` (where records come from, error messages, limits),
:mod:`~deteval.masks.polygons` and :mod:`~deteval.masks.rle` (the checks
of each form) and :mod:`~deteval.masks.parsing` (:func:`parse_masks`); every public
name is re-exported here.
"""

from __future__ import annotations

from deteval.masks.parsing import CheckedMasks, parse_masks
from deteval.masks.rle import check_group_sizes, check_pair_sizes, mask_sizes, rle_sizes_are_image_sizes
from deteval.masks.sources import (
    MAX_COORDINATE,
    MAX_PIXELS,
    N_SHOWN,
    POLYGON,
    RLE,
    SegmentationSource,
    detection_source,
    fail_records,
    ground_truth_source,
    raster_image_size,
    values_source,
)

__all__ = [
    "MAX_COORDINATE",
    "MAX_PIXELS",
    "POLYGON",
    "RLE",
    "N_SHOWN",
    "SegmentationSource",
    "CheckedMasks",
    "fail_records",
    "ground_truth_source",
    "detection_source",
    "values_source",
    "parse_masks",
    "raster_image_size",
    "check_group_sizes",
    "check_pair_sizes",
    "mask_sizes",
    "rle_sizes_are_image_sizes",
]
