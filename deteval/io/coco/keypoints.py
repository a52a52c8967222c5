"""COCO keypoints: the ``keypoints`` column, ``num_keypoints``, a result's box.

Read for ground truth and results alike (:func:`deteval.scorable.require_keypoints` refuses a
keypoints evaluation of records without them or with a count the protocol's sigmas do not have).
"""

from __future__ import annotations

import itertools

import numpy as np

from deteval.io._records import MISSING, Problems, int_column


def keypoint_column(records: list, problems: Problems, *, is_ground_truth: bool) -> np.ndarray | None:
    """COCO ``keypoints`` ([x1, y1, v1, x2, ...]) -> float64 (n, n_keypoints, 3); None if no record has any.

    Records without ``keypoints`` get a NaN row. Every list must have the same length, a
    multiple of 3, of finite numbers; ground-truth visibility flags must be 0, 1 or 2 (results
    may put a score there: pycocotools reads only a result's x and y).

    Raises
    ------
    InputError
        Naming the records, e.g. ``gt.json: annotation #2 (id=3, image_id=1): `keypoints` does not
        have the length of the others; expected 51 numbers (3 per keypoint), found ...``.
    """
    values = [r.get("keypoints", MISSING) for r in records]
    present = [i for i, v in enumerate(values) if v is not MISSING]
    if not present:
        return None
    bad = [i for i in present if not isinstance(values[i], list) or len(values[i]) % 3 or not values[i]]
    if bad:
        problems.fail(
            bad,
            "`keypoints` is not a list of 3 numbers per keypoint",
            "a list [x1, y1, v1, x2, y2, v2, ...] (length a multiple of 3)",
            lambda i: values[i],
        )
    length = len(values[present[0]])
    bad = [i for i in present if len(values[i]) != length]
    if bad:
        problems.fail(
            bad,
            "`keypoints` does not have the length of the first record's",
            f"{length} numbers ({length // 3} keypoints x 3), as record #{present[0]} has",
            lambda i: values[i],
        )
    flat = list(itertools.chain.from_iterable(values[i] for i in present))
    if not set(map(type, flat)) <= {int, float}:
        bad = [
            i
            for i in present
            if any(not isinstance(c, (int, float)) or isinstance(c, bool) for c in values[i])
        ]
        problems.fail(
            bad, "`keypoints` has a value that is not a number", "finite JSON numbers", lambda i: values[i]
        )
    rows = np.array(flat, dtype=np.float64).reshape(len(present), length // 3, 3)
    bad = [present[j] for j in np.flatnonzero(~np.isfinite(rows).all(axis=(1, 2)))]
    if bad:
        problems.fail(
            bad, "`keypoints` has a value that is not a finite number", "finite numbers", lambda i: values[i]
        )
    if is_ground_truth:
        flags = rows[:, :, 2]
        bad = [present[j] for j in np.flatnonzero(~np.isin(flags, (0.0, 1.0, 2.0)).all(axis=1))]
        if bad:
            problems.fail(
                bad,
                "`keypoints` has a visibility flag that is not 0, 1 or 2",
                "v = 0 (not labelled), 1 (labelled, hidden) or 2 (visible) after each x, y",
                lambda i: values[i],
            )
    out = np.full((len(records), length // 3, 3), np.nan)
    out[present] = rows
    return out


def _num_keypoints(
    anns: list, keypoints: np.ndarray, problems: Problems, where: str, warnings: list
) -> np.ndarray:
    """``num_keypoints`` (int64; -1 without keypoints); derived from v > 0 where missing (warned)."""
    has_keypoints = ~np.isnan(keypoints[:, 0, 0])
    visible = np.where(has_keypoints, (keypoints[:, :, 2] > 0).sum(axis=1), -1)
    values = [r.get("num_keypoints", MISSING) for r in anns]
    missing = np.array([v is MISSING for v in values], dtype=bool) & has_keypoints
    if missing.any():
        warnings.append(
            f"{where}: {int(missing.sum())} annotations with `keypoints` but no `num_keypoints`: "
            f"counted the keypoints with v > 0 (pycocotools would fail on them)"
        )
    count = int_column(anns, "num_keypoints", problems, default=-1)
    bad = np.flatnonzero(has_keypoints & ~missing & ((count < 0) | (count > keypoints.shape[1])))
    if len(bad):
        problems.fail(
            bad,
            "`num_keypoints` is out of range",
            f"an integer in [0, {keypoints.shape[1]}]",
            lambda i: anns[i]["num_keypoints"],
        )
    return np.where(missing | ~has_keypoints, visible, count).astype(np.int64)


def keypoint_extent(keypoints: np.ndarray) -> np.ndarray:
    """[x0, y0, x1 - x0, y1 - y0] over all keypoints (any visibility), as pycocotools' loadRes.

    >>> keypoint_extent(np.array([[[1., 2., 1.], [4., 0., 0.]]])).tolist()
    [[1.0, 0.0, 3.0, 2.0]]
    """
    x, y = keypoints[:, :, 0], keypoints[:, :, 1]
    x0, x1, y0, y1 = x.min(axis=1), x.max(axis=1), y.min(axis=1), y.max(axis=1)
    return np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)
