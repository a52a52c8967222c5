"""The ``openimages-challenge`` preset against a twin of the TF Object Detection API's challenge evaluation.

The twin (``tests/reference/slow_oid_challenge.py``) re-types ``oid_challenge_evaluation.py``,
``OpenImagesChallengeEvaluator``, ``per_image_evaluation.py``, ``metrics.py`` and
``oid_hierarchical_labels_expansion.py`` (tensorflow/models; the commits are in its docstring).
Generated datasets vary the hierarchy's depth and shape (a class under two parents), the negative
labels, the group-of boxes and the empty images; deteval reads the same rows from the
challenge's CSV files and must give every class's AP and the mAP exactly.
"""

from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pytest

from deteval.api.openimages import challenge_inputs, load_challenge
from deteval.api.scoring import evaluate
from deteval.protocol import resolve_protocol
from tests.reference import slow_oid_challenge as twin


def make_hierarchy(rng: np.random.Generator, depth: int, fanout: int, shared: bool) -> dict:
    """A random tree of MIDs under the root ``/m/0bl9f``; ``shared``: one leaf under two parents."""
    count = [0]

    def node(level: int) -> dict:
        count[0] += 1
        out: dict = {"LabelName": f"/m/c{count[0]:02d}"}
        if level < depth:
            n = int(rng.integers(1, fanout + 1))
            out["Subcategory"] = [node(level + 1) for _ in range(n)]
        return out

    root = {"LabelName": "/m/0bl9f", "Subcategory": [node(1) for _ in range(fanout)]}
    if shared:
        # Open Images lists some classes under two parents: copy a leaf under another branch.
        first = root["Subcategory"][0]
        while "Subcategory" in first:
            first = first["Subcategory"][0]
        root["Subcategory"][-1].setdefault("Subcategory", []).append({"LabelName": first["LabelName"]})
    return root


def all_labels(tree: dict) -> list[str]:
    out = []
    stack = list(tree.get("Subcategory", []))
    while stack:
        node = stack.pop()
        out.append(node["LabelName"])
        stack.extend(node.get("Subcategory", []))
    return sorted(set(out))


def make_dataset(seed: int, *, depth: int, fanout: int, shared: bool, p_group: float, p_negative: float):
    rng = np.random.default_rng(seed)
    tree = make_hierarchy(rng, depth, fanout, shared)
    labels = all_labels(tree)
    boxes, image_labels, predictions = [], [], []
    n_images = int(rng.integers(4, 12))
    for i in range(n_images):
        image = f"img{i:03d}"
        n_gt = int(rng.integers(0, 6))  # empty images too
        present = set()
        for _ in range(n_gt):
            label = labels[int(rng.integers(len(labels)))]
            x0, y0 = rng.uniform(0, 0.7, 2)
            w, h = rng.uniform(0.05, 0.3, 2)
            row = {
                "ImageID": image,
                "LabelName": label,
                "XMin": round(float(x0), 4),
                "XMax": round(float(x0 + w), 4),
                "YMin": round(float(y0), 4),
                "YMax": round(float(y0 + h), 4),
                "IsGroupOf": int(rng.random() < p_group),
            }
            boxes.append(row)
            present.add(label)
            # detections near the object, some of its class, some of a relative
            for _ in range(int(rng.integers(0, 4))):
                jitter = rng.normal(0, 0.03, 4)
                dx0 = float(np.clip(x0 + jitter[0], 0, 0.95))
                dy0 = float(np.clip(y0 + jitter[1], 0, 0.95))
                dw = float(max(w * (0.4 if row["IsGroupOf"] and rng.random() < 0.5 else 1) + jitter[2], 0.02))
                dh = float(max(h + jitter[3], 0.02))
                det_label = label if rng.random() < 0.8 else labels[int(rng.integers(len(labels)))]
                predictions.append(
                    {
                        "ImageID": image,
                        "LabelName": det_label,
                        "Score": 0.0,
                        "XMin": round(dx0, 4),
                        "YMin": round(dy0, 4),
                        "XMax": round(dx0 + dw, 4),
                        "YMax": round(dy0 + dh, 4),
                    }
                )
        for label in present:
            image_labels.append({"ImageID": image, "LabelName": label, "Confidence": 1})
        for label in labels:
            if label not in present and rng.random() < p_negative:
                image_labels.append({"ImageID": image, "LabelName": label, "Confidence": 0})
            elif label not in present and rng.random() < 0.1:
                image_labels.append({"ImageID": image, "LabelName": label, "Confidence": 1})
        if not any(r["ImageID"] == image for r in image_labels):
            # an image without boxes still has verified labels (every challenge image has): a
            # negative one here, so the image is in the ground truth and empty
            image_labels.append({"ImageID": image, "LabelName": labels[0], "Confidence": 0})
        # false positives anywhere, of any class (verified or not)
        for _ in range(int(rng.integers(0, 5))):
            x0, y0 = rng.uniform(0, 0.8, 2)
            predictions.append(
                {
                    "ImageID": image,
                    "LabelName": labels[int(rng.integers(len(labels)))],
                    "Score": 0.0,
                    "XMin": round(float(x0), 4),
                    "YMin": round(float(y0), 4),
                    "XMax": round(float(x0 + 0.15), 4),
                    "YMax": round(float(y0 + 0.1), 4),
                }
            )
    # distinct scores (the reference's order of ties is numpy quicksort's)
    scores = rng.permutation(len(predictions)) + 1
    for row, s in zip(predictions, scores):
        row["Score"] = round(float(s) / (len(predictions) + 1), 6)
    return tree, labels, boxes, image_labels, predictions


def write_csv(path, rows, columns):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([row.get(c, "") for c in columns])


BOX_HEADER = [
    "ImageID", "Source", "LabelName", "Confidence", "XMin", "XMax", "YMin", "YMax",
    "IsOccluded", "IsTruncated", "IsGroupOf", "IsDepiction", "IsInside",
]  # fmt: skip


def score_with_deteval(tmp_path, tree, boxes, image_labels, predictions, protocol="openimages-challenge"):
    write_csv(tmp_path / "boxes.csv", [{**r, "Source": "xclick", "Confidence": 1} for r in boxes], BOX_HEADER)
    write_csv(tmp_path / "labels.csv", [{**r, "Source": "verification"} for r in image_labels],
              ["ImageID", "Source", "LabelName", "Confidence"])  # fmt: skip
    write_csv(
        tmp_path / "sub.csv", predictions, ["ImageID", "LabelName", "Score", "XMin", "YMin", "XMax", "YMax"]
    )
    (tmp_path / "hierarchy.json").write_text(json.dumps(tree))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # classes without ground truth are noted, as TF logs them
        result = evaluate(
            tmp_path / "boxes.csv",
            tmp_path / "sub.csv",
            protocol,
            image_labels=tmp_path / "labels.csv",
            hierarchy=tmp_path / "hierarchy.json",
        )
    ap = {name: float(result.ap[0, k, 0, -1]) for k, name in enumerate(result.category_names)}
    return ap, result.metrics["mAP"]


EXPERIMENTS = [
    pytest.param(dict(depth=1, fanout=4, shared=False, p_group=0.0, p_negative=0.0), id="flat-no-group-of"),
    pytest.param(
        dict(depth=2, fanout=3, shared=False, p_group=0.3, p_negative=0.3), id="depth2-group-of-negatives"
    ),
    pytest.param(dict(depth=3, fanout=2, shared=True, p_group=0.2, p_negative=0.5), id="depth3-shared-leaf"),
    pytest.param(
        dict(depth=4, fanout=2, shared=True, p_group=0.5, p_negative=0.2), id="depth4-many-group-of"
    ),
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", EXPERIMENTS)
def test_per_class_ap_and_map_equal_the_twin(tmp_path, shape, seed):
    tree, labels, boxes, image_labels, predictions = make_dataset(seed, **shape)
    ref_ap, ref_map = twin.evaluate(boxes, image_labels, predictions, labels, hierarchy=tree)
    ap, m_ap = score_with_deteval(tmp_path, tree, boxes, image_labels, predictions)
    for name in labels:
        ours = ap.get(name, float("nan"))
        if np.isnan(ref_ap[name]):
            assert np.isnan(ours) or ours == -1, (name, ours)
        else:
            assert ours == ref_ap[name], (name, ours, ref_ap[name])
    if np.isnan(ref_map):
        assert m_ap is None or np.isnan(m_ap)
    else:
        # The mean of the same per-class values, summed in another grouping: TF's np.nanmean
        # sums the whole label map with zeros for NaN (numpy's pairwise blocks), deteval the
        # defined values only (pycocotools' np.mean(s[s > -1])). Equal to the last bits.
        assert m_ap == pytest.approx(ref_map, rel=4 * np.finfo(float).eps, abs=0)


def test_values_path_equals_the_files_path(tmp_path):
    """challenge_inputs on loaded values, then evaluate, gives the same numbers as the one call."""
    tree, labels, boxes, image_labels, predictions = make_dataset(
        7, depth=3, fanout=2, shared=True, p_group=0.3, p_negative=0.3
    )
    ap, m_ap = score_with_deteval(tmp_path, tree, boxes, image_labels, predictions)
    protocol = resolve_protocol("openimages-challenge")
    gt, dt = load_challenge(
        tmp_path / "boxes.csv", tmp_path / "sub.csv", image_labels=tmp_path / "labels.csv"
    )
    gt, dt = challenge_inputs(
        gt, dt, protocol, image_labels=tmp_path / "labels.csv", hierarchy=tmp_path / "hierarchy.json"
    )
    assert gt.label_rules == (
        "hierarchy_expansion=ground_truth_and_detections",
        "image_level_labels=verified",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(gt, dt, protocol)
    assert result.metrics["mAP"] == m_ap
    ref_ap, _ = twin.evaluate(boxes, image_labels, predictions, labels, hierarchy=tree)
    assert {
        n: float(result.ap[0, k, 0, -1])
        for k, n in enumerate(result.category_names)
        if n in ref_ap and not np.isnan(ref_ap[n])
    } == {n: v for n, v in ref_ap.items() if not np.isnan(v)}


@pytest.mark.parametrize("seed", range(4))
def test_pre_expanded_submission_with_ground_truth_expansion_only(tmp_path, seed):
    """``hierarchy_expansion: ground_truth``: a submission already expanded is not expanded again."""
    tree, labels, boxes, image_labels, predictions = make_dataset(
        seed, depth=3, fanout=2, shared=True, p_group=0.3, p_negative=0.4
    )
    expanded = twin.expand_boxes(predictions, tree)  # what a participant submits
    ref_ap, ref_map = twin.evaluate(
        boxes, image_labels, expanded, labels, hierarchy=tree, expand_predictions=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_csv(tmp_path / "boxes.csv", [{**r, "Source": "x", "Confidence": 1} for r in boxes], BOX_HEADER)
        write_csv(tmp_path / "labels.csv", image_labels, ["ImageID", "Source", "LabelName", "Confidence"])
        write_csv(
            tmp_path / "sub.csv", expanded, ["ImageID", "LabelName", "Score", "XMin", "YMin", "XMax", "YMax"]
        )
        (tmp_path / "hierarchy.json").write_text(json.dumps(tree))
        protocol = resolve_protocol("openimages-challenge").replace(hierarchy_expansion="ground_truth")
        result = evaluate(
            tmp_path / "boxes.csv",
            tmp_path / "sub.csv",
            protocol,
            image_labels=tmp_path / "labels.csv",
            hierarchy=tmp_path / "hierarchy.json",
        )
    ours = {n: float(result.ap[0, k, 0, -1]) for k, n in enumerate(result.category_names)}
    assert {n: v for n, v in ours.items() if v >= 0} == {n: v for n, v in ref_ap.items() if not np.isnan(v)}
    assert result.metrics["mAP"] == pytest.approx(ref_map, rel=4 * np.finfo(float).eps, abs=0)
