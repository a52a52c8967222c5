"""Preset ``coco-rotated`` against hotcoco 1.3's oriented boxes, ``COCOeval(gt, dt, "obb")``.

The same generated ``xywhr`` boxes (hotcoco's ``obb``: cx, cy, w, h, angle in radians) are
written as hotcoco's COCO JSON, scored by deteval's :class:`~deteval.evaluator.Evaluator` and by
``deteval.evaluate`` on the same JSON files (the COCO loader's ``obb`` records).
Compared: the twelve summary numbers and the full precision array (T x R x K x A x M).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import deteval
from deteval.evaluator import Evaluator
from tests.crosscheck.generate_rotated import CLASSES, generate_rotated

hotcoco = pytest.importorskip("hotcoco")


def _write(tmp_path, data, *, crowd_every: int = 0):
    images, annotations, results = [], [], []
    targets, preds = [], []
    ann_id = 1
    for i, name in enumerate(data.image_names, start=1):
        images.append({"id": i, "file_name": f"{name}.png", "width": 256, "height": 256})
        g, gc = data.gt_xywhr[name], data.gt_class[name]
        crowd = np.zeros(len(g), dtype=int)
        if crowd_every:
            crowd[::crowd_every] = 1
        area = g[:, 2] * g[:, 3] * 9  # scaled: objects spread over COCO's three size ranges
        for box, c, a, cr in zip(g, gc, area, crowd, strict=True):
            annotations.append(
                {
                    "id": ann_id,
                    "image_id": i,
                    "category_id": int(c) + 1,
                    "obb": [float(v) for v in box],
                    "area": float(a),
                    "iscrowd": int(cr),
                    "bbox": [0.0, 0.0, 1.0, 1.0],
                }
            )
            ann_id += 1
        d, dc, ds = data.dt_xywhr[name], data.dt_class[name], data.dt_score[name]
        for box, c, s in zip(d, dc, ds, strict=True):
            results.append(
                {"image_id": i, "category_id": int(c) + 1, "obb": [float(v) for v in box], "score": float(s)}
            )
        targets.append({"boxes": g, "labels": gc + 1, "area": area, "iscrowd": crowd, "image_id": i})
        preds.append({"boxes": d, "labels": dc + 1, "scores": ds})
    cats = [{"id": k + 1, "name": c} for k, c in enumerate(CLASSES)]
    (tmp_path / "gt.json").write_text(
        json.dumps({"images": images, "annotations": annotations, "categories": cats})
    )
    (tmp_path / "dt.json").write_text(json.dumps(results))
    return targets, preds


def _hotcoco(tmp_path):
    gt = hotcoco.COCO(str(tmp_path / "gt.json"))
    dt = gt.loadRes(str(tmp_path / "dt.json"))
    ev = hotcoco.COCOeval(gt, dt, "obb")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hotcoco: "oriented-box evaluation has no reference"
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("crowd_every", [0, 4])
def test_coco_rotated_equals_hotcoco(tmp_path, seed, crowd_every):
    data = generate_rotated(seed)
    targets, preds = _write(tmp_path, data, crowd_every=crowd_every)
    theirs = _hotcoco(tmp_path)
    ev = Evaluator("coco-rotated", box_format="xywhr", class_ids=[1, 2, 3])
    ev.update(preds, targets)
    ours = ev.compute()
    stats = [
        ours.metrics[k]
        for k in ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
    ]
    want = list(theirs.stats)
    np.testing.assert_allclose(np.nan_to_num(stats, nan=-1.0), want, rtol=0, atol=1e-12)
    precision = np.asarray(theirs.eval["precision"])
    np.testing.assert_allclose(np.nan_to_num(ours.precision, nan=-1.0), precision, rtol=0, atol=1e-12)
    # the same files read by deteval's COCO loader (`obb` records)
    from_files = deteval.evaluate(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "coco-rotated")
    np.testing.assert_allclose(np.nan_to_num(from_files.precision, nan=-1.0), precision, rtol=0, atol=1e-12)
