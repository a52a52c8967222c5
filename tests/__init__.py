"""deteval's test suites; ``ROOT`` is the repository root (fixtures/, docs/, README.md)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
