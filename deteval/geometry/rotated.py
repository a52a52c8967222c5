"""Rotated (oriented) box overlaps: exact quadrilateral IoU and Ultralytics' ProbIoU.

Rotated boxes are stored as four corners, ``(n, 8)`` float64 ``x1 y1 x2 y2 x3 y3 x4 y4``
(``GroundTruth.rotated`` / ``Detections.rotated``): DOTA's polygons as they were read, and
``xywhr`` boxes converted once by :func:`corners_from_xywhr`.

* :func:`pair_polygon_iou` -- exact IoU of aligned pairs of quadrilaterals: convex pairs by a
  closed form vectorised over pairs (the intersection polygon's vertices are the corners of
  each inside the other and the edge crossings; ordered by angle, shoelace area), pairs whose
  axis-aligned envelopes do not overlap skipped, non-convex simple quadrilaterals by shapely.
* :func:`pair_probiou` -- Ultralytics' ``batch_probiou`` (Gaussian Hellinger distance) on
  ``xywhr`` boxes, its arithmetic and its ``eps`` as ``ultralytics/utils/metrics.py`` writes it.
* :func:`xywhr_from_corners` -- the minimum-area rectangle of four corners (what Ultralytics'
  ``xyxyxyxy2xywhr`` gets from ``cv2.minAreaRect``, in float64).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.errors import ConfigError, InputError, records_error

__all__ = [
    "corners_from_xywhr",
    "xywhr_from_corners",
    "polygon_area",
    "envelope_xyxy",
    "is_convex",
    "is_self_intersecting",
    "pair_polygon_iou",
    "pair_probiou",
    "ROTATED_IOU",
    "require_rotated",
    "rotated_pair_iou",
    "rotated_areas",
    "as_corners",
    "as_xywhr",
    "rotated_envelope",
    "rotated_area",
]

#: ``rotated_iou`` field values: exact polygon geometry, or Ultralytics' ProbIoU.
ROTATED_IOU = ("polygon", "probiou")


def corners_from_xywhr(xywhr: np.ndarray) -> np.ndarray:
    """Four corners ``(n, 8)`` of boxes ``(cx, cy, w, h, angle)``, angle in radians.

    The corners are Ultralytics' ``xywhr2xyxyxyxy``: ``c + v1 + v2``, ``c + v1 - v2``,
    ``c - v1 - v2``, ``c - v1 + v2`` with ``v1 = w/2 (cos r, sin r)`` and
    ``v2 = h/2 (-sin r, cos r)``; hotcoco's ``obb`` is the same rectangle (a positive angle
    turns the x axis towards the y axis, clockwise on an image whose y axis points down).

    Examples
    --------
    >>> corners_from_xywhr(np.array([[5.0, 5.0, 4.0, 2.0, 0.0]])).tolist()
    [[7.0, 6.0, 7.0, 4.0, 3.0, 4.0, 3.0, 6.0]]
    """
    x = np.asarray(xywhr, dtype=np.float64).reshape(-1, 5)
    cos, sin = np.cos(x[:, 4]), np.sin(x[:, 4])
    v1 = np.stack([x[:, 2] / 2 * cos, x[:, 2] / 2 * sin], axis=1)
    v2 = np.stack([-x[:, 3] / 2 * sin, x[:, 3] / 2 * cos], axis=1)
    c = x[:, :2]
    return np.concatenate([c + v1 + v2, c + v1 - v2, c - v1 - v2, c - v1 + v2], axis=1)


def polygon_area(corners: np.ndarray) -> np.ndarray:
    """Absolute shoelace area of quadrilaterals ``(n, 8)``.

    Examples
    --------
    >>> polygon_area(np.array([[0.0, 0, 2, 0, 2, 3, 0, 3]])).tolist()
    [6.0]
    """
    return np.abs(_signed_area(np.asarray(corners, dtype=np.float64).reshape(-1, 4, 2)))


def _signed_area(p: np.ndarray) -> np.ndarray:
    """Shoelace area of polygons ``(..., k, 2)``: positive when counter-clockwise (y up)."""
    q = np.roll(p, -1, axis=-2)
    return 0.5 * (p[..., 0] * q[..., 1] - p[..., 1] * q[..., 0]).sum(axis=-1)


def envelope_xyxy(corners: np.ndarray) -> np.ndarray:
    """The axis-aligned envelope ``(n, 4)`` ``x1 y1 x2 y2`` of quadrilaterals ``(n, 8)``.

    Examples
    --------
    >>> envelope_xyxy(np.array([[1.0, 0, 2, 1, 1, 2, 0, 1]])).tolist()
    [[0.0, 0.0, 2.0, 2.0]]
    """
    c = np.asarray(corners, dtype=np.float64).reshape(-1, 8)
    xs, ys = c[:, 0::2], c[:, 1::2]
    return np.stack([xs.min(axis=1), ys.min(axis=1), xs.max(axis=1), ys.max(axis=1)], axis=1)


def _turns(p: np.ndarray) -> np.ndarray:
    """Cross products of consecutive edges at each corner of ``(n, 4, 2)`` polygons."""
    e = np.roll(p, -1, axis=1) - p
    e_next = np.roll(e, -1, axis=1)
    return e[..., 0] * e_next[..., 1] - e[..., 1] * e_next[..., 0]


def is_convex(corners: np.ndarray) -> np.ndarray:
    """Whether each quadrilateral ``(n, 8)`` is convex (its turns never change sign).

    Degenerate quadrilaterals (zero area: a segment or a point) count as convex.

    Examples
    --------
    >>> is_convex(np.array([[0.0, 0, 2, 0, 2, 2, 0, 2], [0.0, 0, 2, 0, 0.5, 0.5, 0, 2]])).tolist()
    [True, False]
    """
    t = _turns(np.asarray(corners, dtype=np.float64).reshape(-1, 4, 2))
    return np.asarray(~((t > 0).any(axis=1) & (t < 0).any(axis=1)))


def _segments_cross(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Whether segments ``ab`` and ``cd`` cross at a point interior to both."""

    def orient(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        return (q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1]) - (q[..., 1] - p[..., 1]) * (
            r[..., 0] - p[..., 0]
        )

    o1, o2, o3, o4 = orient(a, b, c), orient(a, b, d), orient(c, d, a), orient(c, d, b)
    return (o1 * o2 < 0) & (o3 * o4 < 0)


def is_self_intersecting(corners: np.ndarray) -> np.ndarray:
    """Whether each quadrilateral ``(n, 8)``'s opposite edges cross (a "bow tie").

    Examples
    --------
    >>> is_self_intersecting(np.array([[0.0, 0, 2, 2, 2, 0, 0, 2], [0.0, 0, 2, 0, 2, 2, 0, 2]])).tolist()
    [True, False]
    """
    p = np.asarray(corners, dtype=np.float64).reshape(-1, 4, 2)
    return _segments_cross(p[:, 0], p[:, 1], p[:, 2], p[:, 3]) | _segments_cross(
        p[:, 1], p[:, 2], p[:, 3], p[:, 0]
    )


def _counter_clockwise(p: np.ndarray) -> np.ndarray:
    """``(m, 4, 2)`` polygons in counter-clockwise order (reversed where clockwise)."""
    flip = _signed_area(p) < 0
    out = p.copy()
    out[flip] = p[flip, ::-1]
    return out


def _convex_intersection_area(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Intersection area of aligned convex counter-clockwise quadrilaterals ``(m, 4, 2)``.

    The intersection of two convex polygons is the convex polygon whose vertices are among: the
    corners of each inside the other, and the crossings of their edges. Those (up to 24) points
    are ordered by angle around their mean and their shoelace area taken; points not in the set
    are replaced by the first point of the set, which adds zero area.
    """
    m = len(p)
    if m == 0:
        return np.zeros(0, dtype=np.float64)
    # A tolerance relative to the pair's extent: a corner on the other's edge counts as inside.
    scale = np.maximum(np.abs(p).reshape(m, -1).max(axis=1), np.abs(q).reshape(m, -1).max(axis=1))
    tol = (np.maximum(scale, 1.0) ** 2 * 1e-12)[:, None, None]

    def inside(points: np.ndarray, poly: np.ndarray) -> np.ndarray:  # (m, 4) inside (m, 4, 2)
        e0 = poly  # (m, 4, 2) edge starts
        e = np.roll(poly, -1, axis=1) - poly
        rel = points[:, :, None, :] - e0[:, None, :, :]  # (m, 4 points, 4 edges, 2)
        cross = e[:, None, :, 0] * rel[..., 1] - e[:, None, :, 1] * rel[..., 0]
        return (cross >= -tol).all(axis=2)

    p_in_q, q_in_p = inside(p, q), inside(q, p)
    # Edge crossings: p's edge i (a -> b) with q's edge j (c -> d).
    a = p[:, :, None, :]
    b = np.roll(p, -1, axis=1)[:, :, None, :]
    c = q[:, None, :, :]
    d = np.roll(q, -1, axis=1)[:, None, :, :]
    r, s = b - a, d - c
    den = r[..., 0] * s[..., 1] - r[..., 1] * s[..., 0]  # (m, 4, 4)
    ca = c - a
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (ca[..., 0] * s[..., 1] - ca[..., 1] * s[..., 0]) / den
        u = (ca[..., 0] * r[..., 1] - ca[..., 1] * r[..., 0]) / den
    has_cross = (den != 0) & (t >= 0) & (t <= 1) & (u >= 0) & (u <= 1)
    cross_pt = a + np.where(has_cross, t, 0.0)[..., None] * r
    points = np.concatenate([p, q, cross_pt.reshape(m, 16, 2)], axis=1)  # (m, 24, 2)
    valid = np.concatenate([p_in_q, q_in_p, has_cross.reshape(m, 16)], axis=1)
    n_valid = valid.sum(axis=1)
    centre = (points * valid[..., None]).sum(axis=1) / np.maximum(n_valid, 1)[:, None]
    angle = np.arctan2(points[..., 1] - centre[:, None, 1], points[..., 0] - centre[:, None, 0])
    angle = np.where(valid, angle, np.inf)
    order = np.argsort(angle, axis=1, kind="stable")
    ordered = np.take_along_axis(points, order[..., None], axis=1)
    is_kept = np.take_along_axis(valid, order, axis=1)
    ordered = np.where(is_kept[..., None], ordered, ordered[:, :1, :])
    area = _signed_area(ordered)
    return np.where(n_valid >= 3, np.maximum(area, 0.0), 0.0)


def _shapely_intersection_area(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Intersection area of aligned simple (possibly non-convex) quadrilaterals, by shapely."""
    import shapely

    gp = shapely.polygons(p)
    gq = shapely.polygons(q)
    return np.asarray(shapely.area(shapely.intersection(gp, gq)), dtype=np.float64)


def pair_polygon_iou(
    det_corners: np.ndarray,
    gt_corners: np.ndarray,
    gt_is_crowd: np.ndarray,
    *,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    det_source: str = "<detections>",
    gt_source: str = "<ground truth>",
) -> np.ndarray:
    """Exact IoU of the aligned pairs ``(det_rows[i], gt_rows[i])`` of quadrilaterals.

    Parameters
    ----------
    det_corners, gt_corners : float64 (n_det, 8), (n_gt, 8)
        Corners ``x1 y1 .. x4 y4`` in either winding.
    gt_is_crowd : bool (n_pair,)
        Pairs whose ground truth is a crowd region: the overlap is the intersection over the
        detection's area (IoA), as pycocotools does for crowd boxes.
    det_rows, gt_rows : int (n_pair,)
        The pairs.
    det_source, gt_source : str
        Named in the error of a self-intersecting quadrilateral.

    Returns
    -------
    float64 (n_pair,)
        IoU in [0, 1]; 0 where the union is empty (two degenerate boxes).

    Raises
    ------
    InputError
        A self-intersecting quadrilateral (corners not in boundary order) in a pair.

    Notes
    -----
    Pairs whose axis-aligned envelopes do not overlap are 0 without any polygon work (the
    DOTA devkit's pre-filter, without its +1: a pair its pre-filter keeps and this one does not
    has polygon IoU 0 in both). Convex pairs take the closed form, non-convex simple pairs
    shapely's exact intersection (the devkit's ``polyiou`` triangle fan is exact for both).

    Examples
    --------
    >>> sq = np.array([[0.0, 0, 2, 0, 2, 2, 0, 2]]); moved = np.array([[1.0, 0, 3, 0, 3, 2, 1, 2]])
    >>> pair_polygon_iou(moved, sq, np.array([False]), det_rows=np.array([0]), gt_rows=np.array([0])).tolist()
    [0.3333333333333333]
    """
    det_rows = np.asarray(det_rows, dtype=np.int64)
    gt_rows = np.asarray(gt_rows, dtype=np.int64)
    out = np.zeros(len(det_rows), dtype=np.float64)
    if not len(det_rows):
        return out
    d_env, g_env = envelope_xyxy(det_corners), envelope_xyxy(gt_corners)
    de, ge = d_env[det_rows], g_env[gt_rows]
    overlaps = (np.minimum(de[:, 2], ge[:, 2]) > np.maximum(de[:, 0], ge[:, 0])) & (
        np.minimum(de[:, 3], ge[:, 3]) > np.maximum(de[:, 1], ge[:, 1])
    )
    k = np.flatnonzero(overlaps)
    if not len(k):
        return out
    dr, gr = det_rows[k], gt_rows[k]
    p = det_corners[dr].reshape(-1, 4, 2)
    q = gt_corners[gr].reshape(-1, 4, 2)
    for corners, rows, source, what in (
        (det_corners, dr, det_source, "detection"),
        (gt_corners, gr, gt_source, "ground truth"),
    ):
        bad = np.unique(rows[is_self_intersecting(corners[rows])])
        if len(bad):
            raise records_error(
                source,
                f"{what} rotated box is a self-intersecting quadrilateral (its corners are not in "
                "boundary order), whose area is not defined",
                "4 corners in clockwise or counter-clockwise order",
                [(f"row {int(i)}", str(corners[i].tolist())) for i in bad[:5]],
                noun="rows",
                n_records=len(bad),
            )
    convex = is_convex(p.reshape(-1, 8)) & is_convex(q.reshape(-1, 8))
    inter = np.empty(len(k), dtype=np.float64)
    if convex.any():
        inter[convex] = _convex_intersection_area(
            _counter_clockwise(p[convex]), _counter_clockwise(q[convex])
        )
    if (~convex).any():
        inter[~convex] = _shapely_intersection_area(p[~convex], q[~convex])
    det_area = np.abs(_signed_area(p))
    gt_area = np.abs(_signed_area(q))
    crowd = np.asarray(gt_is_crowd, dtype=bool)[k]
    union = np.where(crowd, det_area, det_area + gt_area - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(union > 0, inter / union, 0.0)
    out[k] = np.clip(iou, 0.0, 1.0)
    return out


def _covariance(xywhr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ultralytics' ``_get_covariance_matrix``: (a, b, c) of ``[[a, c], [c, b]]``."""
    a = xywhr[:, 2] ** 2 / 12
    b = xywhr[:, 3] ** 2 / 12
    cos, sin = np.cos(xywhr[:, 4]), np.sin(xywhr[:, 4])
    cos2, sin2 = cos**2, sin**2
    return a * cos2 + b * sin2, a * sin2 + b * cos2, (a - b) * cos * sin


def pair_probiou(
    det_xywhr: np.ndarray,
    gt_xywhr: np.ndarray,
    *,
    det_rows: np.ndarray,
    gt_rows: np.ndarray,
    eps: float = 1e-7,
) -> np.ndarray:
    """Ultralytics' ProbIoU of the aligned pairs (``batch_probiou``, ``1 - Hellinger distance``).

    Parameters
    ----------
    det_xywhr, gt_xywhr : float64 (n_det, 5), (n_gt, 5)
        ``cx cy w h angle`` (radians).
    det_rows, gt_rows : int (n_pair,)
    eps : float
        Ultralytics' ``eps=1e-7``, added where it adds it.

    Returns
    -------
    float64 (n_pair,)

    Notes
    -----
    ``ultralytics/utils/metrics.py`` ``batch_probiou`` (8.4.190), term by term in float64 (the
    validator's tensors are float32 on a GPU; see docs/protocols.md). It is symmetric in its
    two boxes, so the ground-truth-first order of the reference changes nothing.

    Examples
    --------
    >>> box = np.array([[10.0, 10.0, 4.0, 2.0, 0.3]])
    >>> round(float(pair_probiou(box, box, det_rows=np.array([0]), gt_rows=np.array([0]))[0]), 6)
    0.999553
    """
    g = np.asarray(gt_xywhr, dtype=np.float64)[np.asarray(gt_rows, dtype=np.int64)]
    d = np.asarray(det_xywhr, dtype=np.float64)[np.asarray(det_rows, dtype=np.int64)]
    if not len(g):
        return np.zeros(0, dtype=np.float64)
    x1, y1, x2, y2 = g[:, 0], g[:, 1], d[:, 0], d[:, 1]
    a1, b1, c1 = _covariance(g)
    a2, b2, c2 = _covariance(d)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        den = (a1 + a2) * (b1 + b2) - (c1 + c2) ** 2 + eps
        t1 = (((a1 + a2) * (y1 - y2) ** 2 + (b1 + b2) * (x1 - x2) ** 2) / den) * 0.25
        t2 = (((c1 + c2) * (x2 - x1) * (y1 - y2)) / den) * 0.5
        t3 = (
            np.log(
                ((a1 + a2) * (b1 + b2) - (c1 + c2) ** 2)
                / (4 * np.sqrt(np.maximum(a1 * b1 - c1**2, 0) * np.maximum(a2 * b2 - c2**2, 0)) + eps)
                + eps
            )
            * 0.5
        )
        bd = np.clip(t1 + t2 + t3, eps, 100.0)
        hd = np.sqrt(1.0 - np.exp(-bd) + eps)
    return 1 - hd


def xywhr_from_corners(corners: np.ndarray) -> np.ndarray:
    """The minimum-area rectangle ``(n, 5)`` ``cx cy w h angle`` of quadrilaterals ``(n, 8)``.

    The rectangle of least area has a side along an edge of the convex hull, and every hull
    edge joins two of the four corners: the six directions between corners are tried and the
    smallest rectangle kept. ``w`` is the longer side and the angle is in ``[-pi/4, 3pi/4)``,
    Ultralytics' ``xyxyxyxy2xywhr`` canonical form.

    Notes
    -----
    Ultralytics computes this with ``cv2.minAreaRect`` on float32 corners; this is float64, so
    a rectangle's parameters agree with it to float32 precision (docs/protocols.md).

    Examples
    --------
    >>> xywhr_from_corners(np.array([[7.0, 6.0, 7.0, 4.0, 3.0, 4.0, 3.0, 6.0]])).round(12).tolist()
    [[5.0, 5.0, 4.0, 2.0, 0.0]]
    """
    p = np.asarray(corners, dtype=np.float64).reshape(-1, 4, 2)
    n = len(p)
    if n == 0:
        return np.zeros((0, 5), dtype=np.float64)
    i, j = np.array([0, 0, 0, 1, 1, 2]), np.array([1, 2, 3, 2, 3, 3])
    direction = p[:, j] - p[:, i]  # (n, 6, 2)
    length = np.hypot(direction[..., 0], direction[..., 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        ux = np.where(length > 0, direction[..., 0] / length, 1.0)
        uy = np.where(length > 0, direction[..., 1] / length, 0.0)
    # Project the corners on each direction u and its normal v = (-uy, ux).
    along = p[:, None, :, 0] * ux[..., None] + p[:, None, :, 1] * uy[..., None]  # (n, 6, 4)
    across = -p[:, None, :, 0] * uy[..., None] + p[:, None, :, 1] * ux[..., None]
    lo_a, hi_a = along.min(axis=2), along.max(axis=2)
    lo_c, hi_c = across.min(axis=2), across.max(axis=2)
    area = (hi_a - lo_a) * (hi_c - lo_c)
    best = np.argmin(area, axis=1)
    rows = np.arange(n)
    ux, uy = ux[rows, best], uy[rows, best]
    mid_a = (lo_a[rows, best] + hi_a[rows, best]) / 2
    mid_c = (lo_c[rows, best] + hi_c[rows, best]) / 2
    cx = mid_a * ux - mid_c * uy
    cy = mid_a * uy + mid_c * ux
    w = hi_a[rows, best] - lo_a[rows, best]
    h = hi_c[rows, best] - lo_c[rows, best]
    theta = np.arctan2(uy, ux)
    swap = w < h
    w, h = np.where(swap, h, w), np.where(swap, w, h)
    theta = np.where(swap, theta + np.pi / 2, theta)
    theta = np.mod(theta + np.pi / 4, np.pi) - np.pi / 4  # [-pi/4, 3pi/4)
    return np.stack([cx, cy, w, h, theta], axis=1)


def as_corners(rotated: np.ndarray) -> np.ndarray:
    """A ``rotated`` column, ``(n, 8)`` corners or ``(n, 5)`` xywhr, as corners.

    Examples
    --------
    >>> as_corners(np.array([[5.0, 5.0, 4.0, 2.0, 0.0]])).tolist()
    [[7.0, 6.0, 7.0, 4.0, 3.0, 4.0, 3.0, 6.0]]
    """
    return corners_from_xywhr(rotated) if rotated.shape[1] == 5 else rotated


def as_xywhr(rotated: np.ndarray) -> np.ndarray:
    """A ``rotated`` column as ``xywhr``: as given, or the corners' minimum-area rectangle.

    Examples
    --------
    >>> as_xywhr(np.array([[5.0, 5.0, 4.0, 2.0, 0.0]])).tolist()
    [[5.0, 5.0, 4.0, 2.0, 0.0]]
    """
    return rotated if rotated.shape[1] == 5 else xywhr_from_corners(rotated)


def rotated_envelope(rotated: np.ndarray) -> np.ndarray:
    """The axis-aligned envelope ``(n, 4)`` xyxy of a ``rotated`` column (corners or xywhr)."""
    return envelope_xyxy(as_corners(rotated))


def rotated_area(rotated: np.ndarray) -> np.ndarray:
    """The area of a ``rotated`` column: ``w * h`` of xywhr, the polygon's area of corners."""
    return rotated[:, 2] * rotated[:, 3] if rotated.shape[1] == 5 else polygon_area(rotated)


def refuse_bad_corners(corners: np.ndarray, source: str, what: str) -> None:
    """Raise an :class:`InputError` for non-finite corners (NaN, infinities).

    Examples
    --------
    >>> refuse_bad_corners(np.zeros((1, 8)), "f.txt", "corners")
    """
    bad = np.flatnonzero(~np.isfinite(np.asarray(corners, dtype=np.float64)).all(axis=1))
    if len(bad):
        raise InputError(
            f"{source}: {len(bad)} {what} with a NaN or an infinite corner (first row "
            f"{int(bad[0])}); expected 8 finite coordinates"
        )


def require_rotated(gt: Any, dt: Any, protocol: Any) -> None:
    """Refuse inputs without rotated boxes, and ``probiou`` on ``polygon4``, for ``iou_type: rotated``.

    Raises
    ------
    InputError
        Ground truth or detections without rotated boxes (``rotated`` None).
    ConfigError
        ``rotated_iou: probiou`` with ``rotated_box: polygon4`` (ProbIoU is defined on rectangles).
    """
    if protocol.rotated_iou == "probiou" and protocol.rotated_box != "xywhr":
        raise ConfigError(
            f"protocol {protocol.name!r}: rotated_iou 'probiou' scores rectangles (cx cy w h angle), "
            f"found rotated_box {protocol.rotated_box!r}; expected rotated_box: xywhr"
        )
    for value, what in ((gt, "ground truth"), (dt, "detections")):
        if value is not None and len(value) and value.rotated is None:
            raise InputError(
                f"{value.source}: protocol {protocol.name!r} scores rotated boxes (iou_type: "
                f"rotated), but the {what} have upright boxes only; expected rotated boxes (DOTA "
                f"labelTxt / Task1 files, Ultralytics OBB labels, COCO `obb`, or xywhr arrays), "
                f"or an upright protocol (iou_type: bbox scores the rotated boxes' envelopes)"
            )


def rotated_pair_iou(
    gt: Any,
    dt: Any,
    gt_rows: np.ndarray,
    det_rows: np.ndarray,
    gt_is_crowd: np.ndarray,
    protocol: Any,
) -> np.ndarray:
    """The overlap of aligned (ground truth, detection) pairs as ``protocol`` measures it.

    The hook :func:`deteval.evaluate.pair_iou` calls for ``iou_type: rotated``: exact polygon IoU
    of the corners or of their minimum-area rectangles, or Ultralytics' ProbIoU (crowd ground
    truth: ProbIoU has no IoA, so crowd regions are refused under it).
    """
    if len(gt_rows) == 0:
        return np.zeros(0, dtype=np.float64)
    require_rotated(gt, dt, protocol)
    g, d = gt.rotated, dt.rotated
    if protocol.rotated_iou == "probiou":
        if np.asarray(gt_is_crowd, dtype=bool).any():
            raise InputError(
                f"{gt.source}: crowd ground truth under ProbIoU (protocol {protocol.name!r}), "
                "which has no intersection-over-area for crowd regions; expected crowd: none or "
                "rotated_iou: polygon"
            )
        return pair_probiou(as_xywhr(d), as_xywhr(g), det_rows=det_rows, gt_rows=gt_rows)
    if protocol.rotated_box == "xywhr":
        g, d = corners_from_xywhr(as_xywhr(g)), corners_from_xywhr(as_xywhr(d))
    else:
        g, d = as_corners(g), as_corners(d)
    return pair_polygon_iou(
        d,
        g,
        gt_is_crowd,
        det_rows=det_rows,
        gt_rows=gt_rows,
        det_source=dt.source,
        gt_source=gt.source,
    )


def rotated_areas(dt: Any, rows: np.ndarray, protocol: Any) -> np.ndarray:
    """The area of detections ``rows`` as a rotated protocol sees them (for the size ranges).

    The quadrilateral's area (``polygon4``) or its minimum-area rectangle's ``w * h``.
    """
    require_rotated(None, dt, protocol)
    if dt.rotated is None:  # no detections at all (an empty results list)
        return np.zeros(len(rows), dtype=np.float64)
    rotated = dt.rotated[rows]
    if protocol.rotated_box == "xywhr":
        r = as_xywhr(rotated)
        return r[:, 2] * r[:, 3]
    return rotated_area(rotated)
