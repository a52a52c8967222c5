"""The walk from one protocol to another, in words: :class:`Explanation` and :func:`describe`.

:func:`deteval.explain.explain` returns values (:class:`~deteval.explain.ExplainWalk`); this
module says what the compared number is, adds the notes and the one-line summary
(``voc2007 -> voc2010: interpolation -0.0234 (total -0.0234)``) and the JSON document of
``deteval compare --explain --output``. :func:`deteval.explain` (the front door) returns its
:class:`Explanation`.
"""

from __future__ import annotations

import math
from dataclasses import fields

from deteval._values import frozen
from deteval.explain import ExplainWalk, _finite
from deteval.protocol import Protocol

__all__ = ["Explanation", "describe"]


def _fmt(value: float, digits: int = 4, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


@frozen
class Explanation(ExplainWalk):
    """Why protocol A and protocol B give different numbers on one dataset: a walk, in words.

    Attributes
    ----------
    a, b, start, end, headline_a, headline_b, steps, order, outside_order, inapplicable
        The walk's values (:class:`~deteval.explain.ExplainWalk`): the compared number under A
        and under B, each protocol's own headline metric, the steps whose changes add up to
        ``end - start``, ...
    measure : str
        ``"mAP"``, ``"AP"`` or ``"mean class AP"`` (when A and B report different headlines).
    definition : str
        What the compared number is, in words.
    notes : tuple of str
    """

    measure: str = ""
    definition: str = ""
    notes: tuple = ()

    @property
    def total(self) -> float:
        """The whole difference, ``end - start``."""
        return self.end - self.start

    def summary_line(self, digits: int = 4) -> str:
        """``"voc2007 -> voc2010: interpolation -0.0234"``; steps joined by ``;``."""
        zero = 0.5 * 10.0**-digits
        moved = [s for s in self.steps if s.affects_measure and not abs(s.change) < zero]
        still = [s.name for s in self.steps if s.affects_measure and abs(s.change) < zero]
        parts = [f"{s.name} {_fmt(s.change, digits, sign=True)}" for s in moved]
        body = "; ".join(parts) if parts else "no change"
        tail = f"total {_fmt(self.total, digits, sign=True)}"
        if still:
            tail += f"; no effect here: {', '.join(still)}"
        return f"{self.a.name} -> {self.b.name}: {body} ({tail})"

    def to_dict(self) -> dict:
        """One entry of the ``"explanations"`` list of ``deteval compare --output`` (non-finite -> null)."""
        return {
            "from": self.a.name,
            "to": self.b.name,
            "from_hash": self.a.fingerprint(),
            "to_hash": self.b.fingerprint(),
            "measure": self.measure,
            "definition": self.definition,
            "start": _finite(self.start),
            "end": _finite(self.end),
            "total": _finite(self.total),
            "headlines": {
                "from": {self.headline_a[0]: _finite(self.headline_a[1])},
                "to": {self.headline_b[0]: _finite(self.headline_b[1])},
            },
            "order": list(self.order),
            "steps": [s.to_dict() for s in self.steps],
            "notes": list(self.notes),
            "summary": self.summary_line(),
        }


def _definition(a_kind: str, b_kind: str, a: Protocol, b: Protocol) -> tuple[str, str]:
    """(measure, definition): what the compared number is called and what it is, in words."""
    base = (
        "each class's AP averaged over the IoU thresholds (first area range, largest max_dets), "
        "then the mean over the classes with ground truth"
    )
    if a_kind == b_kind == "mAP":
        return "mAP", f"mAP = {base}"
    if a_kind == b_kind == "AP":
        return "AP", (
            f"AP = {base} (the headline AP up to rounding, when the summary's maxDets is the largest)"
        )
    return "mean class AP", (
        f"mean class AP = {base}: {a.name} reports {a_kind} and {b.name} {b_kind}, "
        f"and this number is both (mAP of a single-threshold protocol, AP of a "
        f"COCO-style one)"
    )


def describe(walk: ExplainWalk) -> Explanation:
    """The :class:`Explanation` of a walk: its measure and definition, notes and summary line."""
    measure, definition = _definition(walk.headline_a[0], walk.headline_b[0], walk.a, walk.b)
    notes = []
    if walk.outside_order:
        notes.append("fields outside the documented order were changed after it, one step each")
    if any(not s.affects_measure for s in walk.steps):
        notes.append(
            "* summary decides which numbers are the headlines (and pycocotools' AP at "
            "maxDets=100), not the compared number: it cannot move it"
        )
    if walk.inapplicable:
        notes.append(
            f"not a step: {', '.join(walk.inapplicable)} (differ, but do not apply to iou_type "
            f"{walk.a.iou_type})"
        )
    if not all(math.isfinite(s.change) for s in walk.steps):
        notes.append("the compared number is undefined (no class has ground truth) at some step")
    values = {f.name: getattr(walk, f.name) for f in fields(ExplainWalk)}
    return Explanation(**values, measure=measure, definition=definition, notes=tuple(notes))
