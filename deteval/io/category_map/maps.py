"""Category maps: the built-in ones (index0, index1, coco80 -> coco91) and --category-map files, applied to class ids."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import Any

import numpy as np

from deteval._safe_read import MAX_BYTES, read_text
from deteval._values import frozen
from deteval.data import GroundTruth
from deteval.errors import ConfigError, shorten
from deteval.io.identity import _index_of

#: Largest share of detections ``unknown_category="drop"`` drops without ``max_drop=1``.
MAX_DROP = 0.10


#: The built-in maps that read ids as positions of the ground truth's categories in id order.
INDEX_MAPS = ("index0", "index1")


#: Every built-in map (``--category-map`` values that are not files).
BUILTIN_MAPS = ("index0", "index1", "coco91")


#: COCO's 80 detection classes in their contiguous order (0..79: Ultralytics' ``coco.yaml``,
#: detectron2's and torchvision's label order without the gaps), each with its 91-style id (the
#: ``categories[].id`` of COCO's ``instances_*.json``: 1..90, ten ids unused). Public COCO data,
#: written out; tests/unit/test_guard_inputs.py checks it against the published lists.
COCO80 = (
    (1, "person"),
    (2, "bicycle"),
    (3, "car"),
    (4, "motorcycle"),
    (5, "airplane"),
    (6, "bus"),
    (7, "train"),
    (8, "truck"),
    (9, "boat"),
    (10, "traffic light"),
    (11, "fire hydrant"),
    (13, "stop sign"),
    (14, "parking meter"),
    (15, "bench"),
    (16, "bird"),
    (17, "cat"),
    (18, "dog"),
    (19, "horse"),
    (20, "sheep"),
    (21, "cow"),
    (22, "elephant"),
    (23, "bear"),
    (24, "zebra"),
    (25, "giraffe"),
    (27, "backpack"),
    (28, "umbrella"),
    (31, "handbag"),
    (32, "tie"),
    (33, "suitcase"),
    (34, "frisbee"),
    (35, "skis"),
    (36, "snowboard"),
    (37, "sports ball"),
    (38, "kite"),
    (39, "baseball bat"),
    (40, "baseball glove"),
    (41, "skateboard"),
    (42, "surfboard"),
    (43, "tennis racket"),
    (44, "bottle"),
    (46, "wine glass"),
    (47, "cup"),
    (48, "fork"),
    (49, "knife"),
    (50, "spoon"),
    (51, "bowl"),
    (52, "banana"),
    (53, "apple"),
    (54, "sandwich"),
    (55, "orange"),
    (56, "broccoli"),
    (57, "carrot"),
    (58, "hot dog"),
    (59, "pizza"),
    (60, "donut"),
    (61, "cake"),
    (62, "chair"),
    (63, "couch"),
    (64, "potted plant"),
    (65, "bed"),
    (67, "dining table"),
    (70, "toilet"),
    (72, "tv"),
    (73, "laptop"),
    (74, "mouse"),
    (75, "remote"),
    (76, "keyboard"),
    (77, "cell phone"),
    (78, "microwave"),
    (79, "oven"),
    (80, "toaster"),
    (81, "sink"),
    (82, "refrigerator"),
    (84, "book"),
    (85, "clock"),
    (86, "vase"),
    (87, "scissors"),
    (88, "teddy bear"),
    (89, "hair drier"),
    (90, "toothbrush"),
)


#: The 91-style ids of :data:`COCO80`, in its order (increasing).
COCO91_IDS = np.array([i for i, _ in COCO80], dtype=np.int64)


#: The names of :data:`COCO80`, in its order.
COCO80_NAMES = tuple(n for _, n in COCO80)


@frozen
class CategoryMap:
    """How detection category ids name ground-truth categories.

    Attributes
    ----------
    kind : {"index0", "index1", "coco91", "table"}
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
    """A :class:`CategoryMap` from ``"index0"``, ``"index1"``, ``"coco91"``, a mapping, or a YAML / JSON file.

    Parameters
    ----------
    spec : str, os.PathLike, mapping, CategoryMap or None
        A file holds one mapping ``detection id: ground-truth id or name`` (JSON is YAML too);
        it is read under the one YAML policy (:mod:`deteval._safe_read`: plain tags, no anchors
        or aliases, no key twice).

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
    if path in BUILTIN_MAPS:
        return CategoryMap(kind=path)
    if not os.path.exists(path):
        raise ConfigError(
            f"--category-map {path}: not {', '.join(BUILTIN_MAPS)} and no such file; "
            f"expected index0, index1, coco91 or a YAML/JSON file `detection id: ground-truth "
            f"id or name`"
        )
    import yaml  # a category map file only: scoring without one never loads the YAML parser

    from deteval._safe_read import parse_yaml

    what = "a category map (YAML or JSON: detection id -> ground-truth id or name)"
    text = read_text(path, what=what, limit=MAX_BYTES["data_yaml"])
    # The one YAML policy: plain tags, no anchors or aliases, no key twice (JSON is YAML too).
    node = parse_yaml(
        text,
        filename=path,
        expected="a mapping `detection id: ground-truth id or name`",
        error=ConfigError,
        construct=False,
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
    if category_map.kind == "coco91":
        keys, targets = coco91_table(gt)
        position = _index_of(det_ids, keys)
        return np.where(position >= 0, targets[np.maximum(position, 0)], -1).astype(np.int32)
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


def _coco_direction(gt: GroundTruth) -> str | None:
    """Which side of COCO's 80 <-> 91 table the ground truth is on: "80", "91" or None.

    "80": its ids are contiguous (0..K-1 or 1..K: a YOLO dataset, a converted COCO file), so the
    detections carry 91-style ids. "91": its categories are COCO's names at their 91-style ids
    (COCO's own ``instances_*.json``, or a subset of it), so the detections carry the contiguous
    0-based index of the 80 (a model's output before the id conversion). None: neither.
    """
    k = gt.n_classes
    if not k:
        return None
    if np.array_equal(gt.category_id, np.arange(k)) or np.array_equal(gt.category_id, np.arange(1, k + 1)):
        return "80"
    by_name = {name: i for i, name in COCO80}
    if all(by_name.get(name) == int(i) for i, name in zip(gt.category_id, gt.category_name, strict=True)):
        return "91"
    return None


def _has_coco_names(gt: GroundTruth) -> bool:
    """Every ground-truth category is named as one of COCO's 80, each name once."""
    names = set(COCO80_NAMES)
    return len(set(gt.category_name)) == gt.n_classes and all(n in names for n in gt.category_name)


def coco91_table(gt: GroundTruth) -> tuple[np.ndarray, np.ndarray]:
    """The ``coco91`` map for ``gt``: sorted detection ids and the ground-truth category index of each.

    A ground truth with contiguous ids (0..K-1 or 1..K) takes COCO's 91-style ids: by name when
    its categories are named as COCO's, else by position when it has exactly 80 (COCO's order).
    A ground truth of COCO's names at their 91-style ids takes the contiguous 0-based index of
    the 80 (the other direction). Ids of COCO classes the ground truth does not list map to none.

    Raises
    ------
    ConfigError
        A ground truth on neither side (say 20 classes of other names).

    Examples
    --------
    >>> from deteval.io.identity import _named
    >>> gt = _with_categories(_named(["a"]), [0, 1, 2], ["person", "car", "dog"])
    >>> keys, targets = coco91_table(gt)
    >>> dict(zip(keys.tolist(), targets.tolist()))
    {1: 0, 3: 1, 18: 2}
    >>> gt91 = _with_categories(_named(["a"]), [1, 3, 18], ["person", "car", "dog"])
    >>> dict(zip(*(a.tolist() for a in coco91_table(gt91))))
    {0: 0, 2: 1, 16: 2}
    """
    side = _coco_direction(gt)
    position = {name: k for k, name in enumerate(gt.category_name)}
    if side == "80" and _has_coco_names(gt):
        pairs = [(i, position[name]) for i, name in COCO80 if name in position]
    elif side == "80" and gt.n_classes == len(COCO80):
        pairs = [(i, k) for k, (i, _) in enumerate(COCO80)]
    elif side == "91":
        pairs = [(k, position[name]) for k, name in enumerate(COCO80_NAMES) if name in position]
    else:
        raise ConfigError(
            f"--category-map coco91: the categories of {gt.source} ({_names(gt)}, ids {_ids(gt)}) are "
            f"neither contiguous (ids 0..K-1 or 1..K, COCO's names or its 80 classes in order) nor "
            f"COCO's names at their 91-style ids; expected a ground truth on one side of COCO's "
            f"80 <-> 91 table, or a map file"
        )
    pairs.sort()
    return (
        np.array([p[0] for p in pairs], dtype=np.int64),
        np.array([p[1] for p in pairs], dtype=np.int64),
    )


def _ids(gt: GroundTruth, limit: int = 8) -> str:
    shown = ", ".join(str(int(i)) for i in gt.category_id[:limit])
    return f"[{shown}{', ...' if gt.n_classes > limit else ''}]"


def _listed(values: np.ndarray, limit: int = 8) -> str:
    shown = ", ".join(str(int(v)) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _names(gt: GroundTruth, limit: int = 8) -> str:
    shown = ", ".join(gt.category_name[:limit])
    return f"[{shown}{', ...' if gt.n_classes > limit else ''}]"


def _with_categories(gt: GroundTruth, ids: Sequence[int], names: Sequence[str]) -> GroundTruth:
    """``gt`` with other categories and no objects (for examples and tests)."""
    return replace(gt, category_id=np.array(ids, dtype=np.int64), category_name=tuple(names))
