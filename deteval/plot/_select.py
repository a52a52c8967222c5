"""Choosing what a figure shows: IoU thresholds and classes of an EvalResult."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.evaluate import EvalResult

__all__ = ["resolve_thresholds", "default_thresholds", "select_classes", "grid", "named_results"]


def default_thresholds(result: EvalResult) -> tuple:
    """0.5 and 0.75 where the protocol has them, else its first threshold."""
    protocol_thresholds = tuple(result.protocol.iou_thresholds)
    chosen = tuple(
        t for t in protocol_thresholds if any(math.isclose(t, w, abs_tol=1e-9) for w in (0.5, 0.75))
    )
    return chosen or protocol_thresholds[:1]


def resolve_thresholds(
    result: EvalResult, iou_thresholds: Sequence[float] | float | None, *, where: str
) -> tuple:
    """The protocol's own values (bit-exact) of the requested thresholds.

    A requested value matches a protocol threshold within 1e-9 (so ``0.9`` finds COCO's
    ``0.8999999999999999``).

    Raises
    ------
    ConfigError
        A threshold the protocol does not have.
    """
    if iou_thresholds is None:
        return default_thresholds(result)
    if isinstance(iou_thresholds, (int, float)):
        iou_thresholds = (iou_thresholds,)
    protocol_thresholds = tuple(result.protocol.iou_thresholds)
    out = []
    for t in iou_thresholds:
        found = [p for p in protocol_thresholds if math.isclose(p, float(t), abs_tol=1e-9)]
        if not found:
            raise ConfigError(
                f"{where}: iou_thresholds: expected thresholds of protocol "
                f"{result.protocol.name!r} {[round(p, 4) for p in protocol_thresholds]}, "
                f"found {t!r}"
            )
        out.append(found[0])
    return tuple(dict.fromkeys(out))


def select_classes(result: EvalResult, classes: Sequence[Any] | None, *, limit: int, where: str) -> list[int]:
    """Class indices to draw.

    ``classes`` names them by category id (int) or name (str); None takes every class when
    there are at most ``limit``, else the ``limit`` classes with the most ground truth (ties in
    category order).

    Raises
    ------
    ConfigError
        A class that is not in the ground truth.
    """
    n_gt = np.array([c["num_gt"] for c in result.per_class], dtype=np.int64)
    if classes is None:
        if len(n_gt) <= limit:
            return list(range(len(n_gt)))
        order = np.argsort(-n_gt, kind="stable")[:limit]
        return sorted(int(k) for k in order)
    if isinstance(classes, (str, int)):
        classes = [classes]
    out = []
    for c in classes:
        if isinstance(c, str) and c in result.category_names:
            out.append(result.category_names.index(c))
        elif isinstance(c, (int, np.integer)) and not isinstance(c, bool) and int(c) in result.category_ids:
            out.append(result.category_ids.index(int(c)))
        else:
            raise ConfigError(
                f"{where}: classes: expected category ids or names of the ground truth "
                f"(e.g. {list(result.category_ids)[:5]} or "
                f"{list(result.category_names)[:5]}), found {c!r}"
            )
    return list(dict.fromkeys(out))


def grid(n_panels: int, *, max_columns: int = 4) -> tuple[int, int]:
    """(rows, columns) of a panel grid."""
    columns = max(1, min(max_columns, n_panels))
    return -(-n_panels // columns), columns


def named_results(results: Any, *, where: str) -> list[tuple[str, EvalResult]]:
    """(label, result) pairs from an EvalResult, a sequence of them, or a mapping label -> result.

    Sequence labels: the protocol name, preceded by the detections' file name when the results
    come from more than one detections input; repeated labels get ``#2``, ``#3``.

    Raises
    ------
    ConfigError
        No result, or something that is not an EvalResult.
    """
    items: list[tuple[str | None, Any]]
    if isinstance(results, EvalResult):
        items = [(None, results)]
    elif isinstance(results, Mapping):
        items = [(str(k), v) for k, v in results.items()]
    elif isinstance(results, Sequence) and not isinstance(results, (str, bytes)):
        items = [(None, r) for r in results]
    else:
        raise ConfigError(
            f"{where}: results: expected an EvalResult, a sequence of them or a mapping "
            f"label -> EvalResult, found {type(results).__name__}"
        )
    if not items:
        raise ConfigError(f"{where}: results: expected at least one EvalResult, found none")
    for label, r in items:
        if not isinstance(r, EvalResult):
            raise ConfigError(
                f"{where}: results{'' if label is None else f'[{label!r}]'}: expected an "
                f"EvalResult, found {type(r).__name__}"
            )
    sources = {str(r.inputs.get("dt", "")) for _, r in items}
    out: list[tuple[str, EvalResult]] = []
    seen: dict[str, int] = {}
    for label, r in items:
        if label is None:
            label = r.protocol.name
            if len(sources) > 1:
                label = f"{PurePath(str(r.inputs.get('dt', '?'))).name} · {label}"
        seen[label] = seen.get(label, 0) + 1
        out.append((label if seen[label] == 1 else f"{label} #{seen[label]}", r))
    return out
