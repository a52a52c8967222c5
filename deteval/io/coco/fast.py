"""Fast paths: plain COCO files decoded straight into columns.

A file that fits (known keys only, clean values) is read here; anything else returns None and
the full readers (:mod:`deteval.io.coco.ground_truth`, :mod:`deteval.io.coco.results`) name
the problem. Ground-truth segmentations are kept raw (:class:`RawSegmentations`) until read.

Box results are parsed by the optional C extension :mod:`deteval.io._colparse` when it was built
(``setup.py``; ``DETEVAL_NO_EXTENSION=1`` turns it off), else decoded by msgspec: the two give the
same columns bit for bit, and both hand anything unusual to the full loader. Segm results of plain
polygon lists are read by the extension alone (:func:`_fast_segm_results`: no twin, every other
file takes the full loader, which gives the same values).
"""

from __future__ import annotations

import itertools
import operator
import os
import stat
import zlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Annotated, Any

import numpy as np

try:  # decodes typed records straight into objects: the fast path for box results
    import msgspec as _msgspec

    _HAS_MSGSPEC = True
except ImportError:  # pragma: no cover - msgspec is a declared dependency
    _HAS_MSGSPEC = False

from deteval import _speedups
from deteval._dtypes import row_dtype
from deteval.data import Detections, GroundTruth, order_column
from deteval.errors import ConfigError, InputError
from deteval.io._json import _count_keys, _orjson, count_raw_keys
from deteval.io._text import MAX_BYTES, check_unchanged, read_bytes
from deteval.io.category_map import CategoryMap, map_categories
from deteval.io.coco._common import _duplicates
from deteval.io.coco.instances import _assemble_gt, _images_and_categories
from deteval.io.coco.suspicions import _box_warnings, _index_suspicion
from deteval.io.identity import join_ids
from deteval.io.output import note_read
from deteval.io.segmentation.sources import PolygonSegmentations

#: The columns of a box-results file: image_id, category_id (int64), bbox (n, 4), score (float64).
BoxColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: Set (to anything but empty or ``0``) when Python starts, ``DETEVAL_NO_EXTENSION`` makes deteval
#: ignore its compiled parser and use the msgspec/numpy path, which gives the same numbers.
NO_EXTENSION = _speedups.is_disabled()

#: The optional C extension (setup.py), or None (not built, or disabled).
_colparse: ModuleType | None = _speedups.load("deteval.io._colparse")
#: A build older than this module (in place, before ``build_ext`` was run again) lacks some
#: readers: it is ignored as a whole, and the msgspec paths give the same values.
_READERS = (
    "box_results",
    "box_results_part",
    "text_rows",
    "instances",
    "box_records",
    "annotation_records",
    "segm_results",
)
if _colparse is not None and not all(hasattr(_colparse, name) for name in _READERS):
    _colparse = None  # pragma: no cover - depends on the build

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


def _fast_box_results(
    raw: bytes, path: str, gt: GroundTruth, cmap: CategoryMap | None = None
) -> Detections | None:
    """Decode a plain box-results file straight into columns, or None to take the full path.

    The compiled parser (:func:`_compiled_box_columns`) is tried first, then msgspec
    (:func:`_msgspec_box_columns`); both read only the plain shape and give the same columns bit
    for bit. The columns then pass one set of checks (:func:`_box_detections`).
    """
    return _fast_box_results_held([raw], path, gt, cmap)


def _fast_box_results_held(
    held: list, path: str, gt: GroundTruth, cmap: CategoryMap | None = None
) -> Detections | None:
    """:func:`_fast_box_results` on the bytes held as ``held[0]``, which it empties once parsed.

    Once the columns exist they are all that is needed: the list is emptied so that the file's
    bytes (as large as the columns) are freed before the columns are checked and the warnings
    computed, which lowers the peak of loading. Its caller (``_source``) reads the file again
    when this returns None after that.
    """
    columns = _box_columns(held[0])
    if columns is None:
        return _fast_segm_results(held[0], path, gt, cmap)
    held.clear()
    return _box_detections(columns, path=path, gt=gt, cmap=cmap)


def _box_columns(raw: bytes) -> BoxColumns | None:
    """The columns of a plain box-results file (compiled parser, else msgspec), or None."""
    columns = _compiled_box_columns(raw) if _colparse is not None else None
    return columns if columns is not None else _msgspec_box_columns(raw)


#: Bytes of the shortest record the compiled parser accepts, with its comma:
#: ``{"image_id":0,"category_id":0,"bbox":[0,0,0,0],"score":0},``. A file of ``n`` records has at
#: least ``58 * n + 1`` bytes, which bounds the columns to allocate.
_MIN_RECORD_BYTES = 58


def _compiled_box_columns(raw: bytes) -> BoxColumns | None:
    """A plain box-results file's columns read by the C extension, or None when it is not plain.

    The columns are allocated for the most records the file's size allows (untouched memory is
    never resident) and shrunk in place to the records read. None when the extension is not
    available, or when the file is anything but a non-empty array of records with exactly the four
    keys and plain JSON numbers (ids integers within int64, floats finite): the msgspec path and
    then the full loader decide about such files.
    """
    if _colparse is None:
        return None
    capacity = len(raw) // _MIN_RECORD_BYTES + 1
    image_ids = np.empty(capacity, dtype=np.int64)
    category_ids = np.empty(capacity, dtype=np.int64)
    box = np.empty(4 * capacity, dtype=np.float64)
    score = np.empty(capacity, dtype=np.float64)
    n = _colparse.box_results(raw, image_ids, category_ids, box, score)
    if not n:
        return None
    for column, size in ((image_ids, n), (category_ids, n), (box, 4 * n), (score, n)):
        column.resize(size, refcheck=False)  # in place: no view of these arrays exists yet
    return image_ids, category_ids, box.reshape(n, 4), score


#: Bytes read at a time when a results file is streamed (:func:`_stream_box_results`): the working
#: set of loading, whatever the file's size.
_STREAM_CHUNK = 4 << 20


def _stream_box_results(
    path: str, gt: GroundTruth, cmap: CategoryMap | None = None, *, chunk_size: int = _STREAM_CHUNK
) -> Detections | None:
    """A plain box-results file read in parts straight into checked columns, or None.

    The file is read ``chunk_size`` bytes at a time into one reused buffer; each part, cut after
    the last ``}`` read (in a plain file only a record ends with ``}``), is parsed by the C
    extension (``box_results_part``) into the boxes and scores at their final place and into
    part-sized id columns, which are joined to ``gt`` (image and category indices) before the
    next part is read. So the peak of loading is the Detections' columns plus a working set of
    a few times ``chunk_size``: neither the file's bytes nor int64 id columns of every detection
    are held (against a ground truth without image ids -- YOLO, VOC -- the image ids are kept
    whole and joined once at the end, as :func:`deteval.io.identity.join_ids` reads the image
    names once per call).

    Returns None -- and the caller reads the whole file as before, whose paths give the same
    numbers, warnings and errors -- without the extension, for anything but a regular file
    (a FIFO, ``/dev/stdin``: the whole-file reader decides about it), for a file that is not the
    plain shape in any part, that needs a message (unknown image or category, negative size), that
    holds no record, or that cannot be read. Nothing read is recorded as an input unless this
    returns the detections.

    Raises
    ------
    InputError
        The file changed while read (:func:`~deteval.io._text.check_unchanged`: the open file or
        the path show another size, modification time, inode or device at the end than at the
        start, or more or fewer bytes than its size were read): its parts may mix two versions.
    """
    if _colparse is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except (OSError, ValueError):  # missing, a folder, a NUL in the path: read_bytes names it
        return None
    try:
        start = os.fstat(fd)
        regular = stat.S_ISREG(start.st_mode) and start.st_size <= MAX_BYTES["json"]
    except OSError:  # pragma: no cover - fstat of an open descriptor
        regular = False
    if not regular:  # a folder, FIFO, device, or too large: the whole-file reader names it
        os.close(fd)
        return None
    with os.fdopen(fd, "rb", buffering=0) as f:
        try:
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
            parts = _BoxParts(start.st_size, gt, cmap)
            n_read = _read_parts(f, parts, start.st_size, chunk_size)
        except OSError:
            return None  # read again whole: read_bytes names the problem
        # a file that changed is an error even when a part was not plain: those parts may mix
        # two versions, and so would a whole read that starts again now
        check_unchanged(path, start, fd, n_read, what="a results file")
    if n_read is None:
        return None
    finished = parts.finish()
    del parts
    if finished is None:
        return None
    note_read(path, start)
    image, category, box, score, min_category = finished
    del finished
    warnings = _index_suspicion(np.array([min_category]), gt, cmap, path)  # it reads the smallest id only
    warnings += _box_warnings(box, image, gt, path)
    return _box_result(image, category, box, score, path=path, warnings=warnings)


def _read_parts(f: Any, parts: _BoxParts, size: int, chunk_size: int) -> int | None:
    """Read ``f`` to its end in parts cut after a ``}``, feeding each to ``parts``.

    Returns the number of bytes read, or None to give up when a part is not plain (the caller
    reads the file whole). ``size`` bytes are expected: reading stops past them (the file grew
    while read: the caller's :func:`~deteval.io._text.check_unchanged` names it).
    """
    buf = bytearray(max(chunk_size, 1))
    filled = total = 0
    first = True
    while True:
        if filled == len(buf):  # no ``}`` in a full buffer: a long record or much whitespace
            grown = bytearray(2 * len(buf))
            grown[:filled] = buf
            buf = grown
        with memoryview(buf) as view:
            got = f.readinto(view[filled:])
            if not got:
                if total != size:
                    return total
                return total if parts.feed(view[:filled], first=first, last=True) else None
            total += got
            filled += got
            if total > size:
                return total
            cut = buf.rfind(b"}", 0, filled) + 1
            if not cut:
                continue
            if not parts.feed(view[:cut], first=first, last=False):
                return None
            first = False
            rest = bytes(view[cut:filled])
        buf[: len(rest)] = rest
        filled = len(rest)


class _BoxParts:
    """The columns of a box-results file filled part by part (:func:`_stream_box_results`).

    Capacity for the most records the file's size allows (untouched memory is never resident),
    shrunk in place by :meth:`finish`. Each part's ids are joined and checked as it is parsed.
    """

    def __init__(self, size: int, gt: GroundTruth, cmap: CategoryMap | None):
        capacity = size // _MIN_RECORD_BYTES + 1
        index: Any = row_dtype(capacity)
        self.gt, self.cmap = gt, cmap
        self.n = 0
        self.min_category: int | None = None
        self.image: np.ndarray = np.empty(capacity, dtype=index)
        self.category: np.ndarray = np.empty(capacity, dtype=index)
        self.box = np.empty(4 * capacity, dtype=np.float64)
        self.score = np.empty(capacity, dtype=np.float64)
        # against image names, the image ids are joined once at the end (join_ids reads the names)
        self.image_ids = None if gt.has_image_ids else np.empty(capacity, dtype=np.int64)
        self.part_image_ids = np.empty(0, dtype=np.int64)
        self.part_category_ids = np.empty(0, dtype=np.int64)

    def feed(self, raw: Any, *, first: bool, last: bool) -> bool:
        """Parse, join and check one part (a buffer); False when it is not plain or needs a message."""
        assert _colparse is not None  # _stream_box_results checks it before making parts
        most = len(raw) // _MIN_RECORD_BYTES + 1
        if len(self.part_category_ids) < most:
            self.part_image_ids = np.empty(most, dtype=np.int64)
            self.part_category_ids = np.empty(most, dtype=np.int64)
        n = self.n
        image_ids = self.part_image_ids if self.image_ids is None else self.image_ids[n:]
        count = _colparse.box_results_part(
            raw, first, last, image_ids, self.part_category_ids, self.box[4 * n :], self.score[n:]
        )
        if count is None:
            return False
        if not count:
            return True
        stop = n + count
        category_ids = self.part_category_ids[:count]
        box = self.box[4 * n : 4 * stop].reshape(count, 4)
        if not (np.isfinite(box).all() and np.isfinite(self.score[n:stop]).all()) or (box[:, 2:] < 0).any():
            return False
        try:
            category = map_categories(category_ids, self.gt, self.cmap)
        except ConfigError:
            return False  # the full path raises it again
        if (category < 0).any():
            return False
        self.category[n:stop] = category
        if self.image_ids is None:
            image = join_ids(self.part_image_ids[:count], self.gt)
            if (image < 0).any():
                return False
            self.image[n:stop] = image
        smallest = int(category_ids.min())
        self.min_category = smallest if self.min_category is None else min(self.min_category, smallest)
        self.n = stop
        return True

    def finish(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None:
        """(image, category, box (n, 4), score, smallest category id), or None when none was read."""
        n = self.n
        if not n or self.min_category is None:
            return None
        if self.image_ids is not None:
            image = join_ids(self.image_ids[:n], self.gt)
            self.image_ids = None
            if (image < 0).any():
                return None
            self.image[:n] = image
            del image
        self.part_image_ids = self.part_category_ids = np.empty(0, dtype=np.int64)
        image, category, box, score = self.image, self.category, self.box, self.score
        for column, size in ((image, n), (category, n), (box, 4 * n), (score, n)):
            column.resize(size, refcheck=False)  # in place: the parts' views are gone
        return image, category, box.reshape(n, 4), score, self.min_category


#: Bytes of the shortest segm record the compiled parser accepts, with its comma:
#: ``{"image_id":0,"category_id":0,"bbox":[0,0,0,0],"score":0,"segmentation":[[0]]},``; a polygon
#: takes at least 4 bytes (``[0],``), a coordinate 2 (``0,``).
_MIN_SEGM_RECORD_BYTES = 79


def _fast_segm_results(
    raw: bytes, path: str, gt: GroundTruth, cmap: CategoryMap | None = None
) -> Detections | None:
    """A plain segm-results file (polygon lists) read by the C extension, or None for the full path.

    The records' polygons are parsed into flat columns (:class:`PolygonSegmentations`, which
    decodes a record's list with orjson when it is read, as the full loader decodes it) that the
    segm evaluation checks as arrays. The other columns pass the checks of a box file's.
    """
    parsed = _compiled_segm_columns(raw)
    if parsed is None:
        return None
    columns, segmentation = parsed
    del parsed
    return _box_detections(columns, path=path, gt=gt, cmap=cmap, segmentation=segmentation)


def _compiled_segm_columns(raw: bytes) -> tuple[BoxColumns, PolygonSegmentations] | None:
    """The columns and polygons of a plain segm-results file read by the C extension, or None.

    Plain: a non-empty array of records with exactly ``image_id``, ``category_id``, ``bbox``,
    ``score`` and a ``segmentation`` that is a non-empty list of non-empty lists of JSON numbers
    (finite; integers of at most 18 digits). Anything else -- RLE, no bbox, ``[]``, a deeper
    nesting -- is for the full loader. Odd or short polygons are taken: the checks of
    :func:`deteval.io.segmentation.parse_masks` find them and name them as the full path does.
    """
    if _colparse is None or _orjson is None:
        return None
    capacity = len(raw) // _MIN_SEGM_RECORD_BYTES + 1
    image_ids = np.empty(capacity, dtype=np.int64)
    category_ids = np.empty(capacity, dtype=np.int64)
    box = np.empty(4 * capacity, dtype=np.float64)
    score = np.empty(capacity, dtype=np.float64)
    starts = np.empty(capacity, dtype=np.int64)
    stops = np.empty(capacity, dtype=np.int64)
    n_parts = np.empty(capacity, dtype=np.int64)
    part_len = np.empty(len(raw) // 4 + 1, dtype=np.int64)
    coords = np.empty(len(raw) // 2 + 1, dtype=np.float64)
    found = _colparse.segm_results(
        raw, image_ids, category_ids, box, score, starts, stops, n_parts, part_len, coords
    )
    if found is None:
        return None
    n, n_part, n_coord = found
    for column in (image_ids, category_ids, score, starts, stops, n_parts):
        column.resize(n, refcheck=False)  # in place: no view of these arrays exists yet
    box.resize(4 * n, refcheck=False)
    part_len.resize(n_part, refcheck=False)
    coords.resize(n_coord, refcheck=False)
    segmentation = PolygonSegmentations(raw, starts, stops, (n_parts, part_len, coords), _orjson.loads)
    return (image_ids, category_ids, box.reshape(n, 4), score), segmentation


#: Bytes of the shortest row of six fields with its line break (``a 1 1 1 1 1\n``).
_MIN_ROW_BYTES = 12


def _compiled_text_rows(raw: bytes, *, first_is_text: bool) -> tuple[Any, np.ndarray, np.ndarray] | None:
    """Rows of six whitespace-separated fields (VOC result lines, YOLO prediction rows), or None.

    Parameters
    ----------
    raw : bytes
        The file's bytes.
    first_is_text : bool
        The first field is an image id kept as text (VOC), else an integer class id (YOLO).

    Returns
    -------
    (first, numbers, lines) or None
        ``first``: list of str, or int64 (n,); ``numbers``: float64 (n, 5), the other fields as
        ``float()`` reads them; ``lines``: int64 (n,), 1-based line numbers as
        :func:`deteval.io._text.split_lines` counts them (blank lines skipped). None without the
        extension or when any line is not plain (another field count, a value that is not a
        plain finite decimal, a class id not written as ``str(int)`` writes it, a byte that is
        not ASCII): the Python reader reads such files and names their problems.
    """
    if _colparse is None:
        return None
    capacity = len(raw) // _MIN_ROW_BYTES + 1
    class_ids = None if first_is_text else np.empty(capacity, dtype=np.int64)
    numbers = np.empty(5 * capacity, dtype=np.float64)
    lines = np.empty(capacity, dtype=np.int64)
    result = _colparse.text_rows(raw, first_is_text, class_ids, numbers, lines)
    if result is None:
        return None
    n = len(result) if isinstance(result, list) else result
    for column, size in ((numbers, 5 * n), (lines, n)):
        column.resize(size, refcheck=False)  # in place: no view of these arrays exists yet
    if class_ids is not None:
        class_ids.resize(n, refcheck=False)
    return (result if class_ids is None else class_ids), numbers.reshape(n, 5), lines


def _compiled_voc_rows(raw: bytes) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """VOC result lines ``image_id score x1 y1 x2 y2``: (ids, numbers (n, 5), lines), or None."""
    return _compiled_text_rows(raw, first_is_text=True)


def _compiled_yolo_rows(raw: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """YOLO prediction rows ``cls`` + 5 numbers: (class ids int64, numbers (n, 5), lines), or None."""
    return _compiled_text_rows(raw, first_is_text=False)


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


def _fast_box_records(
    records: list, where: str, gt: GroundTruth, cmap: CategoryMap | None = None
) -> Detections | None:
    """In-memory box results (a list of dicts) straight into columns, or None for the full path.

    Read by the compiled extension (:func:`_compiled_box_records`), else typed by
    ``msgspec.convert`` (:func:`_msgspec_box_records`); both take only plain records and give the
    same columns bit for bit, which then pass the checks a file's do (:func:`_box_detections`).
    Anything refused -- integral floats such as ``3.0``, numpy scalars, extra keys -- goes to the
    full loader, which reads those and names problems.
    """
    columns = _compiled_box_records(records) if _colparse is not None else None
    if columns is None:
        columns = _msgspec_box_records(records)
    return _box_detections(columns, path=where, gt=gt, cmap=cmap)


def _compiled_box_records(records: list) -> BoxColumns | None:
    """The columns of plain in-memory box records read by the C extension, or None.

    Plain: a non-empty list of exact ``dict`` with exactly the four keys, ``int`` ids within
    int64 (no ``bool``), a bbox list or tuple of four numbers, numbers exact ``float`` or ``int``.
    """
    if _colparse is None or type(records) is not list or not records:
        return None
    n = len(records)
    image_ids = np.empty(n, dtype=np.int64)
    category_ids = np.empty(n, dtype=np.int64)
    box = np.empty((n, 4), dtype=np.float64)
    score = np.empty(n, dtype=np.float64)
    if _colparse.box_records(records, image_ids, category_ids, box, score) is None:
        return None
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


def _box_detections(
    columns: BoxColumns | None,
    *,
    path: str,
    gt: GroundTruth,
    cmap: CategoryMap | None,
    segmentation: PolygonSegmentations | None = None,
) -> Detections | None:
    """Box-result columns checked and joined to ``gt``, or None when anything needs a message.

    Taken only when nothing needs a message: finite numbers, non-negative sizes, known images and
    categories. Anything else returns None and the full loader names the problem. The id columns
    are let go once joined (pass ``columns`` as a temporary, as :func:`_fast_box_results` does),
    so that they are not held while the warnings are computed: 16 bytes per detection less at the
    peak of loading.
    """
    if columns is None:
        return None
    image_ids, category_ids, box, score = columns
    del columns
    image = join_ids(image_ids, gt)
    try:
        category = map_categories(category_ids, gt, cmap)
    except ConfigError:
        return None  # the full path raises it again
    if (
        not (np.isfinite(box).all() and np.isfinite(score).all())
        or (box[:, 2:] < 0).any()
        or (image < 0).any()
        or (category < 0).any()
    ):
        return None
    warnings = _index_suspicion(category_ids, gt, cmap, path)
    del image_ids, category_ids
    warnings += _box_warnings(box, image, gt, path)
    return _box_result(image, category, box, score, path=path, warnings=warnings, segmentation=segmentation)


def _box_result(
    image: np.ndarray,
    category: np.ndarray,
    box: np.ndarray,
    score: np.ndarray,
    *,
    path: str,
    warnings: list[str],
    segmentation: PolygonSegmentations | None = None,
) -> Detections:
    """The Detections of checked columns (file order; every record has a bbox; int32 indices)."""
    n = len(image)
    index = row_dtype(n)
    return Detections(
        image=image.astype(index, copy=False),
        category=category.astype(index, copy=False),
        box=box,
        score=score,
        order=order_column(n),
        has_box=np.ones(n, dtype=bool),
        box_format="xywh",
        segmentation=segmentation,  # type: ignore[arg-type]  # a lazy sequence, read as a tuple
        source=path,
        warnings=tuple(warnings),
    )


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
        self._origin: tuple[str, int, int] | None = None  # (path, size, CRC-32) when on disk

    def keep_on_disk(self, path: str) -> None:
        """Drop the bytes; read them again from ``path`` (which they were read from) when needed."""
        raw = self._raw
        if raw is not None:
            self._origin = (path, len(raw), zlib.crc32(raw))
            self._raw = None

    def _bytes(self) -> bytes:
        if self._raw is None:
            assert self._origin is not None  # the constructor sets the bytes; only keep_on_disk drops them
            path, size, crc = self._origin
            raw = read_bytes(path, what="the COCO ground truth it was loaded from", limit=MAX_BYTES["json"])
            if len(raw) != size or zlib.crc32(raw) != crc:
                raise InputError(
                    f"{path}: changed since the ground truth was loaded from it (its segmentations "
                    f"are read from the file when first needed); expected the same file, found "
                    f"{len(raw)} bytes that differ: load the ground truth again"
                )
            self._raw = raw
        return self._raw

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        start = int(self._starts[index])
        return None if start < 0 else self._loads(self._bytes()[start : int(self._stops[index])])

    def __getstate__(self) -> dict:
        """Pickled with the bytes: a copy never depends on the file."""
        state = self.__dict__.copy()
        state["_raw"], state["_origin"] = self._bytes(), None
        return state


if _HAS_MSGSPEC:

    class _Annotation(_msgspec.Struct, forbid_unknown_fields=True):
        """A COCO annotation's fields, typed strictly; segmentation left undecoded."""

        id: _Int64
        image_id: _Int64
        category_id: _Int64
        bbox: tuple[float, float, float, float]
        area: float
        iscrowd: _Int64
        segmentation: _msgspec.Raw | _msgspec.UnsetType = _msgspec.UNSET
        ignore: _Int64 | _msgspec.UnsetType = _msgspec.UNSET
        difficult: _Int64 | _msgspec.UnsetType = _msgspec.UNSET

    class _Instances(_msgspec.Struct, forbid_unknown_fields=True):
        images: list[dict]
        annotations: list[_Annotation]
        categories: list[dict]
        info: Any = _msgspec.UNSET
        licenses: Any = _msgspec.UNSET

    _INSTANCES = _msgspec.json.Decoder(_Instances)


#: The annotation columns of an instances file: id, image_id, category_id (int64), bbox (n, 4),
#: area (float64), iscrowd, ignore, difficult (int64; 0 where absent), and the raw segmentations.
AnnColumns = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any
]

#: Bytes of the shortest annotation the compiled parser accepts, with its comma:
#: ``{"id":0,"image_id":0,"category_id":0,"bbox":[0,0,0,0],"area":0,"iscrowd":0},``.
_MIN_ANNOTATION_BYTES = 76


def _fast_ground_truth(raw: bytes, path: str) -> GroundTruth | None:
    """Read a plain COCO instances file without parsing its polygons, or None for the full path.

    The compiled parser reads the ``annotations`` array (:func:`_compiled_instances`), else
    msgspec reads the whole document (:func:`_msgspec_instances`); both read only the plain shape
    and give the same columns bit for bit. Then one set of checks (:func:`_ground_truth_from`).
    """
    if not _HAS_MSGSPEC or _orjson is None:
        return None
    parts = _compiled_instances(raw) if _colparse is not None else None
    if parts is None:
        parts = _msgspec_instances(raw)
    if parts is None:
        return None
    data, columns = parts
    del parts
    segmentation = columns[8]
    gt = _ground_truth_from(data, columns, path)
    if isinstance(segmentation, SpanSegmentations):
        segmentation.keep_on_disk(path)  # the file's bytes are not kept (a box evaluation never reads them)
    return gt


def _rest_keys(data: Any) -> int:
    """The object keys of a decoded :class:`_Instances` outside its annotations."""
    keys = 3 + _count_keys(data.images) + _count_keys(data.categories)
    for extra in (data.info, data.licenses):
        if extra is not _msgspec.UNSET:
            keys += 1 + _count_keys(extra)
    return keys


def _compiled_instances(raw: bytes) -> tuple[Any, AnnColumns] | None:
    """An instances file read by the C extension (annotations) and msgspec (the rest), or None.

    The extension parses the top-level ``annotations`` array into columns, keeping each
    segmentation as a byte span of ``raw`` (:class:`SpanSegmentations`); msgspec decodes the rest
    of the document with that array replaced by ``[]``, and a raw count of its keys rules out
    duplicates there, as in :func:`_msgspec_instances`. None when the extension is not available
    or anything is not plain: the msgspec path and then the full loader decide.
    """
    if _colparse is None:
        return None
    capacity = len(raw) // _MIN_ANNOTATION_BYTES + 1
    ints = [np.empty(capacity, dtype=np.int64) for _ in range(8)]
    ids, image_ids, category_ids, crowd, ignore, difficult, starts, stops = ints
    box = np.empty(4 * capacity, dtype=np.float64)
    area = np.empty(capacity, dtype=np.float64)
    found = _colparse.instances(
        raw, ids, image_ids, category_ids, box, area, crowd, ignore, difficult, starts, stops
    )
    if found is None:
        return None
    n, start, stop = found
    rest = b"".join((raw[:start], b"[]", raw[stop:]))
    data = _decode_or_none(rest, _INSTANCES)
    if data is None or data.annotations or count_raw_keys(rest) != _rest_keys(data):
        return None
    del rest
    for column in ints:
        column.resize(n, refcheck=False)  # in place: no view of these arrays exists yet
    box.resize(4 * n, refcheck=False)
    area.resize(n, refcheck=False)
    segm = SpanSegmentations(raw, starts, stops, _orjson.loads)  # type: ignore[union-attr]
    return data, (ids, image_ids, category_ids, box.reshape(n, 4), area, crowd, ignore, difficult, segm)


def _msgspec_instances(raw: bytes) -> tuple[Any, AnnColumns] | None:
    """An instances file decoded by msgspec, or None when it is not plain.

    Known keys only: a raw count of keys against the decoded ones, which also rules out duplicate
    keys. This is the twin the compiled parser is tested against.
    """
    data = _decode_or_none(raw, _INSTANCES)
    if data is None:
        return None
    anns = data.annotations
    n = len(anns)
    segm = [a.segmentation if a.segmentation is not _msgspec.UNSET else None for a in anns]
    n_rle = sum(1 for r in segm if r is not None and memoryview(r)[:1] == b"{")
    keys = (
        _rest_keys(data)
        + 6 * n
        + sum(r is not None for r in segm)
        + 2 * n_rle
        + sum(a.ignore is not _msgspec.UNSET for a in anns)
        + sum(a.difficult is not _msgspec.UNSET for a in anns)
    )
    if count_raw_keys(raw) != keys:
        return None
    columns = (
        np.fromiter(map(_get_id, anns), dtype=np.int64, count=n),
        np.fromiter(map(_get_image_id, anns), np.int64, n),
        np.fromiter(map(_get_category_id, anns), np.int64, n),
        np.fromiter(
            itertools.chain.from_iterable(map(_get_bbox, anns)), dtype=np.float64, count=4 * n
        ).reshape(n, 4),
        np.fromiter(map(_get_area, anns), dtype=np.float64, count=n),
        np.fromiter(map(_get_iscrowd, anns), dtype=np.int64, count=n),
        np.fromiter((0 if a.ignore is _msgspec.UNSET else a.ignore for a in anns), np.int64, n),
        np.fromiter((0 if a.difficult is _msgspec.UNSET else a.difficult for a in anns), np.int64, n),
        RawSegmentations(segm, _orjson.loads),  # type: ignore[union-attr]
    )
    return data, columns


def _ground_truth_from(data: Any, columns: AnnColumns, path: str) -> GroundTruth | None:
    """Annotation columns checked and assembled with the images and categories, or None.

    Taken only when nothing needs a message (:func:`_checked_annotations`). Images and
    categories go through the same checks as the full path.
    """
    if not _checked_annotations(columns):
        return None
    try:
        meta = _images_and_categories(data.images, data.categories, path)
    except InputError:
        return None  # the full path raises it again, with the same message
    return _assemble_columns(meta, columns, path)


def _checked_annotations(columns: AnnColumns) -> bool:
    """True when nothing needs a message about these annotation columns.

    Every annotation with a finite non-negative bbox and area and an ``iscrowd`` (``ignore``,
    ``difficult``) of 0 or 1; unique annotation ids.
    """
    ann_ids, _, _, box, area, crowd, ignore, difficult, _ = columns
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
    return True


def _assemble_columns(meta: dict, columns: AnnColumns, path: str) -> GroundTruth | None:
    """The GroundTruth of checked columns; None when an image or category id is unknown."""
    ann_ids, image_ids, category_ids, box, area, crowd, ignore, difficult, segm = columns
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
    )


if _HAS_MSGSPEC:

    class _AnnotationObject(_msgspec.Struct, forbid_unknown_fields=True):
        """An in-memory COCO annotation's fields, typed as :class:`_Annotation` types a file's."""

        id: _Int64
        image_id: _Int64
        category_id: _Int64
        bbox: tuple[float, float, float, float]
        area: float
        iscrowd: _Int64
        segmentation: Any = _msgspec.UNSET
        ignore: _Int64 | _msgspec.UnsetType = _msgspec.UNSET
        difficult: _Int64 | _msgspec.UnsetType = _msgspec.UNSET


def _fast_annotations(meta: dict, anns: list, where: str) -> GroundTruth | None:
    """In-memory annotations (a list of dicts) straight into columns, or None for the full path.

    Read by the compiled extension (:func:`_compiled_annotation_records`), else typed by
    ``msgspec.convert`` (:func:`_msgspec_annotation_records`): known keys only, the six COCO keys
    present, ``int`` ids and flags (no ``bool``, no float or numpy scalar where an integer
    goes). The columns then pass the checks a file's do. The segmentations are the caller's
    objects, as the full loader keeps them. ``meta`` is the checked images and categories
    (``_images_and_categories``). Anything refused goes to the full loader.
    """
    columns = _compiled_annotation_records(anns) if _colparse is not None else None
    if columns is None:
        columns = _msgspec_annotation_records(anns)
    if columns is None or not _checked_annotations(columns):
        return None
    return _assemble_columns(meta, columns, where)


def _compiled_annotation_records(anns: list) -> AnnColumns | None:
    """The columns of plain in-memory annotations read by the C extension, or None."""
    if _colparse is None or type(anns) is not list or not anns:
        return None
    n = len(anns)
    ints = [np.empty(n, dtype=np.int64) for _ in range(6)]
    ids, image_ids, category_ids, crowd, ignore, difficult = ints
    box = np.empty((n, 4), dtype=np.float64)
    area = np.empty(n, dtype=np.float64)
    found = _colparse.annotation_records(
        anns, ids, image_ids, category_ids, box, area, crowd, ignore, difficult
    )
    if found is None:
        return None
    segm = tuple(r.get("segmentation") for r in anns)
    return ids, image_ids, category_ids, box, area, crowd, ignore, difficult, segm


def _msgspec_annotation_records(anns: list) -> AnnColumns | None:
    """The columns of plain in-memory annotations typed by ``msgspec.convert``, or None.

    :class:`_AnnotationObject` types them as :class:`_Annotation` types a file's. The twin the
    compiled reader is tested against.
    """
    if not _HAS_MSGSPEC or not anns:
        return None
    try:
        typed = _msgspec.convert(anns, list[_AnnotationObject])
    except (_msgspec.ValidationError, RecursionError):
        return None  # the full path reads or names it
    n = len(typed)
    return (
        np.fromiter(map(_get_id, typed), dtype=np.int64, count=n),
        np.fromiter(map(_get_image_id, typed), np.int64, n),
        np.fromiter(map(_get_category_id, typed), np.int64, n),
        np.fromiter(
            itertools.chain.from_iterable(map(_get_bbox, typed)), dtype=np.float64, count=4 * n
        ).reshape(n, 4),
        np.fromiter(map(_get_area, typed), dtype=np.float64, count=n),
        np.fromiter(map(_get_iscrowd, typed), dtype=np.int64, count=n),
        np.fromiter((0 if a.ignore is _msgspec.UNSET else a.ignore for a in typed), np.int64, n),
        np.fromiter((0 if a.difficult is _msgspec.UNSET else a.difficult for a in typed), np.int64, n),
        tuple(r.get("segmentation") for r in anns),
    )


_get_id = operator.attrgetter("id")
_get_area = operator.attrgetter("area")
_get_iscrowd = operator.attrgetter("iscrowd")
_get_image_id = operator.attrgetter("image_id")
_get_category_id = operator.attrgetter("category_id")
_get_score = operator.attrgetter("score")
_get_bbox = operator.attrgetter("bbox")
