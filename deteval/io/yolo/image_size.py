"""Image sizes read from file headers (PNG, JPEG with its EXIF orientation, ...), for YOLO's normalized boxes."""

from __future__ import annotations

import os
from typing import BinaryIO, Literal

#: Image file extensions listed as images (Ultralytics' IMG_FORMATS).
IMAGE_EXTENSIONS = (
    ".bmp",
    ".dng",
    ".jpeg",
    ".jpg",
    ".mpo",
    ".png",
    ".tif",
    ".tiff",
    ".webp",
    ".pfm",
    ".heic",
    ".gif",
)


def _exif_orientation(tiff: bytes) -> int:
    """EXIF orientation tag (0x0112) of IFD0 in a TIFF blob; 1 when absent or unreadable."""
    order: Literal["little", "big"]
    if tiff[:2] == b"II":
        order = "little"
    elif tiff[:2] == b"MM":
        order = "big"
    else:
        return 1
    offset = int.from_bytes(tiff[4:8], order)
    if offset + 2 > len(tiff):
        return 1
    count = int.from_bytes(tiff[offset : offset + 2], order)
    for k in range(count):
        entry = tiff[offset + 2 + 12 * k : offset + 14 + 12 * k]
        if len(entry) < 12:
            break
        if int.from_bytes(entry[0:2], order) == 0x0112:
            return int.from_bytes(entry[8:10], order)
    return 1


def _jpeg_size(f: BinaryIO) -> tuple[int, int] | None:
    """(width, height) of a JPEG as displayed (EXIF orientations 5-8 swap the axes)."""
    orientation = 1
    while True:
        marker = f.read(2)
        if len(marker) < 2 or marker[0] != 0xFF:
            return None
        code = marker[1]
        while code == 0xFF:  # fill bytes
            byte = f.read(1)
            if not byte:
                return None
            code = byte[0]
        if code == 0x01 or 0xD0 <= code <= 0xD8:  # markers without a length
            continue
        head = f.read(2)
        if len(head) < 2:
            return None
        length = int.from_bytes(head, "big")
        if length < 2:
            return None
        if 0xC0 <= code <= 0xCF and code not in (0xC4, 0xC8, 0xCC):  # start of frame
            frame = f.read(5)
            if len(frame) < 5:
                return None
            height, width = int.from_bytes(frame[1:3], "big"), int.from_bytes(frame[3:5], "big")
            return (height, width) if orientation in (5, 6, 7, 8) else (width, height)
        if code == 0xE1:
            segment = f.read(length - 2)
            if segment[:6] == b"Exif\0\0":
                orientation = _exif_orientation(segment[6:])
        else:
            f.seek(length - 2, os.SEEK_CUR)


def image_size(path: str | os.PathLike) -> tuple[int, int] | None:
    r"""(width, height) read from a PNG, JPEG, GIF or BMP header; None for other files.

    JPEG sizes are as displayed: an EXIF orientation of 5-8 (rotated by 90 degrees) swaps them,
    as OpenCV's ``imread`` and Ultralytics' ``exif_size`` do.

    Examples
    --------
    >>> import tempfile, struct, zlib
    >>> png = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR"
    ...        + struct.pack(">IIBBBBB", 640, 480, 8, 2, 0, 0, 0))
    >>> with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as f:
    ...     _ = f.write(png)
    >>> image_size(f.name)
    (640, 480)
    """
    with open(path, "rb") as f:
        head = f.read(26)
        if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
            return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        if head[:6] in (b"GIF87a", b"GIF89a"):
            return int.from_bytes(head[6:8], "little"), int.from_bytes(head[8:10], "little")
        if head[:2] == b"BM" and len(head) >= 26:
            width = int.from_bytes(head[18:22], "little", signed=True)
            height = int.from_bytes(head[22:26], "little", signed=True)
            return abs(width), abs(height)
        if head[:2] == b"\xff\xd8":
            f.seek(2)
            return _jpeg_size(f)
    return None
