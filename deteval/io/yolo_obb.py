"""Ultralytics OBB datasets: label rows ``class x1 y1 x2 y2 x3 y3 x4 y4``, normalised to [0, 1].

The dataset is found as the YOLO loader finds it (``data.yaml`` with ``names`` and the split's
images folder, ``labels/`` beside ``images/``, image sizes from the image headers or a ``sizes``
file); a dataset is read as OBB when its label rows have 9 columns (:func:`is_yolo_obb`).
Predictions (Ultralytics ``save_txt`` of an OBB model, ``save_conf=True``) are
``class x1 y1 .. x4 y4 conf`` rows, one ``<image stem>.txt`` per image.

Corners are scaled by the image's width (x) and height (y) and stored as they are
(``GroundTruth.rotated``, ``(n, 8)``); ``box`` holds their envelope (``xyxy``) and the ground
truth's ``area`` the polygon's area.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from deteval._safe_read import read_text
from deteval.data import Detections, GroundTruth
from deteval.errors import InputError, shorten
from deteval.io._text import (
    fail_records,
    first_row_width,
    list_files,
    parse_floats,
    refuse_special,
    split_rows,
)
from deteval.io.dota import quad_detections, quad_ground_truth
from deteval.io.identity import stem
from deteval.io.yolo import (
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

__all__ = ["is_yolo_obb", "load_yolo_obb_gt", "load_yolo_obb_dt"]

_GT_WHAT = "Ultralytics OBB label rows 'class x1 y1 x2 y2 x3 y3 x4 y4' (normalised)"
_DT_WHAT = "Ultralytics OBB prediction rows 'class x1 y1 x2 y2 x3 y3 x4 y4 conf' (normalised)"


def is_yolo_obb(source: str | os.PathLike, split: str = "val") -> bool:
    """Whether the YOLO dataset ``source``'s first label row has 9 columns (an OBB dataset)."""
    try:
        yaml_path = _yaml_path(os.fspath(source))
        data = _read_yaml(yaml_path)
        base = os.path.dirname(os.path.abspath(yaml_path))
        folder = _label_folder(_split_image_folder(data, yaml_path, base, split))
        names = os.listdir(folder)
    except (InputError, OSError):
        return False  # the YOLO loader names the problem
    return first_row_width(folder, names) == 9


def _rows_of(path: str, what: str, n_fields: int, expected: str) -> list:
    rows = split_rows(read_text(path, what=what))
    bad = [(f"{path}:{n}", shorten(" ".join(f), 80)) for n, f in rows if len(f) != n_fields]
    if bad:
        fail_records("wrong number of fields", expected, bad)
    return rows


def _class_index(rows: list, path: str, class_ids: np.ndarray) -> np.ndarray:
    known = {str(int(c)): k for k, c in enumerate(class_ids)}
    bad = [(f"{path}:{n}", shorten(f[0])) for n, f in rows if f[0] not in known]
    if bad:
        fail_records(
            "class id not in the dataset's names",
            f"one of {', '.join(list(known)[:10])}",
            bad,
        )
    return np.array([known[f[0]] for _, f in rows], dtype=np.int64)


def _scale(corners: np.ndarray, width: float, height: float, path: str, rows: list) -> np.ndarray:
    outside = [
        (f"{path}:{n}", shorten(" ".join(f), 80))
        for (n, f), c in zip(rows, corners, strict=True)
        if ((c < 0) | (c > 1)).any()
    ]
    if outside:
        fail_records("a coordinate outside [0, 1]", "normalised corners (x / width, y / height)", outside)
    out = corners.copy()
    out[:, 0::2] *= width
    out[:, 1::2] *= height
    return out


def load_yolo_obb_gt(
    source: str | os.PathLike, *, split: str = "val", sizes: str | os.PathLike | None = None, **options: Any
) -> GroundTruth:
    """Read an Ultralytics OBB dataset's labels for one split.

    Parameters
    ----------
    source : path
        ``data.yaml`` (or the folder holding it), as for :func:`deteval.io.yolo.load_yolo_gt`.
    split : str
        The ``data.yaml`` key of the images folder.
    sizes : path, optional
        ``<image file name> <width> <height>`` lines; default the ``sizes:`` key of ``data.yaml``.
    **options
        Accepted for the loader interface; none is read.

    Returns
    -------
    GroundTruth
        Images in file-name order (``has_image_ids=False``), ``rotated`` corners in pixels.

    Raises
    ------
    InputError
        ``file:line`` of rows with another column count, a class id not in ``names``, a value
        that is not a finite number or outside [0, 1]; unknown image sizes (as the YOLO loader).
    """
    yaml_path = _yaml_path(os.fspath(source))
    data = _read_yaml(yaml_path)
    class_ids, class_names = _class_names(data, yaml_path)
    base = os.path.dirname(os.path.abspath(yaml_path))
    image_folder = _split_image_folder(data, yaml_path, base, split)
    files, names = _split_images(image_folder)
    if sizes is None and isinstance(data.get("sizes"), str):
        sizes = os.path.join(base, data["sizes"])
    given = _read_sizes(os.fspath(sizes)) if sizes is not None else {}
    width, height = _split_image_sizes(image_folder, files, names, given)
    label_folder = _label_folder(image_folder)
    labels = list_files(label_folder, what="YOLO OBB label files") if os.path.isdir(label_folder) else {}
    if labels:
        refuse_special(label_folder, labels, _GT_WHAT)
    image, category, corners = [], [], []
    for i, name in enumerate(names):
        path = labels.get(_stem(name) + ".txt")
        if path is None:
            continue
        rows = _rows_of(path, _GT_WHAT, 9, "9 fields (class and 4 normalised corners)")
        if not rows:
            continue
        category.append(_class_index(rows, path, class_ids))
        values = parse_floats(rows, slice(1, 9), path, "the 8 corner coordinates")
        corners.append(_scale(values, float(width[i]), float(height[i]), path, rows))
        image.append(np.full(len(rows), i, dtype=np.int64))
    return quad_ground_truth(
        image_name=tuple(names),
        width=width,
        height=height,
        class_ids=class_ids,
        class_names=class_names,
        image=np.concatenate(image) if image else np.zeros(0, dtype=np.int64),
        category=np.concatenate(category) if category else np.zeros(0, dtype=np.int64),
        corners=corners,
        difficult=None,
        source=yaml_path,
    )


def load_yolo_obb_dt(folder: str | os.PathLike, gt: GroundTruth, **options: Any) -> Detections:
    """Read Ultralytics OBB prediction files ``<image stem>.txt`` against ``gt``.

    Raises
    ------
    InputError
        Files of images ``gt`` does not have; ``file:line`` of rows with another column count,
        unknown class ids, values that are not finite numbers or outside [0, 1].
    """
    folder = os.fspath(folder)
    files = list_files(folder, what="Ultralytics OBB prediction files <image stem>.txt")
    refuse_special(folder, files, _DT_WHAT)
    index = {stem(str(n)): i for i, n in enumerate(gt.image_name)}
    txt = sorted(n for n in files if n.endswith(".txt"))
    unknown = [n for n in txt if n[:-4] not in index]
    if unknown:
        fail_records(
            "prediction file of an image the ground truth does not have",
            f"<image stem>.txt of an image of {gt.source}",
            [(os.path.join(folder, n), repr(n[:-4])) for n in unknown],
            kind="files",
        )
    image, category, score, corners = [], [], [], []
    for name in sorted(txt, key=lambda n: index[n[:-4]]):
        path = files[name]
        i = index[name[:-4]]
        rows = _rows_of(path, _DT_WHAT, 10, "10 fields (class, 4 normalised corners, confidence)")
        if not rows:
            continue
        category.append(_class_index(rows, path, gt.category_id))
        values = parse_floats(rows, slice(1, 10), path, "the corners and the confidence")
        corners.append(_scale(values[:, :8], float(gt.image_width[i]), float(gt.image_height[i]), path, rows))
        score.append(values[:, 8])
        image.append(np.full(len(rows), i, dtype=np.int64))
    return quad_detections(image, category, score, corners, folder)
