"""Renderers of ``deteval analyze``: the JSON contract and the tables of TIDE errors, AP decomposition, confusion."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from deteval._version import __version__
from deteval.protocol import Protocol
from deteval.report.beyond import beyond_sections, render_sections
from deteval.tide import MAIN_ERRORS, SPECIAL_ERRORS, whose_ap

__all__ = [
    "analysis_json",
    "dumps_analysis",
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


_NUMBER_TYPES = frozenset((float, int, type(None)))

#: Items orjson writes differently from ``float.__repr__`` (``0.00001`` for ``1e-05``,
#: ``1e16`` for ``1e+16``): plain decimals below 1e-4 and every exponent form. Elsewhere both
#: write the shortest round-tripping digits the same way.
_NOT_REPR = re.compile(r"(?<![0-9.])(?:0\.0000[0-9]*|[0-9.]+e[-+]?[0-9]+)")


def _repr_item(match: re.Match) -> str:
    return repr(float(match.group()))


def _orjson_items(text: str, inner: str) -> str:
    """The items of orjson's array ``text`` as ``json.dumps`` writes them, separated by ``"," + inner``."""
    if "e" in text or "0.0000" in text:
        text = _NOT_REPR.sub(_repr_item, text)
    return text[1:-1].replace(",", "," + inner)


def _numbers(value: list, inner: str) -> str | None:
    """The items of a list of plain numbers / None, as ``json.dumps`` indents them; else None.

    orjson writes the list (ten times faster than the standard library's encoder on floats),
    then the few items it formats differently from ``float.__repr__`` are rewritten, so the text
    is the standard library's byte for byte. NaN and infinities (orjson: ``null``) and integers
    beyond 64 bits go through the standard library, which refuses or writes them.
    """
    if not set(map(type, value)) <= _NUMBER_TYPES:
        return None
    try:
        text = orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        text = ""
    if not text or text.count("null") != value.count(None):
        return json.dumps(value, allow_nan=False)[1:-1].replace(", ", "," + inner)
    return _orjson_items(text, inner)


def _array_numbers(value: np.ndarray, inner: str) -> str:
    """A 1-D array's items as :func:`_numbers` writes its ``tolist()`` with NaN as None.

    Raises
    ------
    ValueError
        An infinity (as ``json.dumps(..., allow_nan=False)`` refuses it).
    """
    if value.dtype.kind == "f" and np.isinf(value).any():
        raise ValueError("Out of range float values are not JSON compliant")
    return _orjson_items(orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode(), inner)  # NaN: null


def _encode(value: Any, level: int, out: list) -> None:
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "fiu":
        if len(value) == 0:
            out.append("[]")
            return
        inner = "\n" + "  " * (level + 1)
        out.append("[" + inner + _array_numbers(value, inner) + "\n" + "  " * level + "]")
    elif isinstance(value, dict) and value:
        inner = "\n" + "  " * (level + 1)
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(("," if i else "") + inner + json.dumps(key) + ": ")
            _encode(item, level + 1, out)
        out.append("\n" + "  " * level + "}")
    elif isinstance(value, list) and value:
        inner = "\n" + "  " * (level + 1)
        numbers = _numbers(value, inner)
        if numbers is not None:  # a curve: one C-encoder call instead of one Python call per value
            out.append("[" + inner + numbers + "\n" + "  " * level + "]")
            return
        out.append("[")
        for i, item in enumerate(value):
            out.append(("," if i else "") + inner)
            _encode(item, level + 1, out)
        out.append("\n" + "  " * level + "]")
    else:
        out.append(json.dumps(value, allow_nan=False))


def dumps_analysis(doc: dict) -> str:
    """``report.dumps(doc)`` byte for byte (indent 2, NaN refused), faster on long curves.

    The standard library encodes an indented document in Python, value by value; the
    decomposition's curves are most of an ``analyze`` document (hundreds of thousands of
    numbers at 5,000 images), so lists of plain numbers are joined in one step here. A 1-D
    numeric array (``AnalysisResult.to_dict(arrays=True)``) is written as its ``tolist()`` with
    NaN as None would be.

    Examples
    --------
    >>> doc = {"a": [1, 2.5, None], "b": {"c": [], "d": "x"}, "e": [{"f": True}]}
    >>> dumps_analysis(doc) == json.dumps(doc, indent=2, allow_nan=False)
    True
    """
    out: list = []
    _encode(doc, 0, out)
    return "".join(out)


def _analysis_num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _analysis_sections(doc: dict) -> list:
    """(title, header, rows) tables of an analysis document."""
    out = []
    if "errors" in doc:
        e = doc["errors"]
        whose = whose_ap(e, doc.get("protocol", {}).get("name"))  # tidecv's AP is not evaluate's
        title = (
            f"TIDE errors (mode {e['mode']}, foreground {e['thresholds']['foreground']:g}, "
            f"background {e['thresholds']['background']:g}): AP {_analysis_num(e['ap'])} ({whose}), "
            "dAP per type"
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
        names = [k for k in ("AP_D", "AP_L", "AP_CgL", "AP_SgCL") if k in d["mean"]]
        # The scalar factors multiply to AP_D (AP_CgL = AP_D / AP_L: docs/analysis.md).
        title = f"AP decomposition at IoU {d['iou_threshold']:g} (AP_D = {' x '.join(names[1:])})"
        header = ["class", *names]
        rows = [[c["name"], *(_analysis_num(c[n]) for n in names)] for c in d["per_class"]]
        rows.append(["mean", *(_analysis_num(d["mean"][n]) for n in names)])
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
    if "label_errors" in doc:
        out.append(_label_error_section(doc["label_errors"]))
    return out + beyond_sections(doc)


def _label_error_section(doc: dict) -> tuple:
    """The label-error candidates as one table (docs/label-errors.md)."""
    counts = ", ".join(f"{k} {v}" for k, v in doc["counts"].items())
    settings = ", ".join(f"{k} {v:g}" for k, v in doc["thresholds"].items())
    title = f"Label-error candidates at IoU {doc['iou_threshold']:g} ({counts}; {settings})"
    header = ["kind", "image_id", "file_name", "what", "category", "score", "iou", "evidence"]
    rows = []
    for c in doc["candidates"]:
        kind = c["kind"]
        score = _analysis_num(c.get("score")) if "score" in c else ""
        if kind == "wrong_class":
            what, iou = f"detection {c['detection']}", _analysis_num(c["iou"])
            evidence = f"ground truth {c['gt_annotation_id']} is {c['gt_category']}"
        elif kind == "missing_annotation":
            what, iou = f"detection {c['detection']}", _analysis_num(c["best_iou"])
            evidence = (
                "no ground truth near" if c["best_gt"] is None else f"nearest ground truth {c['best_gt']}"
            )
        elif kind == "unfound":
            what, iou = f"ground truth {c['gt_annotation_id']}", _analysis_num(c["best_iou"])
            evidence = (
                ("no detection in the image" if c["best_iou"] is None else "no detection overlaps it")
                if c["best_detection"] is None
                else f"nearest detection {c['best_detection']} ({c['best_detection_category']}, "
                f"score {_analysis_num(c['best_detection_score'])})"
            )
        else:
            what, iou = f"ground truth {c['gt_annotation_id']}", _analysis_num(c["iou"])
            evidence = f"same object as ground truth {c['other_annotation_id']}?"
        rows.append([kind, str(c["image_id"]), c["file_name"], what, c["category"], score, iou, evidence])
    return title, header, rows


def format_analysis_table(doc: dict) -> str:
    """Plain-text tables of an :meth:`AnalysisResult.to_dict` document."""
    return render_sections(_analysis_sections(doc), "table")


def format_analysis_markdown(doc: dict) -> str:
    """Markdown tables of an :meth:`AnalysisResult.to_dict` document."""
    return render_sections(_analysis_sections(doc), "markdown")
