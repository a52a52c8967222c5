"""YAML protocols: the shipped configs, the `extends:` rules, and every documented error."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.errors import ConfigError, InputWarning
from deteval.protocol import (
    COCO_IOU_THRESHOLDS,
    MAX_CONFIG_BYTES,
    PRESETS,
    Protocol,
    apply_overrides,
    dump_protocol,
    load_protocol_file,
    load_protocol_text,
    parse_yaml,
    parse_yaml_value,
)
from tests import ROOT

# fixtures/coco has a class without ground truth ('bird'): the API notes it with an
# UndefinedMetricWarning on every call; incidental here.
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")


PRESET_FILES = ROOT / "deteval" / "protocol" / "presets"
EXAMPLES = ROOT / "configs" / "examples"
FIXTURE_GT = ROOT / "fixtures" / "coco" / "gt.json"
FIXTURE_DT = ROOT / "fixtures" / "coco" / "dt.json"


def load(text: str, tmp_path: Path, name: str = "cfg.yaml") -> Protocol:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_protocol_file(path)


def error_of(text: str, tmp_path: Path, name: str = "cfg.yaml") -> str:
    with pytest.raises(ConfigError) as info:
        load(text, tmp_path, name)
    return str(info.value)


# --------------------------------------------------------------------------------------------
# The shipped configs
# --------------------------------------------------------------------------------------------

# The presets are these files (tests/unit/test_presets.py pins what each computes).


def test_coco_file_thresholds_are_pycocotools_linspace_bit_for_bit():
    loaded = load_protocol_file(PRESET_FILES / "coco.yaml")
    assert loaded.iou_thresholds == COCO_IOU_THRESHOLDS
    assert loaded.iou_thresholds[8] == 0.8999999999999999


@pytest.mark.parametrize("name", list(PRESETS))
def test_dump_protocol_round_trips(name):
    assert load_protocol_text(dump_protocol(PRESETS[name])) == PRESETS[name]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_example_configs_evaluate_on_the_fixture(path):
    result = deteval.evaluate(str(FIXTURE_GT), str(FIXTURE_DT), str(path))
    assert result.protocol.name == path.stem
    assert result.to_dict()["config"] == load_protocol_file(path).to_dict()
    headline = result.metrics.get("mAP", result.metrics.get("AP"))
    assert headline == headline  # defined (not NaN)


# --------------------------------------------------------------------------------------------
# extends, defaults, name and source
# --------------------------------------------------------------------------------------------


def test_extends_preset_with_overrides(tmp_path):
    p = load("extends: voc2010\niou_thresholds: [0.3]\n", tmp_path, "loose.yaml")
    assert p == dataclasses.replace(PRESETS["voc2010"], name="loose", iou_thresholds=(0.3,), source=p.source)
    assert p.name == "loose"
    assert "voc2010 with iou_thresholds=[0.3]" in p.source
    assert isinstance(p.iou_thresholds, tuple)


def test_name_and_source_are_not_inherited_but_can_be_given(tmp_path):
    p = load("extends: coco\nname: mine\nsource: my lab's protocol\n", tmp_path)
    assert (p.name, p.source) == ("mine", "my lab's protocol")
    assert dataclasses.replace(p, name="coco", source=PRESETS["coco"].source) == PRESETS["coco"]


def test_extends_a_relative_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "base.yaml").write_text("extends: voc2007\nbox_convention: continuous\n")
    p = load("extends: ../base.yaml\niou_comparison: '>'\n", tmp_path / "sub", "child.yaml")
    assert (p.box_convention, p.iou_comparison, p.ap_method) == ("continuous", ">", "11_point")
    assert p.name == "child"


def test_extends_cycle_is_an_error(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(
        ConfigError,
        match=r"/b\.yaml: extends: expected no cycle of `extends:`, "
        r"found a\.yaml -> b\.yaml -> a\.yaml",
    ):
        load_protocol_file(tmp_path / "a.yaml")


def test_extends_itself_is_a_cycle(tmp_path):
    assert "found self.yaml -> self.yaml" in error_of("extends: self.yaml\n", tmp_path, "self.yaml")


def test_extends_missing_file(tmp_path):
    message = error_of("extends: nothere.yaml\n", tmp_path)
    assert message.startswith(
        f"{tmp_path / 'cfg.yaml'}: extends: expected a readable YAML protocol "
        f"file, found {tmp_path / 'nothere.yaml'}"
    )


def test_extends_unknown_preset_lists_presets(tmp_path):
    message = error_of("extends: coco2017\n", tmp_path)
    assert "extends: expected a preset name (coco, coco-pycocotools" in message
    assert "found 'coco2017'" in message


def test_extends_must_be_a_string(tmp_path):
    assert "extends: expected a preset name" in error_of("extends: [coco]\n", tmp_path)


def test_complete_protocol_without_extends(tmp_path):
    text = (PRESET_FILES / "voc2010.yaml").read_text().replace("name: voc2010", "name: copy")
    p = load(text, tmp_path)
    assert dataclasses.replace(p, name="voc2010") == PRESETS["voc2010"]


def test_incomplete_protocol_without_extends_lists_missing_fields(tmp_path):
    message = error_of("name: x\nmatching: voc\n", tmp_path)
    assert "expected `extends: PRESET`" in message
    assert "missing: iou_type, iou_thresholds, iou_comparison, box_convention" in message


def test_linspace_thresholds(tmp_path):
    p = load("extends: voc2010\niou_thresholds: {start: 0.3, stop: 0.7, num: 5}\n", tmp_path)
    assert p.iou_thresholds == tuple(float(t) for t in np.linspace(0.3, 0.7, 5))


def test_yaml_12_exponent_floats_are_numbers():
    assert parse_yaml("a: [1e10, 2.5E-3, -1e2]") == {"a": [1e10, 2.5e-3, -100.0]}
    assert parse_yaml("a: '1e10'") == {"a": "1e10"}


def test_custom_area_ranges_keep_their_order_and_names(tmp_path):
    p = load(
        "extends: coco\narea_ranges: {all: [0, 1e10], tiny: [0, 64], huge: [1e6, 1e10]}\n"
        "summary: configured\n",
        tmp_path,
    )
    assert p.area_ranges == (("all", 0.0, 1e10), ("tiny", 0.0, 64.0), ("huge", 1e6, 1e10))


# --------------------------------------------------------------------------------------------
# summary: switched to configured when max_dets changes, visibly
# --------------------------------------------------------------------------------------------


def test_changing_max_dets_switches_summary_and_says_so(tmp_path):
    p = load("extends: coco\nmax_dets: [1, 10, 300]\n", tmp_path)
    assert p.summary == "configured"
    assert "summary set to 'configured' because max_dets changed" in p.source
    assert p.to_dict()["summary"] == "configured"


def test_explicit_summary_is_kept(tmp_path):
    p = load("extends: coco\nmax_dets: [1, 10, 300]\nsummary: pycocotools\n", tmp_path)
    assert p.summary == "pycocotools"
    assert "because max_dets changed" not in p.source


def test_same_max_dets_or_configured_parent_does_not_switch(tmp_path):
    assert load("extends: coco\nmax_dets: [1, 10, 100]\n", tmp_path).summary == "pycocotools"
    p = load("extends: voc2010\nmax_dets: [100]\n", tmp_path)
    assert "because max_dets changed" not in p.source


def test_set_overrides_follow_the_same_rule():
    p = apply_overrides(PRESETS["coco"], {"max_dets": [1, 10, 300]})
    assert p.summary == "configured"
    assert "--set max_dets=[1, 10, 300]" in p.source
    assert "because max_dets changed" in p.source
    assert apply_overrides(PRESETS["coco"], {}) is PRESETS["coco"]


@pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning")  # generated data: zero-area boxes
def test_custom_max_dets_end_to_end_against_pycocotools(tmp_path):
    """COCO with maxDets [1, 10, 300]: arrays equal pycocotools; headlines named from config."""
    from tests.crosscheck.generate import generate
    from tests.reference.run_pycocotools import run_pycocotools

    gt, dt = generate(seed=2100, max_images=5, max_classes=3, force_many_dets=True)
    counts = {}
    for d in dt:
        counts[(d["image_id"], d["category_id"])] = counts.get((d["image_id"], d["category_id"]), 0) + 1
    assert max(counts.values()) > 100  # the cap matters
    protocol = load("extends: coco-pycocotools\nmax_dets: [1, 10, 300]\n", tmp_path)
    result = deteval.evaluate(gt, dt, protocol)
    ref = run_pycocotools(gt, dt, max_dets=[1, 10, 300])
    expected = np.where(ref.precision == -1, np.nan, ref.precision)
    np.testing.assert_allclose(result.precision, expected, rtol=0, atol=1e-15)
    assert set(result.metrics) >= {"AP", "AP50", "AP75", "AR1", "AR10", "AR300"}
    assert "AR100" not in result.metrics
    at_300 = expected[:, :, :, 0, 2]
    assert result.metrics["AP"] == pytest.approx(float(np.mean(at_300[~np.isnan(at_300)])), abs=1e-15)
    assert result.metrics["AR300"] == pytest.approx(ref.stats[8], abs=1e-15)  # pycocotools' AR@maxDets[2]
    assert ref.stats[0] == -1  # what pycocotools prints for AP: the hard-coded 100 is absent


def test_pycocotools_summary_kept_on_request_gives_undefined_ap_with_a_warning(tmp_path):
    protocol = load("extends: coco\nmax_dets: [1, 10, 300]\nsummary: pycocotools\n", tmp_path)
    with pytest.warns(InputWarning, match="set summary: configured"):
        result = deteval.evaluate(str(FIXTURE_GT), str(FIXTURE_DT), protocol)
    assert np.isnan(result.metrics["AP"])
    assert any("set summary: configured" in w for w in result.warnings)


def test_result_records_resolved_protocol_and_hash(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("extends: voc2007\nbox_convention: continuous\n")
    entry = deteval.evaluate(str(FIXTURE_GT), str(FIXTURE_DT), str(path)).to_dict()
    protocol = load_protocol_file(path)
    assert entry["protocol"] == "mine"
    assert entry["config"] == protocol.to_dict()
    assert entry["protocol_hash"] == protocol.fingerprint() == PRESETS["voc2007-continuous"].fingerprint()


# --------------------------------------------------------------------------------------------
# Bad configs: each one an error naming file, key path, expected and found
# --------------------------------------------------------------------------------------------

BAD = {
    "unknown key": (
        "extends: coco\niou_treshold: [0.5]\n",
        "cfg.yaml: iou_treshold: unknown key (did you mean 'iou_thresholds'?); expected one of "
        "extends, name, source, iou_type, iou_thresholds",
    ),
    "duplicate key": (
        "extends: coco\nmatching: coco\nmatching: voc\n",
        "cfg.yaml: matching: duplicate key (lines 2 and 3); expected each key once",
    ),
    "nested duplicate key": (
        "extends: coco\narea_ranges:\n  all: [0, 1e10]\n  all: [0, 5]\n",
        "cfg.yaml: area_ranges.all: duplicate key (lines 3 and 4)",
    ),
    "string threshold": (
        'extends: voc2010\niou_thresholds: "0.5"\n',
        "cfg.yaml: iou_thresholds: expected a non-empty list of numbers in [0, 1] (e.g. "
        "[0.5]) or {start: 0.5, stop: 0.95, num: 10}, found the string '0.5'",
    ),
    "scalar threshold": (
        "extends: voc2010\niou_thresholds: 0.5\n",
        "iou_thresholds: expected a non-empty list",
    ),
    "empty thresholds": ("extends: voc2010\niou_thresholds: []\n", "iou_thresholds: expected a non-empty"),
    "threshold out of range": (
        "extends: voc2010\niou_thresholds: [0.5, 1.5]\n",
        "cfg.yaml: iou_thresholds[1]: expected a number in [0, 1], found 1.5",
    ),
    "boolean threshold": (
        "extends: voc2010\niou_thresholds: [true]\n",
        "iou_thresholds[0]: expected a number in [0, 1], found true (a boolean",
    ),
    "duplicate thresholds": (
        "extends: voc2010\niou_thresholds: [0.5, 0.5]\n",
        "iou_thresholds: expected distinct thresholds",
    ),
    "linspace num": (
        "extends: coco\niou_thresholds: {start: 0.5, stop: 0.95, num: 0}\n",
        "iou_thresholds.num: expected an integer in [1, 1000], found 0",
    ),
    "linspace keys": (
        "extends: coco\niou_thresholds: {start: 0.5, stop: 0.95}\n",
        "iou_thresholds: expected a list of numbers, or exactly {start, stop, num}",
    ),
    "enum value": (
        "extends: voc2010\nmatching: pascal\n",
        "cfg.yaml: matching: expected one of 'coco', 'voc', 'ultralytics', found the string 'pascal'",
    ),
    "yaml boolean for enum": (
        "extends: voc2010\ndifficult: no\n",
        "difficult: expected one of 'ignore', 'count', found false (a boolean",
    ),
    "comparison unquoted": (
        "extends: voc2010\niou_comparison: >=\n",
        "cfg.yaml: line 2, column 18: invalid YAML: expected chomping or indentation "
        'indicators, but found \'=\' (quote values that start with ">" or "|", e.g. '
        'iou_comparison: ">=")',
    ),
    "comparison wrong": (
        "extends: voc2010\niou_comparison: '=>'\n",
        "iou_comparison: expected one of '>=', '>' (quoted",
    ),
    "area order": (
        "extends: coco\narea_ranges: {all: [10, 0]}\n",
        "cfg.yaml: area_ranges.all: expected [lo, hi] with lo <= hi, found the list [10, 0]",
    ),
    "area list": (
        "extends: coco\narea_ranges: [[0, 1]]\n",
        "area_ranges: expected a non-empty mapping name: [lo, hi]",
    ),
    "area string": (
        'extends: coco\narea_ranges: {all: [0, "1e10"]}\n',
        "area_ranges.all[1]: expected a finite number >= 0 (areas in pixels², e.g. 1e10 for no "
        "upper bound), found the string '1e10'",
    ),
    "area negative": (
        "extends: coco\narea_ranges: {all: [-1, 10]}\n",
        "area_ranges.all[0]: expected a finite number >= 0",
    ),
    "area infinite": (
        "extends: coco\narea_ranges: {all: [0, .inf]}\n",
        "area_ranges.all[1]: expected a finite number >= 0",
    ),
    "area three numbers": (
        "extends: coco\narea_ranges: {all: [0, 1, 2]}\n",
        "area_ranges.all: expected [lo, hi], two numbers",
    ),
    "area name": (
        "extends: coco\narea_ranges: {1: [0, 10]}\n",
        "area_ranges.1: expected a range name that is a non-empty string, found 1",
    ),
    "max_dets float": (
        "extends: coco\nmax_dets: [1, 10.5]\n",
        "cfg.yaml: max_dets[1]: expected a positive integer, found 10.5",
    ),
    "max_dets zero": ("extends: coco\nmax_dets: [0]\n", "max_dets[0]: expected a positive integer, found 0"),
    "max_dets order": (
        "extends: coco\nmax_dets: [10, 1]\n",
        "max_dets: expected strictly increasing values (pycocotools sorts them), found the list [10, 1]",
    ),
    "max_dets scalar": (
        "extends: coco\nmax_dets: 100\n",
        "max_dets: expected a non-empty list of positive integers (e.g. [1, 10, 100]) or "
        "null for no cap, found 100",
    ),
    "name type": ("extends: coco\nname: 12\n", "cfg.yaml: name: expected a non-empty string, found 12"),
    "not a mapping": (
        "- a\n- b\n",
        "cfg.yaml: expected a mapping of protocol fields (extends: PRESET plus "
        "the fields to change, or every field), found the list ['a', 'b']",
    ),
    "empty file": ("", "found an empty document"),
    "two documents": (
        "extends: coco\n---\nextends: voc2007\n",
        "cfg.yaml: line 2, column 1: invalid YAML: but found another document",
    ),
    "tab indentation": ("extends: coco\n\tmatching: voc\n", "(YAML indentation uses spaces, not tabs)"),
    "unclosed list": ("extends: coco\nmax_dets: [1, 10\n", "invalid YAML"),
    "custom tag": (
        "extends: coco\nmax_dets: !custom [1]\n",
        "cfg.yaml: max_dets: tag '!custom' (line 2) is not allowed; expected plain YAML values",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_config_message(case, tmp_path):
    text, expected = BAD[case]
    message = error_of(text, tmp_path)
    assert expected in message
    assert message.startswith(str(tmp_path / "cfg.yaml") + ": ")


@pytest.mark.parametrize(
    "tagged",
    [
        'extends: coco\nname: !!python/object/apply:os.system ["touch {marker}"]\n',
        '!!python/object/apply:subprocess.check_call [["touch", "{marker}"]]\n',
        'extends: coco\nsource: !!python/object/new:os.system ["touch {marker}"]\n',
        "extends: coco\nname: !!python/name:os.system\n",
        "!!python/object:deteval.protocol.Protocol {{name: x}}\n",
        'extends: coco\narea_ranges: {{all: !!python/object/apply:os.system ["touch {marker}"]}}\n',
    ],
)
def test_python_tags_execute_nothing(tagged, tmp_path):
    marker = tmp_path / "PWNED"
    message = error_of(tagged.format(marker=marker), tmp_path)
    assert (
        "is not allowed; expected plain YAML values (deteval loads YAML safely: nothing was "
        "constructed or run)" in message
    )
    assert "'!!python/" in message
    assert not marker.exists()


def test_python_tag_names_its_key_path(tmp_path):
    message = error_of("extends: coco\narea_ranges: {all: !!python/object/apply:os.getcwd []}\n", tmp_path)
    assert ": area_ranges.all: tag '!!python/object/apply:os.getcwd' (line 2) is not allowed" in message


def test_alias_bomb_is_refused_quickly(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    lines += ["extends: coco", "iou_thresholds: *a8"]
    start = time.perf_counter()
    message = error_of("\n".join(lines) + "\n", tmp_path)
    assert time.perf_counter() - start < 5
    assert "anchors and aliases" in message
    assert "are not allowed" in message


def test_deeply_nested_yaml_is_an_error_not_a_crash(tmp_path):
    message = error_of("extends: coco\nname: " + "[" * 5000 + "]" * 5000 + "\n", tmp_path)
    assert "cfg.yaml: " in message


def test_oversized_file_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("extends: coco\n" + "#" * MAX_CONFIG_BYTES + "\n")
    with pytest.raises(
        ConfigError,
        match=r"big\.yaml: \d+ bytes; expected a readable YAML protocol file of at most 1048576 bytes",
    ):
        load_protocol_file(path)


def test_undecodable_file(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"extends: coco\nsource: caf\xe9\n")
    # The one text policy: the file, line and byte (it said "expected UTF-8 text, found
    # undecodable bytes", without the place, before protocol files were read by read_text).
    with pytest.raises(
        ConfigError,
        match=r"latin\.yaml:2: not UTF-8 text \(byte 0xe9\); expected a readable YAML protocol file",
    ):
        load_protocol_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(
        ConfigError, match=r"nope\.yaml: file not found; expected a readable YAML protocol file"
    ):
        load_protocol_file(tmp_path / "nope.yaml")


def test_cross_field_errors_from_the_protocol_name_the_file(tmp_path, monkeypatch):
    """A check the Protocol itself makes still names the file."""
    import deteval.protocol.yaml as config

    monkeypatch.setattr(
        config, "_check_field", lambda key, value, where: tuple(value) if isinstance(value, list) else value
    )
    message = error_of("extends: coco\nmax_dets: [10, 1]\n", tmp_path)
    assert message.startswith(
        f"{tmp_path / 'cfg.yaml'}: protocol 'cfg': max_dets: expected strictly "
        f"increasing values (pycocotools sorts them), found the tuple [10, 1]"
    )


def test_parse_yaml_value_for_set():
    assert parse_yaml_value("[0.3]") == [0.3]
    assert parse_yaml_value("continuous") == "continuous"
    with pytest.raises(
        ConfigError,
        match=r"--set: line 1, column 5: invalid YAML: .*; expected a value "
        r"in YAML syntax for max_dets",
    ):
        parse_yaml_value("[0.3", where="--set", key="max_dets")


def test_apply_overrides_errors():
    with pytest.raises(
        ConfigError, match=r"--set: iou_treshold: unknown key \(did you mean 'iou_thresholds'"
    ):
        apply_overrides(PRESETS["coco"], {"iou_treshold": [0.5]})
    with pytest.raises(ConfigError, match=r"--set: max_dets\[0\]: expected a positive integer, found -1"):
        apply_overrides(PRESETS["coco"], {"max_dets": [-1]})


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def run_cli(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_protocol_yaml_path_and_repeat(tmp_path, capsys):
    path = tmp_path / "loose.yaml"
    path.write_text("extends: voc2010\niou_thresholds: [0.3]\n")
    code, out, _ = run_cli(
        [
            "evaluate",
            "--gt",
            FIXTURE_GT,
            "--dt",
            FIXTURE_DT,
            "--protocol",
            "voc2010",
            "--protocol",
            path,
            "--format",
            "json",
            "-q",
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    assert [r["protocol"] for r in doc["results"]] == ["voc2010", "loose"]
    assert doc["results"][1]["config"]["iou_thresholds"] == [0.3]
    assert doc["results"][1]["protocol_hash"] == load_protocol_file(path).fingerprint()


def test_cli_bad_config_exits_3_with_message(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("extends: coco\nmax_dets: [1, 10.5]\n")
    code, out, err = run_cli(["evaluate", "--gt", FIXTURE_GT, "--dt", FIXTURE_DT, "--protocol", path], capsys)
    assert code == 3
    assert out == ""
    assert f"deteval: error: {path}: max_dets[1]: expected a positive integer, found 10.5" in err


def test_cli_set_is_validated_like_a_file(capsys):
    code, _, err = run_cli(
        ["evaluate", "--gt", FIXTURE_GT, "--dt", FIXTURE_DT, "--set", 'iou_thresholds="0.5"'], capsys
    )
    assert code == 3
    assert "--set: iou_thresholds: expected a non-empty list of numbers in [0, 1]" in err
    code, _, err = run_cli(
        [
            "evaluate",
            "--gt",
            FIXTURE_GT,
            "--dt",
            FIXTURE_DT,
            "--set",
            "area_ranges={all: [0, 1e10], all: [0, 1]}",
        ],
        capsys,
    )
    assert code == 3
    assert "--set: area_ranges.all: duplicate key (columns 2 and 18 of line 1)" in err


def test_cli_set_max_dets_switches_summary_visibly(capsys):
    code, out, _ = run_cli(
        [
            "evaluate",
            "--gt",
            FIXTURE_GT,
            "--dt",
            FIXTURE_DT,
            "--set",
            "max_dets=[1, 10, 300]",
            "--format",
            "json",
            "-q",
        ],
        capsys,
    )
    assert code == 0
    entry = json.loads(out)["results"][0]
    assert entry["config"]["summary"] == "configured"
    assert "because max_dets changed" in entry["config"]["source"]
    assert entry["metrics"]["AP"] == pytest.approx(0.4615747289, abs=1e-10)
    assert "AR300" in entry["metrics"]


def test_cli_protocols_lists_presets_with_fields_and_source(capsys):
    code, out, _ = run_cli(["protocols"], capsys)
    assert code == 0
    for name, p in PRESETS.items():
        assert f"{name} [{p.fingerprint()}]\n  {p.source}" in out
    assert "    matching: voc" in out


def test_cli_protocols_shows_a_yaml_file_resolved(tmp_path, capsys):
    path = tmp_path / "c300.yaml"
    path.write_text("extends: coco\nmax_dets: [1, 10, 300]\n")
    code, out, _ = run_cli(["protocols", path, "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc[str(path)]["max_dets"] == [1, 10, 300]
    assert doc[str(path)]["summary"] == "configured"


def test_cli_protocols_yaml_output_loads_back(tmp_path, capsys):
    code, out, _ = run_cli(["protocols", "voc2007-pyfrcnn", "--format", "yaml"], capsys)
    assert code == 0
    assert load_protocol_text(out) == PRESETS["voc2007-pyfrcnn"]


def test_cli_protocols_unknown_name_exits_3(capsys):
    code, _, err = run_cli(["protocols", "voc2099"], capsys)
    assert code == 3
    assert "unknown protocol 'voc2099'" in err
