"""Ranking metrics of scores: average precision exactly as scikit-learn, AP@K, P@K, R@K, nDCG, ROC.

This is the analysis layer's answer to "how well do these scores rank these labels?": one
binary problem (``y_true`` of shape ``(n_samples,)``) or many (a multilabel indicator matrix of
shape ``(n_samples, n_labels)``), no boxes and no matching. A detection becomes a ranked item
once it has been matched: it is relevant when it matched a ground truth.

Conventions shared by every function here:

* Tied scores form **one threshold** in :func:`average_precision` (every ``method``),
  :func:`precision_recall_curve`, :func:`roc_curve` and :func:`roc_auc`, as in scikit-learn:
  the precision at a tie is that of the whole tied block. Detection protocols instead rank
  tied detections one by one (a stable sort), so both conventions exist in deteval and are
  named wherever they are used.
* The ``@K`` functions rank by score, ties broken by original position (``ties="stable"``);
  :func:`precision_at_k` and :func:`recall_at_k` also offer ``ties="average"``, the exact
  expectation over every order of the tied items (as :func:`ndcg_at_k` and scikit-learn's
  ``ndcg_score`` do).
* An undefined value is announced by :class:`deteval.errors.UndefinedMetricWarning`; the
  numbers it stands for follow scikit-learn (AP of a label without positives is 0, ROC AUC
  of a label with one class is NaN).

Input is checked once, here at the edge, and every failure is an
:class:`deteval.errors.InputError` (bad data) or :class:`deteval.errors.ConfigError` (bad
option) that names the argument, the element and what was expected.
"""

from typing import TYPE_CHECKING, Any

from deteval.ranking._options import AP_METHODS, AVERAGES, ELEVEN_POINT_GRIDS

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from deteval.ranking.at_k import average_precision_at_k, ndcg_at_k, precision_at_k, recall_at_k
    from deteval.ranking.curves import average_precision, precision_recall_curve, roc_auc, roc_curve
    from deteval.ranking.raw_binarized import RawBinarizedComparison, compare_raw_binarized, rank_report

#: Public name -> its submodule, imported on first access (PEP 562): the command line's parser
#: reads the constants above for its choices without loading the metrics.
_LAZY = {
    **dict.fromkeys(("average_precision_at_k", "ndcg_at_k", "precision_at_k", "recall_at_k"), "at_k"),
    **dict.fromkeys(("average_precision", "precision_recall_curve", "roc_auc", "roc_curve"), "curves"),
    **dict.fromkeys(("RawBinarizedComparison", "compare_raw_binarized", "rank_report"), "raw_binarized"),
}

__all__ = [
    "AVERAGES",
    "AP_METHODS",
    "ELEVEN_POINT_GRIDS",
    "average_precision",
    "precision_recall_curve",
    "roc_curve",
    "roc_auc",
    "precision_at_k",
    "recall_at_k",
    "average_precision_at_k",
    "ndcg_at_k",
    "RawBinarizedComparison",
    "compare_raw_binarized",
    "rank_report",
]


def __getattr__(name: str) -> Any:
    """Load a public function from its submodule on first access.

    Raises
    ------
    AttributeError
        ``name`` is not a public name (submodules are bound by the import system).
    """
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
