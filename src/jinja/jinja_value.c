/* Values of the template interpreter: the arena they live in, conversion from
 * JSON, and their text forms (what `{{ x }}` prints, what `~` concatenates,
 * tojson), each written to reproduce JavaScript's output exactly: number
 * formatting is Number.prototype.toString's shortest round-trip form, JSON is
 * JSON.stringify's, equality is JS `==` on the reference engine's underlying
 * values. UTF-8 and JS-whitespace helpers are in jinja_utf8.c. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "jinja/jinja_int.h"

/* ---- arena ---- */

struct jarena_chunk {
    struct jarena_chunk *next;
    size_t size;
    char data[];
};

void kvg__jinja_arena_init(struct jarena *a, size_t limit)
{
    memset(a, 0, sizeof(*a));
    a->limit = limit;
}

/* Each thread keeps a few freed chunks for its next render, so that a render
 * of a small prompt makes no malloc at all (at most 4 chunks of up to 64 KiB
 * stay cached per thread). */
#define CACHE_MAX 4
#define CACHE_CHUNK_MAX (64u << 10)
static _Thread_local struct jarena_chunk *g_cache;
static _Thread_local int g_ncache;
static pthread_key_t g_cache_key; /* only for its destructor: frees a thread's cache */
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;

static void cache_release(void *unused)
{
    (void)unused;
    while (g_cache) {
        struct jarena_chunk *n = g_cache->next;
        free(g_cache);
        g_cache = n;
    }
    g_ncache = 0;
}

static void cache_key_init(void)
{
    pthread_key_create(&g_cache_key, cache_release);
}

void kvg__jinja_arena_free(struct jarena *a)
{
    struct jarena_chunk *c = a->head;
    while (c) {
        struct jarena_chunk *n = c->next;
        if (g_ncache < CACHE_MAX && c->size <= CACHE_CHUNK_MAX) {
            if (!g_ncache) { /* arrange for the cache to go with the thread */
                pthread_once(&g_cache_once, cache_key_init);
                pthread_setspecific(g_cache_key, &g_ncache);
            }
            c->next = g_cache;
            g_cache = c;
            g_ncache++;
        } else {
            free(c);
        }
        c = n;
    }
    a->head = NULL;
    a->cur = a->end = NULL;
}

static struct jarena_chunk *chunk_get(size_t sz)
{
    for (struct jarena_chunk **p = &g_cache; *p; p = &(*p)->next)
        if ((*p)->size >= sz) {
            struct jarena_chunk *c = *p;
            *p = c->next;
            g_ncache--;
            return c;
        }
    struct jarena_chunk *c = malloc(sizeof(*c) + sz);
    if (c) c->size = sz;
    return c;
}

void *kvg__jinja_arena_alloc(struct jarena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (a->limit && a->used + n > a->limit) return NULL;
    if ((size_t)(a->end - a->cur) < n) {
        /* chunks double up to 1 MiB; a larger request gets its own size */
        size_t sz = a->head ? a->head->size * 2 : 4096;
        if (sz > (1u << 20)) sz = 1u << 20;
        if (sz < n) sz = n;
        struct jarena_chunk *c = chunk_get(sz);
        if (!c) return NULL;
        c->next = a->head;
        a->head = c;
        a->cur = c->data;
        a->end = c->data + c->size;
    }
    void *p = a->cur;
    a->cur += n;
    a->used += n;
    return p;
}

char *kvg__jinja_arena_strdup(struct jarena *a, const char *s, size_t n)
{
    char *d = kvg__jinja_arena_alloc(a, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* ---- containers ---- */

static void *ralloc(struct jrender *r, size_t n)
{
    void *p = kvg__jinja_arena_alloc(&r->arena, n);
    if (!p)
        kvg__jinja_run_fail(
            r, r->arena.limit && r->arena.used + n > r->arena.limit ? KVG_ETOOBIG : -ENOMEM,
            "template render memory limit reached");
    return p;
}

struct jarr *kvg__jinja_arr_new(struct jrender *r, size_t cap)
{
    struct jarr *a = ralloc(r, sizeof(*a));
    if (!a) return NULL;
    a->n = 0;
    a->cap = (uint32_t)cap;
    a->v = NULL;
    if (cap && !(a->v = ralloc(r, cap * sizeof(struct jv)))) return NULL;
    return a;
}

int kvg__jinja_arr_push(struct jrender *r, struct jarr *a, struct jv v)
{
    if (a->n == a->cap) {
        uint32_t nc = a->cap ? a->cap * 2 : 4;
        struct jv *nv = ralloc(r, nc * sizeof(*nv));
        if (!nv) return r->err;
        if (a->n) memcpy(nv, a->v, a->n * sizeof(*nv));
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = v;
    return 0;
}

struct jobj *kvg__jinja_obj_new(struct jrender *r, size_t cap)
{
    struct jobj *o = ralloc(r, sizeof(*o));
    if (!o) return NULL;
    o->n = 0;
    o->cap = (uint32_t)cap;
    o->kv = NULL;
    if (cap && !(o->kv = ralloc(r, cap * sizeof(struct jkv)))) return NULL;
    return o;
}

int kvg__jinja_obj_push(struct jrender *r, struct jobj *o, const char *k, size_t klen, struct jv v)
{
    if (o->n == o->cap) {
        uint32_t nc = o->cap ? o->cap * 2 : 4;
        struct jkv *nk = ralloc(r, nc * sizeof(*nk));
        if (!nk) return r->err;
        if (o->n) memcpy(nk, o->kv, o->n * sizeof(*nk));
        o->kv = nk;
        o->cap = nc;
    }
    o->kv[o->n].k = k;
    o->kv[o->n].klen = (uint32_t)klen;
    o->kv[o->n].v = v;
    o->n++;
    return 0;
}

const struct jv *kvg__jinja_obj_get(const struct jobj *o, const char *k, size_t klen)
{
    for (uint32_t i = 0; i < o->n; i++)
        if (o->kv[i].klen == klen && !memcmp(o->kv[i].k, k, klen)) return &o->kv[i].v;
    return NULL;
}

int kvg__jinja_obj_set(struct jrender *r, struct jobj *o, const char *k, size_t klen, struct jv v)
{
    for (uint32_t i = 0; i < o->n; i++)
        if (o->kv[i].klen == klen && !memcmp(o->kv[i].k, k, klen)) {
            o->kv[i].v = v;
            return 0;
        }
    return kvg__jinja_obj_push(r, o, k, klen, v);
}

/* ---- JSON -> values ---- */

/* A JS "array index" key: canonical decimal of an integer below 2^32 - 1.
 * Object.entries lists those first, ascending. */
static int index_key(const char *k, size_t n, uint64_t *val)
{
    if (!n || n > 10 || (n > 1 && k[0] == '0')) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (k[i] < '0' || k[i] > '9') return 0;
        v = v * 10 + (uint64_t)(k[i] - '0');
    }
    if (v >= 4294967295ull) return 0;
    *val = v;
    return 1;
}

int kvg__jinja_value_from_json(struct jrender *r, const cJSON *j, struct jv *out)
{
    if (++r->depth > 1000) return kvg__jinja_run_fail(r, KVG_EUNSUPP, "JSON nested too deeply");
    int rc = 0;
    switch (j->type & 0xFF) {
    case cJSON_False:
        *out = jv_bool(0);
        break;
    case cJSON_True:
        *out = jv_bool(1);
        break;
    case cJSON_NULL:
        *out = jv_null();
        break;
    case cJSON_Number: {
        double d = j->valuedouble;
        *out = (isfinite(d) && d == floor(d)) ? jv_int(d) : jv_float(d);
        break;
    }
    case cJSON_String: {
        size_t n = 0;
        const char *s = kvg_json_str(j, &n); /* a NUL inside is data */
        *out = jv_str(s, n);
        break;
    }
    case cJSON_Array: {
        size_t n = 0;
        for (const cJSON *c = j->child; c; c = c->next) n++;
        struct jarr *a = kvg__jinja_arr_new(r, n);
        if (!a) return r->err;
        for (const cJSON *c = j->child; c; c = c->next) {
            if ((rc = kvg__jinja_value_from_json(r, c, &a->v[a->n]))) return rc;
            a->n++;
        }
        out->t = JV_ARR;
        out->u.a = a;
        break;
    }
    case cJSON_Object: {
        size_t n = 0;
        int has_index = 0;
        uint64_t iv;
        for (const cJSON *c = j->child; c; c = c->next) {
            n++;
            if (!has_index && index_key(c->string, strlen(c->string), &iv)) has_index = 1;
        }
        struct jobj *o = kvg__jinja_obj_new(r, n);
        if (!o) return r->err;
        for (const cJSON *c = j->child; c; c = c->next) {
            struct jv v;
            if ((rc = kvg__jinja_value_from_json(r, c, &v))) return rc;
            /* JSON.parse: a repeated key keeps its first place, last value */
            if ((rc = kvg__jinja_obj_set(r, o, c->string, strlen(c->string), v))) return rc;
        }
        if (has_index) { /* index keys ascending first, then the rest in order */
            struct jkv *tmp = ralloc(r, o->n * sizeof(*tmp));
            if (!tmp) return r->err;
            uint32_t k = 0;
            for (uint32_t i = 0; i < o->n; i++) {
                uint64_t vi, vj;
                if (!index_key(o->kv[i].k, o->kv[i].klen, &vi)) continue;
                uint32_t at = k;
                while (at > 0 && index_key(tmp[at - 1].k, tmp[at - 1].klen, &vj) && vj > vi) {
                    tmp[at] = tmp[at - 1];
                    at--;
                }
                tmp[at] = o->kv[i];
                k++;
            }
            for (uint32_t i = 0; i < o->n; i++)
                if (!index_key(o->kv[i].k, o->kv[i].klen, &iv)) tmp[k++] = o->kv[i];
            memcpy(o->kv, tmp, o->n * sizeof(*tmp));
        }
        out->t = JV_OBJ;
        out->u.o = o;
        break;
    }
    default:
        rc = kvg__jinja_run_fail(r, KVG_EPARSE, "unsupported JSON value");
    }
    r->depth--;
    return rc;
}

/* ---- loop objects ---- */

struct jv kvg__jinja_value_loop_object(struct jrender *r, struct jv v)
{
    const struct jarr *it = v.u.lp->items;
    uint32_t i = v.n, n = it->n;
    struct jobj *o = kvg__jinja_obj_new(r, 9);
    if (!o) return jv_undef(); /* r->err is set; callers check it */
    kvg__jinja_obj_push(r, o, "index", 5, jv_int(i + 1));
    kvg__jinja_obj_push(r, o, "index0", 6, jv_int(i));
    kvg__jinja_obj_push(r, o, "revindex", 8, jv_int(n - i));
    kvg__jinja_obj_push(r, o, "revindex0", 9, jv_int((double)n - i - 1));
    kvg__jinja_obj_push(r, o, "first", 5, jv_bool(i == 0));
    kvg__jinja_obj_push(r, o, "last", 4, jv_bool(i == n - 1));
    kvg__jinja_obj_push(r, o, "length", 6, jv_int(n));
    kvg__jinja_obj_push(r, o, "previtem", 8, i > 0 ? it->v[i - 1] : jv_undef());
    kvg__jinja_obj_push(r, o, "nextitem", 8, i + 1 < n ? it->v[i + 1] : jv_undef());
    struct jv out = {.t = JV_OBJ};
    out.u.o = o;
    return out;
}

int kvg__jinja_value_truthy(struct jv v)
{
    switch (v.t) {
    case JV_UNDEF:
    case JV_NULL:
        return 0;
    case JV_BOOL:
        return v.u.b;
    case JV_INT:
    case JV_FLOAT:
        return v.u.d != 0 && !isnan(v.u.d);
    case JV_STR:
        return v.n > 0;
    case JV_ARR:
    case JV_TUPLE:
        return v.u.a->n > 0;
    case JV_OBJ:
    case JV_KWARGS:
        return v.u.o->n > 0;
    default: /* namespace (a JS Map is always truthy), function, loop */
        return 1;
    }
}

const char *kvg__jinja_value_type_name(struct jv v)
{
    static const char *names[] = {
        "UndefinedValue", "NullValue",     "BooleanValue", "IntegerValue", "FloatValue",
        "StringValue",    "ArrayValue",    "TupleValue",   "ObjectValue",  "KeywordArgumentsValue",
        "NamespaceValue", "FunctionValue", "ObjectValue"};
    return names[v.t];
}

/* ---- numbers ---- */

size_t kvg__jinja_str_num(double d, char *buf)
{
    if (isnan(d)) return (size_t)sprintf(buf, "NaN");
    if (isinf(d)) return (size_t)sprintf(buf, d < 0 ? "-Infinity" : "Infinity");
    if (d == 0) return (size_t)sprintf(buf, "0");
    char e[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec - 1, d);
        if (strtod(e, NULL) == d) break;
    }
    /* e is "-d.ddde+XX": pull out the digits and the exponent */
    char digits[24];
    int k = 0, neg = 0;
    const char *p = e;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[k++] = *p;
    while (k > 1 && digits[k - 1] == '0') k--;
    int exp10 = atoi(p + 1);
    int n = exp10 + 1; /* value = 0.digits * 10^n */
    char *o = buf;
    if (neg) *o++ = '-';
    if (k <= n && n <= 21) {
        memcpy(o, digits, (size_t)k);
        o += k;
        for (int i = 0; i < n - k; i++) *o++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(o, digits, (size_t)n);
        o += n;
        *o++ = '.';
        memcpy(o, digits + n, (size_t)(k - n));
        o += k - n;
    } else if (-6 < n && n <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -n; i++) *o++ = '0';
        memcpy(o, digits, (size_t)k);
        o += k;
    } else {
        *o++ = digits[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(k - 1));
            o += k - 1;
        }
        o += sprintf(o, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
    }
    *o = 0;
    return (size_t)(o - buf);
}

/* FloatValue.toString: integral values keep one decimal ("2.0"). */
static size_t float_str(double d, char *buf)
{
    if (d == 0 && signbit(d)) return (size_t)sprintf(buf, "-0.0");
    if (isfinite(d) && d == floor(d) && fabs(d) < 1e21) return (size_t)sprintf(buf, "%.1f", d);
    return kvg__jinja_str_num(d, buf);
}

/* ---- text forms ---- */

static int bufrc(struct jrender *r, int rc)
{
    if (!rc) return 0;
    return kvg__jinja_run_fail(r, rc == KVG_ETOOBIG ? KVG_ETOOBIG : -ENOMEM,
                               "template output limit reached");
}

int kvg__jinja_value_tojson(struct jrender *r, struct kvg_buf *b, struct jv v,
                            const struct jjson_opts *o, int depth)
{
    char num[40];
    const char *isep = o->item_sep, *ksep = o->key_sep;
    size_t il = o->item_len, kl = o->key_len;
    if (!isep) {
        isep = o->indent > 0 ? "," : ", ";
        il = strlen(isep);
    }
    if (!ksep) {
        ksep = ": ";
        kl = 2;
    }
    if (depth > 512)
        return kvg__jinja_run_fail(r, KVG_EUNSUPP, "value nested too deeply for tojson");
    v = jv_norm(r, v);
    if (r->err) return r->err;
    switch (v.t) {
    case JV_NULL:
        return bufrc(r, kvg_buf_append(b, "null", 4));
    case JV_UNDEF:
        return bufrc(r, o->undef_as_null ? kvg_buf_append(b, "null", 4)
                                         : kvg_buf_append(b, "undefined", 9));
    case JV_BOOL:
        return bufrc(r, v.u.b ? kvg_buf_append(b, "true", 4) : kvg_buf_append(b, "false", 5));
    case JV_INT:
    case JV_FLOAT:
        if (!isfinite(v.u.d)) return bufrc(r, kvg_buf_append(b, "null", 4));
        return bufrc(r, kvg_buf_append(b, num, kvg__jinja_str_num(v.u.d, num)));
    case JV_STR:
        return bufrc(r, kvg__jinja_str_json(b, v.u.s, v.n, o->ensure_ascii));
    case JV_ARR:
    case JV_OBJ:
    case JV_NS: { /* tuples and keyword arguments are not serialisable there */
        int arr = jv_is_arr(v);
        uint32_t cnt = arr ? v.u.a->n : v.u.o->n;
        int ind = o->indent > 0 && cnt > 0;
        int rc;
        if ((rc = bufrc(r, kvg_buf_append(b, arr ? "[" : "{", 1)))) return rc;
        for (uint32_t i = 0; i < cnt; i++) {
            if (i && (rc = bufrc(r, kvg_buf_append(b, isep, il)))) return rc;
            if (ind) {
                if ((rc = bufrc(r, kvg_buf_append(b, "\n", 1)))) return rc;
                for (int k = 0; k < (depth + 1) * o->indent; k++)
                    if ((rc = bufrc(r, kvg_buf_append(b, " ", 1)))) return rc;
            }
            if (arr) {
                rc = kvg__jinja_value_tojson(r, b, v.u.a->v[i], o, depth + 1);
            } else {
                const struct jkv *kv = &v.u.o->kv[i];
                if ((rc = bufrc(r, kvg__jinja_str_json(b, kv->k, kv->klen, o->ensure_ascii))) ||
                    (rc = bufrc(r, kvg_buf_append(b, ksep, kl))))
                    return rc;
                rc = kvg__jinja_value_tojson(r, b, kv->v, o, depth + 1);
            }
            if (rc) return rc;
        }
        if (ind) {
            if ((rc = bufrc(r, kvg_buf_append(b, "\n", 1)))) return rc;
            for (int k = 0; k < depth * o->indent; k++)
                if ((rc = bufrc(r, kvg_buf_append(b, " ", 1)))) return rc;
        }
        return bufrc(r, kvg_buf_append(b, arr ? "]" : "}", 1));
    }
    default:
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot convert to JSON: %s",
                                   kvg__jinja_value_type_name(v));
    }
}

static const struct jjson_opts g_print_json = {.undef_as_null = 0};

int kvg__jinja_value_print(struct jrender *r, struct kvg_buf *b, struct jv v)
{
    char num[40];
    switch (v.t) {
    case JV_UNDEF:
        return bufrc(r, kvg_buf_append(b, "undefined", 9));
    case JV_NULL:
        return bufrc(r, kvg_buf_append(b, "null", 4));
    case JV_BOOL:
        return bufrc(r, v.u.b ? kvg_buf_append(b, "true", 4) : kvg_buf_append(b, "false", 5));
    case JV_INT:
        return bufrc(r, kvg_buf_append(b, num, kvg__jinja_str_num(v.u.d, num)));
    case JV_FLOAT:
        return bufrc(r, kvg_buf_append(b, num, float_str(v.u.d, num)));
    case JV_STR:
        return bufrc(r, kvg_buf_append(b, v.u.s, v.n));
    case JV_FUNC:
        return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: printing a function");
    default:
        return kvg__jinja_value_tojson(r, b, v, &g_print_json, 0);
    }
}

/* JS String(array): elements' toString() joined with ",". */
int kvg__jinja_value_print_raw(struct jrender *r, struct kvg_buf *b, struct jv v)
{
    char num[40];
    int rc;
    switch (v.t) {
    case JV_INT:
    case JV_FLOAT:
        return bufrc(r, kvg_buf_append(b, num, kvg__jinja_str_num(v.u.d, num)));
    case JV_ARR:
    case JV_TUPLE:
        for (uint32_t i = 0; i < v.u.a->n; i++) {
            if (i && (rc = bufrc(r, kvg_buf_append(b, ",", 1)))) return rc;
            if ((rc = kvg__jinja_value_print(r, b, v.u.a->v[i]))) return rc;
        }
        return 0;
    case JV_OBJ:
    case JV_KWARGS:
    case JV_NS:
    case JV_LOOP:
        return bufrc(r, kvg_buf_append(b, "[object Map]", 12));
    default:
        return kvg__jinja_value_print(r, b, v);
    }
}

int kvg__jinja_value_to_string(struct jrender *r, struct jv v, int raw, struct jv *out)
{
    if (v.t == JV_STR) {
        *out = v;
        return 0;
    }
    struct kvg_buf b;
    kvg_buf_init(&b, r->max_output);
    int rc = raw ? kvg__jinja_value_print_raw(r, &b, v) : kvg__jinja_value_print(r, &b, v);
    if (!rc) {
        char *s = b.len ? ralloc(r, b.len) : (char *)"";
        if (!s)
            rc = r->err;
        else {
            if (b.len) memcpy(s, b.data, b.len);
            *out = jv_str(s, b.len);
        }
    }
    kvg_buf_free(&b);
    return rc;
}

/* ---- equality ---- */

/* JS ToNumber(string). */
static double js_str_to_num(const char *s, size_t n)
{
    kvg__jinja_str_trim(&s, &n, 1, 1);
    if (!n) return 0;
    char buf[128];
    if (n >= sizeof(buf)) return NAN; /* longer literals never compare equal in practice */
    memcpy(buf, s, n);
    buf[n] = 0;
    if (n > 2 && buf[0] == '0' && strchr("xXoObB", buf[1])) {
        int base = (buf[1] == 'x' || buf[1] == 'X') ? 16 : (buf[1] == 'o' || buf[1] == 'O') ? 8 : 2;
        double v = 0;
        for (size_t i = 2; i < n; i++) {
            int d = buf[i] >= '0' && buf[i] <= '9'   ? buf[i] - '0'
                    : buf[i] >= 'a' && buf[i] <= 'f' ? buf[i] - 'a' + 10
                    : buf[i] >= 'A' && buf[i] <= 'F' ? buf[i] - 'A' + 10
                                                     : 99;
            if (d >= base) return NAN;
            v = v * base + d;
        }
        return v;
    }
    const char *p = buf;
    int sign = 1;
    if (*p == '+' || *p == '-') sign = *p++ == '-' ? -1 : 1;
    if (!strcmp(p, "Infinity")) return sign * INFINITY;
    /* StrDecimalLiteral: digits [. digits] [e[+-]digits] or . digits ... */
    const char *q = p;
    int dig = 0;
    while (*q >= '0' && *q <= '9') q++, dig++;
    if (*q == '.') {
        q++;
        while (*q >= '0' && *q <= '9') q++, dig++;
    }
    if (!dig) return NAN;
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-') q++;
        if (!(*q >= '0' && *q <= '9')) return NAN;
        while (*q >= '0' && *q <= '9') q++;
    }
    if (*q) return NAN;
    return strtod(buf, NULL);
}

/* JS ToPrimitive for our values as a string (arrays join, maps print). */
static int prim_string(struct jrender *r, struct jv v, struct jv *out)
{
    return kvg__jinja_value_to_string(r, v, 1, out);
}

static int is_object_like(struct jv v)
{
    return v.t >= JV_ARR;
}

static int same_ref(struct jv a, struct jv b)
{
    if (a.t == JV_LOOP || b.t == JV_LOOP) return a.t == b.t && a.u.lp == b.u.lp && a.n == b.n;
    if (jv_is_arr(a) && jv_is_arr(b)) return a.u.a == b.u.a;
    if ((jv_is_obj(a) || a.t == JV_NS) && (jv_is_obj(b) || b.t == JV_NS)) return a.u.o == b.u.o;
    if (a.t == JV_FUNC && b.t == JV_FUNC) return a.u.f == b.u.f;
    return 0;
}

int kvg__jinja_value_strict_eq(struct jv a, struct jv b)
{
    if (jv_is_num(a) && jv_is_num(b)) return a.u.d == b.u.d;
    if (is_object_like(a) || is_object_like(b)) return same_ref(a, b);
    if (a.t != b.t) return 0;
    switch (a.t) {
    case JV_UNDEF:
    case JV_NULL:
        return 1;
    case JV_BOOL:
        return a.u.b == b.u.b;
    case JV_STR:
        return a.n == b.n && !memcmp(a.u.s, b.u.s, a.n);
    default:
        return 0;
    }
}

int kvg__jinja_value_loose_eq(struct jrender *r, struct jv a, struct jv b, int *eq)
{
    for (int round = 0; round < 4; round++) {
        int ao = is_object_like(a), bo = is_object_like(b);
        if (ao && bo) {
            *eq = same_ref(a, b);
            return 0;
        }
        if (a.t == b.t || (jv_is_num(a) && jv_is_num(b))) {
            *eq = kvg__jinja_value_strict_eq(a, b);
            return 0;
        }
        int an = a.t == JV_UNDEF || a.t == JV_NULL, bn = b.t == JV_UNDEF || b.t == JV_NULL;
        if (an || bn) {
            *eq = an && bn;
            return 0;
        }
        if (a.t == JV_BOOL) {
            a = jv_int(a.u.b);
            continue;
        }
        if (b.t == JV_BOOL) {
            b = jv_int(b.u.b);
            continue;
        }
        if (jv_is_num(a) && b.t == JV_STR) {
            *eq = a.u.d == js_str_to_num(b.u.s, b.n);
            return 0;
        }
        if (a.t == JV_STR && jv_is_num(b)) {
            *eq = js_str_to_num(a.u.s, a.n) == b.u.d;
            return 0;
        }
        int rc;
        if (ao) {
            if (a.t == JV_FUNC)
                return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: comparing a function");
            if ((rc = prim_string(r, a, &a))) return rc;
            continue;
        }
        if (bo) {
            if (b.t == JV_FUNC)
                return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: comparing a function");
            if ((rc = prim_string(r, b, &b))) return rc;
            continue;
        }
        *eq = 0;
        return 0;
    }
    *eq = 0;
    return 0;
}
