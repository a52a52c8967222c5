"""Scoring for the front door: evaluate, evaluate loaded inputs, compare and explain protocols.

Each function takes what :func:`~deteval.api.load_inputs` takes (or loaded values) and protocol
names, YAML paths or values, scores them with the value-level functions below the front door
(:mod:`deteval.evaluate`, :mod:`deteval.explain`, :mod:`deteval.mask_modes`) and emits the
warnings the results carry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from deteval.api._emit import _emit, _emit_result_warnings
from deteval.api.inputs import Inputs, _as_dt, _as_gt
from deteval.api.openimages import challenge_inputs, load_challenge, side_files
from deteval.data import Detections, GroundTruth
from deteval.errors import ConfigError, InputWarning
from deteval.evaluate import EvalResult, check_protocol, inputs_summary, score
from deteval.io import is_openimages_csv
from deteval.pooling import pooled_for
from deteval.protocol import Protocol, resolve_protocol
from deteval.sharding import match_sharded

if TYPE_CHECKING:  # imported by the functions that use them: `evaluate` needs none of them
    from deteval.explain import Comparison, MatchCache
    from deteval.mask_modes import MaskModeComparison
    from deteval.report.explanation import Explanation


def evaluate(
    gt: Any,
    dt: Any,
    protocol: str | Protocol | None = None,
    *,
    workers: int | str = 1,
    category_map: Any = None,
    per_image: bool = False,
    matches: bool = False,
    image_labels: Any = None,
    hierarchy: Any = None,
) -> EvalResult:
    """Score detections against ground truth under a protocol.

    Parameters
    ----------
    gt : GroundTruth, str, os.PathLike or dict
        Ground truth, or a COCO instances JSON path / dict (or a VOC root, a YOLO dataset).
    dt : Detections, str, os.PathLike or list
        Detections, or a COCO results JSON path / list (or VOC result files, YOLO predictions).
    protocol : str or Protocol, optional
        A preset name (``"coco"``, ``"coco-pycocotools"``, ``"voc2007"``, ...), a YAML file, or
        a :class:`Protocol`. Default: :func:`default_protocol` (``coco``; a VOC root's year).
    workers : int or "auto"
        CPUs to use: the compiled kernels' threads (parsing a COCO results or instances file,
        matching, ranking, accumulation), or image shards in processes where matching runs in
        Python (exact polygon masks, Boundary IoU; :func:`deteval.sharding.match_sharded`);
        ``"auto"``: by the input's size, ``1``: one. The numbers are identical for every value.
    category_map : {"index0", "index1"}, mapping or path, optional
        How the detections' category ids name ground-truth categories (when ``dt`` is loaded
        here; see docs/inputs.md).
    per_image, matches : bool
        Also compute ``result.per_image`` (:func:`deteval.per_image.per_image`) and
        ``result.matches`` (:func:`deteval.per_image.explained_matches`) with their defaults
        (IoU 0.5 or the protocol's first threshold, no confidence); None when not asked.
    image_labels, hierarchy : path or value, optional
        Open Images' verified image-level labels and class hierarchy, for protocols that read
        them (``openimages-challenge``; :func:`deteval.api.openimages.challenge_inputs`). With
        ``gt`` an Open Images boxes ``.csv``, ``dt`` is a submission ``.csv``.

    Returns
    -------
    EvalResult

    Warns
    -----
    InputWarning
        Each of ``result.warnings`` (the inputs' warnings, then the protocol's).
    UndefinedMetricWarning
        Each of ``result.notes`` (classes without ground truth).

    Raises
    ------
    InputError
        Invalid input (the message names file, record and field).
    ConfigError
        Invalid protocol.

    Examples
    --------
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]
    >>> evaluate(gt, dt, "voc2010").metrics
    {'mAP': 1.0}
    """
    if protocol is None:
        from deteval.api.protocols import default_protocol  # only when no protocol is given

        protocol, note = default_protocol(gt)
        if note:
            _emit([note], InputWarning, stacklevel=2)
    protocol = resolve_protocol(protocol)
    check_protocol(protocol)
    labels, tree = side_files(image_labels, hierarchy, [protocol])
    if is_openimages_csv(gt):
        gt, dt = load_challenge(gt, dt, image_labels=labels, hierarchy=tree)
    gt = _as_gt(gt, workers=workers)
    dt = _as_dt(dt, gt, workers=workers, **({} if category_map is None else {"category_map": category_map}))
    gt, dt = challenge_inputs(gt, dt, protocol, image_labels=labels, hierarchy=tree)
    # class_agnostic: pool once here, so masks are prepared once, from the pooled values.
    gt, dt = pooled_for(gt, dt, protocol)
    table = match_sharded(gt, dt, protocol, workers=workers)
    inputs = inputs_summary(gt, dt)
    result = score(table, gt, protocol, warnings=gt.warnings + dt.warnings, inputs=inputs, workers=workers)
    if per_image or matches:
        from deteval.per_image import explained_matches
        from deteval.per_image import per_image as _per_image

        result = replace(
            result,
            per_image=_per_image(result, gt, dt) if per_image else None,
            matches=explained_matches(result, gt, dt) if matches else None,
        )
    _emit_result_warnings(result.warnings, result.notes, stacklevel=2)
    return result


def evaluate_inputs(
    inputs: Inputs,
    protocols: Sequence[str | Protocol],
    *,
    workers: int | str = 1,
    progress: Callable[[str], None] | None = None,
    advance: Callable[[int, int], None] | None = None,
) -> tuple[EvalResult, ...]:
    """Score loaded inputs under each protocol (``deteval evaluate``).

    Unlike :func:`evaluate`, the results carry only each protocol's own warnings: the inputs'
    were given (and warned) by :func:`load_inputs`.

    Parameters
    ----------
    inputs : Inputs
    protocols : sequence of str or Protocol
    workers : int or "auto"
        As :func:`evaluate`.
    progress : callable, optional
        Called with a label as each stage starts: ``"matching NAME"``, then ``"scoring NAME"``,
        per protocol (the CLI's progress bar).
    advance : callable, optional
        Called as ``advance(done, total)`` inside each matching stage, as whole images are
        matched (:func:`deteval.evaluate.match`'s ``progress``).

    Returns
    -------
    tuple of EvalResult

    Warns
    -----
    InputWarning, UndefinedMetricWarning
        Every result's ``warnings`` (all protocols, in order), then every result's ``notes``.
    """
    if inputs.dt is None:
        raise ConfigError("evaluate_inputs: the inputs have no detections; expected load_inputs(gt, dt)")
    results = []
    for protocol in (resolve_protocol(p) for p in protocols):
        check_protocol(protocol)  # match() checks what it reads; this, before any matching
        if progress is not None:
            progress(f"matching {protocol.name}")
        gt, dt = challenge_inputs(
            inputs.gt, inputs.dt, protocol, image_labels=inputs.image_labels, hierarchy=inputs.hierarchy
        )
        gt, dt = pooled_for(gt, cast(Detections, dt), protocol)  # class_agnostic: pooled once
        table = match_sharded(gt, dt, protocol, workers=workers, progress=advance)
        if progress is not None:
            progress(f"scoring {protocol.name}")
        results.append(score(table, gt, protocol, warnings=(), inputs=inputs.summary(), workers=workers))
    _emit_result_warnings(
        [w for r in results for w in r.warnings], [n for r in results for n in r.notes], stacklevel=2
    )
    return tuple(results)


def compare(
    gt: Any,
    dt: Any,
    protocols: Sequence[str | Protocol],
    *,
    workers: int | str = 1,
    cache: MatchCache | None = None,
    inputs: dict | None = None,
) -> Comparison:
    """Score one dataset under several protocols, sharing matchings where the settings agree.

    Parameters
    ----------
    gt, dt
        As :func:`evaluate` takes them (values, paths or parsed JSON); ignored when ``cache``
        is given (its inputs are used).
    protocols : sequence of str or Protocol
        Preset names, YAML paths or protocols.
    workers : int or "auto"
        As :func:`evaluate` (when no ``cache`` is given).
    cache : MatchCache, optional
        Reuse (and fill) matchings of the same ``gt``/``dt``.
    inputs : dict, optional
        The JSON ``inputs`` entry of the results (default: from the loaded values).

    Returns
    -------
    Comparison

    Warns
    -----
    InputWarning
        The inputs' warnings, then each result's ``warnings`` (which do not repeat the inputs').
    UndefinedMetricWarning
        Each result's ``notes``.

    Raises
    ------
    ConfigError
        A protocol that cannot be resolved or whose summary cannot be computed.

    Examples
    --------
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
    ...                        "area": 100, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]
    >>> c = compare(gt, dt, ["voc2007", "voc2010", "coco"])
    >>> [r.protocol.name for r in c.results], c.n_matchings
    (['voc2007', 'voc2010', 'coco'], 2)
    """
    from deteval.explain import MatchCache
    from deteval.explain import compare as _compare_values

    resolved = [resolve_protocol(p) for p in protocols]
    if not resolved:
        raise ConfigError("compare: expected at least one protocol, found none")
    for p in resolved:
        check_protocol(p)
    if cache is None:
        ground_truth = _as_gt(gt)
        cache = MatchCache(ground_truth, _as_dt(dt, ground_truth, workers=workers), workers=workers)
    comparison = _compare_values(cache.gt, cache.dt, resolved, cache=cache, inputs=inputs)
    results = comparison.results
    _emit_result_warnings(
        list(cache.gt.warnings + cache.dt.warnings) + [w for r in results for w in r.warnings],
        [n for r in results for n in r.notes],
        stacklevel=2,
    )
    return comparison


def explain(
    gt: Any, dt: Any, a: str | Protocol, b: str | Protocol, *, cache: MatchCache | None = None
) -> Explanation:
    """Attribute the difference between two protocols to their differing fields, step by step.

    :func:`deteval.explain.explain` on loaded values (see there for the walk), in words
    (:func:`deteval.report.explanation.describe`).

    Parameters
    ----------
    gt, dt
        As :func:`evaluate` takes them; ignored when ``cache`` is given.
    a, b : str or Protocol
        Preset names, YAML paths or protocols.
    cache : MatchCache, optional

    Returns
    -------
    Explanation

    Examples
    --------
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "dog"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100],
    ...                        "area": 1e4, "iscrowd": 0},
    ...                       {"id": 2, "image_id": 1, "category_id": 1, "bbox": [40, 0, 100, 100],
    ...                        "area": 1e4, "iscrowd": 0}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100], "score": 0.9},
    ...       {"image_id": 1, "category_id": 1, "bbox": [15, 0, 100, 100], "score": 0.8}]
    >>> from deteval.protocol import get_protocol
    >>> voc_coco_matching = get_protocol("voc2010").replace(name="voc2010-cocomatch", matching="coco")
    >>> explain(gt, dt, "voc2010", voc_coco_matching).summary_line()
    'voc2010 -> voc2010-cocomatch: matching rule +0.5000 (total +0.5000)'
    >>> print(explain(gt, dt, "voc2007", "voc2010").summary_line())
    voc2007 -> voc2010: interpolation -0.0455 (total -0.0455)
    """
    from deteval.explain import MatchCache
    from deteval.explain import explain as _explain_values
    from deteval.report.explanation import describe

    a, b = resolve_protocol(a), resolve_protocol(b)
    if cache is None:
        ground_truth = _as_gt(gt)
        cache = MatchCache(ground_truth, _as_dt(dt, ground_truth))
    return describe(_explain_values(cache.gt, cache.dt, a, b, cache=cache))


def compare_mask_modes(
    gt: Any, dt: Any, protocol: Any = "coco", *, workers: int | str = 1
) -> MaskModeComparison:
    """Evaluate masks with exact and with raster IoU and report what differs.

    :func:`deteval.mask_modes.compare_mask_modes` on loaded values (see there).

    Parameters
    ----------
    gt : GroundTruth, path or dict
    dt : Detections, path or list
    protocol : str or Protocol
        A preset name, a YAML path or a protocol; its ``iou_type`` is set to ``"segm"`` and
        ``mask_iou`` is varied.
    workers : int or "auto"
        As :func:`evaluate`.

    Returns
    -------
    MaskModeComparison

    Raises
    ------
    InputError
        Invalid input (the message names file, record and field).
    ConfigError
        Invalid protocol.
    """
    from deteval.io import load_detections, load_ground_truth
    from deteval.mask_modes import compare_mask_modes as _compare_mask_modes

    ground_truth = gt if isinstance(gt, GroundTruth) else load_ground_truth(gt)
    detections = dt if isinstance(dt, Detections) else load_detections(dt, ground_truth)
    return _compare_mask_modes(ground_truth, detections, resolve_protocol(protocol), workers=workers)
