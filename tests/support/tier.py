"""Which tier runs: the fast one (``-m "not slow"``) or the full suite (docs/testing.md)."""

from __future__ import annotations

import os

import pytest


def is_fast_tier(config: pytest.Config) -> bool:
    """The fast tier: ``DETEVAL_TEST_TIER=fast``, or ``-m`` deselecting ``slow`` (``full`` overrides)."""
    tier = os.environ.get("DETEVAL_TEST_TIER", "")
    if tier in ("fast", "full"):
        return tier == "fast"
    return "not slow" in (config.getoption("markexpr", "") or "")
