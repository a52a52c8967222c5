"""What the benchmark scripts share: the suite's workloads and peers, per-image arrays, tidecv data.

``scripts/`` is not a package: each script puts its folder on ``sys.path`` (a script run directly
has it there already) and imports this module. Nothing heavy is imported at the top, so the
suite's worker (``_bench_suite_worker.py``) still times each tool's imports alone.
"""

from __future__ import annotations

from typing import Any

#: The workloads of ``bench.py --suite`` (``bench_suite.py`` says which tools run on which).
SUITE_WORKLOADS = (
    "bbox",
    "segm-poly",
    "segm-rle",
    "keypoints",
    "lvis",
    "analyze",
    "evaluator",
    "report",
    "bootstrap",
    "import",
)
#: Tool name -> the module imported to run it (and to tell whether it is installed).
MODULES = {
    "deteval": "deteval",
    "hotcoco": "hotcoco",
    "ultrafast": "ultrafast_pycocotools",
    "vernier": "vernier",
    "fcoco": "faster_coco_eval",
    "pycocotools": "pycocotools",
    "lvis-api": "lvis",
    "tidecv": "tidecv",
    "torchmetrics": "torchmetrics",
}
#: The peers ``--suite`` can time (deteval always runs).
SUITE_PEERS = tuple(tool for tool in MODULES if tool != "deteval")


def per_image(gt: dict, dt: list) -> tuple[list, list]:
    """COCO dicts -> per-image target and pred dicts of numpy arrays (what a data loader yields)."""
    import numpy as np

    ids = [im["id"] for im in gt["images"]]
    index = {i: k for k, i in enumerate(ids)}
    t_rows: list = [[] for _ in ids]
    p_rows: list = [[] for _ in ids]
    for a in gt["annotations"]:
        t_rows[index[a["image_id"]]].append(a)
    for d in dt:
        p_rows[index[d["image_id"]]].append(d)
    targets = [
        {
            "image_id": i,
            "boxes": np.array([a["bbox"] for a in r], float).reshape(-1, 4),
            "labels": np.array([a["category_id"] for a in r], np.int64),
            "iscrowd": np.array([a["iscrowd"] for a in r], np.int64),
            "area": np.array([a["area"] for a in r], float),
        }
        for i, r in zip(ids, t_rows, strict=True)
    ]
    preds = [
        {
            "image_id": i,
            "boxes": np.array([d["bbox"] for d in r], float).reshape(-1, 4),
            "scores": np.array([d["score"] for d in r], float),
            "labels": np.array([d["category_id"] for d in r], np.int64),
        }
        for i, r in zip(ids, p_rows, strict=True)
    ]
    return targets, preds


def tidecv_data(gt: dict, dt: list) -> tuple[Any, Any]:
    """Tidecv's ground-truth and detection ``Data`` of COCO dicts (crowd regions as ignore regions)."""
    from tidecv.data import Data

    g = Data("gt", max_dets=100)
    for image in sorted(gt["images"], key=lambda i: i["id"]):
        g.add_image(image["id"], str(image["id"]))
    for cat in gt["categories"]:
        g.add_class(cat["id"], cat["name"])
    for ann in gt["annotations"]:
        add = g.add_ignore_region if ann.get("iscrowd", 0) else g.add_ground_truth
        add(ann["image_id"], ann["category_id"], ann["bbox"], None)
    p = Data("dt")
    for det in dt:
        p.add_detection(det["image_id"], det["category_id"], det["score"], det["bbox"], None)
    return g, p
