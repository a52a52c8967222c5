"""Every row of docs/errors.md, fed through the CLI (``deteval.cli.main``) from fixtures/broken/.

For an error the contract is: exit code 3, nothing on stdout, and a message on stderr naming the
file, the record and the field (many records with one defect: the count and the first five).
For a warning: exit 0, the warning in the result JSON under ``warnings`` and on stderr, and exit
3 under ``--strict``. No case may let an exception other than ``DetevalError`` out of ``main``
(that would be a traceback for the user).

The table ``CASES`` is the map from docs/errors.md rows to broken files; docs/errors.md shows
the same table to users.
"""

from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.errors import InputError
from deteval.io import load_coco_dt, load_coco_gt
from tests import ROOT

GOOD_GT = ROOT / "fixtures" / "coco" / "gt.json"
GOOD_DT = ROOT / "fixtures" / "coco" / "dt.json"
BROKEN = ROOT / "fixtures" / "broken"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """Call the CLI in-process; return (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def evaluate_json(capsys, gt, dt, *extra) -> tuple[int, str, str]:
    return run(capsys, "evaluate", "--gt", gt, "--dt", dt, "--format", "json", *extra)


@dataclass(frozen=True)
class Case:
    """One deliberately broken file and what deteval must do with it."""

    row: str  # the docs/errors.md row
    file: str  # under fixtures/broken/coco/
    exit: int  # 3: error; 0: accepted (with ``warning`` if given)
    message: tuple = ()  # substrings of the error (or warning) message
    warning: str | None = None  # substring of the counted warning (exit 0 cases)
    extra: tuple = ()  # more CLI arguments
    absent: tuple = field(default=())  # substrings that must not appear (e.g. the sixth record)
    other: str | None = None  # the good counterpart under fixtures/broken/coco (default: fixtures/coco)

    @property
    def path(self) -> Path:
        return BROKEN / "coco" / self.file

    def inputs(self) -> tuple:
        """(gt, dt): the broken file and the good fixture of the other kind."""
        if self.other is not None:
            other = BROKEN / "coco" / self.other
            return (self.path, other) if self.is_gt else (other, self.path)
        return (self.path, GOOD_DT) if self.is_gt else (GOOD_GT, self.path)

    @property
    def is_gt(self) -> bool:
        return self.file.startswith(("gt_", "segm_gt"))


CASES = {
    # -- Detections ---------------------------------------------------------------------
    "dt-unknown-image": Case(
        "detection on an image not in the ground truth",
        "dt_unknown_image.json",
        3,
        (
            "dt_unknown_image.json",
            "7 detections",
            "`image_id` is not an image of the ground truth",
            "#3 (image_id=99) 99",
            "#7 (image_id=103) 103",
            "and 2 more",
        ),
        absent=("#8 ",),
    ),
    "dt-empty": Case(
        "empty results `[]`",
        "dt_empty.json",
        0,
        warning="no detections: every class with ground truth gets AP 0",
    ),
    "dt-unknown-category": Case(
        "category id not in the ground truth",
        "dt_unknown_category.json",
        3,
        ("dt_unknown_category.json", "detection #2 (image_id=3)", "`category_id`", "found 7 (integer)"),
    ),
    "dt-unknown-category-drop": Case(
        "category id not in the ground truth (flag)",
        "dt_unknown_category.json",
        0,
        warning="dropped 1 detections of categories not in the ground truth (ids [7])",
        extra=("--drop-unknown-categories",),
    ),
    "dt-id-string": Case(
        "id of the wrong JSON type (string)",
        "dt_id_string.json",
        3,
        ("dt_id_string.json", "detection #1", "`image_id` is not an integer", "found '1' (string)"),
    ),
    "dt-id-float": Case(
        "id of the wrong JSON type (float)",
        "dt_id_float.json",
        3,
        ("dt_id_float.json", "detection #1", "`category_id` is not an integer", "found 1.0 (number)"),
    ),
    "dt-id-bool": Case(
        "id of the wrong JSON type (bool)",
        "dt_id_bool.json",
        3,
        ("dt_id_bool.json", "detection #1", "`image_id` is not an integer", "found True (boolean)"),
    ),
    "dt-negative-size": Case(
        "width or height < 0",
        "dt_negative_size.json",
        3,
        (
            "dt_negative_size.json",
            "detection #3 (image_id=1)",
            "`bbox` has a negative width or height",
            "[560, 400, -40, 40]",
        ),
    ),
    "dt-zero-size": Case(
        "width or height exactly 0",
        "dt_zero_size.json",
        0,
        warning="1 detections with a zero width or height",
    ),
    "dt-nan-score": Case(
        "NaN or inf in a coordinate or score (NaN token)",
        "dt_nan_score.json",
        3,
        ("dt_nan_score.json", "invalid JSON", "line 11", "NaN/Infinity are not JSON"),
    ),
    "dt-infinity-coordinate": Case(
        "NaN or inf in a coordinate or score (Infinity token)",
        "dt_infinity_coordinate.json",
        3,
        ("dt_infinity_coordinate.json", "invalid JSON", "line 8", "NaN/Infinity are not JSON"),
    ),
    "dt-overflow-number": Case(
        "NaN or inf in a coordinate or score (1e999 overflows)",
        "dt_overflow_number.json",
        3,
        ("dt_overflow_number.json", "infinity", "line 11"),
    ),
    "dt-scores-outside-unit": Case("scores outside [0, 1]", "dt_scores_outside_unit.json", 0),
    "dt-xyxy": Case(
        "boxes that look like the wrong encoding (xyxy)",
        "dt_xyxy_as_xywh.json",
        0,
        warning="are they [x1, y1, x2, y2] given as [x, y, w, h]?",
    ),
    "dt-normalized": Case(
        "boxes that look like the wrong encoding (normalized)",
        "dt_normalized.json",
        0,
        warning="are the boxes normalized?",
    ),
    "dt-over-max-dets": Case(
        "more detections per image and class than max_dets",
        "dt_over_max_dets.json",
        0,
        warning="20 detections beyond max_dets=100",
    ),
    "dt-segmentation-only": Case(
        "mixed bbox and segm records (segm-only record in a bbox evaluation)",
        "dt_segmentation_only.json",
        3,
        ("dt_segmentation_only.json", "#4", "no `bbox`", "iou_type 'bbox'"),
    ),
    "dt-bbox-five-numbers": Case(
        "bbox of the wrong length",
        "dt_bbox_five_numbers.json",
        3,
        (
            "dt_bbox_five_numbers.json",
            "detection #4 (image_id=2)",
            "`bbox` has 5 numbers: a rotated box whose angle unit cannot be told",
            "as `obb` [cx, cy, w, h, angle]",
            "[500, 300, 40, 40, 1]",
        ),
    ),
    "dt-missing-score": Case(
        "missing field",
        "dt_missing_score.json",
        3,
        ("dt_missing_score.json", "detection #4 (image_id=2)", "`score`", "field missing"),
    ),
    "dt-not-a-list": Case(
        "results that are not a list",
        "dt_not_a_list.json",
        3,
        ("dt_not_a_list.json", "expected a COCO results list", "found a JSON object"),
    ),
    "dt-truncated": Case(
        "truncated file", "dt_truncated.json", 3, ("dt_truncated.json", "invalid JSON", "line 33")
    ),
    "dt-duplicate-key": Case(
        "JSON with duplicate keys in a record",
        "dt_duplicate_key.json",
        3,
        ("dt_duplicate_key.json", "duplicate key 'score'", "0.95", "0.05"),
    ),
    # -- Ground truth -------------------------------------------------------------------
    "gt-annotation-id-zero": Case("annotation id 0", "gt_annotation_id_zero.json", 0),
    "gt-duplicate-annotation-id": Case(
        "duplicate annotation ids",
        "gt_duplicate_annotation_id.json",
        3,
        ("gt_duplicate_annotation_id.json", "duplicate annotation ids", "id 2 at annotation #1 and #4"),
    ),
    "gt-duplicate-image-id": Case(
        "duplicate image ids",
        "gt_duplicate_image_id.json",
        3,
        ("gt_duplicate_image_id.json", "duplicate image ids", "id 3 at image #2 and #3"),
    ),
    "gt-duplicate-category-id": Case(
        "duplicate category ids",
        "gt_duplicate_category_id.json",
        3,
        ("gt_duplicate_category_id.json", "duplicate category ids", "id 1 at category #0 and #3"),
    ),
    "gt-missing-area": Case(
        "missing `area`",
        "gt_missing_area.json",
        3,
        (
            "gt_missing_area.json",
            "7 annotations",
            "no `area`",
            "--area-from-box",
            "#1 (id=2, image_id=1)",
            "#5 (id=6, image_id=4)",
            "and 2 more",
        ),
        absent=("#6 (id=7",),
    ),
    "gt-missing-area-from-box": Case(
        "missing `area` (computed when asked)",
        "gt_missing_area.json",
        0,
        warning="7 annotations without `area`: used the box's w*h",
        extra=("--area-from-box",),
    ),
    "gt-negative-area": Case(
        "`area` < 0",
        "gt_negative_area.json",
        3,
        ("gt_negative_area.json", "annotation #2 (id=3, image_id=2)", "`area` is negative", "-5400"),
    ),
    "gt-infinite-area": Case(
        "`area` non-finite",
        "gt_infinite_area.json",
        3,
        ("gt_infinite_area.json", "invalid JSON", "NaN/Infinity are not JSON"),
    ),
    "gt-zero-area": Case(
        "`area` 0 or a zero-width box",
        "gt_zero_area.json",
        0,
        warning="1 annotations with zero area or a zero-width/height box",
    ),
    "gt-iscrowd-string": Case(
        "`iscrowd` not 0/1 (string)",
        "gt_iscrowd_string.json",
        3,
        (
            "gt_iscrowd_string.json",
            "annotation #1 (id=2, image_id=1)",
            "`iscrowd` is not 0 or 1",
            "found '0' (string)",
        ),
    ),
    "gt-crowdindex-missing": Case(
        "CrowdPose `crowdIndex` missing, a string, or NaN",
        "gt_crowdindex_missing.json",
        3,
        (
            "gt_crowdindex_missing.json",
            "image #2 (id=3)",
            "no `crowdIndex` (other images have CrowdPose's crowd index)",
            "found nothing (field missing)",
        ),
    ),
    "gt-crowdindex-string": Case(
        "CrowdPose `crowdIndex` missing, a string, or NaN",
        "gt_crowdindex_string.json",
        3,
        (
            "gt_crowdindex_string.json",
            "image #1 (id=2)",
            "`crowdIndex` is not a finite number",
            "found '0.5' (string)",
        ),
    ),
    "gt-crowdindex-nan": Case(  # NaN is not JSON: the parser refuses it, naming its line and column
        "CrowdPose `crowdIndex` missing, a string, or NaN",
        "gt_crowdindex_nan.json",
        3,
        ("gt_crowdindex_nan.json", "line 15 column 18", "NaN/Infinity are not JSON"),
    ),
    "gt-iscrowd-two": Case(
        "`iscrowd` not 0/1 (2)",
        "gt_iscrowd_two.json",
        3,
        (
            "gt_iscrowd_two.json",
            "annotation #1 (id=2, image_id=1)",
            "`iscrowd` is not 0 or 1",
            "found 2 (integer)",
        ),
    ),
    "gt-ignore-field": Case("explicit `ignore` field", "gt_ignore_field.json", 0),
    "gt-id-string": Case(
        "id of the wrong JSON type (ground truth)",
        "gt_id_string.json",
        3,
        ("gt_id_string.json", "image #0", "`id` is not an integer", "'1' (string)"),
    ),
    "gt-duplicate-key": Case(
        "JSON with duplicate keys in a record (ground truth)",
        "gt_duplicate_key.json",
        3,
        ("gt_duplicate_key.json", "duplicate key 'iscrowd'"),
    ),
    "gt-truncated": Case(
        "truncated file (ground truth)", "gt_truncated.json", 3, ("gt_truncated.json", "invalid JSON")
    ),
    "gt-results-file": Case(
        "results file given as ground truth",
        "gt_results_file.json",
        3,
        ("gt_results_file.json", "looks like a results file"),
    ),
    "gt-missing-categories": Case(
        "missing `categories`",
        "gt_missing_categories.json",
        3,
        ("gt_missing_categories.json", "missing `categories`"),
    ),
    "gt-formula-names": Case("class names starting with = + - @", "gt_formula_names.json", 0),
    # -- Polygons and masks (iou_type segm; validation is deteval.masks) ---------------------
    "segm-valid-gt": Case(
        "polygon baseline (valid ground truth)",
        "segm_gt.json",
        0,
        other="segm_dt.json",
        extra=("--iou-type", "segm"),
    ),
    "segm-valid-dt": Case(
        "polygon baseline (valid detections)",
        "segm_dt.json",
        0,
        other="segm_gt.json",
        extra=("--iou-type", "segm"),
    ),
    "segm-two-points": Case(
        "fewer than 3 distinct points",
        "segm_dt_two_points.json",
        3,
        (
            "segm_dt_two_points.json",
            "detection #1 (image_id=1)",
            "fewer than 3 distinct points",
            "[100, 10, 150, 90, 100, 10]",
        ),
        other="segm_gt.json",
        extra=("--iou-type", "segm"),
    ),
    "segm-odd-coordinates": Case(
        "odd coordinate count",
        "segm_gt_odd_coordinates.json",
        3,
        ("segm_gt_odd_coordinates.json", "annotation #2 (id=3, image_id=2)", "odd number of coordinates"),
        other="segm_dt.json",
        extra=("--iou-type", "segm"),
    ),
    "segm-four-numbers": Case(
        "4 numbers read as a box",
        "segm_gt_four_numbers.json",
        3,
        (
            "segm_gt_four_numbers.json",
            "annotation #2 (id=3, image_id=2)",
            "fewer than 3 points",
            "4 numbers as a box",
        ),
        other="segm_dt.json",
        extra=("--iou-type", "segm"),
    ),
    "segm-self-intersecting": Case(
        "self-intersecting polygon",
        "segm_dt_self_intersecting.json",
        3,
        (
            "segm_dt_self_intersecting.json",
            "detection #0 (image_id=1)",
            "self-intersecting",
            "invalid_polygons=even_odd",
        ),
        other="segm_gt.json",
        extra=("--iou-type", "segm", "--mask-iou", "exact", "--set", "invalid_polygons=error"),
    ),
    "segm-absurd-coordinates": Case(
        "NaN or absurd (1e9) coordinates (absurd)",
        "segm_dt_absurd_coordinates.json",
        3,
        ("segm_dt_absurd_coordinates.json", "detection #0 (image_id=1)", "beyond +-1e+07"),
        other="segm_gt.json",
        extra=("--iou-type", "segm", "--mask-iou", "raster"),
    ),
    "segm-nan-coordinate": Case(
        "NaN or absurd (1e9) coordinates (NaN)",
        "segm_dt_nan_coordinate.json",
        3,
        ("segm_dt_nan_coordinate.json", "invalid JSON", "NaN/Infinity are not JSON"),
        other="segm_gt.json",
        extra=("--iou-type", "segm"),
    ),
    "segm-mixed-records": Case(
        "mixed bbox and segm records (segm evaluation)",
        "segm_dt_mixed_records.json",
        3,
        ("segm_dt_mixed_records.json", "detection #2 (image_id=3)", "no `segmentation`"),
        other="segm_gt.json",
        extra=("--iou-type", "segm"),
    ),
    "segm-mixed-records-bbox": Case(
        "mixed bbox and segm records (bbox evaluation)",
        "segm_dt_mixed_records.json",
        3,
        ("segm_dt_mixed_records.json", "(#5)", "no `bbox`"),
        other="segm_gt.json",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_broken_file_through_cli(capsys, name):
    case = CASES[name]
    code, out, err = evaluate_json(capsys, *case.inputs(), *case.extra)
    assert code == case.exit, err
    if case.exit == 3:
        assert out == "", "stdout must hold no partial result when the exit code is 3"
        assert err.startswith("deteval: error: ")
        assert err.count("\n") == 1  # one message, no traceback
        for text in case.message:
            assert text in err, f"{text!r} not in {err!r}"
        for text in case.absent:
            assert text not in err
        return
    doc = json.loads(out)
    if case.warning is not None:
        assert any(case.warning in w for w in doc["warnings"]), doc["warnings"]
        assert "deteval: warning: " in err
        assert case.warning in err
        # --strict turns the warning into an error, with nothing on stdout
        code, out, err = evaluate_json(capsys, *case.inputs(), *case.extra, "--strict")
        assert (code, out) == (3, "")
        assert "--strict" in err
        assert case.warning in err


def test_self_intersecting_polygon_is_scored_by_default(capsys):
    """Refused only under invalid_polygons=error.

    Raster IoU (the coco default, pycocotools) takes it as is, exact IoU fills it even-odd (the
    default) or repairs it (make_valid).
    """
    gt, dt = BROKEN / "coco" / "segm_gt.json", BROKEN / "coco" / "segm_dt_self_intersecting.json"
    for extra in (
        (),
        ("--mask-iou", "exact"),
        ("--mask-iou", "exact", "--set", "invalid_polygons=make_valid"),
        ("--mask-iou", "raster"),
    ):
        code, out, err = evaluate_json(capsys, gt, dt, "--iou-type", "segm", *extra)
        assert code == 0, err


def test_segm_polygons_equal_to_boxes_give_the_box_numbers(capsys):
    box = _metrics(capsys, GOOD_GT, GOOD_DT)["results"][0]["metrics"]
    segm = _metrics(
        capsys, BROKEN / "coco" / "segm_gt.json", BROKEN / "coco" / "segm_dt.json", "--iou-type", "segm"
    )["results"][0]["metrics"]
    assert segm["AP"] == pytest.approx(box["AP"], abs=1e-12)


def test_polygon_nan_from_the_python_api_is_an_error():
    gt = json.loads((BROKEN / "coco" / "segm_gt.json").read_text())
    dt = json.loads((BROKEN / "coco" / "segm_dt.json").read_text())
    dt[3]["segmentation"] = [[560, float("nan"), 600, 400, 600, 440, 560, 440]]
    with pytest.raises(InputError, match="detection #3"):
        deteval.evaluate(gt, dt, deteval.get_protocol("coco").replace(iou_type="segm"))


def test_every_broken_file_is_a_case():
    """fixtures/broken/coco holds exactly the files of CASES (nothing untested)."""
    on_disk = {p.name for p in (BROKEN / "coco").glob("*.json")}
    assert on_disk == {c.file for c in CASES.values()}


def test_the_whole_broken_folder_never_gives_a_traceback(capsys):
    """`deteval evaluate` on each broken file (as GT and as DT) exits 0 or 3, never raises."""
    for path in sorted((BROKEN / "coco").glob("*.json")):
        for gt, dt in ((path, GOOD_DT), (GOOD_GT, path), (path, path)):
            code, out, err = evaluate_json(capsys, gt, dt)
            assert code in (0, 3), (path, err)
            assert (out == "") == (code == 3), path


# -- rows that need more than an exit code ---------------------------------------------------


def _metrics(capsys, gt, dt, *extra) -> dict:
    code, out, err = evaluate_json(capsys, gt, dt, *extra)
    assert code == 0, err
    return json.loads(out)


def test_empty_results_score_zero_for_classes_with_gt(capsys):
    doc = _metrics(capsys, GOOD_GT, BROKEN / "coco" / "dt_empty.json")
    result = doc["results"][0]
    aps = {c["name"]: c["AP"] for c in result["per_class"]}
    assert aps == {"person": 0.0, "dog": 0.0, "cat": 0.0, "bird": None}
    assert result["metrics"]["AP"] == 0.0
    assert doc["inputs"]["detections"] == 0


def test_empty_results_under_voc_protocol(capsys):
    doc = _metrics(capsys, GOOD_GT, BROKEN / "coco" / "dt_empty.json", "--protocol", "voc2007")
    assert doc["results"][0]["metrics"] == {"mAP": 0.0}


def test_scores_outside_unit_interval_only_order_matters(capsys):
    good = _metrics(capsys, GOOD_GT, GOOD_DT)
    shifted = _metrics(capsys, GOOD_GT, BROKEN / "coco" / "dt_scores_outside_unit.json")
    assert shifted["results"][0]["metrics"] == good["results"][0]["metrics"]
    assert shifted["results"][0]["per_class"] == good["results"][0]["per_class"]


def test_zero_size_detection_matches_nothing(capsys):
    """The zero-width box replaces a false positive: AP over all sizes does not change.

    (Size ranges do change: its area 0 makes it "small" instead of "medium", as in pycocotools.)
    """
    good = _metrics(capsys, GOOD_GT, GOOD_DT)["results"][0]["metrics"]
    zero = _metrics(capsys, GOOD_GT, BROKEN / "coco" / "dt_zero_size.json")["results"][0]["metrics"]
    assert [zero[k] for k in ("AP", "AP50", "AP75", "AR1", "AR10", "AR100")] == [
        good[k] for k in ("AP", "AP50", "AP75", "AR1", "AR10", "AR100")
    ]


def test_drop_unknown_category_scores_the_rest(capsys):
    doc = _metrics(capsys, GOOD_GT, BROKEN / "coco" / "dt_unknown_category.json", "--drop-unknown-categories")
    assert doc["inputs"]["detections"] == 12


def test_annotation_id_zero_is_matched_by_default(capsys):
    """Ids are not match flags: renumbering annotation 1 to 0 changes nothing under `coco`."""
    good = _metrics(capsys, GOOD_GT, GOOD_DT)
    zero = _metrics(capsys, BROKEN / "coco" / "gt_annotation_id_zero.json", GOOD_DT)
    assert zero["results"][0]["metrics"] == good["results"][0]["metrics"]


def test_annotation_id_zero_under_parity_reproduces_pycocotools(capsys):
    """coco-pycocotools never matches annotation id 0, as pycocotools does (its match flag is the id)."""
    from tests.reference.run_pycocotools import run_pycocotools

    path = BROKEN / "coco" / "gt_annotation_id_zero.json"
    parity = _metrics(capsys, path, GOOD_DT, "--protocol", "coco-pycocotools")
    good = _metrics(capsys, GOOD_GT, GOOD_DT, "--protocol", "coco-pycocotools")
    assert parity["results"][0]["metrics"]["AP"] < good["results"][0]["metrics"]["AP"]
    reference = run_pycocotools(json.loads(path.read_text()), json.loads(GOOD_DT.read_text()))
    assert parity["results"][0]["metrics"]["AP"] == pytest.approx(reference.stats[0], abs=1e-12)


def test_parity_mode_notes_pycocotools_behaviour(capsys):
    doc = _metrics(
        capsys, BROKEN / "coco" / "gt_annotation_id_zero.json", GOOD_DT, "--protocol", "coco-pycocotools"
    )
    assert any("id 0" in w for w in doc["warnings"])
    doc = _metrics(
        capsys, BROKEN / "coco" / "gt_ignore_field.json", GOOD_DT, "--protocol", "coco-pycocotools"
    )
    assert any("ignore" in w for w in doc["warnings"])


def test_ignore_field_is_honoured_and_parity_mode_overwrites_it(capsys):
    """`coco` honours `ignore` (person has one positive less); pycocotools overwrites it with iscrowd."""
    path = BROKEN / "coco" / "gt_ignore_field.json"
    honoured = _metrics(capsys, path, GOOD_DT)
    parity = _metrics(capsys, path, GOOD_DT, "--protocol", "coco-pycocotools")
    good = _metrics(capsys, GOOD_GT, GOOD_DT)

    def num_gt(doc):
        return {c["name"]: c["num_gt"] for c in doc["results"][0]["per_class"]}

    assert num_gt(honoured)["person"] == num_gt(good)["person"] - 1
    assert num_gt(parity)["person"] == num_gt(good)["person"]
    assert parity["results"][0]["metrics"] == good["results"][0]["metrics"]


def test_class_without_gt_is_null_with_a_reason(capsys):
    doc = _metrics(capsys, GOOD_GT, GOOD_DT)
    bird = [c for c in doc["results"][0]["per_class"] if c["name"] == "bird"][0]
    assert bird["AP"] is None
    assert bird["num_gt"] == 0
    # The protocol defines it (COCO: undefined, left out of the mean): a note, not a warning,
    # so --strict does not refuse a split where a listed class has no object.
    assert any("no ground truth" in n and "bird" in n for n in doc["notes"])
    assert not any("no ground truth" in w for w in doc["warnings"])


def test_missing_area_from_box_uses_w_times_h(capsys):
    """With --area-from-box the fixture's boxes give back its areas (they are w*h there)."""
    good = _metrics(capsys, GOOD_GT, GOOD_DT)
    computed = _metrics(capsys, BROKEN / "coco" / "gt_missing_area.json", GOOD_DT, "--area-from-box")
    assert computed["results"][0]["metrics"] == good["results"][0]["metrics"]


def test_many_unknown_images_name_the_first_five_and_count(capsys):
    code, out, err = evaluate_json(capsys, GOOD_GT, BROKEN / "coco" / "dt_unknown_image.json")
    assert code == 3
    assert out == ""
    shown = [f"image_id={i}" for i in range(99, 104)]
    assert all(s in err for s in shown)
    assert "image_id=104" not in err
    assert "image_id=105" not in err


def test_max_dets_warning_is_counted_in_json_and_strict_refuses(capsys):
    path = BROKEN / "coco" / "dt_over_max_dets.json"
    doc = _metrics(capsys, GOOD_GT, path)
    assert doc["inputs"]["detections"] == 13 + 120
    code, out, err = evaluate_json(capsys, GOOD_GT, path, "--strict")
    assert (code, out) == (3, "")
    assert "max_dets=100" in err


def test_warnings_are_silenced_by_quiet_but_kept_in_json(capsys):
    code, out, err = evaluate_json(capsys, GOOD_GT, BROKEN / "coco" / "dt_zero_size.json", "-q")
    assert code == 0
    assert err == ""
    assert any("zero width" in w for w in json.loads(out)["warnings"])


# -- Python API ------------------------------------------------------------------------------


def _good() -> tuple[dict, list]:
    return json.loads(GOOD_GT.read_text()), json.loads(GOOD_DT.read_text())


@pytest.mark.parametrize("protocol", ["coco", "coco-pycocotools", "voc2007"])
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")  # a missing iscrowd, on purpose
def test_callers_lists_and_dicts_are_never_mutated(protocol):
    gt, dt = _good()
    gt["annotations"][0]["ignore"] = 0
    del gt["annotations"][1]["iscrowd"]  # pycocotools would add it; deteval must not
    before_gt, before_dt = copy.deepcopy(gt), copy.deepcopy(dt)
    deteval.evaluate(gt, dt, protocol)
    assert gt == before_gt
    assert dt == before_dt
    # dict order and identity of the records untouched too
    assert [list(r) for r in dt] == [list(r) for r in before_dt]


@pytest.mark.parametrize(
    ("where", "change", "field_name"),
    [
        ("dt", lambda gt, dt: dt[2].update(score=float("nan")), "`score` is not a finite number"),
        ("dt", lambda gt, dt: dt[2].update(bbox=[1, 2, float("nan"), 4]), "`bbox` has a value that is not"),
        ("dt", lambda gt, dt: dt[2].update(bbox=[1, 2, float("inf"), 4]), "`bbox` has a value that is not"),
        ("dt", lambda gt, dt: dt[2].update(score=float("-inf")), "`score` is not a finite number"),
        (
            "gt",
            lambda gt, dt: gt["annotations"][2].update(area=float("nan")),
            "`area` is not a finite number",
        ),
        (
            "gt",
            lambda gt, dt: gt["annotations"][2].update(bbox=[float("nan"), 0, 1, 1]),
            "`bbox` has a value",
        ),
        ("gt", lambda gt, dt: gt["images"][2].update(width=float("inf")), "`width` is not a finite number"),
    ],
)
def test_nan_in_python_api_input_is_an_error(where, change, field_name):
    gt, dt = _good()
    change(gt, dt)
    with pytest.raises(InputError, match="#2") as info:
        deteval.evaluate(gt, dt)
    assert field_name in str(info.value)
    assert ("<detections>" if where == "dt" else "<ground truth>") in str(info.value)


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")  # _good(): a class without GT
def test_numpy_scalars_from_the_api_are_accepted():
    gt, dt = _good()
    for r in dt:
        r["score"] = np.float32(r["score"])
        r["image_id"] = np.int64(r["image_id"])
    result = deteval.evaluate(gt, dt)
    assert math.isclose(result.metrics["AP"], deteval.evaluate(*_good()).metrics["AP"], rel_tol=1e-6)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda gt: gt["annotations"].append(7), "annotation #8 (in `annotations`): is not a JSON object"),
        (lambda gt: gt.update(images={"id": 1}), "`images` is not an array"),
        (lambda gt: gt["images"][1].update(height=-480), "image #1 (id=2): `height` is negative"),
        (lambda gt: gt["categories"][1].update(name=5), "category #1 (id=2): `name` is not a string"),
        (lambda gt: gt["annotations"][3].update(image_id=77), "`image_id` is not in `images`"),
        (lambda gt: gt["annotations"][3].update(category_id=77), "`category_id` is not in `categories`"),
        (lambda gt: gt["annotations"][3].pop("bbox"), "annotation #3 (id=4, image_id=2): no `bbox`"),
        (lambda gt: gt["annotations"][3].update(bbox=[0, 0, -1, 1]), "negative width or height"),
        (lambda gt: gt["annotations"][3].update(id=2**64), "`id` is not an integer"),
        (lambda gt: gt["annotations"][3].update(iscrowd=None), "`iscrowd` is not 0 or 1"),
        (lambda gt: gt["annotations"][3].update(ignore="yes"), "`ignore` is not 0 or 1"),
    ],
)
def test_more_ground_truth_defects_name_the_record(change, message):
    gt, _ = _good()
    change(gt)
    with pytest.raises(InputError, match="^<ground truth>: ") as info:
        load_coco_gt(gt)
    assert message in str(info.value)


def test_many_non_objects_give_count_and_first_five():
    gt, _ = _good()
    dt = [1, "x", None, [], 2.5, True, {"a": 1}]
    with pytest.raises(InputError) as info:
        load_coco_dt(dt, load_coco_gt(gt))
    text = str(info.value)
    assert "6 detections: is not a JSON object" in text
    assert "#4 (in the results list) 2.5 (number)" in text
    assert "and 1 more" in text


def test_huge_and_deeply_nested_json_are_input_errors(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' * 900 + "1" + "}" * 900)
    code, out, err = evaluate_json(capsys, deep, GOOD_DT)
    assert (code, out) == (3, "")
    assert "deep.json" in err
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 950 + '{"k\\": ": 1}' + "]" * 950)
    code, out, err = evaluate_json(capsys, GOOD_GT, nested)
    assert (code, out) == (3, "")
    assert "nested.json" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "invalid JSON"),
        (b"\xff\xfe\x00garbage", "invalid JSON"),
        (b'[{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "score": 0.5}]]', "invalid JSON"),
    ],
)
def test_unreadable_json_is_an_input_error(tmp_path, capsys, content, message):
    path = tmp_path / "dt.json"
    path.write_bytes(content)
    code, out, err = evaluate_json(capsys, GOOD_GT, path)
    assert (code, out) == (3, "")
    assert str(path) in err
    assert message in err


def test_missing_input_file(tmp_path, capsys):
    code, out, err = evaluate_json(capsys, tmp_path / "nope.json", GOOD_DT)
    assert (code, out) == (3, "")
    assert "nope.json: file not found" in err
    code, out, err = evaluate_json(capsys, GOOD_GT, tmp_path / "nope.json")
    assert (code, out) == (3, "")
    assert "nope.json: file not found" in err


# -- VOC roots (fixtures/broken/voc/<case>/: Annotations/, ImageSets/Main/test.txt, results/) ---


@dataclass(frozen=True)
class VocCase:
    row: str
    exit: int
    message: tuple = ()
    warning: str | None = None
    extra: tuple = ()


VOC_CASES = {
    "missing_difficult": VocCase(
        "XML missing `<difficult>`",
        0,
        warning="1 objects in 1 files have no <difficult>: read as 0 (not difficult); files: ",
    ),
    "xmin_greater_than_xmax": VocCase(
        "`xmin > xmax`",
        3,
        ("Annotations/000002.xml:3", "object #0 (name='cat')", "xmin > xmax", "[40, 5, 5, 40]"),
    ),
    "outside_image": VocCase(
        "coordinates outside the image", 0, warning="1 objects extend outside their image"
    ),
    "malformed_xml": VocCase("malformed XML", 3, ("Annotations/000002.xml:5:3", "malformed XML")),
    "result_wrong_columns": VocCase(
        "result line with the wrong column count",
        3,
        ("comp4_det_test_dog.txt:1", "wrong number of columns", "found 5 columns"),
    ),
    "result_unknown_image": VocCase(
        "image id in results but not in the ground truth",
        3,
        ("comp4_det_test_dog.txt:2", "image id not in the ground truth", "'000009'"),
    ),
    "result_not_in_image_set": VocCase(
        "image id in results but not in the image set",
        3,
        ("3 lines", "comp4_det_test_cat.txt:2", "comp4_det_test_dog.txt:2", "'000002'"),
    ),
    "result_nan_score": VocCase(
        "NaN or inf in a coordinate or score (VOC result file)",
        3,
        ("comp4_det_test_cat.txt:1", "not a finite number", "'nan'"),
    ),
    "result_inverted_box": VocCase(
        "width or height < 0 (VOC x1 > x2)", 3, ("comp4_det_test_cat.txt:1", "x1 > x2", "[50, 10, 10, 60]")
    ),
    "result_unknown_class": VocCase(
        "category not in the ground truth (VOC result file of a PASCAL class this subset has no "
        "object of: scored with no ground truth, as the devkit does; other names stay errors)",
        0,
        warning="1 PASCAL classes have result files but no object in",
    ),
    "no_result_files": VocCase(
        "no result files", 3, ("no_result_files/results: no predictions found", "found README")
    ),
    "xml_billion_laughs": VocCase(
        "XML with DTD entity tricks (billion laughs)",
        3,
        ("Annotations/000002.xml:2", "refused a DOCTYPE declaration"),
    ),
    "xml_external_entity": VocCase(
        "XML with DTD entity tricks (external entity)",
        3,
        ("Annotations/000002.xml:2", "refused a DOCTYPE declaration"),
    ),
    "image_set_id_is_path": VocCase(
        "image-set ids that are paths", 3, ("ImageSets/Main/test.txt:2", "image id is a path", "'../trap'")
    ),
    "class_name_is_path": VocCase("class names that are paths", 0, warning="1 classes have no result file"),
    "formula_class_name": VocCase(
        "class names starting with = + - @ (VOC)", 0, warning="1 classes have no result file"
    ),
}


def voc_argv(case: str, *extra) -> list:
    root = BROKEN / "voc" / case
    return [
        "evaluate",
        "--gt",
        root,
        "--dt",
        root / "results",
        "--split",
        "test",
        "--protocol",
        "voc2007",
        "--format",
        "json",
        *extra,
    ]


@pytest.mark.parametrize("name", sorted(VOC_CASES))
def test_broken_voc_root_through_cli(capsys, name):
    case = VOC_CASES[name]
    code, out, err = run(capsys, *voc_argv(name, *case.extra))
    assert code == case.exit, err
    if case.exit == 3:
        assert out == ""
        assert err.startswith("deteval: error: ")
        assert err.count("\n") == 1
        for text in case.message:
            assert text in err, f"{text!r} not in {err!r}"
        return
    doc = json.loads(out)
    if case.warning is not None:
        assert any(case.warning in w for w in doc["warnings"]), doc["warnings"]
        assert case.warning in err
        code, out, err = run(capsys, *voc_argv(name, *case.extra, "--strict"))
        assert (code, out) == (3, "")
        assert case.warning in err


def test_every_broken_voc_root_is_a_case():
    assert {p.name for p in (BROKEN / "voc").iterdir() if p.is_dir()} == set(VOC_CASES)


def test_missing_difficult_reads_zero_and_names_the_file(capsys):
    """The object without <difficult> counts as a positive (difficult = 0)."""
    doc = json.loads(run(capsys, *voc_argv("missing_difficult"))[1])
    cat = [c for c in doc["results"][0]["per_class"] if c["name"] == "cat"][0]
    assert cat["num_gt"] == 2  # 000001's cat and 000002's cat (the difficult one is gone)
    assert any("missing_difficult/Annotations/000002.xml" in w for w in doc["warnings"])


def test_unknown_voc_class_file_can_be_dropped_with_a_warning(capsys):
    code, out, err = run(capsys, *voc_argv("result_unknown_class", "--drop-unknown-categories"))
    assert code == 0, err
    assert any("comp4_det_test_horse.txt" in w for w in json.loads(out)["warnings"])


def test_image_set_path_never_opens_the_trap_file(capsys, monkeypatch):
    """`../trap` is refused before any file is opened: the trap.xml next to the root stays unread."""
    import builtins

    opened = []
    real_open = builtins.open

    def spy(file, *args, **kwargs):
        opened.append(os.fspath(file) if isinstance(file, (str, os.PathLike)) else file)
        return real_open(file, *args, **kwargs)

    real_os_open = os.open

    def os_spy(file, *args, **kwargs):  # read_bytes opens with os.open (to refuse FIFOs unblocked)
        opened.append(os.fspath(file) if isinstance(file, (str, os.PathLike)) else file)
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(os, "open", os_spy)
    code, out, err = run(capsys, *voc_argv("image_set_id_is_path"))
    monkeypatch.undo()
    assert (code, out) == (3, "")
    assert any(isinstance(p, str) and p.endswith("test.txt") for p in opened)  # the spy works
    assert not any(isinstance(p, str) and p.endswith("trap.xml") for p in opened)


def test_external_entity_content_never_reaches_the_output(capsys):
    code, out, err = run(capsys, *voc_argv("xml_external_entity"))
    assert code == 3
    assert "root:" not in err


def test_class_names_that_are_paths_stay_inert(capsys):
    """`../../evil` is only a class name: no result file is looked up outside results/."""
    doc = json.loads(run(capsys, *voc_argv("class_name_is_path"))[1])
    names = [c["name"] for c in doc["results"][0]["per_class"]]
    assert names == ["../../evil", "cat", "dog"]


def test_formula_class_name_is_escaped_in_csv(capsys):
    root = BROKEN / "voc" / "formula_class_name"
    code, out, _ = run(
        capsys,
        "evaluate",
        "--gt",
        root,
        "--dt",
        root / "results",
        "--split",
        "test",
        "--protocol",
        "voc2007",
        "--format",
        "csv",
        "-q",
    )
    assert code == 0
    rows = [line for line in out.splitlines() if ",class," in line]
    assert rows[0].split(",")[2].startswith("\"'=cmd") or rows[0].split(",")[2].startswith("'=cmd")


# -- YOLO datasets (fixtures/broken/yolo/<case>/: copies of fixtures/yolo with one defect) -------

YOLO_CASES = {
    "label_class_out_of_range": VocCase(
        "YOLO class id >= number of names (labels)",
        3,
        ("labels/val/a.txt:3", "class id not in `names`", "(0=cat, 1=dog)", "found 2"),
    ),
    "prediction_class_out_of_range": VocCase(
        "YOLO class id >= number of names (predictions)",
        3,
        ("predictions/a.txt:4", "class id not in the ground truth", "found 7"),
    ),
    "missing_names": VocCase(
        "YOLO missing `names`", 3, ("missing_names/data.yaml", "no `names`", "found keys ['path', 'val']")
    ),
    "ambiguous_confidence": VocCase(
        "YOLO prediction rows whose confidence column is ambiguous",
        3,
        ("3 lines", "5 columns: no confidence column", "predictions/a.txt:1", "cls conf cx cy w h"),
    ),
    "prediction_wrong_columns": VocCase(
        "result line with the wrong column count (YOLO)",
        3,
        ("predictions/a.txt:4", "wrong number of columns", "found 7 columns"),
    ),
    "label_outside_unit": VocCase(
        "coordinates outside the image (YOLO labels are normalized)",
        3,
        ("labels/val/a.txt:3", "coordinate outside [0, 1]", "1.5 0.5 0.1 0.1"),
    ),
    "prediction_unknown_image": VocCase(
        "detection on an image not in the ground truth (YOLO)",
        3,
        ("predictions/zz.txt", "prediction file of an image not in the ground truth", "'zz'"),
    ),
    "prediction_nan": VocCase(
        "NaN or inf in a coordinate or score (YOLO)",
        3,
        ("predictions/a.txt:4", "not a finite number", "'nan'"),
    ),
    "yaml_python_tag": VocCase(
        "YAML with `!!python/...` tags (YOLO data.yaml)",
        3,
        # The one YAML policy's message (protocol files' form): file, key path, tag and line.
        ("yaml_python_tag/data.yaml: extra: tag '!!python/object/apply:os.system' (line 7) is not allowed",),
    ),
}


def yolo_argv(case: str, *extra) -> list:
    root = BROKEN / "yolo" / case
    return ["evaluate", "--gt", root, "--dt", root / "predictions", "--format", "json", *extra]


@pytest.mark.parametrize("name", sorted(YOLO_CASES))
def test_broken_yolo_dataset_through_cli(capsys, name):
    case = YOLO_CASES[name]
    code, out, err = run(capsys, *yolo_argv(name, *case.extra))
    assert code == case.exit, err
    assert out == ""
    assert err.startswith("deteval: error: ")
    assert err.count("\n") == 1
    for text in case.message:
        assert text in err, f"{text!r} not in {err!r}"
    assert not Path("/tmp/deteval-pwned").exists()


def test_every_broken_yolo_dataset_is_a_case():
    on_disk = {p.name for p in (BROKEN / "yolo").iterdir() if p.is_dir()}
    assert on_disk == set(YOLO_CASES) | {"yaml_alias_bomb"}


def test_yolo_yaml_alias_bomb_is_refused_quickly():
    """Billion laughs in data.yaml: `names: [*i]` where *i expands to 10**9 strings."""
    import subprocess
    import sys

    root = BROKEN / "yolo" / "yaml_alias_bomb"
    argv = [sys.executable, "-m", "deteval", "evaluate", "--gt", str(root), "--dt", str(root / "predictions")]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert "anchors and aliases" in proc.stderr
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr


def test_yolo_layout_flag_reads_confidence_second(capsys, tmp_path):
    """`--yolo-layout 'cls conf cx cy w h'` reads rows written in that order to the same numbers."""
    import shutil

    root = tmp_path / "yolo"
    shutil.copytree(ROOT / "fixtures" / "yolo", root)
    for path in (root / "predictions").glob("*.txt"):
        rows = [line.split() for line in path.read_text().splitlines()]
        path.write_text("".join(" ".join([r[0], r[5], *r[1:5]]) + "\n" for r in rows))
    good = _metrics(capsys, ROOT / "fixtures" / "yolo", ROOT / "fixtures" / "yolo" / "predictions")
    swapped = _metrics(capsys, root, root / "predictions", "--yolo-layout", "cls conf cx cy w h")
    assert swapped["results"][0]["metrics"] == good["results"][0]["metrics"]
    code, out, err = evaluate_json(capsys, GOOD_GT, GOOD_DT, "--yolo-layout", "cls conf cx cy w h")
    assert (code, out) == (3, "")
    assert "--yolo-layout: only for YOLO predictions" in err
