"""Slices: each slice's numbers equal evaluating that subset's own files; attributes and errors."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

import deteval
from deteval.api import evaluate_slices
from deteval.errors import ConfigError, InputError
from deteval.io.image_attributes import read_image_attributes
from deteval.protocol import get_protocol
from deteval.slices import image_values, parse_slice
from tests.crosscheck.generate import generate

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")


def _with_attributes(seed):
    gt, dt = generate(seed=seed, max_images=30, max_classes=6)
    rng = random.Random(seed)
    for image in gt["images"]:
        image["site"] = rng.choice(["north", "south", "east"])
        image["night"] = rng.random() < 0.4
        if rng.random() < 0.5:  # sizes across the image_size buckets
            image["width"], image["height"] = rng.choice([(320, 240), (1280, 720), (4000, 3000)])
    return gt, dt


def _subset_files(gt, dt, keep_ids):
    sub_gt = dict(gt)
    sub_gt["images"] = [i for i in gt["images"] if i["id"] in keep_ids]
    sub_gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] in keep_ids]
    return sub_gt, [d for d in dt if d["image_id"] in keep_ids]


def _same(a, b):
    """Equal dicts / lists / numbers, NaN equal to NaN (exact, no tolerance)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@pytest.mark.parametrize("seed", [1, 4, 7, 12])
@pytest.mark.parametrize("protocol", ["coco", "voc2010", "per-class-cap", "ultralytics", "coco-pycocotools"])
def test_each_slice_equals_evaluating_its_subset_files(seed, protocol):
    if protocol == "per-class-cap":  # a dataset-wide rule: the slice's own top detections per class
        protocol = get_protocol("coco").replace(name="per-class-cap", max_dets_per_class=4)
    gt, dt = _with_attributes(seed)
    slices = evaluate_slices(gt, dt, protocol, ["site", "night=true", "image_size", "has_crowd"])
    assert {s.key for s in slices} == {"site", "night", "image_size", "has_crowd"}
    ids = np.array([i["id"] for i in sorted(gt["images"], key=lambda i: i["id"])])
    for s in slices:
        keep = set(ids[s.is_image].tolist())
        sub_gt, sub_dt = _subset_files(gt, dt, keep)
        expected = deteval.evaluate(sub_gt, sub_dt, protocol)
        what = (seed, protocol, s.key, s.value)
        assert (s.n_images, s.n_gt, s.n_det) == (len(keep), len(sub_gt["annotations"]), len(sub_dt)), what
        assert _same(s.result.metrics, expected.metrics), what
        assert _same(s.result.per_class, expected.per_class), what
        assert _same(s.result.best_f1, expected.best_f1), what
        np.testing.assert_array_equal(s.result.precision, expected.precision)
        np.testing.assert_array_equal(s.result.recall, expected.recall)


def test_slices_partition_the_images_and_follow_the_rules():
    gt, dt = _with_attributes(3)
    gt["images"][0].pop("site")  # one image without a value: its own slice, last
    slices = evaluate_slices(gt, dt, "coco", ["site"])
    assert [s.value for s in slices] == ["east", "north", "south", None]
    assert sum(s.n_images for s in slices) == len(gt["images"])
    assert not np.logical_and.reduce([s.is_image for s in slices]).any()
    sizes = {i["id"]: i.get("width", 0) * i.get("height", 0) for i in gt["images"]}
    loaded = deteval.load_ground_truth(gt)
    values = image_values(loaded, "image_size")
    for image_id, value in zip(loaded.image_id.tolist(), values):
        pixels = sizes[image_id]
        expected = "small" if pixels < 307200 else "medium" if pixels < 2073600 else "large"
        assert value == expected
    crowd_images = {a["image_id"] for a in gt["annotations"] if a["iscrowd"]}
    assert image_values(loaded, "has_crowd") == [
        "true" if i in crowd_images else "false" for i in loaded.image_id.tolist()
    ]


def test_side_files_csv_and_json(tmp_path):
    gt, dt = _with_attributes(5)
    ids = [i["id"] for i in gt["images"]]
    csv_file = tmp_path / "attrs.csv"
    csv_file.write_text("image_id,camera\n" + "".join(f"{i},{'cam' + str(i % 2)}\n" for i in ids))
    by_name = {i["file_name"]: {"camera": f"cam{i['id'] % 2}"} for i in gt["images"]}
    json_file = tmp_path / "attrs.json"
    json_file.write_text(json.dumps(by_name))
    a = evaluate_slices(gt, dt, "coco", ["camera"], image_attributes_file=csv_file)
    b = evaluate_slices(gt, dt, "coco", ["camera"], image_attributes_file=json_file)
    assert [s.value for s in a] == [s.value for s in b] == ["cam0", "cam1"]
    for x, y in zip(a, b):
        assert _same(x.result.metrics, y.result.metrics)


def test_bad_slices_and_side_files_are_refused(tmp_path):
    gt, dt = _with_attributes(5)
    with pytest.raises(ConfigError, match=r"--slice weather: no image has attribute 'weather'"):
        evaluate_slices(gt, dt, "coco", ["weather"])
    with pytest.raises(ConfigError, match=r"--slice site=west: no image has this value; expected one of"):
        evaluate_slices(gt, dt, "coco", ["site=west"])
    with pytest.raises(ConfigError, match="expected KEY or KEY=VALUE"):
        parse_slice("=x")
    gt["images"][0]["site"] = ["a", "b"]
    with pytest.raises(InputError, match=r"attribute `site` is \['a', 'b'\]; expected a number"):
        evaluate_slices(gt, dt, "coco", ["site"])
    no_key = tmp_path / "a.csv"
    no_key.write_text("image,camera\n1,x\n")
    with pytest.raises(InputError, match=r"a.csv: header row: no `image_id` or `file_name` column"):
        read_image_attributes(str(no_key))
    twice = tmp_path / "b.csv"
    twice.write_text("image_id,camera\n1,x\n1,y\n")
    with pytest.raises(InputError, match=r"b.csv: line 3: image_id 1 is listed twice"):
        read_image_attributes(str(twice))
    bad_id = tmp_path / "c.csv"
    bad_id.write_text("image_id,camera\none,x\n")
    with pytest.raises(InputError, match=r"c.csv: line 2: `image_id` is not an integer"):
        read_image_attributes(str(bad_id))
    wrong = tmp_path / "d.json"
    wrong.write_text("[1, 2]")
    with pytest.raises(InputError, match=r"d.json: record #0: expected an object, found integer"):
        read_image_attributes(str(wrong))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lvis_slices_keep_their_images_federated_labels(seed):
    from tests.crosscheck.generate_lvis import generate_lvis

    gt, dt = generate_lvis(seed, n_images=12)
    for k, image in enumerate(gt["images"]):
        image["half"] = "first" if k < 6 else "second"
    for s in evaluate_slices(gt, dt, "lvis", ["half"]):
        ids = np.sort([i["id"] for i in gt["images"]])[s.is_image]
        sub_gt, sub_dt = _subset_files(gt, dt, set(ids.tolist()))
        expected = deteval.evaluate(sub_gt, sub_dt, "lvis")
        assert _same(s.result.metrics, expected.metrics), (seed, s.value)
        assert _same(s.result.per_class, expected.per_class), (seed, s.value)


def test_docs_outputs_are_what_the_cli_prints(capsys, monkeypatch):
    """docs/slices.md: each shown output is the end of what its command prints."""
    import re
    import shlex

    from deteval.cli import main
    from tests import ROOT

    monkeypatch.chdir(ROOT)
    text = (ROOT / "docs" / "slices.md").read_text(encoding="utf-8")
    pairs = re.findall(r"```bash\n(deteval [^\n]*)\n```\n\n```\n(.*?)```", text, flags=re.S)
    assert len(pairs) == 3
    for command, shown in pairs:
        assert main(shlex.split(command)[1:]) == 0
        printed = capsys.readouterr().out
        assert printed.rstrip("\n").endswith(shown.rstrip("\n")), command


def _cli(capsys, *argv):
    from deteval.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_has_slices_and_refuses_misuse(capsys, monkeypatch, tmp_path):
    from tests import ROOT

    monkeypatch.chdir(ROOT)
    base = ["evaluate", "--gt", "fixtures/coco/gt.json", "--dt", "fixtures/coco/dt.json", "-q"]
    code, out, _ = _cli(
        capsys, *base, "--format", "json", "--slice", "image_size", "--slice", "has_crowd=false"
    )
    assert code == 0
    entry = json.loads(out)["results"][0]
    assert [(s["key"], s["value"], s["images"]) for s in entry["slices"]] == [
        ("image_size", "medium", 5),
        ("has_crowd", "false", 5),
    ]
    assert entry["slices"][0]["metrics"] == entry["metrics"]  # every image is in the slice
    code, _, err = _cli(capsys, *base, "--slice", "weather")
    assert code == 3
    assert "--slice weather: no image has attribute 'weather'" in err
    code, _, err = _cli(capsys, *base, "--image-attributes", "fixtures/coco/image_attributes.csv")
    assert code == 3
    assert "--image-attributes: expected --slice KEY" in err
    code, _, err = _cli(capsys, *base, "--dt", "fixtures/coco/dt.json", "--slice", "image_size")
    assert code == 3
    assert "--slice: score one detector without --bootstrap and --scheduler; found 2 --dt" in err
    missing = tmp_path / "none.csv"
    code, _, err = _cli(capsys, *base, "--slice", "camera", "--image-attributes", str(missing))
    assert code == 3
    assert f"{missing}: file not found" in err


def test_cli_per_class_metrics_table(capsys, monkeypatch):
    from tests import ROOT

    monkeypatch.chdir(ROOT)
    code, out, _ = _cli(
        capsys,
        *["evaluate", "--gt", "fixtures/yolo", "--dt", "fixtures/yolo/predictions", "-q"],
        *["--protocol", "ultralytics", "--per-class-metrics"],
    )
    assert code == 0
    assert "ultralytics: per-class metrics" in out
    assert (
        "  P = 0.5833  R = 0.7500  (Ultralytics: mean over classes at the max mean F1, confidence 0.0000)"
        in out
    )


def test_yolo_and_voc_images_are_named_by_file_name_or_id(tmp_path, capsys, monkeypatch):
    from tests import ROOT

    monkeypatch.chdir(ROOT)
    side = tmp_path / "yolo.csv"
    side.write_text("file_name,light\na.png,day\nb.png,night\n")
    slices = evaluate_slices(
        "fixtures/yolo", "fixtures/yolo/predictions", "coco", ["light"], image_attributes_file=side
    )
    assert [(s.value, s.n_images) for s in slices] == [("day", 1), ("night", 1)]
    voc = tmp_path / "voc.json"
    voc.write_text(json.dumps({"000001": {"view": "front"}, "000002": {"view": "rear"}}))
    slices = evaluate_slices(
        "fixtures/voc", "fixtures/voc/results", "voc2007", ["view"], image_attributes_file=voc
    )
    assert [s.value for s in slices] == ["front", "rear", None]  # VOC ids are names: "000001"
    extra = tmp_path / "e.csv"
    extra.write_text("image_id,camera\n1,x,y\n")
    with pytest.raises(InputError, match=r"e.csv: line 2: more cells than the header's 2; expected 2"):
        read_image_attributes(str(extra))


def test_slice_values_are_terminal_safe_in_the_table():
    from deteval.report import format_slices_table

    gt, dt = _with_attributes(2)
    for image in gt["images"]:
        image["site"] = "a\x1b[2J\nfake row"
    result = deteval.evaluate(gt, dt, "voc2010")
    text = format_slices_table(result, evaluate_slices(gt, dt, "voc2010", ["site"]))
    assert "\x1b" not in text
    assert "\nfake row" not in text
