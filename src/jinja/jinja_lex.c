/* Template preprocessing and tokenizing, step for step as @huggingface/jinja
 * does them, because its quirks decide the rendered bytes: it strips one final
 * newline, applies lstrip_blocks and trim_blocks as regular-expression passes
 * over the raw source (string literals included), drops transformers'
 * `{% generation %}` tags, and only then splits into tokens, handling the
 * `{%-`/`-%}` whitespace control while tokenizing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/utf8.h"
#include "base/util.h"
#include "jinja/jinja_int.h"

/* Length of a JS line terminator ending just before p (for the multiline `^`
 * anchor): \n, \r, U+2028, U+2029. */
static int after_line_terminator(const char *s, size_t i)
{
    if (i == 0) return 1;
    if (s[i - 1] == '\n' || s[i - 1] == '\r') return 1;
    if (i >= 3 && (unsigned char)s[i - 3] == 0xE2 && (unsigned char)s[i - 2] == 0x80 &&
        ((unsigned char)s[i - 1] == 0xA8 || (unsigned char)s[i - 1] == 0xA9))
        return 1;
    return 0;
}

/* `template.replace(/^[ \t]*({[#%-])/gm, "$1")` */
static int pass_lstrip(struct kvg_buf *o, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (after_line_terminator(s, i)) {
            size_t j = i;
            while (j < n && (s[j] == ' ' || s[j] == '\t')) j++;
            if (j > i && j + 1 < n && s[j] == '{' &&
                (s[j + 1] == '#' || s[j + 1] == '%' || s[j + 1] == '-')) {
                i = j; /* drop the blanks; the tag itself is copied below */
            }
        }
        if (kvg_buf_append(o, s + i, 1)) return -ENOMEM;
        i++;
    }
    return 0;
}

/* `template.replace(/([#%-]})\n/g, "$1")` */
static int pass_trim(struct kvg_buf *o, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (i + 2 < n && (s[i] == '#' || s[i] == '%' || s[i] == '-') && s[i + 1] == '}' &&
            s[i + 2] == '\n') {
            if (kvg_buf_append(o, s + i, 2)) return -ENOMEM;
            i += 3;
            continue;
        }
        if (kvg_buf_append(o, s + i, 1)) return -ENOMEM;
        i++;
    }
    return 0;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    size_t w;
    while (i < n && (w = kvg__jinja_str_ws_len(s + i, s + n)) > 0) i += w;
    return i;
}

/* Is there a generation tag at s[q] ("{%")? Sets its end and the two dashes. */
static int generation_tag(const char *s, size_t n, size_t q, size_t *end, int *lstrip, int *rstrip)
{
    size_t i = q + 2;
    *lstrip = 0;
    *rstrip = 0;
    if (i < n && s[i] == '-') {
        *lstrip = 1;
        i++;
    }
    i = skip_ws(s, n, i);
    if (i + 3 <= n && !memcmp(s + i, "end", 3) && i + 13 <= n &&
        !memcmp(s + i + 3, "generation", 10))
        i += 3;
    if (i + 10 > n || memcmp(s + i, "generation", 10)) return 0;
    i = skip_ws(s, n, i + 10);
    if (i < n && s[i] == '-') {
        *rstrip = 1;
        i++;
    }
    if (i + 2 > n || s[i] != '%' || s[i + 1] != '}') return 0;
    *end = i + 2;
    return 1;
}

/* `replace(/(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs, ...)` */
static int pass_generation(struct kvg_buf *o, const char *s, size_t n)
{
    size_t pos = 0, copied = 0;
    while (pos < n) {
        const char *q = memmem(s + pos, n - pos, "{%", 2);
        if (!q) break;
        size_t qi = (size_t)(q - s), end;
        int ls, rs;
        if (!generation_tag(s, n, qi, &end, &ls, &rs)) {
            pos = qi + 1;
            continue;
        }
        size_t before = qi, w;
        while (before > pos && (w = kvg__jinja_str_ws_len_before(s + pos, s + before)) > 0)
            before -= w;
        size_t after = skip_ws(s, n, end);
        if (kvg_buf_append(o, s + copied, before - copied)) return -ENOMEM;
        if (!ls && kvg_buf_append(o, s + before, qi - before)) return -ENOMEM;
        if (!rs && kvg_buf_append(o, s + end, after - end)) return -ENOMEM;
        copied = pos = after;
    }
    return kvg_buf_append(o, s + copied, n - copied) ? -ENOMEM : 0;
}

static int push_tok(struct jtoks *t, int type, const char *s, size_t len)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 256;
        struct jtok *v = realloc(t->v, nc * sizeof(*v));
        if (!v) return -ENOMEM;
        t->v = v;
        t->cap = nc;
    }
    t->v[t->n].type = (uint8_t)type;
    t->v[t->n].s = s;
    t->v[t->n].len = (uint32_t)len;
    t->n++;
    return 0;
}

/* A quoted literal from s[*pi] (just after the quote); decodes escapes the
 * way the reference's consumeWhile does. */
static int lex_string(const char *s, size_t n, size_t *pi, char quote, struct jarena *a,
                      struct jtoks *out, char *err, size_t errlen)
{
    struct kvg_buf b;
    uint32_t pending_hi = 0; /* a \uD800-\uDBFF waiting for its low half */
    size_t i = *pi;
    int rc = 0;
    kvg_buf_init(&b, 0);
    for (;;) {
        if (i >= n) {
            rc = kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
            goto out;
        }
        if (s[i] == quote && !pending_hi) break;
        if (s[i] == '\\') {
            i++;
            if (i >= n) {
                rc = kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
                goto out;
            }
            char e = s[i++];
            if (e == 'x' || e == 'u') {
                size_t hl = e == 'x' ? 2 : 4;
                uint32_t cp = 0;
                for (size_t k = 0; k < hl; k++) {
                    int h = i + k < n ? kvg_hex_digit(s[i + k]) : -1;
                    if (h < 0) {
                        rc = kvg_err_set(err, errlen, KVG_ETEMPLATE,
                                         "Invalid hexadecimal escape sequence: \\%c", e);
                        goto out;
                    }
                    cp = cp * 16 + (uint32_t)h;
                }
                i += hl;
                if (pending_hi) {
                    if (cp < 0xDC00 || cp > 0xDFFF) break; /* lone high half */
                    cp = 0x10000 + ((pending_hi - 0xD800) << 10) + (cp - 0xDC00);
                    pending_hi = 0;
                } else if (cp >= 0xD800 && cp <= 0xDBFF) {
                    pending_hi = cp;
                    continue;
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    pending_hi = 1; /* reported below */
                    break;
                }
                char u[4];
                if (kvg_buf_append(&b, u, kvg_utf8_put(cp, u))) goto nomem;
                continue;
            }
            if (pending_hi) break;
            const char *map = "n\nt\tr\rb\bf\fv\v''\"\"\\\\";
            const char *m = NULL;
            for (const char *p = map; *p; p += 2)
                if (*p == e) m = p;
            if (!m) {
                rc = kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected escaped character: %c", e);
                goto out;
            }
            if (kvg_buf_append(&b, m + 1, 1)) goto nomem;
            continue;
        }
        if (pending_hi) break;
        if (kvg_buf_append(&b, s + i, 1)) goto nomem;
        i++;
        if (i >= n) {
            rc = kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
            goto out;
        }
    }
    if (pending_hi) {
        /* JS strings may hold half a surrogate pair; UTF-8 text cannot. */
        rc = kvg_err_set(err, errlen, KVG_EUNSUPP,
                         "unsupported: string literal with an unpaired surrogate escape");
        goto out;
    }
    char *txt = kvg__jinja_arena_strdup(a, b.data ? b.data : "", b.len);
    if (!txt || push_tok(out, JT_STR, txt, b.len)) goto nomem;
    *pi = i + 1;
    goto out;
nomem:
    rc = -ENOMEM;
out:
    kvg_buf_free(&b);
    return rc;
}

static int is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static const struct {
    const char *seq;
    uint8_t len, type;
} g_table[] = {
    {"{%", 2, JT_OPEN_STMT},  {"%}", 2, JT_CLOSE_STMT}, {"{{", 2, JT_OPEN_EXPR},
    {"}}", 2, JT_CLOSE_EXPR}, {"(", 1, JT_LPAREN},      {")", 1, JT_RPAREN},
    {"{", 1, JT_LBRACE},      {"}", 1, JT_RBRACE},      {"[", 1, JT_LBRACKET},
    {"]", 1, JT_RBRACKET},    {",", 1, JT_COMMA},       {".", 1, JT_DOT},
    {":", 1, JT_COLON},       {"|", 1, JT_PIPE},        {"<=", 2, JT_CMP},
    {">=", 2, JT_CMP},        {"==", 2, JT_CMP},        {"!=", 2, JT_CMP},
    {"<", 1, JT_CMP},         {">", 1, JT_CMP},         {"+", 1, JT_ADD},
    {"-", 1, JT_ADD},         {"~", 1, JT_ADD},         {"**", 2, JT_POW},
    {"*", 1, JT_MUL},         {"//", 2, JT_MUL},        {"/", 1, JT_MUL},
    {"%", 1, JT_MUL},         {"=", 1, JT_EQUALS},
};

static int tokenize(const char *s, size_t n, struct jarena *a, struct jtoks *out, char *err,
                    size_t errlen)
{
    size_t i = 0;
    int depth = 0, rc;
#define LAST (out->n ? (int)out->v[out->n - 1].type : -1)
    while (i < n) {
        int last = LAST;
        if (last == -1 || last == JT_CLOSE_STMT || last == JT_CLOSE_EXPR || last == JT_COMMENT) {
            size_t j = i;
            while (j < n && !(s[j] == '{' && j + 1 < n &&
                              (s[j + 1] == '%' || s[j + 1] == '{' || s[j + 1] == '#')))
                j++;
            if (j > i) {
                if ((rc = push_tok(out, JT_TEXT, s + i, j - i))) return rc;
                i = j;
                continue;
            }
        }
        if (s[i] == '{' && i + 1 < n && s[i + 1] == '#') {
            i += 2;
            int strip_before = i < n && s[i] == '-';
            if (strip_before) i++;
            size_t c0 = i;
            while (!(i + 1 < n && s[i] == '#' && s[i + 1] == '}')) {
                if (i + 2 >= n)
                    return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Missing end of comment tag");
                i++;
            }
            size_t clen = i - c0;
            int strip_after = clen > 0 && s[c0 + clen - 1] == '-';
            if (strip_after) clen--;
            if (strip_before && LAST == JT_TEXT) {
                struct jtok *t = &out->v[out->n - 1];
                size_t tl = t->len;
                kvg__jinja_str_trim(&t->s, &tl, 0, 1);
                t->len = (uint32_t)tl;
                if (!tl) out->n--;
            }
            if ((rc = push_tok(out, JT_COMMENT, s + c0, clen))) return rc;
            i += 2;
            if (strip_after) i = skip_ws(s, n, i);
            continue;
        }
        if (i + 2 < n && s[i] == '{' && (s[i + 1] == '%' || s[i + 1] == '{') && s[i + 2] == '-') {
            if (LAST == JT_TEXT) {
                struct jtok *t = &out->v[out->n - 1];
                size_t tl = t->len;
                kvg__jinja_str_trim(&t->s, &tl, 0, 1);
                t->len = (uint32_t)tl;
                if (!tl) out->n--;
            }
            int stmt = s[i + 1] == '%';
            if ((rc = push_tok(out, stmt ? JT_OPEN_STMT : JT_OPEN_EXPR, s + i, 2))) return rc;
            if (!stmt) depth = 0;
            i += 3;
            continue;
        }
        /* whitespace inside a tag; running into the end is an error there */
        {
            size_t w;
            while (i < n && (w = kvg__jinja_str_ws_len(s + i, s + n)) > 0) {
                i += w;
                if (i >= n)
                    return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
            }
        }
        if (i + 2 < n && s[i] == '-' && (s[i + 1] == '%' || s[i + 1] == '}') && s[i + 2] == '}') {
            if ((rc = push_tok(out, s[i + 1] == '%' ? JT_CLOSE_STMT : JT_CLOSE_EXPR, s + i + 1, 2)))
                return rc;
            i = skip_ws(s, n, i + 3);
            continue;
        }
        char c = s[i];
        if (c == '-' || c == '+') {
            last = LAST;
            if (last == JT_TEXT || last == -1)
                return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected character: %c", c);
            if (last != JT_IDENT && last != JT_NUM && last != JT_STR && last != JT_RPAREN &&
                last != JT_RBRACKET) {
                size_t st = i++;
                size_t d0 = i;
                while (i < n && is_digit(s[i])) i++;
                if (i > d0 && i >= n)
                    return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
                if (i > d0 && i + 1 < n && s[i] == '.' && is_digit(s[i + 1])) {
                    i++;
                    while (i < n && is_digit(s[i])) i++;
                    if (i >= n)
                        return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
                }
                if ((rc = push_tok(out, i > d0 ? JT_NUM : JT_UNARY, s + st, i - st))) return rc;
                continue;
            }
        }
        int matched = 0;
        for (size_t k = 0; k < sizeof(g_table) / sizeof(g_table[0]); k++) {
            if (g_table[k].type == JT_CLOSE_EXPR && depth > 0) continue;
            if (i + g_table[k].len <= n && !memcmp(s + i, g_table[k].seq, g_table[k].len)) {
                if ((rc = push_tok(out, g_table[k].type, s + i, g_table[k].len))) return rc;
                if (g_table[k].type == JT_OPEN_EXPR)
                    depth = 0;
                else if (g_table[k].type == JT_LBRACE)
                    depth++;
                else if (g_table[k].type == JT_RBRACE)
                    depth--;
                i += g_table[k].len;
                matched = 1;
                break;
            }
        }
        if (matched) continue;
        if (c == '\'' || c == '"') {
            i++;
            if ((rc = lex_string(s, n, &i, c, a, out, err, errlen))) return rc;
            continue;
        }
        if (is_digit(c)) {
            size_t st = i;
            while (i < n && is_digit(s[i])) i++;
            if (i >= n) return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
            if (LAST != JT_DOT && s[i] == '.' && i + 1 < n && is_digit(s[i + 1])) {
                i++;
                while (i < n && is_digit(s[i])) i++;
                if (i >= n)
                    return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
            }
            if ((rc = push_tok(out, JT_NUM, s + st, i - st))) return rc;
            continue;
        }
        if (is_word(c)) {
            size_t st = i;
            while (i < n && is_word(s[i])) i++;
            if (i >= n) return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected end of input");
            if ((rc = push_tok(out, JT_IDENT, s + st, i - st))) return rc;
            continue;
        }
        if ((unsigned char)c >= 0x80) {
            size_t l = kvg_utf8_decode_fast(s + i, n - i, NULL);
            return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected character: %.*s", (int)l,
                               s + i);
        }
        return kvg_err_set(err, errlen, KVG_ETEMPLATE, "Unexpected character: %c", c);
    }
#undef LAST
    return 0;
}

int kvg__jinja_lex(const char *src, size_t len, struct jarena *a, struct jtoks *out, char *err,
                   size_t errlen)
{
    struct kvg_buf b1, b2;
    int rc;
    if (!kvg_utf8_valid(src, len))
        return kvg_err_set(err, errlen, KVG_EUTF8, "template is not valid UTF-8");
    kvg_buf_init(&b1, 0);
    kvg_buf_init(&b2, 0);
    if (len && src[len - 1] == '\n') len--;
    if ((rc = pass_lstrip(&b1, src, len))) goto out;
    if ((rc = pass_trim(&b2, b1.data ? b1.data : "", b1.len))) goto out;
    kvg_buf_reset(&b1);
    if ((rc = pass_generation(&b1, b2.data ? b2.data : "", b2.len))) goto out;
    char *s = kvg__jinja_arena_strdup(a, b1.data ? b1.data : "", b1.len);
    if (!s) {
        rc = -ENOMEM;
        goto out;
    }
    rc = tokenize(s, b1.len, a, out, err, errlen);
out:
    kvg_buf_free(&b1);
    kvg_buf_free(&b2);
    return rc;
}
