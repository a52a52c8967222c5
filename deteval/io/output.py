"""Writing outputs safely: never over an input, never half-written.

Two mechanisms, used by every file deteval writes (``--output``, ``--matches``, reports, plots):

* **Outputs never destroy inputs.** While inputs are loaded, every file actually read (ground
  truth, detections, protocol files and each file they ``extends:``, class lists, category maps)
  and every folder listed is recorded (:func:`recording_reads`, fed by :func:`note_read` /
  :func:`note_folder` in the readers). :func:`check_output` then refuses an output path that is
  one of them -- compared by device and inode as well as by resolved name, so a hard link or a
  symbolic link to an input is caught -- or that lies inside an input folder (a result file
  written into the ``--dt`` folder would be read as detections next time).
* **One writer** (:func:`write_output`). A regular file or a new path -- through any symbolic
  links: the final target is written -- is written atomically: a temporary file in the target's
  folder, flushed and fsynced, then ``os.replace`` d over the target; on any failure (a full
  disk, an exception, Ctrl-C or SIGTERM turned into an exception) the temporary file is removed
  and the target is untouched, and two runs writing the same path leave the complete output of
  one of them. A link stays a link. A path that exists and is not a regular file (a device, a
  FIFO, ``/dev/stdout``) is opened and written directly, never replaced, with every write and
  close error reported (a full device is an error, not a success).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterable, Mapping
from typing import Any

from deteval._safe_read.log import ReadLog, note_folder, note_read, note_reads, recording_reads
from deteval.errors import ConfigError

__all__ = [
    "ReadLog",
    "recording_reads",
    "note_read",
    "note_reads",
    "note_folder",
    "check_output",
    "write_output",
    "names_open_descriptor",
]


def _is_within(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


def _entries(inputs: ReadLog | Mapping[str, Any] | Iterable[Any]) -> list[tuple[str, str, Any, bool]]:
    """(label, resolved path, (dev, ino) or None, is a folder) of every input."""
    if isinstance(inputs, ReadLog):
        return [(f"input file {path}", path, ident, False) for path, ident in inputs.files.items()] + [
            (f"input folder {path}", path, ident, True) for path, ident in inputs.folders.items()
        ]
    named = inputs.items() if isinstance(inputs, Mapping) else ((None, item) for item in inputs)
    out = []
    for label, item in named:
        if item is None or not isinstance(item, (str, os.PathLike)):
            continue
        real = os.path.realpath(item)
        try:
            st = os.stat(real)
            ident, is_dir = (st.st_dev, st.st_ino), os.path.isdir(real)
        except OSError:
            ident, is_dir = None, False
        kind = "folder" if is_dir else "input"
        out.append((f"{label} {kind}" if label else f"input {kind} {real}", real, ident, is_dir))
    return out


def check_output(
    path: str | os.PathLike, inputs: ReadLog | Mapping[str, Any] | Iterable[Any], *, option: str = "--output"
) -> None:
    """Refuse an output ``path`` that is an input or lies inside an input folder.

    Parameters
    ----------
    path : str or os.PathLike
        Where the output will be written.
    inputs : ReadLog, mapping or iterable
        What was read: a :class:`ReadLog`, or paths (a mapping names them, e.g. ``{"--dt": path}``).
        Paths that are not strings (parsed JSON handed to the API) are skipped.
    option : str
        The option that named ``path`` (for the message).

    Raises
    ------
    ConfigError
        When ``path`` resolves to, or is a hard link of, a file read, or lies inside an input folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "dt.json").write_text("[]")
    >>> os.link(d / "dt.json", d / "link.json")
    >>> try:
    ...     check_output(d / "link.json", {"--dt": d / "dt.json"})
    ... except ConfigError as exc:
    ...     print(str(exc).split(": ", 1)[1])
    is the --dt input (the same file: a hard link); refusing to overwrite it
    """
    shown = os.fspath(path)
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
        identity = (st.st_dev, st.st_ino)
    except OSError:
        identity = None
    for label, source, source_id, is_folder in _entries(inputs):
        same_name = real == source
        if same_name or (identity is not None and identity == source_id):
            how = "" if same_name else " (the same file: a hard link)"
            if is_folder:
                raise ConfigError(f"{option} {shown}: is the {label}{how}; expected a file path outside it")
            raise ConfigError(f"{option} {shown}: is the {label}{how}; refusing to overwrite it")
        if is_folder and _is_within(real, source):
            raise ConfigError(
                f"{option} {shown}: is inside the {label} {source}; refusing to write "
                f"there (a file written in an input folder may be read as input next "
                f"time); expected a path outside it"
            )


#: An open descriptor named as a path (what ``/dev/stdout``, ``/dev/fd/N`` and ``/proc/self/fd/N``
#: lead to): ``/proc/<pid>/fd/N`` or ``/proc/<pid>/task/<tid>/fd/N``, once ``/proc/self`` is resolved.
_FD_ENTRY = re.compile(r"/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd/\d+")

#: Random names tried for a temporary file before giving up (``tempfile.TMP_MAX`` is larger;
#: 32 random bits collide only in a folder full of our own leftovers).
_NAME_ATTEMPTS = 100

#: Bytes handed to one ``os.write`` (it may write less; the rest follows).
_WRITE_CHUNK = 1 << 24


def names_open_descriptor(path: str | os.PathLike) -> bool:
    """True when ``path``, its symbolic links followed, is an open descriptor's entry in /proc.

    Such a path (``/dev/stdout``, ``/dev/fd/1``, ``/proc/self/fd/3``) names a file that is already
    open -- a pipe, a terminal, or a regular file a shell redirected into -- not a place where a
    file could be replaced.

    Examples
    --------
    >>> names_open_descriptor("/proc/self/fd/1"), names_open_descriptor("out.json")
    (True, False)
    """
    current = os.path.abspath(os.fspath(path))
    for _ in range(40):  # the most links the kernel follows in one path (ELOOP beyond)
        current = os.path.join(os.path.realpath(os.path.dirname(current)), os.path.basename(current))
        if _FD_ENTRY.fullmatch(current):
            return True
        try:
            target = os.readlink(current)
        except OSError:  # not a link, or not there
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
    return False


def write_output(
    path: str | os.PathLike,
    data: str | bytes,
    *,
    option: str = "--output",
    inputs: ReadLog | Mapping[str, Any] | Iterable[Any] | None = None,
) -> None:
    r"""Write ``data`` to ``path``: the one writer of every file deteval writes.

    * A regular file, a new path, or a symbolic link to either (dangling included): the final
      target (links resolved) is written atomically -- a temporary file in the target's own
      folder, flushed, fsynced, then renamed over the target (``os.replace``). A link stays a
      link and points at the new content. On any failure, ``KeyboardInterrupt`` included, the
      temporary file is removed and the target is untouched. A new file gets the permissions a
      plain ``open(path, "w")`` would give it; an existing file keeps its mode (and, where
      allowed, its owner).
    * A path that exists and is not a regular file -- a character device (``/dev/null``), a FIFO,
      a terminal -- or that names an open descriptor (``/dev/stdout``, ``/proc/self/fd/N``) is
      opened for writing and written directly: never renamed over, never unlinked. A FIFO
      waits for its reader, as a shell's ``>`` does.

    Text is written as UTF-8 with no newline translation. Errors of the open, of every write
    and of the close (a full device: ENOSPC, a reader gone: EPIPE) are reported.

    Parameters
    ----------
    path : str or os.PathLike
    data : str or bytes
    option : str
        The option that named ``path`` (for messages).
    inputs : ReadLog, mapping or iterable of paths, optional
        When given, :func:`check_output` runs first (on the resolved target).

    Raises
    ------
    ConfigError
        ``path`` is an input, a folder, or cannot be written (the message names ``path`` and
        says why: no such folder, no space left on the device, permission denied).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "runs").mkdir()
    >>> (folder / "latest.json").symlink_to(folder / "runs" / "7.json")
    >>> write_output(folder / "latest.json", '{"ok": true}\n')
    >>> (folder / "latest.json").is_symlink(), (folder / "runs" / "7.json").read_text()
    (True, '{"ok": true}\n')
    """
    if inputs is not None:
        check_output(path, inputs, option=option)
    shown = os.fspath(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        st: os.stat_result | None = os.stat(shown)
    except FileNotFoundError:  # a new file, or a dangling link: its target is created
        st = None
    except OSError as exc:  # a path through a file (ENOTDIR), a loop of links, no permission
        raise _cannot_write(option, shown, exc, "expected a writable file path") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{option} {shown}: cannot write (is a folder); expected a file path")
    if (st is not None and not stat.S_ISREG(st.st_mode)) or names_open_descriptor(shown):
        _write_directly(shown, payload, option)
    else:
        _replace_atomically(os.path.realpath(shown), payload, shown, option, st)


def _cannot_write(option: str, shown: str, exc: OSError, expected: str) -> ConfigError:
    return ConfigError(f"{option} {shown}: cannot write ({exc.strerror or exc}); {expected}")


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:  # os.write may write less than asked
        written = os.write(fd, view[:_WRITE_CHUNK])
        view = view[written:]


def _write_directly(shown: str, payload: bytes, option: str) -> None:
    """Open the existing special file ``shown`` for writing and write ``payload`` into it."""
    try:
        fd = os.open(
            shown, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
        )
    except OSError as exc:
        raise _cannot_write(option, shown, exc, "expected a writable file path") from None
    try:
        _write_all(fd, payload)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise _cannot_write(
            option, shown, exc, f"the output is incomplete (expected room for {len(payload)} bytes)"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        os.close(fd)  # a network file system may report a failed write only here
    except OSError as exc:
        raise _cannot_write(option, shown, exc, "the output may be incomplete") from None


def _replace_atomically(
    target: str, payload: bytes, shown: str, option: str, existing: os.stat_result | None
) -> None:
    """Write ``payload`` to a temporary file beside ``target`` (a resolved path), then rename it.

    Ctrl-C and SIGTERM (raised by the CLI as an exception) may come at any bytecode. The
    temporary file's name is chosen *before* it is created and the creation sits inside the
    ``try`` that removes it, so an interrupt just after the ``open`` returned -- before its
    descriptor is even stored -- still removes it (``tempfile.mkstemp`` returns the name only
    once the file exists: an interrupt inside it left the file behind). The removal itself
    survives a second interrupt; the first one is re-raised.
    """
    folder, name = os.path.split(target)
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | os.O_EXCL
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_BINARY", 0)
    )
    tmp: str | None = None  # set before the file is created: removed on any failure from then on
    fd = -1
    try:
        try:
            for _ in range(_NAME_ATTEMPTS):
                # os.urandom(4).hex() is secrets.token_hex(4), without importing hmac and hashlib
                tmp = os.path.join(folder, f".{name}.{os.urandom(4).hex()}.tmp")
                try:
                    fd = os.open(tmp, flags, 0o600)
                    break
                except FileExistsError:
                    tmp = None  # another writer's file: never removed by us
            else:
                raise FileExistsError(errno.EEXIST, "no unused temporary file name", folder)
        except OSError as exc:
            tmp = None  # not created (no such folder, no permission): nothing of ours to remove
            raise _cannot_write(
                option, shown, exc, "expected a writable file path in an existing folder"
            ) from None
        try:
            _write_all(fd, payload)
            os.fsync(fd)
            os.fchmod(fd, _mode_for(existing))
            if existing is not None:
                with contextlib.suppress(OSError):  # keeping another user's file needs root
                    os.fchown(fd, existing.st_uid, existing.st_gid)
            fd, closing = -1, fd
            os.close(closing)  # a network file system may report a failed write only here
            os.replace(tmp, target)
        except OSError as exc:
            raise _cannot_write(
                option,
                shown,
                exc,
                f"nothing was written (expected a writable file path with space for {len(payload)} bytes)",
            ) from None
    except BaseException:
        # No call before the loop's ``try``: the interpreter runs signal handlers only after
        # calls and at backward jumps, so a second interrupt cannot escape before the file is
        # removed; each step is marked done right after it, so a retry never repeats one (a
        # descriptor closed twice could be another thread's by then).
        while True:
            try:
                if tmp is not None:  # after os.replace: the name is gone, nothing to do
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    tmp = None
                if fd >= 0:
                    fd, closing = -1, fd
                    with contextlib.suppress(OSError):
                        os.close(closing)
                break
            except KeyboardInterrupt:  # a second Ctrl-C or SIGTERM: finish the cleanup first
                continue
        raise


def _mode_for(existing: os.stat_result | None) -> int:
    """The mode of the file replaced, else what ``open(path, "w")`` gives (0o666 & ~umask)."""
    if existing is not None:
        return existing.st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
