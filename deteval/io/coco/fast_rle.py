"""Compressed-RLE segm-results files read in parts by the compiled parser (:mod:`.fast`).

:func:`_stream_rle_results` reads a file of plain compressed-RLE records as
:func:`.fast._stream_box_results` reads a box-results file: ``chunk_size`` bytes at a time, each
part parsed (``rle_results_part``) into the growing columns and the blob of counts strings, so
that the file's bytes are never held whole. The columns are those the whole-file reader
(:func:`.fast._compiled_rle_columns`) gives, byte for byte; anything else is left to it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from deteval._safe_read import note_read
from deteval.data import Detections, GroundTruth
from deteval.io.category_map import CategoryMap
from deteval.io.coco import fast
from deteval.io.coco._common import capacity_buffer, parse_threads

if TYPE_CHECKING:
    from deteval.masks.sources import RleSegmentations

#: A record's end in a plain file: its ``}``, then (past whitespace) ``,`` and the next ``{``. A
#: segmentation's ``}`` is followed by ``}`` or by ``,"key"``: a part is never cut after it.
_RECORD_END = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")

#: Bytes searched first, from the end of what was read, for a record's end (then twice as many).
_CUT_WINDOW = 1 << 16


def record_cut(buf: Any, filled: int) -> int:
    """Where to cut ``buf[:filled]``: right after the last record's ``}`` (0: none ends in it).

    The record's ``}`` must be followed by ``,`` and ``{`` within the bytes read, so that the cut
    is between two records (a ``}`` ends an RLE object as well; one inside a counts string is
    refused by the part's parse, and the whole-file reader decides). The search starts with the
    last :data:`_CUT_WINDOW` bytes and doubles: linear in the bytes read.
    """
    window = _CUT_WINDOW
    while True:
        lo = max(0, filled - window)
        last = None
        for last in _RECORD_END.finditer(buf, lo, filled):  # noqa: B007 - the last match is wanted
            pass
        if last is not None:
            return last.start() + 1
        if lo == 0:
            return 0
        window *= 2


def _stream_rle_results(
    path: str,
    gt: GroundTruth,
    cmap: CategoryMap | None = None,
    *,
    chunk_size: int = fast._STREAM_CHUNK,
    workers: int | str | None = 1,
) -> Detections | None:
    """A plain compressed-RLE segm-results file read in parts into checked columns, or None.

    The file is read ``chunk_size`` bytes at a time (:func:`.fast._stream_parts`), cut after a
    record's ``}`` (:func:`record_cut`); each part is parsed on ``workers`` threads
    (:func:`parse_threads`, from the file's size, as the whole-file reader counts them) into
    :class:`RleParts`. The columns then pass the checks of the whole-file reader
    (:func:`.fast._box_detections`). So the peak of loading holds the columns and the counts
    strings, not the file's bytes as well.

    Returns None -- and the caller reads the whole file, whose readers give the same numbers,
    warnings and errors -- without the extension or orjson (the whole-file reader needs both
    too), for anything but a regular file, for a file that is not plain compressed-RLE records
    in any part, that holds no record, that needs a message, or that cannot be read.

    Raises
    ------
    InputError
        The file changed while read (:func:`~deteval._safe_read.check_unchanged`).
    """
    colparse = fast._colparse
    if colparse is None or fast.orjson_module() is None or not hasattr(colparse, "rle_results_part"):
        return None
    read = fast._stream_parts(
        path, lambda size: RleParts(size, colparse, parse_threads(workers, size)), chunk_size, record_cut
    )
    if read is None:
        return None
    parts, start = read
    finished = parts.finish()
    del parts, read
    if finished is None:
        return None
    columns, segmentation = finished
    del finished
    dt = fast._box_detections(columns, path=path, gt=gt, cmap=cmap, segmentation=segmentation)
    if dt is not None:
        note_read(path, start)
    return dt


class RleParts:
    """The columns and counts blob of a compressed-RLE results file filled part by part.

    Capacity for the most records the file's size allows and a blob of the file's size
    (untouched memory is never resident), shrunk in place by :meth:`finish`. A part's columns
    and blob are written from where the previous part's ended, within the part's own share (the
    most its bytes can hold), so its threads touch only that share. The byte spans the parser
    gives that the columns do not keep (the segmentations' spans in the part, the counts' ends)
    go to part-sized scratch columns.
    """

    def __init__(self, size: int, colparse: Any, threads: int = 1):
        capacity = size // fast._MIN_RLE_RECORD_BYTES + 1
        self._colparse = colparse
        self.threads = threads
        self.n = self.n_blob = 0
        # Without numpy's 2 MiB pages (capacity_buffer): the threads of a part write from offsets
        # apart, and each 2 MiB page they touch was zeroed whole (RLE results at 20k images,
        # 439 MB: 1.0 s of system time on two threads against 0.33 s on one).
        self.image_ids = capacity_buffer(capacity, np.int64)
        self.category_ids = capacity_buffer(capacity, np.int64)
        self.box = capacity_buffer(4 * capacity, np.float64)
        self.score = capacity_buffer(capacity, np.float64)
        self.sizes = capacity_buffer(2 * capacity, np.int64)
        self.offsets = capacity_buffer(capacity + 1, np.int64)  # counts starts, then the blob's end
        self.blob = capacity_buffer(size, np.uint8)  # not zeroed: only the written part is read
        self.scratch = np.empty((3, 0), dtype=np.int64)  # segm_start, segm_stop, counts_stop

    def feed(self, raw: Any, *, first: bool, last: bool) -> bool:
        """Parse one part (a buffer) into the columns; False when it is not plain."""
        most = len(raw) // fast._MIN_RLE_RECORD_BYTES + 1
        if self.scratch.shape[1] < most:
            self.scratch = capacity_buffer(3 * most, np.int64).reshape(3, most)  # written in part
        n, at = self.n, self.n_blob
        stop = n + most
        found = self._colparse.rle_results_part(
            raw,
            first,
            last,
            self.image_ids[n:stop],
            self.category_ids[n:stop],
            self.box[4 * n : 4 * stop],
            self.score[n:stop],
            self.scratch[0],
            self.scratch[1],
            self.sizes[2 * n : 2 * stop],
            self.offsets[n:stop],
            self.scratch[2],
            self.blob[at : at + len(raw)],
            self.threads,
        )
        if found is None:
            return False
        count, n_blob = found
        if at:
            self.offsets[n : n + count] += at  # the part's spans start at its blob's first byte
        self.n += count
        self.n_blob += n_blob
        return True

    def finish(self) -> tuple[fast.BoxColumns, RleSegmentations] | None:
        """The columns and RLEs (as :func:`.fast._compiled_rle_columns` gives them), or None if none."""
        from deteval.masks.sources import RleSegmentations

        n = self.n
        if not n:
            return None
        self.scratch = np.empty((3, 0), dtype=np.int64)
        self.offsets[n] = self.n_blob  # strings are written back to back
        image_ids, category_ids, score = self.image_ids, self.category_ids, self.score
        box, sizes, offsets, blob = self.box, self.sizes, self.offsets, self.blob
        del self.image_ids, self.category_ids, self.score, self.box, self.sizes, self.offsets, self.blob
        for column, size in ((image_ids, n), (category_ids, n), (score, n), (box, 4 * n), (sizes, 2 * n)):
            column.resize(size, refcheck=False)  # in place: the parts' views are gone
        offsets.resize(n + 1, refcheck=False)
        blob.resize(self.n_blob, refcheck=False)  # in place, no copy
        segmentation = RleSegmentations((sizes.reshape(n, 2), blob, offsets))
        return (image_ids, category_ids, box.reshape(n, 4), score), segmentation
