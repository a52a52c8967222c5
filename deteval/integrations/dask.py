"""Score predictions written as many shard files, matching each where it lies (Dask).

Distributed inference writes one COCO results JSON per worker (``preds-00.json``, ...).
:func:`evaluate_shards` loads every shard in a Dask task, matches it there against the ground
truth of its images, gathers only the :class:`~deteval.evaluate.MatchTable` of each task and
scores once: the numbers are exactly those of :func:`deteval.evaluate` on the shards
concatenated in path order.

Exactness
---------
Matching is exact per image, not per shard: two shards holding detections of one image
compete for the same ground truth and share one ``max_dets`` cap. So the first round only loads
each shard (it stays in its worker's memory) and reports which images it holds:

* shards that are image-disjoint (the usual case: a sampler splits images) are matched where
  they were loaded, each against its own images;
* otherwise the detections are regrouped by image into ``n_buckets`` image buckets (each
  loaded shard splits itself; a bucket task concatenates its parts in shard order) and each
  bucket is matched -- the only case where detections travel between workers.

Each detection keeps its position in the concatenation (shard offset + position in its file),
so ties in score break as in the concatenated file (``score_order: file``), and images with
ground truth but no detection in any shard are matched (as misses) in the driver.
"""

from __future__ import annotations

import dataclasses
import glob
import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.data import Detections, GroundTruth, shifted_index
from deteval.errors import ConfigError, InputError
from deteval.evaluate import EvalResult, check_protocol, inputs_summary, match, merge_match_tables, score
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import resolve_protocol

__all__ = ["evaluate_shards", "shard_paths"]


def shard_paths(spec: Any) -> list:
    """The shard files of ``spec``: a folder (its ``*.json``), a glob pattern, or a list of paths.

    Returns
    -------
    list of str
        Sorted by path (folder, glob), or in the given order (list); the concatenation order.

    Raises
    ------
    InputError
        Nothing matches.
    """
    if isinstance(spec, (list, tuple)):
        paths = [os.fspath(p) for p in spec]
    else:
        spec = os.fspath(spec)
        pattern = os.path.join(spec, "*.json") if os.path.isdir(spec) else spec
        paths = sorted(glob.glob(pattern))
    if not paths:
        raise InputError(
            f"{spec}: no prediction shard files; expected a folder of COCO results JSON "
            f"files, a glob pattern (preds-*.json) or a list of paths, found none"
        )
    return paths


def _load(gt: GroundTruth, path: str) -> Detections:
    return load_detections(path, gt)


def _summary(dt: Detections) -> tuple:
    """(number of detections, the images it holds, its warnings)."""
    return len(dt), np.unique(dt.image), dt.warnings


def _concat(parts: Sequence, offsets: Sequence) -> Detections:
    """Detections of several shards as one, ``order`` moved by each shard's offset."""
    parts = list(parts)
    if any(p.segmentation is not None for p in parts):
        segmentation: tuple | None = tuple(s for p in parts for s in (p.segmentation or (None,) * len(p)))
    else:
        segmentation = None
    cat = np.concatenate
    return Detections(
        image=cat([p.image for p in parts]),
        category=cat([p.category for p in parts]),
        box=cat([p.box for p in parts]).reshape(-1, 4),
        score=cat([p.score for p in parts]),
        order=cat([shifted_index(p.order, off) for p, off in zip(parts, offsets)]),
        has_box=cat([p.has_box for p in parts]),
        box_format=parts[0].box_format,
        segmentation=segmentation,
        source=parts[0].source,
    )


def _match_parts(
    gt: GroundTruth, parts: Sequence, offsets: Sequence, images: np.ndarray, protocol: Any
) -> Any:
    return match(gt, _concat(parts, offsets), protocol, images=images)


def _split(dt: Detections, image_bucket: np.ndarray, n_buckets: int) -> list:
    """The shard's detections per image bucket (file order kept inside each)."""
    bucket = image_bucket[dt.image]
    return [dt.take(np.flatnonzero(bucket == b)) for b in range(n_buckets)]


def _quiet_worker_logs() -> None:
    """In a worker of deteval's own temporary cluster: log only what is critical."""
    for name in ("distributed", "distributed.worker", "distributed.core", "distributed.comm"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _client(scheduler: Any) -> tuple:
    """(client, close) for ``scheduler``: "dask", "dask://ADDRESS" or a distributed Client."""
    if not isinstance(scheduler, str):
        if all(hasattr(scheduler, name) for name in ("submit", "gather", "scatter")):
            return scheduler, None
        raise ConfigError(
            f"evaluate_shards: scheduler must be 'dask', 'dask://ADDRESS' or a "
            f"dask.distributed Client, found {type(scheduler).__name__}"
        )
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(
            "evaluate_shards: dask.distributed is not installed; expected pip install deteval[dask]"
        ) from None
    if scheduler == "dask":
        try:
            from distributed import default_client

            return default_client(), None
        except ValueError:  # no client yet: a local cluster for this call
            # The temporary cluster is this call's own: its workers' log lines (a heartbeat that
            # fails while the cluster shuts down, with a traceback) are not the user's business. A
            # task's error still reaches the caller, raised by the future that ran it.
            cluster = LocalCluster(processes=True, dashboard_address=None, silence_logs=logging.CRITICAL)
            client = Client(cluster)
            client.run(_quiet_worker_logs)

            def close() -> None:
                client.close()
                cluster.close()

            return client, close
    if scheduler.startswith("dask://"):
        address = scheduler[len("dask://") :]
        client = Client(address if "://" in address else f"tcp://{address}")
        return client, client.close
    raise ConfigError(
        f"evaluate_shards: scheduler must be 'dask', 'dask://ADDRESS' or a dask.distributed "
        f"Client, found {scheduler!r}"
    )


def evaluate_shards(
    gt: Any,
    dt_paths_or_glob: Any,
    protocol: Any = "coco",
    *,
    scheduler: Any = "dask",
    n_buckets: int | None = None,
) -> EvalResult:
    """Evaluate predictions stored as shard files, matching each shard in a Dask task.

    Parameters
    ----------
    gt : GroundTruth, path or dict
        Loaded once, in the caller, and sent to every worker once.
    dt_paths_or_glob : str, os.PathLike or list
        A folder of COCO results JSON files, a glob pattern, or a list of paths
        (see :func:`shard_paths`); their concatenation in that order is the detections.
    protocol : str or Protocol
    scheduler : "dask", "dask://ADDRESS" or distributed.Client
        ``"dask"``: the current client, else a temporary ``LocalCluster`` (processes);
        ``"dask://host:port"``: a running scheduler.
    n_buckets : int, optional
        Image buckets when shards share images (default: the number of shards).

    Returns
    -------
    EvalResult
        Equal to ``deteval.evaluate(gt, <the shards concatenated>, protocol)`` (warnings are
        reported per shard file).
    """
    protocol = resolve_protocol(protocol)
    check_protocol(protocol)
    gt = gt if isinstance(gt, GroundTruth) else load_ground_truth(gt)
    paths = shard_paths(dt_paths_or_glob)
    shipped = (
        gt
        if protocol.iou_type == "segm" or gt.segmentation is None
        else dataclasses.replace(gt, segmentation=None)
    )  # boxes: the polygons never need to travel
    client, close = _client(scheduler)
    try:
        gt_future = client.scatter(shipped, broadcast=True)
        loaded = [client.submit(_load, gt_future, path, pure=False) for path in paths]
        summaries = client.gather([client.submit(_summary, d, pure=False) for d in loaded])
        sizes = np.array([s[0] for s in summaries], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        held = [s[1] for s in summaries]
        covered = np.zeros(gt.n_images, dtype=bool)
        for images in held:
            covered[images] = True
        is_disjoint = sum(len(h) for h in held) == int(covered.sum())
        futures = []
        if is_disjoint:
            for d, images, offset in zip(loaded, held, offsets):
                mask = np.zeros(gt.n_images, dtype=bool)
                mask[images] = True
                futures.append(
                    client.submit(_match_parts, gt_future, [d], [int(offset)], mask, protocol, pure=False)
                )
        else:
            n_buckets = max(1, int(n_buckets or len(paths)))
            image_bucket = np.arange(gt.n_images) % n_buckets
            split = [client.submit(_split, d, image_bucket, n_buckets, pure=False) for d in loaded]
            for b in range(n_buckets):
                parts = [client.submit(_item, s, b, pure=False) for s in split]
                futures.append(
                    client.submit(
                        _match_bucket,
                        gt_future,
                        parts,
                        offsets.tolist(),
                        image_bucket == b,
                        protocol,
                        pure=False,
                    )
                )
        tables = client.gather(futures)
    finally:
        if close is not None:
            close()
    if not is_disjoint:
        covered = np.ones(gt.n_images, dtype=bool)
    if not covered.all():  # images of no shard: their ground truth counts as missed
        empty = Detections(
            image=np.zeros(0, np.int64),
            category=np.zeros(0, np.int64),
            box=np.zeros((0, 4)),
            score=np.zeros(0),
            order=np.zeros(0, np.int64),
            has_box=np.zeros(0, bool),
            box_format=gt.box_format,
            segmentation=() if protocol.iou_type == "segm" else None,
            source=str(dt_paths_or_glob),
        )
        tables.append(match(gt, empty, protocol, images=~covered))
    warnings = gt.warnings + tuple(w for s in summaries for w in s[2])
    dt_name = (
        os.fspath(dt_paths_or_glob)
        if not isinstance(dt_paths_or_glob, (list, tuple))
        else f"{len(paths)} shard files"
    )
    inputs = inputs_summary(gt, names=(gt.source, dt_name), detections=int(sizes.sum()))
    return score(merge_match_tables(tables), gt, protocol, warnings=warnings, inputs=inputs)


def _item(parts: list, index: int) -> Detections:
    return parts[index]


def _match_bucket(gt: GroundTruth, parts: list, offsets: list, images: np.ndarray, protocol: Any) -> Any:
    return _match_parts(gt, parts, offsets, images, protocol)
