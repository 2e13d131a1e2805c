/* spillscope._native: single-pass byte scanners over transcript fragment lines.
 *
 * An accelerator only: every function has a pure-Python twin that defines its result
 * (spillscope.inspect.search_escapes.deframe / canonical_escapes, and the parser +
 * TranscriptIndex._index_batch for index_lines), and the tests run both on the same
 * inputs. Where a line is anything but the plain, strict JSON string the writer emits,
 * index_lines stops and says "irregular": the Python path then decides (and locates the
 * error). The big loops run without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <stdint.h>

#define BIG 65536  /* buffers at least this big are scanned without the GIL */

/* ---------------------------------------------------------------------------------
 * deframe(buf, end=len(buf)) -> bytes | None
 *
 * Exactly search_escapes.deframe(buf[:end]) (None where it raises ValueError):
 * the lines must start with '"' and end with '"\n'; body = replace(b'"\n"', b'')
 * (left to right, non-overlapping); no '\n' may remain in body[1:-1]; the result is
 * body[1:-2].
 */
static Py_ssize_t deframe_into(const unsigned char *in, Py_ssize_t n, unsigned char *out) {
    /* returns the body length written to out, or -1 when a stray newline remains */
    Py_ssize_t o = 0, seg = 0, i = 0, last_end = 0; /* last_end: end of the last match */
    while (i < n) {
        const unsigned char *nl = memchr(in + i, '\n', (size_t)(n - i));
        if (nl == NULL) break;
        Py_ssize_t j = nl - in;
        if (j >= 1 && j - 1 >= last_end && in[j - 1] == '"' && j + 1 < n && in[j + 1] == '"') {
            /* a match at j-1 .. j+2: copy what comes before it */
            memcpy(out + o, in + seg, (size_t)(j - 1 - seg));
            o += j - 1 - seg;
            seg = last_end = j + 2;
            i = j + 2;
        } else {
            /* this newline stays in the body, at out position o + (j - seg) */
            Py_ssize_t at = o + (j - seg);
            if (j != n - 1 && at >= 1) return -1;
            i = j + 1;
        }
    }
    memcpy(out + o, in + seg, (size_t)(n - seg));
    o += n - seg;
    return o;
}

static PyObject *native_deframe(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t end = -1;
    if (!PyArg_ParseTuple(args, "y*|n", &view, &end)) return NULL;
    const unsigned char *in = (const unsigned char *)view.buf;
    Py_ssize_t n = (end < 0 || end > view.len) ? view.len : end;
    if (n < 2 || in[0] != '"' || in[n - 2] != '"' || in[n - 1] != '\n') {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    unsigned char *tmp = PyMem_RawMalloc((size_t)n);
    if (tmp == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Py_ssize_t o;
    if (n >= BIG) {
        Py_BEGIN_ALLOW_THREADS
        o = deframe_into(in, n, tmp);
        Py_END_ALLOW_THREADS
    } else {
        o = deframe_into(in, n, tmp);
    }
    PyBuffer_Release(&view);
    PyObject *res;
    if (o < 0) {
        res = Py_None;
        Py_INCREF(res);
    } else if (o < 3) {
        res = PyBytes_FromStringAndSize("", 0); /* body[1:-2] of a body shorter than 3 */
    } else {
        res = PyBytes_FromStringAndSize((const char *)tmp + 1, o - 3);
    }
    PyMem_RawFree(tmp);
    return res;
}

/* ---------------------------------------------------------------------------------
 * canonical(buf) -> bool: exactly search_escapes.canonical_escapes(buf).
 */
static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(const unsigned char *p, int *upper) {
    int v = 0;
    *upper = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p[k]);
        if (h < 0) return -1;
        if (p[k] >= 'A' && p[k] <= 'F') *upper = 1;
        v = (v << 4) | h;
    }
    return v;
}

static int canonical_scan(const unsigned char *b, Py_ssize_t n) {
    /* A '\/' anywhere, in any run, is not canonical (the Python guard is that coarse). */
    Py_ssize_t i = 0, prev_bs = -2, run = 0, prev_high_end = -1;
    while (i < n) {
        const unsigned char *q = memchr(b + i, '\\', (size_t)(n - i));
        if (q == NULL) break;
        Py_ssize_t p = q - b;
        /* run: how many backslashes end just before p */
        run = (prev_bs == p - 1) ? run + 1 : 0;
        prev_bs = p;
        if (p + 1 < n && b[p + 1] == '/') return 0;
        if (p + 5 < n && b[p + 1] == 'u') {
            int upper;
            int v = hex4(b + p + 2, &upper);
            if (v >= 0 && !(run % 2 == 1)) {
                if (upper) return 0;
                if (v >= 0xD800 && v <= 0xDBFF) {
                    prev_high_end = p + 6;
                } else {
                    if (v >= 0xDC00 && v <= 0xDFFF) {
                        if (prev_high_end == p) return 0;
                    } else if (v >= 0x20 || v == 8 || v == 9 || v == 10 || v == 12 || v == 13) {
                        return 0;
                    }
                    prev_high_end = -1;
                }
            }
        }
        i = p + 1;
    }
    return 1;
}

static PyObject *native_canonical(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    int ok;
    if (view.len >= BIG) {
        Py_BEGIN_ALLOW_THREADS
        ok = canonical_scan((const unsigned char *)view.buf, view.len);
        Py_END_ALLOW_THREADS
    } else {
        ok = canonical_scan((const unsigned char *)view.buf, view.len);
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

/* ---------------------------------------------------------------------------------
 * index_lines(buf, end, at_eof, fragments, max_line, base, cp, nbytes, newlines)
 *   -> (status, used, lines, cp, nbytes, newlines, checkpoints: bytes)
 *
 * Walks the fragment lines of one message in buf[:end] (buf starts on a line; ``base``
 * is its file offset). Each line must be a strict JSON string of 1..64 code points, as
 * orjson decodes it: valid UTF-8 (no surrogates, no overlongs), no raw control
 * character, known escapes only, \uXXXX pairs only as a high escape directly followed by
 * a low one (a lone surrogate is irregular: the Python path keeps it). Totals are of the
 * decoded text: code points, UTF-8 bytes, newlines. Before every line whose fragment
 * number (``fragments`` + lines so far) is a multiple of 128, a checkpoint (file
 * offset, cp, bytes, newlines before it) is appended as four native int64.
 * status: 0 = more (stopped at the end of the whole lines in buf), 1 = a blank line at
 * ``used`` ends the message, 2 = the line at ``used`` is irregular (or unterminated).
 */
#define CHECKPOINT_EVERY 128
#define FRAGMENT_CODE_POINTS 64

static int scan_line(const unsigned char *p, Py_ssize_t n, long long *cp, long long *ub, long long *nl) {
    if (n < 2 || p[0] != '"' || p[n - 1] != '"') return -1;
    Py_ssize_t i = 1, end = n - 1;
    long long c = 0, u = 0, l = 0;
    while (i < end) {
        unsigned char ch = p[i];
        if (ch < 0x80) {
            if (ch == '\\') {
                if (i + 1 >= end) return -1;
                unsigned char e = p[i + 1];
                switch (e) {
                case '"': case '\\': case '/': case 'b': case 'f': case 'r': case 't':
                    c++; u++; i += 2; break;
                case 'n':
                    c++; u++; l++; i += 2; break;
                case 'u': {
                    int upper;
                    if (i + 5 >= end) return -1;
                    int v = hex4(p + i + 2, &upper);
                    if (v < 0) return -1;
                    if (v >= 0xD800 && v <= 0xDBFF) {
                        if (i + 11 >= end || p[i + 6] != '\\' || p[i + 7] != 'u') return -1;
                        int w = hex4(p + i + 8, &upper);
                        if (w < 0xDC00 || w > 0xDFFF) return -1;
                        c++; u += 4; i += 12;
                    } else if (v >= 0xDC00 && v <= 0xDFFF) {
                        return -1;
                    } else {
                        c++;
                        u += v < 0x80 ? 1 : v < 0x800 ? 2 : 3;
                        if (v == 0x0A) l++;
                        i += 6;
                    }
                    break;
                }
                default:
                    return -1;
                }
            } else if (ch == '"' || ch < 0x20) {
                return -1;
            } else {
                c++; u++; i++;
            }
        } else {
            /* strict UTF-8; the continuation bytes must lie before the closing quote */
            int len;
            if (ch >= 0xC2 && ch <= 0xDF) {
                len = 2;
                if (i + 1 >= end || (p[i + 1] & 0xC0) != 0x80) return -1;
            } else if (ch >= 0xE0 && ch <= 0xEF) {
                len = 3;
                if (i + 2 >= end) return -1;
                unsigned char b1 = p[i + 1];
                unsigned char lo = ch == 0xE0 ? 0xA0 : 0x80, hi = ch == 0xED ? 0x9F : 0xBF;
                if (b1 < lo || b1 > hi || (p[i + 2] & 0xC0) != 0x80) return -1;
            } else if (ch >= 0xF0 && ch <= 0xF4) {
                len = 4;
                if (i + 3 >= end) return -1;
                unsigned char b1 = p[i + 1];
                unsigned char lo = ch == 0xF0 ? 0x90 : 0x80, hi = ch == 0xF4 ? 0x8F : 0xBF;
                if (b1 < lo || b1 > hi || (p[i + 2] & 0xC0) != 0x80 || (p[i + 3] & 0xC0) != 0x80) return -1;
            } else {
                return -1;
            }
            c++; u += len; i += len;
        }
    }
    if (c < 1 || c > FRAGMENT_CODE_POINTS) return -1;
    *cp += c;
    *ub += u;
    *nl += l;
    return 0;
}

typedef struct {
    const unsigned char *buf;
    Py_ssize_t end;
    int at_eof;
    long long fragments, max_line, base;
    long long cp, ub, nl;
    /* out */
    int status;
    Py_ssize_t used;
    long long lines;
    long long *cps;
    Py_ssize_t ncps, cap;
    int nomem;
} index_job;

static void index_run(index_job *j) {
    Py_ssize_t pos = 0;
    j->status = 0;
    j->lines = 0;
    while (pos < j->end) {
        const unsigned char *q = memchr(j->buf + pos, '\n', (size_t)(j->end - pos));
        if (q == NULL) {
            if (j->at_eof) j->status = 2; /* a last line without its newline */
            break;
        }
        Py_ssize_t len = q - (j->buf + pos);
        if (len == 0) {
            j->status = 1;
            break;
        }
        if (len > j->max_line) {
            j->status = 2;
            break;
        }
        long long cp = j->cp, ub = j->ub, nl = j->nl;
        if (scan_line(j->buf + pos, len, &j->cp, &j->ub, &j->nl) < 0) {
            j->status = 2;
            break;
        }
        if ((j->fragments + j->lines) % CHECKPOINT_EVERY == 0) {
            if (j->ncps + 4 > j->cap) {
                Py_ssize_t cap = j->cap ? j->cap * 2 : 1024;
                long long *grown = realloc(j->cps, (size_t)cap * sizeof(long long));
                if (grown == NULL) {
                    j->nomem = 1;
                    break;
                }
                j->cps = grown;
                j->cap = cap;
            }
            j->cps[j->ncps++] = j->base + pos;
            j->cps[j->ncps++] = cp;
            j->cps[j->ncps++] = ub;
            j->cps[j->ncps++] = nl;
        }
        j->lines++;
        pos += len + 1;
    }
    j->used = pos;
}

static PyObject *native_index_lines(PyObject *self, PyObject *args) {
    Py_buffer view;
    index_job j;
    memset(&j, 0, sizeof j);
    Py_ssize_t end;
    if (!PyArg_ParseTuple(args, "y*npLLLLLL", &view, &end, &j.at_eof, &j.fragments, &j.max_line, &j.base,
                          &j.cp, &j.ub, &j.nl))
        return NULL;
    j.buf = (const unsigned char *)view.buf;
    j.end = (end < 0 || end > view.len) ? view.len : end;
    if (j.end >= BIG) {
        Py_BEGIN_ALLOW_THREADS
        index_run(&j);
        Py_END_ALLOW_THREADS
    } else {
        index_run(&j);
    }
    PyBuffer_Release(&view);
    if (j.nomem) {
        free(j.cps);
        return PyErr_NoMemory();
    }
    PyObject *cps = PyBytes_FromStringAndSize((const char *)j.cps, (Py_ssize_t)(j.ncps * sizeof(long long)));
    free(j.cps);
    if (cps == NULL) return NULL;
    return Py_BuildValue("inLLLLN", j.status, j.used, j.lines, j.cp, j.ub, j.nl, cps);
}

static PyMethodDef methods[] = {
    {"deframe", native_deframe, METH_VARARGS, "deframe(buf, end=len(buf)) -> bytes | None"},
    {"canonical", native_canonical, METH_VARARGS, "canonical(buf) -> bool"},
    {"index_lines", native_index_lines, METH_VARARGS,
     "index_lines(buf, end, at_eof, fragments, max_line, base, cp, nbytes, newlines) -> tuple"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "Single-pass scanners (see _native.c).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
