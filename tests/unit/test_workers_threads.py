"""``workers`` as kernel threads: the CLI's JSON is byte-identical for --workers 1, 2 and auto.

The thresholds of ``"auto"`` (deteval.evaluate.threads) are lowered to one unit of work and the
usable CPUs raised to 4, so that the small generated inputs do split (a spy on the kernel layer
checks that calls ran with more than one thread); the outputs must not change by a byte.
"""

from __future__ import annotations

import json

import pytest

from deteval import _parallel, _speedups
from deteval.cli import main
from deteval.evaluate import threads as per_thread
from tests.crosscheck.generate import generate
from tests.crosscheck.generate_keypoints import generate_keypoints
from tests.crosscheck.generate_lvis import generate_lvis

THREADED_KERNELS = {"_cacc.accumulate", "_csort.order_by_group_then_score", "_cmatch.match_coco"}


def _thread_counts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Record (kernel, threads) of every kernel call that passes a thread count."""
    seen: list[tuple[str, int]] = []
    real = _speedups.dispatch

    def spy(name, *args, **kwargs):
        threads = kwargs.get("threads", getattr(args[0], "threads", None) if args else None)
        if isinstance(threads, int):
            seen.append((name, threads))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(_speedups, "dispatch", spy)
    return seen


def _data(kind: str) -> tuple[dict, list, list[str]]:
    if kind == "lvis":
        gt, dt = generate_lvis(3, n_images=40, n_categories=12)
        return gt, dt, ["--protocol", "lvis"]
    if kind == "keypoints":
        gt, dt = generate_keypoints(4, n_images=40, n_categories=2)
        return gt, dt, ["--protocol", "coco-keypoints"]
    gt, dt = generate(5, n_images=80, n_classes=6)
    return gt, dt, ["--protocol", "coco", "--protocol", "voc2007"]


@pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning")  # generated data: zero-area boxes
@pytest.mark.parametrize("kind", ["boxes", "lvis", "keypoints"])
def test_cli_json_is_byte_identical_for_1_2_and_auto_worker_threads(kind, tmp_path, monkeypatch):
    gt, dt, protocols = _data(kind)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    monkeypatch.setattr(_parallel, "usable_cpus", lambda: 4)
    for name in per_thread.__all__:
        monkeypatch.setattr(per_thread, name, 1)
    seen = _thread_counts(monkeypatch)
    outputs = {}
    for workers in ("1", "2", "3", "auto"):
        seen.clear()
        out = tmp_path / f"out-{workers}.json"
        argv = ["evaluate", "--gt", str(tmp_path / "gt.json"), "--dt", str(tmp_path / "dt.json"), *protocols]
        assert main([*argv, "--format", "json", "-q", "--output", str(out), "--workers", workers]) == 0
        outputs[workers] = out.read_bytes()
        split = {name for name, threads in seen if threads > 1}
        if workers == "1":
            assert split == set(), seen
        else:  # every threaded kernel ran split
            assert split >= THREADED_KERNELS, seen
    assert outputs["2"] == outputs["1"]
    assert outputs["3"] == outputs["1"]
    assert outputs["auto"] == outputs["1"]


def test_auto_runs_one_thread_below_the_measured_sizes(monkeypatch):
    """``"auto"`` on a small input: every kernel call on one thread (no split where it cannot pay)."""
    import deteval

    monkeypatch.setattr(_parallel, "usable_cpus", lambda: 2)
    seen = _thread_counts(monkeypatch)
    gt_dict, dt_list = generate(5, n_images=80, n_classes=6)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    with pytest.warns(deteval.InputWarning):
        deteval.evaluate(gt, dt, "coco", workers="auto")
    assert seen
    assert {threads for _, threads in seen} == {1}
    assert {name for name, _ in seen} >= THREADED_KERNELS
