/*
 * deteval._csort: stable sort of runs by descending score, for deteval.grouping.lexsort.
 *
 * The compiled twin of one step of deteval.grouping: rows already sorted (stably) by a group
 * key are re-ordered inside each run of equal key by descending score, equal scores keeping
 * their order. Together with a stable radix sort by the key this is np.lexsort((-score, key)):
 * -0.0 and 0.0 are equal (as numpy compares them), NaN sorts after every number (as -NaN does in
 * np.lexsort) and NaNs keep their order. The numpy path of grouping.lexsort stays the reference
 * and the tests compare the two permutations.
 *
 * order_by_group_then_score does the whole of grouping.by_group_then_descending: a stable
 * counting sort by group (radix passes of at most 16-bit digits when the group values spread far
 * beyond the rows, e.g. LVIS' image * 1203 + class keys), then each group by descending score on
 * threads, optionally writing each row's rank in its group (grouping.rank_by_group_then_descending).
 *
 * Built from this file alone with a C compiler and the Python headers: arrays come in through
 * the buffer protocol, already C-contiguous and of the right dtype (the wrapper in
 * deteval/grouping.py sees to that).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_buffer_checks.h"
#include "_parallel.h"

/* The ABI number (see _buffer_checks.h; deteval._speedups.ABI holds the expected one). */
#define CSORT_ABI 3 /* 2: order_by_group_then_score takes threads; 3: any spread of groups (radix passes) */

/* a before b: a's score is larger, or b's is NaN and a's is not. */
static inline int
goes_before(double a, double b)
{
    if (a != a) {
        return 0;
    }
    if (b != b) {
        return 1;
    }
    return a > b;
}

/* Stable sort of rows[0:n] by descending score[rows[i]]; tmp holds n items. Rows of TYPE. */
#define DEFINE_SORT_RUN(NAME, TYPE)                                                             \
static void NAME(TYPE *rows, Py_ssize_t n, const double *score, TYPE *tmp)                          \
{                                                                                                   \
    Py_ssize_t i, j;                                                                                \
    if (n < 2) {                                                                                    \
        return;                                                                                     \
    }                                                                                               \
    if (n <= 24) { /* insertion sort: stable, and the common case (a group of one image) */         \
        for (i = 1; i < n; i++) {                                                                   \
            const TYPE row = rows[i];                                                               \
            const double s = score[row];                                                            \
            j = i - 1;                                                                              \
            while (j >= 0 && goes_before(s, score[rows[j]])) {                                      \
                rows[j + 1] = rows[j];                                                              \
                j--;                                                                                \
            }                                                                                       \
            rows[j + 1] = row;                                                                      \
        }                                                                                           \
        return;                                                                                     \
    }                                                                                               \
    {                                                                                               \
        const Py_ssize_t half = n / 2;                                                              \
        Py_ssize_t a = 0, b = half, k = 0;                                                          \
        NAME(rows, half, score, tmp);                                                               \
        NAME(rows + half, n - half, score, tmp);                                                    \
        if (!goes_before(score[rows[half]], score[rows[half - 1]])) {                               \
            return; /* already in order */                                                          \
        }                                                                                           \
        while (a < half && b < n) {                                                                 \
            /* take from the right only when strictly before: stable */                             \
            if (goes_before(score[rows[b]], score[rows[a]])) {                                      \
                tmp[k++] = rows[b++];                                                               \
            } else {                                                                                \
                tmp[k++] = rows[a++];                                                               \
            }                                                                                       \
        }                                                                                           \
        while (a < half) {                                                                          \
            tmp[k++] = rows[a++];                                                                   \
        }                                                                                           \
        while (b < n) {                                                                             \
            tmp[k++] = rows[b++];                                                                   \
        }                                                                                           \
        memcpy(rows, tmp, (size_t)n * sizeof(TYPE));                                                \
    }                                                                                               \
}

DEFINE_SORT_RUN(sort_run, int64_t)
DEFINE_SORT_RUN(sort_run32, int32_t)

static PyObject *
sort_runs_by_score(PyObject *self, PyObject *args)
{
    Py_buffer order_view, key_view, score_view;
    PyObject *result = NULL;
    int64_t *tmp = NULL;
    if (!PyArg_ParseTuple(args, "w*y*y*", &order_view, &key_view, &score_view)) {
        return NULL;
    }
    {
        const Py_ssize_t n = order_view.len / (Py_ssize_t)sizeof(int64_t);
        const Py_ssize_t n_score = score_view.len / (Py_ssize_t)sizeof(double);
        int64_t *order = (int64_t *)order_view.buf;
        const int64_t *key = (const int64_t *)key_view.buf;
        const double *score = (const double *)score_view.buf;
        Py_ssize_t start = 0, i;
        const Py_buffer *views[3] = {&order_view, &key_view, &score_view};
        if (outputs_overlap(views, 1, 3, "_csort.sort_runs_by_score")) {
            goto done;
        }
        if (!is_aligned(&order_view, 8) || !is_aligned(&key_view, 8) || !is_aligned(&score_view, 8) ||
            order_view.len != n * (Py_ssize_t)sizeof(int64_t) ||
            key_view.len != n * (Py_ssize_t)sizeof(int64_t) ||
            score_view.len != n_score * (Py_ssize_t)sizeof(double)) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
        for (i = 0; i < n; i++) {
            if (order[i] < 0 || order[i] >= n_score) {
                result = Py_None; /* the wrapper runs the numpy path */
                Py_INCREF(result);
                goto done;
            }
        }
        {
            /* The merge buffer holds the longest run, not every row. */
            Py_ssize_t longest = 1;
            for (i = 1; i <= n; i++) {
                if (i == n || key[i] != key[start]) {
                    longest = i - start > longest ? i - start : longest;
                    start = i;
                }
            }
            start = 0;
            tmp = (int64_t *)malloc((size_t)longest * sizeof(int64_t));
        }
        if (tmp == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        for (i = 1; i <= n; i++) {
            if (i == n || key[i] != key[start]) {
                sort_run(order + start, i - start, score, tmp);
                start = i;
            }
        }
        Py_END_ALLOW_THREADS
        result = Py_True;
        Py_INCREF(result);
    }
done:
    free(tmp);
    PyBuffer_Release(&order_view);
    PyBuffer_Release(&key_view);
    PyBuffer_Release(&score_view);
    return result;
}

/* Row i of an order of int32 (narrow) or int64 rows. */
static inline Py_ssize_t
row_at(const void *rows, int narrow, Py_ssize_t i)
{
    return narrow ? (Py_ssize_t)((const int32_t *)rows)[i] : (Py_ssize_t)((const int64_t *)rows)[i];
}

static inline void
set_row(void *rows, int narrow, Py_ssize_t i, Py_ssize_t row)
{
    if (narrow) {
        ((int32_t *)rows)[i] = (int32_t)row;
    }
    else {
        ((int64_t *)rows)[i] = (int64_t)row;
    }
}

/* The groups' sort, split: groups [k_lo, k_hi) of the counted order, each sorted by descending
 * score (parallel_parts' part function; each part sorts only its own groups' rows, with its own
 * merge buffer). */
typedef struct {
    void *order;
    void *rank; /* or NULL: rank[row] = the row's place in its sorted group (as wide as order) */
    int narrow;
    const int64_t *end; /* end[k]: where group k ends in the order (group k starts at end[k - 1], or 0) */
    const double *score;
    Py_ssize_t longest;
    const Py_ssize_t *bounds; /* part p sorts groups [bounds[p], bounds[p + 1]) */
    int parts;
    int failed[DETEVAL_MAX_PARTS]; /* a part's merge buffer could not be allocated (that part's slot) */
} group_sort;

static void
sort_groups(void *ctx, Py_ssize_t k_lo, Py_ssize_t k_hi)
{
    group_sort *g = (group_sort *)ctx;
    void *tmp;
    Py_ssize_t k;
    int p;
    if (k_lo >= k_hi) {
        return;
    }
    tmp = malloc((size_t)g->longest * (size_t)(g->narrow ? 4 : 8));
    if (tmp == NULL) {
        for (p = 0; p < g->parts; p++) { /* this part's slot: the part of these bounds */
            if (g->bounds[p] == k_lo && g->bounds[p + 1] == k_hi) {
                g->failed[p] = 1;
            }
        }
        return;
    }
    for (k = k_lo; k < k_hi; k++) {
        const Py_ssize_t first = k == 0 ? 0 : (Py_ssize_t)g->end[k - 1];
        const Py_ssize_t count = (Py_ssize_t)g->end[k] - first;
        Py_ssize_t j;
        if (g->narrow) {
            sort_run32((int32_t *)g->order + first, count, g->score, tmp);
        }
        else {
            sort_run((int64_t *)g->order + first, count, g->score, tmp);
        }
        if (g->rank != NULL) { /* this part's rows only: each row is in one group */
            for (j = 0; j < count; j++) {
                set_row(g->rank, g->narrow, row_at(g->order, g->narrow, first + j), j);
            }
        }
    }
    free(tmp);
}

/* Cut groups [0, n_codes) into parts of about equal rows: part p ends after the first group whose
 * end reaches p/parts of the rows (binary search over the ends: no pass over the groups). */
static int
group_bounds(const int64_t *end, Py_ssize_t n_codes, int64_t n_rows, int parts, Py_ssize_t *bounds)
{
    int p;
    if (parts < 1) {
        parts = 1;
    }
    if (parts > DETEVAL_MAX_PARTS) {
        parts = DETEVAL_MAX_PARTS;
    }
    if (parts > n_codes) {
        parts = (int)n_codes;
    }
    bounds[0] = 0;
    for (p = 1; p < parts; p++) {
        const int64_t target = n_rows / parts * p + (n_rows % parts) * p / parts;
        Py_ssize_t lo = bounds[p - 1], hi = n_codes;
        while (lo < hi) { /* the first group whose end is at least target */
            const Py_ssize_t mid = lo + (hi - lo) / 2;
            if (end[mid] < target) {
                lo = mid + 1;
            }
            else {
                hi = mid;
            }
        }
        bounds[p] = lo < n_codes ? lo + 1 : n_codes;
        if (bounds[p] < bounds[p - 1]) {
            bounds[p] = bounds[p - 1];
        }
    }
    bounds[parts] = n_codes;
    return parts;
}

/* The group code of row i: group[i] - low, from int32 or int64 values (in unsigned arithmetic:
 * a value below low gives a huge code, refused by the caller's range check, never a signed wrap). */
static inline uint64_t
group_code(const void *group, Py_ssize_t itemsize, Py_ssize_t i, int64_t low)
{
    const int64_t g = itemsize == 4 ? (int64_t)((const int32_t *)group)[i] : ((const int64_t *)group)[i];
    return (uint64_t)g - (uint64_t)low;
}

/* Most group codes sorted by one counting pass (a table of 8-byte counts); wider ranges are
 * sorted by radix passes of at most RADIX_BITS bits each. */
#define RADIX_BITS 16

/* Rows [0, n) stably by group code, for codes too spread for one counting table: least
 * significant digit first, `passes` stable counting passes of `digit_bits` bits, between order
 * and spare (the last pass writes order). count holds 2**digit_bits + 1 entries. */
static void
radix_by_group(void *order, void *spare, int narrow, const void *group, Py_ssize_t itemsize, int64_t low,
               Py_ssize_t n, int passes, int digit_bits, int64_t *count)
{
    const Py_ssize_t size = (Py_ssize_t)1 << digit_bits;
    const uint64_t mask = (uint64_t)size - 1;
    int pass;
    for (pass = 0; pass < passes; pass++) {
        const int shift = pass * digit_bits;
        /* the last pass lands in order: passes alternate spare/order backwards from it */
        void *dst = (passes - 1 - pass) % 2 == 0 ? order : spare;
        const void *src = dst == order ? spare : order;
        Py_ssize_t i, k;
        memset(count, 0, (size_t)(size + 1) * sizeof(int64_t));
        for (i = 0; i < n; i++) {
            count[((group_code(group, itemsize, i, low) >> shift) & mask) + 1]++;
        }
        for (k = 0; k < size; k++) {
            count[k + 1] += count[k];
        }
        for (i = 0; i < n; i++) {
            const Py_ssize_t row = pass == 0 ? i : row_at(src, narrow, i);
            set_row(dst, narrow, count[(group_code(group, itemsize, row, low) >> shift) & mask]++, row);
        }
    }
}

static PyObject *
order_by_group_then_score(PyObject *self, PyObject *args)
{
    Py_buffer order_view, group_view, score_view, rank_view;
    long long low_ll;
    Py_ssize_t n_codes, itemsize;
    PyObject *result = NULL;
    int64_t *start = NULL, *count = NULL;
    void *spare = NULL;
    int threads = 1, passes = 0, digit_bits = 0;
    (void)self;
    memset(&rank_view, 0, sizeof(rank_view)); /* rank_view.obj stays NULL unless a rank is given */
    if (!PyArg_ParseTuple(args, "w*y*nLny*|iw*", &order_view, &group_view, &itemsize, &low_ll, &n_codes,
                          &score_view, &threads, &rank_view)) {
        return NULL;
    }
    {
        const int64_t low = (int64_t)low_ll;
        const Py_ssize_t n = score_view.len / (Py_ssize_t)sizeof(double);
        const double *score = (const double *)score_view.buf;
        /* The order is written as int32 (n < 2**31) or int64 rows. */
        const int narrow = n > 0 && order_view.len == n * 4 && n <= INT32_MAX;
        const Py_ssize_t width = narrow ? 4 : 8;
        Py_ssize_t i, k, longest = 1;
        int failed = 0;
        const int ranked = rank_view.obj != NULL;
        const Py_buffer *views[4] = {&order_view, &rank_view, &group_view, &score_view};
        const Py_buffer *unranked_views[3] = {&order_view, &group_view, &score_view};
        /* n_codes up to the counting sort's table (a few entries per row at most): one counting
         * pass; beyond, radix passes by digits of at most RADIX_BITS bits. */
        const int counted = n_codes <= 4 * n + ((Py_ssize_t)1 << RADIX_BITS) + 1;
        Py_ssize_t n_groups = n_codes; /* the groups' ends: every code's, or every run's of one code */
        int fits = (itemsize == 4 || itemsize == 8) && n_codes >= 1
                   && is_aligned(&order_view, width) && is_aligned(&group_view, itemsize) && is_aligned(&score_view, 8)
                   && order_view.len == n * width && group_view.len == n * itemsize
                   && score_view.len == n * (Py_ssize_t)sizeof(double)
                   && (!ranked || (rank_view.len == n * width && is_aligned(&rank_view, width)));
        if (ranked ? outputs_overlap(views, 2, 4, "_csort.order_by_group_then_score")
                   : outputs_overlap(unranked_views, 1, 3, "_csort.order_by_group_then_score")) {
            goto done;
        }
        for (i = 0; fits && i < n; i++) {
            const int64_t g = itemsize == 4 ? (int64_t)((const int32_t *)group_view.buf)[i]
                                            : ((const int64_t *)group_view.buf)[i];
            fits = g >= low && group_code(group_view.buf, itemsize, i, low) < (uint64_t)n_codes;
        }
        if (!fits) {
            result = Py_NewRef(Py_None); /* the wrapper runs the numpy path */
            goto done;
        }
        if (counted) {
            start = (int64_t *)calloc((size_t)n_codes + 1, sizeof(int64_t));
            if (start == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            /* A stable counting sort by group, then each group's rows by descending score. */
            for (i = 0; i < n; i++) {
                start[group_code(group_view.buf, itemsize, i, low) + 1]++;
            }
            for (k = 0; k < n_codes; k++) {
                longest = start[k + 1] > longest ? start[k + 1] : longest;
                start[k + 1] += start[k];
            }
        }
        else {
            /* bits of the largest code, in passes of equal digits of at most RADIX_BITS bits */
            int bits = 0;
            while (bits < 64 && ((uint64_t)(n_codes - 1) >> bits) != 0) {
                bits++;
            }
            passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
            digit_bits = (bits + passes - 1) / passes;
            /* the radix passes' second buffer, then the runs' ends (at most n of 8 bytes) */
            spare = malloc((size_t)n * sizeof(int64_t));
            count = (int64_t *)malloc((((size_t)1 << digit_bits) + 1) * sizeof(int64_t));
            if (spare == NULL || count == NULL) {
                PyErr_NoMemory();
                goto done;
            }
        }
        Py_BEGIN_ALLOW_THREADS
        if (counted) {
            for (i = 0; i < n; i++) {
                const Py_ssize_t at = start[group_code(group_view.buf, itemsize, i, low)]++;
                set_row(order_view.buf, narrow, at, i);
            }
            /* start[k] is now the end of group k (the start of group k + 1) */
        }
        else {
            radix_by_group(order_view.buf, spare, narrow, group_view.buf, itemsize, low, n, passes, digit_bits,
                           count);
            /* the runs of equal code in the sorted rows: start[k] the end of run k */
            n_groups = 1;
            for (i = 1; i < n; i++) {
                n_groups += group_code(group_view.buf, itemsize, row_at(order_view.buf, narrow, i), low)
                            != group_code(group_view.buf, itemsize, row_at(order_view.buf, narrow, i - 1), low);
            }
            {
                int64_t *end = (int64_t *)spare; /* the passes are done with it */
                k = 0;
                for (i = 1; i <= n; i++) {
                    if (i == n
                        || group_code(group_view.buf, itemsize, row_at(order_view.buf, narrow, i), low)
                               != group_code(group_view.buf, itemsize, row_at(order_view.buf, narrow, i - 1), low)) {
                        const Py_ssize_t first = k == 0 ? 0 : (Py_ssize_t)end[k - 1];
                        longest = i - first > longest ? i - first : longest;
                        end[k++] = i;
                    }
                }
            }
        }
        /* The groups are sorted in parts of about equal rows, each part's groups (their rows) its own. */
        if (!failed) {
            group_sort job;
            Py_ssize_t bounds[DETEVAL_MAX_PARTS + 1];
            int p;
            memset(&job, 0, sizeof(job));
            job.order = order_view.buf;
            job.rank = ranked ? rank_view.buf : NULL;
            job.narrow = narrow;
            job.end = counted ? start : (const int64_t *)spare;
            job.score = score;
            job.longest = longest;
            job.bounds = bounds;
            job.parts = group_bounds(job.end, n_groups, (int64_t)n, threads, bounds);
            parallel_parts(bounds, job.parts, sort_groups, &job);
            for (p = 0; p < job.parts; p++) {
                failed |= job.failed[p];
            }
        }
        Py_END_ALLOW_THREADS
        if (failed) {
            PyErr_NoMemory();
            goto done;
        }
        result = Py_NewRef(Py_True);
    }
done:
    free(start);
    free(spare);
    free(count);
    PyBuffer_Release(&order_view);
    PyBuffer_Release(&group_view);
    PyBuffer_Release(&score_view);
    if (rank_view.obj != NULL) {
        PyBuffer_Release(&rank_view);
    }
    return result;
}

static PyMethodDef csort_methods[] = {
    {"sort_runs_by_score", sort_runs_by_score, METH_VARARGS,
     "sort_runs_by_score(order, key, score): in each run of equal key[i] (key is aligned with "
     "order), sort order stably by descending score[order[i]], NaN last; True, or None when the "
     "buffers do not fit (order is then unchanged)."},
    {"order_by_group_then_score", order_by_group_then_score, METH_VARARGS,
     "order_by_group_then_score(order, group, itemsize, low, n_codes, score, threads=1, rank=None): fill order (int32 "
     "or int64, n) with np.lexsort((-score, group)): rows by group (int32 or int64 values in [low, low + "
     "n_codes)), by one counting pass, or by radix passes when n_codes is far above n, then by "
     "descending score, NaN last, ties in row order; the groups sorted on threads "
     "threads (not capped here; the order does not depend on it); rank (as order's dtype and length), when "
     "given: each row's place in its group of the order. True, or None when the "
     "buffers do not fit (order is then unchanged)."},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_csort, "deteval._csort",
               "Stable sort of runs by descending score (the compiled twin of a step of deteval.grouping).",
               csort_methods, CSORT_ABI, NULL)
