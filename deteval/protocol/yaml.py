"""YAML protocol files <-> :class:`~deteval.protocol.spec.Protocol`; the shipped presets.

The presets are the YAML files of ``deteval/protocol/presets/`` (the single source: a file there
is a preset, removing it removes the preset); :func:`get_protocol` loads them lazily.

A protocol file is either ``extends: PARENT`` plus the fields it changes, or a complete protocol
(every field that decides numbers)::

    # my-coco.yaml: COCO with up to 300 detections per image and class
    extends: coco
    max_dets: [1, 10, 300]

``PARENT`` is a preset name (the CLI command ``protocols`` lists them) or the path of another protocol
file ending in ``.yaml``/``.yml``, relative to the file that names it. The keys are the
:class:`~deteval.protocol.spec.Protocol` field names; lists become tuples, ``area_ranges`` is a
mapping ``name: [lo, hi]`` and ``iou_thresholds`` may be ``{start, stop, num}`` for
``np.linspace`` (pycocotools' thresholds bit for bit).

Rules, each one an error that names the file, the key path, what was expected and what was
found (:class:`~deteval.errors.ConfigError`):

* safe loading only: a tag such as ``!!python/object`` is refused before anything is built, so
  nothing a file says is ever run;
* duplicate keys, unknown keys, wrong types and out-of-range values are errors;
* ``name`` defaults to the file's stem and ``source`` to a line saying what the file changes;
  neither is inherited.

One rule changes a field you did not write, and says so in ``source``: a file (or ``--set``)
that changes ``max_dets`` of a parent whose ``summary`` is ``pycocotools`` without setting
``summary`` itself gets ``summary: configured``, because pycocotools' summary hard-codes
maxDets=100 for AP (it prints -1 when 100 is absent). Write ``summary: pycocotools`` to keep it.

The YAML syntax layer (safe loading, :func:`parse_yaml`, :func:`parse_yaml_value`) lives in
:mod:`deteval.protocol.safe_yaml` and :func:`dump_protocol` in :mod:`deteval.protocol.yaml_dump`;
both are re-exported here, loaded on first use (scoring under a shipped preset, parsed ahead in
:mod:`deteval.protocol.preset_cache`, imports neither).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deteval._lazy import lazy_names
from deteval._safe_read import MAX_BYTES, read_text
from deteval.errors import ConfigError
from deteval.protocol.preset_cache import parsed_preset
from deteval.protocol.spec import FIELDS, Protocol, check_field, describe_value, field_names, optional_fields

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from deteval.protocol.safe_yaml import parse_yaml, parse_yaml_value
    from deteval.protocol.yaml_dump import dump_protocol

__all__ = [
    "load_protocol_file",
    "load_protocol_text",
    "protocol_from_mapping",
    "apply_overrides",
    "parse_yaml",
    "parse_yaml_value",
    "dump_protocol",
    "MAX_CONFIG_BYTES",
    "get_protocol",
    "preset_names",
    "PRESETS",
    "DISPLAY_ORDER",
]

#: Protocol files are a few hundred bytes; anything above this is refused unread.
MAX_CONFIG_BYTES = MAX_BYTES["yaml"]

_MAX_EXTENDS_DEPTH = 16

_MISSING = object()

#: Names loaded from their module on first access (PEP 562).
_LAZY = {
    "parse_yaml": "deteval.protocol.safe_yaml",
    "parse_yaml_value": "deteval.protocol.safe_yaml",
    "dump_protocol": "deteval.protocol.yaml_dump",
}

__getattr__, __dir__ = lazy_names(globals(), _LAZY)


# ------------------------------------------------------------------------------------------
# Plain values -> validated protocol fields (the checks live in the field table, spec.py)
# ------------------------------------------------------------------------------------------


def _check_field(key: str, value: Any, where: str) -> Any:
    """One field's plain value -> the Protocol's representation, by the field table's checks.

    The same checks run again when the :class:`Protocol` is constructed (one implementation;
    running it here first makes the messages name the file instead of the protocol).
    """
    return check_field(key, value, where=where)


def _unknown_key_error(where: str, key: Any, allowed: tuple) -> ConfigError:
    import difflib  # only to suggest a name in an error message

    close = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ConfigError(f"{where}: {key}: unknown key{hint}; expected one of {', '.join(allowed)}")


def _format_value(value: Any) -> str:
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return "{" + ", ".join(f"{n}: [{lo:g}, {hi:g}]" for n, lo, hi in value) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) + "]"
    return str(value)


def _summary_rule(parent: Protocol, changes: dict) -> str | None:
    """Switch ``summary`` to configured when max_dets changes under pycocotools' summary.

    Returns the note to record in ``source`` (None when nothing was switched).
    """
    if (
        "summary" in changes
        or "max_dets" not in changes
        or parent.summary != "pycocotools"
        or changes["max_dets"] == parent.max_dets
    ):
        return None
    changes["summary"] = "configured"
    return (
        "summary set to 'configured' because max_dets changed (pycocotools' summary reports AP "
        "at maxDets=100 whatever max_dets says; write summary: pycocotools to keep it)"
    )


#: Preset whose ``area_ranges`` and ``max_dets`` a protocol takes when ``--set`` / ``--iou-type``
#: switches it to or from keypoints: pycocotools' ``Params(iouType)`` picks them the same way
#: (``setKpParams`` / ``setDetParams``).
IOU_TYPE_PARAMS_PRESETS = {
    "keypoints": "coco-keypoints",
    "bbox": "coco",
    "segm": "coco",
    "boundary": "coco",
    "rotated": "coco",
}


def _iou_type_rule(parent: Protocol, changes: dict) -> str | None:
    """Take pycocotools' area ranges and max_dets of the new iou_type on a keypoints switch.

    This applies when a switch to or from keypoints leaves them at the other type's values (and
    the same change does not set them).

    Returns the note to record in ``source`` (None when nothing was switched).
    """
    new = changes.get("iou_type", parent.iou_type)
    if (
        new == parent.iou_type
        or "keypoints" not in (new, parent.iou_type)
        or "area_ranges" in changes
        or "max_dets" in changes
    ):
        return None
    old_params = PRESETS[IOU_TYPE_PARAMS_PRESETS[parent.iou_type]]
    if (parent.area_ranges, parent.max_dets) != (old_params.area_ranges, old_params.max_dets):
        return None
    params = PRESETS[IOU_TYPE_PARAMS_PRESETS[new]]
    changes["area_ranges"] = params.area_ranges
    changes["max_dets"] = params.max_dets
    return (
        f"area_ranges and max_dets set to those of {params.name!r} for iou_type {new!r}, as "
        f"pycocotools' Params(iouType={new!r}) does"
    )


def _construct(base: Protocol, changes: dict, where: str) -> Protocol:
    try:
        return dataclasses.replace(base, **changes)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def protocol_from_mapping(
    data: Any,
    *,
    where: str = "<config>",
    base_dir: str | os.PathLike | None = None,
    default_name: str | None = None,
    _chain: tuple = (),
) -> Protocol:
    """Build a protocol from parsed YAML (a mapping of field names, maybe with ``extends``).

    Parameters
    ----------
    data : dict
        Parsed YAML.
    where : str
        Name of the source (file name) used in messages and in the default ``source``.
    base_dir : path, optional
        Directory against which an ``extends:`` file path is resolved (default: current).
    default_name : str, optional
        ``name`` when the mapping gives none (default: the stem of ``where``).

    Returns
    -------
    Protocol

    Raises
    ------
    ConfigError
        ``where: key.path: expected ..., found ...``.

    Examples
    --------
    >>> p = protocol_from_mapping({"extends": "voc2010", "iou_thresholds": [0.3]}, where="my.yaml")
    >>> p.name, p.iou_thresholds, p.ap_method
    ('my', (0.3,), 'all_point')
    >>> protocol_from_mapping({"extends": "coco", "max_dets": [1, 10, 300]}).summary
    'configured'
    """
    if not isinstance(data, dict):
        found = "an empty document" if data is None else describe_value(data)
        raise ConfigError(
            f"{where}: expected a mapping of protocol fields (extends: PRESET plus the "
            f"fields to change, or every field), found {found}"
        )
    allowed = ("extends",) + field_names()
    for key in data:
        if key not in allowed:
            raise _unknown_key_error(where, key, allowed)
    changes = {key: _check_field(key, value, where) for key, value in data.items() if key != "extends"}
    name = default_name if default_name is not None else Path(where).stem
    changes.setdefault("name", name)
    if "extends" in data:
        parent = _resolve_parent(data["extends"], where=where, base_dir=base_dir, chain=_chain)
        note = _summary_rule(parent, changes)
        if "source" not in changes:
            what = [
                f"{k}={_format_value(v)}"
                for k, v in changes.items()
                if k not in ("name", "summary") and v != getattr(parent, k)
            ]
            if "summary" in changes and note is None and changes["summary"] != parent.summary:
                what.append(f"summary={changes['summary']}")
            changes["source"] = (
                f"{where}: {parent.name}"
                + (f" with {', '.join(what)}" if what else "")
                + (f"; {note}" if note else "")
            )
        elif note:
            changes["source"] = f"{changes['source']} ({note})"
        return _construct(parent, changes, where)
    optional = optional_fields()
    required = [f for f, spec in FIELDS.items() if spec.stage != "describe" and f not in optional]
    missing = [f for f in required if f not in changes]
    if missing:
        raise ConfigError(
            f"{where}: expected `extends: PRESET` (one of {', '.join(preset_names())}) or "
            f"every protocol field; missing: {', '.join(missing)}"
        )
    changes.setdefault("source", where)
    for key, default in optional.items():
        changes.setdefault(key, default)
    try:
        return Protocol(**changes)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _resolve_parent(value: Any, *, where: str, base_dir: Any, chain: tuple) -> Protocol:
    names = preset_names()
    if not isinstance(value, str) or not value:
        raise ConfigError(
            f"{where}: extends: expected a preset name ({', '.join(names)}) or a path ending "
            f"in .yaml, found {describe_value(value)}"
        )
    if value.endswith((".yaml", ".yml")):
        path = Path(value)
        if not path.is_absolute():
            path = Path(base_dir if base_dir is not None else ".") / path
        return _load(path, chain=chain, referrer=f"{where}: extends")
    if value not in names:
        raise ConfigError(
            f"{where}: extends: expected a preset name ({', '.join(names)}) or a path "
            f"ending in .yaml, found {value!r}{_preset_hint(value, names)}"
        )
    return _preset(value, where=where, chain=chain)


def _load(path: Path, *, chain: tuple = (), referrer: str | None = None) -> Protocol:
    shown = os.fspath(path)
    real = os.path.realpath(path)
    if real in chain:
        names = [os.path.basename(p) for p in chain] + [os.path.basename(real)]
        raise ConfigError(f"{referrer or shown}: expected no cycle of `extends:`, found {' -> '.join(names)}")
    if len(chain) >= _MAX_EXTENDS_DEPTH:
        raise ConfigError(
            f"{referrer or shown}: expected at most {_MAX_EXTENDS_DEPTH} levels of `extends:`, found more"
        )
    try:  # read_text refuses FIFOs and devices, caps the size, records the file as an input
        text = read_text(
            os.fspath(path), what="a readable YAML protocol file", limit=MAX_CONFIG_BYTES, error=ConfigError
        )
    except ConfigError as exc:
        if referrer:
            raise ConfigError(f"{referrer}: expected a readable YAML protocol file, found {exc}") from None
        raise
    # a shipped preset's exact text: parsed ahead (preset_cache), no YAML parser loaded
    data = parsed_preset(text.encode("utf-8"))
    if data is None:
        from deteval.protocol.safe_yaml import parse_yaml

        data = parse_yaml(text, filename=shown)
    return protocol_from_mapping(data, where=shown, base_dir=path.parent, _chain=chain + (real,))


def load_protocol_file(path: str | os.PathLike) -> Protocol:
    r"""Load a YAML protocol file (``extends: PRESET`` plus fields, or a complete protocol).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    Protocol

    Raises
    ------
    ConfigError
        Unreadable file, invalid or unsafe YAML, unknown or duplicate keys, wrong types,
        out-of-range values, unknown or cyclic ``extends:``; the message names the file, the
        key path, what was expected and what was found.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "coco300.yaml").write_text("extends: coco\nmax_dets: [1, 10, 300]\n")
    >>> p = load_protocol_file(d / "coco300.yaml")
    >>> p.name, p.max_dets, p.summary
    ('coco300', (1, 10, 300), 'configured')
    """
    return _load(Path(path))


def load_protocol_text(
    text: str, *, filename: str = "<string>", base_dir: str | os.PathLike | None = None
) -> Protocol:
    r"""Like :func:`load_protocol_file`, from YAML text.

    >>> load_protocol_text("extends: voc2007\niou_comparison: '>'", filename="strict.yaml").iou_comparison
    '>'
    """
    from deteval.protocol.safe_yaml import parse_yaml

    return protocol_from_mapping(parse_yaml(text, filename=filename), where=filename, base_dir=base_dir)


def apply_overrides(protocol: Protocol, overrides: Mapping[str, Any], *, where: str = "--set") -> Protocol:
    """Change fields of ``protocol`` from plain values (``--set FIELD=VALUE`` on the CLI).

    The values are validated as in a file; the same ``summary`` rule applies, and the change is
    appended to ``source`` so the result says what was overridden.

    Examples
    --------
    >>> p = apply_overrides(PRESETS["voc2010"], {"iou_thresholds": [0.3]})
    >>> p.iou_thresholds, p.source.endswith("--set iou_thresholds=[0.3]")
    ((0.3,), True)
    >>> apply_overrides(PRESETS["voc2010"], {"iou_thresholds": "0.3"})
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: --set: iou_thresholds: expected a non-empty list of numbers in [0, 1] (e.g. [0.5]) or {start: 0.5, stop: 0.95, num: 10}, found the string '0.3'
    """
    if not overrides:
        return protocol
    allowed = field_names()
    for key in overrides:
        if key not in allowed:
            raise _unknown_key_error(where, key, allowed)
    changes = {key: _check_field(key, value, where) for key, value in overrides.items()}
    shown = ", ".join(f"{k}={_format_value(v)}" for k, v in changes.items())
    note = _summary_rule(protocol, changes)
    iou_note = _iou_type_rule(protocol, changes)
    note = "; ".join(n for n in (note, iou_note) if n) or None
    if "source" not in changes:
        changes["source"] = f"{protocol.source}; {where} {shown}" + (f"; {note}" if note else "")
    return _construct(protocol, changes, where)


# ------------------------------------------------------------------------------------------
# The shipped presets: deteval/protocol/presets/<name>.yaml
# ------------------------------------------------------------------------------------------

#: The folder of the preset files (package data). Tests point it at a copy.
PRESET_DIR = Path(str(importlib.resources.files("deteval.protocol") / "presets"))

#: Display order of the presets (the CLI command ``protocols``, messages): the reference tools first,
#: then their variants. It only orders: a preset is a file in :data:`PRESET_DIR`; names listed
#: here without a file are skipped, files not listed here come after, alphabetically.
DISPLAY_ORDER = (
    "coco",
    "coco-pycocotools",
    "coco50",
    "coco-exact-masks",
    "voc2007",
    "voc2010",
    "voc2012",
    "voc2007-pyfrcnn",
    "voc2010-pyfrcnn",
    "voc2007-continuous",
    "voc2010-continuous",
    "openimages",
    "openimages-challenge",
    "ultralytics",
    "ultralytics-8.3",
    "detectron2-voc",
    "coco-keypoints",
    "lvis",
    "lvis-fixed-ap",
    "crowdpose",
    "coco-boundary",
    "dota",
    "ultralytics-obb",
    "coco-rotated",
)


def preset_names() -> tuple:
    """The names of the shipped presets: the stems of the YAML files in :data:`PRESET_DIR`.

    >>> preset_names()[:4]
    ('coco', 'coco-pycocotools', 'coco50', 'coco-exact-masks')
    """
    stems = sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))
    known = [n for n in DISPLAY_ORDER if n in stems]
    return tuple(known + [n for n in stems if n not in known])


def get_protocol(name: str | Protocol) -> Protocol:
    """Return a preset by name (a :class:`Protocol` is returned unchanged).

    Presets are read from their YAML file on first use and kept for the process: the cache is
    an ``lru_cache`` on a pure loader keyed by (folder, name), so it holds no state a caller
    can observe other than speed (a :class:`Protocol` is frozen).

    Raises
    ------
    ConfigError
        If the name is unknown; the message lists the presets.

    Examples
    --------
    >>> get_protocol("voc2010").ap_method
    'all_point'
    """
    if isinstance(name, Protocol):
        return name
    names = preset_names()
    if isinstance(name, str) and name in names:
        return _load_preset(os.fspath(PRESET_DIR), name)
    raise ConfigError(
        f"unknown protocol {name!r}; expected a preset name ({', '.join(names)}) or a YAML file"
        f"{_preset_hint(name, names)}"
    )


def _preset_hint(name: object, names: tuple | list) -> str:
    """`` (did you mean 'voc2007'?)`` for a near miss of a preset name, else ``""``.

    Near misses are what people type: another case (``VOC2007``), a two-digit year (``voc07``,
    ``voc12``), a missing or extra hyphen, a typo (``coc``, ``ultralytic``).

    >>> _preset_hint("voc07", ["coco", "voc2007", "voc2010"])
    " (did you mean 'voc2007'?)"
    >>> _preset_hint("zzz", ["coco"])
    ''
    """
    import difflib  # only to suggest a name in an error message
    import re

    if not isinstance(name, str):
        return ""
    wanted = name.strip().lower().replace("_", "-")
    wanted = re.sub(r"^voc(\d\d)(?=$|-)", r"voc20\1", wanted)
    for candidate in names:
        if candidate == wanted or candidate.replace("-", "") == wanted.replace("-", ""):
            return f" (did you mean {candidate!r}?)"
    close = difflib.get_close_matches(wanted, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@functools.lru_cache(maxsize=64)
def _load_preset(folder: str, name: str) -> Protocol:
    return _load(Path(folder) / f"{name}.yaml")


def _preset(name: str, *, where: str, chain: tuple) -> Protocol:
    """The parent named by ``extends: NAME``.

    A preset file that extends a preset by name is loaded along the current chain (so a cycle
    among presets is reported, not recursed into); anything else uses the cache.
    """
    folder = os.path.realpath(PRESET_DIR)
    if any(os.path.dirname(c) == folder for c in chain):
        return _load(PRESET_DIR / f"{name}.yaml", chain=chain, referrer=f"{where}: extends")
    return get_protocol(name)


class _Presets(Mapping):
    """Read-only mapping name -> preset :class:`Protocol`, loaded lazily from the YAML files.

    >>> list(PRESETS)[:2], PRESETS["coco50"].iou_thresholds
    (['coco', 'coco-pycocotools'], (0.5,))
    """

    def __getitem__(self, name: str) -> Protocol:
        if not isinstance(name, str) or name not in preset_names():
            raise KeyError(name)
        return get_protocol(name)

    def __iter__(self) -> Iterator[str]:
        return iter(preset_names())

    def __len__(self) -> int:
        return len(preset_names())

    def __repr__(self) -> str:
        return f"PRESETS({', '.join(preset_names())})"


#: The presets as a read-only mapping (iteration in :func:`preset_names` order).
PRESETS: Mapping[str, Protocol] = _Presets()


def resolve_protocol(protocol: str | Protocol | os.PathLike) -> Protocol:
    """A preset name, a YAML file path, or a :class:`Protocol` (returned as is).

    Examples
    --------
    >>> resolve_protocol("voc2007").ap_method
    '11_point'
    >>> resolve_protocol(resolve_protocol("coco")) == resolve_protocol("coco")
    True
    """
    if isinstance(protocol, Protocol):
        return protocol
    if isinstance(protocol, os.PathLike) or (
        isinstance(protocol, str) and protocol.endswith((".yaml", ".yml"))
    ):
        return load_protocol_file(protocol)
    return get_protocol(protocol)
