"""The fast tier's collection rules (docs/testing.md): no heavy optional package at collection."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tests.conftest as tests_conftest
from tests import ROOT

#: Packages that take seconds to import: a test module imports them in its tests, never at module
#: level (collection imports every module in every xdist process). deteval.integrations.torchmetrics
#: imports torch and torchmetrics when they are installed.
HEAVY = ("torch", "torchmetrics", "sklearn", "ultralytics", "netcal", "deteval.integrations.torchmetrics")


def _fast_tier_modules() -> list[Path]:
    """Every Python file the fast tier collects under tests/ (the slow folders and tests/support aside)."""
    skipped = (*(ROOT / folder for folder in tests_conftest._SLOW_FOLDERS), ROOT / "tests/support")
    return [
        path
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if not any(path.is_relative_to(folder) for folder in skipped)
    ]


def _is_heavy(name: str) -> bool:
    return any(name == heavy or name.startswith(heavy + ".") for heavy in HEAVY)


def _module_level_heavy_imports(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each module-level import (or ``importorskip``) of a HEAVY package."""
    text = path.read_text(encoding="utf-8")
    if not any(heavy in text for heavy in HEAVY):  # each name found is in the text: no parse needed
        return []
    found = []
    for node in ast.parse(text).body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "importorskip"
                    and call.args
                    and isinstance(call.args[0], ast.Constant)
                    and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                ):
                    names.append(str(call.args[0].value))
        found += [(node.lineno, name) for name in names if _is_heavy(name)]
    return found


def test_no_fast_tier_module_imports_a_heavy_package_at_collection():
    modules = _fast_tier_modules()
    assert len(modules) > 100  # the walk found the test tree
    hits = [
        (path.relative_to(ROOT).as_posix(), *hit)
        for path in modules
        for hit in _module_level_heavy_imports(path)
    ]
    assert hits == []


def test_the_check_sees_each_kind_of_module_level_import(tmp_path):
    source = tmp_path / "test_planted.py"
    source.write_text(
        "import pytest\nimport torch\nfrom sklearn import metrics\n"
        "from deteval.integrations.torchmetrics import MeanAveragePrecision\n"
        'netcal = pytest.importorskip("netcal.metrics")\n'
        'def test_fine():\n    pytest.importorskip("torch")\n'
    )
    assert _module_level_heavy_imports(source) == [
        (2, "torch"),
        (3, "sklearn"),
        (4, "deteval.integrations.torchmetrics"),
        (5, "netcal.metrics"),
    ]


@pytest.mark.parametrize("prefix", list(tests_conftest._ONE_PROCESS_GROUPS))
def test_each_one_process_group_entry_names_existing_tests(prefix):
    """A renamed file or test would silently leave its group (its package then imported twice)."""
    file, _, function = prefix.partition("::")
    path = ROOT / file
    assert path.is_file(), prefix
    if function:
        assert f"def {function}" in path.read_text(encoding="utf-8"), prefix
    assert tests_conftest._one_process_group(prefix + "[case]") == tests_conftest._ONE_PROCESS_GROUPS[prefix]


@pytest.mark.parametrize("prefix", list(tests_conftest._LONG_TESTS))
def test_each_long_test_entry_names_an_existing_test(prefix):
    """A renamed test would silently lose its place at the start of the run."""
    file, _, function = prefix.partition("::")
    path = ROOT / file
    assert path.is_file(), prefix
    assert function, prefix
    assert f"def {function}(" in path.read_text(encoding="utf-8"), prefix
    assert tests_conftest._estimated_seconds(prefix + "[case]") == tests_conftest._LONG_TESTS[prefix]


def test_first_sends_keep_groups_whole_and_spread_the_long_tests(monkeypatch):
    """Longest first, each to the least loaded process; the rest stays pending for xdist, in order."""
    monkeypatch.setattr(tests_conftest, "_ONE_PROCESS_GROUPS", {"t/heavy.py": "torch"})
    monkeypatch.setattr(
        tests_conftest, "_LONG_TESTS", {"t/a.py::long": 5.0, "t/b.py::long": 3.0, "t/heavy.py::x": 4.0}
    )
    monkeypatch.setattr(tests_conftest, "_SHORT_TEST_SECONDS", 0.5)
    collection = [
        "t/a.py::short",  # 0
        "t/a.py::long[1]",  # 1: 5, with 2: the file's unit (10)
        "t/a.py::long[2]",  # 2: 5
        "t/b.py::long",  # 3: 3
        "t/heavy.py::x",  # 4: the group, 4 + 0.5 + 0.5
        "t/heavy.py::y",  # 5
        "t/heavy.py::z",  # 6
        "t/b.py::short",  # 7
        "t/c.py::long",  # 8: no entry (t/a.py::long is not its prefix)
    ]
    pending = list(range(len(collection)))
    sends = tests_conftest._first_sends(collection, pending, 2)
    assert sends == [[1, 2], [3, 4, 5, 6]]  # 10 -> p0, 5 -> p1, 3 -> p1
    assert pending == [0, 7, 8]
    assert tests_conftest._first_sends(collection, list(range(len(collection))), 3) == [
        [1, 2],
        [4, 5, 6],
        [3],
    ]
