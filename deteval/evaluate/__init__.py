"""Values in, values out: ``match`` -> ``merge_match_tables`` -> ``score`` -> :class:`EvalResult`.

The work is done by :mod:`deteval.matching` (who matched whom), :mod:`deteval.accumulate`
(curves and AP) and :mod:`deteval.summary` (headline metrics); this package wires them together
and packages the result. Paths, parsed JSON and protocol names are the front
door's (:mod:`deteval.api`).

* :mod:`~deteval.evaluate.table`: :class:`MatchTable` and :func:`merge_match_tables`, the one
  merge (of image shards inside :func:`match`, and of tables of disjoint shards);
* :mod:`~deteval.evaluate.flags`: the ground-truth flag policy (ignored, reusable, unmatchable)
  and the areas the size ranges read;
* :mod:`~deteval.evaluate.iou`: the overlap a protocol scores pairs by;
* :mod:`~deteval.evaluate.selection`: the detections a protocol scores (``max_dets``, Fixed AP,
  LVIS' per-image scope and federated labels);
* :mod:`~deteval.evaluate.run`: :func:`match`, in image shards of bounded size;
* :mod:`~deteval.evaluate.scoring` and :mod:`~deteval.evaluate.result`: :func:`score`,
  :func:`ranking_order`, :class:`EvalResult`.

Both :func:`match` and :func:`score` check the protocol (:meth:`Protocol.check_scorable
<deteval.protocol.Protocol.check_scorable>`), so callers need not.
"""

from __future__ import annotations

from deteval.evaluate.flags import ground_truth_flags, outside_area_ranges
from deteval.evaluate.iou import pair_iou
from deteval.evaluate.result import EvalResult, inputs_summary
from deteval.evaluate.run import match
from deteval.evaluate.scoring import ranking_order, score
from deteval.evaluate.table import MatchTable, merge_match_tables
from deteval.protocol import Protocol

__all__ = [
    "EvalResult",
    "MatchTable",
    "check_protocol",
    "ground_truth_flags",
    "inputs_summary",
    "match",
    "merge_match_tables",
    "outside_area_ranges",
    "pair_iou",
    "ranking_order",
    "score",
]


def check_protocol(protocol: Protocol) -> None:
    """Refuse protocol combinations that cannot be scored (before any work is done).

    The same as ``protocol.check_scorable()`` (:meth:`deteval.protocol.Protocol.check_scorable`),
    kept for callers that check a protocol before loading their inputs; :func:`match` and
    :func:`score` check it themselves.

    Raises
    ------
    ConfigError
        The combination, and the fields to change.
    """
    protocol.check_scorable()
