"""openimages, ultralytics-8.3 and detectron2-voc against their plain twins on generated datasets.

(The current ``ultralytics`` preset is checked against the installed package itself:
tests/crosscheck/test_ultralytics_installed.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval.api import evaluate, explain
from deteval.protocol import get_protocol
from tests.reference import slow_openimages, slow_ultralytics, slow_voc
from tests.support.presets import N_CLASS, _coco, _dataset


@pytest.mark.parametrize("seed", range(25))
def test_openimages_equals_mmdetections_tpfp_openimages(seed):
    images = _dataset(seed, group_rate=0.35)
    gt, dt = _coco(images)
    result = evaluate(gt, dt, "openimages")
    aps = []
    for c in range(N_CLASS):
        per_image = [
            (np.c_[db[dc == c], sc[dc == c]], gb[gc == c], grp[gc == c]) for gb, gc, grp, db, sc, dc in images
        ]
        aps.append(slow_openimages.eval_class(per_image))
    for c, ap in enumerate(aps):
        ours = result.per_class[c]["AP"]
        if ap is None:
            assert np.isnan(ours)
        else:  # mmdet stores AP in float32
            assert ours == pytest.approx(ap, abs=1e-6)


@pytest.mark.parametrize("seed", range(25))
def test_ultralytics_8_3_equals_its_validation_map(seed):
    images = _dataset(seed)
    gt, dt = _coco(images)
    result = evaluate(gt, dt, "ultralytics-8.3")
    iouv = get_protocol("ultralytics-8.3").iou_thresholds
    ref = slow_ultralytics.validate([(gb, gc, db, sc, dc) for gb, gc, _, db, sc, dc in images], iouv)
    ours = np.array([c["AP"] for c in result.per_class])
    defined = ours[~np.isnan(ours)]
    assert len(defined) == len(ref["classes"])
    per_class_ref = ref["ap"].mean(axis=1)
    assert np.allclose(defined, per_class_ref, rtol=0, atol=1e-15)
    assert result.metrics["mAP50"] == ref["mAP50"]
    assert result.metrics["mAP50-95"] == ref["mAP50-95"]


@pytest.mark.parametrize("seed", range(10))
def test_detectron2_voc_equals_voc_eval_over_ten_thresholds(seed):
    images = _dataset(seed, integer=True)
    gt, dt = _coco(images)
    result = evaluate(gt, dt, "detectron2-voc")
    names = [str(i) for i in range(len(images))]
    objects = {
        names[i]: [{"name": f"c{c}", "box": tuple(b), "difficult": False} for b, c in zip(gb, gc)]
        for i, (gb, gc, *_rest) in enumerate(images)
    }
    maps = []
    for thresh in range(50, 100, 5):
        aps = []
        for c in range(N_CLASS):
            dets = [
                (names[i], float(s), tuple(map(float, b)))
                for i, (_, _, _, db, sc, dc) in enumerate(images)
                for b, s, k in zip(db, sc, dc)
                if k == c
            ]
            if not any(o["name"] == f"c{c}" for objs in objects.values() for o in objs):
                continue
            aps.append(
                slow_voc.pyfrcnn_eval_class(names, objects, dets, f"c{c}", min_overlap=thresh / 100.0)["ap"]
            )
        maps.append(np.mean(aps))
    assert result.metrics["AP"] == pytest.approx(np.mean(maps), abs=1e-12)
    assert result.metrics["AP50"] == pytest.approx(maps[0], abs=1e-12)
    assert result.metrics["AP75"] == pytest.approx(maps[5], abs=1e-12)


@pytest.mark.parametrize(
    ("a", "b"), [("coco", "ultralytics"), ("voc2010", "openimages"), ("voc2007", "detectron2-voc")]
)
def test_explain_walk_adds_up_to_the_total(a, b):
    gt, dt = _coco(_dataset(3, group_rate=0.3))
    walk = explain(gt, dt, a, b)
    assert sum(s.change for s in walk.steps) == pytest.approx(walk.total, abs=1e-12)
    assert walk.steps
    assert walk.end == pytest.approx(np.nanmean([c["AP"] for c in evaluate(gt, dt, b).per_class]), abs=1e-12)
