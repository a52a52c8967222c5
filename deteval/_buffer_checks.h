/* The kernel layer's one header: every buffer helper the compiled extensions share, and the
 * module-init macro that stamps each module with its ABI number. Every extension of deteval
 * includes it (one copy of each helper in the source tree). Static inline functions: each extension
 * gets its own copy at compile time (none unused), no symbol is shared between modules.
 *
 * ABI numbers: each extension defines its own (DETEVAL_MODULE's ``abi``), and
 * deteval._speedups.ABI holds the number the Python code expects. Bump both together whenever a
 * function of the module changes its signature or meaning: a module built before the change (a
 * stale in-place .so) then reports the old number, and _speedups uses the numpy twin instead of
 * calling it with the wrong arguments (or, under DETEVAL_REQUIRE_EXTENSION=1, says how to
 * rebuild). */
#ifndef DETEVAL_BUFFER_CHECKS_H
#define DETEVAL_BUFFER_CHECKS_H

#include <Python.h>
#include <stdint.h>

/* Whether two buffers share a byte. An output that overlaps an input (the same array passed
 * twice, or views of one array) would change indices after they were checked: refused. */
static inline int
views_overlap(const Py_buffer *a, const Py_buffer *b)
{
    const uintptr_t a0 = (uintptr_t)a->buf, b0 = (uintptr_t)b->buf;
    return a->len > 0 && b->len > 0 && a0 < b0 + (uintptr_t)b->len && b0 < a0 + (uintptr_t)a->len;
}

/* Whether any of the first n_out views overlaps any other view of views[0 .. n) (sets ValueError). */
static inline int
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
static inline int
is_aligned(const Py_buffer *view, Py_ssize_t size)
{
    return size > 0 && (uintptr_t)view->buf % (uintptr_t)size == 0;
}

/* Every buffer is a flat C-contiguous block; whether its byte length is count items of itemsize. */
static inline int
has_items(const Py_buffer *view, Py_ssize_t count, Py_ssize_t itemsize)
{
    return view->len == count * itemsize;
}

/* A buffer view and whether it is held (to be released). */
typedef struct {
    Py_buffer view;
    int held;
} Arr;

/* ``obj`` as an aligned C-contiguous buffer of one kind: 'i' int64, 'j' int32, 'b' bool (one byte),
 * 'f' float64; the upper-case kinds ('I', 'J', 'F') also require at most one dimension. TypeError
 * (prefixed with ``where``) when it is not; the view is held (release it) once this returns 0 or
 * the buffer was obtained. */
static inline int
get_arr(PyObject *obj, char kind, int writable, Arr *a, const char *where)
{
    const int flat = kind == 'I' || kind == 'J' || kind == 'F';
    const char k = flat ? (char)(kind - 'A' + 'a') : kind;
    int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &a->view, flags) < 0) return -1;
    a->held = 1;
    const char *fmt = a->view.format ? a->view.format : "B";
    if (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@') fmt++;
    int ok = (!flat || a->view.ndim <= 1) && fmt[0] != '\0' && fmt[1] == '\0';
    if (k == 'i') ok = ok && a->view.itemsize == 8 && (fmt[0] == 'l' || fmt[0] == 'q');
    else if (k == 'j') ok = ok && a->view.itemsize == 4 && (fmt[0] == 'i' || fmt[0] == 'l');
    else if (k == 'b') ok = ok && a->view.itemsize == 1 && fmt[0] == '?';
    else ok = ok && a->view.itemsize == 8 && fmt[0] == 'd';
    if (ok && !is_aligned(&a->view, a->view.itemsize)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an aligned buffer (not a view at an odd offset)", where);
        return -1;
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: expected a %scontiguous%s %s buffer", where, writable ? "writable " : "",
                     flat ? " 1-D" : "",
                     k == 'i' ? "int64" : k == 'j' ? "int32" : k == 'b' ? "bool" : "float64");
        return -1;
    }
    return 0;
}

/* Release the held views of arrs[0 .. n). */
static inline void
release_arrs(Arr *arrs, int n)
{
    for (int i = 0; i < n; i++) {
        if (arrs[i].held) PyBuffer_Release(&arrs[i].view);
        arrs[i].held = 0;
    }
}

/* ValueError when a writable buffer of arrs overlaps another held one. */
static inline int
arrs_overlap(const Arr *arrs, const int *writable, int n, const char *where)
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; writable[i] && j < n; j++) {
            if (j != i && arrs[i].held && arrs[j].held && views_overlap(&arrs[i].view, &arrs[j].view)) {
                PyErr_Format(PyExc_ValueError, "%s: an output buffer overlaps another buffer", where);
                return 1;
            }
        }
    }
    return 0;
}

/* Every objs[i] as a buffer of kinds[i] (see get_arr), writable where writable[i]; then no output
 * overlapping another buffer. -1 with an exception set (release_arrs the held ones either way). */
static inline int
get_all(PyObject *const *objs, const char *kinds, const int *writable, int n, Arr *arrs, const char *where)
{
    for (int i = 0; i < n; i++) arrs[i].held = 0;
    for (int i = 0; i < n; i++) {
        if (get_arr(objs[i], kinds[i], writable[i], &arrs[i], where) < 0) return -1;
    }
    return arrs_overlap(arrs, writable, n, where) ? -1 : 0;
}

/* The module definition and init function of extension ``short`` (e.g. _cmatch), whose full name
 * is ``full`` (e.g. "deteval._cmatch"), with its method table and docstring. ``setup`` (a function
 * int(void), 0 on success, or NULL) runs first. The module gets the int attribute ``ABI`` =
 * ``abi``, which deteval._speedups compares with the number it expects. */
#define DETEVAL_MODULE(short, full, doc, methods, abi, setup)                                          \
    static struct PyModuleDef short##_moduledef = {                                                   \
        PyModuleDef_HEAD_INIT, full, doc, -1, methods, NULL, NULL, NULL, NULL,                        \
    };                                                                                                 \
    PyMODINIT_FUNC PyInit_##short(void)                                                               \
    {                                                                                                  \
        int (*setup_fn)(void) = setup;                                                                 \
        if (setup_fn != NULL && setup_fn() != 0) return NULL;                                          \
        PyObject *module = PyModule_Create(&short##_moduledef);                                        \
        if (module != NULL && PyModule_AddIntConstant(module, "ABI", (abi)) < 0) {                     \
            Py_DECREF(module);                                                                         \
            return NULL;                                                                               \
        }                                                                                              \
        return module;                                                                                 \
    }

#endif /* DETEVAL_BUFFER_CHECKS_H */
