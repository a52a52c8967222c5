/*
 * deteval._cmatch: a compiled kernel for pycocotools' greedy matching.
 *
 * The compiled twin of deteval.matching._match_coco_numpy (the pure numpy code stays the
 * reference: the tests compare the two bit for bit). Built from this file alone with a C
 * compiler and the Python headers: arrays come in through the buffer protocol, already
 * C-contiguous and of the right dtype (the Python wrapper in deteval/matching.py sees to that),
 * so no numpy headers are needed at build time.
 *
 * The rule, per group of (image, class), per detection in rank order (= row order), per lane
 * (area range a, IoU threshold t; lane = a * n_thr + t): among the detection's candidate pairs
 * whose IoU passes the lane's threshold and whose GT is available (not taken in this lane, or
 * reusable), pick the lexicographic maximum of (GT not ignored, IoU, GT row). A non-reusable
 * picked GT is taken for the later detections of the lane. This is what one "round" of the numpy
 * code computes for every group at once.
 *
 * The kernel returns None (and the wrapper runs the numpy code) whenever its assumptions do not
 * hold, so the two can never disagree: lengths that do not fit, rows out of range, detection keys
 * not non-decreasing, or a GT paired with detections of two different groups (then the numpy
 * code's round order and the row order could differ).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_buffer_checks.h"
#include "_parallel.h"

/* The ABI number (see _buffer_checks.h; deteval._speedups.ABI holds the expected one). */
#define CMATCH_ABI 5 /* 2: match_coco takes first_ties (gt_ties: first); 3: and threads; 4: box_pairs;
                         5: box_pairs takes max_pairs */

/* A match as found: gt * n_lane + lane (is_taken has n_gt * n_lane bytes, so it fits). One word,
 * not a (gt, lane) struct of two: the list holds every match, ~2.6 per detection on COCO data. */
typedef int64_t pending_match;

/* One part's matches as found, detection-major (its detections' in order), and their count per lane. */
typedef struct {
    pending_match *pending;
    Py_ssize_t n_pending, cap;
    Py_ssize_t *lane_count;
    int status; /* 0, or -1 when out of memory */
} match_part;

/* The matches as found: part k holds detections [bounds[k], bounds[k + 1]) (whole groups), and
 * detection d's matches are its part's pending[det_end[d - 1]:det_end[d]] (0 at a part's first). */
typedef struct {
    match_part part[DETEVAL_MAX_PARTS];
    Py_ssize_t bounds[DETEVAL_MAX_PARTS + 1];
    int n_parts;
    Py_ssize_t *det_end;
} found_matches;

static void
free_found(found_matches *found)
{
    int k;
    for (k = 0; k < found->n_parts; k++) {
        free(found->part[k].pending);
        free(found->part[k].lane_count);
        found->part[k].pending = NULL;
        found->part[k].lane_count = NULL;
    }
    found->n_parts = 0;
    free(found->det_end);
    found->det_end = NULL;
}

/* The part of found whose detections are [lo, hi) (a part that runs is not empty). */
static match_part *
part_of(found_matches *found, Py_ssize_t lo, Py_ssize_t hi)
{
    int k;
    for (k = 0; k < found->n_parts; k++) {
        if (found->bounds[k] == lo && found->bounds[k + 1] == hi) {
            return &found->part[k];
        }
    }
    return NULL; /* not reached */
}

/* How the matches are written: three int64 rows (lanes, detections, ground truths), or narrow:
 * detections and ground truths as int32 rows, then lanes as int8 (n_lane <= 128) or int16. */
typedef struct {
    int narrow;
    char *dest;
    Py_ssize_t n;
} match_rows;

static Py_ssize_t
lane_size(Py_ssize_t n_lane)
{
    return n_lane <= 128 ? 1 : 2;
}

/* Bytes of n matches in the layout; narrow needs n_lane <= 32768 (checked by the caller). */
static Py_ssize_t
rows_bytes(int narrow, Py_ssize_t n, Py_ssize_t n_lane)
{
    return narrow ? n * (8 + lane_size(n_lane)) : 3 * n * 8;
}

static void
put_match(const match_rows *rows, Py_ssize_t n_lane, Py_ssize_t at, int64_t lane, int64_t d, int64_t g)
{
    if (rows->narrow) {
        int32_t *det = (int32_t *)rows->dest, *gt = det + rows->n;
        det[at] = (int32_t)d;
        gt[at] = (int32_t)g;
        if (lane_size(n_lane) == 1) {
            ((int8_t *)(gt + rows->n))[at] = (int8_t)lane;
        }
        else {
            ((int16_t *)(gt + rows->n))[at] = (int16_t)lane;
        }
    }
    else {
        int64_t *dest = (int64_t *)rows->dest;
        dest[at] = lane;
        dest[rows->n + at] = d;
        dest[2 * rows->n + at] = g;
    }
}

/* The scatter of the matches lane-major (stable: detections ascending) in the rows' layout; each
 * part writes its own matches, from its own offset per lane (next: n_parts x n_lane). */
typedef struct {
    found_matches *found;
    Py_ssize_t n_lane;
    const match_rows *rows;
    Py_ssize_t *next;
} scatter_job;

static void
scatter_part(void *ctx, Py_ssize_t lo, Py_ssize_t hi)
{
    scatter_job *job = (scatter_job *)ctx;
    found_matches *found = job->found;
    const match_part *part = part_of(found, lo, hi);
    Py_ssize_t *next = job->next + (part - found->part) * job->n_lane;
    Py_ssize_t d, i, begin = 0;
    for (d = lo; d < hi; d++) {
        const Py_ssize_t end = found->det_end[d];
        for (i = begin; i < end; i++) {
            const pending_match m = part->pending[i];
            const int64_t lane = m % job->n_lane;
            const Py_ssize_t at = next[lane]++;
            put_match(job->rows, job->n_lane, at, lane, d, m / job->n_lane);
        }
        begin = end;
    }
}

/* Write the matches lane-major; returns -1 when out of memory, else 0. */
static int
scatter_lane_major(found_matches *found, Py_ssize_t n_lane, const match_rows *rows)
{
    Py_ssize_t *next = malloc(((size_t)found->n_parts * (size_t)n_lane + 1) * sizeof(Py_ssize_t));
    Py_ssize_t offset = 0, lane;
    int k;
    scatter_job job = {found, n_lane, rows, next};
    if (next == NULL) {
        return -1;
    }
    for (lane = 0; lane < n_lane; lane++) {
        for (k = 0; k < found->n_parts; k++) {
            next[k * n_lane + lane] = offset;
            if (found->part[k].lane_count != NULL) { /* NULL: an empty part, not run */
                offset += found->part[k].lane_count[lane];
            }
        }
    }
    parallel_parts(found->bounds, found->n_parts, scatter_part, &job);
    free(next);
    return 0;
}

/* Lane flags are packed detection-major, eight lanes a byte: lane L of detection d is bit L % 8
 * of byte d * lane_bytes + L / 8 (numpy's packbits with bitorder="little" along the lanes). */
static Py_ssize_t
lane_bytes(Py_ssize_t n_lane)
{
    return (n_lane + 7) / 8;
}

static void
set_lane(unsigned char *flags, Py_ssize_t n_byte, Py_ssize_t d, Py_ssize_t lane, int value)
{
    unsigned char *byte = flags + d * n_byte + (lane >> 3);
    const unsigned char bit = (unsigned char)(1u << (lane & 7));
    if (value) {
        *byte |= bit;
    }
    else {
        *byte &= (unsigned char)~bit;
    }
}

/* The ignored flags before matching: each area's out-of-range mask over its n_thr lanes. */
static void
set_out_of_range(const char *det_is_out_of_range, Py_ssize_t n_area, Py_ssize_t n_thr,
                 Py_ssize_t n_det, unsigned char *ignored)
{
    const Py_ssize_t n_byte = lane_bytes(n_area * n_thr);
    Py_ssize_t a, d, t;
    for (a = 0; a < n_area; a++) {
        const char *out = det_is_out_of_range + a * n_det;
        for (d = 0; d < n_det; d++) {
            if (out[d]) {
                for (t = 0; t < n_thr; t++) {
                    set_lane(ignored, n_byte, d, a * n_thr + t, 1);
                }
            }
        }
    }
}

/* What every part of the matching reads (and the flags and taken marks it writes, each part
 * only its own detections' and its own groups' ground truths'). */
typedef struct {
    const int64_t *pair_gt;
    const double *pair_iou;
    Py_ssize_t n_det, n_thr, n_area, n_gt;
    const double *thresholds;
    double lowest;
    const char *gt_is_ignored, *gt_is_reusable, *gt_is_unmatchable, *det_is_out_of_range;
    int strict, first_ties;
    unsigned char *det_is_tp, *det_is_ignored;
    const int64_t *det_start;      /* detection d's pairs: [det_start[d], det_start[d + 1]) */
    const Py_ssize_t *pair_order;  /* NULL: the pairs are detection-major already */
    Py_ssize_t max_kept;
    char *is_taken;                /* (n_gt, n_lane) */
    found_matches *found;
} match_job;

/* Match detections [lo, hi) (whole groups) into their part's matches (parallel_parts' part). */
static void
match_part_fn(void *ctx, Py_ssize_t lo, Py_ssize_t hi)
{
    const match_job *job = (const match_job *)ctx;
    const Py_ssize_t n_thr = job->n_thr, n_area = job->n_area, n_gt = job->n_gt, n_det = job->n_det;
    const Py_ssize_t n_lane = n_area * n_thr, n_byte = lane_bytes(n_lane);
    const double *pair_iou = job->pair_iou, *thresholds = job->thresholds;
    const int64_t *pair_gt = job->pair_gt;
    const double lowest = job->lowest;
    const int strict = job->strict, first_ties = job->first_ties;
    match_part *part = part_of(job->found, lo, hi);
    Py_ssize_t *kept = malloc(((size_t)job->max_kept + 1) * sizeof(Py_ssize_t));
    Py_ssize_t d, i;
    part->lane_count = calloc((size_t)n_lane + 1, sizeof(Py_ssize_t));
    if (kept == NULL || part->lane_count == NULL) {
        part->status = -1;
        free(kept);
        return;
    }
    for (d = lo; d < hi; d++) {
        Py_ssize_t n_kept = 0, a, t;
        /* The detection's pairs that can pass the lowest threshold (the numpy code's `keep`). */
        for (i = (Py_ssize_t)job->det_start[d]; i < (Py_ssize_t)job->det_start[d + 1]; i++) {
            const Py_ssize_t p = job->pair_order != NULL ? job->pair_order[i] : i;
            double iou = pair_iou[p];
            if (strict ? iou > lowest : iou >= lowest) {
                kept[n_kept++] = p;
            }
        }
        for (a = 0; n_kept > 0 && a < n_area; a++) {
            const char *ignored = job->gt_is_ignored + a * n_gt;
            for (t = 0; t < n_thr; t++) {
                const Py_ssize_t lane = a * n_thr + t;
                const double thr = thresholds[t];
                int best_priority = 0;
                double best_iou = 0.0;
                int64_t best_gt = -1;
                for (i = 0; i < n_kept; i++) {
                    const Py_ssize_t p = kept[i];
                    const double iou = pair_iou[p];
                    const int64_t g = pair_gt[p];
                    int priority;
                    if (!(strict ? iou > thr : iou >= thr)) {
                        continue;
                    }
                    if (job->is_taken[g * n_lane + lane] && !job->gt_is_reusable[g]) {
                        continue;
                    }
                    priority = ignored[g] ? 1 : 2;
                    /* Lexicographic maximum of (priority, IoU, GT row); the later pair on a full
                     * tie, as the numpy code's stable sort + maximum of the position. gt_ties
                     * "first": of (priority, IoU, -GT row), the first GT of equal IoU. */
                    if (priority > best_priority
                        || (priority == best_priority
                            && (iou > best_iou
                                || (iou == best_iou && (first_ties ? g <= best_gt : g >= best_gt))))) {
                        best_priority = priority;
                        best_iou = iou;
                        best_gt = g;
                    }
                }
                if (best_priority == 0) {
                    continue; /* unmatched: FP, or ignored if out of range (already filled in) */
                }
                if (!job->gt_is_reusable[best_gt]) {
                    job->is_taken[best_gt * n_lane + lane] = 1;
                }
                {
                    const int hit_ignored = ignored[best_gt] != 0;
                    const int counts_as_match = !job->gt_is_unmatchable[best_gt];
                    const int is_ignored =
                        hit_ignored || (!counts_as_match && job->det_is_out_of_range[a * n_det + d]);
                    set_lane(job->det_is_ignored, n_byte, d, lane, is_ignored);
                    set_lane(job->det_is_tp, n_byte, d, lane, counts_as_match && !is_ignored);
                }
                if (part->n_pending == part->cap) {
                    Py_ssize_t new_cap = part->cap ? 2 * part->cap : 1024;
                    pending_match *grown = realloc(part->pending, (size_t)new_cap * sizeof(pending_match));
                    if (grown == NULL) {
                        part->status = -1;
                        free(kept);
                        return;
                    }
                    part->pending = grown;
                    part->cap = new_cap;
                }
                part->pending[part->n_pending++] = best_gt * n_lane + lane;
                part->lane_count[lane]++;
            }
        }
        job->found->det_end[d] = part->n_pending;
    }
    free(kept);
}

/*
 * The matching itself, without the GIL. Returns 0 on success, 1 when the inputs break an
 * assumption (fall back to numpy), -1 when out of memory. On success *found holds the matches
 * (the caller frees it with free_found).
 *
 * The checks and the grouping of the pairs by detection run on the calling thread; the matching
 * then runs in `threads` parts of whole groups (image x class): a ground truth is paired with
 * detections of one group only (checked), so its taken marks, like each detection's flags and
 * matches, belong to one part, and the matches are those of one pass whatever the parts.
 */
static int
run_match(
    Py_ssize_t n_pair, const int64_t *pair_det, const int64_t *pair_gt, const double *pair_iou,
    Py_ssize_t n_det, const int64_t *det_key, Py_ssize_t n_thr, const double *thresholds,
    Py_ssize_t n_area, Py_ssize_t n_gt, const char *gt_is_ignored, const char *gt_is_reusable,
    const char *gt_is_unmatchable, const char *det_is_out_of_range, int strict, int first_ties,
    unsigned char *det_is_tp, unsigned char *det_is_ignored, int threads, found_matches *found)
{
    const Py_ssize_t n_lane = n_area * n_thr;
    int64_t *det_start = NULL;
    Py_ssize_t *pair_order = NULL;
    int64_t *gt_group = NULL;
    char *is_taken = NULL;
    Py_ssize_t max_kept = 0;
    int status = -1, is_det_major = 1, parts;
    double lowest;
    Py_ssize_t i, d, k;
    match_job job;

    memset(found, 0, sizeof(*found));
    for (d = 1; d < n_det; d++) {
        if (det_key[d] < det_key[d - 1]) {
            return 1;
        }
    }
    /* Group the pairs by detection (counting sort, stable) and check the rows. */
    det_start = calloc((size_t)n_det + 1, sizeof(int64_t));
    gt_group = malloc(((size_t)n_gt + 1) * sizeof(int64_t));
    found->det_end = malloc(((size_t)n_det + 1) * sizeof(Py_ssize_t));
    char *gt_seen = calloc((size_t)n_gt + 1, 1);
    if (det_start == NULL || gt_group == NULL || gt_seen == NULL || found->det_end == NULL) {
        free(gt_seen);
        goto done;
    }
    for (i = 0; i < n_pair; i++) {
        int64_t dd = pair_det[i], gg = pair_gt[i];
        if (dd < 0 || dd >= n_det || gg < 0 || gg >= n_gt) {
            free(gt_seen);
            status = 1;
            goto done;
        }
        if (i > 0 && dd < pair_det[i - 1]) {
            is_det_major = 0;
        }
        if (!gt_seen[gg]) {
            gt_seen[gg] = 1;
            gt_group[gg] = det_key[dd];
        }
        else if (gt_group[gg] != det_key[dd]) {
            free(gt_seen);
            status = 1;
            goto done;
        }
        det_start[dd + 1]++;
    }
    free(gt_seen);
    for (d = 0; d < n_det; d++) {
        if (det_start[d + 1] > max_kept) {
            max_kept = (Py_ssize_t)det_start[d + 1];
        }
        det_start[d + 1] += det_start[d];
    }
    /* Pairs already detection-major (candidate_pairs' order) are their own order: no index. */
    if (!is_det_major) {
        pair_order = malloc(((size_t)n_pair + 1) * sizeof(Py_ssize_t));
        if (pair_order == NULL) {
            goto done;
        }
    }
    is_taken = calloc((size_t)n_gt * (size_t)n_lane + 1, 1);
    if (is_taken == NULL) {
        goto done;
    }
    if (!is_det_major) {
        int64_t *fill = malloc(((size_t)n_det + 1) * sizeof(int64_t));
        if (fill == NULL) {
            goto done;
        }
        memcpy(fill, det_start, (size_t)n_det * sizeof(int64_t));
        for (i = 0; i < n_pair; i++) {
            pair_order[fill[pair_det[i]]++] = i;
        }
        free(fill);
    }
    lowest = thresholds[0];
    for (k = 1; k < n_thr; k++) {
        /* np.min: a NaN threshold makes the minimum NaN, and then no pair is kept. */
        if (thresholds[k] < lowest || thresholds[k] != thresholds[k]) {
            lowest = thresholds[k];
        }
        if (lowest != lowest) {
            break;
        }
    }
    /* Parts of about equal pairs, each moved forward to the start of a group. */
    parts = weighted_bounds(det_start, n_det, threads, found->bounds);
    for (k = 1; k < parts; k++) {
        Py_ssize_t b = found->bounds[k] > found->bounds[k - 1] ? found->bounds[k] : found->bounds[k - 1];
        while (b > 0 && b < n_det && det_key[b] == det_key[b - 1]) {
            b++;
        }
        found->bounds[k] = b;
    }
    found->n_parts = parts;
    job.pair_gt = pair_gt;
    job.pair_iou = pair_iou;
    job.n_det = n_det;
    job.n_thr = n_thr;
    job.n_area = n_area;
    job.n_gt = n_gt;
    job.thresholds = thresholds;
    job.lowest = lowest;
    job.gt_is_ignored = gt_is_ignored;
    job.gt_is_reusable = gt_is_reusable;
    job.gt_is_unmatchable = gt_is_unmatchable;
    job.det_is_out_of_range = det_is_out_of_range;
    job.strict = strict;
    job.first_ties = first_ties;
    job.det_is_tp = det_is_tp;
    job.det_is_ignored = det_is_ignored;
    job.det_start = det_start;
    job.pair_order = pair_order;
    job.max_kept = max_kept;
    job.is_taken = is_taken;
    job.found = found;
    parallel_parts(found->bounds, parts, match_part_fn, &job);
    status = 0;
    for (k = 0; k < parts; k++) {
        if (found->part[k].status < 0) {
            status = -1;
        }
    }
done:
    free(det_start);
    free(gt_group);
    free(pair_order);
    free(is_taken);
    return status;
}

PyDoc_STRVAR(match_coco_doc,
"match_coco(pair_det, pair_gt, pair_iou, det_key, thresholds, gt_is_ignored, gt_is_reusable,\n"
"           gt_is_unmatchable, det_is_out_of_range, n_area, n_gt, strict, det_is_tp,\n"
"           det_is_ignored, narrow, first_ties, threads)\n"
"--\n\n"
"Greedy COCO matching of all groups and lanes (see deteval.matching.match_coco).\n\n"
"pair_det, pair_gt, det_key: int64; pair_iou, thresholds: float64 (thresholds already capped\n"
"at 1 - 1e-10 unless strict); the masks: bool. det_is_tp and det_is_ignored (zeros) are\n"
"uint8 (n_det, ceil(n_lane / 8)) buffers of packed lane flags (bit L % 8 of byte L / 8) filled\n"
"in place (the ignored ones start as each lane's out-of-range mask). Returns the matches as\n"
"one bytearray: (match_lane, match_det, match_gt) as 3 * n_match int64, or with narrow\n"
"(match_det, match_gt) as int32 then match_lane as int8 (n_lane <= 128) or int16; None when the\n"
"inputs break the kernel's assumptions (then use the numpy code). first_ties: gt_ties \"first\"\n"
"(of equal IoU the lowest GT row wins), else \"last\". threads: the groups matched in that many\n"
"parts on their own threads (not capped here); the matches do not depend on it.");

static PyObject *
cmatch_match_coco(PyObject *self, PyObject *args)
{
    Py_buffer pair_det, pair_gt, pair_iou, det_key, thresholds, gt_is_ignored, gt_is_reusable,
        gt_is_unmatchable, det_is_out_of_range, det_is_tp, det_is_ignored;
    Py_ssize_t n_area, n_gt, n_pair, n_det, n_thr, n_lane, n_match = 0;
    int strict, narrow, first_ties = 0, threads = 1, status, k;
    found_matches found;
    PyObject *out = NULL;

    (void)self;
    memset(&found, 0, sizeof(found));
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*nnpw*w*p|pi:match_coco", &pair_det, &pair_gt,
                          &pair_iou, &det_key, &thresholds, &gt_is_ignored, &gt_is_reusable,
                          &gt_is_unmatchable, &det_is_out_of_range, &n_area, &n_gt, &strict,
                          &det_is_tp, &det_is_ignored, &narrow, &first_ties, &threads)) {
        return NULL;
    }
    {
        const Py_buffer *views[11] = {&det_is_tp, &det_is_ignored, &pair_det, &pair_gt, &pair_iou, &det_key,
                                      &thresholds, &gt_is_ignored, &gt_is_reusable, &gt_is_unmatchable,
                                      &det_is_out_of_range};
        if (outputs_overlap(views, 2, 11, "_cmatch.match_coco")) {
            status = -2;
            goto release;
        }
    }
    n_pair = pair_det.len / 8;
    n_det = det_key.len / 8;
    n_thr = thresholds.len / 8;
    /* n_area and n_gt bounded by the buffers before any product (a hostile size must not wrap) */
    if (n_gt < 1 || n_gt > gt_is_reusable.len || n_area < 1 || n_area > gt_is_ignored.len / n_gt) {
        out = Py_NewRef(Py_None);
        goto release;
    }
    n_lane = n_area * n_thr;
    if (!is_aligned(&pair_det, 8) || !is_aligned(&pair_gt, 8) || !is_aligned(&pair_iou, 8)
        || !is_aligned(&det_key, 8) || !is_aligned(&thresholds, 8)
        || n_area < 1 || n_thr < 1 || n_gt < 1 || n_pair < 1 || n_lane > INT32_MAX
        || (narrow && (n_lane > 32768 || n_det > INT32_MAX || n_gt > INT32_MAX))
        || n_gt > PY_SSIZE_T_MAX / n_lane
        || !has_items(&pair_det, n_pair, 8) || !has_items(&pair_gt, n_pair, 8)
        || !has_items(&pair_iou, n_pair, 8) || !has_items(&det_key, n_det, 8)
        || !has_items(&thresholds, n_thr, 8) || !has_items(&gt_is_ignored, n_area * n_gt, 1)
        || !has_items(&gt_is_reusable, n_gt, 1) || !has_items(&gt_is_unmatchable, n_gt, 1)
        || !has_items(&det_is_out_of_range, n_area * n_det, 1)
        || !has_items(&det_is_tp, lane_bytes(n_lane) * n_det, 1)
        || !has_items(&det_is_ignored, lane_bytes(n_lane) * n_det, 1)) {
        status = 1;
    }
    else {
        Py_BEGIN_ALLOW_THREADS
        set_out_of_range(det_is_out_of_range.buf, n_area, n_thr, n_det, det_is_ignored.buf);
        status = run_match(n_pair, pair_det.buf, pair_gt.buf, pair_iou.buf, n_det, det_key.buf,
                           n_thr, thresholds.buf, n_area, n_gt, gt_is_ignored.buf,
                           gt_is_reusable.buf, gt_is_unmatchable.buf, det_is_out_of_range.buf,
                           strict, first_ties, det_is_tp.buf, det_is_ignored.buf, threads, &found);
        Py_END_ALLOW_THREADS
    }
    if (status == 0) {
        for (k = 0; k < found.n_parts; k++) {
            n_match += found.part[k].n_pending;
        }
        out = PyByteArray_FromStringAndSize(NULL, rows_bytes(narrow, n_match, n_lane));
        if (out != NULL) {
            match_rows rows = {narrow, PyByteArray_AS_STRING(out), n_match};
            int scattered;
            Py_BEGIN_ALLOW_THREADS
            scattered = scatter_lane_major(&found, n_lane, &rows);
            Py_END_ALLOW_THREADS
            if (scattered < 0) {
                Py_CLEAR(out);
                PyErr_NoMemory();
            }
        }
    }
    else if (status == 1) {
        out = Py_NewRef(Py_None);
    }
    else {
        PyErr_NoMemory();
    }
    free_found(&found);
release:
    PyBuffer_Release(&pair_det);
    PyBuffer_Release(&pair_gt);
    PyBuffer_Release(&pair_iou);
    PyBuffer_Release(&det_key);
    PyBuffer_Release(&thresholds);
    PyBuffer_Release(&gt_is_ignored);
    PyBuffer_Release(&gt_is_reusable);
    PyBuffer_Release(&gt_is_unmatchable);
    PyBuffer_Release(&det_is_out_of_range);
    PyBuffer_Release(&det_is_tp);
    PyBuffer_Release(&det_is_ignored);
    return out;
}

/*
 * The PASCAL VOC devkit's matching (deteval.matching._match_voc_numpy): each detection looks only
 * at the GT it overlaps most (IoU > 0; the lowest GT row on ties); per lane, if that IoU passes
 * the threshold, an ignored GT makes the detection ignored, and otherwise the first detection
 * (in row order) to claim the GT is a TP and the later ones FPs. No group assumption: claims are
 * per (lane, GT) in row order, as the numpy code's np.unique over np.nonzero.
 */
static int
voc_passes(double iou, double thr, int strict)
{
    return strict ? iou > thr : iou >= thr;
}

/* Best GT of every detection with an overlap; returns the number of such detections (their rows
 * ascending in *with_best), or -1 when out of memory, -2 when a row is out of range. */
static Py_ssize_t
voc_best(Py_ssize_t n_pair, const int64_t *pair_det, const int64_t *pair_gt, const double *pair_iou,
         Py_ssize_t n_det, Py_ssize_t n_gt, int64_t *best_gt, double *best_iou,
         Py_ssize_t *with_best)
{
    Py_ssize_t i, d, n = 0;
    for (d = 0; d < n_det; d++) {
        best_gt[d] = -1;
    }
    for (i = 0; i < n_pair; i++) {
        const int64_t dd = pair_det[i], g = pair_gt[i];
        const double iou = pair_iou[i];
        if (dd < 0 || dd >= n_det || g < 0 || g >= n_gt) {
            return -2;
        }
        if (!(iou > 0)) {
            continue;
        }
        if (best_gt[dd] < 0 || iou > best_iou[dd] || (iou == best_iou[dd] && g < best_gt[dd])) {
            best_gt[dd] = g;
            best_iou[dd] = iou;
        }
    }
    for (d = 0; d < n_det; d++) {
        if (best_gt[d] >= 0) {
            with_best[n++] = d;
        }
    }
    return n;
}

PyDoc_STRVAR(match_voc_doc,
"match_voc(pair_det, pair_gt, pair_iou, thresholds, gt_is_ignored, det_is_out_of_range,\n"
"          n_area, n_det, n_gt, strict, det_is_tp, det_is_ignored, narrow)\n"
"--\n\n"
"The VOC devkit's matching of all groups and lanes (see deteval.matching.match_voc).\n\n"
"pair_det, pair_gt: int64; pair_iou, thresholds: float64 (finite thresholds); the masks: bool.\n"
"det_is_tp and det_is_ignored (zeros) are uint8 (n_det, ceil(n_lane / 8)) buffers of packed\n"
"lane flags filled in place (the ignored ones start as each lane's out-of-range mask). Returns\n"
"the matches as one bytearray in match_coco's layout (narrow or not), or None when the inputs\n"
"break the kernel's assumptions.");

static PyObject *
cmatch_match_voc(PyObject *self, PyObject *args)
{
    Py_buffer pair_det, pair_gt, pair_iou, thresholds, gt_is_ignored, det_is_out_of_range, det_is_tp,
        det_is_ignored;
    Py_ssize_t n_area, n_det, n_gt, n_pair, n_thr, n_lane, n_best = 0, n_match = 0;
    int strict, narrow, fits;
    int64_t *best_gt = NULL;
    double *best_iou = NULL;
    Py_ssize_t *with_best = NULL;
    int64_t *claimed = NULL;
    PyObject *out = NULL;

    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*nnnpw*w*p:match_voc", &pair_det, &pair_gt, &pair_iou,
                          &thresholds, &gt_is_ignored, &det_is_out_of_range, &n_area, &n_det,
                          &n_gt, &strict, &det_is_tp, &det_is_ignored, &narrow)) {
        return NULL;
    }
    {
        const Py_buffer *views[8] = {&det_is_tp, &det_is_ignored, &pair_det, &pair_gt, &pair_iou, &thresholds,
                                     &gt_is_ignored, &det_is_out_of_range};
        if (outputs_overlap(views, 2, 8, "_cmatch.match_voc")) {
            goto done;
        }
    }
    n_pair = pair_det.len / 8;
    n_thr = thresholds.len / 8;
    /* n_area, n_gt and n_det bounded by the buffers before any product (no wrapping) */
    if (n_gt < 1 || n_det < 1 || n_area < 1 || n_area > gt_is_ignored.len / n_gt ||
        n_area > det_is_out_of_range.len / n_det) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    n_lane = n_area * n_thr;
    fits = is_aligned(&pair_det, 8) && is_aligned(&pair_gt, 8) && is_aligned(&pair_iou, 8)
           && is_aligned(&thresholds, 8)
           && n_area >= 1 && n_thr >= 1 && n_gt >= 1 && n_pair >= 1 && n_det >= 1
           && (!narrow || (n_lane <= 32768 && n_det <= INT32_MAX && n_gt <= INT32_MAX))
           && has_items(&pair_det, n_pair, 8) && has_items(&pair_gt, n_pair, 8)
           && has_items(&pair_iou, n_pair, 8) && has_items(&thresholds, n_thr, 8)
           && has_items(&gt_is_ignored, n_area * n_gt, 1)
           && has_items(&det_is_out_of_range, n_area * n_det, 1)
           && has_items(&det_is_tp, lane_bytes(n_lane) * n_det, 1)
           && has_items(&det_is_ignored, lane_bytes(n_lane) * n_det, 1);
    if (fits) {
        best_gt = malloc((size_t)n_det * sizeof(int64_t));
        best_iou = malloc((size_t)n_det * sizeof(double));
        with_best = malloc((size_t)n_det * sizeof(Py_ssize_t));
        claimed = malloc((size_t)n_gt * sizeof(int64_t));
        if (best_gt == NULL || best_iou == NULL || with_best == NULL || claimed == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        n_best = voc_best(n_pair, pair_det.buf, pair_gt.buf, pair_iou.buf, n_det, n_gt, best_gt,
                          best_iou, with_best);
        if (n_best >= 0) {
            const double *thr = thresholds.buf;
            Py_ssize_t lane, j;
            for (lane = 0; lane < n_lane; lane++) {
                for (j = 0; j < n_best; j++) {
                    n_match += voc_passes(best_iou[with_best[j]], thr[lane % n_thr], strict);
                }
            }
        }
        Py_END_ALLOW_THREADS
        fits = n_best >= 0;
    }
    if (!fits) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, rows_bytes(narrow, n_match, n_lane));
    if (out == NULL) {
        goto done;
    }
    {
        const match_rows rows = {narrow, PyByteArray_AS_STRING(out), n_match};
        const double *thr = thresholds.buf;
        const char *ignored = gt_is_ignored.buf, *det_out = det_is_out_of_range.buf;
        unsigned char *tp = det_is_tp.buf, *ign = det_is_ignored.buf;
        const Py_ssize_t n_byte = lane_bytes(n_lane);
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t lane, j, at = 0, g;
        /* unmatched detections keep the out-of-range mask */
        set_out_of_range(det_out, n_area, n_thr, n_det, ign);
        for (g = 0; g < n_gt; g++) {
            claimed[g] = -1;
        }
        for (lane = 0; lane < n_lane; lane++) {
            const Py_ssize_t a = lane / n_thr;
            for (j = 0; j < n_best; j++) {
                const Py_ssize_t d = with_best[j];
                const int64_t b = best_gt[d];
                if (!voc_passes(best_iou[d], thr[lane % n_thr], strict)) {
                    continue;
                }
                if (ignored[a * n_gt + b]) {
                    set_lane(ign, n_byte, d, lane, 1);
                }
                else {
                    set_lane(ign, n_byte, d, lane, 0);
                    if (claimed[b] != lane) {
                        claimed[b] = lane;
                        set_lane(tp, n_byte, d, lane, 1);
                    }
                }
                put_match(&rows, n_lane, at, lane, d, b);
                at++;
            }
        }
        Py_END_ALLOW_THREADS
    }
done:
    free(best_gt);
    free(best_iou);
    free(with_best);
    free(claimed);
    PyBuffer_Release(&pair_det);
    PyBuffer_Release(&pair_gt);
    PyBuffer_Release(&pair_iou);
    PyBuffer_Release(&thresholds);
    PyBuffer_Release(&gt_is_ignored);
    PyBuffer_Release(&det_is_out_of_range);
    PyBuffer_Release(&det_is_tp);
    PyBuffer_Release(&det_is_ignored);
    return out;
}

/* ---- box_pairs: the candidate pairs of whole images and their box IoU, in one pass ---------- */

/* The inputs of box_pairs' parts: detection i (sorted by key) pairs with the sorted ground truths
 * [start[i], start[i] + count[i]) of its key; its pairs are rows [offset[i], offset[i + 1]). */
typedef struct {
    const int64_t *det_key, *gt_key, *det_rows, *gt_rows;
    const double *det_box, *gt_box;
    const char *gt_crowd;
    Py_ssize_t n_gt;
    int64_t *start, *count, *offset;
    int64_t *pair_det, *pair_gt;
    double *iou;
    Py_ssize_t bounds[DETEVAL_MAX_PARTS + 1];
    int64_t nonfinite[DETEVAL_MAX_PARTS]; /* pairs with a non-finite term, per part */
} box_pairs_ctx;

/* Detections ahead whose boxes box_pairs_fill asks the cache for. */
#define BOX_PREFETCH 8
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

/* First index of sorted key[0 .. n) not below (upper: above) v. */
static Py_ssize_t
key_bound(const int64_t *key, Py_ssize_t n, int64_t v, int upper)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (upper ? key[mid] <= v : key[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Part [lo, hi) of the detections: each one's first ground truth and number of them. One
 * binary search at the part's first key, then a walk along both sorted key columns. */
static void
box_pairs_count(void *arg, Py_ssize_t lo, Py_ssize_t hi)
{
    box_pairs_ctx *c = arg;
    const int64_t *gt_key = c->gt_key;
    const Py_ssize_t n_gt = c->n_gt;
    Py_ssize_t s = 0, e = 0;
    int64_t last = 0;
    if (lo >= hi) return;
    s = e = key_bound(gt_key, n_gt, c->det_key[lo], 0);
    for (Py_ssize_t i = lo; i < hi; i++) {
        const int64_t k = c->det_key[i];
        if (i == lo || k != last) {
            s = e;
            while (s < n_gt && gt_key[s] < k) s++;
            e = s;
            while (e < n_gt && gt_key[e] == k) e++;
            last = k;
        }
        c->start[i] = s;
        c->count[i] = e - s;
    }
}

/* Part [lo, hi) of the detections: their pairs and IoUs, operation by operation as
 * deteval.geometry.boxes._pair_iou (continuous: pycocotools' bbIou), compiled with
 * -ffp-contract=off, so the values are the same bits. Pairs with a non-finite term are counted
 * (the caller recomputes the IoUs in numpy, which rescales overflowing boxes). */
static void
box_pairs_fill(void *arg, Py_ssize_t lo, Py_ssize_t hi)
{
    box_pairs_ctx *c = arg;
    int64_t nonfinite = 0;
    if (lo >= hi) return; /* a non-empty part is found by its first detection below */
    for (Py_ssize_t i = lo; i < hi; i++) {
        if (i + BOX_PREFETCH < hi) { /* the boxes are read by row: fetch a few detections ahead */
            const Py_ssize_t ahead = i + BOX_PREFETCH;
            PREFETCH(c->det_box + 4 * c->det_rows[ahead]);
            if (c->count[ahead] > 0) PREFETCH(c->gt_box + 4 * c->gt_rows[c->start[ahead]]);
        }
        const double *d = c->det_box + 4 * c->det_rows[i];
        const double dx = d[0], dy = d[1], dw = d[2], dh = d[3];
        const double det_area = dw * dh;
        const int det_finite = isfinite(dx) && isfinite(dy) && isfinite(det_area);
        int64_t o = c->offset[i];
        const int64_t s = c->start[i], e = s + c->count[i];
        for (int64_t j = s; j < e; j++, o++) {
            const double *g = c->gt_box + 4 * c->gt_rows[j];
            const double gx = g[0], gy = g[1], gw = g[2], gh = g[3];
            const double gt_area = gw * gh;
            const double dr = dw + dx, gr = gw + gx, db = dh + dy, gb = gh + gy;
            const double iw = (dr < gr ? dr : gr) - (dx > gx ? dx : gx);
            const double ih = (db < gb ? db : gb) - (dy > gy ? dy : gy);
            const int overlaps = iw > 0 && ih > 0;
            const double inter = overlaps ? iw * ih : 0.0;
            const double uni = c->gt_crowd[j] ? det_area : det_area + gt_area - inter;
            c->pair_det[o] = i;
            c->pair_gt[o] = j;
            c->iou[o] = overlaps && uni > 0 ? inter / uni : 0.0;
            /* numpy's is_finite terms, and the corners: a NaN corner would make the C comparisons
             * above pick the other box's value where np.minimum / np.maximum give NaN */
            nonfinite += !(det_finite && isfinite(gx) && isfinite(gy) && isfinite(uni) && isfinite(inter)
                           && isfinite(iw) && isfinite(ih) && isfinite(gt_area));
        }
    }
    for (int k = 0; k < DETEVAL_MAX_PARTS; k++) {
        if (c->bounds[k] == lo && c->bounds[k + 1] == hi) { /* this part's own slot */
            c->nonfinite[k] = nonfinite;
            break;
        }
    }
}

PyDoc_STRVAR(box_pairs_doc,
"box_pairs(det_key, gt_key, det_rows, gt_rows, det_box, gt_box, gt_crowd, threads, max_pairs)\n"
"--\n\n"
"Every (detection, ground truth) pair of equal keys and its continuous box IoU (see\n"
"deteval.evaluate.run._box_pairs_numpy, the twin: grouping.candidate_pairs then\n"
"geometry.boxes.pair_box_iou).\n\n"
"det_key (n_det,), gt_key (n_gt,): int64, non-decreasing; det_rows (n_det,), gt_rows (n_gt,):\n"
"int64 rows of det_box and gt_box, float64 (rows, 4) [x, y, w, h]; gt_crowd: bool (n_gt,).\n"
"Returns (pair_det, pair_gt, iou, n_nonfinite): bytearrays of int64, int64 and float64 (n_pair\n"
"each, detection-major), and the number of pairs with a non-finite term (their IoU is\n"
"to be recomputed); or None when the inputs break the kernel's assumptions (keys not sorted,\n"
"rows out of range, lengths that do not fit); or, when there are more than max_pairs pairs\n"
"(max_pairs >= 0; -1: no limit), their number, counted before anything is allocated for them.");

static PyObject *
cmatch_box_pairs(PyObject *self, PyObject *args)
{
    PyObject *objs[7];
    Arr arrs[7];
    static const char kinds[7] = {'I', 'I', 'I', 'I', 'f', 'f', 'b'};
    static const int writable[7] = {0, 0, 0, 0, 0, 0, 0};
    int threads;
    long long max_pairs;
    PyObject *out = NULL, *buffers[3] = {NULL, NULL, NULL};
    box_pairs_ctx *c = NULL;

    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOOiL:box_pairs", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &threads, &max_pairs)) {
        return NULL;
    }
    if (get_all(objs, kinds, writable, 7, arrs, "_cmatch.box_pairs") < 0) goto done;
    c = calloc(1, sizeof(box_pairs_ctx));
    if (c == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const Py_ssize_t n_det = arrs[0].view.len / 8, n_gt = arrs[1].view.len / 8;
    const Py_ssize_t n_det_box = arrs[4].view.len / 32, n_gt_box = arrs[5].view.len / 32;
    int fits = arrs[2].view.len == arrs[0].view.len && arrs[3].view.len == arrs[1].view.len
               && arrs[4].view.len % 32 == 0 && arrs[5].view.len % 32 == 0 && arrs[6].view.len == n_gt;
    c->det_key = arrs[0].view.buf;
    c->gt_key = arrs[1].view.buf;
    c->det_rows = arrs[2].view.buf;
    c->gt_rows = arrs[3].view.buf;
    c->det_box = arrs[4].view.buf;
    c->gt_box = arrs[5].view.buf;
    c->gt_crowd = arrs[6].view.buf;
    c->n_gt = n_gt;
    for (Py_ssize_t i = 0; fits && i < n_det; i++) {
        fits = (i == 0 || c->det_key[i - 1] <= c->det_key[i]) && c->det_rows[i] >= 0 && c->det_rows[i] < n_det_box;
    }
    for (Py_ssize_t j = 0; fits && j < n_gt; j++) {
        fits = (j == 0 || c->gt_key[j - 1] <= c->gt_key[j]) && c->gt_rows[j] >= 0 && c->gt_rows[j] < n_gt_box;
    }
    if (!fits) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    c->start = malloc((size_t)(n_det + 1) * sizeof(int64_t));
    c->count = malloc((size_t)(n_det + 1) * sizeof(int64_t));
    c->offset = malloc((size_t)(n_det + 1) * sizeof(int64_t));
    if (c->start == NULL || c->count == NULL || c->offset == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int parts;
    int64_t n_pair = 0;
    Py_BEGIN_ALLOW_THREADS
    parts = even_bounds(n_det, threads, c->bounds);
    parallel_parts(c->bounds, parts, box_pairs_count, c);
    c->offset[0] = 0;
    for (Py_ssize_t i = 0; i < n_det; i++) c->offset[i + 1] = c->offset[i] + c->count[i];
    n_pair = c->offset[n_det];
    Py_END_ALLOW_THREADS
    if (max_pairs >= 0 && n_pair > max_pairs) { /* the caller refuses, naming the count */
        out = PyLong_FromLongLong((long long)n_pair);
        goto done;
    }
    if (n_pair > PY_SSIZE_T_MAX / 8) {
        PyErr_NoMemory();
        goto done;
    }
    /* three blocks, not one of 24 bytes a pair: each stays under the CLI's mmap threshold at the
     * shard sizes of deteval.evaluate.run (so glibc reuses freed heap, not fresh mapped pages) */
    for (int b = 0; b < 3; b++) {
        buffers[b] = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n_pair * 8));
        if (buffers[b] == NULL) goto done;
    }
    c->pair_det = (int64_t *)PyByteArray_AS_STRING(buffers[0]);
    c->pair_gt = (int64_t *)PyByteArray_AS_STRING(buffers[1]);
    c->iou = (double *)PyByteArray_AS_STRING(buffers[2]);
    int64_t nonfinite = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(c->bounds, 0, sizeof(c->bounds));
    parts = weighted_bounds(c->offset, n_det, threads, c->bounds);
    for (int k = parts + 1; k <= DETEVAL_MAX_PARTS; k++) c->bounds[k] = -1; /* no stray part matches */
    parallel_parts(c->bounds, parts, box_pairs_fill, c);
    for (int k = 0; k < parts; k++) nonfinite += c->nonfinite[k];
    Py_END_ALLOW_THREADS
    out = Py_BuildValue("(OOOL)", buffers[0], buffers[1], buffers[2], (long long)nonfinite);
done:
    for (int b = 0; b < 3; b++) Py_XDECREF(buffers[b]);
    if (c != NULL) {
        free(c->start);
        free(c->count);
        free(c->offset);
        free(c);
    }
    release_arrs(arrs, 7);
    return out;
}

static PyMethodDef cmatch_methods[] = {
    {"match_coco", cmatch_match_coco, METH_VARARGS, match_coco_doc},
    {"match_voc", cmatch_match_voc, METH_VARARGS, match_voc_doc},
    {"box_pairs", cmatch_box_pairs, METH_VARARGS, box_pairs_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_cmatch, "deteval._cmatch",
               "Compiled greedy matching kernels; the numpy code in deteval.matching is their twin.",
               cmatch_methods, CMATCH_ABI, NULL)
