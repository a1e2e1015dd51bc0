/* The exposition-format parser; grammar and limits in parse.h. Each line is
 * cut at its '\n' first, and every scanner below works between two pointers
 * (q, e) of that line, so nothing can run past it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "metrics/internal.h"
#include "metrics/parse.h"

void kvg_metrics_parser_init(struct kvg_metrics_parser *ps, const char *text, size_t len)
{
    ps->p = text;
    ps->end = text + len;
    ps->line = 0;
    ps->scratch_len = 0;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static const char *skip_blanks(const char *q, const char *e)
{
    while (q < e && is_blank(*q)) q++;
    return q;
}

static int is_name_char(char c, int first, int colon)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return 1;
    if (c == ':') return colon;
    return !first && c >= '0' && c <= '9';
}

/* Scans [a-zA-Z_:][a-zA-Z0-9_:]* (colon = 1) or the label form (colon = 0);
 * returns the end of the name, == q if there is none. */
static const char *scan_name(const char *q, const char *e, int colon)
{
    const char *s = q;
    while (s < e && is_name_char(*s, s == q, colon)) s++;
    return s;
}

static const char *scan_token(const char *q, const char *e)
{
    while (q < e && !is_blank(*q)) q++;
    return q;
}

static int word_is(const char *q, const char *e, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(e - q) == n && !memcmp(q, w, n);
}

/* Case-insensitive whole-token compare against a lower-case word. */
static int word_is_nocase(const char *q, const char *e, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(e - q) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = q[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != w[i]) return 0;
    }
    return 1;
}

static int parse_comment(const char *q, const char *e)
{
    q = skip_blanks(q + 1, e);
    const char *w = scan_token(q, e);
    int help = word_is(q, w, "HELP"), type = word_is(q, w, "TYPE");
    if (!help && !type) return 0; /* an ordinary comment */
    q = skip_blanks(w, e);
    if (q == e && help) return 0; /* a bare "# HELP" names nothing: a comment */
    const char *n = scan_name(q, e, 1);
    if (n == q || (n < e && !is_blank(*n))) return KVG_EPARSE;
    q = skip_blanks(n, e);
    if (type) {
        if (q == e) return 0; /* "# TYPE name" declares nothing: Prometheus reads a comment */
        w = scan_token(q, e);
        if (!word_is(q, w, "counter") && !word_is(q, w, "gauge") && !word_is(q, w, "histogram") &&
            !word_is(q, w, "summary") && !word_is(q, w, "untyped"))
            return KVG_EPARSE;
        return skip_blanks(w, e) == e ? 0 : KVG_EPARSE;
    }
    for (; q < e; q++) {
        if (*q != '\\') continue;
        if (++q == e || (*q != '\\' && *q != 'n')) return KVG_EPARSE;
    }
    return 0;
}

/* Parses the quoted value starting at *pq (just past the opening quote) into
 * *out, unescaping into the scratch space when needed; leaves *pq past the
 * closing quote. */
static int parse_label_value(struct kvg_metrics_parser *ps, const char **pq, const char *e,
                             struct kvg_str *out)
{
    const char *q = *pq, *start = q;
    int escaped = 0;
    while (q < e && *q != '"') {
        if (*q == '\0') return KVG_EPARSE;
        if (*q == '\\') {
            if (q + 1 == e || (q[1] != '\\' && q[1] != '"' && q[1] != 'n')) return KVG_EPARSE;
            escaped = 1;
            q++;
        }
        q++;
    }
    if (q == e) return KVG_EPARSE; /* no closing quote on this line */
    /* Escapes are ASCII, so the raw span is UTF-8 iff the unescaped is. */
    if (!kvg_utf8_valid(start, (size_t)(q - start))) return KVG_EPARSE;
    *pq = q + 1;
    if (!escaped) {
        *out = (struct kvg_str){start, (size_t)(q - start)};
        return 0;
    }
    char *dst = ps->scratch + ps->scratch_len;
    size_t room = sizeof ps->scratch - ps->scratch_len, n = 0;
    for (const char *s = start; s < q; s++) {
        if (n == room) return KVG_ETOOBIG;
        char c = *s;
        if (c == '\\') {
            c = *++s;
            if (c == 'n') c = '\n';
        }
        dst[n++] = c;
    }
    ps->scratch_len += n;
    *out = (struct kvg_str){dst, n};
    return 0;
}

/* Parses {name="value",...} starting at *pq (on the '{'). */
static int parse_labels(struct kvg_metrics_parser *ps, const char **pq, const char *e,
                        struct kvg_metrics_sample *out)
{
    const char *q = *pq + 1;
    for (;;) {
        q = skip_blanks(q, e);
        if (q < e && *q == '}') break;
        const char *n = scan_name(q, e, 0);
        if (n == q) return KVG_EPARSE;
        struct kvg_str name = {q, (size_t)(n - q)};
        for (size_t i = 0; i < out->nlabels; i++)
            if (out->labels[i].name.len == name.len && !memcmp(out->labels[i].name.p, q, name.len))
                return KVG_EPARSE;
        if (out->nlabels == KVG_METRICS_PARSE_MAX_LABELS) return KVG_ETOOBIG;
        q = skip_blanks(n, e);
        if (q == e || *q != '=') return KVG_EPARSE;
        q = skip_blanks(q + 1, e);
        if (q == e || *q != '"') return KVG_EPARSE;
        q++;
        struct kvg_metrics_label *l = &out->labels[out->nlabels];
        int rc = parse_label_value(ps, &q, e, &l->value);
        if (rc) return rc;
        l->name = name;
        out->nlabels++;
        q = skip_blanks(q, e);
        if (q < e && *q == ',') {
            q++;
            continue; /* a trailing comma before '}' is allowed, as Prometheus does */
        }
        if (q < e && *q == '}') break;
        return KVG_EPARSE;
    }
    *pq = q + 1;
    return 0;
}

static const char *scan_digits(const char *q, const char *e)
{
    while (q < e && *q >= '0' && *q <= '9') q++;
    return q;
}

/* The value token [q, e): checked against the grammar in parse.h first, so
 * strtod (which also takes hex, "nan(...)", leading blanks) only ever sees
 * plain decimal text. kvgate never calls setlocale, so '.' is the point. */
static int parse_value(const char *q, const char *e, double *out)
{
    const char *s = q;
    int neg = 0;
    if (s < e && (*s == '+' || *s == '-')) neg = *s++ == '-';
    if (word_is_nocase(s, e, "inf") || word_is_nocase(s, e, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (word_is_nocase(s, e, "nan")) {
        *out = NAN;
        return 0;
    }
    const char *d = scan_digits(s, e);
    size_t int_digits = (size_t)(d - s), frac_digits = 0;
    if (d < e && *d == '.') {
        const char *f = scan_digits(d + 1, e);
        frac_digits = (size_t)(f - d - 1);
        d = f;
    }
    if (int_digits + frac_digits == 0) return KVG_EPARSE;
    if (d < e && (*d == 'e' || *d == 'E')) {
        d++;
        if (d < e && (*d == '+' || *d == '-')) d++;
        const char *x = scan_digits(d, e);
        if (x == d) return KVG_EPARSE;
        d = x;
    }
    if (d != e) return KVG_EPARSE;
    char tmp[64];
    size_t n = (size_t)(e - q);
    if (n >= sizeof tmp) return KVG_EPARSE; /* no engine writes a 64-digit number */
    memcpy(tmp, q, n);
    tmp[n] = '\0';
    errno = 0;
    double v = strtod(tmp, NULL);
    if (errno == ERANGE && isinf(v)) return KVG_EPARSE; /* overflow; underflow is fine */
    *out = v;
    return 0;
}

static int parse_timestamp(const char *q, const char *e, int64_t *out)
{
    int neg = 0;
    if (q < e && (*q == '+' || *q == '-')) neg = *q++ == '-';
    if (q == e || scan_digits(q, e) != e) return KVG_EPARSE;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; q < e; q++) {
        unsigned dgt = (unsigned)(*q - '0');
        if (v > (lim - dgt) / 10) return KVG_EPARSE;
        v = v * 10 + dgt;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

static int parse_sample(struct kvg_metrics_parser *ps, const char *q, const char *e,
                        struct kvg_metrics_sample *out)
{
    const char *n = scan_name(q, e, 1);
    if (n == q) return KVG_EPARSE;
    out->name = (struct kvg_str){q, (size_t)(n - q)};
    out->nlabels = 0;
    out->has_timestamp = 0;
    out->timestamp_ms = 0;
    ps->scratch_len = 0;
    q = skip_blanks(n, e);
    if (q < e && *q == '{') {
        int rc = parse_labels(ps, &q, e, out);
        if (rc) return rc;
        q = skip_blanks(q, e);
    } else if (q == n) {
        return KVG_EPARSE; /* "name-1": the value must be set apart */
    }
    const char *v = scan_token(q, e);
    if (v == q) return KVG_EPARSE;
    int rc = parse_value(q, v, &out->value);
    if (rc) return rc;
    q = skip_blanks(v, e);
    if (q == e) return 1;
    const char *t = scan_token(q, e);
    if ((rc = parse_timestamp(q, t, &out->timestamp_ms))) return rc;
    out->has_timestamp = 1;
    return skip_blanks(t, e) == e ? 1 : KVG_EPARSE;
}

int kvg_metrics_parser_next(struct kvg_metrics_parser *ps, struct kvg_metrics_sample *out)
{
    while (ps->p < ps->end) {
        const char *line = ps->p;
        const char *nl = memchr(line, '\n', (size_t)(ps->end - line));
        ps->line++;
        if (!nl) {
            /* The format ends every line with '\n'; a body that stops
             * mid-line was cut short, and "waiting 12" cut to "waiting 1"
             * would parse as a wrong number. */
            ps->p = ps->end;
            return KVG_EPARSE;
        }
        ps->p = nl + 1;
        const char *q = skip_blanks(line, nl);
        if (q == nl) continue;
        int rc = *q == '#' ? parse_comment(q, nl) : parse_sample(ps, q, nl, out);
        if (rc) return rc;
    }
    return 0;
}

const struct kvg_str *kvg_metrics_sample_label(const struct kvg_metrics_sample *s, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < s->nlabels; i++)
        if (s->labels[i].name.len == n && !memcmp(s->labels[i].name.p, name, n))
            return &s->labels[i].value;
    return NULL;
}
