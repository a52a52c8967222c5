"""deteval: object-detection metrics that equal the reference tools, side by side, fast.

The public API is :mod:`deteval.api` (the front door: paths, dicts, names -> values), re-exported
here.

>>> import deteval
>>> sorted(deteval.PRESETS)[:3]
['coco', 'coco-pycocotools', 'coco50']
"""

__version__ = "0.1.0"

from deteval.api import (  # noqa: E402 - __version__ first: modules may read it while the package initializes
    Inputs,
    Validation,
    compare,
    evaluate,
    evaluate_inputs,
    explain,
    load_inputs,
    resolve_protocol,
    validate,
)
from deteval.config import load_protocol_file  # noqa: E402
from deteval.data import Detections, GroundTruth  # noqa: E402
from deteval.errors import (  # noqa: E402
    ConfigError,
    DetevalError,
    DetevalWarning,
    InputError,
    InputWarning,
    UndefinedMetricWarning,
)
from deteval.evaluate import EvalResult, check_protocol, match, merge_match_tables, score  # noqa: E402
from deteval.io import load_detections, load_ground_truth  # noqa: E402
from deteval.protocols import PRESETS, Protocol, get_protocol  # noqa: E402

__all__ = ["evaluate", "EvalResult", "Protocol", "PRESETS", "get_protocol", "GroundTruth",
           "Detections", "load_ground_truth", "load_detections", "match", "merge_match_tables",
           "score", "check_protocol", "compare", "explain", "validate", "Validation", "load_inputs",
           "Inputs", "evaluate_inputs", "resolve_protocol", "load_protocol_file", "DetevalError",
           "InputError", "ConfigError", "DetevalWarning", "InputWarning", "UndefinedMetricWarning",
           "__version__"]
