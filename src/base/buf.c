/* Bounded growable buffers; see buf.h for the ownership rules. */
#include "base/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <strings.h>

#include "base/err.h"

void kvg_buf_init(struct kvg_buf *b, size_t limit)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->limit = limit ? limit : SIZE_MAX;
}

void kvg_buf_free(struct kvg_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void kvg_buf_reset(struct kvg_buf *b)
{
    b->len = 0;
}

int kvg_buf_reserve(struct kvg_buf *b, size_t n)
{
    if (n > b->limit || b->len > b->limit - n) return KVG_ETOOBIG;
    size_t need = b->len + n + 1; /* +1 keeps room for kvg_buf_cstr */
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p) return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int kvg_buf_append(struct kvg_buf *b, const void *p, size_t n)
{
    int rc = kvg_buf_reserve(b, n);
    if (rc) return rc;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

int kvg_buf_vprintf(struct kvg_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap2);
    va_end(ap2);
    if (n < 0) return -EINVAL;
    if ((size_t)n < sizeof tmp) return kvg_buf_append(b, tmp, (size_t)n);
    int rc = kvg_buf_reserve(b, (size_t)n);
    if (rc) return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int kvg_buf_printf(struct kvg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = kvg_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

/* Whether byte c needs a JSON escape: a control byte, '"' or '\\'. */
static int byte_needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

#if defined(__SSE2__)
/* The length of s[0, n)'s leading run of bytes needing no escape, sixteen
 * bytes a step (SSE2 is in every x86-64): a long conversation's text is
 * mostly plain, and a Responses or Messages body's conversion re-escapes
 * all of it (src/api/). A control byte is one that min(v, 0x1f) leaves
 * unchanged, unsigned. */
static size_t plain_run(const char *s, size_t n)
{
    const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i m = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v),
                                 _mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)));
        unsigned mask = (unsigned)_mm_movemask_epi8(m);
        if (mask) return i + (size_t)__builtin_ctz(mask);
    }
    while (i < n && !byte_needs_escape((unsigned char)s[i])) i++;
    return i;
}
#else
/* The same eight bytes a step: a byte below 0x20, or one that the XOR with
 * '"' or '\\' makes zero, sets its top bit in the mask (the classic has-less
 * / has-zero tests: exact as to whether one exists); the word that has one
 * is then read byte by byte. */
static size_t plain_run(const char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
        uint64_t m = ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((bs - ones) & ~bs);
        if (m & high) break;
    }
    while (i < n && !byte_needs_escape((unsigned char)s[i])) i++;
    return i;
}
#endif

int kvg_buf_append_json_str(struct kvg_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    int rc = kvg_buf_reserve(b, n + 2);
    if (rc) return rc;
    b->data[b->len++] = '"';
    for (size_t i = 0; i < n;) {
        size_t k = i + plain_run(s + i, n - i);
        if ((rc = kvg_buf_append(b, s + i, k - i))) return rc;
        if (k == n) break;
        unsigned char c = (unsigned char)s[k];
        char esc[6] = {'\\', 0};
        size_t elen = 2;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        }
        if ((rc = kvg_buf_append(b, esc, elen))) return rc;
        i = k + 1;
    }
    return kvg_buf_append(b, "\"", 1);
}

int kvg_buf_append_header(struct kvg_buf *b, struct kvg_str name, struct kvg_str value)
{
    int rc = kvg_buf_reserve(b, name.len + value.len + 4);
    if (rc) return rc;
    char *p = b->data + b->len;
    memcpy(p, name.p, name.len);
    p += name.len;
    *p++ = ':';
    *p++ = ' ';
    memcpy(p, value.p, value.len);
    p += value.len;
    *p++ = '\r';
    *p++ = '\n';
    b->len = (size_t)(p - b->data);
    return 0;
}

int kvg_buf_append_u64(struct kvg_buf *b, uint64_t v)
{
    char tmp[24];
    size_t n = sizeof tmp;
    do {
        tmp[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return kvg_buf_append(b, tmp + n, sizeof tmp - n);
}

void kvg_buf_consume(struct kvg_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

char *kvg_buf_cstr(struct kvg_buf *b)
{
    if (!b->data && kvg_buf_reserve(b, 0)) return NULL;
    if (!b->data) {
        /* limit of 0 bytes still gets its terminator */
        b->data = malloc(1);
        if (!b->data) return NULL;
        b->cap = 1;
    }
    b->data[b->len] = '\0';
    return b->data;
}

int kvg_str_eq(struct kvg_str a, const char *lit)
{
    size_t n = strlen(lit);
    return a.len == n && (n == 0 || memcmp(a.p, lit, n) == 0);
}

int kvg_str_eq_nocase(struct kvg_str a, const char *lit)
{
    size_t n = strlen(lit);
    return a.len == n && (n == 0 || strncasecmp(a.p, lit, n) == 0);
}

char *kvg_str_dup(struct kvg_str s)
{
    char *p = malloc(s.len + 1);
    if (!p) return NULL;
    if (s.len) memcpy(p, s.p, s.len);
    p[s.len] = '\0';
    return p;
}

int kvg_buf_read_stream(struct kvg_buf *b, FILE *f)
{
    char tmp[65536];
    size_t n;
    int rc = 0;
    while (!rc && (n = fread(tmp, 1, sizeof tmp, f)) > 0) rc = kvg_buf_append(b, tmp, n);
    if (!rc && ferror(f)) rc = -EIO;
    return rc;
}

int kvg_buf_read_file(struct kvg_buf *b, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -errno;
    int rc = kvg_buf_read_stream(b, f);
    fclose(f);
    return rc;
}
