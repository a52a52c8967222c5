"""deteval.tide on hand-derived cases, protocol mode against evaluate, and the analyze front."""

from __future__ import annotations

import math

import pytest

import deteval
from deteval.diagnose import analyze
from deteval.errors import ConfigError
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import get_protocol
from deteval.report import format_analysis_markdown, format_analysis_table
from deteval.tide import MAIN_ERRORS, tide_errors
from tests import ROOT
from tests.reference.slow_decomposition import confused

# Generated data trigger input warnings (box encodings, classes without ground truth) through the
# API; they are incidental here (tests/unit/test_api.py checks the warnings themselves).
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]


def _load(annotations, detections, categories=("a", "b")):
    gt = load_ground_truth(
        {
            "images": [{"id": 1, "width": 200, "height": 200}],
            "categories": [{"id": i + 1, "name": n} for i, n in enumerate(categories)],
            "annotations": [
                {
                    "id": i + 1,
                    "image_id": 1,
                    "area": b[2] * b[3],
                    "iscrowd": 0,
                    "category_id": c,
                    "bbox": b,
                    **extra,
                }
                for i, (c, b, extra) in enumerate(annotations)
            ],
        }
    )
    dt = load_detections(
        [{"image_id": 1, "category_id": c, "bbox": b, "score": s} for c, b, s in detections], gt
    )
    return gt, dt


@pytest.mark.parametrize(
    ("det", "kind"),
    [
        ((2, [0, 0, 10, 10], 0.9), "cls"),  # right box, wrong class
        ((1, [0, 0, 10, 3], 0.9), "loc"),  # right class, IoU 0.3
        ((2, [0, 0, 10, 3], 0.9), "both"),  # wrong class, IoU 0.3
        ((1, [100, 100, 10, 10], 0.9), "bkg"),  # nothing there
    ],
)
def test_each_error_type(det, kind):
    gt, dt = _load([(1, [0, 0, 10, 10], {})], [det])
    e = tide_errors(gt, dt)
    assert e.counts == {k: int(k == kind) + int(k == "miss" and kind in ("both", "bkg")) for k in MAIN_ERRORS}
    assert e.ap == 0.0
    if kind in ("cls", "loc"):  # the oracle turns it into the one true positive: AP 1
        assert e.main[kind] == 1.0
        assert e.main["miss"] == 0.0
    else:
        assert e.main[kind] == 0.0
        # Fixing the miss leaves no positives; the class that still has a detection scores 0
        # (tidecv: a class with detections and no ground truth has AP 0 and counts).
        assert e.main["miss"] == 0.0


def test_duplicate():
    gt, dt = _load([(1, [0, 0, 10, 10], {})], [(1, [0, 0, 10, 10], 0.9), (1, [0, 0, 10, 9], 0.95)])
    e = tide_errors(gt, dt)
    assert e.counts["dupe"] == 1
    # The duplicate scored higher: AP 1/2 at recall 1 ... fixing it gives 1.
    assert e.main["dupe"] == pytest.approx(1 - e.ap)


def test_crowd_region_swallows_detections():
    gt, dt = _load(
        [(1, [0, 0, 10, 10], {}), (1, [50, 50, 100, 100], {"iscrowd": 1})],
        [(1, [0, 0, 10, 10], 0.9), (1, [60, 60, 10, 10], 0.95)],
    )
    e = tide_errors(gt, dt)
    assert e.ap == 1.0  # the detection inside the crowd is ignored
    assert e.counts["bkg"] == 1  # but still gets an error type, as in tidecv


@pytest.mark.parametrize("preset", ["coco50", "voc2007", "voc2010", "voc2010-pyfrcnn"])
@pytest.mark.parametrize("seed", range(25))
def test_protocol_mode_ap_equals_evaluate(preset, seed):
    gt_dict, dt_list = confused(seed, max_images=12, max_classes=4)
    gt = load_ground_truth(gt_dict)
    dt = load_detections(dt_list, gt)
    e = tide_errors(gt, dt, preset, mode="protocol")
    metrics = deteval.evaluate(gt, dt, protocol=preset).metrics
    expected = metrics.get("mAP", metrics.get("AP"))
    if math.isnan(expected):
        assert math.isnan(e.ap)
    else:
        assert e.ap == pytest.approx(expected, abs=1e-12)
    assert all(v >= 0 or math.isnan(v) for v in e.main.values())  # NaN: no class left


def test_config_errors():
    gt, dt = _load([(1, [0, 0, 10, 10], {})], [(1, [0, 0, 10, 10], 0.9)])
    with pytest.raises(ConfigError, match="mode must be one of \\['tidecv', 'protocol'\\], found 'x'"):
        tide_errors(gt, dt, mode="x")
    with pytest.raises(ConfigError, match="foreground threshold must be in \\[0, 1\\], found 2"):
        tide_errors(gt, dt, foreground=2)
    with pytest.raises(ConfigError, match="mode='protocol' needs a protocol"):
        tide_errors(gt, dt, mode="protocol")
    with pytest.raises(ConfigError, match="scores boxes only"):
        tide_errors(gt, dt, get_protocol("coco").replace(iou_type="segm"))


# --- fixtures/coco: the numbers docs/analysis.md quotes --------------------------------------


def _fixture_doc():
    gt = load_ground_truth(ROOT / "fixtures" / "coco" / "gt.json")
    dt = load_detections(ROOT / "fixtures" / "coco" / "dt.json", gt)
    return gt, dt, analyze(gt, dt, "coco").to_dict()


def test_fixture_numbers_quoted_in_docs():
    gt, dt, doc = _fixture_doc()
    e = doc["errors"]
    assert round(e["ap"], 4) == 0.4328
    assert round(e["ap_50_95"], 4) == 0.3462
    assert {k: round(v, 4) for k, v in e["main"].items()} == {
        "cls": 0.0,
        "loc": 0.0,
        "both": 0.0,
        "dupe": 0.0,
        "bkg": 0.2339,
        "miss": 0.1443,
    }
    assert {k: round(v, 4) for k, v in e["special"].items()} == {"false_pos": 0.0672, "false_neg": 0.1443}
    protocol_mode = tide_errors(gt, dt, "coco", mode="protocol")
    assert round(protocol_mode.ap, 4) == 0.5771
    assert round(protocol_mode.main["bkg"], 4) == 0.0896
    assert round(protocol_mode.main["miss"], 4) == 0.2885
    d = doc["decomposition"]
    assert [(c["name"], c["AP_D"] and round(c["AP_D"], 4)) for c in d["per_class"]] == [
        ("person", 0.7313),
        ("dog", 1.0),
        ("cat", 0.0),
        ("bird", None),
    ]
    assert round(d["mean"]["AP_D"], 4) == 0.5771
    # AP_CgL = AP_D / AP_L: nothing is lost to classification here (no class confusion in the
    # matrix below); cat has nothing localized (AP_L 0), so its AP_CgL is undefined.
    assert [c["AP_CgL"] for c in d["per_class"]] == [1.0, 1.0, None, None]
    assert d["mean"]["AP_CgL"] == 1.0
    assert d["mean"]["AP_D"] == d["mean"]["AP_L"]
    assert doc["confusion"]["matrix"] == [
        [5, 0, 0, 0, 0],
        [0, 2, 0, 0, 0],
        [0, 0, 0, 0, 1],
        [0, 0, 0, 0, 0],
        [5, 0, 0, 1, 0],
    ]
    text = (ROOT / "docs" / "analysis.md").read_text()
    for number in (
        "0.4328",
        "0.3462",
        "0.2339",
        "0.1443",
        "0.0672",
        "0.5771",
        "0.0896",
        "0.2885",
        "0.7313",
        "mean AP_CgL **1.0000**",
    ):
        assert number in text, number


def test_renderers():
    _, _, doc = _fixture_doc()
    table = format_analysis_table(doc)
    assert "TIDE errors (mode tidecv" in table
    assert "background" in table
    md = format_analysis_markdown(doc)
    assert "| person | 5 | 0 | 0 | 0 | 0 |" in md
    only = analyze(*_fixture_doc()[:2], errors=False, decompose=False).to_dict()
    assert list(only) == ["confusion"]


@pytest.mark.parametrize("no_extension", ["0", "1"])
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_analyze_cli_on_ground_truth_without_annotations(tmp_path, no_extension, fmt):
    """A user's case: ``deteval analyze`` on a split with images and classes but no annotation.

    Every detection is a background error (nothing to overlap), no ground truth is missed; in
    tidecv mode AP is 0 (tidecv: a class with detections and no ground truth has AP 0 and counts),
    fixing the background errors leaves nothing to score (dAP undefined). Scored and reported, exit
    0, with and without the compiled kernels.
    """
    import json
    import os
    import subprocess
    import sys

    gt = tmp_path / "gt.json"
    gt.write_text(
        json.dumps(
            {
                "images": [{"id": 1, "width": 100, "height": 100, "file_name": "a.jpg"}],
                "annotations": [],
                "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
            }
        )
    )
    dt = tmp_path / "dt.json"
    dt.write_text(
        json.dumps(
            [
                {"image_id": 1, "category_id": 1, "bbox": [1, 1, 10, 10], "score": 0.9},
                {"image_id": 1, "category_id": 2, "bbox": [5, 5, 10, 10], "score": 0.4},
            ]
        )
    )
    env = {**os.environ, "DETEVAL_NO_EXTENSION": no_extension, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "deteval", "analyze", "--gt", str(gt), "--dt", str(dt), "--format", fmt],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    if fmt == "table":
        lines = run.stdout.splitlines()
        assert lines[0].startswith("TIDE errors (mode tidecv, foreground 0.5, background 0.1): AP 0.0000")
        assert lines[3].split() == ["count", "0", "0", "0", "0", "2", "0"]
        return
    doc = json.loads(run.stdout)
    errors = doc["errors"]
    assert errors["counts"] == {"cls": 0, "loc": 0, "both": 0, "dupe": 0, "bkg": 2, "miss": 0}
    assert errors["ap"] == 0.0
    assert errors["main"] == {"cls": 0.0, "loc": 0.0, "both": 0.0, "dupe": 0.0, "bkg": None, "miss": 0.0}
    assert doc["confusion"]["matrix"] == [[0, 0, 0], [0, 0, 0], [1, 0, 0]]  # the one above confidence 0.5


def test_protocol_mode_on_ground_truth_without_annotations_is_undefined():
    """Protocol mode scores as evaluate does: no positives, AP undefined (NaN), no traceback."""
    gt, dt = _load([], [(1, [0, 0, 10, 10], 0.9), (2, [5, 5, 10, 10], 0.5)])
    e = tide_errors(gt, dt, "coco", mode="protocol")
    assert math.isnan(e.ap)
    assert e.counts == {"cls": 0, "loc": 0, "both": 0, "dupe": 0, "bkg": 2, "miss": 0}
