"""VOC class lists: the 20 PASCAL classes, ``--classes`` files and checked name lists."""

from __future__ import annotations

import os
from collections.abc import Sequence

from deteval._safe_read import read_text
from deteval.errors import ConfigError, InputError
from deteval.io._text import is_safe_name, shorten, split_lines

__all__ = ["VOC_CLASSES", "read_class_list"]

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
    if not os.path.exists(path):  # a folder, FIFO or device: read_text names what it is
        raise ConfigError(
            f"--classes {path}: not 'voc' and no such file; expected 'voc' (the 20 PASCAL "
            f"classes) or a file with one class name per line"
        )
    names: list[str] = []
    seen: dict[str, int] = {}
    # split_lines: lines as an editor counts them (str.splitlines also breaks at \f, \v, U+2028 ...)
    for n, line in enumerate(split_lines(read_text(path, what="a class list (one name per line)")), 1):
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
