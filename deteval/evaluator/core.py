"""The ``Evaluator`` class: configuration, state (reset, merge, sync, pickling), update, compute.

Reading the per-image dicts is :mod:`deteval.evaluator.inputs`; matching a batch and merging the
batches' tables is :mod:`deteval.evaluator.batches` (see :mod:`deteval.evaluator` for the design).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from deteval.data import GroundTruth
from deteval.errors import ConfigError, InputError
from deteval.evaluate import EvalResult, check_protocol, inputs_summary, score
from deteval.evaluator.batches import _SOURCE, _BatchTables
from deteval.evaluator.inputs import _InputReader, _to_numpy
from deteval.protocol import Protocol, resolve_protocol

__all__ = ["Evaluator"]

_BOX_FORMATS = ("xyxy", "xywh", "cxcywh")
#: Rotated boxes (``iou_type="rotated"``): cx cy w h angle (radians), or 4 corners.
_ROTATED_FORMATS = ("xywhr", "polygon4")
_STATE_VERSION = 1


class Evaluator(_InputReader, _BatchTables):
    """Accumulate detections and ground truth batch by batch; score once with :meth:`compute`.

    Parameters
    ----------
    protocol : str, Protocol or path, default "coco"
        A preset name, a protocol YAML file or a :class:`~deteval.protocol.Protocol`.
    box_format : {"xyxy", "xywh", "cxcywh", "xywhr", "polygon4"}
        How ``boxes`` are given (torchmetrics' default is ``"xyxy"``). Rotated boxes
        (``iou_type="rotated"``): ``"xywhr"`` (n, 5) cx, cy, w, h, angle in radians (Ultralytics'
        ``xywhr``, hotcoco's ``obb``), or ``"polygon4"`` (n, 8) corners x1 y1 .. x4 y4.
    iou_type : {"bbox", "segm", "rotated"}, optional
        Boxes, ``masks`` (bool/uint8 (n, height, width) per image), or rotated boxes. Default:
        ``"rotated"`` under a rotated protocol (``dota``, ``ultralytics-obb``, ``coco-rotated``),
        else ``"bbox"``.
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
        iou_type: str | None = None,
        class_ids: Sequence[int] | None = None,
        class_names: Mapping[int, str] | Sequence[str] | None = None,
    ) -> None:
        resolved = resolve_protocol(protocol)
        if iou_type is None:  # the protocol's own when it scores rotated boxes, else boxes
            iou_type = "rotated" if resolved.iou_type == "rotated" else "bbox"
        if iou_type not in ("bbox", "segm", "rotated"):
            raise ConfigError(f"Evaluator: iou_type must be 'bbox', 'segm' or 'rotated', found {iou_type!r}")
        if resolved.iou_type != iou_type:
            resolved = resolved.replace(iou_type=iou_type)
        check_protocol(resolved)
        if resolved.class_agnostic:
            raise ConfigError(
                f"Evaluator: protocol {resolved.name!r} has class_agnostic: true, which the "
                f"Evaluator does not support yet; expected class_agnostic: false (pool the "
                f"labels yourself, or score the data with deteval.evaluate)"
            )
        allowed = _ROTATED_FORMATS if iou_type == "rotated" else _BOX_FORMATS
        if box_format not in allowed:
            raise ConfigError(
                f"Evaluator: box_format must be one of {allowed} for iou_type {iou_type!r}, found {box_format!r}"
            )
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
        gts = self._read_side(targets, batch, image_ids, "targets", segm)
        dts = self._read_side(preds, batch, image_ids, "preds", segm)
        sizes = self._image_sizes(gts, dts, batch, image_ids) if segm else None
        self._batches.append(self._match_batch(image_ids, gts, dts, sizes))
        if self._id_mode == "given":
            self._image_ids.update(int(i) for i in image_ids)
        self._n_images += len(targets)
        self._n_batches += 1

    # -- compute ----------------------------------------------------------------------------
    def ground_truth(self) -> GroundTruth:
        """The ground truth seen so far as one :class:`~deteval.data.GroundTruth` (no masks).

        Images sorted by id, annotations in update order with ids 1, 2, ...
        """
        return self._assemble()[0]

    def compute(self) -> EvalResult:
        """Score everything seen so far (the state is kept: call again after more updates).

        Returns
        -------
        EvalResult
            Equal to ``deteval.evaluate`` on the same data (see the module notes on order).
        """
        gt, table, n_det = self._assemble()
        inputs = inputs_summary(gt, names=(_SOURCE, _SOURCE), detections=n_det)
        return score(table, gt, self._protocol, inputs=inputs)

    def __repr__(self) -> str:
        return (
            f"Evaluator(protocol={self._protocol.name!r}, iou_type={self._protocol.iou_type!r}, "
            f"box_format={self._box_format!r}, images={self._n_images}, batches={self._n_batches})"
        )
