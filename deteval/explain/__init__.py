"""Several protocols side by side, and why two of them disagree.

:func:`compare` scores one dataset under several protocols with **one matching per distinct
matching setting**: protocols that differ only in how matched detections are accumulated
(``ap_method``, ``eleven_point_grid``, ``score_order``, ``score_ties``, ``summary``; and
``max_dets`` below the same largest cap) share one :class:`~deteval.evaluate.MatchTable`; so do
protocols whose ground-truth rules (:data:`GT_RULE_FIELDS`) flag this ground truth alike. A
protocol whose IoU thresholds and area ranges are among another's, all else equal, reads that
matching's table restricted to its lanes (:func:`restrict_lanes`): ``coco50`` is ``coco``'s
lane (all, 0.5).

:func:`explain` walks from protocol A to protocol B changing one group of fields at a time, in
the fixed order of :data:`WALK_ORDER`, and reports how much each step moves a common number, so
the differences add up to the total (:mod:`deteval.report.explanation` words the walk)::

    voc2007 -> voc2010: interpolation -0.0234

The order matters when two changes interact (each step is measured with the earlier steps
already applied); it is fixed and documented so the same pair always reads the same way.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult, check_protocol, inputs_summary
from deteval.explain.cache import (
    _DESCRIPTIVE,
    ACCUMULATION_FIELDS,
    GT_RULE_FIELDS,
    LANE_FIELDS,
    MatchCache,
    matching_key,
    n_lanes,
    restrict_lanes,
)
from deteval.protocol import EXPLAIN_STEPS, FIELDS, Protocol, field_names
from deteval.summary import mean_defined

__all__ = [
    "ACCUMULATION_FIELDS",
    "WALK_ORDER",
    "GT_RULE_FIELDS",
    "LANE_FIELDS",
    "matching_key",
    "n_lanes",
    "restrict_lanes",
    "MatchCache",
    "Comparison",
    "compare",
    "ExplainStep",
    "ExplainWalk",
    "explain",
    "class_mean_ap",
]


#: The walk of :func:`explain`: (step name, fields changed together), in this order, from the
#: field table (each field names its step; :data:`deteval.protocol.EXPLAIN_STEPS` orders them).
#: Fields of A and B that no step names get a step of their own after these (before
#: ``summary``, always last).
WALK_ORDER: tuple = tuple(
    (step, tuple(k for k, spec in FIELDS.items() if spec.step == step)) for step in EXPLAIN_STEPS[:-1]
)


_LAST_STEP = (EXPLAIN_STEPS[-1], tuple(k for k, spec in FIELDS.items() if spec.step == EXPLAIN_STEPS[-1]))


@frozen(eq=False)
class Comparison:
    """Results of one dataset under several protocols.

    Attributes
    ----------
    results : tuple of EvalResult
        One per protocol, in the order given.
    matching_groups : tuple of tuple of int
        Indices into ``results`` of the protocols that shared one matching.
    """

    results: tuple
    matching_groups: tuple

    @property
    def n_matchings(self) -> int:
        """How many matchings the protocols needed (one per group of shared matching)."""
        return len(self.matching_groups)


def compare(
    gt: GroundTruth,
    dt: Detections,
    protocols: Sequence[Protocol],
    *,
    cache: MatchCache | None = None,
    inputs: dict | None = None,
    warnings: tuple = (),
) -> Comparison:
    """Score one dataset under several protocols, sharing matchings where the settings agree.

    Values in, values out; :func:`deteval.api.compare` also takes paths and protocol names.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocols : sequence of Protocol
    cache : MatchCache, optional
        Reuse (and fill) matchings of the same ``gt``/``dt`` (then ``gt`` and ``dt`` are its own).
    inputs : dict, optional
        The results' ``inputs`` (default: counted from ``gt`` and ``dt``).
    warnings : tuple of str
        Warnings to put first in every result's ``warnings``.

    Returns
    -------
    Comparison

    Raises
    ------
    ConfigError
        No protocol, or one whose summary cannot be computed.
    """
    resolved = list(protocols)
    if not resolved:
        raise ConfigError("compare: expected at least one protocol, found none")
    for p in resolved:
        check_protocol(p)
    if cache is None:
        cache = MatchCache(gt, dt)
    if inputs is None:
        inputs = inputs_summary(cache.gt, cache.dt)
    cache.prepare(resolved)
    scored: dict[str, EvalResult] = {}
    results = []
    for p in resolved:
        score_key = cache.score_key(p)
        twin = scored.get(score_key)
        if twin is None:
            scored[score_key] = result = cache.result(p, inputs=inputs, warnings=warnings)
        else:
            result = _renamed(twin, p)
        results.append(result)
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(resolved):
        groups.setdefault(cache.key(p), []).append(i)
    return Comparison(results=tuple(results), matching_groups=tuple(tuple(g) for g in groups.values()))


def _renamed(result: EvalResult, protocol: Protocol) -> EvalResult:
    """``result`` (of a protocol with the same :meth:`MatchCache.score_key`) as ``protocol``'s.

    Its own copies of the arrays, metrics and per-class rows; the match table is shared, as
    protocols sharing a matching always share it.
    """
    return dataclasses.replace(
        result,
        protocol=protocol,
        metrics=dict(result.metrics),
        per_class=[dict(row) for row in result.per_class],
        precision=result.precision.copy(),
        recall=result.recall.copy(),
        scores=result.scores.copy(),
        ap=result.ap.copy(),
        inputs=dict(result.inputs),
    )


def class_mean_ap(result: EvalResult) -> float:
    """The number :func:`explain` compares: the mean of the defined per-class AP.

    A class's AP (``per_class``) is its AP averaged over the IoU thresholds, at the first area
    range ("all") and the largest ``max_dets``; the mean is over the classes with ground truth.
    For a single-threshold protocol this *is* its ``mAP``; for a COCO-style protocol it is its
    ``AP`` (up to float rounding) whenever the summary's maxDets is the largest.
    """
    return mean_defined(np.array([c["AP"] for c in result.per_class], dtype=np.float64))


def _headline(result: EvalResult) -> tuple[str, float]:
    """The protocol's own headline: ``mAP`` or ``AP``."""
    if "mAP" in result.metrics:
        return "mAP", float(result.metrics["mAP"])
    return "AP", float(result.metrics.get("AP", float("nan")))


@frozen
class ExplainStep:
    """One step of the walk from A to B.

    Attributes
    ----------
    name : str
        Step name from :data:`WALK_ORDER` (or the field name of a field no step names).
    changes : tuple of (field, value in A, value in B)
    value : float
        The compared number after this step.
    change : float
        ``value`` minus the value before this step.
    class_changes : tuple of (class name, change)
        Classes whose AP this step moved.
    affects_measure : bool
        False for ``summary``, which renames headlines but cannot move the compared number.
    """

    name: str
    changes: tuple
    value: float
    change: float
    class_changes: tuple = ()
    affects_measure: bool = True

    def to_dict(self) -> dict:
        """One entry of an explanation's ``"steps"`` list (non-finite numbers -> null)."""
        return {
            "step": self.name,
            "fields": [
                {"field": f, "from": _json_value(f, a), "to": _json_value(f, b)} for f, a, b in self.changes
            ],
            "value": _finite(self.value),
            "change": _finite(self.change),
            "classes": [{"name": n, "change": _finite(d)} for n, d in self.class_changes],
            "affects_measure": self.affects_measure,
        }


def _json_value(field: str, value: Any) -> Any:
    if field == "area_ranges":
        return {n: [lo, hi] for n, lo, hi in value}
    return list(value) if isinstance(value, tuple) else value


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


@frozen
class ExplainWalk:
    """The walk from protocol A to protocol B on one dataset: values only.

    :func:`deteval.report.explanation.describe` words it (what is compared, the notes, the
    summary line) into the :class:`~deteval.report.explanation.Explanation` that
    :func:`deteval.explain` returns.

    Attributes
    ----------
    a, b : Protocol
    start, end : float
        The compared number (:func:`class_mean_ap`) under A and under B.
    headline_a, headline_b : (str, float)
        Each protocol's own headline metric (``"mAP"`` or ``"AP"``) and its value.
    steps : tuple of ExplainStep
        Only steps whose fields differ between A and B; their ``change`` adds up to
        ``end - start``.
    order : tuple of str
        The documented order of the steps (:data:`WALK_ORDER`, then ``summary``).
    outside_order : tuple of str
        Steps of fields the documented order does not name (one step each, after it).
    inapplicable : tuple of str
        Fields that differ but do not apply to the IoU type both protocols score (no step).
    """

    a: Protocol
    b: Protocol
    start: float
    end: float
    headline_a: tuple
    headline_b: tuple
    steps: tuple
    order: tuple = ()
    outside_order: tuple = ()
    inapplicable: tuple = ()


def _inapplicable(a: Protocol, b: Protocol) -> tuple[str, ...]:
    """Fields that differ but cannot matter: both protocols score an IoU type they do not apply to."""
    if a.iou_type != b.iou_type:
        return ()
    return tuple(
        f
        for f, spec in FIELDS.items()
        if spec.iou_types is not None and a.iou_type not in spec.iou_types and getattr(a, f) != getattr(b, f)
    )


def _walk_steps(a: Protocol, b: Protocol) -> list[tuple[str, tuple]]:
    """(step name, fields that differ) in walk order; fields nobody names get their own step.

    Fields that do not apply to the IoU type both protocols score (``mask_iou`` of two box
    protocols) make no step: :func:`explain` names them in a note instead.
    """
    names = set(field_names()) - set(_inapplicable(a, b))
    named = {f for _, fields in WALK_ORDER + (_LAST_STEP,) for f in fields}
    steps = []
    for step, fields in WALK_ORDER:
        differ = tuple(f for f in fields if f in names and getattr(a, f) != getattr(b, f))
        if differ:
            steps.append((step, differ))
    for f in field_names():
        if f in names and f not in named and f not in _DESCRIPTIVE and getattr(a, f) != getattr(b, f):
            steps.append((f, (f,)))
    if a.summary != b.summary:
        steps.append(_LAST_STEP)
    return steps


def explain(
    gt: GroundTruth, dt: Detections, a: Protocol, b: Protocol, *, cache: MatchCache | None = None
) -> ExplainWalk:
    """Attribute the difference between two protocols to their differing fields, step by step.

    Starting from A, the fields of each step of :data:`WALK_ORDER` that differ are set to B's
    values and the dataset is scored again (sharing matchings where possible); each step's
    ``change`` is the move of the compared number, so the changes add up to B minus A.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    a, b : Protocol
        :func:`deteval.api.explain` also takes preset names and YAML paths (and paths for the
        inputs).
    cache : MatchCache, optional
        Reuse (and fill) matchings of the same ``gt``/``dt`` (then ``gt`` and ``dt`` are its own).

    Returns
    -------
    ExplainWalk
        Values; :func:`deteval.report.explanation.describe` words them (:func:`deteval.explain`).

    Notes
    -----
    The compared number is the mean over classes of the per-class AP (see
    :func:`class_mean_ap`): ``mAP`` when both protocols report it, ``AP`` when both are
    COCO-style, and named "mean class AP" otherwise. It does not depend on ``summary``, so the
    walk's intermediate protocols are scored with ``summary: configured`` (pycocotools' summary
    cannot be computed for some mixes, e.g. fewer than three max_dets); the summary step, when
    A and B differ there, is listed with no change.
    """
    if cache is None:
        cache = MatchCache(gt, dt)
    names = cache.gt.category_name

    def scored(p: Protocol) -> EvalResult:
        return cache.result(p.replace(summary="configured"))

    def per_class(r: EvalResult) -> np.ndarray:
        return np.array([c["AP"] for c in r.per_class], dtype=np.float64)

    check_protocol(a)
    check_protocol(b)
    kind_a = _headline(cache.result(a))
    kind_b = _headline(cache.result(b))

    current = a
    result = scored(current)
    start = value = class_mean_ap(result)
    classes = per_class(result)
    steps = []
    for step, fields in _walk_steps(a, b):
        current = current.replace(**{f: getattr(b, f) for f in fields})
        if fields == ("summary",):
            steps.append(
                ExplainStep(
                    step,
                    tuple((f, getattr(a, f), getattr(b, f)) for f in fields),
                    value,
                    0.0,
                    (),
                    affects_measure=False,
                )
            )
            continue
        result = scored(current)
        new_value, new_classes = class_mean_ap(result), per_class(result)
        # class_agnostic changes the classes themselves: no per-class moves across that step.
        moved = tuple(
            (names[k], float(new_classes[k] - classes[k]))
            for k in range(len(names))
            if len(new_classes) == len(classes) and _moved(classes[k], new_classes[k])
        )
        names = result.category_names
        steps.append(
            ExplainStep(
                step,
                tuple((f, getattr(a, f), getattr(b, f)) for f in fields),
                new_value,
                new_value - value,
                moved,
            )
        )
        value, classes = new_value, new_classes
    return ExplainWalk(
        a=a,
        b=b,
        start=start,
        end=value,
        headline_a=kind_a,
        headline_b=kind_b,
        steps=tuple(steps),
        order=tuple(name for name, _ in WALK_ORDER + (_LAST_STEP,)),
        outside_order=tuple(s.name for s in steps if s.name not in dict(WALK_ORDER) and s.affects_measure),
        inapplicable=_inapplicable(a, b),
    )


def _moved(before: float, after: float) -> bool:
    if math.isnan(before) and math.isnan(after):
        return False
    if math.isnan(before) != math.isnan(after):
        return True
    return abs(after - before) > 1e-12
