"""The shipped presets: YAML files in deteval/protocol/presets, pinned by what they compute."""

from __future__ import annotations

import shutil

import pytest

from deteval.errors import ConfigError
from deteval.protocol import PRESETS, get_protocol, load_protocol_file, load_protocol_text, preset_names
from deteval.protocol import yaml as protocol_yaml
from tests import ROOT

PRESET_FILES = ROOT / "deteval" / "protocol" / "presets"

#: What each preset computes, as the CLI command `protocols` shows it. A change here is a change of
#: numbers: deliberate, recorded in the changelog, never a side effect.
FINGERPRINTS = {
    # coco and coco50 score masks with pycocotools' raster since the release after 0.1.0
    # (CHANGELOG); coco-exact-masks carries coco's 0.1.0 fingerprint: the same computation.
    "coco": "113558892f5b",
    "coco-pycocotools": "c2ce31221a2f",
    "coco50": "7819c757c80a",
    "coco-exact-masks": "6a3de0e7636c",
    "voc2007": "e0294022c6d4",
    "voc2010": "1c23b462d33a",
    "voc2012": "1c23b462d33a",
    "voc2007-pyfrcnn": "6e028d054686",
    "voc2010-pyfrcnn": "fb122f8d6891",
    "voc2007-continuous": "38120bb5938e",
    "voc2010-continuous": "276e9e132324",
    "openimages": "958ab2c28696",
    "openimages-challenge": "7c158387a73e",
    # ultralytics follows the release pip installs (8.4.176+ rules since the unreleased version, CHANGELOG);
    # ultralytics-8.3 carries the earlier ultralytics fingerprint: the same computation.
    "ultralytics": "8438125ca56b",
    "ultralytics-8.3": "8d92ccca3ba0",
    "detectron2-voc": "1054244cef83",
    "coco-keypoints": "077754158734",
    "lvis": "8b1c453566f3",
    "lvis-fixed-ap": "b68a9f02e3a0",
    "crowdpose": "f208bb84627a",
    "coco-boundary": "3a2062915594",
    "dota": "c02736178f22",
    "ultralytics-obb": "19c08794bb5b",
    "coco-rotated": "56e7fabf1888",
}


def test_the_presets_are_the_files_in_display_order():
    assert preset_names() == tuple(FINGERPRINTS)
    assert sorted(p.stem for p in PRESET_FILES.glob("*.yaml")) == sorted(FINGERPRINTS)
    assert list(PRESETS) == list(FINGERPRINTS)
    assert len(PRESETS) == len(FINGERPRINTS)


@pytest.mark.parametrize("name", list(FINGERPRINTS))
def test_preset_fingerprint_is_pinned(name):
    protocol = get_protocol(name)
    assert protocol.name == name
    assert protocol.fingerprint() == FINGERPRINTS[name]
    assert PRESETS[name] is protocol  # loaded once per process


@pytest.mark.parametrize("name", list(FINGERPRINTS))
def test_preset_file_starts_with_a_comment_and_loads_to_the_preset(name):
    """Each file starts with a comment saying what it reproduces, and names its source."""
    text = (PRESET_FILES / f"{name}.yaml").read_text(encoding="utf-8")
    assert text.startswith("# ")
    assert load_protocol_file(PRESET_FILES / f"{name}.yaml") == get_protocol(name)
    assert get_protocol(name).source


def test_presets_are_read_only():
    with pytest.raises(TypeError):
        PRESETS["mine"] = get_protocol("coco")  # type: ignore[index]
    with pytest.raises(KeyError):
        PRESETS["coco2017"]


def test_removing_a_file_removes_the_preset(tmp_path, monkeypatch):
    folder = tmp_path / "presets"
    shutil.copytree(PRESET_FILES, folder)
    (folder / "voc2012.yaml").unlink()
    monkeypatch.setattr(protocol_yaml, "PRESET_DIR", folder)
    assert "voc2012" not in preset_names()
    assert "voc2012" not in PRESETS
    with pytest.raises(ConfigError, match=r"unknown protocol 'voc2012'; expected a preset name \(coco, "):
        get_protocol("voc2012")
    with pytest.raises(ConfigError, match=r"<string>: extends: expected a preset name .*found 'voc2012'"):
        load_protocol_text("extends: voc2012\n")
    assert get_protocol("voc2010").fingerprint() == FINGERPRINTS["voc2010"]


def test_adding_a_file_adds_a_preset_after_the_listed_ones(tmp_path, monkeypatch):
    folder = tmp_path / "presets"
    shutil.copytree(PRESET_FILES, folder)
    (folder / "aaa-loose.yaml").write_text(
        "# VOC2010 at IoU 0.3.\nextends: voc2010.yaml\nname: aaa-loose\n"
        "source: test\niou_thresholds: [0.3]\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(protocol_yaml, "PRESET_DIR", folder)
    assert preset_names()[-1] == "aaa-loose"
    assert load_protocol_text("extends: aaa-loose\n").iou_thresholds == (0.3,)


def test_a_cycle_among_presets_is_an_error_not_a_recursion(tmp_path, monkeypatch):
    folder = tmp_path / "presets"
    folder.mkdir()
    (folder / "a.yaml").write_text("extends: b\n", encoding="utf-8")
    (folder / "b.yaml").write_text("extends: a\n", encoding="utf-8")
    monkeypatch.setattr(protocol_yaml, "PRESET_DIR", folder)
    with pytest.raises(
        ConfigError, match=r"expected no cycle of `extends:`, found a\.yaml -> b\.yaml -> a\.yaml"
    ):
        get_protocol("a")


def test_user_examples_extend_the_presets():
    for path in sorted((ROOT / "configs" / "examples").glob("*.yaml")):
        protocol = load_protocol_file(path)
        assert protocol.name == path.stem
