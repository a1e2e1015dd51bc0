/* String and object methods (`s.startswith(...)`, `d.items()`), tests
 * (`is defined`), slicing and the comparisons sorting uses, each with the
 * reference engine's JavaScript behaviour: strip()/lstrip()/rstrip() ignore
 * their argument and trim all JS whitespace, split() follows Python's rules as
 * reimplemented there, indexes and lengths count UTF-16 code units while
 * slices count code points. Case mapping is implemented for ASCII and for
 * scripts without case; other text is KVG_EUNSUPP rather than a guess. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/err.h"
#include "jinja/jinja_int.h"

static uint32_t cp_at(const char *s, size_t n, size_t *len)
{
    uint32_t cp;
    *len = kvg_utf8_decode_fast(s, n, &cp);
    return cp;
}

/* Code points known to have no case mapping (so JS toUpperCase and
 * toLowerCase leave them alone): CJK, kana, Hangul, symbols, emoji. */
static int caseless(uint32_t c)
{
    return (c >= 0x80 && c <= 0xBF && c != 0xB5) || (c >= 0x2000 && c <= 0x20CF) ||
           (c >= 0x2190 && c <= 0x23FF) || (c >= 0x2500 && c <= 0x27BF) ||
           (c >= 0x2E80 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
           (c >= 0xFF00 && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40) ||
           (c >= 0xFF5B && c <= 0xFFEF) || (c >= 0x1F000 && c <= 0x1FAFF) ||
           (c >= 0x20000 && c <= 0x3FFFF);
}

static int case_check(struct jrender *r, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t l;
        uint32_t c = cp_at(s + i, n - i, &l);
        if (c >= 0x80 && !caseless(c))
            return kvg__jinja_run_fail(r, KVG_EUNSUPP,
                                       "unsupported: Unicode case mapping of U+%04X", c);
        i += l;
    }
    return 0;
}

static int js_str_upper_lower(struct jrender *r, struct jv s, int upper, struct jv *out)
{
    int rc = case_check(r, s.u.s, s.n);
    if (rc) return rc;
    char *d = kvg__jinja_arena_alloc(&r->arena, s.n + 1);
    if (!d) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    for (size_t i = 0; i < s.n; i++) {
        char c = s.u.s[i];
        if (upper && c >= 'a' && c <= 'z') c = (char)(c - 32);
        if (!upper && c >= 'A' && c <= 'Z') c = (char)(c + 32);
        d[i] = c;
    }
    *out = jv_str(d, s.n);
    return 0;
}

/* JS `a < b` on strings: UTF-16 code unit order. */
static int js_str_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i = 0, j = 0;
    while (i < an && j < bn) {
        size_t la, lb;
        uint32_t ca = cp_at(a + i, an - i, &la), cb = cp_at(b + j, bn - j, &lb);
        if (ca != cb) {
            uint32_t ua = ca >= 0x10000 ? 0xD800 + ((ca - 0x10000) >> 10) : ca;
            uint32_t ub = cb >= 0x10000 ? 0xD800 + ((cb - 0x10000) >> 10) : cb;
            if (ua != ub) return ua < ub ? -1 : 1;
            ua = 0xDC00 + ((ca - 0x10000) & 0x3FF);
            ub = 0xDC00 + ((cb - 0x10000) & 0x3FF);
            return ua < ub ? -1 : 1;
        }
        i += la;
        j += lb;
    }
    return i < an ? 1 : j < bn ? -1 : 0;
}

/* The reference's compareRuntimeValues. */
int kvg__jinja_value_compare(struct jrender *r, struct jv a, struct jv b, int case_sensitive,
                             int *res)
{
    a = jv_norm(r, a);
    b = jv_norm(r, b);
    if (r->err) return r->err;
    if (a.t == JV_NULL || b.t == JV_NULL || a.t == JV_UNDEF || b.t == JV_UNDEF) {
        if (a.t == b.t) {
            *res = 0;
            return 0;
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot compare %s with %s",
                                   kvg__jinja_value_type_name(a), kvg__jinja_value_type_name(b));
    }
    int an = jv_is_num(a) || a.t == JV_BOOL, bn = jv_is_num(b) || b.t == JV_BOOL;
    if (an && bn) {
        double x = a.t == JV_BOOL ? a.u.b : a.u.d, y = b.t == JV_BOOL ? b.u.b : b.u.d;
        *res = x < y ? -1 : x > y ? 1 : 0;
        return 0;
    }
    if (a.t != b.t)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot compare different types: %s and %s",
                                   kvg__jinja_value_type_name(a), kvg__jinja_value_type_name(b));
    if (a.t != JV_STR)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot compare type: %s",
                                   kvg__jinja_value_type_name(a));
    int rc;
    if (!case_sensitive &&
        ((rc = js_str_upper_lower(r, a, 0, &a)) || (rc = js_str_upper_lower(r, b, 0, &b))))
        return rc;
    *res = js_str_cmp(a.u.s, a.n, b.u.s, b.n);
    return 0;
}

/* ---- slicing ---- */

int kvg__jinja_str_slice(struct jrender *r, struct jv obj, struct jv start, struct jv stop,
                         struct jv step, struct jv *out)
{
    if (!jv_is_arr(obj) && obj.t != JV_STR)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Slice object must be an array or string");
    if ((start.t != JV_INT && start.t != JV_UNDEF) || (stop.t != JV_INT && stop.t != JV_UNDEF) ||
        (step.t != JV_INT && step.t != JV_UNDEF))
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "Slice start, stop and step must be numeric or undefined");
    /* code point offsets of a string, so both cases index an array */
    size_t len;
    uint32_t *off = NULL;
    if (obj.t == JV_STR) {
        off = kvg__jinja_arena_alloc(&r->arena, (obj.n + 1) * sizeof(*off));
        if (!off)
            return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
        len = 0;
        for (size_t i = 0; i < obj.n; i += kvg_utf8_decode_fast(obj.u.s + i, obj.n - i, NULL))
            off[len++] = (uint32_t)i;
        off[len] = obj.n;
    } else {
        len = obj.u.a->n;
    }
    double st = step.t == JV_INT ? step.u.d : 1;
    double dir = st > 0 ? 1 : st < 0 ? -1 : 0, a, b, L = (double)len;
    if (dir >= 0) {
        a = start.t == JV_UNDEF ? 0 : start.u.d;
        a = a < 0 ? fmax(L + a, 0) : fmin(a, L);
        b = stop.t == JV_UNDEF ? L : stop.u.d;
        b = b < 0 ? fmax(L + b, 0) : fmin(b, L);
    } else {
        a = start.t == JV_UNDEF ? L - 1 : start.u.d;
        a = a < 0 ? fmax(L + a, -1) : fmin(a, L - 1);
        b = stop.t == JV_UNDEF ? -1 : stop.u.d;
        b = b < -1 ? fmax(L + b, -1) : fmin(b, L - 1);
    }
    if (obj.t == JV_STR) {
        struct kvg_buf buf;
        kvg_buf_init(&buf, 0);
        int rc = 0;
        for (double i = a; dir * i < dir * b && !rc; i += st) {
            size_t k = (size_t)i;
            rc = kvg_buf_append(&buf, obj.u.s + off[k], off[k + 1] - off[k]);
        }
        char *d = rc ? NULL : kvg__jinja_arena_strdup(&r->arena, buf.data ? buf.data : "", buf.len);
        if (d) *out = jv_str(d, buf.len);
        kvg_buf_free(&buf);
        return d ? 0 : kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    }
    struct jarr *res = kvg__jinja_arr_new(r, 0);
    if (!res) return r->err;
    for (double i = a; dir * i < dir * b; i += st) {
        int rc = kvg__jinja_arr_push(r, res, obj.u.a->v[(size_t)i]);
        if (rc) return rc;
    }
    out->t = JV_ARR;
    out->u.a = res;
    return 0;
}

/* ---- tests ---- */

static const char *g_tests[] = {"boolean",  "callable",  "odd",      "even",   "false",
                                "true",     "none",      "string",   "number", "integer",
                                "iterable", "mapping",   "sequence", "lower",  "upper",
                                "defined",  "undefined", "equalto",  "eq"};
enum {
    T_BOOLEAN,
    T_CALLABLE,
    T_ODD,
    T_EVEN,
    T_FALSE,
    T_TRUE,
    T_NONE,
    T_STRING,
    T_NUMBER,
    T_INTEGER,
    T_ITERABLE,
    T_MAPPING,
    T_SEQUENCE,
    T_LOWER,
    T_UPPER,
    T_DEFINED,
    T_UNDEFINED,
    T_EQUALTO,
    T_EQ,
    T_COUNT
};

int kvg__jinja_test_id(const char *name, size_t len)
{
    for (int i = 0; i < T_COUNT; i++)
        if (strlen(g_tests[i]) == len && !memcmp(g_tests[i], name, len)) return i;
    return JTEST_UNKNOWN;
}

int kvg__jinja_test_apply(struct jrender *r, int id, const char *name, size_t nlen, struct jv v,
                          struct jv *extra, int *res)
{
    int rc;
    v = jv_norm(r, v);
    if (r->err) return r->err;
    switch (id) {
    case T_BOOLEAN:
        *res = v.t == JV_BOOL;
        return 0;
    case T_CALLABLE:
        *res = v.t == JV_FUNC;
        return 0;
    case T_ODD:
    case T_EVEN:
        if (v.t != JV_INT)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "cannot %s on %s", g_tests[id],
                                       kvg__jinja_value_type_name(v));
        *res = (fmod(v.u.d, 2) != 0) == (id == T_ODD);
        return 0;
    case T_FALSE:
    case T_TRUE:
        *res = v.t == JV_BOOL && v.u.b == (id == T_TRUE);
        return 0;
    case T_NONE:
        *res = v.t == JV_NULL;
        return 0;
    case T_STRING:
        *res = v.t == JV_STR;
        return 0;
    case T_NUMBER:
        *res = jv_is_num(v);
        return 0;
    case T_INTEGER:
        *res = v.t == JV_INT;
        return 0;
    case T_ITERABLE:
        *res = v.t == JV_ARR || v.t == JV_STR; /* a tuple's type name differs: not iterable */
        return 0;
    case T_MAPPING:
        *res = jv_is_obj(v);
        return 0;
    case T_SEQUENCE:
        *res = jv_is_arr(v) || jv_is_obj(v) || v.t == JV_STR;
        return 0;
    case T_LOWER:
    case T_UPPER: {
        *res = 0;
        if (v.t != JV_STR) return 0;
        struct jv m;
        if ((rc = js_str_upper_lower(r, v, id == T_UPPER, &m))) return rc;
        *res = !memcmp(m.u.s, v.u.s, v.n);
        return 0;
    }
    case T_DEFINED:
        *res = v.t != JV_UNDEF;
        return 0;
    case T_UNDEFINED:
        *res = v.t == JV_UNDEF;
        return 0;
    case T_EQUALTO:
    case T_EQ:
        if (!extra)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot read properties of undefined");
        *res = kvg__jinja_value_strict_eq(v, jv_norm(r, *extra));
        return 0;
    default:
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown test: %.*s", (int)nlen, name);
    }
}

/* ---- builtin attributes and methods ---- */

#define M(s, id)                                                                                   \
    {                                                                                              \
        s, sizeof(s) - 1, id                                                                       \
    }
static const struct {
    const char *name;
    uint8_t len, id;
} g_str_methods[] = {M("upper", JM_UPPER),           M("lower", JM_LOWER),
                     M("strip", JM_STRIP),           M("title", JM_TITLE),
                     M("capitalize", JM_CAPITALIZE), M("rstrip", JM_RSTRIP),
                     M("lstrip", JM_LSTRIP),         M("startswith", JM_STARTSWITH),
                     M("endswith", JM_ENDSWITH),     M("split", JM_SPLIT),
                     M("replace", JM_REPLACE)},
  g_obj_methods[] = {M("get", JM_GET), M("items", JM_ITEMS), M("keys", JM_KEYS),
                     M("values", JM_VALUES), M("dictsort", JM_DICTSORT)};
#undef M

int kvg__jinja_builtin_attr(struct jrender *r, struct jv self, const char *name, size_t nlen,
                            struct jv *out)
{
    int method = JM_NONE;
    if ((self.t == JV_STR || jv_is_arr(self)) && nlen == 6 && !memcmp(name, "length", 6)) {
        *out = jv_int(self.t == JV_STR ? (double)kvg__jinja_str_utf16_len(self.u.s, self.n)
                                       : self.u.a->n);
        return 1;
    }
    if (self.t == JV_STR) {
        for (size_t i = 0; i < sizeof(g_str_methods) / sizeof(g_str_methods[0]); i++)
            if (g_str_methods[i].len == nlen && !memcmp(g_str_methods[i].name, name, nlen))
                method = g_str_methods[i].id;
    } else if (jv_is_obj(self)) {
        for (size_t i = 0; i < sizeof(g_obj_methods) / sizeof(g_obj_methods[0]); i++)
            if (g_obj_methods[i].len == nlen && !memcmp(g_obj_methods[i].name, name, nlen))
                method = g_obj_methods[i].id;
    }
    if (method == JM_NONE) return 0;
    struct jfunc *f = kvg__jinja_arena_alloc(&r->arena, sizeof(*f));
    if (!f) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    memset(f, 0, sizeof(*f));
    f->kind = JF_METHOD;
    f->method = (uint8_t)method;
    f->self = self;
    out->t = JV_FUNC;
    out->u.f = f;
    return 1;
}

static int is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int affix(struct jrender *r, struct jv self, struct jv *args, size_t n, int end,
                 struct jv *out)
{
    const char *what = end ? "endswith" : "startswith";
    if (!n)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "%s() requires at least one argument", what);
    struct jv p = args[0];
    size_t cnt = p.t == JV_STR ? 1 : jv_is_arr(p) ? p.u.a->n : 0;
    if (p.t != JV_STR && !jv_is_arr(p))
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "%s() argument must be a string or tuple of strings", what);
    for (size_t i = 0; i < cnt; i++) {
        struct jv s = p.t == JV_STR ? p : p.u.a->v[i];
        if (s.t != JV_STR)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "%s() tuple elements must be strings",
                                       what);
        if (s.n <= self.n && !memcmp(end ? self.u.s + self.n - s.n : self.u.s, s.u.s, s.n)) {
            *out = jv_bool(1);
            return 0;
        }
    }
    *out = jv_bool(0);
    return 0;
}

static int push_str(struct jrender *r, struct jarr *a, const char *s, size_t n)
{
    return kvg__jinja_arr_push(r, a, jv_str(s, n));
}

static int str_split(struct jrender *r, struct jv self, struct jv *args, size_t n, struct jv *out)
{
    struct jv sep = n > 0 ? args[0] : jv_null(), mx = n > 1 ? args[1] : jv_int(-1);
    if (sep.t != JV_STR && sep.t != JV_NULL)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "sep argument must be a string or null");
    if (mx.t != JV_INT)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "maxsplit argument must be a number");
    double maxsplit = mx.u.d;
    struct jarr *res = kvg__jinja_arr_new(r, 4);
    int rc;
    if (!res) return r->err;
    if (sep.t == JV_NULL) {
        const char *s = self.u.s, *e = self.u.s + self.n;
        size_t l = self.n;
        kvg__jinja_str_trim(&s, &l, 1, 0);
        while (s < e) {
            const char *w = s;
            size_t k;
            while (w < e && !kvg__jinja_str_ws_len(w, e))
                w += kvg_utf8_decode_fast(w, (size_t)(e - w), NULL);
            if (maxsplit != -1 && res->n >= maxsplit) { /* the rest, trailing blanks too */
                if ((rc = push_str(r, res, s, (size_t)(e - s)))) return rc;
                break;
            }
            if ((rc = push_str(r, res, s, (size_t)(w - s)))) return rc;
            s = w;
            while (s < e && (k = kvg__jinja_str_ws_len(s, e)) > 0) s += k;
        }
    } else {
        if (!sep.n) return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "empty separator");
        const char *s = self.u.s, *e = self.u.s + self.n, *q;
        while ((q = memmem(s, (size_t)(e - s), sep.u.s, sep.n)) != NULL) {
            if ((rc = push_str(r, res, s, (size_t)(q - s)))) return rc;
            s = q + sep.n;
        }
        if ((rc = push_str(r, res, s, (size_t)(e - s)))) return rc;
        if (maxsplit != -1 && res->n > maxsplit) {
            /* result.push(result.splice(maxsplit).join(sep)) */
            double k = maxsplit < 0 ? fmax(res->n + maxsplit, 0) : maxsplit;
            size_t from = (size_t)k;
            const char *st = res->v[from].u.s;
            const struct jv *last = &res->v[res->n - 1];
            size_t jl = (size_t)(last->u.s + last->n - st);
            res->n = (uint32_t)from;
            if ((rc = push_str(r, res, st, jl))) return rc;
        }
    }
    out->t = JV_ARR;
    out->u.a = res;
    return 0;
}

static int js_replace(struct jrender *r, struct jv self, struct jv old, struct jv nw,
                      struct jv count, struct jv *out)
{
    if (count.t == JV_INT && count.u.d == 0) {
        *out = self;
        return 0;
    }
    double remaining = count.t != JV_INT || count.u.d < 0 ? INFINITY : count.u.d;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int rc = 0;
    const char *s = self.u.s, *e = s + self.n;
    if (!old.n) { /* an empty pattern matches at every code point boundary */
        for (;;) {
            if (remaining > 0) {
                rc |= kvg_buf_append(&b, nw.u.s, nw.n);
                remaining--;
            }
            if (s >= e) break;
            size_t l = kvg_utf8_decode_fast(s, (size_t)(e - s), NULL);
            rc |= kvg_buf_append(&b, s, l);
            s += l;
        }
    } else {
        const char *q;
        while (remaining > 0 && (q = memmem(s, (size_t)(e - s), old.u.s, old.n)) != NULL) {
            rc |= kvg_buf_append(&b, s, (size_t)(q - s));
            rc |= kvg_buf_append(&b, nw.u.s, nw.n);
            s = q + old.n;
            remaining--;
        }
        rc |= kvg_buf_append(&b, s, (size_t)(e - s));
    }
    char *d = rc ? NULL : kvg__jinja_arena_strdup(&r->arena, b.data ? b.data : "", b.len);
    if (d) *out = jv_str(d, b.len);
    kvg_buf_free(&b);
    return d ? 0 : kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
}

static int obj_pairs(struct jrender *r, const struct jobj *o, int what, struct jv *out)
{
    struct jarr *a = kvg__jinja_arr_new(r, o->n);
    if (!a) return r->err;
    for (uint32_t i = 0; i < o->n; i++) {
        struct jv k = jv_str(o->kv[i].k, o->kv[i].klen);
        if (what == JM_KEYS)
            a->v[i] = k;
        else if (what == JM_VALUES)
            a->v[i] = o->kv[i].v;
        else {
            struct jarr *p = kvg__jinja_arr_new(r, 2);
            if (!p) return r->err;
            p->v[0] = k;
            p->v[1] = o->kv[i].v;
            p->n = 2;
            a->v[i].t = JV_ARR;
            a->v[i].u.a = p;
        }
        a->n++;
    }
    out->t = JV_ARR;
    out->u.a = a;
    return 0;
}

static int pair_key(struct jrender *r, struct jv v, void *ctx, struct jv *out)
{
    (void)r;
    *out = v.u.a->v[*(int *)ctx];
    return 0;
}

int kvg__jinja_method_call(struct jrender *r, int method, struct jv self, struct jv *args, size_t n,
                           struct jv *out)
{
    int rc;
    const char *s = self.u.s;
    size_t l = self.n;
    switch (method) {
    case JM_UPPER:
    case JM_LOWER:
        return js_str_upper_lower(r, self, method == JM_UPPER, out);
    case JM_STRIP:
    case JM_LSTRIP:
    case JM_RSTRIP: /* the reference ignores the characters argument */
        kvg__jinja_str_trim(&s, &l, method != JM_RSTRIP, method != JM_LSTRIP);
        *out = jv_str(s, l);
        return 0;
    case JM_TITLE:
    case JM_CAPITALIZE: {
        char *d = kvg__jinja_arena_alloc(&r->arena, l + 1);
        if (!d) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
        memcpy(d, s, l);
        if (method == JM_TITLE) {
            for (size_t i = 0; i < l; i++)
                if (is_word(d[i]) && (i == 0 || !is_word(s[i - 1])) && d[i] >= 'a' && d[i] <= 'z')
                    d[i] = (char)(d[i] - 32);
        } else if (l) {
            size_t cl;
            uint32_t c = cp_at(s, l, &cl);
            if (c >= 0x80 && c < 0x10000 && !caseless(c))
                return kvg__jinja_run_fail(r, KVG_EUNSUPP,
                                           "unsupported: Unicode case mapping of U+%04X", c);
            if (c >= 'a' && c <= 'z') d[0] = (char)(d[0] - 32);
        }
        *out = jv_str(d, l);
        return 0;
    }
    case JM_STARTSWITH:
    case JM_ENDSWITH:
        return affix(r, self, args, n, method == JM_ENDSWITH, out);
    case JM_SPLIT:
        return str_split(r, self, args, n, out);
    case JM_REPLACE: {
        if (n < 2)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "replace() requires at least two arguments");
        if (args[0].t != JV_STR || args[1].t != JV_STR)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "replace() arguments must be strings");
        struct jv count = jv_null();
        if (n > 2) {
            if (args[2].t == JV_KWARGS) {
                const struct jv *c = kvg__jinja_obj_get(args[2].u.o, "count", 5);
                count = c ? *c : jv_null();
            } else {
                count = args[2];
            }
        }
        if (count.t != JV_INT && count.t != JV_NULL)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "replace() count argument must be a number or null");
        return js_replace(r, self, args[0], args[1], count, out);
    }
    case JM_GET: {
        if (!n || args[0].t != JV_STR)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Object key must be a string: got %s",
                                       n ? kvg__jinja_value_type_name(args[0]) : "undefined");
        const struct jv *v = kvg__jinja_obj_get(self.u.o, args[0].u.s, args[0].n);
        *out = v ? *v : n > 1 ? args[1] : jv_null();
        return 0;
    }
    case JM_ITEMS:
    case JM_KEYS:
    case JM_VALUES:
        return obj_pairs(r, self.u.o, method, out);
    case JM_DICTSORT: {
        const struct jobj *kw = NULL;
        struct jv pos[3];
        size_t np = 0;
        for (size_t i = 0; i < n; i++) {
            if (args[i].t == JV_KWARGS)
                kw = args[i].u.o;
            else if (np < 3)
                pos[np++] = args[i];
        }
        const struct jv *k;
        struct jv cs = np > 0                                                       ? pos[0]
                       : (kw && (k = kvg__jinja_obj_get(kw, "case_sensitive", 14))) ? *k
                                                                                    : jv_bool(0);
        struct jv by = np > 1                                          ? pos[1]
                       : (kw && (k = kvg__jinja_obj_get(kw, "by", 2))) ? *k
                                                                       : jv_str("key", 3);
        struct jv rev = np > 2                                               ? pos[2]
                        : (kw && (k = kvg__jinja_obj_get(kw, "reverse", 7))) ? *k
                                                                             : jv_bool(0);
        if (cs.t != JV_BOOL)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "case_sensitive must be a boolean");
        if (by.t != JV_STR) return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "by must be a string");
        int idx = by.n == 3 && !memcmp(by.u.s, "key", 3)     ? 0
                  : by.n == 5 && !memcmp(by.u.s, "value", 5) ? 1
                                                             : -1;
        if (idx < 0)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "by must be either 'key' or 'value'");
        if (rev.t != JV_BOOL)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "reverse must be a boolean");
        if ((rc = obj_pairs(r, self.u.o, JM_ITEMS, out))) return rc;
        return kvg__jinja_value_sort(r, out->u.a->v, out->u.a->n, pair_key, &idx, cs.u.b, rev.u.b);
    }
    default:
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "unknown method");
    }
}
