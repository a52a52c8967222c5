"""The segmentation factor PR_S|C,L of the decomposition (``iou_type="segm"``).

Checked against a slow twin written from the definition (docs/analysis.md) with Python loops and
pycocotools' own mask functions, and for the product identity
``P_D = P_L * P_C|L * P_S|C,L`` (and the same for recall) at every point.
"""

from __future__ import annotations

import copy
import math
import random

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from deteval.decomposition import CURVE_NAMES, SEGM_CURVE_NAMES, decompose, interpolated_ap
from deteval.diagnose import analyze
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import get_protocol
from tests.crosscheck.generate_segm import generate_segm

pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")

RASTER = get_protocol("coco").replace(iou_type="segm", mask_iou="raster")
EXACT = get_protocol("coco-exact-masks").replace(iou_type="segm")
SEEDS = list(range(30))


def confused_segm(seed, **options):
    """Generated masks plus relabelled detections and copies under another class."""
    gt, dt = generate_segm(seed, **options)
    rng = random.Random(seed + 777)
    cats = [c["id"] for c in gt["categories"]]
    out = []
    for det in dt:
        det = copy.deepcopy(det)
        r = rng.random()
        if len(cats) > 1 and r < 0.2:
            det["category_id"] = rng.choice([c for c in cats if c != det["category_id"]])
        elif len(cats) > 1 and r < 0.35:
            twin = copy.deepcopy(det)
            twin["category_id"] = rng.choice([c for c in cats if c != det["category_id"]])
            twin["score"] = det["score"] * rng.choice((1.0, 0.5))
            out.append(twin)
        out.append(det)
    return gt, out


# -- the slow twin ---------------------------------------------------------------------------------


def _rle(segmentation, height, width):
    if isinstance(segmentation, list):
        return mask_utils.merge(mask_utils.frPyObjects(segmentation, height, width))
    if isinstance(segmentation["counts"], list):
        return mask_utils.frPyObjects(segmentation, height, width)
    return segmentation


def _tight_box(segmentation, height, width):
    """The xywh extent of the mask as written: polygon vertices' bounds, or the RLE's toBbox."""
    if isinstance(segmentation, list):
        xs = [v for part in segmentation for v in part[0::2]]
        ys = [v for part in segmentation for v in part[1::2]]
        if not xs:
            return [0.0, 0.0, 0.0, 0.0]
        return [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)]
    return [float(v) for v in mask_utils.toBbox(_rle(segmentation, height, width))]


def _box_iou(d, g):
    """The bbIou of pycocotools on xywh boxes, operation by operation."""
    iw = min(d[2] + d[0], g[2] + g[0]) - max(d[0], g[0])
    ih = min(d[3] + d[1], g[3] + g[1]) - max(d[1], g[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = d[2] * d[3] + g[2] * g[3] - inter
    return inter / union if union > 0 else 0.0


def decomposition_segm_slow(gt, dt, category_id, t):
    size = {im["id"]: (im["height"], im["width"]) for im in gt["images"]}
    counted = [a for a in gt["annotations"] if not a.get("iscrowd", 0) and not a.get("ignore", 0)]
    n_gt = sum(1 for a in counted if a["category_id"] == category_id)
    info = []
    for d in dt:
        h, w = size[d["image_id"]]
        d_box = _tight_box(d["segmentation"], h, w)
        best, best_gt = 0.0, None
        for g in counted:  # file order: the first maximum wins
            if g["image_id"] != d["image_id"]:
                continue
            iou = _box_iou(d_box, _tight_box(g["segmentation"], h, w))
            if iou > best:
                best, best_gt = iou, g
        loc = best_gt is not None and best >= t
        true_class = best_gt["category_id"] if loc else None
        seg = False
        if loc and true_class == d["category_id"]:
            iou = mask_utils.iou([_rle(d["segmentation"], h, w)], [_rle(best_gt["segmentation"], h, w)], [0])
            seg = float(np.asarray(iou).ravel()[0]) >= t
        info.append((d["score"], d["category_id"], loc, true_class, seg))
    relevant = [s for s, c, loc, tc, _ in info if c == category_id or (loc and tc == category_id)]
    out = {k: [] for k in ("confidence", *CURVE_NAMES, *SEGM_CURVE_NAMES)}

    def ratio(a, b):
        return a / b if b > 0 else math.nan

    for delta in sorted(set(relevant), reverse=True):
        kept = [x for x in info if x[0] >= delta]
        n_pred = sum(1 for _, c, *_ in kept if c == category_id)
        n_pred_loc = sum(1 for _, c, loc, *_ in kept if c == category_id and loc)
        n_true_loc = sum(1 for _, _, loc, tc, _ in kept if loc and tc == category_id)
        n_ok = sum(1 for _, c, loc, tc, _ in kept if c == category_id and loc and tc == category_id)
        n_seg = sum(
            1 for _, c, loc, tc, seg in kept if c == category_id and loc and tc == category_id and seg
        )
        out["confidence"].append(delta)
        out["precision_D"].append(ratio(n_seg, n_pred))
        out["recall_D"].append(ratio(n_seg, n_gt))
        out["precision_L"].append(ratio(n_pred_loc, n_pred))
        out["recall_L"].append(ratio(n_true_loc, n_gt))
        out["precision_CgL"].append(ratio(n_ok, n_pred_loc))
        out["recall_CgL"].append(ratio(n_ok, n_true_loc))
        out["precision_SgCL"].append(ratio(n_seg, n_ok))
        out["recall_SgCL"].append(ratio(n_seg, n_ok))
    return out


# -- tests -----------------------------------------------------------------------------------------


def _load(gt_dict, dt_list):
    gt = load_ground_truth(gt_dict)
    return gt, load_detections(dt_list, gt)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("t", [0.5, 0.75])
def test_equals_slow_twin(seed, t):
    gt_dict, dt_list = confused_segm(seed)
    result = decompose(*_load(gt_dict, dt_list), RASTER, iou_threshold=t)
    for c in result.per_class:
        slow = decomposition_segm_slow(gt_dict, dt_list, c.category_id, t)
        assert c.confidence.tolist() == slow["confidence"], c.category_id
        for name in CURVE_NAMES + SEGM_CURVE_NAMES:
            np.testing.assert_allclose(
                c.curves[name],
                np.array(slow[name], dtype=float),
                rtol=0,
                atol=1e-15,
                equal_nan=True,
                err_msg=f"{seed} {c.category_id} {name}",
            )
        if c.n_gt:
            ap = {
                name: interpolated_ap(
                    np.array(slow[f"recall_{name}"]), np.array(slow[f"precision_{name}"]), RASTER
                )
                for name in ("D", "L")
            }
            assert (c.ap["AP_D"], c.ap["AP_L"]) == (ap["D"], ap["L"])
            # AP_LC: the box curve "localized and rightly classified", L * C|L (0 where P_L is 0).
            lc = [
                np.nan_to_num(np.array(slow[f"{k}_L"], float) * np.array(slow[f"{k}_CgL"], float), nan=0.0)
                for k in ("recall", "precision")
            ]
            lc = [
                np.where(np.isnan(np.array(slow[f"{k}_L"], float)), np.nan, x)
                for k, x in zip(("recall", "precision"), lc)
            ]
            # The recall as the count's own quotient (k / n_gt): the product of the two factors can
            # be an ulp off, and an ulp moves a 101-point recall threshold.
            lc[0] = np.round(lc[0] * c.n_gt) / c.n_gt
            ap_lc = interpolated_ap(*lc, RASTER)
            if ap["L"] == 0:
                assert math.isnan(c.ap["AP_CgL"])
            else:
                assert c.ap["AP_CgL"] == pytest.approx(ap_lc / ap["L"], rel=0, abs=1e-12)
            if ap_lc == 0:
                assert math.isnan(c.ap["AP_SgCL"])
            else:
                assert c.ap["AP_SgCL"] == pytest.approx(ap["D"] / ap_lc, rel=0, abs=1e-12)
                assert abs(c.ap["AP_D"] - c.ap["AP_L"] * c.ap["AP_CgL"] * c.ap["AP_SgCL"]) <= 1e-12


@pytest.mark.parametrize("protocol", [RASTER, EXACT], ids=["raster", "exact"])
@pytest.mark.parametrize("seed", SEEDS)
def test_product_identity_at_every_point(seed, protocol):
    gt_dict, dt_list = confused_segm(seed)
    result = decompose(*_load(gt_dict, dt_list), protocol)
    for c in result.per_class:
        cv = c.curves
        for kind in ("precision", "recall"):
            d, loc, cgl, sgcl = (cv[f"{kind}_{n}"] for n in ("D", "L", "CgL", "SgCL"))
            defined = ~np.isnan(loc) & ~np.isnan(cgl) & ~np.isnan(sgcl)
            np.testing.assert_allclose(d[defined], (loc * cgl * sgcl)[defined], rtol=0, atol=1e-12)
            # An undefined conditional factor means nothing it conditions on: D is 0 there.
            assert np.all(d[~defined & ~np.isnan(d)] == 0)


def test_json_keys_next_to_the_box_keys():
    gt_dict, dt_list = confused_segm(4)
    doc = decompose(*_load(gt_dict, dt_list), RASTER).to_dict()
    entry = doc["per_class"][0]
    assert [k for k in entry if k.startswith("AP_")] == ["AP_D", "AP_L", "AP_CgL", "AP_SgCL"]
    assert list(entry["curve"]) == ["confidence", *CURVE_NAMES, *SEGM_CURVE_NAMES]
    assert list(doc["mean"]) == ["AP_D", "AP_L", "AP_CgL", "AP_SgCL"]


def test_a_good_box_with_a_poor_mask_is_a_segmentation_error():
    """Same tight box, but the detection's mask is a thin diagonal triangle: L and C|L hold, S fails."""
    gt_dict = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 2500, "bbox": [0, 0, 50, 50],
             "segmentation": [[0, 0, 50, 0, 50, 50, 0, 50]]},
        ],
    }  # fmt: skip
    dt_list = [
        {"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": [[0, 0, 50, 0, 50, 50, 0, 50]]},
        {"image_id": 1, "category_id": 1, "score": 0.8, "segmentation": [[0, 0, 50, 50, 0, 5]]},
    ]
    c = decompose(*_load(gt_dict, dt_list), EXACT).per_class[0]
    assert c.curves["precision_L"].tolist() == [1.0, 1.0]
    assert c.curves["precision_CgL"].tolist() == [1.0, 1.0]
    assert c.curves["precision_SgCL"].tolist() == [1.0, 0.5]
    assert c.curves["precision_D"].tolist() == [1.0, 0.5]


def test_analyze_decomposes_masks():
    gt_dict, dt_list = confused_segm(2)
    gt, dt = _load(gt_dict, dt_list)
    found = analyze(gt, dt, RASTER, errors=False, confusion=False)
    assert "AP_SgCL" in found.to_dict()["decomposition"]["mean"]
