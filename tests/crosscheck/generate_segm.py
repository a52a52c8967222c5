"""Seeded generator of COCO instance-segmentation data (polygons and RLE) for cross-checks.

``generate_segm(seed)`` returns ``(gt, dt)``: a COCO instances dict with polygon masks and
crowd RLE regions, and a results list that pycocotools' ``COCOeval(iouType="segm")`` accepts.
deteval in raster mode must score it exactly as pycocotools does. Each dataset mixes:

* star-shaped polygons (always simple) from sub-pixel to ~300 px, rectangles and triangles
  with integer or float vertices, polygons partly outside the image;
* multi-part polygons, with disjoint, touching or overlapping parts (the mask is the union);
* crowd regions as uncompressed RLE (as COCO stores them), compressed RLE, or polygons,
  with detections inside and across them;
* detections that copy a GT mask exactly, jitter it, shift it, grow or shrink it, keep one
  of its parts, sit just beside it (touching, or 0.3 to 3 px apart); background false
  positives; exact score ties;
* GT ``area`` from the raster (as COCO computes it), from the exact polygon, or exactly on
  the size boundaries 32**2 and 96**2.

Results either all carry a bbox (then pycocotools takes each result's area from it) with
polygon or compressed-RLE masks, or none does (compressed RLE only: pycocotools reads
``maskUtils.area`` of the mask); pycocotools decides from the first record, so a dataset
never mixes the two. ``with_self_intersections`` adds bow-ties and scrambled polygons, which
pycocotools rasterises with an even-odd fill (raster mode accepts them; exact mode does not).
"""

from __future__ import annotations

import math
import random

from pycocotools import mask as mask_utils

IMAGE_SIZES = ((640, 480), (100, 80), (64, 64), (300, 500), (33, 47), (1000, 700))
RESULT_STYLES = ("polygon+bbox", "rle+bbox", "mixed+bbox", "rle")


def _star(rng, cx, cy, radius, n_vertices, aspect=1.0, phase=None, angles=None, radii=None):
    """Vertices of a star-shaped (hence simple) polygon around (cx, cy)."""
    if angles is None:
        phase = rng.uniform(0, 2 * math.pi) if phase is None else phase
        angles = [phase + (k + rng.uniform(-0.3, 0.3)) * 2 * math.pi / n_vertices for k in range(n_vertices)]
    if radii is None:
        radii = [radius * rng.uniform(0.55, 1.0) for _ in angles]
    return (
        [(cx + r * math.cos(a), cy + aspect * r * math.sin(a)) for a, r in zip(angles, radii, strict=True)],
        angles,
        radii,
    )


def _flat(points, style):
    out = []
    for x, y in points:
        if style == "int":
            out += [int(round(x)), int(round(y))]
        elif style == "half":
            out += [round(x * 2) / 2, round(y * 2) / 2]
        else:
            out += [round(x, 3), round(y, 3)]
    return out


def _distinct(flat):
    return len(set(zip(flat[0::2], flat[1::2], strict=True)))


def _is_usable(flat, width, height):
    """At least 3 distinct points, within one image size of the image."""
    xs, ys = flat[0::2], flat[1::2]
    return (
        _distinct(flat) >= 3
        and min(xs) >= -width
        and max(xs) <= 2 * width
        and min(ys) >= -height
        and max(ys) <= 2 * height
    )


def _raster(polygons, width, height):
    return mask_utils.merge(mask_utils.frPyObjects(polygons, height, width))


def counts_from_string(s):
    """Run lengths of pycocotools' compressed counts (``maskApi.c`` ``rleFrString``)."""
    counts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = s[p] - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def _uncompressed(rle):
    """Pycocotools RLE -> COCO's uncompressed form {"size": [h, w], "counts": [...]}."""
    return {"size": list(rle["size"]), "counts": counts_from_string(rle["counts"])}


def _compressed(rle):
    return {"size": list(rle["size"]), "counts": rle["counts"].decode("ascii")}


class _Builder:
    def __init__(self, seed, n_images, n_classes, result_style, with_self_intersections):
        self.rng = random.Random(seed)
        self.n_images = n_images
        self.cat_ids = self.rng.sample(range(1, 500), n_classes)
        self.result_style = result_style
        self.with_self_intersections = with_self_intersections
        self.coord_style = self.rng.choice(("int", "half", "float", "mixed"))
        self.score_style = self.rng.choice(("continuous", "coarse", "mixed"))
        self.gts = []
        self.dts = []

    # -- helpers -----------------------------------------------------------------------------
    def style(self):
        if self.coord_style == "mixed":
            return self.rng.choice(("int", "half", "float"))
        return self.coord_style

    def score(self):
        rng = self.rng
        style = self.score_style if self.score_style != "mixed" else rng.choice(("continuous", "coarse"))
        return rng.random() if style == "continuous" else rng.choice((0.2, 0.4, 0.5, 0.6, 0.8, 1.0))

    def polygon(self, width, height, *, cx=None, cy=None, radius=None, kind=None):
        """One polygon part (flat list) and its construction, or None if unusable."""
        rng = self.rng
        cx = rng.uniform(-0.1, 1.1) * width if cx is None else cx
        cy = rng.uniform(-0.1, 1.1) * height if cy is None else cy
        if radius is None:
            radius = math.exp(rng.uniform(math.log(0.4), math.log(min(width, height) * 0.45 + 1)))
        kind = kind or rng.choice(("star", "star", "star", "rect", "triangle"))
        if kind == "rect":
            w, h = radius * rng.uniform(0.5, 2), radius * rng.uniform(0.5, 2)
            points = [(cx - w, cy - h), (cx + w, cy - h), (cx + w, cy + h), (cx - w, cy + h)]
        elif kind == "triangle":
            points = [
                (cx - radius, cy - radius),
                (cx + radius, cy - radius * rng.uniform(-1, 1)),
                (cx - radius * rng.uniform(-1, 1), cy + radius),
            ]
        else:
            n = rng.randint(3, 25)
            points, _, _ = _star(rng, cx, cy, radius, n, aspect=rng.uniform(0.4, 2.5))
        flat = _flat(points, self.style())
        return flat if _is_usable(flat, width, height) else None

    def object_parts(self, width, height):
        """A GT mask: one polygon, or several parts (disjoint, touching or overlapping)."""
        rng = self.rng
        for _ in range(20):
            first = self.polygon(width, height)
            if first is None:
                continue
            parts = [first]
            if rng.random() < 0.2:
                xs, ys = first[0::2], first[1::2]
                span = max(max(xs) - min(xs), max(ys) - min(ys), 1)
                for _ in range(rng.randint(1, 2)):
                    offset = rng.choice((0.3, 0.8, 1.0, 2.0)) * span
                    part = [v + (offset if i % 2 == 0 else 0) for i, v in enumerate(first)]
                    if rng.random() < 0.5:
                        part = self.polygon(
                            width,
                            height,
                            cx=sum(xs) / len(xs) + offset,
                            cy=sum(ys) / len(ys),
                            radius=span / 2,
                        )
                    if part is not None and _is_usable(part, width, height):
                        parts.append(part)
            if self.with_self_intersections and rng.random() < 0.15:
                parts[0] = self.self_intersecting(parts[0])
            return parts
        return [[0, 0, 4, 0, 4, 4, 0, 4]]

    def self_intersecting(self, flat):
        rng = self.rng
        points = list(zip(flat[0::2], flat[1::2], strict=True))
        if len(points) >= 4 and rng.random() < 0.5:
            points[0], points[1] = points[1], points[0]  # a bow-tie twist
        else:
            rng.shuffle(points)
        out = [v for p in points for v in p]
        return out if _distinct(out) >= 3 else flat

    def jitter(self, parts, width, height, amount):
        rng = self.rng
        dx, dy = rng.gauss(0, amount * 20), rng.gauss(0, amount * 20)
        scale = math.exp(rng.gauss(0, amount))
        out = []
        for part in parts:
            xs, ys = part[0::2], part[1::2]
            cx, cy = sum(xs) / len(xs), sum(ys) / len(ys)
            points = [
                (
                    cx + (x - cx) * scale + dx + rng.gauss(0, amount * 3),
                    cy + (y - cy) * scale + dy + rng.gauss(0, amount * 3),
                )
                for x, y in zip(xs, ys, strict=True)
            ]
            flat = _flat(points, self.style())
            if _is_usable(flat, width, height):
                out.append(flat)
        return out or None

    # -- records -----------------------------------------------------------------------------
    def add_gt(self, image, cat, segmentation, *, iscrowd=0, exact_area=None):
        rng = self.rng
        width, height = image["width"], image["height"]
        if isinstance(segmentation, list):
            rle = _raster(segmentation, width, height)
        else:
            rle = (
                segmentation
                if isinstance(segmentation["counts"], (str, bytes))
                else mask_utils.frPyObjects(segmentation, height, width)
            )
        raster_area = float(mask_utils.area(rle))
        bbox = [float(v) for v in mask_utils.toBbox(rle)]
        r = rng.random()
        if r < 0.6 or exact_area is None:
            area = raster_area
        elif r < 0.85:
            area = exact_area
        else:
            area = rng.choice((1024, 9216, 1024.0, 9216.0))
        self.gts.append(
            {
                "image_id": image["id"],
                "category_id": cat,
                "segmentation": segmentation,
                "area": area,
                "bbox": bbox,
                "iscrowd": iscrowd,
            }
        )

    def add_dt(self, image, cat, parts, score=None):
        rng = self.rng
        width, height = image["width"], image["height"]
        style = self.result_style
        as_rle = style in ("rle+bbox", "rle") or (style == "mixed+bbox" and rng.random() < 0.5)
        rec = {"image_id": image["id"], "category_id": cat, "score": self.score() if score is None else score}
        if as_rle:
            rle = _raster(parts, width, height)
            rec["segmentation"] = _compressed(rle)
        else:
            rec["segmentation"] = parts
        if style != "rle":
            xs = [v for p in parts for v in p[0::2]]
            ys = [v for p in parts for v in p[1::2]]
            if rng.random() < 0.8:
                rec["bbox"] = [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)]
            else:  # a bbox that is not the mask's (pycocotools still takes the area from it)
                rec["bbox"] = [min(xs), min(ys), rng.uniform(1, 200), rng.uniform(1, 200)]
        self.dts.append(rec)

    # -- objects -----------------------------------------------------------------------------
    def obj(self, image, cat, with_dets):
        rng = self.rng
        width, height = image["width"], image["height"]
        parts = self.object_parts(width, height)
        exact = _exact_area(parts)
        self.add_gt(image, cat, parts, exact_area=exact)
        if not with_dets:
            return
        for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
            r = rng.random()
            if r < 0.25:
                self.add_dt(image, cat, [list(p) for p in parts])
            elif r < 0.75:
                moved = self.jitter(parts, width, height, rng.choice((0.01, 0.05, 0.1, 0.2, 0.4)))
                if moved:
                    self.add_dt(image, cat, moved)
            elif r < 0.85:  # a neighbour just beside the object: a few pixels apart or touching
                xs = [v for p in parts for v in p[0::2]]
                shift = max(xs) - min(xs) + rng.choice((-0.5, 0, 0.3, 1, 1.7, 2.5, 3.2))
                moved = [[v + shift if i % 2 == 0 else v for i, v in enumerate(p)] for p in parts]
                if all(_is_usable(p, width, height) for p in moved):
                    self.add_dt(image, cat, moved)
            elif len(parts) > 1:
                self.add_dt(image, cat, [parts[0]])
            else:
                p = self.polygon(width, height)
                if p:
                    self.add_dt(image, cat, [p])

    def crowd(self, image, cat, with_dets):
        rng = self.rng
        width, height = image["width"], image["height"]
        big = None
        while big is None:
            big = self.polygon(
                width, height, radius=min(width, height) * rng.uniform(0.15, 0.45), kind="star"
            )
        rle = _raster([big], width, height)
        form = rng.random()
        if form < 0.6:
            segmentation = _uncompressed(rle)
        elif form < 0.85:
            segmentation = _compressed(rle)
        else:
            segmentation = [big]
        self.add_gt(image, cat, segmentation, iscrowd=1, exact_area=_exact_area([big]))
        if not with_dets:
            return
        xs, ys = big[0::2], big[1::2]
        for _ in range(rng.randint(0, 5)):
            cx, cy = rng.uniform(min(xs), max(xs)), rng.uniform(min(ys), max(ys))
            p = self.polygon(width, height, cx=cx, cy=cy, radius=(max(xs) - min(xs)) * rng.uniform(0.05, 0.4))
            if p:
                self.add_dt(image, cat, [p])

    def build(self):
        rng = self.rng
        images = []
        for image_id in rng.sample(range(1, 10**6), self.n_images):
            width, height = rng.choice(IMAGE_SIZES)
            image = {"id": image_id, "width": width, "height": height, "file_name": f"{image_id:012d}.jpg"}
            images.append(image)
            gt_cats = self.cat_ids[: max(1, len(self.cat_ids) - 1)]
            for _ in range(rng.choice((0, 1, 2, 3, 4, 6))):
                self.obj(image, rng.choice(gt_cats), with_dets=rng.random() < 0.9)
            if rng.random() < 0.25:
                self.crowd(image, rng.choice(gt_cats), with_dets=True)
            for _ in range(rng.choice((0, 0, 1, 2))):
                p = self.polygon(width, height)
                if p:
                    self.add_dt(image, rng.choice(self.cat_ids), [p])
        if not self.dts:  # pycocotools' loadRes needs one record
            image = images[0]
            self.add_dt(image, self.cat_ids[0], [[0, 0, 5, 0, 5, 5, 0, 5]])
        ann_ids = rng.sample(range(1, 10**7), len(self.gts))
        for ann, ann_id in zip(self.gts, ann_ids, strict=True):
            ann["id"] = ann_id
        annotations = list(self.gts)
        rng.shuffle(annotations)
        dts = list(self.dts)
        rng.shuffle(dts)
        categories = [{"id": c, "name": f"class_{c}"} for c in self.cat_ids]
        rng.shuffle(categories)
        return {"images": images, "annotations": annotations, "categories": categories}, dts


def _exact_area(parts):
    """Shoelace area summed over parts (the GT ``area`` some tools write)."""
    total = 0.0
    for p in parts:
        xs, ys = p[0::2], p[1::2]
        n = len(xs)
        total += abs(sum(xs[i] * ys[(i + 1) % n] - xs[(i + 1) % n] * ys[i] for i in range(n))) / 2
    return total


def generate_segm(
    seed,
    *,
    n_images=None,
    n_classes=None,
    max_images=10,
    max_classes=4,
    result_style=None,
    with_self_intersections=False,
):
    """Return ``(gt_dict, results_list)`` for ``seed``."""
    rng = random.Random(seed * 104729 + 3)
    n_images = rng.randint(1, max_images) if n_images is None else n_images
    n_classes = rng.randint(1, max_classes) if n_classes is None else n_classes
    result_style = rng.choice(RESULT_STYLES) if result_style is None else result_style
    return _Builder(seed, n_images, n_classes, result_style, with_self_intersections).build()
