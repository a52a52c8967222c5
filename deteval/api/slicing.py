"""Slices for the front door: image attributes from files, and each slice scored on its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deteval.api.inputs import _as_dt, _as_gt
from deteval.api.protocols import default_protocol
from deteval.evaluate import check_protocol
from deteval.io.image_attributes import (
    ImageAttributes,
    coco_image_attributes,
    merge_attributes,
    read_image_attributes,
)
from deteval.protocol import Protocol, resolve_protocol
from deteval.slices import BUILTIN_SLICES, SliceSpec, parse_slice, slice_results

__all__ = ["image_attributes", "evaluate_slices"]


def image_attributes(
    gt: Any, path: Any = None, *, slices: Sequence[SliceSpec] | None = None
) -> ImageAttributes | None:
    """The image attributes of a COCO ground truth's records, then of the side file ``path``.

    The side file's value wins where both give one. The ground truth is read again only when
    ``slices`` (when given) name an attribute that is not built in; None when there is nothing
    to read.
    """
    needs_records = slices is None or any(s.key not in BUILTIN_SLICES for s in slices)
    records = coco_image_attributes(gt) if needs_records else None
    side = read_image_attributes(path) if path is not None else None
    return merge_attributes(records, side)


def evaluate_slices(
    gt: Any,
    dt: Any,
    protocol: str | Protocol | None = None,
    slices: Sequence[str | SliceSpec] = ("image_size",),
    *,
    image_attributes_file: Any = None,
) -> tuple:
    """Score each slice of the images on its own (``--slice``).

    Parameters
    ----------
    gt, dt
        As :func:`deteval.api.evaluate` takes them. Attributes of a COCO ground truth's image
        records (a path or dict) can be sliced by.
    protocol : str or Protocol, optional
        Default: :func:`deteval.api.default_protocol`.
    slices : sequence of str or SliceSpec
        ``"KEY"`` (one slice per value) or ``"KEY=VALUE"`` (one slice); built in:
        ``image_size``, ``has_crowd`` (:mod:`deteval.slices`).
    image_attributes_file : str or os.PathLike, optional
        A CSV or JSON side file of image attributes (``--image-attributes``).

    Returns
    -------
    tuple of SliceResult
        Each with ``key``, ``value``, counts and ``result`` (an :class:`EvalResult` equal to
        evaluating the slice's images as their own files).

    Examples
    --------
    >>> gt = {"images": [{"id": 1, "site": "a"}, {"id": 2, "site": "b"}],
    ...       "categories": [{"id": 1, "name": "cat"}],
    ...       "annotations": [{"id": k, "image_id": k, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0} for k in (1, 2)]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]
    >>> [(s.value, s.result.metrics["mAP"]) for s in evaluate_slices(gt, dt, "voc2010", ["site"])]
    [('a', 1.0), ('b', 0.0)]
    """
    if protocol is None:
        protocol, _ = default_protocol(gt)
    protocol = resolve_protocol(protocol)
    check_protocol(protocol)
    specs = [s if isinstance(s, SliceSpec) else parse_slice(s) for s in slices]
    attributes = image_attributes(gt, image_attributes_file, slices=specs)
    ground_truth = _as_gt(gt)
    detections = _as_dt(dt, ground_truth)
    return slice_results(ground_truth, detections, protocol, specs, attributes=attributes)
