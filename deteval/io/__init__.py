"""Readers and writers: the only code that touches files.

:func:`load_ground_truth` and :func:`load_detections` pick the format from what they are given:

* a COCO JSON path, or the parsed dict / list;
* a VOC root (a folder with ``Annotations/``) and a folder of per-class result files;
* a YOLO dataset (a folder or ``data.yaml`` with ``names``) and a folder of prediction txt files;
* a DOTA root (a folder with ``labelTxt/``) and a folder of ``Task1_<class>.txt`` results.

A folder of detections is looked into by :func:`locate_predictions`: the files themselves
(``<image stem>.txt`` or ``<prefix><class>.txt``), ``labels/`` (Ultralytics ``save_txt``),
``predictions.json`` (Ultralytics ``save_json``), ``coco_instances_results.json`` (detectron2)
and ``*.bbox.json`` / ``*.segm.json`` (mmdetection). Several candidates are chosen between by
the evidence or refused with the list; a folder with none is an error naming where it looked.
"""

from __future__ import annotations

import os
from typing import Any

from deteval._values import frozen
from deteval.data import Detections, GroundTruth
from deteval.errors import InputError
from deteval.io._text import first_row_width, list_files, names_note
from deteval.io.coco import load_coco_dt, load_coco_gt
from deteval.io.identity import stem

__all__ = [
    "load_ground_truth",
    "load_detections",
    "load_coco_gt",
    "load_coco_dt",
    "gt_format",
    "is_openimages_csv",
    "locate_predictions",
    "PredictionSource",
    "RESULT_JSON_NAMES",
]

#: COCO results files a tool writes into its output folder: Ultralytics ``save_json``, detectron2's
#: ``COCOEvaluator``.
RESULT_JSON_NAMES = ("predictions.json", "coco_instances_results.json")
#: mmdetection's ``format_results`` suffixes (``<prefix>.bbox.json``, ``<prefix>.segm.json``).
RESULT_JSON_SUFFIXES = (".bbox.json", ".segm.json")
_LOOKED_FOR = (
    "<image stem>.txt (YOLO), <prefix><class>.txt (VOC) or Task1_<class>.txt (DOTA) files, labels/ (Ultralytics save_txt), "
    "predictions.json (Ultralytics save_json), coco_instances_results.json (detectron2), "
    "*.bbox.json / *.segm.json (mmdetection)"
)


def is_openimages_csv(path: Any) -> bool:
    """True when ``path`` is a ``.csv`` file (the challenge's formats are the only CSV inputs).

    Here, with the other checks of what an input is, so that a run that reads no CSV never loads
    :mod:`deteval.io.openimages` (which re-exports it).
    """
    return isinstance(path, (str, os.PathLike)) and os.fspath(path).lower().endswith(".csv")


def gt_format(source: Any) -> str:
    """The format of a ground-truth source: "coco", "voc", "yolo" or "dota" (a ``labelTxt/`` root)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            if os.path.isdir(os.path.join(path, "Annotations")):
                return "voc"
            if os.path.isdir(os.path.join(path, "labelTxt")):
                return "dota"
            if any(os.path.exists(os.path.join(path, f)) for f in ("data.yaml", "dataset.yaml")):
                return "yolo"
            raise InputError(
                f"{path}: a folder that is neither a VOC root (no Annotations/) nor a "
                f"YOLO dataset (no data.yaml); expected one of them or a COCO JSON file"
            )
        if path.endswith((".yaml", ".yml")):
            return "yolo"
    return "coco"


def load_ground_truth(source: Any, *, workers: int | str = 1, **options: Any) -> GroundTruth:
    """Load ground truth in whichever supported format ``source`` is.

    ``workers``: threads that parse a COCO instances file's annotations (default 1; ``"auto"``: by
    its size, at most the usable CPUs); the ground truth is the same for every value
    (:func:`deteval.io.coco.load_coco_gt`). Other formats are read on one thread.
    """
    kind = gt_format(source)
    if kind == "voc":
        from deteval.io.voc import load_voc_gt

        return load_voc_gt(source, **options)
    if kind == "yolo":
        from deteval.io.yolo import load_yolo_gt
        from deteval.io.yolo_obb import is_yolo_obb, load_yolo_obb_gt

        if is_yolo_obb(source, options.get("split", "val")):  # 9-column rows: oriented boxes
            return load_yolo_obb_gt(source, **options)
        return load_yolo_gt(source, **options)
    if kind == "dota":
        from deteval.io.dota import load_dota_gt

        return load_dota_gt(source, **options)
    return load_coco_gt(source, workers=workers, **options)


@frozen
class PredictionSource:
    """Where the detections of a ``--dt`` are read, and as what.

    Attributes
    ----------
    kind : {"coco", "yolo", "voc"}
        COCO results JSON, YOLO prediction txt files, VOC per-class result files.
    path : str
        The file or folder read.
    reason : str
        Why it was chosen among several candidates ("" when it was the only one).
    """

    kind: str
    path: str
    reason: str = ""


def _txt_kind(folder: str, txt: list[str], gt: GroundTruth, gt_kind: str) -> str:
    """What the txt files directly in a folder are: "yolo" or "voc" (refused when not told)."""
    if gt_kind == "yolo":
        return "yolo"
    if gt_kind == "voc":
        return "voc"
    if gt_kind == "dota":
        return "dota"
    stems = {stem(str(n)) for n in gt.image_name}
    is_image = [n[:-4] in stems for n in txt]
    is_class = [any(n.endswith(c + ".txt") for c in gt.category_name) for n in txt]
    if all(is_image) and not any(is_class):
        return "yolo"
    if any(is_class) and not any(is_image):
        return "voc"
    raise InputError(
        f"{folder}: txt files that cannot be told apart: "
        + (
            f"{sum(is_image)} named as images of {gt.source} (<image stem>.txt, YOLO predictions) "
            f"and {sum(is_class)} named as its classes (<prefix><class>.txt, VOC results)"
            if any(is_image) or any(is_class)
            else "none named <image stem>.txt after an image of the ground truth (YOLO predictions) "
            "or <prefix><class>.txt after one of its classes (VOC results)"
        )
        + f"; expected one kind in the folder, found {names_note(sorted(txt))}"
    )


def _has_txt(folder: str) -> bool:
    """Whether ``folder`` holds a .txt file (``labels/`` of an Ultralytics run)."""
    try:
        with os.scandir(folder) as entries:
            return any(e.name.endswith(".txt") and e.is_file() for e in entries)
    except OSError:
        return False


def _rows_lack_confidence(folder: str) -> bool:
    """Whether the first row of the first non-empty txt file of ``folder`` has 5 columns.

    Ultralytics ``save_txt=True`` without ``save_conf=True`` writes ``cls cx cy w h``: no score.
    """
    return first_row_width(folder, os.listdir(folder)) == 5


def locate_predictions(source: str | os.PathLike, gt: GroundTruth) -> PredictionSource:
    """Where the detections of ``source`` are: a file as given; in a folder, looked for.

    A folder holds one of: the prediction files themselves (YOLO ``<image stem>.txt``, VOC
    ``<prefix><class>.txt``), ``labels/`` (Ultralytics ``save_txt``), ``predictions.json``
    (Ultralytics ``save_json``), ``coco_instances_results.json`` (detectron2), ``*.bbox.json`` or
    ``*.segm.json`` (mmdetection). An Ultralytics run folder with both ``labels/`` and
    ``predictions.json`` (the same predictions) is read from ``labels/`` against a YOLO dataset
    (the dataset's own class indices; unless its rows have no confidence column) and from
    ``predictions.json`` otherwise. Any other set of several candidates is refused.

    Parameters
    ----------
    source : str or os.PathLike
    gt : GroundTruth

    Returns
    -------
    PredictionSource

    Raises
    ------
    InputError
        A folder with no candidate (naming where it looked and what it found), or with several
        that the evidence does not decide between (listing them).
    """
    path = os.fspath(source)
    if not os.path.isdir(path):
        return PredictionSource("coco", path)
    gt_kind = _gt_kind(gt)
    files = list_files(path, what=f"a folder of predictions ({_LOOKED_FOR})")
    txt = sorted(n for n in files if n.endswith(".txt"))
    candidates = []
    if txt:
        candidates.append(PredictionSource(_txt_kind(path, txt, gt, gt_kind), path))
    labels = os.path.join(path, "labels")
    if os.path.isdir(labels) and _has_txt(labels):
        candidates.append(PredictionSource("yolo", labels))
    json_files = sorted(n for n in files if n in RESULT_JSON_NAMES or n.endswith(RESULT_JSON_SUFFIXES))
    candidates += [PredictionSource("coco", files[n]) for n in json_files]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        found = sorted(os.listdir(path))
        raise InputError(
            f"{path}: no predictions found; looked for {_LOOKED_FOR} in this folder; found "
            + (names_note(found) if found else "an empty folder")
            + "; expected one of them (or pass the file itself as --dt)"
        )
    ultralytics = [c for c in candidates if c.path in (labels, os.path.join(path, "predictions.json"))]
    if len(ultralytics) == 2 == len(candidates):
        lacks_conf = _rows_lack_confidence(labels)
        chosen = ultralytics[0] if gt_kind == "yolo" and not lacks_conf else ultralytics[1]
        if chosen is ultralytics[0]:
            why = "the YOLO dataset's own class indices"
        elif lacks_conf:
            why = "the labels/ rows have no confidence column"
        else:
            why = "its ids name the ground truth's images and categories"
        reason = (
            f"an Ultralytics run folder: labels/ and predictions.json hold the same predictions; "
            f"read {os.path.basename(chosen.path)} ({why})"
        )
        return PredictionSource(chosen.kind, chosen.path, reason)
    listed = ", ".join(f"{c.path} ({c.kind})" for c in candidates)
    raise InputError(
        f"{path}: several sets of predictions: {listed}; expected one (pass the file or folder "
        f"to score as --dt)"
    )


def load_detections(source: Any, gt: GroundTruth, *, workers: int | str = 1, **options: Any) -> Detections:
    """Load detections: COCO results JSON, VOC per-class result files, or YOLO predictions.

    A folder is looked into by :func:`locate_predictions`. ``workers``: threads that parse a COCO
    results file (default 1; ``"auto"``: by its size, at most the usable CPUs); the detections,
    warnings and errors are the same for every value (:func:`deteval.io.coco.load_coco_dt`).
    """
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        located = locate_predictions(source, gt)
        if located.kind == "yolo":
            from deteval.io.yolo import load_yolo_dt

            if gt.rotated is not None and gt_format(gt.source) == "yolo":  # an OBB dataset's predictions
                from deteval.io.yolo_obb import load_yolo_obb_dt

                return load_yolo_obb_dt(located.path, gt, **options)
            return load_yolo_dt(located.path, gt, **options)
        if located.kind == "voc":
            from deteval.io.voc import load_voc_dt

            return load_voc_dt(located.path, gt, **options)
        if located.kind == "dota":
            from deteval.io.dota import load_dota_dt

            return load_dota_dt(located.path, gt, **options)
        return load_coco_dt(located.path, gt, workers=workers, **options)
    return load_coco_dt(source, gt, workers=workers, **options)


def _gt_kind(gt: GroundTruth) -> str:
    try:
        return gt_format(gt.source)
    except InputError:
        return "coco"
