"""Shared helpers of the text-file loaders (VOC, YOLO): safe file access and line-level errors.

Ids and class names read from a dataset (an image-set line, an XML ``<name>``) are never used
as paths as given: a name with a separator or ``..`` is refused (:func:`safe_child`), or files
are looked up by name in a listing of their folder (:func:`list_files`), so no name can reach a
file outside the folder it belongs to. Errors name the file and
line (``file:line``); many records with one defect give the count and the first five.
"""

from __future__ import annotations

import math
import os
import stat
import zlib
from collections.abc import Iterable, Sequence
from typing import BinaryIO, NoReturn

import numpy as np

from deteval.errors import SHOW, InputError, records_error, shorten
from deteval.io.output import note_folder, note_read

__all__ = [
    "SHOW",
    "MAX_BYTES",
    "is_safe_name",
    "list_files",
    "safe_child",
    "read_bytes",
    "read_text",
    "check_unchanged",
    "changed_error",
    "file_state",
    "fail_records",
    "shorten",
    "split_rows",
    "parse_floats",
    "names_note",
    "line_of",
    "split_lines",
]

GiB, MiB = 1 << 30, 1 << 20

#: The most bytes read from one file, per kind (``limit=`` of :func:`read_bytes`). Only what is
#: actually read counts, so a special file that never ends (``/dev/zero``) is refused too.
#: ``json``: COCO ground truth or results (Objects365 is about 2 GiB); ``text``: one YOLO label,
#: VOC result or image-set file; ``xml``: one VOC annotation; ``yaml``: a protocol or data.yaml.
MAX_BYTES = {"json": 16 * GiB, "text": 4 * GiB, "xml": 64 * MiB, "yaml": 1 * MiB}

_CHUNK = 1 << 24


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


def _kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def file_state(st: os.stat_result) -> tuple[int, int, int, int]:
    """What says a file changed: size, modification time (ns), inode and device."""
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


def check_unchanged(
    path: str,
    before: os.stat_result,
    fd: int,
    n_read: int | None,
    *,
    what: str,
    error: type = InputError,
) -> None:
    """Raise unless the file ``path``, read through ``fd``, is as it was before the read.

    ``before`` is ``os.fstat(fd)`` taken before reading. The open file (``os.fstat(fd)``: a
    rewrite in place) and the path (``os.stat(path)``: a new file renamed over it, or removed)
    must both still show its size, modification time, inode and device, and ``n_read`` bytes
    read (None: not counted) must be its size -- unless it reports a size of 0, as files of
    ``/proc`` do.

    Raises
    ------
    InputError (or ``error``)
        The file changed while it was read: what was read may mix two versions.
    """
    try:
        after, now = os.fstat(fd), os.stat(path)
        changed = file_state(after) != file_state(before) or file_state(now) != file_state(before)
    except OSError:  # removed, or a folder on the way renamed: not the file that was opened
        changed = True
    if n_read is not None and before.st_size and n_read != before.st_size:
        changed = True
    if changed:
        raise changed_error(path, what=what, error=error)


def changed_error(path: str, *, what: str, error: type = InputError) -> Exception:
    """The error of a file that changed while read (:func:`check_unchanged`)."""
    return error(
        f"{path}: changed while read (its size, modification time or inode differ before and "
        f"after reading: what was read may mix two versions); expected {what} that stays the "
        f"same while deteval reads it: wait until the program writing it is done, or copy it first"
    )


def _read_chunks(f: BinaryIO, size: int, limit: int) -> tuple[list[bytes], int]:
    """The chunks of ``f`` up to its end or ``limit + 1`` bytes, and their total length.

    ``size``: the size the file reports, read in one chunk (then one more byte to see the end):
    a single chunk, which the caller's join returns without copying it.
    """
    chunks, total = [], 0
    while total <= limit:
        chunk = f.read(min(max(_CHUNK, size + 1 - total), limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks, total


def read_bytes(path: str, *, what: str, limit: int = MAX_BYTES["text"], error: type = InputError) -> bytes:
    """The contents of the regular file ``path``, at most ``limit`` bytes; else an error naming it.

    Special files are refused before anything is read (a FIFO with no writer would block
    forever, ``/dev/zero`` never ends; a symbolic link to one is the same), and at most
    ``limit + 1`` bytes are ever read (a file growing while read is refused too). A file that
    changes while it is read -- rewritten in place, or replaced by another renamed over it -- is
    refused (:func:`check_unchanged`): what was read could mix two versions. The file is
    recorded as an input (:func:`deteval.io.output.note_read`).

    Raises
    ------
    InputError (or ``error``)
        File missing, a folder or special file, unreadable, larger than ``limit``, or changed
        while read.

    Examples
    --------
    >>> try:
    ...     read_bytes("/dev/zero", what="a JSON file")
    ... except InputError as exc:
    ...     print(exc)
    /dev/zero: is a character device, not a regular file; expected a JSON file
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise error(f"{path}: file not found; expected {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder; expected {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror}); expected {what}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # before os.fdopen, which refuses a folder (opened on Linux)
        os.close(fd)
        raise error(f"{path}: is {_kind_of(st.st_mode)}, not a regular file; expected {what}")
    with os.fdopen(fd, "rb", buffering=0) as f:
        if st.st_size > limit:
            raise error(f"{path}: {st.st_size} bytes; expected {what} of at most {limit} bytes")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        try:
            chunks, total = _read_chunks(f, st.st_size, limit)
        except OSError as exc:
            raise error(f"{path}: cannot read ({exc.strerror}); expected {what}") from None
        if total > limit:
            raise error(f"{path}: more than {limit} bytes; expected {what} of at most {limit} bytes")
        check_unchanged(path, st, fd, total, what=what, error=error)
    note_read(path, st)
    return b"".join(chunks)


def line_of(raw: bytes | str, offset: int) -> int:
    r"""1-based line of ``offset`` in ``raw``, counting lines as editors do (``\n``, ``\r\n``, ``\r``).

    A form feed or other separator that :meth:`str.splitlines` also breaks on does not start a line.

    Examples
    --------
    >>> line_of(b"a\r\nb\rc\x0cd\ne", 9)
    4
    """
    head = raw[:offset]
    if isinstance(head, str):
        return head.count("\n") + head.count("\r") - head.count("\r\n") + 1
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1


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


def read_text(path: str, *, what: str, limit: int = MAX_BYTES["text"]) -> str:
    """UTF-8 text of ``path`` (a BOM is skipped); InputError when it is not UTF-8."""
    raw = read_bytes(path, what=what, limit=limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = line_of(raw, exc.start)
        raise InputError(
            f"{path}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x}); expected {what}"
        ) from None


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
    """

    def __init__(self, path: str, raw: bytes, what: str, *, plural: bool = False):
        self.path, self.size, self.crc, self.what = path, len(raw), zlib.crc32(raw), what
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
