"""The recall grids the point-sampled AP methods read (101 points, 11 points)."""

from __future__ import annotations

import numpy as np

from deteval.protocol import COCO_RECALL_THRESHOLDS, Protocol


def recall_grid(ap_method: str, eleven_point_grid: str = "matlab_colon") -> np.ndarray:
    """The recall points of a point-sampled ``ap_method`` (empty for the others).

    One definition for the detection protocols and for :mod:`deteval.ranking`.

    Examples
    --------
    >>> float(recall_grid("11_point", "numpy_arange")[3])
    0.30000000000000004
    >>> g = recall_grid("11_point", "matlab_colon")  # MATLAB's 0:0.1:1
    >>> float(g[3]), float(g[6]), float(g[7])
    (0.30000000000000004, 0.6, 0.7)
    >>> len(recall_grid("101_point")), len(recall_grid("all_point"))
    (101, 0)
    """
    if ap_method == "101_point":
        return COCO_RECALL_THRESHOLDS
    if ap_method == "11_point":
        if eleven_point_grid == "numpy_arange":
            # The Python VOC port (py-faster-rcnn): np.arange(0., 1.1, 0.1).
            return np.arange(0.0, 1.1, 0.1)
        if eleven_point_grid == "matlab_colon":
            # The VOC devkit's 0:0.1:1. MATLAB's colon builds the first half as a + k*d and the
            # second half as b - (n-k)*d; the middle element is (a + b) / 2.
            grid = np.empty(11)
            grid[:6] = np.arange(6) * 0.1
            grid[6:] = 1.0 - np.arange(4, -1, -1) * 0.1
            grid[5] = 0.5
            return grid
        return np.arange(11) / 10.0
    return np.zeros(0)


def recall_thresholds(protocol: Protocol) -> np.ndarray:
    """The recall points of the protocol's ``ap_method`` (the R axis; empty for ``all_point``).

    Examples
    --------
    >>> from deteval.protocol import get_protocol
    >>> float(recall_thresholds(get_protocol("voc2007-pyfrcnn"))[3])
    0.30000000000000004
    """
    return recall_grid(protocol.ap_method, protocol.eleven_point_grid)
