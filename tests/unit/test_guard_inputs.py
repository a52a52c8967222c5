"""Inputs that can be read two ways: read as the evidence says, or refused with the candidates.

Each case builds the file layout a real tool writes (an Ultralytics run folder, a VOC root with
several image sets, COCO's 91-style ids over a YOLO dataset) in a tmp folder. Rules: docs/inputs.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

import deteval
from deteval.cli import main
from deteval.errors import ConfigError, InputError

DATA = Path(__file__).resolve().parent.parent / "data"
PUBLISHED = yaml.safe_load((DATA / "coco80.yaml").read_text())

# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------


def _gif(path: Path, width: int, height: int) -> None:
    path.write_bytes(b"GIF89a" + width.to_bytes(2, "little") + height.to_bytes(2, "little"))


def _yolo_dataset(root: Path, names: list[str], labels: dict[str, list[str]], size=(100, 100)) -> Path:
    """A YOLO dataset: data.yaml, images/val/<stem>.gif, labels/val/<stem>.txt."""
    (root / "images" / "val").mkdir(parents=True)
    (root / "labels" / "val").mkdir(parents=True)
    for stem, rows in labels.items():
        _gif(root / "images" / "val" / f"{stem}.gif", *size)
        (root / "labels" / "val" / f"{stem}.txt").write_text("".join(r + "\n" for r in rows))
    (root / "data.yaml").write_text(
        yaml.safe_dump({"path": ".", "val": "images/val", "names": dict(enumerate(names))}, sort_keys=False)
    )
    return root


COCO_NAMES = PUBLISHED["names"]
#: Objects of four COCO classes on two images (YOLO indices: person 0, car 2, dog 16, chair 56).
LABELS = {
    "1": ["0 0.25 0.25 0.2 0.2", "2 0.75 0.75 0.2 0.2"],
    "2": ["16 0.25 0.75 0.2 0.2", "56 0.75 0.25 0.2 0.2"],
}
#: The same four boxes as an Ultralytics predictions.json writes them for COCO-named data: the
#: category ids are COCO's 91-style ids (person 1, car 3, dog 18, chair 62), plus a miss.
PREDICTIONS_91 = [
    {"image_id": 1, "category_id": 1, "bbox": [15.0, 15.0, 20.0, 20.0], "score": 0.9},
    {"image_id": 1, "category_id": 3, "bbox": [65.0, 65.0, 20.0, 20.0], "score": 0.8},
    {"image_id": 2, "category_id": 18, "bbox": [15.0, 65.0, 20.0, 20.0], "score": 0.7},
    {"image_id": 2, "category_id": 62, "bbox": [65.0, 15.0, 20.0, 20.0], "score": 0.6},
    {"image_id": 2, "category_id": 62, "bbox": [40.0, 40.0, 10.0, 10.0], "score": 0.5},
]


def _voc_root(root: Path, splits: dict[str, list[str]]) -> Path:
    """A VOC root: a 20x20 cat at (11, 11)-(30, 30) on every image of the splits, 100 x 100 px."""
    (root / "Annotations").mkdir(parents=True)
    (root / "ImageSets" / "Main").mkdir(parents=True)
    for name, ids in splits.items():
        (root / "ImageSets" / "Main" / f"{name}.txt").write_text("".join(i + "\n" for i in ids))
        for i in ids:
            (root / "Annotations" / f"{i}.xml").write_text(
                f"<annotation><filename>{i}.jpg</filename><size><width>100</width><height>100</height>"
                "<depth>3</depth></size><object><name>cat</name><difficult>0</difficult><bndbox>"
                "<xmin>11</xmin><ymin>11</ymin><xmax>30</xmax><ymax>30</ymax></bndbox></object></annotation>"
            )
    (root / "ImageSets" / "Main" / "cat_test.txt").write_text("")  # a classification file: no split
    return root


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# --------------------------------------------------------------------------------------------
# 1. COCO's 91-style ids over a YOLO dataset
# --------------------------------------------------------------------------------------------


def test_coco80_table_matches_the_published_lists():
    """Deteval's COCO80 against tests/data/coco80.yaml (re-typed from Ultralytics and torchvision)."""
    from deteval.io.category_map import COCO80

    published = PUBLISHED
    assert [name for _, name in COCO80] == published["names"]  # the COCO-80 order
    assert [i for i, _ in COCO80] == published["coco91_ids"]
    by_91 = published["torchvision_91"]  # index = 91-style id; "N/A" at the ten unused ids
    assert [by_91[i] for i, _ in COCO80] == published["names"]
    assert sorted(set(range(1, 91)) - {i for i, _ in COCO80}) == [
        i for i, name in enumerate(by_91) if name == "N/A"
    ]


def test_coco91_reads_both_directions():
    from deteval.io.category_map import COCO80, coco91_table, read_category_map

    gt80 = deteval.load_ground_truth(
        {
            "images": [],
            "annotations": [],
            "categories": [{"id": k, "name": n} for k, n in enumerate(COCO_NAMES)],
        }
    )
    keys, targets = coco91_table(gt80)
    assert keys.tolist() == [i for i, _ in COCO80]
    assert targets.tolist() == list(range(80))
    gt91 = deteval.load_ground_truth(
        {"images": [], "annotations": [], "categories": [{"id": i, "name": n} for i, n in COCO80[:20]]}
    )
    keys, targets = coco91_table(gt91)
    assert keys.tolist() == list(range(20))
    assert targets.tolist() == list(range(20))
    other = deteval.load_ground_truth(
        {"images": [], "annotations": [], "categories": [{"id": 5, "name": "a"}, {"id": 9, "name": "b"}]}
    )
    with pytest.raises(ConfigError, match="coco91: the categories of .* are neither contiguous"):
        coco91_table(other)
    assert read_category_map("coco91").kind == "coco91"


@pytest.fixture
def coco_named_yolo(tmp_path):
    root = _yolo_dataset(tmp_path / "ds", COCO_NAMES, LABELS)
    (tmp_path / "predictions.json").write_text(json.dumps(PREDICTIONS_91))
    return root, tmp_path / "predictions.json"


def test_coco91_ids_over_yolo_refused_naming_coco91(coco_named_yolo, capsys):
    root, predictions = coco_named_yolo
    code, out, err = _run(
        ["evaluate", "--gt", root, "--dt", predictions, "--protocol", "coco50", "-q"], capsys
    )
    assert code == 3, out
    assert "--category-map coco91: 5 of 5 on categories with objects" in err
    assert "--category-map index1: 2 of 5 on categories with objects" in err
    assert "'tv' 2, 'bicycle' 1, 'motorcycle' 1, 'sheep' 1" in err  # where the ids as written put them


def test_coco91_ids_over_yolo_scored_with_coco91(coco_named_yolo, capsys):
    root, predictions = coco_named_yolo
    code, out, err = _run(
        [
            "evaluate",
            "--gt",
            root,
            "--dt",
            predictions,
            "--protocol",
            "coco50",
            "-q",
            "--format",
            "json",
            "--category-map",
            "coco91",
        ],
        capsys,
    )
    assert code == 0, err
    per_class = json.loads(out)["results"][0]["per_class"]
    scored = {c["name"]: c["AP"] for c in per_class if c["AP"] is not None}
    assert scored == pytest.approx({"person": 1.0, "car": 1.0, "dog": 1.0, "chair": 1.0}, abs=1e-12)


def test_index1_on_coco91_ids_refused_with_counts_per_class(coco_named_yolo, capsys):
    """The map the old warning suggested moves the dog and chair detections onto horse and toilet."""
    root, predictions = coco_named_yolo
    code, out, err = _run(
        [
            "evaluate",
            "--gt",
            root,
            "--dt",
            predictions,
            "--protocol",
            "coco50",
            "-q",
            "--category-map",
            "index1",
        ],
        capsys,
    )
    assert code == 3, out
    assert "3 of 5 detections (60.0%) are read through --category-map index1 onto categories without" in err
    assert "'toilet' 2, 'horse' 1" in err
    assert "candidates: --category-map coco91: 5 of 5 on categories with objects" in err


def test_coco91_ids_above_80_name_coco91_in_the_unknown_category_error(tmp_path, capsys):
    root = _yolo_dataset(tmp_path / "ds", COCO_NAMES, LABELS)
    records = [*PREDICTIONS_91, {"image_id": 1, "category_id": 90, "bbox": [1, 1, 5, 5], "score": 0.1}]
    (tmp_path / "p.json").write_text(json.dumps(records))
    code, out, err = _run(
        ["evaluate", "--gt", root, "--dt", tmp_path / "p.json", "--protocol", "coco50", "-q"], capsys
    )
    assert code == 3, out
    assert "look like COCO's 91-style ids (1..90 with gaps)" in err
    assert "pass --category-map coco91" in err


# --------------------------------------------------------------------------------------------
# 2. Where the predictions are: run folders, labels/, predictions.json, detectron2, mmdetection
# --------------------------------------------------------------------------------------------

#: A two-class YOLO dataset: a cat on image 1, a dog on image 2 (100 x 100 px).
PETS = {"1": ["0 0.25 0.25 0.2 0.2"], "2": ["1 0.75 0.75 0.2 0.2"]}
#: Ultralytics `save_txt=True, save_conf=True` rows: the cat found, the dog missed (a cat there).
PET_ROWS = {"1": ["0 0.25 0.25 0.2 0.2 0.9"], "2": ["0 0.75 0.75 0.2 0.2 0.8"]}
#: The same predictions as `predictions.json` (older releases: category_id = class index).
PET_JSON = [
    {"image_id": 1, "category_id": 0, "bbox": [15.0, 15.0, 20.0, 20.0], "score": 0.9},
    {"image_id": 2, "category_id": 0, "bbox": [65.0, 65.0, 20.0, 20.0], "score": 0.8},
]
#: voc2010 AP: cat 1 of 2 detections right, first in score order -> AP 1.0; dog: no detection -> 0.
PET_AP = {"cat": 1.0, "dog": 0.0}


def _run_folder(folder: Path, *, labels: bool, predictions: bool) -> Path:
    """An Ultralytics `yolo val` output folder (runs/detect/val)."""
    folder.mkdir(parents=True)
    for name in ("confusion_matrix.png", "F1_curve.png", "val_batch0_pred.jpg"):
        (folder / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    if labels:
        (folder / "labels").mkdir()
        for stem, rows in PET_ROWS.items():
            (folder / "labels" / f"{stem}.txt").write_text("".join(r + "\n" for r in rows))
    if predictions:
        (folder / "predictions.json").write_text(json.dumps(PET_JSON))
    return folder


def _per_class(out: str) -> dict:
    doc = json.loads(out)
    return {c["name"]: c["AP"] for c in doc["results"][0]["per_class"]}


@pytest.mark.parametrize(
    ("labels", "predictions", "read"),
    [(True, True, "labels"), (True, False, "labels"), (False, True, "predictions.json")],
)
def test_ultralytics_run_folder_as_dt(tmp_path, capsys, labels, predictions, read):
    root = _yolo_dataset(tmp_path / "ds", ["cat", "dog"], PETS)
    run = _run_folder(tmp_path / "runs" / "detect" / "val", labels=labels, predictions=predictions)
    code, out, err = _run(
        ["evaluate", "--gt", root, "--dt", run, "--protocol", "voc2010", "-q", "--format", "json"], capsys
    )
    assert code == 0, err
    assert _per_class(out) == PET_AP
    assert json.loads(out)["inputs"]["dt_read"] == str(run / read)


def test_run_folder_without_predictions_is_exit_3_naming_where_it_looked(tmp_path, capsys):
    root = _yolo_dataset(tmp_path / "ds", ["cat", "dog"], PETS)
    run = _run_folder(tmp_path / "val", labels=False, predictions=False)
    (run / "labels").mkdir()  # save_txt on an empty run: the folder, no file
    for command in (["evaluate", "-q"], ["validate"]):
        code, out, err = _run([*command, "--gt", root, "--dt", run, "--protocol", "voc2010"], capsys)
        assert (code, out) == (3, ""), command
        assert f"{run}: no predictions found; looked for <image stem>.txt (YOLO)" in err
        assert "labels/ (Ultralytics save_txt), predictions.json (Ultralytics save_json)" in err
        assert "found F1_curve.png, confusion_matrix.png, labels, val_batch0_pred.jpg" in err


@pytest.mark.parametrize("gt_kind", ["yolo", "voc"])
def test_empty_prediction_folder_is_exit_3(tmp_path, capsys, gt_kind):
    if gt_kind == "yolo":
        root = _yolo_dataset(tmp_path / "ds", ["cat", "dog"], PETS)
    else:
        root = _voc_root(tmp_path / "VOC", {"test": ["000001"]})
    (tmp_path / "empty").mkdir()
    code, out, err = _run(
        ["evaluate", "--gt", root, "--dt", tmp_path / "empty", "-q", "--protocol", "voc2010"], capsys
    )
    assert (code, out) == (3, "")
    assert f"{tmp_path / 'empty'}: no predictions found" in err
    assert "found an empty folder" in err


def test_detectron2_output_folder(tmp_path, capsys):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(_coco_gt()))
    out_dir = tmp_path / "output" / "inference"
    out_dir.mkdir(parents=True)
    (out_dir / "coco_instances_results.json").write_text(json.dumps(COCO_DT))
    (out_dir / "instances_predictions.pth").write_bytes(b"PK\x03\x04")
    code, out, err = _run(
        ["evaluate", "--gt", gt, "--dt", out_dir, "-q", "--format", "json", "--protocol", "voc2010"], capsys
    )
    assert code == 0, err
    assert _per_class(out) == PET_AP


def test_mmdetection_bbox_and_segm_files_are_refused_listing_both(tmp_path, capsys):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(_coco_gt()))
    work = tmp_path / "work_dirs"
    work.mkdir()
    (work / "results.bbox.json").write_text(json.dumps(COCO_DT))
    (work / "results.segm.json").write_text(json.dumps(COCO_DT))
    code, out, err = _run(["evaluate", "--gt", gt, "--dt", work, "-q", "--protocol", "voc2010"], capsys)
    assert (code, out) == (3, "")
    assert (
        f"several sets of predictions: {work / 'results.bbox.json'} (coco), {work / 'results.segm.json'} (coco)"
        in err
    )
    (work / "results.segm.json").unlink()
    code, out, err = _run(
        ["evaluate", "--gt", gt, "--dt", work, "-q", "--format", "json", "--protocol", "voc2010"], capsys
    )
    assert code == 0, err
    assert _per_class(out) == PET_AP


# --------------------------------------------------------------------------------------------
# 4. YOLO txt predictions against COCO JSON ground truth
# --------------------------------------------------------------------------------------------


def _coco_gt(ids=(1, 2)) -> dict:
    """The pets of PETS as COCO JSON: images 000001.jpg / 000002.jpg (ids 7, 9), categories `ids`."""
    cat, dog = ids
    return {
        "images": [
            {"id": 7, "file_name": "val/000001.jpg", "width": 100, "height": 100},
            {"id": 9, "file_name": "val/000002.jpg", "width": 100, "height": 100},
        ],
        "categories": [{"id": cat, "name": "cat"}, {"id": dog, "name": "dog"}],
        "annotations": [
            {"id": 1, "image_id": 7, "category_id": cat, "bbox": [15, 15, 20, 20], "area": 400, "iscrowd": 0},
            {"id": 2, "image_id": 9, "category_id": dog, "bbox": [65, 65, 20, 20], "area": 400, "iscrowd": 0},
        ],
    }


COCO_DT = [
    {"image_id": 7, "category_id": 1, "bbox": [15.0, 15.0, 20.0, 20.0], "score": 0.9},
    {"image_id": 9, "category_id": 1, "bbox": [65.0, 65.0, 20.0, 20.0], "score": 0.8},
]


def _txt_predictions(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for stem, rows in PET_ROWS.items():
        (folder / f"00000{stem}.txt").write_text("".join(r + "\n" for r in rows))
    return folder


def test_yolo_txt_against_coco_json_with_index_ids(tmp_path, capsys):
    """Categories 0 and 1: the class indices are the ids; images joined by file stem."""
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(_coco_gt(ids=(0, 1))))
    dt = _txt_predictions(tmp_path / "labels")
    code, out, err = _run(
        ["evaluate", "--gt", gt, "--dt", dt, "-q", "--format", "json", "--protocol", "voc2010"], capsys
    )
    assert code == 0, err
    assert _per_class(out) == PET_AP


def test_yolo_txt_against_coco_json_with_other_ids_needs_the_map(tmp_path, capsys):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(_coco_gt(ids=(1, 2))))
    dt = _txt_predictions(tmp_path / "labels")
    code, out, err = _run(["evaluate", "--gt", gt, "--dt", dt, "-q", "--protocol", "voc2010"], capsys)
    assert (code, out) == (3, "")
    assert "YOLO prediction files hold class indices (0-based), and the categories of" in err
    assert "candidates: --category-map index0" in err
    code, out, err = _run(
        [
            "evaluate",
            "--gt",
            gt,
            "--dt",
            dt,
            "-q",
            "--format",
            "json",
            "--protocol",
            "voc2010",
            "--category-map",
            "index0",
        ],
        capsys,
    )
    assert code == 0, err
    assert _per_class(out) == PET_AP


# --------------------------------------------------------------------------------------------
# 3. VOC roots with several image sets and no --split
# --------------------------------------------------------------------------------------------

FOUR_SPLITS = {
    "train": ["000001", "000002"],
    "val": ["000003", "000004"],
    "trainval": ["000001", "000002", "000003", "000004"],
    "test": ["000005", "000006", "000007", "000008"],
}


def _voc_results(folder: Path, ids: list[str]) -> Path:
    """comp4 results finding the cat on each of ``ids`` (scores 0.9, 0.8, ...)."""
    folder.mkdir(parents=True)
    rows = [f"{i} {0.9 - 0.1 * n:.1f} 11 11 30 30\n" for n, i in enumerate(ids)]
    (folder / "comp4_det_test_cat.txt").write_text("".join(rows))
    return folder


def test_voc_split_chosen_by_the_detections_image_ids(tmp_path, capsys):
    """Results on 3 of the 4 test images: AP 0.75 on test, not 0.375 on all eight annotation files."""
    root = _voc_root(tmp_path / "VOC2007", FOUR_SPLITS)
    results = _voc_results(tmp_path / "results", ["000005", "000006", "000007"])
    argv = ["evaluate", "--gt", root, "--dt", results, "--protocol", "voc2010", "--format", "json"]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["results"][0]["metrics"]["mAP"] == pytest.approx(0.75, abs=1e-12)
    assert doc["inputs"]["split"] == "test"
    assert doc["inputs"]["images"] == 4
    assert "scored on the split 'test' (pass --split test to state it)" in err
    code, out, err = _run([*argv, "--split", "test"], capsys)  # stated: the same number, no note
    assert code == 0
    assert json.loads(out)["results"][0]["metrics"]["mAP"] == pytest.approx(0.75, abs=1e-12)
    assert "split" not in json.loads(out)["inputs"]
    assert "scored on the split" not in err


def test_voc_split_that_lists_exactly_the_detections_images(tmp_path, capsys):
    """Results on both val images fit val and trainval; val lists exactly them."""
    root = _voc_root(tmp_path / "VOC2007", FOUR_SPLITS)
    results = _voc_results(tmp_path / "results", ["000003", "000004"])
    code, out, err = _run(
        ["evaluate", "--gt", root, "--dt", results, "--protocol", "voc2010", "--format", "json"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["inputs"]["split"] == "val"


def test_voc_several_splits_that_fit_are_refused_listing_them(tmp_path, capsys):
    root = _voc_root(tmp_path / "VOC2007", FOUR_SPLITS)
    results = _voc_results(tmp_path / "results", ["000003"])
    code, out, err = _run(["evaluate", "--gt", root, "--dt", results, "--protocol", "voc2010", "-q"], capsys)
    assert (code, out) == (3, "")
    assert (
        "no split given, and ImageSets/Main has several image sets: test (4 images), train (2 images), "
        "trainval (4 images), val (2 images); the detections' 1 image ids are in each of ['trainval', 'val']"
    ) in err
    results = _voc_results(tmp_path / "across", ["000001", "000005"])
    code, out, err = _run(["evaluate", "--gt", root, "--dt", results, "--protocol", "voc2010", "-q"], capsys)
    assert (code, out) == (3, "")
    assert "the detections' 2 image ids are in no single one of them; expected --split NAME" in err


def test_voc_split_chosen_for_coco_results_too(tmp_path, capsys):
    root = _voc_root(tmp_path / "VOC2007", FOUR_SPLITS)
    records = [
        {"image_id": i, "category_id": 1, "bbox": [10.0, 10.0, 20.0, 20.0], "score": s}
        for i, s in (("000005", 0.9), ("000006", 0.8))
    ]
    (tmp_path / "dt.json").write_text(json.dumps(records))
    code, out, err = _run(
        [
            "evaluate",
            "--gt",
            root,
            "--dt",
            tmp_path / "dt.json",
            "--protocol",
            "voc2010",
            "--format",
            "json",
            "-q",
        ],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["inputs"]["split"] == "test"
    assert doc["results"][0]["metrics"]["mAP"] == pytest.approx(0.5, abs=1e-12)


# --------------------------------------------------------------------------------------------
# fixtures/real (answers in fixtures/real/ANSWERS.md) and other traps of the same kind
# --------------------------------------------------------------------------------------------

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")  # 76 COCO classes absent
def test_python_api_guards_like_the_cli():
    """deteval.evaluate looks into folders and refuses misread ids as `deteval evaluate` does."""
    gt, run = REAL / "yolo_coco80", REAL / "ultralytics_run" / "val"
    with pytest.raises(InputError, match="candidates: --category-map coco91: 5 of 5"):
        deteval.evaluate(gt, run / "predictions.json", "coco50")
    from_folder = deteval.evaluate(gt, run, "coco50")  # labels/: the dataset's own indices
    from_json = deteval.evaluate(gt, run / "predictions.json", "coco50", category_map="coco91")
    assert [c["num_det"] for c in from_folder.per_class] == [c["num_det"] for c in from_json.per_class]
    np.testing.assert_array_equal(  # nan (no ground truth) == nan
        [c["AP"] for c in from_folder.per_class], [c["AP"] for c in from_json.per_class]
    )
    assert from_folder.metrics["mAP"] == pytest.approx(1.0, abs=1e-12)


def test_real_yolo_txt_against_coco_json_answer():
    result = deteval.evaluate(
        REAL / "coco_index" / "gt.json", REAL / "coco_index" / "labels", "voc2010", category_map="index0"
    )
    assert result.metrics["mAP"] == pytest.approx(2.5 / 3, abs=1e-12)


def test_real_voc_splits_answer(capsys):
    argv = ["evaluate", "--gt", REAL / "voc_splits", "--dt", REAL / "voc_splits" / "results"]
    code, out, err = _run([*argv, "--protocol", "voc2010", "--format", "json", "-q"], capsys)
    assert code == 0, err
    assert json.loads(out)["results"][0]["metrics"]["mAP"] == pytest.approx(0.75, abs=1e-12)


def test_run_folder_labels_without_confidence_reads_predictions_json(tmp_path, capsys):
    """`save_txt=True` without `save_conf=True` writes 5 columns: predictions.json has the scores."""
    root = _yolo_dataset(tmp_path / "ds", ["cat", "dog"], PETS)
    run = _run_folder(tmp_path / "val", labels=False, predictions=True)
    (run / "labels").mkdir()
    for stem, rows in PET_ROWS.items():
        (run / "labels" / f"{stem}.txt").write_text("".join(r.rsplit(" ", 1)[0] + "\n" for r in rows))
    code, out, err = _run(
        ["evaluate", "--gt", root, "--dt", run, "--protocol", "voc2010", "-q", "--format", "json"], capsys
    )
    assert code == 0, err
    assert _per_class(out) == PET_AP
    assert json.loads(out)["inputs"]["dt_read"] == str(run / "predictions.json")


def test_yolo_prediction_file_of_a_stem_two_images_share(tmp_path, capsys):
    """COCO file names in two folders with one stem: a.txt cannot say which image it is."""
    gt = _coco_gt(ids=(0, 1))
    gt["images"].append({"id": 11, "file_name": "other/000001.png", "width": 100, "height": 100})
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    dt = _txt_predictions(tmp_path / "labels")
    code, out, err = _run(
        ["evaluate", "--gt", tmp_path / "gt.json", "--dt", dt, "-q", "--protocol", "voc2010"], capsys
    )
    assert (code, out) == (3, "")
    assert "prediction file whose stem names several images of the ground truth" in err
    assert "'val/000001.jpg', 'other/000001.png'" in err


def test_txt_folder_that_is_neither_yolo_nor_voc_against_coco_json(tmp_path, capsys):
    (tmp_path / "gt.json").write_text(json.dumps(_coco_gt()))
    (tmp_path / "dt").mkdir()
    (tmp_path / "dt" / "notes.txt").write_text("0 0.5 0.5 0.1 0.1 0.9\n")
    code, out, err = _run(["evaluate", "--gt", tmp_path / "gt.json", "--dt", tmp_path / "dt", "-q"], capsys)
    assert (code, out) == (3, "")
    assert "txt files that cannot be told apart: none named <image stem>.txt" in err


def test_a_refused_reading_is_accepted_when_stated_with_allow_large_drop(coco_named_yolo, capsys):
    root, predictions = coco_named_yolo
    argv = ["--gt", root, "--dt", predictions, "--protocol", "coco50", "--category-map", "index1"]
    code, out, err = _run(["validate", *argv], capsys)  # validate refuses what evaluate refuses
    assert (code, out) == (3, "")
    assert "are read through --category-map index1 onto categories without ground-truth objects" in err
    code, out, err = _run(["evaluate", *argv, "--allow-large-drop", "-q", "--format", "json"], capsys)
    assert code == 0, err
    scored = {c["name"]: c["AP"] for c in json.loads(out)["results"][0]["per_class"] if c["AP"] is not None}
    assert scored == pytest.approx({"person": 1.0, "car": 1.0, "dog": 0.0, "chair": 0.0}, abs=1e-12)


def test_voc_txt_that_is_no_image_set_is_not_a_candidate(tmp_path, capsys):
    root = _voc_root(tmp_path / "VOC2007", FOUR_SPLITS)
    (root / "ImageSets" / "Main" / "README.txt").write_text("made with a script, see the wiki\n")
    results = _voc_results(tmp_path / "results", ["000005"])
    code, out, err = _run(
        ["evaluate", "--gt", root, "--dt", results, "--protocol", "voc2010", "--format", "json", "-q"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["inputs"]["split"] == "test"


def test_voc_result_folder_against_coco_json(tmp_path, capsys):
    """Images by file stem, classes by the file name; 1-based inclusive corners as the devkit's."""
    (tmp_path / "gt.json").write_text(json.dumps(_coco_gt()))
    results = tmp_path / "results"
    results.mkdir()
    (results / "comp4_det_test_cat.txt").write_text("000001 0.9 16 16 35 35\n000002 0.8 66 66 85 85\n")
    code, out, err = _run(
        [
            "evaluate",
            "--gt",
            tmp_path / "gt.json",
            "--dt",
            results,
            "-q",
            "--format",
            "json",
            "--protocol",
            "voc2010",
        ],
        capsys,
    )
    assert code == 0, err
    assert _per_class(out) == PET_AP
    code, out, err = _run(
        ["validate", "--gt", tmp_path / "gt.json", "--dt", results, "--protocol", "voc2010"], capsys
    )
    assert code == 0, err


def test_coco80_indices_against_coco_ids_read_with_coco91(tmp_path, capsys):
    """COCO-80 indices (person 0, car 2, dog 16) against COCO's ids (person 1, car 3, dog 18).

    The other direction of the table; index0 cannot read dog 16 (3 categories).
    """
    gt = REAL / "coco_index" / "gt.json"
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "a.txt").write_text("0 0.2 0.3 0.2 0.4 0.9\n2 0.7 0.7 0.4 0.2 0.6\n")
    (labels / "b.txt").write_text("0 0.7 0.3 0.2 0.4 0.8\n2 0.7 0.7 0.4 0.2 0.7\n16 0.25 0.75 0.3 0.3 0.5\n")
    code, out, err = _run(["evaluate", "--gt", gt, "--dt", labels, "-q", "--protocol", "voc2010"], capsys)
    assert (code, out) == (3, "")
    assert "candidates: --category-map coco91: 5 of 5 on categories with objects; expected" in err
    code, out, err = _run(
        [
            "evaluate",
            "--gt",
            gt,
            "--dt",
            labels,
            "-q",
            "--protocol",
            "voc2010",
            "--format",
            "json",
            "--category-map",
            "coco91",
        ],
        capsys,
    )
    assert code == 0, err
    assert json.loads(out)["results"][0]["metrics"]["mAP"] == pytest.approx(2.5 / 3, abs=1e-12)
    records = [
        {"image_id": 1, "category_id": 0, "bbox": [10, 10, 20, 40], "score": 0.9},
        {"image_id": 2, "category_id": 16, "bbox": [10, 60, 30, 30], "score": 0.5},
    ]
    (tmp_path / "dt.json").write_text(json.dumps(records))
    code, out, err = _run(
        ["evaluate", "--gt", gt, "--dt", tmp_path / "dt.json", "-q", "--protocol", "voc2010"], capsys
    )
    assert (code, out) == (3, "")
    assert "look like 0-based indices of COCO's 80 classes" in err
    assert "pass --category-map coco91" in err
