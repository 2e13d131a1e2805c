/* spillscope._native: single-pass byte scanners over transcript fragment lines.
 *
 * An accelerator only: every function has a pure-Python twin that defines its result,
 * and the tests run both on the same inputs:
 *   deframe, deframe_into  search_escapes.deframe
 *   canonical              search_escapes.canonical_escapes
 *   survey                 canonical and escaped_stats, in one pass
 *   find                   bytes.find
 *   find_ci                bytes.lower().find (ASCII letters folded)
 *   prefilter              inspect.search.prefilter.may_match, over many files on threads
 *   escaped_stats          len() and utf8_len() of search_escapes.decode_escaped
 *   utf8_stats             len() and utf8_len() of bytes.decode("utf-8") (None if invalid)
 *   index_lines            the parser's fragments + TranscriptIndex._index_batch
 *   skip_lines             deframe + measure_escaped of the lines before a needle may start
 * Where the input is anything but the plain, strict JSON text the writer emits, they say
 * so (None, or "irregular") and the Python path decides (and locates any error). The big
 * loops run without the GIL; SSE2 (every x86-64) where it pays, plain C elsewhere; the
 * counts use AVX2 where the CPU has it (checked at run time; simd() switches it off).
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
 * (left to right, non-overlapping); no line is a lone quote ('"\n' first, '\n"\n' anywhere:
 * its one quote would close it and open it); no '\n' may remain in body[1:-1]; no line may begin
 * with a UTF-8 continuation byte (a character split over two lines: each line is then no
 * UTF-8, whole as the joined text is); the result is body[1:-2].
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

static void deframe_blocks(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t *pi,
                           Py_ssize_t *pseg, Py_ssize_t *po);

/* Writes body[start:] to out, which must have room for n + 16 bytes (whole 16-byte
 * blocks are stored, then counted); start is 0, or 1 when in[0] is a quote that no
 * match can take (in[1] is not a newline). Returns the body length, or -1 when a stray
 * newline remains. */
static Py_ssize_t deframe_into(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t start) {
    /* last_end: where the current line's text begins (after the last join, or the first
     * line's opening quote): its closing quote is at or after it, never that opening quote */
    Py_ssize_t o = 0, i = start, last_end = 1;
    /* The lines joined 64 bytes at a time while every newline met is a join (all but the
     * last of plain fragment lines); from the first other newline on, the loop below. */
    Py_ssize_t seg = start;
    deframe_blocks(in, n, out, &i, &seg, &o);
    if (seg > start) last_end = seg;
    i = seg; /* out[0:o] holds the body up to seg: go on from there */
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
        /* a join: a closing quote (not the line's opening one), its newline and the next
         * line's opening quote */
        if (j - 1 >= last_end && in[j - 1] == '"' && j + 1 < n && in[j + 1] == '"') {
            o -= 1; /* the quote before it was copied: take it back */
            last_end = j + 2;
            i = j + 2;
        } else {
            if (j != n - 1 && o + start >= 1) return -1; /* a newline that stays inside the body */
            if (j == n - 1 && j - 1 < last_end) return -1; /* a last line of one quote */
            out[o++] = '\n';
            i = j + 1;
        }
    }
    return o + start;
}

/* True when in[0:n] can be fragment lines at all: a quote first, '"\n' last. */
static inline int framed(const unsigned char *in, Py_ssize_t n) {
    return n >= 2 && in[0] == '"' && in[n - 2] == '"' && in[n - 1] == '\n';
}

/* Whether a line of in[0:n] (after its first) begins with a UTF-8 continuation byte: a byte
 * from 0x80 to 0xBF two after a newline (its next line's opening quote between), 16 at a time. */
static int split_character(const unsigned char *in, Py_ssize_t n) {
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n'), top = _mm_set1_epi8((char)0xC0), cont = _mm_set1_epi8((char)0x80);
    for (; i + VEC + 2 <= n; i += VEC) {
        __m128i v = _mm_loadu_si128((const __m128i *)(in + i)), w = _mm_loadu_si128((const __m128i *)(in + i + 2));
        if (_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(v, nl), _mm_cmpeq_epi8(_mm_and_si128(w, top), cont))))
            return 1;
    }
#endif
    for (; i + 2 < n; i++)
        if (in[i] == '\n' && (in[i + 2] & 0xC0) == 0x80) return 1;
    return 0;
}

/* deframe(in[0:n]) written to out, for a caller that has released the GIL itself (see
 * deframe_body). */
static Py_ssize_t deframe_body_nogil(const unsigned char *in, Py_ssize_t n, unsigned char *out) {
    Py_ssize_t start = in[1] != '\n'; /* body[0] is then in[0]: skip it */
    Py_ssize_t o = deframe_into(in, n, out, start);
    if (o < 0 || split_character(in, n)) return -1;
    /* body[1:-2]; a body shorter than 3 gives b"" */
    Py_ssize_t len = o < 3 ? 0 : o - 3;
    if (len > 0 && !start) memmove(out, out + 1, (size_t)len);
    return len;
}

/* deframe(in[0:n]) written to out (room for n + 16 bytes; ``framed`` already checked):
 * its length, or -1 where deframe gives None. The GIL is released for a big buffer: the
 * caller holds both buffers (an export of ``out`` if it is resizable). */
static Py_ssize_t deframe_body(const unsigned char *in, Py_ssize_t n, unsigned char *out) {
    Py_ssize_t len;
    if (n >= BIG) {
        Py_BEGIN_ALLOW_THREADS
        len = deframe_body_nogil(in, n, out);
        Py_END_ALLOW_THREADS
    } else {
        len = deframe_body_nogil(in, n, out);
    }
    return len;
}

static PyObject *native_deframe(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t end = -1;
    if (!PyArg_ParseTuple(args, "y*|n", &view, &end)) return NULL;
    const unsigned char *in = (const unsigned char *)view.buf;
    Py_ssize_t n = (end < 0 || end > view.len) ? view.len : end;
    if (!framed(in, n)) {
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
    Py_ssize_t len = deframe_body(in, n, (unsigned char *)PyBytes_AS_STRING(res));
    PyBuffer_Release(&view);
    if (len < 0) {
        Py_DECREF(res);
        Py_RETURN_NONE;
    }
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
    if (framed(in, n)) {
        if (PyByteArray_Resize(dst, n + 16) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        /* An export of ``out`` while the GIL is released: another thread cannot resize
         * (and so move) it under the loop. */
        Py_buffer outview;
        if (PyObject_GetBuffer(dst, &outview, PyBUF_WRITABLE) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        len = deframe_body(in, n, (unsigned char *)outview.buf);
        PyBuffer_Release(&outview);
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
/* Where the run of plain printable ASCII (no quote, backslash, control or byte >= 0x80)
 * that starts at p[i] ends, looking at whole 16-byte blocks before n (SSE2: a signed
 * compare with 0x20 also catches every byte >= 0x80); the caller goes on byte by byte. */
static inline Py_ssize_t plain_run(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) {
#if defined(__SSE2__)
    while (i + VEC <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i special = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                       _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                    _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
        unsigned m = (unsigned)_mm_movemask_epi8(special);
        if (m != 0) return i + __builtin_ctz(m);
        i += VEC;
    }
#endif
    return i;
}

/* One UTF-8 character whose lead byte p[i] is >= 0x80, strictly (no overlongs, no
 * surrogates, nothing above U+10FFFF): its length, -1 when invalid, -2 when it runs past n. */
static inline int utf8_seq(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) {
    unsigned char ch = p[i];
    int len = ch >= 0xC2 && ch <= 0xDF ? 2 : ch >= 0xE0 && ch <= 0xEF ? 3 : ch >= 0xF0 && ch <= 0xF4 ? 4 : 0;
    if (len == 0) return -1;
    if (i + len - 1 >= n) return -2;
    unsigned char b1 = p[i + 1];
    unsigned char lo = ch == 0xE0 ? 0xA0 : ch == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = ch == 0xED ? 0x9F : ch == 0xF4 ? 0x8F : 0xBF;
    if (b1 < lo || b1 > hi) return -1;
    for (int k = 2; k < len; k++)
        if ((p[i + k] & 0xC0) != 0x80) return -1;
    return len;
}

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
        Py_ssize_t plain = plain_run(p, i, avail); /* each byte one code point of one byte */
        c += plain - i; u += plain - i; i = plain;
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
            int len = utf8_seq(p, i, avail);
            if (len < 0) return len;
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
/* The escape at p[i] (a backslash that starts one, in text escaped_run accepts): its raw
 * length, with the UTF-8 length of the one code point it stands for in *bytes (an escaped
 * pair is one code point of 4 bytes, a lone surrogate escape U+FFFD, 3 bytes); -1 when it
 * is not an escape escaped_run accepts. */
static inline int escape_at(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, int *bytes) {
    if (i + 1 >= n) return -1;
    switch (p[i + 1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        *bytes = 1;
        return 2;
    case 'u': {
        int upper;
        if (i + 5 >= n) return -1;
        int v = hex4(p + i + 2, &upper);
        if (v < 0) return -1;
        if (v >= 0xD800 && v <= 0xDBFF && i + 11 < n && p[i + 6] == '\\' && p[i + 7] == 'u') {
            int w = hex4(p + i + 8, &upper);
            if (w >= 0xDC00 && w <= 0xDFFF) {
                *bytes = 4;
                return 12;
            }
        }
        *bytes = v < 0x80 ? 1 : v < 0x800 ? 2 : 3;
        return 6;
    }
    default:
        return -1;
    }
}

static int escaped_run(const unsigned char *p, Py_ssize_t n, long long *cp, long long *ub) {
    Py_ssize_t i = 0;
    long long c = 0, u = 0;
    while (i < n) {
        Py_ssize_t plain = plain_run(p, i, n);
        c += plain - i; u += plain - i; i = plain;
        if (i >= n) break;
        unsigned char ch = p[i];
        if (ch < 0x80) {
            if (ch == '\\') {
                int bytes, len = escape_at(p, i, n, &bytes);
                if (len < 0) return -1;
                c++; u += bytes; i += len;
            } else if (ch == '"' || ch < 0x20) {
                return -1;
            } else {
                c++; u++; i++;
            }
        } else {
            int len = utf8_seq(p, i, n);
            if (len < 0) return -1;
            c++; u += len; i += len;
        }
    }
    *cp = c;
    *ub = u;
    return 0;
}


/* ---------------------------------------------------------------------------------
 * The same counts, 32 bytes at a time, with the UTF-8 validated by the Keiser-Lemire
 * lookup algorithm (AVX2: x86-64 CPUs since 2013; checked at run time). This is
 * what lets a search count offsets as it goes instead of reading a message twice.
 * Escapes are ASCII, so the blocks count every byte as text and each escape then takes
 * back what it counted beyond its one code point. ``escaped`` 0 counts plain UTF-8 (any
 * byte that is valid UTF-8; a tool output), 1 escaped text as escaped_run does.
 * Returns -1 exactly where the scalar loops do.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_SIMD_STATS 1
#define AVX_TARGET __attribute__((target("avx2,popcnt")))
/* The few kernels with an AVX-512BW twin (mask registers: fewer instructions a block) */
#define AVX512_TARGET __attribute__((target("avx2,popcnt,avx512f,avx512bw")))
#define W32 32

#define TOO_SHORT (1 << 0)
#define TOO_LONG (1 << 1)
#define OVERLONG_3 (1 << 2)
#define TOO_LARGE (1 << 3)
#define SURROGATE (1 << 4)
#define OVERLONG_2 (1 << 5)
#define TOO_LARGE_1000 (1 << 6)
#define OVERLONG_4 (1 << 6)
#define TWO_CONTS (1 << 7)
#define CARRY (TOO_SHORT | TOO_LONG | TWO_CONTS)
#define LARGE (CARRY | TOO_LARGE | TOO_LARGE_1000)

/* The lookups' three tables (simdjson's): the errors a first byte's high nibble, its low
 * nibble and the second byte's high nibble allow; a pair is in error where all three agree. */
#define UTF8_BYTE1_HIGH                                                                                            \
    TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TWO_CONTS, TWO_CONTS, TWO_CONTS, \
        TWO_CONTS, TOO_SHORT | OVERLONG_2, TOO_SHORT, TOO_SHORT | OVERLONG_3 | SURROGATE,                           \
        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4
#define UTF8_BYTE1_LOW                                                                                      \
    CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4, CARRY | OVERLONG_2, CARRY, CARRY, CARRY | TOO_LARGE, LARGE, \
        LARGE, LARGE, LARGE, LARGE, LARGE, LARGE, LARGE, LARGE | SURROGATE, LARGE, LARGE
#define UTF8_BYTE2_HIGH                                                                                         \
    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,                     \
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4),                   \
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE),                                     \
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE),                                      \
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE), TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT

/* A 16-entry table in both 128-bit lanes (vpshufb looks up within a lane). */
#define TABLE(...) _mm256_broadcastsi128_si256(_mm_setr_epi8(__VA_ARGS__))

/* The Keiser-Lemire check's constants in W-bit vectors (256 or 512; TAB the width's table):
 * made once by a loop's caller, not in the check (there each was broadcast from an immediate
 * again every block, on the port the compares and lookups need). */
#define UTF8_CONSTS_FIELDS(W) __m##W##i nib, b1_high, b1_low, b2_high, e0, f0, hi
typedef struct {
    UTF8_CONSTS_FIELDS(256);
} utf8_consts256;
typedef struct {
    UTF8_CONSTS_FIELDS(512);
    __m512i lanes; /* the quadwords of the block before and this one that carry 16 bytes over */
} utf8_consts512;
#define UTF8_CONSTS(W, TAB, c)                                                                                     \
    ((c).nib = _mm##W##_set1_epi8(0x0F), (c).hi = _mm##W##_set1_epi8((char)0x80),                                 \
     (c).b1_high = TAB(UTF8_BYTE1_HIGH), (c).b1_low = TAB(UTF8_BYTE1_LOW), (c).b2_high = TAB(UTF8_BYTE2_HIGH),   \
     (c).e0 = _mm##W##_set1_epi8((char)(0xE0 - 0x80)), (c).f0 = _mm##W##_set1_epi8((char)(0xF0 - 0x80)))

/* The check itself in W-bit vectors: nonzero bytes where ``input`` is not valid UTF-8, the 16
 * bytes before its first (of the block before, in the lane where alignr takes them) in
 * ``carried``. A statement expression, so that both widths are one text. */
#define UTF8_ERRORS(W, c, input, carried)                                                                         \
    ({                                                                                                             \
        __m##W##i in_ = (input), car_ = (carried);                                                                  \
        __m##W##i p1_ = _mm##W##_alignr_epi8(in_, car_, 15), p2_ = _mm##W##_alignr_epi8(in_, car_, 14);            \
        __m##W##i p3_ = _mm##W##_alignr_epi8(in_, car_, 13);                                                        \
        __m##W##i b1_high_ = _mm##W##_shuffle_epi8((c)->b1_high, _mm##W##_and_si##W(_mm##W##_srli_epi16(p1_, 4), (c)->nib)); \
        __m##W##i b1_low_ = _mm##W##_shuffle_epi8((c)->b1_low, _mm##W##_and_si##W(p1_, (c)->nib));                  \
        __m##W##i b2_high_ = _mm##W##_shuffle_epi8((c)->b2_high, _mm##W##_and_si##W(_mm##W##_srli_epi16(in_, 4), (c)->nib)); \
        __m##W##i special_ = _mm##W##_and_si##W(_mm##W##_and_si##W(b1_high_, b1_low_), b2_high_);                  \
        /* a third or fourth byte must be a continuation, and only there may two follow */                         \
        __m##W##i must23_ = _mm##W##_or_si##W(_mm##W##_subs_epu8(p2_, (c)->e0), _mm##W##_subs_epu8(p3_, (c)->f0)); \
        _mm##W##_xor_si##W(_mm##W##_and_si##W(must23_, (c)->hi), special_);                                       \
    })

AVX_TARGET static inline __attribute__((always_inline)) utf8_consts256 utf8_consts256_make(void) {
    utf8_consts256 c;
    UTF8_CONSTS(256, TABLE, c);
    return c;
}

/* Nonzero bytes where ``input`` (after ``prev``) is not valid UTF-8. */
AVX_TARGET static inline __attribute__((always_inline)) __m256i utf8_errors_with(__m256i input, __m256i prev,
                                                                               const utf8_consts256 *c) {
    return UTF8_ERRORS(256, c, input, _mm256_permute2x128_si256(prev, input, 0x21));
}

AVX_TARGET static inline __m256i utf8_errors(__m256i input, __m256i prev) {
    utf8_consts256 c = utf8_consts256_make();
    return utf8_errors_with(input, prev, &c);
}

/* The check of a 64-byte block with AVX-512BW: the same lookups, once (where two 32-byte blocks
 * take twice the instructions); the bytes before each 128-bit lane by a permute of quadwords,
 * as simdjson's icelake kernel takes them. A mask of the bytes in error. */
#define TABLE512(...) _mm512_broadcast_i32x4(_mm_setr_epi8(__VA_ARGS__))
AVX512_TARGET static inline __attribute__((always_inline)) utf8_consts512 utf8_consts512_make(void) {
    utf8_consts512 c;
    UTF8_CONSTS(512, TABLE512, c);
    c.lanes = _mm512_set_epi64(13, 12, 11, 10, 9, 8, 7, 6);
    return c;
}

AVX512_TARGET static inline __attribute__((always_inline)) __mmask64 utf8_errors512_with(__m512i input, __m512i prev,
                                                                                       const utf8_consts512 *c) {
    __m512i err = UTF8_ERRORS(512, c, input, _mm512_permutex2var_epi64(prev, c->lanes, input));
    return _mm512_test_epi8_mask(err, err);
}

/* A count of plain UTF-8 64 bytes a step (utf8_run512, and unescape_lines512 over the raw
 * lines): each block's errors ORed into ``wrong`` (looked at once, at the end: no branch on a
 * block but ASCII or not), its continuation bytes (``cont``, their mask) counted. */
typedef struct {
    __m512i prev; /* the block before */
    uint64_t wrong;
    long long cont;
} utf8_count512;

AVX512_TARGET static inline __attribute__((always_inline)) void
utf8_count512_step(utf8_count512 *u, __m512i v, uint64_t cont, const utf8_consts512 *c) {
    if (_mm512_movepi8_mask(_mm512_or_si512(v, u->prev)) != 0) /* ASCII after ASCII: nothing to look up */
        u->wrong |= utf8_errors512_with(v, u->prev, c);
    u->cont += __builtin_popcountll(cont);
    u->prev = v;
}

/* The bytes p[0:n], n <= 64, with zeros after them (ASCII: a character they cut short is an
 * error of the check). */
AVX512_TARGET static inline __attribute__((always_inline)) __m512i load_upto512(const unsigned char *p, Py_ssize_t n) {
    return _mm512_maskz_loadu_epi8(n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1, (const void *)p);
}

/* Whether the count ends in an error: one found, or a character the last block began and did
 * not finish (a block of zeros after it). */
AVX512_TARGET static inline __attribute__((always_inline)) int utf8_count512_wrong(const utf8_count512 *u,
                                                                                 const utf8_consts512 *c) {
    return (u->wrong | utf8_errors512_with(_mm512_setzero_si512(), u->prev, c)) != 0;
}

/* utf8_count512_step over the whole blocks in[c0:c1), each looked up (no branch on ASCII) and
 * the errors tested once: a clean pass's second pass, over a chunk in L1 that has a byte >= 0x80
 * or follows a block that has one (the step itself there made the skip's clean pass 6% slower). */
AVX512_TARGET static inline __attribute__((always_inline)) void
utf8_count512_run(utf8_count512 *u, const unsigned char *in, Py_ssize_t c0, Py_ssize_t c1, const utf8_consts512 *c) {
    const __m512i cont_below = _mm512_set1_epi8((char)0xC0); /* continuation bytes: below 0xC0 signed */
    __m512i prev = u->prev, err = _mm512_setzero_si512(); /* the errors ORed, tested once */
    long long cont = 0;
    for (Py_ssize_t b = c0; b < c1; b += 64) {
        __m512i v = _mm512_loadu_si512((const void *)(in + b));
        err = _mm512_or_si512(err, UTF8_ERRORS(512, c, v, _mm512_permutex2var_epi64(prev, c->lanes, v)));
        cont += __builtin_popcountll(_mm512_cmplt_epi8_mask(v, cont_below));
        prev = v;
    }
    u->prev = prev, u->wrong |= _mm512_test_epi8_mask(err, err), u->cont += cont;
}

/* Nonzero where a block's last bytes start a character it does not finish. */
AVX_TARGET static inline __m256i utf8_incomplete(__m256i input) {
    const __m256i max = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, (char)(0xF0 - 1), (char)(0xE0 - 1),
                                         (char)(0xC0 - 1));
    return _mm256_subs_epu8(input, max);
}

AVX_TARGET static int stats_simd(const unsigned char *p, Py_ssize_t n, int escaped, long long *cp, long long *ub,
                                 int *canon) {
    Py_ssize_t prev_bs = -2, run = 0, prev_high_end = -1; /* canonical_at's state */
    long long c = 0, u = n; /* u: every raw byte, less what escapes take back */
    long long cont = 0;      /* continuation bytes: not code points of their own */
    __m256i prev = _mm256_setzero_si256(), err = _mm256_setzero_si256(), incomplete = _mm256_setzero_si256();
    const __m256i cont_mask = _mm256_set1_epi8((char)0xC0), cont_val = _mm256_set1_epi8((char)0x80);
    const __m256i c1f = _mm256_set1_epi8(0x1F), quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\');
    Py_ssize_t skip = 0; /* the bytes before this belong to an escape already counted */
    unsigned char last[W32];
    for (Py_ssize_t i = 0; i < n; i += W32) {
        __m256i v;
        Py_ssize_t len = n - i < W32 ? n - i : W32;
        if (len < W32) { /* the last bytes, padded with zeros (not counted, not special) */
            memset(last, 0, W32);
            memcpy(last, p + i, (size_t)len);
            v = _mm256_loadu_si256((const __m256i *)last);
        } else {
            v = _mm256_loadu_si256((const __m256i *)(p + i));
        }
        unsigned valid = len < W32 ? (1u << len) - 1 : 0xFFFFFFFFu;
        if (_mm256_movemask_epi8(v) == 0) {
            err = _mm256_or_si256(err, incomplete); /* ASCII cannot finish what the last block began */
            incomplete = _mm256_setzero_si256();
        } else {
            err = _mm256_or_si256(err, utf8_errors(v, prev));
            incomplete = utf8_incomplete(v);
            cont += __builtin_popcount(
                (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(v, cont_mask), cont_val)));
        }
        prev = v;
        if (escaped) {
            /* a quote, a backslash or a raw control character (unsigned v <= 0x1F) */
            __m256i ctrl = _mm256_cmpeq_epi8(_mm256_min_epu8(v, c1f), v);
            __m256i sp = _mm256_or_si256(ctrl, _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, bslash)));
            unsigned m = (unsigned)_mm256_movemask_epi8(sp) & valid;
            while (m) {
                Py_ssize_t q = i + __builtin_ctz(m);
                m &= m - 1;
                /* canonical_escapes of the whole text looks at every backslash, in order */
                if (canon != NULL && *canon && p[q] == '\\' &&
                    !canonical_at(p, n, q, &prev_bs, &run, &prev_high_end))
                    *canon = 0;
                if (q < skip) continue;
                if (p[q] != '\\') return -1;
                int bytes, l = escape_at(p, q, n, &bytes);
                if (l < 0) return -1;
                c -= l - 1; /* the block counted each of its bytes as a 1-byte code point */
                u -= l - bytes;
                skip = q + l;
            }
        }
    }
    err = _mm256_or_si256(err, incomplete);
    if (!_mm256_testz_si256(err, err)) return -1;
    *cp = c + n - cont;
    *ub = u;
    return 0;
}

static int simd_ok = -1;
static int simd_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
}
static inline int use_simd(void) {
    if (simd_ok < 0) simd_ok = simd_supported();
    return simd_ok;
}
static int avx512_ok = -1;
static int sk_clean_ok = 1; /* the clean passes (sk_clean512, un_clean512, pf_clean512) run: clean_passes() */
#define CLEAN_CHUNK 4096  /* the bytes a clean pass looks at once */
#define CLEAN_BACKOFF 6   /* a clean pass's failures in a row: up to 64 chunks block by block */

/* Where a clean pass is tried again once it stopped at ``i``: a chunk on where it took one or
 * more since it was last asked (``took``), else 2^k chunks on after its k-th failure in a row,
 * up to 64 (a run of chunks it cannot take costs their block loop, not a clean look at each). */
static inline Py_ssize_t clean_again(Py_ssize_t i, int took, int *failures) {
    if (took) *failures = 0;
    Py_ssize_t at = i + ((Py_ssize_t)CLEAN_CHUNK << *failures);
    if (*failures < CLEAN_BACKOFF) (*failures)++;
    return at;
}
static int avx512_supported(void) {
    __builtin_cpu_init();
    return simd_supported() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}
/* AVX-512BW where the CPU has it (and AVX2 is in use: simd(False) turns both off) */
static inline int use_avx512(void) {
    if (avx512_ok < 0) avx512_ok = avx512_supported();
    return avx512_ok && use_simd();
}
static int vbmi2_ok = -1;
/* AVX-512 VBMI2 (vpcompressb) and VBMI (vpermi2b) where the CPU has them and AVX-512 is in use
 * (avx512(False) turns it off) */
static inline int use_vbmi2(void) {
    if (vbmi2_ok < 0)
        vbmi2_ok = avx512_supported() && __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("avx512vbmi");
    return vbmi2_ok && use_avx512();
}
#endif

/* A plain UTF-8 count: code points are the bytes that are not continuation bytes. */
static int utf8_run(const unsigned char *p, Py_ssize_t n, long long *cp, long long *ub) {
    Py_ssize_t i = 0;
    long long c = 0;
    while (i < n) {
        unsigned char ch = p[i];
        int len = ch < 0x80 ? 1 : utf8_seq(p, i, n);
        if (len < 0) return -1;
        c++;
        i += len;
    }
    *cp = c;
    *ub = n;
    return 0;
}

/* The counts of p[0:n]; with ``canon`` (escaped text only) also canonical_scan(p, n),
 * from the same pass where the counts are SIMD and the text plain. */
#ifdef HAVE_SIMD_STATS
/* utf8_run with AVX-512BW (utf8_count512): stats_simd (AVX2, 32 bytes and a branch on escapes
 * a step) took half of message_text's time. */
AVX512_TARGET static int utf8_run512(const unsigned char *p, Py_ssize_t n, long long *cp, long long *ub) {
    utf8_consts512 u8 = utf8_consts512_make();
    __m512i cont_below = _mm512_set1_epi8((char)0xC0);
    __asm__("" : "+v"(u8.nib), "+v"(u8.hi), "+v"(u8.b1_high), "+v"(u8.b1_low), "+v"(u8.b2_high), "+v"(u8.e0),
                 "+v"(u8.f0), "+v"(u8.lanes), "+v"(cont_below));
    utf8_count512 u = {_mm512_setzero_si512(), 0, 0};
    for (Py_ssize_t i = 0; i < n; i += 64) {
        __m512i v = load_upto512(p + i, n - i);
        utf8_count512_step(&u, v, _mm512_cmplt_epi8_mask(v, cont_below), &u8);
    }
    if (utf8_count512_wrong(&u, &u8)) return -1;
    *cp = n - u.cont;
    *ub = n;
    return 0;
}
#endif

static int count_run(const unsigned char *p, Py_ssize_t n, int escaped, long long *cp, long long *ub, int *canon) {
#ifdef HAVE_SIMD_STATS
    if (!escaped && canon == NULL && use_avx512()) return utf8_run512(p, n, cp, ub);
    if (use_simd()) {
        if (canon != NULL) *canon = 1;
        int ok = stats_simd(p, n, escaped, cp, ub, canon);
        if (ok < 0 && canon != NULL) *canon = canonical_scan(p, n); /* it stopped early */
        return ok;
    }
#endif
    if (canon != NULL) *canon = canonical_scan(p, n);
    return escaped ? escaped_run(p, n, cp, ub) : utf8_run(p, n, cp, ub);
}

/* [start, end) as Python slices it: end -1 (or past the end) is the end; start within. */
static inline void clamp_range(Py_ssize_t len, Py_ssize_t *start, Py_ssize_t *end) {
    if (*end < 0 || *end > len) *end = len;
    if (*start < 0) *start = 0;
    if (*start > *end) *start = *end;
}

static PyObject *stats(PyObject *args, int escaped) {
    Py_buffer view;
    Py_ssize_t start = 0, end = -1;
    if (!PyArg_ParseTuple(args, "y*|nn", &view, &start, &end)) return NULL;
    clamp_range(view.len, &start, &end);
    long long cp = 0, ub = 0;
    int ok;
    const unsigned char *p = (const unsigned char *)view.buf + start;
    if (end - start >= BIG) {
        Py_BEGIN_ALLOW_THREADS
        ok = count_run(p, end - start, escaped, &cp, &ub, NULL);
        Py_END_ALLOW_THREADS
    } else {
        ok = count_run(p, end - start, escaped, &cp, &ub, NULL);
    }
    PyBuffer_Release(&view);
    if (ok < 0) Py_RETURN_NONE;
    return Py_BuildValue("LL", cp, ub);
}

static PyObject *native_escaped_stats(PyObject *self, PyObject *args) { return stats(args, 1); }

/* utf8_stats(buf, start=0, end=-1) -> (code points, bytes) | None: of buf[start:end] as
 * UTF-8 text; None when it is not valid UTF-8 (the caller decodes, with replacements). */
static PyObject *native_utf8_stats(PyObject *self, PyObject *args) { return stats(args, 0); }

/* survey(buf, end) -> (canonical(buf), escaped_stats(buf, 0, end)): the two questions
 * a search asks of each window of escaped text, answered in one pass where it can. */
static int survey_run(const unsigned char *p, Py_ssize_t n, Py_ssize_t end, long long *cp, long long *ub,
                      int *canon) {
    int ok = count_run(p, n, 1, cp, ub, canon);
    if (ok == 0 && end < n) { /* less the text after ``end`` (end is an escape boundary) */
        long long tc = 0, tu = 0;
        ok = count_run(p + end, n - end, 1, &tc, &tu, NULL);
        *cp -= tc;
        *ub -= tu;
    }
    return ok;
}

static PyObject *native_survey(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t end;
    if (!PyArg_ParseTuple(args, "y*n", &view, &end)) return NULL;
    if (end < 0 || end > view.len) end = view.len;
    long long cp = 0, ub = 0;
    int ok, canon = 0;
    const unsigned char *p = (const unsigned char *)view.buf;
    if (view.len >= BIG) {
        Py_BEGIN_ALLOW_THREADS
        ok = survey_run(p, view.len, end, &cp, &ub, &canon);
        Py_END_ALLOW_THREADS
    } else {
        ok = survey_run(p, view.len, end, &cp, &ub, &canon);
    }
    PyBuffer_Release(&view);
    if (ok < 0) return Py_BuildValue("(OO)", canon ? Py_True : Py_False, Py_None);
    return Py_BuildValue("(O(LL))", canon ? Py_True : Py_False, cp, ub);
}

/* simd(flag=-1) -> bool: whether the counts use the SIMD loop (0 or 1 switches it; the
 * tests run both loops on the same inputs). */
/* avx512(flag=-1) -> bool: whether the AVX-512BW twins run (flag 0/1 sets it, for tests) */
static PyObject *native_avx512(PyObject *self, PyObject *args) {
    int flag = -1;
    if (!PyArg_ParseTuple(args, "|i", &flag)) return NULL;
#ifdef HAVE_SIMD_STATS
    if (flag >= 0) avx512_ok = flag && avx512_supported();
    return PyBool_FromLong(use_avx512());
#else
    Py_RETURN_FALSE;
#endif
}

/* clean_passes(flag=-1) -> bool: whether the fused skip, the unescape and the halves check take
 * clean chunks in their clean passes (sk_clean512, un_clean512, pf_clean512; 0 or 1 switches
 * them: the tests run each with and without). */
static PyObject *native_clean_passes(PyObject *self, PyObject *args) {
    int flag = -1;
    if (!PyArg_ParseTuple(args, "|i", &flag)) return NULL;
#ifdef HAVE_SIMD_STATS
    if (flag >= 0) sk_clean_ok = flag != 0;
    return PyBool_FromLong(sk_clean_ok && use_avx512());
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *native_simd(PyObject *self, PyObject *args) {
    int flag = -1;
    if (!PyArg_ParseTuple(args, "|i", &flag)) return NULL;
#ifdef HAVE_SIMD_STATS
    if (flag >= 0) simd_ok = flag && simd_supported();
    return PyBool_FromLong(use_simd());
#else
    Py_RETURN_FALSE;
#endif
}

/* ---------------------------------------------------------------------------------
 * find(buf, needle, start=0) -> int: buf.find(needle, start), with the C library's
 * memmem (several times faster than bytes.find on needles whose last byte is common).
 */
/* ---------------------------------------------------------------------------------
 * find_ci(buf, needle, start=0) -> int: bytes(buf).lower().find(needle, start) for a
 * lowercase ``needle``, without the lowered copy (ASCII letters folded, as bytes.lower()
 * folds them). Candidates are where the needle's first and last bytes match, folded,
 * 32 positions at a time (AVX2 where the CPU has it); each is then compared in full.
 */
static inline unsigned char lower_ascii(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static inline int equal_ci(const unsigned char *a, const unsigned char *lowered, Py_ssize_t n) {
    for (Py_ssize_t k = 0; k < n; k++)
        if (lower_ascii(a[k]) != lowered[k]) return 0;
    return 1;
}

static Py_ssize_t find_ci_scalar(const unsigned char *h, Py_ssize_t n, const unsigned char *s, Py_ssize_t m,
                                 Py_ssize_t i) {
    for (; i + m <= n; i++)
        if (lower_ascii(h[i]) == s[0] && equal_ci(h + i, s, m)) return i;
    return -1;
}

#ifdef HAVE_SIMD_STATS
AVX_TARGET static Py_ssize_t find_ci_simd(const unsigned char *h, Py_ssize_t n, const unsigned char *s, Py_ssize_t m,
                                          Py_ssize_t i) {
    /* OR 0x20 folds the letters (and maps some other bytes together: more candidates,
     * never fewer, since each is compared in full). */
    const __m256i fold = _mm256_set1_epi8(0x20);
    const __m256i first = _mm256_set1_epi8((char)(s[0] | 0x20)), last = _mm256_set1_epi8((char)(s[m - 1] | 0x20));
    for (; i + m - 1 + W32 <= n; i += W32) {
        __m256i a = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(h + i)), fold);
        __m256i b = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(h + i + m - 1)), fold);
        unsigned mask = (unsigned)_mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, first),
                                                                        _mm256_cmpeq_epi8(b, last)));
        while (mask) {
            Py_ssize_t q = i + __builtin_ctz(mask);
            mask &= mask - 1;
            if (equal_ci(h + q, s, m)) return q;
        }
    }
    return find_ci_scalar(h, n, s, m, i);
}
#endif

#ifdef HAVE_SIMD_STATS
/* How common a byte is in text and code (the lower, the rarer): the order of this string,
 * most common first; every other byte rarer than all of them. */
static const char find_common_bytes[] = " etaoinsrhldcu\nmfpgwyb,.\\\"vk0123456789-_/:=()TSAEIxjqz";

static int find_rank(unsigned char c) {
    const char *at = c ? strchr(find_common_bytes, c) : NULL;
    return at == NULL ? -1 : (int)(sizeof find_common_bytes - (size_t)(at - find_common_bytes));
}

/* The offsets of the two rarest bytes of s[0:m] by find_rank (two distinct offsets if m > 1). */
static void rare_pair(const unsigned char *s, Py_ssize_t m, Py_ssize_t *p1, Py_ssize_t *p2) {
    Py_ssize_t r1 = 0, r2 = m - 1;
    int k1 = 1 << 20, k2 = 1 << 20;
    for (Py_ssize_t k = 0; k < m; k++) {
        int r = find_rank(s[k]);
        if (r < k1) {
            r2 = r1, k2 = k1;
            r1 = k, k1 = r;
        } else if (r < k2) {
            r2 = k, k2 = r;
        }
    }
    if (r1 == r2) r2 = r1 == 0 ? m - 1 : 0;
    *p1 = r1, *p2 = r2;
}

/* find_ci_simd's loop without the folding, on the needle's two rarest bytes (memchr's
 * and ripgrep's heuristic): candidates 32 positions at a time, each compared in full. On
 * text, memmem (a two-way search) runs at about two thirds of its pace. */
AVX_TARGET static Py_ssize_t find_simd(const unsigned char *h, Py_ssize_t n, const unsigned char *s, Py_ssize_t m,
                                       Py_ssize_t i) {
    Py_ssize_t r1, r2;
    rare_pair(s, m, &r1, &r2);
    const __m256i b1 = _mm256_set1_epi8((char)s[r1]), b2 = _mm256_set1_epi8((char)s[r2]);
    for (; i + m - 1 + W32 <= n; i += W32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(h + i + r1));
        __m256i b = _mm256_loadu_si256((const __m256i *)(h + i + r2));
        unsigned mask = (unsigned)_mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, b1),
                                                                        _mm256_cmpeq_epi8(b, b2)));
        while (mask) {
            Py_ssize_t q = i + __builtin_ctz(mask);
            mask &= mask - 1;
            if (memcmp(h + q, s, (size_t)m) == 0) return q;
        }
    }
    if (i >= n) return -1;
    const unsigned char *q = memmem(h + i, (size_t)(n - i), s, (size_t)m);
    return q == NULL ? -1 : q - h;
}

/* find_simd with AVX-512BW: 64 bytes a step, compared straight into masks, the rare bytes
 * broadcast once and opaque (the compiler broadcast them again every step, see
 * sk_read512_impl), a candidate's memcmp out of the loop (a call clobbers every vector
 * register). */
AVX512_TARGET static Py_ssize_t find512(const unsigned char *h, Py_ssize_t n, const unsigned char *s, Py_ssize_t m,
                                        Py_ssize_t i) {
    Py_ssize_t r1, r2;
    rare_pair(s, m, &r1, &r2);
    __m512i b1 = _mm512_set1_epi8((char)s[r1]), b2 = _mm512_set1_epi8((char)s[r2]);
    for (;;) {
        __asm__("" : "+v"(b1), "+v"(b2));
        uint64_t mask = 0;
        for (; i + m - 1 + 64 <= n; i += 64) {
            mask = _mm512_mask_cmpeq_epi8_mask(_mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)(h + i + r1)), b1),
                                               _mm512_loadu_si512((const void *)(h + i + r2)), b2);
            if (mask) break;
        }
        if (!mask) break;
        for (; mask; mask &= mask - 1) {
            Py_ssize_t q = i + __builtin_ctzll(mask);
            if (memcmp(h + q, s, (size_t)m) == 0) return q;
        }
        i += 64;
    }
    if (i >= n) return -1;
    const unsigned char *q = memmem(h + i, (size_t)(n - i), s, (size_t)m);
    return q == NULL ? -1 : q - h;
}
#endif

/* The first ``m``-byte needle at or after ``i`` in h[0:n] (folded: find_ci), or -1. */
static Py_ssize_t find_at(const unsigned char *h, Py_ssize_t n, const unsigned char *s, Py_ssize_t m, Py_ssize_t i,
                          int folded) {
    if (!folded) {
#ifdef HAVE_SIMD_STATS
        if (m > 1 && use_avx512()) return find512(h, n, s, m, i);
        if (m > 1 && use_simd()) return find_simd(h, n, s, m, i);
#endif
        const unsigned char *q = memmem(h + i, (size_t)(n - i), s, (size_t)m);
        return q == NULL ? -1 : q - h;
    }
    if (m == 0) return i;
#ifdef HAVE_SIMD_STATS
    if (use_simd()) return find_ci_simd(h, n, s, m, i);
#endif
    return find_ci_scalar(h, n, s, m, i);
}

static PyObject *find_common(PyObject *args, int folded) {
    Py_buffer hay, pin;
    Py_ssize_t start = 0;
    if (!PyArg_ParseTuple(args, "y*y*|n", &hay, &pin, &start)) return NULL;
    Py_ssize_t at = -1;
    if (start < 0) start = 0;
    const unsigned char *h = (const unsigned char *)hay.buf, *s = (const unsigned char *)pin.buf;
    if (start <= hay.len) {
        if (hay.len - start >= BIG) {
            Py_BEGIN_ALLOW_THREADS
            at = find_at(h, hay.len, s, pin.len, start, folded);
            Py_END_ALLOW_THREADS
        } else {
            at = find_at(h, hay.len, s, pin.len, start, folded);
        }
    }
    PyBuffer_Release(&hay);
    PyBuffer_Release(&pin);
    return PyLong_FromSsize_t(at);
}

/* count(buf, byte, start=0, end=-1): occurrences of one byte in buf[start:end], without a copy
 * (a transcript's line numbers over a mapping: bytes.count wants a slice of it copied). */
static Py_ssize_t count_scalar(const unsigned char *p, Py_ssize_t n, unsigned char c) {
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) total += p[i] == c;
    return total;
}

#ifdef HAVE_SIMD_STATS
/* Bit k set where a (k < 32) or b (k - 32) holds the byte c. */
AVX_TARGET static inline uint64_t sk_eqv64(__m256i a, __m256i b, __m256i x) {
    return (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, x)) |
           ((uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, x)) << 32);
}
AVX_TARGET static inline uint64_t sk_eq64(__m256i a, __m256i b, char c) { return sk_eqv64(a, b, _mm256_set1_epi8(c)); }
/* Bit k set where a (k < 32) or b (k - 32) holds a byte below x's, as signed bytes. */
AVX_TARGET static inline uint64_t sk_below64(__m256i a, __m256i b, __m256i x) {
    return (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(x, a)) |
           ((uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(x, b)) << 32);
}

AVX_TARGET static Py_ssize_t count_simd(const unsigned char *p, Py_ssize_t n, unsigned char c) {
    Py_ssize_t total = 0, i = 0;
    for (; i + 64 <= n; i += 64)
        total += __builtin_popcountll(sk_eq64(_mm256_loadu_si256((const __m256i *)(p + i)),
                                              _mm256_loadu_si256((const __m256i *)(p + i + 32)), (char)c));
    return total + count_scalar(p + i, n - i, c);
}
#endif

static PyObject *native_count(PyObject *self, PyObject *args) {
    Py_buffer view;
    int c;
    Py_ssize_t start = 0, end = -1;
    if (!PyArg_ParseTuple(args, "y*i|nn", &view, &c, &start, &end)) return NULL;
    clamp_range(view.len, &start, &end);
    const unsigned char *p = (const unsigned char *)view.buf + start;
    Py_ssize_t n = end - start, total;
    Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_SIMD_STATS
    total = use_simd() ? count_simd(p, n, (unsigned char)c) : count_scalar(p, n, (unsigned char)c);
#else
    total = count_scalar(p, n, (unsigned char)c);
#endif
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(total);
}

/* find(buf, needle, start=0) -> int: buf.find(needle, start), with the C library's
 * memmem (several times faster than bytes.find on needles whose last byte is common). */
static PyObject *native_find(PyObject *self, PyObject *args) { return find_common(args, 0); }

static PyObject *native_find_ci(PyObject *self, PyObject *args) { return find_common(args, 1); }

/* ---------------------------------------------------------------------------------
 * The UTF-8 bytes of the text a JSON string body stands for (message_text, below):
 * escaped.decode_escaped(body).encode("utf-8"), or -1 where that would need more than
 * this (the caller then decodes in Python): a \u escape of a surrogate (a pair or a lone
 * one), an escape JSON does not have, a raw control byte or quote, or raw bytes that are
 * not valid UTF-8 (checked on the result, which escapes only add valid UTF-8 to). The
 * search runs a regex over these bytes (RE2 takes UTF-8) instead of over a decoded str.
 */
/* One escape at in[i] (a backslash, in[i + 1] within ``end``) written to out + *o: the bytes
 * it takes, or -1 where it is declined (one JSON has not, a \u of a surrogate: the Python
 * decoder's to explain). */
static inline Py_ssize_t unescape_one(const unsigned char *in, Py_ssize_t i, Py_ssize_t end, unsigned char *out,
                                      Py_ssize_t *o) {
    if (i + 1 >= end) return -1;
    unsigned char c = in[i + 1], r;
    switch (c) {
    case '"': r = '"'; break;
    case '\\': r = '\\'; break;
    case '/': r = '/'; break;
    case 'b': r = '\b'; break;
    case 'f': r = '\f'; break;
    case 'n': r = '\n'; break;
    case 'r': r = '\r'; break;
    case 't': r = '\t'; break;
    case 'u': {
        if (i + 6 > end) return -1;
        int upper = 0, v = hex4(in + i + 2, &upper);
        if (v < 0 || (v >= 0xD800 && v <= 0xDFFF)) return -1;
        if (v < 0x80) {
            out[(*o)++] = (unsigned char)v;
        } else if (v < 0x800) {
            out[(*o)++] = (unsigned char)(0xC0 | (v >> 6));
            out[(*o)++] = (unsigned char)(0x80 | (v & 0x3F));
        } else {
            out[(*o)++] = (unsigned char)(0xE0 | (v >> 12));
            out[(*o)++] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
            out[(*o)++] = (unsigned char)(0x80 | (v & 0x3F));
        }
        return 6;
    }
    default: return -1;
    }
    out[(*o)++] = r;
    return 2;
}

/* The byte at in[*i] that is no plain text: an escape undone, a join ('"\n"') dropped; -1 for
 * anything else (a raw control or newline, a quote out of place, an escape declined). */
static inline int unescape_special(const unsigned char *in, Py_ssize_t end, unsigned char *out, Py_ssize_t *i,
                                   Py_ssize_t *o) {
    unsigned char b = in[*i];
    if (b == '\\') {
        Py_ssize_t took = unescape_one(in, *i, end, out, o);
        if (took < 0) return -1;
        *i += took;
        return 0;
    }
    if (b == '"' && *i + 2 < end && in[*i + 1] == '\n' && in[*i + 2] == '"') {
        /* a join: the line's closing quote, its newline, the next one's opening quote; a line
         * that begins with a continuation byte is no UTF-8 (a character split over two lines:
         * whole once joined, yet each line is invalid, as the parser says) */
        if ((in[*i + 3] & 0xC0) == 0x80) return -1; /* *i + 3 <= end: at most the last quote */
        *i += 3;
        return 0;
    }
    return -1;
}

/* unescape_lines (below) a byte at a time from in[i], out[o] (where no vector loop runs). */
static Py_ssize_t unescape_lines_scalar(const unsigned char *in, Py_ssize_t end, unsigned char *out, Py_ssize_t i,
                                        Py_ssize_t o) {
    while (i < end) {
        unsigned char b = in[i];
        if (b != '\\' && b != '"' && b >= 0x20) {
            out[o++] = b;
            i++;
        } else if (unescape_special(in, end, out, &i, &o) < 0) {
            return -1;
        }
    }
    return i == end ? o : -1;
}

#ifdef HAVE_SIMD_STATS
/* unescape(deframe(in[0:n])) in one pass (``framed`` checked: a quote first, '"\n' last), what
 * a deframing, a scan for controls and an unescape gave in three: the JSON strings' bodies
 * between the first quote and the last, each '"\n"' between two lines dropped, each escape
 * undone; -1 for anything else (a raw control or newline, a quote that frames no join, an
 * escape unescape_one declines), which the caller's Python decoder then explains. Scanning
 * escapes in order, a quote an escape takes ('\"') is never taken for a line's end, as the
 * deframing before it did with a line ending in '\"' (then not JSON). 32 bytes are copied at
 * a time up to the next backslash, quote or control: the copy and the look in one load, where
 * the unescape cost a memchr and a memcpy call an escape (2.3 GB/s on text with a newline
 * every 50 bytes). ``out``: room for end bytes (a store never passes out + i). */
AVX_TARGET static Py_ssize_t unescape_lines_from(const unsigned char *in, Py_ssize_t end, unsigned char *out,
                                               Py_ssize_t i, Py_ssize_t o) {
    const __m256i bs = _mm256_set1_epi8('\\'), qt = _mm256_set1_epi8('"'), c1f = _mm256_set1_epi8(0x1F);
    while (i < end) {
        if (i + 32 <= end) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(in + i));
            _mm256_storeu_si256((__m256i *)(out + o), v); /* o < i: within out[0:n] */
            __m256i special = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, bs), _mm256_cmpeq_epi8(v, qt)),
                                              _mm256_cmpeq_epi8(_mm256_min_epu8(v, c1f), v));
            unsigned m = (unsigned)_mm256_movemask_epi8(special);
            if (m == 0) {
                i += 32;
                o += 32;
                continue;
            }
            int k = __builtin_ctz(m);
            i += k;
            o += k;
        } else {
            return unescape_lines_scalar(in, end, out, i, o); /* the last 31 bytes */
        }
        if (unescape_special(in, end, out, &i, &o) < 0) return -1;
    }
    return i == end ? o : -1;
}

/* unescape_lines with AVX-512 VBMI2: 64 bytes a step without a branch on what they hold. The
 * escapes by simdjson's carry trick (a backslash run of odd length escapes the byte after
 * it), the joins as an unescaped quote, a newline and a quote; the backslashes that escape
 * and the joins' three bytes dropped by one compress (vpcompressb), the escaped n t r b f
 * made their controls by masked moves. A raw control or quote outside a join, an escape JSON
 * has not, or two joins sharing a quote (a line of a lone quote) is a -1; a \u hands the
 * rest to the loop above, which takes it.
 * The raw lines' UTF-8 is checked and their continuation bytes counted on the way
 * (``*raw_cont``; -1 where it could not be: a \u, or anything invalid): the text's code
 * points are then its bytes less those, with no second pass over it (which took a third of
 * message_text's time). The text is valid UTF-8 where the lines are and no \u is undone:
 * what the unescape drops or makes (backslashes, joins, the controls of \n \t \r \b \f) is
 * ASCII, and a character split over two lines (raw bytes that are no UTF-8, joined) is a -1. */
#define UN_TARGET __attribute__((target("avx2,popcnt,avx512f,avx512bw,avx512vbmi,avx512vbmi2")))

/* unescape_lines512's clean pass (the skip's, sk_clean512, for the unescape): a chunk's blocks
 * joined and unescaped with nothing carried from block to block, what the block loop would
 * refuse or carry ORed together and looked at once a chunk. The byte before each block and
 * the one after are loaded with it: a byte is escaped where a backslash precedes it (no
 * backslash is escaped here: two in a row leave the chunk to the block loop), a join is a
 * newline with the quotes each side, and every unescaped quote is next to a newline. The
 * escaped byte is looked up (vpermi2b) in a table of what each escape stands for, 0 for
 * those the chunk leaves to the block loop (\u; what JSON has not). UTF-8 checked and
 * continuation bytes counted in a second pass over a chunk with a byte >= 0x80. A chunk with
 * anything else is the block loop's. ``*o`` the text's bytes so far; returns where the
 * first chunk not taken begins. */
UN_TARGET static inline __attribute__((always_inline)) Py_ssize_t
un_clean512(const unsigned char *in, Py_ssize_t i, Py_ssize_t end, unsigned char *out, Py_ssize_t *o,
            utf8_count512 *raw, const utf8_consts512 *u8) {
    const __m512i bsl = _mm512_set1_epi8('\\'), qt = _mm512_set1_epi8('"'), nl = _mm512_set1_epi8('\n');
    const __m512i c1f = _mm512_set1_epi8(0x1F);
    /* what each escape stands for, by the escaped byte's low 7 bits (bytes >= 0x80 refused apart) */
    static const unsigned char esc_table[128] = {
        ['"'] = '"', ['/'] = '/', ['b'] = '\b', ['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t'};
    const __m512i tlo = _mm512_loadu_si512((const void *)esc_table), thi = _mm512_loadu_si512((const void *)(esc_table + 64));
    Py_ssize_t w = *o;
    while (i + CLEAN_CHUNK + 66 <= end) {
        const Py_ssize_t c0 = i, c1 = i + CLEAN_CHUNK;
        if (in[c0 - 1] == '\\') return c0; /* an escape begun before the chunk: the block loop's */
        /* A newline first: the quote before it is the block loop's, which checks a quote it sees
         * and not the byte before a newline (in[0] is in no block: a first line of a lone quote) */
        if (in[c0] == '\n') return c0;
        uint64_t err = 0;
        __m512i high = _mm512_setzero_si512();
        for (Py_ssize_t b = c0; b < c1; b += 64) {
            const unsigned char *p = in + b;
            __m512i v = _mm512_loadu_si512((const void *)p);
            __m512i vp = _mm512_loadu_si512((const void *)(p - 1)), vn = _mm512_loadu_si512((const void *)(p + 1));
            uint64_t bs = _mm512_cmpeq_epi8_mask(v, bsl), bsp = _mm512_cmpeq_epi8_mask(vp, bsl);
            uint64_t q = _mm512_cmpeq_epi8_mask(v, qt), n = _mm512_cmpeq_epi8_mask(v, nl);
            uint64_t nlp = _mm512_cmpeq_epi8_mask(vp, nl), nln = _mm512_cmpeq_epi8_mask(vn, nl);
            uint64_t controls = _mm512_cmple_epu8_mask(v, c1f);
            __m512i t = _mm512_permutex2var_epi8(tlo, v, thi);
            uint64_t sign = _mm512_movepi8_mask(v);
            /* a raw control but a join's newline, an escape it does not take (two backslashes
             * in a row too: the table has no backslash), a quote not escaped away from a
             * newline or a newline without its quotes, a line of a lone quote */
            err |= (controls ^ n) | _mm512_mask_testn_epi8_mask(bsp, t, t) | (bsp & sign) |
                   ((q & ~bsp) ^ (nlp | nln)) | (q & nlp & nln);
            high = _mm512_or_si512(high, v);
            /* the escaped bytes made what they stand for; the escaping backslashes and the joins'
             * three bytes dropped (o < b: the 64 bytes stored end before out + b + 64 <= out + n) */
            v = _mm512_mask_mov_epi8(v, bsp, t);
            uint64_t keep = ~(bs | n | nlp | nln);
            _mm512_storeu_si512((void *)(out + w), _mm512_maskz_compress_epi8(keep, v));
            w += __builtin_popcountll(keep);
        }
        /* A newline last: the quote after it is no block's of this chunk, and the block loop,
         * which looks at the newline only through the quote before it, drops it after its join */
        if (err || (in[c1 - 1] == '\n' && in[c1] != '"')) return c0;
        /* (the block before's last bytes may begin a character this chunk's first must end) */
        if (_mm512_movepi8_mask(_mm512_or_si512(high, raw->prev))) {
            /* the raw UTF-8, checked and counted as the block loop checks and counts it */
            utf8_count512 u = *raw;
            utf8_count512_run(&u, in, c0, c1, u8);
            if (u.wrong) return c0; /* the block loop says what it is */
            *raw = u;
        } else {
            raw->prev = _mm512_loadu_si512((const void *)(in + c1 - 64));
        }
        *o = w;
        i = c1;
    }
    return i;
}

UN_TARGET static Py_ssize_t
unescape_lines512(const unsigned char *in, Py_ssize_t n, unsigned char *out, long long *raw_cont) {
    const Py_ssize_t end = n - 2;
    __m512i bsl = _mm512_set1_epi8('\\'), qt = _mm512_set1_epi8('"'), nl = _mm512_set1_epi8('\n');
    __m512i c1f = _mm512_set1_epi8(0x1F), sl = _mm512_set1_epi8('/');
    const uint64_t even = 0x5555555555555555ULL;
    uint64_t prev_escaped = 0, spill = 0, prev_fs = 0; /* prev_fs: the block before's joins */
    /* continuation bytes (0x80-0xBF) are those below 0xC0 as signed bytes */
    __m512i cont_below = _mm512_set1_epi8((char)0xC0);
    __m512i ln = _mm512_set1_epi8('n'), lt = _mm512_set1_epi8('t'), lr = _mm512_set1_epi8('r');
    __m512i lb = _mm512_set1_epi8('b'), lf = _mm512_set1_epi8('f'), lu = _mm512_set1_epi8('u');
    __m512i cn = _mm512_set1_epi8('\n'), ct = _mm512_set1_epi8('\t'), cr = _mm512_set1_epi8('\r');
    __m512i cb = _mm512_set1_epi8('\b'), cf = _mm512_set1_epi8('\f');
    /* opaque: else broadcast from immediates again every block (see sk_read512_impl) */
    __asm__("" : "+v"(bsl), "+v"(qt), "+v"(nl), "+v"(c1f), "+v"(sl), "+v"(cont_below));
    __asm__("" : "+v"(ln), "+v"(lt), "+v"(lr), "+v"(lb), "+v"(lf), "+v"(lu));
    __asm__("" : "+v"(cn), "+v"(ct), "+v"(cr), "+v"(cb), "+v"(cf));
    utf8_consts512 u8 = utf8_consts512_make();
    __asm__("" : "+v"(u8.nib), "+v"(u8.hi), "+v"(u8.b1_high), "+v"(u8.b1_low), "+v"(u8.b2_high), "+v"(u8.e0),
                 "+v"(u8.f0), "+v"(u8.lanes));
    utf8_count512 raw = {_mm512_setzero_si512(), 0, 0}; /* the lines' UTF-8, checked and counted */
    int whole = 1; /* no \u: the text's UTF-8 is the lines' */
    Py_ssize_t i = 1, o = 0;
    /* the clean pass (un_clean512) takes what it can; a chunk it does not, and the ones it then
     * waits over, are the block loop's (up to ``clean_at``) */
    Py_ssize_t clean_at = sk_clean_ok ? 1 : end;
    int failures = 0;
    /* in[i .. i + 65] read (the join's two bytes after a quote): every byte before ``end`` */
    for (;;) {
        if (i >= clean_at) {
            Py_ssize_t from = i;
            i = un_clean512(in, i, end, out, &o, &raw, &u8);
            if (i != from) {
                /* the block loop's state at i, as its blocks before would have left it: an
                 * escape begun where the last byte is a backslash (no backslash is escaped in
                 * a chunk taken), the joins begun in the last three bytes (their closing quote) */
                prev_escaped = in[i - 1] == '\\';
                prev_fs = 0;
                for (int k = 1; k <= 3; k++)
                    if (in[i - k] == '"' && in[i - k + 1] == '\n' && in[i - k + 2] == '"') prev_fs |= 1ULL << (64 - k);
                spill = (prev_fs >> 62) | (prev_fs >> 63);
            }
            clean_at = clean_again(i, i != from, &failures);
        }
        if (!(i + 66 <= end)) break;
        if (i >= clean_at) continue; /* the clean pass tries again from i */
        const unsigned char *p = in + i;
        __m512i v = _mm512_loadu_si512((const void *)p);
        __m512i w1 = _mm512_loadu_si512((const void *)(p + 1)), w2 = _mm512_loadu_si512((const void *)(p + 2));
        uint64_t bs = _mm512_cmpeq_epi8_mask(v, bsl);
        uint64_t b = bs & ~prev_escaped;
        uint64_t follows = (b << 1) | prev_escaped;
        unsigned long long seq_even;
        uint64_t next_escaped = __builtin_uaddll_overflow(b & ~even & ~follows, b, &seq_even);
        uint64_t escaped = (even ^ (seq_even << 1)) & follows;
        uint64_t escaper = bs & ~escaped;
        uint64_t uq = _mm512_cmpeq_epi8_mask(v, qt) & ~escaped;
        uint64_t fs = uq & _mm512_cmpeq_epi8_mask(w1, nl) & _mm512_cmpeq_epi8_mask(w2, qt);
        uint64_t frame = fs | (fs << 1) | (fs << 2) | spill;
        uint64_t ctl = _mm512_cmple_epu8_mask(v, c1f);
        /* the escaped bytes JSON has: " \ / b f n r t (u: handed over) */
        uint64_t ok_esc = _mm512_cmpeq_epi8_mask(v, qt) | bs | _mm512_cmpeq_epi8_mask(v, sl);
        uint64_t en = _mm512_mask_cmpeq_epi8_mask(escaped, v, ln);
        uint64_t et = _mm512_mask_cmpeq_epi8_mask(escaped, v, lt);
        uint64_t er = _mm512_mask_cmpeq_epi8_mask(escaped, v, lr);
        uint64_t eb = _mm512_mask_cmpeq_epi8_mask(escaped, v, lb);
        uint64_t ef = _mm512_mask_cmpeq_epi8_mask(escaped, v, lf);
        uint64_t eu = _mm512_mask_cmpeq_epi8_mask(escaped, v, lu);
        /* a line begun by a continuation byte: a character split over two lines (see unescape_special) */
        uint64_t cont = _mm512_cmplt_epi8_mask(v, cont_below);
        uint64_t bad = ((ctl | uq) & ~frame) | (escaped & ~(ok_esc | en | et | er | eb | ef | eu)) |
                       (fs & ((fs << 2) | (prev_fs >> 62))) | (cont & ((fs << 3) | (prev_fs >> 61)));
        if (bad) return -1;
        if (eu) { /* a \u in this block: the loop above from its start */
            whole = 0;
            break;
        }
        utf8_count512_step(&raw, v, cont, &u8);
        v = _mm512_mask_mov_epi8(v, en, cn);
        v = _mm512_mask_mov_epi8(v, et, ct);
        v = _mm512_mask_mov_epi8(v, er, cr);
        v = _mm512_mask_mov_epi8(v, eb, cb);
        v = _mm512_mask_mov_epi8(v, ef, cf);
        uint64_t keep = ~(escaper | frame);
        /* o < i: the 64 bytes stored end before out + i + 64 <= out + n */
        _mm512_storeu_si512((void *)(out + o), _mm512_maskz_compress_epi8(keep, v));
        o += __builtin_popcountll(keep);
        prev_escaped = next_escaped;
        spill = (fs >> 62) | (fs >> 63); /* a join begun at byte 62 or 63 ends in the next block */
        prev_fs = fs;
        i += 64;
    }
    /* the first byte of a line a join of the last block begins there (the loop below checks its own) */
    for (uint64_t a = prev_fs >> 61; a; a &= a - 1)
        if ((in[i + __builtin_ctzll(a)] & 0xC0) == 0x80) return -1;
    /* the raw bytes the loop below takes, checked and counted as the loop above did its own
     * (a \u among them, or what may be one: no count) */
    for (Py_ssize_t t = i; whole && t < end; t += 64) {
        __m512i v = load_upto512(in + t, end - t);
        if (_mm512_mask_cmpeq_epi8_mask(_mm512_cmpeq_epi8_mask(v, bsl) << 1, v, lu)) whole = 0;
        if (in[t - 1] == '\\' && in[t] == 'u') whole = 0; /* one across two steps (in[0] is a quote) */
        utf8_count512_step(&raw, v, _mm512_cmplt_epi8_mask(v, cont_below), &u8);
    }
    *raw_cont = whole && !utf8_count512_wrong(&raw, &u8) ? raw.cont : -1;
    /* The loop above from i: a join's last bytes there skipped, an escape whose backslash is
     * behind (dropped) taken from that backslash. */
    if (prev_escaped) {
        Py_ssize_t took = unescape_one(in, i - 1, end, out, &o);
        if (took < 0) return -1;
        i += took - 1;
    } else {
        i += __builtin_popcountll(spill);
    }
    return unescape_lines_from(in, end, out, i, o);
}

/* unescape_lines in AVX-512 VBMI2 where the CPU has it (and AVX-512 is on), else AVX2 (which
 * leaves ``*raw_cont`` -1: the caller counts the text). */
AVX_TARGET static Py_ssize_t unescape_lines(const unsigned char *in, Py_ssize_t n, unsigned char *out,
                                            long long *raw_cont) {
    *raw_cont = -1;
    if (use_vbmi2()) return unescape_lines512(in, n, out, raw_cont);
    return unescape_lines_from(in, n - 2, out, 1, 0);
}
#endif

/* message_text(raw, start, end, out) -> (int, int): the UTF-8 text of the fragment lines
 * raw[start:end] (unescape_lines: joined and unescaped in one pass, then checked as UTF-8 and
 * counted), written into the writable buffer ``out`` (at least end - start bytes; never
 * resized, so a search reuses it for every message and file: a fresh bytes object each time
 * cost more in page faults than the work): its length and code points, or (-1, 0) where the
 * parser's Python decoder is to say what the lines hold (``out`` is then not to be read). */
static PyObject *native_message_text(PyObject *self, PyObject *args) {
    Py_buffer raw, out;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nnw*", &raw, &start, &end, &out)) return NULL;
    if (start < 0) start = 0;
    if (end > raw.len) end = raw.len;
    if (end < start) end = start;
    Py_ssize_t n = end - start, got = -1;
    const unsigned char *in = (const unsigned char *)raw.buf + start;
    unsigned char *p = (unsigned char *)out.buf;
    if (out.len < n || (p < in + n && in < p + out.len)) {
        PyBuffer_Release(&raw);
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "message_text: out must be a buffer of end - start bytes, apart from raw");
        return NULL;
    }
    int ok = 0;
    long long cp = 0, ub = 0, raw_cont = -1;
    if (framed(in, n)) {
        Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_SIMD_STATS
        if (use_simd())
            got = unescape_lines(in, n, p, &raw_cont);
        else
#endif
            got = unescape_lines_scalar(in, n - 2, p, 1, 0);
        if (got >= 0 && raw_cont >= 0)
            cp = got - raw_cont; /* counted on the way (unescape_lines512) */
        else if (got >= 0)
            ok = count_run(p, got, 0, &cp, &ub, NULL);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&raw);
    PyBuffer_Release(&out);
    if (got < 0 || ok < 0) return Py_BuildValue("(nL)", (Py_ssize_t)-1, 0LL);
    return Py_BuildValue("(nL)", got, cp); /* its code points: counted on the way, not again by the caller */
}

/* ---------------------------------------------------------------------------------
 * prefilter(paths, kinds, plain, escaped, folded, max_size, threads, chunk=8 MiB, transcript_max=max_size,
 *           share_above=PF_WHOLE) -> bytes
 *
 * prefilter.may_match over many files in one call, on ``threads`` threads, without the
 * GIL: one verdict byte per path, 0 (ruled out: the needle's encoded form is not in its
 * bytes), 1 (may hold a match: search it) or 2 (could not be opened or is not a regular
 * file: the search opens it again and says why). ``kinds[i]`` is 0 for a tool output
 * (``plain`` must occur in its bytes), 1 for a transcript (``escaped`` must occur in its
 * bytes with every '"\n"' removed, unless it holds a \u or \/ escape, is cut off, or was
 * changed while read: then 1) and 2 for an artifact that is never ruled out. ``folded``:
 * the needles are lowercase and found ignoring ASCII case (find_ci). Files over
 * ``max_size`` bytes give 1, transcripts over ``transcript_max`` too (their search skips
 * what holds no needle in one pass, skip_lines); files over ``chunk`` bytes are read a chunk
 * at a time (pf_chunked: the same verdict, in a chunk's memory). The first mapped transcript
 * over ``share_above`` bytes is checked by every thread at once (pf_shared; the tests set it
 * low). A path is opened as storage.local.open_regular opens it: O_NOFOLLOW, a regular file
 * only. Separate from the Python twin for speed only: a batch costs one call instead of an
 * open, a read and a find per file in Python.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#define PF_PARTS 8 /* parts of a shared check at most */

typedef struct {
    const char **paths;
    const unsigned char *kinds;
    Py_ssize_t count;
    const unsigned char *plain, *esc;
    Py_ssize_t plain_len, esc_len;
    int folded;
    Py_ssize_t max_size, chunk, transcript_max;
    unsigned char *out;
    Py_ssize_t next; /* the next path to take (atomic) */
    const void *halves; /* the escaped needle's two sk_half (pf_halves), or NULL */
    Py_ssize_t mapped, mapped_out, mapped_begun; /* mapped transcripts checked, ruled out, begun (atomic) */
    /* A big transcript checked by every thread at once (pf_shared), one at a time: its mapping
     * cut at joins into parts that each thread takes as it comes free. Under ``mu``. */
    int threads;
    Py_ssize_t share_above; /* transcripts bigger than this are shared (where there are threads to share) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const unsigned char *sh_map; /* the shared check's mapping; NULL: none under way */
    Py_ssize_t sh_cut[PF_PARTS + 1]; /* part i: sh_map[cut[i] - (i > 0) : cut[i + 1] + 2 (the last: the end)] */
    int sh_busy, sh_parts, sh_next, sh_done, sh_v; /* busy: a shared check claimed (its parts may not be out yet) */
    int sh_checked; /* a big one's shared check is done: pf_one's rule need not wait for two begun (atomic) */
} pf_job;

typedef struct {
    unsigned char *buf, *joined;
    size_t cap, jcap;
} pf_bufs;

static int pf_reserve(unsigned char **b, size_t *cap, size_t want) {
    if (*cap >= want) return 0;
    unsigned char *nb = realloc(*b, want);
    if (nb == NULL) return -1;
    *b = nb;
    *cap = want;
    return 0;
}

/* in[0:n] with every '"\n"' removed, left to right and non-overlapping as bytes.replace
 * removes them, written to out, or -1 as soon as a \u or \/ escape is seen (the bytes
 * a backslash and 'u' or '/'): the prefilter's two questions in one pass. ``out`` needs
 * room for n + PF_MARGIN bytes. The input is taken 64 bytes at a time (a fragment line is
 * ~70 bytes: about one newline per block, so the loops over the masks are predictable);
 * each block is stored whole where its bytes go (out[o + x - seg] for input byte x of the
 * current segment, the one after the last '"\n"' removed), and bytes stored past a
 * removal are overwritten by the next store: a line costs no call (a memchr and a memcpy
 * per line, and a second pass for the escapes, cost more than reading the bytes). */
/* Whether the newline at in[j], not a join, is framed by whitespace the parser's JSON takes
 * about a fragment line (a space, tab or CR before it, or after it where a quote ends the
 * line before): lines the writer never frames so, whose joins the rules here do not see; a
 * file holding one is never ruled out (the header's own lines hold none). */
static inline int pf_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\r'; }
static inline int pf_odd_newline(const unsigned char *in, Py_ssize_t n, Py_ssize_t j) {
    return j >= 1 && (pf_ws(in[j - 1]) || (in[j - 1] == '"' && j + 1 < n && pf_ws(in[j + 1])));
}

#define PF_BLOCK 64
/* How far ahead of a block the one-pass scans (the skip reads, the prefilter's halves) ask for
 * its bytes (_mm_prefetch, a hint that never faults, even past the mapping): over a mapped
 * file the hardware's stream prefetcher stops at each 4 KiB page, and a scan of the page cache
 * then waited at every page's first line (the fused skip read: 3.24 -> 3.74-4.02 GB/s on one
 * 134 MB message); over a buffer just read, in cache, the hint costs next to nothing. */
#define SCAN_AHEAD 4096
#define PF_MARGIN (3 * PF_BLOCK)
#if defined(__SSE2__)
static inline uint64_t pf_mask64(const unsigned char *p, __m128i c) {
    uint64_t m = 0;
    for (int k = 0; k < 4; k++)
        m |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * k)), c))
             << (16 * k);
    return m;
}

static inline void pf_store64(unsigned char *out, const unsigned char *in) {
    for (int k = 0; k < 4; k++)
        _mm_storeu_si128((__m128i *)(out + 16 * k), _mm_loadu_si128((const __m128i *)(in + 16 * k)));
}
#endif

/* The block loop, for a 64-bit mask function MASK(p, byte) and a 64-byte copy COPY(out, in):
 * advances *pi, *pseg, *po; returns 1 at an escape. */
#define PF_BLOCKS(MASK, COPY)                                                                             \
    Py_ssize_t i = *pi, seg = *pseg, o = *po;                                                          \
    for (; i + 2 * PF_BLOCK + 2 <= n; i += PF_BLOCK) {                                                 \
        /* a backslash here and 'u' or '/' one byte on: an escape (branch-free per block) */         \
        if (MASK(in + i, '\\') & (MASK(in + i + 1, 'u') | MASK(in + i + 1, '/'))) return 1;            \
        uint64_t m_nl = MASK(in + i, '\n');                                                            \
        while (m_nl) {                                                                                  \
            Py_ssize_t j = i + __builtin_ctzll(m_nl);                                                   \
            m_nl &= m_nl - 1;                                                                           \
            if (j >= 1 && j - 1 >= seg && in[j - 1] == '"' && in[j + 1] == '"') {                      \
                Py_ssize_t from = seg > i ? seg : i; /* in[seg:from] is stored already */              \
                COPY(out + o + (from - seg), in + from);                                                \
                o += j - 1 - seg;                                                                       \
                seg = j + 2;                                                                            \
            } else if (pf_odd_newline(in, n, j)) {                                                      \
                return 1;                                                                               \
            }                                                                                           \
        }                                                                                               \
        Py_ssize_t from = seg > i ? seg : i;                                                            \
        COPY(out + o + (from - seg), in + from);                                                        \
    }                                                                                                   \
    *pi = i, *pseg = seg, *po = o;                                                                      \
    return 0;

#if defined(__SSE2__)
#define SSE_MASK(p, c) pf_mask64((p), _mm_set1_epi8((char)(c)))
static int pf_blocks_sse2(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t *pi,
                          Py_ssize_t *pseg, Py_ssize_t *po) {
    PF_BLOCKS(SSE_MASK, pf_store64)
}
#endif

#ifdef HAVE_SIMD_STATS
AVX_TARGET static inline uint64_t pf_mask64_avx2(const unsigned char *p, unsigned char c) {
    const __m256i v = _mm256_set1_epi8((char)c);
    uint32_t lo = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)p), v));
    uint32_t hi = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + 32)), v));
    return (uint64_t)lo | ((uint64_t)hi << 32);
}

AVX_TARGET static inline void pf_store64_avx2(unsigned char *out, const unsigned char *in) {
    _mm256_storeu_si256((__m256i *)out, _mm256_loadu_si256((const __m256i *)in));
    _mm256_storeu_si256((__m256i *)(out + 32), _mm256_loadu_si256((const __m256i *)(in + 32)));
}

AVX_TARGET static int pf_blocks_avx2(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t *pi,
                                     Py_ssize_t *pseg, Py_ssize_t *po) {
    PF_BLOCKS(pf_mask64_avx2, pf_store64_avx2)
}
#endif

/* deframe_into's fast start: the joins of PF_BLOCKS without its escape check, stopping at
 * the first block holding a newline that is not a join, or near the end: *pseg is then the
 * end of the last join (or the start) and out[0:*po] the body up to there. */
#define DF_BLOCKS(MASK, COPY)                                                                             \
    Py_ssize_t i = *pi, seg = *pseg, o = *po;                                                          \
    for (; i + 2 * PF_BLOCK + 2 <= n; i += PF_BLOCK) {                                                 \
        uint64_t m_nl = MASK(in + i, '\n');                                                            \
        while (m_nl) {                                                                                  \
            Py_ssize_t j = i + __builtin_ctzll(m_nl);                                                   \
            m_nl &= m_nl - 1;                                                                           \
            if (!(j >= 2 && j - 1 >= seg && in[j - 1] == '"' && in[j + 1] == '"')) {                  \
                *pseg = seg, *po = o; /* out holds the body up to seg only */                          \
                return;                                                                                 \
            }                                                                                           \
            Py_ssize_t from = seg > i ? seg : i;                                                        \
            COPY(out + o + (from - seg), in + from);                                                    \
            o += j - 1 - seg;                                                                           \
            seg = j + 2;                                                                                \
        }                                                                                               \
        Py_ssize_t from = seg > i ? seg : i;                                                            \
        COPY(out + o + (from - seg), in + from);                                                        \
    }                                                                                                   \
    /* seg stays the end of the last join (the loop after goes on from there) */                 \
    *pi = i, *pseg = seg, *po = o;

#if defined(__SSE2__)
static void deframe_blocks_sse2(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t *pi,
                                Py_ssize_t *pseg, Py_ssize_t *po) {
    DF_BLOCKS(SSE_MASK, pf_store64)
}
#endif
#ifdef HAVE_SIMD_STATS
AVX_TARGET static void deframe_blocks_avx2(const unsigned char *in, Py_ssize_t n, unsigned char *out,
                                           Py_ssize_t *pi, Py_ssize_t *pseg, Py_ssize_t *po) {
    DF_BLOCKS(pf_mask64_avx2, pf_store64_avx2)
}
#endif

static void deframe_blocks(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t *pi,
                           Py_ssize_t *pseg, Py_ssize_t *po) {
#ifdef HAVE_SIMD_STATS
    if (use_simd()) {
        deframe_blocks_avx2(in, n, out, pi, pseg, po);
        return;
    }
#endif
#if defined(__SSE2__)
    deframe_blocks_sse2(in, n, out, pi, pseg, po);
#endif
}

/* ``*last_seg`` and ``*last_o`` get the state just after the last '"\n"' removed (0, 0 if
 * none): in[0:*last_seg] joins to out[0:*last_o], and a join of in[*last_seg:] from a fresh
 * start goes on exactly as this one would (the next removal depends only on the bytes from
 * there), which is where a file read a chunk at a time is cut. */
static Py_ssize_t pf_join_plain(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t *last_seg,
                                Py_ssize_t *last_o) {
    Py_ssize_t i = 0, seg = 0, o = 0;
#ifdef HAVE_SIMD_STATS
    if (use_simd()) {
        if (pf_blocks_avx2(in, n, out, &i, &seg, &o)) return -1;
    } else
#endif
    {
#if defined(__SSE2__)
        if (pf_blocks_sse2(in, n, out, &i, &seg, &o)) return -1;
#endif
    }
    /* Here out[o : o + i - seg] holds in[seg:i] (seg may be past i by up to 2: nothing is held). */
    for (Py_ssize_t q = i; q + 1 < n; q++)
        if (in[q] == '\\' && (in[q + 1] == 'u' || in[q + 1] == '/')) return -1;
    *last_seg = seg, *last_o = o; /* o moves only where a join is */
    /* The rest one newline at a time from i (a newline before i was seen above). seg stays
     * the end of the last join: a join whose newline is at i itself takes the quote at
     * i - 1, and the copies from seg rewrite bytes already stored with the same bytes. */
    for (;;) {
        const unsigned char *q = i < n ? memchr(in + i, '\n', (size_t)(n - i)) : NULL;
        if (q == NULL) break;
        Py_ssize_t j = q - in;
        if (j >= 1 && j - 1 >= seg && in[j - 1] == '"' && j + 1 < n && in[j + 1] == '"') {
            memcpy(out + o, in + seg, (size_t)(j - 1 - seg));
            o += j - 1 - seg;
            seg = j + 2;
            i = j + 2;
            *last_seg = seg, *last_o = o;
        } else if (pf_odd_newline(in, n, j)) {
            return -1;
        } else {
            i = j + 1;
        }
    }
    memcpy(out + o, in + seg, (size_t)(n - seg));
    return o + n - seg;
}

#ifdef HAVE_SIMD_STATS
/* The fused search of sk_read (``fused``): instead of joining the lines and searching the
 * joined text, the needle's two halves E[:h] and E[m-h:] (h = ceil(m/2)) are looked for in
 * the raw bytes as they are checked. Sound where every fragment line holds at least m - 1
 * joined bytes: a match then spans at most two lines (a line strictly inside it would be
 * shorter), so one of its halves lies whole within one line, contiguous in the file
 * (a split after k bytes: k >= h puts E[:h] in the first line, else E[m-h:] is in the
 * second, as m - h >= k). A shorter line ends the fused read (status 2) and the join takes
 * over. Each half is looked for by its two rarest bytes (rare_pair, as find_simd) and a
 * third (on text of random letters, where no byte is rare, two let a candidate through
 * every few hundred bytes), each candidate compared in full. */
#define HALVES_MIN 16 /* a shorter needle's halves are too common in text to look for */
#define HALVES_MAX 65 /* a longer one spans three lines of 64 ASCII code points */

typedef struct {
    const unsigned char *s; /* the half (lowered when folded) */
    Py_ssize_t h, r1, r2, r3; /* its length; the offsets of its two rarest bytes, and of a third */
    Py_ssize_t back;        /* joined bytes from the needle's start to the half's */
} sk_half;

static void sk_half_init(sk_half *x, const unsigned char *s, Py_ssize_t h, Py_ssize_t back) {
    Py_ssize_t r1, r2, r3 = 0;
    rare_pair(s, h, &r1, &r2);
    while (r3 < h - 1 && (r3 == r1 || r3 == r2)) r3++;
    x->s = s, x->h = h, x->r1 = r1, x->r2 = r2, x->r3 = r3, x->back = back;
}

/* A half's bytes (sk_half) broadcast once for a whole loop in W-bit vectors (sk_half256 for
 * AVX2, sk_half512 for AVX-512BW), for sk_half_mask256/512: broadcast in the mask itself, each
 * block loaded them from memory again (the compiler cannot tell that the loop's stores leave
 * them be). Of a NULL half (the join's loop, no halves) nothing is read: its masks are never
 * made (SK_STEP). One text for both widths. */
#define SK_HALF_OF(W, TARGET)                                                                              \
    typedef struct {                                                                                       \
        __m##W##i c1, c2, c3, fold;                                                                        \
        Py_ssize_t r1, r2, r3;                                                                             \
    } sk_half##W;                                                                                          \
    TARGET static inline __attribute__((always_inline)) sk_half##W sk_half##W##_of(const sk_half *x, int folded) { \
        sk_half##W v;                                                                                      \
        unsigned char f = folded ? 0x20 : 0;                                                               \
        v.fold = _mm##W##_set1_epi8((char)f);                                                              \
        if (x == NULL) {                                                                                   \
            v.c1 = v.c2 = v.c3 = v.fold;                                                                   \
            v.r1 = v.r2 = v.r3 = 0;                                                                        \
            return v;                                                                                      \
        }                                                                                                  \
        v.c1 = _mm##W##_set1_epi8((char)(x->s[x->r1] | f));                                                \
        v.c2 = _mm##W##_set1_epi8((char)(x->s[x->r2] | f));                                                \
        v.c3 = _mm##W##_set1_epi8((char)(x->s[x->r3] | f));                                                \
        v.r1 = x->r1, v.r2 = x->r2, v.r3 = x->r3;                                                          \
        return v;                                                                                          \
    }
SK_HALF_OF(256, AVX_TARGET)
SK_HALF_OF(512, AVX512_TARGET)

/* The halves loops' constants in W-bit vectors (R: the asm constraint of such a register), made
 * once and opaque: else broadcast from immediates again every block (see sk_read512_impl). */
#define PF_HALVES_CONSTS(W, R)                                                                              \
    __m##W##i bsl = _mm##W##_set1_epi8('\\'), u = _mm##W##_set1_epi8('u'), sl = _mm##W##_set1_epi8('/');  \
    __m##W##i qt = _mm##W##_set1_epi8('"'), nl = _mm##W##_set1_epi8('\n');                                  \
    sk_half##W ha = sk_half##W##_of(A, folded), hb = sk_half##W##_of(B, folded);                          \
    __asm__("" : "+" R(bsl), "+" R(u), "+" R(sl), "+" R(qt), "+" R(nl));                                   \
    __asm__("" : "+" R(ha.c1), "+" R(ha.c2), "+" R(ha.c3), "+" R(ha.fold), "+" R(hb.c1), "+" R(hb.c2),     \
                 "+" R(hb.c3));                                                                            \
    hb.fold = ha.fold

/* Bit k set where the half may start at p + k (k < 64); folded: compared with 0x20 ORed in,
 * as find_ci_simd does (more candidates, never fewer). */
AVX_TARGET static inline __attribute__((always_inline)) uint64_t sk_half_mask256(const unsigned char *p,
                                                                               const sk_half256 *x, int folded) {
    uint64_t mask = 0;
    for (int k = 0; k < 2; k++) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(p + 32 * k + x->r1));
        __m256i b = _mm256_loadu_si256((const __m256i *)(p + 32 * k + x->r2));
        __m256i c = _mm256_loadu_si256((const __m256i *)(p + 32 * k + x->r3));
        if (folded) a = _mm256_or_si256(a, x->fold), b = _mm256_or_si256(b, x->fold), c = _mm256_or_si256(c, x->fold);
        __m256i eq = _mm256_and_si256(_mm256_and_si256(_mm256_cmpeq_epi8(a, x->c1), _mm256_cmpeq_epi8(b, x->c2)),
                                      _mm256_cmpeq_epi8(c, x->c3));
        mask |= (uint64_t)(uint32_t)_mm256_movemask_epi8(eq) << (32 * k);
    }
    return mask;
}

static inline int sk_half_at(const unsigned char *q, const sk_half *x, int folded) {
    return folded ? equal_ci(q, x->s, x->h) : memcmp(q, x->s, (size_t)x->h) == 0;
}


/* pf_odd_newline of each newline of the block at i in ``odd`` (those that are no joins: a
 * header's few a message, so the loop is rare). */
static inline int pf_odd_newlines(const unsigned char *in, Py_ssize_t n, Py_ssize_t i, uint64_t odd) {
    for (; odd; odd &= odd - 1)
        if (pf_odd_newline(in, n, i + __builtin_ctzll(odd))) return 1;
    return 0;
}

/* The joins of one 64-byte block at i measured against the last one before (a block holds
 * one join or none where the lines are 64 code points: that case without a loop); 1 when two
 * are closer than ``apart``. */
static inline __attribute__((always_inline)) int pf_block_joins(uint64_t joins, Py_ssize_t i, Py_ssize_t apart,
                                                                Py_ssize_t *last_join) {
    int close = 0;
    if (joins & (joins - 1)) { /* two joins in a block: each pair measured */
        for (uint64_t r = joins; r; r &= r - 1) {
            Py_ssize_t j = i + __builtin_ctzll(r);
            close |= j - *last_join < apart;
            *last_join = j;
        }
    } else {
        Py_ssize_t j = i + __builtin_ctzll(joins | (1ULL << 63));
        close = (joins != 0) & (j - *last_join < apart);
        *last_join = joins ? j : *last_join;
    }
    return close;
}

/* pf_halves' last bytes from i, one at a time, and its verdict. */
static int pf_halves_tail(const unsigned char *in, Py_ssize_t n, Py_ssize_t i, int folded, const sk_half *A,
                          const sk_half *B, Py_ssize_t apart, Py_ssize_t last_join, int close_joins, int strict) {
    for (; i < n; i++) {
        if (in[i] == '\\' && i + 1 < n && (in[i + 1] == 'u' || in[i + 1] == '/')) return 1;
        if (i + A->h <= n && sk_half_at(in + i, A, folded)) return 1;
        if (i + B->h <= n && sk_half_at(in + i, B, folded)) return 1;
        if (in[i] == '\n' && i >= 1 && i + 1 < n && in[i - 1] == '"' && in[i + 1] == '"') {
            close_joins |= i - last_join < apart;
            last_join = i;
        } else if (in[i] == '\n' && (strict ? i + 1 < n : pf_odd_newline(in, n, i))) {
            return 1;
        }
    }
    return close_joins ? 2 : 0;
}

/* The prefilter of a transcript by the needle's halves (see sk_half): 0 when neither half of
 * the escaped needle starts anywhere in in[0:n], no \u or \/ escape is there, and every line
 * between two joins holds m - 1 bytes or more, so that the joined text (every '"\n"' removed
 * as pf_join_plain removes them) cannot hold the needle; 1 when it may; 2 when two joins are
 * closer (the join decides). One read of the bytes, nothing stored: where pf_join_plain
 * copies every byte and find_at reads the copy. A raw newline that is no join stays in the
 * joined text, and the escaped needle holds none: a match never spans it. Every newline with
 * a quote on each side is taken for a join (of '"\n"\n"' only the first is one): two of them
 * too close is a 2 whether or not both are, and a line between two true joins that is too
 * short has a pair of them too close at its ends or inside it. Checked branch-free (a block
 * holds one join or none where the lines are 64 code points). */
AVX_TARGET static inline __attribute__((always_inline)) int
pf_halves_impl(const unsigned char *in, Py_ssize_t n, Py_ssize_t m, const int folded, const sk_half *A, const sk_half *B,
               int strict) {
    const Py_ssize_t apart = m + 2; /* joins at j1 < j2 leave j2 - j1 - 3 bytes between them */
    Py_ssize_t i = 0, last_join = -(Py_ssize_t)1 << 40;
    uint64_t prev_q = 0; /* in[i - 1] is a quote */
    int close_joins = 0;
    PF_HALVES_CONSTS(256, "x");
    for (; i + 128 <= n; i += 64) {
        _mm_prefetch((const char *)(in + i + SCAN_AHEAD), _MM_HINT_T0);
        const unsigned char *p = in + i;
        __m256i v0 = _mm256_loadu_si256((const __m256i *)p), v1 = _mm256_loadu_si256((const __m256i *)(p + 32));
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(p + 1)), w1 = _mm256_loadu_si256((const __m256i *)(p + 33));
        uint64_t esc = sk_eqv64(v0, v1, bsl) & (sk_eqv64(w0, w1, u) | sk_eqv64(w0, w1, sl));
        uint64_t q = sk_eqv64(v0, v1, qt);
        uint64_t nls = sk_eqv64(v0, v1, nl);
        uint64_t joins = nls & ((q << 1) | prev_q) & sk_eqv64(w0, w1, qt);
        prev_q = q >> 63;
        uint64_t ca = sk_half_mask256(p, &ha, folded), cb = sk_half_mask256(p, &hb, folded);
        uint64_t odd = nls & ~joins;
        if (esc || (odd && (strict || pf_odd_newlines(in, n, i, odd)))) return 1;
        for (; ca; ca &= ca - 1)
            if (sk_half_at(p + __builtin_ctzll(ca), A, folded)) return 1;
        for (; cb; cb &= cb - 1)
            if (sk_half_at(p + __builtin_ctzll(cb), B, folded)) return 1;
        close_joins |= pf_block_joins(joins, i, apart, &last_join);
    }
    return pf_halves_tail(in, n, i, folded, A, B, apart, last_join, close_joins, strict);
}

/* Bit k set where the half may start at p + k (k < 64), as sk_half_mask256: AVX-512BW compares
 * into mask registers, each the last one's mask (the three compares ANDed for free). */
AVX512_TARGET static inline __attribute__((always_inline)) __mmask64 sk_half_mask512(const unsigned char *p,
                                                                                    const sk_half512 *x, int folded) {
    __m512i a = _mm512_loadu_si512((const void *)(p + x->r1)), b = _mm512_loadu_si512((const void *)(p + x->r2));
    __m512i c = _mm512_loadu_si512((const void *)(p + x->r3));
    if (folded) a = _mm512_or_si512(a, x->fold), b = _mm512_or_si512(b, x->fold), c = _mm512_or_si512(c, x->fold);
    __mmask64 k = _mm512_cmpeq_epi8_mask(a, x->c1);
    k = _mm512_mask_cmpeq_epi8_mask(k, b, x->c2);
    return _mm512_mask_cmpeq_epi8_mask(k, c, x->c3);
}

/* Bit k set where the half may start at p + k by its two rarest bytes (sk_half_mask512 less
 * the third: a chunk where one may is taken again block by block, which compares three). */
AVX512_TARGET static inline __attribute__((always_inline)) __mmask64 sk_half_pair512(const unsigned char *p,
                                                                                    const sk_half512 *x, int folded) {
    __m512i a = _mm512_loadu_si512((const void *)(p + x->r1)), b = _mm512_loadu_si512((const void *)(p + x->r2));
    if (folded) a = _mm512_or_si512(a, x->fold), b = _mm512_or_si512(b, x->fold);
    return _mm512_mask_cmpeq_epi8_mask(_mm512_cmpeq_epi8_mask(a, x->c1), b, x->c2);
}

/* pf_halves512_impl's clean pass (as the skip's, sk_clean512): a chunk's blocks with no
 * branch and no scalar step a block but the joins' distances, what the block loop would stop at
 * ORed together and looked at once a chunk: no \u or \/, no half that may start (by its rarest
 * pair), no newline that is not a join (a quote each side, loaded with the block), no two joins
 * closer than ``apart`` (nor two in one block). A chunk with any is the block loop's, which
 * says what it is. ``*last_join`` the last join's offset; returns where the first chunk not
 * taken begins. */
AVX512_TARGET static inline __attribute__((always_inline)) Py_ssize_t
pf_clean512(const unsigned char *in, Py_ssize_t n, Py_ssize_t i, Py_ssize_t apart, Py_ssize_t *last_join,
            const sk_half512 *ha, const sk_half512 *hb, const int folded) {
    const __m512i bsl = _mm512_set1_epi8('\\'), u = _mm512_set1_epi8('u'), sl = _mm512_set1_epi8('/');
    const __m512i qt = _mm512_set1_epi8('"'), nl = _mm512_set1_epi8('\n');
    Py_ssize_t lj = *last_join;
    while (i + CLEAN_CHUNK + 128 <= n) {
        const Py_ssize_t c0 = i, c1 = i + CLEAN_CHUNK;
        uint64_t err = 0, close = 0;
        Py_ssize_t last = lj;
        for (Py_ssize_t b = c0; b < c1; b += 64) {
            _mm_prefetch((const char *)(in + b + SCAN_AHEAD), _MM_HINT_T0);
            const unsigned char *p = in + b;
            __m512i v = _mm512_loadu_si512((const void *)p);
            __m512i vp = _mm512_loadu_si512((const void *)(p - 1)), vn = _mm512_loadu_si512((const void *)(p + 1));
            __mmask64 bs = _mm512_cmpeq_epi8_mask(v, bsl);
            uint64_t nls = _mm512_cmpeq_epi8_mask(v, nl);
            uint64_t joins = _mm512_mask_cmpeq_epi8_mask(_mm512_mask_cmpeq_epi8_mask(nls, vp, qt), vn, qt);
            err |= _mm512_mask_cmpeq_epi8_mask(bs, vn, u) | _mm512_mask_cmpeq_epi8_mask(bs, vn, sl) | (nls ^ joins);
            err |= sk_half_pair512(p, ha, folded) | sk_half_pair512(p, hb, folded);
            Py_ssize_t j = b + __builtin_ctzll(joins | (1ULL << 63));
            close |= (uint64_t)((joins != 0) & (j - last < apart)) | (joins & (joins - 1));
            last = joins ? b + 63 - __builtin_clzll(joins) : last;
        }
        if (err | close) break;
        lj = last;
        i = c1;
    }
    *last_join = lj;
    return i;
}

/* pf_halves_impl with AVX-512BW: the same masks, a block's compares straight into mask
 * registers (no movemask, no 32-byte halves to merge). Zen 4 runs a 512-bit op as two
 * 256-bit ones; what it saves is the instructions, about half of them. */
AVX512_TARGET static inline __attribute__((always_inline)) int
pf_halves512_impl(const unsigned char *in, Py_ssize_t n, Py_ssize_t m, const int folded, const sk_half *A,
                  const sk_half *B, int strict) {
    const Py_ssize_t apart = m + 2;
    Py_ssize_t i = 0, last_join = -(Py_ssize_t)1 << 40;
    uint64_t prev_q = 0;
    int close_joins = 0;
    PF_HALVES_CONSTS(512, "v");
    /* the clean pass (pf_clean512) takes what it can from the second block on (the first has no
     * byte before it); a chunk it does not, and the ones it then waits over, are this loop's */
    Py_ssize_t clean_at = sk_clean_ok ? 64 : n;
    int failures = 0;
    for (; i + 128 <= n; i += 64) {
        if (i >= clean_at) {
            Py_ssize_t from = i;
            i = pf_clean512(in, n, i, apart, &last_join, &ha, &hb, folded);
            if (i != from) prev_q = in[i - 1] == '"';
            clean_at = clean_again(i, i != from, &failures);
            if (!(i + 128 <= n)) break;
        }
        _mm_prefetch((const char *)(in + i + SCAN_AHEAD), _MM_HINT_T0);
        const unsigned char *p = in + i;
        __m512i v = _mm512_loadu_si512((const void *)p), w = _mm512_loadu_si512((const void *)(p + 1));
        __mmask64 bs = _mm512_cmpeq_epi8_mask(v, bsl);
        uint64_t esc = _mm512_mask_cmpeq_epi8_mask(bs, w, u) | _mm512_mask_cmpeq_epi8_mask(bs, w, sl);
        uint64_t q = _mm512_cmpeq_epi8_mask(v, qt);
        uint64_t nls = _mm512_cmpeq_epi8_mask(v, nl);
        uint64_t joins = _mm512_mask_cmpeq_epi8_mask(nls, w, qt) & ((q << 1) | prev_q);
        prev_q = q >> 63;
        uint64_t ca = sk_half_mask512(p, &ha, folded), cb = sk_half_mask512(p, &hb, folded);
        uint64_t odd = nls & ~joins; /* a header's newlines, or a framing the writer never writes */
        if (esc | ca | cb | odd) {
            if (esc || (odd && (strict || pf_odd_newlines(in, n, i, odd)))) return 1;
            for (; ca; ca &= ca - 1)
                if (sk_half_at(p + __builtin_ctzll(ca), A, folded)) return 1;
            for (; cb; cb &= cb - 1)
                if (sk_half_at(p + __builtin_ctzll(cb), B, folded)) return 1;
        }
        close_joins |= pf_block_joins(joins, i, apart, &last_join);
    }
    return pf_halves_tail(in, n, i, folded, A, B, apart, last_join, close_joins, strict);
}

AVX512_TARGET static int pf_halves512(const unsigned char *in, Py_ssize_t n, Py_ssize_t m, int folded,
                                      const sk_half *A, const sk_half *B, int strict) {
    return folded ? pf_halves512_impl(in, n, m, 1, A, B, strict) : pf_halves512_impl(in, n, m, 0, A, B, strict);
}

/* pf_halves_impl compiled for each case (no fold to OR in where there is none), with
 * AVX-512BW where the CPU has it. ``strict``: in[0:n] is one message's fragment lines, to be
 * framed as the writer frames them: a newline that is no join (but the last byte) is a 1, the
 * search decodes it (whitespace about a newline, which the parser's JSON accepts; a blank
 * line; text after the last message) and says what it is; else only an odd framing
 * (pf_odd_newline) is, a header's newlines are not. */
AVX_TARGET static int pf_halves(const unsigned char *in, Py_ssize_t n, Py_ssize_t m, int folded, const sk_half *A,
                                const sk_half *B, int strict) {
    if (use_avx512()) return pf_halves512(in, n, m, folded, A, B, strict);
    return folded ? pf_halves_impl(in, n, m, 1, A, B, strict) : pf_halves_impl(in, n, m, 0, A, B, strict);
}
#endif

#ifdef HAVE_SIMD_STATS
/* A mapped file shortened while it is read raises SIGBUS at the first page past its new
 * end: the guarded read is then abandoned (the progress it made so far stands) instead of
 * the process dying. The handler is put on top before each guarded read, with the GIL held
 * (a handler set since, as Python's faulthandler enabled later, would take our faults for
 * fatal errors); a SIGBUS outside a guarded read gets the default action, the process's
 * death, as without us (chaining to a handler that may hand the signal back could loop).
 * The jump buffer is initial-exec TLS: no lazy allocation when the handler reads it. */
static __thread sigjmp_buf *sk_jmp __attribute__((tls_model("initial-exec")));

static void sk_on_bus(int sig, siginfo_t *info, void *uc) {
    sigjmp_buf *jb = sk_jmp;
    (void)info, (void)uc;
    if (jb != NULL) siglongjmp(*jb, 1);
    signal(SIGBUS, SIG_DFL);
    raise(sig);
}

static void sk_install_bus(void) {
    struct sigaction cur, sa;
    if (sigaction(SIGBUS, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == sk_on_bus) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sk_on_bus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}
#endif

/* Reads fd[pos : pos + n] into buf; 0 when every byte came. */
static int pf_read(int fd, unsigned char *buf, Py_ssize_t n, Py_ssize_t pos) {
    Py_ssize_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, (size_t)(n - got), (off_t)(pos + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += r;
    }
    return 0;
}

/* pf_one for a file bigger than a chunk, read a chunk at a time (memory stays a chunk, not
 * the file): a tool output's chunks overlap by the needle's length less one; a transcript's
 * are cut just after a join (pf_join_plain's last one), and the joined text keeps its last
 * needle-length-less-one bytes for the next. A line longer than a chunk: not ruled out. */
static unsigned char pf_chunked(pf_job *j, int fd, Py_ssize_t size, unsigned char kind, pf_bufs *b) {
    Py_ssize_t chunk = j->chunk;
    const unsigned char *needle = kind == 0 ? j->plain : j->esc;
    Py_ssize_t m = kind == 0 ? j->plain_len : j->esc_len, overlap = m > 0 ? m - 1 : 0;
    if (pf_reserve(&b->buf, &b->cap, (size_t)(chunk + overlap)) < 0) return 1;
    if (kind == 1) {
        unsigned char last;
        if (pf_read(fd, &last, 1, size - 1) < 0 || last != '\n') return 1; /* cut off mid-write */
        if (pf_reserve(&b->joined, &b->jcap, (size_t)(overlap + chunk + PF_MARGIN)) < 0) return 1;
    }
    Py_ssize_t pos = 0, keep = 0;
    while (pos < size) {
        Py_ssize_t want = size - pos < chunk ? size - pos : chunk;
        int final = pos + want >= size;
        if (kind == 0) {
            if (pf_read(fd, b->buf + keep, want, pos) < 0) return 1; /* changed under us */
            Py_ssize_t n = keep + want;
            if (find_at(b->buf, n, needle, m, 0, j->folded) >= 0) return 1;
            keep = n < overlap ? n : overlap;
            memmove(b->buf, b->buf + n - keep, (size_t)keep);
            pos += want;
            continue;
        }
        if (pf_read(fd, b->buf, want, pos) < 0) return 1;
        Py_ssize_t last_seg = 0, last_o = 0;
        Py_ssize_t n = pf_join_plain(b->buf, want, b->joined + keep, &last_seg, &last_o);
        if (n < 0) return 1; /* an escape: the needle's escaped form may be spelt otherwise */
        if (final) return find_at(b->joined, keep + n, needle, m, 0, j->folded) >= 0;
        if (last_seg == 0) return 1; /* no join in a whole chunk: not checked */
        Py_ssize_t total = keep + last_o;
        if (find_at(b->joined, total, needle, m, 0, j->folded) >= 0) return 1;
        keep = total < overlap ? total : overlap;
        memmove(b->joined, b->joined + total - keep, (size_t)keep);
        pos += last_seg;
    }
    return 0;
}

#define PF_WHOLE (4 << 20) /* per thread: a buffer this big, and a join buffer where the halves cannot tell */
#define PF_MAP_ABOVE (256 << 10) /* see pf_one */

#ifdef HAVE_SIMD_STATS
/* pf_halves of a whole transcript mapped (the page cache read in place, no copy), a SIGBUS
 * (the file shortened meanwhile) a maybe; 2 when it cannot tell or the file cannot be mapped. */
static int pf_mapped(pf_job *j, int fd, Py_ssize_t size) {
    unsigned char *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) return 2;
    const sk_half *hv = (const sk_half *)j->halves;
    volatile int v = 1;
    sigjmp_buf jb;
    if (sigsetjmp(jb, 1) == 0) {
        sk_jmp = &jb;
        v = map[size - 1] != '\n' ? 1 : pf_halves(map, size, j->esc_len, j->folded, &hv[0], &hv[1], 0);
    }
    sk_jmp = NULL;
    munmap(map, (size_t)size);
    return v;
}
#endif

/* The rule a big transcript goes to the search unchecked by: most of the big ones checked
 * so far held the needle (the search's skip would read it again at half the check's pace). */
static inline int pf_most_held(pf_job *j) {
    Py_ssize_t checked = __atomic_load_n(&j->mapped, __ATOMIC_RELAXED);
    return checked >= 1 && 2 * __atomic_load_n(&j->mapped_out, __ATOMIC_RELAXED) < checked;
}

/* The first big transcript checked by every thread at once: the check whose verdict decides
 * whether the rest are checked (the rule in pf_one) takes a file's time over the threads, not a
 * file's (the first two, each checked by one thread, took 20-30 ms of a 0.25 s search of 1 GB
 * where every file held the needle; shared, 10-15). Only the first: after it, where most are
 * ruled out, each is checked by one thread as before (sharing every file was slower: a thread
 * that ends its part waits for the others, and the two CPUs here run at different speeds).
 *
 * Its mapping is cut at joins (pf_cuts) into PF_PARTS parts taken by the threads as they come
 * free (more parts than threads: a slower thread takes fewer), each pf_halves'd apart
 * (pf_part): a part begins with the closing quote of the join before it (that join is then
 * one, and the next measured from it) and ends past the opening quote after its last join.
 * The escaped needle holds no raw newline, so a half never spans a join: every place a half
 * may start is looked at with all its bytes in one part, and every two successive joins are
 * measured in one part; the parts' verdicts joined (a 1 first, then a 2) are the file's. */
#define PF_CUT_REACH (64 << 10) /* bytes looked through for a join to cut at */

#ifdef HAVE_SIMD_STATS
/* Up to ``parts`` parts of the mapped transcript (cut[0] = 0, cut[n] = size; between, joins):
 * the first newline from each even share on with a quote each side and no backslash before
 * the first (a quote that may be escaped is no sure join). Their count. */
static int pf_cuts(const unsigned char *map, Py_ssize_t size, int parts, Py_ssize_t *cut) {
    int n = 0;
    cut[0] = 0;
    for (int i = 1; i < parts; i++) {
        Py_ssize_t at = size / parts * i, stop;
        if (at < cut[n] + 3) at = cut[n] + 3;
        stop = at + PF_CUT_REACH < size - 2 ? at + PF_CUT_REACH : size - 2;
        while (at < stop) {
            const unsigned char *q = memchr(map + at, '\n', (size_t)(stop - at));
            if (q == NULL) break;
            Py_ssize_t c = q - map;
            if (map[c - 1] == '"' && map[c + 1] == '"' && map[c - 2] != '\\') {
                cut[++n] = c;
                break;
            }
            at = c + 1;
        }
    }
    cut[++n] = size;
    return n;
}

/* pf_halves of the shared check's part i, guarded (a SIGBUS, the file shortened: a 1). */
static int pf_part(pf_job *j, int i) {
    const sk_half *hv = (const sk_half *)j->halves;
    Py_ssize_t from = j->sh_cut[i] - (i > 0), to = i + 1 < j->sh_parts ? j->sh_cut[i + 1] + 2 : j->sh_cut[i + 1];
    volatile int v = 1;
    sigjmp_buf jb;
    if (sigsetjmp(jb, 1) == 0) {
        sk_jmp = &jb;
        v = pf_halves(j->sh_map + from, to - from, j->esc_len, j->folded, &hv[0], &hv[1], 0);
    }
    sk_jmp = NULL;
    return v;
}

/* Takes a part of the shared check under way, if one is left, and checks it: 1 when it did. */
static int pf_help(pf_job *j) {
    if (__atomic_load_n(&j->sh_map, __ATOMIC_ACQUIRE) == NULL) return 0; /* none under way: no lock taken */
    pthread_mutex_lock(&j->mu);
    if (j->sh_map == NULL || j->sh_next >= j->sh_parts) {
        pthread_mutex_unlock(&j->mu);
        return 0;
    }
    int i = j->sh_next++;
    pthread_mutex_unlock(&j->mu); /* the owner unmaps only once every part is done */
    int v = pf_part(j, i);
    pthread_mutex_lock(&j->mu);
    if (v == 1 || (v == 2 && j->sh_v == 0)) j->sh_v = v;
    if (++j->sh_done == j->sh_parts) pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return 1;
}

/* With ``mu`` held: takes parts of the shared check under way (the lock let go meanwhile) and
 * waits until none is under way; returns with ``mu`` held. */
static void pf_until_idle(pf_job *j) {
    while (j->sh_busy) {
        if (j->sh_map != NULL && j->sh_next < j->sh_parts) {
            pthread_mutex_unlock(&j->mu);
            pf_help(j);
            pthread_mutex_lock(&j->mu);
        } else {
            pthread_cond_wait(&j->cv, &j->mu);
        }
    }
}

/* The shared check of a big transcript (``big``: over PF_WHOLE, the kind the rule counts): once
 * the one under way is done (its parts taken meanwhile), its verdict counts; then the rule,
 * then this one's parts published, taken as the others are and waited for. 2 as pf_mapped. */
static int pf_shared(pf_job *j, int fd, Py_ssize_t size, int big) {
    pthread_mutex_lock(&j->mu);
    pf_until_idle(j);
    if (__atomic_load_n(&j->mapped, __ATOMIC_RELAXED) >= 1) {
        pthread_mutex_unlock(&j->mu);
        if (big && pf_most_held(j)) return 1; /* as pf_one's rule */
        /* Most of those checked were ruled out: the rest are checked a thread each, as they
         * come (shared, a thread that ends its part first waits for the other's). */
        return 3;
    }
    j->sh_busy = 1;
    pthread_mutex_unlock(&j->mu);
    int v = 2;
    unsigned char *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
        Py_ssize_t cut[PF_PARTS + 1];
        volatile int parts = 0, last = 0;
        sigjmp_buf jb;
        if (sigsetjmp(jb, 1) == 0) {
            sk_jmp = &jb;
            last = map[size - 1];
            parts = pf_cuts(map, size, PF_PARTS, cut); /* more parts than threads: one a little slower
                                                         * takes fewer (the two CPUs here differ) */
        }
        sk_jmp = NULL;
        v = 1; /* cut off mid-write, or shortened meanwhile */
        if (last == '\n' && parts > 0) {
            pthread_mutex_lock(&j->mu);
            memcpy(j->sh_cut, cut, sizeof(Py_ssize_t) * (size_t)(parts + 1));
            j->sh_parts = parts, j->sh_next = 0, j->sh_done = 0, j->sh_v = 0;
            __atomic_store_n(&j->sh_map, map, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&j->cv); /* those waiting: a part for each */
            pthread_mutex_unlock(&j->mu);
            while (pf_help(j)) {
            }
            pthread_mutex_lock(&j->mu);
            while (j->sh_done < j->sh_parts) pthread_cond_wait(&j->cv, &j->mu);
            v = j->sh_v;
            __atomic_store_n(&j->sh_map, NULL, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&j->mu);
        }
        munmap(map, (size_t)size);
    }
    pthread_mutex_lock(&j->mu);
    if (big && v != 2) {
        __atomic_fetch_add(&j->mapped_out, v == 0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&j->mapped, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&j->sh_checked, 1, __ATOMIC_RELAXED);
    }
    j->sh_busy = 0;
    pthread_cond_broadcast(&j->cv); /* those waiting for its verdict */
    pthread_mutex_unlock(&j->mu);
    return v;
}
#endif

/* ``path`` opened as storage.local.open_regular opens it (never following a symlink, never
 * blocking on a FIFO) and its ``fstat``: a descriptor of a regular file, else -1. */
static int open_regular_fd(const char *path, struct stat *st) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return -1;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return -1;
    }
    return fd;
}

static unsigned char pf_one(pf_job *j, Py_ssize_t k, pf_bufs *b) {
    unsigned char kind = j->kinds[k];
    if (kind > 1) return 1;
    struct stat st;
    int fd = open_regular_fd(j->paths[k], &st);
    if (fd < 0) return 2;
    Py_ssize_t size = (Py_ssize_t)st.st_size;
    if (size > j->max_size || (kind == 1 && size > j->transcript_max)) {
        close(fd);
        return 1;
    }
    if (size == 0) {
        close(fd);
        return kind == 1 ? 1 : 0;
    }
    /* A transcript checked by its halves is mapped above PF_MAP_ABOVE (the page cache read in
     * place: below, a mapping and its unmapping, which stops every thread of the process, cost
     * more than a copy), else read whole up to PF_WHOLE (no join to cut between chunks). */
    int whole = j->halves != NULL && kind == 1 && size <= PF_WHOLE;
#ifdef HAVE_SIMD_STATS
    int shared = 3;
    if (j->halves != NULL && kind == 1 && size > PF_MAP_ABOVE && j->threads > 1 && size > j->share_above &&
        __atomic_load_n(&j->mapped, __ATOMIC_RELAXED) == 0) {
        shared = pf_shared(j, fd, size, size > PF_WHOLE);
        if (shared != 2 && shared != 3) {
            close(fd);
            return (unsigned char)shared;
        }
    }
    if (shared == 3 && j->halves != NULL && kind == 1 && size > PF_MAP_ABOVE) {
        /* A big transcript (over PF_WHOLE) that holds the needle is read twice, here and by
         * the search's skip (a slower pass): once two are begun and most of those checked
         * held it, the rest go to the search unchecked (as the first batch's DENSE in
         * search/root.py). Begun, not checked: on two threads the first two are checked at
         * once, and the one done first took a third before the other was done; or the first
         * one checked by every thread at once (pf_shared, ``sh_checked``). */
        int big = size > PF_WHOLE;
        if (big) {
            if ((__atomic_load_n(&j->mapped_begun, __ATOMIC_RELAXED) >= 2 || __atomic_load_n(&j->sh_checked, __ATOMIC_RELAXED)) &&
                pf_most_held(j)) {
                close(fd);
                return 1;
            }
            __atomic_fetch_add(&j->mapped_begun, 1, __ATOMIC_RELAXED);
        }
        int v = pf_mapped(j, fd, size);
        if (v != 2) {
            close(fd);
            if (big) {
                __atomic_fetch_add(&j->mapped_out, v == 0, __ATOMIC_RELAXED);
                __atomic_fetch_add(&j->mapped, 1, __ATOMIC_RELAXED);
            }
            return (unsigned char)v;
        }
    }
#endif
    if (size > j->chunk && !whole) {
        unsigned char v = pf_chunked(j, fd, size, kind, b);
        close(fd);
        return v;
    }
    if (pf_reserve(&b->buf, &b->cap, (size_t)size) < 0) {
        close(fd);
        return 1;
    }
    Py_ssize_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, b->buf + got, (size_t)(size - got), (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += r;
    }
    close(fd);
    if (got != size) return 1; /* changed under us: the search says what it finds */
    const unsigned char *h = b->buf;
    if (kind == 0) return find_at(h, size, j->plain, j->plain_len, 0, j->folded) >= 0;
    if (h[size - 1] != '\n') return 1; /* cut off mid-write */
#ifdef HAVE_SIMD_STATS
    if (j->halves != NULL) {
        const sk_half *hv = (const sk_half *)j->halves;
        int v = pf_halves(h, size, j->esc_len, j->folded, &hv[0], &hv[1], 0);
        if (v != 2) return (unsigned char)v;
    }
#endif
    if (pf_reserve(&b->joined, &b->jcap, (size_t)size + PF_MARGIN) < 0) return 1;
    Py_ssize_t last_seg, last_o;
    Py_ssize_t n = pf_join_plain(h, size, b->joined, &last_seg, &last_o);
    if (n < 0) return 1; /* an escape: the needle's escaped form may be spelt otherwise */
    return find_at(b->joined, n, j->esc, j->esc_len, 0, j->folded) >= 0;
}

static void *pf_worker(void *arg) {
    pf_job *j = (pf_job *)arg;
    pf_bufs b = {NULL, NULL, 0, 0};
    for (;;) {
#ifdef HAVE_SIMD_STATS
        while (j->threads > 1 && pf_help(j)) {
        } /* a part of a shared check first: another thread waits for it */
#endif
        Py_ssize_t k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (k >= j->count) break;
        j->out[k] = pf_one(j, k, &b);
    }
#ifdef HAVE_SIMD_STATS
    /* No file left to take: the parts of the shared checks still to come (the last files') */
    if (j->threads > 1) {
        pthread_mutex_lock(&j->mu);
        pf_until_idle(j);
        pthread_mutex_unlock(&j->mu);
    }
#endif
    free(b.buf);
    free(b.joined);
    return NULL;
}

/* The bytes paths of ``tuple`` as C strings (held by the tuple: valid while it is, the GIL
 * released too), a PyMem array; NULL with an exception set (``name`` says whose). */
static const char **paths_of(PyObject *tuple, const char *name) {
    Py_ssize_t count = PyTuple_GET_SIZE(tuple);
    const char **paths = PyMem_Malloc(sizeof(char *) * (size_t)(count ? count : 1));
    if (paths == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *p = PyTuple_GET_ITEM(tuple, i);
        if (!PyBytes_Check(p)) {
            PyErr_Format(PyExc_TypeError, "%s: paths must be bytes", name);
            PyMem_Free(paths);
            return NULL;
        }
        if (strlen(PyBytes_AS_STRING(p)) != (size_t)PyBytes_GET_SIZE(p)) { /* as os.open: never a shorter path */
            PyErr_Format(PyExc_ValueError, "%s: embedded null byte", name);
            PyMem_Free(paths);
            return NULL;
        }
        paths[i] = PyBytes_AS_STRING(p);
    }
    return paths;
}

static PyObject *native_prefilter(PyObject *self, PyObject *args) {
    PyObject *seq;
    Py_buffer kinds, plain, esc;
    int folded, threads;
    Py_ssize_t max_size, chunk = 8 << 20, transcript_max = -1, share_above = PF_WHOLE;
    if (!PyArg_ParseTuple(args, "Oy*y*y*pni|nnn", &seq, &kinds, &plain, &esc, &folded, &max_size, &threads, &chunk,
                          &transcript_max, &share_above))
        return NULL;
    if (transcript_max < 0) transcript_max = max_size;
    if (chunk < 64) chunk = 64;
    PyObject *res = NULL, *tuple = PySequence_Tuple(seq); /* holds every path while the GIL is released */
    const char **paths = NULL;
    if (tuple == NULL) goto done;
    Py_ssize_t count = PyTuple_GET_SIZE(tuple);
    if (kinds.len != count) {
        PyErr_SetString(PyExc_ValueError, "prefilter: one kind per path");
        goto done;
    }
    paths = paths_of(tuple, "prefilter");
    if (paths == NULL) goto done;
    res = PyBytes_FromStringAndSize(NULL, count);
    if (res == NULL) goto done;
    pf_job job = {paths, (const unsigned char *)kinds.buf, count, (const unsigned char *)plain.buf,
                  (const unsigned char *)esc.buf, plain.len, esc.len, folded, max_size, chunk,
                  transcript_max, (unsigned char *)PyBytes_AS_STRING(res), 0, NULL, 0, 0, 0};
    job.share_above = share_above;
    pthread_mutex_init(&job.mu, NULL);
    pthread_cond_init(&job.cv, NULL);
#ifdef HAVE_SIMD_STATS
    /* the halves where they are selective and fragment lines long enough */
    sk_half halves[2];
    if (use_simd() && esc.len >= HALVES_MIN && esc.len <= HALVES_MAX) {
        Py_ssize_t h = (esc.len + 1) / 2;
        sk_half_init(&halves[0], (const unsigned char *)esc.buf, h, 0);
        sk_half_init(&halves[1], (const unsigned char *)esc.buf + esc.len - h, h, esc.len - h);
        job.halves = halves;
        sk_install_bus();
    }
#endif
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    /* As many threads as files, but where a big transcript's check may be shared: one file is
     * then work for every thread (up to its PF_PARTS parts). */
    Py_ssize_t most = job.halves == NULL ? count : (count > 0 && count < PF_PARTS ? PF_PARTS : count);
    if (threads > most) threads = most > 0 ? (int)most : 1;
    job.threads = threads;
    Py_BEGIN_ALLOW_THREADS
    pthread_t tids[64];
    int started = 0;
    for (int t = 1; t < threads; t++)
        if (pthread_create(&tids[started], NULL, pf_worker, &job) == 0) started++;
    pf_worker(&job);
    for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
    Py_END_ALLOW_THREADS
    pthread_cond_destroy(&job.cv);
    pthread_mutex_destroy(&job.mu);
done:
    PyMem_Free(paths);
    Py_XDECREF(tuple);
    PyBuffer_Release(&kinds);
    PyBuffer_Release(&plain);
    PyBuffer_Release(&esc);
    return res;
}

/* read_files(paths, max_each, out) -> [(offset, size, code points)]: local files read whole
 * into ``out`` one after another, for a search that reads most files (a dense pattern): in
 * Python, opening, sizing, reading, counting and closing each was half of a small tool
 * output's search. Each path (bytes) is opened as storage.local.open_regular opens it
 * (O_NOFOLLOW, non-blocking, a regular file only) and, where it is at most ``max_each``
 * bytes, read whole at ``offset`` (after the one before) and counted as UTF-8. Stops before
 * the first file that no longer fits: the list holds the paths handled, in order. Code
 * points: -1 where the bytes are not valid UTF-8, RF_UNREAD (-2) where the file was not read
 * (it could not be opened or read, is not a regular file, is too big, or came short): the
 * caller searches those as it searches any other file, which says why. */
#define RF_UNREAD (-2)
typedef struct {
    Py_ssize_t offset, size;
    long long cps;
} rf_entry;

static PyObject *native_read_files(PyObject *self, PyObject *args) {
    PyObject *seq;
    Py_ssize_t max_each;
    Py_buffer out;
    if (!PyArg_ParseTuple(args, "Onw*", &seq, &max_each, &out)) return NULL;
    PyObject *res = NULL, *tuple = PySequence_Tuple(seq); /* holds every path while the GIL is released */
    const char **paths = NULL;
    rf_entry *got = NULL;
    Py_ssize_t count = 0, handled = 0;
    if (tuple == NULL) goto done;
    count = PyTuple_GET_SIZE(tuple);
    paths = paths_of(tuple, "read_files");
    if (paths == NULL) goto done;
    got = PyMem_Malloc(sizeof(rf_entry) * (size_t)(count ? count : 1));
    if (got == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *buf = (unsigned char *)out.buf;
    Py_ssize_t cap = out.len, at = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; handled < count; handled++) {
        rf_entry *e = &got[handled];
        e->offset = at;
        e->size = 0;
        e->cps = RF_UNREAD;
        struct stat st;
        int fd = open_regular_fd(paths[handled], &st);
        if (fd < 0) continue;
        if (st.st_size > max_each) {
            close(fd);
            continue;
        }
        Py_ssize_t size = (Py_ssize_t)st.st_size;
        if (size > cap - at) {
            close(fd);
            break; /* not handled: the caller asks again once this buffer's files are searched */
        }
        if (pf_read(fd, buf + at, size, 0) == 0) {
            long long cp = 0, ub = 0;
            e->size = size;
            e->cps = count_run(buf + at, size, 0, &cp, &ub, NULL) < 0 ? -1 : cp;
            at += size;
        }
        close(fd);
    }
    Py_END_ALLOW_THREADS
    res = PyList_New(handled);
    for (Py_ssize_t i = 0; res != NULL && i < handled; i++) {
        PyObject *item = Py_BuildValue("nnL", got[i].offset, got[i].size, got[i].cps);
        if (item == NULL) Py_CLEAR(res);
        else PyList_SET_ITEM(res, i, item);
    }
done:
    PyMem_Free(paths);
    PyMem_Free(got);
    Py_XDECREF(tuple);
    PyBuffer_Release(&out);
    return res;
}

/* halves(buf, start, end, needle, folded) -> int: pf_halves over buf[start:end], one
 * transcript message's fragment lines (from its first line's opening quote to its last
 * line's newline), for the escaped ``needle`` (lowered where ``folded``): 0 when its joined
 * text cannot hold it (the search need not decode the message), 1 when it may, 2 when two
 * joins are too close to tell, -1 where the halves do not apply (no AVX2, a needle outside
 * HALVES_MIN-HALVES_MAX bytes). The prefilter's rule, per message instead of per file, and
 * only over lines framed as the writer frames them (pf_halves' ``strict``; else 1). */
static PyObject *native_halves(PyObject *self, PyObject *args) {
    Py_buffer view, pin;
    int folded;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nny*p", &view, &start, &end, &pin, &folded)) return NULL;
    clamp_range(view.len, &start, &end);
    int v = -1;
#ifdef HAVE_SIMD_STATS
    if (use_simd() && pin.len >= HALVES_MIN && pin.len <= HALVES_MAX) {
        sk_half halves[2];
        Py_ssize_t h = (pin.len + 1) / 2;
        sk_half_init(&halves[0], (const unsigned char *)pin.buf, h, 0);
        sk_half_init(&halves[1], (const unsigned char *)pin.buf + pin.len - h, h, pin.len - h);
        const unsigned char *p = (const unsigned char *)view.buf + start;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t n = end - start;
        /* a message's lines: a quote first, a quote and a newline last, every newline between
         * a join (pf_halves' strict rule) */
        v = n >= 3 && p[0] == '"' && p[n - 1] == '\n' && p[n - 2] == '"'
                ? pf_halves(p, n, pin.len, folded, &halves[0], &halves[1], 1)
                : 1;
        Py_END_ALLOW_THREADS
    }
#endif
    PyBuffer_Release(&view);
    PyBuffer_Release(&pin);
    return PyLong_FromLong(v);
}

/* ---------------------------------------------------------------------------------
 * skip_lines(fd, pos, end, needle, folded, keep) -> (new_pos, code_points, utf8_bytes)
 *
 * How far a search of one message may jump ahead, in one pass over the file: from the
 * fragment line starting at ``pos`` (its opening quote; the byte before it a newline), over
 * whole lines that are plain strict JSON strings as the writer emits them (escapes only
 * \" \\ \b \f \n \r \t; no raw control but the lines' newlines; valid UTF-8), joined as
 * the search joins them (every '"\n"' removed), and in which ``needle`` (escaped, as
 * js_json_string spells it; ``folded``: lowercase, found ignoring ASCII case) starts
 * nowhere. ``new_pos`` is a line start at least ``keep`` joined bytes before the first
 * place the needle may start (or before whatever this scan does not take: a blank line,
 * a \u or \/ escape, anything irregular, a line longer than a read, the end of the file
 * or ``end``); the counts are the decoded text's between ``pos`` and ``new_pos`` (what
 * measure_escaped of the deframed lines gives). ``new_pos == pos`` (and 0, 0): nothing
 * to skip, the search reads on as before. Without AVX2 it never skips.
 *
 * Each 32-byte block is checked and counted with masks: the escaped characters by the
 * carry trick of simdjson (a backslash run of odd length escapes the byte after it), the
 * quotes that are not escaped exactly where a newline is next to them, UTF-8 by the
 * lookup of utf8_errors above; the code points are the bytes less continuation bytes,
 * escapes (two bytes, one code point) and three framing bytes a line. The joined text is
 * stored as pf_join_plain stores it and searched every few KiB while it is in cache; for an
 * escaped needle of HALVES_MIN-HALVES_MAX bytes, its halves are looked for in the raw bytes
 * of each block instead (sk_half: nothing stored), until a line too short for them. The
 * file is mapped where it can be (read in place: a pread copies every byte), a SIGBUS from
 * its shortening guarded (sk_on_bus).
 */
#define SK_FIRST (32 << 10)
#define SK_MAX_READ (512 << 10)
#define SK_SEARCH_EVERY (16 << 10)
#define SK_RING 1024
/* A line start (sk_point) is counted and kept about every this many bytes: counting every
 * block's last one was a fifth of the fused read's work; a skip now stops up to this much
 * before the newest line start it could, and the window search reads that again. */
#define SK_POINT_EVERY 1024

typedef struct {
    Py_ssize_t pos;  /* a line start (its opening quote), file offset */
    long long cp, ub; /* the text's counts from the scan's start to it */
    Py_ssize_t joined; /* joined bytes from the read's start to it (excluding its quote) */
} sk_point;

#ifdef HAVE_SIMD_STATS
/* Bit i set where v[i] is one of " \ b f n r t: the low nibble's row set (bit 0: row 2,
 * 1: row 5, 2: row 6, 3: row 7) meets the high nibble's row. */
#define SK_ESC_LO TABLE(0, 0, 1 | 4 | 8, 0, 8, 0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 0)
#define SK_ESC_HI TABLE(0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0)
AVX_TARGET static inline uint64_t sk_escape_class(__m256i v, __m256i lo, __m256i hi, __m256i nib) {
    __m256i c = _mm256_and_si256(_mm256_shuffle_epi8(lo, _mm256_and_si256(v, nib)),
                                 _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)));
    return (uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, _mm256_setzero_si256()));
}

/* What sk_read's scalar steps carry from block to block (plain C, no target: inlined into
 * both the AVX2 and the AVX-512BW loop, which differ only in how a block's masks are made). */
typedef struct {
    const unsigned char *in, *needle;
    Py_ssize_t base, m;
    int folded;
    unsigned char *out;
    sk_point *ring;
    Py_ssize_t nring; /* line starts appended to ring (the loop writes it back to its caller's) */
    long long cp0, ub0;
    const sk_half *A, *B;
    uint64_t prev_escaped, prev_nl; /* the block before's last two bytes are newlines (bits 0, 1: 62, 63) */
    long long ncont, nesc, nnl;     /* over in[0:i] */
    Py_ssize_t seg, o, done_search;
    Py_ssize_t due; /* the next line start is kept from this block on */
} sk_state;

/* A block's masks (bit k: in[i + k]), made by one loop or the other: its newlines, quotes,
 * backslashes, continuation bytes, the bytes one of " \ b f n r t (sk_escape_class), where
 * each half may start (fused only); ``wrong``: a raw control other than a newline, or
 * invalid UTF-8 (with the block before). */
typedef struct {
    uint64_t nl, q, bs, cont, esc_class, ca, cb;
    int wrong;
} sk_masks;

/* One block at i of sk_read (see it): 0 to go on, 1 at a candidate (``*found_at`` and
 * ``*searched`` set), -1 at an irregular block, -2 at a line too short for the fused search,
 * 3 where a half may start and ``verify`` is 0 (nothing changed: the caller verifies out of
 * its loop, asking again with ``verify`` 1). Branch-free but for the newlines' stores: which
 * blocks have an escape, a newline or a byte >= 0x80 is no pattern a branch predictor learns
 * (about one each a line). */
static inline __attribute__((always_inline)) int sk_block(sk_state *st, Py_ssize_t i, const sk_masks *k,
                                                          Py_ssize_t *found_at, Py_ssize_t *searched,
                                                          const int fused, const int verify) {
    const unsigned char *in = st->in, *p = in + i;
    const uint64_t nl = k->nl;
    /* simdjson's find_escaped: the bytes a backslash escapes (a run of odd length) */
    const uint64_t even = 0x5555555555555555ULL;
    uint64_t b = k->bs & ~st->prev_escaped;
    uint64_t follows = (b << 1) | st->prev_escaped;
    unsigned long long seq_even;
    uint64_t next_escaped = __builtin_uaddll_overflow(b & ~even & ~follows, b, &seq_even);
    uint64_t escaped = (even ^ (seq_even << 1)) & follows;
    /* the quotes not escaped are exactly those next to a newline: every newline joins
     * two lines (a blank line, a quote or newline out of place: irregular); an escape
     * stands for one of " \ b f n r t (a nibble lookup: rows 2, 5, 6, 7 of ASCII) */
    uint64_t around = (nl << 1) | (nl >> 1) | (st->prev_nl >> 1) | ((uint64_t)(p[64] == '\n') << 63);
    /* ... and no line is a lone quote (two newlines two apart: the one quote between them
     * would be both the line's quotes, and its length -1) */
    uint64_t lone = nl & ((nl << 2) | st->prev_nl);
    uint64_t bad = ((k->q & ~escaped) ^ around) | (escaped & ~k->esc_class) | lone;
    if (bad | (uint64_t)k->wrong) return -1;
    Py_ssize_t seg = st->seg, o = st->o;
    if (fused) {
        /* every line this block closes holds m - 1 bytes or more, else the join takes over
         * here: its newline m + 2 or more past the one before (seg - 2; every newline here is
         * a join), measured as the prefilter's halves measure theirs */
        Py_ssize_t last_join = seg - 2;
        if (pf_block_joins(nl, i, st->m + 2, &last_join)) return -2;
        uint64_t ca = k->ca, cb = k->cb;
        if (__builtin_expect((ca | cb) != 0, 0) && !verify) return 3;
        if (ca | cb) {
            /* A half starting in this block: the needle starts no sooner than the block's
             * first joined byte less the half's distance from the needle's start (before
             * the read: ``at`` below 0, still a candidate). */
            Py_ssize_t first = o + (i > seg ? i - seg : 0), at = 0;
            int candidate = 0;
            for (; cb && !candidate; cb &= cb - 1)
                if (sk_half_at(p + __builtin_ctzll(cb), st->B, st->folded)) candidate = 1, at = first - st->B->back;
            for (; ca && !candidate; ca &= ca - 1)
                if (sk_half_at(p + __builtin_ctzll(ca), st->A, st->folded)) candidate = 1, at = first;
            if (candidate) {
                *found_at = at > 0 ? at : 0;
                *searched = first;
                return 1;
            }
        }
    }
    st->prev_escaped = next_escaped;
    st->prev_nl = nl >> 62;
    /* the joined text (pf_join_plain's stores, 64 bytes at a time); fused: only where it goes */
    unsigned char *out = st->out;
    if (!fused) {
        for (uint64_t m_nl = nl; m_nl; m_nl &= m_nl - 1) {
            Py_ssize_t j = i + __builtin_ctzll(m_nl);
            Py_ssize_t from = seg > i ? seg : i;
            memcpy(out + o + (from - seg), in + from, 64);
            o += j - 1 - seg;
            seg = j + 2;
        }
        Py_ssize_t from = seg > i ? seg : i;
        memcpy(out + o + (from - seg), in + from, 64);
    } else {
        /* Nothing stored: where the last line begins and the joined bytes before it, without a
         * loop over the newlines (one a block or none, as no branch predictor learns). Each
         * newline puts three framing bytes between the raw and the joined offset, and the
         * first line's quote one: o == seg - 1 - 3 * newlines. */
        Py_ssize_t last_seg = i + (63 - __builtin_clzll(nl | 1)) + 2;
        long long newlines = st->nnl + __builtin_popcountll(nl);
        seg = nl ? last_seg : seg;
        o = nl ? last_seg - 1 - 3 * newlines : o;
    }
    if (nl && i >= st->due) {
        st->due = i + SK_POINT_EVERY;
        /* the block's last line start, counted (a code point is a byte that is not a
         * continuation byte, an escape two bytes, a line three framing bytes): the first
         * block with a newline SK_POINT_EVERY bytes after the last one kept */
        int last = 63 - __builtin_clzll(nl | 1);
        uint64_t pm = last == 63 ? ~0ULL : (1ULL << (last + 1)) - 1;
        long long r = i + last + 1, e = st->nesc + __builtin_popcountll(escaped & pm),
                  l = st->nnl + __builtin_popcountll(nl & pm), c = st->ncont + __builtin_popcountll(k->cont & pm);
        sk_point pt = {st->base + r, st->cp0 + r - c - e - 3 * l, st->ub0 + r - e - 3 * l, o};
        st->ring[st->nring % SK_RING] = pt;
        st->nring++;
    }
    st->ncont += __builtin_popcountll(k->cont);
    st->nesc += __builtin_popcountll(escaped);
    st->nnl += __builtin_popcountll(nl);
    st->seg = seg, st->o = o;
    if (fused) return 0;
    /* The joined text so far ends before a closing quote: where the block's last byte
     * is one (a newline comes next), it is not text. Counted as text, it made the
     * searched end one byte late, and a needle ending on the next line's first byte
     * could be skipped past. */
    Py_ssize_t taken = i + 64 - (p[64] == '\n');
    Py_ssize_t have = o + (taken > seg ? taken - seg : 0);
    if (have - st->done_search >= SK_SEARCH_EVERY) {
        Py_ssize_t m = st->m, from = st->done_search > m - 1 ? st->done_search - (m - 1) : 0;
        Py_ssize_t at = find_at(out, have, st->needle, m, from, st->folded);
        if (at >= 0) {
            *found_at = at;
            *searched = have;
            return 1;
        }
        st->done_search = have;
    }
    return 0;
}

/* sk_read's end, the blocks taken up to i: what is joined of them (an irregular one is
 * not), searched where the halves did not look; its verdict (see sk_read). */
static inline __attribute__((always_inline)) int sk_finish(sk_state *st, Py_ssize_t i, int bad_block,
                                                           Py_ssize_t *found_at, Py_ssize_t *searched,
                                                           const int fused) {
    Py_ssize_t taken = i - (st->in[i] == '\n'); /* in[i] is readable: i < avail */
    Py_ssize_t have = st->o + (taken > st->seg ? taken - st->seg : 0);
    *searched = have;
    if (fused) return bad_block; /* every half starting before i was looked at */
    Py_ssize_t m = st->m, from_s = st->done_search > m - 1 ? st->done_search - (m - 1) : 0;
    if (have > from_s) {
        Py_ssize_t at = find_at(st->out, have, st->needle, m, from_s, st->folded);
        if (at >= 0) {
            *found_at = at;
            return 1;
        }
    }
    return bad_block;
}

/* Whether the 64-byte block at p ends with a UTF-8 sequence it does not finish: a last byte from
 * 0xC0, a second-last from 0xE0, a third-last from 0xF0 (an all-ASCII block after it then cuts
 * the sequence short; one with a byte >= 0x80 is looked up with it, the block before). */
static inline int sk_ends_begun(const unsigned char *p) { return p[63] >= 0xC0 || p[62] >= 0xE0 || p[61] >= 0xF0; }

#define SK_STATE                                                                                          \
    /* the ring's count kept here (through the caller's pointer, every store to the ring might    \
     * change it, and each block loaded it again); the halves' bytes are the loop's own (sk_half256, \
     * sk_half512), the sk_half read only to verify a candidate */                                  \
    sk_state st = {in, needle, base, m, folded, out, ring, 0, cp0, ub0, A, B, 0, 2, 0, 0, 0, 1, 0, 0, 0}; \
    int bad_block = 0;                                                                                    \
    Py_ssize_t i = 0;                                                                                     \
    /* Bytes read past a block's start: the fused halves' loads up to 64 + h - 1 + 31 (63 with          \
     * AVX-512), the join's 64-byte store from a line starting at its end up to 65 + 63 (a mapping     \
     * ends where the file or the span does: nothing past ``avail`` is readable) */                    \
    const Py_ssize_t reach = 64 + 64;                                                                     \
    int incomplete = 0; /* the block before ends with a UTF-8 sequence begun (sk_ends_begun) */         \
    *found_at = -1;

/* The end of a block in either loop of sk_read, once its masks are made: where each half may
 * start (fused; ``half_mask`` is the loop's own), the block's scalar step, and its verdict (a
 * candidate returns; an irregular block, or a line too short for the halves, leaves the loop;
 * a half that may start here leaves it too, ``held``: see SK_VERIFY). */
#define SK_STEP(half_mask, a, b)                                 \
    k.ca = fused ? half_mask(p, a, folded) : 0;                 \
    k.cb = fused ? half_mask(p, b, folded) : 0;                 \
    int r = sk_block(&st, i, &k, found_at, searched, fused, 0); \
    if (r == 3) {                                               \
        held = 1;                                               \
        break;                                                  \
    }                                                           \
    SK_VERDICT(r)

/* A block's verdict (sk_block's) in either loop: a candidate returns, an irregular block or a
 * line too short for the halves leaves the loop. */
#define SK_VERDICT(r)      \
    if ((r) == 1) {        \
        *nring = st.nring; \
        return 1;          \
    }                      \
    if ((r) < 0) {         \
        bad_block = -(r);  \
        break;             \
    }

/* After either loop: a block whose halves may start in it (``held``) is verified here, out of
 * the loop, and the loop goes on after it where none does. In the loop, the verification's
 * memcmp (a call: it clobbers every vector register) made the compiler broadcast the loop's
 * constants again each block. */
#define SK_VERIFY                                               \
    if (!held) break;                                           \
    held = 0;                                                   \
    int r = sk_block(&st, i, &k, found_at, searched, fused, 1); \
    SK_VERDICT(r)                                               \
    i += 64;

/* One read's worth: in[-1] is readable (a newline), in[0] the opening quote of a line at file
 * offset ``base``, ``avail`` bytes from in. Appends a line start to the ring about every
 * SK_POINT_EVERY bytes passed; returns 1 when a candidate or something irregular ends the
 * scan (the ring then says where), 2 when a line too short for the fused search does, 0 when
 * the read ran out.
 * ``*searched``: the joined bytes searched (a needle wholly in them is found). ``fused``:
 * the halves A and B are looked for in the raw bytes (nothing is joined); else ``needle``
 * in the joined text, stored in ``out``. Each block's masks from two 32-byte halves. */
AVX_TARGET static inline __attribute__((always_inline)) int
sk_read_impl(const unsigned char *in, Py_ssize_t avail, Py_ssize_t base, const unsigned char *needle, Py_ssize_t m,
             int folded, unsigned char *out, sk_point *ring, Py_ssize_t *nring, long long cp0, long long ub0,
             Py_ssize_t *found_at, Py_ssize_t *searched, const int fused, const sk_half *A, const sk_half *B) {
    /* continuation bytes (0x80-0xBF) are those below 0xC0 as signed bytes: one compare */
    __m256i cont_above = _mm256_set1_epi8((char)0xC0);
    __m256i c1f = _mm256_set1_epi8(0x1F), newline = _mm256_set1_epi8('\n'), quote = _mm256_set1_epi8('"');
    __m256i bslash = _mm256_set1_epi8('\\'), esc_lo = SK_ESC_LO, esc_hi = SK_ESC_HI;
    utf8_consts256 u8 = utf8_consts256_make();
    /* opaque (see sk_read512_impl): else broadcast again every block */
    __asm__("" : "+x"(cont_above), "+x"(c1f), "+x"(newline), "+x"(quote), "+x"(bslash), "+x"(esc_lo), "+x"(esc_hi));
    __asm__("" : "+x"(u8.nib), "+x"(u8.hi), "+x"(u8.b1_high), "+x"(u8.b1_low), "+x"(u8.b2_high), "+x"(u8.e0),
                 "+x"(u8.f0));
    SK_STATE
    sk_half256 ha = sk_half256_of(fused ? A : NULL, folded), hb = sk_half256_of(fused ? B : NULL, folded);
    __asm__("" : "+x"(ha.c1), "+x"(ha.c2), "+x"(ha.c3), "+x"(ha.fold), "+x"(hb.c1), "+x"(hb.c2), "+x"(hb.c3));
    hb.fold = ha.fold;
    __m256i prev = _mm256_setzero_si256(); /* the UTF-8 check's block before (its upper half) */
    sk_masks k;
    int held = 0;
    for (;;) {
    for (; i + reach <= avail; i += 64) {
        _mm_prefetch((const char *)(in + i + SCAN_AHEAD), _MM_HINT_T0);
        const unsigned char *p = in + i;
        __m256i v0 = _mm256_loadu_si256((const __m256i *)p), v1 = _mm256_loadu_si256((const __m256i *)(p + 32));
        k.nl = sk_eqv64(v0, v1, newline), k.q = sk_eqv64(v0, v1, quote), k.bs = sk_eqv64(v0, v1, bslash);
        /* a raw control character other than a line's newline (unsigned v <= 0x1F) */
        __m256i c0 = _mm256_andnot_si256(_mm256_cmpeq_epi8(v0, newline), _mm256_cmpeq_epi8(_mm256_min_epu8(v0, c1f), v0));
        __m256i c1 = _mm256_andnot_si256(_mm256_cmpeq_epi8(v1, newline), _mm256_cmpeq_epi8(_mm256_min_epu8(v1, c1f), v1));
        __m256i wrong = _mm256_or_si256(c0, c1);
        /* UTF-8 (a block of ASCII only ends what the last began: its error is then that,
         * simdjson's is_incomplete, where the lookup costs a third of the block's work) */
        int wrong_utf8 = incomplete;
        if (_mm256_movemask_epi8(_mm256_or_si256(v0, v1)) != 0) {
            __m256i e = _mm256_or_si256(utf8_errors_with(v0, prev, &u8), utf8_errors_with(v1, v0, &u8));
            wrong_utf8 = !_mm256_testz_si256(e, e);
            incomplete = sk_ends_begun(p);
        }
        k.wrong = !_mm256_testz_si256(wrong, wrong) || wrong_utf8;
        k.cont = sk_below64(v0, v1, cont_above);
        k.esc_class = sk_escape_class(v0, esc_lo, esc_hi, u8.nib) | (sk_escape_class(v1, esc_lo, esc_hi, u8.nib) << 32);
        prev = v1;
        SK_STEP(sk_half_mask256, &ha, &hb)
    }
    SK_VERIFY
    }
    *nring = st.nring;
    return sk_finish(&st, i, bad_block, found_at, searched, fused);
}

/* The clean pass of the fused skip (sk_clean512): a chunk's blocks checked with no scalar step
 * a block but the joins' distances, what sk_block would find in each ORed together and looked
 * at once a chunk: nothing irregular, no half that may start, no two joins too close (nor two
 * in one block: lines of 64 code points never put two there, nor a lone quote line). Where
 * anything is, the chunk is taken again block by block (sk_block decides, exactly), and the
 * clean pass waits (clean_again) before it tries again. Without sk_block's
 * carried state: the byte before each is loaded with it (a quote is escaped where a backslash
 * precedes it, as no backslash is escaped here: the escapes' class leaves out the backslash,
 * so that two in a row are irregular), and the byte after it. UTF-8 and the continuation
 * bytes are a second pass over the chunk (in L1), only where it has a byte >= 0x80.
 * sk_block's scalar steps, spilled registers and branches were most of a block's time. */

typedef struct {
    __m512i nl, qt, bsl, c1f, cont_below, esc_lo, esc_hi;
} sk_clean_consts;

/* Clean chunks from ``i`` on (block-aligned, relative to st->in), while a chunk and its reach
 * fit in ``avail``: each one clean is taken into ``st`` (its counts, its last join, a line
 * start in the ring); returns where the first chunk that is not begins. */
AVX512_TARGET static inline __attribute__((always_inline)) Py_ssize_t
sk_clean512(sk_state *st, Py_ssize_t i, Py_ssize_t avail, Py_ssize_t reach, const sk_clean_consts *k,
            const utf8_consts512 *u8, const sk_half512 *ha, const sk_half512 *hb, const int folded) {
    const unsigned char *in = st->in;
    const Py_ssize_t apart = st->m + 2;
    /* the byte before i a backslash that does not escape it (a pair's second): not here */
    if (in[i - 1] == '\\' && !(st->prev_escaped & 1)) return i;
    while (i + CLEAN_CHUNK + reach <= avail) {
        const Py_ssize_t c0 = i, c1 = i + CLEAN_CHUNK;
        Py_ssize_t last_nl = st->seg - 2;
        uint64_t err = 0, close = 0;
        long long nc = 0, ne = 0, nn = 0;
        __m512i high = _mm512_setzero_si512();
        for (Py_ssize_t b = c0; b < c1; b += 64) {
            _mm_prefetch((const char *)(in + b + SCAN_AHEAD), _MM_HINT_T0);
            const unsigned char *p = in + b;
            __m512i v = _mm512_loadu_si512((const void *)p);
            __m512i vp = _mm512_loadu_si512((const void *)(p - 1)), vn = _mm512_loadu_si512((const void *)(p + 1));
            uint64_t nl = _mm512_cmpeq_epi8_mask(v, k->nl), q = _mm512_cmpeq_epi8_mask(v, k->qt);
            uint64_t bsp = _mm512_cmpeq_epi8_mask(vp, k->bsl);
            uint64_t nlp = _mm512_cmpeq_epi8_mask(vp, k->nl), nln = _mm512_cmpeq_epi8_mask(vn, k->nl);
            /* a raw control other than a newline: controls and newlines differ */
            uint64_t controls = _mm512_cmple_epu8_mask(v, k->c1f);
            /* a byte after a backslash that is not one of " b f n r t (a backslash too) */
            uint64_t bad_esc = _mm512_mask_testn_epi8_mask(
                bsp, _mm512_shuffle_epi8(k->esc_lo, _mm512_and_si512(v, u8->nib)),
                _mm512_shuffle_epi8(k->esc_hi, _mm512_and_si512(_mm512_srli_epi16(v, 4), u8->nib)));
            /* as sk_block's ``bad``: the quotes not escaped exactly those next to a newline */
            err |= (controls ^ nl) | bad_esc | ((q & ~bsp) ^ (nlp | nln));
            err |= sk_half_pair512(p, ha, folded) | sk_half_pair512(p, hb, folded);
            high = _mm512_or_si512(high, v);
            /* the joins' distances, as pf_block_joins (two in a block: the exact loop) */
            Py_ssize_t j = b + __builtin_ctzll(nl | (1ULL << 63));
            close |= (uint64_t)((nl != 0) & (j - last_nl < apart)) | (nl & (nl - 1));
            last_nl = nl ? b + 63 - __builtin_clzll(nl) : last_nl;
            ne += __builtin_popcountll(bsp), nn += __builtin_popcountll(nl);
        }
        if (err | close) return c0;
        /* (the block before's last bytes may begin a character this chunk's first must end) */
        __m512i prev = c0 >= 64 ? _mm512_loadu_si512((const void *)(in + c0 - 64)) : _mm512_setzero_si512();
        if (_mm512_movepi8_mask(_mm512_or_si512(high, prev))) {
            /* UTF-8, and the continuation bytes counted, a second pass over the chunk */
            utf8_count512 u = {prev, 0, 0};
            utf8_count512_run(&u, in, c0, c1, u8);
            if (u.wrong) return c0;
            nc = u.cont;
        }
        /* the chunk taken: sk_block's state at c1 */
        st->ncont += nc, st->nesc += ne, st->nnl += nn;
        if (last_nl != st->seg - 2) {
            st->seg = last_nl + 2;
            st->o = st->seg - 1 - 3 * st->nnl;
            /* its last line start kept, counted: the counts less those of the bytes after it
             * (no newline there; its escapes and continuation bytes counted again) */
            Py_ssize_t r = last_nl + 1;
            long long tc = 0, te = 0;
            for (Py_ssize_t b = r; b < c1; b += 64) {
                __mmask64 take = c1 - b >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (c1 - b)) - 1;
                __m512i v = _mm512_loadu_si512((const void *)(in + b)), vp = _mm512_loadu_si512((const void *)(in + b - 1));
                tc += __builtin_popcountll(_mm512_mask_cmplt_epi8_mask(take, v, k->cont_below));
                te += __builtin_popcountll(_mm512_mask_cmpeq_epi8_mask(take, vp, k->bsl));
            }
            long long c = st->ncont - tc, e = st->nesc - te, l = st->nnl;
            sk_point pt = {st->base + r, st->cp0 + r - c - e - 3 * l, st->ub0 + r - e - 3 * l, r - 3 * l};
            st->ring[st->nring % SK_RING] = pt;
            st->nring++;
        }
        /* the byte at c1 escaped where the one before is a backslash (not itself escaped) */
        st->prev_escaped = in[c1 - 1] == '\\';
        st->prev_nl = (uint64_t)(in[c1 - 2] == '\n') | ((uint64_t)(in[c1 - 1] == '\n') << 1);
        st->due = c1;
        i = c1;
    }
    return i;
}

/* sk_read_impl with AVX-512BW: a block's masks from one 64-byte vector, compared straight into
 * mask registers, its UTF-8 looked up once (utf8_errors512) where it has a byte >= 0x80. */
AVX512_TARGET static inline __attribute__((always_inline)) int
sk_read512_impl(const unsigned char *in, Py_ssize_t avail, Py_ssize_t base, const unsigned char *needle,
                Py_ssize_t m, int folded, unsigned char *out, sk_point *ring, Py_ssize_t *nring, long long cp0,
                long long ub0, Py_ssize_t *found_at, Py_ssize_t *searched, const int fused, const sk_half *A,
                const sk_half *B) {
    __m512i nl = _mm512_set1_epi8('\n'), qt = _mm512_set1_epi8('"'), bsl = _mm512_set1_epi8('\\');
    __m512i c1f = _mm512_set1_epi8(0x1F);
    /* continuation bytes (0x80-0xBF) are those below 0xC0 as signed bytes: one compare */
    __m512i cont_below = _mm512_set1_epi8((char)0xC0);
    __m512i esc_lo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 1 | 4 | 8, 0, 8, 0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 0));
    __m512i esc_hi = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0));
    utf8_consts512 u8 = utf8_consts512_make();
    /* Opaque to the compiler from here: it kept none of them in a register across the loop, and
     * broadcast each from an immediate again every block (a port the block's compares,
     * shuffles and permutes all need); now each is a register or, where there are too few, a
     * memory operand. */
    __asm__("" : "+v"(nl), "+v"(qt), "+v"(bsl), "+v"(c1f), "+v"(cont_below), "+v"(esc_lo), "+v"(esc_hi));
    __asm__("" : "+v"(u8.nib), "+v"(u8.hi), "+v"(u8.b1_high), "+v"(u8.b1_low), "+v"(u8.b2_high), "+v"(u8.e0),
                 "+v"(u8.f0), "+v"(u8.lanes));
    const __m512i nib = u8.nib;
    SK_STATE
    /* the halves' bytes broadcast once (else each block broadcast them from memory again) */
    sk_half512 ha = sk_half512_of(fused ? A : NULL, folded), hb = sk_half512_of(fused ? B : NULL, folded);
    __asm__("" : "+v"(ha.c1), "+v"(ha.c2), "+v"(ha.c3), "+v"(ha.fold), "+v"(hb.c1), "+v"(hb.c2), "+v"(hb.c3));
    hb.fold = ha.fold;
    __m512i prev = _mm512_setzero_si512(); /* the UTF-8 check's block before */
    sk_masks k = {0, 0, 0, 0, 0, 0, 0, 0};
    int held = 0;
    /* fused: the clean pass (sk_clean512) takes what it can; a chunk it does not, and the ones
     * it then waits over, are the block loop's (up to ``clean_at``). Its escapes' class is
     * sk_block's less the backslash: an escaped one makes a chunk unclean. */
    __m512i clean_lo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 1 | 4 | 8, 0, 8, 0, 4, 0, 0, 0, 0, 0, 0, 0, 4, 0));
    __asm__("" : "+v"(clean_lo));
    const sk_clean_consts kc = {nl, qt, bsl, c1f, cont_below, clean_lo, esc_hi};
    Py_ssize_t clean_at = fused && sk_clean_ok ? 0 : avail;
    int failures = 0;
    for (;;) {
    if (i >= clean_at) {
        Py_ssize_t from = i;
        i = sk_clean512(&st, i, avail, reach, &kc, &u8, &ha, &hb, folded);
        if (i != from) {
            prev = _mm512_loadu_si512((const void *)(in + i - 64));
            incomplete = sk_ends_begun(in + i - 64);
        }
        clean_at = clean_again(i, i != from, &failures);
    }
    for (; i + reach <= avail && i < clean_at; i += 64) {
        _mm_prefetch((const char *)(in + i + SCAN_AHEAD), _MM_HINT_T0);
        const unsigned char *p = in + i;
        __m512i v = _mm512_loadu_si512((const void *)p);
        k.nl = _mm512_cmpeq_epi8_mask(v, nl), k.q = _mm512_cmpeq_epi8_mask(v, qt), k.bs = _mm512_cmpeq_epi8_mask(v, bsl);
        /* a raw control character other than a line's newline */
        uint64_t controls = _mm512_cmple_epu8_mask(v, c1f) & ~k.nl;
        /* UTF-8: an all-ASCII block only ends what the block before began */
        int wrong_utf8 = incomplete;
        if (_mm512_movepi8_mask(v) != 0) {
            wrong_utf8 = utf8_errors512_with(v, prev, &u8) != 0;
            incomplete = sk_ends_begun(p);
        }
        k.wrong = controls != 0 || wrong_utf8;
        k.cont = _mm512_cmplt_epi8_mask(v, cont_below);
        __m512i c = _mm512_and_si512(_mm512_shuffle_epi8(esc_lo, _mm512_and_si512(v, nib)),
                                     _mm512_shuffle_epi8(esc_hi, _mm512_and_si512(_mm512_srli_epi16(v, 4), nib)));
        k.esc_class = _mm512_test_epi8_mask(c, c);
        prev = v;
        SK_STEP(sk_half_mask512, &ha, &hb)
    }
    if (held) {
        held = 0;
        int r = sk_block(&st, i, &k, found_at, searched, fused, 1);
        SK_VERDICT(r)
        i += 64;
        continue;
    }
    if (bad_block || i + reach > avail) break;
    }
    *nring = st.nring;
    return sk_finish(&st, i, bad_block, found_at, searched, fused);
}

/* sk_read: the join or the fused halves, in AVX2 or AVX-512BW as the CPU allows. */
AVX512_TARGET static int sk_read512(const unsigned char *in, Py_ssize_t avail, Py_ssize_t base,
                                    const unsigned char *needle, Py_ssize_t m, int folded, unsigned char *out,
                                    sk_point *ring, Py_ssize_t *nring, long long cp0, long long ub0,
                                    Py_ssize_t *found_at, Py_ssize_t *searched, const sk_half *A, const sk_half *B) {
    /* the fused read compiled for each case (no fold to OR into every half's loads where there is none) */
    if (A != NULL && folded)
        return sk_read512_impl(in, avail, base, needle, m, 1, out, ring, nring, cp0, ub0, found_at, searched, 1, A, B);
    if (A != NULL)
        return sk_read512_impl(in, avail, base, needle, m, 0, out, ring, nring, cp0, ub0, found_at, searched, 1, A, B);
    return sk_read512_impl(in, avail, base, needle, m, folded, out, ring, nring, cp0, ub0, found_at, searched, 0, A,
                           B);
}

AVX_TARGET static int sk_read(const unsigned char *in, Py_ssize_t avail, Py_ssize_t base, const unsigned char *needle,
                              Py_ssize_t m, int folded, unsigned char *out, sk_point *ring, Py_ssize_t *nring,
                              long long cp0, long long ub0, Py_ssize_t *found_at, Py_ssize_t *searched,
                              const sk_half *A, const sk_half *B) {
    if (use_avx512())
        return sk_read512(in, avail, base, needle, m, folded, out, ring, nring, cp0, ub0, found_at, searched, A, B);
    if (A != NULL)
        return sk_read_impl(in, avail, base, needle, m, folded, out, ring, nring, cp0, ub0, found_at, searched, 1, A,
                            B);
    return sk_read_impl(in, avail, base, needle, m, folded, out, ring, nring, cp0, ub0, found_at, searched, 0, A, B);
}
#endif

static PyObject *native_skip_lines(PyObject *self, PyObject *args) {
    int fd, folded;
    Py_ssize_t pos, end, keep;
    Py_buffer pin;
    if (!PyArg_ParseTuple(args, "inny*pn", &fd, &pos, &end, &pin, &folded, &keep)) return NULL;
    Py_ssize_t m = pin.len;
    /* read again after a SIGBUS cut a mapped read short: volatile */
    volatile Py_ssize_t at = pos;
    volatile long long cp = 0, ub = 0;
#ifdef HAVE_SIMD_STATS
    if (use_simd() && m > 0 && pos >= 1 && end > pos) {
        unsigned char *buf = NULL, *out = NULL;
        sk_point *ring = PyMem_RawMalloc(sizeof(sk_point) * SK_RING);
        out = PyMem_RawMalloc(SK_MAX_READ + PF_MARGIN + 64);
        /* Mapped, the page cache is read in place (a pread copies every byte: on 1 GB of
         * lines, 0.15 s of a core's 0.4); a read copied into ``buf`` where it cannot be. */
        Py_ssize_t page = (Py_ssize_t)sysconf(_SC_PAGESIZE), moff = (pos - 1) / page * page;
        unsigned char *map = mmap(NULL, (size_t)(end - moff), PROT_READ, MAP_PRIVATE, fd, (off_t)moff);
        if (map == MAP_FAILED) {
            map = NULL;
            buf = PyMem_RawMalloc(SK_MAX_READ + 64);
        }
        if (ring == NULL || out == NULL || (map == NULL && buf == NULL)) {
            if (map != NULL) munmap(map, (size_t)(end - moff));
            PyMem_RawFree(ring);
            PyMem_RawFree(buf);
            PyMem_RawFree(out);
            PyBuffer_Release(&pin);
            return PyErr_NoMemory();
        }
        if (map != NULL) sk_install_bus();
        const unsigned char *needle = (const unsigned char *)pin.buf;
        /* the fused search where its halves are selective and fragment lines long enough */
        int fused = m >= HALVES_MIN && m <= HALVES_MAX;
        sk_half halves[2];
        if (fused) {
            Py_ssize_t h = (m + 1) / 2;
            sk_half_init(&halves[0], needle, h, 0);
            sk_half_init(&halves[1], needle + m - h, h, m - h);
        }
        Py_BEGIN_ALLOW_THREADS
        sigjmp_buf jb;
        if (map == NULL || sigsetjmp(jb, 1) == 0) {
            if (map != NULL) sk_jmp = &jb;
            Py_ssize_t start = pos, want = SK_FIRST;
            long long scp = 0, sub = 0; /* counts at ``start`` */
            for (;;) {
                /* [start - 1, ...): the newline before the line, then the lines */
                Py_ssize_t n = end - (start - 1);
                if (n > want + 1) n = want + 1;
                if (n < W32 + 3) break;
                const unsigned char *rd = map != NULL ? map + (start - 1 - moff) : buf;
                if (map == NULL && pf_read(fd, buf, n, start - 1) < 0) break;
                if (rd[0] != '\n' || rd[1] != '"') break;
                Py_ssize_t nring = 0, found = -1, searched = 0;
                int stop = sk_read(rd + 1, n - 1, start, needle, m, folded, out, ring, &nring, scp, sub, &found,
                                   &searched, fused ? &halves[0] : NULL, fused ? &halves[1] : NULL);
                /* The newest line start kept ``keep`` joined bytes before the first place a match may
                 * start: the candidate, or else the first place a needle was not wholly searched
                 * (it may run on past what this read took). Every line start passed precedes an
                 * irregular block, and the bytes before it were checked; not always its opening
                 * quote: a line begun after a block's last byte is the next block's to check,
                 * which may be irregular, or past the read (then no line starts there). */
                Py_ssize_t limit = (found >= 0 ? found : searched - (m - 1)) - keep;
                sk_point best = {start, scp, sub, 0};
                Py_ssize_t lo = nring > SK_RING ? nring - SK_RING : 0;
                for (Py_ssize_t k = nring - 1; k >= lo; k--) {
                    if (ring[k % SK_RING].joined <= limit && rd[ring[k % SK_RING].pos - (start - 1)] == '"') {
                        best = ring[k % SK_RING];
                        break;
                    }
                }
                int progress = best.pos > start;
                if (progress) {
                    at = best.pos, cp = best.cp, ub = best.ub;
                    start = best.pos, scp = best.cp, sub = best.ub;
                }
                if (stop == 2) {
                    fused = 0; /* a short line: the join goes on from the last line start taken */
                    continue;
                }
                if (!progress || stop) break;
                if (want < SK_MAX_READ) want *= 2;
            }
        }
        sk_jmp = NULL;
        Py_END_ALLOW_THREADS
        if (map != NULL) munmap(map, (size_t)(end - moff));
        PyMem_RawFree(ring);
        PyMem_RawFree(buf);
        PyMem_RawFree(out);
    }
#endif
    PyBuffer_Release(&pin);
    return Py_BuildValue("nLL", (Py_ssize_t)at, (long long)cp, (long long)ub);
}

static PyMethodDef methods[] = {
    {"deframe", native_deframe, METH_VARARGS, "deframe(buf, end=len(buf)) -> bytes | None"},
    {"deframe_into", native_deframe_into, METH_VARARGS, "deframe_into(buf, end, out: bytearray) -> int"},
    {"escaped_stats", native_escaped_stats, METH_VARARGS, "escaped_stats(buf, start=0, end=-1) -> (int, int) | None"},
    {"utf8_stats", native_utf8_stats, METH_VARARGS, "utf8_stats(buf, start=0, end=-1) -> (int, int) | None"},
    {"survey", native_survey, METH_VARARGS, "survey(buf, end) -> (bool, (int, int) | None)"},
    {"simd", native_simd, METH_VARARGS, "simd(flag=-1) -> bool"},
    {"avx512", native_avx512, METH_VARARGS, "avx512(flag=-1) -> bool"},
    {"clean_passes", native_clean_passes, METH_VARARGS, "clean_passes(flag=-1) -> bool"},
    {"message_text", native_message_text, METH_VARARGS, "message_text(raw, start, end, out) -> (int, int)"},
    {"find_ci", native_find_ci, METH_VARARGS, "find_ci(buf, lowered_needle, start=0) -> int"},
    {"find", native_find, METH_VARARGS, "find(buf, needle, start=0) -> int"},
    {"count", native_count, METH_VARARGS, "count(buf, byte, start=0, end=-1) -> int"},
    {"halves", native_halves, METH_VARARGS, "halves(buf, start, end, needle, folded) -> int"},
    {"prefilter", native_prefilter, METH_VARARGS,
     "prefilter(paths, kinds, plain, escaped, folded, max_size, threads, chunk=8 MiB, transcript_max=max_size, "
     "share_above=4 MiB) -> bytes "
     "(0 no, 1 may, 2 unopenable)"},
    {"skip_lines", native_skip_lines, METH_VARARGS,
     "skip_lines(fd, pos, end, escaped_needle, folded, keep) -> (new_pos, code_points, utf8_bytes)"},
    {"read_files", native_read_files, METH_VARARGS,
     "read_files(paths, max_each, out) -> [(offset, size, code points)]"},
    {"canonical", native_canonical, METH_VARARGS, "canonical(buf) -> bool"},
    {"index_lines", native_index_lines, METH_VARARGS,
     "index_lines(buf, end, at_eof, fragments, max_line, base, cp, nbytes, newlines) -> tuple"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "Single-pass scanners (see _native.c).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
