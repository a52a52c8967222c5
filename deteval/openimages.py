"""The Open Images challenge's image-level labels and class hierarchy, applied to values.

A transform on values (data layer only), as :mod:`deteval.pooling` is: the ``openimages-challenge``
protocol scores ``apply_challenge_rules(gt, dt, ...)`` with the ``group_of: openimages`` matching
and the VOC all-point AP. Two protocol fields drive it:

- ``hierarchy_expansion``: ``ground_truth`` copies every ground-truth box to each ancestor of its
  class, and expands the image-level labels (a positive label to every ancestor, a negative one
  to every descendant); ``ground_truth_and_detections`` copies every detection to each ancestor
  too, as the challenge asks submissions to be expanded. The TF Object Detection API's
  ``dataset_tools/oid_hierarchical_labels_expansion.py`` does this to the challenge's CSV files.
- ``image_level_labels: verified``: only the classes verified on an image (its positive and
  negative image-level labels, and the classes of its boxes) are evaluated there; detections of
  any other class are dropped (``OpenImagesChallengeEvaluator.add_single_detected_image_info``).

The readers of the challenge's files are in :mod:`deteval.io.openimages`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import Any, cast

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, InputError, shorten

__all__ = [
    "ClassHierarchy",
    "ImageLevelLabels",
    "build_hierarchy",
    "apply_challenge_rules",
    "ChallengeCounts",
    "label_rules_of",
    "refuse_unapplied_label_rules",
]

#: Deepest hierarchy accepted (Open Images' own is 5 levels deep).
MAX_DEPTH = 64


@frozen
class ClassHierarchy:
    """A class hierarchy: each class's ancestors and descendants, the root left out.

    Parameters
    ----------
    root : str
        The root's ``LabelName`` (Open Images' ``/m/0bl9f``, "Entity"); never a class.
    ancestors, descendants : mapping of str to tuple of str
        For every class below the root, its ancestors (the root excluded) and descendants, each
        listed once, nearest first.
    source : str
        Where it was read from, for messages.
    """

    root: str
    ancestors: Mapping[str, tuple[str, ...]]
    descendants: Mapping[str, tuple[str, ...]]
    source: str = "<hierarchy>"

    @property
    def labels(self) -> tuple[str, ...]:
        """Every class below the root, in the order the file names them first."""
        return tuple(self.ancestors)


@frozen(eq=False)
class ImageLevelLabels:
    """Verified image-level labels: one row per (image, label, positive or negative).

    Parameters
    ----------
    image_name : tuple of str (n_row,)
        The image of each row (Open Images' ``ImageID``).
    label : tuple of str (n_row,)
        The class (``LabelName``).
    is_positive : bool (n_row,)
        ``Confidence`` 1 (the class is present) or 0 (verified absent).
    source : str
    """

    image_name: tuple
    label: tuple
    is_positive: np.ndarray
    source: str = "<image-level labels>"
    line: tuple = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_positive", np.asarray(self.is_positive, dtype=bool))
        self.is_positive.setflags(write=False)


@frozen
class ChallengeCounts:
    """What :func:`apply_challenge_rules` did, for the result's notes."""

    gt_added: int
    dt_added: int
    dt_dropped_unverified: int


def _hierarchy_node(node: Any, path: str, source: str) -> tuple[str, list]:
    """A hierarchy node's LabelName and Subcategory list, checked."""
    if not isinstance(node, dict):
        raise InputError(
            f"{source}: hierarchy node {path}: expected an object with LabelName and "
            f"Subcategory, found {type(node).__name__}"
        )
    unknown = set(node) - {"LabelName", "Subcategory", "Part"}
    if unknown:
        raise InputError(
            f"{source}: hierarchy node {path}: unknown key {sorted(unknown)[0]!r}; expected "
            "LabelName and Subcategory"
        )
    name = node.get("LabelName")
    if not isinstance(name, str) or not name:
        raise InputError(
            f"{source}: hierarchy node {path}: LabelName must be a non-empty string, found {shorten(name)}"
        )
    children = node.get("Subcategory", [])
    if not isinstance(children, list):
        raise InputError(
            f"{source}: hierarchy node {name!r}: Subcategory must be a list, found {type(children).__name__}"
        )
    return name, children


def build_hierarchy(tree: Any, source: str = "<hierarchy>") -> ClassHierarchy:
    """Read a hierarchy in Open Images' JSON shape into ancestors and descendants.

    Parameters
    ----------
    tree : dict
        ``{"LabelName": str, "Subcategory": [node, ...]}``, nested; a class may appear under
        several parents (Open Images' does).
    source : str
        The file, for messages.

    Returns
    -------
    ClassHierarchy

    Raises
    ------
    InputError
        A node that is not an object with a string ``LabelName``, a ``Subcategory`` that is
        not a list, an unknown key, a class that is its own ancestor (a cycle), or a
        hierarchy deeper than 64 levels.

    Examples
    --------
    >>> h = build_hierarchy({"LabelName": "root", "Subcategory": [
    ...     {"LabelName": "animal", "Subcategory": [{"LabelName": "cat"}]}]})
    >>> h.ancestors["cat"], h.descendants["animal"]
    (('animal',), ('cat',))
    """
    ancestors: dict[str, list[str]] = {}
    descendants: dict[str, list[str]] = {}

    root, top = _hierarchy_node(tree, "at the top", source)
    # Iterative depth-first walk: (node, its ancestors nearest first).
    stack: list[tuple[Any, tuple[str, ...], str]] = [
        (child, (), f"{root}/Subcategory[{i}]") for i, child in reversed(list(enumerate(top)))
    ]
    while stack:
        node, above, path = stack.pop()
        name, children = _hierarchy_node(node, path, source)
        if name == root or name in above:
            chain = " > ".join((root, *reversed(above), name))
            raise InputError(
                f"{source}: hierarchy cycle: {name!r} is its own ancestor ({chain[:200]}); "
                "expected a tree or a DAG of LabelName nodes"
            )
        if len(above) >= MAX_DEPTH:
            raise InputError(f"{source}: hierarchy deeper than {MAX_DEPTH} levels at {name!r}")
        listed = ancestors.setdefault(name, [])
        descendants.setdefault(name, [])
        for parent in above:
            if parent not in listed:
                listed.append(parent)
            below = descendants[parent]
            if name not in below:
                below.append(name)
        for i in reversed(range(len(children))):
            stack.append((children[i], (name, *above), f"{name}/Subcategory[{i}]"))
    return ClassHierarchy(
        root=root,
        ancestors={k: tuple(v) for k, v in ancestors.items()},
        descendants={k: tuple(v) for k, v in descendants.items()},
        source=source,
    )


def _with_categories(gt: GroundTruth, names: Sequence[str]) -> GroundTruth:
    """``gt`` with any of ``names`` that it lacks appended as categories (ids after the largest)."""
    known = set(gt.category_name)
    missing = [n for n in dict.fromkeys(names) if n not in known]
    if not missing:
        return gt
    start = int(gt.category_id.max()) + 1 if len(gt.category_id) else 1
    ids = np.concatenate([gt.category_id, np.arange(start, start + len(missing), dtype=np.int64)])

    return replace(gt, category_id=ids, category_name=(*gt.category_name, *missing))


def _unknown(what: str, source: str, names: Sequence[str], hierarchy: ClassHierarchy) -> InputError:
    shown = ", ".join(repr(n) for n in list(dict.fromkeys(names))[:5])
    return InputError(
        f"{source}: {len(set(names))} {what} not in the hierarchy {hierarchy.source} "
        f"(first: {shown}); expected every class to be a LabelName of the hierarchy "
        "(or score without hierarchy_expansion)"
    )


def _expand_rows(category: np.ndarray, names: tuple, hierarchy: ClassHierarchy, index: Mapping[str, int]):
    """Rows repeated for each ancestor: (source row per output row, output category)."""
    rows: list[int] = []
    cats: list[int] = []
    for row, c in enumerate(category.tolist()):
        rows.append(row)
        cats.append(c)
        for parent in hierarchy.ancestors[names[c]]:
            rows.append(row)
            cats.append(index[parent])
    return np.asarray(rows, dtype=np.int64), np.asarray(cats, dtype=np.int64)


def apply_challenge_rules(
    gt: GroundTruth,
    dt: Detections | None,
    *,
    hierarchy: ClassHierarchy | None = None,
    image_labels: ImageLevelLabels | None = None,
    hierarchy_expansion: str = "ground_truth_and_detections",
    image_level_labels: str = "verified",
) -> tuple[GroundTruth, Detections | None, ChallengeCounts]:
    """The Open Images challenge's label rules applied to ground truth and detections.

    Parameters
    ----------
    gt : GroundTruth
        Category names are Open Images' ``LabelName`` (MIDs), as the hierarchy names them.
    dt : Detections or None
    hierarchy : ClassHierarchy, optional
        Required unless ``hierarchy_expansion`` is ``"none"``.
    image_labels : ImageLevelLabels, optional
        Required when ``image_level_labels`` is ``"verified"``.
    hierarchy_expansion : {"none", "ground_truth", "ground_truth_and_detections"}
    image_level_labels : {"none", "verified"}

    Returns
    -------
    (GroundTruth, Detections or None, ChallengeCounts)
        Ground-truth boxes copied to their ancestors (appended categories when an ancestor is
        not yet one), detections copied likewise when asked, then detections of classes not
        verified on their image dropped.

    Raises
    ------
    InputError
        A box, detection or image-level label whose class is not in the hierarchy; an
        image-level label of an image the ground truth does not have.

    Notes
    -----
    TF Object Detection API: ``oid_hierarchical_labels_expansion.py`` (boxes and positive labels
    to ancestors, negative labels to descendants) and ``OpenImagesChallengeEvaluator``
    (``_evaluatable_labels``: the image-level labels and the box classes of the image).

    Examples
    --------
    >>> from deteval.data import GroundTruth, Detections
    >>> h = build_hierarchy({"LabelName": "root", "Subcategory": [
    ...     {"LabelName": "animal", "Subcategory": [{"LabelName": "cat"}]}]})
    >>> gt = GroundTruth(image_id=np.array([1]), image_name=("img",), image_width=np.array([1.0]),
    ...     image_height=np.array([1.0]), category_id=np.array([1]), category_name=("cat",),
    ...     annotation_id=np.array([1]), image=np.array([0]), category=np.array([0]),
    ...     box=np.array([[0.1, 0.1, 0.5, 0.5]]), area=np.array([0.16]),
    ...     is_crowd=np.zeros(1, bool), is_difficult=np.zeros(1, bool),
    ...     is_ignore=np.zeros(1, bool), box_format="xyxy")
    >>> out, _, counts = apply_challenge_rules(gt, None, hierarchy=h, image_level_labels="none")
    >>> [out.category_name[c] for c in out.category], counts.gt_added, out.label_rules
    (['cat', 'animal'], 1, ('hierarchy_expansion=ground_truth_and_detections',))
    """
    gt_added = dt_added = dropped = 0
    if hierarchy_expansion != "none":
        if hierarchy is None:
            raise InputError(
                f"hierarchy_expansion: {hierarchy_expansion} needs a class hierarchy; pass "
                "--hierarchy FILE (the challenge's JSON), or --set hierarchy_expansion=none"
            )
        names = gt.category_name
        used = {names[c] for c in np.unique(gt.category).tolist()}
        if dt is not None and hierarchy_expansion == "ground_truth_and_detections":
            used |= {names[c] for c in np.unique(dt.category).tolist()}
        unknown = sorted(n for n in used if n not in hierarchy.ancestors)
        if unknown:
            raise _unknown("classes of boxes or detections", gt.source, unknown, hierarchy)
        needed = [p for n in sorted(used) for p in hierarchy.ancestors[n]]
        gt = _with_categories(gt, needed)
        index = {n: i for i, n in enumerate(gt.category_name)}
        rows, cats = _expand_rows(np.asarray(gt.category), gt.category_name, hierarchy, index)
        gt_added = len(rows) - len(gt)
        if gt_added:
            n_before = len(gt)
            new_ids = np.asarray(gt.annotation_id)[rows].copy()
            is_copy = np.r_[False, rows[1:] == rows[:-1]] if len(rows) else np.zeros(0, bool)
            start = int(np.max(gt.annotation_id)) + 1 if n_before else 1
            new_ids[is_copy] = np.arange(start, start + int(is_copy.sum()), dtype=np.int64)
            gt = replace(
                gt,
                annotation_id=new_ids,
                image=np.asarray(gt.image)[rows],
                category=cats,
                box=np.asarray(gt.box)[rows],
                area=np.asarray(gt.area)[rows],
                is_crowd=np.asarray(gt.is_crowd)[rows],
                is_difficult=np.asarray(gt.is_difficult)[rows],
                is_ignore=np.asarray(gt.is_ignore)[rows],
                is_group_of=cast(np.ndarray, gt.is_group_of)[rows],
                segmentation=None if gt.segmentation is None else tuple(gt.segmentation[r] for r in rows),
            )
        if dt is not None and hierarchy_expansion == "ground_truth_and_detections":
            rows, cats = _expand_rows(np.asarray(dt.category), gt.category_name, hierarchy, index)
            dt_added = len(rows) - len(dt)
            if dt_added:
                # File order of the expanded file: each detection, then its copies.
                by_order = np.lexsort((np.arange(len(rows)), np.asarray(dt.order)[rows]))
                new_order = np.empty(len(rows), dtype=np.int64)
                new_order[by_order] = np.arange(len(rows))
                dt = Detections(
                    image=np.asarray(dt.image)[rows],
                    category=cats,
                    box=np.asarray(dt.box)[rows],
                    score=np.asarray(dt.score)[rows],
                    order=new_order,
                    has_box=np.asarray(dt.has_box)[rows],
                    box_format=dt.box_format,
                    segmentation=None if dt.segmentation is None else tuple(dt.segmentation[r] for r in rows),
                    source=dt.source,
                    warnings=dt.warnings,
                    area=None if dt.area is None else np.asarray(dt.area)[rows],
                )
    if image_level_labels == "verified":
        if image_labels is None:
            raise InputError(
                "image_level_labels: verified needs the image-level labels; pass --image-labels "
                "FILE (the challenge's CSV, or the COCO JSON's pos_labels/neg_labels), or "
                "--set image_level_labels=none"
            )
        verified = _verified_keys(gt, image_labels, hierarchy if hierarchy_expansion != "none" else None)
        if dt is not None and len(dt):
            n_class = len(gt.category_name)
            keys = np.asarray(dt.image, dtype=np.int64) * n_class + np.asarray(dt.category, dtype=np.int64)
            gt_keys = np.asarray(gt.image, dtype=np.int64) * n_class + np.asarray(gt.category, dtype=np.int64)
            label_keys = np.asarray([i * n_class + c for i, c in verified if c is not None], dtype=np.int64)
            keep = np.isin(keys, np.concatenate([gt_keys, label_keys]))
            dropped = int((~keep).sum())
            if dropped:
                dt = Detections(
                    image=np.asarray(dt.image)[keep],
                    category=np.asarray(dt.category)[keep],
                    box=np.asarray(dt.box)[keep],
                    score=np.asarray(dt.score)[keep],
                    order=np.asarray(dt.order)[keep],
                    has_box=np.asarray(dt.has_box)[keep],
                    box_format=dt.box_format,
                    segmentation=None
                    if dt.segmentation is None
                    else tuple(s for s, k in zip(dt.segmentation, keep.tolist()) if k),
                    source=dt.source,
                    warnings=dt.warnings,
                    area=None if dt.area is None else np.asarray(dt.area)[keep],
                )
    gt = replace(gt, label_rules=(*gt.label_rules, *label_rules_of(hierarchy_expansion, image_level_labels)))
    return gt, dt, ChallengeCounts(gt_added, dt_added, dropped)


def label_rules_of(hierarchy_expansion: str, image_level_labels: str) -> tuple[str, ...]:
    """The ``GroundTruth.label_rules`` entries of these field values (none for ``"none"``)."""
    out = []
    if hierarchy_expansion != "none":
        out.append(f"hierarchy_expansion={hierarchy_expansion}")
    if image_level_labels != "none":
        out.append(f"image_level_labels={image_level_labels}")
    return tuple(out)


def refuse_unapplied_label_rules(gt: GroundTruth, protocol: Any) -> None:
    """Refuse to match under label rules that were not applied to ``gt`` (never a silent number).

    Raises
    ------
    ConfigError
        ``protocol`` asks for ``hierarchy_expansion`` or ``image_level_labels`` and ``gt`` does
        not carry them in ``label_rules``.
    """
    wanted = label_rules_of(
        getattr(protocol, "hierarchy_expansion", "none"), getattr(protocol, "image_level_labels", "none")
    )
    missing = [rule for rule in wanted if rule not in gt.label_rules]
    if missing:
        raise ConfigError(
            f"protocol {protocol.name!r}: {', '.join(missing)} not applied to the ground truth "
            f"{gt.source}; expected the inputs through deteval evaluate --image-labels FILE "
            "--hierarchy FILE (Python: deteval.api.openimages.challenge_inputs); this command "
            "does not apply them"
        )


def _verified_keys(
    gt: GroundTruth, labels: ImageLevelLabels, hierarchy: ClassHierarchy | None
) -> list[tuple[int, int | None]]:
    """(image index, category index) of every verified label, expanded through the hierarchy.

    A label naming a class that is not a ground-truth category verifies nothing that can be
    scored (None): no detection of it exists once detections are joined to the categories.
    """
    image_index = {str(n): i for i, n in enumerate(gt.image_name)}
    category_index = {n: i for i, n in enumerate(gt.category_name)}
    out: list[tuple[int, int | None]] = []
    unknown_images: list[str] = []
    unknown_labels: list[str] = []
    for row, (image, label, positive) in enumerate(
        zip(labels.image_name, labels.label, labels.is_positive.tolist())
    ):
        i = image_index.get(str(image))
        if i is None:
            unknown_images.append(f"{image} (row {row + 1})")
            continue
        expanded = [label]
        if hierarchy is not None:
            if label not in hierarchy.ancestors:
                unknown_labels.append(label)
                continue
            expanded += list(hierarchy.ancestors[label] if positive else hierarchy.descendants[label])
        out.extend((i, category_index.get(name)) for name in expanded)
    if unknown_images:
        raise InputError(
            f"{labels.source}: {len(unknown_images)} image-level labels of images the ground truth "
            f"{gt.source} does not have (first: {', '.join(unknown_images[:5])}); expected the "
            "label file of the same image set"
        )
    if unknown_labels and hierarchy is not None:
        raise _unknown("image-level labels", labels.source, unknown_labels, hierarchy)
    return out
