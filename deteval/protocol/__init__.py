"""Protocols as data: the frozen :class:`Protocol`, its field table, YAML files and the presets.

* :mod:`deteval.protocol.spec`: :class:`Protocol` and :data:`FIELDS`, the one table of its
  fields (values, stage, explain step, doc, validation);
* :mod:`deteval.protocol.yaml`: YAML files <-> protocols (``extends:``, ``--set``), and the
  presets, which are the YAML files of ``deteval/protocol/presets/``.
"""

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
from deteval.protocol.yaml import (
    MAX_CONFIG_BYTES,
    PRESETS,
    apply_overrides,
    dump_protocol,
    get_protocol,
    load_protocol_file,
    load_protocol_text,
    parse_yaml,
    parse_yaml_value,
    preset_names,
    protocol_from_mapping,
    resolve_protocol,
)

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
