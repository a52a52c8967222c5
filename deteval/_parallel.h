/* Threads inside a kernel: one helper every extension that splits its work uses.
 *
 * parallel_parts(bounds, parts, fn, ctx) runs fn(ctx, bounds[k], bounds[k+1]) for k in
 * [0, parts): part 0 on the calling thread, the others on POSIX threads started here and joined
 * before it returns. The caller has released the GIL (Py_BEGIN_ALLOW_THREADS) and fn touches no
 * Python object: it reads its inputs and writes only its own rows of the outputs, so the result
 * is the same whatever the number of parts and whatever order they finish in (identical numbers
 * to one thread, by construction). If a thread cannot be started, its part runs on the calling
 * thread after the others: the same result, later.
 *
 * Where there are no POSIX threads (MSVC) every part runs on the calling thread.
 *
 * Splitting: even_bounds() cuts [0, n) into parts of equal count; weighted_bounds() cuts it by a
 * running cost (an int64 cumulative sum over the items, e.g. pairs per image), so that parts of
 * very different sizes (a few crowded images) still take about the same time. */
#ifndef DETEVAL_PARALLEL_H
#define DETEVAL_PARALLEL_H

#include <Python.h>
#include <stdint.h>

#ifndef _WIN32
#include <pthread.h>
#define DETEVAL_HAVE_THREADS 1
#else
#define DETEVAL_HAVE_THREADS 0
#endif

/* At most this many parts (threads) in one call; a caller asking for more gets this many. */
#define DETEVAL_MAX_PARTS 64

typedef void (*part_fn)(void *ctx, Py_ssize_t lo, Py_ssize_t hi);

typedef struct {
    part_fn fn;
    void *ctx;
    Py_ssize_t lo, hi;
} PartJob;

#if DETEVAL_HAVE_THREADS
static void *
run_part_job(void *arg)
{
    PartJob *job = (PartJob *)arg;
    job->fn(job->ctx, job->lo, job->hi);
    return NULL;
}
#endif

/* Run fn on every part [bounds[k], bounds[k+1]); bounds has parts + 1 non-decreasing entries. */
static inline void
parallel_parts(const Py_ssize_t *bounds, int parts, part_fn fn, void *ctx)
{
    if (parts > DETEVAL_MAX_PARTS) parts = DETEVAL_MAX_PARTS;
    if (parts <= 1) {
        if (parts == 1) fn(ctx, bounds[0], bounds[1]);
        return;
    }
#if DETEVAL_HAVE_THREADS
    PartJob jobs[DETEVAL_MAX_PARTS];
    pthread_t ids[DETEVAL_MAX_PARTS];
    int started[DETEVAL_MAX_PARTS];
    for (int k = 1; k < parts; k++) {
        jobs[k].fn = fn;
        jobs[k].ctx = ctx;
        jobs[k].lo = bounds[k];
        jobs[k].hi = bounds[k + 1];
        started[k] = jobs[k].lo < jobs[k].hi && pthread_create(&ids[k], NULL, run_part_job, &jobs[k]) == 0;
    }
    fn(ctx, bounds[0], bounds[1]);
    for (int k = 1; k < parts; k++) {
        if (started[k])
            pthread_join(ids[k], NULL);
        else if (bounds[k] < bounds[k + 1])
            fn(ctx, bounds[k], bounds[k + 1]);
    }
#else
    for (int k = 0; k < parts; k++) fn(ctx, bounds[k], bounds[k + 1]);
#endif
}

/* bounds[0 .. parts] cutting [0, n) into parts of equal count (the last ones one shorter). */
static inline int
even_bounds(Py_ssize_t n, int parts, Py_ssize_t *bounds)
{
    if (parts < 1) parts = 1;
    if (parts > DETEVAL_MAX_PARTS) parts = DETEVAL_MAX_PARTS;
    if (n < parts) parts = n > 0 ? (int)n : 1;
    for (int k = 0; k <= parts; k++) bounds[k] = (Py_ssize_t)((n * (int64_t)k) / parts);
    return parts;
}

/* bounds[0 .. parts] cutting [0, n) where item i costs cum[i + 1] - cum[i] (cum has n + 1
 * non-decreasing entries, cum[0] = 0): part k ends at the first item whose running cost reaches
 * k/parts of the total. Returns the number of parts (fewer when n is small). */
static inline int
weighted_bounds(const int64_t *cum, Py_ssize_t n, int parts, Py_ssize_t *bounds)
{
    if (parts < 1) parts = 1;
    if (parts > DETEVAL_MAX_PARTS) parts = DETEVAL_MAX_PARTS;
    if (n < parts) parts = n > 0 ? (int)n : 1;
    const int64_t total = cum[n];
    bounds[0] = 0;
    Py_ssize_t i = 0;
    for (int k = 1; k < parts; k++) {
        const int64_t target = total / parts * k + (total % parts) * k / parts;
        while (i < n && cum[i] < target) i++;
        bounds[k] = i;
    }
    bounds[parts] = n;
    return parts;
}

#endif /* DETEVAL_PARALLEL_H */
