"""Weighted re-accumulation of a chunk of resamples: precision, recall, AP and the metrics.

Given a :class:`~deteval.stats.plan._Plan` and the image weights ``w`` (B, n_img) of a chunk
of resamples, every count is an exact integer sum of weights, so with all weights 1 the numbers
are those of :func:`~deteval.evaluate.score`, bit for bit.
"""

from __future__ import annotations

import numpy as np

from deteval import _speedups
from deteval.accumulate import recall_thresholds
from deteval.protocol import Protocol
from deteval.stats.plan import _Curve, _Plan, _RecallOnly
from deteval.summary import summary_indices

#: The compiled kernels (``deteval/_cboot.c``) of :func:`_curve_chunk`, :func:`_thresholds_table`
#: and :func:`_weighted_counts` run through :func:`deteval._speedups.dispatch`; the numbers are the
#: same bit for bit either way (tests/unit/test_kernels.py).


def _cumsum0(values: np.ndarray) -> np.ndarray:
    """Cumulative sums along axis 1 with a leading 0 column: (B, n) -> (B, n + 1), exact for ints."""
    out = np.zeros((values.shape[0], values.shape[1] + 1), dtype=values.dtype)
    np.cumsum(values, axis=1, out=out[:, 1:])
    return out


def _curve_chunk(plan: _Plan, cur: _Curve, w: np.ndarray, npos: np.ndarray) -> tuple:
    """Interpolated precision (or all-point AP) and final TP counts of one curve for a chunk.

    The compiled ``deteval._cboot.curve_row`` when built (it declines all-point AP), else
    :func:`_curve_chunk_numpy`, its twin.
    """
    return _speedups.dispatch("_cboot.curve_row", plan, cur, w, npos)


def _segment_columns(plan: _Plan) -> tuple[int, np.ndarray]:
    """The number of (area, threshold, class) segments, and each segment's column of npos."""
    n_seg = plan.n_area * plan.n_thr * plan.n_class
    seg = np.arange(n_seg)
    return n_seg, (seg % plan.n_class) * plan.n_area + seg // (plan.n_thr * plan.n_class)


def _curve_chunk_kernel(
    plan: _Plan, cur: _Curve, w: np.ndarray, npos: np.ndarray
) -> tuple | _speedups.Decline:
    """:func:`_curve_chunk` by the compiled kernel, resample by resample; all-point AP declined."""
    p = plan.protocol
    if p.ap_method == "all_point":
        return _speedups.Decline("ap_method all_point")
    rec_thr = recall_thresholds(p)
    n_r = len(rec_thr)
    flat = cur.flat if n_r else None
    if flat is None:
        return _speedups.Decline("no recall thresholds or no flat plan")
    n_seg, seg_col = _segment_columns(plan)
    B = w.shape[0]
    n_tp = np.empty((B, n_seg), dtype=np.int64)
    table, start = _thresholds_table(npos, rec_thr)
    q = np.empty((B, n_seg * n_r))
    iwork, fwork = np.empty(flat.iwork + n_r + 1, dtype=np.int64), np.empty(flat.fwork)
    devkit = p.ap_method != "101_point"
    eps = float(np.spacing(1) if not devkit else np.finfo(np.float64).eps)
    kernel = _speedups.module_of("_cboot.curve_row")
    for b in range(B):
        tab = plan.layout.table(w[b])
        st = np.ascontiguousarray(start[b, seg_col], dtype=np.int64)
        kernel.curve_row(tab, *flat.arrays, table, st, q[b], n_tp[b], iwork, fwork, n_r, devkit, eps)  # type: ignore[union-attr]
    shape = (B, plan.n_area, plan.n_thr, plan.n_class)
    return q.reshape(*shape, n_r), n_tp.reshape(shape)


def _curve_chunk_numpy(plan: _Plan, cur: _Curve, w: np.ndarray, npos: np.ndarray) -> tuple:
    """Interpolated precision (or all-point AP) and final TP counts of one curve for a chunk.

    The resamples are scored one at a time on 1-D arrays (:func:`_curve_row`): numpy's
    cumulative sums and scans run along one contiguous row at their best speed, and a row's
    arrays stay in cache.

    Parameters
    ----------
    w : int64 (B, n_img)
    npos : int64 (B, n_class * n_area)

    Returns
    -------
    (values, n_tp)
        values: float64 (B, n_area, n_thr, n_class, n_r) precision at the recall thresholds
        (0 where no true positive reaches them, NaN nowhere), or (B, n_area, n_thr, n_class)
        all-point AP; n_tp: int64 (B, n_area, n_thr, n_class) weighted true positives.
    """
    p = plan.protocol
    n_class, n_area, n_thr = plan.n_class, plan.n_area, plan.n_thr
    n_seg, seg_col = _segment_columns(plan)
    seg = np.arange(n_seg)
    B = w.shape[0]
    n_tp = np.empty((B, n_seg), dtype=np.int64)
    if p.ap_method == "all_point":
        n_real = cur.n_real
        tp_all, pr_all = np.empty((n_real, B)), np.empty((n_real, B))
        for b in range(B):
            tab = plan.layout.table(w[b])
            tp, pr = _tp_and_precision(p, cur, tab, np.empty(len(cur.items)))
            n_tp[b] = np.take(tp, cur.virtual)
            real = ~cur.is_virtual
            tp_all[:, b] = tp[real]
            pr_all[:, b] = np.where(cur.items.take(tab)[real] == 0, 0.0, pr[real])
        real_bounds = np.append(0, np.cumsum(cur.seg_len - 1))
        item_seg = np.repeat(seg, cur.seg_len - 1)
        ap = _all_point_w(
            tp_all,
            pr_all,
            item_seg,
            real_bounds,
            npos[:, seg_col].astype(np.float64),
            n_area * n_thr,
            n_class,
        )
        return ap.reshape(B, n_area, n_thr, n_class), n_tp.reshape(B, n_area, n_thr, n_class)
    rec_thr = recall_thresholds(p)
    n_r = len(rec_thr)
    table, start = _thresholds_table(npos, rec_thr)
    q = np.empty((B, n_seg * n_r))
    for b in range(B):
        n_tp[b] = _curve_row(p, cur, plan.layout.table(w[b]), table, start[b, seg_col], q[b])
    # Classes without positives are left at 0: every reader masks them (is_defined).
    return q.reshape(B, n_area, n_thr, n_class, n_r), n_tp.reshape(B, n_area, n_thr, n_class)


def _tp_and_precision(p: Protocol, cur: _Curve, tab: np.ndarray, pr: np.ndarray) -> tuple:
    """Weighted TP count and precision at every item of one resample (``pr`` receives precision).

    The TP count is a cumulative sum over the items less its value before the segment; the
    entries counted (TP + FP) from the class start through an item are a cumulative sum over
    the area's counted entries read at the item, less the corrections of its lane read the
    same way, less their values at the class start (one constant per segment). ``tp + fp ==
    ranked`` exactly (integers), so the precision is the reference formula's float.
    """
    tp = _cumsum0_row(cur.items.take(tab))
    ranked = np.empty(len(cur.items), dtype=np.int64)
    seg_base = np.empty(len(cur.seg_len), dtype=np.int64)
    n_seg_area = len(cur.seg_len) // len(cur.area_items)
    for a, (lo, hi) in enumerate(cur.area_items):
        c = _cumsum0_row(cur.counted[a].take(tab))
        np.take(c, cur.item_counted[lo:hi], out=ranked[lo:hi])
        segs = slice(a * n_seg_area, (a + 1) * n_seg_area)
        np.take(c, cur.seg_counted_start[segs], out=seg_base[segs])
    if len(cur.corr):
        cc = _cumsum0_row(cur.corr.take(tab) * cur.corr_sign)
        ranked -= np.take(cc, cur.item_fix_hi)
        seg_base -= np.take(cc, cur.seg_fix_lo)
    ranked -= np.repeat(seg_base, cur.seg_len)
    tp_item = tp[1:] - np.repeat(np.take(tp, cur.seg_head), cur.seg_len)
    if p.ap_method == "101_point":
        np.add(ranked, np.spacing(1), out=pr)  # pycocotools: tp / (fp + tp + eps)
    else:
        np.maximum(ranked, np.finfo(np.float64).eps, out=pr)  # devkit_precision: tp / max(tp + fp, eps)
    np.divide(tp_item, pr, out=pr)
    return tp_item, pr


def _cumsum0_row(values: np.ndarray) -> np.ndarray:
    """Cumulative sum with a leading 0: (n,) -> (n + 1,), exact for ints."""
    out = np.empty(len(values) + 1, dtype=values.dtype)
    out[0] = 0
    np.cumsum(values, out=out[1:])
    return out


def _curve_row(
    p: Protocol,
    cur: _Curve,
    tab: np.ndarray,
    table: np.ndarray,
    start: np.ndarray,
    out: np.ndarray,
) -> np.ndarray:
    """Precision at the recall thresholds of one resample into ``out`` (n_seg * n_r,); TP per segment.

    pycocotools reads, for each threshold ``r``, the suffix maximum of precision from the first
    entry whose recall ``tp / npos`` reaches ``r``: that entry is a true positive (the first one
    for ``r = 0``), so the envelope is a suffix maximum over the true-positive items of each
    segment, read at the first item with ``k > r``, ``k = #{r : thr_r <= tp / npos}`` (the
    same float division: ``j / npos`` is monotone in ``j``; ``k`` is a lookup in ``table``,
    see :func:`_thresholds_table`). The virtual item closing each segment has precision 0 and
    reaches every threshold (``k = n_r``): with the key ``segment * n_r + k`` (non-decreasing
    over the items), the first item reaching the cell ``segment * n_r + r`` of the (segment,
    threshold) table is the number of items whose key is ``<=`` that cell, one ``bincount``
    and one cumulative sum, the unreached thresholds reading a virtual item's 0.

    The envelope is one forward ``maximum.accumulate`` over complex keys ``-segment + 1j *
    precision`` laid out backwards: numpy orders complex numbers lexicographically, so the scan
    restarts at each segment and the imaginary parts are the exact maxima (no arithmetic on
    the values).

    Everything per item is done block by block (whole segments of one area, see
    ``_Curve.blocks``): every cumulative quantity restarts at a segment, so a block is
    self-contained, and its arrays stay in cache. In each block only the items that weigh
    something in this resample are kept (about half of them: images not drawn, unused copies
    of tied detections); the numbers are those of all items (see the comment in the loop).
    """
    n_r = len(out) // len(cur.seg_len)
    c_area = [_cumsum0_row(s.take(tab)) for s in cur.counted]
    cc = _cumsum0_row(cur.corr.take(tab) * cur.corr_sign) if len(cur.corr) else None
    n_tp = np.empty(len(cur.seg_len), dtype=np.int64)
    eps = np.spacing(1) if p.ap_method == "101_point" else np.finfo(np.float64).eps
    for a, s0, s1, lo, hi in cur.blocks:
        # The items weighing 0 in this resample (images not drawn, unused copies of ties) are
        # dropped: each repeats its predecessor's TP count with a larger (or equal) count of
        # entries, so its precision is dominated and it reaches no new threshold. The virtual
        # items stay (each segment keeps its last item).
        weight = np.take(tab, cur.items.key[lo:hi])
        live = weight != 0
        live[cur.virtual[s0:s1] - lo] = True
        keep = np.flatnonzero(live)
        heads = np.searchsorted(keep, cur.seg_head[s0:s1] - lo)
        seg_len = np.diff(heads, append=len(keep))
        virtual = heads + seg_len - 1
        tp = _cumsum0_row(np.take(weight, keep))
        tp_item = tp[1:] - np.repeat(np.take(tp, heads), seg_len)
        ranked = np.take(c_area[a], np.take(cur.item_counted[lo:hi], keep))
        seg_base = np.take(c_area[a], cur.seg_counted_start[s0:s1])
        if cc is not None:
            ranked -= np.take(cc, np.take(cur.item_fix_hi[lo:hi], keep))
            seg_base -= np.take(cc, cur.seg_fix_lo[s0:s1])
        ranked -= np.repeat(seg_base, seg_len)
        z = np.empty(len(keep), dtype=np.complex128)
        z.real = np.repeat(np.arange(s0 - s1 + 1, 1, dtype=np.float64), seg_len[::-1])  # -segment
        pr = z.imag[::-1]
        if p.ap_method == "101_point":
            np.add(ranked, eps, out=pr)  # pycocotools: tp / (fp + tp + eps)
        else:
            np.maximum(ranked, eps, out=pr)  # devkit_precision: tp / max(tp + fp, eps)
        np.divide(tp_item, pr, out=pr)
        pr[virtual] = 0.0
        np.maximum.accumulate(z, out=z)  # pr now holds the envelope (suffix maxima)
        key = np.repeat(start[s0:s1], seg_len)
        key += tp_item
        key = np.take(table, key)
        key[virtual] = n_r
        key += np.repeat(np.arange(0, (s1 - s0) * n_r, n_r), seg_len)  # segment * n_r in the block
        cells = out[s0 * n_r : s1 * n_r]
        first = np.cumsum(np.bincount(key, minlength=len(cells) + 1)[: len(cells)])
        np.take(np.ascontiguousarray(pr), first, out=cells, mode="clip")
        n_tp[s0:s1] = np.take(tp_item, virtual)
    return n_tp


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
        so an item's count is a lookup.

    Notes
    -----
    Built from each threshold's first count ``b_r = min{j >= 1 : thr_r <= j / n}``: ``j / n``
    is monotone in ``j`` and within one rounding of the exact quotient, so ``b_r`` is one of
    the four counts from ``ceil(thr_r * n) - 2``, each tested with the reference's float
    division. The table is then a cumulative count of the ``b_r`` of each column (a column
    has ``n + 2`` slots, the last one counting the thresholds no ``j`` reaches). The compiled
    ``deteval._cboot.thresholds_table`` does the same when it is built.
    """
    return _speedups.dispatch("_cboot.thresholds_table", npos, rec_thr)


def _thresholds_table_kernel(npos: np.ndarray, rec_thr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_thresholds_table` by the compiled kernel (the same float operations)."""
    n = npos.ravel()
    sizes = n + 2
    start = np.cumsum(sizes) - sizes
    table = np.empty(int(sizes.sum()), dtype=np.int64)
    _speedups.module_of("_cboot.thresholds_table").thresholds_table(  # type: ignore[union-attr]
        np.ascontiguousarray(n, dtype=np.int64), np.ascontiguousarray(rec_thr, dtype=np.float64), table
    )
    return table, start.reshape(npos.shape)


def _thresholds_table_numpy(npos: np.ndarray, rec_thr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The numpy twin of :func:`_thresholds_table`."""
    n = npos.ravel()
    sizes = n + 2
    start = np.cumsum(sizes) - sizes
    n_col, n_r = len(n), len(rec_thr)
    nf = n.astype(np.float64)[:, None]
    first = np.maximum(np.ceil(rec_thr[None, :] * nf) - 2, 0).astype(np.int64)
    reach = first.copy()
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 where npos == 0: reaches nothing
        for d in range(3):
            reach += (first + d) / nf < rec_thr  # NaN < thr is False: b stays at 0 -> 1 below
    np.clip(reach, 1, n[:, None] + 1, out=reach)
    reach += start[:, None]
    hist = np.bincount(reach.ravel(), minlength=int(sizes.sum()))
    table = np.cumsum(hist)
    table -= np.repeat(np.arange(n_col, dtype=np.int64) * n_r, sizes)
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
    if is_defined.all():  # the common case: one contiguous row per resample, no grouping
        return np.mean(np.ascontiguousarray(values).reshape(B, -1), axis=1)
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

    Sparse weighted sums (exact integers; no BLAS, whose threads fight forked workers). The
    compiled ``deteval._cboot.weighted_counts`` gives the same integers when it is built.
    """
    return _speedups.dispatch("_cboot.weighted_counts", source, w)


def _weighted_counts_kernel(source: _RecallOnly, w: np.ndarray) -> np.ndarray | _speedups.Decline:
    """:func:`_weighted_counts` by the compiled kernel; no images is declined."""
    if w.shape[1] == 0:
        return _speedups.Decline("no images")
    B, n_img = w.shape
    out = np.empty((B, len(source.bounds) - 1), dtype=np.int64)
    _speedups.module_of("_cboot.weighted_counts").weighted_counts(  # type: ignore[union-attr]
        np.ascontiguousarray(w, dtype=np.int64).ravel(),
        n_img,
        np.ascontiguousarray(source.img, dtype=np.int64),
        np.ascontiguousarray(source.count, dtype=np.int64),
        np.ascontiguousarray(source.bounds, dtype=np.int64),
        out.reshape(-1),
    )
    return out


def _weighted_counts_numpy(source: _RecallOnly, w: np.ndarray) -> np.ndarray:
    """The numpy twin of :func:`_weighted_counts` (exact integer sums)."""
    c = _cumsum0(np.take(w, source.img, axis=1) * source.count)
    return np.take(c, source.bounds[1:], axis=1) - np.take(c, source.bounds[:-1], axis=1)


_speedups.register(
    "_cboot.curve_row",
    "deteval._cboot",
    _curve_chunk_kernel,
    _curve_chunk_numpy,
    declines=("ap_method all_point", "no recall thresholds or no flat plan"),
)
_speedups.register(
    "_cboot.thresholds_table", "deteval._cboot", _thresholds_table_kernel, _thresholds_table_numpy
)
_speedups.register(
    "_cboot.weighted_counts",
    "deteval._cboot",
    _weighted_counts_kernel,
    _weighted_counts_numpy,
    declines=("no images",),
)


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
