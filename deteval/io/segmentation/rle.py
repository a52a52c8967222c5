"""RLE segmentations: keys, sizes and counts (uncompressed lists and pycocotools' strings) checked.

An RLE is ``{"size": [h, w], "counts": ...}``; its runs must add up to ``h * w`` and its size be
its image's, or pycocotools reads or writes past the mask. Compressed counts strings are checked
and their runs summed in numpy, without pycocotools. Used by
:func:`~deteval.io.segmentation.parsing.parse_masks`.
"""

from __future__ import annotations

import itertools

import numpy as np

from deteval.io.segmentation.sources import MAX_PIXELS, SegmentationSource, _as_float, _show, fail_records


def _parse_rles(src: SegmentationSource, rle_rows: np.ndarray) -> tuple:
    """Validate RLE records; return per record the canonical dict (None for polygons)."""
    values = src.values
    out: list = [None] * len(values)
    if not len(rle_rows):
        return tuple(out)
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
        encoded = _check_string_counts(src, string_rows, sizes, total_of)
        for r, e in zip(string_rows, encoded, strict=True):
            out[r] = {"size": [int(sizes[r, 0]), int(sizes[r, 1])], "counts": e}
    _check_rle_sizes(src, rle_rows, sizes)
    return tuple(out)


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
) -> list[bytes]:
    """Compressed ``counts``: pycocotools' encoding, decoding to ``height * width``; as bytes."""
    values = src.values
    rows = np.array(string_rows)
    encoded = [
        c.encode("utf-8") if isinstance(c, str) else bytes(c)
        for c in (values[r]["counts"] for r in string_rows)
    ]
    problem = _check_compressed(encoded)
    problem[(problem == 2) & (total_of[rows] == 0)] = 0  # "" is a fine 0 x 0 mask
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
    sums = _compressed_run_sums_batched(encoded)
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
    return encoded


def _check_rle_sizes(src: SegmentationSource, rle_rows: np.ndarray, sizes: np.ndarray) -> None:
    """An RLE must have its image's size (pycocotools silently gives IoU -1 otherwise)."""
    image_size = src.image_size[src.image[rle_rows]]
    known = np.isfinite(image_size).all(axis=1)
    wrong = rle_rows[known & (image_size != sizes[rle_rows]).any(axis=1)]
    if len(wrong):
        fail_records(
            src,
            wrong,
            "RLE `size` differs from its image's [height, width]",
            "the image's size (pycocotools would give every pair IoU -1)",
            lambda r: f"{sizes[r].tolist()} for an image of {[int(v) for v in src.image_size[src.image[r]]]}",
        )


_MAX_GROUPS = 7  # 35 bits per run: more than any mask of MAX_PIXELS needs


def _compressed_run_sums_batched(strings: list, batch_chars: int = 1 << 23) -> np.ndarray:
    """:func:`_compressed_run_sums` over batches of about ``batch_chars`` characters (bounded memory)."""
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    batch = np.cumsum(lengths) // batch_chars
    cuts = np.flatnonzero(np.r_[True, batch[1:] != batch[:-1], True])
    return np.concatenate(
        [_compressed_run_sums(strings[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
        or [np.zeros(0, dtype=np.int64)]
    )


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
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, n)
    if not lengths.sum():
        return np.zeros(n, dtype=np.int64)
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
    return sums


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
