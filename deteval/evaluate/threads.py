"""How much work one more kernel thread needs under ``workers="auto"``: one number per kernel.

:func:`deteval._parallel.kernel_threads` turns the caller's ``workers`` and a call's work into a
thread count; these are its ``per_thread`` for the kernels :func:`~deteval.evaluate.match` and
:func:`~deteval.evaluate.score` call. Measured on 2 cores (bbox, LVIS and keypoints sets of
scripts/bench.py, 5k and 20k images): starting and joining a thread costs ~50 us, and below
these sizes the call's second half saves less than that, or the call is too short to matter. The
numbers never change a result, only which calls split.
"""

from __future__ import annotations

__all__ = [
    "ACCUMULATE_PER_THREAD",
    "MASK_PER_THREAD",
    "MATCH_PER_THREAD",
    "OKS_PER_THREAD",
    "SORT_PER_THREAD",
]

#: ``_cacc.accumulate``: ranked detections per thread.
ACCUMULATE_PER_THREAD = 100_000
#: ``_cmatch.match_coco``: candidate pairs per thread (one call per image shard of about 260k
#: detections, :data:`deteval.evaluate.run._MATCH_CHUNK`).
MATCH_PER_THREAD = 100_000
#: ``_csort.order_by_group_then_score``: rows per thread.
SORT_PER_THREAD = 200_000
#: ``_ckeypoint.oks_terms``: pairs per thread.
OKS_PER_THREAD = 50_000
#: :func:`deteval.geometry.prepare_masks`: masks (ground truth + detections) per thread.
MASK_PER_THREAD = 20_000
