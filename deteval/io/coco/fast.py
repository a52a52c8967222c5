"""Fast paths: plain COCO files decoded straight into columns.

A file that fits (known keys only, clean values) is read here; anything else returns None and
the full readers (:mod:`deteval.io.coco.ground_truth`, :mod:`deteval.io.coco.results`) name
the problem. Ground-truth segmentations are kept raw (:class:`RawSegmentations`) until read.

Box results are parsed by the optional C extension :mod:`deteval.io._colparse` when it was built
(``setup.py``; ``DETEVAL_NO_EXTENSION=1`` turns it off), else decoded by msgspec: the two give the
same columns bit for bit, and both hand anything unusual to the full loader. Segm results of plain
polygon lists, or of compressed RLEs only, are read by the extension alone
(:func:`_fast_segm_results`: no twin, every other file takes the full loader, which gives the same
values).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from deteval import _speedups
from deteval._dtypes import row_dtype
from deteval._safe_read import MAX_BYTES, check_unchanged, note_read, open_regular
from deteval._safe_read.strict_json import orjson_loads, orjson_module
from deteval.data import Detections, GroundTruth, order_column
from deteval.errors import ConfigError
from deteval.io._text import FileBytes
from deteval.io.category_map import CategoryMap, map_categories
from deteval.io.coco._common import _HAS_MSGSPEC as _HAS_MSGSPEC  # read by the tests as fast.<name>
from deteval.io.coco._common import BoxColumns, capacity_buffer, parse_threads
from deteval.io.coco.fast_keypoints import KeypointParts, keypoint_results
from deteval.io.coco.suspicions import _box_warnings, _index_suspicion
from deteval.io.identity import join_ids

if TYPE_CHECKING:  # imported where a mask column is made: box and keypoint loads need no deteval.masks
    from deteval.masks.sources import PolygonSegmentations, RleSegmentations

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


def _fast_box_results(
    raw: bytes, path: str, gt: GroundTruth, cmap: CategoryMap | None = None, *, threads: int = 1
) -> Detections | None:
    """Decode a plain box-results file straight into columns, or None to take the full path.

    The compiled parser (:func:`_compiled_box_columns`) is tried first, then msgspec
    (:func:`_msgspec_box_columns`); both read only the plain shape and give the same columns bit
    for bit. The columns then pass one set of checks (:func:`_box_detections`).
    """
    return _fast_box_results_held([raw], path, gt, cmap, threads=threads)


def _fast_box_results_held(
    held: list, path: str, gt: GroundTruth, cmap: CategoryMap | None = None, *, threads: int = 1
) -> Detections | None:
    """:func:`_fast_box_results` on the bytes held as ``held[0]``, which it empties once parsed.

    Once the columns exist they are all that is needed: the list is emptied so that the file's
    bytes (as large as the columns) are freed before the columns are checked and the warnings
    computed, which lowers the peak of loading. Its caller (``_source``) reads the file again
    when this returns None after that. ``threads``: the compiled parsers' (:func:`parse_threads`).
    """
    columns = _box_columns(held[0], threads)
    if columns is None:
        return _fast_segm_results(held, path, gt, cmap, threads=threads)
    held.clear()
    return _box_detections(columns, path=path, gt=gt, cmap=cmap)


def _box_columns(raw: bytes, threads: int = 1) -> BoxColumns | None:
    """The columns of a plain box-results file (compiled parser, else msgspec), or None."""
    columns = _compiled_box_columns(raw, threads) if _colparse is not None else None
    if columns is not None:
        return columns
    from deteval.io.coco.fast_msgspec import _msgspec_box_columns  # the twin: msgspec only when needed

    return _msgspec_box_columns(raw)


#: Bytes of the shortest record the compiled parser accepts, with its comma:
#: ``{"image_id":0,"category_id":0,"bbox":[0,0,0,0],"score":0},``. A file of ``n`` records has at
#: least ``58 * n + 1`` bytes, which bounds the columns to allocate.
_MIN_RECORD_BYTES = 58


def _compiled_box_columns(raw: bytes, threads: int = 1) -> BoxColumns | None:
    """A plain box-results file's columns read by the C extension, or None when it is not plain.

    The columns are allocated for the most records the file's size allows (untouched memory is
    never resident) and shrunk in place to the records read. None when the extension is not
    available, or when the file is anything but a non-empty array of records with exactly the four
    keys and plain JSON numbers (ids integers within int64, floats finite): the msgspec path and
    then the full loader decide about such files. ``threads``: parts parsed at once (the same
    columns and outcome for every count).
    """
    if _colparse is None:
        return None
    records = _record_buffers(len(raw) // _MIN_RECORD_BYTES + 1)
    n = _colparse.box_results(raw, *records, threads)
    if not n:
        return None
    return _records_read(records, n)


def _record_buffers(capacity: int) -> list[np.ndarray]:
    """A results file's record columns for up to ``capacity`` records (:func:`capacity_buffer`s).

    Image ids, category ids (int64), boxes (float64, 4 a record, flat) and scores (float64), as
    the compiled parsers take them; :func:`_records_read` shrinks them to the records read.
    """
    return [
        capacity_buffer(capacity, np.int64),
        capacity_buffer(capacity, np.int64),
        capacity_buffer(4 * capacity, np.float64),
        capacity_buffer(capacity, np.float64),
    ]


def _records_read(records: list[np.ndarray], n: int) -> BoxColumns:
    """:func:`_record_buffers` shrunk in place to the ``n`` records read (no view of them exists yet)."""
    image_ids, category_ids, box, score = records
    for column, size in ((image_ids, n), (category_ids, n), (box, 4 * n), (score, n)):
        column.resize(size, refcheck=False)
    return image_ids, category_ids, box.reshape(n, 4), score


#: Bytes read at a time when a results file is streamed (:func:`_stream_box_results`): the working
#: set of loading, whatever the file's size.
_STREAM_CHUNK = 4 << 20


def _stream_box_results(
    path: str,
    gt: GroundTruth,
    cmap: CategoryMap | None = None,
    *,
    chunk_size: int = _STREAM_CHUNK,
    workers: int | str | None = 1,
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

    ``workers`` (:func:`parse_threads`, from the file's size): each part is parsed on that many
    threads, with the same columns.

    Raises
    ------
    InputError
        The file changed while read (:func:`~deteval.io._text.check_unchanged`: the open file or
        the path show another size, modification time, inode or device at the end than at the
        start, or more or fewer bytes than its size were read): its parts may mix two versions.
    """
    read = _stream_parts(
        path, lambda size: _BoxParts(size, gt, cmap, parse_threads(workers, size)), chunk_size
    )
    if read is None:
        return None
    parts, start = read
    finished = parts.finish()
    del parts, read
    if finished is None:
        return None
    note_read(path, start)
    image, category, box, score, min_category = finished
    del finished
    warnings = _index_suspicion(np.array([min_category]), gt, cmap, path)  # it reads the smallest id only
    warnings += _box_warnings(box, image, gt, path)
    return _box_result(image, category, box, score, path=path, warnings=warnings)


def _stream_keypoint_results(
    path: str,
    gt: GroundTruth,
    cmap: CategoryMap | None = None,
    *,
    chunk_size: int = _STREAM_CHUNK,
    workers: int | str | None = 1,
) -> Detections | None:
    """A plain keypoint-results file read in parts into columns (:class:`.KeypointParts`), or None.

    As :func:`_stream_box_results` reads a box-results file: the file's bytes are never held
    whole, only ``chunk_size`` at a time; None for the whole-file reader to decide (and name)
    anything else. Raises the same InputError for a file changed while read.
    """
    read = _stream_parts(
        path, lambda size: KeypointParts(size, _colparse, parse_threads(workers, size)), chunk_size
    )
    if read is None:
        return None
    parts, start = read
    dt = parts.detections(path, gt, cmap)
    del parts, read
    if dt is not None:
        note_read(path, start)
    return dt


def _stream_parts(
    path: str, make_parts: Any, chunk_size: int, find_cut: Any = None
) -> tuple[Any, os.stat_result] | None:
    """``(make_parts(size), the file's stat at the start)`` once every part was fed, or None.

    None without the extension, for anything but a regular file of at most the JSON limit, a
    file that cannot be read, or a part the parts' ``feed`` refuses. A file that changed while
    read is an InputError (:func:`~deteval._safe_read.check_unchanged`). ``find_cut``: as
    :func:`_read_parts` takes it.
    """
    if _colparse is None:
        return None
    opened = open_regular(path, limit=MAX_BYTES["json"])
    if opened is None:  # missing, a folder, FIFO, device, or too large: read_bytes names it
        return None
    fd, start = opened
    with os.fdopen(fd, "rb", buffering=0) as f:
        try:
            parts = make_parts(start.st_size)
            n_read = _read_parts(f, parts, start.st_size, chunk_size, find_cut)
        except OSError:
            return None  # read again whole: read_bytes names the problem
        # a file that changed is an error even when a part was not plain: those parts may mix
        # two versions, and so would a whole read that starts again now
        check_unchanged(path, start, fd, n_read, what="a results file")
    if n_read is None:
        return None
    return parts, start


def _read_parts(f: Any, parts: Any, size: int, chunk_size: int, find_cut: Any = None) -> int | None:
    """Read ``f`` to its end in parts cut after a ``}``, feeding each to ``parts``.

    ``find_cut(buf, filled)``: where to cut the ``filled`` bytes read (0: read more first); by
    default after the last ``}``.

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
            cut = buf.rfind(b"}", 0, filled) + 1 if find_cut is None else find_cut(buf, filled)
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

    def __init__(self, size: int, gt: GroundTruth, cmap: CategoryMap | None, threads: int = 1):
        capacity = size // _MIN_RECORD_BYTES + 1
        self.threads = threads
        index: Any = row_dtype(capacity)
        self.gt, self.cmap = gt, cmap
        self.n = 0
        self.min_category: int | None = None
        self.image: np.ndarray = capacity_buffer(capacity, index)
        self.category: np.ndarray = capacity_buffer(capacity, index)
        self.box = capacity_buffer(4 * capacity, np.float64)
        self.score = capacity_buffer(capacity, np.float64)
        # against image names, the image ids are joined once at the end (join_ids reads the names)
        self.image_ids = None if gt.has_image_ids else capacity_buffer(capacity, np.int64)
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
            raw,
            first,
            last,
            image_ids,
            self.part_category_ids,
            self.box[4 * n :],
            self.score[n:],
            self.threads,
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
    held: list, path: str, gt: GroundTruth, cmap: CategoryMap | None = None, *, threads: int = 1
) -> Detections | None:
    """A plain segm-results file (polygon lists or compressed RLE) read by the C extension, or None.

    The file's bytes are ``held[0]`` (see :func:`_fast_box_results_held`). The records' masks are
    parsed into flat columns that the segm evaluation checks as arrays: polygons
    (:class:`PolygonSegmentations`, which decodes a record's list with orjson when it is read, as
    the full loader decodes it, from the file read again: the bytes are not kept) or RLEs
    (:class:`RleSegmentations`, whose items are made from the columns). The list is emptied once
    the columns exist, so that the bytes are freed before the columns are checked. The other
    columns pass the checks of a box file's.
    """
    raw = held[0]
    parsed = _compiled_segm_columns(raw, path, threads) or _compiled_rle_columns(raw, threads)
    if parsed is None:
        return _fast_keypoint_results(raw, path, gt, cmap, threads=threads)
    columns, segmentation = parsed
    del parsed, raw
    held.clear()
    return _box_detections(columns, path=path, gt=gt, cmap=cmap, segmentation=segmentation)


def _compiled_segm_columns(
    raw: bytes, path: str, threads: int = 1
) -> tuple[BoxColumns, PolygonSegmentations] | None:
    """The columns and polygons of a plain segm-results file read by the C extension, or None.

    Plain: a non-empty array of records with exactly ``image_id``, ``category_id``, ``bbox``,
    ``score`` and a ``segmentation`` that is a non-empty list of non-empty lists of JSON numbers
    (finite; integers of at most 18 digits). Anything else -- RLE, no bbox, ``[]``, a deeper
    nesting -- is for the full loader. Odd or short polygons are taken: the checks of
    :func:`deteval.masks.parse_masks` find them and name them as the full path does. The
    records' raw JSON is read again from ``path`` when an item is asked for (a message).
    """
    if _colparse is None or orjson_module() is None:
        return None
    from deteval.masks.sources import PolygonSegmentations

    capacity = len(raw) // _MIN_SEGM_RECORD_BYTES + 1
    # Sized by the file and written in part, by threads from offsets apart: no 2 MiB pages.
    records = _record_buffers(capacity)
    starts = capacity_buffer(capacity, np.int64)
    stops = capacity_buffer(capacity, np.int64)
    n_parts = capacity_buffer(capacity, np.int64)
    part_len = capacity_buffer(len(raw) // 4 + 1, np.int64)
    coords = capacity_buffer(len(raw) // 2 + 1, np.float64)
    found = _colparse.segm_results(raw, *records, starts, stops, n_parts, part_len, coords, threads)
    if found is None:
        return None
    n, n_part, n_coord = found
    columns = _records_read(records, n)
    for column in (starts, stops, n_parts):
        column.resize(n, refcheck=False)  # in place: no view of these arrays exists yet
    part_len.resize(n_part, refcheck=False)
    coords.resize(n_coord, refcheck=False)
    segmentation = PolygonSegmentations(
        FileBytes(path, raw, "the detections", plural=True),
        starts,
        stops,
        (n_parts, part_len, coords),
        orjson_loads,
    )
    return columns, segmentation


#: Bytes of the shortest RLE segm record the compiled parser accepts, with its comma:
#: ``{"image_id":0,"category_id":0,"bbox":[0,0,0,0],"score":0,"segmentation":{"size":[0,0],"counts":""}},``
_MIN_RLE_RECORD_BYTES = 99


def _compiled_rle_columns(raw: bytes, threads: int = 1) -> tuple[BoxColumns, RleSegmentations] | None:
    """The columns and RLEs of a segm-results file of compressed RLE records (C extension), or None.

    Plain: a non-empty array of records with exactly ``image_id``, ``category_id``, ``bbox``,
    ``score`` and a ``segmentation`` ``{"size": [h, w], "counts": "..."}`` (integers, an ASCII
    string whose only escapes are an escaped backslash or slash). Anything else -- polygons,
    uncompressed counts, a mix -- is for the other readers. Sizes and strings are checked by
    :func:`deteval.masks.parse_masks`, which names problems as the full path does.
    """
    if _colparse is None or orjson_module() is None or not hasattr(_colparse, "rle_results"):
        return None
    from deteval.masks.sources import RleSegmentations

    capacity = len(raw) // _MIN_RLE_RECORD_BYTES + 1
    # Sized by the file and written in part, by threads from offsets apart: no 2 MiB pages.
    records = _record_buffers(capacity)
    starts = capacity_buffer(capacity, np.int64)
    stops = capacity_buffer(capacity, np.int64)
    sizes = capacity_buffer(2 * capacity, np.int64)
    counts_start = capacity_buffer(capacity, np.int64)
    counts_stop = capacity_buffer(capacity, np.int64)
    blob = capacity_buffer(len(raw), np.uint8)  # not zeroed: only the written part is read
    found = _colparse.rle_results(
        raw,
        *records,
        starts,
        stops,
        sizes,
        counts_start,
        counts_stop,
        blob,
        threads,
    )
    if found is None:
        return None
    n, n_blob = found
    columns = _records_read(records, n)
    for column in (starts, stops, counts_start, counts_stop):
        column.resize(n, refcheck=False)  # in place: no view of these arrays exists yet
    sizes.resize(2 * n, refcheck=False)
    offsets = np.append(counts_start, n_blob)  # strings are written back to back
    blob.resize(n_blob, refcheck=False)  # in place, no copy: the strings stay where they were written
    segmentation = RleSegmentations((sizes.reshape(n, 2), blob, offsets))
    return columns, segmentation


def _fast_keypoint_results(
    raw: bytes, path: str, gt: GroundTruth, cmap: CategoryMap | None = None, *, threads: int = 1
) -> Detections | None:
    """A plain keypoint-results file in columns, or None (:func:`.fast_keypoints.keypoint_results`)."""
    return keypoint_results(raw, path, gt, cmap, _colparse, threads=threads)


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
        from deteval.io.coco.fast_msgspec import _msgspec_box_records

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


def _box_detections(
    columns: BoxColumns | None,
    *,
    path: str,
    gt: GroundTruth,
    cmap: CategoryMap | None,
    segmentation: PolygonSegmentations | RleSegmentations | None = None,
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
    segmentation: PolygonSegmentations | RleSegmentations | None = None,
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
