"""PASCAL VOC: ``Annotations/*.xml`` ground truth and per-class result files.

A VOC root holds ``Annotations/<id>.xml`` (one file per image) and ``ImageSets/Main/<split>.txt``
(one image id per line). Detections are a folder of per-class files ``<prefix><class>.txt``
(``comp4_det_test_car.txt`` in the devkit, or just ``car.txt``), one detection per line:
``image_id score x1 y1 x2 y2``.

Boxes keep the numbers written in the files (``box_format="xyxy"``): the VOC convention is
1-based, inclusive pixel corners, and the ``pixel_inclusive`` protocols redo the devkit's ``+1``
arithmetic on exactly those numbers. Under a ``continuous`` protocol the same corners are read
as continuous coordinates (width ``x2 - x1``).

XML is read with expat and a parser that refuses any DTD: a ``<!DOCTYPE`` (and with it every
entity declaration, internal or external) is an error before anything in it is expanded or
fetched, so "billion laughs" and external-entity files cannot cost memory or read files.
Image ids and class names are never used as paths as given (see :mod:`deteval.io._text`).

The package's modules, each importing only the ones above it: :mod:`~deteval.io.voc.parsing`
(the DTD-refusing XML parser), :mod:`~deteval.io.voc.classes` (class lists),
:mod:`~deteval.io.voc.annotations` (ground truth) and :mod:`~deteval.io.voc.results`
(detections); every name is re-exported here.
"""

from __future__ import annotations

from deteval.io.voc.annotations import load_voc_gt, voc_year
from deteval.io.voc.classes import VOC_CLASSES, read_class_list
from deteval.io.voc.parsing import parse_xml
from deteval.io.voc.results import detect_prefix, load_voc_dt, with_result_classes

__all__ = [
    "load_voc_gt",
    "load_voc_dt",
    "parse_xml",
    "detect_prefix",
    "VOC_CLASSES",
    "read_class_list",
    "with_result_classes",
    "voc_year",
]
