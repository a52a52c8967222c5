"""Loading with ``workers``: the same detections, warnings and errors on every thread count.

Results files are parsed on several threads (the compiled parsers' parts, ``deteval.io.coco.fast``).

``deteval._parallel.usable_cpus`` is raised so that ``workers=7`` means 7 threads on any machine.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval import _parallel
from deteval.errors import InputError
from deteval.io.coco import _common, fast

pytestmark = pytest.mark.skipif(fast._colparse is None, reason="the compiled parser is not built")

N_IMAGES = 40


@pytest.fixture
def many_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parallel, "usable_cpus", lambda: 8)


def _gt() -> dict:
    images = [{"id": i, "width": 300, "height": 200, "file_name": f"{i}.jpg"} for i in range(1, N_IMAGES + 1)]
    anns = [
        {
            "id": i,
            "image_id": 1 + i % N_IMAGES,
            "category_id": 1 + i % 3,
            "bbox": [10, 10, 50, 40],
            "area": 2000,
            "iscrowd": 0,
            "segmentation": [[10, 10, 60, 10, 60, 50, 10, 50]],
            "num_keypoints": 2,
            "keypoints": [20, 20, 2, 30, 30, 2, 0, 0, 0],
        }
        for i in range(1, 3 * N_IMAGES)
    ]
    cats = [{"id": c, "name": f"c{c}", "keypoints": ["a", "b", "c"], "skeleton": []} for c in (1, 2, 3)]
    return {"images": images, "annotations": anns, "categories": cats}


def _records(kind: str, n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r: dict = {
            "image_id": rng.randrange(1, N_IMAGES + 1),
            "category_id": rng.randrange(1, 4),
            "score": rng.choice([rng.random(), 1e-30 * rng.random(), 0.5, 1]),
        }
        box = [rng.uniform(0, 100), rng.uniform(0, 100), rng.uniform(1, 80), rng.uniform(1, 80)]
        if kind != "keypoints":
            r["bbox"] = box
        if kind == "keypoints":
            r["keypoints"] = [round(rng.uniform(0, 200), rng.randrange(0, 4)) for _ in range(6)] + [0, 0, 0]
        elif kind == "polygons":
            x, y = box[0], box[1]
            r["segmentation"] = [[x, y, x + 20, y, x + 20, y + 15, x, y + 15]]
        elif kind == "rle":
            r["segmentation"] = {"size": [200, 300], "counts": "PPYo1"}
        out.append(r)
    return out


def _write(path: Path, records: list[dict], seed: int) -> Path:
    """Records written with odd spacing (a newline, tabs or nothing between tokens)."""
    rng = random.Random(seed)
    parts = [
        json.dumps(r, separators=rng.choice([(",", ":"), (", ", ": "), (",\n\t", " :\t")])) for r in records
    ]
    path.write_text("[\n" + rng.choice([",", " ,\n", ",\r\n  "]).join(parts) + "\n]\n")
    return path


def _load(path: Path, gt: object, workers: object) -> object:
    try:
        dt = deteval.load_detections(str(path), gt, workers=workers)
    except InputError as exc:
        return str(exc)
    return dt


def _same(a: object, b: object) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    for field in ("image", "category", "box", "score", "order", "has_box", "keypoints"):
        x, y = getattr(a, field), getattr(b, field)
        if x is None or y is None:
            assert x is y, field
        else:
            assert x.dtype == y.dtype, field
            assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), field
    assert a.warnings == b.warnings  # type: ignore[attr-defined]
    sa, sb = a.segmentation, b.segmentation  # type: ignore[attr-defined]
    assert (sa is None) == (sb is None)
    if sa is not None:
        assert len(sa) == len(sb)
        assert all(json.dumps(x) == json.dumps(y) for x, y in zip(sa, sb))


KINDS = ("box", "keypoints", "polygons", "rle")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 3, 2000])
def test_workers_load_the_same_detections(tmp_path: Path, many_cpus: None, kind: str, n: int) -> None:
    gt = deteval.load_ground_truth(_gt())
    path = _write(tmp_path / "dt.json", _records(kind, n, n), n)
    one = _load(path, gt, 1)
    assert not isinstance(one, str), one
    for workers in (2, 3, 7, "auto"):
        _same(_load(path, gt, workers), one)


SECOND_HALF_ERRORS = {
    "unknown image": ("image_id", 123456),
    "string score": ("score", "high"),
    "negative size": ("bbox", [1, 2, -3, 4]),
    "unknown category": ("category_id", 99),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("problem", sorted(SECOND_HALF_ERRORS))
def test_error_in_a_later_part_names_the_same_record(
    tmp_path: Path, many_cpus: None, kind: str, problem: str
) -> None:
    """A bad record in the second half: the same message (file, record, field) on 1 and 7 threads."""
    gt = deteval.load_ground_truth(_gt())
    records = _records(kind, 3000, 5)
    key, value = SECOND_HALF_ERRORS[problem]
    if key == "bbox" and kind == "keypoints":
        key, value = "keypoints", [1, 2, 2, "x", 2, 2, 0, 0, 0]
    records[2100][key] = value
    records[2900][key] = value  # a second one, later: the first in file order is named
    path = _write(tmp_path / "dt.json", records, 1)
    one = _load(path, gt, 1)
    assert isinstance(one, str)
    assert "2100" in one, one
    for workers in (2, 7, "auto"):
        assert _load(path, gt, workers) == one


def test_evaluate_with_workers_gives_the_same_result(tmp_path: Path, many_cpus: None) -> None:
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(_gt()))
    dt_path = _write(tmp_path / "dt.json", _records("box", 3000, 2), 2)
    one = deteval.evaluate(str(gt_path), str(dt_path), "coco")
    two = deteval.evaluate(str(gt_path), str(dt_path), "coco", workers=2)
    assert json.dumps(one.metrics) == json.dumps(two.metrics)


def test_parse_threads_by_size(many_cpus: None) -> None:
    """``"auto"``: one thread per MiB of JSON, at most the usable CPUs; an integer as given."""
    per = _common.PARSE_BYTES_PER_THREAD
    assert fast.parse_threads("auto", per - 1) == 1
    assert fast.parse_threads("auto", 3 * per) == 3
    assert fast.parse_threads("auto", 100 * per) == 8
    assert fast.parse_threads(1, 100 * per) == 1
    assert fast.parse_threads(5, 10) == 5


def _same_values(a: object, b: object) -> None:
    """Every field of two frozen dataclasses equal: arrays bit for bit, the rest by ``repr``."""
    import dataclasses

    for field in dataclasses.fields(a):  # type: ignore[arg-type]
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, field.name
            assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), field.name
        elif field.name != "segmentation":
            assert repr(x) == repr(y), field.name
        else:
            assert [json.dumps(s) for s in x or ()] == [json.dumps(s) for s in y or ()]


@pytest.mark.parametrize("keypoints", [False, True])
def test_workers_load_the_same_ground_truth(tmp_path: Path, many_cpus: None, keypoints: bool) -> None:
    data = _gt()
    data["annotations"] = [dict(a, id=i + 1) for i, a in enumerate(data["annotations"] * 30)]
    if not keypoints:
        for a in data["annotations"]:
            del a["keypoints"], a["num_keypoints"]
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(data, indent=1))
    one = deteval.load_ground_truth(str(path))
    for workers in (2, 7, "auto"):
        _same_values(deteval.load_ground_truth(str(path), workers=workers), one)


@pytest.mark.parametrize(
    "problem", [("bbox", [1, 2, -3, 4]), ("category_id", 99), ("area", "big"), ("iscrowd", 2.5)]
)
def test_ground_truth_error_in_a_later_part_names_the_same_annotation(
    tmp_path: Path, many_cpus: None, problem: tuple
) -> None:
    data = _gt()
    data["annotations"] = [dict(a, id=i + 1) for i, a in enumerate(data["annotations"] * 30)]
    key, value = problem
    data["annotations"][3000][key] = value
    data["annotations"][3400][key] = value
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(data))

    def load(workers: object) -> str:
        with pytest.raises(InputError) as caught:
            deteval.load_ground_truth(str(path), workers=workers)
        return str(caught.value)

    one = load(1)
    assert "3001" in one, one
    for workers in (2, 7, "auto"):
        assert load(workers) == one


@pytest.mark.parametrize(
    ("flag", "expected"), [([], "auto"), (["--workers", "2"], 2), (["--workers", "1"], 1)]
)
def test_the_cli_passes_its_workers_to_both_parsers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: list, expected: object
) -> None:
    """``deteval evaluate`` parses the ground truth and the results with its ``--workers``."""
    from deteval.cli import main

    asked: list = []
    real = _common.kernel_threads
    monkeypatch.setattr(_common, "kernel_threads", lambda w, *a: asked.append(w) or real(w, *a))
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(_gt()))
    dt_path = _write(tmp_path / "dt.json", _records("box", 50, 3), 3)
    assert main(["evaluate", "--gt", str(gt_path), "--dt", str(dt_path), "-q", *flag]) == 0
    assert asked == [expected, expected]  # the instances file, then the results file
