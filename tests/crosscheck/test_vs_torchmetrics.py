"""deteval's ``MeanAveragePrecision`` against the installed torchmetrics one, key by key.

Every key of ``compute()`` must be equal (``torch.equal``, same dtype and shape), the extended
summary's ``precision`` / ``recall`` / ``scores`` arrays and ``ious`` dict included, under both
torchmetrics backends (pycocotools and faster-coco-eval), on generated datasets: nasty box data
(``tests/crosscheck/generate.py``: score ties, IoUs on the thresholds, crowd, empty images,
many detections), masks (``generate_segm.py``), both iou types at once, and hand-made edge
cases (no detections at all, no ground truth at all, classes on one side only, ``(0,)`` masks).
"""

from __future__ import annotations

import random
import warnings

import pytest

pytest.importorskip("torchvision")
reference = pytest.importorskip("torchmetrics.detection")
pytest.importorskip("faster_coco_eval")


from deteval.integrations.torchmetrics import MeanAveragePrecision  # noqa: E402
from tests.crosscheck.generate import generate  # noqa: E402
from tests.crosscheck.generate_segm import generate_segm  # noqa: E402
from tests.support.torchmetrics import coco_batches, torch  # noqa: E402

BACKENDS = ("pycocotools", "faster_coco_eval")


def assert_same(ours: dict, theirs: dict, where: str) -> None:
    """Equal keys, and every value equal in dtype, shape and bits (dicts of ``ious`` too)."""
    assert sorted(ours) == sorted(theirs), where
    for key, expected in theirs.items():
        got = ours[key]
        if isinstance(expected, dict):
            assert list(got) == list(expected), f"{where}: {key} keys"
            for pair, value in expected.items():
                _assert_value(got[pair], value, f"{where}: {key}[{pair}]")
        else:
            _assert_value(got, expected, f"{where}: {key}")


def _assert_value(got, expected, where: str) -> None:
    if isinstance(expected, list):
        assert got == expected, where
        return
    assert isinstance(got, torch.Tensor), where
    assert (got.dtype, tuple(got.shape)) == (expected.dtype, tuple(expected.shape)), where
    assert torch.equal(got, expected), f"{where}: {got} != {expected}"


def run(cls, batches, **options) -> dict:
    metric = cls(**options)
    with warnings.catch_warnings():
        # torchmetrics warns on > 100 detections per image and on compute() before update()
        warnings.simplefilter("ignore")
        for preds, target in batches:
            metric.update(preds, target)
        return metric.compute()


def check(batches, where: str, **options) -> None:
    for backend in BACKENDS:
        theirs = run(reference.MeanAveragePrecision, batches, backend=backend, **options)
        ours = run(MeanAveragePrecision, batches, backend=backend, **options)
        assert_same(ours, theirs, f"{where} backend={backend} {options}")


@pytest.mark.parametrize("seed", range(24))
def test_generated_boxes(seed):
    rng = random.Random(seed)
    gt, dt = generate(seed, max_images=12, max_classes=4)
    box_format = ("xywh", "xyxy", "cxcywh")[seed % 3]
    dtype = torch.float64 if seed % 4 == 3 else torch.float32
    batches = coco_batches(gt, dt, rng, box_format=box_format, dtype=dtype)
    options = {
        "box_format": box_format,
        "class_metrics": seed % 2 == 0,
        "extended_summary": seed % 3 != 2,
        "average": "micro" if seed % 5 == 1 else "macro",
    }
    if seed % 6 == 4:
        options.update(iou_thresholds=[0.3, 0.5, 0.75], rec_thresholds=[0.0, 0.2, 0.5, 0.9])
    if seed % 7 == 5:
        options["max_detection_thresholds"] = [2, 5, 50]
    check(batches, f"seed {seed}", **options)


@pytest.mark.parametrize("seed", range(8))
def test_generated_masks(seed):
    rng = random.Random(seed)
    gt, dt = generate_segm(seed, max_images=5, max_classes=3)
    for im in gt["images"]:  # keep the masks small: torchmetrics holds them all
        assert im["height"] * im["width"] <= 1000 * 700
    batches = coco_batches(gt, dt, rng, masks=True, box_format="xyxy")
    iou_type = (("segm",), ("bbox", "segm"), ("segm", "bbox"))[seed % 3]
    options = {
        "iou_type": iou_type if len(iou_type) > 1 else iou_type[0],
        "class_metrics": seed % 2 == 1,
        "extended_summary": seed % 4 < 2,
        "average": "micro" if seed % 4 == 3 else "macro",
    }
    check(batches, f"segm seed {seed}", **options)


def _item(boxes, labels, scores=None, **extra):
    out = {"boxes": torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4), "labels": torch.tensor(labels)}
    if scores is not None:
        out["scores"] = torch.tensor(scores, dtype=torch.float32)
    out.update(extra)
    return out


EMPTY_PRED = {
    "boxes": torch.zeros((0,)),
    "scores": torch.zeros((0,)),
    "labels": torch.zeros((0,), dtype=torch.int64),
}
EMPTY_TARGET = {"boxes": torch.zeros((0,)), "labels": torch.zeros((0,), dtype=torch.int64)}

EDGE_CASES = {
    "no detections at all": [
        ([EMPTY_PRED, EMPTY_PRED], [_item([[0, 0, 10, 10]], [1]), _item([[5, 5, 20, 20]], [2])]),
    ],
    "no ground truth at all": [
        ([_item([[0, 0, 10, 10]], [1], [0.9]), EMPTY_PRED], [EMPTY_TARGET, EMPTY_TARGET]),
    ],
    "classes on one side only": [
        (
            [_item([[0, 0, 10, 10], [50, 50, 90, 90]], [1, 3], [0.9, 0.8])],
            [_item([[0, 0, 10, 10], [20, 20, 40, 40]], [1, 2])],
        ),
    ],
    "crowd and areas": [
        (
            [_item([[0, 0, 10, 10], [1, 1, 9, 9], [100, 100, 200, 200]], [1, 1, 1], [0.9, 0.9, 0.5])],
            [
                _item(
                    [[0, 0, 10, 10], [100, 100, 200, 200]],
                    [1, 1],
                    iscrowd=torch.tensor([1, 0]),
                    area=torch.tensor([0.0, 5000.0]),
                )
            ],
        ),
    ],
    "empty images between": [
        ([EMPTY_PRED], [EMPTY_TARGET]),
        ([_item([[0, 0, 10, 10]], [0], [0.5])], [_item([[0, 0, 10, 11]], [0])]),
        ([EMPTY_PRED], [EMPTY_TARGET]),
    ],
    "equal scores across images": [
        (
            [_item([[0, 0, 10, 10]], [0], [0.5]), _item([[0, 0, 10, 10]], [0], [0.5])],
            [EMPTY_TARGET, _item([[0, 0, 10, 10]], [0])],
        ),
    ],
    "no update": [],
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
@pytest.mark.parametrize(
    "options",
    [{}, {"class_metrics": True, "extended_summary": True}, {"average": "micro", "class_metrics": True}],
    ids=["defaults", "class+extended", "micro"],
)
def test_edge_cases(case, options):
    check(EDGE_CASES[case], case, **options)


def _mask_item(masks, labels, scores=None):
    out = {"masks": masks, "labels": torch.tensor(labels, dtype=torch.int64)}
    if scores is not None:
        out["scores"] = torch.tensor(scores, dtype=torch.float32)
    return out


def _square(h, w, y0, x0, y1, x1):
    m = torch.zeros((h, w), dtype=torch.bool)
    m[y0:y1, x0:x1] = True
    return m


@pytest.mark.parametrize("iou_type", ["segm", ("bbox", "segm")])
def test_empty_masks_of_shape_0(iou_type):
    """``(0,)`` masks (torchmetrics' ``coco_to_tm`` for an image without objects) on either side."""
    none = torch.zeros((0,), dtype=torch.bool)
    one = torch.stack([_square(20, 30, 2, 2, 12, 12)])
    two = torch.stack([_square(20, 30, 2, 2, 12, 12), _square(20, 30, 5, 10, 18, 28)])
    box = {"boxes": torch.tensor([[2.0, 2, 12, 12]])}
    boxes2 = {"boxes": torch.tensor([[2.0, 2, 12, 12], [10.0, 5, 28, 18]])}
    no_box = {"boxes": torch.zeros((0,))}
    batches = [
        (
            [
                {**_mask_item(one, [1], [0.7]), **box},
                {**_mask_item(none, [], []), **no_box},
                {**_mask_item(two, [1, 2], [0.9, 0.4]), **boxes2},
            ],
            [
                {**_mask_item(none, []), **no_box},
                {**_mask_item(one, [1]), **box},
                {**_mask_item(two, [1, 1]), **boxes2},
            ],
        )
    ]
    for options in ({}, {"class_metrics": True, "extended_summary": True}):
        check(batches, f"(0,) masks {iou_type}", iou_type=iou_type, **options)
