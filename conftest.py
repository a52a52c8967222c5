"""Collection rules for the whole repository (the doctests of deteval/ included)."""

import importlib.util

import numpy as np
import pytest

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


#: numpy's print options as the session starts, before any test module is imported: Ultralytics (a
#: test oracle) sets a float formatter of its own for the whole process when it is imported, which
#: would change what every later doctest and docs example prints.
_PRINT_OPTIONS = np.get_printoptions()


@pytest.fixture(autouse=True)
def _numpy_print_options() -> None:
    """Each test (and doctest) starts from the session's numpy print options."""
    np.set_printoptions(**_PRINT_OPTIONS)
