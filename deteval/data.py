"""Frozen, columnar values: ground truth and detections.

Everything is a numpy array with one row per object; images and categories are referred to by
their *index* into ``GroundTruth.image_id`` / ``GroundTruth.category_id``. Loaders in
:mod:`deteval.io` build these values; nothing else constructs them from files.

Boxes keep the numbers of the source format (``box_format`` ``"xywh"`` for COCO, ``"xyxy"`` for
VOC corners) so that each protocol can redo the arithmetic of the tool it reproduces without a
lossy round trip (``x + (x2 - x)`` is not always ``x2`` in floating point).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

import numpy as np

from deteval._dtypes import index_column_of, index_dtype, order_column, shifted_index
from deteval._values import frozen
from deteval.errors import InputError, records_error

__all__ = [
    "GroundTruth",
    "Detections",
    "ImageAttributes",
    "FederatedLabels",
    "boxes_as",
    "index_dtype",
    "index_column_of",
    "order_column",
    "shifted_index",
]

_BOX_FORMATS = ("xywh", "xyxy")
#: What the constructors expect instead of a NaN or an infinity (docs/inputs.md, "Non-finite values").
_FINITE_BOX = "4 finite coordinates (NaN and infinities have no place on an image)"
_FINITE_SCORE = (
    "a finite score (only the order matters: map NaN to a low score, or drop the detection; "
    "clip infinities, e.g. to +-1e300)"
)


def _index_column(value: Any, source: str, name: str, *, allow_wide: bool) -> np.ndarray:
    """``value`` as an int32 column (int64 when ``allow_wide`` and a value needs it).

    Raises
    ------
    InputError
        Not integers, or (without ``allow_wide``) a value outside int32.
    """
    array = np.asarray(value)
    if array.dtype == np.int32:
        return array
    if array.size == 0:
        return np.zeros(0, dtype=np.int32)
    if array.dtype.kind not in "iub":
        raise InputError(f"{source}: Detections.{name} must hold integer indices; found dtype {array.dtype}")
    dtype = index_dtype(array)
    if dtype != np.int32 and not allow_wide:
        raise InputError(
            f"{source}: Detections.{name} must fit int32 (indices below 2**31); found values "
            f"from {int(array.min())} to {int(array.max())}"
        )
    return array.astype(dtype)


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


def _freeze(value: Any, names: tuple) -> None:
    """Check ``box_format`` and make the named array fields contiguous and read-only."""
    box_format = value.box_format
    if box_format not in _BOX_FORMATS:
        raise ValueError(f"box_format must be one of {_BOX_FORMATS}, found {box_format!r}")
    for name in names:
        array = np.ascontiguousarray(getattr(value, name)).view()  # a view: the caller's flags stay
        array.flags.writeable = False
        object.__setattr__(value, name, array)


def _refuse_not_finite(array: np.ndarray, source: str, name: str, expected: str) -> None:
    """Raise an :class:`InputError` naming the rows of ``array`` that hold a NaN or an infinity.

    One pass without a temporary in the common case: the sum of the values is finite exactly
    when every value is, unless finite values overflow it (then the values are checked one by
    one). Integer columns are always finite.

    Examples
    --------
    >>> _refuse_not_finite(np.array([[0., 0., 1., 1.]]), "dt", "Detections.box", "finite numbers")
    >>> _refuse_not_finite(np.array([[np.nan, 0., 10., 10.]]), "dt", "Detections.box", "finite numbers")
    Traceback (most recent call last):
    ...
    deteval.errors.InputError: dt: row 0: Detections.box is not finite (NaN or an infinity); expected finite numbers, found [nan, 0.0, 10.0, 10.0]
    """
    if array.dtype.kind not in "fc":
        return
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(array)):
            return
    bad = np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(axis=1))
    if not len(bad):
        return  # only the sum overflowed
    hits = [(f"row {int(i)}", str(np.asarray(array[i]).tolist())) for i in bad[:5]]
    raise records_error(
        source,
        f"{name} is not finite (NaN or an infinity)",
        expected,
        hits,
        noun="rows",
        n_records=len(bad),
    )


def _check_rotated(rotated: np.ndarray | None, n: int, source: str, name: str) -> None:
    """Refuse a ``rotated`` column of the wrong shape or with non-finite corners."""
    if rotated is None:
        return
    if rotated.shape not in ((n, 5), (n, 8)):
        raise ValueError(
            f"{name} must have shape ({n}, 5) (cx cy w h angle) or ({n}, 8) (4 corners), found {rotated.shape}"
        )
    _refuse_not_finite(rotated, source, name, "finite numbers (cx cy w h angle, or 8 corner coordinates)")


def _freeze_optional(value: object, names: tuple) -> None:
    """Make the named array fields that are not None contiguous and read-only."""
    for name in names:
        if getattr(value, name) is not None:
            array = np.ascontiguousarray(getattr(value, name)).view()
            array.flags.writeable = False
            object.__setattr__(value, name, array)


@frozen(eq=False)
class FederatedLabels:
    """LVIS' federated image labels, as (image, category) index pairs.

    Parameters
    ----------
    neg_image, neg_category : int64 (n_neg,)
        Classes verified absent from an image (LVIS ``neg_category_ids``).
    not_exhaustive_image, not_exhaustive_category : int64 (n_not_exhaustive,)
        Classes whose instances on an image are not all annotated (LVIS
        ``not_exhaustive_category_ids``).

    Examples
    --------
    >>> labels = FederatedLabels(neg_image=np.array([0]), neg_category=np.array([2]),
    ...                          not_exhaustive_image=np.array([], np.int64),
    ...                          not_exhaustive_category=np.array([], np.int64))
    >>> labels.has_pair(labels.neg_image, labels.neg_category, np.array([0, 0]), np.array([1, 2]),
    ...                 n_class=3).tolist()
    [False, True]
    """

    neg_image: np.ndarray
    neg_category: np.ndarray
    not_exhaustive_image: np.ndarray
    not_exhaustive_category: np.ndarray

    def __post_init__(self) -> None:
        _freeze_optional(
            self, ("neg_image", "neg_category", "not_exhaustive_image", "not_exhaustive_category")
        )

    @staticmethod
    def has_pair(
        pair_image: np.ndarray,
        pair_category: np.ndarray,
        image: np.ndarray,
        category: np.ndarray,
        *,
        n_class: int,
    ) -> np.ndarray:
        """Bool (n,): whether each (image, category) is one of the pairs."""
        known = np.unique(pair_image.astype(np.int64) * n_class + pair_category)
        return np.isin(image.astype(np.int64) * n_class + category, known)


@frozen(eq=False)
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
        In ``box_format``; finite (NaN and infinities are refused, see Raises).
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
    is_group_of : bool (n_gt,), optional
        Open Images' group-of flag (one box around several objects); read only by protocols
        with ``group_of: openimages``. All False when not given.
    keypoints : float64 (n_gt, n_keypoints, 3) or None
        COCO ``keypoints`` as (x, y, visibility) rows; NaN rows for annotations without them.
        None when no annotation has keypoints.
    num_keypoints : int64 (n_gt,) or None
        COCO ``num_keypoints`` (pycocotools ignores a GT with 0 under ``iou_type="keypoints"``);
        -1 for annotations without keypoints.
    federated : FederatedLabels or None
        LVIS' per-image negative and not-exhaustive classes; None when the images carry none.
    category_frequency : tuple of str or None
        LVIS category ``frequency`` (``"r"``, ``"c"``, ``"f"``; ``""`` where a category has
        none); None when no category has one.
    image_crowd_index : float64 (n_img,) or None
        CrowdPose's per-image ``crowdIndex`` (``summary: crowdpose`` splits the images by it);
        None when no image has one.
    rotated : float64 (n, 8) or (n, 5), or None
        Rotated (oriented) boxes (``iou_type: rotated``) in the numbers of their source: four
        corners ``x1 y1 .. x4 y4``, or ``cx cy w h angle`` (radians); ``box`` then holds their
        axis-aligned envelope. None for upright boxes.
    label_rules : tuple of str
        Open Images label rules already applied to these values, as ``"field=value"``
        (:func:`deteval.openimages.apply_challenge_rules`); matching under a protocol that asks
        for them refuses ground truth without them. Empty for every other input.
    has_image_ids : bool
        True when ``image_id`` holds the dataset's own ids (COCO), so detections name images by
        id; False when the images only have names (YOLO files, VOC ids) and ``image_id`` is the
        position in ``image_name``: detections are then joined by name (file name, stem, or
        Ultralytics' ``int(stem)``), never by position (:mod:`deteval.io.identity`).

    Raises
    ------
    InputError
        A box with a NaN or an infinite coordinate: the count and the first five rows
        (docs/inputs.md, "Non-finite values").
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
    is_group_of: np.ndarray | None = None
    keypoints: np.ndarray | None = None
    num_keypoints: np.ndarray | None = None
    federated: FederatedLabels | None = None
    category_frequency: tuple | None = None
    has_image_ids: bool = True
    image_crowd_index: np.ndarray | None = None
    rotated: np.ndarray | None = None
    label_rules: tuple = ()

    def __post_init__(self) -> None:
        if self.is_group_of is None:
            object.__setattr__(self, "is_group_of", np.zeros(len(self.image), dtype=bool))
        _freeze(
            self,
            (
                "image_id",
                "image_width",
                "image_height",
                "category_id",
                "annotation_id",
                "image",
                "category",
                "box",
                "area",
                "is_crowd",
                "is_difficult",
                "is_ignore",
                "is_group_of",
            ),
        )
        _freeze_optional(self, ("keypoints", "num_keypoints", "image_crowd_index", "rotated"))
        _refuse_not_finite(self.box, self.source, "GroundTruth.box", _FINITE_BOX)
        _check_rotated(self.rotated, len(self.image), self.source, "GroundTruth.rotated")

    @property
    def n_images(self) -> int:
        """The number of images (rows of the image table)."""
        return len(self.image_id)

    @property
    def n_classes(self) -> int:
        """The number of categories (rows of the category table)."""
        return len(self.category_id)

    def __len__(self) -> int:
        return len(self.image)


@frozen(eq=False)
class Detections:
    """Detector outputs, column by column, relative to one :class:`GroundTruth`.

    Parameters
    ----------
    image, category : int32 (n_det,)
        Index into the ground truth's images and categories. Any integer array is accepted and
        stored as int32 (an :class:`~deteval.errors.InputError` when a value does not fit):
        compute keys such as ``image * n_class + category`` in int64 (``astype(np.int64)``).
    box : float64 (n_det, 4)
        In ``box_format``; finite (NaN and infinities are refused, see Raises).
    score : float64 (n_det,)
        Confidence; only the order matters. Finite: NaN has no order, and an infinity would
        reach the results (score thresholds) as a number JSON cannot hold.
    order : int32 (n_det,)
        Position of each detection in its source (file order), the tie rule of the devkits;
        int64 only when a value is beyond int32 (:func:`index_dtype`).
    has_box : bool (n_det,)
        Whether the record carried a bbox (pycocotools takes a result's area from it).
    segmentation : tuple or None
    source : str
    warnings : tuple of str
    keypoints : float64 (n_det, n_keypoints, 3) or None
        COCO keypoint results (x, y, score-or-visibility); NaN rows for records without them.
    area : float64 (n_det,) or None
        Each result's own area for the size ranges, when the caller fixes it (the drop-in
        ``COCOeval`` passes the ``area`` pycocotools' ``loadRes`` wrote); None: derived from
        the result (the box's ``w * h``, or the mask's area for a mask without a bbox).
    rotated : float64 (n_det, 8) or (n_det, 5), or None
        Rotated boxes, corners or ``xywhr`` (see :class:`GroundTruth`); ``box`` is their envelope.

    Raises
    ------
    InputError
        A box with a NaN or an infinite coordinate, or a score that is NaN or infinite: the
        column, the count and the first five rows (docs/inputs.md, "Non-finite values").

    Examples
    --------
    >>> Detections(image=np.array([0]), category=np.array([0]), box=np.array([[np.nan, 0., 10., 10.]]),
    ...            score=np.array([0.9]), order=np.array([0]), has_box=np.array([True]), source="dets")
    Traceback (most recent call last):
    ...
    deteval.errors.InputError: dets: row 0: Detections.box is not finite (NaN or an infinity); expected 4 finite coordinates (NaN and infinities have no place on an image), found [nan, 0.0, 10.0, 10.0]
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
    keypoints: np.ndarray | None = None
    area: np.ndarray | None = None
    rotated: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name, allow_wide in (("image", False), ("category", False), ("order", True)):
            column = _index_column(getattr(self, name), self.source, name, allow_wide=allow_wide)
            object.__setattr__(self, name, column)
        _freeze(self, ("image", "category", "box", "score", "order", "has_box"))
        _freeze_optional(self, ("keypoints", "area", "rotated"))
        _check_rotated(self.rotated, len(self.image), self.source, "Detections.rotated")
        _refuse_not_finite(self.box, self.source, "Detections.box", _FINITE_BOX)
        _refuse_not_finite(self.score, self.source, "Detections.score", _FINITE_SCORE)

    def __len__(self) -> int:
        return len(self.image)

    def take(self, index: np.ndarray) -> Detections:
        """Return the detections at ``index`` (keeps their original ``order``)."""
        segm = None if self.segmentation is None else tuple(self.segmentation[i] for i in index)
        return Detections(
            image=self.image[index],
            category=self.category[index],
            box=self.box[index],
            score=self.score[index],
            order=self.order[index],
            has_box=self.has_box[index],
            box_format=self.box_format,
            segmentation=segm,
            source=self.source,
            warnings=self.warnings,
            keypoints=None if self.keypoints is None else self.keypoints[index],
            area=None if self.area is None else self.area[index],
            rotated=None if self.rotated is None else self.rotated[index],
        )


@frozen
class ImageAttributes:
    """Attributes of images, by image id and by file name: what ``--slice`` slices by.

    A value of the data layer (the slices take it); :mod:`deteval.io.image_attributes` reads it.

    Attributes
    ----------
    by_id : dict
        Image id (int) -> {attribute: value}.
    by_name : dict
        File name (str) -> {attribute: value}.
    source : str
        Where they were read, for messages.
    """

    by_id: dict = field(default_factory=dict)
    by_name: dict = field(default_factory=dict)
    source: str = "<image attributes>"

    @property
    def keys(self) -> list:
        """Every attribute name, in first-seen order."""
        seen: dict = {}
        for table in (self.by_id, self.by_name):
            for values in table.values():
                seen.update(dict.fromkeys(values))
        return list(seen)
