"""Bar-like figures: per-class AP, TIDE error breakdown, the explain waterfall, forest plots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.evaluate import EvalResult
from deteval.plot._base import as_document, fmt, is_undefined, new_figure, safe_label, style

__all__ = ["per_class_ap", "error_breakdown", "explain_waterfall", "forest", "ERROR_NAMES"]

#: Readable names of TIDE's error types (the document's keys, in tidecv's order).
ERROR_NAMES = {
    "cls": "classification",
    "loc": "localization",
    "both": "cls + loc",
    "dupe": "duplicate",
    "bkg": "background",
    "miss": "missed GT",
    "false_pos": "false positives",
    "false_neg": "false negatives",
}
_MAIN = ("cls", "loc", "both", "dupe", "bkg", "miss")
_SPECIAL = ("false_pos", "false_neg")
_BAR = 0.26  # inches per bar row


def per_class_ap(result: EvalResult, *, top_k: int = 30) -> Any:
    """Per-class AP as sorted horizontal bars, each annotated with its ground-truth count.

    Parameters
    ----------
    result : EvalResult
        Bars come from ``result.per_class`` (the same AP as the tables).
    top_k : int
        With more classes than this, the ``top_k`` highest-AP classes are drawn and one
        ``others`` bar summarises the rest (their mean AP, a whisker from their lowest to their
        highest AP). Classes without ground truth (AP undefined) sort last.

    Returns
    -------
    matplotlib.figure.Figure
        One axes; bar ``i`` is labelled with the class name (``get_yticklabels``).

    Examples
    --------
    >>> import deteval
    >>> r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "coco")
    >>> fig = per_class_ap(r)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['person', 'dog', 'cat', 'bird']
    """
    if int(top_k) < 1:
        raise ConfigError(f"per_class_ap: top_k: expected a positive integer, found {top_k!r}")
    rows = result.per_class
    ap = np.array([np.nan if is_undefined(c["AP"]) else c["AP"] for c in rows], dtype=np.float64)
    order = np.lexsort((np.arange(len(ap)), -np.nan_to_num(ap, nan=-1.0)))  # AP descending, n/a last
    shown = order[:top_k]
    rest = order[top_k:]
    n_bars = len(shown) + (1 if len(rest) else 0)
    with style():
        fig = new_figure(7.5, _BAR * n_bars + 1.3)
        ax = fig.add_subplot()
        y = np.arange(n_bars)[::-1]
        values = [0.0 if np.isnan(ap[k]) else ap[k] for k in shown]
        labels = [safe_label(rows[k]["name"]) for k in shown]
        ax.barh(y[: len(shown)], values, height=0.7, color="C0", label="AP")
        # Each bar's AP and GT count as a right-hand tick label: beside the axes, whose x runs
        # from 0 to 1 exactly (AP is at most 1), and counted by the constrained layout.
        notes = [f"{fmt(ap[k]) if not np.isnan(ap[k]) else 'n/a'}  ({rows[k]['num_gt']} GT)" for k in shown]
        if len(rest):
            rest_ap = ap[rest][~np.isnan(ap[rest])]
            n_undefined = int(np.isnan(ap[rest]).sum())
            mean = float(rest_ap.mean()) if len(rest_ap) else 0.0
            ax.barh([y[-1]], [mean], height=0.7, color="0.65", hatch="//", label="others (mean)")
            if len(rest_ap):
                ax.errorbar(
                    [mean],
                    [y[-1]],
                    xerr=[[mean - rest_ap.min()], [rest_ap.max() - mean]],
                    fmt="none",
                    ecolor="0.25",
                    capsize=3,
                    lw=1,
                )
            gt_rest = sum(rows[k]["num_gt"] for k in rest)
            notes.append(
                f"mean {fmt(mean if len(rest_ap) else None)}  ({gt_rest} GT"
                + (f", {n_undefined} without GT" if n_undefined else "")
                + ")"
            )
            labels.append(f"others ({len(rest)} classes)")
        ax.set_yticks(y, labels)
        right = ax.secondary_yaxis("right")
        right.set_yticks(y, notes, fontsize=7.5)
        right.tick_params(length=0)
        ax.set_xlim(0, 1.0)
        ax.set_xticks(np.linspace(0, 1, 6))
        ax.set_ylim(-0.7, n_bars - 0.3)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(
            f"AP ({safe_label(result.protocol.name)}: per class, "
            f"{'IoU-averaged, ' if len(result.protocol.iou_thresholds) > 1 else ''}"
            f"area {result.protocol.area_names[0]})"
        )
        head = f"Per-class AP, {len(rows)} classes"
        if len(rest):
            head += f": the {len(shown)} highest shown, {len(rest)} summarised as 'others'"
        ax.set_title(head, loc="left")
    return fig


def _tide_doc(value: Any) -> dict:
    doc = as_document(value, what="error_breakdown", key="errors")
    if "main" not in doc:
        raise ConfigError(
            f"error_breakdown: expected a TIDE errors document (keys main, special, ap), found "
            f"keys {sorted(doc)[:8]}"
        )
    return doc


def error_breakdown(tide_doc: Any) -> Any:
    """Bars of TIDE's main and special dAP (how much AP each error type costs).

    Parameters
    ----------
    tide_doc : TideErrors, AnalysisResult or dict
        The value or its ``to_dict()`` document (an analysis document: its ``"errors"``).

    Returns
    -------
    matplotlib.figure.Figure
        Two axes: six main error types, two special ones; undefined values are drawn as
        ``n/a`` without a bar.

    Examples
    --------
    >>> doc = {"main": {"cls": .01, "loc": .05, "both": 0., "dupe": 0., "bkg": .02, "miss": .03},
    ...        "special": {"false_pos": .04, "false_neg": .08}, "ap": .6, "mode": "tidecv",
    ...        "thresholds": {"foreground": .5, "background": .1}}
    >>> fig = error_breakdown(doc)
    >>> len(fig.axes[0].patches), len(fig.axes[1].patches)
    (6, 2)
    """
    doc = _tide_doc(tide_doc)
    thresholds = doc.get("thresholds", {})
    with style():
        fig = new_figure(8.5, 3.4)
        grid_spec = fig.add_gridspec(1, 2, width_ratios=[3, 1.2])
        for g, (keys, title, color) in enumerate(
            ((_MAIN, "main errors", "C3"), (_SPECIAL, "special errors", "C7"))
        ):
            ax = fig.add_subplot(grid_spec[0, g])
            values = [doc.get("main" if g == 0 else "special", {}).get(k) for k in keys]
            heights = [0.0 if is_undefined(v) else float(v) for v in values]
            x = np.arange(len(keys))
            bars = ax.bar(x, heights, color=color, width=0.65)
            top = max([h for h in heights] + [1e-3])
            for bar, v in zip(bars, values):
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    bar.get_height() + top * 0.02,
                    fmt(v),
                    ha="center",
                    va="bottom",
                    fontsize=7.5,
                )
            ax.set_xticks(x, [ERROR_NAMES[k] for k in keys], rotation=25, ha="right")
            ax.set_ylim(min(0.0, min(heights) * 1.15), top * 1.18)
            ax.grid(axis="x", visible=False)
            ax.set_title(title, loc="left")
            if g == 0:
                ax.set_ylabel("dAP (AP gained if fixed)")
        mode = doc.get("mode", "?")
        fg = thresholds.get("foreground")
        bg = thresholds.get("background")
        fig.suptitle(
            f"TIDE error breakdown: AP {fmt(doc.get('ap'))} (mode {safe_label(mode)}, "
            f"foreground {fmt(fg, 2)}, background {fmt(bg, 2)})"
        )
    return fig


def _explain_doc(value: Any) -> dict:
    doc = as_document(value, what="explain_waterfall")
    if "steps" not in doc or "start" not in doc:
        raise ConfigError(
            f"explain_waterfall: expected an Explanation or its to_dict() (keys from, to, start, "
            f"end, steps), found keys {sorted(doc)[:8]}"
        )
    return doc


def explain_waterfall(explanation: Any) -> Any:
    """The ``compare --explain`` walk from A's number to B's as a waterfall.

    Parameters
    ----------
    explanation : Explanation or dict
        :func:`deteval.explain` 's value or its ``to_dict()``.

    Returns
    -------
    matplotlib.figure.Figure
        Bars: A's value, one floating bar per step (green up, red down, grey for a step that
        cannot move the number), B's value. The y axis is zoomed on the values (it need not
        start at 0; the axis label says so).

    Examples
    --------
    >>> doc = {"from": "voc2007", "to": "voc2010", "measure": "mAP", "start": .45, "end": .43,
    ...        "steps": [{"step": "interpolation", "change": -.02, "value": .43, "affects_measure": True}]}
    >>> [t.get_text() for t in explain_waterfall(doc).axes[0].get_xticklabels()]
    ['voc2007', 'interpolation', 'voc2010']
    """
    doc = _explain_doc(explanation)
    steps = doc["steps"]
    # JSON values: a number, or None / NaN when undefined (each use is behind is_undefined)
    start: Any = doc.get("start")
    end: Any = doc.get("end")
    values = [v for v in [start, end, *(s.get("value") for s in steps)] if not is_undefined(v)]
    lo = min(values) if values else 0.0
    hi = max(values) if values else 1.0
    span = max(hi - lo, 0.02)
    floor = max(0.0, lo - 0.6 * span)
    labels = [safe_label(doc.get("from", "A"), limit=24)]
    labels += [safe_label(s["step"], limit=24) for s in steps]
    labels.append(safe_label(doc.get("to", "B"), limit=24))
    with style():
        fig = new_figure(max(5.0, 1.1 * len(labels) + 1.5), 4.2)
        ax = fig.add_subplot()
        x = np.arange(len(labels))
        for xi, v in ((0, start), (len(labels) - 1, end)):
            if not is_undefined(v):
                ax.bar([xi], [v - floor], bottom=floor, color="C0", width=0.6)
                ax.text(
                    xi, v + 0.02 * span, fmt(v, 4), ha="center", va="bottom", fontsize=8, fontweight="bold"
                )
            else:
                ax.text(xi, floor + 0.1 * span, "n/a", ha="center", fontsize=8)
        previous = start
        for i, s in enumerate(steps, start=1):
            change, value = s.get("change"), s.get("value")
            if is_undefined(change) or is_undefined(value) or is_undefined(previous):
                ax.text(i, floor + 0.1 * span, "n/a", ha="center", fontsize=8)
                previous = value
                continue
            color = (
                "0.6" if not s.get("affects_measure", True) or change == 0 else ("C2" if change > 0 else "C3")
            )
            height = change if change != 0 else span * 0.004
            ax.bar([i], [height], bottom=previous, color=color, width=0.6)
            ax.plot([i - 1 + 0.3, i - 0.3], [previous, previous], color="0.3", lw=0.7)
            label = fmt(change, 4, sign=True) + ("" if s.get("affects_measure", True) else " *")
            ax.text(i, max(previous, value) + 0.02 * span, label, ha="center", va="bottom", fontsize=8)
            previous = value
        if steps and not is_undefined(previous):
            ax.plot([len(labels) - 1.7, len(labels) - 1.3], [previous, previous], color="0.3", lw=0.7)
        ax.set_xticks(
            x, labels, rotation=20 if len(labels) > 5 else 0, ha="right" if len(labels) > 5 else "center"
        )
        ax.set_ylim(floor, hi + 0.25 * span)
        ax.grid(axis="x", visible=False)
        measure = safe_label(doc.get("measure", "value"))
        ax.set_ylabel(measure + (f" (axis from {floor:.3f})" if floor > 0 else ""))
        total = None if is_undefined(start) or is_undefined(end) else end - start
        ax.set_title(
            f"{labels[0]} -> {labels[-1]}: {measure} {fmt(start, 4)} -> {fmt(end, 4)} "
            f"(total {fmt(total, 4, sign=True)})",
            loc="left",
        )
    return fig


def _bootstrap_doc(value: Any) -> dict:
    doc = as_document(value, what="forest")
    if "results" not in doc:
        raise ConfigError(
            f"forest: expected a bootstrap document (keys bootstrap, results[, comparisons]), "
            f"found keys {sorted(doc)[:8]}"
        )
    return doc


def forest(bootstrap_doc: Any, *, metrics: Sequence[str] | None = None) -> Any:
    """Bootstrap intervals per metric and detector as a forest plot, and the paired differences.

    Parameters
    ----------
    bootstrap_doc : BootstrapResult, ComparisonResult or dict
        The value or its ``to_dict()`` (``results[*].metrics`` and ``metrics_ci``;
        ``comparisons`` when detectors were compared).
    metrics : sequence of str, optional
        Metrics to draw (default: every metric with an interval, in the document's order).

    Returns
    -------
    matplotlib.figure.Figure
        One axes of intervals (one row per metric and detector) and, with comparisons, a
        second axes of ``B - A`` differences with a line at 0.

    Examples
    --------
    >>> doc = {"bootstrap": {"n": 100, "seed": 0, "ci": 0.95, "method": "percentile"},
    ...        "results": [{"detector": "A", "protocol": "voc2010", "metrics": {"mAP": .5},
    ...                     "metrics_ci": {"mAP": [.4, .6]}},
    ...                    {"detector": "B", "protocol": "voc2010", "metrics": {"mAP": .55},
    ...                     "metrics_ci": {"mAP": [.45, .65]}}],
    ...        "comparisons": [{"a": "A", "b": "B", "protocol": "voc2010", "metric": "mAP",
    ...                         "difference": .05, "ci": [.01, .09], "p_value": .02}]}
    >>> fig = forest(doc)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['mAP  A', 'mAP  B']
    """
    doc = _bootstrap_doc(bootstrap_doc)
    results = doc["results"]
    comparisons = doc.get("comparisons", [])
    settings = doc.get("bootstrap", {})
    if metrics is None:
        metrics = _forest_default_metrics(results)
    protocols = {r.get("protocol") for r in results}
    rows = _forest_interval_rows(results, metrics, several_protocols=len(protocols) > 1)
    n_panels = 2 if comparisons else 1
    height = _BAR * (len(rows) + (len(comparisons) + 2 if comparisons else 0)) + 1.6
    with style():
        fig = new_figure(8.0, max(2.6, height))
        grid_spec = fig.add_gridspec(
            n_panels, 1, height_ratios=[len(rows) + 1, len(comparisons) + 1][:n_panels]
        )
        ax = fig.add_subplot(grid_spec[0, 0])
        _forest_rows(ax, [r[:3] for r in rows], colors=[r[3] % 10 for r in rows])
        if len(results) > 1:  # a rule between the metrics' groups
            for i in range(1, len(rows)):
                if rows[i][4] != rows[i - 1][4]:
                    ax.axhline(len(rows) - i - 0.5, color="0.8", lw=0.8)
        ax.set_xlabel(f"value (point estimate and {settings.get('method', 'percentile')} interval)")
        level = settings.get("ci")
        ax.set_title(
            f"Bootstrap intervals ({fmt(level * 100 if level is not None else None, 0)}%, "
            f"n = {settings.get('n', '?')}, seed {settings.get('seed', '?')}, resampling images)",
            loc="left",
        )
        if comparisons:
            cx = fig.add_subplot(grid_spec[1, 0])
            crows = _forest_difference_rows(comparisons, several_protocols=len(protocols) > 1)
            _forest_rows(
                cx,
                [r[:3] for r in crows],
                colors=[3] * len(crows),
                notes=[f"p = {fmt(r[3], 3)}" for r in crows],
            )
            cx.axvline(0.0, color="0.2", lw=0.8)
            cx.set_xlabel("paired difference B - A (0: no difference)")
            cx.set_title("Paired differences", loc="left")
    return fig


def _forest_default_metrics(results: list) -> list:
    """Every metric with an interval (else every metric) of the results, in first-seen order."""
    metrics: list = []
    for r in results:
        for m in r.get("metrics_ci", {}) or r.get("metrics", {}):
            if m not in metrics:
                metrics.append(m)
    return metrics


def _forest_interval_rows(results: list, metrics: Sequence[str], *, several_protocols: bool) -> list:
    """One (label, point, interval, result index, metric) row per metric and result that has it.

    Raises
    ------
    ConfigError
        When no result has any of ``metrics``.
    """
    rows = []
    for m in metrics:
        for r in results:
            if m not in r.get("metrics", {}):
                continue
            name = safe_label(r.get("detector", "?"), limit=28)
            if several_protocols:
                name += f" ({safe_label(r.get('protocol'), limit=20)})"
            rows.append(
                (f"{m}  {name}", r["metrics"][m], (r.get("metrics_ci") or {}).get(m), results.index(r), m)
            )
    if not rows:
        raise ConfigError(
            f"forest: metrics: expected metrics of the document "
            f"{sorted({m for r in results for m in r.get('metrics', {})})}, found {list(metrics)}"
        )
    return rows


def _forest_difference_rows(comparisons: list, *, several_protocols: bool) -> list:
    """One (label, difference, interval, p-value) row per paired comparison."""
    return [
        (
            f"{safe_label(c['b'], limit=20)} - {safe_label(c['a'], limit=20)}  {c['metric']}"
            + (f" ({safe_label(c['protocol'], limit=16)})" if several_protocols else ""),
            c.get("difference"),
            c.get("ci"),
            c.get("p_value"),
        )
        for c in comparisons
    ]


def _forest_rows(ax: Any, rows: list, *, colors: Sequence[int], notes: Sequence[str] = ()) -> None:
    """One row per (label, point, [lo, hi]); the value (and ``notes``) written right of the axes."""
    y = np.arange(len(rows))[::-1]
    for i, (yy, (_, point, interval)) in enumerate(zip(y, rows)):
        color = f"C{colors[i]}"
        has_interval = interval is not None and not any(is_undefined(v) for v in interval)
        if has_interval:
            ax.plot(interval, [yy, yy], color=color, lw=2.0, solid_capstyle="butt")
            ax.plot(interval, [yy, yy], ls="none", marker="|", ms=8, color=color)
        if not is_undefined(point):
            ax.plot([point], [yy], ls="none", marker="o", ms=5, color=color, mec="black", mew=0.5)
        text = fmt(point) + (f" [{fmt(interval[0])}, {fmt(interval[1])}]" if has_interval else "")
        if i < len(notes):
            text += f"  {notes[i]}"
        ax.text(1.01, yy, text, transform=ax.get_yaxis_transform(), va="center", fontsize=7.5)
    ax.set_yticks(y, [r[0] for r in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.grid(axis="y", visible=False)
