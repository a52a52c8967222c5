"""Fast paths of COCO ground truth: plain instances files decoded straight into columns.

The annotations are parsed by the optional C extension (:mod:`deteval.io._colparse`, the one
:mod:`deteval.io.coco.fast` loads) when it was built, else decoded by msgspec; segmentations are
kept raw (:class:`RawSegmentations`, :class:`SpanSegmentations`) until a segm evaluation reads
them. Anything unusual returns None and the full reader names the problem.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import threading
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from deteval._safe_read import count_json_keys, count_raw_keys, json_keys
from deteval._safe_read.strict_json import (
    DECLINED,
    _count_keys,
    _too_deep,
    loads_small,
    orjson_loads,
    orjson_module,
)
from deteval._values import frozen
from deteval.data import GroundTruth
from deteval.errors import InputError
from deteval.io._text import FileBytes
from deteval.io.coco import fast as _fast  # its _colparse, read at call time (one switch)
from deteval.io.coco._common import _HAS_MSGSPEC, _duplicates, capacity_buffer
from deteval.io.coco.instances import _assemble_gt, _image_columns_and_categories, _images_and_categories

if TYPE_CHECKING:  # imported where the columns are made (a segm evaluation reads them)
    from deteval.masks.sources import PolygonSegmentations, RleSegmentations


class RawSegmentations(Sequence):
    """Annotation segmentations kept as raw JSON until a segm evaluation reads them.

    A box evaluation never needs the polygons, and parsing them is most of the cost of reading
    a COCO instances file. Items decode on access (``None`` where a record has none).
    """

    def __init__(self, raws: list, loads: Callable[[bytes], Any]):
        self._raws = raws
        self._loads = loads

    def __len__(self) -> int:
        return len(self._raws)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        raw = self._raws[index]
        return None if raw is None else self._loads(bytes(raw))


class SpanSegmentations(Sequence):
    """Annotation segmentations kept as byte spans of the file until a segm evaluation reads them.

    What the compiled instances parser gives (:func:`_compiled_instances`): the file's bytes and,
    per annotation, the start and stop offsets of its segmentation (-1 where it has none). Items
    decode on access, as :class:`RawSegmentations` items do (``None`` where a record has none).

    A ground truth read from a file does not keep the file's bytes (:meth:`keep_on_disk`: a box
    evaluation never reads them, and they are most of the file): the first item read reads the
    file again, and refuses it unless it is the same bytes (size and CRC-32 of what was parsed).
    A pickled copy carries the bytes.
    """

    def __init__(self, raw: bytes, starts: np.ndarray, stops: np.ndarray, loads: Callable[[bytes], Any]):
        self._raw: bytes | None = raw
        # Offsets into the file: int32 below 2 GiB (they stay while the ground truth does).
        offsets = np.int32 if len(raw) < 2**31 else np.int64
        self._starts = starts.astype(offsets, copy=False)
        self._stops = stops.astype(offsets, copy=False)
        self._loads = loads
        self._origin: FileBytes | None = None  # reads the file again once the bytes are dropped

    def has_spans(self) -> bool:
        """Whether any record has a segmentation (whose bytes :meth:`keep_on_disk` must vouch for)."""
        return int(self._starts.max(initial=-1)) >= 0

    def keep_on_disk(self, path: str, crc: int | None = None) -> None:
        """Drop the bytes; read them again from ``path`` (which they were read from) when needed.

        Without any segmentation span nothing is kept (not even the file's size and CRC-32).
        ``crc``: the bytes' ``zlib.crc32`` when the caller computed it already.
        """
        raw = self._raw
        if raw is not None and not self.has_spans():
            self._raw = b""  # no record has a segmentation: nothing is ever read (a keypoint file)
        elif raw is not None:
            self._origin = FileBytes(path, raw, "the ground truth", crc=crc)
            self._raw = None

    def _bytes(self) -> bytes:
        if self._raw is None:
            assert self._origin is not None  # the constructor sets the bytes; only keep_on_disk drops them
            self._raw = self._origin()
        return self._raw

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        start = int(self._starts[index])
        return None if start < 0 else self._loads(self._bytes()[start : int(self._stops[index])])

    def flat_columns(self) -> RleSegmentations | PolygonSegmentations | None:
        """The segmentations as flat columns when they are all compressed RLEs or all polygon lists.

        Read by the C extension as the segm-results reader reads them (``_colparse.rle_spans``:
        ``{"size": [h, w], "counts": "..."}`` into one blob of unescaped strings;
        ``_colparse.polygon_spans``: polygon lists into numbers per part and coordinates), so that
        a segm evaluation checks and compares them there, with no object per annotation. None
        without the extension, or when any annotation has none, or another form (a mix, uncompressed
        counts, anything the readers leave to the full decoder): the records are then decoded one
        by one.
        """
        colparse = _fast._colparse
        if colparse is None or not hasattr(colparse, "polygon_spans") or not len(self):
            return None
        from deteval.masks.sources import PolygonSegmentations, RleSegmentations

        starts, stops = self._starts.astype(np.int64), self._stops.astype(np.int64)
        if (starts < 0).any():
            return None
        raw = self._bytes()
        n, total = len(starts), int((stops - starts).sum())
        first = raw[int(starts[0]) : int(stops[0])].lstrip()[:1]
        if first == b"{":
            size = np.empty((n, 2), dtype=np.int64)
            counts_start, counts_stop = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
            blob = np.empty(total, dtype=np.uint8)  # strings are within their spans
            n_blob = colparse.rle_spans(raw, starts, stops, size, counts_start, counts_stop, blob)
            if n_blob is None:
                return None
            blob.resize(n_blob, refcheck=False)
            if self._origin is not None:  # dropped again: the blob holds what masks read (an item
                self._raw = None  # read for a message reads the file again, as the first one did)
            return RleSegmentations((size, blob, np.append(counts_start, n_blob)))
        # a number takes at least 2 bytes with its comma or bracket: bounds of both counts
        n_parts = np.empty(n, dtype=np.int64)
        part_len = np.empty(total // 2 + 1, dtype=np.int64)
        coords = np.empty(total // 2 + 1, dtype=np.float64)
        found = colparse.polygon_spans(raw, starts, stops, n_parts, part_len, coords)
        if found is None:
            return None
        n_part, n_coord = found
        part_len.resize(n_part, refcheck=False)
        coords.resize(n_coord, refcheck=False)
        return PolygonSegmentations(raw, starts, stops, (n_parts, part_len, coords), self._loads)

    def __getstate__(self) -> dict:
        """Pickled with the bytes: a copy never depends on the file."""
        state = self.__dict__.copy()
        state["_raw"], state["_origin"] = self._bytes(), None
        return state


class _Absent:
    """``info`` or ``licenses`` not in the file (JSON ``null`` there is None)."""

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()

#: The top-level keys of a plain instances file.
_TOP_KEYS = frozenset({"images", "annotations", "categories", "info", "licenses"})


@frozen(eq=False)
class _Rest:
    """An instances document outside its annotations: what the checks and the assembly read."""

    images: list
    categories: list
    info: Any = _ABSENT
    licenses: Any = _ABSENT
    #: The images read into columns by the C extension (:func:`_compiled_images`; ``images`` is
    #: then ``[]``): ids, widths, heights and file names (None where absent).
    image_columns: tuple[np.ndarray, np.ndarray, np.ndarray, list] | None = dataclasses.field(
        default=None, kw_only=True
    )


#: The annotation columns of an instances file: id, image_id, category_id (int64), bbox (n, 4),
#: area (float64), iscrowd, ignore, difficult (int64; 0 where absent), the raw segmentations,
#: and -- when every annotation has ``keypoints`` -- the keypoints (float64 (n, n_keypoints, 3))
#: and ``num_keypoints`` (int64, -1 where absent), else None and None.
AnnColumns = tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    Any,
    np.ndarray | None,
    np.ndarray | None,
]

#: Bytes of the shortest annotation the compiled parser accepts, with its comma:
#: ``{"id":0,"image_id":0,"category_id":0,"bbox":[0,0,0,0],"area":0,"iscrowd":0},``.
_MIN_ANNOTATION_BYTES = 76


def _fast_ground_truth(raw: bytes, path: str, *, threads: int = 1) -> GroundTruth | None:
    """Read a plain COCO instances file without parsing its polygons, or None for the full path.

    The compiled parser reads the ``annotations`` array (:func:`_compiled_instances`), else
    msgspec reads the whole document (:func:`_msgspec_instances`); both read only the plain shape
    and give the same columns bit for bit. Then one set of checks (:func:`_ground_truth_from`).
    ``threads``: the compiled parser's parts of the annotations array (the same columns); above
    one, the CRC-32 kept for the segmentations is computed on a second thread meanwhile.
    """
    parts = _compiled_instances(raw, threads) if _fast._colparse is not None else None
    if parts is None and _HAS_MSGSPEC:
        parts = _msgspec_instances(raw)
    if parts is None:
        return None
    data, columns = parts
    del parts
    segmentation = columns[8]
    spans = isinstance(segmentation, SpanSegmentations) and segmentation.has_spans()
    # The file's CRC-32 (kept for the segmentations, below) on another thread while this one checks
    # and assembles the columns: zlib releases the GIL (bbox ground truth 20k, 57 MB: ~20 ms).
    crc = _crc_on_a_thread(raw) if spans and threads > 1 else None
    gt = _ground_truth_from(data, columns, path)
    if isinstance(segmentation, SpanSegmentations):
        # the file's bytes are not kept (a box evaluation never reads them)
        segmentation.keep_on_disk(path, crc=None if crc is None else crc())
    return gt


def _crc_on_a_thread(raw: bytes) -> Callable[[], int]:
    """``zlib.crc32(raw)`` started on a new thread; call the result to wait for the value."""
    out: list[int] = []
    worker = threading.Thread(target=lambda: out.append(zlib.crc32(raw)), daemon=True)
    try:
        worker.start()
    except RuntimeError:  # no thread to be had: on this one
        return lambda: zlib.crc32(raw)

    def value() -> int:
        worker.join()
        return out[0] if out else zlib.crc32(raw)  # the thread failed (no memory): on this one

    return value


def _same_keys(raw: bytes, keys: int) -> bool:
    """True when the JSON text ``raw`` (decoded) has ``keys`` object keys: no duplicate among them.

    The fast upper bound (:func:`count_raw_keys`) first; when it is above ``keys``, the exact count
    (:func:`count_json_keys`: a string value opening with ``:``, as an RLE ``counts`` string of a
    run of 10 does, is no key).
    """
    return count_raw_keys(raw) == keys or count_json_keys(raw) == keys


_RLE_KEYS = sorted([b'"size"', b'"counts"'])


#: What may spell a number beyond float64 in a text of numbers: an exponent, or 300 digits in a row.
_MAYBE_HUGE = re.compile(rb"[eE]|[0-9]{300}")


def _decodable(segm: list) -> bool:
    """True when every raw segmentation decodes: msgspec leaves them raw, orjson reads them on access.

    orjson refuses a number beyond float64 (``1e400``), as the full loader does; the compiled parser
    refuses it too. RLE objects are decoded one by one; the other forms (polygon lists, numbers
    only) all at once, and only when their text has an exponent or a 300-digit run.
    """
    raws = [bytes(r) for r in segm if r is not None]
    others = b",".join(r for r in raws if r[:1] != b"{")
    orjson = orjson_module()
    assert orjson is not None  # _msgspec_instances checks it first
    try:
        for r in raws:
            if r[:1] == b"{":
                orjson.loads(r)
        if _MAYBE_HUGE.search(others):
            orjson.loads(b"[" + others + b"]")
    except orjson.JSONDecodeError:
        return False
    return True


def _rest_keys(data: _Rest) -> int:
    """The object keys of an instances document outside its annotations' records."""
    keys = 3 + _count_keys(data.images) + _count_keys(data.categories)
    for extra in (data.info, data.licenses):
        if extra is not _ABSENT:
            keys += 1 + _count_keys(extra)
    return keys


def _plain_rest(rest: bytes) -> _Rest | None:
    """The document outside its annotations (``"annotations": []`` in ``rest``), or None.

    Decoded as the full loader decodes a file: by orjson, or by the standard library where that
    gives orjson's value (:func:`~deteval._safe_read.strict_json.loads_small`: what the compiled
    readers leave of a file is a few kilobytes, and importing orjson would cost more than decoding
    them). Taken only in the plain shape the msgspec twin types
    (:class:`deteval.io.coco.fast_msgspec._Instances`): an object with the ``images`` (``[]`` when
    the compiled images parser read them), ``annotations`` (empty) and ``categories`` arrays of
    objects, ``info`` and ``licenses`` optional, no other key, nested at most
    :data:`deteval._safe_read.MAX_DEPTH` levels. Duplicate keys are the caller's count.
    """
    doc = loads_small(rest)
    if doc is DECLINED:
        orjson = orjson_module()
        if orjson is None:
            return None
        try:
            doc = orjson.loads(rest)
        except orjson.JSONDecodeError:
            return None  # the full path names it (or reads what orjson refuses: a 70-bit id, say)
    if type(doc) is not dict or not doc.keys() <= _TOP_KEYS or doc.get("annotations") != []:
        return None
    if _too_deep(doc):  # the full loader's depth rule (deteval._safe_read.loads_strict)
        return None
    images, categories = doc.get("images"), doc.get("categories")
    if type(images) is not list or type(categories) is not list:
        return None
    if not all(type(x) is dict for x in itertools.chain(images, categories)):
        return None
    return _Rest(images, categories, doc.get("info", _ABSENT), doc.get("licenses", _ABSENT))


def _compiled_instances(raw: bytes, threads: int = 1) -> tuple[Any, AnnColumns] | None:
    """An instances file read by the C extension (annotations) and orjson (the rest), or None.

    The extension parses the top-level ``annotations`` array into columns, keeping each
    segmentation as a byte span of ``raw`` (:class:`SpanSegmentations`); orjson decodes the rest
    of the document with that array replaced by ``[]`` (:func:`_plain_rest`), and a raw count of
    its keys rules out duplicates there, as in :func:`_msgspec_instances`. None when the
    extension is not available or anything is not plain: the msgspec path and then the full
    loader decide. msgspec is not imported here.
    """
    if _fast._colparse is None:
        return None
    capacity = len(raw) // _MIN_ANNOTATION_BYTES + 1
    ints = [capacity_buffer(capacity, np.int64) for _ in range(8)]
    ids, image_ids, category_ids, crowd, ignore, difficult, starts, stops = ints
    box = capacity_buffer(4 * capacity, np.float64)
    area = capacity_buffer(capacity, np.float64)
    # The keypoint buffers are given to every file, so that a keypoint file is parsed once and no
    # other file is searched for the key first (``b'"keypoints"' in raw`` read 57 MB of boxes and
    # polygons at ~1 GB/s: 50 ms at 20,000 images). Untouched pages of ``np.empty`` are never
    # resident: the numbers (up to one per 2 bytes) only where a file has keypoints; ``num_keypoints``
    # (-1 where absent) is written for every annotation, one int64 each, and dropped when no
    # annotation has keypoints (the columns are then those without the buffers).
    numbers = capacity_buffer(len(raw) // 2 + 1, np.float64)
    num_keypoints = capacity_buffer(capacity, np.int64)
    found = _fast._colparse.instances(
        raw,
        ids,
        image_ids,
        category_ids,
        box,
        area,
        crowd,
        ignore,
        difficult,
        starts,
        stops,
        numbers,
        num_keypoints,
        threads,
    )
    if found is None:
        return None
    n, start, stop, per_record = found
    keypoints = counts = None
    if per_record:
        numbers.resize(n * per_record, refcheck=False)  # in place: no view of it exists yet
        keypoints = numbers.reshape(n, per_record // 3, 3)
        num_keypoints.resize(n, refcheck=False)
        counts = num_keypoints
    del numbers, num_keypoints
    image_columns = _compiled_images(raw)
    spans = [(start, stop)] if image_columns is None else sorted([(start, stop), image_columns[0]])
    rest = _without(raw, spans)
    data = _plain_rest(rest)
    if data is None or not _same_keys(rest, _rest_keys(data)):
        return None
    del rest
    if image_columns is not None:
        if data.images:  # a second ``images`` key: the key count above refuses it already
            return None
        data = dataclasses.replace(data, image_columns=image_columns[1])
    for column in ints:
        column.resize(n, refcheck=False)  # in place: no view of these arrays exists yet
    box.resize(4 * n, refcheck=False)
    area.resize(n, refcheck=False)
    segm = SpanSegmentations(raw, starts, stops, orjson_loads)
    if segm.has_spans() and orjson_module() is None:  # they decode with it
        return None
    columns = (ids, image_ids, category_ids, box.reshape(n, 4), area, crowd, ignore, difficult, segm)
    return data, (*columns, keypoints, counts)


#: Bytes of the shortest image the compiled parser accepts, with its comma: ``{"id":0},``.
_MIN_IMAGE_BYTES = 9


def _compiled_images(
    raw: bytes,
) -> tuple[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray, list]] | None:
    """The byte span of the ``images`` array of ``raw`` and its columns (C extension), or None.

    None when the extension has no images parser or the images are not plain (see
    ``_colparse.images``): orjson then decodes them with the rest of the document.
    """
    colparse = _fast._colparse
    if colparse is None:
        return None
    capacity = len(raw) // _MIN_IMAGE_BYTES + 1
    ids = capacity_buffer(capacity, np.int64)
    width = capacity_buffer(capacity, np.float64)
    height = capacity_buffer(capacity, np.float64)
    found = colparse.images(raw, ids, width, height)
    if found is None:
        return None
    n, start, stop, names = found
    for column in (ids, width, height):
        column.resize(n, refcheck=False)  # in place: no view of these arrays exists yet
    return (start, stop), (ids, width, height, names)


def _without(raw: bytes, spans: list) -> bytes:
    """``raw`` with each byte span (in order, apart) replaced by ``[]``."""
    pieces: list[bytes] = []
    at = 0
    for start, stop in spans:
        pieces += (raw[at:start], b"[]")
        at = stop
    pieces.append(raw[at:])
    return b"".join(pieces)


def _msgspec_instances(raw: bytes) -> tuple[Any, AnnColumns] | None:
    """An instances file decoded by msgspec, or None when it is not plain.

    Known keys only: a count of the keys in the text against the decoded ones (:func:`_same_keys`),
    which also rules out duplicate keys; each RLE object's keys are read from its text (``size`` and
    ``counts``, once each). This is the twin the compiled parser is tested against.
    """
    from deteval.io.coco import fast_msgspec as m  # msgspec only on this path

    if orjson_module() is None:  # the raw segmentations decode with it
        return None
    decoded = m._decode_or_none(raw, m._INSTANCES)
    if decoded is None:
        return None
    extras = (_ABSENT if v is m.UNSET else v for v in (decoded.info, decoded.licenses))
    data = _Rest(decoded.images, decoded.categories, *extras)
    anns = decoded.annotations
    n = len(anns)
    segm = [a.segmentation if a.segmentation is not m.UNSET else None for a in anns]
    rle = [r for r in segm if r is not None and memoryview(r)[:1] == b"{"]
    # An RLE object is counted as its two keys below; exactly those, once each (an object with fewer
    # would make room in the count for a duplicate key elsewhere).
    if any(sorted(json_keys(bytes(r))) != _RLE_KEYS for r in rle) or not _decodable(segm):
        return None
    n_rle = len(rle)
    keys = (
        _rest_keys(data)
        + 6 * n
        + sum(r is not None for r in segm)
        + 2 * n_rle
        + sum(a.ignore is not m.UNSET for a in anns)
        + sum(a.difficult is not m.UNSET for a in anns)
        + sum(a.keypoints is not m.UNSET for a in anns)
        + sum(a.num_keypoints is not m.UNSET for a in anns)
    )
    if not _same_keys(raw, keys):
        return None
    keypoint_columns = _msgspec_keypoints(anns)
    if keypoint_columns is None:
        return None
    columns = (
        np.fromiter(map(m._get_id, anns), dtype=np.int64, count=n),
        np.fromiter(map(m._get_image_id, anns), np.int64, n),
        np.fromiter(map(m._get_category_id, anns), np.int64, n),
        np.fromiter(
            itertools.chain.from_iterable(map(m._get_bbox, anns)), dtype=np.float64, count=4 * n
        ).reshape(n, 4),
        np.fromiter(map(m._get_area, anns), dtype=np.float64, count=n),
        np.fromiter(map(m._get_iscrowd, anns), dtype=np.int64, count=n),
        np.fromiter((0 if a.ignore is m.UNSET else a.ignore for a in anns), np.int64, n),
        np.fromiter((0 if a.difficult is m.UNSET else a.difficult for a in anns), np.int64, n),
        RawSegmentations(segm, orjson_loads),
        *keypoint_columns,
    )
    return data, columns


def _msgspec_keypoints(anns: list) -> tuple[np.ndarray | None, np.ndarray | None] | None:
    """(keypoints, num_keypoints) of decoded annotations as the compiled parser gives them.

    (None, None) when no annotation has ``keypoints``; None (the full path) when only some
    have, or the lists are empty, of different lengths or not a multiple of 3.
    """
    from deteval.io.coco.fast_msgspec import UNSET as unset  # msgspec's marker of an absent field

    lists = [a.keypoints for a in anns]
    if all(k is unset for k in lists):
        return None, None
    if any(k is unset for k in lists):
        return None
    length = len(lists[0])
    if not length or length % 3 or any(len(k) != length for k in lists):
        return None
    n = len(anns)
    keypoints = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.float64, count=n * length)
    count = np.fromiter((-1 if a.num_keypoints is unset else a.num_keypoints for a in anns), np.int64, n)
    return keypoints.reshape(n, length // 3, 3), count


def _ground_truth_from(data: Any, columns: AnnColumns, path: str) -> GroundTruth | None:
    """Annotation columns checked and assembled with the images and categories, or None.

    Taken only when nothing needs a message (:func:`_checked_annotations`). Images and
    categories go through the same checks as the full path.
    """
    if not _checked_annotations(columns):
        return None
    try:
        meta: dict | None
        if data.image_columns is None:
            meta = _images_and_categories(data.images, data.categories, path)
        else:
            ids, width, height, names = data.image_columns
            meta = _image_columns_and_categories(ids, width, height, names, data.categories, path)
    except InputError:
        return None  # the full path raises it again, with the same message
    if meta is None:
        return None
    return _assemble_columns(meta, columns, path)


def _checked_annotations(columns: AnnColumns) -> bool:
    """True when nothing needs a message about these annotation columns.

    Every annotation with a finite non-negative bbox and area and an ``iscrowd`` (``ignore``,
    ``difficult``) of 0 or 1; unique annotation ids.
    """
    ann_ids, _, _, box, area, crowd, ignore, difficult, _, keypoints, num_keypoints = columns
    flags_ok = all(((f == 0) | (f == 1)).all() for f in (crowd, ignore, difficult))
    if (
        not flags_ok
        or not np.isfinite(box).all()
        or not np.isfinite(area).all()
        or (box[:, 2:] < 0).any()
        or (area < 0).any()
        or _duplicates(ann_ids)
    ):
        return False
    return keypoints is None or _checked_keypoints(keypoints, num_keypoints)


def _checked_keypoints(keypoints: np.ndarray, num_keypoints: np.ndarray | None) -> bool:
    """True when nothing needs a message about the keypoint columns (see ``keypoint_column``).

    Finite numbers, visibility flags 0, 1 or 2, a ``num_keypoints`` in every annotation (the
    full path warns when it derives one) within [0, n_keypoints].
    """
    if num_keypoints is None or not np.isfinite(keypoints).all():
        return False
    flags = keypoints[:, :, 2]
    flags_ok = bool(((flags == 0) | (flags == 1) | (flags == 2)).all())
    return flags_ok and bool(((num_keypoints >= 0) & (num_keypoints <= keypoints.shape[1])).all())


def _assemble_columns(meta: dict, columns: AnnColumns, path: str) -> GroundTruth | None:
    """The GroundTruth of checked columns; None when an image or category id is unknown."""
    ann_ids, image_ids, category_ids, box, area, crowd, ignore, difficult, segm, kp, num_kp = columns
    return _assemble_gt(
        meta,
        ann_ids,
        image_ids,
        category_ids,
        box,
        area,
        crowd.astype(bool),
        difficult.astype(bool),
        ignore.astype(bool),
        segm,
        path,
        [],
        ann_problems=None,
        keypoints=kp,
        num_keypoints=num_kp,
    )


def _fast_annotations(meta: dict, anns: list, where: str) -> GroundTruth | None:
    """In-memory annotations (a list of dicts) straight into columns, or None for the full path.

    Read by the compiled extension (:func:`_compiled_annotation_records`), else typed by
    ``msgspec.convert`` (:func:`_msgspec_annotation_records`): known keys only, the six COCO keys
    present, ``int`` ids and flags (no ``bool``, no float or numpy scalar where an integer
    goes). The columns then pass the checks a file's do. The segmentations are the caller's
    objects, as the full loader keeps them. ``meta`` is the checked images and categories
    (``_images_and_categories``). Anything refused goes to the full loader.
    """
    columns = _compiled_annotation_records(anns) if _fast._colparse is not None else None
    if columns is None:
        columns = _msgspec_annotation_records(anns)
    if columns is None or not _checked_annotations(columns):
        return None
    return _assemble_columns(meta, columns, where)


def _compiled_annotation_records(anns: list) -> AnnColumns | None:
    """The columns of plain in-memory annotations read by the C extension, or None."""
    if _fast._colparse is None or type(anns) is not list or not anns:
        return None
    n = len(anns)
    ints = [np.empty(n, dtype=np.int64) for _ in range(6)]
    ids, image_ids, category_ids, crowd, ignore, difficult = ints
    box = np.empty((n, 4), dtype=np.float64)
    area = np.empty(n, dtype=np.float64)
    found = _fast._colparse.annotation_records(
        anns, ids, image_ids, category_ids, box, area, crowd, ignore, difficult
    )
    if found is None:
        return None
    segm = tuple(r.get("segmentation") for r in anns)
    return ids, image_ids, category_ids, box, area, crowd, ignore, difficult, segm, None, None


def _msgspec_annotation_records(anns: list) -> AnnColumns | None:
    """The columns of plain in-memory annotations typed by ``msgspec.convert``, or None.

    :class:`_AnnotationObject` types them as :class:`_Annotation` types a file's. The twin the
    compiled reader is tested against.
    """
    if not _HAS_MSGSPEC or not anns:
        return None
    import msgspec

    from deteval.io.coco import fast_msgspec as m  # msgspec only on this path

    try:
        typed = msgspec.convert(anns, list[m._AnnotationObject])
    except (msgspec.ValidationError, RecursionError):
        return None  # the full path reads or names it
    n = len(typed)
    return (
        np.fromiter(map(m._get_id, typed), dtype=np.int64, count=n),
        np.fromiter(map(m._get_image_id, typed), np.int64, n),
        np.fromiter(map(m._get_category_id, typed), np.int64, n),
        np.fromiter(
            itertools.chain.from_iterable(map(m._get_bbox, typed)), dtype=np.float64, count=4 * n
        ).reshape(n, 4),
        np.fromiter(map(m._get_area, typed), dtype=np.float64, count=n),
        np.fromiter(map(m._get_iscrowd, typed), dtype=np.int64, count=n),
        np.fromiter((0 if a.ignore is m.UNSET else a.ignore for a in typed), np.int64, n),
        np.fromiter((0 if a.difficult is m.UNSET else a.difficult for a in typed), np.int64, n),
        tuple(r.get("segmentation") for r in anns),
        None,
        None,
    )
