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
