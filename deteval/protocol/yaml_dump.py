"""Protocol -> YAML: :func:`dump_protocol` writes a complete protocol file.

The text loads back (:func:`deteval.protocol.yaml.load_protocol_text`) to an equal
:class:`~deteval.protocol.spec.Protocol`, field for field.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.protocol.fields import FIELDS
from deteval.protocol.spec import Protocol

__all__ = ["dump_protocol"]


def dump_protocol(protocol: Protocol) -> str:
    """A complete YAML protocol file that loads back to ``protocol`` (equal, field for field).

    Thresholds that are exactly ``np.linspace(first, last, n)`` are written as
    ``{start, stop, num}``; floats otherwise keep every digit.

    Examples
    --------
    >>> from deteval.protocol.yaml import PRESETS, load_protocol_text
    >>> text = dump_protocol(PRESETS["coco"])
    >>> "iou_thresholds: {start: 0.5, stop: 0.95, num: 10}" in text
    True
    >>> load_protocol_text(text) == PRESETS["coco"]
    True
    """
    import yaml  # writing a protocol only: scoring with one never loads yaml

    data: dict[str, Any] = {}
    for key, value in _every_field(protocol).items():
        if key == "iou_thresholds" and len(value) > 2:
            spaced = [float(t) for t in np.linspace(value[0], value[-1], len(value), endpoint=True)]
            if spaced == list(value):
                value = {"start": value[0], "stop": value[-1], "num": len(value)}
        data[key] = value
    return yaml.dump(
        data, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=None, width=100, allow_unicode=True
    )


def _every_field(protocol: Protocol) -> dict[str, Any]:
    """Every field of ``protocol`` as a plain YAML value, the sparse ones at their default included.

    :meth:`Protocol.to_dict` leaves a sparse field at its default out (so fingerprints of older
    releases stay valid); a file meant as a complete starting point writes it, so a reader sees
    every choice the protocol makes.
    """
    listed = protocol.to_dict()
    data: dict[str, Any] = {}
    for key in FIELDS:
        value = listed[key] if key in listed else getattr(protocol, key)
        if isinstance(value, tuple):
            value = [list(v) if isinstance(v, tuple) else v for v in value]
        data[key] = value
    return data
