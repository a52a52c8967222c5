"""Seeded generator of nasty COCO ground truth + detection results for cross-checks.

``generate(seed)`` returns ``(gt, dt)``: a COCO instances dict and a results list that
pycocotools accepts and deteval must score identically. Every dataset mixes the cases that
decide exact parity:

* exact score ties, within one image and across images (coarse or constant scores);
* detections whose IoU with a GT lands exactly on a COCO threshold, by construction:
  a box cut along one axis (``[0, 0, 10, 10]`` vs ``[0, 0, 10, 6]`` -> 3/5), a GT inside a
  larger detection, two equal boxes shifted (``(a - s) / (a + s) = p / q``), two boxes
  shifted diagonally (``[0,0,2,2]`` vs ``[1,1,2,2]`` -> 1/7 scaled up), and the same
  constructions scaled by inexact floats and moved by float offsets, so the IoU lands one
  float step to either side of the threshold;
* GT ``area`` exactly 32**2 and 96**2 (and detections of area exactly 32**2 / 96**2),
  and ``area`` fields that differ from w*h, as the segmentation areas of real COCO do;
* crowd regions with several detections inside (and partly inside);
* images without GT, classes with GT but no detections, detections of categories listed
  in the GT without any GT object, images with > 100 detections (and > 100 for one
  image + class), zero-area GT boxes (w or h = 0);
* integer and float coordinates; non-contiguous image, category and annotation ids
  listed in shuffled order (never id 0 by default).

Options: ``with_id_zero`` gives one well-detected GT the annotation id 0 (pycocotools
never counts a match to it); ``with_ignore_fields`` adds explicit ``ignore`` fields
(pycocotools overwrites them with ``iscrowd``).

Detections are only emitted on images and categories present in the GT (deteval rejects
others by design).
"""

from __future__ import annotations

import random
from fractions import Fraction

# The COCO IoU thresholds as exact fractions: (numerator, denominator).
THRESHOLD_FRACTIONS = (
    (1, 2),
    (11, 20),
    (3, 5),
    (13, 20),
    (7, 10),
    (3, 4),
    (4, 5),
    (17, 20),
    (9, 10),
    (19, 20),
)
INEXACT_SCALES = (0.1, 0.3, 0.7, 1.1, 1.7, 2.3, 3.3, 0.01)
FLOAT_OFFSETS = (0.1, 0.2, 0.3, 0.7, 1e-3, 123.456, 1 / 3)


def _threshold_pair(rng):
    """(gt_box, det_box) whose IoU is a COCO threshold exactly (in exact arithmetic)."""
    p, q = rng.choice(THRESHOLD_FRACTIONS)
    kind = rng.randrange(4)
    u = rng.choice((1, 2, 3, 4, 5, 8))
    if kind == 0:  # detection = GT cut along one axis: IoU = p / q
        w = rng.randint(1, 40)
        gt, det = [0, 0, w, q * u], [0, 0, w, p * u]
    elif kind == 1:  # GT inside a larger detection: IoU = p / q
        w = rng.randint(1, 40)
        gt, det = [0, 0, w, p * u], [0, 0, w, q * u]
    elif kind == 2:  # equal boxes shifted: (a - s) / (a + s) = p / q
        hh = rng.randint(1, 40)
        a, s = (q + p) * u, (q - p) * u
        gt, det = [0, 0, a, hh], [s, 0, a, hh]
    else:  # equal squares shifted diagonally: IoU = (a-s)^2 / (2a^2 - (a-s)^2)
        # Solve for the ratio with a small search over integers (exact fractions).
        target = Fraction(p, q)
        best = None
        for a in range(2, 60):
            for s in range(0, a):
                iou = Fraction((a - s) ** 2, 2 * a * a - (a - s) ** 2)
                if iou == target:
                    best = (a, s)
                    break
            if best:
                break
        if best is None:  # no exact square solution: fall back to the cut
            w = rng.randint(1, 40)
            gt, det = [0, 0, w, q * u], [0, 0, w, p * u]
        else:
            a, s = best
            gt, det = [0, 0, a * u, a * u], [s * u, s * u, a * u, a * u]
    if rng.random() < 0.5:  # swap the axes
        gt = [gt[1], gt[0], gt[3], gt[2]]
        det = [det[1], det[0], det[3], det[2]]
    return gt, det


def _transform(box, scale, dx, dy):
    x, y, w, h = box
    return [x * scale + dx, y * scale + dy, w * scale, h * scale]


class _Builder:
    def __init__(self, seed, n_images, n_classes, with_id_zero, with_ignore_fields, force_many_dets):
        self.rng = random.Random(seed)
        rng = self.rng
        self.n_images = n_images
        self.n_classes = n_classes
        self.with_id_zero = with_id_zero
        self.with_ignore_fields = with_ignore_fields
        self.force_many_dets = force_many_dets
        self.image_ids = rng.sample(range(1, 10**6), n_images)
        self.cat_ids = rng.sample(range(1, 1000), n_classes)
        roles = {}
        for c in self.cat_ids:
            r = rng.random()
            roles[c] = "gt_only" if r < 0.12 else "dt_only" if r < 0.22 else "both"
        if all(v == "dt_only" for v in roles.values()):
            roles[self.cat_ids[0]] = "both"
        self.roles = roles
        self.gt_cats = [c for c in self.cat_ids if roles[c] != "dt_only"]
        self.dt_cats = [c for c in self.cat_ids if roles[c] != "gt_only"] or self.cat_ids
        # dataset-wide styles
        self.score_style = rng.choice(("continuous", "coarse", "very_coarse", "constant", "mixed"))
        self.coord_style = rng.choice(("int", "float", "mixed", "scaled"))
        self.gts = []  # annotation dicts without id
        self.dts = []
        self.good_gt_indices = []  # GTs with an IoU-1 detection (candidates for id 0)

    # -- helpers -------------------------------------------------------------------
    def score(self):
        rng = self.rng
        style = self.score_style
        if style == "mixed":
            style = rng.choice(("continuous", "coarse", "very_coarse"))
        if style == "continuous":
            return rng.random()
        if style == "coarse":
            return round(rng.random(), 1)
        if style == "very_coarse":
            return rng.choice((0.25, 0.5, 0.75, 1.0))
        return 0.5

    def place(self, gt_box, det_boxes, width, height):
        """Move (and maybe scale) a construction somewhere on the image."""
        rng = self.rng
        style = self.coord_style
        if style == "mixed":
            style = rng.choice(("int", "float", "scaled"))
        if style == "int":
            scale, dx, dy = 1, rng.randint(0, width), rng.randint(0, height)
        elif style == "float":
            scale = 1
            dx = rng.randint(0, width) + rng.choice(FLOAT_OFFSETS)
            dy = rng.randint(0, height) + rng.choice((0, *FLOAT_OFFSETS))
        else:
            scale = rng.choice(INEXACT_SCALES)
            dx = rng.uniform(0, width) if rng.random() < 0.5 else rng.randint(0, width)
            dy = rng.uniform(0, height) if rng.random() < 0.5 else 0
        return (_transform(gt_box, scale, dx, dy), [_transform(b, scale, dx, dy) for b in det_boxes])

    def area_field(self, box):
        rng = self.rng
        w, h = box[2], box[3]
        r = rng.random()
        if r < 0.6:
            return w * h
        if r < 0.8:  # segmentation-like area, smaller than the box
            return w * h * rng.uniform(0.3, 1.0)
        if r < 0.9:
            return float(round(w * h))
        return rng.choice((32**2, 96**2, float(32**2), float(96**2)))

    def add_gt(self, image_id, cat, box, *, area=None, iscrowd=0):
        ann = {
            "image_id": image_id,
            "category_id": cat,
            "bbox": list(box),
            "area": self.area_field(box) if area is None else area,
            "iscrowd": iscrowd,
        }
        self.gts.append(ann)
        return len(self.gts) - 1

    def add_dt(self, image_id, cat, box, score=None):
        self.dts.append(
            {
                "image_id": image_id,
                "category_id": cat,
                "bbox": list(box),
                "score": self.score() if score is None else score,
            }
        )

    # -- objects -------------------------------------------------------------------
    def object_with_detections(self, image_id, cat, width, height):
        rng = self.rng
        kind = rng.random()
        if kind < 0.35:  # exact-threshold construction
            gt_box, det_box = _threshold_pair(rng)
            gt_box, (det_box,) = self.place(gt_box, [det_box], width, height)
            gi = self.add_gt(image_id, cat, gt_box)
            if rng.random() < 0.9:
                self.add_dt(image_id, cat, det_box)
            if rng.random() < 0.3:  # a second, exact copy: one of the two is a duplicate
                self.add_dt(image_id, cat, gt_box)
                self.good_gt_indices.append(gi)
            return
        if kind < 0.42:  # one detection with equal IoU to two GTs: the later GT wins
            x, y = rng.randint(0, width), rng.randint(0, height)
            side = rng.choice((10, 20, 40))
            a = [x, y, side, side]
            b = [x + side // 5, y, side, side]
            pair = [a, b]
            rng.shuffle(pair)
            gi = [self.add_gt(image_id, cat, box) for box in pair]
            middle = [x + side // 10, y, side, side]  # IoU 9/11 with a and with b
            s_high = self.score()
            s_low = s_high if rng.random() < 0.3 else s_high * rng.uniform(0.5, 1.0)
            self.add_dt(image_id, cat, middle, score=s_high)
            self.add_dt(image_id, cat, rng.choice(pair), score=s_low)  # IoU 1 and 2/3
            self.good_gt_indices.extend(gi)
            return
        if kind < 0.5:  # area exactly on a size boundary (GT and exact-copy detection)
            side = rng.choice((32, 96))
            if rng.random() < 0.5:
                w, h = side, side
            else:
                w, h = rng.choice(((16, 64), (64, 16), (48, 192), (192, 48), (128, 72), (1, 1024), (1024, 9)))
            x, y = rng.randint(0, width), rng.randint(0, height)
            if rng.random() < 0.3:
                x += 0.5
            box = [x, y, w, h]
            area = rng.choice((w * h, float(w * h), side * side, w * h - 1, w * h + 1))
            gi = self.add_gt(image_id, cat, box, area=area)
            if rng.random() < 0.85:
                self.add_dt(image_id, cat, box)
                self.good_gt_indices.append(gi)
            return
        if kind < 0.57:  # zero-area GT (w or h is 0), maybe with a detection on it
            x, y = rng.randint(0, width), rng.randint(0, height)
            w, h = (0, rng.randint(1, 50)) if rng.random() < 0.5 else (rng.randint(1, 50), 0)
            self.add_gt(image_id, cat, [x, y, w, h], area=rng.choice((0, 0.0, 5.0)))
            if rng.random() < 0.5:
                self.add_dt(image_id, cat, [x, y, max(w, 1), max(h, 1)])
            return
        # a random box with a few noisy detections
        w = rng.choice((rng.randint(1, 30), rng.randint(20, 120), rng.randint(80, 400)))
        h = max(1, int(w * rng.uniform(0.3, 3)))
        if self.coord_style in ("float", "mixed", "scaled") and rng.random() < 0.5:
            w, h = w * rng.uniform(0.9, 1.1), h * rng.uniform(0.9, 1.1)
        x, y = rng.uniform(0, width), rng.uniform(0, height)
        if self.coord_style == "int":
            x, y = int(x), int(y)
        box = [x, y, w, h]
        gi = self.add_gt(image_id, cat, box)
        n_det = rng.choice((0, 1, 1, 1, 2, 3))
        for j in range(n_det):
            if j == 0 and rng.random() < 0.4:
                self.add_dt(image_id, cat, box)
                self.good_gt_indices.append(gi)
                continue
            jitter = rng.uniform(0, 0.4)
            det = [
                x + rng.uniform(-jitter, jitter) * w,
                y + rng.uniform(-jitter, jitter) * h,
                w * rng.uniform(1 - jitter, 1 + jitter),
                h * rng.uniform(1 - jitter, 1 + jitter),
            ]
            if self.coord_style == "int":
                det = [round(v) for v in det]
                det[2], det[3] = max(det[2], 1), max(det[3], 1)
            self.add_dt(image_id, cat, det)

    def crowd_region(self, image_id, cat, width, height):
        rng = self.rng
        x, y = rng.randint(0, width), rng.randint(0, height)
        w, h = rng.randint(40, 300), rng.randint(40, 300)
        self.add_gt(image_id, cat, [x, y, w, h], iscrowd=1, area=w * h * rng.uniform(0.4, 1.0))
        for _ in range(rng.randint(0, 6)):
            dw, dh = rng.randint(2, w), rng.randint(2, h)
            if rng.random() < 0.7:  # fully inside: crowd IoU 1
                dx, dy = x + rng.randint(0, w - dw), y + rng.randint(0, h - dh)
            else:  # partly inside
                dx, dy = x - dw // 2 + rng.randint(0, w), y - dh // 2 + rng.randint(0, h)
            self.add_dt(image_id, cat, [dx, dy, dw, dh])
        if rng.random() < 0.4:  # a regular object inside the crowd region too
            bw, bh = rng.randint(5, max(5, w // 2)), rng.randint(5, max(5, h // 2))
            box = [x + 1, y + 1, bw, bh]
            gi = self.add_gt(image_id, cat, box)
            if rng.random() < 0.5:
                self.add_dt(image_id, cat, box)
                self.good_gt_indices.append(gi)
            else:  # inside the crowd (crowd IoU 1) but IoU < 1 with the object
                grow = rng.randint(1, 4)
                self.add_dt(image_id, cat, [x + 1, y + 1, bw + grow, bh + grow])

    def false_positive(self, image_id, cat, width, height):
        rng = self.rng
        w, h = rng.randint(1, 200), rng.randint(1, 200)
        x, y = rng.uniform(0, width), rng.uniform(0, height)
        if self.coord_style == "int":
            x, y = int(x), int(y)
        self.add_dt(image_id, cat, [x, y, w, h])

    def many_detections(self, image_id, cat, width, height, n):
        """N detections on one image + class around a few GTs (crosses maxDets=100)."""
        rng = self.rng
        anchors = []
        for _ in range(rng.randint(1, 5)):
            box = [rng.randint(0, width), rng.randint(0, height), rng.randint(10, 150), rng.randint(10, 150)]
            self.add_gt(image_id, cat, box)
            anchors.append(box)
        for i in range(n):
            a = rng.choice(anchors)
            if rng.random() < 0.3:
                det = list(a)
            else:
                det = [
                    a[0] + rng.randint(-20, 20),
                    a[1] + rng.randint(-20, 20),
                    max(1, a[2] + rng.randint(-20, 20)),
                    max(1, a[3] + rng.randint(-20, 20)),
                ]
            # late-ranked true positives matter: give some of them the lowest scores
            score = self.score() if i % 7 else rng.choice((0.01, 0.5, self.score()))
            self.add_dt(image_id, cat, det, score=score)

    # -- whole dataset -------------------------------------------------------------
    def build(self):
        rng = self.rng
        images = []
        for image_id in self.image_ids:
            width, height = rng.choice(((640, 480), (500, 375), (1000, 1000), (64, 64)))
            images.append(
                {"id": image_id, "width": width, "height": height, "file_name": f"{image_id:012d}.jpg"}
            )
            if rng.random() < 0.15:  # no GT on this image; maybe a few FPs
                for _ in range(rng.choice((0, 0, 1, 3))):
                    self.false_positive(image_id, rng.choice(self.dt_cats), width, height)
                continue
            for _ in range(rng.choice((1, 1, 2, 3, 4, 6))):
                cat = rng.choice(self.gt_cats)
                if self.roles[cat] == "gt_only":
                    saved = len(self.dts)
                    self.object_with_detections(image_id, cat, width, height)
                    del self.dts[saved:]
                else:
                    self.object_with_detections(image_id, cat, width, height)
            if rng.random() < 0.15:
                cat = rng.choice(self.gt_cats)
                saved = len(self.dts)
                self.crowd_region(image_id, cat, width, height)
                if self.roles[cat] == "gt_only":
                    del self.dts[saved:]
            for _ in range(rng.choice((0, 0, 1, 2))):
                self.false_positive(image_id, rng.choice(self.dt_cats), width, height)
        both = [c for c in self.cat_ids if self.roles[c] == "both"]
        if (self.force_many_dets or rng.random() < 0.1) and both:
            img = rng.choice(images)
            self.many_detections(
                img["id"], rng.choice(both), img["width"], img["height"], rng.randint(101, 160)
            )
            if len(self.dt_cats) > 1:  # > 100 on one image, <= 100 per class
                for cat in rng.sample(self.dt_cats, min(3, len(self.dt_cats))):
                    for _ in range(40):
                        self.false_positive(img["id"], cat, img["width"], img["height"])
        return self.finish(images)

    def finish(self, images):
        rng = self.rng
        ann_ids = rng.sample(range(1, 10**7), len(self.gts))
        for ann, ann_id in zip(self.gts, ann_ids, strict=True):
            ann["id"] = ann_id
        if self.with_id_zero and self.gts:
            candidates = [i for i in self.good_gt_indices if not self.gts[i]["iscrowd"]]
            i = rng.choice(candidates) if candidates else rng.randrange(len(self.gts))
            self.gts[i]["id"] = 0
        if self.with_ignore_fields:
            for ann in self.gts:
                r = rng.random()
                if r < 0.25:
                    ann["ignore"] = 1
                elif r < 0.5:
                    ann["ignore"] = 0
                elif r < 0.55:
                    ann["ignore"] = True
        annotations = list(self.gts)
        if rng.random() < 0.7:
            rng.shuffle(annotations)
        dts = list(self.dts)
        if rng.random() < 0.7:
            rng.shuffle(dts)
        rng.shuffle(images)
        categories = [{"id": c, "name": f"class_{c}", "supercategory": "thing"} for c in self.cat_ids]
        rng.shuffle(categories)
        gt = {
            "info": {"description": "generated"},
            "images": images,
            "annotations": annotations,
            "categories": categories,
        }
        return gt, dts


def generate(
    seed,
    *,
    n_images=None,
    n_classes=None,
    max_images=20,
    max_classes=5,
    with_id_zero=False,
    with_ignore_fields=False,
    force_many_dets=False,
):
    """Return ``(gt_dict, results_list)`` for ``seed``.

    n_images / n_classes default to a random count in [1, max_images] / [1, max_classes].
    """
    rng = random.Random(seed * 7919 + 17)
    if n_images is None:
        n_images = rng.randint(1, max_images)
    if n_classes is None:
        n_classes = rng.randint(1, max_classes)
    builder = _Builder(seed, n_images, n_classes, with_id_zero, with_ignore_fields, force_many_dets)
    return builder.build()
