r"""One self-contained HTML report of a run: what ``deteval report ... --out report.html`` writes.

The file needs nothing but a browser: figures are inline base64 PNG, the style sheet and a small
script (table sorting, an image check, a self-test) are inline, no font or script is fetched.
Every number comes from the values' ``to_dict()`` documents (the JSON the CLI writes) and every
figure from :mod:`deteval.plot`, so the report never computes a number another way. Every user
string (class names, paths, protocol names) is escaped, control characters shown as ``\xNN``.

This module assembles the document and its figure sections; the cells and :func:`escape` live in
``deteval.plot._html_format``, the table-only sections in ``deteval.plot._html_tables``, the
inline style sheet and script in ``deteval.plot._html_assets``.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deteval._values import frozen
from deteval._version import __version__
from deteval.plot._base import as_document, atomic_write, figure_bytes
from deteval.plot._beyond import beyond_section
from deteval.plot._html_assets import _CSS, _JS
from deteval.plot._html_differences import DIFFERENCES_CSS, differences_section
from deteval.plot._html_format import _num, _num_cell, _table, _text_cell, escape
from deteval.plot._html_tables import _class_section, _inputs_section, _metrics_section, _notes_section
from deteval.plot._select import named_results
from deteval.plot.files import FigureSpec, beyond_of, figure_specs, per_detector
from deteval.sharding import run_forked, usable_cpus
from deteval.stats import Comparison, Interval, verdict
from deteval.tide import whose_ap

__all__ = ["render_report", "write_report", "escape"]


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@frozen
class _DrawnSpec(FigureSpec):
    """A figure spec whose PNG is already drawn (:func:`_drawn`)."""

    png: bytes = b""


def _draw_part(specs: list, part: list, conn: Any) -> None:
    """Forked worker (:func:`deteval.sharding.run_forked`): the PNGs of ``specs[i]`` for ``i`` in ``part``."""
    try:
        conn.send(("png", [figure_bytes(specs[i].build(), "png") for i in part]))
    except Exception as error:  # re-raised by the parent
        conn.send(("error", error))
    conn.close()


def _draw_here(specs: list, part: list, progress: Any = None, scale: int = 1) -> list:
    """The PNGs of ``specs[i]`` for ``i`` in ``part``, drawn here; ``progress(done, total)`` after each.

    ``scale``: figures drawn meanwhile per figure drawn here (the forked processes draw the
    others at the same pace), so the count is an estimate until the last part arrives.
    """
    out = []
    for k, i in enumerate(part, start=1):
        out.append(figure_bytes(specs[i].build(), "png"))
        if progress is not None:
            progress(min(len(specs), k * scale), len(specs))
    return out


def _drawn(specs: list, progress: Any = None) -> list:
    """The specs with their PNGs drawn, by every usable CPU (forked processes; the same bytes).

    Drawing is matplotlib's text layout and rasterising, about a second a figure: with two or
    more figures and CPUs, the parent draws every n-th and forked processes the others.
    ``progress(done, total)`` is called as figures are drawn (the CLI's progress bar).
    """
    import multiprocessing as mp

    n_proc = min(usable_cpus(), len(specs))
    if n_proc < 2 or "fork" not in mp.get_all_start_methods():
        if progress is None:
            return specs  # drawn as the sections are assembled
        parts = [list(range(len(specs)))]
        found = [_draw_here(specs, parts[0], progress)]
    else:
        parts = [list(range(k, len(specs), n_proc)) for k in range(n_proc)]
        here = functools.partial(_draw_here, progress=progress, scale=n_proc)
        found = run_forked(
            _draw_part, specs, parts, what="a figure-drawing", expected="PNG images", here=here
        )
    if progress is not None:
        progress(len(specs), len(specs))
    pngs: list = [b""] * len(specs)
    for part, data in zip(parts, found, strict=True):
        for i, png in zip(part, data, strict=True):
            pngs[i] = png
    return [
        _DrawnSpec(s.name, s.caption, s.section, s.build, s.detector, png)
        for s, png in zip(specs, pngs, strict=True)
    ]


def _figure(spec: FigureSpec) -> str:
    data = spec.png if isinstance(spec, _DrawnSpec) else figure_bytes(spec.build(), "png")
    width, height = _png_size(data)
    encoded = base64.b64encode(data).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{encoded}" width="{width}" height="{height}" '
        f'alt="{escape(spec.caption)}" loading="eager"><figcaption>{escape(spec.caption)}</figcaption></figure>'
    )


# ------------------------------------------------------------------------------------------
# Sections
# ------------------------------------------------------------------------------------------


def _explain_section(explanations: list, specs: list, anchor: str = "explain", heading: str = "") -> str:
    parts = [f'<section id="{anchor}"><h2>Why the protocols differ{escape(heading)}</h2>']
    figures = [s for s in specs if s.section == "explain"]
    for i, doc in enumerate(explanations):
        parts.append(f"<h3>{escape(doc.get('from'))} → {escape(doc.get('to'))}</h3>")
        parts.append(f'<p class="summary"><code>{escape(doc.get("summary", ""))}</code></p>')
        parts.append(f'<p class="hint">Compared: {escape(doc.get("definition", ""))}</p>')
        rows = [
            f'<tr><td>({escape(doc.get("from"))})</td><td class="num"></td>{_num_cell(doc.get("start"), 4)}'
            "<td></td><td></td></tr>"
        ]
        for s in doc.get("steps", []):
            fields = "; ".join(
                f"{f['field']}: {json.dumps(f['from'])} → {json.dumps(f['to'])}" for f in s["fields"]
            )
            moved = ", ".join(f"{c['name']} {_num(c['change'], 4, sign=True)}" for c in s["classes"][:8])
            if len(s["classes"]) > 8:
                moved += f", … ({len(s['classes'])} classes)"
            name = s["step"] + ("" if s.get("affects_measure", True) else " *")
            rows.append(
                f"<tr>{_text_cell(name)}{_num_cell(s.get('change'), 4, sign=True)}"
                f"{_num_cell(s.get('value'), 4)}<td>{escape(fields)}</td><td>{escape(moved)}</td></tr>"
            )
        rows.append(
            f'<tr class="total"><td>total</td>{_num_cell(doc.get("total"), 4, sign=True)}'
            f"{_num_cell(doc.get('end'), 4)}<td></td><td></td></tr>"
        )
        header = [
            ("step", "text"),
            ("change", "num"),
            (escape(doc.get("measure", "value")), "num"),
            ("fields changed", "text"),
            ("classes moved", "text"),
        ]
        parts.append(_table(header, rows, sortable=False))
        for note in doc.get("notes", []):
            parts.append(f'<p class="hint">{escape(note)}</p>')
        if i < len(figures):
            parts.append(_figure(figures[i]))
    parts.append("</section>")
    return "".join(parts)


def _errors_section(doc: dict, specs: list, anchor: str = "errors", heading: str = "") -> str:
    """The errors section; ``specs``: this analysis' figures only (found by kind, before any ``-``)."""
    figures = {s.name.split("-")[0]: s for s in specs if s.section == "errors"}
    tables = anchor.replace("errors", "")  # "" for one detector, "-2" ... of several
    parts = [f'<section id="{anchor}"><h2>Errors and their cost{escape(heading)}</h2>']
    if "errors" in doc:
        e = doc["errors"]
        main, special = list(e["main"]), list(e["special"])
        whose = escape(whose_ap(e, (doc.get("protocol") or {}).get("name")))
        parts.append(
            f"<h3>TIDE error types (mode {escape(e.get('mode'))}): AP {_num(e.get('ap'))} ({whose})</h3>"
        )
        header = [("", "text")] + [(escape(k), "num") for k in main + special]
        rows = [
            '<tr><th scope="row">dAP</th>'
            + "".join(_num_cell(e["main"][k]) for k in main)
            + "".join(_num_cell(e["special"][k]) for k in special)
            + "</tr>",
            '<tr><th scope="row">count</th>'
            + "".join(_num_cell(e["counts"].get(k)) for k in main)
            + "<td></td>" * len(special)
            + "</tr>",
        ]
        parts.append(_table(header, rows, sortable=False))
        if "errors" in figures:
            parts.append(_figure(figures["errors"]))
        per_class = e.get("per_class", [])
        if per_class:
            header = [("class", "text"), ("AP", "num")] + [(escape(k), "num") for k in main + special]
            rows = [
                "<tr>"
                + _text_cell(c["name"])
                + _num_cell(c.get("ap"))
                + "".join(_num_cell((c.get("main") or {}).get(k)) for k in main)
                + "".join(_num_cell((c.get("special") or {}).get(k)) for k in special)
                + "</tr>"
                for c in per_class
            ]
            parts.append(
                f"<details><summary>dAP per class ({len(per_class)} classes)</summary>"
                f"{_table(header, rows, table_id='tide-table' + tables)}</details>"
            )
    if "confusion" in doc:
        c = doc["confusion"]
        parts.append(
            f"<h3>Confusion matrix ({len(c['labels']) - 1} classes + background, IoU "
            f"{_num(c.get('iou_threshold'), 2)}, confidence {_num(c.get('confidence'), 2)})</h3>"
        )
        if "confusion" in figures:
            parts.append(_figure(figures["confusion"]))
    if "decomposition" in doc:
        d = doc["decomposition"]
        mean = d.get("mean", {})
        parts.append(
            f"<h3>AP decomposition at IoU {_num(d.get('iou_threshold'), 2)}: mean AP_D "
            f"{_num(mean.get('AP_D'))}, AP_L {_num(mean.get('AP_L'))}, AP_C|L {_num(mean.get('AP_CgL'))}</h3>"
        )
        if "decomposition" in figures:
            parts.append(_figure(figures["decomposition"]))
        header = [("class", "text"), ("AP_D", "num"), ("AP_L", "num"), ("AP_C|L", "num")]
        rows = [
            "<tr>"
            + _text_cell(c["name"])
            + _num_cell(c.get("AP_D"))
            + _num_cell(c.get("AP_L"))
            + _num_cell(c.get("AP_CgL"))
            + "</tr>"
            for c in d.get("per_class", [])
        ]
        parts.append(
            f"<details><summary>Decomposition per class ({len(rows)} classes)</summary>"
            f"{_table(header, rows, table_id='decomposition-table' + tables)}</details>"
        )
    parts.append("</section>")
    return "".join(parts)


def _intervals_section(doc: dict, specs: list) -> str:
    settings = doc.get("bootstrap", {})
    results = doc.get("results", [])
    metrics: list = []
    for r in results:
        for m in r.get("metrics", {}):
            if m not in metrics:
                metrics.append(m)
    rows = []
    for r in results:
        cells = []
        for m in metrics:
            point = r.get("metrics", {}).get(m)
            ci = (r.get("metrics_ci") or {}).get(m)
            bias = (r.get("metrics_bias") or {}).get(m)
            text = _num(point) + ("" if ci is None else f" [{_num(ci[0])}, {_num(ci[1])}]")
            text += f" bias {bias:+.3f}" if isinstance(bias, (int, float)) and bias == bias else ""
            cells.append(f"<td class=num>{text}</td>")
        rows.append(
            "<tr>"
            + _text_cell(r.get("detector", ""))
            + _text_cell(r.get("protocol", ""))
            + "".join(cells)
            + "</tr>"
        )
    header = [("detector", "text"), ("protocol", "text")] + [(escape(m), "text") for m in metrics]
    level = settings.get("ci")
    parts = [
        f'<section id="intervals"><h2>Uncertainty: bootstrap over images</h2>'
        f'<p class="hint">{_num(level * 100 if level is not None else None, 0)}% '
        f"{escape(settings.get('method', 'percentile'))} intervals (bias: the resampled values' mean "
        f"minus the estimate), "
        f"{escape(settings.get('n', '?'))} resamples, seed {escape(settings.get('seed', '?'))}.</p>",
        _table(header, rows, sortable=False),
    ]
    comparisons = doc.get("comparisons", [])
    if comparisons:
        items = []
        for c in comparisons:
            ci = c.get("ci")
            comparison = Comparison(
                a=c["a"],
                b=c["b"],
                protocol=c["protocol"],
                metric=c["metric"],
                difference=c.get("difference"),
                ci=Interval(None, None) if ci is None else Interval(ci[0], ci[1]),
                p_value=c.get("p_value"),
                level=level if level is not None else 0.95,
            )
            items.append(f"<li><code>{escape(verdict(comparison))}</code></li>")
        parts.append(f"<h3>Paired comparisons</h3><ul class=verdicts>{''.join(items)}</ul>")
    for spec in specs:
        if spec.section == "intervals":
            parts.append(_figure(spec))
    parts.append("</section>")
    return "".join(parts)


def _about(section: str, subject: str | None, doc: dict | None = None, *, others: bool = True) -> str:
    """``section`` with a line saying which detector (and protocol) it shows, after its heading.

    ``others``: the other detectors have no such section (said); False when each detector has its own.
    """
    if subject is None:
        return section
    protocol = ((doc or {}).get("protocol") or {}).get("name")
    text = f"Detector: {escape(subject)}" + (f", protocol {escape(protocol)}" if protocol else "")
    text += " (the other detectors are not analysed here)." if others else "."
    end = section.index("</h2>") + len("</h2>")
    return f'{section[:end]}<p class="hint about">{text}</p>{section[end:]}'


def _detector_sections(
    explained: list[tuple[str, list]], analysed: list[tuple[str, dict]], specs: list, subject: str | None
) -> list[tuple[str, str, str]]:
    """The explain and errors sections: (anchor, nav label, html).

    One detector's: one ``#explain`` and one ``#errors`` (said to be of ``subject`` when given);
    several detectors': one of each per detector (``#explain-1``, ``#errors-1``, ...), each
    with its figures and a line naming its detector.
    """
    out = []
    groups: list[tuple[str, str, list[tuple[str, Any]]]] = [
        ("explain", "Explain", list(explained)),
        ("errors", "Errors", list(analysed)),
    ]
    for kind, label, pairs in groups:
        several = len(pairs) > 1
        for i, (name, value) in enumerate(pairs, start=1):
            anchor = f"{kind}-{i}" if several else kind
            mine = [s for s in specs if s.detector == (name if several else "")]
            heading = f": {name}" if several else ""
            doc: dict | None = None
            if kind == "explain":
                section = _explain_section(value, mine, anchor, heading)
            else:
                section, doc = _errors_section(value, mine, anchor, heading), value
            section = _about(section, name, doc, others=False) if several else _about(section, subject, doc)
            out.append((anchor, f"{label}: {name}" if several else label, section))
    return out


def _late_sections(
    bootstrap_doc: Any, gallery: Any, label_errors: Any, subject: str | None
) -> tuple[list[tuple[str, str, str]], str, str]:
    """The per-class differences, the error browser and the label errors: (anchor, label, html), css, js."""
    out: list[tuple[str, str, str]] = []
    css, js = _CSS, _JS
    differences = differences_section(bootstrap_doc) if bootstrap_doc else ""
    if differences:  # several detectors resampled: per-class paired differences
        out.append(("differences", "Differences", differences))
        css += DIFFERENCES_CSS
    if gallery is not None:
        from deteval.plot._gallery_html import _GALLERY_CSS, _GALLERY_JS, gallery_html

        section, several = gallery_html(gallery)  # several detectors: a menu, no "whose" line
        out.append(("gallery", "Error browser", section if several else _about(section, subject)))
        css, js = css + _GALLERY_CSS, js + _GALLERY_JS
    if label_errors is not None:
        from deteval.plot._gallery_html import label_errors_html

        section, several = label_errors_html(label_errors)
        out.append(("label-errors", "Label errors", section if several else _about(section, subject)))
    return out, css, js


def render_report(
    results: Any,
    *,
    analysis: Any = None,
    explanation: Any = None,
    bootstrap: Any = None,
    title: str | None = None,
    top_k: int = 30,
    max_classes: int = 12,
    progress: Callable[[int, int], None] | None = None,
    gallery: Any = None,
    label_errors: Any = None,
    subject: str | None = None,
    beyond: Any = None,
) -> str:
    """The report as one HTML string (see :func:`write_report`)."""
    named = named_results(results, where="write_report")
    docs = [r.to_dict() for _, r in named]
    analysed = [(name, as_document(a, what="analysis")) for name, a in per_detector(analysis)]
    explained = [
        (name, [as_document(e, what="explanation") for e in (e if isinstance(e, (list, tuple)) else [e])])
        for name, e in per_detector(explanation)
    ]
    explained = [(name, docs) for name, docs in explained if docs]
    bootstrap_doc = None if bootstrap is None else as_document(bootstrap, what="bootstrap")
    specs = figure_specs(
        results,
        analysis=dict(analysed) if len(analysed) > 1 else (analysed[0][1] if analysed else None),
        explanation=(dict(explained) if len(explained) > 1 else explained[0][1]) if explained else None,
        bootstrap=bootstrap_doc,
        top_k=top_k,
        max_classes=max_classes,
        beyond=beyond,
    )
    beyond_docs = beyond_of(beyond, analysed)
    specs = _drawn(specs, progress)
    if title is None:
        title = "deteval report: " + ", ".join(label for label, _ in named)
    nav = [
        ("inputs", "Inputs"),
        ("metrics", "Metrics"),
        ("protocols", "Protocols"),
        ("classes", "Classes"),
        ("figures", "Figures"),
    ]
    detector_sections = _detector_sections(explained, [(n, d) for n, d in analysed if d], specs, subject)
    nav += [(anchor, label) for anchor, label, _ in detector_sections]
    if bootstrap_doc:
        nav.append(("intervals", "Intervals"))
    inputs, protocols = _inputs_section(named, docs)
    sections = [
        inputs,
        f'<div class="cols">{_metrics_section(named, docs)}{protocols}</div>',
        _class_section(named, docs),
    ]
    figures = "".join(_figure(s) for s in specs if s.section == "results")
    sections.append(f'<section id="figures"><h2>Figures</h2>{figures}</section>')
    sections += [section for _, _, section in detector_sections]
    if bootstrap_doc:
        sections.append(_intervals_section(bootstrap_doc, specs))
    if beyond_docs:  # calibration and optimal LRP (deteval.plot._beyond)
        nav.append(("beyond", "Calibration and LRP"))
        sections.append(beyond_section(beyond_docs, specs, _figure))
    extra, css, js = _late_sections(bootstrap_doc, gallery, label_errors, subject)
    for key, label, section in extra:
        nav.append((key, label))
        sections.append(section)
    notes = _notes_section(named, docs)
    if notes:
        nav.append(("notes", "Notes"))
        sections.append(notes)
    first = named[0][1].inputs
    subtitle = (
        f"deteval {escape(__version__)} · {len(named)} result{'s' if len(named) > 1 else ''} · "
        f"ground truth {escape(first.get('gt', '?'))}"
    )
    nav_html = "".join(f'<a href="#{key}">{label}</a>' for key, label in nav)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{css}</style></head>\n"
        f"<body><header><h1>{escape(title)}</h1><p>{subtitle}</p></header>"
        f"<nav>{nav_html}</nav><main>{''.join(sections)}</main>"
        "<footer>Self-contained: figures are inline PNG, no network access is needed. "
        "Numbers are those of deteval's JSON output for the same run.</footer>"
        '<output id="selftest" hidden></output>'
        f"<script>{js}</script></body></html>\n"
    )


def write_report(
    results: Any,
    *,
    out: os.PathLike | str,
    analysis: Any = None,
    explanation: Any = None,
    bootstrap: Any = None,
    title: str | None = None,
    top_k: int = 30,
    max_classes: int = 12,
    progress: Callable[[int, int], None] | None = None,
    gallery: Any = None,
    label_errors: Any = None,
    subject: str | None = None,
    beyond: Any = None,
) -> Path:
    """Write one self-contained HTML report of a run.

    Parameters
    ----------
    results : EvalResult, sequence or mapping label -> EvalResult
        Several detectors and / or protocols are shown side by side (a mapping names them).
    out : path
        The HTML file. Rendered completely in memory first, then written by
        :func:`deteval.io.output.write_output`: atomically (a temporary file beside it -- or
        beside the target of a symbolic link -- fsynced, renamed over it; if anything fails,
        ``out`` is left as it was), or directly into a device or FIFO.
    analysis : AnalysisResult or dict, or a mapping detector name -> one of them, optional
        :func:`deteval.diagnose.analyze` 's value or document: TIDE errors, confusion matrix,
        decomposition (``#errors``); of several detectors, one section each (``#errors-1``,
        ``#errors-2``, ..., headed with the detector's name, figures named ``errors-<name>``).
    explanation : Explanation, dict or a list of them, or a mapping detector name -> one of those, optional
        :func:`deteval.explain` walks (``#explain``); of several detectors, one section each
        (``#explain-1``, ...).
    bootstrap : BootstrapResult, ComparisonResult or dict, optional
        Intervals and paired comparisons (:mod:`deteval.stats`); a ComparisonResult's
        ``class_comparisons`` add the per-class paired differences (``#differences``).
    title : str, optional
    top_k, max_classes : int
        Bars / heatmap cells and curve panels per figure; the per-class table lists every class.
    progress : callable, optional
        Called as ``progress(done, total)`` while the figures are drawn, the longest step
        (``deteval report``'s progress bar; with forked drawing, ``done`` is an estimate until
        the last figure arrives).
    gallery : Gallery or mapping detector name -> Gallery, optional
        :func:`deteval.plot.gallery.build_gallery`'s value: the error browser (``#gallery``),
        within its own byte budget; of several detectors, one section with a detector menu
        (each gallery within its own budget).
    label_errors : LabelErrors or dict, or a mapping detector name -> either, optional
        :func:`deteval.label_errors.label_errors`'s value or document (``#label-errors``); of
        several detectors, a table per detector.
    subject : str, optional
        Which detector a single analysis, explanation, gallery and label errors are of when the
        run has others (said at the top of each of those sections, with "the other detectors
        are not analysed here"); sections given per detector in a mapping name their own.
    beyond : BeyondAP, dict or mapping label -> one of them, optional
        Calibration and optimal LRP per detector (``#beyond``: D-ECE overall and per class with
        the reliability diagram, moLRP and each class's oLRP, components and optimal threshold
        with the components figure; intervals and paired differences when bootstrapped).
        Without it, an ``analysis`` with ``calibration`` / ``lrp`` gives them.

    Returns
    -------
    Path

    Examples
    --------
    >>> import deteval, tempfile, pathlib
    >>> r = deteval.evaluate("fixtures/coco/gt.json", "fixtures/coco/dt.json", "coco")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = write_report(r, out=pathlib.Path(d) / "report.html")
    ...     path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    True
    """
    text = render_report(
        results,
        analysis=analysis,
        explanation=explanation,
        bootstrap=bootstrap,
        title=title,
        top_k=top_k,
        max_classes=max_classes,
        progress=progress,
        gallery=gallery,
        label_errors=label_errors,
        subject=subject,
        beyond=beyond,
    )
    return atomic_write(out, text.encode("utf-8"))
