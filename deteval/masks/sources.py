"""Where segmentations come from: the records of one collection, their names and image sizes.

A :class:`SegmentationSource` holds a collection's raw ``segmentation`` values with what is
needed to name a record in an error message (file, record number, ids) and the size of each
record's image. :func:`fail_records` raises the one :class:`~deteval.errors.InputError` format
every check of :mod:`deteval.masks` uses; :func:`raster_image_size` checks the image
sizes a raster mask needs. The limits (:data:`MAX_COORDINATE`, :data:`MAX_PIXELS`) and the mask
kinds (:data:`POLYGON`, :data:`RLE`) are defined here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.errors import InputError

__all__ = [
    "MAX_COORDINATE",
    "MAX_PIXELS",
    "POLYGON",
    "RLE",
    "N_SHOWN",
    "SegmentationSource",
    "PolygonSegmentations",
    "RleSegmentations",
    "fail_records",
    "ground_truth_source",
    "detection_source",
    "values_source",
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


class PolygonSegmentations(Sequence):
    """Polygon segmentations read into flat columns by a compiled parser; items decode on access.

    What the compiled segm-results reader gives (``deteval.io.coco.fast``): the file's bytes, or
    a function that reads them again (called once, when an item is first read), and each record's
    byte span (items are decoded from it, as the full loader decodes them), and the polygons
    already as numbers: ``n_parts`` (int64, per record, each >= 1), ``part_len`` (int64, numbers
    per part, each >= 1) and ``coords`` (float64, every number in order, finite).
    :func:`~deteval.masks.parse_masks` checks these arrays instead of the decoded lists.
    """

    def __init__(
        self,
        raw: bytes | Callable[[], bytes],
        starts: np.ndarray,
        stops: np.ndarray,
        columns: tuple[np.ndarray, np.ndarray, np.ndarray],
        loads: Callable[[bytes], Any],
    ):
        self._raw = raw
        self._starts = starts
        self._stops = stops
        self.n_parts, self.part_len, self.coords = columns
        self._loads = loads

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        return self._loads(self._bytes()[int(self._starts[index]) : int(self._stops[index])])

    def _bytes(self) -> bytes:
        if callable(self._raw):
            self._raw = self._raw()
        return self._raw

    def __getstate__(self) -> dict:
        """Pickled with the bytes: a copy never depends on the file."""
        state = self.__dict__.copy()
        state["_raw"] = self._raw() if callable(self._raw) else self._raw  # this object keeps none
        return state


class RleSegmentations(Sequence):
    """Compressed-RLE segmentations read into flat columns by a compiled parser; items made on access.

    What the compiled segm-results reader gives for a file whose every segmentation is
    ``{"size": [h, w], "counts": "..."}`` (``deteval.io.coco.fast``): ``sizes`` (int64 (n, 2), as
    written) and the counts strings unescaped into ``blob`` (a bytes-like buffer), string r at
    ``blob[offsets[r]:offsets[r + 1]]``. :func:`~deteval.masks.parse_masks` checks these instead
    of records. An item is the record's segmentation made from the columns, as decoding the file
    gives it (``{"size": [h, w], "counts": str}``): the file's bytes are not kept.
    """

    def __init__(self, columns: tuple[np.ndarray, Any, np.ndarray]):
        self.sizes, self.blob, self.offsets = columns

    def __len__(self) -> int:
        return len(self.sizes)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        r = int(index)
        if r < 0:
            r += len(self)
        if not 0 <= r < len(self):
            raise IndexError(index)
        lo, hi = int(self.offsets[r]), int(self.offsets[r + 1])
        h, w = (int(v) for v in self.sizes[r])
        return {"size": [h, w], "counts": bytes(self.blob[lo:hi]).decode("ascii")}


@frozen(eq=False)
class SegmentationSource:
    """The raw segmentation values of one collection, and how to name its records.

    ``values`` is a tuple, or a :class:`PolygonSegmentations` or :class:`RleSegmentations` whose
    flat columns :func:`~deteval.masks.parse_masks` reads without decoding the records.
    """

    values: Sequence
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
    flat_columns = getattr(gt.segmentation, "flat_columns", None)  # a file's spans: masks as columns
    flat = flat_columns() if flat_columns is not None else None
    return SegmentationSource(
        values=flat if flat is not None else tuple(gt.segmentation),
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
    segm = dt.segmentation
    flat = (PolygonSegmentations, RleSegmentations)
    values = segm if isinstance(segm, flat) else tuple(segm) if segm is not None else ()
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


def _as_float(v: Any) -> float:
    """float(v), or inf for integers beyond float range (then reported as non-finite)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf


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
