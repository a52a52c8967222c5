"""deteval.analysis.pr_auc against faster-coco-eval's mAUC (``extra_calc=True``) on generated datasets.

The rule: per (class, area range), deteval's area of faster-coco-eval's own precision block
equals ``COCOeval_faster.calc_auc`` of it exactly. The numbers: deteval's precision is
pycocotools' bit for bit, faster-coco-eval's C++ accumulation is one float step off it now and
then, so deteval's areas and ``mAUC`` equal faster-coco-eval's ``mAUC_50`` to 1e-12.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math

import numpy as np
import pytest

import deteval
from deteval.accumulate import recall_thresholds
from deteval.analysis import _flattened_auc, pr_auc
from tests.crosscheck.generate import generate

fce = pytest.importorskip("faster_coco_eval")
from faster_coco_eval import COCO, COCOeval_faster  # noqa: E402

DATASETS = {f"small-{s}": dict(seed=s) for s in range(0, 30)}
DATASETS.update({f"medium-{s}": dict(seed=s, max_images=40, max_classes=8) for s in range(1000, 1003)})
DATASETS.update(
    {f"many-dets-{s}": dict(seed=s, max_images=4, max_classes=3, force_many_dets=True) for s in (2100, 2101)}
)


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_mauc_equals_faster_coco_eval(name: str) -> None:
    gt, dt = generate(**DATASETS[name])
    if not dt:
        pytest.skip("the generator made no detection for this seed")
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(copy.deepcopy(gt))
        coco_dt = coco_gt.loadRes(copy.deepcopy(dt))
        ev = COCOeval_faster(coco_gt, coco_dt, "bbox", extra_calc=True, print_function=lambda *a: None)
        ev.run()
    result = deteval.evaluate(gt, dt, "coco")
    ours = pr_auc(result)
    assert ours["mAUC"] == pytest.approx(ev.stats_as_dict["mAUC_50"], abs=1e-12)
    recall_thr = np.asarray(recall_thresholds(result.protocol), dtype=np.longdouble)
    step = recall_thr[1:] - recall_thr[:-1]
    precision = ev.eval["precision"]
    for k in range(precision.shape[2]):
        for a in range(precision.shape[3]):
            block = precision[0, :, k, a, :].ravel()
            theirs = COCOeval_faster.calc_auc(ev.params.recThrs, block)
            assert _flattened_auc(recall_thr, step, block) == theirs, (k, a)
            if theirs == -1:
                assert math.isnan(ours["auc"][k, a])
            else:
                assert ours["auc"][k, a] == pytest.approx(theirs, abs=1e-12), (k, a)
