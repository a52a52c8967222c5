"""Evaluator: any batch split and image order gives exactly ``deteval.evaluate``'s result."""

import pickle
import random
import subprocess
import sys

import numpy as np
import pytest
from pycocotools import mask as mask_utils

import deteval
from deteval.errors import ConfigError, InputError
from deteval.evaluator import Evaluator
from tests.crosscheck.generate import generate
from tests.support.evaluator import metrics, per_image

# Generated data trigger input warnings and notes through deteval.evaluate; incidental here
# (tests/unit/test_api.py checks the warnings themselves).
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]

FIELDS = ("precision", "recall", "scores", "ap")


def in_order(gt, dt, order):
    """The same data with images, annotations and detections in ``order`` of image ids."""
    rank = {i: k for k, i in enumerate(order)}
    gt = {**gt, "annotations": sorted(gt["annotations"], key=lambda a: rank[a["image_id"]])}
    for k, a in enumerate(gt["annotations"]):
        a = gt["annotations"][k] = {**a, "id": k + 1}
    return gt, sorted(dt, key=lambda d: rank[d["image_id"]])


def feed(ev, order, targets, preds, rng, *, with_ids=True):
    i = 0
    while i < len(order):
        k = rng.randint(1, 6)
        chunk = order[i : i + k]
        i += k
        extra = (lambda c: {"image_id": c}) if with_ids else (lambda c: {})
        ev.update([{**preds[c], **extra(c)} for c in chunk], [{**targets[c], **extra(c)} for c in chunk])
    return ev


def assert_same(result, reference):
    for f in FIELDS:
        assert np.array_equal(getattr(result, f), getattr(reference, f), equal_nan=True), f
    a, b = result.to_dict(), reference.to_dict()
    a.pop("warnings"), b.pop("warnings")  # loaders note zero-area boxes; the Evaluator does not
    assert a == b


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("protocol", ["coco", "coco-pycocotools", "coco50"])
def test_any_batches_any_image_order_equal_evaluate(seed, protocol):
    gt, dt = generate(seed, max_images=30, max_classes=6)
    ids, targets, preds = per_image(gt, dt)
    rng = random.Random(seed)
    order = ids[:]
    rng.shuffle(order)
    ev = feed(
        Evaluator(
            protocol,
            box_format="xywh",
            class_ids=[c["id"] for c in gt["categories"]],
            class_names={c["id"]: c["name"] for c in gt["categories"]},
        ),
        order,
        targets,
        preds,
        rng,
    )
    reference = deteval.evaluate(gt, dt, protocol)  # image_major ties: the image order is irrelevant
    assert_same(ev.compute(), reference)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("protocol", ["voc2007", "voc2010"])
def test_file_order_protocols_equal_evaluate_of_the_update_order(seed, protocol):
    gt, dt = generate(seed, max_images=30, max_classes=6)
    ids, targets, preds = per_image(gt, dt)
    rng = random.Random(seed)
    order = ids[:]
    rng.shuffle(order)
    ev = feed(
        Evaluator(
            protocol,
            box_format="xywh",
            class_ids=[c["id"] for c in gt["categories"]],
            class_names={c["id"]: c["name"] for c in gt["categories"]},
        ),
        order,
        targets,
        preds,
        rng,
    )
    gt_o, dt_o = in_order(gt, dt, order)
    assert_same(ev.compute(), deteval.evaluate(gt_o, dt_o, protocol))


def test_match_table_equals_evaluate_up_to_match_order():
    gt, dt = generate(5, max_images=30, max_classes=6)
    ids, targets, preds = per_image(gt, dt)
    ev = feed(
        Evaluator("coco", box_format="xywh", class_ids=[c["id"] for c in gt["categories"]]),
        ids,
        targets,
        preds,
        random.Random(1),
    )
    gt_o, dt_o = in_order(gt, dt, ids)  # detections in update order, as the Evaluator numbers them
    a, b = ev.compute().table, deteval.evaluate(gt_o, dt_o, "coco").table
    for f in (
        "det_score",
        "det_class",
        "det_image",
        "det_rank",
        "det_order",
        "det_is_tp",
        "det_is_ignored",
        "n_positive",
        "n_det_per_class",
    ):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert sorted(zip(a.match_lane, a.match_det, a.match_gt)) == sorted(
        zip(b.match_lane, b.match_det, b.match_gt)
    )


def test_auto_numbered_images_and_classes_from_labels():
    gt, dt = generate(2, max_images=20, max_classes=4)
    ids, targets, preds = per_image(gt, dt)
    ev = feed(Evaluator("coco", box_format="xywh"), ids, targets, preds, random.Random(0), with_ids=False)
    result = ev.compute()
    seen = sorted({a["category_id"] for a in gt["annotations"]} | {d["category_id"] for d in dt})
    assert list(result.category_ids) == seen
    renumber = {i: k for k, i in enumerate(ids)}
    gt2 = {
        **gt,
        "images": [{**im, "id": renumber[im["id"]]} for im in gt["images"]],
        "categories": [c for c in gt["categories"] if c["id"] in seen],
        "annotations": [{**a, "image_id": renumber[a["image_id"]]} for a in gt["annotations"]],
    }
    dt2 = [{**d, "image_id": renumber[d["image_id"]]} for d in dt]
    reference = deteval.evaluate(gt2, dt2, "coco")
    for f in FIELDS:
        assert np.array_equal(getattr(result, f), getattr(reference, f), equal_nan=True)


def _xyxy(box):
    x, y, w, h = box
    return [x, y, x + w, y + h]


@pytest.mark.parametrize("box_format", ["xyxy", "cxcywh"])
def test_box_formats(box_format):
    gt = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 20, 30, 40], "area": 1200, "iscrowd": 0}
        ],
    }
    dt = [
        {"image_id": 1, "category_id": 1, "bbox": [12, 20, 30, 40], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 8, 8], "score": 0.5},
    ]

    def conv(b):
        x, y, w, h = b
        return _xyxy(b) if box_format == "xyxy" else [x + w / 2, y + h / 2, w, h]

    ev = Evaluator("coco", box_format=box_format)
    ev.update(
        [{"boxes": [conv(d["bbox"]) for d in dt], "scores": [0.9, 0.5], "labels": [1, 1]}],
        [{"boxes": [conv(gt["annotations"][0]["bbox"])], "labels": [1], "area": [1200]}],
    )
    reference = deteval.evaluate(
        {**gt, "images": [{"id": 0}], "annotations": [{**gt["annotations"][0], "image_id": 0}]},
        [{**d, "image_id": 0} for d in dt],
        "coco",
    )
    assert metrics(ev.compute()) == metrics(reference)


def test_segm_masks_equal_evaluate_of_the_same_rles():
    rng = np.random.default_rng(0)
    h, w = 40, 50
    targets, preds, anns, dets = [], [], [], []
    for image in range(3):
        gm = np.zeros((2, h, w), bool)
        gm[0, 5:20, 5:25] = True
        gm[1, 22:35, 10 + image : 40] = True
        pm = np.zeros((3, h, w), bool)
        pm[0, 6:21, 5:24] = True
        pm[1, 20:35, 12:40] = True
        pm[2] = rng.random((h, w)) < 0.05
        targets.append({"masks": gm, "labels": [1, 2], "image_id": image})
        preds.append({"masks": pm, "labels": [1, 2, 1], "scores": [0.9, 0.8, 0.3], "image_id": image})
        for m, lab in zip(gm, [1, 2]):
            rle = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": image,
                    "category_id": lab,
                    "iscrowd": 0,
                    "bbox": mask_utils.toBbox(rle).tolist(),
                    "area": float(mask_utils.area(rle)),
                    "segmentation": {"size": rle["size"], "counts": rle["counts"].decode()},
                }
            )
        for m, lab, s in zip(pm, [1, 2, 1], [0.9, 0.8, 0.3]):
            rle = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
            dets.append(
                {
                    "image_id": image,
                    "category_id": lab,
                    "score": s,
                    "segmentation": {"size": rle["size"], "counts": rle["counts"].decode()},
                }
            )
    ev = Evaluator("coco", iou_type="segm")
    ev.update(preds[:2], targets[:2])
    ev.update(preds[2:], targets[2:])
    gt = {
        "images": [{"id": i, "width": w, "height": h} for i in range(3)],
        "categories": [{"id": 1, "name": "1"}, {"id": 2, "name": "2"}],
        "annotations": anns,
    }
    reference = deteval.evaluate(gt, dets, deteval.get_protocol("coco").replace(iou_type="segm"))
    result = ev.compute()
    for f in FIELDS:
        assert np.array_equal(getattr(result, f), getattr(reference, f), equal_nan=True)
    assert metrics(result) == metrics(reference)


def _split_evaluators(seed, n):
    gt, dt = generate(seed, max_images=30, max_classes=5)
    ids, targets, preds = per_image(gt, dt)
    cats = [c["id"] for c in gt["categories"]]
    parts = [Evaluator("coco", box_format="xywh", class_ids=cats) for _ in range(n)]
    for k, image_id in enumerate(ids):
        parts[k % n].update(
            [{**preds[image_id], "image_id": image_id}], [{**targets[image_id], "image_id": image_id}]
        )
    return gt, dt, cats, parts


def test_merge_state_dict_pickle_and_sync():
    gt, dt, cats, parts = _split_evaluators(4, 3)
    reference = deteval.evaluate(gt, dt, "coco")
    merged = Evaluator("coco", box_format="xywh", class_ids=cats)
    for p in parts:
        merged.merge(p)
    assert metrics(merged.compute()) == metrics(reference)
    restored = Evaluator("coco", box_format="xywh", class_ids=cats)
    restored.load_state_dict(pickle.loads(pickle.dumps(merged.state_dict())))
    assert metrics(restored.compute()) == metrics(reference)
    assert metrics(pickle.loads(pickle.dumps(merged)).compute()) == metrics(reference)
    states = [p.state_dict() for p in parts]
    for p in parts:  # every "rank" gets the single-process result
        assert metrics(p.sync(gather=lambda obj: states).compute()) == metrics(reference)
    with pytest.raises(InputError, match=r"image id\(s\) in both"):
        merged.merge(parts[0])
    with pytest.raises(ConfigError, match="same configuration"):
        merged.merge(Evaluator("voc2007", box_format="xywh", class_ids=cats))


def test_reset_and_empty():
    ev = Evaluator("coco", class_ids=[1, 2])
    empty = ev.compute()
    assert np.isnan(empty.metrics["AP"])
    ev.update(
        [{"boxes": [[0, 0, 5, 5]], "scores": [1.0], "labels": [1]}],
        [{"boxes": [[0, 0, 5, 5]], "labels": [1]}],
    )
    assert ev.compute().metrics["AP50"] == pytest.approx(1.0)
    ev.reset()
    assert ev.n_images == 0
    assert np.isnan(ev.compute().metrics["AP"])


def _bad(update_kwargs, message, **options):
    ev = Evaluator("coco", **options)
    ok_t = {"boxes": [[0, 0, 5, 5]], "labels": [1]}
    ok_p = {"boxes": [[0, 0, 5, 5]], "scores": [0.5], "labels": [1]}
    ev.update([ok_p], [ok_t])
    preds, targets = update_kwargs(ok_p, ok_t)
    with pytest.raises(InputError, match=message):
        ev.update(preds, targets)


@pytest.mark.parametrize(
    ("make", "message", "options"),
    [
        (
            lambda p, t: ([p, {**p, "boxes": [[0, 0, float("nan"), 5]]}], [t, t]),
            r"batch 1, preds\[1\] \(image_id=2\): `boxes` row 0 is \[0.0, 0.0, nan, 5.0\]; expected finite",
            {},
        ),
        (
            lambda p, t: ([p], [{**t, "boxes": [[0, 0, 5]]}]),
            r"batch 1, targets\[0\] \(image_id=1\): `boxes` has shape \(1, 3\); expected \(1, 4\)",
            {},
        ),
        (
            lambda p, t: ([{**p, "boxes": [[5, 0, 0, 5]]}], [t]),
            r"preds\[0\] \(image_id=1\): `boxes` row 0 \[5.0, 0.0, 0.0, 5.0\] has a negative width",
            {},
        ),
        (
            lambda p, t: ([{**p, "labels": [7]}], [t]),
            r"preds\[0\] \(image_id=1\): `labels` has 1 value\(s\) not in class_ids, e.g. \[7\]",
            {"class_ids": [1, 2]},
        ),
        (lambda p, t: ([{**p, "scores": [float("inf")]}], [t]), r"`scores` at position 0 is inf", {}),
        (lambda p, t: ([p], [{**t, "labels": [1.5]}]), r"`labels` are not integers", {}),
        (lambda p, t: ([p, p], [t]), r"batch 1: preds has 2 images and targets 1", {}),
        (lambda p, t: ([p], [{**t, "image_id": 3}]), r"targets with `image_id`, earlier batches without", {}),
        (lambda p, t: ([{k: v for k, v in p.items() if k != "scores"}], [t]), r"preds\[0\].*no `scores`", {}),
        (lambda p, t: ([p], [{**t, "iscrowd": [2]}]), r"`iscrowd` at position 0 is 2; expected 0 or 1", {}),
        (
            lambda p, t: ([p], [{**t, "area": [-1]}]),
            r"`area` at position 0 is -1; expected a number >= 0",
            {},
        ),
    ],
)
def test_input_errors_name_batch_image_and_field(make, message, options):
    _bad(make, message, **options)


@pytest.mark.parametrize("image_id", [2**63, np.uint64(2**64 - 1), 2**70, -(2**63) - 1])
def test_an_image_id_outside_int64_is_refused_by_name(image_id):
    """Not an OverflowError from numpy: the error names the batch, the target and the field."""
    ev = Evaluator("coco")
    target = {"boxes": [[0, 0, 5, 5]], "labels": [1], "image_id": image_id}
    with pytest.raises(InputError, match=r"batch 0, targets\[0\]: `image_id` is not one (64-bit )?integer"):
        ev.update([{"boxes": [], "scores": [], "labels": []}], [target])


def test_repeated_image_id_is_refused():
    ev = Evaluator("coco")
    t = {"boxes": [[0, 0, 5, 5]], "labels": [1], "image_id": 4}
    p = {"boxes": [], "scores": [], "labels": [], "image_id": 4}
    ev.update([p], [t])
    with pytest.raises(InputError, match=r"batch 1, targets\[0\]: image_id 4 was already given"):
        ev.update([p], [t])


def test_config_errors():
    with pytest.raises(ConfigError, match="box_format must be one of"):
        Evaluator(box_format="yxyx")
    with pytest.raises(ConfigError, match="class_names as a sequence"):
        Evaluator(class_names=["a"])


def test_import_deteval_imports_neither_torch_nor_dask():
    code = (
        "import sys, deteval; print(sorted(m for m in ('torch', 'dask', 'distributed') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_torchmetrics_adapter_equals_pycocotools():
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    # imported here, not at collection: the package imports torch and torchmetrics when they are
    # installed (about 9 s of CPU; tests/conftest.py runs these tests in one process)
    from deteval.integrations.torchmetrics import MeanAveragePrecision

    gt, dt = generate(7, max_images=25, max_classes=5)
    ids, targets, preds = per_image(gt, dt)
    # torchmetrics numbers images by position and lists only the classes it sees
    renumber = {i: k for k, i in enumerate(ids)}
    seen = sorted({a["category_id"] for a in gt["annotations"]} | {d["category_id"] for d in dt})
    coco_gt = {
        "images": [{"id": renumber[i]} for i in ids],
        "categories": [{"id": c} for c in seen],
        "annotations": [
            {**a, "image_id": renumber[a["image_id"]], "id": k + 1}
            for k, a in enumerate(sorted(gt["annotations"], key=lambda a: renumber[a["image_id"]]))
        ],
    }
    coco_dt = [{**d, "image_id": renumber[d["image_id"]]} for d in dt]
    # COCO's float64 thresholds (torchmetrics' defaults are float32 values of the same grids)
    metric = MeanAveragePrecision(
        box_format="xywh",
        class_metrics=True,
        iou_thresholds=np.linspace(0.5, 0.95, 10).tolist(),
        rec_thresholds=np.linspace(0.0, 1.0, 101).tolist(),
    )
    for k in range(0, len(ids), 4):
        chunk = ids[k : k + 4]
        metric.update([preds[i] for i in chunk], [targets[i] for i in chunk])
    out = metric.compute()
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = coco_gt
        cg.createIndex()
        cd = cg.loadRes(coco_dt)
        e = COCOeval(cg, cd, "bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
        stats = e.stats
        per_class = []
        for c in seen:
            e.params.catIds = [c]
            e.evaluate()
            e.accumulate()
            e.summarize()
            per_class.append((e.stats[0], e.stats[8]))
    keys = [
        "map",
        "map_50",
        "map_75",
        "map_small",
        "map_medium",
        "map_large",
        "mar_1",
        "mar_10",
        "mar_100",
        "mar_small",
        "mar_medium",
        "mar_large",
    ]
    assert [float(out[k]) for k in keys] == [float(np.float32(s)) for s in stats]
    assert np.array_equal(np.asarray(out["map_per_class"]), np.float32([p[0] for p in per_class]))
    assert np.array_equal(np.asarray(out["mar_100_per_class"]), np.float32([p[1] for p in per_class]))
    assert np.asarray(out["classes"]).tolist() == seen


def test_torchmetrics_adapter_micro_and_options():
    # imported here, not at collection: the package imports torch and torchmetrics when they are
    # installed (about 9 s of CPU; tests/conftest.py runs these tests in one process)
    from deteval.integrations.torchmetrics import MeanAveragePrecision

    metric = MeanAveragePrecision(average="micro", iou_thresholds=[0.5], extended_summary=True)
    metric.update(
        [{"boxes": [[0, 0, 10, 10], [20, 20, 30, 30]], "scores": [0.9, 0.8], "labels": [0, 1]}],
        [{"boxes": [[0, 0, 10, 10], [20, 20, 30, 30]], "labels": [1, 0], "area": [0, 0]}],
    )
    out = metric.compute()
    assert float(out["map"]) == 1.0
    assert float(out["map_75"]) == -1.0
    assert float(out["map_per_class"]) == -1.0
    assert out["precision"].shape == (1, 101, 1, 4, 3)
    with pytest.raises(ConfigError, match="rec_thresholds"):
        MeanAveragePrecision(rec_thresholds=[1.5])
