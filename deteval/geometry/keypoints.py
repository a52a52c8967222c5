"""Object keypoint similarity (OKS), pycocotools' ``COCOeval.computeOks`` bit for bit.

OKS plays the part of IoU for ``iou_type="keypoints"``: for a ground truth g with labelled
keypoints (v > 0) and a detection d,

    OKS = mean over labelled i of exp(-d_i² / (2 * s * (2 * sigma_i)²)),   s = area(g) + eps

where d_i is the distance between d's and g's i-th keypoint (the detection's own visibility or
score is not read). A ground truth with no labelled keypoint uses every keypoint, each at its
distance *outside* the box doubled around g's bbox (x - w .. x + 2w, y - h .. y + 2h), 0 inside.

Pairs are computed all at once. pycocotools sums ``np.exp(-e)`` of each pair with ``np.sum``
over the labelled keypoints only, and numpy's sum of eight or more values is pairwise (not left
to right): so pairs are grouped by their number of labelled keypoints and each group's values
packed into contiguous rows in keypoint order, which ``np.sum(axis=1)`` adds exactly as
``np.sum`` adds one pair's vector. Every other operation is pycocotools' in its order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from deteval import _speedups

__all__ = ["COCO_KEYPOINT_SIGMAS", "OKS_PAIRS_PER_THREAD", "keypoint_sigmas", "pair_oks"]

#: :func:`pair_oks` (compiled path) under ``workers="auto"``: candidate pairs one more thread
#: needs (:func:`deteval._parallel.kernel_threads`).
OKS_PAIRS_PER_THREAD = 20_000

#: pycocotools' ``Params.kpt_oks_sigmas`` for COCO's 17 person keypoints (nose, eyes, ears,
#: shoulders, elbows, wrists, hips, knees, ankles), computed as it does: ``array([...]) / 10.0``.
COCO_KEYPOINT_SIGMAS = (
    np.array(
        [0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89]
    )
    / 10.0
)
COCO_KEYPOINT_SIGMAS.flags.writeable = False


def keypoint_sigmas(sigmas: tuple | None) -> np.ndarray:
    """The protocol's ``keypoint_sigmas`` as an array (None: :data:`COCO_KEYPOINT_SIGMAS`).

    >>> len(keypoint_sigmas(None)), keypoint_sigmas((0.5, 1.0)).tolist()
    (17, [0.5, 1.0])
    """
    return COCO_KEYPOINT_SIGMAS if sigmas is None else np.asarray(sigmas, dtype=np.float64)


def pair_oks(
    gt_keypoints: np.ndarray,
    gt_box: np.ndarray,
    gt_area: np.ndarray,
    det_keypoints: np.ndarray,
    *,
    sigmas: np.ndarray,
    gt_rows: np.ndarray | None = None,
    det_rows: np.ndarray | None = None,
    threads: int = 1,
) -> np.ndarray:
    """OKS of aligned (ground truth, detection) pairs.

    Parameters
    ----------
    gt_keypoints, det_keypoints : float64 (n_pair, n_keypoints, 3)
        (x, y, v) per keypoint; only the ground truth's v is read (v > 0: labelled).
    gt_box : float64 (n_pair, 4)
        The ground truth's bbox [x, y, w, h] (for ground truth without labelled keypoints).
    gt_area : float64 (n_pair,)
        The ground truth's ``area`` field (the OKS scale).
    sigmas : float64 (n_keypoints,)
    gt_rows, det_rows : int64 (n_pair,), optional
        When given, the arrays above hold whole collections (n_gt or n_det rows) and pair k
        is (``gt_rows[k]``, ``det_rows[k]``): the compiled kernel reads them in place.
    threads : int, optional
        With ``gt_rows``/``det_rows``: the compiled path's threads (not capped by the CPU count;
        callers take :func:`deteval._parallel.kernel_threads` with :data:`OKS_PAIRS_PER_THREAD`).
        The same numbers for every count.

    Returns
    -------
    float64 (n_pair,)

    Notes
    -----
    pycocotools' ``computeOks``: ``vars = (sigmas * 2) ** 2``;
    ``e = (dx ** 2 + dy ** 2) / vars / (area + np.spacing(1)) / 2``; ``e = e[vg > 0]`` when any
    keypoint is labelled; ``np.sum(np.exp(-e)) / e.shape[0]``. Crowd ground truth gets no special
    formula (unlike box IoU); the matching still lets it absorb detections.

    Examples
    --------
    A detection exactly on the ground truth's two labelled keypoints (the third is not labelled):

    >>> gt = np.array([[[10., 10., 2.], [20., 10., 1.], [0., 0., 0.]]])
    >>> dt = np.array([[[10., 10., 1.], [20., 10., 1.], [50., 50., 1.]]])
    >>> pair_oks(gt, np.array([[5., 5., 20., 10.]]), np.array([200.]), dt,
    ...          sigmas=np.array([.1, .1, .1])).tolist()
    [1.0]
    """
    if gt_rows is not None and det_rows is not None:
        return _speedups.dispatch(
            "_ckeypoint.oks_terms",
            gt_keypoints,
            gt_box,
            gt_area,
            det_keypoints,
            gt_rows,
            det_rows,
            sigmas,
            threads=threads,
        )
    return _pair_oks_numpy(gt_keypoints, gt_box, gt_area, det_keypoints, sigmas)


def _pair_oks_rows_numpy(
    gt_keypoints: np.ndarray,
    gt_box: np.ndarray,
    gt_area: np.ndarray,
    det_keypoints: np.ndarray,
    gt_rows: np.ndarray,
    det_rows: np.ndarray,
    sigmas: np.ndarray,
    threads: int = 1,
) -> np.ndarray:
    """The numpy twin of the ``_ckeypoint.oks_terms`` kernel: :func:`pair_oks` of gathered rows.

    ``threads`` is the compiled path's; the twin runs on the calling thread.
    """
    return _pair_oks_numpy(
        gt_keypoints[gt_rows], gt_box[gt_rows], gt_area[gt_rows], det_keypoints[det_rows], sigmas
    )


def _pair_oks_numpy(
    gt_keypoints: np.ndarray,
    gt_box: np.ndarray,
    gt_area: np.ndarray,
    det_keypoints: np.ndarray,
    sigmas: np.ndarray,
) -> np.ndarray:
    """:func:`pair_oks` of aligned pairs in numpy (pycocotools' ``computeOks``, all pairs at once)."""
    variances = (sigmas * 2) ** 2
    n_pair, n_kp = gt_keypoints.shape[:2]
    if n_pair == 0:
        return np.zeros(0)
    xg, yg, vg = gt_keypoints[:, :, 0], gt_keypoints[:, :, 1], gt_keypoints[:, :, 2]
    xd, yd = det_keypoints[:, :, 0], det_keypoints[:, :, 1]
    is_labelled = vg > 0
    n_labelled = np.count_nonzero(is_labelled, axis=1)
    has_labels = n_labelled > 0
    # Ground truth with labelled keypoints: the distance to each keypoint.
    dx = xd - xg
    dy = yd - yg
    # Without: the distance outside the doubled box, per keypoint.
    x0 = (gt_box[:, 0] - gt_box[:, 2])[:, None]
    x1 = (gt_box[:, 0] + gt_box[:, 2] * 2)[:, None]
    y0 = (gt_box[:, 1] - gt_box[:, 3])[:, None]
    y1 = (gt_box[:, 1] + gt_box[:, 3] * 2)[:, None]
    dx = np.where(has_labels[:, None], dx, np.maximum(0, x0 - xd) + np.maximum(0, xd - x1))
    dy = np.where(has_labels[:, None], dy, np.maximum(0, y0 - yd) + np.maximum(0, yd - y1))
    e = (dx**2 + dy**2) / variances / (gt_area[:, None] + np.spacing(1)) / 2
    # Keypoints that enter the sum: the labelled ones, or all of them; packed to the front in
    # keypoint order (a stable sort of "not used"), then summed per group of equal count.
    is_used = np.where(has_labels[:, None], is_labelled, True)
    n_used = np.where(has_labels, n_labelled, n_kp)
    packed = np.take_along_axis(e, np.argsort(~is_used, axis=1, kind="stable"), axis=1)
    return _mean_of_exp(packed, n_used)


def _mean_of_exp(packed: np.ndarray, n_used: np.ndarray) -> np.ndarray:
    """Per row, ``np.sum(np.exp(-e)) / count`` of its first ``n_used`` terms, as pycocotools sums."""
    out = np.zeros(len(n_used))
    for count in np.unique(n_used):
        rows = np.flatnonzero(n_used == count)
        values = np.ascontiguousarray(packed[rows, :count])
        out[rows] = np.sum(np.exp(-values), axis=1) / count
    return out


#: The kernel's decline: NaN coordinates (numpy's ``maximum(0, NaN)`` is NaN, the kernel's 0).
_NAN = "NaN coordinate or box"


def _compiled_oks(
    gt_keypoints: np.ndarray,
    gt_box: np.ndarray,
    gt_area: np.ndarray,
    det_keypoints: np.ndarray,
    gt_rows: np.ndarray,
    det_rows: np.ndarray,
    sigmas: np.ndarray,
    threads: int = 1,
) -> np.ndarray | _speedups.Decline:
    """:func:`pair_oks` of rows by ``deteval.geometry._ckeypoint.oks_terms`` (the terms; numpy's exp and sums).

    The kernel writes the negated terms grouped by their count (one contiguous block of rows
    per count, see ``_ckeypoint.c``): numpy's ``exp`` and ``sum(axis=1)`` then run once per block,
    on no copy. Declines NaN keypoint coordinates and boxes: for a ground truth without labelled
    keypoints the twin's distance outside the box is NaN, the kernel's 0.

    ``threads``: the pairs are cut into slices, each computed whole (kernel, exp, sums) into its
    own slots of the output; slice k runs on thread ``k % threads``. The kernel and numpy's loops
    release the GIL, and each pair's value never depends on its slice: the same bits for every
    count.
    """
    if any(_has_nan(a) for a in (gt_keypoints, det_keypoints, gt_box)):
        return _speedups.Decline(_NAN)
    kernel = _speedups.module_of("_ckeypoint.oks_terms").oks_terms  # type: ignore[union-attr]
    collections = (
        np.ascontiguousarray(gt_keypoints, dtype=np.float64),
        np.ascontiguousarray(gt_box, dtype=np.float64),
        np.ascontiguousarray(gt_area + np.spacing(1), dtype=np.float64),
        np.ascontiguousarray(det_keypoints, dtype=np.float64),
    )
    variances = np.ascontiguousarray((sigmas * 2) ** 2, dtype=np.float64)
    n_pair, n_kp = len(gt_rows), gt_keypoints.shape[1]
    threads = max(1, min(int(threads), n_pair))
    # One thread: slices of _PAIRS_PER_SLICE; more: each thread's buffers a share of that (the
    # same memory), and at least one slice per thread.
    per_slice = _PAIRS_PER_SLICE if threads == 1 else max(_PAIRS_PER_SLICE // threads, 1)
    step = max(1, min(n_pair, per_slice, -(-n_pair // threads)))
    starts = list(range(0, n_pair, step))
    out = np.empty(n_pair)

    counts = np.arange(n_kp + 1, dtype=np.float64)  # a row's divisor, by its term count

    def run(first: int) -> None:
        # Reused by this thread's slices: the terms, their exponentials (numpy's exp into a buffer
        # of its own, as into a new array), the means and the layout.
        terms, exps = np.empty(step * n_kp), np.empty(step * n_kp)
        means = np.empty(step)
        order = np.empty(step, dtype=np.int64)
        group_size = np.empty(n_kp + 1, dtype=np.int64)
        for start in starts[first::threads]:
            stop = min(start + step, n_pair)
            size = stop - start
            # int64 rows of this slice only (candidate pairs may come as int32)
            slice_rows = [np.ascontiguousarray(r[start:stop], dtype=np.int64) for r in (gt_rows, det_rows)]
            kernel(*collections, *slice_rows, variances, terms, order[:size], group_size)
            # Few calls per slice, each releasing the GIL for its whole length: one exp of every
            # term, one row sum per count (pycocotools' np.sum(np.exp(-e)) of one pair's vector:
            # -e is exact in C), one division of every row by its count.
            sizes = group_size.tolist()
            n_terms = sum(count * n_rows for count, n_rows in enumerate(sizes))
            np.exp(terms[:n_terms], out=exps[:n_terms])
            row = at = 0
            for count, n_rows in enumerate(sizes):
                if n_rows:
                    block = exps[at : at + n_rows * count].reshape(n_rows, count)
                    np.sum(block, axis=1, out=means[row : row + n_rows])
                    row, at = row + n_rows, at + n_rows * count
            np.divide(means[:size], counts.repeat(group_size), out=means[:size])
            out[start + order[:size]] = means[:size]

    if threads == 1 or len(starts) == 1:
        run(0)
    else:
        _on_threads(run, min(threads, len(starts)))
    return out


def _on_threads(run: Callable[[int], None], threads: int) -> None:
    """``run(k)`` for k in ``range(threads)``: 1.. on new threads, 0 on this one; raises the first error."""
    errors: list[BaseException] = []

    def guarded(k: int) -> None:
        try:
            run(k)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
            errors.append(exc)

    helpers = [threading.Thread(target=guarded, args=(k,), daemon=True) for k in range(1, threads)]
    for helper in helpers:
        helper.start()
    guarded(0)
    for helper in helpers:
        helper.join()
    if errors:
        raise errors[0]


def _has_nan(values: np.ndarray) -> bool:
    """Whether ``values`` holds a NaN, without a mask of its size (``min`` propagates NaN).

    >>> _has_nan(np.array([1.0, np.inf, -np.inf])), _has_nan(np.array([np.nan, 1.0])), _has_nan(np.zeros(0))
    (False, True, False)
    """
    return bool(values.size) and bool(np.isnan(np.min(values)))


#: Pairs per call of the kernel: its terms (and their exponentials) take at most this many rows
#: of n_keypoints float64 each (17: 1.1 MiB), whatever the number of pairs. Smaller slices cost
#: ~0.1 ms of numpy calls each; larger ones raise the peak (keypoints 5k: 1 << 15 pairs, +3 MiB).
_PAIRS_PER_SLICE = 1 << 13


_speedups.register(
    "_ckeypoint.oks_terms",
    "deteval.geometry._ckeypoint",
    _compiled_oks,
    _pair_oks_rows_numpy,
    declines=(_NAN,),
)
