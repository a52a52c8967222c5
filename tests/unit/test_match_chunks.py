"""Matching in image shards inside one ``match`` call gives the table of a single pass.

:func:`deteval.evaluate.match` matches the sorted detections in shards of whole images of about
``_MATCH_CHUNK`` detections (a bounded working set at any dataset size). These tests shrink the
shard size so that small generated datasets are cut into many shards (one image each, or a few),
and compare every field of the table with the one-pass table: same detections, same flags, same
matches in the same (lane, detection) order, for every preset and each kind of geometry.
"""

import dataclasses
import sys

import numpy as np
import pytest

import deteval
from deteval.api.openimages import challenge_inputs, needs_challenge_rules
from deteval.evaluate import MatchTable, match
from deteval.evaluate.run import _chunk_bounds
from deteval.openimages import ImageLevelLabels
from deteval.protocol import PRESETS
from tests import ROOT
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_keypoints import generate_keypoints
from tests.crosscheck.generate_lvis import generate_lvis
from tests.crosscheck.generate_segm import generate_segm

FIXTURES = ROOT / "fixtures"
evaluate_module = sys.modules["deteval.evaluate.run"]  # the module that reads _MATCH_CHUNK

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning")  # generated data

BOX_PRESETS = [name for name, p in PRESETS.items() if p.iou_type == "bbox" and p.federated_labels != "lvis"]


def _assert_same_table(a: MatchTable, b: MatchTable) -> None:
    for f in dataclasses.fields(MatchTable):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, f.name
            assert np.array_equal(x, y), f.name
        else:
            assert x == y, f.name
    assert len(a.match_det) == len(b.match_det)


def _both(monkeypatch, gt, dt, protocol, sizes=(1, 2, 5, 13)):
    """The one-pass table, and the table under each shard size (asserted equal to it)."""
    whole = match(gt, dt, protocol)
    for size in sizes:
        monkeypatch.setattr(evaluate_module, "_MATCH_CHUNK", size)
        _assert_same_table(match(gt, dt, protocol), whole)
    monkeypatch.undo()
    return whole


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("preset", BOX_PRESETS)
def test_box_presets(monkeypatch, seed, preset):
    gt_dict, dt_list = generate(seed, max_images=12, max_classes=4, with_ignore_fields=seed % 2 == 1)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    protocol = deteval.get_protocol(preset)
    gt, dt = _with_label_rules(gt, dt, protocol)
    whole = _both(monkeypatch, gt, dt, protocol)
    assert len(whole.det_score) == len(dt) - whole.n_over_max_dets


def _with_label_rules(gt, dt, protocol):
    """openimages-challenge: every class under one parent, verified on every image but the first."""
    if not needs_challenge_rules(protocol):
        return gt, dt
    hierarchy = {"LabelName": "root", "Subcategory": [
        {"LabelName": "parent", "Subcategory": [{"LabelName": n} for n in gt.category_name]}]}  # fmt: skip
    images = [str(n) for n in gt.image_name[1:] for _ in gt.category_name]
    labels = ImageLevelLabels(
        tuple(images), tuple(gt.category_name) * (gt.n_images - 1), np.ones(len(images), bool)
    )
    return challenge_inputs(gt, dt, protocol, image_labels=labels, hierarchy=hierarchy)


@pytest.mark.parametrize("seed", range(3))
def test_many_detections_per_image_and_an_image_shard(monkeypatch, seed):
    """More than max_dets per image (the cap before sharding), and an `images` mask."""
    gt_dict, dt_list = generate(seed, n_images=9, n_classes=3, force_many_dets=True, with_id_zero=True)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    p = deteval.get_protocol("coco")
    _both(monkeypatch, gt, dt, p)
    images = np.arange(gt.n_images) % 2 == 0
    whole = match(gt, dt, p, images=images)
    monkeypatch.setattr(evaluate_module, "_MATCH_CHUNK", 3)
    _assert_same_table(match(gt, dt, p, images=images), whole)


@pytest.mark.parametrize("seed", range(3))
def test_class_agnostic(monkeypatch, seed):
    gt_dict, dt_list = generate(seed, max_images=10, max_classes=4)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    _both(monkeypatch, gt, dt, deteval.get_protocol("coco").replace(class_agnostic=True))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("mask_iou", ["exact", "raster"])
def test_masks(monkeypatch, seed, mask_iou):
    gt_dict, dt_list = generate_segm(seed, n_images=6, result_style="polygon+bbox")
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    p = deteval.get_protocol("coco").replace(
        iou_type="segm", mask_iou=mask_iou, invalid_polygons="make_valid"
    )
    _both(monkeypatch, gt, dt, p, sizes=(1, 4))


@pytest.mark.parametrize("seed", range(3))
def test_keypoints(monkeypatch, seed):
    gt_dict, dt_list = generate_keypoints(seed, n_images=7)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    _both(monkeypatch, gt, dt, deteval.get_protocol("coco-keypoints"))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("preset", ["lvis", "lvis-fixed-ap"])
def test_federated(monkeypatch, seed, preset):
    gt_dict, dt_list = generate_lvis(seed, n_images=7)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    _both(monkeypatch, gt, dt, deteval.get_protocol(preset))


def test_group_of_boxes(monkeypatch):
    """Open Images' second stage (group-of boxes by IoA) runs per shard."""
    rng = np.random.default_rng(5)
    anns, dets = [], []
    for image in range(1, 7):
        for k in range(4):
            x, y = rng.uniform(0, 60, 2)
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": image,
                    "category_id": 1 + k % 2,
                    "bbox": [x, y, 30.0, 30.0],
                    "area": 900.0,
                    "iscrowd": 0,
                    "is_group_of": int(k == 0),
                }
            )
        for _ in range(9):
            x, y = rng.uniform(0, 70, 2)
            dets.append(
                {
                    "image_id": image,
                    "category_id": int(rng.integers(1, 3)),
                    "bbox": [x, y, float(rng.uniform(5, 30)), float(rng.uniform(5, 30))],
                    "score": float(rng.choice([0.3, 0.5, 0.9])),
                }
            )
    gt = deteval.load_ground_truth(
        {
            "images": [{"id": i} for i in range(1, 7)],
            "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
            "annotations": anns,
        }
    )
    dt = deteval.load_detections(dets, gt)
    whole = _both(monkeypatch, gt, dt, deteval.get_protocol("openimages"))
    assert whole.tp.bits.any()


def test_shards_are_whole_images():
    """Shard starts fall on the first row of an image; an image larger than a shard stays whole."""
    n_class = 3
    image = np.repeat(np.arange(6), [1, 4, 2, 7, 1, 3])
    key = image * n_class + np.tile([0, 1, 2], 6)[: len(image)] % n_class
    key = np.sort(key)
    for size in (1, 2, 3, 5, 17, 100):
        bounds = _chunk_bounds(key, n_class, size)
        assert bounds[0] == 0
        assert bounds[-1] == len(key)
        assert (np.diff(bounds) > 0).all()
        starts = bounds[1:-1]
        assert (key[starts] // n_class != key[starts - 1] // n_class).all()
    assert _chunk_bounds(key, n_class, 1).tolist() == [0, 1, 5, 7, 14, 15, 18]
    assert _chunk_bounds(key[:0], n_class, 1).tolist() == [0, 0]


@pytest.mark.parametrize(
    "extra", [["-q"], [], ["--dt", str(FIXTURES / "coco" / "dt.json"), "--name", "a", "--name", "b"]]
)
def test_the_command_line_without_a_progress_bar_matches_in_one_pass(monkeypatch, capsys, extra):
    """No bar (-q, or stderr not a terminal): ``deteval evaluate`` matches in one pass.

    Parts of n_det / 16 detections are there to move a progress bar; without one they only cost
    (a kernel call, the pairs and the matcher's setup per part, 16 times over).
    """
    from deteval.cli import main

    calls = []
    real = evaluate_module._match_chunk
    monkeypatch.setattr(evaluate_module, "_match_chunk", lambda *a, **k: calls.append(1) or real(*a, **k))
    gt, dt = FIXTURES / "coco" / "gt.json", FIXTURES / "coco" / "dt.json"
    assert main(["evaluate", "--gt", str(gt), "--dt", str(dt), *extra, "--format", "json"]) == 0
    assert len(calls) == (2 if "--dt" in extra else 1)  # one pass per detector
    capsys.readouterr()
