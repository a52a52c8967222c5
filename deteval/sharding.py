"""``workers``: threads in the compiled kernels, or image shards matched in worker processes.

Two ways to use more than one CPU for one match, with the same table (and so every number):

- **Threads** (every path that runs in compiled code: boxes, keypoints, masks as pycocotools
  rasterises them, LVIS): :func:`match_sharded` runs one in-process
  :func:`~deteval.evaluate.match` whose kernels split their work over threads
  (``deteval/_parallel.h``; the count per call from :func:`deteval._parallel.kernel_threads`).
  No copy, no fork, no pipe: measured faster than processes on every benchmark set, where
  forked processes were slower than one (the child's page faults on the inherited arrays and the
  pipe back cost more than the half of the matching they saved).
- **Processes** (:data:`PROCESS_PATHS`: the paths whose pair overlaps run in Python and numpy,
  which hold the GIL: the exact polygon masks of shapely, Boundary IoU): matching is
  independent per image, so a dataset split into disjoint image shards can be matched shard by
  shard and the tables concatenated (:func:`deteval.evaluate.merge_match_tables`). Each worker
  is a forked process that receives its :class:`ShardJob` and its shard as the arguments of its
  target: with the ``fork`` start method these are inherited from the parent's memory, not
  pickled. The parent matches the first shard itself while the forked processes match the
  others (``workers=2`` forks one process, not two). Only the other shards'
  :class:`MatchTable` travel back, through a pipe. No module-level state is involved.

``workers="auto"`` (the CLI's default) picks by the input's size: kernel threads by each call's
work (:mod:`deteval.evaluate.threads`), processes by :func:`resolve_workers` (one process below
about :data:`AUTO_DETECTIONS_PER_WORKER` detections per extra process).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from deteval._parallel import usable_cpus
from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.errors import DetevalError
from deteval.evaluate import MatchTable, match, merge_match_tables
from deteval.evaluate.iou import prepared_masks
from deteval.protocol import Protocol

if TYPE_CHECKING:  # multiprocessing is imported when shards run, not with deteval
    from multiprocessing.connection import Connection

    from deteval.geometry.masks import PreparedMasks

__all__ = [
    "image_shards",
    "match_sharded",
    "ShardJob",
    "usable_cpus",
    "effective_workers",
    "resolve_workers",
    "AUTO_DETECTIONS_PER_WORKER",
    "in_processes",
]

#: ``workers="auto"``: detections each process must have before one more is started, per IoU
#: type. Box matching costs ~0.3 us a detection (a fork, the child's first-touch page faults and
#: the pipe cost about as much as 300k of them); a mask or keypoint pair costs 10-100x more.
AUTO_DETECTIONS_PER_WORKER = {"bbox": 400_000, "keypoints": 100_000, "segm": 25_000, "boundary": 25_000}


def in_processes(protocol: Protocol) -> bool:
    """Whether ``workers`` above one runs image shards in processes (else: kernel threads).

    Processes for the paths whose pair overlaps run in Python and numpy under the GIL: exact
    polygon masks (``mask_iou: exact``, shapely) and Boundary IoU; threads everywhere else.

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> exact = get_protocol("coco-exact-masks")  # a box preset until segm is asked for
    >>> in_processes(get_protocol("coco")), in_processes(exact), in_processes(exact.replace(iou_type="segm"))
    (False, False, True)
    """
    if protocol.iou_type == "boundary":
        return True
    return protocol.iou_type == "segm" and protocol.mask_iou == "exact"


def effective_workers(requested: int | None) -> int:
    """Worker processes actually started for ``requested``: at most :func:`usable_cpus`.

    More processes than CPUs only add memory and forks (``--workers 10000`` would fork one
    process per image); the numbers do not depend on it.

    Examples
    --------
    >>> effective_workers(10_000) == usable_cpus(), effective_workers(1)
    (True, 1)
    """
    return max(1, min(int(requested or 1), usable_cpus()))


def resolve_workers(requested: int | str | None, n_detections: int, iou_type: str = "bbox") -> int:
    """Processes one match uses: ``requested`` as :func:`effective_workers`, or by size for ``"auto"``.

    ``"auto"`` starts one process per :data:`AUTO_DETECTIONS_PER_WORKER` detections of the IoU
    type (at least one), at most :func:`usable_cpus`: one process for the small inputs where
    forking costs more than it saves. The numbers never depend on it.

    Examples
    --------
    >>> resolve_workers("auto", 1_000), resolve_workers(1, 10**9), resolve_workers(None, 10**9)
    (1, 1, 1)
    >>> resolve_workers("auto", 10**7) == min(usable_cpus(), 25)
    True
    """
    if requested == "auto":
        per_worker = AUTO_DETECTIONS_PER_WORKER.get(iou_type, AUTO_DETECTIONS_PER_WORKER["bbox"])
        return effective_workers(max(1, int(n_detections) // per_worker))
    return effective_workers(cast("int | None", requested))


def image_shards(gt: GroundTruth, n_shards: int) -> list:
    """Split the images into ``n_shards`` contiguous boolean masks of about equal work.

    Work is balanced on ground truth + detections per image would need the detections; image
    count is a good proxy for datasets of similar images.

    Parameters
    ----------
    gt : GroundTruth
    n_shards : int
        Wanted number of shards; at least 1 and at most one per image.

    Returns
    -------
    list of bool (n_img,) arrays
        Disjoint, covering every image once.

    Examples
    --------
    >>> import deteval
    >>> gt = deteval.load_ground_truth({"images": [{"id": i} for i in range(1, 6)],
    ...                                 "categories": [{"id": 1, "name": "a"}], "annotations": []})
    >>> [m.nonzero()[0].tolist() for m in image_shards(gt, 2)]
    [[0, 1], [2, 3, 4]]
    """
    n_shards = max(1, min(int(n_shards), max(gt.n_images, 1)))
    bounds = np.linspace(0, gt.n_images, n_shards + 1).astype(np.int64)
    masks = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        mask = np.zeros(gt.n_images, dtype=bool)
        mask[lo:hi] = True
        masks.append(mask)
    return masks


@frozen(eq=False)
class ShardJob:
    """What every shard of one sharded match shares (inherited by forked workers).

    Attributes
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol
    masks : PreparedMasks or None
        The prepared masks (``iou_type="segm"``), else None.
    """

    gt: GroundTruth
    dt: Detections
    protocol: Protocol
    masks: PreparedMasks | None


def _match_shard(job: ShardJob, images: np.ndarray, conn: Connection) -> None:
    """Worker target: match one shard and send back ``("table", MatchTable)`` or ``("error", e)``."""
    try:
        outcome: tuple = ("table", match(job.gt, job.dt, job.protocol, images=images, masks=job.masks))
    except Exception as error:  # re-raised by the parent, as multiprocessing.Pool.map does
        outcome = ("error", error)
    conn.send(outcome)
    conn.close()


#: The signals the parent alone handles (blocked around each fork, see :func:`run_forked`), by
#: name: the signal module is imported by the process paths only.
_PARENT_SIGNALS = ("SIGINT", "SIGTERM")


def _parent_signals() -> set:
    import signal

    return {getattr(signal, name) for name in _PARENT_SIGNALS}


def _worker_main(target: Callable, job: object, part: object, conn: Connection) -> None:
    """Every worker's entry: signals are the parent's business, and a worker never prints.

    A worker ignores Ctrl-C (the terminal sends it to the whole process group: the parent
    handles it and ends its workers) and dies of SIGTERM silently (the parent's
    ``terminate()``), instead of inheriting the parent's handlers and printing a traceback. The
    signals were blocked by the parent before the fork and are unblocked only once these
    dispositions are set, so no signal finds the inherited handlers. Anything escaping
    ``target`` (the parent gone while sending) ends the worker at once without a word: the
    parent reports a worker that ended without a result.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _parent_signals())
    try:
        target(job, part, conn)
    except BaseException:  # noqa: BLE001 - a worker never prints; the parent reports its end
        os._exit(1)


def run_forked(
    target: Callable,
    job: object,
    parts: Sequence,
    *,
    what: str,
    expected: str,
    here: Callable | None = None,
) -> list:
    """Run ``target(job, part, conn)`` in one forked process per part; the outcomes in part order.

    With ``here``, the first part is ``here(job, parts[0])`` in this process, run while the
    forked processes run the others (one process fewer; no pipe for its outcome).

    Each worker sends ``(kind, value)`` through ``conn``; ``("error", exception)`` is re-raised
    here (the first one, in part order). Every pipe is waited on at once, so a worker that dies
    (killed, out of memory) is reported at once as ``DetevalError`` naming ``what`` and
    ``expected``, not after the parts before it have finished. Used by :func:`match_sharded`
    and the bootstrap (:mod:`deteval.stats`).

    Signals: only this process reports. Ctrl-C or SIGTERM here (``KeyboardInterrupt`` or the
    CLI's SIGTERM exception) ends every worker, silently, and propagates; workers ignore Ctrl-C,
    die silently of SIGTERM and never print (:func:`_worker_main`).
    """
    import multiprocessing as mp
    import signal
    from multiprocessing.connection import Connection, wait

    context = mp.get_context("fork")
    parent_signals = _parent_signals()
    workers, receivers = [], []
    local = [] if here is None else [("value", None)]
    try:
        for part in parts[len(local) :]:
            receiver, sender = context.Pipe(duplex=False)
            worker = context.Process(target=_worker_main, args=(target, job, part, sender), daemon=True)
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, parent_signals)
            try:  # the child starts with them blocked: none reaches it before its own dispositions
                worker.start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            sender.close()  # the child holds its own end: EOF here if it dies without sending
            workers.append(worker)
            receivers.append(receiver)
        if here is not None:  # an error here ends the workers (finally) and propagates
            local = [("value", here(job, parts[0]))]
        outcomes: list = [None] * len(receivers)
        pending = {receiver: k for k, receiver in enumerate(receivers)}
        while pending:
            for ready in wait(list(pending)):
                receiver = cast(Connection, ready)  # wait() returns some of the pipes it was given
                k = pending.pop(receiver)
                try:
                    outcomes[k] = receiver.recv()
                except EOFError:
                    worker = workers[k]
                    worker.join(timeout=5)
                    raise DetevalError(
                        f"{what} process (pid {worker.pid}) ended without a "
                        f"result (exit code {worker.exitcode}); expected {expected}; "
                        f"run with workers=1 to see the failure in-process"
                    ) from None
        for worker in workers:
            worker.join()
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
                worker.join()
        for receiver in receivers:
            receiver.close()
    for kind, value in outcomes:
        if kind == "error":
            raise value
    return [value for _, value in local + outcomes]


def _match_here(job: ShardJob, images: np.ndarray) -> MatchTable:
    """The parent's shard (:func:`run_forked`'s ``here``)."""
    return match(job.gt, job.dt, job.protocol, images=images, masks=job.masks)


def _run_in_processes(job: ShardJob, shards: list) -> list:
    """The first shard here, one forked process per other shard; the tables in shard order."""
    return run_forked(
        _match_shard, job, shards, what="a matching worker", expected="one table per shard", here=_match_here
    )


def match_sharded(
    gt: GroundTruth,
    dt: Detections,
    protocol: Protocol,
    *,
    workers: int | str = 1,
    masks: PreparedMasks | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MatchTable:
    """:func:`~deteval.evaluate.match` on ``workers`` CPUs: kernel threads, or image shards in processes.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : Protocol
    workers : int or "auto"
        CPUs to use, at most :func:`usable_cpus`; ``"auto"``: by the input's size. Where
        :func:`in_processes` is False (boxes, keypoints, raster masks, LVIS), one in-process
        :func:`~deteval.evaluate.match` whose compiled kernels split their work over that many
        threads. Else one process per image shard (this one included; :func:`resolve_workers`),
        merged; 1 or less, fewer than 2 images, or no ``fork`` (Windows, macOS' default spawn):
        one in-process match.
    masks : PreparedMasks, optional
        ``iou_type="segm"``: masks prepared from ``gt`` and ``dt``; else they are prepared
        here, once, before forking (invalid input is reported once, by the parent).
    progress : callable, optional
        ``progress(done, total)`` as the in-process matching advances (see
        :func:`~deteval.evaluate.match`); with worker processes, once, when all are merged.

    Returns
    -------
    MatchTable
        Identical to ``match(gt, dt, protocol)``, so the numbers are too.

    Raises
    ------
    InputError, ConfigError
        As :func:`~deteval.evaluate.match` (raised in the parent).
    DetevalError
        A worker process died without a result.
    """
    protocol.check_scorable("match")  # as match() does: before masks are parsed or workers start
    if not in_processes(protocol):
        return match(gt, dt, protocol, masks=masks, progress=progress, workers=workers)
    processes = resolve_workers(workers, len(dt), protocol.iou_type)
    if processes <= 1 or gt.n_images < 2:
        return match(gt, dt, protocol, masks=masks, progress=progress, workers=workers)
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods():  # pragma: no cover - Windows/macOS spawn
        return match(gt, dt, protocol, masks=masks, progress=progress, workers=workers)
    if protocol.iou_type in ("segm", "boundary") and masks is None:  # parsed once; the workers inherit it
        masks = prepared_masks(gt, dt, protocol, workers=workers)
    job = ShardJob(gt=gt, dt=dt, protocol=protocol, masks=masks)
    table = merge_match_tables(_run_in_processes(job, image_shards(gt, processes)))
    if progress is not None:
        progress(len(dt), len(dt))
    return table
