"""Inputs that can be read two ways: read as the evidence says, or refused with the candidates.

Each case builds the file layout a real tool writes (an Ultralytics run folder, a VOC root with
several image sets, COCO's 91-style ids over a YOLO dataset) in a tmp folder. Rules: docs/inputs.md.
"""

from __future__ import annotations

import json
import os
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


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# --------------------------------------------------------------------------------------------
# 1. COCO's 91-style ids over a YOLO dataset
# --------------------------------------------------------------------------------------------


def test_coco80_table_matches_the_published_lists():
    """deteval's COCO80 against tests/data/coco80.yaml (re-typed from Ultralytics and torchvision)."""
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
        {"images": [], "annotations": [], "categories": [{"id": k, "name": n} for k, n in enumerate(COCO_NAMES)]}
    )
    keys, targets = coco91_table(gt80)
    assert keys.tolist() == [i for i, _ in COCO80] and targets.tolist() == list(range(80))
    gt91 = deteval.load_ground_truth(
        {"images": [], "annotations": [], "categories": [{"id": i, "name": n} for i, n in COCO80[:20]]}
    )
    keys, targets = coco91_table(gt91)
    assert keys.tolist() == list(range(20)) and targets.tolist() == list(range(20))
    other = deteval.load_ground_truth(
        {"images": [], "annotations": [], "categories": [{"id": 5, "name": "a"}, {"id": 9, "name": "b"}]}
    )
    with pytest.raises(ConfigError, match="coco91: the categories of .* are neither contiguous"):
        coco91_table(other)
    assert read_category_map("coco91").kind == "coco91"


@pytest.fixture()
def coco_named_yolo(tmp_path):
    root = _yolo_dataset(tmp_path / "ds", COCO_NAMES, LABELS)
    (tmp_path / "predictions.json").write_text(json.dumps(PREDICTIONS_91))
    return root, tmp_path / "predictions.json"


def test_coco91_ids_over_yolo_refused_naming_coco91(coco_named_yolo, capsys):
    root, predictions = coco_named_yolo
    code, out, err = _run(["evaluate", "--gt", root, "--dt", predictions, "--protocol", "coco50", "-q"], capsys)
    assert code == 3, out
    assert "--category-map coco91: 5 of 5 on categories with objects" in err
    assert "--category-map index1: 2 of 5 on categories with objects" in err
    assert "'tv' 2, 'bicycle' 1, 'motorcycle' 1, 'sheep' 1" in err  # where the ids as written put them


def test_coco91_ids_over_yolo_scored_with_coco91(coco_named_yolo, capsys):
    root, predictions = coco_named_yolo
    code, out, err = _run(
        ["evaluate", "--gt", root, "--dt", predictions, "--protocol", "coco50", "-q", "--format", "json",
         "--category-map", "coco91"],
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
        ["evaluate", "--gt", root, "--dt", predictions, "--protocol", "coco50", "-q", "--category-map", "index1"],
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
    code, out, err = _run(["evaluate", "--gt", root, "--dt", tmp_path / "p.json", "--protocol", "coco50", "-q"], capsys)
    assert code == 3, out
    assert "look like COCO's 91-style ids (1..90 with gaps)" in err
    assert "pass --category-map coco91" in err
