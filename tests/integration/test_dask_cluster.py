"""evaluate_shards on a real LocalCluster: identical to one process whatever the sharding."""

import json
import random
from pathlib import Path

import numpy as np
import pytest

import deteval
from tests.crosscheck.generate import generate

distributed = pytest.importorskip("distributed")
from deteval.integrations.dask import evaluate_shards  # noqa: E402

# Generated data trigger input warnings and notes through deteval.evaluate; incidental here
# (tests/unit/test_api.py checks the warnings themselves).
pytestmark = [
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
]


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _write(path, records):
    path.write_text(json.dumps(records))


@pytest.mark.parametrize("protocol", ["coco", "voc2007"])
@pytest.mark.parametrize("sharding", ["by_image", "arbitrary", "one_empty"])
def test_shards_equal_the_concatenated_file(tmp_path, client, protocol, sharding):
    gt, dt = generate(21, max_images=40, max_classes=5)
    _write(tmp_path / "gt.json", gt)
    shards = tmp_path / "shards"
    shards.mkdir()
    if sharding == "by_image":  # image-disjoint shards (matched where they are loaded)
        parts = [[d for d in dt if d["image_id"] % 3 == k] for k in range(3)]
    else:  # cut anywhere: images spread over shards (regrouped by image)
        cuts = sorted(random.Random(1).sample(range(1, len(dt)), 3))
        parts = [dt[a:b] for a, b in zip([0, *cuts], [*cuts, len(dt)])]
        if sharding == "one_empty":
            parts.insert(1, [])
    for k, part in enumerate(parts):
        _write(shards / f"preds-{k:02d}.json", part)
    _write(tmp_path / "all.json", [d for part in parts for d in part])
    result = evaluate_shards(tmp_path / "gt.json", str(shards / "preds-*.json"), protocol, scheduler=client)
    reference = deteval.evaluate(tmp_path / "gt.json", tmp_path / "all.json", protocol)
    for f in ("precision", "recall", "scores", "ap"):
        assert np.array_equal(getattr(result, f), getattr(reference, f), equal_nan=True)
    a, b = result.to_dict(), reference.to_dict()
    a.pop("warnings"), b.pop("warnings")  # reported per shard file
    assert a == b
    assert result.inputs["detections"] == len(dt)


def test_no_shards_is_an_input_error(tmp_path, client):
    with pytest.raises(deteval.InputError, match="no prediction shard files"):
        evaluate_shards(
            {"images": [], "annotations": [], "categories": []}, str(tmp_path / "*.json"), scheduler=client
        )


def test_cli_scheduler_dask_equals_one_process(tmp_path, capsys):
    """``deteval evaluate --scheduler dask`` over a folder of shard files prints one process's JSON."""
    import json

    from deteval.cli import main

    root = Path(__file__).resolve().parents[2]
    gt = str(root / "fixtures/coco/gt.json")
    dets = json.loads((root / "fixtures/coco/dt.json").read_text())
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "part-0.json").write_text(json.dumps(dets[:6]))
    (shards / "part-1.json").write_text(json.dumps(dets[6:]))
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(dets))
    assert main(["evaluate", "--gt", gt, "--dt", str(whole), "--format", "json", "-q"]) == 0
    expected = json.loads(capsys.readouterr().out)
    assert (
        main(["evaluate", "--gt", gt, "--dt", str(shards), "--scheduler", "dask", "--format", "json", "-q"])
        == 0
    )
    got = json.loads(capsys.readouterr().out)
    assert [r["metrics"] for r in got["results"]] == [r["metrics"] for r in expected["results"]]
    assert [r["per_class"] for r in got["results"]] == [r["per_class"] for r in expected["results"]]
    assert main(["evaluate", "--gt", gt, "--dt", str(shards), "--scheduler", "spark"]) == 3
