/* Filters (`x | tojson`, `x | selectattr("role", "equalto", "user")`), with
 * the reference engine's dispatch: the filter name is looked up by the
 * operand's type, so the same name may work on a list and fail on a string,
 * and a filter written with parentheses can behave differently from the bare
 * name (`x|float` converts an integer, `x|float()` returns it as is). Sorting
 * is stable like V8's. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "jinja/jinja_int.h"

static const char *g_filters[] = {
    "safe",       "tojson", "list",    "first", "last",  "length", "reverse",    "sort",
    "join",       "string", "unique",  "upper", "lower", "title",  "capitalize", "trim",
    "indent",     "int",    "float",   "abs",   "items", "bool",   "default",    "selectattr",
    "rejectattr", "map",    "replace", "get",   "keys",  "values", "dictsort",
};
enum {
    F_SAFE,
    F_TOJSON,
    F_LIST,
    F_FIRST,
    F_LAST,
    F_LENGTH,
    F_REVERSE,
    F_SORT,
    F_JOIN,
    F_STRING,
    F_UNIQUE,
    F_UPPER,
    F_LOWER,
    F_TITLE,
    F_CAPITALIZE,
    F_TRIM,
    F_INDENT,
    F_INT,
    F_FLOAT,
    F_ABS,
    F_ITEMS,
    F_BOOL,
    F_DEFAULT,
    F_SELECTATTR,
    F_REJECTATTR,
    F_MAP,
    F_REPLACE,
    F_GET,
    F_KEYS,
    F_VALUES,
    F_DICTSORT,
    F_COUNT
};

int kvg__jinja_filter_id(const char *name, size_t len)
{
    for (int i = 0; i < F_COUNT; i++)
        if (strlen(g_filters[i]) == len && !memcmp(g_filters[i], name, len)) return i;
    return JFILTER_UNKNOWN;
}

/* ---- sorting ---- */

int kvg__jinja_value_sort(struct jrender *r, struct jv *v, size_t n, jv_key_fn key, void *ctx,
                          int case_sensitive, int reverse)
{
    if (n < 2) return 0;
    struct jv *tmp = kvg__jinja_arena_alloc(&r->arena, n * sizeof(*tmp));
    if (!tmp) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    /* bottom-up merge sort: stable, and a failing comparison stops it */
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                struct jv ka = v[i], kb = v[j];
                int c, rc;
                if (key && ((rc = key(r, v[i], ctx, &ka)) || (rc = key(r, v[j], ctx, &kb))))
                    return rc;
                if ((rc = kvg__jinja_value_compare(r, ka, kb, case_sensitive, &c))) return rc;
                if (reverse) c = -c;
                tmp[k++] = c <= 0 ? v[i++] : v[j++];
            }
            while (i < mid) tmp[k++] = v[i++];
            while (j < hi) tmp[k++] = v[j++];
        }
        memcpy(v, tmp, n * sizeof(*v));
    }
    return 0;
}

/* The reference's getAttributeValue: "a.b.0" walks objects and arrays. */
static struct jv attr_path(struct jrender *r, struct jv item, const char *path, size_t plen)
{
    const char *p = path, *e = path + plen;
    struct jv v = item;
    for (;;) {
        const char *dot = memchr(p, '.', (size_t)(e - p));
        const char *pe = dot ? dot : e;
        v = jv_norm(r, v);
        if (jv_is_obj(v) || v.t == JV_NS) {
            const struct jv *x = kvg__jinja_obj_get(v.u.o, p, (size_t)(pe - p));
            v = x ? *x : jv_undef();
        } else if (jv_is_arr(v)) {
            /* parseInt(part, 10) */
            const char *q = p;
            size_t l = (size_t)(pe - p);
            kvg__jinja_str_trim(&q, &l, 1, 0);
            int neg = l && (*q == '-' || *q == '+') ? (*q == '-') : 0;
            if (l && (*q == '-' || *q == '+')) q++, l--;
            double idx = 0;
            size_t d = 0;
            while (d < l && q[d] >= '0' && q[d] <= '9') idx = idx * 10 + (q[d++] - '0');
            if (!d || neg || idx >= v.u.a->n) return jv_undef();
            v = v.u.a->v[(size_t)idx];
        } else {
            return jv_undef();
        }
        if (!dot) return v;
        p = dot + 1;
    }
}

struct sort_attr {
    const char *path;
    size_t len;
};

static int sort_key(struct jrender *r, struct jv v, void *ctx, struct jv *out)
{
    const struct sort_attr *a = ctx;
    *out = attr_path(r, v, a->path, a->len);
    return r->err;
}

/* ---- helpers ---- */

/* Moves a buffer's bytes into a string value and frees the buffer. */
static int jstr(struct jrender *r, struct kvg_buf *b, struct jv *out)
{
    size_t len = b->len;
    char *d = kvg__jinja_arena_strdup(&r->arena, b->data ? b->data : "", len);
    kvg_buf_free(b);
    if (!d) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    *out = jv_str(d, len);
    return 0;
}

/* JS truthiness of the underlying value (arrays and maps always true). */
static int raw_truthy(struct jv v)
{
    return v.t >= JV_ARR ? 1 : kvg__jinja_value_truthy(v);
}

/* JS parseInt(s, 10) / parseFloat(s); NAN when nothing parses. */
static double js_parse_num(const char *s, size_t n, int is_float)
{
    kvg__jinja_str_trim(&s, &n, 1, 0);
    char buf[400];
    size_t i = 0, k = 0;
    if (n > sizeof(buf) - 2) n = sizeof(buf) - 2;
    if (i < n && (s[i] == '+' || s[i] == '-')) buf[k++] = s[i++];
    if (is_float && n - i >= 8 && !memcmp(s + i, "Infinity", 8))
        return buf[0] == '-' ? -INFINITY : INFINITY;
    size_t d0 = k;
    while (i < n && s[i] >= '0' && s[i] <= '9') buf[k++] = s[i++];
    size_t intd = k - d0, fracd = 0;
    if (is_float) {
        if (i < n && s[i] == '.') {
            buf[k++] = s[i++];
            while (i < n && s[i] >= '0' && s[i] <= '9') buf[k++] = s[i++], fracd++;
        }
        if (intd + fracd && i < n && (s[i] == 'e' || s[i] == 'E')) {
            size_t save = k, j = i + 1;
            buf[k++] = 'e';
            if (j < n && (s[j] == '+' || s[j] == '-')) buf[k++] = s[j++];
            size_t ed = 0;
            while (j < n && s[j] >= '0' && s[j] <= '9') buf[k++] = s[j++], ed++;
            if (!ed) k = save;
        }
    }
    if (!intd && !fracd) return NAN;
    buf[k] = 0;
    return strtod(buf, NULL);
}

/* Array.prototype.join of the underlying values. */
static int join_values(struct jrender *r, const struct jarr *a, struct jv sep, struct jv *out)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    for (uint32_t i = 0; i < a->n; i++) {
        int rc = 0;
        if (i) rc = kvg_buf_append(&b, sep.u.s, sep.n) ? -ENOMEM : 0;
        struct jv x = a->v[i];
        if (!rc && x.t != JV_UNDEF && x.t != JV_NULL) rc = kvg__jinja_value_print_raw(r, &b, x);
        if (rc) {
            kvg_buf_free(&b);
            return rc < 0 && !r->err ? kvg__jinja_run_fail(r, rc, "out of memory") : r->err;
        }
    }
    return jstr(r, &b, out);
}

static int str_chars(struct jrender *r, struct jv s, struct jarr **out)
{
    struct jarr *a = kvg__jinja_arr_new(r, s.n);
    if (!a) return r->err;
    for (size_t i = 0; i < s.n;) {
        size_t l = kvg_utf8_decode_fast(s.u.s + i, s.n - i, NULL);
        a->v[a->n++] = jv_str(s.u.s + i, l);
        i += l;
    }
    *out = a;
    return 0;
}

static int indent_str(struct jrender *r, struct jv s, double width, int first, int blank,
                      struct jv *out)
{
    if (width < 0) return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Invalid count value: %g", width);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    const char *p = s.u.s, *e = s.u.s + s.n;
    int rc = 0;
    for (size_t line = 0;; line++) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *le = nl ? nl : e;
        if (!((!first && line == 0) || (!blank && le == p)))
            for (double k = 0; k < width && !rc; k++) rc = kvg_buf_append(&b, " ", 1);
        rc |= kvg_buf_append(&b, p, (size_t)(le - p));
        if (!nl) break;
        rc |= kvg_buf_append(&b, "\n", 1);
        p = nl + 1;
    }
    if (rc) {
        kvg_buf_free(&b);
        return kvg__jinja_run_fail(r, -ENOMEM, "out of memory");
    }
    return jstr(r, &b, out);
}

static const struct jv *kwarg(const struct jobj *kw, const char *name)
{
    return kw ? kvg__jinja_obj_get(kw, name, strlen(name)) : NULL;
}

static int tojson_filter(struct jrender *r, struct jv v, const struct jobj *kw, struct jv *out)
{
    struct jjson_opts o = {.undef_as_null = 1};
    const struct jv *x;
    if ((x = kwarg(kw, "indent")) && x->t != JV_NULL) {
        if (x->t != JV_INT)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "If set, indent must be a number");
        if (x->u.d < 0)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Invalid count value: %g", x->u.d);
        o.indent = x->u.d > 4096 ? 4096 : (int)x->u.d;
    }
    if ((x = kwarg(kw, "ensure_ascii"))) {
        if (x->t != JV_BOOL)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "If set, ensure_ascii must be a boolean");
        o.ensure_ascii = x->u.b;
    }
    if ((x = kwarg(kw, "sort_keys"))) {
        if (x->t != JV_BOOL)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "If set, sort_keys must be a boolean");
        if (x->u.b)
            return kvg__jinja_run_fail(r, KVG_EUNSUPP,
                                       "unsupported: tojson(sort_keys=true) (locale collation)");
    }
    if ((x = kwarg(kw, "separators")) && x->t != JV_NULL) {
        if (!jv_is_arr(*x))
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "If set, separators must be a tuple of two strings");
        if (x->u.a->n != 2 || x->u.a->v[0].t != JV_STR || x->u.a->v[1].t != JV_STR)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "separators must be a tuple of two strings");
        o.item_sep = x->u.a->v[0].u.s;
        o.item_len = x->u.a->v[0].n;
        o.key_sep = x->u.a->v[1].u.s;
        o.key_len = x->u.a->v[1].n;
    }
    struct kvg_buf b;
    kvg_buf_init(&b, r->out ? r->out->limit : 0);
    int rc = kvg__jinja_value_tojson(r, &b, v, &o, 0);
    if (rc) {
        kvg_buf_free(&b);
        return rc;
    }
    return jstr(r, &b, out);
}

static int unique(struct jrender *r, const struct jarr *a, struct jv *out)
{
    struct jarr *res = kvg__jinja_arr_new(r, a->n);
    if (!res) return r->err;
    for (uint32_t i = 0; i < a->n; i++) {
        int seen = 0;
        for (uint32_t k = 0; k < res->n && !seen; k++) {
            struct jv x = res->v[k], y = a->v[i];
            seen = kvg__jinja_value_strict_eq(x, y) ||
                   (jv_is_num(x) && jv_is_num(y) && isnan(x.u.d) && isnan(y.u.d));
        }
        if (!seen) res->v[res->n++] = a->v[i];
    }
    out->t = JV_ARR;
    out->u.a = res;
    return 0;
}

static int select_attr(struct jrender *r, struct jscope *env, const struct jarr *a,
                       const struct jnode *f, int select, struct jv *out)
{
    int rc;
    const char *fname = select ? "selectattr" : "rejectattr";
    for (uint32_t i = 0; i < a->n; i++) {
        struct jv x = a->v[i];
        if (!jv_is_obj(x) && x.t != JV_NS && x.t != JV_LOOP)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "`%s` can only be applied to array of objects", fname);
    }
    struct jv args[3];
    size_t n = f->nbody;
    for (size_t i = 0; i < n; i++)
        if (f->list[i]->kind != N_STR)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "arguments of `%s` must be strings",
                                       fname);
    for (size_t i = 0; i < n && i < 3; i++)
        if ((rc = kvg__jinja_eval(r, env, f->list[i], &args[i]))) return rc;
    if (!n) /* attr.value of undefined */
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "Cannot read properties of undefined (reading 'value')");
    int tid =
        n > 1 ? (f->sym != UINT32_MAX ? (int)f->sym : kvg__jinja_test_id(args[1].u.s, args[1].n))
              : -1;
    if (n > 1 && tid == JTEST_UNKNOWN)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown test: %.*s", (int)args[1].n,
                                   args[1].u.s);
    struct jarr *res = kvg__jinja_arr_new(r, a->n);
    if (!res) return r->err;
    for (uint32_t i = 0; i < a->n; i++) {
        struct jv item = jv_norm(r, a->v[i]);
        if (r->err) return r->err;
        const struct jv *v = kvg__jinja_obj_get(item.u.o, args[0].u.s, args[0].n);
        int ok = 0;
        if (v) {
            if (tid < 0)
                ok = kvg__jinja_value_truthy(*v);
            else if ((rc = kvg__jinja_test_apply(r, tid, args[1].u.s, args[1].n, *v,
                                                 n > 2 ? &args[2] : NULL, &ok)))
                return rc;
        }
        if (ok == select) res->v[res->n++] = a->v[i];
    }
    out->t = JV_ARR;
    out->u.a = res;
    return 0;
}

static int eval_filter_args(struct jrender *r, struct jscope *env, const struct jnode *f,
                            struct jarr **pos, struct jobj **kw)
{
    struct jargs a;
    int rc = kvg__jinja_eval_args(r, env, f->list, f->nbody, &a);
    if (rc) return rc;
    *pos = a.pos;
    *kw = a.kw ? a.kw : kvg__jinja_obj_new(r, 0);
    return *kw ? 0 : r->err;
}

/* ---- the bare-name form: x|name ---- */

static int filter_plain(struct jrender *r, struct jv v, int id, const char *name, size_t nl,
                        struct jv *out)
{
    int rc;
    if (jv_is_arr(v)) {
        const struct jarr *a = v.u.a;
        switch (id) {
        case F_LIST:
            *out = v;
            return 0;
        case F_FIRST:
        case F_LAST:
            if (!a->n)
                return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: %s of an empty list",
                                           name);
            *out = a->v[id == F_FIRST ? 0 : a->n - 1];
            return 0;
        case F_LENGTH:
            *out = jv_int(a->n);
            return 0;
        case F_REVERSE: {
            struct jarr *res = kvg__jinja_arr_new(r, a->n);
            if (!res) return r->err;
            for (uint32_t i = 0; i < a->n; i++) res->v[i] = a->v[a->n - 1 - i];
            res->n = a->n;
            out->t = JV_ARR;
            out->u.a = res;
            return 0;
        }
        case F_SORT: {
            struct jarr *res = kvg__jinja_arr_new(r, a->n);
            if (!res) return r->err;
            if (a->n) memcpy(res->v, a->v, a->n * sizeof(struct jv));
            res->n = a->n;
            out->t = JV_ARR;
            out->u.a = res;
            return kvg__jinja_value_sort(r, res->v, res->n, NULL, NULL, 0, 0);
        }
        case F_JOIN:
            return join_values(r, a, jv_str("", 0), out);
        case F_STRING:
            return kvg__jinja_value_to_string(r, v, 0, out);
        case F_UNIQUE:
            return unique(r, a, out);
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown ArrayValue filter: %.*s", (int)nl,
                                   name);
    }
    if (v.t == JV_STR) {
        switch (id) {
        case F_LENGTH:
            *out = jv_int((double)kvg__jinja_str_utf16_len(v.u.s, v.n));
            return 0;
        case F_UPPER:
            return kvg__jinja_method_call(r, JM_UPPER, v, NULL, 0, out);
        case F_LOWER:
            return kvg__jinja_method_call(r, JM_LOWER, v, NULL, 0, out);
        case F_TITLE:
            return kvg__jinja_method_call(r, JM_TITLE, v, NULL, 0, out);
        case F_CAPITALIZE:
            return kvg__jinja_method_call(r, JM_CAPITALIZE, v, NULL, 0, out);
        case F_TRIM:
            return kvg__jinja_method_call(r, JM_STRIP, v, NULL, 0, out);
        case F_INDENT:
            return indent_str(r, v, 4, 0, 0, out);
        case F_JOIN:
        case F_STRING:
            *out = v;
            return 0;
        case F_INT: {
            double d = js_parse_num(v.u.s, v.n, 0);
            *out = jv_int(isnan(d) ? 0 : d);
            return 0;
        }
        case F_FLOAT: {
            double d = js_parse_num(v.u.s, v.n, 1);
            *out = jv_float(isnan(d) ? 0 : d);
            return 0;
        }
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown StringValue filter: %.*s", (int)nl,
                                   name);
    }
    if (jv_is_num(v)) {
        switch (id) {
        case F_ABS:
            *out = v;
            out->u.d = fabs(v.u.d);
            return 0;
        case F_INT:
            *out = jv_int(floor(v.u.d));
            return 0;
        case F_FLOAT:
            *out = jv_float(v.u.d);
            return 0;
        case F_STRING:
            return kvg__jinja_value_to_string(r, v, 0, out);
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown NumericValue filter: %.*s", (int)nl,
                                   name);
    }
    if (jv_is_obj(v)) {
        switch (id) {
        case F_ITEMS:
            return kvg__jinja_method_call(r, JM_ITEMS, v, NULL, 0, out);
        case F_LENGTH:
            *out = jv_int(v.u.o->n);
            return 0;
        }
        struct jv m;
        if ((rc = kvg__jinja_builtin_attr(r, v, name, nl, &m)) < 0) return rc;
        if (rc) return kvg__jinja_method_call(r, m.u.f->method, v, NULL, 0, out);
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown ObjectValue filter: %.*s", (int)nl,
                                   name);
    }
    if (v.t == JV_BOOL) {
        switch (id) {
        case F_BOOL:
            *out = v;
            return 0;
        case F_INT:
            *out = jv_int(v.u.b);
            return 0;
        case F_FLOAT:
            *out = jv_float(v.u.b);
            return 0;
        case F_STRING:
            *out = v.u.b ? jv_str("true", 4) : jv_str("false", 5);
            return 0;
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown BooleanValue filter: %.*s", (int)nl,
                                   name);
    }
    return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot apply filter \"%.*s\" to type: %s",
                               (int)nl, name, kvg__jinja_value_type_name(v));
}

/* ---- the call form: x|name(args) ---- */

static int filter_call(struct jrender *r, struct jscope *env, struct jv v, const struct jnode *f,
                       struct jv *out)
{
    int id = f->op, rc;
    const char *name = f->str;
    size_t nl = f->n;
    struct jarr *pos;
    struct jobj *kw;
    if (id == F_SELECTATTR || id == F_REJECTATTR) {
        v = jv_norm(r, v);
        if (jv_is_arr(v)) return select_attr(r, env, v.u.a, f, id == F_SELECTATTR, out);
    }
    if ((rc = eval_filter_args(r, env, f, &pos, &kw))) return rc;
    struct jv *a = pos->v;
    size_t n = pos->n;
    const struct jv *x;
    if (id == F_TOJSON) return tojson_filter(r, v, kw, out);
    if (id == F_DEFAULT) {
        struct jv dflt = n > 0 ? a[0] : jv_str("", 0);
        struct jv flag = n > 1 ? a[1] : (x = kwarg(kw, "boolean")) ? *x : jv_bool(0);
        if (flag.t != JV_BOOL)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "`default` filter flag must be a boolean");
        *out = v.t == JV_UNDEF || (flag.u.b && !kvg__jinja_value_truthy(v)) ? dflt : v;
        return 0;
    }
    v = jv_norm(r, v);
    if (r->err) return r->err;
    if (id == F_JOIN) {
        struct jarr *items = NULL;
        if (v.t == JV_STR) {
            if ((rc = str_chars(r, v, &items))) return rc;
        } else if (jv_is_arr(v)) {
            items = v.u.a;
        } else {
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot apply filter \"join\" to type: %s",
                                       kvg__jinja_value_type_name(v));
        }
        struct jv sep = n > 0 ? a[0] : (x = kwarg(kw, "separator")) ? *x : jv_str("", 0);
        if (sep.t != JV_STR)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "separator must be a string");
        return join_values(r, items, sep, out);
    }
    if (id == F_INT || id == F_FLOAT) {
        struct jv dflt = n > 0                        ? a[0]
                         : (x = kwarg(kw, "default")) ? *x
                         : id == F_INT                ? jv_int(0)
                                                      : jv_float(0);
        if (v.t == JV_STR) {
            double d = js_parse_num(v.u.s, v.n, id == F_FLOAT);
            *out = isnan(d) ? dflt : id == F_INT ? jv_int(d) : jv_float(d);
        } else if (jv_is_num(v)) {
            *out = v;
        } else if (v.t == JV_BOOL) {
            *out = id == F_INT ? jv_int(v.u.b) : jv_float(v.u.b);
        } else {
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot apply filter \"%.*s\" to type: %s",
                                       (int)nl, name, kvg__jinja_value_type_name(v));
        }
        return 0;
    }
    if (jv_is_arr(v)) {
        if (id == F_SORT) {
            struct jv rev = n > 0 ? a[0] : (x = kwarg(kw, "reverse")) ? *x : jv_bool(0);
            struct jv cs = n > 1 ? a[1] : (x = kwarg(kw, "case_sensitive")) ? *x : jv_bool(0);
            struct jv at = n > 2 ? a[2] : (x = kwarg(kw, "attribute")) ? *x : jv_null();
            if (rev.t != JV_BOOL)
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "reverse must be a boolean");
            if (cs.t != JV_BOOL)
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "case_sensitive must be a boolean");
            if (at.t != JV_STR && at.t != JV_INT && at.t != JV_NULL)
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                           "attribute must be a string, integer, or null");
            struct jarr *res = kvg__jinja_arr_new(r, v.u.a->n);
            if (!res) return r->err;
            if (v.u.a->n) memcpy(res->v, v.u.a->v, v.u.a->n * sizeof(struct jv));
            res->n = v.u.a->n;
            out->t = JV_ARR;
            out->u.a = res;
            struct sort_attr sa;
            char num[40];
            if (at.t == JV_INT) {
                sa.len = kvg__jinja_str_num(at.u.d, num);
                sa.path = kvg__jinja_arena_strdup(&r->arena, num, sa.len);
                if (!sa.path)
                    return kvg__jinja_run_fail(r, KVG_ETOOBIG,
                                               "template render memory limit reached");
            } else if (at.t == JV_STR) {
                sa.path = at.u.s;
                sa.len = at.n;
            }
            return kvg__jinja_value_sort(r, res->v, res->n, at.t == JV_NULL ? NULL : sort_key, &sa,
                                         cs.u.b, rev.u.b);
        }
        if (id == F_MAP) {
            if (!(x = kwarg(kw, "attribute")))
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                           "`map` expressions without `attribute` set are "
                                           "not currently supported.");
            if (x->t != JV_STR)
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "attribute must be a string");
            struct jv attr = *x;
            const struct jv *dflt = kwarg(kw, "default");
            struct jarr *res = kvg__jinja_arr_new(r, v.u.a->n);
            if (!res) return r->err;
            for (uint32_t i = 0; i < v.u.a->n; i++) {
                struct jv item = v.u.a->v[i];
                if (!jv_is_obj(item) && item.t != JV_NS && item.t != JV_LOOP)
                    return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "items in map must be an object");
                struct jv got = attr_path(r, item, attr.u.s, attr.n);
                if (r->err) return r->err;
                res->v[res->n++] = got.t == JV_UNDEF && dflt ? *dflt : got;
            }
            out->t = JV_ARR;
            out->u.a = res;
            return 0;
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown ArrayValue filter: %.*s", (int)nl,
                                   name);
    }
    if (v.t == JV_STR) {
        if (id == F_INDENT) {
            struct jv w = n > 0 ? a[0] : (x = kwarg(kw, "width")) ? *x : jv_int(4);
            struct jv first = n > 1 ? a[1] : (x = kwarg(kw, "first")) ? *x : jv_bool(0);
            struct jv blank = n > 2 ? a[2] : (x = kwarg(kw, "blank")) ? *x : jv_bool(0);
            if (w.t != JV_INT)
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "width must be a number");
            return indent_str(r, v, w.u.d, raw_truthy(first), raw_truthy(blank), out);
        }
        if (id == F_REPLACE) {
            struct jv *args = kvg__jinja_arena_alloc(&r->arena, (n + 1) * sizeof(*args));
            if (!args)
                return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
            if (n) memcpy(args, a, n * sizeof(*args));
            args[n].t = JV_KWARGS;
            args[n].u.o = kw;
            return kvg__jinja_method_call(r, JM_REPLACE, v, args, n + 1, out);
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown StringValue filter: %.*s", (int)nl,
                                   name);
    }
    if (jv_is_obj(v)) {
        struct jv m;
        if ((rc = kvg__jinja_builtin_attr(r, v, name, nl, &m)) < 0) return rc;
        if (rc) {
            if (kw->n) {
                struct jv kv = {.t = JV_KWARGS};
                kv.u.o = kw;
                if ((rc = kvg__jinja_arr_push(r, pos, kv))) return rc;
            }
            return kvg__jinja_method_call(r, m.u.f->method, v, pos->v, pos->n, out);
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown ObjectValue filter: %.*s", (int)nl,
                                   name);
    }
    return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot apply filter \"%.*s\" to type: %s",
                               (int)nl, name, kvg__jinja_value_type_name(v));
}

int kvg__jinja_filter_apply(struct jrender *r, struct jscope *env, struct jv v,
                            const struct jnode *f, struct jv *out)
{
    if (f->b)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown filter: not a name or a call of one");
    if (f->flags & FL_CALL) return filter_call(r, env, v, f, out);
    if (f->op == F_SAFE) {
        *out = v;
        return 0;
    }
    if (f->op == F_TOJSON) return tojson_filter(r, v, NULL, out);
    v = jv_norm(r, v);
    if (r->err) return r->err;
    return filter_plain(r, v, f->op, f->str, f->n, out);
}
