"""Keypoints (OKS) and LVIS (federated) pieces: OKS against a plain twin, loading, warnings."""

from __future__ import annotations

import math

import numpy as np
import pytest

import deteval
from deteval.errors import ConfigError, InputError, InputWarning
from deteval.geometry.keypoints import COCO_KEYPOINT_SIGMAS, pair_oks
from deteval.io.coco import load_coco_dt, load_coco_gt
from tests.crosscheck.generate_lvis import generate_lvis

# Generated data has undefined classes and capped images: those notes are incidental here.
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")


def oks_twin(gt_kp, gt_box, gt_area, dt_kp, sigmas):
    """Pycocotools' computeOks for one pair, written plainly (its operations, in its order)."""
    g = np.asarray(gt_kp, dtype=float).ravel()
    d = np.asarray(dt_kp, dtype=float).ravel()
    xg, yg, vg = g[0::3], g[1::3], g[2::3]
    xd, yd = d[0::3], d[1::3]
    k1 = np.count_nonzero(vg > 0)
    variances = (sigmas * 2) ** 2
    x0, x1 = gt_box[0] - gt_box[2], gt_box[0] + gt_box[2] * 2
    y0, y1 = gt_box[1] - gt_box[3], gt_box[1] + gt_box[3] * 2
    if k1 > 0:
        dx, dy = xd - xg, yd - yg
    else:
        z = np.zeros(len(sigmas))
        dx = np.max((z, x0 - xd), axis=0) + np.max((z, xd - x1), axis=0)
        dy = np.max((z, y0 - yd), axis=0) + np.max((z, yd - y1), axis=0)
    e = (dx**2 + dy**2) / variances / (gt_area + np.spacing(1)) / 2
    if k1 > 0:
        e = e[vg > 0]
    return np.sum(np.exp(-e)) / e.shape[0]


@pytest.mark.parametrize("seed", range(20))
def test_pair_oks_is_bit_equal_to_the_plain_twin(seed):
    rng = np.random.default_rng(seed)
    n = 300
    gt = np.concatenate([rng.uniform(0, 300, (n, 17, 2)), rng.integers(0, 3, (n, 17, 1))], axis=2)
    gt[: n // 5, :, 2] = 0  # no labelled keypoint: the doubled-box rule
    dt = gt.copy()
    dt[:, :, :2] += rng.normal(size=(n, 17, 2)) * rng.uniform(0, 40, (n, 1, 1))
    dt[:, :, 2] = rng.random((n, 17))
    box = np.concatenate([rng.uniform(0, 200, (n, 2)), rng.uniform(1, 150, (n, 2))], axis=1)
    area = rng.uniform(0, 20000, n)
    area[:3] = 0.0
    got = pair_oks(gt, box, area, dt, sigmas=COCO_KEYPOINT_SIGMAS)
    want = np.array([oks_twin(gt[i], box[i], area[i], dt[i], COCO_KEYPOINT_SIGMAS) for i in range(n)])
    assert np.array_equal(got, want)


def test_oks_outside_the_doubled_box_is_zero_distance_inside():
    gt = np.zeros((1, 2, 3))  # nothing labelled
    inside = np.array([[[15.0, 15.0, 1.0], [25.0, 5.0, 1.0]]])
    box = np.array([[10.0, 10.0, 10.0, 10.0]])  # doubled box: x in [0, 30], y in [0, 30]
    assert pair_oks(gt, box, np.array([100.0]), inside, sigmas=np.array([0.1, 0.1])).tolist() == [1.0]
    outside = np.array([[[40.0, 15.0, 1.0], [25.0, 5.0, 1.0]]])  # 10 px right of the doubled box
    e = 100.0 / 0.04 / (100.0 + np.spacing(1)) / 2
    want = (math.exp(-e) + 1.0) / 2
    assert pair_oks(gt, box, np.array([100.0]), outside, sigmas=np.array([0.1, 0.1]))[0] == want


GT = {
    "images": [{"id": 1, "width": 100, "height": 100}],
    "categories": [{"id": 1, "name": "person"}],
    "annotations": [
        {
            "id": 1,
            "image_id": 1,
            "category_id": 1,
            "bbox": [10, 10, 40, 60],
            "area": 2000,
            "iscrowd": 0,
            "num_keypoints": 2,
            "keypoints": [20, 20, 2, 30, 30, 1, 0, 0, 0],
        }
    ],
}


def _gt(**change):
    ann = {**GT["annotations"][0], **change}
    return {**GT, "annotations": [ann]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"keypoints": [1, 2, 3, 4]},
            r"annotation #0 \(id=1, image_id=1\): `keypoints` is not a list of 3 numbers per keypoint",
        ),
        ({"keypoints": [1, 2, 2], "num_keypoints": 1}, None),
        ({"keypoints": [1, "a", 2, 3, 4, 2, 0, 0, 0]}, r"`keypoints` has a value that is not a number"),
        (
            {"keypoints": [1, 2, 5, 3, 4, 2, 0, 0, 0]},
            r"`keypoints` has a visibility flag that is not 0, 1 or 2",
        ),
        ({"num_keypoints": 9}, r"`num_keypoints` is out of range; expected an integer in \[0, 3\]"),
    ],
)
def test_ground_truth_keypoint_errors_name_record_and_field(change, message):
    if message is None:
        assert load_coco_gt(_gt(**change)).keypoints.shape == (1, 1, 3)
        return
    with pytest.raises(InputError, match=message):
        load_coco_gt(_gt(**change), name="gt.json")


def test_keypoint_lengths_must_agree_and_nan_is_refused():
    gt = {
        **GT,
        "annotations": GT["annotations"] + [{**GT["annotations"][0], "id": 2, "keypoints": [1, 1, 1]}],
    }
    with pytest.raises(
        InputError,
        match=r"#1 \(id=2, image_id=1\): `keypoints` does not have the length of the first record's",
    ):
        load_coco_gt(gt, name="gt.json")
    with pytest.raises(InputError, match="not a finite number"):
        load_coco_dt(
            [{"image_id": 1, "category_id": 1, "score": 1, "keypoints": [1, float("nan"), 1] * 3}],
            load_coco_gt(GT),
        )


def test_missing_num_keypoints_is_counted_from_the_flags_with_a_warning():
    ann = dict(GT["annotations"][0])
    del ann["num_keypoints"]
    gt = load_coco_gt({**GT, "annotations": [ann]})
    assert gt.num_keypoints.tolist() == [2]
    assert any("no `num_keypoints`" in w for w in gt.warnings)


def test_keypoint_result_without_bbox_gets_the_keypoints_extent():
    gt = load_coco_gt(GT)
    dt = load_coco_dt(
        [{"image_id": 1, "category_id": 1, "score": 0.5, "keypoints": [20, 20, 1, 30, 35, 1, 5, 0, 0]}], gt
    )
    assert dt.box.tolist() == [[5.0, 0.0, 25.0, 35.0]]
    assert not dt.has_box[0]


def test_keypoints_evaluation_needs_keypoints_and_the_right_sigma_count():
    gt = load_coco_gt(GT)
    boxes_only = load_coco_dt([{"image_id": 1, "category_id": 1, "score": 0.5, "bbox": [1, 1, 5, 5]}], gt)
    with pytest.raises(InputError, match=r"1 detections record\(s\) without `keypoints` \(record #0\)"):
        deteval.evaluate(gt, boxes_only, "coco-keypoints")
    dt = [{"image_id": 1, "category_id": 1, "score": 0.5, "keypoints": [20, 20, 1, 30, 30, 1, 0, 0, 0]}]
    with pytest.raises(ConfigError, match=r"3 keypoints per object, but the protocol has 17 OKS sigmas"):
        deteval.evaluate(GT, dt, "coco-keypoints")
    three = deteval.get_protocol("coco-keypoints").replace(keypoint_sigmas=[0.1, 0.1, 0.1])
    result = deteval.evaluate(GT, dt, three)
    assert result.metrics["APm"] == pytest.approx(1.0)  # area 2000: medium; one perfect detection


def test_lvis_ground_truth_under_coco_warns_that_federated_labels_are_ignored():
    gt, dt = generate_lvis(1)
    with pytest.warns(
        InputWarning, match=r"image\(s\) carry LVIS federated labels .* protocol 'coco' ignores"
    ):
        result = deteval.evaluate(gt, dt, "coco")
    assert any("LVIS federated labels" in w for w in result.warnings)
    lvis_result = deteval.evaluate(gt, dt, "lvis")
    assert not any("LVIS federated labels" in w for w in lvis_result.warnings)


def test_lvis_protocol_on_plain_coco_ground_truth_is_refused():
    with pytest.raises(InputError, match=r"no image has `neg_category_ids`"):
        deteval.evaluate(
            GT, [{"image_id": 1, "category_id": 1, "score": 1.0, "bbox": [10, 10, 40, 60]}], "lvis"
        )


def test_federated_labels_load_as_index_pairs_and_unknown_ids_are_errors():
    gt, _ = generate_lvis(2)
    loaded = load_coco_gt(gt)
    assert loaded.category_frequency is not None
    assert set(loaded.category_frequency) <= {"r", "c", "f"}
    n_neg = sum(len(i["neg_category_ids"]) for i in gt["images"])
    assert len(loaded.federated.neg_image) == n_neg
    bad = {**gt, "images": [{**gt["images"][0], "neg_category_ids": [999]}] + gt["images"][1:]}
    with pytest.raises(InputError, match=r"`neg_category_ids` names a category not in `categories`"):
        load_coco_gt(bad, name="lvis.json")
    missing = {
        **gt,
        "images": [{k: v for k, v in gt["images"][0].items() if k != "neg_category_ids"}] + gt["images"][1:],
    }
    with pytest.raises(
        InputError, match=r"no `neg_category_ids` \(other images have LVIS' federated labels\)"
    ):
        load_coco_gt(missing, name="lvis.json")


def test_lvis_matches_across_shards():
    gt, dt = generate_lvis(3)
    one = deteval.evaluate(gt, dt, "lvis")
    two = deteval.evaluate(gt, dt, "lvis", workers=2)
    assert one.metrics == two.metrics


from tests import ROOT  # noqa: E402 (the docs examples below use it)


def test_docs_keypoints_example_is_what_notes_derive():
    result = deteval.evaluate(
        ROOT / "fixtures/keypoints/gt.json",
        ROOT / "fixtures/keypoints/dt.json",
        str(ROOT / "fixtures/keypoints/three.yaml"),
    )
    assert result.metrics["AP"] == 0.9999999999999998
    assert result.metrics["AR"] == 1.0
    assert math.isnan(result.metrics["APl"])
    assert result.table.det_is_ignored.sum(axis=1).tolist() == [1] * 20 + [2] * 10  # all, medium | large


def test_docs_lvis_example_is_what_notes_derive(capsys):
    from deteval.cli import main

    gt, dt = ROOT / "fixtures/lvis/gt.json", ROOT / "fixtures/lvis/dt.json"
    lvis_result = deteval.evaluate(gt, dt, "lvis")
    coco_result = deteval.evaluate(gt, dt, "coco")
    assert lvis_result.metrics["AP"] == pytest.approx(1.0)
    assert lvis_result.metrics["APr"] == pytest.approx(1.0)
    assert math.isnan(lvis_result.metrics["APc"])
    assert round(coco_result.metrics["AP"], 4) == 0.6667
    assert (
        main(
            [
                "compare",
                "--gt",
                str(gt),
                "--dt",
                str(dt),
                "--protocol",
                "coco",
                "--protocol",
                "lvis",
                "--explain",
            ]
        )
        == 0
    )
    assert "difficult/crowd  +0.3333" in capsys.readouterr().out


def test_keypoints_without_any_detection_score_zero_not_a_traceback():
    import warnings

    from deteval.api import evaluate
    from tests.crosscheck.generate_keypoints import generate_keypoints

    gt, _ = generate_keypoints(3, n_images=4, n_categories=1, with_bbox="all")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(gt, [], "coco-keypoints")
    assert result.metrics["AP"] == 0.0
    assert result.metrics["AR"] == 0.0


def test_keypoints_table_labels_are_pycocotools_summary_lines(capsys):
    """The text table of a keypoints run prints pycocotools' summarize labels (maxDets=20, AR50 at IoU .50)."""
    import contextlib
    import io
    import json
    import re

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    from deteval.cli import main
    from tests import ROOT

    gt_path, dt_path = ROOT / "fixtures/keypoints/gt.json", ROOT / "fixtures/keypoints/dt.json"
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        coco = COCO(str(gt_path))
        run = COCOeval(coco, coco.loadRes(json.loads(dt_path.read_text())), "keypoints")
        run.params.kpt_oks_sigmas = np.array([0.1, 0.1, 0.1])  # three.yaml's sigmas
        run.evaluate()
        run.accumulate()
        run.summarize()
    want = re.findall(r"\((?:AP|AR)\) @\[.*?\]", printed.getvalue())
    protocol = str(ROOT / "fixtures/keypoints/three.yaml")
    assert main(["evaluate", "--gt", str(gt_path), "--dt", str(dt_path), "--protocol", protocol]) == 0
    assert re.findall(r"\((?:AP|AR)\) @\[.*?\]", capsys.readouterr().out) == want
