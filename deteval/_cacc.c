/*
 * deteval._cacc: a compiled kernel for the point-sampled accumulation (101_point, 11_point).
 *
 * The compiled twin of deteval.accumulate._point_sampled (the numpy code stays the reference:
 * tests/unit/test_cacc.py compares the two bit for bit). Built from this file alone with a C
 * compiler and the Python headers: arrays come in through the buffer protocol, already
 * C-contiguous and of the right dtype (the Python wrapper in deteval/accumulate.py sees to
 * that), so no numpy headers are needed at build time.
 *
 * What it computes, per max_dets value m, lane L (area a = L / n_thr, threshold t = L % n_thr)
 * and class k: walk the class's segment of the ranking, keeping the detections whose det_rank
 * is below the max_dets value; count kept detections, true positives and ignored ones; at the
 * j-th true positive the false positives so far are (kept - tp - ignored) and the precision is
 * tp / (fp + tp + eps) (COCO) or tp / max(tp + fp, eps) (devkit), the same float64 operations
 * in the same order as numpy. For each recall point r, the TP count needed (tp_needed, from
 * deteval.accumulate._min_tp_for_recall) gives the first TP index reaching it; the output
 * precision is the maximum of the precisions from there on (the numpy code's maximum.reduceat
 * pieces plus suffix maximum, recomputed as pieces here: a max is exact), the score is that
 * TP's score (the class's first kept detection when 0 TPs are needed), 0 beyond the last
 * reached point; recall = tp / n_positive; the AP from that precision by the numpy code's
 * expressions (np.mean's pairwise additions, or the 11-point cumulative sum). Classes without
 * positives get NaN in every output, so the caller's arrays need no filling first.
 *
 * Speed: the lanes' flags come packed, eight lanes a byte per detection (deteval.matching's
 * LaneFlags); each detection's are read once, in table order, into one 64-bit word of TP flags
 * and one of ignored flags, so that the walk reads one small record per ranked position; the ignored
 * counts are kept as bytes in 64-bit words (SWAR), flushed every 255 detections.
 *
 * The kernel returns None (and the caller runs the numpy code) whenever its assumptions do not
 * hold: more than 64 lanes or 8 max_dets values, lengths that do not fit, rows or classes out
 * of range, a row ranked twice, classes not grouped in increasing order along the ranking,
 * needed counts that decrease along the recall points (an unsorted grid).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_buffer_checks.h"
#include "_parallel.h"

/* The ABI number (see _buffer_checks.h; deteval._speedups.ABI holds the expected one). */
#define CACC_ABI 3 /* 2: accumulate takes threads; 3: fills every output (NaN without positives) and the AP */

/* One detection, in table order: its lanes' TP and ignored flags, and its class (high bits)
 * with one bit per max_dets value that keeps it (low 8 bits). */
typedef struct {
    uint64_t tp;
    uint64_t ignored;
    int64_t class_keep;
} det_record;

/* The walk's state for one max_dets value within one class segment. */
typedef struct {
    int64_t count;          /* kept detections so far */
    double first_score;     /* score of the first kept detection */
    uint64_t small[8];      /* ignored counts of lanes 8w..8w+7, one byte each */
    int64_t ignored[64];    /* flushed ignored counts */
    int64_t tp[64];         /* TPs so far */
    Py_ssize_t next_r[64];  /* the first recall point whose target TP has not been seen */
} walk_state;

/* The shapes and outputs shared by the walk's steps. */
typedef struct {
    Py_ssize_t n_lane, n_md, n_area, n_thr, n_class, n_r, n_word;
    int devkit;
    const int64_t *n_positive, *tp_needed;
    double *piece, *piece_score;
    /* outputs: precision and scores (n_thr, n_r, n_class, n_area, n_md), recall and ap (n_thr,
     * n_class, n_area, n_md) */
    double *precision, *scores, *recall, *ap;
    /* a walk's block of CLASS_BLOCK classes' precision and scores, laid out as the outputs with
     * CLASS_BLOCK classes (n_thr, n_r, CLASS_BLOCK, n_area, n_md), copied out a (t, r) row at a
     * time once full: the outputs are written in runs of the block's classes, not an item of
     * n_area * n_md values a page apart (the outputs' pages and TLB entries once per block) */
    double *block_precision, *block_scores;
    Py_ssize_t block_start; /* the block's first class */
} walk_shape;

/* Classes finished into a walk's block before it is copied to the outputs. */
#define CLASS_BLOCK 16

static uint64_t byte_spread[256];

static void
init_byte_spread(void)
{
    int v, b;
    for (v = 0; v < 256; v++) {
        uint64_t w = 0;
        for (b = 0; b < 8; b++) {
            if (v & (1 << b)) {
                w |= (uint64_t)1 << (8 * b);
            }
        }
        byte_spread[v] = w;
    }
}

/* The width (4: int32, 8: int64) of an index column of `count` items, or 0 when it is neither. */
static int
index_width(const Py_buffer *view, Py_ssize_t count)
{
    if (count == 0) {
        return view->len == 0 ? 8 : 0;
    }
    return view->len == count * 4 ? 4 : (view->len == count * 8 ? 8 : 0);
}

/* Item i of an int32 (width 4) or int64 (width 8) column. */
static inline int64_t
index_at(const void *column, int width, Py_ssize_t i)
{
    return width == 4 ? (int64_t)((const int32_t *)column)[i] : ((const int64_t *)column)[i];
}

static void
flush_small(walk_state *s, Py_ssize_t n_word)
{
    Py_ssize_t w;
    int b;
    for (w = 0; w < n_word; w++) {
        const uint64_t v = s->small[w];
        if (v) {
            for (b = 0; b < 8; b++) {
                s->ignored[8 * w + b] += (int64_t)((v >> (8 * b)) & 0xff);
            }
        }
        s->small[w] = 0;
    }
}

static void
reset_state(walk_state *s)
{
    memset(s, 0, sizeof(*s)); /* first_score 0.0 */
}

/* Index of the lowest set bit of a non-zero word. */
static inline int
lowest_bit(uint64_t bits)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(bits);
#else
    int i = 0;
    while (!(bits & 1)) {
        bits >>= 1;
        i++;
    }
    return i;
#endif
}

/* max(need, 1) - 1: the index of the TP where recall first reaches the point. */
static inline int64_t
target_index(int64_t need)
{
    return need > 1 ? need - 1 : 0;
}

/* One kept detection of class k for max_dets value m: update the counts, and at its TPs the
 * precision pieces and the scores of the recall points first reached there. */
static inline void
walk_detection(const walk_shape *w, walk_state *s, Py_ssize_t m, Py_ssize_t k,
               const det_record *det, const double *score)
{
    const double eps = 2.220446049250313e-16; /* np.spacing(1) == np.finfo(np.float64).eps */
    uint64_t bits = det->tp;
    Py_ssize_t i;
    if (s->count == 0) {
        s->first_score = *score;
    }
    s->count++;
    for (i = 0; i < w->n_word; i++) {
        s->small[i] += byte_spread[(det->ignored >> (8 * i)) & 0xff];
    }
    while (bits) {
        const int lane = lowest_bit(bits);
        const int64_t j = s->tp[lane]++;
        const int64_t n_tp = j + 1;
        const int64_t n_ignored =
            s->ignored[lane] + (int64_t)((s->small[lane >> 3] >> (8 * (lane & 7))) & 0xff);
        const double tp_f = (double)n_tp;
        const double fp_f = (double)(s->count - n_tp - n_ignored);
        const Py_ssize_t area = lane / w->n_thr;
        const int64_t *need = w->tp_needed + (area * w->n_class + k) * w->n_r;
        const size_t at = ((size_t)m * w->n_lane + lane) * w->n_r;
        double *lane_piece = w->piece + at;
        Py_ssize_t q = s->next_r[lane];
        double value;
        bits &= bits - 1;
        if (w->devkit) {
            const double sum = tp_f + fp_f;
            value = tp_f / (sum >= eps ? sum : eps);
        }
        else {
            value = tp_f / (fp_f + tp_f + eps);
        }
        if (q < w->n_r && target_index(need[q]) <= j) {
            double *lane_score = w->piece_score + at;
            while (q < w->n_r && target_index(need[q]) <= j) {
                lane_piece[q] = value;
                lane_score[q] = *score;
                q++;
            }
            s->next_r[lane] = q;
        }
        else if (q > 0 && value > lane_piece[q - 1]) {
            lane_piece[q - 1] = value;
        }
    }
    if (s->count % 255 == 0) {
        flush_small(s, w->n_word);
    }
}

/* numpy's pairwise sum of a contiguous float64 row (numpy/_core/src/umath/loops_utils.h.src,
 * DOUBLE_pairwise_sum: eight running sums for up to 128 items, halves at multiples of eight
 * beyond), the order of additions np.add.reduce takes along a contiguous axis. */
static double
pairwise_sum(const double *a, Py_ssize_t n)
{
    if (n < 8) {
        double res = 0.0;
        Py_ssize_t i;
        for (i = 0; i < n; i++) {
            res += a[i];
        }
        return res;
    }
    if (n <= 128) {
        double r[8], res;
        Py_ssize_t i;
        int j;
        for (j = 0; j < 8; j++) {
            r[j] = a[j];
        }
        for (i = 8; i < n - (n % 8); i += 8) {
            for (j = 0; j < 8; j++) {
                r[j] += a[i + j];
            }
        }
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) {
            res += a[i];
        }
        return res;
    }
    {
        Py_ssize_t n2 = n / 2;
        n2 -= n2 % 8;
        return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
    }
}

/* The AP of one lane's precision at the recall points, by the numpy code's expressions:
 * methods._mean_ap (np.mean: 0.0 plus the pairwise sum, over n_r) or, devkit,
 * methods._eleven_point_ap (np.cumsum of p / 11, its last item). */
static double
ap_of_row(const double *p, Py_ssize_t n_r, int devkit)
{
    Py_ssize_t r;
    double sum;
    if (!devkit) {
        return (0.0 + pairwise_sum(p, n_r)) / (double)n_r;
    }
    sum = p[0] / 11.0;
    for (r = 1; r < n_r; r++) {
        sum += p[r] / 11.0;
    }
    return sum;
}

/* Class k's outputs for every max_dets value and lane (classes without positives: NaN), into the block.
 * The envelope is written over the pieces (in place: piece r is read before it is written), so
 * that no (max_dets x thresholds x areas x classes x recall points) array besides the outputs
 * is needed: the caller takes the AP from the precision output, one max_dets value and
 * threshold at a time. */
static void
finish_class(const walk_shape *w, const walk_state *state, Py_ssize_t k)
{
    const Py_ssize_t n_r = w->n_r, n_md = w->n_md, n_area = w->n_area, n_class = w->n_class;
    const Py_ssize_t n_thr = w->n_thr;
    Py_ssize_t m, L, r, t, a;
    /* Per max_dets value and lane: the envelope in place of piece, the scores in place of
     * piece_score. */
    for (m = 0; m < n_md; m++) {
        const walk_state *s = &state[m];
        const int has_dets = s->count > 0;
        for (L = 0; L < w->n_lane; L++) {
            const Py_ssize_t a = L / n_thr, t = L % n_thr;
            const int64_t n_pos = w->n_positive[k * n_area + a];
            const int64_t n_tp = s->tp[L];
            const int64_t *need = w->tp_needed + (a * n_class + k) * n_r;
            double *lane_piece = w->piece + ((size_t)m * w->n_lane + L) * n_r;
            double *lane_score = w->piece_score + ((size_t)m * w->n_lane + L) * n_r;
            const Py_ssize_t cell = ((t * n_class + k) * n_area + a) * n_md + m;
            double run = 0.0;
            if (n_pos <= 0) { /* no positives: NaN, as the caller's arrays were before */
                w->recall[cell] = Py_NAN;
                w->ap[cell] = Py_NAN;
                continue;
            }
            w->recall[cell] = has_dets ? (double)n_tp / (double)n_pos : 0.0;
            for (r = n_r - 1; r >= 0; r--) {
                const int64_t target = need[r] > 1 ? need[r] : 1;
                const int has_target = target <= n_tp;
                const double value = has_target ? lane_piece[r] : 0.0;
                if (r == n_r - 1 || value > run) {
                    run = value;
                }
                lane_piece[r] = run;
                if (!(has_target && need[r] > 0)) {
                    const int reached = has_target || (need[r] == 0 && has_dets);
                    lane_score[r] = reached ? s->first_score : 0.0;
                }
            }
            w->ap[cell] = ap_of_row(lane_piece, n_r, w->devkit);
        }
    }
    /* The block's (n_thr, n_r, CLASS_BLOCK, n_area, n_md) rows: (area, max_dets) runs contiguous. */
    for (t = 0; t < n_thr; t++) {
        for (r = 0; r < n_r; r++) {
            const Py_ssize_t first = ((t * n_r + r) * CLASS_BLOCK + (k - w->block_start)) * n_area * n_md;
            for (a = 0; a < n_area; a++) {
                const Py_ssize_t L = a * n_thr + t;
                if (w->n_positive[k * n_area + a] <= 0) {
                    for (m = 0; m < n_md; m++) {
                        w->block_precision[first + a * n_md + m] = Py_NAN;
                        w->block_scores[first + a * n_md + m] = Py_NAN;
                    }
                    continue;
                }
                for (m = 0; m < n_md; m++) {
                    const size_t at = ((size_t)m * w->n_lane + L) * n_r + r;
                    w->block_precision[first + a * n_md + m] = w->piece[at];
                    w->block_scores[first + a * n_md + m] = w->piece_score[at];
                }
            }
        }
    }
}

/* Copy the block's classes [block_start, block_start + count) to the outputs, one (t, r) row of
 * count * n_area * n_md values at a time; the next block starts after them. */
static void
flush_block(walk_shape *w, Py_ssize_t count)
{
    const Py_ssize_t cell = w->n_area * w->n_md;
    Py_ssize_t t, r;
    if (count > 0) {
        for (t = 0; t < w->n_thr; t++) {
            for (r = 0; r < w->n_r; r++) {
                const Py_ssize_t row = t * w->n_r + r;
                memcpy(w->precision + (row * w->n_class + w->block_start) * cell,
                       w->block_precision + row * CLASS_BLOCK * cell, (size_t)(count * cell) * sizeof(double));
                memcpy(w->scores + (row * w->n_class + w->block_start) * cell,
                       w->block_scores + row * CLASS_BLOCK * cell, (size_t)(count * cell) * sizeof(double));
            }
        }
    }
    w->block_start += count;
}

/* Finish class k (the next class of the walk's block), copying the block out once it is full. */
static void
finish_into_block(walk_shape *w, const walk_state *state, Py_ssize_t k)
{
    finish_class(w, state, k);
    if (k + 1 - w->block_start == CLASS_BLOCK) {
        flush_block(w, CLASS_BLOCK);
    }
}

/* A detection's packed lane flags (n_byte <= 8 bytes, lane L in bit L % 8 of byte L / 8) as one
 * word with lane L in bit L. */
static inline uint64_t
load_lanes(const unsigned char *flags, Py_ssize_t n_byte)
{
    uint64_t x = 0;
    Py_ssize_t j;
    for (j = 0; j < n_byte; j++) {
        x |= (uint64_t)flags[j] << (8 * j);
    }
    return x;
}

/* A detection's record: its packed lanes' flags as words, its class and kept-by bits (a class
 * outside [0, n_class): -1). Made as the ranking is walked, from the table's columns: no record
 * array of every detection (24 bytes each) is kept. */
static inline det_record
record_of(int64_t row, const unsigned char *det_is_tp, const unsigned char *det_is_ignored,
          Py_ssize_t n_byte, const void *det_class, int class_width, const void *det_rank,
          int rank_width, const int64_t *max_dets, Py_ssize_t n_md, Py_ssize_t n_class)
{
    det_record out;
    const int64_t c = index_at(det_class, class_width, row), rank = index_at(det_rank, rank_width, row);
    int64_t keep = 0;
    Py_ssize_t m;
    for (m = 0; m < n_md; m++) {
        keep |= (int64_t)(rank < max_dets[m]) << m;
    }
    out.tp = load_lanes(det_is_tp + row * n_byte, n_byte);
    out.ignored = load_lanes(det_is_ignored + row * n_byte, n_byte);
    out.class_keep = (c >= 0 && c < n_class) ? (c << 8) | keep : -1;
    return out;
}

/* The read-only inputs of the walk, shared by every part. */
typedef struct {
    const walk_shape *w;
    const unsigned char *det_is_tp, *det_is_ignored;
    Py_ssize_t n_det, n_byte;
    const void *ranking;
    int ranking_width;
    const void *det_rank;
    int rank_width;
    const void *det_class;
    int class_width;
    const double *det_score;
    const int64_t *max_dets;
    unsigned char *seen;            /* one bit per row: ranked already (shared by the parts) */
    int shared;                     /* several parts: the seen bits are set atomically */
    /* threads > 1: part k walks ranked positions [bounds[k], bounds[k + 1]), the classes
     * [first_class[k], first_class[k + 1]), and leaves its status in status[k] */
    const Py_ssize_t *bounds;
    const int64_t *first_class;
    int parts;
    int *status;
} walk_inputs;

/* Mark row as ranked; whether it was already (a row ranked twice). Several parts: one atomic
 * read-modify-write, so that of two parts ranking the same row exactly one sees it marked. */
static inline int
mark_seen(const walk_inputs *in, int64_t row)
{
    unsigned char *byte = &in->seen[row >> 3];
    const unsigned char bit = (unsigned char)(1u << (row & 7));
#if DETEVAL_HAVE_THREADS && (defined(__GNUC__) || defined(__clang__))
    if (in->shared) {
        return (__atomic_fetch_or(byte, bit, __ATOMIC_RELAXED) & bit) != 0;
    }
#endif
    if (*byte & bit) {
        return 1;
    }
    *byte |= bit;
    return 0;
}

/*
 * Walk ranked positions [lo, hi), whose classes must be in [k_lo, k_hi) and non-decreasing,
 * finishing classes k_lo .. k_hi - 1 (their outputs only). Every row and class is checked on the
 * way. Returns 0, 1 when the inputs break an assumption, -1 when out of memory. Touches no Python
 * object: run without the GIL, on any thread; its working buffers are its own.
 */
static int
walk_classes(const walk_inputs *in, Py_ssize_t lo_pos, Py_ssize_t hi_pos, Py_ssize_t k_lo, Py_ssize_t k_hi)
{
    walk_shape local = *in->w;
    walk_shape *w = &local;
    const Py_ssize_t n_md = w->n_md, n_lane = w->n_lane, n_r = w->n_r;
    const Py_ssize_t block = 1024;
    walk_state *state = malloc(((size_t)n_md + 1) * sizeof(walk_state));
    det_record *ranked = malloc((size_t)block * sizeof(det_record));
    int status = -1;
    Py_ssize_t p, k, m, lo;
    w->piece = malloc(((size_t)n_md * (size_t)n_lane * (size_t)n_r + 1) * sizeof(double));
    w->piece_score = malloc(((size_t)n_md * (size_t)n_lane * (size_t)n_r + 1) * sizeof(double));
    w->block_precision = malloc((size_t)(w->n_thr * n_r * CLASS_BLOCK * w->n_area * n_md) * sizeof(double));
    w->block_scores = malloc((size_t)(w->n_thr * n_r * CLASS_BLOCK * w->n_area * n_md) * sizeof(double));
    w->block_start = k_lo;
    if (ranked == NULL || state == NULL || w->piece == NULL || w->piece_score == NULL || w->block_precision == NULL
        || w->block_scores == NULL) {
        goto done;
    }
    k = k_lo;
    for (m = 0; m < n_md; m++) {
        reset_state(&state[m]);
    }
    for (lo = lo_pos; lo < hi_pos; lo += block) {
        const Py_ssize_t n = lo + block < hi_pos ? block : hi_pos - lo;
        /* Gather a block of ranked detections first: independent loads, overlapped. */
        for (p = 0; p < n; p++) {
            const int64_t row = index_at(in->ranking, in->ranking_width, lo + p);
            if (row < 0 || row >= in->n_det || mark_seen(in, row)) {
                status = 1;
                goto done;
            }
            ranked[p] = record_of(row, in->det_is_tp, in->det_is_ignored, in->n_byte, in->det_class,
                                  in->class_width, in->det_rank, in->rank_width, in->max_dets, n_md, w->n_class);
        }
        for (p = 0; p < n; p++) {
            const det_record *det = &ranked[p];
            const int64_t c = det->class_keep >> 8;
            int64_t keep = det->class_keep & 0xff;
            if (det->class_keep < 0 || c < k || c >= k_hi) {
                status = 1;
                goto done;
            }
            while (k < c) {
                finish_into_block(w, state, k);
                for (m = 0; m < n_md; m++) {
                    reset_state(&state[m]);
                }
                k++;
            }
            for (m = 0; keep; m++, keep >>= 1) {
                if (keep & 1) {
                    walk_detection(w, &state[m], m, k, det,
                                   &in->det_score[index_at(in->ranking, in->ranking_width, lo + p)]);
                }
            }
        }
    }
    for (; k < k_hi; k++) {
        finish_into_block(w, state, k);
        for (m = 0; m < n_md; m++) {
            reset_state(&state[m]);
        }
    }
    flush_block(w, k_hi - w->block_start); /* the last block's classes */
    status = 0;
done:
    free(state);
    free(w->piece);
    free(w->piece_score);
    free(w->block_precision);
    free(w->block_scores);
    free(ranked);
    return status;
}

/* The class of the row at ranked position p, or -1 when the row is out of range. */
static inline int64_t
class_at(const walk_inputs *in, Py_ssize_t p)
{
    const int64_t row = index_at(in->ranking, in->ranking_width, p);
    return row >= 0 && row < in->n_det ? index_at(in->det_class, in->class_width, row) : -1;
}

/* The first ranked position in [0, n) whose class is at least c, if the classes are
 * non-decreasing along the ranking (each part checks that they are); -1 on a row out of range. */
static Py_ssize_t
first_position_of(const walk_inputs *in, Py_ssize_t n, int64_t c)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        const int64_t found = class_at(in, mid);
        if (found < 0) {
            return -1;
        }
        if (found < c) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

/* One part of the threaded walk: ranked positions [lo, hi) (parallel_parts' part function). */
static void
walk_part(void *ctx, Py_ssize_t lo, Py_ssize_t hi)
{
    const walk_inputs *in = (const walk_inputs *)ctx;
    int k;
    for (k = 0; k < in->parts; k++) { /* the first part of these bounds (part 0 when empty) */
        if (in->bounds[k] == lo && in->bounds[k + 1] == hi) {
            in->status[k] = walk_classes(in, lo, hi, (Py_ssize_t)in->first_class[k],
                                         (Py_ssize_t)in->first_class[k + 1]);
            return;
        }
    }
}

/*
 * The accumulation itself, without the GIL. Returns 0 on success, 1 when the inputs break an
 * assumption (fall back to numpy), -1 when out of memory.
 *
 * One thread: one walk of the ranking. threads > 1: the ranking is cut into parts of about equal
 * count at class boundaries (found by binary search, the classes being non-decreasing along the
 * ranking), walked on their own threads, each with its own working buffers and writing only its
 * classes' outputs: the same numbers as one walk, whatever the number of parts. Each part checks
 * its rows (in range; ranked once, in one bitmap set atomically) and classes (within its range,
 * non-decreasing), so that the parts together check what the one walk does: a broken assumption
 * anywhere is seen by the part that walks it.
 */
static int
run_accumulate(
    walk_shape *w, const unsigned char *det_is_tp, const unsigned char *det_is_ignored, Py_ssize_t n_det,
    const void *ranking, int ranking_width, Py_ssize_t n_ranked, const void *det_rank, int rank_width,
    const void *det_class, int class_width, const double *det_score, const int64_t *max_dets, int threads)
{
    const Py_ssize_t n_class = w->n_class, n_r = w->n_r;
    walk_inputs in;
    Py_ssize_t bounds[DETEVAL_MAX_PARTS + 1];
    int64_t first_class[DETEVAL_MAX_PARTS + 1];
    int status_of[DETEVAL_MAX_PARTS];
    int parts, k, status = 0;
    Py_ssize_t d, r;

    /* Needed counts must not decrease along the recall points (a sorted grid). */
    for (d = 0; d < w->n_area * n_class; d++) {
        const int64_t *need = w->tp_needed + d * n_r;
        for (r = 0; r < n_r; r++) {
            if (need[r] < 0 || (r > 0 && need[r] < need[r - 1])) {
                return 1;
            }
        }
    }
    memset(&in, 0, sizeof(in));
    in.w = w;
    in.det_is_tp = det_is_tp;
    in.det_is_ignored = det_is_ignored;
    in.n_det = n_det;
    in.n_byte = (w->n_lane + 7) / 8;
    in.ranking = ranking;
    in.ranking_width = ranking_width;
    in.det_rank = det_rank;
    in.rank_width = rank_width;
    in.det_class = det_class;
    in.class_width = class_width;
    in.det_score = det_score;
    in.max_dets = max_dets;
    in.seen = calloc((size_t)n_det / 8 + 1, 1);
    if (in.seen == NULL) {
        return -1;
    }
    parts = threads < 1 ? 1 : (threads > DETEVAL_MAX_PARTS ? DETEVAL_MAX_PARTS : threads);
    if (parts > n_class) {
        parts = (int)n_class;
    }
    if (parts > n_ranked) {
        parts = n_ranked > 0 ? (int)n_ranked : 1;
    }
    /* Cut points: the class at each k/parts of the ranking, and where that class starts. */
    first_class[0] = 0;
    bounds[0] = 0;
    for (k = 1; k < parts; k++) {
        const int64_t c = class_at(&in, (Py_ssize_t)((n_ranked * (int64_t)k) / parts));
        const Py_ssize_t at = c >= 0 && c < n_class ? first_position_of(&in, n_ranked, c) : -1;
        if (at < 0) {
            parts = 1; /* a row or class out of range: the one walk finds and declines it */
            break;
        }
        first_class[k] = c > first_class[k - 1] ? c : first_class[k - 1];
        bounds[k] = at > bounds[k - 1] ? at : bounds[k - 1];
    }
    first_class[parts] = n_class;
    bounds[parts] = n_ranked;
    if (parts <= 1) {
        status = walk_classes(&in, 0, n_ranked, 0, n_class);
    }
    else {
        in.shared = 1;
        in.bounds = bounds;
        in.first_class = first_class;
        in.parts = parts;
        in.status = status_of;
        for (k = 0; k < parts; k++) {
            status_of[k] = 0;
        }
        parallel_parts(bounds, parts, walk_part, &in);
        for (k = 0; k < parts; k++) { /* out of memory (-1) first, then a broken assumption (1) */
            if (status_of[k] < 0 || (status_of[k] > 0 && status == 0)) {
                status = status_of[k];
            }
        }
    }
    free(in.seen);
    return status;
}

PyDoc_STRVAR(accumulate_doc,
"accumulate(det_is_tp, det_is_ignored, ranking, det_rank, det_class, det_score, n_positive,\n"
"           tp_needed, max_dets, n_area, n_thr, n_class, devkit, precision, scores, recall, ap,\n"
"           ranking_width, threads)\n"
"--\n\n"
"The point-sampled accumulation of every max_dets value (see deteval.accumulate).\n\n"
"det_is_tp, det_is_ignored: uint8 (n_det, ceil(n_lane / 8)), the lanes' flags packed (lane L\n"
"in bit L % 8 of byte L / 8, n_lane = n_area * n_thr); ranking (ranking_width bytes an item),\n"
"det_rank, det_class: int32 or int64 (each its own); det_score: float64 (n_det,); n_positive: int64 (n_class,\n"
"n_area); tp_needed: int64 (n_area, n_class, n_r); max_dets: int64 (n_md <= 8,). Filled in\n"
"place, every item (NaN where a class has no positives; float64): precision and scores (n_thr, n_r,\n"
"n_class, n_area, n_md), recall and ap (n_thr, n_class, n_area, n_md); the AP is the mean of the\n"
"precision over the recall points (np.mean's additions), devkit: the 11-point sum.\n"
"threads: split the classes over that many threads (1: none; not capped here);\n"
"the numbers do not depend on it. Returns True, or None when the inputs break the kernel's assumptions.");

static PyObject *
cacc_accumulate(PyObject *self, PyObject *args)
{
    Py_buffer det_is_tp, det_is_ignored, ranking, det_rank, det_class, det_score, n_positive,
        tp_needed, max_dets, precision, scores, recall, ap;
    Py_ssize_t n_det, n_ranked, n_cell;
    walk_shape w;
    int fits, rank_width, class_width, ranking_width = 8, threads = 1, status = 1;
    PyObject *out = NULL;

    (void)self;
    memset(&w, 0, sizeof(w));
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*nnnpw*w*w*w*|ii:accumulate", &det_is_tp,
                          &det_is_ignored, &ranking, &det_rank, &det_class, &det_score,
                          &n_positive, &tp_needed, &max_dets, &w.n_area, &w.n_thr, &w.n_class,
                          &w.devkit, &precision, &scores, &recall, &ap, &ranking_width, &threads)) {
        return NULL;
    }
    {
        const Py_buffer *views[13] = {&precision, &scores, &recall, &ap, &det_is_tp, &det_is_ignored, &ranking,
                                      &det_rank, &det_class, &det_score, &n_positive, &tp_needed, &max_dets};
        if (outputs_overlap(views, 4, 13, "_cacc.accumulate")) {
            goto release;
        }
    }
    /* The sizes bounded before any product of them (a hostile n_area * n_class must not wrap). */
    if (w.n_area < 1 || w.n_area > 64 || w.n_thr < 1 || w.n_thr > 64 || w.n_class < 1 ||
        w.n_class > n_positive.len / 8 / w.n_area) {
        out = Py_NewRef(Py_None);
        goto release;
    }
    n_det = det_score.len / 8;
    n_ranked = (ranking_width == 4 || ranking_width == 8) ? ranking.len / ranking_width : 0;
    w.n_lane = w.n_area * w.n_thr;
    w.n_md = max_dets.len / 8;
    w.n_r = (w.n_area >= 1 && w.n_class >= 1) ? tp_needed.len / 8 / (w.n_area * w.n_class) : 0;
    w.n_word = (w.n_lane + 7) / 8;
    n_cell = w.n_md * w.n_lane * w.n_class;
    rank_width = index_width(&det_rank, n_det);
    class_width = index_width(&det_class, n_det);
    fits = is_aligned(&det_score, 8) && is_aligned(&ranking, ranking_width == 4 ? 4 : 8)
           && is_aligned(&det_rank, rank_width ? rank_width : 8) && is_aligned(&det_class, class_width ? class_width : 8)
           && is_aligned(&n_positive, 8) && is_aligned(&tp_needed, 8) && is_aligned(&max_dets, 8)
           && is_aligned(&precision, 8) && is_aligned(&scores, 8) && is_aligned(&recall, 8) && is_aligned(&ap, 8)
           && w.n_area >= 1 && w.n_thr >= 1 && w.n_class >= 1 && w.n_lane <= 64 && w.n_md >= 1
           && w.n_md <= 8 && w.n_r >= 1 && w.n_class < ((int64_t)1 << 54)
           && has_items(&det_score, n_det, 8) && has_items(&det_is_tp, w.n_word * n_det, 1)
           && has_items(&det_is_ignored, w.n_word * n_det, 1) && (ranking_width == 4 || ranking_width == 8)
           && has_items(&ranking, n_ranked, ranking_width)
           && rank_width != 0 && class_width != 0
           && has_items(&n_positive, w.n_class * w.n_area, 8)
           && has_items(&tp_needed, w.n_area * w.n_class * w.n_r, 8)
           && has_items(&max_dets, w.n_md, 8) && has_items(&precision, n_cell * w.n_r, 8)
           && has_items(&scores, n_cell * w.n_r, 8) && has_items(&recall, n_cell, 8) && has_items(&ap, n_cell, 8);
    if (fits) {
        w.n_positive = n_positive.buf;
        w.tp_needed = tp_needed.buf;
        w.precision = precision.buf;
        w.scores = scores.buf;
        w.recall = recall.buf;
        w.ap = ap.buf;
        Py_BEGIN_ALLOW_THREADS
        status = run_accumulate(&w, (const unsigned char *)det_is_tp.buf,
                                (const unsigned char *)det_is_ignored.buf, n_det, ranking.buf, ranking_width, n_ranked,
                                det_rank.buf, rank_width, det_class.buf, class_width, det_score.buf,
                                max_dets.buf, threads);
        Py_END_ALLOW_THREADS
    }
    if (status < 0) {
        PyErr_NoMemory();
    }
    else {
        out = Py_NewRef(status == 0 ? Py_True : Py_None);
    }
release:
    PyBuffer_Release(&det_is_tp);
    PyBuffer_Release(&det_is_ignored);
    PyBuffer_Release(&ranking);
    PyBuffer_Release(&det_rank);
    PyBuffer_Release(&det_class);
    PyBuffer_Release(&det_score);
    PyBuffer_Release(&n_positive);
    PyBuffer_Release(&tp_needed);
    PyBuffer_Release(&max_dets);
    PyBuffer_Release(&precision);
    PyBuffer_Release(&scores);
    PyBuffer_Release(&recall);
    PyBuffer_Release(&ap);
    return out;
}

static PyMethodDef cacc_methods[] = {
    {"accumulate", cacc_accumulate, METH_VARARGS, accumulate_doc},
    {NULL, NULL, 0, NULL},
};

/* Module setup: the byte table of the lane masks. */
static int
cacc_setup(void)
{
    init_byte_spread();
    return 0;
}

DETEVAL_MODULE(_cacc, "deteval._cacc",
               "Compiled point-sampled accumulation; the numpy code in deteval.accumulate is its twin.",
               cacc_methods, CACC_ABI, cacc_setup)
