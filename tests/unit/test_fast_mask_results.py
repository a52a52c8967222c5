"""Segm (compressed RLE) and keypoint results files read by the compiled parser.

A file the C reader takes gives the Detections, masks and errors of the same records given as a
list (the full loader): equal columns, equal parsed masks, the same messages for corrupt input.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from pycocotools import mask as mask_utils

import deteval
from deteval.errors import InputError
from deteval.io.coco import fast
from deteval.io.coco import ground_truth as ground_truth_module
from deteval.io.coco.fast_instances import RawSegmentations, SpanSegmentations
from deteval.masks import parse_masks
from deteval.masks.sources import (
    PolygonSegmentations,
    RleSegmentations,
    detection_source,
    ground_truth_source,
)

needs_parser = pytest.mark.skipif(
    fast._colparse is None or not hasattr(fast._colparse, "rle_results"), reason="_colparse not built"
)
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")


def ground_truth() -> dict:
    images = [{"id": i, "width": 30, "height": 20} for i in (1, 2)]
    anns = []
    for i, (image, box) in enumerate([(1, [2, 2, 10, 8]), (2, [5, 4, 12, 9]), (1, [15, 6, 9, 9])]):
        x, y, w, h = box
        anns.append(
            {
                "id": i + 1,
                "image_id": image,
                "category_id": 1,
                "iscrowd": 0,
                "area": w * h,
                "bbox": box,
                "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]],
                "keypoints": [x, y, 2, x + w, y + h, 1, 0, 0, 0],
                "num_keypoints": 2,
            }
        )
    return {"images": images, "categories": [{"id": 1, "name": "a"}], "annotations": anns}


def rle_results(rng: np.random.Generator, n: int) -> list:
    out = []
    for ann in ground_truth()["annotations"]:  # one exact hit per ground truth
        x, y, w, h = ann["bbox"]
        m = np.zeros((20, 30), np.uint8, order="F")
        m[y : y + h, x : x + w] = 1
        counts = mask_utils.encode(m)["counts"].decode()
        out.append(
            {
                "image_id": ann["image_id"],
                "category_id": 1,
                "bbox": ann["bbox"],
                "score": 0.99,
                "segmentation": {"size": [20, 30], "counts": counts},
            }
        )
    for _ in range(n):
        m = np.zeros((20, 30), np.uint8, order="F")
        y, x = rng.integers(0, 15), rng.integers(0, 25)
        m[y : y + rng.integers(1, 8), x : x + rng.integers(1, 8)] = 1
        counts = mask_utils.encode(m)["counts"].decode()
        out.append(
            {
                "image_id": int(rng.integers(1, 3)),
                "category_id": 1,
                "bbox": [float(x), float(y), 5.0, 5.0],
                "score": round(float(rng.uniform()), 3),
                "segmentation": {"size": [20, 30], "counts": counts},
            }
        )
    return out


def write(tmp_path: Path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def same_detections(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype
            assert x.tobytes() == y.tobytes(), f.name
        elif f.name not in ("source", "segmentation"):
            assert x == y, f.name


@needs_parser
def test_rle_results_file_gives_the_full_loaders_detections_masks_and_metrics(tmp_path):
    gt = deteval.load_ground_truth(ground_truth())
    records = rle_results(np.random.default_rng(0), 40)
    first_run_44 = np.zeros((20, 30), np.uint8, order="F")
    first_run_44[4:10, 2:6] = 1  # 44 background pixels first: its string starts with a backslash
    counts = mask_utils.encode(first_run_44)["counts"].decode()
    assert counts.startswith("\\")  # written "\\\\" in the JSON file
    records[5]["segmentation"]["counts"] = counts
    path = write(tmp_path, "dt.json", records)
    dt = deteval.load_detections(path, gt)
    assert isinstance(dt.segmentation, RleSegmentations)
    reference = deteval.load_detections(json.loads(Path(path).read_text()), gt)
    same_detections(dt, reference)
    fast_masks = parse_masks(detection_source(dt, gt))
    full_masks = parse_masks(detection_source(reference, gt))
    assert fast_masks.rle == full_masks.rle
    for name in (
        "kind",
        "part_start",
        "point_start",
        "points",
        "bounds",
        "rle_size",
        "rle_offsets",
        "rle_area",
    ):
        assert getattr(fast_masks, name).tobytes() == getattr(full_masks, name).tobytes(), name
    assert bytes(fast_masks.rle_blob) == bytes(full_masks.rle_blob)
    assert list(dt.segmentation) == [r["segmentation"] for r in records]  # items made from the columns
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    metrics = deteval.evaluate(gt, dt, protocol=protocol).metrics
    assert json.dumps(metrics) == json.dumps(deteval.evaluate(gt, reference, protocol=protocol).metrics)
    assert metrics["AP"] > 0


@needs_parser
@pytest.mark.parametrize(
    ("counts", "size", "message"),
    [
        ("0P", [20, 30], "ends inside a run"),
        ("0!", [20, 30], "outside '0'..'o'"),
        ("52", [20, 30], "do not add up"),
        ("00", [-1, 30], "RLE `size` is not"),
    ],
)
def test_a_corrupt_rle_in_a_file_is_refused_as_in_a_list(tmp_path, counts, size, message):
    gt = deteval.load_ground_truth(ground_truth())
    records = rle_results(np.random.default_rng(1), 5)
    records[3]["segmentation"] = {"size": size, "counts": counts}
    path = write(tmp_path, "dt.json", records)
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    errors = []
    for dt in (deteval.load_detections(path, gt), deteval.load_detections(records, gt)):
        with pytest.raises(InputError, match=message) as caught:
            deteval.evaluate(gt, dt, protocol=protocol)
        errors.append(str(caught.value).replace(path, "<detections>"))
    assert errors[0] == errors[1]


def keypoint_results(rng: np.random.Generator, n: int) -> list:
    return [
        {
            "image_id": int(rng.integers(1, 3)),
            "category_id": 1,
            "keypoints": [round(float(v), 2) for v in rng.uniform(0, 30, 9)],
            "score": round(float(rng.uniform()), 3),
        }
        for _ in range(n)
    ]


@needs_parser
def test_keypoint_results_file_gives_the_full_loaders_detections_and_metrics(tmp_path):
    gt = deteval.load_ground_truth(ground_truth())
    records = keypoint_results(np.random.default_rng(2), 30)
    for ann in ground_truth()["annotations"]:  # one close hit per ground truth
        kp = [v + 0.5 if i % 3 != 2 else 0.9 for i, v in enumerate(ann["keypoints"])]
        records.append({"image_id": ann["image_id"], "category_id": 1, "keypoints": kp, "score": 0.99})
    records[0]["keypoints"][0] = 7  # an integer
    path = write(tmp_path, "kp.json", records)
    dt = deteval.load_detections(path, gt)
    reference = deteval.load_detections(records, gt)
    same_detections(dt, reference)
    assert not dt.has_box.any()
    protocol = deteval.get_protocol("coco-keypoints").replace(keypoint_sigmas=(0.05, 0.06, 0.07))
    metrics = deteval.evaluate(gt, dt, protocol=protocol).metrics
    assert json.dumps(metrics) == json.dumps(deteval.evaluate(gt, reference, protocol=protocol).metrics)
    assert metrics["AP"] > 0


@needs_parser
@pytest.mark.parametrize("change", ["unknown image", "short list", "with bbox"])
def test_keypoint_files_the_parser_does_not_take_are_read_as_before(tmp_path, change):
    gt = deteval.load_ground_truth(ground_truth())
    records = keypoint_results(np.random.default_rng(3), 6)
    if change == "unknown image":
        records[2]["image_id"] = 99
    elif change == "short list":
        records[2]["keypoints"] = records[2]["keypoints"][:6]
    else:
        records[2]["bbox"] = [1, 1, 2, 2]
    path = write(tmp_path, "kp.json", records)
    assert fast._fast_keypoint_results(Path(path).read_bytes(), path, gt) is None
    if change == "with bbox":
        same_detections(deteval.load_detections(path, gt), deteval.load_detections(records, gt))
        return
    messages = []
    for source in (path, records):
        with pytest.raises(InputError) as caught:
            deteval.load_detections(source, gt)
        messages.append(str(caught.value).replace(path, "<detections>"))
    assert messages[0] == messages[1]


def with_boxes(records: list) -> list:
    """The records with a bbox each, as a detector writes it beside its keypoints."""
    for r in records:
        x, y = r["keypoints"][0::3], r["keypoints"][1::3]
        r["bbox"] = [min(x), min(y), round(max(x) - min(x) + 1.5, 2), round(max(y) - min(y), 2)]
    return records


@needs_parser
@pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning")  # the warnings are compared
def test_keypoint_results_with_a_bbox_in_every_record_are_read_in_columns(tmp_path, monkeypatch):
    gt = deteval.load_ground_truth(ground_truth())
    records = with_boxes(keypoint_results(np.random.default_rng(4), 40))
    records[1]["bbox"][2] = 0  # a zero width: warned as the full loader warns
    records[2] = {"bbox": records[2].pop("bbox"), **records[2]}  # bbox first: keys in any order
    path = write(tmp_path, "kp.json", records)
    parsed = fast._fast_keypoint_results(Path(path).read_bytes(), path, gt)
    assert parsed is not None  # the compiled reader took it
    dt = deteval.load_detections(path, gt)
    with monkeypatch.context() as patch:
        patch.setattr(fast, "_colparse", None)  # the full loader, on the same file
        reference = deteval.load_detections(path, gt)
    same_detections(dt, reference)
    assert dt.has_box.all()
    assert dt.box.tolist() == [r["bbox"] for r in records]
    assert "1 detections with a zero width" in dt.warnings[0]
    assert dt.warnings == reference.warnings
    protocol = deteval.get_protocol("coco-keypoints").replace(keypoint_sigmas=(0.05, 0.06, 0.07))
    metrics = deteval.evaluate(gt, dt, protocol=protocol).metrics
    assert json.dumps(metrics) == json.dumps(deteval.evaluate(gt, reference, protocol=protocol).metrics)


@needs_parser
@pytest.mark.parametrize(
    "change", ["negative width", "empty bbox", "three numbers", "string number", "only the first"]
)
def test_keypoint_results_with_boxes_the_parser_does_not_take_are_read_as_before(tmp_path, change):
    gt = deteval.load_ground_truth(ground_truth())
    records = with_boxes(keypoint_results(np.random.default_rng(5), 6))
    if change == "negative width":
        records[3]["bbox"][2] = -1.0
    elif change == "empty bbox":
        records[3]["bbox"] = []
    elif change == "three numbers":
        records[3]["bbox"] = records[3]["bbox"][:3]
    elif change == "string number":
        records[3]["bbox"][0] = "1"
    else:
        for r in records[1:]:
            del r["bbox"]
    path = write(tmp_path, "kp.json", records)
    assert fast._fast_keypoint_results(Path(path).read_bytes(), path, gt) is None
    outcomes = []
    for source in (path, records):
        try:
            dt = deteval.load_detections(source, gt)
        except InputError as caught:
            outcomes.append(str(caught).replace(path, "<detections>"))
        else:
            outcomes.append(dt)
    if isinstance(outcomes[0], str):
        assert outcomes[0] == outcomes[1]
    else:
        same_detections(*outcomes)


@needs_parser
@pytest.mark.parametrize("boxes", [False, True])
@pytest.mark.parametrize("chunk_size", [1, 97, 1000, 1 << 20])
def test_keypoint_results_streamed_in_parts_are_the_whole_files(tmp_path, boxes, chunk_size):
    gt = deteval.load_ground_truth(ground_truth())
    records = keypoint_results(np.random.default_rng(6), 50)
    if boxes:
        records = with_boxes(records)
    path = write(tmp_path, "kp.json", records)
    streamed = fast._stream_keypoint_results(path, gt, chunk_size=chunk_size)
    assert streamed is not None  # read in parts (one part when the chunk holds the whole file)
    whole = fast._fast_keypoint_results(Path(path).read_bytes(), path, gt)
    same_detections(streamed, whole)
    reference = deteval.load_detections(records, gt)
    named = tuple(w.replace("<detections>", path) for w in reference.warnings)
    same_detections(streamed, dataclasses.replace(reference, warnings=named))


@needs_parser
@pytest.mark.parametrize(
    "change", ["bbox from the middle on", "shorter lists from the middle on", "empty array"]
)
def test_keypoint_parts_that_disagree_are_left_to_the_full_loader(tmp_path, change):
    gt = deteval.load_ground_truth(ground_truth())
    records = keypoint_results(np.random.default_rng(7), 40)
    if change == "bbox from the middle on":
        with_boxes(records[20:])
    elif change == "shorter lists from the middle on":
        for r in records[20:]:
            r["keypoints"] = r["keypoints"][:6]
    else:
        records = []
    path = write(tmp_path, "kp.json", records)
    assert fast._stream_keypoint_results(path, gt, chunk_size=200) is None
    assert fast._fast_keypoint_results(Path(path).read_bytes(), path, gt) is None


def rle_ground_truth() -> dict:
    """:func:`ground_truth` with compressed RLE masks (one crowd, one string starting with a backslash)."""
    data = ground_truth()
    for k, ann in enumerate(data["annotations"]):
        del ann["keypoints"], ann["num_keypoints"]  # the compiled instances parser's keys only
        x, y, w, h = ann["bbox"]
        m = np.zeros((20, 30), np.uint8, order="F")
        m[y : y + h, x : x + w] = 1
        if k == 2:
            m[:] = 0
            m[4:10, 2:6] = 1  # 44 background pixels first: "\\" in the file
        ann["segmentation"] = {"size": [20, 30], "counts": mask_utils.encode(m)["counts"].decode()}
    data["annotations"][1]["iscrowd"] = 1
    return data


@needs_parser
def test_rle_ground_truth_file_is_read_as_flat_columns_with_the_full_loaders_masks(tmp_path):
    data = rle_ground_truth()
    assert data["annotations"][2]["segmentation"]["counts"].startswith("\\")
    path = write(tmp_path, "gt.json", data)
    gt = deteval.load_ground_truth(path)
    reference = deteval.load_ground_truth(json.loads(Path(path).read_text()))
    source, full_source = ground_truth_source(gt), ground_truth_source(reference)
    assert isinstance(source.values, RleSegmentations)  # no dict per annotation
    assert list(source.values) == list(full_source.values)
    fast_masks, full_masks = parse_masks(source), parse_masks(full_source)
    assert fast_masks.rle == full_masks.rle
    for name in ("kind", "bounds", "rle_size", "rle_offsets", "rle_area"):
        assert getattr(fast_masks, name).tobytes() == getattr(full_masks, name).tobytes(), name
    assert bytes(fast_masks.rle_blob) == bytes(full_masks.rle_blob)
    records = rle_results(np.random.default_rng(1), 30)
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    metrics = deteval.evaluate(gt, records, protocol=protocol).metrics
    assert json.dumps(metrics) == json.dumps(deteval.evaluate(reference, records, protocol=protocol).metrics)


@needs_parser
def test_rle_counts_opening_with_a_colon_are_read_by_the_compiled_parser(tmp_path, monkeypatch):
    data = rle_ground_truth()
    m = np.zeros((20, 30), np.uint8, order="F")
    m[10:16, 0:4] = 1  # 10 background pixels first: ":" (48 + 10) opens the string
    counts = mask_utils.encode(m)["counts"].decode()
    assert counts.startswith(":")
    data["annotations"][0]["segmentation"] = {"size": [20, 30], "counts": counts}
    data["images"][0]["file_name"] = ' :a": 1.jpg'  # a name a count of '":' would take for a key
    path = write(tmp_path, "gt.json", data)
    gt = deteval.load_ground_truth(path)
    assert isinstance(gt.segmentation, SpanSegmentations)  # the compiled instances parser read it
    source = ground_truth_source(gt)
    assert isinstance(source.values, RleSegmentations)  # and its masks as flat columns
    monkeypatch.setattr(ground_truth_module, "_fast_ground_truth", lambda raw, path, **k: None)
    full = deteval.load_ground_truth(path)  # the full loader, on the same file
    monkeypatch.undo()
    monkeypatch.setattr(fast, "_colparse", None)
    twin = deteval.load_ground_truth(path)  # the msgspec twin
    assert isinstance(twin.segmentation, RawSegmentations)
    monkeypatch.undo()
    records = rle_results(np.random.default_rng(4), 30)
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    metrics = json.dumps(deteval.evaluate(gt, records, protocol=protocol).metrics)
    for other in (full, twin):
        assert type(other.segmentation) is not type(gt.segmentation)
        assert other.image_name == gt.image_name
        assert other.box.tobytes() == gt.box.tobytes()
        other_source = ground_truth_source(other)
        assert list(source.values) == list(other_source.values)
        fast_masks, other_masks = parse_masks(source), parse_masks(other_source)
        assert fast_masks.rle == other_masks.rle
        for name in ("kind", "bounds", "rle_size", "rle_offsets", "rle_area"):
            assert getattr(fast_masks, name).tobytes() == getattr(other_masks, name).tobytes(), name
        assert bytes(fast_masks.rle_blob) == bytes(other_masks.rle_blob)
        assert json.dumps(deteval.evaluate(other, records, protocol=protocol).metrics) == metrics


@needs_parser
@pytest.mark.parametrize(
    "other",
    [
        [[2, 2, 12, 2, 12, 10]],  # a polygon
        {"size": [20, 30], "counts": [0, 600]},  # uncompressed counts
        {"counts": "0", "size": [20, 30], "extra": 1},  # another key
        {"size": [20, 30], "counts": "0\u00e9"},  # another escape (json.dumps writes \u00e9)
    ],
)
def test_rle_ground_truth_with_another_form_is_read_record_by_record(tmp_path, other):
    data = rle_ground_truth()
    data["annotations"][0]["segmentation"] = other
    gt = deteval.load_ground_truth(write(tmp_path, "gt.json", data))
    source = ground_truth_source(gt)
    assert isinstance(source.values, tuple)
    assert source.values[0] == other


@needs_parser
@pytest.mark.parametrize(("counts", "message"), [("0P", "ends inside a run"), ("52", "do not add up")])
def test_corrupt_rle_ground_truth_file_gets_the_full_loaders_message(tmp_path, counts, message):
    data = rle_ground_truth()
    data["annotations"][1]["segmentation"]["counts"] = counts
    path = write(tmp_path, "gt.json", data)
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    records = rle_results(np.random.default_rng(2), 5)
    errors = []
    for gt in (
        deteval.load_ground_truth(path),
        deteval.load_ground_truth(json.loads(Path(path).read_text())),
    ):
        with pytest.raises(InputError, match=message) as caught:
            deteval.evaluate(gt, records, protocol=protocol)
        errors.append(str(caught.value).replace(path, "<gt>").replace("<ground truth>", "<gt>"))
    assert errors[0] == errors[1]
    assert "id=2" in errors[0]
    assert isinstance(ground_truth_source(deteval.load_ground_truth(path)).values, RleSegmentations)


def polygon_ground_truth() -> dict:
    """:func:`ground_truth` as the compiled instances parser takes it (polygons, two parts in one)."""
    data = ground_truth()
    for ann in data["annotations"]:
        del ann["keypoints"], ann["num_keypoints"]
    data["annotations"][1]["segmentation"].append([20, 1, 25.5, 1, 25.5, 3.25])
    return data


@needs_parser
def test_polygon_ground_truth_file_is_read_as_flat_columns_with_the_full_loaders_masks(tmp_path):
    path = write(tmp_path, "gt.json", polygon_ground_truth())
    gt = deteval.load_ground_truth(path)
    reference = deteval.load_ground_truth(json.loads(Path(path).read_text()))
    source, full_source = ground_truth_source(gt), ground_truth_source(reference)
    assert isinstance(source.values, PolygonSegmentations)  # no list per annotation
    assert list(source.values) == list(full_source.values)
    fast_masks, full_masks = parse_masks(source), parse_masks(full_source)
    for name in ("kind", "part_start", "point_start", "points", "bounds"):
        assert getattr(fast_masks, name).tobytes() == getattr(full_masks, name).tobytes(), name
    records = rle_results(np.random.default_rng(3), 30)
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    metrics = deteval.evaluate(gt, records, protocol=protocol).metrics
    assert json.dumps(metrics) == json.dumps(deteval.evaluate(reference, records, protocol=protocol).metrics)


@needs_parser
@pytest.mark.parametrize(
    ("polygon", "message"),
    [([[1, 1, 5, 1, 5]], "odd number"), ([[1, 1, 5, 1]], "fewer than 3"), ([[1, 1, 1, 1, 1, 1]], "distinct")],
)
def test_bad_polygon_ground_truth_file_gets_the_full_loaders_message(tmp_path, polygon, message):
    data = polygon_ground_truth()
    data["annotations"][2]["segmentation"] = polygon
    path = write(tmp_path, "gt.json", data)
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    records = rle_results(np.random.default_rng(2), 5)
    errors = []
    for gt in (
        deteval.load_ground_truth(path),
        deteval.load_ground_truth(json.loads(Path(path).read_text())),
    ):
        with pytest.raises(InputError) as caught:
            deteval.evaluate(gt, records, protocol=protocol)
        errors.append(str(caught.value).replace(path, "<gt>").replace("<ground truth>", "<gt>"))
    assert errors[0] == errors[1]
    assert "id=3" in errors[0]
    assert message in errors[0]
    assert isinstance(ground_truth_source(deteval.load_ground_truth(path)).values, PolygonSegmentations)


@needs_parser
def test_rle_ground_truth_bytes_read_for_the_flat_columns_are_let_go_again(tmp_path):
    """The file's bytes read for the masks' columns are not kept beside the blob.

    (68 MB at 20,000 images.) An item read later for a message reads the file again, and a
    changed file is refused then, as at the first read.
    """
    data = rle_ground_truth()
    path = write(tmp_path, "gt.json", data)
    gt = deteval.load_ground_truth(path)
    segm = gt.segmentation
    assert isinstance(segm, SpanSegmentations)
    assert segm._raw is None
    assert isinstance(ground_truth_source(gt).values, RleSegmentations)
    assert segm._raw is None  # dropped again once the columns are made
    assert segm[2] == data["annotations"][2]["segmentation"]  # read again for an item
    segm._raw = None
    raw = Path(path).read_bytes()
    Path(path).write_bytes(raw + b" ")
    with pytest.raises(deteval.DetevalError, match="changed since the ground truth was loaded"):
        segm[0]


@needs_parser
def test_rle_rasters_share_the_masks_offsets_read_only(tmp_path):
    """An all-RLE collection's rasters are its checked masks' columns: no copy of the offsets."""
    from deteval.geometry.raster import RasterMasks

    gt = deteval.load_ground_truth(write(tmp_path, "gt.json", rle_ground_truth()))
    masks = parse_masks(ground_truth_source(gt))
    raster = RasterMasks.for_masks(masks)
    assert np.shares_memory(raster.start, masks.rle_offsets)
    assert np.shares_memory(raster.stop, masks.rle_offsets)
    assert raster.start.tolist() == masks.rle_offsets[:-1].tolist()
    assert raster.stop.tolist() == masks.rle_offsets[1:].tolist()
    assert not raster.start.flags.writeable
    assert not raster.stop.flags.writeable
    assert masks.rle_offsets.flags.writeable  # the masks' own column is untouched
    assert np.shares_memory(raster.box, masks.bounds)  # the boxes: the masks' xyxy bounds
    assert raster.box.tolist() == masks.bounds.tolist()
    assert not raster.box.flags.writeable
    assert masks.bounds.flags.writeable
