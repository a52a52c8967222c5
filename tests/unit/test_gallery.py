"""The error browser's values and HTML (deteval.plot.gallery): boxes, budget, bad image files.

The browser-side checks (pixels, filters, network, console) are in tests/browser.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import struct
import zlib
from pathlib import Path

import pytest

pytest.importorskip("PIL")
pytest.importorskip("matplotlib")

from PIL import Image  # noqa: E402

import deteval  # noqa: E402
from deteval.cli import main  # noqa: E402
from deteval.errors import ConfigError  # noqa: E402
from deteval.io import load_detections, load_ground_truth  # noqa: E402
from deteval.plot import write_report  # noqa: E402
from deteval.plot.gallery import build_gallery, gallery_section  # noqa: E402
from tests import ROOT  # noqa: E402

FIXTURE = ROOT / "fixtures" / "gallery"


def _values(gt_doc=None, dt_doc=None):
    gt = load_ground_truth(gt_doc if gt_doc is not None else str(FIXTURE / "gt.json"))
    dt = load_detections(dt_doc if dt_doc is not None else str(FIXTURE / "dt.json"), gt)
    return gt, dt, deteval.evaluate(gt, dt, "coco")


def _section(html: str) -> str:
    return re.search(r'<section id="gallery".*?</section>', html, flags=re.S).group(0)


def test_boxes_and_outcomes_of_the_fixture():
    gt, dt, result = _values()
    g = build_gallery(result, gt, dt, images=FIXTURE / "images")
    # ranked by AP gain; the image without errors is none of them (all four have one)
    assert [im.file_name for im in g.images] == ["street.png", "missing.png", "park.png", "room.png"]
    assert [im.rank for im in g.images] == [1, 2, 3, 4]
    street = g.images[0]
    assert [(b.kind, b.outcome, b.error, b.category) for b in street.boxes] == [
        ("gt", "found", "", "cat"),
        ("gt", "fn", "miss", "dog"),
        ("det", "tp", "", "cat"),
        ("det", "fp", "bkg", "cat"),
    ]
    assert street.boxes[2].iou == 1.0
    assert street.boxes[3].iou == 0.0
    assert street.picture_size == (400, 300)
    assert (street.width, street.height) == (400.0, 300.0)
    assert street.picture[:3] == b"\xff\xd8\xff"  # JPEG
    park = g.images[2]
    assert [(b.outcome, b.error) for b in park.boxes if b.kind == "det"] == [("fp", "cls"), ("tp", "")]
    room = g.images[3]
    assert [(b.outcome, b.error) for b in room.boxes if b.kind == "det"] == [("tp", ""), ("fp", "dupe")]
    missing = g.images[1]
    assert missing.picture is None
    assert "missing.png: file not found" in missing.note


def test_the_counts_are_the_per_image_counts():
    gt, dt, result = _values()
    g = build_gallery(result, gt, dt)
    for im in g.images:
        dets = [b for b in im.boxes if b.kind == "det"]
        assert im.tp == sum(b.outcome == "tp" for b in dets)
        assert im.fp == sum(b.outcome == "fp" for b in dets)
        assert im.fn == sum(b.outcome == "fn" for b in im.boxes)


def test_without_images_the_same_boxes_and_tables_without_pictures():
    gt, dt, result = _values()
    with_pictures = build_gallery(result, gt, dt, images=FIXTURE / "images")
    without = build_gallery(result, gt, dt)
    assert not without.has_pictures
    assert all(im.picture is None for im in without.images)
    assert [im.boxes for im in without.images] == [im.boxes for im in with_pictures.images]
    section = gallery_section(without)
    assert "<img" not in section
    assert section.count('class="canvas"') == 4
    assert section.count('class="image-table"') == 4
    assert "No pictures" in section


def test_the_budget_of_images_is_kept_and_said():
    gt, dt, result = _values()
    g = build_gallery(result, gt, dt, images=FIXTURE / "images", max_images=2)
    assert len(g.images) == 2
    section = gallery_section(g)
    assert section.count('<figure class="card"') == 2
    assert "4 images have errors; the 2 of largest AP gain are shown" in section
    assert 'data-truncated="true"' in section


@pytest.mark.parametrize("max_bytes", [10_000, 12_000, 14_000, 15_000])
def test_the_byte_budget_is_kept_and_said(max_bytes):
    gt, dt, result = _values()
    full = gallery_section(build_gallery(result, gt, dt, images=FIXTURE / "images"))
    g = build_gallery(result, gt, dt, images=FIXTURE / "images", max_bytes=max_bytes)
    section = gallery_section(g)
    assert len(section.encode()) <= max_bytes
    assert len(full.encode()) > max_bytes  # the budget bites: something was left out and said
    assert "left out to keep the section within its budget" in section
    assert 'data-truncated="true"' in section


def test_the_whole_report_stays_within_the_base_report_and_the_budget(tmp_path):
    gt, dt, result = _values()
    base = write_report(result, out=tmp_path / "base.html").stat().st_size
    g = build_gallery(result, gt, dt, images=FIXTURE / "images", max_bytes=20_000)
    with_gallery = write_report(result, out=tmp_path / "gallery.html", gallery=g).stat().st_size
    from deteval.plot._gallery_html import _GALLERY_CSS, _GALLERY_JS

    assert with_gallery <= base + 20_000 + len(_GALLERY_CSS) + len(_GALLERY_JS) + 100


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height pixels (and a tiny, wrong, data chunk)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 16))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def hostile(tmp_path):
    """A copy of the fixture whose image folder holds one bad file per image name."""
    folder = tmp_path / "images"
    folder.mkdir()
    Image.new("RGB", (400, 300), (128, 128, 128)).save(folder / "good.jpg", quality=90)
    whole = (folder / "good.jpg").read_bytes()
    (folder / "truncated.jpg").write_bytes(whole[: len(whole) // 2])
    (folder / "bomb.png").write_bytes(_png_header(100_000, 100_000))  # Pillow's own limit refuses it
    (folder / "large.png").write_bytes(_png_header(8_000, 8_000))  # below Pillow's, above ours
    (folder / "folder.png").mkdir()
    os.mkfifo(folder / "fifo.png")
    os.mknod(folder / "device.png", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    (folder / "text.png").write_text("not an image")
    (tmp_path / "secret.png").write_bytes((folder / "good.jpg").read_bytes())
    os.symlink("loop.png", folder / "loop.png")
    names = [
        "good.jpg",
        "truncated.jpg",
        "bomb.png",
        "large.png",
        "folder.png",
        "fifo.png",
        "device.png",
        "text.png",
        "../secret.png",
        "/etc/hostname",
        "loop.png",
        "absent.png",
    ]
    gt_doc = {
        "images": [{"id": i + 1, "file_name": n, "width": 400, "height": 300} for i, n in enumerate(names)],
        "categories": [{"id": 1, "name": "cat"}],
        "annotations": [
            {
                "id": i + 1,
                "image_id": i + 1,
                "category_id": 1,
                "bbox": [10, 10, 50, 50],
                "area": 2500,
                "iscrowd": 0,
            }
            for i in range(len(names))
        ],
    }
    return folder, gt_doc, names


def test_bad_image_files_get_a_note_never_a_crash(hostile):
    folder, gt_doc, names = hostile
    gt, dt, result = _values(
        gt_doc, [{"image_id": 1, "category_id": 1, "bbox": [200, 200, 10, 10], "score": 0.9}]
    )
    g = build_gallery(result, gt, dt, images=folder, max_images=50)
    notes = {im.file_name: im.note for im in g.images}
    pictures = {im.file_name: im.picture for im in g.images}
    assert set(notes) == set(names)
    assert pictures["good.jpg"] is not None
    assert notes["good.jpg"] == ""
    expected = {
        "truncated.jpg": "cannot be decoded",
        "bomb.png": "refused by Pillow as a decompression bomb",
        "large.png": "8000 x 8000 pixels in its header, more than the 50000000 decoded at most",
        "folder.png": "is a folder",
        "fifo.png": "is a FIFO (named pipe), not a regular file",
        "device.png": "is a character device, not a regular file",
        "text.png": "not an image Pillow can read",
        "../secret.png": "leads outside the images folder",
        "/etc/hostname": "is not relative to the images folder",
        "loop.png": "cannot read",
        "absent.png": "file not found",
    }
    for name, words in expected.items():
        assert pictures[name] is None, name
        assert words in notes[name], (name, notes[name])
    section = gallery_section(g)
    assert section.count("<img") == 1
    for words in expected.values():
        assert words.split(" (")[0] in section.replace("&quot;", '"').replace("&#x27;", "'")


def test_a_bad_budget_or_folder_is_refused(tmp_path):
    gt, dt, result = _values()
    with pytest.raises(ConfigError, match="expected positive max_images"):
        build_gallery(result, gt, dt, max_images=0)
    with pytest.raises(ConfigError, match="max_bytes: expected at least 10000"):
        build_gallery(result, gt, dt, max_bytes=9_999)
    with pytest.raises(ConfigError, match="quality: expected 1 to 95"):
        build_gallery(result, gt, dt, quality=100)
    with pytest.raises(ConfigError, match="not a folder"):
        build_gallery(result, gt, dt, images=tmp_path / "nowhere")


def test_user_strings_are_escaped():
    gt_doc = json.loads((FIXTURE / "gt.json").read_text())
    gt_doc["categories"][0]["name"] = '<script>alert("x")</script>'
    gt_doc["images"][0]["file_name"] = '"><img src=x onerror=alert(1)>.png'
    gt, dt, result = _values(gt_doc, str(FIXTURE / "dt.json"))
    section = gallery_section(build_gallery(result, gt, dt, images=FIXTURE / "images"))
    assert "<script>" not in section
    assert "<img src=x" not in section
    assert "&lt;script&gt;" in section


@pytest.mark.usefixtures("figures_unless_fast")  # the sections' HTML, not the figures' pixels
def test_cli_report_with_images_and_label_errors(tmp_path, capsys):
    out = tmp_path / "r.html"
    code = main(
        [
            "report",
            "--gt",
            str(FIXTURE / "gt.json"),
            "--dt",
            str(FIXTURE / "dt.json"),
            "--images",
            str(FIXTURE / "images"),
            "--label-errors",
            "--out",
            str(out),
            "-q",
        ]
    )
    assert code == 0, capsys.readouterr().err
    html = out.read_text()
    section = _section(html)
    assert section.count("<img") == 3
    assert "missing.png: file not found" in section
    assert '<section id="label-errors">' in html
    assert "wrong_class 1" in html


@pytest.mark.usefixtures("figures_unless_fast")  # the gallery section, not the figures' pixels
def test_cli_images_without_a_folder_is_relative_to_the_ground_truth(tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(FIXTURE / "images", data)
    shutil.copy(FIXTURE / "gt.json", data / "gt.json")
    out = tmp_path / "r.html"
    argv = [
        "report",
        "--gt",
        str(data / "gt.json"),
        "--dt",
        str(FIXTURE / "dt.json"),
        "--out",
        str(out),
        "-q",
    ]
    assert main([*argv, "--images"]) == 0, capsys.readouterr().err
    assert _section(out.read_text()).count("<img") == 3
    assert main([*argv, "--gallery"]) == 0
    assert _section(out.read_text()).count("<img") == 0
    assert main(argv) == 0
    assert '<section id="gallery"' not in out.read_text()
    assert main([*argv, "--images", str(tmp_path / "nowhere")]) == 3
    assert "not a folder" in capsys.readouterr().err


def test_paths_relative_to_cwd(monkeypatch):
    monkeypatch.chdir(ROOT)
    gt, dt, result = _values()
    g = build_gallery(result, gt, dt, images=Path("fixtures/gallery/images"))
    assert sum(im.picture is not None for im in g.images) == 3


def test_read_bytes_refuses_a_folder_with_a_message(tmp_path):
    """os.open opens a folder read-only on Linux: the check must come before os.fdopen."""
    from deteval._safe_read import read_bytes
    from deteval.errors import InputError

    with pytest.raises(InputError, match="is a folder, not a regular file; expected an image file"):
        read_bytes(str(tmp_path), what="an image file")


def test_voc_ids_find_their_jpeg_in_jpegimages(tmp_path, capsys):
    """VOC names images by id (000001): --images on a VOC root reads JPEGImages/000001.jpg."""
    root = tmp_path / "VOC"
    shutil.copytree(ROOT / "fixtures" / "voc" / "Annotations", root / "Annotations")
    shutil.copytree(ROOT / "fixtures" / "voc" / "ImageSets", root / "ImageSets")
    (root / "JPEGImages").mkdir()
    gt = load_ground_truth(str(root))
    for name in gt.image_name:
        Image.new("RGB", (500, 375), (90, 90, 90)).save(root / "JPEGImages" / f"{name}.jpg")
    out = tmp_path / "r.html"
    results = ROOT / "fixtures" / "voc" / "results"
    argv = ["report", "--gt", str(root), "--dt", str(results), "--protocol", "voc2007"]
    code = main([*argv, "--images", "--out", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    section = _section(out.read_text())
    assert section.count("<img") == int(re.search(r'data-cards="(\d+)"', section).group(1)) > 0


def test_an_unreadable_picture_is_a_note_when_another_library_patched_image_open(monkeypatch):
    """A picture Pillow cannot identify under a patched PIL.Image.open is one note, never a crash.

    Ultralytics replaces PIL.Image.open; on such a file its wrapper raises ModuleNotFoundError
    (no pi-heif).
    """
    from PIL import Image

    from deteval.plot import gallery

    def patched_open(fp, *args, **kwargs):
        raise ModuleNotFoundError("No module named 'pi_heif'")

    monkeypatch.setattr(Image, "open", patched_open)
    with pytest.raises(
        gallery._Unusable, match="cannot be decoded .ModuleNotFoundError: No module named 'pi_heif'."
    ):
        gallery._picture(b"not an image", longest_side=64, quality=80, max_pixels=10**6)


def test_a_patched_image_open_failing_after_pillow_could_not_identify_says_so(monkeypatch):
    """The wrapper's own error raised while handling Pillow's UnidentifiedImageError: Pillow's reason."""
    from PIL import Image, UnidentifiedImageError

    from deteval.plot import gallery

    real_open = Image.open

    def patched_open(fp, *args, **kwargs):
        try:
            return real_open(fp, *args, **kwargs)
        except UnidentifiedImageError:
            raise ModuleNotFoundError("No module named 'pi_heif'") from None

    monkeypatch.setattr(Image, "open", patched_open)
    with pytest.raises(gallery._Unusable, match="not an image Pillow can read"):
        gallery._picture(b"not an image", longest_side=64, quality=80, max_pixels=10**6)
