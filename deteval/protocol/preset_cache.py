"""The shipped presets' YAML, parsed ahead: scoring under a preset imports no YAML parser.

Generated from ``deteval/protocol/presets/*.yaml`` by ``scripts/make_preset_cache.py`` (do not
edit; tests/unit/test_lazy_imports.py fails while it is stale). A preset file whose bytes are
exactly those recorded here is read as the mapping recorded beside them; any other text (an
edited preset, a user's file) is parsed by :mod:`deteval.protocol.safe_yaml`. The YAML files stay
the one source: this table can be stale or absent, never a different protocol.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["parsed_preset"]


def parsed_preset(raw: bytes) -> Any:
    """The parsed mapping of a shipped preset whose bytes are exactly ``raw`` (a copy), else None.

    >>> parsed_preset(b"name: not a shipped preset") is None
    True
    """
    data = _PARSED.get(raw)
    return None if data is None else copy.deepcopy(data)


#: The exact bytes of each shipped preset file -> ``parse_yaml`` of its text.
_PARSED: dict[bytes, Any] = {
    # coco-boundary.yaml
    b"# COCO \"Boundary AP\" as bowenc0221/boundary-iou-api's COCOeval(cocoGt, cocoDt, iouType=\"boundary\") computes it.\nextends: coco-pycocotools.yaml\nname: coco-boundary\nsource: \"boundary-iou-api (commit 8006aa9) COCOeval(iouType='boundary', dilation_ratio=0.02): min(mask IoU, Boundary IoU) on pycocotools rasters\"\niou_type: boundary            # computeBoundaryIoU: min(mask IoU, boundary IoU); crowd GT: mask IoA alone\nboundary_dilation_ratio: 0.02 # dilation = max(1, round(0.02 * image diagonal)) pixels\nmask_iou: raster              # pycocotools' annToRLE rasters, as the reference\ngt_ignore_field: honour       # its _prepare keeps an explicit ignore: gt['ignore'] or gt['iscrowd']\n": {
        "extends": "coco-pycocotools.yaml",
        "name": "coco-boundary",
        "source": "boundary-iou-api (commit 8006aa9) COCOeval(iouType='boundary', dilation_ratio=0.02): min(mask IoU, Boundary IoU) on pycocotools rasters",
        "iou_type": "boundary",
        "boundary_dilation_ratio": 0.02,
        "mask_iou": "raster",
        "gt_ignore_field": "honour",
    },
    # coco-exact-masks.yaml
    b'# COCO rules with exact polygon mask IoU (shapely) instead of pycocotools\' raster masks.\nextends: coco.yaml\nname: coco-exact-masks\nsource: "COCO rules (as preset coco) with exact polygon mask IoU (shapely 2); self-intersecting polygons filled even-odd like the rasteriser; RLE masks stay raster"\nmask_iou: exact               # segm: polygons measured exactly; pairs with an RLE mask use the raster\ninvalid_polygons: even_odd    # a self-intersecting polygon covers what it encloses an odd number of times\n': {
        "extends": "coco.yaml",
        "name": "coco-exact-masks",
        "source": "COCO rules (as preset coco) with exact polygon mask IoU (shapely 2); self-intersecting polygons filled even-odd like the rasteriser; RLE masks stay raster",
        "mask_iou": "exact",
        "invalid_polygons": "even_odd",
    },
    # coco-keypoints.yaml
    b'# COCO keypoints as pycocotools\' COCOeval(cocoGt, cocoDt, "keypoints") computes them, bit for bit.\nextends: coco-pycocotools.yaml\nname: coco-keypoints\nsource: "pycocotools COCOeval(iouType=\'keypoints\') bit for bit: OKS with COCO\'s 17 person sigmas, Params.setKpParams"\niou_type: keypoints           # OKS (computeOks); GT with num_keypoints 0 ignored\nkeypoint_sigmas: null         # pycocotools\' kpt_oks_sigmas (17 person keypoints); or one sigma per keypoint\narea_ranges:                  # setKpParams: no "small" (a person under 32\xc2\xb2 has no usable keypoints)\n  all: [0, 1e10]\n  medium: [1024, 9216]\n  large: [9216, 1e10]\nmax_dets: [20]                # setKpParams: 20 per image and class\nsummary: pycocotools          # _summarizeKps: AP, AP50, AP75, APm, APl, AR, AR50, AR75, ARm, ARl at maxDets=20\n': {
        "extends": "coco-pycocotools.yaml",
        "name": "coco-keypoints",
        "source": "pycocotools COCOeval(iouType='keypoints') bit for bit: OKS with COCO's 17 person sigmas, Params.setKpParams",
        "iou_type": "keypoints",
        "keypoint_sigmas": None,
        "area_ranges": {"all": [0, 10000000000.0], "medium": [1024, 9216], "large": [9216, 10000000000.0]},
        "max_dets": [20],
        "summary": "pycocotools",
    },
    # coco-pycocotools.yaml
    b"# pycocotools bit for bit, its two plain bugs included (parity mode).\nextends: coco.yaml\nname: coco-pycocotools\nsource: \"pycocotools COCOeval bit for bit (segm: raster masks), bugs included: `ignore` overwritten by iscrowd, annotation id 0 never matched\"\ngt_ignore_field: iscrowd      # COCOeval sets gt['ignore'] = gt['iscrowd'], dropping an explicit ignore\ngt_id_zero: unmatchable       # COCOeval stores the matched GT id as the flag: id 0 reads as \"unmatched\"\nmask_iou: raster              # segm: pycocotools rasterises polygons at image size (as coco)\n": {
        "extends": "coco.yaml",
        "name": "coco-pycocotools",
        "source": "pycocotools COCOeval bit for bit (segm: raster masks), bugs included: `ignore` overwritten by iscrowd, annotation id 0 never matched",
        "gt_ignore_field": "iscrowd",
        "gt_id_zero": "unmatchable",
        "mask_iou": "raster",
    },
    # coco-rotated.yaml
    b"# COCO-style AP over exact rotated-box IoU, as hotcoco 1.3's COCOeval(gt, dt, \"obb\") computes it.\nextends: coco-pycocotools.yaml\nname: coco-rotated\nsource: \"hotcoco 1.3.0 COCOeval(iouType='obb'): pycocotools' COCOeval over exact oriented-box IoU (GT `area` for the size ranges)\"\niou_type: rotated\nrotated_box: polygon4         # hotcoco's obb [cx, cy, w, h, angle] as its 4 corners (a rectangle)\nrotated_iou: polygon          # exact polygon IoU; crowd ground truth: intersection over the detection's area\n": {
        "extends": "coco-pycocotools.yaml",
        "name": "coco-rotated",
        "source": "hotcoco 1.3.0 COCOeval(iouType='obb'): pycocotools' COCOeval over exact oriented-box IoU (GT `area` for the size ranges)",
        "iou_type": "rotated",
        "rotated_box": "polygon4",
        "rotated_iou": "polygon",
    },
    # coco.yaml
    b"# COCO box evaluation as pycocotools' COCOeval computes it, with its two plain bugs fixed.\n# A complete protocol: every field that decides numbers is written out (no `extends:`).\nname: coco\nsource: \"pycocotools COCOeval (bbox; segm with its raster masks), its two plain bugs fixed (ignore field, annotation id 0)\"\niou_type: bbox\n# np.linspace(0.5, 0.95, 10), bit for bit as pycocotools builds it: the ninth threshold is\n# 0.8999999999999999. Writing the list [0.5, 0.55, ..., 0.9, 0.95] by hand gives 0.9 instead.\niou_thresholds: {start: 0.5, stop: 0.95, num: 10}\niou_comparison: \">=\"          # pycocotools: IoU >= min(t, 1 - 1e-10)\nmatching: coco                # best still-unmatched GT at or above the threshold; crowd reusable\nbox_convention: continuous    # x, y, w, h in float64; area w * h\nap_method: 101_point          # mean precision at the 101 recall points np.linspace(0, 1, 101)\narea_ranges:                  # on the GT's own `area` field, bounds inclusive (32\xc2\xb2, 96\xc2\xb2, 1e5\xc2\xb2)\n  all: [0, 1e10]\n  small: [0, 1024]\n  medium: [1024, 9216]\n  large: [9216, 1e10]\nmax_dets: [1, 10, 100]        # per image *and* class\ndifficult: count              # pycocotools has no `difficult`: such objects count like any other\ncrowd: ignore_reusable        # crowd regions absorb any number of detections, never count\nscore_order: image_major      # ties: image-id order, then rank in image (pycocotools' mergesort)\ngt_ignore_field: honour       # an explicit `ignore: 1` is kept (pycocotools overwrites it)\ngt_id_zero: matchable         # annotation id 0 matches like any other (pycocotools never matches it)\nsummary: pycocotools          # headline AP at maxDets=100 exactly as COCOeval.summarize prints it\nmask_iou: raster              # segm: COCO's official mask IoU, pycocotools' raster at image size\n                              # (exact polygon geometry: preset coco-exact-masks, or --mask-iou exact)\n": {
        "name": "coco",
        "source": "pycocotools COCOeval (bbox; segm with its raster masks), its two plain bugs fixed (ignore field, annotation id 0)",
        "iou_type": "bbox",
        "iou_thresholds": {"start": 0.5, "stop": 0.95, "num": 10},
        "iou_comparison": ">=",
        "matching": "coco",
        "box_convention": "continuous",
        "ap_method": "101_point",
        "area_ranges": {
            "all": [0, 10000000000.0],
            "small": [0, 1024],
            "medium": [1024, 9216],
            "large": [9216, 10000000000.0],
        },
        "max_dets": [1, 10, 100],
        "difficult": "count",
        "crowd": "ignore_reusable",
        "score_order": "image_major",
        "gt_ignore_field": "honour",
        "gt_id_zero": "matchable",
        "summary": "pycocotools",
        "mask_iou": "raster",
    },
    # coco50.yaml
    b'# COCO rules at the single IoU 0.5: what pycocotools reports as AP50 (stats[1]).\nextends: coco.yaml\nname: coco50\nsource: "COCO rules (101-point, crowd, maxDets 100) at the single IoU 0.5: pycocotools\' AP50"\niou_thresholds: [0.5]\narea_ranges:\n  all: [0, 1e10]\nmax_dets: [100]\nsummary: configured           # headline from the configured values (one threshold: mAP)\n': {
        "extends": "coco.yaml",
        "name": "coco50",
        "source": "COCO rules (101-point, crowd, maxDets 100) at the single IoU 0.5: pycocotools' AP50",
        "iou_thresholds": [0.5],
        "area_ranges": {"all": [0, 10000000000.0]},
        "max_dets": [100],
        "summary": "configured",
    },
    # crowdpose.yaml
    b"# CrowdPose keypoints as xtcocotools' COCOeval(cocoGt, cocoDt, \"keypoints_crowd\", sigmas, use_area=False) computes them.\nextends: coco-keypoints.yaml\nname: crowdpose\nsource: \"xtcocotools 1.14 COCOeval(iouType='keypoints_crowd', sigmas=CrowdPose's 14, use_area=False): AP, AR, AP(E/M/H) by crowdIndex\"\nkeypoint_sigmas: [0.079, 0.079, 0.072, 0.072, 0.062, 0.062, 0.10700000000000001, 0.10700000000000001, 0.087, 0.087, 0.089, 0.089, 0.079, 0.079]  # mmpose crowdpose.py: array([.79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87, .89, .89, .79, .79]) / 10.0, as computed\nkeypoint_area: box            # use_area=False: OKS scale and size ranges from 0.53 * w * h of the GT box\nempty_keypoint_detections: drop  # xtcocotools' _prepare drops results with no keypoint score > 0\narea_ranges:                  # no size buckets: every object\n  all: [0, 1e10]\ngt_id_zero: matchable         # xtcocotools matches by dtm >= 0 (annotation id 0 is matchable)\nsummary: crowdpose            # _summarizeKps_crowd: AP, AP50, AP75, AR, AR50, AR75, AP(E), AP(M), AP(H)\n": {
        "extends": "coco-keypoints.yaml",
        "name": "crowdpose",
        "source": "xtcocotools 1.14 COCOeval(iouType='keypoints_crowd', sigmas=CrowdPose's 14, use_area=False): AP, AR, AP(E/M/H) by crowdIndex",
        "keypoint_sigmas": [
            0.079,
            0.079,
            0.072,
            0.072,
            0.062,
            0.062,
            0.10700000000000001,
            0.10700000000000001,
            0.087,
            0.087,
            0.089,
            0.089,
            0.079,
            0.079,
        ],
        "keypoint_area": "box",
        "empty_keypoint_detections": "drop",
        "area_ranges": {"all": [0, 10000000000.0]},
        "gt_id_zero": "matchable",
        "summary": "crowdpose",
    },
    # detectron2-voc.yaml
    b'# detectron2\'s PascalVOCDetectionEvaluator on VOC2007 test: voc_eval.py at IoU 0.50:0.05:0.95.\nextends: voc2007-pyfrcnn.yaml\nname: detectron2-voc\nsource: "detectron2 PascalVOCDetectionEvaluator (voc_2007_test: use_07_metric, IoU > t for t in range(50, 100, 5) / 100, +1 pixels): AP, AP50, AP75 as fractions"\niou_thresholds: [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]   # thresh / 100.0, not linspace\n': {
        "extends": "voc2007-pyfrcnn.yaml",
        "name": "detectron2-voc",
        "source": "detectron2 PascalVOCDetectionEvaluator (voc_2007_test: use_07_metric, IoU > t for t in range(50, 100, 5) / 100, +1 pixels): AP, AP50, AP75 as fractions",
        "iou_thresholds": [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95],
    },
    # dota.yaml
    b"# DOTA Task 1 (oriented boxes) as the DOTA devkit's dota_evaluation_task1.py voc_eval computes it.\nextends: voc2007-pyfrcnn.yaml\nname: dota\nsource: \"DOTA devkit dota_evaluation_task1.py (CAPTAIN-WHU/DOTA_devkit; dotadevkit 1.3.0 checked): polygon IoU > 0.5, use_07_metric=True, difficult ignored; its quicksort tie order is not reproducible, stable file order is used\"\niou_type: rotated\nrotated_box: polygon4         # the label's 4 corners as written (polyiou.iou_poly of the 8 numbers)\nrotated_iou: polygon          # exact polygon IoU (polyiou: triangle-fan clipping, exact but for its 1e-8 eps)\nbox_convention: continuous    # the +1 is only in its envelope pre-filter, which never changes a polygon IoU\n": {
        "extends": "voc2007-pyfrcnn.yaml",
        "name": "dota",
        "source": "DOTA devkit dota_evaluation_task1.py (CAPTAIN-WHU/DOTA_devkit; dotadevkit 1.3.0 checked): polygon IoU > 0.5, use_07_metric=True, difficult ignored; its quicksort tie order is not reproducible, stable file order is used",
        "iou_type": "rotated",
        "rotated_box": "polygon4",
        "rotated_iou": "polygon",
        "box_convention": "continuous",
    },
    # lvis-fixed-ap.yaml
    b'# LVIS Fixed AP (Dave et al. 2021, "Evaluating Large-Vocabulary Detectors: The Devil is in the Details"):\n# no per-image cap; each class keeps its 10,000 top-scoring detections over the whole dataset\n# (scripts/evaluate_ap_fixed.py of achalddave/large-vocab-devil: a stable sort by score per class, then\n# LVISResults(max_dets=-1) and params.max_dets = -1), scored with LVIS\' federated rules.\nextends: lvis.yaml\nname: lvis-fixed-ap\nsource: "Fixed AP (Dave et al. 2021): top 10,000 detections per class over the dataset, no per-image cap, lvis-api rules"\nmax_dets: null                # no cap per image\nmax_dets_scope: image_class\nmax_dets_per_class: 10000     # the per-class budget, applied to the results before anything else\nsummary: lvis\n': {
        "extends": "lvis.yaml",
        "name": "lvis-fixed-ap",
        "source": "Fixed AP (Dave et al. 2021): top 10,000 detections per class over the dataset, no per-image cap, lvis-api rules",
        "max_dets": None,
        "max_dets_scope": "image_class",
        "max_dets_per_class": 10000,
        "summary": "lvis",
    },
    # lvis.yaml
    b"# LVIS (federated) as lvis-api's LVISEval computes it (lvis/eval.py, lvis/results.py).\n# A complete protocol: every field that decides numbers is written out (no `extends:`).\nname: lvis\nsource: \"lvis-api LVISEval (bbox; segm with raster masks): federated labels, 300 detections per image, APr/APc/APf\"\niou_type: bbox\niou_thresholds: {start: 0.5, stop: 0.95, num: 10}   # np.linspace as Params builds it\niou_comparison: \">=\"          # IoU >= min(t, 1 - 1e-10), as pycocotools\nmatching: coco                # evaluate_img: pycocotools' greedy loop (without crowd reuse)\nbox_convention: continuous\nap_method: 101_point          # accumulate: pycocotools' tp / (tp + fp + eps), envelope, 101 recall points\narea_ranges:                  # on the GT `area` field, bounds inclusive\n  all: [0, 1e10]\n  small: [0, 1024]\n  medium: [1024, 9216]\n  large: [9216, 1e10]\nmax_dets: [300]               # LVISResults(max_dets=300) ...\nmax_dets_scope: image         # ... per image across classes, before anything else (ties in file order)\ndifficult: count\ncrowd: none                   # lvis-api reads no iscrowd: every GT is a normal object\nscore_order: image_major      # per-image lists concatenated in image-id order, then a stable sort\ngt_ignore_field: honour       # an explicit `ignore: 1` is kept (lvis-api keeps it)\ngt_id_zero: unmatchable       # lvis-api stores the matched GT id as the flag, as pycocotools: id 0 never matches\nfederated_labels: lvis        # neg_category_ids / not_exhaustive_category_ids of each image\nsummary: lvis                 # get_results(): AP, AP50, AP75, APs, APm, APl, APr, APc, APf, AR@300, ARs@300, ...\nmask_iou: raster              # segm: pycocotools' raster masks, as lvis-api\n": {
        "name": "lvis",
        "source": "lvis-api LVISEval (bbox; segm with raster masks): federated labels, 300 detections per image, APr/APc/APf",
        "iou_type": "bbox",
        "iou_thresholds": {"start": 0.5, "stop": 0.95, "num": 10},
        "iou_comparison": ">=",
        "matching": "coco",
        "box_convention": "continuous",
        "ap_method": "101_point",
        "area_ranges": {
            "all": [0, 10000000000.0],
            "small": [0, 1024],
            "medium": [1024, 9216],
            "large": [9216, 10000000000.0],
        },
        "max_dets": [300],
        "max_dets_scope": "image",
        "difficult": "count",
        "crowd": "none",
        "score_order": "image_major",
        "gt_ignore_field": "honour",
        "gt_id_zero": "unmatchable",
        "federated_labels": "lvis",
        "summary": "lvis",
        "mask_iou": "raster",
    },
    # openimages-challenge.yaml
    b'# Open Images detection challenge (2018-2019) as the TF object detection API scores it\n# (metrics/oid_challenge_evaluation.py): the openimages preset\'s group-of rule and all-point AP at\n# IoU 0.5, plus the class hierarchy (ground truth, image-level labels and detections expanded to\n# ancestors) and the verified image-level labels (detections of unverified classes dropped).\nextends: openimages.yaml\nname: openimages-challenge\nsource: "Open Images challenge (TF object detection API oid_challenge_evaluation.py, OpenImagesDetectionChallengeEvaluator, oid_hierarchical_labels_expansion.py): IoU >= 0.5, all-point AP, group-of boxes by IoA, hierarchy expansion, verified image-level labels"\nhierarchy_expansion: ground_truth_and_detections\nimage_level_labels: verified\n': {
        "extends": "openimages.yaml",
        "name": "openimages-challenge",
        "source": "Open Images challenge (TF object detection API oid_challenge_evaluation.py, OpenImagesDetectionChallengeEvaluator, oid_hierarchical_labels_expansion.py): IoU >= 0.5, all-point AP, group-of boxes by IoA, hierarchy expansion, verified image-level labels",
        "hierarchy_expansion": "ground_truth_and_detections",
        "image_level_labels": "verified",
    },
    # openimages.yaml
    b'# Open Images V4-V6 detection challenge: VOC2010+ all-point AP at IoU 0.5 on continuous boxes,\n# with the group-of rule. Image-level labels and the class hierarchy are not applied (see docs).\nextends: voc2010.yaml\nname: openimages\nsource: "Open Images challenge (TF object detection API per_image_evaluation.py, group_of_weight 1): IoU >= 0.5, all-point AP, group-of boxes by IoA; image-level labels and hierarchy not applied"\nbox_convention: continuous    # normalized / continuous coordinates, no +1\ngroup_of: openimages          # non-group-of matching first, then leftovers against group-of boxes by IoA\n': {
        "extends": "voc2010.yaml",
        "name": "openimages",
        "source": "Open Images challenge (TF object detection API per_image_evaluation.py, group_of_weight 1): IoU >= 0.5, all-point AP, group-of boxes by IoA; image-level labels and hierarchy not applied",
        "box_convention": "continuous",
        "group_of": "openimages",
    },
    # ultralytics-8.3.yaml
    b'# Ultralytics\' validation mAP (yolo val) of 8.3.x and 8.4.0 to 8.4.36: mAP50 and mAP50-95 as those releases\n# compute them (read in 8.3.253, the last 8.3, and 8.4.0). 8.4.37 changed how the curve ends (curve_end),\n# 8.4.176 the matching: preset `ultralytics` is 8.4.176 and later (docs/protocols.md).\n# A complete protocol: every field that decides numbers is written out (no `extends:`).\nname: ultralytics-8.3\nsource: "Ultralytics 8.3.x to 8.4.36 validation (engine/validator.py match_predictions, utils/metrics.py ap_per_class + compute_ap): mAP50, mAP50-95"\niou_type: bbox\n# torch.linspace(0.5, 0.95, 10) is float32: these are its values as Python floats (.tolist()).\niou_thresholds: [0.5, 0.550000011920929, 0.6000000238418579, 0.6499999761581421, 0.699999988079071,\n                 0.75, 0.800000011920929, 0.8500000238418579, 0.8999999761581421, 0.949999988079071]\niou_comparison: ">="          # np.nonzero(iou >= threshold)\nmatching: ultralytics         # each prediction\'s best GT by IoU, then each GT\'s first (best-scored) prediction\nbox_convention: continuous    # xyxy pixels, no +1\nap_method: trapezoid_101      # np.trapz(np.interp(linspace(0, 1, 101), [0, rec, 1], envelope of [1, prec, 0]))\narea_ranges:\n  all: [0, 1e10]\nmax_dets: null                # the predictions are already NMS output (max_det=300 per image, across classes)\ndifficult: count              # YOLO labels have no difficult flag\ncrowd: none                   # nor crowd regions\nscore_order: file             # np.argsort(-conf) over the predictions in image order (ties: see docs)\ngt_ignore_field: honour\ngt_id_zero: matchable\nsummary: ultralytics          # mAP50 = all_ap[:, 0].mean(), mAP50-95 = all_ap.mean()\n': {
        "name": "ultralytics-8.3",
        "source": "Ultralytics 8.3.x to 8.4.36 validation (engine/validator.py match_predictions, utils/metrics.py ap_per_class + compute_ap): mAP50, mAP50-95",
        "iou_type": "bbox",
        "iou_thresholds": [
            0.5,
            0.550000011920929,
            0.6000000238418579,
            0.6499999761581421,
            0.699999988079071,
            0.75,
            0.800000011920929,
            0.8500000238418579,
            0.8999999761581421,
            0.949999988079071,
        ],
        "iou_comparison": ">=",
        "matching": "ultralytics",
        "box_convention": "continuous",
        "ap_method": "trapezoid_101",
        "area_ranges": {"all": [0, 10000000000.0]},
        "max_dets": None,
        "difficult": "count",
        "crowd": "none",
        "score_order": "file",
        "gt_ignore_field": "honour",
        "gt_id_zero": "matchable",
        "summary": "ultralytics",
    },
    # ultralytics-obb.yaml
    b"# Ultralytics' OBB validation mAP (yolo obb val), release 8.4.176 and later (8.4.190 checked):\n# models/yolo/obb/val.py scores batch_probiou(labels, predictions) with the detection matching\n# and ap_per_class of the preset `ultralytics`.\nextends: ultralytics.yaml\nname: ultralytics-obb\nsource: \"Ultralytics >= 8.4.176 (8.4.190 checked) OBB validation (models/yolo/obb/val.py: batch_probiou, match_predictions, ap_per_class): mAP50, mAP50-95\"\niou_type: rotated\nrotated_box: xywhr            # labels: xyxyxyxy2xywhr (cv2.minAreaRect); predictions are xywhr\nrotated_iou: probiou          # utils/metrics.py batch_probiou: 1 - Hellinger distance of the boxes' Gaussians\n": {
        "extends": "ultralytics.yaml",
        "name": "ultralytics-obb",
        "source": "Ultralytics >= 8.4.176 (8.4.190 checked) OBB validation (models/yolo/obb/val.py: batch_probiou, match_predictions, ap_per_class): mAP50, mAP50-95",
        "iou_type": "rotated",
        "rotated_box": "xywhr",
        "rotated_iou": "probiou",
    },
    # ultralytics.yaml
    b'# Ultralytics\' validation mAP (yolo val), release 8.4.176 and later: mAP50 and mAP50-95 as\n# ultralytics/engine/validator.py and ultralytics/utils/metrics.py compute them (checked against the\n# installed 8.4.190). 8.3.x to 8.4.36: preset ultralytics-8.3; 8.4.37 to 8.4.175 (this curve_end,\n# the old matching): `extends: ultralytics-8.3` with `curve_end: drop` (docs/protocols.md).\n# A complete protocol: every field that decides numbers is written out (no `extends:`).\nname: ultralytics\nsource: "Ultralytics >= 8.4.176 (8.4.190 checked) validation (engine/validator.py match_predictions, utils/metrics.py ap_per_class + compute_ap): mAP50, mAP50-95"\niou_type: bbox\n# torch.linspace(0.5, 0.95, 10) is float32: these are its values as Python floats (.tolist()).\niou_thresholds: [0.5, 0.550000011920929, 0.6000000238418579, 0.6499999761581421, 0.699999988079071,\n                 0.75, 0.800000011920929, 0.8500000238418579, 0.8999999761581421, 0.949999988079071]\niou_comparison: ">="          # available[k] >= thresholds\nmatching: coco                # each prediction in NMS order takes its best still-unclaimed label\ngt_ties: first                # k = available.argmax(0): the first label on equal IoU\nbox_convention: continuous    # xyxy pixels, no +1\nap_method: trapezoid_101      # np.trapz(np.interp(linspace(0, 1, 101), mrec, envelope of mpre))\ncurve_end: drop               # mrec = [0, rec, rec[-1], 1], mpre = [1, prec, 0, 0]: 0 past the last recall\narea_ranges:\n  all: [0, 1e10]\nmax_dets: null                # the predictions are already NMS output (max_det=300 per image, across classes)\ndifficult: count              # YOLO labels have no difficult flag\ncrowd: none                   # nor crowd regions\nscore_order: file             # np.argsort(-conf) over the predictions in image order (ties: see docs)\ngt_ignore_field: honour\ngt_id_zero: matchable\nsummary: ultralytics          # mAP50 = all_ap[:, 0].mean(), mAP50-95 = all_ap.mean()\n': {
        "name": "ultralytics",
        "source": "Ultralytics >= 8.4.176 (8.4.190 checked) validation (engine/validator.py match_predictions, utils/metrics.py ap_per_class + compute_ap): mAP50, mAP50-95",
        "iou_type": "bbox",
        "iou_thresholds": [
            0.5,
            0.550000011920929,
            0.6000000238418579,
            0.6499999761581421,
            0.699999988079071,
            0.75,
            0.800000011920929,
            0.8500000238418579,
            0.8999999761581421,
            0.949999988079071,
        ],
        "iou_comparison": ">=",
        "matching": "coco",
        "gt_ties": "first",
        "box_convention": "continuous",
        "ap_method": "trapezoid_101",
        "curve_end": "drop",
        "area_ranges": {"all": [0, 10000000000.0]},
        "max_dets": None,
        "difficult": "count",
        "crowd": "none",
        "score_order": "file",
        "gt_ignore_field": "honour",
        "gt_id_zero": "matchable",
        "summary": "ultralytics",
    },
    # voc2007-continuous.yaml
    b'# VOC2007\'s 11-point AP computed on continuous boxes (no +1 pixel), as many modern tools do.\nextends: voc2007.yaml\nname: voc2007-continuous\nsource: "VOC2007 11-point with COCO-style continuous boxes (no +1), as many modern tools compute it"\nbox_convention: continuous\n': {
        "extends": "voc2007.yaml",
        "name": "voc2007-continuous",
        "source": "VOC2007 11-point with COCO-style continuous boxes (no +1), as many modern tools compute it",
        "box_convention": "continuous",
    },
    # voc2007-pyfrcnn.yaml
    b'# The Python port of the VOC2007 evaluation in py-faster-rcnn and detectron2 (voc_eval.py,\n# use_07_metric=True). It differs from the devkit in two places.\nextends: voc2007.yaml\nname: voc2007-pyfrcnn\nsource: "py-faster-rcnn / detectron2 voc_eval.py, use_07_metric=True (IoU > 0.5, np.arange grid); their quicksort tie order is not reproducible, stable file order is used"\niou_comparison: ">"                 # `if ovmax > ovthresh`\neleven_point_grid: numpy_arange     # np.arange(0., 1.1, 0.1): 0.30000000000000004, ...\n': {
        "extends": "voc2007.yaml",
        "name": "voc2007-pyfrcnn",
        "source": "py-faster-rcnn / detectron2 voc_eval.py, use_07_metric=True (IoU > 0.5, np.arange grid); their quicksort tie order is not reproducible, stable file order is used",
        "iou_comparison": ">",
        "eleven_point_grid": "numpy_arange",
    },
    # voc2007.yaml
    b'# PASCAL VOC2007: the MATLAB devkit\'s VOCevalDet.m with the 11-point interpolated AP.\n# A complete protocol: every field that decides numbers is written out (no `extends:`).\nname: voc2007\nsource: "PASCAL VOC2007 devkit VOCevalDet.m (11-point, IoU >= 0.5, +1 pixels)"\niou_type: bbox\niou_thresholds: [0.5]\niou_comparison: ">="          # the devkit: ov >= minoverlap\nmatching: voc                 # argmax IoU over all GTs; if that GT is taken, a false positive\nbox_convention: pixel_inclusive   # 1-based inclusive pixels: widths are x2 - x1 + 1\nap_method: 11_point           # mean of the interpolated precision at recall 0, 0.1, ..., 1\neleven_point_grid: matlab_colon   # the devkit\'s 0:0.1:1 as MATLAB builds it: 0.30000000000000004, but 0.6 and 0.7 exact\narea_ranges:\n  all: [0, 1e10]\nmax_dets: null                # no cap\ndifficult: ignore             # difficult objects are neither positives nor false positives\ncrowd: none                   # VOC has no crowd regions\nscore_order: file             # ties: stable sort of the class\'s result file\ngt_ignore_field: honour\ngt_id_zero: matchable\nsummary: configured\n': {
        "name": "voc2007",
        "source": "PASCAL VOC2007 devkit VOCevalDet.m (11-point, IoU >= 0.5, +1 pixels)",
        "iou_type": "bbox",
        "iou_thresholds": [0.5],
        "iou_comparison": ">=",
        "matching": "voc",
        "box_convention": "pixel_inclusive",
        "ap_method": "11_point",
        "eleven_point_grid": "matlab_colon",
        "area_ranges": {"all": [0, 10000000000.0]},
        "max_dets": None,
        "difficult": "ignore",
        "crowd": "none",
        "score_order": "file",
        "gt_ignore_field": "honour",
        "gt_id_zero": "matchable",
        "summary": "configured",
    },
    # voc2010-continuous.yaml
    b'# VOC2010+\'s all-point AP computed on continuous boxes (no +1 pixel), as many modern tools do.\nextends: voc2010.yaml\nname: voc2010-continuous\nsource: "VOC2010+ all-point with COCO-style continuous boxes (no +1), as many modern tools compute it"\nbox_convention: continuous\n': {
        "extends": "voc2010.yaml",
        "name": "voc2010-continuous",
        "source": "VOC2010+ all-point with COCO-style continuous boxes (no +1), as many modern tools compute it",
        "box_convention": "continuous",
    },
    # voc2010-pyfrcnn.yaml
    b'# The Python port of the VOC2010+ evaluation in py-faster-rcnn and detectron2 (voc_eval.py,\n# use_07_metric=False).\nextends: voc2010.yaml\nname: voc2010-pyfrcnn\nsource: "py-faster-rcnn / detectron2 voc_eval.py, use_07_metric=False (IoU > 0.5); their quicksort tie order is not reproducible, stable file order is used"\niou_comparison: ">"                 # `if ovmax > ovthresh`\n': {
        "extends": "voc2010.yaml",
        "name": "voc2010-pyfrcnn",
        "source": "py-faster-rcnn / detectron2 voc_eval.py, use_07_metric=False (IoU > 0.5); their quicksort tie order is not reproducible, stable file order is used",
        "iou_comparison": ">",
    },
    # voc2010.yaml
    b'# PASCAL VOC2010-2012: VOC2007\'s matching with the all-point AP (area under the precision\n# envelope at every recall change, VOCap.m). A complete protocol (no `extends:`).\nname: voc2010\nsource: "PASCAL VOC2010-2012 devkit VOCevalDet.m + VOCap.m (all-point, IoU >= 0.5, +1 pixels)"\niou_type: bbox\niou_thresholds: [0.5]\niou_comparison: ">="\nmatching: voc\nbox_convention: pixel_inclusive\nap_method: all_point\narea_ranges:\n  all: [0, 1e10]\nmax_dets: null\ndifficult: ignore\ncrowd: none\nscore_order: file\ngt_ignore_field: honour\ngt_id_zero: matchable\nsummary: configured\n': {
        "name": "voc2010",
        "source": "PASCAL VOC2010-2012 devkit VOCevalDet.m + VOCap.m (all-point, IoU >= 0.5, +1 pixels)",
        "iou_type": "bbox",
        "iou_thresholds": [0.5],
        "iou_comparison": ">=",
        "matching": "voc",
        "box_convention": "pixel_inclusive",
        "ap_method": "all_point",
        "area_ranges": {"all": [0, 10000000000.0]},
        "max_dets": None,
        "difficult": "ignore",
        "crowd": "none",
        "score_order": "file",
        "gt_ignore_field": "honour",
        "gt_id_zero": "matchable",
        "summary": "configured",
    },
    # voc2012.yaml
    b'# PASCAL VOC2012 uses the VOC2010 devkit unchanged.\nextends: voc2010.yaml\nname: voc2012\nsource: "PASCAL VOC2010-2012 devkit VOCevalDet.m + VOCap.m (all-point, IoU >= 0.5, +1 pixels)"\n': {
        "extends": "voc2010.yaml",
        "name": "voc2012",
        "source": "PASCAL VOC2010-2012 devkit VOCevalDet.m + VOCap.m (all-point, IoU >= 0.5, +1 pixels)",
    },
}
