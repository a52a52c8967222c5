"""Progress moves inside long stages (#35): matching and mask IoUs report as whole images are matched.

A fake terminal (a text stream whose ``isatty`` is true) stands for stderr; the bar is tqdm's own.
"""

from __future__ import annotations

import io
import json
import re
import sys

import pytest

from deteval.cli import _common, main


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _segm_inputs(tmp_path, n_images: int = 48) -> list[str]:
    """``n_images`` images, one square polygon object and one shifted detection each."""
    images, anns, dets = [], [], []
    for i in range(1, n_images + 1):
        images.append({"id": i, "width": 100, "height": 100, "file_name": f"{i}.jpg"})
        x = 10 + i % 7
        anns.append(
            {
                "id": i,
                "image_id": i,
                "category_id": 1,
                "bbox": [x, 10, 40, 40],
                "area": 1600.0,
                "iscrowd": 0,
                "segmentation": [[x, 10, x + 40, 10, x + 40, 50, x, 50]],
            }
        )
        dx = x + i % 9
        dets.append(
            {
                "image_id": i,
                "category_id": 1,
                "bbox": [dx, 12, 40, 40],
                "score": 0.5 + i / 200,
                "segmentation": [[dx, 12, dx + 40, 12, dx + 40, 52, dx, 52]],
            }
        )
    gt = {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "thing"}]}
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    return [
        "evaluate",
        "--gt",
        str(tmp_path / "gt.json"),
        "--dt",
        str(tmp_path / "dt.json"),
        "--iou-type",
        "segm",
    ]


@pytest.fixture
def advances(monkeypatch) -> list:
    """Every (stage label, done, total) the CLI's progress bar is moved by inside a stage."""
    seen: list = []
    original = getattr(_common._Progress, "advance", lambda self, done, total: None)

    def recording(self, done, total):
        seen.append((self.bar.desc if self.bar is not None else None, done, total))
        original(self, done, total)

    monkeypatch.setattr(_common._Progress, "advance", recording, raising=False)
    return seen


def _run(monkeypatch, capsys, stderr, argv) -> tuple[int, str, str]:
    capsys.readouterr()
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stderr", stderr)
        code = main(argv)
    return code, capsys.readouterr().out, stderr.getvalue()


def test_a_segm_run_advances_inside_the_matching_stage(tmp_path, monkeypatch, capsys, advances):
    argv = [*_segm_inputs(tmp_path), "--format", "json"]
    monkeypatch.setattr(_common._Progress, "REFRESH_S", 0.0)  # every advance drawn (throttling: below)
    terminal = FakeTerminal()
    code, out, err = _run(monkeypatch, capsys, terminal, argv)
    assert code == 0
    inside = [
        (done, total) for label, done, total in advances if label and label.startswith("matching coco (2/4)")
    ]
    assert len(inside) >= 8  # whole images matched in parts: pairs, mask IoUs, greedy matching
    dones = [done for done, _ in inside]
    assert dones == sorted(set(dones))
    assert inside[-1][0] == inside[-1][1] == 48
    # the bar on the terminal showed several positions inside the stage
    shown = set(re.findall(r"matching coco \(2/4\): +(\d+)%", err))
    assert len(shown) >= 4, err
    # the same numbers as without a terminal (the parts make the one-pass table)
    code, plain, plain_err = _run(monkeypatch, capsys, io.StringIO(), argv)
    assert code == 0
    assert plain == out
    assert "matching coco" not in plain_err
    assert "%|" not in plain_err


def test_nothing_is_printed_with_q_or_without_a_terminal(tmp_path, monkeypatch, capsys, advances):
    argv = _segm_inputs(tmp_path, n_images=16)
    code, _, err = _run(monkeypatch, capsys, FakeTerminal(), [*argv, "-q"])
    assert code == 0
    assert err == ""
    code, _, err = _run(monkeypatch, capsys, io.StringIO(), argv)  # stderr not a terminal
    assert code == 0
    assert "%|" not in err
    assert "matching" not in err


def test_advances_redraw_the_bar_at_most_every_refresh_interval(monkeypatch):
    """Many advances within one refresh interval move the bar but redraw the terminal once."""
    from deteval.cli import _common

    class Bar:
        n = 0
        refreshes = 0

        def update(self, k):
            self.n += k

        def refresh(self):
            self.refreshes += 1

        def set_description(self, *a, **k):
            pass

    clock = [100.0]
    monkeypatch.setattr(_common.time, "monotonic", lambda: clock[0])
    progress = _common._Progress(1, quiet=True)  # no terminal: then give it a bar by hand
    progress.bar, progress.total = Bar(), 1
    progress.stage("matching coco")
    drawn = progress.bar.refreshes
    for done in range(1, 17):
        progress.advance(done, 16)
    assert progress.bar.n == 100  # the position follows every advance
    assert progress.bar.refreshes - drawn == 1  # one redraw in the interval, not 16
    clock[0] += 2 * _common._Progress.REFRESH_S
    progress.advance(16, 16)
    assert progress.bar.refreshes - drawn == 2
