"""Every headline line of the text output is labelled with what its number is (#35).

The label of each line (AP or AR, IoU, area, maxDets) is checked against the metric's name in the
JSON output of the same run, for every preset on a fixture of the IoU type it scores. The meaning of
a name is read here from the naming conventions of the reference tools, independently of the
renderer: ``AP`` / ``AR`` over all thresholds, ``AP50`` at IoU .50, ``APs`` / ``APm`` / ``APl`` by area,
``AR1`` / ``AR10`` / ``AR100`` at a detection cap (pycocotools), ``ARs@300`` (lvis-api), ``APr`` /
``APc`` / ``APf`` over a frequency group (all areas), Ultralytics' ``mAP50`` (first threshold) and
``mAP50-95`` (all of them), and ``mAP`` alone for a single-threshold protocol.
"""

from __future__ import annotations

import json
import re

import pytest

from deteval.protocol import PRESETS
from tests import ROOT

FIX = ROOT / "fixtures"
AREAS = {"s": "small", "m": "medium", "l": "large"}
LINE = re.compile(
    r"  Average (?P<title>Precision|Recall) +\((?P<kind>AP|AR)\) "
    r"@\[ IoU=(?P<iou>\S+) *\| (?:area= *(?P<area>\S+)|type= *(?P<band>\S+)) \| maxDets= *(?P<md>\S+) \] "
    r"= (?P<value>\S+)   (?P<name>\S+)"
)


def _inputs(name: str) -> list[str]:
    """The fixture of the IoU type (and labels) preset ``name`` scores."""
    protocol = PRESETS[name]
    if protocol.summary == "crowdpose":
        return ["--gt", str(FIX / "crowdpose" / "gt.json"), "--dt", str(FIX / "crowdpose" / "dt.json")]
    if protocol.iou_type == "rotated":  # oriented boxes: the DOTA fixture
        return ["--gt", str(FIX / "dota"), "--dt", str(FIX / "dota" / "results")]
    if protocol.iou_type == "boundary":  # masks, measured along their contours
        return ["--gt", str(FIX / "segm" / "gt.json"), "--dt", str(FIX / "segm" / "dt.json")]
    if protocol.iou_type == "keypoints":
        gt, dt = FIX / "keypoints" / "gt.json", FIX / "keypoints" / "dt.json"
        return ["--gt", str(gt), "--dt", str(dt), "--set", "keypoint_sigmas=[0.1, 0.1, 0.1]"]
    if protocol.image_level_labels == "verified":  # the Open Images challenge's files and side files
        oi = FIX / "openimages"
        return ["--gt", str(oi / "boxes.csv"), "--dt", str(oi / "submission.csv"),
                "--image-labels", str(oi / "labels.csv"), "--hierarchy", str(oi / "hierarchy.json")]  # fmt: skip
    if protocol.federated_labels == "lvis":
        return ["--gt", str(FIX / "lvis" / "gt.json"), "--dt", str(FIX / "lvis" / "dt.json")]
    if protocol.mask_iou == "exact" and protocol.summary == "pycocotools":  # coco-exact-masks: segm
        return [
            "--gt",
            str(FIX / "segm" / "gt.json"),
            "--dt",
            str(FIX / "segm" / "dt.json"),
            "--iou-type",
            "segm",
        ]
    return ["--gt", str(FIX / "coco" / "gt.json"), "--dt", str(FIX / "coco" / "dt.json")]


def _expected_label(name: str, config: dict) -> tuple[str, str, str, str]:
    """(kind, IoU, area, maxDets) that metric ``name`` of a protocol with ``config`` averages."""
    thresholds = config["iou_thresholds"]
    all_iou = f"{thresholds[0]:.2f}:{thresholds[-1]:.2f}"
    max_dets = config["max_dets"]
    top = "all" if max_dets is None else str(max(max_dets))
    first_area = next(iter(config["area_ranges"]))
    if name == "mAP50":  # Ultralytics: all_ap[:, 0], the first threshold
        return "AP", f"{thresholds[0]:.2f}", first_area, top
    if name == "mAP50-95":  # Ultralytics: all_ap.mean()
        return "AP", all_iou, first_area, top
    band = re.fullmatch(r"AP\(([EMH])\)", name)
    if band:  # xtcocotools' CrowdPose bands: the images of an easy / medium / hard crowd index
        return "AP", all_iou, {"E": "easy", "M": "medium", "H": "hard"}[band[1]], top
    match = re.fullmatch(r"(AP|AR)(\d*)(?:([smlrcf])|_(\w+))?(?:@(\w+))?", name)
    assert match, f"a metric name this test cannot read: {name!r}"
    kind, digits, letter, area_name, at = match.groups()
    iou, area, md = all_iou, first_area, None
    if letter in AREAS:
        area = AREAS[letter]
    elif area_name:
        area = area_name
    if at:  # lvis-api: AR@300, ARs@300
        md = at
    if digits:
        if kind == "AR" and max_dets is not None and int(digits) in max_dets:
            md = digits  # pycocotools' AR1, AR10, AR100
        else:
            iou = f"0.{digits}"  # AP50, AP75, keypoints' AR50
    if md is None:
        summary = config["summary"]
        if summary == "pycocotools" and config["iou_type"] == "keypoints":
            md = "20"  # _summarizeKps reads maxDets=20
        elif summary == "pycocotools":
            md = "100" if name == "AP" else str(max_dets[2])  # summarize(): AP at 100, others at maxDets[2]
        else:
            md = top
    return kind, iou, area, md


def _run(run_cli, args: list[str]) -> tuple[str, dict]:
    code, text, err = run_cli("evaluate", *args, "--no-per-class", "-q")
    assert code == 0, err
    code, out, err = run_cli("evaluate", *args, "--no-per-class", "-q", "--format", "json")
    assert code == 0, err
    return text, json.loads(out)["results"][0]


CASES = [(name, ["--protocol", name]) for name in PRESETS] + [
    # configured summaries with a few thresholds and a named area range
    ("voc2010, 2 thresholds", ["--protocol", "voc2010", "--set", "iou_thresholds=[0.5, 0.7]"]),
    (
        "detectron2-voc, areas",
        ["--protocol", "detectron2-voc", "--set", "area_ranges={all: [0, 1e10], tiny: [0, 1000]}"],
    ),
    ("coco, 3 caps", ["--protocol", "coco", "--set", "max_dets=[2, 5, 50]"]),
    (
        "coco, 3 caps, summary kept",
        ["--protocol", "coco", "--set", "max_dets=[2, 5, 50]", "--set", "summary=pycocotools"],
    ),
]


@pytest.mark.parametrize(("label", "args"), CASES, ids=[c[0] for c in CASES])
def test_every_headline_line_is_labelled_with_what_it_is(run_cli, label, args):
    preset = args[1]
    text, result = _run(run_cli, _inputs(preset) + args)
    metrics, config = result["metrics"], result["config"]
    body = [line for line in text.splitlines()[3:] if line.strip()]
    # Ultralytics' operating point (P and R at the max mean F1) follows its two mAP lines
    operating = [line for line in body if line.startswith("  P = ")]
    body = [line for line in body if not line.startswith("  P = ")]
    if result["config"]["summary"] == "ultralytics":
        point = result["best_f1"]["ultralytics"]
        assert operating == [
            f"  P = {point['precision']:.4f}  R = {point['recall']:.4f}  (Ultralytics: mean over classes "
            f"at the max mean F1, confidence {point['confidence']:.4f})"
        ]
    else:
        assert operating == []
    assert len(body) == len(metrics), text
    for line, (name, value) in zip(body, metrics.items()):
        shown = "n/a" if value is None else f"{value:.3f}"
        if name == "mAP":  # a single-threshold protocol: one line, named by its IoU in the header
            assert len(config["iou_thresholds"]) == 1
            assert line == f"  mAP = {value:.4f}", line
            continue
        match = LINE.fullmatch(line)
        assert match, f"{label}: not a headline line: {line!r}"
        assert match["name"] == name
        assert match["value"] == shown
        kind, iou, area, md = _expected_label(name, config)
        assert (match["kind"], match["title"]) == (kind, "Precision" if kind == "AP" else "Recall"), line
        assert (match["iou"], match["area"] or match["band"], match["md"]) == (iou, area, md), (
            f"{label}: {line!r}"
        )
