/*
 * deteval.geometry._cmask: pycocotools' compressed RLE ``counts`` strings checked and summarised in one
 * pass per string, with no temporary per character.
 *
 * The compiled twin of ``deteval.io.segmentation.rle._check_compressed`` and
 * ``_compressed_run_sums`` (problem code and run sum of every string), which also gives each mask's
 * pixel count (the sum of its odd runs, as ``pycocotools.mask.area``) and its bounding box (as
 * ``pycocotools.mask.toBbox``). The Python entry is ``deteval.io.segmentation.rle._summarise_compressed``.
 *
 * The encoding (learned from pycocotools' documentation and behaviour; this is our own code): each run
 * length is written in groups of 5 bits, lowest first, each as the character ``48 + group``, where bit
 * 0x20 of a group says another group follows and bit 0x10 of the last group is the sign. From the
 * fourth run on, the value is the difference to the run two before. Runs are 32-bit unsigned values
 * (sums wrap modulo 2**32). Runs alternate background / foreground, starting with background, in
 * column-major pixel order.
 *
 * Problem codes, as the numpy twin gives them: 0 fine, 1 a character outside '0'..'o' (checked first),
 * 2 the string is empty or ends inside a run. The run sum is -1 when a run has more than 7 groups (35
 * bits: more than any accepted mask needs); it is only meaningful for problem 0. The box is computed
 * only for strings of problem 0 whose runs add up to ``height * width`` with ``height > 0`` and no run
 * but the first of length 0 (pycocotools' encoder never writes one, and this walk and pycocotools'
 * ``toBbox`` disagree on them: the caller asks pycocotools); other rows
 * get NaN (pycocotools would divide by zero or read past the mask; the caller refuses them or falls
 * back). All box arithmetic is in 32-bit unsigned integers, as pycocotools', then converted to double.
 *
 * Plain C and the CPython API only (arrays as buffers, no numpy headers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../_buffer_checks.h"
#include "../_parallel.h"

#define MAX_GROUPS 7

/* The running state of one mask's box: the walk over (background, foreground) pairs of runs. The
 * column and row of the last position located (``at``) are kept, so that the next, further on, is
 * found by adding (a division only when a run crosses more than one column). */
typedef struct {
    uint32_t h, w, xs, ys, xe, ye, x_first, covered;
    uint32_t at, at_x, at_y;
    int has_pair, zero_run; /* zero_run: a run of length 0 after the first (no box: pycocotools') */
} BoxWalk;

/* Column ``x = t / h`` and row ``y = t % h`` of position ``t``. */
static inline void locate(BoxWalk *b, uint32_t t, uint32_t *x, uint32_t *y)
{
    if (t >= b->at) {
        const uint64_t row = (uint64_t)b->at_y + (t - b->at);
        if (row < b->h) {
            *x = b->at_x;
            *y = (uint32_t)row;
        } else if (row < 2 * (uint64_t)b->h) {
            *x = b->at_x + 1;
            *y = (uint32_t)(row - b->h);
        } else {
            *x = b->at_x + (uint32_t)(row / b->h);
            *y = (uint32_t)(row % b->h);
        }
    } else {
        *y = t % b->h;
        *x = t / b->h;
    }
    b->at = t;
    b->at_x = *x;
    b->at_y = *y;
}

/* One run end position ``t`` (column-major) into the box; ``is_fg_end`` marks the end of a
 * foreground run (its column compared with that of its start: a run crossing a column spans the full
 * height). */
static inline void box_point(BoxWalk *b, uint32_t t, int is_fg_end)
{
    uint32_t x, y;
    locate(b, t, &x, &y);
    if (!is_fg_end)
        b->x_first = x;
    else if (b->x_first < x) {
        b->ys = 0;
        b->ye = b->h - 1;
    }
    if (x < b->xs) b->xs = x;
    if (x > b->xe) b->xe = x;
    if (y < b->ys) b->ys = y;
    if (y > b->ye) b->ye = y;
}

/* The walk's box as pycocotools' toBbox writes it, ``[x, y, w, h]`` (0s without a foreground run). */
static inline void box_out(const BoxWalk *b, double *bb)
{
    if (!b->has_pair) {
        bb[0] = bb[1] = bb[2] = bb[3] = 0.0;
        return;
    }
    bb[0] = (double)b->xs;
    bb[1] = (double)b->ys;
    bb[2] = (double)(uint32_t)(b->xe - b->xs + 1);
    bb[3] = (double)(uint32_t)(b->ye - b->ys + 1);
}

/* pycocotools' toBbox (xywh) of a mask's runs (h > 0, runs adding up to h * w, no run of length 0 but
 * the first: what the rasteriser makes), by the walk summarise() does while decoding. */
static void box_of_runs(const uint32_t *runs, Py_ssize_t n, uint32_t h, uint32_t w, double *bb)
{
    BoxWalk b = {0};
    b.h = h;
    b.w = w;
    b.xs = w;
    b.ys = h;
    uint32_t position = 0;
    for (Py_ssize_t m = 1; m < n; m += 2) {
        const uint32_t fg_start = position + runs[m - 1];
        box_point(&b, fg_start, 0);
        box_point(&b, fg_start + runs[m] - 1, 1);
        b.has_pair = 1;
        position = fg_start + runs[m];
    }
    box_out(&b, bb);
}

/* The value of a run written in more than one group: ``c`` its first group (bit 0x20 set), ``*ps``
 * on the next character; the string must not end inside the run. Returns 1 for a character outside
 * '0'..'o', else 0 with the value in ``*x`` (its groups beyond MAX_GROUPS dropped: ``*too_long``). */
static inline int read_groups(const unsigned char **ps, int c, int64_t *x, int *too_long)
{
    const unsigned char *s = *ps;
    int64_t v = c & 0x1f;
    int k = 1, more = 1;
    while (more) { /* ends within the string: its last character has no 0x20 */
        c = *s++ - 48;
        if ((unsigned)c > 63) return 1;
        if (k < MAX_GROUPS) v |= (int64_t)(c & 0x1f) << (5 * k);
        k++;
        more = c & 0x20;
    }
    if (k > MAX_GROUPS) *too_long = 1;
    if (c & 0x10) v -= (int64_t)1 << (5 * (k < MAX_GROUPS + 1 ? k : MAX_GROUPS + 1));
    *x = v;
    *ps = s;
    return 0;
}

/* What summarise() gives of one string. */
typedef struct {
    int64_t sum;   /* the runs' sum (-1: a run of more than MAX_GROUPS groups) */
    uint32_t area; /* the foreground runs' sum modulo 2**32 */
    int zero_run;  /* a run of length 0 after the first */
} Summary;

/* Decode one string (pycocotools' rleFrString: run m is its groups, plus run m - 2 from the fourth
 * on, modulo 2**32; a one-character run is a value in -16..15). Returns the problem code and fills
 * ``*out``. With ``b`` (h > 0), the box walk of pycocotools' toBbox over the (background,
 * foreground) pairs of runs: when h * w < 2**32 by following only the row of the position (a
 * foreground run that crosses a column gives the full height), the columns of the first foreground
 * pixel and of the last taken at the end (positions only grow: runs after the first are never 0
 * where the box is kept); else by box_point on 32-bit positions, wrapping as pycocotools' do. */
static int summarise(const unsigned char *s, Py_ssize_t len, Summary *out, BoxWalk *b)
{
    out->sum = 0;
    out->area = 0;
    out->zero_run = 0;
    if (len == 0) return 2;
    /* A character outside '0'..'o' is problem 1 wherever it is, before problem 2: the last
     * character first, then (a string ending inside a run) all of them, else each as decoded. */
    const unsigned char last = (unsigned char)(s[len - 1] - 48);
    if (last > 63) return 1;
    if (last & 0x20) {
        for (Py_ssize_t i = 0; i < len; i++)
            if ((unsigned char)(s[i] - 48) > 63) return 1;
        return 2;
    }
    const unsigned char *end = s + len;
    const int walk = b != NULL && (uint64_t)b->h * b->w > UINT32_MAX; /* box_point on wrapping positions */
    const int rows = b != NULL && !walk;                                 /* the row shortcut */
    const uint64_t h = b ? b->h : 1;
    uint32_t before1 = 0, before2 = 0; /* runs m - 1 and m - 2 */
    uint64_t sum = 0, y = 0;           /* y: the row of position ``sum`` (rows) */
    uint64_t ys = h, ye = 0, first = 0, final = 0;
    uint32_t area = 0;
    int too_long = 0, zero_run = 0, has_pair = 0, full = 0;
    Py_ssize_t m = 0;
#define READ_RUN(run)                                                                                                  \
    do {                                                                                                               \
        int c_ = *s++ - 48;                                                                                            \
        int64_t x_;                                                                                                    \
        if ((unsigned)c_ > 63) return 1;                                                                               \
        if (!(c_ & 0x20))                                                                                              \
            x_ = (c_ ^ 0x10) - 0x10; /* bit 0x10 is the sign */                                                        \
        else if (read_groups(&s, c_, &x_, &too_long))                                                                  \
            return 1;                                                                                                  \
        if (m > 2) x_ += (int64_t)before2;                                                                             \
        run = (uint32_t)x_;                                                                                            \
        before2 = before1;                                                                                             \
        before1 = run;                                                                                                 \
        m++;                                                                                                           \
    } while (0)
    while (s < end) {
        uint32_t bg, fg;
        READ_RUN(bg);
        zero_run |= m > 1 && bg == 0;
        if (s >= end) {
            sum += bg;
            break;
        }
        READ_RUN(fg);
        zero_run |= fg == 0;
        area += fg;
        const uint64_t start = sum + bg;
        if (rows && !full) {
            uint64_t row = y + bg;
            if (row >= h) {
                row -= h;
                if (row >= h) row %= h;
            }
            const uint64_t row_end = row + fg - 1; /* fg == 0 (no box is kept): any value */
            if (row_end >= h) {
                full = 1; /* the run crosses a column: pycocotools' full height */
            } else {
                if (row < ys) ys = row;
                if (row_end > ye) ye = row_end;
                y = row_end + 1 == h ? 0 : row_end + 1;
            }
        } else if (walk) {
            const uint32_t fg_start = (uint32_t)start;
            box_point(b, fg_start, 0);
            box_point(b, fg_start + fg - 1, 1);
        }
        if (!has_pair) first = start;
        has_pair = 1;
        sum = start + fg;
        final = sum - 1;
    }
#undef READ_RUN
    out->sum = too_long ? -1 : (int64_t)sum;
    out->area = area;
    out->zero_run = zero_run;
    if (b) {
        b->has_pair = has_pair;
        b->zero_run = zero_run;
        if (rows && has_pair) {
            b->xs = (uint32_t)(first / h);
            b->xe = (uint32_t)(final / h);
            b->ys = full ? 0 : (uint32_t)ys;
            b->ye = full ? b->h - 1 : (uint32_t)ye;
        }
    }
    return 0;
}

/* One summarise_compressed call's arrays: each part writes the rows [lo, hi) of the outputs. */
typedef struct {
    const unsigned char *blob;
    const int64_t *offsets, *size;
    int8_t *problem;
    int64_t *sums;
    double *areas, *boxes;
} SummariseJob;

static void summarise_part(void *ctx, Py_ssize_t lo, Py_ssize_t hi)
{
    const SummariseJob *j = (const SummariseJob *)ctx;
    for (Py_ssize_t r = lo; r < hi; r++) {
        const int64_t h = j->size[2 * r], w = j->size[2 * r + 1];
        BoxWalk walk = {0};
        const int want_box = h > 0 && h <= UINT32_MAX && w >= 0 && w <= UINT32_MAX;
        if (want_box) {
            walk.h = (uint32_t)h;
            walk.w = (uint32_t)w;
            walk.xs = walk.w;
            walk.ys = walk.h;
        }
        Summary sm;
        const int code = summarise(j->blob + j->offsets[r], (Py_ssize_t)(j->offsets[r + 1] - j->offsets[r]), &sm,
                                   want_box ? &walk : NULL);
        const int whole = code == 0 && sm.sum == h * w;
        /* the partial values where they mean nothing: 0, as the numpy twin gives them */
        j->problem[r] = (int8_t)code;
        j->sums[r] = code == 0 ? sm.sum : 0;
        j->areas[r] = whole ? (double)sm.area : 0.0;
        double *bb = j->boxes + 4 * r;
        if (!whole || !want_box || sm.zero_run) {
            bb[0] = bb[1] = bb[2] = bb[3] = NAN;
        } else {
            box_out(&walk, bb);
        }
    }
}

/* Cut [0, n) into parts of about equal characters (offsets[r] - offsets[0] is the running cost;
 * plus one per row, so that runs of empty strings are shared too). */
static int char_bounds(const int64_t *offsets, Py_ssize_t n, int threads, Py_ssize_t *bounds)
{
    if (threads <= 1 || n < 2) return even_bounds(n, 1, bounds);
    int64_t *cum = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!cum) return even_bounds(n, threads, bounds);
    for (Py_ssize_t r = 0; r <= n; r++) cum[r] = offsets[r] - offsets[0] + r;
    const int parts = weighted_bounds(cum, n, threads, bounds);
    PyMem_RawFree(cum);
    return parts;
}

PyDoc_STRVAR(summarise_compressed_doc,
             "summarise_compressed(blob, offsets, sizes, problem, sums, areas, boxes, threads)\n"
             "\n"
             "For each compressed counts string ``blob[offsets[r]:offsets[r + 1]]`` (bytes, int64 offsets\n"
             "n + 1, non-decreasing, within the blob) with its int64 ``[h, w]`` row of ``sizes`` (n, 2):\n"
             "write the problem code (int8), the run sum (int64; 0 where the problem is not 0), the\n"
             "foreground pixel count (float64; 0 unless the problem is 0 and the runs add up to h * w)\n"
             "and the xywh box (float64, n x 4; NaN where not computed). The rows are split into\n"
             "``threads`` parts of about equal characters, run on as many threads with the GIL released\n"
             "(each writes its own rows: the same values for every count).");

static PyObject *summarise_compressed(PyObject *self, PyObject *args)
{
    Py_buffer blob_v, offset_v, size_v, problem_v, sum_v, area_v, box_v;
    int threads;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*w*w*i", &blob_v, &offset_v, &size_v, &problem_v, &sum_v, &area_v,
                          &box_v, &threads))
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t n = problem_v.len;
    const Py_buffer *views[7] = {&problem_v, &sum_v, &area_v, &box_v, &size_v, &offset_v, &blob_v};
    if (offset_v.len != (n + 1) * 8 || size_v.len != n * 16 || sum_v.len != n * 8 || area_v.len != n * 8 ||
        box_v.len != n * 32) {
        PyErr_SetString(PyExc_ValueError, "summarise_compressed: buffer sizes do not match");
        goto done;
    }
    if (!is_aligned(&offset_v, 8) || (n && (!is_aligned(&size_v, 8) || !is_aligned(&sum_v, 8) ||
                                            !is_aligned(&area_v, 8) || !is_aligned(&box_v, 8)))) {
        PyErr_SetString(PyExc_ValueError, "summarise_compressed: unaligned buffer");
        goto done;
    }
    if (outputs_overlap(views, 4, 7, "summarise_compressed")) goto done;
    const int64_t *offsets = (const int64_t *)offset_v.buf;
    for (Py_ssize_t r = 0; r < n; r++) {
        if (offsets[r] < 0 || offsets[r + 1] < offsets[r] || offsets[r + 1] > blob_v.len) {
            PyErr_SetString(PyExc_ValueError, "summarise_compressed: offsets outside the blob or decreasing");
            goto done;
        }
    }
    SummariseJob job = {(const unsigned char *)blob_v.buf, offsets, (const int64_t *)size_v.buf,
                        (int8_t *)problem_v.buf, (int64_t *)sum_v.buf, (double *)area_v.buf,
                        (double *)box_v.buf};
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t bounds[DETEVAL_MAX_PARTS + 1];
    const int parts = char_bounds(offsets, n, threads, bounds);
    parallel_parts(bounds, parts, summarise_part, &job);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&blob_v);
    PyBuffer_Release(&offset_v);
    PyBuffer_Release(&size_v);
    PyBuffer_Release(&problem_v);
    PyBuffer_Release(&sum_v);
    PyBuffer_Release(&area_v);
    PyBuffer_Release(&box_v);
    return result;
}

/* A compressed counts string, ``s`` to ``end``, read run by run by decode_runs (pycocotools'
 * rleFrString): the decoded value of run m is its groups, plus run m - 2 from
 * the fourth run on (modulo 2**32). A string that ends inside a run ends there (callers pass
 * checked strings). */
typedef struct {
    const unsigned char *s, *end;
} RunReader;

/* pycocotools' rleIou walk of two masks' runs (odd runs are foreground): the pixels in both
 * (``*inter``) and in either (``*uni``), in 32-bit unsigned arithmetic. As pycocotools', it moves one
 * run on per side per step and stops when the runs left on both sides add up to 0, which, with runs
 * of length 0, can be before the end of the masks; and, unlike it, when one side has ended. */
static void rle_walk(const uint32_t *a, Py_ssize_t ka, const uint32_t *b, Py_ssize_t kb, uint32_t *inter,
                     uint32_t *uni)
{
    uint32_t ca = ka ? a[0] : 0, cb = kb ? b[0] : 0, i = 0, u = 0, ct = 1;
    Py_ssize_t ia = 1, ib = 1;
    int va = 0, vb = 0;
    while (ct > 0) {
        const uint32_t c = ca < cb ? ca : cb;
        /* one side ended with runs left on the other: masks whose runs add up to different totals,
         * which pycocotools would walk forever (never two checked masks of one size) */
        if (c == 0 && ((ca == 0 && ia >= ka) || (cb == 0 && ib >= kb))) break;
        if (va || vb) {
            u += c;
            if (va && vb) i += c;
        }
        ct = 0;
        ca -= c;
        if (!ca && ia < ka) {
            ca = a[ia++];
            va = !va;
        }
        ct += ca;
        cb -= c;
        if (!cb && ib < kb) {
            cb = b[ib++];
            vb = !vb;
        }
        ct += cb;
    }
    *inter = i;
    *uni = u;
}

/* One mask decoded by decode_runs. */
typedef struct {
    Py_ssize_t n;   /* runs */
    uint64_t total; /* their sum */
    uint32_t area;  /* the foreground runs' sum, modulo 2**32 */
    int plain;      /* no run of length 0 after the first, a total below 2**32 */
} Decoded;

/* A run of more than one group as decode_runs reads it: ``c`` its first group (bit 0x20 set), ``*ps``
 * on the next character; a string that ends inside the run ends it. Returns the value modulo 2**32
 * (without the delta). */
static inline uint32_t unchecked_groups(const unsigned char **ps, const unsigned char *end, int c)
{
    const unsigned char *s = *ps;
    int64_t x = c & 0x1f;
    int k = 1, more = 1;
    while (more && s < end) {
        c = (*s++ - 48) & 0x3f;
        if (k < MAX_GROUPS) x |= (int64_t)(c & 0x1f) << (5 * k);
        k++;
        more = c & 0x20;
    }
    if (c & 0x10) x -= (int64_t)1 << (5 * (k < MAX_GROUPS + 1 ? k : MAX_GROUPS + 1));
    *ps = s;
    return (uint32_t)x;
}

/* The runs of ``reader``'s string into ``runs``, and into ``position`` where each run starts, then
 * where the last ends (modulo 2**32: meaningful for a plain mask); room for one run per character
 * (and one position more). Unchecked (callers pass checked strings): a character outside '0'..'o'
 * is read modulo 64. */
static Decoded decode_runs(RunReader reader, uint32_t *runs, uint32_t *position)
{
    const unsigned char *s = reader.s, *end = reader.end;
    /* before1, before2: the runs one and two before, added from the fourth run on; 0 before (the
     * first run is kept as 0 there, so the third adds nothing) */
    uint32_t before1 = 0, before2 = 0, at = 0, area = 0, run;
    uint64_t total = 0;
    int zero = 0;
    Py_ssize_t m = 0; /* at most one run per character */
    position[0] = 0;
    /* the one-character run (a value in -16..15 before the delta: most of them) is taken without
     * the group loop */
#define NEXT_RUN()                                                                                                     \
    do {                                                                                                               \
        const int c_ = (*s++ - 48) & 0x3f;                                                                             \
        run = before2 + (!(c_ & 0x20) ? (uint32_t)((c_ ^ 0x10) - 0x10) : unchecked_groups(&s, end, c_));             \
        before2 = before1;                                                                                             \
        before1 = run;                                                                                                 \
        total += run;                                                                                                  \
        runs[m++] = run;                                                                                               \
        position[m] = at += run;                                                                                       \
    } while (0)
    if (s < end) {
        NEXT_RUN();
        before1 = 0;
    }
    while (s < end) {
        NEXT_RUN(); /* a foreground run */
        area += run;
        zero |= run == 0;
        if (s >= end) break;
        NEXT_RUN(); /* a background run */
        zero |= run == 0;
    }
#undef NEXT_RUN
    Decoded out = {m, total, area, !zero && total <= UINT32_MAX};
    return out;
}

/* Spans ``start[r]:stop[r]`` of a blob, with the pixel count (float64, < 2**32) and the box of each:
 * pycocotools' toBbox as xyxy float64 (x, y, x + w, y + h: the sums bbIou makes). */
typedef struct {
    Py_buffer blob, start, stop, area, box;
    Py_ssize_t n;
} Spans;

static int spans_ok(Spans *sp, const char *where)
{
    sp->n = sp->start.len / 8;
    if (sp->start.len % 8 || sp->stop.len != sp->start.len || sp->area.len != sp->start.len ||
        sp->box.len != 4 * sp->start.len ||
        (sp->n && (!is_aligned(&sp->start, 8) || !is_aligned(&sp->stop, 8) || !is_aligned(&sp->area, 8) ||
                   !is_aligned(&sp->box, 8)))) {
        PyErr_Format(PyExc_ValueError, "%s: span buffers do not match or are unaligned", where);
        return 0;
    }
    const int64_t *a = (const int64_t *)sp->start.buf, *b = (const int64_t *)sp->stop.buf;
    for (Py_ssize_t r = 0; r < sp->n; r++) {
        if (a[r] < 0 || b[r] < a[r] || b[r] > sp->blob.len) {
            PyErr_Format(PyExc_ValueError, "%s: a span outside its blob or reversed", where);
            return 0;
        }
    }
    return 1;
}

/* Whether row r's area is a pixel count (in [0, 2**32)) and its box has no NaN. */
static int row_ok(const Spans *sp, int64_t r)
{
    const double area = ((const double *)sp->area.buf)[r], *box = (const double *)sp->box.buf + 4 * r;
    return area >= 0 && area <= (double)UINT32_MAX && box[0] == box[0] && box[1] == box[1] && box[2] == box[2] &&
           box[3] == box[3];
}

/* pycocotools' bbIou(d, g) > 0 (which rleIou asks before walking the runs): the boxes overlap. The
 * boxes are xyxy, their ends the sums x + w and y + h bbIou computes (the same doubles). */
static int boxes_overlap(const double *D, const double *G)
{
    const double w = fmin(D[2], G[2]) - fmax(D[0], G[0]);
    if (w <= 0) return 0;
    const double h = fmin(D[3], G[3]) - fmax(D[1], G[1]);
    return h > 0;
}

static RunReader reader_of(const Spans *sp, int64_t r)
{
    const unsigned char *blob = (const unsigned char *)sp->blob.buf;
    RunReader d = {blob + ((const int64_t *)sp->start.buf)[r], blob + ((const int64_t *)sp->stop.buf)[r]};
    return d;
}

/* The part of ``parts`` that starts at ``lo`` (a part that does anything has lo < its end). */
static int part_of(const Py_ssize_t *bounds, int parts, Py_ssize_t lo)
{
    for (int k = 0; k < parts; k++)
        if (bounds[k] == lo && bounds[k + 1] > lo) return k;
    return 0;
}

/* One decoded mask of a MaskCache: its runs at ``arena + at``, and when ``plain`` (no run of length
 * 0 after the first, runs adding up to less than 2**32) the n + 1 positions where its runs start and
 * the last ends at ``arena + at + chars`` (``pos``; foreground run i spans pos[2i + 1] .. pos[2i + 2]). */
typedef struct {
    int64_t row;  /* the mask's row of its side */
    uint64_t gen; /* the slot is in use when this is the cache's generation */
    Py_ssize_t at, n, pos;
    uint64_t total; /* the runs' sum */
    uint32_t area;  /* the foreground runs' sum (plain masks) */
    int plain;
} Slot;

/* The masks of one side a part has decoded, so that each is decoded once while its pairs come: the
 * ground truths of an image and class, compared with each of its detections in turn, stay decoded
 * for all of them. Slots by row (open addressing) in ``n_slots`` (a power of two) and one arena of
 * runs; when half the slots are used, or the arena would pass ARENA_BUDGET values, the cache is
 * emptied (a new generation: slots and arena are reused), so it holds about one group's masks. */
typedef struct {
    Slot *slots;
    Py_ssize_t n_slots, live;
    uint64_t gen;
    uint32_t *arena;
    Py_ssize_t used, cap;
    int64_t last_row; /* the row of the last lookup (-1: none), in slot last_slot */
    Py_ssize_t last_slot;
} MaskCache;

#define ARENA_BUDGET ((Py_ssize_t)1 << 24) /* 64 MiB of runs: beyond, the cache starts again */

/* A cache of at least ``want`` slots (plus room: emptied at half). Returns -1 when out of memory. */
static int cache_init(MaskCache *mc, Py_ssize_t want)
{
    Py_ssize_t n = 16;
    while (n < 2 * want + 2 && n < ((Py_ssize_t)1 << 20)) n *= 2;
    memset(mc, 0, sizeof *mc);
    mc->slots = (Slot *)PyMem_RawCalloc((size_t)n, sizeof(Slot));
    if (!mc->slots) return -1;
    mc->n_slots = n;
    mc->gen = 1;
    mc->last_row = -1;
    return 0;
}

static void cache_free(MaskCache *mc)
{
    PyMem_RawFree(mc->slots);
    PyMem_RawFree(mc->arena);
}

/* The decoded mask of ``row`` of ``sp``, decoded now unless the cache holds it; NULL when out of
 * memory. The pointer is valid until the next lookup in the same cache. */
static const Slot *cache_get(MaskCache *mc, const Spans *sp, int64_t row)
{
    if (row == mc->last_row) return &mc->slots[mc->last_slot];
    const Py_ssize_t mask = mc->n_slots - 1;
    const uint64_t hash = (uint64_t)row * 0x9E3779B97F4A7C15ull;
    Py_ssize_t k = (Py_ssize_t)(hash >> 40) & mask;
    for (;; k = (k + 1) & mask) {
        const Slot *sl = &mc->slots[k];
        if (sl->gen != mc->gen) break;
        if (sl->row == row) {
            mc->last_row = row;
            mc->last_slot = k;
            return sl;
        }
    }
    const RunReader reader = reader_of(sp, row);
    const Py_ssize_t chars = reader.end - reader.s, need = 2 * chars + 1;
    if (2 * (mc->live + 1) > mc->n_slots || (mc->used && mc->used + need > ARENA_BUDGET)) {
        mc->gen++; /* empty: every slot stale, the arena reused from its start */
        mc->live = 0;
        mc->used = 0;
        k = (Py_ssize_t)(hash >> 40) & mask;
    }
    if (mc->used + need > mc->cap) {
        Py_ssize_t cap = 2 * mc->cap;
        if (cap < mc->used + need) cap = mc->used + need;
        if (cap < 4096) cap = 4096;
        uint32_t *grown = (uint32_t *)PyMem_RawRealloc(mc->arena, sizeof(uint32_t) * (size_t)cap);
        if (!grown) return NULL;
        mc->arena = grown;
        mc->cap = cap;
    }
    Slot *sl = &mc->slots[k];
    uint32_t *runs = mc->arena + mc->used;
    const Decoded dec = decode_runs(reader, runs, runs + chars);
    *sl = (Slot){row, mc->gen, mc->used, dec.n, mc->used + chars, dec.total, dec.area, dec.plain};
    mc->used += need;
    mc->live++;
    mc->last_row = row;
    mc->last_slot = k;
    return sl;
}

/* The first foreground span (index i, odd) of positions ``p`` (n runs) that ends after ``at``. */
static Py_ssize_t first_span_ending_after(const uint32_t *p, Py_ssize_t n, uint32_t at)
{
    Py_ssize_t lo = 0, hi = n / 2; /* spans t in [lo, hi): span t ends at p[2t + 2] */
    while (lo < hi) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (p[2 * mid + 2] > at)
            hi = mid;
        else
            lo = mid + 1;
    }
    return 2 * lo + 1;
}

/* The pixels in both of two plain masks: their foreground spans (positions 2i + 1 .. 2i + 2 of
 * each, n runs) intersected in one pass from the first spans that can meet. */
static uint32_t common_pixels(const uint32_t *a, Py_ssize_t na, const uint32_t *b, Py_ssize_t nb)
{
    if (na < 2 || nb < 2) return 0;
    uint32_t inter = 0;
    Py_ssize_t i = first_span_ending_after(a, na, b[1]), j = first_span_ending_after(b, nb, a[1]);
    while (i < na && j < nb) {
        const uint32_t lo = a[i] > b[j] ? a[i] : b[j];
        const uint32_t a_end = a[i + 1], b_end = b[j + 1];
        const uint32_t hi = a_end < b_end ? a_end : b_end;
        inter += hi > lo ? hi - lo : 0;
        i += 2 * (Py_ssize_t)(a_end <= b_end);
        j += 2 * (Py_ssize_t)(b_end <= a_end);
    }
    return inter;
}

/* One pair_iou call: pairs [lo, hi) of a part are compared with the part's own decoded masks. */
typedef struct {
    const Spans *det, *gt;
    const int64_t *det_rows, *gt_rows;
    const uint8_t *is_crowd;
    double *iou;
    const Py_ssize_t *bounds;
    int parts;
    int failed[DETEVAL_MAX_PARTS];
} PairJob;

/* The longest stretch of pairs in [lo, hi) with one row of ``rows``: how many masks of the other
 * side one mask of this side meets in a row (a group's size). */
static Py_ssize_t longest_stretch(const int64_t *rows, Py_ssize_t lo, Py_ssize_t hi)
{
    Py_ssize_t best = 0, run = 0;
    for (Py_ssize_t k = lo; k < hi; k++) {
        run = k > lo && rows[k] == rows[k - 1] ? run + 1 : 1;
        if (run > best) best = run;
    }
    return best;
}

static void pair_part(void *ctx, Py_ssize_t lo, Py_ssize_t hi)
{
    if (lo >= hi) return;
    PairJob *j = (PairJob *)ctx;
    const double *det_area = (const double *)j->det->area.buf;
    const double *det_box = (const double *)j->det->box.buf, *gt_box = (const double *)j->gt->box.buf;
    MaskCache dc, gc;
    int failed = cache_init(&dc, longest_stretch(j->gt_rows, lo, hi));
    failed |= cache_init(&gc, longest_stretch(j->det_rows, lo, hi));
    for (Py_ssize_t k = lo; k < hi && !failed; k++) {
        const int64_t d = j->det_rows[k], g = j->gt_rows[k];
        if (!boxes_overlap(det_box + 4 * d, gt_box + 4 * g)) {
            j->iou[k] = 0.0;
            continue;
        }
        const Slot *ds = cache_get(&dc, j->det, d), *gs = cache_get(&gc, j->gt, g);
        if (!ds || !gs) {
            failed = 1;
            break;
        }
        const uint32_t *dr = dc.arena + ds->at, *gr = gc.arena + gs->at;
        uint32_t inter, uni;
        if (ds->plain && gs->plain && ds->total == gs->total) {
            /* pycocotools' walk counts every pixel of both: the union is their areas' sum less
             * the common pixels */
            inter = common_pixels(dc.arena + ds->pos, ds->n, gc.arena + gs->pos, gs->n);
            uni = ds->area + gs->area - inter;
        } else {
            rle_walk(dr, ds->n, gr, gs->n, &inter, &uni);
        }
        if (inter == 0)
            uni = 1;
        else if (j->is_crowd[k])
            uni = (uint32_t)det_area[d];
        j->iou[k] = (double)inter / (double)uni;
    }
    cache_free(&dc);
    cache_free(&gc);
    if (failed) j->failed[part_of(j->bounds, j->parts, lo)] = 1;
}

/* Cut the pairs into parts of about equal work: a pair whose boxes overlap costs its two strings'
 * characters (decoding and walking), any other 1. */
static int pair_bounds(const PairJob *j, Py_ssize_t n, int threads, Py_ssize_t *bounds)
{
    if (threads <= 1 || n < 2) return even_bounds(n, 1, bounds);
    int64_t *cum = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!cum) return even_bounds(n, threads, bounds);
    const int64_t *ds = (const int64_t *)j->det->start.buf, *de = (const int64_t *)j->det->stop.buf;
    const int64_t *gs = (const int64_t *)j->gt->start.buf, *ge = (const int64_t *)j->gt->stop.buf;
    const double *det_box = (const double *)j->det->box.buf, *gt_box = (const double *)j->gt->box.buf;
    cum[0] = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        const int64_t d = j->det_rows[k], g = j->gt_rows[k];
        int64_t cost = 1;
        if (boxes_overlap(det_box + 4 * d, gt_box + 4 * g)) cost += (de[d] - ds[d]) + (ge[g] - gs[g]);
        cum[k + 1] = cum[k] + cost;
    }
    const int parts = weighted_bounds(cum, n, threads, bounds);
    PyMem_RawFree(cum);
    return parts;
}

PyDoc_STRVAR(pair_iou_doc,
             "pair_iou(det_blob, det_start, det_stop, det_area, det_box, gt_blob, gt_start, gt_stop, gt_area,\n"
             "         gt_box, det_rows, gt_rows, is_crowd, out, threads)\n"
             "\n"
             "pycocotools' ``mask.iou`` of aligned (detection, ground truth) pairs of compressed RLEs of\n"
             "equal sizes, on the strings where they lie: mask r of a side is ``blob[start[r]:stop[r]]``\n"
             "(int64 spans) with ``area[r]`` pixels (float64) and pycocotools' toBbox ``box[r]`` as xyxy\n"
             "float64 (x, y, x + w, y + h); pair k compares detection ``det_rows[k]`` with ground truth ``gt_rows[k]``\n"
             "(int64), ``is_crowd[k]`` (uint8: intersection over the detection's area). Writes float64\n"
             "``out[k]``: 0 when the boxes do not overlap (pycocotools' bbIou test) or the masks share no\n"
             "pixel, else\n"
             "intersection / union as doubles, from pycocotools' walk of the runs and as it divides.\n"
             "A mask's string is decoded when its first pair comes and kept while the next pairs meet it\n"
             "again (each part keeps about one group's masks per side: pass the pairs of an image and class\n"
             "together, grouped by one side): no mask is made. Two masks without runs of length 0 after the\n"
             "first and of one total are compared by their foreground spans (the union is their areas less\n"
             "the common pixels: what the walk counts), any others by pycocotools' walk of the runs.\n"
             "The pairs are split into ``threads`` parts of about equal work (characters decoded), run on\n"
             "as many threads with the GIL released (each writes its own pairs: the same values for every\n"
             "count).");

static PyObject *pair_iou(PyObject *self, PyObject *args)
{
    Spans det = {0}, gt = {0};
    Py_buffer di, gi, crowd, out;
    int threads;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*y*y*w*i", &det.blob, &det.start, &det.stop, &det.area,
                          &det.box, &gt.blob, &gt.start, &gt.stop, &gt.area, &gt.box, &di, &gi, &crowd, &out,
                          &threads))
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t n = out.len / 8;
    const Py_buffer *views[14] = {&out,     &det.blob, &det.start, &det.stop, &det.area, &det.box, &gt.blob,
                                  &gt.start, &gt.stop, &gt.area,   &gt.box,   &di,       &gi,      &crowd};
    if (!spans_ok(&det, "pair_iou") || !spans_ok(&gt, "pair_iou")) goto done;
    if (out.len % 8 || di.len != n * 8 || gi.len != n * 8 || crowd.len != n ||
        (n && (!is_aligned(&out, 8) || !is_aligned(&di, 8) || !is_aligned(&gi, 8)))) {
        PyErr_SetString(PyExc_ValueError, "pair_iou: buffer sizes do not match or are unaligned");
        goto done;
    }
    if (outputs_overlap(views, 1, 14, "pair_iou")) goto done;
    const int64_t *det_rows = (const int64_t *)di.buf, *gt_rows = (const int64_t *)gi.buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (det_rows[k] < 0 || det_rows[k] >= det.n || gt_rows[k] < 0 || gt_rows[k] >= gt.n) {
            PyErr_SetString(PyExc_ValueError, "pair_iou: a pair row is outside its spans");
            goto done;
        }
        if (!row_ok(&det, det_rows[k]) || !row_ok(&gt, gt_rows[k])) {
            PyErr_SetString(PyExc_ValueError, "pair_iou: a compared mask has no area in [0, 2**32) or a NaN box");
            goto done;
        }
    }
    Py_ssize_t bounds[DETEVAL_MAX_PARTS + 1];
    PairJob job = {&det, &gt, det_rows, gt_rows, (const uint8_t *)crowd.buf, (double *)out.buf, bounds, 1, {0}};
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    job.parts = pair_bounds(&job, n, threads, bounds);
    parallel_parts(bounds, job.parts, pair_part, &job);
    Py_END_ALLOW_THREADS
    for (int k = 0; k < job.parts; k++) failed |= job.failed[k];
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&det.blob);
    PyBuffer_Release(&det.start);
    PyBuffer_Release(&det.stop);
    PyBuffer_Release(&det.area);
    PyBuffer_Release(&det.box);
    PyBuffer_Release(&gt.blob);
    PyBuffer_Release(&gt.start);
    PyBuffer_Release(&gt.stop);
    PyBuffer_Release(&gt.area);
    PyBuffer_Release(&gt.box);
    PyBuffer_Release(&di);
    PyBuffer_Release(&gi);
    PyBuffer_Release(&crowd);
    PyBuffer_Release(&out);
    return result;
}

/* ---- polygons rasterised as pycocotools' frPyObjects + merge does, to compressed strings ---- */

/* A growable array of 32-bit values (PyMem_Raw: usable without the GIL). */
typedef struct {
    uint32_t *v;
    Py_ssize_t n, cap;
} Runs;

static int runs_reserve(Runs *r, Py_ssize_t cap)
{
    if (cap <= r->cap) return 0;
    uint32_t *grown = (uint32_t *)PyMem_RawRealloc(r->v, sizeof(uint32_t) * (size_t)cap);
    if (!grown) return -1;
    r->v = grown;
    r->cap = cap;
    return 0;
}

/* Scratch space reused across polygons. */
typedef struct {
    int *px, *py;
    Py_ssize_t cap_vertices;
    Runs cuts, spare; /* spare: the merge sort's other buffer */
    Py_ssize_t *bounds, cap_bounds;
} Scratch;

/* Sort ``cuts`` ascending: a natural merge sort. A polygon's cuts come as a few chains monotone in
 * x (ascending or descending positions), so the runs are found, the descending ones reversed, and the
 * runs merged pairwise: a few linear passes instead of a general sort. Returns 0, or -1 when out of
 * memory. */
static int sort_cuts(Scratch *sc)
{
    Runs *cuts = &sc->cuts;
    const Py_ssize_t n = cuts->n;
    if (n < 2) return 0;
    if (n + 1 > sc->cap_bounds) {
        Py_ssize_t *grown = (Py_ssize_t *)PyMem_RawRealloc(sc->bounds, sizeof(Py_ssize_t) * (size_t)(n + 1));
        if (!grown) return -1;
        sc->bounds = grown;
        sc->cap_bounds = n + 1;
    }
    if (runs_reserve(&sc->spare, n)) return -1;
    uint32_t *v = cuts->v;
    Py_ssize_t *bounds = sc->bounds, n_runs = 0, i = 0;
    while (i < n) {
        bounds[n_runs++] = i;
        Py_ssize_t j = i + 1;
        if (j < n && v[j] < v[i]) {
            while (j < n && v[j] < v[j - 1]) j++;
            for (Py_ssize_t lo = i, hi = j - 1; lo < hi; lo++, hi--) {
                const uint32_t t = v[lo];
                v[lo] = v[hi];
                v[hi] = t;
            }
        } else {
            while (j < n && v[j] >= v[j - 1]) j++;
        }
        i = j;
    }
    bounds[n_runs] = n;
    uint32_t *src = v, *dst = sc->spare.v;
    while (n_runs > 1) {
        Py_ssize_t merged = 0;
        for (Py_ssize_t r = 0; r < n_runs; r += 2) {
            const Py_ssize_t lo = bounds[r], mid = bounds[r + 1], hi = r + 2 <= n_runs ? bounds[r + 2] : mid;
            Py_ssize_t p = lo, q = mid, o = lo;
            while (p < mid && q < hi) dst[o++] = src[q] < src[p] ? src[q++] : src[p++];
            while (p < mid) dst[o++] = src[p++];
            while (q < hi) dst[o++] = src[q++];
            bounds[merged++] = lo;
        }
        bounds[merged] = n;
        n_runs = merged;
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, sizeof(uint32_t) * (size_t)n);
    return 0;
}

static int grow_int(int **p, Py_ssize_t n)
{
    int *grown = (int *)PyMem_RawRealloc(*p, sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!grown) return -1;
    *p = grown;
    return 0;
}

/* Where a boundary step between upsampled columns ``lo`` and ``lo + 1`` crosses a pixel column
 * centre (``(lo + 0.5) / 5 - 0.5`` an integer in [0, w - 1], which is ``lo % 5 == 2``), with ``v`` the
 * lower of the step's two upsampled rows: the cut at the row ``ceil((v + 0.5) / 5 - 0.5)``, clipped
 * to [0, h], which is ``ceil((v - 2) / 5)``. pycocotools computes both in doubles; on these integers
 * (|v| < 2**30) the doubles are exact where the value is an integer and at least 0.2 from one
 * elsewhere, so the integer forms here give its values. */
static inline void add_cut(Runs *cuts, int lo, int v, uint32_t h, uint32_t w)
{
    if (lo < 2 || (lo - 2) % 5) return;
    const int64_t column = (lo - 2) / 5;
    if (column > (int64_t)w - 1) return;
    int64_t row = v <= 2 ? 0 : ((int64_t)v - 2 + 4) / 5;
    if (row > (int64_t)h) row = h;
    cuts->v[cuts->n++] = (uint32_t)(column * (int64_t)h + row);
}

/* The runs of one polygon part (``k`` vertices at ``xy``) in an h x w mask, pycocotools' rule: the
 * vertices are scaled by 5 and rounded ((int)(5 x + 0.5)), each edge is walked one step per upsampled
 * pixel along its longer axis (the other coordinate rounded the same way), and each crossing of a
 * pixel column centre (x + 0.5 on the 5x grid, back at 1x: an integer in [0, w - 1]) starts or ends a
 * vertical run at ceil of the lower boundary y (clipped to [0, h]). The sorted crossings, as positions
 * x * h + y, with h * w appended, give the run lengths; a zero length folds the next run into the one
 * before. Only the steps that change the column are visited: on an edge along x every fifth (the
 * column centres), on an edge along y those where the rounded x moves. Writes the runs into ``out``;
 * returns 0, or -1 when out of memory. */
/* The rounded column of a steep edge at step t (as pycocotools computes it). */
static inline int steep_u(int x0, double slope, int t)
{
    return (int)(x0 + slope * t + .5);
}

/* The cuts of a steep edge (dy > |x1 - x0|, walked from (x0, y0) one step per upsampled row):
 * pycocotools walks every step t in [1, dy] and cuts where the rounded column u(t) changes, at
 * min(u(t - 1), u(t)), which add_cut keeps only for columns 2 modulo 5. u is monotone in t and
 * changes by at most 1 a step (|slope| < 1), so each kept column c is found directly: the first
 * step where u passes c, estimated by division and settled with u itself (the same expression,
 * so the same steps and cuts as the walk, in the same order). */
static void steep_cuts(Runs *cuts, int x0, int y0, int dy, double slope, uint32_t h, uint32_t w)
{
    const int u_first = steep_u(x0, slope, 0), u_last = steep_u(x0, slope, dy);
    const int64_t last_column = 5 * ((int64_t)w - 1) + 2; /* add_cut drops cuts beyond it */
    if (u_first == u_last) return;
    const int rising = u_last > u_first;
    /* columns c with a change between c and c + 1: [lo, hi] */
    const int lo = rising ? u_first : u_last, hi = (rising ? u_last : u_first) - 1;
    int c = lo < 2 ? 2 : lo;
    c += ((2 - c) % 5 + 5) % 5; /* the first column 2 modulo 5 from there */
    for (; c <= hi && c <= last_column; c += 5) {
        /* the first t with u(t) > c (rising) or u(t) <= c (falling) */
        double estimate = (c + 0.5 - x0) / slope;
        int t = estimate < 1 ? 1 : estimate > dy ? dy : (int)estimate;
        if (rising) {
            while (t > 1 && steep_u(x0, slope, t - 1) > c) t--;
            while (t <= dy && steep_u(x0, slope, t) <= c) t++;
        } else {
            while (t > 1 && steep_u(x0, slope, t - 1) <= c) t--;
            while (t <= dy && steep_u(x0, slope, t) > c) t++;
        }
        if (t <= dy) add_cut(cuts, c, y0 + t - 1, h, w);
    }
}

static int polygon_runs(const double *xy, Py_ssize_t k, uint32_t h, uint32_t w, Scratch *sc, Runs *out)
{
    const double scale = 5;
    if (k + 1 > sc->cap_vertices) {
        if (grow_int(&sc->px, k + 1) || grow_int(&sc->py, k + 1)) return -1;
        sc->cap_vertices = k + 1;
    }
    int *X = sc->px, *Y = sc->py;
    for (Py_ssize_t j = 0; j < k; j++) {
        X[j] = (int)(scale * xy[2 * j] + .5);
        Y[j] = (int)(scale * xy[2 * j + 1] + .5);
    }
    X[k] = X[0];
    Y[k] = Y[0];
    Py_ssize_t bound = 1;
    for (Py_ssize_t j = 0; j < k; j++) bound += abs(X[j] - X[j + 1]) + 1;
    Runs *cuts = &sc->cuts;
    cuts->n = 0;
    if (runs_reserve(cuts, bound)) return -1;
    for (Py_ssize_t j = 0; j < k; j++) {
        int x0 = X[j], x1 = X[j + 1], y0 = Y[j], y1 = Y[j + 1];
        const int dx = abs(x1 - x0), dy = abs(y0 - y1);
        if (dx >= dy) {
            if (x0 > x1) { /* walked from the left end: the same points */
                int t = x0;
                x0 = x1;
                x1 = t;
                t = y0;
                y0 = y1;
                y1 = t;
            }
            const double slope = dx ? (double)(y1 - y0) / dx : 0.0;
            /* the steps (t, t + 1) whose column x0 + t is 2 modulo 5 */
            int t = ((2 - x0) % 5 + 5) % 5;
            for (; t < dx; t += 5) {
                const int v0 = (int)(y0 + slope * t + .5), v1 = (int)(y0 + slope * (t + 1) + .5);
                add_cut(cuts, x0 + t, v0 < v1 ? v0 : v1, h, w);
            }
        } else {
            if (y0 > y1) {
                int t = x0;
                x0 = x1;
                x1 = t;
                t = y0;
                y0 = y1;
                y1 = t;
            }
            const double slope = (double)(x1 - x0) / dy;
            steep_cuts(cuts, x0, y0, dy, slope, h, w);
        }
    }
    cuts->v[cuts->n++] = (uint32_t)((uint64_t)h * w);
    if (sort_cuts(sc)) return -1;
    uint32_t previous = 0;
    for (Py_ssize_t j = 0; j < cuts->n; j++) {
        const uint32_t at = cuts->v[j];
        cuts->v[j] = at - previous;
        previous = at;
    }
    out->n = 0;
    if (runs_reserve(out, cuts->n)) return -1;
    Py_ssize_t j = 0;
    out->v[out->n++] = cuts->v[j++];
    while (j < cuts->n) {
        if (cuts->v[j] > 0) {
            out->v[out->n++] = cuts->v[j++];
        } else {
            j++;
            if (j < cuts->n) out->v[out->n - 1] += cuts->v[j++];
        }
    }
    return 0;
}

/* The union of two masks' runs, pycocotools' merge: both walked together, a run closed whenever the
 * union's value changes and at the end. ``out`` must not be ``a`` or ``b``. */
static int union_runs(const Runs *a, const Runs *b, Runs *out)
{
    out->n = 0;
    if (runs_reserve(out, a->n + b->n + 1)) return -1;
    uint32_t left_a = a->v[0], left_b = b->v[0], run = 0;
    Py_ssize_t ia = 1, ib = 1;
    int in_a = 0, in_b = 0, value = 0;
    for (;;) {
        const uint32_t step = left_a < left_b ? left_a : left_b;
        run += step;
        left_a -= step;
        if (!left_a && ia < a->n) {
            left_a = a->v[ia++];
            in_a = !in_a;
        }
        left_b -= step;
        if (!left_b && ib < b->n) {
            left_b = b->v[ib++];
            in_b = !in_b;
        }
        const int before = value;
        value = in_a || in_b;
        const int done = left_a + left_b == 0;
        if (value != before || done) {
            out->v[out->n++] = run;
            run = 0;
        }
        if (done) return 0;
    }
}

/* pycocotools' compressed string of runs: per run (from the fourth on, its difference to the run two
 * before) 5-bit groups low first, 0x20 "more", stopping when the rest is the sign of the last group. */
static Py_ssize_t encode_runs(const Runs *r, char *s)
{
    Py_ssize_t p = 0;
    for (Py_ssize_t i = 0; i < r->n; i++) {
        int64_t x = (int64_t)r->v[i];
        if (i > 2) x -= (int64_t)r->v[i - 2];
        for (;;) {
            int c = (int)(x & 0x1f);
            x >>= 5; /* arithmetic shift of a negative value: as pycocotools' long */
            const int more = (c & 0x10) ? x != -1 : x != 0;
            if (more) c |= 0x20;
            s[p++] = (char)(c + 48);
            if (!more) break;
        }
    }
    return p;
}

/* One part's state in a rasterise call: scratch space, run buffers and the part's own strings. */
typedef struct {
    Scratch sc;
    Runs one, merged, next;
    char *text;
    Py_ssize_t used, cap;
    int failed;
} RasterPart;

/* One rasterise call: part k rasterises the records [lo, hi) into parts[k] (its strings; offsets
 * relative to its own text, made absolute after the join). */
typedef struct {
    const double *xy;
    const int64_t *point_start, *part_first, *part_stop, *size;
    double *areas, *boxes;
    int64_t *offsets;
    const Py_ssize_t *bounds;
    int n_parts;
    RasterPart part[DETEVAL_MAX_PARTS];
} RasterJob;

static void raster_part(void *ctx, Py_ssize_t lo, Py_ssize_t hi)
{
    if (lo >= hi) return;
    RasterJob *j = (RasterJob *)ctx;
    RasterPart *P = &j->part[part_of(j->bounds, j->n_parts, lo)];
    int failed = 0;
    for (Py_ssize_t r = lo; r < hi && !failed; r++) {
        const uint32_t h = (uint32_t)j->size[2 * r], w = (uint32_t)j->size[2 * r + 1];
        uint32_t area = 0;
        for (int64_t part = j->part_first[r]; part < j->part_stop[r] && !failed; part++) {
            const int64_t first = j->point_start[part];
            Runs *target = part == j->part_first[r] ? &P->merged : &P->one;
            failed = polygon_runs(j->xy + 2 * first, (Py_ssize_t)(j->point_start[part + 1] - first), h, w, &P->sc,
                                  target);
            if (!failed && part > j->part_first[r]) {
                failed = union_runs(&P->merged, &P->one, &P->next);
                Runs swap = P->merged;
                P->merged = P->next;
                P->next = swap;
            }
        }
        if (!failed && P->used + P->merged.n * 7 > P->cap) { /* at most 7 characters per run */
            Py_ssize_t cap = 2 * P->cap;
            if (cap < P->used + P->merged.n * 7) cap = P->used + P->merged.n * 7;
            if (cap < 4096) cap = 4096;
            char *grown = (char *)PyMem_RawRealloc(P->text, (size_t)cap);
            if (grown) {
                P->text = grown;
                P->cap = cap;
            } else {
                failed = 1;
            }
        }
        if (!failed) {
            P->used += encode_runs(&P->merged, P->text + P->used);
            for (Py_ssize_t k = 1; k < P->merged.n; k += 2) area += P->merged.v[k];
            j->areas[r] = (double)area;
            box_of_runs(P->merged.v, P->merged.n, h, w, j->boxes + 4 * r);
            j->offsets[r + 1] = P->used;
        }
    }
    P->failed = failed;
}

/* Cut the records into parts of about equal work: a record costs its vertices and the length of
 * its edges as the rasteriser walks them (an edge along y one step per upsampled row, along x one
 * per pixel column). */
static int raster_bounds(const RasterJob *j, Py_ssize_t n, int threads, Py_ssize_t *bounds)
{
    if (threads <= 1 || n < 2) return even_bounds(n, 1, bounds);
    int64_t *cum = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!cum) return even_bounds(n, threads, bounds);
    cum[0] = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        double cost = 1;
        for (int64_t part = j->part_first[r]; part < j->part_stop[r]; part++) {
            const int64_t a = j->point_start[part], b = j->point_start[part + 1];
            for (int64_t i = a; i < b; i++) {
                const int64_t next = i + 1 < b ? i + 1 : a;
                cost += 1 + fabs(j->xy[2 * next] - j->xy[2 * i]) + 5 * fabs(j->xy[2 * next + 1] - j->xy[2 * i + 1]);
            }
        }
        cum[r + 1] = cum[r] + (int64_t)cost; /* coordinates are checked: |x| < 2**28 */
    }
    const int parts = weighted_bounds(cum, n, threads, bounds);
    PyMem_RawFree(cum);
    return parts;
}

PyDoc_STRVAR(rasterise_doc,
             "rasterise(points, point_start, part_first, part_stop, sizes, areas, offsets, boxes, threads)\n"
             "\n"
             "pycocotools' ``merge(frPyObjects(parts, h, w))`` of each record's polygon parts, as compressed\n"
             "counts strings: float64 ``points`` (n_point, 2); int64 ``point_start`` (parts + 1: part p has\n"
             "the points point_start[p]..point_start[p + 1]), ``part_first`` and ``part_stop`` (n: record r\n"
             "has the parts part_first[r]..part_stop[r], at least one; only these parts and their points\n"
             "are read, so a collection's columns serve any subset of its records) and ``sizes`` (n, 2)\n"
             "[h, w]. Returns the n strings as one bytes object, string r at ``offsets[r]:offsets[r + 1]``\n"
             "(int64 (n + 1,), written); writes float64 ``areas`` (n,) and ``boxes`` (n, 4: pycocotools'\n"
             "toBbox, xywh); sizes of at least 1 x 1. Returns None (writing nothing) when a coordinate read\n"
             "is not finite or beyond +-2**26 (the caller declines). The records are split into ``threads`` parts\n"
             "of about equal work, run on as many threads with the GIL released (each writes its own\n"
             "records and strings, joined in record order: the same result for every count).");

static PyObject *rasterise(PyObject *self, PyObject *args)
{
    Py_buffer pts, ps, rs, re, sz, ar, of, bx;
    int threads;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*w*i", &pts, &ps, &rs, &re, &sz, &ar, &of, &bx, &threads))
        return NULL;
    PyObject *result = NULL;
    RasterJob *job = (RasterJob *)PyMem_RawCalloc(1, sizeof(RasterJob));
    Py_ssize_t bounds[DETEVAL_MAX_PARTS + 1];
    const Py_ssize_t n = ar.len / 8, n_part = ps.len / 8 - 1, n_coord = pts.len / 8;
    const Py_buffer *views[8] = {&ar, &of, &bx, &pts, &ps, &rs, &re, &sz};
    if (!job) {
        PyErr_NoMemory();
        goto done;
    }
    if (ar.len % 8 || rs.len != n * 8 || re.len != n * 8 || of.len != (n + 1) * 8 || bx.len != n * 32 ||
        sz.len != n * 16 || n_part < 0 || pts.len % 16) {
        PyErr_SetString(PyExc_ValueError, "rasterise: buffer sizes do not match");
        goto done;
    }
    for (int i = 0; i < 8; i++) {
        if (views[i]->len && !is_aligned(views[i], 8)) {
            PyErr_SetString(PyExc_ValueError, "rasterise: unaligned buffer");
            goto done;
        }
    }
    if (outputs_overlap(views, 3, 8, "rasterise")) goto done;
    const double *xy = (const double *)pts.buf;
    const int64_t *point_start = (const int64_t *)ps.buf;
    const int64_t *part_first = (const int64_t *)rs.buf, *part_stop = (const int64_t *)re.buf;
    const int64_t *size = (const int64_t *)sz.buf;
    int far = 0;
    for (Py_ssize_t r = 0; r < n; r++) { /* only the records' parts and points are checked and read */
        if (part_first[r] < 0 || part_stop[r] <= part_first[r] || part_stop[r] > n_part || size[2 * r] < 1 ||
            size[2 * r + 1] < 1 || size[2 * r] * size[2 * r + 1] > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "rasterise: part_first, part_stop or sizes out of range");
            goto done;
        }
        for (int64_t p = part_first[r]; p < part_stop[r]; p++) {
            if (point_start[p] < 0 || point_start[p + 1] <= point_start[p] || 2 * point_start[p + 1] > n_coord) {
                PyErr_SetString(PyExc_ValueError,
                                "rasterise: point_start outside the points or a part without points");
                goto done;
            }
            for (int64_t i = 2 * point_start[p]; i < 2 * point_start[p + 1]; i++)
                far |= !(fabs(xy[i]) < (double)(1 << 26)); /* also NaN */
        }
    }
    if (far) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    job->xy = xy;
    job->point_start = point_start;
    job->part_first = part_first;
    job->part_stop = part_stop;
    job->size = size;
    job->areas = (double *)ar.buf;
    job->offsets = (int64_t *)of.buf;
    job->boxes = (double *)bx.buf;
    job->bounds = bounds;
    job->offsets[0] = 0;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    job->n_parts = raster_bounds(job, n, threads, bounds);
    parallel_parts(bounds, job->n_parts, raster_part, job);
    Py_END_ALLOW_THREADS
    Py_ssize_t total = 0;
    for (int k = 0; k < job->n_parts; k++) {
        failed |= job->part[k].failed;
        total += job->part[k].used;
    }
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (!result) goto done;
    char *joined = PyBytes_AS_STRING(result);
    Py_ssize_t base = 0;
    for (int k = 0; k < job->n_parts; k++) { /* the parts' strings in record order, offsets made absolute */
        RasterPart *P = &job->part[k];
        if (P->used) memcpy(joined + base, P->text, (size_t)P->used);
        PyMem_RawFree(P->text); /* as soon as copied: the strings are held once and a part more */
        P->text = NULL;
        for (Py_ssize_t r = bounds[k]; r < bounds[k + 1]; r++) job->offsets[r + 1] += base;
        base += P->used;
    }
done:
    if (job) {
        for (int k = 0; k < DETEVAL_MAX_PARTS; k++) {
            RasterPart *P = &job->part[k];
            PyMem_RawFree(P->sc.px);
            PyMem_RawFree(P->sc.py);
            PyMem_RawFree(P->sc.cuts.v);
            PyMem_RawFree(P->sc.spare.v);
            PyMem_RawFree(P->sc.bounds);
            PyMem_RawFree(P->one.v);
            PyMem_RawFree(P->merged.v);
            PyMem_RawFree(P->next.v);
            PyMem_RawFree(P->text);
        }
        PyMem_RawFree(job);
    }
    PyBuffer_Release(&pts);
    PyBuffer_Release(&ps);
    PyBuffer_Release(&rs);
    PyBuffer_Release(&re);
    PyBuffer_Release(&sz);
    PyBuffer_Release(&ar);
    PyBuffer_Release(&of);
    PyBuffer_Release(&bx);
    return result;
}

static PyMethodDef cmask_methods[] = {
    {"summarise_compressed", summarise_compressed, METH_VARARGS, summarise_compressed_doc},
    {"pair_iou", pair_iou, METH_VARARGS, pair_iou_doc},
    {"rasterise", rasterise, METH_VARARGS, rasterise_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_cmask, "deteval.geometry._cmask", "Compiled RLE kernels (see _cmask.c).", cmask_methods, 7, NULL) /* 7: rasterise finds a steep edge's cuts without walking every step */
