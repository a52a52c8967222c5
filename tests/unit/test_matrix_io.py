"""deteval.io.matrix: label / score matrices from .npy, .csv, .txt, and every refusal."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.errors import InputError
from deteval.io.matrix import read_labels, read_labels_and_scores, read_matrix, read_scores


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_with_and_without_header(tmp_path):
    plain = _write(tmp_path, "s.csv", "0.1,0.7\n0.3, 0.6\n\n")
    headed = _write(tmp_path, "h.csv", "cat,dog\n0.1,0.7\n0.3,0.6\n")
    expected = np.array([[0.1, 0.7], [0.3, 0.6]])
    np.testing.assert_array_equal(read_scores(plain), expected)
    np.testing.assert_array_equal(read_scores(headed), expected)


def test_txt_whitespace_and_single_column(tmp_path):
    matrix = _write(tmp_path, "s.txt", "0.1  0.7\t0.2\n0.3 0.6 0.9\n")
    assert read_scores(matrix).shape == (2, 3)
    column = _write(tmp_path, "y.txt", "label\n1\n0\n1\n")
    labels = read_labels(column)
    assert labels.dtype == np.int8
    np.testing.assert_array_equal(labels, [1, 0, 1])


def test_npy(tmp_path):
    np.save(tmp_path / "y.npy", np.array([[True, False], [False, True]]))
    np.save(tmp_path / "s.npy", np.array([[0.9, 0.1], [0.2, 0.8]], dtype=np.float32))
    labels, scores = read_labels_and_scores(tmp_path / "y.npy", tmp_path / "s.npy")
    np.testing.assert_array_equal(labels, [[1, 0], [0, 1]])
    assert scores.dtype == np.float64


def test_pickle_bearing_npy_is_refused_before_loading(tmp_path):
    path = tmp_path / "evil.npy"
    np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(
        InputError,
        match=r"evil.npy: the array holds Python objects \(dtype object\), "
        r"which would need pickle to load; refused",
    ):
        read_scores(path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "s.csv",
            "0.1,0.2\n0.3,nan\n",
            r"s.csv: line 2, column 2: nan is not a finite number; expected a finite score",
        ),
        ("h.csv", "a,b\n0.1,0.2\n0.3,inf\n", r"h.csv: line 3, column 2: inf is not a finite number"),
        ("s.csv", "0.1,0.2\n0.3,0.4\n0.5\n", r"s.csv: line 3: 1 columns; expected 2 like line 1"),
        ("s.csv", "0.1,0.2\n0.3,abc\n", r"s.csv: line 2, column 2: 'abc' is not a number; expected a number"),
        (
            "s.csv",
            "0.1,x\n0.3,0.4\n",
            r"s.csv: line 1, column 2: 'x' is not a number; expected a number \(or a header",
        ),
        ("s.txt", "0.1 0.2\n\n0.3 0.4\n", r"s.txt: line 2: blank line; expected a row of numbers"),
        ("s.txt", "0.1 0.2\n0.3 1_0\n", r"s.txt: line 2, column 2: '1_0' is not a number"),
        ("s.csv", "", r"s.csv: empty; expected rows of numbers"),
        ("s.csv", "a,b\n", r"s.csv: a header and no rows"),
        ("s.json", "[]", r"s.json: unknown extension '.json'; expected .npy, .csv"),
    ],
)
def test_hostile_text(tmp_path, name, text, message):
    with pytest.raises(InputError, match=message):
        read_scores(_write(tmp_path, name, text))


def test_labels_not_zero_or_one(tmp_path):
    with pytest.raises(
        InputError, match=r"y.csv: line 3, column 1: label 2; expected 0 or 1 \(1 such values\)"
    ):
        read_labels(_write(tmp_path, "y.csv", "a,b\n1,0\n2,1\n"))
    np.save(tmp_path / "y.npy", np.array([[0, 1], [1, -1]]))
    with pytest.raises(InputError, match=r"y.npy: element \[1, 1\]: label -1; expected 0 or 1"):
        read_labels(tmp_path / "y.npy")


def test_nan_in_npy_names_the_element(tmp_path):
    np.save(tmp_path / "s.npy", np.array([0.1, np.nan]))
    with pytest.raises(InputError, match=r"s.npy: element \[1\]: nan is not a finite number"):
        read_scores(tmp_path / "s.npy")


def test_npy_refusals(tmp_path):
    np.save(tmp_path / "c.npy", np.zeros((2, 2, 2)))
    with pytest.raises(InputError, match=r"c.npy: shape \(2, 2, 2\); expected \(n_samples,\)"):
        read_scores(tmp_path / "c.npy")
    np.save(tmp_path / "t.npy", np.array(["a", "b"]))
    with pytest.raises(InputError, match=r"t.npy: dtype <U1; expected real numbers"):
        read_scores(tmp_path / "t.npy")
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    with pytest.raises(InputError, match=r"junk.npy: not a valid .npy file"):
        read_scores(tmp_path / "junk.npy")


def test_shapes_differ(tmp_path):
    labels = _write(tmp_path, "y.csv", "1,0\n0,1\n")
    scores = _write(tmp_path, "s.csv", "0.1,0.2,0.3\n0.4,0.5,0.6\n")
    with pytest.raises(
        InputError,
        match=r"y.csv: labels of shape \(2, 2\) .* differ from .*s.csv: scores of "
        r"shape \(2, 3\); expected one label per score",
    ):
        read_labels_and_scores(labels, scores)


def test_size_caps_and_missing(tmp_path):
    path = _write(tmp_path, "s.csv", "0.1,0.2\n0.3,0.4\n")
    with pytest.raises(InputError, match=r"s.csv: 16 bytes; expected at most 10 \(max_bytes\)"):
        read_scores(path, max_bytes=10)
    with pytest.raises(InputError, match=r"about 4 cells; expected at most 3 \(max_cells\)"):
        read_scores(path, max_cells=3)
    with pytest.raises(InputError, match=r"nothere.csv: file not found"):
        read_scores(tmp_path / "nothere.csv")
    with pytest.raises(InputError, match="what: expected 'scores' or 'labels'"):
        read_matrix(path, what="boxes")


def test_special_files_are_refused_before_reading(tmp_path):
    """A FIFO with no writer would block forever: refused up front, no hang."""
    import os

    fifo = tmp_path / "labels.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="labels.csv"):
        read_matrix(str(fifo))


def test_rank_output_over_an_input_is_refused(tmp_path, capsys):
    from deteval.cli import main

    labels = tmp_path / "y.csv"
    scores = tmp_path / "s.csv"
    labels.write_text("0\n1\n")
    scores.write_text("0.2\n0.9\n")
    before = scores.read_bytes()
    assert main(["rank", "--labels", str(labels), "--scores", str(scores), "--output", str(scores)]) == 3
    assert scores.read_bytes() == before
