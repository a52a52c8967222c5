"""Seeded generator of nasty PASCAL VOC datasets, and a writer of real VOC files.

``generate_voc(seed)`` returns a :class:`VocDataset` (plain lists: what the slow reference
reads) and ``write_voc(root, dataset)`` writes it as a VOC root (``Annotations/*.xml``,
``ImageSets/Main/test.txt``) with a ``results/`` folder of per-class result files (what
deteval reads). Every dataset mixes the cases that decide exact agreement with the devkit:

* score ties: coarse scores (one decimal), one constant score, or fine scores; ties are broken
  by file order, and the result files are written in a shuffled order;
* difficult objects (detections on them are neither TP nor FP; they are not positives);
* duplicate detections (identical lines) and duplicate GT objects (the devkit's argmax takes
  the first, so the second detection on the pair is a FP even though a GT is free);
* detections whose overlap is exactly 0.5 by construction, under the devkit's ``+1`` pixel
  arithmetic (a box of twice the GT's pixel height) and under continuous arithmetic (twice
  the continuous height): they pass ``>=`` and fail ``>``;
* one class with exactly 10 or 20 positives, so that recalls land exactly on 0.3, 0.6 and
  0.7 (the 11-point grids disagree there);
* detections on images without GT of their class, classes without detections, images without
  objects, one-pixel-wide GT boxes (zero width in continuous arithmetic), and an image set
  that is not in file-name order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

CLASS_SETS = (("car", "dog"), ("car", "dog", "racecar"), ("cat",), ("bus", "car", "person"))


@dataclass
class VocDataset:
    """A VOC dataset as plain lists.

    image_ids : image-set order; sizes : id -> (width, height);
    objects : id -> list of {"name", "box": (x1, y1, x2, y2), "difficult"} in XML order;
    detections : class -> list of (image_id, score, (x1, y1, x2, y2)) in file order.
    """

    classes: list
    image_ids: list
    sizes: dict
    objects: dict
    detections: dict = field(default_factory=dict)


def _num(value) -> str:
    """A number as written to the files: integers without a point, floats round-tripping."""
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def annotation_xml(image_id, size, objects, *, with_difficult=True) -> str:
    """One ``Annotations/<id>.xml`` in the layout of the VOC2007 files."""
    width, height = size
    parts = [
        f"<annotation>\n\t<folder>VOC2007</folder>\n\t<filename>{image_id}.jpg</filename>\n"
        f"\t<size>\n\t\t<width>{_num(width)}</width>\n\t\t<height>{_num(height)}</height>\n"
        f"\t\t<depth>3</depth>\n\t</size>\n\t<segmented>0</segmented>\n"
    ]
    for obj in objects:
        x1, y1, x2, y2 = obj["box"]
        difficult = f"\t\t<difficult>{int(bool(obj['difficult']))}</difficult>\n" if with_difficult else ""
        parts.append(
            f"\t<object>\n\t\t<name>{obj['name']}</name>\n\t\t<pose>Unspecified</pose>\n"
            f"\t\t<truncated>0</truncated>\n{difficult}\t\t<bndbox>\n"
            f"\t\t\t<xmin>{_num(x1)}</xmin>\n\t\t\t<ymin>{_num(y1)}</ymin>\n"
            f"\t\t\t<xmax>{_num(x2)}</xmax>\n\t\t\t<ymax>{_num(y2)}</ymax>\n"
            f"\t\t</bndbox>\n\t</object>\n"
        )
    parts.append("</annotation>\n")
    return "".join(parts)


def write_voc(
    root, dataset: VocDataset, *, split="test", prefix="comp4_det_test_", results="results"
) -> tuple[Path, Path]:
    """Write ``dataset`` as a VOC root; returns (root, results folder)."""
    root = Path(root)
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    (root / "ImageSets" / "Main").mkdir(parents=True, exist_ok=True)
    for image_id in dataset.image_ids:
        (root / "Annotations" / f"{image_id}.xml").write_text(
            annotation_xml(image_id, dataset.sizes[image_id], dataset.objects.get(image_id, []))
        )
    (root / "ImageSets" / "Main" / f"{split}.txt").write_text("".join(f"{i}\n" for i in dataset.image_ids))
    folder = root / results
    folder.mkdir(exist_ok=True)
    # A detector that found nothing writes an empty file per class (the devkit reads one): a results
    # folder with nothing in it is refused as "no predictions found".
    written = dataset.detections if dataset.detections else dict.fromkeys(dataset.classes, [])
    for cls, dets in written.items():
        (folder / f"{prefix}{cls}.txt").write_text(
            "".join(
                f"{image_id} {_num(score)} {' '.join(_num(v) for v in box)}\n"
                for image_id, score, box in dets
            )
        )
    return root, folder


def _random_box(rng, width, height):
    x1 = rng.randint(1, max(1, width - 12))
    y1 = rng.randint(1, max(1, height - 12))
    x2 = min(width, x1 + rng.choice((0, rng.randint(3, 40), rng.randint(3, 40))))
    y2 = min(height, y1 + rng.randint(3, 40))
    return (x1, y1, x2, y2)


def _jitter(rng, box, amount):
    x1, y1, x2, y2 = (v + rng.randint(-amount, amount) for v in box)
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def _half_overlap_pixel(box):
    """A box whose devkit (+1) overlap with ``box`` is exactly 0.5: twice its pixel height."""
    x1, y1, x2, y2 = box
    return (x1, y1, x2, y1 + 2 * (y2 - y1 + 1) - 1)


def _half_overlap_continuous(box):
    """A box whose continuous overlap with ``box`` is exactly 0.5: twice its height."""
    x1, y1, x2, y2 = box
    return (x1, y1, x2, y1 + 2 * (y2 - y1))


def generate_voc(seed: int) -> VocDataset:
    """A small VOC dataset with detections; see the module docstring for what it contains."""
    rng = random.Random(seed)
    classes = list(rng.choice(CLASS_SETS))
    n_images = rng.randint(1, 6)
    image_ids = []
    while len(image_ids) < n_images:
        name = f"{rng.randrange(10**6):06d}"
        if name not in image_ids:
            image_ids.append(name)
    sizes = {i: (rng.randint(40, 200), rng.randint(40, 200)) for i in image_ids}
    objects = {i: [] for i in image_ids}

    def add_object(image, name, difficult):
        box = _random_box(rng, *sizes[image])
        objects[image].append({"name": name, "box": box, "difficult": difficult})
        if rng.random() < 0.1:  # an exact duplicate GT
            objects[image].append({"name": name, "box": box, "difficult": rng.random() < 0.2})

    p_difficult = rng.choice((0.0, 0.15, 0.3))
    for image in image_ids:
        for name in classes:
            for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
                add_object(image, name, rng.random() < p_difficult)
    if rng.random() < 0.5:  # one class with exactly 10 or 20 positives: recall hits 0.3 / 0.6 / 0.7
        name = rng.choice(classes)
        for image in image_ids:
            objects[image] = [o for o in objects[image] if o["name"] != name or o["difficult"]]
        for _ in range(rng.choice((10, 20))):
            image = rng.choice(image_ids)
            objects[image].append({"name": name, "box": _random_box(rng, *sizes[image]), "difficult": False})
    for name in classes:  # every class appears in the data (maybe only as difficult)
        if not any(o["name"] == name for objs in objects.values() for o in objs):
            add_object(rng.choice(image_ids), name, rng.random() < 0.3)
    for image in image_ids:
        rng.shuffle(objects[image])

    score_mode = rng.choice(("coarse", "coarse", "fine", "constant"))

    def score():
        if score_mode == "coarse":
            return rng.randint(1, 9) / 10
        if score_mode == "constant":
            return 0.5
        return round(rng.random(), 3)

    detections = {}
    for name in classes:
        if rng.random() < 0.08:
            continue  # a class without a result file
        dets = []
        for image in image_ids:
            for obj in objects[image]:
                if obj["name"] != name:
                    continue
                r = rng.random()
                if r < 0.45:
                    box = obj["box"] if rng.random() < 0.4 else _jitter(rng, obj["box"], 2)
                elif r < 0.6:
                    box = _half_overlap_pixel(obj["box"])
                elif r < 0.72:
                    box = _half_overlap_continuous(obj["box"])
                elif r < 0.8:
                    box = _jitter(rng, obj["box"], 8)
                else:
                    continue
                dets.append((image, score(), box))
                if rng.random() < 0.15:  # a duplicate detection, same line
                    dets.append(dets[-1])
                if rng.random() < 0.1:  # a second detection of the object
                    dets.append((image, score(), _jitter(rng, obj["box"], 1)))
        for _ in range(rng.randint(0, 5)):  # background detections, any image
            image = rng.choice(image_ids)
            dets.append((image, score(), _random_box(rng, *sizes[image])))
        rng.shuffle(dets)
        detections[name] = dets
    return VocDataset(
        classes=sorted(classes), image_ids=image_ids, sizes=sizes, objects=objects, detections=detections
    )
