/* Split regexes: HF tokenizers compiles them with Oniguruma (the onig crate,
 * Ruby-style syntax); kvgate runs them on PCRE2 (UTF + UCP + JIT). The
 * pattern is translated where the two engines read the same text
 * differently, and refused where a faithful translation is not known:
 *
 *   \s \S   Oniguruma: Unicode White_Space. PCRE2's UCP \s also matches
 *           U+180E; spelled out as an explicit class instead.
 *   \h \H   Oniguruma: hex digit. PCRE2: horizontal space. Spelled out.
 *   \v      Oniguruma: vertical tab. PCRE2: vertical space class.
 *   \uHHHH  Oniguruma only; becomes \x{HHHH}.
 *   (?m)    Oniguruma (Ruby): dot matches newline, PCRE2's (?s).
 *   {,n}    Oniguruma: {0,n}. PCRE2 10.42: literal text.
 *   ^ $     Ruby semantics are per line: compiled with PCRE2_MULTILINE.
 *   \p{X}   general categories: Debian's PCRE2 has Unicode 14 tables, HF's
 *           Oniguruma newer ones. A second, widened pattern adds the code
 *           points Unicode 15.0 assigned to X (\P{X} inside a class is
 *           refused then); it runs only on text that contains such a code
 *           point, since the wider classes cost the JIT about 30%.
 *   \w \W \b \B, POSIX brackets, nested classes and && inside classes,
 *   \R \X \N \O: refused (KVG_EUNSUPP names the construct).
 *
 * Iteration follows the onig crate's find_iter exactly (which empty matches
 * are reported matters to the Split behaviours). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

#define WS_RANGES                                                                                  \
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"       \
    "\\x{3000}"

static int put(struct kvg_buf *b, const char *s)
{
    return kvg_buf_append(b, s, strlen(s));
}

static int unsupported(char *err, size_t errlen, const char *what)
{
    return kvg_err_set(err, errlen, KVG_EUNSUPP,
                       "unsupported component: Split regex construct %s (Oniguruma and PCRE2 "
                       "differ)",
                       what);
}

/* Appends "\x{a}-\x{b}" for every code point Unicode 15.0 assigned to the
 * general category gc[0..gl) (one letter: the whole major class), when o is
 * set; returns how many runs there are. */
static int age15_ranges(const char *gc, size_t gl, struct kvg_buf *o, int *rc)
{
    int runs = 0;
    for (size_t i = 0; i + 3 <= kvg__tok_ucd_age15_len; i += 3) {
        char c0 = (char)(kvg__tok_ucd_age15[i + 2] >> 8), c1 = (char)kvg__tok_ucd_age15[i + 2];
        if (c0 != gc[0] || (gl == 2 && c1 != gc[1])) continue;
        runs++;
        if (o && !*rc)
            *rc = kvg_buf_printf(o, "\\x{%X}-\\x{%X}", kvg__tok_ucd_age15[i],
                                 kvg__tok_ucd_age15[i + 1]);
    }
    return runs;
}

/* The property escape after "\p" / "\P" at p[i] ("{Name}", "{^Name}" or one
 * letter): copied, and widened with the Unicode 15.0 additions when it names
 * a general category. Returns the bytes consumed, or a negative code. */
static long prop(const char *p, size_t n, size_t i, char letter, int in_class, int widen,
                 struct kvg_buf *o, char *err, size_t errlen)
{
    const char *name;
    size_t nl, used;
    if (i < n && p[i] == '{') {
        const char *close = memchr(p + i, '}', n - i);
        if (!close) return unsupported(err, errlen, "\\p without a closing brace");
        name = p + i + 1;
        nl = (size_t)(close - name);
        used = nl + 2;
    } else if (i < n) {
        name = p + i;
        nl = 1;
        used = 1;
    } else
        return unsupported(err, errlen, "\\p at the end");
    int neg = letter == 'P', rc = 0;
    if (nl > 0 && name[0] == '^') {
        neg = !neg;
        name++;
        nl--;
    }
    int gc = (nl == 1 || (nl == 2 && name[1] >= 'a' && name[1] <= 'z')) && name[0] &&
             strchr("LMNPSZC", name[0]);
    if (!widen || !gc || !age15_ranges(name, nl, NULL, &rc)) {
        char bs[2] = {'\\', letter};
        rc = kvg_buf_append(o, bs, 2);
        if (!rc) rc = kvg_buf_append(o, p + i, used);
        return rc ? rc : (long)used;
    }
    if (neg && in_class) return unsupported(err, errlen, "negated \\p{..} inside a class");
    if (!in_class) rc = kvg_buf_append(o, neg ? "[^" : "[", neg ? 2 : 1);
    if (!rc) rc = kvg_buf_printf(o, "\\p{%.*s}", (int)nl, name);
    age15_ranges(name, nl, o, &rc);
    if (!rc && !in_class) rc = kvg_buf_append(o, "]", 1);
    return rc ? rc : (long)used;
}

static int translate(const char *p, size_t n, int widen, struct kvg_buf *o, char *err,
                     size_t errlen)
{
    int in_class = 0, rc = 0;
    size_t i = 0;
    while (i < n && !rc) {
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            char e = p[i + 1];
            i += 2;
            if (in_class == 2) in_class = 1;
            switch (e) {
            case 's':
                rc = put(o, in_class ? WS_RANGES : "[" WS_RANGES "]");
                break;
            case 'S':
                if (in_class) return unsupported(err, errlen, "\\S inside a class");
                rc = put(o, "[^" WS_RANGES "]");
                break;
            case 'h':
                rc = put(o, in_class ? "0-9a-fA-F" : "[0-9a-fA-F]");
                break;
            case 'H':
                if (in_class) return unsupported(err, errlen, "\\H inside a class");
                rc = put(o, "[^0-9a-fA-F]");
                break;
            case 'v':
                rc = put(o, "\\x{0B}");
                break;
            case 'p':
            case 'P': {
                long used = prop(p, n, i, e, in_class, widen, o, err, errlen);
                if (used < 0) return (int)used;
                i += (size_t)used;
                break;
            }
            case 'w':
            case 'W':
            case 'b':
            case 'B':
            case 'R':
            case 'X':
            case 'N':
            case 'O':
            case 'y':
            case 'Y': {
                char what[3] = {'\\', e, 0};
                return unsupported(err, errlen, what);
            }
            case 'u': {
                size_t k = 0;
                while (k < 4 && i + k < n && strchr("0123456789abcdefABCDEF", p[i + k]) && p[i + k])
                    k++;
                if (k != 4) return unsupported(err, errlen, "\\u without 4 hex digits");
                char tmp[16];
                snprintf(tmp, sizeof tmp, "\\x{%.4s}", p + i);
                rc = put(o, tmp);
                i += 4;
                break;
            }
            default: {
                /* Same meaning in both: copy the escape (and a multi-byte char). */
                char tmp[2] = {'\\', e};
                rc = kvg_buf_append(o, tmp, 2);
                size_t l = kvg_utf8_len_fast((uint8_t)e, 1);
                if (!rc && l > 1) {
                    rc = kvg_buf_append(o, p + i, l - 1);
                    i += l - 1;
                }
            }
            }
            continue;
        }
        if (in_class) {
            if (c == '[') {
                if (i + 1 < n && p[i + 1] == ':') return unsupported(err, errlen, "[:posix:]");
                return unsupported(err, errlen, "nested class");
            }
            if (c == '&' && i + 1 < n && p[i + 1] == '&')
                return unsupported(err, errlen, "class intersection &&");
            if (c == ']' && !(in_class == 2))
                in_class = 0;
            else
                in_class = 1;
            rc = kvg_buf_append(o, &c, 1);
            i++;
            continue;
        }
        if (c == '[') {
            /* in_class 2: just opened; a ']' right away (or after '^') is literal. */
            rc = kvg_buf_append(o, &c, 1);
            i++;
            if (i < n && p[i] == '^') {
                rc = rc ? rc : kvg_buf_append(o, "^", 1);
                i++;
            }
            in_class = 2;
            continue;
        }
        if (c == '(' && i + 2 < n && p[i + 1] == '?' && p[i + 2] && strchr("imx-", p[i + 2])) {
            size_t k = i + 2;
            while (k < n && strchr("imx-", p[k]) && p[k]) k++;
            if (k < n && (p[k] == ':' || p[k] == ')')) {
                rc = put(o, "(?");
                for (size_t j = i + 2; j < k && !rc; j++)
                    rc = kvg_buf_append(o, p[j] == 'm' ? "s" : &p[j], 1);
                i = k;
                continue;
            }
        }
        if (c == '{' && i + 1 < n && p[i + 1] == ',') {
            size_t k = i + 2;
            while (k < n && p[k] >= '0' && p[k] <= '9') k++;
            if (k > i + 2 && k < n && p[k] == '}') {
                rc = put(o, "{0");
                i++;
                continue;
            }
        }
        rc = kvg_buf_append(o, &c, 1);
        i++;
    }
    return rc;
}

static int compile_one(const char *pat, size_t n, const struct kvg_buf *b, int literal,
                       pcre2_code **code, int *jit, char *err, size_t errlen)
{
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc) return -ENOMEM;
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    /* PCRE2_LITERAL admits no UCP (nor needs it). */
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE);
    int ec;
    PCRE2_SIZE eo;
    *code = pcre2_compile((PCRE2_SPTR)(b->data ? b->data : ""), b->len, opts, &ec, &eo, cc);
    pcre2_compile_context_free(cc);
    if (!*code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return kvg_err_set(err, errlen, KVG_EUNSUPP,
                           "unsupported component: Split regex /%.*s/: %s at offset %zu",
                           (int)(n > 200 ? 200 : n), pat, (const char *)msg, (size_t)eo);
    }
    /* Without JIT (unsupported platform) the interpreter gives the same matches. */
    *jit = pcre2_jit_compile(*code, PCRE2_JIT_COMPLETE) == 0;
    return 0;
}

int kvg__tok_regex_compile(const char *pat, size_t n, int literal, struct kvg_tok_regex **out,
                           char *err, size_t errlen)
{
    *out = NULL;
    struct kvg_buf b[2];
    kvg_buf_init(&b[0], 1 << 20);
    kvg_buf_init(&b[1], 1 << 20);
    struct kvg_tok_regex *re = calloc(1, sizeof *re);
    int rc = re ? 0 : -ENOMEM;
    if (!rc && literal)
        rc = kvg_buf_append(&b[0], pat, n);
    else if (!rc)
        rc = translate(pat, n, 0, &b[0], err, errlen);
    /* The widened variant only when Unicode 15.0 additions change it. */
    if (!rc && !literal) rc = translate(pat, n, 1, &b[1], err, errlen);
    int two = !rc && !literal && (b[1].len != b[0].len || memcmp(b[1].data, b[0].data, b[0].len));
    if (!rc) rc = compile_one(pat, n, &b[0], literal, &re->code[0], &re->jit[0], err, errlen);
    if (!rc && two)
        rc = compile_one(pat, n, &b[1], literal, &re->code[1], &re->jit[1], err, errlen);
    kvg_buf_free(&b[0]);
    kvg_buf_free(&b[1]);
    if (rc) {
        kvg__tok_regex_free(re);
        return rc;
    }
    *out = re;
    return 0;
}

void kvg__tok_regex_free(struct kvg_tok_regex *re)
{
    if (!re) return;
    pcre2_code_free(re->code[0]);
    pcre2_code_free(re->code[1]);
    free(re);
}

int kvg__tok_regex_wide(const struct kvg_tok_regex *re, const char *s, size_t n)
{
    return re->code[1] && kvg__tok_unicode_has_age15(s, n);
}

static int match_at(const struct kvg_tok_regex *re, int wide, pcre2_match_data *md, const char *s,
                    size_t n, size_t start)
{
    const pcre2_code *code = re->code[wide];
    int rc = PCRE2_ERROR_JIT_STACKLIMIT;
    if (re->jit[wide]) rc = pcre2_jit_match(code, (PCRE2_SPTR)s, n, start, 0, md, NULL);
    /* The JIT's default stack is small; the interpreter keeps its frames on
     * the heap (bounded by PCRE2's heap limit). */
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc =
            pcre2_match(code, (PCRE2_SPTR)s, n, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, NULL);
    return rc;
}

int kvg__tok_regex_next(const struct kvg_tok_regex *re, int wide, pcre2_match_data *md,
                        const char *s, size_t n, size_t *last_end, size_t *last_match_end,
                        size_t *ms, size_t *me)
{
    for (;;) {
        if (*last_end > n) return 0;
        int rc = match_at(re, wide, md, s, n, *last_end);
        if (rc == PCRE2_ERROR_NOMATCH) return 0;
        if (rc < 0) {
            if (rc == PCRE2_ERROR_NOMEMORY) return -ENOMEM;
            return KVG_ETOOBIG; /* match, depth or heap limit: pathological input */
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t st = ov[0], e = ov[1];
        if (e < st) e = st; /* \K tricks; never in tokenizer patterns */
        /* No empty match right where the previous match ended: step one char. */
        if (e == st && *last_match_end == e) {
            *last_end += *last_end < n ? kvg_utf8_len_fast((uint8_t)s[*last_end], 1) : 1;
            continue;
        }
        *last_end = e;
        *last_match_end = e;
        *ms = st;
        *me = e;
        return 1;
    }
}
