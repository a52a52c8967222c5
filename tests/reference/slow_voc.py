"""Slow, plainly written twin of the PASCAL VOC devkit's detection evaluation.

Two reference programs are re-implemented here, line by line, on plain Python lists, so that
they can be read next to their sources:

* ``VOCevalDet.m`` + ``VOCap.m`` of the VOC2007 / VOC2010-2012 MATLAB devkits
  (:func:`devkit_eval_class`);
* ``voc_eval.py`` of py-faster-rcnn (copied by detectron2's ``pascal_voc_evaluation.py``)
  (:func:`pyfrcnn_eval_class`).

Neither imports deteval. numpy is used only where the reference itself uses numpy: the
``np.arange(0., 1.1, 0.1)`` recall grid and the final ``np.sum`` of ``voc_ap`` (pairwise
summation, whose rounding differs from a plain loop).

What the devkit does, as reproduced here:

* detections of a class are sorted by ``sort(-confidence)``: MATLAB's sort is stable, so
  score ties keep the order of the result file (Python's ``sorted`` is stable too);
* the GTs of the detection's image and class are scanned in annotation order; only pairs with
  ``iw > 0 & ih > 0`` (``+1`` pixel widths) count; ``if ov > ovmax`` keeps the *first* GT among
  equal overlaps;
* ``ovmax >= minoverlap``: a difficult GT makes the detection neither TP nor FP; an untaken GT
  makes it a TP and takes the GT; a taken GT makes it a FP (even if another GT would match);
  below the threshold: FP. ``npos`` counts the non-difficult GTs;
* ``prec = tp ./ (fp + tp)`` is 0/0 = NaN until something is counted; MATLAB's ``max`` skips
  NaN (``max(NaN, x) = x``) but ``max`` of only NaNs is NaN (``matlab_nan=True``);
* VOC2007 11-point AP: ``for t = 0:0.1:1, p = max(prec(rec >= t)); if isempty(p), p = 0;
  ap = ap + p / 11``. MATLAB's colon builds ``0:0.1:1`` as ``a + k*d`` for the first half and
  ``b - (n-k)*d`` for the second, so its fourth value is ``3 * 0.1 = 0.30000000000000004``
  (``grid="matlab"``); ``grid="decimal"`` uses ``k / 10``; ``grid="numpy_arange"`` is
  ``np.arange(0., 1.1, 0.1)`` of the Python port;
* VOC2010+ all-point AP (``VOCap.m``): ``mrec = [0; rec; 1]``, ``mpre = [0; prec; 0]``, the
  envelope from the right, then ``sum((mrec(i) - mrec(i-1)) .* mpre(i))`` over recall changes.

py-faster-rcnn differs in: ``ovmax > ovthresh`` (strict), ``prec = tp / np.maximum(tp + fp,
eps)`` (0 instead of NaN), ``np.arange`` grid, and ``np.argsort(-confidence)`` (quicksort:
the order of score ties is not reproducible; this twin uses the stable order, as deteval does).

Box conventions: ``"pixel_inclusive"`` (devkit and py-faster-rcnn: ``x2 - x1 + 1``) and
``"continuous"`` (no ``+1``: ``iw = min(x2) - max(x1)``, area ``(x2 - x1) * (y2 - y1)``).
"""

from __future__ import annotations

import math

import numpy as np

EPS = float(np.finfo(np.float64).eps)

#: Each deteval preset, as reference options.
PRESET_OPTIONS = {
    "voc2007": dict(
        variant="devkit", comparison=">=", convention="pixel_inclusive", ap_method="11_point", grid="matlab"
    ),
    "voc2010": dict(variant="devkit", comparison=">=", convention="pixel_inclusive", ap_method="all_point"),
    "voc2007-pyfrcnn": dict(
        variant="pyfrcnn",
        comparison=">",
        convention="pixel_inclusive",
        ap_method="11_point",
        grid="numpy_arange",
    ),
    "voc2010-pyfrcnn": dict(
        variant="pyfrcnn", comparison=">", convention="pixel_inclusive", ap_method="all_point"
    ),
    "voc2007-continuous": dict(
        variant="devkit", comparison=">=", convention="continuous", ap_method="11_point", grid="matlab"
    ),
    "voc2010-continuous": dict(
        variant="devkit", comparison=">=", convention="continuous", ap_method="all_point"
    ),
}
PRESET_OPTIONS["voc2012"] = PRESET_OPTIONS["voc2010"]


# ------------------------------------------------------------------------------------------
# Small MATLAB semantics
# ------------------------------------------------------------------------------------------


def matlab_colon(a, d, b):
    """``a:d:b`` as MATLAB builds it (MathWorks' ``colonop``: symmetric from both ends).

    >>> matlab_colon(0, 0.1, 1)[3], matlab_colon(0, 0.1, 1)[6], matlab_colon(0, 0.1, 1)[7]
    (0.30000000000000004, 0.6, 0.7)
    """
    tol = 2.0 * EPS * max(abs(a), abs(b)) / abs(d)
    n = int(math.floor((b - a) / d + tol))
    out = [0.0] * (n + 1)
    for k in range(n // 2 + 1):
        out[k] = a + k * d
        out[n - k] = b - k * d
    if n % 2 == 0:
        out[n // 2] = (a + b) / 2
    return out


def matlab_max(values):
    """MATLAB ``max`` of a vector: NaN entries skipped, NaN if all are NaN, [] if empty."""
    values = list(values)
    if not values:
        return None
    kept = [v for v in values if not math.isnan(v)]
    return max(kept) if kept else float("nan")


def matlab_max2(a, b):
    """MATLAB ``max(a, b)`` of two scalars: a NaN argument is skipped."""
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a >= b else b


def eleven_point_grid(grid):
    if grid == "matlab":
        return matlab_colon(0.0, 0.1, 1.0)
    if grid == "decimal":
        return [k / 10 for k in range(11)]
    if grid == "numpy_arange":
        return [float(t) for t in np.arange(0.0, 1.1, 0.1)]
    raise ValueError(grid)


# ------------------------------------------------------------------------------------------
# Overlap
# ------------------------------------------------------------------------------------------


def devkit_overlap(bb, bbgt, convention="pixel_inclusive"):
    """Overlap of two boxes [x1, y1, x2, y2] as VOCevalDet.m; None when iw <= 0 or ih <= 0."""
    plus = 1.0 if convention == "pixel_inclusive" else 0.0
    bi = [max(bb[0], bbgt[0]), max(bb[1], bbgt[1]), min(bb[2], bbgt[2]), min(bb[3], bbgt[3])]
    iw = bi[2] - bi[0] + plus
    ih = bi[3] - bi[1] + plus
    if iw > 0 and ih > 0:
        ua = (
            (bb[2] - bb[0] + plus) * (bb[3] - bb[1] + plus)
            + (bbgt[2] - bbgt[0] + plus) * (bbgt[3] - bbgt[1] + plus)
            - iw * ih
        )
        return iw * ih / ua
    return None


def pyfrcnn_overlap(bb, bbgt, convention="pixel_inclusive"):
    """Overlap as voc_eval.py: widths clamped at 0, so non-overlapping pairs give 0."""
    plus = 1.0 if convention == "pixel_inclusive" else 0.0
    ixmin = max(bbgt[0], bb[0])
    iymin = max(bbgt[1], bb[1])
    ixmax = min(bbgt[2], bb[2])
    iymax = min(bbgt[3], bb[3])
    iw = max(ixmax - ixmin + plus, 0.0)
    ih = max(iymax - iymin + plus, 0.0)
    inters = iw * ih
    uni = (
        (bb[2] - bb[0] + plus) * (bb[3] - bb[1] + plus)
        + (bbgt[2] - bbgt[0] + plus) * (bbgt[3] - bbgt[1] + plus)
        - inters
    )
    return inters / uni


# ------------------------------------------------------------------------------------------
# One class
# ------------------------------------------------------------------------------------------


def _class_gt(image_ids, objects, cls):
    """{image: {"BB": [...], "diff": [...], "det": [...]}} and npos, as the devkit builds them."""
    gt = {}
    npos = 0
    for image in image_ids:
        objs = [o for o in objects.get(image, []) if o["name"] == cls]
        gt[image] = {
            "BB": [tuple(o["box"]) for o in objs],
            "diff": [bool(o["difficult"]) for o in objs],
            "det": [False] * len(objs),
        }
        npos += sum(1 for o in objs if not o["difficult"])
    return gt, npos


def devkit_eval_class(
    image_ids,
    objects,
    detections,
    cls,
    *,
    comparison=">=",
    convention="pixel_inclusive",
    ap_method="11_point",
    grid="matlab",
    min_overlap=0.5,
    matlab_nan=True,
):
    """``VOCevalDet.m`` for one class.

    Parameters
    ----------
    image_ids : list of str
        The image set, in order.
    objects : dict str -> list of dict
        Per image, objects ``{"name", "box": (x1, y1, x2, y2), "difficult"}`` in XML order.
    detections : list of (image_id, score, box)
        The class's result file, in file order.
    cls : str
    comparison : {">=", ">"}
    convention : {"pixel_inclusive", "continuous"}
    ap_method : {"11_point", "all_point"}
    grid : {"matlab", "decimal", "numpy_arange"}
    min_overlap : float
    matlab_nan : bool
        ``prec`` is NaN where nothing is counted yet (MATLAB 0/0); False: 0 (the Python port).

    Returns
    -------
    dict with ``rec``, ``prec``, ``ap``, ``npos``, ``tp``, ``fp`` (per sorted detection).
    """
    gt, npos = _class_gt(image_ids, objects, cls)
    # sort detections by decreasing confidence (MATLAB's sort is stable)
    order = sorted(range(len(detections)), key=lambda d: -detections[d][1])
    nd = len(order)
    tp = [0] * nd
    fp = [0] * nd
    for d, index in enumerate(order):
        image, _, bb = detections[index]
        if image not in gt:
            raise ValueError(f'unrecognized image "{image}"')
        record = gt[image]
        ovmax = -math.inf
        jmax = None
        for j, bbgt in enumerate(record["BB"]):
            ov = devkit_overlap(bb, bbgt, convention)
            if ov is not None and ov > ovmax:
                ovmax = ov
                jmax = j
        passes = ovmax > min_overlap if comparison == ">" else ovmax >= min_overlap
        if passes:
            if not record["diff"][jmax]:
                if not record["det"][jmax]:
                    tp[d] = 1  # true positive
                    record["det"][jmax] = True
                else:
                    fp[d] = 1  # false positive (multiple detection)
        else:
            fp[d] = 1  # false positive
    return _curve_and_ap(tp, fp, npos, ap_method=ap_method, grid=grid, matlab_nan=matlab_nan)


def pyfrcnn_eval_class(
    image_ids,
    objects,
    detections,
    cls,
    *,
    comparison=">",
    convention="pixel_inclusive",
    ap_method="11_point",
    grid="numpy_arange",
    min_overlap=0.5,
):
    """py-faster-rcnn ``voc_eval`` for one class (``use_07_metric`` = ``ap_method == "11_point"``).

    Same parameters as :func:`devkit_eval_class`; ties are kept in file order (see module doc).
    """
    gt, npos = _class_gt(image_ids, objects, cls)
    order = sorted(range(len(detections)), key=lambda d: -detections[d][1])
    nd = len(order)
    tp = [0.0] * nd
    fp = [0.0] * nd
    for d, index in enumerate(order):
        image, _, bb = detections[index]
        R = gt[image]
        ovmax = -math.inf
        jmax = None
        if R["BB"]:
            overlaps = [pyfrcnn_overlap(bb, bbgt, convention) for bbgt in R["BB"]]
            ovmax = max(overlaps)
            jmax = overlaps.index(ovmax)  # np.argmax: first maximum
        passes = ovmax > min_overlap if comparison == ">" else ovmax >= min_overlap
        if passes:
            if not R["diff"][jmax]:
                if not R["det"][jmax]:
                    tp[d] = 1.0
                    R["det"][jmax] = True
                else:
                    fp[d] = 1.0
        else:
            fp[d] = 1.0
    return _curve_and_ap(tp, fp, npos, ap_method=ap_method, grid=grid, matlab_nan=False)


def _curve_and_ap(tp, fp, npos, *, ap_method, grid, matlab_nan):
    tp_sum, fp_sum = [], []
    t = f = 0.0
    for a, b in zip(tp, fp, strict=True):
        t += a
        f += b
        tp_sum.append(t)
        fp_sum.append(f)
    if npos == 0:
        # deteval leaves AP undefined here; the references give 0 or NaN (see docs/voc.md).
        return {"rec": None, "prec": None, "ap": float("nan"), "npos": 0, "tp": tp, "fp": fp}
    rec = [x / npos for x in tp_sum]
    prec = []
    for x, y in zip(tp_sum, fp_sum, strict=True):
        if x + y > 0:
            prec.append(x / (x + y))
        else:
            prec.append(float("nan") if matlab_nan else x / max(x + y, EPS))
    if ap_method == "11_point":
        ap = 0.0
        for thr in eleven_point_grid(grid):
            p = matlab_max(p for r, p in zip(rec, prec, strict=True) if r >= thr)
            if p is None:
                p = 0.0
            ap = ap + p / 11
    else:
        ap = all_point_ap(rec, prec)
    return {"rec": rec, "prec": prec, "ap": ap, "npos": npos, "tp": tp, "fp": fp}


def all_point_ap(rec, prec):
    """``VOCap.m`` / ``voc_ap(use_07_metric=False)``: area under the precision envelope.

    >>> all_point_ap([0.5, 0.5, 1.0], [1.0, 0.5, 2 / 3])
    0.8333333333333333
    """
    mrec = [0.0] + list(rec) + [1.0]
    mpre = [0.0] + list(prec) + [0.0]
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = matlab_max2(mpre[i], mpre[i + 1])
    terms = [(mrec[i + 1] - mrec[i]) * mpre[i + 1] for i in range(len(mrec) - 1) if mrec[i + 1] != mrec[i]]
    # voc_ap sums with np.sum (pairwise); MATLAB's summation order is not specified.
    return float(np.sum(np.array(terms, dtype=np.float64)))


# ------------------------------------------------------------------------------------------
# A dataset
# ------------------------------------------------------------------------------------------


def evaluate_dataset(image_ids, objects, detections_by_class, classes, preset):
    """Per-class AP of a whole dataset under a deteval preset name.

    Parameters
    ----------
    image_ids : list of str
    objects : dict str -> list of dict
    detections_by_class : dict str -> list of (image_id, score, box)
    classes : list of str
    preset : str
        A key of :data:`PRESET_OPTIONS`.

    Returns
    -------
    dict str -> dict
        Per class: ``ap`` (NaN where the class has no non-difficult GT), ``npos``, ``num_det``.
    """
    options = dict(PRESET_OPTIONS[preset])
    variant = options.pop("variant")
    if variant == "pyfrcnn":
        run = pyfrcnn_eval_class
    else:
        run = devkit_eval_class
        options["matlab_nan"] = False
    out = {}
    for cls in classes:
        dets = detections_by_class.get(cls, [])
        res = run(image_ids, objects, dets, cls, **options)
        out[cls] = {"ap": res["ap"], "npos": res["npos"], "num_det": len(dets)}
    return out
