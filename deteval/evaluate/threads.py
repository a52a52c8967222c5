"""How much work one more kernel thread needs under ``workers="auto"``: one number per kernel.

:func:`deteval._parallel.kernel_threads` turns the caller's ``workers`` and a call's work into a
thread count (``"auto"``: one thread per this much work, at most the usable CPUs); these are its
``per_thread`` for the kernels :func:`~deteval.evaluate.match` and :func:`~deteval.evaluate.score`
call. Measured on 2 cores (the bbox, LVIS and keypoints sets of scripts/bench.py at 1k, 5k and
20k images; the calling thread's CPU time with one and two threads): starting and joining a
thread costs ~50 us, and a second thread saves about half of a call that runs 5-10 ms at these
sizes (an accumulation of 50k ranked detections, a sort of 100k rows, 50k pairs matched). So a
second thread starts from twice these sizes: the keypoints set (30k detections) runs on one
thread, the 5k box set (250k detections) on two. The numbers never change a result, only which
calls split.
"""

from __future__ import annotations

__all__ = ["ACCUMULATE_PER_THREAD", "BOX_PAIRS_PER_THREAD", "MATCH_PER_THREAD", "SORT_PER_THREAD"]

#: ``_cacc.accumulate``: ranked detections per thread.
ACCUMULATE_PER_THREAD = 50_000
#: ``_cmatch.box_pairs``: detections per thread (their candidate pairs and box IoUs; ~10 pairs
#: per detection on COCO-shaped data).
BOX_PAIRS_PER_THREAD = 50_000
#: ``_cmatch.match_coco``: candidate pairs per thread (one call per image shard of about 260k
#: detections, ``deteval.evaluate.run._MATCH_CHUNK``).
MATCH_PER_THREAD = 50_000
#: ``_csort.order_by_group_then_score``: rows per thread.
SORT_PER_THREAD = 100_000
