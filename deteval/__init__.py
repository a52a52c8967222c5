"""deteval: object-detection metrics that equal the reference tools, side by side, fast.

The public API is :mod:`deteval.api` (the front door: paths, dicts, names -> values), re-exported
here.

>>> import deteval
>>> list(deteval.PRESETS)[:4]
['coco', 'coco-pycocotools', 'coco50', 'coco-exact-masks']
"""

from typing import TYPE_CHECKING, Any

from deteval.api import (
    Inputs,
    Validation,
    compare,
    evaluate,
    evaluate_inputs,
    evaluate_slices,
    explain,
    load_inputs,
    resolve_protocol,
    validate,
)
from deteval.data import Detections, GroundTruth
from deteval.errors import (
    ConfigError,
    DetevalError,
    DetevalWarning,
    InputError,
    InputWarning,
    UndefinedMetricWarning,
)
from deteval.evaluate import EvalResult, check_protocol, match, merge_match_tables, score
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import PRESETS, Protocol, get_protocol, load_protocol_file

if TYPE_CHECKING:  # loaded on first use (see __getattr__): most runs never need them
    from deteval._version import __version__
    from deteval.api.beyond import BeyondOptions, beyond_document
    from deteval.beyond import beyond_ap
    from deteval.evaluator import Evaluator
    from deteval.stats import bootstrap, compare_detectors

#: Public names whose modules load on first access, so ``import deteval`` stays short.
_LAZY = {
    "__version__": "deteval._version",
    "Evaluator": "deteval.evaluator",
    "bootstrap": "deteval.stats",
    "compare_detectors": "deteval.stats",
    "beyond_ap": "deteval.beyond",
    "beyond_document": "deteval.api.beyond",
    "BeyondOptions": "deteval.api.beyond",
}

__all__ = [
    "evaluate",
    "evaluate_slices",
    "Evaluator",
    "bootstrap",
    "compare_detectors",
    "beyond_ap",
    "beyond_document",
    "BeyondOptions",
    "EvalResult",
    "Protocol",
    "PRESETS",
    "get_protocol",
    "GroundTruth",
    "Detections",
    "load_ground_truth",
    "load_detections",
    "match",
    "merge_match_tables",
    "score",
    "check_protocol",
    "compare",
    "explain",
    "validate",
    "Validation",
    "load_inputs",
    "Inputs",
    "evaluate_inputs",
    "resolve_protocol",
    "load_protocol_file",
    "DetevalError",
    "InputError",
    "ConfigError",
    "DetevalWarning",
    "InputWarning",
    "UndefinedMetricWarning",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """Load the few public names that are not needed by most runs on first access."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'deteval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
