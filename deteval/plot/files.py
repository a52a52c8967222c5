"""Every figure of a run, as files: what ``deteval plot ... --out DIR`` writes."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from deteval._values import frozen
from deteval.errors import ConfigError
from deteval.plot._base import FORMATS, as_document, atomic_write, figure_bytes
from deteval.plot._beyond import add_beyond_specs, beyond_documents
from deteval.plot._select import named_results
from deteval.plot.bars import error_breakdown, explain_waterfall, forest, per_class_ap
from deteval.plot.curves import f1_curves, pr_curves, pr_overlay
from deteval.plot.matrix import confusion_matrix, decomposition_curves

__all__ = ["FigureSpec", "figure_specs", "plot_all", "slug", "per_detector"]


@frozen
class FigureSpec:
    """One figure of a run, not yet drawn.

    Attributes
    ----------
    name : str
        File stem, unique within a run: the figure kind (``pr_curves``, ``f1_curves``,
        ``per_class_ap``, ``explain``, ``errors``, ``confusion``, ``decomposition``,
        ``intervals``, ``reliability``, ``lrp_components``), followed by ``-<label>`` (per-result figures) or
        ``-<from>-<to>`` (explain) only when the run has several; the analysis and explain figures
        of several detectors by ``-<detector>`` after the kind (``errors-A``, ``explain-A-coco-voc2007``).
    caption : str
        What it shows (plain text, user strings unescaped).
    section : str
        ``results``, ``explain``, ``errors``, ``intervals`` or ``beyond``.
    build : callable
        ``() -> Figure``.
    detector : str
        Whose analysis or explanation it draws when several detectors have one; else ``""``.
    """

    name: str
    caption: str
    section: str
    build: Callable[[], Any]
    detector: str = ""


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


# Keys of an analysis or explanation document: a mapping with one of them is a document, not a
# mapping detector -> document.
_DOCUMENT_KEYS = frozenset(
    {"errors", "confusion", "decomposition", "calibration", "lrp", "protocol", "from", "to", "steps"}
)


def per_detector(value: Any) -> list[tuple[str, Any]]:
    """(detector, value) pairs of an ``analysis`` / ``explanation`` argument.

    A mapping detector name -> value (not itself a document) gives one pair per detector, in
    its order; anything else (one value, a document, a list of explanations) is one detector's,
    labelled ``""``; None gives no pair.

    >>> per_detector({"A": {"errors": {}}, "B": {"errors": {}}})
    [('A', {'errors': {}}), ('B', {'errors': {}})]
    >>> per_detector({"errors": {}})
    [('', {'errors': {}})]
    """
    if value is None:
        return []
    if isinstance(value, Mapping) and not hasattr(value, "to_dict") and not _DOCUMENT_KEYS & set(value):
        return [(str(label), one) for label, one in value.items()]
    return [("", value)]


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
    analysis : AnalysisResult or dict, or a mapping detector name -> one of them, optional
        Its TIDE errors, confusion matrix and decomposition (those present); of several
        detectors, those of each, named and captioned with the detector.
    explanation : Explanation, dict or a list of them, or a mapping detector name -> one of those, optional
        A waterfall each (of several detectors, each detector's, named with the detector).
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

    def add(name: str, caption: str, section: str, build: Callable[[], Any], detector: str = "") -> None:
        stem = slug(name)
        used[stem] = used.get(stem, 0) + 1
        if used[stem] > 1:
            stem = f"{stem}-{used[stem]}"
        specs.append(FigureSpec(stem, caption, section, build, detector))

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
    explained = [(label, _as_list(value)) for label, value in per_detector(explanation)]
    analysed = [(label, as_document(a, what="analysis")) for label, a in per_detector(analysis)]
    _add_detector_specs(explained, analysed, add, top_k)
    if bootstrap is not None:
        doc = as_document(bootstrap, what="bootstrap")
        add("intervals", "Bootstrap intervals", "intervals", partial(forest, doc))
    add_beyond_specs(beyond_of(beyond, analysed), add)
    return specs


def beyond_of(beyond: Any, analysed: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """:func:`beyond_documents` of ``beyond``, else of the analyses' calibration / LRP parts."""
    if beyond is not None or len(analysed) < 2:
        return beyond_documents(beyond, analysed[0][1] if analysed else None)
    found = [(label, doc) for label, doc in analysed if "calibration" in doc or "lrp" in doc]
    return beyond_documents(found or None)


def _add_detector_specs(
    explained: list[tuple[str, list]], analysed: list[tuple[str, dict]], add: Callable[..., None], top_k: int
) -> None:
    """The explain waterfalls and the analysis figures, per detector when several have them.

    One detector's keep the names they always had (``explain``, ``errors``, ...); several
    detectors' are named ``<kind>-<detector>`` and captioned with the detector.
    """
    several = len(explained) > 1
    for label, walks in explained:
        who = f"-{label}" if several else ""
        about = f" ({label})" if several else ""
        for exp in walks:
            doc = as_document(exp, what="explanation")
            pair = "" if len(walks) == 1 else f"-{doc.get('from', 'A')}-{doc.get('to', 'B')}"
            add(
                f"explain{who}{pair}",
                f"Why {doc.get('from')} and {doc.get('to')} differ{about}",
                "explain",
                partial(explain_waterfall, doc),
                label if several else "",
            )
    several = len(analysed) > 1
    for label, doc in analysed:
        who = f"-{label}" if several else ""
        about = f": {label}" if several else ""
        detector = label if several else ""
        if "errors" in doc:
            add(
                f"errors{who}",
                f"TIDE error breakdown{about}",
                "errors",
                partial(error_breakdown, doc["errors"]),
                detector,
            )
        if "confusion" in doc:
            add(
                f"confusion{who}",
                f"Confusion matrix{about}",
                "errors",
                partial(confusion_matrix, doc["confusion"], top_k=top_k),
                detector,
            )
        if "decomposition" in doc:
            add(
                f"decomposition{who}",
                f"AP decomposition factor curves{about}",
                "errors",
                partial(decomposition_curves, doc["decomposition"]),
                detector,
            )


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
