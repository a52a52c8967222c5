"""RLE segmentations: keys, sizes and counts (uncompressed lists and pycocotools' strings) checked.

An RLE is ``{"size": [h, w], "counts": ...}``; its runs must add up to ``h * w``, or pycocotools
reads or writes past the mask. Its size need not be its image's: only the two masks of a pair
must agree (:func:`check_pair_sizes`, what pycocotools can score). Compressed counts strings are checked
and their runs summed in numpy, without pycocotools. Used by
:func:`~deteval.masks.parsing.parse_masks`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from deteval import _speedups
from deteval.errors import InputError
from deteval.masks.sources import (
    MAX_PIXELS,
    N_SHOWN,
    RLE,
    SegmentationSource,
    _as_float,
    _show,
    fail_records,
)


def _parse_rles(src: SegmentationSource, rle_rows: np.ndarray) -> tuple[tuple, np.ndarray]:
    """Validate RLE records.

    Returns
    -------
    rles : tuple
        Per record the canonical dict (None for polygons).
    boxes : float64 (n_records, 4)
        pycocotools' ``toBbox`` (xywh) of the compressed RLE rows when the compiled kernel gave
        it, NaN elsewhere (the caller asks pycocotools for those).
    """
    values = src.values
    out: list = [None] * len(values)
    boxes = np.full((len(values), 4), np.nan)
    if not len(rle_rows):
        return tuple(out), boxes
    sizes, list_rows, string_rows = _rle_sizes_and_kinds(src, rle_rows)
    total_of = sizes[:, 0] * sizes[:, 1]
    if list_rows:
        _check_list_counts(src, list_rows, sizes, total_of)
        for r in list_rows:
            out[r] = {
                "size": [int(sizes[r, 0]), int(sizes[r, 1])],
                "counts": [int(x) for x in values[r]["counts"]],
            }
    if string_rows:
        encoded, string_boxes = _check_string_counts(src, string_rows, sizes, total_of)
        boxes[string_rows] = string_boxes
        for r, e in zip(string_rows, encoded, strict=True):
            out[r] = {"size": [int(sizes[r, 0]), int(sizes[r, 1])], "counts": e}
    return tuple(out), boxes


def _rle_sizes_and_kinds(src: SegmentationSource, rle_rows: np.ndarray) -> tuple[np.ndarray, list, list]:
    """Check each RLE's keys, ``size`` and ``counts`` type.

    Returns
    -------
    sizes : int64 (n_records, 2)
        ``[height, width]`` of the RLE rows (0 elsewhere).
    list_rows, string_rows : list of int
        The RLE rows with uncompressed (list) and compressed (string) ``counts``.
    """
    values = src.values
    bad_keys, bad_size, bad_counts = [], [], []
    sizes = np.zeros((len(values), 2), dtype=np.int64)
    list_rows, string_rows = [], []
    for r in rle_rows.tolist():
        v = values[r]
        if "size" not in v or "counts" not in v:
            bad_keys.append(r)
            continue
        size = v["size"]
        if not (
            isinstance(size, (list, tuple))
            and len(size) == 2
            and all(type(s) is int or isinstance(s, np.integer) for s in size)
            and size[0] >= 0
            and size[1] >= 0
            and size[0] * size[1] <= MAX_PIXELS
        ):
            bad_size.append(r)
            continue
        sizes[r] = size
        counts = v["counts"]
        if isinstance(counts, (list, tuple)):
            list_rows.append(r)
        elif isinstance(counts, (str, bytes)):
            string_rows.append(r)
        else:
            bad_counts.append(r)
    if bad_keys:
        fail_records(
            src,
            bad_keys,
            "an RLE `segmentation` without `size` and `counts`",
            '{"size": [height, width], "counts": ...}',
            lambda r: _show(values[r]),
        )
    if bad_size:
        fail_records(
            src,
            bad_size,
            "RLE `size` is not [height, width]",
            f"two integers >= 0 with height * width <= {MAX_PIXELS}",
            lambda r: _show(values[r]["size"]),
        )
    if bad_counts:
        fail_records(
            src,
            bad_counts,
            "RLE `counts` is neither a list nor a string",
            "a list of run lengths or pycocotools' compressed string",
            lambda r: _show(values[r]["counts"]),
        )
    return sizes, list_rows, string_rows


def _check_list_counts(
    src: SegmentationSource, list_rows: list, sizes: np.ndarray, total_of: np.ndarray
) -> None:
    """Uncompressed ``counts``: integers in [0, 2**32) adding up to ``height * width``."""
    values = src.values
    rows = np.array(list_rows)
    count_lists = [values[r]["counts"] for r in list_rows]
    flat = list(itertools.chain.from_iterable(count_lists))
    lengths = np.fromiter(map(len, count_lists), np.int64, len(count_lists))
    owner = np.repeat(np.arange(len(rows)), lengths)
    if not set(map(type, flat)) <= {int}:
        bad = [
            r
            for r, c in zip(list_rows, count_lists, strict=True)
            if not all(type(x) is int or isinstance(x, np.integer) for x in c)
        ]
        if bad:
            fail_records(
                src,
                bad,
                "RLE `counts` has a value that is not an integer",
                "non-negative integer run lengths",
                lambda r: _show(values[r]["counts"]),
            )
    try:
        counts = np.array(flat, dtype=np.float64)
    except OverflowError:
        counts = np.array([_as_float(x) for x in flat], dtype=np.float64)
    negative = np.unique(owner[(counts < 0) | (counts >= 2**32)])
    if len(negative):
        fail_records(
            src,
            rows[negative],
            "RLE `counts` has a negative or too large run length",
            "run lengths in [0, 2**32)",
            lambda r: _show(values[r]["counts"]),
        )
    sums = np.bincount(owner, weights=counts, minlength=len(rows))
    wrong = np.flatnonzero(sums != total_of[rows])
    if len(wrong):
        sums_of = dict(zip(rows[wrong].tolist(), sums[wrong].tolist(), strict=True))
        fail_records(
            src,
            rows[wrong],
            "RLE run lengths do not add up to height * width",
            "counts summing to size[0] * size[1]",
            lambda r: f"a sum of {int(sums_of[r])} for size {sizes[r].tolist()}",
        )


def _check_string_counts(
    src: SegmentationSource, string_rows: list, sizes: np.ndarray, total_of: np.ndarray
) -> tuple[list[bytes], np.ndarray]:
    """Compressed ``counts``: pycocotools' encoding, decoding to ``height * width``.

    Returns the strings as bytes and their xywh boxes (float64 (n, 4), NaN where the compiled
    kernel is not loaded or gave none).
    """
    values = src.values
    rows = np.array(string_rows)
    encoded = [
        c.encode("utf-8") if isinstance(c, str) else bytes(c)
        for c in (values[r]["counts"] for r in string_rows)
    ]
    problem, sums, boxes = _summarise_compressed(encoded, sizes[rows])
    is_empty = np.fromiter(map(len, encoded), np.int64, len(encoded)) == 0
    problem[(problem == 2) & (total_of[rows] == 0) & is_empty] = 0  # "" is a fine 0 x 0 mask
    bad = np.flatnonzero(problem != 0)
    if len(bad):
        what = {1: "a character outside '0'..'o'", 2: "a string that ends inside a run (or is empty)"}
        code_of = dict(zip(rows[bad].tolist(), problem[bad].tolist(), strict=True))
        fail_records(
            src,
            rows[bad],
            "compressed RLE `counts` is not pycocotools' encoding",
            "the string of pycocotools.mask.encode",
            lambda r: f"{what[code_of[r]]}: {_show(values[r]['counts'])}",
        )
    wrong = np.flatnonzero(sums != total_of[rows])
    if len(wrong):
        sums_of = dict(zip(rows[wrong].tolist(), sums[wrong].tolist(), strict=True))
        fail_records(
            src,
            rows[wrong],
            "compressed RLE runs do not add up to height * width "
            "(pycocotools would read or write past the mask)",
            "counts (decoded) summing to size[0] * size[1]",
            lambda r: (
                "a sum of "
                + ("runs longer than 2**35" if sums_of[r] < 0 else str(sums_of[r]))
                + f" for size {sizes[r].tolist()}"
            ),
        )
    return encoded, boxes


def _summarise_compressed(encoded: list, sizes: np.ndarray) -> tuple:
    """(problem codes, run sums, xywh boxes) of compressed counts strings (see :func:`summarise_spans`).

    Parameters
    ----------
    encoded : list of bytes (n,)
    sizes : int64 (n, 2)
        ``[height, width]`` of each string's RLE.
    """
    n = len(encoded)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, n), out=offsets[1:])
    problem, sums, _, boxes = summarise_spans(b"".join(encoded), offsets, sizes)
    return problem.astype(np.int64), sums, boxes


def summarise_spans(blob: Any, offsets: np.ndarray, sizes: np.ndarray, threads: int = 1) -> tuple:
    """Problem codes, run sums, pixel counts and xywh boxes of compressed counts strings.

    By the compiled kernel ``deteval.geometry._cmask.summarise_compressed`` when it is loaded
    (one pass per string in C, no temporary per character), else by its twin
    :func:`_summarise_spans_numpy`: the codes of :func:`_check_compressed`, the sums of
    :func:`_compressed_run_sums`, the areas and boxes of ``pycocotools.mask.area`` / ``toBbox``.

    Parameters
    ----------
    blob : bytes-like
        The strings, concatenated.
    offsets : int64 (n + 1,)
        String r is ``blob[offsets[r]:offsets[r + 1]]``.
    sizes : int64 (n, 2)
        ``[height, width]`` of each string's RLE.
    threads : int
        Threads the compiled kernel splits the strings into (see
        :func:`deteval._parallel.kernel_threads`); the values do not depend on it.

    Returns
    -------
    problem : int8 (n,)
        0 fine, 1 a character outside ``'0'..'o'``, 2 empty or ending inside a run.
    sums : int64 (n,)
        Sum of the runs (-1: a run of more than 7 groups); 0 where ``problem != 0``.
    areas : float64 (n,)
        Pixels of the mask where the sum is ``height * width`` (and ``problem == 0``), else 0.
    boxes : float64 (n, 4)
        xywh; NaN unless ``problem == 0``, the sum is ``height * width``, ``height > 0`` and no
        run but the first is 0 (the callers ask ``pycocotools.mask.toBbox`` for those).
    """
    return _speedups.dispatch("_cmask.summarise_compressed", blob, offsets, sizes, threads=threads)


def _summarise_spans_compiled(blob: Any, offsets: np.ndarray, sizes: np.ndarray, threads: int = 1) -> tuple:
    """:func:`summarise_spans` by ``deteval.geometry._cmask.summarise_compressed``.

    The kernel writes the twin's values where they mean nothing too (sums 0 for a problem, areas
    0 unless the runs add up to the size), so nothing is patched here.
    """
    n = len(offsets) - 1
    problem = np.zeros(n, dtype=np.int8)
    sums = np.zeros(n, dtype=np.int64)
    areas = np.zeros(n, dtype=np.float64)
    boxes = np.zeros((n, 4), dtype=np.float64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64).reshape(n, 2)
    _speedups.module_of("_cmask.summarise_compressed").summarise_compressed(  # type: ignore[union-attr]
        blob, np.ascontiguousarray(offsets, dtype=np.int64), sizes, problem, sums, areas, boxes, int(threads)
    )
    return problem, sums, areas, boxes


def _summarise_spans_numpy(blob: Any, offsets: np.ndarray, sizes: np.ndarray, threads: int = 1) -> tuple:
    """The twin of :func:`summarise_spans`: numpy's codes and sums, pycocotools' areas and boxes.

    ``threads`` is not read (one thread).
    """
    n = len(offsets) - 1
    view = memoryview(blob).cast("B")
    bounds = np.asarray(offsets, dtype=np.int64).tolist()
    strings = [view[bounds[r] : bounds[r + 1]].tobytes() for r in range(n)]
    sizes = np.asarray(sizes, dtype=np.int64).reshape(n, 2)
    problem = _check_compressed(strings).astype(np.int8)
    sums = np.zeros(n, dtype=np.int64)
    zero_run = np.zeros(n, dtype=bool)
    fine = np.flatnonzero(problem == 0)
    if len(fine):
        sums[fine], zero_run[fine] = _compressed_runs_batched([strings[r] for r in fine.tolist()])
    areas = np.zeros(n, dtype=np.float64)
    whole = (problem == 0) & (sums == sizes[:, 0] * sizes[:, 1])
    rows = np.flatnonzero(whole & (sizes[:, 0] * sizes[:, 1] > 0)).tolist()
    if rows:
        rles = [{"size": sizes[r].tolist(), "counts": strings[r]} for r in rows]
        for start in range(0, len(rles), 255):  # pycocotools' area: at most 255 at a time
            areas[rows[start : start + 255]] = mask_utils.area(rles[start : start + 255])
    # boxes: pycocotools' toBbox, where the kernel gives one (height > 0, no run of length 0 but
    # the first), else NaN: the callers ask pycocotools for those
    boxes = np.full((n, 4), np.nan)
    whole &= (sizes[:, 0] > 0) & ~zero_run
    whole &= sizes[:, 0] <= np.iinfo(np.uint32).max
    whole &= (sizes[:, 1] >= 0) & (sizes[:, 1] <= np.iinfo(np.uint32).max)
    rows = np.flatnonzero(whole).tolist()
    if rows:
        rles = [{"size": sizes[r].tolist(), "counts": strings[r]} for r in rows]
        boxes[rows] = np.asarray(mask_utils.toBbox(rles), dtype=np.float64).reshape(-1, 4)
    return problem, sums, areas, boxes


def _cmask() -> Any:
    """The compiled mask kernels, or None (not built, or ``DETEVAL_NO_EXTENSION``)."""
    return _speedups.module_of("_cmask.summarise_compressed")


_speedups.register(
    "_cmask.summarise_compressed",
    "deteval.geometry._cmask",
    _summarise_spans_compiled,
    _summarise_spans_numpy,
)


def mask_sizes(src: SegmentationSource, masks: Any, rows: np.ndarray) -> np.ndarray:
    """(n, 2) float64: the ``[height, width]`` pycocotools gives each row's mask.

    An RLE (compressed or not) keeps its own ``size``; a polygon is rasterised at its image's
    ``[height, width]`` (NaN where the image has no size).
    """
    rows = np.asarray(rows, dtype=np.int64)
    out = src.image_size[src.image[rows]].astype(np.float64)
    is_rle = masks.kind[rows] == RLE
    out[is_rle] = masks.rle_size[rows[is_rle]]
    return out


def check_pair_sizes(
    det_src: SegmentationSource,
    det_masks: Any,
    gt_src: SegmentationSource,
    gt_masks: Any,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    *,
    sizes_agree: bool | None = None,
) -> None:
    """Refuse the (detection, ground truth) mask pairs of different sizes.

    Parameters
    ----------
    det_src, gt_src : SegmentationSource
    det_masks, gt_masks : CheckedMasks
    det_rows, gt_rows : int64 (n_pair,)
        The pairs whose IoU is about to be computed.
    sizes_agree : bool, optional
        :func:`rle_sizes_are_image_sizes` of both collections (true when it is true of each),
        when the caller already knows it: a prepared value keeps it
        (``CollectionMasks.rle_sizes_are_image_sizes``), so that a run checking many chunks of
        pairs reads the collections once. Not given: computed now, an O(n_records) pass.

    Raises
    ------
    InputError
        Naming the first five pairs (both records, both sizes) and their count.

    Notes
    -----
    pycocotools never compares a mask with its image: it rasterises a polygon at the image's
    ``[height, width]``, keeps an RLE at its own ``size``, and ``maskUtils.iou`` gives a pair
    of masks of different sizes IoU -1: the pair can never match, and nothing is said. So a
    10 x 10 RLE on a 640 x 640 image is fine when its partners are 10 x 10 too; only the pairs
    pycocotools cannot score are refused (polygon pairs always share their image's size).
    """
    det_rows = np.asarray(det_rows, dtype=np.int64)
    gt_rows = np.asarray(gt_rows, dtype=np.int64)
    if sizes_agree is None:
        sizes_agree = rle_sizes_are_image_sizes(det_src, det_masks) and rle_sizes_are_image_sizes(
            gt_src, gt_masks
        )
    if (
        sizes_agree
        and np.array_equal(det_src.image_size, gt_src.image_size)
        and (det_src.image[det_rows] == gt_src.image[gt_rows]).all()
    ):
        return  # every mask has its image's size and each pair lies in one image (O(n), no sizes gathered)
    has_rle = np.flatnonzero((det_masks.kind[det_rows] == RLE) | (gt_masks.kind[gt_rows] == RLE))
    if not len(has_rle):
        return
    # each pair's two sizes gathered directly (no np.unique: its sort costs more than the
    # gathers it saves); NaN (a polygon's image without a size) differs from everything
    d_size = mask_sizes(det_src, det_masks, det_rows[has_rle])
    g_size = mask_sizes(gt_src, gt_masks, gt_rows[has_rle])
    wrong = has_rle[(d_size != g_size).any(axis=1)]
    if len(wrong):
        _refuse_pairs(det_src, det_masks, gt_src, gt_masks, det_rows[wrong], gt_rows[wrong], len(wrong))


def check_group_sizes(
    det_src: SegmentationSource,
    det_masks: Any,
    gt_src: SegmentationSource,
    gt_masks: Any,
    det_group: np.ndarray,
    gt_group: np.ndarray,
    *,
    sizes_agree: bool | None = None,
) -> None:
    """:func:`check_pair_sizes` for every (detection, ground truth) pair of the same group.

    Parameters
    ----------
    det_src, gt_src : SegmentationSource
    det_masks, gt_masks : CheckedMasks
    det_group : int64 (n_det,)
        The group of each detection (image and class), -1 for a detection never compared
        (beyond ``max_dets`` in its group: pycocotools drops it before any IoU).
    gt_group : int64 (n_gt,)
        The group of each ground truth.
    sizes_agree : bool, optional
        As in :func:`check_pair_sizes`: computed now when not given.

    Raises
    ------
    InputError
        As :func:`check_pair_sizes`, counting every mismatched pair.

    Notes
    -----
    All masks of a group lie in one image, so all its polygons share a size: a group holds a
    pair of different sizes exactly when it has both detections and ground truth and more than
    one size among them (one of the two differing masks is then an RLE).
    """
    det_group = np.asarray(det_group, dtype=np.int64)
    gt_group = np.asarray(gt_group, dtype=np.int64)
    if not ((det_masks.kind == RLE).any() or (gt_masks.kind == RLE).any()):
        return
    if sizes_agree is None:
        sizes_agree = rle_sizes_are_image_sizes(det_src, det_masks) and rle_sizes_are_image_sizes(
            gt_src, gt_masks
        )
    if sizes_agree:
        return  # every mask has its image's size: one size per group (the usual case, O(n))
    both = np.intersect1d(det_group[det_group >= 0], gt_group)
    d_rows = np.flatnonzero(np.isin(det_group, both))
    g_rows = np.flatnonzero(np.isin(gt_group, both))
    if not len(d_rows):
        return
    # a polygon of an image without a size: -1 (refused before by the rasterisation checks)
    sizes = np.nan_to_num(
        np.r_[mask_sizes(det_src, det_masks, d_rows), mask_sizes(gt_src, gt_masks, g_rows)], nan=-1.0
    )
    key = np.r_[det_group[d_rows], gt_group[g_rows]]
    order = np.argsort(key, kind="stable")
    starts = np.flatnonzero(np.r_[True, key[order][1:] != key[order][:-1]])
    low = np.minimum.reduceat(sizes[order], starts, axis=0)
    high = np.maximum.reduceat(sizes[order], starts, axis=0)
    bad_groups = key[order][starts][(low != high).any(axis=1)]
    if not len(bad_groups):
        return
    pairs_d: list[int] = []
    pairs_g: list[int] = []
    total = 0
    d_size, g_size = sizes[: len(d_rows)], sizes[len(d_rows) :]
    for group in bad_groups.tolist():
        d_in, g_in = np.flatnonzero(det_group[d_rows] == group), np.flatnonzero(gt_group[g_rows] == group)
        differs = (d_size[d_in][:, None, :] != g_size[g_in][None, :, :]).any(axis=2)
        total += int(differs.sum())
        for i, j in zip(*np.nonzero(differs), strict=True):
            if len(pairs_d) < N_SHOWN:
                pairs_d.append(int(d_rows[d_in[i]]))
                pairs_g.append(int(g_rows[g_in[j]]))
    _refuse_pairs(det_src, det_masks, gt_src, gt_masks, np.array(pairs_d), np.array(pairs_g), total)


def rle_sizes_are_image_sizes(src: SegmentationSource, masks: Any) -> bool:
    """Whether every RLE record's ``size`` is its image's ``[height, width]`` (known, not NaN).

    Then every mask of an image, polygon or RLE, has that image's size, and no two masks of one
    image can differ. An O(n_records) pass: the prepared masks compute it once per collection
    (``CollectionMasks.rle_sizes_are_image_sizes``) and pass it on as ``sizes_agree``.

    Parameters
    ----------
    src : SegmentationSource
    masks : CheckedMasks
        Parsed from ``src``.

    Returns
    -------
    bool
    """
    is_rle = masks.kind == RLE
    if is_rle.all():  # the columns as they are (no rows gathered)
        image, rle_size = src.image, masks.rle_size
    else:
        rows = np.flatnonzero(is_rle)
        if not len(rows):
            return True
        image, rle_size = src.image[rows], masks.rle_size[rows]
    return bool((np.asarray(src.image_size, dtype=np.float64)[image] == rle_size).all())


def _refuse_pairs(
    det_src: SegmentationSource,
    det_masks: Any,
    gt_src: SegmentationSource,
    gt_masks: Any,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    total: int,
) -> None:
    """Raise the InputError of mask pairs of different sizes (the first five shown)."""

    def size_of(src: SegmentationSource, masks: Any, row: int) -> str:
        size = mask_sizes(src, masks, np.array([row]))[0]
        shown = [int(v) if np.isfinite(v) else None for v in size]
        return f"{shown} (its RLE `size`)" if masks.kind[row] == RLE else f"{shown} (its image's, a polygon)"

    def pair(k: int) -> tuple[str, str]:
        d, g = int(det_rows[k]), int(gt_rows[k])
        name = (
            f"{det_src.where}: {det_src.kind} #{int(det_src.number[d])} ({det_src.label(d)}) and "
            f"{gt_src.where}: {gt_src.kind} #{int(gt_src.number[g])} ({gt_src.label(g)})"
        )
        return name, f"{size_of(det_src, det_masks, d)} and {size_of(gt_src, gt_masks, g)}"

    problem = "the two masks of a pair have different sizes"
    expected = (
        "one [height, width] for both (an RLE has its `size`; a polygon is rasterised at its "
        "image's height and width); pycocotools gives such a pair IoU -1, so it never matches, "
        "without a word"
    )
    if total == 1:
        name, found = pair(0)
        raise InputError(f"{name}: {problem}; expected {expected}, found {found}")
    shown = "; ".join(
        f"{name}: {found}" for name, found in (pair(k) for k in range(min(N_SHOWN, len(det_rows))))
    )
    more = f"; and {total - N_SHOWN} more" if total > N_SHOWN else ""
    raise InputError(f"{total} mask pairs: {problem}; expected {expected}; found {shown}{more}")


_MAX_GROUPS = 7  # 35 bits per run: more than any mask of MAX_PIXELS needs


def _compressed_runs_batched(strings: list, batch_chars: int = 1 << 23) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_compressed_runs` over batches of about ``batch_chars`` characters (bounded memory)."""
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    batch = np.cumsum(lengths) // batch_chars
    cuts = np.flatnonzero(np.r_[True, batch[1:] != batch[:-1], True])
    parts = [_compressed_runs(strings[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _compressed_run_sums(strings: list) -> np.ndarray:
    """The sum of the decoded run lengths of each compressed counts string (int64).

    -1 when a run has more than 7 groups; all strings are decoded at once in numpy.

    The strings passed :func:`_check_compressed` (valid characters, no run cut by the end).
    Decoding follows ``maskApi.c`` ``rleFrString`` exactly: 5-bit groups low first, bit 0x20
    "more", bit 0x10 of the last group the sign; from the fourth run on (``m > 2``) a value is
    a delta to the run two before; each run is stored as a ``uint`` (modulo 2**32). pycocotools
    trusts the sum to be ``h * w`` and, when it is not, reads or writes past the mask (or
    never ends), so this is checked before any pycocotools call.

    Examples
    --------
    >>> from pycocotools import mask as mask_utils
    >>> rle = mask_utils.encode(np.asfortranarray(np.eye(5, dtype=np.uint8)))
    >>> _compressed_run_sums([rle["counts"], b"", b"52"]).tolist()
    [25, 0, 7]
    """
    return _compressed_runs(strings)[0]


def _compressed_runs(strings: list) -> tuple[np.ndarray, np.ndarray]:
    """(run sums, whether a run after the first is 0) of compressed counts strings.

    See :func:`_compressed_run_sums`, which gives the first; the second marks the strings whose
    box the compiled kernel leaves to pycocotools (its encoder never writes such a run).
    """
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, n)
    if not lengths.sum():
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    c = np.frombuffer(b"".join(strings), dtype=np.uint8).astype(np.int64) - 48
    owner_of_char = np.repeat(np.arange(n), lengths)
    ends = np.flatnonzero((c & 0x20) == 0)
    starts = np.concatenate([[0], ends[:-1] + 1])
    n_groups = ends - starts + 1
    too_long = np.zeros(n, dtype=bool)
    too_long[owner_of_char[starts[n_groups > _MAX_GROUPS]]] = True
    k = np.arange(len(c)) - np.repeat(starts, n_groups)
    k = np.minimum(k, _MAX_GROUPS)  # runs longer than that are refused below
    x = np.add.reduceat((c & 0x1F) << (5 * k), starts)
    negative = (c[ends] & 0x10) != 0
    x[negative] -= np.left_shift(1, 5 * np.minimum(n_groups[negative], _MAX_GROUPS + 1))
    owner = owner_of_char[starts]
    first_run = np.searchsorted(owner, np.arange(n))
    m = np.arange(len(x)) - first_run[owner]
    # cnts[m] = x[m] + cnts[m - 2] for m > 2: two running sums per string (odd runs from m = 1,
    # even runs from m = 2), m = 0 on its own; modulo 2**32 as the uint it is stored in. Runs are
    # in string order, so each chain is a contiguous stretch of its parity's selection.
    cnts = x.copy()
    for parity, first in ((1, 1), (0, 2)):
        sel = np.flatnonzero((m % 2 == parity) & (m >= first))
        if not len(sel):
            continue
        values = x[sel]
        total = np.cumsum(values)
        new_chain = np.r_[True, owner[sel][1:] != owner[sel][:-1]]
        chain_start = np.flatnonzero(new_chain)
        base = total[chain_start] - values[chain_start]
        cnts[sel] = total - np.repeat(base, np.diff(np.r_[chain_start, len(sel)]))
    cnts %= 1 << 32
    sums = np.zeros(n, dtype=np.int64)
    has_runs = np.flatnonzero(np.bincount(owner, minlength=n) > 0)
    sums[has_runs] = np.add.reduceat(cnts, first_run[has_runs])
    sums[too_long] = -1
    zero_run = np.zeros(n, dtype=bool)
    zero_run[owner[(cnts == 0) & (m > 0)]] = True
    return sums, zero_run


def _check_compressed(strings: list) -> np.ndarray:
    """Check pycocotools' compressed counts strings without decoding them.

    Returns a problem code per string: 0 fine, 1 a character outside ``'0'..'o'``, 2 the
    string ends inside a run (or is empty).

    Notes
    -----
    The format (``maskApi.c``, ``rleToString`` / ``rleFrString``): each run length is stored in
    5-bit groups, low bits first, as the characters ``48 + group``; bit 0x20 says "more groups
    follow". pycocotools' decoder reads past the end of a string whose last character has that
    bit, so such strings must not reach it. That the runs add up to ``height * width`` is
    checked next, by :func:`_compressed_run_sums`.

    Examples
    --------
    >>> from pycocotools import mask as mask_utils
    >>> rle = mask_utils.encode(np.asfortranarray(np.eye(4, dtype=np.uint8)))
    >>> _check_compressed([rle["counts"], b"0!", b"0P", b""]).tolist()
    [0, 1, 2, 2]
    """
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, n)
    problem = np.where(lengths == 0, 2, 0)
    nonempty = np.flatnonzero(lengths > 0)
    if not len(nonempty):
        return problem
    c = np.frombuffer(b"".join(strings), dtype=np.uint8) - np.uint8(48)  # below '0' wraps to > 63
    string_end = np.cumsum(lengths)
    bad_char = np.add.reduceat(c > 63, string_end[nonempty] - lengths[nonempty]) > 0
    ends_inside_run = (c[string_end[nonempty] - 1] & 0x20) != 0
    problem[nonempty] = np.select([bad_char, ends_inside_run], [1, 2], default=0)
    return problem
