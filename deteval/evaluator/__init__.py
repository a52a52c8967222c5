"""``Evaluator``: accumulate a detector's outputs batch by batch, score once (training loops).

The Evaluator takes what a training or validation loop has at hand -- per-image dicts of
``boxes``, ``scores``, ``labels`` (and ``masks``, ``iscrowd``, ``area``) as numpy arrays, Python
lists or torch tensors -- and gives the :class:`~deteval.evaluate.EvalResult` that
:func:`deteval.evaluate` gives on the same data, exactly.

Design: match each batch as it arrives
--------------------------------------
``update(preds, targets)`` receives the ground truth *and* the detections of its images
together, and matching is independent per image. So every batch is matched at once
(:func:`deteval.evaluate.match` on a small GroundTruth / Detections of its images) and only its
:class:`~deteval.evaluate.MatchTable` is kept, with the few ground-truth columns that scoring and
the result need (image ids, categories, boxes, areas, crowd flags). ``compute()`` maps each
batch's local image and category indices to the global ones, merges the tables
(:func:`~deteval.evaluate.merge_match_tables`) and accumulates once.

Why: a MatchTable keeps ``max(max_dets)`` detections per image and class and no geometry, so
masks never have to be stored (``segm``: the batch's masks are RLE-encoded with
``pycocotools.mask.encode``, matched, then dropped); ``compute()`` costs one accumulation, not a
full evaluation; and states of several processes (DDP ranks, :meth:`merge`, :meth:`sync`) are
small, picklable arrays that merge exactly. The matching is exact because it only ever needs
the ground truth of the detection's own image, which is in the same batch.

Identity and order
------------------
* Images are identified by ``image_id`` when the targets carry one (an int per target dict);
  otherwise they are numbered 0, 1, 2, ... in update order. One Evaluator uses one of the two
  for all its images; an image id seen twice is an error (its objects would count twice).
* The equivalent COCO data is: images with those ids, annotations and detections concatenated
  in update order (annotation ids 1, 2, ... in that order). ``compute()`` equals
  ``deteval.evaluate`` of that data. Under ``score_order: image_major`` (the COCO presets) the
  order of images across batches does not matter at all; under ``score_order: file`` (the VOC
  presets) ties in score are broken by that concatenation order, as the devkit does with the
  lines of its result files.
* ``cxcywh`` boxes are converted to corners in float64 (``x1 = cx - w / 2``); ``xyxy`` and
  ``xywh`` are kept as given, so each protocol does its reference arithmetic on them.
"""

from deteval.evaluator.batches import _Batch as _Batch
from deteval.evaluator.core import Evaluator
from deteval.evaluator.inputs import _to_numpy as _to_numpy

__all__ = ["Evaluator"]
