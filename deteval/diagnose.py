"""``analyze``: why the number is what it is (TIDE errors, the AP decomposition, confusion).

Beyond AP, when asked for: the calibration of the confidences (D-ECE), optimal LRP, the mean
IoU of the true positives and faster-coco-eval's precision/recall AUC (:mod:`deteval.beyond`).

Values in, values out; :func:`deteval.report.format_analysis_table` and
:func:`deteval.report.format_analysis_markdown` render the ``to_dict()`` document.
"""

from __future__ import annotations

from deteval._values import frozen
from deteval.beyond import BeyondAP, beyond_ap
from deteval.confusion import ConfusionMatrix, confusion_matrix
from deteval.data import Detections, GroundTruth
from deteval.decomposition import Decomposition, image_pairs
from deteval.decomposition import decompose as decompose_classes
from deteval.openimages import refuse_unapplied_label_rules
from deteval.pooling import pooled_for
from deteval.protocol import Protocol, resolve_protocol
from deteval.tide import TideErrors, tide_errors

__all__ = ["AnalysisResult", "analyze"]


@frozen(eq=False)
class AnalysisResult:
    """What :func:`analyze` found; a part is None when it was not asked for.

    ``decomposition_matched``: the decomposition's ``matched`` variant (the protocol's one-to-one
    matching), beside the documented one, only when asked for.
    """

    errors: TideErrors | None
    decomposition: Decomposition | None
    confusion: ConfusionMatrix | None
    decomposition_matched: Decomposition | None = None
    beyond: BeyondAP | None = None

    def to_dict(self, *, arrays: bool = False) -> dict:
        """``{"errors": ..., "decomposition": ..., "confusion": ...}`` (the parts asked for).

        ``"decomposition_matched"`` follows ``"decomposition"`` when it was asked for.
        ``arrays``: the decomposition's curves as float64 arrays (NaN kept) instead of lists,
        for :func:`deteval.report.dumps_analysis`, which writes them as the lists would be.
        """
        out = {}
        if self.errors is not None:
            out["errors"] = self.errors.to_dict()
        if self.decomposition is not None:
            out["decomposition"] = self.decomposition.to_dict(arrays=arrays)
        if self.decomposition_matched is not None:
            out["decomposition_matched"] = self.decomposition_matched.to_dict(arrays=arrays)
        if self.confusion is not None:
            out["confusion"] = self.confusion.to_dict()
        if self.beyond is not None:
            out.update(self.beyond.to_dict())
        return out


def analyze(
    gt: GroundTruth,
    dt: Detections,
    protocol: str | Protocol = "coco",
    *,
    errors: bool = True,
    decompose: bool = True,
    confusion: bool = True,
    confidence: float = 0.5,
    iou: float = 0.5,
    tide_mode: str = "tidecv",
    background: float = 0.1,
    decompose_matched: bool = False,
    beyond: dict | None = None,
) -> AnalysisResult:
    """TIDE error types, the AP decomposition and the confusion matrix of one detector.

    Parameters
    ----------
    gt : GroundTruth
    dt : Detections
    protocol : str or Protocol
    errors, decompose, confusion : bool
        Which parts to compute.
    confidence : float
        The confusion matrix's score cut.
    iou : float
        The IoU threshold of all three parts (TIDE's foreground threshold).
    tide_mode : {"tidecv", "protocol"}
    background : float
        TIDE's background threshold.
    decompose_matched : bool
        Also the decomposition's ``matched`` variant (:func:`deteval.decomposition.matched_assignment`).
    beyond : dict, optional
        Keyword arguments of :func:`deteval.beyond.beyond_ap` (which of calibration, LRP, mean
        true-positive IoU and mAUC, and their options); its ``iou`` is this ``iou``. None: none.

    Returns
    -------
    AnalysisResult

    Examples
    --------
    >>> from deteval.io import load_detections, load_ground_truth
    >>> g = load_ground_truth({"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
    ...     "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]})
    >>> d = load_detections([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": .9}], g)
    >>> sorted(analyze(g, d).to_dict())
    ['confusion', 'decomposition', 'errors']
    """
    protocol = resolve_protocol(protocol)
    refuse_unapplied_label_rules(gt, protocol)  # openimages-challenge: never the unexpanded inputs
    gt, dt = pooled_for(gt, dt, protocol)  # class_agnostic: one class for all three parts
    # The box IoU of every same-image pair, measured once for the three parts (each selects
    # the pairs it needs; the same numbers as measuring them separately).
    pairs = image_pairs(gt, dt, convention=protocol.box_convention) if protocol.iou_type == "bbox" else None
    return AnalysisResult(
        errors=tide_errors(
            gt, dt, protocol, mode=tide_mode, foreground=iou, background=background, pairs=pairs
        )
        if errors
        else None,
        decomposition=decompose_classes(gt, dt, protocol, iou_threshold=iou, pairs=pairs)
        if decompose
        else None,
        confusion=confusion_matrix(gt, dt, protocol, iou_threshold=iou, confidence=confidence, pairs=pairs)
        if confusion
        else None,
        decomposition_matched=decompose_classes(gt, dt, protocol, iou_threshold=iou, variant="matched")
        if decompose_matched
        else None,
        beyond=beyond_ap(gt, dt, protocol, iou=iou, **beyond) if beyond else None,
    )
