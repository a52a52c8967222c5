"""The report's error browser in headless Chromium (network off, a fresh profile each run).

- boxes drawn: the fixture's street.png is a flat grey 400 x 300 picture with a true positive,
  a false positive and a missed object at known places; the page's viewer (``#view-1``) shows it
  at its own size in the window's top-left corner, and the screenshot's pixels at the boxes'
  edges have the outcome colours (inside the boxes: the grey of the picture);
- filters change what is shown: the page's ``#selftest-gallery`` sets every class x outcome
  (and three confidences) and writes how many cards and boxes are visible; the counts are
  checked against the same rule computed here from the gallery's values, and a few by hand;
- nothing is fetched (Chromium's own network log has no request but the page's file), no console
  message, every picture decodes, the file is within its budget.

Skipped when ``chromium`` is not on PATH (the launch: tests/support/chromium.py).
"""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("PIL")

from PIL import Image  # noqa: E402

import deteval  # noqa: E402
from deteval.io import load_detections, load_ground_truth  # noqa: E402
from deteval.label_errors import label_errors  # noqa: E402
from deteval.plot import write_report  # noqa: E402
from deteval.plot.gallery import OUTCOME_COLOURS, build_gallery  # noqa: E402
from tests import ROOT  # noqa: E402
from tests.support.chromium import console_messages, needs_chromium, page_requests, run_chromium  # noqa: E402

pytestmark = needs_chromium

FIXTURE = ROOT / "fixtures" / "gallery"
BUDGET = 200_000


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    gt = load_ground_truth(str(FIXTURE / "gt.json"))
    dt = load_detections(str(FIXTURE / "dt.json"), gt)
    result = deteval.evaluate(gt, dt, "coco")
    gallery = build_gallery(result, gt, dt, images=FIXTURE / "images", max_bytes=BUDGET)
    out = tmp_path_factory.mktemp("gallery") / "report.html"
    write_report(result, out=out, gallery=gallery, label_errors=label_errors(result, gt, dt))
    return out, gallery


def _close(pixel, colour: str, tolerance: int = 40) -> bool:
    want = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], want))


def _edge_hits(im: Image.Image, points: list, colour: str) -> int:
    """How many of ``points`` have ``colour`` within one pixel (a 2-pixel stroke on the edge)."""
    hits = 0
    for x, y in points:
        if any(_close(im.getpixel((x + dx, y + dy)), colour) for dx in (-1, 0, 1) for dy in (-1, 0, 1)):
            hits += 1
    return hits


def test_boxes_are_drawn_in_their_outcome_colours(built, tmp_path):
    report, _ = built
    shot = tmp_path / "view.png"
    run = run_chromium(
        tmp_path,
        "--window-size=800,600",
        "--virtual-time-budget=3000",
        f"--screenshot={shot}",
        report.as_uri() + "#view-1",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    im = Image.open(shot).convert("RGB")
    # the picture: flat grey (JPEG: within a few levels) away from every box
    for x, y in [(100, 110), (200, 250), (380, 280), (290, 195)]:
        assert _close(im.getpixel((x, y)), "#808080", 6), (x, y, im.getpixel((x, y)))
    # the true positive (cat, [40, 60, 120, 100]): solid green, the four edges
    tp = [(40, y) for y in range(80, 150, 10)] + [(160, y) for y in range(80, 150, 10)]
    tp += [(x, 160) for x in range(60, 150, 10)]
    assert _edge_hits(im, tp, OUTCOME_COLOURS["tp"]) == len(tp)
    # the false positive (cat, [250, 20, 80, 60]): solid red
    fp = (
        [(250, y) for y in range(35, 75, 5)]
        + [(330, y) for y in range(35, 75, 5)]
        + [(x, 80) for x in range(260, 320, 10)]
    )
    assert _edge_hits(im, fp, OUTCOME_COLOURS["fp"]) == len(fp)
    # the missed dog ([240, 150, 100, 90]): dashed blue, so most (not all) points of an edge
    fn = [(240, y) for y in range(165, 235, 3)] + [(340, y) for y in range(165, 235, 3)]
    assert _edge_hits(im, fn, OUTCOME_COLOURS["fn"]) >= len(fn) // 2
    # and no colour where there is no box
    assert _edge_hits(im, [(200, y) for y in range(100, 140, 10)], OUTCOME_COLOURS["fp"]) == 0


def _expected_counts(gallery, cls: str, outcome: str, confidence: float) -> list:
    """The page's rule, written again: which boxes and cards a filter shows."""

    def shown(b) -> bool:
        if cls and b.category != cls:
            return False
        if b.score is not None and b.score < confidence:
            return False
        if not outcome:
            return True
        if outcome == "tp":
            return b.outcome in ("tp", "found")
        if outcome == "fp":
            return b.outcome == "fp"
        if outcome.startswith("fp:"):
            return b.outcome == "fp" and b.error == outcome[3:]
        return b.outcome == outcome

    active = bool(cls or outcome or confidence > 0)
    cards = boxes = 0
    for im in gallery.images:
        n = sum(shown(b) for b in im.boxes)
        boxes += n
        cards += 1 if (n or not active) else 0
    return [cards, boxes]


def test_filters_change_what_is_shown(built, tmp_path):
    report, gallery = built
    run = run_chromium(
        tmp_path, "--virtual-time-budget=5000", "--dump-dom", report.as_uri() + "#selftest-gallery"
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = re.search(r'<output id="gallery-selftest"[^>]*>', run.stdout).group(0)
    assert 'data-result="done"' in out, out
    counts = json.loads(re.search(r"data-counts=\"([^\"]*)\"", out).group(1).replace("&quot;", '"'))
    outcomes = ["", "tp", "fp", "fp:cls", "fp:loc", "fp:both", "fp:dupe", "fp:bkg", "fn", "ignored"]
    assert len(counts) == 3 * len(outcomes) + 2  # (every class, cat, dog) x outcomes, 0.5, 0.9
    for key, seen in counts.items():
        cls, outcome, confidence = key.split("|")
        assert seen == _expected_counts(gallery, cls, outcome, float(confidence)), key
    # by hand, from the fixture: 4 images, 11 boxes; one background FP; two missed dogs; 3 dog images
    assert counts["||0"] == [4, 11]
    assert counts["|fp:bkg|0"] == [1, 1]
    assert counts["|fn|0"] == [2, 2]
    assert counts["dog||0"] == [3, 4]
    assert counts["|fp:loc|0"] == [0, 0]
    assert counts["||0.9"] == [4, 7]  # the 5 ground truths stay, 2 detections score >= 0.9


def test_no_network_no_console_message_pictures_decode(built, tmp_path):
    report, _ = built
    netlog = tmp_path / "net.json"
    run = run_chromium(
        tmp_path,
        "--virtual-time-budget=5000",
        f"--log-net-log={netlog}",
        "--dump-dom",
        report.as_uri() + "#view-2",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-images-ok="true"' in body, body
    assert int(re.search(r'data-images="(\d+)"', body).group(1)) >= 3
    assert console_messages(run) == []
    for value in re.findall(r'\s(?:src|href)="([^"]*)"', dom):
        assert value.startswith(("data:image/png;base64,", "data:image/jpeg;base64,", "#")), value[:60]
    # Chromium's own record of every request: none made by the page (the browser's own
    # background requests, initiator "not an origin", are not the page's)
    assert page_requests(netlog) == []


def test_the_network_check_sees_a_page_request(tmp_path):
    """The check above is not vacuous: a page that loads an image over http is caught."""
    page = tmp_path / "fetches.html"
    page.write_text('<html><body><img src="http://example.com/x.png"></body></html>')
    netlog = tmp_path / "net.json"
    run = run_chromium(
        tmp_path, "--virtual-time-budget=3000", f"--log-net-log={netlog}", "--dump-dom", page.as_uri()
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert page_requests(netlog) == ["http://example.com/x.png"]


def test_the_report_is_within_its_budget(built):
    report, gallery = built
    html = report.read_text(encoding="utf-8")
    section = re.search(r'<section id="gallery".*?</section>', html, flags=re.S).group(0)
    assert len(section.encode()) <= BUDGET == gallery.max_bytes
    assert f"Budget: at most {gallery.max_images} images and {BUDGET / 1e6:.2f} MB" in section


@pytest.fixture(scope="module")
def built_several(tmp_path_factory):
    """The report of two detectors (fixtures/gallery dt.json and dt_b.json): one menu, two galleries."""
    gt = load_ground_truth(str(FIXTURE / "gt.json"))
    galleries, results, found = {}, {}, {}
    for name, file in (("A", "dt.json"), ("B", "dt_b.json")):
        dt = load_detections(str(FIXTURE / file), gt)
        results[name] = deteval.evaluate(gt, dt, "coco")
        galleries[name] = build_gallery(results[name], gt, dt, images=FIXTURE / "images", max_bytes=BUDGET)
        found[name] = label_errors(results[name], gt, dt)
    out = tmp_path_factory.mktemp("several") / "report.html"
    write_report(results, out=out, gallery=galleries, label_errors=found)
    return out, galleries


def test_the_detector_menu_shows_each_detectors_gallery(built_several, tmp_path):
    report, galleries = built_several
    run = run_chromium(
        tmp_path, "--virtual-time-budget=5000", "--dump-dom", report.as_uri() + "#selftest-gallery"
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_messages(run) == []
    out = re.search(r'<output id="gallery-selftest"[^>]*>', run.stdout).group(0)
    assert 'data-result="done"' in out, out
    counts = json.loads(re.search(r"data-counts=\"([^\"]*)\"", out).group(1).replace("&quot;", '"'))
    outcomes = ["", "tp", "fp", "fp:cls", "fp:loc", "fp:both", "fp:dupe", "fp:bkg", "fn", "ignored"]
    assert len(counts) == 2 * (3 * len(outcomes) + 2)  # per detector: (every class, cat, dog) x outcomes, 2
    by_number = dict(enumerate(galleries.values(), start=1))
    for key, seen in counts.items():
        k, cls, outcome, confidence = key.split("|")
        assert seen == _expected_counts(by_number[int(k)], cls, outcome, float(confidence)), key
    # by hand: A's 4 images and 11 boxes; B's one image (missing.png: the missed dog, B's FP)
    assert counts["1|||0"] == [4, 11]
    assert counts["2|||0"] == [1, 2]
    assert counts["2||fp:bkg|0"] == [1, 1]
    assert counts["2||fn|0"] == [1, 1]
    assert counts["2|cat||0"] == [0, 0]
    # after the self-test the first detector is shown again: its cards visible, B's hidden
    section = re.search(r'<section id="gallery"[^>]*>', run.stdout).group(0)
    assert 'data-visible-cards="4"' in section, section


def test_several_detectors_report_is_within_its_budget(built_several):
    report, galleries = built_several
    html = report.read_text(encoding="utf-8")
    section = re.search(r'<section id="gallery".*?</section>', html, flags=re.S).group(0)
    assert len(section.encode()) <= 2 * BUDGET == sum(g.max_bytes for g in galleries.values())
    assert f"Budget: at most 60 images per detector and {2 * BUDGET / 1e6:.2f} MB for this section" in section


def test_a_second_detectors_boxes_are_drawn(built_several, tmp_path):
    """``#view-d2-4``: detector B's card of missing.png (no picture: a blank 200 x 200 canvas)."""
    report, _ = built_several
    shot = tmp_path / "view-b.png"
    run = run_chromium(
        tmp_path,
        "--window-size=800,600",
        "--virtual-time-budget=3000",
        f"--screenshot={shot}",
        report.as_uri() + "#view-d2-4",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    im = Image.open(shot).convert("RGB")
    # B's background false positive ([120, 120, 50, 50]): solid red, its left and right edges
    fp = [(120, y) for y in range(130, 166, 5)] + [(170, y) for y in range(130, 166, 5)]
    assert _edge_hits(im, fp, OUTCOME_COLOURS["fp"]) == len(fp)
    # the dog nobody found ([10, 10, 50, 50]): dashed blue
    fn = [(10, y) for y in range(20, 56, 3)] + [(60, y) for y in range(20, 56, 3)]
    assert _edge_hits(im, fn, OUTCOME_COLOURS["fn"]) >= len(fn) // 2
    # none of A's boxes: A's true positive cat of image 1 would be green at x=40
    assert _edge_hits(im, [(40, y) for y in range(80, 150, 10)], OUTCOME_COLOURS["tp"]) == 0
