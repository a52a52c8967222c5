"""The reliability diagram of :func:`deteval.calibration.calibration` (D-ECE)."""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.plot._base import as_document, fmt, is_undefined, new_figure, style

__all__ = ["reliability_diagram"]


def reliability_diagram(calibration_doc: Any) -> Any:
    """Fraction correct against mean confidence per confidence bin, with the detections per bin.

    Parameters
    ----------
    calibration_doc : Calibration, AnalysisResult or dict
        The value or its ``to_dict()`` document (an analysis document: its ``"calibration"``).

    Returns
    -------
    matplotlib.figure.Figure
        Top: one bar per confidence bin (its fraction correct; empty bins drawn as nothing) over
        the diagonal of perfect calibration, the gap to each bin's mean confidence marked;
        bottom: the detections per bin. The title gives the D-ECE.

    Raises
    ------
    ConfigError
        Not a calibration document.

    Examples
    --------
    >>> doc = {"D-ECE": 0.1, "iou_threshold": 0.5, "features": ["confidence"], "bins": [2],
    ...        "reliability": [{"lo": 0.0, "hi": 0.5, "count": 2, "confidence": 0.3, "precision": 0.0},
    ...                        {"lo": 0.5, "hi": 1.0, "count": 0, "confidence": None, "precision": None}]}
    >>> fig = reliability_diagram(doc)
    >>> len(fig.axes), len(fig.axes[1].patches)
    (2, 2)
    """
    doc = as_document(calibration_doc, what="reliability_diagram", key="calibration")
    if "reliability" not in doc:
        raise ConfigError(
            f"reliability_diagram: expected a calibration document (keys D-ECE, reliability), found "
            f"keys {sorted(doc)[:8]}"
        )
    rows = doc["reliability"]
    lo = np.array([r["lo"] for r in rows], dtype=float)
    hi = np.array([r["hi"] for r in rows], dtype=float)
    width, middle = hi - lo, (lo + hi) / 2
    precision = [r["precision"] for r in rows]
    confidence = [r["confidence"] for r in rows]
    with style():
        fig = new_figure(5.2, 5.6)
        grid = fig.add_gridspec(2, 1, height_ratios=[3, 1])
        ax = fig.add_subplot(grid[0, 0])
        ax.plot([0, 1], [0, 1], color="0.5", linestyle="--", linewidth=1, label="calibrated")
        heights = [0.0 if is_undefined(p) else float(p) for p in precision]
        ax.bar(
            lo, heights, width=width, align="edge", color="C0", edgecolor="white", label="fraction correct"
        )
        for x, p, c in zip(middle, precision, confidence):
            if not is_undefined(p) and not is_undefined(c):
                ax.plot([x, x], [p, c], color="C3", linewidth=2)
                ax.plot([x], [c], marker="o", color="C3", markersize=3)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_ylabel("fraction correct")
        ax.legend(loc="upper left", fontsize=8)
        counts = ax.figure.add_subplot(grid[1, 0], sharex=ax)
        counts.bar(lo, [r["count"] for r in rows], width=width, align="edge", color="C7", edgecolor="white")
        counts.set_xlabel("confidence")
        counts.set_ylabel("detections")
        iou = doc.get("iou_threshold")
        fig.suptitle(f"Reliability at IoU {fmt(iou, 2)}: D-ECE {fmt(doc.get('D-ECE'))}")
    return fig
