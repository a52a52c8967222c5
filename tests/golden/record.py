"""Record the CLI's outputs on the fixtures (tests/golden/commands.txt) as the golden files.

Run from the repository root only for a deliberate change of output, and say why in CHANGELOG.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.golden.runner import GOLDEN, commands, run  # noqa: E402


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for old in GOLDEN.glob("*.txt"):
        old.unlink()
    for index, argv in enumerate(commands()):
        GOLDEN.joinpath(f"{index:03d}.txt").write_text(run(argv), encoding="utf-8")


if __name__ == "__main__":
    main()
