"""VOC detections: a folder of per-class result files ``<prefix><class>.txt``.

One detection per line: ``image_id score x1 y1 x2 y2`` (``comp4_det_test_car.txt`` in the
devkit, or just ``car.txt``). Image ids are joined to the ground truth as text, as the devkit
does; the classes come from the ground truth (plus PASCAL classes found only in result files,
see :func:`with_result_classes`).

With the optional C extension built, the ids are looked up in a hash table of the ground
truth's image names and stems made once per load (``_colparse.key_slots`` / ``voc_rows``), with
no Python string per line; a file with an id that names no image, or a line that is not plain,
is read again by the readers that keep the ids as text (the twin, which names the problems).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from deteval import _speedups
from deteval._safe_read import read_bytes, read_text
from deteval.data import Detections, GroundTruth, order_column
from deteval.errors import InputError
from deteval.io._text import fail_records, list_files, names_note, parse_floats, shorten, split_rows
from deteval.io.coco.fast import _compiled_voc_rows
from deteval.io.identity import explain_miss, join_voc_ids, stem
from deteval.io.voc.annotations import _fmt
from deteval.io.voc.classes import VOC_CLASSES

__all__ = ["load_voc_dt", "detect_prefix", "with_result_classes"]

_WHAT = "VOC result lines `image_id score x1 y1 x2 y2`"

_colparse = _speedups.load("deteval.io._colparse")
if _colparse is not None and not hasattr(_colparse, "voc_rows"):
    _colparse = None  # pragma: no cover - an extension built from older sources

#: Bytes of the shortest row of six fields with its line break (``a 1 1 1 1 1\n``).
_MIN_ROW_BYTES = 12

#: The image ids of a ground truth as the compiled reader looks them up: the ids (ASCII bytes,
#: concatenated), their offsets (n + 1), the image index each names, and their hash slots.
_IdTable = tuple[bytes, np.ndarray, np.ndarray, np.ndarray]


def _id_table(gt: GroundTruth) -> _IdTable | None:
    """Every text that names an image of ``gt`` (its name or stem), as :func:`join_voc_ids` joins them.

    None without the compiled reader. Only ASCII texts are kept: the compiled reader reads ASCII
    ids only (others go to the Python reader).
    """
    if _colparse is None:
        return None
    names = [str(n) for n in gt.image_name]
    candidates = [v for v in dict.fromkeys(names + [stem(n) for n in names]) if v.isascii()]
    found = join_voc_ids(candidates, gt)
    keys = [v.encode("ascii") for v, i in zip(candidates, found.tolist(), strict=True) if i >= 0]
    start = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in keys], out=start[1:])
    blob = b"".join(keys)
    slots = np.frombuffer(_colparse.key_slots(blob, start), dtype=np.int64)
    return blob, start, found[found >= 0], slots


def _compiled_voc_indexed(raw: bytes, table: _IdTable) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """VOC result lines with their image ids looked up: (image index, numbers (n, 5), lines), or None.

    The image index is -1 for an id that names no image. None when a line is not plain (the
    grammar of :func:`deteval.io.coco.fast._compiled_text_rows`): the Python reader decides.
    """
    if _colparse is None:
        return None
    capacity = len(raw) // _MIN_ROW_BYTES + 1
    image = np.empty(capacity, dtype=np.int64)
    numbers = np.empty(5 * capacity, dtype=np.float64)
    lines = np.empty(capacity, dtype=np.int64)
    n = _colparse.voc_rows(raw, *table, image, numbers, lines)
    if n is None:
        return None
    for column, size in ((image, n), (numbers, 5 * n), (lines, n)):
        column.resize(size, refcheck=False)  # in place: no view of these arrays exists yet
    return image, numbers.reshape(n, 5), lines


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


def _file_rows(
    path: str, table: _IdTable | None
) -> tuple[np.ndarray | None, list[str] | None, np.ndarray, np.ndarray, list[tuple[str, str]]]:
    """One result file: (image index or None, ids as text or None, numbers (n, 5), lines, wrong rows).

    Either the image index (every id names an image) or the ids as text is given; ``wrong``
    lists the lines of another column count (``file:line``, what was found), and the other
    values are empty then.
    """
    raw = read_bytes(path, what=_WHAT)
    # The compiled readers take plain files (six fields a line, plain decimals, ASCII) and give
    # what the Python reader below gives, which reads -- and names the problems of -- every
    # other file. The first also looks the ids up; a file with an id that names no image is read
    # again for the ids as text (the message quotes them).
    indexed = _compiled_voc_indexed(raw, table) if table is not None else None
    if indexed is not None and (indexed[0] >= 0).all():
        return indexed[0], None, indexed[1], indexed[2], []
    compiled = _compiled_voc_rows(raw)
    if compiled is not None:
        return None, *compiled, []
    rows = split_rows(read_text(path, what=_WHAT))
    wrong = [(f"{path}:{n}", f"{len(f)} columns {shorten(' '.join(f), 80)}") for n, f in rows if len(f) != 6]
    if wrong:
        return None, None, np.zeros((0, 5)), np.zeros(0, dtype=np.int64), wrong
    numbers = parse_floats(rows, slice(1, 6), path, "score x1 y1 x2 y2")
    return None, [f[0] for _, f in rows], numbers, np.array([n for n, _ in rows], dtype=np.int64), []


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
    >>> from deteval.io.voc import load_voc_gt
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

    parts_category, parts_box, parts_score = [], [], []
    parts_image: list[np.ndarray | None] = []  # None: joined from the ids below
    parts_ids: list[tuple[int, str, np.ndarray, list[str]]] = []  # (part, path, lines, ids)
    wrong_columns: list[tuple[str, str]] = []
    unknown_ids: list[tuple[str, str]] = []
    inverted: list[tuple[str, str]] = []
    table = _id_table(gt) if any(by_class[c] in files for c in classes) else None
    for k, c in enumerate(classes):
        name = by_class[c]
        if name not in files:
            continue
        path = files[name]
        image, ids, numbers, lines, wrong = _file_rows(path, table)
        if wrong:
            wrong_columns.extend(wrong)
            continue
        box = numbers[:, 1:5]
        bad = np.flatnonzero((box[:, 0] > box[:, 2]) | (box[:, 1] > box[:, 3]))
        inverted.extend((f"{path}:{lines[j]}", f"[{_fmt(box[j])}]") for j in bad)
        if ids is None:
            parts_image.append(image)
        else:
            parts_ids.append((len(parts_image), path, lines, ids))
            parts_image.append(None)
        parts_category.append(np.full(len(lines), k, dtype=np.int32))
        parts_box.append(box)
        parts_score.append(numbers[:, 0])
    # One join for the files read with their ids as text: building the ground truth's name lookup
    # is the cost (per class file it was most of the time of reading VOC results).
    joined = join_voc_ids([v for *_, ids in parts_ids for v in ids], gt) if parts_ids else None
    split = (
        np.split(joined, np.cumsum([len(ids) for *_, ids in parts_ids])[:-1]) if joined is not None else []
    )
    for (part, path, lines, ids), index in zip(parts_ids, split, strict=True):
        parts_image[part] = index
        unknown_ids.extend(
            (f"{path}:{n}", shorten(v) + _padding_hint(v, gt))
            for n, v, i in zip(lines, ids, index, strict=True)
            if i < 0
        )
    if wrong_columns:
        fail_records("wrong number of columns", "6 columns `image_id score x1 y1 x2 y2`", wrong_columns)
    if unknown_ids:
        fail_records("image id not in the ground truth", f"an image of {gt.source}", unknown_ids)
    if inverted:
        fail_records("x1 > x2 or y1 > y2 (negative width or height)", "x1 <= x2 and y1 <= y2", inverted)
    image = (
        np.concatenate([p for p in parts_image if p is not None])
        if parts_image
        else np.zeros(0, dtype=np.int64)
    )
    box = np.concatenate(parts_box) if parts_box else np.zeros((0, 4))
    if len(box) >= 10 and (box <= 1.0).all():  # first: np.median's first call imports numpy.ma
        known = np.isfinite(gt.image_width[image])
        if known.any() and np.median(gt.image_width[image][known]) > 2:
            warnings.append(
                f"{folder}: every box coordinate is <= 1 while images are "
                f"{int(np.median(gt.image_width[image][known]))} px wide: are the boxes "
                f"normalized? VOC result files hold pixel corners x1 y1 x2 y2"
            )
    return Detections(
        image=image,
        category=np.concatenate(parts_category) if parts_category else np.zeros(0, dtype=np.int32),
        box=box,
        score=np.concatenate(parts_score) if parts_score else np.zeros(0),
        order=order_column(len(image)),
        has_box=np.ones(len(image), dtype=bool),
        box_format="xyxy",
        source=folder,
        warnings=tuple(warnings),
    )


def _padding_hint(value: str, gt: GroundTruth) -> str:
    hint = explain_miss(value, gt)
    return f" ({hint})" if hint else ""
