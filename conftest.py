"""Collection rules for the whole repository (the doctests of deteval/ included)."""

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

_ROOT = Path(__file__).parent

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

#: Doctests the fast tier does not collect: collecting a module's doctests imports the module, and
#: the torchmetrics adapter's package imports torch and torchmetrics when they are installed (about
#: 9 s of CPU in every process, whichever tests it then runs). The fast tier checks the same
#: behaviour in tests/unit/test_torchmetrics_metric.py (the numpy class's numbers, the float32
#: thresholds, ``forward`` on a batch), in one process; the full suite runs these doctests.
_NOT_IN_FAST_TIER = ("deteval/integrations/torchmetrics",)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In the fast tier, do not import the modules above for their doctests."""
    from tests.support.tier import is_fast_tier

    if collection_path.is_relative_to(_ROOT) and is_fast_tier(config):
        if collection_path.relative_to(_ROOT).as_posix().startswith(_NOT_IN_FAST_TIER):
            return True
    return None


#: numpy's print options as the session starts, before any test module is imported: Ultralytics (a
#: test oracle) sets a float formatter of its own for the whole process when it is imported, which
#: would change what every later doctest and docs example prints.
_PRINT_OPTIONS = np.get_printoptions()


@pytest.fixture(autouse=True)
def _numpy_print_options() -> None:
    """Each test (and doctest) starts from the session's numpy print options."""
    np.set_printoptions(**_PRINT_OPTIONS)


#: Doctests whose output is names or a flag, never a pixel: placeholder figures in the fast tier
#: (tests/support/figures.py; docs/testing.md). The full suite draws them.
_NO_PIXEL_DOCTESTS = frozenset({"deteval.plot.files.plot_all", "deteval.plot.html.write_report"})


@pytest.fixture(autouse=True)
def _placeholder_figures_in_fast_doctests(request: pytest.FixtureRequest) -> Iterator[None]:
    """In the fast tier, the doctests above build their figures but do not draw them."""
    if request.node.name not in _NO_PIXEL_DOCTESTS:
        yield
        return
    from tests.support.figures import no_drawing_in_fast_tier

    with no_drawing_in_fast_tier(request.config):
        yield
