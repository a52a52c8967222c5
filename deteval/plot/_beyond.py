"""Calibration and optimal LRP in the figures and the HTML report, per detector.

A *beyond document* is one detector's ``{"calibration": ..., "lrp": ...}`` (the JSON keys of
``deteval analyze --calibration --lrp`` and ``deteval evaluate --calibration --lrp``), with, when
bootstrapped, ``calibration_ci`` / ``lrp_ci`` / ``bootstrap`` and ``paired`` (the differences to
another detector), as :func:`deteval.stats.beyond.beyond_intervals` gives them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from deteval.errors import ConfigError
from deteval.plot._base import as_document
from deteval.plot._html_format import _num, _num_cell, _table, _text_cell, escape
from deteval.plot.bars import forest
from deteval.plot.lrp import lrp_components
from deteval.plot.reliability import reliability_diagram

__all__ = ["beyond_documents", "add_beyond_specs", "beyond_section", "beyond_forest_document"]

#: The measures of the intervals figure: (JSON part, key).
_FOREST = (
    ("calibration_ci", "D-ECE"),
    ("lrp_ci", "moLRP"),
    ("lrp_ci", "moLRP_loc"),
    ("lrp_ci", "moLRP_FP"),
    ("lrp_ci", "moLRP_FN"),
)

_KEYS = ("calibration", "lrp", "calibration_ci", "lrp_ci", "paired", "bootstrap")


def _document(value: Any, label: str) -> dict:
    doc = as_document(value, what=f"beyond ({label})")
    if "calibration" not in doc and "lrp" not in doc:
        raise ConfigError(
            f"deteval.plot: beyond ({label}): expected a document with 'calibration' and/or 'lrp' "
            f"(deteval.beyond_ap's value or the analyze JSON), found keys {sorted(doc)[:8]}"
        )
    return {k: doc[k] for k in _KEYS if k in doc}


def beyond_documents(beyond: Any, analysis: dict | None = None) -> list[tuple[str, dict]]:
    """(label, beyond document) per detector.

    Parameters
    ----------
    beyond : BeyondAP, dict, mapping label -> one of them, or (label, one of them) pairs, optional
        One detector's parts (label ``""``) or several detectors' (in the given order).
    analysis : dict, optional
        An analysis document: its ``calibration`` / ``lrp`` when ``beyond`` is None.

    Raises
    ------
    ConfigError
        A document without ``calibration`` or ``lrp``.
    """
    if beyond is None:
        if analysis is not None and ("calibration" in analysis or "lrp" in analysis):
            return [("", _document(analysis, "analysis"))]
        return []
    if isinstance(beyond, Mapping) and not any(k in beyond for k in _KEYS):
        return [(str(label), _document(value, str(label))) for label, value in beyond.items()]
    if isinstance(beyond, (list, tuple)):  # (label, document) pairs: labels may repeat
        return [(str(label), _document(value, str(label))) for label, value in beyond]
    return [("", _document(beyond, "beyond"))]


def beyond_forest_document(docs: list[tuple[str, dict]]) -> dict | None:
    """The intervals of D-ECE and moLRP (and its components) as :func:`deteval.plot.forest` 's input.

    One row per detector and measure; the paired differences (``paired``) as comparisons
    (``p_value`` None: these intervals have no test). None when no document has intervals.
    """
    results, comparisons, settings = [], [], None
    for label, doc in docs:
        if "calibration_ci" not in doc and "lrp_ci" not in doc:
            continue
        settings = settings or doc.get("bootstrap")
        found = [(key, doc[part][key]) for part, key in _FOREST if part in doc]
        results.append(
            {
                "detector": label or "detector",
                "protocol": "",
                "metrics": {key: entry["value"] for key, entry in found},
                "metrics_ci": {key: entry["ci"] for key, entry in found},
            }
        )
        paired: dict = doc.get("paired") or {}
        for part, key in _FOREST:
            if part in paired:
                entry = paired[part][key]
                comparisons.append(
                    {
                        "a": paired.get("against"),
                        "b": paired.get("dt"),
                        "protocol": "",
                        "metric": key,
                        "difference": entry["value"],
                        "ci": entry["ci"],
                        "p_value": None,
                    }
                )
    if not results:
        return None
    return {"bootstrap": settings or {}, "results": results, "comparisons": comparisons}


def add_beyond_specs(docs: list[tuple[str, dict]], add: Callable[..., None]) -> None:
    """Add the figures of section ``beyond``: per detector its reliability and LRP figures.

    Then, when bootstrapped, one figure of every detector's intervals (``beyond_intervals``).
    """
    several = len(docs) > 1
    for label, doc in docs:
        suffix = f"-{label}" if several and label else ""
        about = f": {label}" if label else ""
        if "calibration" in doc:
            add(
                f"reliability{suffix}",
                f"Reliability diagram (D-ECE){about}",
                "beyond",
                partial(reliability_diagram, doc["calibration"]),
            )
        if "lrp" in doc:
            add(
                f"lrp_components{suffix}",
                f"Optimal LRP: components and thresholds per class{about}",
                "beyond",
                partial(lrp_components, doc["lrp"]),
            )
    intervals = beyond_forest_document(docs)
    if intervals is not None:
        add(
            "beyond_intervals",
            "Bootstrap intervals of D-ECE and moLRP (and its components); paired differences to the first detector",
            "beyond",
            partial(forest, intervals),
        )


def _ci_text(entry: dict | None) -> str:
    if not entry or entry.get("ci") is None:
        return ""
    lo, hi = entry["ci"]
    return f"[{_num(lo, 4)}, {_num(hi, 4)}]"


def _settings_text(settings: dict) -> str:
    level = settings.get("ci")
    kind = "paired differences b - a, " if settings.get("difference") else ""
    return (
        f"{kind}{_num(level * 100 if level is not None else None, 0)}% {escape(settings.get('method'))} "
        f"intervals, {escape(settings.get('n'))} image resamples, seed {escape(settings.get('seed'))}"
    )


def _calibration_html(doc: dict, slug: str) -> list[str]:
    c = doc["calibration"]
    cis = doc.get("calibration_ci")
    binning = " × ".join(f"{b} {escape(f)}" for f, b in zip(c["features"], c["bins"]))
    parts = [
        f"<h4>Calibration at IoU {_num(c.get('iou_threshold'), 2)} (bins: {binning}): D-ECE "
        f"{_num(c.get('D-ECE'), 4)} {_ci_text(cis and cis['D-ECE'])}</h4>"
    ]
    ci_by_id = {r["category_id"]: r for r in (cis or {}).get("per_class", [])}
    header = [("class", "text"), ("detections", "num"), ("D-ECE", "num")]
    if cis:
        header.append(("interval", "text"))
    rows = []
    for r in c["per_class"]:
        row = "<tr>" + _text_cell(r["name"]) + _num_cell(r.get("n_det")) + _num_cell(r.get("D-ECE"), 4)
        if cis:
            row += f"<td>{_ci_text((ci_by_id.get(r['category_id']) or {}).get('D-ECE'))}</td>"
        rows.append(row + "</tr>")
    parts.append(
        f"<details><summary>D-ECE per class ({len(rows)} classes)</summary>"
        f"{_table(header, rows, table_id=f'calibration-table{slug}')}</details>"
    )
    return parts


def _lrp_html(doc: dict, slug: str) -> list[str]:
    lrp = doc["lrp"]
    cis = doc.get("lrp_ci")
    means = ", ".join(
        f"{name} {_num(lrp.get(key), 4)}"
        for name, key in (("loc", "moLRP_loc"), ("FP", "moLRP_FP"), ("FN", "moLRP_FN"))
    )
    parts = [
        f"<h4>Optimal LRP at tau {_num(lrp.get('tau'), 2)} (area {escape(lrp.get('area'))}, maxDets "
        f"{escape(lrp.get('max_dets') or 'all')}): moLRP {_num(lrp.get('moLRP'), 4)} "
        f"{_ci_text(cis and cis['moLRP'])} ({means})</h4>"
    ]
    ci_by_id = {r["category_id"]: r for r in (cis or {}).get("per_class", [])}
    header = [
        ("class", "text"),
        ("oLRP", "num"),
        ("loc", "num"),
        ("FP", "num"),
        ("FN", "num"),
        ("threshold", "num"),
        ("TP", "num"),
        ("FP count", "num"),
        ("FN count", "num"),
    ]
    if cis:
        header.append(("oLRP interval", "text"))
    rows = []
    for r in lrp["per_class"]:
        counts = [None if r.get(k, -1) < 0 else r[k] for k in ("n_tp", "n_fp", "n_fn")]
        row = (
            "<tr>"
            + _text_cell(r["name"])
            + "".join(_num_cell(r.get(k), 4) for k in ("oLRP", "oLRP_loc", "oLRP_FP", "oLRP_FN", "threshold"))
            + "".join(_num_cell(v) for v in counts)
        )
        if cis:
            row += f"<td>{_ci_text((ci_by_id.get(r['category_id']) or {}).get('oLRP'))}</td>"
        rows.append(row + "</tr>")
    parts.append(_table(header, rows, table_id=f"lrp-table{slug}"))
    return parts


def _paired_html(paired: dict) -> list[str]:
    rows = []
    if "calibration_ci" in paired:
        e = paired["calibration_ci"]["D-ECE"]
        rows.append(
            f"<tr>{_text_cell('D-ECE')}{_num_cell(e.get('value'), 4, sign=True)}<td>{_ci_text(e)}</td></tr>"
        )
    if "lrp_ci" in paired:
        for key in ("moLRP", "moLRP_loc", "moLRP_FP", "moLRP_FN"):
            e = paired["lrp_ci"][key]
            rows.append(
                f"<tr>{_text_cell(key)}{_num_cell(e.get('value'), 4, sign=True)}<td>{_ci_text(e)}</td></tr>"
            )
    header = [("measure", "text"), ("difference", "num"), ("interval", "text")]
    return [
        f"<p>{escape(paired.get('dt'))} minus {escape(paired.get('against'))} "
        f"({_settings_text(paired.get('bootstrap', {}))}; lower is better for both, an interval "
        "without 0 is a difference at that level):</p>",
        _table(header, rows, sortable=False),
    ]


def beyond_section(docs: list[tuple[str, dict]], specs: list, figure: Callable[[Any], str]) -> str:
    """The report's ``#beyond`` section: per detector its calibration and LRP tables and figures.

    ``figure`` renders one drawn spec (the report's ``<figure>`` markup).
    """
    figures = [s for s in specs if s.section == "beyond"]
    parts = [
        '<section id="beyond"><h2>Calibration and optimal LRP</h2>'
        '<p class="hint">D-ECE: the gap between confidence and fraction correct, weighted by '
        "detections per bin (0 is calibrated). oLRP: localisation, false positives and false "
        "negatives in one error at each class's best confidence threshold (0 is perfect, 1 the "
        "worst); its parts add up to it.</p>"
    ]
    for k, (label, doc) in enumerate(docs):
        slug = f"-{k}" if len(docs) > 1 else ""
        if label:
            parts.append(f"<h3>{escape(label)}</h3>")
        if "bootstrap" in doc and ("calibration_ci" in doc or "lrp_ci" in doc):
            parts.append(f'<p class="hint">Intervals: {_settings_text(doc["bootstrap"])}.</p>')
        if "calibration" in doc:
            parts += _calibration_html(doc, slug)
            parts += [figure(s) for s in figures[:1]]  # in add_beyond_specs' order
            figures = figures[1:]
        if "lrp" in doc:
            parts += _lrp_html(doc, slug)
            parts += [figure(s) for s in figures[:1]]
            figures = figures[1:]
        if "paired" in doc:
            parts += _paired_html(doc["paired"])
    parts += [figure(s) for s in figures]  # the intervals of every detector
    parts.append("</section>")
    return "".join(parts)
