"""``MeanAveragePrecision`` synced by torchmetrics itself over two gloo ranks (CPU).

Each rank updates with its share of the images; ``compute()`` gathers the list states through
torchmetrics' ``Metric._sync_dist`` (no deteval gather). Every key must equal what the installed
torchmetrics' ``MeanAveragePrecision`` gives in the same ranks, and what one process gives when
fed the images in the gathered order (torchmetrics interleaves ranks image by image).
"""

from __future__ import annotations

import random
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")
pytest.importorskip("torchvision")

from tests.crosscheck.generate import generate  # noqa: E402
from tests.crosscheck.generate_segm import generate_segm  # noqa: E402
from tests.support.torchmetrics import coco_batches  # noqa: E402

WORLD = 2


def _items(kind: str) -> list:
    """(pred, target) per image, an even number of images."""
    if kind == "bbox":
        gt, dt = generate(5, n_images=10, n_classes=3)
        batches = coco_batches(gt, dt, random.Random(0), box_format="xyxy")
    else:
        gt, dt = generate_segm(2, n_images=4, n_classes=2)
        batches = coco_batches(gt, dt, random.Random(0), box_format="xyxy", masks=True)
    return [(p, t) for preds, target in batches for p, t in zip(preds, target, strict=True)]


OPTIONS = {
    "bbox": {"class_metrics": True, "extended_summary": True},
    "segm": {"iou_type": ("bbox", "segm"), "class_metrics": True},
}


def _plain(out: dict) -> dict:
    def one(v):
        if isinstance(v, dict):
            return {k: one(x) for k, x in v.items()}
        return v.tolist() if isinstance(v, torch.Tensor) else v

    return {k: one(v) for k, v in out.items()}


def _worker(rank: int, init_file: str, queue) -> None:  # pragma: no cover - runs in the spawned ranks
    import torch.distributed as dist
    from torchmetrics.detection import MeanAveragePrecision as Reference

    from deteval.integrations.torchmetrics import MeanAveragePrecision

    warnings.simplefilter("ignore")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        for kind, options in OPTIONS.items():
            mine = _items(kind)[rank::WORLD]
            results = []
            for cls in (MeanAveragePrecision, Reference):
                metric = cls(**options)
                for k in range(0, len(mine), 2):
                    chunk = mine[k : k + 2]
                    metric.update([p for p, _ in chunk], [t for _, t in chunk])
                results.append(_plain(metric.compute()))
            queue.put((kind, rank, results))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_torchmetrics_sync_over_gloo(tmp_path):
    import torch.multiprocessing as tmp

    from deteval.integrations.torchmetrics import MeanAveragePrecision

    ctx = tmp.get_context("spawn")
    queue = ctx.Queue()
    context = tmp.start_processes(
        _worker, args=(str(tmp_path / "init"), queue), nprocs=WORLD, join=False, start_method="spawn"
    )
    # read before joining: a rank cannot exit while its results sit unread in the queue's pipe
    got = [queue.get(timeout=300) for _ in range(WORLD * len(OPTIONS))]
    while not context.join(timeout=60):
        pass
    for kind, options in OPTIONS.items():
        items = _items(kind)
        ranks = [items[r::WORLD] for r in range(WORLD)]
        interleaved = [ranks[r][i] for i in range(len(ranks[0])) for r in range(WORLD)]
        single = MeanAveragePrecision(**options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            single.update([p for p, _ in interleaved], [t for _, t in interleaved])
        expected = _plain(single.compute())
        for result_kind, _, (ours, theirs) in got:
            if result_kind == kind:
                assert ours == theirs, kind
                assert ours == expected, kind
