"""Per-image diagnostics (``result.per_image``, ``--per-image``) and ``--matches`` that explains itself.

The per-image counts are checked against the per-class counts of :func:`at_confidence` (their sums
over images), and ``ap_gain`` against re-evaluating the input with the image's errors actually
fixed (its false positives deleted, a perfect top-scored detection added per missed object).
"""

import csv
import io
import json
import warnings

import numpy as np
import pytest

import deteval
from deteval.analysis import at_confidence, match_columns
from deteval.cli import main
from deteval.io import load_detections, load_ground_truth
from deteval.per_image import ERROR_WORDS, MATCH_OUTCOME_WORDS, explained_matches, per_image
from deteval.report import format_matches_csv
from deteval.tide.result import MAIN_ERRORS
from tests import ROOT
from tests.crosscheck.generate import generate

FX = ROOT / "fixtures"
SEEDS = range(6)
PROTOCOLS = ("coco", "voc2010", "voc2007")


def _values(seed):
    gt_dict, results = generate(seed, max_images=12, max_classes=4)
    gt = load_ground_truth(gt_dict)
    dt = load_detections(results, gt)
    return gt_dict, results, gt, dt


def _evaluate(gt, dt, protocol):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deteval.DetevalWarning)
        return deteval.evaluate(gt, dt, protocol)


def _lane_ap(result, threshold):
    t = list(result.protocol.iou_thresholds).index(threshold)
    ap = result.ap[t, :, 0, -1]
    return float(np.nanmean(ap)) if (~np.isnan(ap)).any() else float("nan")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("confidence", [None, 0.5])
def test_per_image_counts_sum_to_the_per_class_counts(seed, protocol, confidence):
    _, _, gt, dt = _values(seed)
    result = _evaluate(gt, dt, protocol)
    p = per_image(result, gt, dt, confidence=confidence)
    per_class = at_confidence(result, -np.inf if confidence is None else confidence)
    for key in ("tp", "fp", "fn"):
        assert int(getattr(p, key).sum()) == sum(row[key] for row in per_class), key
    # The TIDE types of the false positives add up to them, image by image.
    assert np.array_equal(sum(p.errors[k] for k in MAIN_ERRORS if k != "miss"), p.fp)
    assert np.all(p.errors["miss"] <= p.fn)
    assert p.ap == pytest.approx(_lane_ap(result, p.iou_threshold), nan_ok=True, abs=1e-12)


def test_per_image_at_another_threshold_and_its_f1():
    _, _, gt, dt = _values(3)
    result = _evaluate(gt, dt, "coco")
    p = per_image(result, gt, dt, iou_threshold=0.75)
    assert p.iou_threshold == 0.75
    per_class = at_confidence(result, -np.inf, iou_threshold=0.75)
    assert int(p.tp.sum()) == sum(row["tp"] for row in per_class)
    with np.errstate(invalid="ignore"):
        expected = 2 * p.tp / (2 * p.tp + p.fp + p.fn)
    assert np.allclose(p.f1, expected, equal_nan=True)
    with pytest.raises(deteval.ConfigError, match="not one of the protocol's thresholds"):
        per_image(result, gt, dt, iou_threshold=0.33)


def _fixed_input(gt_dict, results, result, gt, dt, image_row, threshold):
    """The detections of ``results`` with image ``image_row``'s errors fixed in the input."""
    table = result.table
    lane = list(result.protocol.iou_thresholds).index(threshold)
    is_fp = ~table.lane_is_tp(lane) & ~table.lane_is_ignored(lane)
    drop = set(table.det_order[is_fp & (table.det_image == image_row)].tolist())
    fixed = [r for i, r in enumerate(results) if i not in drop]
    m = explained_matches(result, gt, dt, iou_threshold=threshold)
    for g in m.missed_gt_row[gt.image[m.missed_gt_row] == image_row].tolist():
        ann = gt_dict["annotations"][g]
        fixed.append(
            {
                "image_id": ann["image_id"],
                "category_id": ann["category_id"],
                "bbox": ann["bbox"],
                "score": 2.0,
            }
        )
    return fixed


#: Generated datasets where no (image, class) exceeds max_dets (seed 5 does: its removed false
#: positives would let detections beyond the cap in, which the definition leaves out).
GAIN_SEEDS = (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)


@pytest.mark.parametrize("seed", GAIN_SEEDS)
@pytest.mark.parametrize("protocol", ["coco", "voc2010", "voc2007", "ultralytics", "ultralytics-8.3"])
def test_ap_gain_is_the_gain_of_fixing_the_image_in_the_input(seed, protocol):
    gt_dict, results, gt, dt = _values(seed)
    result = _evaluate(gt, dt, protocol)
    assert result.table.n_over_max_dets == 0  # the definition's premise (module Notes)
    p = per_image(result, gt, dt)
    ranking = p.ranking()
    m = explained_matches(result, gt, dt, iou_threshold=p.iou_threshold)
    # A degenerate box (w or h 0) can be matched by no detection: "found" has no input form there.
    no_area = m.missed_gt_row[(m.missed_box[:, 2] <= 0) | (m.missed_box[:, 3] <= 0)]
    checkable = [i for i in ranking.tolist() if i not in set(gt.image[no_area].tolist())]
    assert checkable
    for image_row in checkable[:4]:
        fixed = _fixed_input(gt_dict, results, result, gt, dt, image_row, p.iou_threshold)
        again = _evaluate(gt, load_detections(fixed, gt), protocol)
        expected = _lane_ap(again, p.iou_threshold) - p.ap
        assert p.ap_gain[image_row] == pytest.approx(expected, abs=1e-12), image_row
    # the ranking is by gain, largest first
    gains = p.ap_gain[ranking]
    assert np.all(gains[:-1] >= gains[1:])


def test_ap_gain_budget_leaves_the_rest_undefined():
    _, _, gt, dt = _values(2)
    result = _evaluate(gt, dt, "coco")
    full = per_image(result, gt, dt)
    part = per_image(result, gt, dt, max_rows=1)
    computed = ~np.isnan(part.ap_gain)
    assert np.allclose(part.ap_gain[computed], full.ap_gain[computed])
    has_errors = (full.fp + full.fn) > 0
    assert np.isnan(part.ap_gain[has_errors]).any()


@pytest.mark.parametrize("seed", SEEDS)
def test_explained_matches_agree_with_the_matching(seed):
    _, _, gt, dt = _values(seed)
    result = _evaluate(gt, dt, "coco")
    m = explained_matches(result, gt, dt)
    c = m.columns
    t = m.iou_thresholds.index(m.iou_threshold)
    assert np.array_equal(m.outcome_by_threshold[t], c.outcome)
    matched = c.has_gt
    assert np.all(np.isnan(m.iou[~matched]))
    assert np.all(m.iou[matched & (c.outcome == 0)] >= m.iou_threshold)
    assert np.all(np.isnan(m.best_iou[matched]))
    # an unmatched detection's best overlap names a ground truth of its image
    named = m.best_gt_row >= 0
    assert np.array_equal(gt.image[m.best_gt_row[named]], c.image_row[named])
    assert set(ERROR_WORDS[e] for e in m.error[c.outcome == 2]) <= set(ERROR_WORDS[1:])
    assert np.all(m.error[c.outcome != 2] == 0)
    assert len(m.missed_gt_row) == int(per_image(result, gt, dt).fn.sum())


def test_matches_csv_keeps_the_old_columns_first_and_adds_rows_for_missed_objects(tmp_path, capsys):
    out = tmp_path / "m.csv"
    gt_path, dt_path = FX / "coco" / "gt.json", FX / "coco" / "dt.json"
    assert main(["evaluate", "--gt", str(gt_path), "--dt", str(dt_path), "-q", "--matches", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    header = text.splitlines()[0].split(",")
    old = "detection,image_id,category_id,category,score,outcome,gt_annotation_id".split(",")
    assert header[: len(old)] == old
    labels = ["outcome_" + x for x in ("50", "55", "60", "65", "70", "75", "80", "85", "90", "95")]
    assert header[len(old) :] == [
        "x",
        "y",
        "w",
        "h",
        *labels,
        "iou",
        "best_iou",
        "best_gt",
        "best_gt_category",
        "error",
    ]
    # the old columns' text is the old writer's, line by line, for the detections
    result = _evaluate(str(gt_path), str(dt_path), "coco")
    before = format_matches_csv(result, match_columns(result)).splitlines()
    for line, was in zip(text.splitlines()[1:], before[1:], strict=False):
        assert line.startswith(was + ","), (line, was)
    detections = [r for r in rows if r["outcome"] != "fn"]
    missed = [r for r in rows if r["outcome"] == "fn"]
    assert len(detections) == len(before) - 1
    assert missed
    assert all(r["detection"] == "" and r["score"] == "" and r["gt_annotation_id"] for r in missed)
    assert {r["outcome_50"] for r in missed} == {"fn"}
    for r in detections:
        assert r["outcome_50"] == r["outcome"]
        assert set(r[k] for k in labels) <= set(MATCH_OUTCOME_WORDS[:3])
        if r["gt_annotation_id"]:
            assert r["iou"]
            assert not r["best_iou"]
        else:
            assert not r["iou"]
        assert (r["error"] != "") == (r["outcome"] == "fp")
    assert all(float(r["w"]) >= 0 for r in rows)


def test_per_image_cli_csv_and_json(tmp_path, capsys):
    out, doc_path = tmp_path / "images.csv", tmp_path / "r.json"
    gt_path, dt_path = FX / "coco" / "gt.json", FX / "coco" / "dt.json"
    argv = ["evaluate", "--gt", str(gt_path), "--dt", str(dt_path), "-q", "--protocol", "voc2010"]
    assert main([*argv, "--per-image", str(out), "--confidence", "0.7", "--output", str(doc_path)]) == 0
    capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert list(rows[0]) == [
        "protocol",
        "rank",
        "image_id",
        "file_name",
        "tp",
        "fp",
        "fn",
        "ignored",
        "f1",
        "cls",
        "loc",
        "both",
        "dupe",
        "bkg",
        "miss",
        "ap_gain",
    ]
    doc = json.loads(doc_path.read_text())
    entry = doc["results"][0]["per_image"]
    assert entry["confidence"] == 0.7
    assert entry["iou_threshold"] == 0.5
    per_class = doc["results"][0]["at_confidence"]["per_class"]
    for key in ("tp", "fp", "fn"):
        assert sum(int(r[key]) for r in rows) == sum(r[key] for r in per_class)
        assert sum(r[key] for r in entry["images"]) == sum(r[key] for r in per_class)
    assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
    # without the flag, no key (ordinary runs do not pay for it)
    assert main([*argv, "--format", "json"]) == 0
    assert "per_image" not in json.loads(capsys.readouterr().out)["results"][0]


def test_per_image_iou_flag_and_a_threshold_the_protocol_lacks(tmp_path, capsys):
    out = tmp_path / "images.csv"
    gt_path, dt_path = FX / "coco" / "gt.json", FX / "coco" / "dt.json"
    argv = ["evaluate", "--gt", str(gt_path), "--dt", str(dt_path), "-q", "--per-image", str(out)]
    assert main([*argv, "--per-image-iou", "0.75", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["per_image"]["iou_threshold"] == 0.75
    assert main([*argv, "--per-image-iou", "0.33"]) == 3
    assert "not one of the protocol's thresholds" in capsys.readouterr().err


def test_python_on_request():
    gt_path, dt_path = str(FX / "coco" / "gt.json"), str(FX / "coco" / "dt.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", deteval.DetevalWarning)
        plain = deteval.evaluate(gt_path, dt_path, "coco")
        asked = deteval.evaluate(gt_path, dt_path, "coco", per_image=True, matches=True)
    assert plain.per_image is None
    assert plain.matches is None
    assert "per_image" not in plain.to_dict()
    assert "matches" not in plain.to_dict()
    d = asked.to_dict()
    assert d["per_image"]["images"][0]["rank"] == 1
    assert d["matches"]["rows"][0]["detection"] == 0
    assert d["metrics"] == plain.to_dict()["metrics"]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("protocol", ["coco", "voc2007"])
def test_explained_csv_from_byte_tables_is_the_row_writers_text(seed, protocol):
    from deteval.report import format_explained_matches_csv
    from deteval.report.per_image import _explained_rows_csv

    _, _, gt, dt = _values(seed)
    result = _evaluate(gt, dt, protocol)
    m = explained_matches(result, gt, dt)
    assert format_explained_matches_csv(result, m) == _explained_rows_csv(result, m)
    # no overlap names no object
    assert np.all(m.best_gt_row[m.best_iou == 0] == -1)


@pytest.mark.parametrize(
    ("gt_name", "dt_name", "protocol"),
    [
        ("segm/gt.json", "segm/dt.json", deteval.get_protocol("coco").replace(iou_type="segm")),
        ("coco/gt.json", "coco/dt.json", deteval.get_protocol("coco").replace(class_agnostic=True)),
    ],
    ids=["segm", "class-agnostic"],
)
def test_masks_and_pooled_classes(gt_name, dt_name, protocol):
    gt = load_ground_truth(str(FX / gt_name))
    dt = load_detections(str(FX / dt_name), gt)
    result = _evaluate(gt, dt, protocol)
    p = per_image(result, gt, dt, confidence=0.5)
    per_class = at_confidence(result, 0.5)
    for key in ("tp", "fp", "fn"):
        assert int(getattr(p, key).sum()) == sum(row[key] for row in per_class), key
    m = explained_matches(result, gt, dt)
    assert len(m.columns.detection) == len(result.table.det_score)
    assert np.all(m.iou[m.columns.outcome == 0] >= m.iou_threshold)


def test_values_the_result_was_not_scored_from_are_refused():
    _, _, gt, dt = _values(0)
    _, _, other_gt, other_dt = _values(1)
    result = _evaluate(gt, dt, "coco")
    with pytest.raises(deteval.ConfigError, match="expected the ground truth and detections the result"):
        per_image(result, other_gt, other_dt)
    with pytest.raises(deteval.ConfigError, match="expected the ground truth and detections the result"):
        explained_matches(result, other_gt, other_dt)
    fewer = dt.take(np.arange(1, len(dt)))  # the same ground truth, other detections
    with pytest.raises(deteval.ConfigError, match=r"found other values \(detections differ\)"):
        per_image(result, gt, fewer)
    with pytest.raises(deteval.ConfigError, match=r"found other values \(detections differ\)"):
        explained_matches(result, gt, fewer)


def test_per_image_with_several_detectors_is_refused(tmp_path, capsys):
    gt_path, dt_path = str(FX / "coco" / "gt.json"), str(FX / "coco" / "dt.json")
    argv = [
        "evaluate",
        "--gt",
        gt_path,
        "--dt",
        dt_path,
        "--dt",
        dt_path,
        "-q",
        "--per-image",
        str(tmp_path / "x.csv"),
    ]
    assert main(argv) == 3
    assert "--per-image: not available with several --dt" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_matches_json_has_the_csv_rows(tmp_path, capsys):
    out = tmp_path / "m.csv"
    gt_path, dt_path = str(FX / "coco" / "gt.json"), str(FX / "coco" / "dt.json")
    argv = ["evaluate", "--gt", gt_path, "--dt", dt_path, "-q", "--protocol", "voc2010", "--protocol", "coco"]
    assert main([*argv, "--matches", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    entry = doc["results"][0]["matches"]  # the first protocol's, as the CSV
    assert "matches" not in doc["results"][1]
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert entry["columns"] == list(rows[0])
    assert len(entry["rows"]) == len(rows)
    for as_json, as_csv in zip(entry["rows"], rows, strict=True):
        for key, value in as_csv.items():
            expected = as_json[key]
            assert value == ("" if expected is None else str(expected)), key


def test_per_image_iou_alone_is_refused(capsys):
    gt_path, dt_path = str(FX / "coco" / "gt.json"), str(FX / "coco" / "dt.json")
    assert main(["evaluate", "--gt", gt_path, "--dt", dt_path, "-q", "--per-image-iou", "0.75"]) == 3
    assert "--per-image-iou 0.75: expected --per-image FILE.csv with it" in capsys.readouterr().err


def test_per_image_never_overwrites_an_input(capsys):
    gt_path, dt_path = str(FX / "coco" / "gt.json"), str(FX / "coco" / "dt.json")
    before = (FX / "coco" / "dt.json").read_bytes()
    assert main(["evaluate", "--gt", gt_path, "--dt", dt_path, "-q", "--per-image", dt_path]) == 3
    assert "refusing to overwrite" in capsys.readouterr().err
    assert (FX / "coco" / "dt.json").read_bytes() == before


@pytest.mark.parametrize("seed", range(4))
def test_a_partial_budget_computes_the_top_images_first(seed):
    gt_dict, results = generate(seed, n_images=40, n_classes=4)
    gt = load_ground_truth(gt_dict)
    dt = load_detections(results, gt)
    result = _evaluate(gt, dt, "coco")
    full = per_image(result, gt, dt)
    has_errors = (full.fp + full.fn) > 0
    for budget in (2**k for k in range(6, 24)):
        part = per_image(result, gt, dt, max_rows=budget)
        computed = ~np.isnan(part.ap_gain) & has_errors
        if computed.sum() >= has_errors.sum() / 2:  # half the budget's worth: the top 3 are in
            assert set(full.ranking()[:3].tolist()) <= set(np.flatnonzero(~np.isnan(part.ap_gain)).tolist())
            assert part.ranking()[:3].tolist() == full.ranking()[:3].tolist()
            break
    else:
        pytest.fail("no budget computed half the images")
