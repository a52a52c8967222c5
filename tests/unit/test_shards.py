"""Shard and merge: matching image shards and merging gives exactly the one-run numbers."""

import numpy as np
import pytest

import deteval
from deteval.evaluate import image_shards, match, match_sharded, merge_match_tables, score
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
