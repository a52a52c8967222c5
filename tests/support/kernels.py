"""The kernel-vs-twin scaffolding, once, and one input generator per registered kernel.

Which kernels are built, forcing the twins, comparing bits (tests/unit/test_kernels.py drives
the generators).

Every generator takes a seeded ``np.random.Generator`` and a case number and returns the
``(args, kwargs)`` a kernel and its twin take (``deteval._speedups.Kernel.run`` / ``.twin``). Case
0 is an empty input where the kernel can be called on one; the others mix ordinary values with
the special ones: NaN (both signs), +-inf, -0.0, subnormals, the largest finite floats, and int32
boundaries in integer columns.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from deteval import _speedups

#: ``DETEVAL_REQUIRE_EXTENSION=1`` (CI after a build): a kernel that is not built is a failure.
REQUIRE = not _speedups.DISABLED and os.environ.get(_speedups.ENV_REQUIRE, "").strip() not in ("", "0")

NAN = float("nan")
SPECIAL = (
    NAN,
    -NAN,
    float("inf"),
    -float("inf"),
    0.0,
    -0.0,
    5e-324,  # the smallest subnormal
    -5e-324,
    2.2250738585072014e-308,  # the smallest normal
    1e-310,  # a subnormal
    1.7976931348623157e308,
    -1.7976931348623157e308,
)
ORDINARY = (0.0, 0.5, 1.0, 2.0, 3.0, 10.0, -1.0, 0.1 + 0.2, 1 - 1e-10)
IOU_VALUES = (0.0, 0.3, 0.5, 0.55, 0.7, 0.9, 1.0, 1 - 1e-10)
#: int32 boundaries (and next to them) for integer columns.
INT32_EDGES = (-(2**31), -(2**31) + 1, -1, 0, 1, 2**31 - 2, 2**31 - 1)


def loaded(module: str) -> bool:
    """Whether the compiled ``module`` is built, current and enabled."""
    return _speedups.load(module) is not None


def needs_kernel(module: str) -> pytest.MarkDecorator:
    """Skip when ``module`` is not built.

    Under ``DETEVAL_REQUIRE_EXTENSION=1`` its absence fails at import (``_speedups.load`` raises).
    """
    return pytest.mark.skipif(not loaded(module), reason=f"{module} is not built or DETEVAL_NO_EXTENSION=1")


def twins_only(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make :func:`deteval._speedups.dispatch` run the twins of ``modules`` (all when none given)."""
    for module in modules or tuple(_speedups.ABI):
        monkeypatch.setitem(_speedups._LOADED, module, None)


def bits(a: Any) -> np.ndarray:
    """An array as comparable bits: float64 as int64 (NaN payloads and signed zeros count)."""
    a = np.ascontiguousarray(a)
    return a.view(np.int64) if a.dtype == np.float64 else a


def assert_identical(got: Any, want: Any, where: str = "result") -> None:
    """Assert ``got`` is ``want``, to the bit.

    Arrays of the same dtype, shape and bits; tuples, lists and dataclasses field by field;
    anything else equal.
    """
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), where
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
        assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
        assert np.array_equal(bits(got), bits(want)), f"{where}: {got!r} != {want!r}"
    elif dataclasses.is_dataclass(want) and not isinstance(want, type):
        assert type(got) is type(want), where
        for field in dataclasses.fields(want):
            assert_identical(getattr(got, field.name), getattr(want, field.name), f"{where}.{field.name}")
    elif isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)), where
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_identical(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


# ---- value generators ----------------------------------------------------------------------------


def floats(rng: np.random.Generator, n: int, values: tuple = ORDINARY, special: float = 0.3) -> np.ndarray:
    """float64 (n,): ``values`` with a share ``special`` of SPECIAL ones."""
    out = rng.choice(np.array(values, dtype=np.float64), n) if n else np.zeros(0)
    is_special = rng.random(n) < special
    out[is_special] = rng.choice(np.array(SPECIAL), int(is_special.sum())) if is_special.any() else 0.0
    return out


def ious(rng: np.random.Generator, n: int, special: float = 0.25) -> np.ndarray:
    return floats(rng, n, IOU_VALUES, special)


def index_dtype(rng: np.random.Generator) -> type:
    return np.int32 if rng.random() < 0.5 else np.int64


# ---- one generator per registered kernel ---------------------------------------------------------

Case = tuple[tuple, dict]


def _matching_problem(rng: np.random.Generator, case: int, most_groups: int = 5) -> dict:
    n_groups = 0 if case == 0 else int(rng.integers(1, most_groups + 1))
    sizes = rng.integers(0, [6, 5], (n_groups, 2)) if n_groups else np.zeros((0, 2), np.int64)
    det_key = np.repeat(np.arange(n_groups), sizes[:, 0]).astype(np.int64)
    gt_key = np.repeat(np.arange(n_groups), sizes[:, 1]).astype(np.int64)
    pair_det, pair_gt = np.nonzero(det_key[:, None] == gt_key[None, :])
    n_det, n_gt, n_area = len(det_key), len(gt_key), int(rng.integers(1, 3))
    reusable = rng.random(n_gt) < 0.2
    return dict(
        pair_det=pair_det.astype(np.int64),
        pair_gt=pair_gt.astype(np.int64),
        pair_iou=ious(rng, len(pair_det)),
        det_key=det_key,
        n_det=n_det,
        n_gt=n_gt,
        iou_thresholds=ious(rng, int(rng.integers(1, 4)), special=0.15),
        gt_is_ignored=(rng.random((n_area, n_gt)) < 0.2) | reusable[None, :],
        gt_is_reusable=reusable,
        gt_is_unmatchable=rng.random(n_gt) < 0.1,
        det_is_out_of_range=rng.random((n_area, n_det)) < 0.2,
        strict=bool(rng.random() < 0.5),
        narrow=bool(rng.random() < 0.3),
    )


def _match_coco(rng: np.random.Generator, case: int, most_groups: int = 5) -> Case:
    from deteval.matching import CocoMatchInput

    p = _matching_problem(rng, case, most_groups)
    del p["n_det"]
    gt_ties = "first" if rng.random() < 0.15 else "last"
    return (CocoMatchInput(**p, gt_ties=gt_ties),), {}


def _voc_options(p: dict) -> dict:
    return {
        k: p[k] for k in ("n_det", "n_gt", "iou_thresholds", "gt_is_ignored", "det_is_out_of_range", "strict")
    }


def _match_voc(rng: np.random.Generator, case: int) -> Case:
    from deteval.matching import VocMatchInput

    p = _matching_problem(rng, case)
    options = dict(_voc_options(p), narrow=p["narrow"])
    return (VocMatchInput(p["pair_det"], p["pair_gt"], p["pair_iou"], **options),), {}


def _match_ultralytics(rng: np.random.Generator, case: int) -> Case:
    p = _matching_problem(rng, case)
    return (p["pair_det"], p["pair_gt"], p["pair_iou"]), _voc_options(p)


def _match_group_of(rng: np.random.Generator, case: int) -> Case:
    from deteval.matching import VocMatchInput, _match_voc_numpy

    p = _matching_problem(rng, case)
    with np.errstate(all="ignore"):
        stage_one = _match_voc_numpy(
            VocMatchInput(p["pair_det"], p["pair_gt"], p["pair_iou"], **_voc_options(p))
        )
    options = {k: p[k] for k in ("iou_thresholds", "gt_is_ignored", "strict")}
    return (stage_one, p["pair_det"], p["pair_gt"], ious(rng, len(p["pair_det"]))), options


def _accumulate(rng: np.random.Generator, case: int, scale: int = 1) -> Case:
    from deteval.accumulate import recall_thresholds
    from deteval.protocol import get_protocol

    n_area, n_thr, n_class = (int(x) for x in rng.integers(1, [3, 3, 4 * scale]))
    n_det = 0 if case == 0 else int(rng.integers(1, 24 * scale))
    outcome = rng.integers(0, 3, (n_area * n_thr, n_det))
    det_class = rng.integers(0, n_class, n_det)
    det_score = floats(rng, n_det, (0.1, 0.3, 0.5, 0.9, 1.0))
    det_rank = rng.choice(np.array([0, 1, 2, 3, 4, 2**31 - 1]), n_det)
    n_positive = rng.integers(0, 6, (n_class, n_area))
    with np.errstate(all="ignore"):
        ranking = np.lexsort((-det_score, det_class))  # as evaluate ranks them
    dtype = index_dtype(rng)
    coco = get_protocol("coco")
    protocol = coco.replace(
        name="generated",
        iou_thresholds=[0.5 + 0.1 * t for t in range(n_thr)],
        area_ranges=coco.area_ranges[:n_area],
        max_dets=[None, (1,), (1, 3)][int(rng.integers(0, 3))],
        ap_method=str(rng.choice(["101_point", "101_point", "11_point", "11_point", "all_point", "step"])),
        score_ties="threshold" if rng.random() < 0.15 else "ranked",
    )
    args = (
        outcome == 1,
        outcome == 2,
        det_score,
        det_class.astype(dtype),
        det_rank.astype(dtype),
        ranking.astype(dtype),
        n_positive.astype(np.int64),
        protocol,
        recall_thresholds(protocol),
    )
    return args, {}


def _group_column(rng: np.random.Generator, n: int) -> np.ndarray:
    dtype = index_dtype(rng)
    if rng.random() < 0.2:  # int32 boundaries: values the packed codes cannot hold compactly
        return rng.choice(np.array(INT32_EDGES), n).astype(dtype)
    return rng.integers(0, int(rng.integers(1, 9)), n).astype(dtype)


def _sort_runs(rng: np.random.Generator, case: int) -> Case:
    n = int(rng.integers(2, 60))
    keys = (
        floats(rng, n, (0.1, 0.5, 0.9, 1.0, -0.0)),
        *(_group_column(rng, n) for _ in range(int(rng.integers(1, 3)))),
    )
    return (keys,), {}


def _group_then_score(rng: np.random.Generator, case: int, scale: int = 1) -> Case:
    n = int(rng.integers(1, 60 * scale))
    group = (
        _group_column(rng, n) if scale == 1 else rng.integers(0, max(1, n // 4), n).astype(index_dtype(rng))
    )
    return (group, floats(rng, n, (0.1, 0.5, 0.9, 1.0, -0.0))), {}


def _tide_points(rng: np.random.Generator, case: int) -> Case:
    n_class = int(rng.integers(1, 9))
    n = 0 if case == 0 else int(rng.integers(1, 400))
    cls = np.sort(rng.integers(0, n_class, n)).astype(np.int64)
    is_tp = rng.random(n) < rng.random()
    n_positive = rng.integers(0, 60, n_class).astype(np.int64)
    n_positive[rng.random(n_class) < 0.2] = 0
    return (cls, is_tp, n_positive, rng.random(n_class) < 0.85), {}


def _image_pairs(rng: np.random.Generator, case: int) -> tuple:
    from deteval.decomposition import ImagePairs

    n_det, n_gt, n_class = (int(x) for x in rng.integers(1, [40, 20, 5]))
    per_det = rng.integers(0, 6, n_det) * (case != 0)
    pair_det = np.repeat(np.arange(n_det), per_det).astype(np.int64)
    pair_gt = rng.integers(0, n_gt, len(pair_det)).astype(np.int64)
    pairs = ImagePairs(pair_det, pair_gt, ious(rng, len(pair_det)), "continuous", n_det, n_gt)
    rows = rng.permutation(n_det)[: int(rng.integers(0, n_det + 1))].astype(np.int64)
    return pairs, rows, n_gt, n_class


def _pair_maxima(rng: np.random.Generator, case: int) -> Case:
    pairs, rows, n_gt, n_class = _image_pairs(rng, case)
    det_class = rng.integers(0, n_class, len(rows)).astype(np.int64)
    gt_class = rng.integers(0, n_class, n_gt).astype(np.int64)
    masks = rng.random(n_gt) < 0.8, rng.random(n_gt) < 0.4
    return (pairs.run_start, pairs.pair_gt, pairs.iou, rows, det_class, gt_class, *masks), {}


def _run_first_max(rng: np.random.Generator, case: int) -> Case:
    pairs, rows, n_gt, _ = _image_pairs(rng, case)
    return (pairs, rows, rng.random(n_gt) < 0.8), {}


def _thresholds_table(rng: np.random.Generator, case: int) -> Case:
    n_col = int(rng.integers(1, 7))
    npos = rng.choice(np.array([0, 1, 2, 3, 7, 40, 997, 4096, 10_007]), (int(rng.integers(1, 3)), n_col))
    grids = (np.linspace(0.0, 1.0, 101), np.arange(0, 1.1, 0.1), np.linspace(0, 1, 11))
    tiny = np.sort(rng.choice(np.array([-0.0, 0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 0.5, 1.0]), 5))
    rec_thr = tiny if case % 2 else grids[case % 3]
    return (npos.astype(np.int64), rec_thr), {}


def _weighted_counts(rng: np.random.Generator, case: int) -> Case:
    from deteval.stats.plan import _RecallOnly

    n_img = 0 if case == 0 else int(rng.integers(1, 50))
    n_pairs = 0 if n_img == 0 else int(rng.integers(0, 300))
    bounds = np.sort(rng.integers(0, n_pairs + 1, 21))
    bounds[0], bounds[-1] = 0, n_pairs  # some segments empty
    source = _RecallOnly(
        img=rng.integers(0, max(n_img, 1), n_pairs),
        count=rng.integers(1, 5, n_pairs),
        bounds=bounds.astype(np.int64),
    )
    return (source, rng.integers(0, 4, (int(rng.integers(1, 8)), n_img)).astype(np.int64)), {}


def _curve_row(rng: np.random.Generator, case: int) -> Case:
    import deteval
    from deteval.evaluate import match
    from deteval.stats import bootstrap_weights
    from deteval.stats.plan import _plan
    from deteval.stats.weighted import _weighted_counts_numpy
    from tests.crosscheck.generate import generate

    gt_dict, dt_list = generate(int(rng.integers(0, 2**31)), max_images=12, max_classes=4)
    gt = deteval.load_ground_truth(gt_dict)
    dt = deteval.load_detections(dt_list, gt)
    p = deteval.get_protocol(str(rng.choice(["coco", "voc2007", "voc2010"])))
    n = gt.n_images
    one_image = np.zeros(n, np.int64)
    one_image[0] = n  # one image drawn n times: most classes without positives, many tie copies
    w = np.vstack(
        [np.ones(n, np.int64), np.zeros(n, np.int64), one_image, bootstrap_weights(n, n=3, seed=case)]
    )
    plan = _plan(match(gt, dt, p), gt, p, w.max(axis=0))
    npos = np.zeros((len(w), plan.n_class * plan.n_area), dtype=np.int64)
    if len(plan.positives.img):
        npos = _weighted_counts_numpy(plan.positives, w)
    return (plan, plan.curves[max(plan.curves)], w, npos), {}


# ---- masks and keypoints (deteval.geometry._cmask, _ckeypoint) -----------------------------------


def random_masks(rng: np.random.Generator, n: int, size: tuple | None = None) -> list:
    """Pycocotools RLEs of many shapes: empty, full, noise, blocks, one pixel, thin lines."""
    from pycocotools import mask as mask_utils

    out = []
    for i in range(n):
        h, w = size or (int(rng.integers(1, 60)), int(rng.integers(1, 60)))
        kind = i % 6
        m = np.zeros((h, w), bool)
        if kind == 0:
            m = rng.random((h, w)) < rng.random()
        elif kind == 1 and h and w:
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            m[y0 : y0 + rng.integers(1, h + 1), x0 : x0 + rng.integers(1, w + 1)] = True
        elif kind == 3:
            m[:] = True
        elif kind == 4 and h and w:
            m[rng.integers(0, h), rng.integers(0, w)] = True
        elif kind == 5 and w:
            m[:, rng.integers(0, w)] = True
        out.append(mask_utils.encode(np.asfortranarray(m.astype(np.uint8))))
    return out


def runs_masks(rng: np.random.Generator, n: int, size: tuple) -> list:
    """Pycocotools RLEs made from run lists with runs of length 0 anywhere and long runs.

    ``frPyObjects`` of an uncompressed RLE keeps its runs as given: pycocotools' encoder never
    writes a run of 0 after the first, but such strings reach it from users.
    """
    h, w = size
    total = h * w
    out = []
    for _ in range(n):
        cuts = np.sort(rng.integers(0, total + 1, int(rng.integers(0, 12))))
        runs = np.diff(np.r_[0, cuts, total]).tolist()
        for _ in range(int(rng.integers(0, 4))):  # runs of length 0
            runs.insert(int(rng.integers(0, len(runs) + 1)), 0)
        out.append({"size": [h, w], "counts": rle_string(runs)})
    return out


def rle_string(runs: list) -> bytes:
    """The compressed RLE string of ``runs``, as pycocotools' ``rleToString`` writes it.

    A plain twin of ``rleToString`` in ``common/maskApi.c`` of pycocotools 2.0.11 (the release the
    test extra installs). Written here because ``frPyObjects`` of an uncompressed RLE with long runs
    reads past its own buffer (AddressSanitizer: heap-buffer-overflow in ``_toString``'s
    ``strlen``), so under the sanitized build the generator itself aborted. Equal to
    ``frPyObjects`` where that stays in bounds (test_kernels.py checks it on 300 run lists).
    """
    out = bytearray()
    for i, run in enumerate(runs):
        x = int(run) - (int(runs[i - 2]) if i > 2 else 0)
        more = True
        while more:
            c = x & 0x1F
            x >>= 5  # arithmetic, as C's >> on the long it is in maskApi.c
            more = x != -1 if c & 0x10 else x != 0
            out.append((c | 0x20 if more else c) + 48)
    return bytes(out)


#: Strings that are not pycocotools' encoding, or are and decode to odd masks: empty, a run cut
#: by the end, characters outside '0'..'o', runs of more than 7 groups, a NUL.
CORRUPT_COUNTS = (
    b"",
    b"0",
    b"1",
    b"0P",
    b"0!",
    b"P",
    b"o",
    b"oooooooo0",
    b"OOOOOOO0",
    b"\x00",
    b"0" * 50,
    b"52",
)


#: Thread counts the threaded mask kernels are asked for (more than rows included): the values
#: must be the twin's whatever the count.
MASK_THREADS = (1, 2, 3, 7, 64, 1000)


def mask_threads_of(rng: np.random.Generator, case: int) -> int:
    """A thread count for case ``case``: one in three cases on one thread, the others drawn."""
    return 1 if case % 3 == 0 else int(rng.choice(MASK_THREADS))


def _summarise_compressed(rng: np.random.Generator, case: int) -> Case:
    if case == 0:
        return (b"", np.zeros(1, np.int64), np.zeros((0, 2), np.int64)), {}
    strings, sizes = [], []
    for rle in random_masks(rng, int(rng.integers(0, 12))):
        strings.append(rle["counts"])
        sizes.append(rle["size"])
    alphabet = np.frombuffer(bytes(range(40, 120)), np.uint8)  # inside and outside '0'..'o'
    valid = np.frombuffer(bytes(range(48, 112)), np.uint8)
    for _ in range(int(rng.integers(0, 12))):
        text = bytes(rng.choice(valid if rng.random() < 0.6 else alphabet, int(rng.integers(1, 30))))
        strings.append(text)
        sizes.append([int(rng.integers(0, 40)), int(rng.integers(0, 40))])
    for text in rng.choice(np.array(CORRUPT_COUNTS, dtype=object), int(rng.integers(0, 5))):
        strings.append(text)
        sizes.append([0, 0] if rng.random() < 0.5 else [1, int(rng.integers(0, 3))])
    # 0 x n, n x 0 and 0 x 0 masks; sizes beyond uint32 (no box); a big mask (runs of several
    # groups, negative deltas)
    strings += [b"0", b"0", b"", b"0", b"1"]
    sizes += [[0, 5], [5, 0], [0, 0], [2**32, 0], [1, 1]]
    if case == 1:
        from pycocotools import mask as mask_utils

        big = np.zeros((3000, 2000), np.uint8)
        big[5:2900, 100:1999] = 1
        big[1000:1001, :] = 0
        rle = mask_utils.encode(np.asfortranarray(big))
        strings.append(rle["counts"])
        sizes.append(rle["size"])
    # some strings whose runs happen to add up to their size
    from deteval.masks.rle import _check_compressed, _compressed_run_sums

    ok = [i for i, p in enumerate(_check_compressed(strings).tolist()) if p == 0]
    for i, total in zip(ok, _compressed_run_sums([strings[i] for i in ok]).tolist(), strict=True):
        if 0 < total < 5000 and rng.random() < 0.5:
            sizes[i] = [1, total] if rng.random() < 0.5 else [total, 1]
    order = rng.permutation(len(strings))
    strings = [strings[i] for i in order]
    offsets = np.r_[0, np.cumsum([len(t) for t in strings])].astype(np.int64)
    blob = b"".join(strings)
    blob_arg = blob if rng.random() < 0.7 else bytearray(blob)
    return (blob_arg, offsets, np.array(sizes, np.int64)[order]), {"threads": mask_threads_of(rng, case)}


def generated_polygons(rng: np.random.Generator, n: int) -> list:
    """(h, w, parts) records: outside the image, self-intersecting, tiny, degenerate, covers, far away."""
    records = []
    for i in range(n):
        h, w = int(rng.integers(1, 120)), int(rng.integers(1, 120))
        parts = []
        for _ in range(int(rng.integers(1, 4))):
            n_vertex = int(rng.integers(3, 12))
            kind = i % 9
            if kind == 0:  # anywhere within one image size around it; edges crossing
                p = rng.uniform(-w, 2 * w, (n_vertex, 2)) * [1, h / w]
            elif kind == 1:  # tiny
                p = rng.uniform(0, w, 2) + rng.uniform(-1.5, 1.5, (n_vertex, 2))
            elif kind == 2:  # half-pixel grid, a repeated vertex (a zero-length edge)
                p = rng.integers(0, 2 * max(w, h), (n_vertex, 2)) / 2.0
                p[1] = p[0]
            elif kind == 3:  # covers the whole image
                p = np.array([[-w, -h], [2 * w, -h], [2 * w, 2 * h], [-w, 2 * h]], float)
            elif kind == 4:  # a bow tie (self-intersecting)
                p = np.array([[0, 0], [w, h], [w, 0], [0, h]], float) + rng.uniform(-2, 2, (4, 2))
            elif kind == 5:  # degenerate: collinear, or one point repeated
                t = rng.uniform(-0.5, 1.5, n_vertex)[:, None]
                p = (
                    np.c_[t * w, t * h]
                    if rng.random() < 0.5
                    else np.tile(rng.uniform(0, w, 2), (n_vertex, 1))
                )
            elif kind == 6:  # wholly outside the image
                p = rng.uniform(0, 3, (n_vertex, 2)) + [w + 2, h + 2] * rng.choice([-1, 1], 2)
            elif kind == 7:  # far away: beyond the kernel's +-2**26, a tiny polygon (declined)
                p = rng.choice([-1, 1], 2) * 2**26 + rng.uniform(0, 3, (n_vertex, 2))
            else:  # star-shaped, simple
                angle = np.sort(rng.uniform(0, 2 * np.pi, n_vertex))
                radius = rng.uniform(0.5, max(1, min(w, h) / 2), n_vertex)
                p = np.c_[w / 2 + radius * np.cos(angle), h / 2 + radius * np.sin(angle)]
            parts.append(p.round(int(rng.integers(0, 4))))
        records.append((h, w, parts))
    return records


def polygon_columns(records: list, rows: np.ndarray | None = None) -> tuple:
    """``(points, point_start, part_first, part_stop, sizes)`` of :func:`generated_polygons` records.

    ``rows``: the records asked for, in that order (default all), out of the columns of all of them.
    """
    parts = [p for _, _, ps in records for p in ps]
    points = np.concatenate(parts) if parts else np.zeros((0, 2))
    point_start = np.r_[0, np.cumsum([len(p) for p in parts])].astype(np.int64)
    part_start = np.r_[0, np.cumsum([len(ps) for _, _, ps in records])].astype(np.int64)
    sizes = np.array([[h, w] for h, w, _ in records], np.int64).reshape(-1, 2)
    rows = np.arange(len(records)) if rows is None else np.asarray(rows, dtype=np.int64)
    return (
        np.ascontiguousarray(points, dtype=np.float64),
        point_start,
        np.ascontiguousarray(part_start[rows]),
        np.ascontiguousarray(part_start[rows + 1]),
        np.ascontiguousarray(sizes[rows]),
    )


def _rasterise(rng: np.random.Generator, case: int) -> Case:
    n = 0 if case == 0 else int(rng.integers(1, 40))
    records = generated_polygons(rng, n)
    if case % 7 == 3:  # only near polygons: the kernel runs on every case but these
        records = [r for r in records if not (np.abs(np.concatenate(r[2])) >= 2**26).any()]
    rows = None
    if case % 2 and records:  # some of the records, in any order, out of the columns of all
        rows = rng.permutation(len(records))[: int(rng.integers(1, len(records) + 1))]
    return polygon_columns(records, rows), {"threads": mask_threads_of(rng, case)}


def _pair_iou(rng: np.random.Generator, case: int) -> Case:
    from deteval.geometry.raster import RasterMasks

    n_image = 0 if case == 0 else int(rng.integers(1, 5))
    det_rles, gt_rles, pairs = [], [], []
    for image in range(n_image):
        h, w = (0, 0) if rng.random() < 0.1 else (int(rng.integers(1, 50)), int(rng.integers(1, 50)))
        if image == 1 and case % 5 == 1:  # runs near 2**26 (pycocotools' own iou crashes on such
            h, w = 8000, 8000  # masks of 16000 x 16000: glibc's malloc assertion)
        d0, g0 = len(det_rles), len(gt_rles)
        masks = random_masks if h * w < 10**6 else runs_masks
        det_rles += masks(rng, int(rng.integers(1, 6)), (h, w))
        gt_rles += masks(rng, int(rng.integers(1, 5)), (h, w))
        if case % 2:  # masks with runs of length 0 (pycocotools' toBbox of those is its own)
            det_rles += runs_masks(rng, int(rng.integers(1, 4)), (h, w))
            gt_rles += runs_masks(rng, int(rng.integers(1, 4)), (h, w))
        for d in range(d0, len(det_rles)):
            for g in range(g0, len(gt_rles)):
                if rng.random() < 0.8:
                    pairs.append((d, g, image))
    det, gt = RasterMasks.from_rles(det_rles), RasterMasks.from_rles(gt_rles)
    table = np.array(pairs, np.int64).reshape(-1, 3)[rng.permutation(len(pairs))]
    crowd = rng.random(len(gt_rles)) < 0.3
    args = (det, gt, table[:, 0], table[:, 1], crowd[table[:, 1]], table[:, 2])
    return args, {"threads": mask_threads_of(rng, case)}


def _oks_terms(rng: np.random.Generator, case: int) -> Case:
    from deteval.geometry.keypoints import COCO_KEYPOINT_SIGMAS

    n_kp = 17 if case % 3 == 0 else int(rng.integers(1, 20))
    n_gt, n_det = (int(x) for x in rng.integers(1, [12, 15]))
    gt = np.empty((n_gt, n_kp, 3))
    gt[:, :, :2] = rng.uniform(0, 200, (n_gt, n_kp, 2)).round(int(rng.integers(0, 3)))
    gt[:, :, 2] = rng.choice([0.0, 1.0, 2.0], (n_gt, n_kp), p=[0.4, 0.2, 0.4])
    gt[: n_gt // 3, :, 2] = 0  # ground truth without labelled keypoints: the doubled-box rule
    det = np.empty((n_det, n_kp, 3))
    det[:, :, :2] = rng.uniform(-250, 450, (n_det, n_kp, 2))
    det[:, :, 2] = rng.uniform(0, 1, (n_det, n_kp))
    box = np.c_[rng.uniform(0, 150, (n_gt, 2)), rng.uniform(0, 80, (n_gt, 2))]
    area = rng.choice(np.array([0.0, 1.0, 1e-300, 5e-324, 50.0, 4000.0, 1e300]), n_gt)  # zero-area objects
    if case % 2:  # special values: NaN (declined), +-inf, -0.0, subnormals, huge coordinates
        for a in (gt[:, :, :2], det[:, :, :2], box, area[:, None]):
            flat = a.reshape(-1)
            hit = rng.random(len(flat)) < 0.1
            flat[hit] = rng.choice(np.array(SPECIAL + (1e200, -1e200)), int(hit.sum()))
        if case % 4 == 1:  # keep the NaNs out of some cases, so that the kernel runs on the rest
            for a in (gt, det, box):
                a[np.isnan(a)] = np.inf
    gt_rows = rng.integers(0, n_gt, 0 if case == 0 else int(rng.integers(1, 80)))
    det_rows = rng.integers(0, n_det, len(gt_rows))
    sigmas = COCO_KEYPOINT_SIGMAS if n_kp == 17 else rng.uniform(0.02, 0.11, n_kp)
    return (gt, box, area, det, gt_rows, det_rows, sigmas), {}


def _box_pairs(rng: np.random.Generator, case: int, scale: int = 1) -> Case:
    """Pairs of sorted group keys and their boxes (``_cmatch.box_pairs``'s arguments).

    Groups on one side only, empty groups, rows into boxes with touching, nested, zero-size and
    negative-size boxes, crowds; special coordinates (declined: the twin rescales them) in some cases.
    """
    n_key = 0 if case == 0 else int(rng.integers(1, 6 * scale + 1))
    keys = (
        np.sort(rng.choice(np.arange(-3, 3 * n_key + 4), n_key, replace=False)) if n_key else np.zeros(0, int)
    )
    det_key = np.sort(rng.choice(keys, int(rng.integers(0, 8 * scale + 1)))) if n_key else np.zeros(0, int)
    gt_key = np.sort(rng.choice(keys, int(rng.integers(0, 6 * scale + 1)))) if n_key else np.zeros(0, int)
    grid = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 10.0, 0.1 + 0.2, 1 - 1e-10, -1.0])
    det_box = rng.choice(grid, (len(det_key) + 3, 4))
    gt_box = np.concatenate([rng.choice(grid, (len(gt_key) + 2, 4)), det_box[:2]])  # equal boxes
    if case % 4 == 3:  # special coordinates, also 1e200 (overflowing sums and products)
        for box in (det_box, gt_box):
            flat = box.reshape(-1)
            hit = rng.random(len(flat)) < 0.05
            flat[hit] = rng.choice(np.array(SPECIAL + (1e200, -1e200)), int(hit.sum()))
    det_rows = rng.integers(0, len(det_box), len(det_key)).astype(index_dtype(rng))
    gt_rows = rng.integers(0, len(gt_box), len(gt_key)).astype(index_dtype(rng))
    crowd = rng.random(len(gt_key)) < 0.3
    return (
        det_key.astype(np.int64),
        gt_key.astype(np.int64),
        det_rows,
        gt_rows,
        det_box,
        gt_box,
        crowd,
        1,
    ), {}


#: The input generator of every registered kernel, and how many cases the harness draws.
CASES: dict[str, tuple[Callable[[np.random.Generator, int], Case], int]] = {
    "_cmatch.match_coco": (_match_coco, 300),
    "_cmatch.match_voc": (_match_voc, 300),
    "_cmatch.box_pairs": (_box_pairs, 300),
    "_cmatch.match_ultralytics": (_match_ultralytics, 20),
    "_cmatch.match_group_of": (_match_group_of, 20),
    "_cacc.accumulate": (_accumulate, 300),
    "_csort.sort_runs_by_score": (_sort_runs, 200),
    "_csort.order_by_group_then_score": (_group_then_score, 200),
    "_csort.rank_by_group_then_score": (_group_then_score, 200),
    "_canalyze.tide_points": (_tide_points, 150),
    "_canalyze.pair_maxima": (_pair_maxima, 300),
    "_canalyze.run_first_max": (_run_first_max, 300),
    "_cboot.thresholds_table": (_thresholds_table, 60),
    "_cboot.weighted_counts": (_weighted_counts, 60),
    "_cboot.curve_row": (_curve_row, 12),
    "_cmask.summarise_compressed": (_summarise_compressed, 200),
    "_cmask.rasterise": (_rasterise, 60),
    "_cmask.pair_iou": (_pair_iou, 150),
    "_ckeypoint.oks_terms": (_oks_terms, 200),
}

#: The kernels that split their work over threads (a ``threads`` argument, deteval/_parallel.h):
#: each with a generator of larger inputs (many groups or classes), so that the parts differ.
THREADED: dict[str, Callable[[np.random.Generator, int], Case]] = {
    "_cacc.accumulate": lambda rng, case: _accumulate(rng, case, scale=40),
    "_csort.order_by_group_then_score": lambda rng, case: _group_then_score(rng, case, scale=100),
    "_csort.rank_by_group_then_score": lambda rng, case: _group_then_score(rng, case, scale=100),
    "_cmatch.match_coco": lambda rng, case: _match_coco(rng, case, most_groups=300),
    "_cmatch.box_pairs": lambda rng, case: _box_pairs(rng, case, scale=60),
}


def with_threads(name: str, case: Case, threads: int) -> Case:
    """A case of threaded kernel ``name`` (its generator's arguments) run on ``threads`` threads."""
    args, kwargs = case
    if name == "_cmatch.match_coco":  # one CocoMatchInput value
        return (dataclasses.replace(args[0], threads=threads),), kwargs
    if name == "_cmatch.box_pairs":  # threads is the last positional argument
        return (*args[:-1], threads), kwargs
    return args, {**kwargs, "threads": threads}


#: Kernels whose result is a permutation in a narrower index dtype than the twin's (int32 below
#: 2**31 rows, by design: grouping.by_group_then_descending): compared as int64 values.
PERMUTATION_DTYPE_MAY_DIFFER = frozenset({"_csort.order_by_group_then_score"})


#: Kernels whose matches come as int32 rows and int8/int16 lanes when asked (``narrow``), where the
#: twin keeps int64: compared as int64 values.
NARROW_MAY_DIFFER = frozenset({"_cmatch.match_coco", "_cmatch.match_voc"})


def comparable(name: str, value: Any) -> Any:
    """A kernel's result as compared with its twin's (the narrower dtypes above as int64)."""
    if name in PERMUTATION_DTYPE_MAY_DIFFER and isinstance(value, np.ndarray):
        return value.astype(np.int64)
    if name in NARROW_MAY_DIFFER and dataclasses.is_dataclass(value) and hasattr(value, "match_lane"):
        rows = {k: getattr(value, k).astype(np.int64) for k in ("match_lane", "match_det", "match_gt")}
        return dataclasses.replace(value, **rows)
    return value


def checked_dispatch(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every kernel call also run the twin and assert the same result, bit for bit.

    Returns the list the names of the kernels that ran compiled (not declined) are appended to, in
    call order: a test that drives a whole evaluation through it checks every kernel it reaches.
    """
    ran: list[str] = []

    def checked(name: str, *args: Any, **kwargs: Any) -> Any:
        kernel = _speedups._KERNELS[name]
        want = kernel.twin(*args, **kwargs)
        if _speedups.module_of(name) is not None:
            got = kernel.run(*args, **kwargs)
            if not isinstance(got, _speedups.Decline):
                assert_identical(comparable(name, got), comparable(name, want), name)
                ran.append(name)
        return want

    monkeypatch.setattr(_speedups, "dispatch", checked)
    return ran


def _match_adapter(kind: str, compiled: bool) -> Callable[..., Any]:
    """A matching function of ``kind`` ("coco", "voc") on ``match_coco`` / ``match_voc``'s arguments.

    ``compiled``: the kernel's adapter, None when it declines; else the numpy twin.
    """
    from deteval import matching

    value = matching.CocoMatchInput if kind == "coco" else matching.VocMatchInput
    run = getattr(matching, f"_match_{kind}_{'compiled' if compiled else 'numpy'}")

    def call(*args: Any, **options: Any) -> Any:
        out = run(value(*args, **options))
        return None if isinstance(out, _speedups.Decline) else out

    return call


coco_numpy = _match_adapter("coco", compiled=False)
coco_kernel = _match_adapter("coco", compiled=True)
voc_numpy = _match_adapter("voc", compiled=False)
voc_kernel = _match_adapter("voc", compiled=True)
