"""Detection category ids -> ground-truth categories: ids, model indices, explicit maps.

Detections name categories by the ground truth's ids. A model often writes its class *index*
instead (0..79 for COCO's 80 classes, whose ids run 1..90 with gaps); scored as ids, most
detections land on no class or on the wrong one. deteval refuses that and recognises it (the
ids look like 0- or 1-based indices of the ground-truth categories in id order), and
``category_map`` scores it right:

* ``"index0"``: detection id ``k`` is the ``k``-th ground-truth category in id order (0-based);
* ``"index1"``: the same, 1-based (newer Ultralytics ``predictions.json`` on a non-COCO dataset);
* a mapping, or a YAML / JSON file of one: ``{detection id: ground-truth id or name}``.

Detections of categories the ground truth does not have are an error; ``unknown_category=
"drop"`` drops them with a warning that says how many and what that does to the number, and
refuses to drop more than ``max_drop`` (10%) of the detections -- a share that large is almost
always a numbering mistake, not stray classes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import yaml

from deteval.data import GroundTruth
from deteval.errors import ConfigError, InputError, shorten
from deteval.io._text import read_text
from deteval.io._yaml import find_alias

__all__ = [
    "CategoryMap",
    "read_category_map",
    "map_categories",
    "index_hint",
    "resolve_categories",
    "MAX_DROP",
    "INDEX_MAPS",
]

#: Largest share of detections ``unknown_category="drop"`` drops without ``max_drop=1``.
MAX_DROP = 0.10
#: The built-in maps.
INDEX_MAPS = ("index0", "index1")


@dataclass(frozen=True)
class CategoryMap:
    """How detection category ids name ground-truth categories.

    Attributes
    ----------
    kind : {"index0", "index1", "table"}
    table : dict
        ``"table"``: detection id (int) -> ground-truth id (int) or name (str).
    lines : dict
        Detection id -> line of its entry in ``source`` (for messages; 0 when not from a file).
    source : str
        The file, or ``"category_map"``.
    """

    kind: str
    table: dict = field(default_factory=dict)
    lines: dict = field(default_factory=dict)
    source: str = "category_map"


def read_category_map(spec: str | os.PathLike | Mapping | CategoryMap | None) -> CategoryMap | None:
    """A :class:`CategoryMap` from ``"index0"``, ``"index1"``, a mapping, or a YAML / JSON file.

    Parameters
    ----------
    spec : str, os.PathLike, mapping, CategoryMap or None
        A file holds one mapping ``detection id: ground-truth id or name`` (JSON is YAML too);
        it is read with ``yaml.safe_load`` rules (no tags, no anchors or aliases).

    Returns
    -------
    CategoryMap or None

    Raises
    ------
    ConfigError
        A file that is not such a mapping, naming the file, line and key.

    Examples
    --------
    >>> read_category_map("index1").kind
    'index1'
    >>> read_category_map({0: "person", "1": 3}).table
    {0: 'person', 1: 3}
    """
    if spec is None or isinstance(spec, CategoryMap):
        return spec
    if isinstance(spec, Mapping):
        return _table(list(spec.items()), {}, "category_map")
    path = os.fspath(spec)
    if path in INDEX_MAPS:
        return CategoryMap(kind=path)
    if not os.path.exists(path):
        raise ConfigError(
            f"--category-map {path}: not {' or '.join(INDEX_MAPS)} and no such file; "
            f"expected index0, index1 or a YAML/JSON file `detection id: ground-truth "
            f"id or name`"
        )
    text = read_text(path, what="a category map (YAML or JSON: detection id -> ground-truth id or name)")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(
            f"{path}{line}: invalid YAML/JSON ({getattr(exc, 'problem', exc)}); expected "
            f"a mapping `detection id: ground-truth id or name`"
        ) from None
    alias = find_alias(node)
    if alias is not None:
        raise ConfigError(
            f"{path}:{alias.start_mark.line + 1}: YAML anchors and aliases are not "
            f"allowed; expected plain values"
        )
    if not isinstance(node, yaml.MappingNode):
        found = "nothing" if node is None else type(node).__name__.replace("Node", "").lower()
        raise ConfigError(
            f"{path}: expected a mapping `detection id: ground-truth id or name`, found a {found}"
        )
    items, lines = [], {}
    for key_node, value_node in node.value:
        where = f"{path}:{key_node.start_mark.line + 1}"
        if not (isinstance(key_node, yaml.ScalarNode) and isinstance(value_node, yaml.ScalarNode)):
            raise ConfigError(
                f"{where}: entry is not `id: id or name`; expected a detection id and a "
                f"ground-truth id or name, found a nested value"
            )
        try:
            key = yaml.safe_load(yaml.serialize(key_node))
            value = yaml.safe_load(yaml.serialize(value_node))
        except yaml.YAMLError as exc:  # a tag safe_load refuses
            raise ConfigError(
                f"{where}: invalid value ({getattr(exc, 'problem', exc)}); expected plain ids and names"
            ) from None
        items.append((key, value))
        lines[len(items) - 1] = key_node.start_mark.line + 1
    return _table(items, lines, path)


def _table(items: Sequence[tuple], lines: dict, source: str) -> CategoryMap:
    """Check and normalise ``(detection id, ground-truth id or name)`` pairs."""
    table: dict[int, Any] = {}
    at: dict[int, int] = {}
    for n, (key, value) in enumerate(items):
        where = f"{source}:{lines[n]}" if n in lines else source
        number = _as_int(key)
        if number is None:
            raise ConfigError(
                f"{where}: key {shorten(key)} is not a detection category id; expected an "
                f"integer (the id or class index the detections carry)"
            )
        if not -(2**63) <= number < 2**63:  # the detections' ids are int64: no such id
            raise ConfigError(
                f"{where}: key {number} does not fit a 64-bit category id; expected a detection "
                f"category id (the id or class index the detections carry) within +-2**63"
            )
        target = _as_int(value) if not isinstance(value, str) else value
        if target is None or (isinstance(target, str) and not target):
            raise ConfigError(
                f"{where}: {number}: {shorten(value)}; expected a ground-truth category "
                f"id (integer) or name (string)"
            )
        if number in table:
            raise ConfigError(f"{where}: detection id {number} is mapped twice; expected each id once")
        table[number] = target
        at[number] = lines.get(n, 0)
    if not table:
        raise ConfigError(
            f"{source}: the category map is empty; expected `detection id: ground-truth id or name` entries"
        )
    return CategoryMap(kind="table", table=table, lines=at, source=source)


def _as_int(value: Any) -> int | None:
    """An integer id from an int, an integral float, numpy integers or a string of digits."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and value.strip().isascii():
        return int(value)
    return None


def _by_index(det_ids: np.ndarray, gt: GroundTruth, base: int) -> np.ndarray:
    position = det_ids - base
    known = (position >= 0) & (position < gt.n_classes)
    return np.where(known, position, -1).astype(np.int32)


def map_categories(det_ids: np.ndarray, gt: GroundTruth, category_map: CategoryMap | None) -> np.ndarray:
    """Ground-truth category index (int32, as ``Detections.category``) of each id; -1 where it names none.

    Parameters
    ----------
    det_ids : int64 (n_det,)
    gt : GroundTruth
    category_map : CategoryMap or None
        None: the ids are ground-truth ids.

    Raises
    ------
    ConfigError
        A map entry whose target is not a category of ``gt`` (file, line, key).

    Examples
    --------
    >>> from deteval.io.identity import _named
    >>> gt = _with_categories(_named(["a"]), [1, 3, 7], ["cat", "dog", "cow"])
    >>> map_categories(np.array([0, 2, 3]), gt, read_category_map("index0")).tolist()
    [0, 2, -1]
    >>> map_categories(np.array([5, 9]), gt, read_category_map({5: "dog", 9: 1})).tolist()
    [1, 0]
    """
    det_ids = np.asarray(det_ids, dtype=np.int64).reshape(-1)
    if category_map is None:
        return _index_of(det_ids, gt.category_id)
    if category_map.kind in INDEX_MAPS:
        return _by_index(det_ids, gt, INDEX_MAPS.index(category_map.kind))
    names: dict[str, list[int]] = {}
    for k, name in enumerate(gt.category_name):
        names.setdefault(name, []).append(k)
    keys = np.array(sorted(category_map.table), dtype=np.int64)
    targets = np.empty(len(keys), dtype=np.int64)
    for j, key in enumerate(keys.tolist()):
        target = category_map.table[key]
        line = category_map.lines.get(key, 0)
        where = f"{category_map.source}:{line}" if line else category_map.source
        if isinstance(target, str):
            hits = names.get(target, [])
            if len(hits) != 1:
                problem = "is not a category name" if not hits else "names several categories"
                raise ConfigError(
                    f"{where}: {key}: {target!r} {problem} of {gt.source}; expected one of {_names(gt)}"
                )
            targets[j] = hits[0]
        else:
            index = _index_of(np.array([target]), gt.category_id)[0]
            if index < 0:
                raise ConfigError(
                    f"{where}: {key}: {target} is not a category id of {gt.source}; "
                    f"expected one of {_ids(gt)}"
                )
            targets[j] = index
    position = _index_of(det_ids, keys)
    return np.where(position >= 0, targets[np.maximum(position, 0)], -1).astype(np.int32)


def _index_of(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Position of each value in the sorted ``sorted_ids`` (the first of equal ids), -1 if absent.

    Ids of a small range (class ids) are looked up in a table indexed by ``id - min``: one gather
    where a binary search per value took ten times as long on a quarter of a million detections.
    """
    if len(sorted_ids) == 0:
        return np.full(len(values), -1, dtype=np.int32)
    lo, hi = int(sorted_ids[0]), int(sorted_ids[-1])
    if hi - lo < len(values) + (1 << 16) and len(values) > 4 * len(sorted_ids) and _is_increasing(sorted_ids):
        table = np.full(hi - lo + 2, -1, dtype=np.int32)  # the last slot: every value out of range
        table[sorted_ids.astype(np.int64) - lo] = np.arange(len(sorted_ids), dtype=np.int32)
        offset = values.astype(np.int64) - lo
        offset[(offset < 0) | (offset > hi - lo)] = hi - lo + 1
        return table[offset]
    pos = np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)
    return np.where(sorted_ids[pos] == values, pos, -1).astype(np.int32)


def _is_increasing(ids: np.ndarray) -> bool:
    """Whether ``ids`` is strictly increasing (no repeated id: each names one position)."""
    return bool((ids[1:] > ids[:-1]).all())


def _ids(gt: GroundTruth, limit: int = 8) -> str:
    shown = ", ".join(str(int(i)) for i in gt.category_id[:limit])
    return f"[{shown}{', ...' if gt.n_classes > limit else ''}]"


def _names(gt: GroundTruth, limit: int = 8) -> str:
    shown = ", ".join(gt.category_name[:limit])
    return f"[{shown}{', ...' if gt.n_classes > limit else ''}]"


def index_hint(det_ids: np.ndarray, gt: GroundTruth) -> str:
    """A hint when detection ids look like class indices of the ground truth, else "".

    The ids "look like" 0-based (1-based) indices when every one of them is in 0..K-1 (1..K)
    for the K ground-truth categories, and the ground-truth ids are not simply 0..K-1 (1..K)
    themselves -- then ids and indices would agree and nothing would be wrong.

    Examples
    --------
    >>> from deteval.io.identity import _named
    >>> gt = _with_categories(_named(["a"]), [1, 3, 7], ["cat", "dog", "cow"])
    >>> index_hint(np.array([0, 1, 2]), gt)[:78]
    'the detection category ids (0..2) look like 0-based indices of the 3 ground-tr'
    """
    det_ids = np.unique(np.asarray(det_ids, dtype=np.int64))
    if not len(det_ids) or not gt.n_classes:
        return ""
    k = gt.n_classes
    low, high = int(det_ids[0]), int(det_ids[-1])
    for base, name in ((0, "index0"), (1, "index1")):
        if (
            low >= base
            and high <= k - 1 + base
            and not np.array_equal(gt.category_id, np.arange(base, k + base))
        ):
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
        expected = (
            f"an id the map covers ({category_map.kind}: 0..{gt.n_classes - 1 + INDEX_MAPS.index(category_map.kind)})"
            if category_map.kind in INDEX_MAPS
            else f"an id listed in {category_map.source}"
        )
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


def _with_categories(gt: GroundTruth, ids: Sequence[int], names: Sequence[str]) -> GroundTruth:
    """``gt`` with other categories and no objects (for examples and tests)."""
    return replace(gt, category_id=np.array(ids, dtype=np.int64), category_name=tuple(names))
