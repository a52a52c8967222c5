/*
 * deteval._ctide: the recall-point values of TIDE's AP (tidecv's APDataObject.get_ap), all classes
 * in one pass.
 *
 * The compiled twin of deteval.tide.ap._tide_points (the numpy code stays the reference:
 * tests/unit/test_tide.py compares the two bit for bit). For each included class with positives,
 * walking its segment of the ranking: at the j-th true positive the precision is t / (t + f) (t, f:
 * the TP and FP counts so far, as doubles, no epsilon: tidecv's expression); the envelope is the
 * suffix maximum of those precisions; for recall point x / 100 (x = 0..100), the first TP count j
 * with j / npos >= x / 100 (numpy's searchsorted, side "left", over j / npos for j = 0..npos),
 * clipped below at 1, gives the value: the envelope at that TP if the class has that many, else 0.
 * The 101 values are written to y; their mean (a Python sum, as tidecv takes it) stays in Python,
 * so the result does not depend on how the interpreter sums floats.
 *
 * Every float operation is numpy's, in the same order, on the same operands: (double)x / 100.0,
 * (double)j / (double)npos, (double)t / ((double)t + (double)f); the envelope only compares.
 *
 * Plain C and the CPython API only (arrays come as buffers; no numpy headers needed to build).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#define N_POINTS 101

typedef struct {
    Py_buffer view;
    int held;
} Arr;

/* ``obj`` as a C-contiguous buffer: 'i' int64, 'b' bool (one byte), 'f' float64. */
static int get_arr(PyObject *obj, char kind, int writable, Arr *a) {
    int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &a->view, flags) < 0) return -1;
    a->held = 1;
    const char *fmt = a->view.format ? a->view.format : "B";
    if (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@') fmt++;
    int ok = fmt[0] != '\0' && fmt[1] == '\0';
    if (kind == 'i') ok = ok && a->view.itemsize == 8 && (fmt[0] == 'l' || fmt[0] == 'q');
    else if (kind == 'b') ok = ok && a->view.itemsize == 1 && fmt[0] == '?';
    else ok = ok && a->view.itemsize == 8 && fmt[0] == 'd';
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, kind == 'i'   ? "_ctide: expected a contiguous int64 buffer"
                                         : kind == 'b' ? "_ctide: expected a contiguous bool buffer"
                                                       : "_ctide: expected a contiguous float64 buffer");
        return -1;
    }
    return 0;
}

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
    static const char kinds[5] = "ibibf";
    Arr arrs[5];
    PyObject *result = NULL;
    double *envelope = NULL;
    int i;
    for (i = 0; i < 5; i++) arrs[i].held = 0;
    for (i = 0; i < 5; i++) {
        if (get_arr(objs[i], kinds[i], i == 4, &arrs[i]) < 0) goto done;
    }
    {
        const int64_t *cls = arrs[0].view.buf, *npos = arrs[2].view.buf;
        const char *is_tp = arrs[1].view.buf, *included = arrs[3].view.buf;
        double *y = arrs[4].view.buf;
        const Py_ssize_t n = arrs[0].view.len / 8, n_class = arrs[2].view.len / 8;
        if (arrs[1].view.len != n || arrs[3].view.len != n_class ||
            arrs[4].view.len / 8 != n_class * N_POINTS) {
            PyErr_SetString(PyExc_ValueError, "_ctide.tide_points: array lengths do not agree");
            goto done;
        }
        for (Py_ssize_t k = 0; k < n_class; k++) {
            if (npos[k] < 0 || npos[k] > ((int64_t)1 << 52)) {
                PyErr_SetString(PyExc_ValueError, "_ctide.tide_points: npos out of range");
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
                                "_ctide.tide_points: classes out of range or not in increasing order");
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
    for (i = 0; i < 5; i++) {
        if (arrs[i].held) PyBuffer_Release(&arrs[i].view);
    }
    return result;
}

static PyMethodDef ctide_methods[] = {
    {"tide_points", tide_points, METH_VARARGS, tide_points_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ctide_module = {
    PyModuleDef_HEAD_INIT, "deteval._ctide",
    "Compiled kernel of TIDE's AP (deteval.tide.ap); optional, with a numpy twin.", -1, ctide_methods,
};

PyMODINIT_FUNC PyInit__ctide(void) { return PyModule_Create(&ctide_module); }
