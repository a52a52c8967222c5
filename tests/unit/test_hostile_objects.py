"""Every compiled entry point driven with hostile objects: no crash, and the twin's answer.

Each compiled module of deteval (``_speedups``) must never be less safe than its numpy/Python
twin. Python code can run inside a C function wherever it compares, hashes, converts or looks
up an object the caller gave: a ``str`` subclass key whose ``__eq__`` empties the list being read,
``__index__`` / ``__float__`` / ``__bool__`` / ``__fspath__`` that mutate or raise, lists that
change size. Each case below runs in a child interpreter, so a segmentation fault fails that test
instead of killing pytest, and checks that the compiled function either declines (returns None,
the caller then runs the twin), raises a clean Python exception, or gives exactly the twin's
result.

The entry points are listed from the modules themselves (``dir(module)``): a new entry point
without a hostile case here fails :func:`test_every_entry_point_has_a_hostile_case`.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import deteval

MODULES = (
    "deteval._cacc",
    "deteval._canalyze",
    "deteval._cboot",
    "deteval._cmatch",
    "deteval._csort",
    "deteval.geometry._cbox",
    "deteval.io._colparse",
)

_REPO = Path(deteval.__file__).resolve().parent.parent


def _module(name: str):  # noqa: ANN202 - the compiled module, or a skip
    try:
        return importlib.import_module(name)
    except ImportError:
        if os.environ.get("DETEVAL_REQUIRE_EXTENSION") == "1":
            raise
        pytest.skip(f"{name} is not built (pip install . with a C compiler)")


# ---- the cases: each runs in a child interpreter (see run_case) --------------------------------


def _records_cleared_by_key_eq(make_record: Callable[[object], dict], n: int, *, keep: bool) -> list:
    """``n`` records; the first has a str-subclass key whose ``__eq__`` empties the list.

    With ``keep`` the records stay alive and only the list's item array goes (a reader that kept
    the old length reads a NULL array: a crash every time); without, the records are freed too
    (a reader that kept borrowed items reads freed memory: AddressSanitizer names it).
    """
    records: list = []
    kept: list = []

    class ClearingKey(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            if keep:
                kept.extend(records)
            records.clear()
            return str.__eq__(self, other)

    records.extend(make_record(ClearingKey if i == 0 else str) for i in range(n))
    return records


def _box_record(key: Callable[[str], object]) -> dict:
    return {"image_id": 1, "category_id": 2, key("bbox"): [1.0, 2.0, 3.0, 4.0], "score": 0.5}


def _annotation_record(key: Callable[[str], object]) -> dict:
    return {"id": 1, "image_id": 1, "category_id": 2, key("bbox"): [1.0, 2.0, 3.0, 4.0], "area": 12.0, "iscrowd": 0}


def case_colparse_box_records() -> None:
    from deteval.io import _colparse

    for keep in (True, False):
        records = _records_cleared_by_key_eq(_box_record, 64, keep=keep)
        n = len(records)
        cols = [np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((n, 4)), np.zeros(n)]
        assert _colparse.box_records(records, *cols) is None


def case_colparse_annotation_records() -> None:
    from deteval.io import _colparse

    for keep in (False, True):
        records = _records_cleared_by_key_eq(_annotation_record, 64, keep=keep)
        n = len(records)
        cols = [np.zeros(n, np.int64) for _ in range(3)] + [np.zeros((n, 4)), np.zeros(n)]
        cols += [np.zeros(n, np.int64) for _ in range(3)]
        assert _colparse.annotation_records(records, *cols) is None


CASES: dict[tuple[str, str], Callable[[], None]] = {
    ("deteval.io._colparse", "box_records"): case_colparse_box_records,
    ("deteval.io._colparse", "annotation_records"): case_colparse_annotation_records,
}


def run_case(case: Callable[[], None]) -> None:
    """Run ``case`` in a child interpreter; fail with its output unless it exits cleanly."""
    code = f"import tests.unit.test_hostile_objects as t; t.{case.__name__}(); print('ok')"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=_REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.endswith("ok\n"), (
        f"{case.__name__} exited with {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    )


@pytest.mark.parametrize("entry", sorted(CASES), ids=lambda e: f"{e[0]}.{e[1]}")
def test_hostile_objects(entry: tuple[str, str]) -> None:
    _module(entry[0])
    run_case(CASES[entry])


@pytest.mark.parametrize("name", MODULES)
def test_every_entry_point_has_a_hostile_case(name: str) -> None:
    module = _module(name)
    entry_points = {f for f in dir(module) if not f.startswith("_") and callable(getattr(module, f))}
    assert entry_points, name
    assert entry_points <= {f for m, f in CASES if m == name}, sorted(entry_points)
