"""The values matching returns: :class:`MatchResult` and the packed per-lane flags :class:`LaneFlags`."""

from __future__ import annotations

import numpy as np

from deteval._values import frozen
from deteval.errors import ConfigError

#: pycocotools compares IoU against ``min(t, 1 - 1e-10)`` so that t = 1.0 can still match.
COCO_MAX_THRESHOLD = 1 - 1e-10


@frozen(eq=False)
class LaneFlags:
    """One flag per (lane, detection), packed eight lanes to a byte.

    Attributes
    ----------
    bits : uint8 (n_det, ceil(n_lane / 8))
        Detection-major: lane ``l`` of detection ``d`` is bit ``l % 8`` of ``bits[d, l // 8]``
        (``np.packbits(..., bitorder="little")`` along the lanes). A detection's lanes are one
        small record, which the compiled accumulation reads as one 64-bit word.
    n_lane : int

    Notes
    -----
    COCO's 40 lanes (4 area ranges x 10 IoU thresholds) take 5 bytes per detection and flag
    instead of 40 as a bool table. :meth:`lane` reads one lane; :meth:`unpack` allocates the
    whole bool (n_lane, n_det) table.

    Examples
    --------
    >>> flags = LaneFlags.pack(np.array([[True, False, True], [False, False, True]]))
    >>> flags.bits.ravel().tolist(), flags.lane(1).tolist()
    ([1, 0, 3], [False, False, True])
    """

    bits: np.ndarray
    n_lane: int

    @classmethod
    def pack(cls, flags: np.ndarray) -> LaneFlags:
        """Pack a bool (n_lane, n_det) table."""
        flags = np.asarray(flags, dtype=bool)
        bits = np.ascontiguousarray(np.packbits(flags, axis=0, bitorder="little").T)
        return cls(bits=bits, n_lane=int(flags.shape[0]))

    @classmethod
    def zeros(cls, n_lane: int, n_det: int) -> LaneFlags:
        """No flag set."""
        return cls(bits=np.zeros((n_det, lane_bytes(n_lane)), dtype=np.uint8), n_lane=n_lane)

    @classmethod
    def by_area(cls, det_flags: np.ndarray, n_thr: int) -> LaneFlags:
        """Each area's (n_area, n_det) flags repeated over its ``n_thr`` lanes (lane = a * n_thr + t).

        Built a byte of lanes at a time, without the (n_lane, n_det) table.
        """
        n_area, n_det = det_flags.shape
        n_lane = n_area * n_thr
        n_byte = lane_bytes(n_lane)
        out = np.zeros((n_byte, n_det), dtype=np.uint8)
        for a in range(n_area):
            row = np.ascontiguousarray(det_flags[a], dtype=bool).view(np.uint8)
            lanes = ((1 << n_thr) - 1) << (a * n_thr)
            for j in range(n_byte):
                mask = (lanes >> (8 * j)) & 0xFF
                if mask:
                    out[j] |= row * np.uint8(mask)
        return cls(bits=np.ascontiguousarray(out.T), n_lane=n_lane)

    def __len__(self) -> int:
        return int(self.bits.shape[0])

    def __eq__(self, other: object) -> bool:
        """The same lanes with the same flags."""
        if not isinstance(other, LaneFlags):
            return NotImplemented
        return self.n_lane == other.n_lane and np.array_equal(self.bits, other.bits)

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside

    def lane(self, lane: int) -> np.ndarray:
        """Bool (n_det,): the flags of one lane."""
        if not 0 <= lane < self.n_lane:
            raise ConfigError(f"LaneFlags.lane: expected a lane in [0, {self.n_lane}), found {lane}")
        return (self.bits[:, lane >> 3] & np.uint8(1 << (lane & 7))) != 0

    def unpack(self) -> np.ndarray:
        """Bool (n_lane, n_det): the whole table (a new array of n_lane * n_det bytes)."""
        return np.unpackbits(self.bits.T, axis=0, count=self.n_lane, bitorder="little").view(bool)

    def take(self, rows: np.ndarray) -> LaneFlags:
        """The flags of detection ``rows`` (an index or bool mask)."""
        return LaneFlags(bits=self.bits[rows], n_lane=self.n_lane)

    def select(self, lanes: np.ndarray) -> LaneFlags:
        """The flags of ``lanes`` (int, in the new lane order)."""
        lanes = np.asarray(lanes, dtype=np.int64)
        n_det, n_new = len(self), len(lanes)
        if self.n_lane <= 64 and n_new <= 64:
            words = self.words()
            new = np.zeros(n_det, dtype=np.uint64)
            j = 0
            while j < n_new:  # runs of consecutive lanes move as one shifted mask
                k = j + 1
                while k < n_new and lanes[k] == lanes[k - 1] + 1:
                    k += 1
                run = ((words >> np.uint64(lanes[j])) & np.uint64((1 << (k - j)) - 1)) << np.uint64(j)
                new |= run
                j = k
            n_byte = lane_bytes(n_new)
            bits = np.ascontiguousarray(new.astype("<u8").view(np.uint8).reshape(n_det, 8)[:, :n_byte])
            return LaneFlags(bits=bits, n_lane=n_new)
        return LaneFlags.pack(self.unpack()[lanes])

    def words(self) -> np.ndarray:
        """Uint64 (n_det,): each detection's lanes as one word, lane ``l`` in bit ``l`` (n_lane <= 64)."""
        if self.n_lane > 64:
            raise ConfigError(f"LaneFlags.words: expected at most 64 lanes, found {self.n_lane}")
        padded = np.zeros((len(self), 8), dtype=np.uint8)
        padded[:, : self.bits.shape[1]] = self.bits
        return padded.view("<u8").ravel().astype(np.uint64, copy=False)

    @staticmethod
    def concatenate(parts: list) -> LaneFlags:
        """The flags of several tables' detections, one after the other (same lanes)."""
        n_lane = parts[0].n_lane
        if any(p.n_lane != n_lane for p in parts):
            raise ConfigError(
                f"LaneFlags.concatenate: expected the same lanes, found {[p.n_lane for p in parts]} lanes"
            )
        return LaneFlags(bits=np.concatenate([p.bits for p in parts]), n_lane=n_lane)


def lane_bytes(n_lane: int) -> int:
    """Bytes per detection of packed lane flags (eight lanes a byte)."""
    return (n_lane + 7) // 8


@frozen
class MatchResult:
    """Outcome of matching, per lane (area range a, IoU threshold t: lane = a * n_iou_thr + t).

    Attributes
    ----------
    tp, ignored : LaneFlags (n_lane x n_det)
        True positives and ignored detections; a detection that is neither is a false positive.
    match_lane, match_det, match_gt : int64 (n_match,)
        Every (lane, detection, ground truth) match, sorted by lane then detection; a match to an
        ignored GT (crowd, difficult, outside the area range) is listed too.
    """

    tp: LaneFlags
    ignored: LaneFlags
    match_lane: np.ndarray
    match_det: np.ndarray
    match_gt: np.ndarray

    @property
    def det_is_tp(self) -> np.ndarray:
        """Bool (n_lane, n_det), unpacked from :attr:`tp` (allocates)."""
        return self.tp.unpack()

    @property
    def det_is_ignored(self) -> np.ndarray:
        """Bool (n_lane, n_det), unpacked from :attr:`ignored` (allocates)."""
        return self.ignored.unpack()


def _all_unmatched(n_area: int, n_thr: int, n_det: int, det_is_out_of_range: np.ndarray) -> MatchResult:
    """No candidate pairs: every detection is a FP, or ignored outside the area range."""
    empty = np.zeros(0, dtype=np.int64)
    return MatchResult(
        tp=LaneFlags.zeros(n_area * n_thr, n_det),
        ignored=LaneFlags.by_area(det_is_out_of_range, n_thr),
        match_lane=empty,
        match_det=empty,
        match_gt=empty,
    )
