"""The front door: paths, parsed JSON, values and names in; values out.

Everything below this module takes values (:class:`~deteval.data.GroundTruth`,
:class:`~deteval.data.Detections`, :class:`~deteval.protocol.Protocol`) and returns values,
warnings included (``EvalResult.warnings`` / ``.notes``). This module also accepts what a user
has at hand -- a COCO JSON path or dict, a VOC root, a YOLO dataset, a preset name or a YAML
file -- and emits what the values carry as Python warnings:

* each warning about the input (and the protocol's parity notes) as
  :class:`~deteval.errors.InputWarning`;
* each note about an undefined metric (a class without ground truth) as
  :class:`~deteval.errors.UndefinedMetricWarning`.

They stay in the returned values exactly as before, so ``to_dict()`` and the JSON output list
them too. ``warnings.simplefilter("error", InputWarning)`` makes them errors (``--strict``): the
one exception then carries every message of the batch (``exc.messages``), not only the first.

The front door is a package, one module per concern, all re-exported here:
:mod:`~deteval.api.protocols` (names, YAML files, ``--set`` overrides, the default protocol),
:mod:`~deteval.api.inputs` (loading and checking the inputs), :mod:`~deteval.api.scoring`
(evaluate, compare, explain) and :mod:`~deteval.api.validation` (``deteval validate``).
"""

from __future__ import annotations

from deteval.analysis import at_confidence, match_columns, matches
from deteval.api.inputs import Inputs, load_inputs, refuse_overwrite
from deteval.api.protocols import default_protocol, parse_overrides, protocol_choice, resolve_protocols
from deteval.api.scoring import compare, compare_mask_modes, evaluate, evaluate_inputs, explain
from deteval.api.slicing import evaluate_slices, image_attributes
from deteval.api.validation import Validation, validate
from deteval.explain import Comparison, MatchCache
from deteval.per_image import ExplainedMatches, PerImage, explained_matches, per_image
from deteval.protocol import resolve_protocol
from deteval.report.explanation import Explanation

__all__ = [
    "resolve_protocol",
    "resolve_protocols",
    "default_protocol",
    "protocol_choice",
    "parse_overrides",
    "refuse_overwrite",
    "Inputs",
    "load_inputs",
    "evaluate",
    "evaluate_inputs",
    "compare",
    "explain",
    "validate",
    "Validation",
    "compare_mask_modes",
    "at_confidence",
    "matches",
    "match_columns",
    "evaluate_slices",
    "image_attributes",
    "per_image",
    "PerImage",
    "explained_matches",
    "ExplainedMatches",
    "MatchCache",
    "Comparison",
    "Explanation",
]
