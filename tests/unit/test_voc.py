"""PASCAL VOC and YOLO inputs: known answers through files, fixtures, every error message, safe XML.

Known answers come from docs/known-answers.md sections 1 and 2, written as VOC XML and
result files and scored through the whole pipeline (loader, matching, accumulation).
"""

from __future__ import annotations

import json
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.errors import InputError
from deteval.io import load_detections, load_ground_truth
from deteval.io.voc import detect_prefix, load_voc_dt, load_voc_gt, parse_xml
from deteval.io.yolo import image_size, load_yolo_dt, load_yolo_gt
from tests.crosscheck.generate_voc import VocDataset, write_voc

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


# ------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------


def _ranked_list(outcomes: str, n_gt: int, *, name: str = "person") -> VocDataset:
    """One image, ``n_gt`` objects; detections in score order, TP = the next object's exact box."""
    gts = [((20 * k + 1, 1, 20 * k + 10, 10), False) for k in range(n_gt)]
    dets, next_gt = [], 0
    for rank, outcome in enumerate(outcomes):
        score = 0.99 - 0.01 * rank
        if outcome == "1":
            dets.append(("img", score, gts[next_gt][0]))
            next_gt += 1
        else:
            dets.append(("img", score, (400, 400, 410, 410 + rank)))
    objects = {"img": [{"name": name, "box": b, "difficult": d} for b, d in gts]}
    return VocDataset(
        classes=[name], image_ids=["img"], sizes={"img": (500, 500)}, objects=objects, detections={name: dets}
    )


def _evaluate(tmp_path, data: VocDataset, protocol: str):
    root, results = write_voc(tmp_path / protocol, data)
    return deteval.evaluate(root, results, protocol=protocol)


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _obj(name="car", box=(1, 1, 10, 10), difficult="0", extra=""):
    diff = "" if difficult is None else f"<difficult>{difficult}</difficult>"
    x1, y1, x2, y2 = box
    return (
        f"<object><name>{name}</name>{diff}<bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"
        f"<xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox>{extra}</object>"
    )


def _ann(*objects, size="<size><width>100</width><height>100</height></size>"):
    return f"<annotation>{size}{''.join(objects)}</annotation>"


def _voc_root(tmp_path, annotations: dict, split: list | None = None) -> Path:
    root = tmp_path / "voc"
    for image_id, text in annotations.items():
        _write(root / "Annotations" / f"{image_id}.xml", text)
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    if split is not None:
        _write(root / "ImageSets" / "Main" / "test.txt", "".join(f"{i}\n" for i in split))
    return root


def _simple_root(tmp_path) -> Path:
    return _voc_root(
        tmp_path,
        {"a": _ann(_obj("car"), _obj("dog", (5, 5, 50, 50))), "b": _ann(_obj("car", (2, 2, 20, 20)))},
    )


def _message(excinfo) -> str:
    return str(excinfo.value)


# ------------------------------------------------------------------------------------------
# docs/known-answers.md section 1: one ranked list, three protocols
# ------------------------------------------------------------------------------------------


def test_known_answers_one_ranked_list(tmp_path):
    data = _ranked_list("1100011001", 5)
    assert _evaluate(tmp_path, data, "voc2007").per_class[0]["AP"] == pytest.approx(0.7532467532, abs=1e-10)
    assert _evaluate(tmp_path, data, "voc2010").per_class[0]["AP"] == pytest.approx(0.7285714286, abs=1e-10)
    # COCO's 101-point interpolation at the single threshold 0.5 (VOC data under a COCO protocol)
    assert _evaluate(tmp_path, data, "coco50").per_class[0]["AP"] == pytest.approx(0.7312588402, abs=1e-10)
    result = _evaluate(tmp_path, data, "voc2007-pyfrcnn")
    assert result.per_class[0]["AP"] == pytest.approx(0.7532467532, abs=1e-10)
    assert result.per_class[0]["num_gt"] == 5
    assert result.per_class[0]["num_det"] == 10


@pytest.mark.parametrize(
    ("outcomes", "n_gt", "voc2007", "voc2010", "coco101"),
    [
        ("1101001010", 10, 0.4271284271, 0.3876984127, 0.3937608047),
        ("1111111", 10, 0.6363636364, 0.7, 0.6930693069),
        ("10", 2, 0.5454545455, 0.5, 0.5049504950),
    ],
)
def test_known_answers_more_lists(tmp_path, outcomes, n_gt, voc2007, voc2010, coco101):
    data = _ranked_list(outcomes, n_gt)
    assert _evaluate(tmp_path, data, "voc2010").per_class[0]["AP"] == pytest.approx(voc2010, abs=1e-10)
    assert _evaluate(tmp_path, data, "coco50").per_class[0]["AP"] == pytest.approx(coco101, abs=1e-10)
    # The table's VOC2007 column is computed on np.arange(0, 1.1, 0.1): recall exactly 0.3 misses
    # the 0.30000000000000004 point, 0.7 misses 0.7000000000000001. That is voc2007-pyfrcnn's grid.
    pyfrcnn = _evaluate(tmp_path, data, "voc2007-pyfrcnn").per_class[0]["AP"]
    assert pyfrcnn == pytest.approx(voc2007, abs=1e-10)


@pytest.mark.parametrize(
    ("outcomes", "n_gt", "matlab_grid"),
    [
        ("1101001010", 10, 0.4271284271),  # recall exactly 0.3 misses 0.30000000000000004, as in the table
        (
            "1111111",
            10,
            8 / 11,
        ),  # recall 0.7 reaches MATLAB's exact 0.7 point (numpy's 0.7000000000000001 not)
        ("10", 2, 6 / 11),
    ],
)
def test_voc2007_preset_on_the_known_lists(tmp_path, outcomes, n_gt, matlab_grid):
    """voc2007 uses MATLAB's 0:0.1:1 (eleven_point_grid: matlab_colon).

    It differs from the table above (numpy's grid) where a recall lands exactly on 0.7 (see
    docs/voc.md, "The 11-point grid").
    """
    data = _ranked_list(outcomes, n_gt)
    assert _evaluate(tmp_path, data, "voc2007").per_class[0]["AP"] == pytest.approx(matlab_grid, abs=1e-10)


# ------------------------------------------------------------------------------------------
# docs/known-answers.md section 2: matching rules disagree
# ------------------------------------------------------------------------------------------


def _matching_rules() -> VocDataset:
    # COCO xywh A = [0, 0, 100, 100], B = [40, 0, 100, 100], d2 = [15, 0, 100, 100] as VOC
    # corners: x1 = x + 1, x2 = x + w (100 pixels wide).
    a, b = (1, 1, 100, 100), (41, 1, 140, 100)
    d1, d2 = (1, 1, 100, 100), (16, 1, 115, 100)
    objects = {
        "img": [{"name": "dog", "box": a, "difficult": False}, {"name": "dog", "box": b, "difficult": False}]
    }
    return VocDataset(
        classes=["dog"],
        image_ids=["img"],
        sizes={"img": (300, 200)},
        objects=objects,
        detections={"dog": [("img", 0.9, d1), ("img", 0.8, d2)]},
    )


def test_known_answers_matching_rules_disagree(tmp_path):
    data = _matching_rules()
    assert _evaluate(tmp_path, data, "voc2010").per_class[0]["AP"] == 0.5
    assert _evaluate(tmp_path, data, "voc2007").per_class[0]["AP"] == pytest.approx(0.5454545455, abs=1e-10)
    coco = _evaluate(tmp_path, data, "coco")
    assert coco.metrics["AP50"] == pytest.approx(1.0, abs=1e-15)  # 0.9999999999999998 (epsilon)
    assert _evaluate(tmp_path, data, "coco50").per_class[0]["AP"] == pytest.approx(1.0, abs=1e-15)
    table = _evaluate(tmp_path, data, "voc2010").table
    assert table.det_is_tp.tolist() == [[True, False]]


# ------------------------------------------------------------------------------------------
# Fixtures (hand-derived answers in fixtures/*/ANSWERS.md)
# ------------------------------------------------------------------------------------------

FIXTURE_ANSWERS = {
    "voc2007": ((8.4 / 11, 2 / 3, 1.0), 0.8101010101),
    "voc2010": ((34 / 45, 2 / 3, 1.0), 0.8074074074),
    "voc2012": ((34 / 45, 2 / 3, 1.0), 0.8074074074),
    "voc2007-pyfrcnn": ((8.4 / 11, 3 / 11, 1.0), 0.6787878788),
    "voc2010-pyfrcnn": ((34 / 45, 0.25, 1.0), 0.6685185185),
    "voc2007-continuous": ((8.4 / 11, 3 / 11, 1.0), 0.6787878788),
    "voc2010-continuous": ((34 / 45, 0.25, 1.0), 0.6685185185),
}


@pytest.mark.parametrize("protocol", sorted(FIXTURE_ANSWERS))
def test_fixture_answers(protocol):
    per_class, m_ap = FIXTURE_ANSWERS[protocol]
    result = deteval.evaluate(FIXTURES / "voc", FIXTURES / "voc" / "results", protocol=protocol)
    assert [c["name"] for c in result.per_class] == ["car", "dog", "person"]
    assert [c["category_id"] for c in result.per_class] == [1, 2, 3]
    assert [c["AP"] for c in result.per_class] == pytest.approx(per_class, abs=1e-12)
    assert [c["num_gt"] for c in result.per_class] == [3, 2, 1]
    assert [c["num_det"] for c in result.per_class] == [6, 3, 2]
    assert result.metrics["mAP"] == pytest.approx(m_ap, abs=1e-10)
    assert result.warnings == ()


def test_fixture_through_the_cli(capsys):
    """The README's command, with --split and JSON output."""
    code = main(
        [
            "evaluate",
            "--gt",
            str(FIXTURES / "voc"),
            "--dt",
            str(FIXTURES / "voc" / "results"),
            "--split",
            "test",
            "--protocol",
            "voc2007",
            "--protocol",
            "voc2010",
            "--format",
            "json",
            "-q",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["metrics"]["mAP"] for r in doc["results"]] == pytest.approx([0.8101010101, 0.8074074074])
    assert doc["inputs"]["images"] == 3
    assert doc["inputs"]["gt_objects"] == 8
    assert doc["inputs"]["detections"] == 11


def test_fixture_table_output(capsys):
    code = main(
        [
            "evaluate",
            "--gt",
            str(FIXTURES / "voc"),
            "--dt",
            str(FIXTURES / "voc" / "results"),
            "--protocol",
            "voc2007",
            "-q",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "0.8101" in out
    assert "car" in out
    assert "0.7636" in out


def test_yolo_fixture_answers():
    gt = load_ground_truth(FIXTURES / "yolo")
    assert gt.image_name == ("a.png", "b.png")
    assert gt.image_width.tolist() == [128, 64]
    assert gt.image_height.tolist() == [64, 32]
    assert gt.box.tolist() == [[48, 16, 32, 32], [24, 8, 16, 16], [16, 8, 32, 16], [40, 8, 16, 16]]
    assert gt.category_id.tolist() == [0, 1]
    assert gt.category_name == ("cat", "dog")
    dt = load_detections(FIXTURES / "yolo" / "predictions", gt)
    assert dt.box[2].tolist() == [88, 40, 16, 16]
    voc2010 = deteval.evaluate(gt, dt, "voc2010")
    assert [c["AP"] for c in voc2010.per_class] == [1.0, 0.25]
    assert voc2010.metrics["mAP"] == 0.625
    voc2007 = deteval.evaluate(gt, dt, "voc2007")
    assert voc2007.metrics["mAP"] == pytest.approx(0.6363636364, abs=1e-10)
    coco = deteval.evaluate(FIXTURES / "yolo", FIXTURES / "yolo" / "predictions", "coco")
    assert coco.per_class[1]["AP"] == pytest.approx(25.5 / 101, abs=1e-12)
    assert coco.metrics["AP"] == pytest.approx(0.6262376238, abs=1e-10)


# ------------------------------------------------------------------------------------------
# What the VOC loader builds
# ------------------------------------------------------------------------------------------


def test_voc_ground_truth_columns(tmp_path):
    root = _voc_root(
        tmp_path,
        {
            "b": _ann(_obj("dog", (5, 6, 50.5, 60), "1"), _obj("car", (1, 2, 3, 4))),
            "a": _ann(_obj("car", (10, 20, 30, 40))),
            "c": _ann(size="<size><width>640</width><height>480</height></size>"),
        },
        split=["b", "c", "a"],
    )
    gt = load_voc_gt(root, split="test")
    assert gt.image_id.tolist() == [0, 1, 2]
    assert gt.image_name == ("b", "c", "a")
    assert gt.image_width.tolist() == [100, 640, 100]
    assert gt.category_id.tolist() == [1, 2]
    assert gt.category_name == ("car", "dog")
    assert gt.box_format == "xyxy"
    assert gt.box.tolist() == [[5, 6, 50.5, 60], [1, 2, 3, 4], [10, 20, 30, 40]]
    assert gt.image.tolist() == [0, 0, 2]
    assert gt.category.tolist() == [1, 0, 0]
    assert gt.area.tolist() == [45.5 * 54, 4, 400]
    assert gt.is_difficult.tolist() == [True, False, False]
    assert not gt.is_crowd.any()
    assert not gt.is_ignore.any()
    assert gt.annotation_id.tolist() == [1, 2, 3]
    assert gt.source == str(root)
    assert gt.warnings == ()
    every = load_voc_gt(root)  # no split: every XML, sorted by file name
    assert every.image_name == ("a", "b", "c")


def test_voc_given_classes(tmp_path):
    root = _simple_root(tmp_path)
    gt = load_voc_gt(root, classes=["dog", "car", "bird"])
    assert gt.category_name == ("dog", "car", "bird")
    assert gt.category_id.tolist() == [1, 2, 3]
    gt = load_voc_gt(root, classes=["car"])
    assert len(gt) == 2
    assert gt.warnings == (f"{root}: 1 objects of classes not in the class list were left out: dog",)
    with pytest.raises(InputError, match="classes listed twice: \\['car'\\]"):
        load_voc_gt(root, classes=["car", "car"])
    with pytest.raises(InputError, match="classes must be a list of non-empty strings"):
        load_voc_gt(root, classes="car")


def test_voc_person_layout_parts_are_not_objects(tmp_path):
    part = (
        "<part><name>hand</name><bndbox><xmin>2</xmin><ymin>2</ymin><xmax>4</xmax><ymax>4</ymax>"
        "</bndbox></part>"
    )
    root = _voc_root(tmp_path, {"a": _ann(_obj("person", (1, 1, 50, 90), extra=part))})
    gt = load_voc_gt(root)
    assert gt.category_name == ("person",)
    assert gt.box.tolist() == [[1, 1, 50, 90]]


def test_voc_detections_columns_and_order(tmp_path):
    root = _simple_root(tmp_path)
    gt = load_voc_gt(root)
    _write(root / "results" / "comp4_det_test_dog.txt", "a 0.5 5 5 50 50\n\na 0.7 1 1 2 2\n")
    _write(root / "results" / "comp4_det_test_car.txt", "b 0.25 2 2 20 20.5\n")
    dt = load_voc_dt(root / "results", gt)
    assert dt.box_format == "xyxy"
    assert dt.has_box.all()
    # classes in GT category order (car, dog), lines in file order
    assert dt.category.tolist() == [0, 1, 1]
    assert dt.image.tolist() == [1, 0, 0]
    assert dt.score.tolist() == [0.25, 0.5, 0.7]
    assert dt.order.tolist() == [0, 1, 2]
    assert dt.box.tolist()[0] == [2, 2, 20, 20.5]
    assert dt.warnings == ()
    assert dt.source == str(root / "results")


@pytest.mark.parametrize(
    ("files", "classes", "prefix"),
    [
        (["comp4_det_test_car.txt", "comp4_det_test_racecar.txt"], ["car", "racecar"], "comp4_det_test_"),
        (["comp4_det_test_racecar.txt"], ["car", "racecar"], "comp4_det_test_"),
        (["car.txt", "dog.txt", "notes.md"], ["car", "dog"], ""),
        (["det_val_car.txt", "det_val_dog.txt", "README.txt"], ["car", "dog"], "det_val_"),
        ([], ["car"], ""),
    ],
)
def test_detect_prefix(files, classes, prefix):
    assert detect_prefix(files, classes) == prefix


def test_detect_prefix_refuses_two_runs():
    with pytest.raises(InputError, match="result files with different prefixes explain 2 files each"):
        detect_prefix(["a_car.txt", "a_dog.txt", "b_car.txt", "b_dog.txt"], ["car", "dog"])


def test_voc_explicit_prefix_and_plain_class_files(tmp_path):
    root = _simple_root(tmp_path)
    gt = load_voc_gt(root)
    _write(tmp_path / "plain" / "car.txt", "a 0.5 1 1 10 10\n")
    _write(tmp_path / "plain" / "dog.txt", "a 0.5 5 5 50 50\n")
    assert len(load_voc_dt(tmp_path / "plain", gt)) == 2
    _write(tmp_path / "two" / "x_car.txt", "a 0.5 1 1 10 10\n")
    _write(tmp_path / "two" / "y_car.txt", "a 0.5 1 1 10 10\nb 0.1 1 1 5 5\n")
    dt = load_voc_dt(tmp_path / "two", gt, prefix="y_")
    assert len(dt) == 2
    assert any("1 .txt files not read (not y_<class>.txt): x_car.txt" in w for w in dt.warnings)


def test_coco_results_json_against_voc_ground_truth(tmp_path):
    """COCO results name VOC images by their VOC id (a string), never by position; boxes xywh."""
    root = _simple_root(tmp_path)
    dt_json = _write(
        tmp_path / "dt.json",
        json.dumps(
            [
                {"image_id": "a", "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
                {"image_id": "b", "category_id": 1, "bbox": [1, 1, 19, 19], "score": 0.8},
                {"image_id": "a", "category_id": 2, "bbox": [4, 4, 46, 46], "score": 0.7},
            ]
        ),
    )
    result = deteval.evaluate(root, dt_json, "voc2010-continuous")
    assert [c["AP"] for c in result.per_class] == [1.0, 1.0]
    positions = _write(
        tmp_path / "positions.json", dt_json.read_text().replace('"a"', "0").replace('"b"', "1")
    )
    with pytest.raises(
        InputError,
        match=r"3 detections: `image_id` is not an image of the ground truth; "
        r"expected an image of .*images are named 'a', 'b'",
    ):
        deteval.evaluate(root, positions, "voc2010-continuous")


def test_coco_ground_truth_with_difficult_flags_under_voc(tmp_path):
    gt = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "cat"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "bbox": [0, 0, 10, 10],
                "area": 100,
                "iscrowd": 0,
                "difficult": 1,
            },
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "area": 100, "iscrowd": 0},
        ],
    }
    dt = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.8},
    ]
    voc = deteval.evaluate(gt, dt, "voc2010")
    assert voc.per_class[0]["AP"] == 1.0
    assert voc.per_class[0]["num_gt"] == 1


# ------------------------------------------------------------------------------------------
# Safe XML
# ------------------------------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<annotation><object><name>&lol9;</name></object></annotation>
"""


def _external_entity(secret: Path) -> bytes:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE annotation [\n<!ENTITY xxe SYSTEM "file://{secret}">\n]>\n'
        f"<annotation><object><name>&xxe;</name></object></annotation>\n"
    ).encode()


@pytest.mark.parametrize(
    "kind", ["billion_laughs", "external_entity", "parameter_entity", "external_dtd", "utf16"]
)
def test_dtd_and_entities_are_refused(tmp_path, kind):
    secret = _write(tmp_path / "secret.txt", "TOP-SECRET-CONTENT")
    raw = {
        "billion_laughs": BILLION_LAUGHS,
        "external_entity": _external_entity(secret),
        "parameter_entity": (
            f'<!DOCTYPE a [<!ENTITY % p SYSTEM "file://{secret}"> %p;]><annotation/>'
        ).encode(),
        "external_dtd": f'<!DOCTYPE annotation SYSTEM "file://{secret}"><annotation/>'.encode(),
        "utf16": (
            '<?xml version="1.0" encoding="UTF-16"?>\n<!DOCTYPE a [<!ENTITY x "y">]>\n'
            "<annotation>&x;</annotation>"
        ).encode("utf-16"),
    }[kind]
    root = _voc_root(tmp_path, {"a": raw})
    with pytest.raises(InputError) as excinfo:
        load_voc_gt(root)
    message = _message(excinfo)
    assert "refused a DOCTYPE declaration" in message
    assert "a.xml:" in message
    assert "TOP-SECRET" not in message
    assert "lollol" not in message


def test_undefined_entity_is_malformed_xml(tmp_path):
    root = _voc_root(tmp_path, {"a": "<annotation>\n<object><name>&xxe;</name></object></annotation>"})
    with pytest.raises(InputError, match=r"a\.xml:2:15: malformed XML \(undefined entity\)"):
        load_voc_gt(root)


def test_parse_xml_records_lines():
    root, lines = parse_xml(b"<annotation>\n<object>\n<name>a</name></object>\n</annotation>", "x.xml")
    assert lines[root.find("object")] == 2


# ------------------------------------------------------------------------------------------
# VOC ground-truth errors and warnings
# ------------------------------------------------------------------------------------------


def test_error_no_annotations_folder(tmp_path):
    with pytest.raises(InputError, match="no Annotations/ folder; expected a PASCAL VOC root"):
        load_voc_gt(tmp_path)


def test_error_malformed_xml_names_file_and_line(tmp_path):
    root = _voc_root(tmp_path, {"a": "<annotation>\n<object>\n<name>car</name>\n</annotation>\n"})
    with pytest.raises(InputError) as excinfo:
        load_voc_gt(root)
    assert _message(excinfo) == (
        f"{root / 'Annotations' / 'a.xml'}:4:3: malformed XML (mismatched tag); "
        f"expected a VOC annotation XML file"
    )


def test_error_malformed_xml_through_the_cli(tmp_path, capsys):
    root = _voc_root(tmp_path, {"a": "<annotation><object></annotation>"})
    (root / "results").mkdir()
    assert (
        main(["evaluate", "--gt", str(root), "--dt", str(root / "results"), "--protocol", "voc2007", "-q"])
        == 3
    )
    assert "a.xml:1:23: malformed XML (mismatched tag)" in capsys.readouterr().err


def test_error_root_element(tmp_path):
    root = _voc_root(tmp_path, {"a": "<html>\n<body/></html>"})
    with pytest.raises(InputError, match=r"a\.xml:1: root element is <html>; expected <annotation>"):
        load_voc_gt(root)


@pytest.mark.parametrize(
    ("obj", "found"),
    [
        ("<object><difficult>0</difficult><bndbox/></object>", "no <name>"),
        ("<object><name> </name></object>", "an empty <name>"),
        ("<object><name>car</name><difficult>0</difficult></object>", "no <bndbox>"),
        (_obj(box=(1, "x", 3, 4)), "<bndbox> xmin='1', ymin='x', xmax='3', ymax='4'"),
        (_obj(box=(1, "nan", 3, 4)), "<bndbox> xmin='1', ymin='nan', xmax='3', ymax='4'"),
        (
            "<object><name>car</name><difficult>0</difficult><bndbox><xmin>1</xmin></bndbox></object>",
            "<bndbox> xmin='1', ymin=missing, xmax=missing, ymax=missing",
        ),
        (_obj(difficult="2"), "<difficult>'2'</difficult>"),
    ],
)
def test_error_object_fields(tmp_path, obj, found):
    root = _voc_root(tmp_path, {"a": "<annotation>\n" + obj + "</annotation>"})
    with pytest.raises(InputError) as excinfo:
        load_voc_gt(root)
    path = root / "Annotations" / "a.xml"
    assert _message(excinfo).startswith(f"{path}:2: object #0 (name=")
    assert _message(excinfo).endswith(
        "object without a usable name, bndbox or difficult flag; expected <name>, <bndbox> with four "
        "finite numbers <xmin> <ymin> <xmax> <ymax>, and <difficult> 0 or 1, found " + found
    )


def test_error_many_bad_objects_are_counted(tmp_path):
    root = _voc_root(tmp_path, {"a": _ann(*[_obj(difficult="yes")] * 7)})
    with pytest.raises(InputError) as excinfo:
        load_voc_gt(root)
    message = _message(excinfo)
    assert message.startswith("7 objects: object without a usable name")
    assert "object #4 (name='car')" in message
    assert "object #5" not in message
    assert message.endswith("; and 2 more")


def test_error_xmin_greater_than_xmax(tmp_path):
    root = _voc_root(tmp_path, {"a": _ann(_obj(box=(50, 1, 10, 10)))})
    with pytest.raises(InputError) as excinfo:
        load_voc_gt(root)
    assert _message(excinfo).endswith(
        "object #0 (name='car'): xmin > xmax or ymin > ymax; expected xmin <= xmax and ymin <= ymax, "
        "found [50, 1, 10, 10]"
    )


def test_warning_missing_difficult_names_files(tmp_path):
    root = _voc_root(
        tmp_path,
        {
            "a": _ann(_obj(difficult=None), _obj(difficult=None)),
            "b": _ann(_obj(difficult=None)),
            "c": _ann(_obj()),
        },
    )
    gt = load_voc_gt(root)
    assert not gt.is_difficult.any()
    ann = root / "Annotations"
    assert gt.warnings == (
        f"{root}: 3 objects in 2 files have no <difficult>: read as 0 (not difficult); "
        f"files: {ann / 'a.xml'}, {ann / 'b.xml'}",
    )


def test_warning_coordinates_outside_the_image(tmp_path):
    root = _voc_root(
        tmp_path, {"a": _ann(_obj(box=(1, 1, 101, 10)), _obj(box=(-1, 1, 5, 5)), _obj(box=(1, 1, 100, 100)))}
    )
    gt = load_voc_gt(root)
    assert len(gt) == 3
    assert len(gt.warnings) == 1
    assert gt.warnings[0].startswith(
        f"{root}: 2 objects extend outside their image (coordinate < 0 or "
        f"beyond <size>), kept as the devkit keeps them: "
    )


def test_warning_missing_size(tmp_path):
    root = _voc_root(
        tmp_path,
        {
            "a": _ann(_obj(), size=""),
            "b": _ann(_obj(), size="<size><width>0</width><height>0</height></size>"),
        },
    )
    gt = load_voc_gt(root)
    assert np.isnan(gt.image_width).all()
    assert gt.warnings[0].startswith(f"{root}: 2 images without a positive <size> width and height")


def test_error_split_not_found_lists_splits(tmp_path):
    root = _voc_root(tmp_path, {"a": _ann(_obj())}, split=["a"])
    with pytest.raises(
        InputError,
        match=r"val\.txt: image set not found; expected "
        r"ImageSets/Main/<split>\.txt, "
        r"found splits \['test'\]",
    ):
        load_voc_gt(root, split="val")


def test_error_split_with_two_columns(tmp_path):
    root = _voc_root(tmp_path, {"a": _ann(_obj())})
    _write(root / "ImageSets" / "Main" / "car_test.txt", "a  1\n")
    with pytest.raises(
        InputError,
        match=r"car_test\.txt:1: not one image id per line; expected one image "
        r"id per line .*, found 2 columns 'a 1'",
    ):
        load_voc_gt(root, split="car_test")


def test_error_split_duplicate_id(tmp_path):
    root = _voc_root(tmp_path, {"a": _ann(_obj())}, split=["a", "a"])
    with pytest.raises(
        InputError,
        match=r"test\.txt:2: image id listed twice; expected each image id once, "
        r"found 'a' \(also line 1\)",
    ):
        load_voc_gt(root, split="test")


def test_error_split_id_without_annotation(tmp_path):
    root = _voc_root(tmp_path, {"a": _ann(_obj())}, split=["a", "zz"])
    with pytest.raises(
        InputError,
        match=r"test\.txt: image without an annotation file; expected "
        r"Annotations/<id>\.xml for every id of .*, found 'zz'",
    ):
        load_voc_gt(root, split="test")


def test_image_ids_that_are_paths_open_nothing_outside(tmp_path):
    outside = _write(tmp_path / "outside.xml", _ann(_obj("stolen")))
    root = _voc_root(tmp_path, {"a": _ann(_obj())}, split=["a", "../../outside"])
    assert outside.exists()
    with pytest.raises(
        InputError,
        match=r"test\.txt:2: image id is a path; expected a plain id without "
        r"'/', '\\' or '\.\.' \(no file outside the dataset root is "
        r"opened\), found '\.\./\.\./outside'",
    ):
        load_voc_gt(root, split="test")


def test_split_name_that_is_a_path(tmp_path):
    root = _voc_root(tmp_path, {"a": _ann(_obj())}, split=["a"])
    with pytest.raises(InputError, match=r"image set '\.\./\.\./x\.txt' is a path"):
        load_voc_gt(root, split="../../x")


# ------------------------------------------------------------------------------------------
# VOC result-file errors and warnings
# ------------------------------------------------------------------------------------------


@pytest.fixture
def voc_gt(tmp_path):
    return load_voc_gt(_simple_root(tmp_path))


def _results(tmp_path, files: dict) -> Path:
    folder = tmp_path / "res"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        _write(folder / name, text)
    return folder


def test_error_wrong_column_count_names_file_and_line(tmp_path, voc_gt):
    folder = _results(tmp_path, {"comp4_det_test_car.txt": "a 0.9 1 1 10 10\na 0.8 1 1 10\n"})
    with pytest.raises(InputError) as excinfo:
        load_voc_dt(folder, voc_gt)
    assert _message(excinfo) == (
        f"{folder / 'comp4_det_test_car.txt'}:2: wrong number of columns; expected "
        f"6 columns `image_id score x1 y1 x2 y2`, found 5 columns 'a 0.8 1 1 10'"
    )


def test_error_not_a_number(tmp_path, voc_gt):
    folder = _results(
        tmp_path,
        {
            "comp4_det_test_car.txt": "a 0.9 1 1 10 10\na 0.8 1 one 10 10\n",
            "comp4_det_test_dog.txt": "a nan 1 1 10 10\n",
        },
    )
    with pytest.raises(
        InputError,
        match=r"comp4_det_test_car\.txt:2: a value that is not a finite number "
        r"in score x1 y1 x2 y2; expected finite numbers, found 'one' in",
    ):
        load_voc_dt(folder, voc_gt)
    folder = _results(tmp_path, {"comp4_det_test_car.txt": "a 0.9 1 1 10 10\n"})
    with pytest.raises(InputError, match=r"comp4_det_test_dog\.txt:1: a value that is not a finite number"):
        load_voc_dt(folder, voc_gt)


def test_error_unknown_image_ids_are_counted(tmp_path, voc_gt):
    lines = "".join(f"x{k} 0.5 1 1 10 10\n" for k in range(7))
    folder = _results(tmp_path, {"comp4_det_test_car.txt": "a 0.9 1 1 10 10\n" + lines})
    with pytest.raises(InputError) as excinfo:
        load_voc_dt(folder, voc_gt)
    message = _message(excinfo)
    assert message.startswith("7 lines: image id not in the ground truth; expected an image of ")
    assert f"{folder / 'comp4_det_test_car.txt'}:2: 'x0'" in message
    assert message.endswith("; and 2 more")


def test_error_unknown_image_id_through_evaluate(tmp_path):
    root = _simple_root(tmp_path)
    folder = _results(tmp_path, {"comp4_det_test_car.txt": "zz 0.9 1 1 10 10\n"})
    with pytest.raises(
        InputError,
        match=r"comp4_det_test_car\.txt:1: image id not in the ground truth; "
        r"expected an image of .*, found 'zz'",
    ):
        deteval.evaluate(root, folder, "voc2007")


def test_error_inverted_detection_box(tmp_path, voc_gt):
    folder = _results(tmp_path, {"comp4_det_test_car.txt": "a 0.9 10 1 1 10\n"})
    with pytest.raises(
        InputError,
        match=r"comp4_det_test_car\.txt:1: x1 > x2 or y1 > y2 \(negative width or "
        r"height\); expected x1 <= x2 and y1 <= y2, found \[10, 1, 1, 10\]",
    ):
        load_voc_dt(folder, voc_gt)


def test_result_file_of_an_unknown_class(tmp_path, voc_gt):
    folder = _results(
        tmp_path,
        {"comp4_det_test_car.txt": "a 0.9 1 1 10 10\n", "comp4_det_test_bird.txt": "a 0.9 1 1 10 10\n"},
    )
    with pytest.raises(
        InputError,
        match=r"1 result files of classes not in the ground truth: "
        r"comp4_det_test_bird\.txt; expected comp4_det_test_<class>\.txt",
    ):
        load_voc_dt(folder, voc_gt)
    dt = load_voc_dt(folder, voc_gt, unknown_category="drop")
    assert len(dt) == 1
    assert any("left out 1 result files of classes not in the ground truth" in w for w in dt.warnings)


def test_no_result_files_is_an_error_naming_where_it_looked(tmp_path):
    """A folder with nothing to score used to give AP 0 for every class, exit 0 (docs/inputs.md)."""
    root = _simple_root(tmp_path)
    folder = _results(tmp_path, {"notes.md": "nothing"})
    with pytest.raises(InputError, match=r"res: no predictions found; looked for .* found notes\.md"):
        deteval.evaluate(root, folder, "voc2010")


def test_error_txt_files_but_none_for_a_class(tmp_path, voc_gt):
    folder = _results(tmp_path, {"0001.txt": "0 0.5 0.5 0.1 0.1 0.9\n"})
    with pytest.raises(
        InputError,
        match=r"no result file for any class; expected <prefix><class>\.txt .*"
        r"found 0001\.txt",
    ):
        load_voc_dt(folder, voc_gt)


def test_warning_class_without_result_file(tmp_path, voc_gt):
    folder = _results(tmp_path, {"comp4_det_test_car.txt": "a 0.9 1 1 10 10\n"})
    dt = load_voc_dt(folder, voc_gt)
    assert dt.warnings == (
        f"{folder}: 1 classes have no result file (comp4_det_test_<class>.txt), so no detections: dog",
    )


def test_class_names_that_are_paths_open_nothing_outside(tmp_path):
    """An XML <name> like '../secret' never makes the result loader open ../secret.txt."""
    root = _voc_root(tmp_path, {"a": _ann(_obj("../secret"), _obj("car"))})
    _write(tmp_path / "secret.txt", "a 0.9 1 1 10 10\n")
    folder = _results(tmp_path, {"car.txt": "a 0.9 1 1 10 10\n"})
    gt = load_voc_gt(root)
    dt = load_voc_dt(folder, gt)
    assert dt.category.tolist() == [gt.category_name.index("car")]
    assert any("1 classes have no result file" in w and "../secret" in w for w in dt.warnings)


def test_warning_normalized_looking_boxes(tmp_path, voc_gt):
    folder = _results(tmp_path, {"car.txt": "a 0.9 0.1 0.1 0.5 0.5\n" * 10})
    dt = load_voc_dt(folder, voc_gt)
    assert any("every box coordinate is <= 1 while images are 100 px wide" in w for w in dt.warnings)


def test_error_result_file_not_utf8(tmp_path, voc_gt):
    folder = _results(tmp_path, {"car.txt": b"a 0.9 1 1 10 10\n\xff\xfe\n"})
    with pytest.raises(InputError, match=r"car\.txt:2: not UTF-8 text \(byte 0xff\)"):
        load_voc_dt(folder, voc_gt)


# ------------------------------------------------------------------------------------------
# YOLO
# ------------------------------------------------------------------------------------------


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    raw = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _jpeg(width: int, height: int, orientation: int | None = None) -> bytes:
    out = b"\xff\xd8"
    if orientation is not None:
        tiff = (
            b"MM\x00\x2a"
            + struct.pack(">I", 8)
            + struct.pack(">H", 1)
            + struct.pack(">HHIHH", 0x0112, 3, 1, orientation, 0)
            + struct.pack(">I", 0)
        )
        app1 = b"Exif\x00\x00" + tiff
        out += b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1
    out += b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return out + b"\xff\xc0" + struct.pack(">H", len(sof) + 2) + sof + b"\xff\xd9"


@pytest.mark.parametrize(
    ("name", "data", "size"),
    [
        ("a.png", _png(7, 5), (7, 5)),
        ("a.jpg", _jpeg(640, 480), (640, 480)),
        ("a.jpg", _jpeg(640, 480, orientation=1), (640, 480)),
        ("a.jpg", _jpeg(640, 480, orientation=6), (480, 640)),  # rotated 90 degrees: as displayed
        ("a.jpg", _jpeg(640, 480, orientation=8), (480, 640)),
        ("a.gif", b"GIF89a" + struct.pack("<HH", 33, 44), (33, 44)),
        ("a.bmp", b"BM" + bytes(16) + struct.pack("<ii", 20, -30), (20, 30)),
        ("a.webp", b"RIFF\x00\x00\x00\x00WEBPVP8 ", None),
        ("a.jpg", b"\xff\xd8\xff\xe0\x00", None),  # truncated
    ],
)
def test_image_size_from_headers(tmp_path, name, data, size):
    assert image_size(_write(tmp_path / name, data)) == size


def _yolo(tmp_path, *, yaml_text="names: [cat, dog]\nval: images/val\n", labels=None, images=None) -> Path:
    root = tmp_path / "yolo"
    _write(root / "data.yaml", yaml_text)
    images = {"a.png": _png(100, 50), "b.png": _png(20, 10)} if images is None else images
    for name, data in images.items():
        _write(root / "images" / "val" / name, data)
    labels = {"a.txt": "0 0.5 0.5 0.2 0.4\n", "b.txt": "1 0.5 0.5 1 1\n"} if labels is None else labels
    (root / "labels" / "val").mkdir(parents=True, exist_ok=True)
    for name, text in labels.items():
        _write(root / "labels" / "val" / name, text)
    return root


def test_yolo_ground_truth(tmp_path):
    root = _yolo(tmp_path, labels={"a.txt": "0 0.5 0.5 0.2 0.4\n1 0.25 0.5 0.5 1\n"})
    gt = load_yolo_gt(root)
    assert gt.image_name == ("a.png", "b.png")
    assert gt.box_format == "xywh"
    assert gt.box.tolist() == [[40, 15, 20, 20], [0, 0, 50, 50]]
    assert gt.area.tolist() == [400, 2500]
    assert gt.category.tolist() == [0, 1]
    assert gt.source == str(root / "data.yaml")
    assert load_yolo_gt(root / "data.yaml").box.tolist() == gt.box.tolist()


def test_yolo_names_as_mapping_and_labels_next_to_images(tmp_path):
    root = tmp_path / "flat"
    _write(root / "data.yaml", "names: {3: car, 1: bus}\nval: pics\n")
    _write(root / "pics" / "x.png", _png(10, 10))
    _write(root / "pics" / "x.txt", "3 0.5 0.5 1 1\n")
    gt = load_yolo_gt(root)
    assert gt.category_id.tolist() == [1, 3]
    assert gt.category_name == ("bus", "car")
    assert gt.category.tolist() == [1]
    assert gt.box.tolist() == [[0, 0, 10, 10]]


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("val: images/val\n", "no `names`; expected `names: [class0, class1, ...]`"),
        ("names: cat\nval: images/val\n", "`names` is a str; expected a list or a mapping id -> name"),
        ("names: {a: cat}\nval: images/val\n", "`names` entry 'a': 'cat'; expected integer ids >= 0"),
        ("names: [cat]\nnc: 2\nval: images/val\n", "`nc` is 2 but `names` has 1 entries"),
        ("names: [cat, dog]\n", "`val` is missing; expected the images folder of the split"),
        ("names: [cat, dog]\nval: nowhere\n", "`val: nowhere` is not a folder"),
        ("names: [cat\nval: x\n", "invalid YAML"),
        # the one YAML policy (protocol files' message): refused before anything is constructed
        (
            "names: !!python/object/apply:os.system ['echo hacked']\nval: images/val\n",
            "names: tag '!!python/object/apply:os.system' (line 1) is not allowed",
        ),
        ("- a\n- b\n", "expected a mapping with `names` and `val`, found list"),
    ],
)
def test_yolo_yaml_errors(tmp_path, yaml_text, message):
    root = _yolo(tmp_path, yaml_text=yaml_text)
    with pytest.raises(InputError) as excinfo:
        load_yolo_gt(root)
    assert message in _message(excinfo)
    assert "data.yaml" in _message(excinfo)


def test_yolo_folder_without_yaml(tmp_path):
    with pytest.raises(InputError, match="no data.yaml; expected a YOLO dataset folder"):
        load_yolo_gt(tmp_path)


@pytest.mark.parametrize(
    ("label", "message"),
    [
        (
            "0 0.5 0.5 0.2\n",
            "a.txt:1: wrong number of columns; expected 5 columns `class cx cy w h` "
            "(normalized), found 4 columns",
        ),
        ("0 0.1 0.1 0.2 0.1 0.3 0.3\n", "found 7 columns (a segmentation polygon?)"),
        (
            "0 0.5 0.5 0.2 0.4\n2 0.5 0.5 0.2 0.4\n",
            "a.txt:2: class id not in `names`; expected a class id of",
        ),
        (
            "1.5 0.5 0.5 0.2 0.4\n",
            "a.txt:1: class id is not an integer; expected an integer class id (within +-2**63), found '1.5'",
        ),
        (
            "0 0.5 0.5 1.2 0.4\n",
            "a.txt:1: coordinate outside [0, 1]; expected normalized cx cy w h in [0, 1], "
            "found 0.5 0.5 1.2 0.4",
        ),
        ("0 0.5 x 0.2 0.4\n", "a.txt:1: a value that is not a finite number in cx cy w h"),
    ],
)
def test_yolo_label_errors(tmp_path, label, message):
    root = _yolo(tmp_path, labels={"a.txt": label})
    with pytest.raises(InputError) as excinfo:
        load_yolo_gt(root)
    assert message in _message(excinfo)


def test_yolo_class_id_error_names_the_classes(tmp_path):
    root = _yolo(tmp_path, labels={"a.txt": "5 0.5 0.5 0.2 0.4\n"})
    with pytest.raises(
        InputError,
        match=r"a\.txt:1: class id not in `names`; expected a class id of .*"
        r"data\.yaml \(0=cat, 1=dog\), found 5",
    ):
        load_yolo_gt(root)


def test_yolo_unknown_image_size_and_sizes_file(tmp_path):
    root = _yolo(tmp_path, images={"a.webp": b"RIFF....WEBP", "b.png": _png(20, 10)})
    with pytest.raises(
        InputError,
        match=r"1 images of unknown size: a\.webp; expected PNG, JPEG, GIF or BMP "
        r"headers, or a sizes file",
    ):
        load_yolo_gt(root)
    _write(root / "sizes.txt", "a.webp 100 50\n")
    assert load_yolo_gt(root, sizes=root / "sizes.txt").box.tolist()[0] == [40, 15, 20, 20]
    _write(root / "data.yaml", "names: [cat, dog]\nval: images/val\nsizes: sizes.txt\n")
    assert load_yolo_gt(root).image_width.tolist() == [100, 20]
    _write(root / "sizes.txt", "a.webp 100\n")
    with pytest.raises(InputError, match=r"sizes\.txt:1: wrong number of columns; expected 3 columns"):
        load_yolo_gt(root)
    _write(root / "sizes.txt", "a.webp 100 0\n")
    with pytest.raises(InputError, match=r"sizes\.txt:1: image size not positive"):
        load_yolo_gt(root)


def test_yolo_duplicate_stems(tmp_path):
    root = _yolo(tmp_path, images={"a.png": _png(4, 4), "a.jpg": _jpeg(4, 4)})
    with pytest.raises(InputError, match=r"images a\.jpg and a\.png share the stem 'a'"):
        load_yolo_gt(root)


@pytest.fixture
def yolo_gt(tmp_path):
    return load_yolo_gt(_yolo(tmp_path))


def test_yolo_predictions(tmp_path, yolo_gt):
    folder = _results(
        tmp_path, {"a.txt": "0 0.5 0.5 0.2 0.4 0.9\n1 0.5 0.5 0.2 0.4 0.1\n", "b.txt": "1 0.5 0.5 1 1 0.8\n"}
    )
    dt = load_yolo_dt(folder, yolo_gt)
    assert dt.box.tolist() == [[40, 15, 20, 20], [40, 15, 20, 20], [0, 0, 20, 10]]
    assert dt.score.tolist() == [0.9, 0.1, 0.8]
    assert dt.image.tolist() == [0, 0, 1]
    assert dt.category.tolist() == [0, 1, 1]
    assert dt.order.tolist() == [0, 1, 2]
    other = _results(tmp_path / "o", {"a.txt": "0 0.9 0.5 0.5 0.2 0.4\n"})
    dt = load_yolo_dt(other, yolo_gt, layout="cls conf cx cy w h")
    assert dt.score.tolist() == [0.9]
    assert dt.box.tolist() == [[40, 15, 20, 20]]


def test_yolo_predictions_without_confidence_are_ambiguous(tmp_path, yolo_gt):
    folder = _results(tmp_path, {"a.txt": "0 0.5 0.5 0.2 0.4\n"})
    with pytest.raises(InputError) as excinfo:
        load_yolo_dt(folder, yolo_gt)
    assert _message(excinfo) == (
        f"{folder / 'a.txt'}:1: 5 columns: no confidence column, or a layout deteval cannot tell; "
        f"expected 6 columns in a stated layout: `cls cx cy w h conf` (Ultralytics save_txt=True, "
        f"save_conf=True; the default) or `cls conf cx cy w h` (layout='cls conf cx cy w h'), "
        f"found 0 0.5 0.5 0.2 0.4"
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a.txt": "0 0.5 0.5 0.2 0.4 0.9 7\n"}, "a.txt:1: wrong number of columns; expected 6 columns"),
        (
            {"zz.txt": "0 0.5 0.5 0.2 0.4 0.9\n"},
            "zz.txt: prediction file of an image not in the ground truth",
        ),
        ({"a.txt": "0 0.5 0.5 -0.2 0.4 0.9\n"}, "a.txt:1: negative width or height"),
        ({"a.txt": "0 0.5 0.5 0.2 0.4 inf\n"}, "a.txt:1: a value that is not a finite number in conf"),
        ({"a.txt": "9 0.5 0.5 0.2 0.4 0.9\n"}, "a.txt:1: class id not in the ground truth"),
    ],
)
def test_yolo_prediction_errors(tmp_path, yolo_gt, files, message):
    folder = _results(tmp_path, files)
    with pytest.raises(InputError) as excinfo:
        load_yolo_dt(folder, yolo_gt)
    assert message in _message(excinfo)


def test_yolo_unknown_class_can_be_dropped(tmp_path, yolo_gt):
    folder = _results(tmp_path, {"a.txt": "9 0.5 0.5 0.2 0.4 0.9\n0 0.5 0.5 0.2 0.4 0.8\n", "x.jpg": "-"})
    with pytest.raises(InputError, match=r"refusing to drop 1 of 2 predictions \(50\.0%\)"):
        load_yolo_dt(folder, yolo_gt, unknown_category="drop")
    dt = load_yolo_dt(folder, yolo_gt, unknown_category="drop", max_drop=1.0)
    assert dt.score.tolist() == [0.8]
    assert any(
        w.startswith(
            f"{folder}: dropped 1 predictions of categories not in the ground truth (ids [9]): 1 of 2 (50.0%)"
        )
        for w in dt.warnings
    )
    assert f"{folder}: 1 files not read (not .txt): x.jpg" in dt.warnings
    with pytest.raises(InputError, match="layout 'x'; expected one of"):
        load_yolo_dt(folder, yolo_gt, layout="x")


def test_yolo_through_the_cli(tmp_path, capsys):
    root = _yolo(tmp_path)
    folder = _results(tmp_path, {"a.txt": "0 0.5 0.5 0.2 0.4 0.9\n", "b.txt": "1 0.5 0.5 1 1 0.8\n"})
    assert (
        main(
            [
                "evaluate",
                "--gt",
                str(root),
                "--dt",
                str(folder),
                "--protocol",
                "voc2010",
                "--format",
                "json",
                "-q",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["results"][0]["metrics"]["mAP"] == 1.0
    assert not math.isnan(deteval.evaluate(root / "data.yaml", folder, "coco").metrics["AP"])
    assert os.path.isdir(folder)


def test_warning_no_split_over_a_merged_folder(tmp_path):
    root = _voc_root(tmp_path, {"a": _ann(_obj()), "b": _ann(_obj())}, split=["a"])
    _write(root / "ImageSets" / "Main" / "car_test.txt", "a 1\nb -1\n")
    assert load_voc_gt(root).warnings == (
        f"{root}: no split given: all 2 Annotations/*.xml are scored, which no image set of "
        f"ImageSets/Main lists (['test']); pass split= / --split to choose one",
    )
    assert load_voc_gt(root, split="test").warnings == ()
    _write(root / "ImageSets" / "Main" / "trainval.txt", "b\na\n")
    assert load_voc_gt(root).warnings == ()


def test_error_result_folder_not_found(tmp_path, voc_gt):
    with pytest.raises(InputError, match=r"nowhere: folder not found; expected a folder of VOC result files"):
        load_voc_dt(tmp_path / "nowhere", voc_gt)
    with pytest.raises(ValueError, match="unknown_category must be 'error' or 'drop'"):
        load_voc_dt(tmp_path, voc_gt, unknown_category="skip")


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("names: [cat]\npath: 3\nval: images/val\n", "`path` is a int; expected a folder path"),
        ("names: [cat]\nval: images/val\nsizes: [1, 2]\n", "`sizes` must be a file path, found [1, 2]"),
        (
            "names: [cat]\nval: images/val\nsizes: nosuch.txt\n",
            "nosuch.txt: file not found; expected image sizes",
        ),
    ],
)
def test_yolo_path_and_sizes_keys(tmp_path, yaml_text, message):
    root = _yolo(tmp_path, yaml_text=yaml_text, labels={})
    with pytest.raises(InputError) as excinfo:
        load_yolo_gt(root)
    assert message in _message(excinfo)


def test_voc_result_files_against_coco_ground_truth(tmp_path):
    """Result-file image ids match COCO file names by stem; classes by name."""
    gt = {
        "images": [{"id": 7, "file_name": "000005.jpg"}, {"id": 9, "file_name": "000009.jpg"}],
        "categories": [{"id": 3, "name": "cat"}],
        "annotations": [
            {"id": 1, "image_id": 9, "category_id": 3, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}
        ],
    }
    folder = _results(tmp_path, {"comp4_det_test_cat.txt": "000009 0.9 0 0 10 10\n000005 0.8 0 0 5 5\n"})
    result = deteval.evaluate(gt, folder, "voc2010-continuous")
    assert result.per_class[0]["AP"] == 1.0
    assert result.per_class[0]["num_det"] == 2


@pytest.mark.parametrize("key", ["99999999999999999999", "9223372036854775808", "0x8000000000000000"])
def test_yolo_names_key_beyond_int64_is_an_input_error(tmp_path, capsys, key):
    """The user's data.yaml: ``names: {99999999999999999999: cat}`` was an OverflowError traceback."""
    from deteval.cli import main

    root = _yolo(tmp_path, yaml_text=f"names:\n  0: cat\n  {key}: dog\nval: images/val\n")
    code = main(["evaluate", "--gt", str(root), "--dt", str(root / "labels" / "val")])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 3, err
    value = int(key, 0)
    assert err.strip() == (
        f"deteval: error: {root / 'data.yaml'}: `names` key {value} does not fit a 64-bit class id; "
        f"expected class ids 0 .. {2**63 - 1} (the class indices of the label files, usually "
        f"0 .. nc-1): renumber `names`"
    )


@pytest.mark.parametrize("no_extension", ["0", "1"])
def test_yolo_class_ids_above_2_53_are_read_exactly(tmp_path, no_extension):
    """A class id of 2**53 + 1 is not a float: read as the integer written, in both readers."""
    import subprocess
    import sys

    big = 2**53 + 1
    root = _yolo(
        tmp_path,
        yaml_text=f"names:\n  0: cat\n  {big}: dog\nval: images/val\n",
        labels={"a.txt": f"0 0.5 0.5 0.2 0.4\n{big} 0.25 0.5 0.5 1\n", "b.txt": f"{big} 0.5 0.5 1 1\n"},
    )
    script = (
        "import sys, json; from deteval.io import load_ground_truth; "
        "gt = load_ground_truth(sys.argv[1]); "
        "print(json.dumps([gt.category_id.tolist(), gt.category.tolist()]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        env={
            **os.environ,
            "DETEVAL_NO_EXTENSION": no_extension,
            "PYTHONPATH": str(Path(__file__).parents[2]),
        },
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [[0, big], [0, 1, 1]]


def test_yolo_label_class_id_beyond_int64_says_so(tmp_path):
    root = _yolo(
        tmp_path, labels={"a.txt": "99999999999999999999 0.5 0.5 0.2 0.4\n", "b.txt": "1 0.5 0.5 1 1\n"}
    )
    with pytest.raises(InputError) as excinfo:
        load_yolo_gt(root)
    assert "a.txt:1: class id beyond 64 bits; expected an integer class id (within +-2**63)" in _message(
        excinfo
    )
