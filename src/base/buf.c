/* Bounded growable buffers; see buf.h for the ownership rules. */
#include "base/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int kvg_buf_append_str(struct kvg_buf *b, const char *s)
{
    return kvg_buf_append(b, s, strlen(s));
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

/* Whether any of the 8 bytes of w needs a JSON escape (a control byte,
 * '"' or '\\'), eight at a time: a byte below 0x20, or one that the XOR
 * with '"' or '\\' makes zero, sets its top bit in the mask (the classic
 * has-less / has-zero tests: exact as to whether one exists). */
static int word_needs_escape(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    uint64_t m = ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((bs - ones) & ~bs);
    return (m & high) != 0;
}

int kvg_buf_append_json_str(struct kvg_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    int rc = kvg_buf_reserve(b, n + 2);
    if (rc) return rc;
    b->data[b->len++] = '"';
    size_t run = 0; /* start of the pending run of bytes needing no escape */
    for (size_t i = 0; i < n; i++) {
        /* Long texts (a 30k-token conversation) are mostly plain: skip
         * them eight bytes at a time. */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (word_needs_escape(w)) break;
            i += 8;
        }
        if (i >= n) break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if ((rc = kvg_buf_append(b, s + run, i - run))) return rc;
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
        run = i + 1;
    }
    if ((rc = kvg_buf_append(b, s + run, n - run))) return rc;
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
