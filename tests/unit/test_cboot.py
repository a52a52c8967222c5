"""The compiled bootstrap kernel (``deteval._cboot``) against its numpy twin, bit for bit.

Every comparison scores the same resamples twice, once with the kernel and once with it switched
off (``twins_only``: the numpy code of ``deteval.stats.weighted``), and compares the
float64 outputs as int64 bit patterns: equal means the same bits, NaNs and signed zeros included.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval import _speedups
from deteval.evaluate import match
from deteval.openimages import label_rules_of
from deteval.protocol import PRESETS, Protocol, apply_overrides
from deteval.stats import bootstrap_weights, resample_metrics
from deteval.stats.resample import _check_supported
from tests.crosscheck.generate import generate
from tests.support.kernels import needs_kernel as kernel_built
from tests.support.kernels import twins_only

ROOT = Path(__file__).resolve().parents[2]

needs_kernel = kernel_built("deteval._cboot")
CBOOT = _speedups.load("deteval._cboot")


def _supported() -> list:
    names = []
    for name, p in PRESETS.items():
        if p.iou_type not in ("bbox", "segm"):  # the nasty data are boxes: coco-boundary scores masks only
            continue
        if label_rules_of(p.hierarchy_expansion, p.image_level_labels):
            continue  # openimages-challenge: the bootstrap refuses it (it resamples the loaded, unexpanded GT)
        try:
            _check_supported(p)
        except deteval.errors.ConfigError:
            continue
        names.append(name)
    return names


SUPPORTED = _supported()


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.int64)


def _twins(table, gt, p: Protocol, weights: np.ndarray, monkeypatch, **kwargs) -> None:
    """resample_metrics with the kernel and with the numpy twin: identical bits."""
    compiled = resample_metrics(table, gt, p, weights, **kwargs)
    with monkeypatch.context() as m:
        twins_only(m, "deteval._cboot")
        twin = resample_metrics(table, gt, p, weights, **kwargs)
    assert compiled.metric_names == twin.metric_names
    np.testing.assert_array_equal(_bits(compiled.metrics), _bits(twin.metrics))
    np.testing.assert_array_equal(_bits(compiled.per_class_ap), _bits(twin.per_class_ap))


def _bench_set(tmp_path_factory, n_images: int) -> tuple:
    """scripts/bench.py's COCO-like set at ``n_images`` images (80 classes, crowds, ties of scores)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    files = bench.ensure_dataset(tmp_path_factory.mktemp("bench"), n_images, 0, lambda *a: None)
    gt = deteval.load_ground_truth(str(files.gt))
    return gt, deteval.load_detections(str(files.dt("bbox")), gt)


@pytest.fixture(scope="module")
def coco_like(tmp_path_factory):
    """scripts/bench.py's COCO-like set at 5,000 images (its generation is most of the time)."""
    return _bench_set(tmp_path_factory, 5000)


@pytest.fixture(scope="module")
def coco_like_500(tmp_path_factory):
    """The same generator at 500 images: the fast tier's case of the 5k test."""
    return _bench_set(tmp_path_factory, 500)


def _coco_like_twins(data, protocol, monkeypatch) -> None:
    gt, dt = data
    p = deteval.get_protocol(protocol)
    table = match(gt, dt, p)
    for seed in (0, 1, 2):
        w = bootstrap_weights(gt.n_images, n=3, seed=seed)
        if seed == 0:
            w = np.vstack([np.ones(gt.n_images, np.int64), w])
        _twins(table, gt, p, w, monkeypatch)


@needs_kernel
@pytest.mark.parametrize("protocol", ["coco", "voc2007", "voc2010"])
def test_coco_like_500(coco_like_500, protocol, monkeypatch):
    _coco_like_twins(coco_like_500, protocol, monkeypatch)


@pytest.mark.slow  # 5,000 images take ~30 s to generate: test_coco_like_500 is its fast-tier case
@needs_kernel
@pytest.mark.parametrize("protocol", ["coco", "voc2007", "voc2010"])
def test_coco_like_5k(coco_like, protocol, monkeypatch):
    _coco_like_twins(coco_like, protocol, monkeypatch)


def _nasty(seed: int) -> tuple:
    """Ties within and across images, crowds, empty images, a class without ground truth."""
    rng = np.random.default_rng(seed)
    n_img, n_cls = 12, 4
    images = [{"id": i, "width": 100, "height": 100} for i in range(1, n_img + 1)]
    cats = [{"id": c, "name": f"c{c}"} for c in range(1, n_cls + 1)]
    anns, dts = [], []
    for i in range(1, n_img - 1):  # the last two images: no ground truth
        for _ in range(rng.integers(0, 4)):
            x, y = rng.integers(0, 60, 2)
            s = int(rng.choice([8, 30, 60]))
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": i,
                    "category_id": int(rng.integers(1, n_cls)),  # class n_cls: detections only
                    "bbox": [int(x), int(y), s, s],
                    "area": s * s,
                    "iscrowd": int(rng.random() < 0.15),
                }
            )
    scores = [0.3, 0.5, 0.5, 0.9]  # few values: ties everywhere
    for i in range(1, n_img + 1):
        for a in [a for a in anns if a["image_id"] == i]:
            for _ in range(rng.integers(0, 3)):
                bx = [v + int(rng.integers(-3, 4)) for v in a["bbox"][:2]] + a["bbox"][2:]
                dts.append({"image_id": i, "category_id": a["category_id"], "bbox": bx, "score": 0.5})
        for _ in range(rng.integers(0, 4)):
            x, y = rng.integers(0, 80, 2)
            dts.append(
                {
                    "image_id": i,
                    "category_id": int(rng.integers(1, n_cls + 1)),
                    "bbox": [int(x), int(y), 10, 10],
                    "score": float(rng.choice(scores)),
                }
            )
    gt = deteval.load_ground_truth({"images": images, "categories": cats, "annotations": anns})
    return gt, deteval.load_detections(dts, gt)


def _nasty_weights(gt, seed: int) -> np.ndarray:
    n = gt.n_images
    w = [np.ones(n, np.int64), np.zeros(n, np.int64), bootstrap_weights(n, n=4, seed=seed)]
    only_empty = np.zeros(n, np.int64)
    only_empty[-2:] = 3  # images without ground truth only: every class undefined
    one_image = np.zeros(n, np.int64)
    one_image[0] = n  # one image drawn n times: all-zero weights for most classes, many tie copies
    heavy = np.random.default_rng(seed).integers(0, 6, n)  # copies far beyond a multinomial's
    return np.vstack([*w[:2], w[2], only_empty, one_image, heavy]).astype(np.int64)


@needs_kernel
@pytest.mark.parametrize("protocol", SUPPORTED)
@pytest.mark.parametrize("seed", range(3))
def test_nasty_data_every_supported_preset(protocol, seed, monkeypatch):
    p = deteval.get_protocol(protocol)
    gt, dt = _nasty(seed)
    table = match(gt, dt, p)
    _twins(table, gt, p, _nasty_weights(gt, seed), monkeypatch)


@needs_kernel
@pytest.mark.parametrize("protocol", ["coco", "voc2007", "voc2010"])
@pytest.mark.parametrize("seed", range(4))
def test_generated_data(protocol, seed, monkeypatch):
    gt_dict, dt_list = generate(seed, max_images=25, max_classes=5)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    p = deteval.get_protocol(protocol)
    w = np.vstack([np.ones(gt.n_images, np.int64), bootstrap_weights(gt.n_images, n=6, seed=seed)])
    _twins(match(gt, dt, p), gt, p, w, monkeypatch)
    _twins(match(gt, dt, p), gt, p, w, monkeypatch, chunk_size=2)


@needs_kernel
@pytest.mark.parametrize(
    "overrides",
    [
        {"max_dets": [5, 50]},
        {"iou_thresholds": [0.5, 0.7]},
        {"ap_method": "11_point"},
        {"area_ranges": {"all": [0, 1e10]}},
    ],
)
def test_configured_protocols(overrides, monkeypatch):
    p = apply_overrides(PRESETS["coco"], overrides)
    gt, dt = _nasty(7)
    _twins(match(gt, dt, p), gt, p, _nasty_weights(gt, 7), monkeypatch)


@needs_kernel
def test_inconsistent_inputs_are_refused_not_read():
    """Indices outside the arrays raise ValueError (the kernel never reads out of bounds)."""
    gt, dt = _nasty(1)
    p = deteval.get_protocol("coco")
    from deteval.stats.plan import _plan

    table = match(gt, dt, p)
    plan = _plan(table, gt, p, np.full(gt.n_images, 2))
    cur = plan.curves[max(plan.curves)]
    flat = cur.flat
    n_seg, n_r = len(cur.seg_len), 101
    tab = plan.layout.table(np.ones(gt.n_images, np.int64))
    npos = np.full(plan.n_class * plan.n_area, 3, np.int64)
    ttab = np.empty(int((npos + 2).sum()), np.int64)
    CBOOT.thresholds_table(npos, np.linspace(0, 1, n_r), ttab)
    start = np.zeros(n_seg, np.int64)

    def call(arrays, tab=tab, start=start):
        CBOOT.curve_row(
            tab,
            *arrays,
            ttab,
            start,
            np.empty(n_seg * n_r),
            np.empty(n_seg, np.int64),
            np.empty(flat.iwork + n_r + 1, np.int64),
            np.empty(flat.fwork),
            n_r,
            False,
            float(np.spacing(1)),
        )

    call(flat.arrays)  # consistent: fine
    bad_key = flat.arrays[0].copy()
    bad_key[0] = len(tab)
    with pytest.raises(ValueError, match="out of range"):
        call((bad_key, *flat.arrays[1:]))
    with pytest.raises(ValueError, match="out of range"):
        call(flat.arrays, tab=tab[:1])
    with pytest.raises(TypeError, match="int32"):
        call((flat.arrays[0].astype(np.int64), *flat.arrays[1:]))
    z = np.zeros(3, np.int64)
    with pytest.raises(ValueError, match="out of range"):  # image 3 of 3
        CBOOT.weighted_counts(z, 3, np.array([3]), np.array([1]), np.array([0, 1]), np.empty(1, np.int64))
    with pytest.raises(ValueError, match="npos"):
        CBOOT.thresholds_table(np.array([-1]), np.linspace(0, 1, 3), np.empty(1, np.int64))
