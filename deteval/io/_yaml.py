"""YAML safety of the format readers: the one policy of :mod:`deteval._safe_yaml` (re-exported)."""

from __future__ import annotations

from deteval._safe_yaml import duplicate_key, duplicate_key_message, find_alias

__all__ = ["duplicate_key", "duplicate_key_message", "find_alias"]
