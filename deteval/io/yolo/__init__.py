"""YOLO (Ultralytics layout): a ``data.yaml`` dataset and per-image prediction txt files.

Ground truth: ``data.yaml`` gives ``names`` (a list, or a dict ``{id: name}``), ``path`` (the
dataset root; relative to the YAML file's folder, default that folder) and ``val`` (the images
folder, relative to ``path``). Each image ``<stem>.<ext>`` has a label file ``<stem>.txt`` found
as Ultralytics finds it: the last ``/images/`` of the image's path replaced by ``/labels/`` (or
next to the image when there is none). A label row is ``class cx cy w h``, normalized to [0, 1];
an image without a label file has no objects.

YOLO labels are relative to the image size, so the sizes must be known. They are read from the
file headers by a small pure-Python reader (PNG, JPEG -- with its EXIF orientation, as OpenCV
and Ultralytics apply it --, GIF, BMP), or given in a sizes file: lines ``<image file name>
<width> <height>``, passed as ``sizes=`` or named by a ``sizes:`` key of ``data.yaml`` (a
deteval extension; Ultralytics ignores the key). Other formats (WebP, TIFF, ...) need the
sizes file.

Predictions: a folder of ``<stem>.txt`` files (Ultralytics ``save_txt=True, save_conf=True``),
rows ``class cx cy w h conf`` (or ``class conf cx cy w h`` with ``layout=``), normalized.

Boxes are converted once to absolute pixels ``[x, y, w, h]`` (``box_format="xywh"``):
``x = (cx - w / 2) * width``, ``w = w * width``; ``area = w * h`` in pixels.

With the optional C extension built, all the label files of a split (or prediction files of a
folder) are read, parsed and converted by one compiled call (``_colparse.yolo_files``), with no
Python work per file but the read log; a folder with anything it does not take (a row that
is not plain, a value a message must name) is read file by file by the Python reader, its twin,
which gives the same values bit for bit and names the problems.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from deteval import _speedups
from deteval._safe_read import MAX_BYTES, changed_error, note_reads, read_bytes, read_text
from deteval.data import Detections, GroundTruth, order_column
from deteval.errors import InputError
from deteval.io._text import fail_records, list_files, names_note, parse_floats, shorten, split_rows
from deteval.io.category_map import (
    MAX_DROP,
    describe_reading,
    read_category_map,
    readings_of,
    resolve_categories,
)
from deteval.io.coco.fast import _compiled_yolo_rows
from deteval.io.identity import stem
from deteval.io.yolo.dataset import (
    _class_names,
    _label_folder,
    _read_sizes,
    _read_yaml,
    _split_image_folder,
    _split_image_sizes,
    _split_images,
    _stem,
    _yaml_path,
)
from deteval.io.yolo.image_size import IMAGE_EXTENSIONS, image_size
from deteval.io.yolo_layouts import LAYOUTS

_colparse = _speedups.load("deteval.io._colparse")


if _colparse is not None and not hasattr(_colparse, "yolo_files"):
    _colparse = None  # pragma: no cover - an extension built from older sources


__all__ = ["load_yolo_gt", "load_yolo_dt", "image_size", "IMAGE_EXTENSIONS", "LAYOUTS"]


_LABEL_ROW = "`class cx cy w h` (normalized)"


#: ``_colparse.yolo_files``' layout of label rows (0 and 1 are the prediction layouts of LAYOUTS).
_LABEL_LAYOUT = 2


def _class_ids(rows: list, column: int, path: str) -> np.ndarray:
    """Each row's class id (an integer, possibly written ``3.0``).

    An integer's text is read as that integer (``9007199254740993`` is not rounded to a float's
    ``2**53``, as the compiled reader reads it); other text through ``float`` (``3.0``, ``3e0``).
    """
    out = np.empty(len(rows), dtype=np.int64)
    bad, too_large = [], []
    for j, (n, f) in enumerate(rows):
        value: int | None
        try:
            value = int(f[column])
        except ValueError:
            try:
                number = float(f[column])
            except ValueError:
                number = float("nan")
            value = int(number) if number.is_integer() else None
        if value is None:
            bad.append((f"{path}:{n}", shorten(f[column])))
            out[j] = -1
        elif not -(2**63) <= value < 2**63:  # 1e20 does not fit an int64 id
            too_large.append((f"{path}:{n}", shorten(f[column])))
            out[j] = -1
        else:
            out[j] = value
    if bad:
        fail_records("class id is not an integer", "an integer class id (within +-2**63)", bad)
    if too_large:
        fail_records("class id beyond 64 bits", "an integer class id (within +-2**63)", too_large)
    return out


def _class_column(rows: list, column: int, path: str, class_ids: np.ndarray) -> np.ndarray:
    """Category index of each row's class id (an integer, possibly written ``3.0``); -1 if unknown."""
    out = _class_ids(rows, column, path)
    index = np.searchsorted(class_ids, out)
    index = np.minimum(index, max(len(class_ids) - 1, 0))
    known = (class_ids[index] == out) if len(class_ids) else np.zeros(len(out), dtype=bool)
    return np.where(known, index, -1)


def load_yolo_gt(
    source: str | os.PathLike, *, split: str = "val", sizes: str | os.PathLike | None = None
) -> GroundTruth:
    r"""Read a YOLO (Ultralytics) dataset's labels for one split.

    Parameters
    ----------
    source : str or os.PathLike
        ``data.yaml`` (or ``dataset.yaml``), or the folder holding it.
    split : str
        Key of ``data.yaml`` naming the images folder (``val``, ``test``, ``train``).
    sizes : str or os.PathLike, optional
        A file of ``<image file name> <width> <height>`` lines; default the ``sizes:`` key of
        ``data.yaml`` if any. Sizes it gives win over the image headers.

    Returns
    -------
    GroundTruth
        Images in file name order, ``image_name`` the image file name; ``has_image_ids=False``:
        the images have no ids, ``image_id`` is their position, and detections are joined by
        file name or stem (or ``int(stem)``, see :mod:`deteval.io.identity`), never by position.
        Category ids the YOLO class ids with their names; boxes absolute ``[x, y, w, h]`` pixels.

    Raises
    ------
    InputError
        Missing ``names`` or images folder, unknown class ids, wrong column counts,
        coordinates outside [0, 1] (``file:line``), unknown image sizes, duplicate stems.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "images" / "val").mkdir(parents=True); (root / "labels" / "val").mkdir(parents=True)
    >>> _ = (root / "images" / "val" / "a.gif").write_bytes(b"GIF89a" + bytes([200, 0, 100, 0]))
    >>> _ = (root / "labels" / "val" / "a.txt").write_text("0 0.5 0.5 0.5 0.2\n")
    >>> _ = (root / "data.yaml").write_text("names: [cat]\nval: images/val\n")
    >>> load_yolo_gt(root).box.tolist()
    [[50.0, 40.0, 100.0, 20.0]]
    """
    yaml_path = _yaml_path(os.fspath(source))
    data = _read_yaml(yaml_path)
    class_ids, class_names = _class_names(data, yaml_path)
    base = os.path.dirname(os.path.abspath(yaml_path))
    image_folder = _split_image_folder(data, yaml_path, base, split)
    files, names = _split_images(image_folder)
    if sizes is None and data.get("sizes") is not None:
        if not isinstance(data["sizes"], str):
            raise InputError(f"{yaml_path}: `sizes` must be a file path, found {data['sizes']!r}")
        sizes = os.path.join(base, data["sizes"])
    given = _read_sizes(os.fspath(sizes)) if sizes is not None else {}
    width, height = _split_image_sizes(image_folder, files, names, given)

    label_folder = _label_folder(image_folder)
    labels = list_files(label_folder, what="YOLO label files") if os.path.isdir(label_folder) else {}
    with_labels = [(i, labels.get(_stem(n) + ".txt")) for i, n in enumerate(names)]
    label_paths = [path for _, path in with_labels if path is not None]
    image_of_file = np.array([i for i, path in with_labels if path is not None], dtype=np.int64)
    read = _compiled_labels(label_paths, image_of_file, width, height, class_ids)
    if read is None:
        read = _read_labels(label_paths, image_of_file, width, height, (class_ids, class_names), yaml_path)
    image, category, box = read
    n_gt = len(image)
    return GroundTruth(
        image_id=np.arange(len(names), dtype=np.int64),
        image_name=tuple(names),
        image_width=width,
        image_height=height,
        category_id=class_ids,
        category_name=class_names,
        annotation_id=np.arange(1, n_gt + 1, dtype=np.int64),
        image=image,
        category=category,
        box=box,
        area=box[:, 2] * box[:, 3],
        is_crowd=np.zeros(n_gt, dtype=bool),
        is_difficult=np.zeros(n_gt, dtype=bool),
        is_ignore=np.zeros(n_gt, dtype=bool),
        box_format="xywh",
        source=yaml_path,
        has_image_ids=False,
    )


def _compiled_files(
    paths: list[str], width: np.ndarray, height: np.ndarray, layout: int, *, what: str
) -> Any:
    """``_colparse.yolo_files`` of ``paths``; a file that changed while it read it is an InputError."""
    assert _colparse is not None  # the callers check it
    try:
        return _colparse.yolo_files(paths, MAX_BYTES["text"], width, height, layout)
    except OSError as exc:  # ESTALE: see deteval.io._text.check_unchanged
        raise changed_error(os.fsdecode(exc.filename), what=what) from None


def _compiled_labels(
    label_paths: list[str],
    image_of_file: np.ndarray,
    width: np.ndarray,
    height: np.ndarray,
    class_ids: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every label file read and parsed by one call of the compiled reader, or None.

    The twin of :func:`_read_labels` for plain files: (image index, category index, pixel box)
    of every row, bit for bit. None without the extension, or when a file is not plain (see
    ``_colparse.yolo_files``: five fields a row, canonical integer class ids, numbers in [0, 1]),
    or a class id is not in ``names``: :func:`_read_labels` then reads every file and names the
    problems.
    """
    if _colparse is None or not label_paths:
        return None
    found = _compiled_files(
        label_paths,
        width[image_of_file],
        height[image_of_file],
        _LABEL_LAYOUT,
        what=f"YOLO label rows {_LABEL_ROW}",
    )
    if found is None:
        return None
    raw_class, raw_box, _, _, raw_counts, raw_stats = found
    note_reads(label_paths, raw_stats)
    ids = np.frombuffer(raw_class, dtype=np.int64)
    if not len(class_ids):
        return (
            None
            if len(ids)
            else (ids.copy(), ids.copy(), np.frombuffer(raw_box, dtype=np.float64).reshape(-1, 4))
        )
    index = np.minimum(np.searchsorted(class_ids, ids), len(class_ids) - 1)
    if not (class_ids[index] == ids).all():
        return None
    image = np.repeat(image_of_file, np.frombuffer(raw_counts, dtype=np.int64))
    return image, index.astype(np.int64, copy=False), np.frombuffer(raw_box, dtype=np.float64).reshape(-1, 4)


def _read_labels(
    label_paths: list[str],
    image_of_file: np.ndarray,
    width: np.ndarray,
    height: np.ndarray,
    classes: tuple[np.ndarray, tuple],
    yaml_path: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(image index, category index, pixel box) of every label row, file by file.

    The twin of :func:`_compiled_labels`, and the reader that names the problems.

    Raises
    ------
    InputError
        Wrong column counts, class ids not in ``names``, coordinates outside [0, 1], non-numbers.
    """
    class_ids, class_names = classes
    parts_image: list[np.ndarray] = []
    parts_class: list[np.ndarray] = []
    parts_box: list[np.ndarray] = []
    wrong: list[tuple[str, str]] = []
    outside: list[tuple[str, str]] = []
    unknown_class: list[tuple[str, str]] = []
    for label, i in zip(label_paths, image_of_file.tolist(), strict=True):
        rows = split_rows(read_text(label, what=f"YOLO label rows {_LABEL_ROW}"))
        bad = [
            (f"{label}:{r}", f"{len(f)} columns" + (" (a segmentation polygon?)" if len(f) > 5 else ""))
            for r, f in rows
            if len(f) != 5
        ]
        if bad:
            wrong.extend(bad)
            continue
        category = _class_column(rows, 0, label, class_ids)
        unknown_class.extend(
            (f"{label}:{r}", f[0]) for (r, f), c in zip(rows, category, strict=True) if c < 0
        )
        xywhn = parse_floats(rows, slice(1, 5), label, "cx cy w h")
        off = np.flatnonzero(((xywhn < 0) | (xywhn > 1)).any(axis=1))
        outside.extend((f"{label}:{rows[j][0]}", " ".join(rows[j][1][1:])) for j in off)
        parts_image.append(np.full(len(rows), i, dtype=np.int64))
        parts_class.append(category)
        parts_box.append(_to_pixels(xywhn, width[i], height[i]))
    if wrong:
        fail_records("wrong number of columns", f"5 columns {_LABEL_ROW}", wrong)
    if unknown_class:
        listed = names_note([f"{k}={v}" for k, v in zip(class_ids, class_names, strict=True)])
        fail_records("class id not in `names`", f"a class id of {yaml_path} ({listed})", unknown_class)
    if outside:
        fail_records("coordinate outside [0, 1]", "normalized cx cy w h in [0, 1]", outside)
    image = np.concatenate(parts_image) if parts_image else np.zeros(0, dtype=np.int64)
    box = np.concatenate(parts_box) if parts_box else np.zeros((0, 4))
    return image, np.concatenate(parts_class) if parts_class else np.zeros(0, dtype=np.int64), box


def _to_pixels(xywhn: np.ndarray, width: float, height: float) -> np.ndarray:
    """Normalized ``cx cy w h`` -> absolute ``[x, y, w, h]``."""
    out = np.empty((len(xywhn), 4))
    half = np.empty(len(xywhn))  # one scratch column: (c - size / 2) * scale, operation by operation
    for j, scale in ((0, width), (1, height)):
        np.divide(xywhn[:, j + 2], 2, out=half)
        np.subtract(xywhn[:, j], half, out=half)
        np.multiply(half, scale, out=out[:, j])
        np.multiply(xywhn[:, j + 2], scale, out=out[:, j + 2])
    return out


def _refuse_prediction_rows(
    layout: str,
    *,
    ambiguous: list[tuple[str, str]],
    wrong: list[tuple[str, str]],
    negative: list[tuple[str, str]],
    overflow: list[tuple[str, str]],
) -> None:
    """Raise for the first kind of defective prediction rows found (``(file:line, row)`` each).

    Raises
    ------
    InputError
        Rows of 5 columns (no confidence, or a layout that cannot be told), of another wrong
        column count, with a negative width or height, or whose box overflows in pixels.
    """
    if ambiguous:
        fail_records(
            "5 columns: no confidence column, or a layout deteval cannot tell",
            "6 columns in a stated layout: `cls cx cy w h conf` (Ultralytics "
            "save_txt=True, save_conf=True; the default) or `cls conf cx cy w h` "
            "(layout='cls conf cx cy w h')",
            ambiguous,
        )
    if wrong:
        fail_records("wrong number of columns", f"6 columns `{layout}`", wrong)
    if negative:
        fail_records("negative width or height", "w >= 0 and h >= 0", negative)
    if overflow:
        fail_records(
            "a box that is not finite in pixels (the numbers overflow once scaled by the image size)",
            "normalized cx cy w h of a box in the image (about 0 to 1)",
            overflow,
        )


def load_yolo_dt(
    folder: str | os.PathLike,
    gt: GroundTruth,
    *,
    layout: str = LAYOUTS[0],
    unknown_category: str = "error",
    category_map: Any = None,
    max_drop: float = MAX_DROP,
) -> Detections:
    """Read YOLO prediction files ``<image stem>.txt`` against ``gt``.

    Parameters
    ----------
    folder : str or os.PathLike
        One txt file per image (images without a file have no detections).
    gt : GroundTruth
        Images are matched by file-name stem (of ``file_name`` for COCO JSON), classes by id;
        sizes convert the boxes. Against categories whose ids are not 0..K-1 (COCO JSON, VOC)
        the class indices need ``category_map``.
    layout : {"cls cx cy w h conf", "cls conf cx cy w h"}
        Column order of the 6-column rows (Ultralytics ``save_conf=True`` writes the first).
    unknown_category : {"error", "drop"}
        Rows whose class id is not in the ground truth: refuse, or drop with a warning giving
        their share (at most ``max_drop`` of the rows).
    category_map : {"index0", "index1", "coco91"}, mapping, path or CategoryMap, optional
        How the rows' class ids name ground-truth categories (:mod:`deteval.io.category_map`);
        default: they are the ground truth's category ids.
    max_drop : float
        Largest share of rows ``unknown_category="drop"`` drops (default 0.1).

    Returns
    -------
    Detections
        Absolute ``[x, y, w, h]``; ``order`` = file (GT image order) then row order.

    Raises
    ------
    InputError
        Rows without a confidence column (5 columns: which layout?), other column counts,
        files of unknown images or of a stem several images share, unknown class ids, class
        indices against other category ids without ``category_map`` (the readings listed),
        negative sizes, non-numbers (``file:line``).
    """
    folder = os.fspath(folder)
    if layout not in LAYOUTS:
        raise InputError(f"layout {layout!r}; expected one of {list(LAYOUTS)}")
    if unknown_category not in ("error", "drop"):
        raise ValueError(f"unknown_category must be 'error' or 'drop', found {unknown_category!r}")
    files = list_files(folder, what="a folder of YOLO prediction files <image stem>.txt")
    index, twice = _stem_index(gt)
    txt = sorted((n for n in files if n.endswith(".txt")), key=lambda n: index.get(n[:-4], -1))
    unknown_files = [n for n in txt if n[:-4] not in index]
    if unknown_files:
        fail_records(
            "prediction file of an image not in the ground truth",
            f"<image stem>.txt of an image of {gt.source}",
            [(os.path.join(folder, n), shorten(n[:-4])) for n in unknown_files],
            kind="files",
        )
    ambiguous = [n for n in txt if n[:-4] in twice]
    if ambiguous:
        fail_records(
            "prediction file whose stem names several images of the ground truth "
            f"({', '.join(repr(x) for x in twice[ambiguous[0][:-4]][:3])})",
            f"<image stem>.txt of one image of {gt.source} (file stems unique in the ground truth)",
            [(os.path.join(folder, n), shorten(n[:-4])) for n in ambiguous],
            kind="files",
        )
    cmap = read_category_map(category_map)
    if cmap is None and not np.array_equal(gt.category_id, np.arange(gt.n_classes)):
        _refuse_unmapped_indices(folder, files, txt, gt)
    paths = [files[n] for n in txt]
    image_of_file = np.array([index[n[:-4]] for n in txt], dtype=np.int32)  # Detections.image's dtype
    compiled = _compiled_predictions(paths, image_of_file, gt, layout)
    if compiled is not None:
        image, class_ids, box, score, row_labels = compiled
    else:
        image, class_ids, box, score, row_labels = _read_predictions(paths, image_of_file, gt, layout)

    def fail(indices: np.ndarray, problem: str, expected: str) -> None:
        problem = problem.replace("`category_id` is not a category of", "class id not in")
        problem = problem.replace("`category_id`", "class id")
        labels = row_labels()
        fail_records(problem, expected, [labels[j] for j in indices])

    category, keep, warnings = resolve_categories(
        class_ids,
        gt,
        category_map=cmap,
        unknown_category=unknown_category,
        max_drop=max_drop,
        where=folder,
        fail=fail,
        noun="predictions",
    )
    if not txt:
        warnings.append(
            f"{folder}: no prediction files (<image stem>.txt): every class with ground truth gets AP 0"
        )
    others = [n for n in files if not n.endswith(".txt")]
    if others:
        warnings.append(f"{folder}: {len(others)} files not read (not .txt): {names_note(sorted(others))}")
    result = Detections(
        image=image,
        category=np.maximum(category, 0),
        box=box,
        score=score,
        order=order_column(len(image)),
        has_box=np.ones(len(image), dtype=bool),
        box_format="xywh",
        source=folder,
        warnings=tuple(warnings),
    )
    return result.take(keep) if keep is not None else result


def _stem_index(gt: GroundTruth) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Image index of each file stem of ``gt`` (``val/000001.jpg`` -> ``000001``), and shared stems.

    The second dict maps each stem that several images share to their names.
    """
    index: dict[str, int] = {}
    names: dict[str, list[str]] = {}
    for i, name in enumerate(gt.image_name):
        key = stem(str(name))
        names.setdefault(key, []).append(str(name))
        index.setdefault(key, i)
    return index, {k: v for k, v in names.items() if len(v) > 1}


def _refuse_unmapped_indices(folder: str, files: dict, txt: list[str], gt: GroundTruth) -> None:
    """Refuse class indices against categories whose ids are not 0..K-1, listing the readings.

    A YOLO prediction file's class is the model's 0-based class index. Against a YOLO dataset
    the categories are those indices; against a COCO JSON (or VOC) ground truth with other ids,
    an index read as an id lands on the wrong category or none, so the reading must be stated.
    """
    texts = [read_text(files[n], what="YOLO prediction rows") for n in txt]
    class_ids = [_class_ids(split_rows(t), 0, files[n]) for n, t in zip(txt, texts, strict=True)]
    ids = np.concatenate(class_ids) if class_ids else np.zeros(0, dtype=np.int64)
    if not len(ids):
        return
    readings = [(name, c) for name, c in readings_of(ids, gt) if name != "ids"]
    on = np.bincount(gt.category, minlength=gt.n_classes)[: gt.n_classes] > 0
    listed = (
        "candidates: " + "; ".join(describe_reading(name, c, on) for name, c in readings)
        if readings
        else f"no built-in reading maps every index ({int(ids.min())}..{int(ids.max())})"
    )
    raise InputError(
        f"{folder}: YOLO prediction files hold class indices (0-based), and the categories of "
        f"{gt.source} have other ids ({', '.join(str(int(i)) for i in gt.category_id[:8])}"
        f"{', ...' if gt.n_classes > 8 else ''}): which category an index names must be stated; "
        f"{listed}; expected --category-map NAME (category_map='NAME'), or a file mapping class "
        f"index -> ground-truth id or name"
    )


#: What :func:`_read_predictions` and :func:`_compiled_predictions` give: image index, class id,
#: pixel box ``[x, y, w, h]`` and score of every row, and a function giving ``(file:line, class
#: id text)`` of every row (for the messages about class ids).
_Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Callable[[], list[tuple[str, str]]]]


def _compiled_predictions(
    paths: list[str], image_of_file: np.ndarray, gt: GroundTruth, layout: str
) -> _Rows | None:
    """Every prediction file read and parsed by one call of the compiled reader, or None.

    The twin of :func:`_read_predictions` for plain files: the same rows, bit for bit. None
    without the extension, or when any file is not plain (see ``_colparse.yolo_files``) or any
    row has a negative width or height or a box that is not finite in pixels: the Python reader
    then reads every file and names the problems.
    """
    if _colparse is None or not paths:
        return None
    found = _compiled_files(
        paths,
        gt.image_width[image_of_file],
        gt.image_height[image_of_file],
        LAYOUTS.index(layout),
        what=f"YOLO prediction rows `{layout}`",
    )
    if found is None:
        return None
    raw_class, raw_box, raw_score, raw_lines, raw_counts, raw_stats = found
    note_reads(paths, raw_stats)
    class_ids = np.frombuffer(raw_class, dtype=np.int64)
    lines = np.frombuffer(raw_lines, dtype=np.int64)
    counts = np.frombuffer(raw_counts, dtype=np.int64)
    image = np.repeat(image_of_file, counts)

    def row_labels() -> list[tuple[str, str]]:
        return [
            (f"{paths[f]}:{line}", str(c))
            for f, line, c in zip(
                np.repeat(np.arange(len(paths)), counts).tolist(),
                lines.tolist(),
                class_ids.tolist(),
                strict=True,
            )
        ]

    box = np.frombuffer(raw_box, dtype=np.float64).reshape(-1, 4)
    return image, class_ids, box, np.frombuffer(raw_score, dtype=np.float64), row_labels


def _read_predictions(paths: list[str], image_of_file: np.ndarray, gt: GroundTruth, layout: str) -> _Rows:
    """Every prediction file read file by file (the twin of :func:`_compiled_predictions`).

    Raises
    ------
    InputError
        Rows of 5 columns or another wrong count, negative sizes, boxes that overflow, non-numbers.
    """
    conf_column, box_columns = (5, slice(1, 5)) if layout == LAYOUTS[0] else (1, slice(2, 6))
    parts_image: list[np.ndarray] = []
    parts_class: list[np.ndarray] = []
    parts_box: list[np.ndarray] = []
    parts_score: list[np.ndarray] = []
    parts_label: list[tuple[str, Any, Any]] = []  # (path, line numbers, class id texts) per file
    ambiguous: list[tuple[str, str]] = []
    wrong: list[tuple[str, str]] = []
    negative: list[tuple[str, str]] = []
    overflow: list[tuple[str, str]] = []
    what = f"YOLO prediction rows `{layout}`"
    for path, i in zip(paths, image_of_file.tolist(), strict=True):
        width, height = gt.image_width[i], gt.image_height[i]
        # The compiled reader takes plain files (six fields a row, canonical integer class ids,
        # plain decimals, ASCII) and gives what the Python reader below gives; a file it refuses,
        # or whose boxes need a message (which quotes the row), is read by the Python reader.
        compiled = _compiled_yolo_rows(read_bytes(path, what=what))
        if compiled is not None:
            class_ids, numbers, lines = compiled
            if ambiguous or wrong:
                continue
            xywhn = numbers[:, box_columns.start - 1 : box_columns.stop - 1]
            with np.errstate(over="ignore", invalid="ignore"):
                box = _to_pixels(xywhn, width, height)
            if not ((xywhn[:, 2:] < 0).any() or not np.isfinite(box).all()):
                parts_label.append((path, lines, class_ids))
                parts_image.append(np.full(len(lines), i, dtype=np.int32))
                parts_class.append(class_ids)
                parts_box.append(box)
                parts_score.append(numbers[:, conf_column - 1])
                continue
        rows = split_rows(read_text(path, what=what))
        ambiguous.extend((f"{path}:{r}", " ".join(f)) for r, f in rows if len(f) == 5)
        wrong.extend((f"{path}:{r}", f"{len(f)} columns") for r, f in rows if len(f) not in (5, 6))
        if ambiguous or wrong:
            continue
        class_ids = _class_ids(rows, 0, path)
        parts_label.append((path, [r for r, _ in rows], [f[0] for _, f in rows]))
        xywhn = parse_floats(rows, box_columns, path, "cx cy w h")
        score = parse_floats(rows, slice(conf_column, conf_column + 1), path, "conf")[:, 0]
        negative.extend(
            (f"{path}:{rows[j][0]}", " ".join(rows[j][1]))
            for j in np.flatnonzero((xywhn[:, 2] < 0) | (xywhn[:, 3] < 0))
        )
        parts_image.append(np.full(len(rows), i, dtype=np.int32))
        parts_class.append(class_ids)
        with np.errstate(over="ignore", invalid="ignore"):
            parts_box.append(_to_pixels(xywhn, width, height))
        overflow.extend(
            (f"{path}:{rows[j][0]}", " ".join(rows[j][1]))
            for j in np.flatnonzero(~np.isfinite(parts_box[-1]).all(axis=1))
        )
        parts_score.append(score)
    _refuse_prediction_rows(layout, ambiguous=ambiguous, wrong=wrong, negative=negative, overflow=overflow)
    class_ids = np.concatenate(parts_class) if parts_class else np.zeros(0, dtype=np.int64)

    def row_labels() -> list[tuple[str, str]]:
        return [
            (f"{path}:{line}", str(text))
            for path, lines, texts in parts_label
            for line, text in zip(lines, texts, strict=True)
        ]

    return (
        np.concatenate(parts_image) if parts_image else np.zeros(0, dtype=np.int32),
        class_ids,
        np.concatenate(parts_box) if parts_box else np.zeros((0, 4)),
        np.concatenate(parts_score) if parts_score else np.zeros(0),
        row_labels,
    )
