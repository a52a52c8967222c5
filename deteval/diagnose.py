"""``analyze``: why the number is what it is (TIDE errors, the AP decomposition, confusion).

Values in, values out; :func:`format_analysis_table` and :func:`format_analysis_markdown` render
the ``to_dict()`` document (they belong in :mod:`deteval.report` eventually).
"""

from __future__ import annotations

from dataclasses import dataclass

from deteval.confusion import ConfusionMatrix, confusion_matrix
from deteval.data import Detections, GroundTruth
from deteval.decomposition import Decomposition
from deteval.decomposition import decompose as decompose_classes
from deteval.protocol import Protocol, resolve_protocol
from deteval.tide import MAIN_ERRORS, SPECIAL_ERRORS, TideErrors, tide_errors

__all__ = ["AnalysisResult", "analyze", "format_analysis_table", "format_analysis_markdown"]


@dataclass(frozen=True, eq=False)
class AnalysisResult:
    """What :func:`analyze` found; a part is None when it was not asked for."""

    errors: TideErrors | None
    decomposition: Decomposition | None
    confusion: ConfusionMatrix | None

    def to_dict(self) -> dict:
        """``{"errors": ..., "decomposition": ..., "confusion": ...}`` (the parts asked for)."""
        out = {}
        if self.errors is not None:
            out["errors"] = self.errors.to_dict()
        if self.decomposition is not None:
            out["decomposition"] = self.decomposition.to_dict()
        if self.confusion is not None:
            out["confusion"] = self.confusion.to_dict()
        return out


def analyze(gt: GroundTruth, dt: Detections, protocol: str | Protocol = "coco", *, errors: bool = True,
            decompose: bool = True, confusion: bool = True, confidence: float = 0.5,
            iou: float = 0.5, tide_mode: str = "tidecv", background: float = 0.1) -> AnalysisResult:
    """TIDE error types, the AP decomposition and the confusion matrix of one detector.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : str or Protocol
    errors, decompose, confusion : bool
        Which parts to compute.
    confidence : float
        The confusion matrix's score cut.
    iou : float
        The IoU threshold of all three parts (TIDE's foreground threshold).
    tide_mode : {"tidecv", "protocol"}
    background : float
        TIDE's background threshold.

    Returns
    -------
    AnalysisResult

    Examples
    --------
    >>> from deteval.io import load_detections, load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> d = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": .9}], g)
    >>> sorted(analyze(g, d).to_dict())
    ['confusion', 'decomposition', 'errors']
    """
    protocol = resolve_protocol(protocol)
    return AnalysisResult(
        errors=tide_errors(gt, dt, protocol, mode=tide_mode, foreground=iou, background=background)
        if errors else None,
        decomposition=decompose_classes(gt, dt, protocol, iou_threshold=iou) if decompose else None,
        confusion=confusion_matrix(gt, dt, protocol, iou_threshold=iou, confidence=confidence)
        if confusion else None)


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _sections(doc: dict) -> list:
    """(title, header, rows) tables of an analysis document."""
    out = []
    if "errors" in doc:
        e = doc["errors"]
        title = (f"TIDE errors (mode {e['mode']}, foreground {e['thresholds']['foreground']:g}, "
                 f"background {e['thresholds']['background']:g}): AP {_num(e['ap'])}, dAP per type")
        header = ["", *MAIN_ERRORS, *SPECIAL_ERRORS]
        rows = [["all", *(_num(e["main"][k]) for k in MAIN_ERRORS),
                 *(_num(e["special"][k]) for k in SPECIAL_ERRORS)],
                ["count", *(str(e["counts"][k]) for k in MAIN_ERRORS), "", ""]]
        for c in e["per_class"]:
            rows.append([c["name"], *(_num(c["main"][k]) for k in MAIN_ERRORS),
                         *(_num(c["special"][k]) for k in SPECIAL_ERRORS)])
        out.append((title, header, rows))
    if "decomposition" in doc:
        d = doc["decomposition"]
        title = f"AP decomposition at IoU {d['iou_threshold']:g} (D = L x C|L)"
        header = ["class", "AP_D", "AP_L", "AP_CgL"]
        rows = [[c["name"], _num(c["AP_D"]), _num(c["AP_L"]), _num(c["AP_CgL"])] for c in d["per_class"]]
        rows.append(["mean", _num(d["mean"]["AP_D"]), _num(d["mean"]["AP_L"]), _num(d["mean"]["AP_CgL"])])
        out.append((title, header, rows))
    if "confusion" in doc:
        c = doc["confusion"]
        title = (f"Confusion matrix at IoU {c['iou_threshold']:g}, confidence {c['confidence']:g} "
                 f"(rows: true, columns: predicted)")
        header = ["", *c["labels"]]
        rows = [[label, *(str(v) for v in row)] for label, row in zip(c["labels"], c["matrix"])]
        out.append((title, header, rows))
    return out


def format_analysis_table(doc: dict) -> str:
    """Plain-text tables of an :meth:`AnalysisResult.to_dict` document."""
    blocks = []
    for title, header, rows in _sections(doc):
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        lines = [title, "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))]
        for r in rows:
            lines.append("  ".join(str(v).rjust(w) if i else str(v).ljust(w)
                                   for i, (v, w) in enumerate(zip(r, widths))))
        blocks.append("\n".join(line.rstrip() for line in lines))
    return "\n\n".join(blocks) + "\n"


def format_analysis_markdown(doc: dict) -> str:
    """Markdown tables of an :meth:`AnalysisResult.to_dict` document."""
    blocks = []
    for title, header, rows in _sections(doc):
        lines = [f"**{title}**", "", "| " + " | ".join(header) + " |",
                 "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
