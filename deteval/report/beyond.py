"""Tables of the beyond-AP parts: calibration, optimal LRP, mean TP IoU, mAUC.

``deteval analyze`` shows them among its sections; ``deteval evaluate | compare --calibration
--lrp`` one block per result (:func:`format_beyond`).
"""

from __future__ import annotations

from deteval.report._format import _cells, _md_escape

__all__ = ["beyond_sections", "format_beyond", "render_sections"]


def render_sections(sections: list, fmt: str = "table") -> str:
    """(title, header, rows) tables as aligned plain text (``table``) or Markdown (``markdown``)."""
    blocks = []
    for title, header, rows in sections:
        if fmt == "markdown":
            lines = [
                f"**{title}**",
                "",
                "| " + " | ".join(header) + " |",
                "|" + "|".join("---" for _ in header) + "|",
            ]
            lines += ["| " + " | ".join(_md_escape(str(v)) for v in r) + " |" for r in rows]
            blocks.append("\n".join(lines))
            continue
        header, rows = _cells(header), [_cells(r) for r in rows]
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


def format_beyond(doc: dict, *, title: str = "", fmt: str = "table") -> str:
    """One result's calibration / LRP parts (and their intervals) as text.

    ``doc``: ``calibration``, ``lrp``, ``calibration_ci``, ``lrp_ci`` with ``bootstrap`` (the
    settings), ``paired``; ``title`` (the detector and protocol) heads each table.
    """
    sections = beyond_sections(doc)
    if title:
        sections = [(f"{t} [{title}]", header, rows) for t, header, rows in sections]
    return render_sections(sections, fmt)


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def beyond_sections(doc: dict) -> list:
    """(title, header, rows) tables of the ``calibration``, ``lrp``, ``mean_tp_iou``, ``mAUC`` parts."""
    out = []
    if "calibration" in doc:
        c = doc["calibration"]
        binning = " x ".join(f"{b} {f}" for f, b in zip(c["features"], c["bins"], strict=True))
        title = f"Calibration at IoU {c['iou_threshold']:g} (bins: {binning}): D-ECE {_num(c['D-ECE'])}"
        rows = [[r["name"], str(r["n_det"]), _num(r["D-ECE"])] for r in c["per_class"]]
        rows.append(["all", str(sum(r["n_det"] for r in c["per_class"])), _num(c["D-ECE"])])
        out.append((title, ["class", "n_det", "D-ECE"], rows))
    if "lrp" in doc:
        lrp = doc["lrp"]
        title = (
            f"Optimal LRP at tau {lrp['tau']:g} (area {lrp['area']}, maxDets {lrp['max_dets'] or 'all'}): "
            f"moLRP {_num(lrp['moLRP'])}"
        )
        header = ["class", "oLRP", "loc", "FP", "FN", "threshold"]
        keys = ("oLRP", "oLRP_loc", "oLRP_FP", "oLRP_FN", "threshold")
        rows = [[r["name"], *(_num(r[k]) for k in keys)] for r in lrp["per_class"]]
        rows.append(["mean", *(_num(lrp[k]) for k in ("moLRP", "moLRP_loc", "moLRP_FP", "moLRP_FN")), ""])
        out.append((title, header, rows))
    if "calibration_ci" in doc or "lrp_ci" in doc:
        out.append(_interval_section(doc))
    if "paired" in doc:
        title, header, rows = _interval_section(doc["paired"])
        out.append((f"{title}: {doc['paired']['dt']} minus {doc['paired']['against']}", header, rows))
    if "mean_tp_iou" in doc:
        m = doc["mean_tp_iou"]
        title = f"Mean IoU of true positives at IoU {m['iou_threshold']:g} (area {m['area']})"
        rows = [[r["name"], str(r["n_tp"]), _num(r["mean_tp_iou"])] for r in m["per_class"]]
        rows.append(["mean", str(sum(r["n_tp"] for r in m["per_class"])), _num(m["mean"])])
        out.append((title, ["class", "n_tp", "mean IoU"], rows))
    if "mAUC" in doc:
        a = doc["mAUC"]
        areas = list(a["per_class"][0]["AUC"]) if a["per_class"] else []
        title = (
            f"Precision/recall AUC at IoU {a['iou_threshold']:g} (faster-coco-eval): mAUC {_num(a['value'])}"
        )
        rows = [[r["name"], *(_num(r["AUC"][k]) for k in areas)] for r in a["per_class"]]
        out.append((title, ["class", *areas], rows))
    return out


def _interval_row(label: str, entry: dict) -> list:
    lo, hi = entry["ci"] if entry["ci"] is not None else (None, None)
    return [label, _num(entry["value"]), _num(lo), _num(hi), str(entry["n_undefined"])]


def _interval_section(doc: dict) -> tuple:
    """The ``--bootstrap`` intervals of D-ECE and optimal LRP: overall rows, then per class."""
    b = doc["bootstrap"]
    kind = "paired differences b - a, " if b.get("difference") else ""
    title = (
        f"Bootstrap intervals ({kind}{b['n']} image resamples, {b['ci']:g} {b['method']}, seed {b['seed']})"
    )
    rows = []
    if "calibration_ci" in doc:
        c = doc["calibration_ci"]
        rows.append(_interval_row("D-ECE", c["D-ECE"]))
        rows += [_interval_row(f"D-ECE {r['name']}", r["D-ECE"]) for r in c["per_class"]]
    if "lrp_ci" in doc:
        lrp = doc["lrp_ci"]
        rows += [_interval_row(key, lrp[key]) for key in ("moLRP", "moLRP_loc", "moLRP_FP", "moLRP_FN")]
        rows += [_interval_row(f"oLRP {r['name']}", r["oLRP"]) for r in lrp["per_class"]]
    return (title, ["measure", "value", "lo", "hi", "undefined"], rows)
