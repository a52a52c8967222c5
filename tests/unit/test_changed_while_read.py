"""A file that changes while deteval reads it is an error, never detections mixing two versions.

Deterministic cases change the file at a chosen moment (a read step wrapped to rewrite the file
in place, or to rename another file over it, after the first stat and before or between reads);
concurrent cases rewrite real files from a thread while they are loaded again and again, and
check that every load gives one version or the error.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from deteval._safe_read import files as _text
from deteval.cli import main
from deteval.errors import InputError
from deteval.io.coco import fast
from deteval.io.coco.ground_truth import load_coco_gt
from deteval.io.coco.results import load_coco_dt
from deteval.io.yolo import load_yolo_dt, load_yolo_gt
from tests import ROOT

N_IMAGES, PER_IMAGE = 20, 50


def write_gt(folder: Path) -> Path:
    gt = {
        "images": [{"id": i + 1, "width": 640, "height": 480} for i in range(N_IMAGES)],
        "annotations": [
            {
                "id": i + 1,
                "image_id": i + 1,
                "category_id": 1,
                "bbox": [10, 10, 50, 50],
                "area": 2500,
                "iscrowd": 0,
            }
            for i in range(N_IMAGES)
        ],
        "categories": [{"id": 1, "name": "cat"}],
    }
    path = folder / "gt.json"
    path.write_text(json.dumps(gt))
    return path


def results_text(digit: str) -> bytes:
    """A plain box-results file; versions differ only in the scores' digits (same size)."""
    records = [
        f'{{"image_id": {k // PER_IMAGE + 1}, "category_id": 1, "bbox": [10, 10, 50, 50], "score": 0.{digit * 4}{k:04d}}}'
        for k in range(N_IMAGES * PER_IMAGE)
    ]
    return ("[" + ",\n".join(records) + "]\n").encode()


def rewrite_in_place(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def replace_by_rename(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


CHANGES = {
    "rewritten in place, same size": lambda path: rewrite_in_place(
        path, path.read_bytes().replace(b"0.1111", b"0.2222")
    ),
    "rewritten in place, longer": lambda path: rewrite_in_place(path, path.read_bytes() + b"\n"),
    "replaced by rename, same bytes": lambda path: replace_by_rename(path, path.read_bytes()),
}


# -- deterministic: the whole-file reader ------------------------------------------------------


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_read_bytes_refuses_a_file_changed_between_stat_and_read(tmp_path, monkeypatch, change):
    path = tmp_path / "dt.json"
    path.write_bytes(results_text("1"))
    original = _text._read_chunks

    def changing(f, size, limit):
        CHANGES[change](path)
        return original(f, size, limit)

    monkeypatch.setattr(_text, "_read_chunks", changing)
    with pytest.raises(InputError, match=f"^{path}: changed while read"):
        _text.read_bytes(str(path), what="a JSON file")


def test_read_bytes_refuses_a_file_removed_while_read(tmp_path, monkeypatch):
    path = tmp_path / "dt.json"
    path.write_bytes(results_text("1"))
    original = _text._read_chunks

    def removing(f, size, limit):
        path.unlink()
        return original(f, size, limit)

    monkeypatch.setattr(_text, "_read_chunks", removing)
    with pytest.raises(InputError, match="changed while read"):
        _text.read_bytes(str(path), what="a JSON file")


def test_an_unchanged_file_and_a_fifo_read_as_before(tmp_path):
    path = tmp_path / "dt.json"
    path.write_bytes(results_text("1"))
    assert _text.read_bytes(str(path), what="a JSON file") == results_text("1")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="is a FIFO"):
        _text.read_bytes(str(fifo), what="a JSON file")


# -- deterministic: the streamed results reader --------------------------------------------------


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_streamed_reader_refuses_a_file_changed_between_parts(tmp_path, monkeypatch, change):
    """A rewrite after the first part: before, such a file was read again whole, silently."""
    gt = load_coco_gt(write_gt(tmp_path))
    path = tmp_path / "dt.json"
    path.write_bytes(results_text("1"))
    reads = []

    class ChangingFile:
        def __init__(self, f):
            self.f = f

        def readinto(self, view):
            if len(reads) == 1:
                CHANGES[change](path)
            reads.append(1)
            return self.f.readinto(view)

    if fast._colparse is None:
        pytest.skip("the streamed reader needs the compiled extension")
    original = fast._read_parts
    monkeypatch.setattr(
        fast,
        "_read_parts",
        lambda f, parts, size, chunk, *cut: original(ChangingFile(f), parts, size, chunk, *cut),
    )
    with pytest.raises(InputError, match=f"^{path}: changed while read"):
        fast._stream_box_results(str(path), gt, chunk_size=4096)
    assert len(reads) > 2  # the change came between parts


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_streamed_keypoint_reader_refuses_a_file_changed_between_parts(tmp_path, monkeypatch, change):
    """Keypoint results are streamed too (``_stream_keypoint_results``): the same refusal."""
    gt = load_coco_gt(write_gt(tmp_path))
    path = tmp_path / "dt.json"
    path.write_bytes(
        results_text("1").replace(b'"bbox": [10, 10, 50, 50]', b'"keypoints": [10, 10, 2, 50, 50, 2]')
    )
    reads = []

    class ChangingFile:
        def __init__(self, f):
            self.f = f

        def readinto(self, view):
            if len(reads) == 1:
                CHANGES[change](path)
            reads.append(1)
            return self.f.readinto(view)

    if fast._colparse is None:
        pytest.skip("the streamed reader needs the compiled extension")
    assert fast._stream_keypoint_results(str(path), gt, chunk_size=4096) is not None  # unchanged: read
    original = fast._read_parts
    monkeypatch.setattr(
        fast,
        "_read_parts",
        lambda f, parts, size, chunk, *cut: original(ChangingFile(f), parts, size, chunk, *cut),
    )
    with pytest.raises(InputError, match=f"^{path}: changed while read"):
        fast._stream_keypoint_results(str(path), gt, chunk_size=4096)
    assert len(reads) > 2  # the change came between parts


def test_a_changed_results_file_through_the_cli_is_exit_3(tmp_path, monkeypatch, capsys):
    gt = write_gt(tmp_path)
    path = tmp_path / "dt.json"
    path.write_bytes(results_text("1"))
    original_parts, original_chunks = fast._read_parts, _text._read_chunks

    def parts(f, parts_, size, chunk, *cut):
        CHANGES["rewritten in place, same size"](path)
        return original_parts(f, parts_, size, chunk, *cut)

    def chunks(f, size, limit):
        if size == len(results_text("1")):  # dt.json (the whole-file path, without the extension)
            CHANGES["rewritten in place, same size"](path)
        return original_chunks(f, size, limit)

    monkeypatch.setattr(fast, "_read_parts", parts)
    monkeypatch.setattr(_text, "_read_chunks", chunks)
    code = main(["evaluate", "--gt", str(gt), "--dt", str(path), "-q"])
    out, err = capsys.readouterr()
    assert (code, out) == (3, "")
    assert err.startswith(f"deteval: error: {path}: changed while read")
    assert err.count("\n") == 1


# -- concurrent: a thread rewrites real files while they are loaded ------------------------------
#
# Version k of a file holds scores 0.kkkkkkiiii (k: the version, i: the record's place in the
# file), all versions the same size, each written by one pwrite (in another process). A read that mixes versions over
# time reads a part before a rewrite and a later part after it: an older version before a newer
# one, which is what these tests refuse. (A single write still in progress when a read starts
# leaves the newer version before the older one: the file's state at that instant, which no
# stat can tell from a finished write.)


def _versioned(template: str) -> Callable[[int], bytes]:
    """Version k of ``template`` (``KKKKKK`` marks the version digits), made fast: a writer loops on it."""
    head, *rest = template.encode().split(b"KKKKKK")

    def make(k: int) -> bytes:
        digits = b"%06d" % (k % 10**6)
        return head + b"".join(digits + part for part in rest)

    return make


versioned_results = _versioned(
    "["
    + ",\n".join(
        f'{{"image_id": {i // PER_IMAGE + 1}, "category_id": 1, "bbox": [10, 10, 50, 50], "score": 0.KKKKKK{i:04d}}}'
        for i in range(N_IMAGES * PER_IMAGE)
    )
    + "]\n"
)


def versioned_yolo(file: int) -> Callable[[int], bytes]:
    return _versioned("".join(f"0 0.5 0.5 0.1 0.1 0.KKKKKK{file * 2000 + i:04d}\n" for i in range(2000)))


def mixes_older_before_newer(scores: np.ndarray) -> bool:
    """The versions of the records, in file order, ever increase."""
    digits = np.rint(np.asarray(scores) * 1e10).astype(np.int64)
    version, place = digits // 10**4, digits % 10**4
    in_file_order = version[np.argsort(place, kind="stable")]
    return bool((np.diff(in_file_order) > 0).any())


def rewrite_forever(path: Path, make: Callable[[int], bytes]) -> None:
    """Rewrite ``path`` in place with version 1, 2, 3, ... of ``make`` (one pwrite each)."""
    fd = os.open(path, os.O_WRONLY)
    k = 0
    while True:
        k += 1
        os.pwrite(fd, make(k), 0)
        time.sleep(0.0002)


class Rewriter:
    """:func:`rewrite_forever` in another process (the compiled readers hold the GIL while reading)."""

    def __init__(self, path: Path, make: Callable[[int], bytes]):
        self.process = multiprocessing.get_context("fork").Process(
            target=rewrite_forever, args=(path, make), daemon=True
        )

    def start(self) -> None:
        self.process.start()

    def stop(self) -> None:
        self.process.kill()
        self.process.join()


def loads_under_rewrites(rewriter: Rewriter, load: Callable[[], np.ndarray]) -> tuple[int, int]:
    """Load again and again while ``rewriter`` runs: (loads that saw a change, loads mixing versions)."""
    changed = mixed = 0
    others: list[str] = []  # errors that are not the change
    rewriter.start()
    deadline = time.time() + 20
    try:
        tries = 0
        while time.time() < deadline and (tries < 100 or changed == 0):
            tries += 1
            try:
                scores = load()
            except InputError as exc:
                others += [] if "changed while read" in str(exc) else [str(exc)]
                changed += 1
                continue
            mixed += mixes_older_before_newer(scores)
    finally:
        rewriter.stop()
    assert others == []
    return changed, mixed


def test_whole_file_reads_under_concurrent_rewrites(tmp_path):
    path = tmp_path / "dt.json"
    path.write_bytes(versioned_results(0))

    def load() -> np.ndarray:
        raw = _text.read_bytes(str(path), what="a JSON file")
        return np.array([float(r["score"]) for r in json.loads(raw)])

    changed, mixed = loads_under_rewrites(Rewriter(path, versioned_results), load)
    assert mixed == 0, f"{mixed} reads mixed two versions"
    assert changed > 0  # the rewrites did overlap the reads


def test_streamed_results_under_concurrent_rewrites(tmp_path):
    gt = load_coco_gt(write_gt(tmp_path))
    path = tmp_path / "dt.json"
    path.write_bytes(versioned_results(0))
    changed, mixed = loads_under_rewrites(
        Rewriter(path, versioned_results), lambda: load_coco_dt(str(path), gt).score
    )
    assert mixed == 0, f"{mixed} loads mixed two versions"
    assert changed > 0


def test_yolo_folder_under_concurrent_rewrites(tmp_path):
    """The compiled reader reads every file of the folder in one call: each file is checked."""
    root = tmp_path / "ds"
    (root / "images" / "val").mkdir(parents=True)
    (root / "predictions").mkdir()
    for f in range(4):
        (root / "images" / "val" / f"{f}.jpg").write_bytes(b"")
        (root / "predictions" / f"{f}.txt").write_bytes(versioned_yolo(f)(0))
    (root / "sizes.txt").write_text("".join(f"{f}.jpg 640 480\n" for f in range(4)))
    (root / "data.yaml").write_text("names: [a]\nval: images/val\nsizes: sizes.txt\n")
    gt = load_yolo_gt(root)
    changed, mixed = loads_under_rewrites(
        Rewriter(root / "predictions" / "0.txt", versioned_yolo(0)),
        lambda: load_yolo_dt(root / "predictions", gt).score,
    )
    assert mixed == 0, f"{mixed} loads mixed two versions"
    assert changed > 0


@pytest.mark.parametrize("changed", ["results/comp4_det_test_dog.txt", "Annotations/000001.xml"])
def test_voc_files_changed_while_read_through_the_cli(tmp_path, monkeypatch, capsys, changed):
    """A VOC result file or annotation rewritten while read: exit 3 naming it."""
    root = tmp_path / "voc"
    shutil.copytree(ROOT / "fixtures" / "voc", root)
    target = root / changed
    assert target.exists()
    original = _text._read_chunks

    def chunks(f, size, limit):
        if os.path.samefile(f"/proc/self/fd/{f.fileno()}", target):
            rewrite_in_place(target, target.read_bytes() + b"\n")
        return original(f, size, limit)

    monkeypatch.setattr(_text, "_read_chunks", chunks)
    code = main(["evaluate", "--gt", str(root), "--dt", str(root / "results"), "--protocol", "voc2007", "-q"])
    out, err = capsys.readouterr()
    assert (code, out) == (3, ""), err
    assert err.startswith(f"deteval: error: {target}: changed while read"), err
