"""Every text renderer: results, comparisons, explanations, validation, protocols -> text or JSON.

Pure functions returning strings or dicts; printing (and writing files) is the CLI's job.
Every renderer is importable from here (``from deteval.report import format_table``); they live
in submodules by command:

- :mod:`deteval.report.results`: ``evaluate``'s JSON document, table, Markdown, CSV and its
  analysis outputs (confidence tables, mask modes, ``--matches``);
- :mod:`deteval.report.compare`: ``compare``'s side-by-side table and ``--explain``;
- :mod:`deteval.report.explanation`: the walk of :func:`deteval.explain` in words (:class:`Explanation`);
- :mod:`deteval.report.detectors`: several detectors side by side, bootstrap intervals;
- :mod:`deteval.report.analyze`: ``analyze`` (TIDE errors, AP decomposition, confusion);
- :mod:`deteval.report.rank`: ``rank``;
- :mod:`deteval.report.per_image`: ``evaluate``'s ``--per-image`` and explained ``--matches`` CSV;
- :mod:`deteval.report.protocols`: ``validate`` and ``protocols``;
- ``deteval.report._format``: the cells they share (numbers, Markdown escaping, CSV-safe cells).

``__all__`` is the module's list as it was; the ``analyze``, ``rank`` and several-detectors
renderers are importable from here outside it as before. Only ``evaluate``'s renderers
(:mod:`~deteval.report.results`) load with the package; the others load on first use (the
analysis and statistics code their submodules import, and the other commands' renderers, are
not what ``deteval evaluate`` needs).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from deteval.report._format import csv_safe
from deteval.report.results import (
    confidence_json,
    describe_protocol,
    dumps,
    format_confidence_table,
    format_csv,
    format_markdown,
    format_mask_mode_comparison,
    format_matches_csv,
    format_table,
    mask_mode_json,
    to_json,
)

#: Renderers loaded on first use: name -> submodule.
_LAZY = {
    **dict.fromkeys(
        (
            "compare_json",
            "compare_table",
            "format_compare_csv",
            "format_compare_markdown",
            "format_compare_table",
            "format_explanation",
            "format_explanation_markdown",
        ),
        "deteval.report.compare",
    ),
    **dict.fromkeys(
        ("format_operating_points", "format_per_class_metrics", "format_slices_table", "slices_json"),
        "deteval.report.diagnostics",
    ),
    **dict.fromkeys(
        (
            "format_protocol_list",
            "format_protocols",
            "format_protocols_yaml",
            "format_validation",
            "protocols_json",
        ),
        "deteval.report.protocols",
    ),
    **dict.fromkeys(
        ("analysis_json", "dumps_analysis", "format_analysis_markdown", "format_analysis_table"),
        "deteval.report.analyze",
    ),
    **dict.fromkeys(
        ("detectors_json", "format_detectors_csv", "format_detectors_markdown", "format_detectors_table"),
        "deteval.report.detectors",
    ),
    **dict.fromkeys(("format_rank_csv", "format_rank_table"), "deteval.report.rank"),
    **dict.fromkeys(("format_per_image_csv", "format_explained_matches_csv"), "deteval.report.per_image"),
}

if TYPE_CHECKING:
    from deteval.report.analyze import analysis_json as analysis_json
    from deteval.report.analyze import dumps_analysis as dumps_analysis
    from deteval.report.analyze import format_analysis_markdown as format_analysis_markdown
    from deteval.report.analyze import format_analysis_table as format_analysis_table
    from deteval.report.compare import compare_json as compare_json
    from deteval.report.compare import compare_table as compare_table
    from deteval.report.compare import format_compare_csv as format_compare_csv
    from deteval.report.compare import format_compare_markdown as format_compare_markdown
    from deteval.report.compare import format_compare_table as format_compare_table
    from deteval.report.compare import format_explanation as format_explanation
    from deteval.report.compare import format_explanation_markdown as format_explanation_markdown
    from deteval.report.detectors import detectors_json as detectors_json
    from deteval.report.detectors import format_detectors_csv as format_detectors_csv
    from deteval.report.detectors import format_detectors_markdown as format_detectors_markdown
    from deteval.report.detectors import format_detectors_table as format_detectors_table
    from deteval.report.diagnostics import format_operating_points as format_operating_points
    from deteval.report.diagnostics import format_per_class_metrics as format_per_class_metrics
    from deteval.report.diagnostics import format_slices_table as format_slices_table
    from deteval.report.diagnostics import slices_json as slices_json
    from deteval.report.per_image import format_explained_matches_csv as format_explained_matches_csv
    from deteval.report.per_image import format_per_image_csv as format_per_image_csv
    from deteval.report.protocols import format_protocol_list as format_protocol_list
    from deteval.report.protocols import format_protocols as format_protocols
    from deteval.report.protocols import format_protocols_yaml as format_protocols_yaml
    from deteval.report.protocols import format_validation as format_validation
    from deteval.report.protocols import protocols_json as protocols_json
    from deteval.report.rank import format_rank_csv as format_rank_csv
    from deteval.report.rank import format_rank_table as format_rank_table


def __getattr__(name: str) -> Any:
    """A renderer of :data:`_LAZY`, imported from its submodule on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "format_per_class_metrics",
    "format_operating_points",
    "format_slices_table",
    "slices_json",
    "to_json",
    "dumps",
    "format_table",
    "format_markdown",
    "format_csv",
    "csv_safe",
    "describe_protocol",
    "compare_table",
    "format_compare_table",
    "format_compare_markdown",
    "format_compare_csv",
    "compare_json",
    "format_confidence_table",
    "confidence_json",
    "format_mask_mode_comparison",
    "mask_mode_json",
    "format_matches_csv",
    "format_explanation",
    "format_explanation_markdown",
    "format_validation",
    "format_protocol_list",
    "format_protocols",
    "protocols_json",
    "format_protocols_yaml",
]
