"""Read a label or score matrix (``deteval rank`` inputs) from ``.npy``, ``.csv`` or ``.txt``.

Formats, chosen by the file's extension:

* ``.npy``: a NumPy array of numbers or booleans, 1-D or 2-D. Loaded with
  ``np.load(allow_pickle=False)`` after its header has been read and checked: an object array
  (which would need pickle) is refused before any data is read.
* ``.csv``: comma-separated numbers, one row per line.
* ``.txt`` / ``.tsv`` / ``.dat``: numbers separated by whitespace (spaces or tabs).

Text rules (both text formats): UTF-8 (a BOM is allowed); the **first line is a header when
none of its cells is a number** (it is skipped; a first line mixing numbers and words is an
error); every row has the same number of cells; no blank line before the last row (blank
lines at the end are fine); no comments, no quotes. A file with one column reads as a vector
of shape ``(n,)``, otherwise ``(n_rows, n_columns)``.

Every error is an :class:`deteval.errors.InputError` naming the file, the line and the column
(1-based; ``.npy`` errors name the element's index), what was expected and what was found.
Files larger than ``max_bytes`` (default 2 GiB) or with more than ``max_cells`` numbers
(default 500 million) are refused before they are read.
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from deteval._safe_read import decode_text, read_bytes
from deteval._values import frozen
from deteval.errors import InputError
from deteval.io._text import split_lines

__all__ = [
    "MAX_BYTES",
    "MAX_CELLS",
    "NamedMatrix",
    "read_matrix",
    "read_named_matrix",
    "read_labels",
    "read_scores",
    "read_labels_and_scores",
    "read_rank_inputs",
]

#: Largest file read (bytes).
MAX_BYTES = 2 * 1024**3
#: Largest number of cells in a matrix.
MAX_CELLS = 500_000_000

_TEXT_DELIMITERS = {".csv": ",", ".txt": None, ".tsv": None, ".dat": None}


def _fail(path: str, where: str, problem: str) -> InputError:
    return InputError(f"{path}: {where}{problem}")


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return "_" not in cell  # Python accepts 1_000; NumPy's parser does not


def _split(line: str, delimiter: str | None) -> list[str]:
    return [c.strip() for c in line.split(delimiter)] if delimiter else line.split()


def _check_size(path: str, max_bytes: int) -> None:
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if os.path.isdir(path):
        raise InputError(f"{path}: is a folder; expected a .npy, .csv or .txt file")
    if size > max_bytes:
        raise InputError(f"{path}: {size} bytes; expected at most {max_bytes} (max_bytes)")


def _read_npy(path: str, max_cells: int) -> np.ndarray:
    # Through read_bytes: special files refused, the size capped on what is read, the file
    # recorded as an input (so no output can be written over it).
    raw = read_bytes(path, what="a .npy matrix", limit=MAX_BYTES)
    try:
        with io.BytesIO(raw) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(f)
    except (ValueError, OSError, SyntaxError) as exc:
        raise InputError(f"{path}: not a valid .npy file ({exc})") from None
    if dtype.hasobject:
        raise InputError(
            f"{path}: the array holds Python objects (dtype {dtype}), which would need "
            f"pickle to load; refused. Expected numbers or booleans"
        )
    if not (np.issubdtype(dtype, np.number) or dtype.kind == "b") or np.issubdtype(dtype, np.complexfloating):
        raise InputError(f"{path}: dtype {dtype}; expected real numbers or booleans")
    if len(shape) not in (1, 2):
        raise InputError(f"{path}: shape {shape}; expected (n_samples,) or (n_samples, n_labels)")
    if int(np.prod(shape)) > max_cells:
        raise InputError(f"{path}: {int(np.prod(shape))} cells; expected at most {max_cells} (max_cells)")
    try:
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot load the .npy data ({exc})") from None
    return np.asarray(array, dtype=np.float64)


def _bad_row(path: str, lines: list[str], first: int, delimiter: str | None, n_columns: int) -> InputError:
    """The first malformed row (slow path, only when the fast parser failed)."""
    for i, line in enumerate(lines[first:], start=first):
        if not line.strip():
            return _fail(
                path,
                f"line {i + 1}: ",
                "blank line; expected a row of numbers (blank lines are allowed only at the end)",
            )
        cells = _split(line, delimiter)
        if len(cells) != n_columns:
            return _fail(
                path, f"line {i + 1}: ", f"{len(cells)} columns; expected {n_columns} like line {first + 1}"
            )
        for j, cell in enumerate(cells):
            if not _is_number(cell):
                return _fail(
                    path,
                    f"line {i + 1}, column {j + 1}: ",
                    f"{cell[:40]!r} is not a number; expected a number",
                )
    return _fail(path, "", "cannot be read as a matrix of numbers")


def _drop_column(
    path: str, lines: list[str], delimiter: str | None, id_column: str
) -> tuple[list[str], list[str]]:
    """``lines`` without the id column (a header name, or a 1-based position), and the ids it held."""
    head = _split(lines[0], delimiter)
    if id_column in head:
        j = head.index(id_column)
        has_header = True
    elif id_column.isdigit() and 1 <= int(id_column) <= len(head):
        j = int(id_column) - 1
        others = [c for k, c in enumerate(head) if k != j]
        has_header = bool(others) and not any(_is_number(c) for c in others)
    else:
        raise _fail(
            path,
            "line 1: ",
            f"no column named {id_column!r} (--id-column); expected a header name "
            f"({', '.join(repr(c[:40]) for c in head[:20])}) or a column number from 1 to {len(head)}",
        )
    kept, ids = [], []
    glue = delimiter if delimiter else " "
    for i, line in enumerate(lines):
        if not line.strip():
            kept.append(line)
            continue
        cells = _split(line, delimiter)
        if j >= len(cells):
            raise _fail(path, f"line {i + 1}: ", f"{len(cells)} columns; expected an id in column {j + 1}")
        if i > 0 or not has_header:
            ids.append(cells[j])
        kept.append(glue.join(cells[:j] + cells[j + 1 :]))
    return kept, ids


def _read_text(
    path: str, delimiter: str | None, max_cells: int, id_column: str | None = None
) -> tuple[np.ndarray, int, list[str] | None, list[str] | None]:
    """Matrix, the 0-based line index of its first row, the header's names and the row ids."""
    raw = read_bytes(path, what="a text matrix (.csv / .txt)", limit=MAX_BYTES)
    text = decode_text(raw, path, what="a text matrix (.csv / .txt) in UTF-8")
    lines = split_lines(text)  # as an editor counts them (str.splitlines also breaks at \f, U+2028 ...)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise _fail(path, "", "empty; expected rows of numbers")
    ids = None
    if id_column is not None:
        lines, ids = _drop_column(path, lines, delimiter, id_column)
    head = _split(lines[0], delimiter)
    numeric = [_is_number(c) for c in head]
    first = 0
    if not any(numeric):
        first = 1  # a header row
    elif not all(numeric):
        j = numeric.index(False)
        raise _fail(
            path,
            f"line 1, column {j + 1}: ",
            f"{head[j][:40]!r} is not a number; expected a number (or a header of names only)",
        )
    if first >= len(lines):
        raise _fail(path, "", "a header and no rows; expected rows of numbers")
    n_columns = len(_split(lines[first], delimiter))
    if first and len(head) != n_columns:
        raise _fail(
            path,
            "line 1: ",
            f"a header of {len(head)} names over rows of {n_columns} columns; expected one name a "
            "column (names hold no comma and no quote)",
        )
    if (len(lines) - first) * n_columns > max_cells:
        raise _fail(
            path,
            "",
            f"about {(len(lines) - first) * n_columns} cells; expected at most {max_cells} (max_cells)",
        )
    try:
        matrix = np.loadtxt(
            io.StringIO("\n".join(lines[first:])),
            delimiter=delimiter,
            dtype=np.float64,
            ndmin=2,
            comments=None,
        )
    except ValueError:
        raise _bad_row(path, lines, first, delimiter, n_columns) from None
    if matrix.shape[0] != len(lines) - first:  # NumPy skipped blank lines
        raise _bad_row(path, lines, first, delimiter, n_columns)
    return matrix, first, (head if first else None), ids


def _where_text(index: tuple, first: int) -> str:
    return f"line {int(index[0]) + first + 1}, column {int(index[1]) + 1}: "


def _where_npy(index: tuple) -> str:
    return "element [" + ", ".join(str(int(i)) for i in index) + "]: "


@frozen
class NamedMatrix:
    """A matrix read from a file, with its column names and row ids when the file gives them.

    Attributes
    ----------
    values : ndarray of shape (n,) or (n, n_columns)
        As :func:`read_matrix` returns it.
    names : tuple of str or None
        The header's names of the value columns (a text file whose first line is names only).
    ids : tuple of str or None
        The id column's cells, one a row (``id_column`` given).
    """

    values: np.ndarray
    names: tuple[str, ...] | None = None
    ids: tuple[str, ...] | None = None


def read_matrix(
    path: str | os.PathLike, *, what: str = "scores", max_bytes: int = MAX_BYTES, max_cells: int = MAX_CELLS
) -> np.ndarray:
    r"""Read a matrix of finite numbers (:func:`read_named_matrix` without the names).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "y.csv").write_text("cat,dog\n1,0\n0,1\n")
    >>> read_matrix(folder / "y.csv", what="labels")
    array([[1, 0],
           [0, 1]], dtype=int8)
    """
    return read_named_matrix(path, what=what, max_bytes=max_bytes, max_cells=max_cells).values


def read_named_matrix(
    path: str | os.PathLike,
    *,
    what: str = "scores",
    id_column: str | None = None,
    max_bytes: int = MAX_BYTES,
    max_cells: int = MAX_CELLS,
) -> NamedMatrix:
    r"""Read a matrix of finite numbers.

    Parameters
    ----------
    path : str or os.PathLike
        ``.npy``, ``.csv``, ``.txt`` (also ``.tsv``, ``.dat``).
    what : {"scores", "labels"}, default "scores"
        ``labels`` also requires every value to be 0 or 1 and returns int8.
    id_column : str, optional
        A column of row ids to set aside (text files): its header name, or its 1-based number.
        Its cells may be any text; they are returned as ``ids``.
    max_bytes, max_cells : int
        Size caps, checked before reading.

    Returns
    -------
    NamedMatrix
        ``values``: float64 scores, or int8 labels, of shape ``(n, n_columns)`` (a single text
        column reads as shape ``(n,)``); ``names``: the header's names; ``ids``: the id column.

    Raises
    ------
    InputError
        A missing, oversized or malformed file; a non-finite value; a label not in {0, 1}.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "y.csv").write_text("image,cat,dog\nA,1,0\nB,0,1\n")
    >>> m = read_named_matrix(folder / "y.csv", what="labels", id_column="image")
    >>> m.values.tolist(), m.names, m.ids
    ([[1, 0], [0, 1]], ('cat', 'dog'), ('A', 'B'))
    """
    path = os.fspath(path)
    if what not in ("scores", "labels"):
        raise InputError(f"what: expected 'scores' or 'labels', found {what!r}")
    extension = os.path.splitext(path)[1].lower()
    if extension != ".npy" and extension not in _TEXT_DELIMITERS:
        raise InputError(f"{path}: unknown extension {extension!r}; expected .npy, .csv, .txt, .tsv or .dat")
    _check_size(path, max_bytes)
    names = ids = None
    if extension == ".npy":
        if id_column is not None:
            raise InputError(f"{path}: --id-column {id_column!r}: a .npy file has no columns of text")
        matrix = _read_npy(path, max_cells)
        if matrix.size == 0:
            raise InputError(f"{path}: shape {matrix.shape} holds no value; expected at least one row")
        where = _where_npy
    else:
        matrix, first, names, ids = _read_text(path, _TEXT_DELIMITERS[extension], max_cells, id_column)

        def where(index: tuple) -> str:
            return _where_text(index if len(index) == 2 else (index[0], 0), first)

    bad = ~np.isfinite(matrix)
    if bad.any():
        index = tuple(np.argwhere(bad)[0])
        raise InputError(
            f"{path}: {where(index)}{matrix[index]} is not a finite number; expected a "
            f"finite {'label' if what == 'labels' else 'score'}"
        )
    if what == "labels":
        bad = (matrix != 0) & (matrix != 1)
        if bad.any():
            index = tuple(np.argwhere(bad)[0])
            raise InputError(
                f"{path}: {where(index)}label {matrix[index]:g}; expected 0 or 1 "
                f"({int(bad.sum())} such values)"
            )
        matrix = matrix.astype(np.int8)
    if extension != ".npy" and matrix.shape[1] == 1:
        matrix = matrix[:, 0]
    return NamedMatrix(matrix, None if names is None else tuple(names), None if ids is None else tuple(ids))


def read_labels(path: str | os.PathLike, **options: Any) -> np.ndarray:
    """:func:`read_matrix` with ``what="labels"`` (0/1, int8)."""
    return read_matrix(path, what="labels", **options)


def read_scores(path: str | os.PathLike, **options: Any) -> np.ndarray:
    """:func:`read_matrix` with ``what="scores"`` (finite, float64)."""
    return read_matrix(path, what="scores", **options)


def read_labels_and_scores(
    labels_path: str | os.PathLike, scores_path: str | os.PathLike, **options: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Read both inputs of ``deteval rank`` and check that their shapes agree.

    Raises
    ------
    InputError
        Either file is bad, or the shapes differ (the message gives both).
    """
    labels, scores, _ = read_rank_inputs(labels_path, scores_path, **options)
    return labels, scores


def read_rank_inputs(
    labels_path: str | os.PathLike, scores_path: str | os.PathLike, **options: Any
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...] | None]:
    """Labels, scores and the label columns' names (from either file's header), checked to agree.

    ``options`` go to :func:`read_named_matrix` (``id_column`` for both files). The two files must
    have the same shape, the same header names where both have a header, and the same row ids where
    an id column is set aside: a row order or column order that differs between the two files would
    pair each score with another item's label, silently.

    Raises
    ------
    InputError
        Either file is bad, or the two disagree (the message names the first difference).
    """
    named_labels = read_named_matrix(labels_path, what="labels", **options)
    named_scores = read_named_matrix(scores_path, what="scores", **options)
    labels, scores = named_labels.values, named_scores.values
    for kind, a, b in (
        ("header names", named_labels.names, named_scores.names),
        ("row ids", named_labels.ids, named_scores.ids),
    ):
        if a is not None and b is not None and a != b:
            k = next(i for i in range(min(len(a), len(b)) + 1) if i == min(len(a), len(b)) or a[i] != b[i])
            shown_a = repr(a[k]) if k < len(a) else "nothing"
            shown_b = repr(b[k]) if k < len(b) else "nothing"
            raise InputError(
                f"{os.fspath(labels_path)} and {os.fspath(scores_path)}: the {kind} differ at "
                f"position {k + 1} ({shown_a} vs {shown_b}); expected the same {kind} in the same order"
            )
    names = named_labels.names if named_labels.names is not None else named_scores.names
    if labels.shape != scores.shape:
        raise InputError(
            f"{os.fspath(labels_path)}: labels of shape {labels.shape} (rows x columns) "
            f"differ from {os.fspath(scores_path)}: scores of shape {scores.shape}; "
            f"expected one label per score"
        )
    return labels, scores, names
