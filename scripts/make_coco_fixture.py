"""Write fixtures/coco/{gt,dt}.json: the examples of docs/known-answers.md as a COCO dataset.

* person (id 1): 5 GT over 3 images; 10 detections whose outcomes in score order are
  TP TP FP FP FP TP TP FP FP TP (TPs are exact copies of a GT: IoU 1 at every threshold; FPs
  overlap nothing) -- docs/known-answers.md section 1.
* dog (id 2): GT A = [0, 0, 100, 100], B = [40, 0, 100, 100]; d1 = A (0.9), d2 = [15, 0, 100, 100]
  (0.8): IoU(d2, A) = 0.739, IoU(d2, B) = 0.6 -- section 2 (matching rules disagree).
* cat (id 3): one GT, no detection (AP 0).
* bird (id 4): no GT, one detection (AP undefined: null).

Run: python scripts/make_coco_fixture.py
"""

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "coco"


def main() -> None:
    images = [{"id": i, "file_name": f"img{i}.jpg", "width": 640, "height": 480} for i in (1, 2, 3, 4, 5)]
    categories = [
        {"id": 1, "name": "person"},
        {"id": 2, "name": "dog"},
        {"id": 3, "name": "cat"},
        {"id": 4, "name": "bird"},
    ]
    person = [
        (1, [10, 10, 50, 80]),
        (1, [100, 10, 50, 80]),
        (2, [10, 10, 60, 90]),
        (2, [200, 100, 40, 70]),
        (3, [300, 200, 50, 50]),
    ]
    anns = []
    for image_id, box in person:
        anns.append(
            {
                "id": len(anns) + 1,
                "image_id": image_id,
                "category_id": 1,
                "bbox": box,
                "area": box[2] * box[3],
                "iscrowd": 0,
            }
        )
    for box in ([0, 0, 100, 100], [40, 0, 100, 100]):
        anns.append(
            {
                "id": len(anns) + 1,
                "image_id": 4,
                "category_id": 2,
                "bbox": box,
                "area": box[2] * box[3],
                "iscrowd": 0,
            }
        )
    anns.append(
        {
            "id": len(anns) + 1,
            "image_id": 5,
            "category_id": 3,
            "bbox": [50, 50, 100, 100],
            "area": 10000,
            "iscrowd": 0,
        }
    )
    far = [[500, 400, 40, 40], [560, 400, 40, 40], [500, 300, 40, 40], [560, 300, 40, 40], [500, 200, 40, 40]]
    outcomes = "TP TP FP FP FP TP TP FP FP TP".split()
    tp_boxes = iter(person)
    fp_boxes = iter(far)
    dets = []
    for rank, outcome in enumerate(outcomes):
        score = round(0.95 - 0.05 * rank, 2)
        if outcome == "TP":
            image_id, box = next(tp_boxes)
        else:
            image_id, box = (rank % 3) + 1, next(fp_boxes)
        dets.append({"image_id": image_id, "category_id": 1, "bbox": box, "score": score})
    dets.append({"image_id": 4, "category_id": 2, "bbox": [0, 0, 100, 100], "score": 0.9})
    dets.append({"image_id": 4, "category_id": 2, "bbox": [15, 0, 100, 100], "score": 0.8})
    dets.append({"image_id": 5, "category_id": 4, "bbox": [400, 50, 30, 30], "score": 0.7})
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "gt.json").write_text(
        json.dumps({"images": images, "categories": categories, "annotations": anns}, indent=1) + "\n"
    )
    (OUT / "dt.json").write_text(json.dumps(dets, indent=1) + "\n")


if __name__ == "__main__":
    main()
