"""deteval.stats: weighted re-accumulation, bootstrap intervals, the paired comparison."""

import json
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, InputError
from deteval.evaluate import match, score
from deteval.stats import (
    BootstrapBiasWarning,
    bootstrap,
    bootstrap_settings_dict,
    bootstrap_weights,
    compare_detectors,
    comparison_dicts,
    metrics_ci_dict,
    paired_difference,
    per_class_ci_list,
    percentile_interval,
    resample_metrics,
    result_ci_dict,
)
from tests.crosscheck.generate import generate

# Generated data trigger input warnings (box encodings, classes without ground truth) through the
# API; they are incidental here (tests/unit/test_api.py checks the warnings themselves).
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]

PROTOCOLS = ["coco", "coco-pycocotools", "voc2007", "voc2010", "coco50"]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _data(seed, max_images=25, max_classes=5):
    gt_dict, dt_list = generate(seed, max_images=max_images, max_classes=max_classes)
    gt = deteval.load_ground_truth(gt_dict)
    return gt, deteval.load_detections(dt_list, gt)


def replicate(gt: GroundTruth, dt: Detections, w: np.ndarray) -> tuple:
    """The explicit dataset of a resample.

    Image i repeated w[i] times, copies adjacent in image order, each annotation and result
    line repeated in place.
    """
    w = np.asarray(w, dtype=np.int64)
    first_copy = np.cumsum(w) - w  # new index of copy 0 of each image
    img_src = np.repeat(np.arange(gt.n_images), w)

    def rows_of(image):
        rows = np.repeat(np.arange(len(image)), w[image])
        copy = np.arange(len(rows)) - np.repeat(np.cumsum(w[image]) - w[image], w[image])
        return rows, first_copy[image[rows]] + copy, copy

    g_rows, g_img, _ = rows_of(gt.image)
    gt_r = GroundTruth(
        image_id=np.arange(1, len(img_src) + 1, dtype=np.int64),
        image_name=tuple(gt.image_name[i] for i in img_src),
        image_width=gt.image_width[img_src],
        image_height=gt.image_height[img_src],
        category_id=gt.category_id,
        category_name=gt.category_name,
        annotation_id=gt.annotation_id[g_rows],
        image=g_img,
        category=gt.category[g_rows],
        box=gt.box[g_rows],
        area=gt.area[g_rows],
        is_crowd=gt.is_crowd[g_rows],
        is_difficult=gt.is_difficult[g_rows],
        is_ignore=gt.is_ignore[g_rows],
        box_format=gt.box_format,
    )
    d_rows, d_img, d_copy = rows_of(dt.image)
    order = np.lexsort((d_copy, dt.order[d_rows]))
    new_order = np.empty(len(order), dtype=np.int64)
    new_order[order] = np.arange(len(order))
    dt_r = Detections(
        image=d_img,
        category=dt.category[d_rows],
        box=dt.box[d_rows],
        score=dt.score[d_rows],
        order=new_order,
        has_box=dt.has_box[d_rows],
        box_format=dt.box_format,
    )
    return gt_r, dt_r


def _same(x, y):
    return np.array_equal(np.asarray(x, float), np.asarray(y, float), equal_nan=True)


def _close(x, y, tol=1e-12):
    x, y = np.asarray(x, float), np.asarray(y, float)
    assert np.array_equal(np.isnan(x), np.isnan(y)), (x, y)
    assert np.allclose(x[~np.isnan(x)], y[~np.isnan(y)], rtol=0, atol=tol), (x, y)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("seed", range(3))
def test_all_ones_weights_equal_the_point_estimate_bit_for_bit(protocol, seed):
    gt, dt = _data(seed)
    p = deteval.get_protocol(protocol)
    table = match(gt, dt, p)
    point = score(table, gt, p)
    r = resample_metrics(table, gt, p, np.ones((2, gt.n_images), dtype=np.int64))
    assert r.metric_names == tuple(point.metrics)
    for b in range(2):
        assert _same(r.metrics[b], list(point.metrics.values()))
        assert _same(r.per_class_ap[b], [c["AP"] for c in point.per_class])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("seed", range(4))
def test_weighted_equals_explicit_replication(protocol, seed):
    gt, dt = _data(seed + 10)
    p = deteval.get_protocol(protocol)
    table = match(gt, dt, p)
    weights = bootstrap_weights(gt.n_images, n=3, seed=seed)
    weights[0, :3] = [0, 3, 2]  # empty, tripled, doubled images for sure
    r = resample_metrics(table, gt, p, weights)
    for b, w in enumerate(weights):
        gt_r, dt_r = replicate(gt, dt, w)
        expected = score(match(gt_r, dt_r, p), gt_r, p)
        _close(r.metrics[b], list(expected.metrics.values()))
        _close(r.per_class_ap[b], [c["AP"] for c in expected.per_class])


def _tied_data():
    """Tied data for the replication tests.

    Within-image ties of mixed outcome, ties across images, a crowd, an empty image and a class
    without ground truth.
    """
    images = [{"id": i, "width": 100, "height": 100} for i in range(1, 6)]
    cats = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "nogt"}]
    anns = []
    for i in range(1, 5):
        anns.append(
            {
                "id": 10 * i,
                "image_id": i,
                "category_id": 1,
                "bbox": [10, 10, 20, 20],
                "area": 400,
                "iscrowd": 0,
            }
        )
        anns.append(
            {
                "id": 10 * i + 1,
                "image_id": i,
                "category_id": 2,
                "bbox": [50, 50, 40, 40],
                "area": 1600,
                "iscrowd": 0,
            }
        )
    anns.append(
        {"id": 99, "image_id": 2, "category_id": 1, "bbox": [60, 0, 40, 40], "area": 1600, "iscrowd": 1}
    )
    dts = []
    for i in range(1, 6):
        dts += [
            {"image_id": i, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.5},
            {"image_id": i, "category_id": 1, "bbox": [11, 10, 20, 21], "score": 0.5},
            {"image_id": i, "category_id": 1, "bbox": [70, 70, 10, 10], "score": 0.5},
            {"image_id": i, "category_id": 2, "bbox": [0, 0, 5, 5], "score": 0.7},
            {"image_id": i, "category_id": 2, "bbox": [50, 52, 40, 40], "score": 0.7},
            {"image_id": i, "category_id": 3, "bbox": [1, 1, 5, 5], "score": 0.3},
        ]
    dts.append({"image_id": 2, "category_id": 1, "bbox": [61, 1, 30, 30], "score": 0.5})
    gt = deteval.load_ground_truth({"images": images, "categories": cats, "annotations": anns})
    return gt, deteval.load_detections(dts, gt)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_weighted_equals_replication_with_within_image_ties(protocol):
    gt, dt = _tied_data()
    p = deteval.get_protocol(protocol)
    table = match(gt, dt, p)
    weights = np.array([[1, 1, 1, 1, 1], [3, 0, 2, 1, 0], [0, 4, 0, 0, 1], [2, 2, 0, 1, 0]])
    r = resample_metrics(table, gt, p, weights)
    for b, w in enumerate(weights):
        gt_r, dt_r = replicate(gt, dt, w)
        expected = score(match(gt_r, dt_r, p), gt_r, p)
        _close(r.metrics[b], list(expected.metrics.values()))
        _close(r.per_class_ap[b], [c["AP"] for c in expected.per_class])


@pytest.mark.parametrize("protocol", ["coco", "voc2007", "voc2010"])
def test_deterministic_for_any_chunking_and_workers(protocol):
    gt, dt = _data(3)
    p = deteval.get_protocol(protocol)
    res = {"A": deteval.evaluate(gt, dt, p)}
    ref = bootstrap(gt, res, n=12, seed=5)
    for kwargs in ({"chunk_size": 1}, {"chunk_size": 5}, {"workers": 2}, {"workers": 2, "chunk_size": 3}):
        other = bootstrap(gt, res, n=12, seed=5, **kwargs)
        assert _same(ref.results[0].samples.metrics, other.results[0].samples.metrics)
        assert _same(ref.results[0].samples.per_class_ap, other.results[0].samples.per_class_ap)
    again = bootstrap(gt, res, n=12, seed=5)
    assert again.results[0].to_dict() == ref.results[0].to_dict()
    assert not _same(
        bootstrap(gt, res, n=12, seed=6).results[0].samples.metrics, ref.results[0].samples.metrics
    )


def test_n_zero_gives_point_numbers_and_no_intervals():
    gt, dt = _data(1)
    result = deteval.evaluate(gt, dt, "coco")
    boot = bootstrap(gt, {"A": result}, n=0)
    det = boot.results[0]
    assert det.metrics_ci == {}
    assert det.per_class_ci == ()
    assert det.to_dict()["metrics"] == result.to_dict()["metrics"]
    assert "metrics_ci" not in det.to_dict()
    assert det.samples.metrics.shape == (0, 12)
    cmp = compare_detectors(gt, {"A": dt, "B": dt}, "coco", n=0)
    assert cmp.comparisons[0].to_dict()["ci"] is None
    assert cmp.comparisons[0].p_value is None


def test_identical_detectors_difference_zero_p_one():
    gt, dt = _data(2)
    cmp = compare_detectors(gt, {"A": dt, "B": dt}, "coco50", n=50, seed=1)
    (c,) = cmp.comparisons
    assert c.difference == 0.0
    assert c.ci.as_list() == [0.0, 0.0]
    assert c.p_value == 1.0
    assert "no significant difference" in c.verdict


def test_intervals_contain_the_point_estimate_and_json_pieces():
    gt, dt = _data(4, max_images=40)
    result = deteval.evaluate(gt, dt, "coco")
    boot = bootstrap(gt, {"A": result}, n=100, seed=0)
    det = boot.results[0]
    for name, value in result.metrics.items():
        iv = det.metrics_ci[name]
        if value == value and iv.lo is not None:
            assert iv.lo <= value <= iv.hi, name
    d = result_ci_dict(result.to_dict(), det)
    assert set(d["metrics_ci"]) == set(result.metrics)
    assert len(d["per_class"]) == gt.n_classes
    assert all("AP_ci" in c for c in d["per_class"])
    assert d["metrics_ci"] == metrics_ci_dict(det)
    assert [c["AP_ci"] for c in d["per_class"]] == per_class_ci_list(det)
    assert bootstrap_settings_dict(boot.settings) == {"n": 100, "seed": 0, "ci": 0.95, "method": "basic"}
    assert set(d["metrics_bias"]) == set(result.metrics)
    assert all("AP_bias" in c for c in d["per_class"])
    json.dumps(boot.to_dict(), allow_nan=False)


def test_undefined_values_are_counted_and_null():
    gt, dt = _tied_data()
    with pytest.warns(BootstrapBiasWarning, match="mAP 0.5141 \\(98.3% of the resamples above it"):
        boot = bootstrap(gt, {"A": deteval.evaluate(gt, dt, "voc2010")}, n=60, seed=0)
    det = boot.results[0]
    nogt = det.per_class_ci[2]
    assert nogt.as_list() is None
    assert nogt.n_undefined == 60
    assert per_class_ci_list(det)[2] is None
    # image 5 has no ground truth: a resample of only image 5 copies leaves everything undefined
    r = resample_metrics(det.result.table, gt, "voc2010", np.array([[0, 0, 0, 0, 5]]))
    assert np.isnan(r.metrics).all()


def test_percentile_interval_over_defined_values():
    iv = percentile_interval(np.array([np.nan, 1.0, 2.0, 3.0, np.nan]), ci=0.5)
    assert iv.as_list() == [1.5, 2.5]
    assert iv.n_undefined == 2
    assert percentile_interval(np.array([np.nan]), ci=0.9).as_list() is None


def test_paired_difference_p_value():
    a = np.array([0.50, 0.52, 0.48, 0.51])
    b = a + np.array([0.10, 0.11, 0.09, 0.10])
    d, iv, p, n = paired_difference(a, b, 0.5, 0.6, ci=0.95)
    assert d == pytest.approx(0.1)
    assert n == 4
    assert p == pytest.approx(1 / 5)
    assert iv.lo > 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": -1}, "n (number of resamples) must be an integer >= 0, found -1"),
        ({"ci": 1.0}, "ci (confidence level) must be a number in (0, 1), e.g. 0.95; found 1.0"),
        ({"ci": 0}, "found 0"),
        (
            {"method": "studentized"},
            "method must be one of ['basic', 'bca', 'percentile'], found 'studentized'",
        ),
        ({"seed": -3}, "seed must be an integer >= 0, found -3"),
    ],
)
def test_bad_settings(kwargs, message):
    gt, dt = _data(0)
    with pytest.raises(ConfigError) as e:
        bootstrap(gt, {"A": deteval.evaluate(gt, dt, "voc2010")}, **kwargs)
    assert message in str(e.value)


@pytest.mark.filterwarnings(
    "ignore::deteval.stats.intervals.BootstrapBiasWarning"
)  # 5 resamples of tiny data
def test_detectors_of_a_different_ground_truth_are_refused():
    gt, dt = _data(0)
    other_gt, other_dt = _data(1)
    with pytest.raises(InputError, match="was not scored on this ground truth"):
        bootstrap(gt, {"B": deteval.evaluate(other_gt, other_dt, "coco")}, n=5)
    table = match(other_gt, other_dt, deteval.get_protocol("coco"))
    if table.n_positive.shape[0] != gt.n_classes or table.det_image.max() >= gt.n_images:
        with pytest.raises(InputError, match="matched against a different ground truth"):
            compare_detectors(gt, {"A": dt, "B": table}, "coco", n=5)
    with pytest.raises(ConfigError, match="at least two named detectors"):
        compare_detectors(gt, {"A": dt}, "coco", n=5)
    with pytest.raises(ConfigError, match="test must be one of"):
        compare_detectors(gt, {"A": dt, "B": dt}, "coco", n=5, test="permutation")
    with pytest.raises(ConfigError, match="metric 'mAP' is not reported"):
        compare_detectors(gt, {"A": dt, "B": dt}, "coco", n=5, metric="mAP")
    with pytest.raises(InputError, match=r"expected an array \(n_resamples"):
        resample_metrics(match(gt, dt, deteval.get_protocol("coco")), gt, "coco", np.ones((2, 3), int))


def test_comparison_dicts_contract():
    gt, dt = _data(5)
    worse = dt.take(np.flatnonzero(np.arange(len(dt)) % 3 != 0))
    cmp = compare_detectors(gt, {"A": dt, "B": worse}, "voc2010", n=40, seed=2)
    (entry,) = comparison_dicts(cmp.comparisons)
    assert set(entry) == {"a", "b", "protocol", "metric", "difference", "ci", "p_value"}
    assert entry["a"] == "A"
    assert entry["b"] == "B"
    assert entry["metric"] == "mAP"
    assert entry["protocol"] == "voc2010"
    assert 0 < entry["p_value"] <= 1
    assert cmp.to_dict()["comparisons"] == [entry]


def test_worked_example_of_the_docs():
    gt = deteval.load_ground_truth(str(FIXTURES / "coco" / "gt.json"))
    a = deteval.load_detections(str(FIXTURES / "coco" / "dt.json"), gt)
    rng = np.random.default_rng(0)
    b = Detections(
        image=a.image,
        category=a.category,
        box=a.box,
        score=a.score * rng.uniform(0.5, 1.0, len(a)),
        order=a.order,
        has_box=a.has_box,
    )
    cmp = compare_detectors(gt, {"A": a, "B": b}, "coco", n=300, seed=0)
    ra, rb = cmp.bootstrap.results
    assert round(ra.result.metrics["AP"], 3) == 0.462
    assert round(rb.result.metrics["AP"], 3) == 0.493
    assert [round(x, 3) for x in ra.metrics_ci["AP"].as_list()] == [0.132, 0.668]
    assert [round(x, 3) for x in rb.metrics_ci["AP"].as_list()] == [0.106, 0.656]
    assert (round(ra.metrics_bias["AP"], 3), round(rb.metrics_bias["AP"], 3)) == (0.052, 0.072)
    assert cmp.verdicts() == [
        "B - A = +0.031 AP [-0.160, +0.062] (coco), p = 0.425: no significant difference at the 5% level"
    ]
    doc = (Path(__file__).resolve().parents[2] / "docs" / "statistics.md").read_text()
    assert cmp.verdicts()[0] in doc


def _custom_protocols():
    from deteval.protocol import PRESETS, apply_overrides

    return {
        "coco-maxdets-5-50": apply_overrides(PRESETS["coco"], {"max_dets": [5, 50]}),
        "coco-pycocotools-300": apply_overrides(PRESETS["coco-pycocotools"], {"max_dets": [1, 10, 300]}),
        "voc2007-two-thresholds": apply_overrides(PRESETS["voc2007"], {"iou_thresholds": [0.5, 0.7]}),
        "voc2010-three-thresholds": apply_overrides(PRESETS["voc2010"], {"iou_thresholds": [0.3, 0.5, 0.7]}),
    }


@pytest.mark.parametrize("name", list(_custom_protocols()))
def test_custom_protocols_bit_for_bit_and_replicated(name):
    """Summaries reading other max_dets / areas / thresholds: only what they read is computed."""
    p = _custom_protocols()[name]
    gt, dt = _data(21)
    table = match(gt, dt, p)
    point = score(table, gt, p)
    weights = np.vstack([np.ones(gt.n_images, np.int64), bootstrap_weights(gt.n_images, n=2, seed=3)])
    r = resample_metrics(table, gt, p, weights)
    assert r.metric_names == tuple(point.metrics)
    assert _same(r.metrics[0], list(point.metrics.values()))
    assert _same(r.per_class_ap[0], [c["AP"] for c in point.per_class])
    for b in (1, 2):
        gt_r, dt_r = replicate(gt, dt, weights[b])
        expected = score(match(gt_r, dt_r, p), gt_r, p)
        _close(r.metrics[b], list(expected.metrics.values()))
        _close(r.per_class_ap[b], [c["AP"] for c in expected.per_class])


def test_summary_terms_are_the_summaries():
    from deteval.summary import SUMMARY_TERMS

    gt, dt = _data(5)
    for p in [
        deteval.get_protocol("coco"),
        deteval.get_protocol("coco-pycocotools"),
        *_custom_protocols().values(),
    ]:
        if p.is_single_threshold:
            continue
        result = score(match(gt, dt, p), gt, p)
        terms = SUMMARY_TERMS[p.summary](p)
        assert [t.name for t in terms] == list(result.metrics)


def test_no_module_level_state_for_workers():
    import deteval.stats as stats

    assert not hasattr(stats, "_SHARED")
    gt, dt = _data(4)
    p = deteval.get_protocol("coco")
    table = match(gt, dt, p)
    weights = bootstrap_weights(gt.n_images, n=7, seed=1)
    one = resample_metrics(table, gt, p, weights)
    three = resample_metrics(table, gt, p, weights, workers=3, chunk_size=2)
    assert _same(one.metrics, three.metrics)
    assert _same(one.per_class_ap, three.per_class_ap)


def test_protocols_the_resampling_does_not_reproduce_are_refused():
    import deteval
    from deteval.stats import resample_metrics

    gt = deteval.load_ground_truth(
        {
            "images": [{"id": 1}],
            "categories": [{"id": 1, "name": "a"}],
            "annotations": [
                {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9], "area": 81, "iscrowd": 0}
            ],
        }
    )
    dt = deteval.load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9], "score": 0.9}], gt)
    p = deteval.get_protocol("ultralytics")
    with pytest.raises(ConfigError, match="ultralytics.*not supported by the resampling"):
        resample_metrics(deteval.match(gt, dt, p), gt, p, np.ones((2, 1), dtype=np.int64))


@pytest.mark.parametrize("grid", [np.linspace(0.0, 1.0, 101), np.arange(0, 1.1, 0.1)])
def test_thresholds_table_is_a_search_per_count(grid):
    from deteval.stats import _thresholds_table

    npos = np.array([[0, 1, 7, 100, 333], [3, 0, 130, 41, 1000]], dtype=np.int64)
    table, start = _thresholds_table(npos, grid)
    for b in range(npos.shape[0]):
        for c in range(npos.shape[1]):
            n = npos[b, c]
            j = np.arange(n + 1)
            with np.errstate(divide="ignore", invalid="ignore"):
                expected = np.searchsorted(grid, j / n, "right")
            expected[0] = 0
            np.testing.assert_array_equal(table[start[b, c] : start[b, c] + n + 1], expected)


@pytest.mark.parametrize("grid", [np.linspace(0.0, 1.0, 101), np.arange(0, 1.1, 0.1), np.linspace(0, 1, 11)])
def test_thresholds_table_for_every_count(grid):
    # Each threshold's first count is found among four candidates around ceil(thr * n): checked
    # here against one search per count for every n up to 600 and a few large ones.
    from deteval.stats import _thresholds_table

    npos = np.concatenate([np.arange(601), [997, 4096, 10_007, 123_457, 1_000_003]])[None, :]
    table, start = _thresholds_table(npos, grid)
    for c, n in enumerate(npos[0]):
        j = np.arange(n + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = np.searchsorted(grid, j / n, "right")
        expected[0] = 0
        np.testing.assert_array_equal(table[start[0, c] : start[0, c] + n + 1], expected)


@pytest.mark.parametrize("protocol", ["coco", "coco-pycocotools", "voc2007"])
@pytest.mark.parametrize("block_items", [1, 7, 40])
def test_blocks_of_any_size_give_the_same_numbers(protocol, block_items, monkeypatch):
    # A resample is re-accumulated block by block (whole segments); the generated data fit in
    # one block at the default size, so small blocks exercise the splits, ties included.
    import deteval.stats.plan as plan_module

    p = deteval.get_protocol(protocol)
    weights = np.array([[1, 1, 1, 1, 1], [3, 0, 2, 1, 0], [0, 4, 0, 0, 1], [2, 2, 0, 1, 0]])
    for gt, dt, w in (
        (*_tied_data(), weights),
        (*_data(1), bootstrap_weights(_data(1)[0].n_images, n=6, seed=2)),
    ):
        table = match(gt, dt, p)
        ref = resample_metrics(table, gt, p, w)
        monkeypatch.setattr(plan_module, "_BLOCK_ITEMS", block_items)
        other = resample_metrics(table, gt, p, w)
        monkeypatch.undo()
        assert _same(ref.metrics, other.metrics)
        assert _same(ref.per_class_ap, other.per_class_ap)
