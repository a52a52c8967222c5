"""docs/references.md, the reference matrix, cannot go stale.

Every preset and integration has a row; every test file a row names exists and names the preset;
the installed reference is at least the version the row says was checked.
"""

from __future__ import annotations

import re
from importlib import metadata

import pytest

from deteval.protocol import PRESETS
from tests import ROOT

PAGE = ROOT / "docs" / "references.md"


def _rows() -> list[list[str]]:
    text = PAGE.read_text()
    table = text.split("## The matrix", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("| preset") or line.startswith("|---"):
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_every_row_has_five_cells():
    rows = _rows()
    assert rows
    for row in rows:
        assert len(row) == 5, row


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_has_a_row(preset):
    named = {name for row in _rows() for name in _names(row[0])}
    assert preset in named, f"docs/references.md: no row for the preset {preset!r}"


@pytest.mark.parametrize(
    "integration",
    ["deteval.interop.COCOeval", "deteval analyze", "deteval.integrations.torchmetrics.MeanAveragePrecision"],
)
def test_every_integration_has_a_row(integration):
    assert any(integration in row[0] for row in _rows())


def _checked_by() -> list:
    out = []
    for row in _rows():
        for path in _names(row[4]):
            out.append(pytest.param(row, path, id=f"{_names(row[0])[0]}:{path}"))
    return out


@pytest.mark.parametrize(("row", "path"), _checked_by())
def test_every_named_test_exists_and_names_its_subject(row, path):
    file = ROOT / path
    assert file.is_file(), f"docs/references.md names {path}, which does not exist"
    text = file.read_text()
    subjects = _names(row[0])
    # a preset's test names the preset; an integration's test names what it drives
    keys = [s.split(":")[0].split(".")[-1].split(" ")[-1].lstrip("-") for s in subjects]
    assert any(key in text for key in keys), f"{path} does not mention any of {subjects}"


#: Reference packages and the distribution names whose versions the matrix states.
_PACKAGES = {
    "pycocotools": "pycocotools",
    "lvis": "lvis",
    "tidecv": "tidecv",
    "scikit-learn": "scikit-learn",
    "ultralytics": "ultralytics",
    "torchmetrics": "torchmetrics",
    "faster-coco-eval": "faster-coco-eval",
    "hotcoco": "hotcoco",
}


def _stated_versions() -> list:
    out = []
    text = PAGE.read_text()
    for label, dist in _PACKAGES.items():
        for version in sorted(set(re.findall(rf"\b{re.escape(label)} (\d+\.\d+(?:\.\d+)?)", text))):
            out.append(pytest.param(dist, version, id=f"{dist}-{version}"))
    return out


def _as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


@pytest.mark.parametrize(("dist", "stated"), _stated_versions())
def test_installed_reference_is_at_least_the_checked_version(dist, stated):
    try:
        installed = metadata.version(dist)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{dist} is not installed (the test extra installs it)")
    assert _as_tuple(installed) >= _as_tuple(stated), (
        f"docs/references.md says {dist} {stated} was checked; {installed} is installed: re-check and update"
    )
