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
 * reached point; recall = tp / n_positive. Classes without positives are not written (the
 * caller fills NaN).
 *
 * Speed: the (lanes x detections) bool tables are packed once, in table order, into one
 * 64-bit word of TP flags and one of ignored flags per detection (each lane's row read
 * sequentially), so that the walk reads one small record per ranked position; the ignored
 * counts are kept as bytes in 64-bit words (SWAR), flushed every 255 detections.
 *
 * The kernel returns None (and the caller runs the numpy code) whenever its assumptions do not
 * hold: more than 64 lanes, lengths that do not fit, rows or classes out of range, classes not
 * grouped in increasing order along the ranking, needed counts that decrease along the recall
 * points (an unsorted grid).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One detection, in table order: its lanes' TP and ignored flags, its rank and score. */
typedef struct {
    uint64_t tp;
    uint64_t ignored;
    int64_t rank;
    double score;
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

static int
has_items(const Py_buffer *view, Py_ssize_t count, Py_ssize_t itemsize)
{
    return view->len == count * itemsize;
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
reset_state(walk_state *s, Py_ssize_t n_lane)
{
    s->count = 0;
    s->first_score = 0.0;
    memset(s->small, 0, sizeof(s->small));
    memset(s->ignored, 0, (size_t)n_lane * sizeof(int64_t));
    memset(s->tp, 0, (size_t)n_lane * sizeof(int64_t));
    memset(s->next_r, 0, (size_t)n_lane * sizeof(Py_ssize_t));
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

/*
 * The accumulation itself, without the GIL. Returns 0 on success, 1 when the inputs break an
 * assumption (fall back to numpy), -1 when out of memory.
 */
static int
run_accumulate(
    const char *det_is_tp, const char *det_is_ignored, Py_ssize_t n_det, Py_ssize_t n_lane,
    const int64_t *ranking, Py_ssize_t n_ranked, const int64_t *det_rank, const int64_t *det_class,
    const double *det_score, const int64_t *n_positive, const int64_t *tp_needed,
    const int64_t *max_dets, Py_ssize_t n_md, Py_ssize_t n_area, Py_ssize_t n_thr,
    Py_ssize_t n_class, Py_ssize_t n_r, int devkit, double *precision, double *scores,
    double *recall)
{
    const Py_ssize_t n_word = (n_lane + 7) / 8;
    const double eps = 2.220446049250313e-16; /* np.spacing(1) == np.finfo(np.float64).eps */
    det_record *rec = NULL;
    Py_ssize_t *seg = NULL;
    walk_state *state = NULL;
    double *piece = NULL, *piece_score = NULL;
    int status = -1;
    Py_ssize_t p, d, k, m, L, r;

    /* Checks: rows in range, classes in range and grouped in increasing order, sorted needs. */
    for (p = 0; p < n_ranked; p++) {
        const int64_t row = ranking[p];
        if (row < 0 || row >= n_det) {
            return 1;
        }
        if (det_class[row] < 0 || det_class[row] >= n_class) {
            return 1;
        }
        if (p > 0 && det_class[row] < det_class[ranking[p - 1]]) {
            return 1;
        }
    }
    for (d = 0; d < n_area * n_class; d++) {
        const int64_t *need = tp_needed + d * n_r;
        for (r = 0; r < n_r; r++) {
            if (need[r] < 0 || (r > 0 && need[r] < need[r - 1])) {
                return 1;
            }
        }
    }

    rec = malloc(((size_t)n_det + 1) * sizeof(det_record));
    seg = malloc(((size_t)n_class + 1) * sizeof(Py_ssize_t));
    state = malloc(((size_t)n_md + 1) * sizeof(walk_state));
    piece = malloc(((size_t)n_md * (size_t)n_lane * (size_t)n_r + 1) * sizeof(double));
    piece_score = malloc(((size_t)n_md * (size_t)n_lane * (size_t)n_r + 1) * sizeof(double));
    if (rec == NULL || seg == NULL || state == NULL || piece == NULL || piece_score == NULL) {
        goto done;
    }

    /* Pack the lanes' flags in table order, a block of detections at a time (rows read in order). */
    {
        const Py_ssize_t block = 2048;
        Py_ssize_t lo;
        for (lo = 0; lo < n_det; lo += block) {
            const Py_ssize_t hi = lo + block < n_det ? lo + block : n_det;
            for (d = lo; d < hi; d++) {
                rec[d].tp = 0;
                rec[d].ignored = 0;
                rec[d].rank = det_rank[d];
                rec[d].score = det_score[d];
            }
            for (L = 0; L < n_lane; L++) {
                const char *tp_row = det_is_tp + L * n_det;
                const char *ig_row = det_is_ignored + L * n_det;
                for (d = lo; d < hi; d++) {
                    rec[d].tp |= (uint64_t)(tp_row[d] != 0) << L;
                    rec[d].ignored |= (uint64_t)(ig_row[d] != 0) << L;
                }
            }
        }
    }
    /* Class segments of the ranking. */
    {
        Py_ssize_t at = 0;
        for (k = 0; k <= n_class; k++) {
            while (at < n_ranked && det_class[ranking[at]] < k) {
                at++;
            }
            seg[k] = at;
        }
    }

    for (k = 0; k < n_class; k++) {
        for (m = 0; m < n_md; m++) {
            reset_state(&state[m], n_lane);
        }
        for (p = seg[k]; p < seg[k + 1]; p++) {
            const det_record *det = &rec[ranking[p]];
            for (m = 0; m < n_md; m++) {
                walk_state *s = &state[m];
                uint64_t bits;
                Py_ssize_t w;
                if (det->rank >= max_dets[m]) {
                    continue;
                }
                if (s->count == 0) {
                    s->first_score = det->score;
                }
                s->count++;
                for (w = 0; w < n_word; w++) {
                    s->small[w] += byte_spread[(det->ignored >> (8 * w)) & 0xff];
                }
                bits = det->tp;
                while (bits) {
                    const int lane = lowest_bit(bits);
                    const int64_t j = s->tp[lane]++;
                    const int64_t n_tp = j + 1;
                    const int64_t n_ignored =
                        s->ignored[lane]
                        + (int64_t)((s->small[lane >> 3] >> (8 * (lane & 7))) & 0xff);
                    const double tp_f = (double)n_tp;
                    const double fp_f = (double)(s->count - n_tp - n_ignored);
                    double value;
                    const int64_t *need =
                        tp_needed + ((Py_ssize_t)(lane / n_thr) * n_class + k) * n_r;
                    double *lane_piece = piece + ((size_t)m * n_lane + lane) * n_r;
                    Py_ssize_t q = s->next_r[lane];
                    bits &= bits - 1;
                    if (devkit) {
                        const double sum = tp_f + fp_f;
                        value = tp_f / (sum >= eps ? sum : eps);
                    }
                    else {
                        value = tp_f / (fp_f + tp_f + eps);
                    }
                    if (q < n_r && target_index(need[q]) <= j) {
                        double *lane_score = piece_score + ((size_t)m * n_lane + lane) * n_r;
                        while (q < n_r && target_index(need[q]) <= j) {
                            lane_piece[q] = value;
                            lane_score[q] = det->score;
                            q++;
                        }
                        s->next_r[lane] = q;
                    }
                    else if (q > 0 && value > lane_piece[q - 1]) {
                        lane_piece[q - 1] = value;
                    }
                }
                if (s->count % 255 == 0) {
                    flush_small(s, n_word);
                }
            }
        }
        /* The class's outputs for every max_dets value and lane. */
        for (m = 0; m < n_md; m++) {
            const walk_state *s = &state[m];
            const int has_dets = s->count > 0;
            for (L = 0; L < n_lane; L++) {
                const Py_ssize_t a = L / n_thr, t = L % n_thr;
                const int64_t n_pos = n_positive[k * n_area + a];
                const int64_t n_tp = s->tp[L];
                const int64_t *need = tp_needed + (a * n_class + k) * n_r;
                const double *lane_piece = piece + ((size_t)m * n_lane + L) * n_r;
                const double *lane_score = piece_score + ((size_t)m * n_lane + L) * n_r;
                /* (m, t, a, k, r) and (m, t, a, k) */
                const Py_ssize_t cell = ((m * n_thr + t) * n_area + a) * n_class + k;
                double *out_precision = precision + cell * n_r;
                double *out_scores = scores + cell * n_r;
                double run = 0.0;
                if (n_pos <= 0) {
                    continue;
                }
                recall[cell] = has_dets ? (double)n_tp / (double)n_pos : 0.0;
                for (r = n_r - 1; r >= 0; r--) {
                    const int64_t target = need[r] > 1 ? need[r] : 1;
                    const int has_target = target <= n_tp;
                    const double value = has_target ? lane_piece[r] : 0.0;
                    if (r == n_r - 1 || value > run) {
                        run = value;
                    }
                    out_precision[r] = run;
                    if (has_target && need[r] > 0) {
                        out_scores[r] = lane_score[r];
                    }
                    else if (has_target || (need[r] == 0 && has_dets)) {
                        out_scores[r] = s->first_score;
                    }
                    else {
                        out_scores[r] = 0.0;
                    }
                }
            }
        }
    }
    status = 0;
done:
    free(rec);
    free(seg);
    free(state);
    free(piece);
    free(piece_score);
    return status;
}

PyDoc_STRVAR(accumulate_doc,
"accumulate(det_is_tp, det_is_ignored, ranking, det_rank, det_class, det_score, n_positive,\n"
"           tp_needed, max_dets, n_area, n_thr, n_class, devkit, precision, scores, recall)\n"
"--\n\n"
"The point-sampled accumulation of every max_dets value (see deteval.accumulate).\n\n"
"det_is_tp, det_is_ignored: bool (n_area * n_thr, n_det); ranking, det_rank, det_class:\n"
"int64; det_score: float64 (n_det,); n_positive: int64 (n_class, n_area); tp_needed: int64\n"
"(n_area, n_class, n_r); max_dets: int64 (n_md,). precision and scores (n_md, n_thr, n_area,\n"
"n_class, n_r) and recall (n_md, n_thr, n_area, n_class), float64, are filled in place where\n"
"a class has positives. Returns True, or None when the inputs break the kernel's assumptions.");

static PyObject *
cacc_accumulate(PyObject *self, PyObject *args)
{
    Py_buffer det_is_tp, det_is_ignored, ranking, det_rank, det_class, det_score, n_positive,
        tp_needed, max_dets, precision, scores, recall;
    Py_ssize_t n_area, n_thr, n_class, n_det, n_lane, n_ranked, n_md, n_r;
    int devkit, fits, status = 1;
    PyObject *out = NULL;

    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*nnnpw*w*w*:accumulate", &det_is_tp,
                          &det_is_ignored, &ranking, &det_rank, &det_class, &det_score,
                          &n_positive, &tp_needed, &max_dets, &n_area, &n_thr, &n_class, &devkit,
                          &precision, &scores, &recall)) {
        return NULL;
    }
    n_det = det_score.len / 8;
    n_lane = n_area * n_thr;
    n_ranked = ranking.len / 8;
    n_md = max_dets.len / 8;
    n_r = (n_area * n_class > 0) ? tp_needed.len / 8 / (n_area * n_class) : 0;
    fits = n_area >= 1 && n_thr >= 1 && n_class >= 1 && n_lane <= 64 && n_md >= 1 && n_r >= 1
           && has_items(&det_score, n_det, 8) && has_items(&det_is_tp, n_lane * n_det, 1)
           && has_items(&det_is_ignored, n_lane * n_det, 1) && has_items(&ranking, n_ranked, 8)
           && has_items(&det_rank, n_det, 8) && has_items(&det_class, n_det, 8)
           && has_items(&n_positive, n_class * n_area, 8)
           && has_items(&tp_needed, n_area * n_class * n_r, 8) && has_items(&max_dets, n_md, 8)
           && has_items(&precision, n_md * n_lane * n_class * n_r, 8)
           && has_items(&scores, n_md * n_lane * n_class * n_r, 8)
           && has_items(&recall, n_md * n_lane * n_class, 8);
    if (fits) {
        Py_BEGIN_ALLOW_THREADS
        status = run_accumulate(det_is_tp.buf, det_is_ignored.buf, n_det, n_lane, ranking.buf,
                                n_ranked, det_rank.buf, det_class.buf, det_score.buf,
                                n_positive.buf, tp_needed.buf, max_dets.buf, n_md, n_area, n_thr,
                                n_class, n_r, devkit, precision.buf, scores.buf, recall.buf);
        Py_END_ALLOW_THREADS
    }
    if (status < 0) {
        PyErr_NoMemory();
    }
    else {
        out = Py_NewRef(status == 0 ? Py_True : Py_None);
    }
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
    return out;
}

static PyMethodDef cacc_methods[] = {
    {"accumulate", cacc_accumulate, METH_VARARGS, accumulate_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cacc_module = {
    PyModuleDef_HEAD_INIT,
    "deteval._cacc",
    "Compiled point-sampled accumulation; the numpy code in deteval.accumulate is its twin.",
    -1,
    cacc_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__cacc(void)
{
    init_byte_spread();
    return PyModule_Create(&cacc_module);
}
