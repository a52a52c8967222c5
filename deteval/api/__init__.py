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

from typing import TYPE_CHECKING

from deteval._lazy import lazy_names

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
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

#: Public name -> its module, imported on first access (PEP 562): ``deteval evaluate`` does not
#: import the analysis, explain and per-image code it does not call.
_LAZY = {
    "at_confidence": "deteval.analysis",
    "match_columns": "deteval.analysis",
    "matches": "deteval.analysis",
    "Inputs": "deteval.api.inputs",
    "load_inputs": "deteval.api.inputs",
    "refuse_overwrite": "deteval.api.inputs",
    "default_protocol": "deteval.api.protocols",
    "parse_overrides": "deteval.api.protocols",
    "protocol_choice": "deteval.api.protocols",
    "resolve_protocols": "deteval.api.protocols",
    "compare": "deteval.api.scoring",
    "compare_mask_modes": "deteval.api.scoring",
    "evaluate": "deteval.api.scoring",
    "evaluate_inputs": "deteval.api.scoring",
    "explain": "deteval.api.scoring",
    "evaluate_slices": "deteval.api.slicing",
    "image_attributes": "deteval.api.slicing",
    "Validation": "deteval.api.validation",
    "validate": "deteval.api.validation",
    "Comparison": "deteval.explain",
    "Explanation": "deteval.report.explanation",
    "MatchCache": "deteval.explain",
    "ExplainedMatches": "deteval.per_image",
    "PerImage": "deteval.per_image",
    "explained_matches": "deteval.per_image",
    "per_image": "deteval.per_image",
    "resolve_protocol": "deteval.protocol",
}

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

__getattr__, __dir__ = lazy_names(globals(), _LAZY)
