"""The parsers' capacity columns (``capacity_buffer``): np.empty without 2 MiB pages, numpy's switch kept."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.io.coco._common import capacity_buffer

switch = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)


@pytest.mark.skipif(switch is None, reason="this numpy has no madvise switch")
@pytest.mark.parametrize("setting", [True, False])
def test_numpy_setting_is_restored(setting):
    before = switch(setting)
    try:
        column = capacity_buffer(1 << 20, np.float64)  # 8 MiB: numpy would ask for 2 MiB pages
        assert switch(setting) is setting  # the value capacity_buffer left in place
    finally:
        switch(before)
    assert column.shape == (1 << 20,)
    assert column.dtype == np.float64
    assert column.flags.owndata
    column.resize(10, refcheck=False)  # the parsers shrink their columns in place
    assert column.shape == (10,)


def test_small_and_integer_columns():
    column = capacity_buffer(3, np.int64)
    assert column.shape == (3,)
    assert column.dtype == np.int64


def _empties(monkeypatch) -> list:
    """(size, numpy's 2 MiB-page switch) of every ``np.empty`` call from now on."""
    calls: list = []
    real = np.empty

    def recording(shape, dtype=float, *args, **kwargs):
        before = switch(True)
        switch(before)
        calls.append((int(np.prod(shape)), before))
        return real(shape, dtype, *args, **kwargs)

    monkeypatch.setattr(np, "empty", recording)
    return calls


@pytest.mark.skipif(switch is None, reason="this numpy has no madvise switch")
def test_the_segm_readers_columns_sized_by_the_file_ask_for_no_2mib_pages(monkeypatch):
    """The polygon and RLE results readers (whole file and by parts) allocate as the box reader does.

    Before, they took ``np.empty``: two parsing threads write from offsets apart, and each 2 MiB
    page they touched was zeroed whole (RLE results at 20k images: 1.0 s of system time on two
    threads against 0.33 s on one).
    """
    from deteval.io.coco import fast, fast_rle

    if fast._colparse is None:
        pytest.skip("the compiled readers are not built")
    mask = pytest.importorskip("pycocotools.mask")
    rle = mask.encode(np.asfortranarray(np.eye(6, dtype=np.uint8)))
    counts = rle["counts"].decode()
    record = '{"image_id": 1, "category_id": 1, "bbox": [0, 0, 6, 6], "score": 0.5, '
    rle_raw = (
        "[" + ", ".join([record + f'"segmentation": {{"size": [6, 6], "counts": "{counts}"}}}}'] * 5) + "]"
    ).encode()
    poly_raw = ("[" + ", ".join([record + '"segmentation": [[0, 0, 5, 0, 5, 5]]}'] * 5) + "]").encode()
    switch(True)  # numpy's default: 2 MiB pages asked for large arrays
    calls = _empties(monkeypatch)
    assert fast._compiled_rle_columns(rle_raw, threads=2) is not None
    assert fast._compiled_segm_columns(poly_raw, "dt.json", threads=2) is not None
    parts = fast_rle.RleParts(len(rle_raw), fast._colparse, threads=2)
    assert parts.feed(rle_raw, first=True, last=True)
    capacity = (
        min(len(rle_raw) // fast._MIN_RLE_RECORD_BYTES, len(poly_raw) // fast._MIN_SEGM_RECORD_BYTES) + 1
    )
    sized_by_the_file = [(n, on) for n, on in calls if n >= capacity]
    assert len(sized_by_the_file) >= 26  # 10 + 9 + 7 columns, and the parts' scratch
    assert [on for _, on in sized_by_the_file] == [False] * len(sized_by_the_file)
