"""Fuzzing the input edge: mutated COCO and VOC files through ``deteval.cli.main``.

Each example takes the hand-checked fixtures (fixtures/coco/, and a two-image VOC root built
here), applies a few mutations -- drop a field, change its JSON type, put NaN or an absurd
number in it, duplicate or delete a record, truncate the file, add garbage -- and runs
``deteval evaluate``. The contract:

* the exit code is 0 (scored) or 3 (refused, with a ``deteval: error:`` line); any other
  exception escaping ``main`` is a failure (it would be a traceback for the user);
* exit 3 leaves stdout empty; exit 0 prints strict JSON (no NaN tokens);
* nothing hangs (a watchdog fails an example after 20 s);
* when a COCO input is scored without warnings that the reference cannot take, pycocotools
  runs on it without crashing and gives the same 12 numbers as ``coco-pycocotools``.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
import math
import shutil
import signal
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from deteval.cli import main
from tests import ROOT
from tests.reference.run_pycocotools import run_pycocotools

# Generated data has classes without ground truth and degenerate boxes: the API's
# UndefinedMetricWarning / InputWarning are incidental here (tests/unit/test_api.py checks them).
pytestmark = pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")


GT = json.loads((ROOT / "fixtures" / "coco" / "gt.json").read_text())
DT = json.loads((ROOT / "fixtures" / "coco" / "dt.json").read_text())

FUZZ = settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Pycocotools' 12 stats, in its order, by deteval's metric names.
STATS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")

#: Warnings of inputs pycocotools also takes (anything else: no cross-check).
REFERENCE_TAKES = (
    "no ground truth counted",
    "zero area or a zero-width",
    "zero width or height",
    "beyond max_dets",
    "no detections",
    "extend past the image",
    "normalized",
)

WEIRD_VALUES = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        -1,
        2,
        7,
        2**63,
        2**70,
        -(2**63) - 1,
        0.5,
        1.0,
        -0.0,
        1e308,
        -1e9,
        float("nan"),
        float("inf"),
        float("-inf"),
        "",
        "1",
        "0",
        "nan",
        "../../x",
        "=cmd",
        [],
        [1],
        [1, 2, 3],
        [1, 2, 3, 4, 5],
        [0, 0, 0, 0],
        [float("nan"), 0, 1, 1],
        [1, 1, -2, 3],
        ["1", "2", "3", "4"],
        {},
        {"a": 1},
        [[1, 2, 3, 4, 5, 6]],
    ]
)


@contextlib.contextmanager
def watchdog(seconds: int):
    """Fail (instead of hanging) if the body runs longer than ``seconds``."""

    def on_alarm(signum, frame):
        raise TimeoutError(f"deteval took more than {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(argv: list) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with watchdog(20), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])  # anything but DetevalError escaping = failure
    return code, out.getvalue(), err.getvalue()


def check_contract(code: int, out: str, err: str) -> dict | None:
    assert code in (0, 3), (code, err)
    assert "Traceback" not in err
    if code == 3:
        assert out == "", "stdout must be empty on exit 3"
        assert err.startswith("deteval: error: "), err
        assert err.strip(), err
        return None
    return json.loads(out, parse_constant=lambda token: pytest.fail(f"{token} token in stdout"))


# -- COCO mutations ----------------------------------------------------------------------------


@st.composite
def coco_mutation(draw):
    """(target, description, apply) where apply mutates (gt, dt) in place."""
    target = draw(st.sampled_from(["gt.images", "gt.categories", "gt.annotations", "dt", "gt", "dt.top"]))
    kind = draw(
        st.sampled_from(
            ["drop", "set", "set", "set", "nan_in_bbox", "duplicate", "delete", "add_key", "clear"]
        )
    )
    index = draw(st.integers(0, 20))
    value = draw(WEIRD_VALUES)
    key = draw(
        st.sampled_from(
            [
                "id",
                "image_id",
                "category_id",
                "bbox",
                "score",
                "area",
                "iscrowd",
                "ignore",
                "width",
                "height",
                "name",
                "segmentation",
                "file_name",
            ]
        )
    )
    coordinate = draw(st.integers(0, 3))

    def apply(gt: dict, dt: list) -> None:
        if target == "gt":
            if kind in ("drop", "delete") and gt:
                gt.pop(sorted(gt)[index % len(gt)])
            elif kind == "set" and gt:
                gt[sorted(gt)[index % len(gt)]] = copy.deepcopy(value)
            return
        if target == "dt.top":
            if kind == "set":
                dt[:] = [copy.deepcopy(value)]
            elif kind == "delete":
                dt.clear()
            return
        records = dt if target == "dt" else gt.get(target.split(".")[1])
        if not isinstance(records, list) or not records:
            return
        i = index % len(records)
        record = records[i]
        if kind == "clear":
            records.clear()
        elif kind == "delete":
            del records[i]
        elif kind == "duplicate":
            records.insert(i, copy.deepcopy(record))
        elif not isinstance(record, dict):
            return
        elif kind == "drop":
            record.pop(key, None)
        elif kind in ("set", "add_key"):
            record[key] = copy.deepcopy(value)
        elif (
            kind == "nan_in_bbox"
            and isinstance(record.get("bbox"), list)
            and len(record["bbox"]) > coordinate
        ):
            record["bbox"][coordinate] = float("nan")

    return f"{kind} {target}[{index}].{key} = {value!r}", apply


@st.composite
def coco_case(draw):
    gt, dt = copy.deepcopy(GT), copy.deepcopy(DT)
    notes = []
    for note, apply in draw(st.lists(coco_mutation(), min_size=1, max_size=3)):
        apply(gt, dt)
        notes.append(note)
    truncate = draw(st.sampled_from([None, None, None, None, "gt", "dt", "garbage"]))
    cut = draw(st.floats(0.0, 1.0))
    return gt, dt, truncate, cut, notes


def _serialize(value) -> bytes:
    return json.dumps(value, indent=1, allow_nan=True).encode()  # NaN/Infinity tokens on purpose


def _same(metric, stat) -> bool:
    if metric is None:
        return stat == -1
    return math.isclose(metric, stat, rel_tol=0, abs_tol=1e-12)


@FUZZ
@given(case=coco_case())
def test_fuzzed_coco_inputs_are_scored_or_refused(case):
    gt, dt, truncate, cut, notes = case
    with tempfile.TemporaryDirectory() as tmp:
        gt_path, dt_path = Path(tmp) / "gt.json", Path(tmp) / "dt.json"
        gt_raw, dt_raw = _serialize(gt), _serialize(dt)
        if truncate == "gt":
            gt_raw = gt_raw[: int(len(gt_raw) * cut)]
        elif truncate == "dt":
            dt_raw = dt_raw[: int(len(dt_raw) * cut)]
        elif truncate == "garbage":
            dt_raw = dt_raw + b"\n{]"
        gt_path.write_bytes(gt_raw)
        dt_path.write_bytes(dt_raw)
        code, out, err = run_cli(
            [
                "evaluate",
                "--gt",
                gt_path,
                "--dt",
                dt_path,
                "--format",
                "json",
                "--protocol",
                "coco-pycocotools",
            ]
        )
        doc = check_contract(code, out, err)
        event(f"exit {code}")
        if doc is None:
            return
        # validate agrees with evaluate on whether the inputs can be scored
        code, out, err = run_cli(["validate", "--gt", gt_path, "--dt", dt_path, "--format", "json"])
        assert code == 0, err
        # another protocol family on the same accepted input: scored too
        check_contract(
            *run_cli(
                [
                    "evaluate",
                    "--gt",
                    gt_path,
                    "--dt",
                    dt_path,
                    "--format",
                    "json",
                    "--protocol",
                    "voc2010",
                    "-q",
                ]
            )
        )
    if truncate or not all(any(t in w for t in REFERENCE_TAKES) for w in doc["warnings"]):
        return
    # The cross-check reference must take what deteval scored without a word against it.
    event("cross-checked against pycocotools")
    reference = run_pycocotools(gt, dt)
    metrics = doc["results"][0]["metrics"]
    for name, stat in zip(STATS, reference.stats, strict=True):
        assert _same(metrics[name], stat), (name, metrics[name], stat, notes)


# -- VOC mutations -----------------------------------------------------------------------------

VOC_XML = {
    "000001": (
        "<annotation>\n <size><width>100</width><height>80</height></size>\n"
        " <object><name>cat</name><difficult>0</difficult><bndbox><xmin>10</xmin><ymin>10</ymin>"
        "<xmax>50</xmax><ymax>60</ymax></bndbox></object>\n"
        " <object><name>dog</name><difficult>0</difficult><bndbox><xmin>60</xmin><ymin>20</ymin>"
        "<xmax>90</xmax><ymax>70</ymax></bndbox></object>\n</annotation>\n"
    ),
    "000002": (
        "<annotation>\n <size><width>100</width><height>80</height></size>\n"
        " <object><name>cat</name><difficult>1</difficult><bndbox><xmin>5</xmin><ymin>5</ymin>"
        "<xmax>40</xmax><ymax>40</ymax></bndbox></object>\n</annotation>\n"
    ),
}
VOC_RESULTS = {
    "cat": "000001 0.9 10 10 50 60\n000002 0.8 5 5 40 40\n000002 0.3 60 10 90 70\n",
    "dog": "000001 0.7 60 20 90 70\n000002 0.2 1 1 20 20\n",
}
TOKENS = st.sampled_from(
    [
        "3",
        "15",
        "45.5",
        "0.25",
        "1e-3",
        "",
        "nan",
        "inf",
        "-1",
        "1e999",
        "abc",
        "../x",
        "0",
        "1",
        "2",
        "<",
        "&amp;",
        "&x;",
        "\x00",
        "é",
        "<!DOCTYPE a>",
        " ",
        "\n",
        "000003",
        "9" * 30,
    ]
)


@st.composite
def voc_case(draw):
    xml = dict(VOC_XML)
    results = dict(VOC_RESULTS)
    split = "000001\n000002\n"
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["xml", "xml", "result", "result", "split", "extra_line"]))
        token = draw(TOKENS)
        if where == "xml":
            name = draw(st.sampled_from(sorted(xml)))
            text = xml[name]
            how = draw(st.sampled_from(["replace_number", "drop_tag", "truncate", "insert"]))
            pos = draw(st.integers(0, len(text)))
            if how == "replace_number":
                tag = draw(
                    st.sampled_from(["xmin", "ymin", "xmax", "ymax", "difficult", "width", "name", "height"])
                )
                start = text.find(f"<{tag}>")
                if start >= 0:
                    end = text.find(f"</{tag}>", start)
                    text = text[: start + len(tag) + 2] + token + text[end:]
            elif how == "drop_tag":
                tag = draw(st.sampled_from(["difficult", "bndbox", "name", "size", "xmax", "object"]))
                start, end = text.find(f"<{tag}>"), text.find(f"</{tag}>")
                if 0 <= start < end:
                    text = text[:start] + text[end + len(tag) + 3 :]
            elif how == "truncate":
                text = text[:pos]
            else:
                text = text[:pos] + token + text[pos:]
            xml[name] = text
        elif where == "result":
            cls = draw(st.sampled_from(sorted(results)))
            lines = results[cls].splitlines()
            row = draw(st.integers(0, len(lines) - 1))
            parts = lines[row].split(" ")
            how = draw(st.sampled_from(["replace", "drop_column", "add_column", "truncate"]))
            col = draw(st.integers(0, len(parts) - 1))
            if how == "replace":
                parts[col] = token
            elif how == "drop_column":
                del parts[col]
            elif how == "add_column":
                parts.insert(col, token or "x")
            else:
                parts = parts[:col]
            lines[row] = " ".join(parts)
            results[cls] = "\n".join(lines) + "\n"
        elif where == "split":
            split = split + token + "\n"
        else:  # a further detection, often valid (exercises scoring rather than refusal)
            cls = draw(st.sampled_from(sorted(results)))
            results[cls] += f"{draw(st.sampled_from(['000001', '000002', token]))} 0.5 {token} 5 60 70\n"
    return xml, results, split


@FUZZ
@given(case=voc_case())
def test_fuzzed_voc_inputs_are_scored_or_refused(case):
    xml, results, split = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for sub in ("Annotations", "ImageSets/Main", "results"):
            (root / sub).mkdir(parents=True)
        for name, text in xml.items():
            (root / "Annotations" / f"{name}.xml").write_bytes(text.encode("utf-8", "surrogatepass"))
        for cls, text in results.items():
            (root / "results" / f"comp4_det_test_{cls}.txt").write_bytes(text.encode())
        (root / "ImageSets" / "Main" / "test.txt").write_bytes(split.encode())
        for protocol in ("voc2007", "coco"):
            code, out, err = run_cli(
                [
                    "evaluate",
                    "--gt",
                    root,
                    "--dt",
                    root / "results",
                    "--split",
                    "test",
                    "--protocol",
                    protocol,
                    "--format",
                    "json",
                ]
            )
            doc = check_contract(code, out, err)
            event(f"{protocol}: exit {code}")
            if doc is not None:
                assert all(np.isfinite(v) for v in doc["results"][0]["metrics"].values() if v is not None)


# -- Hostile bytes: duplicate keys, deep nesting, odd encodings, overflowing numbers ----------
#
# Each example below either scores or exits 3 with a message that names the offending file; it
# never lets a traceback, a hang or a numpy warning (pytest turns warnings into errors, and
# stderr is checked for them) reach the user. These are bounded (HOSTILE) to keep the file
# well under a minute.

HOSTILE = settings(FUZZ, max_examples=60)

HUGE_NUMBERS = st.sampled_from(
    [
        "1e400",
        "-1e400",
        "1e308",
        "1.7976931348623157e308",
        "4.9e-324",
        "1e-400",
        "123456789012345678901234567890",
        "18446744073709551616",
        "9223372036854775808",
        "-9223372036854775809",
        "9223372036854775807",
        "2147483648",
        "1" + "0" * 400,
        "0." + "0" * 400 + "1",
    ]
)


def check_refusal_names(code: int, err: str, *names: str) -> None:
    """Exit 3 must say which file (any of ``names``); no numpy warning on stderr either way."""
    assert "Warning:" not in err, err
    if code == 3:
        assert any(name in err for name in names), (names, err)


def _dump(value) -> str:
    return json.dumps(value, separators=(", ", ": "), allow_nan=True)


@st.composite
def hostile_json_case(draw):
    """(gt bytes, dt bytes, kind): one hostile change to the fixture's COCO text."""
    which = draw(st.sampled_from(["gt", "dt"]))
    kind = draw(st.sampled_from(["duplicate_key", "deep", "encoding", "number", "number"]))
    gt, dt = copy.deepcopy(GT), copy.deepcopy(DT)
    records = gt["annotations"] if which == "gt" else dt
    i = draw(st.integers(0, len(records) - 1))
    key = draw(st.sampled_from(["bbox", "score", "image_id", "category_id", "id", "area"]))
    marker = "__HOSTILE__"
    if kind == "duplicate_key":
        # `"key" : value` before the real `"key": value`, spaces before the colon; Python's json
        # keeps the last one, as deteval must if it accepts the file at all.
        first = draw(st.sampled_from(["[1, 2, 3, 4]", "0.5", "7", '"x"', "null", "[]"]))
        spaces = " " * draw(st.integers(1, 3))
        records[i] = {marker: None, **records[i]}
        replacement = f'"{key}"{spaces}: {first}'
    elif kind == "deep":
        depth = draw(st.sampled_from([50, 1_000, 100_000]))
        records[i][key] = marker
        replacement = "[" * depth + "1" + "]" * depth
    elif kind == "number":
        if key == "bbox" and isinstance(records[i].get("bbox"), list):
            records[i]["bbox"][draw(st.integers(0, 3))] = marker
        else:
            records[i][key] = marker
        replacement = draw(HUGE_NUMBERS)
    else:
        replacement = None
    texts = {"gt": _dump(gt), "dt": _dump(dt)}
    if kind == "duplicate_key":
        texts[which] = texts[which].replace(f'"{marker}": null', replacement or "")
    elif replacement is not None:
        texts[which] = texts[which].replace(f'"{marker}"', replacement)
    raw = {name: text.encode() for name, text in texts.items()}
    if kind == "encoding":
        codec = draw(st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig", "gzip"]))
        raw[which] = gzip.compress(raw[which]) if codec == "gzip" else texts[which].encode(codec)
        kind = f"encoding {codec}"
    return raw["gt"], raw["dt"], f"{kind} {which}[{i}].{key}"


def _parsed(raw: bytes):
    """What Python's json makes of the bytes (the reference's reader), or None."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


@HOSTILE
@given(case=hostile_json_case())
def test_hostile_json_bytes_are_scored_or_refused(case):
    gt_raw, dt_raw, kind = case
    with tempfile.TemporaryDirectory() as tmp:
        gt_path, dt_path = Path(tmp) / "gt.json", Path(tmp) / "dt.json"
        gt_path.write_bytes(gt_raw)
        dt_path.write_bytes(dt_raw)
        argv = ["evaluate", "--gt", gt_path, "--dt", dt_path, "--format", "json"]
        code, out, err = run_cli([*argv, "--protocol", "coco-pycocotools"])
    doc = check_contract(code, out, err)
    check_refusal_names(code, err, "gt.json", "dt.json")
    event(f"{kind.split(' ')[0]}: exit {code}")
    if doc is None or not all(any(t in w for t in REFERENCE_TAKES) for w in doc["warnings"]):
        return
    gt, dt = _parsed(gt_raw), _parsed(dt_raw)
    if gt is None or dt is None:
        return  # scored bytes Python's json cannot read (e.g. UTF-16): no reference to compare
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = run_pycocotools(gt, dt)
    except Exception:  # noqa: BLE001 - the reference refusing an input is not deteval's failure
        event("pycocotools refused")
        return
    event("cross-checked against pycocotools")
    metrics = doc["results"][0]["metrics"]
    for name, stat in zip(STATS, reference.stats, strict=True):
        assert _same(metrics[name], stat), (name, metrics[name], stat, kind)


# -- Corrupt compressed RLE counts -----------------------------------------------------------

SEGM_GT = json.loads((ROOT / "fixtures" / "segm" / "gt.json").read_text())
SEGM_DT = json.loads((ROOT / "fixtures" / "segm" / "dt.json").read_text())


def _as_rle(record: dict, height: int, width: int) -> dict:
    """The record with its polygons as one compressed RLE (counts as a str)."""
    rles = mask_utils.frPyObjects(record["segmentation"], height, width)
    rle = mask_utils.merge(rles) if isinstance(rles, list) else rles
    return {**record, "segmentation": {"size": [height, width], "counts": rle["counts"].decode()}}


@st.composite
def corrupt_rle_case(draw):
    size = {img["id"]: (img["height"], img["width"]) for img in SEGM_GT["images"]}
    gt = copy.deepcopy(SEGM_GT)
    dt = [_as_rle(r, *size[r["image_id"]]) for r in SEGM_DT]
    gt["annotations"] = [_as_rle(a, *size[a["image_id"]]) for a in gt["annotations"]]
    which = draw(st.sampled_from(["gt", "dt"]))
    records = gt["annotations"] if which == "gt" else dt
    i = draw(st.integers(0, len(records) - 1))
    seg = records[i]["segmentation"]
    counts = seg["counts"]
    how = draw(
        st.sampled_from(
            ["none", "truncate", "garbage", "overflow", "append", "empty", "type", "size", "size_overflow"]
        )
    )
    cut = draw(st.integers(0, max(len(counts) - 1, 0)))
    if how == "none":  # the valid RLE: scored
        pass
    elif how == "truncate":
        seg["counts"] = counts[:cut]
    elif how == "garbage":
        seg["counts"] = (
            counts[:cut] + draw(st.sampled_from(["\x00", " ", "é", "\x7f", "\\", "\x1f"])) + counts[cut:]
        )
    elif how == "overflow":  # continuation characters: a run length far beyond int64
        seg["counts"] = counts[:cut] + "_" * draw(st.sampled_from([5, 13, 40, 1000])) + "?" + counts[cut:]
    elif how == "append":
        seg["counts"] = counts + draw(st.sampled_from(["1", "O", "oo", "~~~~~~~~~~~~~1"]))
    elif how == "empty":
        seg["counts"] = ""
    elif how == "type":
        seg["counts"] = draw(st.sampled_from([None, 5, [1e400], ["1"], {"a": 1}, [-1, 5], [2**70]]))
    elif how == "size":
        seg["size"] = draw(st.sampled_from([[0, 0], [-1, 100], [100], [1e9, 1e9], ["100", "100"], None]))
    else:
        seg["size"] = [2**40, 2**40]
    return gt, dt, f"{how} {which}[{i}]"


@HOSTILE
@given(case=corrupt_rle_case())
def test_corrupt_rle_counts_are_scored_or_refused(case):
    gt, dt, kind = case
    with tempfile.TemporaryDirectory() as tmp:
        gt_path, dt_path = Path(tmp) / "gt.json", Path(tmp) / "dt.json"
        gt_path.write_bytes(_serialize(gt))
        dt_path.write_bytes(_serialize(dt))
        for mask_iou in ("raster", "exact"):
            code, out, err = run_cli(
                ["evaluate", "--gt", gt_path, "--dt", dt_path, "--iou-type", "segm", "--mask-iou", mask_iou]
                + ["--format", "json"]
            )
            check_contract(code, out, err)
            check_refusal_names(code, err, "gt.json", "dt.json")
            event(f"{kind.split(' ')[0]} {mask_iou}: exit {code}")


# -- VOC XML: repeated children, odd encodings -------------------------------------------------

XML_CHILD = st.sampled_from(["name", "bndbox", "size", "difficult", "xmin", "ymax", "width", "object"])
XML_ENCODINGS = st.sampled_from(
    [
        ("utf-8", "UTF-8"),
        ("utf-8-sig", "UTF-8"),
        ("latin-1", "ISO-8859-1"),
        ("latin-1", "UTF-8"),  # declared UTF-8, written Latin-1: invalid bytes
        ("utf-16", "UTF-16"),
        ("utf-16-le", "UTF-16"),
        ("utf-16", "UTF-8"),
        ("utf-8", "x-no-such-encoding"),
        ("cp1252", "windows-1252"),
        ("utf-32", "UTF-32"),
    ]
)


@st.composite
def voc_xml_case(draw):
    xml = dict(VOC_XML)
    name = draw(st.sampled_from(sorted(xml)))
    text = xml[name]
    for _ in range(draw(st.integers(0, 2))):
        tag = draw(XML_CHILD)
        start, end = text.find(f"<{tag}>"), text.find(f"</{tag}>")
        if 0 <= start < end:
            element = text[start : end + len(tag) + 3]
            variant = element.replace(">10<", ">30<").replace(">cat<", ">dog<")
            text = (
                text[:start]
                + element
                + draw(st.sampled_from([variant, element]))
                + text[end + len(tag) + 3 :]
            )
    codec, declared = draw(XML_ENCODINGS)
    if draw(st.booleans()):
        text = text.replace("<name>cat</name>", "<name>caté</name>", 1)
    declaration = draw(st.sampled_from([True, True, False]))
    head = f'<?xml version="1.0" encoding="{declared}"?>\n' if declaration else ""
    try:
        raw = (head + text).encode(codec)
    except UnicodeEncodeError:
        raw = (head + text).encode("utf-8")
    return xml, name, raw, f"{codec}/{declared if declaration else '-'}"


@HOSTILE
@given(case=voc_xml_case())
def test_voc_xml_repeated_children_and_encodings_are_scored_or_refused(case):
    xml, name, raw, kind = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for sub in ("Annotations", "ImageSets/Main", "results"):
            (root / sub).mkdir(parents=True)
        for other, text in xml.items():
            (root / "Annotations" / f"{other}.xml").write_bytes(text.encode())
        (root / "Annotations" / f"{name}.xml").write_bytes(raw)
        for cls, text in VOC_RESULTS.items():
            (root / "results" / f"comp4_det_test_{cls}.txt").write_text(text)
        (root / "ImageSets" / "Main" / "test.txt").write_text("000001\n000002\n")
        code, out, err = run_cli(
            ["evaluate", "--gt", root, "--dt", root / "results", "--split", "test", "--protocol", "voc2007"]
            + ["--format", "json"]
        )
    check_contract(code, out, err)
    check_refusal_names(code, err, f"{name}.xml")
    event(f"{kind}: exit {code}")


# -- YOLO rows with overflowing values ---------------------------------------------------------

YOLO = ROOT / "fixtures" / "yolo"


@st.composite
def yolo_case(draw):
    where = draw(
        st.sampled_from(["labels/val/a.txt", "labels/val/b.txt", "predictions/a.txt", "predictions/b.txt"])
    )
    lines = (YOLO / where).read_text().splitlines()
    row = draw(st.integers(0, len(lines) - 1))
    parts = lines[row].split()
    col = draw(st.integers(0, len(parts) - 1))
    parts[col] = draw(
        st.one_of(
            HUGE_NUMBERS,
            st.sampled_from(["nan", "inf", "-inf", "-0", "0x10", "1_000", "1e-320", "+1", "١", "2e9"]),
        )
    )
    lines[row] = " ".join(parts)
    return where, "\n".join(lines) + "\n"


@HOSTILE
@given(case=yolo_case())
def test_yolo_rows_with_overflowing_values_are_scored_or_refused(case):
    where, text = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "yolo"
        shutil.copytree(YOLO, root)
        (root / where).write_text(text)
        for protocol in ("ultralytics", "coco"):
            code, out, err = run_cli(
                ["evaluate", "--gt", root, "--dt", root / "predictions", "--format", "json"]
                + ["--protocol", protocol]
            )
            doc = check_contract(code, out, err)
            check_refusal_names(code, err, Path(where).name)
            event(f"{protocol}: exit {code}")
            if doc is not None:
                assert all(np.isfinite(v) for v in doc["results"][0]["metrics"].values() if v is not None)
