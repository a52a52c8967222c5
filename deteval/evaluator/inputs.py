"""Reading what ``Evaluator.update`` is given: per-image dicts checked and turned into columns.

Each image's ``labels``, ``boxes``, ``scores``, ``iscrowd``, ``area`` and ``masks`` (numpy arrays,
lists or torch tensors) are validated -- shapes, dtypes, finite values, box sizes, labels within
``class_ids`` -- and returned as float64 / int64 arrays (masks RLE-encoded). Every error names
the batch, the side (``preds`` / ``targets``), the image and the field. The batch's image ids
(given, or numbered in update order) are settled here too.

The methods live on :class:`_InputReader`, a mixin of :class:`~deteval.evaluator.Evaluator`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval.errors import InputError

_NONE = np.empty(0, dtype=np.intp)  # no bad position (skips np.flatnonzero on valid input)

_BOX_LAYOUT = {
    "xyxy": "[x1, y1, x2, y2]",
    "xywh": "[x, y, w, h]",
    "cxcywh": "[cx, cy, w, h]",
    "xywhr": "[cx, cy, w, h, angle in radians]",
    "polygon4": "[x1, y1, x2, y2, x3, y3, x4, y4]",
}
_BOX_WIDTH = {"xywhr": 5, "polygon4": 8}
_EXTRAS = ("iscrowd", "area")
#: :meth:`_InputReader._read_batch`: the dtype kinds it takes per field (the image-by-image reader
#: takes a few more, e.g. integral float labels) and the dtypes it converts them to.
_KINDS = {"boxes": "iuf", "scores": "iufb", "iscrowd": "iufb", "area": "iufb"}
_DTYPES = {
    "labels": np.int64,
    "boxes": np.float64,
    "scores": np.float64,
    "iscrowd": np.float64,
    "area": np.float64,
}


def _to_numpy(value: Any) -> np.ndarray:
    """A numpy array of ``value``; tensors through ``.detach().cpu().numpy()`` (no torch import)."""
    if type(value) is np.ndarray:
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu") and hasattr(value, "numpy"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _is_known(labels: np.ndarray, class_ids: np.ndarray) -> np.ndarray:
    """Bool per label: in ``class_ids`` (``np.isin``'s answer without its per-call set-up)."""
    known = np.sort(class_ids)
    if len(known) == 0:
        return np.zeros(len(labels), dtype=bool)
    pos = np.minimum(np.searchsorted(known, labels), len(known) - 1)
    return known[pos] == labels


def _final_arrays(item: Mapping, needed: tuple) -> dict | None:
    """One image's ``needed`` fields as arrays already of their final shape and of a plain dtype.

    None for anything else (a missing key, a 0-d value, float labels, ...): the image-by-image
    reader decides. An image without objects gives ``{}``, whatever its empty lists' shapes.
    """
    try:
        arrays = [_to_numpy(item[key]) for key in needed]
    except (KeyError, TypeError, ValueError):
        return None
    labels = arrays[0]
    if labels.ndim != 1:
        return None
    n = len(labels)
    if n and labels.dtype.kind not in "iu":
        return None
    for key, array in zip(needed[1:], arrays[1:]):
        if array.dtype.kind not in _KINDS[key]:
            return None
        if array.shape != ((n, 4) if key == "boxes" else (n,)) and (n or array.size):
            return None
    return dict(zip(needed, arrays)) if n else {}


def _shape(array: np.ndarray) -> str:
    return "(" + ", ".join(str(n) for n in array.shape) + (",)" if array.ndim == 1 else ")")


class _InputReader:
    """``Evaluator.update``'s reading and checking of one batch's per-image dicts (a mixin)."""

    _box_format: str
    _class_ids: np.ndarray | None
    _id_mode: str | None
    _n_images: int
    _image_ids: set

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
        ids = [self._given_image_id(preds[i], t, i, batch) for i, t in enumerate(targets)]
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

    def _given_image_id(self, pred: Mapping, target: Mapping, i: int, batch: int) -> int:
        """Target i's ``image_id`` (one 64-bit integer; its pred's, when given, the same)."""
        given, pred_id = target["image_id"], pred.get("image_id")
        is_plain = type(given) is int and -(2**63) <= given < 2**63
        if is_plain and (pred_id is None or (type(pred_id) is int and pred_id == given)):
            return given  # plain ints (the same on the pred, or none there): no numpy
        value = _to_numpy(given).reshape(-1)
        if value.size != 1 or not np.issubdtype(value.dtype, np.integer):
            raise InputError(
                f"Evaluator.update: batch {batch}, targets[{i}]: `image_id` is not one "
                f"integer; expected an int, found {value.tolist()[:5]}"
            )
        if not -(2**63) <= int(value[0]) < 2**63:  # a uint64 above int64 (the ids' dtype)
            raise InputError(
                f"Evaluator.update: batch {batch}, targets[{i}]: `image_id` is not one 64-bit "
                f"integer; expected an int from -2**63 to 2**63 - 1, found {int(value[0])}"
            )
        if pred_id is not None and _to_numpy(pred_id).reshape(-1).tolist() != value.tolist():
            raise InputError(
                f"Evaluator.update: batch {batch}, preds[{i}]: `image_id` "
                f"{_to_numpy(pred_id).reshape(-1).tolist()} differs from targets[{i}]'s "
                f"{value.tolist()}; expected the same image"
            )
        return int(value[0])

    def _read_side(
        self, items: Sequence, batch: int, image_ids: np.ndarray, side: str, segm: bool
    ) -> list[dict]:
        """Every image of one side of a batch: :meth:`_read_batch`, else :meth:`_read_image` each."""
        read = None if segm else self._read_batch(items, side)
        if read is None:  # masks, rotated boxes, anything unusual: image by image, errors named
            read = [
                self._read_image(item, batch, i, image_ids[i], side, segm) for i, item in enumerate(items)
            ]
        return read

    def _read_batch(self, items: Sequence, side: str) -> list[dict] | None:
        """:meth:`_read_image` of every image at once, or None to have them read one by one.

        The common case of a training loop -- boxes (``xyxy``, ``xywh``, ``cxcywh``), integer
        labels, numeric scores, ``iscrowd``/``area`` on all targets or none, each already of its
        final shape -- is checked on the batch's concatenated columns: a few numpy calls per
        batch instead of a dozen per image. The columns are converted as :meth:`_read_image`
        converts them (``astype``'s unsafe casts, the same values), and each image's dict holds
        views of them. Anything else, including any value the checks refuse, returns None: the
        image-by-image reader then gives the result or the error naming the image and field.
        """
        if self._box_format in _BOX_WIDTH:  # rotated boxes: image by image
            return None
        is_pred = side == "preds"
        extras = () if is_pred else tuple(k for k in _EXTRAS if k in items[0])
        needed = ("labels", "boxes", "scores") if is_pred else ("labels", "boxes", *extras)
        columns: dict[str, list] = {key: [] for key in needed}
        counts = []
        for item in items:
            if not isinstance(item, Mapping) or (
                not is_pred and any((k in item) != (k in extras) for k in _EXTRAS)
            ):
                return None
            arrays = _final_arrays(item, needed)
            if arrays is None:
                return None
            for key, array in arrays.items():
                columns[key].append(array)
            counts.append(len(arrays["labels"]) if arrays else 0)
        concatenated = {
            key: np.concatenate(arrays, dtype=_DTYPES[key], casting="unsafe")
            if arrays
            else np.zeros((0, 4) if key == "boxes" else 0, dtype=_DTYPES[key])
            for key, arrays in columns.items()
        }
        if not self._batch_values_are_valid(concatenated):
            return None
        box = concatenated["boxes"]
        if self._box_format == "cxcywh":
            half = box[:, 2:] / 2
            concatenated["boxes"] = np.concatenate([box[:, :2] - half, box[:, :2] + half], axis=1)
        if "iscrowd" in concatenated:
            concatenated["iscrowd"] = concatenated["iscrowd"].astype(bool)
        bounds = np.cumsum([0, *counts]).tolist()
        return [
            {key: column[start:stop] for key, column in concatenated.items()}
            for start, stop in zip(bounds[:-1], bounds[1:])
        ]

    def _batch_values_are_valid(self, columns: dict) -> bool:
        """The value checks of :meth:`_read_image` on a batch's concatenated columns."""
        labels, box = columns["labels"], columns["boxes"]
        if self._class_ids is not None and len(labels) and not _is_known(labels, self._class_ids).all():
            return False
        if not np.isfinite(box).all():
            return False
        size = box[:, 2:] - box[:, :2] if self._box_format == "xyxy" else box[:, 2:4]
        if (size < 0).any():
            return False
        for key in ("scores", "iscrowd", "area"):
            if key in columns and not np.isfinite(columns[key]).all():
                return False
        if "iscrowd" in columns and ((columns["iscrowd"] != 0) & (columns["iscrowd"] != 1)).any():
            return False
        return "area" not in columns or not (columns["area"] < 0).any()

    def _read_labels(self, value: Any, where: str) -> np.ndarray:
        """One image's ``labels`` as int64 class ids, checked against ``class_ids`` when given."""
        labels = _to_numpy(value)
        if labels.size == 0:
            labels = labels.reshape(-1)
        if labels.ndim != 1:
            raise InputError(f"{where}: `labels` has shape {_shape(labels)}; expected (n,)")
        n = len(labels)
        if n and labels.dtype.kind not in "ium":  # np.issubdtype(dtype, np.integer), cheaper
            ok = labels.dtype.kind == "f" and np.isfinite(labels).all() and (labels == np.round(labels)).all()
            if not ok:
                bad = labels.tolist()[:5]
                raise InputError(f"{where}: `labels` are not integers; expected class ids, found {bad}")
        labels = labels.astype(np.int64)
        if self._class_ids is not None and n:
            is_known = _is_known(labels, self._class_ids)
            unknown = np.flatnonzero(~is_known) if not is_known.all() else _NONE
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
        if array.dtype.kind not in "iufcmb":  # np.number (timedelta64 is one) or bool
            raise InputError(f"{where}: `{field}` has dtype {array.dtype}; expected numbers")
        array = array.astype(np.float64)
        is_finite = np.isfinite(array)
        bad = np.flatnonzero(~is_finite) if not is_finite.all() else _NONE
        if len(bad):
            raise InputError(
                f"{where}: `{field}` at position {int(bad[0])} is {array[bad[0]]}; "
                f"expected finite {what} ({len(bad)} such value(s))"
            )
        return array

    def _read_boxes(self, value: Any, n: int, where: str) -> np.ndarray:
        layout = _BOX_LAYOUT[self._box_format]
        width = _BOX_WIDTH.get(self._box_format, 4)
        box = _to_numpy(value)
        if box.size == 0 and n == 0:
            box = box.reshape(0, width)
        if box.shape != (n, width):
            raise InputError(
                f"{where}: `boxes` has shape {_shape(box)}; expected ({n}, {width}) "
                f"{layout} (box_format={self._box_format!r}), one per label"
            )
        if box.dtype.kind not in "iufcm":  # np.issubdtype(dtype, np.number), cheaper
            raise InputError(f"{where}: `boxes` has dtype {box.dtype}; expected numbers")
        box = box.astype(np.float64)
        is_finite = np.isfinite(box)
        bad = np.flatnonzero(~is_finite.all(axis=1)) if not is_finite.all() else _NONE
        if len(bad):
            raise InputError(
                f"{where}: `boxes` row {int(bad[0])} is {box[bad[0]].tolist()}; expected "
                f"finite numbers {layout} ({len(bad)} such row(s))"
            )
        if self._box_format == "polygon4":
            return box  # corners: any quadrilateral (a self-intersecting one is refused when scored)
        if self._box_format == "xyxy":
            size = box[:, 2:] - box[:, :2]
            expected = "x2 >= x1 and y2 >= y1"
        else:
            size = box[:, 2:4]
            expected = "w >= 0 and h >= 0"
        is_negative = size < 0
        bad = np.flatnonzero(is_negative.any(axis=1)) if is_negative.any() else _NONE
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
