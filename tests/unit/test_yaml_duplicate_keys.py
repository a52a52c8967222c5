"""One YAML policy: a duplicate key is refused in every YAML file deteval reads.

Protocol files always refused them; YOLO ``data.yaml`` kept the last value silently (a second
``names:`` replaced the first), and category maps are held to the same rule.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import deteval
from deteval.io.yolo import load_yolo_gt
from tests import ROOT


def test_yolo_data_yaml_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "yolo"
    shutil.copytree(ROOT / "fixtures" / "yolo", folder)
    data = folder / "data.yaml"
    data.write_text(data.read_text() + "names:\n  0: dog\n  1: cat\n")
    with pytest.raises(deteval.InputError) as caught:
        load_yolo_gt(folder)
    message = str(caught.value)
    assert str(data) in message
    assert "names: duplicate key (lines 4 and 7); expected each key once" in message


def test_category_map_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    """A repeated key is refused by the one YAML policy, naming both lines.

    The same id written two ways (``0`` and ``00``) is refused by the map's own check (its line).
    """
    path = tmp_path / "map.yaml"
    path.write_text("0: cat\n1: dog\n0: dog\n")
    with pytest.raises(
        deteval.ConfigError, match=r"map.yaml: 0: duplicate key \(lines 1 and 3\); expected each key once"
    ):
        deteval.io.category_map.read_category_map(str(path))
    path.write_text("0: cat\n1: dog\n00: dog\n")
    with pytest.raises(
        deteval.ConfigError, match=r"map.yaml:3: detection id 0 is mapped twice; expected each id once"
    ):
        deteval.io.category_map.read_category_map(str(path))


def test_protocol_files_keep_their_message(tmp_path: Path) -> None:
    from deteval.protocol import parse_yaml

    with pytest.raises(
        deteval.ConfigError, match=r"^x.yaml: a: duplicate key \(lines 1 and 2\); expected each key once$"
    ):
        parse_yaml("a: 1\na: 2\n", filename="x.yaml")
