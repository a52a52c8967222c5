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

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import ConfigError, InputError
from deteval.evaluate import (
    EvalResult,
    MatchTable,
    check_protocol,
    match,
    merge_match_tables,
    score,
)
from deteval.protocol import Protocol, resolve_protocol

__all__ = ["Evaluator"]

_BOX_FORMATS = ("xyxy", "xywh", "cxcywh")
_BOX_LAYOUT = {"xyxy": "[x1, y1, x2, y2]", "xywh": "[x, y, w, h]", "cxcywh": "[cx, cy, w, h]"}
_STATE_VERSION = 1
_SOURCE = "<Evaluator>"


def _to_numpy(value: Any) -> np.ndarray:
    """A numpy array of ``value``; tensors through ``.detach().cpu().numpy()`` (no torch import)."""
    if all(hasattr(value, name) for name in ("detach", "cpu", "numpy")):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _shape(array: np.ndarray) -> str:
    return "(" + ", ".join(str(n) for n in array.shape) + (",)" if array.ndim == 1 else ")")


@dataclass(frozen=True, eq=False)
class _Batch:
    """What one matched batch keeps: its images, categories, ground truth columns and MatchTable.

    Image and category indices inside ``table`` and ``gt_image`` / ``gt_category`` refer to
    this batch's sorted ``image_id`` and ``category_id``; ``table.match_gt`` to its GT rows
    (update order) and ``table.det_order`` to its detections (update order).
    """

    image_id: np.ndarray
    image_height: np.ndarray
    image_width: np.ndarray
    category_id: np.ndarray
    gt_image: np.ndarray
    gt_category: np.ndarray
    gt_box: np.ndarray
    gt_area: np.ndarray
    gt_is_crowd: np.ndarray
    n_det: int
    table: MatchTable

    def with_image_offset(self, offset: int) -> _Batch:
        """The same batch with its (auto-numbered) image ids moved by ``offset``."""
        return _Batch(**{**self.__dict__, "image_id": self.image_id + offset})


class Evaluator:
    """Accumulate detections and ground truth batch by batch; score once with :meth:`compute`.

    Parameters
    ----------
    protocol : str, Protocol or path, default "coco"
        A preset name, a protocol YAML file or a :class:`~deteval.protocol.Protocol`.
    box_format : {"xyxy", "xywh", "cxcywh"}
        How ``boxes`` are given (torchmetrics' default is ``"xyxy"``).
    iou_type : {"bbox", "segm"}
        Boxes, or ``masks`` (bool/uint8 (n, height, width) per image).
    class_ids : sequence of int, optional
        The categories. Given: a label outside them is an error and a class without ground
        truth or detections is still listed. Default: the labels seen in targets and preds.
    class_names : mapping or sequence, optional
        ``{class_id: name}``, or names in the order of ``class_ids``; default ``str(id)``.

    Examples
    --------
    >>> import numpy as np
    >>> ev = Evaluator("voc2010", box_format="xyxy")
    >>> ev.update([{"boxes": [[0, 0, 10, 10]], "scores": [0.9], "labels": [1]}],
    ...           [{"boxes": [[0, 0, 10, 10]], "labels": [1]}])
    >>> ev.compute().metrics
    {'mAP': 1.0}
    """

    def __init__(
        self,
        protocol: Any = "coco",
        *,
        box_format: str = "xyxy",
        iou_type: str = "bbox",
        class_ids: Sequence[int] | None = None,
        class_names: Mapping[int, str] | Sequence[str] | None = None,
    ) -> None:
        resolved = resolve_protocol(protocol)
        if iou_type not in ("bbox", "segm"):
            raise ConfigError(f"Evaluator: iou_type must be 'bbox' or 'segm', found {iou_type!r}")
        if resolved.iou_type != iou_type:
            resolved = resolved.replace(iou_type=iou_type)
        check_protocol(resolved)
        if box_format not in _BOX_FORMATS:
            raise ConfigError(f"Evaluator: box_format must be one of {_BOX_FORMATS}, found {box_format!r}")
        self._protocol: Protocol = resolved
        self._box_format = box_format
        self._class_ids = None if class_ids is None else self._check_class_ids(class_ids)
        self._class_names = self._check_class_names(class_names, self._class_ids)
        self.reset()

    # -- configuration ----------------------------------------------------------------------
    @staticmethod
    def _check_class_ids(class_ids: Sequence[int]) -> np.ndarray:
        ids = _to_numpy(class_ids)
        if ids.ndim != 1 or not (
            np.issubdtype(ids.dtype, np.integer)
            or (
                np.issubdtype(ids.dtype, np.floating)
                and np.isfinite(ids).all()
                and (ids == np.round(ids)).all()
            )
        ):
            raise ConfigError(
                f"Evaluator: class_ids must be a sequence of integers, found "
                f"{np.asarray(class_ids).tolist()[:10]}"
            )
        ids = ids.astype(np.int64)
        if len(np.unique(ids)) != len(ids):
            raise ConfigError(f"Evaluator: class_ids must be unique, found {ids.tolist()[:20]}")
        return ids

    @staticmethod
    def _check_class_names(names: Any, class_ids: np.ndarray | None) -> dict:
        if names is None:
            return {}
        if isinstance(names, Mapping):
            return {int(k): str(v) for k, v in names.items()}
        names = list(names)
        if class_ids is None or len(names) != len(class_ids):
            raise ConfigError(
                f"Evaluator: class_names as a sequence must name each of class_ids in "
                f"order; expected {0 if class_ids is None else len(class_ids)} names "
                f"(give class_ids, or a mapping id -> name), found {len(names)}"
            )
        return {int(k): str(v) for k, v in zip(class_ids, names)}

    @property
    def protocol(self) -> Protocol:
        """The resolved protocol (``iou_type`` set)."""
        return self._protocol

    @property
    def n_images(self) -> int:
        """Images seen so far."""
        return self._n_images

    def _config(self) -> dict:
        return {
            "protocol": self._protocol.fingerprint(),
            "box_format": self._box_format,
            "class_ids": None if self._class_ids is None else self._class_ids.tolist(),
        }

    # -- state ------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every batch (the configuration stays)."""
        self._batches: list = []
        self._n_images = 0
        self._n_batches = 0
        self._image_ids: set = set()
        self._id_mode: str | None = None  # "given" or "auto", fixed by the first image

    def state_dict(self) -> dict:
        """The accumulated state as plain, picklable values (numpy arrays, ints, strings).

        ``load_state_dict`` on an Evaluator of the same configuration restores it; states of
        several processes combine with :meth:`merge` (or :meth:`sync`).
        """
        return {
            "version": _STATE_VERSION,
            "config": self._config(),
            "batches": list(self._batches),
            "n_images": self._n_images,
            "n_batches": self._n_batches,
            "id_mode": self._id_mode,
            "image_ids": sorted(self._image_ids) if self._id_mode == "given" else None,
        }

    def load_state_dict(self, state: Mapping) -> None:
        """Replace the state with ``state`` (from :meth:`state_dict`).

        Raises
        ------
        ConfigError
            A state of another version or configuration (protocol, box_format, class_ids).
        """
        if not isinstance(state, Mapping) or state.get("version") != _STATE_VERSION:
            raise ConfigError(
                f"Evaluator.load_state_dict: expected a state of version {_STATE_VERSION} "
                f"from Evaluator.state_dict(), found "
                f"{state.get('version') if isinstance(state, Mapping) else type(state).__name__}"
            )
        if state["config"] != self._config():
            raise ConfigError(
                f"Evaluator.load_state_dict: the state was saved with {state['config']}; "
                f"expected this Evaluator's {self._config()}"
            )
        self._batches = list(state["batches"])
        self._n_images = int(state["n_images"])
        self._n_batches = int(state["n_batches"])
        self._id_mode = state["id_mode"]
        self._image_ids = set(state["image_ids"] or ())

    def __getstate__(self) -> dict:
        return {
            "protocol": self._protocol,
            "box_format": self._box_format,
            "class_ids": self._class_ids,
            "class_names": self._class_names,
            "state": self.state_dict(),
        }

    def __setstate__(self, value: dict) -> None:
        self._protocol = value["protocol"]
        self._box_format = value["box_format"]
        self._class_ids = value["class_ids"]
        self._class_names = value["class_names"]
        self.reset()
        self.load_state_dict(value["state"])

    def _empty_like(self) -> Evaluator:
        other = Evaluator.__new__(Evaluator)
        other._protocol, other._box_format = self._protocol, self._box_format
        other._class_ids, other._class_names = self._class_ids, dict(self._class_names)
        other.reset()
        return other

    def merge(self, other: Evaluator) -> Evaluator:
        """Add ``other``'s batches to this Evaluator (``other`` is left unchanged); returns self.

        Auto-numbered images of ``other`` are numbered after this Evaluator's (as if its
        batches had been given after them); images with ids must be disjoint.

        Raises
        ------
        ConfigError
            Another protocol, box_format or class_ids; or one Evaluator numbering its images and
            the other using image ids.
        InputError
            An image id in both.
        """
        if not isinstance(other, Evaluator):
            raise ConfigError(f"Evaluator.merge: expected an Evaluator, found {type(other).__name__}")
        if other._config() != self._config():
            raise ConfigError(
                f"Evaluator.merge: the other Evaluator has {other._config()}; expected "
                f"the same configuration as this one, {self._config()}"
            )
        if other._id_mode is None:
            return self
        if self._id_mode is not None and other._id_mode != self._id_mode:
            raise ConfigError(
                "Evaluator.merge: one Evaluator numbers its images in update order and "
                "the other gives `image_id`s; expected the same kind of image identity"
            )
        if other._id_mode == "given":
            both = self._image_ids & other._image_ids
            if both:
                raise InputError(
                    f"Evaluator.merge: {len(both)} image id(s) in both Evaluators, e.g. "
                    f"{sorted(both)[:5]}; expected disjoint images (a distributed sampler "
                    f"that pads with repeated images counts them twice)"
                )
            batches = other._batches
            self._image_ids |= other._image_ids
        else:
            batches = [b.with_image_offset(self._n_images) for b in other._batches]
        self._batches.extend(batches)
        self._id_mode = other._id_mode
        self._n_images += other._n_images
        self._n_batches += other._n_batches
        return self

    def sync(self, gather: Callable[[Any], list] | None = None) -> Evaluator:
        """An Evaluator holding the states of every process (this one is left unchanged).

        Parameters
        ----------
        gather : callable, optional
            ``gather(obj) -> list``: every process's ``obj``, in rank order, on every process
            (``torch.distributed.all_gather_object``'s contract). Default:
            :func:`deteval.integrations.distributed.torch_all_gather` (needs an initialised
            ``torch.distributed`` process group; a single process gets itself).

        Returns
        -------
        Evaluator
            The union in rank order: its ``compute()`` is the single-process result on every rank.
        """
        if gather is None:
            from deteval.integrations.distributed import torch_all_gather

            gather = torch_all_gather
        states = gather(self.state_dict())
        merged = self._empty_like()
        for state in states:
            part = self._empty_like()
            part.load_state_dict(state)
            merged.merge(part)
        return merged

    # -- update -----------------------------------------------------------------------------
    def update(self, preds: Sequence[Mapping], targets: Sequence[Mapping]) -> None:
        """Add one batch: ``preds[i]`` and ``targets[i]`` are the outputs and objects of image i.

        Parameters
        ----------
        preds : sequence of dict
            ``boxes`` float (n_det, 4) in ``box_format``, ``scores`` float (n_det,), ``labels``
            int (n_det,); ``masks`` bool (n_det, height, width) for ``iou_type="segm"``.
        targets : sequence of dict
            ``boxes`` (n_gt, 4), ``labels`` (n_gt,); optional ``iscrowd`` (n_gt,) 0/1,
            ``area`` (n_gt,) (default: box w*h, or mask area for segm), ``masks`` (segm),
            ``image_id`` (int; else images are numbered in update order).

        Raises
        ------
        InputError
            Naming the batch, the image and the field: wrong shapes, NaN or inf, negative box
            sizes, non-integer labels, labels outside ``class_ids``, repeated image ids.
        """
        batch = self._n_batches
        if (
            not isinstance(preds, Sequence)
            or not isinstance(targets, Sequence)
            or isinstance(preds, (str, bytes))
            or isinstance(targets, (str, bytes))
        ):
            raise InputError(
                f"Evaluator.update: batch {batch}: expected preds and targets as lists of "
                f"per-image dicts, found {type(preds).__name__} and {type(targets).__name__}"
            )
        if len(preds) != len(targets):
            raise InputError(
                f"Evaluator.update: batch {batch}: preds has {len(preds)} images and targets "
                f"{len(targets)}; expected one dict per image in each"
            )
        if not len(targets):
            self._n_batches += 1
            return
        image_ids = self._batch_image_ids(preds, targets, batch)
        segm = self._protocol.iou_type == "segm"
        gts = [self._read_image(t, batch, i, image_ids[i], "targets", segm) for i, t in enumerate(targets)]
        dts = [self._read_image(p, batch, i, image_ids[i], "preds", segm) for i, p in enumerate(preds)]
        sizes = self._image_sizes(gts, dts, batch, image_ids) if segm else None
        self._batches.append(self._match_batch(image_ids, gts, dts, sizes))
        if self._id_mode == "given":
            self._image_ids.update(int(i) for i in image_ids)
        self._n_images += len(targets)
        self._n_batches += 1

    def _where(self, batch: int, side: str, index: int, image_id: int) -> str:
        return f"Evaluator.update: batch {batch}, {side}[{index}] (image_id={image_id})"

    def _batch_image_ids(self, preds: Sequence, targets: Sequence, batch: int) -> np.ndarray:
        """The batch's image ids: given by every target, or numbered on from the images seen."""
        for side, items in (("targets", targets), ("preds", preds)):
            for i, item in enumerate(items):
                if not isinstance(item, Mapping):
                    raise InputError(
                        f"Evaluator.update: batch {batch}, {side}[{i}]: expected a dict of "
                        f"arrays (boxes, labels, ...), found {type(item).__name__}"
                    )
        has_id = ["image_id" in t for t in targets]
        mode = "given" if any(has_id) else "auto"
        if any(has_id) and not all(has_id):
            missing = has_id.index(False)
            raise InputError(
                f"Evaluator.update: batch {batch}, targets[{missing}]: no `image_id` while "
                f"other targets of the batch have one; expected an image_id on every target "
                f"or on none"
            )
        if self._id_mode is not None and mode != self._id_mode:
            raise InputError(
                f"Evaluator.update: batch {batch}: targets {'with' if mode == 'given' else 'without'} "
                f"`image_id`, earlier batches {'without' if mode == 'given' else 'with'}; expected "
                f"image ids on every image or on none (then images are numbered in update order)"
            )
        if mode == "auto":
            self._id_mode = "auto"
            return np.arange(self._n_images, self._n_images + len(targets), dtype=np.int64)
        ids = []
        for i, t in enumerate(targets):
            value = _to_numpy(t["image_id"]).reshape(-1)
            if value.size != 1 or not np.issubdtype(value.dtype, np.integer):
                raise InputError(
                    f"Evaluator.update: batch {batch}, targets[{i}]: `image_id` is not one "
                    f"integer; expected an int, found {value.tolist()[:5]}"
                )
            pred_id = preds[i].get("image_id")
            if pred_id is not None and _to_numpy(pred_id).reshape(-1).tolist() != value.tolist():
                raise InputError(
                    f"Evaluator.update: batch {batch}, preds[{i}]: `image_id` "
                    f"{_to_numpy(pred_id).reshape(-1).tolist()} differs from targets[{i}]'s "
                    f"{value.tolist()}; expected the same image"
                )
            ids.append(int(value[0]))
        seen: set = set()
        for i, image_id in enumerate(ids):
            if image_id in self._image_ids or image_id in seen:
                raise InputError(
                    f"Evaluator.update: batch {batch}, targets[{i}]: image_id {image_id} was "
                    f"already given; expected each image once (its objects would count twice)"
                )
            seen.add(image_id)
        self._id_mode = "given"
        return np.array(ids, dtype=np.int64)

    def _read_image(
        self, item: Mapping, batch: int, index: int, image_id: int, side: str, segm: bool
    ) -> dict:
        """Validated columns of one image's dict (float64 boxes in the stored format)."""
        where = self._where(batch, side, index, image_id)
        is_pred = side == "preds"
        needed = ["labels"] + (["scores"] if is_pred else []) + (["masks"] if segm else ["boxes"])
        missing = [k for k in needed if k not in item]
        if missing:
            raise InputError(
                f"{where}: no `{missing[0]}`; expected keys {needed} (found {sorted(map(str, item))})"
            )
        labels = self._read_labels(item["labels"], where)
        n = len(labels)
        out: dict = {"labels": labels}
        if "boxes" in item or not segm:
            out["boxes"] = self._read_boxes(item["boxes"], n, where)
        if is_pred:
            out["scores"] = self._read_vector(item["scores"], n, where, "scores", "confidences")
        else:
            out.update(self._read_target_extras(item, n, where))
        if segm:
            out["masks"] = self._read_masks(item["masks"], n, where)
        return out

    def _read_labels(self, value: Any, where: str) -> np.ndarray:
        """One image's ``labels`` as int64 class ids, checked against ``class_ids`` when given."""
        labels = _to_numpy(value)
        if labels.size == 0:
            labels = labels.reshape(-1)
        if labels.ndim != 1:
            raise InputError(f"{where}: `labels` has shape {_shape(labels)}; expected (n,)")
        n = len(labels)
        if n and not np.issubdtype(labels.dtype, np.integer):
            ok = (
                np.issubdtype(labels.dtype, np.floating)
                and np.isfinite(labels).all()
                and (labels == np.round(labels)).all()
            )
            if not ok:
                bad = labels.tolist()[:5]
                raise InputError(f"{where}: `labels` are not integers; expected class ids, found {bad}")
        labels = labels.astype(np.int64)
        if self._class_ids is not None and n:
            unknown = np.flatnonzero(~np.isin(labels, self._class_ids))
            if len(unknown):
                raise InputError(
                    f"{where}: `labels` has {len(unknown)} value(s) not in class_ids, e.g. "
                    f"{sorted(set(labels[unknown].tolist()))[:5]} at positions "
                    f"{unknown[:5].tolist()}; expected one of {self._class_ids.tolist()[:20]}"
                )
        return labels

    def _read_target_extras(self, item: Mapping, n: int, where: str) -> dict:
        """A target's optional ``iscrowd`` (bool) and ``area`` (float64) columns, when given."""
        out: dict = {}
        if "iscrowd" in item:
            crowd = self._read_vector(item["iscrowd"], n, where, "iscrowd", "0 or 1 flags")
            bad = np.flatnonzero((crowd != 0) & (crowd != 1))
            if len(bad):
                raise InputError(
                    f"{where}: `iscrowd` at position {int(bad[0])} is {crowd[bad[0]]:g}; expected 0 or 1"
                )
            out["iscrowd"] = crowd.astype(bool)
        if "area" in item:
            area = self._read_vector(item["area"], n, where, "area", "areas in pixels")
            bad = np.flatnonzero(area < 0)
            if len(bad):
                raise InputError(
                    f"{where}: `area` at position {int(bad[0])} is {area[bad[0]]:g}; expected a number >= 0"
                )
            out["area"] = area
        return out

    def _read_vector(self, value: Any, n: int, where: str, field: str, what: str) -> np.ndarray:
        array = _to_numpy(value)
        if array.ndim == 0 or (array.size == 0 and n == 0):
            array = array.reshape(-1)
        if array.shape != (n,):
            raise InputError(
                f"{where}: `{field}` has shape {_shape(array)}; expected ({n},) {what}, one per label"
            )
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
            raise InputError(f"{where}: `{field}` has dtype {array.dtype}; expected numbers")
        array = array.astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(array))
        if len(bad):
            raise InputError(
                f"{where}: `{field}` at position {int(bad[0])} is {array[bad[0]]}; "
                f"expected finite {what} ({len(bad)} such value(s))"
            )
        return array

    def _read_boxes(self, value: Any, n: int, where: str) -> np.ndarray:
        layout = _BOX_LAYOUT[self._box_format]
        box = _to_numpy(value)
        if box.size == 0 and n == 0:
            box = box.reshape(0, 4)
        if box.shape != (n, 4):
            raise InputError(
                f"{where}: `boxes` has shape {_shape(box)}; expected ({n}, 4) "
                f"{layout} (box_format={self._box_format!r}), one per label"
            )
        if not np.issubdtype(box.dtype, np.number):
            raise InputError(f"{where}: `boxes` has dtype {box.dtype}; expected numbers")
        box = box.astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(box).all(axis=1))
        if len(bad):
            raise InputError(
                f"{where}: `boxes` row {int(bad[0])} is {box[bad[0]].tolist()}; expected "
                f"finite numbers {layout} ({len(bad)} such row(s))"
            )
        if self._box_format == "xyxy":
            size = box[:, 2:] - box[:, :2]
            expected = "x2 >= x1 and y2 >= y1"
        else:
            size = box[:, 2:]
            expected = "w >= 0 and h >= 0"
        bad = np.flatnonzero((size < 0).any(axis=1))
        if len(bad):
            raise InputError(
                f"{where}: `boxes` row {int(bad[0])} {box[bad[0]].tolist()} has a negative "
                f"width or height; expected {expected} ({len(bad)} such row(s))"
            )
        if self._box_format == "cxcywh":
            half = box[:, 2:] / 2
            box = np.concatenate([box[:, :2] - half, box[:, :2] + half], axis=1)
        return box

    def _read_masks(self, value: Any, n: int, where: str) -> list:
        """RLE dicts (pycocotools.mask.encode) of bool (n, height, width) masks."""
        from pycocotools import mask as mask_utils

        masks = _to_numpy(value)
        if masks.ndim != 3 or len(masks) != n:
            raise InputError(
                f"{where}: `masks` has shape {_shape(masks)}; expected ({n}, height, width) "
                f"binary masks, one per label"
            )
        if masks.dtype != bool:
            if not np.issubdtype(masks.dtype, np.number) or not np.isin(masks, (0, 1)).all():
                raise InputError(
                    f"{where}: `masks` has values other than 0 and 1 (dtype {masks.dtype}); "
                    f"expected binary masks"
                )
        if n == 0:
            return [masks.shape[1:]]
        encoded = mask_utils.encode(np.asfortranarray(masks.transpose(1, 2, 0).astype(np.uint8)))
        return [masks.shape[1:]] + [
            {"size": [int(r["size"][0]), int(r["size"][1])], "counts": r["counts"]} for r in encoded
        ]

    def _image_sizes(self, gts: list, dts: list, batch: int, image_ids: np.ndarray) -> np.ndarray:
        """(n_img, 2) height, width of each image from its masks (targets and preds must agree)."""
        sizes = np.full((len(gts), 2), np.nan)
        for i, (g, d) in enumerate(zip(gts, dts)):
            g_size, d_size = g["masks"][0], d["masks"][0]
            if tuple(g_size) != tuple(d_size) and len(g["masks"]) > 1 and len(d["masks"]) > 1:
                raise InputError(
                    f"{self._where(batch, 'preds', i, int(image_ids[i]))}: `masks` are "
                    f"{d_size[0]}x{d_size[1]}; expected the size of targets[{i}]'s masks, "
                    f"{g_size[0]}x{g_size[1]}"
                )
            size = g_size if len(g["masks"]) > 1 or len(d["masks"]) == 1 else d_size
            sizes[i] = size
        return sizes

    def _match_batch(self, image_ids: np.ndarray, gts: list, dts: list, sizes: np.ndarray | None) -> _Batch:
        """Build the batch's GroundTruth / Detections, match them, keep the table."""
        n_img = len(image_ids)
        img_order = np.argsort(image_ids, kind="stable")
        img_rank = np.empty(n_img, dtype=np.int64)
        img_rank[img_order] = np.arange(n_img)
        gt_count = np.array([len(g["labels"]) for g in gts], dtype=np.int64)
        dt_count = np.array([len(d["labels"]) for d in dts], dtype=np.int64)
        gt_labels = np.concatenate([g["labels"] for g in gts])
        dt_labels = np.concatenate([d["labels"] for d in dts])
        category_id = (
            self._class_ids
            if self._class_ids is not None
            else np.unique(np.concatenate([gt_labels, dt_labels]))
        )
        category_id = np.sort(category_id)
        native = "xywh" if self._box_format == "xywh" else "xyxy"
        segm = sizes is not None

        # Without masks (boxes only) the lists stay empty and the records carry no segmentation.
        gt_masks = [m for g in gts for m in g["masks"][1:]] if segm else []
        dt_masks = [m for d in dts for m in d["masks"][1:]] if segm else []
        if all("boxes" in g for g in gts):
            gt_box = np.concatenate([g["boxes"] for g in gts]).reshape(-1, 4)
        else:
            gt_box = self._mask_boxes(gt_masks, native)
        if all("boxes" in d for d in dts):
            dt_box = np.concatenate([d["boxes"] for d in dts]).reshape(-1, 4)
            dt_has_box = np.ones(len(dt_box), dtype=bool)
        else:
            dt_box = np.zeros((int(dt_count.sum()), 4))
            dt_has_box = np.zeros(len(dt_box), dtype=bool)
        gt_area = np.concatenate([self._areas(g, segm, native) for g in gts])
        gt_crowd = np.concatenate([g.get("iscrowd", np.zeros(len(g["labels"]), bool)) for g in gts])
        gt_image = np.repeat(img_rank, gt_count)
        gt_category = np.searchsorted(category_id, gt_labels)
        height = sizes[img_order, 0] if sizes is not None else np.full(n_img, np.nan)
        width = sizes[img_order, 1] if sizes is not None else np.full(n_img, np.nan)
        gt = GroundTruth(
            image_id=image_ids[img_order],
            image_name=tuple(str(i) for i in image_ids[img_order]),
            image_width=width,
            image_height=height,
            category_id=category_id,
            category_name=tuple(self._class_names.get(int(c), str(int(c))) for c in category_id),
            annotation_id=np.arange(1, len(gt_labels) + 1, dtype=np.int64),
            image=gt_image,
            category=gt_category,
            box=gt_box,
            area=gt_area,
            is_crowd=gt_crowd,
            is_difficult=np.zeros(len(gt_labels), bool),
            is_ignore=np.zeros(len(gt_labels), bool),
            box_format=native,
            segmentation=tuple(gt_masks) if segm else None,
            source=_SOURCE,
        )
        dt = Detections(
            image=np.repeat(img_rank, dt_count),
            category=np.searchsorted(category_id, dt_labels),
            box=dt_box,
            score=np.concatenate([d["scores"] for d in dts]),
            order=np.arange(len(dt_labels), dtype=np.int64),
            has_box=dt_has_box,
            box_format=native,
            segmentation=tuple(dt_masks) if segm else None,
            source=_SOURCE,
        )
        table = match(gt, dt, self._protocol)
        return _Batch(
            image_id=gt.image_id,
            image_height=height,
            image_width=width,
            category_id=category_id,
            gt_image=gt_image,
            gt_category=gt_category,
            gt_box=gt_box,
            gt_area=gt_area,
            gt_is_crowd=gt_crowd,
            n_det=len(dt),
            table=table,
        )

    @staticmethod
    def _mask_boxes(rles: list, native: str) -> np.ndarray:
        """Boxes of masks (pycocotools' toBbox, xywh) in ``native`` format."""
        from pycocotools import mask as mask_utils

        if not rles:
            return np.zeros((0, 4))
        return boxes_as(np.asarray(mask_utils.toBbox(rles), dtype=np.float64).reshape(-1, 4), "xywh", native)

    @staticmethod
    def _areas(gt: dict, segm: bool, native: str) -> np.ndarray:
        """The objects' ``area``: as given, else mask area (segm) or box w*h."""
        if "area" in gt:
            return gt["area"]
        if segm:
            from pycocotools import mask as mask_utils

            rles = gt["masks"][1:]
            return np.asarray(mask_utils.area(rles), dtype=np.float64) if rles else np.zeros(0)
        box = boxes_as(gt["boxes"], native, "xywh")
        return box[:, 2] * box[:, 3]

    # -- compute ----------------------------------------------------------------------------
    def ground_truth(self) -> GroundTruth:
        """The ground truth seen so far as one :class:`~deteval.data.GroundTruth` (no masks).

        Images sorted by id, annotations in update order with ids 1, 2, ...
        """
        return self._assemble()[0]

    def _categories(self) -> np.ndarray:
        if self._class_ids is not None:
            return np.sort(self._class_ids)
        if not self._batches:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate([b.category_id for b in self._batches]))

    def _assemble(self) -> tuple:
        """(GroundTruth, merged MatchTable, n_det) of all batches, in global indices."""
        category_id = self._categories()
        n_class = len(category_id)
        native = "xywh" if self._box_format == "xywh" else "xyxy"
        batches = self._batches
        if not batches:
            empty = np.zeros(0, dtype=np.int64)
            gt = GroundTruth(
                image_id=empty,
                image_name=(),
                image_width=np.zeros(0),
                image_height=np.zeros(0),
                category_id=category_id,
                category_name=self._names(category_id),
                annotation_id=empty,
                image=empty,
                category=empty,
                box=np.zeros((0, 4)),
                area=np.zeros(0),
                is_crowd=np.zeros(0, bool),
                is_difficult=np.zeros(0, bool),
                is_ignore=np.zeros(0, bool),
                box_format=native,
                source=_SOURCE,
            )
            dt = Detections(
                image=empty,
                category=empty,
                box=np.zeros((0, 4)),
                score=np.zeros(0),
                order=empty,
                has_box=np.zeros(0, bool),
                box_format=native,
                source=_SOURCE,
            )
            return gt, match(gt, dt, self._protocol.replace(iou_type="bbox")), 0
        cat = np.concatenate
        all_ids = cat([b.image_id for b in batches])
        img_order = np.argsort(all_ids, kind="stable")
        image_id = all_ids[img_order]
        height = cat([b.image_height for b in batches])[img_order]
        width = cat([b.image_width for b in batches])[img_order]
        tables, gt_image, gt_category = [], [], []
        gt_offset = det_offset = 0
        for b in batches:
            img_map = np.searchsorted(image_id, b.image_id)
            cat_map = np.searchsorted(category_id, b.category_id)
            t = b.table
            n_positive = np.zeros((n_class, t.n_positive.shape[1]), dtype=np.int64)
            n_positive[cat_map] = t.n_positive
            n_det_per_class = np.zeros(n_class, dtype=np.int64)
            n_det_per_class[cat_map] = t.n_det_per_class
            tables.append(
                MatchTable(
                    det_score=t.det_score,
                    det_class=cat_map[t.det_class],
                    det_image=img_map[t.det_image],
                    det_rank=t.det_rank,
                    det_order=t.det_order + det_offset,
                    match_lane=t.match_lane,
                    match_det=t.match_det,
                    match_gt=t.match_gt + gt_offset,
                    det_is_tp=t.det_is_tp,
                    det_is_ignored=t.det_is_ignored,
                    n_positive=n_positive,
                    n_det_per_class=n_det_per_class,
                    n_over_max_dets=t.n_over_max_dets,
                )
            )
            gt_image.append(img_map[b.gt_image])
            gt_category.append(cat_map[b.gt_category])
            gt_offset += len(b.gt_image)
            det_offset += b.n_det
        table = _canonical(merge_match_tables(tables))
        n_gt = gt_offset
        gt = GroundTruth(
            image_id=image_id,
            image_name=tuple(str(i) for i in image_id),
            image_width=width,
            image_height=height,
            category_id=category_id,
            category_name=self._names(category_id),
            annotation_id=np.arange(1, n_gt + 1, dtype=np.int64),
            image=cat(gt_image),
            category=cat(gt_category),
            box=cat([b.gt_box for b in batches]).reshape(-1, 4),
            area=cat([b.gt_area for b in batches]),
            is_crowd=cat([b.gt_is_crowd for b in batches]),
            is_difficult=np.zeros(n_gt, bool),
            is_ignore=np.zeros(n_gt, bool),
            box_format=native,
            source=_SOURCE,
        )
        return gt, table, det_offset

    def _names(self, category_id: np.ndarray) -> tuple:
        return tuple(self._class_names.get(int(c), str(int(c))) for c in category_id)

    def compute(self) -> EvalResult:
        """Score everything seen so far (the state is kept: call again after more updates).

        Returns
        -------
        EvalResult
            Equal to ``deteval.evaluate`` on the same data (see the module notes on order).
        """
        gt, table, n_det = self._assemble()
        inputs = {
            "gt": _SOURCE,
            "dt": _SOURCE,
            "images": gt.n_images,
            "gt_objects": len(gt),
            "detections": n_det,
        }
        return score(table, gt, self._protocol, inputs=inputs)

    def __repr__(self) -> str:
        return (
            f"Evaluator(protocol={self._protocol.name!r}, iou_type={self._protocol.iou_type!r}, "
            f"box_format={self._box_format!r}, images={self._n_images}, batches={self._n_batches})"
        )


def _canonical(table: MatchTable) -> MatchTable:
    """The table's detections in (image, class, rank) order, as one :func:`match` over all images."""
    order = np.lexsort((table.det_rank, table.det_class, table.det_image))
    if len(order) and (order == np.arange(len(order))).all():
        return table
    new_row = np.empty_like(order)
    new_row[order] = np.arange(len(order))
    match_det = new_row[table.match_det]
    m_order = np.lexsort((match_det, table.match_lane))
    return MatchTable(
        det_score=table.det_score[order],
        det_class=table.det_class[order],
        det_image=table.det_image[order],
        det_rank=table.det_rank[order],
        det_order=table.det_order[order],
        match_lane=table.match_lane[m_order],
        match_det=match_det[m_order],
        match_gt=table.match_gt[m_order],
        det_is_tp=table.det_is_tp[:, order],
        det_is_ignored=table.det_is_ignored[:, order],
        n_positive=table.n_positive,
        n_det_per_class=table.n_det_per_class,
        n_over_max_dets=table.n_over_max_dets,
    )
