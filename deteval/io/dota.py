"""DOTA oriented boxes: a root with ``labelTxt/*.txt`` and a folder of ``Task1_<class>.txt`` results.

Ground truth (one file per image, the image named by the file's stem)::

    imagesource:GoogleEarth          <- optional header lines, tolerated
    gsd:0.146343590398
    x1 y1 x2 y2 x3 y3 x4 y4 class difficult

``difficult`` may be left out (then 0, as the DOTA devkit's ``parse_gt`` reads it).

Results (one file per class, as the devkit's ``dota_evaluation_task1.py`` reads them)::

    image score x1 y1 x2 y2 x3 y3 x4 y4

Rotated boxes are stored as their corners (``GroundTruth.rotated``); ``box`` holds their
axis-aligned envelope (``xyxy``) and the ground truth's ``area`` is the polygon's area.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from deteval._safe_read import read_text
from deteval.data import Detections, GroundTruth, order_column
from deteval.errors import InputError, shorten
from deteval.io._text import fail_records, list_files, parse_floats, refuse_special, split_rows

__all__ = ["load_dota_gt", "load_dota_dt", "is_dota_root", "TASK1_PREFIX"]

#: The devkit's result file names: ``Task1_<class>.txt``.
TASK1_PREFIX = "Task1_"
_HEADERS = ("imagesource:", "gsd:")
_GT_WHAT = "DOTA labelTxt lines 'x1 y1 x2 y2 x3 y3 x4 y4 class [difficult]'"
_DT_WHAT = "DOTA Task1 result lines 'image score x1 y1 x2 y2 x3 y3 x4 y4'"


def is_dota_root(path: str) -> bool:
    """Whether ``path`` is a folder with ``labelTxt/`` (a DOTA root)."""
    return os.path.isdir(os.path.join(path, "labelTxt"))


def load_dota_gt(root: str | os.PathLike, **options: Any) -> GroundTruth:
    """DOTA ground truth: every ``labelTxt/<image>.txt`` of ``root`` is one image.

    Parameters
    ----------
    root : path
        A DOTA root (a folder with ``labelTxt/``).
    **options
        Accepted for the loader interface; none is read.

    Returns
    -------
    GroundTruth
        Images in file-name order, categories in name order (ids 1..K), ``rotated`` corners.

    Raises
    ------
    InputError
        ``file:line`` of lines with a wrong field count, a coordinate that is not a finite number,
        ``difficult`` other than 0 or 1; files that are not UTF-8 or not regular files.

    Notes
    -----
    The devkit skips lines of fewer than 9 fields without a word and reads a line of 11 or more
    as an object without a ``difficult`` key (a ``KeyError`` later): both are errors here.
    """
    root = os.fspath(root)
    folder = os.path.join(root, "labelTxt")
    files = list_files(folder, what="DOTA label files <image>.txt")
    refuse_special(folder, files, _GT_WHAT)
    names = sorted(n for n in files if n.endswith(".txt"))
    if not names:
        raise InputError(f"{folder}: no .txt label files; expected {_GT_WHAT}, one file per image")
    image, corners, label, difficult = [], [], [], []
    for i, name in enumerate(names):
        path = files[name]
        rows = [(n, f) for n, f in split_rows(read_text(path, what=_GT_WHAT)) if not _is_header(f)]
        bad = [(f"{path}:{n}", shorten(" ".join(f), 80)) for n, f in rows if len(f) not in (9, 10)]
        if bad:
            fail_records("wrong number of fields", "9 or 10 fields (8 coordinates, class, difficult)", bad)
        if not rows:
            continue
        corners.append(parse_floats(rows, slice(0, 8), path, "the 8 coordinates"))
        bad_flag = [
            (f"{path}:{n}", shorten(f[9])) for n, f in rows if len(f) == 10 and f[9] not in ("0", "1")
        ]
        if bad_flag:
            fail_records("`difficult` is not 0 or 1", "0 or 1 (or nothing: 0)", bad_flag)
        image += [i] * len(rows)
        label += [f[8] for _, f in rows]
        difficult += [len(f) == 10 and f[9] == "1" for _, f in rows]
    class_names = tuple(sorted(set(label)))
    index = {c: k for k, c in enumerate(class_names)}
    return quad_ground_truth(
        image_name=tuple(n[:-4] for n in names),
        width=np.zeros(len(names), dtype=np.float64),
        height=np.zeros(len(names), dtype=np.float64),
        class_ids=np.arange(1, len(class_names) + 1, dtype=np.int64),
        class_names=class_names,
        image=np.array(image, dtype=np.int64),
        category=np.array([index[c] for c in label], dtype=np.int64),
        corners=corners,
        difficult=np.array(difficult, dtype=bool),
        source=root,
    )


def quad_ground_truth(
    *,
    image_name: tuple,
    width: np.ndarray,
    height: np.ndarray,
    class_ids: np.ndarray,
    class_names: tuple,
    image: np.ndarray,
    category: np.ndarray,
    corners: list,
    difficult: np.ndarray | None,
    source: str,
) -> GroundTruth:
    """Ground truth of rotated boxes: the corners as read, their envelope as ``box``, polygon areas.

    Shared by the DOTA labelTxt reader and the Ultralytics OBB labels reader (images numbered in
    the order given; ``difficult`` None: none is).
    """
    quad = np.concatenate(corners) if corners else np.zeros((0, 8))
    n_gt = len(quad)
    return GroundTruth(
        image_id=np.arange(len(image_name), dtype=np.int64),
        image_name=tuple(image_name),
        image_width=width,
        image_height=height,
        category_id=class_ids,
        category_name=class_names,
        annotation_id=np.arange(1, n_gt + 1, dtype=np.int64),
        image=image,
        category=category,
        box=envelope_xyxy(quad),
        area=polygon_area(quad),
        is_crowd=np.zeros(n_gt, dtype=bool),
        is_difficult=np.zeros(n_gt, dtype=bool) if difficult is None else difficult,
        is_ignore=np.zeros(n_gt, dtype=bool),
        box_format="xyxy",
        source=source,
        has_image_ids=False,
        rotated=quad,
    )


def envelope_xyxy(corners: np.ndarray) -> np.ndarray:
    """The axis-aligned envelope ``x1 y1 x2 y2`` of corners ``(n, 8)`` (the ``box`` column)."""
    xs, ys = corners[:, 0::2], corners[:, 1::2]
    return np.stack([xs.min(axis=1), ys.min(axis=1), xs.max(axis=1), ys.max(axis=1)], axis=1)


def polygon_area(corners: np.ndarray) -> np.ndarray:
    """Shoelace area of corners ``(n, 8)`` (the ground truth's ``area``)."""
    x, y = corners[:, 0::2], corners[:, 1::2]
    return np.abs((x * np.roll(y, -1, axis=1) - y * np.roll(x, -1, axis=1)).sum(axis=1)) / 2


def _is_header(fields: list[str]) -> bool:
    return len(fields) == 1 and fields[0].startswith(_HEADERS)


def load_dota_dt(folder: str | os.PathLike, gt: GroundTruth, **options: Any) -> Detections:
    """DOTA Task 1 results: ``Task1_<class>.txt`` files of ``folder``, one per class.

    Parameters
    ----------
    folder : path
    gt : GroundTruth
        The images and classes the results name.
    **options
        Accepted for the loader interface; none is read.

    Returns
    -------
    Detections
        In file-name order then line order (``order``: the devkit's file order within a class).

    Raises
    ------
    InputError
        No ``Task1_*.txt`` file; a class the ground truth does not have; ``file:line`` of lines
        with a wrong field count, a non-finite number, or an image the ground truth does not have.
    """
    folder = os.fspath(folder)
    files = list_files(folder, what=f"{TASK1_PREFIX}<class>.txt result files")
    refuse_special(folder, files, _DT_WHAT, prefix=TASK1_PREFIX)
    names = sorted(n for n in files if n.startswith(TASK1_PREFIX) and n.endswith(".txt"))
    if not names:
        raise InputError(
            f"{folder}: no {TASK1_PREFIX}<class>.txt files; expected the DOTA devkit's Task 1 "
            f"results, one file per class"
        )
    classes = {c: k for k, c in enumerate(gt.category_name)}
    images = {str(n): i for i, n in enumerate(gt.image_name)}
    unknown = [n for n in names if n[len(TASK1_PREFIX) : -4] not in classes]
    if unknown:
        fail_records(
            "result file of a class the ground truth does not have",
            f"{TASK1_PREFIX}<class>.txt with a class of {gt.source} ({', '.join(gt.category_name[:5])}...)",
            [(os.path.join(folder, n), repr(n[len(TASK1_PREFIX) : -4])) for n in unknown],
            kind="files",
        )
    image, category, score, corners = [], [], [], []
    for name in names:
        path = files[name]
        rows = split_rows(read_text(path, what=_DT_WHAT))
        bad = [(f"{path}:{n}", shorten(" ".join(f), 80)) for n, f in rows if len(f) != 10]
        if bad:
            fail_records("wrong number of fields", "10 fields (image, score, 8 coordinates)", bad)
        if not rows:
            continue
        missing = [(f"{path}:{n}", repr(f[0])) for n, f in rows if f[0] not in images]
        if missing:
            fail_records(
                "image not in the ground truth", f"a label file stem of {gt.source}/labelTxt", missing
            )
        values = parse_floats(rows, slice(1, 10), path, "the score and 8 coordinates")
        image.append(np.array([images[f[0]] for _, f in rows], dtype=np.int64))
        category.append(np.full(len(rows), classes[name[len(TASK1_PREFIX) : -4]], dtype=np.int64))
        score.append(values[:, 0])
        corners.append(values[:, 1:])
    return quad_detections(image, category, score, corners, folder)


def quad_detections(image: list, category: list, score: list, corners: list, source: str) -> Detections:
    """Detections of rotated boxes from per-file parts: the corners as read, their envelope as ``box``.

    Shared by the DOTA ``Task1_<class>.txt`` reader and the Ultralytics OBB predictions reader.
    """
    quad = np.concatenate(corners) if corners else np.zeros((0, 8))
    n = len(quad)
    return Detections(
        image=np.concatenate(image) if image else np.zeros(0, dtype=np.int64),
        category=np.concatenate(category) if category else np.zeros(0, dtype=np.int64),
        box=envelope_xyxy(quad),
        score=np.concatenate(score) if score else np.zeros(0),
        order=order_column(n),
        has_box=np.ones(n, dtype=bool),
        box_format="xyxy",
        source=source,
        rotated=quad,
    )
