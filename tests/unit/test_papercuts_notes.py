"""Papercuts (#35): TIDE's AP says whose it is; every input kind says which protocol scores it and why."""

from __future__ import annotations

import json

import pytest

from tests import ROOT

FIX = ROOT / "fixtures"
GT = str(FIX / "coco" / "gt.json")
DT = str(FIX / "coco" / "dt.json")


def test_analyze_says_tides_ap_follows_tidecvs_rules(run_cli):
    code, out, _ = run_cli("analyze", "--gt", GT, "--dt", DT, "--errors", "-q")
    assert code == 0
    first = out.splitlines()[0]
    assert "AP 0.4328 (tidecv's rules, not evaluate's: a class without ground truth counts 0" in first
    code, out, _ = run_cli("analyze", "--gt", GT, "--dt", DT, "--errors", "--tide-mode", "protocol", "-q")
    assert code == 0
    assert "AP 0.5771 (coco's AP at IoU 0.5)" in out.splitlines()[0]
