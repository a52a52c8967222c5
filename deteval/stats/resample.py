"""Score a matched detector on every resample: chunks, worker processes, input checks.

:func:`resample_metrics` plans the re-accumulation once (:mod:`deteval.stats.plan`), then
scores the resamples chunk by chunk (:mod:`deteval.stats.weighted`), optionally split over
forked worker processes; the numbers are identical for any chunk size and number of workers.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from multiprocessing.connection import Connection

import numpy as np

from deteval._values import frozen
from deteval.data import GroundTruth
from deteval.errors import ConfigError, InputError
from deteval.evaluate import MatchTable
from deteval.protocol import Protocol, resolve_protocol
from deteval.sharding import run_forked
from deteval.stats.plan import _Plan, _plan
from deteval.stats.weighted import _chunk_metrics
from deteval.summary import SUMMARY_TERMS

#: Target number of (item x resample) cells per chunk: bounds the memory of one chunk.
_CELLS_PER_CHUNK = 6_000_000


@frozen(eq=False)
class ResampledMetrics:
    """Scores of one detector under one protocol, per resample.

    Attributes
    ----------
    metric_names : tuple of str
        The headline metrics, as :func:`~deteval.evaluate.score` names them.
    metrics : float64 (n_resamples, n_metrics)
        NaN where undefined in a resample.
    per_class_ap : float64 (n_resamples, n_class)
    """

    metric_names: tuple
    metrics: np.ndarray
    per_class_ap: np.ndarray


def _check_supported(protocol: Protocol) -> None:
    """Refuse protocols whose accumulation the weighted re-accumulation does not reproduce."""
    if protocol.score_ties != "ranked":  # the weighted curves rank detections one by one
        raise ConfigError(
            f"bootstrap: protocol {protocol.name!r}: score_ties: expected 'ranked' (the resampling "
            f"ranks tied detections one by one), found {protocol.score_ties!r}"
        )
    if (
        protocol.summary not in SUMMARY_TERMS
        or protocol.iou_type == "keypoints"
        or protocol.ap_method not in ("101_point", "11_point", "all_point")
        or protocol.max_dets_per_class is not None
    ):
        raise ConfigError(
            f"bootstrap: protocol {protocol.name!r} (ap_method {protocol.ap_method}, summary "
            f"{protocol.summary}, iou_type {protocol.iou_type}) is not supported by the "
            f"resampling; supported: boxes and masks, ap_method 101_point / 11_point / "
            f"all_point, summary pycocotools / configured, no dataset-wide "
            f"max_dets_per_class (it ties images together)"
        )


@frozen(eq=False)
class _ResampleJob:
    """What every worker of one :func:`resample_metrics` shares (inherited by forked workers)."""

    plan: _Plan
    weights: np.ndarray  # int64 (n_resamples, n_img)
    chunk_size: int


def _run_chunks(job: _ResampleJob, lo: int, hi: int, progress: Callable[[int], None] | None = None) -> tuple:
    """Metrics and per-class AP of resamples [lo, hi), chunk by chunk (``progress(n)`` after each)."""
    names, metrics, per_class = (), [], []
    for start in range(lo, hi, job.chunk_size):
        stop = min(start + job.chunk_size, hi)
        names, m, c = _chunk_metrics(job.plan, np.ascontiguousarray(job.weights[start:stop]))
        metrics.append(m)
        per_class.append(c)
        if progress is not None:
            progress(stop - start)
    return names, np.concatenate(metrics), np.concatenate(per_class)


def _resample_part(job: _ResampleJob, part: tuple[int, int], conn: Connection) -> None:
    """Worker target: score resamples [lo, hi) and send back ``("part", ...)`` or ``("error", e)``."""
    lo, hi = part
    try:
        outcome: tuple = ("part", _run_chunks(job, lo, hi))
    except Exception as error:  # re-raised by the parent
        outcome = ("error", error)
    conn.send(outcome)
    conn.close()


def _run_in_processes(job: _ResampleJob, parts: list) -> list:
    """One forked process per part of the resamples; their outcomes in order (first error raised)."""
    return run_forked(
        _resample_part, job, parts, what="a bootstrap worker", expected="the scores of its resamples"
    )


def _default_chunk(plan: _Plan) -> int:
    return int(max(1, min(256, _CELLS_PER_CHUNK // plan.size)))


def resample_metrics(
    table: MatchTable,
    gt: GroundTruth,
    protocol: Protocol | str,
    weights: np.ndarray,
    *,
    workers: int = 1,
    chunk_size: int | None = None,
    max_weight: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
) -> ResampledMetrics:
    """Score a matched detector on every weighted resample of the images.

    Parameters
    ----------
    table : MatchTable
        :func:`~deteval.evaluate.match` of the detector on ``gt`` under ``protocol``.
    gt : GroundTruth
    protocol : Protocol or str
    weights : int (n_resamples, n_images)
        Image multiplicities (see :func:`bootstrap_weights`); non-negative integers.
    workers : int
        Split the resamples over this many processes (fork); identical numbers.
    chunk_size : int, optional
        Resamples accumulated together (memory vs speed); identical numbers for any value.
    max_weight : int (n_images,), optional
        Per-image upper bound of the weights used to lay out tied detections (computed from
        ``weights`` by default); any bound gives identical numbers.
    progress : callable, optional
        Called with the number of resamples just scored: after each chunk in this process;
        with ``workers > 1`` once, when the workers are done.

    Returns
    -------
    ResampledMetrics

    Raises
    ------
    InputError
        If the weights do not fit the ground truth or are not non-negative integers.

    Examples
    --------
    >>> import deteval
    >>> gt = deteval.load_ground_truth({"images": [{"id": 1}, {"id": 2}],
    ...     "categories": [{"id": 1, "name": "cat"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                      "area": 81, "iscrowd": 0}]})
    >>> dt = deteval.load_detections([{"image_id": 2, "category_id": 1, "bbox": [0, 0, 9, 9],
    ...                                "score": 0.9}], gt)
    >>> from deteval.evaluate import match
    >>> p = deteval.get_protocol("voc2010")
    >>> r = resample_metrics(match(gt, dt, p), gt, p, np.array([[1, 1], [2, 0], [0, 2]]))
    >>> r.metrics[:, 0].tolist()  # image 2 alone has no ground truth: mAP undefined
    [0.0, 0.0, nan]
    """
    protocol = resolve_protocol(protocol)
    _check_supported(protocol)
    weights = np.asarray(weights)
    if weights.ndim != 2 or weights.shape[1] != gt.n_images:
        raise InputError(
            f"resample weights: expected an array (n_resamples, {gt.n_images} images), "
            f"found shape {weights.shape}"
        )
    if weights.size and (not np.issubdtype(weights.dtype, np.integer) or weights.min() < 0):
        raise InputError(
            "resample weights: expected non-negative integer image counts, found "
            f"dtype {weights.dtype} with minimum {weights.min()}"
        )
    _check_table(table, gt, "table")
    weights = weights.astype(np.int64)
    if max_weight is None:
        max_weight = weights.max(axis=0) if weights.size else np.zeros(gt.n_images, np.int64)
    plan = _plan(table, gt, protocol, np.asarray(max_weight, dtype=np.int64))
    n_b = weights.shape[0]
    if n_b == 0:
        names, _, _ = _chunk_metrics(plan, np.ones((1, gt.n_images), np.int64))
        return ResampledMetrics(names, np.zeros((0, len(names))), np.zeros((0, gt.n_classes)))
    job = _ResampleJob(
        plan=plan, weights=weights, chunk_size=int(chunk_size) if chunk_size else _default_chunk(plan)
    )
    if workers and workers > 1 and n_b > 1 and "fork" in mp.get_all_start_methods():
        bounds = np.linspace(0, n_b, min(workers, n_b) + 1).astype(int)
        parts = _run_in_processes(job, list(zip(bounds[:-1].tolist(), bounds[1:].tolist())))
        if progress is not None:
            progress(n_b)
        names = parts[0][0]
        return ResampledMetrics(
            names, np.concatenate([m for _, m, _ in parts]), np.concatenate([c for _, _, c in parts])
        )
    names, metrics, per_class = _run_chunks(job, 0, n_b, progress)
    return ResampledMetrics(names, metrics, per_class)


def _check_table(table: MatchTable, gt: GroundTruth, name: str) -> None:
    if table.n_positive.shape[0] != gt.n_classes or (
        len(table.det_image) and int(table.det_image.max()) >= gt.n_images
    ):
        raise InputError(
            f"{name}: matched against a different ground truth (expected "
            f"{gt.n_classes} classes and {gt.n_images} images, found a table of "
            f"{table.n_positive.shape[0]} classes)"
        )
