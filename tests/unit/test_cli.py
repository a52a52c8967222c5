"""The command line: exit codes, stream discipline, `validate`, `--strict`, security, determinism.

Exit codes: 0 ok, 2 usage, 3 invalid input or config; with 3, stdout holds nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deteval.cli import build_parser, main
from tests import ROOT

GOOD_GT = ROOT / "fixtures" / "coco" / "gt.json"
GOOD_DT = ROOT / "fixtures" / "coco" / "dt.json"
BROKEN = ROOT / "fixtures" / "broken"
SECURITY = BROKEN / "security"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def evaluate(capsys, *extra, gt=GOOD_GT, dt=GOOD_DT):
    return run(capsys, "evaluate", "--gt", gt, "--dt", dt, *extra)


def assert_input_error(result, *needles):
    code, out, err = result
    assert code == 3, err
    assert out == "", "stdout must be empty when the exit code is 3"
    assert err.startswith("deteval: error: ")
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


# -- usage -----------------------------------------------------------------------------------


def _commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)


@pytest.mark.parametrize("command", _commands())
def test_help_of_every_command_has_an_example(capsys, command):
    code, out, err = run(capsys, command, "--help")
    assert code == 0
    assert err == ""
    assert "example" in out
    assert f"deteval {command}" in out


@pytest.mark.parametrize("command", _commands())
def test_the_parser_of_one_command_parses_as_the_whole_parser(command):
    """``build_parser(command)`` (what main builds) adds that command's options only, same outcome.

    Its help, its defaults and the top-level help are those of the parser with every command;
    the other commands are listed, without their options.
    """
    whole, alone = build_parser(), build_parser(command)

    def sub_of(parser):
        return next(a for a in parser._actions if a.dest == "command").choices

    assert alone.format_help() == whole.format_help()
    assert sub_of(alone)[command].format_help() == sub_of(whole)[command].format_help()
    defaults = {a.dest: a.default for a in sub_of(whole)[command]._actions}
    assert {a.dest: a.default for a in sub_of(alone)[command]._actions} == defaults
    others = [name for name in sub_of(alone) if name != command]
    assert others
    assert all(len(sub_of(alone)[name]._actions) == 1 for name in others)  # -h only
    assert all(len(sub_of(whole)[name]._actions) > 1 for name in others)


def test_main_builds_the_parser_of_the_command_it_runs(monkeypatch, capsys):
    from deteval import cli

    built = []
    monkeypatch.setattr(
        cli, "build_parser", lambda command=None: built.append(command) or build_parser(command)
    )
    for argv in (["protocols", "--list"], ["--help"], ["no-such-command"], ["-h", "rank"]):
        with contextlib.suppress(SystemExit):
            cli.main(argv)
    capsys.readouterr()
    assert built == ["protocols", None, None, "rank"]


def test_top_level_help_and_version(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "example" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.startswith("deteval ")


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--gt", str(GOOD_GT), "--dt", str(GOOD_DT), "--no-such-flag"],
        ["evaluate", "--gt", str(GOOD_GT)],
        ["evaluate", "--gt", str(GOOD_GT), "--dt", str(GOOD_DT), "--format", "xml"],
        ["validate"],
        ["no-such-command"],
        [],
    ],
)
def test_usage_errors_exit_2_with_usage_on_stderr(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert "usage: deteval" in err


def test_format_json_keeps_stdout_pure_json_without_nan(capsys):
    code, out, err = evaluate(capsys, "--format", "json")
    assert code == 0
    doc = json.loads(out, parse_constant=lambda token: pytest.fail(f"{token} in JSON output"))
    assert doc["results"][0]["metrics"]["APs"] is None  # undefined -> null, not NaN
    assert "deteval: note:" in err  # notes and warnings go to stderr, not into stdout


def test_quiet_silences_stderr(capsys):
    code, out, err = evaluate(capsys, "--format", "json", "-q")
    assert code == 0
    assert err == ""
    assert json.loads(out)["notes"]  # still in the result


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_every_format_exits_0(capsys, fmt):
    code, out, _ = evaluate(capsys, "--format", fmt)
    assert code == 0
    assert out


# -- validate --------------------------------------------------------------------------------


def test_validate_reports_what_it_found(capsys):
    code, out, err = run(capsys, "validate", "--gt", GOOD_GT, "--dt", GOOD_DT)
    assert code == 0
    assert err == ""
    assert "5 images, 4 categories, 8 objects" in out
    assert "13 detections on 5 of 5 images" in out
    assert "categories without objects: ['bird']" in out
    assert out.rstrip().endswith("OK: the inputs can be scored")


def test_validate_ground_truth_only_as_json(capsys):
    code, out, _ = run(capsys, "validate", "--gt", GOOD_GT, "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["valid"] is True
    assert doc["dt"] is None
    assert doc["gt"]["objects"] == 8
    assert doc["gt"]["categories_without_objects"] == ["bird"]


def test_validate_lists_warnings_and_strict_refuses(capsys):
    dt = BROKEN / "coco" / "dt_over_max_dets.json"
    code, out, _ = run(capsys, "validate", "--gt", GOOD_GT, "--dt", dt, "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert any("20 detections beyond max_dets=100" in w for w in doc["warnings"])
    assert_input_error(
        run(capsys, "validate", "--gt", GOOD_GT, "--dt", dt, "--strict"),
        "--strict",
        "20 detections beyond max_dets=100",
    )


def test_validate_scores_nothing_but_finds_every_error(capsys):
    assert_input_error(
        run(capsys, "validate", "--gt", BROKEN / "coco" / "gt_iscrowd_string.json"),
        "gt_iscrowd_string.json",
        "annotation #1",
        "`iscrowd`",
    )
    assert_input_error(
        run(capsys, "validate", "--gt", GOOD_GT, "--dt", BROKEN / "coco" / "dt_unknown_image.json"),
        "dt_unknown_image.json",
        "7 detections",
        "`image_id`",
    )


def test_validate_honours_the_protocol(capsys):
    """A segm-only record is fine for a segm evaluation, an error for bbox (the default).

    For segm, validate checks the masks as evaluate does (this ground truth has none).
    """
    dt = BROKEN / "coco" / "dt_segmentation_only.json"
    assert_input_error(run(capsys, "validate", "--gt", GOOD_GT, "--dt", dt), "no `bbox`")
    segm = ("--gt", GOOD_GT, "--dt", dt, "--iou-type", "segm")
    for command in ("validate", "evaluate"):
        assert_input_error(run(capsys, command, *segm), "annotations: no `segmentation`")
    segm_gt = BROKEN / "coco" / "segm_gt.json"
    code, _, err = run(
        capsys, "validate", "--gt", segm_gt, "--dt", BROKEN / "coco" / "segm_dt.json", "--iou-type", "segm"
    )
    assert code == 0, err


# -- --strict --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dt", "warning"),
    [
        ("dt_empty.json", "no detections"),
        ("dt_zero_size.json", "zero width or height"),
        ("dt_xyxy_as_xywh.json", "[x1, y1, x2, y2]"),
        ("dt_normalized.json", "normalized"),
        ("dt_over_max_dets.json", "max_dets=100"),
    ],
)
def test_strict_makes_warnings_errors(capsys, dt, warning):
    code, out, err = evaluate(capsys, "--format", "json", dt=BROKEN / "coco" / dt)
    assert code == 0
    assert any(warning in w for w in json.loads(out)["warnings"])
    assert warning in err
    assert_input_error(evaluate(capsys, "--strict", dt=BROKEN / "coco" / dt), "--strict", warning)


def test_strict_on_clean_input_is_silent(capsys, tmp_path):
    """A clean input (every class has ground truth) passes --strict with no warning at all."""
    gt = json.loads(GOOD_GT.read_text())
    gt["categories"] = [c for c in gt["categories"] if c["name"] != "bird"]
    dt = [d for d in json.loads(GOOD_DT.read_text()) if d["category_id"] != 4]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    code, out, err = evaluate(
        capsys,
        "--strict",
        "--format",
        "json",
        "--protocol",
        "coco",
        gt=tmp_path / "gt.json",
        dt=tmp_path / "dt.json",
    )
    assert code == 0
    assert err == ""  # (without --protocol: one note naming the default, tests/unit/test_papercuts_notes.py)
    assert json.loads(out)["warnings"] == []


# -- security --------------------------------------------------------------------------------


def test_json_nan_and_infinity_tokens_are_refused(capsys):
    for name in ("dt_nan_score.json", "dt_infinity_coordinate.json"):
        assert_input_error(evaluate(capsys, dt=BROKEN / "coco" / name), name, "NaN/Infinity")


def test_json_duplicate_keys_are_refused(capsys):
    assert_input_error(
        evaluate(capsys, dt=BROKEN / "coco" / "dt_duplicate_key.json"), "duplicate key 'score'"
    )
    assert_input_error(
        evaluate(capsys, gt=BROKEN / "coco" / "gt_duplicate_key.json"), "duplicate key 'iscrowd'"
    )


def test_csv_escapes_formula_class_names(capsys):
    code, out, _ = evaluate(capsys, "--format", "csv", "-q", gt=BROKEN / "coco" / "gt_formula_names.json")
    assert code == 0
    names = [line.split(",", 3)[2] for line in out.splitlines() if ",class," in line]
    assert names == ['"\'=HYPERLINK(""http://x""', "'+1+1", "'-2+3", "'@SUM(A1)"]
    assert not any(line.split(",")[2][:1] in "=+-@" for line in out.splitlines()[1:])


def test_output_equal_to_an_input_is_refused(capsys, tmp_path):
    gt, dt = tmp_path / "gt.json", tmp_path / "dt.json"
    shutil.copy(GOOD_GT, gt)
    shutil.copy(GOOD_DT, dt)
    before = dt.read_bytes(), gt.read_bytes()
    assert_input_error(
        evaluate(capsys, "--output", dt, gt=gt, dt=dt), "--output", "--dt input", "refusing to overwrite"
    )
    assert_input_error(evaluate(capsys, "--output", tmp_path / "." / "gt.json", gt=gt, dt=dt), "--gt input")
    link = tmp_path / "link.json"
    link.symlink_to(dt)
    assert_input_error(evaluate(capsys, "--output", link, gt=gt, dt=dt), "--dt input")
    hard = tmp_path / "hard.json"
    os.link(gt, hard)
    assert_input_error(evaluate(capsys, "--output", hard, gt=gt, dt=dt), "--gt input")
    assert (dt.read_bytes(), gt.read_bytes()) == before


def test_output_over_a_file_inside_an_input_folder_is_refused(capsys, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    victim = results / "comp4_det_test_cat.txt"
    victim.write_text("kept\n")
    assert_input_error(evaluate(capsys, "--output", victim, dt=results), "inside the --dt folder")
    assert victim.read_text() == "kept\n"


def test_unwritable_output_is_an_error_not_a_traceback(capsys, tmp_path):
    assert_input_error(evaluate(capsys, "--output", tmp_path / "no" / "such" / "dir.json"), "cannot write")
    assert_input_error(evaluate(capsys, "--output", tmp_path), "cannot write")


def test_output_file_holds_the_json(capsys, tmp_path):
    out_path = tmp_path / "result.json"
    code, out, _ = evaluate(capsys, "--output", out_path, "--format", "json", "-q")
    assert code == 0
    assert json.loads(out_path.read_text()) == json.loads(out)


def test_yaml_python_tag_is_refused_and_nothing_runs(capsys, tmp_path):
    marker = tmp_path / "PWNED"
    evil = tmp_path / "evil.yaml"
    evil.write_text(
        (SECURITY / "protocol_python_tag.yaml").read_text().replace("/tmp/deteval-pwned", str(marker))
    )
    assert_input_error(evaluate(capsys, "--protocol", evil), "evil.yaml", "python/object", "not allowed")
    assert not marker.exists()
    # the shipped fixture names a marker under /tmp: it must not appear either
    assert_input_error(evaluate(capsys, "--protocol", SECURITY / "protocol_python_tag.yaml"))
    assert not Path("/tmp/deteval-pwned").exists()


def test_set_value_with_python_tag_is_refused(capsys, tmp_path):
    marker = tmp_path / "PWNED"
    assert_input_error(
        evaluate(capsys, "--set", f"name=!!python/object/apply:os.system ['touch {marker}']"), "--set"
    )
    assert not marker.exists()


@pytest.mark.parametrize(
    ("name", "needles"),
    [
        ("protocol_duplicate_key.yaml", ("protocol_duplicate_key.yaml", "max_dets", "duplicate key")),
        (
            "protocol_unknown_key.yaml",
            ("protocol_unknown_key.yaml", "iou_threshold", "unknown key", "iou_thresholds"),
        ),
        ("protocol_wrong_type.yaml", ("protocol_wrong_type.yaml", "iou_thresholds", "found the string")),
    ],
)
def test_bad_yaml_configs_name_file_and_key(capsys, name, needles):
    assert_input_error(evaluate(capsys, "--protocol", SECURITY / name), *needles)


def test_yaml_alias_bomb_is_refused_quickly():
    """Billion laughs in YAML: aliases that expand to 10**9 strings must not be followed."""
    argv = [
        sys.executable,
        "-m",
        "deteval",
        "evaluate",
        "--gt",
        str(GOOD_GT),
        "--dt",
        str(GOOD_DT),
        "--protocol",
        str(SECURITY / "protocol_billion_laughs.yaml"),
    ]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert "anchors and aliases" in proc.stderr
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert "protocol_billion_laughs.yaml" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- determinism -----------------------------------------------------------------------------


def _cli_json(tmp_path: Path, name: str, seed: str, *extra: str) -> bytes:
    out = tmp_path / name
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "deteval",
            "evaluate",
            "--gt",
            str(GOOD_GT),
            "--dt",
            str(GOOD_DT),
            "--protocol",
            "coco",
            "--protocol",
            "voc2007",
            "--protocol",
            "coco-pycocotools",
            "--output",
            str(out),
            "--format",
            "json",
            "-q",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == out.read_bytes()
    return proc.stdout


def test_same_inputs_give_byte_identical_json_across_runs_and_hash_seeds(tmp_path):
    first = _cli_json(tmp_path, "a.json", "0")
    assert _cli_json(tmp_path, "b.json", "12345") == first
    assert _cli_json(tmp_path, "c.json", "random") == first


def test_same_inputs_give_byte_identical_json_across_workers(tmp_path):
    one = _cli_json(tmp_path, "w1.json", "0", "--workers", "1")
    assert _cli_json(tmp_path, "w3.json", "1", "--workers", "3") == one


def test_entry_point_never_prints_a_traceback_on_broken_files(tmp_path):
    """The real process (not main()): a few broken files, exit 3, no traceback."""
    for dt in ("dt_truncated.json", "dt_id_bool.json", "dt_nan_score.json"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "deteval",
                "evaluate",
                "--gt",
                str(GOOD_GT),
                "--dt",
                str(BROKEN / "coco" / dt),
                "--format",
                "json",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 3
        assert proc.stdout == ""
        assert "Traceback" not in proc.stderr
        assert dt in proc.stderr


# -- docs/errors.md: every `console` example gives the exit code and message it shows ---------


def _console_examples() -> list:
    import re
    import shlex

    text = (ROOT / "docs" / "errors.md").read_text()
    out = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        lines = block.strip().splitlines()
        assert lines[0].startswith("$ deteval ")
        assert lines[-1].startswith("[exit ")
        argv = shlex.split(lines[0][len("$ deteval ") :])
        out.append(pytest.param(argv, "\n".join(lines[1:-1]), int(lines[-1][6:-1]), id=" ".join(argv)[:70]))
    return out


@pytest.mark.parametrize(("argv", "stderr", "exit_code"), _console_examples())
def test_errors_doc_examples_are_true(capsys, monkeypatch, argv, stderr, exit_code):
    monkeypatch.chdir(ROOT)
    code, out, err = run(capsys, *argv)
    assert code == exit_code
    assert out == ""
    shown = "\n".join(line for line in err.splitlines() if "no ground truth counted" not in line)
    assert shown == stderr


# --------------------------------------------------------------------------------------------
# Warnings: emitted by the API, recorded and printed once by the CLI; --strict is a filter
# --------------------------------------------------------------------------------------------


def _two_warnings_gt(tmp_path: Path) -> Path:
    """Ground truth with two input warnings: a missing `iscrowd` and a zero-width box."""
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "cat"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 0, 10], "area": 0, "iscrowd": 0},
        ],
    }
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(
        json.dumps([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}])
    )
    return path


@pytest.mark.parametrize(
    "command", [["evaluate"], ["compare", "--protocol", "voc2007", "--protocol", "coco"], ["validate"]]
)
def test_strict_error_names_every_input_warning(capsys, tmp_path, command):
    gt = _two_warnings_gt(tmp_path)
    code, out, err = run(capsys, *command, "--gt", gt, "--dt", tmp_path / "dt.json", "--strict")
    assert (code, out) == (3, "")
    lines = err.splitlines()
    assert lines[0] == "deteval: error: --strict: input warnings are errors:"
    assert len(lines) == 3
    assert "`iscrowd`" in lines[1]
    assert "zero area" in lines[2]


def test_each_warning_is_printed_once_even_under_several_protocols(capsys, tmp_path):
    gt = _two_warnings_gt(tmp_path)
    code, out, err = run(
        capsys,
        "evaluate",
        "--gt",
        gt,
        "--dt",
        tmp_path / "dt.json",
        "--protocol",
        "voc2007",
        "--protocol",
        "voc2010",
        "--format",
        "json",
    )
    assert code == 0
    printed = [line for line in err.splitlines() if line.startswith("deteval: warning: ")]
    assert len(printed) == 2
    assert len(json.loads(out)["warnings"]) == 2


# -- papercuts ---------------------------------------------------------------------------------


def test_compare_no_per_class_keeps_only_the_mean_row(capsys):
    common = (
        "compare",
        "--gt",
        GOOD_GT,
        "--dt",
        GOOD_DT,
        "--protocol",
        "voc2007",
        "--protocol",
        "coco",
        "-q",
    )
    for fmt in ("table", "markdown", "csv"):
        code, full, _ = run(capsys, *common, "--format", fmt)
        code2, short, _ = run(capsys, *common, "--format", fmt, "--no-per-class")
        assert code == code2 == 0
        assert "person" in full
        assert "person" not in short
        assert "mean" in short


def test_a_configured_summary_line_names_its_threshold_and_area(capsys):
    code, out, err = evaluate(
        capsys,
        "--set",
        "iou_thresholds=[0.5, 0.7, 0.9]",
        "--set",
        "summary=configured",
        "--no-per-class",
        "-q",
    )
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.endswith("AP90"))
    assert "IoU=0.90      | area=   all | maxDets=100" in line
    assert "IoU=0.50:0.90 | area=   all | maxDets=100 ] = 0.467   AP\n" in out + "\n"


def test_options_are_never_abbreviated(capsys):
    """Argparse would read --iou as --iou-type: every parser refuses prefixes."""
    code, _, err = evaluate(capsys, "--iou", "segm")
    assert code == 2
    assert "unrecognized arguments: --iou" in err
    code, _, err = run(capsys, "validate", "--gt", GOOD_GT, "--form", "json")
    assert code == 2


def test_protocols_lists_every_field_that_decides_numbers(capsys):
    from deteval.protocol import display_fields

    code, out, _ = run(capsys, "protocols", "coco")
    assert code == 0
    for key in display_fields():
        assert f"    {key}: " in out
    assert "    mask_iou: raster" in out
    assert "    invalid_polygons: even_odd" in out


def test_progress_bar_reaches_the_end_through_every_stage(monkeypatch):
    from deteval import cli

    class FakeBar:
        def __init__(self, total, **_):
            self.total, self.n, self.labels = total, 0, []
            bars.append(self)

        def update(self, k):
            self.n += k

        def set_description(self, label, refresh=True):
            self.labels.append(label.rsplit(" (", 1)[0])  # without its "(2/5)"

        def refresh(self):
            pass

        def close(self):
            pass

    bars: list = []
    import tqdm

    monkeypatch.setattr(tqdm, "tqdm", FakeBar)
    monkeypatch.setattr(cli.sys.stderr, "isatty", lambda: True, raising=False)
    assert (
        cli.main(
            [
                "evaluate",
                "--gt",
                str(GOOD_GT),
                "--dt",
                str(GOOD_DT),
                "--protocol",
                "coco",
                "--protocol",
                "voc2007",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    bar = bars[0]
    assert bar.n == bar.total == 6 * cli._common._Progress.STEPS  # STEPS units a stage
    assert bar.labels == [
        "loading",
        "matching coco",
        "scoring coco",
        "matching voc2007",
        "scoring voc2007",
        "writing the results",
    ]


# -- float-valued flags: NaN, infinities and overflowing literals are usage errors ---------------


def _float_flags() -> list[tuple[str, str, list[str]]]:
    """(command, flag, the command's required options) of every float-valued flag of the parser."""
    import argparse

    from deteval.cli.parser import build_parser

    found = []
    for action in build_parser()._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for command, sub in action.choices.items():
            required = [a.option_strings[0] for a in sub._actions if a.required and a.option_strings]
            for a in sub._actions:
                if a.type is float or getattr(a.type, "is_float_option", False):
                    found.append((command, a.option_strings[0], required))
    return found


_FLOAT_FLAGS = _float_flags()


def test_the_float_flags_are_all_found():
    flags = {(c, f) for c, f, _ in _FLOAT_FLAGS}
    assert {
        ("evaluate", "--confidence"),
        ("evaluate", "--ci"),
        ("analyze", "--iou"),
        ("rank", "--binarize"),
    } <= flags
    assert len(flags) >= 10


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "NaN", "-1e999"])
@pytest.mark.parametrize(
    ("command", "flag", "required"), _FLOAT_FLAGS, ids=[f"{c} {f}" for c, f, _ in _FLOAT_FLAGS]
)
def test_float_flags_refuse_nan_and_infinity_as_usage_errors(
    capsys, tmp_path, command, flag, required, value
):
    argv = [command, *(x for r in required for x in (r, str(tmp_path / "missing"))), f"{flag}={value}"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"deteval {command}: error: argument {flag}: expected ")
    assert "number" in last
    assert value in last


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["evaluate", "--confidence", "nan"],
            "argument --confidence: expected a finite number (a score), found nan",
        ),
        (["evaluate", "--ci", "inf"], "argument --ci: expected a number in (0, 1), e.g. 0.95, found inf"),
        (["analyze", "--iou", "1.5"], "argument --iou: expected a number in [0, 1], found 1.5"),
        (["analyze", "--iou=-1e999"], "argument --iou: expected a number in [0, 1], found -1e999"),
        (["rank", "--binarize", "x"], "argument --binarize: expected a finite number (a score), found x"),
    ],
)
def test_float_flag_messages_name_the_flag_and_the_range(capsys, argv, expected):
    """The user's case: ``--confidence nan`` was a ValueError traceback (JSON cannot hold NaN)."""
    inputs = ["--labels", "l", "--scores", "s"] if argv[0] == "rank" else ["--gt", "g", "--dt", "d"]
    code = main([*argv, *inputs])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err


@pytest.mark.parametrize("value", ["inf", "1e999", "nan", "-inf", "1e999G"])
def test_memory_limit_refuses_nan_and_infinity_as_a_usage_error(capsys, value):
    """``--memory-limit inf`` was an OverflowError traceback (int(inf) in the size parser)."""
    code = main(["evaluate", "--gt", "g", "--dt", "d", f"--memory-limit={value}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert "argument --memory-limit: expected a" in err


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_confidence_nan_on_real_inputs_is_a_usage_error(capsys, value):
    code = main(["evaluate", "--gt", str(GOOD_GT), "--dt", str(GOOD_DT), "--confidence", value])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"deteval evaluate: error: argument --confidence: expected a finite number (a score), found {value}"
    )
