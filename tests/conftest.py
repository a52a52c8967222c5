"""Fixtures every suite may use: the repository root and an in-process CLI runner."""

from __future__ import annotations

import gc
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


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[object]:
    """No garbage collection while collecting; then what collection made leaves the collector's view.

    A full collection of the tree makes about 260,000 objects that live to the end of the session:
    the collector walked them about 600 times while they were made (0.6 s of CPU in each process),
    every later full collection walked them again, and pytest's last one (five ``gc.collect()``
    calls, looking for unraisable exceptions) took 1.2-1.7 s of CPU in each process at the very end
    of a run. ``gc.freeze`` keeps them out of every later collection; what the tests create is
    collected as before. (Under xdist the controlling process collects nothing: it only passes here.)
    """
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """One full garbage collection, then what survives it leaves the collector's view.

    pytest's closing ``gc.collect()`` calls (five, for unraisable exceptions) then see only what is
    made after this one: the garbage of the tests is still collected (here, once) and its
    unraisable exceptions still reported, but the modules the tests imported (torch: 1 s of the
    five calls) are walked once, not five times.
    """
    gc.collect()
    gc.freeze()


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


#: The fast tier's long tests and about how many seconds of CPU each case takes (its process and the
#: processes it starts; measured with --durations on the 2-core development machine). Under ``-n N``
#: they are sent out first, longest first, each to the process with the least work so far, with the
#: one-process groups: otherwise they arrive wherever xdist's chunks of consecutive tests put them, and
#: a run ends with one process working through the last long tests while the other has nothing left.
#: A new fast-tier test that takes over about a second goes here (docs/testing.md).
_LONG_TESTS: dict[str, float] = {
    "tests/unit/test_html_report.py::test_many_classes_all_listed_and_within_budget": 6.5,
    "tests/unit/test_wide_indices.py::test_tide_and_decomposition_on_high_indices_equal_the_small_dataset": 4.9,
    "tests/unit/test_html_report.py::test_report_figures_drawn_in_forked_processes_are_the_same_bytes": 4.1,
    "tests/unit/test_wide_indices.py::test_bootstrap_on_high_indices_equals_few_categories": 3.8,
    "tests/unit/test_plot.py::test_thousand_classes_top_k_is_readable": 3.6,
    "tests/unit/test_worker_signals.py::test_a_signal_during_workers_is_one_line_from_the_parent": 2.4,
    "tests/unit/test_readme.py::test_the_dask_example_runs_saved_as_a_script": 3.5,
    "tests/unit/test_gallery.py::test_the_whole_report_stays_within_the_base_report_and_the_budget": 3.0,
    "tests/unit/test_hardening.py::test_a_killed_worker_is_a_clear_error_within_seconds": 2.9,
    "tests/unit/test_papercuts.py::test_the_temporary_dask_cluster_keeps_its_workers_quiet": 2.9,
    "tests/unit/test_report_errors_all.py::test_plot_writes_every_detectors_analysis_and_walk": 2.9,
    "tests/property/test_colparse_properties.py::test_text_rows_equal_the_python_reader": 2.4,
    "tests/unit/test_report_progress.py::test_analysis_and_explain_stages_on_a_terminal": 2.1,
    "tests/unit/test_memory.py::test_one_image_with_100000_ground_truths_under_a_3gib_address_space": 2.1,
    "tests/unit/test_gallery.py::test_voc_ids_find_their_jpeg_in_jpegimages": 1.9,
    "tests/unit/test_plot_papercuts.py::test_several_results_add_the_label_after_the_kind": 1.8,
    "tests/unit/test_report_progress.py::test_silent_on_a_terminal_with_quiet": 1.8,
    "tests/unit/test_report_errors_all.py::test_progress_counts_every_detectors_analysis_and_walk": 1.8,
    "tests/unit/test_report_progress.py::test_silent_in_a_pipe": 1.8,
    "tests/unit/test_html_report.py::test_every_user_string_is_escaped": 1.7,
    "tests/unit/test_memory.py::test_a_memory_error_the_estimates_miss_is_the_same_one_line_refusal": 1.7,
    "tests/unit/test_report_progress.py::test_every_long_step_is_shown_on_a_terminal": 1.7,
    "tests/unit/test_report_errors_all.py::test_two_detectors_each_have_their_errors_and_explain_sections": 1.7,
    "tests/unit/test_layering.py::test_no_import_cycles": 1.6,
    "tests/unit/test_config.py::test_deeply_nested_yaml_is_an_error_not_a_crash": 1.6,
    "tests/unit/test_tiers.py::test_no_fast_tier_module_imports_a_heavy_package_at_collection": 1.5,
    "tests/unit/test_cli_pictures.py::test_report_is_one_self_contained_file": 1.4,
    "tests/unit/test_layering.py::test_no_test_module_imports_another": 1.4,
    "tests/unit/test_bootstrap_bias.py::test_difference_interval_uses_the_method_and_contains_the_difference": 1.4,
    "tests/unit/test_changed_while_read.py::test_whole_file_reads_under_concurrent_rewrites": 1.4,
    "tests/unit/test_report_several.py::test_per_class_ap_columns_come_first_and_sections_say_whose": 1.4,
    "tests/unit/test_cli.py::test_entry_point_never_prints_a_traceback_on_broken_files": 1.3,
    "tests/unit/test_memory.py::test_ten_thousand_thresholds_over_80_classes_under_a_2gib_address_space": 1.3,
    "tests/unit/test_report_beyond.py::test_cli_report_is_off_by_default_and_on_with_the_flags": 1.2,
    "tests/unit/test_gallery_detectors.py::test_a_gallery_of_no_detector_or_of_another_type_is_refused": 1.2,
    "tests/unit/test_report_several.py::test_pr_curves_of_several_results_are_overlaid": 1.2,
    "tests/unit/test_cli.py::test_same_inputs_give_byte_identical_json_across_runs_and_hash_seeds": 1.2,
    "tests/unit/test_report_beyond.py::test_cli_plot_writes_the_beyond_figures": 1.2,
    "tests/unit/test_cacc.py::test_kernel_equals_numpy_on_5k_benchmark": 1.1,
    "tests/unit/test_masks.py::test_exact_and_raster_agree_within_the_stated_bound": 1.1,
    "tests/unit/test_bad_inputs.py::test_the_whole_broken_folder_never_gives_a_traceback": 1.1,
    "tests/unit/test_stream_results.py::test_the_file_is_never_held_whole": 1.0,
}

#: The estimate of any other test (the fast tier's short tests take about 0.015 s each on average).
_SHORT_TEST_SECONDS = 0.015


def _estimated_seconds(nodeid: str) -> float | None:
    """A long test's estimate (``_LONG_TESTS``, the longest matching entry); None for any other test."""
    found = [(len(prefix), seconds) for prefix, seconds in _LONG_TESTS.items() if nodeid.startswith(prefix)]
    return max(found)[1] if found else None


def _first_sends(collection: list[str], pending: list[int], processes: int) -> list[list[int]]:
    """What each process gets before xdist's own scheduling starts: the groups and the long tests.

    Each one-process group is one unit, the long tests of each file another (one process builds the
    file's module-scoped fixtures once); the units go out longest first, each to the process with the
    least estimated work so far. The indices given out are removed from
    ``pending`` (which keeps its order); each process's indices are in collection order, so a test
    module's tests stay together.
    """
    units: dict[str, list[int]] = {}
    for index in pending:
        nodeid = collection[index]
        group = _one_process_group(nodeid)
        if group is not None:
            units.setdefault("group " + group, []).append(index)
        elif _estimated_seconds(nodeid) is not None:  # a file's long tests share its module fixtures
            units.setdefault("file " + nodeid.partition("::")[0], []).append(index)

    def cost(indices: list[int]) -> float:
        return sum(_estimated_seconds(collection[i]) or _SHORT_TEST_SECONDS for i in indices)

    loads = [0.0] * processes
    sends: list[list[int]] = [[] for _ in range(processes)]
    for indices in sorted(units.values(), key=lambda indices: (-cost(indices), indices[0])):
        to = loads.index(min(loads))
        loads[to] += cost(indices)
        sends[to].extend(indices)
    given = {index for indices in sends for index in indices}
    pending[:] = [index for index in pending if index not in given]
    return [sorted(indices) for indices in sends]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under ``-n N`` with the default ``--dist load``: xdist's load scheduling, after the first sends.

    The first sends (``_first_sends``): each one-process group whole to one process, the long tests
    spread by their estimates; then xdist schedules every other test as it does. Test ids and
    everything else are xdist's (unlike ``--dist loadgroup``, which renames the tests); any other
    ``--dist`` is left alone.
    """
    if config.getoption("dist", "no") != "load":
        return None
    from xdist.scheduler import LoadScheduling

    class LongFirstLoadScheduling(LoadScheduling):  # type: ignore[misc]
        first_sent = False

        def _send_tests(self, node: object, num: int) -> None:
            if not self.first_sent:
                self.first_sent = True
                for to, indices in zip(
                    self.nodes, _first_sends(self.collection, self.pending, len(self.nodes))
                ):
                    if indices:
                        self.node2pending[to].extend(indices)
                        to.send_runtest_some(indices)
            super()._send_tests(node, num)

    return LongFirstLoadScheduling(config, log)


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
