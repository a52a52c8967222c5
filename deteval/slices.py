"""Slices: the same evaluation over subsets of the images, chosen by an image attribute.

A slice is the images whose attribute ``KEY`` has one value. Each slice is scored exactly as
the subset's own files would be: the ground truth keeps the slice's images (and every
category), the detections keep those on them, and :func:`deteval.evaluate.match` /
:func:`deteval.evaluate.score` run on that pair (so dataset-wide rules such as
``max_dets_per_class`` see only the slice, as they would on the subset's files).

Attributes come from the ground truth's image records or a side file
(read by :mod:`deteval.io.image_attributes`), plus two built in:

* ``image_size``: ``small`` (width x height below 640 x 480 = 307,200 pixels), ``medium``
  (below 1920 x 1080 = 2,073,600 pixels), ``large`` (the rest); no value where the ground
  truth does not give the image's size;
* ``has_crowd``: ``true`` when the image has a crowd annotation (``iscrowd: 1``), else
  ``false``.

Object size is not an image attribute: it is the protocol's area ranges (``APs``, ``APm``,
``APl``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, FederatedLabels, GroundTruth, ImageAttributes, order_column
from deteval.errors import ConfigError, InputError, shorten
from deteval.evaluate import EvalResult, match, score
from deteval.pooling import pooled_for
from deteval.protocol import Protocol

__all__ = [
    "SliceSpec",
    "SliceResult",
    "parse_slice",
    "BUILTIN_SLICES",
    "IMAGE_SIZE_BUCKETS",
    "image_values",
    "subset_images",
    "slice_results",
]

#: ``image_size`` buckets: (name, lowest pixel count, highest pixel count excluded).
IMAGE_SIZE_BUCKETS = (
    ("small", 0, 640 * 480),
    ("medium", 640 * 480, 1920 * 1080),
    ("large", 1920 * 1080, np.inf),
)

#: The attributes every ground truth has.
BUILTIN_SLICES = ("image_size", "has_crowd")


@frozen
class SliceSpec:
    """``--slice KEY`` (a slice per value) or ``--slice KEY=VALUE`` (one slice).

    Attributes
    ----------
    key : str
    value : str or None
        The value's text (see :func:`image_values`); None: every value of ``key``.
    """

    key: str
    value: str | None = None


def parse_slice(text: str) -> SliceSpec:
    """``"KEY"`` or ``"KEY=VALUE"`` as a :class:`SliceSpec`.

    >>> parse_slice("weather=rain"), parse_slice("image_size")
    (SliceSpec(key='weather', value='rain'), SliceSpec(key='image_size', value=None))
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not key:
        raise ConfigError(f"--slice {text!r}: expected KEY or KEY=VALUE, found no KEY")
    return SliceSpec(key, value if sep else None)


@frozen(eq=False)
class SliceResult:
    """One slice's evaluation.

    Attributes
    ----------
    key : str
    value : str or None
        None: the images without a value of ``key``.
    is_image : bool (n_img,)
        The slice's images (rows of the whole ground truth).
    n_images, n_gt, n_det : int
        Images, ground-truth objects and detections of the slice.
    result : EvalResult
        The slice scored on its own.
    """

    key: str
    value: str | None
    is_image: np.ndarray
    n_images: int
    n_gt: int
    n_det: int
    result: EvalResult

    def to_dict(self) -> dict:
        """The slice's entry of the JSON ``slices`` list (NaN -> null)."""
        metrics = self.result.to_dict()["metrics"]
        return {
            "key": self.key,
            "value": self.value,
            "images": self.n_images,
            "gt_objects": self.n_gt,
            "detections": self.n_det,
            "metrics": metrics,
        }


def _text(value: Any) -> str | None:
    """An attribute value as the text ``KEY=VALUE`` compares (JSON spelling); None: no value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TypeError(value)


def image_values(gt: GroundTruth, key: str, attributes: ImageAttributes | None = None) -> list:
    """Each image's value of attribute ``key`` as text (None: no value), in image-row order.

    Built-in keys (:data:`BUILTIN_SLICES`) are computed from ``gt``; others are looked up in
    ``attributes`` by image id, else (no value there) by file name.

    Raises
    ------
    ConfigError
        No image has attribute ``key``.
    InputError
        A value that is not a number, string, boolean or null (an array, an object).

    Examples
    --------
    >>> from deteval.io import load_ground_truth
    >>> gt = load_ground_truth({"images": [{"id": 1, "width": 640, "height": 480}, {"id": 2}],
    ...                         "categories": [{"id": 1, "name": "a"}], "annotations": []})
    >>> image_values(gt, "image_size"), image_values(gt, "has_crowd")
    (['medium', None], ['false', 'false'])
    """
    if key == "image_size":
        pixels = np.asarray(gt.image_width, np.float64) * np.asarray(gt.image_height, np.float64)
        out: list = [None] * gt.n_images
        for name, lo, hi in IMAGE_SIZE_BUCKETS:
            for row in np.flatnonzero((pixels >= lo) & (pixels < hi)).tolist():
                out[row] = name
        return out
    if key == "has_crowd":
        has = np.zeros(gt.n_images, bool)
        has[np.asarray(gt.image)[np.asarray(gt.is_crowd, bool)]] = True
        return ["true" if h else "false" for h in has]
    by_id = attributes.by_id if attributes is not None else {}
    by_name = attributes.by_name if attributes is not None else {}
    out = []
    found = False
    for i in range(gt.n_images):
        record = by_id.get(int(gt.image_id[i])) if gt.has_image_ids else None
        if record is None or key not in record:
            record = by_name.get(gt.image_name[i])
        if record is None or key not in record:
            out.append(None)
            continue
        found = True
        try:
            out.append(_text(record[key]))
        except TypeError:
            raise InputError(
                f"{attributes.source if attributes else '<image attributes>'}: image "
                f"{gt.image_name[i] or int(gt.image_id[i])!r}: attribute `{key}` is "
                f"{shorten(record[key])}; expected a number, string, boolean or null to slice by"
            ) from None
    if not found:
        known = sorted(set(BUILTIN_SLICES) | set(attributes.keys if attributes is not None else ()))
        raise ConfigError(
            f"--slice {key}: no image has attribute {key!r}; expected a field of the ground "
            f"truth's image records, of --image-attributes, or one of {list(BUILTIN_SLICES)}; "
            f"known: {shorten(known, 200)}"
        )
    return out


def subset_images(gt: GroundTruth, dt: Detections, is_image: np.ndarray) -> tuple[GroundTruth, Detections]:
    """The ground truth and detections of the images ``is_image`` (bool (n_img,)), as their own files.

    Every category is kept; images are renumbered in their order; the detections keep their
    file order (renumbered from 0).
    """
    is_image = np.asarray(is_image, dtype=bool)
    new_index = np.cumsum(is_image) - 1
    rows = np.flatnonzero(is_image[gt.image])
    image = new_index[gt.image[rows]]
    federated = gt.federated
    if federated is not None:
        neg = is_image[federated.neg_image]
        not_exhaustive = is_image[federated.not_exhaustive_image]
        federated = FederatedLabels(
            neg_image=new_index[federated.neg_image[neg]],
            neg_category=federated.neg_category[neg],
            not_exhaustive_image=new_index[federated.not_exhaustive_image[not_exhaustive]],
            not_exhaustive_category=federated.not_exhaustive_category[not_exhaustive],
        )
    kept = np.flatnonzero(is_image)
    sub_gt = replace(
        gt,
        image_id=gt.image_id[kept],
        image_name=tuple(gt.image_name[i] for i in kept),
        image_width=gt.image_width[kept],
        image_height=gt.image_height[kept],
        annotation_id=gt.annotation_id[rows],
        image=image,
        category=gt.category[rows],
        box=gt.box[rows],
        area=gt.area[rows],
        is_crowd=gt.is_crowd[rows],
        is_difficult=gt.is_difficult[rows],
        is_ignore=gt.is_ignore[rows],
        is_group_of=None if gt.is_group_of is None else gt.is_group_of[rows],
        segmentation=None if gt.segmentation is None else tuple(gt.segmentation[i] for i in rows),
        keypoints=None if gt.keypoints is None else gt.keypoints[rows],
        num_keypoints=None if gt.num_keypoints is None else gt.num_keypoints[rows],
        federated=federated,
    )
    det_rows = np.flatnonzero(is_image[dt.image])
    det_rows = det_rows[np.argsort(dt.order[det_rows], kind="stable")]  # file order
    sub = dt.take(det_rows)
    sub_dt = replace(sub, image=new_index[sub.image], order=order_column(len(det_rows)))
    return sub_gt, sub_dt


def _slices_of(gt: GroundTruth, spec: SliceSpec, attributes: ImageAttributes | None) -> list:
    values = image_values(gt, spec.key, attributes)
    present = {v for v in values if v is not None}
    if spec.value is not None:
        if spec.value not in present:
            raise ConfigError(
                f"--slice {spec.key}={spec.value}: no image has this value; expected one of "
                f"{shorten(sorted(present), 200)}"
            )
        chosen: list = [spec.value]
    elif spec.key == "image_size":
        chosen = [name for name, _, _ in IMAGE_SIZE_BUCKETS if name in present]
    else:
        chosen = sorted(present)
    if spec.value is None and any(v is None for v in values):
        chosen.append(None)  # the images without a value
    return [(v, np.array([x == v for x in values], dtype=bool)) for v in chosen]


def slice_results(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    specs: list,
    *,
    attributes: ImageAttributes | None = None,
) -> tuple:
    """Score each slice of ``specs`` on its own (see the module notes).

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol
    specs : list of SliceSpec
    attributes : ImageAttributes, optional
        Attributes of the images (built-in slices need none).

    Returns
    -------
    tuple of SliceResult
        One per value of each ``KEY`` (sorted; ``image_size`` small, medium, large; the images
        without a value last, ``value`` None), or the one of each ``KEY=VALUE``.

    Examples
    --------
    >>> from deteval.io import load_ground_truth, load_detections
    >>> from deteval.protocol import get_protocol
    >>> gt = load_ground_truth({"images": [{"id": 1}, {"id": 2}],
    ...     "categories": [{"id": 1, "name": "a"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                      "area": 81, "iscrowd": 0},
    ...                     {"id": 2, "image_id": 2, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                      "area": 81, "iscrowd": 1}]})
    >>> dt = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9], "score": 1}], gt)
    >>> [(s.value, s.n_images, s.result.metrics["mAP"])
    ...  for s in slice_results(gt, dt, get_protocol("voc2010"), [parse_slice("has_crowd")])]
    [('false', 1, 1.0), ('true', 1, 0.0)]
    """
    out = []
    for spec in specs:
        for value, is_image in _slices_of(gt, spec, attributes):
            sub_gt, sub_dt = subset_images(gt, dt, is_image)
            pooled_gt, pooled_dt = pooled_for(sub_gt, sub_dt, protocol)
            table = match(pooled_gt, pooled_dt, protocol)
            result = score(table, pooled_gt, protocol)
            out.append(
                SliceResult(
                    key=spec.key,
                    value=value,
                    is_image=is_image,
                    n_images=int(is_image.sum()),
                    n_gt=len(sub_gt),
                    n_det=len(sub_dt),
                    result=result,
                )
            )
    return tuple(out)
