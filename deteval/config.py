"""YAML protocol files -> :class:`~deteval.protocols.Protocol` (validated, safe loading only).

A protocol file is either ``extends: PARENT`` plus the fields it changes, or a complete protocol
(every field that decides numbers)::

    # my-coco.yaml: COCO with up to 300 detections per image and class
    extends: coco
    max_dets: [1, 10, 300]

``PARENT`` is a preset name (``deteval protocols`` lists them) or the path of another protocol
file ending in ``.yaml``/``.yml``, relative to the file that names it. The keys are the
:class:`~deteval.protocols.Protocol` field names; lists become tuples, ``area_ranges`` is a
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
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from deteval.errors import ConfigError
from deteval.protocols import FIELD_CHOICES, PRESETS, Protocol, field_names

__all__ = ["load_protocol_file", "load_protocol_text", "protocol_from_mapping", "apply_overrides",
           "parse_yaml", "parse_yaml_value", "dump_protocol", "OPTIONAL_FIELDS", "MAX_CONFIG_BYTES"]

#: Fields a complete protocol (no ``extends:``) may leave out, with the value they then take.
#: ``name``/``source`` default to the file; the others only matter for segm or 11-point.
OPTIONAL_FIELDS: dict[str, Any] = {"mask_iou": "exact", "invalid_polygons": "error",
                                   "eleven_point_grid": "matlab_colon"}

#: Protocol files are a few hundred bytes; anything above this is refused unread.
MAX_CONFIG_BYTES = 1 << 20

_MAX_EXTENDS_DEPTH = 16

#: Tags the safe loader may build. Anything else (``!!python/...``, ``!custom``) is refused.
_ALLOWED_TAGS = frozenset("tag:yaml.org,2002:" + t for t in (
    "null", "bool", "int", "float", "str", "seq", "map", "merge", "timestamp", "binary",
    "omap", "pairs", "set"))

_MISSING = object()


class _SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that also reads ``1e10`` as a float (YAML 1.2 style).

    Note
    ----
    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent: ``1e10`` is the
    *string* "1e10". Size ranges are naturally written ``[9216, 1e10]``, so the YAML 1.2 form is
    added; quoted values (``"0.5"``) stay strings and are refused where a number is expected.
    """


_SafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


# ------------------------------------------------------------------------------------------
# YAML text -> plain Python values
# ------------------------------------------------------------------------------------------

def parse_yaml(text: str, *, filename: str = "<string>") -> Any:
    """Parse one YAML document with safe loading, refusing duplicate keys and non-plain tags.

    Parameters
    ----------
    text : str
    filename : str
        Used in error messages only.

    Returns
    -------
    Any
        Plain values: dict, list, str, int, float, bool, None.

    Raises
    ------
    ConfigError
        Invalid YAML, several documents, a duplicate key, or a tag outside plain YAML.

    Examples
    --------
    >>> parse_yaml("area_ranges: {all: [0, 1e10]}")
    {'area_ranges': {'all': [0, 10000000000.0]}}
    >>> parse_yaml("a: 1\\na: 2", filename="x.yaml")
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: x.yaml: a: duplicate key (lines 1 and 2); expected each key once
    """
    return _parse(text, filename, "", "one YAML mapping of protocol fields")


def _parse(text: str, filename: str, root: str, expected: str) -> Any:
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node, root, filename, set())
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_error_message(exc, filename, expected)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{filename}: invalid YAML ({exc}); expected {expected}") from None
    except RecursionError:
        raise ConfigError(f"{filename}: YAML nested too deeply; expected {expected}") from None
    finally:
        loader.dispose()


def parse_yaml_value(text: str, *, where: str = "<value>", key: str = "") -> Any:
    """Parse a single value in YAML syntax (``--set FIELD=VALUE``), as :func:`parse_yaml` does.

    ``key`` starts the key path of error messages.

    >>> parse_yaml_value("[0.3, 0.5]")
    [0.3, 0.5]
    >>> parse_yaml_value("")
    >>> parse_yaml_value("{all: [0, 1], all: [0, 2]}", where="--set", key="area_ranges")
    Traceback (most recent call last):
    ...
    deteval.errors.ConfigError: --set: area_ranges.all: duplicate key (columns 2 and 15 of line 1); expected each key once
    """
    if not text.strip():
        return None
    return _parse(text, where, key, f"a value in YAML syntax{' for ' + key if key else ''}")


def _yaml_error_message(exc: yaml.MarkedYAMLError, filename: str, expected: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"{filename}: line {mark.line + 1}, column {mark.column + 1}" if mark else filename
    problem = " ".join(str(exc.problem or exc.context or exc).split())
    context = " ".join(str(exc.context or "").split())
    hint = ""
    if "block scalar" in problem or "block scalar" in context:
        hint = ' (quote values that start with ">" or "|", e.g. iou_comparison: ">=")'
    elif "found character" in problem and "\\t" in problem:
        hint = " (YAML indentation uses spaces, not tabs)"
    return f"{where}: invalid YAML: {problem}{hint}; expected {expected}"


def _check_nodes(node: yaml.Node, path: str, filename: str, seen: set) -> None:
    """Refuse duplicate keys and any tag outside plain YAML, before anything is constructed.

    A node reached twice is an alias (``*name``): refused, which also stops alias bombs.
    """
    if id(node) in seen:
        line = node.start_mark.line + 1
        raise ConfigError(f"{filename}: {path or '(document)'}: anchors and aliases (&name / *name, "
                          f"line {line}) are not allowed; expected plain values (a protocol "
                          f"inherits with `extends:`)")
    seen.add(id(node))
    if node.tag not in _ALLOWED_TAGS:
        line = node.start_mark.line + 1
        tag = node.tag.replace("tag:yaml.org,2002:", "!!", 1)
        raise ConfigError(f"{filename}: {path or '(document)'}: tag {tag!r} (line {line}) is not "
                          f"allowed; expected plain YAML values (deteval loads YAML safely: "
                          f"nothing was constructed or run)")
    if isinstance(node, yaml.MappingNode):
        first_line: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                _check_nodes(value_node, path, filename, seen)
                continue
            _check_nodes(key_node, path, filename, seen)
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node.value)
            child = f"{path}.{key}" if path else str(key)
            line, column = key_node.start_mark.line + 1, key_node.start_mark.column + 1
            if key in first_line:
                (line0, column0) = first_line[key]
                at = (f"lines {line0} and {line}" if line0 != line
                      else f"columns {column0} and {column} of line {line}")
                raise ConfigError(f"{filename}: {child}: duplicate key ({at}); expected each key once")
            first_line[key] = (line, column)
            _check_nodes(value_node, child, filename, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_nodes(item, f"{path}[{i}]", filename, seen)


# ------------------------------------------------------------------------------------------
# Plain values -> validated protocol fields
# ------------------------------------------------------------------------------------------

def _describe(value: Any) -> str:
    """How a found value is named in messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean; YAML reads yes/no/on/off/true/false so)"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        text = repr(value)
        return f"the list {text if len(text) <= 60 else text[:57] + '...'}"
    if isinstance(value, dict):
        return f"a mapping with keys {list(value)[:8]}"
    return f"{type(value).__name__} {value!r}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fail(where: str, path: str, expected: str, found: Any) -> ConfigError:
    return ConfigError(f"{where}: {path}: expected {expected}, found {_describe(found)}")


def _check_choice(key: str, value: Any, where: str) -> str:
    allowed = FIELD_CHOICES[key]
    if value not in allowed or not isinstance(value, str):
        hint = ""
        if key == "iou_comparison":
            hint = ' (quoted: iou_comparison: ">=")'
        raise _fail(where, key, f"one of {', '.join(repr(a) for a in allowed)}{hint}", value)
    return value


def _check_text(key: str, value: Any, where: str) -> str:
    if not isinstance(value, str) or (key == "name" and not value.strip()):
        raise _fail(where, key, "a non-empty string" if key == "name" else "a string", value)
    return value


def _check_iou_thresholds(value: Any, where: str) -> tuple:
    key = "iou_thresholds"
    if isinstance(value, dict):
        required = ("start", "stop", "num")
        unknown = [k for k in value if k not in required]
        missing = [k for k in required if k not in value]
        if unknown or missing:
            raise _fail(where, key, "a list of numbers, or exactly {start, stop, num} for "
                                    "np.linspace(start, stop, num)", value)
        for k in ("start", "stop"):
            if not _is_number(value[k]) or not 0.0 <= value[k] <= 1.0:
                raise _fail(where, f"{key}.{k}", "a number in [0, 1]", value[k])
        num = value["num"]
        if not isinstance(num, int) or isinstance(num, bool) or not 1 <= num <= 1000:
            raise _fail(where, f"{key}.num", "an integer in [1, 1000]", num)
        if num > 1 and value["start"] == value["stop"]:
            raise _fail(where, key, "start < stop when num > 1", value)
        # Exactly pycocotools' construction: np.linspace(start, stop, num, endpoint=True).
        return tuple(float(t) for t in np.linspace(value["start"], value["stop"], num, endpoint=True))
    if not isinstance(value, list) or not value:
        raise _fail(where, key, "a non-empty list of numbers in [0, 1] (e.g. [0.5]) or "
                                "{start: 0.5, stop: 0.95, num: 10}", value)
    out = []
    for i, t in enumerate(value):
        if not _is_number(t) or not 0.0 <= t <= 1.0:
            raise _fail(where, f"{key}[{i}]", "a number in [0, 1]", t)
        out.append(float(t))
    if len(set(out)) != len(out):
        raise _fail(where, key, "distinct thresholds", value)
    return tuple(out)


def _check_area_ranges(value: Any, where: str) -> tuple:
    key = "area_ranges"
    if not isinstance(value, dict) or not value:
        raise _fail(where, key, "a non-empty mapping name: [lo, hi] (e.g. {all: [0, 1e10], "
                                "small: [0, 1024]})", value)
    out = []
    for name, bounds in value.items():
        if not isinstance(name, str) or not name:
            raise _fail(where, f"{key}.{name}", "a range name that is a non-empty string", name)
        path = f"{key}.{name}"
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise _fail(where, path, "[lo, hi], two numbers", bounds)
        for i, b in enumerate(bounds):
            if not _is_number(b) or not math.isfinite(b) or b < 0:
                raise _fail(where, f"{path}[{i}]", "a finite number >= 0 (areas in pixels², e.g. 1e10 "
                                                   "for no upper bound)", b)
        lo, hi = float(bounds[0]), float(bounds[1])
        if lo > hi:
            raise _fail(where, path, "[lo, hi] with lo <= hi", bounds)
        out.append((name, lo, hi))
    return tuple(out)


def _check_max_dets(value: Any, where: str) -> tuple | None:
    key = "max_dets"
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise _fail(where, key, "a non-empty list of positive integers (e.g. [1, 10, 100]) or null "
                                "for no cap", value)
    for i, m in enumerate(value):
        if not isinstance(m, int) or isinstance(m, bool) or m < 1:
            raise _fail(where, f"{key}[{i}]", "a positive integer", m)
    if any(b <= a for a, b in zip(value, value[1:], strict=False)):
        raise _fail(where, key, "strictly increasing values (pycocotools sorts them)", value)
    return tuple(value)


def _check_field(key: str, value: Any, where: str) -> Any:
    """Validate one field's plain value and return it in the Protocol's representation."""
    if key in FIELD_CHOICES:
        return _check_choice(key, value, where)
    if key in ("name", "source"):
        return _check_text(key, value, where)
    if key == "iou_thresholds":
        return _check_iou_thresholds(value, where)
    if key == "area_ranges":
        return _check_area_ranges(value, where)
    if key == "max_dets":
        return _check_max_dets(value, where)
    # A field this module does not know in detail: the Protocol validates it.
    return tuple(value) if isinstance(value, list) else value


def _unknown_key_error(where: str, key: Any, allowed: tuple) -> ConfigError:
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
    if ("summary" in changes or "max_dets" not in changes or parent.summary != "pycocotools"
            or changes["max_dets"] == parent.max_dets):
        return None
    changes["summary"] = "configured"
    return ("summary set to 'configured' because max_dets changed (pycocotools' summary reports AP "
            "at maxDets=100 whatever max_dets says; write summary: pycocotools to keep it)")


def _construct(base: Protocol, changes: dict, where: str) -> Protocol:
    try:
        return dataclasses.replace(base, **changes)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def protocol_from_mapping(data: Any, *, where: str = "<config>", base_dir: str | os.PathLike | None = None,
                          default_name: str | None = None, _chain: tuple = ()) -> Protocol:
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
        found = "an empty document" if data is None else _describe(data)
        raise ConfigError(f"{where}: expected a mapping of protocol fields (extends: PRESET plus the "
                          f"fields to change, or every field), found {found}")
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
            what = [f"{k}={_format_value(v)}" for k, v in changes.items() if k not in ("name", "summary")
                    and v != getattr(parent, k)]
            if "summary" in changes and note is None and changes["summary"] != parent.summary:
                what.append(f"summary={changes['summary']}")
            changes["source"] = (f"{where}: {parent.name}" + (f" with {', '.join(what)}" if what else "")
                                 + (f"; {note}" if note else ""))
        elif note:
            changes["source"] = f"{changes['source']} ({note})"
        return _construct(parent, changes, where)
    required = [f for f in field_names() if f not in ("name", "source") and f not in OPTIONAL_FIELDS]
    missing = [f for f in required if f not in changes]
    if missing:
        raise ConfigError(f"{where}: expected `extends: PRESET` (one of {', '.join(PRESETS)}) or every "
                          f"protocol field; missing: {', '.join(missing)}")
    changes.setdefault("source", where)
    for key, default in OPTIONAL_FIELDS.items():
        changes.setdefault(key, default)
    try:
        return Protocol(**changes)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _resolve_parent(value: Any, *, where: str, base_dir: Any, chain: tuple) -> Protocol:
    if not isinstance(value, str) or not value:
        raise _fail(where, "extends", f"a preset name ({', '.join(PRESETS)}) or a path ending in .yaml",
                    value)
    if value.endswith((".yaml", ".yml")):
        path = Path(value)
        if not path.is_absolute():
            path = Path(base_dir if base_dir is not None else ".") / path
        return _load(path, chain=chain, referrer=f"{where}: extends")
    if value not in PRESETS:
        close = difflib.get_close_matches(value, list(PRESETS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{where}: extends: expected a preset name ({', '.join(PRESETS)}) or a path "
                          f"ending in .yaml, found {value!r}{hint}")
    return PRESETS[value]


def _load(path: Path, *, chain: tuple = (), referrer: str | None = None) -> Protocol:
    shown = os.fspath(path)
    real = os.path.realpath(path)
    if real in chain:
        names = [os.path.basename(p) for p in chain] + [os.path.basename(real)]
        raise ConfigError(f"{referrer or shown}: expected no cycle of `extends:`, found "
                          f"{' -> '.join(names)}")
    if len(chain) >= _MAX_EXTENDS_DEPTH:
        raise ConfigError(f"{referrer or shown}: expected at most {_MAX_EXTENDS_DEPTH} levels of "
                          f"`extends:`, found more")
    try:
        size = os.path.getsize(path)
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{shown}: expected a protocol file under {MAX_CONFIG_BYTES} bytes, found "
                              f"{size} bytes")
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        if referrer:
            raise ConfigError(f"{referrer}: expected a readable YAML protocol file, found {shown} "
                              f"({exc.strerror})") from None
        raise ConfigError(f"{shown}: expected a readable YAML protocol file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{shown}: expected UTF-8 text, found undecodable bytes") from None
    data = parse_yaml(text, filename=shown)
    return protocol_from_mapping(data, where=shown, base_dir=path.parent, _chain=chain + (real,))


def load_protocol_file(path: str | os.PathLike) -> Protocol:
    """Load a YAML protocol file (``extends: PRESET`` plus fields, or a complete protocol).

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
    >>> _ = (d / "coco300.yaml").write_text("extends: coco\\nmax_dets: [1, 10, 300]\\n")
    >>> p = load_protocol_file(d / "coco300.yaml")
    >>> p.name, p.max_dets, p.summary
    ('coco300', (1, 10, 300), 'configured')
    """
    return _load(Path(path))


def load_protocol_text(text: str, *, filename: str = "<string>",
                       base_dir: str | os.PathLike | None = None) -> Protocol:
    """Like :func:`load_protocol_file`, from YAML text.

    >>> load_protocol_text("extends: voc2007\\niou_comparison: '>'", filename="strict.yaml").iou_comparison
    '>'
    """
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
    if "source" not in changes:
        changes["source"] = f"{protocol.source}; {where} {shown}" + (f"; {note}" if note else "")
    return _construct(protocol, changes, where)


# ------------------------------------------------------------------------------------------
# Protocol -> YAML
# ------------------------------------------------------------------------------------------

def dump_protocol(protocol: Protocol) -> str:
    """A complete YAML protocol file that loads back to ``protocol`` (equal, field for field).

    Thresholds that are exactly ``np.linspace(first, last, n)`` are written as
    ``{start, stop, num}``; floats otherwise keep every digit.

    Examples
    --------
    >>> text = dump_protocol(PRESETS["coco"])
    >>> "iou_thresholds: {start: 0.5, stop: 0.95, num: 10}" in text
    True
    >>> load_protocol_text(text) == PRESETS["coco"]
    True
    """
    data: dict[str, Any] = {}
    for key, value in protocol.to_dict().items():
        if key == "iou_thresholds" and len(value) > 2:
            spaced = [float(t) for t in np.linspace(value[0], value[-1], len(value), endpoint=True)]
            if spaced == list(value):
                value = {"start": value[0], "stop": value[-1], "num": len(value)}
        data[key] = value
    return yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=None,
                     width=100, allow_unicode=True)
