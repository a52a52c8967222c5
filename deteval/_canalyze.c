/*
 * deteval._canalyze: compiled kernels of `deteval analyze`, each the twin of a numpy function that
 * stays the reference (tests/unit/test_canalyze.py compares them bit for bit).
 *
 * tide_points: the recall-point values of TIDE's AP (tidecv's APDataObject.get_ap), all classes in
 * one pass; twin of deteval.tide.ap._tide_points_numpy. For each included class with positives,
 * walking its segment of the ranking: at the j-th true positive the precision is t / (t + f) (t, f:
 * the TP and FP counts so far, as doubles, no epsilon: tidecv's expression); the envelope is the
 * suffix maximum of those precisions; for recall point x / 100 (x = 0..100), the first TP count j
 * with j / npos >= x / 100 (numpy's searchsorted, side "left", over j / npos for j = 0..npos),
 * clipped below at 1, gives the value: the envelope at that TP if the class has that many, else 0.
 * The 101 values are written to y; their mean (a Python sum, as tidecv takes it) stays in Python,
 * so the result does not depend on how the interpreter sums floats. Every float operation is
 * numpy's, in the same order, on the same operands: (double)x / 100.0, (double)j / (double)npos,
 * (double)t / ((double)t + (double)f); the envelope only compares.
 *
 * pair_maxima: per detection (a run of its image pairs, the ground truths that count), the largest
 * IoU with a ground truth of its own class and the first pair reaching it, the same with the other
 * classes, the largest with a used ground truth of its class and the largest overall: TIDE's error
 * tests; twin of
 * deteval.tide.oracle._pair_maxima_numpy (numpy's maximum.reduceat over values zeroed outside the
 * set, then the first position equal to the maximum). Only comparisons and copies of floats, and
 * ``iou + 0.0``, which makes a -0.0 IoU +0.0 (the twin does the same: numpy's maximum keeps one
 * zero or the other depending on their order, so neither sign would be defined otherwise).
 *
 * run_first_max: per detection (a run of its image pairs, the ground truths in a mask), the index
 * of the first maximum of values; twin of deteval.decomposition._first_max_numpy.
 *
 * Plain C and the CPython API only (arrays come as buffers; no numpy headers needed to build).
 * Every index read from an input is checked against the array it reads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_buffer_checks.h"

/* The ABI number (see _buffer_checks.h; deteval._speedups.ABI holds the expected one). */
#define CANALYZE_ABI 2 /* 2: pair_maxima takes a -0.0 IoU as +0.0 */

#define N_POINTS 101

/* One class: its points [lo, hi) of the ranking, its positives, its 101 values into y. */
static void one_class(const char *is_tp, Py_ssize_t lo, Py_ssize_t hi, int64_t npos, double *envelope,
                      double *y) {
    Py_ssize_t n_tp = 0;
    int64_t t = 0, f = 0;
    for (Py_ssize_t i = lo; i < hi; i++) {
        if (is_tp[i]) {
            t++;
            envelope[n_tp++] = (double)t / ((double)t + (double)f);
        } else {
            f++;
        }
    }
    for (Py_ssize_t i = n_tp - 2; i >= 0; i--) {
        if (envelope[i + 1] > envelope[i]) envelope[i] = envelope[i + 1];
    }
    const double n = (double)npos;
    int64_t j = 0; /* searchsorted left over j / npos, j = 0..npos; npos + 1 when none */
    for (int x = 0; x < N_POINTS; x++) {
        const double r = (double)x / 100.0;
        while (j <= npos && (double)j / n < r) j++;
        const int64_t target = j < 1 ? 1 : j;
        y[x] = target <= n_tp ? envelope[target - 1] : 0.0;
    }
}

PyDoc_STRVAR(tide_points_doc,
             "tide_points(cls, is_tp, npos, included, y, /)\n"
             "--\n\n"
             "Write TIDE's 101 recall-point values of every included class with positives into y\n"
             "(n_class * 101 float64, row k = class k); other rows (and classes without points) are left as\n"
             "they are. cls (int64)\n"
             "and is_tp (bool) are the points in ranking order, classes in increasing order. The\n"
             "compiled twin of deteval.tide.ap._tide_points.");

static PyObject *tide_points(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOO:tide_points", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4]))
        return NULL;
    static const int writable[5] = {0, 0, 0, 0, 1};
    Arr arrs[5];
    PyObject *result = NULL;
    double *envelope = NULL;
    if (get_all(objs, "ibibf", writable, 5, arrs, "_canalyze") < 0) goto done;
    {
        const int64_t *cls = arrs[0].view.buf, *npos = arrs[2].view.buf;
        const char *is_tp = arrs[1].view.buf, *included = arrs[3].view.buf;
        double *y = arrs[4].view.buf;
        const Py_ssize_t n = arrs[0].view.len / 8, n_class = arrs[2].view.len / 8;
        if (arrs[1].view.len != n || arrs[3].view.len != n_class ||
            arrs[4].view.len / 8 != n_class * N_POINTS) {
            PyErr_SetString(PyExc_ValueError, "_canalyze.tide_points: array lengths do not agree");
            goto done;
        }
        for (Py_ssize_t k = 0; k < n_class; k++) {
            if (npos[k] < 0 || npos[k] > ((int64_t)1 << 52)) {
                PyErr_SetString(PyExc_ValueError, "_canalyze.tide_points: npos out of range");
                goto done;
            }
        }
        envelope = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
        if (envelope == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        Py_ssize_t lo = 0;
        int64_t previous = -1;
        while (lo < n) {
            const int64_t k = cls[lo];
            if (k <= previous || k >= n_class) {
                PyErr_SetString(PyExc_ValueError,
                                "_canalyze.tide_points: classes out of range or not in increasing order");
                goto done;
            }
            Py_ssize_t hi = lo + 1;
            while (hi < n && cls[hi] == k) hi++;
            if (included[k] && npos[k] > 0) one_class(is_tp, lo, hi, npos[k], envelope, y + k * N_POINTS);
            previous = k;
            lo = hi;
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(envelope);
    release_arrs(arrs, 5);
    return result;
}

/* ValueError (prefixed with where) unless run_start[0 .. n_run] are offsets into the n_pair pairs,
 * not decreasing, and every pair's ground truth is one of the n_gt. */
static int check_runs(const int64_t *run_start, Py_ssize_t n_run, const int64_t *pair_gt, Py_ssize_t n_pair,
                      Py_ssize_t n_gt, const char *where) {
    for (Py_ssize_t r = 0; r < n_run; r++) {
        if (run_start[r] < 0 || run_start[r] > run_start[r + 1] || run_start[r + 1] > n_pair) {
            PyErr_Format(PyExc_ValueError, "%s: run_start out of range or decreasing", where);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < n_pair; i++) {
        if (pair_gt[i] < 0 || pair_gt[i] >= n_gt) {
            PyErr_Format(PyExc_ValueError, "%s: a pair's ground truth is out of range", where);
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(pair_maxima_doc,
             "pair_maxima(run_start, pair_gt, iou, rows, det_class, gt_class, gt_is_counted, gt_is_used,\n"
             "            out_max, out_first, out_has, /)\n"
             "--\n\n"
             "For each j, the pairs run_start[rows[j]] .. run_start[rows[j] + 1] - 1 whose ground truth\n"
             "counts: out_has[j] whether there is one; out_max[4 * j + m] and, for m < 2, out_first[2 * j\n"
             "+ m] = pair_gt of the first pair reaching it, for m = 0 same class as det_class[j], 1 other\n"
             "class, 2 same class and used ground truth, 3 any (a value outside the set counts as 0);\n"
             "0 and -1 without pairs. The compiled twin of deteval.tide.oracle._pair_maxima_numpy.");

static PyObject *pair_maxima(PyObject *self, PyObject *args) {
    PyObject *objs[11];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOO:pair_maxima", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10]))
        return NULL;
    static const int writable[11] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1};
    Arr arrs[11];
    PyObject *result = NULL;
    if (get_all(objs, "iifiiibbfib", writable, 11, arrs, "_canalyze") < 0) goto done;
    {
        const int64_t *run_start = arrs[0].view.buf, *pair_gt = arrs[1].view.buf;
        const double *iou = arrs[2].view.buf;
        const int64_t *rows = arrs[3].view.buf, *det_class = arrs[4].view.buf, *gt_class = arrs[5].view.buf;
        const char *gt_is_counted = arrs[6].view.buf, *gt_is_used = arrs[7].view.buf;
        double *out_max = arrs[8].view.buf;
        int64_t *out_first = arrs[9].view.buf;
        char *out_has = arrs[10].view.buf;
        const Py_ssize_t n_run = arrs[0].view.len / 8 - 1, n_pair = arrs[1].view.len / 8;
        const Py_ssize_t n_rows = arrs[3].view.len / 8, n_gt = arrs[5].view.len / 8;
        if (n_run < 0 || arrs[2].view.len / 8 != n_pair || arrs[4].view.len / 8 != n_rows ||
            arrs[6].view.len != n_gt || arrs[7].view.len != n_gt || arrs[8].view.len / 8 != 4 * n_rows ||
            arrs[9].view.len / 8 != 2 * n_rows || arrs[10].view.len != n_rows) {
            PyErr_SetString(PyExc_ValueError, "_canalyze.pair_maxima: array lengths do not agree");
            goto done;
        }
        if (check_runs(run_start, n_run, pair_gt, n_pair, n_gt, "_canalyze.pair_maxima") < 0) goto done;
        for (Py_ssize_t j = 0; j < n_rows; j++) {
            if (rows[j] < 0 || rows[j] >= n_run) {
                PyErr_SetString(PyExc_ValueError, "_canalyze.pair_maxima: a row is out of range");
                goto done;
            }
            const int64_t cls = det_class[j];
            double same = 0.0, other = 0.0, used = 0.0, any = 0.0;
            int64_t same_gt = -1, other_gt = -1;
            int first = 1;
            for (int64_t i = run_start[rows[j]]; i < run_start[rows[j] + 1]; i++) {
                const int64_t g = pair_gt[i];
                if (!gt_is_counted[g]) continue;
                const double v = iou[i] + 0.0; /* a -0.0 IoU counts as +0.0, as in the twin */
                const int is_same = gt_class[g] == cls;
                const double vs = is_same ? v : 0.0, vo = is_same ? 0.0 : v;
                const double vu = is_same && gt_is_used[g] ? v : 0.0;
                if (first) {
                    same = vs;
                    other = vo;
                    used = vu;
                    any = v;
                    same_gt = other_gt = g;
                    first = 0;
                    continue;
                }
                if (vs > same) {
                    same = vs;
                    same_gt = g;
                }
                if (vo > other) {
                    other = vo;
                    other_gt = g;
                }
                if (vu > used) used = vu;
                if (v > any) any = v;
            }
            out_has[j] = !first;
            out_max[4 * j] = same;
            out_max[4 * j + 1] = other;
            out_max[4 * j + 2] = used;
            out_max[4 * j + 3] = any;
            out_first[2 * j] = same_gt;
            out_first[2 * j + 1] = other_gt;
        }
        result = Py_None;
        Py_INCREF(result);
    }
done:
    release_arrs(arrs, 11);
    return result;
}

PyDoc_STRVAR(run_first_max_doc,
             "run_first_max(run_start, pair_gt, values, rows, gt_mask, out, /)\n"
             "--\n\n"
             "For each j, among the pairs run_start[rows[j]] .. run_start[rows[j] + 1] - 1 whose ground\n"
             "truth is in gt_mask, the index of the first maximum of values into out[j] (-1 when none).\n"
             "The compiled twin of deteval.decomposition._first_max_numpy.");

static PyObject *run_first_max(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOO:run_first_max", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5]))
        return NULL;
    static const int writable[6] = {0, 0, 0, 0, 0, 1};
    Arr arrs[6];
    PyObject *result = NULL;
    if (get_all(objs, "iifibi", writable, 6, arrs, "_canalyze") < 0) goto done;
    {
        const int64_t *run_start = arrs[0].view.buf, *pair_gt = arrs[1].view.buf, *rows = arrs[3].view.buf;
        const double *values = arrs[2].view.buf;
        const char *gt_mask = arrs[4].view.buf;
        int64_t *out = arrs[5].view.buf;
        const Py_ssize_t n_run = arrs[0].view.len / 8 - 1, n_pair = arrs[1].view.len / 8;
        const Py_ssize_t n_rows = arrs[3].view.len / 8, n_gt = arrs[4].view.len;
        if (n_run < 0 || arrs[2].view.len / 8 != n_pair || arrs[5].view.len / 8 != n_rows) {
            PyErr_SetString(PyExc_ValueError, "_canalyze.run_first_max: array lengths do not agree");
            goto done;
        }
        if (check_runs(run_start, n_run, pair_gt, n_pair, n_gt, "_canalyze.run_first_max") < 0) goto done;
        for (Py_ssize_t j = 0; j < n_rows; j++) {
            if (rows[j] < 0 || rows[j] >= n_run) {
                PyErr_SetString(PyExc_ValueError, "_canalyze.run_first_max: a row is out of range");
                goto done;
            }
            int64_t best = -1;
            for (int64_t i = run_start[rows[j]]; i < run_start[rows[j] + 1]; i++) {
                if (gt_mask[pair_gt[i]] && (best < 0 || values[i] > values[best])) best = i;
            }
            out[j] = best;
        }
        result = Py_None;
        Py_INCREF(result);
    }
done:
    release_arrs(arrs, 6);
    return result;
}

static PyMethodDef ctide_methods[] = {
    {"tide_points", tide_points, METH_VARARGS, tide_points_doc},
    {"pair_maxima", pair_maxima, METH_VARARGS, pair_maxima_doc},
    {"run_first_max", run_first_max, METH_VARARGS, run_first_max_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_canalyze, "deteval._canalyze",
               "Compiled kernels of deteval analyze (TIDE's AP, per-detection IoU maxima); optional, numpy twins.",
               ctide_methods, CANALYZE_ABI, NULL)
