"""COCO instances JSON (ground truth) and COCO results JSON (detections).

Loading validates everything once (see ``shared/BAD_INPUTS.md``); the values returned are
frozen and the caller's lists and dicts are never modified.
"""

from __future__ import annotations

import itertools
import operator
import os
from collections.abc import Callable, Sequence
from typing import Annotated, Any, cast

import numpy as np

try:  # decodes typed records straight into objects: the fast path for box results
    import msgspec as _msgspec

    _HAS_MSGSPEC = True
except ImportError:  # pragma: no cover - msgspec is a declared dependency
    _HAS_MSGSPEC = False

from deteval.data import Detections, FederatedLabels, GroundTruth
from deteval.errors import ConfigError, InputError
from deteval.io._json import _count_keys, _orjson, count_raw_keys, loads_strict
from deteval.io._records import (
    MISSING,
    Problems,
    box_column,
    flag_column,
    id_or_name_column,
    int_column,
    json_type,
    number_column,
    plain,
)
from deteval.io._text import MAX_BYTES, read_bytes
from deteval.io.category_map import (
    MAX_DROP,
    CategoryMap,
    map_categories,
    read_category_map,
    resolve_categories,
)
from deteval.io.identity import AMBIGUOUS, UNKNOWN, explain_miss, join_ids, join_names

__all__ = ["load_coco_gt", "load_coco_dt", "require_boxes", "require_keypoints", "keypoint_column"]


def _source(source: Any, default_name: str, fast_path: Any) -> tuple[Any, str]:
    """(parsed data, name for messages); a file is read once and offered to ``fast_path`` first.

    ``fast_path(raw, path)`` returns the finished value, or None to parse and check in full.
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        raw = read_bytes(path, what="a JSON file", limit=MAX_BYTES["json"])
        fast = fast_path(raw, path)
        if fast is not None:
            return fast, path
        return loads_strict(raw, path), path
    return source, default_name


def _check_list_of_objects(value: Any, where: str, what: str, field: str) -> list:
    """``value`` must be a list of JSON objects; ``field`` names it in messages."""
    if not isinstance(value, list):
        raise InputError(
            f"{where}: {field} is not an array; expected a JSON array of {what} "
            f"objects, found {json_type(value)}"
        )
    bad = [i for i, r in enumerate(value) if not isinstance(r, dict)]
    if bad:
        Problems(where, what, lambda i: f"in {field}").fail(
            bad, "is not a JSON object", f"an object with the {what}'s fields", lambda i: value[i]
        )
    return value


def _value_at(records: list, key: str) -> Callable[[int], Any]:
    """``i -> records[i][key]``: the value a message shows for record ``i``."""
    return lambda i: records[i][key]


def _duplicates(ids: np.ndarray) -> list[tuple[int, int, int]]:
    """(id, first position, second position) of repeated ids."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
    return [(int(sorted_ids[d]), int(order[d]), int(order[d + 1])) for d in dup]


def _refuse_duplicates(ids: np.ndarray, where: str, what: str) -> None:
    dups = _duplicates(ids)
    if dups:
        shown = "; ".join(f"id {i} at {what} #{a} and #{b}" for i, a, b in dups[:5])
        more = f"; and {len(dups) - 5} more" if len(dups) > 5 else ""
        raise InputError(f"{where}: duplicate {what} ids: {shown}{more}; expected each id once")


def load_coco_gt(source: Any, *, name: str | None = None, area_missing: str = "error") -> GroundTruth:
    """Read COCO ground truth (a path, or the parsed dict).

    Parameters
    ----------
    source : str, os.PathLike or dict
        An instances JSON with ``images``, ``annotations`` and ``categories``.
    name : str, optional
        Name used in messages when ``source`` is a dict.
    area_missing : {"error", "box"}
        An annotation without ``area``: refuse, or use the box's ``w * h`` (with a warning).

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
    data, where = _source(source, name or "<ground truth>", _fast_ground_truth)
    if isinstance(data, GroundTruth):
        return data
    images, categories, anns = _instances_lists(data, where)

    lenient = not isinstance(source, (str, os.PathLike))  # parsed objects: 3.0 from arr.tolist()
    meta = _images_and_categories(images, categories, where, integral_floats=lenient)

    def ann_label(i: int) -> str:
        r = anns[i]
        return f"id={r.get('id', '?')}, image_id={r.get('image_id', '?')}"

    ann_problems = Problems(where, "annotation", ann_label)
    ann_ids = int_column(anns, "id", ann_problems, integral_floats=lenient)
    _refuse_duplicates(ann_ids, where, "annotation")
    ann_image = int_column(anns, "image_id", ann_problems, integral_floats=lenient)
    ann_category = int_column(anns, "category_id", ann_problems, integral_floats=lenient)
    box, box_missing = box_column(anns, "bbox", ann_problems, allow_missing=True)
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
    return cast(
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


def keypoint_column(records: list, problems: Problems, *, is_ground_truth: bool) -> np.ndarray | None:
    """COCO ``keypoints`` ([x1, y1, v1, x2, ...]) -> float64 (n, n_keypoints, 3); None if no record has any.

    Records without ``keypoints`` get a NaN row. Every list must have the same length, a
    multiple of 3, of finite numbers; ground-truth visibility flags must be 0, 1 or 2 (results
    may put a score there: pycocotools reads only a result's x and y).

    Raises
    ------
    InputError
        Naming the records, e.g. ``gt.json: annotation #2 (id=3, image_id=1): `keypoints` does not
        have the length of the others; expected 51 numbers (3 per keypoint), found ...``.
    """
    values = [r.get("keypoints", MISSING) for r in records]
    present = [i for i, v in enumerate(values) if v is not MISSING]
    if not present:
        return None
    bad = [i for i in present if not isinstance(values[i], list) or len(values[i]) % 3 or not values[i]]
    if bad:
        problems.fail(
            bad,
            "`keypoints` is not a list of 3 numbers per keypoint",
            "a list [x1, y1, v1, x2, y2, v2, ...] (length a multiple of 3)",
            lambda i: values[i],
        )
    length = len(values[present[0]])
    bad = [i for i in present if len(values[i]) != length]
    if bad:
        problems.fail(
            bad,
            "`keypoints` does not have the length of the first record's",
            f"{length} numbers ({length // 3} keypoints x 3), as record #{present[0]} has",
            lambda i: values[i],
        )
    flat = list(itertools.chain.from_iterable(values[i] for i in present))
    if not set(map(type, flat)) <= {int, float}:
        bad = [
            i
            for i in present
            if any(not isinstance(c, (int, float)) or isinstance(c, bool) for c in values[i])
        ]
        problems.fail(
            bad, "`keypoints` has a value that is not a number", "finite JSON numbers", lambda i: values[i]
        )
    rows = np.array(flat, dtype=np.float64).reshape(len(present), length // 3, 3)
    bad = [present[j] for j in np.flatnonzero(~np.isfinite(rows).all(axis=(1, 2)))]
    if bad:
        problems.fail(
            bad, "`keypoints` has a value that is not a finite number", "finite numbers", lambda i: values[i]
        )
    if is_ground_truth:
        flags = rows[:, :, 2]
        bad = [present[j] for j in np.flatnonzero(~np.isin(flags, (0.0, 1.0, 2.0)).all(axis=1))]
        if bad:
            problems.fail(
                bad,
                "`keypoints` has a visibility flag that is not 0, 1 or 2",
                "v = 0 (not labelled), 1 (labelled, hidden) or 2 (visible) after each x, y",
                lambda i: values[i],
            )
    out = np.full((len(records), length // 3, 3), np.nan)
    out[present] = rows
    return out


def _num_keypoints(
    anns: list, keypoints: np.ndarray, problems: Problems, where: str, warnings: list
) -> np.ndarray:
    """``num_keypoints`` (int64; -1 without keypoints); derived from v > 0 where missing (warned)."""
    has_keypoints = ~np.isnan(keypoints[:, 0, 0])
    visible = np.where(has_keypoints, (keypoints[:, :, 2] > 0).sum(axis=1), -1)
    values = [r.get("num_keypoints", MISSING) for r in anns]
    missing = np.array([v is MISSING for v in values], dtype=bool) & has_keypoints
    if missing.any():
        warnings.append(
            f"{where}: {int(missing.sum())} annotations with `keypoints` but no `num_keypoints`: "
            f"counted the keypoints with v > 0 (pycocotools would fail on them)"
        )
    count = int_column(anns, "num_keypoints", problems, default=-1)
    bad = np.flatnonzero(has_keypoints & ~missing & ((count < 0) | (count > keypoints.shape[1])))
    if len(bad):
        problems.fail(
            bad,
            "`num_keypoints` is out of range",
            f"an integer in [0, {keypoints.shape[1]}]",
            lambda i: anns[i]["num_keypoints"],
        )
    return np.where(missing | ~has_keypoints, visible, count).astype(np.int64)


def _images_and_categories(
    images: list, categories: list, where: str, *, integral_floats: bool = False
) -> dict:
    """Validated image and category columns, sorted by id (pycocotools' order)."""
    img_problems = Problems(where, "image", lambda i: f"id={images[i].get('id', '?')}")
    image_ids = int_column(images, "id", img_problems, integral_floats=integral_floats)
    _refuse_duplicates(image_ids, where, "image")
    width, _ = number_column(images, "width", img_problems, default=float("nan"), allow_missing=True)
    height, _ = number_column(images, "height", img_problems, default=float("nan"), allow_missing=True)
    for key, size in (("width", width), ("height", height)):
        negative = np.flatnonzero(size < 0)
        if len(negative):
            img_problems.fail(
                negative, f"`{key}` is negative", "a size in pixels >= 0", _value_at(images, key)
            )
    file_names = [str(r.get("file_name", plain(r.get("id")))) for r in images]

    cat_problems = Problems(where, "category", lambda i: f"id={categories[i].get('id', '?')}")
    category_ids = int_column(categories, "id", cat_problems, integral_floats=integral_floats)
    _refuse_duplicates(category_ids, where, "category")
    cat_names = [r.get("name", MISSING) for r in categories]
    bad = [i for i, v in enumerate(cat_names) if v is not MISSING and not isinstance(v, str)]
    if bad:
        cat_problems.fail(bad, "`name` is not a string", "a string", lambda i: cat_names[i])
    cat_names = [str(int(category_ids[i])) if v is MISSING else v for i, v in enumerate(cat_names)]

    img_order = np.argsort(image_ids, kind="stable")
    cat_order = np.argsort(category_ids, kind="stable")
    frequency = _category_frequency(categories, cat_problems)
    return {
        "image_id": image_ids[img_order],
        "image_name": tuple(file_names[i] for i in img_order),
        "image_width": width[img_order],
        "image_height": height[img_order],
        "category_id": category_ids[cat_order],
        "category_name": tuple(cat_names[i] for i in cat_order),
        "category_frequency": None if frequency is None else tuple(frequency[i] for i in cat_order),
        "federated": _federated_labels(images, img_problems, image_ids[img_order], category_ids[cat_order]),
    }


#: LVIS category frequency groups (images of the training set with the class: < 10, < 100, more).
LVIS_FREQUENCIES = ("r", "c", "f")


def _category_frequency(categories: list, problems: Problems) -> list | None:
    """LVIS ``frequency`` per category ("" where absent); None when no category has one."""
    values = [r.get("frequency", MISSING) for r in categories]
    if all(v is MISSING for v in values):
        return None
    bad = [i for i, v in enumerate(values) if v is not MISSING and v not in LVIS_FREQUENCIES]
    if bad:
        problems.fail(
            bad,
            "`frequency` is not 'r', 'c' or 'f'",
            "LVIS' frequency group 'r' (rare), 'c' (common) or 'f' (frequent)",
            lambda i: values[i],
        )
    return ["" if v is MISSING else v for v in values]


def _federated_labels(
    images: list, problems: Problems, image_ids: np.ndarray, category_ids: np.ndarray
) -> FederatedLabels | None:
    """LVIS' ``neg_category_ids`` / ``not_exhaustive_category_ids`` of the images, as index pairs.

    None when no image has either field; when some do, every image must have both (lvis-api
    reads them for every image).
    """
    keys = ("neg_category_ids", "not_exhaustive_category_ids")
    if not any(k in r for r in images for k in keys):
        return None
    pairs = []
    for key in keys:
        values = [r.get(key, MISSING) for r in images]
        bad = [i for i, v in enumerate(values) if v is MISSING]
        if bad:
            problems.fail(
                bad,
                f"no `{key}` (other images have LVIS' federated labels)",
                f"a list of category ids `{key}` on every image (lvis-api reads it)",
                lambda i: MISSING,
            )
        bad = [
            i for i, v in enumerate(values) if not isinstance(v, list) or any(type(c) is not int for c in v)
        ]
        if bad:
            problems.fail(
                bad,
                f"`{key}` is not a list of integers",
                "a list of category ids",
                values.__getitem__,
            )
        counts = np.array([len(v) for v in values], dtype=np.int64)
        owner = np.repeat(np.array([r["id"] for r in images], dtype=np.int64), counts)
        cats = np.fromiter(itertools.chain.from_iterable(values), dtype=np.int64, count=int(counts.sum()))
        category = _index_of(cats, category_ids)
        unknown = np.flatnonzero(category < 0)
        if len(unknown):
            at = np.searchsorted(np.cumsum(counts), unknown, side="right")
            problems.fail(
                sorted(set(at.tolist())),
                f"`{key}` names a category not in `categories`",
                "ids of listed categories",
                values.__getitem__,
            )
        pairs += [_index_of(owner, image_ids), category]
    return FederatedLabels(
        neg_image=pairs[0],
        neg_category=pairs[1],
        not_exhaustive_image=pairs[2],
        not_exhaustive_category=pairs[3],
    )


def _assemble_gt(
    meta: dict,
    ann_ids: np.ndarray,
    ann_image: np.ndarray,
    ann_category: np.ndarray,
    box: np.ndarray,
    area: np.ndarray,
    is_crowd: np.ndarray,
    is_difficult: np.ndarray,
    is_ignore: np.ndarray,
    segmentation: Any,
    where: str,
    warnings: list,
    *,
    ann_problems: Problems | None,
    anns: list | None = None,
    is_group_of: np.ndarray | None = None,
    keypoints: np.ndarray | None = None,
    num_keypoints: np.ndarray | None = None,
) -> GroundTruth | None:
    """Map annotation ids to image/category indices and build the value.

    Without ``ann_problems`` and ``anns`` (the fast path) an unknown id returns None instead of
    raising.
    """
    image = _index_of(ann_image, meta["image_id"])
    unknown = np.flatnonzero(image < 0)
    if len(unknown):
        if ann_problems is None or anns is None:
            return None
        ann_problems.fail(
            unknown,
            "`image_id` is not in `images`",
            "the id of a listed image",
            _value_at(anns, "image_id"),
        )
    category = _index_of(ann_category, meta["category_id"])
    unknown = np.flatnonzero(category < 0)
    if len(unknown):
        if ann_problems is None or anns is None:
            return None
        ann_problems.fail(
            unknown,
            "`category_id` is not in `categories`",
            "the id of a listed category",
            _value_at(anns, "category_id"),
        )
    zero = int(((area == 0) | (box[:, 2] == 0) | (box[:, 3] == 0)).sum())
    if zero:
        warnings.append(
            f"{where}: {zero} annotations with zero area or a zero-width/height box: "
            f"scored as pycocotools does (they can only be matched by overlap > 0)"
        )
    return GroundTruth(
        **meta,
        annotation_id=ann_ids,
        image=image,
        category=category,
        box=box,
        area=area,
        is_crowd=is_crowd,
        is_difficult=is_difficult,
        is_ignore=is_ignore,
        box_format="xywh",
        segmentation=segmentation,
        source=where,
        warnings=tuple(warnings),
        is_group_of=is_group_of,
        keypoints=keypoints,
        num_keypoints=num_keypoints,
    )


def _index_of(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Index of each value in ``sorted_ids``; -1 where absent."""
    if len(sorted_ids) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    pos = np.searchsorted(sorted_ids, values)
    pos_clipped = np.minimum(pos, len(sorted_ids) - 1)
    return np.where(sorted_ids[pos_clipped] == values, pos_clipped, -1).astype(np.int64)


def load_coco_dt(
    source: Any,
    gt: GroundTruth,
    *,
    name: str | None = None,
    unknown_category: str = "error",
    category_map: Any = None,
    max_drop: float = MAX_DROP,
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
    >>> gt = load_coco_gt({"images": [{"id": 1}], "categories": [{"id": 3, "name": "cat"}],
    ...                    "annotations": []})
    >>> dt = load_coco_dt([{"image_id": 1, "category_id": 0, "bbox": [0, 0, 1, 1], "score": 1}], gt,
    ...                   category_map="index0")
    >>> dt.category.tolist()
    [0]
    """
    cmap = read_category_map(category_map)
    data, where = _source(
        source, name or "<detections>", lambda raw, path: _fast_box_results(raw, path, gt, cmap)
    )
    if isinstance(data, Detections):
        return data
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
    box, box_missing = box_column(dets, "bbox", problems, allow_missing=True, empty_is_missing=True)
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
    result = Detections(
        image=image,
        category=np.maximum(category, 0),
        box=box,
        score=score,
        order=np.arange(len(dets), dtype=np.int64),
        has_box=~box_missing,
        box_format="xywh",
        segmentation=segmentation,
        source=where,
        warnings=tuple(warnings),
        keypoints=keypoints,
    )
    return result.take(keep) if keep is not None else result


def keypoint_extent(keypoints: np.ndarray) -> np.ndarray:
    """[x0, y0, x1 - x0, y1 - y0] over all keypoints (any visibility), as pycocotools' loadRes.

    >>> keypoint_extent(np.array([[[1., 2., 1.], [4., 0., 0.]]])).tolist()
    [[1.0, 0.0, 3.0, 2.0]]
    """
    x, y = keypoints[:, :, 0], keypoints[:, :, 1]
    x0, x1, y0, y1 = x.min(axis=1), x.max(axis=1), y.min(axis=1), y.max(axis=1)
    return np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)


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


def _index_suspicion(
    category_ids: np.ndarray, gt: GroundTruth, cmap: CategoryMap | None, where: str
) -> list[str]:
    """Warn when results against a YOLO ground truth may be 1-based class indices.

    A YOLO dataset's categories are its class indices 0..K-1. Ultralytics' ``predictions.json``
    writes the index (older releases) or the index + 1 (newer ones, outside COCO). Ids in 1..K
    whose largest is K are refused as unknown (and recognised); when neither 0 nor K occurs the
    two readings cannot be told apart, so deteval says so.
    """
    k = gt.n_classes
    if (
        cmap is not None
        or gt.has_image_ids
        or not len(category_ids)
        or k < 2
        or not np.array_equal(gt.category_id, np.arange(k))
    ):
        return []
    if category_ids.min() >= 1:
        return [
            f"{where}: no detection has category_id 0 (the YOLO class indices are 0..{k - 1}): "
            f"if these are Ultralytics predictions written as index + 1, the classes are shifted "
            f"by one -- pass --category-map index1 (category_map='index1'); index0 states the "
            f"ids as they are"
        ]
    return []


def _box_warnings(box: np.ndarray, image: np.ndarray, gt: GroundTruth, where: str) -> list[str]:
    """Counted warnings about accepted boxes: degenerate ones, suspicious encodings."""
    out = []
    degenerate = int(((box[:, 2] == 0) | (box[:, 3] == 0)).sum())
    if degenerate:
        out.append(
            f"{where}: {degenerate} detections with a zero width or height: scored as "
            f"pycocotools does (they match nothing)"
        )
    return out + _encoding_suspicions(box, image, gt, where)


if _HAS_MSGSPEC:
    #: A JSON integer that fits int64; a larger one sends the file to the full loader.
    _Int64 = Annotated[int, _msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

    class _BoxResult(_msgspec.Struct, forbid_unknown_fields=True):
        """The four fields of a COCO box result, typed strictly (no bool ids, no float ids)."""

        image_id: _Int64
        category_id: _Int64
        bbox: tuple[float, float, float, float]
        score: float

    _BOX_RESULTS = _msgspec.json.Decoder(list[_BoxResult])


def _decode_or_none(raw: bytes, decoder: Any) -> Any:
    """The decoded value, or None when the file does not fit the fast path.

    The fast-path structs refuse unknown fields, so a file that cannot fit (results with a
    ``segmentation``, say) is given up at its first record, not after decoding all of it.
    """
    try:
        return decoder.decode(raw)
    except (_msgspec.DecodeError, _msgspec.ValidationError, RecursionError):
        return None  # the full path names the problem (RecursionError: nested too deeply)


def _fast_box_results(
    raw: bytes, path: str, gt: GroundTruth, cmap: CategoryMap | None = None
) -> Detections | None:
    """Decode a plain box-results file straight into columns, or None to take the full path.

    msgspec decodes typed records about twice as fast as building dicts, and its strict types
    refuse what deteval refuses (strings, floats or booleans as ids, NaN tokens). Only a clean
    file is taken here: every record exactly these four keys (a raw count of keys against 4 per
    record, which also rules out duplicate keys), finite numbers, non-negative sizes, known
    images and categories. Anything else returns None and the full loader names the problem.
    """
    if not _HAS_MSGSPEC:
        return None
    records = _decode_or_none(raw, _BOX_RESULTS)
    if records is None:
        return None
    n = len(records)
    if n == 0 or count_raw_keys(raw) != 4 * n:
        return None
    image_ids = np.fromiter(map(_get_image_id, records), dtype=np.int64, count=n)
    category_ids = np.fromiter(map(_get_category_id, records), dtype=np.int64, count=n)
    score = np.fromiter(map(_get_score, records), dtype=np.float64, count=n)
    box = np.fromiter(
        itertools.chain.from_iterable(map(_get_bbox, records)), dtype=np.float64, count=4 * n
    ).reshape(n, 4)
    image = join_ids(image_ids, gt)
    try:
        category = map_categories(category_ids, gt, cmap)
    except ConfigError:
        return None  # the full path raises it again
    if (
        not (np.isfinite(box).all() and np.isfinite(score).all())
        or (box[:, 2:] < 0).any()
        or (image < 0).any()
        or (category < 0).any()
    ):
        return None
    warnings = _index_suspicion(category_ids, gt, cmap, path) + _box_warnings(box, image, gt, path)
    return Detections(
        image=image,
        category=category,
        box=box,
        score=score,
        order=np.arange(n, dtype=np.int64),
        has_box=np.ones(n, dtype=bool),
        box_format="xywh",
        segmentation=None,
        source=path,
        warnings=tuple(warnings),
    )


class RawSegmentations(Sequence):
    """Annotation segmentations kept as raw JSON until a segm evaluation reads them.

    A box evaluation never needs the polygons, and parsing them is most of the cost of reading
    a COCO instances file. Items decode on access (``None`` where a record has none).
    """

    def __init__(self, raws: list, loads: Callable[[bytes], Any]):
        self._raws = raws
        self._loads = loads

    def __len__(self) -> int:
        return len(self._raws)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        raw = self._raws[index]
        return None if raw is None else self._loads(bytes(raw))


if _HAS_MSGSPEC:

    class _Annotation(_msgspec.Struct, forbid_unknown_fields=True):
        """A COCO annotation's fields, typed strictly; segmentation left undecoded."""

        id: _Int64
        image_id: _Int64
        category_id: _Int64
        bbox: tuple[float, float, float, float]
        area: float
        iscrowd: _Int64
        segmentation: _msgspec.Raw | _msgspec.UnsetType = _msgspec.UNSET
        ignore: _Int64 | _msgspec.UnsetType = _msgspec.UNSET
        difficult: _Int64 | _msgspec.UnsetType = _msgspec.UNSET

    class _Instances(_msgspec.Struct, forbid_unknown_fields=True):
        images: list[dict]
        annotations: list[_Annotation]
        categories: list[dict]
        info: Any = _msgspec.UNSET
        licenses: Any = _msgspec.UNSET

    _INSTANCES = _msgspec.json.Decoder(_Instances)


def _fast_ground_truth(raw: bytes, path: str) -> GroundTruth | None:
    """Read a plain COCO instances file without parsing its polygons, or None for the full path.

    Taken only when nothing needs a message: known keys only (a raw count of keys against the
    decoded ones, which also rules out duplicate keys), every annotation with a finite
    non-negative bbox and area and an ``iscrowd`` of 0 or 1, unique annotation ids, known image
    and category ids. Images and categories go through the same checks as the full path.
    """
    if not _HAS_MSGSPEC or _orjson is None:
        return None
    data = _decode_or_none(raw, _INSTANCES)
    if data is None:
        return None
    anns = data.annotations
    n = len(anns)
    segm = [a.segmentation if a.segmentation is not _msgspec.UNSET else None for a in anns]
    n_rle = sum(1 for r in segm if r is not None and memoryview(r)[:1] == b"{")
    keys = (
        3
        + (data.info is not _msgspec.UNSET)
        + (data.licenses is not _msgspec.UNSET)
        + _count_keys(data.images)
        + _count_keys(data.categories)
        + 6 * n
        + sum(r is not None for r in segm)
        + 2 * n_rle
        + sum(a.ignore is not _msgspec.UNSET for a in anns)
        + sum(a.difficult is not _msgspec.UNSET for a in anns)
    )
    for extra in (data.info, data.licenses):
        if extra is not _msgspec.UNSET:
            keys += _count_keys(extra)
    if count_raw_keys(raw) != keys:
        return None
    ann_ids = np.fromiter(map(_get_id, anns), dtype=np.int64, count=n)
    box = np.fromiter(
        itertools.chain.from_iterable(map(_get_bbox, anns)), dtype=np.float64, count=4 * n
    ).reshape(n, 4)
    area = np.fromiter(map(_get_area, anns), dtype=np.float64, count=n)
    crowd = np.fromiter(map(_get_iscrowd, anns), dtype=np.int64, count=n)
    ignore = np.fromiter((0 if a.ignore is _msgspec.UNSET else a.ignore for a in anns), np.int64, n)
    difficult = np.fromiter((0 if a.difficult is _msgspec.UNSET else a.difficult for a in anns), np.int64, n)
    flags_ok = all(((f == 0) | (f == 1)).all() for f in (crowd, ignore, difficult))
    if (
        not flags_ok
        or not np.isfinite(box).all()
        or not np.isfinite(area).all()
        or (box[:, 2:] < 0).any()
        or (area < 0).any()
        or _duplicates(ann_ids)
    ):
        return None
    try:
        meta = _images_and_categories(data.images, data.categories, path)
    except InputError:
        return None  # the full path raises it again, with the same message
    return _assemble_gt(
        meta,
        ann_ids,
        np.fromiter(map(_get_image_id, anns), np.int64, n),
        np.fromiter(map(_get_category_id, anns), np.int64, n),
        box,
        area,
        crowd.astype(bool),
        difficult.astype(bool),
        ignore.astype(bool),
        RawSegmentations(segm, _orjson.loads),
        path,
        [],
        ann_problems=None,
    )


_get_id = operator.attrgetter("id")
_get_area = operator.attrgetter("area")
_get_iscrowd = operator.attrgetter("iscrowd")
_get_image_id = operator.attrgetter("image_id")
_get_category_id = operator.attrgetter("category_id")
_get_score = operator.attrgetter("score")
_get_bbox = operator.attrgetter("bbox")


def require_boxes(dt: Detections) -> None:
    """Refuse detections without a ``bbox`` for a box evaluation (``iou_type="bbox"``).

    Notes
    -----
    pycocotools' ``loadRes`` derives a missing bbox from the mask when the *first* result has
    none; deteval decides per record, and scoring a box of zeros instead would be silent.

    Raises
    ------
    InputError
        Naming the first five records (their position in the source) and the count.
    """
    missing = np.flatnonzero(~dt.has_box)
    if not len(missing):
        return
    shown = ", ".join(f"#{int(dt.order[i])}" for i in missing[:5])
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    raise InputError(
        f"{dt.source}: {len(missing)} detection(s) ({shown}{more}) have a `segmentation` "
        f"but no `bbox`; expected a bbox [x, y, w, h] in every record for iou_type "
        f"'bbox' (or score them with --iou-type segm)"
    )


def require_keypoints(gt: GroundTruth, dt: Detections, *, n_sigmas: int | None) -> None:
    """Refuse a keypoints evaluation of records without keypoints, or of the wrong count.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    n_sigmas : int or None
        The protocol's ``keypoint_sigmas`` count (None: COCO's 17).

    Raises
    ------
    InputError
        Ground truth or detections without ``keypoints``, naming the count and the first ones.
    ConfigError
        A keypoint count that does not match the sigmas.
    """
    expected = 17 if n_sigmas is None else n_sigmas
    both = (("ground truth", gt, gt.annotation_id), ("detections", dt, dt.order))
    for name, value, positions in both:
        kp = value.keypoints
        missing = np.arange(len(value)) if kp is None else np.flatnonzero(np.isnan(kp[:, 0, 0]))
        if len(missing):
            label = "annotation id" if name == "ground truth" else "record #"
            shown = ", ".join(
                f"{label}{'' if label.endswith('#') else ' '}{int(positions[i])}" for i in missing[:5]
            )
            raise InputError(
                f"{value.source}: {len(missing)} {name} record(s) without `keypoints` "
                f"({shown}{', ...' if len(missing) > 5 else ''}); expected `keypoints` "
                f"[x1, y1, v1, ...] in every record for iou_type 'keypoints'"
            )
    for _, value, _ in both:
        kp = value.keypoints
        if kp is not None and len(value) and kp.shape[1] != expected:
            sigmas = "COCO's person keypoints" if n_sigmas is None else "keypoint_sigmas"
            raise ConfigError(
                f"{value.source}: {kp.shape[1]} keypoints per object, but the protocol has "
                f"{expected} OKS sigmas ({sigmas}); "
                f"expected keypoint_sigmas with {kp.shape[1]} values (e.g. --set "
                f"keypoint_sigmas=[...])"
            )


def _encoding_suspicions(box: np.ndarray, image: np.ndarray, gt: GroundTruth, where: str) -> list[str]:
    """Warn when boxes look like another encoding (normalized, or xyxy given as xywh)."""
    if len(box) < 10:
        return []
    out = []
    width = gt.image_width[image]
    height = gt.image_height[image]
    known = np.isfinite(width) & np.isfinite(height)
    if known.any() and np.nanmedian(width[known]) > 2 and (box <= 1.0).all():
        out.append(
            f"{where}: every box coordinate is <= 1 while images are "
            f"{int(np.nanmedian(width[known]))} px wide: are the boxes normalized? "
            f"COCO results are absolute pixels [x, y, w, h]"
        )
    if known.any():
        overflow = (box[known, 0] + box[known, 2] > 1.05 * width[known] + 1) | (
            box[known, 1] + box[known, 3] > 1.05 * height[known] + 1
        )
        if overflow.mean() > 0.25:
            out.append(
                f"{where}: {int(overflow.sum())} of {int(known.sum())} boxes extend past the "
                f"image by more than 5%: are they [x1, y1, x2, y2] given as [x, y, w, h]?"
            )
    return out
