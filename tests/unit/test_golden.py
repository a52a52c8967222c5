"""The CLI's outputs on every fixture are byte-identical to the recorded golden files.

A refactor must not move a byte; a deliberate change re-records them (tests/golden/record.py) and
says why in CHANGELOG.md.
"""

from __future__ import annotations

import pytest

from tests.golden.runner import GOLDEN, commands, run

CASES = list(enumerate(commands()))


@pytest.mark.parametrize(("index", "argv"), CASES, ids=[" ".join(a[:1] + a[2:6]) for _, a in CASES])
def test_cli_output_is_byte_identical_to_the_golden_file(index: int, argv: list[str]) -> None:
    expected = GOLDEN.joinpath(f"{index:03d}.txt").read_text(encoding="utf-8")
    assert run(argv) == expected
