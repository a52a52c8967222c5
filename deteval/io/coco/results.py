"""COCO results JSON (detections): :func:`load_coco_dt`.

Loading validates everything once; the value returned is frozen and the caller's lists and
dicts are never modified.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import numpy as np

from deteval._dtypes import row_dtype
from deteval.data import Detections, GroundTruth, order_column
from deteval.errors import InputError
from deteval.io._records import (
    MISSING,
    Problems,
    box_column,
    id_or_name_column,
    int_column,
    json_type,
    number_column,
    plain,
)
from deteval.io.category_map import MAX_DROP, CategoryMap, read_category_map, resolve_categories
from deteval.io.coco._common import _check_list_of_objects, _source
from deteval.io.coco.fast import (
    _fast_box_records,
    _fast_box_results_held,
    _stream_box_results,
    _stream_keypoint_results,
    parse_threads,
)
from deteval.io.coco.suspicions import _box_warnings, _index_suspicion
from deteval.io.identity import AMBIGUOUS, UNKNOWN, explain_miss, join_ids, join_names


def load_coco_dt(
    source: Any,
    gt: GroundTruth,
    *,
    name: str | None = None,
    unknown_category: str = "error",
    category_map: Any = None,
    max_drop: float = MAX_DROP,
    workers: int | str | None = 1,
) -> Detections:
    """Read COCO results (a path, or the parsed list) against ``gt``.

    Parameters
    ----------
    source : str, os.PathLike or list of dict
        ``[{"image_id", "category_id", "bbox": [x, y, w, h], "score"}, ...]``; records may carry
        ``segmentation`` instead of / besides ``bbox``. Parsed records may hold numpy arrays and
        scalars (or anything with ``__array__``, such as torch tensors) and integral floats as
        ids (``3.0``, from ``arr.tolist()``); a file's ids must be JSON integers.
    gt : GroundTruth
        Images are named by id (COCO), or -- for a YOLO or VOC ground truth, whose images only
        have names -- by file name or stem (string) or ``int(stem)`` (integer; Ultralytics'
        ``predictions.json``), see :mod:`deteval.io.identity`.
    name : str, optional
    unknown_category : {"error", "drop"}
        Detections whose category is not in the ground truth: refuse (default), or drop them
        with a warning giving their share (pycocotools drops them silently); at most
        ``max_drop`` of the detections.
    category_map : {"index0", "index1"}, mapping, path or CategoryMap, optional
        How ``category_id`` names ground-truth categories (:mod:`deteval.io.category_map`);
        default: it is the ground truth's category id.
    max_drop : float
        Largest share of detections ``unknown_category="drop"`` drops (default 0.1).
    workers : int or "auto"
        Threads that parse a plain results file (default 1; ``"auto"``: by the file's size, at
        most the usable CPUs). The detections, warnings and errors are the same for every value.

    Returns
    -------
    Detections

    Raises
    ------
    InputError
        Unknown or ambiguous image ids, wrong types, NaN/inf numbers, negative sizes -- naming
        the records; category ids that look like class indices say so.

    Examples
    --------
    >>> from deteval.io.coco import load_coco_gt
    >>> gt = load_coco_gt({"images": [{"id": 1}], "categories": [{"id": 3, "name": "cat"}],
    ...                    "annotations": []})
    >>> dt = load_coco_dt([{"image_id": 1, "category_id": 0, "bbox": [0, 0, 1, 1], "score": 1}], gt,
    ...                   category_map="index0")
    >>> dt.category.tolist()
    [0]
    """
    cmap = read_category_map(category_map)
    data, where = _read_results(source, name or "<detections>", gt, cmap, workers)
    if isinstance(data, Detections):
        return data
    if type(data) is list:  # in-memory records: typed at C speed when plain
        fast = _fast_box_records(data, where, gt, cmap)
        if fast is not None:
            return fast
    if isinstance(data, dict) and "annotations" in data:
        raise InputError(
            f"{where}: expected a COCO results list [{{image_id, category_id, bbox, "
            f"score}}, ...], found an object with `annotations` (a ground-truth file?)"
        )
    if not isinstance(data, list):
        raise InputError(
            f"{where}: expected a COCO results list [{{image_id, category_id, bbox, "
            f"score}}, ...], found a JSON {json_type(data)}"
        )
    # The full checks' readers, imported when a file or list is not plain (the fast paths above
    # read plain ones without them).
    from deteval.io.coco.keypoints import keypoint_column, keypoint_extent
    from deteval.io.coco.obb import boxes_of, obb_column

    from_objects = not isinstance(source, (str, os.PathLike))
    dets = _check_list_of_objects(data, where, "detection", "the results list")
    warnings: list[str] = []
    if not dets:
        warnings.append(f"{where}: no detections: every class with ground truth gets AP 0")

    def label(i: int) -> str:
        return f"image_id={plain(dets[i].get('image_id', '?'))}"

    problems = Problems(where, "detection", label)
    image = _join_images(dets, gt, problems, integral_floats=from_objects)
    category_ids = int_column(dets, "category_id", problems, integral_floats=from_objects)
    score, _ = number_column(dets, "score", problems)
    rotated = obb_column(dets, problems)  # hook: oriented boxes (deteval.io.coco.obb)
    box, box_missing = box_column(dets, "bbox", problems, allow_missing=True, empty_is_missing=True)
    box, box_missing = boxes_of(rotated, box, box_missing)  # oriented boxes: their envelopes
    has_segm = np.fromiter(
        map(dict.__contains__, dets, itertools.repeat("segmentation")), dtype=bool, count=len(dets)
    )
    keypoints = keypoint_column(dets, problems, is_ground_truth=False)
    has_keypoints = np.zeros(len(dets), dtype=bool) if keypoints is None else ~np.isnan(keypoints[:, 0, 0])
    no_geometry = np.flatnonzero(box_missing & ~has_segm & ~has_keypoints)
    if len(no_geometry):
        problems.fail(
            no_geometry,
            "no `bbox` (and no `segmentation` or `keypoints`)",
            "a bbox [x, y, w, h]",
            lambda i: MISSING,
        )
    if keypoints is not None:
        # pycocotools' loadRes gives a keypoint result without a bbox the keypoints' extent.
        derived = box_missing & has_keypoints
        box[derived] = keypoint_extent(keypoints[derived])
    negative = np.flatnonzero((box[:, 2] < 0) | (box[:, 3] < 0))
    if len(negative):
        problems.fail(
            negative,
            "`bbox` has a negative width or height",
            "w >= 0 and h >= 0",
            lambda i: plain(dets[i]["bbox"]),
        )

    def fail(indices: np.ndarray, problem: str, expected: str) -> None:
        problems.fail(indices, problem, expected, lambda i: plain(dets[i]["category_id"]))

    category, keep, dropped = resolve_categories(
        category_ids,
        gt,
        category_map=cmap,
        unknown_category=unknown_category,
        max_drop=max_drop,
        where=where,
        fail=fail,
    )
    warnings.extend(dropped)
    warnings.extend(_index_suspicion(category_ids, gt, cmap, where))
    warnings.extend(_box_warnings(box[~box_missing], image[~box_missing], gt, where))
    segmentation = tuple(r.get("segmentation") for r in dets) if has_segm.any() else None
    index = row_dtype(len(dets))
    result = Detections(
        image=image.astype(index),
        category=np.maximum(category, 0).astype(index),
        box=box,
        score=score,
        order=order_column(len(dets)),
        has_box=~box_missing,
        box_format="xywh",
        segmentation=segmentation,
        source=where,
        warnings=tuple(warnings),
        keypoints=keypoints,
        rotated=rotated,
    )
    return result.take(keep) if keep is not None else result


def _read_results(
    source: Any, name: str, gt: GroundTruth, cmap: CategoryMap | None, workers: int | str | None = 1
) -> tuple[Any, str]:
    """(Detections, or the parsed data for the full checks; the name for messages).

    A path to a plain box-, keypoint- or compressed-RLE segm-results file is streamed into columns
    (:func:`_stream_box_results`, :func:`_stream_keypoint_results`, :func:`_stream_rle_results`);
    any other file is read whole and offered to the whole-file fast paths, then parsed. ``workers``: the compiled parsers'
    threads (:func:`~deteval.io.coco.fast.parse_threads`, by the file's size).
    """
    if isinstance(source, (str, os.PathLike)):
        streamed = _stream_box_results(os.fspath(source), gt, cmap, workers=workers)
        if streamed is None:
            streamed = _stream_keypoint_results(os.fspath(source), gt, cmap, workers=workers)
        if streamed is None:
            from deteval.io.coco.fast_rle import _stream_rle_results  # segm results only

            streamed = _stream_rle_results(os.fspath(source), gt, cmap, workers=workers)
        if streamed is not None:
            return streamed, streamed.source

    def fast(held: list, path: str) -> Detections | None:
        return _fast_box_results_held(held, path, gt, cmap, threads=parse_threads(workers, len(held[0])))

    return _source(source, name, fast)


def _join_images(dets: list, gt: GroundTruth, problems: Problems, *, integral_floats: bool) -> np.ndarray:
    """Image index of every detection (:mod:`deteval.io.identity`); unknown or ambiguous: error."""
    if gt.has_image_ids:
        values: Any = int_column(dets, "image_id", problems, integral_floats=integral_floats)
        image = join_ids(values, gt)
        expected = f"an image id of {gt.source}"
    else:
        values = id_or_name_column(dets, "image_id", problems, integral_floats=integral_floats)
        image = join_names(values, gt)
        shown = ", ".join(repr(n) for n in gt.image_name[:3])
        expected = (
            f"an image of {gt.source}: its file name or stem (string), or int(stem) for a "
            f"numeric stem (integer, as Ultralytics writes predictions.json); images are "
            f"named {shown}{', ...' if gt.n_images > 3 else ''}"
        )
    ambiguous = np.flatnonzero(image == AMBIGUOUS)
    if len(ambiguous):
        problems.fail(
            ambiguous,
            "`image_id` names several images ("
            + explain_miss(values[ambiguous[0]], gt, ambiguous=True)
            + ")",
            "an image_id that names one image (use the file stem as a string)",
            lambda i: plain(dets[i]["image_id"]),
        )
    unknown = np.flatnonzero(image == UNKNOWN)
    if len(unknown):
        problems.fail(
            unknown,
            "`image_id` is not an image of the ground truth",
            expected,
            lambda i: plain(dets[i]["image_id"]),
        )
    return image
