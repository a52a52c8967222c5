"""The one output writer: special files written directly, symbolic links followed, errors reported.

Real device nodes made with ``os.mknod`` in the test's folder (never the machine's /dev), real
FIFOs with a real reader, real symbolic links; through the function and through the CLI.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from deteval.cli import main
from deteval.errors import ConfigError
from deteval.io.output import write_output
from tests import ROOT

GOOD_GT = ROOT / "fixtures" / "coco" / "gt.json"
GOOD_DT = ROOT / "fixtures" / "coco" / "dt.json"
NULL, FULL = (1, 3), (1, 7)


def char_device(path: Path, numbers: tuple[int, int]) -> Path:
    """A character device node at ``path`` (null: 1,3; full: 1,7), checked to be one."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*numbers))
    except PermissionError:
        pytest.skip("making device nodes needs root (CAP_MKNOD)")
    assert stat.S_ISCHR(os.lstat(path).st_mode)
    assert (os.major(os.lstat(path).st_rdev), os.minor(os.lstat(path).st_rdev)) == numbers
    return path


def evaluate(capsys, *extra) -> tuple[int, str, str]:
    code = main(
        ["evaluate", "--gt", str(GOOD_GT), "--dt", str(GOOD_DT), "--format", "json", "-q", *map(str, extra)]
    )
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def leftovers(*folders: Path) -> list[str]:
    """Temporary files the writer may have left behind."""
    return [p.name for folder in folders for p in folder.iterdir() if p.name.endswith(".tmp")]


# -- character devices -------------------------------------------------------------------------


def test_a_null_device_stays_a_device(tmp_path):
    null = char_device(tmp_path / "null", NULL)
    write_output(null, '{"ok": true}\n')
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert leftovers(tmp_path) == []


def test_a_null_device_through_the_cli_output_and_matches(capsys, tmp_path):
    null = char_device(tmp_path / "null", NULL)
    code, out, err = evaluate(capsys, "--output", null, "--matches", null)
    assert code == 0, err
    assert json.loads(out)["results"]
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert leftovers(tmp_path) == []


def test_a_full_device_is_an_error_naming_the_path(tmp_path):
    full = char_device(tmp_path / "full", FULL)
    with pytest.raises(ConfigError, match=r"--output .*full: cannot write \(No space left on device\)"):
        write_output(full, '{"ok": true}\n')
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    assert leftovers(tmp_path) == []


def test_a_full_device_through_the_cli_is_exit_3(capsys, tmp_path):
    full = char_device(tmp_path / "full", FULL)
    code, out, err = evaluate(capsys, "--output", full)
    assert code == 3
    assert err.count("\n") == 1
    assert err.startswith(f"deteval: error: --output {full}: cannot write (No space left on device)")
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_a_path_inside_a_device_is_an_error(tmp_path):
    null = char_device(tmp_path / "null", NULL)
    with pytest.raises(ConfigError, match="cannot write"):
        write_output(null / "x.json", "x")
    assert stat.S_ISCHR(os.lstat(null).st_mode)


# -- FIFOs and open descriptors ------------------------------------------------------------------


def read_fifo_in_thread(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    received: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as f:
            received.append(f.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return thread, received


def test_a_fifo_reader_receives_everything(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    payload = json.dumps({"x": list(range(100_000))}) + "\n"  # more than a pipe holds
    thread, received = read_fifo_in_thread(fifo)
    write_output(fifo, payload)
    thread.join(timeout=30)
    assert received == [payload.encode()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert leftovers(tmp_path) == []


def test_a_fifo_through_the_cli(capsys, tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    thread, received = read_fifo_in_thread(fifo)
    code, out, err = evaluate(capsys, "--output", fifo)
    thread.join(timeout=30)
    assert code == 0, err
    assert json.loads(received[0]) == json.loads(out)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_open_descriptor_path_is_written_in_place(tmp_path):
    """``/proc/self/fd/N`` (what ``/dev/stdout`` leads to) names an open file: written, never replaced."""
    read_end, write_end = os.pipe()
    try:
        write_output(f"/proc/self/fd/{write_end}", "through the pipe\n")
        os.close(write_end)
        assert os.read(read_end, 100) == b"through the pipe\n"
    finally:
        os.close(read_end)
    target = tmp_path / "stdout.txt"
    with open(target, "wb") as f:  # an open regular file: the same file afterwards, not a new one
        inode = os.fstat(f.fileno()).st_ino
        write_output(f"/proc/self/fd/{f.fileno()}", "in place\n")
    assert (target.read_text(), target.stat().st_ino) == ("in place\n", inode)
    assert leftovers(tmp_path) == []


def test_a_fifo_whose_reader_goes_away_is_an_error(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)

    def reader() -> None:
        with open(fifo, "rb") as f:
            f.read(10)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    with pytest.raises(ConfigError, match=r"cannot write \(Broken pipe\); the output is incomplete"):
        write_output(fifo, b"x" * (8 << 20))
    thread.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_to_the_processs_stdout_writes_into_it(tmp_path):
    """``--output`` naming a link to ``/proc/self/fd/1`` (what ``/dev/stdout`` is): the JSON on stdout."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    proc = subprocess.run(
        [sys.executable, "-m", "deteval", "evaluate", "--gt", GOOD_GT, "--dt", GOOD_DT, "--format", "json"]
        + ["-q", "--output", link],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout[: len(proc.stdout) // 2], proc.stdout[len(proc.stdout) // 2 :]
    assert first == second  # --output, then the printed JSON
    assert json.loads(first)["results"]
    assert link.is_symlink()
    assert os.readlink(link) == "/proc/self/fd/1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stdout"]


# -- symbolic links ----------------------------------------------------------------------------


def test_a_symlinked_output_updates_its_target_and_stays_a_link(capsys, tmp_path):
    runs = tmp_path / "runs" / "7"
    runs.mkdir(parents=True)
    (runs / "result.json").write_text("old\n")
    latest = tmp_path / "latest.json"
    latest.symlink_to(Path("runs") / "7" / "result.json")
    code, out, err = evaluate(capsys, "--output", latest)
    assert code == 0, err
    assert latest.is_symlink()
    assert os.readlink(latest) == os.path.join("runs", "7", "result.json")
    assert json.loads((runs / "result.json").read_text()) == json.loads(out)
    assert leftovers(tmp_path, runs) == []


def test_a_dangling_symlink_creates_its_target(tmp_path):
    (tmp_path / "runs").mkdir()
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "runs" / "8.json")
    write_output(link, "new\n")
    assert link.is_symlink()
    assert (tmp_path / "runs" / "8.json").read_text() == "new\n"
    assert leftovers(tmp_path, tmp_path / "runs") == []


def test_a_dangling_symlink_into_a_missing_folder_is_an_error(tmp_path):
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "nowhere" / "8.json")
    with pytest.raises(ConfigError, match="cannot write"):
        write_output(link, "new\n")
    assert link.is_symlink()


def test_a_symlink_to_an_input_is_refused(capsys, tmp_path):
    dt = tmp_path / "dt.json"
    dt.write_bytes(GOOD_DT.read_bytes())
    link = tmp_path / "out.json"
    link.symlink_to(dt)
    code, out, err = (
        main(["evaluate", "--gt", str(GOOD_GT), "--dt", str(dt), "--output", str(link)]),
        *capsys.readouterr(),
    )
    assert (code, out) == (3, "")
    assert "refusing to overwrite it" in err
    assert dt.read_bytes() == GOOD_DT.read_bytes()


def test_a_regular_file_is_replaced_atomically_and_keeps_its_mode(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old\n")
    target.chmod(0o640)
    inode = target.stat().st_ino
    write_output(target, "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != inode  # a new file renamed over the old one
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert leftovers(tmp_path) == []


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="is a folder"):
        write_output(tmp_path, "x")


# -- every writer goes through it: plots and the HTML report -------------------------------------


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
@pytest.mark.usefixtures("figures_unless_fast")  # the writer's rules, not the pixels
def test_figures_and_the_report_follow_the_same_rules(tmp_path):
    pytest.importorskip("matplotlib")
    import deteval
    from deteval import plot

    result = deteval.evaluate(str(GOOD_GT), str(GOOD_DT), "coco")
    null = char_device(tmp_path / "null", NULL)
    plot.write_report(result, out=null)
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    full = char_device(tmp_path / "full", FULL)
    with pytest.raises(ConfigError, match="No space left on device"):
        plot.write_report(result, out=full)
    figures = tmp_path / "figures"
    figures.mkdir()
    (tmp_path / "kept.svg").write_text("old")
    (figures / "pr_curves.svg").symlink_to(tmp_path / "kept.svg")
    written = plot.plot_all(result, out_dir=figures, formats=["svg"])
    assert (figures / "pr_curves.svg").is_symlink()
    assert (tmp_path / "kept.svg").read_text().startswith("<?xml")
    assert len(written) == 3
    assert leftovers(tmp_path, figures) == []
