"""Per-class paired differences in ``evaluate`` / ``compare`` with several ``--dt`` and ``--bootstrap``.

- the JSON's ``class_comparisons`` are, to the last bit, ``compare_detectors(...).class_comparisons``
  for the same seed (every protocol, every later detector against the first), and the headline
  ``comparisons`` of the same document are that call's too (one bootstrap gives both);
- the table and Markdown show one block per pair, classes in the per-class table's order, the
  numbers of the JSON, ``*`` exactly where the interval excludes 0;
- no block (and no key, or an empty list) without ``--bootstrap``, with one detector, or with
  ``--no-per-class`` (the JSON keeps them);
- the documented example in docs/statistics.md prints what the page shows.
"""

from __future__ import annotations

import json
import random
import re
import shlex
from pathlib import Path

import pytest

import deteval
from deteval.cli import main
from deteval.stats import compare_detectors
from tests import ROOT

GT = str(ROOT / "fixtures" / "coco" / "gt.json")
DT = str(ROOT / "fixtures" / "coco" / "dt.json")
DT_B = str(ROOT / "fixtures" / "coco" / "dt_b.json")
N, SEED = 60, 7

# the fixture's bird has no ground truth (its AP undefined: said by a warning, not our subject)
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
]

TITLE = re.compile(
    r"^(?P<protocol>\S+): AP per class, (?P<b>\S+) - (?P<a>\S+) \(paired; \* the interval excludes 0\)$"
)
ROW = re.compile(r"^(?P<cls>\S+)\s+(?P<diff>\S+)\s+(?P<ci>\[[^\]]*\]|n/a)\s+(?P<p>\S+)(?:\s+(?P<mark>\*))?$")


@pytest.fixture(scope="module")
def third_detector(tmp_path_factory) -> str:
    """fixtures/coco's detections with jittered scores: a third ranking of the same boxes."""
    dt = json.loads(Path(DT).read_text())
    rng = random.Random(5)
    for d in dt:
        d["score"] = round(min(1.0, max(0.0, d["score"] + rng.uniform(-0.3, 0.3))), 3)
    path = tmp_path_factory.mktemp("third") / "c.json"
    path.write_text(json.dumps(dt))
    return str(path)


def _argv(command: str, dts: list[str], *extra: str) -> list[str]:
    argv = [command, "--gt", GT]
    for dt in dts:
        argv += ["--dt", dt]
    return [*argv, *extra, "-q"]


def _run(argv: list[str], capsys) -> str:
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _expected(dts: dict, protocol: str) -> deteval.stats.ComparisonResult:
    gt = deteval.load_ground_truth(GT)
    loaded = {name: deteval.load_detections(path, gt) for name, path in dts.items()}
    return compare_detectors(gt, loaded, protocol, n=N, seed=SEED)


def _blocks(text: str) -> dict:
    """(protocol, a, b) -> rows {class: match} of each per-class differences block, in order."""
    out = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        title = TITLE.match(line)
        if title is None:
            continue
        assert lines[i + 1].split() == ["class", f"{title['b']}", "-", f"{title['a']}", "interval", "p"]
        rows = {}
        for row in lines[i + 3 :]:
            if not row:
                break
            found = ROW.match(row)
            assert found is not None, row
            rows[found["cls"]] = found
        out[(title["protocol"], title["a"], title["b"])] = rows
    return out


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_json_class_comparisons_are_compare_detectors_to_the_bit(command, third_detector, capsys):
    dts = {"A": DT, "B": DT_B, "C": third_detector}
    names = [x for name in dts for x in ("--name", name)]
    extra = [
        *names,
        "--protocol",
        "coco",
        "--protocol",
        "voc2010",
        "--bootstrap",
        str(N),
        "--seed",
        str(SEED),
    ]
    doc = json.loads(_run(_argv(command, list(dts.values()), *extra, "--format", "json"), capsys))
    expected_class, expected_headline = [], []
    for protocol in ("coco", "voc2010"):
        found = _expected(dts, protocol)
        expected_class += list(found.class_comparisons)
        expected_headline += list(found.comparisons)
    assert len(expected_class) == 2 * 2 * 4  # protocols x later detectors x classes
    assert doc["class_comparisons"] == [c.to_dict() for c in expected_class]
    for entry, c in zip(doc["class_comparisons"], expected_class, strict=True):
        # the floats as written, bit for bit (a JSON float reads back as the same double)
        assert (entry["class"], entry["a"], entry["b"], entry["protocol"]) == (
            c.category,
            c.a,
            c.b,
            c.protocol,
        )
        assert entry["difference"] == c.difference or (entry["difference"], c.difference) == (None, None)
        assert entry["ci"] == c.ci.as_list()
        assert entry["p_value"] == c.p_value
    # the headline comparisons of the same run are the same call's: one bootstrap gives both
    assert [{k: v for k, v in e.items() if k != "verdict"} for e in doc["comparisons"]] == [
        c.to_dict() for c in expected_headline
    ]


def test_table_and_markdown_show_the_json_numbers_and_mark_what_excludes_zero(third_detector, capsys):
    dts = {"A": DT, "B": DT_B, "C": third_detector}
    names = [x for name in dts for x in ("--name", name)]
    argv = _argv(
        "evaluate",
        list(dts.values()),
        *names,
        "--protocol",
        "coco",
        "--bootstrap",
        str(N),
        "--seed",
        str(SEED),
    )
    found = _expected(dts, "coco")
    a = found.bootstrap.results[0]
    class_order = [c["name"] for c in a.result.per_class]
    blocks = _blocks(_run(argv, capsys))
    assert list(blocks) == [("coco", "A", "B"), ("coco", "A", "C")]
    n_marked = 0
    for c in found.class_comparisons:
        rows = blocks[(c.protocol, c.a, c.b)]
        assert list(rows) == class_order  # the per-class table's order
        row = rows[c.category]
        assert row["diff"] == ("n/a" if c.difference is None else f"{c.difference:+.4f}")
        lo, hi = c.ci.lo, c.ci.hi
        assert row["ci"] == ("n/a" if lo is None else f"[{lo:.4f}, {hi:.4f}]")
        assert row["p"] == ("n/a" if c.p_value is None else f"{c.p_value:.3g}")
        assert (row["mark"] == "*") == c.excludes_zero
        n_marked += c.excludes_zero
    assert 0 < n_marked < len(found.class_comparisons)  # both kinds of row are exercised

    markdown = _run([*argv, "--format", "markdown"], capsys)
    for c in found.class_comparisons:
        cells = [
            c.category,
            "n/a" if c.difference is None else f"{c.difference:+.4f}",
            "n/a" if c.ci.lo is None else f"[{c.ci.lo:.4f}, {c.ci.hi:.4f}]",
            "n/a" if c.p_value is None else f"{c.p_value:.3g}",
            "*" if c.excludes_zero else "",
        ]
        assert "| " + " | ".join(cells) + " |" in markdown
    assert markdown.count("**coco: AP per class, B - A (paired; * the interval excludes 0)**") == 1
    assert markdown.count("**coco: AP per class, C - A (paired; * the interval excludes 0)**") == 1


def test_no_block_without_bootstrap_with_one_detector_or_no_per_class(capsys):
    pair = _argv("compare", [DT, DT_B], "--name", "A", "--name", "B", "--protocol", "coco")
    assert not _blocks(_run(pair, capsys))
    assert "class_comparisons" not in json.loads(_run([*pair, "--format", "json"], capsys))

    boot = ["--bootstrap", "20"]
    one = _argv("evaluate", [DT], "--protocol", "coco", *boot)
    text = _run(one, capsys)
    assert "bootstrap: 20 resamples" in text
    assert not _blocks(text)
    assert json.loads(_run([*one, "--format", "json"], capsys))["class_comparisons"] == []

    text = _run([*pair, *boot, "--no-per-class"], capsys)
    assert "bootstrap: 20 resamples" in text
    assert not _blocks(text)
    assert "AP per class" not in _run([*pair, *boot, "--no-per-class", "--format", "markdown"], capsys)
    assert (
        len(
            json.loads(_run([*pair, *boot, "--no-per-class", "--format", "json"], capsys))[
                "class_comparisons"
            ]
        )
        == 4
    )


def test_csv_has_no_comparison_rows(capsys):
    """The CSV lists values and their intervals per detector (the headline comparison is not in it)."""
    argv = _argv(
        "compare", [DT, DT_B], "--name", "A", "--name", "B", "--protocol", "coco", "--bootstrap", "20"
    )
    with_boot = _run([*argv, "--format", "csv"], capsys).splitlines()
    assert with_boot[0] == "detector,protocol,class,metric,value,ci_lo,ci_hi,bias"
    assert {row.split(",")[0] for row in with_boot[1:]} == {"A", "B"}


def test_the_documented_example_prints_what_the_page_shows(capsys):
    text = (ROOT / "docs" / "statistics.md").read_text()
    command, shown = re.search(
        r"```bash\n(deteval [^\n]*--bootstrap[^\n]*)\n```\n\n[^`]*```text\n(.*?)```", text, flags=re.S
    ).groups()
    out = _run(shlex.split(command)[1:], capsys)
    assert "AP per class, B - A (paired" in shown
    assert shown in out


def test_one_bootstrap_per_protocol_gives_the_headline_and_the_classes(third_detector, monkeypatch, capsys):
    """No second resampling for the per-class differences: one bootstrap call per protocol."""
    import deteval.stats
    import deteval.stats.comparison

    calls = []
    original = deteval.stats.comparison.bootstrap

    def counted(*args, **kwargs):
        calls.append(sorted(args[1]))  # the detectors resampled together
        return original(*args, **kwargs)

    monkeypatch.setattr(deteval.stats.comparison, "bootstrap", counted)
    monkeypatch.setattr(deteval.stats, "bootstrap", counted)
    argv = _argv("evaluate", [DT, DT_B, third_detector], "--protocol", "coco", "--protocol", "voc2010")
    doc = json.loads(_run([*argv, "--bootstrap", "20", "--format", "json"], capsys))
    assert calls == [sorted(doc["inputs"]["detectors"])] * 2
    assert len(doc["class_comparisons"]) == 2 * 2 * 4
