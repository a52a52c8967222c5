"""Every example in the README and docs/ runs.

`deteval ...` lines through the CLI, Python blocks through exec (from the repository root, as a
reader would run them).
"""

import os
import re
import shlex
from pathlib import Path

import pytest

from deteval.cli import main
from tests import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(), flags=re.S)


def _commands() -> list:
    out = []
    for doc in DOCS:
        for block in _blocks(doc, "bash"):
            for line in block.splitlines():
                line = line.split(" # ")[0].strip()
                if line.startswith("deteval "):
                    out.append(pytest.param(line, id=f"{doc.name}:{line[:60]}"))
    return out


def _python_blocks() -> list:
    return [
        pytest.param(block, id=f"{doc.name}#{i}")
        for doc in DOCS
        for i, block in enumerate(_blocks(doc, "python"))
    ]


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("line", _commands())
def test_documented_command_runs(line, capsys):
    argv = shlex.split(line)[1:]
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err


@pytest.mark.parametrize("block", _python_blocks())
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")  # a reader sees them; here: it runs
def test_documented_python_runs(block):
    # as a reader's script runs it: a block guarded by `if __name__ == "__main__":` runs its main()
    exec(compile(block, "<doc>", "exec"), {"__name__": "__main__"})


def test_the_dask_example_runs_saved_as_a_script(tmp_path):
    """Worker processes import the script: the docs' example must run as a file, not only in exec."""
    pytest.importorskip("distributed")
    import subprocess
    import sys

    block = next(b for b in _blocks(ROOT / "docs" / "training-loop.md", "python") if "LocalCluster" in b)
    script = tmp_path / "shards.py"
    script.write_text(block)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_readme_starts_with_the_two_commands():
    first = _blocks(ROOT / "README.md", "bash")[0].splitlines()
    assert (
        first[0] == "pip install . && deteval evaluate --gt fixtures/coco/gt.json --dt fixtures/coco/dt.json"
    )
    assert first[1] == 'pip install -e ".[test]" && python -m pytest -q -n 2'
    # CI runs the README's own test command, as its last line
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == first[1].split(" && ")[1]
    assert os.access(ROOT / ".ci" / "run", os.R_OK)
