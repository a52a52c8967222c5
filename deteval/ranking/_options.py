"""The ranking metrics' option values.

Constants only, so that the command line's parser reads them for its choices without loading
the metrics.
"""

#: Values of ``average`` (scikit-learn's meanings).
AVERAGES = (None, "micro", "macro", "weighted", "samples")
#: Values of ``method`` in :func:`~deteval.ranking.average_precision`.
AP_METHODS = ("step", "all_point", "11_point", "101_point")
#: Values of ``grid`` for ``method="11_point"``.
ELEVEN_POINT_GRIDS = ("matlab_colon", "numpy_arange", "decimal")
