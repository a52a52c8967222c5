/*
 * deteval.geometry._ckeypoint: the per-keypoint terms of OKS for aligned (ground truth, detection)
 * pairs, gathered by row in one pass (no (n_pair, n_keypoints, 3) copies).
 *
 * The compiled part of ``deteval.geometry.keypoints.pair_oks``: for pair k it writes, packed to the
 * front of row k of ``terms`` in keypoint order, ``e_i = (dx*dx + dy*dy) / variance_i / scale_g / 2``
 * for every keypoint that enters pycocotools' mean (the labelled ones, v > 0; all of them when none
 * is), and the count of those; the rest of the row is 0. ``dx`` is the detection's x minus the ground
 * truth's, or -- for a ground truth without labelled keypoints -- the distance outside its doubled box
 * (max(0, x0 - x) + max(0, x - x1), x0 = x - w, x1 = x + 2 w); the same for y. Every float operation
 * is numpy's in the Python twin, in the same order, on the same operands (``variance`` and ``scale =
 * area + eps`` come computed by numpy); build with ``-ffp-contract=off``. ``exp`` and the sum stay in
 * numpy, so the mean is numpy's.
 *
 * Plain C and the CPython API only (arrays as buffers, no numpy headers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../_buffer_checks.h"

static double outside(double low, double v, double high)
{
    const double below = low - v, above = v - high;
    return (below > 0 ? below : 0.0) + (above > 0 ? above : 0.0);
}

PyDoc_STRVAR(oks_terms_doc,
             "oks_terms(gt_keypoints, gt_box, gt_scale, det_keypoints, gt_rows, det_rows, variances, terms, n_used)\n"
             "\n"
             "float64 buffers: gt_keypoints (n_gt, K, 3), gt_box (n_gt, 4) xywh, gt_scale (n_gt,),\n"
             "det_keypoints (n_det, K, 3), variances (K,); int64 gt_rows, det_rows (n_pair,). Writes\n"
             "terms (float64, n_pair x K) and n_used (int64, n_pair).");

static PyObject *oks_terms(PyObject *self, PyObject *args)
{
    Py_buffer gk, gb, gs, dk, gr, dr, var, terms_v, used_v;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*w*", &gk, &gb, &gs, &dk, &gr, &dr, &var, &terms_v, &used_v))
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t K = var.len / 8, n_gt = gs.len / 8, n_pair = gr.len / 8;
    const Py_ssize_t n_det = K ? dk.len / (24 * K) : 0;
    const Py_buffer *views[9] = {&terms_v, &used_v, &gk, &gb, &gs, &dk, &gr, &dr, &var};
    if (K == 0 || var.len % 8 || gk.len != n_gt * K * 24 || gb.len != n_gt * 32 || gs.len % 8 ||
        dk.len != n_det * K * 24 || dr.len != gr.len || gr.len % 8 || terms_v.len != n_pair * K * 8 ||
        used_v.len != n_pair * 8) {
        PyErr_SetString(PyExc_ValueError, "oks_terms: buffer sizes do not match");
        goto done;
    }
    for (int i = 0; i < 9; i++) {
        if (views[i]->len && !is_aligned(views[i], 8)) {
            PyErr_SetString(PyExc_ValueError, "oks_terms: unaligned buffer");
            goto done;
        }
    }
    if (outputs_overlap(views, 2, 9, "oks_terms")) goto done;
    const int64_t *g_rows = (const int64_t *)gr.buf, *d_rows = (const int64_t *)dr.buf;
    for (Py_ssize_t k = 0; k < n_pair; k++) {
        if (g_rows[k] < 0 || g_rows[k] >= n_gt || d_rows[k] < 0 || d_rows[k] >= n_det) {
            PyErr_SetString(PyExc_ValueError, "oks_terms: a row is outside its collection");
            goto done;
        }
    }
    const double *gkp = (const double *)gk.buf, *gbox = (const double *)gb.buf, *scale = (const double *)gs.buf;
    const double *dkp = (const double *)dk.buf, *variance = (const double *)var.buf;
    double *terms = (double *)terms_v.buf;
    int64_t *n_used = (int64_t *)used_v.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n_pair; k++) {
        const double *g = gkp + g_rows[k] * K * 3, *d = dkp + d_rows[k] * K * 3, *box = gbox + g_rows[k] * 4;
        double *row = terms + k * K;
        Py_ssize_t labelled = 0;
        for (Py_ssize_t i = 0; i < K; i++) labelled += g[3 * i + 2] > 0;
        Py_ssize_t used = 0;
        const double x0 = box[0] - box[2], x1 = box[0] + box[2] * 2;
        const double y0 = box[1] - box[3], y1 = box[1] + box[3] * 2;
        for (Py_ssize_t i = 0; i < K; i++) {
            double dx, dy;
            if (labelled) {
                if (!(g[3 * i + 2] > 0)) continue;
                dx = d[3 * i] - g[3 * i];
                dy = d[3 * i + 1] - g[3 * i + 1];
            } else {
                dx = outside(x0, d[3 * i], x1);
                dy = outside(y0, d[3 * i + 1], y1);
            }
            row[used++] = (dx * dx + dy * dy) / variance[i] / scale[g_rows[k]] / 2;
        }
        for (Py_ssize_t i = used; i < K; i++) row[i] = 0.0;
        n_used[k] = used;
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&gk);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&gs);
    PyBuffer_Release(&dk);
    PyBuffer_Release(&gr);
    PyBuffer_Release(&dr);
    PyBuffer_Release(&var);
    PyBuffer_Release(&terms_v);
    PyBuffer_Release(&used_v);
    return result;
}

static PyMethodDef ckeypoint_methods[] = {
    {"oks_terms", oks_terms, METH_VARARGS, oks_terms_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_ckeypoint, "deteval.geometry._ckeypoint", "Compiled OKS terms (see _ckeypoint.c).",
               ckeypoint_methods, 1, NULL)
