"""Instance masks for ``iou_type="segm"``: COCO polygons and RLE, exact and raster IoU.

A COCO ``segmentation`` is one of

* a list of polygons ``[[x1, y1, x2, y2, ...], ...]``: the mask is the *union* of the parts
  (pycocotools rasterises each part and merges them);
* an uncompressed RLE ``{"size": [h, w], "counts": [n0, n1, ...]}`` (column-major runs,
  starting with background), as COCO stores crowd regions;
* a compressed RLE ``{"size": [h, w], "counts": "..."}`` (pycocotools' string encoding), as
  most detectors write their results.

Two ways of measuring overlap, chosen by ``Protocol.mask_iou``:

``"exact"`` (default)
    Polygons are polygons: intersection and union areas come from shapely 2 (GEOS), computed
    for all pairs at once. Only pairs whose mask bounds overlap are computed, and pairs that
    cannot reach the lowest IoU threshold are pruned with a cheap bound (see Notes). A pair
    in which either mask is an RLE is computed on the raster, as in ``"raster"`` mode.
``"raster"``
    pycocotools' own ``mask.frPyObjects`` / ``merge`` / ``iou`` at the image size: the numbers
    of pycocotools' ``COCOeval(iouType="segm")``, bit for bit. Needs each image's width and
    height.

Everything is parsed and validated once per :class:`~deteval.data.GroundTruth` /
:class:`~deteval.data.Detections` object (cached while the object lives): polygons with fewer
than 3 distinct points, odd coordinate counts, NaN or absurd (> 1e7) coordinates, malformed
RLE are errors naming file, record and ids; in exact mode so are self-intersecting polygons,
unless ``invalid_polygons="make_valid"``. pycocotools never sees input it would crash on.

Notes
-----
Pruning. For a pair (d, g) with mask areas ``A_d``, ``A_g`` and bounding boxes overlapping
by ``B``, the intersection ``I <= I_max = min(B, A_d, A_g)`` and, since ``I / (A_d + A_g - I)``
grows with ``I``, ``IoU <= I_max / (A_d + A_g - I_max)`` (crowd: ``I_max / A_d``). A pair
whose bound is below the lowest threshold gets IoU 0 without any geometry: it could not
have matched at any threshold, so no outcome changes (the greedy matchers drop such pairs).

Exact versus raster. pycocotools keeps a pixel when the polygon covers its centre (on a
5x upsampled boundary), so each mask's raster differs from the polygon by at most a band of
about one pixel along its boundary. With perimeters ``P_d``, ``P_g`` (pixels) and exact areas
``A_d``, ``A_g``, the tests check

    |IoU_exact - IoU_raster| <= 2 (P_d + P_g) / max(A_d, A_g)

which shrinks like 1 / size: a few percent for objects of 100 x 100 px, but easily 0.1 or
more for COCO's "small" objects (< 32 x 32 px). :func:`compare_mask_modes` reports what the
difference does to the metrics on real data.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import shapely
from pycocotools import mask as mask_utils

from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import InputError

__all__ = ["MAX_COORDINATE", "prepare_masks", "detection_areas", "pair_mask_iou", "segm_iou",
           "compare_mask_modes", "MaskModeComparison"]

#: Largest absolute polygon coordinate accepted: beyond it a coordinate is a bug upstream
#: (pycocotools would try to rasterise it and run out of memory or overflow).
MAX_COORDINATE = 1e7

#: Image sizes pycocotools' 32-bit run lengths can hold.
_MAX_PIXELS = 2**31 - 1

_POLYGON, _RLE = 0, 1
_SHOW = 5
_REPAIR_HINT = ("; to repair such polygons with shapely.make_valid, set `invalid_polygons: "
                "make_valid` (CLI: --set invalid_polygons=make_valid), or score the raster as "
                "pycocotools does with mask_iou: raster")


# ----------------------------------------------------------------------------------------------
# Where records come from (for messages)
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class _Source:
    """The raw segmentation values of one collection, and how to name its records."""

    values: tuple
    where: str
    kind: str                       # "annotation" / "detection"
    number: np.ndarray              # record number in its file, per row
    label: Callable[[int], str]     # row -> "id=7, image_id=1"
    image: np.ndarray               # image index per row
    image_size: np.ndarray          # (n_img, 2) float64 height, width; NaN where unknown
    image_label: Callable[[int], str]
    image_where: str

    def __len__(self) -> int:
        return len(self.values)


def _show(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return text


def _fail(src: _Source, rows: Any, problem: str, expected: str,
          found: Callable[[int], str], hint: str = "") -> None:
    """Raise one InputError naming the first five records (by row) with ``problem``.

    The message follows BAD_INPUTS.md: ``<file>: <record> (<ids>): <problem>; expected <...>,
    found <...>`` (many records: the count and the first five), then an optional hint.
    """
    rows = [int(r) for r in rows]
    if len(rows) == 1:
        r = rows[0]
        raise InputError(f"{src.where}: {src.kind} #{int(src.number[r])} ({src.label(r)}): "
                         f"{problem}; expected {expected}, found {found(r)}{hint}")
    shown = "; ".join(f"#{int(src.number[r])} ({src.label(r)}) {found(r)}" for r in rows[:_SHOW])
    more = f"; and {len(rows) - _SHOW} more" if len(rows) > _SHOW else ""
    raise InputError(f"{src.where}: {len(rows)} {src.kind}s: {problem}; expected {expected}; "
                     f"found {shown}{more}{hint}")


def _image_sizes(gt: GroundTruth) -> np.ndarray:
    return np.stack([np.asarray(gt.image_height, np.float64),
                     np.asarray(gt.image_width, np.float64)], axis=1).reshape(-1, 2)


def _gt_source(gt: GroundTruth) -> _Source:
    if gt.segmentation is None:
        raise InputError(f"{gt.source}: iou_type 'segm' needs a `segmentation` (polygons or RLE) on "
                         f"every annotation; expected COCO instances with masks, found ground truth "
                         f"without any (VOC and YOLO boxes carry no masks)")
    ann_id, img_id, image = gt.annotation_id, gt.image_id, gt.image
    return _Source(
        values=tuple(gt.segmentation), where=gt.source, kind="annotation",
        number=np.arange(len(gt)), label=lambda r: f"id={int(ann_id[r])}, image_id={int(img_id[image[r]])}",
        image=np.asarray(image), image_size=_image_sizes(gt),
        image_label=lambda i: f"id={int(img_id[i])}", image_where=gt.source)


def _dt_source(dt: Detections, gt: GroundTruth) -> _Source:
    img_id, image = gt.image_id, dt.image
    if dt.segmentation is None and len(dt):
        raise InputError(f"{dt.source}: iou_type 'segm' needs a `segmentation` on every detection; "
                         f"expected polygons or RLE, found boxes only (evaluate boxes with "
                         f"iou_type 'bbox')")
    values = tuple(dt.segmentation) if dt.segmentation is not None else ()
    return _Source(
        values=values, where=dt.source, kind="detection", number=np.asarray(dt.order),
        label=lambda r: f"image_id={int(img_id[image[r]])}", image=np.asarray(image),
        image_size=_image_sizes(gt), image_label=lambda i: f"id={int(img_id[i])}",
        image_where=gt.source)


# ----------------------------------------------------------------------------------------------
# Parsing and validation: raw values -> canonical columns
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class _Masks:
    """Canonical masks of every record of a collection.

    kind : int8 (n,)
        ``_POLYGON`` or ``_RLE``.
    part_start : int64 (n + 1,)
        Polygon parts of record r are ``part_start[r]:part_start[r + 1]`` (none for RLE rows).
    point_start : int64 (n_part + 1,)
        Vertices of part p are ``points[point_start[p]:point_start[p + 1]]``.
    points : float64 (n_point, 2)
    rle : tuple
        Per record: None for polygons, else ``{"size": [h, w], "counts": bytes | list}``
        (validated; compressed counts as bytes).
    bounds : float64 (n, 4)
        xyxy extent of each record's polygon vertices, or of its RLE's pixels.
    """

    kind: np.ndarray
    part_start: np.ndarray
    point_start: np.ndarray
    points: np.ndarray
    rle: tuple
    bounds: np.ndarray

    @property
    def n_parts(self) -> np.ndarray:
        return np.diff(self.part_start)


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)))


def _as_float(v: Any) -> float:
    """float(v), or inf for integers beyond float range (then reported as non-finite)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf


def _parse(src: _Source) -> _Masks:
    """Validate every record's segmentation and build the canonical columns."""
    values = src.values
    n = len(values)
    codes = {list: 0, tuple: 0, dict: 1, type(None): 2}
    code = np.fromiter((codes.get(type(v), 3) for v in values), dtype=np.int8, count=n)
    if (code == 2).any():
        _fail(src, np.flatnonzero(code == 2), "no `segmentation` (iou_type 'segm' needs a mask "
              "for every record)", "polygons [[x1, y1, x2, y2, ...], ...] or an RLE {size, counts}",
              lambda r: "nothing")
    if (code == 3).any():
        _fail(src, np.flatnonzero(code == 3), "`segmentation` is neither a polygon list nor an RLE "
              "object", "polygons [[x1, y1, x2, y2, ...], ...] or an RLE {size, counts}",
              lambda r: _show(values[r]))
    poly_rows = np.flatnonzero(code == 0)
    n_parts = np.zeros(n, dtype=np.int64)
    n_parts[poly_rows] = np.fromiter((len(values[r]) for r in poly_rows), np.int64, len(poly_rows))
    empty = poly_rows[n_parts[poly_rows] == 0]
    if len(empty):
        _fail(src, empty, "`segmentation` is an empty polygon list", "at least one polygon "
              "[x1, y1, x2, y2, x3, y3, ...]", lambda r: "[]")
    part_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_parts, out=part_start[1:])
    point_start, points = _parse_polygons(src, poly_rows, n_parts, part_start)
    rle = _parse_rles(src, np.flatnonzero(code == 1))
    kind = np.where(code == 1, _RLE, _POLYGON).astype(np.int8)
    bounds = np.full((n, 4), np.nan)
    if len(points):
        lo = np.minimum.reduceat(points, point_start[:-1], axis=0)
        hi = np.maximum.reduceat(points, point_start[:-1], axis=0)
        has_parts = np.flatnonzero(n_parts > 0)
        first_part = part_start[has_parts]
        bounds[has_parts, :2] = np.minimum.reduceat(lo, first_part, axis=0)
        bounds[has_parts, 2:] = np.maximum.reduceat(hi, first_part, axis=0)
    rle_rows = np.flatnonzero(code == 1)
    if len(rle_rows):
        compressed = [rle[r] if not isinstance(rle[r]["counts"], list)
                      else mask_utils.frPyObjects([rle[r]], *rle[r]["size"])[0] for r in rle_rows.tolist()]
        box = np.asarray(mask_utils.toBbox(compressed), dtype=np.float64).reshape(-1, 4)
        bounds[rle_rows] = np.c_[box[:, :2], box[:, :2] + box[:, 2:]]
    return _Masks(kind=kind, part_start=part_start, point_start=point_start, points=points, rle=rle,
                  bounds=bounds)


def _parse_polygons(src: _Source, poly_rows: np.ndarray, n_parts: np.ndarray,
                    part_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = src.values
    parts = list(itertools.chain.from_iterable(values[r] for r in poly_rows))
    part_row = np.repeat(np.arange(len(n_parts)), n_parts)
    part_index = np.arange(len(parts)) - part_start[part_row]

    def part_of(r: int, problem_parts: np.ndarray) -> str:
        p = int(problem_parts[part_row[problem_parts] == r][0])
        return f"part {int(part_index[p])}: {_show(parts[p])}"

    not_list = np.fromiter((type(p) not in (list, tuple) for p in parts), bool, len(parts))
    if not_list.any():
        bad = np.flatnonzero(not_list)
        _fail(src, np.unique(part_row[bad]), "a polygon is not a list of numbers",
              "polygons [[x1, y1, x2, y2, ...], ...]", lambda r: part_of(r, bad))
    part_len = np.fromiter(map(len, parts), np.int64, len(parts))
    flat = list(itertools.chain.from_iterable(parts))
    coords = None
    if set(map(type, flat)) <= {int, float}:
        try:
            coords = np.array(flat, dtype=np.float64)
        except OverflowError:
            coords = None
    if coords is None:
        is_bad = np.fromiter((not all(_is_number(v) for v in p) for p in parts), bool, len(parts))
        if is_bad.any():
            bad = np.flatnonzero(is_bad)
            _fail(src, np.unique(part_row[bad]), "a polygon coordinate is not a number",
                  "JSON numbers [x1, y1, x2, y2, ...]", lambda r: part_of(r, bad))
        coords = np.array([_as_float(v) for v in flat], dtype=np.float64)
    odd = np.flatnonzero(part_len % 2 == 1)
    if len(odd):
        _fail(src, np.unique(part_row[odd]), "a polygon has an odd number of coordinates",
              "x, y pairs [x1, y1, x2, y2, ...]", lambda r: part_of(r, odd))
    short = np.flatnonzero(part_len < 6)
    if len(short):
        _fail(src, np.unique(part_row[short]), "a polygon has fewer than 3 points",
              "at least 3 points (6 numbers; pycocotools reads a first polygon of 4 numbers as a box)",
              lambda r: part_of(r, short))
    coord_start = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(part_len, out=coord_start[1:])
    coord_part = np.repeat(np.arange(len(parts)), part_len)
    with np.errstate(invalid="ignore"):
        is_nonfinite = ~np.isfinite(coords)
        is_huge = ~is_nonfinite & (np.abs(coords) > MAX_COORDINATE)
    if is_nonfinite.any():
        bad = np.unique(coord_part[is_nonfinite])
        _fail(src, np.unique(part_row[bad]), "a polygon has a NaN or infinite coordinate",
              "finite numbers", lambda r: part_of(r, bad))
    if is_huge.any():
        bad = np.unique(coord_part[is_huge])
        _fail(src, np.unique(part_row[bad]), f"a polygon coordinate is beyond +-{MAX_COORDINATE:g}",
              f"pixel coordinates within +-{MAX_COORDINATE:g}", lambda r: part_of(r, bad))
    points = coords.reshape(-1, 2)
    point_start = coord_start // 2
    few = np.flatnonzero(~_has_three_distinct(points, point_start))
    if len(few):
        _fail(src, np.unique(part_row[few]), "a polygon has fewer than 3 distinct points",
              "at least 3 distinct points", lambda r: part_of(r, few))
    return point_start, points


def _has_three_distinct(points: np.ndarray, point_start: np.ndarray) -> np.ndarray:
    """Per part (each with >= 3 points): does it have at least 3 distinct points?

    Examples
    --------
    >>> pts = np.array([[0, 0], [1, 0], [0, 1], [0, 0], [1, 1], [0, 0], [1, 1]], dtype=float)
    >>> _has_three_distinct(pts, np.array([0, 3, 7])).tolist()
    [True, False]
    """
    n_part = len(point_start) - 1
    out = np.ones(n_part, dtype=bool)
    if n_part == 0:
        return out
    z = np.ascontiguousarray(points).view(np.complex128).ravel()
    s = point_start[:-1]
    # Fast path: the first three points already differ (almost every real polygon).
    slow = np.flatnonzero((z[s] == z[s + 1]) | (z[s + 1] == z[s + 2]) | (z[s] == z[s + 2]))
    if not len(slow):
        return out
    counts = point_start[slow + 1] - point_start[slow]
    idx = np.repeat(point_start[slow] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    zz = z[idx]
    local_start = np.cumsum(counts) - counts
    first = np.repeat(zz[local_start], counts)
    differs = zz != first
    position = np.where(differs, np.arange(len(zz)), len(zz))
    second_at = np.minimum.reduceat(position, local_start)
    has_second = second_at < len(zz)
    second = np.repeat(zz[np.minimum(second_at, len(zz) - 1)], counts)
    third = differs & (zz != second)
    out[slow] = np.logical_or.reduceat(third, local_start) & has_second
    return out


def _parse_rles(src: _Source, rle_rows: np.ndarray) -> tuple:
    """Validate RLE records; return per record the canonical dict (None for polygons)."""
    values = src.values
    out: list = [None] * len(values)
    if not len(rle_rows):
        return tuple(out)
    bad_keys, bad_size, bad_counts = [], [], []
    sizes = np.zeros((len(values), 2), dtype=np.int64)
    list_rows, string_rows = [], []
    for r in rle_rows.tolist():
        v = values[r]
        if "size" not in v or "counts" not in v:
            bad_keys.append(r)
            continue
        size = v["size"]
        if not (isinstance(size, (list, tuple)) and len(size) == 2
                and all(type(s) is int or isinstance(s, np.integer) for s in size)
                and size[0] >= 0 and size[1] >= 0 and size[0] * size[1] <= _MAX_PIXELS):
            bad_size.append(r)
            continue
        sizes[r] = size
        counts = v["counts"]
        if isinstance(counts, (list, tuple)):
            list_rows.append(r)
        elif isinstance(counts, (str, bytes)):
            string_rows.append(r)
        else:
            bad_counts.append(r)
    if bad_keys:
        _fail(src, bad_keys, "an RLE `segmentation` without `size` and `counts`",
              "{\"size\": [height, width], \"counts\": ...}", lambda r: _show(values[r]))
    if bad_size:
        _fail(src, bad_size, "RLE `size` is not [height, width]",
              f"two integers >= 0 with height * width <= {_MAX_PIXELS}",
              lambda r: _show(values[r]["size"]))
    if bad_counts:
        _fail(src, bad_counts, "RLE `counts` is neither a list nor a string",
              "a list of run lengths or pycocotools' compressed string",
              lambda r: _show(values[r]["counts"]))
    total_of = sizes[:, 0] * sizes[:, 1]
    if list_rows:
        rows = np.array(list_rows)
        count_lists = [values[r]["counts"] for r in list_rows]
        flat = list(itertools.chain.from_iterable(count_lists))
        lengths = np.fromiter(map(len, count_lists), np.int64, len(count_lists))
        owner = np.repeat(np.arange(len(rows)), lengths)
        if not set(map(type, flat)) <= {int}:
            bad = [r for r, c in zip(list_rows, count_lists, strict=True)
                   if not all(type(x) is int or isinstance(x, np.integer) for x in c)]
            if bad:
                _fail(src, bad, "RLE `counts` has a value that is not an integer",
                      "non-negative integer run lengths", lambda r: _show(values[r]["counts"]))
        try:
            counts = np.array(flat, dtype=np.float64)
        except OverflowError:
            counts = np.array([_as_float(x) for x in flat], dtype=np.float64)
        negative = np.unique(owner[(counts < 0) | (counts >= 2**32)])
        if len(negative):
            _fail(src, rows[negative], "RLE `counts` has a negative or too large run length",
                  "run lengths in [0, 2**32)", lambda r: _show(values[r]["counts"]))
        sums = np.bincount(owner, weights=counts, minlength=len(rows))
        wrong = np.flatnonzero(sums != total_of[rows])
        if len(wrong):
            sums_of = dict(zip(rows[wrong].tolist(), sums[wrong].tolist(), strict=True))
            _fail(src, rows[wrong], "RLE run lengths do not add up to height * width",
                  "counts summing to size[0] * size[1]",
                  lambda r: f"a sum of {int(sums_of[r])} for size {sizes[r].tolist()}")
        for r in list_rows:
            out[r] = {"size": [int(sizes[r, 0]), int(sizes[r, 1])],
                      "counts": [int(x) for x in values[r]["counts"]]}
    if string_rows:
        rows = np.array(string_rows)
        encoded = [c.encode("utf-8") if isinstance(c, str) else bytes(c)
                   for c in (values[r]["counts"] for r in string_rows)]
        problem = _check_compressed(encoded)
        problem[(problem == 2) & (total_of[rows] == 0)] = 0  # "" is a fine 0 x 0 mask
        bad = np.flatnonzero(problem != 0)
        if len(bad):
            what = {1: "a character outside '0'..'o'", 2: "a string that ends inside a run (or is empty)"}
            code_of = dict(zip(rows[bad].tolist(), problem[bad].tolist(), strict=True))
            _fail(src, rows[bad], "compressed RLE `counts` is not pycocotools' encoding",
                  "the string of pycocotools.mask.encode",
                  lambda r: f"{what[code_of[r]]}: {_show(values[r]['counts'])}")
        for r, e in zip(string_rows, encoded, strict=True):
            out[r] = {"size": [int(sizes[r, 0]), int(sizes[r, 1])], "counts": e}
    _check_rle_sizes(src, rle_rows, sizes)
    return tuple(out)


def _check_rle_sizes(src: _Source, rle_rows: np.ndarray, sizes: np.ndarray) -> None:
    """An RLE must have its image's size (pycocotools silently gives IoU -1 otherwise)."""
    image_size = src.image_size[src.image[rle_rows]]
    known = np.isfinite(image_size).all(axis=1)
    wrong = rle_rows[known & (image_size != sizes[rle_rows]).any(axis=1)]
    if len(wrong):
        _fail(src, wrong, "RLE `size` differs from its image's [height, width]",
              "the image's size (pycocotools would give every pair IoU -1)",
              lambda r: f"{sizes[r].tolist()} for an image of "
                        f"{[int(v) for v in src.image_size[src.image[r]]]}")


def _check_compressed(strings: list) -> np.ndarray:
    """Check pycocotools' compressed counts strings without decoding them.

    Returns a problem code per string: 0 fine, 1 a character outside ``'0'..'o'``, 2 the
    string ends inside a run (or is empty).

    Notes
    -----
    The format (``maskApi.c``, ``rleToString`` / ``rleFrString``): each run length is stored in
    5-bit groups, low bits first, as the characters ``48 + group``; bit 0x20 says "more groups
    follow". pycocotools' decoder reads past the end of a string whose last character has that
    bit, so such strings must not reach it. Decoding every detection's string to check that its
    runs add up to ``height * width`` would cost as much as the evaluation itself: that is left
    undone (pycocotools' encoder never writes anything else), whereas the explicit runs of
    uncompressed RLE are checked.

    Examples
    --------
    >>> rle = mask_utils.encode(np.asfortranarray(np.eye(4, dtype=np.uint8)))
    >>> _check_compressed([rle["counts"], b"0!", b"0P", b""]).tolist()
    [0, 1, 2, 2]
    """
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, n)
    problem = np.where(lengths == 0, 2, 0)
    nonempty = np.flatnonzero(lengths > 0)
    if not len(nonempty):
        return problem
    c = np.frombuffer(b"".join(strings), dtype=np.uint8) - np.uint8(48)  # below '0' wraps to > 63
    string_end = np.cumsum(lengths)
    bad_char = np.add.reduceat(c > 63, string_end[nonempty] - lengths[nonempty]) > 0
    ends_inside_run = (c[string_end[nonempty] - 1] & 0x20) != 0
    problem[nonempty] = np.select([bad_char, ends_inside_run], [1, 2], default=0)
    return problem


# ----------------------------------------------------------------------------------------------
# Exact geometry (shapely)
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class _Exact:
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


def _build_exact(src: _Source, masks: _Masks, invalid_polygons: str) -> _Exact:
    n = len(masks.kind)
    geometry = np.full(n, None, dtype=object)
    area = np.full(n, np.nan)
    bounds = np.full((n, 4), np.nan)
    n_parts = masks.n_parts
    n_part_total = len(masks.point_start) - 1
    if n_part_total == 0:
        return _Exact(geometry, area, bounds)
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

            _fail(src, rows, "a polygon is self-intersecting (its edges cross or overlap)",
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
    poly_rows = np.flatnonzero(masks.kind == _POLYGON)
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
    return _Exact(geometry, area, bounds)


# ----------------------------------------------------------------------------------------------
# Raster masks (pycocotools.mask)
# ----------------------------------------------------------------------------------------------

class _Raster:
    """pycocotools RLEs per record, computed on demand (``rle[r]`` None until then)."""

    def __init__(self, n: int):
        self.rle: list = [None] * n
        self.area = np.full(n, np.nan)
        self.done = np.zeros(n, dtype=bool)


def _raster_image_size(src: _Source, rows: np.ndarray) -> np.ndarray:
    """(len(rows), 2) int64 height, width; error naming images without a usable size."""
    image = src.image[rows]
    size = src.image_size[image]
    with np.errstate(invalid="ignore"):
        usable = (np.isfinite(size).all(axis=1) & (size == np.round(size)).all(axis=1)
                  & (size >= 1).all(axis=1) & (size[:, 0] * size[:, 1] <= _MAX_PIXELS))
    if not usable.all():
        bad_images = np.unique(image[~usable])
        shown = "; ".join(f"image {src.image_label(int(i))} "
                          f"(height={src.image_size[i, 0]:g}, width={src.image_size[i, 1]:g})"
                          for i in bad_images[:_SHOW])
        more = f"; and {len(bad_images) - _SHOW} more" if len(bad_images) > _SHOW else ""
        raise InputError(f"{src.image_where}: {len(bad_images)} image(s) without a usable width and "
                         f"height: raster mask IoU (mask_iou: raster, and pairs with an RLE mask in "
                         f"exact mode) rasterises polygons at the image size, as pycocotools does; expected "
                         f"integer `width` and `height` >= 1; found {shown}{more}")
    return size.astype(np.int64)


def _ensure_raster(src: _Source, masks: _Masks, raster: _Raster, rows: np.ndarray) -> None:
    """Compute pycocotools' RLE (``COCO.annToRLE``) of the ``rows`` not done yet.

    Polygons: ``frPyObjects(parts, h, w)`` at the image size, parts merged; uncompressed RLE:
    ``frPyObjects`` (at its own size); compressed RLE: as it is.
    """
    rows = np.unique(rows)
    rows = rows[~raster.done[rows]]
    if not len(rows):
        return
    poly_rows = rows[masks.kind[rows] == _POLYGON]
    if len(poly_rows):
        size = _raster_image_size(src, poly_rows)
        _check_raster_extent(src, masks, poly_rows, size)
        key = size[:, 0] * (_MAX_PIXELS + 1) + size[:, 1]
        for k in np.unique(key):
            group = poly_rows[key == k]
            h, w = (int(v) for v in size[key == k][0])
            first = masks.part_start[group]
            count = masks.part_start[group + 1] - first
            part_ids = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
            ps = masks.point_start
            arrays = [masks.points[ps[p]:ps[p + 1]].ravel() for p in part_ids.tolist()]
            rles = mask_utils.frPyObjects(arrays, h, w)
            offsets = np.r_[0, np.cumsum(count)].tolist()
            for j, r in enumerate(group.tolist()):
                a, b = offsets[j], offsets[j + 1]
                raster.rle[r] = rles[a] if b - a == 1 else mask_utils.merge(rles[a:b])
    for r in rows[masks.kind[rows] == _RLE].tolist():
        rle = masks.rle[r]
        if isinstance(rle["counts"], list):
            rle = mask_utils.frPyObjects([rle], *rle["size"])[0]
        raster.rle[r] = rle
    raster.area[rows] = _rle_areas([raster.rle[r] for r in rows.tolist()])
    raster.done[rows] = True


def _rle_areas(rles: list) -> np.ndarray:
    """``maskUtils.area`` of many RLEs.

    Notes
    -----
    Called in chunks of 255: pycocotools 2.0.x builds its output with
    ``np.array((n,), dtype=np.uint8)``, which numpy 2 refuses for n > 255 (pycocotools itself
    only ever asks for one area at a time).
    """
    out = np.zeros(len(rles))
    for start in range(0, len(rles), 255):
        out[start:start + 255] = mask_utils.area(rles[start:start + 255])
    return out


def _check_raster_extent(src: _Source, masks: _Masks, rows: np.ndarray, size: np.ndarray) -> None:
    """Polygons to rasterise must lie within one image size of the image.

    pycocotools walks every polygon edge at 5x resolution, so far-away vertices cost memory
    without changing the mask (everything outside the image is clipped).
    """
    first = masks.point_start[masks.part_start[rows]]
    last = masks.point_start[masks.part_start[rows + 1]]
    counts = last - first
    idx = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    pts = masks.points[idx]
    owner = np.repeat(np.arange(len(rows)), counts)
    h = size[owner, 0].astype(np.float64)
    w = size[owner, 1].astype(np.float64)
    outside = (pts[:, 0] < -w) | (pts[:, 0] > 2 * w) | (pts[:, 1] < -h) | (pts[:, 1] > 2 * h)
    if outside.any():
        bad = np.unique(owner[outside])
        first_bad = {int(o): pts[np.flatnonzero(outside & (owner == o))[0]] for o in bad[:_SHOW]}
        size_of = {int(rows[o]): size[o] for o in bad[:_SHOW]}
        point_of = {int(rows[o]): first_bad[int(o)] for o in bad[:_SHOW]}
        _fail(src, rows[bad], "a polygon reaches far outside its image (pycocotools would rasterise "
              "all of it)", "vertices within one image size of the image: -width <= x <= 2 width, "
              "-height <= y <= 2 height",
              lambda r: f"vertex ({point_of[r][0]:g}, {point_of[r][1]:g}) for an image of "
                        f"{int(size_of[r][1])} x {int(size_of[r][0])}" if r in point_of else "")


# ----------------------------------------------------------------------------------------------
# Cache: one entry per GroundTruth / Detections object, while it lives
# ----------------------------------------------------------------------------------------------

@dataclass(eq=False)
class _Entry:
    src: _Source
    masks: _Masks
    exact: dict = field(default_factory=dict)   # invalid_polygons -> _Exact
    raster: _Raster | None = None
    gt_ref: Any = None


_CACHE: weakref.WeakKeyDictionary[Any, _Entry] = weakref.WeakKeyDictionary()


def _entry(obj: GroundTruth | Detections, gt: GroundTruth) -> _Entry:
    entry = _CACHE.get(obj)
    if entry is not None and (entry.gt_ref is None or entry.gt_ref() is gt):
        return entry
    if isinstance(obj, GroundTruth):
        src = _gt_source(obj)
        entry = _Entry(src=src, masks=_parse(src))
    else:
        src = _dt_source(obj, gt)
        entry = _Entry(src=src, masks=_parse(src), gt_ref=weakref.ref(gt))
    entry.raster = _Raster(len(src))
    _CACHE[obj] = entry
    return entry


def _exact(entry: _Entry, invalid_polygons: str) -> _Exact:
    if invalid_polygons not in entry.exact:
        entry.exact[invalid_polygons] = _build_exact(entry.src, entry.masks, invalid_polygons)
    return entry.exact[invalid_polygons]


# ----------------------------------------------------------------------------------------------
# IoU of pairs
# ----------------------------------------------------------------------------------------------

def _lowest_threshold(protocol: Any) -> float:
    """The smallest IoU that can match under ``protocol`` (pycocotools caps t at 1 - 1e-10)."""
    lowest = float(min(protocol.iou_thresholds))
    return min(lowest, 1 - 1e-10)


def _exact_pair_iou(det: _Exact, gt: _Exact, det_rows: np.ndarray, gt_rows: np.ndarray,
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


def _raster_pair_iou(det_src: _Source, det: _Masks, det_raster: _Raster, gt_src: _Source,
                     gt: _Masks, gt_raster: _Raster, det_rows: np.ndarray, gt_rows: np.ndarray,
                     is_crowd: np.ndarray) -> np.ndarray:
    """pycocotools' ``maskUtils.iou(dt, gt, iscrowd)`` for aligned pairs, one call per image."""
    n = len(det_rows)
    iou = np.zeros(n)
    # Masks whose extents (polygon vertices, RLE pixels), widened by 2 px, do not overlap share
    # no pixel: pycocotools' rasteriser keeps pixels within 1 px of the vertices' extent, and
    # gives such pairs IoU 0.
    db, gb = det.bounds[det_rows], gt.bounds[gt_rows]
    with np.errstate(invalid="ignore"):
        apart = ((np.minimum(db[:, 2], gb[:, 2]) - np.maximum(db[:, 0], gb[:, 0]) < -4)
                 | (np.minimum(db[:, 3], gb[:, 3]) - np.maximum(db[:, 1], gb[:, 1]) < -4))
    todo = np.flatnonzero(~apart)
    if not len(todo):
        return iou
    det_rows, gt_rows, is_crowd = det_rows[todo], gt_rows[todo], is_crowd[todo]
    _ensure_raster(gt_src, gt, gt_raster, gt_rows)
    _ensure_raster(det_src, det, det_raster, det_rows)
    image = gt_src.image[gt_rows]
    order = np.lexsort((gt_rows, det_rows, image))
    sorted_image = image[order]
    bounds = np.flatnonzero(np.r_[True, sorted_image[1:] != sorted_image[:-1], True])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        sel = order[lo:hi]
        d_unique, d_index = np.unique(det_rows[sel], return_inverse=True)
        g_unique, g_first, g_index = np.unique(gt_rows[sel], return_index=True, return_inverse=True)
        crowd = is_crowd[sel][g_first].astype(np.uint8)
        matrix = mask_utils.iou([det_raster.rle[r] for r in d_unique.tolist()],
                                [gt_raster.rle[r] for r in g_unique.tolist()], crowd)
        iou[todo[sel]] = np.asarray(matrix, dtype=np.float64).reshape(len(d_unique), len(g_unique))[
            d_index, g_index]
    return iou


def pair_mask_iou(gt: GroundTruth, dt: Detections, gt_rows: np.ndarray, det_rows: np.ndarray,
                  gt_is_crowd: np.ndarray, protocol: Any) -> np.ndarray:
    """Mask IoU of aligned (ground truth, detection) pairs under ``protocol``.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    gt_rows, det_rows : int64 (n_pair,)
        Rows of the pairs (same image and class).
    gt_is_crowd : bool (n_pair,)
        Crowd pairs use intersection over the detection's area.
    protocol : Protocol
        Reads ``mask_iou``, ``invalid_polygons`` and ``iou_thresholds``.

    Returns
    -------
    float64 (n_pair,)
        ``mask_iou="raster"``: pycocotools' values exactly. ``"exact"``: shapely areas for
        polygon pairs (0 for pairs that cannot reach the lowest threshold, see the module
        Notes), raster values for pairs with an RLE mask.

    Raises
    ------
    InputError
        A record without a usable segmentation, or (raster) an image without a size.

    Examples
    --------
    >>> from deteval import get_protocol, load_detections, load_ground_truth
    >>> gt = load_ground_truth({"images": [{"id": 1, "width": 100, "height": 100}],
    ...     "categories": [{"id": 1, "name": "a"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 1250,
    ...                      "bbox": [10, 10, 50, 50], "segmentation": [[10, 10, 60, 10, 10, 60]]}]})
    >>> dt = load_detections([{"image_id": 1, "category_id": 1, "score": 0.9,
    ...                        "segmentation": [[10, 10, 60, 10, 60, 60, 10, 60]]}], gt)
    >>> p = get_protocol("coco").replace(iou_type="segm")
    >>> rows = np.array([0])
    >>> pair_mask_iou(gt, dt, rows, rows, np.array([False]), p).tolist()
    [0.5]
    >>> pair_mask_iou(gt, dt, rows, rows, np.array([False]), p.replace(mask_iou="raster")).round(4).tolist()
    [0.49]
    >>> detection_areas(dt, rows, gt, p).tolist()  # no bbox: the polygon's area
    [2500.0]
    """
    gt_rows = np.asarray(gt_rows, dtype=np.int64)
    det_rows = np.asarray(det_rows, dtype=np.int64)
    is_crowd = np.asarray(gt_is_crowd, dtype=bool)
    ge = _entry(gt, gt)
    de = _entry(dt, gt)
    if protocol.mask_iou == "raster":
        return _raster_pair_iou(de.src, de.masks, de.raster, ge.src, ge.masks, ge.raster,
                                det_rows, gt_rows, is_crowd)
    gx, dx = _exact(ge, protocol.invalid_polygons), _exact(de, protocol.invalid_polygons)
    iou = np.zeros(len(gt_rows))
    both_polygons = (ge.masks.kind[gt_rows] == _POLYGON) & (de.masks.kind[det_rows] == _POLYGON)
    exact = np.flatnonzero(both_polygons)

    def describe(i: int) -> str:
        g, d = int(gt_rows[exact[i]]), int(det_rows[exact[i]])
        return (f"{ge.src.where}: annotation #{int(ge.src.number[g])} ({ge.src.label(g)}) and "
                f"{de.src.where}: detection #{int(de.src.number[d])} ({de.src.label(d)})")

    iou[exact] = _exact_pair_iou(dx, gx, det_rows[exact], gt_rows[exact], is_crowd[exact],
                                 _lowest_threshold(protocol), describe)
    raster = np.flatnonzero(~both_polygons)
    if len(raster):
        iou[raster] = _raster_pair_iou(de.src, de.masks, de.raster, ge.src, ge.masks, ge.raster,
                                       det_rows[raster], gt_rows[raster], is_crowd[raster])
    return iou


def prepare_masks(gt: GroundTruth, dt: Detections, protocol: Any) -> None:
    """Parse and validate every mask now (and, in exact mode, build the polygons).

    The work is cached on ``gt`` and ``dt`` while they live, so a process forked afterwards
    (``evaluate(..., workers=N)``) inherits it instead of redoing it per worker, and invalid
    input is reported once, by the parent. Raster masks are still made on demand, per shard.

    Raises
    ------
    InputError
        The first invalid segmentation found (see :func:`pair_mask_iou`).
    """
    ge, de = _entry(gt, gt), _entry(dt, gt)
    if protocol.mask_iou == "exact":
        _exact(ge, protocol.invalid_polygons)
        _exact(de, protocol.invalid_polygons)


def detection_areas(dt: Detections, rows: np.ndarray, gt: GroundTruth, protocol: Any) -> np.ndarray:
    """Area of each detection for the size ranges, decided record by record.

    A record with a bbox: its ``w * h`` (pycocotools' ``loadRes``). Without: its mask's area,
    exact polygon area in ``exact`` mode, pixel count in ``raster`` mode (and for RLE masks).

    Parameters
    ----------
    dt : Detections
    rows : int64 (n,)
    gt : GroundTruth
    protocol : Protocol

    Returns
    -------
    float64 (n,)

    Notes
    -----
    pycocotools decides once, from the *first* result record: if it has a non-empty bbox,
    every area is ``w * h`` (records without a bbox crash it); otherwise every area is
    ``maskUtils.area`` of a compressed RLE (polygons crash it). deteval decides per record,
    which gives the same numbers on every file pycocotools accepts.
    """
    rows = np.asarray(rows, dtype=np.int64)
    box = boxes_as(dt.box[rows], dt.box_format, "xywh")
    area = box[:, 2] * box[:, 3]
    entry = _entry(dt, gt)  # validates every record's mask, with or without a bbox
    if protocol.mask_iou == "exact":
        _exact(entry, protocol.invalid_polygons)
    no_box = np.flatnonzero(~np.asarray(dt.has_box)[rows])
    if not len(no_box):
        return area
    need = rows[no_box]
    is_poly = entry.masks.kind[need] == _POLYGON
    if protocol.mask_iou == "exact" and is_poly.any():
        area[no_box[is_poly]] = _exact(entry, protocol.invalid_polygons).area[need[is_poly]]
        no_box, need = no_box[~is_poly], need[~is_poly]
    if len(need):
        area[no_box] = _mask_pixel_area(entry, need)
    return area


def _mask_pixel_area(entry: _Entry, rows: np.ndarray) -> np.ndarray:
    """Pixel count of the masks of ``rows`` (RLE directly; polygons rasterised)."""
    out = np.zeros(len(rows))
    masks = entry.masks
    is_rle = masks.kind[rows] == _RLE
    for i in np.flatnonzero(is_rle).tolist():
        rle = masks.rle[int(rows[i])]
        counts = rle["counts"]
        out[i] = (float(sum(counts[1::2])) if isinstance(counts, list)
                  else float(mask_utils.area(rle)))
    poly = np.flatnonzero(~is_rle)
    if len(poly):
        _ensure_raster(entry.src, masks, entry.raster, rows[poly])
        out[poly] = entry.raster.area[rows[poly]]
    return out


# ----------------------------------------------------------------------------------------------
# Public helpers
# ----------------------------------------------------------------------------------------------

def segm_iou(det: list, gt: list, gt_is_crowd: Any = None, *, mask_iou: str = "exact",
             image_size: tuple | None = None, invalid_polygons: str = "error") -> np.ndarray:
    """IoU matrix between COCO segmentations (polygon lists or RLE dicts).

    Parameters
    ----------
    det : list (n_det,)
        Detection segmentations, e.g. ``[[[0, 0, 10, 0, 10, 10, 0, 10]], ...]``.
    gt : list (n_gt,)
        Ground-truth segmentations.
    gt_is_crowd : bool (n_gt,), optional
        Crowd columns use intersection over the detection's area.
    mask_iou : {"exact", "raster"}
    image_size : (height, width), optional
        Needed to rasterise (``raster`` mode, or RLE masks).
    invalid_polygons : {"error", "make_valid"}

    Returns
    -------
    float64 (n_det, n_gt)

    Raises
    ------
    InputError
        Invalid segmentations (the message names the record).

    Examples
    --------
    >>> square = [[0, 0, 10, 0, 10, 10, 0, 10]]
    >>> half = [[5, 0, 15, 0, 15, 10, 5, 10]]
    >>> segm_iou([half], [square]).round(6).tolist()
    [[0.333333]]
    >>> triangle = [[10, 10, 60, 10, 10, 60]]
    >>> float(segm_iou([triangle], [square], mask_iou="raster", image_size=(100, 100))[0, 0])
    0.0
    """
    n_det, n_gt = len(det), len(gt)
    crowd = np.zeros(n_gt, bool) if gt_is_crowd is None else np.asarray(gt_is_crowd, bool)
    size = np.full((1, 2), np.nan) if image_size is None else np.array([image_size], np.float64)

    def source(values: list, kind: str) -> _Source:
        return _Source(values=tuple(values), where=f"<{kind}s>", kind=kind,
                       number=np.arange(len(values)), label=lambda r: f"index {r}",
                       image=np.zeros(len(values), np.int64), image_size=size,
                       image_label=lambda i: "of image_size", image_where="segm_iou")

    d_src, g_src = source(det, "detection"), source(gt, "annotation")
    d_entry = _Entry(src=d_src, masks=_parse(d_src), raster=_Raster(n_det))
    g_entry = _Entry(src=g_src, masks=_parse(g_src), raster=_Raster(n_gt))
    det_rows = np.repeat(np.arange(n_det), n_gt)
    gt_rows = np.tile(np.arange(n_gt), n_det)
    pair_crowd = crowd[gt_rows]
    if mask_iou == "raster":
        iou = _raster_pair_iou(d_src, d_entry.masks, d_entry.raster, g_src, g_entry.masks,
                               g_entry.raster, det_rows, gt_rows, pair_crowd)
        return iou.reshape(n_det, n_gt)
    dx, gx = _exact(d_entry, invalid_polygons), _exact(g_entry, invalid_polygons)
    iou = np.zeros(len(det_rows))
    both = (d_entry.masks.kind[det_rows] == _POLYGON) & (g_entry.masks.kind[gt_rows] == _POLYGON)
    exact = np.flatnonzero(both)
    iou[exact] = _exact_pair_iou(dx, gx, det_rows[exact], gt_rows[exact], pair_crowd[exact], 0.0,
                                 lambda i: f"detection {int(det_rows[exact[i]])} and annotation "
                                           f"{int(gt_rows[exact[i]])}")
    other = np.flatnonzero(~both)
    if len(other):
        iou[other] = _raster_pair_iou(d_src, d_entry.masks, d_entry.raster, g_src, g_entry.masks,
                                      g_entry.raster, det_rows[other], gt_rows[other],
                                      pair_crowd[other])
    return iou.reshape(n_det, n_gt)


@dataclass(frozen=True, eq=False)
class MaskModeComparison:
    """Exact against raster mask IoU on the same data (see :func:`compare_mask_modes`).

    Attributes
    ----------
    exact, raster : EvalResult
        The two evaluations (``mask_iou`` "exact" and "raster", all else equal).
    metric_difference : dict
        Metric name -> exact minus raster (NaN where either is undefined).
    n_outcomes : int
        (lane, detection) outcomes compared: lanes are (area range, IoU threshold) pairs,
        detections those kept within ``max_dets``.
    n_changed : int
        Outcomes whose status (TP, FP or ignored) differs: what moves the metrics.
    n_matches_changed : int
        Outcomes whose matched ground truth differs (matched to another one, or matched in one
        mode only), matches to ignored ground truth included.
    n_detections_changed : int
        Detections whose status differs in at least one lane.
    changed_by_threshold : int64 (n_iou_thr,)
        Outcomes whose status differs in the first area range ("all"), per IoU threshold.
    """

    exact: Any
    raster: Any
    metric_difference: dict
    n_outcomes: int
    n_changed: int
    n_matches_changed: int
    n_detections_changed: int
    changed_by_threshold: np.ndarray


def _matched_gt(table: Any) -> np.ndarray:
    """(n_lane, n_det) ground-truth row matched by each detection in each lane, -1 if none."""
    out = np.full(table.det_is_tp.shape, -1, dtype=np.int64)
    out[table.match_lane, table.match_det] = table.match_gt
    return out


def compare_mask_modes(gt: Any, dt: Any, protocol: Any = "coco") -> MaskModeComparison:
    """Evaluate masks with exact and with raster IoU and report what differs.

    Parameters
    ----------
    gt : GroundTruth, path or dict
    dt : Detections, path or list
    protocol : str or Protocol
        Its ``iou_type`` is set to ``"segm"``; ``mask_iou`` is varied.

    Returns
    -------
    MaskModeComparison

    Examples
    --------
    >>> gt = {"images": [{"id": 1, "width": 100, "height": 100}],
    ...       "categories": [{"id": 1, "name": "thing"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
    ...                        "bbox": [10, 10, 50, 50], "area": 1250,
    ...                        "segmentation": [[10, 10, 60, 10, 10, 60]]}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [10, 10, 52.5, 52.5],
    ...        "segmentation": [[10, 10, 62.5, 10, 10, 62.5]]}]
    >>> c = compare_mask_modes(gt, dt)  # IoU 0.907 exact, 0.889 raster: only t = 0.9 differs
    >>> c.n_outcomes, c.n_changed, c.n_matches_changed, c.changed_by_threshold.tolist()
    (40, 2, 4, [0, 0, 0, 0, 0, 0, 0, 0, 1, 0])
    >>> round(c.metric_difference["AP"], 3)
    0.1
    """
    from deteval.evaluate import evaluate, resolve_protocol
    from deteval.io import load_detections, load_ground_truth

    protocol = resolve_protocol(protocol).replace(iou_type="segm")
    if not isinstance(gt, GroundTruth):
        gt = load_ground_truth(gt)
    if not isinstance(dt, Detections):
        dt = load_detections(dt, gt)
    # The same loaded objects twice: their masks are parsed once (cached on them).
    ex = evaluate(gt, dt, protocol.replace(mask_iou="exact"))
    ra = evaluate(gt, dt, protocol.replace(mask_iou="raster"))
    diff = {}
    for name, value in ex.metrics.items():
        other = ra.metrics.get(name, float("nan"))
        diff[name] = float(value) - float(other)
    te, tr = ex.table, ra.table
    changed = (te.det_is_tp != tr.det_is_tp) | (te.det_is_ignored != tr.det_is_ignored)
    matches_changed = _matched_gt(te) != _matched_gt(tr)
    by_threshold = changed[:len(protocol.iou_thresholds)].sum(axis=1)
    return MaskModeComparison(exact=ex, raster=ra, metric_difference=diff,
                              n_outcomes=int(changed.size), n_changed=int(changed.sum()),
                              n_matches_changed=int(matches_changed.sum()),
                              n_detections_changed=int(changed.any(axis=0).sum()),
                              changed_by_threshold=by_threshold)
