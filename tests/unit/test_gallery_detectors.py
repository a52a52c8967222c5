"""The error browser and the label-error candidates of several detectors (``deteval report``).

One gallery section with a detector menu: each detector's cards and tables carry its
``data-detector`` number, each gallery keeps to its own share of the budget (the section to
their sum, said in the page), the first detector keeps the one-detector anchors; one table of
label-error candidates per detector, each that detector's candidates. The page's menu and
filters are exercised in headless Chromium (tests/browser/test_error_browser_in_chromium.py).
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("PIL")
pytest.importorskip("matplotlib")

import deteval  # noqa: E402
from deteval.cli import main  # noqa: E402
from deteval.label_errors import label_errors  # noqa: E402
from deteval.plot import write_report  # noqa: E402
from deteval.plot._gallery_html import several_galleries_section  # noqa: E402
from deteval.plot.gallery import build_gallery, gallery_section  # noqa: E402
from tests import ROOT  # noqa: E402

FIXTURE = ROOT / "fixtures" / "gallery"


def _detector(name: str):
    gt = deteval.load_ground_truth(str(FIXTURE / "gt.json"))
    dt = deteval.load_detections(str(FIXTURE / f"{name}.json"), gt)
    return gt, dt, deteval.evaluate(gt, dt, "coco")


def _galleries(max_bytes: int = 2_000_000) -> dict:
    out = {}
    for name, file in (("A", "dt"), ("B", "dt_b")):
        gt, dt, result = _detector(file)
        out[name] = build_gallery(result, gt, dt, images=FIXTURE / "images", max_bytes=max_bytes)
    return out


def _cards(section: str, detector: str) -> list:
    return re.findall(
        rf'<figure class="card" id="card-([^"]*)" data-image="\d+" data-detector="{detector}"', section
    )


def test_each_detectors_cards_and_tables_are_its_own():
    galleries = _galleries()
    section = several_galleries_section(galleries)
    # A: four images with errors; B (finds the dog A missed, no background FP): only missing.png
    assert _cards(section, "1") == [f"image-{im.image_id}" for im in galleries["A"].images]
    assert (
        _cards(section, "2") == [f"image-d2-{im.image_id}" for im in galleries["B"].images] == ["image-d2-4"]
    )
    assert section.count('<div class="image-table"') == 5
    assert (
        '<select id="gallery-detector"><option value="1">A</option><option value="2">B</option></select>'
        in section
    )
    assert "<b>A</b>: coco, IoU 0.5; 4 of 4 images with errors" in section
    assert "<b>B</b>: coco, IoU 0.5; 1 of 1 images with errors" in section
    # B's one card: the missed dog (dashed, fn) and B's background false positive
    card = section[section.index('id="card-image-d2-4"') :]
    card = card[: card.index("</figure>")]
    outcomes = re.findall(r'data-kind="(\w+)" data-outcome="(\w+)" data-error="(\w*)"', card)
    assert outcomes == [("gt", "fn", "miss"), ("det", "fp", "bkg")]
    # one detector's mapping is that detector's single-gallery section
    assert gallery_section({"A": galleries["A"]}) == gallery_section(galleries["A"])


@pytest.mark.parametrize("share", [10_000, 14_000, 2_000_000])
def test_each_gallery_keeps_its_share_and_the_section_their_sum(share):
    galleries = _galleries(share)
    section = several_galleries_section(galleries)
    assert len(section.encode()) <= 2 * share
    assert f"Budget: at most 60 images per detector and {2 * share / 1e6:.2f} MB for this section" in section
    for k, g in enumerate(galleries.values(), start=1):
        alone = gallery_section(g)
        # the same cards as the detector's own section under the same share
        expected = len(re.findall(r'<figure class="card"', alone))
        assert len(_cards(section, str(k))) == expected
    if share == 10_000:  # the budget bites (8 KB of each share is the header's) and each cut is said
        assert "A: 4 image(s) left out to keep the section within its budget of 10000 bytes" in section
        assert "B: 1 image(s) left out to keep the section within its budget of 10000 bytes" in section
        assert 'data-truncated="true"' in section


@pytest.mark.usefixtures("figures_unless_fast")  # the sections' HTML, not the figures' pixels
def test_label_errors_of_every_detector(tmp_path):
    found = {}
    results = {}
    for name, file in (("A", "dt"), ("B", "dt_b")):
        gt, dt, result = _detector(file)
        found[name] = label_errors(result, gt, dt)
        results[name] = result
    html = write_report(results, out=tmp_path / "r.html", label_errors=found).read_text()
    section = html[html.index('<section id="label-errors"') :]
    section = section[: section.index("</section>")]
    assert "not analysed here" not in section
    for k, (name, value) in enumerate(found.items(), start=1):
        table_id = "label-errors-table" if k == 1 else f"label-errors-table-{k}"
        table = section[section.index(f'id="{table_id}"') :]
        table = table[: table.index("</table>")]
        kinds = re.findall(r'<tr data-kind="(\w+)">', table)
        assert kinds == [c["kind"] for c in value.to_dict()["candidates"]], name
    assert re.findall(r'<h3 data-detector="\d">Detector (\w)', section) == ["A", "B"]
    # B finds the dog A missed: one candidate fewer of kind unfound
    assert found["A"].to_dict()["counts"]["unfound"] == 2
    assert found["B"].to_dict()["counts"]["unfound"] == 1


@pytest.mark.usefixtures("figures_unless_fast")  # the gallery section, not the figures' pixels
def test_cli_report_covers_every_detector(tmp_path, capsys):
    out = tmp_path / "r.html"
    argv = ["report", "--gt", str(FIXTURE / "gt.json"), "--dt", str(FIXTURE / "dt.json")]
    argv += [
        "--dt",
        str(FIXTURE / "dt_b.json"),
        "--name",
        "A",
        "--name",
        "B",
        "--images",
        str(FIXTURE / "images"),
    ]
    assert main([*argv, "--label-errors", "--gallery-max-bytes", "1", "--out", str(out), "-q"]) == 0
    html = out.read_text()
    gallery = html[html.index('<section id="gallery"') :]
    gallery = gallery[: gallery.index("</section>")]
    assert len(gallery.encode()) <= 1_000_000
    assert len(_cards(gallery, "1")) == 4
    assert _cards(gallery, "2") == ["image-d2-4"]
    assert "(0.50 MB per detector)" in gallery
    assert "<b>A</b>: A / coco" in gallery
    assert "<b>B</b>: B / coco" in gallery
    labels = html[html.index('<section id="label-errors"') :]
    assert "Detector A" in labels
    assert "Detector B" in labels
    capsys.readouterr()
    # a share below the smallest gallery is refused, naming the option and what would do
    assert main([*argv, "--gallery-max-bytes", "0.015", "--out", str(out), "-q"]) != 0
    err = capsys.readouterr().err
    assert "--gallery-max-bytes 0.015: shared by 2 detectors, 7500 bytes each; expected at least 10000" in err
    assert "(--gallery-max-bytes 0.02 or more)" in err


def test_a_gallery_of_no_detector_or_of_another_type_is_refused(tmp_path):
    from deteval.errors import ConfigError

    with pytest.raises(ConfigError, match="expected at least one detector's gallery, found none"):
        gallery_section({})
    _, _, result = _detector("dt")
    with pytest.raises(
        ConfigError, match="gallery: expected a Gallery or a mapping detector name -> Gallery, found list"
    ):
        write_report(result, out=tmp_path / "r.html", gallery=[1, 2])
    assert not (tmp_path / "r.html").exists()
