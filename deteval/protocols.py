"""Protocols as data: a frozen :class:`Protocol`, the shipped presets, and accumulation.

Every difference between two protocols is a field of :class:`Protocol`; no code branches on a
protocol's *name*. The presets reproduce reference tools; each names its source.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.grouping import rank_in_group

__all__ = ["Protocol", "PRESETS", "get_protocol", "preset_names", "COCO_IOU_THRESHOLDS",
           "COCO_RECALL_THRESHOLDS", "recall_thresholds", "FIELD_CHOICES"]

#: pycocotools' thresholds, bit for bit: ``np.linspace(.5, .95, 10)`` (the ninth is
#: 0.8999999999999999, not 0.9).
COCO_IOU_THRESHOLDS = tuple(float(t) for t in np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1,
                                                          endpoint=True))
#: pycocotools' recall thresholds ``np.linspace(0, 1, 101)``: ten of them lie one float step
#: above i/100 (indices 35, 41, 47, 57, 69, 70, 82, 83, 94, 95).
COCO_RECALL_THRESHOLDS = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
COCO_RECALL_THRESHOLDS.flags.writeable = False

#: Allowed values of the enumerated fields (YAML key = field name).
FIELD_CHOICES: dict[str, tuple] = {
    "iou_type": ("bbox", "segm"),
    "iou_comparison": (">=", ">"),
    "matching": ("coco", "voc"),
    "box_convention": ("continuous", "pixel_inclusive"),
    "ap_method": ("101_point", "11_point", "all_point"),
    "eleven_point_grid": ("matlab_colon", "decimal", "numpy_arange"),
    "difficult": ("ignore", "count"),
    "crowd": ("ignore_reusable", "none"),
    "score_order": ("image_major", "file"),
    "gt_ignore_field": ("honour", "iscrowd"),
    "gt_id_zero": ("matchable", "unmatchable"),
    "summary": ("pycocotools", "configured"),
    "mask_iou": ("exact", "raster"),
    "invalid_polygons": ("error", "make_valid"),
}


@dataclass(frozen=True)
class Protocol:
    """A complete, frozen description of how to score detections.

    Parameters
    ----------
    name : str
        Preset name, or the name given by a config.
    source : str
        One line: what this reproduces.
    iou_type : {"bbox", "segm"}
    iou_thresholds : tuple of float
        Matching thresholds, in order (the T axis).
    iou_comparison : {">=", ">"}
        ``>=``: the devkit and pycocotools (which compares against ``min(t, 1 - 1e-10)`` under
        COCO matching); ``>``: the Python VOC port of py-faster-rcnn / detectron2.
    matching : {"coco", "voc"}
        ``coco``: best still-unmatched GT at or above the threshold, non-ignored first, ties to
        the later GT, crowd reusable. ``voc``: the GT with the highest IoU over all GTs (first
        on ties); if it is taken the detection is a false positive.
    box_convention : {"continuous", "pixel_inclusive"}
        See :mod:`deteval.geometry`.
    ap_method : {"101_point", "11_point", "all_point"}
        COCO's 101 recall thresholds (precision = tp / (tp + fp + eps)); VOC2007's 11 points;
        VOC2010+'s area under the precision envelope.
    eleven_point_grid : {"matlab_colon", "decimal", "numpy_arange"}
        11-point recall grid. ``matlab_colon``: the devkit's ``0:0.1:1``, which MATLAB builds
        from both ends (``a + k*d`` for the first half, ``b - (n-k)*d`` for the second), so the
        fourth point is 0.30000000000000004 while 0.6 and 0.7 are exact; ``numpy_arange``:
        ``np.arange(0., 1.1, 0.1)`` as the Python VOC port builds it (0.30000000000000004,
        0.6000000000000001, 0.7000000000000001; GNU Octave's colon gives the same);
        ``decimal``: ``k / 10``. A recall of exactly 0.3 misses the 0.3 point under the first
        two.
    area_ranges : tuple of (name, lo, hi)
        Size buckets on the GT ``area`` field, bounds inclusive (the A axis).
    max_dets : tuple of int or None
        Detections kept per image *and class*, after a stable score sort (the M axis); None: no
        cap.
    difficult : {"ignore", "count"}
        VOC ``difficult`` objects: ignored (not positives; a detection matching one is neither
        TP nor FP), or counted as normal objects.
    crowd : {"ignore_reusable", "none"}
        COCO crowd regions: ignored and able to absorb many detections; or treated as normal
        objects.
    score_order : {"image_major", "file"}
        Tie rule of the global ranking: pycocotools concatenates per-image lists in image-id
        order then sorts stably; the devkit sorts the class's result file stably.
    gt_ignore_field : {"honour", "iscrowd"}
        ``iscrowd`` reproduces pycocotools, which overwrites an annotation's ``ignore`` with its
        ``iscrowd`` (a bug); ``honour`` keeps ``ignore or iscrowd``.
    gt_id_zero : {"matchable", "unmatchable"}
        ``unmatchable`` reproduces pycocotools, which stores the matched GT's id as the match
        flag, so a detection matched to annotation id 0 counts as unmatched (a bug).
    summary : {"pycocotools", "configured"}
        Headline metrics: pycocotools' ``summarize`` (AP at maxDets=100 hard-coded, the others
        at ``max_dets[2]``), or computed from the configured values.
    mask_iou : {"exact", "raster"}
        ``segm`` only: exact polygon geometry (shapely) or pycocotools' rasterised masks.
    invalid_polygons : {"error", "make_valid"}
        ``segm`` only: refuse self-intersecting polygons, or repair them with shapely.
    """

    name: str = "custom"
    source: str = ""
    iou_type: str = "bbox"
    iou_thresholds: tuple = COCO_IOU_THRESHOLDS
    iou_comparison: str = ">="
    matching: str = "coco"
    box_convention: str = "continuous"
    ap_method: str = "101_point"
    eleven_point_grid: str = "matlab_colon"
    area_ranges: tuple = (("all", 0.0, 1e10), ("small", 0.0, 1024.0), ("medium", 1024.0, 9216.0),
                          ("large", 9216.0, 1e10))
    max_dets: tuple | None = (1, 10, 100)
    difficult: str = "ignore"
    crowd: str = "ignore_reusable"
    score_order: str = "image_major"
    gt_ignore_field: str = "honour"
    gt_id_zero: str = "matchable"
    summary: str = "pycocotools"
    mask_iou: str = "exact"
    invalid_polygons: str = "error"

    def __post_init__(self) -> None:
        _validate(self)

    # -- derived --------------------------------------------------------------------------
    @property
    def area_names(self) -> tuple:
        return tuple(a[0] for a in self.area_ranges)

    @property
    def is_single_threshold(self) -> bool:
        """True for VOC-like protocols that report one ``mAP``."""
        return (len(self.iou_thresholds) == 1 and len(self.area_ranges) == 1
                and (self.max_dets is None or len(self.max_dets) == 1))

    def replace(self, **changes: Any) -> Protocol:
        """Return a copy with fields changed (validated).

        Examples
        --------
        >>> get_protocol("coco").replace(max_dets=(1, 10, 300)).max_dets
        (1, 10, 300)
        """
        unknown = sorted(set(changes) - set(field_names()))
        if unknown:
            raise ConfigError(f"unknown protocol field(s) {unknown}; allowed: {list(field_names())}")
        return dataclasses.replace(self, **{k: _normalize(k, v) for k, v in changes.items()})

    def to_dict(self) -> dict:
        """The resolved fields as plain JSON values (lists for tuples)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "area_ranges":
                value = {n: [lo, hi] for n, lo, hi in value}
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def fingerprint(self) -> str:
        """Short hash of the fields that change numbers (not name or source)."""
        fields = {k: v for k, v in self.to_dict().items() if k not in ("name", "source")}
        blob = json.dumps(fields, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


def field_names() -> tuple:
    return tuple(f.name for f in dataclasses.fields(Protocol))


def _normalize(key: str, value: Any) -> Any:
    """Coerce user values (lists from YAML/CLI) into the frozen representation."""
    if key == "iou_thresholds" and isinstance(value, (list, tuple, np.ndarray)):
        return tuple(float(v) if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool)
                     else v for v in value)
    if key == "max_dets" and isinstance(value, (list, tuple)):
        return tuple(value)
    if key == "area_ranges":
        if isinstance(value, dict):
            items = []
            for name, bounds in value.items():
                if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
                    raise ConfigError(f"area_ranges.{name}: expected [lo, hi], found {bounds!r}")
                items.append((name, bounds[0], bounds[1]))
            value = items
        if isinstance(value, (list, tuple)):
            out = []
            for item in value:
                if not isinstance(item, (list, tuple)) or len(item) != 3:
                    raise ConfigError(f"area_ranges: expected (name, lo, hi) entries, found {item!r}")
                name, lo, hi = item
                out.append((name, float(lo) if _is_number(lo) else lo, float(hi) if _is_number(hi) else hi))
            return tuple(out)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _validate(p: Protocol) -> None:
    for key, allowed in FIELD_CHOICES.items():
        value = getattr(p, key)
        if value not in allowed:
            raise ConfigError(f"protocol {p.name!r}: {key} must be one of {list(allowed)}, found {value!r}")
    thresholds = p.iou_thresholds
    if not isinstance(thresholds, tuple) or not thresholds:
        raise ConfigError(f"protocol {p.name!r}: iou_thresholds must be a non-empty list of numbers "
                          f"in [0, 1], found {thresholds!r}")
    for t in thresholds:
        if not _is_number(t) or not (0.0 <= t <= 1.0) or t != t:
            raise ConfigError(f"protocol {p.name!r}: iou_thresholds must be numbers in [0, 1], found {t!r}")
    if len(set(thresholds)) != len(thresholds):
        raise ConfigError(f"protocol {p.name!r}: iou_thresholds has duplicates: {list(thresholds)}")
    if not isinstance(p.area_ranges, tuple) or not p.area_ranges:
        raise ConfigError(f"protocol {p.name!r}: area_ranges must be a non-empty mapping name -> [lo, hi]")
    names = [a[0] for a in p.area_ranges]
    if len(set(names)) != len(names):
        raise ConfigError(f"protocol {p.name!r}: area_ranges has duplicate names: {names}")
    for name, lo, hi in p.area_ranges:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"protocol {p.name!r}: area range names must be strings, found {name!r}")
        if not (_is_number(lo) and _is_number(hi)) or not (lo <= hi):
            raise ConfigError(f"protocol {p.name!r}: area_ranges.{name} must be [lo, hi] numbers with "
                              f"lo <= hi, found [{lo!r}, {hi!r}]")
    if p.max_dets is not None:
        if not isinstance(p.max_dets, tuple) or not p.max_dets:
            raise ConfigError(f"protocol {p.name!r}: max_dets must be a non-empty list of positive "
                              f"integers or null, found {p.max_dets!r}")
        for m in p.max_dets:
            if not isinstance(m, (int, np.integer)) or isinstance(m, bool) or m < 1:
                raise ConfigError(f"protocol {p.name!r}: max_dets must be positive integers, found {m!r}")
        if list(p.max_dets) != sorted(set(p.max_dets)):
            raise ConfigError(f"protocol {p.name!r}: max_dets must be strictly increasing "
                              f"(pycocotools sorts them), found {list(p.max_dets)}")


def recall_thresholds(protocol: Protocol) -> np.ndarray:
    """The recall points of a point-sampled ``ap_method`` (the R axis).

    Examples
    --------
    >>> float(recall_thresholds(get_protocol("voc2007-pyfrcnn"))[3])
    0.30000000000000004
    >>> g = recall_thresholds(get_protocol("voc2007"))  # MATLAB's 0:0.1:1
    >>> float(g[3]), float(g[6]), float(g[7])
    (0.30000000000000004, 0.6, 0.7)
    """
    if protocol.ap_method == "101_point":
        return COCO_RECALL_THRESHOLDS
    if protocol.ap_method == "11_point":
        if protocol.eleven_point_grid == "numpy_arange":
            return np.arange(0.0, 1.1, 0.1)
        if protocol.eleven_point_grid == "matlab_colon":
            grid = np.empty(11)
            grid[:6] = np.arange(6) * 0.1
            grid[6:] = 1.0 - np.arange(4, -1, -1) * 0.1
            grid[5] = 0.5  # the middle element: MATLAB computes it as (a + b) / 2
            return grid
        return np.arange(11) / 10.0
    return np.zeros(0)


_COCO = Protocol(
    name="coco", difficult="count",
    source="pycocotools COCOeval (bbox; segm with exact polygon IoU), its two plain bugs fixed "
           "(ignore field, annotation id 0)",
)

PRESETS: dict[str, Protocol] = {
    "coco": _COCO,
    "coco-pycocotools": _COCO.replace(
        name="coco-pycocotools", gt_ignore_field="iscrowd", gt_id_zero="unmatchable", mask_iou="raster",
        source="pycocotools COCOeval bit for bit (segm: raster masks), bugs included: `ignore` "
               "overwritten by iscrowd, annotation id 0 never matched"),
    "coco50": _COCO.replace(
        name="coco50", iou_thresholds=(0.5,), area_ranges=(("all", 0.0, 1e10),), max_dets=(100,),
        summary="configured",
        source="COCO rules (101-point, crowd, maxDets 100) at the single IoU 0.5: pycocotools' AP50"),
    "voc2007": Protocol(
        name="voc2007", source="PASCAL VOC2007 devkit VOCevalDet.m (11-point, IoU >= 0.5, +1 pixels)",
        iou_thresholds=(0.5,), iou_comparison=">=", matching="voc", box_convention="pixel_inclusive",
        ap_method="11_point", eleven_point_grid="matlab_colon", area_ranges=(("all", 0.0, 1e10),),
        max_dets=None, difficult="ignore", crowd="none", score_order="file", summary="configured"),
}
PRESETS["voc2010"] = PRESETS["voc2007"].replace(
    name="voc2010", ap_method="all_point",
    source="PASCAL VOC2010-2012 devkit VOCevalDet.m + VOCap.m (all-point, IoU >= 0.5, +1 pixels)")
PRESETS["voc2012"] = PRESETS["voc2010"].replace(name="voc2012")
PRESETS["voc2007-pyfrcnn"] = PRESETS["voc2007"].replace(
    name="voc2007-pyfrcnn", iou_comparison=">", eleven_point_grid="numpy_arange",
    source="py-faster-rcnn / detectron2 voc_eval.py, use_07_metric=True (IoU > 0.5, np.arange grid); "
           "their quicksort tie order is not reproducible, stable file order is used")
PRESETS["voc2010-pyfrcnn"] = PRESETS["voc2010"].replace(
    name="voc2010-pyfrcnn", iou_comparison=">",
    source="py-faster-rcnn / detectron2 voc_eval.py, use_07_metric=False (IoU > 0.5); "
           "their quicksort tie order is not reproducible, stable file order is used")
PRESETS["voc2007-continuous"] = PRESETS["voc2007"].replace(
    name="voc2007-continuous", box_convention="continuous",
    source="VOC2007 11-point with COCO-style continuous boxes (no +1), as many modern tools compute it")
PRESETS["voc2010-continuous"] = PRESETS["voc2010"].replace(
    name="voc2010-continuous", box_convention="continuous",
    source="VOC2010+ all-point with COCO-style continuous boxes (no +1), as many modern tools compute it")


def preset_names() -> tuple:
    return tuple(PRESETS)


def get_protocol(name: str | Protocol) -> Protocol:
    """Return a preset by name (a :class:`Protocol` is returned unchanged).

    Raises
    ------
    ConfigError
        If the name is unknown; the message lists the presets.

    Examples
    --------
    >>> get_protocol("voc2010").ap_method
    'all_point'
    """
    if isinstance(name, Protocol):
        return name
    if isinstance(name, str) and name in PRESETS:
        return PRESETS[name]
    raise ConfigError(f"unknown protocol {name!r}; expected a preset name ({', '.join(PRESETS)}) "
                      f"or a YAML file")


# --------------------------------------------------------------------------------------------
# Accumulation: ranked TP/FP flags -> precision, recall, AP
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Accumulated:
    """Per-class curves summarised on the protocol's axes.

    Attributes
    ----------
    precision : float64 (n_iou_thr, n_recall_thr, n_class, n_area, n_max_dets)
        Interpolated precision at each recall threshold; NaN where a class has no positive GT
        (pycocotools stores -1). Empty R axis for ``all_point``.
    recall : float64 (n_iou_thr, n_class, n_area, n_max_dets)
        Final recall; NaN where undefined.
    scores : float64, like ``precision``
        Score of the detection where each recall threshold is reached (0 if never).
    ap : float64 (n_iou_thr, n_class, n_area, n_max_dets)
        Average precision of each curve; NaN where undefined.
    """

    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    ap: np.ndarray


def accumulate(det_is_tp: np.ndarray, det_is_ignored: np.ndarray, det_score: np.ndarray,
               det_class: np.ndarray, det_rank: np.ndarray, ranking: np.ndarray,
               n_positive: np.ndarray, protocol: Protocol) -> Accumulated:
    """Turn per-detection outcomes into precision/recall curves and AP.

    Parameters
    ----------
    det_is_tp, det_is_ignored : bool (n_area * n_iou_thr, n_det)
        Outcome per lane (lane = area * n_iou_thr + threshold).
    det_score : float64 (n_det,)
    det_class : int64 (n_det,)
    det_rank : int64 (n_det,)
        Rank of each detection within its (image, class) group (for ``max_dets``).
    ranking : int64 (n_det,)
        Detection rows in global ranking order, already grouped by class (the protocol's tie
        rule applied).
    n_positive : int64 (n_class, n_area)
        Number of non-ignored ground truths.
    protocol : Protocol

    Returns
    -------
    Accumulated

    Notes
    -----
    ``101_point`` is pycocotools' ``COCOeval.accumulate`` operation by operation:
    ``pr = tp / (fp + tp + np.spacing(1))``, the envelope, ``np.searchsorted(rc, recThrs,
    'left')``, 0 beyond the last reached recall. Ignored detections stay in the ranked list
    (they repeat the previous point), as in pycocotools; this matters for ``scores``.
    ``11_point`` and ``all_point`` follow the VOC devkit (``prec = tp / (tp + fp)``; 0 where
    nothing was counted yet, as the Python port's ``np.maximum(tp + fp, eps)`` does).
    """
    n_class, n_area = n_positive.shape
    n_thr = len(protocol.iou_thresholds)
    max_dets = protocol.max_dets if protocol.max_dets is not None else (None,)
    n_m = len(max_dets)
    rec_thr = recall_thresholds(protocol)
    n_r = len(rec_thr)
    precision = np.full((n_thr, n_r, n_class, n_area, n_m), np.nan)
    scores = np.full((n_thr, n_r, n_class, n_area, n_m), np.nan)
    recall = np.full((n_thr, n_class, n_area, n_m), np.nan)
    ap = np.full((n_thr, n_class, n_area, n_m), np.nan)
    is_coco = protocol.ap_method == "101_point"
    n_lane = n_area * n_thr

    for m, max_det in enumerate(max_dets):
        rows = ranking if max_det is None else ranking[det_rank[ranking] < max_det]
        cls = det_class[rows]
        bounds = np.searchsorted(cls, np.arange(n_class + 1))
        seg_start, seg_end = bounds[:-1], bounds[1:]
        n = len(rows)
        is_tp = np.take(det_is_tp, rows, axis=1)
        is_ignored = np.take(det_is_ignored, rows, axis=1)
        ranked_scores = np.append(det_score[rows], 0.0)
        if n_r == 0:
            _all_point(ap, recall, m, is_tp, is_ignored, seg_start, seg_end, n_positive, n_thr)
            continue
        # Precision peaks at true positives, so only TP positions are needed: for the j-th TP of
        # its (lane, class) at rank `pos`, tp = j and fp = the FPs counted since the class began.
        flat_tp = np.flatnonzero(is_tp)
        tp_lane, tp_pos = np.divmod(flat_tp, max(n, 1))
        tp_cls = cls[tp_pos]
        seg_key = tp_lane * n_class + tp_cls
        j = rank_in_group(seg_key) + 1
        n_fp = _fp_before_each_tp(is_tp, is_ignored, tp_lane, tp_pos, seg_start[tp_cls])
        tp_f = j.astype(float)
        fp_f = n_fp.astype(float)
        if is_coco:
            pr = tp_f / (fp_f + tp_f + np.spacing(1))
        else:
            pr = _devkit_precision(tp_f, fp_f)
        n_tp = np.bincount(seg_key, minlength=n_lane * n_class).reshape(n_lane, n_class)
        tp_first = (np.cumsum(n_tp.ravel()) - n_tp.ravel()).reshape(n_lane, n_class)
        has_dets = seg_end > seg_start
        for a in range(n_area):
            npig = n_positive[:, a]
            defined = npig > 0
            j_min = _min_tp_for_recall(npig, rec_thr)  # (n_class, n_r)
            target = np.maximum(j_min, 1)
            for t in range(n_thr):
                lane = a * n_thr + t
                with np.errstate(divide="ignore", invalid="ignore"):
                    final = n_tp[lane] / npig
                recall[t, :, a, m] = np.where(defined, np.where(has_dets, final, 0.0), np.nan)
                # pycocotools: idx = searchsorted(rc, thr, "left"); recall >= thr <=> tp >= j_min.
                has_target = target <= n_tp[lane][:, None]
                first = tp_first[lane][:, None] + target - 1
                end = tp_first[lane] + n_tp[lane]
                q = _suffix_max_at(pr, np.where(has_target, first, end[:, None]), end, has_target)
                reached = has_target | ((j_min == 0) & has_dets[:, None])
                # The rank where recall first reaches the threshold: the target TP, or the first
                # ranked detection when the threshold is 0 (searchsorted(rc, 0) == 0).
                from_tp = has_target & (j_min > 0)
                if len(tp_pos):
                    pos = np.where(from_tp, tp_pos[np.minimum(first, len(tp_pos) - 1)], seg_start[:, None])
                else:
                    pos = np.broadcast_to(seg_start[:, None], first.shape)
                ss = np.where(reached, ranked_scores[np.minimum(pos, n)], 0.0)
                q = np.where(defined[:, None], q, np.nan)
                precision[t, :, :, a, m] = q.T
                scores[t, :, :, a, m] = np.where(defined[:, None], ss, np.nan).T
                if is_coco:
                    ap[t, :, a, m] = np.mean(q, axis=1)
                else:
                    ap[t, :, a, m] = np.cumsum(q / 11.0, axis=1)[:, -1]
    return Accumulated(precision=precision, recall=recall, scores=scores, ap=ap)


def _fp_before_each_tp(is_tp: np.ndarray, is_ignored: np.ndarray, tp_lane: np.ndarray,
                       tp_pos: np.ndarray, tp_seg_start: np.ndarray) -> np.ndarray:
    """False positives from the start of each TP's class segment up to the TP, lane by lane.

    One lane at a time with a reused buffer: the (lanes x detections) cumulative sum would be
    a large fresh array whose page faults cost more than the sum itself.
    """
    n_lane, n = is_tp.shape
    out = np.empty(len(tp_pos), dtype=np.int64)
    fp_before = np.zeros(n + 1, dtype=np.int64)
    is_fp = np.empty(n, dtype=bool)
    lane_bounds = np.searchsorted(tp_lane, np.arange(n_lane + 1))
    for lane in range(n_lane):
        lo, hi = lane_bounds[lane], lane_bounds[lane + 1]
        if lo == hi:
            continue
        np.logical_or(is_tp[lane], is_ignored[lane], out=is_fp)
        np.logical_not(is_fp, out=is_fp)
        np.cumsum(is_fp, out=fp_before[1:])
        out[lo:hi] = fp_before[tp_pos[lo:hi] + 1] - fp_before[tp_seg_start[lo:hi]]
    return out


def _suffix_max_at(values: np.ndarray, start: np.ndarray, end: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """max(values[start[k, r] : end[k]]) for each k and r (0 where not ``valid``).

    ``start`` is non-decreasing along r. One ``maximum.reduceat`` over the pieces
    [start[k, r], start[k, r + 1]) and a suffix maximum over r: a max is exact, so these are the
    values of pycocotools' backwards envelope.
    """
    n_class, n_r = start.shape
    if len(values) == 0:
        return np.zeros((n_class, n_r))
    padded = np.append(values, 0.0)
    bounds = np.concatenate([start, end[:, None]], axis=1)
    pieces = np.maximum.reduceat(padded, bounds.ravel()).reshape(n_class, n_r + 1)[:, :n_r]
    pieces = np.where(valid, pieces, 0.0)
    return np.maximum.accumulate(pieces[:, ::-1], axis=1)[:, ::-1]


def _all_point(ap: np.ndarray, recall: np.ndarray, m: int, is_tp: np.ndarray, is_ignored: np.ndarray,
               seg_start: np.ndarray, seg_end: np.ndarray, n_positive: np.ndarray, n_thr: int) -> None:
    """VOC2010+ all-point AP per class and lane, on the devkit's full curve (fills ``ap``)."""
    n_class, n_area = n_positive.shape
    fp = ~is_tp & ~is_ignored
    for k in range(n_class):
        seg = slice(seg_start[k], seg_end[k])
        tp_sum = np.cumsum(is_tp[:, seg], axis=1).astype(float)
        fp_sum = np.cumsum(fp[:, seg], axis=1).astype(float)
        for a in range(n_area):
            npig = n_positive[k, a]
            if npig == 0:
                continue
            for t in range(n_thr):
                lane = a * n_thr + t
                rec = tp_sum[lane] / npig
                recall[t, k, a, m] = rec[-1] if len(rec) else 0.0
                ap[t, k, a, m] = _all_point_ap(rec, _devkit_precision(tp_sum[lane], fp_sum[lane]))


def _devkit_precision(tp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """``tp / max(tp + fp, eps)``: the Python VOC port (0 where nothing was counted yet)."""
    return tp / np.maximum(tp + fp, np.finfo(np.float64).eps)


def _min_tp_for_recall(npig: np.ndarray, rec_thr: np.ndarray) -> np.ndarray:
    """Smallest tp count j with ``j / npig >= thr`` for each class and threshold.

    Computed with the same float division as the recall values, so it is exact; classes without
    positives get an unreachable count.
    """
    out = np.full((len(npig), len(rec_thr)), np.iinfo(np.int64).max // 4, dtype=np.int64)
    for n in np.unique(npig[npig > 0]):
        ratios = np.arange(n + 1) / n
        out[npig == n] = np.searchsorted(ratios, rec_thr, side="left")
    return out


def _all_point_ap(rec: np.ndarray, prec: np.ndarray) -> float:
    """Area under the precision envelope at every recall change (VOC2010+ ``VOCap.m``).

    >>> round(_all_point_ap(np.array([.5, .5, 1.]), np.array([1., .5, 2 / 3])), 10)
    0.8333333333
    """
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))
