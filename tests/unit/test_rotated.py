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
from deteval.errors import ConfigError, InputError
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
    with pytest.raises(InputError, match=r"b.txt: is not a regular file; expected DOTA labelTxt lines"):
        load_ground_truth(str(root))
    (root / "labelTxt" / "b.txt").unlink() if kind != "folder" else (root / "labelTxt" / "b.txt").rmdir()
    gt = load_ground_truth(str(root))
    make(res / "Task1_ship.txt")
    with pytest.raises(
        InputError, match=r"Task1_ship.txt: is not a regular file; expected DOTA Task1 result lines"
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
