/* Checks of the buffers a compiled kernel receives, shared by the extensions that take Py_buffer
 * views directly (_cacc, _cmatch, _csort): one copy, included where needed. Static functions: each
 * extension gets its own copy at compile time, no symbol is shared between modules. */
#ifndef DETEVAL_BUFFER_CHECKS_H
#define DETEVAL_BUFFER_CHECKS_H

#include <Python.h>
#include <stdint.h>

/* Whether two buffers share a byte. An output that overlaps an input (the same array passed
 * twice, or views of one array) would change indices after they were checked: refused. */
static int
views_overlap(const Py_buffer *a, const Py_buffer *b)
{
    const uintptr_t a0 = (uintptr_t)a->buf, b0 = (uintptr_t)b->buf;
    return a->len > 0 && b->len > 0 && a0 < b0 + (uintptr_t)b->len && b0 < a0 + (uintptr_t)a->len;
}

/* Whether any of the first n_out views overlaps any other view of views[0 .. n) (sets ValueError). */
static int
outputs_overlap(const Py_buffer *const *views, int n_out, int n, const char *where)
{
    for (int i = 0; i < n_out; i++) {
        for (int j = 0; j < n; j++) {
            if (j != i && views_overlap(views[i], views[j])) {
                PyErr_Format(PyExc_ValueError, "%s: an output buffer overlaps another buffer", where);
                return 1;
            }
        }
    }
    return 0;
}

/* Whether a buffer's items of ``size`` bytes are aligned (a view at an odd offset is not: reading
 * it as int64 or float64 is undefined behaviour in C). */
static int
is_aligned(const Py_buffer *view, Py_ssize_t size)
{
    return size > 0 && (uintptr_t)view->buf % (uintptr_t)size == 0;
}

#endif /* DETEVAL_BUFFER_CHECKS_H */
