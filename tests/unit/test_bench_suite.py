"""scripts/bench_suite.py's plumbing (no timing is asserted): every planned workload runs.

The page-cache read before each workload's runs once ended the suite at ``import`` (whose
"inputs" are the current directory) with ``IsADirectoryError``, after twenty minutes of runs.
"""

from __future__ import annotations

import argparse
import sys

import pytest

from tests import ROOT


@pytest.fixture
def bench_suite():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_suite as module
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return module


def test_every_planned_workload_runs_including_those_without_input_files(bench_suite, monkeypatch, tmp_path):
    gt, dt = tmp_path / "gt.json", tmp_path / "dt.json"
    gt.write_bytes(b"{}")
    dt.write_bytes(b"[]")
    planned = [
        ("bbox", 5, ["deteval", "hotcoco"], {}),
        ("import", 0, ["deteval"], {}),
        ("report", 0, ["deteval"], {}),
    ]
    inputs = {"bbox": (str(gt), str(dt)), "import": (".", "."), "report": (".", str(tmp_path))}
    monkeypatch.setattr(bench_suite, "plan", lambda args: planned)
    monkeypatch.setattr(bench_suite, "datasets", lambda workload, size, args, log: inputs[workload])
    monkeypatch.setattr(bench_suite, "compile_checkout", lambda log: None)
    calls = []

    def run_one(workload, tool, gt_path, dt_path, args):
        calls.append((workload, tool))
        return {"ok": True, "total_s": 0.0, "timed_s": 0.0, "peak_rss_mib": 0.0}

    monkeypatch.setattr(bench_suite, "run_one", run_one)
    runs, skipped = bench_suite.run_suite(argparse.Namespace(repeat=2), lambda *a: None)
    assert calls == [
        ("bbox", "deteval"),
        ("bbox", "hotcoco"),
        ("bbox", "hotcoco"),  # rep 2 rotates the order: no tool always first
        ("bbox", "deteval"),
        ("import", "deteval"),
        ("import", "deteval"),
        ("report", "deteval"),
        ("report", "deteval"),
    ]
    assert len(runs) == 8
    assert skipped == []


def test_the_page_cache_read_reads_files_and_skips_directories(bench_suite, tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * (3 << 23))  # more than one read
    bench_suite._into_page_cache(str(big), str(tmp_path), ".")
