"""deteval's ``coco-keypoints`` against pycocotools' ``COCOeval(iouType="keypoints")``.

The ten stats must be equal (``==``) and the precision / recall / scores arrays within one float
step (NaN where pycocotools has -1), on generated datasets (``generate_keypoints.py``).
pycocotools decides a result file's areas by its *first* record (bbox or keypoints' extent);
deteval decides per record (a documented difference), so the oracle is given files where all
records agree: all with a bbox, or none.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

import deteval
from tests.crosscheck.compare import assert_array_within_one_step
from tests.crosscheck.generate_keypoints import generate_keypoints
from tests.support.references import load_results

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

KEYPOINT_STATS = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")

DATASETS = {
    f"kp-{seed}": dict(seed=seed, with_bbox=("all", "none")[seed % 2], n_categories=1 + (seed % 5 == 4))
    for seed in range(100)
}


def run_pycocotools(gt: dict, dt: list) -> COCOeval:
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = load_results(coco_gt, dt)
        evaluator = COCOeval(coco_gt, coco_dt, "keypoints")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator


@pytest.mark.parametrize("name", [*DATASETS, "kp-0 no detections"])
def test_keypoints_equal_pycocotools(name):
    gt, dt = generate_keypoints(**DATASETS[name.split()[0]])
    if name.endswith("no detections"):  # a detector that found nothing still gets its number
        dt = []
    ref = run_pycocotools(gt, dt)
    result = deteval.evaluate(gt, dt, "coco-keypoints")
    for stat, expected in zip(KEYPOINT_STATS, ref.stats, strict=True):
        value = result.metrics[stat]
        if expected == -1:
            assert np.isnan(value), f"{name}: {stat}"
        else:
            assert value == expected, f"{name}: {stat}: deteval {value!r}, pycocotools {expected!r}"
    assert_array_within_one_step(result.precision, ref.eval["precision"], f"{name} precision")
    assert_array_within_one_step(result.recall, ref.eval["recall"], f"{name} recall")
    assert_array_within_one_step(result.scores, ref.eval["scores"], f"{name} scores")


@pytest.mark.parametrize("seed", range(5))
def test_iou_type_keypoints_on_coco_pycocotools_is_the_keypoints_preset(seed):
    gt, dt = generate_keypoints(seed, with_bbox="all")
    [protocol] = deteval.api.resolve_protocols(["coco-pycocotools"], iou_type="keypoints")
    a = deteval.evaluate(gt, dt, protocol)
    b = deteval.evaluate(gt, dt, "coco-keypoints")
    assert a.metrics == b.metrics
    assert protocol.fingerprint() == deteval.get_protocol("coco-keypoints").fingerprint()


def test_custom_sigmas_match_pycocotools_with_the_same_sigmas():
    gt, dt = generate_keypoints(7, with_bbox="all")
    sigmas = np.linspace(0.02, 0.12, 17)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        evaluator = COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(dt)), "keypoints")
        evaluator.params.kpt_oks_sigmas = sigmas
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    protocol = deteval.get_protocol("coco-keypoints").replace(keypoint_sigmas=sigmas.tolist())
    result = deteval.evaluate(gt, dt, protocol)
    assert [result.metrics[s] for s in KEYPOINT_STATS] == [
        s if s != -1 else pytest.approx(np.nan, nan_ok=True) for s in evaluator.stats
    ]


@pytest.mark.parametrize("seed", range(3))
def test_drop_in_cocoeval_keypoints(seed):
    from deteval.interop import COCOeval as DropIn

    gt, dt = generate_keypoints(seed, with_bbox="none")
    ref = run_pycocotools(gt, dt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        ours = DropIn(coco_gt, coco_gt.loadRes(copy.deepcopy(dt)), "keypoints")
    ours.evaluate()
    ours.accumulate()
    text = ours.summarize()
    assert ours.stats.tolist() == ref.stats.tolist()
    assert len(text.splitlines()) == 10
    assert "maxDets= 20" in text


def _bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("seed", range(40))
def test_ious_and_eval_arrays_equal_pycocotools_bit_for_bit(tmp_path, seed):
    """Every OKS value (``ious``) and the precision / recall / scores arrays, bit for bit.

    OKS goes through the compiled kernel's grouped terms and numpy's ``exp`` and sums; the files
    are read from disk by the compiled readers (ground truth with keypoints, results with or
    without a bbox), whose numbers must be those of the in-memory records.
    """
    from deteval.interop import COCOeval as DropIn

    gt, dt = generate_keypoints(
        seed, n_images=12, with_bbox=("all", "none")[seed % 2], n_categories=1 + (seed % 5 == 4)
    )
    if not dt:
        pytest.skip("pycocotools' loadRes cannot take an empty result list")
    ref = run_pycocotools(gt, dt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        ours = DropIn(coco_gt, coco_gt.loadRes(copy.deepcopy(dt)), "keypoints")
    ours.evaluate()
    ours.accumulate()
    assert ours.ious.keys() == ref.ious.keys()
    for key, expected in ref.ious.items():
        value = ours.ious[key]
        if isinstance(expected, list) or isinstance(value, list):
            assert len(expected) == len(value) == 0, key
        else:
            assert value.shape == expected.shape, key
            assert np.array_equal(_bits(value), _bits(expected)), key
    for name in ("precision", "recall", "scores"):
        assert np.array_equal(_bits(ours.eval[name]), _bits(ref.eval[name])), name
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(dt))
    from_files = deteval.evaluate(str(gt_path), str(dt_path), "coco-keypoints")
    in_memory = deteval.evaluate(gt, dt, "coco-keypoints")
    for name in ("precision", "recall", "scores"):
        assert np.array_equal(_bits(getattr(from_files, name)), _bits(getattr(in_memory, name)))
    assert json.dumps(from_files.metrics) == json.dumps(in_memory.metrics)
