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
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
from pycocotools import mask as mask_utils

from deteval.data import Detections, GroundTruth
from deteval.errors import InputError

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
]

#: Largest absolute polygon coordinate accepted: beyond it a coordinate is a bug upstream
#: (pycocotools would try to rasterise it and run out of memory or overflow).
MAX_COORDINATE = 1e7

#: Image sizes pycocotools' 32-bit run lengths can hold.
MAX_PIXELS = 2**31 - 1

#: Values of :attr:`CheckedMasks.kind`.
POLYGON, RLE = 0, 1

#: Records named in one error message (then "and N more").
N_SHOWN = 5


# ----------------------------------------------------------------------------------------------
# Where records come from (for messages)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SegmentationSource:
    """The raw segmentation values of one collection, and how to name its records."""

    values: tuple
    where: str
    kind: str  # "annotation" / "detection"
    number: np.ndarray  # record number in its file, per row
    label: Callable[[int], str]  # row -> "id=7, image_id=1"
    image: np.ndarray  # image index per row
    image_size: np.ndarray  # (n_img, 2) float64 height, width; NaN where unknown
    image_label: Callable[[int], str]
    image_where: str

    def __len__(self) -> int:
        return len(self.values)


def _show(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return text


def fail_records(
    src: SegmentationSource,
    rows: Any,
    problem: str,
    expected: str,
    found: Callable[[int], str],
    hint: str = "",
) -> NoReturn:
    """Raise one InputError naming the first five records (by row) with ``problem``.

    The message reads ``<file>: <record> (<ids>): <problem>; expected <...>,
    found <...>`` (many records: the count and the first five), then an optional hint.
    """
    rows = [int(r) for r in rows]
    if len(rows) == 1:
        r = rows[0]
        raise InputError(
            f"{src.where}: {src.kind} #{int(src.number[r])} ({src.label(r)}): "
            f"{problem}; expected {expected}, found {found(r)}{hint}"
        )
    shown = "; ".join(f"#{int(src.number[r])} ({src.label(r)}) {found(r)}" for r in rows[:N_SHOWN])
    more = f"; and {len(rows) - N_SHOWN} more" if len(rows) > N_SHOWN else ""
    raise InputError(
        f"{src.where}: {len(rows)} {src.kind}s: {problem}; expected {expected}; found {shown}{more}{hint}"
    )


def _image_sizes(gt: GroundTruth) -> np.ndarray:
    """(n_img, 2) float64 height, width of every image (NaN where the file gives none)."""
    return np.stack(
        [np.asarray(gt.image_height, np.float64), np.asarray(gt.image_width, np.float64)], axis=1
    ).reshape(-1, 2)


def ground_truth_source(gt: GroundTruth) -> SegmentationSource:
    """The annotations' segmentations, named by annotation and image id.

    Raises
    ------
    InputError
        Ground truth without any segmentation (VOC, YOLO, COCO boxes only).
    """
    if gt.segmentation is None:
        raise InputError(
            f"{gt.source}: iou_type 'segm' needs a `segmentation` (polygons or RLE) on "
            f"every annotation; expected COCO instances with masks, found ground truth "
            f"without any (VOC and YOLO boxes carry no masks)"
        )
    ann_id, img_id, image = gt.annotation_id, gt.image_id, gt.image
    return SegmentationSource(
        values=tuple(gt.segmentation),
        where=gt.source,
        kind="annotation",
        number=np.arange(len(gt)),
        label=lambda r: f"id={int(ann_id[r])}, image_id={int(img_id[image[r]])}",
        image=np.asarray(image),
        image_size=_image_sizes(gt),
        image_label=lambda i: f"id={int(img_id[i])}",
        image_where=gt.source,
    )


def detection_source(dt: Detections, gt: GroundTruth) -> SegmentationSource:
    """The detections' segmentations, named by record number and image id.

    Raises
    ------
    InputError
        Detections given as boxes only.
    """
    img_id, image = gt.image_id, dt.image
    if dt.segmentation is None and len(dt):
        raise InputError(
            f"{dt.source}: iou_type 'segm' needs a `segmentation` on every detection; "
            f"expected polygons or RLE, found boxes only (evaluate boxes with "
            f"iou_type 'bbox')"
        )
    values = tuple(dt.segmentation) if dt.segmentation is not None else ()
    return SegmentationSource(
        values=values,
        where=dt.source,
        kind="detection",
        number=np.asarray(dt.order),
        label=lambda r: f"image_id={int(img_id[image[r]])}",
        image=np.asarray(image),
        image_size=_image_sizes(gt),
        image_label=lambda i: f"id={int(img_id[i])}",
        image_where=gt.source,
    )


def values_source(values: list, kind: str, image_size: np.ndarray) -> SegmentationSource:
    """Segmentations given as a plain list (all of one image of ``image_size``), named by index.

    Parameters
    ----------
    values : list
        Raw segmentations.
    kind : {"annotation", "detection"}
    image_size : float64 (1, 2)
        Height and width of the one image (NaN where unknown).
    """
    return SegmentationSource(
        values=tuple(values),
        where=f"<{kind}s>",
        kind=kind,
        number=np.arange(len(values)),
        label=lambda r: f"index {r}",
        image=np.zeros(len(values), np.int64),
        image_size=image_size,
        image_label=lambda i: "of image_size",
        image_where="segm_iou",
    )


# ----------------------------------------------------------------------------------------------
# Parsing and validation: raw values -> canonical columns
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CheckedMasks:
    """Canonical masks of every record of a collection.

    kind : int8 (n,)
        ``POLYGON`` or ``RLE``.
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
        """The number of parts of each record (int)."""
        return np.diff(self.part_start)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _as_float(v: Any) -> float:
    """float(v), or inf for integers beyond float range (then reported as non-finite)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf


def parse_masks(src: SegmentationSource) -> CheckedMasks:
    """Validate every record's segmentation and build the canonical columns."""
    values = src.values
    n = len(values)
    codes = {list: 0, tuple: 0, dict: 1, type(None): 2}
    code = np.fromiter((codes.get(type(v), 3) for v in values), dtype=np.int8, count=n)
    if (code == 2).any():
        fail_records(
            src,
            np.flatnonzero(code == 2),
            "no `segmentation` (iou_type 'segm' needs a mask for every record)",
            "polygons [[x1, y1, x2, y2, ...], ...] or an RLE {size, counts}",
            lambda r: "nothing",
        )
    if (code == 3).any():
        fail_records(
            src,
            np.flatnonzero(code == 3),
            "`segmentation` is neither a polygon list nor an RLE object",
            "polygons [[x1, y1, x2, y2, ...], ...] or an RLE {size, counts}",
            lambda r: _show(values[r]),
        )
    poly_rows = np.flatnonzero(code == 0)
    n_parts = np.zeros(n, dtype=np.int64)
    n_parts[poly_rows] = np.fromiter((len(values[r]) for r in poly_rows), np.int64, len(poly_rows))
    empty = poly_rows[n_parts[poly_rows] == 0]
    if len(empty):
        fail_records(
            src,
            empty,
            "`segmentation` is an empty polygon list",
            "at least one polygon [x1, y1, x2, y2, x3, y3, ...]",
            lambda r: "[]",
        )
    part_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_parts, out=part_start[1:])
    point_start, points = _parse_polygons(src, poly_rows, n_parts, part_start)
    rle = _parse_rles(src, np.flatnonzero(code == 1))
    kind = np.where(code == 1, RLE, POLYGON).astype(np.int8)
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
        compressed = [
            rle[r]
            if not isinstance(rle[r]["counts"], list)
            else mask_utils.frPyObjects([rle[r]], *rle[r]["size"])[0]
            for r in rle_rows.tolist()
        ]
        box = np.asarray(mask_utils.toBbox(compressed), dtype=np.float64).reshape(-1, 4)
        bounds[rle_rows] = np.c_[box[:, :2], box[:, :2] + box[:, 2:]]
    return CheckedMasks(
        kind=kind, part_start=part_start, point_start=point_start, points=points, rle=rle, bounds=bounds
    )


def _parse_polygons(
    src: SegmentationSource, poly_rows: np.ndarray, n_parts: np.ndarray, part_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
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
        fail_records(
            src,
            np.unique(part_row[bad]),
            "a polygon is not a list of numbers",
            "polygons [[x1, y1, x2, y2, ...], ...]",
            lambda r: part_of(r, bad),
        )
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
            fail_records(
                src,
                np.unique(part_row[bad]),
                "a polygon coordinate is not a number",
                "JSON numbers [x1, y1, x2, y2, ...]",
                lambda r: part_of(r, bad),
            )
        coords = np.array([_as_float(v) for v in flat], dtype=np.float64)
    odd = np.flatnonzero(part_len % 2 == 1)
    if len(odd):
        fail_records(
            src,
            np.unique(part_row[odd]),
            "a polygon has an odd number of coordinates",
            "x, y pairs [x1, y1, x2, y2, ...]",
            lambda r: part_of(r, odd),
        )
    short = np.flatnonzero(part_len < 6)
    if len(short):
        fail_records(
            src,
            np.unique(part_row[short]),
            "a polygon has fewer than 3 points",
            "at least 3 points (6 numbers; pycocotools reads a first polygon of 4 numbers as a box)",
            lambda r: part_of(r, short),
        )
    coord_start = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(part_len, out=coord_start[1:])
    coord_part = np.repeat(np.arange(len(parts)), part_len)
    with np.errstate(invalid="ignore"):
        is_nonfinite = ~np.isfinite(coords)
        is_huge = ~is_nonfinite & (np.abs(coords) > MAX_COORDINATE)
    if is_nonfinite.any():
        bad = np.unique(coord_part[is_nonfinite])
        fail_records(
            src,
            np.unique(part_row[bad]),
            "a polygon has a NaN or infinite coordinate",
            "finite numbers",
            lambda r: part_of(r, bad),
        )
    if is_huge.any():
        bad = np.unique(coord_part[is_huge])
        fail_records(
            src,
            np.unique(part_row[bad]),
            f"a polygon coordinate is beyond +-{MAX_COORDINATE:g}",
            f"pixel coordinates within +-{MAX_COORDINATE:g}",
            lambda r: part_of(r, bad),
        )
    points = coords.reshape(-1, 2)
    point_start = coord_start // 2
    few = np.flatnonzero(~_has_three_distinct(points, point_start))
    if len(few):
        fail_records(
            src,
            np.unique(part_row[few]),
            "a polygon has fewer than 3 distinct points",
            "at least 3 distinct points",
            lambda r: part_of(r, few),
        )
    return point_start, points


def _has_three_distinct(points: np.ndarray, point_start: np.ndarray) -> np.ndarray:
    """Per part (each with >= 3 points): whether it has at least 3 distinct points.

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


def _parse_rles(src: SegmentationSource, rle_rows: np.ndarray) -> tuple:
    """Validate RLE records; return per record the canonical dict (None for polygons)."""
    values = src.values
    out: list = [None] * len(values)
    if not len(rle_rows):
        return tuple(out)
    sizes, list_rows, string_rows = _rle_sizes_and_kinds(src, rle_rows)
    total_of = sizes[:, 0] * sizes[:, 1]
    if list_rows:
        _check_list_counts(src, list_rows, sizes, total_of)
        for r in list_rows:
            out[r] = {
                "size": [int(sizes[r, 0]), int(sizes[r, 1])],
                "counts": [int(x) for x in values[r]["counts"]],
            }
    if string_rows:
        encoded = _check_string_counts(src, string_rows, sizes, total_of)
        for r, e in zip(string_rows, encoded, strict=True):
            out[r] = {"size": [int(sizes[r, 0]), int(sizes[r, 1])], "counts": e}
    _check_rle_sizes(src, rle_rows, sizes)
    return tuple(out)


def _rle_sizes_and_kinds(src: SegmentationSource, rle_rows: np.ndarray) -> tuple[np.ndarray, list, list]:
    """Check each RLE's keys, ``size`` and ``counts`` type.

    Returns
    -------
    sizes : int64 (n_records, 2)
        ``[height, width]`` of the RLE rows (0 elsewhere).
    list_rows, string_rows : list of int
        The RLE rows with uncompressed (list) and compressed (string) ``counts``.
    """
    values = src.values
    bad_keys, bad_size, bad_counts = [], [], []
    sizes = np.zeros((len(values), 2), dtype=np.int64)
    list_rows, string_rows = [], []
    for r in rle_rows.tolist():
        v = values[r]
        if "size" not in v or "counts" not in v:
            bad_keys.append(r)
            continue
        size = v["size"]
        if not (
            isinstance(size, (list, tuple))
            and len(size) == 2
            and all(type(s) is int or isinstance(s, np.integer) for s in size)
            and size[0] >= 0
            and size[1] >= 0
            and size[0] * size[1] <= MAX_PIXELS
        ):
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
        fail_records(
            src,
            bad_keys,
            "an RLE `segmentation` without `size` and `counts`",
            '{"size": [height, width], "counts": ...}',
            lambda r: _show(values[r]),
        )
    if bad_size:
        fail_records(
            src,
            bad_size,
            "RLE `size` is not [height, width]",
            f"two integers >= 0 with height * width <= {MAX_PIXELS}",
            lambda r: _show(values[r]["size"]),
        )
    if bad_counts:
        fail_records(
            src,
            bad_counts,
            "RLE `counts` is neither a list nor a string",
            "a list of run lengths or pycocotools' compressed string",
            lambda r: _show(values[r]["counts"]),
        )
    return sizes, list_rows, string_rows


def _check_list_counts(
    src: SegmentationSource, list_rows: list, sizes: np.ndarray, total_of: np.ndarray
) -> None:
    """Uncompressed ``counts``: integers in [0, 2**32) adding up to ``height * width``."""
    values = src.values
    rows = np.array(list_rows)
    count_lists = [values[r]["counts"] for r in list_rows]
    flat = list(itertools.chain.from_iterable(count_lists))
    lengths = np.fromiter(map(len, count_lists), np.int64, len(count_lists))
    owner = np.repeat(np.arange(len(rows)), lengths)
    if not set(map(type, flat)) <= {int}:
        bad = [
            r
            for r, c in zip(list_rows, count_lists, strict=True)
            if not all(type(x) is int or isinstance(x, np.integer) for x in c)
        ]
        if bad:
            fail_records(
                src,
                bad,
                "RLE `counts` has a value that is not an integer",
                "non-negative integer run lengths",
                lambda r: _show(values[r]["counts"]),
            )
    try:
        counts = np.array(flat, dtype=np.float64)
    except OverflowError:
        counts = np.array([_as_float(x) for x in flat], dtype=np.float64)
    negative = np.unique(owner[(counts < 0) | (counts >= 2**32)])
    if len(negative):
        fail_records(
            src,
            rows[negative],
            "RLE `counts` has a negative or too large run length",
            "run lengths in [0, 2**32)",
            lambda r: _show(values[r]["counts"]),
        )
    sums = np.bincount(owner, weights=counts, minlength=len(rows))
    wrong = np.flatnonzero(sums != total_of[rows])
    if len(wrong):
        sums_of = dict(zip(rows[wrong].tolist(), sums[wrong].tolist(), strict=True))
        fail_records(
            src,
            rows[wrong],
            "RLE run lengths do not add up to height * width",
            "counts summing to size[0] * size[1]",
            lambda r: f"a sum of {int(sums_of[r])} for size {sizes[r].tolist()}",
        )


def _check_string_counts(
    src: SegmentationSource, string_rows: list, sizes: np.ndarray, total_of: np.ndarray
) -> list[bytes]:
    """Compressed ``counts``: pycocotools' encoding, decoding to ``height * width``; as bytes."""
    values = src.values
    rows = np.array(string_rows)
    encoded = [
        c.encode("utf-8") if isinstance(c, str) else bytes(c)
        for c in (values[r]["counts"] for r in string_rows)
    ]
    problem = _check_compressed(encoded)
    problem[(problem == 2) & (total_of[rows] == 0)] = 0  # "" is a fine 0 x 0 mask
    bad = np.flatnonzero(problem != 0)
    if len(bad):
        what = {1: "a character outside '0'..'o'", 2: "a string that ends inside a run (or is empty)"}
        code_of = dict(zip(rows[bad].tolist(), problem[bad].tolist(), strict=True))
        fail_records(
            src,
            rows[bad],
            "compressed RLE `counts` is not pycocotools' encoding",
            "the string of pycocotools.mask.encode",
            lambda r: f"{what[code_of[r]]}: {_show(values[r]['counts'])}",
        )
    sums = _compressed_run_sums_batched(encoded)
    wrong = np.flatnonzero(sums != total_of[rows])
    if len(wrong):
        sums_of = dict(zip(rows[wrong].tolist(), sums[wrong].tolist(), strict=True))
        fail_records(
            src,
            rows[wrong],
            "compressed RLE runs do not add up to height * width "
            "(pycocotools would read or write past the mask)",
            "counts (decoded) summing to size[0] * size[1]",
            lambda r: (
                "a sum of "
                + ("runs longer than 2**35" if sums_of[r] < 0 else str(sums_of[r]))
                + f" for size {sizes[r].tolist()}"
            ),
        )
    return encoded


def _check_rle_sizes(src: SegmentationSource, rle_rows: np.ndarray, sizes: np.ndarray) -> None:
    """An RLE must have its image's size (pycocotools silently gives IoU -1 otherwise)."""
    image_size = src.image_size[src.image[rle_rows]]
    known = np.isfinite(image_size).all(axis=1)
    wrong = rle_rows[known & (image_size != sizes[rle_rows]).any(axis=1)]
    if len(wrong):
        fail_records(
            src,
            wrong,
            "RLE `size` differs from its image's [height, width]",
            "the image's size (pycocotools would give every pair IoU -1)",
            lambda r: f"{sizes[r].tolist()} for an image of {[int(v) for v in src.image_size[src.image[r]]]}",
        )


_MAX_GROUPS = 7  # 35 bits per run: more than any mask of MAX_PIXELS needs


def _compressed_run_sums_batched(strings: list, batch_chars: int = 1 << 23) -> np.ndarray:
    """:func:`_compressed_run_sums` over batches of about ``batch_chars`` characters (bounded memory)."""
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    batch = np.cumsum(lengths) // batch_chars
    cuts = np.flatnonzero(np.r_[True, batch[1:] != batch[:-1], True])
    return np.concatenate(
        [_compressed_run_sums(strings[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
        or [np.zeros(0, dtype=np.int64)]
    )


def _compressed_run_sums(strings: list) -> np.ndarray:
    """The sum of the decoded run lengths of each compressed counts string (int64).

    -1 when a run has more than 7 groups; all strings are decoded at once in numpy.

    The strings passed :func:`_check_compressed` (valid characters, no run cut by the end).
    Decoding follows ``maskApi.c`` ``rleFrString`` exactly: 5-bit groups low first, bit 0x20
    "more", bit 0x10 of the last group the sign; from the fourth run on (``m > 2``) a value is
    a delta to the run two before; each run is stored as a ``uint`` (modulo 2**32). pycocotools
    trusts the sum to be ``h * w`` and, when it is not, reads or writes past the mask (or
    never ends), so this is checked before any pycocotools call.

    Examples
    --------
    >>> rle = mask_utils.encode(np.asfortranarray(np.eye(5, dtype=np.uint8)))
    >>> _compressed_run_sums([rle["counts"], b"", b"52"]).tolist()
    [25, 0, 7]
    """
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, n)
    if not lengths.sum():
        return np.zeros(n, dtype=np.int64)
    c = np.frombuffer(b"".join(strings), dtype=np.uint8).astype(np.int64) - 48
    owner_of_char = np.repeat(np.arange(n), lengths)
    ends = np.flatnonzero((c & 0x20) == 0)
    starts = np.concatenate([[0], ends[:-1] + 1])
    n_groups = ends - starts + 1
    too_long = np.zeros(n, dtype=bool)
    too_long[owner_of_char[starts[n_groups > _MAX_GROUPS]]] = True
    k = np.arange(len(c)) - np.repeat(starts, n_groups)
    k = np.minimum(k, _MAX_GROUPS)  # runs longer than that are refused below
    x = np.add.reduceat((c & 0x1F) << (5 * k), starts)
    negative = (c[ends] & 0x10) != 0
    x[negative] -= np.left_shift(1, 5 * np.minimum(n_groups[negative], _MAX_GROUPS + 1))
    owner = owner_of_char[starts]
    first_run = np.searchsorted(owner, np.arange(n))
    m = np.arange(len(x)) - first_run[owner]
    # cnts[m] = x[m] + cnts[m - 2] for m > 2: two running sums per string (odd runs from m = 1,
    # even runs from m = 2), m = 0 on its own; modulo 2**32 as the uint it is stored in. Runs are
    # in string order, so each chain is a contiguous stretch of its parity's selection.
    cnts = x.copy()
    for parity, first in ((1, 1), (0, 2)):
        sel = np.flatnonzero((m % 2 == parity) & (m >= first))
        if not len(sel):
            continue
        values = x[sel]
        total = np.cumsum(values)
        new_chain = np.r_[True, owner[sel][1:] != owner[sel][:-1]]
        chain_start = np.flatnonzero(new_chain)
        base = total[chain_start] - values[chain_start]
        cnts[sel] = total - np.repeat(base, np.diff(np.r_[chain_start, len(sel)]))
    cnts %= 1 << 32
    sums = np.zeros(n, dtype=np.int64)
    has_runs = np.flatnonzero(np.bincount(owner, minlength=n) > 0)
    sums[has_runs] = np.add.reduceat(cnts, first_run[has_runs])
    sums[too_long] = -1
    return sums


def _check_compressed(strings: list) -> np.ndarray:
    """Check pycocotools' compressed counts strings without decoding them.

    Returns a problem code per string: 0 fine, 1 a character outside ``'0'..'o'``, 2 the
    string ends inside a run (or is empty).

    Notes
    -----
    The format (``maskApi.c``, ``rleToString`` / ``rleFrString``): each run length is stored in
    5-bit groups, low bits first, as the characters ``48 + group``; bit 0x20 says "more groups
    follow". pycocotools' decoder reads past the end of a string whose last character has that
    bit, so such strings must not reach it. That the runs add up to ``height * width`` is
    checked next, by :func:`_compressed_run_sums`.

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


def raster_image_size(src: SegmentationSource, rows: np.ndarray) -> np.ndarray:
    """(len(rows), 2) int64 height, width; error naming images without a usable size."""
    image = src.image[rows]
    size = src.image_size[image]
    with np.errstate(invalid="ignore"):
        usable = (
            np.isfinite(size).all(axis=1)
            & (size == np.round(size)).all(axis=1)
            & (size >= 1).all(axis=1)
            & (size[:, 0] * size[:, 1] <= MAX_PIXELS)
        )
    if not usable.all():
        bad_images = np.unique(image[~usable])
        shown = "; ".join(
            f"image {src.image_label(int(i))} "
            f"(height={src.image_size[i, 0]:g}, width={src.image_size[i, 1]:g})"
            for i in bad_images[:N_SHOWN]
        )
        more = f"; and {len(bad_images) - N_SHOWN} more" if len(bad_images) > N_SHOWN else ""
        raise InputError(
            f"{src.image_where}: {len(bad_images)} image(s) without a usable width and "
            f"height: raster mask IoU (mask_iou: raster, and pairs with an RLE mask in "
            f"exact mode) rasterises polygons at the image size, as pycocotools does; expected "
            f"integer `width` and `height` >= 1; found {shown}{more}"
        )
    return size.astype(np.int64)
