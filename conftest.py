"""Collection rules for the whole repository (the doctests of deteval/ included)."""

import importlib.util

#: The torchmetrics ``Metric`` subclass cannot be imported (so its doctests not collected)
#: without torch and torchmetrics, which are optional.
collect_ignore = (
    ["deteval/integrations/torchmetrics/_metric.py"]
    if any(importlib.util.find_spec(name) is None for name in ("torch", "torchmetrics"))
    else []
)
#: The plot extra's doctests draw with matplotlib, which the core never needs.
if importlib.util.find_spec("matplotlib") is None:
    collect_ignore.append("deteval/plot")
