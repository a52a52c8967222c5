/*
 * deteval.io._colparse: COCO box-results JSON parsed straight into columns.
 *
 * One pass over the bytes of a file that is exactly
 *     [{"image_id": <int>, "category_id": <int>, "bbox": [<num>, <num>, <num>, <num>], "score": <num>}, ...]
 * (the four keys in any order, each once, JSON whitespace anywhere JSON allows it), writing into
 * caller-owned int64 / float64 buffers. No Python object is made per record and nothing is validated
 * beyond the shape: anything else (another key, a missing or repeated key, a string, bool, null, nested
 * value, an escaped key, a non-integer id, an id outside int64, a number outside JSON's grammar or that
 * overflows a double, trailing text) makes the function return None, and the caller takes its other
 * paths, which name the problem. What is accepted is a subset of what the msgspec fast path accepts,
 * with bit-identical numbers:
 *
 * - ids: exact int64; ``-0`` is 0.
 * - floats: the correctly rounded double of the decimal text, as Python's float() and msgspec give.
 *   A token with at most 19 significant digits whose mantissa fits 2**53 and whose decimal exponent is
 *   within [-22, 22] is computed as one IEEE multiplication or division of two exact doubles (Clinger's
 *   fast path: exact operands, one correctly rounded operation), when the compiler evaluates doubles in
 *   double precision (FLT_EVAL_METHOD == 0); every other token goes to PyOS_string_to_double, Python's
 *   own correctly rounded, locale-independent conversion (the one float() uses).
 * - an integer token in a float field (``"score": 1``) is read as msgspec reads it, as an integer first:
 *   ``-0`` gives +0.0 (``-0.0`` and ``-0e0`` give -0.0).
 *
 * Plain C and the CPython API only (no numpy headers): building needs a C compiler and nothing else.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../_buffer_checks.h"
#include "../_parallel.h"

/* The ABI number (see _buffer_checks.h; deteval._speedups.ABI holds the expected one). */
#define COLPARSE_ABI 10 /* 2: rle_results and keypoint_results; 3: keypoints in instances, bbox in keypoint_results; 4: rle_spans, polygon_spans; 5: a ``threads`` argument to box_results, box_results_part, keypoint_results, segm_results, rle_results, instances; 6: rle_results_part; 7: the RLE counts strings copied in blocks (same results); 8: skip_value_loosely and skip_string_loosely eight bytes at a time, parse_double reads numbers of up to 15 digits first (same results); 9: keypoint lists read their common numbers a word at a time (same results); 10: images */

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define COLPARSE_FAST_FLOATS 1
#else
#define COLPARSE_FAST_FLOATS 0
#endif

/* Outcome of a parsing step. */
#define OK 0
#define REFUSE -1 /* not the plain shape: return None */
#define ERROR -2  /* a Python exception is set */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number whose conversion needs Python (slow_double), met by a parser running without the GIL:
 * its text and where its value goes, converted once the GIL is held again (see run_parts). */
typedef struct {
    double *out;
    const char *start, *stop;
} SlowNumber;

typedef struct {
    SlowNumber *items;
    Py_ssize_t n, cap;
    int no_memory;
} Deferred;

/* ``defer``: NULL when the parser holds the GIL (slow numbers are converted at once), else the list
 * its slow numbers are put on (no Python call is made while the GIL is released). */
typedef struct {
    const char *p;
    const char *end;
    Deferred *defer;
} Cursor;

static inline int is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static inline void skip_ws(Cursor *c) {
    while (c->p < c->end && is_ws(*c->p)) c->p++;
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Consume ``ch`` after optional whitespace. */
static inline int expect(Cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return OK;
    }
    return REFUSE;
}

/* A JSON integer (no fraction, no exponent) that fits int64. */
static int parse_int64(Cursor *c, int64_t *out) {
    const char *p = c->p, *end = c->end;
    int negative = 0;
    uint64_t value = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end || !is_digit(*p)) return REFUSE;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && is_digit(*p)) {
            uint64_t digit = (uint64_t)(*p - '0');
            if (value > (UINT64_MAX - digit) / 10) return REFUSE;
            value = value * 10 + digit;
            p++;
        }
    }
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E' || is_digit(*p))) return REFUSE; /* 1.0, 1e2, 01 */
    if (negative) {
        if (value > (uint64_t)INT64_MAX + 1) return REFUSE;
        *out = value == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)value;
    } else {
        if (value > (uint64_t)INT64_MAX) return REFUSE;
        *out = (int64_t)value;
    }
    c->p = p;
    return OK;
}

/* The correctly rounded double of the text [start, stop) by Python's own conversion. */
static int slow_double(const char *start, const char *stop, double *out) {
    char small[64];
    size_t len = (size_t)(stop - start);
    char *buf = len < sizeof small ? small : (char *)PyMem_Malloc(len + 1);
    if (buf == NULL) {
        PyErr_NoMemory();
        return ERROR;
    }
    memcpy(buf, start, len);
    buf[len] = '\0';
    double value = PyOS_string_to_double(buf, NULL, NULL);
    if (buf != small) PyMem_Free(buf);
    if (value == -1.0 && PyErr_Occurred()) return ERROR;
    *out = value;
    return OK;
}

/* Grammars of numbers: JSON's, or the plain decimals Python's float() reads in text files. */
#define JSON_NUMBER 0
#define TEXT_NUMBER 1 /* also a leading '+', leading zeros, "1." and ".5"; -0 is -0.0 */

/* The double of a JSON decimal read as its mantissa ``m`` (every digit, below 2^53) and
 * ``fraction`` digits after the point (-1: no point): one conversion and one division, so the
 * fast paths of parse_double and of the keypoint lists give the same bits as each other. */
static inline double short_json_decimal(uint64_t m, int fraction, int negative) {
    if (m == 0) return negative && fraction >= 0 ? -0.0 : 0.0; /* JSON's integer -0 is msgspec's 0 */
    double value = (double)m;
    if (fraction > 0) value = value / POW10[fraction];
    return negative ? -value : value;
}

/* A number as a finite double (see the header for the rounding and for ``-0`` in JSON). */
static int parse_double(Cursor *c, double *out, int grammar) {
    const char *start = c->p, *p = c->p, *end = c->end;
    int negative = 0, is_integer = 1, digits = 0;
    uint64_t mantissa = 0;
    int significant = 0;   /* digits in the mantissa (leading zeros excluded); 20: too many */
    int64_t exponent = 0;  /* decimal exponent applying to the mantissa */
    if (p < end && (*p == '-' || (grammar == TEXT_NUMBER && *p == '+'))) {
        negative = *p == '-';
        p++;
    }
    if (grammar == JSON_NUMBER) {
        if (p >= end || !is_digit(*p)) return REFUSE;
        if (*p == '0' && p + 1 < end && is_digit(p[1])) return REFUSE; /* leading zero */
#if COLPARSE_FAST_FLOATS
        /* The common number first: at most 15 digits in all (every digit, leading zeros too, so the
         * mantissa stays below 2^53), no exponent. The same mantissa and decimal exponent as the
         * general loop below gives, so the same double; anything else goes on to that loop. */
        const char *q = p;
        uint64_t m = 0;
        int n_digits = 0, fraction = -1; /* -1: no '.' */
        while (q < end && is_digit(*q) && n_digits < 16) {
            m = m * 10 + (uint64_t)(*q++ - '0');
            n_digits++;
        }
        if (q < end && *q == '.' && q + 1 < end && is_digit(q[1])) {
            q++;
            fraction = 0;
            while (q < end && is_digit(*q) && n_digits < 16) {
                m = m * 10 + (uint64_t)(*q++ - '0');
                n_digits++;
                fraction++;
            }
        }
        if (n_digits <= 15 && !(q < end && (is_digit(*q) || *q == '.' || *q == 'e' || *q == 'E'))) {
            c->p = q;
            *out = short_json_decimal(m, fraction, negative);
            return OK;
        }
#endif
    }
    while (p < end && is_digit(*p)) {
        digits++;
        if (mantissa == 0 && *p == '0') {
            /* a leading zero adds nothing */
        } else if (significant < 19) {
            mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            significant++;
        } else {
            exponent++;
            significant = 20;
        }
        p++;
    }
    if (p < end && *p == '.') {
        is_integer = 0;
        p++;
        if (grammar == JSON_NUMBER && (p >= end || !is_digit(*p))) return REFUSE;
        while (p < end && is_digit(*p)) {
            digits++;
            if (mantissa == 0 && *p == '0') {
                exponent--; /* leading zero of the fraction */
            } else if (significant < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                significant++;
                exponent--;
            } else {
                significant = 20;
            }
            p++;
        }
    }
    if (digits == 0) return REFUSE;
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_integer = 0;
        p++;
        int exp_negative = 0;
        int64_t exp_value = 0;
        if (p < end && (*p == '+' || *p == '-')) {
            exp_negative = *p == '-';
            p++;
        }
        if (p >= end || !is_digit(*p)) return REFUSE;
        while (p < end && is_digit(*p)) {
            if (exp_value < 100000000) exp_value = exp_value * 10 + (*p - '0');
            p++;
        }
        exponent += exp_negative ? -exp_value : exp_value;
    }
    c->p = p;
    double value;
    if (mantissa == 0 && significant < 20) {
        /* every digit is zero; msgspec reads a JSON integer -0 as the integer 0 */
        value = (negative && !(grammar == JSON_NUMBER && is_integer)) ? -0.0 : 0.0;
    } else if (COLPARSE_FAST_FLOATS && significant <= 19 && mantissa <= ((uint64_t)1 << 53) &&
               exponent >= -22 && exponent <= 22) {
        value = (double)mantissa;
        value = exponent < 0 ? value / POW10[-exponent] : value * POW10[exponent];
        if (negative) value = -value;
    } else if (c->defer != NULL) {
        /* converted (and checked finite) by run_parts once the GIL is held again */
        Deferred *d = c->defer;
        if (d->n == d->cap) {
            Py_ssize_t cap = d->cap ? 2 * d->cap : 64;
            SlowNumber *items = (SlowNumber *)realloc(d->items, (size_t)cap * sizeof *items);
            if (items == NULL) {
                d->no_memory = 1;
                return REFUSE;
            }
            d->items = items;
            d->cap = cap;
        }
        d->items[d->n].out = out;
        d->items[d->n].start = start;
        d->items[d->n].stop = p;
        d->n++;
        *out = 0.0;
        return OK;
    } else {
        int status = slow_double(start, p, &value);
        if (status != OK) return status;
    }
    if (!isfinite(value)) return REFUSE; /* 1e400: msgspec refuses it, text files too */
    *out = value;
    return OK;
}

enum { KEY_IMAGE_ID, KEY_CATEGORY_ID, KEY_BBOX, KEY_SCORE, N_KEYS };

static const char *const KEYS[N_KEYS] = {"image_id\"", "category_id\"", "bbox\"", "score\""};

/* The index of the key at the cursor among ``keys`` (each written with its closing quote), byte
 * for byte; an escaped or unknown key is refused. Used by every record parser below. */
static int match_key(Cursor *c, const char *const *keys, int n_keys) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != '"') return REFUSE;
    c->p++;
    size_t left = (size_t)(c->end - c->p);
    for (int k = 0; k < n_keys; k++) {
        size_t len = strlen(keys[k]);
        if (left >= len && memcmp(c->p, keys[k], len) == 0) {
            c->p += len;
            return k;
        }
    }
    return REFUSE;
}

/* A JSON array of exactly four numbers into ``out[0:4]``. */
static int parse_box(Cursor *c, double *out) {
    int status;
    if (expect(c, '[') != OK) return REFUSE;
    for (int j = 0; j < 4; j++) {
        if (j > 0 && expect(c, ',') != OK) return REFUSE;
        skip_ws(c);
        status = parse_double(c, &out[j], JSON_NUMBER);
        if (status != OK) return status;
    }
    return expect(c, ']');
}

/* A column the parser reads or writes (a buffer view, see _buffer_checks.h). */
typedef Arr Column;

static int parse_record(Cursor *c, int64_t *image_id, int64_t *category_id, double *bbox, double *score) {
    int seen = 0, status;
    if (expect(c, '{') != OK) return REFUSE;
    for (int i = 0; i < N_KEYS; i++) {
        int key = match_key(c, KEYS, N_KEYS);
        if (key < 0 || (seen & (1 << key))) return REFUSE; /* unknown or repeated */
        seen |= 1 << key;
        if (expect(c, ':') != OK) return REFUSE;
        skip_ws(c);
        switch (key) {
        case KEY_IMAGE_ID:
            status = parse_int64(c, image_id);
            break;
        case KEY_CATEGORY_ID:
            status = parse_int64(c, category_id);
            break;
        case KEY_SCORE:
            status = parse_double(c, score, JSON_NUMBER);
            break;
        default: /* KEY_BBOX */
            status = parse_box(c, bbox);
        }
        if (status != OK) return status;
        if (expect(c, i + 1 < N_KEYS ? ',' : '}') != OK) return REFUSE;
    }
    return OK;
}

/* One record of a results array at row ``i`` of the caller's columns (``ctx``). */
typedef int (*RecordParser)(Cursor *c, void *ctx, Py_ssize_t i);

/* The grammar every array of records shares (box, segm and keypoint results, the instances'
 * annotations). A whole array (``first`` and ``last``) is ``[`` record (``,`` record)* ``]`` with
 * nothing but whitespace after (or ``[]`` when ``empty_ok``). A part of a file cut after a record's
 * closing ``}`` (see box_results_part) is the same grammar cut there: a first part starts with ``[``
 * and its first record; a later part starts with ``,`` (or, the last part, with ``]``); a part that
 * is not the last ends with a record. Concatenated, the parts are read exactly as the whole file is:
 * no token crosses a cut (a ``}`` is a token of its own). Records go to rows ``start``, ``start + 1``,
 * ... below ``capacity`` (one beyond it is REFUSE); ``*n_out`` is the row after the last record read,
 * whatever the outcome. */
static int parse_record_array(Cursor *c, int first, int last, int empty_ok, Py_ssize_t start, Py_ssize_t capacity,
                              RecordParser record, void *ctx, Py_ssize_t *n_out) {
    Py_ssize_t n = start;
    int status = OK;
    if (first) {
        status = expect(c, '[');
        if (status == OK && empty_ok) {
            skip_ws(c);
            if (c->p < c->end && *c->p == ']') { /* [] */
                c->p++;
                *n_out = n;
                return last && c->p == c->end ? OK : REFUSE;
            }
        }
        if (status == OK && n >= capacity) status = REFUSE;
        if (status == OK) status = record(c, ctx, n);
        if (status == OK) n++;
    }
    while (status == OK) {
        skip_ws(c);
        if (c->p >= c->end) {
            if (last) status = REFUSE; /* no closing ] */
            break;
        }
        if (*c->p == ',') {
            c->p++;
            if (n >= capacity) {
                status = REFUSE;
                break;
            }
            status = record(c, ctx, n);
            if (status == OK) n++;
            continue;
        }
        if (!last || *c->p != ']') {
            status = REFUSE;
            break;
        }
        c->p++;
        skip_ws(c);
        if (c->p != c->end) status = REFUSE; /* trailing text */
        break;
    }
    *n_out = n;
    return status;
}

typedef struct {
    int64_t *image_id, *category_id;
    double *bbox, *score;
} BoxRows;

static int box_row(Cursor *c, void *ctx, Py_ssize_t i) {
    BoxRows *b = (BoxRows *)ctx;
    return parse_record(c, &b->image_id[i], &b->category_id[i], &b->bbox[4 * i], &b->score[i]);
}

static int parse_box_array(Cursor *c, int first, int last, Py_ssize_t capacity, int64_t *image_id,
                           int64_t *category_id, double *bbox, double *score, Py_ssize_t *n_out) {
    BoxRows rows = {image_id, category_id, bbox, score};
    return parse_record_array(c, first, last, 0, 0, capacity, box_row, &rows, n_out);
}

/* ---- Parsing on several threads: parts cut at record boundaries, joined in file order ----
 *
 * run_parts cuts ``[0, len)`` into at most ``threads`` parts, each right after a record's ``}`` (a ``}``
 * whose next bytes, past whitespace, are ``,`` and ``{``: in a plain file only a record's end is
 * followed so), and parses them at once (parallel_parts) with the GIL released: part k into its own
 * region of each column (the columns' capacity split in proportion to the bytes, see part_region),
 * numbers needing Python's conversion put aside (Deferred). A part starts as the grammar of
 * parse_record_array says a later part does (``,``). Once joined, with the GIL: the put-aside numbers
 * are converted, then the caller moves each part's rows down behind the previous part's.
 *
 * Why the result is the one thread's: part 0 starts where the whole file does; a part that parses
 * to its end with OK ends right after a record, exactly where the one-thread parse of the same bytes
 * is after that record (no token crosses a ``}``), so the next part starts in the state that parse
 * has there; by induction, parts that all parse OK read what one thread reads. When any part is
 * refused -- the file is not plain, or a cut fell inside a string, or a region was too small -- the
 * caller parses the whole again on one thread, whose outcome is then the answer. */

typedef struct PartsJob PartsJob;
typedef int (*PartParser)(PartsJob *job, int k, Cursor *c, int first, int last);

struct PartsJob {
    const char *base;
    Py_ssize_t len;
    int parts, first, last;
    Py_ssize_t cut[DETEVAL_MAX_PARTS + 1];
    int status[DETEVAL_MAX_PARTS];
    Deferred defer[DETEVAL_MAX_PARTS];
    PartParser parse;
    void *ctx;
};

/* Whether ``s[i]`` is a ``}`` followed, past whitespace, by ``,`` and (past whitespace) ``{``. */
static int is_record_end(const char *s, Py_ssize_t len, Py_ssize_t i) {
    Py_ssize_t j = i + 1;
    while (j < len && is_ws(s[j])) j++;
    if (j >= len || s[j] != ',') return 0;
    j++;
    while (j < len && is_ws(s[j])) j++;
    return j < len && s[j] == '{';
}

/* job->cut[0 .. parts] (cut[0] = 0, cut[parts] = len): ``threads`` parts of about equal bytes, fewer
 * when no record ends after a target. */
static void record_cuts(PartsJob *job, int threads) {
    const char *s = job->base;
    const Py_ssize_t len = job->len;
    if (threads > DETEVAL_MAX_PARTS) threads = DETEVAL_MAX_PARTS;
    int k = 1;
    job->cut[0] = 0;
    for (int j = 1; j < threads; j++) {
        Py_ssize_t at = (Py_ssize_t)((double)len * j / threads);
        if (at < job->cut[k - 1]) at = job->cut[k - 1];
        while (at < len) {
            const char *hit = (const char *)memchr(s + at, '}', (size_t)(len - at));
            if (hit == NULL) {
                at = len;
                break;
            }
            at = hit - s;
            if (is_record_end(s, len, at)) break;
            at++;
        }
        if (at >= len) break;
        job->cut[k++] = at + 1;
    }
    job->cut[k] = len;
    job->parts = k;
}

/* Part k's rows ``[*lo, *hi)`` of a column of ``cap`` rows: its share in proportion to its bytes. */
static void part_region(const PartsJob *job, int k, Py_ssize_t cap, Py_ssize_t *lo, Py_ssize_t *hi) {
    if (job->parts == 1) {
        *lo = 0;
        *hi = cap;
        return;
    }
    const double scale = job->len > 0 ? (double)cap / (double)job->len : 0.0;
    *lo = k == 0 ? 0 : (Py_ssize_t)(scale * (double)job->cut[k]);
    *hi = k + 1 == job->parts ? cap : (Py_ssize_t)(scale * (double)job->cut[k + 1]);
    if (*hi > cap) *hi = cap;
    if (*lo > *hi) *lo = *hi;
}

static void run_part(void *arg, Py_ssize_t lo, Py_ssize_t hi) {
    PartsJob *job = (PartsJob *)arg;
    for (Py_ssize_t k = lo; k < hi; k++) {
        Cursor c = {job->base + job->cut[k], job->base + job->cut[k + 1], &job->defer[k]};
        job->status[k] = job->parse(job, (int)k, &c, job->first && k == 0, job->last && k + 1 == job->parts);
    }
}

/* Parse every part (the caller set job->parts, cut, and each part's columns from them): OK, REFUSE
 * (some part is refused) or ERROR (a Python exception is set). Called with the GIL held; releases it
 * while the parts are parsed. */
static int run_parts(PartsJob *job) {
    Py_ssize_t bounds[DETEVAL_MAX_PARTS + 1];
    for (int k = 0; k <= job->parts; k++) bounds[k] = k;
    for (int k = 0; k < job->parts; k++) {
        memset(&job->defer[k], 0, sizeof job->defer[k]);
        job->status[k] = REFUSE;
    }
    Py_BEGIN_ALLOW_THREADS
    parallel_parts(bounds, job->parts, run_part, job);
    Py_END_ALLOW_THREADS
    int status = OK, no_memory = 0;
    for (int k = 0; k < job->parts; k++) {
        no_memory |= job->defer[k].no_memory;
        if (job->status[k] != OK) status = REFUSE;
    }
    for (int k = 0; k < job->parts && status == OK; k++) {
        const Deferred *d = &job->defer[k];
        for (Py_ssize_t i = 0; i < d->n && status == OK; i++) {
            double value;
            status = slow_double(d->items[i].start, d->items[i].stop, &value);
            if (status == OK && !isfinite(value)) status = REFUSE; /* as parse_double refuses it */
            if (status == OK) *d->items[i].out = value;
        }
    }
    for (int k = 0; k < job->parts; k++) free(job->defer[k].items);
    if (no_memory && status != ERROR) {
        PyErr_NoMemory();
        status = ERROR;
    }
    return status;
}

/* Move part k's ``n[k]`` rows (``item`` bytes each, from its region's start ``lo[k]``) behind the
 * previous parts' rows; returns the total. Part 0's rows are in place already. */
static Py_ssize_t join_rows(char *data, Py_ssize_t item, int parts, const Py_ssize_t *lo, const Py_ssize_t *n) {
    Py_ssize_t at = n[0];
    for (int k = 1; k < parts; k++) {
        if (n[k] && lo[k] != at) memmove(data + at * item, data + lo[k] * item, (size_t)(n[k] * item));
        at += n[k];
    }
    return at;
}

/* How many calls parsed their parts again on one thread (a part was refused); read by the tests,
 * which check that a plain file is read on parts. Changed with the GIL held. */
static Py_ssize_t refused_parts = 0;

static PyObject *parts_refused(PyObject *self, PyObject *noargs) { return PyLong_FromSsize_t(refused_parts); }

/* ``threads`` as given (at least 1): the number of parts to cut. */
static int parse_threads(Py_ssize_t threads) {
    if (threads < 1) return 1;
    return threads > DETEVAL_MAX_PARTS ? DETEVAL_MAX_PARTS : (int)threads;
}

/* Part k's regions of the caller's columns, set before the parts run. */
typedef void (*PartSplit)(PartsJob *job, int k);
/* Once every part parsed OK: REFUSE when the parts disagree (one thread then decides), else OK. */
typedef int (*PartsAgree)(PartsJob *job);

static void parts_job(PartsJob *job, const char *raw, Py_ssize_t len, int first, int last, PartParser parse,
                      void *ctx) {
    job->base = raw;
    job->len = len;
    job->first = first;
    job->last = last;
    job->parse = parse;
    job->ctx = ctx;
}

/* The records of job->base[0, len) on ``threads`` parts cut after records (one part for one thread):
 * each part's regions set by ``split``, the parts run at once (run_parts) and, with ``agree``, checked
 * against each other. When a part is refused or the parts disagree, the whole is parsed again as one
 * part, whose outcome is the answer. OK: the caller joins job->parts parts' rows; REFUSE or ERROR. */
static int parse_parts(PartsJob *job, int threads, PartSplit split, PartsAgree agree) {
    for (;;) {
        if (threads > 1) {
            record_cuts(job, threads);
        } else {
            job->parts = 1;
            job->cut[0] = 0;
            job->cut[1] = job->len;
        }
        for (int k = 0; k < job->parts; k++) split(job, k);
        int status = run_parts(job);
        if (status == OK && agree) status = agree(job);
        if (status == REFUSE && job->parts > 1) {
            refused_parts++;
            threads = 1; /* the one-thread parse decides */
            continue;
        }
        return status;
    }
}

/* ---- box results on parts ---- */

typedef struct {
    int64_t *image_id, *category_id;
    double *bbox, *score;
    Py_ssize_t cap;
    Py_ssize_t lo[DETEVAL_MAX_PARTS], hi[DETEVAL_MAX_PARTS], n[DETEVAL_MAX_PARTS];
} BoxJob;

static int box_part(PartsJob *job, int k, Cursor *c, int first, int last) {
    BoxJob *b = (BoxJob *)job->ctx;
    const Py_ssize_t lo = b->lo[k];
    b->n[k] = 0;
    return parse_box_array(c, first, last, b->hi[k] - lo, b->image_id + lo, b->category_id + lo, b->bbox + 4 * lo,
                           b->score + lo, &b->n[k]);
}

static void box_split(PartsJob *job, int k) {
    BoxJob *b = (BoxJob *)job->ctx;
    part_region(job, k, b->cap, &b->lo[k], &b->hi[k]);
}

/* The box records of ``raw`` on ``threads`` parts (one when a part is refused): OK with ``*n`` set,
 * REFUSE or ERROR. */
static int parse_box_threads(const char *raw, Py_ssize_t len, int first, int last, int threads, BoxJob *b,
                             Py_ssize_t *n) {
    PartsJob job;
    parts_job(&job, raw, len, first, last, box_part, b);
    const int status = parse_parts(&job, threads, box_split, NULL);
    if (status != OK) return status;
    join_rows((char *)b->image_id, 8, job.parts, b->lo, b->n);
    join_rows((char *)b->category_id, 8, job.parts, b->lo, b->n);
    join_rows((char *)b->bbox, 32, job.parts, b->lo, b->n);
    *n = join_rows((char *)b->score, 8, job.parts, b->lo, b->n);
    return OK;
}

/* ValueError when a column the parser writes shares a byte with the text it reads, a key table
 * or another column (the same array passed twice, or views of one array): the parser would
 * change its own input while reading it. ``cols[0 .. n_cols)`` are checked against each other
 * and against ``inputs[0 .. n_inputs)``. */
static int columns_overlap(const Column *cols, int n_cols, const Py_buffer *const *inputs, int n_inputs) {
    for (int i = 0; i < n_cols; i++) {
        int hit = 0;
        for (int j = i + 1; j < n_cols && !hit; j++) hit = views_overlap(&cols[i].view, &cols[j].view);
        for (int j = 0; j < n_inputs && !hit; j++) hit = views_overlap(&cols[i].view, inputs[j]);
        if (hit) {
            PyErr_SetString(PyExc_ValueError, "an output column overlaps the input or another column");
            return 1;
        }
    }
    return 0;
}

/* Shared by box_results and box_results_part: parse ``raw_obj`` into the four columns. */
static PyObject *parse_box_columns(PyObject *raw_obj, int first, int last, int threads, PyObject *const *objs) {
    Py_buffer raw;
    Column cols[4];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    static const char kinds[4] = {'i', 'i', 'f', 'f'};
    for (int i = 0; i < 4; i++) {
        if (get_arr(objs[i], kinds[i], 1, &cols[i], "_colparse") != OK) goto done;
    }
    const Py_buffer *inputs[1] = {&raw};
    if (columns_overlap(cols, 4, inputs, 1)) goto done;
    Py_ssize_t capacity = cols[0].view.len / 8;
    if (cols[1].view.len / 8 < capacity) capacity = cols[1].view.len / 8;
    if (cols[2].view.len / 32 < capacity) capacity = cols[2].view.len / 32;
    if (cols[3].view.len / 8 < capacity) capacity = cols[3].view.len / 8;
    BoxJob b;
    b.image_id = (int64_t *)cols[0].view.buf;
    b.category_id = (int64_t *)cols[1].view.buf;
    b.bbox = (double *)cols[2].view.buf;
    b.score = (double *)cols[3].view.buf;
    b.cap = capacity;
    Py_ssize_t n = 0;
    int status = parse_box_threads((const char *)raw.buf, raw.len, first, last, threads, &b, &n);
    if (status == ERROR) goto done;
    result = status == OK ? PyLong_FromSsize_t(n) : Py_NewRef(Py_None);
done:
    for (int i = 0; i < 4; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&raw);
    return result;
}

PyDoc_STRVAR(box_results_doc,
             "box_results(raw, image_id, category_id, bbox, score, threads=1, /)\n--\n\n"
             "Parse the COCO box-results JSON ``raw`` into the given columns.\n\n"
             "``image_id`` and ``category_id`` are writable int64 buffers, ``bbox`` a float64 buffer of\n"
             "4 values per record, ``score`` a float64 buffer. Returns the number of records written,\n"
             "or None when ``raw`` is not exactly a non-empty array of plain box records or holds more\n"
             "records than the buffers do (nothing is checked beyond the shape).\n\n"
             "``threads``: parse on that many parts at once (cut after records, GIL released); the\n"
             "columns and the outcome are those of one thread.");

static PyObject *box_results(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *objs[4];
    Py_ssize_t threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOO|n:box_results", &raw_obj, &objs[0], &objs[1], &objs[2], &objs[3], &threads))
        return NULL;
    return parse_box_columns(raw_obj, 1, 1, parse_threads(threads), objs);
}

PyDoc_STRVAR(box_results_part_doc,
             "box_results_part(raw, first, last, image_id, category_id, bbox, score, threads=1, /)\n--\n\n"
             "Parse one part of a COCO box-results file into the given columns (as box_results).\n\n"
             "A file read in parts is cut right after a record's closing ``}``: ``first`` (the part\n"
             "starts the file: ``[`` and a record) and ``last`` (it ends the file: ``]`` and only\n"
             "whitespace after) say which grammar applies; a part that is not the last must end with a\n"
             "record, a later part starts with ``,`` (or ``]``). The parts read in order give the\n"
             "records box_results gives on the whole file. Returns the number of records written (0\n"
             "only for a last part holding just ``]``), or None when the part is not plain.");

static PyObject *box_results_part(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *objs[4];
    int first, last;
    Py_ssize_t threads = 1;
    if (!PyArg_ParseTuple(args, "OppOOOO|n:box_results_part", &raw_obj, &first, &last, &objs[0], &objs[1],
                          &objs[2], &objs[3], &threads))
        return NULL;
    return parse_box_columns(raw_obj, first, last, parse_threads(threads), objs);
}

/* ---- COCO instances: the top-level ``annotations`` array into columns ---- */

/* Deepest nesting skipped outside the annotations array (msgspec checks those bytes afterwards). */
#define MAX_SKIP_DEPTH 64
/* Deepest nesting inside a segmentation: a polygon list is 2 levels, an RLE object 2 (its size). */
#define MAX_SEGM_DEPTH 4

/* Skip a JSON string (the cursor on its opening quote) by structure only: quotes and escapes. */
/* A word with a zero byte (exact as to whether one exists). */
#define WORD_HAS_ZERO(v) (((v) - 0x0101010101010101ULL) & ~(v) & 0x8080808080808080ULL)

static int skip_string_loosely(Cursor *c) {
    c->p++;
    while (c->p < c->end) {
        /* eight bytes at a time past those with neither a quote nor a backslash (long RLE strings) */
        while (c->end - c->p >= 8) {
            uint64_t w;
            memcpy(&w, c->p, 8);
            if (WORD_HAS_ZERO(w ^ 0x2222222222222222ULL) | WORD_HAS_ZERO(w ^ 0x5C5C5C5C5C5C5C5CULL)) break;
            c->p += 8;
        }
        if (c->p >= c->end) break;
        char ch = *c->p++;
        if (ch == '"') return OK;
        if (ch == '\\') {
            if (c->p >= c->end) return REFUSE;
            c->p++;
        }
    }
    return REFUSE;
}

/* Whether ``ch`` is one of the bytes skip_value_loosely acts on: a quote or a bracket. */
static inline int is_structural(char ch) { return ch == '"' || ch == '{' || ch == '[' || ch == '}' || ch == ']'; }

/* The first structural byte (is_structural) at or after p, or end: eight bytes at a time, then
 * byte by byte within the word that has one. ``x | 0x20`` maps '[' to '{' and ']' to '}' and no
 * other byte to either. */
static inline const char *next_structural(const char *p, const char *end) {
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        const uint64_t folded = w | 0x2020202020202020ULL;
        const uint64_t quote = w ^ 0x2222222222222222ULL;
        const uint64_t open = folded ^ 0x7B7B7B7B7B7B7B7BULL;
        const uint64_t close = folded ^ 0x7D7D7D7D7D7D7D7DULL;
        if (WORD_HAS_ZERO(quote) | WORD_HAS_ZERO(open) | WORD_HAS_ZERO(close)) break;
        p += 8;
    }
    while (p < end && !is_structural(*p)) p++;
    return p;
}

/* Skip one JSON value by structure only (strings, brackets; scalars to the next delimiter). Exact
 * on valid JSON; on anything else the bytes left for msgspec make it refuse the document. */
static int skip_value_loosely(Cursor *c) {
    skip_ws(c);
    if (c->p >= c->end) return REFUSE;
    if (*c->p == '"') return skip_string_loosely(c);
    if (*c->p != '{' && *c->p != '[') {
        const char *start = c->p;
        while (c->p < c->end && !is_ws(*c->p) && *c->p != ',' && *c->p != '}' && *c->p != ']') c->p++;
        return c->p > start ? OK : REFUSE;
    }
    int depth = 0;
    while (c->p < c->end) {
        c->p = next_structural(c->p, c->end);
        if (c->p >= c->end) break;
        char ch = *c->p;
        if (ch == '"') {
            if (skip_string_loosely(c) != OK) return REFUSE;
            continue;
        }
        c->p++;
        if (ch == '{' || ch == '[') {
            if (++depth > MAX_SKIP_DEPTH) return REFUSE;
        } else if (ch == '}' || ch == ']') {
            if (--depth == 0) return OK;
        }
    }
    return REFUSE;
}

/* A JSON number inside a segmentation, checked and not converted: JSON's grammar, at most 18
 * digits for an integer token, finite (only a token with an exponent is converted to check it). */
static int check_segm_number(Cursor *c) {
    const char *start = c->p, *p = c->p, *end = c->end;
    if (p < end && *p == '-') p++;
    if (p >= end || !is_digit(*p)) return REFUSE;
    const char *digits = p;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && is_digit(*p)) return REFUSE; /* leading zero */
    int is_integer = 1;
    if (p < end && *p == '.') {
        is_integer = 0;
        p++;
        if (p >= end || !is_digit(*p)) return REFUSE;
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        double value;
        c->p = start;
        Deferred *d = c->defer;
        const Py_ssize_t put_aside = d ? d->n : 0;
        int status = parse_double(c, &value, JSON_NUMBER); /* refuses an overflow to infinity */
        if (status == OK && d && d->n > put_aside) {
            /* without the GIL its finiteness is unknown here (and ``value`` is gone by the join):
             * refused, so that the one-thread parse, which converts it at once, decides */
            d->n = put_aside;
            return REFUSE;
        }
        return status;
    }
    if ((is_integer && p - digits > 18) || p - digits > 300) return REFUSE; /* no exponent: finite below 309 digits */
    c->p = p;
    return OK;
}

/* An array of numbers and arrays (a polygon list, an RLE size, uncompressed counts). */
static int check_number_array(Cursor *c, int depth) {
    if (depth > MAX_SEGM_DEPTH || expect(c, '[') != OK) return REFUSE;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return OK;
    }
    for (;;) {
        skip_ws(c);
        if (c->p >= c->end) return REFUSE;
        int status = *c->p == '[' ? check_number_array(c, depth + 1) : check_segm_number(c);
        if (status != OK) return status;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        return expect(c, ']');
    }
}

/* Whether any of the 8 bytes of ``v`` is a quote, a backslash, below 0x20 or above 0x7e (exact: no
 * byte is missed, and none is reported that is not one). */
static inline int any_special(uint64_t v) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    const uint64_t quote = v ^ (ones * '"'), slash = v ^ (ones * '\\'), del = v ^ (ones * 0x7f);
    const uint64_t zero_in = ((quote - ones) & ~quote) | ((slash - ones) & ~slash) | ((del - ones) & ~del);
    const uint64_t below_space = (v - ones * 0x20) & ~v;
    return ((zero_in | below_space) & high) != 0 || (v & high) != 0;
}

/* An RLE string: printable ASCII, the only escapes ``\\`` and ``\/`` (no quote inside). It may open
 * with ``:`` (a run of 10, in pycocotools' alphabet '0'..'o'): the keys of the annotations are
 * checked here, by structure, and the msgspec twin counts keys outside strings only. */
static int check_counts_string(Cursor *c) {
    if (expect(c, '"') != OK) return REFUSE;
    const char *p = c->p, *const end = c->end;
    for (;;) {
        while (end - p >= 8) { /* plain stretches 8 bytes at a time */
            uint64_t v;
            memcpy(&v, p, 8);
            if (any_special(v)) break;
            p += 8;
        }
        if (p >= end) return REFUSE;
        const char ch = *p++;
        if (ch == '"') break;
        if (ch < 0x20 || ch > 0x7e) return REFUSE;
        if (ch == '\\') {
            if (p >= end || (*p != '\\' && *p != '/')) return REFUSE;
            p++;
        }
    }
    c->p = p;
    return OK;
}

/* A segmentation: a polygon list (numbers and arrays), or an RLE object with exactly ``size`` (an
 * array) and ``counts`` (a string or an array). Anything else (null, another key, a nested
 * object, a non-ASCII byte, an escaped quote) is refused: the msgspec path decides about it. */
static int check_segmentation(Cursor *c) {
    skip_ws(c);
    if (c->p >= c->end) return REFUSE;
    if (*c->p == '[') return check_number_array(c, 1);
    if (*c->p != '{') return REFUSE;
    c->p++;
    int seen = 0;
    for (int i = 0; i < 2; i++) {
        if (expect(c, '"') != OK) return REFUSE;
        int key;
        if (c->end - c->p >= 5 && memcmp(c->p, "size\"", 5) == 0) {
            key = 1;
            c->p += 5;
        } else if (c->end - c->p >= 7 && memcmp(c->p, "counts\"", 7) == 0) {
            key = 2;
            c->p += 7;
        } else {
            return REFUSE;
        }
        if ((seen & key) || expect(c, ':') != OK) return REFUSE;
        seen |= key;
        skip_ws(c);
        int status;
        if (key == 1 || (c->p < c->end && *c->p == '['))
            status = check_number_array(c, 2);
        else
            status = check_counts_string(c);
        if (status != OK) return status;
        if (expect(c, i == 0 ? ',' : '}') != OK) return REFUSE;
    }
    return OK;
}

enum {
    A_ID,
    A_IMAGE_ID,
    A_CATEGORY_ID,
    A_BBOX,
    A_AREA,
    A_ISCROWD,
    A_SEGMENTATION,
    A_IGNORE,
    A_DIFFICULT,
    A_KEYPOINTS,
    A_NUM_KEYPOINTS,
    N_ANN_KEYS
};

/* "num_keypoints" before "keypoints" is not needed (match_key compares from the opening quote). */
static const char *const ANN_KEYS[N_ANN_KEYS] = {"id\"",        "image_id\"",     "category_id\"", "bbox\"",
                                                 "area\"",      "iscrowd\"",      "segmentation\"", "ignore\"",
                                                 "difficult\"", "keypoints\"",    "num_keypoints\""};

/* The six keys every annotation has. */
#define ANN_REQUIRED ((1 << A_ID) | (1 << A_IMAGE_ID) | (1 << A_CATEGORY_ID) | (1 << A_BBOX) | (1 << A_AREA) | (1 << A_ISCROWD))

static int parse_coordinate(Cursor *c, double *out); /* below, with the segm results */

typedef struct {
    int64_t *id, *image_id, *category_id, *iscrowd, *ignore, *difficult, *segm_start, *segm_end;
    double *bbox, *area;
    /* Keypoints, when the caller gave their buffers (else the keys are refused): every number of
     * every record's list in order (``per_record`` of them each, the first record's count, a
     * non-zero multiple of 3; every record has the list or none does), ``num_keypoints`` (-1
     * where absent). */
    double *kp_numbers;
    int64_t *num_keypoints;
    Py_ssize_t kp_capacity, kp_count, kp_per_record, kp_records;
} AnnColumns;

#if COLPARSE_FAST_FLOATS
/* Eight bytes at ``p`` as one little-endian word (any alignment). */
static inline uint64_t load_word(const char *p) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* How many of the eight bytes of ``w`` (first byte lowest) lead as ASCII digits (8: all). A byte is
 * a digit when ``b ^ '0'`` is at most 9: its high bit, or that of ``(b ^ '0') + 0x76``, is set
 * otherwise. A carry out of a byte only reaches the bytes after it, past the first non-digit. */
static inline int leading_digits(uint64_t w) {
    const uint64_t x = w ^ 0x3030303030303030ULL;
    const uint64_t non_digit = ((x + 0x7676767676767676ULL) | x) & 0x8080808080808080ULL;
    return non_digit ? __builtin_ctzll(non_digit) >> 3 : 8;
}

/* The value of the first ``len`` (1..7) digit bytes of ``w`` (first byte most significant): the
 * digits moved to the word's top, the bytes below them zero, then summed pairwise in three steps. */
static inline uint64_t digits_value(uint64_t w, int len) {
    uint64_t d = (w & 0x0F0F0F0F0F0F0F0FULL) << (8 * (8 - len));
    d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFULL;
    d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFULL;
    return (d * 10000 + (d >> 32)) & 0xFFFFFFFFULL;
}
#endif

/* A keypoint list's number: parse_coordinate's value, the common token read a word at a time.
 *
 * The common token is ``-?`` then 1..7 digits (no leading zero but a lone ``0``), optionally ``.``
 * and 1..7 digits, followed by a byte that is neither ``.`` nor ``e``/``E`` (nor a digit), all within
 * the cursor with eight bytes to spare at each run of digits. Its mantissa (every digit, at most 14)
 * and fraction length are parse_double's fast path's, and so is the one division: the same double,
 * and ``-0.0`` / ``-0`` as there. Every other token goes to parse_coordinate. */
static inline int parse_keypoint_number(Cursor *c, double *out) {
#if COLPARSE_FAST_FLOATS
    const char *p = c->p, *end = c->end;
    const int negative = p < end && *p == '-';
    p += negative;
    if (end - p >= 8) {
        const uint64_t w = load_word(p);
        const int n_int = leading_digits(w);
        if (n_int > 0 && n_int < 8 && !(n_int > 1 && *p == '0')) {
            uint64_t m = digits_value(w, n_int);
            const char *q = p + n_int;
            int fraction = -1;
            if (*q == '.' && end - (q + 1) >= 8) {
                const uint64_t f = load_word(q + 1);
                const int n_frac = leading_digits(f);
                if (n_frac > 0 && n_frac < 8) {
                    static const uint64_t SCALE[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
                    m = m * SCALE[n_frac] + digits_value(f, n_frac);
                    fraction = n_frac;
                    q += 1 + n_frac;
                }
            }
            if (*q != '.' && *q != 'e' && *q != 'E') {
                c->p = q;
                *out = short_json_decimal(m, fraction, negative);
                return OK;
            }
        }
    }
#endif
    return parse_coordinate(c, out);
}

/* ``[x1, y1, v1, ...]`` into ``numbers[*n ...]`` (at most ``cap`` in all): as many JSON numbers as
 * the first list had (``*per_record``, set by the first list: a multiple of 3). The one reader of
 * keypoint lists, for the ground truth's annotations and for keypoint results. */
static int parse_keypoint_numbers(Cursor *c, double *numbers, Py_ssize_t *n, Py_ssize_t cap,
                                  Py_ssize_t *per_record) {
    const Py_ssize_t first = *n;
    if (expect(c, '[') != OK) return REFUSE;
    for (;;) {
        if (*n >= cap) return REFUSE;
        skip_ws(c);
        int status = parse_keypoint_number(c, &numbers[*n]);
        if (status != OK) return status;
        (*n)++;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, ']') != OK) return REFUSE;
        break;
    }
    const Py_ssize_t count = *n - first;
    if (*per_record == 0) {
        if (count % 3) return REFUSE;
        *per_record = count;
    }
    return count == *per_record ? OK : REFUSE;
}

/* ``[x1, y1, v1, ...]`` of annotation ``i`` into the keypoint numbers (see AnnColumns). */
static int parse_annotation_keypoints(Cursor *c, AnnColumns *cols) {
    int status = parse_keypoint_numbers(c, cols->kp_numbers, &cols->kp_count, cols->kp_capacity,
                                        &cols->kp_per_record);
    if (status == OK) cols->kp_records++;
    return status;
}

/* One annotation record into row ``i`` of the columns; ``base`` is the start of the file. */
static int parse_annotation(Cursor *c, const char *base, AnnColumns *cols, Py_ssize_t i) {
    int seen = 0, status;
    if (expect(c, '{') != OK) return REFUSE;
    cols->ignore[i] = 0;
    cols->difficult[i] = 0;
    cols->segm_start[i] = -1;
    cols->segm_end[i] = -1;
    if (cols->num_keypoints) cols->num_keypoints[i] = -1;
    for (;;) {
        int key = match_key(c, ANN_KEYS, cols->kp_numbers ? N_ANN_KEYS : A_KEYPOINTS);
        if (key < 0 || (seen & (1 << key))) return REFUSE; /* unknown or repeated */
        seen |= 1 << key;
        if (expect(c, ':') != OK) return REFUSE;
        skip_ws(c);
        switch (key) {
        case A_ID:
            status = parse_int64(c, &cols->id[i]);
            break;
        case A_IMAGE_ID:
            status = parse_int64(c, &cols->image_id[i]);
            break;
        case A_CATEGORY_ID:
            status = parse_int64(c, &cols->category_id[i]);
            break;
        case A_ISCROWD:
            status = parse_int64(c, &cols->iscrowd[i]);
            break;
        case A_IGNORE:
            status = parse_int64(c, &cols->ignore[i]);
            break;
        case A_DIFFICULT:
            status = parse_int64(c, &cols->difficult[i]);
            break;
        case A_AREA:
            status = parse_double(c, &cols->area[i], JSON_NUMBER);
            break;
        case A_SEGMENTATION:
            cols->segm_start[i] = c->p - base;
            status = check_segmentation(c);
            cols->segm_end[i] = c->p - base;
            break;
        case A_KEYPOINTS:
            status = parse_annotation_keypoints(c, cols);
            break;
        case A_NUM_KEYPOINTS:
            status = parse_int64(c, &cols->num_keypoints[i]);
            break;
        default: /* A_BBOX */
            status = parse_box(c, &cols->bbox[4 * i]);
        }
        if (status != OK) return status;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, '}') != OK) return REFUSE;
        /* keypoints in every annotation or in none (the first decides) */
        if (cols->kp_numbers && cols->kp_records != (cols->kp_records ? i + 1 : 0)) return REFUSE;
        return (seen & ANN_REQUIRED) == ANN_REQUIRED ? OK : REFUSE;
    }
}

/* The annotations array (the cursor on it) into the columns; its record count in ``n_out``. */
static int parse_annotations(Cursor *c, const char *base, AnnColumns *cols, Py_ssize_t capacity,
                             Py_ssize_t *n_out) {
    Py_ssize_t n = 0;
    if (expect(c, '[') != OK) return REFUSE;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        *n_out = 0;
        return OK;
    }
    for (;;) {
        if (n >= capacity) return REFUSE;
        int status = parse_annotation(c, base, cols, n);
        if (status != OK) return status;
        n++;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, ']') != OK) return REFUSE;
        *n_out = n;
        return OK;
    }
}

/* ---- the annotations array on parts (run_parts) ---- */

/* The annotations of ``c`` into ``cols`` (from row 0, at most ``capacity``): the whole array
 * (``first`` and ``last``: ``[`` ... ``]``, or ``[]``) or one part of it cut after a record's ``}``,
 * in the grammar of parse_record_array; nothing may follow the last part's ``]`` (the cut ends there). */
typedef struct {
    const char *base;
    AnnColumns *cols;
} AnnRows;

static int annotation_row(Cursor *c, void *ctx, Py_ssize_t i) {
    AnnRows *a = (AnnRows *)ctx;
    return parse_annotation(c, a->base, a->cols, i);
}

static int parse_annotation_array(Cursor *c, int first, int last, const char *base, AnnColumns *cols,
                                  Py_ssize_t capacity, Py_ssize_t *n_out) {
    AnnRows rows = {base, cols};
    return parse_record_array(c, first, last, 1, 0, capacity, annotation_row, &rows, n_out);
}

typedef struct {
    AnnColumns whole, part[DETEVAL_MAX_PARTS];
    Py_ssize_t capacity;
    Py_ssize_t lo[DETEVAL_MAX_PARTS], hi[DETEVAL_MAX_PARTS], klo[DETEVAL_MAX_PARTS], khi[DETEVAL_MAX_PARTS];
    Py_ssize_t n[DETEVAL_MAX_PARTS];
} AnnJob;

static int annotation_part(PartsJob *job, int k, Cursor *c, int first, int last) {
    AnnJob *j = (AnnJob *)job->ctx;
    return parse_annotation_array(c, first, last, job->base, &j->part[k], j->hi[k] - j->lo[k], &j->n[k]);
}

/* The annotations array at ``[start, stop)`` of ``raw`` (``stop``: right after its ``]``, found by a
 * loose scan) on ``threads`` parts into j->whole: OK with ``*n`` and the keypoint counts set, REFUSE
 * (some part refused, or the parts disagree on keypoints: the caller parses on one thread) or ERROR. */
static int parse_annotations_threads(const char *raw, Py_ssize_t start, Py_ssize_t stop, int threads, AnnJob *j,
                                     Py_ssize_t *n) {
    PartsJob job;
    /* the cuts and regions are offsets from the array's start; the segm spans from raw (annotation_part) */
    parts_job(&job, raw + start, stop - start, 1, 1, annotation_part, j);
    record_cuts(&job, threads);
    const AnnColumns *w = &j->whole;
    for (int k = 0; k < job.parts; k++) { /* regions in proportion to the part's bytes within the array */
        part_region(&job, k, j->capacity, &j->lo[k], &j->hi[k]);
        j->klo[k] = j->khi[k] = 0;
        if (w->kp_numbers) part_region(&job, k, w->kp_capacity, &j->klo[k], &j->khi[k]);
    }
    job.base = raw;
    for (int k = 0; k <= job.parts; k++) job.cut[k] += start;
    job.len = stop;
    for (int k = 0; k < job.parts; k++) {
        AnnColumns *s = &j->part[k];
        const Py_ssize_t lo = j->lo[k], klo = j->klo[k], khi = j->khi[k];
        *s = *w;
        s->id += lo;
        s->image_id += lo;
        s->category_id += lo;
        s->iscrowd += lo;
        s->ignore += lo;
        s->difficult += lo;
        s->segm_start += lo;
        s->segm_end += lo;
        s->bbox += 4 * lo;
        s->area += lo;
        if (s->kp_numbers) {
            s->kp_numbers += klo;
            s->num_keypoints += lo;
            s->kp_capacity = khi - klo;
        }
        s->kp_count = s->kp_per_record = s->kp_records = 0;
    }
    int status = run_parts(&job);
    /* keypoints in every annotation or in none, of one length: the first annotation decides */
    int has_kp = -1;
    Py_ssize_t per_record = 0;
    for (int k = 0; k < job.parts && status == OK; k++) {
        const AnnColumns *s = &j->part[k];
        if (j->n[k] == 0) continue;
        const int part_has = s->kp_records > 0;
        if (has_kp < 0) has_kp = part_has;
        else if (has_kp != part_has) status = REFUSE;
        if (part_has) {
            if (per_record == 0) per_record = s->kp_per_record;
            else if (s->kp_per_record != per_record) status = REFUSE;
        }
    }
    if (status != OK) return status;
    Py_ssize_t kp[DETEVAL_MAX_PARTS], kp_records = 0;
    for (int k = 0; k < job.parts; k++) {
        kp[k] = j->part[k].kp_count;
        kp_records += j->part[k].kp_records;
    }
    AnnColumns *o = &j->whole;
    int64_t *const int_cols[8] = {o->id, o->image_id, o->category_id, o->iscrowd,
                                  o->ignore, o->difficult, o->segm_start, o->segm_end};
    for (int i = 0; i < 8; i++) join_rows((char *)int_cols[i], 8, job.parts, j->lo, j->n);
    join_rows((char *)o->bbox, 32, job.parts, j->lo, j->n);
    *n = join_rows((char *)o->area, 8, job.parts, j->lo, j->n);
    if (o->kp_numbers) {
        join_rows((char *)o->num_keypoints, 8, job.parts, j->lo, j->n);
        o->kp_count = join_rows((char *)o->kp_numbers, 8, job.parts, j->klo, kp);
        o->kp_per_record = per_record;
        o->kp_records = kp_records;
    }
    return OK;
}

PyDoc_STRVAR(instances_doc,
             "instances(raw, id, image_id, category_id, bbox, area, iscrowd, ignore, difficult,\n"
             "          segm_start, segm_end, keypoints=None, num_keypoints=None, threads=1, /)\n--\n\n"
             "Parse the ``annotations`` array of the COCO instances JSON object ``raw`` into columns.\n\n"
             "Every column is a writable int64 buffer but ``bbox`` (float64, 4 per record) and ``area``\n"
             "(float64). ``ignore`` and ``difficult`` are 0 where absent; ``segm_start``/``segm_end`` are\n"
             "the byte offsets of each raw segmentation in ``raw`` (-1 where absent). Returns\n"
             "``(n, start, stop)``: the record count and the array's byte span (the caller decodes the\n"
             "rest of the document with the span replaced by ``[]``), or None when the top level is not\n"
             "an object, has no plain ``annotations`` key, or any annotation is not plain (the only\n"
             "keys id, image_id, category_id, bbox, area, iscrowd, segmentation, ignore, difficult,\n"
             "the first six present, each once; integer ids and flags within int64; finite numbers;\n"
             "a segmentation that is a polygon list or an RLE object {size, counts}).\n\n"
             "With the two optional buffers ``keypoints`` (float64) and ``num_keypoints`` (int64, one\n"
             "per record), annotations may also have ``keypoints`` (a list of JSON numbers, finite,\n"
             "integers of at most 18 digits, the same non-zero multiple of 3 in every annotation; in\n"
             "every annotation or in none) and ``num_keypoints`` (an int64; -1 where absent); every\n"
             "number of the lists is written to ``keypoints`` in order and the result is\n"
             "``(n, start, stop, numbers_per_record)`` (0 when no annotation has keypoints).\n\n"
             "``threads``: the array is parsed on that many parts at once (cut after records, GIL\n"
             "released; the keypoint buffers may be None), with the one thread's columns and outcome.");

static PyObject *instances(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *objs[12] = {NULL};
    Py_ssize_t threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOO|OOn:instances", &raw_obj, &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11],
                          &threads))
        return NULL;
    if (objs[10] == Py_None && objs[11] == Py_None) objs[10] = objs[11] = NULL;
    if ((objs[10] == NULL) != (objs[11] == NULL)) {
        PyErr_SetString(PyExc_TypeError, "instances: give both keypoints and num_keypoints, or neither");
        return NULL;
    }
    const int n_cols = objs[10] ? 12 : 10;
    Py_buffer raw;
    Column cols[12];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    /* id, image_id, category_id, bbox, area, iscrowd, ignore, difficult, segm_start, segm_end,
     * keypoints, num_keypoints */
    static const char kinds[12] = {'i', 'i', 'i', 'f', 'f', 'i', 'i', 'i', 'i', 'i', 'f', 'i'};
    Py_ssize_t capacity = PY_SSIZE_T_MAX;
    for (int i = 0; i < n_cols; i++) {
        if (get_arr(objs[i], kinds[i], 1, &cols[i], "_colparse") != OK) goto done;
        if (i == 10) continue; /* the keypoint numbers: their own capacity */
        Py_ssize_t rows = cols[i].view.len / (i == 3 ? 32 : 8);
        if (rows < capacity) capacity = rows;
    }
    const Py_buffer *inputs[1] = {&raw};
    if (columns_overlap(cols, n_cols, inputs, 1)) goto done;
    AnnColumns ann = {
        (int64_t *)cols[0].view.buf,
        (int64_t *)cols[1].view.buf,
        (int64_t *)cols[2].view.buf,
        (int64_t *)cols[5].view.buf,
        (int64_t *)cols[6].view.buf,
        (int64_t *)cols[7].view.buf,
        (int64_t *)cols[8].view.buf,
        (int64_t *)cols[9].view.buf,
        (double *)cols[3].view.buf,
        (double *)cols[4].view.buf,
        n_cols == 12 ? (double *)cols[10].view.buf : NULL,
        n_cols == 12 ? (int64_t *)cols[11].view.buf : NULL,
        n_cols == 12 ? cols[10].view.len / 8 : 0,
        0,
        0,
        0,
    };
    const char *base = (const char *)raw.buf;
    Cursor c = {base, base + raw.len};
    Py_ssize_t n = 0, start = -1, stop = -1;
    int status = expect(&c, '{');
    while (status == OK) {
        skip_ws(&c);
        if (c.p >= c.end || *c.p != '"') {
            status = REFUSE;
            break;
        }
        int is_annotations = c.end - c.p >= 13 && memcmp(c.p, "\"annotations\"", 13) == 0;
        if (skip_string_loosely(&c) != OK || expect(&c, ':') != OK) {
            status = REFUSE;
            break;
        }
        if (is_annotations) {
            skip_ws(&c);
            start = c.p - base;
            int on_parts = 0;
            if (threads > 1) {
                /* the array's end by a loose scan, then its parts at once; a refused part (or a
                 * scan that fails) leaves the one-thread parse below to decide */
                Cursor scan = c;
                if (skip_value_loosely(&scan) == OK) {
                    AnnJob *j = (AnnJob *)PyMem_Calloc(1, sizeof(AnnJob));
                    if (j == NULL) {
                        PyErr_NoMemory();
                        status = ERROR;
                        break;
                    }
                    j->whole = ann;
                    j->capacity = capacity;
                    status = parse_annotations_threads(base, start, scan.p - base, parse_threads(threads), j, &n);
                    if (status == OK) {
                        ann = j->whole;
                        c.p = scan.p;
                        on_parts = 1;
                    } else if (status == REFUSE) {
                        refused_parts++;
                    }
                    PyMem_Free(j);
                    if (status == ERROR) break;
                }
            }
            if (!on_parts) status = parse_annotations(&c, base, &ann, capacity, &n);
            stop = c.p - base;
            break; /* what follows is msgspec's to check, with the rest of the document */
        }
        if (skip_value_loosely(&c) != OK || expect(&c, ',') != OK) status = REFUSE;
    }
    if (status == ERROR) goto done;
    if (status != OK)
        result = Py_NewRef(Py_None);
    else if (n_cols == 12)
        result = Py_BuildValue("nnnn", n, start, stop, ann.kp_per_record);
    else
        result = Py_BuildValue("nnn", n, start, stop);
done:
    for (int i = 0; i < n_cols; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&raw);
    return result;
}

/* ---- COCO instances: the images array ---- */

/* An image object's keys: the four deteval reads, and COCO's four others (their values skipped). */
enum { I_ID, I_WIDTH, I_HEIGHT, I_FILE_NAME, I_LICENSE, I_COCO_URL, I_FLICKR_URL, I_DATE_CAPTURED, N_IMAGE_KEYS };
static const char *const IMAGE_KEYS[N_IMAGE_KEYS] = {"id\"",      "width\"",    "height\"",      "file_name\"",
                                                     "license\"", "coco_url\"", "flickr_url\"", "date_captured\""};

typedef struct {
    int64_t *id;
    double *width, *height; /* NaN where absent */
    PyObject *names;        /* a list: each file_name as str, None where absent */
} ImageColumns;

/* A JSON string without escapes or control characters (the cursor on its opening quote): its bytes
 * between the quotes in [*s, *s + *len). Bytes from 0x80 only when ``utf8`` (decoded by the
 * caller, strictly); anything else refuses: the full loader decides what it means. */
static int plain_string(Cursor *c, const char **s, Py_ssize_t *len, int utf8) {
    if (c->p >= c->end || *c->p != '"') return REFUSE;
    const char *p = ++c->p;
    while (p < c->end && *p != '"') {
        const unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 || ch == '\\' || (ch >= 0x80 && !utf8)) return REFUSE;
        p++;
    }
    if (p >= c->end) return REFUSE;
    *s = c->p;
    *len = p - c->p;
    c->p = p + 1;
    return OK;
}

/* A value deteval does not read (license, coco_url, ...): a plain ASCII string, an int64 or null. */
static int skip_image_extra(Cursor *c) {
    const char *s;
    Py_ssize_t len;
    int64_t value;
    if (c->p < c->end && *c->p == '"') return plain_string(c, &s, &len, 0);
    if (c->end - c->p >= 4 && memcmp(c->p, "null", 4) == 0) {
        c->p += 4;
        return OK;
    }
    return parse_int64(c, &value);
}

/* One image object into row ``i``: ``id`` required, each key once, no other key. */
static int parse_image(Cursor *c, ImageColumns *cols, Py_ssize_t i) {
    int seen = 0, status;
    const char *name = NULL;
    Py_ssize_t name_len = 0;
    if (expect(c, '{') != OK) return REFUSE;
    cols->width[i] = cols->height[i] = Py_NAN;
    for (;;) {
        const int key = match_key(c, IMAGE_KEYS, N_IMAGE_KEYS);
        if (key < 0 || (seen & (1 << key))) return REFUSE; /* unknown or repeated */
        seen |= 1 << key;
        if (expect(c, ':') != OK) return REFUSE;
        skip_ws(c);
        switch (key) {
        case I_ID:
            status = parse_int64(c, &cols->id[i]);
            break;
        case I_WIDTH:
            status = parse_double(c, &cols->width[i], JSON_NUMBER);
            break;
        case I_HEIGHT:
            status = parse_double(c, &cols->height[i], JSON_NUMBER);
            break;
        case I_FILE_NAME:
            status = plain_string(c, &name, &name_len, 1);
            break;
        default:
            status = skip_image_extra(c);
        }
        if (status != OK) return status;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, '}') != OK || !(seen & (1 << I_ID))) return REFUSE;
        break;
    }
    PyObject *item = name == NULL ? Py_NewRef(Py_None) : PyUnicode_DecodeUTF8(name, name_len, "strict");
    if (item == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return ERROR;
        PyErr_Clear(); /* not UTF-8: the full loader names it */
        return REFUSE;
    }
    status = PyList_Append(cols->names, item);
    Py_DECREF(item);
    return status < 0 ? ERROR : OK;
}

/* The images array (the cursor on it) into the columns; its length in ``n_out``. */
static int parse_images(Cursor *c, ImageColumns *cols, Py_ssize_t capacity, Py_ssize_t *n_out) {
    Py_ssize_t n = 0;
    if (expect(c, '[') != OK) return REFUSE;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        *n_out = 0;
        return OK;
    }
    for (;;) {
        if (n >= capacity) return REFUSE;
        const int status = parse_image(c, cols, n);
        if (status != OK) return status;
        n++;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, ']') != OK) return REFUSE;
        *n_out = n;
        return OK;
    }
}

PyDoc_STRVAR(images_doc,
             "images(raw, id, width, height, /)\n--\n\n"
             "Parse the ``images`` array of the COCO instances JSON object ``raw`` into columns.\n\n"
             "``id`` is a writable int64 buffer, ``width`` and ``height`` float64 (NaN where absent),\n"
             "one row per image. Returns ``(n, start, stop, file_names)``: the image count, the array's\n"
             "byte span (the caller decodes the rest of the document with the span replaced by ``[]``)\n"
             "and each image's ``file_name`` (a str, None where absent); or None when the top level is\n"
             "not an object, has no ``images`` key written plainly, or any image is not plain: keys\n"
             "among id, width, height, file_name, license, coco_url, flickr_url, date_captured, each\n"
             "once, ``id`` present; an int64 ``id``; finite JSON numbers for the sizes; a ``file_name``\n"
             "string without escapes or control characters, in UTF-8; the other four an ASCII string\n"
             "without escapes or control characters, an int64 or null.");

static PyObject *images(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *objs[3];
    if (!PyArg_ParseTuple(args, "OOOO:images", &raw_obj, &objs[0], &objs[1], &objs[2])) return NULL;
    Py_buffer raw;
    Column cols[3];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL, *names = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    static const char kinds[3] = {'i', 'f', 'f'};
    Py_ssize_t capacity = PY_SSIZE_T_MAX;
    for (int i = 0; i < 3; i++) {
        if (get_arr(objs[i], kinds[i], 1, &cols[i], "_colparse") != OK) goto done;
        if (cols[i].view.len / 8 < capacity) capacity = cols[i].view.len / 8;
    }
    const Py_buffer *inputs[1] = {&raw};
    if (columns_overlap(cols, 3, inputs, 1)) goto done;
    if ((names = PyList_New(0)) == NULL) goto done;
    ImageColumns image_cols = {(int64_t *)cols[0].view.buf, (double *)cols[1].view.buf,
                               (double *)cols[2].view.buf, names};
    const char *base = (const char *)raw.buf;
    Cursor c = {base, base + raw.len, NULL};
    Py_ssize_t n = 0, start = -1, stop = -1;
    int status = expect(&c, '{');
    while (status == OK) {
        skip_ws(&c);
        if (c.p >= c.end || *c.p != '"') {
            status = REFUSE;
            break;
        }
        const int is_images = c.end - c.p >= 8 && memcmp(c.p, "\"images\"", 8) == 0;
        if (skip_string_loosely(&c) != OK || expect(&c, ':') != OK) {
            status = REFUSE;
            break;
        }
        if (is_images) {
            skip_ws(&c);
            start = c.p - base;
            status = parse_images(&c, &image_cols, capacity, &n);
            stop = c.p - base;
            break; /* the rest of the document is the caller's to decode and check */
        }
        if (skip_value_loosely(&c) != OK || expect(&c, ',') != OK) status = REFUSE;
    }
    if (status == ERROR) goto done;
    result = status == OK ? Py_BuildValue("nnnO", n, start, stop, names) : Py_NewRef(Py_None);
done:
    Py_XDECREF(names);
    for (int i = 0; i < 3; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&raw);
    return result;
}

/* ---- COCO segm results (polygons or compressed RLE): one record loop, one parser per mask form ---- */

/* A polygon coordinate: parse_double's JSON number, but an integer token of at most 18 digits
 * (orjson, which decodes a record's polygons on access, reads such integers exactly). */
static int parse_coordinate(Cursor *c, double *out) {
    const char *p = c->p, *end = c->end;
    if (p < end && *p == '-') p++;
    const char *digits = p;
    while (p < end && is_digit(*p)) p++;
    if (p - digits > 18 && !(p < end && (*p == '.' || *p == 'e' || *p == 'E'))) return REFUSE;
    return parse_double(c, out, JSON_NUMBER);
}

/* The columns every segm-results record fills; the mask goes to the form's own columns. */
typedef struct {
    int64_t *image_id, *category_id, *segm_start, *segm_stop;
    double *bbox, *score;
    Py_ssize_t cap_records, n;
} RecordColumns;

/* Parses record ``i``'s segmentation value at the cursor into ``columns`` (SegmColumns or
 * RleColumns). */
typedef int (*SegmParser)(Cursor *c, void *columns, Py_ssize_t i);

enum { S_IMAGE_ID, S_CATEGORY_ID, S_BBOX, S_SCORE, S_SEGMENTATION, N_SEGM_KEYS };

static const char *const SEGM_KEYS[N_SEGM_KEYS] = {"image_id\"", "category_id\"", "bbox\"", "score\"",
                                                   "segmentation\""};

/* One record with exactly the five keys, in any order (an unknown or repeated key is refused). */
static int parse_segm_record(Cursor *c, const char *base, RecordColumns *r, SegmParser parse_segm, void *columns) {
    Py_ssize_t i = r->n;
    int seen = 0, status;
    if (expect(c, '{') != OK) return REFUSE;
    for (int k = 0; k < N_SEGM_KEYS; k++) {
        int key = match_key(c, SEGM_KEYS, N_SEGM_KEYS);
        if (key < 0 || (seen & (1 << key))) return REFUSE; /* unknown or repeated */
        seen |= 1 << key;
        if (expect(c, ':') != OK) return REFUSE;
        skip_ws(c);
        switch (key) {
        case S_IMAGE_ID:
            status = parse_int64(c, &r->image_id[i]);
            break;
        case S_CATEGORY_ID:
            status = parse_int64(c, &r->category_id[i]);
            break;
        case S_SCORE:
            status = parse_double(c, &r->score[i], JSON_NUMBER);
            break;
        case S_BBOX:
            status = parse_box(c, &r->bbox[4 * i]);
            break;
        default: /* S_SEGMENTATION */
            r->segm_start[i] = c->p - base;
            status = parse_segm(c, columns, i);
            r->segm_stop[i] = c->p - base;
        }
        if (status != OK) return status;
        if (expect(c, k + 1 < N_SEGM_KEYS ? ',' : '}') != OK) return REFUSE;
    }
    return OK;
}


typedef struct {
    int64_t *n_parts, *part_len;
    double *coords;
    Py_ssize_t cap_parts, cap_coords;
    Py_ssize_t n_part, n_coord;
} SegmColumns;

/* ``[[x, y, ...], ...]``: at least one part, each at least one number (lengths are checked by
 * the caller, which names odd and short parts as today's path does). */
static int parse_polygon_list(Cursor *c, void *columns, Py_ssize_t i) {
    SegmColumns *s = (SegmColumns *)columns;
    int64_t parts = 0;
    if (expect(c, '[') != OK) return REFUSE;
    for (;;) {
        if (expect(c, '[') != OK) return REFUSE; /* an empty list, a number, an object: refused */
        if (s->n_part >= s->cap_parts) return REFUSE;
        int64_t len = 0;
        for (;;) {
            if (s->n_coord >= s->cap_coords) return REFUSE;
            skip_ws(c);
            int status = parse_coordinate(c, &s->coords[s->n_coord]);
            if (status != OK) return status;
            s->n_coord++;
            len++;
            skip_ws(c);
            if (c->p < c->end && *c->p == ',') {
                c->p++;
                continue;
            }
            if (expect(c, ']') != OK) return REFUSE;
            break;
        }
        s->part_len[s->n_part++] = len;
        parts++;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, ']') != OK) return REFUSE;
        s->n_parts[i] = parts;
        return OK;
    }
}

typedef struct {
    int64_t *size, *counts_start, *counts_stop;
    char *blob;
    Py_ssize_t cap_blob, n_blob;
} RleColumns;

/* A compressed counts string, unescaped into the blob: printable ASCII, the only escapes ``\\`` and
 * ``\/`` (what pycocotools writes needs no other); anything else is for the full loader. The
 * plain stretches are found 8 bytes at a time and copied as blocks. */
static int parse_counts_into(Cursor *c, RleColumns *s, Py_ssize_t i) {
    if (expect(c, '"') != OK) return REFUSE;
    s->counts_start[i] = s->n_blob;
    const char *p = c->p, *const end = c->end;
    char *const blob = s->blob;
    Py_ssize_t n = s->n_blob;
    const Py_ssize_t cap = s->cap_blob;
    for (;;) {
        const char *q = p;
        while (end - q >= 8) {
            uint64_t v;
            memcpy(&v, q, 8);
            if (any_special(v)) break;
            q += 8;
        }
        while (q < end && *q != '"' && *q != '\\' && *q >= 0x20 && *q <= 0x7e) q++;
        if (q - p > cap - n) return REFUSE;
        memcpy(blob + n, p, (size_t)(q - p));
        n += q - p;
        p = q;
        if (p >= end || *p < 0x20 || *p > 0x7e) return REFUSE;
        if (*p == '"') break;
        /* a backslash */
        if (p + 1 >= end || (p[1] != '\\' && p[1] != '/')) return REFUSE;
        if (n >= cap) return REFUSE;
        blob[n++] = p[1];
        p += 2;
    }
    c->p = p + 1;
    s->n_blob = n;
    s->counts_stop[i] = n;
    return OK;
}

/* ``{"size": [h, w], "counts": "..."}`` in either key order; sizes are checked by the caller. */
static int parse_rle_object(Cursor *c, void *columns, Py_ssize_t i) {
    RleColumns *s = (RleColumns *)columns;
    if (expect(c, '{') != OK) return REFUSE;
    int seen = 0;
    for (int k = 0; k < 2; k++) {
        if (expect(c, '"') != OK) return REFUSE;
        int key, status;
        if (c->end - c->p >= 5 && memcmp(c->p, "size\"", 5) == 0) {
            key = 1;
            c->p += 5;
        } else if (c->end - c->p >= 7 && memcmp(c->p, "counts\"", 7) == 0) {
            key = 2;
            c->p += 7;
        } else {
            return REFUSE;
        }
        if ((seen & key) || expect(c, ':') != OK) return REFUSE;
        seen |= key;
        skip_ws(c);
        if (key == 1) {
            if (expect(c, '[') != OK) return REFUSE;
            skip_ws(c);
            status = parse_int64(c, &s->size[2 * i]);
            if (status != OK) return status;
            if (expect(c, ',') != OK) return REFUSE;
            skip_ws(c);
            status = parse_int64(c, &s->size[2 * i + 1]);
            if (status != OK) return status;
            if (expect(c, ']') != OK) return REFUSE;
        } else {
            status = parse_counts_into(c, s, i);
            if (status != OK) return status;
        }
        if (expect(c, k == 0 ? ',' : '}') != OK) return REFUSE;
    }
    return OK;
}

/* The records of ``c`` into ``r`` (from ``r->n``): a whole file (``first`` and ``last``) or one part of it
 * cut after a record's ``}``, in the grammar of parse_record_array. ``base``: the file's first byte (the
 * segmentation spans are offsets from it). */
typedef struct {
    const char *base;
    RecordColumns *r;
    SegmParser parse_segm;
    void *columns;
} SegmRows;

static int segm_row(Cursor *c, void *ctx, Py_ssize_t i) {
    SegmRows *g = (SegmRows *)ctx;
    g->r->n = i; /* parse_segm_record writes row r->n */
    return parse_segm_record(c, g->base, g->r, g->parse_segm, g->columns);
}

static int parse_segm_array(Cursor *c, int first, int last, const char *base, RecordColumns *r, SegmParser parse_segm,
                            void *columns) {
    SegmRows rows = {base, r, parse_segm, columns};
    Py_ssize_t n;
    const int status = parse_record_array(c, first, last, 0, r->n, r->cap_records, segm_row, &rows, &n);
    r->n = n;
    return status;
}

/* ---- segm results (polygons, RLE) on parts (run_parts) ---- */

typedef struct {
    int rle; /* the form: RleColumns, else SegmColumns */
    RecordColumns whole_r, part_r[DETEVAL_MAX_PARTS];
    SegmColumns whole_poly, part_poly[DETEVAL_MAX_PARTS];
    RleColumns whole_rle, part_rle[DETEVAL_MAX_PARTS];
    Py_ssize_t lo[DETEVAL_MAX_PARTS], hi[DETEVAL_MAX_PARTS]; /* records */
    Py_ssize_t alo[DETEVAL_MAX_PARTS], ahi[DETEVAL_MAX_PARTS]; /* polygons, or blob bytes */
    Py_ssize_t blo[DETEVAL_MAX_PARTS], bhi[DETEVAL_MAX_PARTS]; /* coordinates */
} SegmJob;

static int segm_part(PartsJob *job, int k, Cursor *c, int first, int last) {
    SegmJob *j = (SegmJob *)job->ctx;
    if (j->rle) return parse_segm_array(c, first, last, job->base, &j->part_r[k], parse_rle_object, &j->part_rle[k]);
    return parse_segm_array(c, first, last, job->base, &j->part_r[k], parse_polygon_list, &j->part_poly[k]);
}

static void segm_split(PartsJob *job, int k) {
    SegmJob *j = (SegmJob *)job->ctx;
    RecordColumns *r = &j->part_r[k];
    Py_ssize_t lo, hi, alo, ahi;
    part_region(job, k, j->whole_r.cap_records, &lo, &hi);
    j->lo[k] = lo;
    j->hi[k] = hi;
    *r = j->whole_r;
    r->image_id += lo;
    r->category_id += lo;
    r->segm_start += lo;
    r->segm_stop += lo;
    r->bbox += 4 * lo;
    r->score += lo;
    r->cap_records = hi - lo;
    r->n = 0;
    if (j->rle) {
        RleColumns *s = &j->part_rle[k];
        part_region(job, k, j->whole_rle.cap_blob, &alo, &ahi);
        *s = j->whole_rle;
        s->size += 2 * lo;
        s->counts_start += lo;
        s->counts_stop += lo;
        s->blob += alo;
        s->cap_blob = ahi - alo;
        s->n_blob = 0;
    } else {
        SegmColumns *s = &j->part_poly[k];
        Py_ssize_t blo, bhi;
        part_region(job, k, j->whole_poly.cap_parts, &alo, &ahi);
        part_region(job, k, j->whole_poly.cap_coords, &blo, &bhi);
        j->blo[k] = blo;
        j->bhi[k] = bhi;
        *s = j->whole_poly;
        s->n_parts += lo;
        s->part_len += alo;
        s->coords += blo;
        s->cap_parts = ahi - alo;
        s->cap_coords = bhi - blo;
        s->n_part = s->n_coord = 0;
    }
    j->alo[k] = alo;
    j->ahi[k] = ahi;
}

/* The records of ``raw`` (a whole file, or one part of it: ``first``/``last`` as in parse_record_array) on
 * ``threads`` parts, each into its share of the columns (part_region); one part when a part is refused. */
static int parse_segm_threads(const char *raw, Py_ssize_t len, int first, int last, int threads, SegmJob *j) {
    PartsJob job;
    parts_job(&job, raw, len, first, last, segm_part, j);
    const int status = parse_parts(&job, threads, segm_split, NULL);
    if (status != OK) return status;
    Py_ssize_t n[DETEVAL_MAX_PARTS], a[DETEVAL_MAX_PARTS], b[DETEVAL_MAX_PARTS];
    Py_ssize_t blob_at = 0;
    for (int k = 0; k < job.parts; k++) {
        n[k] = j->part_r[k].n;
        if (j->rle) {
            /* the counts spans are offsets in the part's blob region: made offsets in the joined blob */
            a[k] = j->part_rle[k].n_blob;
            RleColumns *s = &j->part_rle[k];
            for (Py_ssize_t i = 0; i < n[k] && blob_at; i++) {
                s->counts_start[i] += blob_at;
                s->counts_stop[i] += blob_at;
            }
            blob_at += a[k];
        } else {
            a[k] = j->part_poly[k].n_part;
            b[k] = j->part_poly[k].n_coord;
        }
    }
    RecordColumns *r = &j->whole_r;
    join_rows((char *)r->image_id, 8, job.parts, j->lo, n);
    join_rows((char *)r->category_id, 8, job.parts, j->lo, n);
    join_rows((char *)r->segm_start, 8, job.parts, j->lo, n);
    join_rows((char *)r->segm_stop, 8, job.parts, j->lo, n);
    join_rows((char *)r->bbox, 32, job.parts, j->lo, n);
    r->n = join_rows((char *)r->score, 8, job.parts, j->lo, n);
    if (j->rle) {
        RleColumns *s = &j->whole_rle;
        join_rows((char *)s->size, 16, job.parts, j->lo, n);
        join_rows((char *)s->counts_start, 8, job.parts, j->lo, n);
        join_rows((char *)s->counts_stop, 8, job.parts, j->lo, n);
        s->n_blob = join_rows(s->blob, 1, job.parts, j->alo, a);
    } else {
        SegmColumns *s = &j->whole_poly;
        join_rows((char *)s->n_parts, 8, job.parts, j->lo, n);
        s->n_part = join_rows((char *)s->part_len, 8, job.parts, j->alo, a);
        s->n_coord = join_rows((char *)s->coords, 8, job.parts, j->blo, b);
    }
    return OK;
}

PyDoc_STRVAR(segm_results_doc,
             "segm_results(raw, image_id, category_id, bbox, score, segm_start, segm_stop, n_parts,\n"
             "             part_len, coords, threads=1, /)\n--\n\n"
             "Parse COCO segm-results JSON whose records have exactly image_id, category_id, bbox,\n"
             "score and a polygon-list segmentation into the given columns.\n\n"
             "Per record: ``image_id``, ``category_id`` (int64), ``bbox`` (float64, 4 per record),\n"
             "``score`` (float64), ``segm_start``/``segm_stop`` (int64 byte span of the segmentation in\n"
             "``raw``), ``n_parts`` (int64 polygon count); per polygon ``part_len`` (int64 number count);\n"
             "``coords`` (float64) every coordinate in order. Returns ``(n, n_part, n_coord)``, or None\n"
             "when ``raw`` is anything else (an RLE, an empty list or polygon, a deeper nesting, a\n"
             "non-number, a non-finite number, an integer coordinate of more than 18 digits, another\n"
             "key) or holds more than the buffers do.");

static PyObject *segm_results(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *objs[9];
    Py_ssize_t threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO|n:segm_results", &raw_obj, &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &threads))
        return NULL;
    Py_buffer raw;
    Column cols[9];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    /* image_id, category_id, bbox, score, segm_start, segm_stop, n_parts, part_len, coords */
    static const char kinds[9] = {'i', 'i', 'f', 'f', 'i', 'i', 'i', 'i', 'f'};
    Py_ssize_t capacity = PY_SSIZE_T_MAX;
    for (int i = 0; i < 9; i++) {
        if (get_arr(objs[i], kinds[i], 1, &cols[i], "_colparse") != OK) goto done;
        Py_ssize_t rows = cols[i].view.len / (i == 2 ? 32 : 8);
        if (i < 7 && rows < capacity) capacity = rows;
    }
    const Py_buffer *inputs[1] = {&raw};
    if (columns_overlap(cols, 9, inputs, 1)) goto done;
    SegmJob *j = (SegmJob *)PyMem_Calloc(1, sizeof(SegmJob));
    if (j == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    j->rle = 0;
    j->whole_r = (RecordColumns){
        (int64_t *)cols[0].view.buf, (int64_t *)cols[1].view.buf, (int64_t *)cols[4].view.buf,
        (int64_t *)cols[5].view.buf, (double *)cols[2].view.buf,  (double *)cols[3].view.buf,
        capacity,                    0,
    };
    j->whole_poly = (SegmColumns){
        (int64_t *)cols[6].view.buf, (int64_t *)cols[7].view.buf, (double *)cols[8].view.buf,
        cols[7].view.len / 8,        cols[8].view.len / 8,        0,
        0,
    };
    const int status = parse_segm_threads((const char *)raw.buf, raw.len, 1, 1, parse_threads(threads), j);
    if (status != ERROR)
        result = status == OK ? Py_BuildValue("nnn", j->whole_r.n, j->whole_poly.n_part, j->whole_poly.n_coord)
                              : Py_NewRef(Py_None);
    PyMem_Free(j);
done:
    for (int i = 0; i < 9; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&raw);
    return result;
}

/* Shared by rle_results and rle_results_part: parse ``raw_obj`` into the nine columns and the blob. */
static PyObject *parse_rle_columns(PyObject *raw_obj, int first, int last, int threads, PyObject *const *objs,
                                   PyObject *blob_obj) {
    Py_buffer raw, blob;
    Column cols[9];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(blob_obj, &blob, PyBUF_SIMPLE | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&raw);
        return NULL;
    }
    /* image_id, category_id, bbox, score, segm_start, segm_stop, size, counts_start, counts_stop */
    static const char kinds[9] = {'i', 'i', 'f', 'f', 'i', 'i', 'i', 'i', 'i'};
    static const int per_record[9] = {1, 1, 4, 1, 1, 1, 2, 1, 1};
    Py_ssize_t capacity = PY_SSIZE_T_MAX;
    for (int i = 0; i < 9; i++) {
        if (get_arr(objs[i], kinds[i], 1, &cols[i], "_colparse") != OK) goto done;
        Py_ssize_t rows = cols[i].view.len / (8 * per_record[i]);
        if (rows < capacity) capacity = rows;
    }
    const Py_buffer *inputs[2] = {&raw, &blob};
    if (columns_overlap(cols, 9, inputs, 2) || views_overlap(&raw, &blob)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "rle_results: the blob overlaps the input");
        goto done;
    }
    SegmJob *j = (SegmJob *)PyMem_Calloc(1, sizeof(SegmJob));
    if (j == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    j->rle = 1;
    j->whole_r = (RecordColumns){
        (int64_t *)cols[0].view.buf, (int64_t *)cols[1].view.buf, (int64_t *)cols[4].view.buf,
        (int64_t *)cols[5].view.buf, (double *)cols[2].view.buf,  (double *)cols[3].view.buf,
        capacity,                    0,
    };
    j->whole_rle = (RleColumns){
        (int64_t *)cols[6].view.buf, (int64_t *)cols[7].view.buf, (int64_t *)cols[8].view.buf, (char *)blob.buf,
        blob.len,                    0,
    };
    const int status = parse_segm_threads((const char *)raw.buf, raw.len, first, last, threads, j);
    if (status != ERROR)
        result = status == OK ? Py_BuildValue("nn", j->whole_r.n, j->whole_rle.n_blob) : Py_NewRef(Py_None);
    PyMem_Free(j);
done:
    for (int i = 0; i < 9; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&blob);
    PyBuffer_Release(&raw);
    return result;
}

PyDoc_STRVAR(rle_results_doc,
             "rle_results(raw, image_id, category_id, bbox, score, segm_start, segm_stop, size,\n"
             "            counts_start, counts_stop, blob, threads=1, /)\n--\n\n"
             "Parse COCO segm-results JSON whose records have exactly image_id, category_id, bbox,\n"
             "score and a compressed RLE segmentation {\"size\": [h, w], \"counts\": \"...\"}.\n\n"
             "Per record: the ids (int64), ``bbox`` (float64, 4 per record), ``score``, the byte span of\n"
             "the segmentation in ``raw`` (int64), ``size`` (int64, 2 per record: h, w as written) and\n"
             "the span of its counts string, unescaped, in ``blob`` (a writable byte buffer). Returns\n"
             "``(n, n_blob)``, or None when ``raw`` is anything else (a polygon, uncompressed counts, an\n"
             "escape other than \\\\ and \\/, a non-ASCII byte, another key) or the buffers are too small.");

static PyObject *rle_results(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *blob_obj, *objs[9];
    Py_ssize_t threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOO|n:rle_results", &raw_obj, &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &blob_obj, &threads))
        return NULL;
    return parse_rle_columns(raw_obj, 1, 1, parse_threads(threads), objs, blob_obj);
}

PyDoc_STRVAR(rle_results_part_doc,
             "rle_results_part(raw, first, last, image_id, category_id, bbox, score, segm_start, segm_stop,\n"
             "                 size, counts_start, counts_stop, blob, threads=1, /)\n--\n\n"
             "Parse one part of a compressed-RLE segm-results file into the given columns (as\n"
             "rle_results), a file read in parts cut right after a record's closing ``}`` (the grammar\n"
             "of box_results_part: ``first``, ``last``). Every span is relative to this call's buffers:\n"
             "``segm_start``/``segm_stop`` to ``raw``, ``counts_start``/``counts_stop`` to ``blob`` (the\n"
             "caller passes the columns and the blob from where the previous part's ended, and adds\n"
             "that blob offset). Returns ``(n, n_blob)`` (n is 0 only for a last part holding just\n"
             "``]``), or None when the part is not plain or the buffers are too small.");

static PyObject *rle_results_part(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *blob_obj, *objs[9];
    int first, last;
    Py_ssize_t threads = 1;
    if (!PyArg_ParseTuple(args, "OppOOOOOOOOOO|n:rle_results_part", &raw_obj, &first, &last, &objs[0], &objs[1],
                          &objs[2], &objs[3], &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &blob_obj, &threads))
        return NULL;
    return parse_rle_columns(raw_obj, first, last, parse_threads(threads), objs, blob_obj);
}

PyDoc_STRVAR(polygon_spans_doc,
             "polygon_spans(raw, segm_start, segm_stop, n_parts, part_len, coords, /)\n--\n\n"
             "Read each segmentation ``raw[segm_start[i]:segm_stop[i]]`` (int64 byte spans, as ``instances``\n"
             "gives them) that is a polygon list, as ``segm_results`` reads one: ``n_parts`` (int64, per\n"
             "span), ``part_len`` (int64, numbers per polygon) and ``coords`` (float64, every number in\n"
             "order). Returns ``(n_part, n_coord)``, or None when a span is anything else (no\n"
             "segmentation, an RLE, an empty list or polygon, a non-number) or the buffers are too small.");

static PyObject *polygon_spans(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOOO:polygon_spans", &raw_obj, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4]))
        return NULL;
    Py_buffer raw;
    Column cols[5];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    /* segm_start, segm_stop (inputs), n_parts (per span), part_len, coords (outputs) */
    static const char kinds[5] = {'i', 'i', 'i', 'i', 'f'};
    for (int i = 0; i < 5; i++) {
        if (get_arr(objs[i], kinds[i], i >= 2, &cols[i], "_colparse") != OK) goto done;
    }
    const Py_ssize_t n = cols[0].view.len / 8;
    if (cols[1].view.len != n * 8 || cols[2].view.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "polygon_spans: columns of different lengths");
        goto done;
    }
    const Py_buffer *inputs[3] = {&raw, &cols[0].view, &cols[1].view};
    if (columns_overlap(cols + 2, 3, inputs, 3)) goto done;
    const int64_t *start = (const int64_t *)cols[0].view.buf, *stop = (const int64_t *)cols[1].view.buf;
    SegmColumns s = {
        (int64_t *)cols[2].view.buf, (int64_t *)cols[3].view.buf, (double *)cols[4].view.buf,
        cols[3].view.len / 8,        cols[4].view.len / 8,        0,
        0,
    };
    const char *base = (const char *)raw.buf;
    int status = OK;
    for (Py_ssize_t i = 0; i < n && status == OK; i++) {
        if (start[i] < 0 || stop[i] < start[i] || stop[i] > raw.len) {
            status = REFUSE; /* no segmentation, or not a span of raw */
            break;
        }
        Cursor c = {base + start[i], base + stop[i]};
        skip_ws(&c);
        status = parse_polygon_list(&c, &s, i);
        if (status == OK) {
            skip_ws(&c);
            if (c.p != c.end) status = REFUSE;
        }
    }
    if (status == ERROR) goto done;
    result = status == OK ? Py_BuildValue("nn", s.n_part, s.n_coord) : Py_NewRef(Py_None);
done:
    for (int i = 0; i < 5; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&raw);
    return result;
}

PyDoc_STRVAR(rle_spans_doc,
             "rle_spans(raw, segm_start, segm_stop, size, counts_start, counts_stop, blob, /)\n--\n\n"
             "Read each segmentation ``raw[segm_start[i]:segm_stop[i]]`` (int64 byte spans, as ``instances``\n"
             "gives them) that is a compressed RLE {\"size\": [h, w], \"counts\": \"...\"}, as ``rle_results``\n"
             "reads one: ``size`` (int64, 2 per span), the span of its counts string, unescaped, in ``blob``\n"
             "(a writable byte buffer). Returns the bytes written to the blob, or None when a span is\n"
             "anything else (no segmentation, a polygon, uncompressed counts, other escapes or keys) or the\n"
             "buffers are too small.");

static PyObject *rle_spans(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *blob_obj, *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOOOO:rle_spans", &raw_obj, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &blob_obj))
        return NULL;
    Py_buffer raw, blob;
    Column cols[5];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(blob_obj, &blob, PyBUF_SIMPLE | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&raw);
        return NULL;
    }
    /* segm_start, segm_stop (inputs), size, counts_start, counts_stop (outputs) */
    static const int per_record[5] = {1, 1, 2, 1, 1};
    Py_ssize_t n = 0;
    for (int i = 0; i < 5; i++) {
        if (get_arr(objs[i], 'i', i >= 2, &cols[i], "_colparse") != OK) goto done;
        const Py_ssize_t rows = cols[i].view.len / (8 * per_record[i]);
        if (i == 0) n = rows;
        if (rows != n) {
            PyErr_SetString(PyExc_ValueError, "rle_spans: columns of different lengths");
            goto done;
        }
    }
    const Py_buffer *inputs[4] = {&raw, &blob, &cols[0].view, &cols[1].view};
    if (columns_overlap(cols + 2, 3, inputs, 4) || views_overlap(&raw, &blob)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "rle_spans: the blob overlaps the input");
        goto done;
    }
    const int64_t *start = (const int64_t *)cols[0].view.buf, *stop = (const int64_t *)cols[1].view.buf;
    RleColumns s = {
        (int64_t *)cols[2].view.buf, (int64_t *)cols[3].view.buf, (int64_t *)cols[4].view.buf, (char *)blob.buf,
        blob.len,                    0,
    };
    const char *base = (const char *)raw.buf;
    int status = OK;
    for (Py_ssize_t i = 0; i < n && status == OK; i++) {
        if (start[i] < 0 || stop[i] < start[i] || stop[i] > raw.len) {
            status = REFUSE; /* no segmentation, or not a span of raw */
            break;
        }
        Cursor c = {base + start[i], base + stop[i]};
        skip_ws(&c);
        status = parse_rle_object(&c, &s, i);
        if (status == OK) {
            skip_ws(&c);
            if (c.p != c.end) status = REFUSE;
        }
    }
    if (status == ERROR) goto done;
    result = status == OK ? PyLong_FromSsize_t(s.n_blob) : Py_NewRef(Py_None);
done:
    for (int i = 0; i < 5; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&blob);
    PyBuffer_Release(&raw);
    return result;
}

/* ---- COCO keypoint results: image_id, category_id, keypoints, score into flat columns ---- */

enum { KR_IMAGE_ID, KR_CATEGORY_ID, KR_KEYPOINTS, KR_SCORE, KR_BBOX, N_KEYPOINT_KEYS };

static const char *const KEYPOINT_KEYS[N_KEYPOINT_KEYS] = {"image_id\"", "category_id\"", "keypoints\"", "score\"",
                                                           "bbox\""};

/* The four keys every keypoint result has. */
#define KR_REQUIRED ((1 << KR_IMAGE_ID) | (1 << KR_CATEGORY_ID) | (1 << KR_KEYPOINTS) | (1 << KR_SCORE))

typedef struct {
    int64_t *image_id, *category_id;
    double *score, *numbers, *bbox; /* bbox: NULL when the caller gave no buffer (the key is refused) */
    Py_ssize_t cap_records, cap_numbers;
    Py_ssize_t n, n_number, per_record; /* per_record: numbers of the first record (0 before it) */
    Py_ssize_t n_box;                   /* records with a bbox */
} KeypointColumns;

/* ``[x1, y1, v1, ...]``: as many JSON numbers as the first record has, a non-zero multiple of 3. */
static int parse_keypoint_list(Cursor *c, KeypointColumns *s) {
    return parse_keypoint_numbers(c, s->numbers, &s->n_number, s->cap_numbers, &s->per_record);
}

static int parse_keypoint_record(Cursor *c, KeypointColumns *s) {
    Py_ssize_t i = s->n;
    int seen = 0, status;
    if (expect(c, '{') != OK) return REFUSE;
    for (;;) {
        int key = match_key(c, KEYPOINT_KEYS, s->bbox ? N_KEYPOINT_KEYS : KR_BBOX);
        if (key < 0 || (seen & (1 << key))) return REFUSE; /* unknown or repeated */
        seen |= 1 << key;
        if (expect(c, ':') != OK) return REFUSE;
        skip_ws(c);
        switch (key) {
        case KR_IMAGE_ID:
            status = parse_int64(c, &s->image_id[i]);
            break;
        case KR_CATEGORY_ID:
            status = parse_int64(c, &s->category_id[i]);
            break;
        case KR_SCORE:
            status = parse_double(c, &s->score[i], JSON_NUMBER);
            break;
        case KR_BBOX:
            status = parse_box(c, &s->bbox[4 * i]);
            s->n_box++;
            break;
        default: /* KR_KEYPOINTS */
            status = parse_keypoint_list(c, s);
        }
        if (status != OK) return status;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, '}') != OK) return REFUSE;
        return (seen & KR_REQUIRED) == KR_REQUIRED ? OK : REFUSE;
    }
}

/* The records of ``c`` into ``s`` (from ``s->n``): a whole file (``first`` and ``last``) or one part
 * of it cut after a record's ``}``, in the grammar of parse_record_array. */
static int keypoint_row(Cursor *c, void *ctx, Py_ssize_t i) {
    KeypointColumns *s = (KeypointColumns *)ctx;
    s->n = i; /* parse_keypoint_record writes row s->n */
    return parse_keypoint_record(c, s);
}

static int parse_keypoint_array(Cursor *c, int first, int last, KeypointColumns *s) {
    Py_ssize_t n;
    const int status = parse_record_array(c, first, last, 0, s->n, s->cap_records, keypoint_row, s, &n);
    s->n = n;
    return status;
}

/* ---- keypoint results on parts (run_parts) ---- */

typedef struct {
    Py_ssize_t per_record; /* the numbers per record the parts agreed on (keypoint_agree) */
    KeypointColumns whole; /* the caller's columns and per_record */
    KeypointColumns part[DETEVAL_MAX_PARTS];
    Py_ssize_t lo[DETEVAL_MAX_PARTS], hi[DETEVAL_MAX_PARTS], nlo[DETEVAL_MAX_PARTS], nhi[DETEVAL_MAX_PARTS];
} KeypointJob;

static int keypoint_part(PartsJob *job, int k, Cursor *c, int first, int last) {
    KeypointJob *j = (KeypointJob *)job->ctx;
    return parse_keypoint_array(c, first, last, &j->part[k]);
}

static void keypoint_split(PartsJob *job, int k) {
    KeypointJob *j = (KeypointJob *)job->ctx;
    const KeypointColumns *w = &j->whole;
    KeypointColumns *s = &j->part[k];
    part_region(job, k, w->cap_records, &j->lo[k], &j->hi[k]);
    part_region(job, k, w->cap_numbers, &j->nlo[k], &j->nhi[k]);
    *s = *w;
    s->image_id += j->lo[k];
    s->category_id += j->lo[k];
    s->score += j->lo[k];
    if (s->bbox) s->bbox += 4 * j->lo[k];
    s->numbers += j->nlo[k];
    s->cap_records = j->hi[k] - j->lo[k];
    s->cap_numbers = j->nhi[k] - j->nlo[k];
}

/* Every part's lists of one length (the whole's, when it was given): the first list decides. */
static int keypoint_agree(PartsJob *job) {
    KeypointJob *j = (KeypointJob *)job->ctx;
    Py_ssize_t per_record = j->whole.per_record;
    for (int k = 0; k < job->parts; k++) {
        const KeypointColumns *s = &j->part[k];
        if (s->n == 0) continue;
        if (per_record == 0) per_record = s->per_record;
        else if (s->per_record != per_record) return REFUSE; /* one thread refuses the first such list */
    }
    j->per_record = per_record;
    return OK;
}

/* The keypoint records of ``raw`` into j->whole on ``threads`` parts (one when a part is refused, or
 * when the parts' lists have different lengths): OK with j->whole's counts set, REFUSE or ERROR. */
static int parse_keypoint_threads(const char *raw, Py_ssize_t len, int first, int last, int threads, KeypointJob *j) {
    PartsJob job;
    parts_job(&job, raw, len, first, last, keypoint_part, j);
    const int status = parse_parts(&job, threads, keypoint_split, keypoint_agree);
    if (status != OK) return status;
    Py_ssize_t n[DETEVAL_MAX_PARTS], numbers[DETEVAL_MAX_PARTS];
    Py_ssize_t n_box = 0;
    for (int k = 0; k < job.parts; k++) {
        n[k] = j->part[k].n;
        numbers[k] = j->part[k].n_number;
        n_box += j->part[k].n_box;
    }
    KeypointColumns *out = &j->whole;
    join_rows((char *)out->image_id, 8, job.parts, j->lo, n);
    join_rows((char *)out->category_id, 8, job.parts, j->lo, n);
    if (out->bbox) join_rows((char *)out->bbox, 32, job.parts, j->lo, n);
    out->n = join_rows((char *)out->score, 8, job.parts, j->lo, n);
    out->n_number = join_rows((char *)out->numbers, 8, job.parts, j->nlo, numbers);
    out->per_record = j->per_record;
    out->n_box = n_box;
    return OK;
}

PyDoc_STRVAR(keypoint_results_doc,
             "keypoint_results(raw, image_id, category_id, score, keypoints, bbox=None, first=True, last=True,\n"
             "                 per_record=0, threads=1, /)\n--\n\n"
             "Parse COCO keypoint-results JSON whose records have exactly image_id, category_id,\n"
             "keypoints and score -- and, when the float64 buffer ``bbox`` (4 per record) is given,\n"
             "optionally a bbox of four JSON numbers -- into the given int64/float64 buffers\n"
             "(``keypoints``: every number in order). Returns ``(n, numbers_per_record, n_box)`` (the\n"
             "records that had a bbox), or None when ``raw`` is anything else (another key, a bbox\n"
             "without the buffer, lists of different or non-multiple-of-3 lengths, a non-finite\n"
             "number, an integer of more than 18 digits) or holds more than the buffers do.\n\n"
             "A file read in parts cut after a record's ``}`` (as box_results_part reads it): ``first``\n"
             "and ``last`` say which part ``raw`` is, ``per_record`` is the count of the parts before\n"
             "(0 for the first), and the buffers are the columns' free tails. ``threads``: parse on that\n"
             "many parts at once (cut after records, GIL released), with the one thread's outcome.");

static PyObject *keypoint_results(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *objs[5] = {NULL};
    int first = 1, last = 1;
    Py_ssize_t per_record = 0, threads = 1;
    if (!PyArg_ParseTuple(args, "OOOOO|Oppnn:keypoint_results", &raw_obj, &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &first, &last, &per_record, &threads))
        return NULL;
    if (per_record < 0 || per_record % 3) {
        PyErr_SetString(PyExc_ValueError, "keypoint_results: per_record must be a multiple of 3, >= 0");
        return NULL;
    }
    if (objs[4] == Py_None) objs[4] = NULL;
    const int n_cols = objs[4] ? 5 : 4;
    Py_buffer raw;
    Column cols[5];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    static const char kinds[5] = {'i', 'i', 'f', 'f', 'f'};
    Py_ssize_t capacity = PY_SSIZE_T_MAX;
    for (int i = 0; i < n_cols; i++) {
        if (get_arr(objs[i], kinds[i], 1, &cols[i], "_colparse") != OK) goto done;
        Py_ssize_t rows = cols[i].view.len / (i == 4 ? 32 : 8);
        if (i != 3 && rows < capacity) capacity = rows;
    }
    const Py_buffer *inputs[1] = {&raw};
    if (columns_overlap(cols, n_cols, inputs, 1)) goto done;
    KeypointJob j;
    KeypointColumns *sp = &j.whole;
    *sp = (KeypointColumns){
        (int64_t *)cols[0].view.buf,
        (int64_t *)cols[1].view.buf,
        (double *)cols[2].view.buf,
        (double *)cols[3].view.buf,
        n_cols == 5 ? (double *)cols[4].view.buf : NULL,
        capacity,
        cols[3].view.len / 8,
        0,
        0,
        per_record,
        0,
    };
    int status = parse_keypoint_threads((const char *)raw.buf, raw.len, first, last, parse_threads(threads), &j);
    if (status == ERROR) goto done;
    result = status == OK ? Py_BuildValue("nnn", sp->n, sp->per_record, sp->n_box) : Py_NewRef(Py_None);
done:
    for (int i = 0; i < n_cols; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&raw);
    return result;
}

/* ---- whitespace-separated text rows: VOC result lines, YOLO prediction rows ---- */

#define FIRST_TEXT 0   /* VOC: the first field is an image id, kept as text */
#define FIRST_INT 1    /* YOLO: the first field is a class id, written as an integer */
#define FIRST_LOOKUP 2 /* VOC: the first field is an image id, looked up in a KeyTable */

/* Image ids as a hash table: key k is blob[start[k]:start[k + 1]] and names the image index[k]; slots
 * (a power of two of them, -1 when empty) hold key numbers, placed by FNV-1a and linear probing.
 * Looked up without a Python object per row. */
typedef struct {
    const char *blob;
    const int64_t *start;
    const int64_t *index;
    const int64_t *slots;
    uint64_t mask;
} KeyTable;

static inline uint64_t fnv1a(const char *p, Py_ssize_t len) {
    uint64_t h = 14695981039346656037ULL;
    for (Py_ssize_t i = 0; i < len; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The index of the key equal to [token, token + len), or -1. */
static int64_t lookup_key(const KeyTable *t, const char *token, Py_ssize_t len) {
    for (uint64_t s = fnv1a(token, len) & t->mask;; s = (s + 1) & t->mask) {
        int64_t k = t->slots[s];
        if (k < 0) return -1;
        if (t->start[k + 1] - t->start[k] == len && memcmp(t->blob + t->start[k], token, (size_t)len) == 0)
            return t->index[k];
    }
}

static inline int is_blank(char c) { return c == ' ' || c == '\t'; }
static inline int is_line_end(const Cursor *c) { return c->p >= c->end || *c->p == '\n' || *c->p == '\r'; }
static inline int ends_field(const Cursor *c) { return is_line_end(c) || is_blank(*c->p); }

/* A class id as Python's int(float(token)) reads it, written as str(int) writes it, exactly:
 * no sign but '-', no leading zero, no -0, below 2**53 in magnitude. */
static int parse_class_id(Cursor *c, int64_t *out) {
    const char *p = c->p;
    int negative = 0, digits = 0;
    int64_t value = 0;
    if (p < c->end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= c->end || !is_digit(*p) || (*p == '0' && (negative || (p + 1 < c->end && is_digit(p[1])))))
        return REFUSE;
    while (p < c->end && is_digit(*p)) {
        if (++digits > 15) return REFUSE;
        value = value * 10 + (*p - '0');
        p++;
    }
    c->p = p;
    *out = negative ? -value : value;
    return OK;
}

/* A number of a text row as parse_double(c, out, TEXT_NUMBER) reads it, bit for bit, by a shorter
 * path for the common spelling: an optional sign, at most 19 digits with an optional '.', no
 * exponent, a mantissa within 2**53 (Clinger's fast path: one correctly rounded division of two
 * exact doubles). Anything else is read again by parse_double. */
static int parse_text_number(Cursor *c, double *out) {
#if COLPARSE_FAST_FLOATS
    const char *p = c->p, *end = c->end;
    int negative = 0, digits = 0, fraction = 0;
    uint64_t mantissa = 0;
    if (p < end && (*p == '-' || *p == '+')) {
        negative = *p == '-';
        p++;
    }
    while (p < end && is_digit(*p)) {
        mantissa = mantissa * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    if (p < end && *p == '.') {
        p++;
        while (p < end && is_digit(*p)) {
            mantissa = mantissa * 10 + (uint64_t)(*p++ - '0');
            digits++;
            fraction++;
        }
    }
    if (digits > 0 && digits <= 19 && mantissa <= ((uint64_t)1 << 53) && fraction <= 22 &&
        !(p < end && (*p == 'e' || *p == 'E'))) {
        double value = (double)mantissa;
        if (fraction > 0) value = value / POW10[fraction];
        *out = negative ? -value : value;
        c->p = p;
        return OK;
    }
#endif
    return parse_double(c, out, TEXT_NUMBER);
}

/* Rows of whitespace-separated fields, the first by ``first`` and then ``n_numbers`` numbers (written
 * 5 a row into ``numbers``: VOC and YOLO prediction rows have 5, YOLO label rows 4). ASCII
 * only (anything else, e.g. a non-breaking space, is for the Python reader to judge); a line ends at
 * \n, \r\n or \r, as deteval.io._text.split_lines counts lines; blank lines are skipped. */
static int parse_text_rows(Cursor *c, int first, const KeyTable *table, int n_numbers, Py_ssize_t capacity,
                           PyObject *ids, int64_t *class_ids, double *numbers, int64_t *lines, Py_ssize_t *n_rows) {
    Py_ssize_t n = 0;
    int64_t line = 1;
    if (c->end - c->p >= 3 && memcmp(c->p, "\xef\xbb\xbf", 3) == 0) c->p += 3; /* read as utf-8-sig */
    while (c->p < c->end) {
        while (c->p < c->end && is_blank(*c->p)) c->p++;
        if (!is_line_end(c)) {
            if (n >= capacity) return REFUSE;
            const char *token = c->p;
            if (first == FIRST_LOOKUP) {
                while (!ends_field(c)) {
                    if (*c->p <= ' ' || *c->p > '~') return REFUSE;
                    c->p++;
                }
                class_ids[n] = lookup_key(table, token, c->p - token);
            } else if (first == FIRST_TEXT) {
                while (!ends_field(c)) {
                    if (*c->p <= ' ' || *c->p > '~') return REFUSE;
                    c->p++;
                }
                PyObject *id = PyUnicode_DecodeASCII(token, c->p - token, NULL);
                if (id == NULL) return ERROR;
                int failed = PyList_Append(ids, id);
                Py_DECREF(id);
                if (failed) return ERROR;
            } else if (parse_class_id(c, &class_ids[n]) != OK || !ends_field(c)) {
                return REFUSE;
            }
            for (int j = 0; j < n_numbers; j++) {
                if (is_line_end(c) || !is_blank(*c->p)) return REFUSE;
                while (c->p < c->end && is_blank(*c->p)) c->p++;
                int status = parse_text_number(c, &numbers[5 * n + j]);
                if (status != OK) return status;
                if (!ends_field(c)) return REFUSE;
            }
            while (c->p < c->end && is_blank(*c->p)) c->p++;
            if (!is_line_end(c)) return REFUSE; /* one field more, or another byte */
            lines[n++] = line;
        }
        if (c->p < c->end) {
            if (*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n') c->p++;
            c->p++;
            line++;
        }
    }
    *n_rows = n;
    return OK;
}

PyDoc_STRVAR(text_rows_doc,
             "text_rows(raw, first_is_text, class_ids, numbers, lines, /)\n--\n\n"
             "Parse rows of six whitespace-separated fields: an id, then five numbers.\n\n"
             "``first_is_text``: the ids are returned as a list of str (VOC image ids); otherwise they\n"
             "are integers written into the int64 buffer ``class_ids`` (YOLO class ids) and the row\n"
             "count is returned. ``numbers`` (float64, 5 per row) receives the numbers as float()\n"
             "reads them, ``lines`` (int64) each row's 1-based line number. None when any line is\n"
             "not exactly that (or the buffers are too small): the Python reader decides then.");

static PyObject *text_rows(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *class_obj, *numbers_obj, *lines_obj;
    int first_is_text;
    if (!PyArg_ParseTuple(args, "OpOOO:text_rows", &raw_obj, &first_is_text, &class_obj, &numbers_obj,
                          &lines_obj))
        return NULL;
    Py_buffer raw;
    Column cols[3];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL, *ids = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    if (get_arr(numbers_obj, 'f', 1, &cols[0], "_colparse") != OK || get_arr(lines_obj, 'i', 1, &cols[1], "_colparse") != OK) goto done;
    Py_ssize_t capacity = cols[0].view.len / 40;
    if (cols[1].view.len / 8 < capacity) capacity = cols[1].view.len / 8;
    int64_t *class_ids = NULL;
    if (first_is_text) {
        ids = PyList_New(0);
        if (ids == NULL) goto done;
    } else {
        if (get_arr(class_obj, 'i', 1, &cols[2], "_colparse") != OK) goto done;
        if (cols[2].view.len / 8 < capacity) capacity = cols[2].view.len / 8;
        class_ids = (int64_t *)cols[2].view.buf;
    }
    const Py_buffer *inputs[1] = {&raw};
    if (columns_overlap(cols, 3, inputs, 1)) goto done;
    Cursor c = {(const char *)raw.buf, (const char *)raw.buf + raw.len};
    Py_ssize_t n = 0;
    int status = parse_text_rows(&c, first_is_text ? FIRST_TEXT : FIRST_INT, NULL, 5, capacity, ids, class_ids,
                                 (double *)cols[0].view.buf, (int64_t *)cols[1].view.buf, &n);
    if (status == ERROR) goto done;
    if (status != OK) {
        result = Py_NewRef(Py_None);
    } else if (first_is_text) {
        result = Py_NewRef(ids);
    } else {
        result = PyLong_FromSsize_t(n);
    }
done:
    Py_XDECREF(ids);
    for (int i = 0; i < 3; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&raw);
    return result;
}

/* Check the key columns of a table: ``start`` holds n + 1 offsets into ``keys``, not decreasing. */
static int check_keys(const Py_buffer *keys, const Column *start_col, Py_ssize_t n_keys) {
    const int64_t *start = (const int64_t *)start_col->view.buf;
    if (start_col->view.len / 8 != n_keys + 1 || start[0] != 0 || start[n_keys] != (int64_t)keys->len) {
        PyErr_SetString(PyExc_ValueError, "key_start must hold n + 1 offsets into keys");
        return ERROR;
    }
    for (Py_ssize_t k = 0; k < n_keys; k++) {
        if (start[k + 1] < start[k]) {
            PyErr_SetString(PyExc_ValueError, "key_start must not decrease");
            return ERROR;
        }
    }
    return OK;
}

PyDoc_STRVAR(key_slots_doc,
             "key_slots(keys, key_start, /)\n--\n\n"
             "The hash slots of the distinct byte strings ``keys[key_start[k]:key_start[k + 1]]``.\n\n"
             "Returns a bytearray of int64 slots (a power of two of them, at least twice the keys):\n"
             "each holds a key number or -1, placed by FNV-1a and linear probing, for voc_rows.\n"
             "ValueError when the offsets are not n + 1 non-decreasing offsets into ``keys``.");

static PyObject *key_slots(PyObject *self, PyObject *args) {
    PyObject *keys_obj, *start_obj;
    if (!PyArg_ParseTuple(args, "OO:key_slots", &keys_obj, &start_obj)) return NULL;
    Py_buffer keys;
    Column start_col;
    memset(&start_col, 0, sizeof start_col);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(keys_obj, &keys, PyBUF_SIMPLE) < 0) return NULL;
    if (get_arr(start_obj, 'i', 0, &start_col, "_colparse") != OK) goto done;
    Py_ssize_t n_keys = start_col.view.len / 8 - 1;
    if (n_keys < 0 || check_keys(&keys, &start_col, n_keys) != OK) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "key_start must hold n + 1 offsets into keys");
        goto done;
    }
    Py_ssize_t n_slots = 8;
    while (n_slots < 2 * n_keys) n_slots *= 2;
    result = PyByteArray_FromStringAndSize(NULL, 8 * n_slots);
    if (result == NULL) goto done;
    int64_t *slots = (int64_t *)PyByteArray_AS_STRING(result);
    for (Py_ssize_t s = 0; s < n_slots; s++) slots[s] = -1;
    const int64_t *start = (const int64_t *)start_col.view.buf;
    uint64_t mask = (uint64_t)n_slots - 1;
    for (Py_ssize_t k = 0; k < n_keys; k++) {
        uint64_t s = fnv1a((const char *)keys.buf + start[k], (Py_ssize_t)(start[k + 1] - start[k])) & mask;
        while (slots[s] >= 0) s = (s + 1) & mask;
        slots[s] = k;
    }
done:
    if (start_col.held) PyBuffer_Release(&start_col.view);
    PyBuffer_Release(&keys);
    return result;
}

PyDoc_STRVAR(voc_rows_doc,
             "voc_rows(raw, keys, key_start, key_index, slots, image, numbers, lines, /)\n--\n\n"
             "Parse VOC result lines ``image_id score x1 y1 x2 y2`` (the grammar of text_rows), looking\n"
             "each image id up among the keys instead of returning it as text.\n\n"
             "Key k is ``keys[key_start[k]:key_start[k + 1]]`` (distinct byte strings) and names the\n"
             "image ``key_index[k]``; ``slots`` is key_slots(keys, key_start). ``image`` (int64) receives\n"
             "each row's image index, -1 for an id that is no key; ``numbers`` and ``lines`` as in\n"
             "text_rows. Returns the row count, or None as text_rows does.");

static PyObject *voc_rows(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *keys_obj, *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOOOO:voc_rows", &raw_obj, &keys_obj, &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5]))
        return NULL;
    Py_buffer raw, keys;
    Column cols[6]; /* key_start, key_index, slots, image, numbers, lines */
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL;
    if (PyObject_GetBuffer(raw_obj, &raw, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(keys_obj, &keys, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&raw);
        return NULL;
    }
    if (get_arr(objs[0], 'i', 0, &cols[0], "_colparse") != OK || get_arr(objs[1], 'i', 0, &cols[1], "_colparse") != OK ||
        get_arr(objs[2], 'i', 0, &cols[2], "_colparse") != OK || get_arr(objs[3], 'i', 1, &cols[3], "_colparse") != OK ||
        get_arr(objs[4], 'f', 1, &cols[4], "_colparse") != OK || get_arr(objs[5], 'i', 1, &cols[5], "_colparse") != OK)
        goto done;
    const Py_buffer *inputs[5] = {&raw, &keys, &cols[0].view, &cols[1].view, &cols[2].view};
    if (columns_overlap(cols + 3, 3, inputs, 5)) goto done;
    Py_ssize_t n_keys = cols[1].view.len / 8, n_slots = cols[2].view.len / 8;
    if (check_keys(&keys, &cols[0], n_keys) != OK) goto done;
    const int64_t *slots = (const int64_t *)cols[2].view.buf;
    int slots_ok = n_slots >= 2 * n_keys && n_slots >= 1 && (n_slots & (n_slots - 1)) == 0;
    Py_ssize_t empty = 0; /* at least one: every probe ends */
    for (Py_ssize_t s = 0; slots_ok && s < n_slots; s++) {
        slots_ok = slots[s] >= -1 && slots[s] < n_keys;
        empty += slots[s] == -1;
    }
    if (!slots_ok || empty == 0) {
        PyErr_SetString(PyExc_ValueError, "slots must be key_slots(keys, key_start)");
        goto done;
    }
    KeyTable table = {(const char *)keys.buf, (const int64_t *)cols[0].view.buf,
                      (const int64_t *)cols[1].view.buf, slots, (uint64_t)n_slots - 1};
    Py_ssize_t capacity = cols[3].view.len / 8;
    if (cols[4].view.len / 40 < capacity) capacity = cols[4].view.len / 40;
    if (cols[5].view.len / 8 < capacity) capacity = cols[5].view.len / 8;
    Cursor c = {(const char *)raw.buf, (const char *)raw.buf + raw.len};
    Py_ssize_t n = 0;
    int status = parse_text_rows(&c, FIRST_LOOKUP, &table, 5, capacity, NULL, (int64_t *)cols[3].view.buf,
                                 (double *)cols[4].view.buf, (int64_t *)cols[5].view.buf, &n);
    if (status == ERROR) goto done;
    result = status == OK ? PyLong_FromSsize_t(n) : Py_NewRef(Py_None);
done:
    for (int i = 0; i < 6; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    PyBuffer_Release(&keys);
    PyBuffer_Release(&raw);
    return result;
}

/* ---- YOLO prediction files: every file of a folder read and parsed in one call ---- */

#ifndef _WIN32
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* The os.stat_result fields, in its order, that yolo_files returns per file. */
#define STAT_FIELDS 10

/* A bytearray grown by doubling (its size is the capacity; shrunk to the used size at the end). */
static int reserve(PyObject *array, Py_ssize_t bytes) {
    Py_ssize_t size = PyByteArray_GET_SIZE(array);
    if (bytes <= size) return OK;
    Py_ssize_t target = size < 1024 ? 1024 : size;
    while (target < bytes) {
        if (target > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return ERROR;
        }
        target *= 2;
    }
    return PyByteArray_Resize(array, target) == 0 ? OK : ERROR;
}

#ifdef __APPLE__
#define MTIME(s) ((s)->st_mtimespec)
#else
#define MTIME(s) ((s)->st_mtim)
#endif

/* The same size, modification time, inode and device (deteval.io._text.file_state). */
static int same_state(const struct stat *a, const struct stat *b) {
    return a->st_size == b->st_size && MTIME(a).tv_sec == MTIME(b).tv_sec && MTIME(a).tv_nsec == MTIME(b).tv_nsec &&
           a->st_ino == b->st_ino && a->st_dev == b->st_dev;
}

/* The whole regular file ``path`` (at most ``limit`` bytes) into ``buf``, as deteval.io._text.read_bytes
 * reads it (opened non-blocking, refused unless a regular file); its fstat fields into ``fields``.
 * REFUSE on anything that read_bytes would report: the caller's Python reader names it; ERROR with
 * OSError(ESTALE, ..., path) set when the file changed while read. */
static int read_whole(const char *path, int64_t limit, char **buf, Py_ssize_t *cap, Py_ssize_t *len,
                      int64_t *fields) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return REFUSE;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (int64_t)st.st_size > limit) {
        close(fd);
        return REFUSE;
    }
    Py_ssize_t total = 0;
    for (;;) {
        Py_ssize_t want = (Py_ssize_t)st.st_size + 1 - total;
        if (want < 65536) want = 65536;
        if (total + want > *cap) {
            char *grown = (char *)PyMem_Realloc(*buf, (size_t)(total + want));
            if (grown == NULL) {
                close(fd);
                PyErr_NoMemory();
                return ERROR;
            }
            *buf = grown;
            *cap = total + want;
        }
        ssize_t got = read(fd, *buf + total, (size_t)(*cap - total));
        if (got < 0) {
            if (errno == EINTR) continue;
            close(fd);
            return REFUSE;
        }
        if (got == 0) break;
        total += got;
        if ((int64_t)total > limit) {
            close(fd);
            return REFUSE;
        }
    }
    /* changed while read (rewritten in place, or another file renamed over the path, as
     * deteval.io._text.check_unchanged tells): OSError(ESTALE, ..., path), which yolo.py reports */
    struct stat after, now;
    int changed = fstat(fd, &after) != 0 || stat(path, &now) != 0 || !same_state(&st, &after) ||
                  !same_state(&st, &now) || (st.st_size > 0 && (int64_t)total != (int64_t)st.st_size);
    close(fd);
    if (changed) {
        errno = ESTALE;
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
        return ERROR;
    }
    const int64_t values[STAT_FIELDS] = {
        (int64_t)st.st_mode, (int64_t)st.st_ino,   (int64_t)st.st_dev,   (int64_t)st.st_nlink,
        (int64_t)st.st_uid,  (int64_t)st.st_gid,   (int64_t)st.st_size,  (int64_t)st.st_atime,
        (int64_t)st.st_mtime, (int64_t)st.st_ctime,
    };
    memcpy(fields, values, sizeof values);
    *len = total;
    return OK;
}
#endif

/* Normalized ``cx cy w h`` of ``rows`` rows (5 numbers a row from ``numbers + offset``) into pixel boxes
 * ``[x, y, w, h]`` and the score (the number at ``score_at``), operation by operation as yolo.py's
 * _to_pixels does them in numpy: x = (cx - w / 2) * width. The volatile half keeps a compiler from
 * fusing the subtraction and a multiplication by 0.5 into one FMA (a subnormal w would round apart).
 * REFUSE when a width or height is negative or a box not finite (the Python reader names them); for
 * label rows (``score`` NULL), also when a number is outside [0, 1]. */
static int yolo_boxes(const double *numbers, Py_ssize_t rows, int offset, int score_at, double width,
                      double height, double *box, double *score) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        const double *v = numbers + 5 * r + offset;
        if (v[2] < 0 || v[3] < 0) return REFUSE;
        if (score == NULL && (v[0] < 0 || v[0] > 1 || v[1] < 0 || v[1] > 1 || v[2] > 1 || v[3] > 1))
            return REFUSE;
        volatile double half_w = v[2] / 2, half_h = v[3] / 2;
        double x = (v[0] - half_w) * width, y = (v[1] - half_h) * height;
        double w = v[2] * width, h = v[3] * height;
        if (!isfinite(x) || !isfinite(y) || !isfinite(w) || !isfinite(h)) return REFUSE;
        box[4 * r] = x;
        box[4 * r + 1] = y;
        box[4 * r + 2] = w;
        box[4 * r + 3] = h;
        if (score != NULL) score[r] = numbers[5 * r + score_at];
    }
    return OK;
}

PyDoc_STRVAR(yolo_files_doc,
             "yolo_files(paths, limit, width, height, layout, /)\n--\n\n"
             "Read and parse every YOLO prediction (or label) file of ``paths`` (a list), in order.\n\n"
             "Rows as text_rows reads them with an integer class id first, then by ``layout``: 0\n"
             "``cx cy w h conf``, 1 ``conf cx cy w h``, 2 ``cx cy w h`` (labels: no score, every number\n"
             "in [0, 1]), normalized: boxes are scaled by the file's image\n"
             "``width[f]`` and ``height[f]`` (float64 buffers, one per file) as yolo.py's _to_pixels does.\n"
             "Returns the bytearrays (class_ids int64, box float64 [x, y, w, h] per row, score float64,\n"
             "lines int64, counts int64 rows per file, stats int64 10 per file: the os.stat_result\n"
             "fields of the opened file), or None when any file cannot be opened or read, is not a\n"
             "regular file, holds more than ``limit`` bytes or a line that is not plain, or a row has a\n"
             "negative width or height or a box that is not finite in pixels (the Python reader decides\n"
             "then). OSError (errno ESTALE, the file name) when a file changed while read (its size,\n"
             "modification time, inode or device differ after the read). POSIX only: None elsewhere.");

static PyObject *yolo_files(PyObject *self, PyObject *args) {
    PyObject *paths, *width_obj, *height_obj;
    long long limit;
    int layout;
    if (!PyArg_ParseTuple(args, "O!LOOi:yolo_files", &PyList_Type, &paths, &limit, &width_obj, &height_obj,
                          &layout))
        return NULL;
    if (layout < 0 || layout > 2) {
        PyErr_SetString(PyExc_ValueError, "layout must be 0, 1 or 2");
        return NULL;
    }
    int labels = layout == 2;
#ifdef _WIN32
    Py_RETURN_NONE;
#else
    /* A tuple of the paths, holding each: a path's __fspath__ runs Python code that may change the
     * list (the tuple keeps its length and its items alive). */
    PyObject *path_items = PyList_AsTuple(paths);
    if (path_items == NULL) return NULL;
    Py_ssize_t n_files = PyTuple_GET_SIZE(path_items);
    /* class_ids, box, score, lines, counts, stats */
    PyObject *out[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    PyObject *result = NULL;
    Column sizes[2];
    memset(sizes, 0, sizeof sizes);
    char *buf = NULL;
    double *numbers = NULL;
    Py_ssize_t cap = 0, numbers_cap = 0, n = 0;
    int status = OK;
    if (get_arr(width_obj, 'f', 0, &sizes[0], "_colparse") != OK || get_arr(height_obj, 'f', 0, &sizes[1], "_colparse") != OK)
        goto done;
    if (sizes[0].view.len / 8 != n_files || sizes[1].view.len / 8 != n_files) {
        PyErr_SetString(PyExc_ValueError, "width and height must hold one value per path");
        goto done;
    }
    const double *width = (const double *)sizes[0].view.buf, *height = (const double *)sizes[1].view.buf;
    for (int i = 0; i < 6; i++) {
        out[i] = PyByteArray_FromStringAndSize(NULL, 0);
        if (out[i] == NULL) goto done;
    }
    if (reserve(out[4], 8 * n_files) != OK || reserve(out[5], 8 * STAT_FIELDS * n_files) != OK) goto done;
    for (Py_ssize_t f = 0; status == OK && f < n_files; f++) {
        PyObject *encoded = NULL;
        if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(path_items, f), &encoded)) {
            if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_TypeError)) goto done;
            PyErr_Clear(); /* an embedded NUL, not a path: the Python reader names it */
            status = REFUSE;
            break;
        }
        Py_ssize_t len = 0;
        int64_t *fields = (int64_t *)PyByteArray_AS_STRING(out[5]) + STAT_FIELDS * f;
        status = read_whole(PyBytes_AS_STRING(encoded), limit, &buf, &cap, &len, fields);
        Py_DECREF(encoded);
        if (status != OK) break;
        /* the shortest row, `0 1 1 1 1 1\n`, is 12 bytes (a label row, `0 1 1 1 1\n`, 10) */
        Py_ssize_t rows = len / (labels ? 10 : 12) + 1;
        if (reserve(out[0], 8 * (n + rows)) != OK || reserve(out[1], 32 * (n + rows)) != OK ||
            (!labels && reserve(out[2], 8 * (n + rows)) != OK) || reserve(out[3], 8 * (n + rows)) != OK)
            goto done;
        if (rows > numbers_cap) {
            double *grown = (double *)PyMem_Realloc(numbers, (size_t)rows * 5 * sizeof(double));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            numbers = grown;
            numbers_cap = rows;
        }
        Cursor c = {buf, buf + len};
        Py_ssize_t got = 0;
        status = parse_text_rows(&c, FIRST_INT, NULL, labels ? 4 : 5, rows, NULL, (int64_t *)PyByteArray_AS_STRING(out[0]) + n,
                                 numbers, (int64_t *)PyByteArray_AS_STRING(out[3]) + n, &got);
        if (status != OK) break;
        status = yolo_boxes(numbers, got, layout == 1 ? 1 : 0, layout == 1 ? 0 : 4, width[f], height[f],
                            (double *)PyByteArray_AS_STRING(out[1]) + 4 * n,
                            labels ? NULL : (double *)PyByteArray_AS_STRING(out[2]) + n);
        if (status != OK) break;
        ((int64_t *)PyByteArray_AS_STRING(out[4]))[f] = (int64_t)got;
        n += got;
    }
    if (status == ERROR) goto done;
    if (status != OK) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (PyByteArray_Resize(out[0], 8 * n) != 0 || PyByteArray_Resize(out[1], 32 * n) != 0 ||
        PyByteArray_Resize(out[2], labels ? 0 : 8 * n) != 0 || PyByteArray_Resize(out[3], 8 * n) != 0 ||
        PyByteArray_Resize(out[4], 8 * n_files) != 0 || PyByteArray_Resize(out[5], 8 * STAT_FIELDS * n_files) != 0)
        goto done;
    result = PyTuple_Pack(6, out[0], out[1], out[2], out[3], out[4], out[5]);
done:
    PyMem_Free(numbers);
    PyMem_Free(buf);
    for (int i = 0; i < 2; i++) {
        if (sizes[i].held) PyBuffer_Release(&sizes[i].view);
    }
    for (int i = 0; i < 6; i++) Py_XDECREF(out[i]);
    Py_DECREF(path_items);
    return result;
#endif
}

/* ---- in-memory records: lists of dicts (json.load output, a training loop's records) ---- */

/* Interned keys, made once. */
static PyObject *KEY_OBJ[16];
static const char *const KEY_NAMES[] = {"image_id", "category_id", "bbox", "score", "id", "area", "iscrowd",
                                        "segmentation", "ignore", "difficult", NULL};
enum { K_IMAGE_ID, K_CATEGORY_ID, K_BBOX, K_SCORE, K_ID, K_AREA, K_ISCROWD, K_SEGMENTATION, K_IGNORE, K_DIFFICULT };

static int intern_keys(void) {
    for (int k = 0; KEY_NAMES[k] != NULL; k++) {
        if (KEY_OBJ[k] != NULL) continue;
        KEY_OBJ[k] = PyUnicode_InternFromString(KEY_NAMES[k]);
        if (KEY_OBJ[k] == NULL) return ERROR;
    }
    return OK;
}

/* Whether ``record`` is an exact dict whose keys are all exact str: looking a key up in it then
 * runs no Python code (no __eq__ or __hash__ of a str subclass), and neither does reading exact
 * int, float, list and tuple values, so nothing can change the records while they are read. A
 * record with any other key is REFUSEd: the twin (msgspec, then the full loader) reads it. */
static int plain_record(PyObject *record) {
    if (!PyDict_CheckExact(record)) return 0;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(record, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) return 0;
    }
    return 1;
}

/* ``record[key]``, borrowed; REFUSE when absent. */
static int get_field(PyObject *record, int key, PyObject **out) {
    *out = PyDict_GetItemWithError(record, KEY_OBJ[key]);
    if (*out == NULL) return PyErr_Occurred() ? ERROR : REFUSE;
    return OK;
}

/* An exact ``int`` within int64 (no bool, no float, no numpy scalar: those are for the full path). */
static int object_int64(PyObject *value, int64_t *out) {
    if (!PyLong_CheckExact(value)) return REFUSE;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow) return REFUSE;
    if (v == -1 && PyErr_Occurred()) return ERROR;
    *out = (int64_t)v;
    return OK;
}

/* An exact ``float``, or an exact ``int`` as the correctly rounded double (as float() reads it). */
static int object_double(PyObject *value, double *out) {
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return OK;
    }
    if (!PyLong_CheckExact(value)) return REFUSE;
    double v = PyLong_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return ERROR;
        PyErr_Clear(); /* larger than a double: the full path names it */
        return REFUSE;
    }
    *out = v;
    return OK;
}

/* A list or tuple of exactly 4 numbers (exact float or int). */
static int object_box(PyObject *value, double *out) {
    if (!(PyList_CheckExact(value) || PyTuple_CheckExact(value)) || PySequence_Fast_GET_SIZE(value) != 4)
        return REFUSE;
    PyObject **items = PySequence_Fast_ITEMS(value);
    for (int j = 0; j < 4; j++) {
        int status = object_double(items[j], &out[j]);
        if (status != OK) return status;
    }
    return OK;
}

PyDoc_STRVAR(box_records_doc,
             "box_records(records, image_id, category_id, bbox, score, /)\n--\n\n"
             "Read the list ``records`` of box-result dicts into the given columns (as box_results).\n\n"
             "Returns the record count, or None unless every record is an exact ``dict`` with exactly the\n"
             "keys image_id, category_id, bbox, score: ids exact ``int`` within int64, a bbox list or\n"
             "tuple of 4 numbers, numbers exact ``float`` or ``int`` (no bool, no numpy scalar).");

static PyObject *box_records(PyObject *self, PyObject *args) {
    PyObject *records, *objs[4];
    if (!PyArg_ParseTuple(args, "O!OOOO:box_records", &PyList_Type, &records, &objs[0], &objs[1], &objs[2],
                          &objs[3]))
        return NULL;
    if (intern_keys() != OK) return NULL;
    Column cols[4];
    memset(cols, 0, sizeof cols);
    PyObject *result = NULL, *items = NULL;
    static const char kinds[4] = {'i', 'i', 'f', 'f'};
    for (int i = 0; i < 4; i++) {
        if (get_arr(objs[i], kinds[i], 1, &cols[i], "_colparse") != OK) goto done;
    }
    /* A tuple of the records, holding each (the loop runs no Python code, see plain_record, but
     * the compiled reader never relies on a list keeping its length or its items). */
    items = PyList_AsTuple(records);
    if (items == NULL) goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int status = n > 0 ? OK : REFUSE;
    if (cols[0].view.len / 8 < n || cols[1].view.len / 8 < n || cols[2].view.len / 32 < n ||
        cols[3].view.len / 8 < n)
        status = REFUSE;
    int64_t *image_id = (int64_t *)cols[0].view.buf, *category_id = (int64_t *)cols[1].view.buf;
    double *bbox = (double *)cols[2].view.buf, *score = (double *)cols[3].view.buf;
    for (Py_ssize_t i = 0; status == OK && i < n; i++) {
        PyObject *record = PyTuple_GET_ITEM(items, i), *value;
        if (!plain_record(record) || PyDict_GET_SIZE(record) != 4) {
            status = REFUSE;
            break;
        }
        if ((status = get_field(record, K_IMAGE_ID, &value)) != OK) break;
        if ((status = object_int64(value, &image_id[i])) != OK) break;
        if ((status = get_field(record, K_CATEGORY_ID, &value)) != OK) break;
        if ((status = object_int64(value, &category_id[i])) != OK) break;
        if ((status = get_field(record, K_BBOX, &value)) != OK) break;
        if ((status = object_box(value, &bbox[4 * i])) != OK) break;
        if ((status = get_field(record, K_SCORE, &value)) != OK) break;
        status = object_double(value, &score[i]);
    }
    if (status == ERROR) goto done;
    result = status == OK ? PyLong_FromSsize_t(n) : Py_NewRef(Py_None);
done:
    for (int i = 0; i < 4; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    Py_XDECREF(items);
    return result;
}

PyDoc_STRVAR(annotation_records_doc,
             "annotation_records(records, id, image_id, category_id, bbox, area, iscrowd, ignore, difficult, /)\n"
             "--\n\n"
             "Read the list ``records`` of COCO annotation dicts into the given columns (as instances).\n\n"
             "Returns the record count, or None unless every record is an exact ``dict`` whose keys are\n"
             "id, image_id, category_id, bbox, area, iscrowd and any of segmentation, ignore, difficult:\n"
             "ids and flags exact ``int`` within int64, a bbox list or tuple of 4 numbers, numbers exact\n"
             "``float`` or ``int``. Segmentations are not read (the caller keeps the objects).");

static PyObject *annotation_records(PyObject *self, PyObject *args) {
    PyObject *records, *objs[8];
    if (!PyArg_ParseTuple(args, "O!OOOOOOOO:annotation_records", &PyList_Type, &records, &objs[0], &objs[1],
                          &objs[2], &objs[3], &objs[4], &objs[5], &objs[6], &objs[7]))
        return NULL;
    if (intern_keys() != OK) return NULL;
    Column cols[8];
    memset(cols, 0, sizeof cols);
    /* id, image_id, category_id, bbox, area, iscrowd, ignore, difficult */
    static const char kinds[8] = {'i', 'i', 'i', 'f', 'f', 'i', 'i', 'i'};
    PyObject *result = NULL, *items = PyList_AsTuple(records); /* holds the records: see box_records */
    if (items == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int status = n > 0 ? OK : REFUSE;
    for (int i = 0; i < 8; i++) {
        if (get_arr(objs[i], kinds[i], 1, &cols[i], "_colparse") != OK) goto done;
        if (cols[i].view.len / (i == 3 ? 32 : 8) < n) status = REFUSE;
    }
    int64_t *id = (int64_t *)cols[0].view.buf, *image_id = (int64_t *)cols[1].view.buf;
    int64_t *category_id = (int64_t *)cols[2].view.buf, *iscrowd = (int64_t *)cols[5].view.buf;
    int64_t *ignore = (int64_t *)cols[6].view.buf, *difficult = (int64_t *)cols[7].view.buf;
    double *bbox = (double *)cols[3].view.buf, *area = (double *)cols[4].view.buf;
    for (Py_ssize_t i = 0; status == OK && i < n; i++) {
        PyObject *record = PyTuple_GET_ITEM(items, i), *value;
        if (!plain_record(record)) {
            status = REFUSE;
            break;
        }
        if ((status = get_field(record, K_ID, &value)) != OK) break;
        if ((status = object_int64(value, &id[i])) != OK) break;
        if ((status = get_field(record, K_IMAGE_ID, &value)) != OK) break;
        if ((status = object_int64(value, &image_id[i])) != OK) break;
        if ((status = get_field(record, K_CATEGORY_ID, &value)) != OK) break;
        if ((status = object_int64(value, &category_id[i])) != OK) break;
        if ((status = get_field(record, K_BBOX, &value)) != OK) break;
        if ((status = object_box(value, &bbox[4 * i])) != OK) break;
        if ((status = get_field(record, K_AREA, &value)) != OK) break;
        if ((status = object_double(value, &area[i])) != OK) break;
        if ((status = get_field(record, K_ISCROWD, &value)) != OK) break;
        if ((status = object_int64(value, &iscrowd[i])) != OK) break;
        Py_ssize_t keys = 6;
        status = get_field(record, K_SEGMENTATION, &value);
        if (status == ERROR) break;
        keys += status == OK;
        ignore[i] = 0;
        difficult[i] = 0;
        status = get_field(record, K_IGNORE, &value);
        if (status == OK) {
            keys++;
            status = object_int64(value, &ignore[i]);
            if (status != OK) break;
        } else if (status == ERROR) {
            break;
        }
        status = get_field(record, K_DIFFICULT, &value);
        if (status == OK) {
            keys++;
            status = object_int64(value, &difficult[i]);
            if (status != OK) break;
        } else if (status == ERROR) {
            break;
        }
        status = PyDict_GET_SIZE(record) == keys ? OK : REFUSE; /* no other key */
    }
    if (status == ERROR) goto done;
    result = status == OK ? PyLong_FromSsize_t(n) : Py_NewRef(Py_None);
done:
    for (int i = 0; i < 8; i++) {
        if (cols[i].held) PyBuffer_Release(&cols[i].view);
    }
    Py_DECREF(items);
    return result;
}

static PyMethodDef colparse_methods[] = {
    {"_parts_refused", parts_refused, METH_NOARGS,
     "_parts_refused()\n--\n\nHow many calls so far parsed a file again on one thread after a part was refused."},
    {"box_results", box_results, METH_VARARGS, box_results_doc},
    {"box_results_part", box_results_part, METH_VARARGS, box_results_part_doc},
    {"text_rows", text_rows, METH_VARARGS, text_rows_doc},
    {"key_slots", key_slots, METH_VARARGS, key_slots_doc},
    {"voc_rows", voc_rows, METH_VARARGS, voc_rows_doc},
    {"yolo_files", yolo_files, METH_VARARGS, yolo_files_doc},
    {"instances", instances, METH_VARARGS, instances_doc},
    {"images", images, METH_VARARGS, images_doc},
    {"box_records", box_records, METH_VARARGS, box_records_doc},
    {"annotation_records", annotation_records, METH_VARARGS, annotation_records_doc},
    {"segm_results", segm_results, METH_VARARGS, segm_results_doc},
    {"rle_results", rle_results, METH_VARARGS, rle_results_doc},
    {"rle_results_part", rle_results_part, METH_VARARGS, rle_results_part_doc},
    {"rle_spans", rle_spans, METH_VARARGS, rle_spans_doc},
    {"polygon_spans", polygon_spans, METH_VARARGS, polygon_spans_doc},
    {"keypoint_results", keypoint_results, METH_VARARGS, keypoint_results_doc},
    {NULL, NULL, 0, NULL},
};

DETEVAL_MODULE(_colparse, "deteval.io._colparse",
               "COCO box-results JSON parsed straight into columns (optional; deteval.io.coco.fast has the twin).",
               colparse_methods, COLPARSE_ABI, NULL)
