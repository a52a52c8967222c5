"""Figures of deteval's result values, and one self-contained HTML report (the ``plot`` extra).

``pip install "deteval[plot]"`` installs matplotlib; the core never imports this package.
Every function takes the values (or their ``to_dict()`` JSON documents) the library returns and
gives a :class:`matplotlib.figure.Figure` built without pyplot (no global state, no window);
:func:`figure_bytes` turns one into PNG or SVG bytes that repeat exactly run after run.

>>> import warnings, deteval, deteval.plot
>>> with warnings.catch_warnings():  # the fixture's class 'bird' has no ground truth: a note
...     warnings.simplefilter("ignore", deteval.UndefinedMetricWarning)
...     r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "voc2007")
>>> fig = deteval.plot.per_class_ap(r)
>>> deteval.plot.figure_bytes(fig, "svg") == deteval.plot.figure_bytes(deteval.plot.per_class_ap(r), "svg")
True
"""

from deteval.plot._base import PlotDependencyError, require_matplotlib

require_matplotlib()

from deteval.plot._base import FORMATS, atomic_write, figure_bytes  # noqa: E402 - after the matplotlib check
from deteval.plot.bars import error_breakdown, explain_waterfall, forest, per_class_ap  # noqa: E402 - after the matplotlib check
from deteval.plot.curves import f1_curves, pr_curves, pr_overlay  # noqa: E402 - after the matplotlib check
from deteval.plot.files import plot_all  # noqa: E402 - after the matplotlib check
from deteval.plot.html import render_report, write_report  # noqa: E402 - after the matplotlib check
from deteval.plot.lrp import lrp_components  # noqa: E402 - after the matplotlib check
from deteval.plot.matrix import confusion_matrix, decomposition_curves  # noqa: E402 - after the matplotlib check
from deteval.plot.reliability import reliability_diagram  # noqa: E402 - after the matplotlib check

__all__ = [
    "PlotDependencyError",
    "pr_curves",
    "f1_curves",
    "pr_overlay",
    "per_class_ap",
    "confusion_matrix",
    "error_breakdown",
    "decomposition_curves",
    "reliability_diagram",
    "lrp_components",
    "explain_waterfall",
    "forest",
    "figure_bytes",
    "atomic_write",
    "plot_all",
    "write_report",
    "render_report",
    "FORMATS",
]
