"""Evaluator.sync across real processes: every rank gets the single-process result.

With torch installed: two gloo ranks (torch.multiprocessing spawn, ``file://`` init). Without
it: the same protocol over real ``multiprocessing`` processes with a pipe-based all-gather
(``gather(obj) -> [obj of rank 0, obj of rank 1, ...]`` on every rank, the contract of
``torch.distributed.all_gather_object``).
"""

import importlib.util
import multiprocessing as mp
import random

import pytest

import deteval
from deteval.evaluator import Evaluator
from tests.crosscheck.generate import generate
from tests.support.evaluator import metrics, per_image

# Generated data trigger input warnings and notes through deteval.evaluate; incidental here
# (tests/unit/test_api.py checks the warnings themselves).
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]

WORLD = 3
SEED = 11


def _rank_evaluator(rank, world):
    """Rank ``rank``'s share of the images (strided, as DistributedSampler does), in random batches."""
    gt, dt = generate(SEED, max_images=40, max_classes=5)
    ids, targets, preds = per_image(gt, dt)
    mine = ids[rank::world]
    ev = Evaluator("coco", box_format="xywh", class_ids=[c["id"] for c in gt["categories"]])
    rng = random.Random(rank)
    i = 0
    while i < len(mine):
        k = rng.randint(1, 4)
        chunk = mine[i : i + k]
        i += k
        ev.update(
            [{**preds[c], "image_id": c} for c in chunk], [{**targets[c], "image_id": c} for c in chunk]
        )
    return ev


def _reference():
    gt, dt = generate(SEED, max_images=40, max_classes=5)
    return metrics(deteval.evaluate(gt, dt, "coco"))


def _pipe_worker(rank, conn):
    def gather(obj):
        conn.send(obj)
        return conn.recv()

    ev = _rank_evaluator(rank, WORLD)
    conn.send(("result", metrics(ev.sync(gather=gather).compute())))
    conn.close()


def test_sync_over_processes_with_a_pipe_gather():
    ctx = mp.get_context("fork")
    pipes = [ctx.Pipe() for _ in range(WORLD)]
    procs = [ctx.Process(target=_pipe_worker, args=(r, pipes[r][1]), daemon=True) for r in range(WORLD)]
    for p in procs:
        p.start()
    try:
        states = [pipes[r][0].recv() for r in range(WORLD)]  # the all-gather: collect, then broadcast
        for r in range(WORLD):
            pipes[r][0].send(states)
        results = [pipes[r][0].recv() for r in range(WORLD)]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
    reference = _reference()
    assert all(kind == "result" and value == reference for kind, value in results)
    assert all(p.exitcode == 0 for p in procs)


def _gloo_worker(rank, world, init_file, queue):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        ev = _rank_evaluator(rank, world)
        queue.put((rank, metrics(ev.sync().compute())))
    finally:
        dist.destroy_process_group()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_sync_over_gloo_ranks(tmp_path):  # pragma: no cover - needs torch
    import torch.multiprocessing as tmp

    ctx = tmp.get_context("spawn")
    queue = ctx.Queue()
    tmp.start_processes(
        _gloo_worker, args=(2, str(tmp_path / "init"), queue), nprocs=2, join=True, start_method="spawn"
    )
    results = dict(queue.get(timeout=60) for _ in range(2))
    assert results[0] == results[1] == _reference()
