"""Exceptions and warnings raised by deteval.

Every message says where (file, record, ids), what was expected and what was found, e.g.
``dt.json: detection #17 (image_id=42): bbox has 5 numbers; expected 4 [x, y, w, h]``.
"""

from __future__ import annotations

__all__ = [
    "DetevalError",
    "InputError",
    "ConfigError",
    "DetevalWarning",
    "UndefinedMetricWarning",
    "InputWarning",
]


class DetevalError(Exception):
    """Base class of every error deteval raises on purpose."""


class InputError(DetevalError, ValueError):
    """Ground truth or detections that cannot be scored as given (CLI exit code 3)."""


class ConfigError(DetevalError, ValueError):
    """A protocol, a YAML config or an option that is invalid (CLI exit code 3)."""


class DetevalWarning(UserWarning):
    """Base class of deteval's warnings."""


class UndefinedMetricWarning(DetevalWarning):
    """A metric is undefined for the input (e.g. a class without ground truth)."""


class InputWarning(DetevalWarning):
    """Input that a reference tool accepts, scored as it does, but worth knowing about."""
