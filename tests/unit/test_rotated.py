"""Rotated boxes: geometry by hand, the DOTA loaders (fixture and hostile files), the Evaluator.

The numbers of ``fixtures/dota`` are derived in ``fixtures/dota/NOTES.md``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.errors import ConfigError, InputError, InputWarning
from deteval.evaluator import Evaluator
from deteval.geometry.rotated import (
    corners_from_xywhr,
    is_convex,
    pair_polygon_iou,
    pair_probiou,
    polygon_area,
    xywhr_from_corners,
)
from deteval.io import load_detections, load_ground_truth

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "dota"


#: How the one reading policy names each special file (deteval._safe_read.files).
SPECIAL = {"fifo": r"a FIFO \(named pipe\)", "device": "a character device", "folder": "a folder"}


def _iou(det, gt, crowd=False):
    return pair_polygon_iou(
        np.array([det], float),
        np.array([gt], float),
        np.array([crowd]),
        det_rows=np.array([0]),
        gt_rows=np.array([0]),
    )[0]


SQUARE = [0, 0, 10, 0, 10, 10, 0, 10]


# -- geometry by hand ---------------------------------------------------------------------------
def test_shifted_squares():
    assert _iou([5, 0, 15, 0, 15, 10, 5, 10], SQUARE) == pytest.approx(50 / 150, abs=1e-15)


def test_square_and_its_45_degree_turn_is_the_octagon():
    # Two equal squares with one centre, one turned by 45 degrees: their intersection is the
    # regular octagon of area 2 (sqrt 2 - 1) * side**2; IoU = (sqrt 2 - 1) / (2 - sqrt 2) ... by hand
    turned = corners_from_xywhr(np.array([[5.0, 5.0, 10.0, 10.0, math.pi / 4]]))[0]
    inter = 2 * (math.sqrt(2) - 1) * 100
    assert _iou(turned, SQUARE) == pytest.approx(inter / (200 - inter), abs=1e-12)


def test_winding_and_starting_corner_change_nothing():
    cw = [0, 0, 0, 10, 10, 10, 10, 0]
    rolled = [10, 10, 0, 10, 0, 0, 10, 0]
    assert _iou(cw, SQUARE) == 1.0
    assert _iou(rolled, SQUARE) == 1.0


def test_touching_and_disjoint_are_zero_and_degenerate_is_zero():
    assert _iou([10, 0, 20, 0, 20, 10, 10, 10], SQUARE) == 0.0
    assert _iou([50, 50, 60, 50, 60, 60, 50, 60], SQUARE) == 0.0
    assert _iou([0, 0, 10, 0, 10, 0, 0, 0], SQUARE) == 0.0  # a segment
    assert _iou([0, 0, 10, 0, 10, 0, 0, 0], [0, 0, 10, 0, 10, 0, 0, 0]) == 0.0  # empty union


def test_angle_wrap_and_swapped_sides_are_the_same_rectangle():
    box = np.array([[30.0, 20.0, 16.0, 4.0, 0.3]])
    same = [
        [30.0, 20.0, 16.0, 4.0, 0.3 + math.pi],
        [30.0, 20.0, 4.0, 16.0, 0.3 + math.pi / 2],
        [30.0, 20.0, 16.0, 4.0, 0.3 - math.pi],
    ]
    for other in same:
        assert _iou(corners_from_xywhr(np.array([other]))[0], corners_from_xywhr(box)[0]) == pytest.approx(
            1, abs=1e-12
        )


def test_crowd_pairs_use_the_detection_area():
    inside = [2, 2, 4, 2, 4, 4, 2, 4]
    assert _iou(inside, SQUARE, crowd=True) == 1.0
    assert _iou(inside, SQUARE) == pytest.approx(4 / 100)


def test_non_convex_quadrilateral_is_exact():
    dart = [0, 0, 10, 0, 5, 2, 0, 10]  # a reflex corner at (5, 2)
    assert not is_convex(np.array([dart], float))[0]
    area = polygon_area(np.array([dart], float))[0]
    assert _iou(dart, SQUARE) == pytest.approx(area / 100, abs=1e-12)


def test_self_intersecting_quadrilateral_is_refused_naming_the_row():
    bow = [0, 0, 10, 10, 10, 0, 0, 10]
    with pytest.raises(InputError, match=r"row 0.*self-intersecting.*clockwise or counter-clockwise"):
        _iou(bow, SQUARE)


def test_min_area_rectangle_of_a_rectangle_is_itself():
    box = np.array([[3.0, 4.0, 10.0, 2.0, 0.4]])
    got = xywhr_from_corners(corners_from_xywhr(box))
    np.testing.assert_allclose(got, box, atol=1e-12)


def test_probiou_is_one_minus_the_hellinger_distance():
    box = np.array([[0.0, 0.0, 2.0, 2.0, 0.0]])
    # identical boxes: Bhattacharyya distance 0, clamped to eps: 1 - sqrt(1 - exp(-1e-7) + 1e-7)
    expected = 1 - math.sqrt(1 - math.exp(-1e-7) + 1e-7)
    assert pair_probiou(box, box, det_rows=np.array([0]), gt_rows=np.array([0]))[0] == pytest.approx(
        expected, abs=1e-15
    )


# -- protocols ------------------------------------------------------------------------------------
def test_probiou_needs_xywhr():
    gt = load_ground_truth(str(FIXTURE))
    dt = load_detections(str(FIXTURE / "results"), gt)
    with pytest.raises(ConfigError, match="rotated_iou 'probiou'.*expected rotated_box: xywhr"):
        deteval.evaluate(gt, dt, deteval.get_protocol("dota").replace(rotated_iou="probiou"))


def test_rotated_protocol_on_upright_input_is_refused(tmp_path):
    gt = {
        "images": [{"id": 1}],
        "categories": [{"id": 1}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 5, 5], "area": 25, "iscrowd": 0}
        ],
    }
    dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 5, 5], "score": 0.5}]
    with pytest.raises(
        InputError, match="upright boxes only.*iou_type: bbox scores the rotated boxes' envelopes"
    ):
        deteval.evaluate(gt, dt, "coco-rotated")


# -- the fixture --------------------------------------------------------------------------------
def test_dota_fixture_numbers_are_the_hand_derived_ones():
    result = deteval.evaluate(str(FIXTURE), str(FIXTURE / "results"), "dota")
    ap = {c["name"]: c["AP"] for c in result.per_class}
    assert ap["plane"] == pytest.approx(2 / 3, abs=1e-15)
    assert ap["ship"] == 0.0
    assert result.metrics["mAP"] == pytest.approx(1 / 3, abs=1e-15)
    with pytest.warns(InputWarning, match="scores their axis-aligned envelopes"):
        envelope = deteval.evaluate(
            str(FIXTURE), str(FIXTURE / "results"), deteval.get_protocol("dota").replace(iou_type="bbox")
        )
    assert {c["name"]: c["AP"] for c in envelope.per_class}["ship"] == pytest.approx(1.0)
    assert envelope.metrics["mAP"] == pytest.approx(5 / 6)


def test_dota_fixture_loader_columns():
    gt = load_ground_truth(str(FIXTURE))
    assert gt.category_name == ("plane", "ship")
    assert gt.image_name == ("P0001", "P0002")
    assert gt.is_difficult.tolist() == [False, True, False, False]
    assert gt.area.tolist() == [100.0, 200.0, 200.0, 100.0]
    assert gt.box[1].tolist() == [10.0, 0.0, 30.0, 20.0]  # the diamond's envelope


def test_compare_explain_attributes_the_envelope_step(tmp_path, capsys):
    env = tmp_path / "env.yaml"
    env.write_text("extends: dota\nname: dota-envelope\niou_type: bbox\n")
    code = main(
        [
            "compare",
            "--gt",
            str(FIXTURE),
            "--dt",
            str(FIXTURE / "results"),
            "--protocol",
            "dota",
            "--protocol",
            str(env),
            "--explain",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "IoU type/masks  +0.5000" in out


def test_analyze_refuses_rotated_protocols(capsys):
    code = main(["analyze", "--gt", str(FIXTURE), "--dt", str(FIXTURE / "results"), "--protocol", "dota"])
    assert code == 3
    assert "iou_type 'rotated' is not available" in capsys.readouterr().err


# -- hostile files ------------------------------------------------------------------------------
def _root(tmp_path, labels: dict, results: dict | None = None):
    root = tmp_path / "dota"
    (root / "labelTxt").mkdir(parents=True)
    for name, text in labels.items():
        (root / "labelTxt" / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    res = tmp_path / "results"
    res.mkdir()
    for name, text in (results or {}).items():
        (res / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return root, res


GOOD = "0 0 10 0 10 10 0 10 plane 0\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0 0 10 0 10 10 0 plane\n", r"a.txt:1: wrong number of fields; expected 9 or 10 fields"),
        ("0 0 10 0 10 10 0 10 plane 0 extra\n", r"a.txt:1: wrong number of fields"),
        (
            "0 0 10 0 nan 10 0 10 plane 0\n",
            r"a.txt:1: a value that is not a finite number in the 8 coordinates",
        ),
        ("0 0 10 0 10 10 0 inf plane 0\n", r"a.txt:1: a value that is not a finite number"),
        ("0 0 10 0 10 10 0 10 plane 2\n", r"a.txt:1: `difficult` is not 0 or 1"),
        (GOOD + "0 0 10 0 10\n", r"a.txt:2: wrong number of fields"),
        (b"0 0 10 0 10 10 0 10 pl\xffane 0\n", r"a.txt:1: not UTF-8 text"),
    ],
)
def test_bad_label_lines_name_file_line_and_field(tmp_path, text, message):
    root, _ = _root(tmp_path, {"a.txt": text})
    with pytest.raises(InputError, match=message):
        load_ground_truth(str(root))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a 0.9 0 0 10 0 10 10 0\n", r"Task1_plane.txt:1: wrong number of fields; expected 10 fields"),
        (
            "a nan 0 0 10 0 10 10 0 10\n",
            r"Task1_plane.txt:1: a value that is not a finite number in the score",
        ),
        ("zz 0.9 0 0 10 0 10 10 0 10\n", r"Task1_plane.txt:1: image not in the ground truth.*'zz'"),
        (b"a 0.9 0 0 10 0 10 10 0 1\xfe\n", r"Task1_plane.txt:1: not UTF-8"),
    ],
)
def test_bad_result_lines_name_file_line_and_field(tmp_path, text, message):
    root, res = _root(tmp_path, {"a.txt": GOOD}, {"Task1_plane.txt": text})
    gt = load_ground_truth(str(root))
    with pytest.raises(InputError, match=message):
        load_detections(str(res), gt)


def test_result_file_of_an_unknown_class(tmp_path):
    root, res = _root(tmp_path, {"a.txt": GOOD}, {"Task1_ship.txt": "a 0.9 0 0 10 0 10 10 0 10\n"})
    with pytest.raises(
        InputError, match=r"Task1_ship.txt: result file of a class the ground truth does not have.*'ship'"
    ):
        load_detections(str(res), load_ground_truth(str(root)))


def test_empty_label_folder_and_empty_results(tmp_path):
    root, res = _root(tmp_path, {})
    with pytest.raises(InputError, match="no .txt label files"):
        load_ground_truth(str(root))
    root2, res2 = _root(tmp_path / "x", {"a.txt": GOOD})
    with pytest.raises(InputError, match=r"no predictions found; looked for .*Task1_<class>.txt \(DOTA\)"):
        load_detections(str(res2), load_ground_truth(str(root2)))


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_special_files_where_label_or_result_files_are_expected(tmp_path, kind):
    root, res = _root(tmp_path, {"a.txt": GOOD}, {"Task1_plane.txt": "a 0.9 0 0 10 0 10 10 0 10\n"})

    def make(path: Path) -> None:
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "device":
            os.mknod(path, 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 3))  # like /dev/null
        else:
            path.mkdir()

    make(root / "labelTxt" / "b.txt")
    with pytest.raises(
        InputError,
        match=rf"b.txt: is {SPECIAL[kind]}, not a regular file; expected DOTA labelTxt lines",
    ):
        load_ground_truth(str(root))
    (root / "labelTxt" / "b.txt").unlink() if kind != "folder" else (root / "labelTxt" / "b.txt").rmdir()
    gt = load_ground_truth(str(root))
    make(res / "Task1_ship.txt")
    with pytest.raises(
        InputError,
        match=rf"Task1_ship.txt: is {SPECIAL[kind]}, not a regular file; expected DOTA Task1 result lines",
    ):
        load_detections(str(res), gt)


def test_bad_input_exits_3_on_the_command_line(tmp_path, capsys):
    root, res = _root(tmp_path, {"a.txt": "0 0 10 0 10 10 0 plane\n"}, {"Task1_plane.txt": ""})
    code = main(["evaluate", "--gt", str(root), "--dt", str(res), "--protocol", "dota"])
    assert code == 3
    assert "a.txt:1: wrong number of fields" in capsys.readouterr().err


# -- the Evaluator ------------------------------------------------------------------------------
def test_evaluator_xywhr_and_polygon4_agree_with_the_files():
    gt = load_ground_truth(str(FIXTURE))
    dt = load_detections(str(FIXTURE / "results"), gt)
    ev = Evaluator("dota", box_format="polygon4", class_ids=[1, 2])
    preds, targets = [], []
    for i in range(gt.n_images):
        g, d = gt.image == i, dt.image == i
        preds.append({"boxes": dt.rotated[d], "scores": dt.score[d], "labels": dt.category[d] + 1})
        targets.append({"boxes": gt.rotated[g], "labels": gt.category[g] + 1})
    ev.update(preds, targets)
    # the Evaluator has no difficult flag: B counts, and the result on it is a TP
    result = ev.compute()
    assert result.per_class[0]["num_gt"] == 3


def test_evaluator_rejects_wrong_widths_and_formats():
    with pytest.raises(
        ConfigError, match=r"box_format must be one of \('xywhr', 'polygon4'\) for iou_type 'rotated'"
    ):
        Evaluator("dota", box_format="xyxy")
    ev = Evaluator("ultralytics-obb", box_format="xywhr")
    with pytest.raises(InputError, match=r"`boxes` has shape \(1, 4\); expected \(1, 5\)"):
        ev.update(
            [{"boxes": [[0, 0, 1, 1]], "scores": [0.5], "labels": [0]}],
            [{"boxes": [[0, 0, 1, 1, 0]], "labels": [0]}],
        )
    with pytest.raises(InputError, match="negative width or height"):
        ev.update(
            [{"boxes": [[0, 0, -1, 1, 0]], "scores": [0.5], "labels": [0]}],
            [{"boxes": [[0, 0, 1, 1, 0]], "labels": [0]}],
        )
    with pytest.raises(InputError, match="expected finite numbers"):
        ev.update(
            [{"boxes": [[0, 0, 1, 1, np.nan]], "scores": [0.5], "labels": [0]}],
            [{"boxes": [[0, 0, 1, 1, 0]], "labels": [0]}],
        )


def test_result_json_names_the_rotated_fields(capsys):
    code = main(
        [
            "evaluate",
            "--gt",
            str(FIXTURE),
            "--dt",
            str(FIXTURE / "results"),
            "--protocol",
            "dota",
            "--format",
            "json",
        ]
    )
    assert code == 0
    config = json.loads(capsys.readouterr().out)["results"][0]["config"]
    assert config["iou_type"] == "rotated"
    assert "rotated_box" not in config  # at its default: sparse (older results keep their bytes)


# -- Ultralytics OBB txt ------------------------------------------------------------------------
YOLO_OBB = Path(__file__).resolve().parents[2] / "fixtures" / "yolo_obb"


def test_yolo_obb_fixture_numbers_are_the_hand_derived_ones():
    gt = load_ground_truth(str(YOLO_OBB))
    assert gt.rotated is not None
    assert gt.rotated.tolist()[2] == [10.0, 50.0, 50.0, 50.0, 50.0, 70.0, 10.0, 70.0]  # x by 200, y by 100
    np.testing.assert_allclose(gt.area, [400.0, 400.0, 800.0])
    result = deteval.evaluate(str(YOLO_OBB), str(YOLO_OBB / "predictions"), "ultralytics-obb")
    assert [c["AP"] for c in result.per_class] == [pytest.approx(0.995, abs=1e-12), 0.0]
    assert result.metrics["mAP50"] == pytest.approx(0.4975, abs=1e-12)
    assert result.metrics["mAP50-95"] == pytest.approx(0.4975, abs=1e-12)
    dota = deteval.evaluate(str(YOLO_OBB), str(YOLO_OBB / "predictions"), "dota")
    assert dota.metrics["mAP"] == pytest.approx(0.5, abs=1e-15)


def _obb_dataset(tmp_path, label: bytes | str, pred: bytes | str | None = None):
    root = tmp_path / "ds"
    (root / "images" / "val").mkdir(parents=True)
    (root / "labels" / "val").mkdir(parents=True)
    (root / "images" / "val" / "a.gif").write_bytes(b"GIF89a" + bytes([100, 0, 100, 0]))
    (root / "data.yaml").write_text("names: [plane]\nval: images/val\n")
    (root / "labels" / "val" / "a.txt").write_bytes(label if isinstance(label, bytes) else label.encode())
    preds = tmp_path / "preds"
    preds.mkdir()
    if pred is not None:
        (preds / "a.txt").write_bytes(pred if isinstance(pred, bytes) else pred.encode())
    return root, preds


OBB_ROW = "0 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.3\n"


@pytest.mark.parametrize(
    ("label", "message"),
    [
        (OBB_ROW + "0 0.1 0.1 0.3 0.1 0.3 0.3 0.1\n", r"a.txt:2: wrong number of fields; expected 9 fields"),
        (OBB_ROW + "0 0.1 0.1 0.3 0.1 0.3 0.3 0.1 nan\n", r"a.txt:2: a value that is not a finite number"),
        (OBB_ROW + "0 0.1 0.1 1.3 0.1 0.3 0.3 0.1 0.3\n", r"a.txt:2: a coordinate outside \[0, 1\]"),
        (OBB_ROW + "7 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.3\n", r"a.txt:2: class id not in the dataset's names"),
        ((OBB_ROW + "0 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.\xff3\n").encode("latin-1"), r"a.txt:2: not UTF-8"),
    ],
)
def test_bad_obb_label_rows_name_file_line_and_field(tmp_path, label, message):
    root, _ = _obb_dataset(tmp_path, label)
    with pytest.raises(InputError, match=message):
        load_ground_truth(str(root))


@pytest.mark.parametrize(
    ("pred", "message"),
    [
        ("0 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.3\n", r"a.txt:1: wrong number of fields; expected 10 fields"),
        ("0 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.3 inf\n", r"a.txt:1: a value that is not a finite number"),
        ("3 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.3 0.5\n", r"a.txt:1: class id not in the dataset's names"),
    ],
)
def test_bad_obb_prediction_rows(tmp_path, pred, message):
    root, preds = _obb_dataset(tmp_path, OBB_ROW, pred)
    gt = load_ground_truth(str(root))
    with pytest.raises(InputError, match=message):
        load_detections(str(preds), gt)


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_special_files_in_obb_prediction_folder(tmp_path, kind):
    root, preds = _obb_dataset(tmp_path, OBB_ROW, "0 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.3 0.5\n")
    gt = load_ground_truth(str(root))
    path = preds / "b.txt"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        os.mknod(path, 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 3))
    else:
        path.mkdir()
    with pytest.raises(
        InputError,
        match=rf"b.txt: is {SPECIAL[kind]}, not a regular file; expected Ultralytics OBB prediction rows",
    ):
        load_detections(str(preds), gt)


# -- COCO JSON obb --------------------------------------------------------------------------------
def _coco(obb_gt, obb_dt, *, bbox=None):
    ann = {"id": 1, "image_id": 1, "category_id": 1, "area": 200.0, "iscrowd": 0}
    if obb_gt is not None:
        ann["obb"] = obb_gt
    if bbox is not None:
        ann["bbox"] = bbox
    gt = {"images": [{"id": 1, "width": 100, "height": 100}], "categories": [{"id": 1}], "annotations": [ann]}
    det = {"image_id": 1, "category_id": 1, "score": 0.9, "obb": obb_dt}
    return gt, [det]


def test_coco_obb_is_read_with_its_envelope():
    gt, dt = _coco([50.0, 50.0, 20.0, 10.0, math.pi / 2], [50.0, 50.0, 10.0, 20.0, 0.0])
    g = load_ground_truth(gt)
    np.testing.assert_allclose(g.box, [[45.0, 40.0, 10.0, 20.0]], atol=1e-12)  # turned by 90 degrees
    result = deteval.evaluate(gt, dt, "coco-rotated")
    assert result.metrics["AP50"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("gt_obb", "bbox", "message"),
    [
        ([50, 50, 20, 10], None, r"annotation #0 .*`obb` is not 5 finite numbers"),
        ([50, 50, 20, float("nan"), 0], None, r"`obb` is not 5 finite numbers"),
        ([50, 50, -20, 10, 0], None, r"`obb` has a negative width or height"),
        ([50, 50, 20, 10, "0"], None, r"`obb` is not 5 finite numbers"),
        (None, [50, 50, 20, 10, 30], r"`bbox` has 5 numbers: a rotated box whose angle unit cannot be told"),
    ],
)
def test_bad_coco_obb_is_refused_naming_record_and_field(gt_obb, bbox, message):
    gt, _ = _coco(gt_obb, [50, 50, 20, 10, 0], bbox=bbox)
    with pytest.raises(InputError, match=message):
        load_ground_truth(gt)


def test_coco_obb_on_some_records_only(tmp_path):
    gt, dt = _coco([50.0, 50.0, 20.0, 10.0, 0.0], [50.0, 50.0, 20.0, 10.0, 0.0])
    dt.append({"image_id": 1, "category_id": 1, "score": 0.5, "bbox": [0, 0, 5, 5]})
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dt))
    with pytest.raises(InputError, match=r"dt.json: detection #1 .*no `obb`, where other records have one"):
        load_detections(str(path), load_ground_truth(gt))


def test_coco_obb_as_numpy_arrays_in_the_python_api():
    gt, dt = _coco(
        np.array([50.0, 50.0, 20.0, 10.0, 0.0]), np.array([50.0, 50.0, 20.0, 10.0, 0.0], np.float32)
    )
    assert deteval.evaluate(gt, dt, "coco-rotated").metrics["AP50"] == pytest.approx(1.0)


def test_polygon_iou_equals_shapely_on_random_and_near_parallel_pairs():
    shapely = pytest.importorskip("shapely")
    rng = np.random.default_rng(11)
    n = 1500
    boxes = np.column_stack([rng.uniform(0, 50, (n, 2)), rng.uniform(0.5, 30, (n, 2)), rng.uniform(-4, 4, n)])
    other = boxes + np.column_stack(
        [rng.normal(0, 3, (n, 2)), rng.normal(0, 2, (n, 2)), rng.normal(0, 0.3, n)]
    )
    other[:300, 4] = boxes[:300, 4] + 1e-7  # near-parallel edges
    other[:300, :4] = boxes[:300, :4]
    other[:, 2:4] = np.abs(other[:, 2:4]) + 0.1
    a, b = corners_from_xywhr(boxes), corners_from_xywhr(other)
    rows = np.arange(n)
    ours = pair_polygon_iou(a, b, np.zeros(n, bool), det_rows=rows, gt_rows=rows)
    pa = shapely.polygons(a.reshape(n, 4, 2))
    pb = shapely.polygons(b.reshape(n, 4, 2))
    inter = shapely.area(shapely.intersection(pa, pb))
    want = inter / (shapely.area(pa) + shapely.area(pb) - inter)
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-9)
    # symmetric
    np.testing.assert_allclose(
        ours, pair_polygon_iou(b, a, np.zeros(n, bool), det_rows=rows, gt_rows=rows), atol=1e-12
    )


@pytest.mark.usefixtures("figures_unless_fast")  # files and text, not pixels
def test_plots_and_report_of_a_rotated_protocol(tmp_path):
    pytest.importorskip("matplotlib")
    args = ["--gt", str(FIXTURE), "--dt", str(FIXTURE / "results"), "--protocol", "dota", "-q"]
    assert main(["plot", *args, "--out", str(tmp_path / "plots")]) == 0
    assert (tmp_path / "plots" / "pr_curves.svg").is_file()
    assert main(["report", *args, "--out", str(tmp_path / "run.html")]) == 0
    assert "dota" in (tmp_path / "run.html").read_text()


def test_without_protocol_rotated_inputs_are_scored_as_their_tool_does(capsys):
    code = main(["evaluate", "--gt", str(FIXTURE), "--dt", str(FIXTURE / "results"), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["results"][0]["protocol"] == "dota"
    assert "a DOTA root and no --protocol: scored under dota" in err
    code = main(
        ["evaluate", "--gt", str(YOLO_OBB), "--dt", str(YOLO_OBB / "predictions"), "--format", "json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["results"][0]["protocol"] == "ultralytics-obb"
    assert "an Ultralytics OBB dataset and no --protocol: scored under ultralytics-obb" in err


def test_rotated_ground_truth_under_an_upright_protocol_says_it_scores_the_envelopes():
    """COCO `obb` records scored under `coco` (the default for a COCO JSON): the envelopes' AP, said.

    A box turned by 45 degrees against the same box upright: IoU 1 between the envelopes, not
    between the boxes; the result must not pass that off silently as the rotated score.
    """
    gt, dt = _coco([50.0, 50.0, 20.0, 10.0, math.pi / 4], [50.0, 50.0, 20.0, 10.0, 0.0])
    dt[0]["bbox"] = [40.0, 45.0, 20.0, 10.0]
    with pytest.warns(
        InputWarning, match="axis-aligned envelopes; for the rotated boxes' IoU use --protocol coco-rotated"
    ):
        result = deteval.evaluate(gt, dt, "coco")
    assert any("axis-aligned envelopes" in w for w in result.warnings), result.warnings
    rotated = deteval.evaluate(gt, dt, "coco-rotated")  # no warning (warnings are errors here)
    assert not any("envelopes" in w for w in rotated.warnings)
