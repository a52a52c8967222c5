"""One matching per distinct matching: :class:`MatchCache`, lanes restricted from a wider table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval._dtypes import lane_dtype
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError
from deteval.evaluate import EvalResult, MatchTable, ground_truth_flags, match, score
from deteval.protocol import FIELD_CHOICES, FIELDS, Protocol
from deteval.sharding import match_sharded

#: Fields read only when accumulating a :class:`MatchTable` (never by
#: :func:`deteval.evaluate.match`), plus the ones that only describe: from the field table
#: (:data:`deteval.protocol.FIELDS`, stage "accumulate" or "describe"). Every other field is
#: assumed to change the matching, so a new field is safe by default.
ACCUMULATION_FIELDS = tuple(k for k, spec in FIELDS.items() if spec.stage in ("accumulate", "describe"))


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
    workers : int or "auto"
        CPUs for matching and scoring: kernel threads, or image shards in processes for the
        paths that run in Python (see :func:`deteval.sharding.match_sharded`).
    """

    def __init__(self, gt: GroundTruth, dt: Detections, *, workers: int | str = 1):
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
            if self.workers != 1:
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
        return score(
            self.table(protocol), self.gt, protocol, warnings=warnings, inputs=inputs, workers=self.workers
        )

    @property
    def n_matchings(self) -> int:
        """How many distinct match tables are here (restricted ones included)."""
        return len(self._tables)

    @property
    def n_computed(self) -> int:
        """How many matchings were computed (the others restricted one of them to its lanes)."""
        return sum(len(tables) for tables in self._by_lane_free_key.values())
