"""Exceptions and warnings raised by deteval, and the one builder of their messages.

Every message says where (file, record, ids), what was expected and what was found, e.g.
``dt.json: detection #17 (image_id=42): bbox has 5 numbers; expected 4 [x, y, w, h]``.
Many records with one defect make one message: the count and the first five
(:func:`records_error`).

Warnings: library functions return what they noticed as values (``GroundTruth.warnings``,
``EvalResult.warnings`` / ``.notes``); the front door (:mod:`deteval.api`) also emits them as
:class:`InputWarning` / :class:`UndefinedMetricWarning`, so the ordinary ``warnings`` filters apply
(``warnings.simplefilter("error", InputWarning)`` is ``--strict``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "DetevalError",
    "InputError",
    "ConfigError",
    "ExtensionError",
    "DetevalWarning",
    "UndefinedMetricWarning",
    "InputWarning",
    "SHOW",
    "records_error",
    "shorten",
    "is_number",
    "json_type",
    "describe",
    "printable",
]

#: How many offending records a message names (then "and N more").
SHOW = 5


class DetevalError(Exception):
    """Base class of every error deteval raises on purpose."""


class InputError(DetevalError, ValueError):
    """Ground truth or detections that cannot be scored as given (CLI exit code 3)."""


class ConfigError(DetevalError, ValueError):
    """A protocol, a YAML config or an option that is invalid (CLI exit code 3)."""


class ExtensionError(DetevalError, ImportError):
    """A compiled extension missing or built from older sources under ``DETEVAL_REQUIRE_EXTENSION=1``.

    Without that variable the numpy twins run instead (the same numbers); the message names the
    module and how to rebuild it (:mod:`deteval._speedups`).
    """


class DetevalWarning(UserWarning):
    r"""Base class of deteval's warnings.

    One warning carries one message. When a warnings filter turns a batch of them into an error,
    :mod:`deteval.api` raises one instance carrying every message of the batch (``messages``), so
    that a strict run names everything at once, not only the first.

    Examples
    --------
    >>> str(InputWarning("a", "b")), InputWarning("a", "b").messages
    ('a\nb', ('a', 'b'))
    """

    @property
    def messages(self) -> tuple[str, ...]:
        """Each message this warning carries (usually one)."""
        return tuple(str(a) for a in self.args)

    def __str__(self) -> str:
        return "\n".join(self.messages)


class UndefinedMetricWarning(DetevalWarning):
    """A metric is undefined for the input (e.g. a class without ground truth)."""


class InputWarning(DetevalWarning):
    """Input that a reference tool accepts, scored as it does, but worth knowing about."""


def is_number(value: Any) -> bool:
    """True for a real number: ``int``, ``float`` and numpy integer / floating scalars.

    A boolean is not a number here (JSON and YAML ``true`` is not ``1``), numpy's ``bool_``
    neither; finiteness is not checked (``float("nan")`` is a number).

    Examples
    --------
    >>> is_number(3), is_number(2.5), is_number(np.float32(1)), is_number(np.int64(7))
    (True, True, True, True)
    >>> is_number(True), is_number(np.bool_(True)), is_number("1"), is_number(None)
    (False, False, False, False)
    """
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


_C0_C1 = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]}
_KEEP_LINES = {k: v for k, v in _C0_C1.items() if k != 0x0A}
# the bidi embeddings / overrides / isolates, and the Unicode line and paragraph separators (a
# terminal or an editor may break the line there: a fake row in a table)
_BIDI = {c: f"\\u{c:04x}" for c in [0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]}


def printable(text: str, *, keep_newlines: bool = False) -> str:
    r"""``text`` made safe for a terminal: control characters and escape sequences shown as ``\xNN``.

    Every text deteval prints (tables, markdown, notes, warnings, errors) passes through here,
    so a class name or file name holding ``ESC [ 2 J`` (clear screen), a carriage return or a
    bidirectional override cannot rewrite what the user sees. C0 and C1 controls (``\x00`` to
    ``\x1f``, ``\x7f`` to ``\x9f``), the bidi embedding/override/isolate characters and the
    Unicode line / paragraph separators (U+2028, U+2029) are escaped; everything else is kept
    (accents, CJK). ``keep_newlines`` keeps ``\n`` (whole reports); else it is escaped too
    (one-line messages, and every cell of a text table: a class name's newline is not a row).

    Examples
    --------
    >>> printable("cat\x1b[2Jdog\r")
    'cat\\x1b[2Jdog\\x0d'
    >>> printable("chien\nchat", keep_newlines=True), printable("été")
    ('chien\nchat', 'été')
    """
    if text.isprintable():
        return text
    return text.translate(_KEEP_LINES if keep_newlines else _C0_C1).translate(_BIDI)


def shorten(value: Any, limit: int = 60) -> str:
    """``repr`` of ``value``, cut to ``limit`` characters (ending in ``...``) for messages.

    Examples
    --------
    >>> shorten("abc"), shorten("x" * 100, 10)
    ("'abc'", "'xxxxxx...")
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, for messages.

    Examples
    --------
    >>> json_type(True), json_type(3), json_type(np.float64(1)), json_type([1]), json_type(None)
    ('boolean', 'integer', 'number', 'array', 'null')
    """
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return "boolean"
    if isinstance(value, (int, np.integer)):
        return "integer"
    if isinstance(value, (float, np.floating)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def describe(value: Any, limit: int = 60) -> str:
    """A found value in a message: its shortened ``repr`` and JSON type.

    Examples
    --------
    >>> describe("12"), describe([1, 2, 3])
    ("'12' (string)", '[1, 2, 3] (array)')
    """
    return f"{shorten(value, limit)} ({json_type(value)})"


def records_error(
    where: str | None,
    problem: str,
    expected: str,
    hits: Sequence[tuple[str, str]],
    *,
    noun: str = "records",
    separator: str = ": ",
    n_records: int | None = None,
    error: type = InputError,
) -> DetevalError:
    """One error for every record with the same defect: the count and the first :data:`SHOW`.

    Parameters
    ----------
    where : str or None
        The file (or other source) the records come from; None when each record's label
        already says it (``file:line``).
    problem, expected : str
        What is wrong, and what was expected instead.
    hits : sequence of (label, found)
        Offending records in input order (at least the first :data:`SHOW`): how the record is
        named (``file:line``, ``detection #3 (image_id=7)``) and what was found there, already
        formatted (:func:`describe`).
    noun : str
        Plural noun of the count (``"lines"``, ``"detections"``).
    separator : str
        Between a record's label and what was found, in the list of several.
    n_records : int, optional
        How many records have the defect, when ``hits`` lists only the first ones (default:
        ``len(hits)``).
    error : type
        The exception class (a :class:`DetevalError`).

    Returns
    -------
    DetevalError
        To be raised by the caller (``raise records_error(...)``).

    Examples
    --------
    >>> print(records_error("dt.json", "`score` is not a finite number", "a finite JSON number",
    ...                     [("detection #3 (image_id=7)", "'x' (string)")]))
    dt.json: detection #3 (image_id=7): `score` is not a finite number; expected a finite JSON number, found 'x' (string)
    >>> print(records_error(None, "bad class", "an integer", [(f"a.txt:{i}", "'x'") for i in range(1, 8)],
    ...                     noun="lines"))
    7 lines: bad class; expected an integer; found a.txt:1: 'x'; a.txt:2: 'x'; a.txt:3: 'x'; a.txt:4: 'x'; a.txt:5: 'x'; and 2 more
    """
    hits = [(printable(str(label)), printable(str(found))) for label, found in hits]
    n_records = len(hits) if n_records is None else n_records
    prefix = f"{where}: " if where else ""
    if n_records == 1:
        label, found = hits[0]
        return error(f"{prefix}{label}: {problem}; expected {expected}, found {found}")
    shown = "; ".join(f"{label}{separator}{found}" for label, found in hits[:SHOW])
    more = f"; and {n_records - SHOW} more" if n_records > SHOW else ""
    return error(f"{prefix}{n_records} {noun}: {problem}; expected {expected}; found {shown}{more}")
