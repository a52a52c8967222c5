"""Renderers of ``deteval rank``: the text and CSV forms of a :func:`~deteval.ranking.rank_report` document."""

from __future__ import annotations

from typing import Any

from deteval.errors import printable
from deteval.report._format import csv_safe

__all__ = [
    "format_rank_table",
    "format_rank_csv",
]


# --------------------------------------------------------------------------------------------
# deteval rank


def _rank_cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def format_rank_table(doc: dict, *, warnings: bool = True) -> str:
    """Plain-text table of a :func:`rank_report` document (its warnings last, unless ``warnings=False``).

    Examples
    --------
    >>> from deteval.ranking import rank_report
    >>> print(format_rank_table(rank_report([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])))
    ranking: 4 samples, 1 label, 2 positives (average=macro, method=step)
    AP       0.8333
    ROC_AUC  0.7500
    """
    inputs, options = doc["inputs"], doc["options"]
    method = options["method"] + (f", grid={options['grid']}" if options.get("grid") else "")
    lines = [
        f"ranking: {inputs['n_samples']} samples, {inputs['n_labels']} "
        f"label{'s' if inputs['n_labels'] != 1 else ''}, {inputs['n_positives']} positives "
        f"(average={options['average']}, method={method})"
    ]
    rows = [(name, value) for name, value in doc["metrics"].items()]
    if doc["at_k"]:
        rows += [(name, value) for name, value in doc["at_k"].items() if name != "k"]
    if doc["binarized"]:
        b = doc["binarized"]
        rows += [
            ("AP raw", b["ap_raw"]),
            (f"AP binarized (>= {b['threshold']:g})", b["ap_binarized"]),
            ("precision at threshold", b["precision"]),
            ("recall at threshold", b["recall"]),
            ("predicted positive", b["n_predicted_positive"]),
        ]
    width = max(len(name) for name, _ in rows)
    lines += [
        f"{name.replace('@K', '@' + str(doc['at_k']['k']) if doc['at_k'] else '@K'):<{width}}  "
        f"{_rank_cell(value)}"
        for name, value in rows
    ]
    if doc["per_label"]:
        shown = [printable(str(_label_of(row))) for row in doc["per_label"]]
        width = max(5, *(len(text) for text in shown))
        lines.append("")
        lines.append(f"{'label':>{width}}  {'AP':>6}  {'ROC_AUC':>7}  {'positives':>9}")
        lines += [
            f"{text:>{width}}  {_rank_cell(row['AP']):>6}  {_rank_cell(row['ROC_AUC']):>7}  "
            f"{row['n_positives']:>9}"
            for text, row in zip(shown, doc["per_label"])
        ]
    if warnings:
        lines += [f"warning: {message}" for message in doc["warnings"]]
    return "\n".join(lines)


def format_rank_csv(doc: dict) -> str:
    """CSV of a :func:`rank_report` document: ``scope,metric,value`` rows.

    ``scope`` is ``all``, ``at_k``, ``binarized`` or ``label=<j>``; undefined values are empty.

    Examples
    --------
    >>> from deteval.ranking import rank_report
    >>> print(format_rank_csv(rank_report([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])))
    scope,metric,value
    all,AP,0.8333333333333333
    all,ROC_AUC,0.75
    """

    def text(value: Any) -> str:
        return "" if value is None else repr(value) if isinstance(value, float) else str(value)

    rows = ["scope,metric,value"]
    rows += [f"all,{name},{text(value)}" for name, value in doc["metrics"].items()]
    if doc["at_k"]:
        rows += [f"at_k,{name},{text(value)}" for name, value in doc["at_k"].items()]
    if doc["binarized"]:
        rows += [f"binarized,{name},{text(value)}" for name, value in doc["binarized"].items()]
    for row in doc["per_label"]:
        scope = _csv_cell(f"label={_label_of(row)}")
        rows += [f"{scope},{name},{text(row[name])}" for name in ("AP", "ROC_AUC", "n_positives")]
    return "\n".join(rows)


def _label_of(row: dict) -> Any:
    """A per-label row's name (its CSV header's), else its column index."""
    return row["name"] if row.get("name") is not None else row["label"]


def _csv_cell(text: str) -> str:
    """One CSV cell: formula-safe, quoted where it holds a comma, a quote or a line break."""
    text = str(csv_safe(text))
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text
