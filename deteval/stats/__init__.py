"""Bootstrap intervals and a paired comparison of detectors, resampling images.

Is detector B really better than A on this test set, or is the difference what another draw of
images from the same distribution would undo? This module answers with the bootstrap over
images: draw ``n_images`` images with replacement, re-score, repeat; the spread of the scores is
the sampling uncertainty of the number.

Semantics of a resample
-----------------------
A resample is a multiset of images, given as weights ``w`` (n_images,): image ``i`` counted
``w[i]`` times. Its score is *defined* as the score of an explicit dataset in which each image
is repeated ``w[i]`` times, the copies adjacent in image order (copy 2 of image ``i`` right
after copy 1, before image ``i + 1``), and each result line repeated in place (the copies of a
detection adjacent in the results file). Ties in the global ranking then keep a well-defined
order: under ``score_order: image_major`` (pycocotools) tied detections go by (image, copy,
rank in image), so tied detections of one image interleave across its copies; under
``score_order: file`` (the devkits) they go by file order, so the copies of one detection are
adjacent. Matching is per image, so a resample never re-matches: it re-accumulates the
:class:`~deteval.evaluate.MatchTable` with weights (a detection counts ``w`` of its image, a
ground-truth object too). With all weights 1 the numbers are those of
:func:`~deteval.evaluate.score`, bit for bit.

Every resample's weights are drawn up front from ``np.random.default_rng(seed)``
(``multinomial(n_images, uniform)`` per resample), the same for every detector and protocol of
a run (paired), so results depend on the seed only: not on chunking, nor on ``workers``.

The package's modules, lowest first (each imports only those above it):

- :mod:`~deteval.stats.settings`: :class:`BootstrapSettings`, their validation, :func:`bootstrap_weights`;
- :mod:`~deteval.stats.plan`: what the re-accumulation needs of one detector, computed once;
- :mod:`~deteval.stats.weighted`: the weighted re-accumulation of a chunk of resamples;
- :mod:`~deteval.stats.resample`: :func:`resample_metrics` (chunks, worker processes);
- :mod:`~deteval.stats.intervals`: :class:`Interval`, :func:`interval` (basic, BCa, percentile),
  :func:`bootstrap_bias`, :class:`BootstrapBiasWarning`;
- :mod:`~deteval.stats.detector_bootstrap`: :func:`bootstrap` and its JSON pieces;
- :mod:`~deteval.stats.comparison`: :func:`compare_detectors`, :func:`paired_difference`,
  :func:`per_class_differences`, :func:`verdict`.

Every name is re-exported here: ``from deteval.stats import ...`` is the import path.
"""

from __future__ import annotations

from deteval.stats.comparison import (
    Comparison,
    ComparisonResult,
    compare_detectors,
    comparison_dicts,
    paired_difference,
    per_class_differences,
    verdict,
)
from deteval.stats.detector_bootstrap import (
    BootstrapResult,
    DetectorBootstrap,
    bootstrap,
    bootstrap_rows,
    bootstrap_settings_dict,
    metrics_bias_dict,
    metrics_ci_dict,
    per_class_bias_list,
    per_class_ci_list,
    result_ci_dict,
)
from deteval.stats.intervals import (
    BootstrapBiasWarning,
    Interval,
    acceleration,
    basic_interval,
    bca_interval,
    bootstrap_bias,
    interval,
    percentile_interval,
)
from deteval.stats.resample import ResampledMetrics, resample_metrics
from deteval.stats.settings import BootstrapSettings, bootstrap_weights, jackknife_weights
from deteval.stats.weighted import _thresholds_table  # noqa: F401  (tests/unit/test_stats.py)

__all__ = [
    "BootstrapSettings",
    "Interval",
    "BootstrapBiasWarning",
    "ResampledMetrics",
    "DetectorBootstrap",
    "BootstrapResult",
    "Comparison",
    "ComparisonResult",
    "bootstrap_weights",
    "jackknife_weights",
    "bootstrap_rows",
    "resample_metrics",
    "bootstrap",
    "compare_detectors",
    "paired_difference",
    "per_class_differences",
    "percentile_interval",
    "basic_interval",
    "bca_interval",
    "acceleration",
    "interval",
    "bootstrap_bias",
    "metrics_bias_dict",
    "per_class_bias_list",
    "metrics_ci_dict",
    "per_class_ci_list",
    "result_ci_dict",
    "comparison_dicts",
    "bootstrap_settings_dict",
    "verdict",
]
