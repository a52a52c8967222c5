"""A drop-in replacement for ``pycocotools.cocoeval.COCOeval`` (bbox, segm and keypoints).

>>> from deteval.interop import COCOeval     # instead of pycocotools.cocoeval
>>> # E = COCOeval(coco_gt, coco_dt, "bbox"); E.evaluate(); E.accumulate(); E.summarize()

The numbers are pycocotools' bit for bit (protocol ``coco-pycocotools``: its ``ignore`` and
annotation-id-0 bugs included). Differences, on purpose:

* nothing is printed: ``summarize()`` returns the familiar 12 lines as text (and sets
  ``stats``); ``print(E.summarize())`` shows them;
* the caller's COCO objects are never modified;
* ``params.useCats = 0`` and keypoints are not supported (a clear error).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.evaluate import EvalResult, check_protocol, match, score
from deteval.geometry.keypoints import COCO_KEYPOINT_SIGMAS
from deteval.io import load_coco_dt, load_coco_gt
from deteval.protocol import COCO_RECALL_THRESHOLDS, get_protocol

__all__ = ["COCOeval", "Params"]


class Params:
    """pycocotools' ``Params`` for ``bbox`` / ``segm`` / ``keypoints`` (same names and defaults)."""

    def __init__(self, iouType: str = "segm"):  # noqa: N803 - pycocotools' name
        if iouType not in ("bbox", "segm", "keypoints"):
            raise ConfigError(f"iouType must be 'bbox', 'segm' or 'keypoints', found {iouType!r}")
        self.imgIds: list = []
        self.catIds: list = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = [1, 10, 100]
        self.areaRng = [[0 ** 2, 1e5 ** 2], [0 ** 2, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
        self.areaRngLbl = ["all", "small", "medium", "large"]
        self.useCats = 1
        self.iouType = iouType
        self.useSegm = None
        if iouType == "keypoints":  # pycocotools' setKpParams
            self.maxDets = [20]
            self.areaRng = [[0 ** 2, 1e5 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
            self.areaRngLbl = ["all", "medium", "large"]
            self.kpt_oks_sigmas = COCO_KEYPOINT_SIGMAS.copy()


def _dataset(coco: Any) -> Any:
    return coco.dataset if hasattr(coco, "dataset") else coco


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
        if cocoGt is not None:
            gt = _dataset(cocoGt)
            self.params.imgIds = sorted(img["id"] for img in gt.get("images", []))
            self.params.catIds = sorted(cat["id"] for cat in gt.get("categories", []))

    def _protocol(self):
        p = self.params
        if p.useCats != 1:
            raise ConfigError("params.useCats = 0 is not supported by deteval's COCOeval")
        if not np.array_equal(np.asarray(p.recThrs, dtype=float), COCO_RECALL_THRESHOLDS):
            raise ConfigError("params.recThrs other than np.linspace(0, 1, 101) are not supported")
        areas = tuple((str(name), float(lo), float(hi)) for name, (lo, hi) in zip(p.areaRngLbl, p.areaRng))
        return get_protocol("coco-pycocotools").replace(
            iou_type=p.iouType, iou_thresholds=tuple(float(t) for t in p.iouThrs),
            area_ranges=areas, max_dets=tuple(sorted(int(m) for m in p.maxDets)), mask_iou="raster",
            keypoint_sigmas=(tuple(float(s) for s in p.kpt_oks_sigmas) if p.iouType == "keypoints"
                             and not np.array_equal(p.kpt_oks_sigmas, COCO_KEYPOINT_SIGMAS) else None))

    def evaluate(self) -> None:
        """Match (pycocotools' ``evaluate``); ``accumulate`` then fills ``eval``."""
        p = self.params
        gt = dict(_dataset(self.cocoGt))
        img_ids = set(int(i) for i in np.unique(p.imgIds))
        cat_ids = set(int(c) for c in np.unique(p.catIds))
        gt["images"] = [im for im in gt["images"] if im["id"] in img_ids]
        gt["categories"] = [c for c in gt["categories"] if c["id"] in cat_ids]
        gt["annotations"] = [a for a in gt["annotations"]
                             if a["image_id"] in img_ids and a["category_id"] in cat_ids]
        dets = [d for d in _dataset(self.cocoDt)["annotations"]
                if d["image_id"] in img_ids and d["category_id"] in cat_ids]
        ground_truth = load_coco_gt(gt, name="cocoGt")
        detections = load_coco_dt(dets, ground_truth, name="cocoDt")
        protocol = self._protocol()
        check_protocol(protocol)
        # The core, not deteval.api.evaluate: like pycocotools, the drop-in emits no warnings
        # (they stay in ``self.result.warnings`` / ``.notes``).
        self.result = score(match(ground_truth, detections, protocol), ground_truth, protocol,
                            warnings=ground_truth.warnings + detections.warnings)

    def accumulate(self, p: Any = None) -> None:
        """Fill ``eval`` with pycocotools' arrays (-1 where undefined)."""
        if self.result is None:
            self.evaluate()
        r = self.result

        def minus_one(a: np.ndarray) -> np.ndarray:
            return np.where(np.isnan(a), -1.0, a)

        self.eval = {"params": self.params, "counts": list(r.precision.shape),
                     "precision": minus_one(r.precision), "recall": minus_one(r.recall),
                     "scores": minus_one(r.scores)}

    def summarize(self) -> str:
        """Set ``stats`` (12 values, -1 where undefined) and return pycocotools' 12 lines."""
        if not self.eval:
            self.accumulate()
        metrics = self.result.metrics
        values = [metrics[k] for k in metrics]
        self.stats = np.array([-1.0 if v != v else v for v in values])
        m = self.params.maxDets
        if self.params.iouType == "keypoints":  # pycocotools' _summarizeKps: maxDets 20 by value
            rows = [(title, kind, iou, area, 20) for title, kind in (("Average Precision", "(AP)"),
                                                                     ("Average Recall", "(AR)"))
                    for iou, area in ((None, "all"), (.5, "all"), (.75, "all"), (None, "medium"),
                                      (None, "large"))]
        else:
            rows = [("Average Precision", "(AP)", None, "all", 100), ("Average Precision", "(AP)", .5, "all", m[2]),
                    ("Average Precision", "(AP)", .75, "all", m[2]), ("Average Precision", "(AP)", None, "small", m[2]),
                    ("Average Precision", "(AP)", None, "medium", m[2]),
                    ("Average Precision", "(AP)", None, "large", m[2]),
                    ("Average Recall", "(AR)", None, "all", m[0]), ("Average Recall", "(AR)", None, "all", m[1]),
                    ("Average Recall", "(AR)", None, "all", m[2]), ("Average Recall", "(AR)", None, "small", m[2]),
                    ("Average Recall", "(AR)", None, "medium", m[2]), ("Average Recall", "(AR)", None, "large", m[2])]
        thr = self.params.iouThrs
        lines = []
        for (title, kind, iou, area, md), value in zip(rows, self.stats):
            iou_str = f"{thr[0]:0.2f}:{thr[-1]:0.2f}" if iou is None else f"{iou:0.2f}"
            lines.append(f" {title:<18} {kind} @[ IoU={iou_str:<9} | area={area:>6s} | "
                         f"maxDets={md:>3d} ] = {value:0.3f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summarize()
