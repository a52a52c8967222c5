/*
 * deteval.geometry._ckeypoint: the per-keypoint terms of OKS for aligned (ground truth, detection)
 * pairs, gathered by row in one pass and grouped by how many terms enter each pair's mean.
 *
 * The compiled part of ``deteval.geometry.keypoints.pair_oks``. For pair k the terms are
 * ``-e_i``, ``e_i = (dx*dx + dy*dy) / variance_i / scale_g / 2``, for every keypoint that enters
 * pycocotools' mean (the labelled ones, v > 0; all of them when none is), in keypoint order.
 * ``dx`` is the detection's x minus the ground truth's, or -- for a ground truth without labelled
 * keypoints -- the distance outside its doubled box (max(0, x0 - x) + max(0, x - x1), x0 = x - w,
 * x1 = x + 2 w); the same for y. Every float operation is numpy's in the Python twin, in the same
 * order, on the same operands (``variance`` and ``scale = area + eps`` come computed by numpy; the
 * negation is exact); build with ``-ffp-contract=off``.
 *
 * The pairs are laid out by their term count c (1..K), ascending, and within a count in pair
 * order: ``terms`` holds, for c = 1, 2, ..., K, the ``group_size[c]`` rows of c terms each, packed
 * (row after row, no padding), and ``order[j]`` is the pair of the j-th row so laid out. Each
 * group is then a contiguous (group_size[c], c) block on which numpy computes ``exp`` and the
 * row sums exactly as pycocotools' ``np.sum(np.exp(-e))`` of one pair's vector: ``exp`` and the
 * sums stay numpy's, so the mean is numpy's on any CPU.
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
             "oks_terms(gt_keypoints, gt_box, gt_scale, det_keypoints, gt_rows, det_rows, variances, terms, order,\n"
             "          group_size)\n"
             "\n"
             "float64 buffers: gt_keypoints (n_gt, K, 3), gt_box (n_gt, 4) xywh, gt_scale (n_gt,),\n"
             "det_keypoints (n_det, K, 3), variances (K,); int64 gt_rows, det_rows (n_pair,). Writes\n"
             "terms (float64, at least n_pair x K; the negated terms grouped by count, see the module\n"
             "comment), order (int64, n_pair) and group_size (int64, K + 1; [0] is 0).");

static PyObject *oks_terms(PyObject *self, PyObject *args)
{
    Py_buffer gk, gb, gs, dk, gr, dr, var, terms_v, order_v, size_v;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*w*w*", &gk, &gb, &gs, &dk, &gr, &dr, &var, &terms_v, &order_v,
                          &size_v))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t *used_of_pair = NULL;
    const Py_ssize_t K = var.len / 8, n_gt = gs.len / 8, n_pair = gr.len / 8;
    const Py_ssize_t n_det = K ? dk.len / (24 * K) : 0;
    const Py_buffer *views[10] = {&terms_v, &order_v, &size_v, &gk, &gb, &gs, &dk, &gr, &dr, &var};
    if (K == 0 || var.len % 8 || gk.len != n_gt * K * 24 || gb.len != n_gt * 32 || gs.len % 8 ||
        dk.len != n_det * K * 24 || dr.len != gr.len || gr.len % 8 || terms_v.len < n_pair * K * 8 ||
        order_v.len != n_pair * 8 || size_v.len != (K + 1) * 8) {
        PyErr_SetString(PyExc_ValueError, "oks_terms: buffer sizes do not match");
        goto done;
    }
    for (int i = 0; i < 10; i++) {
        if (views[i]->len && !is_aligned(views[i], 8)) {
            PyErr_SetString(PyExc_ValueError, "oks_terms: unaligned buffer");
            goto done;
        }
    }
    if (outputs_overlap(views, 3, 10, "oks_terms")) goto done;
    const int64_t *g_rows = (const int64_t *)gr.buf, *d_rows = (const int64_t *)dr.buf;
    for (Py_ssize_t k = 0; k < n_pair; k++) {
        if (g_rows[k] < 0 || g_rows[k] >= n_gt || d_rows[k] < 0 || d_rows[k] >= n_det) {
            PyErr_SetString(PyExc_ValueError, "oks_terms: a row is outside its collection");
            goto done;
        }
    }
    /* one block: the term count of each pair, then a row and a term cursor per count */
    used_of_pair = PyMem_Malloc((size_t)(n_pair + 2 * (K + 1)) * sizeof(Py_ssize_t));
    if (!used_of_pair) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t *row_at = used_of_pair + n_pair, *term_at = row_at + K + 1;
    const double *gkp = (const double *)gk.buf, *gbox = (const double *)gb.buf, *scale = (const double *)gs.buf;
    const double *dkp = (const double *)dk.buf, *variance = (const double *)var.buf;
    double *terms = (double *)terms_v.buf;
    int64_t *order = (int64_t *)order_v.buf, *group_size = (int64_t *)size_v.buf;
    Py_BEGIN_ALLOW_THREADS
    /* The term count of each pair: its ground truth's labelled keypoints, or all K when none is
     * (counted per pair, from the rows the pairs read anyway: a call on a slice of the pairs
     * reads none of the other ground truth). */
    for (Py_ssize_t c = 0; c <= K; c++) group_size[c] = 0;
    for (Py_ssize_t k = 0; k < n_pair; k++) {
        const double *g = gkp + g_rows[k] * K * 3;
        Py_ssize_t labelled = 0;
        for (Py_ssize_t i = 0; i < K; i++) labelled += g[3 * i + 2] > 0;
        used_of_pair[k] = labelled ? labelled : K;
        group_size[used_of_pair[k]]++;
    }
    /* Where each group starts, in rows and in terms: the cursors of the next pass. */
    Py_ssize_t rows = 0, n_terms = 0;
    for (Py_ssize_t c = 0; c <= K; c++) {
        row_at[c] = rows;
        term_at[c] = n_terms;
        rows += group_size[c];
        n_terms += group_size[c] * c;
    }
    for (Py_ssize_t k = 0; k < n_pair; k++) {
        const Py_ssize_t g_row = g_rows[k], used = used_of_pair[k];
        const double *g = gkp + g_row * K * 3, *d = dkp + d_rows[k] * K * 3, *box = gbox + g_row * 4;
        const int labelled = used < K || g[2] > 0; /* all K labelled, or none: look at one flag */
        double *row = terms + term_at[used];
        const double x0 = box[0] - box[2], x1 = box[0] + box[2] * 2;
        const double y0 = box[1] - box[3], y1 = box[1] + box[3] * 2;
        Py_ssize_t j = 0;
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
            row[j++] = -((dx * dx + dy * dy) / variance[i] / scale[g_row] / 2);
        }
        term_at[used] += used;
        order[row_at[used]++] = k;
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(used_of_pair);
    PyBuffer_Release(&gk);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&gs);
    PyBuffer_Release(&dk);
    PyBuffer_Release(&gr);
    PyBuffer_Release(&dr);
    PyBuffer_Release(&var);
    PyBuffer_Release(&terms_v);
    PyBuffer_Release(&order_v);
    PyBuffer_Release(&size_v);
    return result;
}

static PyMethodDef ckeypoint_methods[] = {
    {"oks_terms", oks_terms, METH_VARARGS, oks_terms_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_ckeypoint, "deteval.geometry._ckeypoint", "Compiled OKS terms (see _ckeypoint.c).",
               ckeypoint_methods, 3, NULL) /* 3: term counts per pair, not per ground truth (same results) */
