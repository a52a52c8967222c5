"""Every figure of a run, as files: what ``deteval plot ... --out DIR`` writes."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from deteval.errors import ConfigError
from deteval.plot._base import FORMATS, as_document, atomic_write, figure_bytes
from deteval.plot._beyond import add_beyond_specs, beyond_documents
from deteval.plot._select import named_results
from deteval.plot.bars import error_breakdown, explain_waterfall, forest, per_class_ap
from deteval.plot.curves import f1_curves, pr_curves, pr_overlay
from deteval.plot.matrix import confusion_matrix, decomposition_curves

__all__ = ["FigureSpec", "figure_specs", "plot_all", "slug"]


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a run, not yet drawn.

    Attributes
    ----------
    name : str
        File stem, unique within a run: the figure kind (``pr_curves``, ``f1_curves``,
        ``per_class_ap``, ``explain``, ``errors``, ``confusion``, ``decomposition``,
        ``intervals``, ``reliability``, ``lrp_components``), followed by ``-<label>`` (per-result figures) or
        ``-<from>-<to>`` (explain) only when the run has several.
    caption : str
        What it shows (plain text, user strings unescaped).
    section : str
        ``results``, ``explain``, ``errors``, ``intervals`` or ``beyond``.
    build : callable
        ``() -> Figure``.
    """

    name: str
    caption: str
    section: str
    build: Callable[[], Any]


def slug(text: str) -> str:
    """A file-name-safe stem.

    >>> slug("dt.json · coco <x>")
    'dt.json_coco_x'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "result"


def _as_list(value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def figure_specs(
    results: Any,
    *,
    analysis: Any = None,
    explanation: Any = None,
    bootstrap: Any = None,
    top_k: int = 30,
    max_classes: int = 12,
    beyond: Any = None,
) -> list[FigureSpec]:
    """The figures of a run, in report order (built lazily: call ``spec.build()``).

    Parameters
    ----------
    results : EvalResult, sequence or mapping label -> EvalResult
        Each gives PR curves, F1 curves and per-class AP.
    analysis : AnalysisResult or dict, optional
        Its TIDE errors, confusion matrix and decomposition (those present).
    explanation : Explanation, dict or a list of them, optional
        A waterfall each.
    bootstrap : BootstrapResult, ComparisonResult or dict, optional
        A forest plot.
    top_k, max_classes : int
        Passed to the bar / heatmap figures and to the curve figures.
    beyond : BeyondAP, dict or mapping label -> one of them, optional
        Calibration and optimal LRP (:func:`deteval.beyond.beyond_ap`, per detector in a
        mapping): a reliability diagram and an LRP components figure each. Without it, an
        ``analysis`` with ``calibration`` / ``lrp`` gives them.

    Returns
    -------
    list of FigureSpec
    """
    specs: list[FigureSpec] = []
    named = named_results(results, where="figures")
    used: dict = {}

    def add(name: str, caption: str, section: str, build: Callable[[], Any]) -> None:
        stem = slug(name)
        used[stem] = used.get(stem, 0) + 1
        if used[stem] > 1:
            stem = f"{stem}-{used[stem]}"
        specs.append(FigureSpec(stem, caption, section, build))

    # Stable names (scripts collect them): the figure kind alone, its result's label after it
    # only when there are several (docs/plots.md lists the names).
    def per_result(kind: str, label: str) -> str:
        return kind if len(named) == 1 else f"{kind}-{slug(label)}"

    if len(named) > 1:
        add(
            "pr_overlay",
            "Precision/recall of every result, overlaid (mean over classes, IoU 0.5)",
            "results",
            partial(pr_overlay, dict(named)),
        )
    for label, result in named:
        add(
            per_result("pr_curves", label),
            f"Precision/recall curves: {label}",
            "results",
            partial(pr_curves, result, max_classes=max_classes),
        )
        add(
            per_result("f1_curves", label),
            f"Precision, recall and F1 by confidence: {label}",
            "results",
            partial(f1_curves, result, max_classes=max_classes),
        )
        add(
            per_result("per_class_ap", label),
            f"Per-class AP: {label}",
            "results",
            partial(per_class_ap, result, top_k=top_k),
        )
    explanations = _as_list(explanation)
    for exp in explanations:
        doc = as_document(exp, what="explanation")
        add(
            "explain" if len(explanations) == 1 else f"explain-{doc.get('from', 'A')}-{doc.get('to', 'B')}",
            f"Why {doc.get('from')} and {doc.get('to')} differ",
            "explain",
            partial(explain_waterfall, doc),
        )
    if analysis is not None:
        doc = as_document(analysis, what="analysis")
        if "errors" in doc:
            add("errors", "TIDE error breakdown", "errors", partial(error_breakdown, doc["errors"]))
        if "confusion" in doc:
            add(
                "confusion",
                "Confusion matrix",
                "errors",
                partial(confusion_matrix, doc["confusion"], top_k=top_k),
            )
        if "decomposition" in doc:
            add(
                "decomposition",
                "AP decomposition factor curves",
                "errors",
                partial(decomposition_curves, doc["decomposition"]),
            )
    if bootstrap is not None:
        doc = as_document(bootstrap, what="bootstrap")
        add("intervals", "Bootstrap intervals", "intervals", partial(forest, doc))
    analysis_doc = None if analysis is None else as_document(analysis, what="analysis")
    add_beyond_specs(beyond_documents(beyond, analysis_doc), add)
    return specs


def plot_all(
    results: Any,
    *,
    out_dir: os.PathLike | str,
    analysis: Any = None,
    explanation: Any = None,
    bootstrap: Any = None,
    formats: Sequence[str] = ("png", "svg"),
    top_k: int = 30,
    max_classes: int = 12,
    beyond: Any = None,
) -> list[Path]:
    """Write every figure of a run into ``out_dir`` (created if missing), one file per format.

    Parameters
    ----------
    results, analysis, explanation, bootstrap, top_k, max_classes, beyond
        As in :func:`figure_specs`.
    out_dir : path
    formats : sequence of {"png", "svg"}

    Returns
    -------
    list of Path
        The files written, in figure order then format order. Each is written by
        :func:`deteval.io.output.write_output`: atomically (a temporary file beside the target,
        fsynced, renamed over it; a symbolic link is followed), or directly into a device or FIFO.

    Raises
    ------
    ConfigError
        An unknown format, or ``out_dir`` that exists and is not a folder.

    Examples
    --------
    >>> import deteval, tempfile
    >>> r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "voc2010")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [p.name for p in plot_all(r, out_dir=d, formats=["svg"])]
    ['pr_curves.svg', 'f1_curves.svg', 'per_class_ap.svg']
    """
    formats = list(dict.fromkeys(formats))
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ConfigError(f"plot_all: formats: expected some of {list(FORMATS)}, found {list(formats)}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"plot_all: out_dir {str(out)!r}: expected a folder, found a file")
    specs = figure_specs(
        results,
        analysis=analysis,
        explanation=explanation,
        bootstrap=bootstrap,
        top_k=top_k,
        max_classes=max_classes,
        beyond=beyond,
    )
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in _built(specs):
        fig = spec[1]
        for f in formats:
            written.append(atomic_write(out / f"{spec[0].name}.{f}", figure_bytes(fig, f)))
    return written


def _built(specs: list[FigureSpec]) -> Iterator[tuple[FigureSpec, Any]]:
    for spec in specs:
        yield spec, spec.build()
