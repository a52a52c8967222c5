"""Memory estimates refuse, before allocating, the runs whose big arrays would not fit.

Each refusal is triggered on small inputs with a ``--memory-limit`` (``memory_limit`` in the
API) just below its estimate and just above the estimates checked before it, so every test
shows one refusal: exit 3 with the message (what, how much, what to do) and no traceback on
the CLI, :class:`~deteval.errors.ConfigError` from the API.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.errors import ConfigError
from deteval.memory import (
    BYTES_PER_PAIR,
    available_bytes,
    format_bytes,
    match_bytes,
    memory_limit,
    require,
    require_match,
)
from tests import ROOT

GOOD_GT = ROOT / "fixtures" / "coco" / "gt.json"
GOOD_DT = ROOT / "fixtures" / "coco" / "dt.json"
N_DET_FIXTURE = 13  # fixtures/coco/dt.json: 13 detections, all within max_dets
# T x R x K x A x M: precision and scores, and the per-max_dets working array (precision_bytes)
PRECISION_FIXTURE = 8 * 10 * 101 * 4 * 4 * (2 * 3 + 1)


def run(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, err


def crowded_image(tmp_path: Path, n_gt: int = 300, n_det: int = 100) -> tuple[Path, Path]:
    """One image, one class, ``n_gt`` objects and ``n_det`` detections: n_gt x n_det pairs."""
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 600, (n_gt + n_det, 2)).round(2).tolist()
    gt = {
        "images": [{"id": 1, "width": 640, "height": 640}],
        "categories": [{"id": 1, "name": "thing"}],
        "annotations": [
            {"id": k + 1, "image_id": 1, "category_id": 1, "bbox": [x, y, 30, 30], "area": 900, "iscrowd": 0}
            for k, (x, y) in enumerate(xy[:n_gt])
        ],
    }
    dt = [
        {"image_id": 1, "category_id": 1, "bbox": [x, y, 30, 30], "score": round(0.01 + k / (2 * n_det), 4)}
        for k, (x, y) in enumerate(xy[n_gt:])
    ]
    gt_path, dt_path = tmp_path / "crowded_gt.json", tmp_path / "crowded_dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(dt))
    return gt_path, dt_path


# --- the estimates --------------------------------------------------------------------------


def test_match_bytes_grows_with_lanes_and_detections():
    assert match_bytes(4, 10, 0) == 0
    assert match_bytes(4, 10, 2000) == 2 * match_bytes(4, 10, 1000)
    assert match_bytes(4, 20, 1000) > match_bytes(4, 10, 1000) > match_bytes(1, 10, 1000)
    # At least the two bool flags the table keeps per (lane, detection).
    assert match_bytes(4, 10, 1000) >= 2 * 4 * 10 * 1000


def test_require_passes_under_the_limit_and_without_a_limit():
    with memory_limit(2**20):
        require(2**20, what="x", hint="y")  # equal to the limit: fits
        require_match(4, 10, 10)
        assert available_bytes() == 2**20
    with memory_limit(None):
        limit = available_bytes()
    assert limit is None or limit > 0


def test_require_match_message_says_what_how_much_and_what_to_do():
    with memory_limit(10_000), pytest.raises(ConfigError) as info:
        require_match(4, 1000, 50)
    message = str(info.value)
    assert "4 area ranges x 1000 IoU thresholds x 50 detections" in message
    assert format_bytes(match_bytes(4, 1000, 50)) in message
    assert "9.8 KiB available (--memory-limit)" in message
    for advice in ("fewer IoU thresholds or area ranges", "--memory-limit"):
        assert advice in message
    # --workers runs threads sharing this process's memory: it is no remedy, and not offered
    assert "--workers" not in message


def test_small_requests_are_not_weighed_against_memavailable_alone(monkeypatch):
    """Up to UNWEIGHED_BYTES, MemAvailable is not read; a --memory-limit and RLIMIT_AS still weigh."""
    import deteval.memory as memory_module

    reads = []

    def tiny_meminfo(path, key):
        reads.append(path)
        return 4096 if path == "/proc/meminfo" else None

    monkeypatch.setattr(memory_module, "_proc_kib", tiny_meminfo)
    monkeypatch.setattr(memory_module, "address_space_left", lambda: None)
    require(memory_module.UNWEIGHED_BYTES, what="x", hint="y")
    assert available_bytes(memory_module.UNWEIGHED_BYTES) is None
    assert reads == []
    with pytest.raises(ConfigError, match="MemAvailable"):
        require(memory_module.UNWEIGHED_BYTES + 1, what="x", hint="y")
    assert available_bytes(memory_module.UNWEIGHED_BYTES + 1) == 4096
    with memory_limit(1000), pytest.raises(ConfigError, match="--memory-limit"):
        require(1001, what="x", hint="y")
    monkeypatch.setattr(memory_module, "address_space_left", lambda: (2000, 10**6))
    with pytest.raises(ConfigError):
        require(3000, what="x", hint="y")


def test_memory_limit_is_restored_after_the_block():
    with memory_limit(123):
        with memory_limit(456):
            assert available_bytes() == 456
        assert available_bytes() == 123


# --- each refusal, on the CLI and in the API --------------------------------------------------


def test_lanes_x_detections_refused_by_the_cli(capsys):
    needed = match_bytes(4, 10, N_DET_FIXTURE)
    code, err = run(capsys, "evaluate", "--gt", GOOD_GT, "--dt", GOOD_DT, "--memory-limit", needed - 1)
    assert code == 3
    assert "the lanes x detections outcome arrays of matching" in err
    assert f"4 area ranges x 10 IoU thresholds x {N_DET_FIXTURE} detections" in err
    assert f"need {format_bytes(needed)}" in err
    assert "--memory-limit" in err
    assert "--workers" not in err  # threads share this memory: no remedy


@pytest.mark.filterwarnings("ignore::deteval.UndefinedMetricWarning")  # the fixture's 'bird'
def test_lanes_x_detections_refused_by_the_api():
    needed = match_bytes(4, 10, N_DET_FIXTURE)
    with memory_limit(needed - 1), pytest.raises(ConfigError, match="lanes x detections"):
        deteval.evaluate(str(GOOD_GT), str(GOOD_DT), "coco")
    with memory_limit(max(needed, PRECISION_FIXTURE)):
        assert deteval.evaluate(str(GOOD_GT), str(GOOD_DT), "coco").metrics["AP"] >= 0


def test_more_thresholds_need_more_for_the_same_detections(capsys):
    """A protocol with 100 IoU thresholds is refused where the default 10 are accepted."""
    limit = match_bytes(4, 10, N_DET_FIXTURE) + 1
    thresholds = "[" + ",".join(f"{0.5 + 0.004 * k:.3f}" for k in range(100)) + "]"
    code, err = run(
        capsys,
        "evaluate",
        "--gt",
        GOOD_GT,
        "--dt",
        GOOD_DT,
        "--set",
        f"iou_thresholds={thresholds}",
        "--memory-limit",
        limit,
    )
    assert code == 3
    assert "4 area ranges x 100 IoU thresholds" in err


def test_candidate_pairs_refused_by_the_cli(capsys, tmp_path):
    gt, dt = crowded_image(tmp_path)
    pairs = 300 * 100 * BYTES_PER_PAIR
    limit = pairs - 1
    # candidate pairs are checked first (then the lanes x detections arrays)
    code, err = run(capsys, "evaluate", "--gt", gt, "--dt", dt, "--memory-limit", limit)
    assert code == 3
    assert "30000 candidate (detection, ground truth) pairs" in err
    assert f"need {format_bytes(pairs)}" in err


def test_candidate_pairs_refused_by_the_api(tmp_path):
    gt, dt = crowded_image(tmp_path)
    with memory_limit(300 * 100 * BYTES_PER_PAIR - 1), pytest.raises(ConfigError, match="candidate"):
        deteval.evaluate(str(gt), str(dt), "coco")


def test_precision_arrays_refused_by_the_cli(capsys):
    limit = PRECISION_FIXTURE - 1
    assert match_bytes(4, 10, N_DET_FIXTURE) < limit
    code, err = run(capsys, "evaluate", "--gt", GOOD_GT, "--dt", GOOD_DT, "--memory-limit", limit)
    assert code == 3
    assert "the precision and score arrays (10 x 101 x 4 x 4 x 3" in err
    assert f"need {format_bytes(PRECISION_FIXTURE)}" in err


def test_precision_arrays_refused_by_the_api():
    with memory_limit(PRECISION_FIXTURE - 1), pytest.raises(ConfigError, match="precision and score"):
        deteval.evaluate(str(GOOD_GT), str(GOOD_DT), "coco")


def test_enough_memory_scores_as_without_a_limit(capsys):
    code, _ = run(capsys, "evaluate", "--gt", GOOD_GT, "--dt", GOOD_DT, "--memory-limit", "1G")
    assert code == 0


def test_bad_memory_limit_is_a_usage_error(capsys):
    code = main(["evaluate", "--gt", str(GOOD_GT), "--dt", str(GOOD_DT), "--memory-limit", "lots"])
    assert code == 2
    assert "expected a size such as 8G or 512M, found lots" in capsys.readouterr().err


#: The start of the fresh processes that read glibc's heap counters (mallinfo2; "skip" elsewhere).
_MALLINFO = """
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
if not hasattr(libc, "mallinfo2"):
    print("skip"); sys.exit()
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
"""


def test_map_large_allocations_keeps_large_arrays_in_their_own_mappings():
    """With the call, arrays of 200 KiB get their own mappings even after a large free.

    A fresh process frees an 8 MiB array (glibc then raises its mmap threshold to 8 MiB), then
    allocates ten 200 KiB arrays: with the call each gets its own mapping (returned to the system
    when freed); without it they come from the heap. Counted by glibc's mallinfo2.
    """
    import subprocess
    import sys

    from tests import ROOT

    code = (
        _MALLINFO
        + """
from deteval.memory import map_large_allocations
made = map_large_allocations() if sys.argv[1] == "1" else False
libc.free(libc.malloc(8 << 20))  # a mapped block freed: glibc's threshold rises to 8 MiB
before = libc.mallinfo2().hblks
blocks = [libc.malloc(200 << 10) for _ in range(10)]
print(made, libc.mallinfo2().hblks - before)
"""
    )
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    found = {}
    for flag in ("0", "1"):
        out = subprocess.run(
            [sys.executable, "-c", code, flag], capture_output=True, text=True, check=True, cwd=ROOT, env=env
        ).stdout.split()
        if out == ["skip"]:
            pytest.skip("not glibc (no mallinfo2)")
        found[flag] = (out[0], int(out[1]))
    assert found["0"] == ("False", 0)
    assert found["1"][0] == "True"
    assert found["1"][1] >= 5, found


# --- the user's cases: a real address-space limit (ulimit -v), the real CLI in a subprocess ------


def _run_under_rlimit_as(limit: int, argv: list, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``python -m deteval *argv`` with RLIMIT_AS set to ``limit`` bytes before it starts."""

    def limit_address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "deteval", *map(str, argv)],
        preexec_fn=limit_address_space,
        env={**os.environ, "PYTHONPATH": str(ROOT), "DETEVAL_NO_EXTENSION": "0"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _assert_one_line_refusal(proc, *, what: str) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "MemoryError" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("deteval: error: ")
    assert what in lines[0]


def test_ten_thousand_thresholds_over_80_classes_under_a_2gib_address_space(tmp_path):
    """The user's run: 10,000 IoU thresholds x 80 classes under ``ulimit -v 2G``.

    One area range and one max_dets: it was a MemoryError traceback in the accumulation; the
    estimate now counts its working array and is checked against the address space left.
    """
    rng = np.random.default_rng(0)
    gt = {
        "images": [{"id": i + 1, "width": 640, "height": 480} for i in range(20)],
        "categories": [{"id": k + 1, "name": f"c{k}"} for k in range(80)],
        "annotations": [],
    }
    dt = []
    for n in range(200):
        c, x, y = int(rng.integers(1, 81)), *rng.uniform(0, 400, 2).round(1).tolist()
        gt["annotations"].append(
            {
                "id": n + 1,
                "image_id": n // 10 + 1,
                "category_id": c,
                "bbox": [x, y, 50, 50],
                "area": 2500,
                "iscrowd": 0,
            }
        )
        dt.append(
            {"image_id": n // 10 + 1, "category_id": c, "bbox": [x + 2, y, 50, 50], "score": 0.5 + n / 1000}
        )
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    thresholds = np.linspace(0.5, 0.95, 10_000).tolist()
    (tmp_path / "p.yaml").write_text(
        "extends: coco\nname: fine\narea_ranges: {all: [0, 1e10]}\nmax_dets: [100]\n"
        f"iou_thresholds: {json.dumps(thresholds)}\n"
    )
    proc = _run_under_rlimit_as(
        2 * 2**30, ["evaluate", "--gt", "gt.json", "--dt", "dt.json", "--protocol", "p.yaml", "-q"], tmp_path
    )
    _assert_one_line_refusal(proc, what="the precision and score arrays (10000 x 101 x 80 x 1 x 1")
    assert "RLIMIT_AS" in proc.stderr


def test_one_image_with_100000_ground_truths_under_a_3gib_address_space(tmp_path):
    """The user's run: one image, 100,000 objects, 1,000 detections, ``voc2007``, ``ulimit -v 3G``.

    It was a MemoryError traceback while building the 10**8 candidate pairs.
    """
    gt, dt = crowded_image(tmp_path, n_gt=100_000, n_det=1_000)
    proc = _run_under_rlimit_as(
        3 * 2**30, ["evaluate", "--gt", gt, "--dt", dt, "--protocol", "voc2007"], tmp_path
    )
    _assert_one_line_refusal(proc, what="100000000 candidate (detection, ground truth) pairs")
    assert "RLIMIT_AS" in proc.stderr


def test_a_memory_error_the_estimates_miss_is_the_same_one_line_refusal(tmp_path):
    """An allocation no estimate covers (reading the input) fails: the same one-line refusal.

    A JSON file that does not fit in the address space left: exit 3, not a MemoryError traceback.
    """
    gt, dt = crowded_image(tmp_path, n_gt=100_000, n_det=10)  # a 12 MiB ground-truth file
    script = (
        "import re, resource, sys\n"
        "from deteval.cli import main\n"
        "import deteval.cli.scoring\n"
        "vm = int(re.search(r'VmSize:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + (8 << 20), resource.RLIM_INFINITY))\n"
        f"sys.exit(main(['evaluate', '--gt', {str(gt)!r}, '--dt', {str(dt)!r}]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    _assert_one_line_refusal(proc, what="out of memory")


def test_map_large_allocations_keeps_freed_heap_space_until_released():
    """Freed space at the top of the heap is kept (``keep_free``) for the next arrays, until released.

    In a fresh process with the 8 MiB threshold, a 4 MiB block (from the heap) is freed: glibc's
    fixed 128 KiB trim threshold would give it back at once (the next chunk's arrays then fault
    it in afresh); ``keep_free`` keeps it, and :func:`release_free_memory` gives it back. Measured
    by glibc's mallinfo2 ``keepcost`` (the releasable space at the top of the heap).
    """
    import os
    import subprocess
    import sys

    from tests import ROOT

    code = (
        _MALLINFO
        + """
from deteval.memory import map_large_allocations, release_free_memory
keep = None if sys.argv[1] == "default" else int(sys.argv[1])
made = map_large_allocations(8 << 20, keep_free=keep)
libc.free(libc.malloc(4 << 20))  # below the mmap threshold: from the top of the heap
kept = libc.mallinfo2().keepcost
released = release_free_memory()
print(made, kept, released, libc.mallinfo2().keepcost)
"""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    found = {}
    for keep in ("131072", "default"):
        out = subprocess.run(
            [sys.executable, "-c", code, keep], capture_output=True, text=True, check=True, cwd=ROOT, env=env
        ).stdout.split()
        if out == ["skip"]:
            pytest.skip("not glibc (no mallinfo2)")
        found[keep] = (out[0], int(out[1]), out[2], int(out[3]))
    # glibc's 128 KiB: given back when freed
    assert found["131072"][0] == "True"
    assert found["131072"][1] < 1 << 20, found
    # the default, 4 x 8 MiB: kept for the next arrays, then released
    made, kept, released, after = found["default"]
    assert made == "True"
    assert kept >= 4 << 20, found
    assert released == "True"
    assert after < 1 << 20, found
