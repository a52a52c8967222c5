"""The compiled RLE kernels (deteval.geometry._cmask) against their twins and pycocotools.

``summarise_compressed`` must give the problem codes and run sums of the numpy twin
(``_check_compressed`` / ``_compressed_run_sums``) on valid, corrupt and random strings, and
the boxes and pixel counts of ``pycocotools.mask.toBbox`` / ``area`` on every valid mask.
"""

from __future__ import annotations

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from deteval.errors import InputError
from deteval.geometry.masks import segm_iou
from deteval.io.segmentation.rle import (
    _check_compressed,
    _cmask,
    _compressed_run_sums,
    _summarise_compressed,
    summarise_spans,
)

cmask = _cmask()
needs_kernel = pytest.mark.skipif(cmask is None, reason="deteval.geometry._cmask not built")


def offsets_of(strings: list) -> np.ndarray:
    return np.r_[0, np.cumsum([len(s) for s in strings])].astype(np.int64)


def kernel(strings: list, sizes: np.ndarray) -> tuple:
    return summarise_spans(b"".join(strings), offsets_of(strings), sizes)


def random_masks(rng: np.random.Generator, n: int, size: tuple | None = None) -> list:
    """Masks of many shapes: empty, full, noise, blocks, thin lines, one pixel, wide and tall."""
    out = []
    for i in range(n):
        h, w = size or (int(rng.integers(1, 60)), int(rng.integers(1, 60)))
        kind = i % 6
        if kind == 0:
            m = rng.random((h, w)) < rng.random()
        elif kind == 1:
            m = np.zeros((h, w), bool)
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            m[y0 : y0 + rng.integers(1, h + 1), x0 : x0 + rng.integers(1, w + 1)] = True
        elif kind == 2:
            m = np.zeros((h, w), bool)
        elif kind == 3:
            m = np.ones((h, w), bool)
        elif kind == 4:
            m = np.zeros((h, w), bool)
            m[rng.integers(0, h), rng.integers(0, w)] = True
        else:
            m = np.zeros((h, w), bool)
            m[:, rng.integers(0, w)] = True
        out.append(mask_utils.encode(np.asfortranarray(m.astype(np.uint8))))
    return out


@needs_kernel
def test_valid_strings_give_the_twins_sums_and_pycocotools_boxes_and_areas():
    rles = random_masks(np.random.default_rng(0), 600)
    # long runs (several groups, negative deltas) on a big mask
    big = np.zeros((3000, 2000), np.uint8)
    big[5:2900, 100:1999] = 1
    big[1000:1001, :] = 0
    rles.append(mask_utils.encode(np.asfortranarray(big)))
    strings = [r["counts"] for r in rles]
    sizes = np.array([r["size"] for r in rles])
    problem, sums, areas, boxes = kernel(strings, sizes)
    assert problem.tolist() == _check_compressed(strings).tolist() == [0] * len(rles)
    assert sums.tolist() == _compressed_run_sums(strings).tolist() == (sizes[:, 0] * sizes[:, 1]).tolist()
    assert np.array_equal(boxes, np.asarray(mask_utils.toBbox(rles)))
    assert np.array_equal(areas, np.array([float(mask_utils.area(r)) for r in rles]))


@needs_kernel
def test_corrupt_and_random_strings_give_the_twins_codes_and_sums():
    rng = np.random.default_rng(1)
    alphabet = np.frombuffer(bytes(range(40, 120)), np.uint8)  # inside and outside '0'..'o'
    strings = [b"", b"0", b"0P", b"0!", b"P", b"o", b"oooooooo0", b"OOOOOOO0", b"\x00", b"0" * 50]
    strings += [bytes(rng.choice(alphabet, rng.integers(1, 30))) for _ in range(400)]
    low = np.frombuffer(bytes(range(48, 112)), np.uint8)  # valid characters only
    strings += [bytes(rng.choice(low, rng.integers(1, 40))) for _ in range(400)]
    sizes = np.ones((len(strings), 2), np.int64)
    problem, sums, _, boxes = kernel(strings, sizes)
    assert problem.tolist() == _check_compressed(strings).tolist()
    fine = [s for s, p in zip(strings, problem.tolist(), strict=True) if p == 0]
    assert len(fine) > 100
    assert sums[problem == 0].tolist() == _compressed_run_sums(fine).tolist()
    assert (sums == -1).any()  # runs of more than 7 groups
    # no box where the runs do not add up to the size (here 1 x 1)
    assert np.isnan(boxes[(problem != 0) | (sums != 1)]).all()


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
        cmask.summarise_compressed(b"0", np.array([0, 1]), np.zeros((2, 2), np.int64), *outputs(1))
    with pytest.raises(ValueError, match="outside the blob"):
        cmask.summarise_compressed(b"0", np.array([0, 2]), sizes, *outputs(1))
    with pytest.raises(ValueError, match="outside the blob"):
        cmask.summarise_compressed(b"00", np.array([1, 0]), sizes, *outputs(1))
    out = outputs(1)
    out[2] = out[1].view(float)
    with pytest.raises(ValueError, match="overlaps"):
        cmask.summarise_compressed(b"0", np.array([0, 1]), sizes, *out)


@pytest.mark.parametrize("counts", ["1P", "0P"])
def test_a_string_ending_inside_a_run_is_refused_for_an_empty_mask_too(counts):
    """Only the empty string is a 0 x 0 mask; pycocotools reads past the end of these."""
    empty = {"size": [0, 0], "counts": counts}
    with pytest.raises(InputError, match="ends inside a run"):
        segm_iou([empty], [{"size": [0, 0], "counts": ""}], image_size=(0, 0), mask_iou="raster")


def test_the_empty_string_is_a_0_by_0_mask():
    empty = {"size": [0, 0], "counts": ""}
    assert segm_iou([empty], [empty], image_size=(0, 0), mask_iou="raster").shape == (1, 1)


@needs_kernel
def test_pair_iou_is_pycocotools_iou_bit_for_bit():
    from deteval.geometry.raster import RasterMasks, _compiled_pair_iou

    rng = np.random.default_rng(5)
    for _ in range(150):
        size = (int(rng.integers(1, 50)), int(rng.integers(1, 50)))
        det, gt = random_masks(rng, 5, size), random_masks(rng, 4, size)
        crowd = rng.integers(0, 2, len(gt)).astype(np.uint8)
        expected = np.asarray(mask_utils.iou(det, gt, crowd)).reshape(len(det), len(gt))
        det_raster, gt_raster = RasterMasks(len(det)), RasterMasks(len(gt))
        det_raster.rle, gt_raster.rle = det, gt
        d, g = np.repeat(np.arange(len(det)), len(gt)), np.tile(np.arange(len(gt)), len(det))
        got = _compiled_pair_iou(det_raster, gt_raster, d, g, crowd[g].astype(bool)).reshape(expected.shape)
        assert got.tobytes() == expected.tobytes()


def test_pair_iou_refuses_indices_outside_the_blob():
    if cmask is None:
        pytest.skip("deteval.geometry._cmask not built")
    one = np.array([0, 2], np.int64)
    with pytest.raises(ValueError, match="outside"):
        cmask.pair_iou(
            b"11", one, b"11", one, np.array([1]), np.array([0]), np.zeros(1, np.uint8), np.zeros(1)
        )
    with pytest.raises(ValueError, match="offsets"):
        cmask.pair_iou(
            b"11",
            np.array([0, 3]),
            b"11",
            one,
            np.array([0]),
            np.array([0]),
            np.zeros(1, np.uint8),
            np.zeros(1),
        )


def generated_polygons(rng: np.random.Generator, n: int) -> list:
    """(h, w, parts) records: outside the image, self-intersecting, tiny, repeated vertices, covers."""
    records = []
    for i in range(n):
        h, w = int(rng.integers(1, 120)), int(rng.integers(1, 120))
        parts = []
        for _ in range(int(rng.integers(1, 4))):
            n_vertex = int(rng.integers(3, 12))
            kind = i % 5
            if kind == 0:  # anywhere within one image size around it; edges crossing
                p = rng.uniform(-w, 2 * w, (n_vertex, 2)) * [1, h / w]
            elif kind == 1:  # tiny
                p = rng.uniform(0, w, 2) + rng.uniform(-1.5, 1.5, (n_vertex, 2))
            elif kind == 2:  # half-pixel grid, a repeated vertex (a zero-length edge)
                p = rng.integers(0, 2 * max(w, h), (n_vertex, 2)) / 2.0
                p[1] = p[0]
            elif kind == 3:  # covers the whole image
                p = np.array([[-w, -h], [2 * w, -h], [2 * w, 2 * h], [-w, 2 * h]], float)
            else:  # star-shaped, simple
                angle = np.sort(rng.uniform(0, 2 * np.pi, n_vertex))
                radius = rng.uniform(0.5, max(1, min(w, h) / 2), n_vertex)
                p = np.c_[w / 2 + radius * np.cos(angle), h / 2 + radius * np.sin(angle)]
            parts.append(p.round(int(rng.integers(0, 4))))
        records.append((h, w, parts))
    return records


@needs_kernel
@pytest.mark.parametrize("seed", [0, 1])
def test_rasterise_is_pycocotools_frpyobjects_and_merge_byte_for_byte(seed):
    assert cmask is not None
    records = generated_polygons(np.random.default_rng(seed), 1500)
    parts = [p for _, _, ps in records for p in ps]
    point_start = np.r_[0, np.cumsum([len(p) for p in parts])].astype(np.int64)
    part_start = np.r_[0, np.cumsum([len(ps) for _, _, ps in records])].astype(np.int64)
    sizes = np.array([[h, w] for h, w, _ in records], np.int64)
    areas = np.zeros(len(records))
    got = cmask.rasterise(np.concatenate(parts), point_start, part_start, sizes, areas)
    for (h, w, ps), counts, area in zip(records, got, areas, strict=True):
        rles = mask_utils.frPyObjects([p.ravel() for p in ps], h, w)
        expected = rles[0] if len(rles) == 1 else mask_utils.merge(rles)
        assert counts == expected["counts"]
        assert area == float(mask_utils.area(expected))


def test_rasterise_refuses_bad_buffers():
    if cmask is None:
        pytest.skip("deteval.geometry._cmask not built")
    square = np.array([[0, 0], [4, 0], [4, 4]], float)
    one = np.array([0, 3], np.int64)
    size = np.array([[5, 5]], np.int64)
    with pytest.raises(ValueError, match="not finite or too large"):
        cmask.rasterise(square + np.inf, one, np.array([0, 1]), size, np.zeros(1))
    with pytest.raises(ValueError, match="part_start or sizes"):
        cmask.rasterise(square, one, np.array([0, 2]), size, np.zeros(1))
    with pytest.raises(ValueError, match="point_start"):
        cmask.rasterise(square, np.array([0, 4]), np.array([0, 1]), size, np.zeros(1))
    assert cmask.rasterise(square, one, np.array([0, 1]), size, np.zeros(1)) == [
        mask_utils.frPyObjects([square.ravel()], 5, 5)[0]["counts"]
    ]
