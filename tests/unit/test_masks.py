"""Masks: closed-form polygon IoUs, raster parity, areas, pruning, and every error message.

Exact against raster. pycocotools keeps a pixel when the polygon covers (roughly) its centre,
so each raster differs from its polygon only in a band about one pixel wide along the
boundary: the symmetric difference is at most ~P (the perimeter, in pixels). Intersection
and union then move by at most P_d + P_g each, and

    |IoU_exact - IoU_raster| <= 2 (P_d + P_g) / max(A_d, A_g)

(A the exact areas): the bound shrinks like 1 / size. ``test_exact_and_raster_agree_*``
checks it on random polygons from 3 px to 300 px, and that the observed gap does shrink.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import shapely
from pycocotools import mask as mask_utils

import deteval
from deteval.evaluate import match, score
from deteval.geometry import detection_areas, pair_mask_iou, prepare_masks, segm_iou
from deteval.mask_modes import compare_mask_modes
from deteval.masks import MAX_COORDINATE

RASTER = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
EXACT = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="exact")
STRICT = EXACT.replace(invalid_polygons="error")


def rect(x0, y0, x1, y1):
    return [x0, y0, x1, y0, x1, y1, x0, y1]


def exact(det, gt, crowd=None):
    return float(segm_iou([det], [gt], None if crowd is None else [crowd])[0, 0])


# --------------------------------------------------------------------------------------------
# Closed-form IoUs (exact mode)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("det", "gt", "expected"),
    [
        ([rect(0, 0, 10, 10)], [rect(0, 0, 10, 10)], 1.0),
        ([rect(5, 0, 15, 10)], [rect(0, 0, 10, 10)], 50 / 150),
        ([rect(2.5, 2.5, 7.5, 7.5)], [rect(0, 0, 10, 10)], 25 / 100),
        ([rect(0, 0, 10, 6)], [rect(0, 0, 10, 10)], 0.6),
        ([rect(20, 0, 30, 10)], [rect(0, 0, 10, 10)], 0.0),
        ([rect(10, 0, 20, 10)], [rect(0, 0, 10, 10)], 0.0),  # sharing an edge only
        ([rect(0.5, 0.5, 10.5, 10.5)], [rect(0, 0, 10, 10)], 90.25 / 109.75),
    ],
)
def test_squares(det, gt, expected):
    assert exact(det, gt) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    ("det", "gt", "expected"),
    [
        ([[0, 0, 10, 0, 0, 10]], [rect(0, 0, 10, 10)], 0.5),  # half of the square
        ([[0, 0, 10, 0, 0, 10]], [[10, 0, 10, 10, 0, 10]], 0.0),  # the other half
        ([[0, 0, 10, 0, 0, 10]], [[0, 0, 10, 0, 0, 10]], 1.0),
        ([[0, 0, 10, 0, 0, 10]], [[0, 0, 5, 0, 0, 5]], 12.5 / 50),  # similar, half the size
        ([[0, 0, 10, 0, 0, 10]], [[0, 0, 10, 0, 10, 10]], 25 / 75),  # crossing halves: 1/4 of 100
        ([[10, 10, 60, 10, 10, 60]], [rect(0, 0, 100, 100)], 1250 / 10000),  # docs/known-answers.md section 4
    ],
)
def test_triangles(det, gt, expected):
    assert exact(det, gt) == pytest.approx(expected, rel=1e-12, abs=1e-15)


# A square ring [0, 10]^2 minus [2, 8]^2 (area 64) written as four overlapping rectangles:
# multi-part polygons are unions, and this union has a hole.
FRAME = [rect(0, 0, 10, 2), rect(0, 8, 10, 10), rect(0, 0, 2, 10), rect(8, 0, 10, 10)]


@pytest.mark.parametrize(
    ("det", "expected"),
    [
        ([rect(0, 0, 10, 10)], 64 / 100),  # the ring inside the full square
        ([rect(2, 2, 8, 8)], 0.0),  # exactly the hole
        ([rect(1, 1, 9, 9)], 28 / 100),  # (64 - 36) / (64 + 64 - 28)
        (FRAME, 1.0),
        ([rect(0, 0, 10, 2)], 20 / 64),  # one side of the ring
    ],
)
def test_rings_with_holes(det, expected):
    assert exact(det, FRAME) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    ("det", "gt", "expected"),
    [
        ([rect(0, 0, 10, 10), rect(20, 0, 30, 10)], [rect(0, 0, 10, 10)], 0.5),
        ([rect(0, 0, 10, 10), rect(20, 0, 30, 10)], [rect(0, 0, 30, 10)], 200 / 300),
        # overlapping parts: the mask is their union (150), not the sum of their areas (200)
        ([rect(0, 0, 15, 10)], [rect(0, 0, 10, 10), rect(5, 0, 15, 10)], 1.0),
        ([rect(0, 0, 10, 10), rect(0, 0, 10, 10)], [rect(0, 0, 10, 10)], 1.0),
        # touching parts
        ([rect(0, 0, 5, 10), rect(5, 0, 10, 10)], [rect(0, 0, 10, 10)], 1.0),
        # a part filling the hole that the other parts surround
        (FRAME + [rect(2, 2, 8, 8)], [rect(0, 0, 10, 10)], 1.0),
        (FRAME + [rect(3, 3, 7, 7)], [rect(0, 0, 10, 10)], 80 / 100),
    ],
)
def test_multi_part_polygons_are_unions(det, gt, expected):
    assert exact(det, gt) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    ("det", "expected"),
    [
        ([rect(10, 10, 20, 20)], 1.0),  # inside the crowd region
        ([rect(95, 10, 105, 20)], 0.5),  # half inside: intersection / detection area
        ([rect(0, 0, 200, 100)], 0.5),  # bigger than the region
    ],
)
def test_crowd_iou_is_intersection_over_detection_area(det, expected):
    assert exact(det, [rect(0, 0, 100, 100)], crowd=True) == pytest.approx(expected, rel=1e-12)


def test_known_answer_triangle_exact_1250_raster_1225():
    """docs/known-answers.md section 4: the triangle (10,10), (60,10), (10,60) on a 100 x 100 image."""
    triangle = [[10, 10, 60, 10, 10, 60]]
    full = [rect(0, 0, 100, 100)]
    assert exact(triangle, full) == 1250 / 10000
    raster = segm_iou([triangle], [full], mask_iou="raster", image_size=(100, 100))
    assert raster[0, 0] == 1225 / 10000
    gt, dt = one_image([triangle], [triangle], width=100, height=100)
    rows = np.arange(1)
    assert detection_areas(prepare_masks(gt, dt, EXACT), rows, EXACT).tolist() == [1250.0]
    assert detection_areas(prepare_masks(gt, dt, RASTER), rows, RASTER).tolist() == [1225.0]


def test_integer_rectangles_agree_exactly():
    """Pixel-aligned rectangles cover whole pixels: exact and raster IoU are equal."""
    rng = np.random.default_rng(1)
    boxes = rng.integers(0, 40, (30, 2))
    sizes = rng.integers(1, 30, (30, 2))
    segs = [
        [rect(int(x), int(y), int(x + w), int(y + h))] for (x, y), (w, h) in zip(boxes, sizes, strict=True)
    ]
    e = segm_iou(segs, segs)
    r = segm_iou(segs, segs, mask_iou="raster", image_size=(80, 80))
    np.testing.assert_allclose(e, r, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------------------------
# Raster mode is pycocotools
# --------------------------------------------------------------------------------------------


def star(rng, cx, cy, radius, n=None):
    n = n or int(rng.integers(3, 30))
    angles = (np.arange(n) + rng.uniform(-0.3, 0.3, n)) * 2 * np.pi / n + rng.uniform(0, 6.3)
    radii = radius * rng.uniform(0.55, 1.0, n)
    return np.round(np.c_[cx + radii * np.cos(angles), cy + radii * np.sin(angles)], 2).ravel().tolist()


def pycocotools_iou(det, gt, crowd, h, w):
    d = [mask_utils.merge(mask_utils.frPyObjects(s, h, w)) for s in det]
    g = [mask_utils.merge(mask_utils.frPyObjects(s, h, w)) for s in gt]
    return np.asarray(mask_utils.iou(d, g, crowd), dtype=np.float64).reshape(len(det), len(gt))


def test_raster_iou_equals_pycocotools_for_near_and_touching_polygons():
    """Including pairs a few pixels apart, which the raster path skips by their extents."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        gt = [[star(rng, *rng.uniform(10, 90, 2), rng.uniform(0.5, 15))] for _ in range(6)]
        det = []
        for g in gt:
            xs = g[0][0::2]
            shift = max(xs) - min(xs) + rng.choice([-1.0, -0.2, 0.0, 0.4, 1.0, 1.9, 2.1, 3.9, 4.1])
            det.append([[v + shift if i % 2 == 0 else v for i, v in enumerate(g[0])]])
            det.append([star(rng, *rng.uniform(10, 90, 2), rng.uniform(0.5, 15))])
        crowd = (rng.random(len(gt)) < 0.3).astype(np.uint8)
        expected = pycocotools_iou(det, gt, crowd, 100, 120)
        ours = segm_iou(det, gt, crowd.astype(bool), mask_iou="raster", image_size=(100, 120))
        np.testing.assert_array_equal(ours, expected)
        # the same masks as compressed RLE (their pixel extents decide which pairs to skip)
        as_rle = [
            {
                "size": [100, 120],
                "counts": mask_utils.merge(mask_utils.frPyObjects(g, 100, 120))["counts"].decode(),
            }
            for g in gt
        ]
        ours = segm_iou(det, as_rle, crowd.astype(bool), image_size=(100, 120))
        np.testing.assert_array_equal(ours, expected)


def test_raster_mode_accepts_self_intersecting_polygons_as_pycocotools_does():
    bowtie = [[10, 10, 90, 90, 90, 10, 10, 90]]
    square = [rect(10, 10, 50, 90)]
    ours = segm_iou([bowtie], [square], mask_iou="raster", image_size=(100, 100))
    np.testing.assert_array_equal(ours, pycocotools_iou([bowtie], [square], [0], 100, 100))


def test_rle_masks_use_the_raster_in_exact_mode():
    h, w = 50, 60
    crowd_rle = mask_utils.merge(mask_utils.frPyObjects([rect(0, 0, 30, 30)], h, w))
    compressed = {"size": [h, w], "counts": crowd_rle["counts"].decode()}
    det = [[[0.5, 0.5, 20.3, 0.5, 0.5, 20.3]]]
    ours = segm_iou(det, [compressed], [True], image_size=(h, w))
    expected = pycocotools_iou(det, [[rect(0, 0, 30, 30)]], [1], h, w)
    np.testing.assert_array_equal(ours, expected)


# --------------------------------------------------------------------------------------------
# Exact against raster: the stated tolerance
# --------------------------------------------------------------------------------------------


def _perimeter_area(seg):
    geom = shapely.union_all([shapely.Polygon(np.reshape(p, (-1, 2))) for p in seg])
    return geom.length, geom.area


def test_exact_and_raster_agree_within_the_stated_bound():
    rng = np.random.default_rng(3)
    gaps = {}
    for radius in (3, 6, 12, 25, 50, 100, 150):
        worst = []
        for _ in range(40):
            c = rng.uniform(160, 240, 2)
            g = [star(rng, *c, radius)]
            d = [star(rng, *(c + rng.normal(0, radius * 0.15, 2)), radius * rng.uniform(0.8, 1.2))]
            if not (
                shapely.Polygon(np.reshape(g[0], (-1, 2))).is_valid
                and shapely.Polygon(np.reshape(d[0], (-1, 2))).is_valid
            ):
                continue
            e = exact(d, g)
            r = float(segm_iou([d], [g], mask_iou="raster", image_size=(400, 400))[0, 0])
            (pd, ad), (pg, ag) = _perimeter_area(d), _perimeter_area(g)
            bound = 2 * (pd + pg) / max(ad, ag)
            assert abs(e - r) <= bound, (radius, e, r, bound)
            worst.append(abs(e - r))
        gaps[radius] = float(np.mean(worst))
    # The gap shrinks with size: small objects are where the two modes disagree.
    assert gaps[3] > gaps[25] > gaps[150]
    assert gaps[150] < 0.005


# --------------------------------------------------------------------------------------------
# Evaluation-level behaviour: areas, pruning, comparison, caching
# --------------------------------------------------------------------------------------------


def one_image(gt_segs, det_segs, *, width=200, height=200, det_boxes=None, crowd=None):
    """GroundTruth and Detections (one image, one class) from segmentations."""
    anns = []
    for i, seg in enumerate(gt_segs):
        anns.append(
            {
                "id": i + 1,
                "image_id": 1,
                "category_id": 1,
                "segmentation": seg,
                "iscrowd": int(crowd[i]) if crowd else 0,
                "bbox": [0, 0, 1, 1],
                "area": 100.0,
            }
        )
    gt = deteval.load_ground_truth(
        {
            "images": [{"id": 1, "width": width, "height": height}],
            "categories": [{"id": 1, "name": "thing"}],
            "annotations": anns,
        }
    )
    dets = []
    for i, seg in enumerate(det_segs):
        rec = {"image_id": 1, "category_id": 1, "score": 1.0 - i / 100, "segmentation": seg}
        if det_boxes is not None and det_boxes[i] is not None:
            rec["bbox"] = det_boxes[i]
        dets.append(rec)
    return gt, deteval.load_detections(dets, gt)


def test_detection_area_is_decided_per_record():
    """Bbox -> w * h (pycocotools' loadRes); no bbox -> the mask's area (exact or pixels)."""
    tri = [[10, 10, 60, 10, 10, 60]]
    rle = mask_utils.merge(mask_utils.frPyObjects(tri, 100, 100))
    compressed = {"size": [100, 100], "counts": rle["counts"].decode()}
    uncompressed = {"size": [2, 2], "counts": [1, 2, 1]}
    gt, dt = one_image(
        [tri],
        [tri, tri, compressed, compressed],
        width=100,
        height=100,
        det_boxes=[[0, 0, 5, 7], None, None, [0, 0, 2, 3]],
    )
    rows = np.arange(4)
    assert detection_areas(prepare_masks(gt, dt, EXACT), rows, EXACT).tolist() == [35.0, 1250.0, 1225.0, 6.0]
    assert detection_areas(prepare_masks(gt, dt, RASTER), rows, RASTER).tolist() == [
        35.0,
        1225.0,
        1225.0,
        6.0,
    ]
    gt2, dt2 = one_image([uncompressed], [uncompressed], width=2, height=2)
    assert detection_areas(prepare_masks(gt2, dt2, EXACT), np.arange(1), EXACT).tolist() == [2.0]


def test_pruned_pairs_could_not_have_matched():
    """Pairs given 0 by the bound have an exact IoU below the lowest threshold."""
    rng = np.random.default_rng(11)
    gts = [[star(rng, *rng.uniform(20, 180, 2), rng.uniform(3, 30))] for _ in range(30)]
    dets = [[star(rng, *rng.uniform(20, 180, 2), rng.uniform(3, 30))] for _ in range(60)]
    gts = [g for g in gts if shapely.Polygon(np.reshape(g[0], (-1, 2))).is_valid]
    dets = [d for d in dets if shapely.Polygon(np.reshape(d[0], (-1, 2))).is_valid]
    gt, dt = one_image(gts, dets)
    gt_rows = np.tile(np.arange(len(gts)), len(dets))
    det_rows = np.repeat(np.arange(len(dets)), len(gts))
    crowd = np.zeros(len(gt_rows), bool)
    prepared = prepare_masks(gt, dt, EXACT)
    full = pair_mask_iou(prepared, gt_rows, det_rows, crowd, EXACT.replace(iou_thresholds=(0.0, 0.5)))
    pruned = pair_mask_iou(prepared, gt_rows, det_rows, crowd, EXACT.replace(iou_thresholds=(0.3, 0.5)))
    differs = full != pruned
    assert (full > 0).sum() > differs.sum() > 0
    assert (pruned[differs] == 0).all()
    assert (full[differs] < 0.3).all()
    np.testing.assert_array_equal(full[full >= 0.3], pruned[full >= 0.3])


def test_compare_mask_modes_reports_small_object_differences():
    from tests.crosscheck.generate_segm import generate_segm

    gt_dict, dt_list = generate_segm(5, n_images=12, result_style="polygon+bbox")
    gt = deteval.load_ground_truth(gt_dict)  # mask_modes takes values (deteval.api: paths, dicts)
    protocol = EXACT.replace(invalid_polygons="make_valid")
    comparison = compare_mask_modes(gt, deteval.load_detections(dt_list, gt), protocol)
    assert comparison.raster.protocol.mask_iou == "raster"
    assert comparison.exact.protocol.mask_iou == "exact"
    assert set(comparison.metric_difference) == set(comparison.exact.metrics)
    assert 0 < comparison.n_detections_changed <= comparison.n_changed < comparison.n_outcomes
    assert 0 < comparison.changed_by_threshold.sum() <= comparison.n_changed
    assert comparison.n_matches_changed > 0
    assert comparison.n_outcomes == comparison.exact.table.det_is_tp.size
    for name, diff in comparison.metric_difference.items():
        e, r = comparison.exact.metrics[name], comparison.raster.metrics[name]
        assert (math.isnan(diff) and (math.isnan(e) or math.isnan(r))) or diff == e - r


def test_compare_mask_modes_on_pixel_aligned_rectangles_changes_nothing():
    gt, dt = one_image(
        [[rect(0, 0, 10, 10)], [rect(30, 30, 70, 50)]],
        [[rect(0, 0, 10, 7)], [rect(30, 30, 70, 48)], [rect(31, 30, 70, 50)]],
        det_boxes=[[0, 0, 10, 7], [30, 30, 40, 18], [31, 30, 39, 20]],
    )
    comparison = compare_mask_modes(gt, dt)
    assert comparison.n_changed == 0
    assert comparison.n_matches_changed == 0
    assert all(d == 0 or math.isnan(d) for d in comparison.metric_difference.values())


def test_empty_detections_score_zero():
    gt = load_gt([rect(0, 0, 10, 10)])
    dt = deteval.load_detections([], gt)
    for protocol in (EXACT, RASTER):
        with pytest.warns(deteval.InputWarning, match="no detections"):
            result = deteval.evaluate(gt, dt, protocol=protocol)
        assert result.metrics["AP"] == 0.0


def test_prepare_masks_validates_and_keeps_everything():
    gt, dt = one_image([[rect(0, 0, 10, 10)]], [[rect(0, 0, 10, 9)], [[0, 0, 1, 1, 2, 2]]])
    with pytest.raises(deteval.InputError, match=r"detection #1 .*self-intersecting"):
        prepare_masks(gt, dt, STRICT)
    prepare_masks(gt, dt, RASTER)  # raster mode accepts the collinear polygon
    prepared = prepare_masks(gt, dt, EXACT)  # even-odd: a collinear ring encloses nothing
    assert prepared.det_masks.exact("even_odd").area.tolist() == [90.0, 0.0]
    prepared = prepare_masks(gt, dt, EXACT.replace(invalid_polygons="make_valid"))
    assert prepared.det_masks.has_exact("make_valid")
    assert prepared.gt_masks.has_exact("make_valid")
    assert prepared.is_for(gt, dt)


def test_masks_are_parsed_once_per_prepared_value(monkeypatch):
    from deteval.geometry import masks as geometry_masks

    gt, dt = one_image([[rect(0, 0, 10, 10)]], [[rect(0, 0, 10, 9)]], det_boxes=[[0, 0, 10, 9]])
    prepared = prepare_masks(gt, dt, EXACT)
    first = prepared.det_masks.masks

    def no_parsing(source):
        raise AssertionError("masks parsed again")

    monkeypatch.setattr(geometry_masks, "parse_masks", no_parsing)
    exact = score(match(gt, dt, EXACT, masks=prepared), gt, EXACT)
    raster = score(match(gt, dt, RASTER, masks=prepared), gt, RASTER)
    assert prepared.det_masks.masks is first
    monkeypatch.undo()
    np.testing.assert_equal(exact.metrics, deteval.evaluate(gt, dt, protocol=EXACT).metrics)
    np.testing.assert_equal(raster.metrics, deteval.evaluate(gt, dt, protocol=RASTER).metrics)


def test_prepared_masks_of_other_data_are_refused():
    gt, dt = one_image([[rect(0, 0, 10, 10)]], [[rect(0, 0, 10, 9)]])
    other_gt, other_dt = one_image([[rect(0, 0, 10, 10)]], [[rect(0, 0, 10, 9)]])
    prepared = prepare_masks(other_gt, other_dt, EXACT)
    with pytest.raises(
        deteval.ConfigError,
        match=r"match: `masks` were prepared from other ground "
        r"truth or detections; expected prepare_masks",
    ):
        match(gt, dt, EXACT, masks=prepared)


def test_no_module_level_mask_state():
    """Masks live in the PreparedMasks value the caller holds, not in a module cache."""
    from deteval import masks as segmentation
    from deteval.geometry import masks as geometry_masks
    from deteval.geometry import polygons, raster

    for module in (geometry_masks, polygons, raster, segmentation):
        mutable = [
            name
            for name, value in vars(module).items()
            if isinstance(value, (dict, list, set)) and not name.startswith("__")
        ]
        assert mutable == [], module.__name__


def test_geos_failure_falls_back_pair_by_pair(monkeypatch):
    """A GEOS TopologyException on the vectorized call never reaches the user."""
    real = shapely.intersection

    def fragile(a, b, **kwargs):
        if isinstance(a, np.ndarray) and not kwargs:
            raise shapely.errors.GEOSException("TopologyException: side location conflict")
        return real(a, b, **kwargs)

    monkeypatch.setattr(shapely, "intersection", fragile)
    assert exact([rect(5, 0, 15, 10)], [rect(0, 0, 10, 10)]) == pytest.approx(1 / 3)


def test_geos_failure_on_one_pair_names_the_records(monkeypatch):
    def broken(a, b, **kwargs):
        raise shapely.errors.GEOSException("TopologyException: side location conflict")

    monkeypatch.setattr(shapely, "intersection", broken)
    gt, dt = one_image([[rect(0, 0, 10, 10)]], [[rect(1, 0, 10, 10)]], det_boxes=[[1, 0, 9, 10]])
    with pytest.raises(
        deteval.InputError,
        match=r"annotation #0 \(id=1, image_id=1\) and "
        r".*detection #0 \(image_id=1\).*mask_iou: raster",
    ):
        deteval.evaluate(gt, dt, protocol=EXACT)


def test_make_valid_repairs_with_an_even_odd_fill():
    """A bow-tie becomes its two triangles; a pentagram loses its centre (as pycocotools)."""
    bowtie = [[0, 0, 10, 10, 10, 0, 0, 10]]
    iou = segm_iou([bowtie], [[rect(0, 0, 10, 10)]], invalid_polygons="make_valid")
    assert iou[0, 0] == pytest.approx(0.5)
    angles = np.pi / 2 + np.arange(5) * 4 * np.pi / 5
    pentagram = [np.c_[50 + 40 * np.cos(angles), 50 + 40 * np.sin(angles)].ravel().tolist()]
    e = segm_iou([pentagram], [[rect(0, 0, 100, 100)]], invalid_polygons="make_valid")[0, 0]
    r = segm_iou([pentagram], [[rect(0, 0, 100, 100)]], mask_iou="raster", image_size=(100, 100))[0, 0]
    assert abs(e - r) < 0.002


def test_a_ring_touching_itself_is_accepted():
    """A pinch (the ring visits a point twice) bounds an unambiguous region: no error."""
    pinch = [[0, 0, 10, 0, 5, 5, 10, 10, 0, 10, 5, 5]]
    assert segm_iou([pinch], [[rect(0, 0, 10, 10)]])[0, 0] == pytest.approx(0.5)


# --------------------------------------------------------------------------------------------
# Errors: every message
# --------------------------------------------------------------------------------------------


def load_gt(segmentation, *, width=100, height=100, n=1):
    anns = [
        {
            "id": 7 + i,
            "image_id": 3,
            "category_id": 1,
            "segmentation": segmentation,
            "iscrowd": 0,
            "bbox": [0, 0, 1, 1],
            "area": 1.0,
        }
        for i in range(n)
    ]
    image = {"id": 3}
    if width is not None:
        image.update(width=width, height=height)
    return deteval.load_ground_truth(
        {"images": [image], "categories": [{"id": 1, "name": "a"}], "annotations": anns}
    )


def evaluate_gt(segmentation, protocol=EXACT, **kwargs):
    gt = load_gt(segmentation, **kwargs)
    dt = deteval.load_detections(
        [
            {
                "image_id": 3,
                "category_id": 1,
                "score": 0.5,
                "bbox": [0, 0, 10, 10],
                "segmentation": [rect(0, 0, 10, 10)],
            }
        ],
        gt,
    )
    return deteval.evaluate(gt, dt, protocol=protocol)


@pytest.mark.parametrize(
    ("segmentation", "message"),
    [
        ("polygon", r"`segmentation` is neither a polygon list nor an RLE object; expected polygons"),
        ([], r"`segmentation` is an empty polygon list; expected at least one polygon"),
        ([1, 2, 3, 4, 5, 6], r"a polygon is not a list of numbers; .*found part 0: 1"),
        ([[0, 0, 10, "0", 0, 10]], r"a polygon coordinate is not a number; expected JSON numbers"),
        ([[0, 0, 10, True, 0, 10]], r"a polygon coordinate is not a number"),
        ([[0, 0, 10, None, 0, 10]], r"a polygon coordinate is not a number"),
        ([[0, 0, 10, 0, 0, 10, 5]], r"a polygon has an odd number of coordinates; expected x, y pairs"),
        (
            [[0, 0, 10, 0]],
            r"a polygon has fewer than 3 points; expected at least 3 points .*read"
            r"s a first polygon of 4 numbers as a box",
        ),
        ([[0, 0, 10, 0, 0, float("nan")]], r"a polygon has a NaN or infinite coordinate"),
        ([[0, 0, 10, 0, 0, float("inf")]], r"a polygon has a NaN or infinite coordinate"),
        ([[0, 0, 1e9, 0, 0, 10]], r"a polygon coordinate is beyond \+-1e\+07"),
        ([[0, 0, 10**400, 0, 0, 10]], r"a polygon has a NaN or infinite coordinate"),
        ([[0, 0, 10, 10, 0, 0, 10, 10]], r"a polygon has fewer than 3 distinct points"),
        ({"counts": [1]}, r"an RLE `segmentation` without `size` and `counts`"),
        ({"size": [10], "counts": [100]}, r"RLE `size` is not \[height, width\]"),
        ({"size": [10, -1], "counts": []}, r"RLE `size` is not \[height, width\]"),
        ({"size": [100, 100], "counts": 5}, r"RLE `counts` is neither a list nor a string"),
        ({"size": [100, 100], "counts": [5000, 5000.0]}, r"RLE `counts` has a value that is not an integer"),
        ({"size": [100, 100], "counts": [10001, -1]}, r"RLE `counts` has a negative or too large run length"),
        (
            {"size": [100, 100], "counts": [5000, 4000]},
            r"RLE run lengths do not add up to height \* width; "
            r"expected counts summing to size\[0\] \* size\[1\], "
            r"found a sum of 9000 for size \[100, 100\]",
        ),
        (
            {"size": [100, 100], "counts": "0{~"},
            r"compressed RLE `counts` is not pycocotools' encoding; "
            r"expected the string of pycocotools.mask.encode, found a "
            r"character outside '0'..'o': '0\{~'",
        ),
        ({"size": [100, 100], "counts": "0P"}, r"not pycocotools' encoding.*a string that ends inside a run"),
        (
            {"size": [100, 100], "counts": ""},
            r"not pycocotools' encoding.*a string that ends inside a run "
            r"\(or is empty\)",
        ),
    ],
)
def test_invalid_segmentations_name_the_record(segmentation, message):
    with pytest.raises(deteval.InputError, match=message) as info:
        evaluate_gt(segmentation)
    assert str(info.value).startswith("<ground truth>: annotation #0 (id=7, image_id=3): ")


@pytest.mark.parametrize(
    ("segmentation", "message"),
    [
        (
            [[0, 0, 10, 10, 10, 0, 0, 10]],
            r"a polygon is self-intersecting \(its edges cross or overlap\)"
            r".*found part 0: Self-intersection\[5 5\].*invalid_polygons: "
            r"even_odd.*--set invalid_polygons=even_odd",
        ),
        (
            [rect(0, 0, 10, 10), [0, 0, 5, 5, 10, 10]],
            r"self-intersecting.*found part 1: zero area, its "
            r"points are collinear",
        ),
    ],
)
def test_invalid_polygons_error_refuses_self_intersections(segmentation, message):
    with pytest.raises(deteval.InputError, match=message) as info:
        evaluate_gt(segmentation, protocol=STRICT)
    assert str(info.value).startswith("<ground truth>: annotation #0 (id=7, image_id=3): ")
    evaluate_gt(segmentation)  # the default, even_odd, scores them


def test_self_intersection_is_accepted_when_repair_is_asked_for():
    result = evaluate_gt(
        [[0, 0, 10, 10, 10, 0, 0, 10]], protocol=EXACT.replace(invalid_polygons="make_valid")
    )
    assert result.metrics["AP50"] > 0.99
    assert result.metrics["AP75"] == 0
    result = evaluate_gt([[0, 0, 10, 10, 10, 0, 0, 10]], protocol=RASTER)
    assert not math.isnan(result.metrics["AP"])


def test_many_bad_records_give_the_count_and_the_first_five():
    with pytest.raises(deteval.InputError) as info:
        evaluate_gt([[0, 0, 10, 0, 0, 10, 5]], n=8)
    text = str(info.value)
    assert text.startswith("<ground truth>: 8 annotations: a polygon has an odd number of coordinates")
    assert "#0 (id=7, image_id=3) part 0: [0, 0, 10, 0, 0, 10, 5]" in text
    assert "#4 (id=11, image_id=3)" in text
    assert "#5 (" not in text
    assert text.endswith("; and 3 more")


def test_missing_segmentation_on_a_record():
    gt = deteval.load_ground_truth(
        {
            "images": [{"id": 3, "width": 10, "height": 10}],
            "categories": [{"id": 1, "name": "a"}],
            "annotations": [
                {"id": 7, "image_id": 3, "category_id": 1, "iscrowd": 0, "bbox": [0, 0, 1, 1], "area": 1.0}
            ],
        }
    )
    dt = deteval.load_detections(
        [{"image_id": 3, "category_id": 1, "score": 0.5, "segmentation": [rect(0, 0, 1, 1)]}], gt
    )
    with pytest.raises(
        deteval.InputError,
        match=r"annotation #0 \(id=7, image_id=3\): no "
        r"`segmentation` \(iou_type 'segm' needs a mask for every record\)",
    ):
        deteval.evaluate(gt, dt, protocol=EXACT)


def test_detections_with_boxes_only():
    gt = load_gt([rect(0, 0, 10, 10)])
    dt = deteval.load_detections(
        [{"image_id": 3, "category_id": 1, "score": 0.5, "bbox": [0, 0, 10, 10]}], gt
    )
    with pytest.raises(
        deteval.InputError,
        match=r"<detections>: iou_type 'segm' needs a "
        r"`segmentation` on every detection; expected polygons or RLE, found boxes only",
    ):
        deteval.evaluate(gt, dt, protocol=EXACT)


def test_one_detection_without_segmentation_names_its_position_in_the_file():
    gt = load_gt([rect(0, 0, 10, 10)])
    dt = deteval.load_detections(
        [
            {"image_id": 3, "category_id": 1, "score": 0.5, "segmentation": [rect(0, 0, 10, 10)]},
            {"image_id": 3, "category_id": 1, "score": 0.4, "bbox": [0, 0, 10, 10]},
        ],
        gt,
    )
    with pytest.raises(
        deteval.InputError,
        match=r"^<detections>: detection #1 \(image_id=3\): no "
        r"`segmentation`",
    ):
        deteval.evaluate(gt, dt, protocol=RASTER)


def test_ground_truth_without_masks():
    gt = dataclasses.replace(load_gt([rect(0, 0, 10, 10)]), segmentation=None)
    dt = deteval.load_detections(
        [{"image_id": 3, "category_id": 1, "score": 0.5, "segmentation": [rect(0, 0, 10, 10)]}], gt
    )
    with pytest.raises(
        deteval.InputError,
        match=r"iou_type 'segm' needs a `segmentation`.*found "
        r"ground truth without any",
    ):
        deteval.evaluate(gt, dt, protocol=EXACT)


def test_raster_needs_the_image_size():
    with pytest.raises(
        deteval.InputError,
        match=r"^<ground truth>: 1 image\(s\) without a usable "
        r"width and height: raster mask IoU .*found image id=3 \(height=nan, width=nan\)",
    ):
        evaluate_gt([rect(0, 0, 10, 10)], protocol=RASTER, width=None)
    # exact mode does not need it
    assert evaluate_gt([rect(0, 0, 10, 10)], protocol=EXACT, width=None).metrics["AP"] > 0.99


def test_raster_refuses_polygons_far_outside_the_image():
    with pytest.raises(
        deteval.InputError,
        match=r"annotation #0 \(id=7, image_id=3\): a polygon "
        r"reaches far outside its image.*found vertex \(5000, 0\) for an image of 100 x 100",
    ):
        evaluate_gt([[0, 0, 5000, 0, 0, 10]], protocol=RASTER)
    assert evaluate_gt([[0, 0, 5000, 0, 0, 10]], protocol=EXACT).metrics["AP"] == 0.0


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "gt.json"
    path.write_text(
        json.dumps(
            {
                "images": [{"id": 3, "width": 10, "height": 10}],
                "categories": [{"id": 1, "name": "a"}],
                "annotations": [
                    {
                        "id": 7,
                        "image_id": 3,
                        "category_id": 1,
                        "iscrowd": 0,
                        "bbox": [0, 0, 1, 1],
                        "area": 1.0,
                        "segmentation": [[0, 0, 1]],
                    }
                ],
            }
        )
    )
    dt_path = tmp_path / "dt.json"
    dt_path.write_text(
        json.dumps(
            [
                {
                    "image_id": 3,
                    "category_id": 1,
                    "score": 0.5,
                    "segmentation": [[0, 0, 1, 1, 1, float(MAX_COORDINATE) * 10]],
                }
            ]
        )
    )
    with pytest.raises(
        deteval.InputError,
        match=rf"^{path}: annotation #0 \(id=7, image_id=3\): a "
        r"polygon has an odd number",
    ):
        deteval.evaluate(str(path), str(dt_path), protocol=EXACT)
    gt = deteval.load_ground_truth(
        {
            "images": [{"id": 3, "width": 10, "height": 10}],
            "categories": [{"id": 1, "name": "a"}],
            "annotations": [
                {
                    "id": 7,
                    "image_id": 3,
                    "category_id": 1,
                    "iscrowd": 0,
                    "bbox": [0, 0, 1, 1],
                    "area": 1.0,
                    "segmentation": [rect(0, 0, 1, 1)],
                }
            ],
        }
    )
    with pytest.raises(
        deteval.InputError,
        match=rf"^{dt_path}: detection #0 \(image_id=3\): a "
        r"polygon coordinate is beyond",
    ):
        deteval.evaluate(gt, str(dt_path), protocol=EXACT)


def test_fixture_answers():
    """fixtures/segm/NOTES.md: AP 0.95 exact, 0.9 raster (= pycocotools), APm 0.9 / 0.8."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "fixtures" / "segm"
    gt, dt = str(root / "gt.json"), str(root / "dt.json")
    ex = deteval.evaluate(gt, dt, protocol=EXACT).metrics
    ra = deteval.evaluate(gt, dt, protocol=RASTER).metrics
    assert (round(ex["AP"], 12), round(ex["APm"], 12), round(ex["APs"], 12)) == (0.95, 0.9, 1.0)
    assert (round(ra["AP"], 12), round(ra["APm"], 12), round(ra["APs"], 12)) == (0.9, 0.8, 1.0)
    assert math.isnan(ex["APl"])
    assert math.isnan(ra["APl"])
    from tests.support.segm import run_pycocotools_segm

    expected = run_pycocotools_segm(json.loads(Path(gt).read_text()), json.loads(Path(dt).read_text()))
    parity = deteval.get_protocol("coco-pycocotools").replace(iou_type="segm", mask_iou="raster")
    result = deteval.evaluate(gt, dt, protocol=parity)
    from tests.crosscheck.compare import assert_matches

    assert_matches(result, expected, "fixtures/segm")


# --------------------------------------------------------------------------------------------
# Self-intersecting polygons: the even-odd rule of pycocotools' rasteriser, computed exactly
# --------------------------------------------------------------------------------------------


def pentagram(cx, cy, radius):
    angles = np.pi / 2 + np.arange(5) * 4 * np.pi / 5
    return np.c_[cx + radius * np.cos(angles), cy + radius * np.sin(angles)].ravel().tolist()


def pentagram_areas(radius):
    """Hand-derived: the filled star {5/2} and its inner pentagon (circumradius R cos72 / cos36)."""
    inner = radius * math.cos(math.radians(72)) / math.cos(math.radians(36))
    pentagon = 2.5 * inner**2 * math.sin(math.radians(72))
    # The star = the pentagon + five isosceles tips of base = the pentagon's side s and apex 36 deg.
    side = 2 * inner * math.sin(math.radians(36))
    tip = 0.25 * side**2 / math.tan(math.radians(18))
    return pentagon + 5 * tip, pentagon, 5 * tip


def even_odd_area(polygon):
    from deteval.geometry.polygons import even_odd_region

    return even_odd_region(np.reshape(polygon, (-1, 2))).area


def test_even_odd_region_hand_computed_areas():
    # Figure-eight [0,0 10,10 10,0 0,10]: two triangles of 25 each (the crossing at (5, 5)).
    assert even_odd_area([0, 0, 10, 10, 10, 0, 0, 10]) == pytest.approx(50.0, rel=1e-12)
    star, pentagon, tips = pentagram_areas(40.0)
    assert star - pentagon == pytest.approx(tips, rel=1e-12)
    assert even_odd_area(pentagram(50, 50, 40)) == pytest.approx(tips, rel=1e-9)  # centre left out
    # A ring that winds twice around the same square (every point enclosed twice): nothing.
    twice = rect(0, 0, 10, 10) * 2
    assert even_odd_area(twice) == 0.0
    # A simple polygon is itself.
    assert even_odd_area(rect(0, 0, 3, 7)) == 21.0


@pytest.mark.parametrize(
    "polygon",
    [
        [0, 0, 10, 10, 10, 0, 0, 10],  # figure-eight
        pentagram(20, 20, 16),  # pentagram
        [0, 0, 12, 0, 12, 12, 4, 12, 4, 4, 8, 4, 8, 8, 0, 8],  # overlapping loop
    ],
)
def test_even_odd_region_equals_pycocotools_raster_at_high_resolution(polygon):
    scale = 50
    exact_area = even_odd_area(polygon)
    size = int(max(polygon) + 2) * scale
    rle = mask_utils.frPyObjects([[v * scale for v in polygon]], size, size)
    raster_area = float(mask_utils.area(mask_utils.merge(rle))) / scale**2
    perimeter = shapely.length(shapely.linearrings(np.reshape(polygon, (-1, 2))))
    assert abs(exact_area - raster_area) <= 2 * perimeter / scale  # a one-pixel band at most


def test_exact_mode_scores_self_intersecting_polygons_with_even_odd():
    bowtie = [[0, 0, 10, 10, 10, 0, 0, 10]]
    assert segm_iou([bowtie], [[rect(0, 0, 10, 10)]])[0, 0] == pytest.approx(0.5)
    star = [pentagram(50, 50, 40)]
    _, _, tips = pentagram_areas(40.0)
    gt_square = [rect(0, 0, 100, 100)]
    assert segm_iou([star], [gt_square])[0, 0] == pytest.approx(tips / 1e4, rel=1e-9)
    r = segm_iou([star], [gt_square], mask_iou="raster", image_size=(100, 100))[0, 0]
    assert abs(segm_iou([star], [gt_square])[0, 0] - r) < 0.002


def test_parts_of_one_object_are_united_as_pycocotools_merges_them():
    """Two overlapping parts: their union (pycocotools merges part rasters with OR), not even-odd."""
    parts = [rect(0, 0, 10, 10), rect(5, 0, 15, 10)]
    assert segm_iou([parts], [[rect(0, 0, 15, 10)]])[0, 0] == pytest.approx(1.0)
    merged = mask_utils.merge(mask_utils.frPyObjects(parts, 20, 20))
    assert float(mask_utils.area(merged)) == 150.0  # the union, as the exact value says


def test_self_intersecting_ground_truth_with_rle_detections_evaluate_and_validate_agree(tmp_path):
    """COCO val2014 has such polygons: coco (raster) and exact (even-odd) both score them."""
    bowtie = [0, 0, 40, 40, 40, 0, 0, 40]
    gt = {
        "images": [{"id": 1, "width": 60, "height": 60}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "iscrowd": 0,
                "area": 800.0,
                "bbox": [0, 0, 40, 40],
                "segmentation": [bowtie],
            }
        ],
    }
    rle = mask_utils.merge(mask_utils.frPyObjects([bowtie], 60, 60))
    dt = [
        {
            "image_id": 1,
            "category_id": 1,
            "score": 0.9,
            "segmentation": {"size": [60, 60], "counts": rle["counts"].decode()},
        }
    ]
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(dt))
    for protocol in ("coco", "coco-exact-masks"):
        p = deteval.get_protocol(protocol).replace(iou_type="segm")
        deteval.validate(str(gt_path), str(dt_path), protocols=[p])
        assert deteval.evaluate(str(gt_path), str(dt_path), protocol=p).metrics["AP"] == pytest.approx(1.0)
    from deteval.cli import main

    for args in ((), ("--mask-iou", "exact")):
        assert (
            main(["validate", "--gt", str(gt_path), "--dt", str(dt_path), "--iou-type", "segm", *args]) == 0
        )
        assert (
            main(["evaluate", "--gt", str(gt_path), "--dt", str(dt_path), "--iou-type", "segm", "-q", *args])
            == 0
        )
    strict = deteval.get_protocol("coco-exact-masks").replace(iou_type="segm", invalid_polygons="error")
    for run in (
        lambda: deteval.validate(str(gt_path), str(dt_path), protocols=[strict]),
        lambda: deteval.evaluate(str(gt_path), str(dt_path), protocol=strict),
    ):
        with pytest.raises(
            deteval.InputError,
            match=r"annotation #0 \(id=1, image_id=1\): a polygon is "
            r"self-intersecting",
        ):
            run()


def test_validate_refuses_what_raster_evaluation_refuses():
    gt = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "iscrowd": 0,
                "area": 100.0,
                "bbox": [0, 0, 10, 10],
                "segmentation": [rect(0, 0, 10, 10)],
            }
        ],
    }
    p = deteval.get_protocol("coco").replace(iou_type="segm")
    with pytest.raises(deteval.InputError, match=r"image\(s\) without a usable width and height"):
        deteval.validate(gt, protocols=[p])
    deteval.validate(gt, protocols=[p.replace(mask_iou="exact")])


# --------------------------------------------------------------------------------------------
# docs/segm.md shows what the code prints
# --------------------------------------------------------------------------------------------


def test_docs_segm_examples_print_what_the_page_shows(capsys, monkeypatch):
    import doctest
    import re
    import shlex
    import warnings
    from pathlib import Path

    from deteval.cli import main

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "segm.md").read_text(encoding="utf-8")
    monkeypatch.chdir(root)
    commands = re.findall(r"^(deteval evaluate [^#\n]*?)\s+#.*AP (\d\.\d{3})$", text, flags=re.M)
    assert len(commands) == 2
    for line, shown in commands:
        assert main([*shlex.split(line)[1:], "-q", "--no-per-class"]) == 0
        out = capsys.readouterr().out
        assert re.search(rf"\] = {re.escape(shown)}   AP$", out, flags=re.M), (line, out)
    sessions = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert sessions
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deteval.DetevalWarning)
        for i, session in enumerate(sessions):
            runner.run(parser.get_doctest(session, {}, f"segm.md#{i}", "docs/segm.md", 0))
    assert runner.summarize(verbose=False).failed == 0
