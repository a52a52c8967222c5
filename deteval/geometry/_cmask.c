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

#include "../_buffer_checks.h"

#define MAX_GROUPS 7

/* The running state of one mask's box: the walk over (background, foreground) pairs of runs. */
typedef struct {
    uint32_t h, w, xs, ys, xe, ye, x_first, covered;
    int has_pair, zero_run; /* zero_run: a run of length 0 after the first (no box: pycocotools') */
} BoxWalk;

/* One run end position ``t`` (column-major) into the box; ``is_fg_end`` marks the end of a
 * foreground run (its column compared with that of its start: a run crossing a column spans the full
 * height). */
static void box_point(BoxWalk *b, uint32_t t, int is_fg_end)
{
    const uint32_t y = t % b->h, x = (t - y) / b->h;
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

/* Decode one string. Returns the problem code; sets *sum (int64, -1 for a too long run), *area (sum
 * of the foreground runs modulo 2**32) and, when ``b`` is not NULL, the box walk (pairs of runs). */
static int summarise(const unsigned char *s, Py_ssize_t len, int64_t *sum, uint32_t *area, BoxWalk *b)
{
    *sum = 0;
    *area = 0;
    if (len == 0) return 2;
    for (Py_ssize_t i = 0; i < len; i++)
        if (s[i] < 48 || s[i] > 48 + 63) return 1;
    if ((s[len - 1] - 48) & 0x20) return 2;
    uint32_t before1 = 0, before2 = 0; /* runs m - 1 and m - 2 */
    uint32_t position = 0, background = 0;
    int too_long = 0;
    Py_ssize_t m = 0, i = 0;
    while (i < len) {
        int64_t x = 0;
        int k = 0, more = 1, c = 0;
        while (more) {
            c = s[i++] - 48;
            if (k < MAX_GROUPS) x |= (int64_t)(c & 0x1f) << (5 * k);
            k++;
            more = c & 0x20;
        }
        if (k > MAX_GROUPS) too_long = 1;
        if (c & 0x10) x -= (int64_t)1 << (5 * (k < MAX_GROUPS + 1 ? k : MAX_GROUPS + 1));
        if (m > 2) x += (int64_t)before2;
        const uint32_t run = (uint32_t)x;
        *sum += run;
        if (b && m > 0 && run == 0) b->zero_run = 1;
        if (m % 2) {
            *area += run;
            if (b) { /* the pair (background, this foreground run) */
                const uint32_t fg_start = position + background;
                box_point(b, fg_start, 0);
                box_point(b, fg_start + run - 1, 1);
                b->has_pair = 1;
            }
            position += background + run;
        } else {
            background = run;
        }
        before2 = before1;
        before1 = run;
        m++;
    }
    if (too_long) *sum = -1;
    return 0;
}

PyDoc_STRVAR(summarise_compressed_doc,
             "summarise_compressed(blob, offsets, sizes, problem, sums, areas, boxes)\n"
             "\n"
             "For each compressed counts string ``blob[offsets[r]:offsets[r + 1]]`` (bytes, int64 offsets\n"
             "n + 1, non-decreasing, within the blob) with its int64 ``[h, w]`` row of ``sizes`` (n, 2):\n"
             "write the problem code (int8), the run sum (int64), the foreground pixel count (float64)\n"
             "and the xywh box (float64, n x 4; NaN where not computed).");

static PyObject *summarise_compressed(PyObject *self, PyObject *args)
{
    Py_buffer blob_v, offset_v, size_v, problem_v, sum_v, area_v, box_v;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*w*w*", &blob_v, &offset_v, &size_v, &problem_v, &sum_v, &area_v,
                          &box_v))
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
    const unsigned char *blob = (const unsigned char *)blob_v.buf;
    const int64_t *size = (const int64_t *)size_v.buf;
    int8_t *problem = (int8_t *)problem_v.buf;
    int64_t *sums = (int64_t *)sum_v.buf;
    double *areas = (double *)area_v.buf, *boxes = (double *)box_v.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        const int64_t h = size[2 * r], w = size[2 * r + 1];
        BoxWalk walk = {0};
        const int want_box = h > 0 && h <= UINT32_MAX && w >= 0 && w <= UINT32_MAX;
        if (want_box) {
            walk.h = (uint32_t)h;
            walk.w = (uint32_t)w;
            walk.xs = walk.w;
            walk.ys = walk.h;
        }
        uint32_t area;
        int64_t sum;
        const int code = summarise(blob + offsets[r], (Py_ssize_t)(offsets[r + 1] - offsets[r]), &sum, &area,
                                   want_box ? &walk : NULL);
        problem[r] = (int8_t)code;
        sums[r] = sum;
        areas[r] = (double)area;
        double *bb = boxes + 4 * r;
        if (code != 0 || !want_box || sum != h * w || walk.zero_run) {
            bb[0] = bb[1] = bb[2] = bb[3] = NAN;
        } else if (!walk.has_pair) {
            bb[0] = bb[1] = bb[2] = bb[3] = 0.0;
        } else {
            bb[0] = (double)walk.xs;
            bb[1] = (double)walk.ys;
            bb[2] = (double)(uint32_t)(walk.xe - walk.xs + 1);
            bb[3] = (double)(uint32_t)(walk.ye - walk.ys + 1);
        }
    }
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

/* The runs of one string into ``runs`` (room for one per character); returns their count. Decoding as
 * summarise() does; a string that ends inside a run ends there (callers pass checked strings). */
static Py_ssize_t decode_runs(const unsigned char *s, Py_ssize_t len, uint32_t *runs)
{
    Py_ssize_t m = 0, i = 0;
    while (i < len) {
        int64_t x = 0;
        int k = 0, more = 1, c = 0;
        while (more && i < len) {
            c = (s[i++] - 48) & 0x3f;
            if (k < MAX_GROUPS) x |= (int64_t)(c & 0x1f) << (5 * k);
            k++;
            more = c & 0x20;
        }
        if (c & 0x10) x -= (int64_t)1 << (5 * (k < MAX_GROUPS + 1 ? k : MAX_GROUPS + 1));
        if (m > 2) x += (int64_t)runs[m - 2];
        runs[m++] = (uint32_t)x;
    }
    return m;
}

/* Every string of a blob decoded: runs (one array), first run of each string (n + 1), areas. */
typedef struct {
    uint32_t *runs;
    int64_t *first;
    uint32_t *area;
} Decoded;

static int decode_all(const unsigned char *blob, const int64_t *offsets, Py_ssize_t n, Decoded *d)
{
    d->runs = (uint32_t *)PyMem_RawMalloc(sizeof(uint32_t) * (size_t)(offsets[n] - offsets[0] + 1));
    d->first = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(n + 1));
    d->area = (uint32_t *)PyMem_RawMalloc(sizeof(uint32_t) * (size_t)(n + 1));
    if (!d->runs || !d->first || !d->area) return -1;
    int64_t at = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        d->first[r] = at;
        const Py_ssize_t m = decode_runs(blob + offsets[r], (Py_ssize_t)(offsets[r + 1] - offsets[r]), d->runs + at);
        uint32_t area = 0;
        for (Py_ssize_t j = 1; j < m; j += 2) area += d->runs[at + j];
        d->area[r] = area;
        at += m;
    }
    d->first[n] = at;
    return 0;
}

static void free_decoded(Decoded *d)
{
    PyMem_RawFree(d->runs);
    PyMem_RawFree(d->first);
    PyMem_RawFree(d->area);
}

/* Pixels in the foreground of both run lists (odd runs are foreground), walking them together. */
static uint64_t intersection(const uint32_t *a, Py_ssize_t na, const uint32_t *b, Py_ssize_t nb)
{
    uint64_t both = 0;
    Py_ssize_t ia = 0, ib = 0;
    uint32_t left_a = na ? a[0] : 0, left_b = nb ? b[0] : 0;
    for (;;) {
        while (left_a == 0 && ia + 1 < na) left_a = a[++ia];
        while (left_b == 0 && ib + 1 < nb) left_b = b[++ib];
        if (left_a == 0 || left_b == 0) return both;
        const uint32_t step = left_a < left_b ? left_a : left_b;
        if ((ia & 1) && (ib & 1)) both += step;
        left_a -= step;
        left_b -= step;
    }
}

static int offsets_ok(const Py_buffer *offsets, const Py_buffer *blob, Py_ssize_t *n)
{
    if (offsets->len < 8 || offsets->len % 8 || !is_aligned(offsets, 8)) return 0;
    const int64_t *o = (const int64_t *)offsets->buf;
    *n = offsets->len / 8 - 1;
    for (Py_ssize_t r = 0; r < *n; r++)
        if (o[r] < 0 || o[r + 1] < o[r] || o[r + 1] > blob->len) return 0;
    return o[0] >= 0 && o[0] <= blob->len;
}

PyDoc_STRVAR(pair_iou_doc,
             "pair_iou(det_blob, det_offsets, gt_blob, gt_offsets, det_index, gt_index, is_crowd, out)\n"
             "\n"
             "pycocotools' ``mask.iou`` of aligned (detection, ground truth) pairs of compressed RLEs of\n"
             "equal sizes: string r of a blob is ``blob[offsets[r]:offsets[r + 1]]``; pair k compares\n"
             "detection ``det_index[k]`` with ground truth ``gt_index[k]`` (int64), ``is_crowd[k]`` (uint8:\n"
             "intersection over the detection's area). Writes float64 ``out[k]``: 0 when the masks share\n"
             "no pixel, else intersection / union as doubles, as pycocotools divides.");

static PyObject *pair_iou(PyObject *self, PyObject *args)
{
    Py_buffer db, doff, gb, goff, di, gi, crowd, out;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*", &db, &doff, &gb, &goff, &di, &gi, &crowd, &out)) return NULL;
    PyObject *result = NULL;
    Decoded dd = {0}, gd = {0};
    Py_ssize_t n_det = 0, n_gt = 0;
    const Py_ssize_t n = out.len / 8;
    const Py_buffer *views[8] = {&out, &db, &doff, &gb, &goff, &di, &gi, &crowd};
    if (!offsets_ok(&doff, &db, &n_det) || !offsets_ok(&goff, &gb, &n_gt)) {
        PyErr_SetString(PyExc_ValueError, "pair_iou: offsets outside the blob, decreasing or unaligned");
        goto done;
    }
    if (out.len % 8 || di.len != n * 8 || gi.len != n * 8 || crowd.len != n ||
        (n && (!is_aligned(&out, 8) || !is_aligned(&di, 8) || !is_aligned(&gi, 8)))) {
        PyErr_SetString(PyExc_ValueError, "pair_iou: buffer sizes do not match or are unaligned");
        goto done;
    }
    if (outputs_overlap(views, 1, 8, "pair_iou")) goto done;
    const int64_t *det_index = (const int64_t *)di.buf, *gt_index = (const int64_t *)gi.buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (det_index[k] < 0 || det_index[k] >= n_det || gt_index[k] < 0 || gt_index[k] >= n_gt) {
            PyErr_SetString(PyExc_ValueError, "pair_iou: a pair index is outside its blob's strings");
            goto done;
        }
    }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    failed = decode_all((const unsigned char *)db.buf, (const int64_t *)doff.buf, n_det, &dd) ||
             decode_all((const unsigned char *)gb.buf, (const int64_t *)goff.buf, n_gt, &gd);
    if (!failed) {
        const uint8_t *is_crowd = (const uint8_t *)crowd.buf;
        double *iou = (double *)out.buf;
        for (Py_ssize_t k = 0; k < n; k++) {
            const int64_t d = det_index[k], g = gt_index[k];
            const uint64_t both = intersection(dd.runs + dd.first[d], (Py_ssize_t)(dd.first[d + 1] - dd.first[d]),
                                               gd.runs + gd.first[g], (Py_ssize_t)(gd.first[g + 1] - gd.first[g]));
            if (both == 0) {
                iou[k] = 0.0;
                continue;
            }
            const uint32_t inter = (uint32_t)both;
            const uint32_t uni = is_crowd[k] ? dd.area[d] : (uint32_t)(dd.area[d] + gd.area[g] - inter);
            iou[k] = (double)inter / (double)uni;
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    free_decoded(&dd);
    free_decoded(&gd);
    PyBuffer_Release(&db);
    PyBuffer_Release(&doff);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&goff);
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

static int compare_u32(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Scratch space reused across polygons. */
typedef struct {
    int *px, *py, *bx, *by;
    Py_ssize_t cap_vertices, cap_boundary;
    Runs cuts;
} Scratch;

static int grow_int(int **p, Py_ssize_t n)
{
    int *grown = (int *)PyMem_RawRealloc(*p, sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!grown) return -1;
    *p = grown;
    return 0;
}

/* The runs of one polygon part (``k`` vertices at ``xy``) in an h x w mask, pycocotools' rule: the
 * vertices are scaled by 5 and rounded ((int)(5 x + 0.5)), each edge is walked one step per upsampled
 * pixel along its longer axis (the other coordinate rounded the same way), and each crossing of a
 * pixel column centre (x + 0.5 on the 5x grid, back at 1x: an integer in [0, w - 1]) starts or ends a
 * vertical run at ceil of the lower boundary y (clipped to [0, h]). The sorted crossings, as positions
 * x * h + y, with h * w appended, give the run lengths; a zero length folds the next run into the one
 * before. Writes the runs into ``out``; returns 0, or -1 when out of memory. */
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
    Py_ssize_t points = 0;
    for (Py_ssize_t j = 0; j < k; j++) {
        const int ax = abs(X[j] - X[j + 1]), ay = abs(Y[j] - Y[j + 1]);
        points += (ax > ay ? ax : ay) + 1;
    }
    if (points > sc->cap_boundary) {
        if (grow_int(&sc->bx, points) || grow_int(&sc->by, points)) return -1;
        sc->cap_boundary = points;
    }
    int *U = sc->bx, *V = sc->by;
    Py_ssize_t m = 0;
    for (Py_ssize_t j = 0; j < k; j++) {
        int x0 = X[j], x1 = X[j + 1], y0 = Y[j], y1 = Y[j + 1];
        const int dx = abs(x1 - x0), dy = abs(y0 - y1);
        const int along_x = dx >= dy;
        const int reversed = along_x ? x0 > x1 : y0 > y1;
        if (reversed) {
            int t = x0;
            x0 = x1;
            x1 = t;
            t = y0;
            y0 = y1;
            y1 = t;
        }
        if (along_x) {
            /* a zero-length edge: one point whose y is never read (its neighbours share its x) */
            const double slope = dx ? (double)(y1 - y0) / dx : 0.0;
            for (int d = 0; d <= dx; d++) {
                const int t = reversed ? dx - d : d;
                U[m] = t + x0;
                V[m] = (int)(y0 + slope * t + .5);
                m++;
            }
        } else {
            const double slope = (double)(x1 - x0) / dy;
            for (int d = 0; d <= dy; d++) {
                const int t = reversed ? dy - d : d;
                V[m] = t + y0;
                U[m] = (int)(x0 + slope * t + .5);
                m++;
            }
        }
    }
    Runs *cuts = &sc->cuts;
    cuts->n = 0;
    if (runs_reserve(cuts, m + 1)) return -1;
    const double last_column = (double)((uint64_t)w - 1), height = (double)h;
    for (Py_ssize_t j = 1; j < m; j++) {
        if (U[j] == U[j - 1]) continue;
        double xd = (double)(U[j] < U[j - 1] ? U[j] : U[j] - 1);
        xd = (xd + .5) / scale - .5;
        if (floor(xd) != xd || xd < 0 || xd > last_column) continue;
        double yd = (double)(V[j] < V[j - 1] ? V[j] : V[j - 1]);
        yd = (yd + .5) / scale - .5;
        if (yd < 0)
            yd = 0;
        else if (yd > height)
            yd = height;
        yd = ceil(yd);
        cuts->v[cuts->n++] = (uint32_t)((int)xd * (int)h + (int)yd);
    }
    cuts->v[cuts->n++] = (uint32_t)((uint64_t)h * w);
    qsort(cuts->v, (size_t)cuts->n, sizeof(uint32_t), compare_u32);
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

PyDoc_STRVAR(rasterise_doc,
             "rasterise(points, point_start, part_start, sizes, areas)\n"
             "\n"
             "pycocotools' ``merge(frPyObjects(parts, h, w))`` of each record's polygon parts, as compressed\n"
             "counts strings: float64 ``points`` (n_point, 2); int64 ``point_start`` (parts + 1),\n"
             "``part_start`` (n + 1: record r has parts part_start[r]..part_start[r + 1], at least one)\n"
             "and ``sizes`` (n, 2) [h, w]. Returns a list of n bytes; writes float64 ``areas`` (n,).\n"
             "Coordinates must be finite with |5 x| < 2**30.");

static PyObject *rasterise(PyObject *self, PyObject *args)
{
    Py_buffer pts, ps, rs, sz, ar;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &pts, &ps, &rs, &sz, &ar)) return NULL;
    PyObject *result = NULL, *list = NULL;
    Scratch sc = {0};
    Runs one = {0}, merged = {0}, next = {0};
    char *text = NULL;
    Py_ssize_t text_cap = 0;
    const Py_ssize_t n = ar.len / 8, n_part = ps.len / 8 - 1, n_coord = pts.len / 8;
    const Py_buffer *views[5] = {&ar, &pts, &ps, &rs, &sz};
    if (ar.len % 8 || rs.len != (n + 1) * 8 || sz.len != n * 16 || n_part < 0 || pts.len % 16) {
        PyErr_SetString(PyExc_ValueError, "rasterise: buffer sizes do not match");
        goto done;
    }
    for (int i = 0; i < 5; i++) {
        if (views[i]->len && !is_aligned(views[i], 8)) {
            PyErr_SetString(PyExc_ValueError, "rasterise: unaligned buffer");
            goto done;
        }
    }
    if (outputs_overlap(views, 1, 5, "rasterise")) goto done;
    const double *xy = (const double *)pts.buf;
    const int64_t *point_start = (const int64_t *)ps.buf, *part_start = (const int64_t *)rs.buf;
    const int64_t *size = (const int64_t *)sz.buf;
    for (Py_ssize_t p = 0; p < n_part; p++) {
        if (point_start[p] < 0 || point_start[p + 1] <= point_start[p] || 2 * point_start[p + 1] > n_coord) {
            PyErr_SetString(PyExc_ValueError, "rasterise: point_start outside the points or a part without points");
            goto done;
        }
    }
    for (Py_ssize_t r = 0; r < n; r++) {
        if (part_start[r] < 0 || part_start[r + 1] <= part_start[r] || part_start[r + 1] > n_part ||
            size[2 * r] < 0 || size[2 * r + 1] < 0 || size[2 * r] * size[2 * r + 1] > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "rasterise: part_start or sizes out of range");
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n_coord; i++) {
        if (!(fabs(xy[i]) < (double)(1 << 28))) {
            PyErr_SetString(PyExc_ValueError, "rasterise: a coordinate is not finite or too large");
            goto done;
        }
    }
    list = PyList_New(n);
    if (!list) goto done;
    double *areas = (double *)ar.buf;
    for (Py_ssize_t r = 0; r < n; r++) {
        const uint32_t h = (uint32_t)size[2 * r], w = (uint32_t)size[2 * r + 1];
        int failed = 0;
        Py_ssize_t len = 0;
        uint32_t area = 0;
        Py_BEGIN_ALLOW_THREADS
        for (int64_t part = part_start[r]; part < part_start[r + 1] && !failed; part++) {
            const int64_t first = point_start[part];
            Runs *target = part == part_start[r] ? &merged : &one;
            failed = polygon_runs(xy + 2 * first, (Py_ssize_t)(point_start[part + 1] - first), h, w, &sc, target);
            if (!failed && part > part_start[r]) {
                failed = union_runs(&merged, &one, &next);
                Runs swap = merged;
                merged = next;
                next = swap;
            }
        }
        if (!failed && merged.n * 7 > text_cap) {
            char *grown = (char *)PyMem_RawRealloc(text, (size_t)(merged.n * 7));
            if (grown) {
                text = grown;
                text_cap = merged.n * 7;
            } else {
                failed = 1;
            }
        }
        if (!failed) {
            len = encode_runs(&merged, text);
            for (Py_ssize_t j = 1; j < merged.n; j += 2) area += merged.v[j];
        }
        Py_END_ALLOW_THREADS
        if (failed) {
            PyErr_NoMemory();
            goto done;
        }
        areas[r] = (double)area;
        PyObject *counts = PyBytes_FromStringAndSize(text, len);
        if (!counts) goto done;
        PyList_SET_ITEM(list, r, counts);
    }
    result = list;
    list = NULL;
done:
    Py_XDECREF(list);
    PyMem_RawFree(sc.px);
    PyMem_RawFree(sc.py);
    PyMem_RawFree(sc.bx);
    PyMem_RawFree(sc.by);
    PyMem_RawFree(sc.cuts.v);
    PyMem_RawFree(one.v);
    PyMem_RawFree(merged.v);
    PyMem_RawFree(next.v);
    PyMem_RawFree(text);
    PyBuffer_Release(&pts);
    PyBuffer_Release(&ps);
    PyBuffer_Release(&rs);
    PyBuffer_Release(&sz);
    PyBuffer_Release(&ar);
    return result;
}

static PyMethodDef cmask_methods[] = {
    {"summarise_compressed", summarise_compressed, METH_VARARGS, summarise_compressed_doc},
    {"pair_iou", pair_iou, METH_VARARGS, pair_iou_doc},
    {"rasterise", rasterise, METH_VARARGS, rasterise_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_cmask, "deteval.geometry._cmask", "Compiled RLE kernels (see _cmask.c).", cmask_methods, 2, NULL)
