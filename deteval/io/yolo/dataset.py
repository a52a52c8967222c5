"""A YOLO dataset's layout: its ``data.yaml`` (class names, splits), label folders and image sizes."""

from __future__ import annotations

import os

import numpy as np

from deteval._safe_read import read_text, read_yaml
from deteval.errors import InputError
from deteval.io._text import fail_records, list_files, names_note, parse_floats, split_rows
from deteval.io.yolo.image_size import IMAGE_EXTENSIONS, image_size


def _yaml_path(source: str) -> str:
    if os.path.isdir(source):
        for name in ("data.yaml", "dataset.yaml"):
            if os.path.isfile(os.path.join(source, name)):
                return os.path.join(source, name)
        raise InputError(f"{source}: no data.yaml; expected a YOLO dataset folder with data.yaml")
    return source


def _read_yaml(path: str) -> dict:
    """The mapping of a data.yaml, under the one YAML policy (:func:`deteval._safe_read.read_yaml`)."""
    data = read_yaml(path, what="a YOLO data.yaml with `names` and `val`", error=InputError)
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping with `names` and `val`, found {type(data).__name__}")
    return data


def _class_names(data: dict, path: str) -> tuple[np.ndarray, tuple]:
    """(class ids sorted, names) from ``names`` (list, or dict id -> name)."""
    names = data.get("names")
    if names is None:
        raise InputError(
            f"{path}: no `names`; expected `names: [class0, class1, ...]` or "
            f"`names: {{0: class0, ...}}`, found keys {sorted(map(str, data))[:10]}"
        )
    if isinstance(names, list):
        items = list(enumerate(names))
    elif isinstance(names, dict):
        items = list(names.items())
    else:
        raise InputError(
            f"{path}: `names` is a {type(names).__name__}; expected a list or a mapping id -> name"
        )
    bad = [
        (k, v)
        for k, v in items
        if isinstance(k, bool)
        or not isinstance(k, int)
        or k < 0
        or not isinstance(v, (str, int))
        or isinstance(v, bool)
    ]
    if bad:
        raise InputError(
            f"{path}: `names` entry {bad[0][0]!r}: {bad[0][1]!r}; expected integer ids >= 0 and string names"
        )
    too_large = [k for k, _ in items if k >= 2**63]  # YAML integers are unbounded; ids are int64
    if too_large:
        raise InputError(
            f"{path}: `names` key {too_large[0]} does not fit a 64-bit class id; expected class ids "
            f"0 .. {2**63 - 1} (the class indices of the label files, usually 0 .. nc-1): renumber `names`"
        )
    if "nc" in data and data["nc"] != len(items):
        raise InputError(
            f"{path}: `nc` is {data['nc']!r} but `names` has {len(items)} entries; expected them to agree"
        )
    items.sort()
    return (np.array([k for k, _ in items], dtype=np.int64).reshape(-1), tuple(str(v) for _, v in items))


def _label_folder(image_folder: str) -> str:
    """Ultralytics' img2label_paths: the last ``/images/`` of the path becomes ``/labels/``."""
    path = os.path.abspath(image_folder) + os.sep
    marker = f"{os.sep}images{os.sep}"
    if marker in path:
        head, tail = path.rsplit(marker, 1)
        return os.path.join(head, "labels", tail)
    return os.path.abspath(image_folder)


def _read_sizes(path: str) -> dict[str, tuple[float, float]]:
    rows = split_rows(read_text(path, what="image sizes `<image file name> <width> <height>`"))
    wrong = [(f"{path}:{n}", f"{len(f)} columns") for n, f in rows if len(f) != 3]
    if wrong:
        fail_records("wrong number of columns", "3 columns `<image file name> <width> <height>`", wrong)
    numbers = parse_floats(rows, slice(1, 3), path, "width height")
    bad = [
        (f"{path}:{n}", f"{w:g} x {h:g}")
        for (n, _), (w, h) in zip(rows, numbers, strict=True)
        if w <= 0 or h <= 0
    ]
    if bad:
        fail_records("image size not positive", "width > 0 and height > 0", bad)
    return {f[0]: (float(w), float(h)) for (_, f), (w, h) in zip(rows, numbers, strict=True)}


def _stem(name: str) -> str:
    return os.path.splitext(name)[0]


def _split_image_folder(data: dict, yaml_path: str, base: str, split: str) -> str:
    """The images folder of ``split``: ``path`` (relative to the YAML file) joined with ``<split>``.

    Raises
    ------
    InputError
        ``path`` or ``<split>`` is not a string, or the folder does not exist.
    """
    root = data.get("path")
    if root is not None and not isinstance(root, str):
        raise InputError(f"{yaml_path}: `path` is a {type(root).__name__}; expected a folder path")
    root = os.path.join(base, root) if root else base
    images_rel = data.get(split)
    if not isinstance(images_rel, str):
        raise InputError(
            f"{yaml_path}: `{split}` is "
            f"{'missing' if images_rel is None else type(images_rel).__name__}; "
            f"expected the images folder of the split, relative to `path`"
        )
    image_folder = os.path.join(root, images_rel)
    if not os.path.isdir(image_folder):
        raise InputError(
            f"{yaml_path}: `{split}: {images_rel}` is not a folder ({image_folder}); "
            f"expected the images folder (lists of image paths are not supported)"
        )
    return image_folder


def _split_images(image_folder: str) -> tuple[dict[str, str], list[str]]:
    """(file name -> path, sorted image file names) of a split, refusing two images of one stem."""
    files = list_files(image_folder, what="YOLO images")
    names = sorted(n for n in files if n.lower().endswith(IMAGE_EXTENSIONS))
    stems: dict[str, str] = {}
    for n in names:
        if _stem(n) in stems:
            raise InputError(
                f"{image_folder}: images {stems[_stem(n)]} and {n} share the stem "
                f"{_stem(n)!r}; expected one image per label file name"
            )
        stems[_stem(n)] = n
    return files, names


def _split_image_sizes(
    image_folder: str, files: dict[str, str], names: list[str], given: dict[str, tuple[float, float]]
) -> tuple[np.ndarray, np.ndarray]:
    """Width and height (float64) of each image: from the sizes file ``given``, else its header.

    Raises
    ------
    InputError
        An unreadable image, or images whose size is neither given nor in a known header.
    """
    width = np.full(len(names), np.nan)
    height = np.full(len(names), np.nan)
    unknown = []
    for i, n in enumerate(names):
        size = given.get(n) or given.get(_stem(n))
        if size is None:
            try:
                size = image_size(files[n])
            except OSError as exc:
                raise InputError(f"{files[n]}: cannot read ({exc.strerror}); expected an image") from None
        if size is None or size[0] <= 0 or size[1] <= 0:
            unknown.append(n)
        else:
            width[i], height[i] = size
    if unknown:
        raise InputError(
            f"{image_folder}: {len(unknown)} images of unknown size: "
            f"{names_note(unknown)}; expected PNG, JPEG, GIF or BMP headers, or a sizes "
            f"file (`sizes: sizes.txt` in data.yaml, lines `<file name> <width> <height>`)"
        )
    return width, height
