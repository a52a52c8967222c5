"""Images and categories of a COCO instances file, and the assembled ground truth.

Shared by the full reader (:mod:`deteval.io.coco.ground_truth`) and the fast path
(:mod:`deteval.io.coco.fast`): image and category columns sorted by id, LVIS' category
frequencies and federated labels, and the mapping of annotations to image/category indices.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from deteval.data import FederatedLabels, GroundTruth
from deteval.io._records import MISSING, Problems, _values, int_column, number_column, plain
from deteval.io.coco._common import _duplicates, _refuse_duplicates, _value_at
from deteval.io.identity import _index_of


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
    meta, img_order = _sorted_meta(
        image_ids, width, height, _file_names(images), categories, where, integral_floats=integral_floats
    )
    image_keys = set(itertools.chain.from_iterable(images))  # every key of any image, once
    meta["federated"] = _federated_labels(
        images, img_problems, meta["image_id"], meta["category_id"], image_keys
    )
    meta["image_crowd_index"] = _crowd_index(images, img_problems, img_order, image_keys)
    return meta


def _image_columns_and_categories(
    image_ids: np.ndarray,
    width: np.ndarray,
    height: np.ndarray,
    file_names: list,
    categories: list,
    where: str,
) -> dict | None:
    """:func:`_images_and_categories` of images already read into columns (the compiled reader's).

    ``file_names``: each image's name, None where it has none (its id then, as
    :func:`_file_names` makes it). Such images have no LVIS or CrowdPose fields. None when an
    image needs a message (a repeated id, a negative size): the full path names it.
    """
    if _duplicates(image_ids) or (width < 0).any() or (height < 0).any():
        return None
    if None in file_names:
        file_names = [str(int(image_ids[i])) if v is None else v for i, v in enumerate(file_names)]
    meta, _ = _sorted_meta(image_ids, width, height, file_names, categories, where)
    meta["federated"] = meta["image_crowd_index"] = None
    return meta


def _sorted_meta(
    image_ids: np.ndarray,
    width: np.ndarray,
    height: np.ndarray,
    file_names: list,
    categories: list,
    where: str,
    *,
    integral_floats: bool = False,
) -> tuple[dict, np.ndarray]:
    """The checked categories, and images and categories sorted by id; with the images' order."""
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
    meta = {
        "image_id": image_ids[img_order],
        "image_name": tuple(map(file_names.__getitem__, img_order.tolist())),
        "image_width": width[img_order],
        "image_height": height[img_order],
        "category_id": category_ids[cat_order],
        "category_name": tuple(cat_names[i] for i in cat_order),
        "category_frequency": None if frequency is None else tuple(frequency[i] for i in cat_order),
    }
    return meta, img_order


def _file_names(images: list) -> list:
    """Each image's ``file_name`` as a string; its id as a string where it has none.

    >>> _file_names([{"id": 3, "file_name": "a.jpg"}, {"id": 4}, {"id": 5, "file_name": 7}])
    ['a.jpg', '4', '7']
    """
    names = _values(images, "file_name")
    if set(map(type, names)) <= {str}:  # the common case: every image names its file
        return names
    return [str(plain(r.get("id"))) if v is MISSING else str(v) for r, v in zip(images, names)]


def _crowd_index(images: list, problems: Problems, order: np.ndarray, image_keys: set) -> np.ndarray | None:
    """CrowdPose's ``crowdIndex`` per image (in id order); None when no image has one.

    When some images have it, every image must (xtcocotools' ``COCOeval.split`` reads it for
    every image), as a finite number. ``image_keys``: the keys of all images.
    """
    if "crowdIndex" not in image_keys:
        return None
    values, is_missing = number_column(images, "crowdIndex", problems, default=np.nan, allow_missing=True)
    missing = np.flatnonzero(is_missing)
    if len(missing):
        problems.fail(
            missing,
            "no `crowdIndex` (other images have CrowdPose's crowd index)",
            "a finite number `crowdIndex` on every image (xtcocotools splits easy/medium/hard by it)",
            lambda i: MISSING,
        )
    return values[order]


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
    images: list, problems: Problems, image_ids: np.ndarray, category_ids: np.ndarray, image_keys: set
) -> FederatedLabels | None:
    """LVIS' ``neg_category_ids`` / ``not_exhaustive_category_ids`` of the images, as index pairs.

    None when no image has either field; when some do, every image must have both (lvis-api
    reads them for every image). ``image_keys``: the keys of all images.
    """
    keys = ("neg_category_ids", "not_exhaustive_category_ids")
    if image_keys.isdisjoint(keys):
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
        category = _index_of(cats, category_ids, np.int64)
        unknown = np.flatnonzero(category < 0)
        if len(unknown):
            at = np.searchsorted(np.cumsum(counts), unknown, side="right")
            problems.fail(
                sorted(set(at.tolist())),
                f"`{key}` names a category not in `categories`",
                "ids of listed categories",
                values.__getitem__,
            )
        pairs += [_index_of(owner, image_ids, np.int64), category]
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
    image = _index_of(ann_image, meta["image_id"], np.int64)
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
    category = _index_of(ann_category, meta["category_id"], np.int64)
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
