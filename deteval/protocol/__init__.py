"""Protocols as data: the frozen :class:`Protocol`, its field table, YAML files and the presets.

* :mod:`deteval.protocol.spec`: :class:`Protocol` and :data:`FIELDS`, the one table of its
  fields (values, stage, explain step, doc, validation);
* :mod:`deteval.protocol.yaml`: YAML files <-> protocols (``extends:``, ``--set``), and the
  presets, which are the YAML files of ``deteval/protocol/presets/``.

The YAML parser and writer (:func:`parse_yaml`, :func:`parse_yaml_value`, :func:`dump_protocol`)
load on first use: scoring under a shipped preset needs neither.
"""

from typing import TYPE_CHECKING

from deteval._lazy import lazy_names
from deteval.protocol.spec import (
    COCO_IOU_THRESHOLDS,
    COCO_RECALL_THRESHOLDS,
    EXPLAIN_STEPS,
    FIELD_CHOICES,
    FIELDS,
    FieldSpec,
    Protocol,
    check_field,
    check_fields,
    display_fields,
    field_names,
    optional_fields,
    protocol_table_markdown,
)
from deteval.protocol.yaml import _LAZY as _YAML_LAZY
from deteval.protocol.yaml import (
    MAX_CONFIG_BYTES,
    PRESETS,
    apply_overrides,
    get_protocol,
    load_protocol_file,
    load_protocol_text,
    preset_names,
    protocol_from_mapping,
    resolve_protocol,
)

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from deteval.protocol.safe_yaml import parse_yaml, parse_yaml_value
    from deteval.protocol.yaml_dump import dump_protocol

__all__ = [
    "Protocol",
    "FieldSpec",
    "FIELDS",
    "FIELD_CHOICES",
    "EXPLAIN_STEPS",
    "field_names",
    "display_fields",
    "optional_fields",
    "check_field",
    "check_fields",
    "protocol_table_markdown",
    "COCO_IOU_THRESHOLDS",
    "COCO_RECALL_THRESHOLDS",
    "PRESETS",
    "get_protocol",
    "preset_names",
    "load_protocol_file",
    "load_protocol_text",
    "protocol_from_mapping",
    "apply_overrides",
    "parse_yaml",
    "parse_yaml_value",
    "dump_protocol",
    "MAX_CONFIG_BYTES",
    "resolve_protocol",
]

#: Names loaded from their module on first access (PEP 562): the YAML layer's, as
#: :mod:`deteval.protocol.yaml` re-exports them.
__getattr__, __dir__ = lazy_names(globals(), _YAML_LAZY)
