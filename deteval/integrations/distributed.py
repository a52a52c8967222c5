"""Gather picklable states over ``torch.distributed`` ranks (torch imported on call only).

:meth:`deteval.Evaluator.sync` takes any ``gather(obj) -> list`` callable with the contract of
``torch.distributed.all_gather_object``: every rank's ``obj``, in rank order, on every rank.
:func:`torch_all_gather` is that callable for an initialised process group (any backend:
``gloo`` on CPU, ``nccl`` on GPU -- objects are pickled, so the states never need to be
tensors). This module imports nothing of deteval above :mod:`deteval.errors`.
"""

from __future__ import annotations

from typing import Any

from deteval.errors import ConfigError

__all__ = ["torch_all_gather"]


def torch_all_gather(obj: Any, *, group: Any = None) -> list:
    """Every rank's ``obj`` in rank order (``torch.distributed.all_gather_object``).

    Parameters
    ----------
    obj : picklable
    group : ProcessGroup, optional
        Default: the world.

    Returns
    -------
    list
        ``[obj]`` when torch.distributed is available but not initialised (one process).

    Raises
    ------
    ConfigError
        torch is not installed.
    """
    try:
        import torch.distributed as dist
    except ImportError:
        raise ConfigError(
            "Evaluator.sync: torch is not installed; expected torch.distributed for the "
            "default gather (pip install deteval[torch]), or pass gather=<callable>"
        ) from None
    if not dist.is_available() or not dist.is_initialized():
        return [obj]
    out: list = [None] * dist.get_world_size(group=group)
    dist.all_gather_object(out, obj, group=group)
    return out
