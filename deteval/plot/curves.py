"""Precision/recall curves and precision, recall and F1 against confidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.accumulate import recall_thresholds
from deteval.analysis import PRCurve, at_confidence, best_f1, pr_curve
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult
from deteval.plot._base import fmt, new_figure, safe_label, style
from deteval.plot._select import grid, resolve_thresholds, select_classes
from deteval.summary import mean_defined

__all__ = ["pr_curves", "f1_curves", "pr_overlay", "envelope", "mean_interpolated_curve"]

_MARKERS = ("o", "s", "D", "^", "v", "P")
_PANEL = 3.0  # inches per panel


def _area_index(result: EvalResult, area: str | None, where: str) -> tuple[str, int]:
    names = list(result.protocol.area_names)
    area = names[0] if area is None else area
    if area not in names:
        raise ConfigError(
            f"{where}: area: expected one of the protocol's area ranges {names}, found {area!r}"
        )
    return area, names.index(area)


def envelope(curve: PRCurve) -> tuple[np.ndarray, np.ndarray]:
    """The all-point (VOC2010+) precision envelope of a raw curve, as step corners.

    ``recall = [0, r_1, ..., r_n, 1]``, ``precision = [0, p_1, ..., p_n, 0]`` with each
    precision raised to the largest one at equal or higher recall (the devkit's ``VOCap``);
    precision ``precision[i]`` holds on ``(recall[i - 1], recall[i]]`` (``drawstyle="steps-pre"``),
    so the area under the steps is the all-point AP.

    Examples
    --------
    >>> import deteval
    >>> from deteval.analysis import pr_curve
    >>> r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "voc2010")
    >>> rec, prec = envelope(pr_curve(r, 2))
    >>> rec.tolist(), prec.tolist()
    ([0.0, 0.5, 0.5, 1.0], [1.0, 1.0, 0.5, 0.0])
    """
    recall = np.concatenate([[0.0], curve.recall, [1.0]])
    precision = np.concatenate([[0.0], curve.precision, [0.0]])
    # fmax: a raw precision that is NaN (nothing retrieved yet) takes the envelope's value there
    precision = np.fmax.accumulate(precision[::-1])[::-1]
    return recall, precision


def mean_interpolated_curve(
    result: EvalResult,
    threshold_index: int,
    area_index: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(recall, precision): the interpolated precision averaged over the classes with ground truth.

    Point-sampled protocols (101- and 11-point): the protocol's own precision array at its
    recall grid (``result.precision[t, :, :, a, -1]`` averaged over classes), whose mean is the
    AP at that threshold. All-point protocols have no grid: each class's envelope
    (:func:`envelope`) is sampled at 1001 recall values and averaged (a drawing of the mean
    envelope; its area approximates the mean AP to within the grid step).
    """
    if result.precision.shape[1] > 0:
        precision = result.precision[threshold_index, :, :, area_index, -1]
        defined = ~np.isnan(precision).all(axis=0)
        grid_recall = recall_thresholds(result.protocol)
        if not defined.any():
            return grid_recall, np.full(len(grid_recall), np.nan)
        return grid_recall, precision[:, defined].mean(axis=1)
    t = result.protocol.iou_thresholds[threshold_index]
    area = result.protocol.area_names[area_index]
    grid_recall = np.linspace(0.0, 1.0, 1001)
    curves = []
    for cid in result.category_ids:
        curve = pr_curve(result, cid, iou_threshold=t, area=area)
        if curve.n_positive:
            rec, prec = envelope(curve)
            curves.append(prec[np.searchsorted(rec, grid_recall, side="left")])
    if not curves:
        return grid_recall, np.full(len(grid_recall), np.nan)
    return grid_recall, np.mean(curves, axis=0)


def _threshold_label(t: float) -> str:
    return f"IoU {round(t, 4):g}"


def _draw_mean_panel(
    ax: Any,
    result: EvalResult,
    *,
    thresholds: Sequence[float],
    t_index: Sequence[int],
    colors: Sequence[str],
    a: int,
    handles: dict,
) -> list[str]:
    """Draw the mean interpolated curve per threshold on ``ax``; return the panel's notes.

    The first line of each label is recorded in ``handles`` (the figure's legend).
    """
    notes = []
    ax.set_title("all classes (mean)", fontweight="bold")
    for t, ti, color in zip(thresholds, t_index, colors):
        rec, prec = mean_interpolated_curve(result, ti, a)
        label = f"{_threshold_label(t)} mean interpolated"
        (line,) = ax.plot(rec, prec, color=color, lw=2.0, drawstyle="steps-pre", label=label)
        handles.setdefault(label, line)
        notes.append(f"AP{round(t * 100, 2):g} {fmt(mean_defined(result.ap[ti, :, a, -1]))}")
    return notes


def _draw_class_panel(
    ax: Any,
    result: EvalResult,
    k: int,
    *,
    thresholds: Sequence[float],
    t_index: Sequence[int],
    colors: Sequence[str],
    area: str,
    a: int,
    raw: bool,
    interpolated: bool,
    rec_thr: np.ndarray | None,
    operating_points: Sequence[float],
    points: dict,
    handles: dict,
) -> list[str]:
    """Draw class ``k``'s raw and interpolated curves and operating points on ``ax``; return the notes.

    ``rec_thr`` is the protocol's recall grid (None: all-point AP, drawn as the envelope). The
    first line of each label is recorded in ``handles`` (the figure's legend).
    """
    notes = []
    info = result.per_class[k]
    ax.set_title(f"{safe_label(info['name'])}")
    for t, ti, color in zip(thresholds, t_index, colors):
        curve = pr_curve(result, result.category_ids[k], iou_threshold=t, area=area)
        if raw and curve.n_positive and len(curve.recall):
            label = f"{_threshold_label(t)} raw"
            (line,) = ax.plot(
                curve.recall,
                curve.precision,
                color=color,
                lw=0.9,
                alpha=0.55,
                ls="--",
                label=label,
            )
            handles.setdefault(label, line)
        if interpolated and curve.n_positive:
            if rec_thr is not None:
                rec, prec = rec_thr, result.precision[ti, :, k, a, -1]
            else:
                rec, prec = envelope(curve)
            label = f"{_threshold_label(t)} interpolated"
            (line,) = ax.plot(rec, prec, color=color, lw=1.6, drawstyle="steps-pre", label=label)
            handles.setdefault(label, line)
        for j, c in enumerate(operating_points):
            row = points[(c, t)][k]
            if np.isfinite(row["precision"]) and np.isfinite(row["recall"]):
                label = f"conf >= {c:g} ({_threshold_label(t)})"
                (line,) = ax.plot(
                    [row["recall"]],
                    [row["precision"]],
                    ls="none",
                    marker=_MARKERS[j % len(_MARKERS)],
                    ms=6,
                    mfc="white",
                    mec=color,
                    mew=1.5,
                    label=label,
                    clip_on=False,
                )
                handles.setdefault(label, line)
        notes.append(f"AP{round(t * 100, 2):g} {fmt(result.ap[ti, k, a, -1])}")
    notes.append(f"{info['num_gt']} GT, {info['num_det']} det")
    if not info["num_gt"]:
        ax.text(
            0.5,
            0.55,
            "no ground truth:\nAP undefined",
            ha="center",
            va="center",
            transform=ax.transAxes,
            color="0.4",
        )
    return notes


def pr_curves(
    result: EvalResult,
    *,
    iou_thresholds: Sequence[float] | float | None = None,
    classes: Sequence[Any] | None = None,
    interpolated: bool = True,
    raw: bool = True,
    operating_points: Sequence[float] = (0.5,),
    area: str | None = None,
    max_classes: int = 12,
) -> Any:
    """Precision/recall curves per class and overall, at chosen IoU thresholds.

    Parameters
    ----------
    result : EvalResult
    iou_thresholds : sequence of float, optional
        Thresholds of the protocol to draw (one colour each). None: 0.5 and 0.75 where the
        protocol has them, else its first threshold.
    classes : sequence of int or str, optional
        Category ids or names, one panel each. None: every class when there are at most
        ``max_classes``, else the ``max_classes`` classes with the most ground truth.
    interpolated : bool
        Draw the protocol's interpolated precision (its recall grid; the envelope for
        all-point AP), and a first panel with the mean over classes of it.
    raw : bool
        Draw the raw curve after each ranked detection (:func:`deteval.analysis.pr_curve`).
    operating_points : sequence of float
        Confidences whose precision/recall (:func:`deteval.analysis.at_confidence`) are marked
        on the class panels.
    area : str, optional
        Area range (default: the protocol's first).
    max_classes : int
        Panels when ``classes`` is None.

    Returns
    -------
    matplotlib.figure.Figure
        Panels titled by class; lines labelled ``"IoU 0.5 interpolated"``, ``"IoU 0.5 raw"``,
        ``"IoU 0.5 mean interpolated"`` and markers ``"conf >= 0.5 (IoU 0.5)"``.

    Raises
    ------
    ConfigError
        A threshold, class or area the result does not have.

    Examples
    --------
    >>> import deteval
    >>> r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "coco")
    >>> fig = pr_curves(r, iou_thresholds=[0.5])
    >>> [ax.get_title() for ax in fig.axes]
    ['all classes (mean)', 'person', 'dog', 'cat', 'bird']
    """
    where = "pr_curves"
    thresholds = resolve_thresholds(result, iou_thresholds, where=where)
    area, a = _area_index(result, area, where)
    ks = select_classes(result, classes, limit=max_classes, where=where)
    protocol = result.protocol
    t_index = [list(protocol.iou_thresholds).index(t) for t in thresholds]
    panels: list = (["mean"] if interpolated else []) + ks
    if not panels:
        raise ConfigError(
            f"{where}: nothing to draw: expected interpolated=True or at least one class, "
            f"found interpolated=False and no class"
        )
    rows, columns = grid(len(panels))
    rec_thr = recall_thresholds(protocol)
    is_grid = result.precision.shape[1] > 0
    points = {
        (c, t): at_confidence(result, c, iou_threshold=t, area=area)
        for c in operating_points
        for t in thresholds
    }
    handles: dict = {}
    with style():
        fig = new_figure(_PANEL * columns, _PANEL * rows + 0.9)
        colors = [f"C{i % 10}" for i in range(len(thresholds))]
        for i, panel in enumerate(panels):
            ax = fig.add_subplot(rows, columns, i + 1)
            ax.set_xlim(0, 1.0)
            ax.set_ylim(0, 1.05)
            ax.set_xlabel("recall")
            if i % columns == 0:
                ax.set_ylabel("precision")
            if panel == "mean":
                notes = _draw_mean_panel(
                    ax, result, thresholds=thresholds, t_index=t_index, colors=colors, a=a, handles=handles
                )
            else:
                notes = _draw_class_panel(
                    ax,
                    result,
                    panel,
                    thresholds=thresholds,
                    t_index=t_index,
                    colors=colors,
                    area=area,
                    a=a,
                    raw=raw,
                    interpolated=interpolated,
                    rec_thr=rec_thr if is_grid else None,
                    operating_points=operating_points,
                    points=points,
                    handles=handles,
                )
            ax.text(
                0.03,
                0.03,
                "\n".join(notes),
                transform=ax.transAxes,
                fontsize=7.5,
                va="bottom",
                bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.8", "alpha": 0.85},
            )
        shown = (
            f"{len(ks)} of {len(result.category_ids)} classes"
            if len(ks) < len(result.category_ids)
            else f"{len(ks)} classes"
        )
        fig.suptitle(
            f"Precision/recall: {safe_label(protocol.name)} ({protocol.ap_method}), area {area}, {shown}"
        )
        if handles:
            order = [
                f"{_threshold_label(t)} {kind}"
                for t in thresholds
                for kind in ("mean interpolated", "interpolated", "raw")
            ]
            order += [f"conf >= {c:g} ({_threshold_label(t)})" for t in thresholds for c in operating_points]
            labels = [x for x in order if x in handles]
            fig.legend(
                [handles[x] for x in labels],
                labels,
                loc="outside lower center",
                ncols=min(len(labels), 3 + len(operating_points)),
                frameon=False,
            )
    return fig


def _pooled(result: EvalResult, threshold: float, area: str) -> tuple:
    """Score, precision, recall, F1 at each reachable confidence, counts pooled over classes."""
    curves = [pr_curve(result, cid, iou_threshold=threshold, area=area) for cid in result.category_ids]
    score = np.concatenate([c.score for c in curves])
    is_tp = np.concatenate([c.is_tp for c in curves])
    is_ignored = np.concatenate([c.is_ignored for c in curves])
    n_positive = sum(c.n_positive for c in curves)
    order = np.argsort(-score, kind="stable")
    score, is_tp, is_ignored = score[order], is_tp[order], is_ignored[order]
    tp = np.cumsum(is_tp).astype(float)
    fp = np.cumsum(~is_tp & ~is_ignored).astype(float)
    last = np.r_[score[1:] != score[:-1], True] if len(score) else np.zeros(0, bool)
    tp, fp, score = tp[last], fp[last], score[last]
    precision = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0.0)
    recall = tp / n_positive if n_positive else np.full(len(tp), np.nan)
    return score, precision, recall, _f1(precision, recall)


def _f1(precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)


def f1_curves(
    result: EvalResult,
    *,
    iou_threshold: float | None = None,
    classes: Sequence[Any] | None = None,
    area: str | None = None,
    max_classes: int = 12,
) -> Any:
    """Precision, recall and F1 against the confidence threshold, best F1 marked.

    Parameters
    ----------
    result : EvalResult
    iou_threshold : float, optional
        A threshold of the protocol (default: 0.5 if it has it, else its first).
    classes : sequence of int or str, optional
        As in :func:`pr_curves`.
    area : str, optional
    max_classes : int

    Returns
    -------
    matplotlib.figure.Figure
        A first panel pools the counts of every class (precision = sum tp / sum (tp + fp),
        recall = sum tp / sum positives, the same counts :func:`deteval.analysis.at_confidence`
        gives per class), then one panel per class with its best-F1 point from
        :func:`deteval.analysis.best_f1`. Lines are labelled ``precision``, ``recall``, ``F1``;
        the marker ``best F1``.

    Examples
    --------
    >>> import deteval
    >>> r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "coco")
    >>> fig = f1_curves(r, classes=[1])
    >>> [line.get_label() for line in fig.axes[1].get_lines() if not line.get_label().startswith("_")]
    ['precision', 'recall', 'F1', 'best F1']
    """
    where = "f1_curves"
    (threshold,) = resolve_thresholds(
        result, None if iou_threshold is None else [iou_threshold], where=where
    )[:1]
    area, _ = _area_index(result, area, where)
    ks = select_classes(result, classes, limit=max_classes, where=where)
    panels: list = ["pooled", *ks]
    rows, columns = grid(len(panels))
    all_scores = result.table.det_score
    lo = float(min(0.0, all_scores.min())) if len(all_scores) else 0.0
    hi = float(max(1.0, all_scores.max())) if len(all_scores) else 1.0
    handles: dict = {}
    with style():
        fig = new_figure(_PANEL * columns, _PANEL * rows + 0.9)
        for i, panel in enumerate(panels):
            ax = fig.add_subplot(rows, columns, i + 1)
            ax.set_xlim(lo, hi)
            ax.set_ylim(0, 1.05)
            ax.set_xlabel("confidence threshold")
            if i % columns == 0:
                ax.set_ylabel("precision / recall / F1")
            if panel == "pooled":
                ax.set_title("all classes (pooled counts)", fontweight="bold")
                score, precision, recall, f1 = _pooled(result, threshold, area)
                if len(f1) and not np.isnan(recall).all():
                    j = int(np.argmax(f1))
                    best = {
                        "threshold": float(score[j]),
                        "f1": float(f1[j]),
                        "precision": float(precision[j]),
                        "recall": float(recall[j]),
                    }
                else:
                    best = {"threshold": float("nan"), "f1": float("nan")}
            else:
                cid = result.category_ids[panel]
                ax.set_title(safe_label(result.per_class[panel]["name"]))
                curve = pr_curve(result, cid, iou_threshold=threshold, area=area)
                last = (
                    np.r_[curve.score[1:] != curve.score[:-1], True]
                    if len(curve.score)
                    else np.zeros(0, bool)
                )
                score, precision, recall = curve.score[last], curve.precision[last], curve.recall[last]
                f1 = _f1(precision, recall)
                best = best_f1(result, cid, iou_threshold=threshold, area=area)
            # ascending confidence; a value holds down to the next lower score
            for values, label, color in (
                (precision, "precision", "C0"),
                (recall, "recall", "C1"),
                (f1, "F1", "C2"),
            ):
                (line,) = ax.plot(
                    score[::-1],
                    values[::-1],
                    color=color,
                    lw=1.5 if label == "F1" else 1.1,
                    drawstyle="steps-pre",
                    label=label,
                )
                handles.setdefault(label, line)
            if np.isfinite(best["f1"]):
                (line,) = ax.plot(
                    [best["threshold"]],
                    [best["f1"]],
                    ls="none",
                    marker="*",
                    ms=11,
                    color="C3",
                    mec="black",
                    mew=0.6,
                    label="best F1",
                )
                handles.setdefault("best F1", line)
                ax.axvline(best["threshold"], color="C3", lw=0.8, ls=":", label="_best F1 threshold")
                ax.text(
                    0.97,
                    0.97,
                    f"best F1 {best['f1']:.3f}\nat conf {best['threshold']:.3g}",
                    transform=ax.transAxes,
                    ha="right",
                    va="top",
                    fontsize=7.5,
                    bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.8", "alpha": 0.85},
                )
            else:
                ax.text(
                    0.5,
                    0.5,
                    "F1 undefined\n(no ground truth or no detection)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                    color="0.4",
                )
        fig.suptitle(
            f"Precision, recall and F1 by confidence: {safe_label(result.protocol.name)}, "
            f"{_threshold_label(threshold)}, area {area}"
        )
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncols=len(handles),
            frameon=False,
        )
    return fig


def pr_overlay(results: Any, *, iou_threshold: float = 0.5, area: str | None = None) -> Any:
    """Every result's mean interpolated precision/recall curve in one axes (several detectors).

    Parameters
    ----------
    results : mapping label -> EvalResult, or a sequence of EvalResult
    iou_threshold : float
        Each result's curve at its protocol's threshold nearest to it (0.5 when it has it).
    area : str, optional
        Area range (default: each protocol's first).

    Returns
    -------
    matplotlib.figure.Figure
        One line per result, labelled ``"<label>: AP<t> <value>"`` (the mean over classes of
        the AP at that threshold, as the curve's area).
    """
    from deteval.plot._select import named_results

    named = named_results(results, where="pr_overlay")
    with style():
        fig = new_figure(6.4, 4.6)
        ax = fig.add_subplot(1, 1, 1)
        for label, result in named:
            thresholds = np.asarray(result.protocol.iou_thresholds, dtype=float)
            ti = int(np.argmin(np.abs(thresholds - iou_threshold)))
            area_name, a = _area_index(result, area, "pr_overlay")
            rec, prec = mean_interpolated_curve(result, ti, a)
            ap = mean_defined(result.ap[ti, :, a, -1])
            ax.plot(
                rec,
                prec,
                lw=1.8,
                drawstyle="steps-pre",
                label=f"{safe_label(label)}: AP{round(thresholds[ti] * 100, 2):g} {fmt(ap)}",
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("recall")
        ax.set_ylabel("precision (mean over classes, interpolated)")
        ax.set_title("Precision/recall of every result")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower left", fontsize=8)
    return fig
