"""Interoperability with pycocotools: a drop-in ``COCOeval``.

This package is the only code that speaks pycocotools' API shape (``params``, ``eval``,
``stats`` with -1 for undefined values).
"""

from deteval.interop.cocoeval import COCOeval, Params

__all__ = ["COCOeval", "Params"]
