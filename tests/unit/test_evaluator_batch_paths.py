"""The Evaluator's batch-wide paths give exactly what the image-by-image paths they stand for give.

- ``_read_batch`` (a batch's columns checked at once) against ``_read_image`` (each image's dict
  checked alone): the same arrays, dtypes and shapes whenever it answers, and no answer whenever
  an image is refused (the image-by-image reader then names it).
- ``_table_rows`` with many parts (one permutation) against its slice-by-slice layout.
- ``_canonical``'s stable sort by image against the lexsort of (image, class, rank).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deteval
from deteval.errors import InputError
from deteval.evaluate import table as table_module
from deteval.evaluator import Evaluator
from deteval.evaluator import batches as batches_module
from tests.crosscheck.generate import generate
from tests.support.evaluator import per_image

pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]

#: Mostly valid numbers, now and then one the readers refuse (or, 1e300, one float32 makes inf).
_NUMBER = st.sampled_from([0.0, 1.0, 2.5, 7.0] * 12 + [-1.0, float("nan"), float("inf"), 1e300])


@st.composite
def _vector(draw, n: int, values, dtypes) -> object:
    """Values (n of them) as a list, a numpy array of one of ``dtypes``, or (n = 1) a 0-d array."""
    items = [draw(values) for _ in range(n)]
    form = draw(st.sampled_from(["list", "array", "scalar"] if n == 1 else ["list", "array"]))
    if form == "list":
        return items
    dtype = draw(st.sampled_from(dtypes))
    with np.errstate(invalid="ignore", over="ignore"):
        array = np.array(items, dtype=np.float64).astype(dtype)
    return array.reshape(()) if form == "scalar" else array


@st.composite
def _image(draw, side: str, extras: tuple) -> dict:
    n = draw(st.integers(0, 4))
    if n == 0 and draw(st.booleans()):
        item: dict = {"labels": [], "boxes": draw(st.sampled_from([[], np.zeros((0, 4)), np.zeros(0)]))}
    else:
        labels = draw(
            _vector(n, st.sampled_from([1, 2, 3] * 10 + [9, 1.5]), [np.int64, np.int32, np.uint8, np.float32])
        )
        if n and isinstance(labels, list) and 1.5 in labels and draw(st.booleans()):
            labels = [int(v) for v in labels]
        corners = [[draw(_NUMBER) for _ in range(4)] for _ in range(n)]
        form = draw(st.sampled_from(["list", "float32", "float64", "int32"] * 5 + ["short"]))
        if form == "list":
            boxes: object = corners
        elif form == "short":
            boxes = np.zeros((n, 3))
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                boxes = np.array(corners, dtype=np.float64).reshape(n, 4).astype(form)
        item = {"labels": labels, "boxes": boxes}
    n = len(np.asarray(item["labels"]).reshape(-1))
    if side == "preds":
        item["scores"] = draw(_vector(n, _NUMBER, [np.float64, np.float32, bool]))
    else:
        if "iscrowd" in extras:
            item["iscrowd"] = draw(_vector(n, st.sampled_from([0, 1] * 10 + [2]), [np.int64, np.uint8, bool]))
        if "area" in extras:
            item["area"] = draw(_vector(n, _NUMBER, [np.float64, np.int32]))
    return item


@st.composite
def _batch(draw) -> tuple:
    side = draw(st.sampled_from(["preds", "targets"]))
    extras = draw(st.sampled_from([(), ("iscrowd",), ("area",), ("iscrowd", "area")]))
    images = draw(st.lists(_image(side, extras), min_size=1, max_size=5))
    if side == "targets" and len(images) > 1 and draw(st.integers(0, 9)) == 0:
        images[-1] = {k: v for k, v in images[-1].items() if k != "area"}  # extras on some images only
    return side, images


@settings(max_examples=400, deadline=None)
@given(
    batch=_batch(),
    box_format=st.sampled_from(["xyxy", "xywh", "cxcywh"]),
    class_ids=st.sampled_from([None, [1, 2, 3]]),
)
def test_the_batch_reader_answers_as_the_image_reader(batch, box_format, class_ids):
    side, items = batch
    ev = Evaluator("coco", box_format=box_format, class_ids=class_ids)
    fast = ev._read_batch(items, side)
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            one_by_one = [ev._read_image(item, 0, i, i, side, False) for i, item in enumerate(items)]
    except InputError:
        assert fast is None  # a refused image: the batch reader leaves it to the image reader
        return
    if fast is None:
        return  # declined (an unusual form): the image reader's answer stands
    assert len(fast) == len(one_by_one)
    for got, expected in zip(fast, one_by_one, strict=True):
        assert got.keys() == expected.keys()
        for key in expected:
            assert got[key].dtype == expected[key].dtype, key
            assert got[key].shape == expected[key].shape, key
            assert got[key].tobytes() == expected[key].tobytes(), key


def test_the_batch_reader_takes_a_training_loops_batch():
    """Float32 boxes, int64 labels, bool iscrowd, an empty image: read at once, not declined."""
    ev = Evaluator("coco", box_format="xyxy", class_ids=[1, 2])
    targets = [
        {
            "boxes": np.array([[0, 0, 4, 4]], np.float32),
            "labels": np.array([2]),
            "iscrowd": np.array([False]),
        },
        {
            "boxes": np.zeros((0, 4), np.float32),
            "labels": np.zeros(0, np.int64),
            "iscrowd": np.zeros(0, bool),
        },
    ]
    read = ev._read_batch(targets, "targets")
    assert read is not None
    assert [r["labels"].tolist() for r in read] == [[2], []]
    assert read[0]["boxes"].dtype == np.float64
    assert read[1]["boxes"].shape == (0, 4)
    assert read[0]["iscrowd"].dtype == bool


def _match_tables(seed: int, batch: int):
    gt, dt = generate(seed, max_images=60, max_classes=5)
    ids, targets, preds = per_image(gt, dt)
    ev = Evaluator("coco", box_format="xywh", class_ids=[c["id"] for c in gt["categories"]])
    for k in range(0, len(ids), batch):
        chunk = ids[k : k + batch]
        ev.update(
            [{**preds[i], "image_id": i} for i in chunk], [{**targets[i], "image_id": i} for i in chunk]
        )
    return ev, [b.table for b in ev._batches]


@pytest.mark.parametrize("seed", range(6))
def test_many_parts_lay_out_the_matches_as_slices_do(seed, monkeypatch):
    ev, _ = _match_tables(seed, batch=1)  # one part per image
    assert len(ev._batches) > 1
    monkeypatch.setattr(table_module, "_PARTS_COPIED_BY_SLICES", 1)
    permuted = ev._assemble()[1]
    monkeypatch.setattr(table_module, "_PARTS_COPIED_BY_SLICES", 10**9)
    sliced = ev._assemble()[1]
    for field in ("match_lane", "match_det", "match_gt", "det_image", "det_class", "det_rank", "det_order"):
        a, b = getattr(permuted, field), getattr(sliced, field)
        assert a.dtype == b.dtype, field
        assert np.array_equal(a, b), field


@pytest.mark.parametrize("seed", range(6))
def test_the_canonical_order_by_image_is_the_lexsort(seed, monkeypatch):
    ev, _ = _match_tables(seed, batch=3)
    fast = ev._assemble()[1]
    # The reference: the three keys lexsorted (what the stable sort by image stands for).
    monkeypatch.setattr(batches_module, "_in_key_order", lambda *keys: False)
    reference = ev._assemble()[1]
    for field in ("det_image", "det_class", "det_rank", "det_order", "det_score", "match_lane", "match_det"):
        assert np.array_equal(getattr(fast, field), getattr(reference, field)), field
    assert np.array_equal(fast.tp.lane(0), reference.tp.lane(0))


def test_many_one_image_batches_equal_evaluate():
    gt, dt = generate(3, max_images=60, max_classes=5)
    ev, _ = _match_tables(3, batch=1)
    whole = deteval.evaluate(gt, dt, "coco")
    got = ev.compute()
    for field in ("precision", "recall", "scores", "ap"):
        assert np.array_equal(getattr(got, field), getattr(whole, field), equal_nan=True), field


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (([0, 0, 1, 1], [3, 3, 0, 2], [0, 1, 0, 0]), True),
        (([0, 0, 1, 1], [3, 3, 0, 2], [1, 0, 0, 0]), False),
        (([0, 1, 0], [0, 0, 0], [0, 0, 0]), False),
        (([], [], []), True),
        (([5], [1], [0]), True),
    ],
)
def test_in_key_order(keys, expected):
    assert batches_module._in_key_order(*(np.array(k, dtype=np.int32) for k in keys)) is expected
