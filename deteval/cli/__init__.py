"""Command line: ``deteval evaluate | compare | validate | protocols | analyze | rank``.

argparse and dispatch only: each handler reads its arguments, calls :mod:`deteval.api`, hands
the values to :mod:`deteval.report` and writes the text. The only module that prints.
Exit codes: 0 ok, 2 usage, 3 invalid input or config (or stdout/an output file cannot be
written), 130 interrupted (Ctrl-C), 141 stdout closed early (``deteval ... | head``), 143
terminated (SIGTERM). Interrupted or failed runs leave no partial output file: every file is
written by :func:`deteval.io.output.write_output` (atomically, or directly into a device or
FIFO), and never over a file or into a folder the run read
(:func:`deteval.io.output.check_output`).

Warnings: the API emits :class:`~deteval.errors.InputWarning` and
:class:`~deteval.errors.UndefinedMetricWarning`; the CLI records them and prints each once at the
end (``deteval: warning: ...`` / ``deteval: note: ...``, not with -q). ``--strict`` is the filter
``simplefilter("error", InputWarning)``: its exception is reported as an error (exit 3).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from deteval.cli._common import (
    EXIT_BROKEN_PIPE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from deteval.cli.parser import build_parser
from deteval.errors import DetevalError, printable
from deteval.memory import memory_limit, out_of_memory_message

__all__ = ["main"]


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every ``finally`` and temporary-file cleanup runs."""


#: Command -> (module, handler): a handler's module is imported when its command runs, so that
#: ``deteval evaluate`` does not import the analysis, statistics and ranking code.
_COMMANDS = {
    "evaluate": ("deteval.cli.scoring", "_evaluate"),
    "protocols": ("deteval.cli.scoring", "_list_protocols"),
    "compare": ("deteval.cli.scoring", "_compare"),
    "validate": ("deteval.cli.scoring", "_validate"),
    "analyze": ("deteval.cli.analysis", "_analyze"),
    "rank": ("deteval.cli.analysis", "_rank"),
    "plot": ("deteval.cli.analysis", "_pictures"),
    "report": ("deteval.cli.analysis", "_pictures"),
}


_STDOUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE}


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`_Terminated` (a KeyboardInterrupt) while the command runs.

    Only in the main thread (the only one that may set handlers); the previous handler is
    restored afterwards, so a test calling :func:`main` leaves the process as it found it.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _silence_stdout() -> None:
    """Point stdout's file descriptor at /dev/null.

    The interpreter's final flush of what is still buffered then cannot fail again (the Python
    docs' recipe for SIGPIPE).
    """
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs (its first argument that is not an option), None if none is named.

    The parser is built with that command's options only (the others' are not needed to parse).
    """
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in _COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (tests call it directly).

    Failures end in one line on stderr and an exit code, never a traceback: invalid input or
    config 3; stdout that cannot be written (a full disk) 3; stdout closed by the reader
    (``| head``) 141, silently; Ctrl-C 130; SIGTERM 143. Output files are never half-written.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        with _sigterm_raises(), memory_limit(getattr(args, "memory_limit", None)):
            module, handler = _COMMANDS[args.command]
            code = getattr(importlib.import_module(module), handler)(args)
            if code is not None:
                sys.stdout.flush()  # inside the handlers: a closed or full stdout fails here
    except DetevalError as exc:
        print(f"deteval: error: {printable(str(exc), keep_newlines=True)}", file=sys.stderr)
        return EXIT_INPUT
    except MemoryError as exc:  # an allocation no estimate of deteval.memory covered
        print(f"deteval: error: {printable(out_of_memory_message(exc))}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # `deteval ... | head`: the reader has what it wanted
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except _Terminated:
        print("deteval: terminated (SIGTERM); every output file is complete or untouched", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("deteval: interrupted (Ctrl-C); every output file is complete or untouched", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _STDOUT_ERRNOS:
            raise  # not a full or failing stdout: a bug to report, not a condition to hide
        _silence_stdout()
        print(
            f"deteval: error: cannot write to stdout ({exc.strerror or exc}); the output is incomplete",
            file=sys.stderr,
        )
        return EXIT_INPUT
    if code is not None:
        return code
    parser.print_usage(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
