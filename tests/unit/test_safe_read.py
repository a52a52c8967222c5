"""One reading policy for every reader (deteval._safe_read), shown on real hostile files.

Each kind of reader -- COCO JSON, a text file of rows (a VOC class list), a YOLO data.yaml, a
category map (YAML or JSON) and a protocol file -- is given the same hostile files: a character
device made with ``os.mknod``, a FIFO with no writer, a folder, a sparse file over the kind's cap,
bytes that are not UTF-8, a gzip-compressed file, a UTF-8 BOM (accepted: skipped) and, for the
mapping formats, a key given twice. The refusal names the file and what it is; nothing blocks.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from deteval._safe_read import MAX_BYTES
from deteval.errors import ConfigError, DetevalError, InputError
from deteval.io.category_map import read_category_map
from deteval.io.coco import load_coco_gt
from deteval.io.voc import read_class_list
from deteval.io.yolo import load_yolo_gt
from deteval.protocol import MAX_CONFIG_BYTES, load_protocol_file
from tests import ROOT

GT_JSON = (ROOT / "fixtures" / "coco" / "gt.json").read_bytes()

#: (reader, a valid file's bytes, its cap, the error class of a file it cannot read).
READERS: dict[str, tuple[Callable, bytes, int, type]] = {
    "coco_json": (load_coco_gt, GT_JSON, MAX_BYTES["json"], InputError),
    "class_list": (read_class_list, b"cat\ndog\n", MAX_BYTES["text"], InputError),
    "data_yaml": (load_yolo_gt, b"names: [cat]\nval: images\n", MAX_BYTES["data_yaml"], InputError),
    "category_map": (read_category_map, b"0: 1\n1: 2\n", MAX_BYTES["data_yaml"], InputError),
    "protocol": (load_protocol_file, b"extends: coco\n", MAX_CONFIG_BYTES, ConfigError),
}

#: A key given twice, per mapping format.
DUPLICATES = {
    "coco_json": b'{"images": [], "annotations": [], "categories": [], "images": []}',
    "data_yaml": b"names: [cat]\nval: images\nnames: [dog]\n",
    "category_map": b"0: 1\n1: 2\n0: 3\n",
    "protocol": b"extends: coco\nmax_dets: [1]\nmax_dets: [2]\n",
}


def _refused(reader: Callable, path: Path) -> str:
    with pytest.raises(DetevalError) as info:
        reader(str(path))
    return str(info.value)


def _name(tmp_path: Path, kind: str) -> Path:
    """A file name each reader takes as a file (a data.yaml, a .yaml protocol, ...)."""
    return tmp_path / {"coco_json": "gt.json", "class_list": "classes.txt"}.get(kind, "data.yaml")


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_character_device_is_refused_unread(tmp_path, kind):
    reader, _, _, error = READERS[kind]
    path = _name(tmp_path, kind)
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers: never ends
    message = _refused(reader, path)
    assert f"{path}: is a character device, not a regular file; expected " in message
    with pytest.raises(error):
        reader(str(path))


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_fifo_without_a_writer_is_refused_without_blocking(tmp_path, kind):
    reader, _, _, _ = READERS[kind]
    path = _name(tmp_path, kind)
    os.mkfifo(path)
    assert f"{path}: is a FIFO (named pipe), not a regular file; expected " in _refused(reader, path)


@pytest.mark.parametrize("kind", ["coco_json", "class_list", "category_map", "protocol"])
def test_a_folder_is_refused(tmp_path, kind):
    reader, _, _, _ = READERS[kind]
    path = _name(tmp_path, kind)
    path.mkdir()
    assert f"{path}: is a folder, not a regular file; expected " in _refused(reader, path)


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_file_over_the_cap_of_its_kind_is_refused_unread(tmp_path, kind):
    """A sparse file one byte over the cap: refused by its size, nothing read."""
    reader, _, cap, _ = READERS[kind]
    path = _name(tmp_path, kind)
    with open(path, "wb") as f:
        f.truncate(cap + 1)
    message = _refused(reader, path)
    assert f"{path}: {cap + 1} bytes; expected " in message
    assert message.endswith(f" of at most {cap} bytes")


def test_a_data_yaml_and_a_category_map_have_the_yaml_cap_not_the_text_cap():
    """Changed: they were read with the 4 GiB cap of row files; YAML is parsed in Python."""
    assert MAX_BYTES["data_yaml"] == 16 << 20 < MAX_BYTES["text"]
    assert MAX_CONFIG_BYTES == MAX_BYTES["yaml"] == 1 << 20


@pytest.mark.parametrize("kind", sorted(READERS))
def test_bytes_that_are_not_utf8_are_refused_naming_the_line(tmp_path, kind):
    reader, valid, _, _ = READERS[kind]
    path = _name(tmp_path, kind)
    lines = valid.split(b"\n")
    path.write_bytes(b"\n".join(lines[:1] + [lines[1] + b"\xff" if len(lines) > 1 else b"\xff"] + lines[2:]))
    message = _refused(reader, path)
    if kind == "coco_json":  # orjson's reason, after the file's name
        assert message.startswith(f"{path}: invalid JSON: ")
    else:
        assert message.startswith(f"{path}:2: not UTF-8 text (byte 0xff); expected ")


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_compressed_file_is_named_with_its_remedy(tmp_path, kind):
    reader, valid, _, _ = READERS[kind]
    path = _name(tmp_path, kind)
    path.write_bytes(gzip.compress(valid))
    message = _refused(reader, path)
    assert "gzip-compressed" in message
    assert message.endswith("decompress it first (gunzip)")
    assert message.startswith(str(path))


@pytest.mark.parametrize("kind", sorted(READERS))
def test_utf16_text_is_named_with_its_remedy(tmp_path, kind):
    reader, valid, _, _ = READERS[kind]
    path = _name(tmp_path, kind)
    path.write_bytes(b"\xff\xfe" + valid.decode().encode("utf-16-le"))
    message = _refused(reader, path)
    assert message.startswith(str(path))
    assert message.endswith("UTF-16 text (little-endian BOM); expected UTF-8: save it as UTF-8")


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_utf8_bom_is_skipped_by_every_reader(tmp_path, kind):
    """One rule: a BOM is skipped.

    Changed for JSON, which refused it (orjson: "byte order mark (BOM) is not supported"); the
    text and YAML readers skipped it already.
    """
    reader, valid, _, _ = READERS[kind]
    read = []
    for folder, head in (("plain", b""), ("bom", b"\xef\xbb\xbf")):
        path = _name(tmp_path / folder, kind)
        path.parent.mkdir()
        path.write_bytes(head + valid)
        if kind == "data_yaml":  # the split's images folder, with its labels folder beside it
            (path.parent / "images").mkdir()
            (path.parent / "labels").mkdir()
        read.append(reader(str(path)))
    a, b = read
    if kind == "coco_json":
        assert (a.image_id.tolist(), a.box.tolist()) == (b.image_id.tolist(), b.box.tolist())
    elif kind == "category_map":
        assert a.table == b.table
    elif kind == "data_yaml":
        assert a.category_name == b.category_name == ("cat",)
    elif kind == "protocol":
        assert a.fingerprint() == b.fingerprint()
    else:
        assert a == b == ("cat", "dog")


def test_coco_results_with_a_bom_read_as_without(tmp_path):
    """The results reader (fast paths first) skips a BOM too (refused before: invalid JSON)."""
    from deteval.io.coco import load_coco_dt

    gt = load_coco_gt(str(ROOT / "fixtures" / "coco" / "gt.json"))
    records = [{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "score": 0.5}]
    (tmp_path / "a.json").write_text(json.dumps(records))
    (tmp_path / "b.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(records).encode())
    a, b = load_coco_dt(str(tmp_path / "a.json"), gt), load_coco_dt(str(tmp_path / "b.json"), gt)
    assert (a.box.tolist(), a.score.tolist()) == (b.box.tolist(), b.score.tolist()) == ([[1, 2, 3, 4]], [0.5])


@pytest.mark.parametrize("kind", sorted(DUPLICATES))
def test_a_key_given_twice_is_refused_by_every_mapping_format(tmp_path, kind):
    reader, _, _, _ = READERS[kind]
    path = _name(tmp_path, kind)
    path.write_bytes(DUPLICATES[kind])
    message = _refused(reader, path)
    assert message.startswith(str(path))
    assert "duplicate key" in message
    assert message.endswith("expected each key once")


@pytest.mark.parametrize("kind", ["data_yaml", "category_map", "protocol"])
def test_every_yaml_reader_refuses_tags_and_aliases_alike(tmp_path, kind):
    reader, _, _, _ = READERS[kind]
    path = _name(tmp_path, kind)
    path.write_bytes(b"a: !!python/object/apply:os.getcwd []\n")
    assert f"{path}: a: tag '!!python/object/apply:os.getcwd' (line 1) is not allowed" in _refused(
        reader, path
    )
    path.write_bytes(b"a: &x 1\nb: *x\n")
    message = _refused(reader, path)
    assert f"{path}: b: anchors and aliases (&name / *name, line 1) are not allowed" in message
