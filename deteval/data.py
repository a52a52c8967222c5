"""Frozen, columnar values: ground truth and detections.

Everything is a numpy array with one row per object; images and categories are referred to by
their *index* into ``GroundTruth.image_id`` / ``GroundTruth.category_id``. Loaders in
:mod:`deteval.io` build these values; nothing else constructs them from files.

Boxes keep the numbers of the source format (``box_format`` ``"xywh"`` for COCO, ``"xyxy"`` for
VOC corners) so that each protocol can redo the arithmetic of the tool it reproduces without a
lossy round trip (``x + (x2 - x)`` is not always ``x2`` in floating point).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["GroundTruth", "Detections", "boxes_as"]

_BOX_FORMATS = ("xywh", "xyxy")


def boxes_as(box: np.ndarray, box_format: str, target: str) -> np.ndarray:
    """Return ``box`` (n, 4) in ``target`` format ("xywh" or "xyxy").

    The conversion is the identity when the formats agree, so the reference arithmetic runs on
    the numbers as they were read.

    Examples
    --------
    >>> boxes_as(np.array([[1.0, 2.0, 3.0, 4.0]]), "xywh", "xyxy").tolist()
    [[1.0, 2.0, 4.0, 6.0]]
    """
    if box_format == target:
        return box
    out = box.copy()
    if target == "xyxy":
        out[:, 2] = box[:, 0] + box[:, 2]
        out[:, 3] = box[:, 1] + box[:, 3]
    else:
        out[:, 2] = box[:, 2] - box[:, 0]
        out[:, 3] = box[:, 3] - box[:, 1]
    return out


def _freeze(value: object, names: tuple) -> None:
    """Check ``box_format`` and make the named array fields contiguous and read-only."""
    box_format = value.box_format
    if box_format not in _BOX_FORMATS:
        raise ValueError(f"box_format must be one of {_BOX_FORMATS}, found {box_format!r}")
    for name in names:
        array = np.ascontiguousarray(getattr(value, name)).view()  # a view: the caller's flags stay
        array.flags.writeable = False
        object.__setattr__(value, name, array)


@dataclass(frozen=True, eq=False)
class GroundTruth:
    """Ground-truth objects of a dataset, column by column.

    Parameters
    ----------
    image_id : int64 (n_img,)
        Image ids, unique, sorted ascending.
    image_name : tuple of str (n_img,)
        File names or VOC ids, for messages and reports.
    image_width, image_height : float64 (n_img,)
        Image size in pixels; NaN where unknown.
    category_id : int64 (n_class,)
        Category ids, unique, sorted ascending.
    category_name : tuple of str (n_class,)
    annotation_id : int64 (n_gt,)
        The annotations' own ids (COCO ``id``); only used for messages and pycocotools parity.
    image, category : int64 (n_gt,)
        Index into the image and category arrays.
    box : float64 (n_gt, 4)
        In ``box_format``.
    area : float64 (n_gt,)
        The annotation's own ``area`` field (COCO size ranges use it, even for bbox).
    is_crowd, is_difficult, is_ignore : bool (n_gt,)
        ``is_ignore`` is an explicit ``ignore`` field of the annotation (not ``iscrowd``).
    segmentation : tuple or None
        One entry per annotation (polygon list or RLE dict), for ``iou_type="segm"``.
    source : str
        Where the data came from, for messages.
    warnings : tuple of str
        Counted notes from loading (accepted input that deserves a word).
    has_image_ids : bool
        True when ``image_id`` holds the dataset's own ids (COCO), so detections name images by
        id; False when the images only have names (YOLO files, VOC ids) and ``image_id`` is the
        position in ``image_name``: detections are then joined by name (file name, stem, or
        Ultralytics' ``int(stem)``), never by position (:mod:`deteval.io.identity`).
    """

    image_id: np.ndarray
    image_name: tuple
    image_width: np.ndarray
    image_height: np.ndarray
    category_id: np.ndarray
    category_name: tuple
    annotation_id: np.ndarray
    image: np.ndarray
    category: np.ndarray
    box: np.ndarray
    area: np.ndarray
    is_crowd: np.ndarray
    is_difficult: np.ndarray
    is_ignore: np.ndarray
    box_format: str = "xywh"
    segmentation: tuple | None = None
    source: str = "<ground truth>"
    warnings: tuple = field(default=())
    has_image_ids: bool = True

    def __post_init__(self) -> None:
        _freeze(self, ("image_id", "image_width", "image_height", "category_id", "annotation_id",
                       "image", "category", "box", "area", "is_crowd", "is_difficult", "is_ignore"))

    @property
    def n_images(self) -> int:
        return len(self.image_id)

    @property
    def n_classes(self) -> int:
        return len(self.category_id)

    def __len__(self) -> int:
        return len(self.image)


@dataclass(frozen=True, eq=False)
class Detections:
    """Detector outputs, column by column, relative to one :class:`GroundTruth`.

    Parameters
    ----------
    image, category : int64 (n_det,)
        Index into the ground truth's images and categories.
    box : float64 (n_det, 4)
        In ``box_format``.
    score : float64 (n_det,)
        Confidence; only the order matters.
    order : int64 (n_det,)
        Position of each detection in its source (file order), the tie rule of the devkits.
    has_box : bool (n_det,)
        Whether the record carried a bbox (pycocotools takes a result's area from it).
    segmentation : tuple or None
    source : str
    warnings : tuple of str
    """

    image: np.ndarray
    category: np.ndarray
    box: np.ndarray
    score: np.ndarray
    order: np.ndarray
    has_box: np.ndarray
    box_format: str = "xywh"
    segmentation: tuple | None = None
    source: str = "<detections>"
    warnings: tuple = field(default=())

    def __post_init__(self) -> None:
        _freeze(self, ("image", "category", "box", "score", "order", "has_box"))

    def __len__(self) -> int:
        return len(self.image)

    def take(self, index: np.ndarray) -> Detections:
        """Return the detections at ``index`` (keeps their original ``order``)."""
        segm = None if self.segmentation is None else tuple(self.segmentation[i] for i in index)
        return Detections(image=self.image[index], category=self.category[index],
                          box=self.box[index], score=self.score[index], order=self.order[index],
                          has_box=self.has_box[index], box_format=self.box_format,
                          segmentation=segm, source=self.source, warnings=self.warnings)
