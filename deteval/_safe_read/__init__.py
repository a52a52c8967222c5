"""The one reading policy, below everything: files, text, JSON and YAML.

Every reader of a user's file goes through this package, so one set of rules holds for all of
them (docs/errors.md, "Special files and size caps" and "Encodings"):

* :mod:`~deteval._safe_read.files` -- access: a regular file only (folders, FIFOs, devices and
  sockets refused before reading), a size cap per kind (:data:`MAX_BYTES`), refused when it
  changes while read, recorded as an input (:mod:`~deteval._safe_read.log`); text is UTF-8 with a
  BOM skipped, compressed or UTF-16/32 files named with their remedy;
* :mod:`~deteval._safe_read.strict_json` -- JSON: no NaN/Infinity, no duplicate keys, at most
  :data:`MAX_DEPTH` levels;
* :mod:`~deteval._safe_read.safe_yaml` -- YAML: plain tags only, no aliases, no duplicate keys.

Errors name the file, the place (line, key path) and the remedy; the reader chooses their class
(:class:`~deteval.errors.InputError` for data, :class:`~deteval.errors.ConfigError` for
configuration). The format readers (:mod:`deteval.io`) turn what is read here into values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deteval._lazy import lazy_names
from deteval._safe_read.files import (
    BOM,
    MAX_BYTES,
    changed_error,
    check_unchanged,
    decode_text,
    file_state,
    line_of,
    not_text,
    open_regular,
    read_bytes,
    read_head,
    read_text,
)
from deteval._safe_read.log import ReadLog, note_folder, note_read, note_reads, recording_reads
from deteval._safe_read.strict_json import (
    MAX_DEPTH,
    count_json_keys,
    count_raw_keys,
    json_keys,
    loads_strict,
    not_json_text,
    read_json,
)

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from deteval._safe_read.safe_yaml import (
        duplicate_key,
        duplicate_key_message,
        find_alias,
        parse_yaml,
        read_yaml,
    )

__all__ = [
    "BOM",
    "MAX_BYTES",
    "MAX_DEPTH",
    "ReadLog",
    "changed_error",
    "check_unchanged",
    "count_json_keys",
    "count_raw_keys",
    "decode_text",
    "duplicate_key",
    "duplicate_key_message",
    "file_state",
    "find_alias",
    "json_keys",
    "line_of",
    "loads_strict",
    "not_json_text",
    "not_text",
    "note_folder",
    "note_read",
    "note_reads",
    "open_regular",
    "parse_yaml",
    "read_bytes",
    "read_head",
    "read_json",
    "read_text",
    "read_yaml",
    "recording_reads",
]

#: Names loaded from their module on first access (PEP 562): reading JSON inputs and scoring
#: under a shipped preset (parsed ahead, deteval/protocol/preset_cache.py) read no YAML.
_LAZY = dict.fromkeys(
    ("duplicate_key", "duplicate_key_message", "find_alias", "parse_yaml", "read_yaml"),
    "deteval._safe_read.safe_yaml",
)

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
