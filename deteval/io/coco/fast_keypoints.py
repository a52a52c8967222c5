"""Plain keypoint-results files read by the compiled parser straight into columns (:mod:`.fast`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval._dtypes import row_dtype
from deteval.data import Detections, GroundTruth, order_column
from deteval.errors import ConfigError
from deteval.io.category_map import CategoryMap, map_categories
from deteval.io.coco._common import capacity_buffer
from deteval.io.coco.suspicions import _box_warnings, _index_suspicion
from deteval.io.identity import join_ids

#: Bytes of the shortest keypoint record the compiled parser accepts, with its comma:
#: ``{"image_id":0,"category_id":0,"keypoints":[0,0,0],"score":0},``; a number takes 2 (``0,``).
_MIN_KEYPOINT_RECORD_BYTES = 61


def keypoint_results(
    raw: bytes, path: str, gt: GroundTruth, cmap: CategoryMap | None, colparse: Any, *, threads: int = 1
) -> Detections | None:
    """A plain keypoint-results file read by the C extension into columns, or None for the full path.

    Plain: a non-empty array of records with exactly ``image_id``, ``category_id``,
    ``keypoints`` (JSON numbers, finite, one length for all, a multiple of 3) and ``score``,
    and either every record or none with a ``bbox`` of four numbers. The Detections are the
    full loader's: records without a bbox get their keypoints' extent (pycocotools' ``loadRes``)
    and ``has_box`` False; a given bbox is kept (``loadRes`` takes its area from it). Anything
    that needs a message (unknown image or category, a non-finite score, a negative box size)
    returns None and the full loader names it. A regular file is read in parts instead
    (:class:`KeypointParts`, by ``fast._stream_keypoint_results``), without its bytes held whole.
    ``threads``: parts of the bytes parsed at once (the same columns for every count).
    """
    if colparse is None or not hasattr(colparse, "keypoint_results"):
        return None
    parts = KeypointParts(len(raw), colparse, threads)
    if not parts.feed(raw, first=True, last=True):
        return None
    return parts.detections(path, gt, cmap)


class KeypointParts:
    """The columns of a keypoint-results file filled part by part (each cut after a record's ``}``).

    Capacity for the most records and numbers the file's size allows (untouched memory is never
    resident): the columns are written in place, and shrunk in place when finished.
    """

    def __init__(self, size: int, colparse: Any, threads: int = 1):
        capacity = size // _MIN_KEYPOINT_RECORD_BYTES + 1
        self._colparse = colparse
        self.threads = threads
        self.image_ids = capacity_buffer(capacity, np.int64)
        self.category_ids = capacity_buffer(capacity, np.int64)
        self.score = capacity_buffer(capacity, np.float64)
        self.numbers = capacity_buffer(size // 2 + 1, np.float64)
        self.box = capacity_buffer(4 * capacity, np.float64)
        self.n = self.per_record = self.n_box = 0

    def feed(self, raw: Any, *, first: bool, last: bool) -> bool:
        """Parse one part (a buffer) into the columns' free tails; False when it is not plain."""
        n, per_record = self.n, self.per_record
        found = self._colparse.keypoint_results(
            raw,
            self.image_ids[n:],
            self.category_ids[n:],
            self.score[n:],
            self.numbers[n * per_record :],
            self.box[4 * n :],
            first,
            last,
            per_record,
            self.threads,
        )
        if found is None:
            return False
        count, self.per_record, n_box = found
        self.n += count
        self.n_box += n_box
        return True

    def detections(self, path: str, gt: GroundTruth, cmap: CategoryMap | None) -> Detections | None:
        """The Detections of the records read, or None when they need the full loader's messages."""
        n, per_record, n_box = self.n, self.per_record, self.n_box
        if not n or n_box not in (0, n):
            return None  # some records with a bbox, some without: the full loader's
        image_ids, category_ids, score, numbers, box = (
            self.image_ids,
            self.category_ids,
            self.score,
            self.numbers,
            self.box,
        )
        del self.image_ids, self.category_ids, self.score, self.numbers, self.box
        for column, size in ((image_ids, n), (category_ids, n), (score, n), (numbers, n * per_record)):
            column.resize(size, refcheck=False)  # in place: the parts' views are gone
        keypoints = numbers.reshape(n, per_record // 3, 3)
        if n_box:
            box.resize(4 * n, refcheck=False)
            if (box[2::4] < 0).any() or (box[3::4] < 0).any():
                return None
        image = join_ids(image_ids, gt)
        try:
            category = map_categories(category_ids, gt, cmap)
        except ConfigError:
            return None  # the full path raises it again
        if not np.isfinite(score).all() or (image < 0).any() or (category < 0).any():
            return None
        warnings = _index_suspicion(category_ids, gt, cmap, path)
        if n_box:
            boxes = box.reshape(n, 4)
        else:  # pycocotools' loadRes: the keypoints' extent
            from deteval.io.coco.keypoints import keypoint_extent

            boxes = keypoint_extent(keypoints)
        del box
        if n_box:
            warnings.extend(_box_warnings(boxes, image, gt, path))
        index = row_dtype(n)
        return Detections(
            image=image.astype(index, copy=False),
            category=category.astype(index, copy=False),
            box=boxes,
            score=score,
            order=order_column(n),
            has_box=np.full(n, bool(n_box)),
            box_format="xywh",
            source=path,
            warnings=tuple(warnings),
            keypoints=keypoints,
        )
