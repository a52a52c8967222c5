"""COCO instances JSON (ground truth): :func:`load_coco_gt`.

Loading validates everything once; the value returned is frozen and the caller's lists and
dicts are never modified.
"""

from __future__ import annotations

import os
from typing import Any, cast

import numpy as np

from deteval.data import GroundTruth
from deteval.errors import InputError
from deteval.io._records import (
    MISSING,
    Problems,
    box_column,
    flag_column,
    int_column,
    json_type,
    number_column,
)
from deteval.io.coco._common import _check_list_of_objects, _refuse_duplicates, _source, parse_threads
from deteval.io.coco.fast_instances import _fast_annotations, _fast_ground_truth
from deteval.io.coco.instances import _assemble_gt, _images_and_categories


def load_coco_gt(
    source: Any, *, name: str | None = None, area_missing: str = "error", workers: int | str | None = 1
) -> GroundTruth:
    """Read COCO ground truth (a path, or the parsed dict).

    Parameters
    ----------
    source : str, os.PathLike or dict
        An instances JSON with ``images``, ``annotations`` and ``categories``.
    name : str, optional
        Name used in messages when ``source`` is a dict.
    area_missing : {"error", "box"}
        An annotation without ``area``: refuse, or use the box's ``w * h`` (with a warning).
    workers : int or "auto"
        Threads that parse a plain file's ``annotations`` (default 1; ``"auto"``: by the file's
        size, at most the usable CPUs). The ground truth is the same for every value.

    Returns
    -------
    GroundTruth
        Images and categories sorted by id (pycocotools' order).

    Raises
    ------
    InputError
        With file, record and field, e.g. ``gt.json: annotation #3 (id=7, image_id=1): `bbox`
        does not have 4 numbers; expected 4 numbers [x, y, w, h], found [1, 2, 3] (array)``.

    Examples
    --------
    >>> gt = load_coco_gt({"images": [{"id": 1}], "categories": [{"id": 3, "name": "cat"}],
    ...                    "annotations": [{"id": 1, "image_id": 1, "category_id": 3,
    ...                                     "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> len(gt), gt.category_name
    (1, ('cat',))
    """
    data, where = _source(
        source,
        name or "<ground truth>",
        lambda held, path: _fast_ground_truth(held[0], path, threads=parse_threads(workers, len(held[0]))),
    )
    if isinstance(data, GroundTruth):
        return data
    # The full checks' readers, imported when a file or dict is not plain (the fast paths read
    # plain ones without them).
    from deteval.io.coco.keypoints import _num_keypoints, keypoint_column
    from deteval.io.coco.obb import boxes_of, obb_column, with_rotated

    images, categories, anns = _instances_lists(data, where)

    lenient = not isinstance(source, (str, os.PathLike))  # parsed objects: 3.0 from arr.tolist()
    meta = _images_and_categories(images, categories, where, integral_floats=lenient)
    if lenient:  # in-memory annotations: typed at C speed when plain
        fast = _fast_annotations(meta, anns, where)
        if fast is not None:
            return fast

    def ann_label(i: int) -> str:
        r = anns[i]
        return f"id={r.get('id', '?')}, image_id={r.get('image_id', '?')}"

    ann_problems = Problems(where, "annotation", ann_label)
    ann_ids = int_column(anns, "id", ann_problems, integral_floats=lenient)
    _refuse_duplicates(ann_ids, where, "annotation")
    ann_image = int_column(anns, "image_id", ann_problems, integral_floats=lenient)
    ann_category = int_column(anns, "category_id", ann_problems, integral_floats=lenient)
    rotated = obb_column(anns, ann_problems)  # hook: oriented boxes (deteval.io.coco.obb)
    box, box_missing = box_column(anns, "bbox", ann_problems, allow_missing=True)
    box, box_missing = boxes_of(rotated, box, box_missing)  # oriented boxes: their envelopes
    if box_missing.any():
        ann_problems.fail(np.flatnonzero(box_missing), "no `bbox`", "a bbox [x, y, w, h]", lambda i: MISSING)
    negative = np.flatnonzero((box[:, 2] < 0) | (box[:, 3] < 0))
    if len(negative):
        ann_problems.fail(
            negative, "`bbox` has a negative width or height", "w >= 0 and h >= 0", lambda i: anns[i]["bbox"]
        )
    area, area_missing_mask = number_column(anns, "area", ann_problems, default=0.0, allow_missing=True)
    warnings = []
    if area_missing_mask.any():
        if area_missing != "box":
            ann_problems.fail(
                np.flatnonzero(area_missing_mask),
                "no `area` (COCO size ranges use it)",
                "an `area` number (or area_missing='box' / --area-from-box to use w*h)",
                lambda i: MISSING,
            )
        area = np.where(area_missing_mask, box[:, 2] * box[:, 3], area)
        warnings.append(
            f"{where}: {int(area_missing_mask.sum())} annotations without `area`: used the box's w*h"
        )
    bad_area = np.flatnonzero(area < 0)
    if len(bad_area):
        ann_problems.fail(bad_area, "`area` is negative", "a number >= 0", lambda i: anns[i]["area"])
    is_crowd, crowd_missing = flag_column(anns, "iscrowd", ann_problems)
    if crowd_missing.any():
        warnings.append(
            f"{where}: {int(crowd_missing.sum())} annotations without `iscrowd`: read as 0 "
            f"(pycocotools would fail on them)"
        )
    is_ignore, _ = flag_column(anns, "ignore", ann_problems)
    is_difficult, _ = flag_column(anns, "difficult", ann_problems)
    is_group_of = _group_of_column(anns, ann_problems)

    segmentation = tuple(r.get("segmentation") for r in anns)
    keypoints = keypoint_column(anns, ann_problems, is_ground_truth=True)
    num_keypoints = None
    if keypoints is not None:
        num_keypoints = _num_keypoints(anns, keypoints, ann_problems, where, warnings)
    # With ``ann_problems`` an unknown image or category id raises: the value is never None.
    gt = cast(
        GroundTruth,
        _assemble_gt(
            meta,
            ann_ids,
            ann_image,
            ann_category,
            box,
            area,
            is_crowd,
            is_difficult,
            is_ignore,
            segmentation,
            where,
            warnings,
            ann_problems=ann_problems,
            anns=anns,
            is_group_of=is_group_of,
            keypoints=keypoints,
            num_keypoints=num_keypoints,
        ),
    )
    return with_rotated(gt, rotated)


def _instances_lists(data: Any, where: str) -> tuple[list, list, list]:
    """The ``images``, ``categories`` and ``annotations`` lists of a COCO instances object.

    Raises
    ------
    InputError
        ``data`` is not an object, misses one of the three keys, or one is not a list of objects.
    """
    if not isinstance(data, dict):
        raise InputError(
            f"{where}: expected a COCO instances object with images, annotations and "
            f"categories, found a JSON {json_type(data)}"
            + (" (this looks like a results file: pass it as detections)" if isinstance(data, list) else "")
        )
    for key in ("images", "annotations", "categories"):
        if key not in data:
            raise InputError(
                f"{where}: missing `{key}`; expected a COCO instances object with "
                f"images, annotations and categories, found keys {sorted(data)[:10]}"
            )
    images = _check_list_of_objects(data["images"], where, "image", "`images`")
    categories = _check_list_of_objects(data["categories"], where, "category", "`categories`")
    anns = _check_list_of_objects(data["annotations"], where, "annotation", "`annotations`")
    return images, categories, anns


def _group_of_column(anns: list, problems: Problems) -> np.ndarray:
    """Open Images' group-of flag: ``is_group_of`` (or ``IsGroupOf``, the Open Images CSV column).

    Either spelling is read as a 0/1 flag (JSON booleans accepted); a record that gives both
    with different values is refused. Files without either are all False (and take the fast
    path; a file with the field is read by the full loader).
    """
    is_group_of, missing = flag_column(anns, "is_group_of", problems)
    csv_style, csv_missing = flag_column(anns, "IsGroupOf", problems)
    conflict = np.flatnonzero(~missing & ~csv_missing & (is_group_of != csv_style))
    if len(conflict):
        problems.fail(
            conflict,
            "`is_group_of` and `IsGroupOf` disagree",
            "one of them, or equal values",
            lambda i: [anns[i]["is_group_of"], anns[i]["IsGroupOf"]],
        )
    return is_group_of | csv_style
