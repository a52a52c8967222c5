"""What a weighted re-accumulation needs of one (detector, protocol), computed once.

Everything that does not depend on the weights of the resamples: the ranked true positives of
each curve, where their weights come from (ties expanded under ``score_order: image_major``),
the counted ground truth per image, and which (area, ``max_dets``) the headline metrics read.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from deteval._values import frozen
from deteval.accumulate import recall_thresholds
from deteval.data import GroundTruth
from deteval.evaluate import MatchTable, ground_truth_flags, ranking_order
from deteval.protocol import Protocol
from deteval.summary import SUMMARY_TERMS, summary_indices


def positives_per_class(gt: GroundTruth, protocol: Protocol) -> np.ndarray:
    """int64 (n_class, n_area): counted ground truth, as :func:`evaluate.match` counts it."""
    is_ignored, _, _ = ground_truth_flags(gt, protocol)
    n_area = len(protocol.area_ranges)
    out = np.zeros((gt.n_classes, n_area), dtype=np.int64)
    for a in range(n_area):
        out[:, a] = np.bincount(gt.category[~is_ignored[a]], minlength=gt.n_classes)
    return out


def _positives_per_image(gt: GroundTruth, protocol: Protocol) -> _RecallOnly:
    """Counted ground truth per (class * n_area + area, image): the non-zero counts only.

    Sparse: a dense (n_img, n_class, n_area) table would take 8 bytes per image and class
    (17 GB for 100,000 images of 22,000 categories). Keys are int64: ``column * n_img + image``.
    """
    is_ignored, _, _ = ground_truth_flags(gt, protocol)
    n_area = len(protocol.area_ranges)
    n_images = max(gt.n_images, 1)
    keys = []
    for a in range(n_area):
        counted = ~is_ignored[a]
        column = gt.category[counted].astype(np.int64) * n_area + a
        keys.append(column * n_images + gt.image[counted])
    pairs, count = np.unique(np.concatenate(keys), return_counts=True)
    column, img = np.divmod(pairs, n_images)
    return _RecallOnly(
        img=img.astype(np.int64),
        count=count.astype(np.int64),
        bounds=np.searchsorted(column, np.arange(gt.n_classes * n_area + 1)),
    )


@frozen(eq=False)
class _WeightLayout:
    """Where every entry's weight is read in one resample's weight table (:meth:`table`).

    The table holds the image weights ``w`` (n_img,), a 0 (the weight of virtual items, image
    ``n_img``), then for each image that may be drawn more than once (``tie_img``) the 0/1
    weights ``w[img] > rep`` of its repetitions ``rep < n_rep``: an entry of an expanded tie
    (see :func:`_expand_ties`) reads its 0/1 there, every other entry reads its image's
    weight, so the weights of any list of entries are one ``take``.
    """

    n_images: int
    tie_img: np.ndarray  # (n_tie,) images with max_weight > 1
    tie_slot: np.ndarray  # (n_images + 1,) row of each image in the 0/1 block (-1: none)
    n_rep: int

    @classmethod
    def of(cls, max_weight: np.ndarray) -> _WeightLayout:
        n = len(max_weight)
        tie_img = np.flatnonzero(max_weight > 1)
        tie_slot = np.full(n + 1, -1, dtype=np.int64)
        tie_slot[tie_img] = np.arange(len(tie_img))
        return cls(n, tie_img, tie_slot, int(max(max_weight.max(initial=1), 1)))

    def key(self, img: np.ndarray, rep: np.ndarray) -> np.ndarray:
        """Positions (intp) in the table of entries (image, repetition; -1: not expanded)."""
        img = np.asarray(img, dtype=np.intp)
        block = self.n_images + 1 + self.tie_slot[img] * self.n_rep + rep
        return np.where(rep < 0, img, block).astype(np.intp)

    def table(self, w_row: np.ndarray) -> np.ndarray:
        """int64 weight table of one resample, ``w_row`` (n_img,) int64."""
        n, n_tie = self.n_images, len(self.tie_img)
        out = np.empty(n + 1 + n_tie * self.n_rep, dtype=np.int64)
        out[:n] = w_row
        out[n] = 0
        np.greater(
            w_row[self.tie_img][:, None], np.arange(self.n_rep), out=out[n + 1 :].reshape(n_tie, self.n_rep)
        )
        return out


@frozen(eq=False)
class _Source:
    """Where the weights of a list of ranked entries come from: ``table[key]`` (see _WeightLayout)."""

    key: np.ndarray  # (n,) intp

    @classmethod
    def of(cls, img: np.ndarray, rep: np.ndarray, layout: _WeightLayout) -> _Source:
        return cls(key=layout.key(img, rep))

    def __len__(self) -> int:
        return len(self.key)

    def take(self, table: np.ndarray) -> np.ndarray:
        """int64 (n,): the entries' weights in the resample of the weight ``table``."""
        return np.take(table, self.key)


@frozen(eq=False)
class _Curve:
    """The true positives of the ranking at one ``max_dets`` value and how to count them.

    All lanes, and how to count the entries ranked up to each of them (everything that does
    not depend on the weights).

    Items are the true positives sorted by (lane, class, rank): segment ``lane * n_class + class``,
    each segment closed by one *virtual* item (weight 0: it reads slot ``n_img`` of the weight
    table, always 0) that stands for the recall thresholds no true positive reaches. Every segment thus has at least one item, its last one virtual, and the
    weighted TP count at the virtual item is the segment's total.

    The entries ranked from the start of an item's class up to the item, counted in its lane
    (neither ignored), are the entries counted in the first lane of its area (a cumulative sum
    per area) corrected by the few entries whose ignore flag differs in the item's lane (a
    cumulative sum over the corrections of every lane, read at the item and at its class start).
    """

    items: _Source
    seg_len: np.ndarray  # (n_seg,) items of each segment (>= 1, the virtual one included)
    seg_head: np.ndarray  # (n_seg,) first item of each segment
    virtual: np.ndarray  # (n_seg,) the virtual (last) item of each segment
    is_virtual: np.ndarray  # (n_items,) bool
    area_items: tuple  # per area: (lo, hi) items of its lanes
    blocks: tuple  # (area, s0, s1, lo, hi): whole segments [s0, s1) of one area, items [lo, hi)
    counted: tuple  # per area: _Source of the entries counted in its first lane
    item_counted: np.ndarray  # (n_items,) counted entries of its area ranked up to the item
    seg_counted_start: np.ndarray  # (n_seg,) ... ranked before the segment's class starts
    corr: _Source  # entries counted differently in some lane than in its area's first
    corr_sign: np.ndarray  # (n_corr,) +1: not counted in that lane; -1: counted only there
    item_fix_hi: np.ndarray  # (n_items,) corrections of the item's lane ranked up to the item
    seg_fix_lo: np.ndarray  # (n_seg,) ... before the segment's class starts

    @property
    def n_real(self) -> int:
        """Items that are true positives (not virtual)."""
        return len(self.items) - len(self.virtual)

    @cached_property
    def flat(self) -> _FlatCurve | None:
        """The arrays the compiled kernel (``deteval._cboot``) reads, built on first use."""
        return _FlatCurve.of(self)


@frozen(eq=False)
class _FlatCurve:
    """A :class:`_Curve` as ``deteval._cboot.curve_row`` reads it: contiguous arrays.

    Per item and per entry, int32 (half the memory traffic of a resample); per segment, int64.
    The counted entries of every area are concatenated (``counted_bounds``: where each area's
    start). ``iwork`` and ``fwork`` size the kernel's work buffers: int64, the cumulative sums of
    the counted entries of every area and of the corrections, each with a leading 0 (the caller
    adds ``n_r + 1`` for a histogram of the thresholds reached); float64, one segment's items.
    """

    arrays: tuple  # key, seg_len, item_counted, seg_counted_start, counted_key, counted_bounds,
    # corr_key, corr_sign, item_fix_hi, seg_fix_lo
    iwork: int
    fwork: int

    @classmethod
    def of(cls, cur: _Curve) -> _FlatCurve | None:
        """The flat arrays of ``cur``; None when a per-item index does not fit int32."""
        counted = [s.key for s in cur.counted]
        bounds = np.cumsum([0, *(len(k) for k in counted)])
        all_counted = np.concatenate(counted) if counted else np.zeros(0, dtype=np.int64)
        per_item = (
            cur.items.key,
            cur.item_counted,
            all_counted,
            cur.corr.key,
            cur.corr_sign,
            cur.item_fix_hi,
        )
        if any(len(x) and (x.max() >= 2**31 or x.min() < -(2**31)) for x in per_item):
            return None  # pragma: no cover - billions of entries; the numpy path takes them
        key, item_counted, counted_key, corr_key, corr_sign, item_fix_hi = (
            np.ascontiguousarray(x, dtype=np.int32) for x in per_item
        )

        def i64(x: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(x, dtype=np.int64)

        arrays = (
            key,
            i64(cur.seg_len),
            item_counted,
            i64(cur.seg_counted_start),
            counted_key,
            i64(bounds),
            corr_key,
            corr_sign,
            item_fix_hi,
            i64(cur.seg_fix_lo),
        )
        longest = int(cur.seg_len.max(initial=1))
        return cls(arrays, int(bounds[-1]) + len(counted) + len(cur.corr) + 1, longest)


@frozen(eq=False)
class _RecallOnly:
    """Counts per (segment, image), for weighted sums ``n[seg] = sum(count * w[img])``.

    The true positives of one (area, ``max_dets``) per (threshold, class) (final recall only),
    or the counted ground truth per (class, area).
    """

    img: np.ndarray  # (n_pairs,) sorted by segment t * n_class + class
    count: np.ndarray  # (n_pairs,)
    bounds: np.ndarray  # (n_thr * n_class + 1,)


@frozen(eq=False)
class _Plan:
    """Everything about one (detector, protocol) that does not depend on the weights."""

    protocol: Protocol
    n_class: int
    n_thr: int
    n_area: int
    layout: _WeightLayout  # the weight table of a resample
    positives: _RecallOnly  # counted GT per (class * n_area + area, image)
    curves: dict  # max_dets index -> _Curve (precision needed there)
    recall_only: dict  # (area, max_dets index) -> _RecallOnly (only final recall needed)
    terms: tuple  # SummaryTerm of the headline metrics (empty: mAP)

    @property
    def size(self) -> int:
        """Cells of work per resample (bounds a chunk's memory)."""
        n_r = max(len(recall_thresholds(self.protocol)), 1)
        cells = [2 * n_r * len(c.seg_len) for c in self.curves.values()]
        return max(sum(cells) + sum(len(r.img) for r in self.recall_only.values()), 1)


def _needs(protocol: Protocol) -> tuple:
    """(terms, max_dets indices whose precision is read, (area, max_dets) pairs whose recall is read).

    Only what the headline metrics and per-class AP read is computed: per-class AP reads area
    0 at the largest ``max_dets``; each summary term one area at one ``max_dets``.
    """
    n_m = len(protocol.max_dets) if protocol.max_dets is not None else 1
    precision_m, recall_am = {n_m - 1}, set()
    terms: tuple = ()
    if not protocol.is_single_threshold:
        terms = SUMMARY_TERMS[protocol.summary](protocol)
        for term in terms:
            where = summary_indices(
                protocol, iou_threshold=term.iou_threshold, area=term.area, max_det=term.max_det
            )
            if where is None:
                continue
            if term.kind == "AP":
                precision_m.add(where[2])
            else:
                recall_am.add((where[1], where[2]))
    return terms, tuple(sorted(precision_m)), tuple(sorted(recall_am))


def _expand_ties(rows: np.ndarray, table: MatchTable, protocol: Protocol, max_weight: np.ndarray) -> tuple:
    """Entries of the weighted ranking: (row, repetition) with within-image ties expanded.

    Under ``score_order: image_major`` the copies of an image interleave its tied detections
    (copy 1's block, then copy 2's ...): a block of ``s`` tied rows of one image becomes
    ``max_weight[image]`` repetitions of the block, repetition ``j`` weighing 1 when the image
    is drawn more than ``j`` times. Every other row is one entry weighing ``w``.
    """
    n = len(rows)
    if n == 0 or protocol.score_order != "image_major":
        return rows, np.full(n, -1, dtype=np.int64)
    cls, img, sc = table.det_class[rows], table.det_image[rows], table.det_score[rows]
    new = np.ones(n, dtype=bool)
    new[1:] = (cls[1:] != cls[:-1]) | (img[1:] != img[:-1]) | (sc[1:] != sc[:-1])
    first = np.flatnonzero(new)
    size = np.diff(np.append(first, n))
    reps = max_weight[img[first]]
    expand = (size > 1) & (reps > 1)
    if not expand.any():
        return rows, np.full(n, -1, dtype=np.int64)
    out_size = np.where(expand, size * reps, size)
    block = np.repeat(np.arange(len(first)), out_size)
    e = np.arange(out_size.sum()) - np.repeat(np.cumsum(out_size) - out_size, out_size)
    s = size[block]
    entry_row = rows[first[block] + e % s]
    entry_rep = np.where(expand[block], e // s, -1)
    return entry_row, entry_rep.astype(np.int64)


#: Items per block of a resample's re-accumulation: a block's arrays stay in a core's cache.
_BLOCK_ITEMS = 65536


def _blocks(seg_bounds: np.ndarray, n_area: int) -> tuple:
    """Consecutive segments grouped into blocks of about ``_BLOCK_ITEMS`` items, one area each."""
    n_seg = len(seg_bounds) - 1
    per_area = n_seg // max(n_area, 1)
    out = []
    for a in range(n_area):
        s_lo, s_hi = a * per_area, (a + 1) * per_area
        if s_hi == s_lo:
            continue
        block = (seg_bounds[s_lo:s_hi] - seg_bounds[s_lo]) // _BLOCK_ITEMS
        firsts = s_lo + np.flatnonzero(np.diff(block, prepend=-1))
        for s0, s1 in zip(firsts.tolist(), [*firsts[1:].tolist(), s_hi]):
            out.append((a, s0, s1, int(seg_bounds[s0]), int(seg_bounds[s1])))
    return tuple(out)


def _curve(
    table: MatchTable,
    rows: np.ndarray,
    protocol: Protocol,
    n_class: int,
    layout: _WeightLayout,
    max_weight: np.ndarray,
    tp_all: np.ndarray,
    ign_all: np.ndarray,
) -> _Curve:
    n_thr = len(protocol.iou_thresholds)
    n_area = len(protocol.area_ranges)
    n_lane = n_thr * n_area
    n_images = layout.n_images
    entry_row, entry_rep = _expand_ties(rows, table, protocol, max_weight)
    n_e = len(entry_row)
    entry_img = table.det_image[entry_row].astype(np.int64)
    entry_cls = table.det_class[entry_row].astype(np.int64)
    seg_start = np.searchsorted(entry_cls, np.arange(n_class))  # first entry of each class
    is_tp = tp_all[:, entry_row]
    is_ign = ign_all[:, entry_row]
    item_lane, item_pos = np.divmod(np.flatnonzero(is_tp), max(n_e, 1))
    # One virtual item closing each segment: the class start as its position (any valid
    # position: its precision and reach are overwritten), the extra image n_img (weight 0).
    n_seg = n_lane * n_class
    v_lane, v_cls = np.divmod(np.arange(n_seg), n_class)
    by_seg = np.argsort(
        np.concatenate([item_lane * n_class + entry_cls[item_pos], v_lane * n_class + v_cls]), kind="stable"
    )
    is_virtual = by_seg >= len(item_pos)
    item_lane = np.concatenate([item_lane, v_lane])[by_seg]
    item_cls = np.concatenate([entry_cls[item_pos], v_cls])[by_seg]
    item_pos = np.concatenate([item_pos, seg_start[v_cls]])[by_seg]
    real_pos = np.where(is_virtual, n_e, item_pos)  # n_e: the padding entry below
    item_img = np.where(is_virtual, n_images, np.append(entry_img, 0)[real_pos])
    item_rep = np.where(is_virtual, -1, np.append(entry_rep, -1)[real_pos])
    item_seg = item_lane * n_class + item_cls
    seg_bounds = np.searchsorted(item_seg, np.arange(n_seg + 1))
    lane_bounds = np.searchsorted(item_lane, np.arange(0, n_lane + 1, n_thr))
    seg_area = np.arange(n_seg) // (n_thr * n_class)
    seg_class_start = seg_start[v_cls]
    item_counted = np.empty(len(item_pos), dtype=np.int64)
    seg_counted_start = np.empty(n_seg, dtype=np.int64)
    counted, area_items, corr_lane, corr_pos, corr_sign = [], [], [], [], []
    for a in range(n_area):
        base = is_ign[a * n_thr]
        positions = np.flatnonzero(~base)
        counted.append(_Source.of(entry_img[positions], entry_rep[positions], layout))
        lo, hi = int(lane_bounds[a]), int(lane_bounds[a + 1])
        area_items.append((lo, hi))
        item_counted[lo:hi] = np.searchsorted(positions, item_pos[lo:hi], "right")
        in_area = seg_area == a
        seg_counted_start[in_area] = np.searchsorted(positions, seg_class_start[in_area], "left")
        for t in range(n_thr):
            lane = a * n_thr + t
            plus = np.flatnonzero(is_ign[lane] & ~base)
            minus = np.flatnonzero(base & ~is_ign[lane])
            pos = np.concatenate([plus, minus])
            order = np.argsort(pos, kind="stable")
            corr_pos.append(pos[order])
            corr_sign.append(
                np.concatenate([np.ones(len(plus), np.int64), -np.ones(len(minus), np.int64)])[order]
            )
            corr_lane.append(np.full(len(pos), lane, dtype=np.int64))
    corr_pos_a = np.concatenate(corr_pos).astype(np.int64)
    corr_key = np.concatenate(corr_lane) * (n_e + 1) + corr_pos_a
    blocks = _blocks(seg_bounds, n_area)
    return _Curve(
        items=_Source.of(item_img, item_rep, layout),
        seg_len=np.diff(seg_bounds),
        seg_head=seg_bounds[:-1],
        virtual=seg_bounds[1:] - 1,
        is_virtual=is_virtual,
        area_items=tuple(area_items),
        blocks=blocks,
        counted=tuple(counted),
        item_counted=item_counted,
        seg_counted_start=seg_counted_start,
        corr=_Source.of(entry_img[corr_pos_a], entry_rep[corr_pos_a], layout),
        corr_sign=np.concatenate(corr_sign),
        item_fix_hi=np.searchsorted(corr_key, item_lane * (n_e + 1) + item_pos, "right"),
        seg_fix_lo=np.searchsorted(corr_key, v_lane * (n_e + 1) + seg_class_start, "left"),
    )


def _recall_only(
    table: MatchTable,
    tp_all: np.ndarray,
    area: int,
    max_det: int | None,
    n_thr: int,
    n_class: int,
    n_images: int,
) -> _RecallOnly:
    keep = np.ones(len(table.det_rank), bool) if max_det is None else table.det_rank < max_det
    t, row = np.nonzero(tp_all[area * n_thr : (area + 1) * n_thr] & keep[None, :])
    key = (t * n_class + table.det_class[row].astype(np.int64)) * n_images + table.det_image[row]
    pairs, count = np.unique(key, return_counts=True)
    seg, img = np.divmod(pairs, max(n_images, 1))
    return _RecallOnly(
        img=img.astype(np.int64),
        count=count.astype(np.int64),
        bounds=np.searchsorted(seg, np.arange(n_thr * n_class + 1)),
    )


def _plan(table: MatchTable, gt: GroundTruth, protocol: Protocol, max_weight: np.ndarray) -> _Plan:
    n_class = gt.n_classes
    n_thr = len(protocol.iou_thresholds)
    n_area = len(protocol.area_ranges)
    max_dets = protocol.max_dets if protocol.max_dets is not None else (None,)
    terms, precision_m, recall_am = _needs(protocol)
    ranking = ranking_order(table, protocol)
    tp_all = np.asarray(table.det_is_tp, dtype=bool)
    ign_all = np.asarray(table.det_is_ignored, dtype=bool) & ~tp_all
    layout = _WeightLayout.of(max_weight)
    curves = {}
    for mi in precision_m:
        max_det = max_dets[mi]
        rows = ranking if max_det is None else ranking[table.det_rank[ranking] < max_det]
        curves[mi] = _curve(table, rows, protocol, n_class, layout, max_weight, tp_all, ign_all)
    recall_only = {
        (a, mi): _recall_only(table, tp_all, a, max_dets[mi], n_thr, n_class, gt.n_images)
        for a, mi in recall_am
        if mi not in curves
    }
    return _Plan(
        protocol=protocol,
        n_class=n_class,
        n_thr=n_thr,
        n_area=n_area,
        layout=layout,
        positives=_positives_per_image(gt, protocol),
        curves=curves,
        recall_only=recall_only,
        terms=terms,
    )
