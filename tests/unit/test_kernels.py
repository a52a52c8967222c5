"""The kernel layer's one harness: every registered kernel against its numpy twin, bit for bit.

Modelled on bottleneck's ``reduce_test.py``: the registry of :mod:`deteval._speedups` lists each
compiled kernel with its twin; tests/support/kernels.py has one input generator per kernel, which
mixes ordinary values with NaN, +-inf, -0.0, subnormals, the largest floats, int32 boundaries and
empty inputs. For every case the kernel either declines (with a reason it lists; the dispatch then
runs the twin) or returns exactly the twin's result: same types, dtypes, shapes and bits. Also
here: the ABI check of :func:`deteval._speedups.load` (a stale build falls back, or fails under
``DETEVAL_REQUIRE_EXTENSION=1``), the decline counts of the dispatch, and the defects this harness
found (a -0.0 IoU in ``pair_maxima``, a NaN IoU in its twin).
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import sysconfig
import zlib

import numpy as np
import pytest

from deteval import _speedups
from deteval.errors import ExtensionError
from tests import ROOT
from tests.support.kernels import (
    CASES,
    REQUIRE,
    THREADED,
    assert_identical,
    bits,
    comparable,
    needs_kernel,
    rle_string,
    twins_only,
    with_threads,
)

#: The modules that register kernels (importing them fills the registry).
REGISTERING = (
    "deteval.accumulate",
    "deteval.decomposition",
    "deteval.evaluate.run",
    "deteval.geometry.boxes",
    "deteval.geometry.keypoints",
    "deteval.geometry.raster",
    "deteval.grouping",
    "deteval.masks.rle",
    "deteval.matching",
    "deteval.matching.others",  # Ultralytics and group-of matching (numpy only), loaded on first use
    "deteval.stats.weighted",
    "deteval.tide.ap",
    "deteval.tide.oracle",
)
for _module in REGISTERING:
    importlib.import_module(_module)
KERNELS = _speedups.kernels()
#: The parsers of io._colparse are not registry kernels: their twins read files another way
#: (msgspec), compared in tests/unit/test_colparse*.py; the module has its ABI check like the rest.
NOT_REGISTERED = {"deteval.io._colparse"}


def test_every_kernel_has_a_generator_and_every_extension_a_kernel():
    assert set(KERNELS) == set(CASES)
    assert {k.module for k in KERNELS.values()} == set(_speedups.ABI) - NOT_REGISTERED


@pytest.mark.parametrize("module", sorted(_speedups.ABI))
def test_every_built_extension_reports_the_expected_abi(module):
    try:
        compiled = importlib.import_module(module)
    except ImportError:
        if REQUIRE:
            pytest.fail(f"{module} is not built but DETEVAL_REQUIRE_EXTENSION=1")
        pytest.skip(f"{module} is not built")
    assert compiled.ABI == _speedups.ABI[module]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_equals_twin(name):
    kernel = KERNELS[name]
    if _speedups.module_of(name) is None:
        if REQUIRE:
            pytest.fail(f"{kernel.module} is not loaded but DETEVAL_REQUIRE_EXTENSION=1")
        pytest.skip(f"{kernel.module} is not built or DETEVAL_NO_EXTENSION=1")
    generate, n_cases = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    ran, declined = 0, set()
    for case in range(n_cases):
        args, kwargs = generate(rng, case)
        with np.errstate(all="ignore"):
            got = kernel.run(*args, **kwargs)
            want = kernel.twin(*args, **kwargs)
        if isinstance(got, _speedups.Decline):
            assert got.reason in kernel.declines, f"case {case}: undeclared reason {got.reason!r}"
            declined.add(got.reason)
            continue
        ran += 1
        assert_identical(comparable(name, got), comparable(name, want), f"{name} case {case}")
    if declined == set(kernel.declines) and ran == 0:
        assert len(kernel.declines) == 1, name
        assert "numpy only" in kernel.declines[0], name
    else:
        assert ran > 0, f"{name}: every case declined ({declined})"


@pytest.mark.parametrize("name", sorted(THREADED))
def test_threaded_kernel_is_bit_identical_for_every_thread_count(name):
    """threads=1 against 2, 3, 7 and more threads than groups (64, and 200 capped to 64), whole arrays."""
    kernel = KERNELS[name]
    if _speedups.module_of(name) is None:
        if REQUIRE:
            pytest.fail(f"{kernel.module} is not loaded but DETEVAL_REQUIRE_EXTENSION=1")
        pytest.skip(f"{kernel.module} is not built or DETEVAL_NO_EXTENSION=1")
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
    ran = 0
    for case in range(40):
        generated = THREADED[name](rng, case)
        with np.errstate(all="ignore"):
            one = kernel.run(*with_threads(name, generated, 1)[0], **with_threads(name, generated, 1)[1])
            if isinstance(one, _speedups.Decline):
                continue
            ran += 1
            for threads in (2, 3, 7, 64, 200):
                args, kwargs = with_threads(name, generated, threads)
                got = kernel.run(*args, **kwargs)
                assert_identical(got, one, f"{name} case {case} threads={threads}")
            twin_args, twin_kwargs = with_threads(name, generated, 3)
            assert_identical(
                comparable(name, one), comparable(name, kernel.twin(*twin_args, **twin_kwargs)), name
            )
    assert ran > 10, f"{name}: only {ran} cases ran compiled"


@pytest.mark.parametrize("broken", ["row ranked twice", "classes out of order", "row out of range"])
def test_threaded_accumulate_declines_a_broken_ranking_for_every_thread_count(broken):
    """Each part checks the rows and classes it walks: together they decline what one walk does."""
    name = "_cacc.accumulate"
    kernel = KERNELS[name]
    if _speedups.module_of(name) is None:
        pytest.skip("deteval._cacc is not built")
    rng = np.random.default_rng(7)
    checked = 0
    for case in range(1, 30):
        args, kwargs = THREADED[name](rng, case)
        ranking = args[5].copy()
        classes = args[3][ranking]
        with np.errstate(all="ignore"):
            runs = not isinstance(kernel.run(*args, **kwargs, threads=2), _speedups.Decline)
        if not runs or len(ranking) < 4 or classes[0] == classes[-1]:
            continue  # declined anyway (an ap_method it does not take), or nothing to break
        if broken == "row ranked twice":
            ranking[-1] = ranking[0]
        elif broken == "classes out of order":
            ranking[[0, -1]] = ranking[[-1, 0]]
        else:
            ranking[len(ranking) // 2] = len(ranking) + 5
        args = (*args[:5], ranking, *args[6:])
        for threads in (1, 2, 3, 7, 64):
            with np.errstate(all="ignore"):
                got = kernel.run(*args, **kwargs, threads=threads)
            assert isinstance(got, _speedups.Decline), (case, threads)
        checked += 1
    assert checked > 5


# ---- the dispatch --------------------------------------------------------------------------------


def _voc_case():
    from tests.support.kernels import _match_voc

    return _match_voc(np.random.default_rng(3), 1)[0][0]


@needs_kernel("deteval._cacc")
def test_dispatch_counts_the_paths_that_run_only_in_numpy():
    from tests.support.kernels import _accumulate

    rng = np.random.default_rng(0)
    args, _ = _accumulate(rng, 1)
    protocol = args[7].replace(ap_method="all_point", score_ties="ranked")
    _speedups.reset_declines()
    want = KERNELS["_cacc.accumulate"].twin(*args[:7], protocol, args[8])
    got = _speedups.dispatch("_cacc.accumulate", *args[:7], protocol, args[8])
    assert_identical(got, want)
    v = _voc_case()
    from deteval.matching import match_ultralytics

    match_ultralytics(
        v.pair_det,
        v.pair_gt,
        v.pair_iou,
        n_det=v.n_det,
        n_gt=v.n_gt,
        iou_thresholds=v.iou_thresholds,
        gt_is_ignored=v.gt_is_ignored,
        det_is_out_of_range=v.det_is_out_of_range,
    )
    assert _speedups.declines() == {
        "_cacc.accumulate": {"ap_method all_point": 1},
        "_cmatch.match_ultralytics": {"Ultralytics matching (numpy only)": 1},
    }
    _speedups.reset_declines()
    assert _speedups.declines() == {}


def test_without_the_kernels_the_twins_run_and_nothing_is_declined(monkeypatch):
    twins_only(monkeypatch)
    calls = []
    kernel = KERNELS["_cmatch.match_voc"]
    monkeypatch.setitem(
        _speedups._KERNELS,
        kernel.name,
        _speedups.Kernel(kernel.name, kernel.module, calls.append, kernel.twin),
    )
    _speedups.reset_declines()
    v = _voc_case()
    assert_identical(_speedups.dispatch("_cmatch.match_voc", v), kernel.twin(v))
    assert calls == []
    assert _speedups.declines() == {}


@pytest.mark.parametrize("module", sorted(_speedups.ABI))
def test_no_extension_env_disables_every_kernel(module):
    code = f"from deteval import _speedups; print(_speedups.load({module!r}) is None)"
    env = dict(os.environ, DETEVAL_NO_EXTENSION="1", DETEVAL_REQUIRE_EXTENSION="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True"]


# ---- the ABI check -------------------------------------------------------------------------------


@needs_kernel("deteval._cmatch")
def test_a_stale_module_falls_back_to_the_twin(monkeypatch):
    monkeypatch.delenv(_speedups.ENV_REQUIRE, raising=False)
    monkeypatch.setitem(_speedups.ABI, "deteval._cmatch", _speedups.ABI["deteval._cmatch"] + 1)
    assert _speedups.load("deteval._cmatch") is None


@needs_kernel("deteval._cmatch")
def test_a_stale_module_is_an_error_when_the_extensions_are_required(monkeypatch):
    monkeypatch.setenv(_speedups.ENV_REQUIRE, "1")
    monkeypatch.setitem(_speedups.ABI, "deteval._cmatch", _speedups.ABI["deteval._cmatch"] + 1)
    with pytest.raises(ExtensionError, match=r"deteval\._cmatch: stale build .*build_ext --inplace"):
        _speedups.load("deteval._cmatch")


def test_a_missing_module_is_an_error_only_when_required(monkeypatch):
    monkeypatch.setitem(_speedups.ABI, "deteval._never_built", 1)
    monkeypatch.delenv(_speedups.ENV_REQUIRE, raising=False)
    assert _speedups.load("deteval._never_built") is None
    monkeypatch.setenv(_speedups.ENV_REQUIRE, "1")
    if _speedups.DISABLED:
        assert _speedups.load("deteval._never_built") is None
    else:
        with pytest.raises(ExtensionError, match=r"deteval\._never_built: not built"):
            _speedups.load("deteval._never_built")


PROBE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "_buffer_checks.h"
static PyMethodDef methods[] = {{NULL, NULL, 0, NULL}};
DETEVAL_MODULE(deteval_abi_probe, "deteval_abi_probe", "A module built with an old ABI number.", methods, 0, NULL)
"""


@pytest.mark.skipif(_speedups.DISABLED, reason="DETEVAL_NO_EXTENSION=1")
def test_a_real_stale_build_falls_back_or_fails(tmp_path, monkeypatch):
    """A module compiled with the init macro of the shared header and ABI 0, where 1 is expected."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        if REQUIRE:
            pytest.fail(f"no C compiler ({cc}) but DETEVAL_REQUIRE_EXTENSION=1")
        pytest.skip(f"no C compiler ({cc})")
    header = importlib.import_module("deteval").__path__[0] + "/_buffer_checks.h"
    shutil.copy(header, tmp_path / "_buffer_checks.h")
    (tmp_path / "probe.c").write_text(PROBE)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-I",
            sysconfig.get_paths()["include"],
            "-I",
            str(tmp_path),
            "-o",
            str(tmp_path / f"deteval_abi_probe{suffix}"),
            str(tmp_path / "probe.c"),
        ],
        check=True,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(_speedups.ABI, "deteval_abi_probe", 1)
    monkeypatch.delenv(_speedups.ENV_REQUIRE, raising=False)
    assert _speedups.load("deteval_abi_probe") is None
    assert importlib.import_module("deteval_abi_probe").ABI == 0
    monkeypatch.setenv(_speedups.ENV_REQUIRE, "1")
    with pytest.raises(ExtensionError, match=r"deteval_abi_probe: stale build \(ABI 0, .* expects 1\)"):
        _speedups.load("deteval_abi_probe")
    sys.modules.pop("deteval_abi_probe", None)


# ---- defects found by the harness ----------------------------------------------------------------


@needs_kernel("deteval._canalyze")
@pytest.mark.parametrize("iou", [[-0.0], [-0.0, -0.0], [0.0, -0.0], [-0.0, 0.0], [-0.0, 0.5, -0.0]])
def test_pair_maxima_of_a_negative_zero_iou_is_the_twins(iou):
    """A -0.0 IoU counts as 0: the kernel and the twin give +0.0 maxima.

    The kernel gave 0.0 where the twin's maximum.reduceat kept -0.0, depending on the order of the
    zeros.
    """
    from deteval.tide import oracle

    iou = np.array(iou)
    n = len(iou)
    gt_class = np.array([0, 1])
    args = (
        np.array([0, n]),
        np.arange(n) % 2,
        iou,
        np.array([0]),
        np.array([0]),
        gt_class,
        np.ones(2, bool),
        np.ones(2, bool),
    )
    got, want = oracle._pair_maxima(*args), oracle._pair_maxima_numpy(*args)
    for g, w in zip(got[1] + got[2], want[1] + want[2], strict=True):
        assert np.array_equal(bits(np.asarray(g)), bits(np.asarray(w))), (got, want)
    assert not any(np.signbit(np.asarray(m)).any() for m in want[1])


def test_pair_maxima_twin_takes_a_nan_iou():
    """np.argmax semantics: a NaN IoU is the maximum of its detection's pairs, the first one."""
    from deteval.tide import oracle

    iou = np.array([0.5, np.nan, 0.7, 0.9, 0.2])
    args = (
        np.array([0, 3, 5]),
        np.array([0, 1, 0, 1, 0]),
        iou,
        np.array([0, 1]),
        np.array([0, 0]),
        np.array([0, 0]),
        np.ones(2, bool),
        np.ones(2, bool),
    )
    has, maxima, firsts = oracle._pair_maxima_numpy(*args)
    assert has.tolist() == [True, True]
    assert np.isnan(maxima[0][0])
    assert maxima[0][1] == 0.9
    assert firsts[0].tolist() == [1, 1]  # the ground truths of pairs 1 (the NaN) and 3


# ---- unique cases moved here from tests/property/test_kernel_special_values.py ---------------------


@pytest.mark.parametrize("box_format", ["xywh", "xyxy"])
@pytest.mark.parametrize("convention", ["continuous", "pixel_inclusive"])
@pytest.mark.parametrize("column", range(4))
def test_a_nan_coordinate_overlaps_nothing_in_either_layer(convention, box_format, column):
    """[NaN, 0, 10, 10] against [0, 0, 10, 10] (and swapped): IoU 0 (the retired _cbox kernel gave 1.0 once)."""
    from deteval.geometry import boxes as boxes_module

    det = np.array([[0.0, 0.0, 10.0, 10.0]])
    det[0, column] = np.nan
    gt = np.array([[0.0, 0.0, 10.0, 10.0]])
    crowd = np.array([False])
    for d, g in ((det, gt), (gt, det)):
        got = boxes_module.pair_box_iou(d, g, crowd, box_format=box_format, convention=convention)
        assert got.tolist() == [0.0]


def test_the_generators_rle_strings_are_pycocotools_frpyobjects():
    """The harness' encoder of run lists equals pycocotools where pycocotools stays in its buffer.

    Short runs, runs of length 0 anywhere, negative deltas.
    """
    mask_utils = pytest.importorskip("pycocotools.mask")
    rng = np.random.default_rng(3)
    for _ in range(300):
        h, w = int(rng.integers(0, 40)), int(rng.integers(0, 40))
        cuts = np.sort(rng.integers(0, h * w + 1, int(rng.integers(0, 12))))
        runs = np.diff(np.r_[0, cuts, h * w]).tolist()
        for _ in range(int(rng.integers(0, 4))):
            runs.insert(int(rng.integers(0, len(runs) + 1)), 0)
        expected = mask_utils.frPyObjects({"size": [h, w], "counts": runs}, h, w)["counts"]
        assert rle_string(runs) == expected, runs
