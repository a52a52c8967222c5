"""The ``openimages-challenge`` preset on its fixture (hand-derived answers), and its bad inputs.

fixtures/openimages/NOTES.md derives every number asserted here.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest

from deteval.api.openimages import challenge_inputs, load_challenge
from deteval.api.scoring import evaluate
from deteval.cli import main
from deteval.errors import ConfigError, InputError
from deteval.evaluate import match
from deteval.io.openimages import read_boxes, read_hierarchy, read_image_labels, read_predictions
from deteval.openimages import build_hierarchy
from deteval.protocol import resolve_protocol
from tests import ROOT
from tests.reference import slow_oid_challenge as twin

FIXTURE = ROOT / "fixtures" / "openimages"
CAT, VEHICLE, DOG, ANIMAL, CAR = "/m/01yrx", "/m/07yv9", "/m/0bt9lr", "/m/0jbk", "/m/0k4j"
CHALLENGE_AP = {CAT: 1.0, DOG: 1.0, ANIMAL: 0.5 + 0.5 * 2 / 3, CAR: 1 / 3, VEHICLE: 0.5}
PLAIN_AP = {CAT: 0.5, DOG: 0.5, CAR: 1 / 3}


def _ap(result) -> dict:
    return {
        n: float(result.ap[0, k, 0, -1])
        for k, n in enumerate(result.category_names)
        if result.ap[0, k, 0, -1] >= 0
    }


def _quiet_evaluate(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(*args, **kwargs)


@pytest.mark.parametrize("submission", ["submission.csv", "submission_kaggle.csv"])
def test_fixture_hand_derived_answers(submission):
    result = _quiet_evaluate(
        FIXTURE / "boxes.csv",
        FIXTURE / submission,
        "openimages-challenge",
        image_labels=FIXTURE / "labels.csv",
        hierarchy=FIXTURE / "hierarchy.json",
    )
    assert _ap(result) == pytest.approx(CHALLENGE_AP, abs=1e-12)
    assert result.metrics["mAP"] == pytest.approx(11 / 15, abs=1e-12)


def test_fixture_without_the_rules_is_the_plain_preset():
    result = _quiet_evaluate(FIXTURE / "boxes.csv", FIXTURE / "submission.csv", "openimages")
    assert _ap(result) == pytest.approx(PLAIN_AP, abs=1e-12)
    assert result.metrics["mAP"] == pytest.approx(4 / 9, abs=1e-12)


def test_fixture_as_coco_json_gives_the_same_numbers():
    result = _quiet_evaluate(
        FIXTURE / "coco_gt.json",
        FIXTURE / "coco_dt.json",
        "openimages-challenge",
        image_labels=FIXTURE / "coco_gt.json",
        hierarchy=FIXTURE / "hierarchy.json",
    )
    assert _ap(result) == pytest.approx(CHALLENGE_AP, abs=1e-12)


def test_fixture_twin_agrees():
    def rows(name):
        with open(FIXTURE / name, newline="") as f:
            return list(csv.DictReader(f))

    boxes = [{**r, **{k: float(r[k]) for k in ("XMin", "XMax", "YMin", "YMax")}} for r in rows("boxes.csv")]
    preds = [
        {**r, **{k: float(r[k]) for k in ("Score", "XMin", "YMin", "XMax", "YMax")}}
        for r in rows("submission.csv")
    ]
    tree = json.loads((FIXTURE / "hierarchy.json").read_text())
    ap, m_ap = twin.evaluate(
        boxes, rows("labels.csv"), preds, [CAT, VEHICLE, DOG, ANIMAL, CAR], hierarchy=tree
    )
    assert ap == pytest.approx(CHALLENGE_AP, abs=1e-12)
    assert m_ap == pytest.approx(11 / 15, abs=1e-12)


def test_cli_prints_the_fixture_answers(capsys):
    code = main(
        [
            "evaluate",
            "--gt", str(FIXTURE / "boxes.csv"),
            "--dt", str(FIXTURE / "submission.csv"),
            "--protocol", "openimages-challenge",
            "--image-labels", str(FIXTURE / "labels.csv"),
            "--hierarchy", str(FIXTURE / "hierarchy.json"),
            "--format", "json",
        ]
    )  # fmt: skip
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["results"][0]["metrics"]["mAP"] == pytest.approx(11 / 15, abs=1e-12)
    assert doc["results"][0]["config"]["hierarchy_expansion"] == "ground_truth_and_detections"
    assert doc["results"][0]["config"]["image_level_labels"] == "verified"


# -- the rules themselves -------------------------------------------------------------------------


def test_hierarchy_ancestors_and_descendants_with_a_shared_child():
    h = build_hierarchy(
        {
            "LabelName": "root",
            "Subcategory": [
                {
                    "LabelName": "a",
                    "Subcategory": [{"LabelName": "x", "Subcategory": [{"LabelName": "leaf"}]}],
                },
                {"LabelName": "b", "Subcategory": [{"LabelName": "leaf"}]},
            ],
        }
    )
    assert h.ancestors["leaf"] == ("x", "a", "b")
    assert h.descendants["a"] == ("x", "leaf")
    assert "root" not in h.ancestors
    assert sorted(h.ancestors["leaf"]) == sorted(twin.build_plain_hierarchy(
        {"LabelName": "root", "Subcategory": [
            {"LabelName": "a", "Subcategory": [{"LabelName": "x", "Subcategory": [{"LabelName": "leaf"}]}]},
            {"LabelName": "b", "Subcategory": [{"LabelName": "leaf"}]}]}, skip_root=True)[1]["leaf"])  # fmt: skip


def test_negative_label_expands_to_descendants_and_drops_their_detections():
    gt, dt = load_challenge(
        FIXTURE / "boxes.csv", FIXTURE / "submission.csv", image_labels=FIXTURE / "labels.csv"
    )
    out_gt, out_dt = challenge_inputs(
        gt,
        dt,
        resolve_protocol("openimages-challenge"),
        image_labels=FIXTURE / "labels.csv",
        hierarchy=FIXTURE / "hierarchy.json",
    )
    names = out_gt.category_name
    kept = {(out_gt.image_name[i], names[c]) for i, c in zip(out_dt.image.tolist(), out_dt.category.tolist())}
    assert ("img2", CAR) in kept  # Car verified absent through Vehicle -: scored (a false positive)
    assert ("img1", DOG) not in kept  # Dog not verified on img1: dropped
    assert ("img3", CAT) not in kept
    assert ("img3", ANIMAL) not in kept
    assert ("img1", VEHICLE) not in kept
    assert len(out_gt) == 6
    assert int(out_gt.is_group_of.sum()) == 2


def test_matching_refuses_ground_truth_the_rules_were_not_applied_to():
    gt, dt = load_challenge(
        FIXTURE / "boxes.csv", FIXTURE / "submission.csv", image_labels=FIXTURE / "labels.csv"
    )
    with pytest.raises(
        ConfigError,
        match=r"hierarchy_expansion=ground_truth_and_detections, image_level_labels=verified not applied",
    ):
        match(gt, dt, resolve_protocol("openimages-challenge"))


def test_protocol_without_side_files_is_an_input_error():
    with pytest.raises(InputError, match=r"needs a class hierarchy; pass --hierarchy FILE"):
        evaluate(
            FIXTURE / "boxes.csv",
            FIXTURE / "submission.csv",
            "openimages-challenge",
            image_labels=FIXTURE / "labels.csv",
        )
    with pytest.raises(InputError, match=r"needs the image-level labels; pass --image-labels FILE"):
        evaluate(
            FIXTURE / "boxes.csv",
            FIXTURE / "submission.csv",
            "openimages-challenge",
            hierarchy=FIXTURE / "hierarchy.json",
        )


def test_side_files_refused_by_a_protocol_that_does_not_read_them(capsys):
    with pytest.raises(ConfigError, match=r"--hierarchy given, but no protocol of this run \(coco\)"):
        evaluate(
            FIXTURE / "coco_gt.json", FIXTURE / "coco_dt.json", "coco", hierarchy=FIXTURE / "hierarchy.json"
        )
    code = main(
        ["evaluate", "--gt", str(FIXTURE / "coco_gt.json"), "--dt", str(FIXTURE / "coco_dt.json"),
         "--protocol", "voc2010", "--image-labels", str(FIXTURE / "labels.csv")]
    )  # fmt: skip
    assert code == 3
    assert "--image-labels given, but no protocol of this run (voc2010)" in capsys.readouterr().err


def test_bootstrap_is_refused_under_the_rules(capsys):
    code = main(
        ["evaluate", "--gt", str(FIXTURE / "boxes.csv"), "--dt", str(FIXTURE / "submission.csv"),
         "--protocol", "openimages-challenge", "--image-labels", str(FIXTURE / "labels.csv"),
         "--hierarchy", str(FIXTURE / "hierarchy.json"), "--bootstrap", "50"]
    )  # fmt: skip
    assert code == 3
    assert "--bootstrap: not available with Open Images label rules" in capsys.readouterr().err


# -- hostile files --------------------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    for name in ("boxes.csv", "labels.csv", "submission.csv", "hierarchy.json"):
        shutil.copy(FIXTURE / name, tmp_path / name)
    return tmp_path


def _run(tmp_path: Path, capsys) -> tuple[int, str]:
    code = main(
        ["evaluate", "--gt", str(tmp_path / "boxes.csv"), "--dt", str(tmp_path / "submission.csv"),
         "--protocol", "openimages-challenge", "--image-labels", str(tmp_path / "labels.csv"),
         "--hierarchy", str(tmp_path / "hierarchy.json")]
    )  # fmt: skip
    return code, capsys.readouterr().err


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


HOSTILE = [
    pytest.param("boxes.csv", "img3,xclick,/m/0k4j,1,0.2,0.6,0.2,0.6,0,0,0,0,0", "img3,xclick,/m/0k4j,1,0.2,0.6",
                 r"boxes.csv:4: 6 cells; expected 13 as the header has", id="truncated-line"),
    pytest.param("boxes.csv", "0.1,0.5,0.1,0.5", "nan,0.5,0.1,0.5",
                 r"boxes.csv:2: column XMin: expected a finite number, found 'nan'", id="nan-coordinate"),
    pytest.param("boxes.csv", "0.1,0.5,0.1,0.5", "0.5,0.1,0.1,0.5",
                 r"boxes.csv:2: box XMin 0.5 XMax 0.1 .*expected XMin <= XMax", id="xmin-after-xmax"),
    pytest.param("boxes.csv", "0.0,1.0,0.0,0.5,0,0,1,0,0", "0.0,1.0,0.0,0.5,0,0,-1,0,0",
                 r"boxes.csv:3: column IsGroupOf: expected 0 or 1, found '-1' \(Open Images writes -1", id="group-of-unknown"),
    pytest.param("boxes.csv", "ImageID,Source,LabelName", "ImageId,Source,LabelName",
                 r"boxes.csv:1: header has no column 'ImageID'", id="missing-column"),
    pytest.param("boxes.csv", "/m/0k4j,1,0.2", "/m/zzzz,1,0.2",
                 r"1 classes of boxes or detections not in the hierarchy .*'/m/zzzz'", id="unknown-box-label"),
    pytest.param("labels.csv", "img1,verification,/m/0k4j,0", "img1,verification,/m/0k4j,2",
                 r"labels.csv:3: column Confidence: expected 0 or 1, found '2'", id="label-confidence-2"),
    pytest.param("labels.csv", "img2,verification,/m/07yv9,0", "img2,verification,/m/nope,0",
                 r"1 image-level labels not in the hierarchy .*'/m/nope'", id="unknown-image-label"),
    pytest.param("submission.csv", "img3,/m/01yrx,0.95", "img9,/m/01yrx,0.95",
                 r"submission.csv: 1 detections on images the ground truth .* does not have \(first: img9 \(line 9\)\)", id="unknown-image"),
    pytest.param("submission.csv", "img3,/m/01yrx,0.95", "img3,/m/nope,0.95",
                 r"submission.csv: 1 detections of classes the ground truth and hierarchy do not have \(first: /m/nope \(line 9\)\)", id="unknown-class"),
    pytest.param("submission.csv", "img3,/m/01yrx,0.95", "img3,/m/01yrx,inf",
                 r"submission.csv:9: column Score: expected a finite number, found 'inf'", id="infinite-score"),
    pytest.param("hierarchy.json", '{"LabelName": "/m/0k4j"}', '{"LabelName": "/m/0k4j", "Subcategory": [{"LabelName": "/m/07yv9"}]}',
                 r"hierarchy cycle: '/m/07yv9' is its own ancestor \(/m/0bl9f > /m/07yv9 > /m/0k4j > /m/07yv9\)", id="hierarchy-cycle"),
    pytest.param("hierarchy.json", '"Subcategory": [{"LabelName": "/m/0k4j"}]', '"Subcategory": {"LabelName": "/m/0k4j"}',
                 r"hierarchy node '/m/07yv9': Subcategory must be a list, found dict", id="hierarchy-shape"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "old", "new", "message"), HOSTILE)
def test_hostile_file_is_exit_3_naming_file_line_and_field(tmp_path, capsys, name, old, new, message):
    folder = _copy(tmp_path)
    _edit(folder / name, old, new)
    code, err = _run(folder, capsys)
    assert code == 3, err
    assert name in err
    assert __import__("re").search(message, err), err


def test_non_utf8_file(tmp_path, capsys):
    folder = _copy(tmp_path)
    raw = (folder / "labels.csv").read_bytes().replace(b"verification", b"verif\xe9cation", 1)
    (folder / "labels.csv").write_bytes(raw)
    code, err = _run(folder, capsys)
    assert code == 3
    assert "labels.csv:2: not UTF-8 text (byte 0xe9)" in err


def test_kaggle_prediction_string_of_the_wrong_length(tmp_path):
    path = tmp_path / "sub.csv"
    path.write_text("ImageId,PredictionString\nimg1,/m/01yrx 0.9 0.1 0.1 0.5\n")
    gt = read_boxes(FIXTURE / "boxes.csv")
    with pytest.raises(
        InputError, match=r"sub.csv:2: column PredictionString: 5 values; expected groups of 6"
    ):
        read_predictions(path, gt)


def test_empty_and_zero_size_submissions(tmp_path):
    gt = read_boxes(FIXTURE / "boxes.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match=r"empty.csv: empty file; expected a submission CSV"):
        read_predictions(tmp_path / "empty.csv", gt)
    (tmp_path / "flat.csv").write_text(
        "ImageID,LabelName,Score,XMin,YMin,XMax,YMax\nimg1,/m/01yrx,0.9,0.1,0.1,0.1,0.5\n"
    )
    dt = read_predictions(tmp_path / "flat.csv", gt)
    assert len(dt) == 0  # the TF API's _remove_invalid_boxes
    assert dt.warnings == (
        f"{tmp_path / 'flat.csv'}: 1 detections with zero width or height dropped, as the TF API's _remove_invalid_boxes does",
    )


def test_device_node_and_fifo_are_refused_without_reading(tmp_path):
    device = tmp_path / "zero.csv"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("making device nodes needs root (CAP_MKNOD)")
    with pytest.raises(
        InputError,
        match=r"zero.csv: is a character device, not a regular file; expected an Open Images boxes CSV",
    ):
        read_boxes(device)
    fifo = tmp_path / "labels.csv"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    with pytest.raises(
        InputError,
        match=r"labels.csv: is a FIFO \(named pipe\), not a regular file; expected an image-level labels CSV",
    ):
        read_image_labels(fifo)
    hier = tmp_path / "h.json"
    os.mkfifo(hier)
    with pytest.raises(
        InputError,
        match=r"h.json: is a FIFO \(named pipe\), not a regular file; expected the class hierarchy JSON",
    ):
        read_hierarchy(hier)


def test_coco_labels_of_unknown_category(tmp_path):
    doc = json.loads((FIXTURE / "coco_gt.json").read_text())
    doc["images"][0]["neg_labels"] = [99]
    (tmp_path / "gt.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"images\[0\] \(id 1\): `neg_labels` names category id 99"):
        read_image_labels(tmp_path / "gt.json")
    doc["images"][0]["neg_labels"] = "5"
    (tmp_path / "gt.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"`neg_labels`: expected a list of category ids, found '5'"):
        read_image_labels(tmp_path / "gt.json")


def test_labels_of_an_image_without_ground_truth_are_refused(tmp_path):
    gt = read_boxes(FIXTURE / "boxes.csv")
    (tmp_path / "labels.csv").write_text("ImageID,Source,LabelName,Confidence\nimgX,v,/m/01yrx,1\n")
    labels = read_image_labels(tmp_path / "labels.csv")
    from deteval.openimages import apply_challenge_rules

    with pytest.raises(
        InputError,
        match=r"1 image-level labels of images the ground truth .* does not have \(first: imgX \(row 1\)\)",
    ):
        apply_challenge_rules(
            gt, None, hierarchy=read_hierarchy(FIXTURE / "hierarchy.json"), image_labels=labels
        )


def test_inputs_are_not_mutated():
    gt, dt = load_challenge(
        FIXTURE / "boxes.csv", FIXTURE / "submission.csv", image_labels=FIXTURE / "labels.csv"
    )
    before = (gt.box.copy(), gt.category.copy(), dt.box.copy(), dt.category.copy())
    challenge_inputs(
        gt,
        dt,
        resolve_protocol("openimages-challenge"),
        image_labels=FIXTURE / "labels.csv",
        hierarchy=FIXTURE / "hierarchy.json",
    )
    for a, b in zip(before, (gt.box, gt.category, dt.box, dt.category)):
        assert np.array_equal(a, b)
    assert gt.label_rules == ()


@pytest.mark.parametrize("command", ["analyze", "compare"])
def test_commands_that_do_not_apply_the_rules_refuse_them(capsys, command):
    argv = [command, "--gt", str(FIXTURE / "boxes.csv"), "--dt", str(FIXTURE / "submission.csv"),
            "--protocol", "openimages-challenge"]  # fmt: skip
    if command == "compare":
        argv += ["--protocol", "openimages"]
    assert main(argv) == 3
    assert "image_level_labels=verified not applied to the ground truth" in capsys.readouterr().err
