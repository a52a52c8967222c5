"""Preset ``dota`` against the DOTA devkit's ``dota_evaluation_task1.voc_eval``, through real files.

The reference is the ``dotadevkit`` package (1.3.0: CAPTAIN-WHU/DOTA_devkit's
``dota_evaluation_task1.py`` and its compiled ``polyiou``, packaged), run on the same labelTxt and
Task1 files deteval reads. Per class: AP identical (``==``) and the number of non-difficult objects
(``npos``) equal, and mAP the mean of the APs.
Classes the devkit cannot score (no detection: its ``BB[sorted_ind, :]`` fails on an empty
array; no positive: it divides by 0) are checked on deteval's side only (AP 0, AP undefined).
"""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pytest

import deteval
from tests.crosscheck.generate_rotated import CLASSES, generate_rotated, write_dota

task1 = pytest.importorskip("dotadevkit.evaluate.task1")

SEEDS = range(24)


def _devkit(results: str, root: str, image_set: str, cls: str) -> tuple:
    with contextlib.redirect_stdout(io.StringIO()):  # the devkit prints its tp / fp arrays
        return task1.voc_eval(
            results + "/Task1_{:s}.txt",
            root + "/labelTxt/{:s}.txt",
            image_set,
            cls,
            ovthresh=0.5,
            use_07_metric=True,
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_dota_preset_equals_the_devkit(tmp_path, seed):
    data = generate_rotated(seed)
    root, results, image_set = write_dota(tmp_path, data)
    result = deteval.evaluate(root, results, protocol="dota")
    got = {c["name"]: c for c in result.per_class}
    aps = []
    for k, cls in enumerate(CLASSES):
        npos = sum(int(((data.gt_class[n] == k) & ~data.gt_difficult[n]).sum()) for n in data.image_names)
        n_det = sum(int((data.dt_class[n] == k).sum()) for n in data.image_names)
        if cls not in got:  # no object of the class at all: no category
            assert npos == 0
            continue
        assert got[cls]["num_gt"] == npos, (seed, cls)
        if npos == 0:
            assert got[cls]["AP"] is None or math.isnan(got[cls]["AP"]), (seed, cls)
            continue
        if n_det == 0:
            assert got[cls]["AP"] == 0.0, (seed, cls)
            aps.append(0.0)
            continue
        rec, prec, ap = _devkit(results, root, image_set, cls)
        assert got[cls]["AP"] == ap, f"seed {seed}, class {cls}: deteval {got[cls]['AP']!r}, devkit {ap!r}"
        aps.append(ap)
    if aps:
        assert result.metrics["mAP"] == pytest.approx(float(np.mean(aps)), abs=1e-15)


def test_generated_data_has_the_hard_cases():
    """The seeds above do contain each hard case the generator promises."""
    counts = dict.fromkeys(("zero-area", "angle 0", "angle pi/2", "angle wrap", "crowded", "difficult"), 0)
    for seed in SEEDS:
        data = generate_rotated(seed)
        for name in data.image_names:
            g = data.gt_xywhr[name]
            counts["zero-area"] += int((g[:, 3] == 0).sum())
            counts["angle 0"] += int((g[:, 4] == 0).sum())
            counts["angle pi/2"] += int((g[:, 4] == np.pi / 2).sum())
            counts["angle wrap"] += int(np.isclose(np.abs(g[:, 4]), np.pi, atol=1e-8).sum())
            counts["crowded"] += int(len(g) >= 20)
            counts["difficult"] += int(data.gt_difficult[name].sum())
    assert all(counts.values()), counts
