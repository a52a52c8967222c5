"""Types of the optional C extension built from ``_colparse.c`` (see ``setup.py``)."""

from typing import Any

def box_results(
    raw: bytes, image_id: Any, category_id: Any, bbox: Any, score: Any, threads: int = 1, /
) -> int | None:
    """Parse COCO box-results JSON into the given int64/float64 buffers: the record count, or None.

    ``threads``: parts parsed at once (cut after records, GIL released); the one thread's outcome.
    """

def _parts_refused() -> int:
    """How many calls parsed a file again on one thread after one of its parts was refused."""

def box_results_part(
    raw: Any,
    first: bool,
    last: bool,
    image_id: Any,
    category_id: Any,
    bbox: Any,
    score: Any,
    threads: int = 1,
    /,
) -> int | None:
    """Parse one part of a box-results file cut after a record (``[`` first, ``]`` last): the record count, or None."""

def text_rows(raw: bytes, first_is_text: bool, class_ids: Any, numbers: Any, lines: Any, /) -> Any:
    """Parse rows ``id n n n n n`` into the buffers: the ids (list) or the row count, or None."""

def instances(
    raw: bytes,
    id: Any,
    image_id: Any,
    category_id: Any,
    bbox: Any,
    area: Any,
    iscrowd: Any,
    ignore: Any,
    difficult: Any,
    segm_start: Any,
    segm_end: Any,
    keypoints: Any = ...,
    num_keypoints: Any = ...,
    threads: int = 1,
    /,
) -> tuple[int, ...] | None:
    """Parse an instances file's ``annotations`` into the buffers: (count, start, stop) of the array, or None.

    With the keypoint buffers: (count, start, stop, numbers per annotation's ``keypoints``).
    ``threads``: the array parsed on that many parts at once (the keypoint buffers may be None).
    """

def images(raw: bytes, id: Any, width: Any, height: Any, /) -> tuple[int, int, int, list] | None:
    """Parse an instances file's ``images`` into the buffers: (count, start, stop, file names), or None.

    Plain images only (see the C docstring); ``width`` / ``height`` NaN and the name None where absent.
    """

def box_records(records: list, image_id: Any, category_id: Any, bbox: Any, score: Any, /) -> int | None:
    """Read a list of plain box-result dicts into the buffers: the record count, or None."""

def annotation_records(
    records: list,
    id: Any,
    image_id: Any,
    category_id: Any,
    bbox: Any,
    area: Any,
    iscrowd: Any,
    ignore: Any,
    difficult: Any,
    /,
) -> int | None:
    """Read a list of plain COCO annotation dicts into the buffers: the record count, or None."""

def segm_results(
    raw: bytes,
    image_id: Any,
    category_id: Any,
    bbox: Any,
    score: Any,
    segm_start: Any,
    segm_stop: Any,
    n_parts: Any,
    part_len: Any,
    coords: Any,
    threads: int = 1,
    /,
) -> tuple[int, int, int] | None:
    """Parse COCO polygon segm-results JSON into the buffers: (records, polygons, numbers), or None."""

def key_slots(keys: bytes, key_start: Any, /) -> bytearray:
    """The hash slots (int64, -1 when empty) of the distinct byte strings ``keys[key_start[k]:key_start[k + 1]]``."""

def voc_rows(
    raw: bytes,
    keys: bytes,
    key_start: Any,
    key_index: Any,
    slots: Any,
    image: Any,
    numbers: Any,
    lines: Any,
    /,
) -> int | None:
    """Parse VOC result lines, looking each image id up among the keys: the row count, or None."""

def yolo_files(
    paths: list[str], limit: int, width: Any, height: Any, layout: int, /
) -> tuple[bytearray, bytearray, bytearray, bytearray, bytearray, bytearray] | None:
    """Read and parse every YOLO prediction (layout 0, 1) or label (2) file: (class ids, boxes, scores, lines, counts, stats), or None."""

def rle_results(
    raw: bytes,
    image_id: Any,
    category_id: Any,
    bbox: Any,
    score: Any,
    segm_start: Any,
    segm_stop: Any,
    size: Any,
    counts_start: Any,
    counts_stop: Any,
    blob: Any,
    threads: int = 1,
    /,
) -> tuple[int, int] | None:
    """Parse a segm-results file of compressed RLE records into the buffers: (records, blob bytes), or None."""

def rle_results_part(
    raw: Any,
    first: bool,
    last: bool,
    image_id: Any,
    category_id: Any,
    bbox: Any,
    score: Any,
    segm_start: Any,
    segm_stop: Any,
    size: Any,
    counts_start: Any,
    counts_stop: Any,
    blob: Any,
    threads: int = 1,
    /,
) -> tuple[int, int] | None:
    """One part of a compressed-RLE results file cut after a record (spans relative to the buffers), or None."""

def keypoint_results(
    raw: Any,
    image_id: Any,
    category_id: Any,
    score: Any,
    keypoints: Any,
    bbox: Any = None,
    first: bool = True,
    last: bool = True,
    per_record: int = 0,
    threads: int = 1,
    /,
) -> tuple[int, int, int] | None:
    """Parse a keypoint-results file (image_id, category_id, keypoints, score, optional bbox) into the buffers: (records, numbers per record, records with a bbox), or None."""

def rle_spans(
    raw: Any, segm_start: Any, segm_stop: Any, size: Any, counts_start: Any, counts_stop: Any, blob: Any, /
) -> int | None:
    """Read compressed-RLE segmentations at byte spans of ``raw`` into the buffers: the blob's length, or None."""

def polygon_spans(
    raw: Any, segm_start: Any, segm_stop: Any, n_parts: Any, part_len: Any, coords: Any, /
) -> tuple[int, int] | None:
    """Read polygon-list segmentations at byte spans of ``raw`` into the buffers: (n_part, n_coord), or None."""
