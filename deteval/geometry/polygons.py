"""Exact polygon geometry with shapely 2: areas and IoU of checked polygon masks.

Polygons are polygons: intersection and union areas come from shapely 2 (GEOS), computed for
all pairs at once. A record's parts are merged into one (multi)polygon, the union of the parts
as pycocotools merges their rasters. Pairs that cannot reach the lowest IoU threshold are
pruned with a cheap bound before any geometry is computed.

Notes
-----
Pruning. For a pair (d, g) with mask areas ``A_d``, ``A_g`` and bounding boxes overlapping
by ``B``, the intersection ``I <= I_max = min(B, A_d, A_g)`` and, since ``I / (A_d + A_g - I)``
grows with ``I``, ``IoU <= I_max / (A_d + A_g - I_max)`` (crowd: ``I_max / A_d``). A pair
whose bound is below the lowest threshold gets IoU 0 without any geometry: it could not
have matched at any threshold, so no outcome changes (the greedy matchers drop such pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely

from deteval.errors import InputError
from deteval.io.segmentation import POLYGON, CheckedMasks, SegmentationSource, fail_records

__all__ = ["ExactMasks", "build_exact_masks", "exact_pair_iou"]

_REPAIR_HINT = ("; to repair such polygons with shapely.make_valid, set `invalid_polygons: "
                "make_valid` (CLI: --set invalid_polygons=make_valid), or score the raster as "
                "pycocotools does with mask_iou: raster")



@dataclass(frozen=True, eq=False)
class ExactMasks:
    """Per record: shapely geometry (None for RLE rows), exact area and xyxy bounds (NaN for
    RLE rows)."""

    geometry: np.ndarray
    area: np.ndarray
    bounds: np.ndarray


def _polygonal(geometry: Any) -> list:
    """The polygons inside a repaired geometry (make_valid may leave collapsed lines)."""
    parts = shapely.get_parts(geometry)
    out = []
    for p in parts:
        if p.geom_type == "Polygon":
            out.append(p)
        elif p.geom_type in ("MultiPolygon", "GeometryCollection"):
            out.extend(_polygonal(p))
    return [p for p in out if not p.is_empty]


def build_exact_masks(src: SegmentationSource, masks: CheckedMasks,
                      invalid_polygons: str) -> ExactMasks:
    """Shapely geometry, exact area and bounds of every polygon record of ``masks``.

    A record's parts become one Polygon or, when several, their union as a MultiPolygon.
    A ring that only touches itself at a point is split there silently; crossing or
    overlapping edges are an InputError unless ``invalid_polygons == "make_valid"``, which
    repairs them as an even-odd fill (pycocotools' rasteriser) would.
    """
    n = len(masks.kind)
    geometry = np.full(n, None, dtype=object)
    area = np.full(n, np.nan)
    bounds = np.full((n, 4), np.nan)
    n_parts = masks.n_parts
    n_part_total = len(masks.point_start) - 1
    if n_part_total == 0:
        return ExactMasks(geometry, area, bounds)
    part_row = np.repeat(np.arange(n), n_parts)
    # Closed rings for shapely.from_ragged_array (one ring per polygon).
    npts = np.diff(masks.point_start)
    closed_start = np.zeros(n_part_total + 1, dtype=np.int64)
    np.cumsum(npts + 1, out=closed_start[1:])
    ring = np.empty((closed_start[-1], 2))
    shift = np.repeat(closed_start[:-1] - masks.point_start[:-1], npts)
    ring[np.arange(len(masks.points)) + shift] = masks.points
    ring[closed_start[1:] - 1] = masks.points[masks.point_start[:-1]]
    parts = shapely.from_ragged_array(shapely.GeometryType.POLYGON, ring,
                                      offsets=(closed_start, np.arange(n_part_total + 1)))
    is_valid = shapely.is_valid(parts)
    if not is_valid.all():
        bad = np.flatnonzero(~is_valid)
        reason = shapely.is_valid_reason(parts[bad])
        # A ring that only touches itself at a point ("Ring Self-intersection": a pinch, a spike
        # back along an edge end) bounds an unambiguous region: it is split at the point
        # silently. Edges that cross or overlap ("Self-intersection") are refused.
        is_touch = np.char.startswith(reason.astype(str), "Ring Self-intersection")
        if invalid_polygons != "make_valid" and not is_touch.all():
            crossing, crossing_reason = bad[~is_touch], reason[~is_touch]
            part_index = np.arange(n_part_total) - masks.part_start[part_row]
            rows = np.unique(part_row[crossing])

            def found(r: int) -> str:
                k = int(np.flatnonzero(part_row[crossing] == r)[0])
                p, why = int(crossing[k]), str(crossing_reason[k])
                if shapely.area(shapely.make_valid(parts[p])) == 0:
                    why = f"zero area, its points are collinear ({why})"
                return f"part {int(part_index[p])}: {why}"

            fail_records(src, rows, "a polygon is self-intersecting (its edges cross or overlap)",
                  "a simple polygon (its edges meet only at consecutive vertices)", found,
                  _REPAIR_HINT)
        # Repair with GEOS' "linework" method: it keeps the regions an even-odd fill (what
        # pycocotools' rasteriser draws) would keep, then drops collapsed lines.
        repaired = shapely.make_valid(parts[bad], method="linework")
        pieces, owners = [], []
        for p, g in zip(bad.tolist(), repaired, strict=True):
            for piece in _polygonal(g):
                pieces.append(piece)
                owners.append(p)
        parts = parts.copy()
        parts[bad] = None
        keep = np.flatnonzero(is_valid)
        flat_parts = np.concatenate([parts[keep], np.array(pieces, dtype=object)])
        flat_owner = np.concatenate([keep, np.array(owners, dtype=np.int64)])
    else:
        flat_parts, flat_owner = parts, np.arange(n_part_total)
    flat_row = part_row[flat_owner]
    pieces_per_row = np.bincount(flat_row, minlength=n)
    poly_rows = np.flatnonzero(masks.kind == POLYGON)
    single = poly_rows[(pieces_per_row[poly_rows] == 1) & (n_parts[poly_rows] == 1)]
    if len(single):
        where_single = np.zeros(n, dtype=bool)
        where_single[single] = True
        sel = where_single[flat_row]
        geometry[flat_row[sel]] = flat_parts[sel]
    multi = np.setdiff1d(poly_rows, single)
    if len(multi):
        is_multi = np.zeros(n, dtype=bool)
        is_multi[multi] = True
        sel = np.flatnonzero(is_multi[flat_row])
        order = sel[np.argsort(flat_row[sel], kind="stable")]
        rows_of = flat_row[order]
        uniq, idx = np.unique(rows_of, return_inverse=True)
        built = shapely.multipolygons(flat_parts[order], indices=idx)
        merged = np.full(len(multi), None, dtype=object)
        pos = np.searchsorted(multi, uniq)
        merged[pos] = built
        empty = np.array([m is None for m in merged])
        merged[empty] = shapely.from_wkt("MULTIPOLYGON EMPTY")
        # Overlapping or touching parts make an invalid MultiPolygon: the mask is the union of
        # the parts (pycocotools merges the parts' rasters with a logical or).
        for i in np.flatnonzero(~shapely.is_valid(merged)).tolist():
            merged[i] = shapely.union_all(shapely.get_parts(merged[i]))
        geometry[multi] = merged
    area[poly_rows] = shapely.area(geometry[poly_rows])
    bounds[poly_rows] = shapely.bounds(geometry[poly_rows])
    return ExactMasks(geometry, area, bounds)


def exact_pair_iou(det: ExactMasks, gt: ExactMasks, det_rows: np.ndarray, gt_rows: np.ndarray,
                   is_crowd: np.ndarray, lowest: float, describe: Callable[[int], str]) -> np.ndarray:
    """Exact polygon IoU of aligned pairs; pairs that cannot reach ``lowest`` get 0."""
    n = len(det_rows)
    iou = np.zeros(n)
    if n == 0:
        return iou
    db, gb = det.bounds[det_rows], gt.bounds[gt_rows]
    da, ga = det.area[det_rows], gt.area[gt_rows]
    iw = np.minimum(db[:, 2], gb[:, 2]) - np.maximum(db[:, 0], gb[:, 0])
    ih = np.minimum(db[:, 3], gb[:, 3]) - np.maximum(db[:, 1], gb[:, 1])
    overlap = (iw > 0) & (ih > 0) & (da > 0) & (ga > 0)
    inter_max = np.where(overlap, np.minimum(np.minimum(iw * ih, da), ga), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = np.where(is_crowd, inter_max / da, inter_max / (da + ga - inter_max))
    # Compute a pair unless its bound is clearly below the lowest threshold (the margin covers
    # rounding in the bound itself).
    compute = np.flatnonzero(overlap & (bound * (1 + 1e-9) + 1e-12 >= lowest))
    if not len(compute):
        return iou
    dg, gg = det.geometry[det_rows[compute]], gt.geometry[gt_rows[compute]]
    inter = shapely.area(_intersection(dg, gg, describe, compute))
    da_c, ga_c = da[compute], ga[compute]
    union = np.where(is_crowd[compute], da_c, da_c + ga_c - inter)
    value = np.zeros(len(compute))
    np.divide(inter, union, out=value, where=(inter > 0) & (union > 0))
    iou[compute] = np.clip(value, 0.0, 1.0)
    return iou


def _intersection(a: np.ndarray, b: np.ndarray, describe: Callable[[int], str],
                  pair_index: np.ndarray) -> np.ndarray:
    """shapely.intersection, with a snap-rounded retry where GEOS' overlay gives up."""
    try:
        return shapely.intersection(a, b)
    except shapely.errors.GEOSException:
        pass
    out = np.empty(len(a), dtype=object)
    for i in range(len(a)):
        try:
            out[i] = shapely.intersection(a[i], b[i])
        except shapely.errors.GEOSException:
            try:
                out[i] = shapely.intersection(a[i], b[i], grid_size=1e-6)
            except shapely.errors.GEOSException as error:
                raise InputError(f"exact polygon intersection failed for {describe(int(pair_index[i]))}: "
                                 f"{error}; expected polygons GEOS can overlay; use mask_iou: raster "
                                 f"for these data") from None
    return out

