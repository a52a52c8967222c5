"""The package's imports go one way: down the documented order (docs/architecture.md).

Every ``import`` and ``from ... import`` in ``deteval/`` is parsed with :mod:`ast`, including the
ones written inside functions, and checked against :data:`LAYERS`: a module may import modules of
a lower layer, and modules of its own layer only where no cycle results. A new module must be
given a layer here (the test fails on a module it does not know), so the architecture is a decision.
The optional extras (plots, Dask, torch) are never imported when ``import deteval`` runs.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "deteval"

#: Lowest first. A module name matches an entry equal to it or inside it (``deteval.io`` covers
#: ``deteval.io.coco``).
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "deteval._version",
        "deteval._lazy",  # names of a module loaded from their modules on first access (PEP 562)
        "deteval._values",  # frozen value classes (dataclasses) made without compiled methods
        "deteval._dtypes",
        "deteval._safe_read",  # the one reading policy: files, text, JSON, YAML (and the read log)
        "deteval._speedups",
        "deteval._parallel",  # how many threads a kernel call splits into (one rule, no state)
        "deteval.errors",
        "deteval.memory",
        "deteval.integrations.distributed",
    ),
    # The values: columns (data), the checked masks (masks: segmentations -> columns, no paths)
    # and what each IoU type needs of them (scorable: boxes, keypoints).
    ("deteval.data", "deteval.masks", "deteval.scorable"),
    ("deteval.openimages",),  # Open Images label rules: values only (typed Any for the protocol)
    ("deteval.io",),
    ("deteval.protocol",),
    # pooling reads Protocol.class_agnostic: above protocol, typed.
    ("deteval.pooling",),
    ("deteval.geometry",),
    ("deteval.grouping",),
    ("deteval.matching",),
    ("deteval.accumulate",),
    ("deteval.summary", "deteval.operating_points"),
    ("deteval.evaluate",),
    ("deteval.sharding",),
    (
        "deteval.ranking",
        "deteval.analysis",
        "deteval.mask_modes",
        "deteval.stats",
        "deteval.explain",
        "deteval.tide",
        "deteval.decomposition",
        "deteval.confusion",
        "deteval.calibration",
        "deteval.lrp",
        "deteval.beyond",
        "deteval.diagnose",
        "deteval.slices",
        "deteval.per_image",
        "deteval.label_errors",
    ),
    ("deteval.plot",),
    ("deteval.report",),
    ("deteval.api", "deteval.evaluator"),
    ("deteval.integrations",),
    ("deteval.interop",),
    # torchmetrics' MeanAveragePrecision writes COCO datasets and scores them with the drop-in
    # COCOeval, as torchmetrics does with pycocotools'.
    ("deteval.integrations.torchmetrics",),
    ("deteval.cli",),
    ("deteval", "deteval.__main__"),
)

#: Packages whose import is optional: the core must never import them at ``import deteval`` time.
OPTIONAL = ("matplotlib", "torch", "dask", "distributed")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _layer(module: str) -> int:
    best, best_len = -1, -1
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best_len:
                best, best_len = index, len(name)
    return best


def _imports(path: Path, module: str | None = None) -> list[tuple[int, str]]:
    """(line, imported deteval module) for every import in the file, at any depth.

    ``module``: the file's module name (default: from its place in the package).
    """
    module = _module_name(path) if module is None else module
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from deteval.io import coco` imports the submodule when there is one.
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                is_sub = (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists() or (
                    PACKAGE.parent / Path(*sub.split(".")) / "__init__.py"
                ).exists()
                out.append((node.lineno, sub if is_sub else target))
    return [(line, name) for line, name in out if name == "deteval" or name.startswith("deteval.")]


FILES = sorted(PACKAGE.rglob("*.py"))


@functools.cache
def _package_imports(path: Path) -> tuple[tuple[int, str], ...]:
    """``_imports`` of a file of the package, read once per process (three tests read every file)."""
    return tuple(_imports(path))


def test_every_module_has_a_layer() -> None:
    unknown = [_module_name(f) for f in FILES if _layer(_module_name(f)) < 0]
    assert not unknown, f"give these modules a layer in LAYERS (and docs/architecture.md): {unknown}"


def _violations(module: str, imports: list[tuple[int, str]], where: str) -> list[str]:
    """The imports of ``module`` against :data:`LAYERS` (``imports``: (line, imported module))."""
    own = _layer(module)
    bad = []
    for line, target in imports:
        layer = _layer(target)
        if target == module or (target != "deteval" and module.startswith(target + ".")):
            continue  # a module of a package importing its package (e.g. io.coco -> io)
        if layer > own or layer < 0:
            bad.append(f"{where}:{line}: {module} (layer {own}) imports {target} (layer {layer})")
    return bad


@pytest.mark.parametrize("path", FILES, ids=[_module_name(f) for f in FILES])
def test_imports_only_go_down(path: Path) -> None:
    bad = _violations(_module_name(path), list(_package_imports(path)), str(path.relative_to(PACKAGE.parent)))
    assert not bad, "imports against the documented order:\n" + "\n".join(bad)


def test_the_check_catches_a_planted_violation(tmp_path: Path) -> None:
    """Upward imports planted in a copy of a real module are found, at their lines.

    One at the top of the module, one inside a function (a lazy import, as evaluate's of
    io.coco.require_boxes was) and one relative.
    """
    planted = tmp_path / "deteval" / "data.py"
    planted.parent.mkdir()
    source = (PACKAGE / "data.py").read_text(encoding="utf-8")
    planted.write_text(
        "from deteval.report import format_result\n"
        + source
        + "\n\ndef _planted():\n    from deteval.evaluate import match\n\n\n"
        + "def _relative():\n    from .io import coco\n",
        encoding="utf-8",
    )
    bad = _violations("deteval.data", _imports(planted, "deteval.data"), "data.py")
    line = len(source.splitlines()) + 5
    layer = _layer
    assert bad == [
        f"data.py:1: deteval.data (layer 1) imports deteval.report (layer {layer('deteval.report')})",
        f"data.py:{line}: deteval.data (layer 1) imports deteval.evaluate (layer {layer('deteval.evaluate')})",
        f"data.py:{line + 4}: deteval.data (layer 1) imports deteval.io.coco (layer {layer('deteval.io')})",
    ]
    assert _violations("deteval.data", [(1, "deteval.errors")], "data.py") == []  # downward is fine
    # A module without a layer is refused too.
    assert _violations("deteval.data", [(3, "deteval.nowhere")], "data.py") != []


#: The core: from pooling up to and including the analysis layer. It takes values (paths are
#: read by io and api, docs/architecture.md): no module of it imports a reader.
CORE = range(_layer("deteval.pooling"), _layer("deteval.label_errors") + 1)
#: What reads files: the reading policy and the format adapters.
READERS = ("deteval._safe_read", "deteval.io")


def _reads_paths(module: str, imports: list[tuple[int, str]], where: str) -> list[str]:
    """The imports of a reader (:data:`READERS`) by a module of the core (:data:`CORE`)."""
    if _layer(module) not in CORE:
        return []
    return [
        f"{where}:{line}: {module} (the core takes values) imports the reader {target}"
        for line, target in imports
        if any(target == r or target.startswith(r + ".") for r in READERS)
    ]


@pytest.mark.parametrize("path", FILES, ids=[_module_name(f) for f in FILES])
def test_the_core_reads_no_path(path: Path) -> None:
    bad = _reads_paths(
        _module_name(path), list(_package_imports(path)), str(path.relative_to(PACKAGE.parent))
    )
    assert not bad, "readers imported by the core (take values; read in io / api):\n" + "\n".join(bad)


def test_the_path_check_catches_a_planted_reader() -> None:
    """mask_modes loaded paths with io's loaders, and slices took io's ImageAttributes: caught."""
    planted = [(18, "deteval.io"), (32, "deteval.io.image_attributes"), (40, "deteval._safe_read")]
    assert _reads_paths("deteval.mask_modes", planted, "mask_modes.py") == [
        "mask_modes.py:18: deteval.mask_modes (the core takes values) imports the reader deteval.io",
        "mask_modes.py:32: deteval.mask_modes (the core takes values) imports the reader "
        "deteval.io.image_attributes",
        "mask_modes.py:40: deteval.mask_modes (the core takes values) imports the reader deteval._safe_read",
    ]
    assert _reads_paths("deteval.api.inputs", planted, "inputs.py") == []  # api reads paths
    assert _reads_paths("deteval.mask_modes", [(1, "deteval.iou")], "m.py") == []  # a prefix is not enough


#: No module of the package is longer than this (split along a natural seam instead).
MAX_MODULE_LINES = 700


def test_no_module_over_700_lines() -> None:
    long = {
        str(f.relative_to(PACKAGE.parent)): n
        for f in FILES
        if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them): {long}"


TESTS = PACKAGE.parent / "tests"


#: Every import the check below flags names a ``test_`` module in its statement: ``import
#: tests.x.test_y``, ``from .test_y import z``, ``from tests.x import test_y`` (also in parentheses or
#: after a backslash). A file this finds nothing in is not parsed (parsing the whole tree is ~1 s).
_MAY_IMPORT_A_TEST_MODULE = re.compile(
    r"\bimport\b(?:[^\n]|\\\n)*\btest_|\bfrom\s+[\w.]*\btest_|\bimport\s*\([^)]*\btest_"
)


def test_the_test_module_prefilter_sees_each_way_of_importing_one() -> None:
    """What the check flags always passes the prefilter; a file without such an import does not."""
    flagged = [
        "import tests.unit.test_x",
        "from tests.unit.test_x import y",
        "from .test_x import y",
        "from . import test_x",
        "from tests.unit import a, test_x",
        "from tests.unit import (\n    a,\n    test_x,\n)",
        "from tests.unit import a, \\\n    test_x",
    ]
    for source in flagged:
        assert _MAY_IMPORT_A_TEST_MODULE.search(source), source
    assert not _MAY_IMPORT_A_TEST_MODULE.search(
        "import pytest\nfrom tests import ROOT\n\ndef test_x():\n    pass\n"
    )


def test_no_test_module_imports_another() -> None:
    """Shared generators and helpers live in tests/support/, not in test modules."""
    bad = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not _MAY_IMPORT_A_TEST_MODULE.search(text):
            continue  # no import statement names a test_ module: nothing to parse (most of the files)
        for node in ast.walk(ast.parse(text, filename=str(path))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level > 0:  # from .test_x import y
                package = path.relative_to(TESTS.parent).parent.parts
                base = ".".join(package[: len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
                names = [module] + [f"{module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("tests.") and name.split(".")[-1].startswith("test_"):
                    bad.append(f"{path.relative_to(TESTS.parent)}:{node.lineno}: imports {name}")
    assert not bad, (
        "test modules importing test modules (move the shared code to tests/support/):\n" + "\n".join(bad)
    )


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for path in FILES:
        module = _module_name(path)
        graph.setdefault(module, set()).update(
            t for _, t in _package_imports(path) if t != module and not module.startswith(t + ".")
        )
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        seen[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if seen.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in seen:
                visit(nxt)
        stack.pop()
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            visit(node)


def test_import_deteval_loads_no_optional_extra() -> None:
    code = f"import sys, deteval, deteval.cli; print([m for m in {OPTIONAL!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
