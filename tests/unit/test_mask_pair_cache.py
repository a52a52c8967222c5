"""pair_iou keeps the masks it decoded while their pairs come (deteval.geometry._cmask).

Each part of the kernel holds the masks of each side it decoded in a cache by row, emptied at about
one group's size; two masks without runs of length 0 (after the first) are compared by their
foreground spans, any others by pycocotools' walk. These tests give the kernel pairs in the orders
that exercise the cache (det-major as matching makes them, gt-major, shuffled, groups revisited
after others, one ground truth against hundreds of detections and the reverse, groups of 1 to 70
masks) and compare every value, bit for bit, with pycocotools' ``mask.iou`` (the twin), on one
thread and on 2, 3, 7 and 64.
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval.geometry.raster import RasterMasks, _pair_iou_pycocotools
from tests.support.kernels import needs_kernel, random_masks, runs_masks

pytestmark = needs_kernel("deteval.geometry._cmask")

THREADS = (1, 2, 3, 7, 64)


def _kernel(det: RasterMasks, gt: RasterMasks, det_rows, gt_rows, crowd, threads: int) -> np.ndarray:
    """The kernel on the pairs in the order given (the Python entry may sort them)."""
    from deteval.geometry import _cmask

    out = np.zeros(len(det_rows))
    _cmask.pair_iou(
        det.blob,
        det.start,
        det.stop,
        det.area,
        det.box,
        gt.blob,
        gt.start,
        gt.stop,
        gt.area,
        gt.box,
        np.ascontiguousarray(det_rows, dtype=np.int64),
        np.ascontiguousarray(gt_rows, dtype=np.int64),
        np.ascontiguousarray(crowd, dtype=np.uint8),
        out,
        threads,
    )
    return out


def _images(rng: np.random.Generator, shapes: list, zero_runs: bool) -> tuple:
    """Images of (n_det, n_gt) masks each: their RasterMasks and every pair, det-major per image."""
    det_rles, gt_rles, groups = [], [], []
    for n_det, n_gt in shapes:
        h, w = (0, 0) if rng.random() < 0.05 else (int(rng.integers(1, 40)), int(rng.integers(1, 40)))
        d0, g0 = len(det_rles), len(gt_rles)
        det_rles += random_masks(rng, n_det, (h, w))
        gt_rles += random_masks(rng, n_gt, (h, w))
        if zero_runs and rng.random() < 0.5:  # masks with runs of length 0 beside plain ones
            det_rles[d0] = runs_masks(rng, 1, (h, w))[0]
            gt_rles[g0] = runs_masks(rng, 1, (h, w))[0]
        det = np.repeat(np.arange(d0, len(det_rles)), n_gt)
        gt = np.tile(np.arange(g0, len(gt_rles)), n_det)
        groups.append(np.c_[det, gt, np.full(len(det), len(groups))])
    crowd = rng.random(len(gt_rles)) < 0.25
    return RasterMasks.from_rles(det_rles), RasterMasks.from_rles(gt_rles), crowd, groups


def _orders(rng: np.random.Generator, groups: list) -> dict:
    """The pairs (det, gt, image) in the orders the cache must serve."""
    det_major = np.concatenate(groups)
    gt_major = det_major[np.lexsort((det_major[:, 0], det_major[:, 1]))]
    revisited = np.concatenate([groups[0], *groups[1:], groups[0], groups[-1], groups[0]])
    within = np.concatenate([g[rng.permutation(len(g))] for g in groups])  # each group shuffled
    return {
        "det-major": det_major,
        "gt-major": gt_major,
        "shuffled": det_major[rng.permutation(len(det_major))],
        "groups revisited": revisited,
        "groups shuffled inside": within,
    }


CASES = {
    "groups of 1 to 70 masks": (
        [(1, 1), (3, 70), (25, 2), (1, 40), (12, 12), (2, 1), (6, 33), (40, 5)],
        True,
    ),
    "one ground truth, 300 detections": ([(300, 1), (4, 3)], False),
    "one detection, 200 ground truths": ([(1, 200), (3, 4)], False),
    "many small groups": (
        [(int(a), int(b)) for a, b in np.random.default_rng(9).integers(1, 6, (60, 2))],
        True,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pair_iou_is_pycocotools_in_every_order_and_thread_count(case):
    rng = np.random.default_rng(sorted(CASES).index(case))
    shapes, zero_runs = CASES[case]
    det, gt, crowd, groups = _images(rng, shapes, zero_runs)
    for order, pairs in _orders(rng, groups).items():
        det_rows, gt_rows, image = pairs[:, 0], pairs[:, 1], pairs[:, 2]
        want = _pair_iou_pycocotools(det, gt, det_rows, gt_rows, crowd[gt_rows], image)
        assert (want > 0).any()
        assert (want == 0).any()
        for threads in THREADS:
            got = _kernel(det, gt, det_rows, gt_rows, crowd[gt_rows], threads)
            assert got.tobytes() == want.tobytes(), f"{case}, {order}, {threads} threads"


def test_a_mask_paired_again_after_the_cache_was_emptied_is_decoded_again():
    """A ground truth met, then 40 groups of others (the cache emptied), then met again."""
    rng = np.random.default_rng(5)
    det, gt, crowd, groups = _images(rng, [(2, 3)] + [(1, 6)] * 40, False)
    pairs = np.concatenate([groups[0], *groups[1:], groups[0][::-1]])
    want = _pair_iou_pycocotools(det, gt, pairs[:, 0], pairs[:, 1], crowd[pairs[:, 1]], pairs[:, 2])
    for threads in THREADS:
        got = _kernel(det, gt, pairs[:, 0], pairs[:, 1], crowd[pairs[:, 1]], threads)
        assert got.tobytes() == want.tobytes()


def test_empty_and_full_masks_and_crowd_regions():
    """All-background masks (no foreground span), full masks, 0 x 0 masks, crowd: pycocotools' values."""
    from pycocotools import mask as mask_utils

    def rle(a):
        return mask_utils.encode(np.asfortranarray(np.asarray(a, np.uint8)))

    empty, full = np.zeros((6, 5)), np.ones((6, 5))
    half = np.zeros((6, 5))
    half[:, :2] = 1
    det = RasterMasks.from_rles([rle(empty), rle(full), rle(half), {"size": [0, 0], "counts": b""}])
    gt = RasterMasks.from_rles([rle(full), rle(empty), rle(half), {"size": [0, 0], "counts": b""}])
    det_rows = np.array([0, 0, 1, 1, 1, 2, 2, 2, 3])
    gt_rows = np.array([0, 1, 0, 1, 2, 0, 1, 2, 3])
    for crowd in (np.zeros(9, bool), np.ones(9, bool)):
        want = _pair_iou_pycocotools(det, gt, det_rows, gt_rows, crowd, np.r_[np.zeros(8, np.int64), 1])
        for threads in THREADS:
            assert _kernel(det, gt, det_rows, gt_rows, crowd, threads).tobytes() == want.tobytes()
    got = _kernel(det, gt, det_rows, gt_rows, np.zeros(9, bool), 1)
    assert got.tolist() == [0.0, 0.0, 1.0, 0.0, 0.4, 0.4, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("threads", THREADS)
def test_boxes_that_abut_overlap_by_a_pixel_or_touch_a_corner_are_pycocotools(threads):
    """The kernel's box test (pycocotools' bbIou > 0) on xyxy boxes, where it decides alone.

    Squares side by side (boxes sharing an edge: bbIou 0, never walked), one pixel over, corners
    touching and apart, on one size, against pycocotools' ``mask.iou`` bit for bit.
    """
    from pycocotools import mask as mask_utils

    def square(y: int, x: int, side: int) -> dict:
        m = np.zeros((12, 16), np.uint8, order="F")
        m[y : y + side, x : x + side] = 1
        return mask_utils.encode(m)

    det_rles = [square(2, 2, 4), square(2, 2, 4), square(2, 2, 4), square(2, 2, 4), square(0, 0, 12)]
    gt_rles = [square(2, 6, 4), square(2, 5, 4), square(6, 6, 4), square(5, 5, 4), square(3, 3, 2)]
    det, gt = RasterMasks.from_rles(det_rles), RasterMasks.from_rles(gt_rles)
    assert det.box[0].tolist() == [2.0, 2.0, 6.0, 6.0]  # xyxy: x + w, y + h
    rows = np.arange(5)
    for crowd in (np.zeros(5, bool), np.ones(5, bool)):
        want = np.array(
            [mask_utils.iou([d], [g], [int(c)])[0, 0] for d, g, c in zip(det_rles, gt_rles, crowd)]
        )
        got = _kernel(det, gt, rows, rows, crowd, threads)
        assert got.tobytes() == want.tobytes()
        assert got[0] == got[2] == 0.0
        assert got[1] > 0
        assert got[3] > 0
