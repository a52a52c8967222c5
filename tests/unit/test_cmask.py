"""The compiled RLE kernels (deteval.geometry._cmask): their entries, refusals and edge cases.

The kernels against their twins (numpy and pycocotools), bit for bit on generated valid, corrupt
and random strings, polygons and mask pairs, are in the one harness: tests/unit/test_kernels.py
(generators in tests/support/kernels.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from deteval.errors import InputError
from deteval.geometry.masks import segm_iou
from deteval.masks.rle import (
    _cmask,
    _summarise_compressed,
)
from tests.support.kernels import random_masks

cmask = _cmask()
needs_kernel = pytest.mark.skipif(cmask is None, reason="deteval.geometry._cmask not built")


@needs_kernel
def test_the_python_entry_gives_the_kernels_values():
    rles = random_masks(np.random.default_rng(2), 30)
    strings = [r["counts"] for r in rles]
    sizes = np.array([r["size"] for r in rles])
    problem, sums, boxes = _summarise_compressed(strings, sizes)
    assert problem.tolist() == [0] * 30
    assert sums.tolist() == (sizes[:, 0] * sizes[:, 1]).tolist()
    assert np.array_equal(boxes, np.asarray(mask_utils.toBbox(rles)))


def test_kernel_refuses_wrong_buffers():
    if cmask is None:
        pytest.skip("deteval.geometry._cmask not built")

    def outputs(n: int) -> list:
        return [np.zeros(n, np.int8), np.zeros(n, np.int64), np.zeros(n), np.zeros((n, 4))]

    sizes = np.zeros((1, 2), np.int64)
    with pytest.raises(ValueError, match="buffer sizes"):
        cmask.summarise_compressed(b"0", np.array([0, 1]), np.zeros((2, 2), np.int64), *outputs(1), 1)
    with pytest.raises(ValueError, match="outside the blob"):
        cmask.summarise_compressed(b"0", np.array([0, 2]), sizes, *outputs(1), 1)
    with pytest.raises(ValueError, match="outside the blob"):
        cmask.summarise_compressed(b"00", np.array([1, 0]), sizes, *outputs(1), 1)
    out = outputs(1)
    out[2] = out[1].view(float)
    with pytest.raises(ValueError, match="overlaps"):
        cmask.summarise_compressed(b"0", np.array([0, 1]), sizes, *out, 1)


@pytest.mark.parametrize("counts", ["1P", "0P"])
def test_a_string_ending_inside_a_run_is_refused_for_an_empty_mask_too(counts):
    """Only the empty string is a 0 x 0 mask; pycocotools reads past the end of these."""
    empty = {"size": [0, 0], "counts": counts}
    with pytest.raises(InputError, match="ends inside a run"):
        segm_iou([empty], [{"size": [0, 0], "counts": ""}], image_size=(0, 0), mask_iou="raster")


def test_the_empty_string_is_a_0_by_0_mask():
    empty = {"size": [0, 0], "counts": ""}
    assert segm_iou([empty], [empty], image_size=(0, 0), mask_iou="raster").shape == (1, 1)


def test_pair_iou_refuses_spans_outside_the_blob_and_rows_outside_the_spans():
    if cmask is None:
        pytest.skip("deteval.geometry._cmask not built")
    start, stop, area, box = np.array([0]), np.array([2]), np.array([1.0]), np.zeros((1, 4))

    def call(det_stop=stop, det_row=0, det_area=area, det_box=box):
        side = (b"11", start, stop, area, box)
        det = (b"11", start, det_stop, det_area, det_box)
        rows = np.array([det_row]), np.array([0])
        cmask.pair_iou(*det, *side, *rows, np.zeros(1, np.uint8), np.zeros(1), 1)

    call()
    with pytest.raises(ValueError, match="outside its spans"):
        call(det_row=1)
    with pytest.raises(ValueError, match="outside its blob"):
        call(det_stop=np.array([3]))
    with pytest.raises(ValueError, match="area"):
        call(det_area=np.array([np.nan]))
    with pytest.raises(ValueError, match="area"):
        call(det_area=np.array([2.0**32]))
    with pytest.raises(ValueError, match="NaN box"):
        call(det_box=np.full((1, 4), np.nan))
    with pytest.raises(ValueError, match="do not match"):
        call(det_box=np.zeros((1, 3)))


def test_rasterise_refuses_bad_buffers():
    if cmask is None:
        pytest.skip("deteval.geometry._cmask not built")
    square = np.array([[0, 0], [4, 0], [4, 4]], float)
    one = np.array([0, 3], np.int64)
    size = np.array([[5, 5]], np.int64)
    out = np.zeros(1), np.zeros(2, np.int64), np.zeros((1, 4))
    first, stop = np.array([0]), np.array([1])
    # a coordinate not finite or beyond +-2**26: None (the caller declines), nothing written
    assert cmask.rasterise(square + np.inf, one, first, stop, size, *out, 1) is None
    assert cmask.rasterise(square + 2.0**26, one, first, stop, size, *out, 1) is None
    assert not out[1].any()
    with pytest.raises(ValueError, match="part_first, part_stop or sizes"):
        cmask.rasterise(square, one, first, np.array([2]), size, *out, 1)
    with pytest.raises(ValueError, match="part_first, part_stop or sizes"):  # a record without parts
        cmask.rasterise(square, one, first, first, size, *out, 1)
    with pytest.raises(ValueError, match="point_start"):
        cmask.rasterise(square, np.array([0, 4]), first, stop, size, *out, 1)
    with pytest.raises(ValueError, match="buffer sizes"):
        cmask.rasterise(square, one, first, stop, size, out[0], np.zeros(1, np.int64), out[2], 1)
    with pytest.raises(ValueError, match="buffer sizes"):
        cmask.rasterise(square, one, np.array([0, 1]), stop, size, *out, 1)
    with pytest.raises(ValueError, match="part_first, part_stop or sizes"):  # an image of height 0
        cmask.rasterise(square, one, first, stop, np.array([[0, 5]], np.int64), *out, 1)
    expected = mask_utils.frPyObjects([square.ravel()], 5, 5)[0]["counts"]
    assert cmask.rasterise(square, one, first, stop, size, *out, 1) == expected
    assert out[1].tolist() == [0, len(expected)]
    assert out[2].tolist() == mask_utils.toBbox([{"size": [5, 5], "counts": expected}]).tolist()


@pytest.mark.parametrize("counts", [b"103", b"0013", b"30001", b"1021", b"0" * 50 + b"4"])
def test_a_run_of_length_0_gives_pycocotools_box(counts):
    """A mask with a run of length 0 after the first has the bounds of ``pycocotools.mask.toBbox``.

    pycocotools' encoder never writes such a run, but ``frPyObjects`` of an uncompressed RLE and
    users do; the kernel's box walk gave other boxes for them ([0, 0, 2, 1] for ``"103"`` at 1 x 4
    where pycocotools gives its own), which are the masks' bounds (the pair pre-check of raster IoU).
    """
    import deteval
    from deteval.masks import parse_masks
    from deteval.masks.sources import detection_source

    h, w = 1, 4
    rle = {"size": [h, w], "counts": counts.decode()}
    gt = deteval.load_ground_truth(
        {
            "images": [{"id": 1, "width": w, "height": h}],
            "annotations": [],
            "categories": [{"id": 1, "name": "a"}],
        }
    )
    dt = deteval.load_detections([{"image_id": 1, "category_id": 1, "score": 0.5, "segmentation": rle}], gt)
    masks = parse_masks(detection_source(dt, gt))
    box = np.asarray(mask_utils.toBbox([{"size": [h, w], "counts": counts}]), np.float64).reshape(4)
    assert masks.bounds[0].tolist() == [box[0], box[1], box[0] + box[2], box[1] + box[3]]


@pytest.mark.parametrize(
    ("det", "gt", "crowd"),
    [
        ([0, 0, 0, 2, 0], [0, 0, 1, 1, 0], False),
        ([0, 0, 0, 1, 0, 0], [0, 0, 0, 1, 0, 0], False),
        ([0, 0, 1, 1, 0, 1], [0, 0, 2, 1, 0], False),
        ([0, 0, 0, 3], [0, 0, 0, 2, 1], False),
        ([0, 0, 0, 1, 2], [0, 0, 0, 3, 0], True),
        ([1, 2, 0, 3, 0, 0], [0, 4, 0, 2], True),
    ],
)
def test_runs_of_length_0_give_pycocotools_iou(det, gt, crowd):
    """Pycocotools' rleIou walk stops when the runs left on both sides add up to 0.

    With runs of length 0 (which ``frPyObjects`` of an uncompressed RLE keeps) that is before the
    end of the masks, and pycocotools' IoU is 0 where the pixels overlap; the kernel gave the
    pixels' IoU (1.0 for the second pair, whose mask is one pixel).
    """
    h, w = 1, sum(det)
    d, g = {"size": [h, w], "counts": det}, {"size": [h, w], "counts": gt}
    expected = mask_utils.iou(
        [mask_utils.frPyObjects(d, h, w)], [mask_utils.frPyObjects(g, h, w)], [int(crowd)]
    )
    got = segm_iou([d], [g], [crowd], mask_iou="raster", image_size=(h, w))
    assert got.tolist() == np.asarray(expected, np.float64).reshape(1, 1).tolist()


@needs_kernel
@pytest.mark.parametrize(
    ("det", "gt", "expected"), [(b"03", b"01", 1.0), (b"1", b"02", 0.0), (b"", b"5", 0.0)]
)
def test_pair_iou_ends_when_one_mask_ends(det, gt, expected):
    """Masks whose runs add up to different totals (never two checked masks of one size).

    pycocotools' walk, which the kernel follows, would run forever once one side has ended with
    runs left on the other; the kernel did (the hostile-arguments test swaps spans between the
    two sides). It now stops there.
    """

    def side(counts: bytes) -> tuple:
        return counts, np.array([0]), np.array([len(counts)]), np.array([1.0]), np.array([[0.0, 0, 1, 1]])

    out = np.zeros(1)
    cmask.pair_iou(*side(det), *side(gt), np.array([0]), np.array([0]), np.zeros(1, np.uint8), out, 1)
    assert out.tolist() == [expected]
