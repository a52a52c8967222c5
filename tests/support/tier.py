"""Which tier runs: the fast one (``-m "not slow"``) or the full suite (docs/testing.md)."""

from __future__ import annotations

import os

import pytest

#: Hypothesis examples per property in the fast tier (the full suite keeps each test's own count).
FAST_MAX_EXAMPLES = 10


def is_fast_tier(config: pytest.Config) -> bool:
    """The fast tier: ``DETEVAL_TEST_TIER=fast``, or ``-m`` deselecting ``slow`` (``full`` overrides)."""
    tier = os.environ.get("DETEVAL_TEST_TIER", "")
    if tier in ("fast", "full"):
        return tier == "fast"
    return "not slow" in (config.getoption("markexpr", "") or "")


def examples(config: pytest.Config, full: int) -> int:
    """A property's example count: ``full`` in the full suite, at most FAST_MAX_EXAMPLES in the fast tier.

    For a ``@given`` defined inside a test (tests/conftest.py caps only the test functions' own).
    """
    return min(full, FAST_MAX_EXAMPLES) if is_fast_tier(config) else full
