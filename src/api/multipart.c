/* multipart/form-data (RFC 7578 over RFC 2046's multipart syntax), the
 * body of an audio request: split into parts by the Content-Type's
 * boundary, each part's Content-Disposition read for its name and
 * filename. Outside bytes: every offset is checked against the body's
 * length, nothing is copied (parts are views), the part count is bounded,
 * and a body cut anywhere before its closing delimiter is an error, never
 * a part of what was there (fuzz/fuzz_api_multipart.c runs it). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "api/api.h"

#define MAX_BOUNDARY 70 /* RFC 2046 */

/* The first occurrence of needle in hay, or NULL. */
static const char *find(const char *hay, size_t n, const char *needle, size_t m)
{
    if (!m || m > n) return m ? NULL : hay;
    const char *end = hay + n - m;
    for (const char *p = hay; p <= end; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) + 1);
        if (!p) return NULL;
        if (!memcmp(p, needle, m)) return p;
    }
    return NULL;
}

static int ieq_prefix(const char *p, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    if (n < m) return 0;
    for (size_t i = 0; i < m; i++)
        if (tolower((unsigned char)p[i]) != lit[i]) return 0;
    return 1;
}

/* A parameter's value in a header value "x; a=b; c=\"d\"": a token or a
 * quoted string (a backslash keeps the next byte in it; the view keeps the
 * backslash, as browsers never send one). 1 when found. */
static int param(const char *v, size_t n, const char *key, const char **out, size_t *olen)
{
    size_t klen = strlen(key);
    size_t i = 0;
    while (i < n) {
        while (i < n && v[i] != ';') {
            if (v[i] == '"') /* skip a quoted string: its ';' separates nothing */
                for (i++; i < n && v[i] != '"'; i++)
                    if (v[i] == '\\') i++;
            i++;
        }
        if (i >= n) return 0;
        i++; /* past ';' */
        while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
        if (n - i > klen && ieq_prefix(v + i, n - i, key) && v[i + klen] == '=') {
            i += klen + 1;
            if (i < n && v[i] == '"') {
                size_t s = ++i;
                while (i < n && v[i] != '"') i += v[i] == '\\' ? 2 : 1;
                if (i >= n) return 0; /* unterminated */
                *out = v + s, *olen = i - s;
            } else {
                size_t s = i;
                while (i < n && v[i] != ';' && v[i] != ' ' && v[i] != '\t') i++;
                *out = v + s, *olen = i - s;
            }
            return 1;
        }
    }
    return 0;
}

/* The boundary of a multipart/form-data Content-Type; 0, or -1. */
static int boundary(const char *ct, size_t n, const char **b, size_t *blen)
{
    while (n && (*ct == ' ' || *ct == '\t')) ct++, n--;
    if (!ieq_prefix(ct, n, "multipart/form-data")) return -1;
    if (!param(ct, n, "boundary", b, blen) || !*blen || *blen > MAX_BOUNDARY) return -1;
    return 0;
}

/* Reads a part's header block [h, h+n) (lines ended by CRLF) into p. */
static int part_headers(const char *h, size_t n, struct kvg_api_part *p, char *msg, size_t msglen)
{
    int named = 0;
    while (n) {
        const char *eol = find(h, n, "\r\n", 2);
        size_t len = eol ? (size_t)(eol - h) : n;
        if (ieq_prefix(h, len, "content-disposition:")) {
            const char *v = h + 20;
            size_t vl = len - 20;
            while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
            if (!ieq_prefix(v, vl, "form-data")) {
                snprintf(msg, msglen, "a part is not form-data");
                return KVG_EPARSE;
            }
            named = param(v, vl, "name", &p->name, &p->name_len);
            if (!param(v, vl, "filename", &p->filename, &p->filename_len)) p->filename = NULL;
        }
        if (!eol) break;
        h = eol + 2;
        n -= len + 2;
    }
    if (!named) {
        snprintf(msg, msglen, "a part has no name");
        return KVG_EPARSE;
    }
    return 0;
}

int kvg_api_multipart_parse(const char *content_type, size_t ct_len, const char *body, size_t len,
                            struct kvg_api_part *parts, size_t max, size_t *n, char *msg,
                            size_t msglen)
{
    const char *bd;
    size_t bl;
    char delim[MAX_BOUNDARY + 4] = "\r\n--";
    *n = 0;
    if (!content_type || boundary(content_type, ct_len, &bd, &bl)) {
        snprintf(msg, msglen, "the body is not multipart/form-data with a boundary");
        return KVG_EPARSE;
    }
    memcpy(delim + 4, bd, bl);
    size_t dl = bl + 4;
    /* The first delimiter may open the body (no CRLF before it). */
    const char *p = len >= dl - 2 && !memcmp(body, delim + 2, dl - 2) ? body + dl - 2 : NULL;
    if (!p && (p = find(body, len, delim, dl))) p += dl;
    if (!p) {
        snprintf(msg, msglen, "the body has no part (no boundary)");
        return KVG_EPARSE;
    }
    const char *end = body + len;
    for (;;) {
        if (end - p >= 2 && p[0] == '-' && p[1] == '-') return 0; /* the close delimiter */
        while (p < end && (*p == ' ' || *p == '\t')) p++;         /* transport padding */
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n') break;
        p += 2;
        if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
            snprintf(msg, msglen, "a part has no name");
            return KVG_EPARSE;
        }
        const char *hend = find(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (!hend) break; /* cut inside the part's headers */
        if (*n == max) {
            snprintf(msg, msglen, "the body has more than %zu parts", max);
            return KVG_EPARSE;
        }
        struct kvg_api_part *pt = &parts[*n];
        memset(pt, 0, sizeof *pt);
        int rc = part_headers(p, (size_t)(hend - p), pt, msg, msglen);
        if (rc) return rc;
        const char *data = hend + 4;
        const char *next = find(data, (size_t)(end - data), delim, dl);
        if (!next) break;
        pt->data = data;
        pt->len = (size_t)(next - data);
        (*n)++;
        p = next + dl;
    }
    snprintf(msg, msglen, "the multipart body ends before its closing boundary");
    return KVG_EPARSE;
}
