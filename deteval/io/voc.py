"""PASCAL VOC: ``Annotations/*.xml`` ground truth and per-class result files.

A VOC root holds ``Annotations/<id>.xml`` (one file per image) and ``ImageSets/Main/<split>.txt``
(one image id per line). Detections are a folder of per-class files ``<prefix><class>.txt``
(``comp4_det_test_car.txt`` in the devkit, or just ``car.txt``), one detection per line:
``image_id score x1 y1 x2 y2``.

Boxes keep the numbers written in the files (``box_format="xyxy"``): the VOC convention is
1-based, inclusive pixel corners, and the ``pixel_inclusive`` protocols redo the devkit's ``+1``
arithmetic on exactly those numbers. Under a ``continuous`` protocol the same corners are read
as continuous coordinates (width ``x2 - x1``).

XML is read with expat and a parser that refuses any DTD: a ``<!DOCTYPE`` (and with it every
entity declaration, internal or external) is an error before anything in it is expanded or
fetched, so "billion laughs" and external-entity files cannot cost memory or read files.
Image ids and class names are never used as paths as given (see :mod:`deteval.io._text`).
"""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, InputError
from deteval.io._text import (
    MAX_BYTES,
    fail_records,
    is_safe_name,
    list_files,
    names_note,
    parse_floats,
    read_bytes,
    read_text,
    safe_child,
    shorten,
    split_rows,
)
from deteval.io.identity import explain_miss, join_voc_ids

__all__ = [
    "load_voc_gt",
    "load_voc_dt",
    "parse_xml",
    "detect_prefix",
    "VOC_CLASSES",
    "read_class_list",
    "with_result_classes",
    "voc_year",
]

#: The 20 PASCAL VOC classes, in the devkit's (alphabetical) order.
VOC_CLASSES = (
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
)

_ANNOTATION = "a VOC annotation XML file"


class _Refused(Exception):
    """Raised from inside the expat handlers to stop at a DTD construct."""


def parse_xml(raw: bytes, where: str) -> tuple[ET.Element, dict]:
    """Parse XML that may not contain a DTD; return the root element and element -> line.

    Parameters
    ----------
    raw : bytes
        The file's bytes (any encoding expat knows, declared in the XML prolog).
    where : str
        File name for messages.

    Returns
    -------
    root : xml.etree.ElementTree.Element
    lines : dict
        Line number of each element's start tag (for messages).

    Raises
    ------
    InputError
        ``<file>:<line>:<column>: malformed XML (...)``, or a DOCTYPE / entity declaration
        (refused before anything in it is expanded or fetched).

    Examples
    --------
    >>> root, _ = parse_xml(b"<annotation><object><name>cat</name></object></annotation>", "a.xml")
    >>> root.find("object/name").text
    'cat'
    >>> try:
    ...     parse_xml(b'<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>', "bad.xml")
    ... except InputError as exc:
    ...     print(str(exc)[:59])
    bad.xml:1: refused a DOCTYPE declaration (<!DOCTYPE a ...>)
    """
    builder = ET.TreeBuilder()
    lines: dict = {}
    parser = expat.ParserCreate()
    parser.buffer_text = True

    def start(tag: str, attrs: dict) -> None:
        lines[builder.start(tag, attrs)] = parser.CurrentLineNumber

    def refuse_doctype(name: str, *_: Any) -> None:
        raise _Refused(f"a DOCTYPE declaration (<!DOCTYPE {name} ...>)")

    def refuse_entity(name: str, *_: Any) -> None:
        raise _Refused(f"an entity declaration ({name})")

    def refuse_external(*_: Any) -> int:
        raise _Refused("an external entity reference")

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.ExternalEntityRefHandler = refuse_external
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(raw, True)
    except expat.ExpatError as exc:
        raise InputError(
            f"{where}:{exc.lineno}:{exc.offset + 1}: malformed XML "
            f"({expat.ErrorString(exc.code)}); expected {_ANNOTATION}"
        ) from None
    except (LookupError, ValueError) as exc:  # an unknown or multi-byte declared encoding
        declared = re.search(rb"""encoding\s*=\s*["']([^"']{0,40})""", raw[:200])
        shown = shorten(declared.group(1).decode("ascii", "replace")) if declared else "unknown"
        raise InputError(
            f"{where}:1: XML declares the encoding {shown}, which cannot be read ({exc}); "
            f"expected UTF-8 (or another single-byte encoding): save it as UTF-8"
        ) from None
    except _Refused as exc:
        raise InputError(
            f"{where}:{parser.CurrentLineNumber}: refused {exc}: DTDs and entities "
            f"are not read (they can expand to gigabytes or read files outside the "
            f"dataset); expected plain XML without <!DOCTYPE>, found one"
        ) from None
    return builder.close(), lines


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


def _padding_hint(value: str, gt: GroundTruth) -> str:
    hint = explain_miss(value, gt)
    return f" ({hint})" if hint else ""


def _fmt(box: np.ndarray) -> str:
    return ", ".join(f"{v:g}" for v in box)


def _check_classes(classes: Sequence[str], where: str) -> tuple:
    if isinstance(classes, str) and classes == "voc":
        return VOC_CLASSES
    if isinstance(classes, str) or not all(isinstance(c, str) and c for c in classes):
        raise InputError(f"{where}: classes must be a list of non-empty strings, found {classes!r:.80}")
    seen: set[str] = set()
    dup = []  # every repeat, in order
    for c in classes:
        if c in seen:
            dup.append(c)
        seen.add(c)
    if dup:
        raise InputError(f"{where}: classes listed twice: {dup[:5]}; expected each class once")
    return tuple(classes)


def detect_prefix(file_names: Sequence[str], class_names: Sequence[str]) -> str:
    """The common prefix of per-class result files ``<prefix><class>.txt``.

    The prefix that explains the most files wins; when several explain the same files (a class
    name ends another one, ``car`` / ``racecar``) the shortest prefix is taken.

    Raises
    ------
    InputError
        When two different prefixes explain different files equally well (two runs in one
        folder); pass ``prefix`` then.

    Examples
    --------
    >>> detect_prefix(["comp4_det_test_car.txt", "comp4_det_test_racecar.txt"], ["car", "racecar"])
    'comp4_det_test_'
    >>> detect_prefix(["car.txt", "dog.txt", "notes.md"], ["car", "dog"])
    ''
    """
    explained: dict[str, set] = {}
    for name in file_names:
        if not name.endswith(".txt"):
            continue
        stem = name[:-4]
        for c in class_names:
            if stem.endswith(c):
                explained.setdefault(stem[: -len(c)], set()).add(name)
    if not explained:
        return ""
    best = max(len(v) for v in explained.values())
    top = sorted((p for p, v in explained.items() if len(v) == best), key=len)
    if any(explained[p] != explained[top[0]] for p in top[1:]):
        raise InputError(
            f"result files with different prefixes explain {best} files each: "
            f"{[p for p in top[:5]]}; expected one prefix <prefix><class>.txt "
            f"(pass --result-prefix PREFIX / prefix=... to choose)"
        )
    return top[0]


def read_class_list(spec: str | os.PathLike | Sequence[str]) -> tuple[str, ...]:
    """The class list of ``--classes``: ``"voc"`` (the 20 PASCAL classes), a file, or names.

    A file holds one class name per line (blank lines and lines starting with ``#`` are
    skipped); the order gives the category ids 1..K.

    Raises
    ------
    ConfigError
        A missing file, a name listed twice or a name with spaces (``file:line``).

    Examples
    --------
    >>> read_class_list("voc")[:3]
    ('aeroplane', 'bicycle', 'bird')
    """
    if not isinstance(spec, (str, os.PathLike)):
        return _check_classes(list(spec), "classes")
    path = os.fspath(spec)
    if path == "voc":
        return VOC_CLASSES
    if not os.path.isfile(path):
        raise ConfigError(
            f"--classes {path}: not 'voc' and no such file; expected 'voc' (the 20 PASCAL "
            f"classes) or a file with one class name per line"
        )
    names: list[str] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(read_text(path, what="a class list (one name per line)").splitlines(), 1):
        name = line.strip()
        if not name or name.startswith("#"):
            continue
        if len(name.split()) != 1 or not is_safe_name(name):
            raise ConfigError(
                f"{path}:{n}: class name {shorten(name)}; expected one name per line, "
                f"without spaces, '/', '\\' or '..'"
            )
        if name in seen:
            raise ConfigError(
                f"{path}:{n}: class {name!r} listed twice (also line {seen[name]}); expected each class once"
            )
        seen[name] = n
        names.append(name)
    if not names:
        raise ConfigError(f"{path}: no class names; expected one class name per line")
    return tuple(names)


def _result_files(
    folder: str, classes: Sequence[str], prefix: str | None
) -> tuple[dict[str, str], list[str], str]:
    """(file name -> path, sorted .txt names, prefix) of a result folder."""
    files = list_files(folder, what="a folder of VOC result files <prefix><class>.txt")
    txt = sorted(n for n in files if n.endswith(".txt"))
    return files, txt, detect_prefix(txt, classes) if prefix is None else prefix


def with_result_classes(
    gt: GroundTruth, folder: str | os.PathLike, *, prefix: str | None = None
) -> GroundTruth:
    """``gt`` with the PASCAL classes that have a result file but no object in this subset.

    The devkit scores every class of its fixed list; a subset of the data (a few images, one
    split) may have no object of some class that the detector still reports. Without a class
    list, deteval adds such classes when every class of the ground truth and of the result
    files is a PASCAL class: they have no ground truth (AP undefined, left out of mAP) and a
    warning names them. Any other result file name stays an error (a typo), and ``--classes``
    makes the list explicit.

    Returns
    -------
    GroundTruth
        ``gt`` itself when nothing is added; otherwise categories sorted by name (ids 1..K, the
        order ``load_voc_gt`` gives without a class list).
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        return gt
    _, txt, prefix = _result_files(folder, gt.category_name, prefix)
    known = set(gt.category_name)
    extra = sorted({n[len(prefix) : -4] for n in txt if n.startswith(prefix)} - known)
    if not extra or not known <= set(VOC_CLASSES) or not set(extra) <= set(VOC_CLASSES):
        return gt
    names = tuple(sorted(known | set(extra)))
    new_index = np.array([names.index(c) for c in gt.category_name], dtype=np.int64)
    files = ", ".join(f"{prefix}{c}.txt" for c in extra[:5]) + (" ..." if len(extra) > 5 else "")
    note = (
        f"{folder}: {len(extra)} PASCAL classes have result files but no object in {gt.source}: "
        f"{', '.join(extra[:5])} ({files}); scored as the devkit does, with no ground truth: AP "
        f"undefined, left out of mAP (--classes FILE|voc states the class list)"
    )
    return replace(
        gt,
        category_id=np.arange(1, len(names) + 1, dtype=np.int64),
        category_name=names,
        category=new_index[gt.category],
        warnings=tuple(gt.warnings) + (note,),
    )


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


def _result_file_notes(
    folder: str, gt: GroundTruth, files: dict[str, str], txt: list[str], prefix: str, *, unknown_category: str
) -> list[str]:
    """Check the result files found against the classes of ``gt``; the warnings to give.

    Raises
    ------
    InputError
        No result file of any class; result files of classes not in ``gt`` (unless dropped).
    """
    classes = list(gt.category_name)
    by_class = {c: prefix + c + ".txt" for c in classes}
    wanted = set(by_class.values())
    warnings: list[str] = []
    if not txt:
        warnings.append(
            f"{folder}: no result files (<prefix><class>.txt): every class with ground truth gets AP 0"
        )
    elif not wanted & set(txt):
        raise InputError(
            f"{folder}: no result file for any class; expected "
            f"{prefix or '<prefix>'}<class>.txt with a class of {gt.source} "
            f"({names_note(classes)}), found {names_note(txt)}"
        )
    else:
        unknown = [n for n in txt if n.startswith(prefix) and n not in wanted]
        if unknown:
            if unknown_category != "drop":
                raise InputError(
                    f"{folder}: {len(unknown)} result files of classes not in the ground "
                    f"truth: {names_note(unknown)}; expected {prefix}<class>.txt with a "
                    f"class of {gt.source} ({names_note(classes)}); a class the detector "
                    f"knows but this subset has no object of: pass the class list "
                    f"(--classes FILE|voc, classes=...) and it is scored with no ground "
                    f"truth, as the devkit does"
                )
            warnings.append(
                f"{folder}: left out {len(unknown)} result files of classes not in the "
                f"ground truth: {names_note(unknown)}"
            )
        others = [n for n in txt if not n.startswith(prefix)]
        if others:
            warnings.append(
                f"{folder}: {len(others)} .txt files not read (not {prefix}<class>.txt): {names_note(others)}"
            )
        absent = [c for c in classes if by_class[c] not in files]
        if absent:
            warnings.append(
                f"{folder}: {len(absent)} classes have no result file "
                f"({prefix}<class>.txt), so no detections: {names_note(absent)}"
            )
    return warnings


def load_voc_dt(
    folder: str | os.PathLike, gt: GroundTruth, *, prefix: str | None = None, unknown_category: str = "error"
) -> Detections:
    r"""Read a folder of VOC per-class result files against ``gt``.

    Parameters
    ----------
    folder : str or os.PathLike
        Files ``<prefix><class>.txt`` (e.g. ``comp4_det_test_car.txt``), one detection per line:
        ``image_id score x1 y1 x2 y2`` (1-based inclusive pixel corners, as the devkit writes).
    gt : GroundTruth
        Classes are matched by name; image ids by image name (VOC id), else file-name stem,
        compared as text as the devkit does (``1`` is not ``000001``; no numeric fallback).
    prefix : str, optional
        File name prefix; detected from the file names and class names when not given.
    unknown_category : {"error", "drop"}
        A file ``<prefix><name>.txt`` whose name is not a class of ``gt``: refuse (default), or
        leave it out with a counted warning.

    Returns
    -------
    Detections
        ``box_format="xyxy"``; ``order`` = position in the files read in class order, line by
        line (the devkit's stable sort breaks score ties by it).

    Raises
    ------
    InputError
        Wrong column count or non-numbers (``file:line``), image ids not in the ground truth,
        ``x1 > x2`` or ``y1 > y2``, result files of unknown classes.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); (root / "Annotations").mkdir()
    >>> _ = (root / "Annotations" / "a.xml").write_text("<annotation><object><name>cat</name>"
    ...     "<difficult>0</difficult><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>10</xmax>"
    ...     "<ymax>10</ymax></bndbox></object></annotation>")
    >>> _ = (root / "comp4_det_test_cat.txt").write_text("a 0.9 1 1 10 10\n")
    >>> dt = load_voc_dt(root, load_voc_gt(root))
    >>> dt.score.tolist(), dt.box.tolist()
    ([0.9], [[1.0, 1.0, 10.0, 10.0]])
    """
    folder = os.fspath(folder)
    if unknown_category not in ("error", "drop"):
        raise ValueError(f"unknown_category must be 'error' or 'drop', found {unknown_category!r}")
    classes = list(gt.category_name)
    files, txt, prefix = _result_files(folder, classes, prefix)
    by_class = {c: prefix + c + ".txt" for c in classes}
    warnings = _result_file_notes(folder, gt, files, txt, prefix, unknown_category=unknown_category)

    parts_image, parts_category, parts_box, parts_score = [], [], [], []
    wrong_columns: list[tuple[str, str]] = []
    unknown_ids: list[tuple[str, str]] = []
    inverted: list[tuple[str, str]] = []
    for k, c in enumerate(classes):
        name = by_class[c]
        if name not in files:
            continue
        path = files[name]
        rows = split_rows(read_text(path, what="VOC result lines `image_id score x1 y1 x2 y2`"))
        wrong = [
            (f"{path}:{n}", f"{len(f)} columns {shorten(' '.join(f), 80)}") for n, f in rows if len(f) != 6
        ]
        if wrong:
            wrong_columns.extend(wrong)
            continue
        numbers = parse_floats(rows, slice(1, 6), path, "score x1 y1 x2 y2")
        index = join_voc_ids([f[0] for _, f in rows], gt)
        unknown_ids.extend(
            (f"{path}:{n}", shorten(f[0]) + _padding_hint(f[0], gt))
            for (n, f), i in zip(rows, index, strict=True)
            if i < 0
        )
        box = numbers[:, 1:5]
        bad = np.flatnonzero((box[:, 0] > box[:, 2]) | (box[:, 1] > box[:, 3]))
        inverted.extend((f"{path}:{rows[j][0]}", f"[{_fmt(box[j])}]") for j in bad)
        parts_image.append(index)
        parts_category.append(np.full(len(rows), k, dtype=np.int64))
        parts_box.append(box)
        parts_score.append(numbers[:, 0])
    if wrong_columns:
        fail_records("wrong number of columns", "6 columns `image_id score x1 y1 x2 y2`", wrong_columns)
    if unknown_ids:
        fail_records("image id not in the ground truth", f"an image of {gt.source}", unknown_ids)
    if inverted:
        fail_records("x1 > x2 or y1 > y2 (negative width or height)", "x1 <= x2 and y1 <= y2", inverted)
    image = np.concatenate(parts_image) if parts_image else np.zeros(0, dtype=np.int64)
    box = np.concatenate(parts_box) if parts_box else np.zeros((0, 4))
    if len(box) >= 10:
        known = np.isfinite(gt.image_width[image])
        if known.any() and np.median(gt.image_width[image][known]) > 2 and (box <= 1.0).all():
            warnings.append(
                f"{folder}: every box coordinate is <= 1 while images are "
                f"{int(np.median(gt.image_width[image][known]))} px wide: are the boxes "
                f"normalized? VOC result files hold pixel corners x1 y1 x2 y2"
            )
    return Detections(
        image=image,
        category=np.concatenate(parts_category) if parts_category else np.zeros(0, dtype=np.int64),
        box=box,
        score=np.concatenate(parts_score) if parts_score else np.zeros(0),
        order=np.arange(len(image), dtype=np.int64),
        has_box=np.ones(len(image), dtype=bool),
        box_format="xyxy",
        source=folder,
        warnings=tuple(warnings),
    )
