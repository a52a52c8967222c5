"""Renderers of ``deteval analyze``: the JSON contract and the tables of TIDE errors, AP decomposition, confusion."""

from __future__ import annotations

from collections.abc import Sequence

from deteval._version import __version__
from deteval.protocol import Protocol
from deteval.report._format import _md_escape
from deteval.tide import MAIN_ERRORS, SPECIAL_ERRORS

__all__ = [
    "analysis_json",
    "format_analysis_table",
    "format_analysis_markdown",
]


# --------------------------------------------------------------------------------------------
# deteval analyze


def analysis_json(
    parts: dict, *, protocol: Protocol, inputs: dict | None = None, warnings: Sequence[str] = ()
) -> dict:
    """The ``analyze`` JSON contract: version, inputs and protocol around the analysis parts.

    ``parts`` is :meth:`deteval.diagnose.AnalysisResult.to_dict` (``errors``, ``decomposition``,
    ``confusion``: the parts asked for).
    """
    return {
        "deteval_version": __version__,
        "inputs": dict(inputs or {}),
        "protocol": {
            "name": protocol.name,
            "protocol_hash": protocol.fingerprint(),
            "config": protocol.to_dict(),
        },
        **parts,
        "warnings": list(warnings),
    }


def _analysis_num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _analysis_sections(doc: dict) -> list:
    """(title, header, rows) tables of an analysis document."""
    out = []
    if "errors" in doc:
        e = doc["errors"]
        title = (
            f"TIDE errors (mode {e['mode']}, foreground {e['thresholds']['foreground']:g}, "
            f"background {e['thresholds']['background']:g}): AP {_analysis_num(e['ap'])}, dAP per type"
        )
        header = ["", *MAIN_ERRORS, *SPECIAL_ERRORS]
        rows = [
            [
                "all",
                *(_analysis_num(e["main"][k]) for k in MAIN_ERRORS),
                *(_analysis_num(e["special"][k]) for k in SPECIAL_ERRORS),
            ],
            ["count", *(str(e["counts"][k]) for k in MAIN_ERRORS), "", ""],
        ]
        for c in e["per_class"]:
            rows.append(
                [
                    c["name"],
                    *(_analysis_num(c["main"][k]) for k in MAIN_ERRORS),
                    *(_analysis_num(c["special"][k]) for k in SPECIAL_ERRORS),
                ]
            )
        out.append((title, header, rows))
    if "decomposition" in doc:
        d = doc["decomposition"]
        title = f"AP decomposition at IoU {d['iou_threshold']:g} (D = L x C|L)"
        header = ["class", "AP_D", "AP_L", "AP_CgL"]
        rows = [
            [c["name"], _analysis_num(c["AP_D"]), _analysis_num(c["AP_L"]), _analysis_num(c["AP_CgL"])]
            for c in d["per_class"]
        ]
        rows.append(
            [
                "mean",
                _analysis_num(d["mean"]["AP_D"]),
                _analysis_num(d["mean"]["AP_L"]),
                _analysis_num(d["mean"]["AP_CgL"]),
            ]
        )
        out.append((title, header, rows))
    if "confusion" in doc:
        c = doc["confusion"]
        title = (
            f"Confusion matrix at IoU {c['iou_threshold']:g}, confidence {c['confidence']:g} "
            f"(rows: true, columns: predicted)"
        )
        header = ["", *c["labels"]]
        rows = [[label, *(str(v) for v in row)] for label, row in zip(c["labels"], c["matrix"])]
        out.append((title, header, rows))
    return out


def format_analysis_table(doc: dict) -> str:
    """Plain-text tables of an :meth:`AnalysisResult.to_dict` document."""
    blocks = []
    for title, header, rows in _analysis_sections(doc):
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        lines = [
            title,
            "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths))),
        ]
        for r in rows:
            lines.append(
                "  ".join(
                    str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths))
                )
            )
        blocks.append("\n".join(line.rstrip() for line in lines))
    return "\n\n".join(blocks) + "\n"


def format_analysis_markdown(doc: dict) -> str:
    """Markdown tables of an :meth:`AnalysisResult.to_dict` document."""
    blocks = []
    for title, header, rows in _analysis_sections(doc):
        lines = [
            f"**{title}**",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join("---" for _ in header) + "|",
        ]
        lines += ["| " + " | ".join(_md_escape(str(v)) for v in r) + " |" for r in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
