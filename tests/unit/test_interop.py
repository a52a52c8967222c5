"""The drop-in COCOeval gives pycocotools' stats and arrays, and prints what pycocotools' summarize prints."""

import contextlib
import copy
import io
import json
from pathlib import Path

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval as ReferenceCOCOeval

from deteval.interop import COCOeval

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "coco"


def _coco_pair():
    gt = json.loads((FIXTURES / "gt.json").read_text())
    dt = json.loads((FIXTURES / "dt.json").read_text())
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(dt)
    return coco_gt, coco_dt


def test_drop_in_equals_pycocotools_and_prints_its_summary(capsys):
    coco_gt, coco_dt = _coco_pair()
    with contextlib.redirect_stdout(io.StringIO()):
        ref = ReferenceCOCOeval(copy.deepcopy(coco_gt), copy.deepcopy(coco_dt), "bbox")
        ref.evaluate()
        ref.accumulate()
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        ref.summarize()
    original_gt, original_dt = copy.deepcopy(coco_gt.dataset), copy.deepcopy(coco_dt.dataset)
    ours = COCOeval(coco_gt, coco_dt, "bbox")
    ours.evaluate()
    ours.accumulate()
    assert capsys.readouterr().out == ""  # evaluate and accumulate print nothing
    text = ours.summarize()
    assert capsys.readouterr().out == printed.getvalue() == text + "\n"
    assert len(ours.evalImgs)
    assert len(ours.ious)
    assert coco_gt.dataset == original_gt
    assert coco_dt.dataset == original_dt
    assert ours.stats.tolist() == ref.stats.tolist()
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(ours.eval[key], ref.eval[key])
    assert text.splitlines()[0].startswith(" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all")


def test_params_subsets_like_pycocotools():
    coco_gt, coco_dt = _coco_pair()
    with contextlib.redirect_stdout(io.StringIO()):
        ref = ReferenceCOCOeval(copy.deepcopy(coco_gt), copy.deepcopy(coco_dt), "bbox")
        ref.params.catIds = [1, 2]
        ref.params.maxDets = [1, 5, 20]
        ref.evaluate()
        ref.accumulate()
        ref.summarize()
    ours = COCOeval(coco_gt, coco_dt, "bbox")
    ours.params.catIds = [1, 2]
    ours.params.maxDets = [1, 5, 20]
    ours.evaluate()
    ours.accumulate()
    ours.summarize()
    assert ours.stats.tolist() == ref.stats.tolist()
    assert np.array_equal(ours.eval["precision"], ref.eval["precision"])
