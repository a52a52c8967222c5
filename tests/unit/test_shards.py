"""Shard and merge: matching image shards and merging gives exactly the one-run numbers."""

import numpy as np
import pytest

import deteval
from deteval.evaluate import match, merge_match_tables, score
from deteval.sharding import image_shards, match_sharded
from tests.crosscheck.generate import generate

PROTOCOLS = ["coco", "coco-pycocotools", "voc2007", "voc2010", "coco50"]


def _arrays(result):
    return (result.precision, result.recall, result.scores, result.ap)


def _assert_same(a, b):
    for x, y in zip(_arrays(a), _arrays(b)):
        assert np.array_equal(x, y, equal_nan=True)
    assert a.to_dict() == b.to_dict()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shards_merge_to_the_same_numbers(seed, protocol):
    gt_dict, dt_list = generate(seed, max_images=40, max_classes=6)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    p = deteval.get_protocol(protocol)
    whole = score(match(gt, dt, p), gt, p)
    for n_shards in (2, 3, 7):
        tables = [match(gt, dt, p, images=mask) for mask in image_shards(gt, n_shards)]
        _assert_same(score(merge_match_tables(tables), gt, p), whole)
    # merge order does not matter either
    tables = [match(gt, dt, p, images=mask) for mask in image_shards(gt, 3)]
    _assert_same(score(merge_match_tables(tables[::-1]), gt, p), whole)


@pytest.mark.parametrize("protocol", ["coco", "voc2010"])
@pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning")  # generated data: zero-area boxes
def test_workers_give_identical_numbers(protocol):
    gt_dict, dt_list = generate(11, n_images=60, n_classes=5)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    p = deteval.get_protocol(protocol)
    one = score(match(gt, dt, p), gt, p)
    two = score(match_sharded(gt, dt, p, workers=2), gt, p)
    _assert_same(one, two)
    _assert_same(deteval.evaluate(gt, dt, p, workers=2), deteval.evaluate(gt, dt, p))


def test_shards_cover_every_image_once():
    gt = deteval.load_ground_truth(generate(3, n_images=10, n_classes=2)[0])
    masks = image_shards(gt, 4)
    assert np.array_equal(np.sum(masks, axis=0), np.ones(gt.n_images))
    assert len(image_shards(gt, 100)) == gt.n_images


@pytest.mark.parametrize("mask_iou", ["exact", "raster"])
def test_workers_give_identical_numbers_on_masks(mask_iou):
    from tests.crosscheck.generate_segm import generate_segm

    gt_dict, dt_list = generate_segm(5, n_images=12, result_style="polygon+bbox")
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    p = deteval.get_protocol("coco").replace(
        iou_type="segm", mask_iou=mask_iou, invalid_polygons="make_valid"
    )
    one = score(match(gt, dt, p), gt, p)
    prepared = deteval.geometry.prepare_masks(gt, dt, p)
    _assert_same(score(match_sharded(gt, dt, p, workers=3, masks=prepared), gt, p), one)
    _assert_same(score(match_sharded(gt, dt, p, workers=2), gt, p), one)


def test_a_worker_error_reaches_the_caller(monkeypatch):
    """An input error found inside a shard is raised by the caller, as the in-process one is.

    (Mask inputs are checked in the parent, before forking; the error is injected into the IoU
    step that every shard runs -- pair_iou, or box_pairs for boxes -- naming the images it was given.)
    """
    import sys

    evaluate_module = sys.modules["deteval.evaluate.run"]  # where match() looks pair_iou up

    images = [{"id": i} for i in (1, 2, 3)]
    anns = [
        {"id": i, "image_id": i, "category_id": 1, "iscrowd": 0, "area": 50, "bbox": [0, 0, 10, 10]}
        for i in (1, 2, 3)
    ]
    gt = deteval.load_ground_truth(
        {"images": images, "categories": [{"id": 1, "name": "a"}], "annotations": anns}
    )
    dt = deteval.load_detections(
        [{"image_id": i, "category_id": 1, "score": 0.5, "bbox": [0, 0, 10, 10]} for i in (1, 2, 3)], gt
    )

    def failing(gt, dt, gt_rows, det_rows, *args, **kwargs):
        shown = sorted({int(gt.image_id[gt.image[r]]) for r in gt_rows})
        raise deteval.InputError(f"{len(shown)} image(s) refused: {shown}")

    def failing_boxes(det_key, gt_key, det_rows, gt_rows, *args, **kwargs):
        return failing(gt, dt, gt_rows, det_rows)

    monkeypatch.setattr(evaluate_module, "pair_iou", failing)
    monkeypatch.setattr(evaluate_module, "box_pairs", failing_boxes)  # the box path's IoU step
    from deteval import sharding

    monkeypatch.setattr(sharding, "in_processes", lambda protocol: True)  # the process path, on boxes
    p = deteval.get_protocol("coco")
    with pytest.raises(deteval.InputError, match=r"image\(s\) refused") as one:
        match(gt, dt, p)
    with pytest.raises(deteval.InputError, match=r"image\(s\) refused") as two:
        match_sharded(gt, dt, p, workers=3)
    assert "1 image(s)" in str(two.value)
    assert "3 image(s)" in str(one.value)


def test_mask_input_errors_are_found_before_forking():
    """Raster masks need image sizes: refused by the parent, naming every image at once."""
    images = [{"id": i} for i in (1, 2, 3)]  # no width / height
    anns = [
        {
            "id": i,
            "image_id": i,
            "category_id": 1,
            "iscrowd": 0,
            "area": 50,
            "bbox": [0, 0, 10, 10],
            "segmentation": [[0, 0, 10, 0, 0, 10]],
        }
        for i in (1, 2, 3)
    ]
    gt = deteval.load_ground_truth(
        {"images": images, "categories": [{"id": 1, "name": "a"}], "annotations": anns}
    )
    dt = deteval.load_detections(
        [
            {
                "image_id": i,
                "category_id": 1,
                "score": 0.5,
                "bbox": [0, 0, 10, 10],
                "segmentation": [[0, 0, 10, 0, 0, 10]],
            }
            for i in (1, 2, 3)
        ],
        gt,
    )
    p = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    for run in (lambda: match(gt, dt, p), lambda: match_sharded(gt, dt, p, workers=3)):
        with pytest.raises(deteval.InputError, match=r"3 image\(s\) without a usable width and height"):
            run()


def test_a_dead_worker_is_one_clear_error(monkeypatch):
    """A worker that dies without a result (killed, out of memory) never hangs the parent."""
    import os

    from deteval import sharding

    def die(job, images, conn):
        os._exit(9)

    monkeypatch.setattr(sharding, "_match_shard", die)
    monkeypatch.setattr(sharding, "in_processes", lambda protocol: True)  # the process path, on boxes
    gt_dict, dt_list = generate(2, n_images=6, n_classes=2)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    with pytest.raises(
        deteval.DetevalError,
        match=r"a matching worker process \(pid \d+\) ended without "
        r"a result \(exit code 9\)",
    ):
        match_sharded(gt, dt, deteval.get_protocol("coco"), workers=2)


def test_auto_workers_go_by_size(monkeypatch):
    from deteval import sharding

    monkeypatch.setattr(sharding, "usable_cpus", lambda: 2)
    assert sharding.resolve_workers("auto", 399_999) == 1
    assert sharding.resolve_workers("auto", 800_000) == 2
    assert sharding.resolve_workers("auto", 10**8) == 2  # never more than the usable CPUs
    assert sharding.resolve_workers("auto", 30_000, "segm") == 1
    assert sharding.resolve_workers("auto", 60_000, "segm") == 2
    assert sharding.resolve_workers(1, 10**8) == 1  # 1 forces one process
    assert sharding.resolve_workers(2, 10) == 2  # a number is taken as given (within the CPUs)


@pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning")  # generated data: zero-area boxes
def test_cli_json_is_byte_identical_for_1_2_and_auto_worker_processes(tmp_path, monkeypatch):
    """The process path (this process matches a shard, a forked one the other) changes no byte."""
    import json

    from deteval import sharding
    from deteval.cli import main

    gt_dict, dt_list = generate(5, n_images=80, n_classes=6)
    (tmp_path / "gt.json").write_text(json.dumps(gt_dict))
    (tmp_path / "dt.json").write_text(json.dumps(dt_list))
    forked = []
    real = sharding._run_in_processes
    monkeypatch.setattr(
        sharding, "_run_in_processes", lambda job, shards: forked.append(1) or real(job, shards)
    )
    monkeypatch.setattr(sharding, "usable_cpus", lambda: 2)
    monkeypatch.setattr(sharding, "in_processes", lambda protocol: True)  # the process path, on boxes
    outputs = []
    for workers, per_worker in (("1", 1), ("2", 10**9), ("auto", 10**9), ("auto", 1)):
        monkeypatch.setitem(sharding.AUTO_DETECTIONS_PER_WORKER, "bbox", per_worker)
        out = tmp_path / f"out-{workers}-{per_worker}.json"
        argv = ["evaluate", "--gt", str(tmp_path / "gt.json"), "--dt", str(tmp_path / "dt.json")]
        argv += ["--protocol", "coco", "--protocol", "voc2007", "--format", "json", "-q"]
        assert main([*argv, "--output", str(out), "--workers", workers]) == 0
        outputs.append(out.read_bytes())
    assert len(forked) == 4  # --workers 2 and auto above the size: two protocols each
    assert outputs[1:] == [outputs[0]] * 3
