/*
 * deteval._cboot: one bootstrap resample's interpolated precision curve, in one fused pass.
 *
 * The compiled twin of ``deteval.stats.weighted._curve_row`` (101-point and 11-point AP): for every
 * (lane, class) segment of a plan's curve (``deteval.stats.plan._Curve``), with the weights of one
 * resample, it computes the weighted TP count and the entries counted through each item that weighs
 * something, the precision with the reference tools' float expression, its envelope (suffix maximum
 * within the segment), the recall thresholds each item reaches (a lookup in the thresholds table), and
 * writes the envelope at the first item reaching each threshold, plus the segment's TP total.
 *
 * Bit-identical to the numpy code by construction: every count is an exact int64 sum (order does not
 * matter), and the only float operations are the ones numpy performs, in the same order, on the same
 * operands: ``(double)ranked + eps`` then ``(double)tp / that`` (pycocotools' ``tp / (fp + tp +
 * np.spacing(1))`` with ``fp + tp == ranked`` exactly), or ``max((double)ranked, eps)`` then the
 * division (the devkit's ``tp / max(tp + fp, eps)``); the envelope and the table only compare and copy
 * values. No sum of floats is done here (the pairwise means of numpy stay in numpy). Build with
 * ``-O2 -fno-fast-math -ffp-contract=off`` (no fused multiply-add can arise anyway: there is no
 * multiplication of floats).
 *
 * Plain C and the CPython API only (the arrays come as buffers; no numpy headers): building needs a C
 * compiler and nothing else. Every index read from the plan is checked against the array it reads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_buffer_checks.h"

/* The ABI number (see _buffer_checks.h; deteval._speedups.ABI holds the expected one). */
#define CBOOT_ABI 1

#define N_ARRS 17

static PyObject *bad_index(const char *what) {
    PyErr_Format(PyExc_ValueError, "_cboot.curve_row: %s out of range (inconsistent plan)", what);
    return NULL;
}

/* The kernel proper; returns NULL with an exception set on inconsistent inputs. */
static PyObject *run(Arr *A, Py_ssize_t n_r, int devkit, double eps) {
    const int64_t *tab = A[0].view.buf, *seg_len = A[2].view.buf;
    const int32_t *key = A[1].view.buf, *item_counted = A[3].view.buf;
    const int64_t *seg_counted_start = A[4].view.buf;
    const int32_t *counted_key = A[5].view.buf;
    const int64_t *counted_bounds = A[6].view.buf;
    const int32_t *corr_key = A[7].view.buf, *corr_sign = A[8].view.buf, *item_fix_hi = A[9].view.buf;
    const int64_t *seg_fix_lo = A[10].view.buf;
    const int64_t *table = A[11].view.buf, *start = A[12].view.buf;
    double *out = A[13].view.buf;
    int64_t *n_tp = A[14].view.buf, *iwork = A[15].view.buf;
    double *fwork = A[16].view.buf;
    Py_ssize_t n[N_ARRS];
    for (int i = 0; i < N_ARRS; i++) n[i] = A[i].view.len / A[i].view.itemsize;
    const Py_ssize_t n_tab = n[0], n_items = n[1], n_seg = n[2], n_counted = n[5], n_bounds = n[6];
    const Py_ssize_t n_corr = n[7], n_table = n[11];
    const Py_ssize_t n_area = n_bounds - 1;
    if (n_r < 1 || (n_seg > 0 && n_r > n[13] / n_seg) || n_area < 1 || n_seg % n_area != 0 || n[3] != n_items || n[4] != n_seg ||
        n[8] != n_corr || n[9] != n_items || n[10] != n_seg || n[12] != n_seg || n[13] != n_seg * n_r ||
        n[14] != n_seg || counted_bounds[0] != 0 || counted_bounds[n_area] != n_counted)
        return bad_index("array size");
    Py_ssize_t max_len = 0, total = 0;
    for (Py_ssize_t s = 0; s < n_seg; s++) {
        if (seg_len[s] < 1 || seg_len[s] > n_items) return bad_index("segment length");
        if (seg_len[s] > max_len) max_len = (Py_ssize_t)seg_len[s];
        total += (Py_ssize_t)seg_len[s];
    }
    if (total != n_items) return bad_index("segment lengths");
    /* iwork: cumulative counted weights of every area (each with a leading 0), of the corrections
       (leading 0), then a segment's histogram of the thresholds its live items reach (n_r + 1). */
    const Py_ssize_t c_size = n_counted + n_area, cc_size = n_corr + 1;
    if (n[15] < c_size + cc_size + n_r + 1 || n[16] < max_len) return bad_index("work buffer size");
    int64_t *c_all = iwork, *cc = iwork + c_size, *hist = iwork + c_size + cc_size;
    double *pr = fwork;

    for (Py_ssize_t a = 0; a < n_area; a++) {
        Py_ssize_t lo = (Py_ssize_t)counted_bounds[a], hi = (Py_ssize_t)counted_bounds[a + 1];
        if (lo < 0 || hi < lo || hi > n_counted) return bad_index("counted bounds");
        int64_t *c = c_all + lo + a, acc = 0;
        c[0] = 0;
        for (Py_ssize_t j = lo; j < hi; j++) {
            int64_t k = counted_key[j];
            if ((uint64_t)k >= (uint64_t)n_tab) return bad_index("counted entry");
            acc += tab[k];
            c[j - lo + 1] = acc;
        }
    }
    {
        int64_t acc = 0;
        cc[0] = 0;
        for (Py_ssize_t j = 0; j < n_corr; j++) {
            int64_t k = corr_key[j];
            if ((uint64_t)k >= (uint64_t)n_tab) return bad_index("correction entry");
            acc += tab[k] * (int64_t)corr_sign[j];
            cc[j + 1] = acc;
        }
    }

    const Py_ssize_t seg_per_area = n_seg / n_area;
    Py_ssize_t head = 0;
    for (Py_ssize_t s = 0; s < n_seg; s++) {
        const Py_ssize_t a = s / seg_per_area;
        const Py_ssize_t c_lo = (Py_ssize_t)counted_bounds[a];
        const int64_t c_n = counted_bounds[a + 1] - c_lo; /* the area's sums: c_n + 1 values */
        const int64_t *c = c_all + c_lo + a;
        const int64_t scs = seg_counted_start[s], sfl = seg_fix_lo[s];
        if ((uint64_t)scs > (uint64_t)c_n || (uint64_t)sfl > (uint64_t)n_corr)
            return bad_index("segment start");
        const int64_t seg_base = c[scs] - cc[sfl];
        const int64_t st = start[s];
        const Py_ssize_t last = head + (Py_ssize_t)seg_len[s] - 1; /* the virtual item */
        int64_t tp = 0;
        Py_ssize_t m = 0; /* live items of the segment so far */
        memset(hist, 0, (size_t)(n_r + 1) * sizeof(int64_t));
        /* Branch-free over the items: one that weighs 0 (image not drawn, unused copy of a tie) is
           computed, then overwritten by the next live item and not counted in hist (it repeats its
           predecessor's TP count with at least as many entries: dominated, reaches nothing new;
           the numpy twin drops it, see _curve_row). */
        for (Py_ssize_t i = head; i < last; i++) {
            int64_t k = key[i];
            if ((uint64_t)k >= (uint64_t)n_tab) return bad_index("item");
            int64_t w = tab[k];
            tp += w;
            int64_t ic = item_counted[i], fh = item_fix_hi[i];
            if ((uint64_t)ic > (uint64_t)c_n || (uint64_t)fh > (uint64_t)n_corr) return bad_index("item count");
            int64_t ranked = c[ic] - cc[fh] - seg_base;
            double d;
            if (devkit) {
                d = (double)ranked;
                d = d > eps ? d : eps; /* devkit_precision: tp / max(tp + fp, eps) */
            } else {
                d = (double)ranked + eps; /* pycocotools: tp / (fp + tp + eps) */
            }
            pr[m] = (double)tp / d;
            int64_t t = st + tp;
            if ((uint64_t)t >= (uint64_t)n_table) return bad_index("thresholds table");
            int64_t reach = table[t]; /* thresholds reached: #{r : thr_r <= tp / npos} */
            if ((uint64_t)reach > (uint64_t)n_r) return bad_index("thresholds reached");
            int live = w != 0;
            hist[reach] += live;
            m += live;
        }
        pr[m] = 0.0; /* the virtual item: precision 0, reaches every threshold */
        n_tp[s] = tp;
        /* Envelope: suffix maximum within the segment (the values are compared and copied only). */
        double env = 0.0;
        for (Py_ssize_t j = m; j >= 0; j--) {
            double v = pr[j];
            env = v > env ? v : env;
            pr[j] = env;
        }
        /* Cell r reads the first live item reaching more than r thresholds: the number of live
           items reaching at most r (reach is non-decreasing), the virtual item if none. */
        double *cells = out + s * n_r;
        int64_t first = 0;
        for (Py_ssize_t r = 0; r < n_r; r++) {
            first += hist[r];
            cells[r] = pr[first];
        }
        head = last + 1;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(curve_row_doc,
             "curve_row(tab, key, seg_len, item_counted, seg_counted_start, counted_key, counted_bounds,\n"
             "          corr_key, corr_sign, item_fix_hi, seg_fix_lo, table, start, out, n_tp, iwork, fwork,\n"
             "          n_r, devkit, eps, /)\n"
             "--\n\n"
             "Precision at the recall thresholds of one resample into out (n_seg * n_r); TP per segment\n"
             "into n_tp. The compiled twin of deteval.stats.weighted._curve_row (see there).");

static PyObject *curve_row(PyObject *self, PyObject *args) {
    PyObject *objs[N_ARRS];
    Py_ssize_t n_r;
    int devkit;
    double eps;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOnpd:curve_row", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11],
                          &objs[12], &objs[13], &objs[14], &objs[15], &objs[16], &n_r, &devkit, &eps))
        return NULL;
    static const char kinds[N_ARRS] = "IJIJIJIJJJIIIFIIF";
    static const int writable[N_ARRS] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    Arr arrs[N_ARRS];
    PyObject *result = NULL;
    if (get_all(objs, kinds, writable, N_ARRS, arrs, "_cboot.curve_row") < 0) goto done;
    result = run(arrs, n_r, devkit, eps);
done:
    release_arrs(arrs, N_ARRS);
    return result;
}

PyDoc_STRVAR(thresholds_table_doc,
             "thresholds_table(npos, rec_thr, table, /)\n"
             "--\n\n"
             "Fill table (sum(npos + 2) int64) with, for each column n of npos in turn (n + 2 slots), the\n"
             "number of recall thresholds each TP count j reaches, #{r : thr_r <= j / n}. The compiled\n"
             "twin of deteval.stats.weighted._thresholds_table (see there; the same float operations).");

static PyObject *thresholds_table(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    if (!PyArg_ParseTuple(args, "OOO:thresholds_table", &objs[0], &objs[1], &objs[2])) return NULL;
    static const char kinds[3] = "IFI";
    static const int writable[3] = {0, 0, 1};
    Arr arrs[3];
    PyObject *result = NULL;
    if (get_all(objs, kinds, writable, 3, arrs, "_cboot.thresholds_table") < 0) goto done;
    {
        const int64_t *npos = arrs[0].view.buf;
        const double *thr = arrs[1].view.buf;
        int64_t *table = arrs[2].view.buf;
        const Py_ssize_t n_col = arrs[0].view.len / 8, n_r = arrs[1].view.len / 8, n_table = arrs[2].view.len / 8;
        Py_ssize_t size = 0;
        for (Py_ssize_t c = 0; c < n_col; c++) {
            if (npos[c] < 0 || npos[c] > ((int64_t)1 << 52)) {
                PyErr_SetString(PyExc_ValueError, "_cboot.thresholds_table: npos out of range");
                goto done;
            }
            size += (Py_ssize_t)npos[c] + 2;
        }
        if (size != n_table) {
            PyErr_SetString(PyExc_ValueError, "_cboot.thresholds_table: table size is not sum(npos + 2)");
            goto done;
        }
        memset(table, 0, (size_t)n_table * sizeof(int64_t));
        int64_t *col = table;
        for (Py_ssize_t c = 0; c < n_col; c++) {
            const int64_t n = npos[c];
            const double nf = (double)n;
            /* first count reaching thr_r, among the four from ceil(thr_r * n) - 2 (0 / 0 when n == 0
               is NaN: not below thr, so the count stays 0, then 1 by the clip) */
            for (Py_ssize_t r = 0; r < n_r; r++) {
                double x = ceil(thr[r] * nf) - 2.0;
                /* clamped to [0, n + 1] before the cast (NaN: 0); a count beyond n + 1 is clipped
                   to n + 1 below anyway, so only a threshold above 1 or infinite is affected */
                x = x > 0.0 ? x : 0.0;
                x = x < nf + 1.0 ? x : nf + 1.0;
                int64_t first = (int64_t)x, reach = first;
                for (int d = 0; d < 3; d++) reach += (double)(first + d) / nf < thr[r];
                if (reach < 1) reach = 1;
                if (reach > n + 1) reach = n + 1;
                col[reach] += 1;
            }
            for (int64_t j = 1; j < n + 2; j++) col[j] += col[j - 1];
            col += n + 2;
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    release_arrs(arrs, 3);
    return result;
}

PyDoc_STRVAR(weighted_counts_doc,
             "weighted_counts(w, n_img, img, count, bounds, out, /)\n"
             "--\n\n"
             "out[b * n_seg + s] = sum(count[j] * w[b * n_img + img[j]] for j in [bounds[s], bounds[s + 1]))\n"
             "for every resample b (exact int64 sums). The compiled twin of\n"
             "deteval.stats.weighted._weighted_counts.");

static PyObject *weighted_counts(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    Py_ssize_t n_img;
    if (!PyArg_ParseTuple(args, "OnOOOO:weighted_counts", &objs[0], &n_img, &objs[1], &objs[2], &objs[3], &objs[4]))
        return NULL;
    static const char kinds[5] = "IIIII";
    static const int writable[5] = {0, 0, 0, 0, 1};
    Arr arrs[5];
    PyObject *result = NULL;
    if (get_all(objs, kinds, writable, 5, arrs, "_cboot.weighted_counts") < 0) goto done;
    {
        const int64_t *w = arrs[0].view.buf, *img = arrs[1].view.buf, *count = arrs[2].view.buf;
        const int64_t *bounds = arrs[3].view.buf;
        int64_t *out = arrs[4].view.buf;
        const Py_ssize_t n_w = arrs[0].view.len / 8, n_pairs = arrs[1].view.len / 8;
        const Py_ssize_t n_seg = arrs[3].view.len / 8 - 1, n_out = arrs[4].view.len / 8;
        const Py_ssize_t B = n_img > 0 ? n_w / n_img : 0;
        int ok = n_img >= 0 && n_seg >= 0 && arrs[2].view.len / 8 == n_pairs && B * n_img == n_w &&
                 n_out == B * n_seg && (n_seg < 0 || n_img > 0 || n_w == 0);
        for (Py_ssize_t s = 0; ok && s < n_seg; s++)
            ok = bounds[s] >= 0 && bounds[s] <= bounds[s + 1] && bounds[s + 1] <= n_pairs;
        for (Py_ssize_t j = 0; ok && j < n_pairs; j++) ok = img[j] >= 0 && img[j] < n_img;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "_cboot.weighted_counts: out of range (inconsistent inputs)");
            goto done;
        }
        for (Py_ssize_t b = 0; b < B; b++) {
            const int64_t *wb = w + b * n_img;
            int64_t *ob = out + b * n_seg;
            for (Py_ssize_t s = 0; s < n_seg; s++) {
                uint64_t acc = 0; /* numpy's int64 arithmetic wraps: the same bits, no signed overflow */
                for (int64_t j = bounds[s]; j < bounds[s + 1]; j++) acc += (uint64_t)count[j] * (uint64_t)wb[img[j]];
                ob[s] = (int64_t)acc;
            }
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    release_arrs(arrs, 5);
    return result;
}

static PyMethodDef cboot_methods[] = {
    {"curve_row", curve_row, METH_VARARGS, curve_row_doc},
    {"thresholds_table", thresholds_table, METH_VARARGS, thresholds_table_doc},
    {"weighted_counts", weighted_counts, METH_VARARGS, weighted_counts_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_cboot, "deteval._cboot",
               "One bootstrap resample's precision curve (optional; deteval.stats.weighted has the numpy twin).",
               cboot_methods, CBOOT_ABI, NULL)
