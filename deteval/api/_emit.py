"""Python warnings from the messages the values carry (the front door's one way to warn).

The functions of :mod:`deteval.api` return values whose ``warnings`` / ``notes`` list what was
noticed; :func:`_emit` also emits each as a Python warning, and raises one exception carrying every
message of the batch when a filter makes the category an error (``--strict``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from deteval.errors import InputWarning, UndefinedMetricWarning


def _emit(messages: Sequence[str], category: type[Warning], *, stacklevel: int) -> None:
    """Warn once per message; when a filter makes ``category`` an error, raise one with all of them.

    ``stacklevel`` counts from the caller of this function (2: the caller's caller).
    """
    refused = []
    for text in messages:
        try:
            warnings.warn(text, category, stacklevel=stacklevel + 1)
        except category:
            refused.append(text)
    if refused:
        raise category(*refused)


def _emit_result_warnings(messages: Sequence[str], notes: Sequence[str], *, stacklevel: int) -> None:
    _emit(messages, InputWarning, stacklevel=stacklevel + 1)
    _emit(notes, UndefinedMetricWarning, stacklevel=stacklevel + 1)
