"""Fixtures every suite may use: the repository root and an in-process CLI runner."""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import ROOT
from tests.support.tier import FAST_MAX_EXAMPLES
from tests.support.tier import is_fast_tier as _is_fast_tier

# Ultralytics (a test oracle) writes its settings file under the user's config folder when it is first
# imported: point it at a folder of this run, so the suite touches nothing of the machine outside it.
os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="deteval-yolo-config-"))
os.environ.setdefault("YOLO_OFFLINE", "1")

#: tests/support holds helpers, no tests and no doctests: ``--doctest-modules`` would import each of
#: its modules at collection, and with them torch and ultralytics (tests/support/torchmetrics.py,
#: ultralytics.py: about 4 s of CPU in every process) for no test at all.
collect_ignore = ["support"]


@pytest.fixture
def repo_root() -> Path:
    """The repository root (fixtures/, docs/, README.md)."""
    return ROOT


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``deteval ARGS...`` in-process; returns (exit code, stdout, stderr)."""
    from deteval.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture
def figures_unless_fast(request: pytest.FixtureRequest) -> Iterator[None]:
    """Figures drawn in the full suite; placeholders in the fast tier (tests/support/figures.py).

    For tests that read no pixel (file names, sections, numbers, progress, the writer's rules).
    """
    from tests.support.figures import no_drawing_in_fast_tier

    with no_drawing_in_fast_tier(request.config):
        yield


#: Folders whose tests are the slow tier: cross-checks against the reference tools on generated
#: datasets, multi-process integration runs, the browser. `pytest -m "not slow"` is the fast tier a
#: developer runs all day; CI runs everything.
_SLOW_FOLDERS = ("tests/crosscheck/", "tests/integration/", "tests/browser/")

#: Sweeps: parametrised tests whose cases run the same code path on other data (generated seeds,
#: sizes, presets, documented examples). The fast tier keeps the first case of each (or, with an
#: id part named, the first case of each value of that part of the case id); every other case is
#: marked ``slow`` and runs in the full suite. Rule for new tests: a parametrisation over more
#: than ~10 generated cases, or one whose cases take over ~1 s each, is listed here.
_SWEEPS: dict[str, int | None] = {
    "tests/unit/test_readme.py::test_documented_command_runs": None,
    "tests/unit/test_readme.py::test_documented_python_runs": None,
    "tests/unit/test_common.py::test_preset_invariance": 1,  # one case per invariance
    "tests/unit/test_plot.py::test_svg_is_deterministic": None,
    "tests/unit/test_report_several.py::test_analyze_works_in_every_protocol_order": None,
    "tests/unit/test_stats.py::test_deterministic_for_any_chunking_and_workers": None,
    "tests/unit/test_stats.py::test_weighted_equals_explicit_replication": None,
    "tests/unit/test_stats.py::test_all_ones_weights_equal_the_point_estimate_bit_for_bit": None,
    "tests/unit/test_stats.py::test_blocks_of_any_size_give_the_same_numbers": None,
    "tests/unit/test_stats.py::test_thresholds_table_for_every_count": None,
    "tests/unit/test_cacc.py::test_kernel_equals_numpy_on_random_tables": None,
    "tests/unit/test_cacc.py::test_kernel_equals_numpy_on_crosscheck_datasets": None,
    "tests/unit/test_cacc.py::test_kernel_reads_packed_lanes_as_the_bool_tables": None,
    "tests/unit/test_cacc.py::test_kernel_equals_numpy_with_other_recall_points": None,
    "tests/unit/test_cmatch.py::test_kernel_equals_numpy_on_random_groups": None,
    "tests/unit/test_cmatch.py::test_kernel_equals_numpy_on_crosscheck_datasets": None,
    "tests/unit/test_cmatch.py::test_kernel_equals_numpy_with_first_gt_on_ties": None,
    "tests/unit/test_cmatch.py::test_kernel_equals_numpy_on_crowded_groups": None,
    "tests/unit/test_cmatch.py::test_voc_kernel_equals_numpy_on_random_groups": None,
    "tests/unit/test_tide.py::test_protocol_mode_ap_equals_evaluate": None,
    "tests/unit/test_tide.py::test_analyze_cli_on_ground_truth_without_annotations": 0,
    "tests/unit/test_slices.py::test_each_slice_equals_evaluating_its_subset_files": None,
    "tests/unit/test_stream_results.py::test_generated_files_stream_as_read_whole": None,
    "tests/unit/test_ties_step.py::test_accumulate_equals_its_slow_twin": None,
    "tests/unit/test_per_image.py::test_ap_gain_is_the_gain_of_fixing_the_image_in_the_input": None,
    "tests/unit/test_shards.py::test_shards_merge_to_the_same_numbers": 0,
    "tests/unit/test_confusion.py::test_equals_slow_twin": None,
    "tests/unit/test_match_chunks.py::test_box_presets": None,
    "tests/unit/test_calibration.py::test_calibration_equals_netcal_on_generated_detections": None,
    "tests/unit/test_decomposition.py::test_equals_slow_twin": None,
    "tests/unit/test_compare.py::test_steps_add_up_and_follow_the_documented_order": None,
    "tests/unit/test_compare_sharing.py::test_compare_equals_separate_evaluate_runs": 1,
    "tests/unit/test_matching.py::test_fast_voc_matcher_equals_slow_twin": None,
    "tests/unit/test_html_report.py::test_many_classes_all_listed_and_within_budget": None,
}


def _sweep_key(item: pytest.Item) -> tuple[str, str] | None:
    """(function, kept-case key) of a listed sweep's case; None for any other test."""
    function, _, case = item.nodeid.partition("[")
    if function not in _SWEEPS or not case:
        return None
    part = _SWEEPS[function]
    return function, "" if part is None else case.rstrip("]").split("-")[part]


def _fewer_examples(item: pytest.Item) -> None:
    """Cap a hypothesis test's examples at FAST_MAX_EXAMPLES (its own smaller count stays)."""
    function = getattr(item, "function", None)
    current = getattr(function, "_hypothesis_internal_use_settings", None)
    if current is not None and current.max_examples > FAST_MAX_EXAMPLES:
        from hypothesis import settings

        function._hypothesis_internal_use_settings = settings(current, max_examples=FAST_MAX_EXAMPLES)  # type: ignore[union-attr]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In the fast tier, do not even import the slow folders (all their tests would be deselected)."""
    if _is_fast_tier(config) and collection_path.is_relative_to(ROOT / "tests"):
        relative = collection_path.relative_to(ROOT).as_posix() + "/"
        if relative.startswith(_SLOW_FOLDERS):
            return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow folders and the sweeps' extra cases ``slow``; fewer examples in the fast tier."""
    kept: set[tuple[str, str]] = set()
    is_fast = _is_fast_tier(config)
    for item in items:
        if item.nodeid.startswith(_SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)
            continue
        key = _sweep_key(item)
        if key is not None:
            if key in kept:
                item.add_marker(pytest.mark.slow)
            kept.add(key)
        if is_fast:
            _fewer_examples(item)


#: Tests that import a heavy optional package (seconds of CPU in each process that imports it: torch
#: and torchmetrics about 9 s, scikit-learn about 3 s; netcal imports torch and scikit-learn): under
#: pytest-xdist's default ``--dist load`` the tests of a group run in one process, so one process
#: imports the packages, not every one. Each group goes to one process before the first tests are
#: sent out; every other test is scheduled as xdist does. One group: the packages overlap.
_ONE_PROCESS_GROUPS = {
    "tests/unit/test_torchmetrics_metric.py": "torch, scikit-learn",
    "tests/unit/test_evaluator.py::test_torchmetrics_adapter": "torch, scikit-learn",
    "tests/unit/test_calibration.py::test_binned_error_equals_netcal": "torch, scikit-learn",
    "tests/unit/test_calibration.py::test_calibration_equals_netcal": "torch, scikit-learn",
    "tests/unit/test_ranking.py": "torch, scikit-learn",
    "tests/property/test_ranking_properties.py": "torch, scikit-learn",
}


def _one_process_group(nodeid: str) -> str | None:
    """The group of a test id (``_ONE_PROCESS_GROUPS``), None for any other test."""
    for prefix, group in _ONE_PROCESS_GROUPS.items():
        if nodeid.startswith(prefix):
            return group
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under ``-n N`` with the default ``--dist load``: xdist's load scheduling, groups kept together.

    Test ids and everything else are xdist's (unlike ``--dist loadgroup``, which renames the tests);
    any other ``--dist`` is left alone.
    """
    if config.getoption("dist", "no") != "load":
        return None
    from xdist.scheduler import LoadScheduling

    class GroupedLoadScheduling(LoadScheduling):  # type: ignore[misc]
        grouped = False

        def _send_tests(self, node: object, num: int) -> None:
            if not self.grouped:  # the first send: each group, whole, to one process
                self.grouped = True
                groups: dict[str, list[int]] = {}
                for index in self.pending:
                    group = _one_process_group(self.collection[index])
                    if group is not None:
                        groups.setdefault(group, []).append(index)
                in_groups = {index for indices in groups.values() for index in indices}
                self.pending[:] = [index for index in self.pending if index not in in_groups]
                for k, indices in enumerate(groups.values()):
                    to = self.nodes[k % len(self.nodes)]
                    self.node2pending[to].extend(indices)
                    to.send_runtest_some(indices)
            super()._send_tests(node, num)

    return GroupedLoadScheduling(config, log)


def _import_hypothesis_patching() -> None:
    """Import ``hypothesis.extra._patching`` (libcst) with libcst's DeprecationWarning silenced.

    When a property fails, hypothesis' pytest plugin imports it to write an ``@example`` patch; on
    this environment libcst's import emits a DeprecationWarning (mypy_extensions.TypedDict), which
    ``filterwarnings = error`` turns into an INTERNALERROR that hides the falsifying example.
    Importing it first, with the warning silenced, keeps the real failure report. It is imported
    only once a property has failed: libcst takes about 1.5 s of CPU to import.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import hypothesis.extra._patching  # noqa: F401
        except ImportError:  # libcst not installed: hypothesis skips the patch, nothing to do
            pass


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A failed hypothesis test: the patch module imported before hypothesis' report wrapper needs it.

    A plain hook implementation runs inside every hook wrapper, so before the code after hypothesis'
    ``yield``; it returns None, so pytest's own implementation still makes the report.
    """
    if call.excinfo is not None and getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
        _import_hypothesis_patching()


@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The same before hypothesis' summary writes the patch (under xdist, in the controlling process)."""
    reports = (report for reports in terminalreporter.stats.values() for report in reports)
    if any(getattr(report, "__dict__", {}).get("_hypothesis_failing_examples") for report in reports):
        _import_hypothesis_patching()
