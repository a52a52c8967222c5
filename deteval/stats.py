"""Bootstrap intervals and a paired comparison of detectors, resampling images.

Is detector B really better than A on this test set, or is the difference what another draw of
images from the same distribution would undo? This module answers with the bootstrap over
images: draw ``n_images`` images with replacement, re-score, repeat; the spread of the scores is
the sampling uncertainty of the number.

Semantics of a resample
-----------------------
A resample is a multiset of images, given as weights ``w`` (n_images,): image ``i`` counted
``w[i]`` times. Its score is *defined* as the score of an explicit dataset in which each image
is repeated ``w[i]`` times, the copies adjacent in image order (copy 2 of image ``i`` right
after copy 1, before image ``i + 1``), and each result line repeated in place (the copies of a
detection adjacent in the results file). Ties in the global ranking then keep a well-defined
order: under ``score_order: image_major`` (pycocotools) tied detections go by (image, copy,
rank in image), so tied detections of one image interleave across its copies; under
``score_order: file`` (the devkits) they go by file order, so the copies of one detection are
adjacent. Matching is per image, so a resample never re-matches: it re-accumulates the
:class:`~deteval.evaluate.MatchTable` with weights (a detection counts ``w`` of its image, a
ground-truth object too). With all weights 1 the numbers are those of
:func:`~deteval.evaluate.score`, bit for bit.

Every resample's weights are drawn up front from ``np.random.default_rng(seed)``
(``multinomial(n_images, uniform)`` per resample), the same for every detector and protocol of
a run (paired), so results depend on the seed only: not on chunking, nor on ``workers``.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from deteval.accumulate import recall_thresholds
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, DetevalError, InputError
from deteval.evaluate import (
    EvalResult,
    MatchTable,
    ground_truth_flags,
    match,
    ranking_order,
    score,
)
from deteval.protocol import Protocol, resolve_protocol
from deteval.summary import SUMMARY_TERMS, summary_indices

__all__ = [
    "BootstrapSettings",
    "Interval",
    "ResampledMetrics",
    "DetectorBootstrap",
    "BootstrapResult",
    "Comparison",
    "ComparisonResult",
    "bootstrap_weights",
    "resample_metrics",
    "bootstrap",
    "compare_detectors",
    "paired_difference",
    "percentile_interval",
    "metrics_ci_dict",
    "per_class_ci_list",
    "result_ci_dict",
    "comparison_dicts",
    "bootstrap_settings_dict",
    "verdict",
]

_METHODS = ("percentile",)
_TESTS = ("bootstrap",)
#: Target number of (item x resample) cells per chunk: bounds the memory of one chunk.
_CELLS_PER_CHUNK = 6_000_000


# --------------------------------------------------------------------------------------------
# Settings and validation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapSettings:
    """How a bootstrap was run (the JSON ``"bootstrap"`` object).

    Attributes
    ----------
    n : int
        Number of resamples (0: point estimates only, no intervals).
    seed : int
    ci : float
        Confidence level of the intervals, in (0, 1).
    method : {"percentile"}
    """

    n: int = 1000
    seed: int = 0
    ci: float = 0.95
    method: str = "percentile"

    def __post_init__(self) -> None:
        _check_settings(self.n, self.seed, self.ci, self.method)

    def to_dict(self) -> dict:
        """The JSON ``"bootstrap"`` object: ``{"n", "seed", "ci", "method"}``."""
        return {"n": self.n, "seed": self.seed, "ci": self.ci, "method": self.method}


def _check_supported(protocol: Protocol) -> None:
    """Refuse protocols whose accumulation the weighted re-accumulation does not reproduce."""
    if (
        protocol.summary not in SUMMARY_TERMS
        or protocol.iou_type == "keypoints"
        or protocol.ap_method not in ("101_point", "11_point", "all_point")
        or protocol.max_dets_per_class is not None
    ):
        raise ConfigError(
            f"bootstrap: protocol {protocol.name!r} (ap_method {protocol.ap_method}, summary "
            f"{protocol.summary}, iou_type {protocol.iou_type}) is not supported by the "
            f"resampling; supported: boxes and masks, ap_method 101_point / 11_point / "
            f"all_point, summary pycocotools / configured, no dataset-wide "
            f"max_dets_per_class (it ties images together)"
        )


def _check_settings(n: Any, seed: Any, ci: Any, method: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ConfigError(f"bootstrap: n (number of resamples) must be an integer >= 0, found {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"bootstrap: seed must be an integer >= 0, found {seed!r}")
    if isinstance(ci, bool) or not isinstance(ci, (int, float, np.floating)) or not (0.0 < ci < 1.0):
        raise ConfigError(
            f"bootstrap: ci (confidence level) must be a number in (0, 1), e.g. 0.95; found {ci!r}"
        )
    if method not in _METHODS:
        raise ConfigError(
            f"bootstrap: method must be one of {list(_METHODS)}, found {method!r} "
            f"(BCa is not offered: see docs/statistics.md)"
        )


def bootstrap_weights(n_images: int, *, n: int, seed: int) -> np.ndarray:
    """Image multiplicities of ``n`` bootstrap resamples.

    Parameters
    ----------
    n_images : int
    n : int
        Number of resamples.
    seed : int

    Returns
    -------
    int64 (n, n_images)
        Row ``b``: how many times each image is drawn in resample ``b`` (each row sums to
        ``n_images``). All rows come from one ``np.random.default_rng(seed)``, in order.

    Examples
    --------
    >>> w = bootstrap_weights(4, n=3, seed=0)
    >>> w.shape, w.sum(axis=1).tolist()
    ((3, 4), [4, 4, 4])
    """
    _check_settings(n, seed, 0.5, "percentile")
    if n_images == 0:
        return np.zeros((n, 0), dtype=np.int64)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_images, np.full(n_images, 1.0 / n_images), size=n).astype(np.int64)


# --------------------------------------------------------------------------------------------
# Weighted re-accumulation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ResampledMetrics:
    """Scores of one detector under one protocol, per resample.

    Attributes
    ----------
    metric_names : tuple of str
        The headline metrics, as :func:`~deteval.evaluate.score` names them.
    metrics : float64 (n_resamples, n_metrics)
        NaN where undefined in a resample.
    per_class_ap : float64 (n_resamples, n_class)
    """

    metric_names: tuple
    metrics: np.ndarray
    per_class_ap: np.ndarray


def _positives_per_image(gt: GroundTruth, protocol: Protocol) -> np.ndarray:
    """int64 (n_img, n_class, n_area): counted ground truth, as :func:`evaluate.match` counts it."""
    is_ignored, _, _ = ground_truth_flags(gt, protocol)
    n_area = len(protocol.area_ranges)
    key = gt.image.astype(np.int64) * gt.n_classes + gt.category
    out = np.zeros((gt.n_images, gt.n_classes, n_area), dtype=np.int64)
    for a in range(n_area):
        counted = ~is_ignored[a]
        out[:, :, a] = np.bincount(key[counted], minlength=gt.n_images * gt.n_classes).reshape(
            gt.n_images, gt.n_classes
        )
    return out


@dataclass(frozen=True, eq=False)
class _Source:
    """Where the weights of a list of ranked entries come from.

    Entry ``i`` weighs ``w[img[i]]``, except the entries ``rep_at`` of expanded ties (see
    :func:`_expand_ties`), which weigh 1 when ``w[img] > rep`` and 0 otherwise.
    """

    img: np.ndarray  # (n,) int64
    rep_at: np.ndarray  # (n_rep,) int64 entries of expanded ties
    rep: np.ndarray  # (n_rep,) int64 their repetition index

    @classmethod
    def of(cls, img: np.ndarray, rep: np.ndarray) -> _Source:
        at = np.flatnonzero(rep >= 0)
        return cls(img=np.asarray(img, dtype=np.int64), rep_at=at, rep=rep[at].astype(np.int64))

    def __len__(self) -> int:
        return len(self.img)

    def weights(self, w: np.ndarray) -> np.ndarray:
        """int64 (B, n): the entries' weights in each resample of ``w`` (B, n_img)."""
        out = np.take(w, self.img, axis=1)
        if len(self.rep_at):
            out[:, self.rep_at] = np.take(w, self.img[self.rep_at], axis=1) > self.rep
        return out


@dataclass(frozen=True, eq=False)
class _Curve:
    """The true positives of the ranking at one ``max_dets`` value and how to count them.

    All lanes, and how to count the entries ranked up to each of them (everything that does
    not depend on the weights).

    Items are the true positives sorted by (lane, class, rank): segment ``lane * n_class + class``.
    The entries ranked from the start of an item's class up to the item, counted in its lane
    (neither ignored), are the entries counted in the first lane of its area (a cumulative sum
    per area) corrected by the few entries whose ignore flag differs in the item's lane.
    """

    items: _Source
    item_first: np.ndarray  # (n_items,) first item of the item's segment
    item_seg: np.ndarray  # (n_items,) segment of each item
    seg_key_rev: np.ndarray  # (n_items,) float64 segment keys of the envelope scan, backwards
    seg_head: np.ndarray  # first item of each non-empty segment
    seg_last: np.ndarray  # (n_seg,) last item of each segment, -1 when empty
    seg_bounds: np.ndarray  # (n_seg + 1,) item offsets of the segments
    area_items: tuple  # per area: (lo, hi) items of its lanes
    counted: tuple  # per area: _Source of the entries counted in its first lane
    item_counted: np.ndarray  # (n_items,) counted entries of its area ranked up to the item
    item_counted_start: np.ndarray  # (n_items,) ... ranked before the item's class starts
    corr: _Source  # entries counted differently in some lane than in its area's first
    corr_sign: np.ndarray  # (n_corr,) +1: not counted in that lane; -1: counted only there
    fix_items: np.ndarray  # items with corrections in their range
    fix_hi: np.ndarray  # correction offsets [lo, hi) of each of them
    fix_lo: np.ndarray


@dataclass(frozen=True, eq=False)
class _RecallOnly:
    """Counts per (segment, image), for weighted sums ``n[seg] = sum(count * w[img])``.

    The true positives of one (area, ``max_dets``) per (threshold, class) (final recall only),
    or the counted ground truth per (class, area).
    """

    img: np.ndarray  # (n_pairs,) sorted by segment t * n_class + class
    count: np.ndarray  # (n_pairs,)
    bounds: np.ndarray  # (n_thr * n_class + 1,)


@dataclass(frozen=True, eq=False)
class _Plan:
    """Everything about one (detector, protocol) that does not depend on the weights."""

    protocol: Protocol
    n_class: int
    n_thr: int
    n_area: int
    positives: _RecallOnly  # counted GT per (class * n_area + area, image)
    curves: dict  # max_dets index -> _Curve (precision needed there)
    recall_only: dict  # (area, max_dets index) -> _RecallOnly (only final recall needed)
    terms: tuple  # SummaryTerm of the headline metrics (empty: mAP)

    @property
    def size(self) -> int:
        """Cells of work per resample (bounds a chunk's memory)."""
        n_r = max(len(recall_thresholds(self.protocol)), 1)
        cells = [
            2 * len(c.items) + sum(len(s) for s in c.counted) + len(c.corr) + n_r * (len(c.seg_bounds) - 1)
            for c in self.curves.values()
        ]
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


def _curve(
    table: MatchTable,
    rows: np.ndarray,
    protocol: Protocol,
    n_class: int,
    max_weight: np.ndarray,
    tp_all: np.ndarray,
    ign_all: np.ndarray,
) -> _Curve:
    n_thr = len(protocol.iou_thresholds)
    n_area = len(protocol.area_ranges)
    n_lane = n_thr * n_area
    entry_row, entry_rep = _expand_ties(rows, table, protocol, max_weight)
    n_e = len(entry_row)
    entry_img = table.det_image[entry_row].astype(np.int64)
    entry_cls = table.det_class[entry_row].astype(np.int64)
    seg_start = np.searchsorted(entry_cls, np.arange(n_class))  # first entry of each class
    is_tp = tp_all[:, entry_row]
    is_ign = ign_all[:, entry_row]
    item_lane, item_pos = np.divmod(np.flatnonzero(is_tp), max(n_e, 1))
    item_cls = entry_cls[item_pos]
    item_seg = item_lane * n_class + item_cls
    seg_bounds = np.searchsorted(item_seg, np.arange(n_lane * n_class + 1))
    lane_bounds = np.searchsorted(item_lane, np.arange(0, n_lane + 1, n_thr))
    item_counted = np.empty(len(item_pos), dtype=np.int64)
    item_counted_start = np.empty(len(item_pos), dtype=np.int64)
    counted, area_items, corr_lane, corr_pos, corr_sign = [], [], [], [], []
    for a in range(n_area):
        base = is_ign[a * n_thr]
        positions = np.flatnonzero(~base)
        counted.append(_Source.of(entry_img[positions], entry_rep[positions]))
        lo, hi = int(lane_bounds[a]), int(lane_bounds[a + 1])
        area_items.append((lo, hi))
        item_counted[lo:hi] = np.searchsorted(positions, item_pos[lo:hi], "right")
        item_counted_start[lo:hi] = np.searchsorted(positions, seg_start[item_cls[lo:hi]], "left")
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
    fix_hi = np.searchsorted(corr_key, item_lane * (n_e + 1) + item_pos, "right")
    fix_lo = np.searchsorted(corr_key, item_lane * (n_e + 1) + seg_start[item_cls], "left")
    fix_items = np.flatnonzero(fix_hi > fix_lo)
    return _Curve(
        items=_Source.of(entry_img[item_pos], entry_rep[item_pos]),
        item_first=seg_bounds[item_seg],
        item_seg=item_seg,
        seg_key_rev=-item_seg[::-1].astype(np.float64),
        seg_head=seg_bounds[:-1][np.diff(seg_bounds) > 0],
        seg_last=np.where(np.diff(seg_bounds) > 0, seg_bounds[1:] - 1, -1),
        seg_bounds=seg_bounds,
        area_items=tuple(area_items),
        counted=tuple(counted),
        item_counted=item_counted,
        item_counted_start=item_counted_start,
        corr=_Source.of(entry_img[corr_pos_a], entry_rep[corr_pos_a]),
        corr_sign=np.concatenate(corr_sign),
        fix_items=fix_items,
        fix_hi=fix_hi[fix_items],
        fix_lo=fix_lo[fix_items],
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
    key = (t * n_class + table.det_class[row]) * n_images + table.det_image[row]
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
    curves = {}
    for mi in precision_m:
        max_det = max_dets[mi]
        rows = ranking if max_det is None else ranking[table.det_rank[ranking] < max_det]
        curves[mi] = _curve(table, rows, protocol, n_class, max_weight, tp_all, ign_all)
    recall_only = {
        (a, mi): _recall_only(table, tp_all, a, max_dets[mi], n_thr, n_class, gt.n_images)
        for a, mi in recall_am
        if mi not in curves
    }
    positives = _positives_per_image(gt, protocol).reshape(gt.n_images, n_class * n_area)
    col, img = np.nonzero(positives.T)
    positives_sparse = _RecallOnly(
        img=img.astype(np.int64),
        count=positives[img, col],
        bounds=np.searchsorted(col, np.arange(n_class * n_area + 1)),
    )
    return _Plan(
        protocol=protocol,
        n_class=n_class,
        n_thr=n_thr,
        n_area=n_area,
        positives=positives_sparse,
        curves=curves,
        recall_only=recall_only,
        terms=terms,
    )


def _cumsum0(values: np.ndarray) -> np.ndarray:
    """Cumulative sums along axis 1 with a leading 0 column: (B, n) -> (B, n + 1), exact for ints."""
    out = np.zeros((values.shape[0], values.shape[1] + 1), dtype=values.dtype)
    np.cumsum(values, axis=1, out=out[:, 1:])
    return out


def _curve_chunk(plan: _Plan, cur: _Curve, w: np.ndarray, npos: np.ndarray) -> tuple:
    """Interpolated precision (or all-point AP) and final TP counts of one curve for a chunk.

    Parameters
    ----------
    w : int64 (B, n_img)
    npos : int64 (B, n_class * n_area)

    Returns
    -------
    (values, n_tp)
        values: float64 (B, n_area, n_thr, n_class, n_r) precision at the recall thresholds
        (NaN where undefined), or (B, n_area, n_thr, n_class) all-point AP; n_tp: int64
        (B, n_area, n_thr, n_class) weighted true positives.
    """
    p = plan.protocol
    n_class, n_area, n_thr = plan.n_class, plan.n_area, plan.n_thr
    n_seg = n_area * n_thr * n_class
    B = w.shape[0]
    n_items = len(cur.items)
    bounds = cur.seg_bounds
    # Weighted TP count at each item (from its segment's start) and per segment.
    item_w = cur.items.weights(w)
    tp_cum = _cumsum0(item_w)
    tp = tp_cum[:, 1:] - np.take(tp_cum, cur.item_first, axis=1)
    n_tp = np.take(tp_cum, bounds[1:], axis=1) - np.take(tp_cum, bounds[:-1], axis=1)
    del tp_cum
    # Weighted entries counted (TP + FP) from the class start through each item.
    ranked = np.empty((B, n_items), dtype=np.int64)
    for a, (lo, hi) in enumerate(cur.area_items):
        if hi > lo:
            c = _cumsum0(cur.counted[a].weights(w))
            np.subtract(
                np.take(c, cur.item_counted[lo:hi], axis=1),
                np.take(c, cur.item_counted_start[lo:hi], axis=1),
                out=ranked[:, lo:hi],
            )
            del c
    if len(cur.fix_items):
        cc = _cumsum0(cur.corr.weights(w) * cur.corr_sign)
        ranked[:, cur.fix_items] -= np.take(cc, cur.fix_hi, axis=1) - np.take(cc, cur.fix_lo, axis=1)
    # tp + fp == ranked exactly (integers), so these are the reference formulas' floats. For the
    # sampled envelopes precision is written straight into the imaginary parts of the suffix
    # maximum's keys (see _segment_suffix_max), laid out backwards.
    if p.ap_method == "all_point":
        z = np.empty((0, 0), dtype=np.complex128)  # no envelope scan
        pr = np.empty((B, n_items))
    else:
        z = np.empty((B, n_items), dtype=np.complex128)
        z.real = cur.seg_key_rev
        pr = z.imag[:, ::-1]
    if p.ap_method == "101_point":
        np.add(ranked, np.spacing(1), out=pr)  # pycocotools: tp / (fp + tp + eps)
    else:
        np.maximum(ranked, np.finfo(np.float64).eps, out=pr)  # devkit_precision: tp / max(tp + fp, eps)
    np.divide(tp, pr, out=pr)
    del ranked
    seg = np.arange(n_seg)
    seg_col = (seg % n_class) * n_area + seg // (n_thr * n_class)  # column of npos
    seg_npos = npos[:, seg_col]  # (B, n_seg)
    n_tp_out = n_tp.reshape(B, n_area, n_thr, n_class)
    if p.ap_method == "all_point":
        pr[item_w == 0] = 0.0
        item_seg = np.repeat(seg, np.diff(bounds))
        ap = _all_point_w(
            tp.astype(np.float64).T,
            pr.T,
            item_seg,
            bounds,
            seg_npos.astype(np.float64),
            n_area * n_thr,
            n_class,
        )
        return ap.reshape(B, n_area, n_thr, n_class), n_tp_out
    rec_thr = recall_thresholds(p)
    np.maximum.accumulate(z, axis=1, out=z)  # pr now holds the envelope (suffix maxima)
    q = _interpolated_precision(cur, pr, tp, npos, seg_col, rec_thr)
    # Classes without positives are left as they are: every reader masks them (is_defined).
    return q.reshape(B, n_area, n_thr, n_class, len(rec_thr)), n_tp_out


def _interpolated_precision(
    cur: _Curve,
    env: np.ndarray,
    tp: np.ndarray,
    npos: np.ndarray,
    seg_col: np.ndarray,
    rec_thr: np.ndarray,
) -> np.ndarray:
    """Precision envelope at the recall thresholds, (B, n_seg, n_r), without per-threshold searches.

    pycocotools reads, for each threshold ``r``, the suffix maximum of precision from the first
    entry whose recall ``tp / npos`` reaches ``r``: that entry is a true positive (the first one
    for ``r = 0``), so the envelope is a suffix maximum over the true-positive items of each
    segment, and the thresholds an item is the first to reach are those in ``(k(prev), k(item)]``
    with ``k = #{r : thr_r <= tp / npos}`` (the same float division: ``j / npos`` is monotone in
    ``j``). Every envelope value is repeated by its number of thresholds, each segment followed
    by its unreached thresholds (precision 0): one ``repeat`` writes the (segment, threshold)
    table in order.

    ``env`` (B, n_items) holds the suffix maxima of precision within each segment. The caller
    gets them from one forward ``maximum.accumulate`` per row over complex keys
    ``-segment + 1j * precision`` laid out backwards: numpy orders complex numbers
    lexicographically, so the scan restarts at each segment and the imaginary parts are the
    exact maxima (no arithmetic on the values).
    """
    B, n_items = env.shape
    n_seg, n_r = len(cur.seg_last), len(rec_thr)
    q = np.zeros((B, n_seg, n_r))
    if not n_items:
        return q
    table, start = _thresholds_table(npos, rec_thr)
    k = np.take(start, seg_col[cur.item_seg], axis=1)
    k += tp
    k = np.take(table, k)
    step = np.empty_like(k)
    step[:, 0] = k[:, 0]
    np.subtract(k[:, 1:], k[:, :-1], out=step[:, 1:])
    step[:, cur.seg_head] = k[:, cur.seg_head]
    k_last = np.where(cur.seg_last >= 0, np.take(k, cur.seg_last, axis=1), 0)
    q[np.arange(n_r) < k_last[:, :, None]] = np.repeat(env.ravel(), step.ravel())
    return q


def _thresholds_table(npos: np.ndarray, rec_thr: np.ndarray) -> tuple:
    """How many recall thresholds each weighted TP count reaches, per resample and column of npos.

    Parameters
    ----------
    npos : int64 (B, n_col)

    Returns
    -------
    (table, start)
        ``table[start[b, c] + j]`` (``0 <= j <= npos[b, c]``) is ``#{r : thr_r <= j / npos}``
        (the float division of the reference tools), 0 for ``j == 0`` (nothing reached before
        the first true positive). A segment's weighted TP count never exceeds its positives,
        so an item's count is a lookup: this table has ``sum(npos) + n_col`` entries per
        resample instead of one search per item.
    """
    sizes = npos.ravel() + 1
    start = np.cumsum(sizes) - sizes
    j = np.arange(int(sizes.sum())) - np.repeat(start, sizes)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 where npos == 0: set to 0 below
        rc = j / np.repeat(sizes - 1, sizes)
    table = np.searchsorted(rec_thr, rc, "right")
    table[j == 0] = 0
    return table, start.reshape(npos.shape)


def _all_point_w(
    tp_f: np.ndarray,
    pr: np.ndarray,
    seg: np.ndarray,
    seg_bounds: np.ndarray,
    seg_npos: np.ndarray,
    n_lane: int,
    n_class: int,
) -> np.ndarray:
    """VOC2010+ all-point AP per resample, lane and class (the terms of ``VOCap.m``)."""
    B = tp_f.shape[1]
    ap = np.full((B, n_lane * n_class), np.nan)
    for s in range(n_lane * n_class):
        npos = seg_npos[:, s]
        defined = npos > 0
        lo, hi = seg_bounds[s], seg_bounds[s + 1]
        if hi == lo:
            ap[defined, s] = 0.0
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            rec = (tp_f[lo:hi] / npos).T  # (B, n)
        env = np.maximum.accumulate(pr[lo:hi][::-1], axis=0)[::-1].T  # (B, n)
        prev = np.concatenate([np.zeros((B, 1)), rec[:, :-1]], axis=1)
        # C order: a sum along contiguous rows is numpy's pairwise sum, as in _all_point_ap.
        terms = np.ascontiguousarray((rec - prev) * env)
        with_tail = np.concatenate([terms, np.zeros((B, 1))], axis=1)
        total = np.where(rec[:, -1] != 1.0, np.sum(with_tail, axis=1), np.sum(terms, axis=1))
        ap[defined, s] = total[defined]
    return ap.reshape(B, n_lane, n_class)


def _mean_defined_rows(values: np.ndarray, is_defined: np.ndarray) -> np.ndarray:
    """:func:`~deteval.summary.mean_defined` of each resample.

    Values (B, ..., n_class), classes defined (B, n_class) -> (B,).

    Resamples with the same defined classes are averaged together: the defined values of a
    row, in C order, are one contiguous row, and numpy's pairwise sum of a contiguous row is
    that of the 1-D array, so every mean is bit-identical to ``mean_defined``.
    """
    B = values.shape[0]
    out = np.full(B, np.nan)
    if B == 0:
        return out
    patterns, group = np.unique(is_defined, axis=0, return_inverse=True)
    group = group.ravel()
    for g, pattern in enumerate(patterns):
        if not pattern.any():
            continue
        rows = np.flatnonzero(group == g)
        sel = values[rows] if pattern.all() else values[rows][..., pattern]
        out[rows] = np.mean(np.ascontiguousarray(sel).reshape(len(rows), -1), axis=1)
    return out


def _weighted_counts(source: _RecallOnly, w: np.ndarray) -> np.ndarray:
    """int64 (B, n_seg): ``sum(count * w[img])`` per segment of ``source``.

    Sparse weighted sums (exact integers; no BLAS, whose threads fight forked workers).
    """
    c = _cumsum0(np.take(w, source.img, axis=1) * source.count)
    return np.take(c, source.bounds[1:], axis=1) - np.take(c, source.bounds[:-1], axis=1)


def _curves_and_recalls(plan: _Plan, w: np.ndarray, npos: np.ndarray) -> tuple:
    """Precision (or all-point AP) per curve and final recall per (area, max_dets) of a chunk.

    Returns
    -------
    (values, recall)
        values: max_dets index -> the first output of :func:`_curve_chunk`; recall: (area,
        max_dets index) -> float64 (B, n_thr, n_class), NaN where the class has no positives.
    """
    n_class, n_area, n_thr = plan.n_class, plan.n_area, plan.n_thr
    B = w.shape[0]
    npos_at = npos.reshape(B, n_class, n_area).transpose(0, 2, 1).astype(np.float64)  # (B, A, K)
    values, recall = {}, {}
    for mi, cur in plan.curves.items():
        values[mi], n_tp = _curve_chunk(plan, cur, w, npos)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = n_tp / npos_at[:, :, None, :]
        r = np.where(npos_at[:, :, None, :] > 0, r, np.nan)
        for a in range(n_area):
            recall[a, mi] = r[:, a]  # (B, T, K)
    for (a, mi), ro in plan.recall_only.items():
        n_tp = np.zeros((B, n_thr * n_class), dtype=np.int64)
        if len(ro.img):
            n_tp = _weighted_counts(ro, w)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = n_tp.reshape(B, n_thr, n_class) / npos_at[:, a][:, None, :]
        recall[a, mi] = np.where(npos_at[:, a][:, None, :] > 0, r, np.nan)
    return values, recall


def _ap_of_values(protocol: Protocol, values: dict) -> dict:
    """AP per (area, threshold, class) where it is not a mean of sampled points (11-point, all-point)."""
    ap = {}
    for mi, v in values.items():
        if protocol.ap_method == "11_point":
            ap[mi] = np.cumsum(v / 11.0, axis=-1)[..., -1]  # the devkit's ap = ap + p / 11
        elif protocol.ap_method == "all_point":
            ap[mi] = v
    return ap


def _per_class_ap(plan: _Plan, values: dict, ap: dict, is_defined: np.ndarray) -> np.ndarray:
    """float64 (B, n_class): class_ap, area 0 at the largest max_dets (NaN: no positives)."""
    top = max(values)
    B = is_defined.shape[0]
    if plan.protocol.ap_method == "101_point":
        # class_ap: the mean over (threshold, recall point) of area 0 at the largest max_dets.
        per_class = np.mean(
            np.ascontiguousarray(values[top][:, 0].transpose(0, 2, 1, 3)).reshape(B, plan.n_class, -1),
            axis=-1,
        )
    else:
        per_class = np.mean(np.ascontiguousarray(ap[top][:, 0].transpose(0, 2, 1)), axis=-1)
    per_class[~is_defined[:, :, 0]] = np.nan
    return per_class


def _chunk_metrics(plan: _Plan, w: np.ndarray) -> tuple:
    """Headline metrics and per-class AP of each resample of a chunk (w: int64 (B, n_img))."""
    p = plan.protocol
    B = w.shape[0]
    npos = np.zeros((B, plan.n_class * plan.n_area), dtype=np.int64)
    if len(plan.positives.img):
        npos = _weighted_counts(plan.positives, w)
    is_defined = npos.reshape(B, plan.n_class, plan.n_area) > 0
    values, recall = _curves_and_recalls(plan, w, npos)
    ap = _ap_of_values(p, values)
    per_class = _per_class_ap(plan, values, ap, is_defined)
    if p.is_single_threshold:
        return ("mAP",), _mean_defined_rows(per_class, ~np.isnan(per_class))[:, None], per_class
    metrics = np.full((B, len(plan.terms)), np.nan)
    for j, term in enumerate(plan.terms):
        where = summary_indices(p, iou_threshold=term.iou_threshold, area=term.area, max_det=term.max_det)
        if where is None:
            continue
        t, a, mi = where
        if term.kind == "AR":
            x = recall[a, mi]  # (B, T, K)
        elif p.ap_method != "all_point":
            x = values[mi][:, a][:, t].transpose(0, 1, 3, 2)  # (B, T', R, K)
        else:
            x = ap[mi][:, a][:, t]  # (B, T', K)
        metrics[:, j] = _mean_defined_rows(x, is_defined[:, :, a])
    return tuple(t.name for t in plan.terms), metrics, per_class


@dataclass(frozen=True, eq=False)
class _ResampleJob:
    """What every worker of one :func:`resample_metrics` shares (inherited by forked workers)."""

    plan: _Plan
    weights: np.ndarray  # int64 (n_resamples, n_img)
    chunk_size: int


def _run_chunks(job: _ResampleJob, lo: int, hi: int) -> tuple:
    """Metrics and per-class AP of resamples [lo, hi), chunk by chunk."""
    names, metrics, per_class = (), [], []
    for start in range(lo, hi, job.chunk_size):
        stop = min(start + job.chunk_size, hi)
        names, m, c = _chunk_metrics(job.plan, np.ascontiguousarray(job.weights[start:stop]))
        metrics.append(m)
        per_class.append(c)
    return names, np.concatenate(metrics), np.concatenate(per_class)


def _resample_part(job: _ResampleJob, lo: int, hi: int, conn: Connection) -> None:
    """Worker target: score resamples [lo, hi) and send back ``("part", ...)`` or ``("error", e)``."""
    try:
        outcome: tuple = ("part", _run_chunks(job, lo, hi))
    except Exception as error:  # re-raised by the parent
        outcome = ("error", error)
    conn.send(outcome)
    conn.close()


def _run_in_processes(job: _ResampleJob, parts: list) -> list:
    """One forked process per part of the resamples; their outcomes in order (first error raised)."""
    context = mp.get_context("fork")
    workers, receivers = [], []
    try:
        for lo, hi in parts:
            receiver, sender = context.Pipe(duplex=False)
            worker = context.Process(target=_resample_part, args=(job, lo, hi, sender), daemon=True)
            worker.start()
            sender.close()  # the child holds its own end: EOF here if it dies without sending
            workers.append(worker)
            receivers.append(receiver)
        outcomes = []
        for worker, receiver in zip(workers, receivers):
            try:
                outcomes.append(receiver.recv())
            except EOFError:
                worker.join()
                raise DetevalError(
                    f"a bootstrap worker process (pid {worker.pid}) ended without a "
                    f"result (exit code {worker.exitcode}); expected the scores of its "
                    f"resamples; run with workers=1 to see the failure in-process"
                ) from None
        for worker in workers:
            worker.join()
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
                worker.join()
        for receiver in receivers:
            receiver.close()
    for kind, value in outcomes:
        if kind == "error":
            raise value
    return [value for _, value in outcomes]


def _default_chunk(plan: _Plan) -> int:
    return int(max(1, min(256, _CELLS_PER_CHUNK // plan.size)))


def resample_metrics(
    table: MatchTable,
    gt: GroundTruth,
    protocol: Protocol | str,
    weights: np.ndarray,
    *,
    workers: int = 1,
    chunk_size: int | None = None,
    max_weight: np.ndarray | None = None,
) -> ResampledMetrics:
    """Score a matched detector on every weighted resample of the images.

    Parameters
    ----------
    table : MatchTable
        :func:`~deteval.evaluate.match` of the detector on ``gt`` under ``protocol``.
    gt : GroundTruth
    protocol : Protocol or str
    weights : int (n_resamples, n_images)
        Image multiplicities (see :func:`bootstrap_weights`); non-negative integers.
    workers : int
        Split the resamples over this many processes (fork); identical numbers.
    chunk_size : int, optional
        Resamples accumulated together (memory vs speed); identical numbers for any value.
    max_weight : int (n_images,), optional
        Per-image upper bound of the weights used to lay out tied detections (computed from
        ``weights`` by default); any bound gives identical numbers.

    Returns
    -------
    ResampledMetrics

    Raises
    ------
    InputError
        If the weights do not fit the ground truth or are not non-negative integers.

    Examples
    --------
    >>> import deteval
    >>> gt = deteval.load_ground_truth({"images": [{"id": 1}, {"id": 2}],
    ...     "categories": [{"id": 1, "name": "cat"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                      "area": 81, "iscrowd": 0}]})
    >>> dt = deteval.load_detections([{"image_id": 2, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                                "score": 0.9}], gt)
    >>> p = deteval.get_protocol("voc2010")
    >>> r = resample_metrics(match(gt, dt, p), gt, p, np.array([[1, 1], [2, 0], [0, 2]]))
    >>> r.metrics[:, 0].tolist()  # image 2 alone has no ground truth: mAP undefined
    [0.0, 0.0, nan]
    """
    protocol = resolve_protocol(protocol)
    _check_supported(protocol)
    weights = np.asarray(weights)
    if weights.ndim != 2 or weights.shape[1] != gt.n_images:
        raise InputError(
            f"resample weights: expected an array (n_resamples, {gt.n_images} images), "
            f"found shape {weights.shape}"
        )
    if weights.size and (not np.issubdtype(weights.dtype, np.integer) or weights.min() < 0):
        raise InputError(
            "resample weights: expected non-negative integer image counts, found "
            f"dtype {weights.dtype} with minimum {weights.min()}"
        )
    _check_table(table, gt, "table")
    weights = weights.astype(np.int64)
    if max_weight is None:
        max_weight = weights.max(axis=0) if weights.size else np.zeros(gt.n_images, np.int64)
    plan = _plan(table, gt, protocol, np.asarray(max_weight, dtype=np.int64))
    n_b = weights.shape[0]
    if n_b == 0:
        names, _, _ = _chunk_metrics(plan, np.ones((1, gt.n_images), np.int64))
        return ResampledMetrics(names, np.zeros((0, len(names))), np.zeros((0, gt.n_classes)))
    job = _ResampleJob(
        plan=plan, weights=weights, chunk_size=int(chunk_size) if chunk_size else _default_chunk(plan)
    )
    if workers and workers > 1 and n_b > 1 and "fork" in mp.get_all_start_methods():
        bounds = np.linspace(0, n_b, min(workers, n_b) + 1).astype(int)
        parts = _run_in_processes(job, list(zip(bounds[:-1].tolist(), bounds[1:].tolist())))
        names = parts[0][0]
        return ResampledMetrics(
            names, np.concatenate([m for _, m, _ in parts]), np.concatenate([c for _, _, c in parts])
        )
    names, metrics, per_class = _run_chunks(job, 0, n_b)
    return ResampledMetrics(names, metrics, per_class)


def _check_table(table: MatchTable, gt: GroundTruth, name: str) -> None:
    if table.n_positive.shape[0] != gt.n_classes or (
        len(table.det_image) and int(table.det_image.max()) >= gt.n_images
    ):
        raise InputError(
            f"{name}: matched against a different ground truth (expected "
            f"{gt.n_classes} classes and {gt.n_images} images, found a table of "
            f"{table.n_positive.shape[0]} classes)"
        )


# --------------------------------------------------------------------------------------------
# Intervals
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A percentile interval over the resamples where the value is defined.

    Attributes
    ----------
    lo, hi : float or None
        None when no resample defines the value.
    n_undefined : int
        Resamples where the value was undefined (e.g. a class without ground truth drawn).
    """

    lo: float | None
    hi: float | None
    n_undefined: int = 0

    def as_list(self) -> list | None:
        """``[lo, hi]`` or None (the JSON form)."""
        return None if self.lo is None else [self.lo, self.hi]

    def to_dict(self) -> dict:
        """``{"ci": [lo, hi] or None, "n_undefined": int}``."""
        return {"ci": self.as_list(), "n_undefined": self.n_undefined}


def percentile_interval(samples: np.ndarray, *, ci: float = 0.95) -> Interval:
    """Percentile interval ``[q(a/2), q(1 - a/2)]`` of the defined samples (``a = 1 - ci``).

    Examples
    --------
    >>> percentile_interval(np.array([1.0, 2.0, np.nan, 3.0]), ci=0.5)
    Interval(lo=1.5, hi=2.5, n_undefined=1)
    """
    _check_settings(0, 0, ci, "percentile")
    samples = np.asarray(samples, dtype=np.float64)
    defined = samples[~np.isnan(samples)]
    n_undefined = int(samples.size - defined.size)
    if defined.size == 0:
        return Interval(None, None, n_undefined)
    alpha = 1.0 - ci
    lo, hi = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return Interval(float(lo), float(hi), n_undefined)


# --------------------------------------------------------------------------------------------
# Bootstrap of detectors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DetectorBootstrap:
    """Point estimates and intervals of one detector under one protocol.

    Attributes
    ----------
    name : str
    result : EvalResult
        The point estimate (all images once).
    samples : ResampledMetrics
    metrics_ci : dict
        Metric name -> :class:`Interval` (empty when ``n == 0``).
    per_class_ci : tuple of Interval
        In the order of ``result.per_class`` (empty when ``n == 0``).
    """

    name: str
    result: EvalResult
    samples: ResampledMetrics
    metrics_ci: dict
    per_class_ci: tuple

    @property
    def protocol(self) -> str:
        """Name of the protocol the result was scored under."""
        return self.result.protocol.name

    def to_dict(self) -> dict:
        """``result.to_dict()`` plus ``metrics_ci`` and each class's ``AP_ci`` (the JSON contract)."""
        return {"detector": self.name, **result_ci_dict(self.result.to_dict(), self)}


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Intervals of every resampled detector and the weights of the resamples (n, n_images)."""

    settings: BootstrapSettings
    results: tuple
    weights: np.ndarray = field(repr=False)

    def get(self, name: str, protocol: str | None = None) -> DetectorBootstrap:
        """The bootstrap of detector ``name`` (under ``protocol`` when several were resampled)."""
        for r in self.results:
            if r.name == name and (protocol is None or r.protocol == protocol):
                return r
        raise ConfigError(
            f"bootstrap: no detector {name!r}"
            + (f" under protocol {protocol!r}" if protocol else "")
            + f"; found {[(r.name, r.protocol) for r in self.results]}"
        )

    def to_dict(self) -> dict:
        """``{"bootstrap": settings, "results": [...]}`` (the JSON document's pieces)."""
        return {
            "bootstrap": bootstrap_settings_dict(self.settings),
            "results": [r.to_dict() for r in self.results],
        }


def _named_results(results: Any) -> list:
    if isinstance(results, EvalResult):
        return [("detector", results)]
    if isinstance(results, Mapping):
        items = list(results.items())
    elif isinstance(results, Sequence) and not isinstance(results, (str, bytes)):
        items = [(f"detector{i + 1}", r) for i, r in enumerate(results)]
    else:
        raise ConfigError(
            f"bootstrap: expected an EvalResult, a mapping name -> EvalResult or a list "
            f"of them, found {type(results).__name__}"
        )
    for name, r in items:
        if not isinstance(r, EvalResult):
            raise ConfigError(f"bootstrap: result {name!r} must be an EvalResult, found {type(r).__name__}")
    if not items:
        raise ConfigError("bootstrap: no results given")
    return items


def _check_same_gt(result: EvalResult, gt: GroundTruth, name: str) -> None:
    same = (
        result.image_ids is not None
        and np.array_equal(result.image_ids, gt.image_id)
        and tuple(result.category_ids) == tuple(int(c) for c in gt.category_id)
    )
    if same:
        expected = _positives_per_image(gt, result.protocol).sum(axis=0)
        same = np.array_equal(expected, result.table.n_positive)
    if not same:
        raise InputError(
            f"bootstrap: result {name!r} ({result.protocol.name}) was not scored on this "
            f"ground truth (expected {gt.n_images} images, {gt.n_classes} categories "
            f"and the same counted objects; found "
            f"{0 if result.image_ids is None else len(result.image_ids)} images, "
            f"{len(result.category_ids)} categories)"
        )


def bootstrap(
    gt: GroundTruth,
    results: Any,
    *,
    n: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    method: str = "percentile",
    workers: int = 1,
    chunk_size: int | None = None,
) -> BootstrapResult:
    """Percentile intervals of every headline metric and per-class AP, resampling images.

    Parameters
    ----------
    gt : GroundTruth
        The ground truth every result was scored on.
    results : EvalResult, mapping name -> EvalResult, or list of EvalResult
        Point results (any protocols). All are resampled with the same image multisets
        (paired), so their intervals and differences are comparable.
    n : int
        Number of resamples; 0 gives the point estimates without intervals.
    seed : int
    ci : float
        Confidence level in (0, 1).
    method : {"percentile"}
    workers : int
        Processes over which resamples are split (identical numbers for any value).
    chunk_size : int, optional
        Resamples accumulated at once (identical numbers for any value).

    Returns
    -------
    BootstrapResult

    Raises
    ------
    ConfigError
        Invalid ``n``, ``seed``, ``ci`` or ``method``.
    InputError
        A result not scored on ``gt``.

    Examples
    --------
    >>> import deteval
    >>> gt = deteval.load_ground_truth({"images": [{"id": i} for i in (1, 2, 3)],
    ...     "categories": [{"id": 1, "name": "cat"}],
    ...     "annotations": [{"id": i, "image_id": i, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                      "area": 81, "iscrowd": 0} for i in (1, 2, 3)]})
    >>> dt = deteval.load_detections([{"image_id": i, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                                "score": 0.5} for i in (1, 2)], gt)
    >>> boot = bootstrap(gt, {"A": deteval.evaluate(gt, dt, "voc2010")}, n=200, seed=0)
    >>> boot.results[0].metrics_ci["mAP"].as_list()
    [0.0, 1.0]
    """
    _check_settings(n, seed, ci, method)
    settings = BootstrapSettings(n=int(n), seed=int(seed), ci=float(ci), method=method)
    items = _named_results(results)
    for name, r in items:
        _check_same_gt(r, gt, name)
    weights = bootstrap_weights(gt.n_images, n=settings.n, seed=settings.seed)
    max_weight = weights.max(axis=0) if weights.size else np.zeros(gt.n_images, np.int64)
    out = []
    for name, r in items:
        samples = resample_metrics(
            r.table, gt, r.protocol, weights, workers=workers, chunk_size=chunk_size, max_weight=max_weight
        )
        if settings.n:
            metrics_ci = {
                k: percentile_interval(samples.metrics[:, j], ci=settings.ci)
                for j, k in enumerate(samples.metric_names)
            }
            per_class_ci = tuple(
                percentile_interval(samples.per_class_ap[:, k], ci=settings.ci) for k in range(gt.n_classes)
            )
        else:
            metrics_ci, per_class_ci = {}, ()
        out.append(
            DetectorBootstrap(
                name=name, result=r, samples=samples, metrics_ci=metrics_ci, per_class_ci=per_class_ci
            )
        )
    return BootstrapResult(settings=settings, results=tuple(out), weights=weights)


# --------------------------------------------------------------------------------------------
# Paired comparison
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """B - A on one metric under one protocol, paired over the same resamples.

    Attributes
    ----------
    a, b : str
        Detector names.
    protocol : str
    metric : str
    difference : float or None
        Point difference ``metric(B) - metric(A)`` (None if undefined).
    ci : Interval
        Percentile interval of the bootstrap differences.
    p_value : float or None
        Two-sided paired-bootstrap p-value (see :func:`paired_difference`); None when
        ``n == 0`` or undefined.
    level : float
        The confidence level; the verdict tests at ``1 - level``.
    n : int
        Resamples where the difference is defined.
    """

    a: str
    b: str
    protocol: str
    metric: str
    difference: float | None
    ci: Interval
    p_value: float | None
    level: float = 0.95
    n: int = 0

    @property
    def verdict(self) -> str:
        """The plain-language line of :func:`verdict`."""
        return verdict(self)

    def to_dict(self) -> dict:
        """One entry of the JSON ``comparisons`` list."""
        return {
            "a": self.a,
            "b": self.b,
            "protocol": self.protocol,
            "metric": self.metric,
            "difference": self.difference,
            "ci": self.ci.as_list(),
            "p_value": self.p_value,
        }


def paired_difference(
    samples_a: np.ndarray, samples_b: np.ndarray, point_a: float, point_b: float, *, ci: float = 0.95
) -> tuple:
    """Interval and two-sided p-value of ``B - A`` from paired bootstrap samples.

    Returns
    -------
    (difference, Interval, p_value, n_defined)
        ``p = (1 + #{|d_b - d| >= |d|}) / (1 + n)``: the bootstrap differences re-centred on 0
        (the null hypothesis) and compared with the observed difference ``d``. Identical
        detectors give ``d = 0`` and ``p = 1`` exactly.

    Examples
    --------
    >>> d, iv, p, n = paired_difference(np.array([.5, .6, .7]), np.array([.5, .6, .7]), .6, .6)
    >>> d, iv.as_list(), p
    (0.0, [0.0, 0.0], 1.0)
    """
    diff = np.asarray(samples_b, dtype=np.float64) - np.asarray(samples_a, dtype=np.float64)
    d = float(point_b) - float(point_a)
    interval = percentile_interval(diff, ci=ci)
    defined = diff[~np.isnan(diff)]
    if d != d:
        return None, interval, None, int(defined.size)
    if defined.size == 0:
        return d, interval, None, 0
    extreme = int(np.count_nonzero(np.abs(defined - d) >= abs(d)))
    return d, interval, (1.0 + extreme) / (1.0 + defined.size), int(defined.size)


def verdict(comparison: Comparison) -> str:
    """One plain line, e.g. ``B - A = +0.012 AP [+0.004, +0.020], p = 0.003: B is better at the 5% level``.

    Examples
    --------
    >>> verdict(Comparison("A", "B", "coco", "AP", 0.012, Interval(0.004, 0.02), 0.003))
    'B - A = +0.012 AP [+0.004, +0.020] (coco), p = 0.003: B is better at the 5% level'
    >>> verdict(Comparison("A", "B", "coco", "AP", 0.0, Interval(-0.01, 0.01), 1.0))
    'B - A = +0.000 AP [-0.010, +0.010] (coco), p = 1: no significant difference at the 5% level'
    """
    c = comparison
    level = f"{(1 - c.level) * 100:g}%"
    if c.difference is None:
        return f"{c.b} - {c.a}: {c.metric} undefined ({c.protocol})"
    head = f"{c.b} - {c.a} = {c.difference:+.3f} {c.metric}"
    if c.ci.lo is not None:
        head += f" [{c.ci.lo:+.3f}, {c.ci.hi:+.3f}]"
    head += f" ({c.protocol})"
    if c.p_value is None:
        return head + ": no resamples, no test"
    p = f"{c.p_value:.3g}"
    if c.p_value < 1 - c.level:
        better = c.b if c.difference > 0 else c.a
        return f"{head}, p = {p}: {better} is better at the {level} level"
    return f"{head}, p = {p}: no significant difference at the {level} level"


@dataclass(frozen=True, eq=False)
class ComparisonResult:
    """The outcome of :func:`compare_detectors`: per-detector intervals and the comparisons."""

    bootstrap: BootstrapResult
    comparisons: tuple

    def verdicts(self) -> list:
        """One :func:`verdict` line per comparison."""
        return [c.verdict for c in self.comparisons]

    def to_dict(self) -> dict:
        """``{"bootstrap", "results", "comparisons"}`` (the JSON document)."""
        return {
            "bootstrap": bootstrap_settings_dict(self.bootstrap.settings),
            "results": [r.to_dict() for r in self.bootstrap.results],
            "comparisons": comparison_dicts(self.comparisons),
        }


def compare_detectors(
    gt: GroundTruth,
    detections: Mapping,
    protocol: Protocol | str = "coco",
    *,
    n: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    method: str = "percentile",
    test: str = "bootstrap",
    metric: str | None = None,
    workers: int = 1,
    chunk_size: int | None = None,
) -> ComparisonResult:
    """Is detector B better than A on this ground truth? Paired bootstrap over images.

    Parameters
    ----------
    gt : GroundTruth
    detections : mapping name -> Detections or MatchTable
        Two or more detectors (insertion order: the first is A; each later one is compared with
        it as B).
    protocol : Protocol or str
    n, seed, ci, method, workers, chunk_size
        As in :func:`bootstrap`.
    test : {"bootstrap"}
        The paired bootstrap (see docs/statistics.md for why not a permutation test).
    metric : str, optional
        Metric compared; default ``"AP"`` for COCO-style protocols, ``"mAP"`` otherwise.

    Returns
    -------
    ComparisonResult

    Raises
    ------
    ConfigError
        Fewer than two detectors, an unknown test or metric, invalid settings.
    InputError
        A MatchTable matched against a different ground truth.
    """
    _check_settings(n, seed, ci, method)
    if test not in _TESTS:
        raise ConfigError(f"compare_detectors: test must be one of {list(_TESTS)}, found {test!r}")
    if not isinstance(detections, Mapping) or len(detections) < 2:
        raise ConfigError(
            f"compare_detectors: expected a mapping of at least two named detectors, "
            f"found {type(detections).__name__} of "
            f"{len(detections) if hasattr(detections, '__len__') else '?'} entries"
        )
    protocol = resolve_protocol(protocol)
    results = {}
    for name, dt in detections.items():
        if isinstance(dt, Detections):
            if len(dt) and (int(dt.image.max()) >= gt.n_images or int(dt.category.max()) >= gt.n_classes):
                raise InputError(
                    f"compare_detectors: detections {name!r} refer to images or categories "
                    f"outside this ground truth ({gt.n_images} images, {gt.n_classes} "
                    f"categories)"
                )
            table = match(gt, dt, protocol)
        elif isinstance(dt, MatchTable):
            _check_table(dt, gt, f"compare_detectors: match table {name!r}")
            table = dt
        else:
            raise ConfigError(
                f"compare_detectors: detector {name!r} must be Detections or a MatchTable, "
                f"found {type(dt).__name__}"
            )
        results[str(name)] = score(table, gt, protocol)
    boot = bootstrap(
        gt, results, n=n, seed=seed, ci=ci, method=method, workers=workers, chunk_size=chunk_size
    )
    metric = metric or ("mAP" if protocol.is_single_threshold else "AP")
    first = boot.results[0]
    if metric not in first.result.metrics:
        raise ConfigError(
            f"compare_detectors: metric {metric!r} is not reported by protocol "
            f"{protocol.name!r}; expected one of {list(first.result.metrics)}"
        )
    comparisons = []
    for other in boot.results[1:]:
        comparisons.append(_compare(first, other, metric, boot.settings))
    return ComparisonResult(bootstrap=boot, comparisons=tuple(comparisons))


def _compare(
    a: DetectorBootstrap, b: DetectorBootstrap, metric: str, settings: BootstrapSettings
) -> Comparison:
    j = a.samples.metric_names.index(metric)
    point_a, point_b = a.result.metrics[metric], b.result.metrics[metric]
    d, interval, p, n_def = paired_difference(
        a.samples.metrics[:, j], b.samples.metrics[:, j], point_a, point_b, ci=settings.ci
    )
    if settings.n == 0:
        interval, p = Interval(None, None, 0), None
    return Comparison(
        a=a.name,
        b=b.name,
        protocol=a.protocol,
        metric=metric,
        difference=d,
        ci=interval,
        p_value=p,
        level=settings.ci,
        n=n_def,
    )


# --------------------------------------------------------------------------------------------
# JSON pieces (the CLI's renderer places them)
# --------------------------------------------------------------------------------------------


def metrics_ci_dict(detector: DetectorBootstrap) -> dict:
    """``{"AP": [lo, hi], ...}`` (None where no resample defines the metric); {} when n == 0."""
    return {k: v.as_list() for k, v in detector.metrics_ci.items()}


def per_class_ci_list(detector: DetectorBootstrap) -> list:
    """``[lo, hi]`` or None per class, in ``per_class`` order; [] when n == 0."""
    return [v.as_list() for v in detector.per_class_ci]


def result_ci_dict(result_dict: dict, detector: DetectorBootstrap) -> dict:
    """A copy of one ``results`` entry with ``metrics_ci`` and each class's ``AP_ci`` placed.

    With ``n == 0`` the entry is returned unchanged (no intervals).
    """
    out = dict(result_dict)
    if not detector.metrics_ci:
        return out
    out["metrics_ci"] = metrics_ci_dict(detector)
    cis = per_class_ci_list(detector)
    out["per_class"] = [{**c, "AP_ci": ci} for c, ci in zip(result_dict.get("per_class", []), cis)]
    return out


def comparison_dicts(comparisons: Sequence) -> list:
    """The document's ``comparisons`` list."""
    return [c.to_dict() for c in comparisons]


def bootstrap_settings_dict(settings: BootstrapSettings) -> dict:
    """The document's ``bootstrap`` object: ``{"n", "seed", "ci", "method"}``."""
    return settings.to_dict()
