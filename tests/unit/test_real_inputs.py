"""Inputs in the shapes real tools write: identity by name, category maps, class lists, arrays.

Fixtures and hand-derived answers: fixtures/real/ANSWERS.md; rules: docs/inputs.md.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.errors import ConfigError, InputError, InputWarning
from deteval.io import load_coco_dt, load_coco_gt, load_ground_truth
from deteval.io.category_map import read_category_map
from deteval.io.voc import load_voc_dt, load_voc_gt, read_class_list
from tests import ROOT

REAL = ROOT / "fixtures" / "real"
YOLO = REAL / "yolo_numeric"
COCO = REAL / "coco_index"
VOC = REAL / "VOC2007"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- image identity ------------------------------------------------------------------------


def test_ultralytics_predictions_join_by_int_stem_not_position():
    gt = load_ground_truth(YOLO)
    assert gt.image_name == ("1.gif", "10.gif", "2.gif")
    assert not gt.has_image_ids
    dt = load_coco_dt(YOLO / "predictions_index0.json", gt)
    ids = [r["image_id"] for r in json.loads((YOLO / "predictions_index0.json").read_text())]
    assert [gt.image_name[i] for i in dt.image] == [f"{i}.gif" for i in ids]


@pytest.mark.parametrize(
    ("protocol", "metric", "value"),
    [("voc2010", "mAP", 0.875), ("coco", "AP", 0.875), ("voc2007", "mAP", 0.875)],
)
def test_ultralytics_predictions_answers(protocol, metric, value):
    result = deteval.evaluate(YOLO, YOLO / "predictions_index0.json", protocol)
    assert result.metrics[metric] == pytest.approx(value, abs=1e-12)
    assert [c["AP"] for c in result.per_class] == pytest.approx([0.75, 1.0])
    mapped = deteval.evaluate(YOLO, YOLO / "predictions.json", protocol, category_map="index1")
    np.testing.assert_equal(mapped.metrics, result.metrics)


def _numeric_yolo(tmp_path: Path, stems: list[str]) -> Path:
    root = tmp_path / "ds"
    (root / "images" / "val").mkdir(parents=True)
    (root / "labels" / "val").mkdir(parents=True)
    for k, stem in enumerate(stems):
        (root / "images" / "val" / f"{stem}.gif").write_bytes(b"GIF89a" + struct.pack("<HH", 100, 100))
        x = 0.05 + 0.07 * k
        (root / "labels" / "val" / f"{stem}.txt").write_text(f"0 {x:.2f} 0.5 0.04 0.2\n")
    (root / "data.yaml").write_text("names: [cat]\nval: images/val\n")
    return root


def test_twelve_numeric_stems_score_right_where_position_would_be_silently_wrong(tmp_path):
    """Stems 0..11: every int(stem) is also a position (0, 1, 10, 11, 2, ... in name order)."""
    stems = [str(i) for i in range(12)]
    root = _numeric_yolo(tmp_path, stems)
    gt = load_ground_truth(root)
    dets = []
    for i, stem in enumerate(gt.image_name):
        x, y, w, h = gt.box[gt.image == i][0]
        dets.append({"image_id": int(stem[:-4]), "category_id": 0, "bbox": [x, y, w, h], "score": 0.5})
    assert deteval.evaluate(root, dets, "voc2010").metrics["mAP"] == 1.0
    by_position = [dict(d, image_id=str(gt.image_name[d["image_id"]][:-4])) for d in dets]
    assert deteval.evaluate(root, by_position, "voc2010").metrics["mAP"] < 0.5  # what position gave


def test_an_int_that_is_two_stems_is_an_error(tmp_path):
    root = _numeric_yolo(tmp_path, ["1", "001", "2"])
    dets = [
        {"image_id": 1, "category_id": 0, "bbox": [1, 1, 2, 2], "score": 0.5},
        {"image_id": "001", "category_id": 0, "bbox": [1, 1, 2, 2], "score": 0.5},
    ]
    with pytest.raises(
        InputError,
        match=r"detection #0 \(image_id=1\): `image_id` names several images "
        r"\(1 is int\(stem\) of several images: '001.gif', '1.gif'\)",
    ):
        deteval.evaluate(root, dets, "voc2010")
    assert deteval.evaluate(root, dets[1:], "voc2010").metrics["mAP"] == 0.0  # a string is exact


def test_an_id_that_names_no_image_is_an_error_naming_it(tmp_path):
    root = _numeric_yolo(tmp_path, ["a", "b"])
    dets = [{"image_id": 0, "category_id": 0, "bbox": [1, 1, 2, 2], "score": 0.5}]
    with pytest.raises(
        InputError,
        match=r"detection #0 \(image_id=0\): `image_id` is not an image of the "
        r"ground truth; .*int\(stem\) for a numeric stem.*named 'a.gif', "
        r"'b.gif'",
    ):
        deteval.evaluate(root, dets, "voc2010")


def test_voc_result_ids_are_text_with_a_padding_hint(tmp_path):
    shutil.copytree(VOC, tmp_path / "VOC2007")
    results = tmp_path / "VOC2007" / "results"
    for f in results.iterdir():
        f.unlink()
    (results / "comp4_det_test_cat.txt").write_text("1 0.9 10 10 40 40\n000002 0.8 50 50 90 90\n")
    gt = load_voc_gt(tmp_path / "VOC2007", split="test")
    with pytest.raises(
        InputError,
        match=r"comp4_det_test_cat.txt:1: image id not in the ground truth; "
        r".*found '1' \('1' would match '000001' after zero-padding, but "
        r"ids are compared as text, as the devkit does\)",
    ):
        load_voc_dt(results, gt)


# -- category maps -------------------------------------------------------------------------


def test_class_indices_against_sparse_ids_are_recognised(capsys):
    code, out, err = run(
        capsys, "evaluate", "--gt", COCO / "gt.json", "--dt", COCO / "dt_index0.json", "--protocol", "voc2010"
    )
    assert (code, out) == (3, "")
    assert "look like 0-based indices of the 3 ground-truth categories in id order (ids [1, 3, 18])" in err
    assert "--category-map index0" in err
    assert "drop" not in err


@pytest.mark.parametrize(
    "category_map", ["index0", str(COCO / "category_map.yaml"), {0: "person", 1: 3, 2: "dog"}]
)
def test_category_map_scores_indices_right(category_map):
    result = deteval.evaluate(COCO / "gt.json", COCO / "dt_index0.json", "voc2010", category_map=category_map)
    assert result.metrics["mAP"] == pytest.approx(2.5 / 3)
    assert [c["AP"] for c in result.per_class] == [1.0, 0.5, 1.0]


def test_category_map_through_the_cli(capsys):
    code, out, _ = run(
        capsys,
        "evaluate",
        "--gt",
        COCO / "gt.json",
        "--dt",
        COCO / "dt_index0.json",
        "--protocol",
        "voc2010",
        "--category-map",
        "index0",
        "--format",
        "json",
    )
    assert code == 0
    assert json.loads(out)["results"][0]["metrics"]["mAP"] == pytest.approx(2.5 / 3)


def test_a_large_drop_is_refused_unless_acknowledged(capsys):
    argv = [
        "evaluate",
        "--gt",
        COCO / "gt.json",
        "--dt",
        COCO / "dt_index0.json",
        "--protocol",
        "voc2010",
        "--drop-unknown-categories",
    ]
    code, out, err = run(capsys, *argv)
    assert (code, out) == (3, "")
    assert "refusing to drop 3 of 5 detections (60.0%)" in err
    code, out, err = run(capsys, *argv, "--allow-large-drop", "--format", "json")
    assert code == 0
    assert "dropped 3 detections of categories not in the ground truth (ids [0, 2]): 3 of 5 (60.0%)" in err
    code, _, err = run(
        capsys, "evaluate", "--gt", COCO / "gt.json", "--dt", COCO / "dt_index0.json", "--allow-large-drop"
    )
    assert code == 3
    assert "--allow-large-drop: only with --drop-unknown-categories" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0: person\nx: 3\n", r"map.yaml:2: key 'x' is not a detection category id"),
        ("0: person\n0: car\n", r"map.yaml: 0: duplicate key \(lines 1 and 2\); expected each key once"),
        ("0: person\n00: car\n", r"map.yaml:2: detection id 0 is mapped twice"),
        ("0: [1, 2]\n", r"map.yaml:1: entry is not `id: id or name`"),
        ("- 1\n", r"map.yaml: expected a mapping"),
        (
            "0: !!python/name:os.system\n",
            r"map.yaml: 0: tag '!!python/name:os.system' \(line 1\) is not allowed",
        ),
        ("0: cow\n", r"map.yaml:1: 0: 'cow' is not a category name of"),
        ("0: 99\n", r"map.yaml:1: 0: 99 is not a category id of"),
    ],
)
def test_category_map_file_errors_name_the_line(tmp_path, text, message):
    path = tmp_path / "map.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        deteval.evaluate(COCO / "gt.json", COCO / "dt_index0.json", "voc2010", category_map=path)


def test_yolo_ground_truth_with_ids_that_may_be_shifted_warns(tmp_path):
    dets = [r for r in json.loads((YOLO / "predictions.json").read_text()) if r["category_id"] == 1]
    with pytest.warns(InputWarning, match=r"no detection has category_id 0 .*--category-map index1"):
        deteval.evaluate(YOLO, dets, "voc2010")


# -- VOC subsets, class lists, prefixes, protocol ------------------------------------------


def test_voc_subset_scores_a_class_without_ground_truth_as_the_devkit(capsys):
    code, out, err = run(
        capsys,
        "evaluate",
        "--gt",
        VOC,
        "--dt",
        VOC / "results",
        "--split",
        "test",
        "--result-prefix",
        "comp3_det_test_",
        "--format",
        "json",
    )
    assert code == 0, err
    result = json.loads(out)["results"][0]
    assert result["protocol"] == "voc2007"
    assert result["metrics"]["mAP"] == pytest.approx(61 / 66)
    assert [(c["name"], c["AP"]) for c in result["per_class"]] == [
        ("cat", pytest.approx(28 / 33)),
        ("dog", pytest.approx(1.0)),
        ("horse", None),
    ]
    assert "a VOC2007 root and no --protocol: scored under voc2007" in err
    assert "horse (comp3_det_test_horse.txt)" in err


def test_voc_result_prefix_chooses_a_run(capsys):
    code, _, err = run(capsys, "evaluate", "--gt", VOC, "--dt", VOC / "results", "--protocol", "voc2010")
    assert code == 3
    assert "--result-prefix" in err
    code, out, _ = run(
        capsys,
        "evaluate",
        "--gt",
        VOC,
        "--dt",
        VOC / "results",
        "--protocol",
        "voc2010",
        "--result-prefix",
        "comp4_det_test_",
        "--format",
        "json",
        "-q",
    )
    assert code == 0
    assert json.loads(out)["results"][0]["metrics"]["mAP"] == 1.0
    code, out, _ = run(
        capsys,
        "evaluate",
        "--gt",
        VOC,
        "--dt",
        VOC / "results",
        "--protocol",
        "voc2010",
        "--result-prefix",
        "comp3_det_test_",
        "--format",
        "json",
        "-q",
    )
    assert json.loads(out)["results"][0]["metrics"]["mAP"] == pytest.approx((1 / 2 + 1 / 3 + 1) / 2)


def test_voc_class_list_catches_a_typo(tmp_path, capsys):
    shutil.copytree(VOC, tmp_path / "VOC2007")
    results = tmp_path / "VOC2007" / "results"
    (results / "comp3_det_test_hrose.txt").write_text("000001 0.5 10 10 40 40\n")
    argv = ["evaluate", "--gt", tmp_path / "VOC2007", "--dt", results, "--result-prefix", "comp3_det_test_"]
    code, _, err = run(capsys, *argv)
    assert code == 3
    assert "comp3_det_test_hrose.txt" in err
    assert "--classes" in err
    code, _, err = run(capsys, *argv, "--classes", REAL / "voc_classes.txt")
    assert code == 3
    assert "1 result files of classes not in the ground truth: comp3_det_test_hrose.txt" in err
    (results / "comp3_det_test_hrose.txt").unlink()
    code, out, err = run(capsys, *argv, "--classes", "voc", "--format", "json")
    assert code == 0
    assert len(json.loads(out)["results"][0]["per_class"]) == 20


def test_class_list_file_errors(tmp_path):
    path = tmp_path / "classes.txt"
    path.write_text("cat\ndog\ncat\n")
    with pytest.raises(ConfigError, match=r"classes.txt:3: class 'cat' listed twice \(also line 1\)"):
        read_class_list(path)
    path.write_text("cat\nfat cat\n")
    with pytest.raises(ConfigError, match=r"classes.txt:2: class name 'fat cat'"):
        read_class_list(path)
    with pytest.raises(ConfigError, match=r"--classes nowhere: not 'voc' and no such file"):
        read_class_list("nowhere")


def test_voc_root_without_a_year_and_without_protocol_is_refused(capsys):
    code, out, err = run(
        capsys, "evaluate", "--gt", ROOT / "fixtures" / "voc", "--dt", ROOT / "fixtures" / "voc" / "results"
    )
    assert (code, out) == (3, "")
    assert "a VOC root and no --protocol; expected one of --protocol voc2007" in err


# -- arrays in the Python API --------------------------------------------------------------


class Tensor:
    """A stand-in for a torch tensor: only ``__array__``."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


def _gt() -> dict:
    return json.loads((COCO / "gt.json").read_text())


def _dt() -> list:
    return [
        dict(r, category_id={0: 1, 1: 3, 2: 18}[r["category_id"]])
        for r in json.loads((COCO / "dt_index0.json").read_text())
    ]


@pytest.mark.parametrize(
    "convert",
    [
        lambda r: dict(r, bbox=np.array(r["bbox"], dtype=np.float64)),
        lambda r: dict(r, bbox=np.array(r["bbox"], dtype=np.float32), score=np.float32(r["score"])),
        lambda r: dict(r, image_id=np.int64(r["image_id"]), category_id=np.int32(r["category_id"])),
        lambda r: dict(r, image_id=float(r["image_id"]), category_id=float(r["category_id"])),
        lambda r: dict(r, bbox=Tensor(r["bbox"]), score=Tensor(r["score"]), image_id=Tensor(r["image_id"])),
        lambda r: dict(r, bbox=np.array(r["bbox"]).tolist(), score=np.float64(r["score"])),
    ],
    ids=["ndarray", "float32", "int64-ids", "integral-floats", "tensor-like", "float64"],
)
def test_numpy_and_tensor_values_equal_lists(convert):
    expected = deteval.evaluate(_gt(), _dt(), "coco")
    got = deteval.evaluate(_gt(), [convert(r) for r in _dt()], "coco")
    np.testing.assert_equal(got.metrics, expected.metrics)
    np.testing.assert_array_equal(got.precision, expected.precision)


def test_numpy_ids_in_ground_truth_dicts():
    gt = _gt()
    gt["images"] = [dict(r, id=np.int64(r["id"])) for r in gt["images"]]
    gt["annotations"] = [
        dict(r, bbox=np.array(r["bbox"]), area=np.float32(r["area"]), image_id=float(r["image_id"]))
        for r in gt["annotations"]
    ]
    np.testing.assert_equal(
        deteval.evaluate(gt, _dt(), "coco").metrics, deteval.evaluate(_gt(), _dt(), "coco").metrics
    )


def test_non_integral_float_ids_are_errors_and_files_keep_json_integers(tmp_path):
    dets = _dt()
    dets[1]["image_id"] = 2.5
    with pytest.raises(
        InputError,
        match=r"detection #1 \(image_id=2.5\): `image_id` is not an integer; "
        r"expected an integer \(64-bit; a float only when it is integral\)",
    ):
        load_coco_dt(dets, load_coco_gt(_gt()))
    dets[1]["image_id"] = 2.0
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dets))
    with pytest.raises(InputError, match=re.escape("`image_id` is not an integer; expected a JSON integer")):
        load_coco_dt(path, load_coco_gt(_gt()))
    assert len(load_coco_dt(dets, load_coco_gt(_gt()))) == 5


def test_a_bbox_array_of_the_wrong_shape_is_an_error_not_a_traceback():
    dets = _dt()
    dets[0]["bbox"] = np.zeros((2, 4))
    with pytest.raises(InputError, match=r"detection #0 \(image_id=1\): `bbox` does not have 4 numbers"):
        load_coco_dt(dets, load_coco_gt(_gt()))


def test_category_map_reader():
    assert read_category_map("index0").kind == "index0"
    assert read_category_map({"1": "cat"}).table == {1: "cat"}
    with pytest.raises(ConfigError, match="the category map is empty"):
        read_category_map({})
