"""VOC ground truth: a root's ``Annotations/*.xml``, its image sets and its year.

A VOC root holds ``Annotations/<id>.xml`` (one file per image) and ``ImageSets/Main/<split>.txt``
(one image id per line). Boxes keep the numbers written in the files (``box_format="xyxy"``,
1-based inclusive pixel corners). Image ids are never used as paths as given (see
:mod:`deteval.io._text`).
"""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from deteval._safe_read import MAX_BYTES, read_bytes, read_text
from deteval.data import GroundTruth
from deteval.errors import InputError
from deteval.io._text import (
    fail_records,
    is_safe_name,
    list_files,
    names_note,
    safe_child,
    shorten,
    split_rows,
)
from deteval.io.voc.classes import _check_classes
from deteval.io.voc.parsing import _ANNOTATION, parse_xml

__all__ = ["load_voc_gt", "voc_year"]

_ONCE = ("name", "bndbox", "difficult", "truncated", "pose", "occluded")
_CORNERS = ("xmin", "ymin", "xmax", "ymax")


def _text(element: ET.Element | None, tag: str) -> str | None:
    """Stripped text of the direct child ``tag`` ("" when empty); None when absent."""
    if element is None:
        return None
    child = element.find(tag)
    if child is None:
        return None
    return (child.text or "").strip()


def _number(text: str | None) -> float | None:
    """A finite float from XML text, None when absent or not a finite number."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _read_split(root: str, split: str) -> tuple[list[str], str]:
    """Image ids of ``ImageSets/Main/<split>.txt``, in file order."""
    folder = os.path.join(root, "ImageSets", "Main")
    path = safe_child(folder, split + ".txt", what="image set", where=f"{root}: split")
    if not os.path.isfile(path):
        available = (
            sorted(n[:-4] for n in list_files(folder, what="image sets").keys() if n.endswith(".txt"))
            if os.path.isdir(folder)
            else []
        )
        raise InputError(
            f"{path}: image set not found; expected ImageSets/Main/<split>.txt, found splits {available[:10]}"
        )
    rows = split_rows(read_text(path, what="an image set (one image id per line)"))
    wrong = [(f"{path}:{n}", f"{len(f)} columns {shorten(' '.join(f))}") for n, f in rows if len(f) != 1]
    if wrong:
        fail_records(
            "not one image id per line",
            "one image id per line (ImageSets/Main/<split>.txt; "
            "the class files <class>_<split>.txt are for classification)",
            wrong,
        )
    ids = [f[0] for _, f in rows]
    seen: dict[str, int] = {}
    dup = []
    for n, f in rows:
        if f[0] in seen:
            dup.append((f"{path}:{n}", f"{shorten(f[0])} (also line {seen[f[0]]})"))
        else:
            seen[f[0]] = n
    if dup:
        fail_records("image id listed twice", "each image id once", dup)
    unsafe = [(f"{path}:{n}", shorten(f[0])) for n, f in rows if not is_safe_name(f[0])]
    if unsafe:
        fail_records(
            "image id is a path",
            "a plain id without '/', '\\' or '..' (no file outside the dataset root is opened)",
            unsafe,
        )
    return ids, path


def _split_note(root: str, ids: list[str]) -> list[str]:
    """A note when no split was given and no image set lists exactly the annotation files."""
    folder = os.path.join(root, "ImageSets", "Main")
    if not os.path.isdir(folder):
        return []
    sets = {
        n[:-4]: p
        for n, p in list_files(folder, what="image sets").items()
        if n.endswith(".txt") and "_" not in n
    }
    everything = set(ids)
    for path in sets.values():
        listed = {f[0] for _, f in split_rows(read_text(path, what="an image set")) if f}
        if listed == everything:
            return []
    if not sets:
        return []
    return [
        f"{root}: no split given: all {len(ids)} Annotations/*.xml are scored, which no image "
        f"set of ImageSets/Main lists ({sorted(sets)[:10]}); pass split= / --split to choose one"
    ]


def image_sets(root: str | os.PathLike) -> dict[str, list[str]]:
    """The detection image sets of ``ImageSets/Main`` (split name -> image ids); {} without it.

    Class files (``<class>_<split>.txt``, for classification) are not image sets, nor are txt
    files that are not one plain image id per line, each once (``--split`` names their problem).
    """
    folder = os.path.join(os.fspath(root), "ImageSets", "Main")
    if not os.path.isdir(folder):
        return {}
    names = sorted(
        n[:-4] for n in list_files(folder, what="image sets") if n.endswith(".txt") and "_" not in n
    )
    sets = {}
    for name in names:
        try:
            sets[name] = _read_split(os.fspath(root), name)[0]
        except InputError:  # not a list of image ids (a README.txt, say): no image set
            continue
    return sets


def choose_split(root: str | os.PathLike, image_ids: Sequence[str]) -> str | None:
    """The image set of a root read without a split, chosen by the detections' image ids.

    None when the root has at most one image set, or one that lists every annotation file (then
    scoring every file is scoring that set). Otherwise the one set that holds every image id the
    detections name; when several do, the one that lists exactly those ids.

    Parameters
    ----------
    root : str or os.PathLike
    image_ids : sequence of str
        The VOC ids of the images the detections name.

    Returns
    -------
    str or None

    Raises
    ------
    InputError
        Several image sets and no single one chosen by the ids: the sets, and which fit.
    """
    root = os.fspath(root)
    sets = image_sets(root)
    if len(sets) < 2:
        return None
    annotations = list_files(os.path.join(root, "Annotations"), what="VOC annotation files")
    annotated = {n[:-4] for n in annotations if n.endswith(".xml")}
    if any(set(ids) == annotated for ids in sets.values()):
        return None
    wanted = set(image_ids)
    fit = [name for name, ids in sets.items() if wanted <= set(ids)]
    if len(fit) == 1:
        return fit[0]
    exact = [name for name in fit if set(sets[name]) == wanted]
    if len(exact) == 1:
        return exact[0]
    listed = ", ".join(f"{name} ({len(ids)} images)" for name, ids in sets.items())
    if fit:
        found = f"the detections' {len(wanted)} image ids are in each of {fit}"
    else:
        found = f"the detections' {len(wanted)} image ids are in no single one of them"
    raise InputError(
        f"{root}: no split given, and ImageSets/Main has several image sets: {listed}; {found}; "
        f"expected --split NAME (split='NAME'): scoring every Annotations/*.xml scores images "
        f"the detections were not made for"
    )


def load_voc_gt(
    root: str | os.PathLike, *, split: str | None = None, classes: Sequence[str] | None = None
) -> GroundTruth:
    """Read a PASCAL VOC root: ``Annotations/*.xml``, optionally restricted to an image set.

    Parameters
    ----------
    root : str or os.PathLike
        A folder with ``Annotations/`` (and ``ImageSets/Main/`` when ``split`` is given).
    split : str, optional
        Image set name: the images of ``ImageSets/Main/<split>.txt``, in that file's order.
        Default: every ``Annotations/*.xml``, sorted by file name.
    classes : sequence of str or "voc", optional
        Class names, in order (category ids 1..K); ``"voc"`` the 20 PASCAL classes
        (:data:`VOC_CLASSES`); see :func:`read_class_list` for a file. Default: the sorted
        distinct ``<name>`` values of the data. Objects of other classes are left out, with a
        counted warning; listed classes without objects have no ground truth (AP undefined,
        left out of mAP, as the devkit scores them).

    Returns
    -------
    GroundTruth
        Images in image-set (or file name) order, ``image_name`` the VOC id (``has_image_ids=
        False``: ``image_id`` is the position; results are joined by the VOC id as text);
        ``box_format="xyxy"`` with the XML's numbers as float64 (1-based inclusive corners);
        ``area = (x2 - x1) * (y2 - y1)`` (continuous; only COCO-style size ranges use it);
        ``is_difficult`` from ``<difficult>``; annotation ids 1..n in file order.

    Raises
    ------
    InputError
        Malformed XML (file and line), DTDs, missing or non-numeric fields, ``xmin > xmax``,
        ids that are paths, unknown or duplicate ids in the image set.

    Notes
    -----
    Warnings (counted, naming files): objects without ``<difficult>`` (read as 0, as the Python
    VOC ports would fail on them), coordinates outside the image (``< 0`` or beyond
    ``<size>``; kept, as the devkit keeps them), images without a usable ``<size>``.
    ``<truncated>`` is not used by any protocol (the devkit ignores it too). Without ``split``,
    a warning names the image sets of ``ImageSets/Main`` when none of them lists exactly the
    annotation files (a merged trainval + test folder scored as a whole is a common mistake).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); (root / "Annotations").mkdir()
    >>> _ = (root / "Annotations" / "a.xml").write_text(
    ...     "<annotation><size><width>50</width><height>40</height></size><object><name>cat</name>"
    ...     "<difficult>0</difficult><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>10</xmax>"
    ...     "<ymax>20</ymax></bndbox></object></annotation>")
    >>> gt = load_voc_gt(root)
    >>> gt.image_name, gt.category_name, gt.box.tolist()
    (('a',), ('cat',), [[1.0, 2.0, 10.0, 20.0]])
    """
    root = os.fspath(root)
    ids, paths, warnings = _annotation_paths(root, split)
    objects = _read_annotations(paths)
    if objects.bad_fields:
        fail_records(
            "object without a usable name, bndbox or difficult flag",
            "<name>, <bndbox> with four finite numbers <xmin> <ymin> <xmax> <ymax>, and <difficult> 0 or 1",
            objects.bad_fields,
            kind="objects",
        )
    image_width, image_height = objects.image_width, objects.image_height
    obj_image, obj_name, obj_box = objects.image, objects.name, objects.box
    obj_difficult, obj_where = objects.is_difficult, objects.where

    box = np.array(obj_box, dtype=np.float64).reshape(len(obj_box), 4)
    inverted = np.flatnonzero((box[:, 0] > box[:, 2]) | (box[:, 1] > box[:, 3]))
    if len(inverted):
        fail_records(
            "xmin > xmax or ymin > ymax",
            "xmin <= xmax and ymin <= ymax",
            [(obj_where[j], f"[{_fmt(box[j])}]") for j in inverted],
            kind="objects",
        )

    if classes is None:
        class_names = tuple(sorted(set(obj_name)))
    else:
        class_names = _check_classes(classes, root)
    class_index = {c: k for k, c in enumerate(class_names)}
    keep = np.array([n in class_index for n in obj_name], dtype=bool)
    warnings += _object_warnings(root, objects, keep)
    image = np.array(obj_image, dtype=np.int64)
    width, height = image_width[image], image_height[image]
    outside = np.flatnonzero((box[:, 0] < 0) | (box[:, 1] < 0) | (box[:, 2] > width) | (box[:, 3] > height))
    if len(outside):
        warnings.append(
            f"{root}: {len(outside)} objects extend outside their image (coordinate < 0 "
            f"or beyond <size>), kept as the devkit keeps them: "
            f"{names_note([obj_where[j] for j in outside], 3)}"
        )

    rows = np.flatnonzero(keep)
    box = box[rows]
    category = np.array([class_index[obj_name[j]] for j in rows], dtype=np.int64)
    n_gt = len(rows)
    return GroundTruth(
        image_id=np.arange(len(ids), dtype=np.int64),
        image_name=tuple(ids),
        image_width=image_width,
        image_height=image_height,
        category_id=np.arange(1, len(class_names) + 1, dtype=np.int64),
        category_name=class_names,
        annotation_id=np.arange(1, n_gt + 1, dtype=np.int64),
        image=image[rows],
        category=category,
        box=box,
        area=(box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1]),
        is_crowd=np.zeros(n_gt, dtype=bool),
        is_difficult=np.array(obj_difficult, dtype=bool).reshape(-1)[rows],
        is_ignore=np.zeros(n_gt, dtype=bool),
        box_format="xyxy",
        source=root,
        warnings=tuple(warnings),
        has_image_ids=False,
    )


def _annotation_paths(root: str, split: str | None) -> tuple[list[str], list[str], list[str]]:
    """The image ids, their annotation files and a note on the image sets (no ``split`` only).

    Raises
    ------
    InputError
        No ``Annotations/`` folder; ids of the image set without an annotation file.
    """
    ann_dir = os.path.join(root, "Annotations")
    if not os.path.isdir(ann_dir):
        raise InputError(
            f"{root}: no Annotations/ folder; expected a PASCAL VOC root "
            f"(Annotations/*.xml, ImageSets/Main/<split>.txt)"
        )
    if split is not None:
        ids, split_path = _read_split(root, split)
        paths = [safe_child(ann_dir, i + ".xml", what="image id", where=split_path) for i in ids]
        missing = [(split_path, shorten(i)) for i, p in zip(ids, paths, strict=True) if not os.path.isfile(p)]
        if missing:
            fail_records(
                "image without an annotation file",
                f"Annotations/<id>.xml for every id of {split_path}",
                missing,
                kind="image ids",
            )
        return ids, paths, []
    files = list_files(ann_dir, what="VOC annotation files")
    names = sorted(n for n in files if n.endswith(".xml"))
    ids = [n[:-4] for n in names]
    return ids, [files[n] for n in names], _split_note(root, ids)


@dataclass
class _Objects:
    """The objects read from a list of annotation files (built by :func:`_read_annotations`)."""

    image_width: np.ndarray
    image_height: np.ndarray
    image: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    box: list[tuple] = field(default_factory=list)
    is_difficult: list[bool] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    bad_fields: list[tuple[str, str]] = field(default_factory=list)
    no_difficult: list[str] = field(default_factory=list)
    no_size: list[str] = field(default_factory=list)


def _read_annotations(paths: list[str]) -> _Objects:
    """Read every annotation file: image sizes, usable objects and the defects found.

    Raises
    ------
    InputError
        Malformed XML, or a root element other than ``<annotation>``.
    """
    objects = _Objects(image_width=np.full(len(paths), np.nan), image_height=np.full(len(paths), np.nan))
    for i, path in enumerate(paths):
        root_el, lines = parse_xml(read_bytes(path, what=_ANNOTATION, limit=MAX_BYTES["xml"]), path)
        if root_el.tag != "annotation":
            raise InputError(
                f"{path}:{lines.get(root_el, 1)}: root element is <{root_el.tag}>; "
                f"expected <annotation> ({_ANNOTATION})"
            )
        size = root_el.find("size")
        width, height = _number(_text(size, "width")), _number(_text(size, "height"))
        if width is None or height is None or width <= 0 or height <= 0:
            objects.no_size.append(path)
        else:
            objects.image_width[i], objects.image_height[i] = width, height
        for k, obj in enumerate(root_el.findall("object")):
            name = _text(obj, "name")
            where = f"{path}:{lines.get(obj, 0)}: object #{k} (name={shorten(name or '')})"
            fields = _object_fields(obj, name)
            if isinstance(fields, str):
                objects.bad_fields.append((where, fields))
                continue
            name, coords, difficult = fields
            if difficult is None:
                objects.no_difficult.append(path)
            objects.image.append(i)
            objects.name.append(name)
            objects.box.append(coords)
            objects.is_difficult.append(bool(difficult))
            objects.where.append(where)
    return objects


def _object_fields(obj: ET.Element, name: str | None) -> str | tuple[str, tuple, bool | None]:
    """The name, box and difficult flag (None when absent) of one ``<object>``, or what is wrong."""
    if not name:
        return "no <name>" if name is None else "an empty <name>"
    repeated = [f"<{t}>" for t in _ONCE if len(obj.findall(t)) > 1]
    box_el = obj.find("bndbox")
    if box_el is not None:
        repeated += [f"<bndbox><{t}>" for t in _CORNERS if len(box_el.findall(t)) > 1]
    if repeated:  # the devkit would read the first and ignore the rest: refused, not guessed
        return (
            f"{', '.join(repeated)} more than once (one object per "
            f"<object>: write another <object> for another box)"
        )
    if box_el is None:
        return "no <bndbox>"
    texts = [_text(box_el, t) for t in ("xmin", "ymin", "xmax", "ymax")]
    coords = [_number(t) for t in texts]
    if any(c is None for c in coords):
        shown = ", ".join(
            f"{t}={'missing' if x is None else shorten(x)}"
            for t, x in zip(("xmin", "ymin", "xmax", "ymax"), texts, strict=True)
        )
        return f"<bndbox> {shown}"
    difficult_text = _text(obj, "difficult")
    if difficult_text is None:
        return name, tuple(coords), None
    if difficult_text in ("0", "1"):
        return name, tuple(coords), difficult_text == "1"
    return f"<difficult>{shorten(difficult_text)}</difficult>"


def _object_warnings(root: str, objects: _Objects, keep: np.ndarray) -> list[str]:
    """Counted warnings: objects of unlisted classes, without ``<difficult>``, images without a size."""
    warnings = []
    if not keep.all():
        other = sorted({n for n, kept in zip(objects.name, keep, strict=True) if not kept})
        warnings.append(
            f"{root}: {int((~keep).sum())} objects of classes not in the class list were "
            f"left out: {names_note(other)}"
        )
    no_difficult = objects.no_difficult
    if no_difficult:
        files = sorted(set(no_difficult))
        warnings.append(
            f"{root}: {len(no_difficult)} objects in {len(files)} files have no "
            f"<difficult>: read as 0 (not difficult); files: {names_note(files)}"
        )
    if objects.no_size:
        warnings.append(
            f"{root}: {len(objects.no_size)} images without a positive <size> width and height "
            f"(size unknown, boxes not checked against it): {names_note(objects.no_size)}"
        )
    return warnings


def _fmt(box: np.ndarray) -> str:
    return ", ".join(f"{v:g}" for v in box)


def voc_year(root: str | os.PathLike) -> int | None:
    """The year of a VOC root from its folder name (``VOCdevkit/VOC2007`` -> 2007), or None.

    Only the root's own name counts (the devkit's layout ``VOCdevkit/VOC<year>``), not the
    folders above it.

    Examples
    --------
    >>> voc_year("/data/VOCdevkit/VOC2012"), voc_year("data/voc2007_test"), voc_year("fixtures/voc")
    (2012, 2007, None)
    """
    years = re.findall(r"voc(\d{4})", os.path.basename(os.path.abspath(os.fspath(root))).lower())
    return int(years[-1]) if years else None
