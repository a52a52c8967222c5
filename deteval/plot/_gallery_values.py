"""The values of the error browser (:mod:`deteval.plot.gallery`): budgets, colours, boxes, images."""

from __future__ import annotations

from dataclasses import field

from deteval._values import frozen

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


@frozen
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


@frozen
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


@frozen
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
