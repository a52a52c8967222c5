"""The components of optimal LRP per class (:func:`deteval.lrp.optimal_lrp`), as one figure."""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.plot._base import as_document, fmt, is_undefined, new_figure, safe_label, style

__all__ = ["lrp_components", "lrp_shares"]

#: The additive parts of oLRP, in drawing order, with their bar colours.
PARTS = (("localisation", "C0"), ("FP", "C1"), ("FN", "C3"))
_BAR = 0.28


def lrp_shares(row: dict, tau: float) -> tuple[float, float, float] | None:
    """The parts of one class's oLRP that add up to it: localisation, FP, FN.

    With the counts at the optimum (``n_tp``, ``n_fp``, ``n_fn``) and ``Z = n_tp + n_fp + n_fn``::

        oLRP = n_tp * oLRP_loc / (1 - tau) / Z  +  n_fp / Z  +  n_fn / Z

    (the definition of LRP with ``sum(1 - IoU) = n_tp * oLRP_loc``). The reported components
    (``oLRP_loc`` the mean 1 - IoU, ``oLRP_FP`` = 1 - precision, ``oLRP_FN`` = 1 - recall) are
    rates of their own, which do not add up to oLRP; these shares do.

    Parameters
    ----------
    row : dict
        A ``per_class`` row of :class:`deteval.lrp.OptimalLRP` (value or JSON form).
    tau : float
        LRP's IoU threshold.

    Returns
    -------
    (float, float, float) or None
        None for a class without ground truth (no oLRP).

    Examples
    --------
    >>> row = {"oLRP": 0.6, "oLRP_loc": 0.1, "n_tp": 2, "n_fp": 1, "n_fn": 1}
    >>> [round(v, 6) for v in lrp_shares(row, 0.5)]  # (2 * 0.1 / 0.5 + 1 + 1) / 4 = 0.6
    [0.1, 0.25, 0.25]
    """
    if is_undefined(row.get("oLRP")) or row.get("n_tp", -1) < 0:
        return None
    n_tp, n_fp, n_fn = int(row["n_tp"]), int(row["n_fp"]), int(row["n_fn"])
    total = n_tp + n_fp + n_fn
    loc = 0.0 if n_tp == 0 or is_undefined(row.get("oLRP_loc")) else float(row["oLRP_loc"])
    return n_tp * loc / (1.0 - tau) / total, n_fp / total, n_fn / total


def lrp_components(lrp_doc: Any, *, top_k: int = 30) -> Any:
    """Per class: oLRP as stacked bars of its localisation, FP and FN parts; the optimal thresholds.

    Parameters
    ----------
    lrp_doc : OptimalLRP, AnalysisResult, BeyondAP or dict
        The value or its ``to_dict()`` document (a larger document: its ``"lrp"``).
    top_k : int
        With more classes than this, the ``top_k`` worst (highest oLRP) are drawn; the title
        says how many are left out. Classes without ground truth have no oLRP and are not drawn.

    Returns
    -------
    matplotlib.figure.Figure
        Left axes: one stacked bar per class (worst first, from the top), whose three segments
        are :func:`lrp_shares` (they add up to the class's oLRP; the tick labels on the right
        give oLRP and the reported components ``loc`` / ``FP`` / ``FN``). Right axes, sharing
        the classes: each class's LRP-optimal confidence threshold (a dot; none when the class
        has no true positive). The title states moLRP and its components.

    Raises
    ------
    ConfigError
        Not an LRP document, or ``top_k`` below 1.

    Examples
    --------
    >>> doc = {"tau": 0.5, "area": "all", "max_dets": 100, "moLRP": 0.6, "moLRP_loc": 0.1,
    ...        "moLRP_FP": 1 / 3, "moLRP_FN": 1 / 3,
    ...        "per_class": [{"category_id": 1, "name": "a", "oLRP": 0.6, "oLRP_loc": 0.1,
    ...                       "oLRP_FP": 1 / 3, "oLRP_FN": 1 / 3, "threshold": 0.7,
    ...                       "n_tp": 2, "n_fp": 1, "n_fn": 1}]}
    >>> fig = lrp_components(doc)
    >>> [round(float(p.get_width()), 6) for p in fig.axes[0].patches]
    [0.1, 0.25, 0.25]
    >>> fig.axes[1].lines[0].get_xdata().tolist()
    [0.7]
    """
    doc = as_document(lrp_doc, what="lrp_components", key="lrp")
    if "per_class" not in doc or "moLRP" not in doc or "tau" not in doc:
        raise ConfigError(
            f"lrp_components: expected an optimal LRP document (keys moLRP, tau, per_class), found "
            f"keys {sorted(doc)[:8]}"
        )
    if int(top_k) < 1:
        raise ConfigError(f"lrp_components: top_k: expected a positive integer, found {top_k!r}")
    tau = float(doc["tau"])
    scored = [(row, lrp_shares(row, tau)) for row in doc["per_class"]]
    defined = [(row, s) for row, s in scored if s is not None]
    n_undefined = len(scored) - len(defined)
    # worst first (highest oLRP), ties in the document's order
    order = sorted(range(len(defined)), key=lambda i: (-float(defined[i][0]["oLRP"]), i))
    shown = [defined[i] for i in order[: int(top_k)]]
    n_left = len(defined) - len(shown)
    with style():
        fig = new_figure(8.0, _BAR * max(len(shown), 1) + 1.6)
        grid = fig.add_gridspec(1, 2, width_ratios=[3, 1])
        ax = fig.add_subplot(grid[0, 0])
        y = np.arange(len(shown))[::-1].astype(float)
        left = np.zeros(len(shown))
        for j, (name, colour) in enumerate(PARTS):
            widths = np.array([s[j] for _, s in shown], dtype=float)
            ax.barh(y, widths, left=left, height=0.7, color=colour, label=name)
            left = left + widths
        ax.set_yticks(y, [safe_label(row["name"]) for row, _ in shown])
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"oLRP (tau {fmt(tau, 2)}): its parts, which add up to it")
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3, frameon=False, fontsize=8)
        notes = ax.secondary_yaxis("right")
        notes.set_yticks(
            y,
            [
                f"{fmt(row['oLRP'])} (loc {fmt(row.get('oLRP_loc'))}, FP {fmt(row.get('oLRP_FP'))}, "
                f"FN {fmt(row.get('oLRP_FN'))})"
                for row, _ in shown
            ],
        )
        notes.tick_params(length=0)
        thresholds = fig.add_subplot(grid[0, 1], sharey=ax)
        for yi, (row, _) in zip(y, shown):
            t = row.get("threshold")
            if not is_undefined(t):
                thresholds.plot([float(t)], [yi], marker="o", color="C2", linestyle="none")
                thresholds.annotate(
                    fmt(t), (float(t), yi), xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7
                )
        thresholds.set_xlim(0, 1)
        thresholds.set_xlabel("optimal threshold")
        thresholds.tick_params(labelleft=False)
        if not len(shown):
            ax.text(0.5, 0.5, "no class with ground truth", ha="center", va="center", transform=ax.transAxes)
        left_out = []
        if n_left:
            left_out.append(f"{n_left} better classes not drawn")
        if n_undefined:
            left_out.append(f"{n_undefined} without ground truth")
        max_dets = doc.get("max_dets")
        fig.suptitle(
            f"Optimal LRP (area {doc.get('area', 'all')}, maxDets {max_dets or 'all'}): "
            f"moLRP {fmt(doc.get('moLRP'))} (loc {fmt(doc.get('moLRP_loc'))}, FP "
            f"{fmt(doc.get('moLRP_FP'))}, FN {fmt(doc.get('moLRP_FN'))})"
            + (f"\n{'; '.join(left_out)}" if left_out else "")
        )
    return fig
