"""Pieces every command shares: exit codes, loading with warnings recorded, outputs, progress."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from deteval import api
from deteval._safe_read import ReadLog
from deteval.data import Detections
from deteval.errors import (
    ConfigError,
    DetevalError,
    DetevalWarning,
    InputWarning,
    UndefinedMetricWarning,
    printable,
)
from deteval.io.output import check_output, write_output
from deteval.memory import CLI_MMAP_THRESHOLD, LARGE_INPUT_BYTES, map_large_allocations
from deteval.protocol import Protocol
from deteval.sharding import effective_workers

EXIT_OK, EXIT_USAGE, EXIT_INPUT = 0, 2, 3


EXIT_INTERRUPTED, EXIT_BROKEN_PIPE, EXIT_TERMINATED = 130, 141, 143


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, found {text}")
    return value


def _workers(text: str) -> int | str:
    """``--workers``: ``auto`` (by the input's size) or a positive integer."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return _positive_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, found {text}") from None


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, found {text}")
    return value


def _size(text: str) -> int:
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    number, unit = text.upper().rstrip("IB"), ""
    if number[-1:] in units:
        number, unit = number[:-1], number[-1]
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 8G or 512M, found {text}") from None
    if not 0 < value < math.inf:  # nan, inf and 1e999 (an infinity): not a size, not a traceback
        raise argparse.ArgumentTypeError(f"expected a positive finite size such as 8G or 512M, found {text}")
    return int(value)


def _outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(option, path) of every file this run will write."""
    return [
        (option, path)
        for option, path in (
            ("--output", args.output),
            ("--matches", getattr(args, "matches", None)),
            ("--per-image", getattr(args, "per_image", None)),
            ("--label-errors", getattr(args, "label_errors", None) if args.command == "analyze" else None),
        )
        if path
    ]


def _refuse_overwrite(args: argparse.Namespace, log: ReadLog | None = None) -> None:
    """Refuse outputs that are inputs.

    Before loading by the paths given, and again with ``log``: every file and folder loading
    actually read (protocol files and their ``extends:`` included).
    """
    dts = args.dt if isinstance(args.dt, list) else [args.dt]
    given = {
        "--gt": args.gt,
        **{("--dt" if len(dts) == 1 else f"--dt #{i + 1}"): d for i, d in enumerate(dts)},
    }
    for option, path in _outputs(args):
        check_output(path, given, option=option)
        if log is not None:
            check_output(path, log, option=option)


class _Progress:
    """Stage progress on stderr (tqdm), off with -q or when stderr is not a terminal.

    ``stage(label)`` marks the previous stage done and names the one starting now, so the bar
    shows what is running (``matching coco``) while it runs; ``advance(done, total)`` moves it
    inside the running stage (the matching reports it as whole images are matched: pairs, mask
    IoUs, greedy matching); ``finish()`` completes the last stage: the bar ends at 100%.
    """

    STEPS = 100  # bar units per stage, for the advances inside one
    REFRESH_S = 0.1  # advances redraw the bar at most this often (stage changes always do)

    def __init__(self, total: int, quiet: bool):
        self.bar = None
        self.running = False
        self.done = 0  # stages completed
        self.last_refresh = 0.0
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm  # lazy on purpose: only for a progress bar on a terminal

            self.bar = tqdm(
                total=total * self.STEPS, file=sys.stderr, leave=False, bar_format="{l_bar}{bar}| [{elapsed}]"
            )
            self.total = total

    def _move_to(self, position: int) -> None:
        if self.bar is not None and position > self.bar.n:
            self.bar.update(position - self.bar.n)

    def stage(self, label: str) -> None:
        if self.running:
            self.done += 1
        if self.bar is not None:
            self._move_to(self.done * self.STEPS)
            self.bar.set_description(
                f"{label} ({min(self.done + 1, self.total)}/{self.total})", refresh=False
            )
            self.bar.refresh()
        self.running = True

    def advance(self, done: int, total: int) -> None:
        """Inside the running stage: ``done`` of ``total`` units of its work are done.

        Throttled: the position always moves, the terminal is redrawn at most every
        :attr:`REFRESH_S` seconds (a redraw per matched part cost as much as the matching).
        """
        if self.bar is not None and self.running and total > 0:
            self._move_to(self.done * self.STEPS + min(self.STEPS, self.STEPS * done // total))
            now = time.monotonic()
            if now - self.last_refresh >= self.REFRESH_S:
                self.last_refresh = now
                self.bar.refresh()

    def finish(self) -> None:
        if self.running:
            self.done += 1
            self._move_to(self.done * self.STEPS)
        self.running = False

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _default_protocol(args: argparse.Namespace) -> None:
    """No --protocol: score under the input's default (:func:`deteval.api.protocol_choice`).

    The note saying which and why is printed with the warnings (not with -q) and recorded in the
    JSON ``inputs`` (:func:`_inputs_record`); a VOC root without a year is refused here.
    """
    if args.protocol is None:
        name, args.protocol_note = api.protocol_choice(args.gt)
        args.protocol = [name]


def _inputs_record(args: argparse.Namespace, summary: dict) -> dict:
    """The JSON ``inputs``: what was read, and ``default_protocol`` when none was given."""
    note = getattr(args, "protocol_note", "")
    return {**summary, "default_protocol": {"name": args.protocol[0], "note": note}} if note else summary


def _protocols(args: argparse.Namespace) -> list[Protocol]:
    return api.resolve_protocols(
        args.protocol, overrides=args.overrides, iou_type=args.iou_type, mask_iou=args.mask_iou
    )


def _input_options(args: argparse.Namespace) -> dict:
    return {
        "split": args.split,
        "area_from_box": args.area_from_box,
        "drop_unknown_categories": args.drop_unknown_categories,
        "yolo_layout": args.yolo_layout,
        "category_map": args.category_map,
        "allow_large_drop": args.allow_large_drop,
        "classes": args.classes,
        "result_prefix": args.result_prefix,
        "image_labels": getattr(args, "image_labels", None),
        "hierarchy": getattr(args, "hierarchy", None),
        "workers": getattr(args, "workers", 1),  # threads that parse a results file
    }


@contextlib.contextmanager
def _warnings_of(args: argparse.Namespace) -> Iterator[list]:
    """Record deteval's warnings (printed at the end); ``--strict`` makes InputWarning an error.

    Other warnings (a stray numpy RuntimeWarning) are recorded too and printed as notes.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.strict:
            warnings.simplefilter("error", InputWarning)
        yield caught


def _strict(exc: InputWarning, stage: str, error: type = ConfigError) -> DetevalError:
    return error(f"--strict: {stage}warnings are errors:\n  " + "\n  ".join(exc.messages))


def _load(args: argparse.Namespace, protocols: list[Protocol], dt: str | None = None) -> api.Inputs:
    """Load --gt and one detections input (default: the first --dt)."""
    if dt is None:
        dt = args.dt[0] if isinstance(args.dt, list) else args.dt
    if _input_bytes(args.gt, dt) > LARGE_INPUT_BYTES:
        map_large_allocations(CLI_MMAP_THRESHOLD)  # freed large arrays go back to the system
    try:
        return api.load_inputs(args.gt, dt, protocols=protocols, **_input_options(args))
    except InputWarning as exc:
        raise _strict(exc, "input ") from None


def _input_bytes(*paths: object) -> int:
    """Bytes on disk of the input files and folders' files (0 for what is not a path or missing)."""
    total = 0
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            continue
        path = os.fsdecode(path)
        with contextlib.suppress(OSError):
            if os.path.isdir(path):
                with os.scandir(path) as entries:
                    total += sum(e.stat().st_size for e in entries if e.is_file())
            else:
                total += os.stat(path).st_size
    return total


def _print_warnings(args: argparse.Namespace, caught: list) -> None:
    """Each warning once on stderr (unless -q): input warnings, then notes.

    A warning that is not deteval's (a stray numpy RuntimeWarning, say) is a note naming its
    category; it never reaches stderr raw.
    """
    if not args.quiet:
        if getattr(args, "protocol_note", ""):
            print(f"deteval: note: {printable(args.protocol_note)}", file=sys.stderr)
        for category, label in ((InputWarning, "warning"), (UndefinedMetricWarning, "note")):
            for text in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, category)):
                print(f"deteval: {label}: {printable(text)}", file=sys.stderr)
        # deteval's other warnings (the bootstrap's BootstrapBiasWarning): warnings too.
        known = (InputWarning, UndefinedMetricWarning)
        rest = (
            str(w.message)
            for w in caught
            if issubclass(w.category, DetevalWarning) and not issubclass(w.category, known)
        )
        for text in dict.fromkeys(rest):
            print(f"deteval: warning: {printable(text)}", file=sys.stderr)
        others = (
            f"{w.category.__name__}: {w.message}"
            for w in caught
            if not issubclass(w.category, DetevalWarning)
        )
        for text in dict.fromkeys(others):
            print(f"deteval: note: {printable(text)}", file=sys.stderr)


def _write(path: str, text: str, option: str, log: ReadLog | Mapping[str, Any] | None) -> None:
    """Write an output file, never over an input (:func:`deteval.io.output.write_output`)."""
    write_output(path, text, option=option, inputs=log)


def _note_workers(args: argparse.Namespace) -> None:
    """``--workers`` above the usable CPUs is capped (:func:`deteval.sharding.effective_workers`)."""
    if args.workers == "auto":  # by size, within the usable CPUs: nothing to say
        return
    used = effective_workers(args.workers)
    if used < args.workers and not args.quiet:
        print(
            f"deteval: note: --workers {args.workers}: using {used}, the CPUs this process may "
            f"use (more processes would not be faster)",
            file=sys.stderr,
        )


def _out(text: str) -> None:
    """Write report text on stdout, terminal-safe (:func:`deteval.errors.printable`)."""
    sys.stdout.write(printable(text, keep_newlines=True))


def _finish(args: argparse.Namespace, text: str, caught: list, log: ReadLog | None) -> None:
    """Write ``--output``; print warnings and notes on stderr (unless -q)."""
    if args.output:
        _write(args.output, text + "\n", "--output", log)
    _print_warnings(args, caught)


def _detections(inputs: api.Inputs) -> Detections:
    """The detections of loaded inputs (every command here loads some: a ConfigError otherwise)."""
    if inputs.dt is None:
        raise ConfigError("expected detections (--dt), found none")
    return inputs.dt
