"""A drop-in replacement for ``pycocotools.cocoeval.COCOeval`` (bbox, segm and keypoints).

>>> from deteval.interop import COCOeval     # instead of pycocotools.cocoeval
>>> # E = COCOeval(coco_gt, coco_dt, "bbox"); E.evaluate(); E.accumulate(); E.summarize()

Scripts written for pycocotools run unchanged: the numbers are pycocotools' bit for bit
(protocol ``coco-pycocotools``: its ``ignore`` and annotation-id-0 bugs included, raster
masks), with the attributes scripts read:

* ``eval``: ``params``, ``counts``, ``date``, ``precision``, ``recall``, ``scores`` (-1 where
  undefined), in pycocotools' T x R x K x A x M layout;
* ``summarize()`` prints pycocotools' twelve lines to stdout, as pycocotools does (detectron2
  and mmdetection capture them), sets ``stats`` and also returns the text;
* ``evalImgs`` (one dict or None per (category, area range, image)) and ``ious`` (keyed by
  ``(imgId, catId)``), with pycocotools' structure, built on first access;
* ``params.useCats = 0`` (class-agnostic: :func:`deteval.pooling.pool_categories`), custom
  ``params.iouThrs``, ``recThrs``, ``maxDets``, ``areaRng``, ``imgIds``, ``catIds``;
* ``cocoDt`` from ``COCO.loadRes`` of box, mask or keypoint results (numpy boxes included);
  a result's size range follows the ``area`` loadRes wrote (:func:`result_areas`: the first
  record decides between box ``w * h``, mask pixel count and keypoint extent, as in
  pycocotools).

Differences, on purpose: the caller's COCO objects are never modified; ``evaluate`` and
``accumulate`` print nothing (pycocotools prints progress and timings there, which no caller
parses).
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import numpy as np

from deteval.accumulate import accumulate as accumulate_outcomes
from deteval.errors import ConfigError, describe, is_number, records_error
from deteval.evaluate import (
    EvalResult,
    check_protocol,
    ground_truth_flags,
    match,
    pair_iou,
    ranking_order,
    score,
)
from deteval.geometry import prepare_masks
from deteval.geometry.keypoints import COCO_KEYPOINT_SIGMAS
from deteval.geometry.raster import rle_areas
from deteval.io import load_coco_dt, load_coco_gt
from deteval.pooling import pool_categories
from deteval.protocol import COCO_RECALL_THRESHOLDS, get_protocol

__all__ = ["COCOeval", "Params"]


class Params:
    """pycocotools' ``Params`` for ``bbox`` / ``segm`` / ``keypoints`` (same names and defaults)."""

    def __init__(self, iouType: str = "segm"):  # noqa: N803 - pycocotools' name
        if iouType not in ("bbox", "segm", "keypoints"):
            raise ConfigError(f"iouType must be 'bbox', 'segm' or 'keypoints', found {iouType!r}")
        self.imgIds: list = []
        self.catIds: list = []
        self.iouThrs = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True)
        self.recThrs = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)
        self.maxDets = [1, 10, 100]
        self.areaRng: list[list[float]] = [[0**2, 1e5**2], [0**2, 32**2], [32**2, 96**2], [96**2, 1e5**2]]
        self.areaRngLbl = ["all", "small", "medium", "large"]
        self.useCats = 1
        self.iouType = iouType
        self.useSegm = None
        if iouType == "keypoints":  # pycocotools' setKpParams
            self.maxDets = [20]
            self.areaRng = [[0**2, 1e5**2], [32**2, 96**2], [96**2, 1e5**2]]
            self.areaRngLbl = ["all", "medium", "large"]
            self.kpt_oks_sigmas = COCO_KEYPOINT_SIGMAS.copy()


def _dataset(coco: Any) -> Any:
    return coco.dataset if hasattr(coco, "dataset") else coco


def _plain_detection(d: dict) -> dict:
    """A result record as JSON would hold it: ``loadRes`` leaves numpy boxes and areas."""
    out = dict(d)
    for key in ("bbox", "area", "score"):
        value = out.get(key)
        if isinstance(value, np.ndarray):
            out[key] = value.tolist()
        elif isinstance(value, np.generic):
            out[key] = value.item()
    return out


def _loadres_branch(first: dict) -> str:
    """Which branch of pycocotools' ``COCO.loadRes`` the FIRST result record selects."""
    if "bbox" in first and not _is_empty_box(first["bbox"]):
        return "bbox"
    if "segmentation" in first:
        return "segmentation"
    if "keypoints" in first:
        return "keypoints"
    return "none"


def _is_empty_box(box: Any) -> bool:
    return isinstance(box, (list, tuple)) and len(box) == 0


def result_areas(records: list, *, where: str = "cocoDt") -> np.ndarray:
    """The ``area`` pycocotools' ``COCOeval`` reads for each result (size ranges).

    Parameters
    ----------
    records : list of dict
        ``cocoDt.dataset["annotations"]``, all of them (the branch depends on the first).
    where : str
        Names the source in messages.

    Returns
    -------
    float64 (n_records,)
        The record's own ``area`` (``COCO.loadRes`` always writes one); a record without it
        gets the area ``loadRes`` would have written.

    Raises
    ------
    InputError
        An ``area`` that is not a finite number >= 0; a record without ``area`` whose area
        ``loadRes`` could not compute (it would fail there too).

    Notes
    -----
    pycocotools' ``loadRes`` picks ONE branch for all records from the FIRST record: a
    non-empty ``bbox`` -> every area is ``w * h`` (masks kept as they are); else a
    ``segmentation`` -> every area is ``maskUtils.area`` of the (compressed RLE) mask, even
    for records that carry a bbox; else ``keypoints`` -> every area is the extent
    ``(max x - min x) * (max y - min y)`` of all the keypoints (unlabelled (0, 0) points
    included). Reproduced here on purpose (a pycocotools quirk): deteval's own loaders decide
    record by record.

    Examples
    --------
    >>> rle = {"size": [4, 4], "counts": "02>"}  # 2 pixels in a 4 x 4 image
    >>> result_areas([{"segmentation": rle}, {"segmentation": rle, "bbox": [0, 0, 4, 4]}]).tolist()
    [2.0, 2.0]
    >>> result_areas([{"bbox": [0, 0, 4, 4], "segmentation": rle}, {"segmentation": rle}]).tolist()
    Traceback (most recent call last):
    ...
    deteval.errors.InputError: ...
    >>> result_areas([{"bbox": [0, 0, 4, 4], "segmentation": rle}]).tolist()
    [16.0]
    >>> result_areas([{"bbox": [0, 0, 4, 4], "area": 3}]).tolist()
    [3.0]
    """
    n = len(records)
    values = [record.get("area") for record in records]
    missing: list[int] = []
    if set(map(type, values)) <= {float, int}:  # plain JSON numbers (bool is not int here)
        area = np.fromiter(values, dtype=np.float64, count=n)
    else:
        area = np.full(n, np.nan)
        for i, value in enumerate(values):
            if value is None:
                missing.append(i)
                continue
            if isinstance(value, np.ndarray) and value.size == 1:
                value = value.reshape(()).item()
            elif isinstance(value, np.generic):
                value = value.item()
            area[i] = float(value) if is_number(value) else np.nan
    is_missing = np.zeros(n, dtype=bool)
    is_missing[missing] = True
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~is_missing & ~(np.isfinite(area) & (area >= 0))).tolist()
    if bad:
        raise records_error(
            where,
            "result `area` is not a finite number >= 0",
            "the area COCO.loadRes writes (a number >= 0)",
            [(f"result #{i}", describe(records[i].get("area"))) for i in bad[:5]],
            noun="results",
            n_records=len(bad),
        )
    if missing:
        area[missing] = _derived_areas(
            [records[i] for i in missing], missing, _loadres_branch(records[0]), where
        )
    return area


def _derived_areas(records: list, numbers: list, branch: str, where: str) -> np.ndarray:
    """``loadRes``' area of records that carry none, by the branch of the first record."""
    out = np.zeros(len(records))
    bad: list[tuple[str, str]] = []
    for k, (record, number) in enumerate(zip(records, numbers, strict=True)):
        if branch == "bbox" and _has_box(record):
            out[k] = float(record["bbox"][2]) * float(record["bbox"][3])
        elif branch == "segmentation" and _is_compressed_rle(record.get("segmentation")):
            seg = record["segmentation"]
            counts = seg["counts"].encode() if isinstance(seg["counts"], str) else seg["counts"]
            out[k] = rle_areas([{"size": list(seg["size"]), "counts": counts}])[0]
        elif branch == "keypoints" and _has_keypoints(record):
            points = np.asarray(record["keypoints"], dtype=np.float64)
            x, y = points[0::3], points[1::3]
            out[k] = (x.max() - x.min()) * (y.max() - y.min())
        else:
            bad.append(
                (
                    f"result #{number}",
                    describe({key: record.get(key) for key in ("bbox", "segmentation", "keypoints")}),
                )
            )
    if bad:
        expected = {
            "bbox": "a bbox [x, y, w, h] (the first result has one)",
            "segmentation": "a compressed RLE segmentation (the first result has no bbox)",
            "keypoints": "keypoints (the first result has neither bbox nor segmentation)",
        }.get(branch, "a bbox, a segmentation or keypoints in the first result")
        raise records_error(
            where,
            "result without `area` whose area pycocotools' COCO.loadRes cannot compute "
            "(it fails on such a record)",
            f"an `area`, or {expected}",
            bad[:5],
            noun="results",
            n_records=len(bad),
        )
    return out


def _has_box(record: dict) -> bool:
    box = record.get("bbox")
    return box is not None and len(box) == 4 and all(is_number(v) for v in np.asarray(box).tolist())


def _is_compressed_rle(seg: Any) -> bool:
    return isinstance(seg, dict) and "size" in seg and isinstance(seg.get("counts"), (str, bytes))


def _has_keypoints(record: dict) -> bool:
    points = record.get("keypoints")
    return points is not None and len(points) >= 3 and len(points) % 3 == 0


class COCOeval:
    """pycocotools-compatible evaluation object backed by deteval.

    Parameters
    ----------
    cocoGt, cocoDt : pycocotools.coco.COCO (or anything with a ``dataset`` dict)
        ``cocoDt`` as returned by ``cocoGt.loadRes(...)``.
    iouType : {"bbox", "segm"}
    """

    def __init__(self, cocoGt: Any = None, cocoDt: Any = None, iouType: str = "segm"):  # noqa: N803
        self.cocoGt = cocoGt
        self.cocoDt = cocoDt
        self.params = Params(iouType=iouType)
        self.eval: dict = {}
        self.stats: np.ndarray = np.zeros(12)
        self.result: EvalResult | None = None
        self._evalImgs: list | None = None
        self._ious: dict | None = None
        self._inputs: tuple | None = None
        if cocoGt is not None:
            gt = _dataset(cocoGt)
            self.params.imgIds = sorted(img["id"] for img in gt.get("images", []))
            self.params.catIds = sorted(cat["id"] for cat in gt.get("categories", []))

    # -- protocol and inputs ----------------------------------------------------------------
    def _protocol(self) -> Any:
        p = self.params
        if p.useCats not in (0, 1):
            raise ConfigError(f"params.useCats: expected 1 or 0, found {p.useCats!r}")
        labels = list(p.areaRngLbl)
        if len(labels) != len(p.areaRng) or len(set(labels)) != len(labels):
            labels = [f"area{i}" for i in range(len(p.areaRng))]
        areas = tuple(
            (str(name), float(lo), float(hi)) for name, (lo, hi) in zip(labels, p.areaRng, strict=True)
        )
        return get_protocol("coco-pycocotools").replace(
            iou_type=p.iouType,
            iou_thresholds=tuple(float(t) for t in p.iouThrs),
            area_ranges=areas,
            max_dets=tuple(sorted(int(m) for m in p.maxDets)),
            mask_iou="raster",
            keypoint_sigmas=(
                tuple(float(s) for s in p.kpt_oks_sigmas)
                if p.iouType == "keypoints" and not np.array_equal(p.kpt_oks_sigmas, COCO_KEYPOINT_SIGMAS)
                else None
            ),
        )

    def _load(self) -> tuple:
        """Ground truth and detections restricted to ``imgIds`` x ``catIds`` (pooled if useCats=0)."""
        p = self.params
        gt = dict(_dataset(self.cocoGt))
        img_ids = set(int(i) for i in np.unique(p.imgIds))
        cat_ids = set(int(c) for c in np.unique(p.catIds))
        gt["images"] = [im for im in gt["images"] if im["id"] in img_ids]
        gt["categories"] = [c for c in gt["categories"] if c["id"] in cat_ids]
        gt["annotations"] = [
            a for a in gt["annotations"] if a["image_id"] in img_ids and a["category_id"] in cat_ids
        ]
        all_dets = _dataset(self.cocoDt)["annotations"]
        kept = [i for i, d in enumerate(all_dets) if d["image_id"] in img_ids and d["category_id"] in cat_ids]
        dets = [_plain_detection(all_dets[i]) for i in kept]
        ground_truth = load_coco_gt(gt, name="cocoGt")
        detections = load_coco_dt(dets, ground_truth, name="cocoDt")
        # pycocotools' size ranges read each result's ``area`` (loadRes' branch, see result_areas)
        areas = result_areas(all_dets)[np.asarray(kept, dtype=np.int64)] if all_dets else np.zeros(0)
        detections = dataclasses.replace(detections, area=areas[np.asarray(detections.order)])
        record_ids = np.array([d.get("id", i + 1) for i, d in enumerate(dets)], dtype=np.int64)
        row_ids = record_ids[np.asarray(detections.order)]
        if not p.useCats:
            ground_truth, detections = pool_categories(ground_truth, detections)
        # Result ids by the detections' ``order`` (what a MatchTable keeps of each detection).
        det_ids = np.zeros(len(detections), dtype=np.int64)
        det_ids[np.asarray(detections.order)] = row_ids
        return ground_truth, detections, det_ids

    # -- pycocotools' three steps -------------------------------------------------------------
    def evaluate(self) -> None:
        """Match (pycocotools' ``evaluate``); ``accumulate`` then fills ``eval``."""
        self.params.imgIds = [int(i) for i in np.unique(self.params.imgIds)]
        self.params.catIds = [int(c) for c in np.unique(self.params.catIds)]
        self.params.maxDets = sorted(self.params.maxDets)
        ground_truth, detections, det_ids = self._load()
        protocol = self._protocol()
        check_protocol(protocol)  # match() checks what it reads; this, before any matching
        # The core, not deteval.api.evaluate: like pycocotools, the drop-in emits no warnings
        # (they stay in ``self.result.warnings`` / ``.notes``).
        self.result = score(
            match(ground_truth, detections, protocol),
            ground_truth,
            protocol,
            warnings=ground_truth.warnings + detections.warnings,
        )
        self._inputs = (ground_truth, detections, det_ids, protocol)
        self._evalImgs = None
        self._ious = None
        self.eval = {}

    def accumulate(self, p: Any = None) -> None:
        """Fill ``eval`` with pycocotools' arrays (-1 where undefined)."""
        if self.result is None:
            self.evaluate()
        r, _ = self._state()
        rec_thrs = np.asarray(self.params.recThrs if p is None else p.recThrs, dtype=np.float64)
        precision, recall, scores = r.precision, r.recall, r.scores
        if not np.array_equal(rec_thrs, COCO_RECALL_THRESHOLDS):
            table, protocol = r.table, r.protocol
            acc = accumulate_outcomes(
                table.tp,
                table.ignored,
                table.det_score,
                table.det_class,
                table.det_rank,
                ranking_order(table, protocol),
                table.n_positive,
                protocol,
                recall_thresholds_override=rec_thrs,
            )
            precision, recall, scores = acc.precision, acc.recall, acc.scores

        def minus_one(a: np.ndarray) -> np.ndarray:
            return np.where(np.isnan(a), -1.0, a)

        self.eval = {
            "params": self.params,
            "counts": list(precision.shape),
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "precision": minus_one(precision),
            "recall": minus_one(recall),
            "scores": minus_one(scores),
        }

    def _summarize_one(
        self, ap: bool, iou_thr: float | None = None, area: str = "all", max_dets: int = 100
    ) -> tuple[float, str]:
        """Pycocotools' ``_summarize``, operation by operation (its line and its value)."""
        p = self.params
        i_str = " {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}"
        title = "Average Precision" if ap else "Average Recall"
        kind = "(AP)" if ap else "(AR)"
        iou = f"{p.iouThrs[0]:0.2f}:{p.iouThrs[-1]:0.2f}" if iou_thr is None else f"{iou_thr:0.2f}"
        aind = [i for i, a in enumerate(p.areaRngLbl) if a == area]
        mind = [i for i, m in enumerate(p.maxDets) if m == max_dets]
        s = self.eval["precision"] if ap else self.eval["recall"]
        if iou_thr is not None:
            t = np.where(iou_thr == p.iouThrs)[0]
            s = s[t]
        s = s[:, :, :, aind, mind] if ap else s[:, :, aind, mind]
        mean_s = -1 if len(s[s > -1]) == 0 else np.mean(s[s > -1])
        return float(mean_s), i_str.format(title, kind, iou, area, max_dets, mean_s)

    def summarize(self) -> str:
        """Print pycocotools' 12 lines on stdout (as pycocotools), set ``stats``, return the text.

        Notes
        -----
        pycocotools' ``_summarizeDets`` literally: AP at ``maxDets=100`` whatever
        ``params.maxDets`` holds (-1 when 100 is not among them), the other lines at
        ``maxDets[2]``; a line whose threshold or area label is absent prints -1.
        """
        if not self.eval:
            self.accumulate()
        m = self.params.maxDets
        if self.params.iouType == "keypoints":  # pycocotools' _summarizeKps: maxDets 20 by value
            rows = [
                (ap, iou, area, 20)
                for ap in (True, False)
                for iou, area in (
                    (None, "all"),
                    (0.5, "all"),
                    (0.75, "all"),
                    (None, "medium"),
                    (None, "large"),
                )
            ]
        else:
            rows = [
                (True, None, "all", 100),
                (True, 0.5, "all", m[2]),
                (True, 0.75, "all", m[2]),
                (True, None, "small", m[2]),
                (True, None, "medium", m[2]),
                (True, None, "large", m[2]),
                (False, None, "all", m[0]),
                (False, None, "all", m[1]),
                (False, None, "all", m[2]),
                (False, None, "small", m[2]),
                (False, None, "medium", m[2]),
                (False, None, "large", m[2]),
            ]
        values, lines = [], []
        for ap, iou_thr, area, max_dets in rows:
            value, line = self._summarize_one(ap, iou_thr, area, max_dets)
            values.append(value)
            lines.append(line)
        self.stats = np.array(values)
        text = "\n".join(lines)
        print(text)  # pycocotools prints; detectron2 and mmdetection capture stdout
        return text

    def __str__(self) -> str:
        return self.summarize()

    def _state(self) -> tuple[EvalResult, tuple]:
        """The result and the inputs (gt, detections, result ids, protocol) of :meth:`evaluate`.

        Raises
        ------
        ConfigError
            :meth:`evaluate` has not run (the public steps run it first when needed).
        """
        if self.result is None or self._inputs is None:
            raise ConfigError("COCOeval: no evaluation yet; expected evaluate() to run first, found none")
        return self.result, self._inputs

    # -- pycocotools' per-image structures, built on first access ------------------------------
    def _groups(self) -> tuple:
        """Per (image, category) key: ground-truth rows in file order, detection rows by score."""
        ground_truth, detections, _, _ = self._state()[1]
        gt_key = ground_truth.image.astype(np.int64) * ground_truth.n_classes + ground_truth.category
        det_key = detections.image.astype(np.int64) * ground_truth.n_classes + detections.category
        gt_rows = np.lexsort((np.arange(len(ground_truth)), gt_key))
        # pycocotools: stable mergesort on -score of the (image, category) list in file order
        det_rows = np.lexsort((np.asarray(detections.order), -detections.score, det_key))
        return gt_key, gt_rows, det_key, det_rows

    @property
    def ious(self) -> dict:
        """``{(imgId, catId): (D, G) array}`` as pycocotools' ``computeIoU``.

        One entry for every image and category of ``params`` (``[]`` when either side is empty).
        D: the image's detections of the category by decreasing score (stable), at most
        ``maxDets[-1]``; G: its ground truths in file order. With ``useCats = 0`` the key's
        category is -1.
        """
        if self._ious is None:
            if self._inputs is None:
                self.evaluate()
            self._ious = self._compute_ious()
        return self._ious

    def _compute_ious(self) -> dict:
        ground_truth, detections, _, protocol = self._state()[1]
        gt_key, gt_rows, det_key, det_rows = self._groups()
        n_class = ground_truth.n_classes
        cat_ids = np.asarray(ground_truth.category_id)
        img_ids = np.asarray(ground_truth.image_id)
        max_det = self.params.maxDets[-1]
        keys = np.unique(np.r_[gt_key, det_key])
        key_ends = np.append(keys, np.iinfo(np.int64).max)  # each key, then past the last one
        gt_bounds = np.searchsorted(gt_key[gt_rows], key_ends, side="left")
        det_bounds = np.searchsorted(det_key[det_rows], key_ends, side="left")
        g_of = [gt_rows[gt_bounds[i] : gt_bounds[i + 1]] for i in range(len(keys))]
        d_of = [det_rows[det_bounds[i] : det_bounds[i + 1]][:max_det] for i in range(len(keys))]
        pair_g = np.concatenate(
            [np.tile(g, len(d)) for g, d in zip(g_of, d_of, strict=True)] + [np.zeros(0, np.int64)]
        )
        pair_d = np.concatenate(
            [np.repeat(d, len(g)) for g, d in zip(g_of, d_of, strict=True)] + [np.zeros(0, np.int64)]
        )
        masks = prepare_masks(ground_truth, detections, protocol) if protocol.iou_type == "segm" else None
        values = pair_iou(
            ground_truth,
            detections,
            pair_g.astype(np.int64),
            pair_d.astype(np.int64),
            np.asarray(ground_truth.is_crowd)[pair_g],
            protocol,
            masks,
        )
        cats = self.params.catIds if self.params.useCats else [-1]
        out: dict = {(int(i), int(c)): [] for i in self.params.imgIds for c in cats}
        start = 0
        for key, g, d in zip(keys.tolist(), g_of, d_of, strict=True):
            n = len(g) * len(d)
            image, category = divmod(key, n_class)
            cat = int(cat_ids[category]) if self.params.useCats else -1
            out[int(img_ids[image]), cat] = values[start : start + n].reshape(len(d), len(g)) if n else []
            start += n
        return out

    @property
    def evalImgs(self) -> list:  # noqa: N802 - pycocotools' name
        """Pycocotools' ``evalImgs``: for each category, area range and image (in that nesting).

        None when the image has neither ground truth nor detections of the category, else a
        dict with ``image_id, category_id, aRng, maxDet, dtIds, gtIds, dtMatches, gtMatches,
        dtScores, gtIgnore, dtIgnore`` (matches hold the other side's id, 0 for none).
        """
        if self._evalImgs is None:
            if self._inputs is None:
                self.evaluate()
            self._evalImgs = self._compute_eval_imgs()
        return self._evalImgs

    def _compute_eval_imgs(self) -> list:
        result, (ground_truth, detections, det_ids, protocol) = self._state()
        table = result.table
        p = self.params
        n_thr, n_area = len(protocol.iou_thresholds), len(protocol.area_ranges)
        max_det = p.maxDets[-1]
        gt_key, gt_rows, det_key, _ = self._groups()
        n_class = ground_truth.n_classes
        # Detections kept by matching (at most maxDets[-1] per group), in rank order per group.
        t_key = table.det_image.astype(np.int64) * n_class + table.det_class
        t_rows = np.lexsort((table.det_rank, t_key))
        t_bounds_of = {}
        sorted_t_key = t_key[t_rows]
        for key in np.unique(sorted_t_key).tolist():
            lo, hi = np.searchsorted(sorted_t_key, [key, key + 1])
            t_bounds_of[key] = t_rows[lo:hi]
        sorted_gt_key = gt_key[gt_rows]
        # Who matched whom per lane: GT annotation id per (lane, table row), table row per (lane, GT row).
        ann_ids = np.asarray(ground_truth.annotation_id)
        det_match = np.zeros((table.n_lane, len(table.det_score)), dtype=np.float64)
        det_is_ignored = table.det_is_ignored  # unpacked once, read per image below
        det_match[table.match_lane, table.match_det] = ann_ids[table.match_gt]
        table_det_id = det_ids[np.asarray(table.det_order)]
        gt_match = np.zeros((n_area * n_thr, len(ground_truth)), dtype=np.float64)
        gt_match[table.match_lane, table.match_gt] = table_det_id[table.match_det]
        gt_ignored = self._gt_ignored(ground_truth, protocol)  # (n_area, n_gt)
        cat_ids = np.asarray(ground_truth.category_id)
        img_index = {int(i): k for k, i in enumerate(np.asarray(ground_truth.image_id).tolist())}
        cat_list = (
            [int(np.flatnonzero(cat_ids == c)[0]) if (cat_ids == c).any() else None for c in p.catIds]
            if p.useCats
            else [0]
        )
        has_det_key = set(np.unique(det_key).tolist())
        out: list = []
        for c_index, category in zip(range(len(cat_list)), cat_list, strict=True):
            cat_id = p.catIds[c_index] if p.useCats else -1
            for a, area in enumerate(p.areaRng):
                lanes = a * n_thr + np.arange(n_thr)
                for img_id in p.imgIds:
                    image = img_index.get(int(img_id))
                    if category is None or image is None:
                        out.append(None)
                        continue
                    key = image * n_class + category
                    lo, hi = np.searchsorted(sorted_gt_key, [key, key + 1])
                    g = gt_rows[lo:hi]
                    d = t_bounds_of.get(key, np.zeros(0, np.int64))
                    if not len(g) and key not in has_det_key:
                        out.append(None)
                        continue
                    ignore = gt_ignored[a, g].astype(np.int64)
                    g = g[np.argsort(ignore, kind="mergesort")]
                    out.append(
                        {
                            "image_id": int(img_id),
                            "category_id": int(cat_id),
                            "aRng": area,
                            "maxDet": max_det,
                            "dtIds": table_det_id[d].tolist(),
                            "gtIds": ann_ids[g].tolist(),
                            "dtMatches": det_match[np.ix_(lanes, d)],
                            "gtMatches": gt_match[np.ix_(lanes, g)],
                            "dtScores": table.det_score[d].tolist(),
                            "gtIgnore": gt_ignored[a, g].astype(np.int64),
                            "dtIgnore": det_is_ignored[np.ix_(lanes, d)],
                        }
                    )
        return out

    @staticmethod
    def _gt_ignored(ground_truth: Any, protocol: Any) -> np.ndarray:
        """Pycocotools' ``_ignore`` per area range: ``ignore`` (= iscrowd) or area outside."""
        return ground_truth_flags(ground_truth, protocol)[0]
