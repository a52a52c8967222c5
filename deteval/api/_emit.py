"""Python warnings from the messages the values carry (the front door's one way to warn).

The functions of :mod:`deteval.api` return values whose ``warnings`` / ``notes`` list what was
noticed; :func:`_emit` also emits each as a Python warning, and raises one exception carrying every
message of the batch when a filter makes the category an error (``--strict``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from deteval.errors import InputWarning, UndefinedMetricWarning

#: (category, text) of every warning this process has shown (see :func:`_emit`).
_SHOWN: set[tuple[type[Warning], str]] = set()


def _action(category: type[Warning], text: str) -> str:
    """The action of the first filter in :data:`warnings.filters` that applies to ``text``.

    Filters restricted to a module or a line are passed over (the front door's warnings point at
    the caller's line, which differs from call to call).
    """
    for action, message, filtered, module, lineno in warnings.filters:
        if module is not None or lineno:
            continue
        if issubclass(category, filtered) and (message is None or message.match(text)):
            return action
    return str(getattr(warnings, "defaultaction", "default"))


def _emit(messages: Sequence[str], category: type[Warning], *, stacklevel: int) -> None:
    """Warn once per message and process; when a filter makes ``category`` an error, raise one with all.

    A warning already shown in this process is not shown again from another line (a notebook's
    every cell is another "line": Python's own once-per-location rule would repeat the same note on
    every call), unless a filter asks for ``always`` (or ``error``: ``--strict`` refuses every time).

    ``stacklevel`` counts from the caller of this function (2: the caller's caller).
    """
    refused = []
    for text in messages:
        key = (category, text)
        if key in _SHOWN and _action(category, text) not in ("always", "error"):
            continue
        _SHOWN.add(key)
        try:
            warnings.warn(text, category, stacklevel=stacklevel + 1)
        except category:
            refused.append(text)
    if refused:
        raise category(*refused)


def _emit_result_warnings(messages: Sequence[str], notes: Sequence[str], *, stacklevel: int) -> None:
    _emit(messages, InputWarning, stacklevel=stacklevel + 1)
    _emit(notes, UndefinedMetricWarning, stacklevel=stacklevel + 1)
