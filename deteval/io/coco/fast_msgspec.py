"""The msgspec twins of the compiled parsers (:mod:`deteval.io.coco.fast`, ``fast_instances``).

Plain box results decoded by msgspec into the same columns as the C extension gives, bit for bit:
the path taken where the extension is not built (or ``DETEVAL_NO_EXTENSION=1``), and the twin the
compiled parser is tested against. The typed structs and getters are shared with
:mod:`deteval.io.coco.fast_instances`.
"""

from __future__ import annotations

import itertools
import operator
from typing import Annotated, Any

import numpy as np

from deteval._safe_read import count_raw_keys
from deteval.io.coco._common import _HAS_MSGSPEC, BoxColumns

if _HAS_MSGSPEC:  # decodes typed records straight into objects
    import msgspec as _msgspec

if _HAS_MSGSPEC:
    #: A JSON integer that fits int64; a larger one sends the file to the full loader.
    _Int64 = Annotated[int, _msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

    class _BoxResult(_msgspec.Struct, forbid_unknown_fields=True):
        """The four fields of a COCO box result, typed strictly (no bool ids, no float ids)."""

        image_id: _Int64
        category_id: _Int64
        bbox: tuple[float, float, float, float]
        score: float

    _BOX_RESULTS = _msgspec.json.Decoder(list[_BoxResult])


#: msgspec's marker of a field absent from a record (the ``_msgspec_*`` twins test for it).
UNSET = _msgspec.UNSET if _HAS_MSGSPEC else None

if _HAS_MSGSPEC:

    class _AnnotationFields(_msgspec.Struct, forbid_unknown_fields=True):
        """The fields a COCO annotation has, in a file or in memory, typed strictly."""

        id: _Int64
        image_id: _Int64
        category_id: _Int64
        bbox: tuple[float, float, float, float]
        area: float
        iscrowd: _Int64
        ignore: _Int64 | _msgspec.UnsetType = _msgspec.UNSET
        difficult: _Int64 | _msgspec.UnsetType = _msgspec.UNSET

    class _Annotation(_AnnotationFields):
        """A COCO annotation of a file; segmentation left undecoded."""

        segmentation: _msgspec.Raw | _msgspec.UnsetType = _msgspec.UNSET
        keypoints: list[float] | _msgspec.UnsetType = _msgspec.UNSET
        num_keypoints: _Int64 | _msgspec.UnsetType = _msgspec.UNSET

    class _Instances(_msgspec.Struct, forbid_unknown_fields=True):
        images: list[dict]
        annotations: list[_Annotation]
        categories: list[dict]
        info: Any = _msgspec.UNSET
        licenses: Any = _msgspec.UNSET

    _INSTANCES = _msgspec.json.Decoder(_Instances)


if _HAS_MSGSPEC:

    class _AnnotationObject(_AnnotationFields):
        """An in-memory COCO annotation, typed as :class:`_Annotation` types a file's."""

        segmentation: Any = _msgspec.UNSET


def _decode_or_none(raw: bytes, decoder: Any) -> Any:
    """The decoded value, or None when the file does not fit the fast path.

    The fast-path structs refuse unknown fields, so a file that cannot fit (results with a
    ``segmentation``, say) is given up at its first record, not after decoding all of it.
    msgspec raises UnicodeDecodeError for an unknown key that is not UTF-8: that, too, is for
    the full path to name.
    """
    try:
        return decoder.decode(raw)
    except (_msgspec.DecodeError, _msgspec.ValidationError, RecursionError, UnicodeDecodeError):
        return None  # the full path names the problem (RecursionError: nested too deeply)


def _msgspec_box_columns(raw: bytes) -> BoxColumns | None:
    """A plain box-results file's columns decoded by msgspec, or None when it is not plain.

    msgspec decodes typed records about twice as fast as building dicts, and its strict types
    refuse what deteval refuses (strings, floats or booleans as ids, NaN tokens). Only a clean
    file is taken: every record exactly these four keys (a raw count of keys against 4 per record,
    which also rules out duplicate keys). This is the twin the compiled parser is tested against.
    """
    if not _HAS_MSGSPEC:
        return None
    records = _decode_or_none(raw, _BOX_RESULTS)
    if records is None:
        return None
    if not records or count_raw_keys(raw) != 4 * len(records):
        return None
    return _typed_box_columns(records)


def _typed_box_columns(records: list) -> BoxColumns:
    """The columns of typed box records (:class:`_BoxResult`)."""
    n = len(records)
    image_ids = np.fromiter(map(_get_image_id, records), dtype=np.int64, count=n)
    category_ids = np.fromiter(map(_get_category_id, records), dtype=np.int64, count=n)
    score = np.fromiter(map(_get_score, records), dtype=np.float64, count=n)
    box = np.fromiter(
        itertools.chain.from_iterable(map(_get_bbox, records)), dtype=np.float64, count=4 * n
    ).reshape(n, 4)
    return image_ids, category_ids, box, score


def _msgspec_box_records(records: list) -> BoxColumns | None:
    """The columns of plain in-memory box records typed by ``msgspec.convert``, or None.

    :class:`_BoxResult` is strict: exactly the four keys, ``int`` ids within int64, no ``bool``,
    no float or numpy scalar as an id, no numpy scalar or array as a number. The twin the compiled
    reader is tested against.
    """
    if not _HAS_MSGSPEC or not records:
        return None
    try:
        typed = _msgspec.convert(records, list[_BoxResult])
    except (_msgspec.ValidationError, RecursionError):
        return None  # the full path reads or names it
    return _typed_box_columns(typed)


_get_id = operator.attrgetter("id")
_get_area = operator.attrgetter("area")
_get_iscrowd = operator.attrgetter("iscrowd")
_get_image_id = operator.attrgetter("image_id")
_get_category_id = operator.attrgetter("category_id")
_get_score = operator.attrgetter("score")
_get_bbox = operator.attrgetter("bbox")
