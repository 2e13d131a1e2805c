/* spillscope._native: single-pass byte scanners over transcript fragment lines.
 *
 * An accelerator only: every function has a pure-Python twin that defines its result,
 * and the tests run both on the same inputs:
 *   deframe, deframe_into  search_escapes.deframe
 *   canonical              search_escapes.canonical_escapes
 *   find                   bytes.find
 *   escaped_stats          len() and utf8_len() of search_escapes.decode_escaped
 *   index_lines            the parser's fragments + TranscriptIndex._index_batch
 * Where the input is anything but the plain, strict JSON text the writer emits, they say
 * so (None, or "irregular") and the Python path decides (and locates any error). The big
 * loops run without the GIL; SSE2 (every x86-64) where it pays, plain C elsewhere.
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
#if defined(__SSE2__)
#include <emmintrin.h>
#define VEC 16
/* Bit i set where block[i] == c. */
static inline unsigned vec_mask(const unsigned char *block, unsigned char c) {
    __m128i v = _mm_loadu_si128((const __m128i *)block);
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)c)));
}
#endif

/* Writes body[start:] to out, which must have room for n + 16 bytes (whole 16-byte
 * blocks are stored, then counted); start is 0, or 1 when in[0] is a quote that no
 * match can take (in[1] is not a newline). Returns the body length, or -1 when a stray
 * newline remains. */
static Py_ssize_t deframe_into(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t start) {
    Py_ssize_t o = 0, i = start, last_end = 0; /* last_end: end of the last match */
    while (i < n) {
        /* copy up to the next newline */
        Py_ssize_t j;
#if defined(__SSE2__)
        for (;;) {
            if (i + VEC > n) {
                const unsigned char *q = memchr(in + i, '\n', (size_t)(n - i));
                j = q == NULL ? n : q - in;
                memcpy(out + o, in + i, (size_t)(j - i));
                o += j - i;
                break;
            }
            __m128i v = _mm_loadu_si128((const __m128i *)(in + i));
            unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
            _mm_storeu_si128((__m128i *)(out + o), v);
            if (m == 0) {
                o += VEC;
                i += VEC;
                continue;
            }
            int k = __builtin_ctz(m);
            o += k;
            j = i + k;
            break;
        }
#else
        {
            const unsigned char *q = memchr(in + i, '\n', (size_t)(n - i));
            j = q == NULL ? n : q - in;
            memcpy(out + o, in + i, (size_t)(j - i));
            o += j - i;
        }
#endif
        if (j >= n) break;
        /* in[j] is a newline; out[o-1] holds in[j-1] when j > i */
        if (j >= 1 && j - 1 >= last_end && in[j - 1] == '"' && j + 1 < n && in[j + 1] == '"') {
            o -= 1; /* the quote before it was copied: take it back */
            last_end = j + 2;
            i = j + 2;
        } else {
            if (j != n - 1 && o + start >= 1) return -1; /* a newline that stays inside the body */
            out[o++] = '\n';
            i = j + 1;
        }
    }
    return o + start;
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
    /* The result is written in place into a bytes object 16 bytes too big, then shrunk:
     * no second buffer, no copy. */
    PyObject *res = PyBytes_FromStringAndSize(NULL, n + 16);
    if (res == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(res);
    Py_ssize_t o, start = in[1] != '\n'; /* body[0] is then in[0]: skip it */
    if (n >= BIG) {
        Py_BEGIN_ALLOW_THREADS
        o = deframe_into(in, n, out, start);
        Py_END_ALLOW_THREADS
    } else {
        o = deframe_into(in, n, out, start);
    }
    PyBuffer_Release(&view);
    if (o < 0) {
        Py_DECREF(res);
        Py_RETURN_NONE;
    }
    /* body[1:-2]; a body shorter than 3 gives b"" */
    Py_ssize_t len = o < 3 ? 0 : o - 3;
    if (len > 0 && !start) memmove(out, out + 1, (size_t)len);
    if (_PyBytes_Resize(&res, len) < 0) return NULL;
    return res;
}

/* deframe_into(buf, end, out: bytearray) -> int: deframe(buf, end) written into ``out``
 * (resized to the result; a bytearray keeps its allocation when it shrinks, so a reused
 * one costs no allocation per window); -1 (and ``out`` emptied) where deframe gives None. */
static PyObject *native_deframe_into(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t end;
    PyObject *dst;
    if (!PyArg_ParseTuple(args, "y*nO!", &view, &end, &PyByteArray_Type, &dst)) return NULL;
    const unsigned char *in = (const unsigned char *)view.buf;
    Py_ssize_t n = (end < 0 || end > view.len) ? view.len : end, len = -1;
    if (n >= 2 && in[0] == '"' && in[n - 2] == '"' && in[n - 1] == '\n') {
        if (PyByteArray_Resize(dst, n + 16) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        unsigned char *out = (unsigned char *)PyByteArray_AS_STRING(dst);
        Py_ssize_t o, start = in[1] != '\n';
        if (n >= BIG) {
            Py_BEGIN_ALLOW_THREADS
            o = deframe_into(in, n, out, start);
            Py_END_ALLOW_THREADS
        } else {
            o = deframe_into(in, n, out, start);
        }
        if (o >= 0) {
            len = o < 3 ? 0 : o - 3;
            if (len > 0 && !start) memmove(out, out + 1, (size_t)len);
        }
    }
    PyBuffer_Release(&view);
    if (PyByteArray_Resize(dst, len < 0 ? 0 : len) < 0) return NULL;
    return PyLong_FromSsize_t(len);
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

/* One backslash at p: 0 when its escape is not canonical. */
static inline int canonical_at(const unsigned char *b, Py_ssize_t n, Py_ssize_t p, Py_ssize_t *prev_bs,
                               Py_ssize_t *run, Py_ssize_t *prev_high_end) {
    /* run: how many backslashes end just before p */
    *run = (*prev_bs == p - 1) ? *run + 1 : 0;
    *prev_bs = p;
    /* A '\/' anywhere, in any run, is not canonical (the Python guard is that coarse). */
    if (p + 1 < n && b[p + 1] == '/') return 0;
    if (p + 5 < n && b[p + 1] == 'u') {
        int upper;
        int v = hex4(b + p + 2, &upper);
        if (v >= 0 && *run % 2 == 0) {
            if (upper) return 0;
            if (v >= 0xD800 && v <= 0xDBFF) {
                *prev_high_end = p + 6;
            } else {
                if (v >= 0xDC00 && v <= 0xDFFF) {
                    if (*prev_high_end == p) return 0;
                } else if (v >= 0x20 || v == 8 || v == 9 || v == 10 || v == 12 || v == 13) {
                    return 0;
                }
                *prev_high_end = -1;
            }
        }
    }
    return 1;
}

static int canonical_scan(const unsigned char *b, Py_ssize_t n) {
    Py_ssize_t i = 0, prev_bs = -2, run = 0, prev_high_end = -1;
#if defined(__SSE2__)
    for (; i + VEC <= n; i += VEC) {
        unsigned m = vec_mask(b + i, '\\');
        while (m) {
            Py_ssize_t p = i + __builtin_ctz(m);
            m &= m - 1;
            if (!canonical_at(b, n, p, &prev_bs, &run, &prev_high_end)) return 0;
        }
    }
#endif
    while (i < n) {
        const unsigned char *q = memchr(b + i, '\\', (size_t)(n - i));
        if (q == NULL) break;
        Py_ssize_t p = q - b;
        if (!canonical_at(b, n, p, &prev_bs, &run, &prev_high_end)) return 0;
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

/* One fragment line at p (at most ``avail`` bytes are readable): its length without the
 * newline, after adding its code points, UTF-8 bytes and newlines to the totals; -1 when
 * it is irregular, -2 when it runs past ``avail`` (a line cut by the buffer's end). */
#define NEED(k) do { if (i + (k) >= avail) return -2; } while (0)
static Py_ssize_t scan_line(const unsigned char *p, Py_ssize_t avail, long long *cp, long long *ub, long long *nl) {
    if (avail < 1) return -2;
    if (p[0] != '"') return -1;
    Py_ssize_t i = 1;
    long long c = 0, u = 0, l = 0;
    for (;;) {
#if defined(__SSE2__)
        /* a run of plain printable ASCII, 16 bytes at a time (a signed compare with 0x20
         * also catches every byte >= 0x80) */
        while (i + VEC <= avail) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            __m128i special = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                           _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                        _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
            unsigned m = (unsigned)_mm_movemask_epi8(special);
            if (m == 0) {
                c += VEC; u += VEC; i += VEC;
                continue;
            }
            int k = __builtin_ctz(m);
            c += k; u += k; i += k;
            break;
        }
#endif
        NEED(0);
        unsigned char ch = p[i];
        if (ch < 0x80) {
            if (ch == '"') {
                NEED(1);
                if (p[i + 1] != '\n') return -1; /* text after the string */
                break;
            } else if (ch == '\\') {
                NEED(1);
                unsigned char e = p[i + 1];
                switch (e) {
                case '"': case '\\': case '/': case 'b': case 'f': case 'r': case 't':
                    c++; u++; i += 2; break;
                case 'n':
                    c++; u++; l++; i += 2; break;
                case 'u': {
                    int upper;
                    NEED(5);
                    int v = hex4(p + i + 2, &upper);
                    if (v < 0) return -1;
                    if (v >= 0xD800 && v <= 0xDBFF) {
                        NEED(7);
                        if (p[i + 6] != '\\' || p[i + 7] != 'u') return -1;
                        NEED(11);
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
            } else if (ch < 0x20) {
                return -1;
            } else {
                c++; u++; i++;
            }
        } else {
            /* strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF) */
            int len;
            if (ch >= 0xC2 && ch <= 0xDF) {
                len = 2;
                NEED(1);
                if ((p[i + 1] & 0xC0) != 0x80) return -1;
            } else if (ch >= 0xE0 && ch <= 0xEF) {
                len = 3;
                NEED(2);
                unsigned char b1 = p[i + 1];
                unsigned char lo = ch == 0xE0 ? 0xA0 : 0x80, hi = ch == 0xED ? 0x9F : 0xBF;
                if (b1 < lo || b1 > hi || (p[i + 2] & 0xC0) != 0x80) return -1;
            } else if (ch >= 0xF0 && ch <= 0xF4) {
                len = 4;
                NEED(3);
                unsigned char b1 = p[i + 1];
                unsigned char lo = ch == 0xF0 ? 0x90 : 0x80, hi = ch == 0xF4 ? 0x8F : 0xBF;
                if (b1 < lo || b1 > hi || (p[i + 2] & 0xC0) != 0x80 || (p[i + 3] & 0xC0) != 0x80) return -1;
            } else {
                return -1;
            }
            c++; u += len; i += len;
        }
    }
    /* p[i] is the closing quote, p[i + 1] the newline */
    if (c < 1 || c > FRAGMENT_CODE_POINTS) return -1;
    *cp += c;
    *ub += u;
    *nl += l;
    return i + 1;
}
#undef NEED

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
        if (j->buf[pos] == '\n') {
            j->status = 1; /* a blank line ends the message */
            break;
        }
        long long cp = j->cp, ub = j->ub, nl = j->nl;
        Py_ssize_t len = scan_line(j->buf + pos, j->end - pos, &j->cp, &j->ub, &j->nl);
        if (len == -2) {
            /* cut by the buffer's end: read on from this line, unless the file ends here */
            if (j->at_eof) j->status = 2;
            break;
        }
        if (len < 0 || len > j->max_line) {
            j->cp = cp, j->ub = ub, j->nl = nl;
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

/* ---------------------------------------------------------------------------------
 * escaped_stats(buf, start, end) -> (code points, UTF-8 bytes) | None
 *
 * Of the text search_escapes.decode_escaped(buf[start:end]) gives (de-framed escaped text
 * that starts and ends on escape boundaries), as JavaScript measures it: an escaped pair
 * is one code point of 4 bytes, a lone surrogate escape one code point of 3 bytes (Node
 * writes it as U+FFFD). None for anything decode_escaped would refuse or that is not
 * plain (a raw quote or control character, an unknown escape, invalid UTF-8): the caller
 * then decodes.
 */
static int escaped_run(const unsigned char *p, Py_ssize_t n, long long *cp, long long *ub) {
    Py_ssize_t i = 0;
    long long c = 0, u = 0;
    while (i < n) {
#if defined(__SSE2__)
        while (i + VEC <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            __m128i special = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                           _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                        _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
            unsigned m = (unsigned)_mm_movemask_epi8(special);
            if (m == 0) {
                c += VEC; u += VEC; i += VEC;
                continue;
            }
            int k = __builtin_ctz(m);
            c += k; u += k; i += k;
            break;
        }
        if (i >= n) break;
#endif
        unsigned char ch = p[i];
        if (ch < 0x80) {
            if (ch == '\\') {
                if (i + 1 >= n) return -1;
                switch (p[i + 1]) {
                case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                    c++; u++; i += 2; break;
                case 'u': {
                    int upper;
                    if (i + 5 >= n) return -1;
                    int v = hex4(p + i + 2, &upper);
                    if (v < 0) return -1;
                    if (v >= 0xD800 && v <= 0xDBFF && i + 11 < n && p[i + 6] == '\\' && p[i + 7] == 'u') {
                        int w = hex4(p + i + 8, &upper);
                        if (w >= 0xDC00 && w <= 0xDFFF) {
                            c++; u += 4; i += 12; /* a pair */
                            break;
                        }
                    }
                    c++;
                    u += v < 0x80 ? 1 : v < 0x800 ? 2 : 3; /* a lone surrogate: U+FFFD, 3 bytes */
                    i += 6;
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
            int len;
            if (ch >= 0xC2 && ch <= 0xDF) {
                len = 2;
                if (i + 1 >= n || (p[i + 1] & 0xC0) != 0x80) return -1;
            } else if (ch >= 0xE0 && ch <= 0xEF) {
                len = 3;
                if (i + 2 >= n) return -1;
                unsigned char b1 = p[i + 1];
                unsigned char lo = ch == 0xE0 ? 0xA0 : 0x80, hi = ch == 0xED ? 0x9F : 0xBF;
                if (b1 < lo || b1 > hi || (p[i + 2] & 0xC0) != 0x80) return -1;
            } else if (ch >= 0xF0 && ch <= 0xF4) {
                len = 4;
                if (i + 3 >= n) return -1;
                unsigned char b1 = p[i + 1];
                unsigned char lo = ch == 0xF0 ? 0x90 : 0x80, hi = ch == 0xF4 ? 0x8F : 0xBF;
                if (b1 < lo || b1 > hi || (p[i + 2] & 0xC0) != 0x80 || (p[i + 3] & 0xC0) != 0x80) return -1;
            } else {
                return -1;
            }
            c++; u += len; i += len;
        }
    }
    *cp = c;
    *ub = u;
    return 0;
}

static PyObject *native_escaped_stats(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start = 0, end = -1;
    if (!PyArg_ParseTuple(args, "y*|nn", &view, &start, &end)) return NULL;
    if (end < 0 || end > view.len) end = view.len;
    if (start < 0) start = 0;
    if (start > end) start = end;
    long long cp = 0, ub = 0;
    int ok;
    const unsigned char *p = (const unsigned char *)view.buf + start;
    if (end - start >= BIG) {
        Py_BEGIN_ALLOW_THREADS
        ok = escaped_run(p, end - start, &cp, &ub);
        Py_END_ALLOW_THREADS
    } else {
        ok = escaped_run(p, end - start, &cp, &ub);
    }
    PyBuffer_Release(&view);
    if (ok < 0) Py_RETURN_NONE;
    return Py_BuildValue("LL", cp, ub);
}

/* ---------------------------------------------------------------------------------
 * find(buf, needle, start=0) -> int: buf.find(needle, start), with the C library's
 * memmem (several times faster than bytes.find on needles whose last byte is common).
 */
static PyObject *native_find(PyObject *self, PyObject *args) {
    Py_buffer hay, pin;
    Py_ssize_t start = 0;
    if (!PyArg_ParseTuple(args, "y*y*|n", &hay, &pin, &start)) return NULL;
    Py_ssize_t at = -1;
    if (start < 0) start = 0;
    if (start <= hay.len) {
        const char *base = (const char *)hay.buf + start;
        size_t n = (size_t)(hay.len - start);
        const void *q;
        if (n >= BIG) {
            Py_BEGIN_ALLOW_THREADS
            q = memmem(base, n, pin.buf, (size_t)pin.len);
            Py_END_ALLOW_THREADS
        } else {
            q = memmem(base, n, pin.buf, (size_t)pin.len);
        }
        if (q != NULL) at = (const char *)q - (const char *)hay.buf;
    }
    PyBuffer_Release(&hay);
    PyBuffer_Release(&pin);
    return PyLong_FromSsize_t(at);
}

static PyMethodDef methods[] = {
    {"deframe", native_deframe, METH_VARARGS, "deframe(buf, end=len(buf)) -> bytes | None"},
    {"deframe_into", native_deframe_into, METH_VARARGS, "deframe_into(buf, end, out: bytearray) -> int"},
    {"escaped_stats", native_escaped_stats, METH_VARARGS, "escaped_stats(buf, start=0, end=-1) -> (int, int) | None"},
    {"find", native_find, METH_VARARGS, "find(buf, needle, start=0) -> int"},
    {"canonical", native_canonical, METH_VARARGS, "canonical(buf) -> bool"},
    {"index_lines", native_index_lines, METH_VARARGS,
     "index_lines(buf, end, at_eof, fragments, max_line, base, cp, nbytes, newlines) -> tuple"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "Single-pass scanners (see _native.c).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
