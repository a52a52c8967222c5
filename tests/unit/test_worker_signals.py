"""SIGTERM and Ctrl-C while worker processes run: the parent reports once, workers never print.

The real CLI in a real process, real signals, real forked workers (matching shards and bootstrap
resamples).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from deteval.sharding import usable_cpus
from tests import ROOT
from tests.support.processes import send_each, state_of, workers_of

pytestmark = pytest.mark.skipif(usable_cpus() < 2, reason="one CPU: no worker processes")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    """4,000 images, 10 objects and 60 detections each: matching in workers takes a while."""
    folder = tmp_path_factory.mktemp("workers")
    rng = np.random.default_rng(0)
    n_images, n_gt, n_dt = 4000, 10, 60
    gt_xy, dt_xy = rng.uniform(0, 500, (n_images * n_gt, 2)), rng.uniform(0, 500, (n_images * n_dt, 2))
    scores = rng.random(n_images * n_dt)
    anns = ",".join(
        f'{{"id":{k + 1},"image_id":{k // n_gt + 1},"category_id":{1 + k % 3},'
        f'"bbox":[{x:.2f},{y:.2f},40,40],"area":1600,"iscrowd":0,{_square(x, y)}}}'
        for k, (x, y) in enumerate(gt_xy.tolist())
    )
    images = ",".join(f'{{"id":{i + 1},"width":640,"height":640}}' for i in range(n_images))
    cats = ",".join(f'{{"id":{c},"name":"c{c}"}}' for c in (1, 2, 3))
    gt, dt = folder / "gt.json", folder / "dt.json"
    gt.write_text(f'{{"images":[{images}],"annotations":[{anns}],"categories":[{cats}]}}')
    dt.write_text(
        "["
        + ",".join(
            f'{{"image_id":{k // n_dt + 1},"category_id":{1 + k % 3},"bbox":[{x:.2f},{y:.2f},40,40],'
            f'"score":{s:.6f},{_square(x, y)}}}'
            for k, ((x, y), s) in enumerate(zip(dt_xy.tolist(), scores.tolist()))
        )
        + "]"
    )
    return gt, dt


def _square(x: float, y: float) -> str:
    """The box as a polygon: matching in processes is for the exact (shapely) masks."""
    return f'"segmentation":[[{x:.2f},{y:.2f},{x + 40:.2f},{y:.2f},{x + 40:.2f},{y + 40:.2f},{x:.2f},{y + 40:.2f}]]'


def start(argv: list, *, own_group: bool = False) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "deteval", *map(str, argv)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a job of its own, as a shell starts one: a new process group in the same session (a
        # new session would orphan the group, and the kernel hangs up an orphaned group with a
        # stopped member as soon as any member exits)
        process_group=0 if own_group else None,
        # a background job starts with SIGINT ignored and Python keeps ignoring it: give the
        # child the default, as a terminal does
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def signal_while_workers_run(
    proc: subprocess.Popen, signum: int, *, generation: int, group: bool = False
) -> tuple[str, str]:
    """Send ``signum`` while the ``generation``-th set of workers runs (1: matching, 2: bootstrap).

    The workers are frozen with SIGSTOP the moment they are seen, the signal is sent, and they
    are continued: the signal always finds them alive however fast the machine is (the parent
    blocks SIGINT/SIGTERM around each fork, so a worker stopped right after its fork still gets
    the worker dispositions before any signal is delivered).
    """
    seen: set[int] = set()
    current: set[int] = set()
    deadline = time.time() + 90
    for round_ in range(1, generation + 1):
        current = set()
        while time.time() < deadline and proc.poll() is None and not current:
            current = workers_of(proc.pid) - seen
            if not current:
                time.sleep(0.002)
        send_each(current, signal.SIGSTOP)
        seen |= current
        if round_ < generation:  # an earlier set of workers: let it go on
            send_each(current, signal.SIGCONT)
    stopped: set[int] = set()
    until = time.time() + 5  # SIGSTOP takes effect asynchronously
    while current and time.time() < until and not stopped:
        stopped = {pid for pid in current if state_of(pid) == "t" or state_of(pid) == "T"}
        time.sleep(0.002)
    if proc.poll() is not None or not stopped:
        send_each(current | {proc.pid}, signal.SIGKILL)  # the workers too: they hold stdout open
        proc.communicate()
        pytest.fail("the workers had ended before they could be frozen: make the run bigger")
    if group:  # Ctrl-C in a terminal: the whole foreground process group gets SIGINT
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    time.sleep(0.05)  # the parent handles its signal while its workers are still frozen
    send_each(current, signal.SIGCONT)
    return proc.communicate(timeout=120)


#: (extra arguments, which set of workers gets the signal)
# Box matching runs on kernel threads (no processes): the bootstrap's workers are the first set.
BOOTSTRAP = (["--workers", 2, "--bootstrap", 1000, "--protocol", "coco", "-q"], 1)
# Matching runs in processes where it runs in Python (exact polygon masks); boxes use kernel threads.
MATCHING = (["--workers", 2, "--protocol", "coco-exact-masks", "--iou-type", "segm", "-q"], 1)


# The fast tier runs three cases: SIGTERM to the parent alone, and Ctrl-C to the whole process group
# while the bootstrap's and while the matching's workers run (both signals, both ways of sending,
# both kinds of worker); the other three are slow (docs/testing.md), each part of them in a fast case.
@pytest.mark.parametrize(
    ("extra", "signum", "group", "code", "message"),
    [
        pytest.param(
            BOOTSTRAP, signal.SIGTERM, False, 143, "deteval: terminated (SIGTERM)", id="bootstrap-SIGTERM"
        ),
        pytest.param(
            BOOTSTRAP,
            signal.SIGINT,
            False,
            130,
            "deteval: interrupted (Ctrl-C)",
            id="bootstrap-SIGINT",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            BOOTSTRAP, signal.SIGINT, True, 130, "deteval: interrupted (Ctrl-C)", id="bootstrap-Ctrl-C-group"
        ),
        pytest.param(
            BOOTSTRAP,
            signal.SIGTERM,
            True,
            143,
            "deteval: terminated (SIGTERM)",
            id="bootstrap-SIGTERM-group",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            MATCHING,
            signal.SIGTERM,
            False,
            143,
            "deteval: terminated (SIGTERM)",
            id="matching-SIGTERM",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            MATCHING, signal.SIGINT, True, 130, "deteval: interrupted (Ctrl-C)", id="matching-Ctrl-C-group"
        ),
    ],
)
def test_a_signal_during_workers_is_one_line_from_the_parent(inputs, extra, signum, group, code, message):
    gt, dt = inputs
    proc = start(["evaluate", "--gt", gt, "--dt", dt, *extra[0]], own_group=group)
    out, err = signal_while_workers_run(proc, signum, generation=extra[1], group=group)
    assert "Traceback" not in err, err
    assert proc.returncode == code, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(message), err
    assert out == ""
