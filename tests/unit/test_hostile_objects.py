"""Every compiled entry point driven with hostile objects: no crash, and the twin's answer.

Each compiled module of deteval (``_speedups``) must never be less safe than its numpy/Python
twin. Python code can run inside a C function wherever it compares, hashes, converts or looks
up an object the caller gave: a ``str`` subclass key whose ``__eq__`` empties the list being read,
``__index__`` / ``__float__`` / ``__bool__`` / ``__fspath__`` that mutate or raise, lists that
change size. Each case below runs in a child interpreter, so a segmentation fault fails that test
instead of killing pytest, and checks that the compiled function either declines (returns None,
the caller then runs the twin), raises a clean Python exception, or gives exactly the twin's
result.

The entry points are listed from the modules themselves (``dir(module)``): a new entry point
without a hostile case here fails :func:`test_every_entry_point_has_a_hostile_case`.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval import _speedups
from tests.support.kernels import REQUIRE

MODULES = tuple(sorted(_speedups.ABI))

_REPO = Path(deteval.__file__).resolve().parent.parent


def _module(name: str):  # noqa: ANN202 - the compiled module, or a skip
    try:
        return importlib.import_module(name)
    except ImportError:
        if REQUIRE:
            raise
        pytest.skip(f"{name} is not built (pip install . with a C compiler)")


# ---- the cases: each runs in a child interpreter (see run_case) --------------------------------


def _records_cleared_by_key_eq(make_record: Callable[[object], dict], n: int, *, keep: bool) -> list:
    """``n`` records; the first has a str-subclass key whose ``__eq__`` empties the list.

    With ``keep`` the records stay alive and only the list's item array goes (a reader that kept
    the old length reads a NULL array: a crash every time); without, the records are freed too
    (a reader that kept borrowed items reads freed memory: AddressSanitizer names it).
    """
    records: list = []
    kept: list = []

    class ClearingKey(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            if keep:
                kept.extend(records)
            records.clear()
            return str.__eq__(self, other)

    records.extend(make_record(ClearingKey if i == 0 else str) for i in range(n))
    return records


def _box_record(key: Callable[[str], object]) -> dict:
    return {"image_id": 1, "category_id": 2, key("bbox"): [1.0, 2.0, 3.0, 4.0], "score": 0.5}


def _annotation_record(key: Callable[[str], object]) -> dict:
    return {
        "id": 1,
        "image_id": 1,
        "category_id": 2,
        key("bbox"): [1.0, 2.0, 3.0, 4.0],
        "area": 12.0,
        "iscrowd": 0,
    }


def case_colparse_box_records() -> None:
    from deteval.io import _colparse

    for keep in (True, False):
        records = _records_cleared_by_key_eq(_box_record, 64, keep=keep)
        n = len(records)
        cols = [np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((n, 4)), np.zeros(n)]
        assert _colparse.box_records(records, *cols) is None


def case_colparse_annotation_records() -> None:
    from deteval.io import _colparse

    for keep in (False, True):
        records = _records_cleared_by_key_eq(_annotation_record, 64, keep=keep)
        n = len(records)
        cols = [np.zeros(n, np.int64) for _ in range(3)] + [np.zeros((n, 4)), np.zeros(n)]
        cols += [np.zeros(n, np.int64) for _ in range(3)]
        assert _colparse.annotation_records(records, *cols) is None


# ---- every entry point: the arguments deteval itself passes, then hostile variants of them -----


class HostileError(Exception):
    """Raised by a hostile ``__index__`` / ``__bool__`` / ``__float__``: must reach the caller."""


def record_calls() -> dict[tuple[str, str], tuple]:
    """The first arguments deteval passes to each compiled entry point, on the fixtures.

    Every function of every compiled module is wrapped by a recorder (module attributes are
    looked up at call time), then loading, evaluation, analysis and the bootstrap run on the
    small fixtures. The arguments are copied before the call (outputs are written into).
    """
    calls: dict[tuple[str, str], tuple] = {}
    originals = []

    def recorder(key: tuple[str, str], function: Callable) -> Callable:
        def call(*args: object) -> object:
            calls.setdefault(key, tuple(_copy(a) for a in args))
            return function(*args)

        return call

    for name in MODULES:
        module = importlib.import_module(name)
        for f in _entry_points(module):
            originals.append((module, f, getattr(module, f)))
            setattr(module, f, recorder((name, f), getattr(module, f)))
    try:
        _workload()
    finally:
        for module, f, function in originals:
            setattr(module, f, function)
    return calls


def _workload() -> None:
    import json
    import warnings

    import deteval
    from deteval.diagnose import analyze
    from deteval.io.coco import fast

    fixtures = _REPO / "fixtures"
    warnings.simplefilter("ignore")
    gt = deteval.load_ground_truth(str(fixtures / "coco/gt.json"))
    dt = deteval.load_detections(str(fixtures / "coco/dt.json"), gt)
    fast._stream_box_results(str(fixtures / "coco/dt.json"), gt, chunk_size=64)
    deteval.evaluate(gt, dt, "voc2010")
    analyze(gt, dt, "coco")
    deteval.bootstrap(gt, deteval.evaluate(gt, dt, "coco"), n=3)
    records = json.loads((fixtures / "coco/dt.json").read_text())
    deteval.evaluate(json.loads((fixtures / "coco/gt.json").read_text()), records, "coco")
    segm = deteval.load_ground_truth(str(fixtures / "segm/gt.json"))
    deteval.load_detections(str(fixtures / "segm/dt.json"), segm)
    deteval.evaluate(str(fixtures / "yolo"), str(fixtures / "yolo/predictions"), "voc2010")
    deteval.evaluate(
        deteval.load_ground_truth(str(fixtures / "voc")), str(fixtures / "voc/results"), "voc2010"
    )
    raster = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
    deteval.evaluate(segm, deteval.load_detections(str(fixtures / "segm/dt.json"), segm), raster)
    _rle_and_keypoint_workload(fixtures)
    fast._compiled_voc_rows((fixtures / "voc/results/comp4_det_test_car.txt").read_bytes())
    fast._compiled_yolo_rows((fixtures / "yolo/predictions/a.txt").read_bytes())


def _rle_and_keypoint_workload(fixtures: Path) -> None:
    """Compressed-RLE and keypoint results files (read by the C parser), evaluated."""
    import json
    import tempfile

    from pycocotools import mask as mask_utils

    import deteval

    segm = json.loads((fixtures / "segm/gt.json").read_text())
    size = {im["id"]: (im["height"], im["width"]) for im in segm["images"]}
    records = json.loads((fixtures / "segm/dt.json").read_text())
    for r in records:
        h, w = size[r["image_id"]]
        rle = mask_utils.merge(mask_utils.frPyObjects(r["segmentation"], h, w))
        r["segmentation"] = {"size": [h, w], "counts": rle["counts"].decode()}
        r.setdefault("bbox", [0, 0, 1, 1])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rle.json"
        path.write_text(json.dumps(records))
        gt = deteval.load_ground_truth(segm)
        raster = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
        deteval.evaluate(gt, deteval.load_detections(str(path), gt), raster)  # streamed in parts
        from deteval.io.coco import fast

        assert fast._compiled_rle_columns(path.read_bytes()) is not None  # the bytes-in-memory parser
        for a in segm["annotations"]:  # the ground truth as compressed RLE, from a file
            h, w = size[a["image_id"]]
            made = mask_utils.frPyObjects(a["segmentation"], h, w)  # a crowd RLE: one dict
            rle = mask_utils.merge(made) if isinstance(made, list) else made
            a["segmentation"] = {"size": [h, w], "counts": rle["counts"].decode()}
        gt_path = Path(folder) / "rle_gt.json"
        gt_path.write_text(json.dumps(segm))
        rle_gt = deteval.load_ground_truth(str(gt_path))
        deteval.evaluate(rle_gt, deteval.load_detections(str(path), rle_gt), raster)
        kp_gt = deteval.load_ground_truth(str(fixtures / "keypoints/gt.json"))
        kp_records = json.loads((fixtures / "keypoints/dt.json").read_text())
        plain = [{k: r[k] for k in ("image_id", "category_id", "keypoints", "score")} for r in kp_records]
        path = Path(folder) / "kp.json"
        path.write_text(json.dumps(plain))
        three = deteval.get_protocol("coco-keypoints").replace(keypoint_sigmas=(0.1, 0.1, 0.1))
        deteval.evaluate(kp_gt, deteval.load_detections(str(path), kp_gt), three)


def _entry_points(module: object) -> list[str]:
    return sorted(f for f in dir(module) if not f.startswith("_") and callable(getattr(module, f)))


def _copy(value: object) -> object:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, bytearray):
        return bytearray(value)
    if isinstance(value, list):
        return list(value)
    return value


def _outcome(function: Callable, args: tuple) -> tuple:
    """(returned value or exception type, the array arguments' bytes after the call)."""
    try:
        value: object = function(*args)
    except HostileError:
        value = HostileError
    except (ValueError, TypeError, OverflowError, BufferError, MemoryError) as error:
        value = type(error)
    if isinstance(value, tuple):
        value = tuple(bytes(v) if isinstance(v, bytearray) else v for v in value)
    elif isinstance(value, bytearray):
        value = bytes(value)
    after = tuple(a.tobytes() if isinstance(a, np.ndarray) else None for a in args)
    return value, after


class _Int(int):
    pass


class _Float(float):
    pass


class _Index:
    """An object with only ``__index__`` (and ``__float__``): what PyNumber_Index calls."""

    def __init__(self, value: int, effect: Callable[[], None] | None = None):
        self.value, self.effect = value, effect

    def __index__(self) -> int:
        if self.effect is not None:
            self.effect()
        return self.value

    def __float__(self) -> float:
        if self.effect is not None:
            self.effect()
        return float(self.value)

    def __bool__(self) -> bool:
        if self.effect is not None:
            self.effect()
        return bool(self.value)


def _raise() -> None:
    raise HostileError("from a hostile __index__/__bool__/__float__")


def _scalar_variants(value: object, args: list) -> list[tuple[str, object, bool]]:
    """(name, hostile stand-in, whether the result must equal the plain call's) for one scalar."""

    def shrink() -> None:  # empties every argument it safely can (an exported buffer refuses)
        for a in args:
            if isinstance(a, np.ndarray):
                try:
                    a.resize(0)  # refcheck=False would be the caller freeing memory under C code
                except (ValueError, BufferError):
                    pass
            elif isinstance(a, bytearray):
                try:
                    a.clear()
                except BufferError:
                    pass
            elif isinstance(a, list):
                a.clear()

    variants: list[tuple[str, object, bool]] = [
        ("raising", _Index(int(value), _raise), False),  # type: ignore[call-overload]
        ("shrinking", _Index(int(value), shrink), False),  # type: ignore[call-overload]
    ]
    if isinstance(value, bool):
        variants += [("index-object", _Index(int(value)), True)]
    elif isinstance(value, int):
        variants += [("int-subclass", _Int(value), True), ("index-object", _Index(value), True)]
        variants += [(f"huge {v}", v, False) for v in (2**62, -(2**62), 2**31 + 1, -1, 0, 2**63 - 1)]
    elif isinstance(value, float):
        variants += [("float-subclass", _Float(value), True), ("float-object", _Index(int(value)), False)]
        variants += [(f"special {v}", v, False) for v in (float("nan"), float("inf"), -0.0, 5e-324)]
    return variants


def _drive(module_name: str, name: str, plain: tuple) -> list[str]:
    """Every hostile variant of ``plain`` against the entry point; the problems found."""
    function = getattr(importlib.import_module(module_name), name)
    problems = []
    want = _outcome(function, tuple(_copy(a) for a in plain))
    assert want[0] not in (ValueError, TypeError), f"{name}: the recorded call itself fails: {want[0]}"
    for i, value in enumerate(plain):
        if type(value) not in (int, bool, float):
            continue
        args = [_copy(a) for a in plain]
        for label, stand_in, same in _scalar_variants(value, args):
            args = [_copy(a) for a in plain]
            if label == "shrinking":  # bytes as bytearrays, which it empties unless exported
                args = [bytearray(a) if isinstance(a, bytes) else a for a in args]
                stand_in = _scalar_variants(value, args)[1][1]
            args[i] = stand_in
            got = _outcome(function, tuple(args))
            if label == "raising" and got[0] not in (HostileError, TypeError, ValueError):
                problems.append(f"{name} arg {i} {label}: {got[0]!r}, expected the HostileError")
            if same and got != want:
                problems.append(f"{name} arg {i} {label}: a result other than the plain value's")
            if label == "shrinking":  # the same as the plain value on the arguments as they now are
                args[i] = value
                again = _outcome(function, tuple(_copy(a) for a in args))
                if got[0] != again[0]:
                    problems.append(
                        f"{name} arg {i} shrinking: {got[0]!r}, on the shrunk arguments {again[0]!r}"
                    )
    arrays = [i for i, a in enumerate(plain) if isinstance(a, (np.ndarray, bytearray))]
    for i in arrays:  # an argument passed again in another's place: outputs alias inputs
        for j in arrays:
            if i != j:
                args = [_copy(a) for a in plain]
                args[j] = args[i]
                _outcome(function, tuple(args))  # no crash (AddressSanitizer: no bad access)
                view = args[i].view(np.uint8)[1:] if isinstance(args[i], np.ndarray) else None
                if view is not None and view.size and isinstance(plain[j], np.ndarray):
                    args[j] = view.view(np.uint8)  # an offset view of the same memory
                    _outcome(function, tuple(args))
    return problems


def case_every_entry_point() -> None:
    """Every recorded entry point under every hostile variant; prints the problems as JSON."""
    import json

    calls = record_calls()
    problems = []
    for (module_name, name), plain in sorted(calls.items()):
        problems += _drive(module_name, name, plain)
    print(json.dumps({"called": sorted(f"{m}.{f}" for m, f in calls), "problems": problems}))


def _path_clearing_list(paths: list[str]) -> list:
    """``paths`` whose first item is an os.PathLike whose ``__fspath__`` empties the list."""
    items: list = []
    kept: list = []

    class ClearingPath:
        def __fspath__(self) -> str:
            kept.extend(items)
            items.clear()
            return paths[0]

    items.extend([ClearingPath(), *paths[1:]])
    return items


def case_colparse_yolo_files() -> None:
    from deteval.io import _colparse

    folder = _REPO / "fixtures/yolo/predictions"
    paths = sorted(str(p) for p in folder.iterdir()) * 40
    n = len(paths)
    sizes = (np.full(n, 128.0), np.full(n, 64.0))
    want = _colparse.yolo_files(paths, 1 << 20, *sizes, 0)
    assert want is not None
    # the rows (not the files' stat fields: reading a file may change its access time)
    subclass_paths = _colparse.yolo_files([type("P", (str,), {})(p) for p in paths], 1 << 20, *sizes, 0)
    assert subclass_paths[:5] == want[:5]
    got = _colparse.yolo_files(_path_clearing_list(paths), 1 << 20, *sizes, 0)
    assert got[:5] == want[:5]  # the paths as they were when the call began


def case_colparse_records_subclass_values() -> None:
    from deteval.io import _colparse

    class Key(str):
        pass

    record = {"image_id": 1, "category_id": 2, "bbox": [1.0, 2.0, 3.0, 4.0], "score": 0.5}
    cols = [np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros((1, 4)), np.zeros(1)]
    assert _colparse.box_records([record], *cols) == 1
    for bad in (
        {**record, "image_id": _Int(1)},
        {**record, "score": _Float(0.5)},
        {**record, "bbox": [1.0, 2.0, _Float(3.0), 4.0]},
        {Key(k) if k == "score" else k: v for k, v in record.items()},
    ):
        assert _colparse.box_records([bad], *cols) is None


CASES: dict[tuple[str, str], Callable[[], None]] = {
    ("deteval.io._colparse", "box_records"): case_colparse_box_records,
    ("deteval.io._colparse", "annotation_records"): case_colparse_annotation_records,
    ("deteval.io._colparse", "yolo_files"): case_colparse_yolo_files,
    ("deteval.io._colparse", "box_records values"): case_colparse_records_subclass_values,
}


def run_case(case: Callable[[], None]) -> str:
    """Run ``case`` in a child interpreter; fail with its output unless it exits cleanly."""
    code = f"import tests.unit.test_hostile_objects as t; t.{case.__name__}(); print('ok')"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=_REPO, env=env, capture_output=True, text=True, timeout=600
    )
    report = f"{case.__name__} exited with {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    assert done.returncode == 0, report
    assert done.stdout.endswith("ok\n"), report
    return done.stdout


@pytest.mark.parametrize("entry", sorted(CASES), ids=lambda e: f"{e[0]}.{e[1]}")
def test_hostile_objects(entry: tuple[str, str]) -> None:
    _module(entry[0])
    run_case(CASES[entry])


@pytest.fixture(scope="module")
def driven() -> dict:
    """case_every_entry_point's report: the entry points it drove and the problems it found."""
    import json

    for name in MODULES:
        _module(name)
    return json.loads(run_case(case_every_entry_point).splitlines()[-2])


def test_every_entry_point_survives_hostile_arguments(driven: dict) -> None:
    assert driven["problems"] == []


@pytest.mark.parametrize("name", MODULES)
def test_every_entry_point_has_a_hostile_case(name: str, driven: dict) -> None:
    """A new entry point must be reached by the workload of :func:`record_calls` (and so driven)."""
    entry_points = {f"{name}.{f}" for f in _entry_points(_module(name))}
    assert entry_points, name
    assert entry_points <= set(driven["called"]), sorted(entry_points - set(driven["called"]))
