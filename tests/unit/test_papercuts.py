"""Papercuts a new user met (#35): each message says what is true."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from deteval.cli.parser import COMPILED_EXTENSIONS
from deteval.protocol.spec import Protocol
from deteval.protocol.yaml import PRESETS, load_protocol_text
from deteval.protocol.yaml_dump import dump_protocol
from tests import ROOT

GT = str(ROOT / "fixtures" / "coco" / "gt.json")
DT = str(ROOT / "fixtures" / "coco" / "dt.json")


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("voc07", "voc2007"),
        ("VOC2007", "voc2007"),
        ("voc12", "voc2012"),
        ("coc", "coco"),
        ("coco_50", "coco50"),
        ("ultralytic", "ultralytics"),
    ],
)
def test_unknown_preset_suggests_the_near_name(run_cli, typed, meant):
    code, out, err = run_cli("evaluate", "--gt", GT, "--dt", DT, "--protocol", typed)
    assert code == 3
    assert out == ""
    assert f"unknown protocol {typed!r}" in err
    assert err.rstrip().endswith(f"(did you mean {meant!r}?)")


def test_unknown_preset_far_from_every_name_gets_no_guess(run_cli):
    code, _, err = run_cli("evaluate", "--gt", GT, "--dt", DT, "--protocol", "zzzz")
    assert code == 3
    assert "did you mean" not in err


def test_extends_a_near_miss_suggests_too(run_cli, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("extends: voc07\nname: mine\n")
    code, _, err = run_cli("evaluate", "--gt", GT, "--dt", DT, "--protocol", str(path))
    assert code == 3
    assert "(did you mean 'voc2007'?)" in err


def test_protocols_list_is_one_line_a_preset(run_cli):
    code, out, _ = run_cli("protocols", "--list")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == list(PRESETS)
    for line, protocol in zip(lines, PRESETS.values()):
        assert f"[{protocol.fingerprint()}]" in line
        assert line.endswith(protocol.source)


def test_protocols_list_of_named_presets(run_cli):
    code, out, _ = run_cli("protocols", "--list", "voc2007", "coco")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["voc2007", "coco"]


def test_protocols_list_refuses_a_structured_format(run_cli):
    code, out, err = run_cli("protocols", "--list", "--format", "json")
    assert code == 3
    assert out == ""
    assert "--list" in err


@pytest.mark.parametrize("name", list(PRESETS))
def test_protocols_yaml_writes_every_field(name):
    protocol = PRESETS[name]
    text = dump_protocol(protocol)
    written = yaml.safe_load(text)
    assert sorted(written) == sorted(f.name for f in Protocol.__dataclass_fields__.values())
    loaded = load_protocol_text(text)
    assert loaded == protocol
    assert loaded.fingerprint() == protocol.fingerprint()


def _version(env_extra: dict) -> str:
    import os

    env = {**os.environ, **env_extra}
    done = subprocess.run(
        [sys.executable, "-m", "deteval", "--version"], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


def test_version_says_which_extensions_run():
    out = _version({})
    from deteval import __version__

    assert out.startswith(f"deteval {__version__} (")
    for name in COMPILED_EXTENSIONS:
        short = name.rsplit(".", 1)[1]
        assert f"  {short}: " in out
    off = _version({"DETEVAL_NO_EXTENSION": "1"})
    assert off.count(": disabled") == len(COMPILED_EXTENSIONS)


_THREE_CALLS = """
import deteval
deteval.evaluate({gt!r}, {dt!r})
deteval.evaluate({gt!r}, {dt!r})
deteval.evaluate({gt!r}, {dt!r})
"""


@pytest.mark.parametrize(("flags", "shown"), [([], 1), (["-W", "always"], 3), (["-W", "ignore"], 0)])
def test_the_api_warns_once_per_process_and_cause(flags, shown):
    """The fixture's class 'bird' has no ground truth: the note is shown once, from three call lines."""
    script = _THREE_CALLS.format(gt=GT, dt=DT)
    done = subprocess.run([sys.executable, *flags, "-c", script], capture_output=True, text=True, check=True)
    assert done.stderr.count("UndefinedMetricWarning: 1 class has no ground truth") == shown


def test_strict_still_refuses_every_time():
    import warnings

    import deteval
    from deteval.errors import UndefinedMetricWarning

    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UndefinedMetricWarning)
            with pytest.raises(UndefinedMetricWarning, match="bird"):
                deteval.evaluate(GT, DT)


def _rank_files(tmp_path, labels: str, scores: str) -> tuple[str, str]:
    (tmp_path / "labels.csv").write_text(labels)
    (tmp_path / "scores.csv").write_text(scores)
    return str(tmp_path / "labels.csv"), str(tmp_path / "scores.csv")


def test_rank_shows_the_header_names(run_cli, tmp_path):
    labels, scores = _rank_files(tmp_path, "cat,dog\n1,0\n0,1\n1,1\n", "cat,dog\n0.9,0.1\n0.2,0.8\n0.7,0.6\n")
    code, out, _ = run_cli("rank", "--labels", labels, "--scores", scores)
    assert code == 0
    rows = out.splitlines()[-2:]
    assert [row.split()[0] for row in rows] == ["cat", "dog"]
    code, out, _ = run_cli("rank", "--labels", labels, "--scores", scores, "--format", "csv")
    assert "label=cat,AP,1.0" in out.splitlines()
    code, out, _ = run_cli("rank", "--labels", labels, "--scores", scores, "--format", "json")
    import json

    assert [row["name"] for row in json.loads(out)["per_label"]] == ["cat", "dog"]


@pytest.mark.parametrize("id_column", ["image", "1"])
def test_rank_sets_an_id_column_aside(run_cli, tmp_path, id_column):
    labels, scores = _rank_files(
        tmp_path, "image,cat,dog\nA,1,0\nB,0,1\nC,1,1\n", "image,cat,dog\nA,0.9,0.1\nB,0.2,0.8\nC,0.7,0.6\n"
    )
    code, out, err = run_cli("rank", "--labels", labels, "--scores", scores, "--id-column", id_column)
    assert (code, err) == (0, "")
    assert "ranking: 3 samples, 2 labels, 4 positives" in out


def test_rank_refuses_rows_in_another_order(run_cli, tmp_path):
    labels, scores = _rank_files(
        tmp_path, "image,cat,dog\nA,1,0\nB,0,1\nC,1,1\n", "image,cat,dog\nA,0.9,0.1\nC,0.7,0.6\nB,0.2,0.8\n"
    )
    code, out, err = run_cli("rank", "--labels", labels, "--scores", scores, "--id-column", "image")
    assert (code, out) == (3, "")
    assert "the row ids differ at position 2 ('B' vs 'C')" in err


def test_rank_refuses_columns_in_another_order(run_cli, tmp_path):
    labels, scores = _rank_files(tmp_path, "cat,dog\n1,0\n0,1\n", "dog,cat\n0.1,0.9\n0.8,0.2\n")
    code, out, err = run_cli("rank", "--labels", labels, "--scores", scores)
    assert (code, out) == (3, "")
    assert "the header names differ at position 1 ('cat' vs 'dog')" in err


def test_rank_refuses_an_unknown_id_column_and_a_short_header(run_cli, tmp_path):
    labels, scores = _rank_files(tmp_path, "image,cat\nA,1\nB,0\n", "image,cat\nA,0.9\nB,0.2\n")
    code, _, err = run_cli("rank", "--labels", labels, "--scores", scores, "--id-column", "img")
    assert code == 3
    assert "no column named 'img' (--id-column); expected a header name ('image', 'cat')" in err
    labels, scores = _rank_files(tmp_path, "cat\n1,0\n0,1\n", "cat\n0.9,0.1\n0.2,0.8\n")
    code, _, err = run_cli("rank", "--labels", labels, "--scores", scores)
    assert code == 3
    assert "a header of 1 names over rows of 2 columns" in err


def test_the_temporary_dask_cluster_keeps_its_workers_quiet():
    """A heartbeat that fails while deteval's own cluster shuts down printed a traceback under -q."""
    pytest.importorskip("distributed")
    import logging

    from deteval.integrations.dask import _client

    client, close = _client("dask")
    try:
        levels = client.run(lambda: logging.getLogger("distributed.worker").getEffectiveLevel())
    finally:
        close()
    assert levels
    assert set(levels.values()) == {logging.CRITICAL}


def test_compare_mask_modes_says_rle_masks_stay_rasters(run_cli, tmp_path):
    """On RLE detections '0 changed' said nothing of why: the RLE masks are rasters in both modes."""
    import json

    import numpy as np
    from pycocotools import mask as mask_utils

    gt = json.loads((ROOT / "fixtures" / "segm" / "gt.json").read_text())
    dt = json.loads((ROOT / "fixtures" / "segm" / "dt.json").read_text())
    sizes = {im["id"]: (im["height"], im["width"]) for im in gt["images"]}
    for record in dt:
        h, w = sizes[record["image_id"]]
        rles = mask_utils.frPyObjects(record["segmentation"], h, w)
        rle = mask_utils.merge(rles)
        record["segmentation"] = {"size": rle["size"], "counts": rle["counts"].decode()}
    path = tmp_path / "dt_rle.json"
    path.write_text(json.dumps(dt))
    from deteval.api import compare_mask_modes  # paths: the front door (mask_modes takes values)

    c = compare_mask_modes(str(ROOT / "fixtures" / "segm" / "gt.json"), str(path))
    assert (c.n_det_rle, c.n_det_masks, c.n_gt_rle, c.n_gt_masks) == (
        len(dt),
        len(dt),
        1,
        len(gt["annotations"]),
    )
    assert c.n_changed == 0
    assert np.all(c.changed_by_threshold == 0)
    code, out, _ = run_cli(
        "evaluate", "--gt", str(ROOT / "fixtures" / "segm" / "gt.json"), "--dt", str(path),
        "--iou-type", "segm", "--compare-mask-modes", "--no-per-class",
    )  # fmt: skip
    assert code == 0
    assert "RLE masks are rasters in both modes (only polygon-polygon pairs can change): 1 of " in out
    assert f"{len(dt)} of {len(dt)} detection masks" in out


def test_explain_lists_no_mask_step_for_boxes(run_cli):
    """voc2010 -> coco on boxes listed 'IoU type/masks' (mask_iou) as a step of the walk."""
    code, out, _ = run_cli(
        "compare", "--gt", GT, "--dt", DT, "--protocol", "voc2010", "--protocol", "coco", "--explain"
    )
    assert code == 0
    steps = [
        line.split("  ")[0] for line in out.splitlines() if line.startswith(("IoU type", "interpolation"))
    ]
    assert steps == ["interpolation"]
    assert "note: not a step: mask_iou (differ, but do not apply to iou_type bbox)" in out
    from deteval.api import explain

    e = explain(GT, DT, "voc2010", "coco")
    assert "IoU type/masks" not in [s.name for s in e.steps]
    segm = str(ROOT / "fixtures" / "segm" / "gt.json"), str(ROOT / "fixtures" / "segm" / "dt.json")
    code, out, _ = run_cli(
        "compare", "--gt", segm[0], "--dt", segm[1], "--iou-type", "segm",
        "--protocol", "voc2010", "--protocol", "coco", "--explain",
    )  # fmt: skip
    assert code == 0
    assert any(line.startswith("IoU type/masks") for line in out.splitlines())


def test_explain_takes_which_iou_types_a_field_applies_to_from_the_field_table():
    """Every field limited to some IoU types (the field table's iou_types) makes no step for boxes."""
    import deteval
    from deteval.api import explain
    from deteval.protocol import FIELDS

    limited = {name: spec.iou_types for name, spec in FIELDS.items() if spec.iou_types is not None}
    assert limited["boundary_dilation_ratio"] == ("boundary",)
    assert limited["mask_iou"] == ("segm",)
    b = deteval.get_protocol("coco").replace(name="wider-band", boundary_dilation_ratio=0.05)
    e = explain(GT, DT, "coco", b)
    assert e.steps == ()
    assert "not a step: boundary_dilation_ratio (differ, but do not apply to iou_type bbox)" in e.notes
