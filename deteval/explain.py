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
the differences add up to the total::

    voc2007 -> voc2010: interpolation -0.0234

The order matters when two changes interact (each step is measured with the earlier steps
already applied); it is fixed and documented so the same pair always reads the same way.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval._dtypes import lane_dtype
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import (
    EvalResult,
    MatchTable,
    check_protocol,
    ground_truth_flags,
    inputs_summary,
    match,
    score,
)
from deteval.protocol import EXPLAIN_STEPS, FIELD_CHOICES, FIELDS, Protocol, field_names
from deteval.sharding import match_sharded
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
    "Explanation",
    "explain",
    "class_mean_ap",
]

#: Fields read only when accumulating a :class:`MatchTable` (never by
#: :func:`deteval.evaluate.match`), plus the ones that only describe: from the field table
#: (:data:`deteval.protocol.FIELDS`, stage "accumulate" or "describe"). Every other field is
#: assumed to change the matching, so a new field is safe by default.
ACCUMULATION_FIELDS = tuple(k for k, spec in FIELDS.items() if spec.stage in ("accumulate", "describe"))

#: The walk of :func:`explain`: (step name, fields changed together), in this order, from the
#: field table (each field names its step; :data:`deteval.protocol.EXPLAIN_STEPS` orders them).
#: Fields of A and B that no step names get a step of their own after these (before
#: ``summary``, always last).
WALK_ORDER: tuple = tuple(
    (step, tuple(k for k, spec in FIELDS.items() if spec.step == step)) for step in EXPLAIN_STEPS[:-1]
)
_LAST_STEP = (EXPLAIN_STEPS[-1], tuple(k for k, spec in FIELDS.items() if spec.step == EXPLAIN_STEPS[-1]))
_DESCRIPTIVE = tuple(k for k, spec in FIELDS.items() if spec.stage == "describe")


def matching_key(protocol: Protocol) -> str:
    """The settings :func:`deteval.evaluate.match` depends on, as a canonical string.

    Two protocols with the same key share one matching: ``match`` reads every field except
    :data:`ACCUMULATION_FIELDS`, of ``max_dets`` only the largest value (detections beyond
    it are dropped; the smaller caps are applied when accumulating, from ``det_rank``), and of
    ``area_ranges`` the bounds in their order (not the names).

    Examples
    --------
    >>> from deteval.protocol import PRESETS
    >>> matching_key(PRESETS["voc2007"]) == matching_key(PRESETS["voc2010"])
    True
    >>> matching_key(PRESETS["voc2007"]) == matching_key(PRESETS["voc2007-pyfrcnn"])
    False
    >>> coco = PRESETS["coco"]
    >>> matching_key(coco) == matching_key(coco.replace(area_ranges=coco.area_ranges[::-1]))
    False
    """
    fields = {k: v for k, v in protocol.to_dict().items() if k not in ACCUMULATION_FIELDS}
    if fields.get("max_dets") is not None:
        fields["max_dets"] = max(fields["max_dets"])
    # The ranges in their order (the table's lanes follow it), by their bounds: ``to_dict``'s
    # mapping by name would be sorted by name here, and the matching never reads a name.
    fields["area_ranges"] = [[lo, hi] for _, lo, hi in protocol.area_ranges]
    return json.dumps(fields, sort_keys=True)


#: Fields that :func:`deteval.evaluate.match` reads only through
#: :func:`deteval.evaluate.ground_truth_flags`: on ground truth where both values give the same
#: flags (no ``ignore: 1`` outside the crowd regions, no annotation id 0), the matching is the same.
GT_RULE_FIELDS = ("gt_ignore_field", "gt_id_zero")

#: The fields that only say which lanes (area range x IoU threshold) a matching has: each lane
#: is matched on its own, so a matching's lanes are a matching of their own (see
#: :func:`restrict_lanes`).
LANE_FIELDS = ("iou_thresholds", "area_ranges")


def restrict_lanes(table: MatchTable, lanes: np.ndarray, areas: np.ndarray) -> MatchTable:
    """The match table of some lanes of ``table``: what :func:`deteval.evaluate.match` gives for them.

    Every matching rule (COCO, VOC, Ultralytics, the group-of stage) matches each lane (area
    range ``a``, IoU threshold ``t``: lane ``a * n_iou_thr + t``) on its own, on the same
    detections (``max_dets`` decides those, not the lanes); so the matching of a protocol whose
    thresholds and area ranges are among another's is that one's table restricted to them:
    the same arrays, bit for bit (``tests/unit/test_compare_sharing.py`` checks it).

    Parameters
    ----------
    table : MatchTable
    lanes : int64 (n_lane_kept,)
        The kept lanes of ``table``, strictly increasing (so the matches keep their order, also
        in a table merged from shards), in the new table's lane order.
    areas : int64 (n_area_kept,)
        The area ranges of ``table`` the kept lanes belong to, in the new table's order.

    Returns
    -------
    MatchTable
        The detection arrays are ``table``'s own (not copied).

    Raises
    ------
    ConfigError
        ``lanes`` not strictly increasing or outside the table.
    """
    lanes = np.asarray(lanes, dtype=np.int64)
    n_lane = table.n_lane
    if len(lanes) and (lanes[0] < 0 or lanes[-1] >= n_lane or (np.diff(lanes) <= 0).any()):
        raise ConfigError(
            f"restrict_lanes: expected strictly increasing lanes in [0, {n_lane}), found {lanes.tolist()}"
        )
    new_lane = np.full(n_lane, -1, dtype=np.int64)
    new_lane[lanes] = np.arange(len(lanes), dtype=np.int64)
    match_lane = new_lane[table.match_lane]
    is_kept = match_lane >= 0
    return MatchTable(
        det_score=table.det_score,
        det_class=table.det_class,
        det_image=table.det_image,
        det_rank=table.det_rank,
        det_order=table.det_order,
        match_lane=match_lane[is_kept].astype(lane_dtype(len(lanes)), copy=False),
        match_det=table.match_det[is_kept],
        match_gt=table.match_gt[is_kept],
        tp=table.tp.select(lanes),
        ignored=table.ignored.select(lanes),
        n_positive=table.n_positive[:, np.asarray(areas, dtype=np.int64)],
        n_det_per_class=table.n_det_per_class,
        n_over_max_dets=table.n_over_max_dets,
    )


def _lanes_within(protocol: Protocol, source: Protocol) -> tuple[np.ndarray, np.ndarray] | None:
    """(lanes, areas) of ``source`` that are ``protocol``'s, or None when some are missing or out of order.

    Thresholds are the same when equal as floats; area ranges when their bounds are (the name
    is a label the matching never reads).
    """
    thresholds = list(source.iou_thresholds)
    bounds = [(lo, hi) for _, lo, hi in source.area_ranges]
    try:
        thr_idx = np.array([thresholds.index(t) for t in protocol.iou_thresholds], dtype=np.int64)
        area_idx = np.array([bounds.index((lo, hi)) for _, lo, hi in protocol.area_ranges], dtype=np.int64)
    except ValueError:
        return None
    lanes = (area_idx[:, None] * len(thresholds) + thr_idx[None, :]).ravel()
    if len(lanes) > 1 and (np.diff(lanes) <= 0).any():
        return None
    return lanes, area_idx


def n_lanes(protocol: Protocol) -> int:
    """Lanes of ``protocol``'s matching: area ranges x IoU thresholds."""
    return len(protocol.area_ranges) * len(protocol.iou_thresholds)


class MatchCache:
    """Matchings of one dataset, computed once per distinct matching.

    Two protocols share one match table when their :func:`matching_key` on these inputs
    (:meth:`key`) is the same. A protocol whose lanes (IoU thresholds x area ranges) are among
    those of a table already here, all else equal, gets that table restricted to its lanes
    (:func:`restrict_lanes`) instead of a matching of its own: ``coco50`` from ``coco``.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    workers : int
        Match image shards in this many processes (see :func:`deteval.sharding.match_sharded`).
    """

    def __init__(self, gt: GroundTruth, dt: Detections, *, workers: int = 1):
        self.gt = gt
        self.dt = dt
        self.workers = workers
        self._tables: dict[str, MatchTable] = {}
        # Per key without the lane fields: (protocol, table) of each matching computed.
        self._by_lane_free_key: dict[str, list[tuple[Protocol, MatchTable]]] = {}
        self._gt_rule_flags: dict[tuple, bool] = {}

    def key(self, protocol: Protocol) -> str:
        """:func:`matching_key` of ``protocol``, its ground-truth rules made canonical where they do nothing.

        A field of :data:`GT_RULE_FIELDS` whose values give this ground truth the same flags
        (:func:`deteval.evaluate.ground_truth_flags`) is keyed at its first value: e.g.
        ``coco`` and ``coco-pycocotools`` share one matching on ground truth without
        ``ignore: 1`` outside crowd regions and without annotation id 0.

        Examples
        --------
        >>> from deteval.io import load_detections, load_ground_truth
        >>> from deteval.protocol import PRESETS
        >>> gt = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
        ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9],
        ...                      "area": 81, "iscrowd": 0}]})
        >>> dt = load_detections([], gt)
        >>> cache = MatchCache(gt, dt)
        >>> cache.key(PRESETS["coco"]) == cache.key(PRESETS["coco-pycocotools"])
        True
        >>> matching_key(PRESETS["coco"]) == matching_key(PRESETS["coco-pycocotools"])
        False
        """
        canonical = {}
        for name in GT_RULE_FIELDS:
            first = FIELD_CHOICES[name][0]
            if getattr(protocol, name) != first and self._same_flags(protocol, **{name: first}):
                canonical[name] = first
        return matching_key(protocol.replace(**canonical) if canonical else protocol)

    def _same_flags(self, protocol: Protocol, **change: Any) -> bool:
        """Whether ``protocol`` with ``change`` gives this ground truth the same flags."""
        settings = (protocol.crowd, protocol.difficult, protocol.iou_type, protocol.area_ranges)
        memo = (settings, tuple(sorted(change.items())), tuple(getattr(protocol, f) for f in GT_RULE_FIELDS))
        if memo not in self._gt_rule_flags:
            before = ground_truth_flags(self.gt, protocol)
            after = ground_truth_flags(self.gt, protocol.replace(**change))
            self._gt_rule_flags[memo] = all(np.array_equal(x, y) for x, y in zip(before, after, strict=True))
        return self._gt_rule_flags[memo]

    def _lane_free_key(self, key: str) -> str:
        fields = json.loads(key)
        return json.dumps({k: v for k, v in fields.items() if k not in LANE_FIELDS}, sort_keys=True)

    def table(self, protocol: Protocol) -> MatchTable:
        """The match table of ``protocol`` (computed, or restricted from another, on first use)."""
        key = self.key(protocol)
        if key not in self._tables:
            computed = self._by_lane_free_key.setdefault(self._lane_free_key(key), [])
            for source, source_table in computed:
                found = _lanes_within(protocol, source)
                if found is not None:
                    self._tables[key] = restrict_lanes(source_table, *found)
                    return self._tables[key]
            if self.workers > 1:
                table = match_sharded(self.gt, self.dt, protocol, workers=self.workers)
            else:
                table = match(self.gt, self.dt, protocol)
            self._tables[key] = table
            computed.append((protocol, table))
        return self._tables[key]

    def prepare(self, protocols: Sequence[Protocol]) -> None:
        """Fill the tables of ``protocols``, those with the most lanes first (so the others may restrict them)."""
        for protocol in sorted(protocols, key=n_lanes, reverse=True):
            self.table(protocol)

    def score_key(self, protocol: Protocol) -> str:
        """Protocols with the same score key get the same result here, but for their names.

        The same table (:meth:`key`) and the same fields but ``name`` and ``source``. The fields
        of :data:`GT_RULE_FIELDS` are left out too where the ground truth triggers none of the
        pycocotools bugs they reproduce (no annotation id 0, no ``ignore: 1`` outside crowd
        regions): then they change neither the table nor any warning. The name stays in where
        the ground truth has LVIS federated labels: the warning about them names the protocol.
        """
        gt = self.gt
        left_out = set(_DESCRIPTIVE)
        if gt.federated is not None:
            left_out.discard("name")
        if not (gt.annotation_id == 0).any() and not (gt.is_ignore & ~gt.is_crowd).any():
            left_out.update(GT_RULE_FIELDS)
        fields = {k: v for k, v in protocol.to_dict().items() if k not in left_out}
        return json.dumps([self.key(protocol), fields], sort_keys=True)

    def result(self, protocol: Protocol, *, inputs: dict | None = None, warnings: tuple = ()) -> EvalResult:
        """Score ``protocol`` from its (maybe shared) match table."""
        return score(self.table(protocol), self.gt, protocol, warnings=warnings, inputs=inputs)

    @property
    def n_matchings(self) -> int:
        """How many distinct match tables are here (restricted ones included)."""
        return len(self._tables)

    @property
    def n_computed(self) -> int:
        """How many matchings were computed (the others restricted one of them to its lanes)."""
        return sum(len(tables) for tables in self._by_lane_free_key.values())


@dataclass(frozen=True, eq=False)
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


# ------------------------------------------------------------------------------------------
# Explanation
# ------------------------------------------------------------------------------------------


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


@dataclass(frozen=True)
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


def _fmt(value: float, digits: int = 4, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


@dataclass(frozen=True)
class Explanation:
    """Why protocol A and protocol B give different numbers on one dataset.

    Attributes
    ----------
    a, b : Protocol
    measure : str
        ``"mAP"``, ``"AP"`` or ``"mean class AP"`` (when A and B report different headlines).
    definition : str
        What the compared number is, in words.
    start, end : float
        The compared number under A and under B.
    headline_a, headline_b : (str, float)
        Each protocol's own headline metric, for reference.
    steps : tuple of ExplainStep
        Only steps whose fields differ between A and B; their ``change`` adds up to
        ``end - start``.
    notes : tuple of str
    """

    a: Protocol
    b: Protocol
    measure: str
    definition: str
    start: float
    end: float
    headline_a: tuple
    headline_b: tuple
    steps: tuple
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
            "order": [name for name, _ in WALK_ORDER + (_LAST_STEP,)],
            "steps": [s.to_dict() for s in self.steps],
            "notes": list(self.notes),
            "summary": self.summary_line(),
        }


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


def _definition(a_kind: str, b_kind: str, a: Protocol, b: Protocol) -> tuple[str, str]:
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


def explain(
    gt: GroundTruth, dt: Detections, a: Protocol, b: Protocol, *, cache: MatchCache | None = None
) -> Explanation:
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
    Explanation

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
    measure, definition = _definition(kind_a[0], kind_b[0], a, b)

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
    notes = []
    if any(s.name not in dict(WALK_ORDER) and s.affects_measure for s in steps):
        notes.append("fields outside the documented order were changed after it, one step each")
    if any(not s.affects_measure for s in steps):
        notes.append(
            "* summary decides which numbers are the headlines (and pycocotools' AP at "
            "maxDets=100), not the compared number: it cannot move it"
        )
    skipped = _inapplicable(a, b)
    if skipped:
        notes.append(f"not a step: {', '.join(skipped)} (differ, but do not apply to iou_type {a.iou_type})")
    if not all(math.isfinite(s.change) for s in steps):
        notes.append("the compared number is undefined (no class has ground truth) at some step")
    return Explanation(
        a=a,
        b=b,
        measure=measure,
        definition=definition,
        start=start,
        end=value,
        headline_a=kind_a,
        headline_b=kind_b,
        steps=tuple(steps),
        notes=tuple(notes),
    )


def _moved(before: float, after: float) -> bool:
    if math.isnan(before) and math.isnan(after):
        return False
    if math.isnan(before) != math.isnan(after):
        return True
    return abs(after - before) > 1e-12
