"""Detection category ids -> ground-truth categories: ids, model indices, explicit maps.

Detections name categories by the ground truth's ids. A model often writes its class *index*
instead (0..79 for COCO's 80 classes, whose ids run 1..90 with gaps); scored as ids, most
detections land on no class or on the wrong one. deteval refuses that and recognises it (the
ids look like 0- or 1-based indices of the ground-truth categories in id order), and
``category_map`` scores it right:

* ``"index0"``: detection id ``k`` is the ``k``-th ground-truth category in id order (0-based);
* ``"index1"``: the same, 1-based (newer Ultralytics ``predictions.json`` on a non-COCO dataset);
* ``"coco91"``: COCO's 91-style ids against a ground truth of contiguous ids (a YOLO dataset with
  COCO's names: Ultralytics ``predictions.json`` of COCO-named data), or the 0-based index of
  COCO's 80 against COCO's own ids (:data:`COCO80`, :func:`coco91_table`);
* a mapping, or a YAML / JSON file of one: ``{detection id: ground-truth id or name}``.

A reading that puts more than ``MAX_DROP`` of the detections on categories without ground-truth
objects (which can only be false positives) is refused by :func:`refuse_off_ground_truth`, with
the count per category and the built-in readings that do better.

Detections of categories the ground truth does not have are an error; ``unknown_category=
"drop"`` drops them with a warning that says how many and what that does to the number, and
refuses to drop more than ``max_drop`` (10%) of the detections -- a share that large is almost
always a numbering mistake, not stray classes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from deteval.data import GroundTruth
from deteval.errors import InputError
from deteval.io.category_map.maps import (
    BUILTIN_MAPS,
    COCO80,
    COCO80_NAMES,
    COCO91_IDS,
    INDEX_MAPS,
    MAX_DROP,
    CategoryMap,
    _coco_direction,
    _has_coco_names,
    _ids,
    _listed,
    _names,
    coco91_table,
    map_categories,
    read_category_map,
)
from deteval.io.category_map.maps import (
    _with_categories as _with_categories,  # its doctests build ground truth with it
)

__all__ = [
    "CategoryMap",
    "read_category_map",
    "map_categories",
    "index_hint",
    "resolve_categories",
    "MAX_DROP",
    "INDEX_MAPS",
    "BUILTIN_MAPS",
    "COCO80",
    "coco91_table",
    "refuse_off_ground_truth",
    "readings_of",
    "describe_reading",
    "COCO80_NAMES",
    "COCO91_IDS",
]


def readings_of(det_ids: np.ndarray, gt: GroundTruth) -> list[tuple[str, np.ndarray]]:
    """The built-in readings of ``det_ids`` that name a ground-truth category for every id.

    ``(name, category index of each id)`` for ``"ids"`` (the ids as ground-truth ids), ``"index0"``,
    ``"index1"`` and ``"coco91"`` (when the ground truth is on one side of COCO's table and the
    ids fit the other side).
    """
    out = []
    for name in ("ids", *BUILTIN_MAPS):
        if name == "coco91":
            side = _coco_direction(gt)
            if side is None or (side == "80" and not _has_coco_names(gt) and gt.n_classes != len(COCO80)):
                continue
            # the ids must fit the other side of the table (91-style ids, or 0..79)
            other = COCO91_IDS if side == "80" else np.arange(len(COCO80))
            if not np.isin(det_ids, other).all():
                continue
        category = map_categories(det_ids, gt, None if name == "ids" else CategoryMap(kind=name))
        if len(category) and (category >= 0).all():
            out.append((name, category))
    return out


#: Rows per slice when categories are counted: the temporaries stay small whatever the count.
_CHUNK = 1 << 16


def _category_counts(category: np.ndarray, n_classes: int) -> np.ndarray:
    """How many of ``category`` (indices, any int dtype) fall in each class: int64 (n_classes,).

    Counted slice by slice: ``np.bincount`` casts its input to intp, a copy 8 bytes an element.
    """
    counts = np.zeros(n_classes, dtype=np.int64)
    for i in range(0, len(category), _CHUNK):
        counts += np.bincount(category[i : i + _CHUNK], minlength=n_classes)[:n_classes]
    return counts


def _with_objects(gt: GroundTruth) -> np.ndarray:
    """Which categories have at least one ground-truth object: bool (n_class,)."""
    return _category_counts(gt.category, gt.n_classes) > 0


def describe_reading(name: str, category: np.ndarray, on: np.ndarray) -> str:
    """``--category-map NAME: n of N on categories with objects`` (``on``: bool per category)."""
    n_on = int(on[category].sum())
    label = "the ids as ground-truth ids" if name == "ids" else f"--category-map {name}"
    return f"{label}: {n_on} of {len(category)} on categories with objects"


def index_hint(det_ids: np.ndarray, gt: GroundTruth) -> str:
    """A hint when detection ids look like class indices or COCO's 91-style ids, else "".

    The ids "look like" 0-based (1-based) indices when every one of them is in 0..K-1 (1..K)
    for the K ground-truth categories, and the ground-truth ids are not simply 0..K-1 (1..K)
    themselves -- then ids and indices would agree and nothing would be wrong. They look like
    COCO's 91-style ids when they all are such ids and the ground truth has contiguous ids and
    COCO's names (an Ultralytics ``predictions.json`` of a COCO-named YOLO dataset); or like the
    contiguous 0-based index of COCO's 80 when the ground truth is COCO's own (91-style ids).
    When several readings fit, each is listed with how many detections it puts on categories
    that have ground-truth objects.

    Examples
    --------
    >>> from deteval.io.identity import _named
    >>> gt = _with_categories(_named(["a"]), [1, 3, 7], ["cat", "dog", "cow"])
    >>> index_hint(np.array([0, 1, 2]), gt)[:78]
    'the detection category ids (0..2) look like 0-based indices of the 3 ground-tr'
    """
    det_ids = np.asarray(det_ids, dtype=np.int64).reshape(-1)
    unique = np.unique(det_ids)
    if not len(unique) or not gt.n_classes:
        return ""
    k = gt.n_classes
    low, high = int(unique[0]), int(unique[-1])
    readings = [(n, c) for n, c in readings_of(det_ids, gt) if n != "ids"]
    index_readings = [
        (n, c)
        for n, c in readings
        if n in INDEX_MAPS and not np.array_equal(gt.category_id, np.arange(k) + INDEX_MAPS.index(n))
    ]
    coco = [(n, c) for n, c in readings if n == "coco91"]
    if coco and index_readings:
        on = _with_objects(gt)
        listed = sorted(coco + index_readings, key=lambda r: -int(on[r[1]].sum()))
        return (
            f"the detection category ids ({low}..{high}) fit several readings; candidates: "
            + "; ".join(describe_reading(n, c, on) for n, c in listed)
            + " -- pass the one the model's output uses (--category-map NAME, category_map='NAME')"
        )
    if coco:
        side = (
            "COCO's 91-style ids (1..90 with gaps)"
            if _coco_direction(gt) == "80"
            else ("0-based indices of COCO's 80 classes")
        )
        return (
            f"the detection category ids ({low}..{high}) look like {side}, and the {k} ground-truth "
            f"categories (ids {_ids(gt)}, {_names(gt)}) are on the other side of COCO's 80 <-> 91 "
            f"table: pass --category-map coco91 (category_map='coco91') to score them by COCO's "
            f"names, or a file mapping detection id -> ground-truth id or name"
        )
    for name, _ in index_readings:
        base = INDEX_MAPS.index(name)
        return (
            f"the detection category ids ({low}..{high}) look like {base}-based indices of "
            f"the {k} ground-truth categories in id order (ids {_ids(gt)}), not their ids: "
            f"pass --category-map {name} (category_map='{name}') to score them as indices, or "
            f"a file mapping detection id -> ground-truth id or name"
        )
    return ""


def resolve_categories(
    det_ids: np.ndarray,
    gt: GroundTruth,
    *,
    category_map: CategoryMap | None,
    unknown_category: str,
    max_drop: float,
    where: str,
    fail: Callable[[np.ndarray, str, str], None],
    noun: str = "detections",
) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """Category index of every detection, which to keep, and the warnings.

    Parameters
    ----------
    det_ids : int64 (n_det,)
        The category ids as written.
    gt : GroundTruth
    category_map : CategoryMap or None
    unknown_category : {"error", "drop"}
    max_drop : float
        Largest share of detections that ``"drop"`` may drop (:data:`MAX_DROP`).
    where : str
        The detections' source, for messages.
    fail : callable
        ``fail(indices, problem, expected)`` raises the loader's error naming those records.
    noun : str

    Returns
    -------
    category : int32 (n_det,)
        -1 for the dropped ones.
    keep : int64 array or None
        Indices of the kept detections; None when all are kept.
    warnings : list of str
    """
    if unknown_category not in ("error", "drop"):
        raise ValueError(f"unknown_category must be 'error' or 'drop', found {unknown_category!r}")
    category = map_categories(det_ids, gt, category_map)
    unknown = np.flatnonzero(category < 0)
    if not len(unknown):
        return category, None, []
    hint = index_hint(det_ids, gt) if category_map is None else ""
    if category_map is None:
        problem = "`category_id` is not a category of the ground truth"
        expected = f"a category id of {gt.source} {_ids(gt)}"
    else:
        problem = f"`category_id` is not mapped to a category by {category_map.source}"
        if category_map.kind in INDEX_MAPS:
            base = INDEX_MAPS.index(category_map.kind)
            expected = f"an id the map covers ({category_map.kind}: {base}..{gt.n_classes - 1 + base})"
        elif category_map.kind == "coco91":
            keys, _ = coco91_table(gt)
            expected = f"an id the map covers (coco91 for {gt.source}: {_listed(keys)})"
        else:
            expected = f"an id listed in {category_map.source}"
    if unknown_category != "drop":
        fail(unknown, problem + (f" ({hint})" if hint else ""), expected)
    n, total = len(unknown), len(det_ids)
    share = n / total
    ids = sorted(set(det_ids[unknown].tolist()))
    if share > max_drop:
        raise InputError(
            f"{where}: refusing to drop {n} of {total} {noun} ({share:.1%}) of categories not in the "
            f"ground truth (ids {ids[:10]}): more than {max_drop:.0%} is almost always a numbering "
            f"mistake, and dropping them would publish a number far below the model's"
            + (f"; {hint}" if hint else "; map the ids with --category-map")
            + "; expected ids of the ground truth's categories (or --allow-large-drop / max_drop=1 to drop them anyway)"
        )
    kept = np.flatnonzero(category >= 0)
    return (
        category,
        kept,
        [
            f"{where}: dropped {n} {noun} of categories not in the ground truth (ids {ids[:10]}): {n} of "
            f"{total} ({share:.1%}); they count as never predicted, so if they were meant as ground-truth "
            f"classes the AP printed is lower than the model's"
        ],
    )


def _raw_ids(category: np.ndarray, gt: GroundTruth, category_map: CategoryMap | None) -> np.ndarray | None:
    """The detection ids that ``category_map`` reads as ``category`` (None when not invertible)."""
    if category_map is None:
        return gt.category_id[category]
    if category_map.kind in INDEX_MAPS:
        return category.astype(np.int64) + INDEX_MAPS.index(category_map.kind)
    if category_map.kind == "coco91":
        keys, targets = coco91_table(gt)
        inverse = np.full(gt.n_classes, -1, dtype=np.int64)
        inverse[targets] = keys
        return inverse[category]
    return None


def refuse_off_ground_truth(
    category: np.ndarray,
    gt: GroundTruth,
    category_map: CategoryMap | None,
    *,
    where: str,
    max_share: float = MAX_DROP,
) -> None:
    """Refuse detections read onto categories without ground-truth objects beyond ``max_share``.

    Such detections can only be false positives, so a reading of the ids that puts many of them
    there scores the model near zero: under a map (``category_map``), more than ``max_share``
    (:data:`MAX_DROP`, the cap on dropping) is refused with the count per category and the
    built-in readings that do better. Read as ground-truth ids (no map), it is refused only when
    a built-in reading puts at most ``max_share`` there (the evidence of a numbering mistake);
    otherwise the ids stand as written.

    Parameters
    ----------
    category : int (n_det,)
        Ground-truth category index of each detection (``Detections.category``).
    gt : GroundTruth
    category_map : CategoryMap or None
        The reading that gave ``category``.
    where : str
        The detections' source, for the message.
    max_share : float
        Largest share accepted (1 accepts any).

    Raises
    ------
    InputError
    """
    n = len(category)
    if not n or not gt.n_classes:
        return
    on = _with_objects(gt)
    n_off = int(_category_counts(category, gt.n_classes)[~on].sum())
    if n_off / n <= max_share:
        return
    off = ~on[category]
    raw = _raw_ids(np.asarray(category, dtype=np.int64), gt, category_map)
    current = "ids" if category_map is None else category_map.kind
    others = [] if raw is None else [(name, c) for name, c in readings_of(raw, gt) if name != current]
    others.sort(key=lambda r: -int(on[r[1]].sum()))
    if category_map is None and not any((~on[c]).sum() / n <= max_share for _, c in others):
        return
    counts = np.bincount(category[off], minlength=gt.n_classes)
    worst = np.argsort(-counts, kind="stable")[: min(8, int((counts > 0).sum()))]
    per_class = ", ".join(f"{gt.category_name[k]!r} {int(counts[k])}" for k in worst)
    reading = (
        "read as ground-truth category ids"
        if category_map is None
        else f"read through {category_map.source}"
        if category_map.kind == "table"
        else f"read through --category-map {category_map.kind}"
    )
    candidates = (
        "; candidates: " + "; ".join(describe_reading(name, c, on) for name, c in others)
        if others
        else "; check the map (the model's class order against the ground truth's)"
    )
    raise InputError(
        f"{where}: {n_off} of {n} detections ({n_off / n:.1%}) are {reading} onto categories "
        f"without ground-truth objects ({per_class}): they can only be false positives, and more "
        f"than {max_share:.0%} is almost always a numbering mistake"
        + candidates
        + "; expected detections mostly on categories with objects ("
        + (
            "--allow-large-drop / allow_large_drop=True scores them anyway)"
            if category_map is not None
            else "to score the ids as written anyway, state them in a --category-map file and "
            "pass --allow-large-drop)"
        )
    )
