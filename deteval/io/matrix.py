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

from deteval.errors import InputError
from deteval.io._text import line_of, read_bytes, split_lines

__all__ = ["MAX_BYTES", "MAX_CELLS", "read_matrix", "read_labels", "read_scores", "read_labels_and_scores"]

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


def _read_text(path: str, delimiter: str | None, max_cells: int) -> tuple[np.ndarray, int]:
    """Matrix and the 0-based line index of its first row."""
    raw = read_bytes(path, what="a text matrix (.csv / .txt)", limit=MAX_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = line_of(raw, exc.start)
        raise _fail(path, f"line {line}: ", "bytes that are not UTF-8; expected UTF-8 text") from None
    lines = split_lines(text)  # as an editor counts them (str.splitlines also breaks at \f, U+2028 ...)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise _fail(path, "", "empty; expected rows of numbers")
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
    return matrix, first


def _where_text(index: tuple, first: int) -> str:
    return f"line {int(index[0]) + first + 1}, column {int(index[1]) + 1}: "


def _where_npy(index: tuple) -> str:
    return "element [" + ", ".join(str(int(i)) for i in index) + "]: "


def read_matrix(
    path: str | os.PathLike, *, what: str = "scores", max_bytes: int = MAX_BYTES, max_cells: int = MAX_CELLS
) -> np.ndarray:
    r"""Read a matrix of finite numbers.

    Parameters
    ----------
    path : str or os.PathLike
        ``.npy``, ``.csv``, ``.txt`` (also ``.tsv``, ``.dat``).
    what : {"scores", "labels"}, default "scores"
        ``labels`` also requires every value to be 0 or 1 and returns int8.
    max_bytes, max_cells : int
        Size caps, checked before reading.

    Returns
    -------
    ndarray of shape (n,) or (n, n_columns)
        float64 scores, or int8 labels. A single text column reads as shape ``(n,)``.

    Raises
    ------
    InputError
        A missing, oversized or malformed file; a non-finite value; a label not in {0, 1}.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "y.csv").write_text("cat,dog\n1,0\n0,1\n")
    >>> read_matrix(folder / "y.csv", what="labels")
    array([[1, 0],
           [0, 1]], dtype=int8)
    """
    path = os.fspath(path)
    if what not in ("scores", "labels"):
        raise InputError(f"what: expected 'scores' or 'labels', found {what!r}")
    extension = os.path.splitext(path)[1].lower()
    if extension != ".npy" and extension not in _TEXT_DELIMITERS:
        raise InputError(f"{path}: unknown extension {extension!r}; expected .npy, .csv, .txt, .tsv or .dat")
    _check_size(path, max_bytes)
    if extension == ".npy":
        matrix = _read_npy(path, max_cells)
        if matrix.size == 0:
            raise InputError(f"{path}: shape {matrix.shape} holds no value; expected at least one row")
        where = _where_npy
    else:
        matrix, first = _read_text(path, _TEXT_DELIMITERS[extension], max_cells)

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
    return matrix


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
    labels = read_labels(labels_path, **options)
    scores = read_scores(scores_path, **options)
    if labels.shape != scores.shape:
        raise InputError(
            f"{os.fspath(labels_path)}: labels of shape {labels.shape} (rows x columns) "
            f"differ from {os.fspath(scores_path)}: scores of shape {scores.shape}; "
            f"expected one label per score"
        )
    return labels, scores
