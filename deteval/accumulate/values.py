"""The values of accumulation: :class:`Accumulated` and the per-call working values."""

from __future__ import annotations

from functools import cached_property
from typing import cast

import numpy as np

from deteval._values import frozen


@frozen
class Accumulated:
    """Per-class curves summarised on the protocol's axes.

    Attributes
    ----------
    precision : float64 (n_iou_thr, n_recall_thr, n_class, n_area, n_max_dets)
        Interpolated precision at each recall threshold; NaN where a class has no positive GT
        (pycocotools stores -1). Empty R axis for ``all_point``.
    recall : float64 (n_iou_thr, n_class, n_area, n_max_dets)
        Final recall; NaN where undefined.
    scores : float64, like ``precision``
        Score of the detection where each recall threshold is reached (0 if never).
    ap : float64 (n_iou_thr, n_class, n_area, n_max_dets)
        Average precision of each curve; NaN where undefined.
    """

    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    ap: np.ndarray


class _Lanes:
    """The lanes x detections outcomes of all ranked detections, with cached sparse events.

    Shared by the ``max_dets`` values: each keeps a subset of the ranked positions. The sparse
    events (true positives, positions where a lane's ignored flag differs from its area's first
    lane) are found once, in the match table's order, and placed at their ranked positions; the
    dense (lanes x ranked detections) arrays are only gathered for the methods that read them.
    """

    def __init__(
        self, det_is_tp: np.ndarray, det_is_ignored: np.ndarray, ranking: np.ndarray, n_iou_thr: int
    ):
        self.det_is_tp = det_is_tp
        self.det_is_ignored = det_is_ignored
        self.ranking = ranking
        self.n_iou_thr = max(n_iou_thr, 1)
        self.n_lane = int(det_is_tp.shape[0])
        self.n = len(ranking)
        self.position = np.full(det_is_tp.shape[1], -1, dtype=np.int64)
        self.position[ranking] = np.arange(self.n)
        self._tp: tuple[np.ndarray, np.ndarray] | None = None
        self._differs: dict[int, np.ndarray] = {}
        self._base: dict[int, np.ndarray] = {}

    @cached_property
    def is_tp(self) -> np.ndarray:
        """True positives, bool (n_lane, n) in ranking order."""
        return np.take(self.det_is_tp, self.ranking, axis=1)

    @cached_property
    def is_ignored(self) -> np.ndarray:
        """Ignored detections, bool (n_lane, n) in ranking order."""
        return np.take(self.det_is_ignored, self.ranking, axis=1)

    def _ranked_positions(self, rows: np.ndarray) -> np.ndarray:
        """Sorted ranked positions of table ``rows`` (rows outside the ranking left out)."""
        pos = self.position[rows]
        return np.sort(pos[pos >= 0])

    def tp_events(self) -> tuple[np.ndarray, np.ndarray]:
        """(lane, ranked position) of every true positive, sorted by lane then position."""
        if self._tp is None:
            n_det = self.det_is_tp.shape[1]
            lane, row = np.divmod(np.flatnonzero(self.det_is_tp), max(n_det, 1))
            pos = self.position[row]
            key = lane[pos >= 0] * max(self.n, 1) + pos[pos >= 0]
            key.sort()  # (lane, position) pairs are distinct
            lane_sorted, pos_sorted = np.divmod(key, max(self.n, 1))
            self._tp = (lane_sorted, pos_sorted)
        return self._tp

    def base_row(self, lane: int) -> np.ndarray:
        """Ignored flags of an area's first ``lane`` in ranking order, bool (n,)."""
        if lane not in self._base:
            self._base[lane] = self.det_is_ignored[lane][self.ranking]
        return self._base[lane]

    def differs(self, lane: int) -> np.ndarray:
        """Ranked positions where ``lane``'s ignored flag differs from its area's first lane (sorted)."""
        if lane not in self._differs:
            base = lane - lane % self.n_iou_thr
            rows = np.flatnonzero(self.det_is_ignored[lane] ^ self.det_is_ignored[base])
            self._differs[lane] = self._ranked_positions(rows)
        return self._differs[lane]

    def ignored_at(self, lane: int, positions: np.ndarray) -> np.ndarray:
        """Ignored flags of ``lane`` at ranked ``positions``."""
        return self.det_is_ignored[lane, self.ranking[positions]]


@frozen
class _Ranked:
    """The detections kept under one ``max_dets`` value, in ranking order, grouped by class.

    ``lanes`` holds all detections; ``keep`` (None: all) the positions this ``max_dets`` keeps.
    ``is_tp`` / ``is_ignored`` are the kept positions' (n_lane, n) outcomes with lane =
    area * n_iou_thr + threshold, built on first use (the point-sampled methods work on sparse
    events instead); ``class_start`` / ``class_end`` bound each class's segment of the ranked
    list. ``tie_end`` (``score_ties: threshold`` only): for each position, the last position of
    its tied group.
    """

    lanes: _Lanes
    keep: np.ndarray | None
    det_class: np.ndarray
    scores: np.ndarray
    class_start: np.ndarray
    class_end: np.ndarray
    tie_end: np.ndarray | None = None

    @cached_property
    def is_tp(self) -> np.ndarray:
        """True positives of the kept positions, bool (n_lane, n)."""
        return self.kept(self.lanes.is_tp)

    @cached_property
    def is_ignored(self) -> np.ndarray:
        """Ignored detections of the kept positions, bool (n_lane, n)."""
        return self.kept(self.lanes.is_ignored)

    @property
    def n_lane(self) -> int:
        """Number of lanes (area ranges x IoU thresholds)."""
        return self.lanes.n_lane

    @property
    def n(self) -> int:
        """Number of kept detections."""
        return len(self.det_class)

    @cached_property
    def new_position(self) -> np.ndarray | None:
        """Position among the kept detections of each position of ``lanes`` (None: the same)."""
        return None if self.keep is None else np.cumsum(self.keep) - 1

    def kept(self, rows: np.ndarray) -> np.ndarray:
        """The kept positions (last axis) of ``rows``."""
        return rows if self.keep is None else np.compress(self.keep, rows, axis=-1)

    def kept_events(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of the sorted full ``positions`` are kept, and their kept positions."""
        if self.keep is None:
            return np.ones(len(positions), dtype=bool), positions
        is_kept = self.keep[positions]
        return is_kept, cast(np.ndarray, self.new_position)[positions[is_kept]]

    def tp_events(self) -> tuple[np.ndarray, np.ndarray]:
        """(lane, kept position) of every kept true positive, sorted by lane then position."""
        lane, pos = self.lanes.tp_events()
        is_kept, kept_pos = self.kept_events(pos)
        return (lane if self.keep is None else lane[is_kept]), kept_pos


@frozen
class _Output:
    """Views of the result arrays at one ``max_dets`` index (written in place, then frozen)."""

    precision: np.ndarray  # (n_iou_thr, n_recall_thr, n_class, n_area)
    recall: np.ndarray  # (n_iou_thr, n_class, n_area)
    scores: np.ndarray  # (n_iou_thr, n_recall_thr, n_class, n_area)
    ap: np.ndarray  # (n_iou_thr, n_class, n_area)
