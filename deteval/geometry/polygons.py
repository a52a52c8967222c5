"""Exact polygon geometry with shapely 2: areas and IoU of checked polygon masks.

Polygons are polygons: intersection and union areas come from shapely 2 (GEOS), computed for
all pairs at once. A record's parts are merged into one (multi)polygon, the union of the parts
as pycocotools merges their rasters. Pairs that cannot reach the lowest IoU threshold are
pruned with a cheap bound before any geometry is computed.

A part whose ring crosses or touches itself (COCO's own ground truth has such polygons) is, by
default (``invalid_polygons: even_odd``), the region it encloses an odd number of times: the
even-odd rule of pycocotools' rasteriser, computed exactly (:func:`even_odd_region`).

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
from typing import Any

import numpy as np
import shapely

from deteval._values import frozen
from deteval.errors import InputError
from deteval.masks import POLYGON, CheckedMasks, SegmentationSource, fail_records

__all__ = ["ExactMasks", "build_exact_masks", "exact_pair_iou", "even_odd_region"]

_REPAIR_HINT = (
    "; to fill such polygons by the even-odd rule as pycocotools' rasteriser does, set "
    "`invalid_polygons: even_odd` (CLI: --set invalid_polygons=even_odd, the default), "
    "or score the raster as pycocotools does with mask_iou: raster"
)


@frozen(eq=False)
class ExactMasks:
    """Per record: shapely geometry, exact area and xyxy bounds.

    RLE rows have no geometry (None) and NaN area and bounds.
    """

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


def _crossing_parity(points: np.ndarray, ring: np.ndarray) -> np.ndarray:
    """Per point: whether a ray to +x crosses the closed ``ring`` an odd number of times.

    The half-open rule (an edge counts when exactly one end lies strictly above the ray) makes
    a ray through a vertex count once, as every even-odd scanline fill does.
    """
    x0, y0 = ring[:-1, 0], ring[:-1, 1]
    x1, y1 = ring[1:, 0], ring[1:, 1]
    px, py = points[:, :1], points[:, 1:]
    spans = (y0 > py) != (y1 > py)
    with np.errstate(invalid="ignore", divide="ignore"):
        x_cross = x0 + (py - y0) * (x1 - x0) / (y1 - y0)
    return (np.count_nonzero(spans & (x_cross > px), axis=1) % 2) == 1


def even_odd_region(ring: Any) -> Any:
    """The region a closed ring encloses an odd number of times, exactly (the even-odd rule).

    Parameters
    ----------
    ring : shapely geometry or float64 (n, 2)
        A Polygon's exterior, a LinearRing, or its vertices (closed or not).

    Returns
    -------
    shapely Polygon or MultiPolygon
        Empty when the ring encloses nothing.

    Notes
    -----
    pycocotools' rasteriser (``rleFrPoly``) toggles a pixel column's state at every boundary
    crossing: the even-odd rule. Exactly: the ring's linework is noded
    (``unary_union``) and polygonized into faces; a face's winding parity is constant, so it is
    read at one interior point (``point_on_surface``) by counting crossings of a ray with the
    original ring; the odd faces are united (faces separated by an edge traversed twice have
    the same parity and merge).

    Examples
    --------
    >>> import math
    >>> even_odd_region([(0, 0), (10, 10), (10, 0), (0, 10)]).area  # a figure-eight: two triangles
    50.0
    >>> star = [(math.cos(math.pi / 2 + 4 * math.pi * k / 5), math.sin(math.pi / 2 + 4 * math.pi * k / 5))
    ...         for k in range(5)]
    >>> round(even_odd_region(star).area, 6)  # a pentagram: five tips, the centre pentagon left out
    0.775677
    """
    if isinstance(ring, shapely.Geometry):
        line = shapely.get_exterior_ring(ring) if ring.geom_type == "Polygon" else ring
        coords = shapely.get_coordinates(line)
    else:
        coords = np.asarray(ring, dtype=np.float64).reshape(-1, 2)
    if len(coords) == 0:
        return shapely.from_wkt("POLYGON EMPTY")
    if not (coords[0] == coords[-1]).all():
        coords = np.vstack([coords, coords[:1]])
    noded = shapely.unary_union(shapely.linestrings(coords))
    faces = shapely.get_parts(shapely.polygonize(shapely.get_parts(noded)))
    faces = faces[shapely.area(faces) > 0]
    if not len(faces):
        return shapely.from_wkt("POLYGON EMPTY")
    inside = shapely.get_coordinates(shapely.point_on_surface(faces))
    odd = faces[_crossing_parity(inside, coords)]
    if not len(odd):
        return shapely.from_wkt("POLYGON EMPTY")
    return odd[0] if len(odd) == 1 else shapely.union_all(odd)


def build_exact_masks(src: SegmentationSource, masks: CheckedMasks, invalid_polygons: str) -> ExactMasks:
    """Shapely geometry, exact area and bounds of every polygon record of ``masks``.

    A record's parts become one Polygon or, when several, their union as a MultiPolygon
    (pycocotools merges the parts' rasters with a logical or). A part that is not a simple
    polygon is, by ``invalid_polygons``:

    * ``"even_odd"``: the region its ring encloses an odd number of times
      (:func:`even_odd_region`), what pycocotools' rasteriser fills;
    * ``"error"``: a ring that only touches itself at a point is split there silently (the
      same region); crossing or overlapping edges are an InputError;
    * ``"make_valid"``: ``shapely.make_valid(method="linework")``.

    Notes
    -----
    The few non-simple parts are rebuilt one at a time (a Python loop over them: GEOS' noding
    and polygonizing work on one geometry); simple parts, almost all of real data, are built
    in one vectorized call.
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
    parts = shapely.from_ragged_array(
        shapely.GeometryType.POLYGON, ring, offsets=(closed_start, np.arange(n_part_total + 1))
    )
    is_valid = shapely.is_valid(parts)
    if not is_valid.all():
        bad = np.flatnonzero(~is_valid)
        reason = shapely.is_valid_reason(parts[bad])
        # A ring that only touches itself at a point ("Ring Self-intersection": a pinch, a spike
        # back along an edge end) bounds an unambiguous region: it is split at the point
        # silently. Edges that cross or overlap ("Self-intersection") are refused.
        is_touch = np.char.startswith(reason.astype(str), "Ring Self-intersection")
        if invalid_polygons == "error" and not is_touch.all():
            crossing, crossing_reason = bad[~is_touch], reason[~is_touch]
            part_index = np.arange(n_part_total) - masks.part_start[part_row]
            rows = np.unique(part_row[crossing])

            def found(r: int) -> str:
                k = int(np.flatnonzero(part_row[crossing] == r)[0])
                p, why = int(crossing[k]), str(crossing_reason[k])
                if shapely.area(shapely.make_valid(parts[p])) == 0:
                    why = f"zero area, its points are collinear ({why})"
                return f"part {int(part_index[p])}: {why}"

            fail_records(
                src,
                rows,
                "a polygon is self-intersecting (its edges cross or overlap)",
                "a simple polygon (its edges meet only at consecutive vertices)",
                found,
                _REPAIR_HINT,
            )
        if invalid_polygons == "make_valid":
            # GEOS' "linework" repair (builds an area from the noded linework, drops collapsed
            # lines); it can differ from the even-odd region, e.g. for a ring traversed twice.
            repaired = shapely.make_valid(parts[bad], method="linework")
        else:  # even_odd, or error with rings that only touch themselves: the same region
            repaired = [even_odd_region(g) for g in parts[bad]]
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


def exact_pair_iou(
    det: ExactMasks,
    gt: ExactMasks,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    is_crowd: np.ndarray,
    lowest: float,
    describe: Callable[[int], str],
) -> np.ndarray:
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


def _intersection(
    a: np.ndarray, b: np.ndarray, describe: Callable[[int], str], pair_index: np.ndarray
) -> np.ndarray:
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
                raise InputError(
                    f"exact polygon intersection failed for {describe(int(pair_index[i]))}: "
                    f"{error}; expected polygons GEOS can overlay; use mask_iou: raster "
                    f"for these data"
                ) from None
    return out
