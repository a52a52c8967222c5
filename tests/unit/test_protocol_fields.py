"""The one field table of Protocol: every field described once, validation from it alone."""

from __future__ import annotations

import dataclasses
import re
import typing

import numpy as np
import pytest

from deteval.errors import ConfigError
from deteval.explain import ACCUMULATION_FIELDS, WALK_ORDER
from deteval.protocol import (
    EXPLAIN_STEPS,
    FIELD_CHOICES,
    FIELDS,
    PRESETS,
    Protocol,
    check_field,
    display_fields,
    field_names,
    get_protocol,
    optional_fields,
    protocol_table_markdown,
)
from deteval.protocol import spec as protocol_spec
from tests import ROOT


def test_the_table_and_the_dataclass_have_the_same_fields_in_the_same_order():
    assert tuple(f.name for f in dataclasses.fields(Protocol)) == tuple(FIELDS) == field_names()


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_field_is_in_the_table(name):
    """Every field is in ``to_dict``, except sparse fields at their default (hashes stay)."""
    protocol = PRESETS[name]
    left_out = {k for k, s in FIELDS.items() if s.is_sparse and getattr(protocol, k) == s.default}
    assert set(protocol.to_dict()) == set(FIELDS) - left_out
    assert not left_out & set(protocol.to_dict())


def test_a_sparse_field_away_from_its_default_is_shown_and_hashed():
    coco = PRESETS["coco"]
    grouped = coco.replace(group_of="openimages")
    assert "group_of" not in coco.to_dict()
    assert grouped.to_dict()["group_of"] == "openimages"
    assert grouped.fingerprint() != coco.fingerprint()
    assert coco.replace(group_of="none").fingerprint() == coco.fingerprint()


@pytest.mark.parametrize(
    "changes",
    [
        {"keypoint_sigmas": [0.5, 0.5]},
        {"max_dets_scope": "image"},
        {"max_dets_per_class": 10000},
        {"federated_labels": "lvis"},
    ],
)
def test_keypoint_and_lvis_fields_are_sparse(changes):
    coco = PRESETS["coco"]
    changed = coco.replace(**changes)
    key = next(iter(changes))
    assert key not in coco.to_dict()
    assert key in changed.to_dict()
    assert changed.fingerprint() != coco.fingerprint()
    assert coco.replace(**{key: FIELDS[key].default}).fingerprint() == coco.fingerprint()


def test_keypoint_sigmas_and_class_budget_are_checked():
    with pytest.raises(ConfigError, match=r"keypoint_sigmas\[1\]: expected a finite number > 0, found 0"):
        PRESETS["coco"].replace(keypoint_sigmas=[0.1, 0])
    with pytest.raises(ConfigError, match=r"max_dets_per_class: expected a positive integer"):
        PRESETS["coco"].replace(max_dets_per_class=0.5)
    assert PRESETS["coco"].replace(keypoint_sigmas=np.array([0.1, 0.2])).keypoint_sigmas == (0.1, 0.2)


@pytest.mark.parametrize("key", list(FIELDS))
def test_every_field_has_a_doc_line_a_stage_and_a_step(key):
    spec = FIELDS[key]
    assert spec.name == key
    assert spec.doc
    assert "\n" not in spec.doc
    assert spec.stage in ("match", "accumulate", "describe")
    assert (spec.step is None) == (spec.stage == "describe")
    assert spec.step is None or spec.step in EXPLAIN_STEPS
    assert (spec.choices is None) != (spec.check is None) or spec.stage == "describe"


@pytest.mark.parametrize("key", list(FIELD_CHOICES))
def test_choices_are_the_literal_type_and_validate(key):
    hints = typing.get_type_hints(Protocol, globalns=vars(protocol_spec))
    assert typing.get_args(hints[key]) == FIELD_CHOICES[key]
    for value in FIELD_CHOICES[key]:
        assert check_field(key, value, where="x") == value
        assert getattr(get_protocol("coco").replace(**{key: value}), key) == value
    with pytest.raises(ConfigError, match=rf"^x: {key}: expected one of "):
        check_field(key, "not-a-choice", where="x")
    with pytest.raises(
        ConfigError, match=rf"^protocol 'coco': {key}: expected one of .*found the string 'nope'"
    ):
        get_protocol("coco").replace(**{key: "nope"})


def test_no_argument_constructor_is_impossible_and_full_construction_works():
    with pytest.raises(TypeError):
        Protocol()  # type: ignore[call-arg]
    fields = {k: v for k, v in dataclasses.asdict(get_protocol("voc2007")).items()}
    assert Protocol(**fields) == get_protocol("voc2007")
    without_optional = {k: v for k, v in fields.items() if k not in optional_fields()}
    assert Protocol(**without_optional) == get_protocol("voc2007")


def test_python_construction_normalizes_like_a_file():
    p = get_protocol("coco").replace(
        iou_thresholds=[0.5, 0.75],
        max_dets=[1, 100],
        area_ranges={"all": [0, 1e10], "tiny": [0, 64]},
        summary="configured",
    )
    assert p.iou_thresholds == (0.5, 0.75)
    assert p.max_dets == (1, 100)
    assert p.area_ranges == (("all", 0.0, 1e10), ("tiny", 0.0, 64.0))
    assert hash(p) == hash(get_protocol("coco").replace(**{f: getattr(p, f) for f in field_names()}))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"iou_thresholds": (0.5, 1.5)},
            "protocol 'coco': iou_thresholds[1]: expected a number in [0, 1], found 1.5",
        ),
        ({"iou_thresholds": ()}, "protocol 'coco': iou_thresholds: expected a non-empty list"),
        ({"max_dets": (0,)}, "protocol 'coco': max_dets[0]: expected a positive integer, found 0"),
        (
            {"area_ranges": (("all", 10.0, 0.0),)},
            "protocol 'coco': area_ranges.all: expected [lo, hi] with lo <= hi",
        ),
        (
            {"area_ranges": (("a", 0.0, 1.0), ("a", 0.0, 2.0))},
            "protocol 'coco': area_ranges: expected distinct range names",
        ),
        ({"name": ""}, "protocol '': name: expected a non-empty string, found the string ''"),
    ],
)
def test_python_construction_messages(changes, message):
    with pytest.raises(ConfigError) as info:
        get_protocol("coco").replace(**changes)
    assert str(info.value).startswith(message)


def test_unknown_field_in_replace():
    with pytest.raises(ConfigError, match=r"protocol 'coco': unknown protocol field\(s\) \['iou_treshold'\]"):
        get_protocol("coco").replace(iou_treshold=(0.5,))


def test_optional_fields_come_from_the_table():
    assert optional_fields() == {
        "eleven_point_grid": "matlab_colon",
        "score_ties": "ranked",
        "mask_iou": "exact",
        "invalid_polygons": "even_odd",
        "group_of": "none",
        "keypoint_sigmas": None,
        "max_dets_scope": "image_class",
        "max_dets_per_class": None,
        "federated_labels": "ignore",
        "gt_ties": "last",
        "curve_end": "slope",
        "class_agnostic": False,
        "keypoint_area": "area",
        "empty_keypoint_detections": "keep",
        "hierarchy_expansion": "none",
        "image_level_labels": "none",
        "boundary_dilation_ratio": 0.02,
        "rotated_box": "polygon4",
        "rotated_iou": "polygon",
    }


def test_display_fields_are_the_fields_that_decide_numbers():
    assert display_fields() == tuple(k for k in field_names() if k not in ("name", "source"))


def test_explain_constants_are_derived_from_the_table():
    assert ACCUMULATION_FIELDS == (
        "name",
        "source",
        "ap_method",
        "eleven_point_grid",
        "score_order",
        "score_ties",
        "summary",
        "curve_end",
    )
    assert [step for step, _ in WALK_ORDER] == list(EXPLAIN_STEPS[:-1])
    named = [f for _, fields in WALK_ORDER for f in fields]
    assert sorted(named + ["summary"]) == sorted(display_fields())
    assert dict(WALK_ORDER)["interpolation"] == ("ap_method", "eleven_point_grid", "curve_end")
    assert dict(WALK_ORDER)["matching rule"] == (
        "matching",
        "gt_ties",
        "class_agnostic",
        "hierarchy_expansion",
        "image_level_labels",
    )


def test_docs_table_is_the_rendered_field_table():
    text = (ROOT / "docs" / "protocols.md").read_text(encoding="utf-8")
    assert protocol_table_markdown() in text
    assert len(re.findall(r"^\| `", protocol_table_markdown(), flags=re.M)) == len(FIELDS)
