"""Bridges to training frameworks and clusters; each imports its framework lazily.

* :mod:`deteval.integrations.distributed`: gather :class:`~deteval.Evaluator` states over
  ``torch.distributed`` ranks (``Evaluator.sync``);
* :mod:`deteval.integrations.torchmetrics`: ``MeanAveragePrecision`` with torchmetrics'
  constructor and ``compute()`` keys;
* :mod:`deteval.integrations.dask`: match shard files of predictions where they lie (Dask).

Nothing here is imported by ``import deteval``; torch and dask are optional extras.
"""
