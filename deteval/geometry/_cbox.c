/*
 * deteval.geometry._cbox: the IoU of aligned box pairs, in one pass over the pairs.
 *
 * The compiled twin of deteval.geometry.boxes._pair_iou (the numpy code stays the reference:
 * tests/unit/test_cbox.py compares the two bit for bit). Pair i is det_box[det_rows[i]] against
 * gt_box[gt_rows[i]] (rows omitted: row i of each). The boxes come in the convention's native
 * format, xywh for "continuous" (pycocotools' bbIou), xyxy for "pixel_inclusive" (the VOC devkit,
 * widths and heights + 1), and every float operation is numpy's, in the same order, on the same
 * operands:
 *
 *   continuous:  iw = min(dw + dx, gw + gx) - max(dx, gx), ih likewise, areas dw * dh, gw * gh
 *   pixel:       iw = min(dx2, gx2) - max(dx1, gx1) + 1, ih likewise,
 *                areas (dx2 - dx1 + 1) * (dy2 - dy1 + 1), gt likewise
 *   inter = iw * ih if iw > 0 and ih > 0 else 0; union = det_area if crowd else
 *   det_area + gt_area - inter; iou = inter / union if iw > 0, ih > 0 and union > 0 else 0.
 *
 * A pair with a term that is not finite (a NaN or infinite coordinate, or finite boxes whose sums
 * or products overflow, near 1e200) is counted and left for the caller, which recomputes
 * everything with numpy (its rescaled path); min and max propagate NaN as np.minimum and
 * np.maximum do, so a NaN coordinate always gives such a term. Build with
 * -ffp-contract=off (no fused multiply-add: dw * dh + ... must round twice as numpy does).
 *
 * Plain C and the CPython API only (arrays come as buffers; no numpy headers needed to build).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "../_buffer_checks.h"

/* The ABI number (see _buffer_checks.h; deteval._speedups.ABI holds the expected one). */
#define CBOX_ABI 1

/* np.minimum and np.maximum: a NaN operand gives NaN (a plain ``a < b ? a : b`` would drop a NaN
 * in ``a`` and give ``b``: a box [NaN, 0, 10, 10] would overlap). The NaN term then makes the pair
 * count as not finite, so the caller's numpy twin computes it, as it does every non-finite pair. */
static inline double min2(double a, double b) { return (a <= b || a != a) ? a : b; }
static inline double max2(double a, double b) { return (a >= b || a != a) ? a : b; }

PyDoc_STRVAR(pair_iou_doc,
             "pair_iou(det_box, gt_box, det_rows, gt_rows, gt_is_crowd, pixel, out, /)\n"
             "--\n\n"
             "IoU of each pair into out (float64, n_pair): det_box[det_rows[i]] against\n"
             "gt_box[gt_rows[i]] (rows None: row i), boxes (n, 4) float64 in xywh (pixel false) or\n"
             "xyxy (pixel true, the +1 convention). Returns the number of pairs with a non-finite\n"
             "term (their out values are not meaningful). The compiled twin of\n"
             "deteval.geometry.boxes._pair_iou.");

static PyObject *pair_iou(PyObject *self, PyObject *args) {
    PyObject *objs[5], *out_obj;
    int pixel;
    if (!PyArg_ParseTuple(args, "OOOOOpO:pair_iou", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &pixel,
                          &out_obj))
        return NULL;
    Arr arrs[6];
    PyObject *result = NULL;
    for (int i = 0; i < 6; i++) arrs[i].held = 0;
    if (get_arr(objs[0], 'f', 0, &arrs[0], "_cbox") < 0 || get_arr(objs[1], 'f', 0, &arrs[1], "_cbox") < 0) goto done;
    const int has_rows = objs[2] != Py_None;
    if (has_rows != (objs[3] != Py_None)) {
        PyErr_SetString(PyExc_ValueError, "_cbox.pair_iou: give det_rows and gt_rows together, or neither");
        goto done;
    }
    if (has_rows && (get_arr(objs[2], 'i', 0, &arrs[2], "_cbox") < 0 || get_arr(objs[3], 'i', 0, &arrs[3], "_cbox") < 0)) goto done;
    if (get_arr(objs[4], 'b', 0, &arrs[4], "_cbox") < 0 || get_arr(out_obj, 'f', 1, &arrs[5], "_cbox") < 0) goto done;
    {
        static const int writable[6] = {0, 0, 0, 0, 0, 1};
        if (arrs_overlap(arrs, writable, 6, "_cbox.pair_iou")) goto done;
    }
    {
        const double *det = arrs[0].view.buf, *gt = arrs[1].view.buf;
        const int64_t *det_rows = has_rows ? arrs[2].view.buf : NULL, *gt_rows = has_rows ? arrs[3].view.buf : NULL;
        const char *crowd = arrs[4].view.buf;
        double *out = arrs[5].view.buf;
        const Py_ssize_t n_det = arrs[0].view.len / 32, n_gt = arrs[1].view.len / 32, n = arrs[5].view.len / 8;
        if (arrs[0].view.len % 32 || arrs[1].view.len % 32 || arrs[4].view.len != n ||
            (has_rows && (arrs[2].view.len / 8 != n || arrs[3].view.len / 8 != n)) ||
            (!has_rows && (n_det != n || n_gt != n))) {
            PyErr_SetString(PyExc_ValueError, "_cbox.pair_iou: array lengths do not agree");
            goto done;
        }
        if (has_rows) {
            for (Py_ssize_t i = 0; i < n; i++) {
                if (det_rows[i] < 0 || det_rows[i] >= n_det || gt_rows[i] < 0 || gt_rows[i] >= n_gt) {
                    PyErr_SetString(PyExc_ValueError, "_cbox.pair_iou: a row is out of range");
                    goto done;
                }
            }
        }
        Py_ssize_t n_bad = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            const double *d = det + 4 * (has_rows ? det_rows[i] : i);
            const double *g = gt + 4 * (has_rows ? gt_rows[i] : i);
            double iw, ih, det_area, gt_area;
            if (!pixel) {
                det_area = d[2] * d[3];
                gt_area = g[2] * g[3];
                iw = min2(d[2] + d[0], g[2] + g[0]) - max2(d[0], g[0]);
                ih = min2(d[3] + d[1], g[3] + g[1]) - max2(d[1], g[1]);
            } else {
                iw = min2(d[2], g[2]) - max2(d[0], g[0]) + 1.0;
                ih = min2(d[3], g[3]) - max2(d[1], g[1]) + 1.0;
                det_area = (d[2] - d[0] + 1.0) * (d[3] - d[1] + 1.0);
                gt_area = (g[2] - g[0] + 1.0) * (g[3] - g[1] + 1.0);
            }
            const int overlaps = iw > 0 && ih > 0;
            const double inter = overlaps ? iw * ih : 0.0;
            const double uni = crowd[i] ? det_area : det_area + gt_area - inter;
            out[i] = overlaps && uni > 0 ? inter / uni : 0.0;
            n_bad += !(isfinite(uni) && isfinite(inter) && isfinite(iw) && isfinite(ih) && isfinite(det_area) &&
                       isfinite(gt_area));
        }
        result = PyLong_FromSsize_t(n_bad);
    }
done:
    release_arrs(arrs, 6);
    return result;
}

static PyMethodDef cbox_methods[] = {
    {"pair_iou", pair_iou, METH_VARARGS, pair_iou_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_cbox, "deteval.geometry._cbox",
               "Compiled IoU of box pairs (deteval.geometry.boxes); optional, with a numpy twin.", cbox_methods,
               CBOX_ABI, NULL)
