"""``ap_method: step`` and ``score_ties`` (ranked | threshold) in the detection protocols.

Hand-derived cases, a slow twin written plainly (a Python loop over thresholds, per lane and
class) for every ``ap_method`` under both tie rules, the property that without ties the tie rule
changes nothing, the field's validation and sparseness, and every consumer of protocols
(bootstrap and decomposition refuse, TIDE supports, explain attributes, the CLI reads YAML).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deteval
from deteval.accumulate import AP_METHODS, accumulate, recall_grid, step_ap_sum, tie_group_end
from deteval.cli import main
from deteval.errors import ConfigError
from deteval.protocol import FIELDS, get_protocol, load_protocol_text
from tests import ROOT

GT = ROOT / "fixtures" / "coco" / "gt.json"
DT = ROOT / "fixtures" / "coco" / "dt.json"
METHODS = ("101_point", "11_point", "all_point", "trapezoid_101", "step")


def _protocol(ap_method: str, score_ties: str, *, max_dets=None, n_thr: int = 1, n_area: int = 1):
    areas = {"all": [0, 1e10], "small": [0, 1024], "large": [1024, 1e10]}
    return get_protocol("voc2010").replace(
        ap_method=ap_method,
        score_ties=score_ties,
        iou_thresholds=[0.5, 0.75, 0.9][:n_thr],
        area_ranges={k: areas[k] for k in list(areas)[:n_area]},
        max_dets=max_dets,
        summary="configured",
    )


def _one_class(is_tp, scores, n_pos, protocol):
    """accumulate() of one class, one lane; detections already in ranking order."""
    n = len(scores)
    return accumulate(
        np.array([is_tp], dtype=bool),
        np.zeros((1, n), bool),
        np.asarray(scores, dtype=np.float64),
        np.zeros(n, np.int64),
        np.arange(n, dtype=np.int64),
        np.arange(n, dtype=np.int64),
        np.array([[n_pos]]),
        protocol,
    )


# ---------------------------------------------------------------------------------------------
# Hand-derived numbers


def test_a_tied_tp_and_fp_are_one_threshold_under_the_tie_rule():
    # Two GTs; a TP and an FP tied at 0.9. Ranked: the TP alone first (precision 1 at recall
    # 1/2). Threshold: precision read after both, 1/2 at recall 1/2.
    ranked = _one_class([True, False], [0.9, 0.9], 2, _protocol("step", "ranked"))
    tied = _one_class([True, False], [0.9, 0.9], 2, _protocol("step", "threshold"))
    assert ranked.ap[0, 0, 0, 0] == 0.5
    assert tied.ap[0, 0, 0, 0] == 0.25
    # The FP written first: both rules read precision 1/2.
    assert _one_class([False, True], [0.9, 0.9], 2, _protocol("step", "ranked")).ap[0, 0, 0, 0] == 0.25
    # all_point and 101-point follow the same points.
    assert (
        _one_class([True, False], [0.9, 0.9], 2, _protocol("all_point", "threshold")).ap[0, 0, 0, 0] == 0.25
    )
    coco = _one_class([True, False], [0.9, 0.9], 2, _protocol("101_point", "threshold"))
    assert coco.ap[0, 0, 0, 0] == pytest.approx(0.5 * 51 / 101, abs=1e-12)
    assert coco.scores[0, :51, 0, 0, 0].tolist() == [0.9] * 51
    assert coco.recall[0, 0, 0, 0] == 0.5


def test_step_counts_ground_truths_that_were_never_found():
    # TP, FP, TP with 4 GTs: (1/4) * 1 + (1/4) * 2/3.
    acc = _one_class([True, False, True], [0.9, 0.8, 0.7], 4, _protocol("step", "ranked"))
    assert acc.ap[0, 0, 0, 0] == pytest.approx(0.25 + 0.25 * 2 / 3, abs=1e-15)
    assert acc.recall[0, 0, 0, 0] == 0.5
    assert acc.precision.shape[1] == acc.scores.shape[1] == 0  # no recall points, as all_point


def test_step_of_a_class_without_tp_is_zero_and_without_gt_undefined():
    acc = accumulate(
        np.array([[False, False]]),
        np.zeros((1, 2), bool),
        np.array([0.9, 0.5]),
        np.array([0, 1]),
        np.zeros(2, np.int64),
        np.arange(2),
        np.array([[3], [0]]),
        _protocol("step", "threshold"),
    )
    assert acc.ap[0, 0, 0, 0] == 0.0
    assert acc.recall[0, 0, 0, 0] == 0.0
    assert np.isnan(acc.ap[0, 1, 0, 0])
    assert np.isnan(acc.recall[0, 1, 0, 0])


def test_shared_helpers():
    assert tie_group_end(np.array([[True, False, True], [False, False, True]])).tolist() == [
        [0, 2, 2],
        [2, 2, 2],
    ]
    assert step_ap_sum(np.array([0.5, 1.0, 1.0]), np.array([1.0, 0.5, 1.0]), np.array([0, 2])).tolist() == [
        0.75,
        1.0,
    ]
    assert "step" in AP_METHODS
    assert len(recall_grid("step")) == 0


# ---------------------------------------------------------------------------------------------
# The slow twin: a Python loop over thresholds, one lane and class at a time


def _twin_points(is_tp, is_ignored, ties):
    """(tp, fp, position) at each threshold: every row, or each tied group's last row."""
    tp = fp = 0
    points = []
    for i in range(len(is_tp)):
        tp += int(is_tp[i])
        fp += int(not is_tp[i] and not is_ignored[i])
        points.append((tp, fp, i))
    return points


def _twin_ap(is_tp, is_ignored, scores, n_pos, method, ties, rec_thr):
    """(ap, final recall, precision at rec_thr, scores at rec_thr) of one ranked class list."""
    n = len(scores)
    if n_pos == 0:
        return np.nan, np.nan, np.full(len(rec_thr), np.nan), np.full(len(rec_thr), np.nan)
    is_end = [i == n - 1 or scores[i + 1] != scores[i] for i in range(n)]
    if method == "trapezoid_101":
        kept = [i for i in range(n) if not is_ignored[i]]
        if not kept:
            return 0.0, 0.0, np.zeros(0), np.zeros(0)
        tp = fp = 0
        rec, prec = [], []
        for j, i in enumerate(kept):
            tp += int(is_tp[i])
            fp += int(not is_tp[i])
            last_of_group = j == len(kept) - 1 or scores[kept[j + 1]] != scores[i]
            if ties == "ranked" or last_of_group:
                rec.append(tp / (n_pos + 1e-16))
                prec.append(tp / (tp + fp))
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.flip(np.maximum.accumulate(np.flip(np.concatenate(([1.0], prec, [0.0])))))
        x = np.linspace(0, 1, 101)
        return float(np.trapezoid(np.interp(x, mrec, mpre), x)), rec[-1], np.zeros(0), np.zeros(0)
    points = [p for p in _twin_points(is_tp, is_ignored, ties) if ties == "ranked" or is_end[p[2]]]
    final_recall = points[-1][0] / n_pos if points else 0.0
    if method == "step":
        ap, previous = 0.0, 0.0
        for tp, fp, _ in points:
            recall = tp / n_pos
            if recall != previous:
                ap += (recall - previous) * (tp / (tp + fp))
            previous = recall
        return ap, final_recall, np.zeros(0), np.zeros(0)
    if method == "all_point":
        rec = np.array([tp / n_pos for tp, _, _ in points])
        prec = np.array([tp / max(tp + fp, np.finfo(np.float64).eps) for tp, fp, _ in points])
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.maximum.accumulate(np.concatenate(([0.0], prec, [0.0]))[::-1])[::-1]
        ap = 0.0
        for i in range(len(mrec) - 1):
            if mrec[i + 1] != mrec[i]:
                ap += (mrec[i + 1] - mrec[i]) * mpre[i + 1]
        return ap, final_recall, np.zeros(0), np.zeros(0)
    # 101_point (pycocotools) and 11_point (devkit): interpolated precision at each recall point.
    eps = np.spacing(1)
    rc = [tp / n_pos for tp, _, _ in points]
    if method == "101_point":
        pr = [tp / (fp + tp + eps) for tp, fp, _ in points]
    else:
        pr = [tp / max(tp + fp, np.finfo(np.float64).eps) for tp, fp, _ in points]
    precision, score_at = np.zeros(len(rec_thr)), np.zeros(len(rec_thr))
    for r_i, r in enumerate(rec_thr):
        first = next((j for j, value in enumerate(rc) if value >= r), None)
        if first is not None:
            precision[r_i] = max(pr[first:])
            score_at[r_i] = scores[points[first][2]]
    if method == "101_point":
        ap = float(np.mean(precision))
    else:
        ap = 0.0
        for p in precision:
            ap += p / 11.0
    return ap, final_recall, precision, score_at


def _random_case(seed, *, n_class=3, n_thr=2, n_area=2, n_det=40):
    """Heavy ties (scores rounded to one decimal), several lanes, ignored rows, classes without GT."""
    rng = np.random.default_rng(seed)
    n_lane = n_thr * n_area
    det_class = rng.integers(0, n_class, n_det)
    det_score = np.round(rng.random(n_det), 1)
    det_image = rng.integers(0, 4, n_det)
    is_tp = rng.random((n_lane, n_det)) < rng.uniform(0.2, 0.8)
    is_ignored = ~is_tp & (rng.random((n_lane, n_det)) < 0.15)
    n_positive = np.zeros((n_class, n_area), np.int64)
    for k in range(n_class):
        for a in range(n_area):
            lanes = slice(a * n_thr, (a + 1) * n_thr)
            n_found = int(is_tp[lanes][:, det_class == k].sum(axis=1).max(initial=0))
            n_positive[k, a] = n_found + int(rng.integers(0, 4))
    is_tp &= n_positive[det_class].T.repeat(n_thr, axis=0) > 0  # no TP where a class has no GT
    det_order = rng.permutation(n_det)
    det_rank = np.empty(n_det, np.int64)  # rank within (image, class) by score, file order on ties
    for key in set(zip(det_image.tolist(), det_class.tolist())):
        rows = np.flatnonzero((det_image == key[0]) & (det_class == key[1]))
        rows = rows[np.lexsort((det_order[rows], -det_score[rows]))]
        det_rank[rows] = np.arange(len(rows))
    ranking = np.lexsort((det_order, -det_score, det_class))
    return is_tp, is_ignored, det_score, det_class, det_rank, ranking, n_positive


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("ties", ["ranked", "threshold"])
@pytest.mark.parametrize("seed", range(12))
def test_accumulate_equals_its_slow_twin(method, ties, seed):
    is_tp, is_ignored, score, cls, rank, ranking, n_positive = _random_case(seed)
    max_dets = None if seed % 3 else [1, 3]
    protocol = _protocol(method, ties, max_dets=max_dets, n_thr=2, n_area=2)
    acc = accumulate(is_tp, is_ignored, score, cls, rank, ranking, n_positive, protocol)
    rec_thr = recall_grid(method, protocol.eleven_point_grid)
    n_class, n_area = n_positive.shape
    for m, max_det in enumerate(max_dets or [None]):
        for k in range(n_class):
            rows = [int(i) for i in ranking if cls[i] == k and (max_det is None or rank[i] < max_det)]
            for a in range(n_area):
                for t in range(2):
                    lane = a * 2 + t
                    ap, recall, precision, scores = _twin_ap(
                        is_tp[lane, rows],
                        is_ignored[lane, rows],
                        score[rows],
                        n_positive[k, a],
                        method,
                        ties,
                        rec_thr,
                    )
                    where = f"{method}/{ties} seed {seed} class {k} area {a} thr {t} max_dets {max_det}"
                    np.testing.assert_allclose(acc.ap[t, k, a, m], ap, rtol=0, atol=1e-12, err_msg=where)
                    np.testing.assert_allclose(
                        acc.recall[t, k, a, m], recall, rtol=0, atol=1e-15, err_msg=where
                    )
                    if len(rec_thr):
                        np.testing.assert_array_equal(acc.precision[t, :, k, a, m], precision, err_msg=where)
                        np.testing.assert_array_equal(acc.scores[t, :, k, a, m], scores, err_msg=where)


# ---------------------------------------------------------------------------------------------
# Without ties the tie rule has no effect


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    method=st.sampled_from(METHODS),
    n_det=st.integers(0, 30),
    max_dets=st.sampled_from([None, [1, 2], [5]]),
)
def test_without_ties_score_ties_changes_nothing(seed, method, n_det, max_dets):
    is_tp, is_ignored, _, cls, rank, _, n_positive = _random_case(seed % 10_000, n_det=n_det)
    score = np.random.default_rng(seed).permutation(n_det) / max(n_det, 1)  # distinct scores
    ranking = np.lexsort((np.arange(n_det), -score, cls))
    out = [
        accumulate(
            is_tp,
            is_ignored,
            score,
            cls,
            rank,
            ranking,
            n_positive,
            _protocol(method, ties, max_dets=max_dets, n_thr=2, n_area=2),
        )
        for ties in ("ranked", "threshold")
    ]
    for name in ("precision", "recall", "scores", "ap"):
        np.testing.assert_array_equal(getattr(out[0], name), getattr(out[1], name), err_msg=name)


# ---------------------------------------------------------------------------------------------
# The fields


def test_fields_are_sparse_and_keep_every_fingerprint():
    coco = get_protocol("coco")
    assert FIELDS["score_ties"].is_sparse
    assert FIELDS["score_ties"].default == "ranked"
    assert coco.score_ties == "ranked"
    assert "score_ties" not in coco.to_dict()
    assert coco.replace(score_ties="ranked").fingerprint() == coco.fingerprint()
    changed = coco.replace(score_ties="threshold")
    assert changed.fingerprint() != coco.fingerprint()
    assert changed.to_dict()["score_ties"] == "threshold"
    assert coco.replace(ap_method="step").fingerprint() != coco.fingerprint()
    assert FIELDS["score_ties"].stage == "accumulate"
    assert FIELDS["score_ties"].step == "ties/score order"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"score_ties": "average"},
            "score_ties: expected one of 'ranked', 'threshold', found the string 'average'",
        ),
        ({"ap_method": "steps"}, "ap_method: expected one of .*'step', found the string 'steps'"),
    ],
)
def test_bad_values_name_the_field(changes, message):
    with pytest.raises(ConfigError, match=message):
        get_protocol("coco").replace(**changes)


# ---------------------------------------------------------------------------------------------
# Consumers of protocols


def _inputs():
    gt = deteval.load_ground_truth(str(GT))
    return gt, deteval.load_detections(str(DT), gt)


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
@pytest.mark.parametrize(
    ("changes", "field"), [({"score_ties": "threshold"}, "score_ties"), ({"ap_method": "step"}, "ap_method")]
)
def test_bootstrap_and_decomposition_refuse_naming_the_field(changes, field):
    from deteval.decomposition import decompose

    gt, dt = _inputs()
    protocol = get_protocol("voc2010").replace(**changes)
    result = deteval.evaluate(gt, dt, protocol)
    with pytest.raises(ConfigError, match=f"bootstrap: protocol 'voc2010'.*{field}"):
        deteval.bootstrap(gt, result, n=5)
    with pytest.raises(ConfigError, match=f"decompose: protocol 'voc2010'.*{field}"):
        decompose(gt, dt, protocol)


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
def test_tide_scores_under_the_new_fields():
    from deteval.tide import tide_errors

    gt, dt = _tied_inputs()
    protocol = get_protocol("voc2010").replace(ap_method="step", score_ties="threshold")
    errors = tide_errors(gt, dt, protocol, mode="protocol")
    ap = deteval.evaluate(gt, dt, protocol).metrics["mAP"]
    assert errors.to_dict()["ap"] == pytest.approx(ap, abs=1e-12)


def _tied_inputs():
    """fixtures/coco with every score rounded to 0 or 1: tied TPs and FPs."""
    gt = deteval.load_ground_truth(str(GT))
    records = json.loads(DT.read_text())
    for r in records:
        r["score"] = float(round(r["score"]))
    return gt, deteval.load_detections(records, gt)


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
def test_explain_attributes_each_new_field():
    gt, dt = _tied_inputs()
    a = get_protocol("voc2010")
    b = a.replace(name="b", ap_method="step", score_ties="threshold")
    explanation = deteval.explain(gt, dt, a, b)
    steps = {s.name: s for s in explanation.steps}
    assert steps["interpolation"].changes == (("ap_method", "all_point", "step"),)
    assert steps["ties/score order"].changes == (("score_ties", "ranked", "threshold"),)
    total = sum(s.change for s in explanation.steps)
    assert total == pytest.approx(explanation.total, abs=1e-12)
    only_ties = deteval.explain(gt, dt, a, a.replace(name="c", score_ties="threshold"))
    assert [s.name for s in only_ties.steps] == ["ties/score order"]
    assert only_ties.steps[0].change != 0.0  # the fixture's rounded scores tie TPs and FPs


# ---------------------------------------------------------------------------------------------
# Protocol files through the CLI (the YAML of docs/ranking.md)


def _ranking_md_yaml() -> str:
    text = (ROOT / "docs" / "ranking.md").read_text(encoding="utf-8")
    section = text.split("## The same rules in detection protocols", 1)[1]
    return re.search(r"```yaml\n(.*?)```", section, flags=re.S).group(1)


def test_the_docs_yaml_extends_coco_with_the_new_fields():
    protocol = load_protocol_text(_ranking_md_yaml())
    assert protocol.ap_method == "step"
    assert protocol.score_ties == "threshold"
    assert protocol.iou_thresholds == get_protocol("coco").iou_thresholds


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
def test_cli_evaluates_the_docs_yaml(tmp_path, capsys):
    path = tmp_path / "coco-step.yaml"
    path.write_text(_ranking_md_yaml(), encoding="utf-8")
    code = main(
        ["evaluate", "--gt", str(GT), "--dt", str(DT), "--protocol", str(path), "--format", "json", "-q"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)["results"][0]
    assert result["config"]["ap_method"] == "step"
    assert result["config"]["score_ties"] == "threshold"
    expected = deteval.evaluate(str(GT), str(DT), load_protocol_text(_ranking_md_yaml()))
    assert result["metrics"]["AP"] == pytest.approx(expected.metrics["AP"], abs=0)
    code = main(
        ["evaluate", "--gt", str(GT), "--dt", str(DT), "--protocol", "coco", "--set", "score_ties=ties"]
    )
    out, err = capsys.readouterr()
    assert code == 3
    assert "score_ties: expected one of 'ranked', 'threshold'" in err


@pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning")
def test_compare_explain_on_fixtures_shows_the_fields(tmp_path, capsys):
    path = tmp_path / "coco-step.yaml"
    path.write_text(_ranking_md_yaml(), encoding="utf-8")
    code = main(
        [
            "compare",
            "--gt",
            str(GT),
            "--dt",
            str(DT),
            "--protocol",
            "coco",
            "--protocol",
            str(path),
            "--explain",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "interpolation" in out
    assert "ap_method: 101_point -> step" in out
    assert "score_ties: ranked -> threshold" in out
