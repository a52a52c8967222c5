"""The match table: per-detection outcomes of matching, and the one merge of tables and shards."""

from __future__ import annotations

import numpy as np

from deteval._dtypes import lane_dtype, row_dtype
from deteval._values import frozen
from deteval.matching import LaneFlags


@frozen(eq=False)
class MatchTable:
    """Per-detection outcome of matching, ready to accumulate; shards concatenate.

    Attributes
    ----------
    det_score, det_class, det_image, det_rank, det_order : (n_det,)
        Kept detections (within ``max_dets``), in (image, class, rank) order. ``det_score``
        float64; ``det_class``, ``det_image`` int32 (as in :class:`~deteval.data.Detections`);
        ``det_rank``, ``det_order`` int32 (int64 beyond 2**31 rows). Compute keys from them in
        int64 (``image.astype(np.int64) * n_class + cls``), not in their dtype.
    match_lane, match_det, match_gt : (n_match,)
        Who matched whom: lane (area * n_iou_thr + threshold), detection (row of this table)
        and ground-truth annotation (row of the GroundTruth), matches to ignored GTs included.
        Narrow integers: lanes int8 (int16 beyond 128 lanes), rows int32 (int64 beyond 2**31
        rows); compute keys from them in int64 (``astype(np.int64)``), not in their dtype.
    tp, ignored : LaneFlags (n_lane x n_det)
        True positives and ignored detections per lane, packed eight lanes a byte
        (``tp.bits``: uint8 (n_det, ceil(n_lane / 8))). :meth:`lane_is_tp` /
        :meth:`lane_is_ignored` read one lane; :attr:`det_is_tp` / :attr:`det_is_ignored`
        unpack the whole bool (n_lane, n_det) tables (new arrays, n_lane bytes per detection
        each: read lanes where that is enough).
    n_positive : int64 (n_class, n_area)
    n_det_per_class : int64 (n_class,)
        All detections of each class given as input (before ``max_dets``).
    n_over_max_dets : int
        Detections beyond ``max(max_dets)`` in their (image, class) group.
    """

    det_score: np.ndarray
    det_class: np.ndarray
    det_image: np.ndarray
    det_rank: np.ndarray
    det_order: np.ndarray
    match_lane: np.ndarray
    match_det: np.ndarray
    match_gt: np.ndarray
    tp: LaneFlags
    ignored: LaneFlags
    n_positive: np.ndarray
    n_det_per_class: np.ndarray
    n_over_max_dets: int

    @property
    def n_lane(self) -> int:
        """Number of lanes (area ranges x IoU thresholds)."""
        return self.tp.n_lane

    @property
    def det_is_tp(self) -> np.ndarray:
        """Bool (n_lane, n_det): true positives, unpacked (allocates; see :meth:`lane_is_tp`)."""
        return self.tp.unpack()

    @property
    def det_is_ignored(self) -> np.ndarray:
        """Bool (n_lane, n_det): ignored detections, unpacked (allocates; see :meth:`lane_is_ignored`)."""
        return self.ignored.unpack()

    def lane_is_tp(self, lane: int) -> np.ndarray:
        """Bool (n_det,): the true positives of one lane."""
        return self.tp.lane(lane)

    def lane_is_ignored(self, lane: int) -> np.ndarray:
        """Bool (n_det,): the ignored detections of one lane."""
        return self.ignored.lane(lane)


def merge_match_tables(tables: list) -> MatchTable:
    """Concatenate the match tables of disjoint image shards (same GT categories, same protocol).

    The merged table accumulates to exactly the numbers of one run over all images. Its
    detections are the tables' in the order given; its matches are laid out as one
    :func:`~deteval.evaluate.match` lays them out, sorted by (lane, detection), by the same
    routine that joins :func:`~deteval.evaluate.match`'s own image shards
    (:func:`_table_rows`): tables of consecutive shards merge into exactly the table of one run.
    """
    if len(tables) == 1:
        return tables[0]
    cat = np.concatenate
    sizes = [len(t.det_score) for t in tables]
    offsets = np.cumsum([0] + sizes[:-1])
    n_det = sum(sizes)
    n_lane = tables[0].n_lane
    n_gt = max((int(t.match_gt.max()) + 1 for t in tables if len(t.match_gt)), default=0)
    parts = [
        [t.match_lane, _shifted_rows([t.match_det], offsets[i : i + 1], n_det), t.match_gt]
        for i, t in enumerate(tables)
    ]
    match_lane, match_det, match_gt = _table_rows(parts, n_lane, n_det, n_gt)
    return MatchTable(
        det_score=cat([t.det_score for t in tables]),
        det_class=cat([t.det_class for t in tables]),
        det_image=cat([t.det_image for t in tables]),
        det_rank=cat([t.det_rank for t in tables]),
        det_order=cat([t.det_order for t in tables]),
        match_lane=match_lane,
        match_det=match_det,
        match_gt=match_gt,
        tp=LaneFlags.concatenate([t.tp for t in tables]),
        ignored=LaneFlags.concatenate([t.ignored for t in tables]),
        n_positive=sum(t.n_positive for t in tables),
        n_det_per_class=sum(t.n_det_per_class for t in tables),
        n_over_max_dets=sum(t.n_over_max_dets for t in tables),
    )


#: :func:`_table_rows`: up to this many parts (match()'s image shards), each lane of each part is
#: copied by a slice, column by column, the peak one column; more parts (the Evaluator's batches,
#: hundreds of them with a few matches each), one permutation of all the matches.
_PARTS_COPIED_BY_SLICES = 16


def _table_rows(parts: list, n_lane: int, n_det: int, n_gt: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shards' matches as the table's (match_lane, match_det, match_gt), sorted by (lane, detection).

    The one merge of matches (:func:`~deteval.evaluate.match`'s image shards and
    :func:`merge_match_tables`' tables). ``parts`` are ``[match_lane, match_det, match_gt]``
    lists with table rows (shifted already). Each shard's matches are sorted by lane, then
    detection, and the shards come in detection order: lane by lane, the shards' runs follow each other. The columns are laid out one at a
    time, each shard's column dropped once copied (the peak is one column, not the table).
    """
    dtypes = (lane_dtype(n_lane), row_dtype(n_det), row_dtype(n_gt))
    if len(parts) > _PARTS_COPIED_BY_SLICES:
        # Many small parts (the Evaluator's batches): one stable sort of every match by its lane
        # (a radix sort of the small lane dtype) gives the same layout in one gather per column.
        order = np.argsort(np.concatenate([part[0] for part in parts]), kind="stable")
        return tuple(  # type: ignore[return-value]
            np.concatenate([part[k] for part in parts]).astype(dtype, copy=False)[order]
            for k, dtype in enumerate(dtypes)
        )
    counts = [np.bincount(part[0].astype(np.int64), minlength=n_lane) for part in parts]
    counts_arr = np.array(counts, dtype=np.int64).reshape(len(parts), n_lane)
    first_in_part = np.cumsum(counts_arr, axis=1) - counts_arr
    out = []
    for k, dtype in enumerate(dtypes):
        column = np.empty(int(counts_arr.sum()), dtype=dtype)
        at = 0
        for lane in range(n_lane):
            for p, part in enumerate(parts):
                size = int(counts_arr[p, lane])
                if size:
                    first = int(first_in_part[p, lane])
                    column[at : at + size] = part[k][first : first + size]
                    at += size
        for part in parts:
            part[k] = None
        out.append(column)
    return out[0], out[1], out[2]


def _shifted_rows(parts: list, offsets: np.ndarray, n_row: int) -> np.ndarray:
    """The parts' rows, each shifted by its offset, in one array of the narrowest row dtype."""
    out = np.empty(sum(len(p) for p in parts), dtype=row_dtype(n_row))
    at = 0
    for part, offset in zip(parts, offsets, strict=True):
        out[at : at + len(part)] = part
        out[at : at + len(part)] += int(offset)
        at += len(part)
    return out
