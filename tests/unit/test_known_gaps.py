"""Every "known gap" docs/errors.md states is still a gap: the page cannot go stale.

Each bullet of the page's "Known gaps" section ends with a marker ``<!-- gap: NAME -->``; each
NAME has a check here that reproduces the gap. A gap that gets closed fails its check (then the
bullet goes, with its check); a bullet without a check, or a check without a bullet, fails too.
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

import deteval
from deteval.errors import InputError, UndefinedMetricWarning
from tests import ROOT

GT = str(ROOT / "fixtures" / "coco" / "gt.json")
DT = str(ROOT / "fixtures" / "coco" / "dt.json")


def _bullets() -> list[str]:
    text = (ROOT / "docs" / "errors.md").read_text()
    section = text.split("\n## Known gaps\n", 1)[1].split("\n## ", 1)[0]
    return ["* " + b for b in re.split(r"^\* ", section, flags=re.M)[1:]]


def _dropin_silent(capsys) -> None:
    """The drop-in's evaluate() and accumulate() print nothing (pycocotools prints timings)."""
    from pycocotools.coco import COCO

    from deteval.interop import COCOeval

    gt = COCO(GT)
    dt = gt.loadRes(json.loads((ROOT / "fixtures" / "coco" / "dt.json").read_text()))
    capsys.readouterr()
    e = COCOeval(gt, dt, "bbox")
    e.evaluate()
    e.accumulate()
    assert capsys.readouterr().out == ""
    e.summarize()
    assert "Average Precision" in capsys.readouterr().out


def _progress_workers(capsys) -> None:
    """With --workers N in processes (exact masks) the matching stage moves once, not inside."""
    from deteval import api

    inputs = api.load_inputs(
        str(ROOT / "fixtures" / "segm" / "gt.json"), str(ROOT / "fixtures" / "segm" / "dt.json")
    )
    protocol = [api.resolve_protocol("coco-exact-masks").replace(iou_type="segm")]
    calls: list[tuple[int, int]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # the fixture's 'bird': not the point
        api.evaluate_inputs(
            inputs, protocol, workers=2, advance=lambda done, total: calls.append((done, total))
        )
    assert len(calls) <= 1, calls


def _exact_rle_size(capsys) -> None:
    """Exact mask IoU refuses a polygon-RLE pair on an image without a size (two RLEs are scored)."""
    from pycocotools import mask as mask_utils

    box = np.zeros((20, 20), dtype=np.uint8, order="F")
    box[5:15, 5:15] = 1
    rle = mask_utils.encode(box)
    rle = {"size": rle["size"], "counts": rle["counts"].decode()}
    gt = {
        "images": [{"id": 1, "file_name": "a.jpg"}],
        "categories": [{"id": 1, "name": "thing"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "bbox": [5, 5, 10, 10], "area": 100,
             "segmentation": rle}
        ],
    }  # fmt: skip
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [5, 5, 10, 10], "segmentation": rle}]
    protocol = deteval.get_protocol("coco").replace(iou_type="segm", mask_iou="exact")
    assert deteval.evaluate(gt, dt, protocol).metrics["AP50"] == pytest.approx(1.0)  # RLE with RLE
    gt["annotations"][0]["segmentation"] = [[5, 5, 15, 5, 15, 15, 5, 15]]
    with pytest.raises(InputError, match="without a usable width and height"):
        deteval.evaluate(gt, dt, protocol)


CHECKS = {
    "dropin-silent": _dropin_silent,
    "progress-workers": _progress_workers,
    "exact-rle-size": _exact_rle_size,
}


def _names() -> list[str]:
    names = []
    for bullet in _bullets():
        found = re.findall(r"<!-- gap: ([a-z0-9-]+) -->", bullet)
        assert len(found) == 1, (
            f"docs/errors.md, Known gaps: a bullet without its <!-- gap: NAME --> marker: {bullet[:80]!r}"
        )
        names.append(found[0])
    return names


def test_every_gap_has_its_check_and_every_check_its_gap():
    assert sorted(_names()) == sorted(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_gap_is_still_there(name, capsys):
    CHECKS[name](capsys)
