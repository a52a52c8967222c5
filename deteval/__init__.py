"""deteval: object-detection metrics that equal the reference tools, side by side, fast.

>>> import deteval
>>> sorted(deteval.PRESETS)[:3]
['coco', 'coco-pycocotools', 'coco50']
"""

from deteval.data import Detections, GroundTruth
from deteval.errors import (
                            ConfigError,
                            DetevalError,
                            DetevalWarning,
                            InputError,
                            InputWarning,
                            UndefinedMetricWarning,
)
from deteval.evaluate import EvalResult, check_protocol, evaluate, match, merge_match_tables, score
from deteval.evaluator import Evaluator
from deteval.explain import compare, explain
from deteval.io import load_detections, load_ground_truth
from deteval.protocol import PRESETS, Protocol, get_protocol, load_protocol_file

__version__ = "0.1.0"

__all__ = ["evaluate", "Evaluator", "EvalResult", "Protocol", "PRESETS", "get_protocol", "GroundTruth",
           "Detections", "load_ground_truth", "load_detections", "match", "merge_match_tables",
           "score", "check_protocol", "compare", "explain", "load_protocol_file", "DetevalError", "InputError", "ConfigError", "DetevalWarning",
           "InputWarning", "UndefinedMetricWarning", "__version__"]
