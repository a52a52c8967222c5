r"""The error browser of the HTML report: the images that cost the most AP, with their boxes drawn.

:func:`build_gallery` picks the images (:meth:`deteval.per_image.PerImage.ranking`: largest AP
gain first, images without errors left out), collects every box of each (ground truth and
detections, with their outcome at one IoU threshold: :func:`deteval.per_image.explained_matches`)
and, when given a folder of images, reads, downscales and re-encodes each picture as JPEG.
:func:`gallery_section` renders it as the report's ``#gallery`` section.

Decisions
---------
- **Boxes are SVG over the picture, not pixels baked into it.** The page's filters (class, error
  type, confidence) then hide and show boxes without a second copy of the picture; labels stay
  sharp at every zoom; a box costs ~150 bytes instead of a re-encoded picture per filter; and
  a report without pictures draws the same boxes on a blank canvas of the image's size. Pillow
  only decodes, downscales (longest side ``longest_side`` px) and encodes the pictures (JPEG,
  ``quality``).
- **A size budget, kept:** at most ``max_images`` images and ``max_bytes`` bytes of HTML for the
  whole section (pictures, boxes, tables). Cards are added in ranking order; a card whose picture
  would overflow the budget is shown without it, and when not even that fits the gallery stops;
  either way the page says so (:attr:`Gallery.notes`).
- **Bad image files never stop the report:** a missing file, a folder, a FIFO or a device, a
  file larger than ``max_file_bytes``, a name leading outside the images folder, a file Pillow
  cannot decode (truncated, not an image) or whose header claims more than ``max_pixels`` pixels
  (a decompression bomb, refused before decoding) gets a note on its card and the boxes on a
  blank canvas. Files are read by :func:`deteval.io._text.read_bytes` (regular files only, size
  capped, nothing blocks).
"""

from __future__ import annotations

import io
import math
import os
import warnings
from typing import Any

import numpy as np

from deteval._safe_read import read_bytes
from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import ConfigError, InputError
from deteval.evaluate import EvalResult, ground_truth_flags
from deteval.per_image import ERROR_WORDS, explained_matches, per_image
from deteval.plot._gallery_html import gallery_section, label_errors_section
from deteval.plot._gallery_values import (
    _EXTENSIONS,
    MAX_BYTES,
    MAX_FILE_BYTES,
    MAX_IMAGES,
    MAX_PIXELS,
    MIN_BYTES,
    OUTCOME_COLOURS,
    Gallery,
    GalleryBox,
    GalleryImage,
)

__all__ = [
    "Gallery",
    "GalleryImage",
    "GalleryBox",
    "build_gallery",
    "gallery_section",
    "OUTCOME_COLOURS",
    "MAX_IMAGES",
    "MAX_BYTES",
    "label_errors_section",
]


class _Unusable(Exception):
    """An image file that cannot be shown; the message says why."""


def _picture(data: bytes, *, longest_side: int, quality: int, max_pixels: int) -> tuple[bytes, tuple, tuple]:
    """JPEG bytes downscaled to ``longest_side``, its size, and the original size."""
    from PIL import Image, UnidentifiedImageError

    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as im:
                width, height = im.size
                if width * height > max_pixels:
                    raise _Unusable(
                        f"{width} x {height} pixels in its header, more than the {max_pixels} "
                        "decoded at most (a decompression bomb?); not decoded"
                    )
                im.draft("RGB", (longest_side, longest_side))  # JPEG: decode at a reduced scale
                rgb = im.convert("RGB")
        except UnidentifiedImageError:
            raise _Unusable("not an image Pillow can read") from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise _Unusable(f"refused by Pillow as a decompression bomb ({exc})") from None
        except (OSError, ValueError, SyntaxError, EOFError) as exc:
            raise _Unusable(f"cannot be decoded ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - Image.open patched by another library (Ultralytics
            # replaces it with a wrapper that, on a file Pillow cannot identify, tries to install a
            # HEIF plugin and raises ModuleNotFoundError): still one image the report cannot show
            cause: BaseException | None = exc
            while cause is not None and not isinstance(cause, UnidentifiedImageError):
                cause = cause.__context__
            if cause is not None:
                raise _Unusable("not an image Pillow can read") from None
            raise _Unusable(f"cannot be decoded ({type(exc).__name__}: {exc})") from None
    rgb.thumbnail((longest_side, longest_side), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    rgb.save(out, "JPEG", quality=quality, optimize=True)
    return out.getvalue(), rgb.size, (width, height)


def _image_path(root: str, name: str) -> str:
    """``root/name`` when ``name`` stays inside ``root``; else :class:`_Unusable`."""
    if not name:
        raise _Unusable("the ground truth gives no file name for this image")
    if os.path.isabs(name) or "\x00" in name:
        raise _Unusable(f"file name {name!r} is not relative to the images folder; not read")
    path = os.path.normpath(os.path.join(root, name))
    base = os.path.normpath(root)
    if os.path.commonpath([os.path.abspath(path), os.path.abspath(base)]) != os.path.abspath(base):
        raise _Unusable(f"file name {name!r} leads outside the images folder {root}; not read")
    return path


def _load_picture(
    root: str, name: str, *, longest_side: int, quality: int, max_pixels: int, max_file_bytes: int
) -> tuple[bytes, tuple, tuple]:
    path = _image_path(root, name)
    if not os.path.splitext(name)[1] and not os.path.lexists(path):  # VOC ids: 000005 -> 000005.jpg
        path = next((path + ext for ext in _EXTENSIONS if os.path.lexists(path + ext)), path)
    try:
        data = read_bytes(path, what="an image file", limit=max_file_bytes)
    except InputError as exc:
        raise _Unusable(str(exc)) from None
    try:
        return _picture(data, longest_side=longest_side, quality=quality, max_pixels=max_pixels)
    except _Unusable as exc:
        raise _Unusable(f"{path}: {exc}") from None


def _picture_for(root: str, name: str, gt_size: tuple, options: dict) -> tuple:
    """(picture, its size, the canvas size or None, note) of one image; never raises."""
    try:
        picture, picture_size, original = _load_picture(root, name, **options)
    except _Unusable as exc:
        return None, None, None, str(exc)
    gw, gh = gt_size
    if gw == gw and gh == gh and (gw, gh) != (float(original[0]), float(original[1])):
        note = (
            f"the picture is {original[0]} x {original[1]} pixels, the ground truth says "
            f"{gw:g} x {gh:g}; boxes are drawn in the ground truth's pixels"
        )
        return picture, picture_size, None, note
    return picture, picture_size, (float(original[0]), float(original[1])), ""


def _number(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def build_gallery(
    result: EvalResult,
    gt: GroundTruth,
    dt: Detections,
    *,
    images: os.PathLike | str | None = None,
    label: str | None = None,
    iou_threshold: float | None = None,
    max_images: int = MAX_IMAGES,
    max_bytes: int = MAX_BYTES,
    longest_side: int = 640,
    quality: int = 80,
    max_pixels: int = MAX_PIXELS,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> Gallery:
    """The images that cost the most AP, with every box and (given a folder) their pictures.

    Parameters
    ----------
    result : EvalResult
    gt, dt : GroundTruth, Detections
        The values ``result`` was scored from.
    images : path, optional
        The folder the ground truth's file names are relative to. None: no pictures (the boxes
        are drawn on a blank canvas of the image's size).
    label : str, optional
        What the gallery shows (default: the protocol's name).
    iou_threshold : float, optional
        The outcomes' threshold (default 0.5 if the protocol has it, else its first).
    max_images : int
        Images shown at most (the largest AP gains).
    max_bytes : int
        Bytes of HTML the whole section takes at most (:func:`gallery_section` keeps to it).
    longest_side : int
        Pictures are downscaled to this many pixels on their longest side.
    quality : int
        JPEG quality (1-95).
    max_pixels, max_file_bytes : int
        Larger pictures (by their header) and files are not decoded / read; a note says so.

    Returns
    -------
    Gallery

    Raises
    ------
    ConfigError
        A budget that is not positive (``max_bytes``: below :data:`MIN_BYTES`), a quality outside 1-95, or ``images`` not a folder.

    Examples
    --------
    >>> import deteval
    >>> from deteval.io import load_detections, load_ground_truth
    >>> gt = load_ground_truth({"images": [{"id": 1, "width": 64, "height": 48}],
    ...     "categories": [{"id": 1, "name": "cat"}],
    ...     "annotations": [{"id": 5, "image_id": 1, "category_id": 1, "bbox": [4, 4, 20, 20],
    ...                      "area": 400, "iscrowd": 0}]})
    >>> dt = load_detections([{"image_id": 1, "category_id": 1, "bbox": [40, 4, 20, 20], "score": .9}], gt)
    >>> g = build_gallery(deteval.evaluate(gt, dt, "coco"), gt, dt)
    >>> [(b.kind, b.outcome, b.error) for b in g.images[0].boxes]
    [('gt', 'fn', 'miss'), ('det', 'fp', 'bkg')]
    """
    if max_images < 1 or max_bytes < 1 or longest_side < 1:
        raise ConfigError(
            f"gallery: expected positive max_images, max_bytes and longest_side, found "
            f"{max_images}, {max_bytes}, {longest_side}"
        )
    if max_bytes < MIN_BYTES:
        raise ConfigError(
            f"gallery: max_bytes: expected at least {MIN_BYTES} (the section's header and notes), "
            f"found {max_bytes}"
        )
    if not 1 <= quality <= 95:
        raise ConfigError(f"gallery: quality: expected 1 to 95 (JPEG), found {quality}")
    root = None if images is None else os.fspath(images)
    if root is not None and not os.path.isdir(root):
        raise ConfigError(f"--images {root}: not a folder; expected the folder of the ground truth's images")
    if root is not None:
        import PIL  # noqa: F401  (a clear error now, not one per image)
    found = per_image(result, gt, dt, iou_threshold=iou_threshold)
    matches = explained_matches(result, gt, dt, iou_threshold=found.iou_threshold)
    boxes = _boxes_by_image(result, gt, matches)
    has_errors = (found.fp + found.fn) > 0
    order = [int(i) for i in found.ranking() if has_errors[i]]
    notes = []
    if len(order) > max_images:
        notes.append(
            f"{len(order)} images have errors; the {max_images} of largest AP gain are shown "
            f"(max_images = {max_images})."
        )
    width, height = np.asarray(gt.image_width, float), np.asarray(gt.image_height, float)
    ranking = found.ranking()
    place = np.empty(len(ranking), dtype=np.int64)
    place[ranking] = np.arange(1, len(ranking) + 1)
    shown = []
    pictures_bytes = 0
    for i in order[:max_images]:
        image_boxes = boxes.get(i, ())
        w, h = _size(width[i], height[i], image_boxes)
        picture = picture_size = None
        note = ""
        name = gt.image_name[i] if i < len(gt.image_name) else ""
        if root is not None and pictures_bytes > max_bytes:
            note = "picture left out: the gallery's byte budget is spent"
        elif root is not None:
            options = {
                "longest_side": longest_side,
                "quality": quality,
                "max_pixels": max_pixels,
                "max_file_bytes": max_file_bytes,
            }
            picture, picture_size, size, note = _picture_for(root, name, (width[i], height[i]), options)
            if picture is not None:
                pictures_bytes += len(picture) * 4 // 3
            w, h = size or (w, h)
        shown.append(
            GalleryImage(
                rank=int(place[i]),
                image_id=int(gt.image_id[i]),
                file_name=name,
                width=w,
                height=h,
                tp=int(found.tp[i]),
                fp=int(found.fp[i]),
                fn=int(found.fn[i]),
                ignored=int(found.ignored[i]),
                ap_gain=_number(found.ap_gain[i]),
                boxes=tuple(image_boxes),
                picture=picture,
                picture_size=picture_size,
                note=note,
            )
        )
    return Gallery(
        label=label if label is not None else result.protocol.name,
        iou_threshold=found.iou_threshold,
        images=tuple(shown),
        n_with_errors=len(order),
        max_images=max_images,
        max_bytes=max_bytes,
        has_pictures=root is not None,
        notes=tuple(notes),
    )


def _size(width: float, height: float, boxes: Any) -> tuple[float, float]:
    """The canvas: the ground truth's image size, else the boxes' extent (at least 1 x 1)."""
    if width == width and height == height and width > 0 and height > 0:
        return float(width), float(height)
    right = max((b.box[0] + b.box[2] for b in boxes), default=1.0)
    bottom = max((b.box[1] + b.box[3] for b in boxes), default=1.0)
    return max(1.0, float(right)), max(1.0, float(bottom))


def _boxes_by_image(result: EvalResult, gt: GroundTruth, matches: Any) -> dict[int, list[GalleryBox]]:
    """Image row -> its boxes: ground truth first (file order), then detections (input order)."""
    out: dict[int, list[GalleryBox]] = {}
    names = result.category_names
    gt_names = gt.category_name
    is_counted = ~ground_truth_flags(gt, result.protocol)[0][0]
    missed = dict(zip(matches.missed_gt_row.tolist(), matches.missed_is_miss.tolist()))
    gt_boxes = boxes_as(gt.box, gt.box_format, "xywh").astype(np.float64)
    for g in range(len(gt.annotation_id)):
        box = tuple(float(v) for v in gt_boxes[g])
        if not all(math.isfinite(v) for v in box):
            continue
        if g in missed:
            outcome, error = "fn", "miss" if missed[g] else ""
        else:
            outcome, error = ("found" if is_counted[g] else "ignored"), ""
        out.setdefault(int(gt.image[g]), []).append(
            GalleryBox(
                kind="gt",
                outcome=outcome,
                error=error,
                category=gt_names[int(gt.category[g])],
                box=box,
                score=None,
                iou=None,
                ident=int(gt.annotation_id[g]),
            )
        )
    c = matches.columns
    words = ("tp", "ignored", "fp")
    for j in range(len(c.detection)):
        box = tuple(float(v) for v in matches.box[j])
        if not all(math.isfinite(v) for v in box):
            continue
        iou = matches.iou[j] if c.has_gt[j] else matches.best_iou[j]
        out.setdefault(int(c.image_row[j]), []).append(
            GalleryBox(
                kind="det",
                outcome=words[int(c.outcome[j])],
                error=ERROR_WORDS[int(matches.error[j])],
                category=names[int(c.class_index[j])],
                box=box,
                score=float(c.score[j]),
                iou=_number(iou),
                ident=int(c.detection[j]),
            )
        )
    return out
