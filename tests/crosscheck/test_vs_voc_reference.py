"""deteval's VOC presets against the slow devkit / py-faster-rcnn twin, through real files.

Each generated dataset (``generate_voc.py``) is written as a VOC root with XML annotations and
per-class result files, evaluated by ``deteval.evaluate(root, results_folder, protocol)``, and
compared with ``tests/reference/slow_voc.py`` run on the generator's plain lists: per-class AP
identical (``==``; NaN where the class has no non-difficult object), ``num_gt`` = the devkit's
``npos``, ``num_det`` = lines of the class's result file, and ``mAP`` = the mean of the APs.

What the twin is compared with, for each preset (``PRESET_OPTIONS`` in the reference):

* ``voc2007`` / ``voc2007-continuous``: the devkit with the recall grid ``k / 10``
  (``eleven_point_grid: decimal``). The MATLAB devkit's own grid ``0:0.1:1`` holds
  ``0.30000000000000004``: see :func:`test_voc2007_recall_grid_of_the_matlab_devkit`;
* ``voc2010`` / ``voc2010-continuous``: the devkit (``VOCap.m``);
* ``voc2007-pyfrcnn`` / ``voc2010-pyfrcnn``: py-faster-rcnn's ``voc_eval.py``, stable ties.

Where the devkit divides 0 by 0 (every detection of a class so far on difficult objects) it
gets NaN and MATLAB's ``max`` skips it; only when *all* of a class's detections hit difficult
objects does the VOC2007 devkit end with AP = NaN. deteval gives 0 there, as the Python port
does; the twin is run with ``matlab_nan=False`` and :func:`test_all_detections_on_difficult`
pins the difference.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import deteval
from tests.crosscheck.generate_voc import VocDataset, generate_voc, write_voc
from tests.reference import slow_voc

# Generated data has classes without ground truth and degenerate boxes: the API's
# UndefinedMetricWarning / InputWarning are incidental here (tests/unit/test_api.py checks them).
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

N_DATASETS = 240
PRESETS = (
    "voc2007",
    "voc2010",
    "voc2007-pyfrcnn",
    "voc2010-pyfrcnn",
    "voc2007-continuous",
    "voc2010-continuous",
)
SEEDS = list(range(N_DATASETS))
SEED_GROUPS = [SEEDS[i::8] for i in range(8)]

_coverage: dict[str, int] = {}


def _count(name: str, n: int = 1) -> None:
    _coverage[name] = _coverage.get(name, 0) + n


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _check_dataset(tmp_path, seed: int) -> None:
    data = generate_voc(seed)
    root, results = write_voc(tmp_path / f"voc{seed}", data)
    for preset in PRESETS:
        result = deteval.evaluate(root, results, protocol=preset)
        expected = slow_voc.evaluate_dataset(
            data.image_ids, data.objects, data.detections, data.classes, preset
        )
        got = {c["name"]: c for c in result.per_class}
        assert list(got) == data.classes
        for cls in data.classes:
            want = expected[cls]
            assert _same(got[cls]["AP"], want["ap"]), (
                f"seed {seed}, {preset}, class {cls}: deteval AP {got[cls]['AP']!r}, reference {want['ap']!r}"
            )
            assert got[cls]["num_gt"] == want["npos"], (seed, preset, cls)
            assert got[cls]["num_det"] == want["num_det"], (seed, preset, cls)
        aps = [expected[c]["ap"] for c in data.classes if not math.isnan(expected[c]["ap"])]
        want_map = float(np.mean(aps)) if aps else float("nan")
        assert _same(result.metrics["mAP"], want_map), (seed, preset)
    _record_coverage(data)


def _record_coverage(data: VocDataset) -> None:
    """Count the nasty cases this dataset contains (checked by test_coverage)."""
    _count("datasets")
    for cls in data.classes:
        gts = [(img, o) for img in data.image_ids for o in data.objects[img] if o["name"] == cls]
        npos = sum(1 for _, o in gts if not o["difficult"])
        dets = data.detections.get(cls, [])
        scores = [s for _, s, _ in dets]
        _count("score ties", len(scores) - len(set(scores)))
        _count("duplicate detections", len(dets) - len(set(dets)))
        _count("difficult objects", sum(1 for _, o in gts if o["difficult"]))
        for convention, name in (
            ("pixel_inclusive", "overlap exactly 0.5 (+1 pixels)"),
            ("continuous", "overlap exactly 0.5 (continuous)"),
        ):
            for img, _, box in dets:
                overlaps = [
                    slow_voc.devkit_overlap(box, o["box"], convention)
                    for o in data.objects[img]
                    if o["name"] == cls
                ]
                if 0.5 in overlaps:
                    _count(name)
        if npos:
            res = slow_voc.devkit_eval_class(
                data.image_ids,
                data.objects,
                dets,
                cls,
                ap_method="11_point",
                grid="decimal",
                matlab_nan=False,
            )
            for r in (0.3, 0.6, 0.7):
                if r in res["rec"]:
                    _count(f"recall exactly {r}")
            aps = {
                g: slow_voc.devkit_eval_class(
                    data.image_ids, data.objects, dets, cls, ap_method="11_point", grid=g, matlab_nan=False
                )["ap"]
                for g in ("decimal", "numpy_arange", "matlab")
            }
            if aps["decimal"] != aps["numpy_arange"]:
                _count("11-point grids disagree (decimal vs numpy)")
            if aps["decimal"] != aps["matlab"]:
                _count("11-point grids disagree (decimal vs matlab)")
        else:
            _count("classes without positives")


@pytest.mark.parametrize("group", range(len(SEED_GROUPS)))
def test_presets_equal_reference_on_generated_datasets(tmp_path, group):
    for seed in SEED_GROUPS[group]:
        _check_dataset(tmp_path, seed)


def test_coverage():
    """The generated datasets do contain every nasty case (run after the datasets above)."""
    if _coverage.get("datasets", 0) < N_DATASETS:
        pytest.skip("run together with test_presets_equal_reference_on_generated_datasets")
    assert _coverage["datasets"] >= 200
    for name in (
        "score ties",
        "duplicate detections",
        "difficult objects",
        "overlap exactly 0.5 (+1 pixels)",
        "overlap exactly 0.5 (continuous)",
        "recall exactly 0.3",
        "recall exactly 0.6",
        "recall exactly 0.7",
        "11-point grids disagree (decimal vs numpy)",
        "11-point grids disagree (decimal vs matlab)",
        "classes without positives",
    ):
        assert _coverage.get(name, 0) >= 5, (name, _coverage)


# ------------------------------------------------------------------------------------------
# Named experiments
# ------------------------------------------------------------------------------------------


def _one_class(objects_per_image, dets, *, sizes=None) -> VocDataset:
    image_ids = list(objects_per_image)
    objects = {
        i: [{"name": "car", "box": b, "difficult": d} for b, d in objs]
        for i, objs in objects_per_image.items()
    }
    sizes = sizes or {i: (500, 500) for i in image_ids}
    return VocDataset(
        classes=["car"], image_ids=image_ids, sizes=sizes, objects=objects, detections={"car": dets}
    )


def _ap(tmp_path, data: VocDataset, preset: str) -> float:
    root, results = write_voc(tmp_path / preset, data)
    return deteval.evaluate(root, results, protocol=preset).per_class[0]["AP"]


def _recall_three_tenths() -> VocDataset:
    """10 positives; 3 TPs first (recall exactly 0.3 at precision 1), then FPs, then one TP."""
    gts = [((10 * k + 1, 1, 10 * k + 5, 5), False) for k in range(10)]
    dets = [("a", 0.9 - 0.01 * k, gts[k][0]) for k in range(3)]
    dets += [("a", 0.5, (300, 300, 310, 310))] * 3
    dets += [("a", 0.1, gts[3][0])]
    return _one_class({"a": gts}, dets)


def test_recall_exactly_three_tenths_under_each_grid(tmp_path):
    """Recall 0.3 reached at precision 1.

    The k/10 grid counts it, np.arange's 0.30000000000000004 does not.
    """
    data = _recall_three_tenths()
    for preset in ("voc2007", "voc2007-pyfrcnn"):
        want = slow_voc.evaluate_dataset(data.image_ids, data.objects, data.detections, ["car"], preset)[
            "car"
        ]["ap"]
        assert _ap(tmp_path, data, preset) == want
    # by hand: grid points 0, .1, .2, .3 -> precision 1; .4 -> 4/7; the rest 0
    # by hand: the 0.3 point is 0.30000000000000004 in both the MATLAB and the numpy grid, so a
    # recall of exactly 0.3 misses it (k / 10 would count it: (4 + 4/7) / 11)
    assert _ap(tmp_path, data, "voc2007") == pytest.approx((3 * 1.0 + 2 * 4 / 7) / 11, abs=1e-15)
    assert _ap(tmp_path, data, "voc2007-pyfrcnn") == pytest.approx((3 * 1.0 + 2 * 4 / 7) / 11, abs=1e-15)


def test_voc2007_recall_grid_of_the_matlab_devkit(tmp_path):
    data = _recall_three_tenths()
    devkit = slow_voc.devkit_eval_class(
        data.image_ids, data.objects, data.detections["car"], "car", ap_method="11_point", grid="matlab"
    )["ap"]
    assert devkit == pytest.approx((3 * 1.0 + 2 * 4 / 7) / 11, abs=1e-15)  # 0.3 point missed
    assert _ap(tmp_path, data, "voc2007") == devkit


def test_overlap_exactly_half_under_both_conventions(tmp_path):
    """Overlap 0.5 by construction: a TP under >=, a FP under > (pixel and continuous arithmetic)."""
    gt = (11, 21, 30, 40)  # 20 x 20 pixels, 19 x 19 continuous
    pixel_half = (11, 21, 30, 60)  # 20 x 40 pixels: 400 / 800
    continuous_half = (11, 21, 30, 59)  # 19 x 38 continuous: 361 / 722
    assert slow_voc.devkit_overlap(pixel_half, gt) == 0.5
    assert slow_voc.devkit_overlap(continuous_half, gt, "continuous") == 0.5
    for box, exact in (
        (pixel_half, ("voc2007", "voc2010")),
        (continuous_half, ("voc2007-continuous", "voc2010-continuous")),
    ):
        data = _one_class({"a": [(gt, False)]}, [("a", 0.9, box)])
        for preset in exact:
            assert _ap(tmp_path, data, preset) == pytest.approx(1.0, abs=1e-15)  # 11 x 1/11
        if box == pixel_half:
            for preset in ("voc2007-pyfrcnn", "voc2010-pyfrcnn"):
                assert _ap(tmp_path, data, preset) == 0.0


def test_taken_argmax_gt_makes_a_false_positive(tmp_path):
    """Two identical GTs: the second detection's argmax is the first (taken) GT -> FP."""
    gt = (1, 1, 50, 50)
    data = _one_class({"a": [(gt, False), (gt, False)]}, [("a", 0.9, gt), ("a", 0.8, gt)])
    assert _ap(tmp_path, data, "voc2010") == 0.5
    assert _ap(tmp_path, data, "voc2007") == pytest.approx(6 / 11, abs=1e-15)
    assert deteval.evaluate(*write_voc(tmp_path / "coco", data), protocol="coco50").per_class[0][
        "AP"
    ] == pytest.approx(1.0)  # COCO matching gives the second detection the free GT


def test_score_ties_keep_file_order(tmp_path):
    """Equal scores: the devkit's stable sort keeps file order (FP first here, then TP)."""
    gt = (1, 1, 50, 50)
    dets = [("a", 0.5, (200, 200, 250, 250)), ("a", 0.5, gt)]
    data = _one_class({"a": [(gt, False)]}, dets)
    assert _ap(tmp_path, data, "voc2010") == 0.5
    data = _one_class({"a": [(gt, False)]}, dets[::-1])
    assert _ap(tmp_path, data, "voc2010") == 1.0


def test_all_detections_on_difficult(tmp_path):
    """Every detection on a difficult object: MATLAB's VOC2007 devkit ends with NaN, deteval 0."""
    data = _one_class(
        {"a": [((1, 1, 50, 50), True), ((100, 100, 150, 150), False)]}, [("a", 0.9, (1, 1, 50, 50))]
    )
    devkit = slow_voc.devkit_eval_class(
        data.image_ids,
        data.objects,
        data.detections["car"],
        "car",
        ap_method="11_point",
        grid="matlab",
        matlab_nan=True,
    )
    assert math.isnan(devkit["ap"])
    assert _ap(tmp_path, data, "voc2007") == 0.0
    assert _ap(tmp_path, data, "voc2010") == 0.0
    assert _ap(tmp_path, data, "voc2007-pyfrcnn") == 0.0


def test_class_without_positives_is_undefined(tmp_path):
    """Only difficult objects: AP undefined (NaN, left out of mAP); num_gt 0."""
    data = _one_class({"a": [((1, 1, 50, 50), True)]}, [("a", 0.9, (1, 1, 50, 50))])
    root, results = write_voc(tmp_path, data)
    result = deteval.evaluate(root, results, protocol="voc2010")
    assert math.isnan(result.per_class[0]["AP"])
    assert result.per_class[0]["num_gt"] == 0
    assert math.isnan(result.metrics["mAP"])
