"""Shared helpers of the text-file loaders (VOC, YOLO): safe names, folder listings, rows, errors.

Files are read by :mod:`deteval._safe_read` (the one reading policy); this module turns what
they hold into rows and names the lines at fault.

Ids and class names read from a dataset (an image-set line, an XML ``<name>``) are never used
as paths as given: a name with a separator or ``..`` is refused (:func:`safe_child`), or files
are looked up by name in a listing of their folder (:func:`list_files`), so no name can reach a
file outside the folder it belongs to. Errors name the file and
line (``file:line``); many records with one defect give the count and the first five.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Iterable, Sequence
from typing import NoReturn

import numpy as np

from deteval._safe_read import MAX_BYTES, note_folder, read_bytes, read_head
from deteval.errors import SHOW, InputError, records_error, shorten

__all__ = [
    "SHOW",
    "is_safe_name",
    "list_files",
    "safe_child",
    "fail_records",
    "shorten",
    "split_rows",
    "parse_floats",
    "names_note",
    "split_lines",
    "first_row_width",
    "refuse_special",
]


def is_safe_name(name: str) -> bool:
    """True when ``name`` can only mean a direct child of a folder (no separators, no ``..``).

    Examples
    --------
    >>> is_safe_name("000005"), is_safe_name("../../etc/passwd"), is_safe_name("..")
    (True, False, False)
    """
    return (
        bool(name)
        and name not in (".", "..")
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
        and not os.path.isabs(name)
        and ":" not in name[1:2]
    )


def list_files(folder: str, *, what: str) -> dict[str, str]:
    """Regular files directly in ``folder`` (symbolic links followed): name -> path.

    Raises
    ------
    InputError
        If the folder cannot be listed.
    """
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        raise InputError(f"{folder}: folder not found; expected {what}") from None
    except NotADirectoryError:
        raise InputError(f"{folder}: not a folder; expected {what}") from None
    except OSError as exc:
        raise InputError(f"{folder}: cannot list ({exc.strerror}); expected {what}") from None
    note_folder(folder)
    out, broken = {}, []
    for entry in entries:
        try:
            if entry.is_file():
                out[entry.name] = entry.path
            elif entry.is_symlink() and not entry.is_dir():
                broken.append(entry.name)
        except OSError:  # a looping link: os.stat fails with ELOOP
            broken.append(entry.name)
    if broken:
        shown = ", ".join(repr(n) for n in sorted(broken)[:SHOW])
        more = f" and {len(broken) - SHOW} more" if len(broken) > SHOW else ""
        raise InputError(
            f"{folder}: {len(broken)} symbolic link(s) that lead to no file (dangling or "
            f"looping): {shown}{more}; expected {what} (fix or remove the links)"
        )
    return out


def safe_child(folder: str, name: str, *, what: str, where: str) -> str:
    """``folder/name`` when ``name`` read from a file is a plain file name (never a path).

    Raises
    ------
    InputError
        For names with path separators, ``..`` or a drive.

    Examples
    --------
    >>> safe_child("Annotations", "000005.xml", what="image id", where="test.txt:3")
    'Annotations/000005.xml'
    >>> try:
    ...     safe_child("Annotations", "../../etc/passwd.xml", what="image id", where="test.txt:3")
    ... except InputError as exc:
    ...     print(str(exc)[:56])
    test.txt:3: image id '../../etc/passwd.xml' is a path; e
    """
    if not is_safe_name(name):
        raise InputError(
            f"{where}: {what} {shorten(name)} is a path; expected a plain name without "
            f"'/', '\\' or '..' (no file outside {folder} is opened)"
        )
    return os.path.join(folder, name)


def split_lines(text: str) -> list[str]:
    r"""Lines as editors count them (``\n``, ``\r\n``, ``\r``), unlike :meth:`str.splitlines`.

    Examples
    --------
    >>> split_lines("a b\x0cc\r\nd\re\n")
    ['a b\x0cc', 'd', 'e']
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def fail_records(
    problem: str, expected: str, hits: Sequence[tuple[str, str]], *, kind: str = "lines"
) -> NoReturn:
    """Raise one InputError for records with the same defect (:func:`deteval.errors.records_error`).

    Parameters
    ----------
    problem, expected : str
    hits : sequence of (where, found)
        ``where`` is ``file:line`` or ``file: object #k (name=...)``; ``found`` already formatted.
    kind : str
        Plural noun for the count (``"lines"``, ``"objects"``, ``"files"``).

    Examples
    --------
    >>> fail_records("image id not in the image set", "an id of test.txt", [("r.txt:3", "'x'")])
    Traceback (most recent call last):
    ...
    deteval.errors.InputError: r.txt:3: image id not in the image set; expected an id of test.txt, found 'x'
    """
    raise records_error(None, problem, expected, hits, noun=kind)


def names_note(names: Iterable[str], limit: int = SHOW) -> str:
    """``a, b, c and 4 more`` for counted warnings."""
    names = list(names)
    head = ", ".join(names[:limit])
    return head + (f" and {len(names) - limit} more" if len(names) > limit else "")


def split_rows(text: str) -> list[tuple[int, list[str]]]:
    """(1-based line number, whitespace-separated fields) of every non-blank line."""
    return [(n, fields) for n, fields in enumerate((line.split() for line in split_lines(text)), 1) if fields]


def parse_floats(rows: Sequence[tuple[int, list[str]]], columns: slice, path: str, names: str) -> np.ndarray:
    """The numeric ``columns`` (a slice with a stop) of ``rows`` as float64 (n, k).

    The rows' column counts are checked by the caller.

    Raises
    ------
    InputError
        ``file:line`` of the values that are not finite numbers (count and first five).
    """
    fields = [f[columns] for _, f in rows]
    width = columns.stop - (columns.start or 0)
    try:
        out = np.array(fields, dtype=np.float64).reshape(len(fields), width)
        if np.isfinite(out).all():
            return out
    except ValueError:
        pass
    hits = []
    for (n, f), values in zip(rows, fields, strict=True):
        for v in values:
            try:
                ok = math.isfinite(float(v))
            except ValueError:
                ok = False
            if not ok:
                hits.append((f"{path}:{n}", f"{shorten(v)} in {shorten(' '.join(f), 80)}"))
                break
    fail_records(f"a value that is not a finite number in {names}", "finite numbers", hits)
    raise AssertionError  # unreachable: fail_records raises


def first_row_width(folder: str, names: Iterable[str]) -> int | None:
    """The fields of the first non-blank row of the first ``.txt`` of ``names`` (sorted) that has one.

    A peek at each file's first 4 KiB (:func:`deteval._safe_read.read_head`: regular files only,
    not recorded) to choose a reader; None when no file has a row there.
    """
    for name in sorted(names):
        if not name.endswith(".txt"):
            continue
        head = read_head(os.path.join(folder, name), 4096)
        for line in (head or b"").splitlines():
            if line.split():
                return len(line.split())
    return None


def refuse_special(folder: str, files: dict, what: str, *, prefix: str = "") -> None:
    """Refuse a ``prefix*.txt`` entry of ``folder`` that :func:`list_files` left out.

    A FIFO, device or folder named like a data file is an error naming what it is (the rule of
    :func:`deteval._safe_read.read_bytes`, which refuses it unread), not a file silently skipped.

    Raises
    ------
    InputError
        ``path: is a FIFO (named pipe), not a regular file; expected ...``.
    """
    for name in sorted(os.listdir(folder)):
        if name.startswith(prefix) and name.endswith(".txt") and name not in files:
            path = os.path.join(folder, name)
            read_bytes(path, what=what)  # raises for every entry list_files leaves out
            raise InputError(f"{path}: is not a regular file; expected {what}")  # pragma: no cover - a race


class FileBytes:
    """A file's bytes, dropped and read again when asked for, refused if the file changed meanwhile.

    For values read from a file that only rare paths need again (a record's raw JSON for a
    message): instead of keeping the bytes (as large as the file), the path, size and CRC-32 are
    kept, and calling the object reads the file again and returns its bytes unless they differ.

    Parameters
    ----------
    path : str
    raw : bytes
        What was read from ``path``.
    what : str
        What was loaded from it, for the message (e.g. "the ground truth").
    plural : bool
        Whether ``what`` is plural ("the detections").
    crc : int, optional
        ``zlib.crc32(raw)`` when the caller computed it already (on another thread).
    """

    def __init__(self, path: str, raw: bytes, what: str, *, plural: bool = False, crc: int | None = None):
        self.path, self.size, self.what = path, len(raw), what
        self.crc = zlib.crc32(raw) if crc is None else crc
        self.was = "were" if plural else "was"

    def __call__(self) -> bytes:
        raw = read_bytes(
            self.path, what=f"the COCO file {self.what} was loaded from", limit=MAX_BYTES["json"]
        )
        if len(raw) != self.size or zlib.crc32(raw) != self.crc:
            raise InputError(
                f"{self.path}: changed since {self.what} {self.was} loaded from it (its segmentations "
                f"are read from the file when first needed); expected the same file, found "
                f"{len(raw)} bytes that differ: load {self.what} again"
            )
        return raw
