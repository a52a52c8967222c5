"""RLE sizes: deteval refuses exactly the mask pairs pycocotools cannot score.

pycocotools never compares an RLE with its image: ``annToRLE`` rasterises a polygon at its
image's ``[height, width]`` and keeps an RLE (compressed or not) at its own ``size``;
``maskUtils.iou`` then gives a pair of masks of different sizes IoU -1 (never a match, no
message). Every expectation below is checked against the installed pycocotools first.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import weakref

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

import deteval
from deteval.cli import main

# category "b" has no ground truth (AP undefined for it, in both tools)
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
SEGM = deteval.get_protocol("coco-pycocotools").replace(iou_type="segm", mask_iou="raster")
SQUARE = [[2, 2, 8, 2, 8, 8, 2, 8]]


def rle(height: int, width: int, uncompressed: bool = False) -> dict:
    """The 6 x 6 square (2, 2)-(8, 8) as an RLE of the given size."""
    mask = np.zeros((height, width), dtype=np.uint8, order="F")
    mask[2:8, 2:8] = 1
    encoded = mask_utils.encode(mask)
    if uncompressed:
        flat = mask.flatten(order="F")
        changes = np.flatnonzero(np.diff(np.r_[0, flat, 1 - flat[-1]]))
        return {"size": [height, width], "counts": np.diff(np.r_[0, changes]).tolist()}
    return {"size": encoded["size"], "counts": encoded["counts"].decode()}


def dataset(gt_segm, dt_segm, *, image=(640, 640), dt_category=1) -> tuple[dict, list]:
    gt = {
        "images": [{"id": 1, "height": image[0], "width": image[1]}],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "iscrowd": 0,
                "area": 36.0,
                "bbox": [2, 2, 6, 6],
                "segmentation": gt_segm,
            }
        ],
    }
    dt = [{"image_id": 1, "category_id": dt_category, "score": 0.9, "segmentation": dt_segm}]
    return gt, dt


def pycocotools_run(gt: dict, dt: list) -> tuple[list, float]:
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(copy.deepcopy(dt))
        ev = COCOeval(coco_gt, coco_dt, "segm")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return [np.asarray(v).tolist() for v in ev.ious.values() if len(v)], float(ev.stats[0])


def deteval_ap(gt: dict, dt: list) -> float:
    ground_truth = deteval.load_ground_truth(gt)
    result = deteval.evaluate(ground_truth, deteval.load_detections(dt, ground_truth), protocol=SEGM)
    return float(result.metrics["AP"])


@pytest.mark.parametrize(
    ("gt_segm", "dt_segm"),
    [
        (rle(10, 10), rle(10, 10)),  # the case: 10 x 10 masks on a 640 x 640 image
        (rle(10, 20, uncompressed=True), rle(10, 20)),  # an uncompressed RLE keeps its own size too
        (SQUARE, rle(640, 640)),  # a polygon is rasterised at its image's size
    ],
)
def test_equal_sizes_in_a_pair_are_scored_as_pycocotools_does(gt_segm, dt_segm):
    gt, dt = dataset(gt_segm, dt_segm)
    ious, ap = pycocotools_run(gt, dt)
    assert ious == [[[1.0]]]
    assert ap == pytest.approx(1.0)
    assert deteval_ap(gt, dt) == ap


def test_sizes_of_masks_never_paired_do_not_matter():
    """A 10 x 10 RLE detection of another category than the 640 x 640 ground truth: no pair."""
    gt, dt = dataset(SQUARE, rle(10, 10), dt_category=2)
    ious, ap = pycocotools_run(gt, dt)
    assert ious == []
    assert deteval_ap(gt, dt) == ap == 0.0


@pytest.mark.parametrize(
    ("gt_segm", "dt_segm", "found"),
    [
        (SQUARE, rle(10, 10), "[10, 10] (its RLE `size`) and [640, 640] (its image's, a polygon)"),
        (rle(10, 10), rle(20, 20), "[20, 20] (its RLE `size`) and [10, 10] (its RLE `size`)"),
        (rle(20, 10), rle(10, 20), "[10, 20] (its RLE `size`) and [20, 10] (its RLE `size`)"),
    ],
)
def test_a_pair_of_different_sizes_is_refused_saying_what_pycocotools_does(gt_segm, dt_segm, found):
    gt, dt = dataset(gt_segm, dt_segm)
    ious, ap = pycocotools_run(gt, dt)
    assert ious == [[[-1.0]]]  # what the message says pycocotools does
    assert ap == 0.0
    with pytest.raises(deteval.InputError) as caught:
        deteval_ap(gt, dt)
    message = str(caught.value)
    assert message.startswith(
        "<detections>: detection #0 (image_id=1) and <ground truth>: annotation #0 (id=1, image_id=1): "
    )
    assert "the two masks of a pair have different sizes" in message
    assert f"found {found}" in message
    assert "pycocotools gives such a pair IoU -1" in message


def test_cli_scores_equal_sizes_and_refuses_a_mismatched_pair(tmp_path, capsys):
    gt, dt = dataset(rle(10, 10), rle(10, 10))
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    argv = ["evaluate", "--gt", str(tmp_path / "gt.json"), "--dt", str(tmp_path / "dt.json")]
    argv += ["--iou-type", "segm", "--protocol", "coco-pycocotools", "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["metrics"]["AP"] == pytest.approx(1.0)
    (tmp_path / "dt.json").write_text(json.dumps(dataset(rle(10, 10), rle(20, 20))[1]))
    assert main(argv) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "the two masks of a pair have different sizes" in captured.err


def test_validate_refuses_the_mismatched_pair_as_evaluate_does(tmp_path, capsys):
    gt, dt = dataset(SQUARE, rle(10, 10))
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    code = main(
        [
            "validate",
            "--gt",
            str(tmp_path / "gt.json"),
            "--dt",
            str(tmp_path / "dt.json"),
            "--iou-type",
            "segm",
        ]
    )
    err = capsys.readouterr().err
    assert code == 3
    assert "detection #0 (image_id=1) and " in err
    assert "found [10, 10] (its RLE `size`) and [640, 640] (its image's, a polygon)" in err


def test_many_pairs_are_counted_and_the_first_five_shown():
    gt, dt = dataset(rle(10, 10), rle(20, 20))
    dt = [{**dt[0], "score": 0.9 - k / 100} for k in range(7)]
    with pytest.raises(deteval.InputError) as caught:
        deteval_ap(gt, dt)
    message = str(caught.value)
    assert message.startswith("7 mask pairs: the two masks of a pair have different sizes; ")
    assert message.count("(its RLE `size`) and [10, 10]") == 5
    assert message.endswith("; and 2 more")


@pytest.mark.filterwarnings("ignore:1 detections beyond max_dets:deteval.errors.InputWarning")
def test_a_detection_beyond_max_dets_is_never_compared():
    """A 101st result of another size: never compared, by either tool.

    pycocotools' computeIoU keeps a group's first maxDets[-1] results by score.
    """
    gt, dt = dataset(rle(10, 10), rle(10, 10))
    dt = [{**dt[0], "score": 0.9 - k / 1000} for k in range(100)]
    dt.append({**dt[0], "score": 0.01, "segmentation": rle(20, 20)})
    ious, ap = pycocotools_run(gt, dt)
    assert len(ious[0]) == 100
    assert deteval_ap(gt, dt) == ap


def many_images_dataset(n_images: int) -> tuple[dict, list]:
    """``n_images`` 20 x 20 images, each with one RLE ground truth and two RLE detections."""
    gt, _ = dataset(rle(20, 20), rle(20, 20), image=(20, 20))
    annotation = gt["annotations"][0]
    gt["images"] = [{"id": i, "height": 20, "width": 20} for i in range(1, n_images + 1)]
    gt["annotations"] = [{**annotation, "id": i, "image_id": i} for i in range(1, n_images + 1)]
    dt = [
        {"image_id": i, "category_id": 1, "score": score, "segmentation": rle(20, 20)}
        for i in range(1, n_images + 1)
        for score in (0.9, 0.4)
    ]
    return gt, dt


def test_the_sizes_check_reads_each_collection_once_over_every_match_chunk(monkeypatch):
    """Matched in 10 shards, the all-sizes-agree check is computed once per collection (when prepared)."""
    import importlib

    run = importlib.import_module("deteval.evaluate.run")
    rle_module = importlib.import_module("deteval.masks.rle")

    gt, dt = many_images_dataset(10)
    expected = deteval_ap(gt, dt)
    computed = []
    masks_module = importlib.import_module("deteval.geometry.masks")
    agree = rle_module.rle_sizes_are_image_sizes

    def counted(src, masks):
        computed.append(src.kind)
        return agree(src, masks)

    monkeypatch.setattr(rle_module, "rle_sizes_are_image_sizes", counted)
    monkeypatch.setattr(masks_module, "rle_sizes_are_image_sizes", counted)
    monkeypatch.setattr(run, "_MATCH_CHUNK", 2)
    chunks = []
    match_chunk = run._match_chunk
    monkeypatch.setattr(run, "_match_chunk", lambda *a, **k: chunks.append(1) or match_chunk(*a, **k))
    assert deteval_ap(gt, dt) == expected == pytest.approx(1.0)
    assert len(chunks) == 10
    assert sorted(computed) == ["annotation", "detection"]


def test_the_sizes_answer_is_the_sources():
    """The answer is the (source, masks) pair's: the same masks with other image sizes differ."""
    import dataclasses

    from deteval.masks import parse_masks, rle_sizes_are_image_sizes
    from deteval.masks.sources import ground_truth_source

    gt, _ = many_images_dataset(3)
    src = ground_truth_source(deteval.load_ground_truth(gt))
    masks = parse_masks(src)
    assert rle_sizes_are_image_sizes(src, masks)
    other = dataclasses.replace(src, image_size=np.full_like(np.asarray(src.image_size, dtype=float), 10.0))
    assert not rle_sizes_are_image_sizes(other, masks)
    assert rle_sizes_are_image_sizes(src, masks)


def test_the_sizes_answer_is_kept_on_the_prepared_masks():
    """Each collection's all-sizes-agree answer is read once and kept on its CollectionMasks."""
    from deteval.geometry.masks import prepare_masks

    gt, dt = many_images_dataset(3)
    ground_truth = deteval.load_ground_truth(gt)
    prepared = prepare_masks(ground_truth, deteval.load_detections(dt, ground_truth), SEGM)
    assert prepared.gt_masks.rle_sizes_are_image_sizes is True
    assert prepared.det_masks.rle_sizes_are_image_sizes is True
    # 10 x 10 RLEs on a 640 x 640 image: scorable pairs (both 10 x 10), but not the image's size
    gt, dt = dataset(rle(10, 10), rle(10, 10))
    ground_truth = deteval.load_ground_truth(gt)
    prepared = prepare_masks(ground_truth, deteval.load_detections(dt, ground_truth), SEGM)
    assert prepared.gt_masks.rle_sizes_are_image_sizes is False
    assert prepared.det_masks.rle_sizes_are_image_sizes is False


def test_the_pair_check_takes_the_answer_or_computes_it_each_time(monkeypatch):
    """``check_pair_sizes(..., sizes_agree=...)`` reads no collection; without it, every call asks.

    No answer is kept in the module between calls (the prepared value holds it).
    """
    import importlib

    from deteval.masks import check_pair_sizes, parse_masks
    from deteval.masks.sources import detection_source, ground_truth_source

    rle_module = importlib.import_module("deteval.masks.rle")
    gt, dt = many_images_dataset(3)
    ground_truth = deteval.load_ground_truth(gt)
    gt_src = ground_truth_source(ground_truth)
    det_src = detection_source(deteval.load_detections(dt, ground_truth), ground_truth)
    gt_masks, det_masks = parse_masks(gt_src), parse_masks(det_src)
    rows = np.array([0, 2, 4]), np.array([0, 1, 2])
    asked = []
    agree = rle_module.rle_sizes_are_image_sizes
    monkeypatch.setattr(
        rle_module,
        "rle_sizes_are_image_sizes",
        lambda src, masks: asked.append(src.kind) or agree(src, masks),
    )
    check_pair_sizes(det_src, det_masks, gt_src, gt_masks, *rows, sizes_agree=True)
    assert asked == []
    check_pair_sizes(det_src, det_masks, gt_src, gt_masks, *rows)
    check_pair_sizes(det_src, det_masks, gt_src, gt_masks, *rows)
    assert asked == ["detection", "annotation"] * 2
    assert not [
        name for name, value in vars(rle_module).items() if isinstance(value, weakref.WeakKeyDictionary)
    ]
