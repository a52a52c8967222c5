"""The confusion matrix as a heatmap and the AP decomposition's factor curves."""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.plot._base import as_document, fmt, new_figure, safe_label, style
from deteval.plot._select import grid

__all__ = ["confusion_matrix", "reduce_confusion", "decomposition_curves"]

_NORMALIZE = (None, "true", "pred")


def _confusion_doc(value: Any) -> dict:
    doc = as_document(value, what="confusion_matrix", key="confusion")
    if "matrix" not in doc or "labels" not in doc:
        raise ConfigError(
            f"confusion_matrix: expected a ConfusionMatrix or its to_dict() (keys labels, matrix), "
            f"found keys {sorted(doc)[:8]}"
        )
    return doc


def reduce_confusion(matrix: np.ndarray, labels: list, *, top_k: int) -> tuple[np.ndarray, list]:
    """Keep the ``top_k`` classes most involved in errors; merge the others into one ``others``.

    Parameters
    ----------
    matrix : int (n_class + 1, n_class + 1)
        Rows true, columns predicted, background last.
    labels : list of str
    top_k : int

    Returns
    -------
    (matrix, labels)
        Unchanged when ``n_class <= top_k``; else (top_k + 2) square: the kept classes in their
        order, ``others``, ``background``. A class's involvement is its off-diagonal count (row
        plus column, background included); ties keep the lower index. Totals are preserved.

    Examples
    --------
    >>> m = np.array([[5, 1, 0, 0], [0, 3, 0, 2], [0, 0, 4, 0], [1, 0, 0, 0]])
    >>> small, names = reduce_confusion(m, ["a", "b", "c", "background"], top_k=1)
    >>> names, small.tolist()
    (['b', 'others', 'background'], [[3, 0, 2], [1, 9, 0], [0, 1, 0]])
    """
    n_class = len(labels) - 1
    if n_class <= top_k:
        return matrix, list(labels)
    core = matrix.astype(np.int64)
    diag = np.diag(core)[:n_class]
    involvement = core[:n_class].sum(axis=1) + core[:, :n_class].sum(axis=0) - 2 * diag
    keep = np.sort(np.argsort(-involvement, kind="stable")[:top_k])
    group = np.full(n_class + 1, top_k, dtype=np.int64)  # others
    group[keep] = np.arange(top_k)
    group[n_class] = top_k + 1  # background
    out = np.zeros((top_k + 2, top_k + 2), dtype=np.int64)
    np.add.at(out, (group[:, None], group[None, :]), core)
    return out, [labels[k] for k in keep] + ["others", labels[-1]]


def confusion_matrix(doc_or_value: Any, *, top_k: int = 30, normalize: str | None = None) -> Any:
    """The confusion matrix (rows: true class, columns: predicted) as a heatmap.

    Parameters
    ----------
    doc_or_value : ConfusionMatrix, AnalysisResult or dict
        The value or its ``to_dict()`` (an analysis document: its ``"confusion"``).
    top_k : int
        With more classes, the ``top_k`` most involved in errors are kept and the rest merged
        (:func:`reduce_confusion`).
    normalize : {None, "true", "pred"}
        Counts; or each row divided by its sum (the share of a true class's objects per
        prediction); or each column by its sum. An all-zero row or column stays 0.

    Returns
    -------
    matplotlib.figure.Figure
        The heatmap is ``fig.axes[0].images[0]`` (its array has one cell per label pair);
        the colour bar is the second axes.

    Examples
    --------
    >>> doc = {"iou_threshold": .5, "confidence": .5, "labels": ["cat", "dog", "background"],
    ...        "matrix": [[3, 1, 1], [0, 2, 0], [2, 0, 0]]}
    >>> confusion_matrix(doc).axes[0].images[0].get_array().shape
    (3, 3)
    """
    if normalize not in _NORMALIZE:
        raise ConfigError(
            f"confusion_matrix: normalize: expected one of {list(_NORMALIZE)}, found {normalize!r}"
        )
    if int(top_k) < 1:
        raise ConfigError(f"confusion_matrix: top_k: expected a positive integer, found {top_k!r}")
    doc = _confusion_doc(doc_or_value)
    matrix = np.asarray(doc["matrix"], dtype=np.int64).reshape(len(doc["labels"]), len(doc["labels"]))
    counts, labels = reduce_confusion(matrix, list(doc["labels"]), top_k=int(top_k))
    values = counts.astype(np.float64)
    if normalize is not None:
        axis = 1 if normalize == "true" else 0
        sums = values.sum(axis=axis, keepdims=True)
        values = np.divide(values, sums, out=np.zeros_like(values), where=sums > 0)
    n = len(labels)
    side = min(16.0, max(4.5, 0.32 * n + 2.2))
    with style():
        fig = new_figure(side + 1.0, side)
        ax = fig.add_subplot()
        image = ax.imshow(
            values,
            cmap="Blues",
            interpolation="nearest",
            aspect="equal",
            vmin=0.0,
            vmax=1.0 if normalize else max(1.0, float(values.max())),
        )
        names = [safe_label(x, limit=24) for x in labels]
        ax.set_xticks(np.arange(n), names, rotation=90)
        ax.set_yticks(np.arange(n), names)
        ax.set_xlabel("predicted class")
        ax.set_ylabel("true class")
        ax.grid(False)
        if n <= 25:
            threshold = 0.5 * (1.0 if normalize else max(1.0, float(values.max())))
            for i in range(n):
                for j in range(n):
                    v = values[i, j]
                    if counts[i, j] or normalize is None:
                        text = f"{v:.2f}" if normalize else str(int(counts[i, j]))
                        ax.text(
                            j,
                            i,
                            text,
                            ha="center",
                            va="center",
                            fontsize=7 if n > 12 else 8,
                            color="white" if v > threshold else "black",
                        )
        fig.colorbar(image, ax=ax, shrink=0.8, label="share" if normalize else "count")
        head = (
            f"Confusion matrix at IoU {fmt(doc.get('iou_threshold'), 2)}, confidence "
            f"{fmt(doc.get('confidence'), 2)}"
        )
        if normalize:
            head += f" (normalized over {'true classes (rows)' if normalize == 'true' else 'predictions (columns)'})"
        if len(labels) < len(doc["labels"]):
            head += (
                f"\n{top_k} of {len(doc['labels']) - 1} classes (most errors); the rest merged into 'others'"
            )
        ax.set_title(head, loc="left")
    return fig


def _decomposition_doc(value: Any) -> dict:
    doc = as_document(value, what="decomposition_curves", key="decomposition")
    if "per_class" not in doc:
        raise ConfigError(
            f"decomposition_curves: expected a Decomposition or its to_dict() (keys iou_threshold, "
            f"per_class, mean), found keys {sorted(doc)[:8]}"
        )
    return doc


def _nan(values: list) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def decomposition_curves(decomp_doc: Any, category_id: int | None = None, *, max_classes: int = 6) -> Any:
    """The AP decomposition's factor curves: P_D = P_L x P_C|L and R_D = R_L x R_C|L by confidence.

    Parameters
    ----------
    decomp_doc : Decomposition, AnalysisResult or dict
        The value or its ``to_dict()`` (an analysis document: its ``"decomposition"``).
    category_id : int, optional
        One class; None: the first ``max_classes`` classes (document order) with ground truth.
    max_classes : int

    Returns
    -------
    matplotlib.figure.Figure
        Two axes per class (precision factors, recall factors), lines labelled ``D``, ``L``,
        ``C|L``; titles carry the class's AP_D, AP_L and AP_C|L (``AP_CgL = AP_D / AP_L``, so
        ``AP_D = AP_L x AP_C|L``; not the AP of the C|L curve).

    Examples
    --------
    >>> doc = {"iou_threshold": .5, "mean": {"AP_D": .5, "AP_L": .625, "AP_CgL": .8}, "per_class": [
    ...     {"category_id": 1, "name": "cat", "AP_D": .5, "AP_L": .625, "AP_CgL": .8, "curve": {
    ...      "confidence": [.9, .5], "precision_D": [1., .5], "recall_D": [.5, .5], "precision_L": [1., 1.],
    ...      "recall_L": [.5, 1.], "precision_CgL": [1., .5], "recall_CgL": [1., .5]}}]}
    >>> fig = decomposition_curves(doc)
    >>> len(fig.axes), [line.get_label() for line in fig.axes[0].get_lines()]
    (2, ['D', 'L', 'C|L'])
    """
    doc = _decomposition_doc(decomp_doc)
    classes = doc["per_class"]
    if category_id is not None:
        chosen = [c for c in classes if c["category_id"] == category_id]
        if not chosen:
            raise ConfigError(
                f"decomposition_curves: category_id: expected one of "
                f"{[c['category_id'] for c in classes][:20]}, found {category_id!r}"
            )
    else:  # the document has no counts: a class whose AP_D is defined has ground truth
        chosen = [c for c in classes if c.get("AP_D") is not None][:max_classes] or classes[:max_classes]
    rows, _ = grid(len(chosen), max_columns=1)
    with style():
        fig = new_figure(8.0, 2.7 * rows + 0.7)
        for i, c in enumerate(chosen):
            curve = c["curve"]
            confidence = np.asarray(curve["confidence"], dtype=np.float64)
            for j, (kind, title) in enumerate((("precision", "precision"), ("recall", "recall"))):
                ax = fig.add_subplot(rows, 2, 2 * i + j + 1)
                for factor, color, lw in (("D", "C0", 2.0), ("L", "C1", 1.2), ("CgL", "C2", 1.2)):
                    ax.plot(
                        confidence[::-1],
                        _nan(curve[f"{kind}_{factor}"])[::-1],
                        color=color,
                        lw=lw,
                        drawstyle="steps-pre",
                        label=factor.replace("g", "|"),
                    )
                ax.set_ylim(0, 1.05 if kind == "precision" else None)
                if not len(confidence):
                    ax.text(
                        0.5,
                        0.5,
                        "no detection of this class",
                        ha="center",
                        va="center",
                        transform=ax.transAxes,
                        color="0.4",
                    )
                ax.set_xlabel("confidence threshold")
                ax.set_ylabel(title)
                if j == 0:
                    ax.set_title(
                        f"{safe_label(c['name'])}: AP_D {fmt(c.get('AP_D'))}, "
                        f"AP_L {fmt(c.get('AP_L'))}, AP_C|L = AP_D / AP_L {fmt(c.get('AP_CgL'))}",
                        loc="left",
                        fontsize=9,
                    )
                if i == 0 and j == 1:
                    ax.legend(loc="best", title="factor")
        mean = doc.get("mean", {})
        fig.suptitle(
            f"AP decomposition at IoU {fmt(doc.get('iou_threshold'), 2)}: mean AP_D "
            f"{fmt(mean.get('AP_D'))}, AP_L {fmt(mean.get('AP_L'))}, AP_C|L {fmt(mean.get('AP_CgL'))}"
        )
    return fig
