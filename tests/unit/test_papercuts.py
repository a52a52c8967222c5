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
