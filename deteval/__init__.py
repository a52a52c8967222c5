"""deteval: object-detection metrics that equal the reference tools, side by side, fast.

The public API is :mod:`deteval.api` (the front door: paths, dicts, names -> values), re-exported
here.

>>> import deteval
>>> list(deteval.PRESETS)[:4]
['coco', 'coco-pycocotools', 'coco50', 'coco-exact-masks']

Every public name is loaded from its module on first use (PEP 562 ``__getattr__``), so that
``import deteval`` itself imports no numpy and no reader, and a command imports only the modules
its path needs; ``from deteval import evaluate`` and ``dir(deteval)`` work as with eager imports.
"""

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from deteval._version import __version__
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
    from deteval.api.beyond import BeyondOptions, beyond_document
    from deteval.beyond import beyond_ap
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
    from deteval.evaluator import Evaluator
    from deteval.io import load_detections, load_ground_truth
    from deteval.protocol import PRESETS, Protocol, get_protocol, load_protocol_file
    from deteval.stats import bootstrap, compare_detectors

#: Public name -> the module it is loaded from on first access.
_LAZY = {
    "__version__": "deteval._version",
    "Inputs": "deteval.api.inputs",
    "load_inputs": "deteval.api.inputs",
    "Validation": "deteval.api.validation",
    "validate": "deteval.api.validation",
    "compare": "deteval.api.scoring",
    "evaluate": "deteval.api.scoring",
    "evaluate_inputs": "deteval.api.scoring",
    "explain": "deteval.api.scoring",
    "evaluate_slices": "deteval.api.slicing",
    "resolve_protocol": "deteval.protocol",
    "Detections": "deteval.data",
    "GroundTruth": "deteval.data",
    "ConfigError": "deteval.errors",
    "DetevalError": "deteval.errors",
    "DetevalWarning": "deteval.errors",
    "InputError": "deteval.errors",
    "InputWarning": "deteval.errors",
    "UndefinedMetricWarning": "deteval.errors",
    "EvalResult": "deteval.evaluate",
    "check_protocol": "deteval.evaluate",
    "match": "deteval.evaluate",
    "merge_match_tables": "deteval.evaluate",
    "score": "deteval.evaluate",
    "Evaluator": "deteval.evaluator",
    "load_detections": "deteval.io",
    "load_ground_truth": "deteval.io",
    "PRESETS": "deteval.protocol",
    "Protocol": "deteval.protocol",
    "get_protocol": "deteval.protocol",
    "load_protocol_file": "deteval.protocol",
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
    """Load a public name (or a subpackage, ``deteval.io``) on first access.

    Raises
    ------
    AttributeError
        ``name`` is neither a public name nor a submodule of the package.
    """
    import importlib

    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif not name.startswith("__"):
        try:  # `import deteval; deteval.io.load_coco_gt(...)`, as when __init__ imported them all
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(ModuleType):
    """The package's module object: ``deteval.evaluate`` stays the function once loaded.

    Two public names are also subpackages (``evaluate``, ``explain``). Importing the subpackage
    (``from deteval.evaluate import match``, as the command line does) makes the import system
    bind it as an attribute of this package; that binding is skipped for a public name, so
    ``deteval.evaluate`` is always :func:`deteval.api.evaluate`, as with eager imports.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
