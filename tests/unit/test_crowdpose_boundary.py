"""CrowdPose and Boundary IoU, on hand-derived cases.

CrowdPose: preset ``crowdpose`` (``keypoint_area``, ``empty_keypoint_detections``,
``summary: crowdpose``). Boundary IoU: ``iou_type: boundary`` and ``boundary_dilation_ratio``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pycocotools import mask as mask_utils

import deteval
from deteval.cli import main
from deteval.errors import ConfigError, InputError
from deteval.geometry.boundary import dilation_pixels, mask_boundary
from deteval.geometry.masks import pair_mask_iou, prepare_masks

ROOT = Path(__file__).resolve().parents[2]
CROWDPOSE = ROOT / "fixtures" / "crowdpose"

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")


# -- CrowdPose ---------------------------------------------------------------------------------


def test_crowdpose_fixture_numbers_are_the_hand_derived_ones():
    """fixtures/crowdpose/NOTES.md."""
    result = deteval.evaluate(CROWDPOSE / "gt.json", CROWDPOSE / "dt.json", "crowdpose")
    m = result.metrics
    assert list(m) == ["AP", "AP50", "AP75", "AR", "AR50", "AR75", "AP(E)", "AP(M)", "AP(H)"]
    assert m["AP"] == pytest.approx(472 / 1010, rel=1e-12)
    assert m["AP50"] == pytest.approx(67 / 101, rel=1e-12)
    assert m["AP75"] == pytest.approx(34 / 101, rel=1e-12)
    assert m["AR"] == pytest.approx(0.4666666666666667, rel=1e-12)
    assert (m["AR50"], m["AR75"]) == pytest.approx((2 / 3, 1 / 3), rel=1e-12)
    assert (m["AP(E)"], m["AP(M)"], m["AP(H)"]) == (1.0, 0.4, 0.0)


def test_oks_scale_is_053_of_the_box_under_keypoint_area_box():
    """B lies 10 px from B: OKS exp(-100 / (2 * 5300 * 0.158²)) = 0.6853 with s = 0.53 * 100 * 100."""
    gt = deteval.load_ground_truth(CROWDPOSE / "gt.json")
    dt = deteval.load_detections(CROWDPOSE / "dt.json", gt)
    protocol = deteval.get_protocol("crowdpose")
    table = deteval.match(gt, dt, protocol)
    lanes = table.det_is_tp  # (10 thresholds, n_det)
    b = int(np.flatnonzero(table.det_score == 0.8)[0])
    assert lanes[:, b].tolist() == [True] * 4 + [False] * 6
    expected = np.exp(-100 / (2 * 5300 * 0.158**2))
    assert expected == pytest.approx(0.6853, abs=1e-4)
    # Under keypoint_area: area, the (deliberately wrong) `area: 1` is the scale: b matches nothing.
    table = deteval.match(gt, dt, protocol.replace(keypoint_area="area"))
    b = int(np.flatnonzero(table.det_score == 0.8)[0])
    assert not table.det_is_tp[:, b].any()


def test_results_without_a_keypoint_score_are_dropped_or_kept():
    """B' (0.7, every keypoint score 0) sits on B: kept, it is a TP where b fails (t >= 0.70)."""
    dropped = deteval.evaluate(CROWDPOSE / "gt.json", CROWDPOSE / "dt.json", "crowdpose")
    kept = deteval.evaluate(
        CROWDPOSE / "gt.json",
        CROWDPOSE / "dt.json",
        deteval.get_protocol("crowdpose").replace(empty_keypoint_detections="keep"),
    )
    assert dropped.per_class[0]["num_det"] == 3
    assert kept.per_class[0]["num_det"] == 4
    assert kept.metrics["AR75"] == pytest.approx(2 / 3)
    assert dropped.metrics["AR75"] == pytest.approx(1 / 3)


def test_crowdpose_summary_needs_the_crowd_index(tmp_path):
    gt = json.loads((CROWDPOSE / "gt.json").read_text())
    for image in gt["images"]:
        del image["crowdIndex"]
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    with pytest.raises(
        InputError, match=r"gt\.json: protocol 'crowdpose' splits AP by CrowdPose's crowd index"
    ):
        deteval.evaluate(path, CROWDPOSE / "dt.json", "crowdpose")
    # Other summaries do not read it.
    other = deteval.get_protocol("crowdpose").replace(summary="configured")
    assert deteval.evaluate(path, CROWDPOSE / "dt.json", other).metrics


def test_crowd_index_bounds_are_xtcocotools_ones(tmp_path):
    """easy: < 0.2; medium: 0.2 <= c < 0.8; hard: >= 0.8 (``item['crowdIndex'] < first`` ...)."""
    gt = json.loads((CROWDPOSE / "gt.json").read_text())
    for image, value in zip(gt["images"], (0.2, 0.8, 0.19999), strict=True):
        image["crowdIndex"] = value
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    m = deteval.evaluate(path, CROWDPOSE / "dt.json", "crowdpose").metrics
    # image 1 (a: found) is now medium, image 2 (b: found at 4 thresholds) hard, image 3 easy.
    assert (m["AP(E)"], m["AP(M)"], m["AP(H)"]) == (0.0, 1.0, 0.4)


def test_crowd_index_read_from_images():
    gt = deteval.load_ground_truth(CROWDPOSE / "gt.json")
    assert gt.image_crowd_index.tolist() == [0.1, 0.5, 0.9]
    assert deteval.load_ground_truth(ROOT / "fixtures" / "coco" / "gt.json").image_crowd_index is None


@pytest.mark.parametrize(
    ("images", "message"),
    [
        ([{"id": 1, "crowdIndex": 0.3}, {"id": 2}], r"image #1 \(id=2\): no `crowdIndex`"),
        ([{"id": 1, "crowdIndex": "0.3"}], r"image #0 \(id=1\): `crowdIndex` is not a finite number"),
        (
            [{"id": 1, "crowdIndex": float("nan")}],
            r"image #0 \(id=1\): `crowdIndex` is not a finite number.*nan",
        ),
        ([{"id": 1, "crowdIndex": None}], r"image #0 \(id=1\): `crowdIndex` is not a finite number"),
    ],
)
def test_bad_crowd_index_is_refused_naming_record_and_field(images, message):
    data = {"images": images, "categories": [{"id": 1, "name": "person"}], "annotations": []}
    with pytest.raises(InputError, match=message):
        deteval.load_ground_truth(data)


# -- Boundary IoU ------------------------------------------------------------------------------


def test_dilation_is_a_fraction_of_the_diagonal():
    assert dilation_pixels(100, 100, 0.02) == 3  # 0.02 * 141.42 = 2.83
    assert dilation_pixels(10, 10, 0.02) == 1  # 0.28: at least one pixel
    assert dilation_pixels(480, 640, 0.02) == 16  # 0.02 * 800


def test_boundary_band_of_a_square():
    """A 20 x 20 square, d = 3: the band is the square minus its 14 x 14 interior (204 px)."""
    mask = np.zeros((100, 100), dtype=bool)
    mask[10:30, 10:30] = True
    band = mask_boundary(mask, 3)
    assert band.sum() == 400 - 196
    assert not band[13:27, 13:27].any()
    assert band[10:13, 10:30].all()
    # A mask on the image border: the border counts as outside (boundary-iou-api pads with 0).
    edge = np.zeros((10, 10), dtype=bool)
    edge[:, :4] = True
    assert mask_boundary(edge, 1).sum() == 40 - 2 * 8  # all but columns 1..2 of rows 1..8


def _rle(mask: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode()}


def _square_pair(shift: int, *, crowd: int = 0):
    g = np.zeros((100, 100), dtype=bool)
    g[10:30, 10:30] = True
    d = np.roll(g, shift, axis=1)
    gt = deteval.load_ground_truth(
        {
            "images": [{"id": 1, "width": 100, "height": 100}],
            "categories": [{"id": 1, "name": "a"}],
            "annotations": [
                {
                    "id": 1,
                    "image_id": 1,
                    "category_id": 1,
                    "iscrowd": crowd,
                    "area": 400,
                    "bbox": [10, 10, 20, 20],
                    "segmentation": _rle(g),
                }
            ],
        }
    )
    dt = deteval.load_detections(
        [{"image_id": 1, "category_id": 1, "score": 1.0, "segmentation": _rle(d)}], gt
    )
    return gt, dt


def test_boundary_iou_of_shifted_squares_by_hand():
    """Two 20 x 20 squares 1 px apart in a 100 x 100 image (d = 3).

    Mask IoU 380/420; the bands (204 px each) share 6 * 19 + 14 * 4 = 170 px: Boundary IoU
    170 / 238 = 5/7; the pair's value is the smaller, 5/7.
    """
    gt, dt = _square_pair(1)
    rows = np.array([0])
    p = deteval.get_protocol("coco-boundary")
    value = pair_mask_iou(prepare_masks(gt, dt, p), rows, rows, np.array([False]), p)
    assert value.tolist() == [170 / 238]
    segm = p.replace(iou_type="segm")
    assert pair_mask_iou(prepare_masks(gt, dt, segm), rows, rows, np.array([False]), segm).tolist() == [
        380 / 420
    ]
    # A wider band (ratio 0.1: d = 14, the whole square): the boundary is the mask, 5/7 -> 380/420.
    wide = p.replace(boundary_dilation_ratio=0.1)
    assert pair_mask_iou(prepare_masks(gt, dt, wide), rows, rows, np.array([False]), wide).tolist() == [
        380 / 420
    ]


def test_crowd_ground_truth_keeps_the_mask_value():
    """Crowd: intersection over the detection's area (380 / 400), no boundary (boundary-iou-api)."""
    gt, dt = _square_pair(1, crowd=1)
    rows = np.array([0])
    p = deteval.get_protocol("coco-boundary")
    assert pair_mask_iou(prepare_masks(gt, dt, p), rows, rows, np.array([True]), p).tolist() == [380 / 400]


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, "0.02", float("nan"), True])
def test_dilation_ratio_is_checked(bad):
    with pytest.raises(ConfigError, match=r"boundary_dilation_ratio: expected a number in \(0, 1\]"):
        deteval.get_protocol("coco-boundary").replace(boundary_dilation_ratio=bad)


def test_iou_type_boundary_on_the_command_line(capsys):
    gt, dt = ROOT / "fixtures/broken/coco/segm_gt.json", ROOT / "fixtures/broken/coco/segm_dt.json"
    code = main(["evaluate", "--gt", str(gt), "--dt", str(dt), "--iou-type", "boundary", "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)["results"][0]
    assert doc["iou_type"] == "boundary"
    assert doc["config"]["iou_type"] == "boundary"
    segm = deteval.evaluate(gt, dt, deteval.get_protocol("coco").replace(iou_type="segm"))
    assert doc["metrics"]["AP"] <= segm.metrics["AP"]
