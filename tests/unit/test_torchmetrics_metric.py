"""``deteval.integrations.torchmetrics``: torchmetrics' published cases, the Metric's behaviour.

torchmetrics' own test inputs (``tests/data/peers/torchmetrics/test_map.json``, re-typed from
its ``tests/unittests/detection/test_map.py`` with the commit cited there) must give the
recorded numbers exactly; the class must behave as a ``torchmetrics.Metric`` (``forward``,
``.to()``, ``MetricCollection``, ``merge_state``); without torch the numpy class gives the same
numbers. ``tests/crosscheck/test_vs_torchmetrics.py`` compares with the installed torchmetrics.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from deteval.errors import ConfigError, InputError
from tests import ROOT

PEER = json.loads((ROOT / "tests/data/peers/torchmetrics/test_map.json").read_text())


@pytest.fixture(autouse=True, scope="module")
def _torch_and_torchmetrics() -> None:
    """Import torch, torchmetrics and the Metric class for this module's tests, not at collection.

    Importing them takes about 9 s of CPU; at collection every process would pay it, even one that
    runs none of these tests (tests/conftest.py sends this module's tests to one process). Without
    torch the module is skipped, as before (test_without_torch_the_numpy_class_is_importable_and_equal
    checks the numpy class in a fresh interpreter that cannot import torch).
    """
    global torch, torchmetrics, IS_METRIC, MeanAveragePrecision, ArrayMeanAveragePrecision, float32_linspace
    torch = pytest.importorskip("torch")
    torchmetrics = pytest.importorskip("torchmetrics")
    # the package imports torch and torchmetrics itself when they are installed
    from deteval.integrations.torchmetrics import IS_METRIC, ArrayMeanAveragePrecision, MeanAveragePrecision
    from deteval.integrations.torchmetrics._engine import float32_linspace


def tensors(items: list[dict]) -> list[dict]:
    """The source's types: boxes and scores float32 (``Tensor``), labels int32 (``IntTensor``)."""
    out = []
    for item in items:
        converted = {}
        for key, value in item.items():
            dtype = torch.int32 if key == "labels" else torch.float32
            converted[key] = torch.tensor(value, dtype=dtype)
        out.append(converted)
    return out


def feed(metric, name: str):
    for batch in PEER["inputs"][name]:
        metric.update(tensors(batch["preds"]), tensors(batch["target"]))
    return metric


def as_lists(out: dict) -> dict:
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in out.items()}


def test_is_a_torchmetrics_metric():
    assert IS_METRIC
    assert issubclass(MeanAveragePrecision, torchmetrics.Metric)


@pytest.mark.parametrize("case", PEER["cases"], ids=[c["name"] for c in PEER["cases"]])
@pytest.mark.parametrize("backend", ["pycocotools", "faster_coco_eval"])
def test_torchmetrics_published_inputs(case, backend):
    out = feed(MeanAveragePrecision(backend=backend, **case["options"]), case["inputs"]).compute()
    assert as_lists(out) == case["expected"]
    assert all(v.dtype == (torch.int32 if k == "classes" else torch.float32) for k, v in out.items())


@pytest.mark.parametrize("case", PEER["cases"], ids=[c["name"] for c in PEER["cases"]])
def test_numpy_class_gives_the_same_numbers(case):
    metric = ArrayMeanAveragePrecision(**case["options"])
    for batch in PEER["inputs"][case["inputs"]]:
        to_np = [
            {k: np.asarray(v, dtype=np.int32 if k == "labels" else np.float32) for k, v in item.items()}
            for item in batch["preds"]
        ]
        to_np_t = [
            {k: np.asarray(v, dtype=np.int32 if k == "labels" else np.float32) for k, v in item.items()}
            for item in batch["target"]
        ]
        metric.update(to_np, to_np_t)
    out = metric.compute()
    for key, expected in case["expected"].items():
        got = out[key]
        assert (got.tolist() if isinstance(got, np.ndarray) else got) == expected, key


def test_default_thresholds_are_torchmetrics_float32_values():
    metric = MeanAveragePrecision()
    assert metric.iou_thresholds == torch.linspace(0.5, 0.95, 10).tolist()
    assert metric.rec_thresholds == torch.linspace(0.0, 1.00, 101).tolist()
    assert metric.iou_thresholds[1] == 0.550000011920929
    for start, stop, num in (
        (0.5, 0.95, 10),
        (0.0, 1.0, 101),
        (0.0, 1.0, 11),
        (0.1, 0.9, 7),
        (0.25, 0.75, 3),
    ):
        assert list(float32_linspace(start, stop, num)) == torch.linspace(start, stop, num).tolist()


def test_upstream_box_format_assertions():
    case = PEER["upstream_assertions"][0]
    for box_format, expected in case["expected"].items():
        metric = MeanAveragePrecision(box_format=box_format, **case["options"])
        metric.update(tensors(case["preds"]), tensors(case["target"]))
        out = metric.compute()
        assert out["map"].item() == expected["map"]
        assert round(float(out["ious"][(0, 0)]), 3) == expected["iou"]


def test_upstream_max_detection_thresholds_by_backend():
    """Pycocotools reads ``map`` at 100 detections (-1 here), faster-coco-eval at the largest."""
    case = PEER["upstream_assertions"][1]
    for backend in ("pycocotools", "faster_coco_eval"):
        metric = MeanAveragePrecision(backend=backend, **case["options"])
        out = metric(tensors(case["preds"]), tensors(case["target"]))
        assert (round(out["map"].item(), 5) == 0.6) == (backend == "faster_coco_eval")
        assert all(key in out for key in case["expected"]["keys"])
    assert out["mar_1000"].item() == pytest.approx(0.6)


def test_upstream_extended_summary_shapes():
    case = PEER["upstream_assertions"][2]
    out = feed(MeanAveragePrecision(**case["options"]), case["inputs"]).compute()
    expected = case["expected"]
    assert len(out["ious"]) == expected["n_ious"]
    assert sorted(out["ious"]) == sorted(tuple(k) for k in expected["iou_keys"])
    assert list(out["precision"].shape) == expected["precision_shape"]
    assert list(out["recall"].shape) == expected["recall_shape"]
    assert list(out["scores"].shape) == expected["scores_shape"]


def test_upstream_segm_empty_ground_truth_masks():
    """Torchmetrics' test_segm_iou_empty_gt_mask: ``(0,)`` masks on the target side, -1 everywhere."""
    metric = MeanAveragePrecision(iou_type="segm")
    metric.update(
        [
            {
                "masks": torch.zeros((1, 10, 10), dtype=torch.bool),
                "scores": torch.tensor([0.5]),
                "labels": torch.tensor([4]),
            }
        ],
        [{"masks": torch.tensor([]), "labels": torch.tensor([], dtype=torch.int32)}],
    )
    out = metric.compute()
    assert sorted(out) == sorted(
        ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100"]
        + ["mar_small", "mar_medium", "mar_large", "classes"]
    )
    assert all(v.item() == -1 for k, v in out.items() if k != "classes")
    assert out["classes"].item() == 4


def batches():
    case = PEER["inputs"]["_inputs"]
    return [(tensors(b["preds"]), tensors(b["target"])) for b in case]


def test_forward_gives_the_batch_and_keeps_it():
    (p1, t1), (p2, t2) = batches()
    metric = MeanAveragePrecision(class_metrics=True)
    first = metric(p1, t1)
    alone = MeanAveragePrecision(class_metrics=True)
    alone.update(p1, t1)
    assert as_lists(first) == as_lists(alone.compute())
    metric(p2, t2)
    both = MeanAveragePrecision(class_metrics=True)
    both.update(p1, t1)
    both.update(p2, t2)
    assert as_lists(metric.compute()) == as_lists(both.compute())


def test_to_device_and_metric_collection():
    from torchmetrics import MetricCollection

    (p1, t1), (p2, t2) = batches()
    metric = MeanAveragePrecision().to("cpu")
    assert metric.device.type == "cpu"
    collection = MetricCollection(
        {"deteval": MeanAveragePrecision(), "micro": MeanAveragePrecision(average="micro")}
    )
    for preds, target in ((p1, t1), (p2, t2)):
        metric.update(preds, target)
        collection.update(preds, target)
    out = collection.compute()
    assert {k[len("deteval_") :]: v.tolist() for k, v in out.items() if k.startswith("deteval_")} == as_lists(
        metric.compute()
    )
    assert round(out["deteval_map"].item(), 5) == 0.63565
    assert out["micro_map"].item() != out["deteval_map"].item()


def test_merge_state_equals_one_metric_fed_both():
    (p1, t1), (p2, t2) = batches()
    a, b = MeanAveragePrecision(extended_summary=True), MeanAveragePrecision(extended_summary=True)
    a.update(p1, t1)
    b.update(p2, t2)
    b.merge_state(a)  # torchmetrics puts the incoming state's images first: a's, then b's
    one = MeanAveragePrecision(extended_summary=True)
    one.update(p1, t1)
    one.update(p2, t2)
    merged, single = b.compute(), one.compute()
    assert sorted(merged) == sorted(single)
    for key, value in single.items():
        if key == "ious":
            assert merged[key].keys() == value.keys()
            assert all(
                torch.equal(merged[key][k], v) if isinstance(v, torch.Tensor) else merged[key][k] == v
                for k, v in value.items()
            )
        else:
            assert torch.equal(merged[key], value), key


def test_states_are_list_states_gathered_per_image():
    """Torchmetrics syncs list states element by element: one tensor per image in every state."""
    metric = MeanAveragePrecision(iou_type=("bbox", "segm"))
    masks = torch.zeros((1, 4, 5), dtype=torch.bool)
    masks[0, 1:3, 1:4] = True
    metric.update(
        [
            {
                "boxes": torch.tensor([[1.0, 1, 4, 3]]),
                "masks": masks,
                "scores": torch.tensor([0.5]),
                "labels": torch.tensor([1]),
            }
        ],
        [{"boxes": torch.tensor([[1.0, 1, 4, 3]]), "masks": masks, "labels": torch.tensor([1])}],
    )
    for name, reduce in metric._reductions.items():
        assert reduce is None
        assert isinstance(getattr(metric, name), list), name
        assert len(getattr(metric, name)) == 1, name
        assert isinstance(getattr(metric, name)[0], torch.Tensor)
    assert metric.compute()["segm_map"].item() == 1.0


def test_bad_options_are_config_errors():
    with pytest.raises(
        ConfigError, match="`backend` must be one of 'pycocotools', 'faster_coco_eval', found 'detectron2'"
    ):
        MeanAveragePrecision(backend="detectron2")
    with pytest.raises(ConfigError, match="`iou_type` must be 'bbox', 'segm' or a tuple"):
        MeanAveragePrecision(iou_type="keypoints")
    with pytest.raises(ConfigError, match="`max_detection_thresholds` must be 3 positive ints"):
        MeanAveragePrecision(max_detection_thresholds=[1, 10])
    with pytest.raises(ConfigError, match="`class_metrics` must be a bool"):
        MeanAveragePrecision(class_metrics=0)
    with pytest.raises(ConfigError, match="`rec_thresholds` must be None or a list of floats in"):
        MeanAveragePrecision(rec_thresholds=[0.5, 1.5])
    with pytest.raises(ConfigError, match="`box_format` must be one of"):
        MeanAveragePrecision(box_format="yxyx")
    with pytest.raises(ConfigError, match="`average` must be 'macro' or 'micro'"):
        MeanAveragePrecision(average="weighted")


def test_bad_inputs_name_the_image_and_field():
    metric = MeanAveragePrecision()
    good = {
        "boxes": torch.tensor([[0.0, 0, 1, 1]]),
        "scores": torch.tensor([0.5]),
        "labels": torch.tensor([0]),
    }
    target = {"boxes": torch.tensor([[0.0, 0, 1, 1]]), "labels": torch.tensor([0])}
    with pytest.raises(InputError, match=r"`preds` has 1 images and `target` 2"):
        metric.update([good], [target, target])
    with pytest.raises(InputError, match=r"preds\[0\] has no 'scores'"):
        metric.update([{"boxes": good["boxes"], "labels": good["labels"]}], [target])
    with pytest.raises(InputError, match=r"target\[0\]: `boxes` has shape \(1, 3\); expected \(1, 4\)"):
        metric.update([good], [{**target, "boxes": torch.zeros((1, 3))}])
    with pytest.raises(InputError, match=r"preds\[0\]: `scores` has shape \(2,\)"):
        metric.update([{**good, "scores": torch.tensor([0.5, 0.4])}], [target])
    with pytest.raises(InputError, match=r"preds\[0\]: `boxes` holds NaN or inf"):
        metric.update([{**good, "boxes": torch.tensor([[0.0, 0, float("nan"), 1]])}], [target])
    with pytest.raises(
        InputError, match=r"target\[0\]: `boxes` row 0 is \[5.0, 5.0, 1.0, 1.0\], a negative width"
    ):
        metric.update([good], [{**target, "boxes": torch.tensor([[5.0, 5, 1, 1]])}])
    with pytest.raises(InputError, match=r"target\[0\]: `iscrowd` holds values other than 0 and 1"):
        metric.update([good], [{**target, "iscrowd": torch.tensor([2])}])
    with pytest.raises(InputError, match=r"preds\[0\]: `masks` has shape \(1, 4\)"):
        MeanAveragePrecision(iou_type="segm").update(
            [{"masks": torch.zeros((1, 4)), "scores": torch.tensor([0.5]), "labels": torch.tensor([0])}],
            [{"masks": torch.zeros((0,)), "labels": torch.zeros((0,), dtype=torch.int64)}],
        )
    with pytest.raises(InputError, match=r"preds\[0\]: `masks` has values other than 0 and 1"):
        MeanAveragePrecision(iou_type="segm").update(
            [{"masks": torch.full((1, 2, 2), 3), "scores": torch.tensor([0.5]), "labels": torch.tensor([0])}],
            [{"masks": torch.zeros((0,)), "labels": torch.zeros((0,), dtype=torch.int64)}],
        )
    with pytest.raises(InputError, match=r"preds\[0\]: `labels` has shape \(1,\) and dtype float32"):
        metric.update([{**good, "labels": torch.tensor([0.0])}], [target])


def test_without_torch_the_numpy_class_is_importable_and_equal():
    """A fresh interpreter where ``import torch`` fails: the class is the numpy one, same numbers."""
    code = """
import builtins, sys, warnings
real = builtins.__import__
def blocked(name, *args, **kwargs):
    if name.split(".")[0] in ("torch", "torchmetrics", "torchvision"):
        raise ImportError(name)
    return real(name, *args, **kwargs)
builtins.__import__ = blocked
import importlib.util
find = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] in ("torch", "torchmetrics") else find(name, *a)
from deteval.integrations.torchmetrics import MeanAveragePrecision, ArrayMeanAveragePrecision, IS_METRIC
assert MeanAveragePrecision is ArrayMeanAveragePrecision and not IS_METRIC
m = MeanAveragePrecision()
m.update([{"boxes": [[258.0, 41.0, 606.0, 285.0]], "scores": [0.536], "labels": [0]}],
         [{"boxes": [[214.0, 41.0, 562.0, 285.0]], "labels": [0]}])
out = m.compute()
print(round(out["map"], 4), out["map_50"], out["classes"], "torch" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.6", "1.0", "0", "False"]


def test_compute_before_update_warns_like_torchmetrics():
    metric = MeanAveragePrecision()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = metric.compute()
    assert any("before the ``update``" in str(w.message) for w in caught)
    assert out["map"].item() == -1.0
    assert "map_per_class" not in out
