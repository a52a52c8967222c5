"""The threaded mask kernels give the same arrays, bit for bit, for every thread count.

deteval.geometry._cmask splits summarise_compressed (per string), rasterise (per record) and
pair_iou (per pair) into ``threads`` parts (deteval/_parallel.h), each writing only its own rows.
Each kernel is run on generated inputs (empty, one row, huge runs, runs of length 0, corrupt
strings, many rows) with threads=1 and with 2, 3, 7 and more threads than rows; every output
array must be equal to the one-thread result, byte for byte.
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval._parallel import kernel_threads
from deteval.geometry.raster import RasterMasks, _compiled_pair_iou, _rasterise_compiled
from deteval.masks.rle import _summarise_spans_compiled
from tests.support.kernels import (
    CORRUPT_COUNTS,
    generated_polygons,
    needs_kernel,
    polygon_columns,
    random_masks,
    rle_string,
    runs_masks,
)

pytestmark = needs_kernel("deteval.geometry._cmask")

#: More threads than rows in the small inputs, and more than DETEVAL_MAX_PARTS (64).
THREADS = (2, 3, 7, 50, 200)


def assert_same_bits(got: tuple, want: tuple, what: str) -> None:
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want, strict=True)):
        if isinstance(b, (bytes, bytearray)):
            assert bytes(a) == bytes(b), f"{what}: output {k}"
            continue
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype, f"{what}: output {k}"
        assert a.shape == b.shape, f"{what}: output {k}"
        assert a.tobytes() == b.tobytes(), f"{what}: output {k} differs"


# ---- summarise_compressed ------------------------------------------------------------------------


def _huge_runs() -> list:
    """(string, [h, w]) of masks with runs near 2**31 and of length 0 anywhere."""
    h, w = 60_000, 50_000  # 3e9 pixels: runs beyond 2**31
    runs = [0, 1, 0, 2**31 - 7, 0, 0, h * w - 2**31 + 4, 2]
    assert sum(runs) == h * w
    return [(rle_string(runs), [h, w]), (rle_string([h * w]), [h, w]), (rle_string([0, h * w]), [h, w])]


def _summarise_inputs(seed: int, n_masks: int) -> tuple:
    rng = np.random.default_rng(seed)
    pairs = [(r["counts"], r["size"]) for r in random_masks(rng, n_masks)]
    pairs += [(r["counts"], r["size"]) for r in runs_masks(rng, max(1, n_masks // 4), (17, 23))]
    pairs += [(t, [1, int(rng.integers(0, 3))]) for t in CORRUPT_COUNTS]
    pairs += _huge_runs()
    order = rng.permutation(len(pairs))
    strings = [pairs[i][0] for i in order]
    sizes = np.array([pairs[i][1] for i in order], np.int64).reshape(-1, 2)
    offsets = np.r_[0, np.cumsum([len(t) for t in strings])].astype(np.int64)
    return b"".join(strings), offsets, sizes


SUMMARISE_CASES = {
    "empty": (b"", np.zeros(1, np.int64), np.zeros((0, 2), np.int64)),
    "one row": (rle_string([3, 4, 5]), np.array([0, 3], np.int64), np.array([[3, 4]], np.int64)),
    "one empty string": (b"", np.array([0, 0], np.int64), np.array([[0, 0]], np.int64)),
    "huge runs": (
        b"".join(t for t, _ in _huge_runs()),
        np.r_[0, np.cumsum([len(t) for t, _ in _huge_runs()])].astype(np.int64),
        np.array([s for _, s in _huge_runs()], np.int64),
    ),
    "mixed 40": _summarise_inputs(1, 40),
    "mixed 3000": _summarise_inputs(2, 3000),
}


@pytest.mark.parametrize("case", sorted(SUMMARISE_CASES))
def test_summarise_compressed_is_the_same_for_every_thread_count(case):
    blob, offsets, sizes = SUMMARISE_CASES[case]
    one = _summarise_spans_compiled(blob, offsets, sizes, threads=1)
    for threads in THREADS:
        assert_same_bits(
            _summarise_spans_compiled(blob, offsets, sizes, threads=threads), one, f"{case} {threads}"
        )


def test_summarise_compressed_offsets_need_not_start_at_zero():
    """Strings in the middle of a blob (spans of a larger file's bytes) split the same way."""
    blob, offsets, sizes = _summarise_inputs(3, 200)
    shifted = b"x" * 1000 + blob
    one = _summarise_spans_compiled(shifted, offsets + 1000, sizes, threads=1)
    assert_same_bits(one, _summarise_spans_compiled(blob, offsets, sizes, threads=1), "shifted")
    for threads in THREADS:
        assert_same_bits(
            _summarise_spans_compiled(shifted, offsets + 1000, sizes, threads=threads), one, "shifted"
        )


def test_summarise_compressed_huge_runs_are_summed_and_boxed():
    """The values the threaded parts write are the right ones, not only equal to each other."""
    blob, offsets, sizes = SUMMARISE_CASES["huge runs"]
    problem, sums, areas, boxes = _summarise_spans_compiled(blob, offsets, sizes, threads=3)
    assert problem.tolist() == [0, 0, 0]
    assert sums.tolist() == [60_000 * 50_000] * 3
    assert areas.tolist() == [float(1 + 2**31 - 7 + 2), 0.0, float(60_000 * 50_000)]
    assert np.isnan(boxes[0]).all()  # a run of length 0 after the first: pycocotools' toBbox decides
    assert boxes[1].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert boxes[2].tolist() == [0.0, 0.0, 50_000.0, 60_000.0]


# ---- rasterise -----------------------------------------------------------------------------------


def _polygon_inputs(seed: int, n: int, subset: bool = False) -> tuple:
    rng = np.random.default_rng(seed)
    records = [r for r in generated_polygons(rng, n) if not (np.abs(np.concatenate(r[2])) >= 2**26).any()]
    rows = rng.permutation(len(records))[: len(records) // 2] if subset else None
    return polygon_columns(records, rows)


RASTER_CASES = {
    "empty": polygon_columns([]),
    "one row": polygon_columns([(10, 12, [np.array([[1.0, 1.0], [8.0, 2.0], [4.0, 9.0]])])]),
    "one row, two parts": polygon_columns(
        [(30, 30, [np.array([[1.0, 1.0], [8.0, 2.0], [4.0, 9.0]]), np.array([[5.0, 5], [25, 5], [25, 25]])])]
    ),
    "mixed 30": _polygon_inputs(4, 30),
    "mixed 600": _polygon_inputs(5, 600),
    "half of 600, shuffled": _polygon_inputs(13, 600, subset=True),
}


@pytest.mark.parametrize("case", sorted(RASTER_CASES))
def test_rasterise_is_the_same_for_every_thread_count(case):
    args = RASTER_CASES[case]
    one = _rasterise_compiled(*args, threads=1)
    assert not isinstance(one, type(None))
    for threads in THREADS:
        assert_same_bits(_rasterise_compiled(*args, threads=threads), one, f"{case} {threads}")


def test_rasterise_offsets_join_the_parts_in_record_order():
    """Each record's string sits at its offsets in the joined blob, whatever part made it."""
    args = RASTER_CASES["mixed 30"]
    blob, offsets, _, _ = _rasterise_compiled(*args, threads=7)
    assert offsets[0] == 0
    assert offsets[-1] == len(blob)
    assert (np.diff(offsets) > 0).all()
    for r in (0, 5, len(offsets) - 2):
        alone, alone_offsets, _, _ = _rasterise_compiled(*_one_record(args, r), threads=1)
        assert bytes(blob[offsets[r] : offsets[r + 1]]) == alone
        assert alone_offsets.tolist() == [0, len(alone)]


def _one_record(args: tuple, r: int) -> tuple:
    points, point_start, part_first, part_stop, sizes = args
    p0, p1 = part_first[r], part_stop[r]
    q0, q1 = point_start[p0], point_start[p1]
    return (
        np.ascontiguousarray(points[q0:q1]),
        (point_start[p0 : p1 + 1] - q0).astype(np.int64),
        np.array([0], np.int64),
        np.array([p1 - p0], np.int64),
        np.ascontiguousarray(sizes[r : r + 1]),
    )


# ---- pair_iou ------------------------------------------------------------------------------------


def _pair_inputs(seed: int, n_image: int, huge: bool = False) -> tuple:
    rng = np.random.default_rng(seed)
    det_rles, gt_rles, pairs = [], [], []
    for image in range(n_image):
        h, w = (8000, 8000) if huge and image == 0 else (int(rng.integers(1, 50)), int(rng.integers(1, 50)))
        d0, g0 = len(det_rles), len(gt_rles)
        make = runs_masks if h * w >= 10**6 else random_masks
        det_rles += make(rng, int(rng.integers(1, 8)), (h, w)) + runs_masks(rng, 2, (h, w))
        gt_rles += make(rng, int(rng.integers(1, 6)), (h, w)) + runs_masks(rng, 2, (h, w))
        pairs += [(d, g) for d in range(d0, len(det_rles)) for g in range(g0, len(gt_rles))]
    det, gt = RasterMasks.from_rles(det_rles), RasterMasks.from_rles(gt_rles)
    table = np.array(pairs, np.int64).reshape(-1, 2)[rng.permutation(len(pairs))]
    crowd = (rng.random(len(gt_rles)) < 0.3)[table[:, 1]] if len(gt_rles) else np.zeros(0, bool)
    return det, gt, table[:, 0], table[:, 1], crowd


PAIR_CASES = {
    "empty": _pair_inputs(6, 0),
    "mixed 3 images": _pair_inputs(7, 3),
    "mixed 60 images": _pair_inputs(8, 60),
    "huge runs": _pair_inputs(9, 2, huge=True),
}


@pytest.mark.parametrize("case", sorted(PAIR_CASES))
def test_pair_iou_is_the_same_for_every_thread_count(case):
    args = PAIR_CASES[case]
    one = _compiled_pair_iou(*args, threads=1)
    for threads in THREADS:
        assert_same_bits((_compiled_pair_iou(*args, threads=threads),), (one,), f"{case} {threads}")


def test_pair_iou_of_one_pair_on_many_threads():
    det, gt, d, g, crowd = PAIR_CASES["mixed 3 images"]
    one = _compiled_pair_iou(det, gt, d[:1], g[:1], crowd[:1], threads=1)
    assert _compiled_pair_iou(det, gt, d[:1], g[:1], crowd[:1], threads=7).tobytes() == one.tobytes()


# ---- the count ------------------------------------------------------------------------------------


def test_small_inputs_stay_on_one_thread():
    from deteval.geometry.masks import MASK_WORK_PER_THREAD, mask_threads

    assert mask_threads("auto", MASK_WORK_PER_THREAD - 1) == 1
    assert mask_threads(1, 10**9) == 1
    assert mask_threads(None, 10**9) == 1
    assert mask_threads("auto", 10**9) == kernel_threads("auto", 10**9, MASK_WORK_PER_THREAD)


# ---- the detections compared (ranked only where a group is over max_dets) ---------------------------


def _compared_group_by_full_sort(n_classes: int, dt, max_dets: list, scope: str) -> np.ndarray:
    """Pycocotools' rule by one sort of every detection: a group's first max(max_dets) by score."""
    group = dt.image.astype(np.int64) * n_classes + dt.category.astype(np.int64)
    capped = dt.image.astype(np.int64) if scope == "image" else group
    order = np.lexsort((dt.order, -dt.score, capped))
    sorted_key = capped[order]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    rank = np.arange(len(group)) - np.repeat(starts, np.diff(np.r_[starts, len(group)]))
    out = group.copy()
    out[order[rank >= max(max_dets)]] = -1
    return out


@pytest.mark.parametrize("scope", ["image", "class"])
def test_compared_group_equals_the_full_sort(scope):
    from types import SimpleNamespace

    from deteval.geometry.masks import _compared_group

    rng = np.random.default_rng(11)
    for case in range(200):
        n, n_image, n_class = int(rng.integers(1, 300)), int(rng.integers(1, 15)), int(rng.integers(1, 5))
        if case % 5 == 0:  # image indices too far apart for a bincount
            n_image = 10**8
        score = rng.choice(np.array([0.1, 0.5, 0.9, rng.random()]), n)  # many ties: file order decides
        dt = SimpleNamespace(
            image=rng.integers(0, n_image, n),
            category=rng.integers(0, n_class, n),
            order=rng.permutation(n),
            score=score,
        )
        protocol = SimpleNamespace(max_dets=[1, int(rng.integers(1, 20))], max_dets_scope=scope)
        want = _compared_group_by_full_sort(n_class, dt, protocol.max_dets, scope)
        got = _compared_group(SimpleNamespace(n_classes=n_class), dt, protocol)
        assert np.array_equal(got, want), case


# ---- through prepare_masks ------------------------------------------------------------------------


def _mixed_collections(seed: int):
    """Ground truth and detections on a few images, polygons and RLE mixed, some without a bbox."""
    from pycocotools import mask as mask_utils

    from deteval import load_detections, load_ground_truth

    rng = np.random.default_rng(seed)
    images = [
        {"id": i + 1, "width": int(rng.integers(20, 60)), "height": int(rng.integers(20, 60))}
        for i in range(6)
    ]
    annotations, results = [], []
    for image in images:
        h, w = image["height"], image["width"]
        for k in range(int(rng.integers(1, 8))):
            x, y = rng.uniform(0, w - 5), rng.uniform(0, h - 5)
            polygon = [
                x,
                y,
                x + rng.uniform(2, 20),
                y,
                x + rng.uniform(2, 20),
                y + rng.uniform(2, 20),
                x,
                y + 9,
            ]
            as_rle = k % 2 == 1
            if as_rle:
                rle = mask_utils.merge(mask_utils.frPyObjects([polygon], h, w))
                segmentation = {"size": rle["size"], "counts": rle["counts"].decode()}
            else:
                segmentation = [polygon]
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image["id"],
                    "category_id": 1,
                    "iscrowd": int(as_rle and k % 3 == 0),
                    "area": 100.0,
                    "bbox": [x, y, 10, 10],
                    "segmentation": segmentation,
                }
            )
            for _ in range(int(rng.integers(1, 4))):
                jitter = (np.asarray(polygon) + rng.uniform(-3, 3, len(polygon))).tolist()
                if rng.random() < 0.5:
                    rle = mask_utils.merge(mask_utils.frPyObjects([jitter], h, w))
                    det_segmentation = {"size": rle["size"], "counts": rle["counts"].decode()}
                else:
                    det_segmentation = [jitter]
                results.append(
                    {
                        "image_id": image["id"],
                        "category_id": 1,
                        "score": float(rng.random()),
                        "segmentation": det_segmentation,
                    }
                )
    gt = load_ground_truth(
        {"images": images, "categories": [{"id": 1, "name": "a"}], "annotations": annotations}
    )
    return gt, load_detections(results, gt)


def test_prepared_masks_give_the_same_ious_and_areas_for_every_thread_count():
    from deteval import get_protocol
    from deteval.geometry import detection_areas, pair_mask_iou, prepare_masks

    gt, dt = _mixed_collections(12)
    p = get_protocol("coco").replace(iou_type="segm")
    gt_rows, det_rows = np.nonzero(np.asarray(gt.image)[:, None] == np.asarray(dt.image)[None, :])
    crowd = np.asarray(gt.is_crowd)[gt_rows]
    det_all = np.arange(len(dt))

    def run(threads: int) -> tuple:
        prepared = prepare_masks(gt, dt, p, threads=threads)
        assert prepared.threads == threads
        return pair_mask_iou(prepared, gt_rows, det_rows, crowd, p), detection_areas(prepared, det_all, p)

    one = run(1)
    assert (one[0] > 0).any()
    for threads in (2, 3, 7, 100):
        assert_same_bits(run(threads), one, f"threads {threads}")
