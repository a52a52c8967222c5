"""Opening and reading a user's file: the one access policy of every reader.

* Only a **regular file** is read (symbolic links followed): a folder, FIFO, device or socket is
  refused before anything is read -- a FIFO without a writer would block forever, ``/dev/zero``
  never ends -- naming what it is.
* At most a **cap per kind** (:data:`MAX_BYTES`) is read; only what is actually read counts.
* A file that **changes while read** (rewritten in place, replaced by a rename, grown) is
  refused: what was read could mix two versions (:func:`check_unchanged`).
* Every file read is **recorded as an input** (:mod:`deteval._safe_read.log`), so no output is
  ever written over it.
* **Text** is UTF-8; a UTF-8 byte-order mark is skipped. A compressed file (gzip, zip, bzip2, xz,
  zstd) or UTF-16/UTF-32 text is named as such with its remedy (:func:`not_text`); other bytes
  that are not UTF-8 are refused naming the line and the byte.

Errors are :class:`~deteval.errors.InputError` (or the ``error=`` class a reader passes, e.g.
:class:`~deteval.errors.ConfigError` for protocol files) naming the file, the problem and what
was expected.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from deteval._safe_read.log import note_read
from deteval.errors import InputError

__all__ = [
    "MAX_BYTES",
    "open_regular",
    "read_bytes",
    "read_text",
    "read_head",
    "decode_text",
    "not_text",
    "check_unchanged",
    "changed_error",
    "file_state",
    "line_of",
    "BOM",
]

GiB, MiB = 1 << 30, 1 << 20

#: The most bytes read from one file, per kind (``limit=`` of :func:`read_bytes`). Only what is
#: actually read counts, so a special file that never ends (``/dev/zero``) is refused too.
#: ``json``: COCO ground truth or results (Objects365 is about 2 GiB); ``text``: one YOLO label,
#: VOC result or image-set file; ``xml``: one VOC annotation; ``yaml``: a protocol file;
#: ``data_yaml``: a YOLO data.yaml or a category map (YAML or JSON).
MAX_BYTES = {"json": 16 * GiB, "text": 4 * GiB, "xml": 64 * MiB, "yaml": 1 * MiB, "data_yaml": 16 * MiB}

_CHUNK = 1 << 24

#: The UTF-8 byte-order mark, skipped at the start of every text file (JSON, YAML and rows alike).
BOM = b"\xef\xbb\xbf"

#: Leading bytes of files that are not UTF-8 text: (magic, what the file is, remedy, an encoding?).
_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed", "decompress it first (gunzip)", False),
    (b"PK\x03\x04", "a zip archive", "extract it first", False),
    (b"BZh", "bzip2-compressed", "decompress it first (bunzip2)", False),
    (b"\xfd7zXZ\x00", "xz-compressed", "decompress it first (unxz)", False),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it first (unzstd)", False),
    (b"\xff\xfe\x00\x00", "UTF-32 text", "save it as UTF-8", True),
    (b"\x00\x00\xfe\xff", "UTF-32 text", "save it as UTF-8", True),
    (b"\xff\xfe", "UTF-16 text (little-endian BOM)", "save it as UTF-8", True),
    (b"\xfe\xff", "UTF-16 text (big-endian BOM)", "save it as UTF-8", True),
)


def not_text(raw: bytes, expected: str = "text") -> str | None:
    r"""What ``raw`` is when it cannot be UTF-8 text (compressed, UTF-16/32), else None.

    ``expected``: what a compressed file should have been (``"JSON text"``).

    Examples
    --------
    >>> not_text(b"\x1f\x8b\x08\x00", "JSON text")
    'gzip-compressed; expected JSON text: decompress it first (gunzip)'
    >>> not_text('[1]'.encode('utf-16-le'))
    'UTF-16 text (no BOM); expected UTF-8: save it as UTF-8'
    >>> not_text(b"[1]") is None
    True
    """
    for magic, what, remedy, encoding in _MAGIC:
        if raw.startswith(magic):
            return f"{what}; expected {'UTF-8' if encoding else expected}: {remedy}"
    head = raw[:64]
    if len(head) >= 2 and head.count(b"\x00") * 4 >= len(head):  # ASCII as UTF-16: every other byte 0
        return "UTF-16 text (no BOM); expected UTF-8: save it as UTF-8"
    return None


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


def _open(path: str, *, what: str, error: type) -> tuple[int, os.stat_result]:
    """An open descriptor of the regular file ``path`` and its stat; else an error naming it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise error(f"{path}: file not found; expected {what}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder; expected {what}") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "a NUL byte in the name"
        raise error(f"{path}: cannot read ({reason}); expected {what}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # before os.fdopen, which refuses a folder (opened on Linux)
        os.close(fd)
        raise error(f"{path}: is {_kind_of(st.st_mode)}, not a regular file; expected {what}")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd, st


def open_regular(path: str, *, limit: int) -> tuple[int, os.stat_result] | None:
    """``(descriptor, stat)`` of the regular file ``path`` of at most ``limit`` bytes, else None.

    For fast paths that decline what they cannot read: a missing file, a folder, a special file
    or one over the cap gives None, and :func:`read_bytes` then names the problem. The caller
    closes the descriptor, checks the file did not change (:func:`check_unchanged`) and records
    it (:func:`~deteval._safe_read.log.note_read`) when it uses what it read.
    """
    try:
        fd, st = _open(path, what="", error=InputError)
    except InputError:
        return None
    if st.st_size > limit:
        os.close(fd)
        return None
    return fd, st


def read_head(path: str, size: int) -> bytes | None:
    """The first ``size`` bytes of the regular file ``path`` (a peek to choose a reader), else None.

    Not recorded as an input: the reader chosen reads the file again through :func:`read_bytes`.
    """
    opened = open_regular(path, limit=1 << 62)
    if opened is None:
        return None
    with os.fdopen(opened[0], "rb", buffering=0) as f:
        try:
            return f.read(size)
        except OSError:
            return None


def read_bytes(path: str, *, what: str, limit: int = MAX_BYTES["text"], error: type = InputError) -> bytes:
    """The contents of the regular file ``path``, at most ``limit`` bytes; else an error naming it.

    Special files are refused before anything is read (a FIFO with no writer would block
    forever, ``/dev/zero`` never ends; a symbolic link to one is the same), and at most
    ``limit + 1`` bytes are ever read (a file growing while read is refused too). A file that
    changes while it is read -- rewritten in place, or replaced by another renamed over it -- is
    refused (:func:`check_unchanged`): what was read could mix two versions. The file is
    recorded as an input (:func:`deteval._safe_read.log.note_read`).

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
    fd, st = _open(path, what=what, error=error)
    with os.fdopen(fd, "rb", buffering=0) as f:
        if st.st_size > limit:
            raise error(f"{path}: {st.st_size} bytes; expected {what} of at most {limit} bytes")
        try:
            chunks, total = _read_chunks(f, st.st_size, limit)
        except OSError as exc:
            raise error(f"{path}: cannot read ({exc.strerror}); expected {what}") from None
        if total > limit:
            raise error(f"{path}: more than {limit} bytes; expected {what} of at most {limit} bytes")
        check_unchanged(path, st, fd, total, what=what, error=error)
    note_read(path, st)
    return b"".join(chunks)


def decode_text(raw: bytes, path: str, *, what: str, error: type = InputError) -> str:
    r"""``raw`` as UTF-8 text (a BOM skipped); else an error naming the file, line and byte.

    A compressed file or UTF-16/32 text is named as such (:func:`not_text`).

    Examples
    --------
    >>> decode_text(b"\xef\xbb\xbfa b\n", "x.txt", what="rows")
    'a b\n'
    >>> decode_text(b"a\nb\xff\n", "x.txt", what="rows")
    Traceback (most recent call last):
    ...
    deteval.errors.InputError: x.txt:2: not UTF-8 text (byte 0xff); expected rows
    """
    found = not_text(raw, f"{what} as plain text")
    if found is not None:
        raise error(f"{path}: the file is {found}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = line_of(raw, exc.start)
        raise error(f"{path}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x}); expected {what}") from None


def read_text(path: str, *, what: str, limit: int = MAX_BYTES["text"], error: type = InputError) -> str:
    """UTF-8 text of the regular file ``path``: :func:`read_bytes`, then :func:`decode_text`."""
    return decode_text(read_bytes(path, what=what, limit=limit, error=error), path, what=what, error=error)


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
