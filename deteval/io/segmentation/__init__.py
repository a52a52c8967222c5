"""Moved: the mask value types and their checks are :mod:`deteval.masks` (data layer); names kept here."""

from __future__ import annotations

from deteval.masks import (
    MAX_COORDINATE,
    MAX_PIXELS,
    N_SHOWN,
    POLYGON,
    RLE,
    CheckedMasks,
    SegmentationSource,
    check_group_sizes,
    check_pair_sizes,
    detection_source,
    fail_records,
    ground_truth_source,
    mask_sizes,
    parse_masks,
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
]
