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

import base64
import io
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.data import Detections, GroundTruth, boxes_as
from deteval.errors import ConfigError, InputError
from deteval.evaluate import EvalResult, ground_truth_flags
from deteval.io._text import read_bytes
from deteval.per_image import ERROR_WORDS, explained_matches, per_image
from deteval.plot._html_format import _num, escape

__all__ = [
    "Gallery",
    "GalleryImage",
    "GalleryBox",
    "build_gallery",
    "gallery_section",
    "OUTCOME_COLOURS",
    "MAX_IMAGES",
    "MAX_BYTES",
]

#: Default number of images in the gallery.
MAX_IMAGES = 60
#: Default byte budget of the whole gallery section (pictures, boxes, tables): 8 MB.
MAX_BYTES = 8_000_000
#: The smallest byte budget accepted (the section's header, filters and notes fit in it).
MIN_BYTES = 10_000
#: Largest image file read (bytes).
MAX_FILE_BYTES = 64_000_000
#: Largest picture decoded (width x height, from the file's header, before decoding).
MAX_PIXELS = 50_000_000
#: Tried, in order, after a file name without an extension (VOC's image ids).
_EXTENSIONS = (".jpg", ".jpeg", ".png", ".JPG", ".JPEG", ".PNG")
#: Bytes kept for the section's header, filters and notes (the cards share the rest).
_HEADER_RESERVE = 8_000

#: Stroke colour of each outcome (``found``: a ground truth some detection matched).
OUTCOME_COLOURS = {
    "tp": "#1a9850",
    "fp": "#d73027",
    "fn": "#2c7bb6",
    "ignored": "#8c8c8c",
    "found": "#a6d96a",
}


@dataclass(frozen=True)
class GalleryBox:
    """One box of an image: a detection or a ground truth.

    Attributes
    ----------
    kind : {"det", "gt"}
    outcome : {"tp", "fp", "ignored"} for a detection; {"fn", "found", "ignored"} for a ground truth
    error : str
        TIDE error type of a false positive (``cls, loc, both, dupe, bkg``), ``miss`` for a
        missed object TIDE charges as such, else "".
    category : str
    box : tuple of float
        x, y, w, h in the image's pixels.
    score : float or None
        Detections only.
    iou : float or None
        A detection's IoU with its match, else its best overlap with any ground truth.
    ident : int
        The detection's index in the input, or the ground truth's annotation id.
    """

    kind: str
    outcome: str
    error: str
    category: str
    box: tuple
    score: float | None
    iou: float | None
    ident: int


@dataclass(frozen=True)
class GalleryImage:
    """One image of the gallery: its counts, its boxes and (maybe) its picture.

    Attributes
    ----------
    rank : int
        Its place in the ranking by AP gain (1: fixing it would raise AP the most).
    image_id : int
    file_name : str
    width, height : float
        The size the boxes are drawn in (the picture's, else the ground truth's, else the
        boxes' extent).
    tp, fp, fn, ignored : int
    ap_gain : float or None
    boxes : tuple of GalleryBox
    picture : bytes or None
        The downscaled JPEG.
    picture_size : tuple of int or None
        Its width and height in pixels.
    note : str
        Why there is no picture (or a remark about it); "" when all is well.
    """

    rank: int
    image_id: int
    file_name: str
    width: float
    height: float
    tp: int
    fp: int
    fn: int
    ignored: int
    ap_gain: float | None
    boxes: tuple
    picture: bytes | None = None
    picture_size: tuple | None = None
    note: str = ""


@dataclass(frozen=True)
class Gallery:
    """The images that cost the most, ready for :func:`gallery_section`.

    Attributes
    ----------
    label : str
        Which detector and protocol the gallery shows.
    iou_threshold : float
    images : tuple of GalleryImage
        Ranking order.
    n_with_errors : int
        Images with a false positive or a missed object (the gallery shows the first
        ``max_images`` of them).
    max_images, max_bytes : int
        The budget.
    has_pictures : bool
        Whether a folder of images was given.
    notes : tuple of str
    """

    label: str
    iou_threshold: float
    images: tuple
    n_with_errors: int
    max_images: int
    max_bytes: int
    has_pictures: bool
    notes: tuple = field(default=())


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


# ------------------------------------------------------------------------------------------
# HTML
# ------------------------------------------------------------------------------------------


def _box_label(b: GalleryBox) -> str:
    if b.kind == "gt":
        what = {"fn": "missed", "found": "found", "ignored": "ignored"}[b.outcome]
        return f"{b.category} ({what})"
    text = f"{b.category} {b.score:.2f}"
    if b.iou is not None:
        text += f" IoU {b.iou:.2f}"
    return text + (f" {b.error}" if b.error else "")


def _attrs(b: GalleryBox) -> str:
    score = "" if b.score is None else f' data-score="{b.score!r}"'
    return (
        f'data-kind="{b.kind}" data-outcome="{b.outcome}" data-error="{escape(b.error)}" '
        f'data-class="{escape(b.category)}"{score}'
    )


def _svg(image: GalleryImage) -> str:
    w, h = image.width, image.height
    font = max(w, h) / 36
    parts = [
        f'<svg class="boxes" viewBox="0 0 {w:g} {h:g}" preserveAspectRatio="none" '
        f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="boxes">'
    ]
    if image.picture is None:
        parts.append(f'<rect class="canvas" x="0" y="0" width="{w:g}" height="{h:g}"/>')
    for b in image.boxes:  # ground truth first: detections are drawn over them
        x, y, bw, bh = b.box
        dash = ' stroke-dasharray="6 3"' if b.kind == "gt" else ""
        colour = OUTCOME_COLOURS[b.outcome]
        ty = y - font * 0.3 if y > font else y + font
        parts.append(
            f'<g class="box" {_attrs(b)}><rect x="{x:g}" y="{y:g}" width="{bw:g}" height="{bh:g}" '
            f'fill="none" stroke="{colour}" stroke-width="2" vector-effect="non-scaling-stroke"{dash}/>'
            f'<text x="{x:g}" y="{ty:g}" font-size="{font:.3g}" fill="{colour}">{escape(_box_label(b))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _card(image: GalleryImage, prefix: str, with_picture: bool) -> str:
    anchor = f"{prefix}-{image.image_id}"
    title = image.file_name or f"image {image.image_id}"
    pic = ""
    natural = ""
    if with_picture and image.picture is not None and image.picture_size is not None:
        encoded = base64.b64encode(image.picture).decode("ascii")
        pw, ph = image.picture_size
        pic = (
            f'<img src="data:image/jpeg;base64,{encoded}" width="{pw}" height="{ph}" '
            f'alt="{escape(title)}" loading="eager">'
        )
        natural = f' data-w="{pw}"'
    else:
        scale = min(1.0, 640 / max(image.width, image.height))
        natural = f' data-w="{max(1, round(image.width * scale))}"'
    note = image.note
    if image.picture is not None and not with_picture:
        note = "picture left out: the gallery's byte budget is spent"
    gain = _num(image.ap_gain, 4, sign=True)
    return (
        f'<figure class="card" id="card-{anchor}" data-image="{image.image_id}"{natural}>'
        f'<div class="pic" style="aspect-ratio:{image.width:g}/{image.height:g}">{pic}{_svg(image)}</div>'
        f'<figcaption><b>#{image.rank}</b> <span class="name">{escape(title)}</span><br>'
        f"AP gain {gain} · TP {image.tp} · FP {image.fp} · FN {image.fn} · "
        f'<a href="#{anchor}">table</a> · <a href="#view-{image.image_id}" class="open">enlarge</a>'
        + (f'<br><span class="note">{escape(note)}</span>' if note else "")
        + "</figcaption></figure>"
    )


def _image_table(image: GalleryImage, prefix: str) -> str:
    rows = []
    for b in image.boxes:
        x, y, w, h = b.box
        score = "" if b.score is None else f"{b.score:.3f}"
        iou = "" if b.iou is None else f"{b.iou:.3f}"
        rows.append(
            f"<tr {_attrs(b)}><td>{'detection' if b.kind == 'det' else 'ground truth'}</td>"
            f"<td>{b.ident}</td><td>{escape(b.category)}</td>"
            f'<td><span class="chip" style="background:{OUTCOME_COLOURS[b.outcome]}"></span>{b.outcome}</td>'
            f"<td>{escape(b.error)}</td><td class=num>{score}</td><td class=num>{iou}</td>"
            f"<td class=num>{x:g}, {y:g}, {w:g}, {h:g}</td></tr>"
        )
    title = image.file_name or f"image {image.image_id}"
    return (
        f'<div class="image-table" id="{prefix}-{image.image_id}"><h3>#{image.rank} {escape(title)} '
        f'<span class="count">image id {image.image_id}</span> <a href="#card-{prefix}-{image.image_id}">'
        "back to the picture</a></h3>"
        '<div class="scroll"><table class="data"><thead><tr><th>what</th><th>id</th><th>class</th>'
        "<th>outcome</th><th>error</th><th>score</th><th>IoU</th><th>box (x, y, w, h)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div></div>"
    )


def _filters(gallery: Gallery) -> str:
    classes = sorted({b.category for im in gallery.images for b in im.boxes})
    class_options = "".join(f'<option value="{escape(c)}">{escape(c)}</option>' for c in classes)
    outcomes = [
        ("", "every outcome"),
        ("tp", "true positives"),
        ("fp", "false positives (any)"),
        ("fp:cls", "FP: wrong class (cls)"),
        ("fp:loc", "FP: poor localisation (loc)"),
        ("fp:both", "FP: class and box (both)"),
        ("fp:dupe", "FP: duplicate (dupe)"),
        ("fp:bkg", "FP: background (bkg)"),
        ("fn", "missed objects (fn)"),
        ("ignored", "ignored"),
    ]
    outcome_options = "".join(f'<option value="{v}">{label}</option>' for v, label in outcomes)
    legend = "".join(
        f'<span class="chip" style="background:{colour}"></span>{name} '
        for name, colour in OUTCOME_COLOURS.items()
    )
    return (
        '<div class="filters"><label>class <select id="gallery-class"><option value="">every class</option>'
        f'{class_options}</select></label> <label>outcome <select id="gallery-outcome">{outcome_options}'
        '</select></label> <label>confidence ≥ <input id="gallery-confidence" type="range" min="0" max="1" '
        'step="0.01" value="0"> <output id="gallery-confidence-value">0.00</output></label> '
        f'<span class="shown" id="gallery-shown"></span></div><p class="legend">{legend}'
        "(ground truth dashed, detections solid)</p>"
    )


def gallery_section(gallery: Gallery, *, prefix: str = "image") -> str:
    """The report's ``#gallery`` section, at most ``gallery.max_bytes`` bytes (UTF-8).

    Cards and their tables are added in ranking order while they fit; a card whose picture
    would not fit is shown without it; when not even that fits the gallery stops. Each omission
    is stated in the section.
    """
    budget = gallery.max_bytes - _HEADER_RESERVE
    cards: list[str] = []
    tables: list[str] = []
    used = 0
    n_dropped_pictures = 0
    n_left_out = 0
    for image in gallery.images:
        card, table = _card(image, prefix, True), _image_table(image, prefix)
        size = len(card.encode()) + len(table.encode())
        if used + size > budget and image.picture is not None:
            card = _card(image, prefix, False)
            size = len(card.encode()) + len(table.encode())
            n_dropped_pictures += 1
        if used + size > budget:
            n_left_out = len(gallery.images) - len(cards)
            break
        cards.append(card)
        tables.append(table)
        used += size
    notes = list(gallery.notes)
    if n_dropped_pictures:
        notes.append(
            f"{n_dropped_pictures} picture(s) left out to keep the section within its budget of "
            f"{gallery.max_bytes} bytes (max_bytes)."
        )
    if n_left_out:
        notes.append(
            f"{n_left_out} image(s) left out to keep the section within its budget of "
            f"{gallery.max_bytes} bytes (max_bytes)."
        )
    if not gallery.has_pictures:
        notes.append(
            "No pictures: boxes are drawn on a blank canvas of each image's size "
            "(give the images' folder with --images to see them)."
        )
    budget_text = (
        f"Budget: at most {gallery.max_images} images and {gallery.max_bytes / 1e6:.2f} MB for this "
        f"section; pictures downscaled and embedded as JPEG."
    )
    notes_html = "".join(f'<p class="hint note">{escape(n)}</p>' for n in notes)
    head = (
        f'<section id="gallery" data-cards="{len(cards)}" data-truncated="{str(bool(n_left_out or n_dropped_pictures or gallery.notes)).lower()}">'
        f"<h2>Error browser: the images that cost the most"
        f'<span class="count">{escape(gallery.label)}, IoU {gallery.iou_threshold:g}; '
        f"{len(cards)} of {gallery.n_with_errors} images with errors</span></h2>"
        '<p class="hint">Ranked by AP gain: how much the AP at this IoU would rise if the image\'s '
        "false positives were removed and its missed objects found. Click a picture to enlarge it, "
        "“table” for its boxes.</p>"
        f'<p class="hint">{escape(budget_text)}</p>{notes_html}{_filters(gallery)}'
    )
    return (
        f'{head}<div class="gallery">{"".join(cards)}</div>'
        f'<details class="image-tables" open><summary>Each image\'s table ({len(tables)} images)</summary>'
        f"{''.join(tables)}</details>"
        '<div id="viewer" hidden></div><output id="gallery-selftest" hidden></output></section>'
    )


_GALLERY_CSS = """
.gallery{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:14px;margin:10px 0}
.card{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff}
.card[hidden]{display:none}
.pic{position:relative;width:100%;cursor:zoom-in;background:#eef1f6;overflow:hidden}
.pic img{position:absolute;left:0;top:0;width:100%;height:100%;border:0;border-radius:0;display:block}
.pic svg.boxes{position:absolute;left:0;top:0;width:100%;height:100%;overflow:visible}
svg.boxes rect.canvas{fill:#f2f4f7;stroke:#c4cad4}
svg.boxes text{font-family:system-ui,sans-serif;paint-order:stroke;stroke:#fff;stroke-width:3px;
stroke-linejoin:round;vector-effect:non-scaling-stroke}
svg.boxes g.off{display:none}
.card figcaption{font-size:12px;color:var(--fg)}
.card .name{overflow-wrap:anywhere}
.note{color:#a0471f}
.filters{display:flex;flex-wrap:wrap;gap:6px 18px;align-items:center;margin:8px 0}
.legend{font-size:12px;color:var(--muted)}
.chip{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 2px;vertical-align:middle}
.image-table tr.off{display:none}
#viewer{position:fixed;left:0;top:0;z-index:10;background:rgba(20,24,32,.92);width:100vw;height:100vh;overflow:auto}
#viewer .card{margin:0;padding:0;border:0;border-radius:0}
#viewer .pic{cursor:zoom-out}
#viewer figcaption{background:#fff;padding:6px}
"""

_GALLERY_JS = r"""
(function () {
  "use strict";
  var section = document.getElementById("gallery");
  if (!section) { return; }
  var cls = document.getElementById("gallery-class");
  var outcome = document.getElementById("gallery-outcome");
  var conf = document.getElementById("gallery-confidence");
  var confText = document.getElementById("gallery-confidence-value");
  var shown = document.getElementById("gallery-shown");
  function matches(el) {
    var c = cls.value, o = outcome.value, t = parseFloat(conf.value);
    if (c && el.getAttribute("data-class") !== c) { return false; }
    var score = el.getAttribute("data-score");
    if (score !== null && parseFloat(score) < t) { return false; }
    if (!o) { return true; }
    var out = el.getAttribute("data-outcome"), err = el.getAttribute("data-error");
    if (o === "tp") { return out === "tp" || out === "found"; }
    if (o === "fp") { return out === "fp"; }
    if (o.indexOf("fp:") === 0) { return out === "fp" && err === o.slice(3); }
    return out === o;
  }
  function apply() {
    var active = cls.value !== "" || outcome.value !== "" || parseFloat(conf.value) > 0;
    var nCards = 0, nBoxes = 0;
    Array.prototype.forEach.call(section.querySelectorAll(".gallery .card"), function (card) {
      var any = false;
      Array.prototype.forEach.call(card.querySelectorAll("g.box"), function (g) {
        var ok = matches(g);
        g.classList.toggle("off", !ok);
        if (ok) { any = true; nBoxes += 1; }
      });
      var visible = any || !active;
      card.hidden = !visible;
      if (visible) { nCards += 1; }
    });
    Array.prototype.forEach.call(section.querySelectorAll(".image-table tbody tr"), function (tr) {
      tr.classList.toggle("off", !matches(tr));
    });
    confText.textContent = parseFloat(conf.value).toFixed(2);
    shown.textContent = nCards + " images, " + nBoxes + " boxes shown";
    section.setAttribute("data-visible-cards", String(nCards));
    section.setAttribute("data-visible-boxes", String(nBoxes));
    return [nCards, nBoxes];
  }
  [cls, outcome].forEach(function (el) { el.addEventListener("change", apply); });
  conf.addEventListener("input", apply);
  var viewer = document.getElementById("viewer");
  function open(id) {
    var card = document.querySelector('.gallery .card[data-image="' + id + '"]');
    if (!card) { return false; }
    var copy = card.cloneNode(true);
    copy.removeAttribute("id"); copy.hidden = false;
    copy.style.width = copy.getAttribute("data-w") + "px";
    viewer.innerHTML = ""; viewer.appendChild(copy); viewer.hidden = false;
    return true;
  }
  function close() { viewer.hidden = true; viewer.innerHTML = ""; }
  section.addEventListener("click", function (e) {
    var pic = e.target.closest(".gallery .pic");
    if (pic) { e.preventDefault(); open(pic.parentNode.getAttribute("data-image")); }
  });
  viewer.addEventListener("click", close);
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") { close(); } });
  function route() {
    var m = /^#view-(-?\d+)$/.exec(location.hash);
    if (m) { open(m[1]); } else { close(); }
  }
  window.addEventListener("hashchange", route);
  function selftest() {
    var counts = {};
    function set(c, o, t) {
      cls.value = c; outcome.value = o; conf.value = t;
      cls.dispatchEvent(new Event("change"));
      counts[c + "|" + o + "|" + t] = [
        parseInt(section.getAttribute("data-visible-cards"), 10),
        parseInt(section.getAttribute("data-visible-boxes"), 10)
      ];
    }
    var classes = Array.prototype.map.call(cls.options, function (x) { return x.value; });
    var outcomes = Array.prototype.map.call(outcome.options, function (x) { return x.value; });
    classes.forEach(function (c) { outcomes.forEach(function (o) { set(c, o, "0"); }); });
    set("", "", "0.5"); set("", "", "0.9"); set("", "", "0");
    var out = document.getElementById("gallery-selftest");
    out.setAttribute("data-counts", JSON.stringify(counts));
    out.setAttribute("data-result", "done");
  }
  apply();
  route();
  if (location.hash === "#selftest-gallery") { selftest(); }
})();
"""


def label_errors_section(doc: dict) -> str:
    """The report's ``#label-errors`` section from a :class:`deteval.label_errors.LabelErrors` document."""
    thresholds = doc.get("thresholds", {})
    counts = doc.get("counts", {})
    summary = ", ".join(f"{escape(k)} {escape(v)}" for k, v in counts.items())
    setting = ", ".join(f"{escape(k)} {escape(v)}" for k, v in thresholds.items())
    rows = []
    for c in doc.get("candidates", []):
        if c["kind"] in ("wrong_class", "missing_annotation"):
            what = f"detection {c['detection']} ({c['category']}, score {c['score']:.3f})"
            if c["kind"] == "wrong_class":
                evidence = f"IoU {c['iou']:.3f} with ground truth {c['gt_annotation_id']} labelled {c['gt_category']}"
            else:
                best = c.get("best_iou")
                evidence = (
                    "no ground truth in the image"
                    if best is None
                    else f"best IoU {best:.3f} with any ground truth"
                )
        elif c["kind"] == "unfound":
            what = f"ground truth {c['gt_annotation_id']} ({c['category']})"
            best = c.get("best_iou")
            if best is None:
                evidence = "no detection in the image"
            elif c.get("best_detection") is None:
                evidence = f"best IoU {best:.3f}: no detection overlaps it"
            else:
                evidence = (
                    f"best IoU {best:.3f}: detection {c['best_detection']} ({c['best_detection_category']}, "
                    f"score {c['best_detection_score']:.3f})"
                )
        else:
            what = f"ground truth {c['gt_annotation_id']} and {c['other_annotation_id']} ({c['category']})"
            evidence = f"IoU {c['iou']:.3f}"
        box = ", ".join(f"{v:g}" for v in c.get("box") or [])
        rows.append(
            f'<tr data-kind="{escape(c["kind"])}"><td>{escape(c["kind"])}</td><td>{escape(c.get("image_id"))}</td>'
            f"<td>{escape(c.get('file_name', ''))}</td><td>{escape(what)}</td><td>{escape(evidence)}</td>"
            f"<td class=num>{escape(box)}</td></tr>"
        )
    table = (
        '<div class="scroll"><table class="data" id="label-errors-table"><thead><tr><th>kind</th><th>image id</th>'
        "<th>file</th><th>what</th><th>evidence</th><th>box (x, y, w, h)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    return (
        f'<section id="label-errors"><h2>Label-error candidates<span class="count">{summary}</span></h2>'
        f'<p class="hint">Where the ground truth may be wrong, for a person to check; the scores above '
        f"do not change. IoU threshold {escape(doc.get('iou_threshold'))}; thresholds: {setting}.</p>"
        f"{table}</section>"
    )
