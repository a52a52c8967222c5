"""Write deteval/protocol/preset_cache.py: each shipped preset's bytes and its parsed mapping.

Run after editing a preset (tests/unit/test_lazy_imports.py fails while the table is stale):

    python scripts/make_preset_cache.py && ruff format deteval/protocol/preset_cache.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deteval.protocol.safe_yaml import parse_yaml  # noqa: E402

TARGET = ROOT / "deteval" / "protocol" / "preset_cache.py"

HEADER = '''"""The shipped presets' YAML, parsed ahead: scoring under a preset imports no YAML parser.

Generated from ``deteval/protocol/presets/*.yaml`` by ``scripts/make_preset_cache.py`` (do not
edit; tests/unit/test_lazy_imports.py fails while it is stale). A preset file whose bytes are
exactly those recorded here is read as the mapping recorded beside them; any other text (an
edited preset, a user's file) is parsed by :mod:`deteval.protocol.safe_yaml`. The YAML files stay
the one source: this table can be stale or absent, never a different protocol.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["parsed_preset"]


def parsed_preset(raw: bytes) -> Any:
    """The parsed mapping of a shipped preset whose bytes are exactly ``raw`` (a copy), else None.

    >>> parsed_preset(b"name: not a shipped preset") is None
    True
    """
    data = _PARSED.get(raw)
    return None if data is None else copy.deepcopy(data)


#: The exact bytes of each shipped preset file -> ``parse_yaml`` of its text.
_PARSED: dict[bytes, Any] = {
'''


def main() -> None:
    lines = [HEADER]
    for path in sorted((ROOT / "deteval" / "protocol" / "presets").glob("*.yaml")):
        raw = path.read_bytes()
        data = parse_yaml(raw.decode("utf-8-sig"), filename=str(path))
        lines.append(f"    # {path.name}\n    {raw!r}: {data!r},\n")
    lines.append("}\n")
    TARGET.write_text("".join(lines), encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
