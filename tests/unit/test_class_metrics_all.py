"""``class_metrics_all``: every class's per-class terms in one pass, bit for bit ``class_metrics``."""

import numpy as np
import pytest

import deteval
from deteval.accumulate import Accumulated
from deteval.summary import class_ap, class_ap_all, class_metrics, class_metrics_all
from tests.crosscheck.generate import generate

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")


def _same(a: list, b: list) -> bool:
    """Equal lists of dicts of floats, NaN equal to NaN, compared as bits."""
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(np.float64(x[k]).tobytes() == np.float64(y[k]).tobytes() for k in x)
        for x, y in zip(a, b)
    )


@pytest.mark.parametrize("protocol", ["coco", "coco-pycocotools", "voc2007", "voc2010", "lvis", "coco50"])
@pytest.mark.parametrize("seed", range(4))
def test_equals_the_per_class_function_on_results(protocol, seed):
    gt, dt = generate(seed=seed)
    p = deteval.get_protocol(protocol)
    if p.federated_labels == "lvis":
        p = p.replace(federated_labels="ignore", summary="configured")  # generated data: no LVIS labels
    result = deteval.evaluate(gt, dt, p)
    acc = Accumulated(precision=result.precision, recall=result.recall, scores=result.scores, ap=result.ap)
    expected = [class_metrics(acc, p, k) for k in range(len(result.category_ids))]
    assert _same(class_metrics_all(acc, p), expected)


def test_equals_the_per_class_function_on_random_arrays_with_undefined_entries():
    """Rows all defined, all undefined and partly undefined (the slow path), long rows (pairwise sums)."""
    rng = np.random.default_rng(0)
    precision = rng.uniform(size=(10, 101, 7, 4, 3))
    precision[:, :, 1] = np.nan  # a class without ground truth
    precision[:, :, 2, 1] = np.nan  # one area range of a class
    precision[3, 50:, 4, 0, 2] = np.nan  # part of a row: mean_defined's path
    recall = rng.uniform(size=(10, 7, 4, 3))
    recall[:, 1] = np.nan
    recall[2:5, 5, 0, 0] = np.nan
    acc = Accumulated(
        precision=precision, recall=recall, scores=precision, ap=rng.uniform(size=(10, 7, 4, 3))
    )
    p = deteval.get_protocol("coco")
    expected = [class_metrics(acc, p, k) for k in range(7)]
    assert _same(class_metrics_all(acc, p), expected)


def _bits(values) -> list[bytes]:
    return [np.float64(v).tobytes() for v in values]


@pytest.mark.parametrize("protocol", ["coco", "voc2007", "voc2010", "coco50"])
def test_class_ap_all_equals_class_ap_on_random_arrays(protocol):
    """Every class's AP in one pass (scoring's per-class AP), bit for bit the per-class function."""
    rng = np.random.default_rng(1)
    precision = rng.uniform(size=(10, 101, 1203, 4, 1))  # LVIS' classes, long rows (pairwise sums)
    precision[:, :, 7] = np.nan  # a class without ground truth
    precision[4, 60:, 9, 0, 0] = np.nan  # part of a row: mean_defined's path
    ap = rng.uniform(size=(10, 1203, 4, 1))
    ap[:, 7] = np.nan
    ap[3, 11, 0, 0] = np.nan
    p = deteval.get_protocol(protocol)
    expected = [class_ap(precision, ap, p, k) for k in range(1203)]
    assert _bits(class_ap_all(precision, ap, p)) == _bits(expected)
    empty = np.zeros((len(p.iou_thresholds), 0, 4, 1))
    assert class_ap_all(precision[:, :, :0], empty, p).shape == (0,)


@pytest.mark.parametrize("protocol", ["coco", "voc2010", "lvis"])
def test_per_class_ap_of_results_is_class_ap(protocol):
    gt, dt = generate(seed=3)
    p = deteval.get_protocol(protocol)
    if p.federated_labels == "lvis":
        p = p.replace(federated_labels="ignore", summary="configured")
    result = deteval.evaluate(gt, dt, p)
    expected = [class_ap(result.precision, result.ap, p, k) for k in range(len(result.category_ids))]
    assert _bits(row["AP"] for row in result.per_class) == _bits(expected)


@pytest.mark.parametrize("seed", range(6))
def test_row_means_with_undefined_entries_are_mean_defined_of_each_row(seed):
    """Rows partly undefined, averaged in blocks of equal defined counts, are each row's mean_defined.

    Long rows (numpy's pairwise sums in play), defined counts shared by many rows and by one.
    """
    from deteval.summary import _row_means, mean_defined

    rng = np.random.default_rng(seed)
    n_class, width = 300, int(rng.integers(1, 2000))
    rows = rng.uniform(-1e3, 1e3, size=(n_class, width)) * 10.0 ** rng.integers(-8, 8, size=(n_class, 1))
    holes = rng.uniform(size=(n_class, width)) < rng.uniform(0, 1, size=(n_class, 1))
    rows[holes] = np.nan
    rows[::7] = np.nan  # rows with nothing defined
    rows[3::11, : width // 2] = np.nan  # many rows with the same count
    got = _row_means(rows, n_class)
    expected = np.array([mean_defined(row) for row in rows])
    assert got.tobytes() == expected.tobytes()
